//! The settings as given: [`Settings`] (`serve`, `migrate`) and [`ScriptLimitSettings`] (also
//! `sundial runner`), each field a flag, a `SUNDIAL_*` variable and a TOML key.

use std::path::PathBuf;

use clap::Args;
use serde::Deserialize;

/// Settings shared by `serve` and `migrate`. Every field is optional here so a
/// missing flag can fall back to the file.
#[derive(Debug, Clone, Default, Args, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Settings {
    /// TOML file with any of the settings below (keys as in the README table).
    #[arg(long, env = "SUNDIAL_CONFIG")]
    #[serde(skip)]
    pub config: Option<PathBuf>,
    /// Address to listen on.
    #[arg(long, env = "SUNDIAL_LISTEN")]
    pub listen: Option<String>,
    /// Directory for the embedded SQLite database (when no database URL is given).
    #[arg(long, env = "SUNDIAL_DATA_DIR")]
    pub data_dir: Option<PathBuf>,
    /// `mysql://user:pass@host:3306/db` (MySQL or MariaDB) or `sqlite://path`.
    #[arg(long, env = "SUNDIAL_DATABASE_URL")]
    pub database_url: Option<String>,
    /// Maximum database connections (MySQL; SQLite always uses one).
    #[arg(long, env = "SUNDIAL_DB_MAX_CONNECTIONS")]
    pub db_max_connections: Option<u32>,
    /// Log every database statement slower than this (WARN, with its text and time); 0: off.
    #[arg(long, env = "SUNDIAL_DB_SLOW_STATEMENT_MS")]
    pub db_slow_statement_ms: Option<u64>,
    /// Key that encrypts the app signing secrets at rest: base64 or hex of 32 random bytes.
    /// Previous keys may follow, comma-separated: they only decrypt (key rotation). Default
    /// on SQLite: `secret.key` beside the database, generated on first start; required on MySQL.
    #[arg(long, env = "SUNDIAL_SECRET_KEY", hide_env_values = true)]
    pub secret_key: Option<String>,
    /// File holding the secret key (first line) and any previous keys (one per line); must
    /// be readable by its owner only. Instead of `secret_key`.
    #[arg(long, env = "SUNDIAL_SECRET_KEY_FILE")]
    pub secret_key_file: Option<PathBuf>,
    /// Operator API key to register instead of generating one on first start.
    #[arg(long, env = "SUNDIAL_ADMIN_KEY", hide_env_values = true)]
    pub admin_key: Option<String>,
    /// `text` (default) or `json`.
    #[arg(long, env = "SUNDIAL_LOG_FORMAT")]
    pub log_format: Option<String>,
    /// Log filter, e.g. `info`, `sundial=debug,sqlx=warn`.
    #[arg(long, env = "SUNDIAL_LOG")]
    pub log: Option<String>,
    /// Largest accepted request body in bytes.
    #[arg(long, env = "SUNDIAL_MAX_BODY_BYTES")]
    pub max_body_bytes: Option<usize>,
    /// Milliseconds a client has to send a request's headers (from its first byte; from the
    /// connection's start for a fresh connection) before the connection is closed.
    #[arg(long, env = "SUNDIAL_HTTP_HEADER_TIMEOUT_MS")]
    pub http_header_timeout_ms: Option<u64>,
    /// Milliseconds a request's whole body has to arrive (from its headers); a body still
    /// arriving then is answered `408` and the connection closed.
    #[arg(long, env = "SUNDIAL_HTTP_BODY_TIMEOUT_MS")]
    pub http_body_timeout_ms: Option<u64>,
    /// Milliseconds a keep-alive connection may wait for its next request.
    #[arg(long, env = "SUNDIAL_HTTP_IDLE_TIMEOUT_MS")]
    pub http_idle_timeout_ms: Option<u64>,
    /// Open API connections at most; at the cap a new connection displaces the longest-idle
    /// one (lowered at start to fit the open-file limit).
    #[arg(long, env = "SUNDIAL_MAX_CONNECTIONS")]
    pub max_connections: Option<usize>,
    /// Open API connections from one IP address at most; more are closed at once.
    #[arg(long, env = "SUNDIAL_MAX_CONNECTIONS_PER_PEER")]
    pub max_connections_per_peer: Option<usize>,
    /// Seconds a rotated-out app secret keeps verifying signatures.
    #[arg(long, env = "SUNDIAL_SECRET_GRACE_SECS")]
    pub secret_grace_secs: Option<i64>,
    /// This node's name (default: a fresh id per start).
    #[arg(long, env = "SUNDIAL_NODE_ID")]
    pub node_id: Option<String>,
    /// Milliseconds of runs generated ahead of time.
    #[arg(long, env = "SUNDIAL_HORIZON_MS")]
    pub horizon_ms: Option<i64>,
    /// Runs due within this many milliseconds are claimed into the node's timer.
    #[arg(long, env = "SUNDIAL_CLAIM_WINDOW_MS")]
    pub claim_window_ms: Option<i64>,
    /// At most this many claimed runs wait in the node's memory.
    #[arg(long, env = "SUNDIAL_TIMER_CAPACITY")]
    pub timer_capacity: Option<usize>,
    /// Deliveries in flight at once.
    #[arg(long, env = "SUNDIAL_MAX_INFLIGHT")]
    pub max_inflight: Option<usize>,
    /// Deliveries in flight at once for one app (default: half of `max_inflight`): a hung
    /// executor holds at most this many of the node's delivery slots.
    #[arg(long, env = "SUNDIAL_MAX_INFLIGHT_PER_APP")]
    pub max_inflight_per_app: Option<usize>,
    /// Deliveries in flight at once for one tenant (default: three quarters of `max_inflight`).
    #[arg(long, env = "SUNDIAL_MAX_INFLIGHT_PER_TENANT")]
    pub max_inflight_per_tenant: Option<usize>,
    /// Seconds in-flight deliveries may take to finish after SIGTERM.
    #[arg(long, env = "SUNDIAL_SHUTDOWN_GRACE_SECS")]
    pub shutdown_grace_secs: Option<u64>,
    /// Days finished runs, their logs and silent executors are kept.
    #[arg(long, env = "SUNDIAL_RETENTION_DAYS")]
    pub retention_days: Option<i64>,
    /// Job affinity: milliseconds a schedule fire of a job another node owns must be
    /// overdue before this node claims it.
    #[arg(long, env = "SUNDIAL_AFFINITY_GRACE_MS")]
    pub affinity_grace_ms: Option<i64>,
    /// Most milliseconds a run is taken from the timer and committed `dispatching` ahead
    /// of its instant (as much as recent dispatch transactions took); 0 turns it off.
    #[arg(long, env = "SUNDIAL_MAX_DISPATCH_LEAD_MS")]
    pub max_dispatch_lead_ms: Option<i64>,
    /// Largest executor answer read, in bytes; a larger one fails the attempt `answer_too_large`.
    #[arg(long, env = "SUNDIAL_MAX_ANSWER_BYTES")]
    pub max_answer_bytes: Option<usize>,
    /// Largest run output kept and passed to child runs, in bytes (its compact JSON); a result
    /// call with a larger one is refused (413), a larger synchronous answer fails the attempt
    /// `output_too_large`. Default 65536.
    #[arg(long, env = "SUNDIAL_MAX_OUTPUT_BYTES")]
    pub max_output_bytes: Option<usize>,
    /// Largest `wasm` script accepted (the module's bytes, or its `.wat` text), in bytes.
    #[arg(long, env = "SUNDIAL_MAX_SCRIPT_WASM_BYTES")]
    pub max_script_wasm_bytes: Option<usize>,
    /// Largest text script accepted (Python, JavaScript, shell), in bytes.
    #[arg(long, env = "SUNDIAL_MAX_SCRIPT_TEXT_BYTES")]
    pub max_script_text_bytes: Option<usize>,
    /// Outbound address policy: may deliveries and cancels go to loopback addresses? (`true`/`false`)
    #[arg(long, env = "SUNDIAL_OUTBOUND_ALLOW_LOOPBACK")]
    pub outbound_allow_loopback: Option<bool>,
    /// Outbound address policy: may deliveries and cancels go to private networks (10/8,
    /// 172.16/12, 192.168/16, 100.64/10, fc00::/7)? (`true`/`false`)
    #[arg(long, env = "SUNDIAL_OUTBOUND_ALLOW_PRIVATE")]
    pub outbound_allow_private: Option<bool>,
    /// Run script jobs on this node (its built-in runner): `true` (default) or `false`.
    #[arg(long, env = "SUNDIAL_RUNNER", num_args = 0..=1, default_missing_value = "true")]
    pub runner: Option<bool>,
    /// Scripts this node's runner runs at once at most (default: the number of cores).
    #[arg(long, env = "SUNDIAL_RUNNER_CONCURRENCY")]
    pub runner_concurrency: Option<usize>,
    /// A script's result ready within this many milliseconds is the delivery's answer; a
    /// longer run answers `202` and reports its result by callback.
    #[arg(long, env = "SUNDIAL_RUNNER_SYNC_WAIT_MS")]
    pub runner_sync_wait_ms: Option<u64>,
    /// Turn on the shell runtime (`bash`, `sh` scripts, in bubblewrap). Off by default.
    #[arg(long, env = "SUNDIAL_ALLOW_SHELL", num_args = 0..=1, default_missing_value = "true")]
    pub allow_shell: Option<bool>,
    /// Run shell scripts even where cgroup limits are not available (bubblewrap and
    /// rlimits only). Off by default: the shell runtime is then not offered.
    #[arg(long, env = "SUNDIAL_SHELL_ACCEPT_WEAKER", num_args = 0..=1, default_missing_value = "true")]
    pub shell_accept_weaker: Option<bool>,
    /// Run `python` and `javascript` scripts with the host's `/usr/bin/python3` and
    /// `/usr/bin/node` in the shell sandbox (needs `allow_shell`) instead of in wasm.
    #[arg(long, env = "SUNDIAL_HOST_INTERPRETERS", num_args = 0..=1, default_missing_value = "true")]
    pub host_interpreters: Option<bool>,
    /// Where the Python and JavaScript interpreters (`python.wasm`, `javascript.wasm`) are
    /// (default: `<data_dir>/interpreters`; `scripts/fetch-interpreters` puts them there).
    #[arg(long, env = "SUNDIAL_INTERPRETERS_DIR")]
    pub interpreters_dir: Option<PathBuf>,
    /// The runner's caches: compiled modules and per-run directories (default: `<data_dir>/runner`).
    #[arg(long, env = "SUNDIAL_RUNNER_DIR")]
    pub runner_dir: Option<PathBuf>,
    /// Default quota: jobs per tenant (the operator sets others per tenant: `PUT /api/v1/tenants/{id}/quotas`). Default 10000.
    #[arg(long, env = "SUNDIAL_QUOTA_MAX_JOBS")]
    pub quota_max_jobs: Option<i64>,
    /// Default quota: the peak fires per second of a tenant's active jobs together. Default 1000.
    #[arg(long, env = "SUNDIAL_QUOTA_MAX_FIRES_PER_SECOND")]
    pub quota_max_fires_per_second: Option<i64>,
    /// Default quota: runs of one tenant in flight at once. Default 1000.
    #[arg(long, env = "SUNDIAL_QUOTA_MAX_INFLIGHT")]
    pub quota_max_inflight: Option<i64>,
    /// Default quota: scripts per tenant. Default 1000.
    #[arg(long, env = "SUNDIAL_QUOTA_MAX_SCRIPTS")]
    pub quota_max_scripts: Option<i64>,
    /// Default quota: bytes of script source per tenant, every version counted. Default 268435456 (256 MiB).
    #[arg(long, env = "SUNDIAL_QUOTA_MAX_SCRIPT_BYTES")]
    pub quota_max_script_bytes: Option<i64>,
    /// Default quota: log bytes executors may send for one run. Default 10485760 (10 MiB).
    #[arg(long, env = "SUNDIAL_QUOTA_MAX_LOG_BYTES_PER_RUN")]
    pub quota_max_log_bytes_per_run: Option<i64>,
    /// Default quota: log bytes a tenant's runs may receive in a UTC day. Default 1073741824 (1 GiB).
    #[arg(long, env = "SUNDIAL_QUOTA_MAX_LOG_BYTES_PER_DAY")]
    pub quota_max_log_bytes_per_day: Option<i64>,
    /// Default quota: jobs handler registrations may create for one app. Default 1000.
    #[arg(long, env = "SUNDIAL_QUOTA_MAX_HANDLERS_PER_APP")]
    pub quota_max_handlers_per_app: Option<i64>,
    /// Default quota: API requests per second of one API key, on each node (429 with `Retry-After` beyond). Default 1000.
    #[arg(long, env = "SUNDIAL_QUOTA_MAX_API_REQUESTS_PER_SECOND")]
    pub quota_max_api_requests_per_second: Option<i64>,
    /// New handlers (each a new job) one executor registration may add. Default 100.
    #[arg(long, env = "SUNDIAL_MAX_NEW_HANDLERS_PER_REGISTRATION")]
    pub max_new_handlers_per_registration: Option<usize>,
    /// Log bytes one `POST /runs/{id}/logs` call may carry. Default 262144.
    #[arg(long, env = "SUNDIAL_MAX_LOG_BYTES_PER_CALL")]
    pub max_log_bytes_per_call: Option<usize>,
    /// Seconds after a run ended its executor may still send log lines. Default 60.
    #[arg(long, env = "SUNDIAL_LOG_GRACE_SECS")]
    pub log_grace_secs: Option<i64>,

    /// The limits of every script run on this node's built-in runner.
    #[command(flatten)]
    #[serde(flatten)]
    pub script_limits: ScriptLimitSettings,
}

/// The limits of every script run on a runner (the operator's maxima), the same flags,
/// variables and file keys for both: flattened into [`Settings`] for `serve`'s built-in
/// runner, and into `sundial runner`'s flags. (No `deny_unknown_fields` here: serde refuses
/// it on a flattened struct; `Settings` refuses unknown keys for both.)
#[derive(Debug, Clone, Default, Args, Deserialize)]
pub struct ScriptLimitSettings {
    /// Linear memory of a wasm, Python or JavaScript run, in bytes (default 128 MiB).
    #[arg(long, env = "SUNDIAL_SCRIPT_MEMORY_BYTES")]
    pub script_memory_bytes: Option<u64>,
    /// Memory of a shell run as a whole (its cgroup), in bytes (default 256 MiB).
    #[arg(long, env = "SUNDIAL_SCRIPT_SHELL_MEMORY_BYTES")]
    pub script_shell_memory_bytes: Option<u64>,
    /// Fuel (wasm instructions) of a wasm, Python or JavaScript run; 0 (default): only the
    /// job's timeout bounds its CPU time.
    #[arg(long, env = "SUNDIAL_SCRIPT_FUEL")]
    pub script_fuel: Option<u64>,
    /// stdout and stderr of a run are each kept (and logged) up to this many bytes (default 1 MiB).
    #[arg(long, env = "SUNDIAL_SCRIPT_OUTPUT_BYTES")]
    pub script_output_bytes: Option<u64>,
    /// Disk quota of a run, every runtime, in bytes (default 64 MiB).
    #[arg(long, env = "SUNDIAL_SCRIPT_DISK_BYTES")]
    pub script_disk_bytes: Option<u64>,
    /// Files a run may hold open at once (default 256).
    #[arg(long, env = "SUNDIAL_SCRIPT_OPEN_FILES")]
    pub script_open_files: Option<u64>,
    /// A shell run stopped by its timeout or a cancel gets SIGTERM this many milliseconds
    /// before SIGKILL, within its timeout (0, the default: SIGKILL at once; at most 60000).
    #[arg(long, env = "SUNDIAL_SCRIPT_KILL_GRACE_MS")]
    pub script_kill_grace_ms: Option<u64>,
}
