//! The settings resolved: flags and variables, then the file, then defaults, each value
//! checked ([`Resolved`]; the script limits into the runner's `RuntimesConfig`).

use std::path::{Path, PathBuf};

use anyhow::Context;
use sundial_engine::EngineConfig;

use crate::secret_key::KeySource;

use super::flags::{ScriptLimitSettings, Settings};

pub const DEFAULT_LISTEN: &str = "127.0.0.1:7700";
pub const DEFAULT_DATA_DIR: &str = "sundial-data";

impl ScriptLimitSettings {
    /// These limits over `rc`'s defaults (flags and environment first, then `file`), checked.
    pub fn apply(&self, file: &ScriptLimitSettings, rc: &mut sundial_runner::RuntimesConfig) -> anyhow::Result<()> {
        use sundial_core::job::script_limit_ranges as ranges;
        let pick = |a: Option<u64>, b: Option<u64>, default: u64, name: &str, range: std::ops::RangeInclusive<u64>| {
            let v = a.or(b).unwrap_or(default);
            anyhow::ensure!(range.contains(&v), "{name}: must be {}-{}", range.start(), range.end());
            Ok(v)
        };
        rc.wasm_memory_bytes = pick(
            self.script_memory_bytes,
            file.script_memory_bytes,
            rc.wasm_memory_bytes as u64,
            "script_memory_bytes",
            (16 << 20)..=(4 << 30),
        )? as usize;
        rc.shell_memory_bytes = pick(
            self.script_shell_memory_bytes,
            file.script_shell_memory_bytes,
            rc.shell_memory_bytes,
            "script_shell_memory_bytes",
            (16 << 20)..=(1 << 40),
        )?;
        let fuel = pick(self.script_fuel, file.script_fuel, rc.wasm_fuel.unwrap_or(0), "script_fuel", 0..=u64::MAX)?;
        rc.wasm_fuel = (fuel > 0).then_some(fuel);
        rc.output_cap_bytes = pick(
            self.script_output_bytes,
            file.script_output_bytes,
            rc.output_cap_bytes as u64,
            "script_output_bytes",
            ranges::OUTPUT_BYTES,
        )? as usize;
        rc.disk_bytes = pick(
            self.script_disk_bytes,
            file.script_disk_bytes,
            rc.disk_bytes,
            "script_disk_bytes",
            ranges::DISK_BYTES,
        )?;
        rc.open_files = pick(
            self.script_open_files,
            file.script_open_files,
            rc.open_files,
            "script_open_files",
            ranges::OPEN_FILES,
        )?;
        rc.kill_grace = std::time::Duration::from_millis(pick(
            self.script_kill_grace_ms,
            file.script_kill_grace_ms,
            rc.kill_grace.as_millis() as u64,
            "script_kill_grace_ms",
            ranges::KILL_GRACE_MS,
        )?);
        Ok(())
    }
}

/// Settings with every default applied.
#[derive(Debug, Clone)]
pub struct Resolved {
    pub listen: String,
    pub database_url: String,
    pub db_max_connections: u32,
    pub db_slow_statement_ms: u64,
    pub admin_key: Option<String>,
    /// Where the keys sealing the app secrets come from.
    pub secret_key: KeySource,
    pub log_json: bool,
    pub log: String,
    pub max_body_bytes: usize,
    pub http: crate::http::HttpLimits,
    pub secret_grace_secs: i64,
    pub node_id: String,
    pub horizon_ms: i64,
    pub claim_window_ms: i64,
    pub timer_capacity: usize,
    pub max_inflight: usize,
    pub max_inflight_per_app: Option<usize>,
    pub max_inflight_per_tenant: Option<usize>,
    pub shutdown_grace_secs: u64,
    pub retention_days: i64,
    pub affinity_grace_ms: i64,
    pub max_dispatch_lead_ms: i64,
    pub max_answer_bytes: usize,
    pub max_output_bytes: usize,
    pub max_script_wasm_bytes: usize,
    pub max_script_text_bytes: usize,
    pub outbound: sundial_core::outbound::OutboundPolicy,
    pub runner: bool,
    pub runner_concurrency: usize,
    pub runner_sync_wait_ms: u64,
    /// Every tenant's quotas unless the operator set others for it.
    pub quotas: sundial_core::quota::Quotas,
    pub max_new_handlers_per_registration: usize,
    pub max_log_bytes_per_call: usize,
    pub log_grace_secs: i64,
    /// The sandboxes' settings and the script limits (operator maxima).
    pub runtimes: sundial_runner::RuntimesConfig,
}

/// The engine's timing settings, checked.
struct EngineTiming {
    claim_window_ms: i64,
    horizon_ms: i64,
    timer_capacity: usize,
    retention_days: i64,
    affinity_grace_ms: i64,
    max_dispatch_lead_ms: i64,
}

/// The engine's limits on deliveries, checked.
struct DeliveryLimits {
    max_inflight: usize,
    max_inflight_per_app: Option<usize>,
    max_inflight_per_tenant: Option<usize>,
    max_answer_bytes: usize,
    max_output_bytes: usize,
}

/// What the API accepts from executors: new handlers per registration, log bytes per call,
/// seconds after a run's end its log lines are taken.
struct ExecutorLimits {
    max_new_handlers_per_registration: usize,
    max_log_bytes_per_call: usize,
    log_grace_secs: i64,
}

impl Settings {
    pub fn resolve(self) -> anyhow::Result<Resolved> {
        let file = match &self.config {
            Some(p) => load_file(p)?,
            None => Settings::default(),
        };
        let data_dir =
            self.data_dir.clone().or(file.data_dir.clone()).unwrap_or_else(|| PathBuf::from(DEFAULT_DATA_DIR));
        let (database_url, secret_key) = self.database(&file, &data_dir)?;
        let log_json = self.log_json(&file)?;
        let secret_grace_secs = self.secret_grace_secs.or(file.secret_grace_secs).unwrap_or(86_400);
        anyhow::ensure!(secret_grace_secs >= 0, "secret_grace_secs: must not be negative");
        // The engine's defaults are the one source of the engine settings' defaults.
        let engine_defaults = sundial_engine::EngineConfig::new("");
        let timing = self.engine_timing(&file, &engine_defaults)?;
        let delivery = self.delivery_limits(&file, &engine_defaults)?;
        let (max_script_wasm_bytes, max_script_text_bytes) = self.script_sizes(&file)?;
        let http = self.http_limits(&file)?;
        let outbound = self.outbound(&file, &engine_defaults);
        let (runner_concurrency, allow_shell, host_interpreters) = self.runner_switches(&file)?;
        let quotas = self.quotas(&file)?;
        let executors = self.executor_limits(&file)?;
        let runtimes = self.runtimes(&file, &data_dir, allow_shell, host_interpreters)?;
        Ok(Resolved {
            runtimes,
            runner: self.runner.or(file.runner).unwrap_or(true),
            runner_concurrency,
            runner_sync_wait_ms: self.runner_sync_wait_ms.or(file.runner_sync_wait_ms).unwrap_or(10_000),
            listen: self.listen.or(file.listen).unwrap_or_else(|| DEFAULT_LISTEN.into()),
            database_url,
            db_max_connections: self.db_max_connections.or(file.db_max_connections).unwrap_or(10),
            db_slow_statement_ms: self.db_slow_statement_ms.or(file.db_slow_statement_ms).unwrap_or(1000),
            admin_key: self.admin_key.or(file.admin_key),
            secret_key,
            log_json,
            log: self.log.or(file.log).unwrap_or_else(|| "info".into()),
            max_body_bytes: self.max_body_bytes.or(file.max_body_bytes).unwrap_or(1024 * 1024),
            http,
            secret_grace_secs,
            node_id: self
                .node_id
                .or(file.node_id)
                .unwrap_or_else(|| sundial_core::ids::new_id(sundial_core::ids::NODE)),
            horizon_ms: timing.horizon_ms,
            claim_window_ms: timing.claim_window_ms,
            timer_capacity: timing.timer_capacity,
            max_inflight: delivery.max_inflight,
            max_inflight_per_app: delivery.max_inflight_per_app,
            max_inflight_per_tenant: delivery.max_inflight_per_tenant,
            shutdown_grace_secs: self.shutdown_grace_secs.or(file.shutdown_grace_secs).unwrap_or(30),
            retention_days: timing.retention_days,
            affinity_grace_ms: timing.affinity_grace_ms,
            max_dispatch_lead_ms: timing.max_dispatch_lead_ms,
            max_answer_bytes: delivery.max_answer_bytes,
            max_output_bytes: delivery.max_output_bytes,
            max_script_wasm_bytes,
            max_script_text_bytes,
            outbound,
            quotas,
            max_new_handlers_per_registration: executors.max_new_handlers_per_registration,
            max_log_bytes_per_call: executors.max_log_bytes_per_call,
            log_grace_secs: executors.log_grace_secs,
        })
    }

    /// The database URL (default: SQLite in `data_dir`) and where the secret key comes from.
    fn database(&self, file: &Settings, data_dir: &Path) -> anyhow::Result<(String, KeySource)> {
        let database_url = self
            .database_url
            .clone()
            .or(file.database_url.clone())
            .unwrap_or_else(|| format!("sqlite://{}", data_dir.join("sundial.db").display()));
        let mysql = database_url.starts_with("mysql://") || database_url.starts_with("mariadb://");
        if !mysql && sundial_store::sqlite_path(&database_url).is_none() {
            anyhow::bail!("{}", sundial_store::StoreError::BadUrl(sundial_store::redact_url(&database_url)));
        }
        let secret_key = match (
            self.secret_key.clone().or(file.secret_key.clone()),
            self.secret_key_file.clone().or(file.secret_key_file.clone()),
        ) {
            (Some(_), Some(_)) => anyhow::bail!("secret_key and secret_key_file: give one of them, not both"),
            (Some(v), None) => KeySource::Value(v),
            (None, Some(path)) => KeySource::File(path),
            (None, None) => match sundial_store::sqlite_path(&database_url) {
                Some(p) if p.is_empty() || p == ":memory:" => KeySource::Ephemeral,
                Some(p) => KeySource::Beside(
                    Path::new(p).parent().unwrap_or(Path::new("")).join(crate::secret_key::DEFAULT_FILE),
                ),
                None => KeySource::Missing,
            },
        };
        Ok((database_url, secret_key))
    }

    /// `log_format`: `text` (false) or `json` (true).
    fn log_json(&self, file: &Settings) -> anyhow::Result<bool> {
        let log_format = self.log_format.clone().or(file.log_format.clone()).unwrap_or_else(|| "text".into());
        Ok(match log_format.as_str() {
            "text" => false,
            "json" => true,
            other => anyhow::bail!("log_format: `{other}` is not `text` or `json`"),
        })
    }

    fn engine_timing(&self, file: &Settings, engine_defaults: &EngineConfig) -> anyhow::Result<EngineTiming> {
        let claim_window_ms = self.claim_window_ms.or(file.claim_window_ms).unwrap_or(engine_defaults.claim_window_ms);
        anyhow::ensure!((100..=60_000).contains(&claim_window_ms), "claim_window_ms: must be 100-60000");
        let horizon_ms = self.horizon_ms.or(file.horizon_ms).unwrap_or(engine_defaults.horizon_ms);
        anyhow::ensure!(
            horizon_ms >= claim_window_ms && horizon_ms <= 86_400_000,
            "horizon_ms: must be at least claim_window_ms ({claim_window_ms}) and at most one day"
        );
        let timer_capacity = self.timer_capacity.or(file.timer_capacity).unwrap_or(engine_defaults.capacity);
        anyhow::ensure!(timer_capacity >= 1, "timer_capacity: must be at least 1");
        let retention_days =
            self.retention_days.or(file.retention_days).unwrap_or(engine_defaults.retention_ms / 86_400_000);
        anyhow::ensure!(retention_days >= 1, "retention_days: must be at least 1");
        let affinity_grace_ms =
            self.affinity_grace_ms.or(file.affinity_grace_ms).unwrap_or(engine_defaults.affinity_grace_ms);
        anyhow::ensure!(
            (0..=60_000).contains(&affinity_grace_ms),
            "affinity_grace_ms: must be 0-60000 (fires of other nodes' jobs wait this long; the misfire threshold is 5000 by default)"
        );
        let max_dispatch_lead_ms =
            self.max_dispatch_lead_ms.or(file.max_dispatch_lead_ms).unwrap_or(engine_defaults.max_dispatch_lead_ms);
        anyhow::ensure!(
            (0..=10_000).contains(&max_dispatch_lead_ms),
            "max_dispatch_lead_ms: must be 0-10000 (0 turns the lead off)"
        );
        Ok(EngineTiming {
            claim_window_ms,
            horizon_ms,
            timer_capacity,
            retention_days,
            affinity_grace_ms,
            max_dispatch_lead_ms,
        })
    }

    fn delivery_limits(&self, file: &Settings, engine_defaults: &EngineConfig) -> anyhow::Result<DeliveryLimits> {
        let max_inflight = self.max_inflight.or(file.max_inflight).unwrap_or(engine_defaults.max_inflight);
        anyhow::ensure!(max_inflight >= 1, "max_inflight: must be at least 1");
        let max_inflight_per_app = self.max_inflight_per_app.or(file.max_inflight_per_app);
        let max_inflight_per_tenant = self.max_inflight_per_tenant.or(file.max_inflight_per_tenant);
        for (name, v) in
            [("max_inflight_per_app", max_inflight_per_app), ("max_inflight_per_tenant", max_inflight_per_tenant)]
        {
            if let Some(v) = v {
                anyhow::ensure!(
                    (1..=max_inflight).contains(&v),
                    "{name}: must be 1-{max_inflight} (at most max_inflight)"
                );
            }
        }
        let max_answer_bytes =
            self.max_answer_bytes.or(file.max_answer_bytes).unwrap_or(engine_defaults.max_answer_bytes);
        anyhow::ensure!(
            (1024..=64 * 1024 * 1024).contains(&max_answer_bytes),
            "max_answer_bytes: must be 1024-67108864"
        );
        let max_output_bytes =
            self.max_output_bytes.or(file.max_output_bytes).unwrap_or(engine_defaults.max_output_bytes);
        anyhow::ensure!(
            (1024..=16 * 1024 * 1024).contains(&max_output_bytes),
            "max_output_bytes: must be 1024-16777216"
        );
        Ok(DeliveryLimits {
            max_inflight,
            max_inflight_per_app,
            max_inflight_per_tenant,
            max_answer_bytes,
            max_output_bytes,
        })
    }

    /// The largest `wasm` and text scripts accepted.
    fn script_sizes(&self, file: &Settings) -> anyhow::Result<(usize, usize)> {
        let script_defaults = sundial_api::ScriptLimits::default();
        let max_script_wasm_bytes =
            self.max_script_wasm_bytes.or(file.max_script_wasm_bytes).unwrap_or(script_defaults.max_wasm_bytes);
        anyhow::ensure!(
            (1024..=256 * 1024 * 1024).contains(&max_script_wasm_bytes),
            "max_script_wasm_bytes: must be 1024-268435456"
        );
        let max_script_text_bytes =
            self.max_script_text_bytes.or(file.max_script_text_bytes).unwrap_or(script_defaults.max_text_bytes);
        anyhow::ensure!(
            (1024..=64 * 1024 * 1024).contains(&max_script_text_bytes),
            "max_script_text_bytes: must be 1024-67108864"
        );
        Ok((max_script_wasm_bytes, max_script_text_bytes))
    }

    fn http_limits(&self, file: &Settings) -> anyhow::Result<crate::http::HttpLimits> {
        let ms = |v: Option<u64>, f: Option<u64>, default: u64, key: &str| -> anyhow::Result<std::time::Duration> {
            let v = v.or(f).unwrap_or(default);
            anyhow::ensure!((100..=3_600_000).contains(&v), "{key}: must be 100-3600000");
            Ok(std::time::Duration::from_millis(v))
        };
        let http = crate::http::HttpLimits {
            header_timeout: ms(
                self.http_header_timeout_ms,
                file.http_header_timeout_ms,
                10_000,
                "http_header_timeout_ms",
            )?,
            body_timeout: ms(self.http_body_timeout_ms, file.http_body_timeout_ms, 30_000, "http_body_timeout_ms")?,
            idle_timeout: ms(self.http_idle_timeout_ms, file.http_idle_timeout_ms, 60_000, "http_idle_timeout_ms")?,
            max_connections: self.max_connections.or(file.max_connections).unwrap_or(10_000),
            max_connections_per_peer: self.max_connections_per_peer.or(file.max_connections_per_peer).unwrap_or(256),
        };
        anyhow::ensure!((16..=1_000_000).contains(&http.max_connections), "max_connections: must be 16-1000000");
        anyhow::ensure!(
            (1..=1_000_000).contains(&http.max_connections_per_peer),
            "max_connections_per_peer: must be 1-1000000"
        );
        Ok(http)
    }

    fn outbound(&self, file: &Settings, engine_defaults: &EngineConfig) -> sundial_core::outbound::OutboundPolicy {
        sundial_core::outbound::OutboundPolicy {
            allow_loopback: self
                .outbound_allow_loopback
                .or(file.outbound_allow_loopback)
                .unwrap_or(engine_defaults.outbound.allow_loopback),
            allow_private: self
                .outbound_allow_private
                .or(file.outbound_allow_private)
                .unwrap_or(engine_defaults.outbound.allow_private),
        }
    }

    /// The built-in runner's concurrency, and whether the shell runtime and the host's
    /// interpreters are on.
    fn runner_switches(&self, file: &Settings) -> anyhow::Result<(usize, bool, bool)> {
        let runner_concurrency = self
            .runner_concurrency
            .or(file.runner_concurrency)
            .unwrap_or_else(|| std::thread::available_parallelism().map(|n| n.get()).unwrap_or(2));
        anyhow::ensure!((1..=1024).contains(&runner_concurrency), "runner_concurrency: must be 1-1024");
        let allow_shell = self.allow_shell.or(file.allow_shell).unwrap_or(false);
        let host_interpreters = self.host_interpreters.or(file.host_interpreters).unwrap_or(false);
        anyhow::ensure!(
            !host_interpreters || allow_shell,
            "host_interpreters: the host's interpreters run in the shell sandbox; turn on allow_shell too"
        );
        Ok((runner_concurrency, allow_shell, host_interpreters))
    }

    /// Every tenant's quotas unless the operator set others for it.
    fn quotas(&self, file: &Settings) -> anyhow::Result<sundial_core::quota::Quotas> {
        let d = sundial_core::quota::Quotas::default();
        let quotas = sundial_core::quota::Quotas {
            max_jobs: self.quota_max_jobs.or(file.quota_max_jobs).unwrap_or(d.max_jobs),
            max_fires_per_second: self
                .quota_max_fires_per_second
                .or(file.quota_max_fires_per_second)
                .unwrap_or(d.max_fires_per_second),
            max_inflight: self.quota_max_inflight.or(file.quota_max_inflight).unwrap_or(d.max_inflight),
            max_scripts: self.quota_max_scripts.or(file.quota_max_scripts).unwrap_or(d.max_scripts),
            max_script_bytes: self.quota_max_script_bytes.or(file.quota_max_script_bytes).unwrap_or(d.max_script_bytes),
            max_log_bytes_per_run: self
                .quota_max_log_bytes_per_run
                .or(file.quota_max_log_bytes_per_run)
                .unwrap_or(d.max_log_bytes_per_run),
            max_log_bytes_per_day: self
                .quota_max_log_bytes_per_day
                .or(file.quota_max_log_bytes_per_day)
                .unwrap_or(d.max_log_bytes_per_day),
            max_handlers_per_app: self
                .quota_max_handlers_per_app
                .or(file.quota_max_handlers_per_app)
                .unwrap_or(d.max_handlers_per_app),
            max_api_requests_per_second: self
                .quota_max_api_requests_per_second
                .or(file.quota_max_api_requests_per_second)
                .unwrap_or(d.max_api_requests_per_second),
        };
        quotas.check().map_err(|e| anyhow::anyhow!("quota_{e}"))?;
        Ok(quotas)
    }

    fn executor_limits(&self, file: &Settings) -> anyhow::Result<ExecutorLimits> {
        let max_new_handlers_per_registration =
            self.max_new_handlers_per_registration.or(file.max_new_handlers_per_registration).unwrap_or(100);
        anyhow::ensure!(
            (1..=1000).contains(&max_new_handlers_per_registration),
            "max_new_handlers_per_registration: must be 1-1000"
        );
        let max_log_bytes_per_call = self.max_log_bytes_per_call.or(file.max_log_bytes_per_call).unwrap_or(256 * 1024);
        anyhow::ensure!(max_log_bytes_per_call >= 1024, "max_log_bytes_per_call: must be at least 1024");
        let log_grace_secs = self.log_grace_secs.or(file.log_grace_secs).unwrap_or(60);
        anyhow::ensure!((0..=86_400).contains(&log_grace_secs), "log_grace_secs: must be 0-86400");
        Ok(ExecutorLimits { max_new_handlers_per_registration, max_log_bytes_per_call, log_grace_secs })
    }

    /// The sandboxes' settings: directories under `data_dir` by default, the script limits.
    fn runtimes(
        &self,
        file: &Settings,
        data_dir: &Path,
        allow_shell: bool,
        host_interpreters: bool,
    ) -> anyhow::Result<sundial_runner::RuntimesConfig> {
        let shell_accept_weaker = self.shell_accept_weaker.or(file.shell_accept_weaker).unwrap_or(false);
        let interpreters_dir = self
            .interpreters_dir
            .clone()
            .or(file.interpreters_dir.clone())
            .unwrap_or_else(|| data_dir.join("interpreters"));
        let runner_dir = self.runner_dir.clone().or(file.runner_dir.clone()).unwrap_or_else(|| data_dir.join("runner"));
        let mut runtimes = sundial_runner::RuntimesConfig::new(runner_dir.clone());
        runtimes.interpreters_dir = Some(interpreters_dir.clone());
        (runtimes.allow_shell, runtimes.shell_accept_weaker, runtimes.host_interpreters) =
            (allow_shell, shell_accept_weaker, host_interpreters);
        self.script_limits.apply(&file.script_limits, &mut runtimes)?;
        Ok(runtimes)
    }
}

fn load_file(path: &Path) -> anyhow::Result<Settings> {
    let text = std::fs::read_to_string(path).with_context(|| format!("reading config file {}", path.display()))?;
    toml::from_str(&text).with_context(|| format!("config file {}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_beat_the_file_and_defaults_fill_the_rest() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("sundial.toml");
        std::fs::write(&file, "listen = \"127.0.0.1:9999\"\ndata_dir = \"/var/lib/sundial\"\nlog_format = \"json\"\n")
            .unwrap();
        let s = Settings { config: Some(file.clone()), listen: Some("0.0.0.0:1".into()), ..Default::default() };
        let r = s.resolve().unwrap();
        assert_eq!(r.listen, "0.0.0.0:1");
        assert_eq!(r.database_url, "sqlite:///var/lib/sundial/sundial.db");
        assert!(r.log_json);
        assert_eq!(r.max_body_bytes, 1024 * 1024);
        assert_eq!(r.secret_key, KeySource::Beside("/var/lib/sundial/secret.key".into()));
    }

    #[test]
    fn the_secret_key_defaults_beside_a_sqlite_database_and_is_required_on_mysql() {
        let sqlite = |url: &str| Settings { database_url: Some(url.into()), ..Default::default() }.resolve().unwrap();
        assert_eq!(
            Settings::default().resolve().unwrap().secret_key,
            KeySource::Beside("sundial-data/secret.key".into())
        );
        assert_eq!(sqlite("sqlite:///srv/db/s.db?mode=rwc").secret_key, KeySource::Beside("/srv/db/secret.key".into()));
        assert_eq!(sqlite("sqlite::memory:").secret_key, KeySource::Ephemeral);
        assert_eq!(sqlite("mysql://u:p@h/db").secret_key, KeySource::Missing);
        let given = Settings { secret_key: Some("k".into()), ..Default::default() }.resolve().unwrap();
        assert_eq!(given.secret_key, KeySource::Value("k".into()));
        let both = Settings { secret_key: Some("k".into()), secret_key_file: Some("f".into()), ..Default::default() };
        assert!(both.resolve().unwrap_err().to_string().contains("secret_key and secret_key_file"));
    }

    #[test]
    fn unknown_file_keys_and_bad_values_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("sundial.toml");
        std::fs::write(&file, "lissen = \"x\"\n").unwrap();
        let err = Settings { config: Some(file.clone()), ..Default::default() }.resolve().unwrap_err();
        assert!(format!("{err:#}").contains("lissen"), "{err:#}");
        let err = Settings { log_format: Some("xml".into()), ..Default::default() }.resolve().unwrap_err();
        assert!(err.to_string().contains("log_format"), "{err}");
        let err = Settings { max_dispatch_lead_ms: Some(-1), ..Default::default() }.resolve().unwrap_err();
        assert!(err.to_string().contains("max_dispatch_lead_ms"), "{err}");
        let r = Settings { max_dispatch_lead_ms: Some(0), ..Default::default() }.resolve().unwrap();
        assert_eq!(r.max_dispatch_lead_ms, 0, "0 turns the lead off");
        assert_eq!(Settings::default().resolve().unwrap().max_dispatch_lead_ms, 2_000);
        assert_eq!(Settings::default().resolve().unwrap().timer_capacity, 50_000);
        let err = Settings { max_inflight: Some(100), max_inflight_per_app: Some(101), ..Default::default() }
            .resolve()
            .unwrap_err();
        assert!(err.to_string().contains("max_inflight_per_app"), "{err}");
        let err = Settings { max_inflight_per_tenant: Some(0), ..Default::default() }.resolve().unwrap_err();
        assert!(err.to_string().contains("max_inflight_per_tenant"), "{err}");
        let err = Settings { quota_max_jobs: Some(-1), ..Default::default() }.resolve().unwrap_err();
        assert!(err.to_string().contains("quota_max_jobs"), "{err}");
        let r = Settings { quota_max_fires_per_second: Some(5), ..Default::default() }.resolve().unwrap();
        assert_eq!(r.quotas.max_fires_per_second, 5);
        assert_eq!(r.quotas.max_jobs, sundial_core::quota::Quotas::default().max_jobs);
        let err = Settings { http_header_timeout_ms: Some(0), ..Default::default() }.resolve().unwrap_err();
        assert!(err.to_string().contains("http_header_timeout_ms"), "{err}");
        let err = Settings { max_connections_per_peer: Some(0), ..Default::default() }.resolve().unwrap_err();
        assert!(err.to_string().contains("max_connections_per_peer"), "{err}");
        let http = Settings::default().resolve().unwrap().http;
        assert_eq!(
            (http.header_timeout.as_millis(), http.body_timeout.as_millis(), http.idle_timeout.as_millis()),
            (10_000, 30_000, 60_000)
        );
        assert_eq!((http.max_connections, http.max_connections_per_peer), (10_000, 256));
    }

    /// The engine's settings default to the engine's own defaults, from one place
    /// (`EngineConfig::new`): a change there is a change here.
    #[test]
    fn engine_settings_default_to_the_engines_defaults() {
        let r = Settings::default().resolve().unwrap();
        let e = sundial_engine::EngineConfig::new("");
        assert_eq!(r.horizon_ms, e.horizon_ms);
        assert_eq!(r.claim_window_ms, e.claim_window_ms);
        assert_eq!(r.timer_capacity, e.capacity);
        assert_eq!(r.max_inflight, e.max_inflight);
        assert_eq!(r.retention_days * 86_400_000, e.retention_ms);
        assert_eq!(r.affinity_grace_ms, e.affinity_grace_ms);
        assert_eq!(r.max_dispatch_lead_ms, e.max_dispatch_lead_ms);
        assert_eq!(r.max_answer_bytes, e.max_answer_bytes);
        assert_eq!(r.max_output_bytes, e.max_output_bytes);
        assert_eq!(r.outbound, e.outbound);
    }

    #[test]
    fn script_limits_come_from_flags_or_the_file_and_are_checked() {
        let r = Settings::default().resolve().unwrap();
        let d = sundial_runner::RuntimesConfig::new(r.runtimes.cache_dir.clone());
        assert_eq!(r.runtimes.disk_bytes, 64 << 20);
        assert_eq!((r.runtimes.wasm_memory_bytes, r.runtimes.disk_bytes), (d.wasm_memory_bytes, d.disk_bytes));
        assert_eq!((r.runtimes.wasm_fuel, r.runtimes.open_files, r.runtimes.output_cap_bytes), (None, 256, 1 << 20));
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("sundial.toml");
        std::fs::write(&file, "script_disk_bytes = 1048576\nscript_fuel = 5000000\nscript_memory_bytes = 33554432\n")
            .unwrap();
        let r = Settings {
            config: Some(file),
            script_limits: ScriptLimitSettings { script_disk_bytes: Some(2 << 20), ..Default::default() },
            ..Default::default()
        }
        .resolve()
        .unwrap();
        assert_eq!(r.runtimes.disk_bytes, 2 << 20, "the flag beats the file");
        assert_eq!((r.runtimes.wasm_fuel, r.runtimes.wasm_memory_bytes), (Some(5_000_000), 32 << 20));
        let limits = |l: ScriptLimitSettings| Settings { script_limits: l, ..Default::default() };
        let err =
            limits(ScriptLimitSettings { script_open_files: Some(1), ..Default::default() }).resolve().unwrap_err();
        assert!(err.to_string().contains("script_open_files"), "{err}");
        let err =
            limits(ScriptLimitSettings { script_disk_bytes: Some(10), ..Default::default() }).resolve().unwrap_err();
        assert!(err.to_string().contains("script_disk_bytes"), "{err}");
    }
}
