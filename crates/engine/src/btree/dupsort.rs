//! Multimaps (DUPSORT tables): a key's values live in one of three forms
//! (docs/format.md, "Multimap values"): a plain node (one value), a sub-page inside the node (a
//! miniature leaf, packed items for DUPFIXED), or a nested tree whose keys are
//! the values. A sub-page grows until libmdbx's size limit and then becomes a
//! nested tree; deleting values shrinks sub-pages but never converts back, as
//! libmdbx does.

use super::write::{self, find_path, insert_at, is_rightmost, rebalance, touch_path, Path};
use super::writer::{TreeWriter, View};
use super::{key_at, Cmp};
use crate::error::{Error, Result};
use crate::flags::{DbFlags, PutFlags};
use crate::format::node::{self, N_DUP, N_TREE};
use crate::format::page::{self as fpage, flags as pflags, Page};
use crate::format::tree::{Tree, TREE_SIZE};
use crate::format::{even_ceil, put_u16, u16_at, u32_at, NODESIZE, PAGEHDRSZ, P_INVALID};

/// How the values of a key are stored. A sub-page is not decoded: puts and
/// deletes edit its bytes (`subpage_copy`), so the cost of a change is one
/// copy of the sub-page, not an allocation per value.
enum Repr {
    /// One value, in the node itself (read with `plain_value`).
    Plain,
    /// A sub-page with this many values.
    Sub(usize),
    Nested(Tree),
}

/// Flags of nested trees of a table with `flags` (docs/format.md, "Nested-tree flags").
fn nested_flags(flags: DbFlags) -> u16 {
    let f = flags.bits();
    ((f & 0x10) | ((f & 0x20) >> 2) | ((f & 0x40) >> 5)) as u16
}

fn dup_cmp(t: &View) -> Cmp {
    Cmp::for_dups(t.flags).unwrap_or(Cmp::Lex)
}

/// libmdbx's largest sub-page: `((leaf_nodemax - 8) * 65535 + 32767) >> 16`.
fn subpage_limit<W: TreeWriter + ?Sized>(w: &W) -> usize {
    ((w.limits().leaf_nodemax - NODESIZE) * 65535 + 32767) >> 16
}

// Inline: called, it returned the `Repr` (a `Tree` inside, 56 bytes) through
// memory, written field by field and read back as 16-byte words by the
// caller; a load that spans several stores waits for them to retire (a
// failed store-to-load forward). On the AMD EPYC VM (forty-third session)
// that was 8% of the time of the benchmark's multimap prune walk.
#[inline(always)]
fn read_repr<W: TreeWriter + ?Sized>(w: &W, t: &View, lpg: u32, idx: usize) -> Result<Repr> {
    let pages = w.pages();
    let leaf = Page { buf: pages.get(lpg)? };
    let n = node::node(leaf, idx, lpg)?;
    Ok(match n.flags {
        0 => {
            if t.flags.contains(DbFlags::DUP_FIXED) && n.data.len() as u32 != t.tree.dupfix_size {
                return Err(Error::corrupted(lpg, "value size differs from the table's DUPFIXED size"));
            }
            Repr::Plain
        }
        N_DUP => {
            let sp = Page { buf: n.data };
            super::check_subpage(sp, lpg)?;
            // DUPFIXED tables keep packed items of their value size.
            let dupfix = t.flags.contains(DbFlags::DUP_FIXED);
            if sp.is_dupfix() != dupfix || (dupfix && t.tree.dupfix_size != u32::from(sp.dupfix_ksize())) {
                return Err(Error::corrupted(lpg, "sub-page layout does not match the table's value size"));
            }
            Repr::Sub(sp.num_entries())
        }
        f if f == N_DUP | N_TREE && n.data.len() == TREE_SIZE => {
            let nt = Tree::read(n.data);
            let dupfix = t.flags.contains(DbFlags::DUP_FIXED);
            if nt.flags != nested_flags(t.flags) || (dupfix && nt.dupfix_size != t.tree.dupfix_size) {
                return Err(Error::corrupted(lpg, "nested tree flags do not match the table"));
            }
            Repr::Nested(nt)
        }
        _ => return Err(Error::corrupted(lpg, "bad node flags in a DUPSORT table")),
    })
}

/// The value of a key with one value, node `idx` on leaf `lpg` (checked by
/// `read_repr`), read where it lies: copied out only when the key gets a
/// second one.
fn plain_value<'p>(pages: &crate::btree::pages::Pages<'p>, lpg: u32, idx: usize) -> Result<&'p [u8]> {
    let leaf = Page { buf: pages.get(lpg)? };
    Ok(node::node(leaf, idx, lpg)?.data)
}

/// The sub-page of node `idx` on leaf `lpg` (checked by `read_repr`).
fn subpage<'p>(pages: &crate::btree::pages::Pages<'p>, lpg: u32, idx: usize) -> Result<Page<'p>> {
    let leaf = Page { buf: pages.get(lpg)? };
    Ok(Page { buf: node::node(leaf, idx, lpg)?.data })
}

/// The values of a sub-page, decoded (only to build a nested tree).
fn subpage_values(sp: Page<'_>, host: u32) -> Result<Vec<Vec<u8>>> {
    (0..sp.num_entries()).map(|i| key_at(sp, i, host).map(<[u8]>::to_vec)).collect()
}

/// Bytes one value takes in a sub-page.
fn item_size(dupfix: bool, vlen: usize) -> usize {
    if dupfix {
        vlen
    } else {
        2 + NODESIZE + even_ceil(vlen)
    }
}

/// A compact copy of sub-page `sp` (no free space, as libmdbx and
/// `build_subpage` lay it out) with `extra` free bytes between the entry array
/// and the nodes, for one more item. Entries that point outside the node area
/// of `sp` are reported as corruption of the host page.
fn subpage_copy(sp: Page<'_>, extra: usize, host: u32) -> Result<Vec<u8>> {
    let mut buf = Vec::new();
    subpage_copy_into(sp, extra, host, &mut buf)?;
    Ok(buf)
}

/// [`subpage_copy`] into `buf` (its contents replaced; a buffer the write
/// transaction keeps, so the copy allocates nothing once it has grown).
fn subpage_copy_into(sp: Page<'_>, extra: usize, host: u32, buf: &mut Vec<u8>) -> Result<()> {
    let n = sp.num_entries();
    let (lower, upper);
    buf.clear();
    if sp.is_dupfix() {
        let k = sp.dupfix_ksize() as usize;
        let items = sp.buf.get(PAGEHDRSZ..PAGEHDRSZ + n * k).ok_or_else(|| Error::corrupted(host, "bad sub-page"))?;
        buf.resize(PAGEHDRSZ + items.len() + extra, 0);
        fpage::init_page(buf, host, pflags::SUBPAGE_DUPFIX, 0);
        fpage::set_dupfix_ksize(buf, k as u16);
        buf[PAGEHDRSZ..PAGEHDRSZ + items.len()].copy_from_slice(items);
        (lower, upper) = (2 * n, 2 * n + extra);
    } else {
        let old_upper = sp.upper();
        let area = sp.buf.get(PAGEHDRSZ + old_upper..).ok_or_else(|| Error::corrupted(host, "bad sub-page bounds"))?;
        let size = PAGEHDRSZ + 2 * n + extra + area.len();
        buf.resize(size, 0);
        fpage::init_page(buf, host, pflags::SUBPAGE_LEAF, 0);
        fpage::set_dupfix_ksize(buf, 0xFFFF);
        (lower, upper) = (2 * n, size - PAGEHDRSZ - area.len());
        buf[PAGEHDRSZ + upper..].copy_from_slice(area);
        check_subpage_nodes(sp, host)?;
        for j in 0..n {
            let e = u16_at(sp.buf, PAGEHDRSZ + 2 * j) as usize;
            put_u16(buf, PAGEHDRSZ + 2 * j, (e - old_upper + upper) as u16);
        }
    }
    fpage::set_lower(buf, lower);
    fpage::set_upper(buf, upper);
    Ok(())
}

/// Checks that every node of a (node, not DUPFIX) sub-page that passed
/// `check_subpage` lies in its node area, padding included: copies that
/// rebase every entry rely on it. Sub-page nodes carry their value as the
/// key and no data; the size is computed as `node::stored_size` does.
fn check_subpage_nodes(sp: Page<'_>, host: u32) -> Result<()> {
    (0..sp.num_entries()).try_for_each(|j| check_subpage_node(sp, j, host))
}

/// Checks that node `j` of a sub-page that passed `check_subpage` lies in
/// its node area, padding included: removing it in place moves the bytes
/// from the start of the node area to its end and adds its size to the
/// entries below it, which needs nothing of the other nodes.
#[inline]
fn check_subpage_node(sp: Page<'_>, j: usize, host: u32) -> Result<()> {
    let (len, upper) = (sp.buf.len(), sp.upper());
    let e = u16_at(sp.buf, PAGEHDRSZ + 2 * j) as usize;
    let at = PAGEHDRSZ + e;
    let fits = e >= upper && at + NODESIZE <= len && {
        let ksize = u16_at(sp.buf, at + 6) as usize;
        let dsize = if sp.buf[at + 4] & node::N_BIG != 0 { 4 } else { u32_at(sp.buf, at) as usize };
        at + node::leaf_size(ksize, dsize) <= len
    };
    if fits {
        Ok(())
    } else {
        Err(Error::corrupted(host, "sub-page node outside its node area"))
    }
}

/// A compact copy of a checked sub-page (spare room dropped), for the
/// compacting copy of a database.
pub(crate) fn compact_subpage(sp: Page<'_>, host: u32) -> Result<Vec<u8>> {
    subpage_copy(sp, 0, host)
}

/// Drops the free space of a sub-page made by `subpage_copy` after a removal
/// (the nodes move down to the entry array; DUPFIX items are already packed).
fn subpage_squeeze(buf: &mut Vec<u8>) {
    let p = Page { buf };
    let (n, lower, upper) = (p.num_entries(), p.lower(), p.upper());
    let gap = upper - lower;
    if !p.is_dupfix() {
        buf.copy_within(PAGEHDRSZ + upper.., PAGEHDRSZ + lower);
        let gap16 = gap as u16;
        node::map_entries(buf, n, |e| e.wrapping_sub(gap16));
    }
    buf.truncate(buf.len() - gap);
    fpage::set_upper(buf, lower);
}

/// A sub-page holding `vals` (sorted), exactly sized.
fn build_subpage(vals: &[Vec<u8>], dupfix: bool, host: u32) -> Vec<u8> {
    let mut buf = Vec::new();
    build_subpage_into(&mut buf, vals, dupfix, host);
    buf
}

/// [`build_subpage`] into `buf` (its contents replaced).
fn build_subpage_into<V: AsRef<[u8]>>(buf: &mut Vec<u8>, vals: &[V], dupfix: bool, host: u32) {
    let size = if dupfix {
        PAGEHDRSZ + vals.len() * vals[0].as_ref().len()
    } else {
        PAGEHDRSZ + vals.iter().map(|v| 2 + NODESIZE + even_ceil(v.as_ref().len())).sum::<usize>()
    };
    buf.clear();
    buf.resize(size, 0);
    fpage::init_page(buf, host, if dupfix { pflags::SUBPAGE_DUPFIX } else { pflags::SUBPAGE_LEAF }, 0);
    fpage::set_dupfix_ksize(buf, if dupfix { vals[0].as_ref().len() as u16 } else { 0xFFFF });
    for (i, v) in vals.iter().enumerate() {
        write::p_insert_sized(buf, i, v.as_ref(), 0, 0, &[]);
    }
}

/// Node content (header size, flags, bytes) for a key holding `vals`: a plain
/// node, a sub-page, or a new nested tree. Adds nested-tree pages to `tree`.
fn content_for<W: TreeWriter + ?Sized>(
    w: &mut W,
    t: &View,
    tree: &mut Tree,
    key: &[u8],
    vals: &[Vec<u8>],
    host: u32,
) -> Result<(u32, u8, Vec<u8>)> {
    let lim = w.limits();
    if vals.len() == 1 && lim.fits_inline(key.len(), vals[0].len()) {
        return Ok((vals[0].len() as u32, 0, vals[0].clone()));
    }
    let dupfix = t.flags.contains(DbFlags::DUP_FIXED);
    if vals.len() > 1 {
        let sp = build_subpage(vals, dupfix, host);
        if sp.len() <= subpage_limit(w) && NODESIZE + even_ceil(key.len() + sp.len()) <= lim.leaf_nodemax {
            return Ok((sp.len() as u32, N_DUP, sp));
        }
    }
    let nt = nested_build(w, t, vals)?;
    tree.inc_branch(nt.branch_pages, host)?;
    tree.inc_leaf(nt.leaf_pages, host)?;
    Ok((TREE_SIZE as u32, N_DUP | N_TREE, nt.to_bytes().to_vec()))
}

fn nested_empty<W: TreeWriter + ?Sized>(w: &W, t: &View, vlen: usize) -> Tree {
    let mut nt = Tree::empty(nested_flags(t.flags));
    if t.flags.contains(DbFlags::DUP_FIXED) {
        nt.dupfix_size = vlen as u32;
    }
    nt.mod_txnid = w.txnid();
    nt
}

fn nested_build<W: TreeWriter + ?Sized>(w: &mut W, t: &View, vals: &[Vec<u8>]) -> Result<Tree> {
    let mut nt = nested_empty(w, t, vals[0].len());
    for v in vals {
        nested_insert(w, t, &mut nt, v)?;
    }
    Ok(nt)
}

/// Inserts `val` into a nested tree; false if present.
fn nested_insert<W: TreeWriter + ?Sized>(w: &mut W, t: &View, nt: &mut Tree, val: &[u8]) -> Result<bool> {
    let cmp = dup_cmp(t);
    if nt.root == P_INVALID {
        let dupfix = t.flags.contains(DbFlags::DUP_FIXED);
        let pg = w.new_page(if dupfix { pflags::LEAF | pflags::DUPFIX } else { pflags::LEAF })?;
        if dupfix {
            fpage::set_dupfix_ksize(w.dirty_mut(pg), val.len() as u16);
        }
        write::p_insert(w.dirty_mut(pg), 0, val, 0, 0, &[])?;
        *nt = Tree { root: pg, height: 1, leaf_pages: 1, branch_pages: 0, items: 1, mod_txnid: w.txnid(), ..*nt };
        return Ok(true);
    }
    let mut path = Path::new();
    let exact = find_path(w, nt, val, cmp, &mut path)?;
    if exact {
        return Ok(false);
    }
    let rightmost = is_rightmost(w, &path)?;
    touch_path(w, nt, &mut path)?;
    let (leaf, idx) = (path.leaf(), path.at(path.leaf()).1);
    nt.inc_items(1, path.at(leaf).0)?;
    insert_at(w, nt, &path, leaf, idx, val, 0, 0, &[], Some(rightmost))?;
    nt.mod_txnid = w.txnid();
    Ok(true)
}

fn nested_last<W: TreeWriter + ?Sized>(w: &W, t: &View, nt: &Tree) -> Result<Option<Vec<u8>>> {
    let mut c = super::cursor::Cursor::new(w.pages(), nt.root, nt.height, dup_cmp(t));
    Ok(c.last()?.map(|p| p.0.to_vec()))
}

fn check_value<W: TreeWriter + ?Sized>(w: &W, t: &View, tree: &Tree, val: &[u8]) -> Result<()> {
    let max = w.limits().max_value(t.flags);
    if val.len() > max {
        return Err(Error::BadValSize(format!("multimap value of {} bytes exceeds the maximum of {max}", val.len())));
    }
    if t.flags.contains(DbFlags::INTEGER_DUP) && val.len() != 4 && val.len() != 8 {
        return Err(Error::BadValSize(format!("INTEGER_DUP values are 4 or 8 bytes, got {}", val.len())));
    }
    if t.flags.contains(DbFlags::DUP_FIXED) {
        if val.len() < 2 && !t.flags.contains(DbFlags::INTEGER_DUP) {
            return Err(Error::BadValSize("DUP_FIXED values are at least 2 bytes".into()));
        }
        if tree.dupfix_size != 0 && tree.dupfix_size as usize != val.len() {
            return Err(Error::BadValSize(format!(
                "this DUP_FIXED table holds {}-byte values, got {}",
                tree.dupfix_size,
                val.len()
            )));
        }
    }
    Ok(())
}

/// Writes `nt` back into the (dirty) host node at `path`'s leaf.
fn store_nested<W: TreeWriter + ?Sized>(w: &mut W, path: &Path, nt: &Tree) {
    let (lpg, idx) = path.at(path.leaf());
    // (One look-up of the page: a multimap prune walk does this per value.)
    let buf = w.dirty_mut(lpg);
    let (off, _) = node::value_range(buf, idx);
    nt.write(&mut buf[off..off + TREE_SIZE]);
}

/// Replaces the node at `path`'s leaf with new content for the same key.
fn replace_node<W: TreeWriter + ?Sized>(
    w: &mut W,
    tree: &mut Tree,
    path: &Path,
    key: &[u8],
    c: (u32, u8, &[u8]),
) -> Result<()> {
    let (lpg, idx) = path.at(path.leaf());
    write::p_remove(w.dirty_mut(lpg), idx);
    // Whether the node is at the tree's right edge is read if the leaf
    // splits: a key growing there (a multimap loaded in key order) splits
    // off alone, as an append does, and the leaf it leaves stays full
    // (split in the middle, such a load took 28 pages where libmdbx's
    // takes 21).
    insert_at(w, tree, path, path.leaf(), idx, key, c.0, c.1, c.2, None)
}

/// Frees a key's values (its nested tree pages); returns how many values it had.
fn drop_values<W: TreeWriter + ?Sized>(w: &mut W, tree: &mut Tree, r: &Repr, host: u32) -> Result<u64> {
    Ok(match r {
        Repr::Plain => 1,
        Repr::Sub(n) => *n as u64,
        Repr::Nested(nt) => {
            let mut runs = Vec::new();
            let flags = DbFlags::from_bits_truncate(tree.flags as u32);
            write::collect_pages(w, nt, super::walk::Kind::Nested, flags, Some(host), &mut runs)?;
            for (pg, n) in runs {
                w.free(pg, n);
            }
            tree.dec_branch(nt.branch_pages, host)?;
            tree.dec_leaf(nt.leaf_pages, host)?;
            nt.items
        }
    })
}

/// Adds `val` to the values of `key`.
pub(crate) fn put<W: TreeWriter + ?Sized>(w: &mut W, db: W::Db, key: &[u8], val: &[u8], flags: PutFlags) -> Result<()> {
    let t = w.table(db)?;
    let mut tree = t.tree;
    check_value(w, &t, &tree, val)?;
    let dcmp = dup_cmp(&t);
    // The value as a one-value list, for the paths that build a node other
    // than a plain one (made there: a new key's inline value and adding to
    // an existing key's sub-page allocate nothing).
    let one = || [val.to_vec()];
    if tree.root == P_INVALID {
        if flags.contains(PutFlags::CURRENT) {
            return Err(Error::NotFound);
        }
        let pg = w.new_page(pflags::LEAF)?;
        if w.limits().fits_inline(key.len(), val.len()) {
            node::insert(w.dirty_mut(pg), 0, key, val.len() as u32, 0, val);
        } else {
            let c = content_for(w, &t, &mut tree, key, &one(), pg)?;
            node::insert(w.dirty_mut(pg), 0, key, c.0, c.1, &c.2);
        }
        tree.inc_leaf(1, pg)?;
        tree = Tree { root: pg, height: 1, items: 1, ..tree };
        return done(w, db, tree, &t, val);
    }
    let mut path = Path::new();
    let exact = find_path(w, &tree, key, t.cmp, &mut path)?;
    let (lpg, idx) = path.at(path.leaf());
    if t.cmp == Cmp::Int {
        let k0 = key_at(Page { buf: w.pages().get(lpg)? }, 0, lpg)?.len();
        if k0 != key.len() {
            return Err(Error::BadValSize(format!("INTEGER_KEY table uses {k0}-byte keys, got {}", key.len())));
        }
    }
    if !exact {
        if flags.contains(PutFlags::CURRENT) {
            return Err(Error::NotFound);
        }
        if flags.contains(PutFlags::APPEND) {
            let n = Page { buf: w.pages().get(lpg)? }.num_entries();
            if idx != n || !is_rightmost(w, &path)? {
                return Err(Error::KeyMismatch("APPEND with a key less than the last key"));
            }
        }
        let rightmost = is_rightmost(w, &path)?;
        touch_path(w, &mut tree, &mut path)?;
        let lpg = path.at(path.leaf()).0;
        tree.inc_items(1, lpg)?;
        if w.limits().fits_inline(key.len(), val.len()) {
            // A new key's one value, as in a plain table (nothing is
            // allocated: `content_for` returns a copy).
            insert_at(w, &mut tree, &path, path.leaf(), idx, key, val.len() as u32, 0, val, Some(rightmost))?;
        } else {
            let c = content_for(w, &t, &mut tree, key, &one(), lpg)?;
            insert_at(w, &mut tree, &path, path.leaf(), idx, key, c.0, c.1, &c.2, Some(rightmost))?;
        }
        return done(w, db, tree, &t, val);
    }
    if flags.contains(PutFlags::NO_OVERWRITE) {
        return Err(Error::KeyExist);
    }
    if flags.contains(PutFlags::APPEND) {
        // The key exists: APPEND is only right when it is the last key.
        let n = Page { buf: w.pages().get(lpg)? }.num_entries();
        if idx + 1 != n || !is_rightmost(w, &path)? {
            return Err(Error::KeyMismatch("APPEND with a key less than the last key"));
        }
    }
    let repr = read_repr(w, &t, lpg, idx)?;
    if flags.intersects(PutFlags::ALL_DUPS | PutFlags::CURRENT) {
        touch_path(w, &mut tree, &mut path)?;
        let lpg = path.at(path.leaf()).0;
        let n = drop_values(w, &mut tree, &repr, lpg)?;
        tree.dec_items(n, lpg)?;
        tree.inc_items(1, lpg)?;
        let c = content_for(w, &t, &mut tree, key, &one(), lpg)?;
        replace_node(w, &mut tree, &path, key, (c.0, c.1, &c.2))?;
        return done(w, db, tree, &t, val);
    }
    let exists_or_append = |found: std::result::Result<usize, usize>, n: usize| -> Result<Option<usize>> {
        match found {
            Ok(_) if flags.contains(PutFlags::NO_DUP_DATA) => Err(Error::KeyExist),
            Ok(_) if flags.contains(PutFlags::APPEND_DUP) => {
                Err(Error::KeyMismatch("APPEND_DUP with a value not greater than the last value"))
            }
            Ok(_) => Ok(None),
            Err(pos) => {
                if flags.contains(PutFlags::APPEND_DUP) && pos != n {
                    return Err(Error::KeyMismatch("APPEND_DUP with a value less than the last value"));
                }
                Ok(Some(pos))
            }
        }
    };
    let added = match repr {
        Repr::Plain => {
            let found = match dcmp.cmp(plain_value(&w.pages(), lpg, idx)?, val) {
                std::cmp::Ordering::Less => Err(1),
                std::cmp::Ordering::Equal => Ok(0),
                std::cmp::Ordering::Greater => Err(0),
            };
            let Some(pos) = exists_or_append(found, 1)? else { return Ok(()) };
            // The key's second value: its two values go into a sub-page,
            // built in a kept buffer (a nested tree if that is too large).
            let dupfix = t.flags.contains(DbFlags::DUP_FIXED);
            let (limit, nodemax) = (subpage_limit(w), w.limits().leaf_nodemax);
            let mut buf = w.take_bytes();
            let r = (|| {
                let fits = {
                    let old = plain_value(&w.pages(), lpg, idx)?;
                    let two = if pos == 0 { [val, old] } else { [old, val] };
                    build_subpage_into(&mut buf, &two, dupfix, lpg);
                    buf.len() <= limit && NODESIZE + even_ceil(key.len() + buf.len()) <= nodemax
                };
                if fits {
                    touch_path(w, &mut tree, &mut path)?;
                    fpage::set_pgno(&mut buf, path.at(path.leaf()).0);
                    replace_node(w, &mut tree, &path, key, (buf.len() as u32, N_DUP, &buf))
                } else {
                    let mut vals = vec![plain_value(&w.pages(), lpg, idx)?.to_vec()];
                    vals.insert(pos, val.to_vec());
                    rebuild(w, &t, &mut tree, &mut path, key, &vals)
                }
            })();
            w.keep_bytes(buf);
            r?;
            true
        }
        Repr::Sub(_) => add_to_subpage(w, &t, &mut tree, &mut path, key, val, &exists_or_append)?,
        Repr::Nested(mut nt) => {
            if super::get(&w.pages(), nt.root, nt.height, val, dcmp)?.is_some() {
                return if flags.contains(PutFlags::NO_DUP_DATA) {
                    Err(Error::KeyExist)
                } else if flags.contains(PutFlags::APPEND_DUP) {
                    Err(Error::KeyMismatch("APPEND_DUP with a value not greater than the last value"))
                } else {
                    Ok(())
                };
            }
            if flags.contains(PutFlags::APPEND_DUP) {
                if let Some(last) = nested_last(w, &t, &nt)? {
                    if dcmp.cmp(val, &last).is_le() {
                        return Err(Error::KeyMismatch("APPEND_DUP with a value less than the last value"));
                    }
                }
            }
            touch_path(w, &mut tree, &mut path)?;
            let old = nt;
            nested_insert(w, &t, &mut nt, val)?;
            tree.follow_nested(&old, &nt, path.at(path.leaf()).0)?;
            store_nested(w, &path, &nt);
            true
        }
    };
    if !added {
        return Ok(());
    }
    tree.inc_items(1, path.at(path.leaf()).0)?;
    done(w, db, tree, &t, val)
}

/// Where a new value goes among a key's `n` sorted values, given the search
/// result (`Ok(i)`: found at `i`, `Err(i)`: belongs at `i`); `None` when it is
/// there already and that is not an error.
type Position<'a> = dyn Fn(std::result::Result<usize, usize>, usize) -> Result<Option<usize>> + 'a;

/// Replaces the node of `key` with one holding `vals` (a sub-page or, past the
/// limit, a nested tree).
fn rebuild<W: TreeWriter + ?Sized>(
    w: &mut W,
    t: &View,
    tree: &mut Tree,
    path: &mut Path,
    key: &[u8],
    vals: &[Vec<u8>],
) -> Result<()> {
    touch_path(w, tree, path)?;
    let lpg = path.at(path.leaf()).0;
    let c = content_for(w, t, tree, key, vals, lpg)?;
    replace_node(w, tree, path, key, (c.0, c.1, &c.2))
}

/// Adds `val` to a key whose values are in a sub-page: a copy of the sub-page
/// with the value inserted replaces it, or a nested tree when the bigger
/// sub-page would pass libmdbx's limit. Returns false when the value was
/// already there.
#[allow(clippy::too_many_arguments)]
fn add_to_subpage<W: TreeWriter + ?Sized>(
    w: &mut W,
    t: &View,
    tree: &mut Tree,
    path: &mut Path,
    key: &[u8],
    val: &[u8],
    position: &Position<'_>,
) -> Result<bool> {
    let (lpg, idx) = path.at(path.leaf());
    let dupfix = t.flags.contains(DbFlags::DUP_FIXED);
    let (limit, nodemax) = (subpage_limit(w), w.limits().leaf_nodemax);
    // Where the value goes and how: in place, into a grown copy (`Some`), or
    // into a nested tree (`None`).
    let (pos, copy) = {
        let pages = w.pages();
        let sp = subpage(&pages, lpg, idx)?;
        let n = sp.num_entries();
        let (i, exact) = super::search_leaf(sp, val, dup_cmp(t), lpg)?;
        let Some(pos) = position(if exact { Ok(i) } else { Err(i) }, n)? else { return Ok(false) };
        let add = item_size(dupfix, val.len());
        let leaf = pages.get(lpg)?;
        if let Some(g) = in_place_growth(leaf, idx, sp, add, limit, nodemax) {
            touch_path(w, tree, path)?;
            let lpg = path.at(path.leaf()).0;
            insert_in_place(w.dirty_mut(lpg), lpg, idx, pos, val, g);
            return Ok(true);
        }
        let compact = PAGEHDRSZ
            + if sp.is_dupfix() {
                n * sp.dupfix_ksize() as usize
            } else {
                2 * n + sp.buf.len() - PAGEHDRSZ - sp.upper()
            };
        let size = compact + add;
        (pos, (size <= limit && NODESIZE + even_ceil(key.len() + size) <= nodemax).then_some(add))
    };
    let Some(add) = copy else {
        let mut vals = subpage_values(subpage(&w.pages(), lpg, idx)?, lpg)?;
        vals.insert(pos, val.to_vec());
        rebuild(w, t, tree, path, key, &vals)?;
        return Ok(true);
    };
    let mut buf = w.take_bytes();
    let r = (|| {
        subpage_copy_into(subpage(&w.pages(), lpg, idx)?, add, lpg, &mut buf)?;
        write::p_insert(&mut buf, pos, val, 0, 0, &[])?;
        touch_path(w, tree, path)?;
        fpage::set_pgno(&mut buf, path.at(path.leaf()).0);
        replace_node(w, tree, path, key, (buf.len() as u32, N_DUP, &buf))
    })();
    w.keep_bytes(buf);
    r.map(|()| true)
}

/// The smallest page size at which a sub-page of nodes that grows where it
/// lies gets spare room for the next values. libmdbx keeps none (only up to
/// 5 items in a DUPFIX sub-page while its leaf is 42% empty), and neither
/// does rdbx on smaller pages, where growing moves at most a few KiB of
/// the leaf: with spare room at 4 KiB pages, 300 keys of 12 values loaded
/// in key order took 44 pages, libmdbx's 35 (`tests/layout.rs`), for no
/// gain in the benchmark's multimap put. At 64 KiB pages a growth moves
/// half a leaf, 32 KiB, on average: without spare room that row fell
/// from 1.74x libmdbx's rate to 1.28x (writemap; pwrite 2.09x to 1.63x).
const SPARE_MIN_PAGE: usize = 16 * 1024;

/// How a sub-page can take one more item where it lies in its leaf.
#[derive(Clone, Copy, Debug)]
enum Growth {
    /// The sub-page has free room: insert, nothing moves in the leaf.
    None,
    /// The node grows by `delta` bytes (the leaf has the room) and the
    /// sub-page by `add`.
    Grow { delta: usize, add: usize },
}

/// Whether node `idx` of `leaf` (its sub-page `sp`, already checked by
/// `read_repr`) can take an item of `add` bytes in place, and how. `None` when
/// the copying path must do it: a full leaf, a sub-page past libmdbx's limit,
/// a DUPFIX sub-page with free space (its bookkeeping is left to the copy), or
/// anything unusual in the leaf (entries outside its node area, a node whose
/// padding leaves the page), which the copying path then reports.
fn in_place_growth(leaf: &[u8], idx: usize, sp: Page<'_>, add: usize, limit: usize, nodemax: usize) -> Option<Growth> {
    let lp = Page { buf: leaf };
    let (llower, lupper) = (lp.lower(), lp.upper());
    if (0..lp.num_entries()).any(|j| lp.entry(j) < lupper) {
        return None;
    }
    let p = PAGEHDRSZ + lp.entry(idx);
    let ksize = u16_at(leaf, p + 6) as usize;
    let dsize = sp.buf.len();
    if p + NODESIZE + even_ceil(ksize + dsize) > leaf.len() {
        return None;
    }
    let (n, lower, upper) = (sp.num_entries(), sp.lower(), sp.upper());
    let free = if sp.is_dupfix() { dsize - PAGEHDRSZ - n * sp.dupfix_ksize() as usize } else { upper - lower };
    if sp.is_dupfix() {
        if free != 0 || upper != lower {
            return None;
        }
    } else if free >= add {
        return Some(Growth::None);
    }
    let room = lupper - llower;
    let delta = even_ceil(ksize + dsize + add) - even_ceil(ksize + dsize);
    let fits = dsize + add <= limit && NODESIZE + even_ceil(ksize + dsize + add) <= nodemax && delta <= room;
    // Node items move with the sub-page header by `delta`, so their offsets
    // shift by exactly the growth only when the two are equal.
    let items_ok = sp.is_dupfix() || delta == add;
    if !(fits && items_ok) {
        return None;
    }
    if sp.is_dupfix() || leaf.len() < SPARE_MIN_PAGE {
        return Some(Growth::Grow { delta, add });
    }
    // Spare room for the next values of this key, on big pages only (see
    // `SPARE_MIN_PAGE`): a quarter of the sub-page, at most 1/32 of a page,
    // and only while the leaf stays at least a quarter empty and the
    // sub-page under its limits. Later values then join without moving the
    // leaf's nodes.
    let spare = (dsize / 4)
        .min(leaf.len() / 32)
        .min(limit - (dsize + add))
        .min((nodemax - NODESIZE).saturating_sub(ksize + dsize + add + 1))
        .min(room.saturating_sub(add + leaf.len() / 4))
        & !1;
    Some(Growth::Grow { delta: add + spare, add: add + spare })
}

/// Inserts `val` at `pos` into the sub-page of node `idx` of `leaf` where it
/// lies, as `in_place_growth` allowed. Growing moves the leaf's nodes below
/// this one down by `delta`, then the node's header, key and the sub-page's
/// header and entries (or packed items); the sub-page's nodes stay where they
/// are, behind a gap that is now `add` bytes larger (the new item and any
/// spare room).
fn insert_in_place(leaf: &mut [u8], host: u32, idx: usize, pos: usize, val: &[u8], g: Growth) {
    let lp = Page { buf: leaf };
    let ptr = lp.entry(idx);
    let p = PAGEHDRSZ + ptr;
    let ksize = u16_at(leaf, p + 6) as usize;
    let dsize = u32_at(leaf, p) as usize;
    let s = p + NODESIZE + ksize;
    let Growth::Grow { delta, add } = g else {
        let sub = &mut leaf[s..s + dsize];
        fpage::set_pgno(sub, host);
        write::p_insert_sized(sub, pos, val, 0, 0, &[]);
        return;
    };
    let (nleaf, lupper) = (lp.num_entries(), lp.upper());
    let sp = Page { buf: &leaf[s..s + dsize] };
    let (n, dupfix) = (sp.num_entries(), sp.is_dupfix());
    let front = PAGEHDRSZ + if dupfix { n * sp.dupfix_ksize() as usize } else { 2 * n };
    // The leaf: nodes below this one move down.
    leaf.copy_within(PAGEHDRSZ + lupper..p, PAGEHDRSZ + lupper - delta);
    let (ptr16, delta16) = (ptr as u16, delta as u16);
    node::map_entries(leaf, nleaf, |e| if e <= ptr16 { e.wrapping_sub(delta16) } else { e });
    fpage::set_upper(leaf, lupper - delta);
    // This node: header, key, sub-page header and entries move down.
    leaf.copy_within(p..s + front, p - delta);
    let (p, s) = (p - delta, s - delta);
    crate::format::put_u32(leaf, p, (dsize + add) as u32);
    let sub = &mut leaf[s..s + dsize + add];
    let (lower, upper) = (Page { buf: sub }.lower(), Page { buf: sub }.upper());
    if !dupfix {
        let add16 = add as u16;
        node::map_entries(sub, n, |e| e.wrapping_add(add16));
    }
    fpage::set_upper(sub, upper + add);
    debug_assert_eq!(Page { buf: sub }.upper() - lower, if dupfix { add } else { upper - lower + add });
    fpage::set_pgno(sub, host);
    write::p_insert_sized(sub, pos, val, 0, 0, &[]);
}

/// Whether item `pos` can leave sub-page `sp` where it lies: the freed bytes
/// become spare room of the sub-page (the node keeps its size, the leaf is
/// untouched) as long as at least half of the sub-page stays in use;
/// otherwise the copying path shrinks the node.
fn remove_in_place_ok(sp: Page<'_>, pos: usize, host: u32) -> Result<bool> {
    let (len, n) = (sp.buf.len(), sp.num_entries());
    let (free, item) = if sp.is_dupfix() {
        let k = sp.dupfix_ksize() as usize;
        (len - PAGEHDRSZ - n * k, k)
    } else {
        check_subpage_node(sp, pos, host)?;
        (sp.upper() - sp.lower(), 2 + node::stored_size(sp.buf, pos))
    };
    Ok(2 * (free + item) <= len - PAGEHDRSZ)
}

/// Removes value `pos` of the sub-page of the node `path` leads to where
/// it lies (`remove_in_place_ok` said so), its path copied on write first
/// (`tree` the table's descriptor); the leaf's page, now this
/// transaction's copy.
fn remove_in_place_at<W: TreeWriter + ?Sized>(w: &mut W, tree: &mut Tree, path: &mut Path, pos: usize) -> Result<u32> {
    touch_path(w, tree, path)?;
    let (lpg, idx) = path.at(path.leaf());
    remove_in_place(w.dirty_mut(lpg), lpg, idx, pos);
    Ok(lpg)
}

/// Removes item `pos` from the sub-page of node `idx` of `leaf` where it
/// lies (`remove_in_place_ok` said so).
fn remove_in_place(leaf: &mut [u8], host: u32, idx: usize, pos: usize) {
    let p = PAGEHDRSZ + Page { buf: leaf }.entry(idx);
    let ksize = u16_at(leaf, p + 6) as usize;
    let dsize = u32_at(leaf, p) as usize;
    let s = p + NODESIZE + ksize;
    let sub = &mut leaf[s..s + dsize];
    fpage::set_pgno(sub, host);
    write::p_remove(sub, pos);
}

/// Removes the node `path` leads to (its key and values) from the table
/// whose descriptor is `tree`, its leaf already this transaction's copy.
fn remove_node<W: TreeWriter + ?Sized>(w: &mut W, tree: &mut Tree, path: &mut Path) -> Result<bool> {
    let leaf = path.leaf();
    write::remove_at(w, tree, path, leaf)
}

/// How a delete left a multimap: whether its trees kept their shape (the
/// paths, their pages moved to this transaction's copies, still lead to
/// where the value was: on its successor among the key's values, or one
/// past the end of its page of values), and whether the key went with its
/// last value (the table's path then leads to where the key was: on the
/// next key, or one past its leaf's end).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Removed {
    pub(crate) kept: bool,
    pub(crate) key_gone: bool,
}

/// Removes the key `path` leads to with its values (`repr`) from the table
/// whose descriptor is `tree`; whether the tree kept its shape.
fn del_key_at<W: TreeWriter + ?Sized>(w: &mut W, tree: &mut Tree, path: &mut Path, repr: &Repr) -> Result<bool> {
    touch_path(w, tree, path)?;
    let lpg = path.at(path.leaf()).0;
    let n = drop_values(w, tree, repr, lpg)?;
    tree.dec_items(n, lpg)?;
    Ok(!remove_node(w, tree, path)?)
}

/// Removes value `pos` of the `n` in the sub-page of the key `key` that
/// `path` leads to, in the table whose descriptor is `tree`: in place when
/// it can go so ([`remove_in_place_ok`]), else through a shrunk copy of
/// the sub-page, and with the key when it is the last.
fn del_subpage_value<W: TreeWriter + ?Sized>(
    w: &mut W,
    tree: &mut Tree,
    path: &mut Path,
    key: &[u8],
    n: usize,
    pos: usize,
) -> Result<Removed> {
    if n == 1 {
        return Ok(Removed { kept: del_key_at(w, tree, path, &Repr::Sub(1))?, key_gone: true });
    }
    let (lpg, idx) = path.at(path.leaf());
    tree.dec_items(1, lpg)?;
    if remove_in_place_ok(subpage(&w.pages(), lpg, idx)?, pos, lpg)? {
        remove_in_place_at(w, tree, path, pos)?;
        return Ok(Removed { kept: true, key_gone: false });
    }
    // A shrunk copy replaces the sub-page, built in a kept buffer. (It is
    // smaller than the node it replaces, so the leaf takes it at once.)
    let mut buf = w.take_bytes();
    let r = (|| {
        subpage_copy_into(subpage(&w.pages(), lpg, idx)?, 0, lpg, &mut buf)?;
        write::p_remove(&mut buf, pos);
        subpage_squeeze(&mut buf);
        touch_path(w, tree, path)?;
        fpage::set_pgno(&mut buf, path.at(path.leaf()).0);
        replace_node(w, tree, path, key, (buf.len() as u32, N_DUP, &buf))?;
        // A smaller node may leave the leaf underfull.
        let leaf = path.leaf();
        rebalance(w, tree, path, leaf)
    })();
    w.keep_bytes(buf);
    Ok(Removed { kept: !r?, key_gone: false })
}

/// Removes the value `inner` leads to from `nt`, the nested tree of the key
/// `path` leads to, in the table whose descriptor is `tree` (both paths as
/// searches find them, nothing changed since); the key goes with its last
/// value.
fn del_nested_at<W: TreeWriter + ?Sized>(
    w: &mut W,
    tree: &mut Tree,
    path: &mut Path,
    mut nt: Tree,
    inner: &mut Path,
) -> Result<Removed> {
    let lpg = path.at(path.leaf()).0;
    tree.dec_items(1, lpg)?;
    touch_path(w, tree, path)?;
    let old = nt;
    let leaf = inner.leaf();
    nt.dec_items(1, inner.at(leaf).0)?;
    touch_path(w, &mut nt, inner)?;
    let changed = write::remove_at(w, &mut nt, inner, leaf)?;
    nt.mod_txnid = w.txnid();
    let lpg = path.at(path.leaf()).0;
    tree.follow_nested(&old, &nt, lpg)?;
    if nt.root == P_INVALID {
        // Its last value: the emptied tree's root is freed already.
        return Ok(Removed { kept: !remove_node(w, tree, path)?, key_gone: true });
    }
    store_nested(w, path, &nt);
    Ok(Removed { kept: !changed, key_gone: false })
}

/// Deletes the multimap value a write cursor's mark stands on, where it
/// lies: `path` leads to its key `key` in the multimap `db`, `inner` to the
/// value among the key's values (none for a key of one plain value; a
/// sub-page's one level, whose page is the key's leaf; or the levels of
/// its nested tree): what searches find, nothing changed since. `None`,
/// nothing changed, when the paths do not fit the key's values (the caller
/// then deletes by search); else how the delete left the trees, the paths
/// moved to this transaction's copies (and for a sub-page, `inner`'s page
/// to the key's leaf).
pub(crate) fn del_at_mark<W: TreeWriter + ?Sized>(
    w: &mut W,
    db: W::Db,
    path: &mut Path,
    inner: &mut Path,
    key: &[u8],
) -> Result<Option<Removed>> {
    let t = w.table(db)?;
    let mut tree = t.tree;
    let (lpg, idx) = path.at(path.leaf());
    let repr = read_repr(w, &t, lpg, idx)?;
    let r = match repr {
        Repr::Plain if inner.len == 0 => Removed { kept: del_key_at(w, &mut tree, path, &repr)?, key_gone: true },
        Repr::Sub(n) if inner.len == 1 && inner.at(0).1 < n => {
            let r = del_subpage_value(w, &mut tree, path, key, n, inner.at(0).1)?;
            inner.set_pgno(0, path.at(path.leaf()).0);
            r
        }
        Repr::Nested(nt) if inner.len > 0 && inner.len == nt.height as usize && inner.at(0).0 == nt.root => {
            del_nested_at(w, &mut tree, path, nt, inner)?
        }
        _ => return Ok(None),
    };
    write::finish(w, db, tree);
    Ok(Some(r))
}

/// Deletes the multimap key a write cursor's mark stands on (`path` leads
/// to it, nothing changed since) with all its values; whether the tree
/// kept its shape (the path, moved to this transaction's copies, then
/// leads to where the key was).
pub(crate) fn del_key_at_mark<W: TreeWriter + ?Sized>(w: &mut W, db: W::Db, path: &mut Path) -> Result<bool> {
    let t = w.table(db)?;
    let mut tree = t.tree;
    let (lpg, idx) = path.at(path.leaf());
    let repr = read_repr(w, &t, lpg, idx)?;
    let kept = del_key_at(w, &mut tree, path, &repr)?;
    write::finish(w, db, tree);
    Ok(kept)
}

fn done<W: TreeWriter + ?Sized>(w: &mut W, db: W::Db, mut tree: Tree, t: &View, val: &[u8]) -> Result<()> {
    if t.flags.contains(DbFlags::DUP_FIXED) && tree.dupfix_size == 0 {
        tree.dupfix_size = val.len() as u32;
    }
    write::finish(w, db, tree);
    Ok(())
}

/// Deletes one value (`Some`) or all values (`None`) of `key`.
pub(crate) fn del<W: TreeWriter + ?Sized>(w: &mut W, db: W::Db, key: &[u8], val: Option<&[u8]>) -> Result<bool> {
    let t = w.table(db)?;
    let mut tree = t.tree;
    if tree.root == P_INVALID {
        return Ok(false);
    }
    let dcmp = dup_cmp(&t);
    let mut path = Path::new();
    let exact = find_path(w, &tree, key, t.cmp, &mut path)?;
    if !exact {
        return Ok(false);
    }
    let (lpg, idx) = path.at(path.leaf());
    let repr = read_repr(w, &t, lpg, idx)?;
    let Some(val) = val else {
        del_key_at(w, &mut tree, &mut path, &repr)?;
        write::finish(w, db, tree);
        return Ok(true);
    };
    // One value goes, once it is known to be there.
    match repr {
        Repr::Plain => {
            if !dcmp.cmp(plain_value(&w.pages(), lpg, idx)?, val).is_eq() {
                return Ok(false);
            }
            del_key_at(w, &mut tree, &mut path, &repr)?;
        }
        Repr::Sub(n) => {
            let (pos, exact) = super::search_leaf(subpage(&w.pages(), lpg, idx)?, val, dcmp, lpg)?;
            if !exact {
                return Ok(false);
            }
            del_subpage_value(w, &mut tree, &mut path, key, n, pos)?;
        }
        Repr::Nested(nt) => {
            let mut inner = Path::new();
            if nt.root == P_INVALID || !find_path(w, &nt, val, dcmp, &mut inner)? {
                return Ok(false);
            }
            del_nested_at(w, &mut tree, &mut path, nt, &mut inner)?;
        }
    }
    write::finish(w, db, tree);
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::btree::check_subpage;

    fn vals(n: usize, len: impl Fn(usize) -> usize) -> Vec<Vec<u8>> {
        (0..n).map(|i| format!("{i:04}").into_bytes().into_iter().cycle().take(len(i).max(4)).collect()).collect()
    }

    /// Values, size and header of a sub-page (node order in the node area may
    /// differ between equivalent sub-pages).
    fn shape(sp: &[u8]) -> (Vec<Vec<u8>>, usize, usize, usize, u16, u16) {
        let p = Page { buf: sp };
        check_subpage(p, 7).unwrap();
        (subpage_values(p, 7).unwrap(), sp.len(), p.lower(), p.upper(), p.flags(), p.dupfix_ksize())
    }

    /// Inserting or removing through a copy gives the sub-page that building
    /// it from the new value list gives: same values, size and header.
    #[test]
    fn subpage_edits_match_a_fresh_build() {
        for dupfix in [false, true] {
            let all = if dupfix { vals(40, |_| 8) } else { vals(40, |i| 4 + i % 7) };
            for n in 1..all.len() {
                let have: Vec<Vec<u8>> =
                    all.iter().take(n + 1).enumerate().filter(|(i, _)| *i != n / 2).map(|x| x.1.clone()).collect();
                let sp = build_subpage(&have, dupfix, 7);
                let add = &all[n / 2];
                let mut grown = subpage_copy(Page { buf: &sp }, item_size(dupfix, add.len()), 7).unwrap();
                write::p_insert(&mut grown, n / 2, add, 0, 0, &[]).unwrap();
                let want: Vec<Vec<u8>> = all.iter().take(n + 1).cloned().collect();
                assert_eq!(shape(&grown), shape(&build_subpage(&want, dupfix, 7)), "insert, dupfix {dupfix}, n {n}");

                let mut shrunk = subpage_copy(Page { buf: &grown }, 0, 7).unwrap();
                write::p_remove(&mut shrunk, n / 2);
                subpage_squeeze(&mut shrunk);
                assert_eq!(shape(&shrunk), shape(&sp), "remove, dupfix {dupfix}, n {n}");
            }
        }
    }

    /// A leaf of `ps` bytes with plain nodes around a sub-page node (key
    /// `"k05"`) holding `vals`, plus the index of that node.
    fn leaf_with(ps: usize, vals: &[Vec<u8>], dupfix: bool, slack: usize) -> (Vec<u8>, usize) {
        let mut leaf = vec![0u8; ps];
        fpage::init_page(&mut leaf, 40, pflags::LEAF, 1);
        let mut sp = build_subpage(vals, dupfix, 40);
        if slack > 0 {
            // Free room between the entries and the nodes, as libmdbx may leave.
            let mut loose = subpage_copy(Page { buf: &sp }, slack, 40).unwrap();
            loose.truncate(loose.len());
            sp = loose;
        }
        for (i, k) in ["k01", "k03", "k05", "k07", "k09"].iter().enumerate() {
            if *k == "k05" {
                node::insert(&mut leaf, i, k.as_bytes(), sp.len() as u32, N_DUP, &sp);
            } else {
                node::insert(&mut leaf, i, k.as_bytes(), 11, 0, b"plain-value");
            }
        }
        (leaf, 2)
    }

    /// Keys, node flags and values (sub-page values decoded) of a leaf.
    fn leaf_shape(leaf: &[u8]) -> Vec<(Vec<u8>, u8, Vec<Vec<u8>>)> {
        let p = Page { buf: leaf };
        p.check_tree_page(40, u64::MAX).unwrap();
        (0..p.num_entries())
            .map(|i| {
                let n = node::node(p, i, 40).unwrap();
                let vals = if n.flags == N_DUP {
                    let sp = Page { buf: n.data };
                    check_subpage(sp, 40).unwrap();
                    subpage_values(sp, 40).unwrap()
                } else {
                    vec![n.data.to_vec()]
                };
                (n.key.to_vec(), n.flags, vals)
            })
            .collect()
    }

    /// Growing a sub-page where it lies gives the leaf the copying path
    /// gives: same keys, same values, valid pages; and the leaf's free room
    /// shrinks by exactly the growth.
    #[test]
    fn in_place_insert_matches_the_copying_path() {
        for dupfix in [false, true] {
            for vlen in [2usize, 3, 4, 7, 8] {
                if dupfix && vlen < 2 {
                    continue;
                }
                for n in 1..12 {
                    for slack in if dupfix { vec![0] } else { vec![0, 6, 40] } {
                        let all: Vec<Vec<u8>> = (0..=n).map(|i| vec![b'a' + i as u8; vlen]).collect();
                        for skip in 0..=n {
                            let have: Vec<Vec<u8>> =
                                all.iter().enumerate().filter(|(i, _)| *i != skip).map(|x| x.1.clone()).collect();
                            let (leaf, idx) = leaf_with(1024, &have, dupfix, slack);
                            let add = item_size(dupfix, vlen);
                            let sp = Page { buf: node::node(Page { buf: &leaf }, idx, 40).unwrap().data };
                            let g = in_place_growth(&leaf, idx, sp, add, 4096, 4096).unwrap_or_else(|| {
                                panic!("no in-place growth: dupfix {dupfix} vlen {vlen} n {n} slack {slack}")
                            });
                            let mut grown = leaf.clone();
                            insert_in_place(&mut grown, 40, idx, skip, &all[skip], g);
                            let mut want = leaf_shape(&leaf);
                            want[idx].2 = all.clone();
                            assert_eq!(leaf_shape(&grown), want, "dupfix {dupfix} vlen {vlen} n {n} slack {slack}");
                            let room = |b: &[u8]| Page { buf: b }.room();
                            let grew = match g {
                                Growth::None => 0,
                                Growth::Grow { delta, .. } => delta,
                            };
                            assert_eq!(room(&leaf) - room(&grown), grew);
                        }
                    }
                }
            }
        }
    }

    /// Removing a value where it lies keeps the other values and the leaf's
    /// layout (the node keeps its size), for node and DUPFIX sub-pages.
    #[test]
    fn in_place_remove_keeps_the_rest() {
        for dupfix in [false, true] {
            for n in 2..10usize {
                let vals: Vec<Vec<u8>> = (0..n).map(|i| vec![b'a' + i as u8; 6]).collect();
                for pos in 0..n {
                    let (leaf, idx) = leaf_with(1024, &vals, dupfix, 0);
                    let sp = Page { buf: node::node(Page { buf: &leaf }, idx, 40).unwrap().data };
                    assert!(remove_in_place_ok(sp, pos, 40).unwrap(), "a compact sub-page stays half used");
                    let mut after = leaf.clone();
                    remove_in_place(&mut after, 40, idx, pos);
                    // A second removal from three values would leave it mostly empty.
                    let sp2 = Page { buf: node::node(Page { buf: &after }, idx, 40).unwrap().data };
                    if n == 3 {
                        assert!(!remove_in_place_ok(sp2, 0, 40).unwrap(), "dupfix {dupfix}");
                    }
                    let mut want = leaf_shape(&leaf);
                    want[idx].2.remove(pos);
                    assert_eq!(leaf_shape(&after), want, "dupfix {dupfix} n {n} pos {pos}");
                    assert_eq!(Page { buf: &after }.room(), Page { buf: &leaf }.room());
                }
            }
        }
    }

    /// No in-place growth without room in the leaf, past the sub-page limit,
    /// or with a stray leaf entry.
    #[test]
    fn in_place_growth_declines() {
        let vals: Vec<Vec<u8>> = (0..5).map(|i| vec![b'a' + i; 6]).collect();
        let (leaf, idx) = leaf_with(1024, &vals, false, 0);
        let sp = |l: &[u8]| node::node(Page { buf: l }, idx, 40).unwrap().data.to_vec();
        let s = sp(&leaf);
        assert!(in_place_growth(&leaf, idx, Page { buf: &s }, 16, s.len() + 15, 4096).is_none(), "limit");
        let (small, _) = leaf_with(256, &vals, false, 0);
        let s2 = sp(&small);
        let room = Page { buf: &small }.room();
        assert!(in_place_growth(&small, idx, Page { buf: &s2 }, room + 2, 4096, 4096).is_none(), "room");
        let mut stray = leaf.clone();
        put_u16(&mut stray, PAGEHDRSZ, 2);
        assert!(in_place_growth(&stray, idx, Page { buf: &s }, 16, 4096, 4096).is_none(), "stray entry");
    }

    /// A sub-page with free space (as libmdbx may leave one) is compacted.
    #[test]
    fn subpage_copy_compacts_free_space() {
        let v = vals(5, |i| 4 + i);
        let exact = build_subpage(&v, false, 3);
        // The same sub-page with 10 spare bytes between the entries and the nodes.
        let mut spare = vec![0u8; exact.len() + 10];
        spare[..PAGEHDRSZ + 10].copy_from_slice(&exact[..PAGEHDRSZ + 10]);
        spare[PAGEHDRSZ + 10 + 10..].copy_from_slice(&exact[PAGEHDRSZ + 10..]);
        for j in 0..5 {
            let e = Page { buf: &exact }.entry(j);
            put_u16(&mut spare, PAGEHDRSZ + 2 * j, (e + 10) as u16);
        }
        fpage::set_upper(&mut spare, Page { buf: &exact }.upper() + 10);
        assert_eq!(subpage_copy(Page { buf: &spare }, 0, 3).unwrap(), exact);
    }

    /// Entries that point outside the node area are corruption, not a panic.
    #[test]
    fn subpage_copy_rejects_stray_entries() {
        let v = vals(6, |_| 6);
        let sp = build_subpage(&v, false, 9);
        let upper = Page { buf: &sp }.upper();
        for bad in [0usize, upper - 2, sp.len() - PAGEHDRSZ - 4, sp.len(), 0xFFFF] {
            let mut b = sp.clone();
            put_u16(&mut b, PAGEHDRSZ + 2 * 3, bad as u16);
            match subpage_copy(Page { buf: &b }, 18, 9) {
                Err(Error::Corrupted { page, .. }) => assert_eq!(page, 9),
                other => panic!("entry {bad:#x}: {other:?}"),
            }
        }
    }
}
