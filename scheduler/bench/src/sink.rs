//! The executor every delivery goes to: a static endpoint that records the receive time,
//! checks the Standard Webhooks signature and answers `200 {"status": "succeeded"}` at once.
//!
//! Records are kept compactly (about 40 bytes each): job ids are interned, run ids and
//! webhook ids are kept as 64-bit hashes (enough to tell two apart among millions).

use std::collections::HashMap;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};

use axum::body::Bytes;
use axum::http::{HeaderMap, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;

use crate::sign::Key;

/// Listen backlog: a burst of thousands of new connections must not be dropped by the kernel.
const BACKLOG: u32 = 8192;

/// One delivery as received.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rec {
    /// Interned job id ([`Sink::job_names`]).
    pub job: u32,
    /// `sundial-scheduled-at`, epoch ms.
    pub scheduled_ms: i64,
    /// When the request reached the handler, epoch µs (system clock).
    pub received_us: i64,
    /// Hash of the run id.
    pub run: u64,
    /// Hash of the `webhook-id`.
    pub msg: u64,
}

/// A 64-bit hash of an id (deterministic across the run).
pub fn id_hash(s: &str) -> u64 {
    let mut h = DefaultHasher::new();
    s.hash(&mut h);
    h.finish()
}

/// Wall-clock now, epoch µs.
pub fn now_us() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_micros() as i64).unwrap_or(0)
}

#[derive(Default)]
struct Interner {
    ids: HashMap<String, u32>,
    names: Vec<String>,
}

#[derive(Default)]
struct Shared {
    key: RwLock<Option<Key>>,
    records: Mutex<Vec<Rec>>,
    jobs: Mutex<Interner>,
    bad_signatures: AtomicU64,
    unreadable: AtomicU64,
    cancels: AtomicU64,
}

#[derive(Deserialize)]
struct Body<'a> {
    #[serde(borrow)]
    job_id: Option<std::borrow::Cow<'a, str>>,
    #[serde(borrow)]
    run_id: Option<std::borrow::Cow<'a, str>>,
}

/// The running sink. Cheap to clone.
#[derive(Clone)]
pub struct Sink {
    pub addr: SocketAddr,
    shared: Arc<Shared>,
}

impl Sink {
    /// Listen on 127.0.0.1:0 (multi-thread runtime of the caller) with a large backlog.
    pub async fn start() -> anyhow::Result<Sink> {
        let socket = tokio::net::TcpSocket::new_v4()?;
        socket.set_reuseaddr(true)?;
        socket.bind("127.0.0.1:0".parse()?)?;
        let listener = socket.listen(BACKLOG)?;
        let addr = listener.local_addr()?;
        let shared: Arc<Shared> = Arc::default();
        let s = shared.clone();
        let app = axum::Router::new().fallback(move |uri: Uri, headers: HeaderMap, body: Bytes| {
            let s = s.clone();
            async move { handle(&s, &uri, &headers, &body) }
        });
        tokio::spawn(async move {
            if let Err(e) = axum::serve(listener, app).await {
                eprintln!("sink stopped: {e}");
            }
        });
        Ok(Sink { addr, shared })
    }

    /// [`Sink::start`] on a thread and runtime of its own: an executor of another tenant is
    /// another process on another machine, so its receive times must not wait behind the
    /// herd's sink on the bench's shared runtime.
    pub fn start_on_own_thread() -> anyhow::Result<Sink> {
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::Builder::new().name("own-sink".into()).spawn(move || {
            let rt = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
                Ok(rt) => rt,
                Err(e) => return drop(tx.send(Err(e.into()))),
            };
            rt.block_on(async move {
                let started = Sink::start().await;
                let ok = started.is_ok();
                let _ = tx.send(started);
                if ok {
                    std::future::pending::<()>().await;
                }
            });
        })?;
        rx.recv()?
    }

    /// The URL to give the app as its static endpoint.
    pub fn url(&self) -> String {
        format!("http://{}/", self.addr)
    }

    /// The key deliveries are checked with from now on.
    pub fn set_key(&self, key: Key) {
        *self.shared.key.write().unwrap() = Some(key);
    }

    /// Take every record so far (and forget them).
    pub fn take(&self) -> Vec<Rec> {
        std::mem::take(&mut *self.shared.records.lock().unwrap())
    }

    /// Interned job ids, by index.
    pub fn job_names(&self) -> Vec<String> {
        self.shared.jobs.lock().unwrap().names.clone()
    }

    /// Deliveries whose signature did not verify (answered 401, not recorded).
    pub fn bad_signatures(&self) -> u64 {
        self.shared.bad_signatures.load(Ordering::Relaxed)
    }

    /// Deliveries without a readable scheduled time or job id (answered 400, not recorded).
    pub fn unreadable(&self) -> u64 {
        self.shared.unreadable.load(Ordering::Relaxed)
    }

    /// Signed cancel calls (`POST …/cancel`) received.
    pub fn cancels(&self) -> u64 {
        self.shared.cancels.load(Ordering::Relaxed)
    }

    /// Reset the counters (between the baseline and the measurement).
    pub fn reset_counters(&self) {
        self.shared.bad_signatures.store(0, Ordering::Relaxed);
        self.shared.unreadable.store(0, Ordering::Relaxed);
        self.shared.cancels.store(0, Ordering::Relaxed);
    }
}

fn handle(s: &Shared, uri: &Uri, headers: &HeaderMap, body: &[u8]) -> Response {
    let received_us = now_us();
    let h = |n: &str| headers.get(n).and_then(|v| v.to_str().ok()).unwrap_or("");
    let (msg_id, ts) = (h("webhook-id"), h("webhook-timestamp"));
    let ok = s.key.read().unwrap().as_ref().is_some_and(|k| {
        let fresh = ts.parse::<i64>().is_ok_and(|t| (received_us / 1_000_000 - t).abs() <= 300);
        !msg_id.is_empty() && fresh && k.verify(msg_id, ts, h("webhook-signature"), body)
    });
    if !ok {
        s.bad_signatures.fetch_add(1, Ordering::Relaxed);
        return (StatusCode::UNAUTHORIZED, r#"{"code":"bad_signature"}"#).into_response();
    }
    if uri.path().ends_with("/cancel") {
        s.cancels.fetch_add(1, Ordering::Relaxed);
        return (StatusCode::ACCEPTED, "{}").into_response();
    }
    let parsed: Option<Body> = serde_json::from_slice(body).ok();
    let scheduled_ms = parse_ms(h("sundial-scheduled-at"));
    let job = parsed.as_ref().and_then(|b| b.job_id.as_deref());
    let run = parsed.as_ref().and_then(|b| b.run_id.as_deref()).unwrap_or(h("sundial-run-id"));
    let (Some(scheduled_ms), Some(job)) = (scheduled_ms, job) else {
        s.unreadable.fetch_add(1, Ordering::Relaxed);
        return (StatusCode::BAD_REQUEST, r#"{"code":"unreadable"}"#).into_response();
    };
    let job = {
        let mut jobs = s.jobs.lock().unwrap();
        match jobs.ids.get(job) {
            Some(i) => *i,
            None => {
                let i = jobs.names.len() as u32;
                jobs.names.push(job.to_string());
                jobs.ids.insert(job.to_string(), i);
                i
            }
        }
    };
    let rec = Rec { job, scheduled_ms, received_us, run: id_hash(run), msg: id_hash(msg_id) };
    s.records.lock().unwrap().push(rec);
    (StatusCode::OK, [("content-type", "application/json")], r#"{"status":"succeeded"}"#).into_response()
}

/// RFC 3339 → epoch ms.
pub fn parse_ms(s: &str) -> Option<i64> {
    chrono::DateTime::parse_from_rfc3339(s).ok().map(|t| t.timestamp_millis())
}

/// Epoch ms → RFC 3339 UTC with milliseconds (Sundial's form).
pub fn rfc3339_ms(ms: i64) -> String {
    chrono::DateTime::from_timestamp_millis(ms).unwrap_or_default().to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_round_trip() {
        let ms = 1_790_000_000_123;
        let s = rfc3339_ms(ms);
        assert!(s.ends_with(".123Z"), "{s}");
        assert_eq!(parse_ms(&s), Some(ms));
        assert_eq!(parse_ms("2026-11-24T10:00:00.500+01:00"), parse_ms("2026-11-24T09:00:00.500Z"));
        assert_eq!(parse_ms("yesterday"), None);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn records_signed_deliveries_and_refuses_others() {
        let sink = Sink::start().await.unwrap();
        let (key, _) = Key::generate();
        sink.set_key(key.clone());
        let body = br#"{"run_id":"run_1","job_id":"job_a","attempt":1}"#;
        let ts = (now_us() / 1_000_000).to_string();
        let client = reqwest::Client::new();
        let send = |sig: String| {
            client
                .post(sink.url())
                .header("webhook-id", "msg_run_1_0_1")
                .header("webhook-timestamp", &ts)
                .header("webhook-signature", sig)
                .header("sundial-scheduled-at", "2026-11-24T10:00:01.000Z")
                .body(body.to_vec())
                .send()
        };
        let r = send(key.sign("msg_run_1_0_1", &ts, body)).await.unwrap();
        assert_eq!(r.status(), 200);
        assert_eq!(r.text().await.unwrap(), r#"{"status":"succeeded"}"#);
        let r = send("v1,AAAA".into()).await.unwrap();
        assert_eq!(r.status(), 401);
        let recs = sink.take();
        assert_eq!(recs.len(), 1);
        assert_eq!(recs[0].scheduled_ms, parse_ms("2026-11-24T10:00:01.000Z").unwrap());
        assert_eq!(recs[0].run, id_hash("run_1"));
        assert_eq!(sink.job_names(), vec!["job_a".to_string()]);
        assert_eq!(sink.bad_signatures(), 1);
    }
}
