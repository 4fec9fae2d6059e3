//! The environment's public API: `Env` (a handle to the shared state),
//! `EnvBuilder` and its options (`Geometry`, `Durability`), `EnvInfo`, and
//! the environment-wide operations (transactions, sync, copy, info). The
//! state itself and what opening, reading metas, mapping and syncing do is
//! `EnvInner` in `env/inner.rs`.

use std::cell::RefCell;
use std::path::Path;
use std::sync::Arc;

use crate::error::{Error, Result};
use crate::flags::DbFlags;
use crate::format::meta::pv2pages;
use crate::io::IoFaults;
use crate::lck::LockFormat;
use crate::txn::{RoTxn, RwTxn};

mod inner;

pub(crate) use inner::{read_meta_page, EnvInner, Snapshot, WriterMetas};

/// How commits reach the disk (libmdbx's sync modes).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Durability {
    /// Data, then meta, flushed at every commit (steady metas).
    #[default]
    SyncDurable,
    /// Data flushed, meta not: a system crash may lose the last commits, never corrupts.
    NoMetaSync,
    /// Nothing flushed at commit (weak metas); a system crash rolls back to the last steady commit.
    SafeNoSync,
    /// Nothing flushed and no steady point kept: only an application crash is safe.
    UtterlyNoSync,
}

impl Durability {
    fn envmode(self) -> u32 {
        match self {
            Durability::SyncDurable => 0,
            Durability::NoMetaSync => 0x40000,
            Durability::SafeNoSync => 0x10000 | 0x40000,
            Durability::UtterlyNoSync => 0x110000 | 0x40000,
        }
    }
    pub(crate) fn syncs_data(self) -> bool {
        matches!(self, Durability::SyncDurable | Durability::NoMetaSync)
    }
}

/// Geometry of the data file, in bytes. `None` picks rdbx's default (or keeps
/// the stored value for an existing database).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Geometry {
    /// Page size, a power of two in 256..=65536; fixed at creation.
    pub page_size: Option<usize>,
    /// The file never shrinks below this.
    pub size_lower: Option<usize>,
    /// Initial size.
    pub size_now: Option<usize>,
    /// The file never grows beyond this (`MapFull`).
    pub size_upper: Option<usize>,
    /// Growth step (0: no automatic growth).
    pub growth_step: Option<usize>,
    /// Shrink threshold (0: never shrink).
    pub shrink_threshold: Option<usize>,
}

/// Information about an open environment (`MDBX_envinfo`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EnvInfo {
    /// Page size.
    pub page_size: usize,
    /// Lower bound of the file size in bytes.
    pub size_lower: u64,
    /// Current file size in bytes (geometry `now`).
    pub size_now: u64,
    /// Upper bound in bytes.
    pub size_upper: u64,
    /// Growth step in bytes.
    pub growth_step: u64,
    /// Shrink threshold in bytes.
    pub shrink_threshold: u64,
    /// Id of the last committed transaction.
    pub last_txnid: u64,
    /// First never-allocated page.
    pub first_unallocated: u64,
    /// Cumulative retired pages.
    pub pages_retired: u64,
    /// Reader table capacity.
    pub max_readers: u32,
    /// Reader slots in use.
    pub readers_used: u32,
    /// Per meta page: (txnid, steady).
    pub metas: [(u64, bool); 3],
    /// Index of the meta readers use.
    pub recent_meta: usize,
    /// Bytes written since the last steady commit (libmdbx's
    /// `mi_unsync_volume`, from the lock file's `unsynced_pages`, plus a
    /// page when the newest meta is not known to be synced).
    pub unsynced_bytes: u64,
    /// Auto-sync threshold in bytes (0 = off; see [`EnvBuilder::sync_bytes`]).
    pub autosync_threshold: u64,
    /// Auto-sync period (zero = off; see [`EnvBuilder::sync_period`]).
    pub autosync_period: std::time::Duration,
}

/// Options for opening an environment.
#[derive(Clone)]
pub struct EnvBuilder {
    max_dbs: u32,
    max_readers: u32,
    no_sub_dir: bool,
    read_only: bool,
    durability: Durability,
    geometry: Geometry,
    mode: u32,
    lock_format: Option<LockFormat>,
    dirty_limit: Option<usize>,
    writethrough_threshold: usize,
    page_buffer_reserve: usize,
    write_map: bool,
    faults: Option<Arc<dyn IoFaults>>,
    slow_readers: Option<Arc<crate::SlowReaderFn>>,
    sync_bytes: Option<usize>,
    sync_period: Option<std::time::Duration>,
}

impl Default for EnvBuilder {
    fn default() -> Self {
        EnvBuilder {
            max_dbs: 0,
            max_readers: crate::lck::DEFAULT_READERS,
            no_sub_dir: false,
            read_only: false,
            durability: Durability::SyncDurable,
            geometry: Geometry::default(),
            mode: 0o644,
            lock_format: None,
            dirty_limit: None,
            writethrough_threshold: 2,
            page_buffer_reserve: crate::pool::POOL_LIMIT,
            write_map: false,
            faults: None,
            slow_readers: None,
            sync_bytes: None,
            sync_period: None,
        }
    }
}

impl EnvBuilder {
    /// Maximum number of named tables open at once.
    pub fn max_dbs(mut self, n: u32) -> Self {
        self.max_dbs = n;
        self
    }
    /// Reader table capacity requested when this process creates the lock file.
    pub fn max_readers(mut self, n: u32) -> Self {
        self.max_readers = n.clamp(1, crate::format::lock::READERS_LIMIT);
        self
    }
    /// `true`: the path is the data file itself and the lock file is `PATH-lck`.
    /// Only matters at creation; an existing path is detected.
    pub fn no_sub_dir(mut self, yes: bool) -> Self {
        self.no_sub_dir = yes;
        self
    }
    /// Open read-only (no writes of any kind to the data file).
    pub fn read_only(mut self, yes: bool) -> Self {
        self.read_only = yes;
        self
    }
    /// Sync mode of commits.
    pub fn durability(mut self, d: Durability) -> Self {
        self.durability = d;
        self
    }
    /// Geometry used at creation.
    pub fn geometry(mut self, g: Geometry) -> Self {
        self.geometry = g;
        self
    }
    /// File permission bits used when creating files.
    pub fn mode(mut self, mode: u32) -> Self {
        self.mode = mode;
        self
    }
    /// The lock-file layout to create when this process is the first to open
    /// the database: [`LockFormat::V6`] where the applications that use it run
    /// libmdbx 0.13 (e.g. reth), [`LockFormat::V7`] for libmdbx 0.14.2+.
    /// Without this choice rdbx keeps the version of a lock file left behind
    /// by a process that did not close cleanly and creates v7 otherwise.
    ///
    /// When another process already has the database open, rdbx joins the lock
    /// file it uses (v6 or v7) whatever this says: the data file is the same
    /// for both (docs/lock-format.md).
    pub fn lock_format(mut self, f: LockFormat) -> Self {
        self.lock_format = Some(f);
        self
    }
    /// How many dirty pages a write transaction keeps in memory before it
    /// writes some of them to the data file early ("spills" them; libmdbx's
    /// `MDBX_opt_txn_dp_limit`). The default is what libmdbx takes from the
    /// machine's RAM ((total + available) / 42), and at most a quarter of a
    /// memory limit set on the process (`ulimit -d`/`-v`, the cgroup's
    /// `memory.max`), but at least 1024 pages. Spilling happens between
    /// operations, so any value from 1 up is correct; a few hundred pages or
    /// less make every operation read its path back from the file (tests use
    /// that to spill all the time).
    pub fn dirty_page_limit(mut self, pages: usize) -> Self {
        self.dirty_limit = Some(crate::txn::spill::clamp_limit(pages));
        self
    }
    /// In the durable mode, a commit that writes at most this many pages, with
    /// nothing else waiting for a sync, writes them and then its meta
    /// write-through (`pwritev2(RWF_DSYNC)`, like libmdbx's `O_DSYNC`
    /// descriptor) instead of write + `fdatasync` + meta + `fdatasync`.
    /// Larger commits write their pages, `fdatasync` once, and write the meta
    /// write-through. Default 2, libmdbx's `MDBX_opt_writethrough_threshold`;
    /// 0 turns the first path off.
    pub fn writethrough_threshold(mut self, pages: usize) -> Self {
        self.writethrough_threshold = pages;
        self
    }
    /// How many page buffers a write transaction leaves for the next one
    /// (libmdbx's `MDBX_opt_dp_reserve_limit`; default 1024). A transaction
    /// that dirties more pages than the reserve holds gets fresh memory for
    /// the rest, which the system must fault in and zero (one to two
    /// microseconds a page on the benchmark's VM), and gives it back when it
    /// ends. An application whose write
    /// transactions regularly dirty many pages can keep that many: the
    /// memory stays with the environment until it closes (at most the
    /// reserve times the page size). LMDB keeps every buffer it ever used;
    /// `usize::MAX` does the same. With WRITEMAP most dirty pages are
    /// edited in the map and take no buffer.
    pub fn page_buffer_reserve(mut self, pages: usize) -> Self {
        self.page_buffer_reserve = pages;
        self
    }
    /// libmdbx's WRITEMAP: the data file is mapped writable, and a write
    /// transaction edits the pages it allocates in place in the map instead of
    /// in heap buffers; a commit has nothing to write for them and makes them
    /// durable with `msync` (as libmdbx does). The mode is recorded in the
    /// lock file, where libmdbx peers see it: in the lazy durability modes all
    /// processes must agree on it (`Incompatible` otherwise), as in libmdbx.
    /// Ignored for read-only environments.
    ///
    /// Pages that must keep their file contents for an open parent while a
    /// nested transaction edits them are still copied to the heap, and the
    /// crash-test seam (`io_faults`) does not see edits made through the map.
    pub fn write_map(mut self, yes: bool) -> Self {
        self.write_map = yes;
        self
    }
    /// Installs the handle-slow-readers callback (libmdbx's
    /// `mdbx_env_set_hsr`). A write transaction of this environment calls it
    /// when it needs pages that only the GC could give but the oldest
    /// snapshot still in use holds them back, and it would otherwise grow the
    /// file (or fail with `MapFull` at the upper bound): once per live reader
    /// of that snapshot (dead processes' slots are cleared and parked readers
    /// ousted first, without asking). See [`crate::SlowReader`] for what it is
    /// told and [`crate::SlowReaderAction`] for what it may answer.
    ///
    /// It runs on the writer's thread while the writer lock is held: it may
    /// wait (and answer `Retry`), signal or kill the reader, but must not
    /// start a write transaction of this environment.
    pub fn handle_slow_readers<F>(mut self, f: F) -> Self
    where
        F: Fn(&crate::SlowReader) -> crate::SlowReaderAction + Send + Sync + 'static,
    {
        self.slow_readers = Some(Arc::new(f));
        self
    }
    /// Auto-sync threshold of the lazy durability modes (libmdbx's
    /// `MDBX_opt_sync_bytes`): a `SafeNoSync`/`UtterlyNoSync` commit is made
    /// steady (data and meta flushed) once the pages written since the last
    /// steady commit reach this many bytes (rounded up to whole pages; 0 =
    /// off). Kept in the lock file, so it applies to every process using the
    /// database (libmdbx ones too) until one changes it; written at open
    /// unless read-only.
    pub fn sync_bytes(mut self, bytes: usize) -> Self {
        self.sync_bytes = Some(bytes);
        self
    }
    /// Auto-sync period of the lazy durability modes (libmdbx's
    /// `MDBX_opt_sync_period`): a lazy commit is made steady when the
    /// database has been out of sync for this long (zero = off). Kept in the
    /// lock file like [`EnvBuilder::sync_bytes`].
    pub fn sync_period(mut self, period: std::time::Duration) -> Self {
        self.sync_period = Some(period);
        self
    }
    /// Routes every data-file write and sync through `faults` (for tests).
    #[doc(hidden)]
    pub fn io_faults(mut self, faults: Arc<dyn IoFaults>) -> Self {
        self.faults = Some(faults);
        self
    }
    /// Opens (creating if needed and not read-only) the environment at `path`.
    ///
    /// # Safety model
    ///
    /// rdbx memory-maps the data file, as libmdbx and LMDB do: a value that
    /// `get` or a cursor returns is a slice of that map, valid as long as its
    /// transaction. No copy is made, so the bytes must not change while the
    /// transaction lives. What guarantees it:
    ///
    /// * MVCC. A commit never writes a page that a live snapshot references;
    ///   it writes copies elsewhere and switches metas. Every process that
    ///   follows the lock-file protocol (rdbx or libmdbx, any version rdbx can
    ///   join) keeps that rule: a reader's slot in the lock file holds its
    ///   snapshot's pages back from reuse until the reader ends (or, if it
    ///   parked, until a writer ousts it, after which it gets `Ousted`, never
    ///   changed bytes).
    /// * The meta pages are rewritten in place by every commit: rdbx reads
    ///   them by copying until two copies agree and validates them, never
    ///   through a borrowed slice.
    /// * Before a snapshot is used, its pages are checked to lie inside the
    ///   file, and every page access is bounds-checked and its header
    ///   validated: a damaged file gives `Error::Corrupted`, not a wild read.
    ///
    /// What rdbx cannot prevent, like every memory-mapped store: a process that
    /// ignores the protocol (writing the file with other tools, or opening it
    /// with another lock file, e.g. through a different path on a network
    /// file system) can change bytes that a transaction is reading, which then
    /// sees garbage (rdbx's checks turn most of it into `Corrupted`); and
    /// truncating the file below pages in use makes the next access to them
    /// raise `SIGBUS` and kill the process. Keep other writers away from the
    /// files, and never truncate or replace a database that is open.
    pub fn open(&self, path: impl AsRef<Path>) -> Result<Env> {
        let (inner, apply_geometry) = EnvInner::open(self, path.as_ref())?;
        let env = Env { inner: Arc::new(inner) };
        if apply_geometry {
            // An existing database opened by its only user: apply the requested
            // geometry, as libmdbx does (others' geometry is left alone).
            let g = Geometry { page_size: None, ..self.geometry.clone() };
            env.set_geometry(&g)?;
        }
        Ok(env)
    }
}

/// An open environment. Cheap to clone; `Send + Sync`.
#[derive(Clone)]
pub struct Env {
    pub(crate) inner: Arc<EnvInner>,
}

impl Env {
    /// Closes this handle and reports what dropping it cannot: when it is the
    /// last handle of the environment, in the lazy durability modes
    /// (`SafeNoSync`, `UtterlyNoSync`, `NoMetaSync`), the final sync that
    /// leaves a steady meta behind (libmdbx's `mdbx_env_close`). An error
    /// means the last commits may not survive a system crash; they are still
    /// in the file, and the next open or sync makes them steady. With other
    /// handles still open (clones of this `Env`) nothing happens yet: the
    /// last one to go closes the environment.
    ///
    /// Dropping an `Env` does the same, silently.
    pub fn close(self) -> Result<()> {
        match Arc::try_unwrap(self.inner) {
            Ok(inner) => inner.close_sync(),
            Err(_) => Ok(()),
        }
    }

    /// A builder with libmdbx-like defaults.
    pub fn builder() -> EnvBuilder {
        EnvBuilder::default()
    }

    /// Opens (or creates) `path` with default options (see the safety model
    /// of [`EnvBuilder::open`]).
    pub fn open(path: impl AsRef<Path>) -> Result<Env> {
        EnvBuilder::default().open(path)
    }

    /// Page size of the database.
    pub fn page_size(&self) -> usize {
        self.inner.page_size
    }

    /// Dirty pages a write transaction keeps in memory before it spills
    /// (see [`EnvBuilder::dirty_page_limit`]).
    pub fn dirty_page_limit(&self) -> usize {
        self.inner.dirty_limit
    }

    /// Path of the data file.
    pub fn data_path(&self) -> &Path {
        &self.inner.data_path
    }

    /// Whether this process was the only user when it opened the environment
    /// (it initialised the lock file).
    pub fn opened_exclusively(&self) -> bool {
        self.inner.exclusive
    }

    /// Path of the lock file.
    pub fn lock_path(&self) -> &Path {
        &self.inner.lck_path
    }

    /// The lock-file layout in use: the one rdbx created as the first opener
    /// or the one it joined (`None` without a lock file, i.e. read-only on a
    /// read-only filesystem).
    pub fn lock_format(&self) -> Option<LockFormat> {
        self.inner.lck.format()
    }

    /// Largest key for a table with `flags`.
    pub fn max_key_size(&self, flags: DbFlags) -> usize {
        self.inner.limits.max_key(flags)
    }

    /// Largest value for a table with `flags`.
    pub fn max_value_size(&self, flags: DbFlags) -> usize {
        self.inner.limits.max_value(flags)
    }

    /// Begins a read-only transaction on the newest snapshot.
    pub fn begin_ro_txn(&self) -> Result<RoTxn<'_>> {
        let env = &*self.inner;
        let slot = env.lck.acquire_reader()?;
        for _ in 0..1000 {
            let map = env.map.read().unwrap_or_else(|e| e.into_inner()).clone();
            let (metas, t) = env.read_troika(&map)?;
            let meta = metas[t.recent].clone();
            let txnid = meta.txnid();
            slot.publish(txnid, meta.geo.first_unallocated, meta.pages_retired);
            let (metas2, t2) = env.read_troika(&map)?;
            if metas2[t2.recent].txnid() != txnid {
                continue;
            }
            if txnid < slot.cached_oldest() || !slot.still(txnid) {
                continue;
            }
            let map = env.map_for(&meta, t.recent)?;
            return Ok(RoTxn {
                env,
                snap: Snapshot { map, meta },
                _slot: slot,
                tables: RefCell::new(Vec::new()),
                park: crate::txn::Park::Active,
            });
        }
        Err(Error::Problem("could not get a stable snapshot (metas kept changing)".into()))
    }

    /// Begins the write transaction; waits while another writer (in any process) runs.
    pub fn begin_rw_txn(&self) -> Result<RwTxn<'_>> {
        if self.inner.read_only {
            return Err(Error::Access("the environment is read-only"));
        }
        let guard = self.inner.lck.lock_writer()?;
        self.rw_txn_with(guard)
    }

    /// The process that holds the write lock now, if any and if it can be
    /// told (for "waiting for process N" messages; it may change at once).
    pub fn writer_pid(&self) -> Option<u32> {
        self.inner.lck.writer_pid()
    }

    /// Begins the write transaction only if no other writer runs:
    /// `Err(Busy)` otherwise (libmdbx's `MDBX_TXN_TRY`).
    pub fn try_begin_rw_txn(&self) -> Result<RwTxn<'_>> {
        if self.inner.read_only {
            return Err(Error::Access("the environment is read-only"));
        }
        match self.inner.lck.try_lock_writer()? {
            Some(guard) => self.rw_txn_with(guard),
            None => Err(Error::Busy("another write transaction is running".into())),
        }
    }

    // Inline: a one-put commit runs 24 more instructions without it
    // (docs/design.md, "Inlining on the commit path").
    #[inline(always)]
    fn rw_txn_with<'e>(&'e self, guard: crate::lck::WriterGuard<'e>) -> Result<RwTxn<'e>> {
        let env = &*self.inner;
        let mut st = env.writer_state.lock().unwrap_or_else(|e| {
            // A panic in a write transaction: its state is emptied as at
            // the end of every transaction (its drop may not have run). Its
            // record of the metas stays: it is checked against the map below.
            let mut st = e.into_inner();
            st.end(None);
            st
        });
        // The writer keeps its map between transactions: it takes the
        // environment's (under the map's read lock, which also gives that
        // map's count of replacements) only when it was replaced since.
        // The metas are read through it, and it is the transaction's if it
        // covers the base snapshot (else `map_for` checks the file and
        // remaps). The base meta is copied once, from the writer's record
        // of the slots into the state (a meta is 224 bytes: each move is a
        // copy).
        let (t, steady_txnid) = {
            let st = &mut *st;
            if st.map_gen != env.map_gen.load(std::sync::atomic::Ordering::Acquire) {
                let current = env.map.read().unwrap_or_else(|e| e.into_inner());
                st.map = current.clone();
                st.map_gen = env.map_gen.load(std::sync::atomic::Ordering::Acquire);
            }
            let (base, t, steady_txnid) = env.writer_metas(&mut st.metas, &st.map)?;
            st.base.clone_from(base);
            (t, steady_txnid)
        };
        if !env.map_covers(&st.base, &st.map) {
            st.map = env.map_for(&st.base, t.recent)?;
            // Which replacement that map is, is not known here.
            st.map_gen = u64::MAX;
        }
        let txnid = st.base.txnid() + 1;
        if txnid > crate::format::MAX_TXNID {
            return Err(Error::Problem("transaction ids are exhausted".into()));
        }
        let base_geo = st.base.geo;
        st.begin(&env.dbs);
        st.base_slot = t.tail;
        st.recent_slot = t.recent;
        st.steady_txnid = steady_txnid;
        st.retired_count = 0;
        Ok(RwTxn {
            env,
            st,
            _guard: guard,
            geo: plausible_growth(base_geo, env.page_size),
            txnid,
            dirty_extra: 0,
            run_next: 0,
            runs_scanned: 0,
            detent: None,
            gc_exhausted: false,
            gc_spent: false,
            in_reclaim: false,
            no_spare: false,
            readers_swept: false,
            saving_gc: false,
            poisoned: false,
        })
    }

    /// Information about the environment.
    pub fn info(&self) -> Result<EnvInfo> {
        let env = &*self.inner;
        let map = env.map.read().unwrap_or_else(|e| e.into_inner()).clone();
        let (metas, t) = env.read_troika(&map)?;
        let m = &metas[t.recent];
        let ps = env.page_size as u64;
        let readers = env.lck.readers();
        Ok(EnvInfo {
            page_size: env.page_size,
            size_lower: m.geo.lower as u64 * ps,
            size_now: m.geo.now as u64 * ps,
            size_upper: m.geo.upper as u64 * ps,
            growth_step: pv2pages(m.geo.grow_pv) as u64 * ps,
            shrink_threshold: pv2pages(m.geo.shrink_pv) as u64 * ps,
            last_txnid: m.txnid(),
            first_unallocated: m.geo.first_unallocated as u64,
            pages_retired: m.pages_retired,
            max_readers: env.lck.max_readers(),
            readers_used: readers.iter().filter(|r| r.pid != 0).count() as u32,
            metas: [0, 1, 2].map(|i| (metas[i].txnid(), metas[i].is_steady())),
            recent_meta: t.recent,
            unsynced_bytes: (env.lck.unsynced_pages() + u64::from(!env.lck.meta_is_synced(m.txnid()))) * ps,
            autosync_threshold: u64::from(env.lck.autosync().0) * ps,
            autosync_period: std::time::Duration::from_nanos(env.lck.autosync().1),
        })
    }

    /// Statistics of the main table in the newest snapshot (`mdbx_env_stat`).
    pub fn stat(&self) -> Result<crate::Stat> {
        self.begin_ro_txn()?.db_stat(crate::Db::MAIN)
    }

    /// Changes the geometry in a write transaction of its own (see
    /// [`RwTxn::set_geometry`]).
    pub fn set_geometry(&self, g: &Geometry) -> Result<()> {
        let mut txn = self.begin_rw_txn()?;
        txn.set_geometry(g)?;
        txn.commit()
    }

    /// Makes the last commit durable (turns a weak meta steady).
    pub fn sync(&self) -> Result<()> {
        self.inner.sync()
    }

    /// The page-operation counters of the environment, shared through the
    /// lock file with every process using it (`mdbx_stat -p`; zeros when the
    /// environment is open without a lock file).
    pub fn page_ops(&self) -> crate::lck::PageOps {
        self.inner.lck.page_ops()
    }
}

/// The geometry a write transaction acts on. A growth step that no sane
/// geometry has — more than the whole range (`upper - lower`) and more than
/// half the upper bound, as a damaged meta may hold — would make the next
/// allocation grow the file to its upper bound. Such a step is replaced by
/// the default step (1 MiB, at most the range, at least a page), which the
/// next commit then records. A smaller damaged step cannot be told from a
/// chosen one (metas have no checksum); a fixed-size geometry (lower = upper)
/// with a modest step is left as it is.
fn plausible_growth(mut geo: crate::format::meta::MetaGeo, ps: usize) -> crate::format::meta::MetaGeo {
    use crate::format::meta::{pages2pv, pv2pages};
    let range = geo.upper.saturating_sub(geo.lower);
    let step = pv2pages(geo.grow_pv);
    if step > range && step > geo.upper / 2 {
        geo.grow_pv = pages2pv(((1usize << 20) / ps).min(range as usize).max(1) as u32);
    }
    geo
}
