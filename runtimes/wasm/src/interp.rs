//! Source code run inside a WASI interpreter module (CPython, QuickJS-NG).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use sha2::{Digest, Sha256};
use wasmtime::{ExternType, Instance, Module, Store, ValType};

use crate::{
    CompiledModule, Entry, ModuleInfo, Result, RunInput, RunOutcome, RunResult, RunState, RuntimeError, TrapKind,
    WASI_MODULE, WasmRuntime, trap,
};

/// A language whose source [`WasmRuntime::run_interpreted`] can run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Lang {
    /// Python 3, in a WASI *command* build of CPython (`python.wasm`).
    Python,
    /// JavaScript, in the QuickJS-NG WASI *reactor* (`javascript.wasm`).
    JavaScript,
}

impl Lang {
    /// Every language, in a fixed order.
    pub const ALL: [Lang; 2] = [Lang::Python, Lang::JavaScript];

    /// Lower-case name: `python`, `javascript`.
    pub fn name(self) -> &'static str {
        match self {
            Lang::Python => "python",
            Lang::JavaScript => "javascript",
        }
    }

    /// File name of the interpreter in an interpreters directory.
    pub fn file_name(self) -> &'static str {
        match self {
            Lang::Python => "python.wasm",
            Lang::JavaScript => "javascript.wasm",
        }
    }

    /// File name of the script in the guest's `/work` directory.
    pub fn script_name(self) -> &'static str {
        match self {
            Lang::Python => "main.py",
            Lang::JavaScript => "main.js",
        }
    }

    /// Path of the script as the guest sees it (`/work/main.py`, `/work/main.js`).
    pub fn script_path(self) -> String {
        format!("/work/{}", self.script_name())
    }
}

impl std::fmt::Display for Lang {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for Lang {
    type Err = String;

    /// `python`/`py` or `javascript`/`js` (any case).
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        match s.to_ascii_lowercase().as_str() {
            "python" | "py" => Ok(Lang::Python),
            "javascript" | "js" => Ok(Lang::JavaScript),
            other => Err(format!("unknown language {other:?} (expected python or javascript)")),
        }
    }
}

/// A compiled interpreter for one [`Lang`], checked to have that language's entry points.
#[derive(Debug, Clone)]
pub struct Interpreter {
    lang: Lang,
    module: CompiledModule,
    load_time: Duration,
}

impl Interpreter {
    /// The language it runs.
    pub fn lang(&self) -> Lang {
        self.lang
    }

    /// Hash and size of the interpreter module.
    pub fn info(&self) -> &ModuleInfo {
        &self.module.info
    }

    /// True when the compiled code came from the on-disk cache.
    pub fn from_cache(&self) -> bool {
        self.module.from_cache
    }

    /// Time taken to hash and compile (or load from the cache) the interpreter.
    pub fn load_time(&self) -> Duration {
        self.load_time
    }
}

/// Why an interpreter is not available.
#[derive(Debug, thiserror::Error)]
pub enum Unavailable {
    /// The interpreter file does not exist.
    #[error("{lang}: {} is missing (run scripts/fetch-interpreters)", path.display())]
    Missing {
        /// The language.
        lang: Lang,
        /// Where the file was looked for.
        path: PathBuf,
    },
    /// The file exists but could not be read.
    #[error("{lang}: cannot read {}: {error}", path.display())]
    Unreadable {
        /// The language.
        lang: Lang,
        /// The file.
        path: PathBuf,
        /// The I/O error.
        error: std::io::Error,
    },
    /// The file was refused or failed to compile.
    #[error("{lang}: {} refused: {error}", path.display())]
    Invalid {
        /// The language.
        lang: Lang,
        /// The file.
        path: PathBuf,
        /// Why.
        error: RuntimeError,
    },
}

/// The interpreters found in one directory: each [`Lang`] is either ready or
/// [`Unavailable`] with the reason.
#[derive(Debug)]
pub struct Interpreters {
    dir: PathBuf,
    entries: Vec<std::result::Result<Interpreter, Unavailable>>,
}

impl Interpreters {
    /// Compiles every interpreter file present in `dir` (`python.wasm`,
    /// `javascript.wasm`), through the runtime's artifact cache when it has one
    /// (keyed by engine hash and the file's SHA-256, so a replaced file is
    /// recompiled and an unchanged one loads in milliseconds).
    ///
    /// Never fails as a whole: a missing, unreadable or refused file makes just
    /// that language unavailable (see [`get`](Self::get) and [`status`](Self::status)).
    pub fn load(dir: impl AsRef<Path>, rt: &WasmRuntime) -> Self {
        let dir = dir.as_ref().to_path_buf();
        let entries = Lang::ALL
            .iter()
            .map(|&lang| {
                let path = dir.join(lang.file_name());
                let bytes = match std::fs::read(&path) {
                    Ok(bytes) => bytes,
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                        return Err(Unavailable::Missing { lang, path });
                    }
                    Err(error) => return Err(Unavailable::Unreadable { lang, path, error }),
                };
                rt.compile_interpreter(lang, &bytes).map_err(|error| Unavailable::Invalid { lang, path, error })
            })
            .collect();
        Self { dir, entries }
    }

    /// The directory the interpreters were loaded from.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The interpreter for `lang`, or why there is none.
    pub fn get(&self, lang: Lang) -> std::result::Result<&Interpreter, &Unavailable> {
        let index = Lang::ALL.iter().position(|&l| l == lang).expect("every Lang is in Lang::ALL");
        self.entries[index].as_ref()
    }

    /// The languages that can run.
    pub fn available(&self) -> Vec<Lang> {
        self.entries.iter().filter_map(|e| e.as_ref().ok().map(Interpreter::lang)).collect()
    }

    /// Every language with its interpreter or the reason it is unavailable.
    pub fn status(&self) -> impl Iterator<Item = (Lang, std::result::Result<&Interpreter, &Unavailable>)> {
        Lang::ALL.iter().zip(&self.entries).map(|(&lang, entry)| (lang, entry.as_ref()))
    }
}

/// Module-level driver for the QuickJS-NG reactor, evaluated with `qjs -m -e`.
///
/// The reactor exports no event loop, only `qjs_init_argv`, which evaluates an
/// ES module and then runs the job queue and timers until the module's promise
/// settles (`js_std_await`). So this driver is that module: it loads the
/// user's file as a classic script, then waits (top-level await) for what the
/// script left pending, and ends the run with `std.exit`, which flushes stdio.
const QJS_DRIVER: &str = r#"
import * as std from 'qjs:std';
import * as os from 'qjs:os';
import * as bjson from 'qjs:bjson';
const live = new Set();
let wake = null;
const fail = (e) => {
  try {
    std.err.puts(String(e) + '\n');
    if (e !== null && typeof e === 'object' && typeof e.stack === 'string') {
      const lines = e.stack.split('\n');
      const cut = lines.findIndex((line) => line.includes('at loadScript (native)'));
      std.err.puts((cut < 0 ? lines : lines.slice(0, cut).concat([''])).join('\n'));
    }
  } catch (_) {}
  std.out.flush();
  std.err.flush();
  std.exit(1);
};
const settle = () => {
  if (live.size === 0 && wake !== null) { const w = wake; wake = null; w(); }
};
const addTimer = (repeat, fn, ms, args) => {
  if (typeof fn !== 'function') throw new TypeError('callback is not a function');
  const id = (repeat ? os.setInterval : os.setTimeout)(() => {
    if (!repeat) live.delete(id);
    try { fn(...args); } catch (e) { fail(e); }
    settle();
  }, Math.max(0, Number(ms) || 0));
  live.add(id);
  return id;
};
const clearTimer = (id) => {
  if (live.delete(id)) { os.clearTimeout(id); settle(); }
};
const timers = {
  setTimeout: (fn, ms, ...args) => addTimer(false, fn, ms, args),
  setInterval: (fn, ms, ...args) => addTimer(true, fn, ms, args),
  clearTimeout: clearTimer,
  clearInterval: clearTimer,
  sleepAsync: (ms) => new Promise((resolve) => { addTimer(false, resolve, ms, []); }),
};
globalThis.std = std;
globalThis.os = Object.freeze(Object.assign(Object.create(null), os, timers));
globalThis.bjson = bjson;
for (const name of ['setTimeout', 'setInterval', 'clearTimeout', 'clearInterval']) globalThis[name] = timers[name];
try {
  const done = std.loadScript(scriptArgs[0]);
  if (done !== null && (typeof done === 'object' || typeof done === 'function') && typeof done.then === 'function') {
    await done;
  }
  for (;;) {
    if (live.size > 0) await new Promise((resolve) => { wake = resolve; });
    for (let i = 0; i < 1000 && live.size === 0; i++) await undefined;
    if (live.size === 0) await new Promise((resolve) => { os.setTimeout(resolve, 1); });
    if (live.size === 0) break;
  }
} catch (e) {
  fail(e);
}
std.out.flush();
std.err.flush();
std.exit(0);
"#;

/// Compiles `/work/main.py` (`sys.argv[1]`) without running it: exit 3 with `line\nType: message`
/// on stderr when it does not compile.
const PY_CHECK: &str = r#"
import sys
try:
    with open(sys.argv[1], encoding="utf-8") as f:
        src = f.read()
    compile(src, "main.py", "exec")
except SyntaxError as e:
    sys.stderr.write("%d\n%s: %s" % (e.lineno or 0, type(e).__name__, e.msg))
    sys.exit(3)
except ValueError as e:
    sys.stderr.write("0\n%s: %s" % (type(e).__name__, e))
    sys.exit(3)
"#;

/// Compiles `/work/main.js` (as a function body: what a classic script may hold) without
/// running it: exit 3 with `line\nType: message` on stderr when it does not compile.
const JS_CHECK: &str = r#"
import * as std from 'qjs:std';
const src = std.loadFile(scriptArgs[0]);
try {
  new Function(src);
} catch (e) {
  const m = /:(\d+)(?::\d+)?\)?\s*$/m.exec(String(e.stack || ''));
  std.err.puts(`${m ? Math.max(0, Number(m[1]) - 2) : 0}\n${e.name}: ${e.message}`);
  std.err.flush();
  std.exit(3);
}
std.exit(0);
"#;

/// Why a source does not compile.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceProblem {
    /// The interpreter's message (`SyntaxError: '(' was never closed`).
    pub message: String,
    /// The line it points at (from 1), when it names one.
    pub line: Option<u32>,
}

impl std::fmt::Display for SourceProblem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.line {
            Some(line) => write!(f, "line {line}: {}", self.message),
            None => f.write_str(&self.message),
        }
    }
}

impl WasmRuntime {
    /// Checks that `source` compiles in `interp`'s language, without running it (CPython:
    /// `compile(source, "main.py", "exec")`; QuickJS: the source compiled as a function
    /// body). `Ok(None)`: it compiles; `Ok(Some(problem))`: it does not, with the
    /// interpreter's message and line; `Err(why)`: the check itself could not be made
    /// (deadline, fuel, a trap).
    pub fn check_source(
        &self,
        interp: &Interpreter,
        source: &str,
        deadline: Duration,
    ) -> std::result::Result<Option<SourceProblem>, String> {
        let started = Instant::now();
        let lang = interp.lang;
        let (work, _temp) = prepare_work_dir(lang, source, None)?;
        let input = RunInput { work_dir: Some(work), deadline, ..RunInput::default() };
        let script = lang.script_path();
        let out = match lang {
            Lang::Python => {
                let argv = vec!["python".to_string(), "-c".into(), PY_CHECK.into(), script];
                self.execute(&interp.module.module, &argv, &input, Entry::Start, started)
            }
            Lang::JavaScript => {
                let wasi_argv = vec!["qjs".to_string(), script.clone()];
                let qjs_argv = vec!["qjs".to_string(), "-m".into(), "-e".into(), JS_CHECK.trim().to_string(), script];
                self.execute(&interp.module.module, &wasi_argv, &input, Entry::QjsReactor { argv: &qjs_argv }, started)
            }
        };
        match out.result {
            RunResult::Exited(0) => Ok(None),
            RunResult::Exited(3) => {
                let text = String::from_utf8_lossy(&out.stderr);
                let (line, message) = text.split_once('\n').unwrap_or(("0", &text));
                let line = line.trim().parse::<u32>().ok().filter(|l| *l > 0);
                Ok(Some(SourceProblem { message: message.trim().to_string(), line }))
            }
            RunResult::Exited(code) => {
                Err(format!("the {lang} check exited with {code}: {}", String::from_utf8_lossy(&out.stderr).trim()))
            }
            RunResult::Trap { kind, message } => Err(format!("the {lang} check stopped ({kind:?}): {message}")),
        }
    }

    /// Compiles an interpreter for `lang` (binary wasm only), through the
    /// artifact cache when one is configured, and checks that it has what
    /// [`run_interpreted`](Self::run_interpreted) needs:
    ///
    /// * only `wasi_snapshot_preview1` function imports,
    /// * Python: a WASI command (`_start: [] -> []`),
    /// * JavaScript: the QuickJS-NG reactor ABI (`memory`, `_initialize: [] -> []`,
    ///   `malloc: [i32] -> [i32]`, `qjs_init_argv: [i32 i32] -> [i32]`).
    ///
    /// The size limit is [`RuntimeConfig::max_interpreter_bytes`](crate::RuntimeConfig::max_interpreter_bytes).
    /// On a cache hit the module is not re-validated: the artifact was compiled
    /// from the binary with the same SHA-256 (its imports and exports are still checked).
    pub fn compile_interpreter(&self, lang: Lang, bytes: &[u8]) -> Result<Interpreter> {
        let started = Instant::now();
        let limit = self.config.max_interpreter_bytes;
        if bytes.len() > limit {
            return Err(RuntimeError::TooLarge { size: bytes.len(), limit });
        }
        if !bytes.starts_with(b"\0asm") {
            return Err(RuntimeError::NotAModule("an interpreter must be a binary wasm module".into()));
        }
        let info = ModuleInfo { sha256: hex::encode(Sha256::digest(bytes)), size: bytes.len() };
        let (module, from_cache) = self.compile_cached(&info.sha256, bytes)?;
        check_interpreter_shape(lang, &module)?;
        Ok(Interpreter { lang, module: CompiledModule { module, info, from_cache }, load_time: started.elapsed() })
    }

    /// Runs `source` as the main script of `interp`'s language, with the same
    /// sandbox and limits as [`run`](Self::run): deadline, fuel, memory cap,
    /// capped (and optionally streamed) output, cancellation, only `input.env`
    /// as the environment, no network, no host files.
    ///
    /// The script is written to `main.py` / `main.js` in the run's work
    /// directory, seen by the guest as `/work`: `input.work_dir` if given (an
    /// existing file of that name is replaced, and the script is left there),
    /// else a fresh temporary directory removed after the run. The file is made
    /// read-only on the host; the guest can still replace it, as the directory
    /// is writable.
    ///
    /// * Python: WASI argv `["python", "/work/main.py", args...]`, so
    ///   `sys.argv == ["/work/main.py", args...]`. Exit code as CPython's:
    ///   0, `sys.exit(n)`, 1 on an uncaught exception (traceback on stderr).
    /// * JavaScript: `_initialize`, then `qjs_init_argv(["qjs", "-m", "-e",
    ///   DRIVER, "/work/main.js", args...])`, so `scriptArgs ==
    ///   ["/work/main.js", args...]`. The driver loads the file as a classic
    ///   script (`std.loadScript`) with `std`, `os`, `bjson`, `setTimeout`,
    ///   `setInterval`, `clearTimeout`, `clearInterval` as globals; if the
    ///   script's completion value is a promise it is awaited; then the run
    ///   goes on until no timer is pending (timers made through those globals
    ///   or the global `os`), giving other promise jobs at least 1000 turns.
    ///   Exit code: 0, `std.exit(n)`, 1 on an uncaught exception (message and
    ///   stack on stderr) or an unhandled promise rejection.
    ///
    /// A trap (deadline, fuel, cancel, wasm trap) is reported as for `run`.
    pub fn run_interpreted(&self, interp: &Interpreter, source: &str, input: RunInput) -> RunOutcome {
        let started = Instant::now();
        let lang = interp.lang;
        let (work, _temp) = match prepare_work_dir(lang, source, input.work_dir.as_deref()) {
            Ok(dirs) => dirs,
            Err(message) => return failed_before_start(message, started),
        };
        let script = lang.script_path();
        let input = RunInput { work_dir: Some(work), ..input };
        match lang {
            Lang::Python => {
                let mut argv = vec!["python".to_string(), script];
                argv.extend(input.args.iter().cloned());
                self.execute(&interp.module.module, &argv, &input, Entry::Start, started)
            }
            Lang::JavaScript => {
                let mut wasi_argv = vec!["qjs".to_string(), script.clone()];
                wasi_argv.extend(input.args.iter().cloned());
                let mut qjs_argv =
                    vec!["qjs".to_string(), "-m".into(), "-e".into(), QJS_DRIVER.trim().to_string(), script];
                qjs_argv.extend(input.args.iter().cloned());
                self.execute(&interp.module.module, &wasi_argv, &input, Entry::QjsReactor { argv: &qjs_argv }, started)
            }
        }
        // `_temp` (if any) is removed here, after the run.
    }
}

/// Writes the script into the work directory (a new temporary one when none is
/// given). Returns the directory and the guard that removes a temporary one.
fn prepare_work_dir(
    lang: Lang,
    source: &str,
    work_dir: Option<&Path>,
) -> std::result::Result<(PathBuf, Option<tempfile::TempDir>), String> {
    let (dir, temp) = match work_dir {
        Some(dir) => (dir.to_path_buf(), None),
        None => {
            let temp = tempfile::Builder::new()
                .prefix("sundial-run-")
                .tempdir()
                .map_err(|e| format!("cannot create a temporary work dir: {e}"))?;
            (temp.path().to_path_buf(), Some(temp))
        }
    };
    let path = dir.join(lang.script_name());
    let write = || -> std::io::Result<()> {
        match std::fs::remove_file(&path) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(e),
        }
        let mut file = std::fs::OpenOptions::new().write(true).create_new(true).open(&path)?;
        file.write_all(source.as_bytes())?;
        let mut perms = file.metadata()?.permissions();
        perms.set_readonly(true);
        file.set_permissions(perms)
    };
    write().map_err(|e| format!("cannot write the script to {}: {e}", path.display()))?;
    Ok((dir, temp))
}

fn failed_before_start(message: String, started: Instant) -> RunOutcome {
    RunOutcome {
        exit_code: None,
        result: trap(TrapKind::Other, message),
        stdout: Vec::new(),
        stderr: Vec::new(),
        stdout_truncated: false,
        stderr_truncated: false,
        fuel_consumed: None,
        elapsed: started.elapsed(),
    }
}

/// Enters an instantiated QuickJS-NG reactor: `_initialize`, then
/// `qjs_init_argv(argc, argv)` with `argv` copied into guest memory.
pub(crate) fn enter_qjs_reactor(
    store: &mut Store<RunState>,
    instance: &Instance,
    argv: &[String],
) -> wasmtime::Result<RunResult> {
    instance.get_typed_func::<(), ()>(&mut *store, "_initialize")?.call(&mut *store, ())?;
    let malloc = instance.get_typed_func::<i32, i32>(&mut *store, "malloc")?;
    let init_argv = instance.get_typed_func::<(i32, i32), i32>(&mut *store, "qjs_init_argv")?;
    let memory =
        instance.get_memory(&mut *store, "memory").ok_or_else(|| wasmtime::format_err!("no exported memory"))?;

    // One block: argc + 1 pointers (NULL-terminated), then the NUL-terminated strings.
    let table_len = 4 * (argv.len() + 1);
    let total = table_len + argv.iter().map(|a| a.len() + 1).sum::<usize>();
    let Ok(total_i32) = i32::try_from(total) else {
        return Ok(trap(TrapKind::Other, "argv too large".into()));
    };
    let base = malloc.call(&mut *store, total_i32)?;
    if base == 0 {
        return Ok(trap(TrapKind::Memory, format!("guest malloc of {total} bytes for argv failed")));
    }
    let base = base as u32 as usize;
    let mut block = Vec::with_capacity(total);
    let mut offset = base + table_len;
    for arg in argv {
        block.extend_from_slice(&(offset as u32).to_le_bytes());
        offset += arg.len() + 1;
    }
    block.extend_from_slice(&0u32.to_le_bytes());
    for arg in argv {
        block.extend_from_slice(arg.as_bytes());
        block.push(0);
    }
    memory.write(&mut *store, base, &block)?;
    let argc = argv.len() as i32;
    // The driver ends with `std.exit` (proc_exit); a return means qjs failed
    // before or while evaluating it (message on stderr).
    let rc = init_argv.call(&mut *store, (argc, base as i32))?;
    Ok(RunResult::Exited(if rc == 0 { 0 } else { 1 }))
}

fn check_interpreter_shape(lang: Lang, module: &Module) -> Result<()> {
    for import in module.imports() {
        if import.module() != WASI_MODULE || !matches!(import.ty(), ExternType::Func(_)) {
            return Err(RuntimeError::ImportNotAllowed(format!("{}.{}", import.module(), import.name())));
        }
    }
    let func = |name: &str, params: &[ValType], results: &[ValType]| -> Result<()> {
        let ok = match module.get_export(name) {
            Some(ExternType::Func(ty)) => {
                ty.params().len() == params.len()
                    && ty.results().len() == results.len()
                    && ty.params().zip(params).all(|(a, b)| ValType::eq(&a, b))
                    && ty.results().zip(results).all(|(a, b)| ValType::eq(&a, b))
            }
            _ => false,
        };
        if ok {
            Ok(())
        } else {
            Err(RuntimeError::Invalid(format!(
                "a {lang} interpreter must export `{name}: {params:?} -> {results:?}` ({})",
                match lang {
                    Lang::Python => "a WASI command build of CPython",
                    Lang::JavaScript => "the QuickJS-NG qjs-wasi-reactor build",
                }
            )))
        }
    };
    match lang {
        Lang::Python => func("_start", &[], &[]),
        Lang::JavaScript => {
            func("_initialize", &[], &[])?;
            func("malloc", &[ValType::I32], &[ValType::I32])?;
            func("qjs_init_argv", &[ValType::I32, ValType::I32], &[ValType::I32])?;
            match module.get_export("memory") {
                Some(ExternType::Memory(_)) => Ok(()),
                _ => Err(RuntimeError::Invalid(format!("a {lang} interpreter must export its `memory`"))),
            }
        }
    }
}
