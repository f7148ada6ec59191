//! Python (CPython 3.12) and JavaScript (QuickJS-NG) source run in their WASI
//! interpreters, including hostile scripts.
//!
//! The interpreters are installed by `scripts/fetch-interpreters` into
//! `target/interpreters` (or `$SUNDIAL_INTERPRETERS_DIR`, relative to the
//! repository). Without them these tests FAIL, saying so: they never skip.
//! Compiled interpreters are cached in `target/interpreter-cache`, shared by
//! every test process, so the suite compiles CPython once (the first test to
//! need it compiles under a lock file; the others then load the artifact).

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use sundial_wasm_sandbox::{
    Interpreter, Interpreters, Lang, OutputStream, RunInput, RunOutcome, RunResult, RuntimeConfig, TrapKind,
    WasmRuntime,
};

fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

struct Setup {
    rt: WasmRuntime,
    interpreters: Interpreters,
}

fn setup() -> &'static Setup {
    static SETUP: OnceLock<Setup> = OnceLock::new();
    SETUP.get_or_init(|| {
        let root = repo_root();
        let dir = match std::env::var_os("SUNDIAL_INTERPRETERS_DIR") {
            Some(dir) => root.join(dir),
            None => root.join("target/interpreters"),
        };
        let config =
            RuntimeConfig { cache_dir: Some(root.join("target/interpreter-cache")), ..RuntimeConfig::default() };
        let rt = WasmRuntime::new(config).expect("runtime");
        let interpreters = Interpreters::load(&dir, &rt);
        Setup { rt, interpreters }
    })
}

fn interpreter(lang: Lang) -> &'static Interpreter {
    match setup().interpreters.get(lang) {
        Ok(interp) => interp,
        Err(why) => panic!("the {lang} interpreter is not available: {why}\n=> run scripts/fetch-interpreters first"),
    }
}

fn input() -> RunInput {
    RunInput { deadline: Duration::from_secs(30), ..RunInput::default() }
}

fn run(lang: Lang, source: &str, input: RunInput) -> RunOutcome {
    setup().rt.run_interpreted(interpreter(lang), source, input)
}

fn py(source: &str) -> RunOutcome {
    run(Lang::Python, source, input())
}

fn js(source: &str) -> RunOutcome {
    run(Lang::JavaScript, source, input())
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Panics with the run's output unless it exited with `code`.
#[track_caller]
fn assert_exit(out: &RunOutcome, code: i32) {
    assert_eq!(out.result, RunResult::Exited(code), "stdout:\n{}\nstderr:\n{}", text(&out.stdout), text(&out.stderr));
}

#[track_caller]
fn assert_trap(out: &RunOutcome, kind: TrapKind) {
    match &out.result {
        RunResult::Trap { kind: k, .. } if *k == kind => {}
        other => panic!(
            "expected a {kind:?} trap, got {other:?}\nstdout:\n{}\nstderr:\n{}",
            text(&out.stdout),
            text(&out.stderr)
        ),
    }
}

// ---------------------------------------------------------------- loading

#[test]
fn interpreters_are_installed_and_load() {
    let setup = setup();
    for (lang, status) in setup.interpreters.status() {
        if let Err(why) = status {
            panic!("{why}\n=> run scripts/fetch-interpreters first");
        }
        let interp = status.unwrap();
        assert_eq!(interp.lang(), lang);
        eprintln!(
            "{lang}: {} bytes, sha256 {}, {} in {:?}",
            interp.info().size,
            interp.info().sha256,
            if interp.from_cache() { "loaded from cache" } else { "compiled" },
            interp.load_time()
        );
    }
    assert_eq!(setup.interpreters.available(), vec![Lang::Python, Lang::JavaScript]);
}

#[test]
fn missing_interpreters_are_reported_per_language() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("javascript.wasm"), b"\0asm\x01\0\0\0").unwrap();
    let loaded = Interpreters::load(dir.path(), &setup().rt);
    assert!(loaded.available().is_empty());
    let why = loaded.get(Lang::Python).unwrap_err().to_string();
    assert!(why.contains("python.wasm is missing") && why.contains("scripts/fetch-interpreters"), "{why}");
    // An empty module has none of the reactor's exports.
    let why = loaded.get(Lang::JavaScript).unwrap_err().to_string();
    assert!(why.contains("_initialize"), "{why}");
}

#[test]
fn an_interpreter_of_the_wrong_language_is_refused() {
    let python = std::fs::read(setup().interpreters.dir().join("javascript.wasm"))
        .expect("javascript.wasm (run scripts/fetch-interpreters)");
    let err = setup().rt.compile_interpreter(Lang::Python, &python).unwrap_err();
    assert!(err.to_string().contains("_start"), "{err}");
}

// ---------------------------------------------------------------- Python

#[test]
fn python_hello_world() {
    let out = py("print('hello from python')");
    assert_exit(&out, 0);
    assert_eq!(text(&out.stdout), "hello from python\n");
    eprintln!("python hello: {:?}, fuel {:?}", out.elapsed, out.fuel_consumed);
}

#[test]
fn python_sys_exit_code() {
    let out = py("import sys\nprint('bye')\nsys.exit(3)");
    assert_exit(&out, 3);
    assert_eq!(text(&out.stdout), "bye\n");
}

#[test]
fn python_uncaught_exception_exits_1_with_traceback() {
    let out = py("def f():\n    raise ValueError('boom')\nf()");
    assert_exit(&out, 1);
    let err = text(&out.stderr);
    assert!(err.contains("Traceback") && err.contains("ValueError: boom"), "{err}");
}

#[test]
fn python_argv_reaches_the_script() {
    let out = run(
        Lang::Python,
        "import sys\nprint(sys.argv)",
        RunInput { args: vec!["--name".into(), "two words".into()], ..input() },
    );
    assert_exit(&out, 0);
    assert_eq!(text(&out.stdout), "['/work/main.py', '--name', 'two words']\n");
}

#[test]
fn python_infinite_loop_hits_the_deadline() {
    let started = Instant::now();
    let out = run(Lang::Python, "while True:\n    pass", RunInput { deadline: Duration::from_millis(500), ..input() });
    assert_trap(&out, TrapKind::Deadline);
    assert!(started.elapsed() < Duration::from_secs(5), "{:?}", started.elapsed());
}

#[test]
fn python_infinite_loop_runs_out_of_fuel() {
    let out = run(Lang::Python, "while True:\n    pass", RunInput { fuel: Some(2_000_000_000), ..input() });
    assert_trap(&out, TrapKind::OutOfFuel);
    assert!(out.fuel_consumed.unwrap() >= 2_000_000_000, "{:?}", out.fuel_consumed);
}

#[test]
fn python_memory_bomb_fails_inside_the_guest() {
    let out = run(
        Lang::Python,
        "try:\n    b = bytearray(1 << 30)\nexcept MemoryError:\n    print('MemoryError')\nx = bytearray(1 << 20)\nprint('still alive', len(x))",
        RunInput { memory_bytes: Some(64 << 20), ..input() },
    );
    assert_exit(&out, 0);
    assert_eq!(text(&out.stdout), "MemoryError\nstill alive 1048576\n");
}

#[test]
fn python_growing_list_bomb_is_stopped() {
    // Grows in small steps until the cap: either MemoryError in the guest or a trap,
    // never more than the cap on the host.
    let out = run(
        Lang::Python,
        "x = []\nwhile True:\n    x.append(bytearray(1 << 16))",
        RunInput { memory_bytes: Some(64 << 20), ..input() },
    );
    match &out.result {
        RunResult::Exited(1) => assert!(text(&out.stderr).contains("MemoryError"), "{}", text(&out.stderr)),
        RunResult::Trap { kind: TrapKind::Memory | TrapKind::Other, .. } => {}
        other => panic!("{other:?}\n{}", text(&out.stderr)),
    }
}

#[test]
fn python_has_no_network() {
    let out = py(r#"
import socket
try:
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.connect(("127.0.0.1", 3306))
    print("CONNECTED")
except Exception as e:
    print("refused:", type(e).__name__, e)
"#);
    assert_exit(&out, 0);
    let stdout = text(&out.stdout);
    assert!(stdout.starts_with("refused:") && !stdout.contains("CONNECTED"), "{stdout}");
}

#[test]
fn python_cannot_read_host_files() {
    let out = py(r#"
for path in ['/etc/passwd', '../../../../etc/passwd', '/work/../etc/passwd', '/proc/self/environ']:
    try:
        open(path).read()
        print('READ', path)
    except OSError as e:
        print(type(e).__name__)
"#);
    assert_exit(&out, 0);
    let stdout = text(&out.stdout);
    assert!(!stdout.contains("READ"), "{stdout}");
    assert_eq!(stdout.lines().count(), 4, "{stdout}");
}

#[test]
fn python_sees_no_host_environment() {
    // SAFETY: a test binary thread sets a variable nobody else reads concurrently
    // (other tests read none). It must not reach the guest.
    unsafe { std::env::set_var("SUNDIAL_SECRET_FOR_TEST", "leak") };
    let out = py("import os\nprint(dict(os.environ))");
    assert_exit(&out, 0);
    assert_eq!(text(&out.stdout), "{}\n");
    let out = run(
        Lang::Python,
        "import os\nprint(dict(os.environ))",
        RunInput { env: vec![("GREETING".into(), "hi".into())], ..input() },
    );
    assert_eq!(text(&out.stdout), "{'GREETING': 'hi'}\n");
}

#[test]
fn python_work_dir_is_the_scripts_directory() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("data.txt"), "42").unwrap();
    let out = run(
        Lang::Python,
        "import os\nprint(sorted(os.listdir('/work')))\nprint(open('/work/data.txt').read())\nopen('/work/out.txt', 'w').write('done')",
        RunInput { work_dir: Some(dir.path().to_path_buf()), ..input() },
    );
    assert_exit(&out, 0);
    assert_eq!(text(&out.stdout), "['data.txt', 'main.py']\n42\n");
    assert_eq!(std::fs::read_to_string(dir.path().join("out.txt")).unwrap(), "done");
}

#[test]
fn python_output_streams_while_it_runs_and_cancel_stops_it() {
    let chunks = Arc::new(Mutex::new(Vec::<(OutputStream, Vec<u8>)>::new()));
    let cancel = Arc::new(AtomicBool::new(false));
    let (sink, flag) = (chunks.clone(), cancel.clone());
    let on_output = Arc::new(move |stream: OutputStream, bytes: &[u8]| {
        sink.lock().unwrap().push((stream, bytes.to_vec()));
        // The first line arrived while the guest runs: cancel it.
        flag.store(true, Ordering::Relaxed);
    });
    let started = Instant::now();
    let out = run(
        Lang::Python,
        "import sys\nprint('started', flush=True)\nwhile True:\n    pass",
        RunInput { on_output: Some(on_output), cancel: Some(cancel), ..input() },
    );
    assert_trap(&out, TrapKind::Cancelled);
    assert!(started.elapsed() < Duration::from_secs(10));
    assert_eq!(text(&out.stdout), "started\n");
    let chunks = chunks.lock().unwrap();
    assert_eq!(chunks.as_slice(), &[(OutputStream::Stdout, b"started\n".to_vec())]);
}

// ---------------------------------------------------------------- JavaScript

#[test]
fn js_hello_world() {
    let out = js("console.log('hello from js'); print('via print', 42);");
    assert_exit(&out, 0);
    assert_eq!(text(&out.stdout), "hello from js\nvia print 42\n");
    eprintln!("javascript hello: {:?}, fuel {:?}", out.elapsed, out.fuel_consumed);
}

#[test]
fn js_script_args() {
    let out = run(
        Lang::JavaScript,
        "console.log(JSON.stringify(scriptArgs))",
        RunInput { args: vec!["-x".into(), "two words".into()], ..input() },
    );
    assert_exit(&out, 0);
    assert_eq!(text(&out.stdout), "[\"/work/main.js\",\"-x\",\"two words\"]\n");
}

#[test]
fn js_exception_exits_nonzero_with_message() {
    let out = js("function f() { throw new Error('boom'); }\nconsole.log('before');\nf();");
    assert_exit(&out, 1);
    assert_eq!(text(&out.stdout), "before\n");
    let err = text(&out.stderr);
    assert!(err.contains("Error: boom") && err.contains("main.js"), "{err}");
    // The driver's own frames are not shown.
    assert!(!err.contains("loadScript") && !err.contains("<cmdline>"), "{err}");
}

#[test]
fn js_syntax_error_exits_nonzero() {
    let out = js("let = = ;");
    assert_exit(&out, 1);
    assert!(text(&out.stderr).contains("SyntaxError"), "{}", text(&out.stderr));
}

#[test]
fn js_std_exit_code() {
    let out = js("console.log('bye'); std.exit(3);");
    assert_exit(&out, 3);
    assert_eq!(text(&out.stdout), "bye\n");
}

#[test]
fn js_timers_and_promises_are_waited_for() {
    let out = js(r#"
setTimeout(() => console.log('timer 2'), 50);
setTimeout(() => console.log('timer 1'), 10);
Promise.resolve().then(() => console.log('microtask'));
(async () => { await os.sleepAsync(80); console.log('after sleep'); })();
const id = setInterval(() => { console.log('tick'); clearInterval(id); }, 20);
console.log('sync');
"#);
    assert_exit(&out, 0);
    assert_eq!(text(&out.stdout), "sync\nmicrotask\ntimer 1\ntick\ntimer 2\nafter sleep\n");
}

#[test]
fn js_async_main_as_completion_value_is_awaited() {
    let out = js(r#"
async function main() {
  for (let i = 0; i < 5000; i++) await null;
  throw new Error('late failure');
}
main();
"#);
    assert_exit(&out, 1);
    assert!(text(&out.stderr).contains("late failure"), "{}", text(&out.stderr));
}

#[test]
fn js_unhandled_rejection_exits_nonzero() {
    let out = js("Promise.reject(new Error('nobody catches me')); console.log('sync done');");
    assert_exit(&out, 1);
    assert!(text(&out.stderr).contains("nobody catches me"), "{}", text(&out.stderr));
}

#[test]
fn js_infinite_loop_hits_the_deadline() {
    let started = Instant::now();
    let out = run(Lang::JavaScript, "for (;;) {}", RunInput { deadline: Duration::from_millis(300), ..input() });
    assert_trap(&out, TrapKind::Deadline);
    assert!(started.elapsed() < Duration::from_secs(5), "{:?}", started.elapsed());
}

#[test]
fn js_infinite_loop_runs_out_of_fuel() {
    let out = run(Lang::JavaScript, "for (;;) {}", RunInput { fuel: Some(500_000_000), ..input() });
    assert_trap(&out, TrapKind::OutOfFuel);
}

#[test]
fn js_cannot_read_host_files() {
    let out = js(r#"
for (const path of ['/etc/passwd', '../../etc/passwd', '/work/../etc/passwd']) {
  const f = std.open(path, 'r');
  console.log(f === null ? 'refused' : 'READ ' + f.readAsString());
  let text = null;
  try { text = std.loadFile(path); } catch (e) { text = null; }
  console.log(text === null ? 'refused' : 'READ ' + text);
  const fd = os.open(path, os.O_RDONLY);
  console.log(fd < 0 ? 'refused' : 'READ fd ' + fd);
}
"#);
    assert_exit(&out, 0);
    let stdout = text(&out.stdout);
    assert_eq!(stdout, "refused\n".repeat(9), "{stdout}");
}

#[test]
fn js_sees_no_host_environment_and_cannot_run_programs() {
    let out = js(r#"
console.log(JSON.stringify(std.getenviron()));
let ran = 'no exec';
try { if (typeof os.exec === 'function' && os.exec(['/bin/sh', '-c', 'true']) === 0) ran = 'EXEC'; } catch (e) {}
console.log(ran);
"#);
    assert_exit(&out, 0);
    assert_eq!(text(&out.stdout), "{}\nno exec\n");
}

#[test]
fn js_memory_bomb_fails_inside_the_guest() {
    let out = run(
        Lang::JavaScript,
        r#"
let caught = 'no';
try { new ArrayBuffer(1 << 30); } catch (e) { caught = e.name; }
console.log(caught);
const a = [];
try { for (;;) a.push(new Array(1 << 16).fill(1.5)); } catch (e) { console.log('grow:', e.name); }
a.length = 0;
console.log('still alive');
"#,
        RunInput { memory_bytes: Some(64 << 20), ..input() },
    );
    assert_exit(&out, 0);
    let stdout = text(&out.stdout);
    assert!(stdout.starts_with("RangeError\n") || stdout.starts_with("InternalError\n"), "{stdout}");
    assert!(stdout.ends_with("still alive\n"), "{stdout}");
}

#[test]
fn js_output_is_streamed_and_capped() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let sink = seen.clone();
    let rt = WasmRuntime::new(RuntimeConfig {
        output_cap_bytes: 1000,
        cache_dir: Some(repo_root().join("target/interpreter-cache")),
        ..RuntimeConfig::default()
    })
    .unwrap();
    let interp = rt
        .compile_interpreter(
            Lang::JavaScript,
            &std::fs::read(setup().interpreters.dir().join("javascript.wasm")).unwrap(),
        )
        .unwrap();
    let out = rt.run_interpreted(
        &interp,
        "for (let i = 0; i < 1000; i++) console.log('line ' + i);",
        RunInput {
            on_output: Some(Arc::new(move |_stream, bytes: &[u8]| sink.lock().unwrap().extend_from_slice(bytes))),
            ..input()
        },
    );
    assert_eq!(out.stdout.len(), 1000);
    assert!(out.stdout_truncated);
    assert_eq!(*seen.lock().unwrap(), out.stdout);
}

#[test]
fn python_sleep_works_and_is_interrupted_by_the_deadline_and_cancel() {
    let out = py("import time\nt = time.monotonic()\ntime.sleep(0.05)\nprint(time.monotonic() - t >= 0.05)");
    assert_exit(&out, 0);
    assert_eq!(text(&out.stdout), "True\n");

    let started = Instant::now();
    let out = run(
        Lang::Python,
        "import time\ntime.sleep(3600)",
        RunInput { deadline: Duration::from_millis(300), ..input() },
    );
    assert_trap(&out, TrapKind::Deadline);
    assert!(started.elapsed() < Duration::from_secs(3), "{:?}", started.elapsed());

    let cancel = Arc::new(AtomicBool::new(false));
    let flag = cancel.clone();
    let canceller = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(300));
        flag.store(true, Ordering::Relaxed);
    });
    let started = Instant::now();
    let out = run(Lang::Python, "import time\ntime.sleep(3600)", RunInput { cancel: Some(cancel), ..input() });
    canceller.join().unwrap();
    assert_trap(&out, TrapKind::Cancelled);
    assert!(started.elapsed() < Duration::from_secs(3), "{:?}", started.elapsed());
}

#[test]
fn js_sleeps_and_far_timers_are_interrupted_by_the_deadline() {
    for source in ["os.sleep(3600 * 1000)", "setTimeout(() => console.log('never'), 3600 * 1000)"] {
        let started = Instant::now();
        let out = run(Lang::JavaScript, source, RunInput { deadline: Duration::from_millis(300), ..input() });
        assert_trap(&out, TrapKind::Deadline);
        assert!(started.elapsed() < Duration::from_secs(3), "{source}: {:?}", started.elapsed());
        assert!(out.stdout.is_empty());
    }
}

#[test]
fn python_reads_stdin_and_writes_utf8() {
    let out = run(
        Lang::Python,
        "name = input()\nprint(f'héllo ✓ {name}')\nprint(repr(__import__('sys').stdin.read()))",
        RunInput { stdin: "wörld\nrest\n".as_bytes().to_vec(), ..input() },
    );
    assert_exit(&out, 0);
    assert_eq!(text(&out.stdout), "héllo ✓ wörld\n'rest\\n'\n");
}

#[test]
fn python_cannot_start_processes() {
    let out = py(r#"
import subprocess, os
try:
    subprocess.run(['/bin/sh', '-c', 'true'])
    print('RAN')
except OSError as e:
    print('refused')
print(hasattr(os, 'system'), hasattr(os, 'fork'))
"#);
    assert_exit(&out, 0);
    assert_eq!(text(&out.stdout), "refused\nFalse False\n");
}

#[test]
fn js_reads_stdin_and_writes_utf8() {
    let out = run(
        Lang::JavaScript,
        "console.log('héllo ✓ ' + std.in.getline()); console.log(JSON.stringify(std.in.readAsString()));",
        RunInput { stdin: "wörld\nrest\n".as_bytes().to_vec(), ..input() },
    );
    assert_exit(&out, 0);
    assert_eq!(text(&out.stdout), "héllo ✓ wörld\n\"rest\\n\"\n");
}

#[test]
fn js_cancel_stops_a_busy_script() {
    let cancel = Arc::new(AtomicBool::new(false));
    let flag = cancel.clone();
    let canceller = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(200));
        flag.store(true, Ordering::Relaxed);
    });
    let started = Instant::now();
    let out = run(Lang::JavaScript, "let i = 0; for (;;) { i++; }", RunInput { cancel: Some(cancel), ..input() });
    canceller.join().unwrap();
    assert_trap(&out, TrapKind::Cancelled);
    assert!(started.elapsed() < Duration::from_secs(3), "{:?}", started.elapsed());
}

#[test]
fn runaway_recursion_is_contained() {
    // CPython stops it at its recursion limit (catchable).
    let out = py("def f():\n    return f()\ntry:\n    f()\nexcept RecursionError:\n    print('RecursionError')");
    assert_exit(&out, 0);
    assert_eq!(text(&out.stdout), "RecursionError\n");
    // QuickJS's WASI build has no stack check of its own: the wasm stack runs
    // out and the run traps (uncatchable in JS), the host is unaffected.
    let out = js("function f() { return f(); } try { f(); } catch (e) { console.log('caught'); }");
    match &out.result {
        RunResult::Trap { kind: TrapKind::StackOverflow, message } => assert!(message.contains("stack"), "{message}"),
        other => panic!("{other:?}"),
    }
    // CPython recursing in C (through `__repr__`) past its own limits: its C stack, in linear
    // memory, runs below its start. Named a stack overflow, not a bare memory fault.
    let out = py("class A:\n    def __repr__(self):\n        return repr(self)\nrepr(A())\n");
    assert_trap(&out, TrapKind::StackOverflow);
    // A moderate depth works.
    let out = js("function g(n) { return n == 0 ? 0 : 1 + g(n - 1); } console.log(g(400));");
    assert_exit(&out, 0);
    assert_eq!(text(&out.stdout), "400\n");
}
