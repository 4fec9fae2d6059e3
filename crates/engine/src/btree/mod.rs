//! B+tree algorithms over MDBX pages: key comparison and page search (here),
//! read cursors (`cursor`), and edits: insert, split, delete, rebalance and large
//! values (`write`).

pub mod cursor;
pub(crate) mod dupsort;
pub(crate) mod estimate;
#[cfg(test)]
pub(crate) mod mem;
pub(crate) mod pages;
pub(crate) mod verify;
pub(crate) mod walk;
pub(crate) mod write;
pub(crate) mod writer;

use std::cmp::Ordering;

use crate::btree::pages::Pages;
use crate::error::{Error, Result};
use crate::flags::DbFlags;
use crate::format::node::{self, Node, N_BIG};
use crate::format::page::{flags as pflags, Page};
use crate::format::{u16_at, NODESIZE, PAGEHDRSZ};

/// Deepest tree a cursor follows (libmdbx's cursor stack depth on 64-bit).
pub(crate) const MAX_DEPTH: usize = 32;

/// Key comparator chosen by the table flags (docs/format.md, "Comparators").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Cmp {
    /// memcmp, shorter first on a common prefix.
    Lex,
    /// Compare from the last byte backwards.
    Rev,
    /// Native-endian unsigned integers of equal width (4 or 8 bytes).
    Int,
}

impl Cmp {
    /// Comparator of the values of a DUPSORT table (None for other tables).
    pub(crate) fn for_dups(flags: DbFlags) -> Option<Cmp> {
        if !flags.contains(DbFlags::DUP_SORT) {
            None
        } else if flags.contains(DbFlags::INTEGER_DUP) {
            Some(Cmp::Int)
        } else if flags.contains(DbFlags::REVERSE_DUP) {
            Some(Cmp::Rev)
        } else {
            Some(Cmp::Lex)
        }
    }

    pub(crate) fn for_keys(flags: DbFlags) -> Cmp {
        if flags.contains(DbFlags::INTEGER_KEY) {
            Cmp::Int
        } else if flags.contains(DbFlags::REVERSE_KEY) {
            Cmp::Rev
        } else {
            Cmp::Lex
        }
    }

    #[inline]
    pub(crate) fn cmp(self, a: &[u8], b: &[u8]) -> Ordering {
        match self {
            Cmp::Lex => lex(a, b),
            Cmp::Rev => a.iter().rev().cmp(b.iter().rev()),
            Cmp::Int => match (a.len(), b.len()) {
                (8, 8) => u64::from_le_bytes(a.try_into().unwrap()).cmp(&u64::from_le_bytes(b.try_into().unwrap())),
                (4, 4) => u32::from_le_bytes(a.try_into().unwrap()).cmp(&u32::from_le_bytes(b.try_into().unwrap())),
                // Damaged data: any total order keeps searches safe.
                _ => a.len().cmp(&b.len()).then_with(|| a.cmp(b)),
            },
        }
    }
}

/// Lexicographic order (memcmp, then length), comparing 8 bytes at a time:
/// keys are mostly short, where a call to libc's memcmp costs more than the
/// comparison itself.
#[inline]
pub(crate) fn lex(a: &[u8], b: &[u8]) -> Ordering {
    let n = a.len().min(b.len());
    let (mut ca, mut cb) = (a[..n].chunks_exact(8), b[..n].chunks_exact(8));
    for (x, y) in (&mut ca).zip(&mut cb) {
        let (x, y) = (u64::from_be_bytes(x.try_into().unwrap()), u64::from_be_bytes(y.try_into().unwrap()));
        if x != y {
            return x.cmp(&y);
        }
    }
    for (x, y) in ca.remainder().iter().zip(cb.remainder()) {
        if x != y {
            return x.cmp(y);
        }
    }
    a.len().cmp(&b.len())
}

/// Key of node `i` (or item `i` of a DUPFIX page), bounds-checked. Always
/// inlined: binary searches call it per probe, and a call that returns the
/// slice through memory costs more than the checks.
#[inline(always)]
pub(crate) fn key_at<'a>(page: Page<'a>, i: usize, pgno: u32) -> Result<&'a [u8]> {
    let buf = page.buf;
    if page.is_dupfix() {
        let k = page.dupfix_ksize() as usize;
        return buf
            .get(PAGEHDRSZ + i * k..PAGEHDRSZ + (i + 1) * k)
            .ok_or_else(|| Error::corrupted(pgno, "DUPFIX item outside the page"));
    }
    let off = PAGEHDRSZ + page.entry(i);
    if off + NODESIZE > buf.len() {
        return Err(Error::corrupted(pgno, "node offset outside the page"));
    }
    let ksize = u16_at(buf, off + 6) as usize;
    buf.get(off + NODESIZE..off + NODESIZE + ksize).ok_or_else(|| Error::corrupted(pgno, "node key overruns the page"))
}

/// Binary search over entries `lo..hi` of `page`: the first entry whose key
/// is not below the searched key (per `order`, the order of an entry's key
/// to the searched key) and whether it is equal. Generic so that each
/// comparator gets its own loop with the key prepared once.
///
/// Branchy, with an early exit on equality: a branch-free variant (always
/// `log2(n)` probes, the next probe chosen by a conditional move) was 1.5x
/// slower on random gets over 1M records, where the pages are not cached and
/// the speculated next probe is the load that matters (`hot get`: 650 ms vs
/// 1,070 ms; `hot intget` 20k records: 695 ms vs 800-850 ms).
#[inline(always)]
fn bsearch(
    page: Page<'_>,
    mut lo: usize,
    mut hi: usize,
    pgno: u32,
    mut order: impl FnMut(&[u8]) -> Ordering,
) -> Result<(usize, bool)> {
    // Leaves only: the branch pages of a hot tree stay in the cache.
    let ahead = page.flags() & (pflags::LEAF | pflags::DUPFIX) == pflags::LEAF;
    while lo < hi {
        let mid = (lo + hi) / 2;
        if ahead && hi - lo > 8 {
            // Start loading the two records the next probe may look at while
            // this one waits for its own: on pages not in the cache each
            // probe is a miss, and the misses no longer run one after another.
            crate::os::prefetch(page.buf, PAGEHDRSZ + page.entry((lo + mid) / 2));
            crate::os::prefetch(page.buf, PAGEHDRSZ + page.entry((mid + 1 + hi) / 2));
        }
        match order(key_at(page, mid, pgno)?) {
            Ordering::Less => lo = mid + 1,
            Ordering::Equal => return Ok((mid, true)),
            Ordering::Greater => hi = mid,
        }
    }
    Ok((lo, false))
}

/// Searches `lo..hi` starting by interpolation: `guess` sees the
/// keys of the first and last entries and says where between them the
/// searched key falls (0.0 to 1.0, from numbers that keep the keys' order),
/// or `None` when it cannot; the first probe goes there, and probes then
/// step away from it, 1, 2, 4... entries, until they pass the key. On
/// pages whose keys are spread evenly (counters, hashes, random ids) that
/// takes three or four key reads instead of binary search's seven on a page
/// of 80 entries, and on a page not in the cache each read is a miss. The
/// guess only picks where to look: every probe narrows the range by a real
/// comparison, so uneven keys cost extra probes, never a wrong answer.
/// [`bsearch`] finishes the narrowed range (and does all of it when the
/// range is under 8 entries or there is no guess).
#[inline(always)]
fn interpolate(
    page: Page<'_>,
    lo: usize,
    hi: usize,
    pgno: u32,
    guess: impl FnOnce(&[u8], &[u8]) -> Option<f64>,
    mut order: impl FnMut(&[u8]) -> Ordering,
) -> Result<(usize, bool)> {
    if hi - lo < 8 {
        return bsearch(page, lo, hi, pgno, order);
    }
    let Some(at) = guess(key_at(page, lo, pgno)?, key_at(page, hi - 1, pgno)?) else {
        return bsearch(page, lo, hi, pgno, order);
    };
    // `as usize` saturates (and maps NaN to 0): `g` stays inside the range.
    let g = (lo + (at.clamp(0.0, 1.0) * (hi - 1 - lo) as f64) as usize).min(hi - 1);
    let (mut lo, mut hi) = (lo, hi);
    match order(key_at(page, g, pgno)?) {
        Ordering::Equal => return Ok((g, true)),
        Ordering::Less => {
            lo = g + 1;
            let mut step = 1;
            while lo < hi {
                let p = (g + step).min(hi - 1);
                match order(key_at(page, p, pgno)?) {
                    Ordering::Less => lo = p + 1,
                    Ordering::Equal => return Ok((p, true)),
                    Ordering::Greater => {
                        hi = p;
                        break;
                    }
                }
                step *= 2;
            }
        }
        Ordering::Greater => {
            hi = g;
            let mut step = 1;
            while lo < hi {
                let p = g.saturating_sub(step).max(lo);
                match order(key_at(page, p, pgno)?) {
                    Ordering::Less => {
                        lo = p + 1;
                        break;
                    }
                    Ordering::Equal => return Ok((p, true)),
                    Ordering::Greater => hi = p,
                }
                step *= 2;
            }
        }
    }
    bsearch(page, lo, hi, pgno, order)
}

/// Up to 8 bytes of a byte key as a big-endian number (zero-padded): never
/// decreasing in [`lex`] order among keys that share everything before them.
#[inline(always)]
fn lex_rank(k: &[u8]) -> u64 {
    // One load for the common case; a copy of a variable length is a
    // library call (`memcpy`), measured at 0.5% of a random-put phase.
    if let Some(b) = k.first_chunk::<8>() {
        return u64::from_be_bytes(*b);
    }
    let mut b = [0u8; 8];
    b[..k.len()].copy_from_slice(k);
    u64::from_be_bytes(b)
}

/// Where byte key `key` falls between `first` and `last` (see
/// [`interpolate`]), from their first 8 bytes; when those are the same on
/// the whole page, from the 8 bytes after the first and last keys' common
/// prefix, which every key between them shares (keys with a long shared
/// prefix, such as "account:" ids, interpolate as well as bare ones). A key
/// outside the page's range guesses an end: one probe settles it.
#[inline(always)]
fn lex_guess(first: &[u8], last: &[u8], key: &[u8]) -> Option<f64> {
    let (mut a, mut b, mut w) = (lex_rank(first), lex_rank(last), lex_rank(key));
    if a == b {
        let common = first.iter().zip(last).take_while(|(x, y)| x == y).count();
        if key.get(..common) != first.get(..common) {
            return None;
        }
        let rank = |k: &[u8]| lex_rank(k.get(common..).unwrap_or(&[]));
        (a, b, w) = (rank(first), rank(last), rank(key));
    }
    (a < b).then(|| (w.clamp(a, b) - a) as f64 / (b - a) as f64)
}

/// [`bsearch`] with the comparator chosen once per page rather than per
/// probe: byte keys compare with [`lex`]; an 8- or 4-byte INTEGER_KEY is
/// read once and compared natively with each entry of its width (entries of
/// another width, only on damaged pages, take the general comparator).
/// Byte keys and 8-byte integer keys start with [`interpolate`].
#[inline(always)]
fn search(page: Page<'_>, lo: usize, hi: usize, key: &[u8], cmp: Cmp, pgno: u32) -> Result<(usize, bool)> {
    match cmp {
        Cmp::Lex => interpolate(page, lo, hi, pgno, |first, last| lex_guess(first, last, key), |k| lex(k, key)),
        Cmp::Int if key.len() == 8 => {
            let want = u64::from_le_bytes(key.try_into().expect("8 bytes"));
            let order = |k: &[u8]| match <[u8; 8]>::try_from(k) {
                Ok(k) => u64::from_le_bytes(k).cmp(&want),
                Err(_) => cmp.cmp(k, key),
            };
            // An entry of another width (a damaged page) ranks as 0 or the
            // maximum by its length; the probes' comparisons stay exact.
            let rank = |k: &[u8]| match <[u8; 8]>::try_from(k) {
                Ok(k) => u64::from_le_bytes(k),
                Err(_) if k.len() < 8 => 0,
                Err(_) => u64::MAX,
            };
            // A key outside the page's range guesses its end: ids appended
            // (and the branches above them) are settled by one probe.
            let guess = |first: &[u8], last: &[u8]| {
                let (a, b) = (rank(first), rank(last));
                (a < b).then(|| (want.clamp(a, b) - a) as f64 / (b - a) as f64)
            };
            interpolate(page, lo, hi, pgno, guess, order)
        }
        Cmp::Int if key.len() == 4 => {
            let want = u32::from_le_bytes(key.try_into().expect("4 bytes"));
            bsearch(page, lo, hi, pgno, |k| match <[u8; 4]>::try_from(k) {
                Ok(k) => u32::from_le_bytes(k).cmp(&want),
                Err(_) => cmp.cmp(k, key),
            })
        }
        _ => bsearch(page, lo, hi, pgno, |k| cmp.cmp(k, key)),
    }
}

/// Binary search in a leaf: index of the first key `>= key` and whether it is equal.
#[inline]
pub(crate) fn search_leaf(page: Page<'_>, key: &[u8], cmp: Cmp, pgno: u32) -> Result<(usize, bool)> {
    search(page, 0, page.num_entries(), key, cmp, pgno)
}

/// Binary search in a branch: index of the child whose subtree may hold `key`
/// (the last entry with key `<= key`; entry 0 is minus infinity).
#[inline]
pub(crate) fn search_branch(page: Page<'_>, key: &[u8], cmp: Cmp, pgno: u32) -> Result<usize> {
    Ok(match search(page, 1, page.num_entries(), key, cmp, pgno)? {
        (i, true) => i,
        (i, false) => i - 1,
    })
}

/// Child page number of branch entry `i`.
#[inline]
pub(crate) fn child_at(page: Page<'_>, i: usize, pgno: u32) -> Result<u32> {
    let off = PAGEHDRSZ + page.entry(i);
    if off + NODESIZE > page.buf.len() || off < PAGEHDRSZ + page.upper() || page.buf[off + 4] != 0 {
        return Err(Error::corrupted(pgno, "bad branch node"));
    }
    Ok(crate::format::u32_at(page.buf, off))
}

/// Loads tree page `pgno` and checks its header (`front` is the parent's
/// txnid). `from` is the page that refers to it (the page itself for a root):
/// a reference outside the allocated pages is reported on that page.
/// Always inlined: every descent calls it per level, and as a call it cost
/// about as many instructions as its checks.
#[inline(always)]
pub(crate) fn load<'t>(pages: &Pages<'t>, pgno: u32, front: u64, from: u32) -> Result<Page<'t>> {
    if (pgno >= pages.valid || pgno < crate::format::NUM_METAS) && !pages.dirty.is_some_and(|d| d.contains_key(&pgno)) {
        return Err(Error::corrupted(from, "child page number outside the allocated pages"));
    }
    let page = Page { buf: pages.get(pgno)? };
    // The entry offsets a search reads first lie in the lines after the
    // header: load them together with it rather than after it.
    crate::os::prefetch(page.buf, 64);
    crate::os::prefetch(page.buf, 128);
    page.check_tree_page(pgno, front)?;
    if page.is_branch() && !key_at(page, 0, pgno)?.is_empty() {
        return Err(Error::corrupted(pgno, "first key of a branch page is not empty"));
    }
    Ok(page)
}

/// The value of a leaf node: inline bytes or the contents of its large chunk.
#[inline]
pub(crate) fn node_value<'t>(pages: &Pages<'t>, n: &Node<'t>, leaf_pgno: u32, leaf_txnid: u64) -> Result<&'t [u8]> {
    if n.flags & N_BIG == 0 {
        return Ok(n.data);
    }
    pages.large(n.big_pgno(), n.dsize as usize, leaf_pgno, leaf_txnid)
}

/// Result of a root-to-leaf descent.
pub(crate) struct Found<'t> {
    pub leaf: Page<'t>,
    pub pgno: u32,
    pub idx: usize,
    pub exact: bool,
}

/// Descends from `root` to the leaf that may hold `key`.
pub(crate) fn descend<'t>(pages: &Pages<'t>, root: u32, height: u16, key: &[u8], cmp: Cmp) -> Result<Found<'t>> {
    let mut pgno = root;
    let mut from = root;
    let mut front = pages.front;
    let mut depth = 1usize;
    loop {
        let page = load(pages, pgno, front, from)?;
        if page.is_leaf() {
            if depth != height as usize {
                return Err(Error::corrupted(pgno, "leaf at a depth that differs from the tree height"));
            }
            let (idx, exact) = search_leaf(page, key, cmp, pgno)?;
            return Ok(Found { leaf: page, pgno, idx, exact });
        }
        if depth >= height as usize || depth >= MAX_DEPTH {
            return Err(Error::corrupted(pgno, "tree deeper than its height (cycle?)"));
        }
        let i = search_branch(page, key, cmp, pgno)?;
        front = page.txnid();
        from = pgno;
        pgno = child_at(page, i, pgno)?;
        depth += 1;
    }
}

/// Checks that leaf page `page` of `tree` has the layout the tree's flags
/// call for: packed items of the tree's value size for the nested trees of
/// DUPFIXED tables (DUPFIXED without DUPSORT), nodes otherwise. Writers rely
/// on it before they insert into or merge leaves.
pub(crate) fn check_leaf_kind(page: Page<'_>, tree: &crate::format::tree::Tree, pgno: u32) -> Result<()> {
    let dupfix_tree = tree.flags & 0x10 != 0 && tree.flags & 0x04 == 0;
    let ok =
        if page.is_dupfix() { dupfix_tree && u32::from(page.dupfix_ksize()) == tree.dupfix_size } else { !dupfix_tree };
    if ok {
        Ok(())
    } else {
        Err(Error::corrupted(pgno, "leaf page layout does not match its tree"))
    }
}

/// Validates a sub-page (the value of an N_DUP node).
pub(crate) fn check_subpage(sp: Page<'_>, host: u32) -> Result<()> {
    let len = sp.buf.len();
    if len < PAGEHDRSZ {
        return Err(Error::corrupted(host, "sub-page shorter than a page header"));
    }
    let f = sp.kind();
    let (lower, upper) = (sp.lower(), sp.upper());
    if lower & 1 != 0 || lower / 2 == 0 {
        return Err(Error::corrupted(host, "sub-page has no entries"));
    }
    match f {
        pflags::SUBPAGE_LEAF => {
            if lower > upper || PAGEHDRSZ + upper > len {
                return Err(Error::corrupted(host, "bad sub-page bounds"));
            }
        }
        pflags::SUBPAGE_DUPFIX => {
            let k = sp.dupfix_ksize() as usize;
            if k == 0 || PAGEHDRSZ + (lower / 2) * k > len {
                return Err(Error::corrupted(host, "bad DUPFIX sub-page bounds"));
            }
        }
        _ => return Err(Error::corrupted(host, "bad sub-page flags")),
    }
    Ok(())
}

/// Looks `key` up in a tree: its (first) value if present.
pub(crate) fn get<'t>(pages: &Pages<'t>, root: u32, height: u16, key: &[u8], cmp: Cmp) -> Result<Option<&'t [u8]>> {
    if root == crate::format::P_INVALID {
        return Ok(None);
    }
    let f = descend(pages, root, height, key, cmp)?;
    if !f.exact {
        return Ok(None);
    }
    if f.leaf.is_dupfix() {
        // A nested tree of a DUPFIXED table: the items are the values.
        return key_at(f.leaf, f.idx, f.pgno).map(Some);
    }
    let n = node::node(f.leaf, f.idx, f.pgno)?;
    if n.flags & node::N_DUP != 0 {
        let mut c = cursor::Cursor::new(*pages, root, height, cmp);
        c.set_dup_cmp(Some(Cmp::Lex));
        return Ok(c.set(key)?.map(|p| p.1));
    }
    node_value(pages, &n, f.pgno, f.leaf.txnid()).map(Some)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::node;
    use crate::format::page::{flags, init_page};

    type Keys = Vec<Vec<u8>>;

    /// A page of `kind` holding `keys` (already in order), as node entries.
    fn page_with(kind: u16, keys: &[Vec<u8>]) -> Vec<u8> {
        let mut buf = vec![0u8; 4096];
        init_page(&mut buf, 7, kind, 1);
        for (i, k) in keys.iter().enumerate() {
            if kind == flags::BRANCH {
                node::insert(&mut buf, i, if i == 0 { &[] } else { k }, 100 + i as u32, 0, &[]);
            } else {
                node::insert(&mut buf, i, k, 1, 0, &[9]);
            }
        }
        buf
    }

    /// The answers of a linear scan, which the binary searches must match.
    fn linear(keys: &[Vec<u8>], key: &[u8], cmp: Cmp, from: usize) -> (usize, bool) {
        for (i, k) in keys.iter().enumerate().skip(from) {
            match cmp.cmp(k, key) {
                Ordering::Less => {}
                Ordering::Equal => return (i, true),
                Ordering::Greater => return (i, false),
            }
        }
        (keys.len().max(from), false)
    }

    #[test]
    fn searches_agree_with_a_linear_scan() {
        let int8 = |v: u64| v.to_le_bytes().to_vec();
        let int4 = |v: u32| v.to_le_bytes().to_vec();
        for n in 0..40usize {
            // Keys 10, 20, ... in each comparator's order; probes hit every
            // key, every gap, and both ends.
            let cases: Vec<(Cmp, Keys, Keys)> = vec![
                (
                    Cmp::Lex,
                    (1..=n).map(|i| format!("k{:04}", i * 10).into_bytes()).collect(),
                    (0..=n * 10 + 11).map(|i| format!("k{i:04}").into_bytes()).collect(),
                ),
                (
                    Cmp::Int,
                    (1..=n).map(|i| int8(i as u64 * 10)).collect(),
                    (0..=n * 10 + 11).map(|i| int8(i as u64)).collect(),
                ),
                (
                    Cmp::Int,
                    (1..=n).map(|i| int4(i as u32 * 10)).collect(),
                    (0..=n * 10 + 11).map(|i| int4(i as u32)).collect(),
                ),
            ];
            for (cmp, keys, probes) in cases {
                let leaf = page_with(flags::LEAF, &keys);
                for p in &probes {
                    let got = search_leaf(Page { buf: &leaf }, p, cmp, 7).unwrap();
                    assert_eq!(got, linear(&keys, p, cmp, 0), "leaf of {n}, {cmp:?}, probe {p:?}");
                }
                if n >= 2 {
                    let branch = page_with(flags::BRANCH, &keys);
                    for p in &probes {
                        let got = search_branch(Page { buf: &branch }, p, cmp, 7).unwrap();
                        // The last entry <= key; entry 0 stands for minus infinity.
                        let want = match linear(&keys, p, cmp, 1) {
                            (i, true) => i,
                            (i, false) => i - 1,
                        };
                        assert_eq!(got, want, "branch of {n}, {cmp:?}, probe {p:?}");
                    }
                }
            }
        }
    }

    use proptest::prelude::*;

    /// Checks `search_leaf` and `search_branch` on a page of `keys` (sorted,
    /// unique) against a linear scan for every probe.
    fn agree(keys: &[Vec<u8>], probes: &[Vec<u8>], cmp: Cmp) -> Result<(), TestCaseError> {
        let leaf = page_with(flags::LEAF, keys);
        for p in probes {
            let got = search_leaf(Page { buf: &leaf }, p, cmp, 7).unwrap();
            prop_assert_eq!(got, linear(keys, p, cmp, 0), "leaf, probe {:?}", p);
        }
        if keys.len() >= 2 {
            let branch = page_with(flags::BRANCH, keys);
            for p in probes {
                let got = search_branch(Page { buf: &branch }, p, cmp, 7).unwrap();
                let want = match linear(keys, p, cmp, 1) {
                    (i, true) => i,
                    (i, false) => i - 1,
                };
                prop_assert_eq!(got, want, "branch, probe {:?}", p);
            }
        }
        Ok(())
    }

    proptest! {
        /// The interpolation step only chooses where to probe: on keys spread
        /// unevenly (clusters, powers, a long shared prefix that gives every
        /// key the same rank, keys shorter than 8 bytes) the answers are
        /// those of a linear scan.
        #[test]
        fn interpolated_searches_agree_with_a_linear_scan_on_uneven_keys(
            raw in prop::collection::btree_set(prop_oneof![
                0u64..64,
                any::<u64>(),
                (0u32..64).prop_map(|e| 1u64 << e),
                (0u64..1000).prop_map(|x| x * x * x),
            ], 0..70),
            probes in prop::collection::vec(any::<u64>(), 0..40),
            prefix in prop::collection::vec(any::<u8>(), 0..12),
            cut in 0usize..9,
        ) {
            let keys: Vec<u64> = raw.into_iter().collect();
            // Probes: every key, its neighbours, and random numbers.
            let mut probe_nums: Vec<u64> = probes;
            for &k in &keys {
                probe_nums.extend([k, k.wrapping_sub(1), k.wrapping_add(1)]);
            }
            // 8-byte INTEGER_KEY.
            let int_keys: Keys = keys.iter().map(|k| k.to_le_bytes().to_vec()).collect();
            let int_probes: Keys = probe_nums.iter().map(|k| k.to_le_bytes().to_vec()).collect();
            agree(&int_keys, &int_probes, Cmp::Int)?;
            // 4-byte INTEGER_KEY: the numbers' low halves (distinct, sorted).
            let low: std::collections::BTreeSet<u32> = keys.iter().map(|&k| k as u32).collect();
            let int4_keys: Keys = low.iter().map(|k| k.to_le_bytes().to_vec()).collect();
            let int4_probes: Keys = probe_nums.iter().map(|&k| (k as u32).to_le_bytes().to_vec()).collect();
            agree(&int4_keys, &int4_probes, Cmp::Int)?;
            // Byte keys: a shared prefix, then the number big-endian, cut
            // to `cut` bytes at most (distinct keys may then collide: keep
            // the set).
            let lex_of = |k: u64| {
                let mut v = prefix.clone();
                v.extend_from_slice(&k.to_be_bytes()[8 - cut.max(1)..]);
                v
            };
            let lex_keys: Keys = keys.iter().map(|&k| lex_of(k)).collect::<std::collections::BTreeSet<_>>().into_iter().collect();
            let lex_probes: Keys = probe_nums.iter().map(|&k| lex_of(k)).chain([Vec::new(), prefix.clone()]).collect();
            agree(&lex_keys, &lex_probes, Cmp::Lex)?;
        }
    }
}
