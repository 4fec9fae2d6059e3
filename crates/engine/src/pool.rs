//! Recycled page buffers for dirty pages.
//!
//! A write transaction makes every page it changes dirty: a page-sized heap
//! buffer. Without reuse, a transaction that dirties many pages allocates them
//! all afresh, and freeing them at commit hands the memory back to the OS, so
//! the next transaction faults it in and zeroes it again (at 64 KiB pages that
//! was a third of the time of a random-put workload). The pool keeps up to
//! [`POOL_LIMIT`] single-page buffers between transactions, as libmdbx keeps
//! its `dp_reserve` (whose default limit is also about 1024 pages), or the
//! number set with `EnvBuilder::page_buffer_reserve`. LMDB keeps every
//! single-page buffer it ever freed: after one large transaction the next
//! finds them all, and a large transaction that follows faults in no fresh
//! memory (the benchmark's prune: 1,920 page faults for rdbx, about 130 with
//! an unbounded reserve; forty-second session, docs/status.md).
//!
//! The environment owns the pool; a write transaction takes it at begin and
//! gives it back, with its own dirty buffers, when it ends (writers are
//! serialized, so the pool is never shared).

use std::hash::{BuildHasherDefault, Hasher};
use std::sync::Arc;

use crate::os::mmap::{MapClaims, MapPage, Mmap};

/// Identity-like hasher for page numbers (keys are already well distributed).
#[derive(Default)]
pub(crate) struct PgnoHasher(u64);
impl Hasher for PgnoHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 = (self.0 << 8 | *b as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
    }
    fn write_u32(&mut self, v: u32) {
        self.0 = (v as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}

/// Dirty pages of a write transaction, by page number. A large chunk is one
/// buffer of `n * page_size` bytes under its head page.
pub(crate) type Dirty = crate::page_map::PageMap<PageBuf>;

/// A set of page numbers.
pub(crate) type PgnoSet = std::collections::HashSet<u32, BuildHasherDefault<PgnoHasher>>;

/// Most buffers kept between transactions, unless the environment was
/// opened with another `EnvBuilder::page_buffer_reserve`.
pub(crate) const POOL_LIMIT: usize = 1024;

/// Most large-value chunks (buffers of several pages) kept between
/// transactions, and the most bytes they hold; a chunk over a quarter of
/// that is not kept.
const CHUNKS_KEPT: usize = 16;
const CHUNK_BYTES_KEPT: usize = 1 << 20;

/// The memory of a dirty page or large chunk: a heap buffer, or, with
/// WRITEMAP, the page itself in the writable map of the data file (edited in
/// place; nothing to write at commit).
#[derive(Debug)]
pub(crate) enum PageBuf {
    Heap(Box<[u8]>),
    Map(crate::os::mmap::MapPage),
}

impl PageBuf {
    /// Whether the bytes live in the map (already where the commit puts them).
    pub(crate) fn in_map(&self) -> bool {
        matches!(self, PageBuf::Map(_))
    }

    /// Pages it holds (one, or a large chunk's), for page size `ps`: a
    /// compare on the common path, the division only for a chunk (every
    /// dirty page is counted; a division is 10 to 40 cycles).
    #[inline]
    pub(crate) fn pages(&self, ps: usize) -> usize {
        pages_in(self.len(), ps)
    }
}

/// [`PageBuf::pages`] of a buffer of `len` bytes.
#[inline]
pub(crate) fn pages_in(len: usize, ps: usize) -> usize {
    if len == ps {
        1
    } else {
        len / ps
    }
}

impl From<Box<[u8]>> for PageBuf {
    fn from(b: Box<[u8]>) -> Self {
        PageBuf::Heap(b)
    }
}

impl std::ops::Deref for PageBuf {
    type Target = [u8];
    #[inline]
    fn deref(&self) -> &[u8] {
        match self {
            PageBuf::Heap(b) => b,
            PageBuf::Map(m) => m,
        }
    }
}

impl std::ops::DerefMut for PageBuf {
    #[inline]
    fn deref_mut(&mut self) -> &mut [u8] {
        match self {
            PageBuf::Heap(b) => b,
            PageBuf::Map(m) => m,
        }
    }
}

impl Clone for PageBuf {
    /// A heap copy (a map page has one owner: the copy cannot be another).
    fn clone(&self) -> Self {
        PageBuf::Heap(Box::from(&self[..]))
    }
}

/// Most dirty-set entries whose table a finished transaction leaves for the
/// next (about 2.5 MiB); a larger table, from a bulk transaction, is freed.
pub(crate) const DIRTY_SET_KEEP: usize = 1 << 16;

/// A kept dirty-set table is shrunk when it has room for more than this many
/// times the pages the last transaction dirtied (at least [`DIRTY_SET_MIN`]).
const DIRTY_SET_SLACK: usize = 4;
/// The smallest table size the shrink rule aims at.
const DIRTY_SET_MIN: usize = 32;

pub(crate) struct PagePool {
    bufs: Vec<Box<[u8]>>,
    /// Most single-page buffers kept (`bufs`).
    reserve: usize,
    /// Large-value chunks, oldest first (at most `CHUNKS_KEPT`).
    chunks: Vec<Box<[u8]>>,
    /// The most pages a transaction dirtied since the dirty set was last kept.
    dirty_pages: usize,
    /// With WRITEMAP: the claims on the map the last map page came from,
    /// kept between transactions. (A transaction keeps one map and gives
    /// every page back when it ends, so claims replaced by a new map's have
    /// none out; if one were, dropping them keeps its map mapped.)
    claims: Option<MapClaims>,
}

impl Default for PagePool {
    fn default() -> Self {
        PagePool { bufs: Vec::new(), reserve: POOL_LIMIT, chunks: Vec::new(), dirty_pages: 0, claims: None }
    }
}

/// Work lists of the GC, kept between transactions: each is filled and
/// emptied within one call of the GC (`gc::write_gc`, `gc::reclaim_one`).
#[derive(Default)]
pub(crate) struct GcScratch {
    /// The GC update's record layout and the plan it compares with it:
    /// (key, reserved bytes, pages it holds).
    pub(crate) layout: Vec<(u64, usize, usize)>,
    pub(crate) plan: Vec<(u64, usize, usize)>,
    /// The keys of consumed records the update writes pages back under.
    pub(crate) spare: Vec<u64>,
    /// The update's reclaimed pages, written back.
    pub(crate) pages: Vec<u32>,
    /// The pages of a record being reclaimed (`gc::reclaim_one`).
    pub(crate) parsed: Vec<u32>,
}

/// Lists longer than this are not kept (a bulk transaction's).
pub(crate) const LIST_KEEP: usize = 1 << 14;

impl GcScratch {
    /// Empties the lists (see [`empty_kept`]).
    pub(crate) fn empty_kept(&mut self) {
        empty_kept(&mut self.layout);
        empty_kept(&mut self.plan);
        empty_kept(&mut self.spare);
        empty_kept(&mut self.pages);
        empty_kept(&mut self.parsed);
    }
}

/// Empties `v` for the next transaction: its capacity is kept unless over
/// [`LIST_KEEP`].
pub(crate) fn empty_kept<T>(v: &mut Vec<T>) {
    v.clear();
    if v.capacity() > LIST_KEEP {
        *v = Vec::new();
    }
}

impl PagePool {
    /// A pool that keeps up to `reserve` single-page buffers.
    pub(crate) fn with_reserve(reserve: usize) -> Self {
        PagePool { reserve, ..Default::default() }
    }

    /// A zeroed buffer of `page_size` bytes.
    pub(crate) fn zeroed(&mut self, page_size: usize) -> Box<[u8]> {
        match self.take(page_size) {
            Some(mut b) => {
                b.fill(0);
                b
            }
            None => vec![0u8; page_size].into_boxed_slice(),
        }
    }

    /// A buffer holding a copy of `src` (one page). Into a recycled buffer
    /// only the page's used parts are copied ([`copy_used`]): the gap
    /// between its node offsets and its nodes keeps the bytes of the page
    /// the buffer held before (a page of this same database), as libmdbx's
    /// and LMDB's copies do. In-process profile of the benchmark's random
    /// puts: the copies' samples 1,521-1,668 -> 1,201-1,310.
    ///
    /// [`copy_used`]: crate::format::page::copy_used
    pub(crate) fn copy_of(&mut self, src: &[u8]) -> Box<[u8]> {
        match self.take(src.len()) {
            Some(mut b) => {
                crate::format::page::copy_used(&mut b, src, false);
                b
            }
            None => src.into(),
        }
    }

    /// A buffer for a large-value chunk of `len` bytes, zeroed from byte
    /// `used` on: the caller writes every byte before it (the header and
    /// the value), so no earlier bytes reach the file. A kept chunk of that
    /// length is reused. Without the pool a blob update allocated and zeroed
    /// its whole chunk (callgrind, values of 20,000 bytes on average: a
    /// memset of 23,600 of the commit's 71,657 instructions).
    pub(crate) fn chunk(&mut self, len: usize, used: usize) -> Box<[u8]> {
        match self.chunks.iter().position(|b| b.len() == len) {
            Some(i) => {
                let mut b = self.chunks.remove(i);
                b[used.min(len)..].fill(0);
                b
            }
            None => vec![0u8; len].into_boxed_slice(),
        }
    }

    /// Keeps `buf` for reuse: a page of `page_size` bytes if the pool has
    /// room, a large-value chunk if it is not too large (the oldest kept
    /// ones make room for it); drops it otherwise.
    #[inline(always)]
    pub(crate) fn recycle(&mut self, buf: impl Into<PageBuf>, page_size: usize) {
        match buf.into() {
            PageBuf::Heap(buf) => {
                if buf.len() == page_size {
                    if self.bufs.len() < self.reserve {
                        self.bufs.push(buf);
                    }
                } else {
                    self.keep_chunk(buf);
                }
            }
            PageBuf::Map(m) => self.give_back(m),
        }
    }

    fn keep_chunk(&mut self, buf: Box<[u8]>) {
        let len = buf.len();
        if len > CHUNK_BYTES_KEPT / 4 {
            return;
        }
        while self.chunks.len() >= CHUNKS_KEPT || self.chunk_bytes() + len > CHUNK_BYTES_KEPT {
            self.chunks.remove(0);
        }
        self.chunks.push(buf);
    }

    /// The bytes of the kept chunks (a sum over at most `CHUNKS_KEPT`).
    fn chunk_bytes(&self) -> usize {
        self.chunks.iter().map(|c| c.len()).sum()
    }

    /// With WRITEMAP: `[off, off + len)` of `map` to be edited in place
    /// (see [`MapClaims::page_mut`]), from the claims on `map` (made at its
    /// first page); `None` where they cannot hand it out.
    #[inline(always)]
    pub(crate) fn map_page(&mut self, map: &Arc<Mmap>, off: usize, len: usize) -> Option<MapPage> {
        if !self.claims.as_ref().is_some_and(|c| Arc::ptr_eq(c.map(), map)) {
            self.claims = Some(MapClaims::new(map)?);
        }
        self.claims.as_mut()?.page_mut(off, len)
    }

    /// A map page back to the claims that handed it out. (A page of
    /// replaced claims, which cannot happen, stays claimed: see `claims`.)
    #[inline]
    fn give_back(&mut self, page: MapPage) {
        if let Some(c) = &mut self.claims {
            let _ = c.give_back(page);
        }
    }

    /// Single-page buffers kept for the next transaction.
    #[cfg(test)]
    pub(crate) fn kept_buffers(&self) -> usize {
        self.bufs.len()
    }

    /// Map pages handed out and not given back (0 between transactions).
    #[cfg(test)]
    pub(crate) fn map_pages_out(&self) -> usize {
        self.claims.as_ref().map_or(0, |c| c.out())
    }

    /// Empties the dirty set of a finished transaction for the next one,
    /// which gets a new one if its table is over [`DIRTY_SET_KEEP`] entries.
    ///
    /// A table much larger than the last transaction needed (a bulk load
    /// followed by small transactions) is shrunk to that need, so a bulk
    /// transaction's memory is not kept for the small ones after it (the
    /// rule dates from the hash table, whose scattered entries also cost
    /// small transactions cache misses; `PageMap` packs its entries, and
    /// its index blocks are bounded by [`PageMap::shed_blocks`]).
    ///
    /// [`PageMap::shed_blocks`]: crate::page_map::PageMap::shed_blocks
    pub(crate) fn keep_dirty_set(&mut self, dirty: &mut Dirty) {
        if !dirty.is_empty() {
            // Only after a panic in a transaction: its map pages go back.
            for (_, buf) in dirty.drain() {
                if let PageBuf::Map(m) = buf {
                    self.give_back(m);
                }
            }
        }
        let need = std::mem::take(&mut self.dirty_pages).max(DIRTY_SET_MIN);
        if dirty.capacity() > DIRTY_SET_KEEP {
            *dirty = Dirty::default();
        } else if dirty.capacity() > DIRTY_SET_SLACK * need {
            dirty.shrink_to(need);
        }
        dirty.shed_blocks();
    }

    /// Notes that a transaction dirtied `n` pages (see [`Self::keep_dirty_set`]).
    pub(crate) fn note_dirty_pages(&mut self, n: usize) {
        self.dirty_pages = self.dirty_pages.max(n);
    }

    /// Where the pooled buffers are, the next one handed out last.
    #[cfg(test)]
    pub(crate) fn buffer_addrs(&self) -> Vec<usize> {
        self.bufs.iter().map(|b| b.as_ptr() as usize).collect()
    }

    fn take(&mut self, len: usize) -> Option<Box<[u8]>> {
        // All pooled buffers have the environment's page size; the check
        // keeps a mistaken caller from getting a wrong-sized buffer.
        self.bufs.pop().filter(|b| b.len() == len)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A large-value chunk comes back for a chunk of its length, zeroed
    /// after the bytes its user writes; the kept chunks stay within their
    /// count and bytes.
    #[test]
    fn reuses_chunks_within_bounds() {
        let mut pool = PagePool::default();
        let mut c = pool.chunk(3 * 256, 600);
        assert!(c.iter().all(|&b| b == 0));
        c.fill(7);
        let at = c.as_ptr() as usize;
        pool.recycle(c, 256);
        // Another length: a new zeroed one.
        let other = pool.chunk(2 * 256, 300);
        assert!(other.iter().all(|&b| b == 0) && other.as_ptr() as usize != at);
        let c = pool.chunk(3 * 256, 600);
        assert_eq!(c.as_ptr() as usize, at, "the kept chunk is reused");
        assert!(c[..600].iter().all(|&b| b == 7) && c[600..].iter().all(|&b| b == 0));
        assert_eq!(pool.chunk_bytes(), 0);
        // Bounded: by count, then by bytes (the oldest go first), and a
        // chunk over a quarter of the bytes is not kept.
        for _ in 0..2 * CHUNKS_KEPT {
            pool.recycle(vec![0u8; 512].into_boxed_slice(), 256);
        }
        assert_eq!((pool.chunks.len(), pool.chunk_bytes()), (CHUNKS_KEPT, CHUNKS_KEPT * 512));
        for _ in 0..8 {
            pool.recycle(vec![0u8; CHUNK_BYTES_KEPT / 4].into_boxed_slice(), 256);
        }
        assert_eq!(pool.chunk_bytes(), CHUNK_BYTES_KEPT);
        assert!(pool.chunks.iter().all(|c| c.len() == CHUNK_BYTES_KEPT / 4));
        pool.recycle(vec![0u8; CHUNK_BYTES_KEPT / 4 + 256].into_boxed_slice(), 256);
        assert_eq!(pool.chunks.len(), 4);
    }

    #[test]
    fn reuses_buffers_and_respects_the_limit() {
        let mut pool = PagePool::default();
        let mut b = pool.zeroed(256);
        b[7] = 9;
        let addr = b.as_ptr();
        pool.recycle(b, 256);
        let z = pool.zeroed(256);
        assert_eq!(z.as_ptr(), addr, "the buffer was reused");
        assert!(z.iter().all(|&x| x == 0), "a reused buffer is zeroed");
        pool.recycle(z, 256);
        let c = pool.copy_of(&[5u8; 256]);
        assert_eq!(c.as_ptr(), addr);
        assert!(c.iter().all(|&x| x == 5));
        pool.recycle(vec![0u8; 512].into_boxed_slice(), 256);
        assert!(pool.bufs.is_empty(), "a two-page chunk is not pooled");
        for _ in 0..POOL_LIMIT + 10 {
            pool.recycle(vec![0u8; 256].into_boxed_slice(), 256);
        }
        assert_eq!(pool.bufs.len(), POOL_LIMIT);
    }

    /// `d` with pages `0..n` added (8-byte buffers).
    fn with_pages(mut d: Dirty, n: u32) -> Dirty {
        for p in 0..n {
            d.insert(p, vec![0u8; 8].into_boxed_slice().into());
        }
        d
    }

    #[test]
    fn keeps_an_emptied_dirty_set_of_bounded_size() {
        let mut pool = PagePool::default();
        let mut d = with_pages(Dirty::default(), 1000);
        let cap = d.capacity();
        pool.note_dirty_pages(d.len());
        pool.keep_dirty_set(&mut d);
        assert!(d.is_empty());
        assert_eq!(d.capacity(), cap, "the table is kept");
        let mut big = Dirty::default();
        big.reserve(DIRTY_SET_KEEP + 1);
        pool.keep_dirty_set(&mut big);
        assert_eq!(big.capacity(), 0, "an oversized table is not kept");
    }

    #[test]
    fn shrinks_a_kept_dirty_set_to_what_the_last_transaction_needed() {
        let mut pool = PagePool::default();
        // A bulk transaction grows the table to 16K slots...
        let mut d = with_pages(Dirty::default(), 12_000);
        let big = d.capacity();
        pool.note_dirty_pages(d.len());
        pool.keep_dirty_set(&mut d);
        assert_eq!(d.capacity(), big, "a table its transaction filled is kept whole");
        // ...and the next one, of 800 pages, leaves a table sized for 800.
        let mut d = with_pages(d, 800);
        pool.note_dirty_pages(d.len());
        pool.keep_dirty_set(&mut d);
        let cap = d.capacity();
        assert!((800..=DIRTY_SET_SLACK * 800).contains(&cap), "{cap} slots kept after 800 dirty pages (was {big})");
    }
}
