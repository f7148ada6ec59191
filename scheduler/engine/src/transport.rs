//! Every call Sundial makes to an executor, and nothing else: the signed HTTP client
//! ([`DeliveryClient`]) and the wire shapes of a delivery (its body, the candidates it may
//! go to, what an answer means). The best-effort cancels are in `cancel.rs`.
//!
//! The bottom of the engine's layers (see the crate doc): `transport` ← `cancel` ←
//! `outcome` ← `work` ← `shard` ← `delivery`, each using only the modules to its left.
//! `transport` knows nothing of the failure policy or the dispatch transaction.

use std::time::Duration;

use serde_json::Value;
use sundial_core::clock::SharedClock;
use sundial_core::outbound::{OutboundPolicy, Refused};
use sundial_core::protocol;
use sundial_core::route::{Candidate, script_handler};
use sundial_core::run_state::FailReason;
use sundial_core::signing::{self, SigningKey};
use sundial_core::time::rfc3339_utc;
use sundial_core::types::{ExecutorState, TriggerKind};
use sundial_store::{App, Job, Run};

/// What an executor (or the engine on its behalf) says about an attempt.
#[derive(Debug, Clone, PartialEq)]
pub struct ExecutorResult {
    pub succeeded: bool,
    pub reason: FailReason,
    pub output: Option<serde_json::Value>,
    pub message: Option<String>,
    /// False when the executor says the failure cannot succeed on a retry (the answer's
    /// `"retry": false`): the failure policy then ends the run at once.
    pub retry: bool,
}

impl ExecutorResult {
    /// Not sent: the app's or tenant's share of the delivery slots stayed in use
    /// ([`crate::bulkhead`]); the failure policy decides (a retry may find room).
    pub(crate) fn saturated(why: &crate::bulkhead::Saturated) -> Self {
        ExecutorResult {
            retry: true,
            succeeded: false,
            reason: FailReason::Saturated,
            output: None,
            message: Some(why.to_string()),
        }
    }
}

/// The HTTP client for deliveries and cancels, with the clock that stamps signatures and
/// the operator's outbound address policy ([`OutboundPolicy`]): names are resolved by
/// [`PolicyResolver`], which drops refused addresses at connect time (so a name that
/// resolves elsewhere later, DNS rebinding, is still judged), IP literals are judged before
/// the request, redirects are never followed, and no system proxy is used (a proxy would
/// connect on Sundial's behalf, out of the policy's sight).
#[derive(Debug, Clone)]
pub struct DeliveryClient {
    http: reqwest::Client,
    clock: SharedClock,
    policy: OutboundPolicy,
    /// Sent as `sundial-node` (which node dispatched: for executors' logs and for telling
    /// a redelivery by another node from a repeat).
    node_id: Option<String>,
}

/// Why an outbound call was not made or did not complete.
#[derive(Debug, thiserror::Error)]
pub enum CallError {
    /// The URL's address is refused by the outbound policy (judged before sending).
    #[error("{0}")]
    Refused(#[from] Refused),
    #[error(transparent)]
    Http(#[from] reqwest::Error),
}

/// Every name an executor URL holds resolves through the policy: refused addresses are
/// dropped, and a name left with none fails the connection with [`AddressRefused`].
#[derive(Debug, Clone, Copy)]
pub struct PolicyResolver {
    pub policy: OutboundPolicy,
}

/// A name whose every address the outbound policy refused.
#[derive(Debug, thiserror::Error)]
#[error("`{host}` resolves to {refused}")]
pub struct AddressRefused {
    pub host: String,
    pub refused: Refused,
}

impl reqwest::dns::Resolve for PolicyResolver {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let policy = self.policy;
        let host = name.as_str().to_string();
        Box::pin(async move {
            let found: Vec<std::net::SocketAddr> = tokio::net::lookup_host((host.as_str(), 0)).await?.collect();
            let mut refused = None;
            let allowed: Vec<std::net::SocketAddr> = found
                .into_iter()
                .filter(|a| match policy.check(a.ip()) {
                    Ok(()) => true,
                    Err(r) => {
                        refused.get_or_insert(r);
                        false
                    }
                })
                .collect();
            match (allowed.is_empty(), refused) {
                (true, Some(refused)) => {
                    Err(Box::new(AddressRefused { host, refused }) as Box<dyn std::error::Error + Send + Sync>)
                }
                _ => Ok(Box::new(allowed.into_iter()) as reqwest::dns::Addrs),
            }
        })
    }
}

impl DeliveryClient {
    /// A client with the default outbound policy (loopback allowed, private ranges not).
    pub fn new(clock: SharedClock) -> Self {
        Self::with_policy(clock, OutboundPolicy::default())
    }

    pub fn with_policy(clock: SharedClock, policy: OutboundPolicy) -> Self {
        let http = reqwest::Client::builder()
            .connect_timeout(CONNECT_TIMEOUT)
            .pool_idle_timeout(Duration::from_secs(60))
            .tcp_nodelay(true)
            .redirect(reqwest::redirect::Policy::none())
            .no_proxy()
            .dns_resolver(PolicyResolver { policy })
            .user_agent(concat!("sundial/", env!("CARGO_PKG_VERSION")))
            .build()
            .expect("HTTP client builds");
        Self { http, clock, policy, node_id: None }
    }

    /// Name the sending node in every call (`sundial-node` header).
    pub fn for_node(mut self, node_id: &str) -> Self {
        self.node_id = Some(node_id.to_string());
        self
    }

    /// POST a JSON body signed with the app's valid secrets, if the policy allows the URL.
    pub async fn post_signed(
        &self,
        app: &App,
        url: &str,
        msg_id: &str,
        body: &[u8],
        extra: &[(&str, String)],
        timeout: Duration,
    ) -> Result<reqwest::Response, CallError> {
        self.policy.check_url(url)?;
        let now = self.clock.now_ms();
        let ts = now.div_euclid(1000);
        let keys: Vec<SigningKey> =
            app.valid_secrets(now).into_iter().filter_map(|s| SigningKey::parse(s).ok()).collect();
        let mut req = self
            .http
            .post(url)
            .timeout(timeout)
            .header("content-type", "application/json")
            .header(signing::HEADER_ID, msg_id)
            .header(signing::HEADER_TIMESTAMP, ts.to_string())
            .header(signing::HEADER_SIGNATURE, signing::signature_header(&keys, msg_id, ts, body))
            .header("sundial-app-id", &app.id);
        if let Some(node) = &self.node_id {
            req = req.header("sundial-node", node);
        }
        for (k, v) in extra {
            req = req.header(*k, v);
        }
        Ok(req.body(body.to_vec()).send().await?)
    }
}

/// What an executor's answer to a delivery means.
#[derive(Debug)]
pub(crate) enum Answer {
    /// `200` with a result.
    Done(ExecutorResult),
    /// `202`: the result comes by callback.
    Accepted,
    /// `503 {"code": "executor_offline"}`: mark it offline, try another.
    Offline,
    /// `410 {"code": "handler_retired"}`.
    Retired,
    /// Anything else: the attempt failed on this executor.
    Failed(FailReason, String),
}

/// Read an executor's answer to a delivery, at most `limit` bytes of its body (a larger
/// one fails the attempt `answer_too_large` without being read into memory):
/// - `202`: accepted, the result comes by callback (the body is not read);
/// - another `2xx`: an empty body is success with no output; otherwise the body must be a
///   JSON object `{"status"?: "succeeded" | "failed", "output"?: any, "message"?: string}`
///   (`status` defaults to `succeeded`), and anything else fails the attempt saying why;
/// - `503 {"code": "executor_offline"}`, `410 {"code": "handler_retired"}`: as documented;
/// - a redirect (`3xx`) is not followed, and fails the attempt, as does any other status.
pub(crate) async fn read_answer(resp: Result<reqwest::Response, CallError>, limit: usize, max_output: usize) -> Answer {
    let resp = match resp {
        Ok(r) => r,
        Err(CallError::Refused(r)) => return Answer::Failed(FailReason::AddressRefused, r.to_string()),
        Err(CallError::Http(e)) => return failed_exchange(&e),
    };
    let status = resp.status().as_u16();
    if status == 202 {
        return Answer::Accepted;
    }
    let body = match read_bounded(resp, limit).await {
        Ok(b) => b,
        Err(Bounded::TooLarge) => {
            return Answer::Failed(
                FailReason::AnswerTooLarge,
                format!("the executor's answer (HTTP {status}) is larger than max_answer_bytes = {limit}"),
            );
        }
        Err(Bounded::Http(e)) => return failed_exchange(&e),
    };
    let code = || serde_json::from_slice::<Value>(&body).ok().and_then(|v| v.get("code")?.as_str().map(String::from));
    match status {
        200..=299 => match parse_result(&body) {
            Ok(result) => match sundial_core::protocol::output_over(result.output.as_ref(), max_output) {
                None => Answer::Done(result),
                Some(size) => Answer::Failed(
                    FailReason::OutputTooLarge,
                    format!(
                        "the output is {size} bytes; at most max_output_bytes = {max_output} are kept and passed on"
                    ),
                ),
            },
            Err(why) => Answer::Failed(FailReason::Error, format!("the executor answered HTTP {status} with {why}")),
        },
        503 if code().as_deref() == Some("executor_offline") => Answer::Offline,
        410 if code().as_deref() == Some("handler_retired") => Answer::Retired,
        300..=399 => Answer::Failed(
            FailReason::Error,
            format!("executor answered HTTP {status} (a redirect: Sundial does not follow redirects)"),
        ),
        s => Answer::Failed(FailReason::Error, format!("executor answered HTTP {s}")),
    }
}

/// A `2xx` body read as a result: empty is success with no output.
fn parse_result(body: &[u8]) -> Result<ExecutorResult, String> {
    let Some(first) = body.iter().find(|b| !b.is_ascii_whitespace()) else {
        return Ok(ExecutorResult {
            retry: true,
            succeeded: true,
            reason: FailReason::Error,
            output: None,
            message: None,
        });
    };
    // One parse for an answer as the protocol has it (an object: serde would also read a
    // struct from an array); the errors are told apart only when that fails.
    let parsed = serde_json::from_slice::<protocol::Answer>(body);
    match parsed {
        Ok(a) if *first == b'{' => Ok(ExecutorResult {
            retry: a.retry != Some(false),
            succeeded: a.status != Some(protocol::AnswerStatus::Failed),
            reason: FailReason::Error,
            output: a.output,
            message: a.message,
        }),
        _ => Err(match serde_json::from_slice::<Value>(body) {
            Err(e) => format!("a body that is not JSON ({e})"),
            Ok(v) if !v.is_object() => {
                "a JSON body that is not an object (expected {\"status\", \"output\", \"message\"})".into()
            }
            Ok(_) => format!(
                "an answer that does not match the protocol: {}",
                parsed.err().map(|e| e.to_string()).unwrap_or_default()
            ),
        }),
    }
}

enum Bounded {
    TooLarge,
    Http(reqwest::Error),
}

/// The body, up to `limit` bytes: a declared or streamed length past it stops the read.
async fn read_bounded(mut resp: reqwest::Response, limit: usize) -> Result<Vec<u8>, Bounded> {
    if resp.content_length().is_some_and(|n| n > limit as u64) {
        return Err(Bounded::TooLarge);
    }
    let mut body = Vec::new();
    while let Some(chunk) = resp.chunk().await.map_err(Bounded::Http)? {
        if body.len() + chunk.len() > limit {
            return Err(Bounded::TooLarge);
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

/// The executor id of a node's built-in runner (`builtin:<node id>`).
pub(crate) fn builtin_id(node_id: &str) -> String {
    format!("builtin:{node_id}")
}

/// Is this candidate id a registered executor's (one with a row to mark offline)?
pub(crate) fn is_registered(id: &str) -> bool {
    !id.starts_with("static:") && !id.starts_with("builtin:")
}

/// Who may take an attempt of the app's jobs: its static endpoints, its registered
/// executors (a runner's runtimes as [`script_handler`]s) and, for script jobs, this node's
/// built-in runner.
pub(crate) fn candidates(
    app: &App,
    executors: &[sundial_store::Executor],
    now: i64,
    offline_ms: i64,
    builtin: Option<(&str, &crate::BuiltinRunner)>,
) -> Vec<Candidate> {
    let statics = app.endpoints.iter().map(|url| Candidate {
        id: format!("static:{url}"),
        address: url.clone(),
        online: true,
        handlers: None,
        running: 0,
        registered_at_ms: app.created_at_ms,
    });
    let registered = executors.iter().map(|e| Candidate {
        id: e.id.clone(),
        address: e.address.clone(),
        online: e.state == ExecutorState::Online && e.last_heartbeat_ms >= now - offline_ms,
        handlers: Some(e.handlers.iter().cloned().chain(e.runtimes.iter().map(|r| script_handler(r))).collect()),
        running: e.running,
        registered_at_ms: e.registered_at_ms,
    });
    let builtin = builtin.map(|(node_id, b)| Candidate {
        id: builtin_id(node_id),
        address: b.address.clone(),
        online: true,
        handlers: Some(b.runtimes.iter().map(|r| script_handler(r)).collect()),
        running: 0,
        registered_at_ms: i64::MAX,
    });
    statics.chain(registered).chain(builtin).collect()
}

/// The body of a delivery ([`protocol::Delivery`]).
pub fn delivery_body(run: &Run, job: &Job) -> protocol::Delivery {
    shard_delivery_body(run, job, run.attempt, 0, 1)
}

/// The body of a delivery of one shard attempt (`attempt` is the shard's).
pub(crate) fn shard_delivery_body(run: &Run, job: &Job, attempt: i64, index: i64, total: i64) -> protocol::Delivery {
    protocol::Delivery {
        run_id: run.id.clone(),
        job_id: job.id.clone(),
        job: job.name.clone(),
        handler: job.handler.clone(),
        params: run_params(run, job),
        attempt,
        scheduled_at: rfc3339_utc(run.scheduled_at_ms),
        trigger: run.trigger,
        shard: protocol::ShardRef { index, total },
        parent: run
            .parent_run_id
            .as_ref()
            .map(|p| protocol::ParentRef { run_id: p.clone(), output: run.parent_output.clone() }),
        parents: run.parents.as_ref().and_then(|p| serde_json::from_value(p.clone()).ok()),
        chain_params: if run.trigger == TriggerKind::Parent { run.params.clone() } else { None },
        script: None,
    }
}

/// A run's params: those it was triggered with, else its job's; for a run fired by a parent,
/// the job's own with the chain's (what its root was triggered with) merged over them.
fn run_params(run: &Run, job: &Job) -> serde_json::Value {
    match (&run.params, run.trigger) {
        (None, _) => job.params.clone(),
        (Some(chain), TriggerKind::Parent) => {
            let mut merged = job.params.clone();
            if let (Some(m), Some(c)) = (merged.as_object_mut(), chain.as_object()) {
                for (k, v) in c {
                    m.insert(k.clone(), v.clone());
                }
            }
            merged
        }
        (Some(given), _) => given.clone(),
    }
}

/// How a failed HTTP exchange with an executor ended, as far as the client can tell.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ExchangeFailure {
    /// No connection was set up (refused, unreachable, or the connect timeout): the
    /// executor did not receive the attempt.
    Connect { timed_out: bool },
    /// The connection timed out in the network (`ETIMEDOUT` from the kernel) before any
    /// answer. Seen when an executor's listen backlog overflows under a burst: the client's
    /// kernel completes the handshake, the server's never hands the connection to the
    /// executor, and about 31 s later (the SYN-ACK retries) the connection dies. The request
    /// may or may not have reached the executor.
    NetworkTimeout,
    /// The job's timeout passed after the request was sent, with no answer.
    NoAnswer,
    /// The connection broke after the request was sent (reset, closed early).
    Broken,
    /// Every address the executor's name resolved to is refused by the outbound policy.
    AddressRefused,
}

impl ExchangeFailure {
    /// Classify a reqwest error by where in the exchange it happened.
    pub(crate) fn of(e: &reqwest::Error) -> Self {
        Self::classify(e.is_connect(), e.is_timeout(), e)
    }

    fn classify(is_connect: bool, is_timeout: bool, e: &(dyn std::error::Error + 'static)) -> Self {
        if chain(e).any(|c| c.downcast_ref::<AddressRefused>().is_some()) {
            return ExchangeFailure::AddressRefused;
        }
        let kernel_timeout = chain(e)
            .any(|c| c.downcast_ref::<std::io::Error>().is_some_and(|io| io.kind() == std::io::ErrorKind::TimedOut));
        match (is_connect, is_timeout) {
            (true, t) => ExchangeFailure::Connect { timed_out: t },
            (false, true) if kernel_timeout => ExchangeFailure::NetworkTimeout,
            (false, true) => ExchangeFailure::NoAnswer,
            (false, false) => ExchangeFailure::Broken,
        }
    }

    /// The attempt's failure reason: only a job timeout is `timeout`.
    pub(crate) fn reason(self) -> FailReason {
        match self {
            ExchangeFailure::NoAnswer => FailReason::Timeout,
            ExchangeFailure::AddressRefused => FailReason::AddressRefused,
            _ => FailReason::Error,
        }
    }

    /// The attempt's message: what happened, and whether the executor can have received it.
    pub(crate) fn message(self, cause: &str) -> String {
        match self {
            ExchangeFailure::Connect { timed_out: true } => format!(
                "could not connect to the executor within {} s (it did not receive the attempt)",
                CONNECT_TIMEOUT.as_secs()
            ),
            ExchangeFailure::Connect { timed_out: false } => {
                format!("could not connect to the executor: {cause} (it did not receive the attempt)")
            }
            ExchangeFailure::NetworkTimeout => format!(
                "the connection timed out in the network before any answer ({cause}); an executor whose listen \
                 backlog overflows under a burst never accepts such connections: it may not have received the attempt"
            ),
            ExchangeFailure::NoAnswer => {
                "no answer within the job's timeout (the request was sent: the executor may have received it)".into()
            }
            ExchangeFailure::Broken => format!(
                "the connection failed before an answer: {cause} (the request was sent: the executor may have received it)"
            ),
            ExchangeFailure::AddressRefused => format!("not sent: {cause}"),
        }
    }
}

fn chain<'a>(e: &'a (dyn std::error::Error + 'static)) -> impl Iterator<Item = &'a (dyn std::error::Error + 'static)> {
    std::iter::successors(Some(e), |c| c.source())
}

/// The innermost error's text (reqwest's own says only "error sending request").
fn root_cause(e: &(dyn std::error::Error + 'static)) -> String {
    chain(e).last().map(|c| c.to_string()).unwrap_or_default()
}

/// A failed HTTP exchange, classified once: its reason and its message.
fn failed_exchange(e: &reqwest::Error) -> Answer {
    let f = ExchangeFailure::of(e);
    Answer::Failed(f.reason(), f.message(&root_cause(e)))
}

/// How long setting up a connection to an executor may take.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug)]
    struct Wrapped(std::io::Error);
    impl std::fmt::Display for Wrapped {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("error sending request")
        }
    }
    impl std::error::Error for Wrapped {
        fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
            Some(&self.0)
        }
    }

    /// What an executor whose listen backlog overflowed produced (measured with Python's
    /// `http.server`, backlog 5, and a burst of 600 deliveries: 506 of them ended so after
    /// 31.5–34 s): a request error, not a connect error, whose cause is the kernel's
    /// `ETIMEDOUT`. It was reported `timeout` "no answer within the job's timeout".
    #[test]
    fn a_kernel_connection_timeout_is_not_the_jobs_timeout() {
        let e = Wrapped(std::io::Error::from_raw_os_error(110));
        let f = ExchangeFailure::classify(false, true, &e);
        assert_eq!(f, ExchangeFailure::NetworkTimeout);
        assert_eq!(f.reason(), FailReason::Error);
        let m = f.message(&root_cause(&e));
        assert!(m.contains("timed out in the network") && m.contains("backlog"), "{m}");
    }

    #[test]
    fn each_failure_says_whether_the_executor_can_have_received_the_attempt() {
        let plain = Wrapped(std::io::Error::other("deadline"));
        assert_eq!(ExchangeFailure::classify(false, true, &plain), ExchangeFailure::NoAnswer);
        assert_eq!(ExchangeFailure::NoAnswer.reason(), FailReason::Timeout);
        let refused = Wrapped(std::io::Error::from(std::io::ErrorKind::ConnectionRefused));
        let f = ExchangeFailure::classify(true, false, &refused);
        assert_eq!(f, ExchangeFailure::Connect { timed_out: false });
        assert_eq!(f.reason(), FailReason::Error);
        assert!(f.message(&root_cause(&refused)).contains("did not receive"));
        assert_eq!(ExchangeFailure::classify(true, true, &plain), ExchangeFailure::Connect { timed_out: true });
        let reset = Wrapped(std::io::Error::from(std::io::ErrorKind::ConnectionReset));
        let f = ExchangeFailure::classify(false, false, &reset);
        assert_eq!(f, ExchangeFailure::Broken);
        assert!(f.message(&root_cause(&reset)).contains("may have received"));
    }

    /// The resolver judges every address a name resolves to, at connect time: `localhost`
    /// is refused when loopback is, and allowed by the default policy.
    #[tokio::test]
    async fn names_are_judged_on_the_addresses_they_resolve_to() {
        use reqwest::dns::Resolve;
        use std::str::FromStr;
        let closed = PolicyResolver { policy: OutboundPolicy { allow_loopback: false, allow_private: false } };
        let err = match closed.resolve(reqwest::dns::Name::from_str("localhost").unwrap()).await {
            Ok(_) => panic!("localhost resolved under a policy refusing loopback"),
            Err(e) => e,
        };
        let refused = err.downcast_ref::<AddressRefused>().expect("an AddressRefused");
        assert_eq!(refused.refused.class, sundial_core::outbound::AddressClass::Loopback);
        assert!(err.to_string().contains("`localhost` resolves to 127.0.0.1"), "{err}");
        let open = PolicyResolver { policy: OutboundPolicy::default() };
        let addrs: Vec<_> = open.resolve(reqwest::dns::Name::from_str("localhost").unwrap()).await.unwrap().collect();
        assert!(!addrs.is_empty() && addrs.iter().all(|a| a.ip().is_loopback()), "{addrs:?}");
    }

    #[test]
    fn a_2xx_body_is_read_strictly() {
        let ok = parse_result(b"").unwrap();
        assert!(ok.succeeded && ok.output.is_none(), "an empty body is success with no output");
        assert!(parse_result(b" \n").unwrap().succeeded);
        let r = parse_result(br#"{"status": "failed", "message": "boom", "output": [1]}"#).unwrap();
        assert_eq!((r.succeeded, r.message.as_deref(), r.output), (false, Some("boom"), Some(serde_json::json!([1]))));
        assert!(parse_result(br#"{"output": 3}"#).unwrap().succeeded, "status defaults to succeeded");
        assert!(parse_result(b"OK").unwrap_err().contains("not JSON"));
        assert!(parse_result(b"[1, 2]").unwrap_err().contains("not an object"));
        assert!(parse_result(br#"{"status": "ok"}"#).unwrap_err().contains("does not match the protocol"));
        assert!(parse_result(br#"{"message": 5}"#).unwrap_err().contains("does not match the protocol"));
    }
}
