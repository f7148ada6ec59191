//! The SDK against a real `sundial serve` that each test starts (embedded SQLite, port 0):
//! executors register, get fired, answer synchronously and by callback, log, are retried,
//! cancelled and drained; a child run gets its parent's output; a repeated webhook-id is
//! answered from memory; the management client does a round trip and reads typed errors.

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Bytes;
use axum::http::HeaderMap;
use common::{Served, Sundial, finished, manual_job, wait_for};
use serde::Deserialize;
use serde_json::{Value, json};
use sundial_sdk::client::{AppCreate, JobFilter, RunFilter, ScriptCreate, Trigger};
use sundial_sdk::protocol::RunState;
use sundial_sdk::{Client, Context, Error, Executor, HandlerOptions, StreamExt, TryStreamExt};

/// Nothing listens here: the executor must move on to the live scheduler URL.
const DEAD_URL: &str = "http://127.0.0.1:9";

async fn app(api: &Client, name: &str) -> sundial_sdk::client::AppWithSecret {
    api.create_app(&AppCreate { name: name.into(), ..Default::default() }).await.expect("create app")
}

fn builder_for(sundial: &Sundial, app: &sundial_sdk::client::AppWithSecret) -> sundial_sdk::Builder {
    Executor::builder().secret(&app.secret).app_id(&app.app.id).scheduler_url(DEAD_URL).scheduler_url(&sundial.base)
}

fn params(v: Value) -> Trigger {
    Trigger { params: Some(v), at: None }
}

#[derive(Deserialize)]
struct Hello {
    to: String,
}

#[tokio::test]
async fn registers_gets_fired_answers_sync_and_by_callback_logs_and_retries() {
    let sundial = Sundial::start();
    let api = sundial.tenant("rs-basic").await;
    let app = app(&api, "rs-basic").await;
    let attempts = Arc::new(Mutex::new(Vec::new()));
    let seen = attempts.clone();
    let served = Served::start(
        builder_for(&sundial, &app)
            .name("rust-test")
            .handler("hello", |ctx: Context, p: Hello| async move {
                ctx.log(format!("hello {}", p.to));
                ctx.warn("a warning");
                ctx.progress(1, 2, "half way").await;
                Ok(json!({"greeted": p.to, "attempt": ctx.attempt()}))
            })
            .handler_with(
                "slow",
                HandlerOptions::budget(Duration::from_millis(200)),
                |ctx: Context, _p: Value| async move {
                    tokio::time::sleep(Duration::from_millis(700)).await;
                    ctx.log("done slowly");
                    Ok(json!({"slow": true}))
                },
            )
            .handler("flaky", move |ctx: Context, _p: Value| {
                let seen = seen.clone();
                async move {
                    seen.lock().unwrap().push(ctx.attempt());
                    if ctx.attempt() == 1 {
                        return Err(Error::new("the upstream said 500"));
                    }
                    Ok(ctx.attempt())
                }
            })
            .handler("hopeless", |_ctx: Context, _p: Value| async move {
                Err::<(), _>(Error::no_retry("invalid params: day is required"))
            }),
    )
    .await;
    let reg = served.registration();
    assert!(reg.executor_id.starts_with("exe_"), "{reg:?}");
    assert_eq!(reg.jobs_created.len(), 4, "one stopped job per new handler: {reg:?}");

    // Sync: the answer carries the output; the log lines reached the run.
    let job = api.create_job(&manual_job("rs-hello", "rs-basic", "hello", json!({}))).await.unwrap();
    let run = api.trigger_job(&job.id, &params(json!({"to": "world"})), None).await.unwrap();
    let done = finished(&api, &run.id).await;
    assert_eq!(done.run.state, RunState::Succeeded, "{done:?}");
    assert_eq!(done.run.output, Some(json!({"greeted": "world", "attempt": 1})));
    let logs = api.run_logs(&run.id).await.unwrap();
    let lines: Vec<(String, String)> = logs.iter().map(|l| (l.level.clone(), l.message.clone())).collect();
    assert!(lines.contains(&("info".into(), "hello world".into())), "{lines:?}");
    assert!(lines.contains(&("warn".into(), "a warning".into())), "{lines:?}");
    assert!(lines.contains(&("info".into(), "progress 1/2: half way".into())), "{lines:?}");

    // Past its budget: 202, then the signed result callback (with the logs before it).
    let job = api.create_job(&manual_job("rs-slow", "rs-basic", "slow", json!({}))).await.unwrap();
    let run = api.trigger_job(&job.id, &Trigger::default(), None).await.unwrap();
    let done = finished(&api, &run.id).await;
    assert_eq!(done.run.state, RunState::Succeeded, "{done:?}");
    assert_eq!(done.run.output, Some(json!({"slow": true})));
    assert!(done.logs.iter().any(|l| l.message == "done slowly"), "{:?}", done.logs);

    // An ordinary failure is retried as the next attempt; a no_retry one is not.
    let failure = json!({"failure": {"policy": "retry", "max_retries": 3, "backoff": {"kind": "fixed", "base_ms": 200, "jitter": false}}});
    let job = api.create_job(&manual_job("rs-flaky", "rs-basic", "flaky", failure.clone())).await.unwrap();
    let done = finished(&api, &api.trigger_job(&job.id, &Trigger::default(), None).await.unwrap().id).await;
    assert_eq!(done.run.state, RunState::Succeeded, "{done:?}");
    assert_eq!(done.run.attempt, 2);
    assert_eq!(done.run.output, Some(json!(2)));
    assert_eq!(*attempts.lock().unwrap(), vec![1, 2]);
    assert_eq!(done.attempts[0]["state"], "failed");
    assert!(
        done.attempts[0]["message"].as_str().unwrap_or("").contains("the upstream said 500"),
        "{:?}",
        done.attempts
    );

    let job = api.create_job(&manual_job("rs-hopeless", "rs-basic", "hopeless", failure.clone())).await.unwrap();
    let done = finished(&api, &api.trigger_job(&job.id, &Trigger::default(), None).await.unwrap().id).await;
    assert_eq!(done.run.state, RunState::Failed);
    assert_eq!(done.attempts.len(), 1, "not retried: {done:?}");
    assert!(done.run.message.as_deref().unwrap_or("").contains("invalid params: day is required"), "{done:?}");

    // Params that do not match the handler's type: failed at once, naming the field.
    let job = api.create_job(&manual_job("rs-typed", "rs-basic", "hello", failure)).await.unwrap();
    let done = finished(&api, &api.trigger_job(&job.id, &params(json!({"to": 5})), None).await.unwrap().id).await;
    assert_eq!(done.run.state, RunState::Failed);
    assert_eq!(done.attempts.len(), 1, "not retried: {done:?}");
    let m = done.run.message.clone().unwrap_or_default();
    assert!(m.contains("params do not match handler `hello`: to: invalid type"), "{m}");

    served.stop().await;
}

#[tokio::test]
async fn a_cancel_reaches_the_handler_heartbeats_list_the_run_and_shutdown_deregisters() {
    let sundial = Sundial::start();
    let api = sundial.tenant("rs-cancel").await;
    let app = app(&api, "rs-cancel").await;
    let started = Arc::new(AtomicUsize::new(0));
    let cancelled = Arc::new(AtomicUsize::new(0));
    let (s, c) = (started.clone(), cancelled.clone());
    let served = Served::start(builder_for(&sundial, &app).handler("wait", move |ctx: Context, _p: Value| {
        let (s, c) = (s.clone(), c.clone());
        async move {
            ctx.answer_later();
            s.fetch_add(1, Ordering::SeqCst);
            tokio::select! {
                _ = ctx.cancelled() => { c.fetch_add(1, Ordering::SeqCst); Err(Error::new("cancelled")) }
                _ = tokio::time::sleep(Duration::from_secs(20)) => Ok("not cancelled"),
            }
        }
    }))
    .await;
    let job = api.create_job(&manual_job("rs-wait", "rs-cancel", "wait", json!({}))).await.unwrap();
    let run = api.trigger_job(&job.id, &Trigger::default(), None).await.unwrap();
    wait_for("the handler to start", Duration::from_secs(10), || {
        let n = started.load(Ordering::SeqCst);
        async move { (n == 1).then_some(()) }
    })
    .await;
    assert_eq!(served.ex.running_runs(), vec![run.id.clone()]);
    // The heartbeat (every 3 s) reports the run in progress.
    let path = format!("/apps/{}/executors", app.app.id);
    wait_for("a heartbeat listing the run", Duration::from_secs(8), || {
        let api = api.clone();
        let path = path.clone();
        async move {
            let list: Value = api.get(&path, &[]).await.ok()?;
            (list["items"][0]["running"] == 1).then_some(())
        }
    })
    .await;
    wait_for("the run to be running", Duration::from_secs(10), || {
        let api = api.clone();
        let id = run.id.clone();
        async move { (api.get_run(&id).await.ok()?.run.state == RunState::Running).then_some(()) }
    })
    .await;
    let cancelled_run = api.cancel_run(&run.id).await.unwrap();
    assert_eq!(cancelled_run.state, RunState::Cancelled);
    wait_for("the cancel to reach the handler", Duration::from_secs(10), || {
        let n = cancelled.load(Ordering::SeqCst);
        async move { (n == 1).then_some(()) }
    })
    .await;
    assert_eq!(api.get_run(&run.id).await.unwrap().run.state, RunState::Cancelled);

    // Shutdown: drains, deregisters; Sundial no longer counts it online.
    let ex = served.ex.clone();
    served.stop().await;
    assert!(ex.is_draining());
    assert!(ex.registration().is_none());
    let list: Value = api.get(&path, &[]).await.unwrap();
    let online = list["items"].as_array().unwrap().iter().filter(|e| e["state"] == "online").count();
    assert_eq!(online, 0, "{list}");
}

#[tokio::test]
async fn a_child_run_receives_its_parents_output_and_the_chain_params() {
    #[derive(Deserialize, Debug, PartialEq)]
    struct Extracted {
        orders: u32,
        day: String,
    }
    #[derive(Deserialize)]
    struct Chain {
        day: String,
    }
    let sundial = Sundial::start();
    let api = sundial.tenant("rs-chain").await;
    let app = app(&api, "rs-chain").await;
    let seen = Arc::new(Mutex::new(None));
    let s = seen.clone();
    let served = Served::start(
        builder_for(&sundial, &app)
            .handler("extract", |_ctx: Context, p: Chain| async move { Ok(json!({"orders": 3, "day": p.day})) })
            .handler("load", move |ctx: Context, p: Value| {
                let s = s.clone();
                async move {
                    let parent: Option<Extracted> = ctx.parent_output_as()?;
                    let chain: Option<Value> = ctx.chain_params_as()?;
                    *s.lock().unwrap() = Some((ctx.trigger(), ctx.parent().map(|p| p.run_id.clone()), chain, p));
                    Ok::<_, Error>(json!({"loaded": parent.map(|e| e.orders)}))
                }
            }),
    )
    .await;
    let child = api
        .create_job(&manual_job("rs-load", "rs-chain", "load", json!({"params": {"dry_run": false}})))
        .await
        .unwrap();
    let parent = api
        .create_job(&manual_job("rs-extract", "rs-chain", "extract", json!({"children": [child.id.clone()]})))
        .await
        .unwrap();
    let root =
        finished(&api, &api.trigger_job(&parent.id, &params(json!({"day": "2026-11-25"})), None).await.unwrap().id)
            .await;
    assert_eq!(root.run.state, RunState::Succeeded, "{root:?}");
    let child_run = wait_for("the child run to end", Duration::from_secs(15), || {
        let api = api.clone();
        let filter = RunFilter { job_id: Some(child.id.clone()), ..Default::default() };
        async move {
            let page = api.list_runs(&filter, None).await.ok()?;
            page.items.into_iter().find(|r| r.state.is_terminal())
        }
    })
    .await;
    assert_eq!(child_run.state, RunState::Succeeded, "{child_run:?}");
    assert_eq!(child_run.output, Some(json!({"loaded": 3})));
    assert_eq!(child_run.parent_run_id.as_deref(), Some(root.run.id.as_str()));
    let (trigger, parent_run, chain, p) = seen.lock().unwrap().take().expect("the child ran");
    assert_eq!(trigger.as_str(), "parent");
    assert_eq!(parent_run.as_deref(), Some(root.run.id.as_str()));
    assert_eq!(chain, Some(json!({"day": "2026-11-25"})));
    assert_eq!(p, json!({"dry_run": false, "day": "2026-11-25"}));
    served.stop().await;
}

#[tokio::test]
async fn a_repeated_webhook_id_from_sundial_is_answered_from_memory() {
    // The executor mounted in our own axum app (framework-free core), which keeps each
    // request's headers and bytes.
    let sundial = Sundial::start();
    let api = sundial.tenant("rs-replay").await;
    let app = app(&api, "rs-replay").await;
    let calls = Arc::new(AtomicUsize::new(0));
    let c = calls.clone();
    let ex = builder_for(&sundial, &app)
        .handler("once", move |_ctx: Context, _p: Value| {
            let c = c.clone();
            async move { Ok(json!({"call": c.fetch_add(1, Ordering::SeqCst) + 1})) }
        })
        .build()
        .unwrap();
    let seen: Arc<Mutex<Vec<(HeaderMap, Bytes)>>> = Arc::default();
    let (ex2, seen2) = (ex.clone(), seen.clone());
    let mine = axum::Router::new().route(
        "/hooks/sundial",
        axum::routing::post(move |headers: HeaderMap, body: Bytes| {
            let (ex, seen) = (ex2.clone(), seen2.clone());
            async move {
                seen.lock().unwrap().push((headers.clone(), body.clone()));
                ex.handle_delivery(&headers, body).await
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/hooks/sundial", listener.local_addr().unwrap());
    let server = tokio::spawn(async move { axum::serve(listener, mine).await });
    ex.start(&url).await.expect("register");

    let job = api.create_job(&manual_job("rs-once", "rs-replay", "once", json!({}))).await.unwrap();
    let run = finished(&api, &api.trigger_job(&job.id, &Trigger::default(), None).await.unwrap().id).await;
    assert_eq!(run.run.output, Some(json!({"call": 1})));
    let (headers, body) = seen.lock().unwrap()[0].clone();
    assert_eq!(
        headers["webhook-id"].to_str().unwrap(),
        format!("msg_{}_0_1", run.run.id),
        "webhook-id is msg_<run>_<shard>_<attempt>"
    );
    // Sundial's exact request again, as a node that died mid-delivery would redeliver it.
    let http = reqwest::Client::new();
    let mut again = http.post(&url).body(body.clone());
    for (k, v) in headers.iter() {
        if k.as_str().starts_with("webhook-") || k.as_str().starts_with("sundial-") || k == "content-type" {
            again = again.header(k.as_str(), v.to_str().unwrap());
        }
    }
    let resp = again.send().await.unwrap();
    assert_eq!(resp.status(), 200);
    assert_eq!(resp.json::<Value>().await.unwrap(), json!({"status": "succeeded", "output": {"call": 1}}));
    assert_eq!(calls.load(Ordering::SeqCst), 1, "the handler ran once");
    // The same bytes with a signature that does not match: 401 with the code.
    let resp = http
        .post(&url)
        .header("webhook-id", headers["webhook-id"].to_str().unwrap())
        .header("webhook-timestamp", headers["webhook-timestamp"].to_str().unwrap())
        .header("webhook-signature", "v1,AAAA")
        .body(body)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 401);
    assert_eq!(resp.json::<Value>().await.unwrap()["code"], "bad_signature");
    ex.shutdown(Duration::from_secs(5)).await;
    server.abort();
}

#[tokio::test]
async fn the_management_client_round_trip_and_typed_errors() {
    let sundial = Sundial::start();
    let api = sundial.tenant("rs-api").await;
    for n in ["rs-a1", "rs-a2", "rs-a3"] {
        app(&api, n).await;
    }
    let created = app(&api, "rs-a4").await;
    assert!(created.secret.starts_with("whsec_"));
    assert_eq!(api.get_app("rs-a4").await.unwrap().id, created.app.id);
    // Cursor pagination: one item a page, every app.
    let names: Vec<String> = api
        .paginate::<sundial_sdk::client::App>("/apps", vec![("limit", "1".into())])
        .map_ok(|a| a.name)
        .try_collect()
        .await
        .unwrap();
    assert_eq!(names.len(), 4, "{names:?}");
    let first_page = api.list_apps(Some(2), None).await.unwrap();
    assert_eq!(first_page.items.len(), 2);
    assert!(first_page.next_cursor.is_some());

    // Jobs: create, read, list, stop/start, replace, trigger idempotently, delete.
    let mut input = manual_job("rs-job", "rs-a4", "h", json!({"params": {"n": 1}}));
    let job = api.create_job(&input).await.unwrap();
    assert_eq!(api.get_job(&job.id).await.unwrap().name, "rs-job");
    let listed: Vec<_> =
        api.jobs(&JobFilter { app: Some("rs-a4".into()), ..Default::default() }).collect::<Vec<_>>().await;
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].as_ref().unwrap().id, job.id);
    assert_eq!(api.stop_job(&job.id).await.unwrap().state.as_str(), "stopped");
    assert_eq!(api.start_job(&job.id).await.unwrap().state.as_str(), "active");
    input.description = Some("replaced".into());
    let replaced = api.replace_job(&job.id, &input).await.unwrap();
    assert_eq!(replaced.extra["description"], "replaced");
    assert!(replaced.version > job.version);

    let key = "rs-trigger-1";
    let r1 = api.trigger_job(&job.id, &params(json!({"n": 2})), Some(key)).await.unwrap();
    let r2 = api.trigger_job(&job.id, &params(json!({"n": 2})), Some(key)).await.unwrap();
    assert_eq!(r1.id, r2.id, "the same Idempotency-Key fires once");
    let r3 = api.trigger_job(&job.id, &Trigger::default(), None).await.unwrap();
    assert_ne!(r3.id, r1.id);
    let detail = api.get_run(&r1.id).await.unwrap();
    assert_eq!(detail.run.params, Some(json!({"n": 2})));
    assert_eq!(detail.run.job_id, job.id);
    let runs: Vec<_> = api
        .runs(&RunFilter { job_id: Some(job.id.clone()), limit: Some(1), ..Default::default() })
        .try_collect::<Vec<_>>()
        .await
        .unwrap();
    assert_eq!(runs.len(), 2);

    // Scripts.
    let script = api
        .create_script(&ScriptCreate {
            name: "rs-script".into(),
            runtime: "sh".into(),
            source: Some("echo hello\n".into()),
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(script.current_version, 1);
    assert_eq!(api.get_script(&script.id).await.unwrap().name, "rs-script");
    assert_eq!(api.list_scripts(None, None).await.unwrap().items.len(), 1);

    // Typed errors: the server's code, message and details.field.
    let bad: Value = json!({"name": "rs-bad", "app": "rs-a4", "handler": "h",
        "schedule": {"kind": "cron", "expression": "0 61 * * * *"}});
    let err = api.create_job_json(&bad).await.unwrap_err();
    assert_eq!(err.status(), Some(422), "{err}");
    assert_eq!(err.field(), Some("schedule.expression"), "{err:?}");
    assert!(err.code().is_some_and(|c| !c.is_empty()), "{err:?}");
    let err = api.get_job("job_00000000000000000000000000000000").await.unwrap_err();
    assert_eq!((err.status(), err.code()), (Some(404), Some("not_found")), "{err:?}");
    let err = api.create_app(&AppCreate { name: "rs-a4".into(), ..Default::default() }).await.unwrap_err();
    assert_eq!(err.status(), Some(409), "{err:?}");
    let err = Client::new(&sundial.base, "sk_wrong").list_apps(None, None).await.unwrap_err();
    assert_eq!(err.status(), Some(401), "{err:?}");

    api.delete_job(&job.id).await.unwrap();
    assert_eq!(api.get_job(&job.id).await.unwrap_err().code(), Some("not_found"));

    // Many jobs in one call, all or none.
    app(&api, "rs-batch").await;
    let item = |name: &str| manual_job(name, "rs-batch", "h", json!({}));
    let made = api.create_jobs(&[item("rs-b1"), item("rs-b2")]).await.unwrap();
    assert_eq!(made.iter().map(|j| j.name.as_str()).collect::<Vec<_>>(), ["rs-b1", "rs-b2"]);
    let err = api.create_jobs(&[item("rs-b3"), item("rs-b1")]).await.unwrap_err();
    assert_eq!((err.status(), err.field()), (Some(409), Some("jobs")), "{err:?}");
    let refused = &err.api().unwrap().details["errors"];
    assert_eq!((refused[0]["index"].clone(), refused[0]["field"].clone()), (json!(1), json!("name")), "{err:?}");
    let listed: Vec<_> =
        api.jobs(&JobFilter { app: Some("rs-batch".into()), ..Default::default() }).collect::<Vec<_>>().await;
    assert_eq!(listed.len(), 2, "nothing of the refused batch");
}

#[tokio::test]
async fn a_sharded_run_gets_one_shard_per_executor() {
    let sundial = Sundial::start();
    let api = sundial.tenant("rs-shards").await;
    let app = app(&api, "rs-shards").await;
    let part = |ctx: Context, _p: Value| async move {
        Ok(json!({"shard": ctx.shard().index, "of": ctx.shard().total, "webhook_id": ctx.webhook_id()}))
    };
    let a = Served::start(builder_for(&sundial, &app).handler("part", part)).await;
    let b = Served::start(builder_for(&sundial, &app).handler("part", part)).await;
    let job =
        api.create_job(&manual_job("rs-sharded", "rs-shards", "part", json!({"route": "sharding"}))).await.unwrap();
    let done = finished(&api, &api.trigger_job(&job.id, &Trigger::default(), None).await.unwrap().id).await;
    assert_eq!(done.run.state, RunState::Succeeded, "{done:?}");
    let id = &done.run.id;
    assert_eq!(
        done.run.output,
        Some(json!([
            {"shard": 0, "of": 2, "webhook_id": format!("msg_{id}_0_1")},
            {"shard": 1, "of": 2, "webhook_id": format!("msg_{id}_1_1")},
        ]))
    );
    assert_eq!(done.shards.len(), 2);
    a.stop().await;
    b.stop().await;
}

#[derive(Deserialize)]
struct Lines {
    n: usize,
}

/// Several nodes: one refusing connections and one answering `503` are passed over; a run's log
/// is read page by page after a `seq`, and followed to the run's end, every line once in order.
#[tokio::test]
async fn the_client_fails_over_between_nodes_and_follows_a_runs_log() {
    let sundial = Sundial::start();
    let admin = sundial.tenant("rs-follow").await;
    // A node that is there but unavailable: every call is 503.
    let unavailable = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let unavailable_url = format!("http://{}", unavailable.local_addr().unwrap());
    let hits = Arc::new(AtomicUsize::new(0));
    let counted = hits.clone();
    let busy = axum::Router::new().fallback(move || {
        counted.fetch_add(1, Ordering::SeqCst);
        async { (axum::http::StatusCode::SERVICE_UNAVAILABLE, "draining") }
    });
    tokio::spawn(async move { axum::serve(unavailable, busy).await.unwrap() });
    let key = {
        let v: Value = admin.post("/keys", &json!({"name": "follow", "role": "admin"})).await.unwrap();
        v["key"].as_str().unwrap().to_string()
    };
    let api = Client::with_nodes([DEAD_URL, unavailable_url.as_str(), sundial.base.as_str()], &key);
    let app = app(&api, "rs-follow").await;
    assert_eq!(api.base_url(), sundial.base, "the node that answered is asked first from now on");
    assert_eq!(hits.load(Ordering::SeqCst), 1, "the 503 node was asked once, then passed over");
    api.apps().try_collect::<Vec<_>>().await.unwrap();
    assert_eq!(hits.load(Ordering::SeqCst), 1, "and not again while the live node answers");
    let only_down = Client::with_nodes([DEAD_URL, unavailable_url.as_str()], &key);
    let e = only_down.get_app("rs-follow").await.unwrap_err();
    assert_eq!(e.status(), Some(503), "the last node's answer: {e}");

    let go = Arc::new(tokio::sync::Notify::new());
    let gate = go.clone();
    let served = Served::start(builder_for(&sundial, &app).handler_with(
        "lines",
        HandlerOptions::asynchronous(),
        move |ctx: Context, p: Lines| {
            let gate = gate.clone();
            async move {
                ctx.log("first");
                ctx.flush().await;
                gate.notified().await;
                for i in 0..p.n {
                    ctx.log(format!("line {i}"));
                    if i % 10 == 9 {
                        ctx.flush().await;
                        tokio::time::sleep(Duration::from_millis(100)).await;
                    }
                }
                Ok(json!({"lines": p.n}))
            }
        },
    ))
    .await;
    let job = api.create_job(&manual_job("follow-me", "rs-follow", "lines", json!({}))).await.unwrap();
    let run = api.trigger_job(&job.id, &params(json!({"n": 35})), None).await.unwrap();
    let mut follow = api.follow_run_logs(&run.id, 0, Duration::from_millis(50));
    let first = follow.next().await.unwrap().unwrap();
    assert_eq!(first.message, "first");
    let page = api.run_logs_after(&run.id, 0, Some(10)).await.unwrap();
    assert_eq!(
        (page.items.len(), page.has_more, page.run_finished, page.next_after),
        (1, false, false, first.seq),
        "{page:?}"
    );
    go.notify_one();
    let rest: Vec<String> = tokio::time::timeout(Duration::from_secs(30), follow.map_ok(|l| l.message).try_collect())
        .await
        .expect("the follow ends with the run")
        .unwrap();
    assert_eq!(rest, (0..35).map(|i| format!("line {i}")).collect::<Vec<_>>());
    // The finished log, ten lines a page.
    let (mut after, mut pages, mut all) = (0, 0, Vec::new());
    loop {
        let page = api.run_logs_after(&run.id, after, Some(10)).await.unwrap();
        pages += 1;
        after = page.next_after;
        all.extend(page.items.into_iter().map(|l| l.message));
        assert!(page.run_finished && page.run_state == RunState::Succeeded);
        if !page.has_more {
            break;
        }
    }
    assert_eq!((all.len(), pages), (36, 4));
    let e = api.run_logs_after(&run.id, 0, Some(0)).await.unwrap_err();
    assert_eq!((e.status(), e.code(), e.field()), (Some(422), Some("invalid_field"), Some("limit")));
    let e = api.run_logs_after("run_nope", 0, None).await.unwrap_err();
    assert_eq!((e.status(), e.code()), (Some(404), Some("not_found")));
    served.stop().await;
}
