//! The command line client (`sundial jobs|runs|apps|scripts`) run as users run it: the built
//! binary as a subprocess against a real `sundial serve` (embedded SQLite in a temp dir,
//! 127.0.0.1 port 0), with a real executor built on the Rust SDK in this process (verifying
//! every delivery's signature, logging, failing, waiting for a cancel).

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use sundial_sdk::{Context, Error, Executor, HandlerOptions};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::Command;
use tokio::sync::Notify;

/// `sundial` with none of the caller's SUNDIAL_* (nor a config file of theirs).
fn sundial(home: &Path) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_sundial"));
    for (k, _) in std::env::vars() {
        if k.starts_with("SUNDIAL_") {
            c.env_remove(k);
        }
    }
    c.env("HOME", home).env("XDG_CONFIG_HOME", home.join(".config")).env("SUNDIAL_LOG", "warn");
    c.stdin(Stdio::null()).kill_on_drop(true);
    c
}

/// A `sundial serve`, killed on drop.
struct Node {
    child: tokio::process::Child,
    base: String,
    operator_key: String,
    dir: tempfile::TempDir,
}

impl Node {
    async fn start() -> Node {
        let dir = tempfile::tempdir().unwrap();
        let operator_key = format!("sk_cli_test_operator_{}", std::process::id());
        let mut child = sundial(dir.path())
            .args(["serve", "--listen", "127.0.0.1:0", "--runner", "false", "--data-dir"])
            .arg(dir.path().join("data"))
            .env("SUNDIAL_ADMIN_KEY", &operator_key)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("spawn sundial serve");
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let base = tokio::time::timeout(Duration::from_secs(60), async {
            while let Some(line) = lines.next_line().await.unwrap() {
                if let Some(url) = line.strip_prefix("Sundial listening on ") {
                    return url.trim().to_string();
                }
            }
            panic!("sundial serve ended before listening");
        })
        .await
        .expect("sundial serve listens within 60 s");
        tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
        Node { child, base, operator_key, dir }
    }

    /// A new tenant's admin key.
    async fn tenant(&self, name: &str) -> String {
        let resp = reqwest::Client::new()
            .post(format!("{}/api/v1/tenants", self.base))
            .bearer_auth(&self.operator_key)
            .json(&json!({"name": name}))
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status().as_u16(), 201);
        resp.json::<Value>().await.unwrap()["admin_key"].as_str().unwrap().to_string()
    }
}

impl Drop for Node {
    fn drop(&mut self) {
        let _ = self.child.start_kill();
    }
}

/// What one CLI call did.
#[derive(Debug)]
struct Out {
    code: i32,
    stdout: String,
    stderr: String,
}

impl Out {
    fn json(&self) -> Value {
        serde_json::from_str(&self.stdout).unwrap_or_else(|e| panic!("not JSON ({e}): {self:?}"))
    }
    #[track_caller]
    fn ok(self) -> Out {
        assert_eq!(self.code, 0, "{self:?}");
        self
    }
}

/// The CLI as one tenant: its key in SUNDIAL_API_KEY, the node in SUNDIAL_URL.
struct Cli<'a> {
    node: &'a Node,
    key: String,
}

impl Cli<'_> {
    fn cmd(&self, args: &[&str]) -> Command {
        let mut c = sundial(self.node.dir.path());
        c.args(args).env("SUNDIAL_URL", &self.node.base).env("SUNDIAL_API_KEY", &self.key);
        c
    }

    async fn run(&self, args: &[&str]) -> Out {
        run(self.cmd(args), &self.key).await
    }
}

/// Run to the end (at most 60 s) and check that the key never shows in what it printed.
async fn run(mut cmd: Command, key: &str) -> Out {
    let out = tokio::time::timeout(Duration::from_secs(60), cmd.output()).await.expect("the CLI ends").unwrap();
    let out = Out {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8(out.stdout).unwrap(),
        stderr: String::from_utf8(out.stderr).unwrap(),
    };
    assert!(!out.stdout.contains(key) && !out.stderr.contains(key), "the API key was printed: {out:?}");
    out
}

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

/// The executor: `greet` logs, waits for the test's go, logs more and answers; `slow` waits
/// for its cancel; `flaky` fails its first attempt.
struct Exec {
    go: Arc<Notify>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    done: tokio::task::JoinHandle<std::io::Result<()>>,
}

#[derive(serde::Deserialize)]
struct Greet {
    to: String,
    n: usize,
}

async fn executor(node: &Node, app_id: &str, secret: &str) -> Exec {
    let go = Arc::new(Notify::new());
    let gate = go.clone();
    let ex = Executor::builder()
        .secret(secret)
        .app_id(app_id)
        .scheduler_url(&node.base)
        .name("cli-test")
        .handler_with("greet", HandlerOptions::asynchronous(), move |ctx: Context, p: Greet| {
            let gate = gate.clone();
            async move {
                ctx.log(format!("hello {}", p.to));
                ctx.flush().await;
                gate.notified().await;
                for i in 0..p.n {
                    ctx.log(format!("line {i} of {}", p.n));
                    if i % 2 == 0 {
                        ctx.flush().await; // lines come in several calls, some while polled
                        tokio::time::sleep(Duration::from_millis(150)).await;
                    }
                }
                ctx.warn("goodbye");
                Ok(json!({"greeted": p.to}))
            }
        })
        .handler_with("slow", HandlerOptions::asynchronous(), |ctx: Context, _p: Value| async move {
            ctx.log("waiting for a cancel");
            ctx.flush().await;
            tokio::select! {
                _ = ctx.cancelled() => Err::<Value, _>(Error::new("cancelled")),
                _ = tokio::time::sleep(Duration::from_secs(60)) => Ok(json!({})),
            }
        })
        .handler("flaky", |ctx: Context, _p: Value| async move {
            if ctx.attempt() == 1 {
                Err(Error::new("the first attempt fails"))
            } else {
                Ok(json!({"attempt": ctx.attempt()}))
            }
        })
        .shutdown_grace(Duration::from_secs(5))
        .build()
        .expect("an executor");
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    let serving = ex.clone();
    let done = tokio::spawn(async move {
        serving
            .serve_listener(listener, async move {
                let _ = rx.await;
            })
            .await
    });
    let deadline = Instant::now() + Duration::from_secs(15);
    while ex.registration().is_none() {
        assert!(Instant::now() < deadline, "the executor registers");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    Exec { go, stop: Some(tx), done }
}

impl Exec {
    async fn stop(mut self) {
        let _ = self.stop.take().unwrap().send(());
        let _ = tokio::time::timeout(Duration::from_secs(20), self.done).await;
    }
}

/// Poll `runs get -o json` until the run's state is one of `states`.
async fn until_state(cli: &Cli<'_>, run_id: &str, states: &[&str]) -> Value {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let run = cli.run(&["runs", "get", run_id, "-o", "json"]).await.ok().json();
        if states.contains(&run["state"].as_str().unwrap()) {
            return run;
        }
        assert!(Instant::now() < deadline, "run {run_id} never reached {states:?}: {run}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_command_line_drives_jobs_runs_apps_and_scripts_end_to_end() {
    let node = Node::start().await;
    let cli = Cli { node: &node, key: node.tenant("acme").await };
    let dir = node.dir.path();

    // An app from YAML on standard input; its secret is shown once.
    let mut create = cli.cmd(&["apps", "create", "-f", "-", "-o", "json"]);
    create.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut child = create.spawn().unwrap();
    {
        use tokio::io::AsyncWriteExt as _;
        let mut stdin = child.stdin.take().unwrap();
        stdin.write_all(b"name: cli-app\ndescription: made by the CLI test\n").await.unwrap();
    }
    let out = child.wait_with_output().await.unwrap();
    assert!(out.status.success(), "{out:?}");
    let app: Value = serde_json::from_slice(&out.stdout).unwrap();
    let (app_id, secret) = (app["id"].as_str().unwrap().to_string(), app["secret"].as_str().unwrap().to_string());
    assert!(secret.starts_with("whsec_"), "{app}");
    let listed = cli.run(&["apps", "list"]).await.ok();
    assert!(listed.stdout.starts_with("ID ") && listed.stdout.contains("cli-app"), "{listed:?}");
    assert_eq!(cli.run(&["apps", "get", "cli-app", "-o", "json"]).await.ok().json()["id"], app_id.as_str());
    let exec = executor(&node, &app_id, &secret).await;

    // Jobs from YAML and JSON files; listed as a table and as JSON.
    let greeter = write(
        dir,
        "greeter.yaml",
        "# a manual job\nname: greeter\napp: cli-app\nhandler: greet\nschedule:\n  kind: manual\nparams:\n  to: nobody\n  n: 0\n",
    );
    let job = cli.run(&["jobs", "create", "-f", greeter.to_str().unwrap(), "-o", "json"]).await.ok().json();
    let job_id = job["id"].as_str().unwrap().to_string();
    let nightly = write(
        dir,
        "nightly.json",
        r#"{"name": "nightly", "app": "cli-app", "handler": "greet",
            "schedule": {"kind": "cron", "expression": "0 30 2 * * *", "timezone": "Europe/Berlin"}}"#,
    );
    let nightly = cli.run(&["jobs", "create", "-f", nightly.to_str().unwrap(), "-o", "json"]).await.ok().json();
    let nightly_id = nightly["id"].as_str().unwrap().to_string();
    // Five jobs: these two and the three the executor's registration made (stopped).
    let table = cli.run(&["jobs", "list"]).await.ok().stdout;
    let lines: Vec<&str> = table.lines().collect();
    assert_eq!(lines.len(), 6, "{table}");
    for col in ["ID", "NAME", "APP", "STATE", "SCHEDULE", "NEXT FIRE"] {
        assert!(lines[0].contains(col), "{table}");
    }
    // The next fire, in UTC: 02:30 in Berlin is 00:30 or 01:30 UTC (03:00 CEST on the night
    // 02:30 does not exist); none for a manual job.
    let next_col = lines[0].find("NEXT FIRE").unwrap();
    let next_of = |name: &str| {
        let line = lines.iter().find(|l| l.split_whitespace().nth(1) == Some(name)).unwrap();
        line.get(next_col..).unwrap().trim().to_string()
    };
    let nightly_next = next_of("nightly");
    assert!(
        [" 00:30:00", " 01:30:00", " 01:00:00"].iter().any(|t| nightly_next.ends_with(t)) && nightly_next.len() == 19,
        "{table}"
    );
    assert_eq!(next_of("greeter"), "-", "{table}");
    let state_col = lines[0].find("STATE").unwrap();
    let state_of = |name: &str| {
        let line = lines.iter().find(|l| l.split_whitespace().nth(1) == Some(name)).unwrap();
        line.get(state_col..).unwrap().split_whitespace().next().unwrap().to_string()
    };
    assert_eq!(
        (state_of("greeter"), state_of("nightly"), state_of("slow")),
        ("active".into(), "active".into(), "stopped".into()),
        "aligned: {table}"
    );
    let nightly_line = lines.iter().find(|l| l.contains("nightly")).unwrap();
    assert!(nightly_line.contains("cli-app") && nightly_line.contains("cron 0 30 2 * * * (Europe/Berlin)"), "{table}");
    let all = cli.run(&["jobs", "list", "-o", "json"]).await.ok().json();
    assert_eq!(all.as_array().unwrap().len(), 5, "{all}");
    // One page at a time, --limit 1: one job and a word on stderr that there are more.
    let one = cli.run(&["jobs", "list", "--limit", "1", "-o", "json"]).await.ok().json();
    assert_eq!(one.as_array().unwrap().len(), 1);
    let one = cli.run(&["jobs", "list", "--limit", "1"]).await.ok();
    assert!(one.stderr.contains("--limit"), "{one:?}");
    let named = cli.run(&["jobs", "list", "--name", "nightly", "--app", "cli-app", "-o", "json"]).await.ok().json();
    assert_eq!(named.as_array().unwrap().iter().map(|j| j["id"].clone()).collect::<Vec<_>>(), [json!(nightly_id)]);
    let preview = cli.run(&["jobs", "preview", &nightly_id, "--count", "3"]).await.ok().stdout;
    assert_eq!(preview.lines().count(), 4, "{preview}");
    assert!(preview.lines().skip(1).all(|l| l.contains("T02:30:00")), "in the job's time zone: {preview}");

    // Stop and start: the state shows in get and in the filtered list.
    cli.run(&["jobs", "stop", &nightly_id]).await.ok();
    let stopped = cli.run(&["jobs", "list", "--state", "stopped", "-o", "json"]).await.ok().json();
    let mut names: Vec<&str> = stopped.as_array().unwrap().iter().map(|j| j["name"].as_str().unwrap()).collect();
    names.sort();
    assert_eq!(names, ["flaky", "greet", "nightly", "slow"]);
    let active = cli.run(&["jobs", "list", "--state", "active", "-o", "json"]).await.ok().json();
    assert_eq!(active.as_array().unwrap().iter().map(|j| j["id"].clone()).collect::<Vec<_>>(), [json!(job_id)]);
    assert!(stopped.as_array().unwrap().iter().all(|j| j["next_fire_at"].is_null()), "{stopped}");
    let started = cli.run(&["jobs", "start", &nightly_id, "-o", "json"]).await.ok().json();
    assert_eq!(started["state"], "active");
    assert!(started["next_fire_at"].as_str().is_some_and(|t| t.ends_with(":00.000Z")), "{started}");
    let shown = cli.run(&["jobs", "get", &nightly_id]).await.ok().stdout;
    assert!(shown.lines().any(|l| l.starts_with("next_fire_at ") && l.contains(":00.000Z")), "{shown}");
    assert_eq!(cli.run(&["jobs", "get", &nightly_id, "-o", "json"]).await.ok().json()["state"], "active");

    // Trigger with params (a string and JSON), then follow the run's log to its end.
    let run = cli
        .run(&[
            "jobs",
            "trigger",
            &job_id,
            "--param",
            "to=world",
            "--param",
            "n:=12",
            "--idempotency-key",
            "once",
            "-o",
            "json",
        ])
        .await
        .ok()
        .json();
    let run_id = run["id"].as_str().unwrap().to_string();
    assert_eq!(run["params"], json!({"to": "world", "n": 12}), "{run}");
    let again = cli.run(&["jobs", "trigger", &job_id, "--idempotency-key", "once", "-o", "json"]).await.ok().json();
    assert_eq!(again["id"], run_id.as_str(), "the same idempotency key is the same run");
    let mut follow = cli.cmd(&["runs", "logs", &run_id, "--follow"]);
    follow.stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut follow = follow.spawn().unwrap();
    let mut lines = BufReader::new(follow.stdout.take().unwrap()).lines();
    let first = tokio::time::timeout(Duration::from_secs(30), lines.next_line()).await.expect("a first line").unwrap();
    assert!(first.as_deref().is_some_and(|l| l.ends_with("hello world")), "{first:?}");
    // Only now does the handler write the rest and finish: the follower gets it as it comes.
    exec.go.notify_one();
    let mut rest = Vec::new();
    let ended = tokio::time::timeout(Duration::from_secs(30), async {
        while let Some(l) = lines.next_line().await.unwrap() {
            rest.push(l);
        }
        follow.wait().await.unwrap()
    })
    .await
    .expect("`runs logs --follow` exits by itself when the run has ended");
    assert!(ended.success(), "{ended:?}");
    let mut want: Vec<String> = (0..12).map(|i| format!("line {i} of 12")).collect();
    want.push("goodbye".into());
    let got: Vec<&str> = rest.iter().map(|l| l.rsplit("  ").next().unwrap().trim_start()).collect();
    assert_eq!(got, want, "every line, once, in order: {rest:?}");
    assert!(rest.last().unwrap().contains("warn"), "{rest:?}");
    assert_eq!(cli.run(&["runs", "get", &run_id, "-o", "json"]).await.ok().json()["state"], "succeeded");
    // The whole log again, as JSON lines with their seq.
    let json_lines = cli.run(&["runs", "logs", &run_id, "-o", "json"]).await.ok().stdout;
    let seqs: Vec<i64> =
        json_lines.lines().map(|l| serde_json::from_str::<Value>(l).unwrap()["seq"].as_i64().unwrap()).collect();
    assert_eq!(seqs.len(), 14);
    assert!(seqs.windows(2).all(|w| w[0] < w[1]), "{seqs:?}");
    assert_eq!(cli.run(&["runs", "wait", &run_id, "--timeout", "5s"]).await.code, 0);
    let runs = cli.run(&["runs", "list", "--job", &job_id]).await.ok().stdout;
    assert!(runs.lines().next().unwrap().starts_with("ID") && runs.contains("succeeded"), "{runs}");
    for col in ["JOB", "STATE", "SCHEDULED", "STARTED", "DURATION", "MESSAGE"] {
        assert!(runs.lines().next().unwrap().contains(col), "{runs}");
    }

    // Cancel a run in progress: its executor hears of it; waiting on it says it did not succeed.
    let slow = write(dir, "slow.yaml", "name: slow-cancel\napp: cli-app\nhandler: slow\nschedule: {kind: manual}\n");
    let slow = cli.run(&["jobs", "create", "-f", slow.to_str().unwrap(), "-o", "json"]).await.ok().json();
    let slow_run = cli.run(&["jobs", "trigger", slow["id"].as_str().unwrap(), "-o", "json"]).await.ok().json();
    let slow_run = slow_run["id"].as_str().unwrap().to_string();
    until_state(&cli, &slow_run, &["running"]).await;
    // Following a run that does not end: Ctrl-C (SIGINT) ends the command, exit 130.
    let mut follow = cli.cmd(&["runs", "logs", &slow_run, "--follow"]);
    follow.stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut follow = follow.spawn().unwrap();
    let mut lines = BufReader::new(follow.stdout.take().unwrap()).lines();
    let first = tokio::time::timeout(Duration::from_secs(30), lines.next_line()).await.expect("a first line").unwrap();
    assert!(first.is_some_and(|l| l.ends_with("waiting for a cancel")));
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(follow.try_wait().unwrap().is_none(), "still following a running run");
    // SAFETY: a signal to the child this test started and has not reaped.
    assert_eq!(unsafe { libc::kill(follow.id().unwrap() as i32, libc::SIGINT) }, 0);
    let ended = tokio::time::timeout(Duration::from_secs(10), follow.wait()).await.expect("Ctrl-C ends it").unwrap();
    assert_eq!(ended.code(), Some(130), "{ended:?}");
    let cancelled = cli.run(&["runs", "cancel", &slow_run, "-o", "json"]).await.ok().json();
    assert_eq!(cancelled["state"], "cancelled");
    let waited = cli.run(&["runs", "wait", &slow_run]).await;
    assert_eq!(waited.code, 4, "{waited:?}");
    let again = cli.run(&["runs", "cancel", &slow_run]).await;
    assert_eq!(again.code, 1, "{again:?}");
    assert!(again.stderr.contains("not_cancellable"), "{again:?}");

    // Retry: the first attempt fails and waits an hour's backoff; `runs retry` sends it now.
    let flaky = write(
        dir,
        "flaky.yaml",
        "name: flaky-retry\napp: cli-app\nhandler: flaky\nschedule: {kind: manual}\n\
         failure: {policy: retry, max_retries: 2, backoff: {kind: fixed, base_ms: 3600000, jitter: false}}\n",
    );
    let flaky = cli.run(&["jobs", "create", "-f", flaky.to_str().unwrap(), "-o", "json"]).await.ok().json();
    let flaky_run = cli.run(&["jobs", "trigger", flaky["id"].as_str().unwrap(), "-o", "json"]).await.ok().json();
    let flaky_run = flaky_run["id"].as_str().unwrap().to_string();
    until_state(&cli, &flaky_run, &["retrying"]).await;
    let timed_out = cli.run(&["runs", "wait", &flaky_run, "--timeout", "1s"]).await;
    assert_eq!(timed_out.code, 5, "{timed_out:?}");
    cli.run(&["runs", "retry", &flaky_run]).await.ok();
    let waited = cli.run(&["runs", "wait", &flaky_run, "--timeout", "30s", "-o", "json"]).await.ok().json();
    assert_eq!((waited["state"].clone(), waited["attempt"].clone()), (json!("succeeded"), json!(2)), "{waited}");
    let detail = cli.run(&["runs", "get", &flaky_run]).await.ok().stdout;
    assert!(detail.contains("ATTEMPT") && detail.contains("the first attempt fails"), "{detail}");

    // Replace and delete.
    let replaced = write(
        dir,
        "greeter2.yaml",
        "name: greeter\napp: cli-app\nhandler: greet\nschedule: {kind: fixed_rate, every_ms: 3600000}\n",
    );
    let replaced =
        cli.run(&["jobs", "replace", &job_id, "-f", replaced.to_str().unwrap(), "-o", "json"]).await.ok().json();
    assert_eq!(replaced["schedule"]["every_ms"], 3_600_000);
    cli.run(&["jobs", "delete", &nightly_id]).await.ok();
    let gone = cli.run(&["jobs", "get", &nightly_id]).await;
    assert_eq!(gone.code, 1);
    assert!(gone.stderr.contains("not_found"), "{gone:?}");

    // Scripts: upload from YAML (a block scalar for the source), list, get.
    let script = write(dir, "hello.yaml", "name: hello\nruntime: sh\nsource: |\n  echo hello\n");
    // (This node has no built-in runner: every runtime is offered, for runner executors.)
    let created = cli.run(&["scripts", "create", "-f", script.to_str().unwrap(), "-o", "json"]).await.ok().json();
    let id = created["id"].as_str().unwrap().to_string();
    let scripts = cli.run(&["scripts", "list"]).await.ok().stdout;
    assert!(scripts.starts_with("ID") && scripts.contains("hello") && scripts.contains("sh"), "{scripts}");
    assert_eq!(cli.run(&["scripts", "get", &id, "-o", "json"]).await.ok().json()["name"], "hello");
    let rotated = cli.run(&["apps", "rotate-secret", &app_id, "-o", "json"]).await.ok().json();
    assert!(rotated["secret"].as_str().is_some_and(|s| s.starts_with("whsec_") && s != secret), "{rotated}");
    exec.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_input_failover_and_missing_keys_get_clear_answers() {
    let node = Node::start().await;
    let cli = Cli { node: &node, key: node.tenant("acme").await };
    let dir = node.dir.path();
    cli.run(&["apps", "create", "-f", write(dir, "app.json", r#"{"name": "a"}"#).to_str().unwrap()]).await.ok();

    // A bad cron: the server's code and field on stderr, exit 1, nothing created.
    let bad =
        write(dir, "bad.yaml", "name: bad\napp: a\nhandler: h\nschedule: {kind: cron, expression: '61 * * * *'}\n");
    let out = cli.run(&["jobs", "create", "-f", bad.to_str().unwrap()]).await;
    assert_eq!(out.code, 1, "{out:?}");
    assert!(out.stderr.contains("field: schedule.expression") && out.stderr.contains("HTTP 422"), "{out:?}");
    assert!(out.stderr.contains("code invalid_"), "{out:?}");
    assert_eq!(cli.run(&["jobs", "list", "-o", "json"]).await.ok().json(), json!([]));
    // Files that are not an object, not YAML, not there: exit 2 naming the file.
    for (name, text) in [("list.yaml", "- a\n- b\n"), ("broken.json", "{\"name\": "), ("tabs.yaml", "a: [\n")] {
        let p = write(dir, name, text);
        let out = cli.run(&["jobs", "create", "-f", p.to_str().unwrap()]).await;
        assert_eq!(out.code, 2, "{out:?}");
        assert!(out.stderr.contains(name), "{out:?}");
    }
    let out = cli.run(&["jobs", "create", "-f", "/nonexistent/job.yaml"]).await;
    assert_eq!(out.code, 2, "{out:?}");
    // Usage errors: clap's code 2.
    for args in [
        &["jobs", "list", "--state", "sleeping"][..],
        &["runs", "list", "--limit", "0"],
        &["jobs", "trigger", "x", "--param", "novalue"],
    ] {
        let out = cli.run(args).await;
        assert_eq!(out.code, 2, "{args:?}: {out:?}");
    }
    let out = cli.run(&["jobs", "trigger", "x", "--api-key", "sk_nope"]).await;
    assert_eq!(out.code, 2, "no --api-key flag: {out:?}");
    // Another tenant's run or job is not found.
    let other = Cli { node: &node, key: node.tenant("globex").await };
    let job = write(dir, "m.yaml", "name: m\napp: a\nhandler: h\nschedule: {kind: manual}\n");
    let job = cli.run(&["jobs", "create", "-f", job.to_str().unwrap(), "-o", "json"]).await.ok().json();
    let fired = cli.run(&["jobs", "trigger", job["id"].as_str().unwrap(), "-o", "json"]).await.ok().json();
    let out = other.run(&["runs", "logs", fired["id"].as_str().unwrap()]).await;
    assert!(out.code == 1 && out.stderr.contains("not_found"), "{out:?}");

    // Failover: a dead node first, then the live one; the other way round too.
    let dead = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        format!("http://{}", l.local_addr().unwrap())
    };
    let both = format!("{dead},{}", node.base);
    let out = run(
        {
            let mut c = cli.cmd(&["jobs", "list", "-o", "json", "--url", &both]);
            c.env_remove("SUNDIAL_URL");
            c
        },
        &cli.key,
    )
    .await
    .ok();
    assert_eq!(out.json().as_array().unwrap().len(), 1);
    let out = cli.run(&["apps", "list", "--url", &dead, "--url", &node.base]).await.ok();
    assert!(out.stdout.contains(" a"), "{out:?}");
    // Only dead nodes: exit 3 naming them.
    let out = cli.run(&["apps", "list", "--url", &dead]).await;
    assert_eq!(out.code, 3, "{out:?}");
    assert!(out.stderr.contains(&dead), "{out:?}");

    // No key anywhere: a clear message, exit 2, no request made.
    let mut c = sundial(dir);
    c.args(["jobs", "list", "--url", &node.base]);
    let out = run(c, "sk_none").await;
    assert_eq!(out.code, 2, "{out:?}");
    assert!(out.stderr.contains("no API key") && out.stderr.contains("SUNDIAL_API_KEY"), "{out:?}");
    // A wrong key: the server's 401.
    let mut c = sundial(dir);
    c.args(["jobs", "list", "--url", &node.base]).env("SUNDIAL_API_KEY", "sk_wrong_key");
    let out = run(c, "sk_wrong_key").await;
    assert_eq!(out.code, 1, "{out:?}");
    assert!(out.stderr.contains("HTTP 401"), "{out:?}");

    // The key and nodes from the config file ($SUNDIAL_CLI_CONFIG), with a warning while
    // others may read it.
    let cfg = dir.join("cli.toml");
    std::fs::write(&cfg, format!("urls = [\"{dead}\", \"{}\"]\napi_key = \"{}\"\n", node.base, cli.key)).unwrap();
    {
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::set_permissions(&cfg, std::fs::Permissions::from_mode(0o644)).unwrap();
    }
    let mut c = sundial(dir);
    c.args(["apps", "list", "-o", "json"]).env("SUNDIAL_CLI_CONFIG", &cfg);
    let out = run(c, &cli.key).await.ok();
    assert_eq!(out.json().as_array().unwrap().len(), 1);
    assert!(out.stderr.contains("warning") && out.stderr.contains("chmod 600"), "{out:?}");
    {
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::set_permissions(&cfg, std::fs::Permissions::from_mode(0o600)).unwrap();
    }
    let mut c = sundial(dir);
    c.args(["apps", "list"]).env("SUNDIAL_CLI_CONFIG", &cfg);
    let out = run(c, &cli.key).await.ok();
    assert!(out.stderr.is_empty(), "{out:?}");
}
