//! A real executor for tests: an HTTP server on 127.0.0.1:0 that verifies every
//! delivery's signature with the app secret and answers as scripted.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use axum::body::Bytes;
use axum::http::{HeaderMap, StatusCode, Uri};
use axum::response::IntoResponse;
use serde_json::{Value, json};
use sundial_core::clock::{Clock, ManualClock};
use sundial_core::signing::{self, SigningKey};

/// How the executor answers the next delivery.
#[derive(Debug, Clone)]
pub enum Answer {
    /// 200 with `{"status": "succeeded", "output": …}`.
    Ok(Value),
    /// 200 with `{"status": "failed", "message": …}`.
    Fail(&'static str),
    /// 202: the result comes by callback.
    Accept,
    /// Any other status with a JSON body.
    Status(u16, Value),
    /// A status, a raw body, and a `Location` header if given.
    Raw(u16, Vec<u8>, Option<String>),
    /// Hold the answer (the exchange stays open) until a permit is added to the semaphore,
    /// then 200 with `{"status": "succeeded", "output": …}`.
    Hold(Arc<tokio::sync::Semaphore>, Value),
}

#[derive(Debug, Clone)]
pub struct Received {
    pub path: String,
    pub headers: HeaderMap,
    pub body: Value,
    pub signature_ok: bool,
}

#[derive(Clone)]
pub struct TestExecutor {
    pub url: String,
    pub received: Arc<Mutex<Vec<Received>>>,
    script: Arc<Mutex<VecDeque<Answer>>>,
    default: Arc<Mutex<Answer>>,
    /// When set, a cancel is recorded and then never answered (the connection stays open).
    hang_cancels: Arc<std::sync::atomic::AtomicBool>,
    server: Arc<tokio::task::JoinHandle<()>>,
}

impl TestExecutor {
    /// `clock` is the scheduler's clock: signatures are checked against its time.
    pub async fn start(secret: &str, clock: ManualClock) -> TestExecutor {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/hook", listener.local_addr().unwrap());
        let received = Arc::new(Mutex::new(Vec::new()));
        let script = Arc::new(Mutex::new(VecDeque::new()));
        let default = Arc::new(Mutex::new(Answer::Ok(json!({"done": true}))));
        let secret = Arc::new(Mutex::new(secret.to_string()));
        let hang_cancels = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let (r, s, d, k, hang) =
            (received.clone(), script.clone(), default.clone(), secret.clone(), hang_cancels.clone());
        let app = axum::Router::new().fallback(move |uri: Uri, headers: HeaderMap, body: Bytes| {
            let (r, s, d, k, clock, hang) = (r.clone(), s.clone(), d.clone(), k.clone(), clock.clone(), hang.clone());
            async move {
                let key = SigningKey::parse(&k.lock().unwrap()).unwrap();
                let now = clock.now_ms() / 1000;
                let h = |n: &str| headers.get(n).and_then(|v| v.to_str().ok());
                let signature_ok = signing::verify(
                    &[key],
                    h("webhook-id"),
                    h("webhook-timestamp"),
                    h("webhook-signature"),
                    &body,
                    now,
                )
                .is_ok();
                let parsed: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
                r.lock().unwrap().push(Received {
                    path: uri.path().to_string(),
                    headers: headers.clone(),
                    body: parsed,
                    signature_ok,
                });
                if !signature_ok {
                    return (StatusCode::UNAUTHORIZED, axum::Json(json!({"code": "bad_signature"}))).into_response();
                }
                if uri.path().ends_with("/cancel") {
                    if hang.load(std::sync::atomic::Ordering::SeqCst) {
                        std::future::pending::<()>().await;
                    }
                    return (StatusCode::ACCEPTED, axum::Json(json!({}))).into_response();
                }
                let answer = s.lock().unwrap().pop_front().unwrap_or_else(|| d.lock().unwrap().clone());
                match answer {
                    Answer::Ok(output) => axum::Json(json!({"status": "succeeded", "output": output})).into_response(),
                    Answer::Fail(m) => axum::Json(json!({"status": "failed", "message": m})).into_response(),
                    Answer::Accept => StatusCode::ACCEPTED.into_response(),
                    Answer::Hold(release, output) => {
                        let _ = release.acquire().await.map(|p| p.forget());
                        axum::Json(json!({"status": "succeeded", "output": output})).into_response()
                    }
                    Answer::Status(code, body) => {
                        (StatusCode::from_u16(code).unwrap(), axum::Json(body)).into_response()
                    }
                    Answer::Raw(code, body, location) => {
                        let mut r = (StatusCode::from_u16(code).unwrap(), body).into_response();
                        if let Some(l) = location {
                            r.headers_mut().insert("location", l.parse().unwrap());
                        }
                        r
                    }
                }
            }
        });
        let server = tokio::spawn(async move {
            axum::serve(listener, app).await.unwrap();
        });
        TestExecutor { url, received, script, default, hang_cancels, server: Arc::new(server) }
    }

    pub fn then(&self, a: Answer) -> &Self {
        self.script.lock().unwrap().push_back(a);
        self
    }
    pub fn always(&self, a: Answer) {
        *self.default.lock().unwrap() = a;
    }
    pub fn deliveries(&self) -> Vec<Received> {
        self.received.lock().unwrap().iter().filter(|r| !r.path.ends_with("/cancel")).cloned().collect()
    }
    /// The deliveries received once `n` have arrived, or after 5 s of waiting, whatever arrived.
    pub async fn wait_deliveries(&self, n: usize) -> Vec<Received> {
        let until = std::time::Instant::now() + std::time::Duration::from_secs(5);
        while self.deliveries().len() < n && std::time::Instant::now() < until {
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
        self.deliveries()
    }
    pub fn cancels(&self) -> Vec<Received> {
        self.received.lock().unwrap().iter().filter(|r| r.path.ends_with("/cancel")).cloned().collect()
    }
    /// The cancels received once `n` have arrived (they are sent in the background), or
    /// after 5 s of waiting, whatever arrived.
    pub async fn wait_cancels(&self, n: usize) -> Vec<Received> {
        let until = std::time::Instant::now() + std::time::Duration::from_secs(5);
        while self.cancels().len() < n && std::time::Instant::now() < until {
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
        self.cancels()
    }
    /// Never answer a cancel from now on (record it, keep the connection open).
    pub fn hang_cancels(&self) {
        self.hang_cancels.store(true, std::sync::atomic::Ordering::SeqCst);
    }
}

impl Drop for TestExecutor {
    fn drop(&mut self) {
        if Arc::strong_count(&self.server) == 1 {
            self.server.abort();
        }
    }
}

/// Sign an executor → scheduler call with the app secret (Standard Webhooks).
pub fn signed_headers(secret: &str, app_id: &str, msg_id: &str, body: &[u8], ts: i64) -> Vec<(String, String)> {
    let key = SigningKey::parse(secret).unwrap();
    vec![
        ("webhook-id".into(), msg_id.into()),
        ("webhook-timestamp".into(), ts.to_string()),
        ("webhook-signature".into(), key.sign(msg_id, ts, body)),
        ("sundial-app-id".into(), app_id.into()),
        ("content-type".into(), "application/json".into()),
    ]
}
