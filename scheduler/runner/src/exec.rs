//! Running one attempt of a script in its sandbox, and what the run's result is.
//!
//! What a script gets (the same in every runtime):
//! - arguments: `$1` the run's params as JSON, `$2` the shard as `index/total`, `$3` the
//!   parent run's output as JSON (`null` without a parent), `$4` a fan-in's parents as a JSON
//!   array of `{job_id, run_id, state, output}` (`null` for a run with no several parents);
//! - stdin: the run's params as JSON;
//! - environment (nothing of the runner's own): `SUNDIAL_RUN_ID`, `SUNDIAL_ATTEMPT`,
//!   `SUNDIAL_JOB`, `SUNDIAL_SCHEDULED_AT`, `SUNDIAL_SHARD_INDEX`, `SUNDIAL_SHARD_TOTAL`.
//!
//! What the run's result is: exit code 0 succeeds, anything else fails with the exit code
//! and the tail of stderr as the message; a sandbox stop (deadline, fuel, memory, timeout,
//! cancel) fails with what stopped it. The output is the last line of stdout when it is
//! JSON, else none. Every line of stdout and stderr goes to the run's log.

use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use serde_json::{Value, json};
use sundial_core::protocol::Delivery;
use sundial_core::script_output::{OutputCallback, OutputStream};
use sundial_shell_sandbox::{KillReason, Shell, ShellResult, ShellRun};
use sundial_wasm_sandbox::{RunInput, RunResult, TrapKind};

use crate::runtimes::Runtimes;

/// How much of stderr a failure's message quotes.
const MESSAGE_TAIL: usize = 1_000;

/// Where a run's output lines go as they are written (`stdout` lines at `info`, `stderr` at `warn`).
pub(crate) type LineSink = Arc<dyn Fn(&'static str, &[u8]) + Send + Sync>;

/// How an attempt ended, as the result call and the synchronous answer carry it.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    pub succeeded: bool,
    pub output: Option<Value>,
    pub message: Option<String>,
    /// False for a failure that cannot succeed on a retry (the source does not compile, the
    /// script is missing, the runtime is not available here): answered `"retry": false`.
    pub retry: bool,
}

impl Outcome {
    pub(crate) fn failed(message: impl Into<String>) -> Self {
        Outcome { succeeded: false, output: None, message: Some(message.into()), retry: true }
    }

    /// A failure that the same attempt again would repeat: not retried.
    pub(crate) fn failed_for_good(message: impl Into<String>) -> Self {
        Outcome { retry: false, ..Outcome::failed(message) }
    }

    /// The executor protocol's answer body (`{"status", "output"?, "message"?, "retry"?}`).
    pub fn answer(&self) -> Value {
        let mut v = json!({"status": if self.succeeded { "succeeded" } else { "failed" }});
        if let Some(o) = &self.output {
            v["output"] = o.clone();
        }
        if let Some(m) = &self.message {
            v["message"] = json!(m);
        }
        if !self.succeeded && !self.retry {
            v["retry"] = json!(false);
        }
        v
    }
}

/// The script's source, checked against the delivery's SHA-256.
pub(crate) struct Source {
    pub runtime: String,
    pub bytes: Arc<Vec<u8>>,
    pub sha256: String,
}

fn args_of(d: &Delivery) -> Vec<String> {
    vec![
        d.params.to_string(),
        format!("{}/{}", d.shard.index, d.shard.total),
        d.parent.as_ref().and_then(|p| p.output.clone()).unwrap_or(Value::Null).to_string(),
        d.parents.as_ref().map_or(Value::Null, |ps| serde_json::to_value(ps).unwrap_or(Value::Null)).to_string(),
    ]
}

fn env_of(d: &Delivery) -> Vec<(String, String)> {
    vec![
        ("SUNDIAL_RUN_ID".into(), d.run_id.clone()),
        ("SUNDIAL_ATTEMPT".into(), d.attempt.to_string()),
        ("SUNDIAL_JOB".into(), d.job.clone()),
        ("SUNDIAL_SCHEDULED_AT".into(), d.scheduled_at.clone()),
        ("SUNDIAL_SHARD_INDEX".into(), d.shard.index.to_string()),
        ("SUNDIAL_SHARD_TOTAL".into(), d.shard.total.to_string()),
    ]
}

/// The output: the last non-empty line of stdout, when it is JSON.
fn output_of(stdout: &[u8]) -> Option<Value> {
    let text = String::from_utf8_lossy(stdout);
    let last = text.lines().rev().find(|l| !l.trim().is_empty())?;
    serde_json::from_str(last.trim()).ok()
}

fn tail(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(bytes);
    let text = text.trim_end();
    let start = text.len().saturating_sub(MESSAGE_TAIL);
    let start = (start..=text.len()).find(|&i| text.is_char_boundary(i)).unwrap_or(text.len());
    text[start..].to_string()
}

/// `message`, then the tail of stderr if there is any.
fn with_tail(mut message: String, stderr: &[u8]) -> String {
    let t = tail(stderr);
    if !t.is_empty() {
        message.push_str(": ");
        message.push_str(&t);
    }
    message
}

fn exited(code: i32, stdout: &[u8], stderr: &[u8], truncated: bool) -> Outcome {
    if code == 0 {
        return Outcome { succeeded: true, output: output_of(stdout), message: None, retry: true };
    }
    let mut message = format!("exit code {code}");
    let t = tail(stderr);
    if !t.is_empty() {
        message.push_str(": ");
        message.push_str(&t);
    }
    if truncated {
        message.push_str(" (output truncated at the cap)");
    }
    Outcome::failed(message)
}

/// Run `source` for delivery `d` (blocking: call it under `spawn_blocking`).
pub(crate) fn run_blocking(
    runtimes: &Runtimes,
    d: &Delivery,
    source: &Source,
    timeout: Duration,
    cancel: Arc<AtomicBool>,
    sink: LineSink,
) -> Outcome {
    match source.runtime.as_str() {
        "wasm" => {
            let Some(wasm) = &runtimes.wasm else {
                return Outcome::failed_for_good("this runner does not run `wasm` scripts");
            };
            let module = match runtimes.compiled(wasm, &source.sha256, &source.bytes) {
                Ok(m) => m,
                Err(e) => return Outcome::failed_for_good(format!("the module does not compile: {e}")),
            };
            wasm_outcome(wasm.run(&module, wasm_input(runtimes, d, timeout, cancel, sink)))
        }
        "python" if runtimes.host_interpreters => shell_run(runtimes, d, source, Shell::Python3, timeout, cancel, sink),
        "javascript" if runtimes.host_interpreters => {
            shell_run(runtimes, d, source, Shell::Node, timeout, cancel, sink)
        }
        "python" | "javascript" => interpreted(runtimes, d, source, timeout, cancel, sink),
        "bash" => shell_run(runtimes, d, source, Shell::Bash, timeout, cancel, sink),
        "sh" => shell_run(runtimes, d, source, Shell::Sh, timeout, cancel, sink),
        other => Outcome::failed_for_good(format!("unknown script runtime `{other}`")),
    }
}

/// A run in the shell sandbox: `bash`/`sh`, or the host's `python3`/`node`.
fn shell_run(
    runtimes: &Runtimes,
    d: &Delivery,
    source: &Source,
    shell: Shell,
    timeout: Duration,
    cancel: Arc<AtomicBool>,
    sink: LineSink,
) -> Outcome {
    let Some(sandbox) = &runtimes.shell else {
        return Outcome::failed_for_good(format!(
            "this runner does not run `{}` scripts: {}",
            source.runtime,
            runtimes.shell_reason.as_deref().unwrap_or("the shell runtime is off")
        ));
    };
    let limits = job_limits(d);
    let run = ShellRun {
        shell,
        source: String::from_utf8_lossy(&source.bytes).into_owned(),
        args: args_of(d),
        env: env_of(d),
        stdin: d.params.to_string().into_bytes(),
        timeout,
        cpu_seconds: None,
        disk_bytes: limits.disk_bytes,
        open_files: limits.open_files,
        memory_bytes: limits.memory_bytes,
        output_cap_bytes: limits.output_bytes.map(|b| b as usize),
        kill_grace: limits
            .kill_grace_ms
            .map_or(runtimes.kill_grace, |g| Duration::from_millis(g).min(runtimes.kill_grace)),
        cancel: Some(cancel),
        on_output: Some(log_output(sink)),
    };
    match sandbox.run(run) {
        Err(e) => Outcome::failed(format!("the shell sandbox failed: {e}")),
        Ok(out) if out.disk_full && !matches!(out.result, ShellResult::Killed { .. }) => Outcome::failed(with_tail(
            format!(
                "disk quota exceeded: the script filled its /work and /tmp, which hold {} bytes at most",
                out.disk_bytes
            ),
            &out.stderr,
        )),
        Ok(out) => match out.result {
            ShellResult::Exited(code) => {
                exited(code, &out.stdout, &out.stderr, out.stdout_truncated || out.stderr_truncated)
            }
            ShellResult::Signalled(signal) => Outcome::failed(with_tail(
                format!("killed by signal {signal} ({})", sundial_shell_sandbox::signal_name(signal)),
                &out.stderr,
            )),
            ShellResult::Killed { reason } => Outcome::failed(match reason {
                KillReason::Timeout => format!("timeout: stopped after {} ms", timeout.as_millis()),
                KillReason::Cancelled => "cancelled".to_string(),
                KillReason::Memory => "memory: the script used more memory than its limit".to_string(),
                KillReason::Signal(n) => format!("the sandbox died of signal {n}"),
            }),
        },
    }
}

/// The job's own limits, as the delivery names them (none: the runner's).
fn job_limits(d: &Delivery) -> sundial_core::job::ScriptLimits {
    d.script.as_ref().and_then(|s| s.limits.clone()).unwrap_or_default()
}

/// A wasm run's input (a module's or an interpreter's): what the script gets, its limits,
/// the cancel flag, and its output streamed to the run's log.
fn wasm_input(
    runtimes: &Runtimes,
    d: &Delivery,
    timeout: Duration,
    cancel: Arc<AtomicBool>,
    sink: LineSink,
) -> RunInput {
    let limits = job_limits(d);
    let mut input = RunInput {
        args: args_of(d),
        env: env_of(d),
        stdin: d.params.to_string().into_bytes(),
        deadline: timeout,
        // The runner's limits are the maxima (the runtimes apply them); the job's lower them.
        fuel: match (runtimes.fuel, limits.fuel) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        },
        memory_bytes: limits.memory_bytes.map(|m| m as usize),
        disk_bytes: limits.disk_bytes,
        open_files: limits.open_files,
        output_cap_bytes: limits.output_bytes.map(|b| b as usize),
        ..RunInput::default()
    };
    input.cancel = Some(cancel);
    input.on_output = Some(log_output(sink));
    input
}

/// A script's output, from either sandbox, as log lines: stdout at `info`, stderr at `warn`.
fn log_output(sink: LineSink) -> OutputCallback {
    Arc::new(move |stream, bytes: &[u8]| {
        let level = match stream {
            OutputStream::Stdout => "info",
            OutputStream::Stderr => "warn",
        };
        sink(level, bytes)
    })
}

fn wasm_outcome(out: sundial_wasm_sandbox::RunOutcome) -> Outcome {
    match out.result {
        RunResult::Exited(code) => exited(code, &out.stdout, &out.stderr, out.stdout_truncated || out.stderr_truncated),
        RunResult::Trap { kind, message } => Outcome::failed(match kind {
            TrapKind::OutOfFuel => format!("out of fuel: {message}"),
            TrapKind::Deadline => format!("deadline: {message}"),
            TrapKind::Memory => format!("memory: {message}"),
            TrapKind::Cancelled => "cancelled".to_string(),
            // The message names the limit ("disk quota exceeded: …", "open files exceeded: …").
            TrapKind::DiskQuota | TrapKind::OpenFiles => message,
            TrapKind::StackOverflow => {
                let detail = message.lines().last().unwrap_or_default().trim().to_string();
                format!("stack overflow: the script's stack ran out (runaway recursion): {detail}")
            }
            TrapKind::Other => {
                let t = tail(&out.stderr);
                if t.is_empty() { format!("trap: {message}") } else { format!("trap: {message}: {t}") }
            }
        }),
    }
}

fn interpreted(
    runtimes: &Runtimes,
    d: &Delivery,
    source: &Source,
    timeout: Duration,
    cancel: Arc<AtomicBool>,
    sink: LineSink,
) -> Outcome {
    let (Some(wasm), Some(interp)) = (&runtimes.wasm, &runtimes.interpreters) else {
        return Outcome::failed_for_good(format!("this runner does not run `{}` scripts", source.runtime));
    };
    let lang = if source.runtime == "python" {
        sundial_wasm_sandbox::Lang::Python
    } else {
        sundial_wasm_sandbox::Lang::JavaScript
    };
    let module = match interp.get(lang) {
        Ok(m) => m,
        Err(why) => {
            return Outcome::failed_for_good(format!("this runner has no `{}` interpreter: {why}", source.runtime));
        }
    };
    let text = String::from_utf8_lossy(&source.bytes).into_owned();
    let out = wasm.run_interpreted(module, &text, wasm_input(runtimes, d, timeout, cancel, sink));
    // A syntax error: if the source itself does not compile, no retry can help.
    if out.result == RunResult::Exited(1)
        && ["SyntaxError", "IndentationError", "TabError"].iter().any(|e| tail(&out.stderr).contains(e))
        && let Ok(Some(problem)) = wasm.check_source(module, &text, Duration::from_secs(10))
    {
        return Outcome::failed_for_good(format!("the {} source does not compile: {problem}", source.runtime));
    }
    if lang == sundial_wasm_sandbox::Lang::Python
        && out.result == RunResult::Exited(1)
        && python_stack_exhausted(&out.stderr)
    {
        return Outcome::failed(with_tail(
            "recursion too deep: Python ran out of stack before its recursion limit (a \
             sys.setrecursionlimit above what this interpreter's stack holds)"
                .to_string(),
            &out.stderr,
        ));
    }
    wasm_outcome(out)
}

/// CPython 3.12 in wasm, recursing in Python past its stack (with `sys.setrecursionlimit`
/// raised), ends with a `SystemError` that does not say why: the traceback repeats one line,
/// then `SystemError: error return without exception set`.
fn python_stack_exhausted(stderr: &[u8]) -> bool {
    let text = tail(stderr);
    text.contains("[Previous line repeated")
        && text.lines().last().is_some_and(|l| l.trim() == "SystemError: error return without exception set")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_output_is_the_last_line_of_stdout_when_it_is_json() {
        assert_eq!(output_of(b"working\n{\"rows\": 3}\n\n"), Some(json!({"rows": 3})));
        assert_eq!(output_of(b"{\"rows\": 3}\ndone\n"), None);
        assert_eq!(output_of(b""), None);
        assert_eq!(output_of(b"42"), Some(json!(42)));
    }

    #[test]
    fn python_out_of_stack_is_told_from_other_system_errors() {
        let traceback = b"Traceback (most recent call last):\n  File \"/work/main.py\", line 5, in <module>\n    f(0)\n  File \"/work/main.py\", line 4, in f\n    return f(n+1)\n  [Previous line repeated 997 more times]\nSystemError: error return without exception set\n";
        assert!(python_stack_exhausted(traceback));
        assert!(!python_stack_exhausted(b"SystemError: error return without exception set\n"));
        assert!(!python_stack_exhausted(
            b"  [Previous line repeated 997 more times]\nRecursionError: maximum recursion depth exceeded\n"
        ));
    }

    #[test]
    fn a_failed_answer_says_when_it_cannot_succeed_on_retry() {
        assert_eq!(Outcome::failed("x").answer(), json!({"status": "failed", "message": "x"}));
        assert_eq!(Outcome::failed_for_good("x").answer(), json!({"status": "failed", "message": "x", "retry": false}));
    }

    #[test]
    fn a_failure_says_its_exit_code_and_the_tail_of_stderr() {
        let o = exited(1, b"", b"first\noops\n", false);
        assert_eq!(o, Outcome::failed("exit code 1: first\noops"));
        let long = "é".repeat(2_000);
        let m = exited(2, b"", long.as_bytes(), true).message.unwrap();
        assert!(m.starts_with("exit code 2: é") && m.ends_with("(output truncated at the cap)"), "{m}");
        assert_eq!(
            exited(0, b"{\"a\":1}", b"warn", false),
            Outcome { succeeded: true, output: Some(json!({"a": 1})), message: None, retry: true }
        );
    }
}
