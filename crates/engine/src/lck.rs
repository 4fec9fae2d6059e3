//! The libmdbx lock file ("lck"), lock format v7 on Linux x86_64 glibc
//! (format doc §15): the shared region with the writer mutex, the reader
//! table, and the OFD file-lock protocol that decides who initialises and who
//! destroys it.
//!
//! This module contains no `unsafe`: the mapping is accessed through the safe
//! atomic accessors of [`SharedRegion`] and the pthread wrappers of
//! [`SharedMutex`].
//!
//! # Header layout (576 bytes on x86_64 glibc)
//!
//! Offsets are computed from `size_of::<pthread_mutex_t>()` (40 on x86_64
//! glibc) with libmdbx's rules (`pgops`, `wrt_lock`, `rdt_lock` and `rdt`
//! start on 64-byte boundaries); the values below are asserted at compile
//! time on x86_64 glibc.
//!
//! | off | size | field | notes |
//! |---|---|---|---|
//! | 0 | 8 | `magic_and_version` | [`LOCK_MAGIC`] `0x59659DBDEF4C1107` |
//! | 8 | 4 | `os_and_format` | [`LOCK_FORMAT`] `0x3635569F` (§15.3) |
//! | 12 | 4 | `envmode` | mode flags of the environment (§15.8) |
//! | 16 | 4 | `autosync_threshold` | pages; 0 = off |
//! | 20 | 4 | `meta_sync_txnid` | low 32 bits of the last durable meta txnid (minus a lazy bias) |
//! | 24 | 8 | `autosync_period` | monotonic ns; 0 = off |
//! | 32 | 8 | `bait_uniqueness` | libmdbx scratch |
//! | 40 | 8 | `mlcnt[2]` | mlock counters |
//! | 48 | 16 | padding | |
//! | 64 | 248 | `pgops` | statistics; `wops` (u64) at 120 is set to 1 on init |
//! | 312 | 8 | padding | |
//! | 320 | 40 | `wrt_lock` | writer mutex (`__kind` byte at 336 = `0xB2`) |
//! | 360 | 8 | `cached_oldest_txnid` | monotonic |
//! | 368 | 8 | `cached_oldest_retired` | `pages_retired` of that snapshot |
//! | 376 | 8 | `eoos_timestamp` | 0 = synced |
//! | 384 | 8 | `unsynced_pages` | |
//! | 392 | 8 | `readers_check_timestamp` | monotonic ns of the last dead-reader sweep |
//! | 400 | 4 | `discarded_tail` | |
//! | 404 | 4 | `readahead_anchor` | |
//! | 408 | 16 | `mincore_cache.begin[4]` | |
//! | 424 | 32 | `mincore_cache.mask[4]` | |
//! | 456 | 56 | padding | |
//! | 512 | 40 | `rdt_lock` | reader-table mutex (`__kind` byte at 528 = `0xB2`) |
//! | 552 | 4 | `rdt_length` | slots ever used (high-water mark) |
//! | 556 | 4 | `rdt_refresh_flag` | 1 = changed, `0x4E6F6E65` ("None") = unchanged since the last scan |
//! | 560 | 16 | padding | |
//! | 576 | 32×N | `rdt[]` | reader slots |
//!
//! # Reader slot (32 bytes)
//!
//! | off | size | field | meaning |
//! |---|---|---|---|
//! | 0 | 8 | `txnid` | snapshot txnid; `>= 0xFFFFFFFF00000000` = none |
//! | 8 | 8 | `tid` | `pthread_self` of the owner thread (`…FF` parked, `…FE` ousted) |
//! | 16 | 4 | `pid` | owner pid; 0 = free |
//! | 20 | 4 | `snapshot_pages_used` | `first_unallocated` of the snapshot |
//! | 24 | 8 | `snapshot_pages_retired` | `pages_retired` of the snapshot |
//!
//! # File locks (OFD, §15.7)
//!
//! | file | range | mode | held by |
//! |---|---|---|---|
//! | lck | byte 0 | WRITE | initialiser / destroyer (transient) |
//! | lck | byte 0 | READ | every process using the environment |
//! | lck | byte `pid` | WRITE | every process with registered reader slots |
//! | dxb | byte `pid` | WRITE (RW) / READ (RO) | every non-exclusive process |
//! | dxb | whole file | WRITE / READ | initialiser (transient), lock-less opener |

// This layer is API surface for the environment, transactions, tools and
// tests (accessors for every lock-file field, detach/attach helpers, hints);
// not every item has a caller in every build.
#![allow(dead_code)]

use std::fs::{File, OpenOptions};
use std::io;
use std::marker::PhantomData;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicU8, Ordering};
use std::sync::Mutex;

use crate::error::{Error, Result};
use crate::os;
use crate::os::mmap::SharedRegion;
use crate::os::mutex::{Locked, SharedMutex};
use crate::os::ofd::{self, LockMode, WHOLE_FILE_LEN};

// ---------------------------------------------------------------------------
// Layout

const fn align_up(x: usize, a: usize) -> usize {
    x.div_ceil(a) * a
}

/// Size of glibc's `pthread_mutex_t` (40 on x86_64).
pub(crate) const MUTEX_SIZE: usize = std::mem::size_of::<libc::pthread_mutex_t>();
const CACHELINE: usize = 64;

/// The 56-bit MDBX magic shared by data and lock files.
pub(crate) const MDBX_MAGIC: u64 = 0x59659DBDEF4C11;
/// Lock file layout generation (libmdbx 0.14.2 line).
pub(crate) const LOCK_VERSION: u64 = 7;
/// First 8 bytes of the lock file.
pub(crate) const LOCK_MAGIC: u64 = (MDBX_MAGIC << 8) | LOCK_VERSION;

pub(crate) const OFF_MAGIC: usize = 0;
pub(crate) const OFF_FORMAT: usize = 8;
pub(crate) const OFF_ENVMODE: usize = 12;
pub(crate) const OFF_AUTOSYNC_THRESHOLD: usize = 16;
pub(crate) const OFF_META_SYNC_TXNID: usize = 20;
pub(crate) const OFF_AUTOSYNC_PERIOD: usize = 24;
pub(crate) const OFF_PGOPS: usize = 64;
const PGOPS_SIZE: usize = 248;
pub(crate) const OFF_PGOPS_WOPS: usize = OFF_PGOPS + 56;
/// Counters of the `pgops` block in the order of [`PageOps::FIELDS`]
/// (format doc §15.2): newly, cow, clone, split, merge, spill, unspill, wops,
/// msync, fsync, prefault, mincore.
const PGOPS_COUNTERS: usize = 12;
pub(crate) const OFF_WRT_LOCK: usize = align_up(OFF_PGOPS + PGOPS_SIZE, CACHELINE);
pub(crate) const OFF_CACHED_OLDEST: usize = align_up(OFF_WRT_LOCK + MUTEX_SIZE, 8);
pub(crate) const OFF_CACHED_OLDEST_RETIRED: usize = OFF_CACHED_OLDEST + 8;
pub(crate) const OFF_EOOS_TIMESTAMP: usize = OFF_CACHED_OLDEST + 16;
pub(crate) const OFF_UNSYNCED_PAGES: usize = OFF_CACHED_OLDEST + 24;
pub(crate) const OFF_READERS_CHECK_TIMESTAMP: usize = OFF_CACHED_OLDEST + 32;
pub(crate) const OFF_DISCARDED_TAIL: usize = OFF_CACHED_OLDEST + 40;
pub(crate) const OFF_READAHEAD_ANCHOR: usize = OFF_CACHED_OLDEST + 44;
pub(crate) const OFF_MINCORE_BEGIN: usize = OFF_CACHED_OLDEST + 48;
pub(crate) const OFF_MINCORE_MASK: usize = OFF_MINCORE_BEGIN + 16;
const END_OF_WRITER_PART: usize = OFF_MINCORE_MASK + 32;
pub(crate) const OFF_RDT_LOCK: usize = align_up(END_OF_WRITER_PART, CACHELINE);
pub(crate) const OFF_RDT_LENGTH: usize = align_up(OFF_RDT_LOCK + MUTEX_SIZE, 4);
pub(crate) const OFF_RDT_REFRESH_FLAG: usize = OFF_RDT_LENGTH + 4;
/// Start of the reader table = size of the header.
pub(crate) const OFF_RDT: usize = align_up(OFF_RDT_REFRESH_FLAG + 4, CACHELINE);
/// Size of the lock-file header (576 on x86_64 glibc).
pub(crate) const HEADER_SIZE: usize = OFF_RDT;

/// Size of one reader slot.
pub(crate) const SLOT_SIZE: usize = 32;
pub(crate) const SLOT_TXNID: usize = 0;
pub(crate) const SLOT_TID: usize = 8;
pub(crate) const SLOT_PID: usize = 16;
pub(crate) const SLOT_PAGES_USED: usize = 20;
pub(crate) const SLOT_PAGES_RETIRED: usize = 24;

/// `MDBX_LCK_SIGN` for POSIX pthread-mutex builds.
const LCK_SIGN: u32 = 0x8017;

/// The `os_and_format` layout fingerprint (§15.3).
pub(crate) const LOCK_FORMAT: u32 = LCK_SIGN
    .wrapping_mul(27733)
    .wrapping_add((SLOT_SIZE as u32).wrapping_mul(13))
    .wrapping_add((SLOT_PAGES_USED as u32).wrapping_mul(251))
    .wrapping_add((OFF_CACHED_OLDEST as u32).wrapping_mul(83))
    .wrapping_add((OFF_RDT_LENGTH as u32).wrapping_mul(37))
    .wrapping_add((OFF_RDT as u32).wrapping_mul(29));

#[cfg(all(target_arch = "x86_64", target_env = "gnu"))]
const _: () = {
    assert!(MUTEX_SIZE == 40);
    assert!(OFF_WRT_LOCK == 320);
    assert!(OFF_CACHED_OLDEST == 360);
    assert!(OFF_READERS_CHECK_TIMESTAMP == 392);
    assert!(OFF_MINCORE_MASK == 424);
    assert!(OFF_RDT_LOCK == 512);
    assert!(OFF_RDT_LENGTH == 552);
    assert!(OFF_RDT_REFRESH_FLAG == 556);
    assert!(OFF_RDT == 576);
    assert!(OFF_PGOPS_WOPS == 120);
    assert!(OFF_PGOPS + 8 * PGOPS_COUNTERS == 160);
    assert!(LOCK_FORMAT == 0x3635569F);
};

/// Page-operation counters of the environment (libmdbx's `pgop_stat`), kept
/// in the lock file and shared by every process that has the environment
/// open, rdbx and libmdbx alike, since the lock file was created
/// (`mdbx_stat -p`). rdbx never spills dirty pages, prefaults or calls
/// `mincore`, and writes with `pwritev`, so it leaves those counters (and
/// `msync`) to libmdbx processes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PageOps {
    /// Pages allocated as new (leaf, branch or large).
    pub newly: u64,
    /// Pages copied to be changed (copy-on-write).
    pub cow: u64,
    /// Dirty pages of a parent copied for a nested transaction.
    pub clone: u64,
    /// Page splits.
    pub split: u64,
    /// Page merges.
    pub merge: u64,
    /// Dirty pages spilled to disk during a big transaction.
    pub spill: u64,
    /// Spilled pages read back.
    pub unspill: u64,
    /// Write operations (system calls, not pages).
    pub wops: u64,
    /// `msync` calls.
    pub msync: u64,
    /// `fsync`/`fdatasync` calls.
    pub fsync: u64,
    /// Prefault writes.
    pub prefault: u64,
    /// `mincore` calls.
    pub mincore: u64,
}

impl PageOps {
    fn to_array(self) -> [u64; PGOPS_COUNTERS] {
        [
            self.newly,
            self.cow,
            self.clone,
            self.split,
            self.merge,
            self.spill,
            self.unspill,
            self.wops,
            self.msync,
            self.fsync,
            self.prefault,
            self.mincore,
        ]
    }

    fn from_array(a: [u64; PGOPS_COUNTERS]) -> PageOps {
        let [newly, cow, clone, split, merge, spill, unspill, wops, msync, fsync, prefault, mincore] = a;
        PageOps { newly, cow, clone, split, merge, spill, unspill, wops, msync, fsync, prefault, mincore }
    }
}

/// Default reader-table capacity request.
pub(crate) const DEFAULT_READERS: u32 = 61;
/// Upper bound of the reader-table capacity.
pub(crate) const READERS_LIMIT: u32 = 32767;
/// Canonical "no snapshot" txnid of a slot.
pub(crate) const TXNID_NONE: u64 = u64::MAX;
/// Any slot txnid at or above this value means "no snapshot".
pub(crate) const TXNID_INVALID_FROM: u64 = 0xFFFF_FFFF_0000_0000;
/// Largest usable txnid.
pub(crate) const MAX_TXNID: u64 = 0xFFFF_FFFE_FFFF_FFFF;
/// `rdt_refresh_flag` value meaning "nothing changed since the last scan".
pub(crate) const NOTHING_CHANGED: u32 = u32::from_be_bytes(*b"None");
/// Minimal data-file size (3 metas of 256 bytes).
const MIN_DXB_SIZE: u64 = 768;
/// Bias subtracted from `meta_sync_txnid` for "written but not synced" metas
/// in non-writemap lazy mode (§15.8).
pub(crate) const LAZY_BIAS_FD: u32 = 0x5555_5555u32.wrapping_add(0x1FFF_FFFF);

/// Environment mode flags recorded in `envmode` (§15.8).
pub(crate) mod envmode {
    pub const SAFE_NOSYNC: u32 = 0x10000;
    pub const RDONLY: u32 = 0x20000;
    pub const NOMETASYNC: u32 = 0x40000;
    pub const WRITEMAP: u32 = 0x80000;
    pub const UTTERLY_NOSYNC: u32 = SAFE_NOSYNC | 0x100000;
    pub const NORDAHEAD: u32 = 0x800000;
    pub const LIFORECLAIM: u32 = 0x4000000;
    /// Flags that make up `envmode`.
    pub const MASK: u32 = SAFE_NOSYNC | UTTERLY_NOSYNC | NOMETASYNC | LIFORECLAIM | NORDAHEAD | RDONLY | WRITEMAP;
    /// "Lazy" durability flags.
    pub const LAZY: u32 = SAFE_NOSYNC | UTTERLY_NOSYNC | NOMETASYNC;
}

/// Lock-file permissions derived from the data-file `mode` (§1.3):
/// `(mode & 0o066) | 0o600`, plus group/other write where read was given.
/// Idempotent, so an already converted mode may be passed again.
pub(crate) fn lck_file_mode(mode: u32) -> u32 {
    let mut m = (mode & 0o066) | 0o600;
    if mode & 0o040 != 0 {
        m |= 0o020;
    }
    if mode & 0o004 != 0 {
        m |= 0o002;
    }
    m
}

/// Size of a freshly initialised lock file for `max_readers` slots.
pub(crate) fn lck_size_for(max_readers: u32) -> u64 {
    let ps = os::page_size() as u64;
    let raw = HEADER_SIZE as u64 + u64::from(max_readers) * SLOT_SIZE as u64;
    raw.div_ceil(ps) * ps
}

/// Reader capacity of a lock file of `size` bytes (clamped to [`READERS_LIMIT`]).
pub(crate) fn max_readers_for(size: u64) -> u32 {
    let n = size.saturating_sub(HEADER_SIZE as u64) / SLOT_SIZE as u64;
    n.min(u64::from(READERS_LIMIT)) as u32
}

// ---------------------------------------------------------------------------
// In-process registry: one LockFile per data file per process.

static OPEN_ENVS: Mutex<Vec<(u64, u64)>> = Mutex::new(Vec::new());

#[derive(Debug)]
struct RegistryEntry((u64, u64));

impl RegistryEntry {
    fn claim(id: (u64, u64), what: &Path) -> Result<RegistryEntry> {
        let mut g = OPEN_ENVS.lock().unwrap_or_else(|e| e.into_inner());
        if g.contains(&id) {
            return Err(Error::Busy(format!("the database of {} is already open in this process", what.display())));
        }
        g.push(id);
        Ok(RegistryEntry(id))
    }
}

impl Drop for RegistryEntry {
    fn drop(&mut self) {
        let mut g = OPEN_ENVS.lock().unwrap_or_else(|e| e.into_inner());
        g.retain(|x| *x != self.0);
    }
}

// ---------------------------------------------------------------------------
// The lock file

/// In-process state of a reader slot (index = slot number).
const SLOT_NOT_OURS: u8 = 0;
const SLOT_IDLE: u8 = 1;
const SLOT_BUSY: u8 = 2;

#[derive(Debug)]
struct Shared {
    region: SharedRegion,
    file: File,
    /// Whether this process holds the WRITE lock on lck byte `pid`.
    pid_locked: Mutex<bool>,
    /// Per-slot ownership by this `LockFile` (`SLOT_*`), one cache line each
    /// so that threads reusing "their" slots do not contend.
    owned: Box<[SlotState]>,
    /// Exclusive upper bound of the indices ever owned.
    high: AtomicU32,
}

/// In-process state of one reader slot, padded to a cache line.
#[derive(Debug)]
#[repr(align(64))]
struct SlotState(AtomicU8);

thread_local! {
    /// `(LockFile address, slot index)` this thread released last: tried
    /// first by the next `acquire_reader` (libmdbx-like per-thread slots). A
    /// stale entry (another LockFile at the same address) is harmless: any
    /// idle slot of the current LockFile is a valid pick.
    static LAST_SLOT: std::cell::Cell<(usize, u32)> = const { std::cell::Cell::new((0, 0)) };
}

impl Shared {
    fn u32(&self, off: usize) -> &AtomicU32 {
        self.region.u32_at(off)
    }
    fn u64(&self, off: usize) -> &AtomicU64 {
        self.region.u64_at(off)
    }
    fn slot_u64(&self, i: u32, field: usize) -> &AtomicU64 {
        self.region.u64_at(OFF_RDT + i as usize * SLOT_SIZE + field)
    }
    fn slot_u32(&self, i: u32, field: usize) -> &AtomicU32 {
        self.region.u32_at(OFF_RDT + i as usize * SLOT_SIZE + field)
    }
    fn wrt_lock(&self) -> SharedMutex<'_> {
        self.region.mutex_at(OFF_WRT_LOCK)
    }
    fn rdt_lock(&self) -> SharedMutex<'_> {
        self.region.mutex_at(OFF_RDT_LOCK)
    }
    fn refresh(&self) -> &AtomicU32 {
        self.u32(OFF_RDT_REFRESH_FLAG)
    }
    /// `rdt_refresh_flag = 1` after a slot change. Skips the store (and the
    /// cache-line transfer) when the flag already is 1: with SeqCst on both
    /// sides, a writer that stored "None" and then missed our slot change in
    /// its scan is ordered before this load, so the load would see "None".
    fn signal_change(&self) {
        let r = self.refresh();
        if r.load(Ordering::SeqCst) != 1 {
            r.store(1, Ordering::SeqCst);
        }
    }
}

/// The result of [`LockFile::open`].
#[derive(Debug)]
pub(crate) struct LockOpen {
    pub lck: LockFile,
    /// We are the first/initialising opener: the caller recovers the metas,
    /// then calls [`LockFile::finish_open`]. Also `true` for the lock-less
    /// stub (libmdbx treats lock-less mode as exclusive too).
    pub exclusive: bool,
}

/// An open lock file (or the lock-less stub of a read-only environment on a
/// read-only filesystem). `Send + Sync`; share it by reference.
#[derive(Debug)]
pub(crate) struct LockFile {
    /// `None` in lock-less mode.
    shared: Option<Shared>,
    /// A `dup` of the caller's data-file descriptor (same open file description,
    /// hence the same OFD locks).
    dxb: File,
    read_only: bool,
    pid: u32,
    max_readers: u32,
    lck_path: PathBuf,
    /// Exclusive opener that has not run `finish_open` yet.
    pending_downgrade: AtomicBool,
    /// `envmode` of the lock-less stub.
    lockless_envmode: AtomicU32,
    /// Removed from the registry after `Drop::drop` ran (field drop order).
    _registry: RegistryEntry,
}

fn is_readonly_fs_error(e: &io::Error) -> bool {
    matches!(e.raw_os_error(), Some(libc::EROFS) | Some(libc::EACCES) | Some(libc::EPERM))
}

/// Outcome of `check_fstat` (libmdbx): `Ok(true)` = too short, re-seize.
fn check_fstat(dxb: &File, lck: &File) -> Result<bool> {
    let d = dxb.metadata()?;
    if !d.file_type().is_file() || d.nlink() < 1 {
        return Err(Error::Problem("data file was removed or is not a regular file".into()));
    }
    let l = lck.metadata()?;
    if !l.file_type().is_file() || l.nlink() < 1 {
        return Err(Error::Problem("lock file was removed or is not a regular file".into()));
    }
    Ok(d.len() < MIN_DXB_SIZE || l.len() < (HEADER_SIZE + SLOT_SIZE) as u64)
}

/// The §15.7 seize: returns whether we are exclusive.
fn seize(lck: &File, dxb: &File, dxb_mode: LockMode, pid: u32) -> Result<bool> {
    let mut rounds = 0u32;
    loop {
        // 1. Try to become the exclusive opener.
        let mut have_lck_write = ofd::try_lock(lck, LockMode::Write, 0, 1)?;
        if have_lck_write {
            check_fstat(dxb, lck)?;
        } else {
            // 2. Wait for the initialiser/destroyer to finish.
            ofd::lock_wait(lck, LockMode::Read, 0, 1)?;
            if check_fstat(dxb, lck)? {
                // Got READ right after a destroy (or during a creation): retry.
                ofd::unlock(lck, 0, 1)?;
                rounds += 1;
                if rounds > 1000 {
                    return Err(Error::Busy("the lock file stays too short while in use (seize gave up)".into()));
                }
                std::thread::sleep(std::time::Duration::from_micros(100 * u64::from(rounds.min(50))));
                continue;
            }
            have_lck_write = ofd::try_lock(lck, LockMode::Write, 0, 1)?;
        }
        if have_lck_write {
            if ofd::try_lock(dxb, dxb_mode, 0, WHOLE_FILE_LEN)? {
                return Ok(true);
            }
            // Fallback to lck-shared: convert byte 0 to READ (atomic on our OFD).
            if !ofd::try_lock(lck, LockMode::Read, 0, 1)? {
                return Err(Error::Problem("cannot downgrade the lock-file lock".into()));
            }
        }
        // Shared: lock against processes in lock-less/exclusive mode.
        if !ofd::try_lock(dxb, dxb_mode, u64::from(pid), 1)? {
            let _ = ofd::unlock(lck, 0, 1);
            return Err(Error::Busy("the database is used exclusively by another process".into()));
        }
        return Ok(false);
    }
}

impl LockFile {
    /// Opens (creating with the permissions derived from `mode`, §1.3; `mode`
    /// 0 = the data file's mode) the lock file at `lck_path` and runs the
    /// libmdbx seize protocol (§15.7) against the already-open data file `dxb`
    /// (opened read-write unless `read_only`).
    ///
    /// * First opener: sizes the file to `round_up_4096(576 + max_readers*32)`
    ///   (`max_readers` 0 = 61), zeroes it, writes magic, format,
    ///   `pgops.wops = 1`, initialises both mutexes; `exclusive = true`.
    /// * Shared opener: verifies size, magic (foreign -> `Invalid`, other
    ///   version -> `VersionMismatch`) and format (`VersionMismatch`).
    /// * Read-only environment whose lock file cannot be opened because of
    ///   `EROFS`/`EACCES`/`EPERM`: lock-less mode (whole-dxb READ lock only).
    /// * A second open of the same data file in this process -> `Busy`.
    pub fn open(lck_path: &Path, dxb: &File, read_only: bool, max_readers: u32, mode: u32) -> Result<LockOpen> {
        let id = os::file_identity(dxb)?;
        let registry = RegistryEntry::claim(id, lck_path)?;
        let pid = os::getpid();
        let dxb = dxb.try_clone()?;
        let dxb_mode = if read_only { LockMode::Read } else { LockMode::Write };
        let requested = match max_readers {
            0 => DEFAULT_READERS,
            n => n.min(READERS_LIMIT),
        };
        let base_mode = if mode == 0 { dxb.metadata()?.mode() & 0o777 } else { mode & 0o777 };

        let lck_file = match OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .mode(lck_file_mode(base_mode))
            .open(lck_path)
        {
            Ok(f) => f,
            Err(e) if read_only && is_readonly_fs_error(&e) => {
                // Lock-less mode: exclude writers with a whole-file READ lock.
                if !ofd::try_lock(&dxb, LockMode::Read, 0, WHOLE_FILE_LEN)? {
                    return Err(Error::Busy(format!(
                        "{} cannot be opened ({e}) and the database is in use by a writer",
                        lck_path.display()
                    )));
                }
                return Ok(LockOpen {
                    lck: LockFile {
                        shared: None,
                        dxb,
                        read_only,
                        pid,
                        max_readers: requested,
                        lck_path: lck_path.to_path_buf(),
                        pending_downgrade: AtomicBool::new(false),
                        lockless_envmode: AtomicU32::new(envmode::RDONLY),
                        _registry: registry,
                    },
                    exclusive: true,
                });
            }
            Err(e) => return Err(e.into()),
        };

        let exclusive = seize(&lck_file, &dxb, dxb_mode, pid)?;
        let result = Self::setup(lck_file, exclusive, requested, lck_path);
        let shared = match result {
            Ok(s) => s,
            Err((e, lck_file)) => {
                let _ = ofd::unlock(&lck_file, 0, WHOLE_FILE_LEN);
                let _ = ofd::unlock(&dxb, 0, WHOLE_FILE_LEN);
                return Err(e);
            }
        };
        let max = shared.owned.len() as u32;
        let lck = LockFile {
            shared: Some(shared),
            dxb,
            read_only,
            pid,
            max_readers: max,
            lck_path: lck_path.to_path_buf(),
            pending_downgrade: AtomicBool::new(exclusive),
            lockless_envmode: AtomicU32::new(0),
            _registry: registry,
        };
        if !exclusive {
            // Dropping `lck` on error runs the closing protocol.
            lck.sweep_impl(false)?;
        }
        Ok(LockOpen { lck, exclusive })
    }

    /// Maps and (if exclusive) initialises, or (if shared) verifies the region.
    #[allow(clippy::result_large_err)]
    fn setup(
        lck_file: File,
        exclusive: bool,
        requested: u32,
        path: &Path,
    ) -> std::result::Result<Shared, (Error, File)> {
        macro_rules! tri {
            ($e:expr) => {
                match $e {
                    Ok(v) => v,
                    Err(e) => return Err((Error::from(e), lck_file)),
                }
            };
        }
        let size = if exclusive {
            let size = lck_size_for(requested);
            tri!(os::file::set_len(&lck_file, size));
            size
        } else {
            let size = tri!(os::file::file_size(&lck_file));
            let ps = os::page_size() as u64;
            if size > i32::MAX as u64 || size % ps != 0 || size < ps {
                return Err((
                    Error::Problem(format!("lock file {} has invalid size {size}", path.display())),
                    lck_file,
                ));
            }
            size
        };
        let max = max_readers_for(size);
        if max < 4 {
            return Err((
                Error::Problem(format!("lock file {} is too small ({max} readers)", path.display())),
                lck_file,
            ));
        }
        let region = tri!(SharedRegion::map(&lck_file, size as usize));
        if exclusive {
            region.zero(0, size as usize);
            region.u64_at(OFF_MAGIC).store(LOCK_MAGIC, Ordering::Relaxed);
            region.u32_at(OFF_FORMAT).store(LOCK_FORMAT, Ordering::Relaxed);
            region.u64_at(OFF_PGOPS_WOPS).store(1, Ordering::Relaxed);
            tri!(region.flush());
            tri!(region.mutex_at(OFF_RDT_LOCK).init());
            tri!(region.mutex_at(OFF_WRT_LOCK).init());
        } else {
            let magic = region.u64_at(OFF_MAGIC).load(Ordering::Acquire);
            if magic != LOCK_MAGIC {
                let e = if magic >> 8 != MDBX_MAGIC {
                    Error::Invalid(format!("lock file {} has an invalid magic {magic:#018x}", path.display()))
                } else {
                    Error::VersionMismatch(format!(
                        "lock file {} has lock format version {} (expected {LOCK_VERSION}); \
                         processes using different libmdbx lines cannot share an environment",
                        path.display(),
                        magic & 0xFF
                    ))
                };
                return Err((e, lck_file));
            }
            let format = region.u32_at(OFF_FORMAT).load(Ordering::Acquire);
            if format != LOCK_FORMAT {
                return Err((
                    Error::VersionMismatch(format!(
                        "lock file {} has os/format signature {format:#010x}, expected {LOCK_FORMAT:#010x}",
                        path.display()
                    )),
                    lck_file,
                ));
            }
        }
        let owned: Box<[SlotState]> = (0..max).map(|_| SlotState(AtomicU8::new(SLOT_NOT_OURS))).collect();
        Ok(Shared { region, file: lck_file, pid_locked: Mutex::new(false), owned, high: AtomicU32::new(0) })
    }

    /// Whether this is the lock-less stub (read-only filesystem).
    pub fn is_lockless(&self) -> bool {
        self.shared.is_none()
    }

    /// Path of the lock file.
    pub fn path(&self) -> &Path {
        &self.lck_path
    }

    /// Applies the §15.8 `envmode` rule for a read-write opener that is not
    /// the initialiser (call right after `open`, before using the data file):
    /// a recorded pure `RDONLY` is replaced (CAS) by `flags`; then with
    /// `accede` the recorded mode flags are adopted, otherwise a difference in
    /// SAFE_NOSYNC/UTTERLY_NOSYNC (and WRITEMAP when the recorded mode is lazy)
    /// is `Error::Incompatible`. Returns the effective flags. Exclusive,
    /// read-only or lock-less openers get `flags` back unchanged.
    pub fn check_envmode(&self, flags: u32, accede: bool) -> Result<u32> {
        let Some(sh) = &self.shared else {
            return Ok(flags);
        };
        if self.read_only || self.pending_downgrade.load(Ordering::Acquire) {
            return Ok(flags);
        }
        let em = sh.u32(OFF_ENVMODE);
        let mut snap = em.load(Ordering::Acquire);
        while snap == envmode::RDONLY {
            match em.compare_exchange(envmode::RDONLY, flags & envmode::MASK, Ordering::AcqRel, Ordering::Acquire) {
                Ok(_) => {
                    snap = flags & envmode::MASK;
                    break;
                }
                Err(v) => snap = v,
            }
        }
        let mut flags = flags;
        if accede {
            let m = if snap & envmode::LAZY != 0 { envmode::MASK } else { envmode::MASK & !envmode::WRITEMAP };
            let diff = (snap ^ flags) & m & !envmode::RDONLY;
            flags ^= diff;
        }
        let rigorous = if snap & envmode::LAZY != 0 {
            envmode::SAFE_NOSYNC | envmode::UTTERLY_NOSYNC | envmode::WRITEMAP
        } else {
            envmode::SAFE_NOSYNC | envmode::UTTERLY_NOSYNC
        };
        let diff = (snap ^ flags) & rigorous;
        if diff != 0 {
            return Err(Error::Incompatible(format!(
                "environment mode {flags:#x} is incompatible with the mode {snap:#x} recorded in {} (diff {diff:#x})",
                self.lck_path.display()
            )));
        }
        Ok(flags)
    }

    /// Called after meta recovery. If we initialised: stores `envmode`
    /// (masked to the §15.8 flags), `meta_sync_txnid = low32(recent_txnid)`,
    /// `readers_check_timestamp`, then downgrades the locks (dxb: keep only
    /// byte `pid`; lck byte 0: READ). A no-op for shared openers (they swept
    /// dead readers in `open`). Idempotent.
    pub fn finish_open(&self, envmode: u32, recent_txnid: u64) -> Result<()> {
        let Some(sh) = &self.shared else {
            self.lockless_envmode.store(envmode & envmode::MASK, Ordering::Relaxed);
            return Ok(());
        };
        if self.pending_downgrade.swap(false, Ordering::AcqRel) {
            sh.u32(OFF_ENVMODE).store(envmode & envmode::MASK, Ordering::Release);
            sh.u32(OFF_META_SYNC_TXNID).store(recent_txnid as u32, Ordering::Relaxed);
            sh.u64(OFF_READERS_CHECK_TIMESTAMP).store(os::monotime_ns(), Ordering::Relaxed);
            let pid = u64::from(self.pid);
            ofd::unlock(&self.dxb, 0, pid)?;
            ofd::unlock(&self.dxb, pid + 1, WHOLE_FILE_LEN - pid - 1)?;
            if !ofd::try_lock(&sh.file, LockMode::Read, 0, 1)? {
                return Err(Error::Problem("cannot downgrade the lock-file lock".into()));
            }
        }
        Ok(())
    }

    /// The recorded environment mode (§15.8).
    pub fn envmode(&self) -> u32 {
        match &self.shared {
            Some(sh) => sh.u32(OFF_ENVMODE).load(Ordering::Acquire),
            None => self.lockless_envmode.load(Ordering::Relaxed),
        }
    }

    /// Reader-table capacity (`min(32767, (lck size - 576) / 32)`).
    pub fn max_readers(&self) -> u32 {
        self.max_readers
    }

    fn rdt_length(&self, sh: &Shared) -> u32 {
        sh.u32(OFF_RDT_LENGTH).load(Ordering::Acquire).min(self.max_readers)
    }

    fn check_pid(&self) -> Result<()> {
        if os::getpid() != self.pid {
            return Err(Error::Panic);
        }
        Ok(())
    }

    // -- writer lock ---------------------------------------------------------

    fn writer_locked(&self, sh: &Shared, res: io::Result<Option<Locked>>) -> Result<Option<WriterGuard<'_>>> {
        match res {
            Ok(None) => Ok(None),
            Ok(Some(Locked::Ok)) => Ok(Some(WriterGuard { lck: self, owner_died: false, _not_send: PhantomData })),
            Ok(Some(Locked::OwnerDied)) => {
                // The previous writer died: its transaction is aborted (its pages
                // were never referenced by a meta). Sweep dead readers, recover.
                let swept = self.sweep_impl(false);
                let m = sh.wrt_lock();
                if let Err(e) = m.make_consistent() {
                    let _ = m.unlock();
                    return Err(e.into());
                }
                if let Err(e) = swept {
                    let _ = m.unlock();
                    return Err(e);
                }
                Ok(Some(WriterGuard { lck: self, owner_died: true, _not_send: PhantomData }))
            }
            Err(e) if e.raw_os_error() == Some(libc::EDEADLK) => {
                Err(Error::Busy("the writer lock is already held by this thread".into()))
            }
            Err(e) if e.raw_os_error() == Some(libc::ENOTRECOVERABLE) => {
                Err(Error::Problem("the writer mutex is not recoverable".into()))
            }
            Err(e) => Err(e.into()),
        }
    }

    /// Blocks until this thread holds `wrt_lock` (robust mutex; `EOWNERDEAD`
    /// is handled by sweeping dead readers, then making it consistent).
    /// A second lock from the owning thread -> `Error::Busy`.
    pub fn lock_writer(&self) -> Result<WriterGuard<'_>> {
        let Some(sh) = &self.shared else {
            return Ok(WriterGuard { lck: self, owner_died: false, _not_send: PhantomData });
        };
        self.check_pid()?;
        let r = sh.wrt_lock().lock().map(Some);
        match self.writer_locked(sh, r)? {
            Some(g) => Ok(g),
            None => Err(Error::Problem("writer lock returned without the lock".into())),
        }
    }

    /// Like [`Self::lock_writer`] but `Ok(None)` when another thread/process
    /// holds the lock.
    pub fn try_lock_writer(&self) -> Result<Option<WriterGuard<'_>>> {
        let Some(sh) = &self.shared else {
            return Ok(Some(WriterGuard { lck: self, owner_died: false, _not_send: PhantomData }));
        };
        self.check_pid()?;
        let r = sh.wrt_lock().try_lock();
        self.writer_locked(sh, r)
    }

    /// Unlocks the writer lock detached with [`WriterGuard::into_raw`]; must be
    /// called on the thread that locked it.
    pub fn unlock_raw_writer(&self, raw: RawWriter) -> Result<()> {
        drop(raw);
        match &self.shared {
            Some(sh) => sh.wrt_lock().unlock().map_err(Error::from),
            None => Ok(()),
        }
    }

    // -- rdt lock ------------------------------------------------------------

    /// Takes `rdt_lock`; on `EOWNERDEAD` sweeps (already locked) and recovers.
    /// Returns the guard and, if a recovery sweep ran, how many slots it cleared.
    fn lock_rdt<'a>(&'a self, sh: &'a Shared) -> Result<(RdtGuard<'a>, Option<u32>)> {
        let m = sh.rdt_lock();
        match m.lock() {
            Ok(Locked::Ok) => Ok((RdtGuard(m), None)),
            Ok(Locked::OwnerDied) => {
                // The guard unlocks on every exit path, also on errors below.
                let guard = RdtGuard(m);
                let swept = self.sweep_locked(sh)?;
                m.make_consistent()?;
                Ok((guard, Some(swept)))
            }
            Err(e) if e.raw_os_error() == Some(libc::ENOTRECOVERABLE) => {
                Err(Error::Problem("the reader-table mutex is not recoverable".into()))
            }
            Err(e) => Err(e.into()),
        }
    }

    // -- reader slots --------------------------------------------------------

    /// A reader slot for one read transaction. Reuses a slot this `LockFile`
    /// already registered when one is idle (lock-free); otherwise registers a
    /// new slot under `rdt_lock` (§15.6 "Registering a slot"), taking the
    /// per-process pid lock on the first registration.
    pub fn acquire_reader(&self) -> Result<ReaderSlot<'_>> {
        let Some(sh) = &self.shared else {
            return Ok(ReaderSlot { lck: self, idx: NO_SLOT });
        };
        let key = self as *const LockFile as usize;
        let (last_key, last_idx) = LAST_SLOT.with(|c| c.get());
        if last_key == key {
            if let Some(slot) = self.try_take(sh, last_idx) {
                return Ok(slot);
            }
        }
        let high = sh.high.load(Ordering::Acquire);
        for i in 0..high {
            if let Some(slot) = self.try_take(sh, i) {
                return Ok(slot);
            }
        }
        self.register_slot(sh).map(|idx| ReaderSlot { lck: self, idx })
    }

    /// Takes slot `i` if it is one of our idle slots.
    fn try_take<'a>(&'a self, sh: &Shared, i: u32) -> Option<ReaderSlot<'a>> {
        let st = &sh.owned.get(i as usize)?.0;
        if st.load(Ordering::Relaxed) != SLOT_IDLE
            || st.compare_exchange(SLOT_IDLE, SLOT_BUSY, Ordering::AcqRel, Ordering::Relaxed).is_err()
        {
            return None;
        }
        if sh.slot_u32(i, SLOT_PID).load(Ordering::Acquire) != self.pid {
            // Someone cleared our slot (should not happen while we hold the
            // pid lock): forget it.
            st.store(SLOT_NOT_OURS, Ordering::Release);
            return None;
        }
        let tid = os::thread_self();
        let t = sh.slot_u64(i, SLOT_TID);
        if t.load(Ordering::Relaxed) != tid {
            t.store(tid, Ordering::Relaxed);
        }
        Some(ReaderSlot { lck: self, idx: i })
    }

    fn register_slot(&self, sh: &Shared) -> Result<u32> {
        self.check_pid()?;
        {
            let mut locked = sh.pid_locked.lock().unwrap_or_else(|e| e.into_inner());
            if !*locked {
                if !ofd::try_lock(&sh.file, LockMode::Write, u64::from(self.pid), 1)? {
                    return Err(Error::Busy(format!(
                        "cannot take the reader pid lock of {} (another handle of this process?)",
                        self.lck_path.display()
                    )));
                }
                *locked = true;
            }
        }
        let (_guard, _) = self.lock_rdt(sh)?;
        let rdt_len = sh.u32(OFF_RDT_LENGTH);
        let mut swept = false;
        let idx = loop {
            let n = self.rdt_length(sh);
            let free = (0..n).find(|&i| sh.slot_u32(i, SLOT_PID).load(Ordering::Acquire) == 0);
            match free {
                Some(i) => break i,
                None if n < self.max_readers => break n,
                None => {
                    if swept || self.sweep_locked(sh)? == 0 {
                        return Err(Error::ReadersFull);
                    }
                    swept = true;
                }
            }
        };
        let pid = sh.slot_u32(idx, SLOT_PID);
        pid.store(0, Ordering::Release);
        sh.slot_u64(idx, SLOT_TXNID).store(TXNID_NONE, Ordering::Release);
        if idx >= rdt_len.load(Ordering::Acquire) {
            rdt_len.store(idx + 1, Ordering::Release);
        }
        sh.slot_u64(idx, SLOT_TID).store(os::thread_self(), Ordering::Relaxed);
        pid.store(self.pid, Ordering::SeqCst);
        sh.owned[idx as usize].0.store(SLOT_BUSY, Ordering::Release);
        sh.high.fetch_max(idx + 1, Ordering::AcqRel);
        Ok(idx)
    }

    /// Returns a detached slot (see [`ReaderSlot::into_raw`]).
    pub fn reader_from_raw(&self, raw: RawReaderSlot) -> ReaderSlot<'_> {
        ReaderSlot { lck: self, idx: raw.0 }
    }

    fn release_slot(&self, idx: u32) {
        if let Some(sh) = &self.shared {
            let Some(st) = sh.owned.get(idx as usize) else {
                return;
            };
            if st.0.compare_exchange(SLOT_BUSY, SLOT_IDLE, Ordering::AcqRel, Ordering::Relaxed).is_ok() {
                let key = self as *const LockFile as usize;
                LAST_SLOT.with(|c| c.set((key, idx)));
            }
        }
    }

    // -- writer-side queries -------------------------------------------------

    /// The oldest snapshot of any live reader slot, scanned without touching
    /// the shared cache (`None`: no reader holds a snapshot). Safe without
    /// the writer lock.
    pub fn oldest_live_reader(&self) -> Option<u64> {
        let sh = self.shared.as_ref()?;
        let mut oldest: Option<u64> = None;
        for i in 0..self.rdt_length(sh) {
            if sh.slot_u32(i, SLOT_PID).load(Ordering::Acquire) == 0 {
                continue;
            }
            let t = sh.slot_u64(i, SLOT_TXNID).load(Ordering::SeqCst);
            if t < 0xFFFF_FFFF_0000_0000 {
                oldest = Some(oldest.map_or(t, |o| o.min(t)));
            }
        }
        oldest
    }

    /// Oldest snapshot still needed: `min(steady_txnid, txnid of every live
    /// slot)` with the `rdt_refresh_flag`/`cached_oldest_txnid` protocol of
    /// §15.6 (stale slots below the previous cached value are kicked like
    /// libmdbx does). It updates the shared cache: call only while holding
    /// the writer lock (a libmdbx writer asserts that the cache never passes
    /// its own transaction).
    pub fn oldest_reader(&self, steady_txnid: u64) -> u64 {
        self.oldest_reader_ex(steady_txnid, None).0
    }

    /// [`Self::oldest_reader`] that also maintains `cached_oldest_retired`
    /// (`steady_retired` = `pages_retired` of the steady meta; `None` keeps
    /// the previously cached value for the steady case). Returns
    /// `(oldest_txnid, its pages_retired)`.
    pub fn oldest_reader_ex(&self, steady_txnid: u64, steady_retired: Option<u64>) -> (u64, u64) {
        let Some(sh) = &self.shared else {
            return (steady_txnid, steady_retired.unwrap_or(0));
        };
        let cached = sh.u64(OFF_CACHED_OLDEST);
        let cached_retired = sh.u64(OFF_CACHED_OLDEST_RETIRED);
        let refresh = sh.refresh();
        let prev = cached.load(Ordering::Acquire);
        let prev_retired = cached_retired.load(Ordering::Relaxed);
        let mut oldest = prev;
        let mut oldest_retired = prev_retired;
        while refresh.load(Ordering::SeqCst) != NOTHING_CHANGED {
            refresh.store(NOTHING_CHANGED, Ordering::SeqCst);
            let n = self.rdt_length(sh);
            oldest = steady_txnid;
            oldest_retired = steady_retired.unwrap_or(prev_retired);
            for i in 0..n {
                let (pid, retired, txnid) = loop {
                    let pid = sh.slot_u32(i, SLOT_PID).load(Ordering::Acquire);
                    if pid == 0 {
                        break (0, 0, 0);
                    }
                    let r = sh.slot_u64(i, SLOT_PAGES_RETIRED).load(Ordering::Acquire);
                    let t = sh.slot_u64(i, SLOT_TXNID).load(Ordering::SeqCst);
                    if r == sh.slot_u64(i, SLOT_PAGES_RETIRED).load(Ordering::Acquire)
                        && t == sh.slot_u64(i, SLOT_TXNID).load(Ordering::SeqCst)
                    {
                        break (pid, r, t);
                    }
                    std::thread::yield_now();
                };
                if pid == 0 {
                    continue;
                }
                if txnid < prev {
                    // Stale ("stuck") reader: it will notice and restart.
                    if refresh.load(Ordering::SeqCst) == NOTHING_CHANGED {
                        let _ = sh.slot_u64(i, SLOT_TXNID).compare_exchange(
                            txnid,
                            TXNID_NONE,
                            Ordering::SeqCst,
                            Ordering::Relaxed,
                        );
                    }
                    continue;
                }
                if txnid < oldest {
                    oldest = txnid;
                    oldest_retired = retired;
                }
            }
        }
        if oldest != prev {
            cached.fetch_max(oldest, Ordering::AcqRel);
            cached_retired.fetch_max(oldest_retired, Ordering::Relaxed);
        }
        (oldest, oldest_retired)
    }

    /// The largest `snapshot_pages_used` over live slots holding a snapshot
    /// (for the shrink rule §14.3 step 2).
    pub fn max_reader_pages_used(&self) -> u32 {
        self.max_reader_pages_used_upto(MAX_TXNID)
    }

    /// The largest `snapshot_pages_used` over live slots whose snapshot txnid
    /// is `<= upto_txnid`.
    pub fn max_reader_pages_used_upto(&self, upto_txnid: u64) -> u32 {
        let Some(sh) = &self.shared else { return 0 };
        let mut largest = 0u32;
        let n = self.rdt_length(sh);
        for i in 0..n {
            let (pid, pages, txnid) = loop {
                let pid = sh.slot_u32(i, SLOT_PID).load(Ordering::Acquire);
                if pid == 0 {
                    break (0, 0, 0);
                }
                let p = sh.slot_u32(i, SLOT_PAGES_USED).load(Ordering::Acquire);
                let t = sh.slot_u64(i, SLOT_TXNID).load(Ordering::SeqCst);
                if p == sh.slot_u32(i, SLOT_PAGES_USED).load(Ordering::Acquire)
                    && t == sh.slot_u64(i, SLOT_TXNID).load(Ordering::SeqCst)
                {
                    break (pid, p, t);
                }
                std::thread::yield_now();
            };
            if pid != 0 && txnid <= upto_txnid && txnid <= MAX_TXNID && pages > largest {
                largest = pages;
            }
        }
        largest
    }

    /// After a commit: `rdt_refresh_flag = 0`; `meta_sync_txnid = low32(txnid)`
    /// when the meta itself is on stable storage (`meta_synced`), else minus the
    /// lazy bias, as libmdbx marks a meta it wrote without syncing (§15.8). A
    /// steady commit (its data synced) resets `unsynced_pages` and
    /// `eoos_timestamp`; its unsynced meta counts as one unsynced page.
    pub fn after_commit(&self, txnid: u64, steady: bool, meta_synced: bool) {
        let Some(sh) = &self.shared else { return };
        sh.refresh().store(0, Ordering::Release);
        if steady {
            sh.u64(OFF_UNSYNCED_PAGES).store(u64::from(!meta_synced), Ordering::Relaxed);
            sh.u64(OFF_EOOS_TIMESTAMP).store(0, Ordering::Relaxed);
        }
        let low = txnid as u32;
        let v = if steady && meta_synced { low } else { low.wrapping_sub(LAZY_BIAS_FD) };
        sh.u32(OFF_META_SYNC_TXNID).store(v, Ordering::Release);
    }

    /// Accounts `pages` written by a non-durable commit: `unsynced_pages +=
    /// pages` and `eoos_timestamp` set if it was 0.
    pub fn add_unsynced_pages(&self, pages: u64) {
        let Some(sh) = &self.shared else { return };
        sh.u64(OFF_UNSYNCED_PAGES).fetch_add(pages, Ordering::Relaxed);
        let _ = sh.u64(OFF_EOOS_TIMESTAMP).compare_exchange(
            0,
            os::monotime_ns().max(1),
            Ordering::Relaxed,
            Ordering::Relaxed,
        );
    }

    /// The page-operation counters of the lock region (zeros without one).
    pub fn page_ops(&self) -> PageOps {
        let Some(sh) = &self.shared else { return PageOps::default() };
        PageOps::from_array(std::array::from_fn(|i| sh.u64(OFF_PGOPS + 8 * i).load(Ordering::Relaxed)))
    }

    /// Adds `d` to the page-operation counters of the lock region.
    pub fn add_page_ops(&self, d: &PageOps) {
        let Some(sh) = &self.shared else { return };
        for (i, v) in d.to_array().into_iter().enumerate() {
            if v != 0 {
                sh.u64(OFF_PGOPS + 8 * i).fetch_add(v, Ordering::Relaxed);
            }
        }
    }

    /// `unsynced_pages` of the lock region.
    pub fn unsynced_pages(&self) -> u64 {
        self.shared.as_ref().map_or(0, |sh| sh.u64(OFF_UNSYNCED_PAGES).load(Ordering::Relaxed))
    }

    /// `meta_sync_txnid` of the lock region.
    /// Whether the meta of commit `txnid` is known to be on stable storage
    /// (always true without a lock region: then every sync is this process's).
    pub fn meta_is_synced(&self, txnid: u64) -> bool {
        match &self.shared {
            Some(sh) => sh.u32(OFF_META_SYNC_TXNID).load(Ordering::Acquire) == txnid as u32,
            None => true,
        }
    }

    pub fn meta_sync_txnid(&self) -> u32 {
        self.shared.as_ref().map_or(0, |sh| sh.u32(OFF_META_SYNC_TXNID).load(Ordering::Acquire))
    }

    /// `(autosync_threshold pages, autosync_period ns)` recorded by libmdbx.
    pub fn autosync(&self) -> (u32, u64) {
        self.shared.as_ref().map_or((0, 0), |sh| {
            (
                sh.u32(OFF_AUTOSYNC_THRESHOLD).load(Ordering::Relaxed),
                sh.u64(OFF_AUTOSYNC_PERIOD).load(Ordering::Relaxed),
            )
        })
    }

    /// `cached_oldest_txnid` of the lock region (0 in lock-less mode).
    pub fn cached_oldest(&self) -> u64 {
        self.shared.as_ref().map_or(0, |sh| sh.u64(OFF_CACHED_OLDEST).load(Ordering::SeqCst))
    }

    /// Snapshot of the reader table (slots with a non-zero pid), for stat tools.
    pub fn readers(&self) -> Vec<ReaderInfo> {
        let Some(sh) = &self.shared else {
            return Vec::new();
        };
        let n = self.rdt_length(sh);
        let mut out = Vec::new();
        for i in 0..n {
            let pid = sh.slot_u32(i, SLOT_PID).load(Ordering::Acquire);
            if pid == 0 {
                continue;
            }
            let txnid = sh.slot_u64(i, SLOT_TXNID).load(Ordering::Acquire);
            out.push(ReaderInfo {
                slot: i,
                pid,
                tid: sh.slot_u64(i, SLOT_TID).load(Ordering::Relaxed),
                txnid: (txnid < TXNID_INVALID_FROM).then_some(txnid),
                pages_used: sh.slot_u32(i, SLOT_PAGES_USED).load(Ordering::Relaxed),
                pages_retired: sh.slot_u64(i, SLOT_PAGES_RETIRED).load(Ordering::Relaxed),
            });
        }
        out
    }

    // -- dead-reader sweep ---------------------------------------------------

    /// Dead-reader sweep (§15.7); returns how many slots were cleared.
    pub fn sweep_dead_readers(&self) -> Result<u32> {
        if self.shared.is_none() {
            return Ok(0);
        }
        self.check_pid()?;
        self.sweep_impl(false)
    }

    /// Sweep while already holding `rdt_lock`.
    fn sweep_locked(&self, sh: &Shared) -> Result<u32> {
        self.sweep_with(sh, true)
    }

    fn sweep_impl(&self, rdt_locked: bool) -> Result<u32> {
        match &self.shared {
            Some(sh) => self.sweep_with(sh, rdt_locked),
            None => Ok(0),
        }
    }

    fn sweep_with(&self, sh: &Shared, rdt_locked: bool) -> Result<u32> {
        let n = self.rdt_length(sh);
        let mut seen: Vec<u32> = Vec::new();
        let mut guard: Option<RdtGuard<'_>> = None;
        let mut count = 0u32;
        for i in 0..n {
            let pid = sh.slot_u32(i, SLOT_PID).load(Ordering::Acquire);
            if pid == 0 || pid == self.pid {
                continue;
            }
            match seen.binary_search(&pid) {
                Ok(_) => continue,
                Err(pos) => seen.insert(pos, pid),
            }
            if ofd::is_locked_by_other(&sh.file, LockMode::Write, u64::from(pid), 1)? {
                continue; // alive
            }
            if !rdt_locked && guard.is_none() {
                let (g, recovered) = self.lock_rdt(sh)?;
                guard = Some(g);
                if let Some(swept) = recovered {
                    // The recovery already swept every slot under the lock.
                    count += swept;
                    break;
                }
                if sh.slot_u32(i, SLOT_PID).load(Ordering::Acquire) != pid
                    || ofd::is_locked_by_other(&sh.file, LockMode::Write, u64::from(pid), 1)?
                {
                    continue;
                }
            }
            for ii in i..n {
                let p = sh.slot_u32(ii, SLOT_PID);
                if p.load(Ordering::Acquire) == pid {
                    p.store(0, Ordering::Release);
                    sh.refresh().store(1, Ordering::SeqCst);
                    count += 1;
                }
            }
        }
        sh.u64(OFF_READERS_CHECK_TIMESTAMP).store(os::monotime_ns(), Ordering::Relaxed);
        drop(guard);
        Ok(count)
    }
}

impl Drop for LockFile {
    /// The §15.7 "Closing" protocol.
    fn drop(&mut self) {
        if let Some(sh) = self.shared.take() {
            // Release our reader slots.
            for (i, st) in sh.owned.iter().enumerate() {
                if st.0.load(Ordering::Acquire) != SLOT_NOT_OURS {
                    let i = i as u32;
                    sh.slot_u32(i, SLOT_PAGES_USED).store(0, Ordering::Relaxed);
                    sh.slot_u64(i, SLOT_TXNID).store(TXNID_NONE, Ordering::Release);
                    let _ = sh.slot_u32(i, SLOT_PID).compare_exchange(self.pid, 0, Ordering::AcqRel, Ordering::Relaxed);
                    sh.refresh().store(1, Ordering::SeqCst);
                }
            }
            let Shared { region, file, .. } = sh;
            let dxb_mode = if self.read_only { LockMode::Read } else { LockMode::Write };
            let last_user = ofd::try_lock(&file, LockMode::Write, 0, WHOLE_FILE_LEN).unwrap_or(false)
                && os::file_nlink(&file).map(|n| n > 0).unwrap_or(false)
                && ofd::try_lock(&self.dxb, dxb_mode, 0, WHOLE_FILE_LEN).unwrap_or(false);
            if last_user {
                let destroyed =
                    region.mutex_at(OFF_RDT_LOCK).destroy().is_ok() && region.mutex_at(OFF_WRT_LOCK).destroy().is_ok();
                let synced = region.u64_at(OFF_UNSYNCED_PAGES).load(Ordering::Acquire) == 0;
                drop(region);
                if destroyed && synced {
                    let _ = os::file::set_len(&file, 0);
                }
            } else {
                drop(region);
            }
            let _ = ofd::unlock(&file, 0, WHOLE_FILE_LEN);
            drop(file);
        }
        let _ = ofd::unlock(&self.dxb, 0, WHOLE_FILE_LEN);
    }
}

/// Holds `rdt_lock`; unlocks on drop.
struct RdtGuard<'a>(SharedMutex<'a>);

impl Drop for RdtGuard<'_> {
    fn drop(&mut self) {
        let _ = self.0.unlock();
    }
}

/// Holds the cross-process writer lock (`wrt_lock`). Not `Send`: glibc
/// requires the owning thread to unlock. Unlocks on drop.
#[derive(Debug)]
pub(crate) struct WriterGuard<'a> {
    lck: &'a LockFile,
    owner_died: bool,
    _not_send: PhantomData<*const ()>,
}

impl WriterGuard<'_> {
    /// Whether the previous owner died holding the lock (`EOWNERDEAD`,
    /// recovered): its write transaction is to be treated as aborted.
    pub fn owner_died(&self) -> bool {
        self.owner_died
    }

    /// Detaches the lock from the guard without unlocking; release it later on
    /// the same thread with [`LockFile::unlock_raw_writer`].
    pub fn into_raw(self) -> RawWriter {
        std::mem::forget(self);
        RawWriter { _not_send: PhantomData }
    }
}

impl Drop for WriterGuard<'_> {
    fn drop(&mut self) {
        if let Some(sh) = &self.lck.shared {
            let _ = sh.wrt_lock().unlock();
        }
    }
}

/// A detached writer lock (see [`WriterGuard::into_raw`]); `!Send`.
#[must_use = "the writer lock stays held until LockFile::unlock_raw_writer"]
#[derive(Debug)]
pub(crate) struct RawWriter {
    _not_send: PhantomData<*const ()>,
}

/// Index value of the lock-less stub slot.
const NO_SLOT: u32 = u32::MAX;

/// One registered reader slot, owned by a read transaction. `Send + Sync`.
/// Drop clears the snapshot and returns the slot to the in-process pool.
#[derive(Debug)]
pub(crate) struct ReaderSlot<'a> {
    lck: &'a LockFile,
    idx: u32,
}

/// A detached reader slot (see [`ReaderSlot::into_raw`]).
#[must_use = "the slot stays busy until it is re-attached and dropped"]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct RawReaderSlot(u32);

impl ReaderSlot<'_> {
    fn shared(&self) -> Option<&Shared> {
        if self.idx == NO_SLOT {
            return None;
        }
        self.lck.shared.as_ref()
    }

    /// Slot number in the reader table (`u32::MAX` in lock-less mode).
    pub fn index(&self) -> u32 {
        self.idx
    }

    /// Starts a snapshot (§15.6 "Starting a read transaction" step 2):
    /// `txnid = all-ones`; `snapshot_pages_used`; `snapshot_pages_retired`;
    /// then `txnid = T`; `rdt_refresh_flag = 1`.
    pub fn publish(&self, txnid: u64, pages_used: u32, pages_retired: u64) {
        let Some(sh) = self.shared() else { return };
        let t = sh.slot_u64(self.idx, SLOT_TXNID);
        // Orderings: the release stores keep "all-ones, then sizes, then T" in
        // order for a writer loading with acquire; the SeqCst store of T orders
        // it before the caller's re-read of the metas and of
        // `cached_oldest_txnid` (a store->load pair with the writer's side).
        t.store(TXNID_NONE, Ordering::Release);
        sh.slot_u32(self.idx, SLOT_PAGES_USED).store(pages_used, Ordering::Release);
        sh.slot_u64(self.idx, SLOT_PAGES_RETIRED).store(pages_retired, Ordering::Release);
        t.store(txnid, Ordering::SeqCst);
        sh.signal_change();
    }

    /// Whether the slot still holds `txnid` (a libmdbx writer may have kicked
    /// a stale reader by resetting it).
    pub fn still(&self, txnid: u64) -> bool {
        match self.shared() {
            Some(sh) => sh.slot_u64(self.idx, SLOT_TXNID).load(Ordering::SeqCst) == txnid,
            None => true,
        }
    }

    /// `cached_oldest_txnid` of the lock region (for the §15.6 step-3 check).
    pub fn cached_oldest(&self) -> u64 {
        self.lck.cached_oldest()
    }

    /// Ends the snapshot: `snapshot_pages_used = 0`, `txnid = all-ones`,
    /// `rdt_refresh_flag = 1`.
    pub fn clear(&self) {
        let Some(sh) = self.shared() else { return };
        sh.slot_u32(self.idx, SLOT_PAGES_USED).store(0, Ordering::Release);
        sh.slot_u64(self.idx, SLOT_TXNID).store(TXNID_NONE, Ordering::Release);
        sh.signal_change();
    }

    /// Detaches the slot (still busy, snapshot kept) so it can be stored
    /// without a borrow; re-attach with [`LockFile::reader_from_raw`] on the
    /// same `LockFile`, then drop it.
    pub fn into_raw(self) -> RawReaderSlot {
        let raw = RawReaderSlot(self.idx);
        std::mem::forget(self);
        raw
    }
}

impl Drop for ReaderSlot<'_> {
    fn drop(&mut self) {
        if self.idx != NO_SLOT {
            self.clear();
            self.lck.release_slot(self.idx);
        }
    }
}

/// One row of [`LockFile::readers`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ReaderInfo {
    pub slot: u32,
    pub pid: u32,
    /// `pthread_self` of the owner (`>= 0xFFFFFFFFFFFFFFFE` = parked/ousted).
    pub tid: u64,
    /// Snapshot txnid, `None` when the slot holds no snapshot.
    pub txnid: Option<u64>,
    pub pages_used: u32,
    pub pages_retired: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn format_constant() {
        assert_eq!(LOCK_FORMAT, 0x3635569F);
        assert_eq!(LOCK_MAGIC, 0x59659DBDEF4C1107);
        assert_eq!(HEADER_SIZE, 576);
        assert_eq!(NOTHING_CHANGED, 0x4E6F6E65);
        assert_eq!(8u32.wrapping_sub(LAZY_BIAS_FD), 0x8AAAAAB4);
    }

    #[test]
    fn sizes() {
        assert_eq!(lck_size_for(61), 4096);
        assert_eq!(max_readers_for(4096), 110);
        assert_eq!(max_readers_for(0), 0);
        assert_eq!(max_readers_for(1 << 30), READERS_LIMIT);
        assert_eq!(lck_size_for(111), 8192);
    }

    #[test]
    fn lck_modes() {
        assert_eq!(lck_file_mode(0o644), 0o666);
        assert_eq!(lck_file_mode(0o664), 0o666);
        assert_eq!(lck_file_mode(0o600), 0o600);
        assert_eq!(lck_file_mode(0o640), 0o660);
        for m in 0..0o1000 {
            assert_eq!(lck_file_mode(lck_file_mode(m)), lck_file_mode(m));
        }
    }
}
