//! The command line client: `sundial jobs|runs|apps|scripts …` against any node of a
//! cluster, on the Rust SDK's [`Client`] (which fails over between the nodes given).
//!
//! Exit codes: 0 done; 1 the API refused (its `code`, `message` and `details.field` on
//! stderr); 2 a usage problem (flags, files, no key; clap's own errors too); 3 no node could be
//! reached; for `runs wait`, 4 the run ended other than `succeeded` and 5 the timeout passed;
//! 130 interrupted (Ctrl-C).

mod setup;
mod show;

use std::collections::HashMap;
use std::io::Write as _;
use std::process::ExitCode;
use std::str::FromStr as _;
use std::time::Duration;

use clap::{Args, Subcommand, ValueEnum};
use serde::Serialize;
use serde_json::{Map, Value, json};
use sundial_core::types::{JobState, RunState};
use sundial_sdk::client::{JobFilter, RunFilter, Trigger};
use sundial_sdk::{Client, ClientError, StreamExt as _};

use self::setup::Usage;

/// How results are printed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Output {
    /// Aligned columns with a header.
    Table,
    /// The API's JSON, pretty-printed (a list is one JSON array of every item read; log
    /// lines are one JSON object per line).
    Json,
}

/// Options every client command takes.
#[derive(Debug, Args)]
pub struct Conn {
    /// A node's URL; repeat it or separate with commas for several nodes of a cluster (when one
    /// does not answer, the next is asked). Default: SUNDIAL_URL, else the config file's
    /// `urls`/`url`, else http://127.0.0.1:7700. The API key comes from SUNDIAL_API_KEY or the
    /// config file ($SUNDIAL_CLI_CONFIG, else ~/.config/sundial/config.toml), never a flag.
    #[arg(long = "url", value_name = "URL", global = true)]
    urls: Vec<String>,
    /// Output format.
    #[arg(long, short = 'o', value_enum, default_value_t = Output::Table, global = true)]
    output: Output,
}

/// `sundial jobs …`
#[derive(Debug, Args)]
pub struct JobsArgs {
    #[command(flatten)]
    conn: Conn,
    #[command(subcommand)]
    cmd: JobsCmd,
}

#[derive(Debug, Subcommand)]
enum JobsCmd {
    /// List jobs, following pages up to --limit.
    List {
        /// Only the jobs of this app (name or id).
        #[arg(long)]
        app: Option<String>,
        /// `active` or `stopped`.
        #[arg(long, value_parser = JobState::from_str)]
        state: Option<JobState>,
        /// Only the job with this name.
        #[arg(long)]
        name: Option<String>,
        /// At most this many jobs.
        #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u32).range(1..))]
        limit: u32,
    },
    /// Show a job.
    Get { id: String },
    /// Create a job from a JSON or YAML file (`-f -`: standard input).
    Create {
        #[arg(short = 'f', long = "file", value_name = "FILE")]
        file: String,
    },
    /// Replace a job's definition with a JSON or YAML file's.
    Replace {
        id: String,
        #[arg(short = 'f', long = "file", value_name = "FILE")]
        file: String,
    },
    /// Delete a job.
    Delete { id: String },
    /// Start a job: it fires from now on.
    Start { id: String },
    /// Stop a job: it fires no more, and its runs not yet sent are cancelled.
    Stop { id: String },
    /// Fire a run now (or --at a time), with parameters instead of the job's.
    Trigger {
        id: String,
        /// A parameter: KEY=VALUE (a string) or KEY:=JSON (`n:=3`, `tags:=["a"]`); repeatable,
        /// applied over --params-file.
        #[arg(long = "param", value_name = "KEY=VALUE")]
        params: Vec<String>,
        /// The parameters as a JSON or YAML object.
        #[arg(long, value_name = "FILE")]
        params_file: Option<String>,
        /// Fire at this RFC 3339 time instead of now.
        #[arg(long)]
        at: Option<String>,
        /// The same key fires one run however often the call is repeated (default: a fresh one,
        /// kept across this command's own retries).
        #[arg(long)]
        idempotency_key: Option<String>,
    },
    /// The next fire times of a job.
    Preview {
        id: String,
        #[arg(long, default_value_t = 10)]
        count: u32,
    },
}

/// `sundial runs …`
#[derive(Debug, Args)]
pub struct RunsArgs {
    #[command(flatten)]
    conn: Conn,
    #[command(subcommand)]
    cmd: RunsCmd,
}

#[derive(Debug, Subcommand)]
enum RunsCmd {
    /// List runs, newest first (a chain's oldest first), following pages up to --limit.
    List {
        /// Only the runs of this job.
        #[arg(long)]
        job: Option<String>,
        /// pending, queued, dispatching, running, retrying, succeeded, failed, cancelled, expired, skipped.
        #[arg(long, value_parser = RunState::from_str)]
        state: Option<RunState>,
        /// Only the runs of this chain (its root run's id).
        #[arg(long)]
        chain: Option<String>,
        /// At most this many runs.
        #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u32).range(1..))]
        limit: u32,
    },
    /// Show a run with its attempts.
    Get { id: String },
    /// Cancel a run that has not finished.
    Cancel { id: String },
    /// Retry a `retrying` run now instead of after its backoff.
    Retry { id: String },
    /// Print a run's log; with --follow, keep printing lines as they come until the run ends.
    Logs {
        id: String,
        #[arg(long, short = 'f')]
        follow: bool,
    },
    /// Wait for a run to end. Exit 0 if it succeeded, 4 if it ended otherwise, 5 on timeout.
    Wait {
        id: String,
        /// Give up after this long (`90s`, `5m`, `1h`; a bare number is seconds).
        #[arg(long, default_value = "10m", value_parser = setup::parse_duration)]
        timeout: Duration,
    },
}

/// `sundial apps …`
#[derive(Debug, Args)]
pub struct AppsArgs {
    #[command(flatten)]
    conn: Conn,
    #[command(subcommand)]
    cmd: AppsCmd,
}

#[derive(Debug, Subcommand)]
enum AppsCmd {
    /// List apps.
    List {
        #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u32).range(1..))]
        limit: u32,
    },
    /// Show an app (by id or name).
    Get { id: String },
    /// Create an app from a JSON or YAML file; prints its signing secret, shown only now.
    Create {
        #[arg(short = 'f', long = "file", value_name = "FILE")]
        file: String,
    },
    /// Give an app a new signing secret (the old one keeps working for the grace period).
    RotateSecret { id: String },
}

/// `sundial scripts …`
#[derive(Debug, Args)]
pub struct ScriptsArgs {
    #[command(flatten)]
    conn: Conn,
    #[command(subcommand)]
    cmd: ScriptsCmd,
}

#[derive(Debug, Subcommand)]
enum ScriptsCmd {
    /// List scripts.
    List {
        #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u32).range(1..))]
        limit: u32,
    },
    /// Show a script.
    Get { id: String },
    /// Upload a script from a JSON or YAML file (`name`, `runtime`, `source` …).
    Create {
        #[arg(short = 'f', long = "file", value_name = "FILE")]
        file: String,
    },
}

/// The client commands (flattened into `sundial`'s own).
#[derive(Debug, Subcommand)]
pub enum Cmd {
    /// Jobs: list, get, create/replace from a file, delete, start, stop, trigger, preview.
    Jobs(JobsArgs),
    /// Runs: list, get, cancel, retry, logs (--follow), wait.
    Runs(RunsArgs),
    /// Apps (executor groups): list, get, create from a file, rotate-secret.
    Apps(AppsArgs),
    /// Scripts: list, get, create from a file.
    Scripts(ScriptsArgs),
}

/// Why a command failed, and so its exit code.
enum Failure {
    Usage(String),
    Client(ClientError),
    /// The command's own non-zero ending (`runs wait`), already explained.
    Exit(u8, String),
}

impl From<Usage> for Failure {
    fn from(u: Usage) -> Self {
        Failure::Usage(u.0)
    }
}

impl From<ClientError> for Failure {
    fn from(e: ClientError) -> Self {
        Failure::Client(e)
    }
}

type Res<T = ()> = Result<T, Failure>;

/// Run a client command; its exit code.
pub async fn run(cmd: Cmd) -> ExitCode {
    let conn = match &cmd {
        Cmd::Jobs(a) => &a.conn,
        Cmd::Runs(a) => &a.conn,
        Cmd::Apps(a) => &a.conn,
        Cmd::Scripts(a) => &a.conn,
    };
    let out = conn.output;
    let target = match setup::resolve(&conn.urls, &setup::Env::from_process(), &mut |w| eprintln!("warning: {w}")) {
        Ok(t) => t,
        Err(u) => return fail(Failure::Usage(u.0), &[]),
    };
    let client = Client::with_nodes(target.urls.clone(), target.api_key);
    let work = async {
        match cmd {
            Cmd::Jobs(a) => jobs(&client, out, a.cmd).await,
            Cmd::Runs(a) => runs(&client, out, a.cmd).await,
            Cmd::Apps(a) => apps(&client, out, a.cmd).await,
            Cmd::Scripts(a) => scripts(&client, out, a.cmd).await,
        }
    };
    let result = tokio::select! {
        r = work => r,
        _ = tokio::signal::ctrl_c() => {
            let _ = std::io::stdout().flush();
            eprintln!("interrupted");
            return ExitCode::from(130);
        }
    };
    let _ = std::io::stdout().flush();
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(f) => fail(f, &target.urls),
    }
}

fn fail(f: Failure, urls: &[String]) -> ExitCode {
    match f {
        Failure::Usage(m) => {
            eprintln!("error: {m}");
            ExitCode::from(2)
        }
        Failure::Exit(code, m) => {
            eprintln!("{m}");
            ExitCode::from(code)
        }
        Failure::Client(ClientError::Api(e)) => {
            eprintln!("error: {} (HTTP {}, code {})", e.message, e.status, e.code);
            if let Some(field) = e.field() {
                eprintln!("field: {field}");
            }
            if let Some(problem) = e.details.get("problem").and_then(Value::as_str) {
                eprintln!("problem: {problem}");
            }
            ExitCode::from(1)
        }
        Failure::Client(ClientError::Transport(e)) => {
            let mut why = e.to_string();
            let mut src = std::error::Error::source(&e);
            while let Some(s) = src {
                why.push_str(": ");
                why.push_str(&s.to_string());
                src = s.source();
            }
            eprintln!("error: no answer from Sundial at {}: {why}", urls.join(", "));
            ExitCode::from(3)
        }
        Failure::Client(e @ ClientError::Decode { .. }) => {
            eprintln!("error: {e}");
            ExitCode::from(1)
        }
    }
}

/// Print one object: its fields as a table, or its JSON.
fn print_one<T: Serialize>(out: Output, v: &T, skip: &[&str]) {
    let v = serde_json::to_value(v).unwrap_or(Value::Null);
    match out {
        Output::Json => println!("{}", pretty(&v)),
        Output::Table => print!("{}", show::fields(&v, skip)),
    }
}

fn pretty(v: &Value) -> String {
    serde_json::to_string_pretty(v).unwrap_or_else(|_| v.to_string())
}

/// Read up to `limit` items of a listing stream; and whether more were there.
async fn collect<T: Serialize>(
    stream: impl sundial_sdk::Stream<Item = sundial_sdk::ClientResult<T>> + Unpin,
    limit: u32,
) -> Res<(Vec<Value>, bool)> {
    let mut items = Vec::new();
    let mut stream = stream.take(limit as usize + 1);
    while let Some(item) = stream.next().await {
        items.push(serde_json::to_value(item?).unwrap_or(Value::Null));
    }
    let more = items.len() > limit as usize;
    items.truncate(limit as usize);
    Ok((items, more))
}

fn print_list(out: Output, items: &[Value], more: bool, table: impl FnOnce(&[Value]) -> String) {
    match out {
        Output::Json => println!("{}", pretty(&Value::Array(items.to_vec()))),
        Output::Table => {
            print!("{}", table(items));
            if more {
                eprintln!("(the first {}; --limit shows more)", items.len());
            }
        }
    }
}

/// A page size for a listing of at most `limit` items (the API's pages hold 1-200).
fn page_size(limit: u32) -> i64 {
    i64::from(limit.min(199) + 1)
}

async fn jobs(c: &Client, out: Output, cmd: JobsCmd) -> Res {
    match cmd {
        JobsCmd::List { app, state, name, limit } => {
            let filter = JobFilter { app, state, name, limit: Some(page_size(limit)) };
            let (items, more) = collect(c.jobs(&filter), limit).await?;
            let mut names = HashMap::new();
            if out == Output::Table && !items.is_empty() {
                let mut all = c.apps();
                while let Some(a) = all.next().await {
                    let a = a?;
                    names.insert(a.id, a.name);
                }
            }
            print_list(out, &items, more, |i| show::jobs(i, &names));
        }
        JobsCmd::Get { id } => print_one(out, &c.get_job(&id).await?, &[]),
        JobsCmd::Create { file } => {
            let body = setup::read_object(&file)?;
            print_one(out, &c.create_job_json(&body).await?, &[]);
        }
        JobsCmd::Replace { id, file } => {
            let body = setup::read_object(&file)?;
            let job: Value = c.put(&format!("/jobs/{}", seg(&id)), &body).await?;
            print_one(out, &job, &[]);
        }
        JobsCmd::Delete { id } => {
            c.delete_job(&id).await?;
            if out == Output::Json {
                println!("{}", pretty(&json!({"deleted": id})));
            } else {
                println!("job {id} deleted");
            }
        }
        JobsCmd::Start { id } => print_one(out, &c.start_job(&id).await?, &[]),
        JobsCmd::Stop { id } => print_one(out, &c.stop_job(&id).await?, &[]),
        JobsCmd::Trigger { id, params, params_file, at, idempotency_key } => {
            let mut p = match &params_file {
                Some(f) => match setup::read_object(f)? {
                    Value::Object(m) => m,
                    _ => Map::new(),
                },
                None => Map::new(),
            };
            for a in &params {
                setup::apply_param(&mut p, a)?;
            }
            let given = params_file.is_some() || !params.is_empty();
            let trigger = Trigger { params: given.then_some(Value::Object(p)), at };
            let run = c.trigger_job(&id, &trigger, idempotency_key.as_deref()).await?;
            print_one(out, &run, &[]);
        }
        JobsCmd::Preview { id, count } => {
            let v: Value = c.get(&format!("/jobs/{}/preview", seg(&id)), &[("count", count.to_string())]).await?;
            match out {
                Output::Json => println!("{}", pretty(&v)),
                Output::Table => {
                    let mut t = show::Table::new(&["#", "FIRE TIME"]);
                    for (i, time) in v["times"].as_array().into_iter().flatten().enumerate() {
                        t.row(vec![(i + 1).to_string(), show::text(time)]);
                    }
                    print!("{}", t.render());
                }
            }
        }
    }
    Ok(())
}

async fn runs(c: &Client, out: Output, cmd: RunsCmd) -> Res {
    match cmd {
        RunsCmd::List { job, state, chain, limit } => {
            let filter =
                RunFilter { job_id: job, chain_id: chain, state, limit: Some(page_size(limit)), ..Default::default() };
            let (items, more) = collect(c.runs(&filter), limit).await?;
            print_list(out, &items, more, show::runs);
        }
        RunsCmd::Get { id } => {
            let d = c.get_run(&id).await?;
            match out {
                Output::Json => println!("{}", pretty(&serde_json::to_value(&d).unwrap_or(Value::Null))),
                Output::Table => {
                    print_one(out, &d.run, &[]);
                    if !d.attempts.is_empty() {
                        println!();
                        print!("{}", show::attempts(&d.attempts));
                    }
                    if !d.logs.is_empty() {
                        println!();
                        println!("{} log lines: sundial runs logs {id}", d.logs.len());
                    }
                }
            }
        }
        RunsCmd::Cancel { id } => print_one(out, &c.cancel_run(&id).await?, &[]),
        RunsCmd::Retry { id } => print_one(out, &c.retry_run(&id).await?, &[]),
        RunsCmd::Logs { id, follow } => {
            let print = |l: &sundial_sdk::client::LogEntry| {
                let v = serde_json::to_value(l).unwrap_or(Value::Null);
                match out {
                    Output::Json => println!("{v}"),
                    Output::Table => println!("{}", show::log_line(&v)),
                }
            };
            if follow {
                let mut lines = c.follow_run_logs(&id, 0, Duration::from_millis(500));
                while let Some(l) = lines.next().await {
                    print(&l?);
                }
            } else {
                let mut after = 0;
                loop {
                    let page = c.run_logs_after(&id, after, Some(1000)).await?;
                    page.items.iter().for_each(print);
                    after = page.next_after;
                    if !page.has_more {
                        break;
                    }
                }
            }
        }
        RunsCmd::Wait { id, timeout } => {
            let d = c.wait_run(&id, timeout, Duration::from_millis(500), |r| r.run.state.is_terminal()).await?;
            let state = d.run.state;
            match out {
                Output::Json => println!("{}", pretty(&serde_json::to_value(&d.run).unwrap_or(Value::Null))),
                Output::Table => println!("run {id} {state}"),
            }
            if !state.is_terminal() {
                return Err(Failure::Exit(5, format!("run {id} is still `{state}` after {timeout:?}")));
            }
            if state != RunState::Succeeded {
                let why = d.run.message.or(d.run.reason).map(|m| format!(": {m}")).unwrap_or_default();
                return Err(Failure::Exit(4, format!("run {id} ended `{state}`{why}")));
            }
        }
    }
    Ok(())
}

async fn apps(c: &Client, out: Output, cmd: AppsCmd) -> Res {
    match cmd {
        AppsCmd::List { limit } => {
            let (items, more) = collect(c.apps(), limit).await?;
            print_list(out, &items, more, show::apps);
        }
        AppsCmd::Get { id } => print_one(out, &c.get_app(&id).await?, &[]),
        AppsCmd::Create { file } => {
            let body = setup::read_object(&file)?;
            let app: Value = c.post("/apps", &body).await?;
            print_one(out, &app, &[]);
            if out == Output::Table {
                eprintln!("the signing secret is shown only now: give it to the app's executors");
            }
        }
        AppsCmd::RotateSecret { id } => {
            let app: Value = c.post(&format!("/apps/{}/rotate-secret", seg(&id)), &json!({})).await?;
            print_one(out, &app, &[]);
        }
    }
    Ok(())
}

async fn scripts(c: &Client, out: Output, cmd: ScriptsCmd) -> Res {
    match cmd {
        ScriptsCmd::List { limit } => {
            let (items, more) = collect(c.scripts(), limit).await?;
            print_list(out, &items, more, show::scripts);
        }
        ScriptsCmd::Get { id } => {
            let v: Value = c.get(&format!("/scripts/{}", seg(&id)), &[]).await?;
            print_one(out, &v, &[]);
        }
        ScriptsCmd::Create { file } => {
            let body = setup::read_object(&file)?;
            let v: Value = c.post("/scripts", &body).await?;
            print_one(out, &v, &[]);
        }
    }
    Ok(())
}

/// A path segment, percent-encoded (an id never changes the path).
fn seg(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}
