//! Script jobs end to end on the real binary: uploaded through the API, delivered by the
//! engine to a runner (the one `serve` builds in, or a `sundial runner` process), run in
//! the sandboxes, with their logs, outputs, versions and failures recorded on the run.
//!
//! The Python and JavaScript interpreters come from `scripts/fetch-interpreters` (the
//! README's test command runs it); compiled modules are cached in one directory under
//! `target/` shared by these tests, so CPython is compiled once per build, not per test.

mod common;

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::Stdio;
use std::time::{Duration, Instant};

use common::*;
use reqwest::Method;
use serde_json::{Value, json};

const OPERATOR_KEY: &str = "sk_scripts_operator_key_for_the_script_job_tests_0123456789";

fn workspace() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn interpreters_dir() -> String {
    std::env::var("SUNDIAL_INTERPRETERS_DIR")
        .unwrap_or_else(|_| workspace().join("target/interpreters").display().to_string())
}

fn runner_cache() -> String {
    workspace().join("target/test-runner-cache").display().to_string()
}

struct Setup {
    node: Node,
    key: String,
    app_id: String,
    secret: String,
    _tmp: tempfile::TempDir,
}

/// A node on `database_url` with `envs`, a tenant and an app `scripts` (no endpoints).
async fn start(database_url: Option<&str>, envs: &[(&str, &str)]) -> Setup {
    let tmp = tempfile::tempdir().unwrap();
    let sqlite = format!("sqlite://{}", tmp.path().join("sundial.db").display());
    let url = database_url.map(str::to_string).unwrap_or(sqlite);
    let (interp, cache) = (interpreters_dir(), runner_cache());
    let mut all: Vec<(&str, &str)> = vec![
        ("SUNDIAL_ADMIN_KEY", OPERATOR_KEY),
        ("SUNDIAL_INTERPRETERS_DIR", &interp),
        ("SUNDIAL_RUNNER_DIR", &cache),
        ("NO_COLOR", "1"),
        ("SUNDIAL_LOG", "info"),
    ];
    all.extend_from_slice(envs);
    let node = serve_async(&url, "node_scripts", &all, &tmp.path().join("node.log")).await;
    let (s, tenant) =
        call(&node.base, Method::POST, "/api/v1/tenants", OPERATOR_KEY, Some(json!({"name": "acme"}))).await;
    assert_eq!(s, 201, "{tenant}");
    let key = tenant["admin_key"].as_str().unwrap().to_string();
    let (s, app) = call(&node.base, Method::POST, "/api/v1/apps", &key, Some(json!({"name": "scripts"}))).await;
    assert_eq!(s, 201, "{app}");
    let (app_id, secret) = (app["id"].as_str().unwrap().to_string(), app["secret"].as_str().unwrap().to_string());
    Setup { node, key, app_id, secret, _tmp: tmp }
}

impl Setup {
    async fn call(&self, method: Method, path: &str, body: Option<Value>) -> (u16, Value) {
        call(&self.node.base, method, path, &self.key, body).await
    }

    async fn script(&self, name: &str, runtime: &str, source: &str) -> Value {
        let (s, v) = self
            .call(Method::POST, "/api/v1/scripts", Some(json!({"name": name, "runtime": runtime, "source": source})))
            .await;
        assert_eq!(s, 201, "{v}");
        v
    }

    /// A manual job running script `script`, failing for good on its first failure.
    async fn job(&self, name: &str, script: &str, extra: Value) -> String {
        let mut body = json!({"name": name, "app": "scripts", "script": script, "schedule": {"kind": "manual"},
            "failure": {"policy": "discard"}, "timeout_ms": 20_000, "params": {"to": "world"}});
        for (k, v) in extra.as_object().unwrap() {
            body[k] = v.clone();
        }
        let (s, v) = self.call(Method::POST, "/api/v1/jobs", Some(body)).await;
        assert_eq!(s, 201, "{v}");
        v["id"].as_str().unwrap().to_string()
    }

    async fn trigger(&self, job_id: &str) -> String {
        let (s, v) = self.call(Method::POST, &format!("/api/v1/jobs/{job_id}/trigger"), None).await;
        assert!(s == 201 || s == 200, "{v}");
        v["id"].as_str().unwrap().to_string()
    }

    /// The run once it is final (with attempts and logs), within `limit`.
    async fn final_run(&self, run_id: &str, limit: Duration) -> Value {
        let until = Instant::now() + limit;
        loop {
            let (s, v) = self.call(Method::GET, &format!("/api/v1/runs/{run_id}"), None).await;
            assert_eq!(s, 200, "{v}");
            if terminal(v["state"].as_str().unwrap_or("")) {
                return v;
            }
            assert!(
                Instant::now() < until,
                "run {run_id} not final after {limit:?}: {v}\n{}",
                tail(&self.node.log, 30)
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    async fn run_to_end(&self, job_id: &str) -> Value {
        let id = self.trigger(job_id).await;
        self.final_run(&id, Duration::from_secs(60)).await
    }
}

fn log_text(run: &Value) -> String {
    run["logs"].as_array().unwrap().iter().map(|l| l["message"].as_str().unwrap_or("")).collect::<Vec<_>>().join("\n")
}

const HELLO_WAT: &str = r#"(module
  (import "wasi_snapshot_preview1" "fd_write" (func $fd_write (param i32 i32 i32 i32) (result i32)))
  (memory (export "memory") 1)
  (data (i32.const 16) "hello from wasm\0a{\"lang\": \"wasm\"}\0a")
  (func (export "_start")
    (i32.store (i32.const 0) (i32.const 16))
    (i32.store (i32.const 4) (i32.const 32))
    (drop (call $fd_write (i32.const 1) (i32.const 0) (i32.const 1) (i32.const 8)))))"#;

const LOOP_WAT: &str = r#"(module (func (export "_start") (loop $l (br $l))))"#;

/// Every runtime through the built-in runner: the run succeeds with the script's output
/// (its last stdout line, JSON), its stdout in the run's log, and the version it ran;
/// a new version is run from the next run on, a rollback runs the old one again, and a
/// pinned job keeps its version.
async fn every_runtime_runs_through_the_built_in_runner(database_url: Option<&str>) {
    let app = start(database_url, &[("SUNDIAL_ALLOW_SHELL", "true")]).await;
    let (_, rts) = app.call(Method::GET, "/api/v1/runtimes", None).await;
    for rt in rts["items"].as_array().unwrap() {
        assert_eq!(
            rt["available"], true,
            "every runtime is offered here (for python/javascript run scripts/fetch-interpreters): {rt}"
        );
    }
    let cases = [
        ("wasm", HELLO_WAT.to_string(), "hello from wasm"),
        (
            "python",
            "import sys, json\nprint('hello from python', json.loads(sys.argv[1])['to'])\nprint(json.dumps({'lang': 'python'}))\n"
                .to_string(),
            "hello from python world",
        ),
        (
            "javascript",
            "console.log('hello from javascript', JSON.parse(scriptArgs[1]).to);\nconsole.log(JSON.stringify({lang: 'javascript'}));\n"
                .to_string(),
            "hello from javascript world",
        ),
        (
            "bash",
            "echo \"hello from bash $(echo \"$1\" | tr -d '{}\\\"')\"\necho '{\"lang\": \"bash\"}'\n".to_string(),
            "hello from bash to:world",
        ),
        ("sh", "echo hello from sh\necho '{\"lang\": \"sh\"}'\n".to_string(), "hello from sh"),
    ];
    for (runtime, source, line) in &cases {
        app.script(&format!("hello-{runtime}"), runtime, source).await;
        let job = app.job(&format!("hello-{runtime}"), &format!("hello-{runtime}"), json!({})).await;
        let run = app.run_to_end(&job).await;
        assert_eq!(run["state"], "succeeded", "{runtime}: {run}");
        assert_eq!(run["output"], json!({"lang": runtime}), "{runtime}: the last stdout line is the output");
        assert!(log_text(&run).contains(line), "{runtime}: its stdout is in the run's log: {run}");
        assert_eq!(run["script_version"], 1, "{runtime}");
        assert!(run["attempts"][0]["executor_id"].as_str().unwrap().starts_with("builtin:"), "{run}");
    }
    // Versions: a new one runs from the next run on; a rollback runs the old one again.
    let (s, v) = app
        .call(Method::POST, "/api/v1/scripts/hello-python/versions", Some(json!({"source": "print('{\"v\": 2}')\n"})))
        .await;
    assert_eq!(s, 201, "{v}");
    let pinned = app.job("pinned", "hello-python", json!({"script_version": 1})).await;
    let following = app.job("following", "hello-python", json!({})).await;
    let run = app.run_to_end(&following).await;
    assert_eq!((run["output"].clone(), run["script_version"].clone()), (json!({"v": 2}), json!(2)));
    let run = app.run_to_end(&pinned).await;
    assert_eq!((run["output"].clone(), run["script_version"].clone()), (json!({"lang": "python"}), json!(1)));
    let (s, v) = app.call(Method::POST, "/api/v1/scripts/hello-python/restore", Some(json!({"version": 1}))).await;
    assert_eq!(s, 200, "{v}");
    let run = app.run_to_end(&following).await;
    assert_eq!((run["output"].clone(), run["script_version"].clone()), (json!({"lang": "python"}), json!(1)));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_runtime_runs_through_the_built_in_runner_on_sqlite() {
    every_runtime_runs_through_the_built_in_runner(None).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_runtime_runs_through_the_built_in_runner_on_mariadb() {
    let (url, db_name) = sundial_store::testing::TestDb::mysql_empty_url().await;
    let _drop_db = DropDb { name: db_name, keep_if: None };
    every_runtime_runs_through_the_built_in_runner(Some(&url)).await;
}

/// Hostile scripts through the runner: each run fails with a message saying what stopped
/// it, and the node and its runner keep working (a hello run succeeds afterwards).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_scripts_fail_saying_why_and_the_runner_keeps_working() {
    // Every hostile script at once: one slot each (they run side by side on the cores).
    let app = start(None, &[("SUNDIAL_ALLOW_SHELL", "true"), ("SUNDIAL_RUNNER_CONCURRENCY", "16")]).await;
    let hostile: &[(&str, &str, &str, &str)] = &[
        ("wasm-loop", "wasm", LOOP_WAT, "deadline"),
        ("py-loop", "python", "while True:\n    pass\n", "deadline"),
        ("py-bomb", "python", "b = bytearray(1 << 30)\n", "MemoryError"),
        ("py-socket", "python", "import socket\nsocket.create_connection(('127.0.0.1', 3306))\n", "exit code 1"),
        ("py-passwd", "python", "print(open('/etc/passwd').read())\n", "FileNotFoundError"),
        ("js-loop", "javascript", "for (;;) {}\n", "deadline"),
        ("sh-loop", "bash", "while :; do :; done\n", "timeout"),
        ("sh-shadow", "bash", "cat /etc/shadow\n", "exit code 1"),
        ("sh-usr", "bash", "echo x > /usr/pwned\n", "exit code 1"),
        ("sh-mysql", "bash", "echo > /dev/tcp/127.0.0.1/3306\n", "exit code 1"),
        ("sh-fsize", "bash", "head -c 10000000 /dev/zero > /work/big\n", "killed by signal 25 (SIGXFSZ)"),
        ("sh-fork", "bash", "f() { f | f & }; f\nsleep 30\n", "timeout"),
        ("sh-exit", "bash", "echo oops >&2\nexit 1\n", "exit code 1: oops"),
    ];
    let mut runs = Vec::new();
    for (name, runtime, source, _) in hostile {
        app.script(name, runtime, source).await;
        let job = app.job(name, name, json!({"timeout_ms": 3_000})).await;
        runs.push(app.trigger(&job).await);
    }
    for ((name, _, _, why), run_id) in hostile.iter().zip(&runs) {
        let run = app.final_run(run_id, Duration::from_secs(90)).await;
        assert_eq!(run["state"], "failed", "{name}: {run}");
        let message = run["message"].as_str().unwrap_or("");
        assert!(message.contains(why), "{name}: the message says `{why}`: {message}");
    }
    // The environment of the node is not the script's.
    app.script("env", "bash", "echo \"${SUNDIAL_ADMIN_KEY:-unset}\"\n").await;
    let job = app.job("env", "env", json!({})).await;
    let run = app.run_to_end(&job).await;
    assert_eq!(run["state"], "succeeded", "{run}");
    assert!(log_text(&run).contains("unset") && !log_text(&run).contains(OPERATOR_KEY), "{run}");
    // Still working.
    app.script("hello", "wasm", HELLO_WAT).await;
    let job = app.job("hello", "hello", json!({})).await;
    assert_eq!(app.run_to_end(&job).await["state"], "succeeded");
    let mut node = app.node;
    assert!(node.alive(), "the node survived every hostile script");
}

/// Script limits that hold, and failures that say what happened: a run writing past its
/// disk quota fails `disk quota exceeded` in every runtime; a shell script killed by a
/// signal says so; output without newlines reaches the log byte for byte; a Python or
/// JavaScript source that does not compile is refused at upload, with the interpreter's
/// message and line.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn script_limits_hold_and_failures_say_what_happened() {
    let app = start(
        None,
        &[
            ("SUNDIAL_ALLOW_SHELL", "true"),
            ("SUNDIAL_SHELL_ACCEPT_WEAKER", "true"),
            ("SUNDIAL_SCRIPT_DISK_BYTES", "1048576"),
        ],
    )
    .await;
    let (_, rts) = app.call(Method::GET, "/api/v1/runtimes", None).await;
    let shell = rts["items"].as_array().unwrap().iter().any(|r| r["runtime"] == "bash" && r["available"] == true);
    // Sources that do not compile: refused at upload, and as a new version.
    for (name, runtime, source, line, says) in [
        ("bad-py", "python", "print('ok')\ndef f(:\n    pass\n", 2, "SyntaxError"),
        ("bad-js", "javascript", "console.log('ok');\nlet x = ;\n", 2, "SyntaxError"),
    ] {
        let (s, v) = app
            .call(Method::POST, "/api/v1/scripts", Some(json!({"name": name, "runtime": runtime, "source": source})))
            .await;
        assert_eq!(
            (s, v["code"].as_str(), v["details"]["field"].as_str()),
            (422, Some("invalid_source"), Some("source")),
            "{v}"
        );
        assert!(v["message"].as_str().unwrap().contains(says), "{v}");
        assert_eq!(v["details"]["line"], json!(line), "{v}");
        app.script(name, runtime, if runtime == "python" { "print('ok')\n" } else { "console.log('ok');\n" }).await;
        let (s, v) =
            app.call(Method::POST, &format!("/api/v1/scripts/{name}/versions"), Some(json!({"source": source}))).await;
        assert_eq!((s, v["code"].as_str()), (422, Some("invalid_source")), "{v}");
    }
    // Past the disk quota (1 MiB here), in every runtime.
    let mut fillers = vec![
        (
            "fill-py",
            "python",
            "chunk = b'x' * 65536\nwith open('/work/fill', 'wb') as f:\n    for _ in range(64):\n        f.write(chunk)\n",
        ),
        (
            "fill-js",
            "javascript",
            "const f = std.open('/work/fill', 'w');\nconst chunk = 'x'.repeat(65536);\nfor (let i = 0; i < 64; i++) f.puts(chunk);\nf.close();\n",
        ),
    ];
    if shell {
        fillers.push(("fill-sh", "bash", "head -c 4000000 /dev/zero > /work/fill\necho done\n"));
    }
    for (name, runtime, source) in fillers {
        app.script(name, runtime, source).await;
        let job = app.job(name, name, json!({})).await;
        let run = app.run_to_end(&job).await;
        assert_eq!(run["state"], "failed", "{name}: {run}");
        let message = run["message"].as_str().unwrap_or("");
        assert!(message.contains("disk quota exceeded"), "{name}: {message}");
    }
    // Runaway recursion in Python: named, in Python and in C alike.
    for (name, source) in [
        ("py-deep", "import sys\nsys.setrecursionlimit(10**6)\ndef f(n):\n    return f(n + 1)\nf(0)\n"),
        ("py-c-deep", "class A:\n    def __repr__(self):\n        return repr(self)\nrepr(A())\n"),
    ] {
        app.script(name, "python", source).await;
        let job = app.job(name, name, json!({})).await;
        let run = app.run_to_end(&job).await;
        let message = run["message"].as_str().unwrap_or("");
        assert!(message.contains("recursion") && message.contains("stack"), "{name}: {message}");
    }
    if shell {
        app.script("sig", "bash", "echo before\nkill -9 $$\n").await;
        let job = app.job("sig", "sig", json!({})).await;
        let run = app.run_to_end(&job).await;
        assert_eq!(run["state"], "failed", "{run}");
        assert!(run["message"].as_str().unwrap().starts_with("killed by signal 9 (SIGKILL)"), "{run}");
        // 20,000 bytes without a newline: all of them reach the log.
        app.script("flat", "bash", "head -c 20000 /dev/zero | tr '\\0' 'a'\n").await;
        let job = app.job("flat", "flat", json!({})).await;
        let run = app.run_to_end(&job).await;
        assert_eq!(run["state"], "succeeded", "{run}");
        let logged: String = run["logs"].as_array().unwrap().iter().map(|l| l["message"].as_str().unwrap()).collect();
        assert_eq!(logged, "a".repeat(20_000));
    }
}

/// A job lowers its runner's script limits (`script_limits`): the same script that runs
/// within the runner's limits fails naming the job's lower one; a job's limits are shown on
/// it, and bad ones are refused naming the field, changing nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_lowers_the_runners_script_limits() {
    let app = start(None, &[]).await;
    let fill = "chunk = b'x' * 65536\nwith open('/work/fill', 'wb') as f:\n    for _ in range(32):\n        f.write(chunk)\nprint('{\"filled\": 2097152}')\n";
    app.script("fill", "python", fill).await;
    let roomy = app.job("fill-roomy", "fill", json!({})).await;
    assert_eq!(app.run_to_end(&roomy).await["state"], "succeeded", "2 MiB is within the runner's 64 MiB");
    let tight = app.job("fill-tight", "fill", json!({"script_limits": {"disk_bytes": 1_048_576}})).await;
    let (_, job) = app.call(Method::GET, &format!("/api/v1/jobs/{tight}"), None).await;
    assert_eq!(job["script_limits"], json!({"disk_bytes": 1_048_576}), "{job}");
    let run = app.run_to_end(&tight).await;
    assert_eq!(run["state"], "failed", "{run}");
    assert!(run["message"].as_str().unwrap_or("").contains("disk quota exceeded"), "{run}");

    app.script("count", "python", "n = 0\nfor i in range(10_000_000):\n    n += i\nprint(n)\n").await;
    let job = app.job("count-fuel", "count", json!({"script_limits": {"fuel": 1_000_000}})).await;
    let run = app.run_to_end(&job).await;
    assert!(run["message"].as_str().unwrap_or("").contains("out of fuel"), "{run}");

    app.script("loud", "python", "print('a' * 10000)\n").await;
    let job = app.job("loud", "loud", json!({"script_limits": {"output_bytes": 2048}})).await;
    let run = app.run_to_end(&job).await;
    // Past the cap a wasm guest's write fails (Python ends with an I/O error), and the run says so.
    assert!(run["message"].as_str().unwrap_or("").contains("output truncated at the cap"), "{run}");
    let kept: usize = run["logs"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|l| l["level"] == "info")
        .map(|l| l["message"].as_str().unwrap().len())
        .sum();
    assert!((1..=2048).contains(&kept), "at most 2048 bytes of stdout kept: {kept}");

    // Bad limits: refused, naming the field; nothing is created or changed.
    let base = json!({"app": "scripts", "script": "fill", "schedule": {"kind": "manual"}});
    for (limits, field) in [
        (json!({"disk_bytes": 1}), "script_limits.disk_bytes"),
        (json!({"memory_bytes": 1024}), "script_limits.memory_bytes"),
        (json!({"open_files": 1_000_000}), "script_limits.open_files"),
        (json!({"kill_grace_ms": 3_600_000}), "script_limits.kill_grace_ms"),
        (json!({"fuel": 0}), "script_limits.fuel"),
    ] {
        let mut body = base.clone();
        body["name"] = json!("bad-limits");
        body["script_limits"] = limits;
        let (s, v) = app.call(Method::POST, "/api/v1/jobs", Some(body)).await;
        assert_eq!((s, v["details"]["field"].as_str()), (422, Some(field)), "{v}");
    }
    let body = json!({"name": "bad-limits", "app": "scripts", "handler": "h", "schedule": {"kind": "manual"},
        "script_limits": {"disk_bytes": 1_048_576}});
    let (s, v) = app.call(Method::POST, "/api/v1/jobs", Some(body)).await;
    assert_eq!((s, v["details"]["field"].as_str()), (422, Some("script_limits")), "{v}");
    let (_, v) = app.call(Method::GET, "/api/v1/jobs?name=bad-limits", None).await;
    assert_eq!(v["items"], json!([]), "nothing was created: {v}");
}

/// A cancelled run's script is stopped: with one script slot, the next run gets it at once.
/// And without `--allow-shell` the shell runtime is refused at upload, saying why.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancelled_script_is_stopped_and_the_shell_is_off_by_default() {
    let app = start(None, &[("SUNDIAL_RUNNER_CONCURRENCY", "1")]).await;
    let (s, v) = app
        .call(Method::POST, "/api/v1/scripts", Some(json!({"name": "sh", "runtime": "bash", "source": "echo hi"})))
        .await;
    assert_eq!((s, v["code"].as_str()), (422, Some("runtime_unavailable")), "{v}");
    assert!(v["message"].as_str().unwrap().contains("--allow-shell"), "{v}");
    let (_, rts) = app.call(Method::GET, "/api/v1/runtimes", None).await;
    let bash = rts["items"].as_array().unwrap().iter().find(|r| r["runtime"] == "bash").unwrap().clone();
    assert_eq!((bash["available"].clone(), bash["isolation"].clone()), (json!(false), json!("none")));

    app.script("spin", "python", "while True:\n    pass\n").await;
    let spin = app.job("spin", "spin", json!({"timeout_ms": 120_000})).await;
    let run_id = app.trigger(&spin).await;
    let until = Instant::now() + Duration::from_secs(30);
    loop {
        let (_, v) = app.call(Method::GET, &format!("/api/v1/runs/{run_id}"), None).await;
        if v["state"] == "running" {
            break;
        }
        assert!(Instant::now() < until, "never running: {v}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let (s, v) = app.call(Method::POST, &format!("/api/v1/runs/{run_id}/cancel"), None).await;
    assert_eq!(s, 200, "{v}");
    app.script("hello", "wasm", HELLO_WAT).await;
    let hello = app.job("hello", "hello", json!({})).await;
    let started = Instant::now();
    let run = app.run_to_end(&hello).await;
    assert_eq!(run["state"], "succeeded", "{run}");
    assert!(
        started.elapsed() < Duration::from_secs(15),
        "the cancelled script freed its slot: {:?}",
        started.elapsed()
    );
    assert_eq!(app.final_run(&run_id, Duration::from_secs(5)).await["state"], "cancelled");
}

/// `sundial runner`: a process of its own that registers with the app for its runtimes,
/// runs the app's script jobs (the node has no built-in runner), and deregisters on SIGTERM.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_runner_process_registers_runs_the_apps_scripts_and_deregisters() {
    let app = start(None, &[("SUNDIAL_RUNNER", "false")]).await;
    app.script("hello", "wasm", HELLO_WAT).await;
    let job = app.job("hello", "hello", json!({})).await;
    let run = app.run_to_end(&job).await;
    assert_eq!(run["state"], "failed", "no runner yet: {run}");
    assert!(run["message"].as_str().unwrap().contains("no online runner runs `wasm` scripts"), "{run}");

    let tmp = tempfile::tempdir().unwrap();
    let log = tmp.path().join("runner.log");
    let mut child = sundial()
        .args(["runner", "--url", &app.node.base, "--app-id", &app.app_id, "--listen", "127.0.0.1:0"])
        .args(["--sync-wait-ms", "200"])
        .args(["--interpreters-dir", &interpreters_dir(), "--dir", &runner_cache()])
        .env("SUNDIAL_APP_SECRET", &app.secret)
        .env("SUNDIAL_LOG", "info")
        .stdout(Stdio::piped())
        .stderr(Stdio::from(std::fs::File::create(&log).unwrap()))
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let registered = tokio::task::spawn_blocking(move || {
        let mut lines = BufReader::new(stdout).lines();
        let found = lines.by_ref().map_while(Result::ok).find(|l| l.contains("registered with"));
        std::thread::spawn(move || for _ in lines {});
        found
    })
    .await
    .unwrap();
    assert!(registered.is_some(), "the runner registered; its log:\n{}", tail(&log, 30));
    let (_, execs) = app.call(Method::GET, &format!("/api/v1/apps/{}/executors", app.app_id), None).await;
    let exec = &execs["items"][0];
    assert_eq!(exec["state"], "online", "{execs}");
    assert_eq!(exec["runtimes"], json!(["wasm", "python", "javascript"]), "the shell is off by default: {execs}");
    let run = app.run_to_end(&job).await;
    assert_eq!(run["state"], "succeeded", "{run}\n{}", tail(&log, 30));
    assert_eq!(run["attempts"][0]["executor_id"], exec["id"], "{run}");
    assert!(log_text(&run).contains("hello from wasm"), "{run}");

    // A run longer than the runner's sync wait (200 ms here) answers 202 and reports by callback.
    app.script("slow", "python", "import time, json\ntime.sleep(1.5)\nprint(json.dumps({'slept': True}))\n").await;
    let slow = app.job("slow", "slow", json!({})).await;
    let run = app.run_to_end(&slow).await;
    assert_eq!((run["state"].clone(), run["output"].clone()), (json!("succeeded"), json!({"slept": true})), "{run}");
    // SIGTERM while a script runs: it finishes (and reports), a new delivery gets 503 meanwhile
    // (the executor is marked offline, the run fails for want of a runner), then the runner
    // deregisters and exits 0.
    app.script("sleepy", "python", "import time\ntime.sleep(3)\nprint('{\"done\": 1}')\n").await;
    let sleepy = app.job("sleepy", "sleepy", json!({})).await;
    let sleepy_run = app.trigger(&sleepy).await;
    let until = Instant::now() + Duration::from_secs(20);
    loop {
        let (_, v) = app.call(Method::GET, &format!("/api/v1/runs/{sleepy_run}"), None).await;
        if v["state"] == "running" {
            break;
        }
        assert!(Instant::now() < until, "never running: {v}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    signal(child.id(), "TERM");
    tokio::time::sleep(Duration::from_millis(300)).await;
    let refused = app.run_to_end(&job).await;
    assert_eq!(refused["state"], "failed", "{refused}");
    let trail = refused["attempts"][0]["trail"].to_string();
    assert!(trail.contains("executor_offline"), "the stopping runner answered 503: {refused}");
    let run = app.final_run(&sleepy_run, Duration::from_secs(20)).await;
    assert_eq!((run["state"].clone(), run["output"].clone()), (json!("succeeded"), json!({"done": 1})), "{run}");
    let until = Instant::now() + Duration::from_secs(20);
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        assert!(Instant::now() < until, "the runner did not stop; its log:\n{}", tail(&log, 30));
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert!(status.success(), "{status}; log:\n{}", tail(&log, 30));
    let (_, execs) = app.call(Method::GET, &format!("/api/v1/apps/{}/executors", app.app_id), None).await;
    assert_eq!(execs["items"][0]["state"], "offline", "deregistered: {execs}");
}

/// The example scripts in `examples/scripts/` (docs/scripts.md's) run as documented.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_example_scripts_run() {
    let app = start(None, &[("SUNDIAL_ALLOW_SHELL", "true")]).await;
    let examples = workspace().join("examples/scripts");
    let cases = [
        ("hello.wat", "wasm", json!({"greeted": true}), "hello from a wasm job"),
        ("report.py", "python", json!({"rows": 2, "sum": 400}), "eu: 200"),
        ("transform.js", "javascript", json!({"words": 2, "longest": "sundial"}), "counted 2 words"),
        ("cleanup.sh", "bash", json!({"removed": 3}), "removed 3 files"),
    ];
    for (file, runtime, output, line) in cases {
        let source = std::fs::read_to_string(examples.join(file)).unwrap();
        let name = file.replace('.', "-");
        app.script(&name, runtime, &source).await;
        let job = app.job(&name, &name, json!({"params": {}})).await;
        let run = app.run_to_end(&job).await;
        assert_eq!(run["state"], "succeeded", "{file}: {run}");
        assert_eq!(run["output"], output, "{file}: {run}");
        assert!(log_text(&run).contains(line), "{file}: {run}");
    }
}

/// The chain walk-through of docs/chains.md (`examples/chains/pipeline.sh`): extract → two transforms
/// in parallel → load (a fan-in), and an `on_failure` alert, as script jobs on the built-in
/// runner; the chain's params flow down and the tree says what fired and what did not. Run a
/// second time, it updates the scripts and jobs the first made and fires a new chain.
async fn the_chain_example_runs(database_url: Option<&str>) {
    let app = start(database_url, &[]).await;
    let mut chains = Vec::new();
    for _ in 0..2 {
        let out = tokio::process::Command::new("bash")
            .arg(workspace().join("examples/chains/pipeline.sh"))
            .env("SUNDIAL_URL", &app.node.base)
            .env("KEY", &app.key)
            .env("APP", "scripts")
            .output()
            .await
            .unwrap();
        let (text, err) = (String::from_utf8_lossy(&out.stdout).to_string(), String::from_utf8_lossy(&out.stderr));
        assert!(out.status.success() && text.starts_with("chain "), "{text}\n{err}\n{}", tail(&app.node.log, 30));
        let chain = text.split_whitespace().nth(1).unwrap().to_string();
        assert!(text.starts_with(&format!("chain {chain} done params {{\"day\": \"2026-11-25\"}}")), "{text}");
        for line in [
            r#"load          succeeded  parent  {"day": "2026-11-25", "loaded": {"eu": 264.6, "us": 215.0}, "sum": 479.6}"#,
            "transform-eu -> load: fired",
            "extract -> alert: not_fired (condition_not_met: the edge fires on_failure; the parent run ended `succeeded`)",
        ] {
            assert!(text.contains(line), "{line:?} not in:\n{text}");
        }
        let (s, v) = app.call(Method::GET, &format!("/api/v1/runs?chain_id={chain}"), None).await;
        assert_eq!(s, 200, "{v}");
        let runs = v["items"].as_array().unwrap();
        assert_eq!(runs.len(), 4, "{v}");
        let load = runs.iter().find(|r| r["parent_run_ids"].is_array()).expect("the fan-in");
        assert_eq!(load["fire_key"], format!("p:{chain}"), "keyed by its chain: {load}");
        assert_eq!(load["parent_run_ids"].as_array().unwrap().len(), 2, "{load}");
        chains.push(chain);
    }
    assert_ne!(chains[0], chains[1], "the second run fires a chain of its own");
    let (_, jobs) = app.call(Method::GET, "/api/v1/jobs?name=extract", None).await;
    assert_eq!(jobs["items"].as_array().unwrap().len(), 1, "the jobs were replaced, not made twice: {jobs}");
    let (_, script) = app.call(Method::GET, "/api/v1/scripts/extract", None).await;
    assert_eq!(script["current_version"], 2, "the second run uploaded a new version: {script}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_chain_example_runs_on_sqlite() {
    the_chain_example_runs(None).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_chain_example_runs_on_mariadb() {
    let (url, db_name) = sundial_store::testing::TestDb::mysql_empty_url().await;
    let _drop = DropDb { name: db_name, keep_if: None };
    the_chain_example_runs(Some(&url)).await;
}

/// With `--allow-shell --host-interpreters`, Python and JavaScript scripts run on the host's
/// `python3` and `node` in the shell sandbox: the host's interpreter, none of the host's
/// files, network or environment.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn host_interpreters_run_python_and_javascript_in_the_shell_sandbox() {
    let app = start(None, &[("SUNDIAL_ALLOW_SHELL", "true"), ("SUNDIAL_HOST_INTERPRETERS", "true")]).await;
    let (_, rts) = app.call(Method::GET, "/api/v1/runtimes", None).await;
    let offer = |name: &str| rts["items"].as_array().unwrap().iter().find(|r| r["runtime"] == name).unwrap().clone();
    let python = offer("python");
    assert_eq!((python["available"].clone(), python["isolation"].clone()), (json!(true), json!("strong")), "{rts}");
    assert!(python["detail"].as_str().unwrap().contains("/usr/bin/python3"), "{python}");
    let cases: &[(&str, &str, &str, Value)] = &[
        (
            "py-host",
            "python",
            "import json, os, sys\nprint(json.dumps({'impl': sys.implementation.name, 'env': sorted(k for k in os.environ if k.startswith('SUNDIAL_ADMIN'))}))\n",
            json!({"impl": "cpython", "env": []}),
        ),
        (
            "js-host",
            "javascript",
            "console.log(JSON.stringify({node: process.version.startsWith('v'), to: JSON.parse(process.argv[2]).to}));\n",
            json!({"node": true, "to": "world"}),
        ),
    ];
    for (name, runtime, source, output) in cases {
        if *runtime == "javascript" && offer("javascript")["available"] != true {
            eprintln!("skipped {name}: {}", offer("javascript")["detail"]);
            continue;
        }
        app.script(name, runtime, source).await;
        let job = app.job(name, name, json!({})).await;
        let run = app.run_to_end(&job).await;
        assert_eq!(run["state"], "succeeded", "{name}: {run}");
        assert_eq!(&run["output"], output, "{name}: {run}");
    }
    for (name, source, why) in [
        ("py-shadow", "print(open('/etc/shadow').read())\n", "exit code 1"),
        ("py-net", "import socket\nsocket.create_connection(('127.0.0.1', 3306), timeout=2)\n", "exit code 1"),
        ("py-loop", "while True:\n    pass\n", "timeout"),
    ] {
        app.script(name, "python", source).await;
        let job = app.job(name, name, json!({"timeout_ms": 3_000})).await;
        let run = app.run_to_end(&job).await;
        assert_eq!(run["state"], "failed", "{name}: {run}");
        assert!(run["message"].as_str().unwrap().contains(why), "{name}: {run}");
    }
}
