//! Sandboxed execution of untrusted WASI preview-1 modules.
//!
//! [`WasmRuntime`] owns one [`wasmtime::Engine`] (with fuel metering and epoch
//! interruption) and runs modules synchronously, each run in a fresh
//! [`Store`] with its own limits:
//!
//! * wall-clock deadline (epoch interruption, 10 ms resolution; a guest
//!   sleeping in `poll_oneoff` is woken for it too),
//! * fuel (instruction budget),
//! * linear-memory cap (growth past it fails *inside* the guest:
//!   `memory.grow` returns -1),
//! * captured, capped stdout/stderr, optionally streamed to a callback as
//!   the guest writes it ([`RunInput::on_output`]),
//! * cancellation from another thread ([`RunInput::cancel`]),
//! * only the environment and arguments given by the caller,
//! * no network and no host filesystem, except one optional directory
//!   preopened as `/work`, whose contents are held to a disk quota and whose
//!   open files to a cap (enforced in the WASI file layer, see `fs`).
//!
//! Only imports from the `wasi_snapshot_preview1` module are allowed, and the
//! module must export a `_start` function.
//!
//! Source code in Python or JavaScript runs inside an interpreter that is
//! itself a WASI module (CPython: a command; QuickJS-NG: a reactor, driven
//! through its own exports), under the same limits: see [`Interpreters`] and
//! [`WasmRuntime::run_interpreted`].
//!
//! The API is blocking: async callers should run it on a blocking thread
//! (e.g. `tokio::task::spawn_blocking`).

#![warn(missing_docs)]

mod fs;
mod interp;
mod output;
mod sleep;
mod trampoline;

pub use interp::{Interpreter, Interpreters, Lang, SourceProblem, Unavailable};
pub use sundial_core::script_output::{OutputCallback, OutputStream};

use std::hash::{Hash, Hasher};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use sha2::{Digest, Sha256};
use sundial_core::clock::{SharedClock, SystemClock};
use wasmtime::{Config, Engine, Linker, Module, Store, StoreLimits, StoreLimitsBuilder, Trap, UpdateDeadline};
use wasmtime_wasi::p1::WasiP1Ctx;
use wasmtime_wasi::p2::pipe::MemoryInputPipe;
use wasmtime_wasi::{FsPerms, I32Exit, WasiCtxBuilder};

use output::CapturePipe;

/// The only import module a guest may import from.
pub const WASI_MODULE: &str = "wasi_snapshot_preview1";

/// Interval between two epoch ticks: the resolution of run deadlines.
pub const EPOCH_TICK: Duration = Duration::from_millis(10);

/// Fuel given to a run that does not ask for a budget (effectively unlimited).
pub const UNLIMITED_FUEL: u64 = i64::MAX as u64;

const WASM_PAGE: u64 = 64 * 1024;

/// Why a module was refused or a runtime could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum RuntimeError {
    /// The bytes are neither a binary wasm module nor parsable `.wat` text.
    #[error("not a wasm module: {0}")]
    NotAModule(String),
    /// The module (binary, or binary produced from text) exceeds `max_module_bytes`.
    #[error("module too large: {size} bytes (limit {limit})")]
    TooLarge {
        /// Size of the module in bytes.
        size: usize,
        /// The configured limit.
        limit: usize,
    },
    /// The module is malformed or invalid, or failed to compile (wasmtime's message).
    #[error("invalid module: {0}")]
    Invalid(String),
    /// The module imports something outside `wasi_snapshot_preview1`.
    #[error("import not allowed: {0} (only {WASI_MODULE} imports are allowed)")]
    ImportNotAllowed(String),
    /// The module has no exported `_start` function taking and returning nothing.
    #[error("module has no exported `_start` function of type [] -> []")]
    NoStart,
    /// Engine creation failed.
    #[error("engine setup failed: {0}")]
    Engine(String),
    /// Reading or writing the artifact cache failed.
    #[error("artifact cache I/O error at {path}: {source}")]
    Cache {
        /// The file or directory concerned.
        path: PathBuf,
        /// The underlying I/O error.
        source: std::io::Error,
    },
}

/// Result alias for this crate.
pub type Result<T, E = RuntimeError> = std::result::Result<T, E>;

/// Configuration of a [`WasmRuntime`].
#[derive(Debug, Clone)]
pub struct RuntimeConfig {
    /// Directory for compiled artifacts (`<dir>/<engine hash>/<sha256>.cwasm`); `None` disables caching.
    pub cache_dir: Option<PathBuf>,
    /// Largest accepted module, in bytes (default 10 MiB).
    pub max_module_bytes: usize,
    /// Linear-memory cap of a run that does not give one (default 128 MiB).
    pub default_memory_bytes: usize,
    /// Bytes of stdout and of stderr kept per run (default 1 MiB each).
    pub output_cap_bytes: usize,
    /// Largest accepted interpreter module, in bytes (default 64 MiB; CPython is 26 MB).
    pub max_interpreter_bytes: usize,
    /// Disk quota of a run's `/work` that does not give one, in bytes (default 64 MiB).
    pub default_disk_bytes: u64,
    /// Files a run may hold open at once when it does not give a limit (default 256).
    pub default_open_files: u64,
    /// The guest's wall clock (WASI `CLOCK_REALTIME`, and the sleeps until a time of it), to
    /// the millisecond: `SystemClock` by default. (The deadline, the guest's monotonic clock
    /// and its sleeps for a duration run on the host's monotonic `Instant`.)
    pub wall_clock: SharedClock,
}

impl Default for RuntimeConfig {
    fn default() -> Self {
        Self {
            cache_dir: None,
            max_module_bytes: 10 << 20,
            default_memory_bytes: 128 << 20,
            output_cap_bytes: 1 << 20,
            max_interpreter_bytes: 64 << 20,
            default_disk_bytes: 64 << 20,
            default_open_files: 256,
            wall_clock: Arc::new(SystemClock),
        }
    }
}

/// What [`WasmRuntime::validate`] learned about an accepted module.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModuleInfo {
    /// Hex SHA-256 of the binary module (after `.wat` conversion).
    pub sha256: String,
    /// Size in bytes of the binary module.
    pub size: usize,
}

/// A validated, compiled module ready to [`run`](WasmRuntime::run).
#[derive(Clone)]
pub struct CompiledModule {
    module: Module,
    /// Hash and size of the module.
    pub info: ModuleInfo,
    /// True when the compiled code was loaded from the on-disk cache.
    pub from_cache: bool,
}

impl std::fmt::Debug for CompiledModule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CompiledModule").field("info", &self.info).field("from_cache", &self.from_cache).finish()
    }
}

/// Inputs and limits of one run.
#[derive(Clone)]
pub struct RunInput {
    /// Arguments after the program name (the guest sees `job` as `argv[0]`;
    /// for [`run_interpreted`](WasmRuntime::run_interpreted) they follow the script's path).
    pub args: Vec<String>,
    /// The guest's whole environment (the host's is never inherited).
    pub env: Vec<(String, String)>,
    /// Bytes readable on the guest's stdin.
    pub stdin: Vec<u8>,
    /// Wall-clock budget (10 ms resolution).
    pub deadline: Duration,
    /// Fuel budget; `None` means effectively unlimited.
    pub fuel: Option<u64>,
    /// Linear-memory cap; `None` uses [`RuntimeConfig::default_memory_bytes`].
    pub memory_bytes: Option<usize>,
    /// Disk quota of the work directory (everything under it, what is there at the start
    /// included); `None` uses [`RuntimeConfig::default_disk_bytes`]. A call that would
    /// take it past the quota stops the run with `Trap { DiskQuota }`.
    pub disk_bytes: Option<u64>,
    /// Files the guest may hold open at once; `None` uses
    /// [`RuntimeConfig::default_open_files`]. Opening one more stops the run with
    /// `Trap { OpenFiles }`.
    pub open_files: Option<u64>,
    /// Host directory preopened read-write as `/work`; `None` gives no filesystem
    /// (for [`run_interpreted`](WasmRuntime::run_interpreted): a fresh temporary directory).
    pub work_dir: Option<PathBuf>,
    /// Set it (from any thread) to stop the run: the guest is stopped within about
    /// two epoch ticks (10-20 ms) while it runs wasm code, with `Trap { Cancelled }`.
    /// Already set when the run starts: the guest is not started at all.
    pub cancel: Option<Arc<AtomicBool>>,
    /// Called with each chunk the guest writes to stdout/stderr, as it is written
    /// (only bytes within `output_cap_bytes` are passed on). The chunks are also
    /// kept in [`RunOutcome::stdout`]/[`RunOutcome::stderr`] as usual.
    pub on_output: Option<OutputCallback>,
    /// Bytes kept per stream for this run, lowering [`RuntimeConfig::output_cap_bytes`].
    pub output_cap_bytes: Option<usize>,
}

impl std::fmt::Debug for RunInput {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunInput")
            .field("args", &self.args)
            .field("env", &self.env)
            .field("stdin_len", &self.stdin.len())
            .field("deadline", &self.deadline)
            .field("fuel", &self.fuel)
            .field("memory_bytes", &self.memory_bytes)
            .field("disk_bytes", &self.disk_bytes)
            .field("open_files", &self.open_files)
            .field("output_cap_bytes", &self.output_cap_bytes)
            .field("work_dir", &self.work_dir)
            .field("cancel", &self.cancel.as_ref().map(|c| c.load(Ordering::Relaxed)))
            .field("on_output", &self.on_output.as_ref().map(|_| "Fn"))
            .finish()
    }
}

impl Default for RunInput {
    fn default() -> Self {
        Self {
            args: Vec::new(),
            env: Vec::new(),
            stdin: Vec::new(),
            deadline: Duration::from_secs(30),
            fuel: None,
            memory_bytes: None,
            disk_bytes: None,
            open_files: None,
            work_dir: None,
            cancel: None,
            on_output: None,
            output_cap_bytes: None,
        }
    }
}

/// Why a run stopped abnormally.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TrapKind {
    /// The fuel budget ran out.
    OutOfFuel,
    /// The wall-clock deadline passed.
    Deadline,
    /// The module needs more memory than its cap just to start.
    Memory,
    /// [`RunInput::cancel`] was set.
    Cancelled,
    /// A write (or a new file, directory or link) would have taken the work directory past
    /// the run's disk quota ([`RunInput::disk_bytes`]).
    DiskQuota,
    /// The guest tried to hold more files open than its limit ([`RunInput::open_files`]).
    OpenFiles,
    /// The guest's stack ran out (runaway recursion): wasm's own call stack, or the stack an
    /// interpreter keeps in linear memory growing below its start (CPython recursing in C,
    /// e.g. through `__repr__`, past what its recursion limits catch).
    StackOverflow,
    /// Any other trap or failure (wasm trap, instantiation or setup error).
    Other,
}

/// How a run ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RunResult {
    /// The guest exited (`proc_exit(n)`, or returned from `_start` = 0). 0 means success.
    Exited(i32),
    /// The guest was stopped.
    Trap {
        /// The category of the trap.
        kind: TrapKind,
        /// Human-readable detail (wasmtime's message).
        message: String,
    },
}

/// Everything a run produced.
#[derive(Debug, Clone)]
pub struct RunOutcome {
    /// The exit code if the guest exited, `None` if it trapped.
    pub exit_code: Option<i32>,
    /// How the run ended.
    pub result: RunResult,
    /// Captured stdout (at most `output_cap_bytes`).
    pub stdout: Vec<u8>,
    /// Captured stderr (at most `output_cap_bytes`).
    pub stderr: Vec<u8>,
    /// The guest wrote more to stdout than was kept.
    pub stdout_truncated: bool,
    /// The guest wrote more to stderr than was kept.
    pub stderr_truncated: bool,
    /// Fuel used, when it could be measured.
    pub fuel_consumed: Option<u64>,
    /// Wall-clock time of the run (instantiation included).
    pub elapsed: Duration,
}

struct Ticker {
    stop: Arc<AtomicBool>,
    handle: Option<JoinHandle<()>>,
}

impl Drop for Ticker {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(handle) = self.handle.take() {
            handle.thread().unpark();
            let _ = handle.join();
        }
    }
}

/// A sandbox for WASI preview-1 modules: one engine, one epoch ticker thread.
pub struct WasmRuntime {
    engine: Engine,
    config: RuntimeConfig,
    linker: Linker<RunState>,
    originals: Arc<trampoline::Originals>,
    engine_hash: String,
    _ticker: Ticker,
}

impl std::fmt::Debug for WasmRuntime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WasmRuntime").field("config", &self.config).field("engine_hash", &self.engine_hash).finish()
    }
}

struct RunState {
    wasi: WasiP1Ctx,
    limits: StoreLimits,
    /// Why the epoch callback (or an interrupted sleep) stopped the guest, if it did.
    stopped: Option<TrapKind>,
    /// The run's cancel flag.
    cancel: Option<Arc<AtomicBool>>,
    /// When the run's wall-clock budget ends (`None`: too far to represent).
    deadline: Option<Instant>,
    /// Zero of the guest's monotonic clock (see `sleep::RunClock`).
    clock_base: Instant,
    /// The guest's wall clock ([`RuntimeConfig::wall_clock`]).
    wall_clock: SharedClock,
    /// The trampoline to wasmtime-wasi's own functions, once instantiated (see `trampoline`).
    trampoline: Option<wasmtime::Instance>,
    /// wasmtime-wasi's own functions, for the trampoline.
    originals: Arc<trampoline::Originals>,
    /// The work directory's quota and open files, when the run has one.
    fs: Option<fs::FsState>,
}

/// How a run enters the guest once it is instantiated.
pub(crate) enum Entry<'a> {
    /// A WASI command: call `_start`.
    Start,
    /// A QuickJS-NG WASI reactor: call `_initialize`, then `qjs_init_argv(argc, argv)`.
    QjsReactor {
        /// The argv given to `qjs_init_argv` (not the WASI args).
        argv: &'a [String],
    },
}

impl WasmRuntime {
    /// Creates the engine (fuel + epoch interruption) and starts the epoch ticker.
    pub fn new(config: RuntimeConfig) -> Result<Self> {
        let mut cfg = Config::new();
        cfg.epoch_interruption(true).consume_fuel(true);
        let engine = Engine::new(&cfg).map_err(|e| RuntimeError::Engine(format!("{e:#}")))?;
        let mut linker = Linker::new(&engine);
        wasmtime_wasi::p1::add_to_linker_sync(&mut linker, |s: &mut RunState| &mut s.wasi)
            .map_err(|e| RuntimeError::Engine(format!("{e:#}")))?;
        let originals =
            trampoline::Originals::new(&engine, &linker).map_err(|e| RuntimeError::Engine(format!("{e:#}")))?;
        sleep::shadow_poll_oneoff(&mut linker).map_err(|e| RuntimeError::Engine(format!("{e:#}")))?;
        fs::shadow_fs_functions(&mut linker).map_err(|e| RuntimeError::Engine(format!("{e:#}")))?;
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        engine.precompile_compatibility_hash().hash(&mut hasher);
        let engine_hash = format!("{:016x}", hasher.finish());

        let stop = Arc::new(AtomicBool::new(false));
        let ticker_engine = engine.weak();
        let ticker_stop = stop.clone();
        let handle = std::thread::Builder::new()
            .name("wasm-epoch".into())
            .spawn(move || {
                while !ticker_stop.load(Ordering::Relaxed) {
                    std::thread::park_timeout(EPOCH_TICK);
                    match ticker_engine.upgrade() {
                        Some(engine) => engine.increment_epoch(),
                        None => break,
                    }
                }
            })
            .map_err(|e| RuntimeError::Engine(format!("cannot start epoch ticker: {e}")))?;
        Ok(Self { engine, config, linker, originals, engine_hash, _ticker: Ticker { stop, handle: Some(handle) } })
    }

    /// The runtime's configuration.
    pub fn config(&self) -> &RuntimeConfig {
        &self.config
    }

    /// Hex hash of the engine's compilation settings: the cache subdirectory name.
    pub fn engine_hash(&self) -> &str {
        &self.engine_hash
    }

    /// Checks a module (binary or `.wat` text) without compiling it.
    pub fn validate(&self, bytes: &[u8]) -> Result<ModuleInfo> {
        self.validate_binary(bytes).map(|(info, _)| info)
    }

    /// Returns the info and the binary form of the module.
    fn validate_binary(&self, bytes: &[u8]) -> Result<(ModuleInfo, Vec<u8>)> {
        let limit = self.config.max_module_bytes;
        if bytes.len() > limit {
            return Err(RuntimeError::TooLarge { size: bytes.len(), limit });
        }
        let binary = if bytes.starts_with(b"\0asm") {
            bytes.to_vec()
        } else {
            let text = std::str::from_utf8(bytes)
                .map_err(|_| RuntimeError::NotAModule("bad magic number and not UTF-8 text".into()))?;
            let binary = wat::parse_str(text).map_err(|e| RuntimeError::NotAModule(format!("not wasm text: {e}")))?;
            if !binary.starts_with(b"\0asm") {
                return Err(RuntimeError::NotAModule("text does not describe a module".into()));
            }
            binary
        };
        if binary.len() > limit {
            return Err(RuntimeError::TooLarge { size: binary.len(), limit });
        }
        Module::validate(&self.engine, &binary).map_err(|e| RuntimeError::Invalid(format!("{e:#}")))?;
        check_imports_exports(&binary)?;
        let info = ModuleInfo { sha256: hex::encode(Sha256::digest(&binary)), size: binary.len() };
        Ok((info, binary))
    }

    /// Validates then compiles a module, through the on-disk cache when one is configured.
    pub fn compile(&self, bytes: &[u8]) -> Result<CompiledModule> {
        let (info, binary) = self.validate_binary(bytes)?;
        let (module, from_cache) = self.compile_cached(&info.sha256, &binary)?;
        Ok(CompiledModule { module, info, from_cache })
    }

    /// Compiles a binary whose sha256 is `sha256`, or loads it from the cache.
    /// Returns the module and whether it came from the cache.
    pub(crate) fn compile_cached(&self, sha256: &str, binary: &[u8]) -> Result<(Module, bool)> {
        let Some(cache_dir) = &self.config.cache_dir else {
            return Ok((self.compile_binary(binary)?, false));
        };
        let dir = cache_dir.join(&self.engine_hash);
        let path = dir.join(format!("{sha256}.cwasm"));
        if let Some(module) = self.load_artifact(&path) {
            return Ok((module, true));
        }
        // One compiler per artifact across threads and processes (e.g. test
        // processes all loading CPython): take the artifact's lock file, then
        // look again, as whoever held it may just have written the artifact.
        let _lock = CompileLock::acquire(&dir, sha256)?;
        if let Some(module) = self.load_artifact(&path) {
            return Ok((module, true));
        }
        let module = self.compile_binary(binary)?;
        let artifact = module.serialize().map_err(|e| RuntimeError::Invalid(format!("serialize: {e:#}")))?;
        write_atomically(&dir, &path, &artifact)?;
        Ok((module, false))
    }

    fn load_artifact(&self, path: &Path) -> Option<Module> {
        if !path.is_file() {
            return None;
        }
        // SAFETY: the file lives under the directory keyed by this engine's
        // compatibility hash and under the module's own sha256, and is only
        // ever written (atomically) by `compile_cached` from wasmtime's own
        // serialization of a module compiled from that very binary. wasmtime
        // additionally checks the header and engine settings of the artifact;
        // a failure falls back to compiling.
        unsafe { Module::deserialize_file(&self.engine, path) }.ok()
    }

    fn compile_binary(&self, binary: &[u8]) -> Result<Module> {
        Module::from_binary(&self.engine, binary).map_err(|e| RuntimeError::Invalid(format!("{e:#}")))
    }

    /// Runs the module's `_start` in a fresh store with the given inputs and limits.
    ///
    /// Never panics on guest behaviour: every failure is reported in the outcome.
    pub fn run(&self, module: &CompiledModule, input: RunInput) -> RunOutcome {
        let mut argv = Vec::with_capacity(input.args.len() + 1);
        argv.push("job".to_string());
        argv.extend(input.args.iter().cloned());
        self.execute(&module.module, &argv, &input, Entry::Start, Instant::now())
    }

    /// Runs `module` with the given WASI argv, entering it as `entry` says.
    pub(crate) fn execute(
        &self,
        module: &Module,
        argv: &[String],
        input: &RunInput,
        entry: Entry<'_>,
        started: Instant,
    ) -> RunOutcome {
        let cap = input.output_cap_bytes.map_or(self.config.output_cap_bytes, |c| c.min(self.config.output_cap_bytes));
        let stdout = CapturePipe::new(cap, OutputStream::Stdout, input.on_output.clone());
        let stderr = CapturePipe::new(cap, OutputStream::Stderr, input.on_output.clone());
        let initial_fuel = input.fuel.unwrap_or(UNLIMITED_FUEL).min(UNLIMITED_FUEL);
        let mut fuel_consumed = None;

        let result = match self.build_store(module, argv, input, &stdout, &stderr, initial_fuel, started) {
            Err(result) => result,
            Ok(mut store) => {
                let result = self.instantiate_and_enter(&mut store, module, &entry);
                fuel_consumed = store.get_fuel().ok().map(|left| initial_fuel.saturating_sub(left));
                match (result, store.data().stopped) {
                    (RunResult::Trap { message, .. }, Some(kind)) => RunResult::Trap { kind, message },
                    (result, _) => result,
                }
            }
        };

        let (stdout, stdout_truncated) = stdout.take();
        let (stderr, stderr_truncated) = stderr.take();
        let exit_code = match result {
            RunResult::Exited(code) => Some(code),
            RunResult::Trap { .. } => None,
        };
        RunOutcome {
            exit_code,
            result,
            stdout,
            stderr,
            stdout_truncated,
            stderr_truncated,
            fuel_consumed,
            elapsed: started.elapsed(),
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn build_store(
        &self,
        module: &Module,
        argv: &[String],
        input: &RunInput,
        stdout: &CapturePipe,
        stderr: &CapturePipe,
        fuel: u64,
        started: Instant,
    ) -> std::result::Result<Store<RunState>, RunResult> {
        if is_cancelled(input.cancel.as_ref()) {
            return Err(trap(TrapKind::Cancelled, "cancelled before the run started".into()));
        }
        let memory_limit =
            input.memory_bytes.map_or(self.config.default_memory_bytes, |m| m.min(self.config.default_memory_bytes));
        if let Some(initial_pages) = module.resources_required().max_initial_memory_size {
            let needed = initial_pages.saturating_mul(WASM_PAGE);
            if needed > memory_limit as u64 {
                return Err(trap(
                    TrapKind::Memory,
                    format!("initial memory of {needed} bytes exceeds the limit of {memory_limit} bytes"),
                ));
            }
        }

        let clock_base = Instant::now();
        let mut wasi = WasiCtxBuilder::new();
        wasi.monotonic_clock(sleep::RunClock(clock_base))
            .wall_clock(sleep::RunWallClock(self.config.wall_clock.clone()))
            .args(argv)
            .envs(&input.env)
            .stdin(MemoryInputPipe::new(input.stdin.clone()))
            .stdout(stdout.clone())
            .stderr(stderr.clone());
        if let Some(dir) = &input.work_dir
            && let Err(e) = wasi.preopened_dir(dir, "/work", FsPerms::ReadWrite)
        {
            return Err(trap(TrapKind::Other, format!("cannot open work dir {}: {e:#}", dir.display())));
        }

        let limits = StoreLimitsBuilder::new()
            .memory_size(memory_limit)
            // The guest, and the `poll_oneoff` trampoline (see `sleep`).
            .instances(2)
            .tables(4)
            .table_elements(100_000)
            .memories(1)
            .trap_on_grow_failure(false)
            .build();
        let state = RunState {
            wasi: wasi.build_p1(),
            limits,
            stopped: None,
            cancel: input.cancel.clone(),
            deadline: started.checked_add(input.deadline),
            clock_base,
            wall_clock: self.config.wall_clock.clone(),
            trampoline: None,
            originals: self.originals.clone(),
            fs: input.work_dir.as_deref().map(|dir| {
                fs::FsState::new(
                    dir,
                    input.disk_bytes.unwrap_or(self.config.default_disk_bytes),
                    input.open_files.unwrap_or(self.config.default_open_files),
                )
            }),
        };
        let mut store = Store::new(&self.engine, state);
        store.limiter(|s| &mut s.limits);
        store.set_fuel(fuel).map_err(|e| trap(TrapKind::Other, format!("{e:#}")))?;
        // Every tick (10 ms) the callback checks the cancel flag and the deadline.
        store.set_epoch_deadline(1);
        store.epoch_deadline_callback(|mut ctx| match sleep::stop_reason(ctx.data()) {
            Some(kind) => {
                ctx.data_mut().stopped = Some(kind);
                Ok(UpdateDeadline::Interrupt)
            }
            None => Ok(UpdateDeadline::Continue(1)),
        });
        Ok(store)
    }

    fn instantiate_and_enter(&self, store: &mut Store<RunState>, module: &Module, entry: &Entry<'_>) -> RunResult {
        let mut run = || -> wasmtime::Result<RunResult> {
            let instance = self.linker.instantiate(&mut *store, module)?;
            match entry {
                Entry::Start => {
                    let start = instance.get_typed_func::<(), ()>(&mut *store, "_start")?;
                    start.call(&mut *store, ())?;
                    Ok(RunResult::Exited(0))
                }
                Entry::QjsReactor { argv } => interp::enter_qjs_reactor(&mut *store, &instance, argv),
            }
        };
        match run() {
            Ok(result) => result,
            Err(e) => classify(e),
        }
    }
}

fn is_cancelled(cancel: Option<&Arc<AtomicBool>>) -> bool {
    cancel.is_some_and(|c| c.load(Ordering::Relaxed))
}

fn trap(kind: TrapKind, message: String) -> RunResult {
    RunResult::Trap { kind, message }
}

fn classify(e: wasmtime::Error) -> RunResult {
    if let Some(exit) = e.downcast_ref::<I32Exit>() {
        return RunResult::Exited(exit.0);
    }
    if let Some(limit) = e.downcast_ref::<fs::LimitExceeded>() {
        return trap(limit.kind, limit.message.clone());
    }
    let message = format!("{e:#}");
    let kind = match e.downcast_ref::<Trap>() {
        Some(Trap::OutOfFuel) => TrapKind::OutOfFuel,
        Some(Trap::Interrupt) => TrapKind::Deadline,
        Some(Trap::StackOverflow) => TrapKind::StackOverflow,
        Some(Trap::MemoryOutOfBounds) if below_the_stack(&message) => TrapKind::StackOverflow,
        _ => TrapKind::Other,
    };
    trap(kind, message)
}

/// Is the faulting address of a memory trap just below zero (wrapped past 4 GiB)? That is a
/// stack kept in linear memory that grew past its bottom: a C stack overflow in the guest.
fn below_the_stack(message: &str) -> bool {
    const MARK: &str = "memory fault at wasm address 0x";
    let Some(at) = message.find(MARK) else { return false };
    let hex: String = message[at + MARK.len()..].chars().take_while(char::is_ascii_hexdigit).collect();
    u64::from_str_radix(&hex, 16).is_ok_and(|address| address >= 0xFFFF_0000)
}

/// Refuses non-WASI imports and a missing `_start: [] -> []` function export.
fn check_imports_exports(binary: &[u8]) -> Result<()> {
    use wasmparser::{CompositeInnerType, ExternalKind, Payload, TypeRef};
    let invalid = |e: wasmparser::BinaryReaderError| RuntimeError::Invalid(e.to_string());
    // Per type index: whether it is the function type `[] -> []`.
    let mut empty_func_type = Vec::new();
    // Per function index: its type index (imports first, then defined functions).
    let mut func_types = Vec::new();
    let mut start = None;
    for payload in wasmparser::Parser::new(0).parse_all(binary) {
        match payload.map_err(invalid)? {
            Payload::TypeSection(reader) => {
                for group in reader {
                    for sub in group.map_err(invalid)?.into_types() {
                        empty_func_type.push(matches!(&sub.composite_type.inner,
                            CompositeInnerType::Func(f) if f.params().is_empty() && f.results().is_empty()));
                    }
                }
            }
            Payload::ImportSection(reader) => {
                for import in reader.into_imports() {
                    let import = import.map_err(invalid)?;
                    match import.ty {
                        TypeRef::Func(ty) if import.module == WASI_MODULE => func_types.push(ty),
                        _ => return Err(RuntimeError::ImportNotAllowed(format!("{}.{}", import.module, import.name))),
                    }
                }
            }
            Payload::FunctionSection(reader) => {
                for ty in reader {
                    func_types.push(ty.map_err(invalid)?);
                }
            }
            Payload::ExportSection(reader) => {
                for export in reader {
                    let export = export.map_err(invalid)?;
                    if export.name == "_start" && export.kind == ExternalKind::Func {
                        start = Some(export.index);
                    }
                }
            }
            _ => {}
        }
    }
    let start_ok = start
        .and_then(|func| func_types.get(func as usize))
        .and_then(|ty| empty_func_type.get(*ty as usize))
        .copied()
        .unwrap_or(false);
    if start_ok { Ok(()) } else { Err(RuntimeError::NoStart) }
}

/// An exclusive lock on `<dir>/.<sha256>.lock`, held while one artifact is
/// compiled. The file is removed (while still held) when the lock is dropped:
/// a process already waiting on it then finds the artifact, and one arriving
/// later does not need the lock. The lock only saves duplicate compiles; the
/// artifact itself is written atomically either way.
struct CompileLock {
    path: PathBuf,
    _file: std::fs::File,
}

impl CompileLock {
    fn acquire(dir: &Path, sha256: &str) -> Result<Self> {
        std::fs::create_dir_all(dir).map_err(|source| RuntimeError::Cache { path: dir.to_path_buf(), source })?;
        let path = dir.join(format!(".{sha256}.lock"));
        let io = |source| RuntimeError::Cache { path: path.clone(), source };
        let file = std::fs::OpenOptions::new().create(true).truncate(false).write(true).open(&path).map_err(io)?;
        file.lock().map_err(io)?;
        Ok(Self { path, _file: file })
    }
}

impl Drop for CompileLock {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

fn write_atomically(dir: &Path, path: &Path, bytes: &[u8]) -> Result<()> {
    let io = |p: &Path| {
        let p = p.to_path_buf();
        move |source| RuntimeError::Cache { path: p, source }
    };
    std::fs::create_dir_all(dir).map_err(io(dir))?;
    let tmp = dir.join(format!(
        ".{}.{}.{:?}.tmp",
        path.file_name().and_then(|n| n.to_str()).unwrap_or("artifact"),
        std::process::id(),
        std::thread::current().id()
    ));
    let write = || -> std::io::Result<()> {
        let mut file = std::fs::File::create(&tmp)?;
        file.write_all(bytes)?;
        file.sync_all()?;
        std::fs::rename(&tmp, path)
    };
    write().map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        RuntimeError::Cache { path: path.to_path_buf(), source: e }
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_fault_just_below_zero_is_a_stack_overflow() {
        assert!(super::below_the_stack("memory fault at wasm address 0x1000007f0 in linear memory of size 0xa00000"));
        assert!(super::below_the_stack("memory fault at wasm address 0xfffffff0 in linear memory"));
        assert!(!super::below_the_stack("memory fault at wasm address 0xa00010 in linear memory of size 0xa00000"));
        assert!(!super::below_the_stack("out of bounds memory access"));
    }
}
