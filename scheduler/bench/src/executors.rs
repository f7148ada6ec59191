//! `sundial-bench executors`: how many deliveries a second one executor process sustains,
//! through an SDK and written without one (issue 27), measured in the same run.
//!
//! **What it measures**: each case is a command that starts one executor process listening on
//! `127.0.0.1:$PORT` with the app secret `$SUNDIAL_SECRET` (both set here). It is first
//! checked to do its duty: a signed delivery is answered `200 {"status": "succeeded",
//! "output": {"greeted": "world"}}`, the same `webhook-id` again gets the same answer, and a
//! bad signature is refused with a 4xx. Then `--concurrency` keep-alive connections send it
//! deliveries exactly as Sundial sends them (the body and headers of `sdks/vectors/
//! deliveries.json`'s plain delivery, each with a new run id and `webhook-id`, signed with
//! the current timestamp), each sent as soon as the previous answer is read: `--warmup`
//! seconds unmeasured, then `--window` seconds counted. It reports answered deliveries/s,
//! the latency of each exchange, the executor's CPU (% of one core and ms per delivery), the
//! load generator's own CPU, and what else the machine did. Cases run in turn, `--rounds`
//! times alternately; pairs named `<x>-sdk` and `<x>-bare` get the ratio of their medians.
//!
//! **Not measured**: handlers that do work (the handler returns its parameter), asynchronous
//! answers, logs, several executor processes, Sundial itself (the deliveries come from this
//! generator, not a `sundial serve`: what is measured is the executor's side of the exchange).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::Context as _;
use clap::Parser;
use serde::Serialize;
use serde_json::{Value, json};

use crate::db::free_port;
use crate::measure::{Pct, pct};
use crate::sign::Key;
use crate::{cpu, cpu_model, say};

#[derive(Parser, Debug)]
#[command(
    name = "sundial-bench executors",
    about = "Deliveries per second one executor process sustains, through an SDK and without one, in the same run"
)]
pub struct ExecutorsArgs {
    /// `NAME=COMMAND` (repeatable): starts one executor on 127.0.0.1:$PORT with $SUNDIAL_SECRET
    /// (run by `sh -c`). Name pairs `<x>-sdk` / `<x>-bare` to get their ratio.
    #[arg(long = "case", value_parser = parse_case, required = true)]
    cases: Vec<(String, String)>,
    /// Connections sending deliveries, each waiting for its answer before the next.
    #[arg(long, default_value_t = 32)]
    concurrency: usize,
    /// Seconds of load before the window (not counted).
    #[arg(long, default_value_t = 3)]
    warmup: u64,
    /// Seconds counted.
    #[arg(long, default_value_t = 10)]
    window: u64,
    /// Times each case is measured, alternately with the others.
    #[arg(long, default_value_t = 2)]
    rounds: usize,
    /// One JSON object on stdout (the text goes to stderr).
    #[arg(long)]
    json: bool,
}

fn parse_case(s: &str) -> Result<(String, String), String> {
    let (name, cmd) = s.split_once('=').ok_or_else(|| format!("`{s}`: expected NAME=COMMAND"))?;
    if name.is_empty() || cmd.trim().is_empty() {
        return Err(format!("`{s}`: expected NAME=COMMAND"));
    }
    Ok((name.to_string(), cmd.to_string()))
}

/// One case measured once.
#[derive(Debug, Serialize)]
struct Measured {
    case: String,
    round: usize,
    deliveries_per_s: f64,
    /// Answers other than 200 in the window (each one a failure of the executor).
    errors: u64,
    latency_ms: Pct,
    executor_pct_of_one_core: Option<f64>,
    executor_cpu_ms_per_delivery: Option<f64>,
    generator_pct_of_one_core: Option<f64>,
    everything_else_pct_of_one_core: Option<f64>,
}

#[derive(Debug, Serialize)]
struct Summary {
    case: String,
    median_deliveries_per_s: f64,
    median_cpu_ms_per_delivery: Option<f64>,
}

#[derive(Debug, Serialize)]
struct Ratio {
    pair: String,
    sdk_over_bare_deliveries_per_s: f64,
    sdk_over_bare_cpu_per_delivery: Option<f64>,
}

#[derive(Debug, Serialize)]
struct ExecutorsReport {
    machine: String,
    cores: usize,
    concurrency: usize,
    warmup_s: u64,
    window_s: u64,
    runs: Vec<Measured>,
    summary: Vec<Summary>,
    ratios: Vec<Ratio>,
}

pub async fn run(args: ExecutorsArgs) -> anyhow::Result<()> {
    anyhow::ensure!(
        args.concurrency > 0 && args.window > 0 && args.rounds > 0,
        "--concurrency, --window, --rounds ≥ 1"
    );
    let mut runs = Vec::new();
    for round in 1..=args.rounds {
        for (name, cmd) in &args.cases {
            say(format!("round {round}: {name}"));
            let m = measure_case(&args, name, cmd, round).await.with_context(|| format!("case {name}"))?;
            say(format!(
                "  {:.0} deliveries/s, p50 {:.2} ms, p99 {:.2} ms, executor {:.0} % of a core",
                m.deliveries_per_s,
                m.latency_ms.p50,
                m.latency_ms.p99,
                m.executor_pct_of_one_core.unwrap_or(f64::NAN)
            ));
            runs.push(m);
        }
    }
    let summary: Vec<Summary> = args
        .cases
        .iter()
        .map(|(name, _)| {
            let mine: Vec<&Measured> = runs.iter().filter(|m| &m.case == name).collect();
            Summary {
                case: name.clone(),
                median_deliveries_per_s: median(mine.iter().map(|m| m.deliveries_per_s).collect()),
                median_cpu_ms_per_delivery: mine
                    .iter()
                    .map(|m| m.executor_cpu_ms_per_delivery)
                    .collect::<Option<Vec<f64>>>()
                    .map(median),
            }
        })
        .collect();
    let ratios = pairs(&summary);
    let report = ExecutorsReport {
        machine: cpu_model(),
        cores: std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1),
        concurrency: args.concurrency,
        warmup_s: args.warmup,
        window_s: args.window,
        runs,
        summary,
        ratios,
    };
    let text = human(&report);
    if args.json {
        eprint!("{text}");
        println!("{}", serde_json::to_string(&report)?);
    } else {
        print!("{text}");
    }
    Ok(())
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    match v.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => v[n / 2],
        n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
}

/// `<x>-sdk` over `<x>-bare`, for every x that has both.
fn pairs(summary: &[Summary]) -> Vec<Ratio> {
    summary
        .iter()
        .filter_map(|sdk| {
            let x = sdk.case.strip_suffix("-sdk")?;
            let bare = summary.iter().find(|b| b.case == format!("{x}-bare"))?;
            Some(Ratio {
                pair: x.to_string(),
                sdk_over_bare_deliveries_per_s: sdk.median_deliveries_per_s / bare.median_deliveries_per_s,
                sdk_over_bare_cpu_per_delivery: match (sdk.median_cpu_ms_per_delivery, bare.median_cpu_ms_per_delivery)
                {
                    (Some(a), Some(b)) if b > 0.0 => Some(a / b),
                    _ => None,
                },
            })
        })
        .collect()
}

fn human(r: &ExecutorsReport) -> String {
    use std::fmt::Write as _;
    let mut s = String::new();
    let _ = writeln!(s, "\nsundial-bench executors — {} ({} cores)", r.machine, r.cores);
    let _ = writeln!(
        s,
        "{} connections, each sending the next delivery on the previous answer; {} s warm-up, {} s counted\n",
        r.concurrency, r.warmup_s, r.window_s
    );
    let _ = writeln!(
        s,
        "{:<14} {:>5} {:>12} {:>7} {:>9} {:>9} {:>13} {:>11} {:>10} {:>9}",
        "case",
        "round",
        "deliveries/s",
        "errors",
        "p50 ms",
        "p99 ms",
        "executor %cpu",
        "cpu ms/del",
        "generator%",
        "other %"
    );
    let f = |x: Option<f64>, p: usize| x.map_or("?".to_string(), |v| format!("{v:.p$}"));
    for m in &r.runs {
        let _ = writeln!(
            s,
            "{:<14} {:>5} {:>12.0} {:>7} {:>9.2} {:>9.2} {:>13} {:>11} {:>10} {:>9}",
            m.case,
            m.round,
            m.deliveries_per_s,
            m.errors,
            m.latency_ms.p50,
            m.latency_ms.p99,
            f(m.executor_pct_of_one_core, 0),
            f(m.executor_cpu_ms_per_delivery, 3),
            f(m.generator_pct_of_one_core, 0),
            f(m.everything_else_pct_of_one_core, 0),
        );
    }
    let _ = writeln!(s);
    for x in &r.summary {
        let _ = writeln!(
            s,
            "{:<14} median {:>8.0} deliveries/s, {} ms of executor CPU a delivery",
            x.case,
            x.median_deliveries_per_s,
            f(x.median_cpu_ms_per_delivery, 3)
        );
    }
    for p in &r.ratios {
        let _ = writeln!(
            s,
            "{}: through the SDK {:.2} × the deliveries/s of the bare executor, {} × its CPU a delivery",
            p.pair,
            p.sdk_over_bare_deliveries_per_s,
            f(p.sdk_over_bare_cpu_per_delivery, 2)
        );
    }
    s
}

/// A delivery as Sundial sends it: body and headers.
struct Delivery {
    id: String,
    timestamp: String,
    body: Vec<u8>,
    run_id: String,
}

fn delivery(tag: &str, n: u64) -> Delivery {
    let run_id = format!("run_bench{tag}{n:010}");
    let now = chrono::Utc::now();
    let scheduled = now.to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
    let body = json!({
        "run_id": run_id, "job_id": "job_bench", "job": "bench", "handler": "hello",
        "params": {"to": "world"}, "attempt": 1, "scheduled_at": scheduled,
        "trigger": "schedule", "shard": {"index": 0, "total": 1},
    });
    Delivery {
        id: format!("msg_{run_id}_0_1"),
        timestamp: now.timestamp().to_string(),
        body: serde_json::to_vec(&body).expect("JSON"),
        run_id,
    }
}

async fn send(client: &reqwest::Client, url: &str, key: &Key, d: &Delivery) -> anyhow::Result<(u16, Vec<u8>)> {
    let signature = key.sign(&d.id, &d.timestamp, &d.body);
    send_signed(client, url, d, &signature).await
}

async fn send_signed(
    client: &reqwest::Client,
    url: &str,
    d: &Delivery,
    signature: &str,
) -> anyhow::Result<(u16, Vec<u8>)> {
    let resp = client
        .post(url)
        .header("content-type", "application/json")
        .header("webhook-id", &d.id)
        .header("webhook-timestamp", &d.timestamp)
        .header("webhook-signature", signature)
        .header("sundial-app-id", "app_bench")
        .header("sundial-node", "node_bench")
        .header("sundial-run-id", &d.run_id)
        .header("sundial-attempt", "1")
        .header("sundial-shard", "0/1")
        .body(d.body.clone())
        .send()
        .await?;
    let status = resp.status().as_u16();
    Ok((status, resp.bytes().await?.to_vec()))
}

/// The executor does what every executor must before it is measured.
async fn check_duty(client: &reqwest::Client, url: &str, key: &Key) -> anyhow::Result<()> {
    let d = delivery("check", 0);
    let (status, body) = send(client, url, key, &d).await?;
    let answer: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    anyhow::ensure!(
        status == 200 && answer["status"] == "succeeded" && answer["output"]["greeted"] == "world",
        "a signed delivery was answered {status} {}",
        String::from_utf8_lossy(&body)
    );
    let (again, body2) = send(client, url, key, &d).await?;
    anyhow::ensure!(
        again == 200 && body2 == body,
        "a repeated webhook-id was answered {again} {}",
        String::from_utf8_lossy(&body2)
    );
    let bad = delivery("check", 1);
    let (refused, body3) = send_signed(client, url, &bad, "v1,AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=").await?;
    anyhow::ensure!(
        (400..500).contains(&refused),
        "a bad signature was answered {refused} {}",
        String::from_utf8_lossy(&body3)
    );
    Ok(())
}

struct Load {
    ok: u64,
    errors: u64,
    latencies_ms: Vec<f64>,
}

/// `concurrency` connections, each sending the next delivery when the previous is answered,
/// for `secs`.
async fn load(client: &reqwest::Client, url: &str, key: &Key, tag: &str, concurrency: usize, secs: u64) -> Load {
    let stop = Arc::new(AtomicBool::new(false));
    let seq = Arc::new(AtomicU64::new(0));
    let mut tasks = Vec::new();
    for _ in 0..concurrency {
        let (client, url, key, tag, stop, seq) =
            (client.clone(), url.to_string(), key.clone(), tag.to_string(), stop.clone(), seq.clone());
        tasks.push(tokio::spawn(async move {
            let mut out = Load { ok: 0, errors: 0, latencies_ms: Vec::new() };
            while !stop.load(Ordering::Relaxed) {
                let d = delivery(&tag, seq.fetch_add(1, Ordering::Relaxed));
                let t = Instant::now();
                match send(&client, &url, &key, &d).await {
                    Ok((200, _)) => {
                        out.ok += 1;
                        out.latencies_ms.push(t.elapsed().as_secs_f64() * 1000.0);
                    }
                    _ => out.errors += 1,
                }
            }
            out
        }));
    }
    tokio::time::sleep(Duration::from_secs(secs)).await;
    stop.store(true, Ordering::Relaxed);
    let mut all = Load { ok: 0, errors: 0, latencies_ms: Vec::new() };
    for t in tasks {
        if let Ok(l) = t.await {
            all.ok += l.ok;
            all.errors += l.errors;
            all.latencies_ms.extend(l.latencies_ms);
        }
    }
    all
}

struct Executor {
    child: std::process::Child,
    log: tempfile::NamedTempFile,
}

impl Executor {
    fn log_tail(&self) -> String {
        let s = std::fs::read_to_string(self.log.path()).unwrap_or_default();
        s.lines().rev().take(20).collect::<Vec<_>>().into_iter().rev().collect::<Vec<_>>().join("\n")
    }
}

impl Drop for Executor {
    fn drop(&mut self) {
        crate::db::signal(self.child.id(), "TERM");
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

async fn measure_case(args: &ExecutorsArgs, name: &str, cmd: &str, round: usize) -> anyhow::Result<Measured> {
    let (key, secret) = Key::generate();
    let port = free_port()?;
    let log = tempfile::Builder::new().prefix("sundial-bench-executor-").suffix(".log").tempfile()?;
    let child = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!("exec {cmd}"))
        .env("PORT", port.to_string())
        .env("SUNDIAL_SECRET", &secret)
        .stdout(log.reopen()?)
        .stderr(log.reopen()?)
        .spawn()
        .with_context(|| format!("starting `{cmd}`"))?;
    let mut ex = Executor { child, log };
    let started = Instant::now();
    while tokio::net::TcpStream::connect(("127.0.0.1", port)).await.is_err() {
        if let Ok(Some(status)) = ex.child.try_wait() {
            anyhow::bail!("`{cmd}` exited ({status}) before listening:\n{}", ex.log_tail());
        }
        anyhow::ensure!(
            started.elapsed() < Duration::from_secs(30),
            "`{cmd}` not listening after 30 s:\n{}",
            ex.log_tail()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let url = format!("http://127.0.0.1:{port}/");
    let client = reqwest::Client::builder()
        .no_proxy()
        .pool_max_idle_per_host(args.concurrency)
        .timeout(Duration::from_secs(30))
        .build()?;
    check_duty(&client, &url, &key).await.map_err(|e| anyhow::anyhow!("{e}\n{}", ex.log_tail()))?;
    let tag = format!("{round}{}", name.replace(|c: char| !c.is_ascii_alphanumeric(), ""));
    load(&client, &url, &key, &format!("w{tag}"), args.concurrency, args.warmup).await;
    let me = std::process::id();
    let before = cpu::sample(&[("executor", Some(ex.child.id())), ("generator", Some(me))]);
    let l = load(&client, &url, &key, &tag, args.concurrency, args.window).await;
    let after = cpu::sample(&[("executor", Some(ex.child.id())), ("generator", Some(me))]);
    let usage = cpu::usage(&before, &after);
    if let Ok(Some(status)) = ex.child.try_wait() {
        anyhow::bail!("the executor exited ({status}) under load:\n{}", ex.log_tail());
    }
    let secs = args.window as f64;
    let per_s = l.ok as f64 / secs;
    let executor_pct = usage.processes[0].1;
    Ok(Measured {
        case: name.to_string(),
        round,
        deliveries_per_s: per_s,
        errors: l.errors,
        latency_ms: pct(l.latencies_ms),
        executor_pct_of_one_core: executor_pct,
        executor_cpu_ms_per_delivery: executor_pct.filter(|_| per_s > 0.0).map(|p| p / 100.0 * 1000.0 / per_s),
        generator_pct_of_one_core: usage.processes[1].1,
        everything_else_pct_of_one_core: usage.everything_else_pct_of_one_core,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cases_parse_and_pairs_pair() {
        assert_eq!(parse_case("py-sdk=python x.py").unwrap(), ("py-sdk".into(), "python x.py".into()));
        assert!(parse_case("nothing").is_err());
        assert!(parse_case("=cmd").is_err());
        let s = |case: &str, d: f64, c: f64| Summary {
            case: case.into(),
            median_deliveries_per_s: d,
            median_cpu_ms_per_delivery: Some(c),
        };
        let r = pairs(&[s("py-sdk", 500.0, 2.0), s("py-bare", 1000.0, 1.0), s("node-sdk", 10.0, 1.0)]);
        assert_eq!(r.len(), 1);
        assert_eq!((r[0].pair.as_str(), r[0].sdk_over_bare_deliveries_per_s), ("py", 0.5));
        assert_eq!(r[0].sdk_over_bare_cpu_per_delivery, Some(2.0));
        assert_eq!(median(vec![3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(vec![4.0, 1.0]), 2.5);
    }

    #[test]
    fn a_delivery_is_what_sundial_sends() {
        let d = delivery("t", 7);
        let v: Value = serde_json::from_slice(&d.body).unwrap();
        assert_eq!(v["run_id"], "run_bencht0000000007");
        assert_eq!(d.id, "msg_run_bencht0000000007_0_1");
        assert_eq!(v["shard"], json!({"index": 0, "total": 1}));
        assert!(d.timestamp.parse::<i64>().unwrap() > 1_700_000_000);
    }
}
