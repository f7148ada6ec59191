-- Job affinity: each run carries its job's bucket (0..63, sundial_core::affinity::bucket_of),
-- so a node claims the runs of the buckets it owns with one constant statement (a 64-bit mask).
-- Rows written before this migration stay in bucket 0: any node still claims them, the owner of
-- bucket 0 at once and the others after the affinity grace.
ALTER TABLE runs ADD COLUMN bucket INTEGER NOT NULL DEFAULT 0;
