//! A running script's output as the sandboxes (`runtimes/*`) hand it to their caller, the
//! runner: which stream a chunk was written to, and the callback that receives each chunk.

use std::sync::Arc;

/// Which of a script's output streams a chunk was written to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum OutputStream {
    /// File descriptor 1.
    Stdout,
    /// File descriptor 2.
    Stderr,
}

/// Called with each chunk a script writes to stdout or stderr, as it writes it (only the
/// bytes within the run's output cap).
///
/// It runs on a thread of the sandbox while the script waits (the wasm guest's thread, or a
/// shell run's reader thread, one per stream): it should be quick (hand the bytes to a
/// channel, a buffer, a log line) and must not block for long, or the run's time is spent in
/// it.
pub type OutputCallback = Arc<dyn Fn(OutputStream, &[u8]) + Send + Sync>;
