-- Issue 26: a script job's own limits (a JSON object, `sundial_core::job::ScriptLimits`),
-- each lowering its runner's; NULL: the runner's.
ALTER TABLE jobs ADD COLUMN script_limits TEXT NULL;
