//! Range estimation from the pages on two root-to-leaf paths only, as libmdbx's
//! `mdbx_estimate_range` does: no walk over the range itself.
//!
//! Every entry at level `l` stands for a subtree of about `W_l` records: a leaf
//! entry for exactly one, an entry of a page above the leaves for
//! `items / (n̄_0 · … · n̄_l)` records, where `n̄_j` is the mean fan-out of the two
//! paths at level `j` and `items` is the table's record count. The estimate is
//! `Σ_l (idx_B,l − idx_A,l) · W_l` over the levels from the one where the paths
//! part. It is exact when both positions share a leaf; for neighbouring leaves
//! it is off by the difference between the real and the mean leaf fill, and
//! across the tree by how much the real subtree sizes differ from the mean
//! (a few percent on trees filled by random inserts).

use super::{child_at, load, search_branch, search_leaf, Cmp, MAX_DEPTH};
use crate::btree::pages::Pages;
use crate::error::{Error, Result};
use crate::format::tree::Tree;
use crate::format::P_INVALID;

/// One level of a position: page, index on it, and its number of entries.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Step {
    pub pgno: u32,
    pub idx: usize,
    pub n: usize,
}

/// Where a bound lies in the tree.
pub(crate) enum Bound<'a> {
    /// Before the first record.
    First,
    /// After the last record.
    End,
    /// At the first key `>= key`.
    Key(&'a [u8]),
}

/// The path of `bound` (leaf index may equal `n`: past the leaf's last entry).
pub(crate) fn path_of(pages: &Pages<'_>, tree: &Tree, bound: Bound<'_>, cmp: Cmp) -> Result<Vec<Step>> {
    let mut out = Vec::with_capacity(tree.height as usize);
    let mut pgno = tree.root;
    let mut from = tree.root;
    let mut front = pages.front;
    loop {
        if out.len() >= MAX_DEPTH || out.len() >= tree.height as usize {
            return Err(Error::corrupted(pgno, "tree deeper than its height (cycle?)"));
        }
        let p = load(pages, pgno, front, from)?;
        let n = p.num_entries();
        let idx = match (&bound, p.is_leaf()) {
            (Bound::First, _) => 0,
            (Bound::End, true) => n,
            (Bound::End, false) => n - 1,
            (Bound::Key(k), true) => search_leaf(p, k, cmp, pgno)?.0,
            (Bound::Key(k), false) => search_branch(p, k, cmp, pgno)?,
        };
        out.push(Step { pgno, idx, n });
        if p.is_leaf() {
            return Ok(out);
        }
        front = p.txnid();
        from = pgno;
        pgno = child_at(p, idx, pgno)?;
    }
}

/// Estimated number of records from position `a` to position `b` (negative
/// when `b` comes first).
///
/// Each position gets a rank: `Σ_l idx_l · S_l / n_l`, where `S_0` is the
/// record count of the tree (`items`; for multimaps, whose `items` counts
/// values, the product of the fan-outs on the path) and `S_{l+1} = S_l / n_l`
/// is the estimated size of the subtree entered at the next level, i.e. every
/// page is assumed to split its records evenly among its entries. When both
/// positions share their leaf the result is the exact index difference.
pub(crate) fn distance(a: &[Step], b: &[Step], items: Option<u64>) -> i64 {
    let h = a.len().min(b.len());
    if h == 0 {
        return 0;
    }
    if a[h - 1].pgno == b[h - 1].pgno {
        return b[h - 1].idx as i64 - a[h - 1].idx as i64;
    }
    let rank = |p: &[Step]| -> f64 {
        let mut size = match items {
            Some(n) => n as f64,
            None => p.iter().map(|s| s.n.max(1) as f64).product(),
        };
        let mut r = 0.0;
        for s in p {
            let w = size / s.n.max(1) as f64;
            r += s.idx as f64 * w;
            size = w;
        }
        r
    };
    (rank(&b[..h]) - rank(&a[..h])).round() as i64
}

/// Estimated number of records in `[lo, hi)` of a tree (keys of the outer tree
/// only for multimaps, as libmdbx counts).
pub(crate) fn estimate_range(
    pages: &Pages<'_>,
    tree: &Tree,
    cmp: Cmp,
    lo: Option<&[u8]>,
    hi: Option<&[u8]>,
) -> Result<i64> {
    if tree.root == P_INVALID {
        return Ok(0);
    }
    let a = path_of(pages, tree, lo.map_or(Bound::First, Bound::Key), cmp)?;
    let b = path_of(pages, tree, hi.map_or(Bound::End, Bound::Key), cmp)?;
    let multimap = tree.flags & 0x04 != 0;
    Ok(distance(&a, &b, (!multimap).then_some(tree.items)))
}
