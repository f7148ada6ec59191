-- A child edge says when it fires: `on_success` (what every edge did before), `on_failure`
-- (the parent run failed for good) or `always` (either).
ALTER TABLE job_children ADD COLUMN fire_on VARCHAR(20) NOT NULL DEFAULT 'on_success';
