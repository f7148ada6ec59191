//! [`InstantGate`]: deliveries committed ahead of their instant wait for it here, and leave
//! in the order the timer popped them.
//!
//! A herd's deliveries are committed before their second (the dispatch lead) and wait for
//! it. Each sleeping on its own, they woke in whatever order the runtime's timer wheel keeps
//! (not the order they were committed), so the turns tenants take in the timer
//! ([`crate::due_heap::FairRanks`]) were lost at the last step: a small tenant's fire, popped
//! second, left anywhere in the herd. Here each waiter still sleeps until its instant, but
//! the first to wake opens the gate of every waiter whose instant has come, in (instant, pop
//! order): they are woken, and so sent, in that order. No loop and no clock read: a waiter
//! opens only waiters due no later than itself, whose instant has come as surely as its own.

use std::cmp::{Ordering, Reverse};
use std::collections::BinaryHeap;
use std::sync::Mutex;

use tokio::sync::{Notify, oneshot};

#[derive(Debug)]
struct Waiter {
    due: i64,
    seq: u64,
    open: oneshot::Sender<()>,
}

impl PartialEq for Waiter {
    fn eq(&self, other: &Self) -> bool {
        (self.due, self.seq) == (other.due, other.seq)
    }
}

impl Eq for Waiter {}

impl PartialOrd for Waiter {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Waiter {
    fn cmp(&self, other: &Self) -> Ordering {
        (self.due, self.seq).cmp(&(other.due, other.seq))
    }
}

#[derive(Debug, Default)]
pub(crate) struct InstantGate {
    waiting: Mutex<BinaryHeap<Reverse<Waiter>>>,
}

impl InstantGate {
    /// Wait at the gate for instant `due`, in pop order `seq`; the receiver fires when opened.
    pub(crate) fn enter(&self, due: i64, seq: u64) -> oneshot::Receiver<()> {
        let (open, rx) = oneshot::channel();
        self.waiting.lock().expect("gate lock").push(Reverse(Waiter { due, seq, open }));
        rx
    }

    /// Instant `due` has come: open every waiter due no later, earliest instant and first
    /// popped first.
    pub(crate) fn open_through(&self, due: i64) {
        let mut g = self.waiting.lock().expect("gate lock");
        while g.peek().is_some_and(|Reverse(w)| w.due <= due) {
            let Reverse(w) = g.pop().expect("peeked");
            let _ = w.open.send(()); // a waiter that went away needs no opening
        }
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.waiting.lock().expect("gate lock").len()
    }
}

/// Dispatch batches hand their runs to delivery in the order they were popped, whatever
/// order their transactions commit in: two run at once, and on SQLite (one writer) the
/// second popped often commits first. Each batch takes a ticket when popped and, once
/// committed, waits for the batches before it to have handed theirs over ([`Turn`]); the
/// wait is at most [`TURN_WAIT_MAX_MS`] (a safety valve: never a hang).
#[derive(Debug, Default)]
pub(crate) struct Turns {
    issued: std::sync::atomic::AtomicU64,
    /// The next ticket whose turn it is, and tickets done ahead of their turn.
    state: Mutex<(u64, std::collections::BTreeSet<u64>)>,
    moved: Notify,
}

/// The most a committed batch waits for the batches popped before it.
pub(crate) const TURN_WAIT_MAX_MS: u64 = 1_000;

impl Turns {
    /// A ticket for the batch just popped.
    pub(crate) fn take(self: &std::sync::Arc<Self>) -> Turn {
        Turn {
            turns: self.clone(),
            ticket: self.issued.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
            done: false,
        }
    }

    fn done(&self, ticket: u64) {
        let mut g = self.state.lock().expect("turns lock");
        let (next, ahead) = &mut *g;
        ahead.insert(ticket);
        while ahead.remove(next) {
            *next += 1;
        }
        drop(g);
        self.moved.notify_waiters();
    }

    fn is_turn(&self, ticket: u64) -> bool {
        self.state.lock().expect("turns lock").0 >= ticket
    }
}

/// A batch's place in the hand-over order; done when dropped at the latest.
#[derive(Debug)]
pub(crate) struct Turn {
    turns: std::sync::Arc<Turns>,
    ticket: u64,
    done: bool,
}

impl Turn {
    /// Wait until every batch popped before this one has handed its runs over.
    pub(crate) async fn wait(&self) {
        let until = tokio::time::Instant::now() + std::time::Duration::from_millis(TURN_WAIT_MAX_MS);
        loop {
            let moved = self.turns.moved.notified();
            tokio::pin!(moved);
            moved.as_mut().enable();
            if self.turns.is_turn(self.ticket) {
                return;
            }
            if tokio::time::timeout_at(until, moved).await.is_err() {
                return;
            }
        }
    }

    /// This batch has handed its runs over: the next may go.
    pub(crate) fn done(mut self) {
        self.done = true;
        self.turns.done(self.ticket);
    }
}

impl Drop for Turn {
    fn drop(&mut self) {
        if !self.done {
            self.turns.done(self.ticket);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn batches_hand_over_in_the_order_they_were_popped() {
        let turns = std::sync::Arc::new(Turns::default());
        let order = std::sync::Arc::new(Mutex::new(Vec::new()));
        let (t0, t1, t2) = (turns.take(), turns.take(), turns.take());
        assert_eq!((t0.ticket, t1.ticket, t2.ticket), (0, 1, 2));
        // Ticket 2 committed first: it waits for 0 and 1.
        let o = order.clone();
        let later = tokio::spawn(async move {
            t2.wait().await;
            o.lock().unwrap().push(2);
            t2.done();
        });
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        assert!(order.lock().unwrap().is_empty(), "ticket 2 waits for 0 and 1");
        drop(t0); // a batch that failed: its turn passes all the same
        t1.wait().await;
        order.lock().unwrap().push(1);
        t1.done();
        later.await.unwrap();
        assert_eq!(*order.lock().unwrap(), [1, 2]);
    }

    #[tokio::test]
    async fn a_turn_that_never_comes_is_waited_for_a_bounded_time() {
        let turns = std::sync::Arc::new(Turns::default());
        let _stuck = turns.take();
        let next = turns.take();
        let started = std::time::Instant::now();
        next.wait().await;
        assert!(started.elapsed() >= std::time::Duration::from_millis(TURN_WAIT_MAX_MS - 50));
    }

    #[test]
    fn the_first_to_wake_opens_everyone_due_in_pop_order_and_no_one_later() {
        let gate = InstantGate::default();
        let mut rx: Vec<(&str, oneshot::Receiver<()>)> = Vec::new();
        for (name, due, seq) in [("c", 1000, 3), ("a", 1000, 1), ("later", 2000, 0), ("b", 1000, 2), ("early", 900, 9)]
        {
            rx.push((name, gate.enter(due, seq)));
        }
        gate.open_through(1000);
        assert_eq!(gate.len(), 1, "the waiter due later stays");
        let opened: Vec<&str> = rx.iter_mut().filter_map(|(n, r)| r.try_recv().is_ok().then_some(*n)).collect();
        assert_eq!(
            opened,
            ["c", "a", "b", "early"],
            "all those due by 1000 (the order they were sent is tested below)"
        );
        gate.open_through(2000);
        assert!(rx.iter_mut().any(|(n, r)| *n == "later" && r.try_recv().is_ok()));
        assert_eq!(gate.len(), 0);
    }

    /// The order the gates are opened in is the order the waiters wake in.
    #[tokio::test(flavor = "current_thread")]
    async fn waiters_wake_in_instant_then_pop_order() {
        let gate = std::sync::Arc::new(InstantGate::default());
        let order = std::sync::Arc::new(Mutex::new(Vec::new()));
        let mut tasks = Vec::new();
        for (due, seq) in [(1000, 5), (1000, 1), (900, 7), (1000, 3)] {
            let rx = gate.enter(due, seq);
            let order = order.clone();
            tasks.push(tokio::spawn(async move {
                rx.await.unwrap();
                order.lock().unwrap().push((due, seq));
            }));
        }
        tokio::task::yield_now().await; // every waiter is parked on its gate
        gate.open_through(1000);
        for t in tasks {
            t.await.unwrap();
        }
        assert_eq!(*order.lock().unwrap(), [(900, 7), (1000, 1), (1000, 3), (1000, 5)]);
    }
}
