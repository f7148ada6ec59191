//! How an attempt ends: the failure policy (retry with backoff, or not), recorded
//! through the store's conditional update; and the reaper for runs nobody finishes.

use rand::Rng;
use sundial_core::failure::retry_delay_ms;
use sundial_store::{AttemptResult, AttemptTarget, FinishAttempt, FinishOutcome, Job, Store};
use tokio::sync::oneshot;

pub use crate::transport::ExecutorResult;

/// The store write for an attempt's outcome, with the job's failure policy applied
/// (a failed attempt gets its retry time, or none when the policy allows no more, or
/// when the executor said the failure cannot succeed on a retry).
pub fn finish_params(
    job: &Job,
    run_id: &str,
    attempt: i64,
    result: ExecutorResult,
    target: Option<AttemptTarget>,
    now_ms: i64,
) -> FinishAttempt {
    let result_kind = if result.succeeded {
        AttemptResult::Succeeded
    } else {
        let unit: f64 = rand::rng().random();
        AttemptResult::Failed {
            reason: result.reason,
            retry_at_ms: retry_delay_ms(&job.failure, attempt, unit).filter(|_| result.retry).map(|d| now_ms + d),
        }
    };
    FinishAttempt {
        run_id: run_id.to_string(),
        attempt,
        result: result_kind,
        output: result.output,
        message: result.message,
        now_ms,
        target,
        dispatched: None,
    }
}

fn log_outcome(outcome: &FinishOutcome, attempt: i64) {
    if let FinishOutcome::Applied { run, children } = outcome {
        // One line per success would be thousands a second under load: those are DEBUG (the
        // runs API has every one); anything else stays INFO.
        if run.state == sundial_core::types::RunState::Succeeded {
            tracing::debug!(run_id = %run.id, job_id = %run.job_id, attempt, state = %run.state, children = children.len(), "attempt finished");
        } else {
            tracing::info!(run_id = %run.id, job_id = %run.job_id, attempt, state = %run.state, children = children.len(), "attempt finished");
        }
    }
}

/// Record an attempt's outcome, applying the job's failure policy, in a transaction of its own.
pub async fn finish_attempt(
    store: &dyn Store,
    job: &Job,
    run_id: &str,
    attempt: i64,
    result: ExecutorResult,
    now_ms: i64,
) -> sundial_store::Result<FinishOutcome> {
    let params = finish_params(job, run_id, attempt, result, None, now_ms);
    let outcome = crate::retry_deadlock(|| store.run_finish_attempt(&params)).await?;
    log_outcome(&outcome, attempt);
    Ok(outcome)
}

/// Group commit of attempt results: callers queue their result; whoever finds no write
/// in progress writes everything queued in one transaction
/// ([`RunStore::run_finish_many`](sundial_store::RunStore::run_finish_many)), the others
/// wait for it. Idle, a batch is one result and adds no delay; under load the
/// batches grow with the queue, and so does the number of results per durable commit.
#[derive(Debug, Default)]
pub(crate) struct FinishBatcher {
    queue: std::sync::Mutex<Vec<(FinishAttempt, oneshot::Sender<sundial_store::Result<FinishOutcome>>)>>,
    writing: tokio::sync::Mutex<()>,
}

/// Results per transaction at most.
const FINISH_BATCH: usize = 1024;

impl FinishBatcher {
    pub(crate) async fn finish(&self, store: &dyn Store, p: FinishAttempt) -> sundial_store::Result<FinishOutcome> {
        let attempt = p.attempt;
        let (tx, mut rx) = oneshot::channel();
        self.queue.lock().expect("queue lock").push((p, tx));
        loop {
            let writing = self.writing.lock().await;
            match rx.try_recv() {
                Ok(r) => return r.inspect(|o| log_outcome(o, attempt)),
                Err(oneshot::error::TryRecvError::Closed) => {
                    return Err(sundial_store::StoreError::Stale("a result whose batch was abandoned"));
                }
                Err(oneshot::error::TryRecvError::Empty) => {}
            }
            let (params, senders): (Vec<FinishAttempt>, Vec<_>) = {
                let mut q = self.queue.lock().expect("queue lock");
                let n = q.len().min(FINISH_BATCH);
                q.drain(..n).unzip()
            };
            match crate::retry_deadlock(|| store.run_finish_many(&params)).await {
                Ok(outcomes) => {
                    for (tx, o) in senders.into_iter().zip(outcomes) {
                        let _ = tx.send(Ok(o));
                    }
                }
                Err(e) if senders.len() == 1 => {
                    if let Some(tx) = senders.into_iter().next() {
                        let _ = tx.send(Err(e));
                    }
                }
                // One bad result must not fail the others: write them one by one.
                Err(_) => {
                    for (p, tx) in params.iter().zip(senders) {
                        let r = crate::retry_deadlock(|| store.run_finish_attempt(p)).await;
                        let _ = tx.send(r);
                    }
                }
            }
            drop(writing);
        }
    }
}
