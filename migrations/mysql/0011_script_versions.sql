-- Script versions say what they are: the size of the source in bytes, how the source is
-- stored (`text`, or `base64` for a WebAssembly binary), and who uploaded it (the API key's
-- id). A job may pin a script version (`script_version`; NULL follows the current one).
ALTER TABLE script_versions
    ADD COLUMN size_bytes BIGINT      NOT NULL DEFAULT 0,
    ADD COLUMN encoding   VARCHAR(10) NOT NULL DEFAULT 'text',
    ADD COLUMN author     VARCHAR(60) NOT NULL DEFAULT '';
ALTER TABLE jobs ADD COLUMN script_version BIGINT NULL;
CREATE INDEX ix_jobs_script ON jobs (script_id);
