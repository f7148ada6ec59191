//! Scripts over HTTP: upload, versions, diff, rollback, and every bad upload refused with
//! the problem named and nothing stored.

use base64::Engine as _;
use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::helpers::*;

crate::on_both_databases!(
    a_script_gets_versions_a_diff_and_a_rollback,
    a_wasm_script_is_a_valid_wasi_command_or_refused_saying_why,
    bad_uploads_are_refused_with_the_field_named_and_store_nothing,
    scripts_belong_to_their_tenant_and_viewers_only_read,
    a_script_a_job_runs_is_not_deleted,
    a_job_follows_the_current_version_or_is_pinned_to_one,
);

const HELLO_WAT: &str = r#"(module
  (import "wasi_snapshot_preview1" "fd_write" (func $w (param i32 i32 i32 i32) (result i32)))
  (memory (export "memory") 1)
  (data (i32.const 16) "hello\n")
  (func (export "_start")
    (i32.store (i32.const 0) (i32.const 16))
    (i32.store (i32.const 4) (i32.const 6))
    (drop (call $w (i32.const 1) (i32.const 0) (i32.const 1) (i32.const 8)))))"#;

fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

async fn scripts_count(app: &TestApp, key: &str) -> usize {
    let (s, v) = app.get("/api/v1/scripts", key).await;
    assert_eq!(s, StatusCode::OK, "{v}");
    v["items"].as_array().unwrap().len()
}

fn problem(v: &Value) -> (&str, &str) {
    (v["code"].as_str().unwrap_or(""), v["details"]["field"].as_str().unwrap_or(""))
}

async fn a_script_gets_versions_a_diff_and_a_rollback(app: &TestApp) {
    let t = app.tenant("acme").await;
    let (s, v) = app
        .post(
            "/api/v1/scripts",
            &t.admin,
            json!({"name": "report", "runtime": "python", "source": "print('a')\nprint('b')\n", "note": "first"}),
        )
        .await;
    assert_eq!(s, StatusCode::CREATED, "{v}");
    assert_eq!((v["runtime"].as_str(), v["current_version"].as_i64()), (Some("python"), Some(1)));
    let id = v["id"].as_str().unwrap().to_string();
    let cur = &v["current"];
    assert_eq!(cur["size_bytes"], 22);
    assert_eq!(cur["encoding"], "text");
    assert_eq!(cur["note"], "first");
    assert_eq!(cur["sha256"].as_str().unwrap().len(), 64);
    assert!(cur["author"].as_str().unwrap().starts_with("key_"), "{cur}");
    assert!(cur.get("source").is_none(), "the script shows its current version's details, not its source");

    let (s, v2) = app
        .post(
            &format!("/api/v1/scripts/{id}/versions"),
            &t.admin,
            json!({"source": "print('a')\nprint('c')\n", "note": "c, not b"}),
        )
        .await;
    assert_eq!(s, StatusCode::CREATED, "{v2}");
    assert_eq!(v2["version"], 2);
    let (_, got) = app.get("/api/v1/scripts/report", &t.admin).await;
    assert_eq!(got["current_version"], 2, "a new version is current at once");

    // Each version keeps its source.
    let (s, one) = app.get(&format!("/api/v1/scripts/{id}/versions/1"), &t.admin).await;
    assert_eq!(s, StatusCode::OK, "{one}");
    assert_eq!(one["source"], "print('a')\nprint('b')\n");
    let (s, list) = app.get(&format!("/api/v1/scripts/{id}/versions?limit=1"), &t.admin).await;
    assert_eq!(s, StatusCode::OK, "{list}");
    assert_eq!(list["items"][0]["version"], 2, "newest first");
    assert!(list["items"][0].get("source").is_none());
    let cursor = list["next_cursor"].as_str().unwrap().to_string();
    let (_, rest) = app.get(&format!("/api/v1/scripts/{id}/versions?limit=1&cursor={cursor}"), &t.admin).await;
    assert_eq!(rest["items"][0]["version"], 1);
    assert!(rest["next_cursor"].is_null());

    // A diff, from 1 to the current one.
    let (s, d) = app.get(&format!("/api/v1/scripts/{id}/diff?from=1"), &t.admin).await;
    assert_eq!(s, StatusCode::OK, "{d}");
    assert_eq!((d["from"].as_i64(), d["to"].as_i64(), d["identical"].as_bool()), (Some(1), Some(2), Some(false)));
    let diff = d["diff"].as_str().unwrap();
    assert!(diff.contains("-print('b')") && diff.contains("+print('c')") && diff.contains(" print('a')"), "{diff}");
    assert!(diff.contains("report@v1") && diff.contains("report@v2"), "{diff}");

    // Roll back to 1: current again, and the next upload is 3.
    let (s, r) = app.post(&format!("/api/v1/scripts/{id}/restore"), &t.admin, json!({"version": 1})).await;
    assert_eq!(s, StatusCode::OK, "{r}");
    assert_eq!((r["current_version"].as_i64(), r["current"]["note"].as_str()), (Some(1), Some("first")));
    let (s, bad) = app.post(&format!("/api/v1/scripts/{id}/restore"), &t.admin, json!({"version": 7})).await;
    assert_eq!((s, problem(&bad).1), (StatusCode::UNPROCESSABLE_ENTITY, "version"), "{bad}");
    let (_, got) = app.get(&format!("/api/v1/scripts/{id}"), &t.admin).await;
    assert_eq!(got["current_version"], 1, "a refused restore changes nothing");
    let (s, v3) =
        app.post(&format!("/api/v1/scripts/{id}/versions"), &t.admin, json!({"source": "print('z')\n"})).await;
    assert_eq!((s, v3["version"].as_i64()), (StatusCode::CREATED, Some(3)), "{v3}");
    let (s, same) = app.get(&format!("/api/v1/scripts/{id}/diff?from=2&to=2"), &t.admin).await;
    assert_eq!(
        (s, same["identical"].as_bool(), same["diff"].as_str()),
        (StatusCode::OK, Some(true), Some("")),
        "{same}"
    );
    let (s, missing) = app.get(&format!("/api/v1/scripts/{id}/diff?from=9"), &t.admin).await;
    assert_eq!(s, StatusCode::NOT_FOUND, "{missing}");
    for v in ["9", "abc", "9223372036854775808"] {
        let (s, missing) = app.get(&format!("/api/v1/scripts/{id}/versions/{v}"), &t.admin).await;
        assert_eq!((s, missing["code"].as_str()), (StatusCode::NOT_FOUND, Some("not_found")), "{v}: {missing}");
    }
}

async fn a_wasm_script_is_a_valid_wasi_command_or_refused_saying_why(app: &TestApp) {
    let t = app.tenant("acme").await;
    // As `.wat` text, and as a binary in base64.
    let (s, v) = app
        .post("/api/v1/scripts", &t.admin, json!({"name": "hello-wat", "runtime": "wasm", "source": HELLO_WAT}))
        .await;
    assert_eq!(s, StatusCode::CREATED, "{v}");
    assert_eq!(v["current"]["encoding"], "text");
    let binary = wat::parse_str(HELLO_WAT).unwrap();
    let (s, v) = app
        .post(
            "/api/v1/scripts",
            &t.admin,
            json!({"name": "hello-bin", "runtime": "wasm", "source_base64": b64(&binary)}),
        )
        .await;
    assert_eq!(s, StatusCode::CREATED, "{v}");
    assert_eq!(v["current"]["encoding"], "base64");
    assert_eq!(v["current"]["size_bytes"].as_u64(), Some(binary.len() as u64));
    let id = v["id"].as_str().unwrap();
    let (_, one) = app.get(&format!("/api/v1/scripts/{id}/versions/1"), &t.admin).await;
    assert_eq!(one["source"].as_str(), Some(b64(&binary).as_str()), "the binary comes back as uploaded");
    let (s, d) = app.get(&format!("/api/v1/scripts/{id}/diff?from=1"), &t.admin).await;
    assert_eq!((s, problem(&d).1), (StatusCode::UNPROCESSABLE_ENTITY, "from"), "binaries have no text diff: {d}");

    let cases: Vec<(&str, Value, &str)> = vec![
        ("not a module", json!({"source_base64": b64(b"MZ\x90\x00 definitely not wasm")}), "not a WebAssembly module"),
        ("bad wat", json!({"source": "(module (func $f (result i32)))"}), "invalid module"),
        ("unparsable wat", json!({"source": "(module (func"}), "not valid `.wat` text"),
        (
            "a foreign import",
            json!({"source": "(module (import \"env\" \"socket\" (func)) (func (export \"_start\")))"}),
            "imports not allowed: `env.socket`",
        ),
        ("no entry point", json!({"source": "(module (func (export \"main\")))"}), "no `_start`"),
        (
            "an entry point that takes arguments",
            json!({"source": "(module (func (export \"_start\") (param i32)))"}),
            "no `_start`",
        ),
        (
            "a memory import, even from WASI",
            json!({"source": "(module (import \"wasi_snapshot_preview1\" \"m\" (memory 1)) (func (export \"_start\")))"}),
            "imports not allowed: `wasi_snapshot_preview1.m`",
        ),
        ("not base64", json!({"source_base64": "***"}), "not standard base64"),
    ];
    for (what, body, says) in cases {
        let mut body = body;
        body["name"] = json!("w");
        body["runtime"] = json!("wasm");
        let (s, v) = app.post("/api/v1/scripts", &t.admin, body).await;
        assert_eq!(s, StatusCode::UNPROCESSABLE_ENTITY, "{what}: {v}");
        assert!(v["message"].as_str().unwrap().contains(says), "{what}: {v}");
        assert!(["source", "source_base64"].contains(&problem(&v).1), "{what}: {v}");
    }
    assert_eq!(scripts_count(app, &t.admin).await, 2, "nothing refused was stored");
    // A new version is checked the same way, and a refused one changes nothing.
    let (s, v) = app
        .post("/api/v1/scripts/hello-wat/versions", &t.admin, json!({"source": "(module (func (export \"main\")))"}))
        .await;
    assert_eq!(s, StatusCode::UNPROCESSABLE_ENTITY, "{v}");
    let (_, got) = app.get("/api/v1/scripts/hello-wat/versions", &t.admin).await;
    assert_eq!(got["items"].as_array().unwrap().len(), 1);
}

async fn bad_uploads_are_refused_with_the_field_named_and_store_nothing(app: &TestApp) {
    let t = app.tenant("acme").await;
    let cases: Vec<(&str, Value, StatusCode, &str, &str)> = vec![
        (
            "unknown runtime",
            json!({"name": "a", "runtime": "cobol", "source": "x"}),
            StatusCode::UNPROCESSABLE_ENTITY,
            "unknown_variant",
            "runtime",
        ),
        (
            "no source",
            json!({"name": "a", "runtime": "bash"}),
            StatusCode::UNPROCESSABLE_ENTITY,
            "missing_field",
            "source",
        ),
        (
            "both sources",
            json!({"name": "a", "runtime": "wasm", "source": "(module)", "source_base64": "AGFzbQEAAAA="}),
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_field",
            "source",
        ),
        (
            "binary for text",
            json!({"name": "a", "runtime": "python", "source_base64": "cHJpbnQoMSk="}),
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_field",
            "source_base64",
        ),
        (
            "empty",
            json!({"name": "a", "runtime": "sh", "source": "  \n"}),
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_field",
            "source",
        ),
        (
            "a NUL",
            json!({"name": "a", "runtime": "sh", "source": "echo \u{0}"}),
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_field",
            "source",
        ),
        (
            "bad name",
            json!({"name": "no spaces", "runtime": "sh", "source": "true"}),
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_field",
            "name",
        ),
        (
            "long note",
            json!({"name": "a", "runtime": "sh", "source": "true", "note": "n".repeat(2001)}),
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_field",
            "note",
        ),
        (
            "too large",
            json!({"name": "a", "runtime": "javascript", "source": "x".repeat(1024 * 1024 + 1)}),
            StatusCode::PAYLOAD_TOO_LARGE,
            "too_large",
            "source",
        ),
    ];
    for (what, body, status, code, field) in cases {
        let (s, v) = app.post("/api/v1/scripts", &t.admin, body).await;
        assert_eq!((s, problem(&v)), (status, (code, field)), "{what}: {v}");
    }
    assert_eq!(scripts_count(app, &t.admin).await, 0, "nothing refused was stored");
    // A text script of exactly the limit is fine; a name is unique within the tenant.
    let (s, v) = app
        .post(
            "/api/v1/scripts",
            &t.admin,
            json!({"name": "big", "runtime": "javascript", "source": "x".repeat(1024 * 1024)}),
        )
        .await;
    assert_eq!(s, StatusCode::CREATED, "{}", v["message"]);
    let (s, v) = app.post("/api/v1/scripts", &t.admin, json!({"name": "big", "runtime": "sh", "source": "true"})).await;
    assert_eq!((s, problem(&v).1), (StatusCode::CONFLICT, "name"), "{v}");
    let (s, v) = app.get("/api/v1/scripts/big/versions?cursor=zzz", &t.admin).await;
    assert_eq!((s, problem(&v).1), (StatusCode::UNPROCESSABLE_ENTITY, "cursor"), "{v}");
}

async fn scripts_belong_to_their_tenant_and_viewers_only_read(app: &TestApp) {
    let a = app.tenant("a").await;
    let b = app.tenant("b").await;
    let (s, v) =
        app.post("/api/v1/scripts", &a.admin, json!({"name": "mine", "runtime": "bash", "source": "echo hi"})).await;
    assert_eq!(s, StatusCode::CREATED, "{v}");
    let id = v["id"].as_str().unwrap().to_string();
    for path in [
        format!("/api/v1/scripts/{id}"),
        format!("/api/v1/scripts/{id}/versions"),
        format!("/api/v1/scripts/{id}/versions/1"),
    ] {
        let (s, v) = app.get(&path, &b.admin).await;
        assert_eq!(s, StatusCode::NOT_FOUND, "{path}: {v}");
    }
    let (s, _) = app.post(&format!("/api/v1/scripts/{id}/versions"), &b.admin, json!({"source": "rm -rf /"})).await;
    assert_eq!(s, StatusCode::NOT_FOUND);
    let (s, _) = app.delete(&format!("/api/v1/scripts/{id}"), &b.admin).await;
    assert_eq!(s, StatusCode::NOT_FOUND);
    assert_eq!(scripts_count(app, &b.admin).await, 0);
    let (s, k) = app.post("/api/v1/keys", &a.admin, json!({"name": "ro", "role": "viewer"})).await;
    assert_eq!(s, StatusCode::CREATED, "{k}");
    let viewer = k["key"].as_str().unwrap().to_string();
    let (s, _) = app.get(&format!("/api/v1/scripts/{id}"), &viewer).await;
    assert_eq!(s, StatusCode::OK);
    let (s, _) = app.post(&format!("/api/v1/scripts/{id}/versions"), &viewer, json!({"source": "echo no"})).await;
    assert_eq!(s, StatusCode::FORBIDDEN);
    let (s, _) = app.post(&format!("/api/v1/scripts/{id}/restore"), &viewer, json!({"version": 1})).await;
    assert_eq!(s, StatusCode::FORBIDDEN);
    let (_, got) = app.get(&format!("/api/v1/scripts/{id}/versions"), &a.admin).await;
    assert_eq!(got["items"].as_array().unwrap().len(), 1, "nobody else changed it");
}

async fn a_job_follows_the_current_version_or_is_pinned_to_one(app: &TestApp) {
    let t = app.tenant("acme").await;
    let (s, _) = app.post("/api/v1/apps", &t.admin, json!({"name": "runner"})).await;
    assert_eq!(s, StatusCode::CREATED);
    let (s, _) =
        app.post("/api/v1/scripts", &t.admin, json!({"name": "etl", "runtime": "sh", "source": "echo 1"})).await;
    assert_eq!(s, StatusCode::CREATED);
    let (s, _) = app.post("/api/v1/scripts/etl/versions", &t.admin, json!({"source": "echo 2"})).await;
    assert_eq!(s, StatusCode::CREATED);
    let job = |name: &str, extra: Value| {
        let mut body = json!({"name": name, "app": "runner", "script": "etl", "schedule": {"kind": "manual"}});
        for (k, v) in extra.as_object().unwrap() {
            body[k] = v.clone();
        }
        body
    };
    let (s, follows) = app.post("/api/v1/jobs", &t.admin, job("follows", json!({}))).await;
    assert_eq!(s, StatusCode::CREATED, "{follows}");
    assert!(follows["script_version"].is_null(), "{follows}");
    let (s, pinned) = app.post("/api/v1/jobs", &t.admin, job("pinned", json!({"script_version": 1}))).await;
    assert_eq!(s, StatusCode::CREATED, "{pinned}");
    assert_eq!(pinned["script_version"], 1);
    let (_, got) = app.get(&format!("/api/v1/jobs/{}", pinned["id"].as_str().unwrap()), &t.admin).await;
    assert_eq!(got["script_version"], 1, "stored");
    for (extra, why) in [
        (json!({"script_version": 3}), "a version the script does not have"),
        (json!({"script_version": 0}), "versions start at 1"),
        (json!({"script": null, "handler": "h", "script_version": 1}), "a handler job"),
    ] {
        let (s, v) = app.post("/api/v1/jobs", &t.admin, job("bad", extra)).await;
        assert_eq!((s, problem(&v).1), (StatusCode::UNPROCESSABLE_ENTITY, "script_version"), "{why}: {v}");
    }
    let (_, jobs) = app.get("/api/v1/jobs", &t.admin).await;
    assert_eq!(jobs["items"].as_array().unwrap().len(), 2, "nothing refused was stored");
}

async fn a_script_a_job_runs_is_not_deleted(app: &TestApp) {
    let t = app.tenant("acme").await;
    let (s, v) = app.post("/api/v1/apps", &t.admin, json!({"name": "runner"})).await;
    assert_eq!(s, StatusCode::CREATED, "{v}");
    let (s, v) =
        app.post("/api/v1/scripts", &t.admin, json!({"name": "etl", "runtime": "sh", "source": "echo etl"})).await;
    assert_eq!(s, StatusCode::CREATED, "{v}");
    let (s, job) = app
        .post(
            "/api/v1/jobs",
            &t.admin,
            json!({"name": "nightly", "app": "runner", "script": "etl", "schedule": {"kind": "manual"}}),
        )
        .await;
    assert_eq!(s, StatusCode::CREATED, "{job}");
    let (s, v) = app.delete("/api/v1/scripts/etl", &t.admin).await;
    assert_eq!(s, StatusCode::CONFLICT, "{v}");
    let (s, _) = app.delete(&format!("/api/v1/jobs/{}", job["id"].as_str().unwrap()), &t.admin).await;
    assert_eq!(s, StatusCode::NO_CONTENT);
    let (s, _) = app.delete("/api/v1/scripts/etl", &t.admin).await;
    assert_eq!(s, StatusCode::NO_CONTENT);
    let (s, _) = app.get("/api/v1/scripts/etl", &t.admin).await;
    assert_eq!(s, StatusCode::NOT_FOUND);
}
