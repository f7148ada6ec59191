//! `--small-tenant` (issue 26): a second tenant with one job on the same second as the
//! herd, delivered to a sink of its own on a thread and runtime of its own (another tenant’s executor is another process). Its lateness is measured alone first (before the
//! herd's jobs exist: the *idle* figure) and again in the herd's window; the target is the
//! loaded p99 within `max(1.5 × idle p99, idle p99 + 50 ms)` and nothing missed.

use serde::Serialize;
use serde_json::json;

use crate::measure::{Pct, Window, pct};
use crate::server::Api;
use crate::sign;
use crate::sink::Sink;

/// The small tenant's sink.
pub struct Small {
    sink: Sink,
    api: Api,
    job_id: String,
}

/// The small tenant's figures in one window.
#[derive(Debug, Serialize)]
pub struct Seen {
    pub expected: u64,
    pub delivered: u64,
    pub lateness_ms: Pct,
    /// Each fire's lateness, in the window's order (ms).
    pub each_ms: Vec<f64>,
    /// The fires more than 50 ms late: scheduled at (RFC 3339), lateness (ms).
    pub late: Vec<(String, f64)>,
}

#[derive(Debug, Serialize)]
pub struct SmallReport {
    /// Alone on the node, before the herd's jobs were created.
    pub idle: Seen,
    /// In the herd's window.
    pub loaded: Seen,
    /// `max(1.5 × idle p99, idle p99 + 50)`.
    pub bound_ms: f64,
    pub pass: bool,
    /// The server's account of the window's fires that did not succeed.
    pub not_succeeded: Vec<String>,
}

impl Small {
    /// A tenant `small`, its app on a sink of its own, and one job on every second.
    pub async fn start(operator: &Api) -> anyhow::Result<Small> {
        let sink = Sink::start_on_own_thread()?;
        let tenant = operator.create("/api/v1/tenants", &json!({"name": "small"})).await?;
        let api = operator.with_key(tenant["admin_key"].as_str().unwrap_or_default());
        let app = api.create("/api/v1/apps", &json!({"name": "small", "endpoints": [sink.url()]})).await?;
        sink.set_key(sign::Key::parse(app["secret"].as_str().unwrap_or_default())?);
        let job = api
            .create(
                "/api/v1/jobs",
                &json!({"name": "small-0", "app": "small", "handler": "small.tick",
                        "schedule": {"kind": "cron", "expression": "* * * * * *"}}),
            )
            .await?;
        let job_id = job["id"].as_str().unwrap_or_default().to_string();
        Ok(Small { sink, api, job_id })
    }

    /// The server's account of the small job's fires in `w` that did not end `succeeded`
    /// (state, attempt, reason): where a missed fire went.
    pub async fn not_succeeded(&self, w: Window) -> Vec<String> {
        let page = match self.api.get(&format!("/api/v1/runs?job_id={}&limit=200", self.job_id)).await {
            Ok(p) => p,
            Err(e) => return vec![format!("(could not list the small job's runs: {e})")],
        };
        let mut out = Vec::new();
        for r in page["items"].as_array().into_iter().flatten() {
            let at = r["scheduled_at"].as_str().and_then(|t| chrono::DateTime::parse_from_rfc3339(t).ok());
            let Some(at) = at.map(|t| t.timestamp_millis()) else { continue };
            if !w.contains(at) || r["state"] == "succeeded" {
                continue;
            }
            out.push(format!(
                "+{:.0} s {} attempt {} {} {}",
                (at - w.start_ms) as f64 / 1000.0,
                r["state"].as_str().unwrap_or("?"),
                r["attempt"],
                r["reason"].as_str().unwrap_or(""),
                r["message"].as_str().unwrap_or("")
            ));
        }
        out.sort();
        out
    }

    /// What the sink received for fires scheduled in `w` (and takes them out).
    pub fn seen(&self, w: Window) -> Seen {
        let recs: Vec<_> = self.sink.take().into_iter().filter(|r| w.contains(r.scheduled_ms)).collect();
        let mut fires: Vec<i64> = recs.iter().map(|r| r.scheduled_ms).collect();
        fires.sort_unstable();
        fires.dedup();
        let mut each: Vec<(i64, f64)> =
            recs.iter().map(|r| (r.scheduled_ms, r.received_us as f64 / 1000.0 - r.scheduled_ms as f64)).collect();
        each.sort_by_key(|e| e.0);
        let late = each.iter().filter(|e| e.1 > 50.0).map(|e| (crate::sink::rfc3339_ms(e.0), e.1)).collect();
        Seen {
            late,
            each_ms: each.into_iter().map(|(_, l)| (l * 10.0).round() / 10.0).collect(),
            expected: w.fires(0).count() as u64,
            delivered: fires.len() as u64,
            lateness_ms: pct(recs.iter().map(|r| r.received_us as f64 / 1000.0 - r.scheduled_ms as f64).collect()),
        }
    }
}

impl SmallReport {
    pub fn new(idle: Seen, loaded: Seen) -> SmallReport {
        let bound_ms = (1.5 * idle.lateness_ms.p99).max(idle.lateness_ms.p99 + 50.0);
        let pass = loaded.delivered == loaded.expected && loaded.lateness_ms.p99 <= bound_ms;
        SmallReport { idle, loaded, bound_ms, pass, not_succeeded: Vec::new() }
    }
}

/// An executor that hangs: it accepts connections and reads what comes, but never answers
/// (each connection is held until the caller closes it).
pub struct Hung {
    addr: std::net::SocketAddr,
}

impl Hung {
    pub async fn start() -> anyhow::Result<Hung> {
        let socket = tokio::net::TcpSocket::new_v4()?;
        socket.bind("127.0.0.1:0".parse()?)?;
        let listener = socket.listen(8192)?;
        let addr = listener.local_addr()?;
        tokio::spawn(async move {
            while let Ok((mut conn, _)) = listener.accept().await {
                tokio::spawn(async move {
                    use tokio::io::AsyncReadExt;
                    let mut buf = [0u8; 4096];
                    while matches!(conn.read(&mut buf).await, Ok(n) if n > 0) {}
                });
            }
        });
        Ok(Hung { addr })
    }

    pub fn url(&self) -> String {
        format!("http://{}/", self.addr)
    }
}
