//! `poll_oneoff` that a deadline or a cancel can interrupt while the guest sleeps.
//!
//! wasmtime-wasi's preview-1 `poll_oneoff` blocks the calling thread for the
//! whole timeout, and epoch interruption only reaches wasm code: a guest in
//! `sleep(10**9)` (Python `time.sleep`, QuickJS `os.sleep` and its timer wait,
//! C `nanosleep`) would hold the run's thread long past its deadline.
//!
//! So `poll_oneoff` is replaced. When every subscription is a clock (a sleep),
//! the wrapper sleeps itself, in slices of at most one epoch tick, checking the
//! cancel flag and the deadline between slices, then reports the expired
//! clocks. When any subscription is a file descriptor, wasmtime-wasi's own
//! `poll_oneoff` does the work (in this sandbox every descriptor is a memory
//! pipe, a capture pipe or a regular file, all ready at once, so it does not
//! block). It is reached through the trampoline (see [`crate::trampoline`]).

use std::time::{Duration, Instant};

use sundial_core::clock::SharedClock;
use wasmtime::{Caller, Extern, Linker, Trap};

use crate::{EPOCH_TICK, RunState, TrapKind, WASI_MODULE, trampoline};

const SUBSCRIPTION_SIZE: usize = 48;
const EVENT_SIZE: usize = 32;
const TAG_CLOCK: u8 = 0;
const CLOCK_REALTIME: u32 = 0;
const CLOCK_MONOTONIC: u32 = 1;
const ABSTIME: u16 = 1;
const ERRNO_FAULT: i32 = 21;
const ERRNO_INVAL: i32 = 28;

/// The monotonic clock given to each run's WASI context: nanoseconds since
/// `RunState::clock_base`, so that absolute monotonic timeouts can be turned
/// into host instants here.
pub(crate) struct RunClock(pub(crate) Instant);

impl wasmtime_wasi::HostMonotonicClock for RunClock {
    fn resolution(&self) -> u64 {
        1
    }

    fn now(&self) -> u64 {
        u64::try_from(self.0.elapsed().as_nanos()).unwrap_or(u64::MAX)
    }
}

/// The wall clock given to each run's WASI context: [`crate::RuntimeConfig::wall_clock`], to
/// the millisecond, so that absolute realtime timeouts are judged here by the same clock.
pub(crate) struct RunWallClock(pub(crate) SharedClock);

impl wasmtime_wasi::HostWallClock for RunWallClock {
    fn resolution(&self) -> Duration {
        Duration::from_millis(1)
    }

    fn now(&self) -> Duration {
        Duration::from_millis(u64::try_from(self.0.now_ms()).unwrap_or(0))
    }
}

/// Replaces `poll_oneoff` in `linker` (which already holds wasmtime-wasi's
/// functions) by the interruptible version.
pub(crate) fn shadow_poll_oneoff(linker: &mut Linker<RunState>) -> wasmtime::Result<()> {
    linker.allow_shadowing(true);
    linker.func_wrap(
        WASI_MODULE,
        "poll_oneoff",
        move |mut caller: Caller<'_, RunState>, subs: i32, events: i32, nsubs: i32, nevents: i32| {
            if let Some(errno) = sleep_on_clocks(&mut caller, subs, events, nsubs, nevents)? {
                return Ok(errno);
            }
            trampoline::call::<(i32, i32, i32, i32), i32>(&mut caller, "poll_oneoff", (subs, events, nsubs, nevents))
        },
    )?;
    linker.allow_shadowing(false);
    Ok(())
}

/// Handles a `poll_oneoff` whose subscriptions are all clocks: sleeps until the
/// first expires (interruptibly) and writes the events. `Ok(None)`: some
/// subscription is not a clock, for wasmtime-wasi to handle.
fn sleep_on_clocks(
    caller: &mut Caller<'_, RunState>,
    subs: i32,
    events: i32,
    nsubs: i32,
    nevents: i32,
) -> wasmtime::Result<Option<i32>> {
    let called = Instant::now();
    let Some(Extern::Memory(memory)) = caller.get_export("memory") else { return Ok(None) };
    let (Ok(n), subs_at, events_at, nevents_at) =
        (usize::try_from(nsubs), subs as u32 as usize, events as u32 as usize, nevents as u32 as usize)
    else {
        return Ok(None);
    };
    if n == 0 {
        return Ok(None);
    }
    let len = memory.data_size(&*caller);
    let fits = |at: usize, size: usize| at.checked_add(size).is_some_and(|end| end <= len);
    let Some(subs_size) = n.checked_mul(SUBSCRIPTION_SIZE) else { return Ok(Some(ERRNO_FAULT)) };
    if !fits(subs_at, subs_size) {
        return Ok(None);
    }
    let mut raw = vec![0u8; subs_size];
    memory.read(&*caller, subs_at, &mut raw)?;
    let subs: Vec<&[u8]> = raw.chunks_exact(SUBSCRIPTION_SIZE).collect();
    if subs.iter().any(|sub| sub[8] != TAG_CLOCK) {
        return Ok(None);
    }
    if !fits(events_at, n * EVENT_SIZE) || !fits(nevents_at, 4) {
        return Ok(Some(ERRNO_FAULT));
    }

    // Each clock's expiry as a host instant (`None`: too far away to represent).
    let clock_base = caller.data().clock_base;
    let wall_now_ns = u128::try_from(caller.data().wall_clock.now_ms()).unwrap_or(0) * 1_000_000;
    let mut expiries = Vec::with_capacity(n);
    for sub in &subs {
        let id = u32::from_le_bytes(sub[16..20].try_into().expect("4 bytes"));
        let timeout = u64::from_le_bytes(sub[24..32].try_into().expect("8 bytes"));
        let absolute = u16::from_le_bytes(sub[40..42].try_into().expect("2 bytes")) & ABSTIME != 0;
        let expiry = match (id, absolute) {
            (CLOCK_REALTIME | CLOCK_MONOTONIC, false) => called.checked_add(Duration::from_nanos(timeout)),
            (CLOCK_MONOTONIC, true) => clock_base.checked_add(Duration::from_nanos(timeout)),
            (CLOCK_REALTIME, true) => {
                let wait = u128::from(timeout).saturating_sub(wall_now_ns);
                called.checked_add(Duration::from_nanos(u64::try_from(wait).unwrap_or(u64::MAX)))
            }
            _ => return Ok(Some(ERRNO_INVAL)),
        };
        expiries.push(expiry);
    }
    let first = expiries.iter().flatten().min().copied();

    loop {
        if let Some(kind) = stop_reason(caller.data()) {
            caller.data_mut().stopped = Some(kind);
            return Err(Trap::Interrupt.into());
        }
        let now = Instant::now();
        let left = match first {
            Some(first) if now >= first => break,
            Some(first) => first - now,
            None => EPOCH_TICK,
        };
        std::thread::sleep(left.min(EPOCH_TICK));
    }

    let now = Instant::now();
    let mut count = 0u32;
    let mut out = Vec::with_capacity(n * EVENT_SIZE);
    for (sub, expiry) in subs.iter().zip(&expiries) {
        if expiry.is_some_and(|e| e <= now) {
            let mut event = [0u8; EVENT_SIZE];
            event[..8].copy_from_slice(&sub[..8]); // userdata; error 0 (success); type 0 (clock)
            out.extend_from_slice(&event);
            count += 1;
        }
    }
    memory.write(&mut *caller, events_at, &out)?;
    memory.write(&mut *caller, nevents_at, &count.to_le_bytes())?;
    Ok(Some(0))
}

/// Why the run must stop now, if it must.
pub(crate) fn stop_reason(state: &RunState) -> Option<TrapKind> {
    if state.cancel.as_ref().is_some_and(|c| c.load(std::sync::atomic::Ordering::Relaxed)) {
        Some(TrapKind::Cancelled)
    } else if state.deadline.is_some_and(|d| Instant::now() >= d) {
        Some(TrapKind::Deadline)
    } else {
        None
    }
}
