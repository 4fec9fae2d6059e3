//! Structural verification of one tree (the core of the integrity check): page
//! kinds and depth, key order under the comparator, separators bounding their
//! children, multimap values, and the counters of the tree descriptor.

use std::cmp::Ordering;

use super::{child_at, key_at, load, Cmp, MAX_DEPTH};
use crate::error::{Error, Result};
use crate::format::node::{self, N_BIG, N_DUP, N_TREE};
use crate::format::page::{flags as pflags, Page};
use crate::format::tree::{Tree, TREE_SIZE};
use crate::format::P_INVALID;
use crate::txn::Pages;

/// What a walk counted.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Counts {
    pub branch: u64,
    pub leaf: u64,
    pub large: u64,
    pub items: u64,
}

fn bad(page: u32, what: &'static str) -> Error {
    Error::corrupted(page, what)
}

/// Walks `tree` checking its structure; `dup_cmp` is `Some` for DUPSORT tables.
pub(crate) fn verify(pages: &Pages<'_>, tree: &Tree, cmp: Cmp, dup_cmp: Option<Cmp>) -> Result<Counts> {
    let mut c = Counts::default();
    if tree.root == P_INVALID {
        if tree.height != 0 || tree.items != 0 {
            return Err(bad(0, "empty tree with non-zero height or items"));
        }
        return Ok(c);
    }
    walk(pages, tree.root, tree.root, pages.front, 1, tree.height as usize, None, None, cmp, dup_cmp, &mut c)?;
    let want = Counts {
        branch: tree.branch_pages as u64,
        leaf: tree.leaf_pages as u64,
        large: tree.large_pages as u64,
        items: tree.items,
    };
    if c != want {
        return Err(bad(tree.root, "tree counters differ from the pages walked"));
    }
    Ok(c)
}

#[allow(clippy::too_many_arguments)]
fn walk(
    pages: &Pages<'_>,
    pgno: u32,
    from: u32,
    front: u64,
    depth: usize,
    height: usize,
    lo: Option<&[u8]>,
    hi: Option<&[u8]>,
    cmp: Cmp,
    dup_cmp: Option<Cmp>,
    c: &mut Counts,
) -> Result<()> {
    if depth > height || depth > MAX_DEPTH {
        return Err(bad(pgno, "tree deeper than its height"));
    }
    let p = load(pages, pgno, front, from)?;
    if p.is_leaf() != (depth == height) {
        return Err(bad(pgno, "leaf at a depth that differs from the tree height"));
    }
    let n = p.num_entries();
    let mut prev: Option<&[u8]> = None;
    for i in 0..n {
        let k = key_at(p, i, pgno)?;
        if p.is_branch() && i == 0 {
            if !k.is_empty() {
                return Err(bad(pgno, "first key of a branch page is not empty"));
            }
        } else {
            if let Some(pk) = prev {
                if cmp.cmp(pk, k) != Ordering::Less {
                    return Err(bad(pgno, "keys out of order"));
                }
            }
            if lo.is_some_and(|l| cmp.cmp(k, l) == Ordering::Less)
                || hi.is_some_and(|h| cmp.cmp(k, h) != Ordering::Less)
            {
                return Err(bad(pgno, "key outside the range its parent gives"));
            }
            prev = Some(k);
        }
    }
    if p.is_branch() {
        c.branch += 1;
        for i in 0..n {
            let child_lo = if i == 0 { lo } else { Some(key_at(p, i, pgno)?) };
            let child_hi = if i + 1 < n { Some(key_at(p, i + 1, pgno)?) } else { hi };
            walk(
                pages,
                child_at(p, i, pgno)?,
                pgno,
                p.txnid(),
                depth + 1,
                height,
                child_lo,
                child_hi,
                cmp,
                dup_cmp,
                c,
            )?;
        }
        return Ok(());
    }
    c.leaf += 1;
    if p.is_dupfix() {
        c.items += n as u64;
        return Ok(());
    }
    for i in 0..n {
        let nd = node::node(p, i, pgno)?;
        match (nd.flags, dup_cmp) {
            (0, _) => c.items += 1,
            (N_BIG, None) => {
                let head = Page { buf: pages.get(nd.big_pgno())? };
                if head.flags() != pflags::LARGE {
                    return Err(bad(nd.big_pgno(), "large value head is not a large page"));
                }
                pages.large(nd.big_pgno(), nd.dsize as usize, pgno, p.txnid())?;
                c.large += head.large_count() as u64;
                c.items += 1;
            }
            (N_DUP, Some(dc)) => {
                let sp = Page { buf: nd.data };
                super::check_subpage(sp, pgno)?;
                for j in 1..sp.num_entries() {
                    if dc.cmp(key_at(sp, j - 1, pgno)?, key_at(sp, j, pgno)?) != Ordering::Less {
                        return Err(bad(pgno, "sub-page values out of order"));
                    }
                }
                c.items += sp.num_entries() as u64;
            }
            (f, Some(dc)) if f == N_DUP | N_TREE => {
                if nd.data.len() != TREE_SIZE {
                    return Err(bad(pgno, "nested tree descriptor has a bad size"));
                }
                let nt = Tree::read(nd.data);
                if nt.root == P_INVALID || nt.items == 0 {
                    return Err(bad(pgno, "empty nested tree"));
                }
                let sub = verify(&Pages { front: p.txnid(), ..*pages }, &nt, dc, None)?;
                c.branch += sub.branch;
                c.leaf += sub.leaf;
                c.items += sub.items;
            }
            (N_TREE, None) => {
                if nd.data.len() != TREE_SIZE {
                    return Err(bad(pgno, "table record has a bad size"));
                }
                c.items += 1;
            }
            _ => return Err(bad(pgno, "unexpected node flags")),
        }
    }
    Ok(())
}
