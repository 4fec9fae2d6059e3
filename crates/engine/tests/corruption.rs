//! Damaged-file tests: small databases written by rdbx are damaged in many ways
//! (random byte flips, truncation, zeroed/garbled meta pages, branch children
//! past the end or forming cycles, node sizes overrunning the page, garbage page
//! flags, bad large-value headers, bad table descriptors, ...). Each damaged copy
//! is opened read-only and read-write and read completely (every table: gets of
//! all known keys, full forward and backward cursor scans, set_range probes);
//! the read-write pass also tries a small write. The engine must answer with
//! success or an `Err` — never a panic, a crash (SIGSEGV/SIGBUS/abort), a hang
//! or an unbounded scan. `Corrupted { page }` must name a page of the file, a
//! read-only open must not change a byte of the data file, and damage that
//! cannot be read past (e.g. a child page beyond the end of the file, a cycle,
//! a key overrunning its page, all metas invalid) must produce an `Err`.
//!
//! Every case runs in a child process (this test binary re-invoked with
//! `--exact corruption_child`) so that crashes and hangs are attributed to the
//! case; inside the child each phase runs under `catch_unwind`.
//!
//! Run: `cargo test --release -p rdbx --test corruption`.
//! Environment: `RDBX_CORRUPTION_SEEDS=<n>` random-flip seeds per base (default
//! 60); `RDBX_CORRUPTION_KEEP=<dir>` keeps the damaged files of failing cases
//! there; `RDBX_CORRUPTION_ONLY=<substring>` runs only the cases whose name
//! contains it; `RDBX_CORRUPTION_STRICT=1` also fails on "soft" expectations
//! (damage the engine did not notice although it was read).

use std::collections::{BTreeSet, HashSet};
use std::io::Read;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use rdbx::{DbFlags, Durability, Env, Error, Geometry, PutFlags};

// ---------------------------------------------------------------------------
// Base databases

#[derive(Clone, Copy, Debug)]
struct BaseSpec {
    id: u32,
    ps: usize,
}

const BASES: [BaseSpec; 3] = [BaseSpec { id: 0, ps: 4096 }, BaseSpec { id: 1, ps: 256 }, BaseSpec { id: 2, ps: 65536 }];

struct TableSpec {
    name: &'static str,
    flags: DbFlags,
    /// (key, (value length, value seed)): values are `pattern(len, seed)`.
    records: Vec<(Vec<u8>, (usize, usize))>,
}

fn pattern(len: usize, seed: usize) -> Vec<u8> {
    (0..len).map(|i| (i.wrapping_mul(31) ^ seed.wrapping_mul(17) ^ (i >> 7)) as u8).collect()
}

/// The records of a base (deterministic: the child recomputes them).
fn base_tables(spec: BaseSpec) -> Vec<TableSpec> {
    let ps = spec.ps;
    let plain = (0..800).map(|i| (format!("plain-{i:05}").into_bytes(), (5 + i % 75, i))).collect();
    let big = (0..24).map(|i| (format!("big-{i:03}").into_bytes(), (ps + 100 + (i * 997) % (3 * ps), i))).collect();
    let ints = (0..600u64).map(|i| ((i * 7919).to_ne_bytes().to_vec(), (4 + (i as usize % 20), i as usize))).collect();
    let rev = (0..400).map(|i| (format!("{i:04}.rev.example").into_bytes(), (10, i))).collect();
    let many = (0..2000).map(|i| (format!("m{i:06}").into_bytes(), (8, i))).collect();
    vec![
        TableSpec { name: "plain", flags: DbFlags::empty(), records: plain },
        TableSpec { name: "big", flags: DbFlags::empty(), records: big },
        TableSpec { name: "ints", flags: DbFlags::INTEGER_KEY, records: ints },
        TableSpec { name: "rev", flags: DbFlags::REVERSE_KEY, records: rev },
        TableSpec { name: "many", flags: DbFlags::empty(), records: many },
    ]
}

fn open_builder(ps: usize) -> rdbx::EnvBuilder {
    Env::builder().max_dbs(16).durability(Durability::SyncDurable).geometry(Geometry {
        page_size: Some(ps),
        size_lower: Some(64 * 1024),
        growth_step: Some(256 * 1024),
        shrink_threshold: Some(512 * 1024),
        ..Geometry::default()
    })
}

/// Writes the base: all records in a few transactions, then deletes some (so the
/// GC has records) and adds main-table records.
fn create_base(spec: BaseSpec, dir: &Path) -> PathBuf {
    let env = open_builder(spec.ps).open(dir).unwrap_or_else(|e| panic!("base {spec:?}: create: {e:?}"));
    for (ti, t) in base_tables(spec).iter().enumerate() {
        let mut txn = env.begin_rw_txn().unwrap();
        let db = txn.create_db(Some(t.name), t.flags).unwrap();
        for (k, (len, seed)) in &t.records {
            txn.put(db, k, &pattern(*len, *seed), PutFlags::empty())
                .unwrap_or_else(|e| panic!("base {spec:?}: put: {e:?}"));
        }
        // extra records deleted again in a later transaction (GC content)
        if ti != 2 {
            for j in 0..60 {
                txn.put(db, format!("zz-tmp-{j:03}").as_bytes(), &pattern(40, j), PutFlags::empty()).unwrap();
            }
        }
        txn.commit().unwrap_or_else(|e| panic!("base {spec:?}: commit: {e:?}"));
    }
    let mut txn = env.begin_rw_txn().unwrap();
    for t in base_tables(spec) {
        if t.name == "ints" {
            continue;
        }
        let db = txn.open_db(Some(t.name)).unwrap();
        for j in 0..60 {
            assert!(txn.del(db, format!("zz-tmp-{j:03}").as_bytes(), None).unwrap());
        }
    }
    let main = txn.open_db(None).unwrap();
    txn.put(main, b"main-record-1", b"hello", PutFlags::empty()).unwrap();
    txn.put(main, b"main-record-2", b"world", PutFlags::empty()).unwrap();
    txn.commit().unwrap();
    let path = env.data_path().to_path_buf();
    drop(env);
    path
}

// ---------------------------------------------------------------------------
// An independent walker over the (undamaged) base file, to find targets

fn rd16(b: &[u8], o: usize) -> u16 {
    u16::from_le_bytes(b[o..o + 2].try_into().unwrap())
}
fn rd32(b: &[u8], o: usize) -> u32 {
    u32::from_le_bytes(b[o..o + 4].try_into().unwrap())
}
fn rd64(b: &[u8], o: usize) -> u64 {
    u64::from_le_bytes(b[o..o + 8].try_into().unwrap())
}

const DATA_MAGIC: u64 = 0x59659DBDEF4C1103;
const P_INVALID: u32 = 0xFFFF_FFFF;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Branch,
    Leaf,
    Large(u32),
}

#[derive(Clone, Debug)]
struct PageRef {
    pgno: u32,
    kind: Kind,
    parent: Option<u32>,
    tree: String,
    /// Absolute file offsets of the nodes (branch/leaf pages).
    nodes: Vec<usize>,
}

#[derive(Clone, Debug)]
struct TreeRef {
    name: String,
    root: u32,
    /// Absolute file offset of the 48-byte tree descriptor.
    desc: usize,
    /// Absolute file offset of the N_TREE node holding it (named tables).
    node: Option<usize>,
}

struct Layout {
    ps: usize,
    file_pages: u32,
    head: usize,
    first_unallocated: u32,
    pages: Vec<PageRef>,
    trees: Vec<TreeRef>,
    /// For each N_BIG leaf node: (node offset, key size, large pgno).
    bigs: Vec<(usize, usize, u32)>,
}

impl Layout {
    fn parse(img: &[u8], ps: usize) -> Layout {
        let mut head = 0;
        let mut best = 0;
        for i in 0..3 {
            let m = i * ps;
            assert_eq!(rd64(img, m + 20), DATA_MAGIC, "base meta {i} magic");
            let (a, b) = (rd64(img, m + 28), rd64(img, m + 196));
            if a == b && a > best {
                best = a;
                head = i;
            }
        }
        let m = head * ps;
        assert_eq!(rd32(img, m + 64) as usize, ps, "page size in meta");
        let mut l = Layout {
            ps,
            file_pages: (img.len() / ps) as u32,
            head,
            first_unallocated: rd32(img, m + 56),
            pages: Vec::new(),
            trees: Vec::new(),
            bigs: Vec::new(),
        };
        let mut seen = HashSet::new();
        for (name, off) in [("@GC", m + 60), ("@MAIN", m + 108)] {
            let root = rd32(img, off + 8);
            l.trees.push(TreeRef { name: name.into(), root, desc: off, node: None });
            if root != P_INVALID {
                l.walk(img, root, None, name, &mut seen);
            }
        }
        l
    }

    fn walk(&mut self, img: &[u8], pgno: u32, parent: Option<u32>, tree: &str, seen: &mut HashSet<u32>) {
        assert!(seen.insert(pgno), "base: page {pgno} reached twice");
        let ps = self.ps;
        let base = pgno as usize * ps;
        let p = &img[base..base + ps];
        assert_eq!(rd32(p, 16), pgno, "base: pgno of page {pgno}");
        let flags = rd16(p, 10);
        let n = rd16(p, 12) as usize / 2;
        let nodes: Vec<usize> = (0..n).map(|i| base + 20 + rd16(p, 20 + 2 * i) as usize).collect();
        let kind = match flags {
            0x01 => Kind::Branch,
            0x02 => Kind::Leaf,
            f => panic!("base: unexpected flags {f:#x} on page {pgno} of {tree}"),
        };
        self.pages.push(PageRef { pgno, kind, parent, tree: tree.into(), nodes: nodes.clone() });
        for &o in &nodes {
            let ksize = rd16(img, o + 6) as usize;
            if kind == Kind::Branch {
                self.walk(img, rd32(img, o), Some(pgno), tree, seen);
                continue;
            }
            let nflags = img[o + 4];
            let val = o + 8 + ksize;
            if nflags & 1 != 0 {
                let lp = rd32(img, val);
                let npages = rd32(img, lp as usize * ps + 12);
                assert_eq!(rd16(img, lp as usize * ps + 10), 0x04, "base: large page {lp}");
                assert!(seen.insert(lp));
                self.pages.push(PageRef {
                    pgno: lp,
                    kind: Kind::Large(npages),
                    parent: Some(pgno),
                    tree: tree.into(),
                    nodes: vec![],
                });
                self.bigs.push((o, ksize, lp));
            } else if nflags == 2 && tree == "@MAIN" {
                let name = String::from_utf8_lossy(&img[o + 8..o + 8 + ksize]).into_owned();
                let root = rd32(img, val + 8);
                self.trees.push(TreeRef { name: name.clone(), root, desc: val, node: Some(o) });
                if root != P_INVALID {
                    self.walk(img, root, None, &name, seen);
                }
            }
        }
    }

    fn of(&self, tree: &str, kind: fn(Kind) -> bool) -> Vec<&PageRef> {
        self.pages.iter().filter(|p| p.tree == tree && kind(p.kind)).collect()
    }

    fn root_of(&self, tree: &str) -> u32 {
        self.trees.iter().find(|t| t.name == tree).unwrap().root
    }
}

// ---------------------------------------------------------------------------
// Cases

/// What the read-only pass must produce.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Expect {
    /// Success or an error: both fine.
    Any,
    /// The damage is read, so an `Err` is expected; not noticing it is reported
    /// (a failure only with RDBX_CORRUPTION_STRICT=1).
    ErrSoft,
    /// The damage cannot be read past: an `Err` is required.
    ErrHard,
    /// As ErrHard, and the read-write open must fail too (no valid meta: the
    /// engine must not re-create the database over the file).
    ErrHardRw,
}

#[derive(Clone, Debug)]
enum Damage {
    Patch(Vec<(usize, Vec<u8>)>),
    Truncate(usize),
}

#[derive(Clone, Debug)]
struct Case {
    name: String,
    damage: Damage,
    expect: Expect,
}

struct SplitMix(u64);
impl SplitMix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

fn u16b(v: u16) -> Vec<u8> {
    v.to_le_bytes().to_vec()
}
fn u32b(v: u32) -> Vec<u8> {
    v.to_le_bytes().to_vec()
}
fn u64b(v: u64) -> Vec<u8> {
    v.to_le_bytes().to_vec()
}

fn make_cases(img: &[u8], l: &Layout, seeds: usize) -> Vec<Case> {
    let ps = l.ps;
    let mut cases = Vec::new();
    let mut add = |name: String, damage: Damage, expect: Expect| cases.push(Case { name, damage, expect });
    let patch = |v: Vec<(usize, Vec<u8>)>| Damage::Patch(v);
    let pg = |p: u32| p as usize * ps;
    let head = l.head * ps;

    // --- random byte flips in random pages
    let reachable: Vec<u32> = l.pages.iter().map(|p| p.pgno).collect();
    for seed in 0..seeds as u64 {
        let mut r = SplitMix(seed.wrapping_mul(7919) ^ ps as u64);
        let page = match r.below(10) {
            0..=5 => reachable[r.below(reachable.len())],
            6 | 7 => r.below(3) as u32,
            _ => r.below(l.file_pages as usize) as u32,
        };
        let nflips = 1 + r.below(6);
        let mut writes = Vec::new();
        let mut offs = Vec::new();
        for _ in 0..nflips {
            let off = match (page < 3, r.below(2)) {
                (true, _) => 20 + r.below(224),
                (false, 0) => r.below(32),
                _ => r.below(ps),
            };
            let at = pg(page) + off;
            let x = 1 + r.below(255) as u8;
            writes.push((at, vec![img[at] ^ x]));
            offs.push(off);
        }
        add(format!("flip.seed{seed}.page{page}.offs{offs:?}"), patch(writes), Expect::Any);
    }
    // --- whole pages of random bytes
    for seed in 0..(seeds / 4).max(4) as u64 {
        let mut r = SplitMix(seed ^ 0xABCDEF ^ ps as u64);
        let p = &l.pages[r.below(l.pages.len())];
        if matches!(p.kind, Kind::Large(_)) {
            continue; // a large page's value bytes can be anything
        }
        let bytes: Vec<u8> = (0..ps).map(|_| r.next() as u8).collect();
        let expect = if p.tree == "@GC" { Expect::Any } else { Expect::ErrSoft };
        add(format!("garbage.seed{seed}.{}.page{}", p.tree, p.pgno), patch(vec![(pg(p.pgno), bytes)]), expect);
    }

    // --- truncation
    let len = img.len();
    // the last page the reads need (GC pages are not read by readers)
    let last_read = l
        .pages
        .iter()
        .filter(|p| p.tree != "@GC")
        .map(|p| p.pgno as usize + if let Kind::Large(n) = p.kind { n as usize - 1 } else { 0 })
        .max()
        .unwrap();
    for cut in [
        0,
        1,
        100,
        ps - 1,
        ps,
        ps + 1,
        2 * ps,
        3 * ps - 1,
        3 * ps,
        3 * ps + 7,
        len / 2,
        (last_read + 1) * ps - 1,
        len - ps,
        len - 1,
    ] {
        if cut >= len {
            continue;
        }
        let expect = if cut < (last_read + 1) * ps { Expect::ErrHard } else { Expect::Any };
        add(format!("truncate.{cut}"), Damage::Truncate(cut), expect);
    }

    // --- meta pages
    for i in 0..3 {
        add(
            format!("meta{i}.zeroed{}", if i == l.head { ".head" } else { "" }),
            patch(vec![(pg(i as u32), vec![0; ps])]),
            Expect::Any,
        );
    }
    add("metas.all_zeroed".into(), patch(vec![(0, vec![0; 3 * ps])]), Expect::ErrHardRw);
    let all = |off: usize, v: Vec<u8>| -> Damage { patch((0..3).map(|i| (i * ps + off, v.clone())).collect()) };
    add("metas.all_version_byte".into(), all(20, u64b(0x59659DBDEF4C11FC)), Expect::ErrHardRw);
    add("metas.all_magic".into(), all(20, u64b(0x1122334455667703)), Expect::ErrHardRw);
    add("metas.all_pagesize_1000".into(), all(64, u32b(1000)), Expect::ErrHardRw);
    add("metas.all_pagesize_0".into(), all(64, u32b(0)), Expect::ErrHardRw);
    add("metas.all_sign_bad_steady".into(), all(188, u64b(0x1234_5678)), Expect::ErrHardRw);
    add("metas.all_txnid_torn".into(), all(196, u64b(0xDEAD)), Expect::ErrHardRw);
    add("metas.all_main_root_garbage".into(), all(108 + 8, u32b(0x00FF_FFFF)), Expect::ErrHard);
    add("metas.all_main_root_meta".into(), all(108 + 8, u32b(1)), Expect::ErrHard);
    add("metas.all_gc_root_garbage".into(), all(60 + 8, u32b(0x00FF_FFFF)), Expect::Any);
    add("metas.all_first_unalloc_2".into(), all(56, u32b(2)), Expect::ErrHard);
    add("metas.all_first_unalloc_huge".into(), all(56, u32b(0x7FFF_FFF0)), Expect::ErrHard);
    add("metas.all_flags_garbage".into(), all(10, u16b(0x0001)), Expect::ErrHardRw);
    add("metas.all_main_height_40".into(), all(108 + 2, u16b(40)), Expect::ErrSoft);
    add("meta.head.pagesize_8192".into(), patch(vec![(head + 64, u32b(8192))]), Expect::Any);
    add("meta.head.pagesize_1000".into(), patch(vec![(head + 64, u32b(1000))]), Expect::Any);
    add("meta.head.torn".into(), patch(vec![(head + 196, u64b(1))]), Expect::Any);
    add("meta.head.magic".into(), patch(vec![(head + 20, u64b(0x59659DBDEF4C11FC))]), Expect::Any);
    add("meta.head.sign_weak".into(), patch(vec![(head + 188, u64b(1))]), Expect::Any);
    add("meta.head.sign_none".into(), patch(vec![(head + 188, u64b(0))]), Expect::Any);
    add("meta.head.main_root_garbage".into(), patch(vec![(head + 116, u32b(0x00FF_FFFF))]), Expect::Any);
    add("meta.head.main_root_p_invalid_nonempty".into(), patch(vec![(head + 116, u32b(P_INVALID))]), Expect::Any);
    add("meta.head.gc_root_garbage".into(), patch(vec![(head + 68, u32b(0x00FF_FFFF))]), Expect::Any);
    add("meta.head.first_unalloc_small".into(), patch(vec![(head + 56, u32b(3))]), Expect::Any);
    add("meta.head.geo_now_1".into(), patch(vec![(head + 52, u32b(1))]), Expect::Any);
    add(
        "meta.head.geo_lower_gt_upper".into(),
        patch(vec![(head + 44, u32b(0x7FFF_0000)), (head + 48, u32b(16))]),
        Expect::Any,
    );
    add("meta.head.geo_upper_0".into(), patch(vec![(head + 48, u32b(0))]), Expect::Any);
    add(
        "meta.head.txnid_max".into(),
        patch(vec![(head + 28, u64b(u64::MAX)), (head + 196, u64b(u64::MAX))]),
        Expect::Any,
    );
    add("meta.head.main_mod_txnid_future".into(), patch(vec![(head + 108 + 40, u64b(1 << 40))]), Expect::Any);
    add("meta.head.gc_flags_garbage".into(), patch(vec![(head + 60, u16b(0xFFFF))]), Expect::Any);
    add("meta.head.main_flags_garbage".into(), patch(vec![(head + 108, u16b(0xFFFF))]), Expect::Any);
    add("meta.head.meta_page_flags".into(), patch(vec![(head + 10, u16b(0x0002))]), Expect::Any);

    // --- branch pages (the two deepest trees of the base, and the main tree)
    let mut branches: Vec<&PageRef> = Vec::new();
    for t in ["many", "plain", "@MAIN", "ints", "@GC"] {
        let b = l.of(t, |k| k == Kind::Branch);
        // the root and (if any) a non-root branch
        if let Some(r) = b.iter().find(|p| p.parent.is_none()) {
            branches.push(r);
        }
        if let Some(m) = b.iter().find(|p| p.parent.is_some()) {
            branches.push(m);
        }
    }
    for b in &branches {
        let tag = format!("branch.{}.page{}{}", b.tree, b.pgno, if b.parent.is_none() { ".root" } else { "" });
        let gc = b.tree == "@GC";
        let hard = if gc { Expect::Any } else { Expect::ErrHard };
        let soft = if gc { Expect::Any } else { Expect::ErrSoft };
        let n1 = b.nodes[1];
        let p = pg(b.pgno);
        add(format!("{tag}.child1=0xffffff"), patch(vec![(n1, u32b(0x00FF_FFFF))]), hard);
        add(format!("{tag}.child1=just_past_end"), patch(vec![(n1, u32b(l.file_pages + 2))]), hard);
        add(format!("{tag}.child1=first_unallocated"), patch(vec![(n1, u32b(l.first_unallocated))]), hard);
        add(format!("{tag}.child1=P_INVALID"), patch(vec![(n1, u32b(P_INVALID))]), hard);
        add(format!("{tag}.child1=0x7fffffff"), patch(vec![(n1, u32b(0x7FFF_FFFF))]), hard);
        add(format!("{tag}.child1=meta1"), patch(vec![(n1, u32b(1))]), hard);
        add(format!("{tag}.child0=meta0"), patch(vec![(b.nodes[0], u32b(0))]), hard);
        add(format!("{tag}.child1=self(cycle)"), patch(vec![(n1, u32b(b.pgno))]), hard);
        let last = *b.nodes.last().unwrap();
        add(format!("{tag}.child_last=self(cycle)"), patch(vec![(last, u32b(b.pgno))]), hard);
        if let Some(parent) = b.parent {
            add(format!("{tag}.child1=parent{parent}(cycle)"), patch(vec![(n1, u32b(parent))]), hard);
            let root = l.root_of(&b.tree);
            if root != parent {
                add(format!("{tag}.child1=root{root}(cycle)"), patch(vec![(n1, u32b(root))]), hard);
            }
        }
        // one child referenced twice (a subtree lost): readable, wrong
        add(
            format!("{tag}.child1=child0(dup)"),
            patch(vec![(n1, img[b.nodes[0]..b.nodes[0] + 4].to_vec())]),
            Expect::Any,
        );
        // a page of another tree
        if let Some(other) = l.pages.iter().find(|o| o.tree != b.tree && o.kind == Kind::Leaf && o.tree != "@GC") {
            add(
                format!("{tag}.child1=leaf{}of{}", other.pgno, other.tree),
                patch(vec![(n1, u32b(other.pgno))]),
                Expect::Any,
            );
        }
        if let Some(large) = l.pages.iter().find(|o| matches!(o.kind, Kind::Large(_))) {
            add(format!("{tag}.child1=large{}", large.pgno), patch(vec![(n1, u32b(large.pgno))]), hard);
        }
        for f in
            [0x0000u16, 0x0002, 0x0003, 0x0004, 0x0008, 0x0010, 0x0020, 0x0022, 0x0040, 0x0100, 0x2000, 0x8000, 0xFFFF]
        {
            add(format!("{tag}.flags={f:#06x}"), patch(vec![(p + 10, u16b(f))]), hard);
        }
        add(format!("{tag}.node1.ksize=0xffff"), patch(vec![(n1 + 6, u16b(0xFFFF))]), hard);
        let to_end = (p + ps - (n1 + 8) + 1) as u16;
        add(format!("{tag}.node1.ksize=past_end_by_1"), patch(vec![(n1 + 6, u16b(to_end))]), hard);
        add(format!("{tag}.node0.ksize=5(nonempty_first_key)"), patch(vec![(b.nodes[0] + 6, u16b(5))]), soft);
        add(format!("{tag}.node1.flags=0x01"), patch(vec![(n1 + 4, vec![0x01])]), soft);
        add(format!("{tag}.lower=0"), patch(vec![(p + 12, u16b(0))]), hard);
        add(format!("{tag}.lower=2(one_child)"), patch(vec![(p + 12, u16b(2))]), soft);
        add(format!("{tag}.lower_odd"), patch(vec![(p + 12, u16b(rd16(img, p + 12) | 1))]), hard);
        add(
            format!("{tag}.lower>upper"),
            patch(vec![(p + 12, u16b(4000.min(ps - 22) as u16)), (p + 14, u16b(10))]),
            hard,
        );
        add(format!("{tag}.upper=0xffff"), patch(vec![(p + 14, u16b(0xFFFF))]), hard);
        add(format!("{tag}.lower=upper=0xfffe"), patch(vec![(p + 12, u16b(0xFFFE)), (p + 14, u16b(0xFFFE))]), hard);
        add(format!("{tag}.entry1=0xfff0"), patch(vec![(p + 22, u16b(0xFFF0))]), hard);
        add(format!("{tag}.entry1=odd"), patch(vec![(p + 22, u16b(rd16(img, p + 22) | 1))]), soft);
        add(format!("{tag}.entry1=in_header"), patch(vec![(p + 22, u16b(0))]), soft);
        add(format!("{tag}.pgno_mismatch"), patch(vec![(p + 16, u32b(b.pgno + 1))]), hard);
        add(format!("{tag}.txnid_future"), patch(vec![(p, u64b(1_000_000))]), hard);
        add(format!("{tag}.zeroed"), patch(vec![(p, vec![0; ps])]), hard);
        add(format!("{tag}.separator_flip"), patch(vec![(n1 + 8, vec![img[n1 + 8] ^ 0x7f])]), Expect::Any);
    }

    // --- leaf pages: the first leaf of every tree, and a middle leaf of "many"
    let mut leaves: Vec<&PageRef> = Vec::new();
    for t in ["@MAIN", "plain", "big", "ints", "rev", "many", "@GC"] {
        let lv = l.of(t, |k| k == Kind::Leaf);
        if let Some(f) = lv.first() {
            leaves.push(f);
        }
        if t == "many" && lv.len() > 2 {
            leaves.push(lv[lv.len() / 2]);
        }
    }
    for lf in &leaves {
        let tag = format!("leaf.{}.page{}", lf.tree, lf.pgno);
        let gc = lf.tree == "@GC";
        let hard = if gc { Expect::Any } else { Expect::ErrHard };
        let soft = if gc { Expect::Any } else { Expect::ErrSoft };
        let p = pg(lf.pgno);
        let n0 = lf.nodes[0];
        let nl = *lf.nodes.last().unwrap();
        add(format!("{tag}.node0.ksize=60000"), patch(vec![(n0 + 6, u16b(60000))]), hard);
        let to_end = (p + ps - (n0 + 8) + 1) as u16;
        add(format!("{tag}.node0.ksize=past_end_by_1"), patch(vec![(n0 + 6, u16b(to_end))]), hard);
        add(format!("{tag}.nodelast.ksize=0xffff"), patch(vec![(nl + 6, u16b(0xFFFF))]), hard);
        let n0flags = img[n0 + 4];
        if n0flags == 0 {
            add(format!("{tag}.node0.dsize=0x7fffffff"), patch(vec![(n0, u32b(0x7FFF_FFFF))]), hard);
            let to_end = (p + ps - (n0 + 8 + rd16(img, n0 + 6) as usize) + 1) as u32;
            add(format!("{tag}.node0.dsize=past_end_by_1"), patch(vec![(n0, u32b(to_end))]), hard);
            add(format!("{tag}.node0.flags=N_BIG"), patch(vec![(n0 + 4, vec![0x01])]), Expect::Any);
            add(format!("{tag}.node0.flags=N_TREE"), patch(vec![(n0 + 4, vec![0x02])]), Expect::Any);
        }
        for f in [0x04u8, 0x06, 0x08, 0x10, 0x80, 0xFF] {
            add(format!("{tag}.node0.flags={f:#04x}"), patch(vec![(n0 + 4, vec![f])]), soft);
        }
        for f in
            [0x0000u16, 0x0001, 0x0003, 0x0004, 0x0008, 0x0010, 0x0012, 0x0022, 0x0042, 0x0062, 0x0100, 0x4000, 0xFFFF]
        {
            add(format!("{tag}.flags={f:#06x}"), patch(vec![(p + 10, u16b(f))]), hard);
        }
        add(format!("{tag}.lower=0(empty_leaf)"), patch(vec![(p + 12, u16b(0))]), soft);
        add(format!("{tag}.lower_odd"), patch(vec![(p + 12, u16b(rd16(img, p + 12) | 1))]), hard);
        add(
            format!("{tag}.lower>upper"),
            patch(vec![(p + 12, u16b(4000.min(ps - 22) as u16)), (p + 14, u16b(10))]),
            hard,
        );
        add(format!("{tag}.upper=0xffff"), patch(vec![(p + 14, u16b(0xFFFF))]), hard);
        add(format!("{tag}.entry0=0xfff0"), patch(vec![(p + 20, u16b(0xFFF0))]), hard);
        add(format!("{tag}.entry0=odd"), patch(vec![(p + 20, u16b(rd16(img, p + 20) | 1))]), soft);
        add(format!("{tag}.pgno_mismatch"), patch(vec![(p + 16, u32b(lf.pgno + 1))]), hard);
        add(format!("{tag}.txnid_future"), patch(vec![(p, u64b(1_000_000))]), hard);
        add(format!("{tag}.zeroed"), patch(vec![(p, vec![0; ps])]), hard);
        add(format!("{tag}.key_order_flip"), patch(vec![(n0 + 8, vec![img[n0 + 8] ^ 0x80])]), Expect::Any);
        if lf.nodes.len() > 1 {
            let (a, b) = (rd16(img, p + 20), rd16(img, p + 22));
            add(format!("{tag}.entries_swapped"), patch(vec![(p + 20, u16b(b)), (p + 22, u16b(a))]), soft);
        }
    }

    // --- table descriptors (records of the main table)
    for t in l.trees.iter().filter(|t| !t.name.starts_with('@')) {
        let tag = format!("table.{}", t.name);
        let d = t.desc;
        let main_root = l.root_of("@MAIN");
        add(format!("{tag}.root=0xffffff"), patch(vec![(d + 8, u32b(0x00FF_FFFF))]), Expect::ErrHard);
        add(format!("{tag}.root=5000000"), patch(vec![(d + 8, u32b(5_000_000))]), Expect::ErrHard);
        add(format!("{tag}.root=meta2"), patch(vec![(d + 8, u32b(2))]), Expect::ErrHard);
        add(format!("{tag}.root=main_root(cross)"), patch(vec![(d + 8, u32b(main_root))]), Expect::Any);
        add(format!("{tag}.root=P_INVALID_nonempty"), patch(vec![(d + 8, u32b(P_INVALID))]), Expect::Any);
        add(format!("{tag}.height=0"), patch(vec![(d + 2, u16b(0))]), Expect::Any);
        add(format!("{tag}.height=40"), patch(vec![(d + 2, u16b(40))]), Expect::ErrSoft);
        add(format!("{tag}.height=0xffff"), patch(vec![(d + 2, u16b(0xFFFF))]), Expect::ErrSoft);
        add(format!("{tag}.flags=0xffff"), patch(vec![(d, u16b(0xFFFF))]), Expect::Any);
        add(format!("{tag}.flags=DUPSORT"), patch(vec![(d, u16b(0x04))]), Expect::Any);
        add(format!("{tag}.flags=INTEGER_KEY|REVERSE_KEY"), patch(vec![(d, u16b(0x0A))]), Expect::Any);
        add(format!("{tag}.items=wrong"), patch(vec![(d + 32, u64b(123_456))]), Expect::Any);
        add(format!("{tag}.mod_txnid_future"), patch(vec![(d + 40, u64b(1 << 50))]), Expect::Any);
        if let Some(node) = t.node {
            add(format!("{tag}.node.dsize=47"), patch(vec![(node, u32b(47))]), Expect::Any);
            add(format!("{tag}.node.flags=0"), patch(vec![(node + 4, vec![0])]), Expect::Any);
            add(format!("{tag}.node.flags=N_TREE|N_DUP"), patch(vec![(node + 4, vec![6])]), Expect::Any);
        }
    }

    // --- large values
    for &(node, ksize, lp) in l.bigs.iter().take(3) {
        let tag = format!("large.page{lp}");
        let p = pg(lp);
        let dsize = rd32(img, node);
        let hard = Expect::ErrHard;
        let owner_gc = l.pages.iter().any(|x| x.pgno == lp && x.tree == "@GC");
        let (hard, soft) = if owner_gc { (Expect::Any, Expect::Any) } else { (hard, Expect::ErrSoft) };
        add(format!("{tag}.flags=LEAF"), patch(vec![(p + 10, u16b(0x02))]), hard);
        add(format!("{tag}.flags=0xffff"), patch(vec![(p + 10, u16b(0xFFFF))]), hard);
        add(format!("{tag}.npages=0"), patch(vec![(p + 12, u32b(0))]), hard);
        add(format!("{tag}.npages=huge"), patch(vec![(p + 12, u32b(0x7FFF_FFFF))]), hard);
        add(format!("{tag}.npages=past_end"), patch(vec![(p + 12, u32b(l.file_pages - lp + 3))]), hard);
        add(format!("{tag}.npages=+50(overlap)"), patch(vec![(p + 12, u32b(rd32(img, p + 12) + 50))]), Expect::Any);
        add(format!("{tag}.pgno_mismatch"), patch(vec![(p + 16, u32b(lp + 1))]), soft);
        add(format!("{tag}.txnid_future"), patch(vec![(p, u64b(1_000_000))]), soft);
        add(format!("{tag}.zeroed_header"), patch(vec![(p, vec![0; 20])]), hard);
        add(format!("{tag}.ref=0xffffff"), patch(vec![(node + 8 + ksize, u32b(0x00FF_FFFF))]), hard);
        add(format!("{tag}.ref=P_INVALID"), patch(vec![(node + 8 + ksize, u32b(P_INVALID))]), hard);
        add(format!("{tag}.ref=meta1"), patch(vec![(node + 8 + ksize, u32b(1))]), hard);
        add(format!("{tag}.ref=last_page"), patch(vec![(node + 8 + ksize, u32b(l.file_pages - 1))]), hard);
        if let Some(leaf) = l.pages.iter().find(|x| x.kind == Kind::Leaf && x.tree == "many") {
            add(format!("{tag}.ref=leaf{}", leaf.pgno), patch(vec![(node + 8 + ksize, u32b(leaf.pgno))]), hard);
        }
        add(format!("{tag}.dsize=+10pages"), patch(vec![(node, u32b(dsize + 10 * ps as u32))]), hard);
        add(format!("{tag}.dsize=0x7fffffff"), patch(vec![(node, u32b(0x7FFF_FFFF))]), hard);
        add(format!("{tag}.dsize=0"), patch(vec![(node, u32b(0))]), Expect::Any);
    }
    cases
}

// ---------------------------------------------------------------------------
// The child: open, read everything, report

const CHILD_ENV: &str = "RDBX_CORRUPTION_CHILD";

#[derive(Default)]
struct Report {
    errors: Vec<String>,
    violations: Vec<String>,
    notes: Vec<String>,
}

struct Bounds {
    max_page: u32,
    max_steps: usize,
}

impl Report {
    fn err(&mut self, phase: &str, what: &str, e: &Error, b: &Bounds) {
        if let Error::Corrupted { page, .. } = e {
            if *page >= b.max_page {
                self.violations.push(format!(
                    "{phase}: {what}: Corrupted names page {page}, beyond the file ({} pages): {e}",
                    b.max_page
                ));
            }
        }
        self.errors.push(format!("{phase}: {what}: {e:?}"));
    }
}

/// Reads one byte of every 4 KiB of a value (every OS page it spans).
fn touch(v: &[u8]) {
    std::hint::black_box(v.iter().step_by(4096).chain(v.last()).fold(0u8, |a, x| a ^ x));
}

/// Reads everything through `env`, recording errors in `rep`.
fn read_all(env: &Env, spec: BaseSpec, phase: &str, b: &Bounds, rep: &mut Report) {
    let txn = match env.begin_ro_txn() {
        Ok(t) => t,
        Err(e) => return rep.err(phase, "begin_ro_txn", &e, b),
    };
    let names = match txn.table_names() {
        Ok(n) => n,
        Err(e) => {
            rep.err(phase, "table_names", &e, b);
            Vec::new()
        }
    };
    if names.len() > 10_000 {
        rep.violations.push(format!("{phase}: table_names returned {} names", names.len()));
    }
    // (table name, the keys the base put there)
    type Keys = Vec<Vec<u8>>;
    let mut tables: Vec<(Option<Vec<u8>>, Keys)> = vec![(None, Vec::new())];
    let specs = base_tables(spec);
    for s in &specs {
        let known: Vec<Vec<u8>> = s.records.iter().map(|(k, _)| k.clone()).collect();
        tables.push((Some(s.name.as_bytes().to_vec()), known));
    }
    for n in names.iter().take(100) {
        if !specs.iter().any(|s| s.name.as_bytes() == n.as_slice()) {
            tables.push((Some(n.clone()), Vec::new()));
        }
    }
    for (name, known) in &tables {
        let shown = name.as_ref().map_or("@MAIN".to_string(), |n| String::from_utf8_lossy(n).into_owned());
        let db = match txn.open_db_bytes(name.as_deref()) {
            Ok(db) => db,
            Err(Error::NotFound) => continue,
            Err(e) => {
                rep.err(phase, &format!("open_db {shown}"), &e, b);
                continue;
            }
        };
        if let Err(e) = txn.db_stat(db) {
            rep.err(phase, &format!("db_stat {shown}"), &e, b);
        }
        if let Err(e) = txn.db_flags(db) {
            rep.err(phase, &format!("db_flags {shown}"), &e, b);
        }
        // full scans, bounded
        let mut seen_keys = Vec::new();
        for fwd in [true, false] {
            let dir = if fwd { "forward" } else { "backward" };
            let mut c = match txn.cursor(db) {
                Ok(c) => c,
                Err(e) => {
                    rep.err(phase, &format!("cursor {shown}"), &e, b);
                    break;
                }
            };
            let mut steps = 0usize;
            let mut r = if fwd { c.first() } else { c.last() };
            loop {
                match r {
                    Ok(None) => break,
                    Ok(Some((k, v))) => {
                        touch(v);
                        if fwd && seen_keys.len() < 5000 {
                            seen_keys.push(k.to_vec());
                        }
                    }
                    Err(e) => {
                        rep.err(phase, &format!("{dir} scan {shown} step {steps}"), &e, b);
                        break;
                    }
                }
                steps += 1;
                if steps > b.max_steps {
                    rep.violations.push(format!(
                        "{phase}: {dir} scan of {shown} did not end after {steps} records (more than the file can hold): unbounded"
                    ));
                    break;
                }
                r = if fwd { c.next() } else { c.prev() };
            }
        }
        // gets of every key seen and every key the base holds; set_range probes
        let mut gets = 0;
        for k in seen_keys.iter().chain(known.iter()) {
            gets += 1;
            if gets > 8000 {
                break;
            }
            match txn.get(db, k) {
                Ok(Some(v)) => {
                    touch(v);
                }
                Ok(None) => {}
                Err(e) => {
                    rep.err(phase, &format!("get {shown}"), &e, b);
                    break;
                }
            }
        }
        if let Ok(mut c) = txn.cursor(db) {
            for k in known.iter().step_by(37).map(|k| k.as_slice()).chain([&b""[..], b"\xff\xff"]) {
                if let Err(e) = c.set_range(k) {
                    rep.err(phase, &format!("set_range {shown}"), &e, b);
                    break;
                }
                if let Err(e) = c.next() {
                    rep.err(phase, &format!("next after set_range {shown}"), &e, b);
                    break;
                }
            }
        }
    }
}

/// Pages of the data file `data` as it is now (the writes grow it).
fn file_pages(data: &Path, ps: usize) -> u32 {
    std::fs::metadata(data).map_or(0, |m| m.len() / ps as u64) as u32
}

fn write_probe(env: &Env, spec: BaseSpec, data: &Path, b: &Bounds, rep: &mut Report) {
    let mut txn = match env.begin_rw_txn() {
        Ok(t) => t,
        Err(e) => return rep.err("rw-write", "begin_rw_txn", &e, b),
    };
    for name in ["plain", "ints", "many", "big"] {
        let db = match txn.open_db(Some(name)) {
            Ok(db) => db,
            Err(Error::NotFound) => continue,
            Err(e) => {
                rep.err("rw-write", &format!("open_db {name}"), &e, b);
                continue;
            }
        };
        let key: Vec<u8> = if name == "ints" { 12345u64.to_ne_bytes().to_vec() } else { b"rdbx-probe".to_vec() };
        if let Err(e) =
            txn.put(db, &key, &pattern(if name == "big" { 2 * spec.ps + 3 } else { 16 }, 1), PutFlags::empty())
        {
            rep.err("rw-write", &format!("put {name}"), &e, b);
            continue;
        }
        let victim: Vec<u8> =
            if name == "ints" { 7919u64.to_ne_bytes().to_vec() } else { format!("{name}-00001").into_bytes() };
        if let Err(e) = txn.del(db, &victim, None) {
            rep.err("rw-write", &format!("del {name}"), &e, b);
        }
    }
    // A write cursor's walk deleting every seventh record (it keeps its
    // page path between its moves and deletes where it stands). Its
    // deletes copy pages to new numbers, so damage it meets later may be
    // named on a copy: a page past the original file, within the grown one.
    let grown = || Bounds { max_page: b.max_page.max(file_pages(data, spec.ps)), max_steps: b.max_steps };
    let b = &grown();
    for name in ["plain", "ints"] {
        let Ok(db) = txn.open_db(Some(name)) else { continue };
        let mut c = match txn.rw_cursor(db) {
            Ok(c) => c,
            Err(e) => {
                rep.err("rw-write", &format!("rw_cursor {name}"), &e, b);
                continue;
            }
        };
        let mut at = c.first().map(|p| p.is_some());
        for i in 0..5_000 {
            match at {
                Ok(true) => {}
                Ok(false) => break,
                Err(e) => {
                    rep.err("rw-write", &format!("cursor walk {name}"), &e, b);
                    break;
                }
            }
            if i % 7 == 0 {
                if let Err(e) = c.del() {
                    rep.err("rw-write", &format!("cursor del {name}"), &e, &grown());
                    break;
                }
            }
            at = c.next().map(|p| p.is_some());
            if let Err(e) = &at {
                rep.err("rw-write", &format!("cursor walk {name}"), e, &grown());
                break;
            }
        }
    }
    if let Err(e) = txn.commit() {
        rep.err("rw-write", "commit", &e, b);
    }
}

fn panic_msg(p: &(dyn std::any::Any + Send)) -> String {
    p.downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| p.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "?".into())
}

/// One phase under catch_unwind; returns whether an error was reported.
fn phase(rep: &mut Report, name: &str, f: impl FnOnce(&mut Report)) -> bool {
    let before = rep.errors.len();
    if let Err(p) = catch_unwind(AssertUnwindSafe(|| f(rep))) {
        rep.violations.push(format!("PANIC in {name}: {}", panic_msg(&*p)));
    }
    rep.errors.len() > before
}

fn child_main(dir: &Path, spec: BaseSpec, expect: Expect, max_page: u32) -> Report {
    let mut rep = Report::default();
    let data = dir.join("mdbx.dat");
    let before = std::fs::read(&data).unwrap_or_default();
    let b = Bounds { max_page, max_steps: max_page as usize * (spec.ps / 10) + 100 };

    // read-only
    let ro_err = phase(&mut rep, "read-only", |rep| match Env::builder().read_only(true).max_dbs(64).open(dir) {
        Ok(env) => read_all(&env, spec, "ro", &b, rep),
        Err(e) => rep.err("ro", "open", &e, &b),
    });
    let after = std::fs::read(&data).unwrap_or_default();
    if after != before {
        let first = before.iter().zip(&after).position(|(x, y)| x != y);
        rep.violations.push(format!(
            "read-only open changed the data file: length {} -> {}, first differing byte {first:?}",
            before.len(),
            after.len()
        ));
    }
    match expect {
        Expect::ErrHard | Expect::ErrHardRw if !ro_err => {
            rep.violations.push("read-only: the damage was read but no error was returned".into())
        }
        Expect::ErrSoft if !ro_err => rep.notes.push("SOFT: read-only: damage not noticed (no error)".into()),
        _ => {}
    }

    // read-write: open, read, write
    // (no fsync in the read-write pass: it is about reactions, not durability)
    let rw_err = phase(&mut rep, "read-write", |rep| {
        match open_builder(spec.ps).durability(Durability::UtterlyNoSync).open(dir) {
            Ok(env) => {
                read_all(&env, spec, "rw", &b, rep);
                write_probe(&env, spec, &data, &b, rep);
                // The writes may have grown the file: its pages now exist.
                let after = Bounds { max_page: b.max_page.max(file_pages(&data, spec.ps)), max_steps: b.max_steps };
                read_all(&env, spec, "rw-after-write", &after, rep);
            }
            Err(e) => rep.err("rw", "open", &e, &b),
        }
    });
    if expect == Expect::ErrHardRw && !rw_err {
        rep.violations.push("read-write: a file without a valid meta page was opened (and read) without error".into());
    }
    rep
}

#[test]
fn corruption_child() {
    let Ok(dir) = std::env::var(CHILD_ENV) else {
        return;
    };
    let var = |n: &str| std::env::var(n).unwrap_or_else(|_| panic!("{n} not set"));
    let dir = PathBuf::from(dir);
    let spec = BASES[var("RDBX_CORRUPTION_BASE").parse::<usize>().unwrap()];
    let expect = match var("RDBX_CORRUPTION_EXPECT").as_str() {
        "Any" => Expect::Any,
        "ErrSoft" => Expect::ErrSoft,
        "ErrHard" => Expect::ErrHard,
        _ => Expect::ErrHardRw,
    };
    let max_page: u32 = var("RDBX_CORRUPTION_MAX_PAGE").parse().unwrap();
    let rep = child_main(&dir, spec, expect, max_page);
    // libtest has printed "test corruption_child ... " without a newline
    println!();
    for e in rep.errors.iter().take(6) {
        println!("RDBX-CHILD-ERR {e}");
    }
    for n in &rep.notes {
        println!("RDBX-CHILD-NOTE {n}");
    }
    for v in &rep.violations {
        println!("RDBX-CHILD-FAIL {v}");
    }
    println!("RDBX-CHILD-DONE errors={}", rep.errors.len());
}

// ---------------------------------------------------------------------------
// The parent: build bases, run every case in a child process

struct Outcome {
    case: String,
    fail: Vec<String>,
    soft: bool,
    errored: bool,
    first_err: Option<String>,
}

fn run_case(spec: BaseSpec, img: &[u8], case: &Case, work: &Path, max_page: u32) -> Outcome {
    let safe: String =
        case.name.chars().map(|c| if c.is_ascii_alphanumeric() || c == '.' || c == '-' { c } else { '_' }).collect();
    let dir = work.join(safe);
    std::fs::create_dir_all(&dir).unwrap();
    let data = dir.join("mdbx.dat");
    let mut bytes = img.to_vec();
    match &case.damage {
        Damage::Truncate(n) => bytes.truncate(*n),
        Damage::Patch(w) => {
            for (at, v) in w {
                bytes[*at..*at + v.len()].copy_from_slice(v);
            }
        }
    }
    std::fs::write(&data, &bytes).unwrap();

    let exe = std::env::current_exe().unwrap();
    let mut child = Command::new(exe)
        .args(["--exact", "corruption_child", "--nocapture", "--test-threads=1"])
        .env(CHILD_ENV, &dir)
        .env("RDBX_CORRUPTION_BASE", spec.id.to_string())
        .env("RDBX_CORRUPTION_EXPECT", format!("{:?}", case.expect))
        .env("RDBX_CORRUPTION_MAX_PAGE", max_page.to_string())
        .env("RUST_BACKTRACE", "0")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut out_pipe = child.stdout.take().unwrap();
    let mut err_pipe = child.stderr.take().unwrap();
    let t_out = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = out_pipe.read_to_string(&mut s);
        s
    });
    let t_err = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = err_pipe.read_to_string(&mut s);
        s
    });
    let start = Instant::now();
    let limit = Duration::from_secs(60);
    let mut fail = Vec::new();
    let status = loop {
        match child.try_wait().unwrap() {
            Some(st) => break Some(st),
            None if start.elapsed() > limit => {
                let _ = child.kill();
                let _ = child.wait();
                fail.push(format!("HANG: no answer within {limit:?} (child killed)"));
                break None;
            }
            None => std::thread::sleep(Duration::from_millis(5)),
        }
    };
    let stdout = t_out.join().unwrap();
    let stderr = t_err.join().unwrap();
    if let Some(st) = status {
        if !stdout.contains("RDBX-CHILD-DONE") {
            #[cfg(unix)]
            let sig = std::os::unix::process::ExitStatusExt::signal(&st);
            #[cfg(not(unix))]
            let sig: Option<i32> = None;
            let tail: String =
                stderr.lines().rev().take(8).collect::<Vec<_>>().into_iter().rev().collect::<Vec<_>>().join(" | ");
            fail.push(format!("CRASH: child ended without finishing ({st}, signal {sig:?}); stderr: {tail}"));
        }
    }
    let mut soft = false;
    let mut first_err = None;
    let mut errored = false;
    for line in stdout.lines() {
        // (a line may start with libtest's "test corruption_child ... ")
        let line = line.find("RDBX-CHILD-").map_or(line, |i| &line[i..]);
        if let Some(v) = line.strip_prefix("RDBX-CHILD-FAIL ") {
            let mut v = v.to_string();
            if v.starts_with("PANIC") {
                if let Some(loc) = stderr.lines().find(|l| l.contains("panicked at")) {
                    v.push_str(&format!(" [{}]", loc.trim()));
                }
            }
            fail.push(v);
        } else if line.starts_with("RDBX-CHILD-NOTE SOFT") {
            soft = true;
        } else if let Some(e) = line.strip_prefix("RDBX-CHILD-ERR ") {
            errored = true;
            if first_err.is_none() {
                first_err = Some(e.to_string());
            }
        }
    }
    if soft && std::env::var("RDBX_CORRUPTION_STRICT").as_deref() == Ok("1") {
        fail.push("SOFT expectation (strict mode): the damage was not noticed".into());
    }
    if !fail.is_empty() {
        if let Ok(keep) = std::env::var("RDBX_CORRUPTION_KEEP") {
            let to = Path::new(&keep).join(format!("base{}-{}", spec.id, dir.file_name().unwrap().to_string_lossy()));
            let _ = std::fs::create_dir_all(&to);
            let _ = std::fs::write(to.join("mdbx.dat"), &bytes);
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    Outcome { case: case.name.clone(), fail, soft, errored, first_err }
}

/// The kind of a violation (numbers masked), to group alike ones.
fn signature(v: &str) -> String {
    let kind = if let Some(i) = v.find("Corrupted names page") {
        let reason = v[i..].split(": ").last().unwrap_or("");
        format!("Corrupted {{ page }} names a page beyond the file (reason: {reason})")
    } else if v.starts_with("CRASH") {
        v.split("; stderr").next().unwrap_or(v).to_string()
    } else if let Some(i) = v.find(": ") {
        // drop the phase/operation prefix of "phase: op: message" lines
        if v.starts_with("PANIC") {
            v.to_string()
        } else {
            v[i + 2..].to_string()
        }
    } else {
        v.to_string()
    };
    let mut out = String::new();
    let mut last_digit = false;
    for c in kind.chars() {
        if c.is_ascii_digit() {
            if !last_digit {
                out.push('N');
            }
            last_digit = true;
        } else {
            out.push(c);
            last_digit = false;
        }
    }
    out
}

fn run_base(spec: BaseSpec, default_seeds: usize) {
    let seeds = std::env::var("RDBX_CORRUPTION_SEEDS").ok().and_then(|v| v.parse().ok()).unwrap_or(default_seeds);
    let tmp = tempfile::tempdir().unwrap();
    let base_dir = tmp.path().join("base");
    let data = create_base(spec, &base_dir);
    let img = std::fs::read(&data).unwrap();
    let layout = Layout::parse(&img, spec.ps);
    let max_page = layout.file_pages.max(layout.first_unallocated);
    let mut cases = make_cases(&img, &layout, seeds);
    if let Ok(only) = std::env::var("RDBX_CORRUPTION_ONLY") {
        cases.retain(|c| c.name.contains(&only));
    } else if cfg!(debug_assertions) && std::env::var("RDBX_CORRUPTION_ALL").as_deref() != Ok("1") {
        // unoptimized builds are slow: all meta and truncation cases, a quarter of the rest
        let mut i = 0;
        cases.retain(|c| {
            i += 1;
            c.name.starts_with("meta") || c.name.starts_with("truncate") || i % 4 == 0
        });
        eprintln!("debug build: running a sample of the cases (--release or RDBX_CORRUPTION_ALL=1 for all)");
    }
    {
        // sanity: the undamaged base reads without errors
        let rep = child_main(&base_dir, spec, Expect::Any, max_page);
        assert!(
            rep.errors.is_empty() && rep.violations.is_empty(),
            "base {spec:?} is not clean: {:?} {:?}",
            rep.errors,
            rep.violations
        );
        let _ = std::fs::write(&data, &img); // undo the probe write
    }
    let trees: BTreeSet<String> = layout
        .pages
        .iter()
        .map(|p| format!("{}:{}", p.tree, layout.pages.iter().filter(|q| q.tree == p.tree).count()))
        .collect();
    eprintln!(
        "base {} (ps {}): {} pages in file, first_unallocated {}, head meta {}, pages per tree {trees:?}; {} cases",
        spec.id,
        spec.ps,
        layout.file_pages,
        layout.first_unallocated,
        layout.head,
        cases.len()
    );
    let work = tmp.path().join("cases");
    let next = AtomicUsize::new(0);
    let outcomes = Mutex::new(Vec::new());
    let workers = std::thread::available_parallelism().map_or(2, |n| 2 * n.get()).clamp(2, 12);
    std::thread::scope(|s| {
        for _ in 0..workers {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::SeqCst);
                let Some(case) = cases.get(i) else { break };
                let o = run_case(spec, &img, case, &work, max_page);
                outcomes.lock().unwrap().push(o);
            });
        }
    });
    let mut outcomes = outcomes.into_inner().unwrap();
    outcomes.sort_by(|a, b| a.case.cmp(&b.case));
    let failed: Vec<&Outcome> = outcomes.iter().filter(|o| !o.fail.is_empty()).collect();
    let soft: Vec<&Outcome> = outcomes.iter().filter(|o| o.soft).collect();
    let errored = outcomes.iter().filter(|o| o.errored).count();
    eprintln!(
        "base {}: {} cases: {} answered with an error somewhere, {} without; {} soft misses; {} FAILED",
        spec.id,
        outcomes.len(),
        errored,
        outcomes.len() - errored,
        soft.len(),
        failed.len()
    );
    for o in &soft {
        eprintln!("  soft miss (damage read but not reported): {}", o.case);
    }
    if std::env::var("RDBX_CORRUPTION_VERBOSE").is_ok() {
        for o in &outcomes {
            eprintln!("  {} -> {}", o.case, o.first_err.as_deref().unwrap_or("no error"));
        }
    }
    // group the violations by kind (numbers and table names masked)
    let mut kinds: std::collections::BTreeMap<String, (usize, Vec<String>, String)> = Default::default();
    for o in &failed {
        let mut seen = HashSet::new();
        for f in &o.fail {
            let sig: String = signature(f);
            if !seen.insert(sig.clone()) {
                continue;
            }
            let e = kinds.entry(sig).or_insert_with(|| (0, Vec::new(), f.clone()));
            e.0 += 1;
            if e.1.len() < 4 {
                e.1.push(o.case.clone());
            }
        }
    }
    let mut msg = String::new();
    for (n, examples, first) in kinds.values() {
        msg.push_str(&format!("\n  {n} case(s), e.g. {}:\n      {first}", examples.join(", ")));
    }
    msg.push_str(&format!("\n  failing cases (base {} ps {}):", spec.id, spec.ps));
    for o in &failed {
        msg.push_str(&format!("\n    {}", o.case));
    }
    assert!(failed.is_empty(), "{} of {} damaged files were mishandled:{msg}", failed.len(), outcomes.len());
}

#[test]
fn corruption_page_4096() {
    run_base(BASES[0], 60);
}

#[test]
fn corruption_page_256() {
    run_base(BASES[1], 60);
}

#[test]
fn corruption_page_65536() {
    run_base(BASES[2], 25);
}

// ---------------------------------------------------------------------------
// Damaged counters: an edit must not wrap a tree counter read from the file

/// Sets the `items` field of table `table`'s record to `items` in the file
/// at `path` (found by the walker above) and returns the damaged image.
fn set_table_items(path: &Path, ps: usize, table: &str, items: u64) -> Vec<u8> {
    let mut img = std::fs::read(path).unwrap();
    let l = Layout::parse(&img, ps);
    let t = l.trees.iter().find(|t| t.name == table).unwrap_or_else(|| panic!("no table {table}"));
    assert!(t.node.is_some(), "{table} is a named table");
    img[t.desc + 32..t.desc + 40].copy_from_slice(&items.to_le_bytes());
    std::fs::write(path, &img).unwrap();
    img
}

type Edit = fn(&mut rdbx::RwTxn<'_>, rdbx::Db) -> rdbx::Result<()>;

/// Issue 10 item 2: a table record whose `items` is 0 while the table has
/// records. Deleting a record (or overwriting one) would take the count
/// below zero: the edit must fail with `Corrupted` (release builds used to
/// commit `entries: 18446744073709551615`, debug builds panicked), the
/// transaction must not commit, and the file must keep its last commit.
#[test]
fn zero_items_counter_is_corruption_not_wraparound() {
    let tmp = tempfile::tempdir().unwrap();
    let ps = 4096;
    let path = {
        let env = open_builder(ps).open(tmp.path()).unwrap();
        let mut txn = env.begin_rw_txn().unwrap();
        let plain = txn.create_db(Some("plain"), DbFlags::empty()).unwrap();
        let dups = txn.create_db(Some("dups"), DbFlags::DUP_SORT).unwrap();
        for i in 0..300u32 {
            txn.put(plain, format!("k{i:04}").as_bytes(), &pattern(20, i as usize), PutFlags::empty()).unwrap();
            for v in 0..(1 + i % 4) {
                txn.put(dups, format!("k{i:04}").as_bytes(), format!("v{v}").as_bytes(), PutFlags::empty()).unwrap();
            }
        }
        txn.commit().unwrap();
        env.data_path().to_path_buf()
    };
    for (table, flags) in [("plain", DbFlags::empty()), ("dups", DbFlags::DUP_SORT)] {
        set_table_items(&path, ps, table, 0);
        let edits: [(&str, Edit); 4] = [
            ("del", |t, db| t.del(db, b"k0100", None).map(|_| ())),
            ("del one value", |t, db| t.del(db, b"k0003", Some(b"v2")).map(|_| ())),
            ("overwrite", |t, db| t.put(db, b"k0100", b"other", PutFlags::empty())),
            ("replace all values", |t, db| t.put(db, b"k0003", b"v9", PutFlags::ALL_DUPS)),
        ];
        for (what, edit) in edits {
            // (A multimap put adds a value: nothing to take below zero.)
            if (flags.is_empty() && what.contains("value")) || (!flags.is_empty() && what == "overwrite") {
                continue;
            }
            let env = open_builder(ps).open(tmp.path()).unwrap();
            // (Opening may apply the builder's geometry: compare from here.)
            let img = std::fs::read(&path).unwrap();
            let mut txn = env.begin_rw_txn().unwrap();
            let db = txn.open_db(Some(table)).unwrap();
            let r = edit(&mut txn, db);
            assert!(matches!(r, Err(Error::Corrupted { .. })), "{table}: {what}: {r:?}");
            assert!(txn.commit().is_err(), "{table}: {what}: the failed transaction must not commit");
            let r = env.begin_ro_txn().unwrap();
            let db = r.open_db(Some(table)).unwrap();
            assert_eq!(r.db_stat(db).unwrap().entries, 0, "{table}: {what}: the last commit stays");
            assert!(r.get(db, b"k0100").unwrap().is_some());
            drop(r);
            drop(env);
            assert!(std::fs::read(&path).unwrap() == img, "{table}: {what}: the data file changed");
        }
        set_table_items(&path, ps, table, if flags.is_empty() { 300 } else { 750 });
    }
}
