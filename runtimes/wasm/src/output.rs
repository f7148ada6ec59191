//! Captured, capped guest output with an optional live callback.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use bytes::Bytes;
use sundial_core::script_output::{OutputCallback, OutputStream};
use wasmtime_wasi::cli::{IsTerminal, StdoutStream};
use wasmtime_wasi::p2::{OutputStream as WasiOutputStream, Pollable, StreamError};

struct Shared {
    buffer: Vec<u8>,
    truncated: bool,
}

/// One output stream of one run: keeps at most `cap` bytes. The write that
/// crosses the cap is cut there and marks the stream truncated; later writes
/// fail in the guest (the stream reports itself closed: an I/O errno).
#[derive(Clone)]
pub(crate) struct CapturePipe {
    cap: usize,
    which: OutputStream,
    shared: Arc<Mutex<Shared>>,
    on_output: Option<OutputCallback>,
}

impl CapturePipe {
    pub(crate) fn new(cap: usize, which: OutputStream, on_output: Option<OutputCallback>) -> Self {
        Self { cap, which, shared: Arc::new(Mutex::new(Shared { buffer: Vec::new(), truncated: false })), on_output }
    }

    /// The kept bytes and whether the guest tried to write more.
    pub(crate) fn take(&self) -> (Vec<u8>, bool) {
        let mut shared = self.shared.lock().unwrap_or_else(|e| e.into_inner());
        (std::mem::take(&mut shared.buffer), shared.truncated)
    }

    /// Keeps what fits under the cap and returns how many bytes were kept.
    fn push(&self, bytes: &[u8]) -> usize {
        let kept = {
            let mut shared = self.shared.lock().unwrap_or_else(|e| e.into_inner());
            let room = self.cap.saturating_sub(shared.buffer.len());
            let kept = bytes.len().min(room);
            shared.buffer.extend_from_slice(&bytes[..kept]);
            if kept < bytes.len() {
                shared.truncated = true;
            }
            kept
        };
        // Outside the lock: the callback may take its time or panic without
        // poisoning the capture.
        if kept > 0
            && let Some(callback) = &self.on_output
        {
            callback(self.which, &bytes[..kept]);
        }
        kept
    }

    /// Bytes kept so far, or `None` once a write went past the cap.
    fn used(&self) -> Option<usize> {
        let shared = self.shared.lock().unwrap_or_else(|e| e.into_inner());
        if shared.truncated { None } else { Some(shared.buffer.len()) }
    }
}

impl IsTerminal for CapturePipe {
    fn is_terminal(&self) -> bool {
        false
    }
}

impl StdoutStream for CapturePipe {
    fn p2_stream(&self) -> Box<dyn WasiOutputStream> {
        Box::new(self.clone())
    }

    fn async_stream(&self) -> Box<dyn tokio::io::AsyncWrite + Send + Sync> {
        Box::new(self.clone())
    }
}

impl Pollable for CapturePipe {
    // Always ready: writes never block. (Written out instead of `#[async_trait]`.)
    fn ready<'a, 'b>(&'a mut self) -> Pin<Box<dyn Future<Output = ()> + Send + 'b>>
    where
        'a: 'b,
        Self: 'b,
    {
        Box::pin(std::future::ready(()))
    }
}

impl WasiOutputStream for CapturePipe {
    fn write(&mut self, bytes: Bytes) -> Result<(), StreamError> {
        // The write that crosses the cap is accepted (its tail dropped and the
        // stream marked truncated); every later one fails (see `check_write`).
        self.push(&bytes);
        Ok(())
    }

    fn flush(&mut self) -> Result<(), StreamError> {
        Ok(())
    }

    fn check_write(&mut self) -> Result<usize, StreamError> {
        match self.used() {
            // One byte of permit past the cap, so that a write beyond it is
            // seen (and recorded as truncation) rather than refused unseen.
            Some(used) => Ok(self.cap.saturating_sub(used) + 1),
            // Nothing more will ever be kept: the guest's write fails.
            None => Err(StreamError::Closed),
        }
    }
}

impl tokio::io::AsyncWrite for CapturePipe {
    fn poll_write(self: Pin<&mut Self>, _cx: &mut Context<'_>, buf: &[u8]) -> Poll<std::io::Result<usize>> {
        if buf.is_empty() {
            return Poll::Ready(Ok(0));
        }
        match self.push(buf) {
            0 => Poll::Ready(Err(std::io::Error::new(std::io::ErrorKind::StorageFull, "output cap reached"))),
            kept => Poll::Ready(Ok(kept)),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}
