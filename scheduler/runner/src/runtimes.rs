//! The sandboxes this runner has, detected once at start-up, and what it reports about
//! each (`GET /api/v1/runtimes` shows the built-in runner's).

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use sundial_shell_sandbox::{SandboxConfig, ShellSandbox};
use sundial_wasm_sandbox::{CompiledModule, RuntimeConfig, WasmRuntime};

/// Longest a source check at upload may take (CPython starts in ~40 ms in a release build).
const CHECK_DEADLINE: std::time::Duration = std::time::Duration::from_secs(20);

/// Compiled modules kept in memory, by SHA-256 (the on-disk cache holds every one).
const MODULES_IN_MEMORY: usize = 64;

/// Which sandboxes to set up, and their limits.
#[derive(Debug, Clone)]
pub struct RuntimesConfig {
    /// Compiled modules are cached here (by engine hash and module SHA-256).
    pub cache_dir: PathBuf,
    /// Where the interpreters are (`python.wasm`, `javascript.wasm`): `scripts/fetch-interpreters`
    /// puts them in `target/interpreters`.
    pub interpreters_dir: Option<PathBuf>,
    /// Linear-memory cap of a wasm run (Python and JavaScript included).
    pub wasm_memory_bytes: usize,
    /// Fuel (CPU budget) of a wasm run; `None`: only the wall-clock deadline.
    pub wasm_fuel: Option<u64>,
    /// stdout and stderr are each kept up to this many bytes.
    pub output_cap_bytes: usize,
    /// Disk quota of a run, every runtime: a wasm run's `/work` (checked in the WASI file
    /// layer), a shell run's `/work` and `/tmp` (one tmpfs of this size).
    pub disk_bytes: u64,
    /// Files a run may hold open at once (wasm: checked at `path_open`; shell: `RLIMIT_NOFILE`).
    pub open_files: u64,
    /// Memory of a shell run as a whole (its cgroup's limit).
    pub shell_memory_bytes: u64,
    /// A shell run stopped by its timeout or a cancel gets SIGTERM this long before SIGKILL
    /// (within its timeout). Zero: SIGKILL at once.
    pub kill_grace: std::time::Duration,
    /// Run `bash`/`sh` scripts (in bubblewrap). Off unless the operator turns it on.
    pub allow_shell: bool,
    /// Accept a weaker shell sandbox (no cgroup limits) rather than no shell runtime.
    pub shell_accept_weaker: bool,
    /// Run `python` and `javascript` scripts with the host's `/usr/bin/python3` and
    /// `/usr/bin/node` in the shell sandbox (the host's packages, OS-level isolation) instead
    /// of the interpreters in wasm. Needs `allow_shell`.
    pub host_interpreters: bool,
}

impl RuntimesConfig {
    pub fn new(cache_dir: PathBuf) -> Self {
        Self {
            cache_dir,
            interpreters_dir: None,
            wasm_memory_bytes: 128 * 1024 * 1024,
            wasm_fuel: None,
            output_cap_bytes: 1024 * 1024,
            disk_bytes: 64 * 1024 * 1024,
            open_files: 256,
            shell_memory_bytes: 256 * 1024 * 1024,
            kill_grace: std::time::Duration::ZERO,
            allow_shell: false,
            shell_accept_weaker: false,
            host_interpreters: false,
        }
    }
}

/// One runtime as this runner offers it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Offer {
    /// `wasm`, `python`, `javascript`, `bash` or `sh`.
    pub runtime: &'static str,
    pub available: bool,
    /// `wasm`, `strong`, `namespaces_only`, `host_root` or `none`.
    pub isolation: String,
    /// What was detected, or why it is not available.
    pub detail: String,
}

/// The sandboxes, shared by every run.
pub struct Runtimes {
    pub(crate) wasm: Option<Arc<WasmRuntime>>,
    pub(crate) interpreters: Option<sundial_wasm_sandbox::Interpreters>,
    pub(crate) shell: Option<ShellSandbox>,
    pub(crate) shell_reason: Option<String>,
    /// `python` and `javascript` run on the host's interpreters in the shell sandbox.
    pub(crate) host_interpreters: bool,
    pub(crate) fuel: Option<u64>,
    pub(crate) kill_grace: std::time::Duration,
    modules: Mutex<HashMap<String, Arc<CompiledModule>>>,
    offers: Vec<Offer>,
}

impl std::fmt::Debug for Runtimes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Runtimes").field("offers", &self.offers).finish()
    }
}

impl Runtimes {
    /// Set up every sandbox the configuration asks for; what fails is reported, not fatal.
    pub fn detect(cfg: &RuntimesConfig) -> Runtimes {
        let mut offers = Vec::new();
        let (wasm, wasm_detail) = start_wasm(cfg);
        let limits = wasm_limits(cfg);
        offers.push(Offer {
            runtime: "wasm",
            available: wasm.is_some(),
            isolation: if wasm.is_some() { "wasm" } else { "none" }.into(),
            detail: if wasm.is_some() { limits.clone() } else { wasm_detail.clone() },
        });
        // With host interpreters on, `python`/`javascript` never run in wasm: the wasm
        // interpreters are not compiled (CPython takes seconds) and their offers are replaced below.
        let interpreters = match (&wasm, &cfg.interpreters_dir) {
            (Some(w), Some(dir)) if !cfg.host_interpreters => Some(sundial_wasm_sandbox::Interpreters::load(dir, w)),
            _ => None,
        };
        offers.extend(wasm_interpreter_offers(wasm.as_ref(), &wasm_detail, interpreters.as_ref(), &limits));
        let (shell, shell_reason) = start_shell(cfg);
        let host_interpreters = cfg.host_interpreters;
        if host_interpreters {
            offer_host_interpreters(&mut offers, shell.as_ref(), shell_reason.as_deref());
        }
        offers.extend(shell_offers(shell.as_ref(), shell_reason.as_deref()));
        Runtimes {
            wasm,
            interpreters,
            shell,
            shell_reason,
            host_interpreters,
            fuel: cfg.wasm_fuel,
            kill_grace: cfg.kill_grace,
            modules: Mutex::new(HashMap::new()),
            offers,
        }
    }

    /// Every runtime, available or not, with its isolation.
    pub fn offers(&self) -> &[Offer] {
        &self.offers
    }

    /// The runtimes this runner runs (what it registers).
    pub fn available(&self) -> Vec<String> {
        self.offers.iter().filter(|o| o.available).map(|o| o.runtime.to_string()).collect()
    }

    /// Does `source` compile as a `runtime` (`python`, `javascript`) script? `Ok(None)`: it
    /// does, or it cannot be told here (no wasm interpreter for it: host interpreters, a
    /// missing file; another runtime); `Ok(Some(problem))`: it does not; `Err`: the check
    /// failed (deadline, trap).
    pub fn check_source(
        &self,
        runtime: &str,
        source: &str,
    ) -> Result<Option<sundial_wasm_sandbox::SourceProblem>, String> {
        let lang = match runtime {
            "python" => sundial_wasm_sandbox::Lang::Python,
            "javascript" => sundial_wasm_sandbox::Lang::JavaScript,
            _ => return Ok(None),
        };
        let (Some(wasm), Some(interpreters)) = (&self.wasm, &self.interpreters) else { return Ok(None) };
        let Ok(interp) = interpreters.get(lang) else { return Ok(None) };
        wasm.check_source(interp, source, CHECK_DEADLINE)
    }

    /// A module compiled (or loaded from the caches) by its SHA-256.
    pub(crate) fn compiled(
        &self,
        wasm: &WasmRuntime,
        sha256: &str,
        bytes: &[u8],
    ) -> Result<Arc<CompiledModule>, sundial_wasm_sandbox::RuntimeError> {
        if let Some(m) = self.modules.lock().expect("modules").get(sha256) {
            return Ok(m.clone());
        }
        let m = Arc::new(wasm.compile(bytes)?);
        let mut modules = self.modules.lock().expect("modules");
        if modules.len() >= MODULES_IN_MEMORY {
            modules.clear(); // the on-disk cache still has them: a reload is a file read
        }
        modules.insert(sha256.to_string(), m.clone());
        Ok(m)
    }
}

/// wasmtime with the configured limits, or why it did not start.
fn start_wasm(cfg: &RuntimesConfig) -> (Option<Arc<WasmRuntime>>, String) {
    let wasm = WasmRuntime::new(RuntimeConfig {
        cache_dir: Some(cfg.cache_dir.join("wasm")),
        default_memory_bytes: cfg.wasm_memory_bytes,
        output_cap_bytes: cfg.output_cap_bytes,
        default_disk_bytes: cfg.disk_bytes,
        default_open_files: cfg.open_files,
        ..RuntimeConfig::default()
    });
    match wasm {
        Ok(w) => (Some(Arc::new(w)), String::new()),
        Err(e) => (None, format!("wasmtime did not start: {e}")),
    }
}

/// The wasm sandbox's limits, as the offers of the runtimes in it describe them.
fn wasm_limits(cfg: &RuntimesConfig) -> String {
    format!(
        "wasmtime 48, WASI preview 1: no network, host files or environment; memory {} MiB, disk quota {} MiB, {} open files, deadline = the job's timeout{}",
        cfg.wasm_memory_bytes / (1024 * 1024),
        cfg.disk_bytes / (1024 * 1024),
        cfg.open_files,
        cfg.wasm_fuel.map(|f| format!(", fuel {f}")).unwrap_or_default()
    )
}

/// `python` and `javascript` on the wasm interpreters: available when wasmtime started and
/// the interpreter loaded.
fn wasm_interpreter_offers(
    wasm: Option<&Arc<WasmRuntime>>,
    wasm_detail: &str,
    interpreters: Option<&sundial_wasm_sandbox::Interpreters>,
    limits: &str,
) -> Vec<Offer> {
    let mut offers = Vec::new();
    for (name, lang) in
        [("python", sundial_wasm_sandbox::Lang::Python), ("javascript", sundial_wasm_sandbox::Lang::JavaScript)]
    {
        let (available, detail) = match (wasm, interpreters) {
            (None, _) => (false, wasm_detail.to_string()),
            (Some(_), None) => (false, "no interpreters directory configured (`interpreters_dir`)".to_string()),
            (Some(_), Some(i)) => match i.get(lang) {
                Ok(it) => (
                    true,
                    format!(
                        "{limits}; interpreter {} ({} bytes, sha256 {})",
                        i.dir().join(lang.file_name()).display(),
                        it.info().size,
                        it.info().sha256
                    ),
                ),
                Err(why) => (false, why.to_string()),
            },
        };
        offers.push(Offer {
            runtime: name,
            available,
            isolation: if available { "wasm" } else { "none" }.into(),
            detail,
        });
    }
    offers
}

/// The shell sandbox, if the operator turned it on and it starts here; else why not.
fn start_shell(cfg: &RuntimesConfig) -> (Option<ShellSandbox>, Option<String>) {
    if !cfg.allow_shell {
        return (
            None,
            Some("the shell runtime is off (start with --allow-shell to run bash and sh scripts)".to_string()),
        );
    }
    let defaults = SandboxConfig::default();
    let sc = SandboxConfig {
        output_cap_bytes: cfg.output_cap_bytes,
        disk_bytes: cfg.disk_bytes,
        memory_limit_bytes: cfg.shell_memory_bytes,
        rlimits: sundial_shell_sandbox::Rlimits { open_files: cfg.open_files, ..defaults.rlimits.clone() },
        temp_root: Some(cfg.cache_dir.join("shell-runs")),
        accept_weaker: cfg.shell_accept_weaker,
        ..SandboxConfig::default()
    };
    let _ = std::fs::create_dir_all(cfg.cache_dir.join("shell-runs"));
    match ShellSandbox::new(sc) {
        Ok(s) => (Some(s), None),
        Err(e) => (None, Some(format!("the shell sandbox is not available here: {e}"))),
    }
}

/// With host interpreters on, `python` and `javascript` run on the host's interpreters in
/// the shell sandbox: their offers are replaced by what that can do.
fn offer_host_interpreters(offers: &mut [Offer], shell: Option<&ShellSandbox>, shell_reason: Option<&str>) {
    for (name, sh) in
        [("python", sundial_shell_sandbox::Shell::Python3), ("javascript", sundial_shell_sandbox::Shell::Node)]
    {
        let offer = offers.iter_mut().find(|o| o.runtime == name).expect("listed above");
        *offer = match shell {
            Some(s) if sh.on_host() => {
                let iso = s.isolation();
                Offer {
                    runtime: name,
                    available: true,
                    isolation: iso.level.as_str().into(),
                    detail: format!("the host's {} in the shell sandbox: {iso}", sh.interpreter()),
                }
            }
            Some(_) => Offer {
                runtime: name,
                available: false,
                isolation: "none".into(),
                detail: format!("host interpreters are on, but this host has no {}", sh.interpreter()),
            },
            None => Offer {
                runtime: name,
                available: false,
                isolation: "none".into(),
                detail: format!("host interpreters need the shell sandbox: {}", shell_reason.unwrap_or_default()),
            },
        };
    }
}

/// `bash` and `sh`: available with the shell sandbox, at its isolation.
fn shell_offers(shell: Option<&ShellSandbox>, shell_reason: Option<&str>) -> Vec<Offer> {
    ["bash", "sh"]
        .into_iter()
        .map(|name| match shell {
            Some(s) => {
                let iso = s.isolation();
                Offer { runtime: name, available: true, isolation: iso.level.as_str().into(), detail: iso.to_string() }
            }
            None => Offer {
                runtime: name,
                available: false,
                isolation: "none".into(),
                detail: shell_reason.unwrap_or_default().to_string(),
            },
        })
        .collect()
}
