//! Scripts: uploaded code with immutable versions (create, new version, list, show, diff,
//! roll back). What an upload must be is checked here, before anything is stored: a
//! runtime Sundial has, a size within the limits, and for `wasm` a valid WASI module.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use base64::Engine as _;
use sha2::{Digest, Sha256};
use sundial_core::ids::{self, new_id};
use sundial_core::quota::{self, Quota};
use sundial_core::types::{Name, ScriptRuntime, bounded_text, parse_enum};
use sundial_store::{Script, ScriptVersion, StoreError};

use crate::auth::TenantCaller;
use crate::error::{ApiError, ApiResult, ErrorBody};
use crate::extract::{Json, Query};
use crate::state::AppState;
use crate::wire::*;

/// The one module WASI preview 1 imports come from: a script may import nothing else.
const WASI_MODULE: &str = "wasi_snapshot_preview1";

async fn load(st: &AppState, caller: &TenantCaller, id: &str) -> ApiResult<Script> {
    st.store.script_get(&caller.tenant_id, id).await?.ok_or_else(|| ApiError::not_found("script"))
}

/// What an uploaded source is, once checked: as stored, and its bytes' digest and size.
struct Source {
    text: String,
    encoding: &'static str,
    sha256: String,
    size: usize,
}

fn too_large(field: &str, size: usize, max: usize) -> ApiError {
    ApiError::new(
        StatusCode::PAYLOAD_TOO_LARGE,
        "too_large",
        format!("{field}: {size} bytes is more than this install accepts ({max} bytes)"),
    )
    .with_details(serde_json::json!({"field": field, "size": size, "max": max}))
}

/// Why a WebAssembly binary is not a script Sundial can run, or `None` if it is one: a
/// valid module whose imports are all functions of WASI preview 1 and that exports
/// `_start: [] -> []` (the rules of `sundial-wasm-sandbox`, checked here without compiling).
pub fn wasm_problem(bytes: &[u8]) -> Option<String> {
    if !bytes.starts_with(b"\0asm") {
        return Some("not a WebAssembly module (no `\\0asm` header); send the binary in base64 or `.wat` text".into());
    }
    if bytes.len() >= 8 && bytes[4..8] != [1, 0, 0, 0] {
        return Some("a WebAssembly component or unknown binary version: upload a core WASI preview-1 module".into());
    }
    let mut validator = wasmparser::Validator::new();
    let types = match validator.validate_all(bytes) {
        Ok(t) => t,
        Err(e) => return Some(format!("invalid module: {}", e.message())),
    };
    let mut start = false;
    for payload in wasmparser::Parser::new(0).parse_all(bytes) {
        match payload {
            Ok(wasmparser::Payload::ImportSection(reader)) => {
                for import in reader.into_imports() {
                    match import {
                        Ok(i) if i.module == WASI_MODULE && matches!(i.ty, wasmparser::TypeRef::Func(_)) => {}
                        Ok(i) => {
                            return Some(format!(
                                "imports not allowed: `{}.{}` (a script may import only functions of `{WASI_MODULE}`)",
                                i.module, i.name
                            ));
                        }
                        Err(e) => return Some(format!("invalid module: {}", e.message())),
                    }
                }
            }
            Ok(wasmparser::Payload::ExportSection(reader)) => {
                for export in reader {
                    match export {
                        Ok(e)
                            if e.name == "_start"
                                && matches!(
                                    e.kind,
                                    wasmparser::ExternalKind::Func | wasmparser::ExternalKind::FuncExact
                                ) =>
                        {
                            let ty = types[types.as_ref().core_function_at(e.index)].unwrap_func();
                            start = ty.params().is_empty() && ty.results().is_empty();
                        }
                        Ok(_) => {}
                        Err(e) => return Some(format!("invalid module: {}", e.message())),
                    }
                }
            }
            Ok(_) => {}
            Err(e) => return Some(format!("invalid module: {}", e.message())),
        }
    }
    (!start).then(|| {
        "the module exports no `_start` function taking and returning nothing (a WASI command's entry point)".into()
    })
}

/// Check an upload for `runtime`: exactly one of `source` (text; `.wat` for `wasm`) and
/// `source_base64` (a `wasm` binary), within the size limits, and a runnable module for `wasm`.
fn check_source(
    st: &AppState,
    runtime: ScriptRuntime,
    source: Option<&str>,
    source_base64: Option<&str>,
) -> ApiResult<Source> {
    let limits = &st.config.scripts;
    let (stored, encoding, bytes): (String, &'static str, Vec<u8>) = match (source, source_base64) {
        (Some(_), Some(_)) => {
            return Err(ApiError::field(
                "source",
                "invalid_field",
                "give either `source` or `source_base64`, not both",
            ));
        }
        (None, None) => {
            return Err(ApiError::field("source", "missing_field", "the script's code is required (`source`)"));
        }
        (None, Some(b64)) => {
            if runtime != ScriptRuntime::Wasm {
                return Err(ApiError::field(
                    "source_base64",
                    "invalid_field",
                    format!("only `wasm` scripts are binary; send a `{runtime}` script as text in `source`"),
                ));
            }
            // Base64 is a third larger than what it encodes: refuse early what cannot fit.
            if b64.len() / 4 * 3 > limits.max_wasm_bytes + 3 {
                return Err(too_large("source_base64", b64.len() / 4 * 3, limits.max_wasm_bytes));
            }
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(b64.trim())
                .map_err(|e| ApiError::field("source_base64", "invalid_field", format!("not standard base64: {e}")))?;
            (base64::engine::general_purpose::STANDARD.encode(&bytes), "base64", bytes)
        }
        (Some(text), None) => (text.to_string(), "text", text.as_bytes().to_vec()),
    };
    let (field, max) = match (runtime, encoding) {
        (ScriptRuntime::Wasm, "base64") => ("source_base64", limits.max_wasm_bytes),
        (ScriptRuntime::Wasm, _) => ("source", limits.max_wasm_bytes),
        _ => ("source", limits.max_text_bytes),
    };
    if bytes.len() > max {
        return Err(too_large(field, bytes.len(), max));
    }
    if bytes.is_empty() || (encoding == "text" && stored.trim().is_empty()) {
        return Err(ApiError::field(field, "invalid_field", "must not be empty"));
    }
    if encoding == "text" && stored.contains('\0') {
        return Err(ApiError::field(field, "invalid_field", "text must not contain NUL characters"));
    }
    if runtime == ScriptRuntime::Wasm {
        let module = if encoding == "text" {
            wat::parse_str(&stored)
                .map_err(|e| ApiError::field(field, "invalid_wasm", format!("not valid `.wat` text: {e}")))?
        } else {
            bytes.clone()
        };
        if let Some(problem) = wasm_problem(&module) {
            return Err(ApiError::field(field, "invalid_wasm", problem));
        }
    }
    offered(st, runtime)?;
    Ok(Source { text: stored, encoding, sha256: hex::encode(Sha256::digest(&bytes)), size: bytes.len() })
}

/// Does a Python or JavaScript source compile? Checked by the install's
/// [`SourceChecker`](crate::state::SourceChecker), when it has one: if not, 422 on `source`
/// with the interpreter's message and line.
async fn compiles(st: &AppState, runtime: ScriptRuntime, source: &Source) -> ApiResult<()> {
    let Some(checker) = st.config.source_checker.clone() else { return Ok(()) };
    if !matches!(runtime, ScriptRuntime::Python | ScriptRuntime::Javascript) {
        return Ok(());
    }
    let text = source.text.clone();
    let checked =
        tokio::task::spawn_blocking(move || checker.check(runtime, &text)).await.map_err(|e| ApiError::internal(&e))?;
    match checked {
        Ok(()) => Ok(()),
        Err(p) => {
            let at = p.line.map(|l| format!(" (line {l})")).unwrap_or_default();
            let problem = format!("the {runtime} source does not compile{at}: {}", p.message);
            Err(ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, "invalid_source", format!("source: {problem}"))
                .with_details(serde_json::json!({"field": "source", "problem": problem, "line": p.line, "interpreter_message": p.message})))
        }
    }
}

/// Is `runtime` available on this install? If not, the upload is refused saying why.
fn offered(st: &AppState, runtime: ScriptRuntime) -> ApiResult<()> {
    match st.config.runtimes.iter().find(|o| o.runtime == runtime) {
        Some(o) if o.available => Ok(()),
        Some(o) => Err(ApiError::field(
            "runtime",
            "runtime_unavailable",
            format!("this install does not run `{runtime}` scripts: {}", o.detail),
        )),
        None => Err(ApiError::field(
            "runtime",
            "runtime_unavailable",
            format!("this install does not run `{runtime}` scripts"),
        )),
    }
}

/// The script runtimes and how each is isolated.
#[derive(Debug, serde::Serialize, utoipa::ToSchema)]
pub struct RuntimeList {
    pub items: Vec<crate::state::RuntimeOffer>,
}

/// The script runtimes this install offers, each with its isolation level and what was
/// detected at start-up (any key).
#[utoipa::path(get, path = "/api/v1/runtimes", operation_id = "list_runtimes", tag = "scripts",
    responses((status = 200, body = RuntimeList), (status = 401, body = ErrorBody)))]
pub async fn runtimes(State(st): State<AppState>, _caller: crate::auth::Caller) -> axum::Json<RuntimeList> {
    axum::Json(RuntimeList { items: st.config.runtimes.clone() })
}

fn version_row(script_id: &str, source: Source, caller: &TenantCaller, note: String, now: i64) -> ScriptVersion {
    ScriptVersion {
        script_id: script_id.to_string(),
        version: 1,
        source: source.text,
        encoding: source.encoding.to_string(),
        sha256: source.sha256,
        size_bytes: source.size as i64,
        author: caller.key_id.clone(),
        note,
        created_at_ms: now,
    }
}

/// Refuse an upload taking the tenant past `max_scripts` or `max_script_bytes` (every
/// version of every script counts: versions are kept).
async fn check_quota(st: &AppState, tenant_id: &str, scripts: i64, bytes: i64) -> ApiResult<()> {
    let quotas = st.quotas_of(tenant_id).await?;
    let usage = st.store.usage_get(tenant_id, st.now_ms()).await?;
    quota::check(&quotas, Quota::MaxScripts, usage.scripts, scripts).map_err(|e| ApiError::quota(&e))?;
    quota::check(&quotas, Quota::MaxScriptBytes, usage.script_bytes, bytes).map_err(|e| ApiError::quota(&e))?;
    Ok(())
}

/// Upload a new script: its first version, current at once (editor). Refused with 409
/// `quota_exceeded` past the tenant's `max_scripts` or `max_script_bytes`.
#[utoipa::path(post, path = "/api/v1/scripts", operation_id = "create_script", tag = "scripts", request_body = ScriptCreate,
    responses((status = 201, body = ScriptOut), (status = 400, body = ErrorBody), (status = 401, body = ErrorBody),
        (status = 403, body = ErrorBody), (status = 409, body = ErrorBody), (status = 413, body = ErrorBody), (status = 422, body = ErrorBody)))]
pub async fn create(
    State(st): State<AppState>,
    caller: TenantCaller,
    Json(body): Json<ScriptCreate>,
) -> ApiResult<(StatusCode, axum::Json<ScriptOut>)> {
    caller.require_editor()?;
    let name = Name::parse("name", &body.name)?;
    let runtime: ScriptRuntime = parse_enum("runtime", &body.runtime)?;
    let note = bounded_text("note", body.note.as_deref().unwrap_or(""), 2000)?;
    let source = check_source(&st, runtime, body.source.as_deref(), body.source_base64.as_deref())?;
    compiles(&st, runtime, &source).await?;
    let now = st.now_ms();
    let script = Script {
        id: new_id(ids::SCRIPT),
        tenant_id: caller.tenant_id.clone(),
        name: name.into_string(),
        runtime,
        current_version: 1,
        created_at_ms: now,
        updated_at_ms: now,
    };
    let first = version_row(&script.id, source, &caller, note, now);
    check_quota(&st, &caller.tenant_id, 1, first.size_bytes).await?;
    st.store.script_create(&script, &first).await?;
    tracing::info!(script_id = %script.id, name = %script.name, runtime = %runtime, size = first.size_bytes, "script created");
    Ok((StatusCode::CREATED, axum::Json(ScriptOut::new(script, first))))
}

/// List the tenant's scripts.
#[utoipa::path(get, path = "/api/v1/scripts", operation_id = "list_scripts", tag = "scripts", params(PageQuery),
    responses((status = 200, body = ScriptList), (status = 401, body = ErrorBody), (status = 422, body = ErrorBody)))]
pub async fn list(
    State(st): State<AppState>,
    caller: TenantCaller,
    Query(q): Query<PageQuery>,
) -> ApiResult<axum::Json<ScriptList>> {
    let page = q.page_of_ids(sundial_core::ids::SCRIPT)?;
    let rows = st.store.script_list(&caller.tenant_id, &page).await?;
    let (items, next_cursor) = paginate(rows, &page, |s| s.id.clone(), ScriptOut::summary);
    Ok(axum::Json(ScriptList { items, next_cursor }))
}

/// One script, by id or name, with its current version's details (not its source).
#[utoipa::path(get, path = "/api/v1/scripts/{id}", operation_id = "get_script", tag = "scripts",
    params(("id" = String, Path, description = "Script id or name")),
    responses((status = 200, body = ScriptOut), (status = 401, body = ErrorBody), (status = 404, body = ErrorBody)))]
pub async fn get(
    State(st): State<AppState>,
    caller: TenantCaller,
    Path(id): Path<String>,
) -> ApiResult<axum::Json<ScriptOut>> {
    let script = load(&st, &caller, &id).await?;
    let current = current_meta(&st, &caller, &script).await?;
    Ok(axum::Json(ScriptOut::new(script, current)))
}

/// Delete a script and every version; refused (409) while jobs run it (editor).
#[utoipa::path(delete, path = "/api/v1/scripts/{id}", operation_id = "delete_script", tag = "scripts",
    params(("id" = String, Path, description = "Script id or name")),
    responses((status = 204), (status = 401, body = ErrorBody), (status = 403, body = ErrorBody), (status = 404, body = ErrorBody), (status = 409, body = ErrorBody)))]
pub async fn delete(State(st): State<AppState>, caller: TenantCaller, Path(id): Path<String>) -> ApiResult<StatusCode> {
    caller.require_editor()?;
    let script = load(&st, &caller, &id).await?;
    if !st.store.script_delete(&caller.tenant_id, &script.id).await? {
        return Err(ApiError::not_found("script"));
    }
    tracing::info!(script_id = %script.id, "script deleted");
    Ok(StatusCode::NO_CONTENT)
}

/// Upload a new version; it becomes current (jobs that follow the script run it from their next run) (editor).
#[utoipa::path(post, path = "/api/v1/scripts/{id}/versions", operation_id = "create_script_version", tag = "scripts",
    params(("id" = String, Path, description = "Script id or name")), request_body = ScriptVersionCreate,
    responses((status = 201, body = ScriptVersionOut), (status = 400, body = ErrorBody), (status = 401, body = ErrorBody),
        (status = 403, body = ErrorBody), (status = 404, body = ErrorBody), (status = 409, body = ErrorBody), (status = 413, body = ErrorBody), (status = 422, body = ErrorBody)))]
pub async fn create_version(
    State(st): State<AppState>,
    caller: TenantCaller,
    Path(id): Path<String>,
    Json(body): Json<ScriptVersionCreate>,
) -> ApiResult<(StatusCode, axum::Json<ScriptVersionOut>)> {
    caller.require_editor()?;
    let script = load(&st, &caller, &id).await?;
    let note = bounded_text("note", body.note.as_deref().unwrap_or(""), 2000)?;
    let source = check_source(&st, script.runtime, body.source.as_deref(), body.source_base64.as_deref())?;
    compiles(&st, script.runtime, &source).await?;
    let row = version_row(&script.id, source, &caller, note, st.now_ms());
    check_quota(&st, &caller.tenant_id, 0, row.size_bytes).await?;
    let (_, version) = st
        .store
        .script_add_version(&caller.tenant_id, &script.id, &row)
        .await?
        .ok_or_else(|| ApiError::not_found("script"))?;
    tracing::info!(script_id = %script.id, version = version.version, size = version.size_bytes, "script version created");
    Ok((StatusCode::CREATED, axum::Json(ScriptVersionOut::new(version, false))))
}

/// A script's versions, newest first (without their source).
#[utoipa::path(get, path = "/api/v1/scripts/{id}/versions", operation_id = "list_script_versions", tag = "scripts",
    params(("id" = String, Path, description = "Script id or name"), PageQuery),
    responses((status = 200, body = ScriptVersionList), (status = 401, body = ErrorBody), (status = 404, body = ErrorBody), (status = 422, body = ErrorBody)))]
pub async fn list_versions(
    State(st): State<AppState>,
    caller: TenantCaller,
    Path(id): Path<String>,
    Query(q): Query<PageQuery>,
) -> ApiResult<axum::Json<ScriptVersionList>> {
    let script = load(&st, &caller, &id).await?;
    if let Some(c) = &q.cursor
        && c.parse::<i64>().is_err()
    {
        return Err(ApiError::field("cursor", "invalid_field", "not a cursor this endpoint returned"));
    }
    let page = q.page()?;
    let rows = st.store.script_versions(&caller.tenant_id, &script.id, &page).await?;
    let (items, next_cursor) = paginate(rows, &page, |v| v.version.to_string(), |v| ScriptVersionOut::new(v, false));
    Ok(axum::Json(ScriptVersionList { items, next_cursor }))
}

/// The script's current version without its source (a script always has it).
async fn current_meta(st: &AppState, caller: &TenantCaller, script: &Script) -> ApiResult<ScriptVersion> {
    st.store.script_version_meta(&caller.tenant_id, &script.id, script.current_version).await?.ok_or_else(|| {
        ApiError::internal(&StoreError::Corrupt(format!("script {} lost its current version", script.id)))
    })
}

async fn load_version(st: &AppState, caller: &TenantCaller, script: &Script, version: i64) -> ApiResult<ScriptVersion> {
    st.store
        .script_version_get(&caller.tenant_id, &script.id, version)
        .await?
        .ok_or_else(|| ApiError::not_found(&format!("version {version} of script `{}`", script.name)))
}

/// One version with its source.
#[utoipa::path(get, path = "/api/v1/scripts/{id}/versions/{version}", operation_id = "get_script_version", tag = "scripts",
    params(("id" = String, Path, description = "Script id or name"), ("version" = i64, Path, description = "Version number, from 1")),
    responses((status = 200, body = ScriptVersionOut), (status = 400, body = ErrorBody), (status = 401, body = ErrorBody), (status = 404, body = ErrorBody)))]
pub async fn get_version(
    State(st): State<AppState>,
    caller: TenantCaller,
    Path((id, version)): Path<(String, String)>,
) -> ApiResult<axum::Json<ScriptVersionOut>> {
    let script = load(&st, &caller, &id).await?;
    // Read here, not by the extractor: anything but a version number is a version it does not have.
    let Ok(version) = version.parse::<i64>() else {
        return Err(ApiError::not_found(&format!("version `{version}` of script `{}`", script.name)));
    };
    let v = load_version(&st, &caller, &script, version).await?;
    Ok(axum::Json(ScriptVersionOut::new(v, true)))
}

/// A unified diff between two versions of a text script (`wasm` binaries have no text to compare).
#[utoipa::path(get, path = "/api/v1/scripts/{id}/diff", operation_id = "diff_script_versions", tag = "scripts",
    params(("id" = String, Path, description = "Script id or name"), DiffQuery),
    responses((status = 200, body = ScriptDiff), (status = 400, body = ErrorBody), (status = 401, body = ErrorBody), (status = 404, body = ErrorBody), (status = 422, body = ErrorBody)))]
pub async fn diff(
    State(st): State<AppState>,
    caller: TenantCaller,
    Path(id): Path<String>,
    Query(q): Query<DiffQuery>,
) -> ApiResult<axum::Json<ScriptDiff>> {
    let script = load(&st, &caller, &id).await?;
    let from = load_version(&st, &caller, &script, q.from).await?;
    let to = load_version(&st, &caller, &script, q.to.unwrap_or(script.current_version)).await?;
    for (field, v) in [("from", &from), ("to", &to)] {
        if v.encoding != "text" {
            return Err(ApiError::field(
                field,
                "invalid_field",
                format!("version {} is a wasm binary: no text to compare", v.version),
            ));
        }
    }
    let unified = similar::TextDiff::from_lines(&from.source, &to.source)
        .unified_diff()
        .context_radius(3)
        .header(&format!("{}@v{}", script.name, from.version), &format!("{}@v{}", script.name, to.version))
        .to_string();
    Ok(axum::Json(ScriptDiff {
        from: from.version,
        to: to.version,
        identical: from.sha256 == to.sha256,
        diff: unified,
    }))
}

/// Make an earlier (or later) version current again: a rollback (editor).
#[utoipa::path(post, path = "/api/v1/scripts/{id}/restore", operation_id = "restore_script_version", tag = "scripts",
    params(("id" = String, Path, description = "Script id or name")), request_body = ScriptRestore,
    responses((status = 200, body = ScriptOut), (status = 400, body = ErrorBody), (status = 401, body = ErrorBody), (status = 403, body = ErrorBody),
        (status = 404, body = ErrorBody), (status = 422, body = ErrorBody)))]
pub async fn restore(
    State(st): State<AppState>,
    caller: TenantCaller,
    Path(id): Path<String>,
    Json(body): Json<ScriptRestore>,
) -> ApiResult<axum::Json<ScriptOut>> {
    caller.require_editor()?;
    let script = load(&st, &caller, &id).await?;
    let script = st
        .store
        .script_set_current(&caller.tenant_id, &script.id, body.version, st.now_ms())
        .await?
        .ok_or_else(|| ApiError::not_found("script"))?;
    let current = current_meta(&st, &caller, &script).await?;
    tracing::info!(script_id = %script.id, version = script.current_version, "script version restored as current");
    Ok(axum::Json(ScriptOut::new(script, current)))
}
