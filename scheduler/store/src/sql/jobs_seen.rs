//! [`JobsSeen`]: the jobs the dispatch transactions last read in full (`runs/batch.rs`,
//! `lock_jobs`), held by [`SqlStore`](super::SqlStore). A leaf: it imports no other module
//! of `sql`, so `sql/mod.rs` can hold one.

use std::collections::HashMap;
use std::sync::Arc;

use crate::Job;

/// Jobs by id as the dispatch transactions last read them in full. A dispatch locks its
/// jobs' rows reading only `(id, version, updated_at_ms)` and takes the rest from here when
/// both match: every change to a job's definition or state moves its version and its
/// `updated_at_ms` (`job_update`, `job_set_state`), so a match is the row as stored, except
/// `generated_until_ms` (the generator's cursor, which a dispatch does not use). Bounded: at
/// [`JOBS_SEEN_MAX`] entries it starts again empty.
#[derive(Debug, Default)]
pub(super) struct JobsSeen(std::sync::Mutex<HashMap<String, Arc<Job>>>);

pub(super) const JOBS_SEEN_MAX: usize = 100_000;

impl JobsSeen {
    /// The jobs whose (version, updated_at_ms) match; the ids that do not, or are not here.
    pub(super) fn get(&self, keys: &[(String, i64, i64)]) -> (HashMap<String, Arc<Job>>, Vec<String>) {
        let seen = self.0.lock().expect("jobs seen");
        let mut found = HashMap::with_capacity(keys.len());
        let mut missing = Vec::new();
        for (id, version, updated) in keys {
            match seen.get(id) {
                Some(j) if j.version == *version && j.updated_at_ms == *updated => {
                    found.insert(id.clone(), Arc::clone(j));
                }
                _ => missing.push(id.clone()),
            }
        }
        (found, missing)
    }

    pub(super) fn put(&self, jobs: impl Iterator<Item = Arc<Job>>) {
        let mut seen = self.0.lock().expect("jobs seen");
        for j in jobs {
            if seen.len() >= JOBS_SEEN_MAX {
                seen.clear();
            }
            seen.insert(j.id.clone(), j);
        }
    }
}
