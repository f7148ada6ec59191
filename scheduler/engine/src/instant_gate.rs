//! [`InstantGate`]: deliveries committed ahead of their instant wait for it here, and leave
//! in the order the timer popped them.
//!
//! A herd's deliveries are committed before their second (the dispatch lead) and wait for
//! it. Each sleeping on its own, they woke in whatever order the runtime keeps: thousands of
//! timers firing at once overflow a worker's run queue, which moves its oldest tasks (the
//! first popped) to the global queue behind the rest, so the turns tenants take in the timer
//! ([`crate::due_heap::FairRanks`]) were lost at the last step: a small tenant's fire,
//! popped second, left a few hundred places into the herd. Here no waiter sleeps: one
//! opener per instant sleeps until it, then opens the waiters due by then in (instant, pop
//! order), [`OPEN_CHUNK`] at a time, yielding between chunks so that each chunk runs (takes
//! its slots, sends) before the next is woken.

use std::cmp::{Ordering, Reverse};
use std::collections::{BTreeSet, BinaryHeap};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::{Notify, oneshot};

/// Waiters woken at once: well within a runtime worker's local queue (256), so none
/// overflows to the back of the global queue.
pub(crate) const OPEN_CHUNK: usize = 32;

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
struct Inner {
    waiting: BinaryHeap<Reverse<Waiter>>,
    /// Instants with an opener on its way.
    openers: BTreeSet<i64>,
}

#[derive(Debug, Default)]
pub(crate) struct InstantGate {
    inner: Mutex<Inner>,
}

impl InstantGate {
    /// Wait at the gate for instant `due`, `early` from now, in pop order `seq`; the receiver
    /// fires when opened. The first waiter of an instant starts its opener.
    pub(crate) fn enter(self: &Arc<Self>, due: i64, seq: u64, early: Duration) -> oneshot::Receiver<()> {
        let (open, rx) = oneshot::channel();
        let mut g = self.inner.lock().expect("gate lock");
        g.waiting.push(Reverse(Waiter { due, seq, open }));
        if g.openers.insert(due) {
            let gate = self.clone();
            tokio::spawn(async move {
                tokio::time::sleep(early).await;
                gate.open_through(due).await;
            });
        }
        rx
    }

    /// Instant `due` has come: open every waiter due no later, earliest instant and first
    /// popped first, a chunk at a time.
    async fn open_through(&self, due: i64) {
        loop {
            let chunk: Vec<Waiter> = {
                let mut g = self.inner.lock().expect("gate lock");
                let mut chunk = Vec::with_capacity(OPEN_CHUNK);
                while chunk.len() < OPEN_CHUNK && g.waiting.peek().is_some_and(|Reverse(w)| w.due <= due) {
                    chunk.push(g.waiting.pop().expect("peeked").0);
                }
                if chunk.is_empty() {
                    // Under the lock `enter` takes: a waiter for `due` arriving from now on
                    // starts an opener of its own.
                    g.openers.remove(&due);
                    return;
                }
                chunk
            };
            for w in chunk {
                let _ = w.open.send(()); // a waiter that went away needs no opening
            }
            tokio::task::yield_now().await;
        }
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.inner.lock().expect("gate lock").waiting.len()
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

    /// Waiters wake in (instant, pop order), whatever order they entered in; a waiter due
    /// later stays until its own instant.
    #[tokio::test(flavor = "current_thread")]
    async fn waiters_wake_in_instant_then_pop_order() {
        let gate = Arc::new(InstantGate::default());
        let order = Arc::new(Mutex::new(Vec::new()));
        let mut tasks = Vec::new();
        let ms = Duration::from_millis;
        // 100 of a herd at 1000 first (pop order 10..110), then one popped before them, one
        // of an earlier instant, and one of a later one.
        let mut entries: Vec<(i64, u64, Duration)> = (0..100).map(|i| (1000, 10 + i, ms(30))).collect();
        entries.extend([(1000, 1, ms(30)), (900, 7, ms(20)), (2000, 0, ms(400))]);
        for (due, seq, early) in entries {
            let rx = gate.enter(due, seq, early);
            let order = order.clone();
            tasks.push(tokio::spawn(async move {
                rx.await.unwrap();
                order.lock().unwrap().push((due, seq));
            }));
        }
        tokio::time::sleep(ms(150)).await;
        assert_eq!(gate.len(), 1, "the waiter due later stays");
        {
            let o = order.lock().unwrap();
            assert_eq!(o.len(), 102);
            assert_eq!(o[..3], [(900, 7), (1000, 1), (1000, 10)]);
            assert!(o.windows(2).all(|w| w[0] < w[1]), "in (instant, pop order)");
        }
        for t in tasks {
            t.await.unwrap();
        }
        assert_eq!(order.lock().unwrap().last(), Some(&(2000, 0)));
        assert_eq!(gate.len(), 0);
        tokio::time::sleep(ms(20)).await; // the last opener's final look finds no one left
        assert!(gate.inner.lock().unwrap().openers.is_empty(), "every opener is done");
    }

    /// Thousands waiting on one instant on a multi-threaded runtime: the first popped is
    /// among the first to run (with a sleep each, it ran a few hundred places in).
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_first_popped_of_a_herd_runs_among_the_first() {
        let gate = Arc::new(InstantGate::default());
        let ran = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let mut tasks = Vec::new();
        let mut small = None;
        for seq in (0..5000u64).rev() {
            let rx = gate.enter(1000, seq, Duration::from_millis(50));
            let ran = ran.clone();
            let t = tokio::spawn(async move {
                rx.await.unwrap();
                ran.fetch_add(1, std::sync::atomic::Ordering::SeqCst)
            });
            if seq == 0 {
                small = Some(t);
            } else {
                tasks.push(t);
            }
        }
        let place = small.unwrap().await.unwrap();
        for t in tasks {
            t.await.unwrap();
        }
        assert!(place < 2 * OPEN_CHUNK, "popped first, ran {place}th of 5000");
    }
}
