//! The HTTP server: an accept loop on hyper (instead of `axum::serve`) so that a slow or
//! silent client costs a socket for seconds, not forever, and cannot take the API away from
//! everyone else (issue 26, finding 3).
//!
//! - **Header time limit**: a connection must deliver a request's headers within
//!   `header_timeout` of its first byte (of being accepted, for a fresh connection).
//! - **Body time limit**: a request's whole body must arrive within `body_timeout` of its
//!   headers; a body still arriving then is cut off: `408` (JSON), and the connection closes.
//! - **Idle limit**: a keep-alive connection with no request for `idle_timeout` is closed.
//! - **Connection caps**: at most `max_connections_per_peer` from one IP address and
//!   `max_connections` in all. At a cap a new connection displaces the connection that has
//!   been idle the longest (half-open, or between requests) — the peer's own at the peer
//!   cap —; only when every such connection is busy with a request is the new one closed.
//!   So connections that never send a request cannot shut a fresh client (a health probe)
//!   out: each costs its holder one slot only until newer connections push it out.
//!
//! The limits are checked by one watchdog per connection ([`ConnClock`]) rather than by
//! hyper's `header_read_timeout`: hyper restarts that timer as soon as a response is
//! written, which would make it the keep-alive idle limit as well.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::convert::Infallible;
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::http::{HeaderValue, Request, Response, StatusCode, header};
use axum::response::IntoResponse;
use bytes::Bytes;
use hyper::body::{Frame, Incoming, SizeHint};
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto::Builder;
use sundial_api::error::ApiError;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{Notify, watch};
use tokio::time::{Instant, Sleep};
use tower::ServiceExt;

/// Connection limits (settings `http_*`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HttpLimits {
    pub header_timeout: Duration,
    pub body_timeout: Duration,
    pub idle_timeout: Duration,
    pub max_connections: usize,
    pub max_connections_per_peer: usize,
}

// ---------------------------------------------------------------------------------------
// Admission: which connections are open, which are idle, who is displaced. Pure.
// ---------------------------------------------------------------------------------------

/// What to do with a newly accepted connection.
#[derive(Debug, PartialEq, Eq)]
pub enum Admission<T> {
    /// Serve it under this id.
    Admit(u64),
    /// Serve it under this id; the longest-idle connection (its payload given) was removed
    /// to make room and must be closed.
    Displace(u64, T),
    /// Close it at once: its peer already holds `max_connections_per_peer`, all busy.
    PeerFull,
    /// Close it at once: `max_connections` are open and every one is busy with a request.
    Full,
}

struct Entry<T> {
    peer: IpAddr,
    /// Key in `idle` while the connection has no request in progress.
    idle_key: Option<u64>,
    payload: T,
}

/// The open connections, by id; `T` is what the server needs to close one (its signal).
pub struct ConnTable<T> {
    max_total: usize,
    max_per_peer: usize,
    next: u64,
    conns: HashMap<u64, Entry<T>>,
    /// Idle connections, oldest idleness first (keys only grow).
    idle: BTreeMap<u64, u64>,
    /// The same keys, by peer.
    peer_idle: HashMap<IpAddr, BTreeSet<u64>>,
    per_peer: HashMap<IpAddr, usize>,
}

impl<T> ConnTable<T> {
    pub fn new(max_total: usize, max_per_peer: usize) -> Self {
        Self {
            max_total: max_total.max(1),
            max_per_peer: max_per_peer.max(1),
            next: 0,
            conns: HashMap::new(),
            idle: BTreeMap::new(),
            peer_idle: HashMap::new(),
            per_peer: HashMap::new(),
        }
    }

    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.conns.len()
    }

    fn key(&mut self) -> u64 {
        self.next += 1;
        self.next
    }

    /// A new connection from `peer`; it starts idle (it has not sent a request yet). At the
    /// peer's cap it displaces that peer's longest-idle connection, at the total cap the
    /// longest-idle connection of all; with none idle to displace, it is refused.
    pub fn admit(&mut self, peer: IpAddr, payload: T) -> Admission<T> {
        let displaced = if self.per_peer.get(&peer).copied().unwrap_or(0) >= self.max_per_peer {
            let oldest = self.peer_idle.get(&peer).and_then(|keys| keys.first()).and_then(|k| self.idle.get(k));
            let Some(&oldest) = oldest else { return Admission::PeerFull };
            self.remove(oldest)
        } else if self.conns.len() >= self.max_total {
            let Some((_, &oldest)) = self.idle.iter().next() else { return Admission::Full };
            self.remove(oldest)
        } else {
            None
        };
        let id = self.key();
        self.conns.insert(id, Entry { peer, idle_key: None, payload });
        *self.per_peer.entry(peer).or_insert(0) += 1;
        self.idle(id);
        match displaced {
            Some(p) => Admission::Displace(id, p),
            None => Admission::Admit(id),
        }
    }

    /// The connection started a request: it cannot be displaced until it is idle again.
    pub fn busy(&mut self, id: u64) {
        if let Some(e) = self.conns.get_mut(&id)
            && let Some(k) = e.idle_key.take()
        {
            self.idle.remove(&k);
            Self::unindex(&mut self.peer_idle, e.peer, k);
        }
    }

    fn unindex(peer_idle: &mut HashMap<IpAddr, BTreeSet<u64>>, peer: IpAddr, key: u64) {
        if let Some(keys) = peer_idle.get_mut(&peer) {
            keys.remove(&key);
            if keys.is_empty() {
                peer_idle.remove(&peer);
            }
        }
    }

    /// The connection finished its requests: it is the newest idle one.
    pub fn idle(&mut self, id: u64) {
        let key = self.key();
        if let Some(e) = self.conns.get_mut(&id) {
            if let Some(old) = e.idle_key.replace(key) {
                self.idle.remove(&old);
                Self::unindex(&mut self.peer_idle, e.peer, old);
            }
            self.idle.insert(key, id);
            self.peer_idle.entry(e.peer).or_default().insert(key);
        }
    }

    /// The connection is gone (closed, or displaced); its payload, if it was still here.
    pub fn remove(&mut self, id: u64) -> Option<T> {
        let e = self.conns.remove(&id)?;
        if let Some(k) = e.idle_key {
            self.idle.remove(&k);
            Self::unindex(&mut self.peer_idle, e.peer, k);
        }
        if let Some(n) = self.per_peer.get_mut(&e.peer) {
            *n -= 1;
            if *n == 0 {
                self.per_peer.remove(&e.peer);
            }
        }
        Some(e.payload)
    }
}

// ---------------------------------------------------------------------------------------
// Per-connection time limits.
// ---------------------------------------------------------------------------------------

#[derive(Debug)]
struct ClockState {
    /// Requests in progress (HTTP/2 may have several).
    inflight: usize,
    /// At least one request was served (the idle limit applies, not the header limit).
    served: bool,
    /// When the connection last became idle (accepted, or its last request answered).
    idle_since: Instant,
    /// The first byte read while idle: a request's headers are arriving.
    first_byte: Option<Instant>,
}

/// When must an idle connection be closed? `None` while a request is in progress (a request's
/// body has its own limit; a handler's time is the handler's). Pure.
fn idle_deadline(s: &ClockState, limits: &HttpLimits) -> Option<Instant> {
    if s.inflight > 0 {
        None
    } else if let Some(first) = s.first_byte {
        Some(first + limits.header_timeout)
    } else if !s.served {
        Some(s.idle_since + limits.header_timeout)
    } else {
        Some(s.idle_since + limits.idle_timeout)
    }
}

/// One connection's clock, shared by its socket (bytes read), its service (requests) and
/// its watchdog.
struct ConnClock {
    id: u64,
    state: Mutex<ClockState>,
    changed: Notify,
    table: Arc<Mutex<ConnTable<Arc<Notify>>>>,
}

impl ConnClock {
    fn read_bytes(&self) {
        let mut s = self.state.lock().expect("not poisoned");
        if s.inflight == 0 && s.first_byte.is_none() {
            s.first_byte = Some(Instant::now());
            drop(s);
            self.changed.notify_one();
        }
    }

    fn request_started(&self) {
        let mut s = self.state.lock().expect("not poisoned");
        s.inflight += 1;
        s.first_byte = None;
        if s.inflight == 1 {
            self.table.lock().expect("not poisoned").busy(self.id);
        }
        drop(s);
        self.changed.notify_one();
    }

    fn request_ended(&self) {
        let mut s = self.state.lock().expect("not poisoned");
        s.inflight -= 1;
        s.served = true;
        if s.inflight == 0 {
            s.idle_since = Instant::now();
            s.first_byte = None;
            self.table.lock().expect("not poisoned").idle(self.id);
        }
        drop(s);
        self.changed.notify_one();
    }

    /// Resolves when the connection has been idle (or reading headers) for too long.
    async fn expired(&self, limits: &HttpLimits) {
        loop {
            let notified = self.changed.notified();
            let deadline = idle_deadline(&self.state.lock().expect("not poisoned"), limits);
            match deadline {
                Some(d) if d <= Instant::now() => return,
                Some(d) => {
                    tokio::select! {
                        () = tokio::time::sleep_until(d) => {}
                        () = notified => {}
                    }
                }
                None => notified.await,
            }
        }
    }
}

/// A request in progress on a connection, for as long as its service future lives.
struct InFlight(Arc<ConnClock>);

impl InFlight {
    fn new(clock: Arc<ConnClock>) -> Self {
        clock.request_started();
        Self(clock)
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.request_ended();
    }
}

/// The socket, telling its clock when bytes arrive.
struct Watched {
    io: TcpStream,
    clock: Arc<ConnClock>,
}

impl AsyncRead for Watched {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let r = Pin::new(&mut self.io).poll_read(cx, buf);
        if matches!(r, Poll::Ready(Ok(()))) && buf.filled().len() > before {
            self.clock.read_bytes();
        }
        r
    }
}

impl AsyncWrite for Watched {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.io).poll_write(cx, buf)
    }
    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_flush(cx)
    }
    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_shutdown(cx)
    }
    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.io).poll_write_vectored(cx, bufs)
    }
    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }
}

/// The body was still arriving when its time was up.
#[derive(Debug)]
pub struct BodyTimedOut(Duration);

impl std::fmt::Display for BodyTimedOut {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "the request body did not arrive within {:?}", self.0)
    }
}

impl std::error::Error for BodyTimedOut {}

/// A request body that must arrive whole within a time limit from the request's start.
struct DeadlineBody {
    inner: Incoming,
    deadline: Pin<Box<Sleep>>,
    limit: Duration,
    timed_out: Arc<AtomicBool>,
}

impl hyper::body::Body for DeadlineBody {
    type Data = Bytes;
    type Error = Box<dyn std::error::Error + Send + Sync>;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        if let Poll::Ready(r) = Pin::new(&mut self.inner).poll_frame(cx) {
            return Poll::Ready(r.map(|f| f.map_err(Into::into)));
        }
        if self.deadline.as_mut().poll(cx).is_ready() {
            self.timed_out.store(true, Ordering::Relaxed);
            return Poll::Ready(Some(Err(Box::new(BodyTimedOut(self.limit)))));
        }
        Poll::Pending
    }
    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }
    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

fn body_timeout_response(limit: Duration) -> Response<Body> {
    let mut r = ApiError::new(
        StatusCode::REQUEST_TIMEOUT,
        "body_timeout",
        format!("the request body did not arrive within {} s", limit.as_secs_f64()),
    )
    .with_details(serde_json::json!({"field": "body", "problem": "too slow"}))
    .into_response();
    r.headers_mut().insert(header::CONNECTION, HeaderValue::from_static("close"));
    r
}

// ---------------------------------------------------------------------------------------
// The accept loop.
// ---------------------------------------------------------------------------------------

/// Serve `router` on `listener` until `signal` resolves; then stop accepting, let open
/// requests finish (idle connections close at once) and return when every connection is
/// closed. The caller bounds that wait (the shutdown grace).
pub async fn serve(
    listener: TcpListener,
    router: Router,
    limits: HttpLimits,
    signal: impl Future<Output = ()> + Send + 'static,
) {
    let table: Arc<Mutex<ConnTable<Arc<Notify>>>> =
        Arc::new(Mutex::new(ConnTable::new(limits.max_connections, limits.max_connections_per_peer)));
    let (stop_tx, stop_rx) = watch::channel(false);
    let (close_tx, close_rx) = watch::channel(());
    let mut signal = std::pin::pin!(signal);
    let mut refused_logged: Option<Instant> = None;
    loop {
        let (io, peer) = tokio::select! {
            () = &mut signal => break,
            r = listener.accept() => match r {
                Ok(c) => c,
                Err(e) => {
                    // EMFILE and friends: back off a little instead of spinning.
                    tracing::warn!(error = %e, "accept error");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            },
        };
        let displace = Arc::new(Notify::new());
        let admission = table.lock().expect("not poisoned").admit(peer.ip(), displace.clone());
        let id = match admission {
            Admission::Admit(id) => id,
            Admission::Displace(id, other) => {
                other.notify_one();
                id
            }
            refusal @ (Admission::PeerFull | Admission::Full) => {
                if refused_logged.is_none_or(|t| t.elapsed() >= Duration::from_secs(10)) {
                    refused_logged = Some(Instant::now());
                    tracing::warn!(%peer, reason = ?refusal, ?limits, "connection refused: over the connection cap");
                }
                drop(io);
                continue;
            }
        };
        let _ = io.set_nodelay(true);
        spawn_connection(
            io,
            peer,
            id,
            displace,
            table.clone(),
            router.clone(),
            limits,
            stop_rx.clone(),
            close_rx.clone(),
        );
    }
    drop(listener);
    let _ = stop_tx.send(true);
    drop(close_rx);
    close_tx.closed().await;
}

#[allow(clippy::too_many_arguments)]
fn spawn_connection(
    io: TcpStream,
    peer: SocketAddr,
    id: u64,
    displaced: Arc<Notify>,
    table: Arc<Mutex<ConnTable<Arc<Notify>>>>,
    router: Router,
    limits: HttpLimits,
    mut stop_rx: watch::Receiver<bool>,
    close_rx: watch::Receiver<()>,
) {
    let clock = Arc::new(ConnClock {
        id,
        state: Mutex::new(ClockState { inflight: 0, served: false, idle_since: Instant::now(), first_byte: None }),
        changed: Notify::new(),
        table: table.clone(),
    });
    let service_clock = clock.clone();
    let service = hyper::service::service_fn(move |req: Request<Incoming>| {
        let router = router.clone();
        let in_flight = InFlight::new(service_clock.clone());
        async move {
            let _in_flight = in_flight;
            let timed_out = Arc::new(AtomicBool::new(false));
            let limit = limits.body_timeout;
            let req = req.map(|inner| {
                Body::new(DeadlineBody {
                    inner,
                    deadline: Box::pin(tokio::time::sleep(limit)),
                    limit,
                    timed_out: timed_out.clone(),
                })
            });
            let response = router.oneshot(req).await.unwrap_or_else(|e: Infallible| match e {});
            if timed_out.load(Ordering::Relaxed) {
                return Ok::<_, Infallible>(body_timeout_response(limit));
            }
            Ok(response)
        }
    });
    tokio::spawn(async move {
        let builder = Builder::new(TokioExecutor::new());
        let watched = Watched { io, clock: clock.clone() };
        let mut conn = std::pin::pin!(builder.serve_connection_with_upgrades(TokioIo::new(watched), service));
        let mut shutting_down = *stop_rx.borrow();
        if shutting_down {
            conn.as_mut().graceful_shutdown();
        }
        loop {
            tokio::select! {
                r = conn.as_mut() => {
                    if let Err(e) = r {
                        tracing::trace!(%peer, error = %e, "connection ended with an error");
                    }
                    break;
                }
                () = displaced.notified() => {
                    tracing::debug!(%peer, "idle connection displaced by a newer one at the connection cap");
                    break;
                }
                () = clock.expired(&limits) => {
                    tracing::debug!(%peer, "connection closed: header or idle time limit");
                    break;
                }
                r = stop_rx.changed(), if !shutting_down => {
                    if r.is_ok() && *stop_rx.borrow() {
                        shutting_down = true;
                        conn.as_mut().graceful_shutdown();
                    }
                }
            }
        }
        table.lock().expect("not poisoned").remove(id);
        drop(close_rx);
    });
}

// ---------------------------------------------------------------------------------------
// File descriptors.
// ---------------------------------------------------------------------------------------

/// Raise the soft open-file limit to the hard limit; returns the limit now in force.
pub fn raise_nofile_limit() -> io::Result<u64> {
    let mut lim = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: getrlimit writes into the struct we own.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } != 0 {
        return Err(io::Error::last_os_error());
    }
    if lim.rlim_cur < lim.rlim_max {
        let raised = libc::rlimit { rlim_cur: lim.rlim_max, rlim_max: lim.rlim_max };
        // SAFETY: setrlimit reads the struct we own.
        if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &raised) } == 0 {
            return Ok(raised.rlim_cur);
        }
    }
    Ok(lim.rlim_cur)
}

/// Descriptors the node needs besides the API's connections: the database pool, one per
/// delivery in flight, and a margin (listener, log, runner files, SQLite's side files,
/// the runtime's own).
pub fn fd_reserved(db_connections: u32, max_inflight: usize) -> u64 {
    u64::from(db_connections) + max_inflight as u64 + 256
}

/// The connection cap that fits the open-file limit: `wanted`, or what is left of `limit`
/// once `reserved` is taken (at least 16). Pure.
pub fn fit_connection_cap(wanted: usize, limit: u64, reserved: u64) -> usize {
    let room = limit.saturating_sub(reserved);
    (wanted as u64).min(room).max(16) as usize
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(n: u8) -> IpAddr {
        IpAddr::from([10, 0, 0, n])
    }

    #[test]
    fn a_peer_at_its_cap_displaces_its_own_idle_connection_or_is_refused() {
        let mut t = ConnTable::new(10, 2);
        let Admission::Admit(other) = t.admit(ip(2), 20) else { panic!() };
        let Admission::Admit(a) = t.admit(ip(1), 1) else { panic!() };
        let Admission::Admit(b) = t.admit(ip(1), 2) else { panic!() };
        // Peer 2's connection is idle longest, but peer 1 displaces only its own.
        assert!(matches!(t.admit(ip(1), 3), Admission::Displace(_, 1)));
        assert_eq!(t.len(), 3);
        t.busy(b);
        let Admission::Displace(c, 3) = t.admit(ip(1), 4) else { panic!("the third was the only idle one") };
        t.busy(c);
        assert_eq!(t.admit(ip(1), 5), Admission::PeerFull, "every connection of the peer is busy");
        assert!(matches!(t.admit(ip(3), 6), Admission::Admit(_)), "other peers still get in");
        assert!(t.remove(a).is_none() && t.remove(other) == Some(20));
    }

    #[test]
    fn at_the_cap_the_longest_idle_connection_makes_room() {
        let mut t = ConnTable::new(3, 10);
        let ids: Vec<u64> = (0..3)
            .map(|n| match t.admit(ip(1), n) {
                Admission::Admit(id) => id,
                other => panic!("{other:?}"),
            })
            .collect();
        // The first is busy with a request; the second became idle after the third.
        t.busy(ids[0]);
        t.busy(ids[1]);
        t.idle(ids[1]);
        match t.admit(ip(2), 9) {
            Admission::Displace(_, displaced) => assert_eq!(displaced, 2, "the third was idle longest"),
            other => panic!("{other:?}"),
        }
        assert_eq!(t.len(), 3);
        match t.admit(ip(2), 10) {
            Admission::Displace(_, displaced) => assert_eq!(displaced, 1),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn at_the_cap_with_every_connection_busy_a_new_one_is_refused() {
        let mut t = ConnTable::new(2, 10);
        for _ in 0..2 {
            let Admission::Admit(id) = t.admit(ip(1), ()) else { panic!() };
            t.busy(id);
        }
        assert_eq!(t.admit(ip(2), ()), Admission::Full);
    }

    #[test]
    fn a_removed_connection_frees_its_peer_slot_once() {
        let mut t = ConnTable::new(10, 1);
        let Admission::Admit(id) = t.admit(ip(1), ()) else { panic!() };
        t.busy(id);
        assert_eq!(t.admit(ip(1), ()), Admission::PeerFull);
        assert_eq!(t.remove(id), Some(()));
        assert_eq!(t.remove(id), None, "a second removal (displaced, then closed) changes nothing");
        assert!(matches!(t.admit(ip(1), ()), Admission::Admit(_)));
        assert_eq!(t.len(), 1);
    }

    #[test]
    fn deadlines_header_limit_fresh_and_mid_request_idle_limit_between_requests() {
        let limits = HttpLimits {
            header_timeout: Duration::from_secs(10),
            body_timeout: Duration::from_secs(30),
            idle_timeout: Duration::from_secs(60),
            max_connections: 1,
            max_connections_per_peer: 1,
        };
        let t0 = Instant::now();
        let mut s = ClockState { inflight: 0, served: false, idle_since: t0, first_byte: None };
        assert_eq!(idle_deadline(&s, &limits), Some(t0 + Duration::from_secs(10)), "fresh: header limit");
        s.inflight = 1;
        assert_eq!(idle_deadline(&s, &limits), None, "a request in progress");
        s.inflight = 0;
        s.served = true;
        assert_eq!(idle_deadline(&s, &limits), Some(t0 + Duration::from_secs(60)), "keep-alive: idle limit");
        let t1 = t0 + Duration::from_secs(5);
        s.first_byte = Some(t1);
        assert_eq!(idle_deadline(&s, &limits), Some(t1 + Duration::from_secs(10)), "next headers arriving");
    }

    #[test]
    fn the_connection_cap_fits_the_descriptor_budget() {
        assert_eq!(fit_connection_cap(10_000, 1_048_576, fd_reserved(10, 512)), 10_000);
        assert_eq!(fit_connection_cap(10_000, 1024, fd_reserved(10, 512)), 1024 - 778);
        assert_eq!(fit_connection_cap(10_000, 256, fd_reserved(10, 512)), 16, "never below 16");
    }
}
