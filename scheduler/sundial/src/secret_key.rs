//! The operator's secret keys, which seal the app signing secrets at rest
//! (`sundial_store::secrets`): from `secret_key` (a value), from `secret_key_file`, or, on
//! SQLite with neither, from `secret.key` beside the database, generated on first start.
//! The first key is the current one; the others (after commas, or on later lines) only
//! open values sealed before a rotation.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use sundial_store::{KeyRing, SecretKey};

/// The key file's name beside a SQLite database when no key is configured.
pub const DEFAULT_FILE: &str = "secret.key";

/// Where this node's keys come from (resolved from the settings).
#[derive(Clone, PartialEq)]
pub enum KeySource {
    /// `secret_key`: keys written out, comma-separated, the current one first.
    Value(String),
    /// `secret_key_file`: an owner-only file, one key per line, the current one first.
    File(PathBuf),
    /// SQLite without either: this file, generated (owner-only) if missing.
    Beside(PathBuf),
    /// An in-memory SQLite database: a key that lives as long as the process (and the data).
    Ephemeral,
    /// MySQL without either: refused at start (every node of a cluster needs the same key).
    Missing,
}

impl std::fmt::Debug for KeySource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            KeySource::Value(_) => f.write_str("Value(***)"),
            KeySource::File(p) => f.debug_tuple("File").field(p).finish(),
            KeySource::Beside(p) => f.debug_tuple("Beside").field(p).finish(),
            KeySource::Ephemeral => f.write_str("Ephemeral"),
            KeySource::Missing => f.write_str("Missing"),
        }
    }
}

/// The keys loaded, and the file generated for them on this start (if any).
pub struct Loaded {
    pub ring: KeyRing,
    pub generated: Option<PathBuf>,
}

pub const MISSING: &str = "a MySQL/MariaDB database needs a secret key, the same on every node, to encrypt the app \
     signing secrets: set `secret_key` (SUNDIAL_SECRET_KEY: base64 or hex of 32 random bytes, e.g. from \
     `head -c 32 /dev/urandom | base64`) or `secret_key_file` (SUNDIAL_SECRET_KEY_FILE)";

/// Load (or, [`KeySource::Beside`], create) the keys.
pub fn load(source: &KeySource) -> anyhow::Result<Loaded> {
    match source {
        KeySource::Value(text) => {
            let ring = parse_ring(text.split(','), "secret_key")?;
            Ok(Loaded { ring, generated: None })
        }
        KeySource::File(path) => Ok(Loaded { ring: read_file(path)?, generated: None }),
        KeySource::Beside(path) => {
            let generated = if path.exists() { None } else { generate(path)? };
            Ok(Loaded { ring: read_file(path)?, generated })
        }
        KeySource::Ephemeral => Ok(Loaded { ring: KeyRing::new(SecretKey::generate(), vec![]), generated: None }),
        KeySource::Missing => bail!(MISSING),
    }
}

/// Keys from their texts (blank ones and `#` comments skipped), the current one first.
fn parse_ring<'a>(texts: impl Iterator<Item = &'a str>, what: &str) -> anyhow::Result<KeyRing> {
    let mut keys = Vec::new();
    for (n, t) in texts.map(str::trim).filter(|t| !t.is_empty() && !t.starts_with('#')).enumerate() {
        keys.push(SecretKey::parse(t).with_context(|| format!("{what}: key {}", n + 1))?);
    }
    let mut keys = keys.into_iter();
    let Some(current) = keys.next() else { bail!("{what}: no key given") };
    Ok(KeyRing::new(current, keys.collect()))
}

/// Read an owner-only key file; one readable by group or others is refused.
fn read_file(path: &Path) -> anyhow::Result<KeyRing> {
    let what = format!("secret key file {}", path.display());
    let meta = std::fs::metadata(path).with_context(|| format!("reading {what}"))?;
    anyhow::ensure!(meta.is_file(), "{what} is not a file");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = meta.permissions().mode() & 0o777;
        anyhow::ensure!(
            mode & 0o077 == 0,
            "{what} is open to other users (mode {mode:04o}); make it owner-only: chmod 600 {}",
            path.display()
        );
    }
    let text = std::fs::read_to_string(path).with_context(|| format!("reading {what}"))?;
    parse_ring(text.lines(), &what)
}

/// Write a fresh key to `path` (mode 0600, its directory created 0700), atomically: a
/// temporary file is written and synced, then linked to `path`, which fails if another
/// process got there first (then its key is the one). Returns the path if this call wrote it.
fn generate(path: &Path) -> anyhow::Result<Option<PathBuf>> {
    let dir = path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder.create(dir).with_context(|| format!("creating the data directory {}", dir.display()))?;
    let tmp = dir.join(format!(".secret.key.{}.tmp", std::process::id()));
    let mut opts = std::fs::File::options();
    opts.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut opts, 0o600);
    let written = (|| {
        let mut f = opts.open(&tmp)?;
        writeln!(
            f,
            "# Sundial's secret key: it encrypts the app signing secrets in the database beside it.\n\
             # Back it up with the database; without it the apps' secrets cannot be read.\n{}",
            SecretKey::generate().to_base64()
        )?;
        f.sync_all()?;
        match std::fs::hard_link(&tmp, path) {
            Ok(()) => Ok(true),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(false),
            Err(e) => Err(e),
        }
    })();
    let _ = std::fs::remove_file(&tmp);
    let written = written.with_context(|| format!("writing the secret key file {}", path.display()))?;
    if written && let Ok(d) = std::fs::File::open(dir) {
        let _ = d.sync_all();
    }
    Ok(written.then(|| path.to_path_buf()))
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::*;

    fn mode(p: &Path) -> u32 {
        std::fs::metadata(p).unwrap().permissions().mode() & 0o777
    }

    #[test]
    fn a_key_is_generated_once_owner_only_in_an_owner_only_directory() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("data").join("secret.key");
        let first = load(&KeySource::Beside(path.clone())).unwrap();
        assert_eq!(first.generated.as_deref(), Some(path.as_path()));
        assert_eq!(mode(&path), 0o600);
        assert_eq!(mode(path.parent().unwrap()), 0o700);
        let again = load(&KeySource::Beside(path.clone())).unwrap();
        assert_eq!(again.generated, None, "kept, not generated again");
        assert_eq!(again.ring.current_id(), first.ring.current_id());
        let names: Vec<_> =
            std::fs::read_dir(path.parent().unwrap()).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(names, vec![std::ffi::OsString::from("secret.key")], "no temporary file left");
    }

    #[test]
    fn a_key_file_open_to_others_is_refused_naming_the_fix() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("secret.key");
        load(&KeySource::Beside(path.clone())).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        for source in [KeySource::Beside(path.clone()), KeySource::File(path.clone())] {
            let err = format!("{:#}", load(&source).err().unwrap());
            assert!(err.contains("0644") && err.contains("chmod 600"), "{err}");
        }
    }

    #[test]
    fn rings_come_from_a_value_or_a_file_the_first_key_current() {
        let (a, b) = (SecretKey::generate(), SecretKey::generate());
        let value = format!("{}, {}", a.to_base64(), b.to_base64());
        let ring = load(&KeySource::Value(value)).unwrap().ring;
        assert_eq!(ring.ids(), vec![a.id(), b.id()]);

        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("keys");
        std::fs::write(&path, format!("# rotated 2026-11\n{}\n\n{}\n", b.to_base64(), a.to_base64())).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        assert_eq!(load(&KeySource::File(path)).unwrap().ring.ids(), vec![b.id(), a.id()]);

        let err = format!("{:#}", load(&KeySource::Value("nope".into())).err().unwrap());
        assert!(err.contains("secret_key: key 1") && err.contains("32 bytes"), "{err}");
        assert!(!err.contains("nope"), "the key text is never quoted: {err}");
        assert!(format!("{:#}", load(&KeySource::Value(" , ".into())).err().unwrap()).contains("no key"));
        let err = format!("{:#}", load(&KeySource::Missing).err().unwrap());
        assert!(err.contains("SUNDIAL_SECRET_KEY") && err.contains("secret_key_file"), "{err}");
        assert!(!format!("{:?}", KeySource::Value(a.to_base64())).contains(&a.to_base64()));
    }
}
