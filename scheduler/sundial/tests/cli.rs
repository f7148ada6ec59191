//! The binary end to end: the README's run command and quickstart, the SQLite file
//! lock, `migrate`, MySQL via `--database-url`, `SUNDIAL_ADMIN_KEY`, SIGTERM.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

struct Node {
    child: Child,
    base: String,
    operator_key: Option<String>,
}

fn sundial() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_sundial"));
    for (k, _) in std::env::vars() {
        if k.starts_with("SUNDIAL_") {
            c.env_remove(k);
        }
    }
    c.env("SUNDIAL_LOG", "warn");
    c
}

/// Start `sundial serve ARGS` and wait for its "listening" line.
fn serve(args: &[&str], envs: &[(&str, &str)]) -> Node {
    let mut cmd = sundial();
    cmd.arg("serve").args(args).args(["--listen", "127.0.0.1:0"]).envs(envs.iter().copied());
    let mut child = cmd.stdout(Stdio::piped()).stderr(Stdio::inherit()).spawn().expect("spawn sundial");
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut base = None;
    let mut operator_key = None;
    while Instant::now() < deadline {
        let Some(Ok(line)) = lines.next() else { break };
        if let Some(k) = line.strip_prefix("operator API key (shown once, store it now): ") {
            operator_key = Some(k.trim().to_string());
        }
        if let Some(url) = line.strip_prefix("Sundial listening on ") {
            base = Some(url.trim().to_string());
            break;
        }
    }
    // Keep draining stdout so the child never blocks on a full pipe.
    std::thread::spawn(move || for _ in lines {});
    Node { child, base: base.expect("sundial printed its URL"), operator_key }
}

impl Node {
    fn sigterm(mut self) -> std::process::ExitStatus {
        Command::new("kill").args(["-TERM", &self.child.id().to_string()]).status().unwrap();
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            if let Some(s) = self.child.try_wait().unwrap() {
                return s;
            }
            assert!(Instant::now() < deadline, "sundial did not exit after SIGTERM");
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Node {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

async fn call(base: &str, method: reqwest::Method, path: &str, key: &str, body: Option<Value>) -> (u16, Value) {
    let mut req = reqwest::Client::new().request(method, format!("{base}{path}")).bearer_auth(key);
    if let Some(b) = body {
        // Like the README's curl: a raw body, no content type.
        req = req.body(serde_json::to_vec(&b).unwrap());
    }
    let resp = req.send().await.unwrap();
    let status = resp.status().as_u16();
    (status, resp.json().await.unwrap_or(Value::Null))
}

/// The README quickstart, as written there.
async fn quickstart(base: &str, operator_key: &str) {
    use reqwest::Method;
    let (s, tenant) = call(base, Method::POST, "/api/v1/tenants", operator_key, Some(json!({"name": "acme"}))).await;
    assert_eq!(s, 201, "{tenant}");
    let key = tenant["admin_key"].as_str().unwrap();
    let (s, app) = call(
        base,
        Method::POST,
        "/api/v1/apps",
        key,
        Some(json!({"name": "billing", "endpoints": ["http://127.0.0.1:9000/hook"]})),
    )
    .await;
    assert_eq!(s, 201, "{app}");
    assert!(app["secret"].as_str().unwrap().starts_with("whsec_"));
    let (s, job) = call(
        base,
        Method::POST,
        "/api/v1/jobs",
        key,
        Some(json!({
            "name": "nightly-invoices", "app": "billing", "handler": "invoice.run",
            "schedule": {"kind": "cron", "expression": "0 30 2 * * *", "timezone": "Europe/Berlin"}
        })),
    )
    .await;
    assert_eq!(s, 201, "{job}");
    let (s, preview) =
        call(base, Method::GET, &format!("/api/v1/jobs/{}/preview?count=3", job["id"].as_str().unwrap()), key, None)
            .await;
    assert_eq!(s, 200, "{preview}");
    assert_eq!(preview["times"].as_array().unwrap().len(), 3);
    assert!(
        preview["times"][0].as_str().unwrap().contains("T02:30:00.000+0")
            || preview["times"][0].as_str().unwrap().contains("T03:00:00.000+02:00")
    );
}

#[tokio::test]
async fn serve_on_embedded_sqlite_runs_the_quickstart_and_refuses_a_second_server() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let data = data.to_str().unwrap();
    let node = serve(&["--data-dir", data], &[]);
    let key = node.operator_key.clone().expect("first start prints an operator key");
    let health = reqwest::get(format!("{}/readyz", node.base)).await.unwrap();
    assert_eq!(health.status(), 200);
    quickstart(&node.base, &key).await;

    // A second server on the same file is refused with a clear message.
    let second = sundial().args(["serve", "--data-dir", data, "--listen", "127.0.0.1:0"]).output().unwrap();
    assert!(!second.status.success());
    let stderr = String::from_utf8_lossy(&second.stderr);
    assert!(stderr.contains("another `sundial serve`"), "{stderr}");

    assert!(node.sigterm().success(), "SIGTERM exits 0");

    // Restart: data kept, no new operator key printed, the old one still works.
    let again = serve(&["--data-dir", data], &[]);
    assert!(again.operator_key.is_none());
    let (s, tenants) = call(&again.base, reqwest::Method::GET, "/api/v1/tenants", &key, None).await;
    assert_eq!((s, tenants["items"][0]["name"].as_str()), (200, Some("acme")));
}

#[tokio::test]
async fn migrate_and_serve_on_mariadb_with_a_given_operator_key() {
    let (url, name) = sundial_store::testing::TestDb::mysql_empty_url().await;
    let out = sundial().args(["migrate", "--database-url", &url]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stdout).contains("migrations up to date"));
    // Applying again is a no-op.
    assert!(sundial().args(["migrate", "--database-url", &url]).status().unwrap().success());
    let key = "sk_test_operator_key_for_the_cli_test_0123456789";
    // No secret key: refused, naming the setting (every node of a cluster needs the same one).
    let out = sundial()
        .args(["serve", "--listen", "127.0.0.1:0"])
        .envs([("SUNDIAL_DATABASE_URL", url.as_str()), ("SUNDIAL_ADMIN_KEY", key)])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(stderr.contains("SUNDIAL_SECRET_KEY") && stderr.contains("secret_key_file"), "{stderr}");
    let secret_key = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=";
    let node =
        serve(&[], &[("SUNDIAL_DATABASE_URL", &url), ("SUNDIAL_ADMIN_KEY", key), ("SUNDIAL_SECRET_KEY", secret_key)]);
    assert!(node.operator_key.is_none(), "a given key is not printed");
    quickstart(&node.base, key).await;
    // The node heartbeats into the database from its start.
    let (s, nodes) = call(&node.base, reqwest::Method::GET, "/api/v1/nodes", key, None).await;
    assert_eq!(s, 200, "{nodes}");
    assert_eq!(nodes["items"].as_array().map(Vec::len), Some(1), "{nodes}");
    assert_eq!(nodes["items"][0]["state"], "alive", "{nodes}");
    assert_eq!(nodes["items"][0]["buckets"], 64, "alone, it owns every job bucket: {nodes}");
    assert!(node.sigterm().success());
    sundial_store::testing::drop_mysql_database(&name).await;
}

#[test]
fn bad_configuration_is_refused_clearly() {
    let out = sundial().args(["serve", "--log-format", "xml"]).output().unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("log_format"));
    let out =
        sundial().args(["serve", "--database-url", "postgres://x/y", "--listen", "127.0.0.1:0"]).output().unwrap();
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("unsupported database URL"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn openapi_subcommand_prints_the_checked_in_document() {
    let out = sundial().arg("openapi").output().unwrap();
    assert!(out.status.success());
    let checked_in =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../openapi/openapi.json")).unwrap();
    assert_eq!(String::from_utf8(out.stdout).unwrap(), checked_in);
}
