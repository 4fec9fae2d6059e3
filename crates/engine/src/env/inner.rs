//! The shared state of an open environment (`EnvInner`): opening the files
//! (naming, creation, the seize of the lock file), reading and choosing the
//! metas, the memory map and its growth, the data file's writes and syncs,
//! and the closing sync. `Env` (in `env/mod.rs`) is the public handle to it.

use std::fs::{File, OpenOptions};
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};

use super::{Durability, EnvBuilder, Geometry};
use crate::bootid;
use crate::error::{Error, Result};
use crate::flags::DbFlags;
use crate::format::limits::Limits;
use crate::format::meta::{pages2pv, troika, Meta, MetaGeo, Troika, META_LEN, META_OFF, SIGN_STEADY};
use crate::format::tree::Tree;
use crate::format::{DATA_MAGIC, MAX_PAGENO, MAX_PAGESIZE, MIN_PAGESIZE, NUM_METAS};
use crate::io::{FaultyIo, FileIo, PageIo};
use crate::lck::LockFile;
use crate::os::{file, mmap::Mmap};

/// A consistent view of one meta and the map to read its pages from.
pub(crate) struct Snapshot {
    pub map: Arc<Mmap>,
    pub meta: Meta,
}

/// The bytes of a meta slot that are read: the page header and the body.
const META_BYTES: usize = META_OFF + META_LEN;

/// The [`META_FINGERPRINT`] words of a meta slot's first bytes.
fn fingerprint(raw: &[u8; META_BYTES]) -> [u32; META_FINGERPRINT.len()] {
    // (A loop: `array::map` was not inlined, 160 instructions a commit.)
    let mut words = [0u32; META_FINGERPRINT.len()];
    for (w, &o) in words.iter_mut().zip(&META_FINGERPRINT) {
        *w = u32::from_ne_bytes([raw[o], raw[o + 1], raw[o + 2], raw[o + 3]]);
    }
    words
}

/// Page offsets of the 4-byte words that change whenever a meta is
/// rewritten: `txnid_a`, `sign` and `txnid_b` (see
/// [`EnvInner::writer_metas`]).
const META_FINGERPRINT: [usize; 6] = {
    use crate::format::meta::{SIGN_AT, TXNID_A_AT, TXNID_B_AT};
    let at = [TXNID_A_AT, SIGN_AT, TXNID_B_AT];
    [
        META_OFF + at[0],
        META_OFF + at[0] + 4,
        META_OFF + at[1],
        META_OFF + at[1] + 4,
        META_OFF + at[2],
        META_OFF + at[2] + 4,
    ]
};

/// The three meta slots decoded: as this process's writer last decoded or
/// wrote them (see [`EnvInner::writer_metas`]), or as `read_troika` found them.
pub(crate) struct WriterMetas {
    raw: [[u8; META_BYTES]; 3],
    /// Each slot's [`META_FINGERPRINT`] words, from `raw`.
    prints: [[u32; META_FINGERPRINT.len()]; 3],
    metas: [Meta; 3],
    states: [(u64, bool); 3],
    troika: Troika,
}

pub(crate) struct EnvInner {
    pub data_path: PathBuf,
    pub lck_path: PathBuf,
    pub file: Arc<File>,
    pub io: Box<dyn PageIo>,
    pub map: RwLock<Arc<Mmap>>,
    /// Counts the replacements of `map` (made under its write lock): a
    /// writer whose kept map has the current count uses it without the lock
    /// (`WriteState::map`).
    pub map_gen: AtomicU64,
    pub page_size: usize,
    pub limits: Limits,
    pub read_only: bool,
    pub durability: Durability,
    pub max_dbs: u32,
    /// This process initialised the lock file (no other process had the
    /// environment open).
    pub exclusive: bool,
    /// A length the data file is known to have (at least).
    pub file_len: AtomicU64,
    /// Named-table handle slots, and this environment's identity.
    pub dbs: crate::txn::DbRegistry,
    /// Page buffers and lists kept between write transactions (see `pool`),
    /// and what the writer last knew of the meta slots (`writer_metas`).
    pub writer_state: Mutex<crate::txn::WriteState>,
    /// Dirty pages a write transaction keeps in memory (see `spill`).
    pub dirty_limit: usize,
    /// WRITEMAP: the map is writable and write transactions edit pages in it.
    pub writemap: bool,
    /// The data file lives on an in-memory file system (tmpfs, ramfs). There
    /// a sync costs nothing (nor would it outlive a power loss) and the
    /// order of pages written gains nothing, while a page of the file used
    /// for the first time costs the kernel an allocation (and, through the
    /// map, zeroing). So the writer makes the last commit steady as soon as
    /// that frees pages for reuse rather than take fresh ones
    /// (`gc::sync_would_help`); commit locality never takes the unused room
    /// of the file ahead of free pages (`gc::tail_run_allowed`); and with
    /// WRITEMAP, fresh tail pages are made present ahead in batches
    /// (`Mmap::prefault`), which on a disk would dirty pages the
    /// transaction may not use.
    pub in_memory_fs: bool,
    /// Durable commits of at most this many pages write through (see
    /// `EnvBuilder::writethrough_threshold`).
    pub writethrough_threshold: usize,
    /// The handle-slow-readers callback ([`EnvBuilder::handle_slow_readers`]).
    pub slow_readers: Option<Arc<crate::SlowReaderFn>>,
    /// The closing sync ran (see `close_sync`).
    pub closed: std::sync::atomic::AtomicBool,
    // Declared last: dropped after the map and files above are released.
    pub lck: LockFile,
}
/// The header and body of meta page `i` as they are now in `map` (`None` if
/// the page lies outside the map): the one way the engine reads a meta out
/// of the map. A commit may be rewriting the meta right now (another process
/// too), so it is never borrowed: it is copied with volatile reads until two
/// copies agree, as libmdbx reads metas; a torn copy that persists fails
/// validation (its two txnid fields differ). The caller makes sure the page
/// lies inside the file.
pub(crate) fn read_meta_page(map: &Mmap, i: usize, ps: usize) -> Option<[u8; META_BYTES]> {
    let mut copy = [0u8; META_BYTES];
    let mut again = [0u8; META_BYTES];
    for _ in 0..8 {
        if !map.copy_volatile(i * ps, &mut copy) || !map.copy_volatile(i * ps, &mut again) {
            return None;
        }
        if copy == again {
            break;
        }
    }
    Some(copy)
}

/// OS page size used to round sizes.
fn os_page() -> usize {
    crate::os::page_size()
}

fn round_up(x: usize, to: usize) -> usize {
    x.div_ceil(to) * to
}

/// Resolves (data path, lock path, is_new) (docs/format.md, "Files").
fn resolve_paths(path: &Path, no_sub_dir: bool) -> Result<(PathBuf, PathBuf)> {
    let dir_mode = match std::fs::metadata(path) {
        Ok(m) => m.is_dir(),
        Err(_) => !no_sub_dir,
    };
    if dir_mode {
        Ok((path.join("mdbx.dat"), path.join("mdbx.lck")))
    } else {
        if path.file_name().is_some_and(|n| n == "mdbx.dat") {
            let dir = path.parent().unwrap_or(Path::new("."));
            return Ok((path.to_path_buf(), dir.join("mdbx.lck")));
        }
        let mut lck = path.as_os_str().to_owned();
        lck.push("-lck");
        Ok((path.to_path_buf(), PathBuf::from(lck)))
    }
}

impl EnvInner {
    pub(super) fn open(b: &EnvBuilder, path: &Path) -> Result<(EnvInner, bool)> {
        let (data_path, lck_path) = resolve_paths(path, b.no_sub_dir)?;
        if !b.read_only && !data_path.exists() && data_path.parent() != Some(path.parent().unwrap_or(Path::new(""))) {
            // Directory mode: create the directory.
            if let Some(dir) = data_path.parent() {
                if !dir.exists() {
                    std::fs::create_dir(dir)?;
                    let dmode = (b.mode & 0o066) | 0o700 | ((b.mode & 0o044) >> 2);
                    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(dmode))?;
                }
            }
        }
        let file = OpenOptions::new()
            .read(true)
            .write(!b.read_only)
            .create(!b.read_only)
            .mode(b.mode)
            .custom_flags(libc::O_CLOEXEC)
            .open(&data_path)
            .map_err(|e| with_path(e, &data_path))?;
        let file = Arc::new(file);
        let lck_mode = crate::format::lock::lck_file_mode(b.mode);
        let lo = LockFile::open_as(&lck_path, &file, b.read_only, b.max_readers, lck_mode, b.lock_format)?;
        let lo_exclusive = lo.exclusive;
        let lck = lo.lck;
        let writemap = b.write_map && !b.read_only;
        let envmode = b.durability.envmode() | if writemap { crate::lck::envmode::WRITEMAP } else { 0 };
        if !lo.exclusive && !b.read_only {
            // Processes sharing an environment must agree on its sync mode
            // (docs/lock-format.md, "Sync and mode fields").
            lck.check_envmode(envmode, false)?;
        }
        let in_memory_fs = crate::os::is_in_memory_fs(&file);
        let file_io = FileIo { file: file.clone(), in_memory: in_memory_fs };
        let io: Box<dyn PageIo> = match &b.faults {
            Some(f) => Box::new(FaultyIo { inner: file_io, faults: f.clone() }),
            None => Box::new(file_io),
        };
        let mut size = file::file_size(&file)?;
        let g = &b.geometry;
        let wants_geometry =
            [g.size_lower, g.size_now, g.size_upper, g.growth_step, g.shrink_threshold].iter().any(Option::is_some);
        let apply_geometry = size != 0 && lo.exclusive && !b.read_only && wants_geometry;
        if size == 0 || unfinished_creation(&file, size)? {
            // A new file, or one whose creation was interrupted (a crash
            // before its three metas were all written): (re)initialise it.
            if b.read_only {
                let what = if size == 0 { "empty file" } else { "its creation was interrupted" };
                return Err(Error::Invalid(format!(
                    "{}: {what}; open it with write access to initialise it",
                    data_path.display()
                )));
            }
            if !lo.exclusive {
                return Err(Error::Busy(format!("{}: being created by another process", data_path.display())));
            }
            create_file(&*io, &b.geometry)?;
            size = file::file_size(&file)?;
        }
        let (page_size, metas) = read_metas(&file, size)?;
        let validity: Vec<bool> = (0..3).map(|i| metas[i].1.is_ok()).collect();
        let mut states = [(0u64, false); 3];
        for i in 0..3 {
            if validity[i] {
                states[i] = (metas[i].0.txnid(), metas[i].0.is_steady());
            }
        }
        if states.iter().all(|s| s.0 == 0) {
            // Report the most telling reason.
            return Err(match metas.into_iter().map(|m| m.1).find_map(|r| r.err()) {
                Some(Error::VersionMismatch(s)) => Error::VersionMismatch(format!("{}: {s}", data_path.display())),
                Some(Error::Invalid(s)) => Error::Invalid(format!("{}: {s}", data_path.display())),
                Some(e) => e,
                None => Error::Invalid(format!("{}: no valid meta page", data_path.display())),
            });
        }
        let mut t = troika(states);
        // Crash recovery by the exclusive opener (docs/format.md, "Commit and recovery"): weak
        // metas written before a reboot are purged, every one of them, newest
        // first, until the head is the steady meta (as libmdbx loops): after
        // a power loss no unsynced commit can be trusted.
        while lo.exclusive && t.recent != t.prefer_steady {
            let recent = &metas[t.recent].0;
            if bootid::bootid_matches(&recent.bootid) {
                break;
            }
            if b.read_only {
                return Err(Error::WannaRecovery);
            }
            if !states[t.prefer_steady].1 {
                break;
            }
            let mut purged = recent.clone();
            purged.txnid_a = 0;
            purged.txnid_b = 0;
            purged.sign = SIGN_STEADY;
            io.write_at(&[&purged.body()], (t.recent * page_size + META_OFF) as u64)?;
            io.sync_data()?;
            states[t.recent] = (0, false);
            t = troika(states);
        }
        let mut meta = metas[t.recent].0.clone();
        // Another process may have grown the file and committed after the size
        // was read (a writer grows the file before it writes the meta), or
        // shrunk it after committing a newer meta: look again before calling
        // the file truncated.
        let mut attempts = 0;
        while meta.geo.first_unallocated as u64 * page_size as u64 > size {
            size = file::file_size(&file)?;
            if meta.geo.first_unallocated as u64 * page_size as u64 <= size {
                break;
            }
            attempts += 1;
            if lo.exclusive || attempts > 100 {
                return Err(Error::corrupted(
                    t.recent as u32,
                    "the data file is shorter than the pages its newest meta uses (truncated?)",
                ));
            }
            std::thread::yield_now();
            let (_, again) = read_metas(&file, size)?;
            let st = again.each_ref().map(|m| match &m.1 {
                Ok(()) => (m.0.txnid(), m.0.is_steady()),
                Err(_) => (0, false),
            });
            let t2 = troika(st);
            if st[t2.recent].0 != 0 {
                meta = again[t2.recent].0.clone();
            }
        }
        let limits = Limits::new(page_size);
        let map = Arc::new(map_file(&file, &meta, page_size, size, writemap)?);
        lck.finish_open(envmode, meta.txnid())?;
        lck.set_writemap(writemap);
        let inner = EnvInner {
            data_path,
            lck_path,
            file,
            io,
            map: RwLock::new(map.clone()),
            map_gen: AtomicU64::new(0),
            page_size,
            limits,
            read_only: b.read_only,
            durability: b.durability,
            max_dbs: b.max_dbs,
            exclusive: lo_exclusive,
            file_len: AtomicU64::new(size),
            dbs: crate::txn::DbRegistry::new(),
            writer_state: Mutex::new(crate::txn::WriteState::new(map, 0, b.page_buffer_reserve)),
            dirty_limit: b.dirty_limit.unwrap_or_else(|| crate::txn::spill::default_dirty_limit(page_size)),
            writemap,
            in_memory_fs,
            writethrough_threshold: b.writethrough_threshold,
            slow_readers: b.slow_readers.clone(),
            closed: Default::default(),
            lck,
        };
        if !b.read_only && (b.sync_bytes.is_some() || b.sync_period.is_some()) {
            let pages = b.sync_bytes.map(|n| n.div_ceil(page_size).min(u32::MAX as usize) as u32);
            let period = b.sync_period.map(|d| d.as_nanos().min(u128::from(u64::MAX)) as u64);
            inner.lck.set_autosync(pages, period);
        }
        Ok((inner, apply_geometry))
    }

    /// The three metas as they are now in the map, and the troika.
    pub(crate) fn read_troika(&self, map: &Mmap) -> Result<([Meta; 3], Troika)> {
        let ps = self.page_size;
        let mut raw = [[0u8; META_BYTES]; 3];
        for (i, r) in raw.iter_mut().enumerate() {
            *r = read_meta_page(map, i, ps).ok_or_else(|| Error::corrupted(i as u32, "meta outside the map"))?;
        }
        let k = self.decode_metas(raw)?;
        Ok((k.metas, k.troika))
    }

    /// The three slots' bytes decoded: the metas, their (txnid, steady)
    /// states (0 for one that does not validate) and the troika.
    fn decode_metas(&self, raw: [[u8; META_BYTES]; 3]) -> Result<WriterMetas> {
        let decode = |i: usize| -> Result<Meta> { Meta::read(&raw[i], i as u32) };
        let metas = [decode(0)?, decode(1)?, decode(2)?];
        let states = std::array::from_fn(|i| match metas[i].validate(&raw[i], i as u32, None) {
            Ok(()) => (metas[i].txnid(), metas[i].is_steady()),
            Err(_) => (0, false),
        });
        let troika = troika(states);
        if states[troika.recent].0 == 0 {
            return Err(Error::Invalid(format!("{}: no valid meta page", self.data_path.display())));
        }
        let prints = std::array::from_fn(|i| fingerprint(&raw[i]));
        Ok(WriterMetas { raw, prints, metas, states, troika })
    }

    /// For a write transaction, whose caller holds the writer lock (so no
    /// one rewrites a meta meanwhile): the newest meta, the troika and the
    /// durable steady txnid ([`durable_steady_txnid`]). Each slot's
    /// fingerprint ([`META_FINGERPRINT`]: both txnid copies and the sign) is
    /// compared in the map with what this process last decoded or wrote
    /// there ([`WriterMetas`]); only when one differs (another process
    /// committed, synced, or turned to a meta) are the slots copied, decoded
    /// and validated again. Every meta write of libmdbx and rdbx changes a
    /// txnid or the sign: a commit writes a new txnid, a sync turns the sign
    /// steady, a turn to a meta writes a new txnid (and 0 into the slots it
    /// wipes, which stay invalid whatever else they hold). Decoding the three
    /// metas took 8% of a one-put commit, and copying and comparing all
    /// their bytes 5%.
    /// `known` is that record (`WriteState::metas`).
    pub(crate) fn writer_metas<'k>(
        &self,
        known: &'k mut Option<WriterMetas>,
        map: &Mmap,
    ) -> Result<(&'k Meta, Troika, u64)> {
        let ps = self.page_size;
        let unchanged = known
            .as_ref()
            .is_some_and(|k| (0..3).all(|i| map.u32s_volatile(i * ps, &META_FINGERPRINT) == Some(k.prints[i])));
        if !unchanged {
            let mut raw = [[0u8; META_BYTES]; 3];
            for (i, r) in raw.iter_mut().enumerate() {
                if !map.copy_volatile(i * ps, r) {
                    return Err(Error::corrupted(i as u32, "meta outside the map"));
                }
            }
            if known.as_ref().is_none_or(|k| k.raw != raw) {
                *known = Some(self.decode_metas(raw)?);
            }
        }
        let k = known.as_ref().expect("filled above");
        let t = k.troika;
        Ok((&k.metas[t.recent], t, durable_steady_txnid(&k.metas, t, &self.lck)))
    }

    /// After a commit wrote `meta` (whose bytes are `body`) into slot `i`:
    /// the writer's record of the slots follows, so the next write
    /// transaction finds them unchanged.
    pub(crate) fn note_meta_written(known: &mut Option<WriterMetas>, i: usize, meta: &Meta, body: &[u8; META_LEN]) {
        if let Some(k) = known.as_mut() {
            k.raw[i][META_OFF..].copy_from_slice(body);
            k.prints[i] = fingerprint(&k.raw[i]);
            k.metas[i] = meta.clone();
            k.states[i] = (meta.txnid(), meta.is_steady());
            k.troika = troika(k.states);
        }
    }

    /// Whether `map` covers the pages `meta` uses, inside the file as far
    /// as it is known to reach: what [`EnvInner::map_for`] checks first.
    pub(crate) fn map_covers(&self, meta: &Meta, map: &Mmap) -> bool {
        let need = meta.geo.first_unallocated as usize * self.page_size;
        need as u64 <= self.file_len.load(Ordering::Acquire) && map.len() >= need
    }

    /// The current map, remapped if `needed_pages` are not covered.
    pub(crate) fn map_for(&self, meta: &Meta, slot: usize) -> Result<Arc<Mmap>> {
        let need = meta.geo.first_unallocated as usize * self.page_size;
        // Never touch pages past the end of the file (SIGBUS): check the
        // meta against the file length, re-reading it only when it grew.
        if need as u64 > self.file_len.load(Ordering::Acquire) {
            let size = file::file_size(&self.file)?;
            self.file_len.fetch_max(size, Ordering::AcqRel);
            if (size as usize) < need {
                return Err(Error::corrupted(
                    slot as u32,
                    "the data file is shorter than the pages its meta uses (truncated?)",
                ));
            }
        }
        {
            let m = self.map.read().unwrap_or_else(|e| e.into_inner());
            if m.len() >= need {
                return Ok(m.clone());
            }
        }
        let mut m = self.map.write().unwrap_or_else(|e| e.into_inner());
        if m.len() < need {
            let size = file::file_size(&self.file)?;
            if (size as usize) < need {
                return Err(Error::corrupted(
                    meta.geo.first_unallocated,
                    "data file is shorter than the allocated pages",
                ));
            }
            *m = Arc::new(map_file(&self.file, meta, self.page_size, size, self.writemap)?);
            self.map_gen.fetch_add(1, Ordering::Release);
        }
        Ok(m.clone())
    }

    /// The handle of table `name`, taking a free slot if it has none.
    pub(crate) fn register_db(&self, name: &[u8]) -> Result<crate::Db> {
        self.dbs.register(name, self.max_dbs)
    }

    /// The handle of table `name` if it has a slot.
    pub(crate) fn lookup_db(&self, name: &[u8]) -> Option<crate::Db> {
        self.dbs.lookup(name)
    }

    /// The name of the table of `db`; `Err(BadDbi)` for a handle that is
    /// foreign or stale (its slot was freed since).
    pub(crate) fn db_name(&self, db: crate::Db) -> Result<std::sync::Arc<[u8]>> {
        self.dbs.name_of(db)
    }

    /// Frees slot `dbi`: handles to it become stale.
    pub(crate) fn forget_db(&self, dbi: u32) {
        self.dbs.forget(dbi)
    }

    /// Sets the data file length (growth or shrink by this process).
    pub(crate) fn set_file_len(&self, len: u64) -> Result<()> {
        self.io.set_len(len)?;
        self.file_len.store(len, Ordering::Release);
        Ok(())
    }

    /// The current 224-byte body of meta slot `i`.
    pub(crate) fn meta_body(&self, map: &Mmap, i: usize) -> Result<[u8; META_LEN]> {
        let mut b = [0u8; META_LEN];
        let off = i * self.page_size + META_OFF;
        // From the map (the transaction's: every map covers the meta slots),
        // without a system call (the caller holds the writer lock, so no
        // other process rewrites the slot meanwhile); from the file when the
        // map does not reach it.
        if !map.copy_volatile(off, &mut b) {
            file::pread_exact(&self.file, &mut b, off as u64)?;
        }
        Ok(b)
    }

    /// The body of meta slot `i` before this writer's commit rewrites it
    /// (to put back should that write fail): as the writer last knew it
    /// (`writer_metas` checked it at the transaction's start, and the
    /// writer lock kept it unchanged since), else read (`meta_body`).
    pub(crate) fn previous_meta_body(
        &self,
        known: &Option<WriterMetas>,
        map: &Mmap,
        i: usize,
    ) -> Result<[u8; META_LEN]> {
        match known.as_ref() {
            Some(k) => Ok(k.raw[i][META_OFF..].try_into().expect("a meta body")),
            None => self.meta_body(map, i),
        }
    }

    /// Whether a data sync through `map` (a transaction's) would do nothing
    /// and cannot fail: WRITEMAP on tmpfs or ramfs, the map covering the
    /// whole file (see `sync_data`, which would only count it).
    pub(crate) fn sync_is_free(&self, map: &Mmap) -> bool {
        self.writemap && self.in_memory_fs && map.len() as u64 >= self.file_len.load(Ordering::Acquire)
    }

    /// WRITEMAP: writes `body` into meta slot `i` in place through the map,
    /// as libmdbx writes its metas in that mode (no system call; `txnid_b`
    /// last, see [`Mmap::write_ordered`]). False when the map cannot take it
    /// (no WRITEMAP, or the slot outside the map): then nothing is written.
    /// The caller holds the writer lock and never writes the newest slot
    /// this way (readers of other processes may be taking it).
    /// `map` is the transaction's (every map covers the meta slots).
    // Inline: a one-put commit runs 200 more instructions without it
    // (docs/design.md, "Inlining on the commit path").
    #[inline]
    pub(crate) fn write_meta_in_map(&self, map: &Mmap, i: usize, body: &[u8; META_LEN]) -> bool {
        self.writemap && map.write_ordered(i * self.page_size + META_OFF, body, crate::format::meta::TXNID_B_AT)
    }

    /// The newest meta.
    pub(crate) fn latest_meta(&self) -> Result<Meta> {
        let map = self.map.read().unwrap_or_else(|e| e.into_inner()).clone();
        let (metas, t) = self.read_troika(&map)?;
        Ok(metas[t.recent].clone())
    }

    /// Checks a key against the table's limits.
    // Inline: a one-put commit runs 20 more instructions without it
    // (docs/design.md, "Inlining on the commit path").
    #[inline(always)]
    pub(crate) fn check_key(&self, flags: DbFlags, key: &[u8]) -> Result<()> {
        if flags.contains(DbFlags::INTEGER_KEY) {
            if key.len() != 4 && key.len() != 8 {
                return Err(Error::BadValSize(format!("INTEGER_KEY keys are 4 or 8 bytes, got {}", key.len())));
            }
        } else if key.len() > self.limits.max_key(flags) {
            return Err(Error::BadValSize(format!(
                "key of {} bytes exceeds the maximum of {} for page size {}",
                key.len(),
                self.limits.max_key(flags),
                self.page_size
            )));
        }
        Ok(())
    }
}

fn with_path(e: std::io::Error, p: &Path) -> Error {
    Error::Io(std::io::Error::new(e.kind(), format!("{}: {e}", p.display())))
}

/// Map length: the geometry's upper bound (an address-space reservation), at least the file.
/// The data file's map: writable with WRITEMAP.
/// Its meta pages are never lent out as slices (`Mmap::shield_prefix`).
fn new_map(file: &File, len: usize, writable: bool, page_size: usize) -> std::io::Result<Mmap> {
    let map = if writable { Mmap::map_writable(file, len, page_size)? } else { Mmap::map(file, len)? };
    Ok(map.shield_prefix(crate::format::NUM_METAS as usize * page_size))
}

/// Maps the data file: the whole upper bound when the address space allows
/// it, else the file as it is (`ulimit -v`, containers, valgrind), in which
/// case every growth of the file remaps it (`EnvInner::map_for`).
fn map_file(file: &File, meta: &Meta, ps: usize, file_size: u64, writable: bool) -> std::io::Result<Mmap> {
    new_map(file, map_len_for(meta, ps, file_size), writable, ps)
        .or_else(|_| new_map(file, round_up(file_size as usize, os_page()).max(os_page()), writable, ps))
}

fn map_len_for(meta: &Meta, ps: usize, file_size: u64) -> usize {
    let upper = (meta.geo.upper as usize).saturating_mul(ps);
    round_up(upper.max(file_size as usize).max(meta.geo.now as usize * ps), os_page())
}

/// Reads and validates the three metas, finding the page size.
#[allow(clippy::type_complexity)]
fn read_metas(file: &File, size: u64) -> Result<(usize, [(Meta, Result<()>); 3])> {
    if size < (NUM_METAS as u64) * MIN_PAGESIZE as u64 {
        return Err(Error::Invalid(format!("file of {size} bytes is too short for an MDBX database")));
    }
    let mut head = vec![0u8; MIN_PAGESIZE];
    file::pread_exact(file, &mut head, 0)?;
    let first = Meta::read(&head, 0)?;
    let mut candidates = vec![first.page_size()];
    let mut ps = MIN_PAGESIZE;
    while ps <= MAX_PAGESIZE {
        if ps != first.page_size() {
            candidates.push(ps);
        }
        ps *= 2;
    }
    let mut fallback: Option<(usize, [(Meta, Result<()>); 3])> = None;
    for ps in candidates {
        if !ps.is_power_of_two() || !(MIN_PAGESIZE..=MAX_PAGESIZE).contains(&ps) || (ps as u64) * 3 > size {
            continue;
        }
        let mut out: Vec<(Meta, Result<()>)> = Vec::with_capacity(3);
        for i in 0..3u32 {
            let mut buf = vec![0u8; META_OFF + META_LEN];
            file::pread_exact(file, &mut buf, i as u64 * ps as u64)?;
            let m = Meta::read(&buf, i)?;
            let mut v = m.validate(&buf, i, None);
            if v.is_ok() && m.page_size() != ps {
                v = Err(Error::corrupted(i, "meta page size differs"));
            }
            out.push((m, v));
        }
        let ok = out.iter().any(|m| m.1.is_ok());
        let arr: [(Meta, Result<()>); 3] = out.try_into().map_err(|_| Error::Problem("metas".into()))?;
        if ok {
            return Ok((ps, arr));
        }
        if fallback.is_none() {
            fallback = Some((ps, arr));
        }
    }
    match fallback {
        Some(f) => Ok(f),
        None => Err(Error::Invalid("no meta page with a valid page size".into())),
    }
}

/// The txnid of the newest commit a crash cannot take away: the preferred
/// steady meta, unless its meta page was written without a sync (NoMetaSync:
/// the lock file's `meta_sync_txnid` says so), in which case the next older
/// steady meta, which the data sync of that commit made durable. Pages this
/// snapshot still uses must not be reused (the GC detent).
fn durable_steady_txnid(metas: &[Meta; 3], t: Troika, lck: &LockFile) -> u64 {
    let s = metas[t.prefer_steady].txnid();
    if !metas[t.prefer_steady].is_steady() || lck.meta_is_synced(s) {
        return s;
    }
    metas.iter().filter(|m| m.is_steady() && m.txnid() < s).map(|m| m.txnid()).max().unwrap_or(0)
}

/// Whether `file` is what an interrupted creation leaves (see
/// [`crate::format::meta::unfinished_creation`]): its meta slots are blank or
/// initial, and nothing but zeros follows them. Reads at most 64 MiB of
/// non-hole data past the slots; a longer file is not taken for one.
fn unfinished_creation(file: &File, size: u64) -> Result<bool> {
    let mut head = vec![0u8; size.min(3 * MAX_PAGESIZE as u64) as usize];
    file::pread_exact(file, &mut head, 0)?;
    let Some(ps) = crate::format::meta::unfinished_creation(&head) else {
        return Ok(false);
    };
    let mut off = 3 * ps as u64;
    let mut budget: u64 = 64 << 20;
    let mut buf = vec![0u8; 64 << 10];
    while off < size {
        let Some(data) = file::next_data(file, off)? else {
            return Ok(true);
        };
        if data >= size {
            return Ok(true);
        }
        let n = (size - data).min(buf.len() as u64) as usize;
        if budget < n as u64 {
            return Ok(false);
        }
        budget -= n as u64;
        file::pread_exact(file, &mut buf[..n], data)?;
        if buf[..n].iter().any(|&b| b != 0) {
            return Ok(false);
        }
        off = data + n as u64;
    }
    Ok(true)
}

/// Writes the three initial metas of a new database (docs/format.md, "Creating a file"), in one
/// write so that a crash leaves none or all of them; then sets the size.
fn create_file(io: &dyn PageIo, g: &Geometry) -> Result<()> {
    let ps = g.page_size.unwrap_or_else(crate::os::page_size);
    if !ps.is_power_of_two() || !(MIN_PAGESIZE..=MAX_PAGESIZE).contains(&ps) {
        return Err(Error::InvalidArgument(format!("page size {ps} is not a power of two in 256..=65536")));
    }
    let unit = ps.max(os_page());
    let max_bytes = (MAX_PAGENO as usize + 1) * ps;
    let lower = round_up(g.size_lower.unwrap_or(3 * ps).max(3 * ps).max(768), unit);
    let upper = round_up(g.size_upper.unwrap_or(64 << 30).min(max_bytes), unit).min(max_bytes / unit * unit);
    if lower > max_bytes / unit * unit {
        return Err(Error::InvalidArgument(format!(
            "geometry lower {lower} exceeds the largest database of {ps}-byte pages ({} bytes)",
            max_bytes / unit * unit
        )));
    }
    if lower > upper {
        return Err(Error::InvalidArgument(format!("geometry lower {lower} exceeds upper {upper}")));
    }
    let now = round_up(g.size_now.unwrap_or(lower.max(65536)), unit).clamp(lower, upper);
    let growth = match g.growth_step {
        Some(x) => round_up(x, unit),
        None => round_up((1 << 20).min(upper - lower).max(unit), unit),
    };
    let shrink = match g.shrink_threshold {
        Some(x) => round_up(x, unit),
        None => growth * 2,
    };
    let mut gc = Tree::empty(DbFlags::INTEGER_KEY.bits() as u16);
    gc.dupfix_size = ps as u32;
    let dxbid = bootid::random_dxbid();
    let bootid = bootid::boot_id();
    let mut pages = Vec::with_capacity(3);
    for i in 0..3u32 {
        let txnid = 1 + i as u64;
        let m = Meta {
            magic: DATA_MAGIC,
            txnid_a: txnid,
            geo: MetaGeo {
                grow_pv: pages2pv((growth / ps) as u32),
                shrink_pv: pages2pv((shrink / ps) as u32),
                lower: (lower / ps) as u32,
                upper: (upper / ps) as u32,
                now: (now / ps) as u32,
                first_unallocated: NUM_METAS,
            },
            gc,
            main: Tree::empty(0),
            canary: [0; 4],
            sign: SIGN_STEADY,
            txnid_b: txnid,
            pages_retired: 0,
            bootid,
            dxbid,
        };
        pages.push(m.page(i, ps));
    }
    io.write_at(&[&pages[0], &pages[1], &pages[2]], 0)?;
    io.set_len(now as u64)?;
    io.sync_data()?;
    Ok(())
}

impl EnvInner {
    pub(super) fn sync(&self) -> Result<()> {
        if self.read_only {
            return Ok(());
        }
        let _g = self.lck.lock_writer()?;
        self.sync_data()?;
        let map = self.map.read().unwrap_or_else(|e| e.into_inner()).clone();
        let (metas, t) = self.read_troika(&map)?;
        let m = &metas[t.recent];
        if m.is_steady() && !self.lck.meta_is_synced(m.txnid()) {
            // NoMetaSync: the sync above flushed the meta written lazily.
            self.lck.after_commit(m.txnid(), true, true);
        }
        if !m.is_steady() {
            let mut s = m.clone();
            s.sign = SIGN_STEADY;
            self.write_at(&[&s.body()], (t.recent * self.page_size + META_OFF) as u64)?;
            self.sync_data()?;
            self.lck.after_commit(s.txnid(), true, true);
        }
        Ok(())
    }

    /// One write of the data file, counted in the page-operation counters.
    pub(crate) fn write_at(&self, bufs: &[&[u8]], off: u64) -> std::io::Result<()> {
        self.lck.count_call(crate::lck::PageCall::Write);
        self.io.write_at(bufs, off)
    }

    /// One write-through write (durable when it returns; no separate sync).
    pub(crate) fn write_at_durable(&self, bufs: &[&[u8]], off: u64) -> std::io::Result<()> {
        self.lck.count_call(crate::lck::PageCall::Write);
        self.io.write_at_durable(bufs, off)
    }

    /// A data sync of the data file, counted in the page-operation counters.
    /// With WRITEMAP an `msync` of the mapped file (which also flushes pages
    /// written with `pwrite`), as libmdbx syncs in that mode.
    pub(crate) fn sync_data(&self) -> std::io::Result<()> {
        if self.writemap {
            self.lck.count_call(crate::lck::PageCall::Msync);
            let map = self.map.read().unwrap_or_else(|e| e.into_inner()).clone();
            let len = self.file_len.load(Ordering::Acquire) as usize;
            // On tmpfs or ramfs an msync only walks the mappings (the
            // file's sync does nothing there): skipped, as `FileIo` skips
            // `fdatasync`.
            if !self.in_memory_fs {
                map.sync(len)?;
            }
            if map.len() >= len {
                return Ok(());
            }
            // A short map (see `open`) does not cover all of the file.
        }
        self.lck.count_call(crate::lck::PageCall::Fsync);
        self.io.sync_data()
    }
}

impl EnvInner {
    /// What closing does before the files are released: in the lazy
    /// durability modes, a sync that leaves a steady, flushed meta behind, as
    /// libmdbx does when it closes (NoMetaSync included: its last meta was
    /// written without a flush). Runs once (`Env::close` or drop).
    pub(super) fn close_sync(&self) -> Result<()> {
        if self.closed.swap(true, Ordering::AcqRel) || self.read_only || self.durability == Durability::SyncDurable {
            return Ok(());
        }
        self.sync()
    }
}

impl Drop for EnvInner {
    fn drop(&mut self) {
        // An error here has nowhere to go: `Env::close` reports it.
        let _ = self.close_sync();
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::FileExt;

    use crate::format::meta::{META_OFF, SIGN_AT, SIGN_STEADY, SIGN_WEAK};
    use crate::{Db, Durability, Env, PutFlags};

    /// A writer keeps its map between write transactions: they take no
    /// count of the environment's map (each took one and gave it back, and
    /// locked its slot: four locked instructions a commit). Once the file
    /// grew past that map, the writer maps it again (noting that it does not
    /// know which replacement of the environment's map it holds), and the
    /// next write transaction takes the environment's map, the same one.
    #[test]
    fn the_writer_keeps_its_map_until_a_remap() {
        let d = tempfile::tempdir().unwrap();
        let geometry = |upper: usize| crate::Geometry {
            size_upper: Some(upper),
            growth_step: Some(1 << 20),
            ..Default::default()
        };
        let env = Env::builder().durability(Durability::SafeNoSync).geometry(geometry(2 << 20)).open(d.path()).unwrap();
        let put = |from: u32, n: u32| {
            let mut txn = env.begin_rw_txn().unwrap();
            for i in from..from + n {
                txn.put(Db::MAIN, &i.to_be_bytes(), &[7u8; 200], PutFlags::empty()).unwrap();
            }
            txn.commit().unwrap();
        };
        let current = || env.inner.map.read().unwrap().clone();
        let kept = || env.inner.writer_state.lock().unwrap().map.clone();
        let steady = |what: &str| {
            for round in 0..5 {
                put(round * 10, 10);
                let between = std::sync::Arc::strong_count(&env.inner.map.read().unwrap());
                let txn = env.begin_rw_txn().unwrap();
                let during = std::sync::Arc::strong_count(&env.inner.map.read().unwrap());
                drop(txn);
                assert_eq!(during, between, "{what}: the write transaction took a count of the map");
            }
            assert!(std::sync::Arc::ptr_eq(&kept(), &current()), "{what}: not the environment's map");
        };
        put(0, 10);
        steady("first map");
        let first = current().len();
        env.set_geometry(&geometry(64 << 20)).unwrap();
        for round in 0..4 {
            put(100_000 + round * 5_000, 5_000);
        }
        assert!(current().len() > first, "the file did not grow past the first map");
        steady("after the remap");
        let txn = env.begin_ro_txn().unwrap();
        assert_eq!(txn.get(Db::MAIN, &9u32.to_be_bytes()).unwrap(), Some(&[7u8; 200][..]));
        assert_eq!(txn.get(Db::MAIN, &119_999u32.to_be_bytes()).unwrap(), Some(&[7u8; 200][..]));
    }

    /// The writer's record of the meta slots notices a slot that anyone else
    /// rewrote: the sign alone (a sync by another process) and a new txnid
    /// (a commit by another process). With a stale record the writer would
    /// build on a meta that is no longer the newest.
    #[test]
    fn writer_notices_metas_rewritten_by_others() {
        let d = tempfile::tempdir().unwrap();
        let env = Env::builder().durability(Durability::SafeNoSync).open(d.path()).unwrap();
        let mut txn = env.begin_rw_txn().unwrap();
        txn.put(Db::MAIN, b"k", b"v", PutFlags::empty()).unwrap();
        txn.commit().unwrap();
        let inner = &env.inner;
        let ps = inner.page_size;
        let map = inner.map.read().unwrap().clone();
        let mut st = inner.writer_state.lock().unwrap();
        let (m, t) = inner.writer_metas(&mut st.metas, &map).map(|(m, t, _)| (m.clone(), t)).unwrap();

        // The sign of the newest meta turned (whichever way: only the
        // detection is tested here).
        let sign = if m.is_steady() { SIGN_WEAK } else { SIGN_STEADY };
        inner.file.write_all_at(&sign.to_le_bytes(), (t.recent * ps + META_OFF + SIGN_AT) as u64).unwrap();
        let (m2, t2) = inner.writer_metas(&mut st.metas, &map).map(|(m, t, _)| (m.clone(), t)).unwrap();
        assert_eq!((m2.txnid(), m2.sign, t2.recent), (m.txnid(), sign, t.recent));

        // A newer commit in the tail slot.
        let mut newer = m2.clone();
        newer.txnid_a = m.txnid() + 1;
        newer.txnid_b = m.txnid() + 1;
        inner.file.write_all_at(&newer.body(), (t.tail * ps + META_OFF) as u64).unwrap();
        let (m3, t3) = inner.writer_metas(&mut st.metas, &map).map(|(m, t, _)| (m.clone(), t)).unwrap();
        drop(st);
        assert_eq!((m3.txnid(), t3.recent), (m.txnid() + 1, t.tail));
        // And a write transaction builds on it.
        let txn = env.begin_rw_txn().unwrap();
        assert_eq!(txn.id(), m.txnid() + 2);
    }
}
