-- Script versions say what they are: the size of the source in bytes, how the source is
-- stored (`text`, or `base64` for a WebAssembly binary), and who uploaded it (the API key's
-- id). A job may pin a script version (`script_version`; NULL follows the current one).
ALTER TABLE script_versions ADD COLUMN size_bytes INTEGER NOT NULL DEFAULT 0;
ALTER TABLE script_versions ADD COLUMN encoding TEXT NOT NULL DEFAULT 'text';
ALTER TABLE script_versions ADD COLUMN author TEXT NOT NULL DEFAULT '';
ALTER TABLE jobs ADD COLUMN script_version INTEGER NULL;
CREATE INDEX ix_jobs_script ON jobs (script_id);
