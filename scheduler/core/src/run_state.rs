//! The run state machine: one pure function, [`transition`], owns every change
//! of a run's state.
//!
//! Nothing else decides whether a run may move from one state to another. The
//! store applies a [`Transition`] as a conditional UPDATE on the state (and
//! owner, attempt) it expects, so a stale writer changes nothing. The diagram
//! in `docs/state-machine.md` is rendered from this table by [`mermaid`] and a
//! test keeps the two equal.

use std::fmt;

use crate::types::RunState;

/// Why an attempt failed. Recorded on the attempt; it does not change where
/// the run goes, which is decided by [`RunEvent::AttemptFailed::retry`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FailReason {
    /// The executor reported a failure (or answered with an error status).
    Error,
    /// No result arrived within the job's timeout.
    Timeout,
    /// The executor holding the attempt went away.
    Lost,
    /// The attempt was dropped rather than run (for example by the executor).
    Discarded,
    /// No online executor could take the attempt.
    NoExecutor,
    /// The executor's address is refused by the operator's outbound address policy.
    AddressRefused,
    /// The executor's answer was larger than `max_answer_bytes`.
    AnswerTooLarge,
    /// The run's output was larger than `max_output_bytes` (it is passed to child runs).
    OutputTooLarge,
    /// Not sent: the app's or tenant's share of the node's delivery slots stayed in use
    /// (its executors are slow or not answering; `max_inflight_per_app`/`_per_tenant`).
    Saturated,
}

impl FailReason {
    pub const ALL: &'static [FailReason] = &[
        FailReason::Error,
        FailReason::Timeout,
        FailReason::Lost,
        FailReason::Discarded,
        FailReason::NoExecutor,
        FailReason::AddressRefused,
        FailReason::AnswerTooLarge,
        FailReason::OutputTooLarge,
        FailReason::Saturated,
    ];

    pub fn as_str(&self) -> &'static str {
        match self {
            FailReason::Error => "error",
            FailReason::Timeout => "timeout",
            FailReason::Lost => "lost",
            FailReason::Discarded => "discarded",
            FailReason::NoExecutor => "no_executor",
            FailReason::AddressRefused => "address_refused",
            FailReason::AnswerTooLarge => "answer_too_large",
            FailReason::OutputTooLarge => "output_too_large",
            FailReason::Saturated => "saturated",
        }
    }
}

impl fmt::Display for FailReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Something that happens to a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RunEvent {
    /// A node claims a due run into its timer: pending → queued.
    Claim,
    /// Hand-back on shutdown or dead-node recovery: queued → pending.
    Release,
    /// Committed before any byte is sent: queued → dispatching (attempt 1),
    /// retrying → dispatching (next attempt).
    Dispatch,
    /// A dead node's delivery is sent again as the same attempt:
    /// dispatching → dispatching.
    Redeliver,
    /// The executor answered 202: dispatching → running.
    Accepted,
    /// A 200 result or a success callback: dispatching | running → succeeded.
    Succeeded,
    /// dispatching | running → retrying when `retry` (the failure policy
    /// allows another attempt), otherwise → failed. A discard policy or an
    /// exhausted retry budget is expressed by `retry: false`.
    AttemptFailed { reason: FailReason, retry: bool },
    /// By a person, a job stop, or cover_early: any non-terminal state → cancelled.
    Cancel,
    /// The misfire policy dropped it: pending | queued → expired.
    Expire,
    /// Block strategy discard_later or max concurrency: pending | queued → skipped.
    Skip,
}

impl RunEvent {
    /// One event of each kind, with `AttemptFailed` both retried and final:
    /// enough to visit every edge of the machine.
    pub const REPRESENTATIVE: &'static [RunEvent] = &[
        RunEvent::Claim,
        RunEvent::Release,
        RunEvent::Dispatch,
        RunEvent::Redeliver,
        RunEvent::Accepted,
        RunEvent::Succeeded,
        RunEvent::AttemptFailed { reason: FailReason::Error, retry: true },
        RunEvent::AttemptFailed { reason: FailReason::Error, retry: false },
        RunEvent::Cancel,
        RunEvent::Expire,
        RunEvent::Skip,
    ];

    /// The event's snake_case name, as used in errors and logs.
    pub fn name(&self) -> &'static str {
        match self {
            RunEvent::Claim => "claim",
            RunEvent::Release => "release",
            RunEvent::Dispatch => "dispatch",
            RunEvent::Redeliver => "redeliver",
            RunEvent::Accepted => "accepted",
            RunEvent::Succeeded => "succeeded",
            RunEvent::AttemptFailed { .. } => "attempt_failed",
            RunEvent::Cancel => "cancel",
            RunEvent::Expire => "expire",
            RunEvent::Skip => "skip",
        }
    }

    /// The label of this event on a diagram edge.
    fn label(&self) -> &'static str {
        match self {
            RunEvent::AttemptFailed { retry: true, .. } => "attempt_failed (retry)",
            RunEvent::AttemptFailed { retry: false, .. } => "attempt_failed (final)",
            other => other.name(),
        }
    }
}

impl fmt::Display for RunEvent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// An allowed change of state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Transition {
    pub from: RunState,
    pub to: RunState,
    /// True only for [`RunEvent::Dispatch`]: the attempt number increments.
    pub new_attempt: bool,
}

/// The event is not allowed in the run's current state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("a run in state `{from}` cannot {event}")]
pub struct Refused {
    pub from: RunState,
    /// The event's name, as [`RunEvent::name`].
    pub event: &'static str,
}

/// The one function that owns every run state transition. Everything not
/// listed on [`RunEvent`] is refused; a terminal state refuses every event.
pub fn transition(from: RunState, event: &RunEvent) -> Result<Transition, Refused> {
    use RunEvent as E;
    use RunState as S;
    let to = match (from, event) {
        (S::Pending, E::Claim) => S::Queued,
        (S::Queued, E::Release) => S::Pending,
        (S::Queued | S::Retrying, E::Dispatch) => S::Dispatching,
        (S::Dispatching, E::Redeliver) => S::Dispatching,
        (S::Dispatching, E::Accepted) => S::Running,
        (S::Dispatching | S::Running, E::Succeeded) => S::Succeeded,
        (S::Dispatching | S::Running, E::AttemptFailed { retry: true, .. }) => S::Retrying,
        (S::Dispatching | S::Running, E::AttemptFailed { retry: false, .. }) => S::Failed,
        (S::Pending | S::Queued | S::Dispatching | S::Running | S::Retrying, E::Cancel) => S::Cancelled,
        (S::Pending | S::Queued, E::Expire) => S::Expired,
        (S::Pending | S::Queued, E::Skip) => S::Skipped,
        _ => {
            return Err(Refused { from, event: event.name() });
        }
    };
    Ok(Transition { from, to, new_attempt: matches!(event, E::Dispatch) })
}

/// The names of the events a run in `from` accepts, in a fixed order (empty
/// for terminal states). For error messages.
pub fn allowed_events(from: RunState) -> Vec<&'static str> {
    let mut names: Vec<&'static str> = Vec::new();
    for event in RunEvent::REPRESENTATIVE {
        if transition(from, event).is_ok() && !names.contains(&event.name()) {
            names.push(event.name());
        }
    }
    names
}

/// The machine as a mermaid `stateDiagram-v2`, rendered from [`transition`]
/// over every state and [`RunEvent::REPRESENTATIVE`]. Edges between the same
/// pair of states are merged, their labels joined with `, `.
pub fn mermaid() -> String {
    let mut edges: Vec<(RunState, RunState, Vec<&'static str>)> = Vec::new();
    for &from in RunState::ALL {
        for event in RunEvent::REPRESENTATIVE {
            if let Ok(t) = transition(from, event) {
                match edges.iter_mut().find(|(f, to, _)| *f == t.from && *to == t.to) {
                    Some((_, _, labels)) => labels.push(event.label()),
                    None => edges.push((t.from, t.to, vec![event.label()])),
                }
            }
        }
    }
    let mut out = String::from("stateDiagram-v2\n");
    out.push_str(&format!("    [*] --> {}\n", RunState::Pending));
    for (from, to, labels) in &edges {
        out.push_str(&format!("    {from} --> {to} : {}\n", labels.join(", ")));
    }
    for state in RunState::ALL.iter().filter(|s| s.is_terminal()) {
        out.push_str(&format!("    {state} --> [*]\n"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use RunState::*;

    /// Columns of [`EXPECTED`], in order.
    const COLUMNS: [&str; 11] = [
        "claim",
        "release",
        "dispatch",
        "redeliver",
        "accepted",
        "succeeded",
        "attempt_failed retry=true",
        "attempt_failed retry=false",
        "cancel",
        "expire",
        "skip",
    ];

    const NO: Option<RunState> = None;

    /// The machine written out by hand: row = from state, column = event (see
    /// [`COLUMNS`]), cell = the state it leads to, or `NO` if refused.
    #[rustfmt::skip]
    const EXPECTED: [(RunState, [Option<RunState>; 11]); 10] = [
        //            claim         release       dispatch           redeliver          accepted       succeeded        fail retry      fail final    cancel           expire         skip
        (Pending,     [Some(Queued), NO,          NO,                NO,                NO,            NO,              NO,             NO,           Some(Cancelled), Some(Expired), Some(Skipped)]),
        (Queued,      [NO,           Some(Pending), Some(Dispatching), NO,              NO,            NO,              NO,             NO,           Some(Cancelled), Some(Expired), Some(Skipped)]),
        (Dispatching, [NO,           NO,          NO,                Some(Dispatching), Some(Running), Some(Succeeded), Some(Retrying), Some(Failed), Some(Cancelled), NO,            NO]),
        (Running,     [NO,           NO,          NO,                NO,                NO,            Some(Succeeded), Some(Retrying), Some(Failed), Some(Cancelled), NO,            NO]),
        (Retrying,    [NO,           NO,          Some(Dispatching), NO,                NO,            NO,              NO,             NO,           Some(Cancelled), NO,            NO]),
        (Succeeded,   [NO,           NO,          NO,                NO,                NO,            NO,              NO,             NO,           NO,              NO,            NO]),
        (Failed,      [NO,           NO,          NO,                NO,                NO,            NO,              NO,             NO,           NO,              NO,            NO]),
        (Cancelled,   [NO,           NO,          NO,                NO,                NO,            NO,              NO,             NO,           NO,              NO,            NO]),
        (Expired,     [NO,           NO,          NO,                NO,                NO,            NO,              NO,             NO,           NO,              NO,            NO]),
        (Skipped,     [NO,           NO,          NO,                NO,                NO,            NO,              NO,             NO,           NO,              NO,            NO]),
    ];

    const REASONS: [FailReason; 9] = [
        FailReason::Error,
        FailReason::Timeout,
        FailReason::Lost,
        FailReason::Discarded,
        FailReason::NoExecutor,
        FailReason::AddressRefused,
        FailReason::AnswerTooLarge,
        FailReason::OutputTooLarge,
        FailReason::Saturated,
    ];

    /// Every concrete event for a column: one for most, every reason for the
    /// two `AttemptFailed` columns.
    fn events_for(column: usize) -> Vec<RunEvent> {
        let failed = |retry| REASONS.iter().map(|&reason| RunEvent::AttemptFailed { reason, retry }).collect();
        match column {
            0 => vec![RunEvent::Claim],
            1 => vec![RunEvent::Release],
            2 => vec![RunEvent::Dispatch],
            3 => vec![RunEvent::Redeliver],
            4 => vec![RunEvent::Accepted],
            5 => vec![RunEvent::Succeeded],
            6 => failed(true),
            7 => failed(false),
            8 => vec![RunEvent::Cancel],
            9 => vec![RunEvent::Expire],
            10 => vec![RunEvent::Skip],
            _ => unreachable!(),
        }
    }

    /// Every event variant, every reason, both `retry` values.
    fn all_events() -> Vec<RunEvent> {
        (0..COLUMNS.len()).flat_map(events_for).collect()
    }

    #[test]
    fn every_state_and_event_matches_the_written_table() {
        // The table covers every state exactly once.
        let rows: Vec<RunState> = EXPECTED.iter().map(|(s, _)| *s).collect();
        assert_eq!(rows, RunState::ALL.to_vec());
        let mut checked = 0;
        for (from, row) in EXPECTED {
            for (column, expected) in row.iter().enumerate() {
                for event in events_for(column) {
                    let got = transition(from, &event);
                    match expected {
                        Some(to) => assert_eq!(
                            got,
                            Ok(Transition { from, to: *to, new_attempt: column == 2 }),
                            "{from} × {event:?} ({})",
                            COLUMNS[column]
                        ),
                        None => assert_eq!(
                            got,
                            Err(Refused { from, event: event.name() }),
                            "{from} × {event:?} ({}) should be refused",
                            COLUMNS[column]
                        ),
                    }
                    checked += 1;
                }
            }
        }
        // 10 states × (9 single events + 2 × 5 failure reasons).
        assert_eq!(checked, 10 * (9 + 2 * REASONS.len()));
    }

    #[test]
    fn the_terminal_set_is_the_terminal_states() {
        let terminal: Vec<RunState> = RunState::ALL.iter().copied().filter(|s| s.is_terminal()).collect();
        assert_eq!(RunState::TERMINAL, terminal.as_slice());
    }

    #[test]
    fn terminal_states_refuse_everything() {
        for &from in RunState::ALL.iter().filter(|s| s.is_terminal()) {
            for event in all_events() {
                assert!(transition(from, &event).is_err(), "{from} accepted {event:?}");
            }
            assert!(allowed_events(from).is_empty());
        }
    }

    #[test]
    fn named_refusals() {
        // A late result for a finished run.
        for from in [Succeeded, Failed, Cancelled, Expired, Skipped] {
            assert!(transition(from, &RunEvent::Succeeded).is_err());
        }
        for from in [Pending, Queued, Retrying] {
            assert!(transition(from, &RunEvent::Succeeded).is_err());
        }
        // A duplicate 202 does not re-enter running.
        assert!(transition(Running, &RunEvent::Accepted).is_err());
        // A run must be claimed before it is dispatched.
        assert!(transition(Pending, &RunEvent::Dispatch).is_err());
        for &from in RunState::ALL {
            assert_eq!(transition(from, &RunEvent::Redeliver).is_ok(), from == Dispatching);
        }
    }

    #[test]
    fn new_attempt_exactly_for_dispatch() {
        for &from in RunState::ALL {
            for event in all_events() {
                if let Ok(t) = transition(from, &event) {
                    assert_eq!(t.new_attempt, event == RunEvent::Dispatch, "{from} × {event:?}");
                }
            }
        }
        assert!(!transition(Dispatching, &RunEvent::Redeliver).unwrap().new_attempt);
    }

    #[test]
    fn refusal_message_and_names() {
        let err = transition(Succeeded, &RunEvent::Accepted).unwrap_err();
        assert_eq!(err.to_string(), "a run in state `succeeded` cannot accepted");
        let names: Vec<&str> = RunEvent::REPRESENTATIVE.iter().map(|e| e.name()).collect();
        assert_eq!(
            names,
            [
                "claim",
                "release",
                "dispatch",
                "redeliver",
                "accepted",
                "succeeded",
                "attempt_failed",
                "attempt_failed",
                "cancel",
                "expire",
                "skip"
            ]
        );
        let reasons: Vec<&str> = REASONS.iter().map(|r| r.as_str()).collect();
        assert_eq!(
            reasons,
            [
                "error",
                "timeout",
                "lost",
                "discarded",
                "no_executor",
                "address_refused",
                "answer_too_large",
                "output_too_large",
                "saturated"
            ]
        );
        assert_eq!(FailReason::ALL, REASONS);
    }

    #[test]
    fn allowed_events_per_state() {
        assert_eq!(allowed_events(Pending), ["claim", "cancel", "expire", "skip"]);
        assert_eq!(allowed_events(Queued), ["release", "dispatch", "cancel", "expire", "skip"]);
        assert_eq!(allowed_events(Dispatching), ["redeliver", "accepted", "succeeded", "attempt_failed", "cancel"]);
        assert_eq!(allowed_events(Running), ["succeeded", "attempt_failed", "cancel"]);
        assert_eq!(allowed_events(Retrying), ["dispatch", "cancel"]);
    }

    #[test]
    fn mermaid_names_every_state() {
        let diagram = mermaid();
        for &state in RunState::ALL {
            assert!(diagram.contains(&format!(" {state} ")), "{state} missing from diagram");
        }
    }

    #[test]
    fn docs_diagram_is_current() {
        let doc = include_str!("../../../docs/state-machine.md");
        let start =
            doc.find("```mermaid\n").expect("docs/state-machine.md has no ```mermaid block") + "```mermaid\n".len();
        let len = doc[start..].find("```").expect("docs/state-machine.md: unclosed ```mermaid block");
        let in_doc = &doc[start..start + len];
        let generated = mermaid();
        assert!(
            in_doc == generated,
            "docs/state-machine.md is stale: replace its ```mermaid block with this diagram \
             (from `sundial_core::run_state::mermaid()`):\n\n```mermaid\n{generated}```\n"
        );
    }
}
