//! Connection hygiene on the real binary (issue 26, finding 3): a client that sends half a
//! request, trickles a body or holds thousands of silent connections costs the node a socket
//! for seconds, and `/healthz` keeps answering a fresh client throughout.

mod common;

use std::io::{BufRead, BufReader};
use std::os::unix::process::CommandExt;
use std::process::Stdio;
use std::time::{Duration, Instant};

use common::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// A `sundial serve` on a fresh SQLite file, without its built-in runner, with `envs`; its
/// open-file limit (soft and hard) set to `nofile` when given.
fn start(envs: &[(&str, &str)], nofile: Option<u64>) -> (Node, tempfile::TempDir) {
    let tmp = tempfile::tempdir().unwrap();
    let log = tmp.path().join("node.log");
    let db = format!("sqlite://{}", tmp.path().join("sundial.db").display());
    let mut cmd = sundial();
    cmd.args(["serve", "--database-url", &db, "--node-id", "node_conn", "--listen", "127.0.0.1:0"])
        .env("SUNDIAL_RUNNER", "false")
        .envs(envs.iter().copied());
    if let Some(n) = nofile {
        // SAFETY: setrlimit only, between fork and exec.
        unsafe {
            cmd.pre_exec(move || {
                let lim = libc::rlimit { rlim_cur: n, rlim_max: n };
                if libc::setrlimit(libc::RLIMIT_NOFILE, &lim) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
    }
    let log_file = std::fs::File::create(&log).unwrap();
    let mut child = cmd.stdout(Stdio::piped()).stderr(Stdio::from(log_file)).spawn().expect("spawn sundial");
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut base = None;
    for line in lines.by_ref() {
        let Ok(line) = line else { break };
        if let Some(url) = line.strip_prefix("Sundial listening on ") {
            base = Some(url.trim().to_string());
            break;
        }
    }
    std::thread::spawn(move || for _ in lines {});
    let base = base.unwrap_or_else(|| panic!("no URL; log:\n{}", tail(&log, 40)));
    (Node { child, base, node_id: "node_conn".into(), log }, tmp)
}

fn addr(node: &Node) -> String {
    node.base.trim_start_matches("http://").to_string()
}

/// Read until the server closes the connection or `within` passes; `Some(bytes)` if closed.
async fn closed_within(s: &mut TcpStream, within: Duration) -> Option<Vec<u8>> {
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    let until = tokio::time::Instant::now() + within;
    loop {
        match tokio::time::timeout_at(until, s.read(&mut buf)).await {
            Err(_) => return None,
            Ok(Ok(0)) | Ok(Err(_)) => return Some(got),
            Ok(Ok(n)) => got.extend_from_slice(&buf[..n]),
        }
    }
}

async fn healthz(base: &str) -> u16 {
    let client = reqwest::Client::builder().timeout(Duration::from_secs(5)).build().unwrap();
    match client.get(format!("{base}/healthz")).send().await {
        Ok(r) => r.status().as_u16(),
        Err(e) => panic!("GET /healthz from a fresh client failed: {e}"),
    }
}

#[tokio::test]
async fn half_sent_headers_and_idle_keep_alive_are_closed_in_time() {
    let (node, _tmp) =
        start(&[("SUNDIAL_HTTP_HEADER_TIMEOUT_MS", "1000"), ("SUNDIAL_HTTP_IDLE_TIMEOUT_MS", "1500")], None);
    // The request line and nothing more.
    let t0 = Instant::now();
    let mut s = TcpStream::connect(addr(&node)).await.unwrap();
    s.write_all(b"GET /healthz HTTP/1.1\r\n").await.unwrap();
    assert!(closed_within(&mut s, Duration::from_secs(4)).await.is_some(), "half-sent headers held open");
    assert!(t0.elapsed() >= Duration::from_millis(900), "closed before the limit: {:?}", t0.elapsed());
    // Nothing at all.
    let mut silent = TcpStream::connect(addr(&node)).await.unwrap();
    assert!(closed_within(&mut silent, Duration::from_secs(4)).await.is_some(), "a silent connection held open");
    // A whole request, then nothing: the idle limit.
    let mut kept = TcpStream::connect(addr(&node)).await.unwrap();
    kept.write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n").await.unwrap();
    let t1 = Instant::now();
    let got = closed_within(&mut kept, Duration::from_secs(5)).await.expect("idle keep-alive held open");
    assert!(String::from_utf8_lossy(&got).starts_with("HTTP/1.1 200"), "{}", String::from_utf8_lossy(&got));
    assert!(t1.elapsed() >= Duration::from_millis(1400), "idle closed before its limit: {:?}", t1.elapsed());
}

#[tokio::test]
async fn a_trickled_body_is_cut_off_with_408() {
    let (node, _tmp) = start(&[("SUNDIAL_HTTP_BODY_TIMEOUT_MS", "1000")], None);
    let mut s = TcpStream::connect(addr(&node)).await.unwrap();
    // The heartbeat endpoint reads its body before checking the signature.
    s.write_all(
        b"POST /api/v1/executors/heartbeat HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n",
    )
    .await
    .unwrap();
    let (mut rd, mut wr) = s.into_split();
    let trickle = tokio::spawn(async move {
        for _ in 0..1000 {
            if wr.write_all(b" ").await.is_err() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    });
    let t0 = Instant::now();
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    while !got.windows(4).any(|w| w == b"\r\n\r\n") {
        match tokio::time::timeout(Duration::from_secs(5), rd.read(&mut buf)).await {
            Ok(Ok(n)) if n > 0 => got.extend_from_slice(&buf[..n]),
            other => panic!("no answer to a trickled body within 5 s ({other:?}) after {:?}", t0.elapsed()),
        }
    }
    let text = String::from_utf8_lossy(&got).to_string();
    assert!(text.starts_with("HTTP/1.1 408"), "{text}");
    assert!(text.to_ascii_lowercase().contains("connection: close"), "{text}");
    trickle.abort();
}

/// A peer at its cap: a new connection pushes out the peer's longest-idle one (a half-sent
/// request), and is closed at once when every one of the peer's connections is busy.
#[tokio::test]
async fn a_peer_at_its_connection_cap_displaces_its_idle_connection_or_is_closed() {
    let (node, _tmp) = start(&[("SUNDIAL_MAX_CONNECTIONS_PER_PEER", "4")], None);
    // Four busy connections: each sent a request's headers and is still sending its body.
    let mut busy = Vec::new();
    for _ in 0..4 {
        let mut s = TcpStream::connect(addr(&node)).await.unwrap();
        s.write_all(b"POST /api/v1/executors/heartbeat HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{")
            .await
            .unwrap();
        busy.push(s);
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    let mut fifth = TcpStream::connect(addr(&node)).await.unwrap();
    let _ = fifth.write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n").await;
    let got = closed_within(&mut fifth, Duration::from_secs(2)).await.expect("a fifth connection was kept");
    assert!(got.is_empty(), "a fifth connection was served: {}", String::from_utf8_lossy(&got));
    // One busy connection finishes its request and stays open, idle: the next newcomer
    // takes its place.
    busy[0].write_all(&[b' '; 98]).await.unwrap();
    busy[0].write_all(b"}").await.unwrap();
    let mut head = [0u8; 12];
    busy[0].read_exact(&mut head).await.unwrap();
    assert!(head.starts_with(b"HTTP/1.1 "), "{}", String::from_utf8_lossy(&head));
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(healthz(&node.base).await, 200, "the newcomer displaced the idle connection");
    assert!(closed_within(&mut busy[0], Duration::from_secs(2)).await.is_some(), "the idle one was closed");
    drop(busy);
}

/// The attack, scaled to the test: thousands of connections each sending only a
/// request line, more than the node's open-file limit can hold. A fresh client's `/healthz`
/// still answers 200 (today the node runs out of descriptors and stops accepting).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn health_answers_while_five_thousand_half_open_connections_are_held() {
    // This process holds the 5,000 client sockets.
    let mut lim = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: plain rlimit calls on structs we own.
    unsafe {
        assert_eq!(libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim), 0);
        lim.rlim_cur = lim.rlim_max;
        assert_eq!(libc::setrlimit(libc::RLIMIT_NOFILE, &lim), 0);
    }
    assert!(lim.rlim_cur >= 6_000, "the test needs 6,000 descriptors; the hard limit is {}", lim.rlim_max);
    // The node may open 4,096 files: fewer than the attack's connections.
    let (node, _tmp) = start(
        &[
            ("SUNDIAL_HTTP_HEADER_TIMEOUT_MS", "120000"),
            ("SUNDIAL_MAX_CONNECTIONS", "2000"),
            ("SUNDIAL_MAX_CONNECTIONS_PER_PEER", "100000"),
        ],
        Some(4_096),
    );
    let target = addr(&node);
    let mut held = Vec::with_capacity(5_000);
    for i in 0..5_000 {
        match tokio::time::timeout(Duration::from_secs(5), TcpStream::connect(&target)).await {
            Ok(Ok(mut s)) => {
                let _ = s.write_all(b"GET /healthz HTTP/1.1\r\n").await;
                held.push(s);
            }
            Ok(Err(e)) => panic!("connection {i}: {e}"),
            Err(_) => panic!("connection {i}: not accepted within 5 s (the node stopped accepting)"),
        }
    }
    // Give the node time to accept the backlog (and, today, to run out of descriptors).
    tokio::time::sleep(Duration::from_secs(1)).await;
    for _ in 0..3 {
        assert_eq!(healthz(&node.base).await, 200);
    }
    assert_eq!(held.len(), 5_000);
    drop(held);
}
