//! Consistent copies of a database from one read snapshot (`mdbx_copy`):
//!
//! * as-is: pages `[3, first_unallocated)` of the snapshot are copied
//!   unchanged (GC included) and fresh metas make that snapshot the head;
//! * compacting: the trees of the snapshot are walked and written densely to
//!   the start of the new file with renumbered pages; free pages and the GC
//!   are dropped, so the copy is as small as the data allows.
//!
//! Writers may go on meanwhile: the read transaction keeps the snapshot's
//! pages from being reused. The copy is a single data file (no lock file);
//! its pages are written and synced before its metas.

use std::fs::{File, OpenOptions};
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

use crate::env::Env;
use crate::error::{Error, Result};
use crate::flags::DbFlags;
use crate::format::meta::{pv2pages, Meta, MetaGeo, SIGN_STEADY};
use crate::format::node::{N_BIG, N_DUP, N_TREE};
use crate::format::page::{flags as pflags, Page};
use crate::format::tree::{Tree, TREE_SIZE};
use crate::format::{put_u32, NODESIZE, NUM_METAS, PAGEHDRSZ, P_INVALID};
use crate::os::file;

/// How to copy.
#[derive(Debug, Clone, Default)]
pub struct CopyOptions {
    /// Compact: only live pages, renumbered densely; the GC is dropped.
    pub compact: bool,
    /// Replace an existing destination file.
    pub overwrite: bool,
    /// Give the copy a dynamic geometry (lower bound at the minimum).
    pub force_dynamic: bool,
}

/// Progress of a copy.
#[derive(Debug, Clone, Copy)]
pub struct CopyProgress {
    /// Pages written so far.
    pub done: u64,
    /// Pages to write (compact: an upper bound).
    pub total: u64,
}

/// What a copy did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CopyStats {
    /// Snapshot copied.
    pub txnid: u64,
    /// Pages allocated in the source snapshot.
    pub source_pages: u64,
    /// Pages allocated in the copy.
    pub copy_pages: u64,
    /// Size of the copy in bytes.
    pub file_size: u64,
}

const OS_PAGE: u64 = 4096;

/// Metas 0 and 1 of a copy: the pristine "empty database" metas libmdbx also
/// writes (txnids below the copied one), meta 2 the snapshot itself.
fn write_metas(out: &File, snap: &Meta, ps: usize) -> Result<()> {
    let t = snap.txnid();
    for i in 0..2u32 {
        let mut m = snap.clone();
        let tx = t.saturating_sub(2 - i as u64);
        m.txnid_a = tx;
        m.txnid_b = tx;
        m.sign = SIGN_STEADY;
        m.gc = Tree { dupfix_size: ps as u32, ..Tree::empty(DbFlags::INTEGER_KEY.bits() as u16) };
        m.main = Tree::empty(snap.main.flags);
        m.canary = [0; 4];
        m.pages_retired = 0;
        m.geo.first_unallocated = NUM_METAS;
        file::pwrite_all(out, &[&m.page(i, ps)], i as u64 * ps as u64)?;
    }
    let mut m = snap.clone();
    m.sign = SIGN_STEADY;
    m.bootid = crate::bootid::boot_id();
    file::pwrite_all(out, &[&m.page(2, ps)], 2 * ps as u64)?;
    Ok(())
}

fn create_dst(dst: &Path, overwrite: bool) -> Result<File> {
    if dst.is_dir() {
        return Err(Error::Io(std::io::Error::new(
            std::io::ErrorKind::AlreadyExists,
            format!("{}: is a directory (the copy is a single data file)", dst.display()),
        )));
    }
    let mut o = OpenOptions::new();
    o.write(true).read(true).mode(0o640).custom_flags(libc::O_CLOEXEC);
    if overwrite {
        o.create(true).truncate(true);
    } else {
        o.create_new(true);
    }
    o.open(dst).map_err(|e| Error::Io(std::io::Error::new(e.kind(), format!("{}: {e}", dst.display()))))
}

/// Geometry `now` of a compacted copy: the allocated pages rounded up to the
/// growth step (libmdbx's `compacting_fixup_meta`).
fn fixup_now(geo: &mut MetaGeo, ps: usize) {
    let unit = (OS_PAGE as usize / ps).max(1) as u32;
    let mut now = geo.first_unallocated;
    let aligner = pv2pages(if geo.grow_pv != 0 { geo.grow_pv } else { geo.shrink_pv });
    if aligner != 0 {
        let x = geo.first_unallocated as u64 + aligner as u64 - geo.first_unallocated as u64 % aligner as u64;
        now = (x.div_ceil(unit as u64) * unit as u64).min(u32::MAX as u64) as u32;
    }
    now = now.max(geo.lower).min(geo.upper).max(geo.first_unallocated);
    geo.now = now;
}

fn make_sizeable(geo: &mut MetaGeo) {
    use crate::format::meta::pages2pv;
    geo.lower = NUM_METAS;
    if geo.grow_pv == 0 {
        geo.grow_pv = pages2pv(1 + (geo.upper - geo.lower) / 42);
    }
    if geo.shrink_pv == 0 {
        geo.shrink_pv = pages2pv(pv2pages(geo.grow_pv) << 1);
    }
}

/// A tree being written densely: leaves are filled to capacity in key order,
/// then branch levels are built bottom-up from the first keys of their children.
struct Builder {
    txnid: u64,
    /// Leaf page flags (0x02, or 0x22 for leaves of nested DUPFIXED trees).
    leaf_flags: u16,
    /// Item size of DUPFIX leaves.
    dupfix: usize,
    cur: Option<(Vec<u8>, Vec<u8>)>,
    leaves: Vec<(Vec<u8>, u32)>,
    /// Pages of nested trees (counted into this tree's descriptor).
    nested_branch: u32,
    nested_leaf: u32,
    large: u32,
}

/// Densely packing compactor.
struct Packer<'a> {
    src: &'a [u8],
    ps: usize,
    limit: u32,
    out: &'a File,
    next: u32,
    visited: Vec<bool>,
    progress: &'a mut dyn FnMut(CopyProgress),
    total: u64,
}

impl<'a> Packer<'a> {
    fn page(&self, pgno: u32) -> Result<&'a [u8]> {
        if pgno < NUM_METAS || pgno >= self.limit {
            return Err(Error::corrupted(pgno, "page number outside the allocated pages"));
        }
        let off = pgno as usize * self.ps;
        self.src.get(off..off + self.ps).ok_or_else(|| Error::corrupted(pgno, "page beyond the end of the file"))
    }

    fn visit(&mut self, pgno: u32, n: u32) -> Result<()> {
        for p in pgno..pgno.saturating_add(n) {
            let v = self
                .visited
                .get_mut(p as usize)
                .ok_or_else(|| Error::corrupted(p, "page number outside the allocated pages"))?;
            if *v {
                return Err(Error::corrupted(p, "page is used twice (the source is corrupted; run chk)"));
            }
            *v = true;
        }
        Ok(())
    }

    fn alloc(&mut self, n: u32) -> u32 {
        let p = self.next;
        self.next += n;
        if self.next as u64 % 256 < n as u64 {
            (self.progress)(CopyProgress { done: self.next as u64, total: self.total.max(self.next as u64) });
        }
        p
    }

    fn write(&self, pgno: u32, buf: &[u8]) -> Result<()> {
        file::pwrite_all(self.out, &[buf], pgno as u64 * self.ps as u64)?;
        Ok(())
    }

    /// The leaves of a source tree in key order (branches validated, pages marked).
    fn source_leaves(&mut self, root: u32, height: u16) -> Result<Vec<u32>> {
        if height == 0 || height as usize > crate::btree::MAX_DEPTH {
            return Err(Error::corrupted(root, "tree height is invalid"));
        }
        let mut out = Vec::new();
        let mut stack = vec![(root, 1usize)];
        while let Some((pgno, depth)) = stack.pop() {
            self.visit(pgno, 1)?;
            let p = Page { buf: self.page(pgno)? };
            p.check_tree_page(pgno, u64::MAX)?;
            if p.is_leaf() != (depth == height as usize) {
                return Err(Error::corrupted(pgno, "leaf at a depth that differs from the tree height"));
            }
            if p.is_leaf() {
                out.push(pgno);
                continue;
            }
            for i in (0..p.num_entries()).rev() {
                stack.push((crate::btree::child_at(p, i, pgno)?, depth + 1));
            }
        }
        Ok(out)
    }

    fn new_builder(&self, txnid: u64, leaf_flags: u16, dupfix: usize) -> Builder {
        Builder { txnid, leaf_flags, dupfix, cur: None, leaves: Vec::new(), nested_branch: 0, nested_leaf: 0, large: 0 }
    }

    fn flush(&mut self, b: &mut Builder) -> Result<()> {
        if let Some((mut buf, first)) = b.cur.take() {
            let pgno = self.alloc(1);
            crate::format::page::set_pgno(&mut buf, pgno);
            self.write(pgno, &buf)?;
            b.leaves.push((first, pgno));
        }
        Ok(())
    }

    fn fresh_leaf(&self, b: &Builder, first: &[u8]) -> (Vec<u8>, Vec<u8>) {
        let mut buf = vec![0u8; self.ps];
        crate::format::page::init_page(&mut buf, 0, b.leaf_flags, b.txnid);
        if b.dupfix != 0 {
            crate::format::put_u16(&mut buf, 8, b.dupfix as u16);
        }
        (buf, first.to_vec())
    }

    /// Appends a leaf node (key order is the caller's).
    fn add_node(&mut self, b: &mut Builder, key: &[u8], hdr: u32, flags: u8, data: &[u8]) -> Result<()> {
        let size = NODESIZE + crate::format::even_ceil(key.len() + data.len());
        if size + 2 > self.ps - PAGEHDRSZ {
            return Err(Error::corrupted(0, "a node is larger than a page"));
        }
        if let Some((buf, _)) = &b.cur {
            let p = Page { buf };
            if p.room() < size + 2 {
                self.flush(b)?;
            }
        }
        if b.cur.is_none() {
            b.cur = Some(self.fresh_leaf(b, key));
        }
        let (buf, _) = b.cur.as_mut().expect("a current leaf");
        let n = Page { buf }.num_entries();
        crate::format::node::insert(buf, n, key, hdr, flags, data);
        Ok(())
    }

    /// Appends an item to a DUPFIX leaf.
    fn add_item(&mut self, b: &mut Builder, item: &[u8]) -> Result<()> {
        if item.len() != b.dupfix || item.is_empty() {
            return Err(Error::corrupted(0, "DUPFIX item of a wrong size"));
        }
        if let Some((buf, _)) = &b.cur {
            if (Page { buf }).room() < item.len() {
                self.flush(b)?;
            }
        }
        if b.cur.is_none() {
            b.cur = Some(self.fresh_leaf(b, item));
        }
        let (buf, _) = b.cur.as_mut().expect("a current leaf");
        let n = Page { buf }.num_entries();
        crate::format::node::dupfix_insert(buf, n, item);
        Ok(())
    }

    /// Writes the branch levels; returns (root, height, branch pages, leaf pages).
    fn finish(&mut self, b: &mut Builder) -> Result<(u32, u16, u32, u32)> {
        self.flush(b)?;
        let leaves = b.leaves.len() as u32;
        if leaves == 0 {
            return Ok((P_INVALID, 0, 0, 0));
        }
        let mut level = std::mem::take(&mut b.leaves);
        let mut height = 1u16;
        let mut branches = 0u32;
        let cap = self.ps - PAGEHDRSZ;
        while level.len() > 1 {
            // Group children greedily; node 0 of a branch has an empty key.
            let mut groups: Vec<std::ops::Range<usize>> = Vec::new();
            let (mut start, mut used) = (0usize, NODESIZE + 2);
            for (i, child) in level.iter().enumerate().skip(1) {
                let sz = NODESIZE + crate::format::even_ceil(child.0.len()) + 2;
                if used + sz > cap {
                    groups.push(start..i);
                    start = i;
                    used = NODESIZE + 2;
                } else {
                    used += sz;
                }
            }
            groups.push(start..level.len());
            // A branch needs two children: borrow one, or merge into the previous page
            // (three children always fit: one has an empty key).
            let g = groups.len();
            if g > 1 && groups[g - 1].len() == 1 {
                if groups[g - 2].len() >= 3 {
                    groups[g - 2].end -= 1;
                    groups[g - 1].start -= 1;
                } else {
                    let last = groups.pop().expect("two groups");
                    groups[g - 2].end = last.end;
                }
            }
            let mut up = Vec::with_capacity(groups.len());
            for r in groups {
                let pgno = self.alloc(1);
                let mut buf = vec![0u8; self.ps];
                crate::format::page::init_page(&mut buf, pgno, crate::format::page::flags::BRANCH, b.txnid);
                for (j, child) in level[r.clone()].iter().enumerate() {
                    let key: &[u8] = if j == 0 { &[] } else { &child.0 };
                    if (Page { buf: &buf }).room() < NODESIZE + crate::format::even_ceil(key.len()) + 2 {
                        return Err(Error::Problem("branch page overflow while compacting".into()));
                    }
                    crate::format::node::insert(&mut buf, j, key, child.1, 0, &[]);
                }
                self.write(pgno, &buf)?;
                branches += 1;
                up.push((level[r.start].0.clone(), pgno));
            }
            level = up;
            height += 1;
        }
        Ok((level[0].1, height, branches, leaves))
    }

    /// Copies a large chunk; returns its new head page.
    fn copy_large(&mut self, big: u32, dsize: usize, txnid: u64, b: &mut Builder) -> Result<u32> {
        let head = Page { buf: self.page(big)? };
        if head.flags() != pflags::LARGE || head.pgno() != big {
            return Err(Error::corrupted(big, "large value points to a page that is not a large page"));
        }
        let cnt = head.large_count();
        let need = (PAGEHDRSZ + dsize).div_ceil(self.ps) as u32;
        if cnt == 0 || big as u64 + cnt as u64 > self.limit as u64 || need > cnt {
            return Err(Error::corrupted(big, "large chunk has a bad page count"));
        }
        self.visit(big, cnt)?;
        let off = big as usize * self.ps;
        // Only the pages the value needs are written.
        let mut chunk = self
            .src
            .get(off..off + need as usize * self.ps)
            .ok_or_else(|| Error::corrupted(big, "large chunk beyond the end of the file"))?
            .to_vec();
        let nb = self.alloc(need);
        put_u32(&mut chunk, 12, need);
        put_u32(&mut chunk, 16, nb);
        crate::format::page::set_txnid(&mut chunk, txnid);
        self.write(nb, &chunk)?;
        b.large += need;
        Ok(nb)
    }

    /// Rewrites tree `t` densely; `kind`: 0 main, 1 named table, 2 nested.
    fn pack(&mut self, t: &Tree, kind: u8, flags: DbFlags, txnid: u64) -> Result<Tree> {
        if t.root == P_INVALID {
            return Ok(*t);
        }
        let leaves = self.source_leaves(t.root, t.height)?;
        let dupsort = kind != 2 && flags.contains(DbFlags::DUP_SORT);
        let dupfixed_nested = kind == 2 && flags.contains(DbFlags::DUP_FIXED);
        let mut b = self.new_builder(txnid, if dupfixed_nested { 0x22 } else { pflags::LEAF }, 0);
        let src = self.src;
        let ps = self.ps;
        for leaf in leaves {
            let p = Page { buf: &src[leaf as usize * ps..(leaf as usize + 1) * ps] };
            if p.is_dupfix() != dupfixed_nested {
                return Err(Error::corrupted(leaf, "unexpected leaf page type"));
            }
            if p.is_dupfix() {
                b.dupfix = p.dupfix_ksize() as usize;
                for i in 0..p.num_entries() {
                    let item = crate::btree::key_at(p, i, leaf)?;
                    self.add_item(&mut b, item)?;
                }
                continue;
            }
            for i in 0..p.num_entries() {
                let nd = crate::format::node::node(p, i, leaf)?;
                match nd.flags {
                    0 if kind == 2 => self.add_node(&mut b, nd.key, 0, 0, &[])?,
                    0 => self.add_node(&mut b, nd.key, nd.data.len() as u32, 0, nd.data)?,
                    N_BIG if kind != 2 && !dupsort => {
                        let nb = self.copy_large(nd.big_pgno(), nd.dsize as usize, txnid, &mut b)?;
                        self.add_node(&mut b, nd.key, nd.dsize, N_BIG, &nb.to_le_bytes())?;
                    }
                    N_TREE if kind == 0 && !dupsort => {
                        if nd.data.len() != TREE_SIZE {
                            return Err(Error::corrupted(leaf, "table record has a bad size"));
                        }
                        let sub = Tree::read(nd.data);
                        let tf = DbFlags::from_bits_truncate(sub.flags as u32);
                        let tt = if sub.mod_txnid == 0 { txnid } else { sub.mod_txnid.min(txnid) };
                        let nt = self.pack(&sub, 1, tf, tt)?;
                        self.add_node(&mut b, nd.key, TREE_SIZE as u32, N_TREE, &nt.to_bytes())?;
                    }
                    N_DUP if dupsort => {
                        crate::btree::check_subpage(Page { buf: nd.data }, leaf)?;
                        self.add_node(&mut b, nd.key, nd.data.len() as u32, N_DUP, nd.data)?;
                    }
                    f if f == N_DUP | N_TREE && dupsort => {
                        if nd.data.len() != TREE_SIZE {
                            return Err(Error::corrupted(leaf, "nested tree descriptor has a bad size"));
                        }
                        let sub = Tree::read(nd.data);
                        let mut nt = self.pack(&sub, 2, flags, txnid)?;
                        nt.mod_txnid = sub.mod_txnid.min(txnid);
                        b.nested_branch += nt.branch_pages;
                        b.nested_leaf += nt.leaf_pages;
                        self.add_node(&mut b, nd.key, TREE_SIZE as u32, N_DUP | N_TREE, &nt.to_bytes())?;
                    }
                    _ => return Err(Error::corrupted(leaf, "unexpected node flags")),
                }
            }
        }
        let (root, height, branch, leaf) = self.finish(&mut b)?;
        Ok(Tree {
            root,
            height,
            branch_pages: branch + b.nested_branch,
            leaf_pages: leaf + b.nested_leaf,
            large_pages: b.large,
            ..*t
        })
    }
}

impl Env {
    /// Copies the newest snapshot to the data file `dst` (see the module docs).
    /// `dst` must not exist unless `opts.overwrite`. On failure the partial
    /// destination is removed.
    pub fn copy_to(&self, dst: &Path, opts: &CopyOptions, progress: &mut dyn FnMut(CopyProgress)) -> Result<CopyStats> {
        let out = create_dst(dst, opts.overwrite)?;
        let r = self.copy_into(&out, opts, progress);
        if r.is_err() {
            drop(out);
            let _ = std::fs::remove_file(dst);
        }
        r
    }

    fn copy_into(&self, out: &File, opts: &CopyOptions, progress: &mut dyn FnMut(CopyProgress)) -> Result<CopyStats> {
        let env = &*self.inner;
        let ps = env.page_size;
        let txn = self.begin_ro_txn()?;
        let snap = txn.snap.meta.clone();
        let map = txn.snap.map.clone();
        let alloc = snap.geo.first_unallocated;
        let src = map
            .bytes(0, alloc as usize * ps)
            .ok_or_else(|| Error::corrupted(alloc, "allocated pages beyond the memory map"))?;
        let mut meta = snap.clone();
        if opts.force_dynamic {
            make_sizeable(&mut meta.geo);
        }
        let total = alloc as u64;
        (progress)(CopyProgress { done: 0, total });
        if opts.compact {
            let mut c = Packer {
                src,
                ps,
                limit: alloc,
                out,
                next: NUM_METAS,
                visited: vec![false; alloc as usize],
                progress,
                total,
            };
            let main_flags = DbFlags::from_bits_truncate(snap.main.flags as u32);
            let mt = if snap.main.mod_txnid == 0 { snap.txnid() } else { snap.main.mod_txnid };
            meta.main = c.pack(&snap.main, 0, main_flags, mt)?;
            meta.gc = Tree {
                dupfix_size: ps as u32,
                mod_txnid: snap.gc.mod_txnid.min(snap.txnid()),
                ..Tree::empty(DbFlags::INTEGER_KEY.bits() as u16)
            };
            meta.geo.first_unallocated = c.next;
            let done = c.next as u64;
            (c.progress)(CopyProgress { done, total: done });
            fixup_now(&mut meta.geo, ps);
        } else {
            // Pages 3.. as they are, in large sequential writes.
            let step = 1024usize;
            let mut p = NUM_METAS as usize;
            while p < alloc as usize {
                let n = step.min(alloc as usize - p);
                file::pwrite_all(out, &[&src[p * ps..(p + n) * ps]], (p * ps) as u64)?;
                p += n;
                (progress)(CopyProgress { done: p as u64, total });
            }
            meta.geo.now = meta.geo.now.max(alloc).max(meta.geo.lower).min(meta.geo.upper.max(alloc));
        }
        let size = meta.geo.now as u64 * ps as u64;
        file::set_len(out, size.div_ceil(OS_PAGE) * OS_PAGE)?;
        file::fdatasync(out)?;
        write_metas(out, &meta, ps)?;
        file::fdatasync(out)?;
        drop(txn);
        Ok(CopyStats {
            txnid: snap.txnid(),
            source_pages: alloc as u64,
            copy_pages: meta.geo.first_unallocated as u64,
            file_size: size.div_ceil(OS_PAGE) * OS_PAGE,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{CheckOptions, DbFlags, PutFlags};

    #[test]
    fn copies_check_clean_and_compact_is_smaller() {
        let d = tempfile::tempdir().unwrap();
        let env = Env::builder().max_dbs(4).no_sub_dir(true).open(d.path().join("src")).unwrap();
        let mut txn = env.begin_rw_txn().unwrap();
        let t = txn.create_db(Some("t"), DbFlags::empty()).unwrap();
        let u = txn.create_db(Some("u"), DbFlags::DUP_SORT).unwrap();
        for i in 0u32..5000 {
            txn.put(t, &i.to_be_bytes(), &[i as u8; 100], PutFlags::empty()).unwrap();
            txn.put(u, &(i % 3).to_be_bytes(), &i.to_be_bytes(), PutFlags::empty()).unwrap();
        }
        txn.put(t, b"large", &[1u8; 50_000], PutFlags::empty()).unwrap();
        txn.commit().unwrap();
        let mut txn = env.begin_rw_txn().unwrap();
        let t = txn.open_db(Some("t")).unwrap();
        for i in 0u32..4500 {
            txn.del(t, &i.to_be_bytes(), None).unwrap();
        }
        txn.commit().unwrap();
        let mut sizes = Vec::new();
        for compact in [false, true] {
            let dst = d.path().join(format!("copy-{compact}"));
            let st = env.copy_to(&dst, &CopyOptions { compact, ..Default::default() }, &mut |_| {}).unwrap();
            sizes.push(st.copy_pages);
            assert!(matches!(env.copy_to(&dst, &CopyOptions::default(), &mut |_| {}), Err(Error::Io(_))), "exists");
            let c = Env::builder().max_dbs(4).read_only(true).open(&dst).unwrap();
            let r = c.check(&CheckOptions::default(), &mut |_| {}).unwrap();
            assert_eq!(r.problem_count(), 0, "{compact}: {:?}", r.problems);
            let txn = c.begin_ro_txn().unwrap();
            let t = txn.open_db(Some("t")).unwrap();
            assert_eq!(txn.db_stat(t).unwrap().entries, 501);
            assert_eq!(txn.get(t, b"large").unwrap().map(|v| v.len()), Some(50_000));
            let u = txn.open_db(Some("u")).unwrap();
            assert_eq!(txn.db_stat(u).unwrap().entries, 5000);
            if compact {
                assert_eq!(r.gc_listed_pages, 0);
                assert_eq!(r.walked_pages, r.allocated_pages);
            }
        }
        assert!(sizes[1] < sizes[0], "{sizes:?}");
        // The dense copy takes writes (full pages split) and stays clean.
        let c = Env::builder().max_dbs(4).open(d.path().join("copy-true")).unwrap();
        let mut txn = c.begin_rw_txn().unwrap();
        let t = txn.open_db(Some("t")).unwrap();
        let u = txn.open_db(Some("u")).unwrap();
        for i in 0u32..2000 {
            txn.put(t, &(i * 3 + 1).to_be_bytes(), &[9u8; 60], PutFlags::empty()).unwrap();
            txn.put(u, &1u32.to_be_bytes(), &(100_000 + i).to_be_bytes(), PutFlags::empty()).unwrap();
        }
        txn.commit().unwrap();
        let r = c.check(&CheckOptions::default(), &mut |_| {}).unwrap();
        assert_eq!(r.problem_count(), 0, "{:?}", r.problems);
    }
}
