//! Answers by `webhook-id`: what was sent (to repeat it to a redelivery) or the run still
//! in flight (to wait for its answer), time-limited and bounded; the answers themselves.

use std::collections::{HashMap, VecDeque};
use std::time::{Duration, Instant};

use axum::body::Body;
use axum::http::{StatusCode, header};
use axum::response::Response;
use serde_json::{Value, json};
use tokio::sync::watch;

use crate::error::Error;

/// An answer as sent, to repeat it.
#[derive(Debug, Clone)]
pub(super) struct Stored {
    pub(super) status: u16,
    pub(super) body: Option<Value>,
}

impl Stored {
    pub(super) fn json(status: u16, body: Value) -> Self {
        Stored { status, body: Some(body) }
    }
    pub(super) fn response(&self) -> Response {
        let mut b = Response::builder().status(StatusCode::from_u16(self.status).unwrap_or(StatusCode::OK));
        match &self.body {
            Some(v) => {
                b = b.header(header::CONTENT_TYPE, "application/json");
                b.body(Body::from(serde_json::to_vec(v).unwrap_or_default())).unwrap()
            }
            None => b.body(Body::empty()).unwrap(),
        }
    }
}

pub(super) enum Remembered {
    InFlight(watch::Receiver<Option<Stored>>),
    Done(Stored),
}

/// Answers by `webhook-id`, time-limited and bounded.
#[derive(Default)]
pub(super) struct Answers {
    pub(super) by_id: HashMap<String, (Instant, Remembered)>,
    pub(super) order: VecDeque<(Instant, String)>,
}

impl Answers {
    pub(super) fn prune(&mut self, ttl: Duration, max: usize) {
        let now = Instant::now();
        let mut running = Vec::new();
        while let Some((at, id)) = self.order.front().cloned() {
            if now.duration_since(at) <= ttl && self.by_id.len() <= max {
                break;
            }
            self.order.pop_front();
            let still_running = match self.by_id.get(&id) {
                Some((t, r)) if *t == at => matches!(r, Remembered::InFlight(_)),
                _ => continue, // a stale order entry: the id was remembered again later
            };
            if still_running {
                // Never forget one still running: its repeat must not run it again.
                running.push((at, id));
            } else {
                self.by_id.remove(&id);
            }
        }
        for r in running.into_iter().rev() {
            self.order.push_front(r);
        }
    }
}

pub(super) fn code(status: u16, code: &str, message: &str) -> Response {
    Stored::json(status, json!({"code": code, "message": message})).response()
}

pub(super) async fn wait_answer(mut rx: watch::Receiver<Option<Stored>>) -> Stored {
    match rx.wait_for(Option::is_some).await {
        Ok(v) => v.clone().unwrap_or_else(lost),
        Err(_) => lost(),
    }
}

pub(super) fn lost() -> Stored {
    Stored::json(200, json!({"status": "failed", "message": "the executor lost this run's answer"}))
}

pub(super) fn answer_of(outcome: Result<Value, Error>) -> Stored {
    match outcome {
        Ok(output) => Stored::json(200, json!({"status": "succeeded", "output": output})),
        Err(e) if e.retry() => Stored::json(200, json!({"status": "failed", "message": e.message()})),
        Err(e) => Stored::json(200, json!({"status": "failed", "message": e.message(), "retry": false})),
    }
}
