//! [`DueHeap`]: ids by due instant, earliest first, for the timer and the high-frequency
//! jobs' next fires.
//!
//! A herd is thousands of entries due at the same instant. A heap of `(instant, id)` then
//! decided every comparison on the ids (long strings with a common prefix): a tenth of the
//! node's time at 10,000 jobs on one second went to `memcmp` (issue 14). Entries here are
//! ordered by instant, then by when they were pushed; the id is carried, never compared.

use std::cmp::{Ordering, Reverse};
use std::collections::BinaryHeap;

#[derive(Debug)]
struct Entry {
    at: i64,
    seq: u64,
    id: String,
}

impl PartialEq for Entry {
    fn eq(&self, other: &Self) -> bool {
        (self.at, self.seq) == (other.at, other.seq)
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
        (self.at, self.seq).cmp(&(other.at, other.seq))
    }
}

/// A min-heap of ids by due instant; ids due at the same instant come out in the order
/// they went in. May hold several entries for one id: its owner decides which counts.
#[derive(Debug, Default)]
pub(crate) struct DueHeap {
    heap: BinaryHeap<Reverse<Entry>>,
    pushed: u64,
}

impl DueHeap {
    pub(crate) fn push(&mut self, at: i64, id: String) {
        self.pushed += 1;
        self.heap.push(Reverse(Entry { at, seq: self.pushed, id }));
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn earliest_first_and_ties_in_the_order_pushed() {
        let mut h = DueHeap::default();
        for (at, id) in [(20, "b"), (10, "z"), (20, "a"), (10, "y"), (5, "m"), (20, "c")] {
            h.push(at, id.to_string());
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
        h.push(1, "x".into());
        h.clear();
        assert_eq!(h.pop(), None);
    }
}
