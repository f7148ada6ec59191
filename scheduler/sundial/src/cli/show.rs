//! What the command line prints: aligned tables with a header, or the API's JSON.

use serde_json::Value;
use sundial_core::clock::{Clock as _, SystemClock};

/// An aligned table: a header and rows, columns two spaces apart, the last not padded.
pub struct Table {
    header: Vec<&'static str>,
    rows: Vec<Vec<String>>,
}

impl Table {
    pub fn new(header: &[&'static str]) -> Table {
        Table { header: header.to_vec(), rows: Vec::new() }
    }

    pub fn row(&mut self, cells: Vec<String>) {
        debug_assert_eq!(cells.len(), self.header.len());
        self.rows.push(cells);
    }

    pub fn render(&self) -> String {
        let cols = self.header.len();
        let mut width = vec![0; cols];
        let header: Vec<String> = self.header.iter().map(|h| h.to_string()).collect();
        for row in std::iter::once(&header).chain(&self.rows) {
            for (w, cell) in width.iter_mut().zip(row) {
                *w = (*w).max(cell.chars().count());
            }
        }
        let mut out = String::new();
        for row in std::iter::once(&header).chain(&self.rows) {
            let mut line = String::new();
            for (i, cell) in row.iter().enumerate() {
                line.push_str(cell);
                if i + 1 < cols {
                    line.extend(std::iter::repeat_n(' ', width[i] - cell.chars().count() + 2));
                }
            }
            out.push_str(line.trim_end());
            out.push('\n');
        }
        out
    }
}

/// One line, at most `max` characters (an ellipsis marks a cut).
pub fn truncate(s: &str, max: usize) -> String {
    let one_line: String = s.split_whitespace().collect::<Vec<_>>().join(" ");
    if one_line.chars().count() <= max {
        return one_line;
    }
    let mut cut: String = one_line.chars().take(max.saturating_sub(1)).collect();
    cut.push('…');
    cut
}

/// A field as text: strings as they are, absent/null as `-`, anything else as compact JSON.
pub fn text(v: &Value) -> String {
    match v {
        Value::Null => "-".into(),
        Value::String(s) if s.is_empty() => "-".into(),
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// An RFC 3339 instant as `2026-03-28 12:00:01` (UTC), or `-`.
pub fn when(v: &Value) -> String {
    match v.as_str().and_then(|s| chrono::DateTime::parse_from_rfc3339(s).ok()) {
        Some(t) => t.with_timezone(&chrono::Utc).format("%Y-%m-%d %H:%M:%S").to_string(),
        None => text(v),
    }
}

/// From `start` to `end` (or to now, for something still going): `850ms`, `12.3s`, `4m05s`, `2h01m`.
pub fn duration(start: &Value, end: &Value) -> String {
    let parse = |v: &Value| v.as_str().and_then(|s| chrono::DateTime::parse_from_rfc3339(s).ok());
    let Some(start) = parse(start) else { return "-".into() };
    let end_ms = parse(end).map_or_else(|| SystemClock.now_ms(), |e| e.timestamp_millis());
    let ms = (end_ms - start.timestamp_millis()).max(0);
    if ms < 1000 {
        format!("{ms}ms")
    } else if ms < 60_000 {
        format!("{:.1}s", ms as f64 / 1000.0)
    } else if ms < 3_600_000 {
        format!("{}m{:02}s", ms / 60_000, ms / 1000 % 60)
    } else {
        format!("{}h{:02}m", ms / 3_600_000, ms / 60_000 % 60)
    }
}

/// A job's schedule in a few words.
pub fn schedule(s: &Value) -> String {
    let kind = s["kind"].as_str().unwrap_or("-");
    match kind {
        "cron" => {
            let expr = text(&s["expression"]);
            match s["timezone"].as_str() {
                Some(tz) if tz != "UTC" => format!("cron {expr} ({tz})"),
                _ => format!("cron {expr}"),
            }
        }
        "fixed_rate" => match s["every_ms"].as_i64() {
            Some(ms) if ms % 1000 == 0 => format!("every {}s", ms / 1000),
            Some(ms) => format!("every {ms}ms"),
            None => "fixed_rate".into(),
        },
        "once" => format!("once at {}", when(&s["at"])),
        other => other.to_string(),
    }
}

/// An object's fields as `KEY  VALUE` lines (nested values as compact JSON), skipping `skip`.
pub fn fields(v: &Value, skip: &[&str]) -> String {
    let mut t = Table::new(&["FIELD", "VALUE"]);
    if let Some(m) = v.as_object() {
        for (k, val) in m.iter().filter(|(k, _)| !skip.contains(&k.as_str())) {
            t.row(vec![k.clone(), text(val)]);
        }
    }
    t.render()
}

/// `jobs list`: ID, NAME, APP, STATE, SCHEDULE, NEXT FIRE (UTC; `-` for none) (the app by
/// name where `app_names` knows it).
pub fn jobs(items: &[Value], app_names: &std::collections::HashMap<String, String>) -> String {
    let mut t = Table::new(&["ID", "NAME", "APP", "STATE", "SCHEDULE", "NEXT FIRE"]);
    for j in items {
        let app_id = text(&j["app_id"]);
        let app = app_names.get(&app_id).cloned().unwrap_or(app_id);
        t.row(vec![
            text(&j["id"]),
            text(&j["name"]),
            app,
            text(&j["state"]),
            schedule(&j["schedule"]),
            when(&j["next_fire_at"]),
        ]);
    }
    t.render()
}

/// `runs list`: ID, JOB, STATE, SCHEDULED, STARTED, DURATION, MESSAGE (cut to one short line).
pub fn runs(items: &[Value]) -> String {
    let mut t = Table::new(&["ID", "JOB", "STATE", "SCHEDULED", "STARTED", "DURATION", "MESSAGE"]);
    for r in items {
        let message = match (&r["message"], &r["reason"]) {
            (Value::String(m), _) if !m.is_empty() => m.clone(),
            (_, Value::String(reason)) => reason.clone(),
            _ => String::new(),
        };
        t.row(vec![
            text(&r["id"]),
            text(&r["job_id"]),
            text(&r["state"]),
            when(&r["scheduled_at"]),
            when(&r["started_at"]),
            duration(&r["started_at"], &r["finished_at"]),
            truncate(&message, 60),
        ]);
    }
    t.render()
}

/// A run's attempts: ATTEMPT, SHARD, STATE, EXECUTOR, STARTED, DURATION, MESSAGE.
pub fn attempts(items: &[Value]) -> String {
    let mut t = Table::new(&["ATTEMPT", "SHARD", "STATE", "EXECUTOR", "STARTED", "DURATION", "MESSAGE"]);
    for a in items {
        let msg = a["message"].as_str().or(a["reason"].as_str()).unwrap_or("");
        let executor = if a["address"].is_string() { &a["address"] } else { &a["executor_id"] };
        t.row(vec![
            text(&a["attempt"]),
            text(&a["shard"]),
            text(&a["state"]),
            text(executor),
            when(&a["started_at"]),
            duration(&a["started_at"], &a["finished_at"]),
            truncate(msg, 60),
        ]);
    }
    t.render()
}

/// `apps list`: ID, NAME, ENDPOINTS.
pub fn apps(items: &[Value]) -> String {
    let mut t = Table::new(&["ID", "NAME", "ENDPOINTS", "DESCRIPTION"]);
    for a in items {
        let endpoints = a["endpoints"]
            .as_array()
            .map(|e| e.iter().map(text).collect::<Vec<_>>().join(","))
            .filter(|s| !s.is_empty())
            .unwrap_or_else(|| "-".into());
        t.row(vec![text(&a["id"]), text(&a["name"]), endpoints, truncate(&text(&a["description"]), 40)]);
    }
    t.render()
}

/// `scripts list`: ID, NAME, RUNTIME, VERSION, UPDATED.
pub fn scripts(items: &[Value]) -> String {
    let mut t = Table::new(&["ID", "NAME", "RUNTIME", "VERSION", "UPDATED"]);
    for s in items {
        t.row(vec![
            text(&s["id"]),
            text(&s["name"]),
            text(&s["runtime"]),
            text(&s["current_version"]),
            when(&s["updated_at"]),
        ]);
    }
    t.render()
}

/// One log line: `2026-03-28 12:00:01.250  info   message` (with `[shard s, attempt a]`
/// when either is not the first).
pub fn log_line(l: &Value) -> String {
    let at = l["at"]
        .as_str()
        .and_then(|s| chrono::DateTime::parse_from_rfc3339(s).ok())
        .map(|t| t.with_timezone(&chrono::Utc).format("%Y-%m-%d %H:%M:%S%.3f").to_string())
        .unwrap_or_else(|| text(&l["at"]));
    let (shard, attempt) = (l["shard"].as_i64().unwrap_or(0), l["attempt"].as_i64().unwrap_or(1));
    let place = if shard != 0 || attempt > 1 { format!("[shard {shard}, attempt {attempt}] ") } else { String::new() };
    format!("{at}  {:<5}  {place}{}", text(&l["level"]), l["message"].as_str().unwrap_or(""))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn tables_align_their_columns_under_a_header() {
        let mut t = Table::new(&["ID", "NAME", "STATE"]);
        t.row(vec!["job_1".into(), "a-much-longer-name".into(), "active".into()]);
        t.row(vec!["job_22".into(), "b".into(), "stopped".into()]);
        assert_eq!(
            t.render(),
            "ID      NAME                STATE\n\
             job_1   a-much-longer-name  active\n\
             job_22  b                   stopped\n"
        );
    }

    #[test]
    fn cells_are_short_and_readable() {
        assert_eq!(truncate("a  b\nc", 10), "a b c");
        assert_eq!(truncate("abcdefghijkl", 5), "abcd…");
        assert_eq!(when(&json!("2026-03-28T13:00:01.250+01:00")), "2026-03-28 12:00:01");
        assert_eq!(when(&Value::Null), "-");
        assert_eq!(duration(&json!("2026-03-28T12:00:00Z"), &json!("2026-03-28T12:00:00.850Z")), "850ms");
        assert_eq!(duration(&json!("2026-03-28T12:00:00Z"), &json!("2026-03-28T12:04:05Z")), "4m05s");
        assert_eq!(duration(&Value::Null, &Value::Null), "-");
        assert_eq!(
            schedule(&json!({"kind": "cron", "expression": "0 * * * * *", "timezone": "Europe/Berlin"})),
            "cron 0 * * * * * (Europe/Berlin)"
        );
        assert_eq!(schedule(&json!({"kind": "fixed_rate", "every_ms": 60000})), "every 60s");
        assert_eq!(schedule(&json!({"kind": "manual"})), "manual");
        let line = log_line(
            &json!({"at": "2026-03-28T12:00:01.250Z", "level": "warn", "message": "slow", "shard": 1, "attempt": 2}),
        );
        assert_eq!(line, "2026-03-28 12:00:01.250  warn   [shard 1, attempt 2] slow");
    }

    #[test]
    fn the_job_list_shows_each_jobs_next_fire() {
        let items = [
            json!({"id": "job_1", "name": "nightly", "app_id": "app_1", "state": "active",
                   "schedule": {"kind": "cron", "expression": "0 30 2 * * *", "timezone": "Europe/Berlin"},
                   "next_fire_at": "2026-03-29T01:00:00.000Z"}),
            json!({"id": "job_2", "name": "by-hand", "app_id": "app_2", "state": "active",
                   "schedule": {"kind": "manual"}, "next_fire_at": null}),
        ];
        let names = std::collections::HashMap::from([("app_1".to_string(), "billing".to_string())]);
        assert_eq!(
            jobs(&items, &names),
            "ID     NAME     APP      STATE   SCHEDULE                           NEXT FIRE\n\
             job_1  nightly  billing  active  cron 0 30 2 * * * (Europe/Berlin)  2026-03-29 01:00:00\n\
             job_2  by-hand  app_2    active  manual                             -\n"
        );
    }
}
