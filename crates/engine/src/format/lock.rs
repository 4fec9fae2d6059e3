//! The layout of the libmdbx lock file ("lck"), lock formats v7 (libmdbx
//! 0.14.2+) and v6 (libmdbx 0.13.x) on Linux x86_64 glibc
//! (docs/lock-format.md): where every header field and reader-slot field
//! sits, the magic and signature that identify a generation, and the values
//! stored in those fields. Pure, like the rest of `format`: no I/O, no
//! `unsafe`, no mapping; `crate::lck` maps the file and runs the protocol
//! over these offsets.
//!
//! Both generations differ only in where some header fields sit:
//! [`LockLayout`] holds those offsets, computed from
//! `size_of::<pthread_mutex_t>()` (40 on x86_64 glibc) with libmdbx's
//! alignment rules (`pgops`, `wrt_lock`, `rdt_lock` and `rdt` start on 64-byte
//! boundaries). The values below are asserted at compile time on x86_64
//! glibc.
//!
//! # Header (v7: 576 bytes, v6: 512 bytes)
//!
//! | v6 off | v7 off | size | field | notes |
//! |---|---|---|---|---|
//! | 0 | 0 | 8 | `magic_and_version` | `MAGIC << 8 \| version`: v7 `0x59659DBDEF4C1107`, v6 `…06` |
//! | 8 | 8 | 4 | `os_and_format` | layout signature: v7 `0x3635569F`, v6 `0x3635461F` |
//! | 12 | 12 | 4 | `envmode` | mode flags of the environment, see [`envmode`] |
//! | 16 | 16 | 4 | `autosync_threshold` | pages; 0 = off |
//! | 20 | 20 | 4 | `meta_sync_txnid` | low 32 bits of the last durable meta txnid (minus a lazy bias) |
//! | 24 | 24 | 8 | `autosync_period` | monotonic ns; 0 = off |
//! | 32 | 32 | 8 | `bait_uniqueness` | libmdbx scratch |
//! | 40 | 40 | 8 | `mlcnt[2]` | mlock counters |
//! | 48 | 48 | 16 | padding | |
//! | 64 | 64 | 240 / 248 | `pgops` | 12 u64 counters at 64..160 (`wops` at 120 is set to 1 on init), then GC profiling |
//! | 304 | 312 | 16 / 8 | padding | |
//! | 320 | 320 | 40 | `wrt_lock` | writer mutex (`__kind` byte at 336 = `0xB2`) |
//! | 360 | 360 | 8 | `cached_oldest_txnid` | monotonic |
//! | — | 368 | 8 | `cached_oldest_retired` | `pages_retired` of that snapshot (v7 only) |
//! | 368 | 376 | 8 | `eoos_timestamp` | 0 = synced |
//! | 376 | 384 | 8 | `unsynced_pages` | |
//! | 384 | 392 | 8 | `readers_check_timestamp` | monotonic ns of the last dead-reader sweep |
//! | 392 | 400 | 4 | `discarded_tail` | |
//! | 396 | 404 | 4 | `readahead_anchor` | |
//! | 400 | 408 | 16 | `mincore_cache.begin[4]` | |
//! | 416 | 424 | 32 | `mincore_cache.mask[4]` | |
//! | — | 456 | 56 | padding | v6 ends at 448 |
//! | 448 | 512 | 40 | `rdt_lock` | reader-table mutex (`__kind` byte at +16 = `0xB2`) |
//! | 488 | 552 | 4 | `rdt_length` | slots ever used (high-water mark) |
//! | 492 | 556 | 4 | `rdt_refresh_flag` | 1 = changed, [`NOTHING_CHANGED`] = unchanged since the last scan |
//! | 496 | 560 | 16 | padding | |
//! | 512 | 576 | 32×N | `rdt[]` | reader slots |
//!
//! # Reader slot (32 bytes, both generations)
//!
//! | off | size | field | meaning |
//! |---|---|---|---|
//! | 0 | 8 | `txnid` | snapshot txnid; `>=` [`TXNID_INVALID_FROM`] = none |
//! | 8 | 8 | `tid` | `pthread_self` of the owner thread ([`TID_TXN_PARKED`], [`TID_TXN_OUSTED`]) |
//! | 16 | 4 | `pid` | owner pid; 0 = free |
//! | 20 | 4 | `snapshot_pages_used` | `first_unallocated` of the snapshot |
//! | 24 | 8 | `snapshot_pages_retired` | `pages_retired` of the snapshot |
//!
//! # Size
//!
//! A lock file made for `max_readers` readers is `header + 32 × max_readers`
//! rounded up to the OS page ([`lck_size_for`]); a joiner derives the
//! capacity from the size it finds ([`max_readers_for`]).

use super::{MAGIC, MAX_TXNID, MIN_PAGESIZE, NUM_METAS};

const fn align_up(x: usize, a: usize) -> usize {
    x.div_ceil(a) * a
}

/// Size of glibc's `pthread_mutex_t` (40 on x86_64).
pub const MUTEX_SIZE: usize = std::mem::size_of::<libc::pthread_mutex_t>();
const CACHELINE: usize = 64;

/// A generation of the libmdbx lock-file layout (docs/lock-format.md).
///
/// The data file is the same for every generation (data format v3); only the
/// lock file that processes sharing a database use to coordinate differs, and
/// every process that has the database open at the same time must use the
/// same one. rdbx joins whichever of these it finds in use; this choice only
/// decides what it creates when it is the first to open a database
/// ([`crate::EnvBuilder::lock_format`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum LockFormat {
    /// Lock format v6, of libmdbx 0.13.x (e.g. the libmdbx vendored by reth).
    V6,
    /// Lock format v7, of libmdbx 0.14.2 and later (rdbx's default).
    #[default]
    V7,
}

impl LockFormat {
    /// The version number stored in the low byte of the lock file's magic.
    pub fn version(self) -> u8 {
        match self {
            LockFormat::V6 => 6,
            LockFormat::V7 => 7,
        }
    }

    /// The format with version number `v`, if rdbx supports it.
    pub fn from_version(v: u64) -> Option<LockFormat> {
        match v {
            6 => Some(LockFormat::V6),
            7 => Some(LockFormat::V7),
            _ => None,
        }
    }

    /// The libmdbx release line that uses this format.
    pub fn libmdbx_line(self) -> &'static str {
        match self {
            LockFormat::V6 => "libmdbx 0.13",
            LockFormat::V7 => "libmdbx 0.14.2+",
        }
    }

    /// The byte layout of this generation.
    pub(crate) fn layout(self) -> &'static LockLayout {
        match self {
            LockFormat::V6 => &LAYOUT_V6,
            LockFormat::V7 => &LAYOUT_V7,
        }
    }
}

impl std::fmt::Display for LockFormat {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "v{} ({})", self.version(), self.libmdbx_line())
    }
}

impl std::str::FromStr for LockFormat {
    type Err = String;
    /// `6`, `v6`, `7` or `v7`.
    fn from_str(s: &str) -> std::result::Result<LockFormat, String> {
        let t = s.trim();
        let t = t.strip_prefix(['v', 'V']).unwrap_or(t);
        t.parse::<u64>()
            .ok()
            .and_then(LockFormat::from_version)
            .ok_or_else(|| format!("unknown lock format {s:?} (expected 6 for libmdbx 0.13 or 7 for libmdbx 0.14)"))
    }
}

// Header fields at the same place in every generation.

/// `magic_and_version` (u64).
pub const OFF_MAGIC: usize = 0;
/// `os_and_format` (u32): the layout signature.
pub const OFF_FORMAT: usize = 8;
/// `envmode` (u32), see [`envmode`].
pub const OFF_ENVMODE: usize = 12;
/// `autosync_threshold` (u32, pages).
pub const OFF_AUTOSYNC_THRESHOLD: usize = 16;
/// `meta_sync_txnid` (u32).
pub const OFF_META_SYNC_TXNID: usize = 20;
/// `autosync_period` (u64, monotonic ns).
pub const OFF_AUTOSYNC_PERIOD: usize = 24;
/// Start of `pgops`: its first [`PGOPS_COUNTERS`] fields are u64 counters.
pub const OFF_PGOPS: usize = 64;
/// `pgops.wops` (u64), set to 1 when the lock file is initialised.
pub const OFF_PGOPS_WOPS: usize = OFF_PGOPS + 56;
/// Counters at the start of the `pgops` block, in the order newly, cow,
/// clone, split, merge, spill, unspill, wops, msync, fsync, prefault,
/// mincore (`crate::PageOps`).
pub const PGOPS_COUNTERS: usize = 12;
/// libmdbx's `gc_prof_stat_t` (inside `pgops`): two u64, four u32 and a
/// `{u64, u64, u32}` struct padded to 24.
const GC_PROF_STAT_SIZE: usize = 56;

/// Size of one reader slot (the same in v6 and v7).
pub const SLOT_SIZE: usize = 32;
/// Slot field `txnid` (u64).
pub const SLOT_TXNID: usize = 0;
/// Slot field `tid` (u64).
pub const SLOT_TID: usize = 8;
/// Slot field `pid` (u32).
pub const SLOT_PID: usize = 16;
/// Slot field `snapshot_pages_used` (u32).
pub const SLOT_PAGES_USED: usize = 20;
/// Slot field `snapshot_pages_retired` (u64).
pub const SLOT_PAGES_RETIRED: usize = 24;

/// `MDBX_LCK_SIGN` for POSIX pthread-mutex builds.
const LCK_SIGN: u32 = 0x8017;

/// Offsets of the fields that moved between lock-format generations
/// (docs/lock-format.md), computed from `size_of::<pthread_mutex_t>()` with
/// libmdbx's alignment rules (`pgops`, `wrt_lock`, `rdt_lock` and `rdt` start
/// on 64-byte boundaries). Selected once when the lock file is opened.
#[derive(Debug, PartialEq, Eq)]
pub struct LockLayout {
    /// The generation.
    pub format: LockFormat,
    /// First 8 bytes of the lock file: `MAGIC << 8 | version`.
    pub magic: u64,
    /// The `os_and_format` fingerprint at offset 8.
    pub signature: u32,
    /// Size of the `pgops` block.
    pub pgops_size: usize,
    /// `wrt_lock`: the writer mutex.
    pub wrt_lock: usize,
    /// `cached_oldest_txnid`.
    pub cached_oldest: usize,
    /// `cached_oldest_retired`: v7 only.
    pub cached_oldest_retired: Option<usize>,
    /// `eoos_timestamp`.
    pub eoos_timestamp: usize,
    /// `unsynced_pages`.
    pub unsynced_pages: usize,
    /// `readers_check_timestamp`.
    pub readers_check_timestamp: usize,
    /// `discarded_tail`.
    pub discarded_tail: usize,
    /// `readahead_anchor`.
    pub readahead_anchor: usize,
    /// `mincore_cache.begin`.
    pub mincore_begin: usize,
    /// `mincore_cache.mask`.
    pub mincore_mask: usize,
    /// `rdt_lock`: the reader-table mutex.
    pub rdt_lock: usize,
    /// `rdt_length`.
    pub rdt_length: usize,
    /// `rdt_refresh_flag`.
    pub rdt_refresh_flag: usize,
    /// Start of the reader table = size of the header.
    pub rdt: usize,
}

impl LockLayout {
    const fn new(format: LockFormat) -> LockLayout {
        let v7 = matches!(format, LockFormat::V7);
        let version: u64 = if v7 { 7 } else { 6 };
        // `pgops`: 12 counters, `incoherence` + `reserved` (u32 each), then
        // `gc_prof` = two gc_prof_stat_t and 5 u32 (v6) or 7 u32 (v7: plus
        // `max_reader_lag`, `max_retained_pages`), padded to 8.
        let gc_prof_u32s = if v7 { 7 } else { 5 };
        let pgops_size = 8 * PGOPS_COUNTERS + 8 + align_up(2 * GC_PROF_STAT_SIZE + 4 * gc_prof_u32s, 8);
        let wrt_lock = align_up(OFF_PGOPS + pgops_size, CACHELINE);
        let cached_oldest = align_up(wrt_lock + MUTEX_SIZE, 8);
        let (cached_oldest_retired, eoos_timestamp) =
            if v7 { (Some(cached_oldest + 8), cached_oldest + 16) } else { (None, cached_oldest + 8) };
        let unsynced_pages = eoos_timestamp + 8;
        let readers_check_timestamp = unsynced_pages + 8;
        let discarded_tail = readers_check_timestamp + 8;
        let readahead_anchor = discarded_tail + 4;
        let mincore_begin = readahead_anchor + 4;
        let mincore_mask = align_up(mincore_begin + 16, 8);
        let rdt_lock = align_up(mincore_mask + 32, CACHELINE);
        let rdt_length = align_up(rdt_lock + MUTEX_SIZE, 4);
        let rdt_refresh_flag = rdt_length + 4;
        let rdt = align_up(rdt_refresh_flag + 4, CACHELINE);
        let signature = LCK_SIGN
            .wrapping_mul(27733)
            .wrapping_add((SLOT_SIZE as u32).wrapping_mul(13))
            .wrapping_add((SLOT_PAGES_USED as u32).wrapping_mul(251))
            .wrapping_add((cached_oldest as u32).wrapping_mul(83))
            .wrapping_add((rdt_length as u32).wrapping_mul(37))
            .wrapping_add((rdt as u32).wrapping_mul(29));
        LockLayout {
            format,
            magic: (MAGIC << 8) | version,
            signature,
            pgops_size,
            wrt_lock,
            cached_oldest,
            cached_oldest_retired,
            eoos_timestamp,
            unsynced_pages,
            readers_check_timestamp,
            discarded_tail,
            readahead_anchor,
            mincore_begin,
            mincore_mask,
            rdt_lock,
            rdt_length,
            rdt_refresh_flag,
            rdt,
        }
    }

    /// Size of the lock-file header (= offset of the reader table).
    pub const fn header_size(&self) -> usize {
        self.rdt
    }

    /// Offset of field `field` (a `SLOT_*` offset) of reader slot `i`.
    pub const fn slot_field(&self, i: u32, field: usize) -> usize {
        self.rdt + i as usize * SLOT_SIZE + field
    }

    /// The layout whose magic is `magic`, if rdbx supports it.
    pub fn for_magic(magic: u64) -> Option<&'static LockLayout> {
        if !is_mdbx_magic(magic) {
            return None;
        }
        LockFormat::from_version(magic & 0xFF).map(LockFormat::layout)
    }
}

/// Whether the first 8 bytes of a lock file carry the MDBX magic (whatever
/// the version in the low byte).
pub const fn is_mdbx_magic(magic: u64) -> bool {
    magic >> 8 == MAGIC
}

/// Lock format v6 (libmdbx 0.13.x).
pub const LAYOUT_V6: LockLayout = LockLayout::new(LockFormat::V6);
/// Lock format v7 (libmdbx 0.14.2+).
pub const LAYOUT_V7: LockLayout = LockLayout::new(LockFormat::V7);
/// The smallest header of any supported layout (the seize's "too short" test
/// runs before the version is known).
pub const MIN_HEADER_SIZE: usize = LAYOUT_V6.rdt;
/// The smallest data file the seize accepts: three metas of the smallest
/// page size.
pub const MIN_DXB_SIZE: u64 = NUM_METAS as u64 * MIN_PAGESIZE as u64;

#[cfg(all(target_arch = "x86_64", target_env = "gnu"))]
const _: () = {
    assert!(MUTEX_SIZE == 40);
    assert!(OFF_PGOPS_WOPS == 120);
    assert!(OFF_PGOPS + 8 * PGOPS_COUNTERS == 160);
    // v7 (libmdbx 0.14.2+), offsets of `struct lck_t` on x86_64 glibc.
    let l = &LAYOUT_V7;
    assert!(l.magic == 0x59659DBDEF4C1107);
    assert!(l.pgops_size == 248);
    assert!(l.wrt_lock == 320);
    assert!(l.cached_oldest == 360);
    assert!(matches!(l.cached_oldest_retired, Some(368)));
    assert!(l.eoos_timestamp == 376);
    assert!(l.unsynced_pages == 384);
    assert!(l.readers_check_timestamp == 392);
    assert!(l.discarded_tail == 400);
    assert!(l.readahead_anchor == 404);
    assert!(l.mincore_begin == 408);
    assert!(l.mincore_mask == 424);
    assert!(l.rdt_lock == 512);
    assert!(l.rdt_length == 552);
    assert!(l.rdt_refresh_flag == 556);
    assert!(l.rdt == 576);
    assert!(l.signature == 0x3635569F);
    // v6 (libmdbx 0.13.x): `pgops` 8 bytes shorter (no `max_reader_lag`,
    // `max_retained_pages`; `wrt_lock` stays at 320 by alignment), no
    // `cached_oldest_retired`, so everything after `cached_oldest` moves up
    // 8 bytes and `rdt_lock` a whole cache line.
    let l = &LAYOUT_V6;
    assert!(l.magic == 0x59659DBDEF4C1106);
    assert!(l.pgops_size == 240);
    assert!(l.wrt_lock == 320);
    assert!(l.cached_oldest == 360);
    assert!(l.cached_oldest_retired.is_none());
    assert!(l.eoos_timestamp == 368);
    assert!(l.unsynced_pages == 376);
    assert!(l.readers_check_timestamp == 384);
    assert!(l.discarded_tail == 392);
    assert!(l.readahead_anchor == 396);
    assert!(l.mincore_begin == 400);
    assert!(l.mincore_mask == 416);
    assert!(l.rdt_lock == 448);
    assert!(l.rdt_length == 488);
    assert!(l.rdt_refresh_flag == 492);
    assert!(l.rdt == 512);
    assert!(l.signature == 0x3635461F);
    assert!(MIN_DXB_SIZE == 768);
};

/// Default reader-table capacity request (libmdbx's default).
pub const DEFAULT_READERS: u32 = 61;
/// Upper bound of the reader-table capacity.
pub const READERS_LIMIT: u32 = 32767;
/// Canonical "no snapshot" txnid of a slot.
pub const TXNID_NONE: u64 = u64::MAX;
/// Slot `tid` of a parked read transaction (libmdbx `MDBX_TID_TXN_PARKED`).
pub const TID_TXN_PARKED: u64 = u64::MAX;
/// Slot `tid` of a parked read transaction a writer ousted (libmdbx
/// `MDBX_TID_TXN_OUSTED`).
pub const TID_TXN_OUSTED: u64 = u64::MAX - 1;
/// Any slot txnid at or above this value means "no snapshot" (every usable
/// txnid is at most [`MAX_TXNID`]).
pub const TXNID_INVALID_FROM: u64 = 0xFFFF_FFFF_0000_0000;
const _: () = assert!(MAX_TXNID < TXNID_INVALID_FROM);
/// `rdt_refresh_flag` value meaning "nothing changed since the last scan".
pub const NOTHING_CHANGED: u32 = u32::from_be_bytes(*b"None");
/// Bias subtracted from `meta_sync_txnid` for "written but not synced" metas
/// in non-writemap lazy mode (docs/lock-format.md).
pub const LAZY_BIAS_FD: u32 = 0x5555_5555u32.wrapping_add(0x1FFF_FFFF);
/// The same for a process writing with WRITEMAP (syncing with `msync`): a
/// peer in the other mode then sees a value it does not expect and syncs the
/// meta itself before relying on it, as libmdbx does.
pub const LAZY_BIAS_MAP: u32 = 0x5555_5555u32.wrapping_sub(0x1FFF_FFFF);

/// Environment mode flags recorded in `envmode` (libmdbx's `MDBX_env_flags`
/// bits that processes sharing the environment must agree on).
pub mod envmode {
    /// `MDBX_SAFE_NOSYNC`.
    pub const SAFE_NOSYNC: u32 = 0x10000;
    /// `MDBX_RDONLY`: also the value of a lock file nobody wrote to yet.
    pub const RDONLY: u32 = 0x20000;
    /// `MDBX_NOMETASYNC`.
    pub const NOMETASYNC: u32 = 0x40000;
    /// `MDBX_WRITEMAP`.
    pub const WRITEMAP: u32 = 0x80000;
    /// `MDBX_UTTERLY_NOSYNC`.
    pub const UTTERLY_NOSYNC: u32 = SAFE_NOSYNC | 0x100000;
    /// `MDBX_NORDAHEAD`.
    pub const NORDAHEAD: u32 = 0x800000;
    /// `MDBX_LIFORECLAIM`.
    pub const LIFORECLAIM: u32 = 0x4000000;
    /// Flags that make up `envmode`.
    pub const MASK: u32 = SAFE_NOSYNC | UTTERLY_NOSYNC | NOMETASYNC | LIFORECLAIM | NORDAHEAD | RDONLY | WRITEMAP;
    /// "Lazy" durability flags.
    pub const LAZY: u32 = SAFE_NOSYNC | UTTERLY_NOSYNC | NOMETASYNC;
}

/// Lock-file permissions derived from the data-file `mode`, as libmdbx
/// derives them: `(mode & 0o066) | 0o600`, plus group/other write where read
/// was given. Idempotent, so an already converted mode may be passed again.
pub fn lck_file_mode(mode: u32) -> u32 {
    let mut m = (mode & 0o066) | 0o600;
    if mode & 0o040 != 0 {
        m |= 0o020;
    }
    if mode & 0o004 != 0 {
        m |= 0o002;
    }
    m
}

/// Size of a freshly initialised lock file of layout `l` for `max_readers`
/// slots, on a system whose page size is `os_page`.
pub fn lck_size_for(l: &LockLayout, max_readers: u32, os_page: usize) -> u64 {
    let ps = os_page as u64;
    let raw = l.header_size() as u64 + u64::from(max_readers) * SLOT_SIZE as u64;
    raw.div_ceil(ps) * ps
}

/// Reader capacity of a lock file of layout `l` and `size` bytes (clamped to
/// [`READERS_LIMIT`]).
pub fn max_readers_for(l: &LockLayout, size: u64) -> u32 {
    let n = size.saturating_sub(l.header_size() as u64) / SLOT_SIZE as u64;
    n.min(u64::from(READERS_LIMIT)) as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn format_constant() {
        assert_eq!(LAYOUT_V7.signature, 0x3635569F);
        assert_eq!(LAYOUT_V7.magic, 0x59659DBDEF4C1107);
        assert_eq!(LAYOUT_V7.header_size(), 576);
        assert_eq!(LAYOUT_V6.signature, 0x3635461F);
        assert_eq!(LAYOUT_V6.magic, 0x59659DBDEF4C1106);
        assert_eq!(LAYOUT_V6.header_size(), 512);
        assert_eq!(NOTHING_CHANGED, 0x4E6F6E65);
        assert_eq!(8u32.wrapping_sub(LAZY_BIAS_FD), 0x8AAAAAB4);
        assert_eq!(LAYOUT_V7.slot_field(2, SLOT_PID), 576 + 64 + 16);
    }

    #[test]
    fn sizes() {
        let v7 = &LAYOUT_V7;
        assert_eq!(lck_size_for(v7, 61, 4096), 4096);
        assert_eq!(max_readers_for(v7, 4096), 110);
        assert_eq!(max_readers_for(v7, 0), 0);
        assert_eq!(max_readers_for(v7, 1 << 30), READERS_LIMIT);
        assert_eq!(lck_size_for(v7, 111, 4096), 8192);
        let v6 = &LAYOUT_V6;
        assert_eq!(lck_size_for(v6, 61, 4096), 4096);
        assert_eq!(max_readers_for(v6, 4096), 112);
        assert_eq!(lck_size_for(v6, 112, 4096), 4096);
        assert_eq!(lck_size_for(v6, 113, 4096), 8192);
    }

    #[test]
    fn lock_format_names() {
        assert_eq!("6".parse::<LockFormat>(), Ok(LockFormat::V6));
        assert_eq!("v7".parse::<LockFormat>(), Ok(LockFormat::V7));
        assert_eq!(" V6 ".parse::<LockFormat>(), Ok(LockFormat::V6));
        assert!("5".parse::<LockFormat>().is_err());
        assert!("".parse::<LockFormat>().is_err());
        assert_eq!(LockFormat::default(), LockFormat::V7);
        assert_eq!(LockFormat::V6.to_string(), "v6 (libmdbx 0.13)");
        for f in [LockFormat::V6, LockFormat::V7] {
            assert_eq!(LockFormat::from_version(u64::from(f.version())), Some(f));
            assert_eq!(LockLayout::for_magic(f.layout().magic).map(|l| l.format), Some(f));
        }
        assert!(LockLayout::for_magic((MAGIC << 8) | 5).is_none());
        assert!(LockLayout::for_magic(0x1234).is_none());
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
