//! Fan-in and the chain walk's rules: what a parent's end (or its never running) does along
//! one edge to a child job, and when a fan-in child's wait for its parents is decided.
//!
//! The store walks the job graph in the transaction that ends a run
//! (`store/src/sql/chains.rs`): per edge it asks [`follow`], records arrivals at a fan-in's
//! join and asks [`decide`] once they may settle it.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::types::{EdgeCondition, JobState, RunState, WaitFor};

/// One parent's arrival at a fan-in child in a chain.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Arrival {
    /// The parent's run in the chain (none: the parent will never run in it).
    #[serde(default)]
    pub run_id: Option<String>,
    #[serde(default)]
    pub state: Option<RunState>,
    /// Does the parent's edge fire for it?
    pub holds: bool,
    /// Why it does not hold.
    #[serde(default)]
    pub reason: Option<String>,
    pub at_ms: i64,
}

/// The arrivals of a join, by parent job id.
pub type Arrivals = BTreeMap<String, Arrival>;

/// What reaches a child job along an edge from its parent job.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Upstream<'a> {
    /// The parent's run in the chain ended in `state`.
    Ended { job_id: &'a str, run_id: &'a str, state: RunState },
    /// The parent job will not run in the chain, for this reason.
    WillNotRun { job_id: &'a str, reason: &'a str },
}

/// The child's side of an edge, as [`follow`] needs it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EdgeTo {
    /// When the edge fires (on success, on failure, always).
    pub on: EdgeCondition,
    /// The child job's state: a stopped child fires for nobody.
    pub child_state: JobState,
    /// Edges into the child: more than one makes it a fan-in.
    pub parents: i64,
}

/// What one edge does with what reaches it.
#[derive(Debug, Clone, PartialEq)]
pub enum Follow {
    /// Fire the child (a single-parent child whose edge holds): a run keyed by the parent run.
    Fire,
    /// The child will not run in the chain, for this reason: pass that on to its own children.
    WillNotRun(String),
    /// A fan-in child: record this arrival at its join, then [`decide`] the join.
    Arrive(Arrival),
}

/// What `from` does along the edge `edge` at `now_ms`.
pub fn follow(from: &Upstream<'_>, edge: EdgeTo, now_ms: i64) -> Follow {
    let (holds, why_not) = match from {
        Upstream::Ended { job_id, state, .. } => {
            let holds = edge.on.fires_on(*state);
            let why = format!("`{job_id}` ended `{}` and its edge fires {}", state.as_str(), edge.on.as_str());
            (holds, (!holds).then_some(why))
        }
        Upstream::WillNotRun { job_id, reason } => {
            (false, Some(format!("`{job_id}` will not run in this chain: {reason}")))
        }
    };
    let stopped = edge.child_state != JobState::Active;
    if edge.parents <= 1 {
        return match (from, holds && !stopped) {
            (Upstream::Ended { .. }, true) => Follow::Fire,
            _ if stopped && holds => Follow::WillNotRun("the job is stopped".into()),
            _ => Follow::WillNotRun(why_not.unwrap_or_default()),
        };
    }
    if stopped {
        // A stopped fan-in child is not fired by any parent: what it would release is released now.
        return Follow::WillNotRun("the job is stopped".into());
    }
    Follow::Arrive(match from {
        Upstream::Ended { run_id, state, .. } => {
            Arrival { run_id: Some(run_id.to_string()), state: Some(*state), holds, reason: why_not, at_ms: now_ms }
        }
        Upstream::WillNotRun { .. } => {
            Arrival { run_id: None, state: None, holds: false, reason: why_not, at_ms: now_ms }
        }
    })
}

/// How a join is decided.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    Fire,
    Skip(String),
}

/// The decision, once `arrivals` settle the wait for the parents in `waits_for` (`None`:
/// still waiting). `all`: every parent's edge held (fire), or one did not (skip at once:
/// the child can no longer fire). `any`: one held (fire at once), or every parent arrived
/// and none held (skip).
pub fn decide(wait: WaitFor, waits_for: &[String], arrivals: &Arrivals) -> Option<Decision> {
    let mut arrived = waits_for.iter().filter_map(|p| arrivals.get(p).map(|a| (p, a)));
    let all_in = waits_for.iter().all(|p| arrivals.contains_key(p));
    match wait {
        WaitFor::All => {
            if let Some((p, a)) = arrived.find(|(_, a)| !a.holds) {
                return Some(Decision::Skip(format!(
                    "waits for all parents, and `{p}` did not fire it: {}",
                    a.reason.as_deref().unwrap_or("its edge's condition was not met")
                )));
            }
            all_in.then_some(Decision::Fire)
        }
        WaitFor::Any => {
            if arrived.any(|(_, a)| a.holds) {
                return Some(Decision::Fire);
            }
            all_in.then(|| {
                let why: Vec<String> = waits_for
                    .iter()
                    .map(|p| {
                        format!("{p}: {}", arrivals[p].reason.as_deref().unwrap_or("its edge's condition was not met"))
                    })
                    .collect();
                Decision::Skip(format!("waits for any parent, and none fired it ({})", why.join("; ")))
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn a(holds: bool) -> Arrival {
        Arrival { run_id: None, state: None, holds, reason: (!holds).then(|| "no".into()), at_ms: 0 }
    }

    fn arrivals(items: &[(&str, bool)]) -> Arrivals {
        items.iter().map(|(p, h)| (p.to_string(), a(*h))).collect()
    }

    #[test]
    fn all_waits_for_every_parent_and_skips_at_the_first_that_cannot_fire() {
        let w: Vec<String> = vec!["a".into(), "b".into(), "c".into()];
        assert_eq!(decide(WaitFor::All, &w, &arrivals(&[("a", true), ("b", true)])), None);
        assert_eq!(decide(WaitFor::All, &w, &arrivals(&[("a", true), ("b", true), ("c", true)])), Some(Decision::Fire));
        assert!(
            matches!(decide(WaitFor::All, &w, &arrivals(&[("b", false)])), Some(Decision::Skip(m)) if m.contains("`b`"))
        );
        // An arrival from a job the chain does not wait for changes nothing.
        assert_eq!(decide(WaitFor::All, &w, &arrivals(&[("a", true), ("b", true), ("x", false)])), None);
    }

    #[test]
    fn any_fires_at_the_first_that_holds_and_skips_when_none_did() {
        let w: Vec<String> = vec!["a".into(), "b".into()];
        assert_eq!(decide(WaitFor::Any, &w, &arrivals(&[("a", false)])), None);
        assert_eq!(decide(WaitFor::Any, &w, &arrivals(&[("a", false), ("b", true)])), Some(Decision::Fire));
        assert_eq!(decide(WaitFor::Any, &w, &arrivals(&[("b", true)])), Some(Decision::Fire));
        assert!(matches!(decide(WaitFor::Any, &w, &arrivals(&[("a", false), ("b", false)])), Some(Decision::Skip(_))));
    }

    #[test]
    fn an_edge_fires_a_single_parent_child_passes_on_what_will_not_run_and_records_arrivals_at_a_fan_in() {
        use EdgeCondition::{OnFailure, OnSuccess};
        let ok = Upstream::Ended { job_id: "job_p", run_id: "run_p", state: RunState::Succeeded };
        let failed = Upstream::Ended { job_id: "job_p", run_id: "run_p", state: RunState::Failed };
        let not_run = Upstream::WillNotRun { job_id: "job_p", reason: "the job is stopped" };
        let edge = |on, child_state, parents| EdgeTo { on, child_state, parents };
        let active = JobState::Active;
        let paused = JobState::Stopped;
        assert_eq!(follow(&ok, edge(OnSuccess, active, 1), 7), Follow::Fire);
        assert!(matches!(follow(&failed, edge(OnSuccess, active, 1), 7),
            Follow::WillNotRun(m) if m == "`job_p` ended `failed` and its edge fires on_success"));
        assert_eq!(follow(&ok, edge(OnSuccess, paused, 1), 7), Follow::WillNotRun("the job is stopped".into()));
        assert!(
            matches!(follow(&failed, edge(OnSuccess, paused, 1), 7), Follow::WillNotRun(m) if m.contains("ended `failed`")),
            "an edge that does not hold says so, stopped or not"
        );
        assert!(matches!(follow(&not_run, edge(OnFailure, active, 1), 7),
            Follow::WillNotRun(m) if m == "`job_p` will not run in this chain: the job is stopped"));
        // A fan-in: every parent arrives, holding or not; a stopped one releases at once.
        assert_eq!(
            follow(&ok, edge(OnSuccess, active, 2), 7),
            Follow::Arrive(Arrival {
                run_id: Some("run_p".into()),
                state: Some(RunState::Succeeded),
                holds: true,
                reason: None,
                at_ms: 7
            })
        );
        assert!(matches!(
            follow(&failed, edge(OnSuccess, active, 2), 7),
            Follow::Arrive(Arrival { holds: false, reason: Some(_), .. })
        ));
        assert!(matches!(
            follow(&not_run, edge(OnSuccess, active, 3), 7),
            Follow::Arrive(Arrival { run_id: None, holds: false, .. })
        ));
        assert_eq!(follow(&ok, edge(OnSuccess, paused, 2), 7), Follow::WillNotRun("the job is stopped".into()));
    }
}
