//! Job affinity: which node claims which job's runs (seed 001's "consistent hashing of
//! jobs over live workers").
//!
//! Jobs fall into [`BUCKETS`] buckets by a stable hash of their id ([`bucket_of`]); the
//! bucket is stored on every run row, so the claim can filter on it with constant SQL
//! text (a 64-bit mask, one bind). Buckets are assigned to the live nodes by
//! *rendezvous* (highest-random-weight) hashing, the ring-free form of consistent
//! hashing: a bucket belongs to the node with the highest `weight(node, bucket)`.
//! Every node computes the same [`Ring`] from the same set of node ids, in any order,
//! with nothing to exchange; adding a node moves to it only the buckets it now wins
//! (about 1/N of them) and moves nothing between the others; removing a node moves only
//! its own buckets.
//!
//! This is a preference, not a lock: nodes may briefly disagree about the live set
//! (each refreshes it on its own heartbeat), and the database's atomic claim keeps any
//! run from being claimed twice whatever the nodes believe. A node also claims runs of
//! buckets it does not own once they are overdue past a short grace, so a dying node's
//! share still fires before the cluster declares it dead.

use sha2::{Digest, Sha256};

/// Buckets of jobs; a power of two that fits one 64-bit mask.
pub const BUCKETS: usize = 64;

/// The mask of every bucket: what a node owns when it is alone (or before it has read
/// the live node set).
pub const ALL_BUCKETS: u64 = u64::MAX;

/// A node without a heartbeat for this long (by database time) is dead: the others take
/// its buckets and recover its claims (the engine's `node_dead_ms` default; the node list
/// of the API shows it `dead`).
pub const NODE_DEAD_MS: i64 = 10_000;

/// The first 8 bytes of SHA-256, big-endian: the same on every node, release and restart.
fn stable_hash(bytes: &[u8]) -> u64 {
    let d = Sha256::digest(bytes);
    let mut b = [0u8; 8];
    b.copy_from_slice(&d[..8]);
    u64::from_be_bytes(b)
}

/// The bucket of a job, `0..64`. Stored on each run row (`runs.bucket`), so it must never
/// change between releases: the unit tests pin known values.
pub fn bucket_of(job_id: &str) -> i64 {
    (stable_hash(job_id.as_bytes()) % BUCKETS as u64) as i64
}

/// A node's rendezvous weight for a bucket.
fn weight(node_id: &str, bucket: usize) -> u64 {
    let mut h = Sha256::new();
    h.update((bucket as u32).to_be_bytes());
    h.update(node_id.as_bytes());
    let d = h.finalize();
    let mut b = [0u8; 8];
    b.copy_from_slice(&d[..8]);
    u64::from_be_bytes(b)
}

/// The assignment of the [`BUCKETS`] buckets to a set of nodes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ring {
    /// The node ids, sorted and without duplicates.
    nodes: Vec<String>,
    /// For each bucket, the index into `nodes` of its owner (unused when `nodes` is empty).
    owners: [u16; BUCKETS],
}

impl Ring {
    /// Assign every bucket to one of `nodes` (order and duplicates do not matter). With no
    /// nodes, no bucket has an owner.
    pub fn new<S: AsRef<str>>(nodes: &[S]) -> Ring {
        let mut ids: Vec<String> = nodes.iter().map(|n| n.as_ref().to_string()).collect();
        ids.sort_unstable();
        ids.dedup();
        let mut owners = [0u16; BUCKETS];
        if !ids.is_empty() {
            for (bucket, owner) in owners.iter_mut().enumerate() {
                // Highest weight wins; a tie (practically impossible) goes to the smaller id.
                let mut best = 0usize;
                let mut best_w = weight(&ids[0], bucket);
                for (i, id) in ids.iter().enumerate().skip(1) {
                    let w = weight(id, bucket);
                    if w > best_w {
                        best = i;
                        best_w = w;
                    }
                }
                *owner = best as u16;
            }
        }
        Ring { nodes: ids, owners }
    }

    /// The node ids, sorted.
    pub fn nodes(&self) -> &[String] {
        &self.nodes
    }

    /// The owner of a bucket (`None` when the ring has no nodes).
    pub fn owner(&self, bucket: i64) -> Option<&str> {
        if self.nodes.is_empty() {
            return None;
        }
        let b = bucket.rem_euclid(BUCKETS as i64) as usize;
        Some(&self.nodes[self.owners[b] as usize])
    }

    /// The buckets `node_id` owns, as a mask (bit `b` = bucket `b`); 0 for a node not in the ring.
    pub fn mask_of(&self, node_id: &str) -> u64 {
        let Ok(i) = self.nodes.binary_search_by(|n| n.as_str().cmp(node_id)) else {
            return 0;
        };
        self.owners.iter().enumerate().filter(|(_, o)| **o as usize == i).fold(0u64, |m, (b, _)| m | (1u64 << b))
    }

    /// How many buckets `node_id` owns.
    pub fn count_of(&self, node_id: &str) -> u32 {
        self.mask_of(node_id).count_ones()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids(n: usize) -> Vec<String> {
        (0..n).map(|i| format!("node-{i}")).collect()
    }

    #[test]
    fn bucket_of_is_pinned_because_it_is_stored_on_every_run() {
        // Changing the hash would strand stored runs in the wrong buckets: these must not move.
        let got: Vec<i64> =
            ["job_a", "job_b", "job_0192f0e1a2b37c4d8e9fa0b1c2d3e4f5", ""].iter().map(|j| bucket_of(j)).collect();
        assert_eq!(got, PINNED_BUCKETS);
        assert!((0..10_000).map(|i| bucket_of(&format!("job_{i}"))).all(|b| (0..64).contains(&b)));
    }
    /// SHA-256 (first 8 bytes, big-endian) mod 64, computed independently (Python's hashlib).
    const PINNED_BUCKETS: [i64; 4] = [52, 30, 14, 20];

    #[test]
    fn jobs_spread_evenly_over_the_buckets() {
        let mut per = [0u32; BUCKETS];
        for _ in 0..64_000 {
            per[bucket_of(&crate::ids::new_id(crate::ids::JOB)) as usize] += 1;
        }
        // 1,000 expected per bucket; a broken hash (a constant, the time part of a UUIDv7) fails.
        assert!(per.iter().all(|n| (850..1150).contains(n)), "{per:?}");
    }

    #[test]
    fn every_bucket_has_exactly_one_owner_and_a_lone_node_owns_all() {
        for n in 1..=7 {
            let ring = Ring::new(&ids(n));
            let masks: Vec<u64> = ring.nodes().iter().map(|id| ring.mask_of(id)).collect();
            assert_eq!(masks.iter().fold(0u64, |a, m| a | m), ALL_BUCKETS, "every bucket owned ({n} nodes)");
            assert_eq!(masks.iter().map(|m| m.count_ones()).sum::<u32>(), 64, "no bucket owned twice ({n} nodes)");
            for b in 0..64 {
                let owner = ring.owner(b).unwrap();
                assert!(ring.mask_of(owner) & (1 << b) != 0);
            }
        }
        assert_eq!(Ring::new(&["solo"]).mask_of("solo"), ALL_BUCKETS);
        assert_eq!(Ring::new(&["solo"]).mask_of("other"), 0, "a node outside the ring owns nothing");
        let empty = Ring::new::<&str>(&[]);
        assert_eq!(empty.owner(3), None);
        assert_eq!(empty.mask_of("x"), 0);
    }

    #[test]
    fn the_ring_ignores_order_and_duplicates() {
        let a = Ring::new(&["c", "a", "b"]);
        let b = Ring::new(&["b", "c", "a", "c"]);
        assert_eq!(a, b);
    }

    #[test]
    fn adding_a_node_moves_only_the_buckets_it_takes_about_one_in_n() {
        let mut moved_total = 0u32;
        let trials = 40;
        for t in 0..trials {
            // Different id sets each trial (a cluster of 3 named per trial, then a 4th).
            let before: Vec<String> = (0..3).map(|i| format!("t{t}-node-{i}")).collect();
            let mut after = before.clone();
            after.push(format!("t{t}-node-new"));
            let (r0, r1) = (Ring::new(&before), Ring::new(&after));
            let new = after.last().unwrap().as_str();
            for b in 0..64 {
                let (o0, o1) = (r0.owner(b).unwrap(), r1.owner(b).unwrap());
                if o0 != o1 {
                    assert_eq!(o1, new, "bucket {b} moved between two old nodes ({o0} → {o1})");
                    moved_total += 1;
                }
            }
        }
        // Expected 64/4 = 16 per trial; allow sampling noise around the mean.
        let mean = moved_total as f64 / trials as f64;
        assert!((13.0..19.0).contains(&mean), "mean buckets moved {mean}");
    }

    #[test]
    fn removing_a_node_moves_only_its_own_buckets() {
        let all = ids(5);
        let r0 = Ring::new(&all);
        for gone in &all {
            let rest: Vec<&String> = all.iter().filter(|n| *n != gone).collect();
            let r1 = Ring::new(&rest);
            for b in 0..64 {
                let (o0, o1) = (r0.owner(b).unwrap(), r1.owner(b).unwrap());
                if o0 != gone {
                    assert_eq!(o0, o1, "bucket {b} of a surviving node moved when {gone} left");
                }
            }
            assert_eq!(r1.mask_of(gone), 0);
        }
    }

    #[test]
    fn shares_are_roughly_even() {
        // Averaged over many clusters, each node gets about 64/N buckets; no node of any
        // cluster here is starved or owns nearly everything.
        for n in [2usize, 3, 5] {
            let mut sum = 0u32;
            let trials = 50;
            for t in 0..trials {
                let nodes: Vec<String> = (0..n).map(|i| format!("c{t}-{i}")).collect();
                let ring = Ring::new(&nodes);
                for id in &nodes {
                    let c = ring.count_of(id);
                    assert!(c >= 64 / n as u32 / 3 && c <= 64 * 2 / n as u32 + 8, "{n} nodes: {id} owns {c}");
                }
                sum += ring.count_of(&nodes[0]);
            }
            let mean = sum as f64 / trials as f64;
            let expected = 64.0 / n as f64;
            assert!((mean - expected).abs() < expected * 0.15, "{n} nodes: first node owns {mean} on average");
        }
    }
}
