//! `sundial`: the one binary. `serve` runs a node (API, scheduling engine and a built-in
//! script runner), `runner` runs a script runner for one app on its own, `migrate`
//! applies database migrations, `openapi` prints the OpenAPI document; `jobs`, `runs`,
//! `apps` and `scripts` are the command line client of a running node (`cli`).
//! (Benchmarks drive this binary from outside: the `sundial-bench` crate.)

mod cli;
mod config;
mod http;
mod runner;
mod secret_key;

use std::sync::Arc;

use anyhow::Context;
use clap::{Parser, Subcommand};
use sundial_api::{ApiConfig, AppState};
use sundial_core::clock::{Clock, SystemClock};
use sundial_engine::{Engine, EngineConfig};
use sundial_store::{ConnectOptions, KeyRing, SqlStore, redact_url as redact};
use tokio::net::TcpListener;

use crate::config::{Resolved, Settings};

/// mimalloc instead of glibc's allocator: under load glibc's malloc and free (with its
/// chunk consolidation) took about a third of the process's CPU (docs/benchmarks-history.md).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[derive(Parser)]
#[command(
    name = "sundial",
    version,
    about = "A distributed job scheduler: cron, fixed-rate, one-shot and on-demand jobs delivered to signed webhook executors."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run a Sundial node (embedded SQLite by default).
    Serve(Settings),
    /// Run a script runner for one app: an executor that registers with a Sundial node,
    /// runs the app's script jobs in its sandboxes, and deregisters on SIGTERM.
    Runner(runner::RunnerArgs),
    /// Apply database migrations and exit.
    Migrate(Settings),
    /// Encrypt every app signing secret under the current secret key (after a key rotation,
    /// or after every node of a cluster runs with the new key) and exit. `serve` does the
    /// same when it starts.
    Rekey(Settings),
    /// Print the OpenAPI document.
    Openapi,
    #[command(flatten)]
    Client(cli::Cmd),
}

fn init_tracing(cfg: &Resolved) {
    let filter =
        tracing_subscriber::EnvFilter::try_new(&cfg.log).unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let builder = tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr);
    if cfg.log_json {
        builder.json().flatten_event(true).with_current_span(true).init();
    } else {
        builder.init();
    }
}

/// Open the database and migrate it; with `keys`, app secrets are sealed with them (and
/// every secret not under the current key is sealed again now).
async fn open_store(cfg: &Resolved, clock: &dyn Clock, keys: Option<KeyRing>) -> anyhow::Result<SqlStore> {
    let mut opts = ConnectOptions::new(&cfg.database_url);
    opts.max_connections = cfg.db_max_connections;
    opts.slow_statement =
        (cfg.db_slow_statement_ms > 0).then(|| std::time::Duration::from_millis(cfg.db_slow_statement_ms));
    opts.secret_keys = keys;
    SqlStore::open(&opts, clock.now_ms())
        .await
        .with_context(|| format!("opening database {}", redact(&cfg.database_url)))
}

/// Raise the open-file limit and fit the connection cap into it (warning when it must shrink).
fn fd_budget(cfg: &Resolved) -> http::HttpLimits {
    let mut limits = cfg.http;
    let reserved = http::fd_reserved(cfg.db_max_connections, cfg.max_inflight);
    match http::raise_nofile_limit() {
        Ok(limit) => {
            let fitted = http::fit_connection_cap(limits.max_connections, limit, reserved);
            if fitted < limits.max_connections {
                tracing::warn!(
                    open_file_limit = limit,
                    reserved,
                    max_connections = limits.max_connections,
                    lowered_to = fitted,
                    "the open-file limit cannot hold max_connections plus the database pool, the deliveries in flight \
                     (max_inflight) and a margin; max_connections is lowered to fit (raise `ulimit -n` to keep it)"
                );
                limits.max_connections = fitted;
            }
            limits.max_connections_per_peer = limits.max_connections_per_peer.min(limits.max_connections);
        }
        Err(e) => tracing::warn!(error = %e, "could not read the open-file limit; max_connections is not checked"),
    }
    limits
}

async fn serve(cfg: Resolved) -> anyhow::Result<()> {
    let http_limits = fd_budget(&cfg);
    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    let keys = secret_key::load(&cfg.secret_key).context("loading the secret key")?;
    let store = Arc::new(open_store(&cfg, clock.as_ref(), Some(keys.ring.clone())).await?);
    let new_key = sundial_api::bootstrap::ensure_operator_key(store.as_ref(), cfg.admin_key.as_deref(), clock.now_ms())
        .await
        .context("creating the operator key")?;
    let wake = Arc::new(tokio::sync::Notify::new());
    let listener = TcpListener::bind(&cfg.listen).await.with_context(|| format!("listening on {}", cfg.listen))?;
    let addr = listener.local_addr()?;
    let builtin =
        if cfg.runner { Some(runner::start_builtin(&cfg, store.clone(), clock.clone(), addr).await?) } else { None };
    let mut engine_cfg = engine_config(&cfg, addr);
    engine_cfg.builtin_runner = builtin.as_ref().map(|b| b.engine_side.clone());
    let engine = Engine::new(store.clone(), clock.clone(), engine_cfg, wake.clone());
    let state = AppState::new(store.clone(), clock.clone(), api_config(&cfg, builtin.as_ref()), wake)
        .with_cancels(engine.cancels().clone());
    print_banner(&cfg, &keys, new_key, addr);
    engine.start().await;
    tracing::info!(
        %addr,
        node_id = %cfg.node_id,
        database = %redact(&cfg.database_url),
        secret_key_id = keys.ring.current_id(),
        "node started"
    );
    serve_until_stopped(&cfg, listener, state, http_limits, &engine, builtin.as_ref()).await;
    store.close().await;
    tracing::info!("stopped");
    Ok(())
}

/// The engine's settings from the node's, its address the one the API listens on.
fn engine_config(cfg: &Resolved, addr: std::net::SocketAddr) -> EngineConfig {
    let mut engine_cfg = EngineConfig::new(cfg.node_id.clone());
    engine_cfg.horizon_ms = cfg.horizon_ms;
    engine_cfg.claim_window_ms = cfg.claim_window_ms;
    engine_cfg.capacity = cfg.timer_capacity;
    engine_cfg.max_inflight = cfg.max_inflight;
    engine_cfg.max_inflight_per_app = cfg.max_inflight_per_app;
    engine_cfg.max_inflight_per_tenant = cfg.max_inflight_per_tenant;
    engine_cfg.quotas = cfg.quotas;
    engine_cfg.retention_ms = cfg.retention_days * 86_400_000;
    engine_cfg.affinity_grace_ms = cfg.affinity_grace_ms;
    engine_cfg.max_dispatch_lead_ms = cfg.max_dispatch_lead_ms;
    engine_cfg.max_answer_bytes = cfg.max_answer_bytes;
    engine_cfg.max_output_bytes = cfg.max_output_bytes;
    engine_cfg.outbound = cfg.outbound;
    engine_cfg.address = format!("http://{addr}");
    engine_cfg
}

/// The API's settings; the runtimes it offers are the built-in runner's, if it runs.
fn api_config(cfg: &Resolved, builtin: Option<&runner::Builtin>) -> ApiConfig {
    let runtimes = match builtin {
        Some(b) => runner::offers(b.runner.runtimes()),
        None => runner::no_builtin_offers(),
    };
    ApiConfig {
        max_body_bytes: cfg.max_body_bytes,
        secret_grace_ms: cfg.secret_grace_secs * 1000,
        max_output_bytes: cfg.max_output_bytes,
        outbound: cfg.outbound,
        scripts: sundial_api::ScriptLimits {
            max_wasm_bytes: cfg.max_script_wasm_bytes,
            max_text_bytes: cfg.max_script_text_bytes,
        },
        runtimes,
        quotas: cfg.quotas,
        max_new_handlers_per_registration: cfg.max_new_handlers_per_registration,
        max_log_bytes_per_call: cfg.max_log_bytes_per_call,
        log_grace_ms: cfg.log_grace_secs * 1000,
        source_checker: builtin.map(|b| {
            Arc::new(runner::InterpreterChecker(b.runner.runtimes_shared())) as Arc<dyn sundial_api::SourceChecker>
        }),
    }
}

/// The start-up banner on stdout: the database, a generated secret key, a new operator key.
fn print_banner(cfg: &Resolved, keys: &secret_key::Loaded, new_key: Option<String>, addr: std::net::SocketAddr) {
    println!("database: {}", redact(&cfg.database_url));
    if let Some(path) = &keys.generated {
        println!(
            "secret key generated: {} (it encrypts the app secrets; back it up with the database)",
            path.display()
        );
    }
    if let Some(key) = new_key {
        println!("operator API key (shown once, store it now): {key}");
        println!(
            "  create a tenant: curl -s -X POST http://{addr}/api/v1/tenants -H 'Authorization: Bearer {key}' -H 'Content-Type: application/json' -d '{{\"name\": \"acme\"}}'"
        );
    }
    // Last line of the start-up banner: scripts and tests wait for it.
    println!("Sundial listening on http://{addr}");
}

/// Serve HTTP until SIGTERM/SIGINT, then shut down in order and drain.
async fn serve_until_stopped(
    cfg: &Resolved,
    listener: TcpListener,
    state: AppState,
    http_limits: http::HttpLimits,
    engine: &Arc<Engine>,
    builtin: Option<&runner::Builtin>,
) {
    // Shutdown, in order: on SIGTERM/SIGINT the engine stops claiming, the node marks itself
    // `left` and hands back its undispatched claims (`Engine::stop`), all while HTTP still
    // serves; then the server stops accepting and drains its open requests while the
    // committed deliveries finish, both within `shutdown_grace_secs` (`Engine::drain`).
    let grace = std::time::Duration::from_secs(cfg.shutdown_grace_secs);
    let stopped_at = Arc::new(std::sync::Mutex::new(None::<std::time::Instant>));
    let (stopped_tx, stopped_rx) = tokio::sync::oneshot::channel::<()>();
    let (stopping, at) = (engine.clone(), stopped_at.clone());
    let builtin_runner = builtin.map(|b| b.runner.clone());
    let signal = async move {
        shutdown_signal().await;
        tracing::info!("shutting down: no more claiming; handing back claimed runs");
        stopping.stop().await;
        if let Some(r) = builtin_runner {
            // Scripts in progress finish (their results still reach this node's API), new
            // deliveries get 503; what is still running after the grace is cancelled.
            let cancelled = r.shutdown(grace).await;
            if cancelled > 0 {
                tracing::warn!(cancelled, "scripts still running after the grace period were cancelled");
            }
        }
        tracing::info!("draining HTTP requests and in-flight deliveries");
        *at.lock().expect("not poisoned") = Some(std::time::Instant::now());
        let _ = stopped_tx.send(());
    };
    let server = http::serve(listener, sundial_api::router(state), http_limits, signal);
    let drain_limit = async {
        match stopped_rx.await {
            Ok(()) => tokio::time::sleep(grace).await,
            Err(_) => std::future::pending().await,
        }
    };
    tokio::select! {
        () = server => {}
        () = drain_limit => tracing::warn!("HTTP requests still open after the grace period; closing them"),
    }
    let stopped = *stopped_at.lock().expect("not poisoned");
    let left = match stopped {
        Some(t) => grace.saturating_sub(t.elapsed()),
        None => {
            engine.stop().await; // the server ended without the signal (it does not, but be safe)
            grace
        }
    };
    engine.drain(left).await;
}

/// `sundial rekey`: seal every app secret under the current key, and say what was done.
async fn rekey(cfg: &Resolved) -> anyhow::Result<()> {
    let keys = secret_key::load(&cfg.secret_key).context("loading the secret key")?;
    let mut opts = ConnectOptions::new(&cfg.database_url);
    opts.max_connections = cfg.db_max_connections;
    opts.slow_statement =
        (cfg.db_slow_statement_ms > 0).then(|| std::time::Duration::from_millis(cfg.db_slow_statement_ms));
    opts.secret_keys = Some(keys.ring.clone());
    let opening = || format!("opening database {}", redact(&cfg.database_url));
    let store = SqlStore::connect(&opts).await.with_context(opening)?;
    store.migrate(SystemClock.now_ms()).await.with_context(opening)?;
    let report = store.secrets_rekey().await.context("sealing the app secrets")?;
    println!(
        "app secrets sealed under key id {}: {} were in plain text, {} under a previous key; all are now under the current key",
        keys.ring.current_id(),
        report.encrypted,
        report.rekeyed
    );
    store.close().await;
    Ok(())
}

async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    tokio::select! { _ = ctrl_c => {}, _ = term => {} }
}

#[tokio::main]
async fn main() -> anyhow::Result<std::process::ExitCode> {
    let cli = Cli::parse();
    match cli.command {
        // The client commands have exit codes of their own (`cli`).
        Command::Client(cmd) => return Ok(cli::run(cmd).await),
        Command::Serve(s) => {
            let cfg = s.resolve()?;
            init_tracing(&cfg);
            serve(cfg).await
        }
        Command::Runner(args) => runner::run(args).await,
        Command::Migrate(s) => {
            let cfg = s.resolve()?;
            init_tracing(&cfg);
            let store = open_store(&cfg, &SystemClock, None).await?;
            println!("migrations up to date on {}", redact(&cfg.database_url));
            store.close().await;
            Ok(())
        }
        Command::Rekey(s) => {
            let cfg = s.resolve()?;
            init_tracing(&cfg);
            rekey(&cfg).await
        }
        Command::Openapi => {
            print!("{}", sundial_api::openapi::document());
            Ok(())
        }
    }
    .map(|()| std::process::ExitCode::SUCCESS)
}
