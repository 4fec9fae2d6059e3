//! Damaged tree structure seen by the writers that walk whole trees
//! (`drop_db`, `clear_db`): a nested tree whose root is its own host leaf, a
//! branch that points back at itself, a branch naming one child twice, a
//! nested tree inside a nested tree. Each must fail with `Corrupted` naming a
//! page — never recurse without bound (a stack overflow aborts the process)
//! nor free a page twice — and leave the data file unchanged.
//!
//! Every case runs in a child process (this binary re-invoked with
//! `--exact walk_child`), so a crash is reported as that case failing rather
//! than killing the test binary.

use std::path::{Path, PathBuf};
use std::process::Command;

use rdbx::{DbFlags, Env, Error, PutFlags};

const PS: usize = 4096;

fn rd16(b: &[u8], o: usize) -> u16 {
    u16::from_le_bytes(b[o..o + 2].try_into().unwrap())
}
fn rd32(b: &[u8], o: usize) -> u32 {
    u32::from_le_bytes(b[o..o + 4].try_into().unwrap())
}
fn rd64(b: &[u8], o: usize) -> u64 {
    u64::from_le_bytes(b[o..o + 8].try_into().unwrap())
}

fn open(path: &Path) -> Env {
    Env::builder().max_dbs(8).no_sub_dir(true).open(path).unwrap()
}

/// Offset in the file of node `i` of page `pg`.
fn node_off(b: &[u8], pg: u32, i: usize) -> usize {
    let base = pg as usize * PS;
    base + 20 + rd16(b, base + 20 + 2 * i) as usize
}

/// Offset of the value of node at `n`.
fn node_data(b: &[u8], n: usize) -> usize {
    n + 8 + rd16(b, n + 6) as usize
}

/// The root page of named table `name` in the head snapshot of image `b`.
fn table_root(b: &[u8], name: &[u8]) -> u32 {
    let head = (0..3).max_by_key(|&i| rd64(b, i * PS + 28)).unwrap();
    let main = head * PS + 20 + 88;
    assert_eq!(rd16(b, main + 2), 1, "main tree is one leaf");
    let leaf = rd32(b, main + 8);
    let n = rd16(b, leaf as usize * PS + 12) as usize / 2;
    for i in 0..n {
        let o = node_off(b, leaf, i);
        let k = rd16(b, o + 6) as usize;
        if &b[o + 8..o + 8 + k] == name {
            return rd32(b, o + 8 + k + 8);
        }
    }
    panic!("no table record");
}

/// A 48-byte tree descriptor of a one-leaf tree rooted at `root`.
fn tree_rec(flags: u16, root: u32, txnid: u64) -> [u8; 48] {
    let mut t = [0u8; 48];
    t[0..2].copy_from_slice(&flags.to_le_bytes());
    t[2..4].copy_from_slice(&1u16.to_le_bytes());
    t[8..12].copy_from_slice(&root.to_le_bytes());
    t[16..20].copy_from_slice(&1u32.to_le_bytes());
    t[32..40].copy_from_slice(&1u64.to_le_bytes());
    t[40..48].copy_from_slice(&txnid.to_le_bytes());
    t
}

/// Creates the database of `case` and damages it; returns (table name, page the error must name).
fn build(case: &str, path: &Path) -> (&'static str, u32) {
    let env = open(path);
    let mut txn = env.begin_rw_txn().unwrap();
    match case {
        "self_nested" => {
            let t = txn.create_db(Some("t"), DbFlags::empty()).unwrap();
            txn.put(t, b"key", &[0u8; 48], PutFlags::empty()).unwrap();
        }
        "branch_cycle" | "branch_twice" => {
            let t = txn.create_db(Some("t"), DbFlags::empty()).unwrap();
            for i in 0..200u32 {
                txn.put(t, format!("key{i:05}").as_bytes(), &[i as u8; 100], PutFlags::empty()).unwrap();
            }
        }
        "nested_in_nested" => {
            let t = txn.create_db(Some("t"), DbFlags::DUP_SORT).unwrap();
            for i in 0..50u32 {
                txn.put(t, b"key", format!("{i:064}").as_bytes(), PutFlags::empty()).unwrap();
            }
        }
        _ => panic!("unknown case {case}"),
    }
    txn.commit().unwrap();
    drop(env);
    let mut b = std::fs::read(path).unwrap();
    let root = table_root(&b, b"t");
    let rbase = root as usize * PS;
    let txnid = rd64(&b, rbase);
    let bad = match case {
        "self_nested" => {
            // The only record becomes a "nested tree" whose root is its own leaf.
            assert_eq!(rd16(&b, rbase + 10), 0x02);
            let n = node_off(&b, root, 0);
            b[n + 4] = 0x06;
            let d = node_data(&b, n);
            b[d..d + 48].copy_from_slice(&tree_rec(0, root, txnid));
            root
        }
        "branch_cycle" => {
            assert_eq!(rd16(&b, rbase + 10), 0x01, "root is a branch");
            let n = node_off(&b, root, 1);
            b[n..n + 4].copy_from_slice(&root.to_le_bytes());
            root
        }
        "branch_twice" => {
            assert_eq!(rd16(&b, rbase + 10), 0x01, "root is a branch");
            let c0 = rd32(&b, node_off(&b, root, 0));
            let n = node_off(&b, root, 1);
            b[n..n + 4].copy_from_slice(&c0.to_le_bytes());
            c0
        }
        "nested_in_nested" => {
            assert_eq!(rd16(&b, rbase + 10), 0x02);
            let n = node_off(&b, root, 0);
            assert_eq!(b[n + 4], 0x06, "the key has a nested tree");
            let d = node_data(&b, n);
            let mut leaf = rd32(&b, d + 8);
            while rd16(&b, leaf as usize * PS + 10) == 0x01 {
                leaf = rd32(&b, node_off(&b, leaf, 0));
            }
            // Value node 0 of the nested leaf: 64-byte key -> 16-byte key + a
            // 48-byte "nested tree" rooted at this nested leaf.
            let v = node_off(&b, leaf, 0);
            assert_eq!(rd16(&b, v + 6), 64);
            b[v..v + 4].copy_from_slice(&48u32.to_le_bytes());
            b[v + 4] = 0x06;
            b[v + 6..v + 8].copy_from_slice(&16u16.to_le_bytes());
            let lt = rd64(&b, leaf as usize * PS);
            b[v + 24..v + 72].copy_from_slice(&tree_rec(0, leaf, lt));
            leaf
        }
        _ => unreachable!(),
    };
    std::fs::write(path, &b).unwrap();
    ("t", bad)
}

fn run(case: &str, op: &str, path: &Path, bad: u32) {
    let before = std::fs::read(path).unwrap();
    let env = open(path);
    let mut txn = env.begin_rw_txn().unwrap();
    let db = txn.open_db(Some("t")).unwrap();
    let r = match op {
        "drop" => txn.drop_db(db),
        "clear" => txn.clear_db(db),
        _ => unreachable!(),
    };
    match r {
        Err(Error::Corrupted { page, .. }) => {
            assert_eq!(page, bad, "{case}/{op}: {r:?} names the wrong page");
        }
        other => panic!("{case}/{op}: expected Corrupted at page {bad}, got {other:?}"),
    }
    // The transaction failed: committing must not write anything.
    assert!(txn.commit().is_err(), "{case}/{op}: a failed transaction committed");
    if op == "drop" {
        // The other whole-tree walkers reject the same file.
        let ro = env.begin_ro_txn().unwrap();
        let db = ro.open_db(Some("t")).unwrap();
        let r = ro.verify_table(db);
        assert!(matches!(r, Err(Error::Corrupted { .. })), "{case}: verify_table: {r:?}");
        drop(ro);
        let dst = path.with_extension("copy");
        let r = env.copy_to(&dst, &rdbx::CopyOptions { compact: true, ..Default::default() }, &mut |_| {});
        assert!(matches!(r, Err(Error::Corrupted { .. })), "{case}: compacting copy: {r:?}");
        assert!(!dst.exists());
        let r = env.check(&rdbx::CheckOptions::default(), &mut |_| {}).unwrap();
        assert!(r.major > 0, "{case}: check found nothing");
    }
    drop(env);
    assert!(std::fs::read(path).unwrap() == before, "{case}/{op}: the data file changed");
}

/// Child side: runs the case named by `RDBX_WALK_CASE` (a no-op otherwise).
#[test]
fn walk_child() {
    let Ok(spec) = std::env::var("RDBX_WALK_CASE") else { return };
    let (case, op) = spec.split_once('/').unwrap();
    let dir = PathBuf::from(std::env::var("RDBX_WALK_DIR").unwrap());
    let path = dir.join("db");
    let (_, bad) = build(case, &path);
    run(case, op, &path, bad);
}

fn in_child(case: &str) {
    for op in ["drop", "clear"] {
        let d = tempfile::tempdir().unwrap();
        let out = Command::new(std::env::current_exe().unwrap())
            .args(["--exact", "walk_child", "--nocapture", "--test-threads=1"])
            .env("RDBX_WALK_CASE", format!("{case}/{op}"))
            .env("RDBX_WALK_DIR", d.path())
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{case}/{op}: child failed ({:?})\n{}\n{}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

#[test]
fn self_referencing_nested_tree_in_a_plain_table() {
    in_child("self_nested");
}

#[test]
fn branch_pointing_at_itself() {
    in_child("branch_cycle");
}

#[test]
fn branch_naming_one_child_twice() {
    in_child("branch_twice");
}

#[test]
fn nested_tree_inside_a_nested_tree() {
    in_child("nested_in_nested");
}

/// A meta whose growth step is damaged to a huge value must not make the next
/// write grow the file to the upper bound (64 GiB by default).
#[test]
fn damaged_growth_step_does_not_grow_the_file_to_the_upper_bound() {
    let d = tempfile::tempdir().unwrap();
    let path = d.path().join("db");
    let env = open(&path);
    let mut txn = env.begin_rw_txn().unwrap();
    let t = txn.create_db(Some("t"), DbFlags::empty()).unwrap();
    txn.put(t, b"k", b"v", PutFlags::empty()).unwrap();
    txn.commit().unwrap();
    drop(env);
    let mut b = std::fs::read(&path).unwrap();
    let head = (0..3).max_by_key(|&i| rd64(&b, i * PS + 28)).unwrap();
    let g = head * PS + 20 + 20;
    assert!(rd16(&b, g) < 0x8000, "a modest step to start with");
    b[g..g + 2].copy_from_slice(&0xFFFDu16.to_le_bytes());
    std::fs::write(&path, &b).unwrap();
    let env = open(&path);
    let mut txn = env.begin_rw_txn().unwrap();
    let t = txn.open_db(Some("t")).unwrap();
    for i in 0..200u32 {
        txn.put(t, format!("key{i:05}").as_bytes(), &[7u8; 1000], PutFlags::empty()).unwrap();
    }
    txn.commit().unwrap();
    let len = std::fs::metadata(&path).unwrap().len();
    assert!(len < 64 << 20, "the file grew to {len} bytes");
    let info = env.info().unwrap();
    assert!(info.growth_step <= 1 << 20, "the committed step is {}", info.growth_step);
}
