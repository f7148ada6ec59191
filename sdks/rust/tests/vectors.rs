//! The shared conformance vectors (`sdks/vectors/*.json`, the files every SDK loads), and
//! the executor's answers driven in-process with real signatures: no Sundial needed.

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::http::{HeaderMap, HeaderName, HeaderValue, Request};
use serde_json::{Value, json};
use sundial_sdk::protocol::{Answer, AnswerStatus, Delivery};
use sundial_sdk::verify;
use sundial_sdk::{Context, Error, Executor, HandlerOptions};
use tokio::sync::mpsc;
use tower::ServiceExt as _;

fn opt<'a>(v: &'a Value, k: &str) -> Option<&'a str> {
    v.get(k).and_then(Value::as_str)
}

#[test]
fn signing_vectors_sign() {
    let v = common::vector("signing.json");
    assert_eq!(v["version"], 1);
    assert_eq!(v["tolerance_secs"].as_i64(), Some(verify::TOLERANCE_SECS));
    let cases = v["sign"].as_array().unwrap();
    assert!(cases.len() >= 3);
    for c in cases {
        let got = verify::sign(
            opt(c, "secret").unwrap(),
            opt(c, "id").unwrap(),
            c["timestamp"].as_i64().unwrap(),
            opt(c, "body").unwrap().as_bytes(),
        )
        .unwrap();
        assert_eq!(got, c["signature"].as_str().unwrap(), "sign case {}", c["name"]);
    }
}

#[test]
fn signing_vectors_verify() {
    let v = common::vector("signing.json");
    let cases = v["verify"].as_array().unwrap();
    assert!(cases.len() >= 10);
    for c in cases {
        let secrets: Vec<String> =
            c["secrets"].as_array().unwrap().iter().map(|s| s.as_str().unwrap().to_string()).collect();
        let keys = verify::parse_secrets(&secrets).unwrap();
        let h = &c["headers"];
        let got = verify::verify(
            &keys,
            opt(h, "webhook-id"),
            opt(h, "webhook-timestamp"),
            opt(h, "webhook-signature"),
            opt(c, "body").unwrap().as_bytes(),
            c["now"].as_i64().unwrap(),
        );
        let name = &c["name"];
        if c["ok"].as_bool().unwrap() {
            assert_eq!(got, Ok(()), "verify case {name}");
        } else {
            let err = got.expect_err(&format!("verify case {name} must fail"));
            assert_eq!(Some(err.code()), c["error"].as_str(), "verify case {name}: {err}");
        }
    }
    // Every code of the protocol appears.
    let codes: Vec<&str> = cases.iter().filter_map(|c| c["error"].as_str()).collect();
    for code in ["missing_header", "bad_timestamp", "stale_timestamp", "future_timestamp", "bad_signature"] {
        assert!(codes.contains(&code), "a vector for {code}");
    }
}

/// The delivery headers of a vector, re-signed now (same id and bytes) so the executor's
/// real clock accepts them; the original signature is checked at the vector's `now`.
fn resigned(d: &Value, secret: &str, now_of_vector: i64) -> HeaderMap {
    let raw = d["raw_body"].as_str().unwrap();
    let h = &d["headers"];
    let keys = verify::parse_secrets(&[secret]).unwrap();
    assert_eq!(
        verify::verify(
            &keys,
            opt(h, "webhook-id"),
            opt(h, "webhook-timestamp"),
            opt(h, "webhook-signature"),
            raw.as_bytes(),
            now_of_vector
        ),
        Ok(()),
        "the vector {} verifies as given",
        d["name"]
    );
    let mut headers = HeaderMap::new();
    for (k, v) in h.as_object().unwrap() {
        headers
            .insert(HeaderName::from_bytes(k.as_bytes()).unwrap(), HeaderValue::from_str(v.as_str().unwrap()).unwrap());
    }
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs() as i64;
    let id = opt(h, "webhook-id").unwrap();
    headers.insert("webhook-timestamp", HeaderValue::from_str(&now.to_string()).unwrap());
    headers.insert(
        "webhook-signature",
        HeaderValue::from_str(&verify::signature_header(&keys, id, now, raw.as_bytes())).unwrap(),
    );
    headers
}

#[tokio::test]
async fn delivery_vectors_reach_the_handler_as_documented() {
    let v = common::vector("deliveries.json");
    let secret = v["secret"].as_str().unwrap().to_string();
    let now = v["now"].as_i64().unwrap();
    let (tx, mut rx) = mpsc::unbounded_channel::<Value>();
    let mut builder = Executor::builder().secret(&secret);
    let handlers: Vec<String> = v["deliveries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["body"]["handler"].as_str().unwrap_or("").to_string())
        .collect();
    for h in &handlers {
        let tx = tx.clone();
        builder = builder.handler(h, move |ctx: Context, params: Value| {
            let tx = tx.clone();
            async move {
                assert_eq!(&params, ctx.params());
                let seen = json!({
                    "run_id": ctx.run_id(), "job_id": ctx.job_id(), "job": ctx.job(), "handler": ctx.handler(),
                    "attempt": ctx.attempt(), "params": params, "scheduled_at": ctx.scheduled_at(),
                    "trigger": ctx.trigger(), "shard": ctx.shard(),
                    "parent_run_id": ctx.parent().map(|p| p.run_id.clone()),
                    "parent_output": ctx.parent_output(),
                    "parents": ctx.parents(),
                    "chain_params": ctx.chain_params(),
                });
                assert!(ctx.scheduled_at_utc().is_some());
                tx.send(seen).unwrap();
                Ok(json!({"ok": true}))
            }
        });
    }
    let ex = builder.build().unwrap();
    for d in v["deliveries"].as_array().unwrap() {
        // The body parses as the server's own Delivery type and re-serialises to the same JSON.
        let parsed: Delivery = serde_json::from_str(d["raw_body"].as_str().unwrap()).unwrap();
        assert_eq!(serde_json::to_value(&parsed).unwrap(), d["body"], "{}", d["name"]);
        let headers = resigned(d, &secret, now);
        let resp = ex.handle_delivery(&headers, Bytes::from(d["raw_body"].as_str().unwrap().to_string())).await;
        assert_eq!(resp.status(), 200, "{}", d["name"]);
        let body = axum::body::to_bytes(resp.into_body(), 1 << 20).await.unwrap();
        let answer: Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(answer, json!({"status": "succeeded", "output": {"ok": true}}), "{}", d["name"]);
        let seen = rx.recv().await.unwrap();
        assert_eq!(seen, d["expect"], "context of {}", d["name"]);
    }
}

#[test]
fn answer_vectors_are_the_answer_type() {
    let v = common::vector("deliveries.json");
    for a in v["answers"].as_array().unwrap() {
        let (status, body, meaning) = (a["status"].as_u64().unwrap(), &a["body"], a["meaning"].as_str().unwrap());
        match meaning {
            "succeeded" | "failed" if (200..300).contains(&status) && status != 202 => {
                if body.is_null() {
                    assert_eq!(meaning, "succeeded", "an empty 2xx is success");
                    continue;
                }
                match serde_json::from_value::<Answer>(body.clone()) {
                    Ok(ans) => {
                        let failed = ans.status == Some(AnswerStatus::Failed);
                        assert_eq!(failed, meaning == "failed", "{}", a["name"]);
                    }
                    Err(_) => assert_eq!(meaning, "failed", "{}: a body not of the Answer shape fails", a["name"]),
                }
            }
            "async" => assert_eq!(status, 202),
            "handler_retired" => assert_eq!((status, body["code"].as_str()), (410, Some("handler_retired"))),
            "executor_offline" => assert_eq!((status, body["code"].as_str()), (503, Some("executor_offline"))),
            _ => assert!(status >= 300, "{}", a["name"]),
        }
    }
}

const SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";

fn delivery_body(handler: &str, params: Value, run: &str, attempt: i64) -> String {
    serde_json::to_string(&json!({
        "run_id": run, "job_id": "job_1", "job": "j", "handler": handler, "params": params, "attempt": attempt,
        "scheduled_at": "2026-11-27T00:00:00.000Z", "trigger": "manual", "shard": {"index": 0, "total": 1}
    }))
    .unwrap()
}

fn signed(secret: &str, id: &str, body: &str, ts_offset: i64) -> Request<Body> {
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs() as i64 + ts_offset;
    let sig = verify::sign(secret, id, now, body.as_bytes()).unwrap();
    Request::post("/")
        .header("content-type", "application/json")
        .header("webhook-id", id)
        .header("webhook-timestamp", now.to_string())
        .header("webhook-signature", sig)
        .body(Body::from(body.to_string()))
        .unwrap()
}

async fn answer(router: &axum::Router, req: Request<Body>) -> (u16, Value) {
    let resp = router.clone().oneshot(req).await.unwrap();
    let status = resp.status().as_u16();
    let body = axum::body::to_bytes(resp.into_body(), 1 << 20).await.unwrap();
    (status, serde_json::from_slice(&body).unwrap_or(Value::Null))
}

#[derive(serde::Deserialize, Debug)]
struct Order {
    id: u64,
    #[serde(default)]
    note: Option<String>,
}

#[tokio::test]
async fn the_router_verifies_remembers_and_answers() {
    let calls = Arc::new(AtomicUsize::new(0));
    let c = calls.clone();
    let ex = Executor::builder()
        .secret("whsec_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA")
        .secret(SECRET) // several secrets: either verifies
        .handler("order", move |_ctx: Context, o: Order| {
            let c = c.clone();
            async move {
                let n = c.fetch_add(1, Ordering::SeqCst) + 1;
                Ok(json!({"id": o.id, "note": o.note, "call": n}))
            }
        })
        .handler("hopeless", |_ctx: Context, _p: Value| async move { Err::<Value, _>(Error::no_retry("cannot work")) })
        .handler("flaky", |_ctx: Context, _p: Value| async move {
            let n: i32 = "x".parse()?; // `?` on any error: an ordinary (retried) failure
            Ok::<_, Error>(n)
        })
        .handler_with("later", HandlerOptions::asynchronous(), |_ctx: Context, _p: Value| async move { Ok(1) })
        .handler_with(
            "slow",
            HandlerOptions::budget(Duration::from_millis(100)),
            |_ctx: Context, _p: Value| async move {
                tokio::time::sleep(Duration::from_millis(400)).await;
                Ok(2)
            },
        )
        .build()
        .unwrap();
    let router = ex.router();

    // A good delivery, then the same webhook-id again: the first answer, the handler ran once.
    let body = delivery_body("order", json!({"id": 7}), "run_a", 1);
    let first = answer(&router, signed(SECRET, "msg_run_a_0_1", &body, 0)).await;
    assert_eq!(first, (200, json!({"status": "succeeded", "output": {"id": 7, "note": null, "call": 1}})));
    let again = answer(&router, signed(SECRET, "msg_run_a_0_1", &body, 0)).await;
    assert_eq!(again, first);
    assert_eq!(calls.load(Ordering::SeqCst), 1);
    // A new attempt is a new webhook-id: it runs.
    let retry = answer(&router, signed(SECRET, "msg_run_a_0_2", &body, 0)).await;
    assert_eq!(retry.1["output"]["call"], 2);

    // Refusals, with their codes.
    let (s, b) = answer(&router, signed("whsec_BBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBB", "msg_x_0_1", &body, 0)).await;
    assert_eq!((s, b["code"].as_str()), (401, Some("bad_signature")));
    let (s, b) = answer(&router, signed(SECRET, "msg_x_0_1", &body, -301)).await;
    assert_eq!((s, b["code"].as_str()), (401, Some("stale_timestamp")));
    let (s, b) = answer(&router, signed(SECRET, "msg_x_0_1", &body, 301)).await;
    assert_eq!((s, b["code"].as_str()), (401, Some("future_timestamp")));
    let mut req = signed(SECRET, "msg_x_0_1", &body, 0);
    req.headers_mut().remove("webhook-id");
    let (s, b) = answer(&router, req).await;
    assert_eq!((s, b["code"].as_str()), (401, Some("missing_header")));
    assert_eq!(calls.load(Ordering::SeqCst), 2, "no refused delivery reached the handler");

    // Params that do not match the handler's type: failed, not retried, naming the field.
    let bad = delivery_body("order", json!({"id": "seven"}), "run_b", 1);
    let (s, b) = answer(&router, signed(SECRET, "msg_run_b_0_1", &bad, 0)).await;
    assert_eq!(s, 200);
    assert_eq!(b["status"], "failed");
    assert_eq!(b["retry"], false);
    let m = b["message"].as_str().unwrap();
    assert!(m.starts_with("params do not match handler `order`: id: invalid type"), "{m}");

    // Error::no_retry vs an ordinary error.
    let (_, b) =
        answer(&router, signed(SECRET, "msg_run_c_0_1", &delivery_body("hopeless", json!({}), "run_c", 1), 0)).await;
    assert_eq!(b, json!({"status": "failed", "message": "cannot work", "retry": false}));
    let (_, b) =
        answer(&router, signed(SECRET, "msg_run_d_0_1", &delivery_body("flaky", json!({}), "run_d", 1), 0)).await;
    assert_eq!(b, json!({"status": "failed", "message": "invalid digit found in string"}));

    // Mode async: 202 at once; a budget exceeded: 202; both remembered as such.
    let (s, _) =
        answer(&router, signed(SECRET, "msg_run_e_0_1", &delivery_body("later", json!({}), "run_e", 1), 0)).await;
    assert_eq!(s, 202);
    let (s, _) =
        answer(&router, signed(SECRET, "msg_run_f_0_1", &delivery_body("slow", json!({}), "run_f", 1), 0)).await;
    assert_eq!(s, 202);
    let (s, _) =
        answer(&router, signed(SECRET, "msg_run_f_0_1", &delivery_body("slow", json!({}), "run_f", 1), 0)).await;
    assert_eq!(s, 202, "the repeat gets the first answer");

    // A handler it does not serve, or retired: 410.
    let (s, b) =
        answer(&router, signed(SECRET, "msg_run_g_0_1", &delivery_body("nope", json!({}), "run_g", 1), 0)).await;
    assert_eq!((s, b["code"].as_str()), (410, Some("handler_retired")));
    ex.retire("order");
    let (s, b) = answer(&router, signed(SECRET, "msg_run_h_0_1", &body, 0)).await;
    assert_eq!((s, b["code"].as_str()), (410, Some("handler_retired")));
    assert_eq!(ex.handlers(), vec!["flaky", "hopeless", "later", "slow"]);

    // Draining: new deliveries 503, a repeat still gets its first answer.
    ex.drain();
    let (s, b) =
        answer(&router, signed(SECRET, "msg_run_i_0_1", &delivery_body("flaky", json!({}), "run_i", 1), 0)).await;
    assert_eq!((s, b["code"].as_str()), (503, Some("executor_offline")));
    let repeat = answer(&router, signed(SECRET, "msg_run_a_0_1", &body, 0)).await;
    assert_eq!(repeat, first);
}

#[tokio::test]
async fn a_cancel_reaches_the_running_handler_and_one_before_its_delivery_is_remembered() {
    let (tx, mut rx) = mpsc::unbounded_channel::<(String, bool)>();
    let ex = Executor::builder()
        .secret(SECRET)
        .handler("wait", move |ctx: Context, _p: Value| {
            let tx = tx.clone();
            async move {
                ctx.answer_later();
                let cancelled = tokio::select! {
                    _ = ctx.cancelled() => true,
                    _ = tokio::time::sleep(Duration::from_secs(10)) => false,
                };
                tx.send((ctx.run_id().to_string(), cancelled)).unwrap();
                Ok(cancelled)
            }
        })
        .build()
        .unwrap();
    let router = ex.router();
    let (s, _) =
        answer(&router, signed(SECRET, "msg_run_w_0_1", &delivery_body("wait", json!({}), "run_w", 1), 0)).await;
    assert_eq!(s, 202, "answer_later");
    assert_eq!(ex.running_runs(), vec!["run_w".to_string()]);
    let cancel = |run: &str| {
        let body = json!({"run_id": run, "attempt": 1}).to_string();
        let mut r = signed(SECRET, &format!("msg_cancel_{run}"), &body, 0);
        *r.uri_mut() = "/cancel".parse().unwrap();
        r
    };
    let (s, _) = answer(&router, cancel("run_w")).await;
    assert_eq!(s, 200);
    let got = tokio::time::timeout(Duration::from_secs(5), rx.recv()).await.unwrap().unwrap();
    assert_eq!(got, ("run_w".to_string(), true));

    // A cancel that arrives before its delivery: the handler starts already cancelled.
    let (s, _) = answer(&router, cancel("run_v")).await;
    assert_eq!(s, 200);
    let (s, _) =
        answer(&router, signed(SECRET, "msg_run_v_0_1", &delivery_body("wait", json!({}), "run_v", 1), 0)).await;
    assert!(s == 202 || s == 200, "{s}"); // it may be done before the answer_later() is seen
    let got = tokio::time::timeout(Duration::from_secs(5), rx.recv()).await.unwrap().unwrap();
    assert_eq!(got, ("run_v".to_string(), true));

    // An unsigned cancel is refused.
    let mut r = cancel("run_x");
    r.headers_mut().insert("webhook-signature", HeaderValue::from_static("v1,AAAA"));
    let (s, b) = answer(&router, r).await;
    assert_eq!((s, b["code"].as_str()), (401, Some("bad_signature")));
}

#[test]
fn the_readme_executor_is_the_compiled_example_in_ten_lines() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let readme = std::fs::read_to_string(dir.join("README.md")).unwrap();
    let start = readme.find("```rust\n").expect("a rust block") + "```rust\n".len();
    let block = &readme[start..start + readme[start..].find("```\n").unwrap()];
    let example = std::fs::read_to_string(dir.join("examples/hello.rs")).unwrap();
    assert_eq!(block, example, "the README's five-minute executor is examples/hello.rs (compiled by cargo test)");
    let lines = example.lines().filter(|l| !l.trim().is_empty()).count();
    assert!(lines <= 10, "{lines} lines");
}

#[tokio::test]
async fn a_repeat_arriving_while_the_first_still_runs_gets_the_same_answer() {
    let calls = Arc::new(AtomicUsize::new(0));
    let c = calls.clone();
    let ex = Executor::builder()
        .secret(SECRET)
        .handler("slowish", move |_ctx: Context, _p: Value| {
            let c = c.clone();
            async move {
                tokio::time::sleep(Duration::from_millis(300)).await;
                Ok(c.fetch_add(1, Ordering::SeqCst) + 1)
            }
        })
        .build()
        .unwrap();
    let router = ex.router();
    let body = delivery_body("slowish", json!({}), "run_s", 1);
    let (r, b) = (router.clone(), body.clone());
    let first = tokio::spawn(async move { answer(&r, signed(SECRET, "msg_run_s_0_1", &b, 0)).await });
    tokio::time::sleep(Duration::from_millis(50)).await;
    let second = answer(&router, signed(SECRET, "msg_run_s_0_1", &body, 0)).await;
    let first = first.await.unwrap();
    assert_eq!(first, (200, json!({"status": "succeeded", "output": 1})));
    assert_eq!(second, first);
    assert_eq!(calls.load(Ordering::SeqCst), 1);
}
