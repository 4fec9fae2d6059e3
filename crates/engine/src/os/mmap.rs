//! Memory mappings.
//!
//! * [`Mmap`]: a read-only `MAP_SHARED` mapping of the data file. The mapping
//!   length is an address-space reservation (libmdbx maps `geometry.upper`):
//!   it may exceed the current file size, and only the part inside the file may
//!   be touched (anything beyond raises `SIGBUS`).
//!   With WRITEMAP the same mapping is also writable, and the write
//!   transaction edits the pages it allocated in place through [`MapPage`]s,
//!   which the map's one [`MapClaims`] hands out.
//! * [`SharedRegion`]: the read-write `MAP_SHARED` mapping of the lock file,
//!   accessed only through atomics ([`SharedRegion::u32_at`],
//!   [`SharedRegion::u64_at`]) and pthread mutexes ([`SharedRegion::mutex_at`]),
//!   because other processes (libmdbx or rdbx) modify it concurrently.

use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use super::mutex::SharedMutex;

/// Maps `len` bytes of `fd` with `prot`/`flags`; `len` must be non-zero.
fn map_raw(file: &File, len: usize, prot: libc::c_int, flags: libc::c_int) -> io::Result<NonNull<u8>> {
    if len == 0 {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, "cannot map 0 bytes"));
    }
    // SAFETY: a fresh mapping at a kernel-chosen address (addr = NULL) cannot
    // overlap any existing Rust object; the descriptor is valid while `file` lives
    // (the mapping stays valid after the descriptor is closed).
    let p = unsafe { libc::mmap(std::ptr::null_mut(), len, prot, flags, file.as_raw_fd(), 0) };
    if p == libc::MAP_FAILED {
        return Err(io::Error::last_os_error());
    }
    NonNull::new(p.cast::<u8>()).ok_or_else(|| io::Error::other("mmap returned NULL"))
}

/// A read-only shared mapping of (a prefix of, or more than) a file.
///
/// The memory may change under the mapping (other processes write the file
/// with `pwrite`); see the contract of [`Mmap::bytes`].
#[derive(Debug)]
pub(crate) struct Mmap {
    ptr: NonNull<u8>,
    len: usize,
    /// Mapped with `PROT_WRITE` (WRITEMAP): a [`MapClaims`] can be made.
    writable: bool,
    /// Granule of [`MapClaims::page_mut`] (the database page size; 0 when
    /// not writable): handed-out ranges are whole granules.
    granule: usize,
    /// `granule` is `1 << granule_shift` (a power of two: shifts, not
    /// divisions, on the path of every page handed out).
    granule_shift: u32,
    /// Whether a [`MapClaims`] exists for this map (at most one does: it
    /// alone knows which pages are out).
    claimed: std::sync::atomic::AtomicBool,
    /// The range [`Mmap::prefault`] last populated, start and end (a hint
    /// only).
    prefaulted: [std::sync::atomic::AtomicUsize; 2],
    /// Bytes at the start that [`Mmap::bytes`] never lends out: the meta
    /// pages, which every commit rewrites in place (0: none).
    shielded: usize,
}

/// Granules per chunk of [`HandedBits`] (512 words of 64 bits: 128 MiB of
/// map at 4 KiB pages per 4 KiB chunk).
const CHUNK_BITS: usize = CHUNK_WORDS * 64;
const CHUNK_WORDS: usize = 512;

/// A bit per granule of a writable map, in chunks allocated on first use
/// (a map may reserve terabytes of address space; the writer touches the
/// chunks of the pages it allocates).
#[derive(Debug, Default)]
struct HandedBits {
    /// (Arrays: a word's index within a chunk needs no bounds check.)
    chunks: Vec<Option<Box<[u64; CHUNK_WORDS]>>>,
}

impl HandedBits {
    fn new(granules: usize) -> HandedBits {
        HandedBits { chunks: (0..granules.div_ceil(CHUNK_BITS)).map(|_| None).collect() }
    }

    /// The word holding granule `g`'s bit, and the bit.
    #[inline(always)]
    fn word(&mut self, g: usize) -> (&mut u64, u64) {
        let c = g / CHUNK_BITS;
        if self.chunks[c].is_none() {
            self.add_chunk(c);
        }
        let chunk = self.chunks[c].as_mut().expect("added above");
        (&mut chunk[g % CHUNK_BITS / 64], 1 << (g % 64))
    }

    #[cold]
    fn add_chunk(&mut self, c: usize) {
        self.chunks[c] = Some(Box::new([0; CHUNK_WORDS]));
    }

    /// Sets the bits of granules `first..first + n`, all or none: false
    /// (nothing changed) if one was set.
    #[inline]
    fn claim(&mut self, first: usize, n: usize) -> bool {
        if n == 1 {
            let (w, bit) = self.word(first);
            let free = *w & bit == 0;
            *w |= bit;
            return free;
        }
        self.claim_run(first, n)
    }

    fn claim_run(&mut self, first: usize, n: usize) -> bool {
        for g in first..first + n {
            let (w, bit) = self.word(g);
            if *w & bit != 0 {
                self.release(first, g - first);
                return false;
            }
            *w |= bit;
        }
        true
    }

    /// Clears the bits of granules `first..first + n` (claimed before).
    #[inline(always)]
    fn release(&mut self, first: usize, n: usize) {
        if n == 1 {
            let (w, bit) = self.word(first);
            *w &= !bit;
            return;
        }
        self.release_run(first, n);
    }

    fn release_run(&mut self, first: usize, n: usize) {
        for g in first..first + n {
            let (w, bit) = self.word(g);
            *w &= !bit;
        }
    }
}

// SAFETY: the mapping is plain memory owned by this value; it is written only
// through `MapPage`s (see there), and unmapping happens only in Drop
// (exclusive access).
unsafe impl Send for Mmap {}
// SAFETY: access through `&Mmap` is read-only; writes go through `MapPage`s,
// each of which covers pages no other borrow reads (see `MapClaims::page_mut`).
unsafe impl Sync for Mmap {}

impl Mmap {
    /// Maps `len` bytes (len may exceed the file size: it is an address-space
    /// reservation, like libmdbx mapping `geometry.upper`), with
    /// `MAP_SHARED | MAP_NORESERVE` and `PROT_READ`.
    pub fn map(file: &File, len: usize) -> io::Result<Mmap> {
        let ptr = map_raw(file, len, libc::PROT_READ, libc::MAP_SHARED | libc::MAP_NORESERVE)?;
        Ok(Mmap {
            ptr,
            len,
            writable: false,
            granule: 0,
            granule_shift: 0,
            claimed: Default::default(),
            prefaulted: Default::default(),
            shielded: 0,
        })
    }

    /// As [`Mmap::map`], but also `PROT_WRITE` (WRITEMAP; `file` must be
    /// open for writing). Its [`MapClaims`] hands out whole granules of
    /// `granule` bytes (the database page size: a power of two).
    pub fn map_writable(file: &File, len: usize, granule: usize) -> io::Result<Mmap> {
        if !granule.is_power_of_two() {
            return Err(io::Error::new(io::ErrorKind::InvalidInput, "granule not a power of two"));
        }
        let ptr = map_raw(file, len, libc::PROT_READ | libc::PROT_WRITE, libc::MAP_SHARED | libc::MAP_NORESERVE)?;
        Ok(Mmap {
            ptr,
            len,
            writable: true,
            granule,
            granule_shift: granule.trailing_zeros(),
            claimed: Default::default(),
            prefaulted: Default::default(),
            shielded: 0,
        })
    }

    /// Makes [`Mmap::bytes`] refuse every range that starts in the first
    /// `n` bytes (the meta pages of a data file: read them with
    /// [`Mmap::copy_volatile`]).
    pub fn shield_prefix(mut self, n: usize) -> Mmap {
        self.shielded = n;
        self
    }

    /// WRITEMAP: makes the pages of `[off, off + len)` present and writable
    /// in this process's page tables in one call (`MADV_POPULATE_WRITE`),
    /// unless the last call already covered `off`, so that the write
    /// transaction's first stores into the fresh pages it allocates from the
    /// tail do not take one page fault each. The contents do not change.
    /// Best effort: an error (old kernels: `EINVAL`) is ignored. The caller
    /// keeps the range inside the file; `off` is aligned to the OS page.
    pub fn prefault(&self, off: usize, len: usize) {
        use std::sync::atomic::Ordering::Relaxed;
        let Some(end) = off.checked_add(len).filter(|&e| e <= self.len && self.writable && len > 0) else {
            return;
        };
        if (self.prefaulted[0].load(Relaxed)..self.prefaulted[1].load(Relaxed)).contains(&off) {
            return;
        }
        // SAFETY: [off, end) lies inside our live mapping (checked above);
        // populating page tables does not change the memory contents, so no
        // borrow of these bytes is affected.
        let _ = unsafe { libc::madvise(self.ptr.as_ptr().add(off).cast(), end - off, libc::MADV_POPULATE_WRITE) };
        self.prefaulted[0].store(off, Relaxed);
        self.prefaulted[1].store(end, Relaxed);
    }

    /// `msync(MS_SYNC)` of `[0, len)` (clamped to the mapping): pages written
    /// through the map, and the file's other dirty pages in that range, reach
    /// the disk.
    pub fn sync(&self, len: usize) -> io::Result<()> {
        let len = len.min(self.len);
        if len == 0 {
            return Ok(());
        }
        // SAFETY: [base, base + len) is inside our live mapping and starts at
        // its (page-aligned) base; msync does not change memory contents.
        super::cvt(unsafe { libc::msync(self.ptr.as_ptr().cast(), len, libc::MS_SYNC) }).map(|_| ())
    }

    /// Length of the mapping in bytes (not the file size).
    pub fn len(&self) -> usize {
        self.len
    }

    /// Bytes `[off, off + len)` of the mapping, or `None` if the range is not
    /// entirely inside the mapping (or overflows).
    ///
    /// Contract: callers only ask for ranges that are inside the *file* (beyond
    /// the end of the file the access would raise `SIGBUS`) and that no writer
    /// modifies while the returned borrow lives — committed MVCC pages, which
    /// are never rewritten while a reader slot holds their snapshot (the
    /// libmdbx reader protocol guarantees this across processes). Meta pages
    /// are rewritten in place by every commit: never borrow them, read them
    /// with [`Mmap::copy_volatile`] (`env::read_meta_page`). That part is
    /// enforced: a range starting in the prefix given to
    /// [`Mmap::shield_prefix`] gets `None`.
    pub fn bytes(&self, off: usize, len: usize) -> Option<&[u8]> {
        let end = off.checked_add(len)?;
        if end > self.len || off < self.shielded {
            return None;
        }
        // SAFETY: [off, end) lies inside the live mapping of `self.len` bytes
        // (checked above); the mapping lives as long as `&self`. Immutability of
        // the bytes during the borrow is the documented caller contract.
        Some(unsafe { std::slice::from_raw_parts(self.ptr.as_ptr().add(off), len) })
    }

    /// Copies the bytes at `off` into `dst` without forming a reference to
    /// them, with volatile reads: for bytes another process may be writing at
    /// this moment (the metas, rewritten in place by every commit). The copy
    /// may be torn; the caller validates it (see `EnvInner::read_troika`).
    /// False if the range is not inside the mapping.
    pub fn copy_volatile(&self, off: usize, dst: &mut [u8]) -> bool {
        let Some(end) = off.checked_add(dst.len()) else { return false };
        if end > self.len {
            return false;
        }
        // Single bytes up to an 8-aligned address, then whole aligned words,
        // then the last bytes (a meta's body starts 20 bytes into its page).
        let base = self.ptr.as_ptr().wrapping_add(off);
        let head = base.align_offset(8).min(dst.len());
        let words = (dst.len() - head) / 8;
        let tail = head + 8 * words;
        for (i, chunk) in dst[head..tail].chunks_exact_mut(8).enumerate() {
            // The address is 8-aligned (`head` reaches alignment) and
            // `off + head + 8 * i + 8 <= off + tail <= end <= self.len`.
            // SAFETY: inside the live mapping (the caller asks only for bytes inside the file), aligned; a volatile read creates no reference.
            let w = unsafe { std::ptr::read_volatile(base.add(head + 8 * i).cast::<u64>()) };
            chunk.copy_from_slice(&w.to_ne_bytes());
        }
        for i in (0..head).chain(tail..dst.len()) {
            // `off + i < end <= self.len`, and a `u8` has no alignment requirement.
            // SAFETY: inside the live mapping, as above; a volatile read creates no reference.
            dst[i] = unsafe { std::ptr::read_volatile(base.add(i)) };
        }
        true
    }

    /// The 4-aligned `u32` words at `base + offs[j]`, each read with one
    /// volatile load (for bytes another process may be writing, as
    /// [`Mmap::copy_volatile`]); `None` if one is not 4-aligned or not
    /// inside the mapping. Checked once for all of them: inlined with
    /// constant offsets, only `base` is tested at run time (a write
    /// transaction reads 18 words of the metas this way at its start).
    #[inline]
    pub fn u32s_volatile<const N: usize>(&self, base: usize, offs: &[usize; N]) -> Option<[u32; N]> {
        let last = offs.iter().copied().max().unwrap_or(0);
        if !base.is_multiple_of(4) || offs.iter().any(|o| !o.is_multiple_of(4)) {
            return None;
        }
        if base.checked_add(last)?.checked_add(4)? > self.len {
            return None;
        }
        Some(std::array::from_fn(|j| {
            // `base + offs[j] + 4 <= base + last + 4 <= self.len`, and both
            // terms are 4-aligned, as is the page-aligned mapping.
            // SAFETY: inside the live mapping, aligned; a volatile read creates no reference.
            unsafe { std::ptr::read_volatile(self.ptr.as_ptr().add(base + offs[j]).cast::<u32>()) }
        }))
    }

    /// WRITEMAP: writes `bytes` at `off` in place, for bytes that readers of
    /// any process copy while they may change (a meta, read with
    /// [`Mmap::copy_volatile`] and valid only when its two copies of the
    /// txnid agree, the second being the 8 bytes at `last` within `bytes`).
    /// The order is libmdbx's: the `last` bytes are zeroed, the others
    /// written, then the `last` bytes (release), so that a concurrent copy
    /// holds the old bytes, the new ones, or txnid copies that disagree (the
    /// new first copy is never 0). False (nothing written) when the map is
    /// read-only, the range is not inside it, or `off`, `bytes.len()` or
    /// `last` is not a multiple of 4.
    ///
    /// Contract (upheld by the commit, the only caller, under the writer
    /// lock): the range is inside the file, and no `&[u8]` borrows it (the
    /// meta pages are refused by [`Mmap::bytes`], see
    /// [`Mmap::shield_prefix`], and never handed out by [`MapClaims::page_mut`]).
    #[inline]
    pub fn write_ordered(&self, off: usize, bytes: &[u8], last: usize) -> bool {
        let Some(end) = off.checked_add(bytes.len()) else { return false };
        let aligned = [off, bytes.len(), last].iter().all(|x| x.is_multiple_of(4));
        if !self.writable || end > self.len || !aligned || last + 8 > bytes.len() {
            return false;
        }
        let base = self.ptr.as_ptr().wrapping_add(off);
        let word = |i: usize| u32::from_ne_bytes(bytes[i..i + 4].try_into().expect("4 bytes"));
        let store = |i: usize, v: u32, order: Ordering| {
            // SAFETY: `off + i + 4 <= end <= self.len`: inside the live,
            // writable mapping; the address is 4-aligned (the mapping is
            // page-aligned, `off` and `i` are multiples of 4). Per the
            // contract no reference to these bytes exists; other readers
            // access them only by volatile or atomic loads.
            let a = unsafe { AtomicU32::from_ptr(base.add(i).cast::<u32>()) };
            a.store(v, order);
        };
        store(last, 0, Ordering::Relaxed);
        store(last + 4, 0, Ordering::Relaxed);
        std::sync::atomic::fence(Ordering::Release);
        // The words before and after the `last` bytes, in two plain loops
        // (one loop that skipped them cost 7 instructions a word).
        for (i, w) in bytes[..last].chunks_exact(4).enumerate() {
            store(4 * i, u32::from_ne_bytes(w.try_into().expect("4 bytes")), Ordering::Relaxed);
        }
        for (i, w) in bytes[last + 8..].chunks_exact(4).enumerate() {
            store(last + 8 + 4 * i, u32::from_ne_bytes(w.try_into().expect("4 bytes")), Ordering::Relaxed);
        }
        std::sync::atomic::fence(Ordering::Release);
        store(last, word(last), Ordering::Relaxed);
        store(last + 4, word(last + 4), Ordering::Release);
        true
    }

    /// Base address of the mapping (for diagnostics / pointer arithmetic only).
    pub fn as_ptr(&self) -> *const u8 {
        self.ptr.as_ptr()
    }
}

/// The pages of a writable map handed out as [`MapPage`]s: the write
/// transaction's claims on the map. One exists per map at a time, owned by
/// the writer (`&mut self`: no atomics on the path of each page). It keeps
/// the mapping alive for the pages it handed out: if it is dropped before
/// every one came back ([`MapClaims::give_back`]), it leaks a reference to
/// the map, whose mapping then stays until the process ends (a page that
/// never comes back is a bug, and its memory stays valid).
#[derive(Debug)]
pub(crate) struct MapClaims {
    map: std::sync::Arc<Mmap>,
    /// The granules out as [`MapPage`]s, one bit each (by offset / granule).
    handed: HandedBits,
    /// Pages handed out and not given back.
    out: usize,
}

impl MapClaims {
    /// The claims on `map`; `None` if it is not writable or has claims
    /// already.
    pub fn new(map: &std::sync::Arc<Mmap>) -> Option<MapClaims> {
        if !map.writable || map.claimed.swap(true, Ordering::AcqRel) {
            return None;
        }
        Some(MapClaims { map: map.clone(), handed: HandedBits::new(map.len.div_ceil(map.granule)), out: 0 })
    }

    /// The map these claims are on.
    #[inline]
    pub fn map(&self) -> &std::sync::Arc<Mmap> {
        &self.map
    }

    /// Pages handed out and not given back.
    #[cfg(test)]
    pub fn out(&self) -> usize {
        self.out
    }

    /// Bytes `[off, off + len)` to be edited in place, or `None` if the
    /// range is not inside the map or not made of whole granules.
    ///
    /// Checked here: no `MapPage` out overlaps the range (`None` then; the
    /// transaction never asks twice, so that is a bug it would see as a
    /// missing page, never as aliased memory). Contract (upheld by the write
    /// transaction, the only caller): the range is inside the file, and it is
    /// made of pages the transaction allocated: free pages that no snapshot
    /// of any process references (the MVCC rule that also lets a writer
    /// `pwrite` them), which no `bytes` borrow reads (the transaction reads
    /// them only through this `MapPage`).
    #[inline(always)]
    pub fn page_mut(&mut self, off: usize, len: usize) -> Option<MapPage> {
        let map = &*self.map;
        let end = off.checked_add(len)?;
        if end > map.len || len == 0 || (off | len) & (map.granule - 1) != 0 {
            return None;
        }
        if !self.handed.claim(off >> map.granule_shift, len >> map.granule_shift) {
            debug_assert!(false, "a map page was handed out twice");
            return None;
        }
        self.out += 1;
        // (`end <= map.len` and `len > 0`, checked above, give `off < map.len`.)
        // SAFETY: `off < map.len`: inside the live mapping, and non-null.
        let ptr = unsafe { NonNull::new_unchecked(map.ptr.as_ptr().add(off)) };
        Some(MapPage { ptr, len })
    }

    /// Takes back a page these claims handed out (its range may be handed
    /// out again); a page of another map is returned. (Inline: a call per
    /// page a transaction edited.)
    #[inline(always)]
    pub fn give_back(&mut self, page: MapPage) -> Result<(), MapPage> {
        let base = self.map.ptr.as_ptr() as usize;
        let off = (page.ptr.as_ptr() as usize).wrapping_sub(base);
        if off >= self.map.len {
            return Err(page);
        }
        let shift = self.map.granule_shift;
        self.handed.release(off >> shift, page.len >> shift);
        self.out -= 1;
        Ok(())
    }
}

impl Drop for MapClaims {
    fn drop(&mut self) {
        if self.out == 0 {
            self.map.claimed.store(false, Ordering::Release);
        } else {
            // Pages are still out: their memory must stay mapped.
            std::mem::forget(self.map.clone());
        }
    }
}

/// Pages of a writable map that one write transaction edits in place
/// (WRITEMAP). Made only by [`MapClaims::page_mut`], whose contract makes
/// this the only access to those bytes while it lives, and which keeps the
/// mapping alive for it (or leaks it: see [`MapClaims`]).
pub(crate) struct MapPage {
    ptr: NonNull<u8>,
    len: usize,
}

// SAFETY: a MapPage is the exclusive handle to its bytes (`MapClaims`
// hands out no overlapping ranges while it is out) and its mapping stays
// while it lives (see `MapClaims`), like a `Box<[u8]>`.
unsafe impl Send for MapPage {}
// SAFETY: shared access only reads, through `&self` (as for `Box<[u8]>`).
unsafe impl Sync for MapPage {}

impl std::ops::Deref for MapPage {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        // SAFETY: `ptr..ptr + len` is inside a mapping that stays while this
        // handle lives (`MapClaims` holds or leaks it), and only this handle
        // accesses it (contract of `MapClaims::page_mut`).
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }
}

impl std::ops::DerefMut for MapPage {
    fn deref_mut(&mut self) -> &mut [u8] {
        // SAFETY: as in `deref`; `&mut self` makes this borrow exclusive.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }
}

impl std::fmt::Debug for MapPage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "MapPage({} bytes)", self.len)
    }
}

impl Drop for Mmap {
    fn drop(&mut self) {
        // SAFETY: we own the mapping; no borrow from `bytes` can outlive `self`.
        unsafe {
            libc::munmap(self.ptr.as_ptr().cast(), self.len);
        }
    }
}

/// A read-write `MAP_SHARED` mapping of a small file (the lock file), shared
/// with other processes. It is never handed out as `&[u8]`/`&mut [u8]`: every
/// access is atomic or goes through a pthread mutex.
#[derive(Debug)]
pub(crate) struct SharedRegion {
    ptr: NonNull<u8>,
    len: usize,
}

// SAFETY: all access goes through atomics or process-shared mutexes, which are
// designed for concurrent use from any thread (or process).
unsafe impl Send for SharedRegion {}
// SAFETY: see Send: `&SharedRegion` only yields atomics and mutex handles.
unsafe impl Sync for SharedRegion {}

impl SharedRegion {
    /// Maps the first `len` bytes of `file` read-write and shared. The caller
    /// makes sure the file is at least `len` bytes long for as long as the
    /// region lives (the lock file is only truncated by its last user, after
    /// unmapping).
    pub fn map(file: &File, len: usize) -> io::Result<SharedRegion> {
        let ptr = map_raw(file, len, libc::PROT_READ | libc::PROT_WRITE, libc::MAP_SHARED)?;
        Ok(SharedRegion { ptr, len })
    }

    fn check(&self, off: usize, size: usize, align: usize) -> *mut u8 {
        assert!(
            off & (align - 1) == 0 && off.checked_add(size).is_some_and(|e| e <= self.len),
            "shared region access at {off}+{size} out of bounds or misaligned (len {})",
            self.len
        );
        // SAFETY: off + size <= len (asserted), so the pointer stays inside the mapping.
        unsafe { self.ptr.as_ptr().add(off) }
    }

    /// The `u32` at byte offset `off` (must be 4-aligned and inside the region).
    ///
    /// Panics on a misaligned or out-of-range offset: offsets are compile-time
    /// constants of the lock layout or derived from a bounds-checked slot index.
    pub fn u32_at(&self, off: usize) -> &AtomicU32 {
        let p = self.check(off, 4, 4);
        // SAFETY: `p` is inside the live mapping (check), 4-aligned (the mapping
        // is page aligned and `off % 4 == 0`), valid for the lifetime of `&self`;
        // the memory is only ever accessed atomically by us and by the other
        // processes (libmdbx uses C11/GCC atomics on the same fields), so treating
        // it as an AtomicU32 (same size/alignment as u32) is sound.
        unsafe { AtomicU32::from_ptr(p.cast::<u32>()) }
    }

    /// The `u64` at byte offset `off` (must be 8-aligned and inside the region).
    ///
    /// Panics on a misaligned or out-of-range offset (see [`Self::u32_at`]).
    pub fn u64_at(&self, off: usize) -> &AtomicU64 {
        let p = self.check(off, 8, 8);
        // SAFETY: as in `u32_at`: inside the mapping, 8-aligned, lives as long as
        // `&self`, only accessed atomically by every participant.
        unsafe { AtomicU64::from_ptr(p.cast::<u64>()) }
    }

    /// The process-shared pthread mutex occupying
    /// `size_of::<pthread_mutex_t>()` bytes at `off` (8-aligned).
    pub fn mutex_at(&self, off: usize) -> SharedMutex<'_> {
        let p = self.check(off, std::mem::size_of::<libc::pthread_mutex_t>(), 8);
        // SAFETY: `p` points to a properly aligned pthread_mutex_t-sized area
        // inside the mapping that lives as long as the returned borrow of `self`.
        unsafe { SharedMutex::from_raw(p.cast::<libc::pthread_mutex_t>()) }
    }

    /// Stores zero into every byte of `[off, off + len)` (both multiples of 8)
    /// with relaxed atomic stores. Only meaningful when no other process uses
    /// the region (the initialiser holds the exclusive file locks).
    pub fn zero(&self, off: usize, len: usize) {
        let mut o = off;
        let end = off.saturating_add(len).min(self.len);
        while o + 8 <= end {
            self.u64_at(o).store(0, Ordering::Relaxed);
            o += 8;
        }
    }

    /// `msync(MS_SYNC)` of the whole region.
    pub fn flush(&self) -> io::Result<()> {
        // SAFETY: the range is exactly our live mapping; msync does not change memory.
        let rc = unsafe { libc::msync(self.ptr.as_ptr().cast(), self.len, libc::MS_SYNC) };
        super::cvt(rc).map(|_| ())
    }
}

impl Drop for SharedRegion {
    fn drop(&mut self) {
        // SAFETY: we own the mapping; every borrow (atomics, mutex handles) is
        // tied to `&self` and therefore ended.
        unsafe {
            libc::munmap(self.ptr.as_ptr().cast(), self.len);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::sync::Arc;

    #[test]
    fn map_pages_are_exclusive_and_write_the_file() {
        let f = tempfile::tempfile().unwrap();
        f.set_len(16384).unwrap();
        let m = Arc::new(Mmap::map_writable(&f, 16384, 4096).unwrap());
        let mut c = MapClaims::new(&m).unwrap();
        assert!(MapClaims::new(&m).is_none(), "one set of claims per map");
        assert!(c.page_mut(100, 4096).is_none(), "not a whole granule");
        assert!(c.page_mut(4096, 100).is_none(), "not a whole granule");
        assert!(c.page_mut(16384, 4096).is_none(), "past the map");
        let mut a = c.page_mut(4096, 8192).unwrap();
        a[..5].copy_from_slice(b"hello");
        // No second handle overlapping one that is out (release builds: None).
        if !cfg!(debug_assertions) {
            assert!(c.page_mut(8192, 4096).is_none());
            assert!(c.page_mut(0, 4097).is_none());
        }
        let b = c.page_mut(0, 4096).expect("a disjoint page");
        assert_eq!(c.out(), 2);
        c.give_back(b).unwrap();
        c.give_back(a).unwrap();
        assert_eq!(c.out(), 0);
        let again = c.page_mut(8192, 4096).expect("free once given back");
        // A page of another map is not taken.
        let f2 = tempfile::tempfile().unwrap();
        f2.set_len(4096).unwrap();
        let m2 = Arc::new(Mmap::map_writable(&f2, 4096, 4096).unwrap());
        let mut c2 = MapClaims::new(&m2).unwrap();
        let other = c2.page_mut(0, 4096).unwrap();
        let other = c.give_back(other).unwrap_err();
        c2.give_back(other).unwrap();
        c.give_back(again).unwrap();
        drop(c);
        assert!(MapClaims::new(&m).is_some(), "claims again once every page came back");
        let mut buf = [0u8; 5];
        std::os::unix::fs::FileExt::read_exact_at(&f, &mut buf, 4096).unwrap();
        assert_eq!(&buf, b"hello", "the shared map writes the file");
        // Prefaulting changes no byte; ranges outside the map are ignored.
        m.prefault(0, 16384);
        m.prefault(4096, 1 << 30);
        assert_eq!(&m.bytes(4096, 5).unwrap(), b"hello");
        assert!(m.bytes(8192, 8192).unwrap().iter().all(|&b| b == 0));
    }

    /// Words read at once at offsets from a base: the file's bytes, and
    /// `None` for a misaligned word or one reaching past the map.
    #[test]
    fn words_at_offsets() {
        let mut f = tempfile::tempfile().unwrap();
        let bytes: Vec<u8> = (0..8192u32).map(|i| (i % 251) as u8).collect();
        f.write_all(&bytes).unwrap();
        let m = Mmap::map(&f, 8192).unwrap();
        let word = |o: usize| u32::from_ne_bytes(bytes[o..o + 4].try_into().unwrap());
        let offs = [0, 28, 4];
        assert_eq!(m.u32s_volatile(4096, &offs), Some([word(4096), word(4124), word(4100)]));
        assert_eq!(m.u32s_volatile(8192 - 32, &offs), Some([word(8160), word(8188), word(8164)]));
        assert_eq!(m.u32s_volatile(8192 - 28, &offs), None, "the last word past the map");
        assert_eq!(m.u32s_volatile(4098, &offs), None, "a misaligned base");
        assert_eq!(m.u32s_volatile(0, &[0, 6]), None, "a misaligned offset");
        assert_eq!(m.u32s_volatile(usize::MAX - 3, &offs), None, "an overflowing offset");
    }

    /// Claims dropped while a page is out leave its memory mapped (the map
    /// is leaked) and no other claims on that map can be made.
    #[test]
    fn a_page_out_keeps_its_map() {
        let f = tempfile::tempfile().unwrap();
        f.set_len(8192).unwrap();
        let m = Arc::new(Mmap::map_writable(&f, 8192, 4096).unwrap());
        let mut c = MapClaims::new(&m).unwrap();
        let mut p = c.page_mut(4096, 4096).unwrap();
        drop(c);
        drop(m);
        p[..3].copy_from_slice(b"abc");
        let mut buf = [0u8; 3];
        std::os::unix::fs::FileExt::read_exact_at(&f, &mut buf, 4096).unwrap();
        assert_eq!(&buf, b"abc");
        let m = Arc::new(Mmap::map_writable(&f, 8192, 4096).unwrap());
        let c = MapClaims::new(&m).unwrap();
        drop(c);
        assert!(MapClaims::new(&Arc::new(Mmap::map(&f, 8192).unwrap())).is_none(), "read-only map");
    }

    /// `write_ordered` writes every byte of the range, the `last` word
    /// pair included, wherever that pair is, and refuses what it cannot
    /// write in order.
    #[test]
    fn ordered_writes_write_every_word() {
        let f = tempfile::tempfile().unwrap();
        f.set_len(8192).unwrap();
        let m = Mmap::map_writable(&f, 8192, 4096).unwrap();
        let bytes: Vec<u8> = (0..224u32).map(|i| (i * 7 + 1) as u8).collect();
        for last in (0..=216).step_by(4) {
            let off = 20 + 4 * (last % 3);
            assert!(m.write_ordered(off, &bytes, last));
            assert_eq!(m.bytes(off, 224).unwrap(), &bytes[..], "last {last}");
            assert!(m.write_ordered(off, &[0u8; 224], last));
            assert!(m.bytes(off, 224).unwrap().iter().all(|&b| b == 0));
        }
        assert!(!m.write_ordered(20, &bytes, 218), "last not a multiple of 4");
        assert!(!m.write_ordered(20, &bytes, 220), "last pair past the end");
        assert!(!m.write_ordered(22, &bytes, 8), "offset not a multiple of 4");
        assert!(!m.write_ordered(8000, &bytes, 8), "past the map");
        let ro = Mmap::map(&f, 8192).unwrap();
        assert!(!ro.write_ordered(20, &bytes, 8), "a read-only map");
    }

    #[test]
    fn handed_bits_claim_all_or_nothing() {
        let mut h = HandedBits::new(3 * CHUNK_BITS);
        // Across a chunk boundary.
        assert!(h.claim(CHUNK_BITS - 2, 4));
        // Overlapping the claimed range at its end: nothing changes.
        assert!(!h.claim(CHUNK_BITS - 5, 4));
        assert!(h.claim(CHUNK_BITS - 5, 3), "the bits a failed claim set were cleared");
        assert!(!h.claim(CHUNK_BITS + 1, 1));
        h.release(CHUNK_BITS - 2, 4);
        assert!(h.claim(CHUNK_BITS + 1, 1));
        assert!(h.claim(3 * CHUNK_BITS - 1, 1), "the last granule");
    }

    #[test]
    fn shielded_prefix_is_never_lent() {
        let f = tempfile::tempfile().unwrap();
        f.set_len(16384).unwrap();
        let m = Mmap::map(&f, 16384).unwrap().shield_prefix(12288);
        assert!(m.bytes(0, 4096).is_none(), "a meta page");
        assert!(m.bytes(8192, 8192).is_none(), "a range starting in the metas");
        assert!(m.bytes(12288, 4096).is_some(), "the first page after them");
        let mut copy = [1u8; 8];
        assert!(m.copy_volatile(0, &mut copy), "metas are read by copy");
        assert_eq!(copy, [0; 8]);
    }

    #[test]
    fn map_reads_file_and_bounds() {
        let mut f = tempfile::tempfile().unwrap();
        f.write_all(b"hello world").unwrap();
        let m = Mmap::map(&f, 1 << 20).unwrap();
        assert_eq!(m.len(), 1 << 20);
        assert_eq!(m.bytes(0, 5), Some(&b"hello"[..]));
        assert_eq!(m.bytes(6, 5), Some(&b"world"[..]));
        assert!(m.bytes(1 << 20, 1).is_none());
        let mut out = [0u8; 11];
        assert!(m.copy_volatile(0, &mut out));
        assert_eq!(&out, b"hello world");
        let mut out = [0u8; 10];
        assert!(m.copy_volatile(1, &mut out));
        assert_eq!(&out, b"ello world");
        assert!(!m.copy_volatile((1 << 20) - 1, &mut out));
        assert!(m.bytes(usize::MAX, 2).is_none());
        assert_eq!(m.bytes(1 << 20, 0), Some(&[][..]));
        assert!(Mmap::map(&f, 0).is_err());
    }

    #[test]
    fn volatile_copies_match_at_every_alignment() {
        let mut f = tempfile::tempfile().unwrap();
        let bytes: Vec<u8> = (0..100u8).map(|i| i.wrapping_mul(37) ^ 0x5a).collect();
        f.write_all(&bytes).unwrap();
        let m = Mmap::map(&f, 4096).unwrap();
        for off in 0..20 {
            for len in 0..=(bytes.len() - off) {
                let mut out = vec![0xffu8; len];
                assert!(m.copy_volatile(off, &mut out));
                assert_eq!(out, bytes[off..off + len], "offset {off}, {len} bytes");
            }
        }
    }

    #[test]
    fn shared_region_atomics_are_file_backed() {
        let f = tempfile::tempfile().unwrap();
        f.set_len(4096).unwrap();
        let r = SharedRegion::map(&f, 4096).unwrap();
        r.u64_at(8).store(0x1122334455667788, Ordering::SeqCst);
        r.u32_at(4).store(0xAABBCCDD, Ordering::SeqCst);
        let mut buf = [0u8; 16];
        crate::os::file::pread_exact(&f, &mut buf, 0).unwrap();
        assert_eq!(&buf[4..8], &0xAABBCCDDu32.to_le_bytes());
        assert_eq!(&buf[8..16], &0x1122334455667788u64.to_le_bytes());
        r.zero(0, 4096);
        crate::os::file::pread_exact(&f, &mut buf, 0).unwrap();
        assert_eq!(buf, [0; 16]);
        r.flush().unwrap();
    }

    #[test]
    #[should_panic]
    fn shared_region_rejects_misaligned() {
        let f = tempfile::tempfile().unwrap();
        f.set_len(4096).unwrap();
        let r = SharedRegion::map(&f, 4096).unwrap();
        let _ = r.u64_at(4);
    }
}
