-- Job names are unique within their tenant, as the API has always said: a unique index on
-- (tenant_id, name), so a second job of the same name is refused (409, field `name`).
-- A database may already hold duplicates (created before the index existed). They are renamed
-- first, deterministically: in each group of jobs sharing a tenant and a name, the oldest
-- (lowest created_at_ms, then lowest id) keeps the name, and every later one becomes
-- `<name>-<job id>`, the name cut so the whole fits 100 characters (job ids are unique, so the
-- new names are too). Look for names ending in `-job_…` after upgrading.
UPDATE jobs SET name = substr(name, 1, 99 - length(id)) || '-' || id
WHERE id IN (
    SELECT id FROM (
        SELECT id, ROW_NUMBER() OVER (PARTITION BY tenant_id, name ORDER BY created_at_ms, id) AS n FROM jobs
    ) WHERE n > 1
);
CREATE UNIQUE INDEX uq_jobs_tenant_name ON jobs (tenant_id, name);
