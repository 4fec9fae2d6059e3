//! Page access for a transaction's tree code: the dirty pages of a write
//! transaction first, then the memory map, bounded by the snapshot. The read
//! side of the trees (search, cursor, walk, verify, estimate) sees pages only
//! through this, never a transaction.

use crate::error::{Error, Result};
use crate::format::page::{flags as pflags, Page};
use crate::format::PAGEHDRSZ;
use crate::os::mmap::Mmap;
use crate::pool::Dirty;

/// Page access for one transaction: dirty pages first, then the memory map,
/// bounded by the snapshot's allocated pages.
#[derive(Clone, Copy)]
pub(crate) struct Pages<'t> {
    pub map: &'t Mmap,
    pub ps: usize,
    /// Pages `>= valid` are not part of the snapshot.
    pub valid: u32,
    pub dirty: Option<&'t Dirty>,
    /// Largest page txnid allowed (the transaction's id).
    pub front: u64,
}

/// Whether `pgno` is an allocated page below `valid` (not a meta):
/// what [`Pages::get_clean`] checks before the map.
#[inline(always)]
pub(crate) fn check_allocated(pgno: u32, valid: u32) -> Result<()> {
    if pgno >= valid || pgno < crate::format::NUM_METAS {
        return Err(Error::corrupted(pgno, "page number outside the allocated pages"));
    }
    Ok(())
}

impl<'t> Pages<'t> {
    /// One page.
    #[inline(always)]
    pub fn get(&self, pgno: u32) -> Result<&'t [u8]> {
        if let Some(d) = self.dirty {
            if let Some(b) = d.get(&pgno) {
                return Ok(&b[..self.ps]);
            }
        }
        self.get_clean(pgno)
    }

    /// One page the caller knows is not dirty (a snapshot page about to be
    /// copied on write): [`Pages::get`] without the dirty-set lookup.
    #[inline(always)]
    pub fn get_clean(&self, pgno: u32) -> Result<&'t [u8]> {
        check_allocated(pgno, self.valid)?;
        self.map
            .bytes(pgno as usize * self.ps, self.ps)
            .ok_or_else(|| Error::corrupted(pgno, "page outside the memory map"))
    }

    /// The `dsize` bytes of the large chunk starting at `pgno`.
    pub fn large(&self, pgno: u32, dsize: usize, leaf_pgno: u32, leaf_txnid: u64) -> Result<&'t [u8]> {
        let (head, avail): (&'t [u8], usize) = match self.dirty.and_then(|d| d.get(&pgno)) {
            Some(b) => (&b[..], b.len()),
            None => {
                if pgno >= self.valid || pgno < crate::format::NUM_METAS {
                    return Err(Error::corrupted(leaf_pgno, "large value page number outside the allocated pages"));
                }
                let head = self.get(pgno)?;
                let n = Page { buf: head }.large_count() as u64;
                if n == 0 || pgno as u64 + n > self.valid as u64 {
                    return Err(Error::corrupted(pgno, "large chunk outside the allocated pages"));
                }
                let all = self
                    .map
                    .bytes(pgno as usize * self.ps, n as usize * self.ps)
                    .ok_or_else(|| Error::corrupted(pgno, "large chunk outside the memory map"))?;
                (all, all.len())
            }
        };
        let p = Page { buf: head };
        if p.flags() != pflags::LARGE || p.pgno() != pgno {
            return Err(Error::corrupted(pgno, "large value points to a page that is not a large page"));
        }
        if p.txnid() > leaf_txnid {
            return Err(Error::corrupted(pgno, "large page is newer than its leaf"));
        }
        if PAGEHDRSZ + dsize > avail || (p.large_count() as usize) * self.ps < PAGEHDRSZ + dsize {
            return Err(Error::corrupted(pgno, "large value is longer than its chunk"));
        }
        Ok(&head[PAGEHDRSZ..PAGEHDRSZ + dsize])
    }
}
