//! Structural verification of one tree (`verify_table`): the rules of the
//! shared walk (`walk`), plus key order under the comparator, separators
//! bounding their children, multimap value order, and the counters of the tree
//! descriptor.

use std::cmp::Ordering;

use super::walk::{self, Kind, NodeEv, PageEv, Spec, Visitor, Walk};
use super::{key_at, Cmp};
use crate::btree::pages::Pages;
use crate::error::{Error, Result};
use crate::flags::DbFlags;
use crate::format::page::Page;
use crate::format::tree::Tree;

pub(crate) use walk::Counts;

fn bad(page: u32, what: &'static str) -> Error {
    Error::corrupted(page, what)
}

struct Order {
    cmp: Cmp,
    dup_cmp: Cmp,
}

fn check_keys(p: Page<'_>, pgno: u32, first: usize, cmp: Cmp, lo: Option<&[u8]>, hi: Option<&[u8]>) -> Result<()> {
    let mut prev: Option<&[u8]> = None;
    for i in first..p.num_entries() {
        let k = key_at(p, i, pgno)?;
        if prev.is_some_and(|pk| cmp.cmp(pk, k) != Ordering::Less) {
            return Err(bad(pgno, "keys out of order"));
        }
        if lo.is_some_and(|l| cmp.cmp(k, l) == Ordering::Less) || hi.is_some_and(|h| cmp.cmp(k, h) != Ordering::Less) {
            return Err(bad(pgno, "key outside the range its parent gives"));
        }
        prev = Some(k);
    }
    Ok(())
}

impl<'t> Visitor<'t> for Order {
    fn page(&mut self, _w: &mut Walk<'t>, ev: &PageEv<'t>) -> Result<()> {
        let p = ev.page;
        if p.is_branch() && !key_at(p, 0, ev.pgno)?.is_empty() {
            return Err(bad(ev.pgno, "first key of a branch page is not empty"));
        }
        let cmp = if ev.nested { self.dup_cmp } else { self.cmp };
        check_keys(p, ev.pgno, usize::from(p.is_branch()), cmp, ev.lo, ev.hi)
    }

    fn subpage(&mut self, ev: &NodeEv<'t>, sp: Page<'t>) -> Result<()> {
        check_keys(sp, ev.leaf, 0, self.dup_cmp, None, None).map_err(|_| bad(ev.leaf, "sub-page values out of order"))
    }

    fn leave(&mut self, ev: &NodeEv<'t>, t: &Tree, c: &Counts) -> Result<()> {
        let want = Counts { branch: t.branch_pages as u64, leaf: t.leaf_pages as u64, large: 0, items: t.items };
        if *c != want || t.large_pages != 0 {
            return Err(bad(ev.leaf, "nested tree counters differ from the pages walked"));
        }
        Ok(())
    }
}

/// Walks `tree` (of `kind`, a table with `flags`) checking its structure; the
/// first problem is returned as `Corrupted`.
pub(crate) fn verify(pages: &Pages<'_>, tree: &Tree, kind: Kind, flags: DbFlags) -> Result<Counts> {
    let spec = Spec { kind, flags, tree: *tree, front: pages.front, host: None };
    let mut v = Order { cmp: Cmp::for_keys(flags), dup_cmp: Cmp::for_dups(flags).unwrap_or(Cmp::Lex) };
    let c = walk::walk_txn(*pages, &spec, &mut v)?;
    let want = Counts {
        branch: tree.branch_pages as u64,
        leaf: tree.leaf_pages as u64,
        large: tree.large_pages as u64,
        items: tree.items,
    };
    if tree.root != crate::format::P_INVALID && c != want {
        return Err(bad(tree.root, "tree counters differ from the pages walked"));
    }
    Ok(c)
}
