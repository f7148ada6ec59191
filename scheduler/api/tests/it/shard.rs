//! The `sharding` route end to end: one run broadcast to every online executor (real
//! signing executors on 127.0.0.1:0), each shard with its own attempts and retries,
//! results by 200 or signed callback, the run following its shards.

use reqwest::StatusCode;
use serde_json::{Value, json};
use sundial_core::clock::Clock;

use crate::executor::{Answer, TestExecutor, signed_headers};
use crate::helpers::*;

crate::on_both_databases!(
    shards_are_broadcast_signed_and_succeed_together,
    a_failed_shard_retries_alone_after_its_backoff,
    retry_now_sends_a_waiting_shard_at_once,
    a_shard_out_of_retries_fails_the_run_and_the_others_are_cancelled,
    shard_results_by_callback_are_checked_per_shard_attempt,
    a_shard_past_its_deadline_is_cancelled_then_retried,
    no_online_executor_fails_the_attempt_and_a_retry_freezes_the_shards,
    a_redelivered_sharded_run_resends_only_unanswered_shards_with_the_same_ids,
    cancelling_a_sharded_run_cancels_every_shard_still_out,
    a_shard_whose_executor_went_offline_retries_on_another,
    a_shard_retry_committed_but_never_sent_times_out_and_retries,
);

struct Setup {
    key: String,
    app_id: String,
    secret: String,
    /// Executors in shard order.
    execs: Vec<TestExecutor>,
    /// Their ids as the router sees them (`static:<url>` for the static endpoint).
    exec_ids: Vec<String>,
}

/// An app with `registered` executors serving `invoice.run` (registered one ms apart, so
/// shard index = registration order), after one static endpoint if `with_static`.
async fn setup(app: &TestApp, with_static: bool, registered: usize) -> Setup {
    let t = app.tenant("acme").await;
    let (s, a) = app.post("/api/v1/apps", &t.admin, json!({"name": "billing"})).await;
    assert_eq!(s, StatusCode::CREATED, "{a}");
    let mut setup = Setup {
        key: t.admin,
        app_id: a["id"].as_str().unwrap().into(),
        secret: a["secret"].as_str().unwrap().into(),
        execs: Vec::new(),
        exec_ids: Vec::new(),
    };
    if with_static {
        let e = TestExecutor::start(&setup.secret, app.clock.clone()).await;
        let (s, _) = app.patch("/api/v1/apps/billing", &setup.key, json!({"endpoints": [e.url]})).await;
        assert_eq!(s, StatusCode::OK);
        setup.exec_ids.push(format!("static:{}", e.url));
        setup.execs.push(e);
    }
    for i in 0..registered {
        let e = TestExecutor::start(&setup.secret, app.clock.clone()).await;
        app.clock.advance(1);
        let body = json!({"address": e.url, "name": format!("worker-{i}"), "handlers": ["invoice.run"]});
        let (s, r) = call(app, &setup, "/api/v1/executors/register", &format!("reg-{i}"), body).await;
        assert_eq!(s, StatusCode::OK, "{r}");
        setup.exec_ids.push(r["executor_id"].as_str().unwrap().into());
        setup.execs.push(e);
    }
    setup
}

/// A signed executor → scheduler call.
async fn call(app: &TestApp, s: &Setup, path: &str, msg_id: &str, body: Value) -> (StatusCode, Value) {
    let bytes = serde_json::to_vec(&body).unwrap();
    let mut req = app.http.post(format!("{}{}", app.base, path)).body(bytes.clone());
    for (k, v) in signed_headers(&s.secret, &s.app_id, msg_id, &bytes, app.clock.now_ms() / 1000) {
        req = req.header(k, v);
    }
    let resp = req.send().await.unwrap();
    let status = resp.status();
    (status, resp.json().await.unwrap_or(Value::Null))
}

async fn result(app: &TestApp, s: &Setup, run_id: &str, msg_id: &str, body: Value) -> (StatusCode, Value) {
    call(app, s, &format!("/api/v1/runs/{run_id}/result"), msg_id, body).await
}

fn sharded(name: &str, extra: Value) -> Value {
    let mut body = json!({"name": name, "app": "billing", "handler": "invoice.run", "route": "sharding",
        "params": {"batch": 7}, "schedule": {"kind": "manual"}});
    for (k, v) in extra.as_object().unwrap() {
        body[k] = v.clone();
    }
    body
}

fn retry(max_retries: i64) -> Value {
    json!({"failure": {"policy": "retry", "max_retries": max_retries,
        "backoff": {"kind": "fixed", "base_ms": 1000, "jitter": false}}})
}

async fn trigger(app: &TestApp, key: &str, job: &Value) -> String {
    let (st, r) = app.post(&format!("/api/v1/jobs/{}/trigger", job["id"].as_str().unwrap()), key, json!({})).await;
    assert_eq!(st, StatusCode::CREATED, "{r}");
    r["id"].as_str().unwrap().to_string()
}

async fn detail(app: &TestApp, key: &str, run_id: &str) -> Value {
    let (s, v) = app.get(&format!("/api/v1/runs/{run_id}"), key).await;
    assert_eq!(s, StatusCode::OK, "{v}");
    v
}

fn shard_states(d: &Value) -> Vec<String> {
    d["shards"].as_array().unwrap().iter().map(|s| s["state"].as_str().unwrap().to_string()).collect()
}

fn header(r: &crate::executor::Received, name: &str) -> String {
    r.headers[name].to_str().unwrap().to_string()
}

async fn shards_are_broadcast_signed_and_succeed_together(app: &TestApp) {
    // A static endpoint counts as one online executor: 1 static + 2 registered = 3 shards.
    let s = setup(app, true, 2).await;
    for (i, e) in s.execs.iter().enumerate() {
        e.then(Answer::Ok(json!({"part": i})));
    }
    let child = app
        .job(
            &s.key,
            json!({"name": "after", "app": "billing", "handler": "invoice.run",
        "route": "first", "schedule": {"kind": "manual"}}),
        )
        .await;
    let job = app.job(&s.key, sharded("split", json!({"children": [child["id"]]}))).await;
    let run_id = trigger(app, &s.key, &job).await;
    app.engine.tick().await.unwrap();
    for (i, e) in s.execs.iter().enumerate() {
        let d = e.deliveries();
        assert_eq!(d.len(), 1, "executor {i}: one shard each");
        let r = &d[0];
        assert!(r.signature_ok, "signed with the app secret");
        assert_eq!(header(r, "sundial-shard"), format!("{i}/3"));
        assert_eq!(header(r, "webhook-id"), format!("msg_{run_id}_{i}_1"));
        assert_eq!(header(r, "sundial-run-id"), run_id);
        assert_eq!(header(r, "sundial-attempt"), "1");
        assert_eq!(r.body["shard"], json!({"index": i, "total": 3}));
        assert_eq!((r.body["run_id"].as_str(), r.body["attempt"].as_i64()), (Some(run_id.as_str()), Some(1)));
        assert_eq!(r.body["params"], json!({"batch": 7}));
    }
    let d = detail(app, &s.key, &run_id).await;
    assert_eq!((d["state"].clone(), d["shard_total"].clone()), (json!("succeeded"), json!(3)), "{d}");
    let parts = json!([{"part": 0}, {"part": 1}, {"part": 2}]);
    assert_eq!(d["output"], parts, "the shards' outputs in index order");
    let shards = d["shards"].as_array().unwrap();
    assert_eq!(shards.len(), 3);
    for (i, sh) in shards.iter().enumerate() {
        assert_eq!(
            (sh["index"].as_i64(), sh["state"].as_str(), sh["attempt"].as_i64()),
            (Some(i as i64), Some("succeeded"), Some(1))
        );
        assert_eq!(sh["executor_id"], s.exec_ids[i].as_str());
        assert_eq!(sh["address"], s.execs[i].url.as_str());
        assert_eq!(sh["output"], json!({"part": i}));
        assert!(sh["started_at"].is_string() && sh["finished_at"].is_string() && sh["deadline_at"].is_string());
    }
    let attempts = d["attempts"].as_array().unwrap();
    assert_eq!(attempts.iter().map(|a| a["shard"].as_i64().unwrap()).collect::<Vec<_>>(), [0, 1, 2]);
    for a in attempts {
        assert_eq!(a["state"], "succeeded");
        assert_eq!(a["trail"].as_array().unwrap().last().unwrap()["outcome"], "delivered", "{a}");
    }
    // The child fires once, after all shards, with the array of outputs.
    app.engine.tick().await.unwrap();
    app.engine.tick().await.unwrap();
    let child_deliveries: Vec<_> =
        s.execs.iter().flat_map(|e| e.deliveries()).filter(|r| r.body["job_id"] == child["id"]).collect();
    assert_eq!(child_deliveries.len(), 1);
    assert_eq!(child_deliveries[0].body["parent"], json!({"run_id": run_id, "output": parts}));
    assert_eq!(child_deliveries[0].body["shard"], json!({"index": 0, "total": 1}), "an unsharded child");
}

async fn a_failed_shard_retries_alone_after_its_backoff(app: &TestApp) {
    let s = setup(app, false, 3).await;
    s.execs[1].then(Answer::Status(500, json!({"code": "boom"})));
    let job = app.job(&s.key, sharded("flaky", retry(2))).await;
    let run_id = trigger(app, &s.key, &job).await;
    let t0 = app.clock.now_ms();
    app.engine.tick().await.unwrap();
    let d = detail(app, &s.key, &run_id).await;
    assert_eq!(d["state"], "running", "the run waits for its retrying shard: {d}");
    assert_eq!(shard_states(&d), ["succeeded", "retrying", "succeeded"]);
    let sh1 = &d["shards"][1];
    assert_eq!((sh1["reason"].clone(), sh1["attempt"].clone()), (json!("error"), json!(1)));
    assert_eq!(sh1["next_attempt_at"], sundial_core::time::rfc3339_utc(t0 + 1000));
    let counts = |s: &Setup| s.execs.iter().map(|e| e.deliveries().len()).collect::<Vec<_>>();
    // An executor joining later (a static endpoint, which sorts first) does not take the shard over.
    let newcomer = TestExecutor::start(&s.secret, app.clock.clone()).await;
    let (st, _) = app.patch("/api/v1/apps/billing", &s.key, json!({"endpoints": [newcomer.url]})).await;
    assert_eq!(st, StatusCode::OK);
    app.clock.advance(999);
    app.engine.tick().await.unwrap();
    assert_eq!(counts(&s), [1, 1, 1], "not before its backoff");
    app.clock.advance(1);
    app.engine.tick().await.unwrap();
    assert_eq!(counts(&s), [1, 2, 1], "only the failed shard is delivered again, to its own executor");
    assert!(newcomer.deliveries().is_empty());
    let again = &s.execs[1].deliveries()[1];
    assert!(again.signature_ok);
    assert_eq!(header(again, "webhook-id"), format!("msg_{run_id}_1_2"), "a new attempt, a new webhook id");
    assert_eq!((header(again, "sundial-attempt"), header(again, "sundial-shard")), ("2".into(), "1/3".into()));
    assert_eq!(
        (again.body["attempt"].clone(), again.body["shard"].clone()),
        (json!(2), json!({"index": 1, "total": 3}))
    );
    let d = detail(app, &s.key, &run_id).await;
    assert_eq!(d["state"], "succeeded", "{d}");
    assert_eq!(d["shards"][1]["attempt"], 2);
    assert_eq!(d["attempt"], 1, "shard retries are not attempts of the whole run");
    let shard1: Vec<(i64, String)> = d["attempts"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|a| a["shard"] == 1)
        .map(|a| (a["attempt"].as_i64().unwrap(), a["state"].as_str().unwrap().to_string()))
        .collect();
    assert_eq!(shard1, [(1, "failed".to_string()), (2, "succeeded".to_string())]);
    let trail =
        d["attempts"].as_array().unwrap().iter().find(|a| a["shard"] == 1 && a["attempt"] == 2).unwrap()["trail"]
            .clone();
    assert_eq!(
        trail.as_array().unwrap().last().unwrap()["executor_id"],
        s.exec_ids[1].as_str(),
        "back to its executor"
    );
    app.clock.advance(10_000);
    app.engine.tick().await.unwrap();
    assert_eq!(counts(&s), [1, 2, 1], "succeeded shards are never redelivered");
}

async fn retry_now_sends_a_waiting_shard_at_once(app: &TestApp) {
    let s = setup(app, false, 2).await;
    s.execs[1].then(Answer::Status(500, json!({"code": "boom"})));
    let mut body = sharded("patient", retry(2));
    body["failure"]["backoff"] = json!({"kind": "fixed", "base_ms": 600_000, "jitter": false});
    let job = app.job(&s.key, body).await;
    let run_id = trigger(app, &s.key, &job).await;
    app.engine.tick().await.unwrap();
    assert_eq!(shard_states(&detail(app, &s.key, &run_id).await), ["succeeded", "retrying"]);
    let path = format!("/api/v1/runs/{run_id}/retry");
    app.clock.advance(1_000);
    app.engine.tick().await.unwrap();
    assert_eq!(s.execs[1].deliveries().len(), 1, "still waiting out its 10 minute backoff");
    let (st, run) = app.post(&path, &s.key, json!({})).await;
    assert_eq!(st, StatusCode::OK, "{run}");
    app.engine.tick().await.unwrap();
    assert_eq!(s.execs[1].deliveries().len(), 2, "the shard went at once");
    assert_eq!(header(&s.execs[1].deliveries()[1], "sundial-attempt"), "2");
    let d = detail(app, &s.key, &run_id).await;
    assert_eq!(d["state"], "succeeded", "{d}");
    assert_eq!(s.execs[0].deliveries().len(), 1, "the succeeded shard is not sent again");
    // Nothing waits any more: 409, with the state named.
    let (st, err) = app.post(&path, &s.key, json!({})).await;
    assert_eq!((st, err["code"].clone()), (StatusCode::CONFLICT, json!("not_retrying")), "{err}");
}

async fn a_shard_out_of_retries_fails_the_run_and_the_others_are_cancelled(app: &TestApp) {
    let s = setup(app, false, 3).await;
    s.execs[0].always(Answer::Accept);
    s.execs[1].always(Answer::Fail("boom"));
    s.execs[2].always(Answer::Accept);
    let job = app.job(&s.key, sharded("doomed", retry(1))).await;
    let run_id = trigger(app, &s.key, &job).await;
    app.engine.tick().await.unwrap();
    assert_eq!(shard_states(&detail(app, &s.key, &run_id).await), ["running", "retrying", "running"]);
    app.clock.advance(1000);
    app.engine.tick().await.unwrap();
    assert_eq!(s.execs[1].deliveries().len(), 2, "one retry, then the budget is spent");
    let d = detail(app, &s.key, &run_id).await;
    assert_eq!((d["state"].clone(), d["reason"].clone()), (json!("failed"), json!("error")), "{d}");
    assert!(d["message"].as_str().unwrap().contains("shard 1"), "{d}");
    assert_eq!(shard_states(&d), ["cancelled", "failed", "cancelled"]);
    // The shards still out get a signed cancel naming their shard; the failed one none.
    for i in [0, 2] {
        let c = s.execs[i].wait_cancels(1).await;
        assert_eq!(c.len(), 1, "executor {i}");
        assert!(c[0].signature_ok);
        assert_eq!(c[0].body, json!({"run_id": run_id, "attempt": 1, "shard": i}));
    }
    assert!(s.execs[1].cancels().is_empty());
    // Their later results are refused and change nothing.
    let (st, v) = result(app, &s, &run_id, "late-0", json!({"attempt": 1, "shard": 0, "status": "succeeded"})).await;
    assert_eq!((st, v["code"].clone()), (StatusCode::CONFLICT, json!("not_current")), "{v}");
    assert_eq!(shard_states(&detail(app, &s.key, &run_id).await), ["cancelled", "failed", "cancelled"]);
}

async fn shard_results_by_callback_are_checked_per_shard_attempt(app: &TestApp) {
    let s = setup(app, false, 3).await;
    for e in &s.execs {
        e.always(Answer::Accept);
    }
    let job = app.job(&s.key, sharded("async", json!({}))).await;
    let run_id = trigger(app, &s.key, &job).await;
    app.engine.tick().await.unwrap();
    let d = detail(app, &s.key, &run_id).await;
    assert_eq!((d["state"].clone(), shard_states(&d)), (json!("running"), vec!["running".to_string(); 3]));
    // A shard index outside 0..3 is refused naming `shard`, and changes nothing.
    for (i, bad) in [3, -1].into_iter().enumerate() {
        let (st, v) =
            result(app, &s, &run_id, &format!("bad-{i}"), json!({"attempt": 1, "shard": bad, "status": "succeeded"}))
                .await;
        assert_eq!((st, v["details"]["field"].clone()), (StatusCode::UNPROCESSABLE_ENTITY, json!("shard")), "{v}");
    }
    assert_eq!(shard_states(&detail(app, &s.key, &run_id).await), vec!["running".to_string(); 3]);
    let ok0 = json!({"attempt": 1, "shard": 0, "status": "succeeded", "output": {"p": 0}});
    let (st, v) = result(app, &s, &run_id, "r0", ok0.clone()).await;
    assert_eq!(st, StatusCode::OK, "{v}");
    assert_eq!(
        (v["state"].clone(), v["shard_state"].clone(), v["duplicate"].clone()),
        (json!("running"), json!("succeeded"), json!(false))
    );
    let (st, v) = result(app, &s, &run_id, "r0-again", ok0).await;
    assert_eq!(
        (st, v["duplicate"].clone(), v["shard_state"].clone()),
        (StatusCode::OK, json!(true), json!("succeeded"))
    );
    // A different result for the finished shard attempt, or a shard attempt that is not current: 409.
    let (st, v) = result(
        app,
        &s,
        &run_id,
        "r0-diff",
        json!({"attempt": 1, "shard": 0, "status": "succeeded", "output": {"p": 9}}),
    )
    .await;
    assert_eq!(
        (st, v["code"].clone(), v["details"]["shard"].clone()),
        (StatusCode::CONFLICT, json!("not_current"), json!(0)),
        "{v}"
    );
    let (st, _) = result(app, &s, &run_id, "r1-a2", json!({"attempt": 2, "shard": 1, "status": "succeeded"})).await;
    assert_eq!(st, StatusCode::CONFLICT);
    // Log lines name their shard.
    let logs_path = format!("/api/v1/runs/{run_id}/logs");
    let logs = |msg: &'static str, body: Value| call(app, &s, &logs_path, msg, body);
    let (st, v) = logs("l1", json!({"attempt": 1, "shard": 1, "lines": [{"message": "half way"}]})).await;
    assert_eq!(st, StatusCode::OK, "{v}");
    let (st, v) = logs("l2", json!({"attempt": 1, "shard": 3, "lines": [{"message": "x"}]})).await;
    assert_eq!((st, v["details"]["field"].clone()), (StatusCode::UNPROCESSABLE_ENTITY, json!("shard")));
    let (st, v) = logs("l3", json!({"attempt": 2, "shard": 1, "lines": [{"message": "x"}]})).await;
    assert_eq!((st, v["details"]["field"].clone()), (StatusCode::UNPROCESSABLE_ENTITY, json!("attempt")));
    // The last shards' results complete the run.
    let (_, v) =
        result(app, &s, &run_id, "r1", json!({"attempt": 1, "shard": 1, "status": "succeeded", "output": 1})).await;
    assert_eq!(v["state"], "running");
    let (_, v) =
        result(app, &s, &run_id, "r2", json!({"attempt": 1, "shard": 2, "status": "succeeded", "output": 2})).await;
    assert_eq!((v["state"].clone(), v["shard_state"].clone()), (json!("succeeded"), json!("succeeded")));
    let d = detail(app, &s.key, &run_id).await;
    assert_eq!(d["output"], json!([{"p": 0}, 1, 2]));
    assert_eq!(d["logs"][0]["shard"], 1);
    assert_eq!(d["logs"][0]["message"], "half way");
    // A run that is not sharded still refuses a shard other than 0.
    let plain = app
        .job(
            &s.key,
            json!({"name": "plain", "app": "billing", "handler": "invoice.run",
        "route": "first", "schedule": {"kind": "manual"}}),
        )
        .await;
    let plain_run = trigger(app, &s.key, &plain).await;
    app.engine.tick().await.unwrap();
    let (st, v) = result(app, &s, &plain_run, "p1", json!({"attempt": 1, "shard": 1, "status": "succeeded"})).await;
    assert_eq!((st, v["details"]["field"].clone()), (StatusCode::UNPROCESSABLE_ENTITY, json!("shard")), "{v}");
    assert_eq!(detail(app, &s.key, &plain_run).await["state"], "running");
}

async fn a_shard_past_its_deadline_is_cancelled_then_retried(app: &TestApp) {
    let s = setup(app, false, 3).await;
    for e in &s.execs {
        e.always(Answer::Accept);
    }
    let mut body = sharded("slow", retry(1));
    body["timeout_ms"] = json!(2000);
    let job = app.job(&s.key, body).await;
    let run_id = trigger(app, &s.key, &job).await;
    app.engine.tick().await.unwrap();
    for i in [0, 2] {
        let (st, v) =
            result(app, &s, &run_id, &format!("ok-{i}"), json!({"attempt": 1, "shard": i, "status": "succeeded"}))
                .await;
        assert_eq!(st, StatusCode::OK, "{v}");
    }
    // Deadline 2 s, reaper grace 5 s.
    app.clock.advance(2000 + 5000);
    assert_eq!(app.engine.reap_once().await.unwrap(), 0, "within the grace period");
    app.clock.advance(1);
    assert_eq!(app.engine.reap_once().await.unwrap(), 1, "one shard, not the whole run");
    let c = s.execs[1].wait_cancels(1).await;
    assert_eq!(c.len(), 1, "the timed-out shard's executor is told to stop");
    assert!(c[0].signature_ok);
    assert_eq!(c[0].body, json!({"run_id": run_id, "attempt": 1, "shard": 1}));
    assert!(s.execs[0].cancels().is_empty() && s.execs[2].cancels().is_empty());
    let d = detail(app, &s.key, &run_id).await;
    assert_eq!(d["state"], "running", "{d}");
    assert_eq!(shard_states(&d), ["succeeded", "retrying", "succeeded"]);
    assert_eq!(d["shards"][1]["reason"], "timeout");
    // Its own retry, then its own result.
    app.clock.advance(1000);
    app.engine.tick().await.unwrap();
    assert_eq!(s.execs.iter().map(|e| e.deliveries().len()).collect::<Vec<_>>(), [1, 2, 1]);
    let (st, _) = result(app, &s, &run_id, "late", json!({"attempt": 1, "shard": 1, "status": "succeeded"})).await;
    assert_eq!(st, StatusCode::CONFLICT, "the timed-out attempt's result is refused");
    let (st, v) = result(app, &s, &run_id, "ok-1", json!({"attempt": 2, "shard": 1, "status": "succeeded"})).await;
    assert_eq!((st, v["state"].clone()), (StatusCode::OK, json!("succeeded")), "{v}");
}

async fn no_online_executor_fails_the_attempt_and_a_retry_freezes_the_shards(app: &TestApp) {
    let s = setup(app, false, 0).await;
    let once = app.job(&s.key, sharded("nobody", json!({"failure": {"policy": "discard"}}))).await;
    let run_id = trigger(app, &s.key, &once).await;
    app.engine.tick().await.unwrap();
    let d = detail(app, &s.key, &run_id).await;
    assert_eq!((d["state"].clone(), d["reason"].clone()), (json!("failed"), json!("no_executor")), "{d}");
    assert_eq!((d["shard_total"].clone(), d["shards"].clone()), (Value::Null, json!([])));
    // With retries, the run's next attempt freezes the executors online by then.
    let job = app.job(&s.key, sharded("later", retry(3))).await;
    let run_id = trigger(app, &s.key, &job).await;
    app.engine.tick().await.unwrap();
    let d = detail(app, &s.key, &run_id).await;
    assert_eq!((d["state"].clone(), d["reason"].clone()), (json!("retrying"), json!("no_executor")), "{d}");
    let mut execs = Vec::new();
    for i in 0..2 {
        let e = TestExecutor::start(&s.secret, app.clock.clone()).await;
        app.clock.advance(1);
        let (st, _) = call(
            app,
            &s,
            "/api/v1/executors/register",
            &format!("reg-{i}"),
            json!({"address": e.url, "handlers": ["invoice.run"]}),
        )
        .await;
        assert_eq!(st, StatusCode::OK);
        execs.push(e);
    }
    app.clock.advance(1000);
    app.engine.tick().await.unwrap();
    let d = detail(app, &s.key, &run_id).await;
    assert_eq!(
        (d["state"].clone(), d["shard_total"].clone(), d["attempt"].clone()),
        (json!("succeeded"), json!(2), json!(2)),
        "{d}"
    );
    for (i, e) in execs.iter().enumerate() {
        let r = &e.deliveries()[0];
        assert_eq!(header(r, "sundial-shard"), format!("{i}/2"));
        assert_eq!(header(r, "webhook-id"), format!("msg_{run_id}_{i}_2"), "a shard's first attempt carries the run's");
    }
}

async fn a_redelivered_sharded_run_resends_only_unanswered_shards_with_the_same_ids(app: &TestApp) {
    use sundial_store::{ClaimParams, DispatchDecision, ShardFreeze, ShardTarget};
    let s = setup(app, false, 3).await;
    let mut body = sharded("recover", json!({}));
    body["timeout_ms"] = json!(1000);
    let job = app.job(&s.key, body).await;
    let run_id = trigger(app, &s.key, &job).await;
    // node_a claims, commits `dispatching` and the frozen shards, sends one shard (202 recorded), and dies.
    let store = app.db.store();
    let now = app.clock.now_ms();
    let claimed = store
        .run_claim(&ClaimParams {
            node_id: "node_a".into(),
            due_before_ms: now,
            now_ms: now,
            lease_until_ms: now + 30_000,
            limit: 10,
            include_schedule: true,
            owned_buckets: sundial_core::affinity::ALL_BUCKETS,
            foreign_due_before_ms: now,
            own_fires_due_before_ms: None,
            skip_tenant: None,
        })
        .await
        .unwrap();
    assert_eq!(claimed.len(), 1);
    let DispatchDecision::Dispatch { run, .. } =
        store.run_dispatch_begin(&run_id, "node_a", now, 30_000).await.unwrap()
    else {
        panic!("not dispatched");
    };
    let targets = s
        .execs
        .iter()
        .zip(&s.exec_ids)
        .map(|(e, id)| ShardTarget { executor_id: id.clone(), address: e.url.clone() })
        .collect();
    let freeze = ShardFreeze {
        run_id: run.id.clone(),
        run_attempt: 1,
        node_id: "node_a".into(),
        targets,
        deadline_ms: now + 1000,
        now_ms: now,
    };
    assert_eq!(store.shard_freeze(&freeze).await.unwrap().unwrap().len(), 3);
    assert!(store.shard_mark_running(&run_id, 1, 1, now).await.unwrap());
    // The survivor does nothing while node_a's lease holds ...
    app.engine.tick().await.unwrap();
    assert!(s.execs.iter().all(|e| e.deliveries().is_empty()));
    // ... then redelivers the same attempt: the unanswered shards, with their webhook ids.
    app.clock.advance(1000 + 30_000 + 1);
    app.engine.tick().await.unwrap();
    for i in [0, 2] {
        let d = s.execs[i].deliveries();
        assert_eq!(d.len(), 1, "executor {i}");
        assert_eq!(header(&d[0], "webhook-id"), format!("msg_{run_id}_{i}_1"));
        assert_eq!(header(&d[0], "sundial-shard"), format!("{i}/3"));
    }
    assert!(s.execs[1].deliveries().is_empty(), "the shard that answered is not sent again");
    let d = detail(app, &s.key, &run_id).await;
    assert_eq!((d["state"].clone(), d["attempt"].clone()), (json!("running"), json!(1)), "{d}");
    assert_eq!(shard_states(&d), ["succeeded", "running", "succeeded"]);
    let (st, v) = result(app, &s, &run_id, "r1", json!({"attempt": 1, "shard": 1, "status": "succeeded"})).await;
    assert_eq!((st, v["state"].clone()), (StatusCode::OK, json!("succeeded")), "{v}");
}

async fn cancelling_a_sharded_run_cancels_every_shard_still_out(app: &TestApp) {
    let s = setup(app, false, 3).await;
    s.execs[0].then(Answer::Ok(json!("done")));
    s.execs[1].always(Answer::Accept);
    s.execs[2].always(Answer::Accept);
    let job = app.job(&s.key, sharded("cancel-me", json!({}))).await;
    let run_id = trigger(app, &s.key, &job).await;
    app.engine.tick().await.unwrap();
    let (st, v) = app.post(&format!("/api/v1/runs/{run_id}/cancel"), &s.key, json!({})).await;
    assert_eq!((st, v["state"].clone()), (StatusCode::OK, json!("cancelled")), "{v}");
    for i in [1, 2] {
        let c = s.execs[i].wait_cancels(1).await;
        assert_eq!(c.len(), 1, "executor {i}");
        assert_eq!(c[0].body, json!({"run_id": run_id, "attempt": 1, "shard": i}));
    }
    assert!(s.execs[0].cancels().is_empty(), "a finished shard has nothing to cancel");
    let d = detail(app, &s.key, &run_id).await;
    assert_eq!(shard_states(&d), ["succeeded", "cancelled", "cancelled"]);
    let (st, _) = result(app, &s, &run_id, "late", json!({"attempt": 1, "shard": 1, "status": "succeeded"})).await;
    assert_eq!(st, StatusCode::CONFLICT);
    // A sharded run whose job was deleted meanwhile ends `cancelled` once a shard is overdue.
    let mut body = sharded("short-lived", json!({}));
    body["timeout_ms"] = json!(1000);
    let job = app.job(&s.key, body).await;
    let run_id = trigger(app, &s.key, &job).await;
    app.engine.tick().await.unwrap();
    let (st, _) = app.delete(&format!("/api/v1/jobs/{}", job["id"].as_str().unwrap()), &s.key).await;
    assert!(st.is_success(), "{st}");
    app.clock.advance(1000 + 5000 + 1);
    app.engine.reap_once().await.unwrap();
    let d = detail(app, &s.key, &run_id).await;
    assert_eq!((d["state"].clone(), d["message"].clone()), (json!("cancelled"), json!("the job was deleted")), "{d}");
    assert_eq!(shard_states(&d), ["succeeded", "cancelled", "cancelled"]);
}

async fn a_shard_whose_executor_went_offline_retries_on_another(app: &TestApp) {
    let s = setup(app, false, 2).await;
    s.execs[1].then(Answer::Status(503, json!({"code": "executor_offline"})));
    let job = app.job(&s.key, sharded("moving", retry(2))).await;
    let run_id = trigger(app, &s.key, &job).await;
    app.engine.tick().await.unwrap();
    let d = detail(app, &s.key, &run_id).await;
    assert_eq!(shard_states(&d), ["succeeded", "retrying"], "{d}");
    let (_, list) = app.get("/api/v1/apps/billing/executors", &s.key).await;
    let states: Vec<&str> = list["items"].as_array().unwrap().iter().map(|e| e["state"].as_str().unwrap()).collect();
    assert_eq!(states, ["online", "offline"], "a 503 marks the executor offline");
    app.clock.advance(1000);
    app.engine.tick().await.unwrap();
    let d0 = s.execs[0].deliveries();
    assert_eq!((d0.len(), s.execs[1].deliveries().len()), (2, 1), "the retry went to the executor still online");
    assert_eq!((header(&d0[1], "sundial-shard"), header(&d0[1], "sundial-attempt")), ("1/2".into(), "2".into()));
    assert_eq!(header(&d0[1], "webhook-id"), format!("msg_{run_id}_1_2"));
    let d = detail(app, &s.key, &run_id).await;
    assert_eq!(d["state"], "succeeded", "{d}");
    assert_eq!(
        (d["shards"][1]["executor_id"].clone(), d["shards"][1]["attempt"].clone()),
        (json!(s.exec_ids[0]), json!(2))
    );
    let a = d["attempts"].as_array().unwrap().iter().find(|a| a["shard"] == 1 && a["attempt"] == 2).unwrap().clone();
    let trail: Vec<(String, String)> = a["trail"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| (t["executor_id"].as_str().unwrap().to_string(), t["outcome"].as_str().unwrap().to_string()))
        .collect();
    assert_eq!(
        trail,
        [
            (s.exec_ids[1].clone(), "offline".to_string()),
            (s.exec_ids[0].clone(), "chosen".to_string()),
            (s.exec_ids[0].clone(), "delivered".to_string())
        ],
        "the dispatch trail says why the shard moved"
    );
}

async fn a_shard_retry_committed_but_never_sent_times_out_and_retries(app: &TestApp) {
    use sundial_store::{ShardRetryBegin, ShardTarget};
    let s = setup(app, false, 2).await;
    s.execs[1].then(Answer::Status(500, json!({})));
    let mut body = sharded("crashy", retry(3));
    body["timeout_ms"] = json!(2000);
    let job = app.job(&s.key, body).await;
    let run_id = trigger(app, &s.key, &job).await;
    app.engine.tick().await.unwrap();
    assert_eq!(shard_states(&detail(app, &s.key, &run_id).await), ["succeeded", "retrying"]);
    // Another node wins the due retry, commits attempt 2 ... and dies before sending it.
    app.clock.advance(1000);
    let now = app.clock.now_ms();
    let begin = ShardRetryBegin {
        run_id: run_id.clone(),
        shard_index: 1,
        attempt: 1,
        target: Some(ShardTarget { executor_id: s.exec_ids[1].clone(), address: s.execs[1].url.clone() }),
        deadline_ms: now + 2000,
        now_ms: now,
    };
    let d = app.db.store().shard_retry_begin(&begin).await.unwrap().expect("started");
    assert_eq!(d.shard.attempt, 2);
    app.engine.tick().await.unwrap();
    assert_eq!(s.execs[1].deliveries().len(), 1, "started elsewhere: not this node's to send");
    // Past its deadline and the grace, the reaper fails it `timeout`; its own policy retries it.
    app.clock.advance(2000 + 5000 + 1);
    assert_eq!(app.engine.reap_once().await.unwrap(), 1);
    assert_eq!(s.execs[1].wait_cancels(1).await[0].body, json!({"run_id": run_id, "attempt": 2, "shard": 1}));
    let d = detail(app, &s.key, &run_id).await;
    assert_eq!(
        (d["shards"][1]["state"].clone(), d["shards"][1]["reason"].clone()),
        (json!("retrying"), json!("timeout"))
    );
    assert_eq!(d["state"], "running");
    app.clock.advance(1000);
    app.engine.tick().await.unwrap();
    let sent = s.execs[1].deliveries();
    assert_eq!(sent.len(), 2);
    assert_eq!(header(&sent[1], "webhook-id"), format!("msg_{run_id}_1_3"));
    assert_eq!(detail(app, &s.key, &run_id).await["state"], "succeeded");
}
