//! `examples/hello.rs`, the README's executor, compiled into this test as it is (so the test
//! always runs the current file) and configured by the environment only (`SUNDIAL_SECRET`,
//! `SUNDIAL_APP_ID`, `SUNDIAL_URL`, `LISTEN_ADDR`: port 0), against a real `sundial serve`. It
//! registers at the address it listens on, gets fired, and its output and log line reach the run.

mod common;

mod hello {
    include!("../examples/hello.rs");

    pub fn run() -> std::io::Result<()> {
        main()
    }
}

use std::time::Duration;

use common::{Sundial, finished, manual_job, wait_for};
use serde_json::{Value, json};
use sundial_sdk::client::{AppCreate, Trigger};
use sundial_sdk::protocol::RunState;

#[tokio::test]
async fn the_readme_example_registers_gets_fired_and_logs() {
    let sundial = Sundial::start();
    let api = sundial.tenant("rs-example").await;
    let app = api.create_app(&AppCreate { name: "hello-app".into(), ..Default::default() }).await.unwrap();
    for (k, _) in std::env::vars().filter(|(k, _)| k.starts_with("SUNDIAL_")) {
        // SAFETY: this test binary has this one test, and nothing else reads or writes the
        // environment while it is changed (the example reads it after, on its own thread).
        unsafe { std::env::remove_var(k) };
    }
    for (k, v) in [
        ("SUNDIAL_SECRET", app.secret.as_str()),
        ("SUNDIAL_APP_ID", app.app.id.as_str()),
        ("SUNDIAL_URL", sundial.base.as_str()),
        ("LISTEN_ADDR", "127.0.0.1:0"),
    ] {
        // SAFETY: as above.
        unsafe { std::env::set_var(k, v) };
    }
    // The example's `main` builds its own runtime and serves until the process ends.
    std::thread::spawn(|| hello::run().expect("the example serves"));
    // Registered at the address it listens on (a port of its own, not the default 9000),
    // serving `hello`.
    let executors = format!("/apps/{}/executors", app.app.id);
    let registered: Value = wait_for("the example to register", Duration::from_secs(30), || {
        let (api, path) = (&api, &executors);
        async move {
            let v: Value = api.get(path, &[]).await.ok()?;
            v["items"].as_array().and_then(|e| e.first()).cloned()
        }
    })
    .await;
    let address = registered["address"].as_str().unwrap_or_default();
    assert!(address.starts_with("http://127.0.0.1:") && address != "http://127.0.0.1:9000/", "{registered}");
    assert_eq!(registered["handlers"], json!(["hello"]), "{registered}");

    let job = api.create_job(&manual_job("hello-now", "hello-app", "hello", json!({}))).await.unwrap();
    let trigger = Trigger { params: Some(json!({"to": "world"})), at: None };
    let run = api.trigger_job(&job.id, &trigger, None).await.unwrap();
    let done = finished(&api, &run.id).await;
    assert_eq!(done.run.state, RunState::Succeeded, "{done:?}");
    assert_eq!(done.run.output, Some(json!({"greeted": "world"})));
    let logs = api.run_logs(&run.id).await.unwrap();
    assert!(logs.iter().any(|l| l.level == "info" && l.message == "hello world"), "{logs:?}");
}
