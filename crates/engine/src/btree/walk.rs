//! One validating walk of a tree, shared by everything that visits whole
//! trees: `verify_table`, the integrity check (`check.rs`), the compacting
//! copy (`copy.rs`) and the page collection of `drop_db` / `clear_db` and of
//! multimap edits (`write::collect_pages`).
//!
//! The walk owns the structural rules, so that they cannot drift apart:
//!
//! * page references: not a meta page, below the snapshot's
//!   `first_unallocated`, inside the data file;
//! * every page (tree page or page of a large chunk) is visited at most once
//!   across one [`Walk`]: a cycle or a page shared by two parents is a fault;
//! * libmdbx's page-header checks ([`Page::check_tree_page`]): page type for
//!   the kind of tree, own page number, lower/upper, entry counts, and a page
//!   txnid not newer than its parent's (the *front*); the node area between
//!   `upper` and the page end exactly covered by the nodes (no gap, no
//!   overlap: `format::node::check_node_area`);
//! * tree height: leaves exactly at the height of the tree descriptor, at most
//!   [`MAX_DEPTH`] levels;
//! * which node flags are legal in which kind of tree ([`Kind`], the table
//!   flags): table records only in the main table, large values only without
//!   DUPSORT, sub-pages and nested trees only with DUPSORT, plain keys only in
//!   nested trees — so nested trees are one level deep and a nested tree
//!   inside a nested tree is a fault;
//! * sub-pages, nested-tree and table descriptors, large chunks.
//!
//! It is iterative (an explicit stack, also across nested trees): damaged
//! structure costs at most one visit per allocated page and never recursion.
//! Events go to a [`Visitor`] in key order (a nested tree is walked at its
//! node). Each rule violation is a [`Fault`] handed to [`Visitor::fault`]:
//! returning `Err` stops the walk with that error (the default: a
//! `Corrupted` error naming the page), returning `Ok` skips what the fault
//! concerns (the page, node or chunk) and goes on — the integrity check
//! reports and continues. Key order and counters are the visitors' business:
//! the walk hands them the separator bounds and what it counted, and
//! [`Visitor::visit`] names every page when it is first visited (the
//! integrity check's page ownership mirrors exactly what the walk visited).

use std::collections::HashSet;

use super::{check_subpage, child_at, key_at, MAX_DEPTH};
use crate::btree::pages::Pages;
use crate::error::{Error, Result};
use crate::flags::DbFlags;
use crate::format::node::{self, Node, N_BIG, N_DUP, N_TREE};
use crate::format::page::{flags as pflags, Page};
use crate::format::tree::{Tree, TREE_SIZE};
use crate::format::{NUM_METAS, PAGEHDRSZ, P_INVALID};

/// Kind of tree (decides the legal node flags and leaf page types).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Kind {
    /// The GC tree.
    Gc,
    /// The main table: may hold named-table records.
    Main,
    /// A named table.
    Table,
    /// The nested tree of a multimap key (its keys are the values).
    Nested,
}

/// Whether node flags `f` are legal in a tree of `kind` (`dupsort`: the table
/// has DUPSORT).
pub(crate) fn legal_node(kind: Kind, dupsort: bool, f: u8) -> bool {
    match (kind, f) {
        (_, 0) => true,
        (Kind::Nested, _) => false,
        (Kind::Gc | Kind::Main | Kind::Table, N_BIG) => !dupsort,
        (Kind::Main, N_TREE) => !dupsort,
        (Kind::Main | Kind::Table, N_DUP) => dupsort,
        (Kind::Main | Kind::Table, f) if f == N_DUP | N_TREE => dupsort,
        _ => false,
    }
}

/// What was counted in a tree (nested trees included in branch, leaf and items).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Counts {
    pub branch: u64,
    pub leaf: u64,
    pub large: u64,
    pub items: u64,
}

/// Where the pages come from.
#[derive(Clone, Copy)]
pub(crate) enum Src<'t> {
    /// A transaction's pages (dirty ones first).
    Txn(Pages<'t>),
    /// The bytes of the data file from page `NUM_METAS` on (the metas, which
    /// commits rewrite in place, are never borrowed), no further than the
    /// file reaches, and the snapshot's first unallocated page.
    File { bytes: &'t [u8], ps: usize, limit: u32 },
}

/// Why a page reference is bad.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum RefWhy {
    /// Pages 0..3 hold the metas.
    Meta,
    /// At or past the snapshot's first unallocated page.
    Unallocated(u32),
    /// Past the end of the data file (or the map).
    BeyondFile,
}

impl<'t> Src<'t> {
    fn ps(&self) -> usize {
        match self {
            Src::Txn(p) => p.ps,
            Src::File { ps, .. } => *ps,
        }
    }

    /// First page number that is not part of the snapshot.
    pub(crate) fn limit(&self) -> u32 {
        match self {
            Src::Txn(p) => p.valid,
            Src::File { limit, .. } => *limit,
        }
    }

    /// `n` pages from `pgno` (a dirty page of a transaction: its whole buffer).
    fn get(&self, pgno: u32, n: u32) -> std::result::Result<&'t [u8], RefWhy> {
        if let Src::Txn(p) = self {
            if let Some(b) = p.dirty.and_then(|d| d.get(&pgno)) {
                return Ok(&b[..]);
            }
        }
        if pgno < NUM_METAS {
            return Err(RefWhy::Meta);
        }
        let limit = self.limit();
        if pgno >= limit || pgno as u64 + n as u64 > limit as u64 {
            return Err(RefWhy::Unallocated(limit));
        }
        let ps = self.ps();
        let (off, len) = (pgno as usize * ps, n as usize * ps);
        match self {
            Src::Txn(p) => p.map.bytes(off, len).ok_or(RefWhy::BeyondFile),
            Src::File { bytes, .. } => {
                let off = off - NUM_METAS as usize * ps;
                bytes.get(off..off + len).ok_or(RefWhy::BeyondFile)
            }
        }
    }
}

/// A rule violation.
#[derive(Debug, Clone)]
pub(crate) struct Fault<'t> {
    /// The page concerned (for a bad reference: the page holding it, or the
    /// referenced page for a root).
    pub page: u32,
    /// The page that referred to `page` (None: a root from a descriptor).
    pub parent: Option<u32>,
    /// Depth of `page` in its tree (1: root).
    pub depth: usize,
    /// Whether the fault is inside a nested tree.
    pub nested: bool,
    pub what: What<'t>,
}

/// The rule that was violated.
#[derive(Debug, Clone)]
pub(crate) enum What<'t> {
    /// A tree root (from a descriptor) is not a usable page number.
    BadRoot { why: RefWhy },
    /// Child `i` of branch `page` is not a usable page number.
    BadChild { i: usize, child: u32, why: RefWhy },
    /// A page reached a second time (a cycle, or shared by two parents);
    /// `page` is the page reached again.
    Revisit { branch: bool },
    /// The header names another page number.
    PgnoMismatch { found: u32 },
    /// Not a branch page nor the leaf type the tree needs.
    PageType { flags: u16, want_leaf: u16 },
    /// The page is newer than its parent.
    Txnid { txnid: u64, front: u64 },
    /// Other header checks (lower/upper bounds, entry counts).
    Header { why: &'static str, lower: usize, upper: usize },
    /// A leaf above the tree height or a branch at it.
    Height { leaf: bool, height: usize },
    /// A descriptor's height is 0 or above [`MAX_DEPTH`] for a non-empty tree.
    TreeHeight { height: u16 },
    /// An empty descriptor with non-zero counters.
    EmptyCounters { height: u16, items: u64 },
    /// The key of entry `i` is unreadable (checked before [`Visitor::page`]).
    Entry { i: usize, why: &'static str },
    /// The child reference of branch node `i` is unreadable.
    Child { i: usize, why: &'static str },
    /// Leaf node `i` is unreadable (its value overruns the page).
    Node { i: usize, why: &'static str },
    /// Node `i` has flags that are illegal in this kind of tree.
    NodeFlags { i: usize, flags: u8, kind: Kind, dupsort: bool },
    /// A table record or nested-tree descriptor of the wrong size.
    RecordSize { i: usize, key: &'t [u8], len: usize, nested: bool },
    /// A bad sub-page.
    SubPage { i: usize, why: &'static str },
    /// A sub-page whose type does not match the table.
    SubPageType { i: usize, flags: u16, want: u16 },
    /// An empty nested tree under `key`.
    NestedEmpty { i: usize, key: &'t [u8] },
    /// A nested tree inside a nested tree.
    NestedTooDeep { i: usize },
    /// A bad large chunk at `head` for the value of node `i` of leaf `leaf`;
    /// `page` is the head (the leaf when the head is not a usable page number).
    Large { leaf: u32, head: u32, i: usize, why: LargeWhy },
}

/// What is wrong with a large chunk. Apart from `Ref`, the pages of the chunk
/// not visited yet are visited after the fault (only the head when the page
/// count is unusable), so that a later reference to one of them is a
/// revisit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum LargeWhy {
    /// The head page number is unusable.
    Ref(RefWhy),
    /// The head is not a large page.
    NotLarge { flags: u16 },
    /// The head names another page number.
    PgnoMismatch { found: u32 },
    /// Zero pages, or running past the allocated pages / the file.
    Count { pages: u32, limit: u32 },
    /// Fewer pages than the value needs.
    Short { pages: u32, dsize: usize, need: u64 },
    /// Newer than its leaf.
    Txnid { txnid: u64, leaf_txnid: u64 },
    /// `used` of its pages were already visited, the first at `at`.
    Overlap { at: u32, pages: u32, used: u32 },
}

impl Fault<'_> {
    /// A short description (the `what` of the `Corrupted` error).
    pub(crate) fn reason(&self) -> &'static str {
        match &self.what {
            What::BadRoot { why: RefWhy::Meta } | What::BadChild { why: RefWhy::Meta, .. } => {
                "child page number is a meta page"
            }
            What::BadRoot { why: RefWhy::Unallocated(_) } | What::BadChild { why: RefWhy::Unallocated(_), .. } => {
                "child page number outside the allocated pages"
            }
            What::BadRoot { .. } | What::BadChild { .. } => "page beyond the end of the data file",
            What::Revisit { .. } => "page reached twice (a cycle or a shared page)",
            What::PgnoMismatch { .. } => "page number in header does not match its position",
            What::PageType { .. } => "unexpected page type flags",
            What::Txnid { .. } => "page txnid is newer than its parent",
            What::Header { why, .. } => why,
            What::Height { .. } => "leaf at a depth that differs from the tree height",
            What::TreeHeight { .. } => "tree height is invalid",
            What::EmptyCounters { .. } => "empty tree with non-zero height or items",
            What::Entry { why, .. } | What::Child { why, .. } | What::Node { why, .. } => why,
            What::NodeFlags { .. } => "node flags are illegal in this kind of table",
            What::RecordSize { nested: true, .. } => "nested tree descriptor has a bad size",
            What::RecordSize { .. } => "table record has a bad size",
            What::SubPage { why, .. } => why,
            What::SubPageType { .. } => "sub-page type does not match the table",
            What::NestedEmpty { .. } => "empty nested tree",
            What::NestedTooDeep { .. } => "nested tree inside a nested tree",
            What::Large { why, .. } => match why {
                LargeWhy::Ref(_) => "large value page number outside the allocated pages",
                LargeWhy::NotLarge { .. } => "large value points to a page that is not a large page",
                LargeWhy::PgnoMismatch { .. } => "large page number in header does not match its position",
                LargeWhy::Count { .. } => "large chunk has a bad page count",
                LargeWhy::Short { .. } => "large value is longer than its chunk",
                LargeWhy::Txnid { .. } => "large page is newer than its leaf",
                LargeWhy::Overlap { .. } => "large chunk overlaps pages used elsewhere",
            },
        }
    }

    /// The `Corrupted` error for this fault.
    pub(crate) fn error(&self) -> Error {
        Error::corrupted(self.page, self.reason())
    }
}

/// A branch or leaf page that passed the header checks.
pub(crate) struct PageEv<'t> {
    pub pgno: u32,
    pub page: Page<'t>,
    /// The page that referred to it (None: a root from a meta).
    pub parent: Option<u32>,
    /// Inside a nested tree.
    pub nested: bool,
    /// Keys of the page must be `>= lo` and `< hi` (separators of the parents).
    pub lo: Option<&'t [u8]>,
    pub hi: Option<&'t [u8]>,
}

/// A leaf node whose flags are legal (not for the items of DUPFIX pages).
#[derive(Clone, Copy)]
pub(crate) struct NodeEv<'t> {
    pub leaf: u32,
    pub leaf_txnid: u64,
    pub i: usize,
    pub node: Node<'t>,
    pub nested: bool,
}

/// Receives the events of a walk (all methods have do-nothing defaults; the
/// default [`Visitor::fault`] stops at the first fault).
pub(crate) trait Visitor<'t> {
    /// Pages `pgno..pgno + n` are visited, each once across the [`Walk`]: a
    /// tree page (before its checks and faults, after the reference checks)
    /// or pages of a large chunk. `Err` stops the walk.
    fn visit(&mut self, _pgno: u32, _n: u32) -> Result<()> {
        Ok(())
    }
    /// A page passed its checks; its keys are readable. `Err` stops the walk.
    fn page(&mut self, _w: &mut Walk<'t>, _ev: &PageEv<'t>) -> Result<()> {
        Ok(())
    }
    /// A leaf node (before its value events: large chunk, sub-page, nested
    /// tree). Table records (N_TREE in the main table) are not walked: the
    /// visitor may start a walk of the table on `w`.
    fn node(&mut self, _w: &mut Walk<'t>, _ev: &NodeEv<'t>) -> Result<()> {
        Ok(())
    }
    /// A valid large chunk of `pages` pages at `head` holding `value`.
    fn large(&mut self, _ev: &NodeEv<'t>, _head: u32, _pages: u32, _value: &'t [u8]) -> Result<()> {
        Ok(())
    }
    /// A valid sub-page.
    fn subpage(&mut self, _ev: &NodeEv<'t>, _sp: Page<'t>) -> Result<()> {
        Ok(())
    }
    /// A nested tree is about to be walked; `Ok(false)` skips it.
    fn enter(&mut self, _ev: &NodeEv<'t>, _tree: &Tree) -> Result<bool> {
        Ok(true)
    }
    /// A nested tree was walked; `c` is what it held.
    fn leave(&mut self, _ev: &NodeEv<'t>, _tree: &Tree, _c: &Counts) -> Result<()> {
        Ok(())
    }
    /// A rule violation: `Err` stops the walk, `Ok` skips what it concerns.
    fn fault(&mut self, f: Fault<'t>) -> Result<()> {
        Err(f.error())
    }
}

/// Pages already visited: a hash set while few, a bitmap beyond.
#[derive(Default)]
struct Seen {
    few: HashSet<u32>,
    bits: Vec<u64>,
}

impl Seen {
    const FEW: usize = 4096;

    /// Marks `pgno`; false if it was marked already.
    fn mark(&mut self, pgno: u32) -> bool {
        if self.bits.is_empty() {
            if self.few.len() < Self::FEW {
                return self.few.insert(pgno);
            }
            for p in std::mem::take(&mut self.few) {
                self.set(p);
            }
        }
        self.set(pgno)
    }

    fn set(&mut self, pgno: u32) -> bool {
        let (w, b) = (pgno as usize / 64, 1u64 << (pgno % 64));
        if w >= self.bits.len() {
            self.bits.resize(w + 1, 0);
        }
        let new = self.bits[w] & b == 0;
        self.bits[w] |= b;
        new
    }

    fn has(&self, pgno: u32) -> bool {
        if self.bits.is_empty() {
            self.few.contains(&pgno)
        } else {
            self.bits.get(pgno as usize / 64).is_some_and(|w| w & (1u64 << (pgno % 64)) != 0)
        }
    }
}

/// The state shared by the walks of one snapshot: where pages come from and
/// which were visited (a page is visited once across all the trees walked).
pub(crate) struct Walk<'t> {
    pub src: Src<'t>,
    seen: Seen,
    /// Walks in progress (a table walk started from the main table's walk).
    active: usize,
    /// Pages visited so far.
    pub visited: u64,
}

/// One tree to walk.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Spec {
    pub kind: Kind,
    /// The table's flags (for a nested tree: its host table's).
    pub flags: DbFlags,
    pub tree: Tree,
    /// The root may be no newer than this txnid.
    pub front: u64,
    /// The page holding the descriptor (None: a meta).
    pub host: Option<u32>,
}

enum Frame<'t> {
    /// A page to load and check.
    Visit { pgno: u32, parent: Option<u32>, front: u64, depth: usize, lo: Option<&'t [u8]>, hi: Option<&'t [u8]> },
    /// A leaf whose nodes are being visited; `next` is the next node.
    Leaf { pgno: u32, page: Page<'t>, next: usize },
    /// End of a nested tree.
    Leave { ev: NodeEv<'t>, tree: Tree },
}

struct Level {
    kind: Kind,
    height: usize,
    want_leaf: u16,
    counts: Counts,
}

impl<'t> Walk<'t> {
    pub(crate) fn new(src: Src<'t>) -> Walk<'t> {
        Walk { src, seen: Seen::default(), active: 0, visited: 0 }
    }

    /// Whether `pgno` was visited.
    pub(crate) fn seen(&self, pgno: u32) -> bool {
        self.seen.has(pgno)
    }

    /// Walks one tree (and its nested trees) in key order; returns what it
    /// held. `Err` is the first error a visitor returned.
    pub(crate) fn tree<V: Visitor<'t> + ?Sized>(&mut self, spec: &Spec, v: &mut V) -> Result<Counts> {
        if self.active >= 2 {
            // Table records are legal only in the main table: unreachable.
            return Err(Error::corrupted(spec.tree.root, "table record inside a named table"));
        }
        self.active += 1;
        let r = self.run(spec, v);
        self.active -= 1;
        r
    }

    fn run<V: Visitor<'t> + ?Sized>(&mut self, spec: &Spec, v: &mut V) -> Result<Counts> {
        let t = &spec.tree;
        let fault = |v: &mut V, page, what| v.fault(Fault { page, parent: spec.host, depth: 0, nested: false, what });
        if t.root == P_INVALID {
            if t.height != 0 || t.items != 0 || t.branch_pages != 0 || t.leaf_pages != 0 || t.large_pages != 0 {
                fault(v, P_INVALID, What::EmptyCounters { height: t.height, items: t.items })?;
            }
            return Ok(Counts::default());
        }
        if t.height == 0 || t.height as usize > MAX_DEPTH {
            fault(v, t.root, What::TreeHeight { height: t.height })?;
            return Ok(Counts::default());
        }
        let dupsort = spec.kind != Kind::Nested && spec.flags.contains(DbFlags::DUP_SORT);
        let dupfixed = spec.flags.contains(DbFlags::DUP_FIXED);
        let mut levels = vec![Level {
            kind: spec.kind,
            height: t.height as usize,
            want_leaf: if spec.kind == Kind::Nested && dupfixed { pflags::DUPFIX_LEAF } else { pflags::LEAF },
            counts: Counts::default(),
        }];
        let mut stack =
            vec![Frame::Visit { pgno: t.root, parent: spec.host, front: spec.front, depth: 1, lo: None, hi: None }];
        while let Some(frame) = stack.pop() {
            let nested = levels.len() > 1;
            let lv = levels.last_mut().expect("a level");
            match frame {
                Frame::Leave { ev, tree } => {
                    let c = levels.pop().expect("a nested level").counts;
                    let up = &mut levels.last_mut().expect("the host level").counts;
                    up.branch += c.branch;
                    up.leaf += c.leaf;
                    up.items += c.items;
                    v.leave(&ev, &tree, &c)?;
                }
                Frame::Visit { pgno, parent, front, depth, lo, hi } => {
                    let f = |page, what| Fault { page, parent, depth, nested, what };
                    let buf = match self.src.get(pgno, 1) {
                        Ok(b) => &b[..self.src.ps()],
                        Err(why) => {
                            // Children were checked by their parent: only roots get here.
                            v.fault(f(pgno, What::BadRoot { why }))?;
                            continue;
                        }
                    };
                    let p = Page { buf };
                    if !self.seen.mark(pgno) {
                        v.fault(f(pgno, What::Revisit { branch: p.flags() == pflags::BRANCH }))?;
                        continue;
                    }
                    self.visited += 1;
                    v.visit(pgno, 1)?;
                    if p.pgno() != pgno {
                        v.fault(f(pgno, What::PgnoMismatch { found: p.pgno() }))?;
                        continue;
                    }
                    let flags = p.flags();
                    let is_branch = flags == pflags::BRANCH;
                    if !is_branch && flags != lv.want_leaf {
                        v.fault(f(pgno, What::PageType { flags, want_leaf: lv.want_leaf }))?;
                        continue;
                    }
                    if is_branch {
                        lv.counts.branch += 1;
                    } else {
                        lv.counts.leaf += 1;
                    }
                    if p.txnid() > front {
                        v.fault(f(pgno, What::Txnid { txnid: p.txnid(), front }))?;
                        continue;
                    }
                    // The header, then (branch and leaf pages) a node area
                    // exactly covered by its nodes, as libmdbx's check wants.
                    let header = p.check_tree_page(pgno, front).and_then(|()| {
                        if p.is_dupfix() {
                            Ok(())
                        } else {
                            crate::format::node::check_node_area(p, pgno)
                        }
                    });
                    if let Err(e) = header {
                        let why = match e {
                            Error::Corrupted { what, .. } => what.0,
                            _ => "bad page header",
                        };
                        v.fault(f(pgno, What::Header { why, lower: p.lower(), upper: p.upper() }))?;
                        continue;
                    }
                    if is_branch == (depth == lv.height) {
                        v.fault(f(pgno, What::Height { leaf: !is_branch, height: lv.height }))?;
                        continue;
                    }
                    let n = p.num_entries();
                    if let Some((i, why)) = (0..n).find_map(|i| key_at(p, i, pgno).err().map(|e| (i, reason(&e)))) {
                        v.fault(f(pgno, What::Entry { i, why }))?;
                        continue;
                    }
                    let ev = PageEv { pgno, page: p, parent, nested, lo, hi };
                    v.page(self, &ev)?;
                    if is_branch {
                        // Children in reverse so that the first is walked first.
                        for i in (0..n).rev() {
                            let child = match child_at(p, i, pgno) {
                                Ok(c) => c,
                                Err(e) => {
                                    v.fault(f(pgno, What::Child { i, why: reason(&e) }))?;
                                    continue;
                                }
                            };
                            if let Err(why) = self.src.get(child, 1) {
                                v.fault(f(pgno, What::BadChild { i, child, why }))?;
                                continue;
                            }
                            let clo = if i == 0 { lo } else { Some(key_at(p, i, pgno)?) };
                            let chi = if i + 1 < n { Some(key_at(p, i + 1, pgno)?) } else { hi };
                            stack.push(Frame::Visit {
                                pgno: child,
                                parent: Some(pgno),
                                front: p.txnid(),
                                depth: depth + 1,
                                lo: clo,
                                hi: chi,
                            });
                        }
                    } else if p.is_dupfix() {
                        lv.counts.items += n as u64;
                    } else {
                        stack.push(Frame::Leaf { pgno, page: p, next: 0 });
                    }
                }
                Frame::Leaf { pgno, page, next } => {
                    if next >= page.num_entries() {
                        continue;
                    }
                    stack.push(Frame::Leaf { pgno, page, next: next + 1 });
                    let i = next;
                    let f = |what| Fault { page: pgno, parent: None, depth: 0, nested, what };
                    let nd = match node::node(page, i, pgno) {
                        Ok(nd) => nd,
                        Err(e) => {
                            v.fault(f(What::Node { i, why: reason(&e) }))?;
                            continue;
                        }
                    };
                    let kind = lv.kind;
                    if !legal_node(kind, dupsort, nd.flags) {
                        v.fault(f(What::NodeFlags { i, flags: nd.flags, kind, dupsort }))?;
                        continue;
                    }
                    if nd.flags & N_TREE != 0 && nd.data.len() != TREE_SIZE {
                        let nested = nd.flags & N_DUP != 0;
                        v.fault(f(What::RecordSize { i, key: nd.key, len: nd.data.len(), nested }))?;
                        continue;
                    }
                    let ev = NodeEv { leaf: pgno, leaf_txnid: page.txnid(), i, node: nd, nested };
                    v.node(self, &ev)?;
                    let lv = levels.last_mut().expect("a level");
                    match nd.flags {
                        0 | N_TREE => lv.counts.items += 1,
                        N_BIG => {
                            lv.counts.items += 1;
                            let (pages, value) = self.large(&ev, v)?;
                            levels.last_mut().expect("a level").counts.large += pages as u64;
                            if let Some(value) = value {
                                v.large(&ev, nd.big_pgno(), pages, value)?;
                            }
                        }
                        N_DUP => {
                            let sp = Page { buf: nd.data };
                            let want = if dupfixed { pflags::SUBPAGE_DUPFIX } else { pflags::SUBPAGE_LEAF };
                            if let Err(e) = check_subpage(sp, pgno) {
                                v.fault(f(What::SubPage { i, why: reason(&e) }))?;
                                continue;
                            }
                            if sp.kind() != want {
                                v.fault(f(What::SubPageType { i, flags: sp.flags(), want }))?;
                                continue;
                            }
                            lv.counts.items += sp.num_entries() as u64;
                            v.subpage(&ev, sp)?;
                        }
                        _ => {
                            // N_DUP | N_TREE: a nested tree.
                            if nested {
                                v.fault(f(What::NestedTooDeep { i }))?;
                                continue;
                            }
                            let nt = Tree::read(nd.data);
                            if nt.root == P_INVALID || nt.items == 0 {
                                v.fault(f(What::NestedEmpty { i, key: nd.key }))?;
                                continue;
                            }
                            if nt.height == 0 || nt.height as usize > MAX_DEPTH {
                                v.fault(Fault {
                                    page: pgno,
                                    parent: None,
                                    depth: 0,
                                    nested: true,
                                    what: What::TreeHeight { height: nt.height },
                                })?;
                                continue;
                            }
                            if !v.enter(&ev, &nt)? {
                                continue;
                            }
                            levels.push(Level {
                                kind: Kind::Nested,
                                height: nt.height as usize,
                                want_leaf: if dupfixed { pflags::DUPFIX_LEAF } else { pflags::LEAF },
                                counts: Counts::default(),
                            });
                            stack.push(Frame::Leave { ev, tree: nt });
                            stack.push(Frame::Visit {
                                pgno: nt.root,
                                parent: Some(pgno),
                                front: page.txnid(),
                                depth: 1,
                                lo: None,
                                hi: None,
                            });
                        }
                    }
                }
            }
        }
        Ok(levels.pop().expect("the top level").counts)
    }

    /// Checks and marks the large chunk of `ev`: the pages it visited and
    /// (when the chunk is valid) the value.
    fn large<V: Visitor<'t> + ?Sized>(&mut self, ev: &NodeEv<'t>, v: &mut V) -> Result<(u32, Option<&'t [u8]>)> {
        let head = ev.node.big_pgno();
        let dsize = ev.node.dsize as usize;
        let ps = self.src.ps();
        let f = |why| Fault {
            page: head,
            parent: Some(ev.leaf),
            depth: 0,
            nested: ev.nested,
            what: What::Large { leaf: ev.leaf, head, i: ev.i, why },
        };
        let hp = match self.src.get(head, 1) {
            Ok(b) => Page { buf: b },
            Err(why) => {
                v.fault(Fault { page: ev.leaf, ..f(LargeWhy::Ref(why)) })?;
                return Ok((0, None));
            }
        };
        if hp.flags() != pflags::LARGE {
            v.fault(f(LargeWhy::NotLarge { flags: hp.flags() }))?;
            return Ok((self.take(head, 1, v)?, None));
        }
        let pages = hp.large_count();
        let limit = self.src.limit();
        let chunk = match self.src.get(head, pages) {
            Ok(c) if pages > 0 => c,
            _ => {
                v.fault(f(LargeWhy::Count { pages, limit }))?;
                return Ok((self.take(head, 1, v)?, None));
            }
        };
        let mut ok = true;
        if let Some(at) = (head..head + pages).find(|&p| self.seen.has(p)) {
            let used = (at..head + pages).filter(|&p| self.seen.has(p)).count() as u32;
            v.fault(f(LargeWhy::Overlap { at, pages, used }))?;
            ok = false;
        }
        let n = self.take(head, pages, v)?;
        if hp.pgno() != head {
            v.fault(f(LargeWhy::PgnoMismatch { found: hp.pgno() }))?;
            return Ok((n, None));
        }
        if hp.txnid() > ev.leaf_txnid {
            v.fault(f(LargeWhy::Txnid { txnid: hp.txnid(), leaf_txnid: ev.leaf_txnid }))?;
            return Ok((n, None));
        }
        let need = (PAGEHDRSZ + dsize).div_ceil(ps) as u64;
        if (pages as u64) < need || chunk.len() < PAGEHDRSZ + dsize {
            v.fault(f(LargeWhy::Short { pages, dsize, need }))?;
            return Ok((n, None));
        }
        Ok((n, ok.then(|| &chunk[PAGEHDRSZ..PAGEHDRSZ + dsize])))
    }

    /// Visits the pages of `first..first + n` not visited yet (in runs);
    /// returns how many.
    fn take<V: Visitor<'t> + ?Sized>(&mut self, first: u32, n: u32, v: &mut V) -> Result<u32> {
        let mut count = 0;
        let mut run: Option<(u32, u32)> = None;
        for p in first..first + n {
            if self.seen.mark(p) {
                count += 1;
                run = match run {
                    Some((s, len)) => Some((s, len + 1)),
                    None => Some((p, 1)),
                };
            } else if let Some((s, len)) = run.take() {
                v.visit(s, len)?;
            }
        }
        if let Some((s, len)) = run {
            v.visit(s, len)?;
        }
        self.visited += count as u64;
        Ok(count)
    }
}

fn reason(e: &Error) -> &'static str {
    match e {
        Error::Corrupted { what, .. } => what.0,
        _ => "unreadable entry",
    }
}

/// Walks `spec` with `v` over a transaction's pages (a fresh [`Walk`]).
pub(crate) fn walk_txn<'t, V: Visitor<'t> + ?Sized>(pages: Pages<'t>, spec: &Spec, v: &mut V) -> Result<Counts> {
    Walk::new(Src::Txn(pages)).tree(spec, v)
}
