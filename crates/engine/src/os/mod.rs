//! The operating-system layer: the only place in the engine that contains
//! `unsafe`.
//!
//! * [`mmap`]: read-only mapping of the data file ([`mmap::Mmap`]) and the
//!   read-write shared mapping of the lock file ([`mmap::SharedRegion`]) with safe
//!   atomic accessors.
//! * [`file`]: positional I/O (`pwritev`/`pread`), `fdatasync`, sizes.
//! * [`ofd`]: open-file-description `fcntl` byte-range locks.
//! * [`mutex`]: glibc robust process-shared pthread mutexes living in the lock
//!   file mapping.
//!
//! Target: Linux (x86_64 glibc is the verified layout; see `format::lock`).

pub(crate) mod file;
pub(crate) mod memory;
pub(crate) mod mmap;
pub(crate) mod mutex;
pub(crate) mod ofd;

use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;

/// The OS page size (4096 on x86_64 Linux), queried once.
pub(crate) fn page_size() -> usize {
    use std::sync::OnceLock;
    static PS: OnceLock<usize> = OnceLock::new();
    *PS.get_or_init(|| {
        // SAFETY: sysconf has no memory-safety preconditions.
        let v = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
        if v > 0 {
            v as usize
        } else {
            4096
        }
    })
}

/// Hints the CPU to start loading the cache line holding `bytes[off]`
/// (no effect on targets without the hint). Searches use it to overlap the
/// memory latency of the probes they may make next with the one they are
/// making. `off` is not checked: an address outside the slice is only a
/// wasted hint.
#[inline(always)]
pub(crate) fn prefetch(bytes: &[u8], off: usize) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: `_mm_prefetch` needs SSE, which every x86_64 CPU has. A
    // prefetch reads nothing architecturally, never faults and changes no
    // memory, so any address is allowed; `wrapping_add` forms the address
    // without claiming it is in bounds.
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(bytes.as_ptr().wrapping_add(off).cast())
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (bytes, off);
}

/// The id of this process (what libmdbx stores in reader slots and uses as
/// the byte offset of the per-process OFD locks).
///
/// Cached: every write transaction checks it (a forked child must not use
/// its parent's environment), and glibc makes each `getpid` a system call.
/// A fork hook clears the cache in the child, so the child reads its own id.
/// (A child made by a raw `clone` system call skips the hooks of
/// `pthread_atfork`; `fork`, `posix_spawn` and `std::process::Command` all
/// run them or exec at once.)
pub(crate) fn getpid() -> u32 {
    use std::sync::atomic::Ordering;
    use std::sync::Once;
    static HOOK: Once = Once::new();
    HOOK.call_once(|| {
        extern "C" fn in_child() {
            CACHED_PID.store(0, Ordering::Relaxed);
        }
        // SAFETY: `in_child` is a plain function that only stores to an
        // atomic (async-signal-safe, as a fork handler must be); the hook
        // stays valid for the life of the process.
        let rc = unsafe { libc::pthread_atfork(None, None, Some(in_child)) };
        // Without the hook the cache cannot be trusted across a fork: it
        // stays off (the id is read each time).
        if rc != 0 {
            CACHED_PID.store(u32::MAX, Ordering::Relaxed);
        }
    });
    match CACHED_PID.load(Ordering::Relaxed) {
        u32::MAX => std::process::id(),
        0 => {
            let pid = std::process::id();
            // Should another thread fork meanwhile, the child (which has
            // only the forking thread) still gets 0 from its hook, which
            // runs after the fork.
            CACHED_PID.store(pid, Ordering::Relaxed);
            pid
        }
        pid => pid,
    }
}

/// [`getpid`]'s cache: 0 when not known, `u32::MAX` when not used.
static CACHED_PID: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);

/// `pthread_self()` of the calling thread as libmdbx stores it in the `tid`
/// field of a reader slot.
pub(crate) fn thread_self() -> u64 {
    // SAFETY: pthread_self has no preconditions and cannot fail.
    unsafe { libc::pthread_self() as u64 }
}

/// Monotonic time in nanoseconds from `CLOCK_BOOTTIME` (what libmdbx's
/// `osal_monotime()` uses on Linux), falling back to `CLOCK_MONOTONIC`.
pub(crate) fn monotime_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    for clock in [libc::CLOCK_BOOTTIME, libc::CLOCK_MONOTONIC] {
        // SAFETY: `ts` is a valid, writable timespec for the duration of the call.
        let rc = unsafe { libc::clock_gettime(clock, &mut ts) };
        if rc == 0 {
            return (ts.tv_sec as u64).wrapping_mul(1_000_000_000).wrapping_add(ts.tv_nsec as u64);
        }
    }
    0
}

/// The process a thread belongs to (`Tgid` in `/proc/TID/status`), if the
/// thread exists.
pub(crate) fn process_of_thread(tid: u32) -> Option<u32> {
    let status = std::fs::read_to_string(format!("/proc/{tid}/status")).ok()?;
    status.lines().find_map(|l| l.strip_prefix("Tgid:")).and_then(|v| v.trim().parse().ok())
}

/// `(st_dev, st_ino)` of an open file: identity of the file in this system.
pub(crate) fn file_identity(file: &File) -> io::Result<(u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    let md = file.metadata()?;
    Ok((md.dev(), md.ino()))
}

/// Number of hard links of an open file (0 once it was unlinked).
pub(crate) fn file_nlink(file: &File) -> io::Result<u64> {
    use std::os::unix::fs::MetadataExt;
    Ok(file.metadata()?.nlink())
}

/// Whether the open file lives on procfs (`PROC_SUPER_MAGIC`); libmdbx only
/// trusts `/proc/sys/kernel/random/boot_id` when it really comes from procfs.
pub(crate) fn is_procfs(file: &File) -> bool {
    const PROC_SUPER_MAGIC: i64 = 0x9fa0;
    // SAFETY: an all-zero statfs is a valid value of this plain C struct.
    let mut st: libc::statfs = unsafe { std::mem::zeroed() };
    // SAFETY: the descriptor is valid for the lifetime of `file` and `st` is a
    // valid, writable statfs.
    let rc = unsafe { libc::fstatfs(file.as_raw_fd(), &mut st) };
    rc == 0 && st.f_type as i64 == PROC_SUPER_MAGIC
}

/// Whether the open file lives in memory (tmpfs or ramfs), as libmdbx's
/// "in-core" check decides: there, making pages present costs no I/O.
pub(crate) fn is_in_memory_fs(file: &File) -> bool {
    const TMPFS_MAGIC: i64 = 0x0102_1994;
    const RAMFS_MAGIC: i64 = 0x8584_58f6;
    // SAFETY: an all-zero statfs is a valid value of this plain C struct.
    let mut st: libc::statfs = unsafe { std::mem::zeroed() };
    // SAFETY: the descriptor is valid for the lifetime of `file` and `st` is a
    // valid, writable statfs.
    let rc = unsafe { libc::fstatfs(file.as_raw_fd(), &mut st) };
    rc == 0 && matches!(st.f_type as i64, TMPFS_MAGIC | RAMFS_MAGIC)
}

/// Converts a C return code (`-1` + errno) into an `io::Result`.
pub(crate) fn cvt(rc: libc::c_int) -> io::Result<libc::c_int> {
    if rc == -1 {
        Err(io::Error::last_os_error())
    } else {
        Ok(rc)
    }
}
