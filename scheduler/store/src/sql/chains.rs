//! Chains: what a run's end does to its child jobs, in the transaction that ends it.
//!
//! A child job with one parent fires once per parent run (`p:<parent run id>`) when its
//! edge's condition holds, as it always did. A child job with several parents (a fan-in)
//! fires once per *chain* (`p:<chain id>`): each parent that ends in the chain (or that
//! will never run in it) records an *arrival* in the chain's `chain_joins` row for that
//! child, and the arrival that completes the wait decides the child: fired, or `skipped`
//! with the reason. The row is locked by every arrival (`INSERT … ON DUPLICATE KEY UPDATE`
//! takes the row lock at once, then the arrivals are read with a locking read, which sees
//! the latest committed version), so two parents ending at once on two nodes are decided
//! one after the other: the second sees the first's arrival. The fire key makes the child
//! run unique whatever happens.
//!
//! A job that will not run in a chain (its edge's condition was false, its job is stopped,
//! its own fan-in was skipped, its run was cancelled) passes that on: its single-parent
//! children will not run either, and each fan-in child downstream gets an arrival that does
//! not hold, naming why. So an `all` fan-in is never left waiting for a parent that cannot
//! come; the walk is a work list, not recursion, and ends because the job graph has no cycles.

use std::collections::{HashMap, HashSet, VecDeque};

use serde_json::Value;
use sqlx::{Any, Transaction};
use sundial_core::run_state::{RunEvent, transition};
use sundial_core::types::{EdgeCondition, JobState, RunState, TriggerKind, WaitFor};

use super::writes::{insert_child_run, insert_run, list_in_chain};
use super::{IDS, col, fetch_in, json_opt, parse_col, refused, sql_states, to_json};
use sundial_core::fan_in::{self, Arrival, Arrivals, Decision, EdgeTo, Follow, Upstream, decide};

use crate::{Dialect, Result, Run, StoreError};

/// A child edge of a parent job, with what the child's side needs to decide.
#[derive(Debug, Clone)]
pub(super) struct Edge {
    pub child_job_id: String,
    pub on: EdgeCondition,
    pub child_state: JobState,
    pub wait: WaitFor,
    /// Edges into the child: more than one makes it a fan-in.
    pub parents: i64,
    /// Edges out of the child: with none, that it will not run concerns nobody.
    pub children: i64,
}

/// The child edges of `parent_job_ids`, by parent job, each list ordered by child job id.
pub(super) async fn edges_from(
    tx: &mut Transaction<'static, Any>,
    parent_job_ids: &[&str],
) -> Result<HashMap<String, Vec<Edge>>> {
    let sql = format!(
        "SELECT c.parent_job_id, c.child_job_id, c.fire_on, j.state, j.wait_for, \
         (SELECT COUNT(*) FROM job_children p WHERE p.child_job_id = c.child_job_id) AS parents, \
         (SELECT COUNT(*) FROM job_children g WHERE g.parent_job_id = c.child_job_id) AS children \
         FROM job_children c JOIN jobs j ON j.id = c.child_job_id WHERE c.parent_job_id IN ({IDS}) \
         ORDER BY c.parent_job_id, c.child_job_id"
    );
    let mut out: HashMap<String, Vec<Edge>> = HashMap::new();
    for row in fetch_in(tx, &sql, parent_job_ids).await? {
        out.entry(col(&row, "parent_job_id")?).or_default().push(Edge {
            child_job_id: col(&row, "child_job_id")?,
            on: parse_col(&row, "fire_on")?,
            child_state: parse_col(&row, "state")?,
            wait: parse_col(&row, "wait_for")?,
            parents: col(&row, "parents")?,
            children: col(&row, "children")?,
        });
    }
    Ok(out)
}

/// Something that happened in a chain, still to be passed on to child jobs.
enum Step {
    /// A run ended (`succeeded`, `failed`, a fan-in `skipped`, or `cancelled`).
    Ended(Box<Run>),
    /// A job will not run in the chain, for this reason.
    WillNotRun { job_id: String, reason: String },
}

/// `run` ended: fire the children whose edges hold, pass on what will not run. `edges` are
/// the run's job's child edges when the caller read them already (a batch reads them for
/// all its runs at once). Returns the child runs fired (`pending`), not those recorded
/// `skipped`.
pub(super) async fn run_ended(
    tx: &mut Transaction<'static, Any>,
    dialect: Dialect,
    run: &Run,
    edges: Option<Vec<Edge>>,
    now_ms: i64,
) -> Result<Vec<Run>> {
    // The params the chain's root was triggered with: a root's own, a child's inherited.
    let chain = Chain { id: run.chain().to_string(), tenant_id: run.tenant_id.clone(), params: run.params.clone() };
    walk(tx, dialect, &chain, Step::Ended(Box::new(run.clone())), edges, now_ms).await
}

/// A job is being deleted (its edges still there): in each chain with a fan-in still
/// waiting where the job has not ended, it will not run now, and that is passed on.
pub(super) async fn job_deleted(
    tx: &mut Transaction<'static, Any>,
    dialect: Dialect,
    tenant_id: &str,
    job_id: &str,
    now_ms: i64,
) -> Result<()> {
    let open: Vec<String> = sqlx::query(
        "SELECT DISTINCT chain_id FROM chain_joins WHERE tenant_id = ? AND run_id IS NULL ORDER BY chain_id",
    )
    .bind(tenant_id)
    .fetch_all(&mut **tx)
    .await?
    .iter()
    .map(|r| col(r, "chain_id"))
    .collect::<Result<_>>()?;
    for chain_id in open {
        let ended = sqlx::query(sqlx::AssertSqlSafe(format!(
            "SELECT 1 FROM runs WHERE job_id = ? AND (id = ? OR id IN (SELECT run_id FROM chain_runs WHERE chain_id = ?)) \
             AND state IN ({})",
            sql_states(RunState::TERMINAL)
        )))
        .bind(job_id)
        .bind(&chain_id)
        .bind(&chain_id)
        .fetch_optional(&mut **tx)
        .await?
        .is_some();
        // Only where the chain could run it: a job its root does not reach was never waited for.
        let wanted = [job_id.to_string()];
        let reachable = reached_from_root(tx, &chain_id, &wanted, None).await?.is_none_or(|r| r.contains(job_id));
        if ended || !reachable {
            continue;
        }
        let params = match sqlx::query("SELECT params FROM runs WHERE id = ?")
            .bind(&chain_id)
            .fetch_optional(&mut **tx)
            .await?
        {
            Some(r) => json_opt(&r, "params")?,
            None => None,
        };
        let chain = Chain { id: chain_id, tenant_id: tenant_id.to_string(), params };
        let step = Step::WillNotRun { job_id: job_id.to_string(), reason: "the job was deleted".into() };
        walk(tx, dialect, &chain, step, None, now_ms).await?;
    }
    Ok(())
}

/// The chain a walk is in.
struct Chain {
    id: String,
    tenant_id: String,
    /// What its root was triggered with.
    params: Option<Value>,
}

/// Pass `first` on down the job graph: fire what holds, record what a fan-in decides, and
/// pass on what will not run. Returns the runs fired.
async fn walk(
    tx: &mut Transaction<'static, Any>,
    dialect: Dialect,
    chain: &Chain,
    first: Step,
    edges: Option<Vec<Edge>>,
    now_ms: i64,
) -> Result<Vec<Run>> {
    let (chain_id, tenant_id, chain_params) = (&chain.id, &chain.tenant_id, &chain.params);
    let mut fired = Vec::new();
    let mut todo = VecDeque::from([(first, edges)]);
    let mut passed_on: HashSet<String> = HashSet::new();
    while let Some((step, edges)) = todo.pop_front() {
        let from_job = match &step {
            Step::Ended(r) => r.job_id.clone(),
            Step::WillNotRun { job_id, .. } => job_id.clone(),
        };
        let edges = match edges {
            Some(e) => e,
            None => edges_from(tx, &[from_job.as_str()]).await?.remove(&from_job).unwrap_or_default(),
        };
        for edge in edges {
            let from = match &step {
                Step::Ended(r) => Upstream::Ended { job_id: &r.job_id, run_id: &r.id, state: r.state },
                Step::WillNotRun { job_id, reason } => Upstream::WillNotRun { job_id, reason },
            };
            let to = EdgeTo { on: edge.on, child_state: edge.child_state, parents: edge.parents };
            let reason = match fan_in::follow(&from, to, now_ms) {
                Follow::Fire => {
                    let Step::Ended(r) = &step else { unreachable!("only an ended run fires a child") };
                    if let Some(child) =
                        insert_child_run(tx, dialect, r, &edge.child_job_id, r.output.clone(), now_ms).await?
                    {
                        fired.push(child);
                    }
                    continue;
                }
                Follow::WillNotRun(reason) => reason,
                Follow::Arrive(arrival) => {
                    let join = Join { chain_id, tenant_id, child: &edge, chain_params };
                    match arrive(tx, dialect, &join, &from_job, arrival, now_ms).await? {
                        Joined::Waiting => continue,
                        Joined::Recorded(child) if child.state == RunState::Pending => {
                            fired.push(*child);
                            continue;
                        }
                        Joined::Recorded(skipped) => {
                            todo.push_back((Step::Ended(skipped), None));
                            continue;
                        }
                        Joined::NotRun(reason) => reason,
                    }
                }
            };
            // What will not run is passed on once per job, to jobs that have children.
            if edge.children > 0 && passed_on.insert(edge.child_job_id.clone()) {
                todo.push_back((Step::WillNotRun { job_id: edge.child_job_id.clone(), reason }, None));
            }
        }
    }
    Ok(fired)
}

/// The fan-in child a join decides, in its chain.
struct Join<'a> {
    chain_id: &'a str,
    tenant_id: &'a str,
    child: &'a Edge,
    chain_params: &'a Option<Value>,
}

/// What an arrival at a join did.
enum Joined {
    /// Nothing decided yet (or decided before).
    Waiting,
    /// This arrival decided: the fan-in's run, `pending` to fire or `skipped`.
    Recorded(Box<Run>),
    /// The one parent the chain reaches did not fire it: as for a single parent, no run is
    /// recorded (nothing was waiting), and what it would release is released.
    NotRun(String),
}

/// Record `from_job`'s arrival at the join and decide it if this completes the wait.
async fn arrive(
    tx: &mut Transaction<'static, Any>,
    dialect: Dialect,
    j: &Join<'_>,
    from_job: &str,
    arrival: Arrival,
    now_ms: i64,
) -> Result<Joined> {
    let (upsert, lock) = match dialect {
        Dialect::MySql => ("ON DUPLICATE KEY UPDATE updated_at_ms = VALUES(updated_at_ms)", " FOR UPDATE"),
        Dialect::Sqlite => {
            ("ON CONFLICT (chain_id, child_job_id) DO UPDATE SET updated_at_ms = excluded.updated_at_ms", "")
        }
    };
    // Take the row lock first (creating the row if this is the first arrival) …
    sqlx::query(sqlx::AssertSqlSafe(format!(
        "INSERT INTO chain_joins (chain_id, child_job_id, tenant_id, arrivals, run_id, created_at_ms, updated_at_ms) \
         VALUES (?, ?, ?, '{{}}', NULL, ?, ?) {upsert}"
    )))
    .bind(j.chain_id)
    .bind(&j.child.child_job_id)
    .bind(j.tenant_id)
    .bind(now_ms)
    .bind(now_ms)
    .execute(&mut **tx)
    .await?;
    // … then read the latest arrivals under it.
    let row = sqlx::query(sqlx::AssertSqlSafe(format!(
        "SELECT arrivals, run_id FROM chain_joins WHERE chain_id = ? AND child_job_id = ?{lock}"
    )))
    .bind(j.chain_id)
    .bind(&j.child.child_job_id)
    .fetch_one(&mut **tx)
    .await?;
    let mut arrivals: Arrivals = serde_json::from_str(&col::<String>(&row, "arrivals")?)
        .map_err(|e| StoreError::Corrupt(format!("chain_joins.arrivals: {e}")))?;
    let decided: Option<String> = col(&row, "run_id")?;
    arrivals.entry(from_job.to_string()).or_insert(arrival);
    let mut recorded = None;
    let mut joined = Joined::Waiting;
    if decided.is_none() {
        let waits_for = waited_parents(tx, j.chain_id, &j.child.child_job_id).await?;
        match decide(j.child.wait, &waits_for, &arrivals) {
            // No parent of it in this chain: not this chain's to decide.
            _ if waits_for.is_empty() => {}
            None => {}
            Some(Decision::Skip(reason)) if waits_for.len() <= 1 => joined = Joined::NotRun(reason),
            Some(outcome) => match record(tx, dialect, j, &arrivals, &waits_for, outcome, now_ms).await? {
                Ok(run) => {
                    recorded = Some(run.id.clone());
                    joined = Joined::Recorded(Box::new(run));
                }
                // Its fire key was taken before the join decided (the job graph changed under
                // the chain: it was a single-parent child of the root, `p:<root id>`): that run
                // is the chain's run of it; the join closes on it.
                Err(taken) => recorded = Some(taken),
            },
        }
    }
    sqlx::query("UPDATE chain_joins SET arrivals = ?, run_id = COALESCE(run_id, ?), updated_at_ms = ? WHERE chain_id = ? AND child_job_id = ?")
        .bind(to_json(&arrivals))
        .bind(recorded)
        .bind(now_ms)
        .bind(j.chain_id)
        .bind(&j.child.child_job_id)
        .execute(&mut **tx)
        .await?;
    Ok(joined)
}

/// The parents a fan-in child waits for in a chain: its parent jobs that the chain's root
/// job reaches (a parent the chain can never run is not waited for). If the root run is
/// gone (retention), every parent.
async fn waited_parents(tx: &mut Transaction<'static, Any>, chain_id: &str, child_job_id: &str) -> Result<Vec<String>> {
    let parents: Vec<String> =
        sqlx::query("SELECT parent_job_id FROM job_children WHERE child_job_id = ? ORDER BY parent_job_id")
            .bind(child_job_id)
            .fetch_all(&mut **tx)
            .await?
            .iter()
            .map(|r| col(r, "parent_job_id"))
            .collect::<Result<_>>()?;
    match reached_from_root(tx, chain_id, &parents, Some(child_job_id)).await? {
        None => Ok(parents),
        Some(reached) => Ok(parents.into_iter().filter(|p| reached.contains(p)).collect()),
    }
}

/// The jobs the chain's root job reaches in the job graph (itself included), walked until
/// every job of `wanted` is reached or nothing more is, not walking through `skip`; `None`
/// if the root run is gone.
async fn reached_from_root(
    tx: &mut Transaction<'static, Any>,
    chain_id: &str,
    wanted: &[String],
    skip: Option<&str>,
) -> Result<Option<HashSet<String>>> {
    let Some(root) = sqlx::query("SELECT job_id FROM runs WHERE id = ?")
        .bind(chain_id)
        .fetch_optional(&mut **tx)
        .await?
        .map(|r| col::<String>(&r, "job_id"))
        .transpose()?
    else {
        return Ok(None);
    };
    let mut reached: HashSet<String> = HashSet::from([root.clone()]);
    let mut frontier = vec![root];
    let sql = format!("SELECT child_job_id FROM job_children WHERE parent_job_id IN ({IDS})");
    while !frontier.is_empty() && !wanted.iter().all(|p| reached.contains(p)) {
        let ids: Vec<&str> = frontier.iter().map(String::as_str).collect();
        frontier = fetch_in(tx, &sql, &ids)
            .await?
            .iter()
            .map(|r| col::<String>(r, "child_job_id"))
            .collect::<Result<Vec<_>>>()?
            .into_iter()
            .filter(|c| Some(c.as_str()) != skip && reached.insert(c.clone()))
            .collect();
    }
    Ok(Some(reached))
}

/// Write the fan-in child's run for the chain (`p:<chain id>`): `pending` with its parents,
/// or `skipped` with the reason; `Err` with the id of the run already holding that key. With one parent in the chain it also carries that parent
/// as a single parent's child does (`parent_run_id`, `parent_output`).
async fn record(
    tx: &mut Transaction<'static, Any>,
    dialect: Dialect,
    j: &Join<'_>,
    arrivals: &Arrivals,
    waits_for: &[String],
    outcome: Decision,
    now_ms: i64,
) -> Result<std::result::Result<Run, String>> {
    let mut run = Run::pending(
        j.tenant_id,
        &j.child.child_job_id,
        0,
        format!("p:{}", j.chain_id),
        TriggerKind::Parent,
        now_ms,
        now_ms,
    );
    run.chain_id = Some(j.chain_id.to_string());
    run.params = j.chain_params.clone();
    if let Decision::Skip(reason) = &outcome {
        run.state = transition(run.state, &RunEvent::Skip).map_err(refused)?.to;
        run.message = Some(reason.clone());
        run.finished_at_ms = Some(now_ms);
    }
    // The parents that ran, as they ended: a locking read (MySQL), since a plain one would
    // read this transaction's snapshot, older than the arrivals it just read.
    let run_ids: Vec<&str> = arrivals.values().filter_map(|a| a.run_id.as_deref()).collect();
    let mut parents = Vec::new();
    if !run_ids.is_empty() {
        let lock = match dialect {
            Dialect::MySql => " LOCK IN SHARE MODE",
            Dialect::Sqlite => "",
        };
        let sql = format!("SELECT id, job_id, state, output FROM runs WHERE id IN ({IDS}) ORDER BY job_id{lock}");
        for r in fetch_in(tx, &sql, &run_ids).await? {
            parents.push(serde_json::json!({
                "job_id": col::<String>(&r, "job_id")?,
                "run_id": col::<String>(&r, "id")?,
                "state": col::<String>(&r, "state")?,
                "output": json_opt(&r, "output")?,
            }));
        }
    }
    // Only one of its parents is in this chain: it is that parent's child, as a single parent's is.
    if let [only] = waits_for
        && let Some(p) = parents.iter().find(|p| p["job_id"] == only.as_str())
    {
        run.parent_run_id = p["run_id"].as_str().map(String::from);
        run.parent_output = Some(p["output"].clone()).filter(|o| !o.is_null());
    }
    run.parents = Some(Value::Array(parents));
    if !insert_run(tx, dialect, &run).await? {
        let taken: String = sqlx::query("SELECT id FROM runs WHERE job_id = ? AND fire_key = ?")
            .bind(&run.job_id)
            .bind(&run.fire_key)
            .fetch_one(&mut **tx)
            .await
            .map(|r| col(&r, "id"))??;
        return Ok(Err(taken));
    }
    list_in_chain(tx, &run).await?;
    Ok(Ok(run))
}

/// A chain's view ([`ChainView`](crate::ChainView)) around its runs.
pub(super) async fn view(
    tx: &mut Transaction<'static, Any>,
    chain_id: &str,
    runs: Vec<Run>,
) -> Result<crate::ChainView> {
    let run_jobs: Vec<&str> = super::distinct(runs.iter().map(|r| r.job_id.as_str()));
    let mut edges = Vec::new();
    let sql = format!(
        "SELECT parent_job_id, child_job_id, fire_on, created_at_ms FROM job_children WHERE parent_job_id IN ({IDS}) \
         ORDER BY parent_job_id, child_job_id"
    );
    for r in fetch_in(tx, &sql, &run_jobs).await? {
        edges.push(crate::ChainEdge {
            parent_job_id: col(&r, "parent_job_id")?,
            child_job_id: col(&r, "child_job_id")?,
            on: parse_col(&r, "fire_on")?,
            created_at_ms: col(&r, "created_at_ms")?,
        });
    }
    let mut job_ids: Vec<&str> = run_jobs.clone();
    job_ids.extend(edges.iter().map(|e| e.child_job_id.as_str()));
    let job_ids = super::distinct(job_ids.into_iter());
    let sql = format!(
        "SELECT j.id, j.name, j.state, j.wait_for, (SELECT COUNT(*) FROM job_children p WHERE p.child_job_id = j.id) AS parents \
         FROM jobs j WHERE j.id IN ({IDS}) ORDER BY j.id"
    );
    let mut jobs = Vec::new();
    for r in fetch_in(tx, &sql, &job_ids).await? {
        jobs.push(crate::ChainJob {
            id: col(&r, "id")?,
            name: col(&r, "name")?,
            state: parse_col(&r, "state")?,
            wait: parse_col(&r, "wait_for")?,
            parents: col(&r, "parents")?,
        });
    }
    let mut joins = Vec::new();
    for r in
        sqlx::query("SELECT child_job_id, arrivals, run_id FROM chain_joins WHERE chain_id = ? ORDER BY child_job_id")
            .bind(chain_id)
            .fetch_all(&mut **tx)
            .await?
    {
        let arrivals: Arrivals = serde_json::from_str(&col::<String>(&r, "arrivals")?)
            .map_err(|e| StoreError::Corrupt(format!("chain_joins.arrivals: {e}")))?;
        joins.push(crate::ChainJoin {
            child_job_id: col(&r, "child_job_id")?,
            arrivals: arrivals
                .into_iter()
                .map(|(p, a)| crate::ChainArrival {
                    parent_job_id: p,
                    run_id: a.run_id,
                    holds: a.holds,
                    reason: a.reason,
                })
                .collect(),
            run_id: col(&r, "run_id")?,
        });
    }
    Ok(crate::ChainView { runs, jobs, edges, joins })
}
