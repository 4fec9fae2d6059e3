//! The libmdbx lock file ("lck"), lock formats v7 (libmdbx 0.14.2+) and v6
//! (libmdbx 0.13.x) on Linux x86_64 glibc (docs/lock-format.md): the shared
//! region with the writer mutex, the reader table, and the OFD file-lock
//! protocol that decides who initialises and who destroys it.
//!
//! Both generations share the protocol (seize, reader registration, oldest
//! reader, dead-reader sweep, close) and differ only in where some header
//! fields sit. The byte layout (offsets, magic, signature, reader slots, the
//! values stored in them) is [`crate::format::lock`]; this module maps the
//! file and runs the protocol over it, with the [`LockLayout`] chosen once at
//! open (the version in use when joining; v7, or the version of a stale
//! file, or the caller's [`LockFormat`] when creating).
//!
//! This module contains no `unsafe`: the mapping is accessed through the safe
//! atomic accessors of [`SharedRegion`] and the pthread wrappers of
//! [`SharedMutex`].
//!
//! # File locks (OFD; docs/lock-format.md, "File locks")
//!
//! | file | range | mode | held by |
//! |---|---|---|---|
//! | lck | byte 0 | WRITE | initialiser / destroyer (transient) |
//! | lck | byte 0 | READ | every process using the environment |
//! | lck | byte `pid` | WRITE | every process with registered reader slots |
//! | dxb | byte `pid` | WRITE (RW) / READ (RO) | every non-exclusive process |
//! | dxb | whole file | WRITE / READ | initialiser (transient), lock-less opener |

use std::fs::{File, OpenOptions};
use std::io;
use std::marker::PhantomData;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicU8, Ordering};
use std::sync::Mutex;

use crate::error::{Error, Result};
use crate::format::lock::*;
use crate::format::MAX_TXNID;
// The environment names these through this module.
pub use crate::format::lock::LockFormat;
pub(crate) use crate::format::lock::{envmode, DEFAULT_READERS};
use crate::os;
use crate::os::mmap::SharedRegion;
use crate::os::mutex::{Locked, SharedMutex};
use crate::os::ofd::{self, LockMode, WHOLE_FILE_LEN};

// ---------------------------------------------------------------------------
// Counters

/// The system calls [`LockFile::count_call`] counts: their counters'
/// indexes in [`PageOps`] order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PageCall {
    /// A write of the data file (`wops`).
    Write = 7,
    /// An `msync` (`msync`).
    Msync = 8,
    /// An `fsync`/`fdatasync` (`fsync`).
    Fsync = 9,
}

/// Page-operation counters of the environment (libmdbx's `pgop_stat`), kept
/// in the lock file and shared by every process that has the environment
/// open, rdbx and libmdbx alike, since the lock file was created
/// (`mdbx_stat -p`). rdbx counts spilled and unspilled pages as libmdbx
/// does; it never prefaults or calls `mincore`, and writes with `pwritev`, so
/// it leaves those counters (and `msync`) to libmdbx processes.
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

/// Size of a freshly initialised lock file of layout `l` for `max_readers`
/// slots on this system.
fn lck_size(l: &LockLayout, max_readers: u32) -> u64 {
    lck_size_for(l, max_readers, os::page_size())
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
    /// The layout of this lock file (its version, read or chosen at open).
    layout: &'static LockLayout,
    /// Stand-in for `cached_oldest_retired` where the layout has none (v6):
    /// this process's last computed value.
    local_oldest_retired: AtomicU64,
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
        self.region.u64_at(self.layout.slot_field(i, field))
    }
    fn slot_u32(&self, i: u32, field: usize) -> &AtomicU32 {
        self.region.u32_at(self.layout.slot_field(i, field))
    }
    fn wrt_lock(&self) -> SharedMutex<'_> {
        self.region.mutex_at(self.layout.wrt_lock)
    }
    fn rdt_lock(&self) -> SharedMutex<'_> {
        self.region.mutex_at(self.layout.rdt_lock)
    }
    fn refresh(&self) -> &AtomicU32 {
        self.u32(self.layout.rdt_refresh_flag)
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
    /// This process writes with WRITEMAP (chooses the lazy bias; docs/lock-format.md, "Sync and mode fields").
    writemap: std::sync::atomic::AtomicBool,
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
    Ok(d.len() < MIN_DXB_SIZE || l.len() < (MIN_HEADER_SIZE + SLOT_SIZE) as u64)
}

/// The seize (docs/lock-format.md, "File locks"): returns whether we are exclusive.
fn seize(lck: &File, dxb: &File, dxb_mode: LockMode, pid: u32) -> Result<bool> {
    seize_with(lck, dxb, dxb_mode, pid, HELD_WHOLE_RETRIES)
}

/// [`seize`], starting over at most `held_whole_retries` times when the data
/// file is locked whole beside a destroyed lock file.
fn seize_with(lck: &File, dxb: &File, dxb_mode: LockMode, pid: u32, held_whole_retries: u32) -> Result<bool> {
    let mut rounds = 0u32;
    // Starts over after finding the data file locked whole beside a
    // destroyed lock file (below).
    let mut held_whole = 0u32;
    // Holding READ on lock byte 0 of a lock file found too short (destroyed
    // by its last user, or not created yet): let go, wait a little, start
    // over.
    let again = |rounds: &mut u32| -> Result<()> {
        ofd::unlock(lck, 0, 1)?;
        *rounds += 1;
        if *rounds > 1000 {
            return Err(Error::Busy("the lock file stays too short while in use (seize gave up)".into()));
        }
        std::thread::sleep(std::time::Duration::from_micros(100 * u64::from((*rounds).min(50))));
        Ok(())
    };
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
                again(&mut rounds)?;
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
            // The data file is locked whole by someone: a process in
            // exclusive or lock-less mode, or the last user of a lock file
            // it has just destroyed and not yet let go of the data file
            // (rdbx's own close lets go of the data file first; an older
            // one, or another program, may not). The second leaves the lock
            // file too short: start over, as libmdbx does, rather than fail
            // with `Busy`. So may the first when it runs lock-less (a reader
            // that could not open the lock file, beside one its last user
            // left empty; libmdbx's exclusive mode keeps the lock file in
            // use, so its size tells): libmdbx would start over until it
            // closes; rdbx gives up after about 0.1 s with the `Busy` below.
            if check_fstat(dxb, lck)? {
                if held_whole < held_whole_retries {
                    held_whole += 1;
                    again(&mut rounds)?;
                    continue;
                }
                // (Never joined as shared: the lock file is too short.)
                let _ = ofd::unlock(lck, 0, 1);
                return Err(Error::Busy(BUSY_EXCLUSIVE.into()));
            }
        }
        // Shared: lock against processes in lock-less/exclusive mode.
        if !ofd::try_lock(dxb, dxb_mode, u64::from(pid), 1)? {
            let _ = ofd::unlock(lck, 0, 1);
            return Err(Error::Busy(BUSY_EXCLUSIVE.into()));
        }
        return Ok(false);
    }
}

/// What `seize` reports when the data file stays locked whole by another
/// process (exclusive or lock-less mode).
const BUSY_EXCLUSIVE: &str = "the database is used exclusively by another process";

/// How many times `seize` starts over when the data file is locked whole
/// beside a destroyed lock file: a closing last user lets go within a few
/// system calls; a lock-less process does not (about 0.1 s of waits).
const HELD_WHOLE_RETRIES: u32 = 40;

/// The layout named by the magic of an unused lock file (`None`: empty, too
/// short, foreign or an unsupported version). Only the magic is trusted: the
/// rest of a stale file is rewritten anyway.
fn stale_layout(lck: &File) -> io::Result<Option<&'static LockLayout>> {
    if os::file::file_size(lck)? < 8 {
        return Ok(None);
    }
    let mut magic = [0u8; 8];
    os::file::pread_exact(lck, &mut magic, 0)?;
    Ok(LockLayout::for_magic(u64::from_le_bytes(magic)))
}

impl LockFile {
    /// Opens (creating with the permissions derived from `mode`, docs/format.md, "Files"; `mode`
    /// 0 = the data file's mode) the lock file at `lck_path` and runs the
    /// libmdbx seize protocol (docs/lock-format.md, "File locks") against the already-open data file `dxb`
    /// (opened read-write unless `read_only`).
    ///
    /// * First opener: sizes the file to `round_up_4096(header + max_readers*32)`
    ///   (`max_readers` 0 = 61), zeroes it, writes magic, format,
    ///   `pgops.wops = 1`, initialises both mutexes; `exclusive = true`. The
    ///   layout is the one an unused lock file left behind carries (v6 stays
    ///   v6), v7 otherwise; or the one `create` names.
    /// * Shared opener: joins the layout in use (v6 or v7), verifying size,
    ///   magic (foreign -> `Invalid`, unsupported version -> `VersionMismatch`)
    ///   and format signature (`VersionMismatch`).
    /// * Read-only environment whose lock file cannot be opened because of
    ///   `EROFS`/`EACCES`/`EPERM`: lock-less mode (whole-dxb READ lock only).
    /// * A second open of the same data file in this process -> `Busy`.
    ///
    /// The layout a first opener creates: `Some(f)`
    /// creates `f` whatever an unused lock file contained, `None` keeps the
    /// version of the unused lock file when it is v6 or v7 and creates v7 when
    /// it is empty or unreadable. A shared opener always joins the layout in
    /// use, whatever `create` says.
    pub fn open_as(
        lck_path: &Path,
        dxb: &File,
        read_only: bool,
        max_readers: u32,
        mode: u32,
        create: Option<LockFormat>,
    ) -> Result<LockOpen> {
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
                        writemap: Default::default(),
                        _registry: registry,
                    },
                    exclusive: true,
                });
            }
            Err(e) => return Err(e.into()),
        };

        let exclusive = seize(&lck_file, &dxb, dxb_mode, pid)?;
        let result = Self::setup(lck_file, exclusive, requested, lck_path, create);
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
            writemap: Default::default(),
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
        create: Option<LockFormat>,
    ) -> std::result::Result<Shared, (Error, File)> {
        macro_rules! tri {
            ($e:expr) => {
                match $e {
                    Ok(v) => v,
                    Err(e) => return Err((Error::from(e), lck_file)),
                }
            };
        }
        let (size, layout) = if exclusive {
            // Nobody uses the file: its content is stale. Keep the version it
            // carries (a lock file left by libmdbx 0.13 stays v6, so that
            // 0.13 applications can still join) unless told otherwise.
            let layout = match create {
                Some(f) => f.layout(),
                None => tri!(stale_layout(&lck_file)).unwrap_or(&LAYOUT_V7),
            };
            let size = lck_size(layout, requested);
            tri!(os::file::set_len(&lck_file, size));
            (size, layout)
        } else {
            let size = tri!(os::file::file_size(&lck_file));
            let ps = os::page_size() as u64;
            if size > i32::MAX as u64 || size % ps != 0 || size < ps {
                return Err((
                    Error::Problem(format!("lock file {} has invalid size {size}", path.display())),
                    lck_file,
                ));
            }
            (size, &LAYOUT_V7)
        };
        let region = tri!(SharedRegion::map(&lck_file, size as usize));
        let layout = if exclusive {
            region.zero(0, size as usize);
            region.u64_at(OFF_MAGIC).store(layout.magic, Ordering::Relaxed);
            region.u32_at(OFF_FORMAT).store(layout.signature, Ordering::Relaxed);
            region.u64_at(OFF_PGOPS_WOPS).store(1, Ordering::Relaxed);
            tri!(region.flush());
            tri!(region.mutex_at(layout.rdt_lock).init());
            tri!(region.mutex_at(layout.wrt_lock).init());
            layout
        } else {
            let magic = region.u64_at(OFF_MAGIC).load(Ordering::Acquire);
            let Some(layout) = LockLayout::for_magic(magic) else {
                let e = if !is_mdbx_magic(magic) {
                    Error::Invalid(format!("lock file {} has an invalid magic {magic:#018x}", path.display()))
                } else {
                    Error::VersionMismatch(format!(
                        "lock file {} has lock format version {} (rdbx supports 6, libmdbx 0.13, and 7, \
                         libmdbx 0.14.2+); processes using other libmdbx lines cannot share an environment \
                         with rdbx",
                        path.display(),
                        magic & 0xFF
                    ))
                };
                return Err((e, lck_file));
            };
            let format = region.u32_at(OFF_FORMAT).load(Ordering::Acquire);
            if format != layout.signature {
                return Err((
                    Error::VersionMismatch(format!(
                        "lock file {} (lock format {}) has os/format signature {format:#010x}, expected {:#010x} \
                         (a libmdbx built for another platform or locking method?)",
                        path.display(),
                        layout.format,
                        layout.signature
                    )),
                    lck_file,
                ));
            }
            layout
        };
        let max = max_readers_for(layout, size);
        if max < 4 {
            return Err((
                Error::Problem(format!("lock file {} is too small ({max} readers)", path.display())),
                lck_file,
            ));
        }
        let owned: Box<[SlotState]> = (0..max).map(|_| SlotState(AtomicU8::new(SLOT_NOT_OURS))).collect();
        Ok(Shared {
            region,
            layout,
            local_oldest_retired: AtomicU64::new(0),
            file: lck_file,
            pid_locked: Mutex::new(false),
            owned,
            high: AtomicU32::new(0),
        })
    }

    /// The lock format of this lock file (`None` in lock-less mode).
    pub fn format(&self) -> Option<LockFormat> {
        self.shared.as_ref().map(|sh| sh.layout.format)
    }

    /// Whether this is the lock-less stub (read-only filesystem).
    #[allow(dead_code)] // only tests/lck.rs calls it
    pub fn is_lockless(&self) -> bool {
        self.shared.is_none()
    }

    /// Applies the `envmode` rule (docs/lock-format.md, "Sync and mode fields") for a read-write opener that is not
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
    /// (masked to `envmode::MASK`), `meta_sync_txnid = low32(recent_txnid)`,
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
            sh.u64(sh.layout.readers_check_timestamp).store(os::monotime_ns(), Ordering::Relaxed);
            let pid = u64::from(self.pid);
            ofd::unlock(&self.dxb, 0, pid)?;
            ofd::unlock(&self.dxb, pid + 1, WHOLE_FILE_LEN - pid - 1)?;
            if !ofd::try_lock(&sh.file, LockMode::Read, 0, 1)? {
                return Err(Error::Problem("cannot downgrade the lock-file lock".into()));
            }
        }
        Ok(())
    }

    /// Tells the lock file that this process writes with WRITEMAP.
    pub fn set_writemap(&self, yes: bool) {
        self.writemap.store(yes, Ordering::Relaxed);
    }

    /// The recorded environment mode (`envmode`).
    #[allow(dead_code)] // only tests/lck.rs calls it
    pub fn envmode(&self) -> u32 {
        match &self.shared {
            Some(sh) => sh.u32(OFF_ENVMODE).load(Ordering::Acquire),
            None => self.lockless_envmode.load(Ordering::Relaxed),
        }
    }

    /// The process holding the write lock, for messages: glibc keeps the
    /// owner's thread id in the robust mutex (`__owner`, the `int` at offset
    /// 8 of `pthread_mutex_t` on x86_64 Linux), which `/proc` maps to its
    /// process. `None` when the lock is free or the owner cannot be found.
    /// A diagnostic only (read without taking the lock; may be stale).
    pub fn writer_pid(&self) -> Option<u32> {
        let sh = self.shared.as_ref()?;
        // FUTEX_TID_MASK: the low 30 bits are the thread id.
        let tid = sh.u32(sh.layout.wrt_lock + 8).load(Ordering::Relaxed) & 0x3FFF_FFFF;
        if tid == 0 {
            return None;
        }
        os::process_of_thread(tid)
    }

    /// Reader-table capacity (`min(32767, (lck size - 576) / 32)`).
    pub fn max_readers(&self) -> u32 {
        self.max_readers
    }

    fn rdt_length(&self, sh: &Shared) -> u32 {
        sh.u32(sh.layout.rdt_length).load(Ordering::Acquire).min(self.max_readers)
    }

    fn check_pid(&self) -> Result<()> {
        if os::getpid() != self.pid {
            return Err(Error::Panic);
        }
        Ok(())
    }

    // -- writer lock ---------------------------------------------------------

    // Inline: a one-put commit runs 27 more instructions without it
    // (docs/design.md, "Inlining on the commit path").
    #[inline(always)]
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
    // Inline: a one-put commit runs 21 more instructions without it
    // (docs/design.md, "Inlining on the commit path").
    #[inline(always)]
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
    #[allow(dead_code)] // only tests/lck.rs calls it
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
    /// new slot under `rdt_lock` (docs/lock-format.md, "Reader protocol"), taking the
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
        let rdt_len = sh.u32(sh.layout.rdt_length);
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
    #[allow(dead_code)] // only tests/lck.rs calls it
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
    /// slot)` with the `rdt_refresh_flag`/`cached_oldest_txnid` protocol
    /// (docs/lock-format.md, "Reader protocol"; stale slots below the
    /// previous cached value are kicked like libmdbx does).
    ///
    /// It updates the shared cache: call only while holding the writer lock
    /// (a libmdbx writer asserts that the cache never passes its own
    /// transaction).
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
        let cached = sh.u64(sh.layout.cached_oldest);
        let cached_retired = match sh.layout.cached_oldest_retired {
            Some(off) => sh.u64(off),
            None => &sh.local_oldest_retired,
        };
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
                // A slot that is neither older than the oldest so far nor
                // stale is passed over on its txnid alone (as libmdbx's scan
                // reads only the txnid); a candidate's txnid and retired
                // count are read as a consistent pair below. (A reader that
                // registers meanwhile raises the refresh flag: another pass.)
                if sh.slot_u32(i, SLOT_PID).load(Ordering::Acquire) == 0 || {
                    let t = sh.slot_u64(i, SLOT_TXNID).load(Ordering::SeqCst);
                    t >= oldest && t >= prev
                } {
                    continue;
                }
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
        // Only a writer stores the cache (this function's contract: the
        // writer lock is held), so a plain store keeps it from going down
        // where an atomic max would lock the bus each commit (libmdbx
        // stores it the same way; readers only load it).
        if oldest != prev {
            if oldest > prev {
                cached.store(oldest, Ordering::Release);
            }
            if oldest_retired > prev_retired {
                cached_retired.store(oldest_retired, Ordering::Relaxed);
            }
        }
        (oldest, oldest_retired)
    }

    /// Forces the next [`Self::oldest_reader`] to rescan the reader table.
    pub fn force_refresh(&self) {
        if let Some(sh) = &self.shared {
            sh.refresh().store(1, Ordering::SeqCst);
        }
    }

    /// The writer's pass over the slots holding snapshot `oldest` (libmdbx
    /// `mvcc_kick_laggards`): ousts every parked one (CAS of `tid` from
    /// `MDBX_TID_TXN_PARKED` to `MDBX_TID_TXN_OUSTED`, then CAS of `txnid`
    /// from `oldest` to all-ones) and returns how many it ousted and the last
    /// live, not parked slot at `oldest`, if any. Call with the writer lock.
    pub fn kick_scan(&self, oldest: u64) -> (u32, Option<StuckReader>) {
        let Some(sh) = &self.shared else { return (0, None) };
        let mut ousted = 0;
        let mut stuck = None;
        for i in 0..self.rdt_length(sh) {
            let txnid_a = sh.slot_u64(i, SLOT_TXNID);
            let tid_a = sh.slot_u64(i, SLOT_TID);
            loop {
                if txnid_a.load(Ordering::SeqCst) != oldest {
                    break;
                }
                let pid = sh.slot_u32(i, SLOT_PID).load(Ordering::Acquire);
                if pid == 0 {
                    break;
                }
                let tid = tid_a.load(Ordering::SeqCst);
                if tid == TID_TXN_PARKED {
                    if tid_a
                        .compare_exchange(TID_TXN_PARKED, TID_TXN_OUSTED, Ordering::SeqCst, Ordering::SeqCst)
                        .is_ok()
                    {
                        let _ = txnid_a.compare_exchange(oldest, TXNID_NONE, Ordering::SeqCst, Ordering::SeqCst);
                        ousted += 1;
                        break;
                    }
                    // The reader unparked or ended meanwhile: look again.
                    continue;
                }
                let retired = sh.slot_u64(i, SLOT_PAGES_RETIRED).load(Ordering::Acquire);
                stuck = Some(StuckReader { slot: i, pid, tid, txnid: oldest, pages_retired: retired });
                break;
            }
        }
        (ousted, stuck)
    }

    /// Whether slot `r.slot` still holds what [`Self::kick_scan`] saw.
    pub fn stuck_still(&self, r: &StuckReader) -> bool {
        let Some(sh) = &self.shared else { return false };
        sh.slot_u64(r.slot, SLOT_TXNID).load(Ordering::SeqCst) == r.txnid
            && sh.slot_u64(r.slot, SLOT_TID).load(Ordering::SeqCst) == r.tid
            && sh.slot_u32(r.slot, SLOT_PID).load(Ordering::Acquire) == r.pid
    }

    /// The handle-slow-readers callback answered "transaction aborted
    /// asynchronously": clears the slot's snapshot if it still is `r.txnid`.
    pub fn stuck_reset_txn(&self, r: &StuckReader) {
        let Some(sh) = &self.shared else { return };
        let _ =
            sh.slot_u64(r.slot, SLOT_TXNID).compare_exchange(r.txnid, TXNID_NONE, Ordering::SeqCst, Ordering::SeqCst);
    }

    /// The callback answered "reader process killed": clears the whole slot
    /// (`txnid` all-ones, `tid = MDBX_TID_TXN_OUSTED`, `pid = 0`).
    pub fn stuck_clear_slot(&self, r: &StuckReader) {
        let Some(sh) = &self.shared else { return };
        sh.slot_u64(r.slot, SLOT_TXNID).store(TXNID_NONE, Ordering::SeqCst);
        sh.slot_u64(r.slot, SLOT_TID).store(TID_TXN_OUSTED, Ordering::Relaxed);
        sh.slot_u32(r.slot, SLOT_PID).store(0, Ordering::SeqCst);
    }

    /// The largest `snapshot_pages_used` over live slots holding a snapshot
    /// (for step 2 of the shrink rule, docs/format.md, "Shrink").
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
    /// lazy bias, as libmdbx marks a meta it wrote without syncing
    /// (docs/lock-format.md, "Sync and mode fields"). A
    /// steady commit (its data synced) resets `unsynced_pages` and
    /// `eoos_timestamp`; its unsynced meta counts as one unsynced page.
    pub fn after_commit(&self, txnid: u64, steady: bool, meta_synced: bool) {
        let Some(sh) = &self.shared else { return };
        sh.refresh().store(0, Ordering::Release);
        if steady {
            sh.u64(sh.layout.unsynced_pages).store(u64::from(!meta_synced), Ordering::Relaxed);
            sh.u64(sh.layout.eoos_timestamp).store(0, Ordering::Relaxed);
        }
        let low = txnid as u32;
        let bias = if self.writemap.load(Ordering::Relaxed) { LAZY_BIAS_MAP } else { LAZY_BIAS_FD };
        let v = if steady && meta_synced { low } else { low.wrapping_sub(bias) };
        sh.u32(OFF_META_SYNC_TXNID).store(v, Ordering::Release);
    }

    /// Accounts `pages` written by a non-durable commit: `unsynced_pages +=
    /// pages` and `eoos_timestamp` set if it was 0.
    pub fn add_unsynced_pages(&self, pages: u64) {
        let Some(sh) = &self.shared else { return };
        sh.u64(sh.layout.unsynced_pages).fetch_add(pages, Ordering::Relaxed);
        // The clock is read only when the timestamp is still to be set.
        let eoos = sh.u64(sh.layout.eoos_timestamp);
        if eoos.load(Ordering::Relaxed) == 0 {
            let _ = eoos.compare_exchange(0, os::monotime_ns().max(1), Ordering::Relaxed, Ordering::Relaxed);
        }
    }

    /// The page-operation counters of the lock region (zeros without one).
    pub fn page_ops(&self) -> PageOps {
        let Some(sh) = &self.shared else { return PageOps::default() };
        PageOps::from_array(std::array::from_fn(|i| sh.u64(OFF_PGOPS + 8 * i).load(Ordering::Relaxed)))
    }

    /// Adds `d` to the page-operation counters of the lock region: a load
    /// and a store each, not an atomic add (a locked instruction, a few
    /// times a commit). Call with the writer lock held: the counters are
    /// statistics, which libmdbx also bumps with plain increments, so at
    /// worst an add made meanwhile without that lock (`count_call`) is lost.
    pub fn add_page_ops(&self, d: &PageOps) {
        let Some(sh) = &self.shared else { return };
        for (i, v) in d.to_array().into_iter().enumerate() {
            if v != 0 {
                let c = sh.u64(OFF_PGOPS + 8 * i);
                c.store(c.load(Ordering::Relaxed).wrapping_add(v), Ordering::Relaxed);
            }
        }
    }

    /// Counts one system call in the page-operation counters: one atomic
    /// add (`add_page_ops` of a `PageOps` with one field set walked all
    /// twelve, at every write call).
    #[inline]
    pub fn count_call(&self, call: PageCall) {
        if let Some(sh) = &self.shared {
            sh.u64(OFF_PGOPS + 8 * call as usize).fetch_add(1, Ordering::Relaxed);
        }
    }

    /// `unsynced_pages` of the lock region.
    pub fn unsynced_pages(&self) -> u64 {
        self.shared.as_ref().map_or(0, |sh| sh.u64(sh.layout.unsynced_pages).load(Ordering::Relaxed))
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

    /// `meta_sync_txnid` of the lock region (0 in lock-less mode).
    #[allow(dead_code)] // only tests/lck.rs calls it
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

    /// Sets `autosync_threshold` (pages; 0 = off) and/or `autosync_period`
    /// (monotonic ns, as libmdbx's `osal_monotime`; 0 = off), which every
    /// process sharing the lock file acts on.
    pub fn set_autosync(&self, threshold_pages: Option<u32>, period_ns: Option<u64>) {
        let Some(sh) = &self.shared else { return };
        if let Some(t) = threshold_pages {
            sh.u32(OFF_AUTOSYNC_THRESHOLD).store(t, Ordering::Relaxed);
        }
        if let Some(p) = period_ns {
            sh.u64(OFF_AUTOSYNC_PERIOD).store(p, Ordering::Relaxed);
        }
    }

    /// libmdbx's auto-sync condition, checked by a lazy commit: the unsynced
    /// pages reached `autosync_threshold`, or the database has been out of
    /// sync (`eoos_timestamp`) for `autosync_period` or longer.
    pub fn autosync_due(&self) -> bool {
        let Some(sh) = &self.shared else { return false };
        let threshold = sh.u32(OFF_AUTOSYNC_THRESHOLD).load(Ordering::Relaxed);
        if threshold != 0 && sh.u64(sh.layout.unsynced_pages).load(Ordering::Relaxed) >= u64::from(threshold) {
            return true;
        }
        let period = sh.u64(OFF_AUTOSYNC_PERIOD).load(Ordering::Relaxed);
        if period != 0 {
            let eoos = sh.u64(sh.layout.eoos_timestamp).load(Ordering::Relaxed);
            if eoos != 0 && os::monotime_ns().wrapping_sub(eoos) >= period {
                return true;
            }
        }
        false
    }

    /// `cached_oldest_txnid` of the lock region (0 in lock-less mode).
    pub fn cached_oldest(&self) -> u64 {
        self.shared.as_ref().map_or(0, |sh| sh.u64(sh.layout.cached_oldest).load(Ordering::SeqCst))
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

    /// Dead-reader sweep (docs/lock-format.md, "File locks"); returns how many slots were cleared.
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
        sh.u64(sh.layout.readers_check_timestamp).store(os::monotime_ns(), Ordering::Relaxed);
        drop(guard);
        Ok(count)
    }
}

impl Drop for LockFile {
    /// The closing protocol (docs/lock-format.md, "File locks").
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
            let Shared { region, file, layout, .. } = sh;
            let dxb_mode = if self.read_only { LockMode::Read } else { LockMode::Write };
            let last_user = ofd::try_lock(&file, LockMode::Write, 0, WHOLE_FILE_LEN).unwrap_or(false)
                && os::file_nlink(&file).map(|n| n > 0).unwrap_or(false)
                && ofd::try_lock(&self.dxb, dxb_mode, 0, WHOLE_FILE_LEN).unwrap_or(false);
            if last_user {
                let destroyed = region.mutex_at(layout.rdt_lock).destroy().is_ok()
                    && region.mutex_at(layout.wrt_lock).destroy().is_ok();
                let synced = region.u64_at(layout.unsynced_pages).load(Ordering::Acquire) == 0;
                drop(region);
                if destroyed && synced {
                    let _ = os::file::set_len(&file, 0);
                }
            } else {
                drop(region);
            }
            // The data file first, then the lock file (libmdbx's order): an
            // opener waits on the lock file, and once it gets it the data file
            // must be free, or it takes the data file's whole-file lock for
            // another process's and fails with `Busy` instead of waiting
            // (tests/open_race.rs, `openers_meet_a_slow_last_closer`).
            let _ = ofd::unlock(&self.dxb, 0, WHOLE_FILE_LEN);
            let _ = ofd::unlock(&file, 0, WHOLE_FILE_LEN);
            drop(file);
        } else {
            let _ = ofd::unlock(&self.dxb, 0, WHOLE_FILE_LEN);
        }
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
    #[allow(dead_code)] // only tests/lck.rs calls it
    pub fn owner_died(&self) -> bool {
        self.owner_died
    }

    /// Detaches the lock from the guard without unlocking; release it later on
    /// the same thread with [`LockFile::unlock_raw_writer`].
    #[allow(dead_code)] // only tests/lck.rs calls it
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
    #[allow(dead_code)] // only tests/lck.rs calls it
    pub fn index(&self) -> u32 {
        self.idx
    }

    /// Starts a snapshot (docs/lock-format.md, "Reader protocol"):
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

    /// `cached_oldest_txnid` of the lock region (for the reader's re-check, docs/lock-format.md, "Reader protocol").
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

    /// Parks the snapshot `txnid` this slot holds for the thread `owner`
    /// (libmdbx `txn_ro_park`): `tid = MDBX_TID_TXN_PARKED`, then
    /// `rdt_refresh_flag = 1`. The snapshot stays published; a writer that
    /// needs its pages may oust it (see [`LockFile::kick_scan`]).
    pub fn park(&self, owner: u64, txnid: u64) -> Result<()> {
        let Some(sh) = self.shared() else { return Ok(()) };
        let pid = sh.slot_u32(self.idx, SLOT_PID).load(Ordering::Acquire);
        if pid != self.lck.pid {
            return Err(Error::Problem(format!("reader slot {} belongs to pid {pid}", self.idx)));
        }
        let tid = sh.slot_u64(self.idx, SLOT_TID).load(Ordering::Acquire);
        let t = sh.slot_u64(self.idx, SLOT_TXNID).load(Ordering::Acquire);
        if tid != owner || t != txnid {
            return Err(Error::Problem(format!(
                "reader slot {} holds tid {tid:#x} txnid {t}, expected {owner:#x} and {txnid}",
                self.idx
            )));
        }
        sh.slot_u64(self.idx, SLOT_TID).store(TID_TXN_PARKED, Ordering::SeqCst);
        sh.refresh().store(1, Ordering::SeqCst);
        Ok(())
    }

    /// Unparks (libmdbx `txn_ro_unpark`): `Ok(true)` when the slot still held
    /// the parked snapshot `txnid` and `tid` is back to `owner`; `Ok(false)`
    /// when a writer ousted it (or its snapshot was otherwise reset): the
    /// slot is then cleared, with `tid = owner` again.
    pub fn unpark(&self, owner: u64, txnid: u64) -> Result<bool> {
        let Some(sh) = self.shared() else { return Ok(true) };
        let tid_a = sh.slot_u64(self.idx, SLOT_TID);
        let txnid_a = sh.slot_u64(self.idx, SLOT_TXNID);
        loop {
            let pid = sh.slot_u32(self.idx, SLOT_PID).load(Ordering::Acquire);
            if pid != self.lck.pid {
                return Err(Error::Problem(format!("reader slot {} belongs to pid {pid}", self.idx)));
            }
            let tid = tid_a.load(Ordering::SeqCst);
            let t = txnid_a.load(Ordering::SeqCst);
            if tid == TID_TXN_OUSTED || t >= TXNID_INVALID_FROM || tid != TID_TXN_PARKED || t != txnid {
                break;
            }
            if tid_a.compare_exchange(TID_TXN_PARKED, owner, Ordering::SeqCst, Ordering::SeqCst).is_err() {
                std::thread::yield_now();
                continue;
            }
            if txnid_a.load(Ordering::SeqCst) == txnid && tid_a.load(Ordering::SeqCst) == owner {
                return Ok(true);
            }
            break;
        }
        self.finish_parked(owner);
        Ok(false)
    }

    /// Ends the snapshot of a parked (or ousted) slot as libmdbx does: the
    /// txnid reset first, then `tid` given back to `owner`, so the slot does
    /// not stay marked parked/ousted for the next transaction.
    pub fn finish_parked(&self, owner: u64) {
        let Some(sh) = self.shared() else { return };
        let tid_a = sh.slot_u64(self.idx, SLOT_TID);
        let txnid_a = sh.slot_u64(self.idx, SLOT_TXNID);
        loop {
            txnid_a.store(TXNID_NONE, Ordering::SeqCst);
            tid_a.store(owner, Ordering::SeqCst);
            if txnid_a.load(Ordering::SeqCst) >= TXNID_INVALID_FROM && tid_a.load(Ordering::SeqCst) == owner {
                break;
            }
            std::thread::yield_now();
        }
        sh.slot_u32(self.idx, SLOT_PAGES_USED).store(0, Ordering::Release);
        sh.signal_change();
    }

    /// The owner thread recorded in the slot (`pthread_self`).
    pub fn tid(&self) -> u64 {
        match self.shared() {
            Some(sh) => sh.slot_u64(self.idx, SLOT_TID).load(Ordering::Acquire),
            None => os::thread_self(),
        }
    }

    /// Detaches the slot (still busy, snapshot kept) so it can be stored
    /// without a borrow; re-attach with [`LockFile::reader_from_raw`] on the
    /// same `LockFile`, then drop it.
    #[allow(dead_code)] // only tests/lck.rs calls it
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

/// A live, not parked reader slot holding the oldest snapshot (see
/// [`LockFile::kick_scan`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct StuckReader {
    pub slot: u32,
    pub pid: u32,
    pub tid: u64,
    pub txnid: u64,
    pub pages_retired: u64,
}

/// One row of [`LockFile::readers`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ReaderInfo {
    pub slot: u32,
    pub pid: u32,
    /// `pthread_self` of the owner ([`TID_TXN_PARKED`] = parked,
    /// [`TID_TXN_OUSTED`] = ousted).
    pub tid: u64,
    /// Snapshot txnid, `None` when the slot holds no snapshot.
    pub txnid: Option<u64>,
    pub pages_used: u32,
    pub pages_retired: u64,
}

#[cfg(test)]
mod tests {
    use std::fs::{File, OpenOptions};
    use std::time::Duration;

    use super::{seize, seize_with, PageCall, PageOps, MIN_DXB_SIZE, MIN_HEADER_SIZE, SLOT_SIZE};
    use crate::error::Error;
    use crate::os::ofd::{self, LockMode, WHOLE_FILE_LEN};

    /// Two descriptors of `name` in `dir` (two open file descriptions, so
    /// their OFD locks conflict as two processes' do), the file `len` long.
    fn two_opens(dir: &std::path::Path, name: &str, len: u64) -> (File, File) {
        let open =
            || OpenOptions::new().read(true).write(true).create(true).truncate(false).open(dir.join(name)).unwrap();
        let (a, b) = (open(), open());
        a.set_len(len).unwrap();
        (a, b)
    }

    /// libmdbx's fstat check after the locks are taken: a file removed
    /// meanwhile (no link left) fails the open, one too short to hold a
    /// database or a lock header and a slot asks for a new seize, and
    /// files long enough pass.
    #[test]
    fn check_fstat_finds_removed_and_short_files() {
        let d = tempfile::tempdir().unwrap();
        let lck_len = (MIN_HEADER_SIZE + SLOT_SIZE) as u64;
        let (dxb, _) = two_opens(d.path(), "dxb", MIN_DXB_SIZE);
        let (lck, _) = two_opens(d.path(), "lck", lck_len);
        assert!(!super::check_fstat(&dxb, &lck).unwrap(), "both long enough");
        lck.set_len(lck_len - 1).unwrap();
        assert!(super::check_fstat(&dxb, &lck).unwrap(), "the lock file is short");
        lck.set_len(lck_len).unwrap();
        dxb.set_len(MIN_DXB_SIZE - 1).unwrap();
        assert!(super::check_fstat(&dxb, &lck).unwrap(), "the data file is short");
        dxb.set_len(MIN_DXB_SIZE).unwrap();
        std::fs::remove_file(d.path().join("dxb")).unwrap();
        assert!(matches!(super::check_fstat(&dxb, &lck), Err(Error::Problem(_))), "the data file was removed");
        let (dxb, _) = two_opens(d.path(), "dxb", MIN_DXB_SIZE);
        assert!(!super::check_fstat(&dxb, &lck).unwrap(), "a new data file");
        std::fs::remove_file(d.path().join("lck")).unwrap();
        assert!(matches!(super::check_fstat(&dxb, &lck), Err(Error::Problem(_))), "the lock file was removed");
    }

    /// The last user of a database destroys the lock file (truncates it)
    /// and then lets go of both files. An opener that gets the lock file
    /// while the data file is still locked whole waits for it, as libmdbx's
    /// seize does, and becomes the exclusive opener; it failed with `Busy`.
    /// (No timing: the closer lets go whenever its thread runs, and the
    /// opener may start over as often as it takes here.)
    #[test]
    fn seize_waits_for_a_closer_that_still_holds_the_data_file() {
        let d = tempfile::tempdir().unwrap();
        let (dxb_closer, dxb) = two_opens(d.path(), "dxb", MIN_DXB_SIZE);
        let (_, lck) = two_opens(d.path(), "lck", 0);
        assert!(ofd::try_lock(&dxb_closer, LockMode::Write, 0, WHOLE_FILE_LEN).unwrap());
        let closer = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(1));
            ofd::unlock(&dxb_closer, 0, WHOLE_FILE_LEN).unwrap();
        });
        let r = seize_with(&lck, &dxb, LockMode::Write, 4242, u32::MAX);
        closer.join().unwrap();
        assert!(r.expect("the opener waits for the closer"), "and then opens exclusively");
    }

    /// A data file locked whole by a process in exclusive or lock-less mode
    /// gives `Busy`, naming it: at once beside a lock file in use (exclusive
    /// mode), after a few retries beside an empty one (a lock-less reader,
    /// which could not open the lock file its last user emptied).
    #[test]
    fn seize_reports_an_exclusive_user() {
        let d = tempfile::tempdir().unwrap();
        let (dxb_exclusive, dxb) = two_opens(d.path(), "dxb", MIN_DXB_SIZE);
        assert!(ofd::try_lock(&dxb_exclusive, LockMode::Write, 0, WHOLE_FILE_LEN).unwrap());
        for lck_len in [(MIN_HEADER_SIZE + SLOT_SIZE) as u64, 0] {
            let (_, lck) = two_opens(d.path(), &format!("lck{lck_len}"), lck_len);
            match seize(&lck, &dxb, LockMode::Write, 4242) {
                Err(Error::Busy(m)) => assert!(m.contains("exclusively"), "lock file of {lck_len} bytes: {m}"),
                other => panic!("lock file of {lck_len} bytes: {other:?}"),
            }
        }
    }

    /// `count_call` adds to the counter of the `PageOps` field it names.
    #[test]
    fn page_calls_name_their_counters() {
        let index = |set: fn(&mut PageOps)| {
            let mut ops = PageOps::default();
            set(&mut ops);
            ops.to_array().iter().position(|&v| v == 1)
        };
        assert_eq!(index(|o| o.wops = 1), Some(PageCall::Write as usize));
        assert_eq!(index(|o| o.msync = 1), Some(PageCall::Msync as usize));
        assert_eq!(index(|o| o.fsync = 1), Some(PageCall::Fsync as usize));
    }
}
