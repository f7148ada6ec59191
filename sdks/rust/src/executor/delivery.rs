//! The server side: verified deliveries (once per `webhook-id`, answered `200` or `202`) and
//! cancels, the axum routes, and the signed result callback after a `202`.

use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::Response;
use axum::routing::post;
use serde_json::{Value, json};
use sundial_core::protocol::{AnswerStatus, Cancel, Delivery};
use sundial_core::signing;
use tokio::sync::{Notify, oneshot, watch};
use tokio_util::sync::CancellationToken;

use crate::calls::{Calls, ResultRequest};
use crate::context::Context;
use crate::error::Error;
use crate::verify;

use super::answers::{Remembered, Stored, answer_of, code, lost, wait_answer};
use super::handlers::{HandlerEntry, Mode};
use super::state::{Executor, Inner, RunKey};

impl Executor {
    /// The axum `Router` serving deliveries at `/` and cancels at `/cancel`: merge it, or nest
    /// it (`Router::new().nest("/sundial", ex.router())`, registered as `https://host/sundial`).
    pub fn router(&self) -> Router {
        Router::new().route("/", post(delivery_route)).route("/cancel", post(cancel_route)).with_state(self.clone())
    }

    /// Verify and handle one delivery (the framework-free core of [`Executor::router`]).
    pub async fn handle_delivery(&self, headers: &HeaderMap, body: Bytes) -> Response {
        let inner = &self.inner;
        if let Err(e) = verify::verify(
            &inner.keys,
            header_str(headers, signing::HEADER_ID),
            header_str(headers, signing::HEADER_TIMESTAMP),
            header_str(headers, signing::HEADER_SIGNATURE),
            &body,
            verify::now_secs(),
        ) {
            return code(401, e.code(), &e.to_string());
        }
        let webhook_id = header_str(headers, signing::HEADER_ID).unwrap_or_default().to_string();

        // A repeat gets the first answer, even while draining.
        let first = {
            let mut answers = inner.answers.lock().unwrap();
            answers.prune(inner.remember, inner.remember_max);
            match answers.by_id.get(&webhook_id) {
                Some((_, Remembered::Done(s))) => Some(Err(s.clone())),
                Some((_, Remembered::InFlight(rx))) => Some(Ok(rx.clone())),
                None => None,
            }
        };
        match first {
            Some(Err(s)) => return s.response(),
            Some(Ok(rx)) => return wait_answer(rx).await.response(),
            None => {}
        }
        if inner.draining.load(Ordering::SeqCst) {
            return code(503, "executor_offline", "this executor is shutting down");
        }
        let delivery: Delivery = match serde_json::from_slice(&body) {
            Ok(d) => d,
            Err(e) => {
                return Stored::json(
                    200,
                    json!({"status": "failed", "retry": false,
                           "message": format!("the executor could not read the delivery: {e}")}),
                )
                .response();
            }
        };
        let name = delivery.handler.clone().unwrap_or_default();
        let entry = match inner.handlers.get(&name) {
            Some(e) if !inner.retired.lock().unwrap().contains(&name) => e.clone(),
            _ => return code(410, "handler_retired", &format!("this executor does not serve handler `{name}`")),
        };

        let (tx, rx) = watch::channel(None);
        let raced = {
            let mut answers = inner.answers.lock().unwrap();
            match answers.by_id.get(&webhook_id) {
                // Two copies raced past the first look.
                Some((_, Remembered::Done(s))) => Some(Err(s.clone())),
                Some((_, Remembered::InFlight(r))) => Some(Ok(r.clone())),
                None => {
                    let now = Instant::now();
                    answers.by_id.insert(webhook_id.clone(), (now, Remembered::InFlight(rx.clone())));
                    answers.order.push_back((now, webhook_id.clone()));
                    None
                }
            }
        };
        match raced {
            Some(Err(s)) => return s.response(),
            Some(Ok(r)) => return wait_answer(r).await.response(),
            None => {}
        }
        // The run is driven by its own task: a dropped connection does not stop it, and its
        // answer is remembered for the repeat.
        let ex = self.clone();
        let id = webhook_id.clone();
        tokio::spawn(async move {
            let stored = ex.run(delivery, id.clone(), entry).await;
            {
                // Remembered from the answer on, whatever the run took.
                let mut answers = ex.inner.answers.lock().unwrap();
                let now = Instant::now();
                answers.by_id.insert(id.clone(), (now, Remembered::Done(stored.clone())));
                answers.order.push_back((now, id.clone()));
            }
            let _ = tx.send(Some(stored));
        });
        wait_answer(rx).await.response()
    }

    /// Run a delivery's handler; the answer to give (the result goes by callback after a `202`).
    async fn run(&self, delivery: Delivery, webhook_id: String, entry: HandlerEntry) -> Stored {
        let inner = self.inner.clone();
        let key: RunKey = (delivery.run_id.clone(), delivery.shard.index, delivery.attempt);
        let token = CancellationToken::new();
        {
            let mut cancels = inner.recent_cancels.lock().unwrap();
            if cancels.remove(&key).is_some() {
                token.cancel();
            }
        }
        inner.running.lock().unwrap().insert(key.clone(), token.clone());
        let answer_later = Arc::new(Notify::new());
        let ctx = Context::new(delivery.clone(), webhook_id, token, answer_later.clone(), inner.calls.clone());
        let params = delivery.params.clone();

        #[derive(PartialEq)]
        enum Phase {
            Waiting,
            Async,
        }
        let phase = Arc::new(Mutex::new(Phase::Waiting));
        let (tx, mut rx) = oneshot::channel::<Result<Value, Error>>();

        let task_phase = phase.clone();
        let task_inner = inner.clone();
        let task_ctx = ctx.clone();
        let f = entry.f.clone();
        let task_key = key.clone();
        tokio::spawn(async move {
            // Flush logs every second while the handler runs.
            let ticker_ctx = task_ctx.clone();
            let ticker = tokio::spawn(async move {
                loop {
                    tokio::time::sleep(Duration::from_secs(1)).await;
                    if ticker_ctx.has_logs() {
                        ticker_ctx.flush().await;
                    }
                }
            });
            let outcome = match tokio::spawn(f(task_ctx.clone(), params)).await {
                Ok(o) => o,
                Err(e) if e.is_panic() => {
                    let p = e.into_panic();
                    let m = p
                        .downcast_ref::<&str>()
                        .map(|s| s.to_string())
                        .or_else(|| p.downcast_ref::<String>().cloned())
                        .unwrap_or_else(|| "a panic".into());
                    Err(Error::new(format!("the handler panicked: {m}")))
                }
                Err(e) => Err(Error::new(format!("the handler was stopped: {e}"))),
            };
            ticker.abort();
            task_ctx.flush().await;
            // Decided under the lock the answering side takes: either the waiting request
            // gets the outcome, or it already answered 202 and the outcome goes by callback.
            let leftover = {
                let p = task_phase.lock().unwrap();
                if *p == Phase::Waiting { tx.send(outcome).err() } else { Some(outcome) }
            };
            if let Some(outcome) = leftover {
                send_result(&task_inner, &task_ctx, outcome).await;
            }
            task_inner.running.lock().unwrap().remove(&task_key);
            task_inner.idle.notify_waiters();
        });

        let budget = entry.options.budget.unwrap_or(inner.sync_budget);
        let mode = entry.options.mode;
        let budget_spent = async move {
            match mode {
                Mode::Async => {}
                Mode::Sync => std::future::pending::<()>().await,
                Mode::Auto => tokio::time::sleep(budget).await,
            }
        };
        tokio::select! {
            o = &mut rx => return o.map(answer_of).unwrap_or_else(|_| lost()),
            _ = budget_spent => {}
            _ = answer_later.notified() => {}
        }
        let mut p = phase.lock().unwrap();
        match rx.try_recv() {
            Ok(o) => answer_of(o),
            Err(oneshot::error::TryRecvError::Empty) => {
                *p = Phase::Async;
                Stored { status: 202, body: None }
            }
            Err(oneshot::error::TryRecvError::Closed) => lost(),
        }
    }

    /// Verify and handle one cancel (`POST <address>/cancel`).
    pub async fn handle_cancel(&self, headers: &HeaderMap, body: Bytes) -> Response {
        let inner = &self.inner;
        if let Err(e) = verify::verify(
            &inner.keys,
            header_str(headers, signing::HEADER_ID),
            header_str(headers, signing::HEADER_TIMESTAMP),
            header_str(headers, signing::HEADER_SIGNATURE),
            &body,
            verify::now_secs(),
        ) {
            return code(401, e.code(), &e.to_string());
        }
        let cancel: Cancel = match serde_json::from_slice(&body) {
            Ok(c) => c,
            Err(e) => return code(400, "bad_request", &format!("not a cancel: {e}")),
        };
        let key: RunKey = (cancel.run_id, cancel.shard.unwrap_or(0), cancel.attempt);
        let token = inner.running.lock().unwrap().get(&key).cloned();
        match token {
            Some(t) => t.cancel(),
            None => {
                // It may arrive before its delivery: remember it briefly.
                let mut cancels = inner.recent_cancels.lock().unwrap();
                let now = Instant::now();
                cancels.retain(|_, at| now.duration_since(*at) < Duration::from_secs(600));
                if cancels.len() < 10_000 {
                    cancels.insert(key, now);
                }
            }
        }
        Stored::json(200, json!({"ok": true})).response()
    }
}

fn header_str<'a>(h: &'a HeaderMap, name: &str) -> Option<&'a str> {
    h.get(name).and_then(|v| v.to_str().ok())
}

/// The signed result callback after a `202`, retried on network errors and `5xx`.
async fn send_result(inner: &Inner, ctx: &Context, outcome: Result<Value, Error>) {
    let Some(calls) = inner.calls.clone() else {
        tracing::warn!(run_id = ctx.run_id(), "no scheduler URL: the result of an answered-later run is lost");
        return;
    };
    let path = format!("/api/v1/runs/{}/result", ctx.run_id());
    let (status, output, message, retry) = match &outcome {
        Ok(v) => (AnswerStatus::Succeeded, Some(v), None, None),
        Err(e) => (AnswerStatus::Failed, None, Some(e.message().to_string()), (!e.retry()).then_some(false)),
    };
    let body = ResultRequest {
        attempt: ctx.attempt(),
        shard: ctx.shard().index,
        status,
        output,
        message: message.as_deref(),
        retry,
    };
    let mut delay = Duration::from_millis(250);
    for _ in 0..8 {
        match calls.post(&path, &body).await {
            Ok((s, _)) if (200..300).contains(&s) => return,
            Ok((413, answer)) => {
                let message = format!(
                    "the output is too large for Sundial: {}",
                    answer.get("message").and_then(Value::as_str).unwrap_or("413")
                );
                let smaller = ResultRequest {
                    attempt: body.attempt,
                    shard: body.shard,
                    status: AnswerStatus::Failed,
                    output: None,
                    message: Some(&message),
                    retry: Some(false),
                };
                return post_once(&calls, &path, &smaller).await;
            }
            Ok((s, answer)) if s < 500 => {
                tracing::warn!(run_id = ctx.run_id(), status = s, %answer, "result refused");
                return;
            }
            Ok((s, _)) => tracing::warn!(run_id = ctx.run_id(), status = s, "result not accepted yet"),
            Err(e) => tracing::warn!(run_id = ctx.run_id(), error = %e, "result not sent yet"),
        }
        tokio::time::sleep(delay).await;
        delay = (delay * 2).min(Duration::from_secs(5));
    }
    tracing::error!(run_id = ctx.run_id(), "gave up sending the result");
}

async fn post_once(calls: &Calls, path: &str, body: &ResultRequest<'_>) {
    if let Err(e) = calls.post(path, body).await {
        tracing::warn!(error = %e, "result not sent");
    }
}

async fn delivery_route(State(ex): State<Executor>, headers: HeaderMap, body: Bytes) -> Response {
    ex.handle_delivery(&headers, body).await
}

async fn cancel_route(State(ex): State<Executor>, headers: HeaderMap, body: Bytes) -> Response {
    ex.handle_cancel(&headers, body).await
}
