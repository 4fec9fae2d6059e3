//! Damaged multimap pages: random bytes of the leaf pages that hold sub-pages,
//! DUPFIX sub-pages and nested trees are overwritten, then the file is read,
//! written (puts and deletes of single values, which edit sub-pages in place)
//! and checked. Every outcome is either success or an error; a panic fails the
//! test. (The broad damaged-file suite, with crashes and hangs caught in child
//! processes, is corruption.rs; it has no multimap tables.)
//!
//! `RDBX_MULTIMAP_DAMAGE_CASES` sets the number of damaged copies per page size.
mod common;
use common::Rng;

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::Path;

use rdbx::{DbFlags, Env, Geometry, PutFlags};

const TABLES: [(&str, DbFlags); 3] = [
    ("dups", DbFlags::DUP_SORT),
    ("fixed", DbFlags::DUP_SORT.union(DbFlags::DUP_FIXED)),
    ("ints", DbFlags::DUP_SORT.union(DbFlags::INTEGER_DUP).union(DbFlags::DUP_FIXED)),
];

fn builder(ps: usize) -> rdbx::EnvBuilder {
    Env::builder().max_dbs(4).geometry(Geometry { page_size: Some(ps), ..Default::default() })
}

/// Keys with 1 to ~300 values: plain nodes, sub-pages and nested trees.
fn create(dir: &Path, ps: usize) {
    let env = builder(ps).open(dir).unwrap();
    let mut txn = env.begin_rw_txn().unwrap();
    for (name, flags) in TABLES {
        let db = txn.create_db(Some(name), flags).unwrap();
        for k in 0..40u32 {
            let n: u32 = [1, 2, 5, 20, 60, 300][k as usize % 6];
            for v in 0..n {
                let val = match name {
                    "dups" => format!("v{:05}{}", v * 7, "x".repeat((v % 9) as usize)).into_bytes(),
                    _ => (u64::from(v) * 13 + u64::from(k)).to_ne_bytes().to_vec(),
                };
                txn.put(db, format!("key{k:03}").as_bytes(), &val, PutFlags::empty()).unwrap();
            }
        }
    }
    txn.commit().unwrap();
}

/// Page numbers of leaf pages (LEAF flag, not large) past the metas.
fn leaf_pages(img: &[u8], ps: usize) -> Vec<usize> {
    (3..img.len() / ps)
        .filter(|&p| {
            let f = u16::from_le_bytes([img[p * ps + 10], img[p * ps + 11]]);
            f & 0x02 != 0 && f & 0x04 == 0
        })
        .collect()
}

/// Byte ranges of the sub-pages (values of N_DUP nodes without N_TREE) on
/// the leaf pages `leaves`, with their page numbers.
fn subpages(img: &[u8], ps: usize, leaves: &[usize]) -> Vec<(usize, std::ops::Range<usize>)> {
    let rd16 = |o: usize| u16::from_le_bytes([img[o], img[o + 1]]) as usize;
    let mut out = Vec::new();
    for &p in leaves {
        let base = p * ps;
        if rd16(base + 10) & 0x20 != 0 {
            continue; // DUPFIX leaf: no nodes
        }
        for i in 0..rd16(base + 12) / 2 {
            let node = base + 20 + rd16(base + 20 + 2 * i);
            let dsize = u32::from_le_bytes(img[node..node + 4].try_into().unwrap()) as usize;
            if img[node + 4] == 0x04 {
                let start = node + 8 + rd16(node + 6);
                out.push((p, start..start + dsize));
            }
        }
    }
    out
}

/// Reads, writes and checks a damaged copy; `Err` describes a panic.
fn exercise(dir: &Path, rng: &mut Rng) -> Result<(), String> {
    let seed = rng.next();
    catch_unwind(AssertUnwindSafe(|| {
        let Ok(env) = Env::builder().max_dbs(4).open(dir) else { return };
        if let Ok(txn) = env.begin_ro_txn() {
            for (name, _) in TABLES {
                let Ok(db) = txn.open_db(Some(name)) else { continue };
                if let Ok(mut c) = txn.cursor(db) {
                    let mut errors = 0;
                    for _ in 0..20_000 {
                        match c.next() {
                            Ok(Some(_)) => {}
                            Ok(None) => break,
                            Err(_) => {
                                // A cursor that met damage still answers
                                // (a record or an error), as a caller that
                                // goes on with it would ask.
                                let _ = c.get_current();
                                let _ = c.count();
                                let _ = c.prev();
                                errors += 1;
                                if errors > 3 {
                                    break;
                                }
                            }
                        }
                    }
                }
                let _ = txn.get(db, b"key004");
            }
        }
        let mut r = Rng(seed | 1);
        if let Ok(mut txn) = env.begin_rw_txn() {
            for (name, _) in TABLES {
                let Ok(db) = txn.open_db(Some(name)) else { continue };
                for _ in 0..30 {
                    let key = format!("key{:03}", r.index(40));
                    let val = match name {
                        "dups" => format!("v{:05}", r.index(2500)).into_bytes(),
                        _ => (r.index(4000) as u64).to_ne_bytes().to_vec(),
                    };
                    let _ = if r.index(2) == 0 {
                        txn.put(db, key.as_bytes(), &val, PutFlags::empty())
                    } else {
                        txn.del(db, key.as_bytes(), Some(&val)).map(|_| ())
                    };
                }
            }
            // A write cursor's walk deleting every third value (it keeps
            // its page path between moves and deletes where it stands).
            for (name, _) in TABLES {
                let Ok(db) = txn.open_db(Some(name)) else { continue };
                let Ok(mut c) = txn.rw_cursor(db) else { continue };
                let mut at = c.first().map(|p| p.is_some());
                for i in 0..3_000 {
                    if !matches!(at, Ok(true)) {
                        let _ = c.get_current();
                        break;
                    }
                    if i % 3 == 0 && c.del().is_err() {
                        let _ = c.next();
                        break;
                    }
                    at = c.next().map(|p| p.is_some());
                }
            }
            let _ = txn.commit();
        }
        let _ = env.check(&Default::default(), &mut |_| {});
    }))
    .map_err(|p| {
        p.downcast_ref::<String>()
            .cloned()
            .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_default()
    })
}

fn run(ps: usize, default_cases: usize) {
    let cases = std::env::var("RDBX_MULTIMAP_DAMAGE_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(default_cases);
    let tmp = tempfile::tempdir().unwrap();
    let base = tmp.path().join("base");
    create(&base, ps);
    let img = std::fs::read(base.join("mdbx.dat")).unwrap();
    let leaves = leaf_pages(&img, ps);
    let subs = subpages(&img, ps, &leaves);
    eprintln!("page size {ps}: {} leaf pages, {} sub-pages", leaves.len(), subs.len());
    assert!(subs.len() >= 10, "the base has too few sub-pages: {}", subs.len());
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15 ^ ps as u64);
    let mut failures = Vec::new();
    for case in 0..cases {
        let mut damaged = img.clone();
        // Half the cases hit a sub-page (header, entries or items), half any
        // byte of a leaf page.
        let (page, range) = if rng.index(2) == 0 {
            subs[rng.index(subs.len())].clone()
        } else {
            let p = leaves[rng.index(leaves.len())];
            (p, p * ps + 20..(p + 1) * ps)
        };
        for _ in 0..1 + rng.index(3) {
            let at = range.start + rng.index(range.len());
            damaged[at] = match rng.index(3) {
                0 => damaged[at] ^ (1 << rng.index(8)),
                1 => 0,
                _ => rng.next() as u8,
            };
        }
        let dir = tmp.path().join(format!("case-{case}"));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("mdbx.dat"), &damaged).unwrap();
        if let Err(msg) = exercise(&dir, &mut rng) {
            failures.push(format!("case {case} (page {page}): panic: {msg}"));
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }
    assert!(failures.is_empty(), "{} of {cases} damaged copies panicked:\n{}", failures.len(), failures.join("\n"));
}

#[test]
fn damaged_multimap_pages_4096() {
    run(4096, 300);
}

#[test]
fn damaged_multimap_pages_256() {
    run(256, 300);
}

/// A cursor that fails to enter a key's nested tree (its only page
/// damaged) keeps answering with errors: `get_current`, `count` and further
/// moves after the failed step return `Err` or a record, never panic.
#[test]
fn cursor_after_a_damaged_nested_tree_answers() {
    let tmp = tempfile::tempdir().unwrap();
    {
        let env = builder(4096).open(tmp.path()).unwrap();
        let mut txn = env.begin_rw_txn().unwrap();
        let db = txn.create_db(Some("dups"), DbFlags::DUP_SORT).unwrap();
        // key0 and key2 with one value, key1 with 400 (a nested tree of one leaf).
        for (k, n) in [(0u32, 1u64), (1, 400), (2, 1)] {
            for v in 0..n {
                txn.put(db, format!("key{k}").as_bytes(), &v.to_be_bytes(), PutFlags::empty()).unwrap();
            }
        }
        txn.commit().unwrap();
    }
    let path = tmp.path().join("mdbx.dat");
    let mut img = std::fs::read(&path).unwrap();
    let ps = 4096;
    let rd16 = |img: &[u8], o: usize| u16::from_le_bytes([img[o], img[o + 1]]) as usize;
    // The nested tree's root: the N_DUP | N_TREE node's descriptor.
    let mut root = None;
    for p in leaf_pages(&img, ps) {
        let base = p * ps;
        for i in 0..rd16(&img, base + 12) / 2 {
            let node = base + 20 + rd16(&img, base + 20 + 2 * i);
            if img[node + 4] == 0x06 {
                let d = node + 8 + rd16(&img, node + 6);
                root = Some(u32::from_le_bytes(img[d + 8..d + 12].try_into().unwrap()) as usize);
            }
        }
    }
    let root = root.expect("a nested tree");
    // Its page flags: no kind at all.
    img[root * ps + 10] = 0;
    img[root * ps + 11] = 0;
    std::fs::write(&path, &img).unwrap();
    let env = builder(4096).open(tmp.path()).unwrap();
    let txn = env.begin_ro_txn().unwrap();
    let db = txn.open_db(Some("dups")).unwrap();
    let mut c = txn.cursor(db).unwrap();
    assert!(c.first().unwrap().is_some());
    assert!(c.next().is_err(), "entering the damaged nested tree fails");
    let _ = c.get_current();
    let _ = c.count();
    let _ = c.next();
    let _ = c.prev();
    let _ = c.get_current();
}
