//! `spawn_app()`: a fresh database and a real server on 127.0.0.1:0.

use std::sync::Arc;

use reqwest::StatusCode;
use serde_json::{Value, json};
use sundial_api::{ApiConfig, AppState};
use sundial_core::clock::ManualClock;
use sundial_engine::{Engine, EngineConfig};
use sundial_store::Dialect;
use sundial_store::testing::TestDb;

/// 2026-03-28T12:00:00Z, the day before Europe's spring-forward.
pub const T0: i64 = 1_774_699_200_000;
pub const MAX_BODY: usize = 64 * 1024;
/// The largest run output (`max_output_bytes`), below the body limit so a test can exceed it.
pub const MAX_OUTPUT: usize = 16 * 1024;
pub const GRACE_MS: i64 = 3_600_000;
/// Log bytes one logs call may carry (`max_log_bytes_per_call`), below the body limit so a test can exceed it.
pub const MAX_LOG_CALL: usize = 16 * 1024;

pub struct TestApp {
    pub base: String,
    pub http: reqwest::Client,
    pub clock: ManualClock,
    pub operator_key: String,
    pub db: TestDb,
    pub engine: Arc<Engine>,
    server: tokio::task::JoinHandle<()>,
}

pub async fn spawn_app(dialect: Dialect) -> TestApp {
    let db = TestDb::new(dialect).await;
    let clock = ManualClock::new(T0);
    let operator_key = sundial_api::bootstrap::ensure_operator_key(db.store.as_ref(), None, T0)
        .await
        .unwrap()
        .expect("a fresh database gets an operator key");
    let wake = Arc::new(tokio::sync::Notify::new());
    // The engine is not started: tests turn it by hand (`engine.tick()`) with the manual clock.
    let mut engine_cfg = EngineConfig::new("node_test");
    engine_cfg.max_output_bytes = MAX_OUTPUT;
    let engine = Engine::new(db.store(), Arc::new(clock.clone()), engine_cfg, wake.clone());
    // One node, as `sundial serve` makes it: the API sends its cancels through the engine's sender.
    let state = AppState::new(
        db.store(),
        Arc::new(clock.clone()),
        ApiConfig {
            max_body_bytes: MAX_BODY,
            secret_grace_ms: GRACE_MS,
            max_output_bytes: MAX_OUTPUT,
            max_log_bytes_per_call: MAX_LOG_CALL,
            ..Default::default()
        },
        wake,
    )
    .with_cancels(engine.cancels().clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let server = tokio::spawn(async move {
        axum::serve(listener, sundial_api::router(state)).await.unwrap();
    });
    TestApp { base, http: reqwest::Client::new(), clock, operator_key, db, engine, server }
}

/// A tenant with its admin key.
pub struct TenantKeys {
    pub id: String,
    pub admin: String,
}

impl TestApp {
    pub async fn cleanup(self) {
        self.server.abort();
        self.db.cleanup().await;
    }

    pub async fn call(
        &self,
        method: &str,
        path: &str,
        key: Option<&str>,
        body: Option<Vec<u8>>,
    ) -> (StatusCode, Value) {
        let mut req = self.http.request(method.parse().unwrap(), format!("{}{}", self.base, path));
        if let Some(k) = key {
            req = req.bearer_auth(k);
        }
        if let Some(b) = body {
            req = req.header("content-type", "application/json").body(b);
        }
        let resp = req.send().await.unwrap();
        let status = resp.status();
        let text = resp.text().await.unwrap();
        let value =
            if text.is_empty() { Value::Null } else { serde_json::from_str(&text).unwrap_or(Value::String(text)) };
        (status, value)
    }

    pub async fn get(&self, path: &str, key: &str) -> (StatusCode, Value) {
        self.call("GET", path, Some(key), None).await
    }
    pub async fn post(&self, path: &str, key: &str, body: Value) -> (StatusCode, Value) {
        self.call("POST", path, Some(key), Some(serde_json::to_vec(&body).unwrap())).await
    }
    pub async fn put(&self, path: &str, key: &str, body: Value) -> (StatusCode, Value) {
        self.call("PUT", path, Some(key), Some(serde_json::to_vec(&body).unwrap())).await
    }
    pub async fn patch(&self, path: &str, key: &str, body: Value) -> (StatusCode, Value) {
        self.call("PATCH", path, Some(key), Some(serde_json::to_vec(&body).unwrap())).await
    }
    pub async fn delete(&self, path: &str, key: &str) -> (StatusCode, Value) {
        self.call("DELETE", path, Some(key), None).await
    }

    pub async fn tenant(&self, name: &str) -> TenantKeys {
        let (s, v) = self.post("/api/v1/tenants", &self.operator_key, json!({"name": name})).await;
        assert_eq!(s, StatusCode::CREATED, "{v}");
        TenantKeys { id: v["id"].as_str().unwrap().into(), admin: v["admin_key"].as_str().unwrap().into() }
    }

    pub async fn key(&self, admin: &str, role: &str) -> String {
        let (s, v) = self.post("/api/v1/keys", admin, json!({"name": format!("{role}-key"), "role": role})).await;
        assert_eq!(s, StatusCode::CREATED, "{v}");
        v["key"].as_str().unwrap().into()
    }

    pub async fn app(&self, key: &str, name: &str) -> Value {
        let (s, v) =
            self.post("/api/v1/apps", key, json!({"name": name, "endpoints": ["http://127.0.0.1:9/hook"]})).await;
        assert_eq!(s, StatusCode::CREATED, "{v}");
        v
    }

    pub async fn job(&self, key: &str, body: Value) -> Value {
        let (s, v) = self.post("/api/v1/jobs", key, body).await;
        assert_eq!(s, StatusCode::CREATED, "{v}");
        v
    }

    /// How many jobs the tenant has (to prove refused writes wrote nothing).
    pub async fn job_count(&self, key: &str) -> usize {
        let (s, v) = self.get("/api/v1/jobs?limit=200", key).await;
        assert_eq!(s, StatusCode::OK, "{v}");
        v["items"].as_array().unwrap().len()
    }
}

pub fn cron_job(name: &str, app: &str) -> Value {
    json!({
        "name": name, "app": app, "handler": "invoice.run",
        "schedule": {"kind": "cron", "expression": "0 30 2 * * *", "timezone": "Europe/Berlin"}
    })
}

/// Assert an error response: status, code and the named field.
#[track_caller]
pub fn assert_error(got: &(StatusCode, Value), status: StatusCode, code: &str, field: Option<&str>) {
    let (s, v) = got;
    assert_eq!(*s, status, "{v}");
    assert_eq!(v["code"], code, "{v}");
    assert!(v["message"].as_str().is_some_and(|m| !m.is_empty()), "{v}");
    if let Some(f) = field {
        assert_eq!(v["details"]["field"], f, "{v}");
    }
}
