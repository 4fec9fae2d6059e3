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
//!
//! A copy can also go to a stream (`copy_to_writer`: a pipe, a socket,
//! `mdbx_copy` without a destination), which takes bytes in order only: the
//! metas come first, then the pages in page order (the compactor allocates
//! and writes each page at once, so its writes are sequential), then zeros up
//! to the file size. A compacting copy learns its metas (tree roots, size)
//! only at the end, so it runs twice over the same snapshot: once counting,
//! once writing.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

use crate::btree::walk::{self, Kind, NodeEv, PageEv, Spec, Src, Visitor, Walk};
use crate::env::Env;
use crate::error::{Error, Result};
use crate::flags::DbFlags;
use crate::format::meta::{pv2pages, Meta, MetaGeo, SIGN_STEADY};
use crate::format::node::{N_BIG, N_DUP, N_TREE};
use crate::format::page::{flags as pflags, Page};
use crate::format::tree::{Tree, TREE_SIZE};
use crate::format::{NODESIZE, NUM_METAS, PAGEHDRSZ, P_INVALID};
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
    /// Polled while pages are written: when it becomes true the copy stops
    /// with an `Interrupted` I/O error (and `copy_to` removes the partial
    /// destination), as [`crate::CheckOptions::interrupt`].
    pub interrupt: Option<std::sync::Arc<std::sync::atomic::AtomicBool>>,
}

impl CopyOptions {
    fn check_interrupt(&self) -> Result<()> {
        if self.interrupt.as_ref().is_some_and(|f| f.load(std::sync::atomic::Ordering::Relaxed)) {
            return Err(Error::Io(std::io::Error::new(std::io::ErrorKind::Interrupted, "the copy was interrupted")));
        }
        Ok(())
    }
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

/// Where the pages of a copy go.
enum Sink<'a> {
    /// A data file, written at page offsets.
    File(&'a File),
    /// A stream that takes bytes in order; `pos` is the offset written so far.
    Stream { out: &'a mut dyn Write, pos: u64 },
    /// Nowhere: the counting pass of a compacting copy to a stream.
    Null,
}

impl Sink<'_> {
    fn write(&mut self, bufs: &[&[u8]], off: u64) -> Result<()> {
        match self {
            Sink::File(f) => file::pwrite_all(f, bufs, off)?,
            Sink::Stream { out, pos } => {
                if off != *pos {
                    return Err(Error::Problem(format!("copy to a stream: a write at {off} after {pos} bytes")));
                }
                for b in bufs {
                    out.write_all(b)?;
                    *pos += b.len() as u64;
                }
            }
            Sink::Null => {}
        }
        Ok(())
    }
}

/// The three meta pages of a copy: metas 0 and 1 are "empty database"
/// metas with the two txnids below the copied one (libmdbx writes such
/// metas too, with txnids 1 and 2: either way meta 2 is the head), meta 2
/// the snapshot itself.
fn meta_pages(snap: &Meta, ps: usize) -> Vec<Vec<u8>> {
    let t = snap.txnid();
    let mut pages = Vec::with_capacity(3);
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
        pages.push(m.page(i, ps).to_vec());
    }
    let mut m = snap.clone();
    m.sign = SIGN_STEADY;
    m.bootid = crate::bootid::boot_id();
    pages.push(m.page(2, ps).to_vec());
    pages
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
/// growth step (libmdbx's `compacting_fixup_meta`). `geo.now` is the
/// source's size on entry: libmdbx leaves it alone (within the bounds) when
/// it is already the copy's page count.
fn fixup_now(geo: &mut MetaGeo, ps: usize) {
    let unit = (OS_PAGE as usize / ps).max(1) as u32;
    let mut now = geo.first_unallocated;
    let aligner = pv2pages(if geo.grow_pv != 0 { geo.grow_pv } else { geo.shrink_pv });
    if aligner != 0 && geo.now != geo.first_unallocated {
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

/// A tree being written densely: leaves are filled in key order (to
/// capacity, or a few entries short to start the next at a shorter key:
/// [`hand_on`]), then branch levels are built bottom-up from the first keys
/// of their children.
struct Builder {
    txnid: u64,
    /// Leaf page flags (LEAF, or DUPFIX_LEAF for leaves of nested DUPFIXED trees).
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

/// The last entries of a full leaf `buf` to start the next leaf with,
/// taken off `buf` (as raw node bytes, in order), when the next leaf would
/// otherwise start with a key of `next_key` bytes. The first key of a leaf
/// goes up into the branch above it: a leaf closed a few entries early, so
/// that the next starts at a shorter key, makes the branch levels smaller
/// (a greedy fill starts leaves at whatever key comes, and the longer an
/// entry the likelier it is the one that does not fit, so the branch keys
/// were biased long: a copy of keys of random lengths up to a few KiB came
/// out a level taller than its source). Entries are handed on only when the
/// branch key gets shorter by more bytes than they take in this leaf (the
/// most net bytes wins), so a leaf gives up less room than the branch above
/// saves; with keys of one length nothing is ever handed on. (A vector per
/// early close: a copy allocates a buffer per page anyway.)
fn hand_on(buf: &mut [u8], next_key: usize) -> Vec<Vec<u8>> {
    use crate::format::even_ceil;
    let page = Page { buf: &buf[..] };
    let n = page.num_entries();
    let (mut best, mut best_gain, mut moved) = (0, 0isize, 0usize);
    // Leaf nodes only (a packer's leaves), at least one entry stays.
    for m in 1..n {
        moved += crate::format::node::stored_size(buf, n - m) + 2;
        let key = crate::format::node::key_range(buf, n - m).1;
        let gain = even_ceil(next_key) as isize - even_ceil(key) as isize - moved as isize;
        if moved > even_ceil(next_key) {
            break;
        }
        if gain > best_gain {
            (best, best_gain) = (m, gain);
        }
    }
    let mut out = Vec::with_capacity(best);
    for i in n - best..n {
        let off = PAGEHDRSZ + page.entry(i);
        out.push(buf[off..off + crate::format::node::stored_size(buf, i)].to_vec());
    }
    if best > 0 {
        // The entries were appended in order: the last ones take the lowest
        // bytes of the node area, which they leave as zeros.
        let (lower, upper) = (page.lower(), page.upper());
        let freed: usize = out.iter().map(Vec::len).sum();
        buf[PAGEHDRSZ + upper..PAGEHDRSZ + upper + freed].fill(0);
        crate::format::page::set_lower(buf, lower - 2 * best);
        crate::format::page::set_upper(buf, upper + freed);
    }
    out
}

/// The key of a leaf node given as its raw bytes (`format::node`'s layout).
fn raw_key(raw: &[u8]) -> &[u8] {
    let ksize = u16::from_le_bytes([raw[6], raw[7]]) as usize;
    &raw[NODESIZE..NODESIZE + ksize]
}

/// Densely packing compactor.
struct Packer<'a, 's> {
    /// The source file's pages from `NUM_METAS` on.
    src: &'a [u8],
    ps: usize,
    out: &'a mut Sink<'s>,
    next: u32,
    /// Trees being written: the table, and above it a nested tree being written.
    builders: Vec<Builder>,
    /// The table being written is DUPFIXED (its nested trees have DUPFIX leaves).
    dupfixed: bool,
    progress: &'a mut dyn FnMut(CopyProgress),
    total: u64,
    opts: &'a CopyOptions,
}

impl<'a> Packer<'a, '_> {
    fn alloc(&mut self, n: u32) -> u32 {
        let p = self.next;
        self.next += n;
        if self.next as u64 % 256 < n as u64 {
            (self.progress)(CopyProgress { done: self.next as u64, total: self.total.max(self.next as u64) });
        }
        p
    }

    fn write(&mut self, pgno: u32, buf: &[u8]) -> Result<()> {
        self.opts.check_interrupt()?;
        self.out.write(&[buf], pgno as u64 * self.ps as u64)
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
            crate::format::page::set_dupfix_ksize(&mut buf, b.dupfix as u16);
        }
        (buf, first.to_vec())
    }

    /// Appends a leaf node (key order is the caller's).
    fn add_node(&mut self, b: &mut Builder, key: &[u8], hdr: u32, flags: u8, data: &[u8]) -> Result<()> {
        let size = NODESIZE + crate::format::even_ceil(key.len() + data.len());
        if size + 2 > self.ps - PAGEHDRSZ {
            return Err(Error::corrupted(0, "a node is larger than a page"));
        }
        let mut handed_on = Vec::new();
        if let Some((buf, _)) = &mut b.cur {
            if (Page { buf: &buf[..] }).room() < size + 2 {
                handed_on = hand_on(buf, key.len());
                self.flush(b)?;
            }
        }
        if b.cur.is_none() {
            let first = handed_on.first().map_or(key, |raw| raw_key(raw));
            let mut fresh = self.fresh_leaf(b, first);
            for raw in &handed_on {
                crate::format::node::append_raw(&mut fresh.0, raw);
            }
            b.cur = Some(fresh);
        }
        let (buf, _) = b.cur.as_mut().expect("a current leaf");
        // (Two nodes of the largest size fit in a leaf, and less than one
        // was handed on.)
        if (Page { buf: &buf[..] }).room() < size + 2 {
            return Err(Error::Problem("leaf overflow while compacting".into()));
        }
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

    /// Copies a large chunk (validated by the walk); returns its new head page.
    fn copy_large(&mut self, big: u32, dsize: usize, txnid: u64, b: &mut Builder) -> Result<u32> {
        let need = (PAGEHDRSZ + dsize).div_ceil(self.ps) as u32;
        // `src` starts after the metas.
        let off = (big as usize).saturating_sub(NUM_METAS as usize) * self.ps;
        // Only the pages the value needs are written.
        let mut chunk = self
            .src
            .get(off..off + need as usize * self.ps)
            .filter(|_| big >= NUM_METAS)
            .ok_or_else(|| Error::corrupted(big, "large chunk beyond the end of the file"))?
            .to_vec();
        let nb = self.alloc(need);
        crate::format::page::set_large_count(&mut chunk, need);
        crate::format::page::set_pgno(&mut chunk, nb);
        crate::format::page::set_txnid(&mut chunk, txnid);
        self.write(nb, &chunk)?;
        b.large += need;
        Ok(nb)
    }

    /// Rewrites the tree of `spec` densely with page txnid `txnid`, walking it
    /// with the shared validating walk.
    fn pack(&mut self, w: &mut Walk<'a>, spec: &Spec, txnid: u64) -> Result<Tree> {
        let t = &spec.tree;
        let flags = spec.flags;
        if t.root == P_INVALID {
            return Ok(*t);
        }
        let b = self.new_builder(txnid, pflags::LEAF, 0);
        self.builders.push(b);
        let saved = std::mem::replace(&mut self.dupfixed, flags.contains(DbFlags::DUP_FIXED));
        let r = w.tree(spec, self);
        self.dupfixed = saved;
        let mut b = self.builders.pop().expect("the table's builder");
        r?;
        self.finish_tree(&mut b, t)
    }

    fn finish_tree(&mut self, b: &mut Builder, t: &Tree) -> Result<Tree> {
        let (root, height, branch, leaf) = self.finish(b)?;
        let overflow = || Error::corrupted(t.root, "the table's page counts overflow (damaged nested trees?)");
        Ok(Tree {
            root,
            height,
            branch_pages: branch.checked_add(b.nested_branch).ok_or_else(overflow)?,
            leaf_pages: leaf.checked_add(b.nested_leaf).ok_or_else(overflow)?,
            large_pages: b.large,
            ..*t
        })
    }

    /// Runs `f` on the builder of the tree being written.
    fn with_builder(&mut self, f: impl FnOnce(&mut Self, &mut Builder) -> Result<()>) -> Result<()> {
        let mut b = self.builders.pop().expect("a builder");
        let r = f(self, &mut b);
        self.builders.push(b);
        r
    }
}

impl<'a> Visitor<'a> for Packer<'a, '_> {
    fn page(&mut self, _w: &mut Walk<'a>, ev: &PageEv<'a>) -> Result<()> {
        let p = ev.page;
        if !p.is_dupfix() {
            return Ok(());
        }
        // A leaf of a nested DUPFIXED tree: its items are the values.
        self.with_builder(|c, b| {
            b.dupfix = p.dupfix_ksize() as usize;
            for i in 0..p.num_entries() {
                c.add_item(b, crate::btree::key_at(p, i, ev.pgno)?)?;
            }
            Ok(())
        })
    }

    fn node(&mut self, w: &mut Walk<'a>, ev: &NodeEv<'a>) -> Result<()> {
        let nd = ev.node;
        match nd.flags {
            0 if ev.nested => self.with_builder(|c, b| c.add_node(b, nd.key, 0, 0, &[])),
            0 => self.with_builder(|c, b| c.add_node(b, nd.key, nd.data.len() as u32, 0, nd.data)),
            N_TREE => {
                // A named table (only in the main table; size checked by the walk).
                let sub = Tree::read(nd.data);
                let tf = DbFlags::from_bits_truncate(sub.flags as u32);
                let txnid = self.builders.last().expect("the main builder").txnid;
                let tt = if sub.mod_txnid == 0 { txnid } else { sub.mod_txnid.min(txnid) };
                let spec = Spec { kind: Kind::Table, flags: tf, tree: sub, front: ev.leaf_txnid, host: Some(ev.leaf) };
                let nt = self.pack(w, &spec, tt)?;
                self.with_builder(|c, b| c.add_node(b, nd.key, TREE_SIZE as u32, N_TREE, &nt.to_bytes()))
            }
            // Large values, sub-pages and nested trees come with their own events.
            _ => Ok(()),
        }
    }

    fn large(&mut self, ev: &NodeEv<'a>, head: u32, _pages: u32, _v: &'a [u8]) -> Result<()> {
        let nd = ev.node;
        self.with_builder(|c, b| {
            let nb = c.copy_large(head, nd.dsize as usize, b.txnid, b)?;
            c.add_node(b, nd.key, nd.dsize, N_BIG, &nb.to_le_bytes())
        })
    }

    fn subpage(&mut self, ev: &NodeEv<'a>, sp: Page<'a>) -> Result<()> {
        // Spare room of the sub-page is dropped.
        let sp = crate::btree::dupsort::compact_subpage(sp, ev.leaf)?;
        self.with_builder(|c, b| c.add_node(b, ev.node.key, sp.len() as u32, N_DUP, &sp))
    }

    fn enter(&mut self, _ev: &NodeEv<'a>, _t: &Tree) -> Result<bool> {
        let outer = self.builders.last().expect("the table's builder");
        let dupfixed = self.dupfixed;
        let b = self.new_builder(outer.txnid, if dupfixed { pflags::DUPFIX_LEAF } else { pflags::LEAF }, 0);
        self.builders.push(b);
        Ok(true)
    }

    fn leave(&mut self, ev: &NodeEv<'a>, sub: &Tree, _c: &walk::Counts) -> Result<()> {
        let mut nb = self.builders.pop().expect("the nested builder");
        let mut nt = self.finish_tree(&mut nb, sub)?;
        self.with_builder(|c, b| {
            nt.mod_txnid = sub.mod_txnid.min(b.txnid);
            let overflow = || Error::corrupted(ev.leaf, "nested page counts overflow");
            b.nested_branch = b.nested_branch.checked_add(nt.branch_pages).ok_or_else(overflow)?;
            b.nested_leaf = b.nested_leaf.checked_add(nt.leaf_pages).ok_or_else(overflow)?;
            c.add_node(b, ev.node.key, TREE_SIZE as u32, N_DUP | N_TREE, &nt.to_bytes())
        })
    }
}

impl Env {
    /// Copies the newest snapshot to the data file `dst` (see the module docs).
    /// `dst` must not exist unless `opts.overwrite`. On failure the partial
    /// destination is removed.
    pub fn copy_to(&self, dst: &Path, opts: &CopyOptions, progress: &mut dyn FnMut(CopyProgress)) -> Result<CopyStats> {
        let out = create_dst(dst, opts.overwrite)?;
        let r = self.copy_into_file(&out, opts, progress);
        if r.is_err() {
            drop(out);
            let _ = std::fs::remove_file(dst);
        }
        r
    }

    /// Copies the newest snapshot to a stream, as the bytes of a data file in
    /// order (see the module docs); `opts.overwrite` does not apply. The
    /// stream is flushed, not synced. A failed copy leaves a partial stream
    /// behind: the reader must treat it as lost.
    pub fn copy_to_writer(
        &self,
        out: &mut dyn Write,
        opts: &CopyOptions,
        progress: &mut dyn FnMut(CopyProgress),
    ) -> Result<CopyStats> {
        let txn = self.begin_ro_txn()?;
        let ps = self.inner.page_size;
        let plan = if opts.compact {
            // Counting pass: the metas of the compacted copy.
            Some(self.copy_pages(&txn, &mut Sink::Null, opts, &mut |_| {})?)
        } else {
            None
        };
        let meta = match &plan {
            Some((m, _)) => m.clone(),
            None => self.copy_meta(&txn, opts),
        };
        let metas = meta_pages(&meta, ps);
        let mut sink = Sink::Stream { out, pos: 0 };
        sink.write(&[&metas[0], &metas[1], &metas[2]], 0)?;
        let (written, stats) = self.copy_pages(&txn, &mut sink, opts, progress)?;
        if written.main != meta.main || written.geo != meta.geo {
            return Err(Error::Problem("copy to a stream: the two passes of the compaction differ".into()));
        }
        let Sink::Stream { out, pos } = sink else { unreachable!("a stream sink") };
        let zeros = vec![0u8; 64 * 1024];
        let mut at = pos;
        while at < stats.file_size {
            let n = zeros.len().min((stats.file_size - at) as usize);
            out.write_all(&zeros[..n])?;
            at += n as u64;
        }
        out.flush()?;
        Ok(stats)
    }

    fn copy_into_file(
        &self,
        out: &File,
        opts: &CopyOptions,
        progress: &mut dyn FnMut(CopyProgress),
    ) -> Result<CopyStats> {
        let txn = self.begin_ro_txn()?;
        let ps = self.inner.page_size;
        let (meta, stats) = self.copy_pages(&txn, &mut Sink::File(out), opts, progress)?;
        file::set_len(out, stats.file_size)?;
        file::fdatasync(out)?;
        let metas = meta_pages(&meta, ps);
        for (i, m) in metas.iter().enumerate() {
            file::pwrite_all(out, &[m], (i * ps) as u64)?;
        }
        file::fdatasync(out)?;
        drop(txn);
        Ok(stats)
    }

    /// The meta of an as-is copy of the snapshot of `txn`.
    fn copy_meta(&self, txn: &crate::txn::RoTxn<'_>, opts: &CopyOptions) -> Meta {
        let mut meta = txn.snap.meta.clone();
        let alloc = meta.geo.first_unallocated;
        if opts.force_dynamic {
            make_sizeable(&mut meta.geo);
        }
        meta.geo.now = meta.geo.now.max(alloc).max(meta.geo.lower).min(meta.geo.upper.max(alloc));
        meta
    }

    /// Writes pages 3.. of a copy of the snapshot of `txn` to `sink` in page
    /// order; returns the copy's meta and figures.
    fn copy_pages(
        &self,
        txn: &crate::txn::RoTxn<'_>,
        sink: &mut Sink<'_>,
        opts: &CopyOptions,
        progress: &mut dyn FnMut(CopyProgress),
    ) -> Result<(Meta, CopyStats)> {
        let ps = self.inner.page_size;
        let snap = &txn.snap.meta;
        let alloc = snap.geo.first_unallocated;
        // Pages 3.. only: the metas, which commits rewrite in place, are
        // never borrowed (the copy's metas come from the snapshot's).
        let base = NUM_METAS as usize;
        let src = txn
            .snap
            .map
            .bytes(base * ps, (alloc as usize).saturating_sub(base) * ps)
            .ok_or_else(|| Error::corrupted(alloc, "allocated pages beyond the memory map"))?;
        let total = alloc as u64;
        (progress)(CopyProgress { done: 0, total });
        let meta = if opts.compact {
            let mut meta = snap.clone();
            if opts.force_dynamic {
                make_sizeable(&mut meta.geo);
            }
            let mut c = Packer {
                src,
                ps,
                out: sink,
                next: NUM_METAS,
                builders: Vec::new(),
                dupfixed: false,
                progress,
                total,
                opts,
            };
            let main_flags = DbFlags::from_bits_truncate(snap.main.flags as u32);
            let mt = if snap.main.mod_txnid == 0 { snap.txnid() } else { snap.main.mod_txnid };
            let mut w = Walk::new(Src::File { bytes: src, ps, limit: alloc });
            let spec = Spec { kind: Kind::Main, flags: main_flags, tree: snap.main, front: snap.txnid(), host: None };
            meta.main = c.pack(&mut w, &spec, mt)?;
            meta.gc = Tree {
                dupfix_size: ps as u32,
                mod_txnid: snap.gc.mod_txnid.min(snap.txnid()),
                ..Tree::empty(DbFlags::INTEGER_KEY.bits() as u16)
            };
            meta.geo.first_unallocated = c.next;
            let done = c.next as u64;
            (c.progress)(CopyProgress { done, total: done });
            fixup_now(&mut meta.geo, ps);
            meta
        } else {
            // Pages 3.. as they are, in large sequential writes.
            let step = 1024usize;
            let mut p = NUM_METAS as usize;
            while p < alloc as usize {
                opts.check_interrupt()?;
                let n = step.min(alloc as usize - p);
                sink.write(&[&src[(p - base) * ps..(p - base + n) * ps]], (p * ps) as u64)?;
                p += n;
                (progress)(CopyProgress { done: p as u64, total });
            }
            self.copy_meta(txn, opts)
        };
        let size = (meta.geo.now as u64 * ps as u64).div_ceil(OS_PAGE) * OS_PAGE;
        let stats = CopyStats {
            txnid: snap.txnid(),
            source_pages: alloc as u64,
            copy_pages: meta.geo.first_unallocated as u64,
            file_size: size,
        };
        Ok((meta, stats))
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

    /// An interrupted copy, to a file or to a stream, stops with
    /// `Interrupted`, and a file copy leaves no file behind.
    #[test]
    fn an_interrupted_copy_stops_and_leaves_no_file() {
        let d = tempfile::tempdir().unwrap();
        let env = Env::builder().max_dbs(2).open(d.path().join("src")).unwrap();
        let mut txn = env.begin_rw_txn().unwrap();
        let t = txn.create_db(Some("t"), DbFlags::empty()).unwrap();
        for i in 0u32..3000 {
            txn.put(t, &i.to_be_bytes(), &[7u8; 100], PutFlags::empty()).unwrap();
        }
        txn.commit().unwrap();
        let flag = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        for compact in [false, true] {
            let opts = CopyOptions { compact, interrupt: Some(flag.clone()), ..Default::default() };
            // The callback raises the flag at the first progress report.
            let stop = |_: CopyProgress| flag.store(true, std::sync::atomic::Ordering::Relaxed);
            let dst = d.path().join(format!("copy-{compact}"));
            let e = env.copy_to(&dst, &opts, &mut { stop }).unwrap_err();
            assert!(matches!(e, Error::Io(ref io) if io.kind() == std::io::ErrorKind::Interrupted), "{e:?}");
            assert!(!dst.exists(), "the partial copy is removed");
            let mut sink = Vec::new();
            let e = env.copy_to_writer(&mut sink, &opts, &mut |_| {}).unwrap_err();
            assert!(matches!(e, Error::Io(ref io) if io.kind() == std::io::ErrorKind::Interrupted), "{e:?}");
            flag.store(false, std::sync::atomic::Ordering::Relaxed);
        }
    }

    /// A copy to a stream has exactly the bytes of a copy to a file, as-is
    /// and compacted, with every kind of page (tables, sub-pages, nested
    /// trees, DUPFIX leaves, large values, GC).
    #[test]
    fn a_stream_copy_is_the_file_copy() {
        let d = tempfile::tempdir().unwrap();
        let env = Env::builder().max_dbs(4).open(d.path().join("src")).unwrap();
        let mut txn = env.begin_rw_txn().unwrap();
        let t = txn.create_db(Some("t"), DbFlags::empty()).unwrap();
        let u = txn.create_db(Some("u"), DbFlags::DUP_SORT).unwrap();
        let f = txn.create_db(Some("f"), DbFlags::DUP_SORT | DbFlags::DUP_FIXED).unwrap();
        for i in 0u32..6000 {
            txn.put(t, &i.to_be_bytes(), &[i as u8; 70], PutFlags::empty()).unwrap();
            txn.put(u, &(i % 7).to_be_bytes(), &i.to_be_bytes(), PutFlags::empty()).unwrap();
            txn.put(f, &(i % 400).to_be_bytes(), &u64::from(i).to_be_bytes(), PutFlags::empty()).unwrap();
        }
        txn.put(t, b"large", &[3u8; 30_000], PutFlags::empty()).unwrap();
        txn.commit().unwrap();
        let mut txn = env.begin_rw_txn().unwrap();
        let t = txn.open_db(Some("t")).unwrap();
        for i in (0u32..6000).step_by(3) {
            txn.del(t, &i.to_be_bytes(), None).unwrap();
        }
        txn.commit().unwrap();
        for compact in [false, true] {
            let opts = CopyOptions { compact, ..Default::default() };
            let file = d.path().join(format!("file-{compact}"));
            let by_file = env.copy_to(&file, &opts, &mut |_| {}).unwrap();
            let mut stream = Vec::new();
            let mut last = 0;
            let by_stream = env.copy_to_writer(&mut stream, &opts, &mut |p| last = p.done).unwrap();
            assert_eq!(by_stream, by_file, "compact {compact}");
            assert_eq!(last, by_stream.copy_pages, "progress reaches the end");
            assert_eq!(stream.len() as u64, by_stream.file_size);
            assert!(stream == std::fs::read(&file).unwrap(), "compact {compact}: the bytes differ");
        }
    }

    /// The compactor fills every page: a branch is closed only when its next
    /// child does not fit, except the last two branches of a level, which
    /// share their children out so that the last has two; a leaf only when
    /// the next node (or DUPFIX item) does not fit, or a few entries early
    /// when that starts the next leaf at a key shorter by more bytes than
    /// those entries take (`hand_on`). Keys of every length at 256-byte
    /// pages make exact fits common, and early closes too; 4-byte DUPFIX
    /// items fill a leaf exactly (236 bytes of room).
    #[test]
    fn compacted_pages_are_full() {
        let ps = 256;
        let d = tempfile::tempdir().unwrap();
        let geo = crate::Geometry { page_size: Some(ps), ..Default::default() };
        let env = Env::builder().max_dbs(8).geometry(geo).open(d.path().join("src")).unwrap();
        let max_key = env.max_key_size(DbFlags::empty());
        let max_dup = env.max_value_size(DbFlags::DUP_SORT);
        let mut x = 0x2545_f491_4f6c_dd1du64;
        let mut next = move |n: usize| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x % n as u64) as usize
        };
        let mut txn = env.begin_rw_txn().unwrap();
        let t: Vec<_> = (0..4).map(|i| txn.create_db(Some(&format!("t{i}")), DbFlags::empty()).unwrap()).collect();
        let f = txn.create_db(Some("f"), DbFlags::DUP_SORT | DbFlags::DUP_FIXED).unwrap();
        let u = txn.create_db(Some("u"), DbFlags::DUP_SORT).unwrap();
        // Many trees of several levels: each level's first branch is packed
        // from a fresh start.
        for i in 0u32..6000 {
            let key: Vec<u8> = (0..1 + next(max_key)).map(|_| next(256) as u8).collect();
            txn.put(t[i as usize % 4], &key, &vec![1u8; next(24)], PutFlags::empty()).unwrap();
            txn.put(f, &[b'a', (i % 3) as u8], &i.to_be_bytes(), PutFlags::empty()).unwrap();
            let v: Vec<u8> = (0..1 + next(max_dup)).map(|_| next(256) as u8).collect();
            txn.put(u, &[b'b', (i % 24) as u8], &v, PutFlags::empty()).unwrap();
        }
        txn.commit().unwrap();
        let dst = d.path().join("compact.db");
        env.copy_to(&dst, &CopyOptions { compact: true, ..Default::default() }, &mut |_| {}).unwrap();
        let c = Env::builder().max_dbs(8).read_only(true).open(&dst).unwrap();
        let root = c.begin_ro_txn().unwrap().snap.meta.main.root;
        let img = std::fs::read(&dst).unwrap();
        let page = |pg: u32| Page { buf: &img[pg as usize * ps..(pg as usize + 1) * ps] };
        // The first key under `pg` (what the compactor groups children by).
        let first_key = |mut pg: u32| loop {
            let p = page(pg);
            if !p.is_branch() {
                return crate::btree::key_at(p, 0, pg).unwrap().to_vec();
            }
            pg = crate::format::node::node(p, 0, pg).unwrap().child();
        };
        let (mut trees, mut checked, mut handed_on) = (vec![root], [0usize; 3], 0);
        while let Some(root) = trees.pop() {
            let mut level = vec![root];
            loop {
                let n = level.len();
                let mut below = Vec::new();
                for (w, &pg) in level.iter().enumerate() {
                    let p = page(pg);
                    let nodes = (0..p.num_entries()).map(|i| crate::format::node::node(p, i, pg).unwrap());
                    if p.is_branch() {
                        below.extend(nodes.map(|nd| nd.child()));
                    } else if !p.is_dupfix() {
                        // Named tables and nested trees are checked in turn.
                        trees.extend(nodes.filter(|nd| nd.flags & N_TREE != 0).map(|nd| Tree::read(nd.data).root));
                    }
                    let Some(&right) = level.get(w + 1) else { continue };
                    let next = page(right);
                    let mut free = p.room();
                    let need = if p.is_branch() {
                        if w + 2 == n {
                            continue;
                        }
                        let child = crate::format::node::node(next, 0, right).unwrap().child();
                        NODESIZE + crate::format::even_ceil(first_key(child).len()) + 2
                    } else if p.is_dupfix() {
                        p.dupfix_ksize() as usize
                    } else {
                        // A leaf closed early handed its last entries on to
                        // the next, which then starts at a key shorter by
                        // more bytes than those entries take: filled again
                        // from them, the first entry that no longer fits
                        // has a longer key.
                        let size = |i: usize| crate::format::node::stored_size(next.buf, i) + 2;
                        let klen =
                            |i: usize| crate::format::even_ceil(crate::btree::key_at(next, i, right).unwrap().len());
                        let (mut room, mut k) = (p.room(), 0);
                        while k < next.num_entries() && size(k) <= room {
                            room -= size(k);
                            k += 1;
                        }
                        if k > 0 {
                            assert!(k < next.num_entries(), "leaf {pg} could take all of leaf {right}");
                            let moved = p.room() - room;
                            assert!(
                                klen(k) > klen(0) + moved,
                                "leaf {pg} handed on {k} entries ({moved} bytes) to start the next at a key of {} \
                                 bytes, not {}",
                                klen(0),
                                klen(k)
                            );
                            handed_on += 1;
                        }
                        free = room;
                        size(k)
                    };
                    assert!(free < need, "page {pg} has {free} bytes free, the next takes {need}");
                    checked[usize::from(p.is_branch()) + usize::from(p.is_dupfix()) * 2] += 1;
                }
                if below.is_empty() {
                    break;
                }
                level = below;
            }
        }
        // Leaves, branches and DUPFIX leaves were all checked, in numbers,
        // and leaves closed early too.
        assert!(checked.iter().all(|&k| k > 20), "{checked:?}");
        assert!(handed_on > 10, "{handed_on} leaves closed early");
        eprintln!("pages checked (leaves, branches, DUPFIX leaves): {checked:?}; {handed_on} leaves closed early");
    }

    /// A compacting copy reports its progress once for every 256 pages it
    /// writes (when an allocation reaches or passes a multiple of 256, so a
    /// large value's chunk may carry it a few pages past), from 0 to the
    /// pages of the copy.
    #[test]
    fn a_compacting_copy_reports_progress_every_256_pages() {
        let d = tempfile::tempdir().unwrap();
        let env = Env::builder().open(d.path().join("src")).unwrap();
        let mut txn = env.begin_rw_txn().unwrap();
        for i in 0u32..60_000 {
            // Every 500th value takes a chunk of 5 to 8 pages.
            let v = if i % 500 == 0 { vec![2u8; 17_000 + (i as usize * 37) % 15_000] } else { vec![1u8; 100] };
            txn.put(crate::Db::MAIN, &i.to_be_bytes(), &v, PutFlags::empty()).unwrap();
        }
        txn.commit().unwrap();
        let mut seen = Vec::new();
        let opts = CopyOptions { compact: true, ..Default::default() };
        let st = env.copy_to(&d.path().join("c"), &opts, &mut |p| seen.push(p.done)).unwrap();
        assert!(st.copy_pages > 1000, "{st:?}");
        assert_eq!((seen.first(), seen.last()), (Some(&0), Some(&st.copy_pages)));
        assert!(seen.windows(2).all(|w| w[0] <= w[1]), "{seen:?}");
        let mid = &seen[1..seen.len() - 1];
        assert_eq!(mid.len() as u64, st.copy_pages / 256, "{seen:?}");
        assert!(mid.iter().all(|&p| p % 256 < 8), "{seen:?}");
    }

    /// A large chunk one page longer than its value needs (the check lets
    /// one spare page pass) is copied at the length the value needs, and the
    /// table's count of large pages in the copy says so.
    #[test]
    fn a_compacted_chunk_takes_the_pages_its_value_needs() {
        use crate::check::tests::{fresh_env, patch_nodes};
        let d = tempfile::tempdir().unwrap();
        let path = d.path().join("db");
        let env = fresh_env(&path);
        let mut txn = env.begin_rw_txn().unwrap();
        // A chunk of 5 pages (4 KiB), then the node says 13,000 bytes: 4.
        txn.put(crate::Db::MAIN, b"blob", &[3u8; 20_000], PutFlags::empty()).unwrap();
        txn.commit().unwrap();
        assert_eq!(env.stat().unwrap().page_size, 4096);
        let (found, env) = patch_nodes(env, &path, b"blob", |flags, at, page| {
            assert_eq!(flags, N_BIG);
            page[at..at + 4].copy_from_slice(&13_000u32.to_le_bytes());
        });
        assert_eq!(found, 1);
        assert_eq!(env.check(&CheckOptions::default(), &mut |_| {}).unwrap().problem_count(), 0);
        assert_eq!(env.stat().unwrap().overflow_pages, 5);
        let dst = d.path().join("compact.db");
        env.copy_to(&dst, &CopyOptions { compact: true, ..Default::default() }, &mut |_| {}).unwrap();
        let c = Env::builder().read_only(true).open(&dst).unwrap();
        let r = c.check(&CheckOptions::default(), &mut |_| {}).unwrap();
        assert_eq!(r.problem_count(), 0, "{:?}", r.problems);
        assert_eq!(c.stat().unwrap().overflow_pages, 4);
        let txn = c.begin_ro_txn().unwrap();
        assert!(txn.get(crate::Db::MAIN, b"blob").unwrap().is_some_and(|v| v == [3u8; 13_000]));
    }

    /// The size of a compacted copy, as libmdbx's `compacting_fixup_meta`
    /// sets it: the pages the copy takes, past the next multiple of the
    /// growth step (of the shrink threshold if there is no step), rounded
    /// up to whole OS pages, within the bounds; left alone when the size
    /// the source had is exactly the pages the copy takes.
    #[test]
    fn a_compacted_copy_is_sized_as_libmdbx_sizes_it() {
        use crate::format::meta::pages2pv;
        let geo = |grow: u32, shrink: u32, lower: u32, upper: u32, now: u32, first_unallocated: u32| MetaGeo {
            grow_pv: pages2pv(grow),
            shrink_pv: pages2pv(shrink),
            lower,
            upper,
            now,
            first_unallocated,
        };
        let fixed = |mut g: MetaGeo, ps: usize| {
            fixup_now(&mut g, ps);
            g.now
        };
        // 1000 pages, a step of 64: the next multiple past 1000 is 1024.
        assert_eq!(fixed(geo(64, 128, 3, 1 << 20, 5000, 1000), 4096), 1024);
        // On a multiple already, the next one.
        assert_eq!(fixed(geo(64, 128, 3, 1 << 20, 5000, 1024), 4096), 1088);
        // The shrink threshold when there is no step.
        assert_eq!(fixed(geo(0, 100, 3, 1 << 20, 5000, 1000), 4096), 1100);
        // Neither: the pages themselves.
        assert_eq!(fixed(geo(0, 0, 3, 1 << 20, 5000, 1000), 4096), 1000);
        // 1 KiB pages: whole 4 KiB OS pages (1000 + 63 - 1000 % 63 = 1008;
        // 1000 + 61 - 1000 % 61 = 1037, up to 1040).
        assert_eq!(fixed(geo(63, 0, 3, 1 << 20, 5000, 1000), 1024), 1008);
        assert_eq!(fixed(geo(61, 0, 3, 1 << 20, 5000, 1000), 1024), 1040);
        // Within the bounds.
        assert_eq!(fixed(geo(64, 0, 2000, 1 << 20, 5000, 1000), 4096), 2000);
        assert_eq!(fixed(geo(64, 0, 3, 1010, 5000, 1000), 4096), 1010);
        // The source's size equal to the pages of the copy: kept.
        assert_eq!(fixed(geo(64, 128, 3, 1 << 20, 1000, 1000), 4096), 1000);
        assert_eq!(fixed(geo(64, 128, 1200, 1 << 20, 1000, 1000), 4096), 1200);
    }

    /// Values added one by one leave spare room in sub-pages (on pages of
    /// 16 KiB or more); the compacting copy drops it.
    #[test]
    fn compacting_drops_spare_room_of_sub_pages() {
        let d = tempfile::tempdir().unwrap();
        let ps = 16384;
        let geo = crate::Geometry { page_size: Some(ps), ..Default::default() };
        let env = Env::builder().max_dbs(2).geometry(geo).open(d.path().join("src")).unwrap();
        let mut txn = env.begin_rw_txn().unwrap();
        let u = txn.create_db(Some("u"), DbFlags::DUP_SORT).unwrap();
        for i in 0u32..600 {
            txn.put(u, &(i % 20).to_be_bytes(), &i.to_be_bytes(), PutFlags::empty()).unwrap();
        }
        txn.commit().unwrap();
        let spare = |file: &Path| -> usize {
            let img = std::fs::read(file).unwrap();
            let mut total = 0;
            for pg in 3..img.len() / ps {
                let p = Page { buf: &img[pg * ps..(pg + 1) * ps] };
                if p.flags() != pflags::LEAF {
                    continue;
                }
                for i in 0..p.num_entries() {
                    let Ok(n) = crate::format::node::node(p, i, pg as u32) else { continue };
                    if n.flags == N_DUP {
                        let sp = Page { buf: n.data };
                        total += sp.upper() - sp.lower();
                    }
                }
            }
            total
        };
        assert!(spare(&d.path().join("src").join("mdbx.dat")) > 0, "in-place growth leaves spare room");
        let dst = d.path().join("compact.db");
        env.copy_to(&dst, &CopyOptions { compact: true, ..Default::default() }, &mut |_| {}).unwrap();
        assert_eq!(spare(&dst), 0);
        let c = Env::builder().max_dbs(2).read_only(true).open(&dst).unwrap();
        let r = c.check(&CheckOptions::default(), &mut |_| {}).unwrap();
        assert_eq!(r.problem_count(), 0, "{:?}", r.problems);
        let txn = c.begin_ro_txn().unwrap();
        assert_eq!(txn.db_stat(txn.open_db(Some("u")).unwrap()).unwrap().entries, 600);
    }

    /// A stream that fails mid-copy fails the copy.
    #[test]
    fn a_failing_stream_fails_the_copy() {
        struct Full(usize);
        impl std::io::Write for Full {
            fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
                if self.0 < b.len() {
                    return Err(std::io::Error::other("no space left"));
                }
                self.0 -= b.len();
                Ok(b.len())
            }
            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }
        let d = tempfile::tempdir().unwrap();
        let env = Env::builder().open(d.path().join("src")).unwrap();
        let mut txn = env.begin_rw_txn().unwrap();
        for i in 0u32..3000 {
            txn.put(crate::Db::MAIN, &i.to_be_bytes(), &[1u8; 50], PutFlags::empty()).unwrap();
        }
        txn.commit().unwrap();
        for compact in [false, true] {
            let opts = CopyOptions { compact, ..Default::default() };
            let r = env.copy_to_writer(&mut Full(40_000), &opts, &mut |_| {});
            assert!(matches!(r, Err(Error::Io(_))), "compact {compact}: {r:?}");
        }
    }
}
