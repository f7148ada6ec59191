//! How an attempt ends: the failure policy (retry with backoff, or not), recorded
//! through the store's conditional update; and the reaper for runs nobody finishes.

use rand::Rng;
use sundial_core::types::{BackoffKind, FailurePolicyKind};
use sundial_store::{AttemptResult, AttemptTarget, FinishAttempt, FinishOutcome, Job, Store};
use tokio::sync::oneshot;

pub use crate::transport::ExecutorResult;

/// Delay before attempt `attempt + 1` after attempt `attempt` failed, or `None` if
/// the failure policy allows no more attempts. `unit` in [0, 1) drives the jitter.
pub fn retry_delay_ms(job: &Job, attempt: i64, unit: f64) -> Option<i64> {
    let f = &job.failure;
    if f.policy == FailurePolicyKind::Discard {
        return None;
    }
    let max_retries = f.max_retries.unwrap_or(sundial_core::job::DEFAULT_MAX_RETRIES);
    if attempt > max_retries {
        return None;
    }
    let b = f.backoff.as_ref();
    let base = b.and_then(|b| b.base_ms).unwrap_or(sundial_core::job::DEFAULT_BACKOFF_BASE_MS);
    let max = b.and_then(|b| b.max_ms).unwrap_or(sundial_core::job::DEFAULT_BACKOFF_MAX_MS).max(base);
    let delay = match b.map(|b| b.kind).unwrap_or(BackoffKind::Exponential) {
        BackoffKind::Fixed => base,
        BackoffKind::Exponential => base.saturating_mul(1_i64 << (attempt - 1).clamp(0, 30)).min(max),
    };
    let jitter = b.and_then(|b| b.jitter).unwrap_or(true);
    Some(if jitter { ((delay as f64) * (0.8 + 0.4 * unit)).round() as i64 } else { delay })
}

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
            retry_at_ms: retry_delay_ms(job, attempt, unit).filter(|_| result.retry).map(|d| now_ms + d),
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

#[cfg(test)]
mod tests {
    use super::*;
    use sundial_core::job::{BackoffSpec, FailureSpec};

    fn job_with(failure: FailureSpec) -> Job {
        let mut j = crate::generate::tests_support::job();
        j.failure = failure;
        j
    }

    #[test]
    fn exponential_backoff_doubles_up_to_the_cap_and_stops_after_max_retries() {
        let j = job_with(FailureSpec {
            policy: FailurePolicyKind::Retry,
            max_retries: Some(3),
            backoff: Some(BackoffSpec {
                kind: BackoffKind::Exponential,
                base_ms: Some(1000),
                max_ms: Some(3000),
                jitter: Some(false),
            }),
            allow_overlap: None,
        });
        assert_eq!(retry_delay_ms(&j, 1, 0.5), Some(1000));
        assert_eq!(retry_delay_ms(&j, 2, 0.5), Some(2000));
        assert_eq!(retry_delay_ms(&j, 3, 0.5), Some(3000));
        assert_eq!(retry_delay_ms(&j, 4, 0.5), None, "3 retries = 4 attempts");
    }

    #[test]
    fn jitter_stays_within_twenty_percent_and_discard_never_retries() {
        let j = job_with(FailureSpec {
            policy: FailurePolicyKind::Retry,
            max_retries: Some(5),
            backoff: Some(BackoffSpec {
                kind: BackoffKind::Fixed,
                base_ms: Some(1000),
                max_ms: None,
                jitter: Some(true),
            }),
            allow_overlap: None,
        });
        assert_eq!(retry_delay_ms(&j, 1, 0.0), Some(800));
        assert_eq!(retry_delay_ms(&j, 1, 0.999_999), Some(1200));
        let d = job_with(FailureSpec {
            policy: FailurePolicyKind::Discard,
            max_retries: Some(0),
            backoff: None,
            allow_overlap: None,
        });
        assert_eq!(retry_delay_ms(&d, 1, 0.5), None);
    }
}
