//! The failure policy: whether a failed attempt is retried, and after how long.

use crate::job::FailureSpec;
use crate::types::{BackoffKind, FailurePolicyKind};

/// Delay before attempt `attempt + 1` after attempt `attempt` failed, or `None` if
/// the failure policy allows no more attempts. `unit` in [0, 1) drives the jitter.
pub fn retry_delay_ms(f: &FailureSpec, attempt: i64, unit: f64) -> Option<i64> {
    if f.policy == FailurePolicyKind::Discard {
        return None;
    }
    let max_retries = f.max_retries.unwrap_or(crate::job::DEFAULT_MAX_RETRIES);
    if attempt > max_retries {
        return None;
    }
    let b = f.backoff.as_ref();
    let base = b.and_then(|b| b.base_ms).unwrap_or(crate::job::DEFAULT_BACKOFF_BASE_MS);
    let max = b.and_then(|b| b.max_ms).unwrap_or(crate::job::DEFAULT_BACKOFF_MAX_MS).max(base);
    let delay = match b.map(|b| b.kind).unwrap_or(BackoffKind::Exponential) {
        BackoffKind::Fixed => base,
        BackoffKind::Exponential => base.saturating_mul(1_i64 << (attempt - 1).clamp(0, 30)).min(max),
    };
    let jitter = b.and_then(|b| b.jitter).unwrap_or(true);
    Some(if jitter { ((delay as f64) * (0.8 + 0.4 * unit)).round() as i64 } else { delay })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::job::BackoffSpec;

    #[test]
    fn exponential_backoff_doubles_up_to_the_cap_and_stops_after_max_retries() {
        let j = FailureSpec {
            policy: FailurePolicyKind::Retry,
            max_retries: Some(3),
            backoff: Some(BackoffSpec {
                kind: BackoffKind::Exponential,
                base_ms: Some(1000),
                max_ms: Some(3000),
                jitter: Some(false),
            }),
            allow_overlap: None,
        };
        assert_eq!(retry_delay_ms(&j, 1, 0.5), Some(1000));
        assert_eq!(retry_delay_ms(&j, 2, 0.5), Some(2000));
        assert_eq!(retry_delay_ms(&j, 3, 0.5), Some(3000));
        assert_eq!(retry_delay_ms(&j, 4, 0.5), None, "3 retries = 4 attempts");
    }

    #[test]
    fn jitter_stays_within_twenty_percent_and_discard_never_retries() {
        let j = FailureSpec {
            policy: FailurePolicyKind::Retry,
            max_retries: Some(5),
            backoff: Some(BackoffSpec {
                kind: BackoffKind::Fixed,
                base_ms: Some(1000),
                max_ms: None,
                jitter: Some(true),
            }),
            allow_overlap: None,
        };
        assert_eq!(retry_delay_ms(&j, 1, 0.0), Some(800));
        assert_eq!(retry_delay_ms(&j, 1, 0.999_999), Some(1200));
        let d = FailureSpec {
            policy: FailurePolicyKind::Discard,
            max_retries: Some(0),
            backoff: None,
            allow_overlap: None,
        };
        assert_eq!(retry_delay_ms(&d, 1, 0.5), None);
    }
}
