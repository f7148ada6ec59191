//! Script runners: the one `serve` builds in (every app's script jobs on this node), and
//! `sundial runner` (one app's, in a process of its own that registers as an executor).

use std::future::IntoFuture;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use async_trait::async_trait;
use clap::Args;
use sundial_api::RuntimeOffer;
use sundial_core::clock::{SharedClock, SystemClock};
use sundial_core::types::ScriptRuntime;
use sundial_runner::{AppKeys, OneApp, Registration, Runner, RunnerConfig, Runtimes, RuntimesConfig};
use sundial_store::Store;
use tokio::net::TcpListener;

use crate::config::Resolved;

/// The built-in runner's keys: every app's valid secrets, from the store.
struct StoreKeys {
    store: Arc<dyn Store>,
    clock: SharedClock,
}

#[async_trait]
impl AppKeys for StoreKeys {
    async fn secrets(&self, app_id: &str) -> Option<Vec<String>> {
        let app = self.store.app_by_id(app_id).await.ok()??;
        Some(app.valid_secrets(self.clock.now_ms()).into_iter().map(str::to_string).collect())
    }
}

/// Set up the sandboxes (off the async threads: compiling an interpreter takes seconds).
async fn detect(rc: RuntimesConfig) -> anyhow::Result<Runtimes> {
    Ok(tokio::task::spawn_blocking(move || Runtimes::detect(&rc)).await?)
}

/// A running built-in runner: the runner, and what the engine needs to route to it.
pub struct Builtin {
    pub runner: Runner,
    pub engine_side: sundial_engine::BuiltinRunner,
}

/// Where a node's own API is reached from the same machine.
fn local_url(addr: SocketAddr) -> String {
    let ip = if addr.ip().is_unspecified() {
        match addr {
            SocketAddr::V4(_) => "127.0.0.1".to_string(),
            SocketAddr::V6(_) => "[::1]".to_string(),
        }
    } else if addr.is_ipv6() {
        format!("[{}]", addr.ip())
    } else {
        addr.ip().to_string()
    };
    format!("http://{ip}:{}", addr.port())
}

/// Start `serve`'s built-in runner on a loopback port of its own; its calls go to this
/// node's API at `api_addr`.
pub async fn start_builtin(
    cfg: &Resolved,
    store: Arc<dyn Store>,
    clock: SharedClock,
    api_addr: SocketAddr,
) -> anyhow::Result<Builtin> {
    let runtimes = detect(cfg.runtimes.clone()).await?;
    for o in runtimes.offers() {
        tracing::info!(runtime = o.runtime, available = o.available, isolation = %o.isolation, detail = %o.detail, "script runtime");
    }
    let mut run_cfg = RunnerConfig::new(local_url(api_addr));
    run_cfg.concurrency = cfg.runner_concurrency;
    run_cfg.sync_wait = Duration::from_millis(cfg.runner_sync_wait_ms);
    let keys = Arc::new(StoreKeys { store, clock: clock.clone() });
    let runner = Runner::new(run_cfg, keys, Arc::new(runtimes), clock);
    let listener = TcpListener::bind("127.0.0.1:0").await.context("the built-in runner's listener")?;
    let address = format!("http://{}/", listener.local_addr()?);
    let router = runner.router();
    tokio::spawn(async move {
        if let Err(e) = axum::serve(listener, router).await {
            tracing::error!(error = %e, "the built-in runner's server stopped");
        }
    });
    let engine_side = sundial_engine::BuiltinRunner { address, runtimes: runner.runtimes().available() };
    Ok(Builtin { runner, engine_side })
}

/// Checks Python and JavaScript sources at upload with the built-in runner's interpreters.
#[derive(Debug)]
pub struct InterpreterChecker(pub Arc<Runtimes>);

impl sundial_api::SourceChecker for InterpreterChecker {
    fn check(&self, runtime: ScriptRuntime, source: &str) -> Result<(), sundial_api::SourceProblem> {
        match self.0.check_source(runtime.as_str(), source) {
            Ok(None) => Ok(()),
            Ok(Some(p)) => Err(sundial_api::SourceProblem { message: p.message, line: p.line }),
            Err(why) => {
                // The check itself failed: the upload is accepted (as without a checker).
                tracing::warn!(%runtime, error = %why, "a source could not be checked at upload");
                Ok(())
            }
        }
    }
}

fn runtime_of(name: &str) -> ScriptRuntime {
    name.parse().expect("the runner names only known runtimes")
}

/// What the API shows (`GET /api/v1/runtimes`) and accepts at upload: the built-in runner's runtimes.
pub fn offers(runtimes: &Runtimes) -> Vec<RuntimeOffer> {
    runtimes
        .offers()
        .iter()
        .map(|o| RuntimeOffer {
            runtime: runtime_of(o.runtime),
            available: o.available,
            isolation: o.isolation.clone(),
            detail: o.detail.clone(),
        })
        .collect()
}

/// Without a built-in runner (`--runner false`), scripts run on the apps' `sundial runner`
/// processes: every runtime may be uploaded, and each runner says what it runs.
pub fn no_builtin_offers() -> Vec<RuntimeOffer> {
    ["wasm", "python", "javascript", "bash", "sh"]
        .into_iter()
        .map(|r| RuntimeOffer {
            runtime: runtime_of(r),
            available: true,
            isolation: "external".into(),
            detail: "this node has no built-in runner; the app's `sundial runner` executors run scripts".into(),
        })
        .collect()
}

/// `sundial runner`: a script runner for one app.
#[derive(Debug, Clone, Args)]
pub struct RunnerArgs {
    /// Sundial's base URL.
    #[arg(long, env = "SUNDIAL_URL", default_value = "http://127.0.0.1:7700")]
    pub url: String,
    /// The app whose script jobs this runner runs.
    #[arg(long, env = "SUNDIAL_APP_ID")]
    pub app_id: String,
    /// The app's signing secret (`whsec_…`).
    #[arg(long, env = "SUNDIAL_APP_SECRET", hide_env_values = true)]
    pub app_secret: String,
    /// Address to listen on for deliveries.
    #[arg(long, env = "SUNDIAL_RUNNER_LISTEN", default_value = "127.0.0.1:7710")]
    pub listen: String,
    /// The URL Sundial delivers to (default: `http://<listen address>/`).
    #[arg(long, env = "SUNDIAL_RUNNER_ADDRESS")]
    pub address: Option<String>,
    /// The name it registers under.
    #[arg(long, env = "SUNDIAL_RUNNER_NAME", default_value = "sundial-runner")]
    pub name: String,
    /// Scripts run at once at most (default: the number of cores).
    #[arg(long, env = "SUNDIAL_RUNNER_CONCURRENCY")]
    pub concurrency: Option<usize>,
    /// Compiled modules and per-run directories.
    #[arg(long, env = "SUNDIAL_RUNNER_DIR", default_value = "sundial-data/runner")]
    pub dir: PathBuf,
    /// Where `python.wasm` and `javascript.wasm` are.
    #[arg(long, env = "SUNDIAL_INTERPRETERS_DIR", default_value = "sundial-data/interpreters")]
    pub interpreters_dir: PathBuf,
    /// Turn on the shell runtime (`bash`, `sh` in bubblewrap).
    #[arg(long, env = "SUNDIAL_ALLOW_SHELL")]
    pub allow_shell: bool,
    /// Run shell scripts even without cgroup limits.
    #[arg(long, env = "SUNDIAL_SHELL_ACCEPT_WEAKER")]
    pub shell_accept_weaker: bool,
    /// Run `python`/`javascript` scripts with the host's python3/node in the shell sandbox.
    #[arg(long, env = "SUNDIAL_HOST_INTERPRETERS")]
    pub host_interpreters: bool,
    /// A result ready within this many milliseconds is the delivery's answer; later ones go by callback.
    #[arg(long, env = "SUNDIAL_RUNNER_SYNC_WAIT_MS", default_value_t = 10_000)]
    pub sync_wait_ms: u64,
    /// Seconds scripts in progress may take to finish after SIGTERM.
    #[arg(long, env = "SUNDIAL_SHUTDOWN_GRACE_SECS", default_value_t = 30)]
    pub shutdown_grace_secs: u64,
    /// Log filter.
    #[arg(long, env = "SUNDIAL_LOG", default_value = "info")]
    pub log: String,
    #[command(flatten)]
    pub limits: crate::config::ScriptLimitSettings,
}

pub async fn run(args: RunnerArgs) -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_new(&args.log)
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .with_writer(std::io::stderr)
        .init();
    let clock: SharedClock = Arc::new(SystemClock);
    anyhow::ensure!(!args.host_interpreters || args.allow_shell, "--host-interpreters needs --allow-shell");
    let mut rc = RuntimesConfig::new(args.dir.clone());
    rc.interpreters_dir = Some(args.interpreters_dir.clone());
    (rc.allow_shell, rc.shell_accept_weaker, rc.host_interpreters) =
        (args.allow_shell, args.shell_accept_weaker, args.host_interpreters);
    args.limits.apply(&Default::default(), &mut rc)?;
    let runtimes = detect(rc).await?;
    for o in runtimes.offers() {
        println!("runtime {:<10} {:<5} {:<16} {}", o.runtime, o.available, o.isolation, o.detail);
    }
    anyhow::ensure!(!runtimes.available().is_empty(), "no script runtime is available here");
    let mut cfg = RunnerConfig::new(args.url.clone());
    cfg.sync_wait = Duration::from_millis(args.sync_wait_ms);
    if let Some(c) = args.concurrency {
        anyhow::ensure!((1..=1024).contains(&c), "concurrency: must be 1-1024");
        cfg.concurrency = c;
    }
    let keys = Arc::new(OneApp { app_id: args.app_id.clone(), secret: args.app_secret.clone() });
    let runner = Runner::new(cfg, keys, Arc::new(runtimes), clock.clone());
    let listener = TcpListener::bind(&args.listen).await.with_context(|| format!("listening on {}", args.listen))?;
    let addr = listener.local_addr()?;
    let address = args.address.clone().unwrap_or_else(|| format!("{}/", local_url(addr)));
    let stop_server = Arc::new(tokio::sync::Notify::new());
    let stop = stop_server.clone();
    let server = tokio::spawn(
        axum::serve(listener, runner.router())
            .with_graceful_shutdown(async move { stop.notified().await })
            .into_future(),
    );
    let registration = Registration::register(&runner, &args.app_id, &address, &args.name)
        .await
        .with_context(|| format!("registering with {}", args.url))?;
    println!(
        "runner {} registered with {} for app {}; listening on {address}",
        registration.executor_id(),
        args.url,
        args.app_id
    );
    let stop_beat = Arc::new(tokio::sync::Notify::new());
    let beat = {
        let stop_beat = stop_beat.clone();
        let reg = Arc::new(registration);
        let r2 = reg.clone();
        (tokio::spawn(async move { r2.heartbeat_until(stop_beat).await }), reg)
    };
    crate::shutdown_signal().await;
    tracing::info!("shutting down: deliveries get 503; scripts in progress finish");
    let cancelled = runner.shutdown(Duration::from_secs(args.shutdown_grace_secs)).await;
    if cancelled > 0 {
        tracing::warn!(cancelled, "scripts still running after the grace period were cancelled");
    }
    stop_beat.notify_one();
    let _ = beat.0.await;
    if let Err(e) = beat.1.deregister().await {
        tracing::warn!(error = %e, "deregistering failed");
    }
    stop_server.notify_one();
    let _ = server.await;
    tracing::info!("stopped");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `serve` and `sundial runner` take the script limits from one struct: every `script_*`
    /// row of the README's configuration table is a flag and a variable of both, spelled as there.
    #[test]
    fn serve_and_runner_take_the_script_limits_as_the_readme_names_them() {
        use clap::{CommandFactory, Parser};
        #[derive(Parser)]
        #[allow(clippy::large_enum_variant)]
        enum Cli {
            Serve(crate::config::Settings),
            Runner(RunnerArgs),
        }
        let rows: Vec<(String, String, String)> = include_str!("../../../README.md")
            .lines()
            .filter(|l| l.starts_with("| `script_"))
            .map(|l| {
                let cell = |i: usize| l.split('|').nth(i).unwrap().trim().trim_matches('`').to_string();
                (cell(1), cell(2), cell(3))
            })
            .collect();
        assert_eq!(rows.len(), 7, "{rows:?}");
        let cli = Cli::command();
        for command in ["serve", "runner"] {
            let sub = cli.find_subcommand(command).unwrap();
            for (key, flag, env) in &rows {
                let arg = sub
                    .get_arguments()
                    .find(|a| a.get_id() == key.as_str())
                    .unwrap_or_else(|| panic!("{command} {key}"));
                assert_eq!(format!("--{}", arg.get_long().unwrap()), *flag, "{command} {key}");
                assert_eq!(arg.get_env().and_then(|e| e.to_str()), Some(env.as_str()), "{command} {key}");
            }
        }
        let Cli::Serve(s) = Cli::try_parse_from(["sundial", "serve", "--script-fuel", "7"]).unwrap() else { panic!() };
        assert_eq!(s.script_limits.script_fuel, Some(7));
        let runner = ["sundial", "runner", "--app-id", "app_1", "--app-secret", "whsec_x", "--script-fuel", "7"];
        let Cli::Runner(r) = Cli::try_parse_from(runner).unwrap() else { panic!() };
        assert_eq!(r.limits.script_fuel, Some(7));
    }
}
