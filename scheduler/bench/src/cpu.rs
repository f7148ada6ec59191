//! CPU time of the processes involved, from `/proc`, over the measurement window.

use serde::Serialize;

/// Clock ticks per second of `/proc` times (`getconf CLK_TCK`; 100 on Linux).
pub fn clk_tck() -> f64 {
    std::process::Command::new("getconf")
        .arg("CLK_TCK")
        .output()
        .ok()
        .and_then(|o| String::from_utf8_lossy(&o.stdout).trim().parse().ok())
        .unwrap_or(100.0)
}

/// utime + stime of a process, in ticks.
pub fn process_ticks(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // Fields after the `(comm)`, which may contain spaces: state is field 3, utime 14, stime 15.
    let rest = &stat[stat.rfind(')')? + 2..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    Some(f.get(11)?.parse::<u64>().ok()? + f.get(12)?.parse::<u64>().ok()?)
}

/// (busy, total) ticks of the whole machine, summed over CPUs.
pub fn machine_ticks() -> Option<(u64, u64)> {
    let stat = std::fs::read_to_string("/proc/stat").ok()?;
    let line = stat.lines().next()?.strip_prefix("cpu ")?;
    let v: Vec<u64> = line.split_whitespace().filter_map(|x| x.parse().ok()).collect();
    let total: u64 = v.iter().take(8).sum();
    let idle = v.get(3)? + v.get(4).copied().unwrap_or(0);
    Some((total - idle, total))
}

/// A snapshot of the tracked processes and the machine.
#[derive(Clone)]
pub struct Sample {
    at: std::time::Instant,
    procs: Vec<(String, Option<u32>, Option<u64>)>,
    machine: Option<(u64, u64)>,
}

pub fn sample(procs: &[(&str, Option<u32>)]) -> Sample {
    Sample {
        at: std::time::Instant::now(),
        procs: procs.iter().map(|(n, pid)| (n.to_string(), *pid, pid.and_then(process_ticks))).collect(),
        machine: machine_ticks(),
    }
}

/// Resident memory of a process (`VmRSS`), KiB.
pub fn rss_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// CPU time this process has used so far (user + system), seconds.
pub fn own_cpu_secs() -> Option<f64> {
    process_ticks(std::process::id()).map(|t| t as f64 / clk_tck())
}

/// Per process: % of one core over the interval; machine: busy % of all cores.
#[derive(Debug, Serialize)]
pub struct Usage {
    pub processes: Vec<(String, Option<f64>)>,
    /// Per process: CPU seconds (user + system) used over the interval.
    pub cpu_secs: Vec<(String, Option<f64>)>,
    pub machine_busy_pct_of_all_cores: Option<f64>,
    /// Busy time of the machine outside the tracked processes (another load distorts the run).
    pub everything_else_pct_of_one_core: Option<f64>,
    pub cores: usize,
}

pub fn usage(a: &Sample, b: &Sample) -> Usage {
    let secs = b.at.duration_since(a.at).as_secs_f64().max(1e-9);
    let tck = clk_tck();
    let cpu_secs: Vec<(String, Option<f64>)> = a
        .procs
        .iter()
        .zip(&b.procs)
        .map(|((name, _, x), (_, _, y))| {
            let used = match (x, y) {
                (Some(x), Some(y)) => Some((y.saturating_sub(*x)) as f64 / tck),
                _ => None,
            };
            (name.clone(), used)
        })
        .collect();
    let processes: Vec<(String, Option<f64>)> =
        cpu_secs.iter().map(|(name, used)| (name.clone(), used.map(|u| u / secs * 100.0))).collect();
    let machine = match (a.machine, b.machine) {
        (Some((b0, t0)), Some((b1, t1))) if t1 > t0 => Some((b1 - b0) as f64 / (t1 - t0) as f64 * 100.0),
        _ => None,
    };
    let cores = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
    // The machine's busy time not spent by the tracked processes, in % of one core.
    let everything_else_pct_of_one_core = machine.map(|m| {
        let tracked: f64 = processes.iter().filter_map(|(_, p)| *p).sum();
        (m * cores as f64 - tracked).max(0.0)
    });
    Usage { processes, cpu_secs, machine_busy_pct_of_all_cores: machine, everything_else_pct_of_one_core, cores }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_own_process_and_machine() {
        assert!(process_ticks(std::process::id()).is_some());
        assert!(rss_kib(std::process::id()).is_some_and(|k| k > 0));
        let (busy, total) = machine_ticks().unwrap();
        assert!(busy <= total && total > 0);
    }
}
