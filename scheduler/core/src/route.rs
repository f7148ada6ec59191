//! Routing: given an app's executors and a job's [`Route`], decide which
//! executor(s) an attempt goes to, in what order, and why the others were
//! passed over (the dispatch trail, XXL-JOB's "调度备注").
//!
//! Eligibility comes first: an executor is eligible when it is `online` and
//! serves the job's handler (`handlers == None`, as for an app's static
//! endpoints, serves every handler). A script job's handler is
//! [`script_handler`]`(runtime)`, served only by executors that run that runtime
//! (a `sundial runner` registered with `runtimes`, or a node's built-in runner),
//! never by a static endpoint. Ineligible candidates go to the trail as `offline` or
//! `lacks_handler`. Eligible ones are sorted by `(registered_at_ms, id)` so
//! that `first`, `last`, `round_robin` and the tie-breaks of the other routes
//! are stable and the same on every node.
//!
//! The trail lists every candidate once, in that sorted order: the ineligible
//! ones first, then the eligible ones with the route's verdict (`chosen`,
//! `not_chosen`, `busy`). The one exception is the busyover fallback, which
//! lists every eligible executor as `busy` and then appends the fallback
//! targets as `chosen`. The dispatcher appends its own entries afterwards.
//!
//! [`RouteState`] is the per-node memory the stateful routes need (round-robin
//! counters, least-recently / least-frequently used bookkeeping, and a cache of
//! consistent-hash rings). It is bounded (see [`MAX_TRACKED_KEYS`] and
//! [`MAX_EXECUTORS_PER_KEY`]) and may be lost on restart: nodes do not share
//! it, so round robin, LRU and LFU balance per node, not cluster-wide.
//! Consistent hashing needs no memory and gives the same answer on every node.

use std::collections::HashMap;

use rand::Rng as _;
use sha2::{Digest, Sha256};

use crate::types::Route;

/// The outcomes the router writes into a [`TrailEntry`].
pub mod outcome {
    /// A target of the plan (for failover and sharding, every target).
    pub const CHOSEN: &str = "chosen";
    /// No heartbeat within the liveness window.
    pub const OFFLINE: &str = "offline";
    /// Online, but did not register the job's handler.
    pub const LACKS_HANDLER: &str = "lacks_handler";
    /// Eligible, but running something by its latest heartbeat (busyover).
    pub const BUSY: &str = "busy";
    /// Eligible, but the route picked another.
    pub const NOT_CHOSEN: &str = "not_chosen";
}

/// Virtual nodes per executor on the consistent-hash ring.
pub const VIRTUAL_NODES: u32 = 100;

/// An executor without a heartbeat for this long is offline (the brief: 10 s).
pub const EXECUTOR_OFFLINE_MS: i64 = 10_000;
/// At most this many job keys are remembered (round-robin counters and usage,
/// each); past it an arbitrary key is forgotten, which only costs that job its
/// balancing history.
pub const MAX_TRACKED_KEYS: usize = 100_000;
/// At most this many executors' usage is remembered per job key; past it the
/// one used longest ago (most likely a departed executor) is forgotten.
pub const MAX_EXECUTORS_PER_KEY: usize = 1_024;
/// At most this many distinct executor sets keep a cached hash ring.
const MAX_CACHED_RINGS: usize = 64;
/// The prefix of a script job's routing handler ([`script_handler`]).
pub const SCRIPT_HANDLER_PREFIX: &str = "sundial:script:";

/// The handler a script job of `runtime` is routed by: an executor serves it only when it
/// lists it explicitly (a runner lists one per runtime it runs). The `:` keeps it apart
/// from every handler name an executor can register.
pub fn script_handler(runtime: &str) -> String {
    format!("{SCRIPT_HANDLER_PREFIX}{runtime}")
}

/// An executor as the router sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct Candidate {
    /// Executor id, or `static:<url>` for an app's static endpoint.
    pub id: String,
    /// URL deliveries go to.
    pub address: String,
    /// Heartbeat within 10 s (static endpoints: always true).
    pub online: bool,
    /// `None` serves every handler (static endpoints).
    pub handlers: Option<Vec<String>>,
    /// Runs in progress by its latest heartbeat.
    pub running: i64,
    /// Stable ordering key (then id).
    pub registered_at_ms: i64,
}

impl Candidate {
    /// Does this candidate serve `handler` (`None`: any)? A static endpoint serves every
    /// handler but a script job's.
    pub fn serves(&self, handler: Option<&str>) -> bool {
        match (handler, &self.handlers) {
            (None, _) => true,
            (Some(h), None) => !h.starts_with(SCRIPT_HANDLER_PREFIX),
            (Some(h), Some(hs)) => hs.iter().any(|x| x == h),
        }
    }
}

/// One line of the dispatch trail.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct TrailEntry {
    pub executor_id: String,
    pub address: String,
    /// One of [`outcome`], or an entry the dispatcher appends later.
    pub outcome: String,
}

impl TrailEntry {
    pub fn new(candidate: &Candidate, outcome: &str) -> Self {
        TrailEntry {
            executor_id: candidate.id.clone(),
            address: candidate.address.clone(),
            outcome: outcome.to_owned(),
        }
    }
}

/// Where an attempt goes.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    /// Executors to try, in order. One element for every route except:
    /// failover (all eligible, in order; the dispatcher tries the next when one
    /// refuses), busyover when every executor is busy (all eligible, fewest
    /// running first), and sharding (every eligible executor, one shard each,
    /// shard index = position).
    pub targets: Vec<Candidate>,
    /// `Some(targets.len())` for sharding only.
    pub shard_total: Option<i64>,
    /// Every candidate passed over and why; the chosen ones marked `chosen`.
    pub trail: Vec<TrailEntry>,
}

/// No candidate was eligible.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("no online executor serves handler `{handler}` ({passed_over} passed over)")]
pub struct NoExecutor {
    /// The job's handler (for a script job, [`script_handler`]).
    pub handler: String,
    /// How many candidates there were (all of them were passed over).
    pub passed_over: usize,
    pub trail: Vec<TrailEntry>,
}

#[derive(Debug, Clone, Copy)]
struct Usage {
    last_ms: i64,
    count: u64,
}

/// A consistent-hash ring over one set of executor ids.
#[derive(Debug)]
struct Ring {
    /// The executor ids, sorted.
    ids: Vec<String>,
    /// `(point, index into ids)`, sorted.
    points: Vec<(u64, u32)>,
}

impl Ring {
    fn build(ids: Vec<String>) -> Ring {
        let mut points = Vec::with_capacity(ids.len() * VIRTUAL_NODES as usize);
        for (i, id) in ids.iter().enumerate() {
            for v in 0..VIRTUAL_NODES {
                points.push((stable_hash(format!("{id}#{v}").as_bytes()), i as u32));
            }
        }
        points.sort_unstable();
        Ring { ids, points }
    }

    /// The executor id owning `key`: the first point clockwise from its hash.
    fn owner(&self, key: &str) -> &str {
        let h = stable_hash(key.as_bytes());
        let pos = self.points.partition_point(|&(p, _)| p < h);
        let (_, idx) = self.points[if pos == self.points.len() { 0 } else { pos }];
        &self.ids[idx as usize]
    }
}

/// The first 8 bytes of SHA-256, big-endian: the same on every node, every
/// release and every restart (unlike `std`'s randomly seeded hasher).
fn stable_hash(bytes: &[u8]) -> u64 {
    let d = Sha256::digest(bytes);
    let mut b = [0u8; 8];
    b.copy_from_slice(&d[..8]);
    u64::from_be_bytes(b)
}

/// Makes room for one more key, forgetting arbitrary ones.
fn make_room<V>(map: &mut HashMap<String, V>, max: usize) {
    while map.len() >= max {
        match map.keys().next().cloned() {
            Some(k) => {
                map.remove(&k);
            }
            None => break,
        }
    }
}

/// In-memory per-node routing memory (round-robin counters, LRU/LFU usage,
/// cached hash rings). Lives in the dispatcher; losing it on restart is fine.
/// Bounded: at most [`MAX_TRACKED_KEYS`] job keys per kind of memory.
#[derive(Debug)]
pub struct RouteState {
    counters: HashMap<String, u64>,
    usage: HashMap<String, HashMap<String, Usage>>,
    rings: HashMap<Vec<String>, Ring>,
    max_keys: usize,
}

impl Default for RouteState {
    fn default() -> Self {
        Self::with_max_keys(MAX_TRACKED_KEYS)
    }
}

impl RouteState {
    pub fn new() -> Self {
        Self::default()
    }

    /// A state remembering at most `max_keys` (at least 1) job keys per kind
    /// of memory.
    pub fn with_max_keys(max_keys: usize) -> Self {
        RouteState { counters: HashMap::new(), usage: HashMap::new(), rings: HashMap::new(), max_keys: max_keys.max(1) }
    }

    /// Plans one attempt. `key` is the job id: round robin, LRU and LFU memory
    /// is per job, and consistent hashing hashes it (so a job sticks to one
    /// executor while the set is stable). Planning advances the round-robin
    /// counter; LRU/LFU learn only through [`RouteState::record_use`].
    pub fn plan(
        &mut self,
        route: Route,
        handler: Option<&str>,
        key: &str,
        candidates: &[Candidate],
    ) -> Result<Plan, NoExecutor> {
        let mut sorted: Vec<&Candidate> = candidates.iter().collect();
        sorted.sort_by(|a, b| (a.registered_at_ms, &a.id).cmp(&(b.registered_at_ms, &b.id)));

        let mut trail = Vec::with_capacity(sorted.len() + 1);
        let mut eligible = Vec::with_capacity(sorted.len());
        for c in sorted {
            if !c.online {
                trail.push(TrailEntry::new(c, outcome::OFFLINE));
            } else if !c.serves(handler) {
                trail.push(TrailEntry::new(c, outcome::LACKS_HANDLER));
            } else {
                eligible.push(c);
            }
        }
        if eligible.is_empty() {
            return Err(NoExecutor { handler: handler.unwrap_or("*").to_owned(), passed_over: trail.len(), trail });
        }

        let n = eligible.len();
        let chosen = match route {
            Route::Random => rand::rng().random_range(0..n),
            Route::RoundRobin => (self.next_round_robin(key) % n as u64) as usize,
            Route::First => 0,
            Route::Last => n - 1,
            Route::ConsistentHash => self.ring_pick(key, &eligible),
            Route::LeastRecentlyUsed => {
                let usage = self.usage.get(key);
                let last = |c: &Candidate| usage.and_then(|u| u.get(&c.id)).map(|u| u.last_ms);
                // `None` (never used) sorts before any time; `min_by_key` keeps the first tie.
                (0..n).min_by_key(|&i| last(eligible[i])).unwrap_or(0)
            }
            Route::LeastFrequentlyUsed => {
                let usage = self.usage.get(key);
                let count = |c: &Candidate| usage.and_then(|u| u.get(&c.id)).map_or(0, |u| u.count);
                (0..n).min_by_key(|&i| count(eligible[i])).unwrap_or(0)
            }
            Route::Busyover => return Ok(busyover(trail, &eligible)),
            Route::Failover | Route::Sharding => {
                trail.extend(eligible.iter().map(|c| TrailEntry::new(c, outcome::CHOSEN)));
                return Ok(Plan {
                    targets: eligible.into_iter().cloned().collect(),
                    shard_total: (route == Route::Sharding).then_some(n as i64),
                    trail,
                });
            }
        };
        for (i, c) in eligible.iter().enumerate() {
            let o = if i == chosen { outcome::CHOSEN } else { outcome::NOT_CHOSEN };
            trail.push(TrailEntry::new(c, o));
        }
        Ok(Plan { targets: vec![eligible[chosen].clone()], shard_total: None, trail })
    }

    /// Tell LRU/LFU that `executor_id` got a delivery of job `key` at `now_ms`.
    pub fn record_use(&mut self, key: &str, executor_id: &str, now_ms: i64) {
        if !self.usage.contains_key(key) {
            make_room(&mut self.usage, self.max_keys);
            self.usage.insert(key.to_owned(), HashMap::new());
        }
        let Some(per) = self.usage.get_mut(key) else {
            return;
        };
        if !per.contains_key(executor_id) && per.len() >= MAX_EXECUTORS_PER_KEY {
            let oldest = per.iter().min_by_key(|(_, u)| (u.last_ms, u.count)).map(|(k, _)| k.clone());
            if let Some(k) = oldest {
                per.remove(&k);
            }
        }
        let u = per.entry(executor_id.to_owned()).or_insert(Usage { last_ms: i64::MIN, count: 0 });
        u.last_ms = u.last_ms.max(now_ms);
        u.count = u.count.saturating_add(1);
    }

    /// The key's counter, then advanced. A new key starts at a position derived
    /// from its hash, so jobs do not all begin on the first executor.
    fn next_round_robin(&mut self, key: &str) -> u64 {
        if !self.counters.contains_key(key) {
            make_room(&mut self.counters, self.max_keys);
            self.counters.insert(key.to_owned(), stable_hash(key.as_bytes()));
        }
        let Some(c) = self.counters.get_mut(key) else {
            return 0;
        };
        let v = *c;
        *c = c.wrapping_add(1);
        v
    }

    /// Index into `eligible` of the executor owning `key` on the ring built
    /// from the eligible ids (which depends only on that set).
    fn ring_pick(&mut self, key: &str, eligible: &[&Candidate]) -> usize {
        let mut ids: Vec<String> = eligible.iter().map(|c| c.id.clone()).collect();
        ids.sort();
        ids.dedup();
        if !self.rings.contains_key(&ids) {
            if self.rings.len() >= MAX_CACHED_RINGS {
                self.rings.clear();
            }
            self.rings.insert(ids.clone(), Ring::build(ids.clone()));
        }
        let owner = match self.rings.get(&ids) {
            Some(ring) => ring.owner(key),
            None => return 0,
        };
        eligible.iter().position(|c| c.id == owner).unwrap_or(0)
    }
}

/// The first idle executor; if all are busy, all of them, fewest running first.
fn busyover(mut trail: Vec<TrailEntry>, eligible: &[&Candidate]) -> Plan {
    if let Some(idle) = eligible.iter().position(|c| c.running <= 0) {
        for (i, c) in eligible.iter().enumerate() {
            let o = if i == idle {
                outcome::CHOSEN
            } else if c.running > 0 {
                outcome::BUSY
            } else {
                outcome::NOT_CHOSEN
            };
            trail.push(TrailEntry::new(c, o));
        }
        return Plan { targets: vec![eligible[idle].clone()], shard_total: None, trail };
    }
    // Everyone is busy: say so, then fall back to the least busy (stable sort
    // keeps registration order among equals).
    trail.extend(eligible.iter().map(|c| TrailEntry::new(c, outcome::BUSY)));
    let mut targets: Vec<&Candidate> = eligible.to_vec();
    targets.sort_by_key(|c| c.running);
    trail.extend(targets.iter().map(|c| TrailEntry::new(c, outcome::CHOSEN)));
    Plan { targets: targets.into_iter().cloned().collect(), shard_total: None, trail }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn exec(id: &str, at: i64, handlers: &[&str]) -> Candidate {
        Candidate {
            id: id.into(),
            address: format!("http://{id}.test/run"),
            online: true,
            handlers: Some(handlers.iter().map(|h| h.to_string()).collect()),
            running: 0,
            registered_at_ms: at,
        }
    }

    fn static_endpoint(url: &str) -> Candidate {
        Candidate {
            id: format!("static:{url}"),
            address: url.into(),
            online: true,
            handlers: None,
            running: 0,
            registered_at_ms: 0,
        }
    }

    fn trail(plan: &Plan) -> Vec<(&str, &str)> {
        plan.trail.iter().map(|e| (e.executor_id.as_str(), e.outcome.as_str())).collect()
    }

    fn ids(targets: &[Candidate]) -> Vec<&str> {
        targets.iter().map(|c| c.id.as_str()).collect()
    }

    fn three() -> Vec<Candidate> {
        // Deliberately not in registration order.
        vec![exec("c", 30, &["h"]), exec("a", 10, &["h"]), exec("b", 20, &["h"])]
    }

    fn pick(st: &mut RouteState, route: Route, key: &str, cs: &[Candidate]) -> String {
        let p = st.plan(route, Some("h"), key, cs).unwrap();
        assert_eq!(p.targets.len(), 1);
        p.targets[0].id.clone()
    }

    #[test]
    fn eligibility_filters_offline_and_missing_handler() {
        let mut off = exec("off", 1, &["h"]);
        off.online = false;
        let other = exec("other", 2, &["x"]);
        let ok = exec("ok", 3, &["x", "h"]);
        let mut st = RouteState::new();
        let p = st.plan(Route::First, Some("h"), "j", &[ok, other, off]).unwrap();
        assert_eq!(ids(&p.targets), ["ok"]);
        assert_eq!(p.shard_total, None);
        assert_eq!(trail(&p), [("off", "offline"), ("other", "lacks_handler"), ("ok", "chosen")]);
        assert_eq!(p.trail[2].address, "http://ok.test/run");
    }

    #[test]
    fn offline_wins_over_lacks_handler() {
        let mut c = exec("c", 1, &["x"]);
        c.online = false;
        let e = RouteState::new().plan(Route::First, Some("h"), "j", &[c]).unwrap_err();
        assert_eq!(e.trail[0].outcome, "offline");
    }

    #[test]
    fn static_endpoint_serves_every_handler() {
        let s = static_endpoint("https://hooks.example.com/x");
        let p = RouteState::new().plan(Route::First, Some("anything"), "j", &[exec("e", -1, &["h"]), s]).unwrap();
        assert_eq!(ids(&p.targets), ["static:https://hooks.example.com/x"]);
        assert_eq!(trail(&p), [("e", "lacks_handler"), ("static:https://hooks.example.com/x", "chosen")]);
    }

    #[test]
    fn a_script_job_runs_only_where_its_runtime_is_served() {
        let wasm = script_handler("wasm");
        let cs = [
            exec("a", 1, &["x"]),
            exec("r", 2, &[wasm.as_str()]),
            exec("p", 3, &["sundial:script:python"]),
            static_endpoint("https://hooks.example.com/x"),
        ];
        let p = RouteState::new().plan(Route::Failover, Some(&wasm), "j", &cs).unwrap();
        assert_eq!(
            ids(&p.targets),
            ["r"],
            "neither a handler executor, another runtime's runner nor a static endpoint"
        );
        assert!(!static_endpoint("https://x/").serves(Some("sundial:script:bash")));
        assert!(static_endpoint("https://x/").serves(Some("any-handler")));
    }

    #[test]
    fn eligible_sorted_by_registration_then_id() {
        let cs = [exec("z", 5, &["h"]), exec("b", 1, &["h"]), exec("a", 5, &["h"])];
        let p = RouteState::new().plan(Route::Failover, Some("h"), "j", &cs).unwrap();
        assert_eq!(ids(&p.targets), ["b", "a", "z"]);
    }

    #[test]
    fn first_and_last() {
        let mut st = RouteState::new();
        let p = st.plan(Route::First, Some("h"), "j", &three()).unwrap();
        assert_eq!(ids(&p.targets), ["a"]);
        assert_eq!(trail(&p), [("a", "chosen"), ("b", "not_chosen"), ("c", "not_chosen")]);
        let p = st.plan(Route::Last, Some("h"), "j", &three()).unwrap();
        assert_eq!(ids(&p.targets), ["c"]);
        assert_eq!(trail(&p), [("a", "not_chosen"), ("b", "not_chosen"), ("c", "chosen")]);
    }

    #[test]
    fn random_picks_only_eligible_and_covers_all() {
        let mut cs = three();
        cs.push(exec("x", 0, &["other"]));
        let mut st = RouteState::new();
        let mut seen = std::collections::BTreeSet::new();
        for _ in 0..300 {
            let p = st.plan(Route::Random, Some("h"), "j", &cs).unwrap();
            assert_eq!(p.targets.len(), 1);
            assert_eq!(p.trail.len(), 4);
            assert_eq!(p.trail[0].outcome, "lacks_handler");
            let chosen: Vec<_> = p.trail.iter().filter(|e| e.outcome == "chosen").collect();
            assert_eq!(chosen.len(), 1);
            assert_eq!(chosen[0].executor_id, p.targets[0].id);
            seen.insert(p.targets[0].id.clone());
        }
        assert_eq!(seen.into_iter().collect::<Vec<_>>(), ["a", "b", "c"]);
    }

    #[test]
    fn round_robin_cycles_and_is_per_key() {
        let cs = three();
        let order = ["a", "b", "c"];
        let mut st = RouteState::new();
        let first = pick(&mut st, Route::RoundRobin, "job-1", &cs);
        let mut i = order.iter().position(|x| *x == first).unwrap();
        for _ in 0..7 {
            i = (i + 1) % 3;
            // Interleave another job: it must not advance job-1's counter.
            pick(&mut st, Route::RoundRobin, "job-2", &cs);
            assert_eq!(pick(&mut st, Route::RoundRobin, "job-1", &cs), order[i]);
        }
        // job-2 cycles on its own, through all three.
        let seen: std::collections::BTreeSet<_> =
            (0..3).map(|_| pick(&mut st, Route::RoundRobin, "job-2", &cs)).collect();
        assert_eq!(seen.len(), 3);
        // A fresh state starts a key at the same hash-derived position.
        assert_eq!(pick(&mut RouteState::new(), Route::RoundRobin, "job-1", &cs), first);
    }

    #[test]
    fn round_robin_trail() {
        let p = RouteState::new().plan(Route::RoundRobin, Some("h"), "k", &three()).unwrap();
        let t = trail(&p);
        assert_eq!(t.len(), 3);
        assert_eq!(t.iter().filter(|(_, o)| *o == "chosen").count(), 1);
        assert!(t.contains(&(p.targets[0].id.as_str(), "chosen")));
    }

    #[test]
    fn stable_hash_is_pinned() {
        // SHA-256("abc") begins ba7816bf8f01cfea; any change here moves every job.
        assert_eq!(stable_hash(b"abc"), 0xba7816bf8f01cfea);
    }

    #[test]
    fn consistent_hash_is_the_same_on_every_node() {
        let cs: Vec<_> = (0..5).map(|i| exec(&format!("e{i}"), i, &["h"])).collect();
        let mut reversed = cs.clone();
        reversed.reverse();
        let mut node_a = RouteState::new();
        let mut node_b = RouteState::new();
        for k in 0..200 {
            let key = format!("job-{k}");
            let a = pick(&mut node_a, Route::ConsistentHash, &key, &cs);
            assert_eq!(a, pick(&mut node_b, Route::ConsistentHash, &key, &reversed));
            // Sticky: the same job asked again (cached ring) goes to the same place.
            assert_eq!(a, pick(&mut node_a, Route::ConsistentHash, &key, &cs));
        }
    }

    #[test]
    fn consistent_hash_moves_only_keys_of_removed_executor() {
        let cs: Vec<_> = (0..5).map(|i| exec(&format!("e{i}"), i, &["h"])).collect();
        let mut st = RouteState::new();
        let keys: Vec<String> = (0..1000).map(|k| format!("job-{k}")).collect();
        let before: Vec<String> = keys.iter().map(|k| pick(&mut st, Route::ConsistentHash, k, &cs)).collect();
        // Roughly balanced: 200 each expected.
        for i in 0..5 {
            let n = before.iter().filter(|e| **e == format!("e{i}")).count();
            assert!((100..=300).contains(&n), "e{i} got {n}");
        }
        // e2 goes offline: it stays a candidate but is no longer eligible.
        let mut after_cs = cs.clone();
        after_cs[2].online = false;
        let mut moved = 0;
        for (k, b) in keys.iter().zip(&before) {
            let a = pick(&mut st, Route::ConsistentHash, k, &after_cs);
            if b == "e2" {
                assert_ne!(a, "e2");
                moved += 1;
            } else {
                assert_eq!(&a, b, "{k} moved though its executor stayed");
            }
        }
        assert!(moved > 0);
    }

    #[test]
    fn least_recently_used() {
        let cs = three();
        let mut st = RouteState::new();
        // Never used: ties broken by order.
        assert_eq!(pick(&mut st, Route::LeastRecentlyUsed, "j", &cs), "a");
        st.record_use("j", "a", 100);
        assert_eq!(pick(&mut st, Route::LeastRecentlyUsed, "j", &cs), "b");
        st.record_use("j", "b", 200);
        assert_eq!(pick(&mut st, Route::LeastRecentlyUsed, "j", &cs), "c");
        st.record_use("j", "c", 300);
        assert_eq!(pick(&mut st, Route::LeastRecentlyUsed, "j", &cs), "a");
        st.record_use("j", "a", 400);
        let p = st.plan(Route::LeastRecentlyUsed, Some("h"), "j", &cs).unwrap();
        assert_eq!(trail(&p), [("a", "not_chosen"), ("b", "chosen"), ("c", "not_chosen")]);
        // Memory is per job.
        assert_eq!(pick(&mut st, Route::LeastRecentlyUsed, "other", &cs), "a");
    }

    #[test]
    fn least_frequently_used() {
        let cs = three();
        let mut st = RouteState::new();
        assert_eq!(pick(&mut st, Route::LeastFrequentlyUsed, "j", &cs), "a");
        st.record_use("j", "a", 1);
        st.record_use("j", "a", 2);
        st.record_use("j", "b", 3);
        assert_eq!(pick(&mut st, Route::LeastFrequentlyUsed, "j", &cs), "c");
        st.record_use("j", "c", 4);
        // b and c have one use each: tie by order.
        assert_eq!(pick(&mut st, Route::LeastFrequentlyUsed, "j", &cs), "b");
        st.record_use("j", "b", 5);
        st.record_use("j", "c", 6);
        // All at two uses: back to a.
        assert_eq!(pick(&mut st, Route::LeastFrequentlyUsed, "j", &cs), "a");
        assert_eq!(pick(&mut st, Route::LeastFrequentlyUsed, "other", &cs), "a");
    }

    #[test]
    fn usage_memory_is_bounded() {
        let mut st = RouteState::with_max_keys(3);
        let cs = three();
        for k in 0..10 {
            let key = format!("job-{k}");
            st.record_use(&key, "a", k);
            pick(&mut st, Route::RoundRobin, &key, &cs);
        }
        assert!(st.usage.len() <= 3 && st.counters.len() <= 3);
        // The latest key is always remembered.
        assert_eq!(st.usage["job-9"]["a"].count, 1);

        let mut st = RouteState::new();
        for i in 0..MAX_EXECUTORS_PER_KEY as i64 + 5 {
            st.record_use("j", &format!("e{i}"), i);
        }
        let per = &st.usage["j"];
        assert_eq!(per.len(), MAX_EXECUTORS_PER_KEY);
        assert!(!per.contains_key("e0") && per.contains_key("e1028"));
    }

    #[test]
    fn busyover_picks_first_idle() {
        let mut cs = three();
        cs[1].running = 2; // a
        cs[0].running = 1; // c
        let p = RouteState::new().plan(Route::Busyover, Some("h"), "j", &cs).unwrap();
        assert_eq!(ids(&p.targets), ["b"]);
        assert_eq!(trail(&p), [("a", "busy"), ("b", "chosen"), ("c", "busy")]);

        let p = RouteState::new().plan(Route::Busyover, Some("h"), "j", &three()).unwrap();
        assert_eq!(trail(&p), [("a", "chosen"), ("b", "not_chosen"), ("c", "not_chosen")]);
    }

    #[test]
    fn busyover_falls_back_to_least_busy() {
        let mut cs = three();
        cs[1].running = 3; // a
        cs[2].running = 1; // b
        cs[0].running = 1; // c
        let mut off = exec("d", 40, &["h"]);
        off.online = false;
        cs.push(off);
        let p = RouteState::new().plan(Route::Busyover, Some("h"), "j", &cs).unwrap();
        assert_eq!(ids(&p.targets), ["b", "c", "a"]);
        assert_eq!(p.shard_total, None);
        assert_eq!(
            trail(&p),
            [
                ("d", "offline"),
                ("a", "busy"),
                ("b", "busy"),
                ("c", "busy"),
                ("b", "chosen"),
                ("c", "chosen"),
                ("a", "chosen"),
            ]
        );
    }

    #[test]
    fn failover_lists_all_eligible_in_order() {
        let mut cs = three();
        cs.push(exec("x", 0, &["other"]));
        let p = RouteState::new().plan(Route::Failover, Some("h"), "j", &cs).unwrap();
        assert_eq!(ids(&p.targets), ["a", "b", "c"]);
        assert_eq!(p.shard_total, None);
        assert_eq!(trail(&p), [("x", "lacks_handler"), ("a", "chosen"), ("b", "chosen"), ("c", "chosen")]);
    }

    #[test]
    fn sharding_targets_every_eligible() {
        let mut cs = three();
        cs[0].online = false; // c
        cs.push(static_endpoint("https://s.example.com"));
        let p = RouteState::new().plan(Route::Sharding, Some("h"), "j", &cs).unwrap();
        assert_eq!(ids(&p.targets), ["static:https://s.example.com", "a", "b"]);
        assert_eq!(p.shard_total, Some(3));
        assert_eq!(p.trail.len(), 4);
        assert_eq!(trail(&p)[0], ("c", "offline"));

        let p = RouteState::new().plan(Route::Sharding, Some("h"), "j", &three()[..1]).unwrap();
        assert_eq!(p.shard_total, Some(1));
    }

    #[test]
    fn no_executor_carries_the_trail() {
        let mut off = exec("off", 1, &["h"]);
        off.online = false;
        let cs = [off, exec("other", 2, &["x"])];
        for route in Route::ALL {
            let e = RouteState::new().plan(*route, Some("h"), "j", &cs).unwrap_err();
            assert_eq!(e.handler, "h");
            assert_eq!(e.passed_over, 2);
            assert_eq!(
                e.trail.iter().map(|t| (t.executor_id.as_str(), t.outcome.as_str())).collect::<Vec<_>>(),
                [("off", "offline"), ("other", "lacks_handler")]
            );
            assert_eq!(e.to_string(), "no online executor serves handler `h` (2 passed over)");
        }
        let e = RouteState::new().plan(Route::Random, None, "j", &[]).unwrap_err();
        assert_eq!((e.handler.as_str(), e.passed_over), ("*", 0));
        assert!(e.trail.is_empty());
    }

    #[test]
    fn trail_entry_serializes() {
        let e = TrailEntry::new(&exec("a", 1, &[]), outcome::BUSY);
        let v = serde_json::to_value(&e).unwrap();
        assert_eq!(v, serde_json::json!({"executor_id": "a", "address": "http://a.test/run", "outcome": "busy"}));
        assert_eq!(serde_json::from_value::<TrailEntry>(v).unwrap(), e);
    }
}
