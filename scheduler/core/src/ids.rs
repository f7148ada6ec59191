//! Identifiers: a short type prefix and a UUIDv7, so ids sort by creation time
//! (cursor pagination relies on this) and say what they name.

pub fn new_id(prefix: &str) -> String {
    format!("{prefix}_{}", uuid::Uuid::now_v7().simple())
}

pub const TENANT: &str = "ten";
pub const API_KEY: &str = "key";
pub const APP: &str = "app";
pub const EXECUTOR: &str = "exe";
pub const JOB: &str = "job";
pub const RUN: &str = "run";
pub const SCRIPT: &str = "scr";
pub const NODE: &str = "node";

/// Ids arrive in URLs; refuse anything that could not be one of ours before it reaches SQL.
pub fn looks_like(prefix: &str, id: &str) -> bool {
    id.len() == prefix.len() + 33
        && id.starts_with(prefix)
        && id.as_bytes()[prefix.len()] == b'_'
        && id[prefix.len() + 1..].bytes().all(|b| b.is_ascii_hexdigit())
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn ids_sort_by_creation_and_are_recognised() {
        let a = new_id(JOB);
        let b = new_id(JOB);
        assert!(a < b, "{a} < {b}");
        assert!(looks_like(JOB, &a));
        assert!(!looks_like(APP, &a));
        assert!(!looks_like(JOB, "job_zz"));
    }
}
