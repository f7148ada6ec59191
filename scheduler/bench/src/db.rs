//! The database Sundial runs on: a private throwaway MariaDB (default), a fresh database on
//! an existing server (`--mysql-url`), or SQLite in a temporary data directory; and the
//! read-only accounting of the window's runs afterwards.

use std::collections::HashMap;
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::Context as _;
use serde::Serialize;
use sqlx::any::AnyPoolOptions;
use sqlx::{AnyPool, Connection as _, Row as _};

use crate::measure::Window;

/// A `mariadbd` of our own on a free port, in a temporary directory owned by `mysql`.
/// Started with `--no-defaults`: default durability (`innodb_flush_log_at_trx_commit = 1`).
pub struct PrivateMariaDb {
    pub port: u16,
    child: Option<Child>,
    log: PathBuf,
    _dir: tempfile::TempDir,
}

impl PrivateMariaDb {
    pub async fn start() -> anyhow::Result<PrivateMariaDb> {
        let dir = tempfile::Builder::new().prefix("sundial-bench-mariadb-").tempdir()?;
        let datadir = dir.path().join("data");
        std::fs::create_dir(&datadir)?;
        let ok = Command::new("chown").args(["-R", "mysql:mysql"]).arg(dir.path()).status()?.success();
        anyhow::ensure!(ok, "chown mysql {} (the private MariaDB runs as user mysql)", dir.path().display());
        let out = Command::new("mariadb-install-db")
            .args(["--no-defaults", "--user=mysql", "--auth-root-authentication-method=normal", "--skip-test-db"])
            .arg(format!("--datadir={}", datadir.display()))
            .output()
            .context("mariadb-install-db (package mariadb-server)")?;
        anyhow::ensure!(out.status.success(), "mariadb-install-db: {}", String::from_utf8_lossy(&out.stderr));
        let port = free_port()?;
        let log = dir.path().join("mariadbd.log");
        let child = Command::new("mariadbd")
            .args(["--no-defaults", "--user=mysql", "--bind-address=127.0.0.1", "--skip-name-resolve"])
            .arg(format!("--datadir={}", datadir.display()))
            .arg(format!("--port={port}"))
            .arg(format!("--socket={}", dir.path().join("mysqld.sock").display()))
            .stdout(Stdio::null())
            .stderr(Stdio::from(std::fs::File::create(&log)?))
            .process_group(0) // a Ctrl-C in the terminal is ours to handle, not the server's
            .spawn()
            .context("mariadbd")?;
        let mut db = PrivateMariaDb { port, child: Some(child), log, _dir: dir };
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            if let Ok(Ok(mut c)) =
                tokio::time::timeout(Duration::from_secs(2), sqlx::AnyConnection::connect(&db.server_url())).await
            {
                let ok = sqlx::query("SELECT 1").execute(&mut c).await.is_ok();
                let _ = c.close().await;
                if ok {
                    return Ok(db);
                }
            }
            if let Some(s) = db.child.as_mut().and_then(|c| c.try_wait().ok().flatten()) {
                anyhow::bail!("mariadbd exited {s}; its log:\n{}", tail(&db.log, 20));
            }
            anyhow::ensure!(Instant::now() < deadline, "mariadbd did not answer in 60 s; log:\n{}", tail(&db.log, 20));
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    pub fn server_url(&self) -> String {
        format!("mysql://root@127.0.0.1:{}", self.port)
    }

    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// SIGTERM and wait (60 s, then SIGKILL).
    pub async fn stop(&mut self) {
        let Some(mut child) = self.child.take() else { return };
        signal(child.id(), "CONT");
        signal(child.id(), "TERM");
        let deadline = Instant::now() + Duration::from_secs(60);
        while matches!(child.try_wait(), Ok(None)) {
            if Instant::now() > deadline {
                let _ = child.kill();
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}

impl Drop for PrivateMariaDb {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// Send a signal by name (`TERM`, `STOP`, `CONT`, …).
pub fn signal(pid: u32, sig: &str) -> bool {
    Command::new("kill").args([format!("-{sig}"), pid.to_string()]).status().is_ok_and(|s| s.success())
}

pub fn free_port() -> anyhow::Result<u16> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
}

pub fn tail(path: &Path, n: usize) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

/// Where Sundial keeps its data for this run.
pub enum Target {
    /// A database `name` on our private server.
    Private { server: PrivateMariaDb, name: String },
    /// A database `name` created on an existing server (dropped at the end, also on Drop).
    External { server_url: String, name: Option<String> },
    /// `sundial.db` in a temporary data directory.
    Sqlite { dir: tempfile::TempDir },
}

impl Target {
    pub async fn private() -> anyhow::Result<Target> {
        let server = PrivateMariaDb::start().await?;
        let name = "sundial_bench".to_string();
        create_database(&server.server_url(), &name).await?;
        Ok(Target::Private { server, name })
    }

    pub async fn external(url: &str) -> anyhow::Result<Target> {
        let server_url = server_part(url);
        let name = format!("sundial_bench_{:012x}", rand::random::<u64>() >> 16);
        create_database(&server_url, &name).await?;
        Ok(Target::External { server_url, name: Some(name) })
    }

    pub fn sqlite() -> anyhow::Result<Target> {
        Ok(Target::Sqlite { dir: tempfile::Builder::new().prefix("sundial-bench-data-").tempdir()? })
    }

    pub fn label(&self) -> &'static str {
        match self {
            Target::Private { .. } => "mysql (private MariaDB, --no-defaults)",
            Target::External { .. } => "mysql (existing server, fresh database)",
            Target::Sqlite { .. } => "sqlite (embedded, temporary data dir)",
        }
    }

    /// The `SUNDIAL_*` variable that points Sundial at this database.
    pub fn sundial_env(&self) -> (&'static str, String) {
        match self {
            Target::Private { server, name } => ("SUNDIAL_DATABASE_URL", format!("{}/{name}", server.server_url())),
            Target::External { server_url, name } => {
                ("SUNDIAL_DATABASE_URL", format!("{server_url}/{}", name.as_deref().unwrap_or_default()))
            }
            Target::Sqlite { dir } => ("SUNDIAL_DATA_DIR", dir.path().display().to_string()),
        }
    }

    /// URL for the benchmark's own SQL. SQLite: the scratch file `scratch` (raw inserts) or
    /// Sundial's own file read-only (`None`).
    pub fn sql_url(&self, sqlite_scratch: Option<&str>) -> String {
        match (self, sqlite_scratch) {
            (Target::Sqlite { dir }, Some(f)) => format!("sqlite://{}?mode=rwc", dir.path().join(f).display()),
            (Target::Sqlite { dir }, None) => format!("sqlite://{}?mode=ro", dir.path().join("sundial.db").display()),
            _ => self.sundial_env().1,
        }
    }

    pub fn is_sqlite(&self) -> bool {
        matches!(self, Target::Sqlite { .. })
    }

    /// `mariadbd`'s pid when we can tell (ours, or the only one running).
    pub fn server_pid(&self) -> Option<u32> {
        match self {
            Target::Private { server, .. } => server.pid(),
            Target::External { .. } => {
                let out = Command::new("pgrep").arg("-x").arg("mariadbd").output().ok()?;
                let pids: Vec<u32> =
                    String::from_utf8_lossy(&out.stdout).lines().filter_map(|l| l.trim().parse().ok()).collect();
                (pids.len() == 1).then(|| pids[0])
            }
            Target::Sqlite { .. } => None,
        }
    }

    /// Server version and durability settings, for the report.
    pub async fn describe(&self) -> String {
        if self.is_sqlite() {
            return "SQLite (Sundial's settings: WAL, synchronous = NORMAL)".into();
        }
        let q = async {
            let mut c = sqlx::AnyConnection::connect(&self.sql_url(None)).await?;
            let r = sqlx::query(
                "SELECT CAST(VERSION() AS CHAR), CAST(@@innodb_flush_log_at_trx_commit AS CHAR), \
                 CAST(@@sync_binlog AS CHAR), CAST(@@log_bin AS CHAR), CAST(@@innodb_buffer_pool_size AS CHAR)",
            )
            .fetch_one(&mut c)
            .await?;
            let _ = c.close().await;
            let g = |i: usize| r.try_get::<String, _>(i).unwrap_or_default();
            let pool_mib = g(4).parse::<u64>().unwrap_or(0) >> 20;
            anyhow::Ok(format!(
                "{}, innodb_flush_log_at_trx_commit = {}, sync_binlog = {}, log_bin = {}, buffer pool {} MiB",
                g(0),
                g(1),
                g(2),
                g(3),
                pool_mib
            ))
        };
        q.await.unwrap_or_else(|e| format!("(unknown: {e})"))
    }

    /// Stop what we started and drop what we created.
    pub async fn cleanup(&mut self) {
        match self {
            Target::Private { server, .. } => server.stop().await,
            Target::External { server_url, name } => {
                if let Some(n) = name.take()
                    && let Err(e) = drop_database(server_url, &n).await
                {
                    eprintln!("could not drop database {n}: {e}");
                }
            }
            Target::Sqlite { .. } => {}
        }
    }
}

impl Drop for Target {
    fn drop(&mut self) {
        // Interrupted or failed: the database created on someone else's server still goes.
        if let Target::External { server_url, name: Some(n) } = self {
            let (url, n) = (server_url.clone(), n.clone());
            let _ = std::thread::spawn(move || {
                let rt = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
                rt.block_on(drop_database(&url, &n))
            })
            .join();
        }
    }
}

/// `mysql://user@host:port[/db][?…]` → `mysql://user@host:port`.
pub fn server_part(url: &str) -> String {
    let (scheme, rest) = url.split_once("://").unwrap_or(("mysql", url));
    let authority = rest.split(['/', '?']).next().unwrap_or(rest);
    format!("{scheme}://{authority}")
}

async fn create_database(server_url: &str, name: &str) -> anyhow::Result<()> {
    let mut c =
        sqlx::AnyConnection::connect(server_url).await.with_context(|| format!("connecting to {server_url}"))?;
    sqlx::query(sqlx::AssertSqlSafe(format!("CREATE DATABASE {name} CHARACTER SET utf8mb4 COLLATE utf8mb4_bin")))
        .execute(&mut c)
        .await?;
    let _ = c.close().await;
    Ok(())
}

async fn drop_database(server_url: &str, name: &str) -> anyhow::Result<()> {
    let mut c = sqlx::AnyConnection::connect(server_url).await?;
    sqlx::query(sqlx::AssertSqlSafe(format!("DROP DATABASE IF EXISTS {name}"))).execute(&mut c).await?;
    let _ = c.close().await;
    Ok(())
}

pub async fn pool(url: &str) -> anyhow::Result<AnyPool> {
    Ok(AnyPoolOptions::new().max_connections(2).acquire_timeout(Duration::from_secs(30)).connect(url).await?)
}

/// The database's view of the window's schedule fires.
#[derive(Debug, Default, Serialize)]
pub struct Accounting {
    /// Runs scheduled in the window, by state.
    pub runs_by_state: Vec<(String, u64)>,
    /// Fires counted by `expired` rows (a summarising row counts several).
    pub expired_fires: u64,
    /// Expected fires neither delivered nor recorded in a final state.
    pub unaccounted: u64,
    /// A few of them, as `job_id@RFC 3339`.
    pub unaccounted_examples: Vec<String>,
    /// Their current state (`no row`, or a state not final yet, e.g. still `queued`).
    pub unaccounted_by_state: Vec<(String, u64)>,
    /// Undelivered fires recorded in a final state, by that state.
    pub undelivered_recorded: Vec<(String, u64)>,
}

const FINAL: [&str; 5] = ["succeeded", "failed", "cancelled", "expired", "skipped"];

/// Read the window's runs and check every missing fire (`missing`: job id, scheduled ms)
/// against them; `period_ms`: the time between two fires of a job (what an `expired` row
/// counting several fires spans per fire). Read-only; runs while Sundial still serves.
pub async fn account(
    target: &Target,
    w: Window,
    missing: &[(String, i64)],
    period_ms: i64,
) -> anyhow::Result<Accounting> {
    let pool = pool(&target.sql_url(None)).await?;
    let mut acc = Accounting::default();
    let rows = sqlx::query(
        "SELECT state, COUNT(*) AS n, CAST(COALESCE(SUM(expired_count), 0) AS SIGNED) AS e FROM runs \
         WHERE trigger_kind = 'schedule' AND scheduled_at_ms >= ? AND scheduled_at_ms < ? GROUP BY state ORDER BY state",
    )
    .bind(w.start_ms)
    .bind(w.end_ms)
    .fetch_all(&pool)
    .await?;
    for r in &rows {
        let state: String = r.try_get("state")?;
        let n: i64 = r.try_get("n")?;
        let e: i64 = r.try_get("e")?;
        if state == "expired" {
            // A run expired on its own has count 0; a summarising row counts several fires.
            acc.expired_fires += e.max(n) as u64;
        }
        acc.runs_by_state.push((state, n as u64));
    }
    if !missing.is_empty() {
        // (job, fire) -> state; expired rows that summarise several fires cover a range.
        let rows = sqlx::query(
            "SELECT job_id, scheduled_at_ms, state, expired_count FROM runs WHERE trigger_kind = 'schedule' \
             AND scheduled_at_ms < ? AND (scheduled_at_ms >= ? OR (state = 'expired' AND expired_count > 1))",
        )
        .bind(w.end_ms)
        .bind(w.start_ms)
        .fetch_all(&pool)
        .await?;
        let mut state_of: HashMap<(String, i64), String> = HashMap::new();
        let mut covers: HashMap<String, Vec<(i64, i64)>> = HashMap::new();
        for r in &rows {
            let job: String = r.try_get("job_id")?;
            let at: i64 = r.try_get("scheduled_at_ms")?;
            let state: String = r.try_get("state")?;
            let count: i64 = r.try_get("expired_count")?;
            if state == "expired" && count > 1 {
                covers.entry(job.clone()).or_default().push((at, at + count * period_ms));
            }
            state_of.insert((job, at), state);
        }
        let mut by_state: HashMap<String, u64> = HashMap::new();
        let mut open: HashMap<String, u64> = HashMap::new();
        for (job, at) in missing {
            let recorded = match state_of.get(&(job.clone(), *at)) {
                Some(s) if FINAL.contains(&s.as_str()) => Some(s.clone()),
                _ if covers.get(job).is_some_and(|c| c.iter().any(|(a, b)| (*a..*b).contains(at))) => {
                    Some("expired (counted)".to_string())
                }
                _ => None,
            };
            match recorded {
                Some(s) => *by_state.entry(s).or_default() += 1,
                None => {
                    acc.unaccounted += 1;
                    let state = state_of.get(&(job.clone(), *at)).map_or("no row", String::as_str);
                    *open.entry(state.to_string()).or_default() += 1;
                    if acc.unaccounted_examples.len() < 3 {
                        acc.unaccounted_examples.push(format!("{job}@{} ({state})", crate::sink::rfc3339_ms(*at)));
                    }
                }
            }
        }
        acc.undelivered_recorded = by_state.into_iter().collect();
        acc.undelivered_recorded.sort();
        acc.unaccounted_by_state = open.into_iter().collect();
        acc.unaccounted_by_state.sort();
    }
    pool.close().await;
    Ok(acc)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn server_part_strips_database_and_options() {
        assert_eq!(server_part("mysql://root@127.0.0.1:3306"), "mysql://root@127.0.0.1:3306");
        assert_eq!(server_part("mysql://root@127.0.0.1:3306/x?ssl-mode=disabled"), "mysql://root@127.0.0.1:3306");
        assert_eq!(server_part("mysql://u:p@h/"), "mysql://u:p@h");
    }
}
