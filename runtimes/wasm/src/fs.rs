//! The run's file limits, enforced in the WASI file layer: a disk quota on everything
//! under its `/work` directory, and a cap on the files it holds open at once.
//!
//! wasmtime-wasi's preview-1 functions write wherever the guest asks, as much as it asks:
//! a script could fill the host's file system through its `/work`. So the functions
//! that can make the directory's contents grow (`fd_write`, `fd_pwrite`,
//! `fd_filestat_set_size`, `path_open` with `O_CREAT`, `path_create_directory`,
//! `path_symlink`, `path_link`) are replaced by wrappers that first charge what the call
//! could add at most, then call wasmtime-wasi's own function through the trampoline
//! (see [`crate::sleep`] for why a trampoline). `fd_allocate` needs no wrapper: this
//! wasmtime-wasi answers it `ENOTSUP`.
//!
//! The accounting is an upper bound that is made exact when it matters: the bytes in
//! use were measured (a walk of the directory) at the last scan, and every call since
//! has added at most its charge. While that bound stays within the quota nothing is
//! measured; when a call would take it past the quota the directory is measured again,
//! and only if the real use plus the call's charge is still over the quota does the run
//! stop ([`TrapKind::DiskQuota`]). So deleting files gives their room back, and the
//! directory never holds more than the quota (give or take one call's rounding).
//!
//! What counts: every file, directory and link under `/work` counts its allocated size
//! or its length, whichever is larger, rounded up to 4 KiB, and at least 4 KiB (so
//! creating empty files costs room too). A write to the run's stdout or stderr is not
//! disk: the descriptors that are the run's standard streams are followed through
//! `fd_renumber` and `fd_close`.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use wasmtime::{Caller, Extern, Linker};

use crate::{RunState, TrapKind, WASI_MODULE, trampoline};

/// The accounting unit: what an empty entry costs, and what one write may round up by.
pub(crate) const BLOCK: u64 = 4096;
const OFLAGS_CREAT: i32 = 1;

/// A run stopped by one of its limits (a trap the guest cannot catch).
#[derive(Debug)]
pub(crate) struct LimitExceeded {
    pub(crate) kind: TrapKind,
    pub(crate) message: String,
}

impl std::fmt::Display for LimitExceeded {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for LimitExceeded {}

/// The file limits of one run and what it uses.
#[derive(Debug)]
pub(crate) struct FsState {
    dir: PathBuf,
    disk_limit: u64,
    open_limit: u64,
    /// Bytes in use at the last scan.
    used: u64,
    /// Most bytes added since the last scan.
    pending: u64,
    /// The descriptors that are the run's stdin, stdout and stderr (not files).
    stdio: HashSet<u32>,
    /// Descriptors opened by `path_open` and still open.
    open: HashSet<u32>,
}

impl FsState {
    /// `dir` is the host directory the guest sees as `/work`; what it holds already counts.
    pub(crate) fn new(dir: &Path, disk_limit: u64, open_limit: u64) -> Self {
        FsState {
            dir: dir.to_path_buf(),
            disk_limit,
            open_limit,
            used: usage(dir),
            pending: 0,
            stdio: [0, 1, 2].into_iter().collect(),
            open: HashSet::new(),
        }
    }

    /// Room for a call that may add `bytes` (plus one block of rounding), or why not.
    fn charge(&mut self, bytes: u64) -> Result<(), LimitExceeded> {
        let bytes = bytes.saturating_add(BLOCK);
        if self.used.saturating_add(self.pending).saturating_add(bytes) <= self.disk_limit {
            self.pending += bytes;
            return Ok(());
        }
        self.used = usage(&self.dir);
        self.pending = 0;
        if self.used.saturating_add(bytes) <= self.disk_limit {
            self.pending = bytes;
            return Ok(());
        }
        Err(self.over(bytes))
    }

    fn over(&self, bytes: u64) -> LimitExceeded {
        LimitExceeded {
            kind: TrapKind::DiskQuota,
            message: format!(
                "disk quota exceeded: the run's files would take more than its disk quota of {} bytes \
                 ({} bytes in use, the write asked for up to {bytes} more)",
                self.disk_limit, self.used
            ),
        }
    }

    fn is_stdio(&self, fd: i32) -> bool {
        self.stdio.contains(&(fd as u32))
    }
}

/// Bytes the tree under `dir` counts against the quota (the root itself not included).
pub(crate) fn usage(dir: &Path) -> u64 {
    let mut total = 0u64;
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else { continue };
        for entry in entries.flatten() {
            let Ok(meta) = entry.path().symlink_metadata() else { continue };
            total = total.saturating_add(entry_cost(&meta));
            if meta.is_dir() {
                stack.push(entry.path());
            }
        }
    }
    total
}

fn entry_cost(meta: &std::fs::Metadata) -> u64 {
    #[cfg(unix)]
    let allocated = std::os::unix::fs::MetadataExt::blocks(meta).saturating_mul(512);
    #[cfg(not(unix))]
    let allocated = 0;
    let size = meta.len().max(allocated);
    size.div_ceil(BLOCK).max(1).saturating_mul(BLOCK)
}

/// Sum of the lengths of the guest's `iovs` array, `None` if it is not in memory (the
/// original function then answers `EFAULT` and writes nothing).
fn iovs_len(caller: &mut Caller<'_, RunState>, iovs: i32, count: i32) -> Option<u64> {
    let Some(Extern::Memory(memory)) = caller.get_export("memory") else { return None };
    let (at, count) = (iovs as u32 as usize, count as u32 as usize);
    let size = count.checked_mul(8)?;
    let data = memory.data(&*caller);
    let raw = data.get(at..at.checked_add(size)?)?;
    Some(raw.chunks_exact(8).map(|iov| u64::from(u32::from_le_bytes(iov[4..8].try_into().expect("4 bytes")))).sum())
}

fn read_u32(caller: &mut Caller<'_, RunState>, at: i32) -> Option<u32> {
    let Some(Extern::Memory(memory)) = caller.get_export("memory") else { return None };
    let at = at as u32 as usize;
    let bytes = memory.data(&*caller).get(at..at.checked_add(4)?)?;
    Some(u32::from_le_bytes(bytes.try_into().ok()?))
}

/// Charges `bytes` to the run's quota, when it has one.
fn charge(caller: &mut Caller<'_, RunState>, bytes: u64) -> wasmtime::Result<()> {
    match caller.data_mut().fs.as_mut() {
        Some(fs) => fs.charge(bytes).map_err(wasmtime::Error::new),
        None => Ok(()),
    }
}

/// Replaces the preview-1 functions that can grow `/work` (and those that move or close
/// descriptors, to follow stdio and the open files) in `linker` by the checking versions.
pub(crate) fn shadow_fs_functions(linker: &mut Linker<RunState>) -> wasmtime::Result<()> {
    linker.allow_shadowing(true);
    shadow_writes(linker)?;
    shadow_path_open(linker)?;
    shadow_new_entries(linker)?;
    shadow_descriptor_moves(linker)?;
    linker.allow_shadowing(false);
    Ok(())
}

/// `fd_write`, `fd_pwrite`, `fd_filestat_set_size`: their bytes are charged to the quota
/// (writes to stdio are not).
fn shadow_writes(linker: &mut Linker<RunState>) -> wasmtime::Result<()> {
    linker.func_wrap(
        WASI_MODULE,
        "fd_write",
        |mut caller: Caller<'_, RunState>, fd: i32, iovs: i32, count: i32, nwritten: i32| {
            if caller.data().fs.as_ref().is_some_and(|fs| !fs.is_stdio(fd)) {
                let bytes = iovs_len(&mut caller, iovs, count).unwrap_or(0);
                charge(&mut caller, bytes)?;
            }
            trampoline::call::<(i32, i32, i32, i32), i32>(&mut caller, "fd_write", (fd, iovs, count, nwritten))
        },
    )?;
    linker.func_wrap(
        WASI_MODULE,
        "fd_pwrite",
        |mut caller: Caller<'_, RunState>, fd: i32, iovs: i32, count: i32, offset: i64, nwritten: i32| {
            if caller.data().fs.as_ref().is_some_and(|fs| !fs.is_stdio(fd)) {
                let bytes = iovs_len(&mut caller, iovs, count).unwrap_or(0);
                let fs = caller.data().fs.as_ref().expect("checked above");
                // The file would be longer than the whole quota.
                if (offset as u64).saturating_add(bytes) > fs.disk_limit {
                    return Err(wasmtime::Error::new(fs.over((offset as u64).saturating_add(bytes))));
                }
                charge(&mut caller, bytes)?;
            }
            trampoline::call::<(i32, i32, i32, i64, i32), i32>(
                &mut caller,
                "fd_pwrite",
                (fd, iovs, count, offset, nwritten),
            )
        },
    )?;
    linker.func_wrap(WASI_MODULE, "fd_filestat_set_size", |mut caller: Caller<'_, RunState>, fd: i32, size: i64| {
        charge(&mut caller, size as u64)?;
        trampoline::call::<(i32, i64), i32>(&mut caller, "fd_filestat_set_size", (fd, size))
    })?;
    Ok(())
}

/// `path_open`: refused at the open-files limit, a created file charged an entry; the
/// descriptor it opens is followed.
fn shadow_path_open(linker: &mut Linker<RunState>) -> wasmtime::Result<()> {
    linker.func_wrap(
        WASI_MODULE,
        "path_open",
        |mut caller: Caller<'_, RunState>,
         dirfd: i32,
         dirflags: i32,
         path: i32,
         path_len: i32,
         oflags: i32,
         rights_base: i64,
         rights_inheriting: i64,
         fdflags: i32,
         fd_out: i32| {
            if let Some(fs) = caller.data().fs.as_ref()
                && fs.open.len() as u64 >= fs.open_limit
            {
                return Err(wasmtime::Error::new(LimitExceeded {
                    kind: TrapKind::OpenFiles,
                    message: format!("open files exceeded: the run holds {} files open, its limit", fs.open_limit),
                }));
            }
            if oflags & OFLAGS_CREAT != 0 {
                charge(&mut caller, 0)?;
            }
            let rc = trampoline::call::<(i32, i32, i32, i32, i32, i64, i64, i32, i32), i32>(
                &mut caller,
                "path_open",
                (dirfd, dirflags, path, path_len, oflags, rights_base, rights_inheriting, fdflags, fd_out),
            )?;
            if rc == 0
                && let Some(fd) = read_u32(&mut caller, fd_out)
                && let Some(fs) = caller.data_mut().fs.as_mut()
            {
                fs.stdio.remove(&fd);
                fs.open.insert(fd);
            }
            Ok(rc)
        },
    )?;
    Ok(())
}

/// `path_create_directory`, `path_symlink`, `path_link`: each new entry is charged (a
/// symlink with its target's length).
fn shadow_new_entries(linker: &mut Linker<RunState>) -> wasmtime::Result<()> {
    linker.func_wrap(
        WASI_MODULE,
        "path_create_directory",
        |mut caller: Caller<'_, RunState>, fd: i32, path: i32, path_len: i32| {
            charge(&mut caller, 0)?;
            trampoline::call::<(i32, i32, i32), i32>(&mut caller, "path_create_directory", (fd, path, path_len))
        },
    )?;
    linker.func_wrap(
        WASI_MODULE,
        "path_symlink",
        |mut caller: Caller<'_, RunState>, old: i32, old_len: i32, fd: i32, new: i32, new_len: i32| {
            charge(&mut caller, old_len as u32 as u64)?;
            trampoline::call::<(i32, i32, i32, i32, i32), i32>(
                &mut caller,
                "path_symlink",
                (old, old_len, fd, new, new_len),
            )
        },
    )?;
    linker.func_wrap(
        WASI_MODULE,
        "path_link",
        |mut caller: Caller<'_, RunState>,
         old_fd: i32,
         old_flags: i32,
         old: i32,
         old_len: i32,
         new_fd: i32,
         new: i32,
         new_len: i32| {
            charge(&mut caller, 0)?;
            trampoline::call::<(i32, i32, i32, i32, i32, i32, i32), i32>(
                &mut caller,
                "path_link",
                (old_fd, old_flags, old, old_len, new_fd, new, new_len),
            )
        },
    )?;
    Ok(())
}

/// `fd_renumber`, `fd_close`: stdio and the open files are followed to their new descriptors.
fn shadow_descriptor_moves(linker: &mut Linker<RunState>) -> wasmtime::Result<()> {
    linker.func_wrap(WASI_MODULE, "fd_renumber", |mut caller: Caller<'_, RunState>, from: i32, to: i32| {
        let rc = trampoline::call::<(i32, i32), i32>(&mut caller, "fd_renumber", (from, to))?;
        if rc == 0
            && from != to
            && let Some(fs) = caller.data_mut().fs.as_mut()
        {
            let (from, to) = (from as u32, to as u32);
            // `to` was closed, then `from` moved there.
            let was_stdio = fs.stdio.remove(&from);
            let was_open = fs.open.remove(&from);
            fs.stdio.remove(&to);
            fs.open.remove(&to);
            if was_stdio {
                fs.stdio.insert(to);
            }
            if was_open {
                fs.open.insert(to);
            }
        }
        Ok(rc)
    })?;
    linker.func_wrap(WASI_MODULE, "fd_close", |mut caller: Caller<'_, RunState>, fd: i32| {
        let rc = trampoline::call::<i32, i32>(&mut caller, "fd_close", fd)?;
        if rc == 0
            && let Some(fs) = caller.data_mut().fs.as_mut()
        {
            fs.stdio.remove(&(fd as u32));
            fs.open.remove(&(fd as u32));
        }
        Ok(rc)
    })?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn usage_counts_every_entry_at_least_a_block() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(usage(dir.path()), 0);
        std::fs::write(dir.path().join("empty"), b"").unwrap();
        std::fs::create_dir(dir.path().join("sub")).unwrap();
        std::fs::write(dir.path().join("sub/data"), vec![1u8; 10_000]).unwrap();
        let used = usage(dir.path());
        // empty file: one block; directory: at least one; 10,000 bytes: three blocks.
        assert!((5 * BLOCK..=6 * BLOCK).contains(&used), "{used}");
    }

    #[test]
    fn a_charge_past_the_quota_measures_again_before_refusing() {
        let dir = tempfile::tempdir().unwrap();
        let mut fs = FsState::new(dir.path(), 10 * BLOCK, 16);
        fs.charge(4 * BLOCK).unwrap();
        fs.charge(4 * BLOCK).unwrap();
        // The bound (10 blocks: two charges of 4 + their rounding) is full, but nothing
        // was written: a fresh measure gives the room back.
        fs.charge(4 * BLOCK).unwrap();
        assert_eq!(fs.used, 0);
        std::fs::write(dir.path().join("big"), vec![1u8; 8 * BLOCK as usize]).unwrap();
        // Within the bound: not measured yet.
        fs.charge(4 * BLOCK).unwrap();
        // Past it: measured (8 blocks in use), and 8 + 5 blocks do not fit in 10.
        let e = fs.charge(4 * BLOCK).unwrap_err();
        assert_eq!(e.kind, TrapKind::DiskQuota);
        assert!(e.message.contains("disk quota"), "{}", e.message);
        assert_eq!(fs.used, 8 * BLOCK);
        fs.charge(0).unwrap();
    }
}
