//! What comes out of a run: stdout and stderr read as they come (kept up to a cap, passed to
//! the run's callback), its stdin written, and the launcher's report on the state of `/work`.

use std::fs;
use std::io::{self, Read, Write};
use std::os::fd::{FromRawFd, OwnedFd};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::process::Child;
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use sundial_core::script_output::{OutputCallback, OutputStream};

/// Readers for the child's stdout and stderr (each kept up to `cap`, passed to `on_output`),
/// and a writer of `data` to its stdin; the kept output arrives on the channel returned.
pub(crate) fn start_io(
    child: &mut Child,
    cap: usize,
    on_output: &Option<OutputCallback>,
    data: Vec<u8>,
) -> mpsc::Receiver<(OutputStream, Vec<u8>, bool)> {
    let (tx, rx) = mpsc::channel::<(OutputStream, Vec<u8>, bool)>();
    let stdout = child.stdout.take().expect("piped stdout");
    let stderr = child.stderr.take().expect("piped stderr");
    spawn_reader(stdout, cap, OutputStream::Stdout, on_output.clone(), tx.clone());
    spawn_reader(stderr, cap, OutputStream::Stderr, on_output.clone(), tx);
    if let Some(mut stdin) = child.stdin.take() {
        thread::spawn(move || {
            // EPIPE if the script does not read its stdin: not an error.
            let _ = stdin.write_all(&data);
        });
    }
    rx
}

fn spawn_reader<R: Read + Send + 'static>(
    mut r: R,
    cap: usize,
    which: OutputStream,
    mut on_output: Option<OutputCallback>,
    tx: mpsc::Sender<(OutputStream, Vec<u8>, bool)>,
) {
    thread::spawn(move || {
        let mut kept = Vec::new();
        let mut truncated = false;
        let mut chunk = vec![0u8; 64 * 1024];
        loop {
            match r.read(&mut chunk) {
                Ok(0) => break,
                Ok(n) => {
                    let room = cap.saturating_sub(kept.len());
                    if n > room {
                        truncated = true;
                    }
                    let keep = &chunk[..n.min(room)];
                    if !keep.is_empty()
                        && let Some(f) = &on_output
                        && catch_unwind(AssertUnwindSafe(|| f(which, keep))).is_err()
                    {
                        on_output = None;
                    }
                    kept.extend_from_slice(keep);
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => break,
            }
        }
        let _ = tx.send((which, kept, truncated));
    });
}

/// The kept stdout and stderr, each with whether it was truncated. All writers are dead, so
/// the pipes hit EOF promptly; the bound only guards against a leaked writer.
pub(crate) fn collect_output(rx: &mpsc::Receiver<(OutputStream, Vec<u8>, bool)>) -> ((Vec<u8>, bool), (Vec<u8>, bool)) {
    let (mut out, mut err) = ((Vec::new(), false), (Vec::new(), false));
    let collect_deadline = Instant::now() + Duration::from_secs(5);
    for _ in 0..2 {
        let left = collect_deadline.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left) {
            Ok((OutputStream::Stdout, buf, t)) => out = (buf, t),
            Ok((OutputStream::Stderr, buf, t)) => err = (buf, t),
            Err(_) => break,
        }
    }
    (out, err)
}

/// A pipe whose ends are close-on-exec (the hook gives the write end to bwrap as fd 3).
pub(crate) fn status_pipe() -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0; 2];
    // SAFETY: plain syscall writing two descriptors into a local array.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC | libc::O_NONBLOCK) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: both were just opened and are owned by nobody else.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

/// Reads the launcher's report (every writer is gone by now): was /work full at the end?
pub(crate) fn work_was_full(read: OwnedFd) -> bool {
    let mut text = String::new();
    let _ = fs::File::from(read).read_to_string(&mut text);
    let mut fields = text.split_whitespace().skip(1).map(|f| f.parse::<u64>().ok());
    matches!((fields.next(), fields.next()), (Some(Some(0)), Some(Some(total))) if total > 0)
}
