//! [`DueHeap`]: ids by due instant, earliest first, for the timer and the high-frequency
//! jobs' next fires.
//!
//! A herd is thousands of entries due at the same instant. A heap of `(instant, id)` then
//! decided every comparison on the ids (long strings with a common prefix): a tenth of the
//! node's time at 10,000 jobs on one second went to `memcmp` (issue 14). Entries here are
//! ordered by instant, then by when they were pushed; the id is carried, never compared.
//!
//! Fairness between tenants (issue 26): entries due at the same instant are ordered by
//! their *rank* before their push order, and [`FairRanks`] gives each tenant's k-th entry
//! at an instant rank k. A herd of 5,000 fires of one tenant on one second and one fire of
//! another then come out as `a₀ b₀ a₁ a₂ …`: the small tenant's fire is in the first batch
//! whatever the big one holds. One tenant's entries keep their push order (ranks grow with it).

use std::cmp::{Ordering, Reverse};
use std::collections::BinaryHeap;

#[derive(Debug)]
struct Entry {
    at: i64,
    rank: u32,
    seq: u64,
    id: String,
}

impl PartialEq for Entry {
    fn eq(&self, other: &Self) -> bool {
        (self.at, self.rank, self.seq) == (other.at, other.rank, other.seq)
    }
}

impl Eq for Entry {}

impl PartialOrd for Entry {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Entry {
    fn cmp(&self, other: &Self) -> Ordering {
        (self.at, self.rank, self.seq).cmp(&(other.at, other.rank, other.seq))
    }
}

/// A min-heap of ids by due instant; ids due at the same instant come out by rank, then in
/// the order they went in. May hold several entries for one id: its owner decides which counts.
#[derive(Debug, Default)]
pub(crate) struct DueHeap {
    heap: BinaryHeap<Reverse<Entry>>,
    pushed: u64,
}

impl DueHeap {
    /// Push with a rank among the entries due at the same instant (see [`FairRanks`]).
    pub(crate) fn push_ranked(&mut self, at: i64, rank: u32, id: String) {
        self.pushed += 1;
        self.heap.push(Reverse(Entry { at, rank, seq: self.pushed, id }));
    }

    /// The earliest entry: (instant, id).
    pub(crate) fn peek(&self) -> Option<(i64, &str)> {
        self.heap.peek().map(|Reverse(e)| (e.at, e.id.as_str()))
    }

    /// The earliest instant.
    pub(crate) fn next_at(&self) -> Option<i64> {
        self.heap.peek().map(|Reverse(e)| e.at)
    }

    pub(crate) fn pop(&mut self) -> Option<(i64, String)> {
        self.heap.pop().map(|Reverse(e)| (e.at, e.id))
    }

    pub(crate) fn clear(&mut self) {
        self.heap.clear();
    }
}

/// A tenant, as [`FairRanks`] counts it: a hash of its id (a collision only merges two
/// tenants' shares at the instants both have entries).
pub(crate) fn tenant_key(tenant_id: &str) -> u64 {
    use std::hash::{BuildHasher, BuildHasherDefault};
    BuildHasherDefault::<std::collections::hash_map::DefaultHasher>::default().hash_one(tenant_id)
}

/// Round-robin ranks per instant: the k-th entry a tenant has pushed for an instant gets
/// rank k, so at each instant every tenant's first entry comes before any tenant's second.
/// Instants are forgotten once they are past (`forget_before`), so memory follows the
/// instants still held.
#[derive(Debug, Default)]
pub(crate) struct FairRanks {
    counts: std::collections::BTreeMap<i64, std::collections::HashMap<u64, u32>>,
}

impl FairRanks {
    /// The rank of the next entry of `tenant` due at `at`.
    pub(crate) fn next(&mut self, at: i64, tenant: u64) -> u32 {
        let c = self.counts.entry(at).or_default().entry(tenant).or_insert(0);
        *c += 1;
        *c - 1
    }

    /// Forget the instants before `at` (their entries have been popped or are stale).
    pub(crate) fn forget_before(&mut self, at: i64) {
        while let Some(e) = self.counts.first_entry() {
            if *e.key() >= at {
                break;
            }
            e.remove();
        }
    }

    pub(crate) fn clear(&mut self) {
        self.counts.clear();
    }

    #[cfg(test)]
    fn instants(&self) -> usize {
        self.counts.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A herd of one tenant and one fire of another at the same instant, the small one
    /// pushed last: it comes out second, not last; each tenant's own entries keep their order.
    #[test]
    fn at_one_instant_tenants_take_turns() {
        let mut h = DueHeap::default();
        let mut r = FairRanks::default();
        let (a, b, c) = (tenant_key("ten_a"), tenant_key("ten_b"), tenant_key("ten_c"));
        for i in 0..1000 {
            h.push_ranked(1000, r.next(1000, a), format!("a{i}"));
        }
        h.push_ranked(1000, r.next(1000, b), "b0".into());
        h.push_ranked(1000, r.next(1000, b), "b1".into());
        h.push_ranked(1000, r.next(1000, c), "c0".into());
        h.push_ranked(999, r.next(999, a), "early".into());
        let out: Vec<String> = std::iter::from_fn(|| h.pop().map(|(_, id)| id)).take(7).collect();
        assert_eq!(out, ["early", "a0", "b0", "c0", "a1", "b1", "a2"]);
        assert_eq!(r.instants(), 2);
        r.forget_before(1000);
        assert_eq!(r.instants(), 1);
        assert_eq!(r.next(1000, b), 2, "an instant still held keeps its counts");
        r.forget_before(1001);
        assert_eq!(r.instants(), 0);
    }

    #[test]
    fn earliest_first_and_ties_in_the_order_pushed() {
        let mut h = DueHeap::default();
        for (at, id) in [(20, "b"), (10, "z"), (20, "a"), (10, "y"), (5, "m"), (20, "c")] {
            h.push_ranked(at, 0, id.to_string());
        }
        assert_eq!(h.peek(), Some((5, "m")));
        assert_eq!(h.next_at(), Some(5));
        let mut out = Vec::new();
        while let Some(e) = h.pop() {
            out.push(e);
        }
        let want: Vec<(i64, String)> =
            [(5, "m"), (10, "z"), (10, "y"), (20, "b"), (20, "a"), (20, "c")].map(|(a, i)| (a, i.to_string())).into();
        assert_eq!(out, want);
        h.push_ranked(1, 0, "x".into());
        h.clear();
        assert_eq!(h.pop(), None);
    }
}
