//! Registration and heartbeats with Sundial, draining and deregistering on shutdown, and
//! serving on a socket until a signal.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::calls::{Calls, DeregisterRequest, HeartbeatRequest, RegisterRequest, Registered};

use super::state::{Executor, ExecutorError, Inner};

impl Executor {
    /// Register with Sundial as `address` (the URL it delivers to) and heartbeat with the runs
    /// in progress until [`Executor::shutdown`]. Registering creates a `stopped` job per
    /// handler new to the app.
    pub async fn start(&self, address: &str) -> Result<Registered, ExecutorError> {
        let calls = self.inner.calls.clone().ok_or(ExecutorError::NotConfigured)?;
        let registered = register(&self.inner, &calls, address).await?;
        let stop = CancellationToken::new();
        if let Some(old) = self.inner.heartbeats.lock().unwrap().replace(stop.clone()) {
            old.cancel();
        }
        let inner = self.inner.clone();
        let address = address.to_string();
        tokio::spawn(async move {
            let mut interval = Duration::from_millis(registered.heartbeat_interval_ms.clamp(200, 60_000) as u64);
            loop {
                tokio::select! {
                    _ = stop.cancelled() => return,
                    _ = tokio::time::sleep(interval) => {}
                }
                let Some(id) = inner.registration.lock().unwrap().as_ref().map(|r| r.executor_id.clone()) else {
                    return;
                };
                let running_runs = Executor { inner: inner.clone() }.running_runs();
                let body = HeartbeatRequest {
                    executor_id: &id,
                    running: running_runs.len() as i64,
                    running_runs,
                    metadata: None,
                };
                match calls.post("/api/v1/executors/heartbeat", &body).await {
                    Ok((404, _)) => {
                        // Sundial forgot us (offline too long): register again.
                        if let Ok(r) = register(&inner, &calls, &address).await {
                            interval = Duration::from_millis(r.heartbeat_interval_ms.clamp(200, 60_000) as u64);
                        }
                    }
                    Ok((s, answer)) if !(200..300).contains(&s) => {
                        tracing::warn!(status = s, %answer, "heartbeat refused");
                    }
                    Ok(_) => {}
                    Err(e) => tracing::warn!(error = %e, "heartbeat not sent"),
                }
            }
        });
        Ok(registered)
    }

    /// Drain (`503` to new deliveries), wait up to `grace` for the runs in progress, stop
    /// heartbeating and deregister.
    pub async fn shutdown(&self, grace: Duration) {
        self.drain();
        let deadline = tokio::time::Instant::now() + grace;
        loop {
            let idle = self.inner.idle.notified();
            if self.inner.running.lock().unwrap().is_empty() {
                break;
            }
            if tokio::time::timeout_at(deadline, idle).await.is_err() {
                tracing::warn!(running = ?self.running_runs(), "shutting down with runs still in progress");
                break;
            }
        }
        if let Some(stop) = self.inner.heartbeats.lock().unwrap().take() {
            stop.cancel();
        }
        let registered = self.inner.registration.lock().unwrap().take();
        if let (Some(r), Some(calls)) = (registered, self.inner.calls.clone()) {
            let body = DeregisterRequest { executor_id: &r.executor_id };
            match calls.post("/api/v1/executors/deregister", &body).await {
                Ok((s, _)) if (200..300).contains(&s) => {}
                Ok((s, answer)) => tracing::warn!(status = s, %answer, "deregister refused"),
                Err(e) => tracing::warn!(error = %e, "deregister not sent"),
            }
        }
    }

    /// Serve on `addr` until Ctrl-C or SIGTERM: register (as the builder's address, or
    /// `http://<bound address>/`), heartbeat, then drain, wait for the runs in progress and
    /// deregister.
    pub async fn serve(&self, addr: impl tokio::net::ToSocketAddrs) -> std::io::Result<()> {
        let listener = tokio::net::TcpListener::bind(addr).await?;
        self.serve_listener(listener, shutdown_signal()).await
    }

    /// [`Executor::serve`] on a bound listener, until `signal` completes.
    pub async fn serve_listener(
        &self,
        listener: tokio::net::TcpListener,
        signal: impl Future<Output = ()> + Send + 'static,
    ) -> std::io::Result<()> {
        let local = listener.local_addr()?;
        let address = self.inner.address.clone().unwrap_or_else(|| {
            let host = if local.ip().is_unspecified() { "127.0.0.1".to_string() } else { local.ip().to_string() };
            let host = if local.is_ipv6() && !local.ip().is_unspecified() { format!("[{host}]") } else { host };
            format!("http://{host}:{}/", local.port())
        });
        if self.inner.register && self.inner.calls.is_some() {
            let r = self.start(&address).await.map_err(std::io::Error::other)?;
            tracing::info!(executor_id = %r.executor_id, %address, handlers = ?self.handlers(), "registered with Sundial");
        }
        let ex = self.clone();
        let grace = self.inner.grace;
        axum::serve(listener, self.router())
            .with_graceful_shutdown(async move {
                signal.await;
                ex.shutdown(grace).await;
            })
            .await
    }
}

async fn register(inner: &Arc<Inner>, calls: &Calls, address: &str) -> Result<Registered, ExecutorError> {
    let handlers = Executor { inner: inner.clone() }.handlers();
    let body = RegisterRequest {
        address,
        name: inner.name.as_deref(),
        tags: &inner.tags,
        metadata: inner.metadata.as_ref(),
        handlers,
    };
    let (status, answer) = calls.post("/api/v1/executors/register", &body).await?;
    if !(200..300).contains(&status) {
        return Err(ExecutorError::Refused { status, body: answer });
    }
    let r: Registered =
        serde_json::from_value(answer.clone()).map_err(|_| ExecutorError::Refused { status, body: answer })?;
    *inner.registration.lock().unwrap() = Some(r.clone());
    Ok(r)
}

/// Ctrl-C, or SIGTERM on Unix.
pub async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        _ = ctrl_c => {}
        _ = term => {}
    }
}
