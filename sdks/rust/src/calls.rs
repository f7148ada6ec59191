//! Executor → Sundial calls (`PROTOCOL.md` §5): register, heartbeat, deregister, result, logs.
//! Each is signed like a delivery with every app secret, a fresh `webhook-id`, and
//! `sundial-app-id`; with several scheduler URLs the next is tried on a connection error or
//! a `5xx`, and the last one that answered is tried first next time.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use sundial_core::protocol::headers as sh;
use sundial_core::signing::{self, SigningKey};

/// A signed call that got no usable answer from any node.
#[derive(Debug, Clone, thiserror::Error)]
#[error("no scheduler node answered `{path}`: {last}")]
pub struct CallError {
    pub path: String,
    pub last: String,
}

pub(crate) struct Calls {
    urls: Vec<String>,
    app_id: String,
    keys: Vec<SigningKey>,
    http: reqwest::Client,
    next: AtomicUsize,
}

impl Calls {
    pub(crate) fn new(urls: Vec<String>, app_id: String, keys: Vec<SigningKey>) -> Self {
        let http = reqwest::Client::builder()
            .timeout(Duration::from_secs(15))
            .connect_timeout(Duration::from_secs(5))
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .expect("an HTTP client with default TLS settings");
        let urls = urls.into_iter().map(|u| u.trim_end_matches('/').to_string()).collect();
        Calls { urls, app_id, keys, http, next: AtomicUsize::new(0) }
    }

    /// `POST {node}{path}` signed; the status and JSON body (or `null`) of the first node
    /// that answered with a status below 500 (or the last `5xx`).
    pub(crate) async fn post<B: Serialize>(&self, path: &str, body: &B) -> Result<(u16, Value), CallError> {
        let bytes = serde_json::to_vec(body).map_err(|e| CallError { path: path.into(), last: e.to_string() })?;
        let n = self.urls.len();
        if n == 0 {
            return Err(CallError { path: path.into(), last: "no scheduler URL configured".into() });
        }
        let start = self.next.load(Ordering::Relaxed) % n;
        let mut last = String::new();
        let mut last_5xx = None;
        for i in 0..n {
            let idx = (start + i) % n;
            let url = format!("{}{}", self.urls[idx], path);
            let msg_id = format!("msg_{}", uuid::Uuid::new_v4().simple());
            let ts = crate::verify::now_secs();
            let sig = signing::signature_header(&self.keys, &msg_id, ts, &bytes);
            let sent = self
                .http
                .post(&url)
                .header("content-type", "application/json")
                .header(signing::HEADER_ID, &msg_id)
                .header(signing::HEADER_TIMESTAMP, ts.to_string())
                .header(signing::HEADER_SIGNATURE, sig)
                .header(sh::APP_ID, &self.app_id)
                .body(bytes.clone())
                .send()
                .await;
            match sent {
                Ok(resp) => {
                    let status = resp.status().as_u16();
                    let text = resp.bytes().await.unwrap_or_default();
                    let value = serde_json::from_slice(&text).unwrap_or(Value::Null);
                    if status >= 500 {
                        last = format!("{url}: HTTP {status}");
                        last_5xx = Some((status, value));
                        continue;
                    }
                    self.next.store(idx, Ordering::Relaxed);
                    return Ok((status, value));
                }
                Err(e) => last = format!("{url}: {e}"),
            }
        }
        match last_5xx {
            Some(answer) => Ok(answer),
            None => Err(CallError { path: path.into(), last }),
        }
    }
}

/// `POST /api/v1/executors/register`.
#[derive(Debug, Serialize)]
pub(crate) struct RegisterRequest<'a> {
    pub address: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<&'a str>,
    pub tags: &'a [String],
    #[serde(skip_serializing_if = "Option::is_none")]
    pub metadata: Option<&'a Value>,
    pub handlers: Vec<String>,
}

/// Sundial's answer to a registration.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Registered {
    pub executor_id: String,
    pub heartbeat_interval_ms: i64,
    #[serde(default)]
    pub metadata_interval_ms: i64,
    #[serde(default)]
    pub offline_after_ms: i64,
    /// Jobs the registration created (one `stopped` job per handler new to the app).
    #[serde(default)]
    pub jobs_created: Vec<String>,
}

#[derive(Debug, Serialize)]
pub(crate) struct HeartbeatRequest<'a> {
    pub executor_id: &'a str,
    pub running: i64,
    pub running_runs: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub metadata: Option<&'a Value>,
}

#[derive(Debug, Serialize)]
pub(crate) struct DeregisterRequest<'a> {
    pub executor_id: &'a str,
}

/// `POST /api/v1/runs/{id}/result`.
#[derive(Debug, Serialize)]
pub(crate) struct ResultRequest<'a> {
    pub attempt: i64,
    pub shard: i64,
    pub status: sundial_core::protocol::AnswerStatus,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output: Option<&'a Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retry: Option<bool>,
}

/// One line of `POST /api/v1/runs/{id}/logs`.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct LogLine {
    pub level: &'static str,
    pub message: String,
    pub at: String,
}

#[derive(Debug, Serialize)]
pub(crate) struct LogsRequest<'a> {
    pub attempt: i64,
    pub shard: i64,
    pub lines: &'a [LogLine],
}
