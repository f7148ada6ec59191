//! The runner's signed calls to Sundial (the executor protocol's API side): fetch a run's
//! script, append log lines, report a result, register, heartbeat, deregister. Every call
//! is signed with the app's secrets (Standard Webhooks), like Sundial's calls to executors.

use std::sync::Arc;
use std::time::Duration;

use serde::Deserialize;
use serde_json::{Value, json};
use sundial_core::clock::SharedClock;
use sundial_core::signing::{self, SigningKey};

use crate::{AppKeys, RunnerError};

/// How long one call to Sundial may take.
const CALL_TIMEOUT: Duration = Duration::from_secs(30);

/// A run's script as `POST /api/v1/runs/{id}/script` returns it.
#[derive(Debug, Clone, Deserialize)]
pub struct RunScript {
    pub script_id: String,
    pub name: String,
    pub runtime: String,
    pub version: i64,
    pub sha256: String,
    /// `text` or `base64`.
    pub encoding: String,
    pub source: String,
}

/// A client for Sundial's executor API, signing for whichever app a call is about.
#[derive(Clone)]
pub(crate) struct Api {
    http: reqwest::Client,
    base: String,
    keys: Arc<dyn AppKeys>,
    clock: SharedClock,
}

impl Api {
    pub(crate) fn new(base: &str, keys: Arc<dyn AppKeys>, clock: SharedClock) -> Self {
        let http = reqwest::Client::builder()
            .timeout(CALL_TIMEOUT)
            .no_proxy()
            .redirect(reqwest::redirect::Policy::none())
            .user_agent(concat!("sundial-runner/", env!("CARGO_PKG_VERSION")))
            .build()
            .expect("HTTP client builds");
        Self { http, base: base.trim_end_matches('/').to_string(), keys, clock }
    }

    /// POST a signed JSON body to `path` (under the API base) for `app_id`; the answer's JSON.
    pub(crate) async fn post(&self, app_id: &str, path: &str, body: &Value) -> Result<Value, RunnerError> {
        let secrets = self.keys.secrets(app_id).await.ok_or_else(|| RunnerError::UnknownApp(app_id.to_string()))?;
        let keys: Vec<SigningKey> = secrets.iter().filter_map(|s| SigningKey::parse(s).ok()).collect();
        let body = serde_json::to_vec(body).expect("JSON");
        let msg_id = sundial_core::ids::new_id("msg");
        let ts = self.clock.now_ms().div_euclid(1000);
        let resp = self
            .http
            .post(format!("{}{path}", self.base))
            .header("content-type", "application/json")
            .header(signing::HEADER_ID, &msg_id)
            .header(signing::HEADER_TIMESTAMP, ts.to_string())
            .header(signing::HEADER_SIGNATURE, signing::signature_header(&keys, &msg_id, ts, &body))
            .header(sundial_core::protocol::headers::APP_ID, app_id)
            .body(body)
            .send()
            .await
            .map_err(|e| RunnerError::Call { path: path.to_string(), message: e.to_string() })?;
        let status = resp.status();
        let bytes =
            resp.bytes().await.map_err(|e| RunnerError::Call { path: path.to_string(), message: e.to_string() })?;
        if !status.is_success() {
            return Err(RunnerError::Refused {
                path: path.to_string(),
                status: status.as_u16(),
                body: String::from_utf8_lossy(&bytes[..bytes.len().min(500)]).into_owned(),
            });
        }
        serde_json::from_slice(&bytes).map_err(|e| RunnerError::Call { path: path.to_string(), message: e.to_string() })
    }

    pub(crate) async fn run_script(&self, app_id: &str, run_id: &str) -> Result<RunScript, RunnerError> {
        let v = self.post(app_id, &format!("/api/v1/runs/{run_id}/script"), &json!({})).await?;
        serde_json::from_value(v).map_err(|e| RunnerError::Call { path: "script".into(), message: e.to_string() })
    }

    pub(crate) async fn logs(
        &self,
        app_id: &str,
        run_id: &str,
        attempt: i64,
        shard: i64,
        lines: Vec<(String, String)>,
    ) -> Result<(), RunnerError> {
        let lines: Vec<Value> =
            lines.into_iter().map(|(level, message)| json!({"level": level, "message": message})).collect();
        self.post(
            app_id,
            &format!("/api/v1/runs/{run_id}/logs"),
            &json!({"attempt": attempt, "shard": shard, "lines": lines}),
        )
        .await
        .map(|_| ())
    }

    /// Report a result by callback, trying again a few times if Sundial cannot be reached
    /// (a refusal — the attempt is no longer current — is final).
    pub(crate) async fn result(&self, app_id: &str, run_id: &str, attempt: i64, shard: i64, answer: &Value) {
        let mut body = answer.clone();
        body["attempt"] = json!(attempt);
        body["shard"] = json!(shard);
        let path = format!("/api/v1/runs/{run_id}/result");
        for delay in [0u64, 1, 2, 4, 8, 16] {
            tokio::time::sleep(Duration::from_secs(delay)).await;
            match self.post(app_id, &path, &body).await {
                Ok(_) => return,
                Err(RunnerError::Refused { status: 413, body: why, .. }) if body.get("output").is_some() => {
                    // The output is over the node's `max_output_bytes`: the attempt fails, saying so.
                    tracing::warn!(run_id, attempt, "output refused as too large; reporting the attempt failed");
                    let message = serde_json::from_str::<Value>(&why)
                        .ok()
                        .and_then(|v| v.get("message").and_then(Value::as_str).map(String::from))
                        .unwrap_or(why);
                    body = json!({"status": "failed", "message": message, "attempt": attempt, "shard": shard});
                }
                Err(e @ RunnerError::Refused { .. }) => {
                    tracing::warn!(run_id, attempt, error = %e, "result refused");
                    return;
                }
                Err(e) => tracing::warn!(run_id, attempt, error = %e, "result not reported yet; trying again"),
            }
        }
        tracing::error!(run_id, attempt, "result could not be reported; the run's deadline decides it");
    }
}
