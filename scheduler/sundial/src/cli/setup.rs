//! Where the command line's nodes and API key come from, and reading request files.
//!
//! Nodes: `--url` (repeated or comma-separated), else `SUNDIAL_URL`, else the config file's
//! `urls`/`url`, else `http://127.0.0.1:7700`. The key: `SUNDIAL_API_KEY`, else the config
//! file's `api_key`; never a flag (a key on a command line stays in the shell's history).
//! The config file: `$SUNDIAL_CLI_CONFIG`, else `$XDG_CONFIG_HOME/sundial/config.toml`, else
//! `~/.config/sundial/config.toml`. (`SUNDIAL_CONFIG` is `sundial serve`'s own file.)

use std::io::Read as _;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::Value;

/// A problem with what the user gave (flags, files, settings): exit code 2.
#[derive(Debug)]
pub struct Usage(pub String);

impl std::fmt::Display for Usage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Usage {}

fn usage<T>(msg: impl Into<String>) -> Result<T, Usage> {
    Err(Usage(msg.into()))
}

pub const DEFAULT_URL: &str = "http://127.0.0.1:7700";

/// The config file's keys (any other is refused).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileConfig {
    pub url: Option<String>,
    pub urls: Option<Vec<String>>,
    pub api_key: Option<String>,
}

/// Where the nodes and key come from, resolved.
#[derive(Debug)]
pub struct Target {
    pub urls: Vec<String>,
    pub api_key: String,
}

/// The environment the resolution reads (a struct so tests need not touch the process's).
#[derive(Debug, Default)]
pub struct Env {
    pub url: Option<String>,
    pub api_key: Option<String>,
    pub cli_config: Option<PathBuf>,
    pub xdg_config_home: Option<PathBuf>,
    pub home: Option<PathBuf>,
}

impl Env {
    pub fn from_process() -> Env {
        let var = |k: &str| std::env::var(k).ok().filter(|v| !v.trim().is_empty());
        Env {
            url: var("SUNDIAL_URL"),
            api_key: var("SUNDIAL_API_KEY"),
            cli_config: var("SUNDIAL_CLI_CONFIG").map(PathBuf::from),
            xdg_config_home: var("XDG_CONFIG_HOME").map(PathBuf::from),
            home: var("HOME").map(PathBuf::from),
        }
    }

    /// The config file to read, and whether it must exist (named by `SUNDIAL_CLI_CONFIG`).
    fn config_path(&self) -> Option<(PathBuf, bool)> {
        if let Some(p) = &self.cli_config {
            return Some((p.clone(), true));
        }
        let base = self.xdg_config_home.clone().or_else(|| self.home.as_ref().map(|h| h.join(".config")))?;
        Some((base.join("sundial").join("config.toml"), false))
    }
}

/// Read the config file, if any. A file that others may read is used with a warning.
fn read_config(env: &Env, warn: &mut dyn FnMut(String)) -> Result<(FileConfig, Option<PathBuf>), Usage> {
    let Some((path, required)) = env.config_path() else { return Ok((FileConfig::default(), None)) };
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound && !required => return Ok((FileConfig::default(), None)),
        Err(e) => return usage(format!("reading the config file {}: {e}", path.display())),
    };
    // toml's own message quotes the offending line, which may be the key: name the place only.
    let cfg: FileConfig = toml::from_str(&text).map_err(|e| {
        let line = e.span().map(|s| text[..s.start.min(text.len())].lines().count().max(1));
        let what = e.message().lines().next().unwrap_or("not valid TOML").to_string();
        let what = if what.contains("api_key") || what.contains("sk_") { "not valid TOML".into() } else { what };
        Usage(format!(
            "the config file {}{} is not usable: {what} (it takes `url`, `urls` and `api_key`)",
            path.display(),
            line.map(|l| format!(", line {l},")).unwrap_or_default()
        ))
    })?;
    if cfg.api_key.is_some()
        && let Some(mode) = file_mode(&path)
        && mode & 0o077 != 0
    {
        warn(format!(
            "the config file {} holds an API key and others may read it (mode {:o}); run `chmod 600 {}`",
            path.display(),
            mode & 0o777,
            path.display()
        ));
    }
    Ok((cfg, Some(path)))
}

#[cfg(unix)]
fn file_mode(path: &Path) -> Option<u32> {
    use std::os::unix::fs::MetadataExt as _;
    std::fs::metadata(path).ok().map(|m| m.mode())
}

#[cfg(not(unix))]
fn file_mode(_path: &Path) -> Option<u32> {
    None
}

fn split_urls<'a>(list: impl IntoIterator<Item = &'a str>) -> Vec<String> {
    list.into_iter().flat_map(|u| u.split(',')).map(str::trim).filter(|u| !u.is_empty()).map(String::from).collect()
}

/// Resolve the nodes and key from the flags, the environment and the config file.
pub fn resolve(flag_urls: &[String], env: &Env, warn: &mut dyn FnMut(String)) -> Result<Target, Usage> {
    let (cfg, path) = read_config(env, warn)?;
    let mut urls = split_urls(flag_urls.iter().map(String::as_str));
    if urls.is_empty() {
        urls = split_urls(env.url.as_deref());
    }
    if urls.is_empty() {
        urls = split_urls(cfg.urls.iter().flatten().map(String::as_str).chain(cfg.url.as_deref()));
    }
    if urls.is_empty() {
        urls.push(DEFAULT_URL.into());
    }
    for u in &urls {
        let ok = (u.starts_with("http://") || u.starts_with("https://")) && !u.contains(char::is_whitespace);
        if !ok {
            return usage(format!("`{u}` is not a node URL: give one like http://127.0.0.1:7700"));
        }
    }
    let api_key = env.api_key.clone().or(cfg.api_key).map(|k| k.trim().to_string()).filter(|k| !k.is_empty());
    let Some(api_key) = api_key else {
        let file = path
            .or_else(|| env.config_path().map(|(p, _)| p))
            .map_or_else(|| "~/.config/sundial/config.toml".to_string(), |p| p.display().to_string());
        return usage(format!(
            "no API key: set SUNDIAL_API_KEY, or `api_key = \"sk_…\"` in {file} (mode 600). \
             Keys are not taken as flags: a command line stays in the shell's history"
        ));
    };
    Ok(Target { urls, api_key })
}

/// Read a request file (`-` for standard input): JSON, or YAML (JSON's superset), which must
/// be an object.
pub fn read_object(file: &str) -> Result<Value, Usage> {
    let (text, name) = if file == "-" {
        let mut s = String::new();
        std::io::stdin().read_to_string(&mut s).map_err(|e| Usage(format!("reading standard input: {e}")))?;
        (s, "standard input".to_string())
    } else {
        let s = std::fs::read_to_string(file).map_err(|e| Usage(format!("reading {file}: {e}")))?;
        (s, file.to_string())
    };
    let json_only = file.ends_with(".json");
    let v: Value = match serde_json::from_str(&text) {
        Ok(v) => v,
        Err(e) if json_only => return usage(format!("{name} is not valid JSON: {e}")),
        Err(_) => serde_norway::from_str(&text).map_err(|e| Usage(format!("{name} is neither JSON nor YAML: {e}")))?,
    };
    if !v.is_object() {
        return usage(format!("{name} must hold an object (a mapping of fields), not {}", kind_of(&v)));
    }
    Ok(v)
}

fn kind_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "nothing",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

/// `--param key=value` (a string) or `--param key:=json` (any JSON value) onto `params`.
pub fn apply_param(params: &mut serde_json::Map<String, Value>, arg: &str) -> Result<(), Usage> {
    let (key, value) = if let Some((k, v)) = arg.split_once(":=").filter(|(k, _)| !k.contains('=')) {
        let v = serde_json::from_str(v)
            .map_err(|e| Usage(format!("--param {k}:=…: the value is not JSON ({e}); use {k}=… for a string")))?;
        (k, v)
    } else if let Some((k, v)) = arg.split_once('=') {
        (k, Value::String(v.to_string()))
    } else {
        return usage(format!("--param `{arg}`: expected KEY=VALUE (a string) or KEY:=JSON"));
    };
    if key.is_empty() {
        return usage(format!("--param `{arg}`: the key is empty"));
    }
    params.insert(key.to_string(), value);
    Ok(())
}

/// `90`, `90s`, `5m`, `2h`, `500ms`.
pub fn parse_duration(s: &str) -> Result<std::time::Duration, String> {
    let s = s.trim();
    let (num, unit) = s.split_at(s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len()));
    let n: u64 = num.parse().map_err(|_| format!("`{s}` is not a duration: give e.g. 90s, 5m or 1h"))?;
    let ms = match unit {
        "ms" => n,
        "" | "s" => n.saturating_mul(1000),
        "m" => n.saturating_mul(60_000),
        "h" => n.saturating_mul(3_600_000),
        _ => return Err(format!("`{s}` is not a duration: the unit is ms, s, m or h")),
    };
    Ok(std::time::Duration::from_millis(ms))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn env_with(dir: &Path, file: Option<&str>) -> Env {
        let cfg = dir.join("sundial").join("config.toml");
        if let Some(text) = file {
            std::fs::create_dir_all(cfg.parent().unwrap()).unwrap();
            std::fs::write(&cfg, text).unwrap();
        }
        Env { xdg_config_home: Some(dir.to_path_buf()), ..Env::default() }
    }

    #[test]
    fn flags_beat_the_environment_which_beats_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let mut env = env_with(dir.path(), Some("urls = [\"http://a:1\", \"http://b:2\"]\napi_key = \"sk_file\"\n"));
        let mut warnings = Vec::new();
        let t = resolve(&[], &env, &mut |w| warnings.push(w)).unwrap();
        assert_eq!((t.urls, t.api_key.as_str()), (vec!["http://a:1".to_string(), "http://b:2".to_string()], "sk_file"));
        env.url = Some("http://env:3, http://env:4".into());
        env.api_key = Some("sk_env".into());
        let t = resolve(&[], &env, &mut |w| warnings.push(w)).unwrap();
        assert_eq!((t.urls.len(), t.api_key.as_str()), (2, "sk_env"));
        assert_eq!(t.urls[1], "http://env:4");
        let t =
            resolve(&["http://f:5,http://f:6".into(), "http://f:7".into()], &env, &mut |w| warnings.push(w)).unwrap();
        assert_eq!(t.urls, ["http://f:5", "http://f:6", "http://f:7"]);
    }

    #[test]
    fn no_key_no_file_and_bad_urls_are_clear() {
        let dir = tempfile::tempdir().unwrap();
        let env = env_with(dir.path(), None);
        let e = resolve(&[], &env, &mut |_| {}).unwrap_err().0;
        assert!(e.contains("SUNDIAL_API_KEY") && e.contains("config.toml"), "{e}");
        let env = Env { api_key: Some("sk_x".into()), ..env };
        assert_eq!(resolve(&[], &env, &mut |_| {}).unwrap().urls, [DEFAULT_URL]);
        let e = resolve(&["localhost:7700".into()], &env, &mut |_| {}).unwrap_err().0;
        assert!(e.contains("`localhost:7700` is not a node URL"), "{e}");
        // A named config file that is missing is an error; the default one is optional.
        let env = Env { cli_config: Some(dir.path().join("nope.toml")), ..env };
        assert!(resolve(&[], &env, &mut |_| {}).unwrap_err().0.contains("nope.toml"));
    }

    #[test]
    fn a_broken_or_open_config_file_never_echoes_the_key() {
        let dir = tempfile::tempdir().unwrap();
        let env = env_with(dir.path(), Some("url = \"http://a:1\"\napi_key = sk_live_secret\n"));
        let e = resolve(&[], &env, &mut |_| {}).unwrap_err().0;
        assert!(e.contains("line 2") && !e.contains("sk_live_secret"), "{e}");
        let env = env_with(dir.path(), Some("api_key = \"sk_live_secret\"\ncolour = 1\n"));
        let e = resolve(&[], &env, &mut |_| {}).unwrap_err().0;
        assert!(!e.contains("sk_live_secret"), "{e}");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            let env = env_with(dir.path(), Some("api_key = \"sk_live_secret\"\n"));
            let path = dir.path().join("sundial/config.toml");
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
            let mut warnings = Vec::new();
            assert_eq!(resolve(&[], &env, &mut |w| warnings.push(w)).unwrap().api_key, "sk_live_secret");
            assert!(warnings.len() == 1 && warnings[0].contains("chmod 600"), "{warnings:?}");
            assert!(!warnings[0].contains("sk_live_secret"));
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
            warnings.clear();
            resolve(&[], &env, &mut |w| warnings.push(w)).unwrap();
            assert!(warnings.is_empty(), "{warnings:?}");
        }
    }

    #[test]
    fn params_are_strings_or_json() {
        let mut p = serde_json::Map::new();
        for a in ["to=world", "n:=3", "tags:=[\"a\",\"b\"]", "eq=a=b", "url=http://x:1/?a:=b"] {
            apply_param(&mut p, a).unwrap();
        }
        assert_eq!(
            Value::Object(p.clone()),
            json!({"to": "world", "n": 3, "tags": ["a", "b"], "eq": "a=b", "url": "http://x:1/?a:=b"})
        );
        assert!(apply_param(&mut p, "novalue").unwrap_err().0.contains("KEY=VALUE"));
        assert!(apply_param(&mut p, "n:=nope").unwrap_err().0.contains("not JSON"));
        assert!(apply_param(&mut p, "=x").unwrap_err().0.contains("empty"));
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("90").unwrap().as_secs(), 90);
        assert_eq!(parse_duration("5m").unwrap().as_secs(), 300);
        assert_eq!(parse_duration("250ms").unwrap().as_millis(), 250);
        assert!(parse_duration("5 parsecs").is_err());
        assert!(parse_duration("m").is_err());
    }
}
