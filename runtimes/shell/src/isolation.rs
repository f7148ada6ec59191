//! What [`ShellSandbox::new`](crate::ShellSandbox::new) found at start-up: one entry per layer.

use std::fmt;
use std::path::PathBuf;

/// The isolation layers a [`ShellSandbox`](crate::ShellSandbox) applies to every run, as
/// detected when it was created. With the `serde` feature it serializes (e.g. for a status
/// endpoint).
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct Isolation {
    /// The overall level, in one word.
    pub level: IsolationLevel,
    /// The bwrap binary runs use.
    pub bwrap_path: PathBuf,
    /// `bwrap --version` without the leading `bubblewrap ` (e.g. `0.8.0`), if it answered.
    pub bwrap_version: Option<String>,
    /// A new user namespace works (always true: without it `new` fails).
    pub user_namespace: bool,
    /// A new network namespace (only its own loopback) works (always true: without it `new`
    /// fails).
    pub network_namespace: bool,
    /// bwrap's `--disable-userns` (bwrap ≥ 0.8) is used: no nested user namespaces inside.
    pub nested_user_namespaces_blocked: bool,
    /// Which cgroup hierarchy confines the runs, or why none does.
    pub cgroup: CgroupMode,
    /// The cgroup controllers a run is confined by (`memory`, `pids`, and `cpu` when available
    /// and `cpu_millis > 0`); empty without cgroups.
    pub controllers: Vec<String>,
    /// The `setrlimit` limits every run gets.
    pub rlimits: RlimitsReport,
    /// The disk quota of a run (`/work` and `/tmp`: one tmpfs of this size).
    pub disk_bytes: u64,
    /// The host uid bwrap runs as, which the sandbox's user namespace maps to (65534 = nobody
    /// when started as root; the caller's uid otherwise).
    pub runs_as_uid: u32,
    /// The host gid likewise.
    pub runs_as_gid: u32,
    /// The uid the script has inside its user namespace.
    pub sandbox_uid: u32,
}

/// How strong the sandbox is, in one word.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "snake_case"))]
pub enum IsolationLevel {
    /// bwrap with all namespaces, an unprivileged host uid, cgroup memory and pids limits (and
    /// cpu when available), rlimits.
    Strong,
    /// bwrap with all namespaces and an unprivileged host uid, rlimits, but no cgroup limits: no
    /// limit on a run's total memory or process count (a fork bomb is bounded by the timeout
    /// only). Only with `accept_weaker`.
    NamespacesOnly,
    /// bwrap runs as host root (`host_ids_when_root: None` while running as root), so the
    /// sandbox's user namespace maps to host root. Only with `accept_weaker`.
    HostRoot,
}

impl IsolationLevel {
    pub fn as_str(self) -> &'static str {
        match self {
            IsolationLevel::Strong => "strong",
            IsolationLevel::NamespacesOnly => "namespaces_only",
            IsolationLevel::HostRoot => "host_root",
        }
    }
}

impl fmt::Display for IsolationLevel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The cgroup hierarchy in use.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[cfg_attr(feature = "serde", serde(tag = "mode", rename_all = "lowercase"))]
pub enum CgroupMode {
    /// cgroup v2 (unified): one group per run under `<cgroup_root>/sundial-shell`.
    V2,
    /// cgroup v1: one group per run and controller.
    V1,
    /// No cgroup limits, and why.
    None { reason: String },
}

impl CgroupMode {
    pub fn as_str(&self) -> &'static str {
        match self {
            CgroupMode::V2 => "v2",
            CgroupMode::V1 => "v1",
            CgroupMode::None { .. } => "none",
        }
    }
}

/// The rlimits every run gets (see [`Rlimits`](crate::Rlimits)).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct RlimitsReport {
    /// `RLIMIT_CPU` seconds; `None`: `ceil(timeout) + 1` of each run.
    pub cpu_seconds: Option<u64>,
    /// `RLIMIT_AS` bytes; `None`: unlimited.
    pub address_space_bytes: Option<u64>,
    /// `RLIMIT_FSIZE` bytes.
    pub file_size_bytes: u64,
    /// `RLIMIT_NOFILE`.
    pub open_files: u64,
    /// `RLIMIT_CORE` (always 0: no core dumps).
    pub core_bytes: u64,
}

impl fmt::Display for Isolation {
    /// One line for a start-up log.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}: bwrap {} ({}), namespaces user+net+pid+ipc+uts+mount+cgroup{}, cgroup {}",
            self.level,
            self.bwrap_version.as_deref().unwrap_or("?"),
            self.bwrap_path.display(),
            if self.nested_user_namespaces_blocked { ", nested userns blocked" } else { "" },
            self.cgroup.as_str(),
        )?;
        match &self.cgroup {
            CgroupMode::None { reason } => write!(f, " ({reason})")?,
            _ => write!(f, " [{}]", self.controllers.join(","))?,
        }
        let r = &self.rlimits;
        write!(f, ", rlimits cpu=")?;
        match r.cpu_seconds {
            Some(s) => write!(f, "{s}s")?,
            None => write!(f, "timeout+1s")?,
        }
        match r.address_space_bytes {
            Some(b) => write!(f, " as={}MiB", b >> 20)?,
            None => write!(f, " as=unlimited")?,
        }
        write!(
            f,
            " fsize={}KiB nofile={} core={}, disk quota {}MiB (/work+/tmp), host uid {} gid {}, sandbox uid {}",
            r.file_size_bytes >> 10,
            r.open_files,
            r.core_bytes,
            self.disk_bytes >> 20,
            self.runs_as_uid,
            self.runs_as_gid,
            self.sandbox_uid
        )
    }
}
