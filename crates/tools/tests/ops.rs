//! Issue 14 items 1-4: checksum, diff, meta / page (and meta --use), space.

mod common;

use std::path::{Path, PathBuf};

use common::*;
use rdbx::{DbFlags, Env, PutFlags};
use serde_json::{json, Value};

fn s(p: &Path) -> String {
    p.display().to_string()
}

fn ok(args: &[&str]) -> Run {
    let r = run(args);
    assert_eq!(r.code, 0, "{args:?}: {r:?}");
    r
}

fn json_of(r: &Run) -> Value {
    serde_json::from_str(r.stdout.trim()).unwrap_or_else(|e| panic!("not JSON ({e}): {r:?}"))
}

/// A database in directory `dir` with plain, multimap, integer-key and
/// large-value tables, written over several commits (so that it has GC
/// records and a compacted copy differs in layout).
fn sample_db(dir: &Path) -> PathBuf {
    let env = Env::builder().max_dbs(8).open(dir).expect("create env");
    let none = PutFlags::empty();
    for round in 0..4u32 {
        let mut txn = env.begin_rw_txn().unwrap();
        let plain = txn.create_db(Some("plain"), DbFlags::empty()).unwrap();
        let tags = txn.create_db(Some("tags"), DbFlags::DUP_SORT).unwrap();
        let ints = txn.create_db(Some("ints"), DbFlags::INTEGER_KEY).unwrap();
        for i in 0..500u32 {
            let k = format!("k{i:05}");
            txn.put(plain, k.as_bytes(), format!("v{i}-{round}").as_bytes(), none).unwrap();
            txn.put(tags, format!("t{:03}", i % 50).as_bytes(), format!("x{i}").as_bytes(), none).unwrap();
            txn.put(ints, &(i as u64 * 7).to_ne_bytes(), &[round as u8; 3], none).unwrap();
        }
        txn.put(plain, b"big", &vec![round as u8; 20_000], none).unwrap();
        if round % 2 == 1 {
            for i in (0..500u32).step_by(3) {
                txn.del(plain, format!("k{i:05}").as_bytes(), None).unwrap();
            }
        }
        txn.put(rdbx::Db::MAIN, b"main-key", b"main-value", none).unwrap();
        txn.commit().unwrap();
    }
    dir.to_path_buf()
}

fn new_db(d: &Path, name: &str) -> PathBuf {
    let p = d.join(name);
    std::fs::create_dir(&p).unwrap();
    sample_db(&p)
}

/// Changes the value of `key` in table `table`.
fn change(db: &Path, table: &str, key: &[u8], value: &[u8]) {
    let env = Env::builder().max_dbs(8).open(db).unwrap();
    let mut txn = env.begin_rw_txn().unwrap();
    let t = txn.open_db(Some(table)).unwrap();
    txn.put(t, key, value, PutFlags::empty()).unwrap();
    txn.commit().unwrap();
}

// ---------------------------------------------------------------------------
// checksum

fn checksum_schema() -> Value {
    json!({
        "path": "string", "txnid": "u64", "algorithm": "string", "from_hex": "string|null", "to_hex": "string|null",
        "sha256": "string",
        "tables": [{"name": "string|null", "name_hex": "string|null", "main": "bool", "flags": "u64",
                    "flags_text": "string", "records": "u64", "bytes": "u64", "sha256": "string"}],
    })
}

#[test]
fn checksum_of_a_compacted_copy_is_equal_and_a_change_shows() {
    let d = tempfile::tempdir().unwrap();
    let a = new_db(d.path(), "a");
    let c = d.path().join("c.mdbx");
    let copied = ok(&["copy", "-c", &s(&a), &s(&c)]);
    let ja = json_of(&ok(&["checksum", "--json", &s(&a)]));
    check_schema(&ja, &checksum_schema(), "checksum");
    let jc = json_of(&ok(&["checksum", "--json", &s(&c)]));
    assert_eq!(ja["sha256"], jc["sha256"]);
    assert_eq!(ja["tables"], jc["tables"]);
    // The layouts differ (else the test proves little).
    let pages: Vec<&str> = copied.stderr.split_whitespace().filter(|w| w.parse::<u64>().is_ok()).collect();
    assert!(pages.len() >= 3 && pages[1] != pages[2], "the compacted copy is smaller: {copied:?}");
    let names: Vec<&str> =
        ja["tables"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap_or("@MAIN")).collect();
    assert_eq!(names, ["@MAIN", "ints", "plain", "tags"]);
    // The main table's own record only (not the table records).
    assert_eq!(ja["tables"][0]["records"], 1);

    change(&c, "plain", b"k00001", b"changed");
    let jc = json_of(&ok(&["checksum", "--json", &s(&c)]));
    assert_ne!(ja["sha256"], jc["sha256"]);
    for i in 0..4 {
        let same = ja["tables"][i] == jc["tables"][i];
        assert_eq!(same, i != 2, "only table plain differs: {}", jc["tables"][i]);
    }
    // Text: one line per table and the database line; --table and a range.
    let r = ok(&["checksum", "-s", "plain", "--from", "k00001", "--to", "k00002", &s(&c)]);
    let lines: Vec<&str> = r.stdout.lines().collect();
    assert_eq!(lines.len(), 2, "{r:?}");
    assert!(lines[0].contains("  plain  1 records"), "{r:?}");
    assert!(lines[1].contains("(database: 1 tables"), "{r:?}");
}

#[test]
fn checksum_follows_its_documented_definition() {
    // One record: the digest is SHA-256 of u64le(klen) key u64le(vlen) value.
    let d = tempfile::tempdir().unwrap();
    let env = Env::builder().max_dbs(4).open(d.path()).unwrap();
    let mut txn = env.begin_rw_txn().unwrap();
    let t = txn.create_db(Some("one"), DbFlags::empty()).unwrap();
    txn.put(t, b"key", b"value", PutFlags::empty()).unwrap();
    txn.commit().unwrap();
    drop(env);
    let mut stream = Vec::new();
    stream.extend(3u64.to_le_bytes());
    stream.extend(b"key");
    stream.extend(5u64.to_le_bytes());
    stream.extend(b"value");
    let mut h = rdbx::Sha256::new();
    h.update(&stream);
    let want = rdbx::to_hex(&h.finish());
    let j = json_of(&ok(&["checksum", "--json", "-s", "one", &s(d.path())]));
    assert_eq!(j["tables"][0]["sha256"], want.as_str());
    // The database digest over that table.
    let mut h = rdbx::Sha256::new();
    h.update(&3u64.to_le_bytes());
    h.update(b"one");
    h.update(&1u64.to_le_bytes());
    h.update(&hex_bytes(&want));
    assert_eq!(j["sha256"], rdbx::to_hex(&h.finish()).as_str());
}

fn hex_bytes(h: &str) -> Vec<u8> {
    (0..h.len()).step_by(2).map(|i| u8::from_str_radix(&h[i..i + 2], 16).unwrap()).collect()
}

#[test]
fn checksum_errors() {
    let d = tempfile::tempdir().unwrap();
    let a = new_db(d.path(), "a");
    let r = run(&["checksum", "-s", "nope", &s(&a)]);
    assert_eq!(r.code, 1, "{r:?}");
    assert!(r.stderr.contains("no table named 'nope'"), "{r:?}");
    let r = run(&["checksum", "--json", "--from", "0xZZ", &s(&a)]);
    assert_eq!(r.code, 1, "{r:?}");
    assert!(json_of(&r)["error"]["message"].as_str().unwrap().contains("bad hex"), "{r:?}");
    let r = run(&["checksum", &s(&d.path().join("missing"))]);
    assert_eq!(r.code, 1, "{r:?}");
}

// ---------------------------------------------------------------------------
// diff

fn diff_summary_schema() -> Value {
    json!({
        "type": "string", "a": "string", "b": "string", "a_txnid": "u64", "b_txnid": "u64", "keys_only": "bool",
        "equal": "bool", "added": "u64", "removed": "u64", "changed": "u64",
        "tables": [{"table": "string|null", "table_hex": "string|null", "main": "bool", "status": "string",
                    "records_a": "u64|null", "records_b": "u64|null", "flags_a": "u64|null", "flags_b": "u64|null",
                    "added": "u64", "removed": "u64", "changed": "u64"}],
    })
}

fn diff_record_schema() -> Value {
    json!({
        "type": "string", "table": "string|null", "table_hex": "string|null", "main": "bool", "kind": "string",
        "key": "string|null", "key_hex": "string", "old": "string|null", "old_hex": "string|null",
        "new": "string|null", "new_hex": "string|null",
    })
}

fn json_lines(r: &Run) -> Vec<Value> {
    r.stdout.lines().map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}"))).collect()
}

#[test]
fn diff_of_a_compacted_copy_is_empty_and_one_change_is_reported_exactly() {
    let d = tempfile::tempdir().unwrap();
    let a = new_db(d.path(), "a");
    let c = d.path().join("c.mdbx");
    ok(&["copy", "-c", &s(&a), &s(&c)]);
    let r = ok(&["diff", &s(&a), &s(&c)]);
    assert!(r.stdout.contains("total: 0 added, 0 removed, 0 changed (equal)"), "{r:?}");
    assert!(!r.stdout.lines().any(|l| l.starts_with(['+', '-', '~'])), "{r:?}");

    change(&c, "plain", b"k00001", b"changed");
    let r = run(&["diff", &s(&a), &s(&c)]);
    assert_eq!(r.code, 1, "{r:?}");
    let recs: Vec<&str> = r.stdout.lines().filter(|l| l.starts_with(['+', '-', '~'])).collect();
    assert_eq!(recs, ["~ plain k00001 = v1-3 -> changed"], "{r:?}");
    assert!(r.stdout.contains("plain: 0 added, 0 removed, 1 changed"), "{r:?}");
    // Counts come before the records.
    let total_at = r.stdout.find("total:").unwrap();
    assert!(total_at < r.stdout.find("~ plain").unwrap(), "{r:?}");

    let r = run(&["diff", "--json", &s(&a), &s(&c)]);
    assert_eq!(r.code, 1, "{r:?}");
    let lines = json_lines(&r);
    assert_eq!(lines.len(), 2, "{r:?}");
    check_schema(&lines[0], &diff_summary_schema(), "summary");
    check_schema(&lines[1], &diff_record_schema(), "record");
    assert_eq!(lines[0]["type"], "summary");
    assert_eq!((lines[0]["changed"].as_u64(), lines[0]["equal"].as_bool()), (Some(1), Some(false)));
    assert_eq!(lines[1]["kind"], "changed");
    assert_eq!((lines[1]["key"].as_str(), lines[1]["new"].as_str()), (Some("k00001"), Some("changed")));

    // Keys only: a changed value is no difference.
    let r = ok(&["diff", "--keys-only", &s(&a), &s(&c)]);
    assert!(r.stdout.contains("(equal)"), "{r:?}");
}

#[test]
fn diff_multimaps_missing_tables_other_flags_and_two_tables_of_one_database() {
    let d = tempfile::tempdir().unwrap();
    let a = new_db(d.path(), "a");
    let b = d.path().join("b.mdbx");
    ok(&["copy", &s(&a), &s(&b)]);
    {
        let env = Env::builder().max_dbs(8).no_sub_dir(true).open(&b).unwrap();
        let mut txn = env.begin_rw_txn().unwrap();
        let tags = txn.open_db(Some("tags")).unwrap();
        txn.put(tags, b"t001", b"new-value", PutFlags::empty()).unwrap();
        txn.del(tags, b"t002", Some(b"x2")).unwrap();
        txn.create_db(Some("extra"), DbFlags::empty()).unwrap();
        let t = txn.open_db(Some("ints")).unwrap();
        txn.drop_db(t).unwrap();
        let t = txn.create_db(Some("ints"), DbFlags::empty()).unwrap();
        txn.put(t, b"x", b"y", PutFlags::empty()).unwrap();
        txn.commit().unwrap();
    }
    let r = run(&["diff", "--json", &s(&a), &s(&b)]);
    assert_eq!(r.code, 1, "{r:?}");
    let lines = json_lines(&r);
    check_schema(&lines[0], &diff_summary_schema(), "summary");
    let status: Vec<(String, String)> = lines[0]["tables"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| (t["table"].as_str().unwrap().to_string(), t["status"].as_str().unwrap().to_string()))
        .collect();
    let want = [
        ("@MAIN", "compared"),
        ("extra", "only_in_b"),
        ("ints", "flags_differ"),
        ("plain", "compared"),
        ("tags", "compared"),
    ];
    assert_eq!(status, want.map(|(a, b)| (a.to_string(), b.to_string())));
    let recs: Vec<(String, String, String)> = lines[1..]
        .iter()
        .map(|l| {
            check_schema(l, &diff_record_schema(), "record");
            (l["kind"].as_str().unwrap().into(), l["key"].as_str().unwrap().into(), l["table"].as_str().unwrap().into())
        })
        .collect();
    let want = [("added", "t001", "tags"), ("removed", "t002", "tags")];
    assert_eq!(recs, want.map(|(a, b, c)| (a.to_string(), b.to_string(), c.to_string())));
    // Two tables of one database.
    let r = run(&["diff", "--summary", "-s", "plain", "--table-b", "tags", &s(&a), &s(&a)]);
    assert_eq!(r.code, 1, "{r:?}");
    assert!(r.stdout.contains("plain / tags:"), "{r:?}");
    let r = ok(&["diff", "-s", "plain", "--table-b", "plain", &s(&a), &s(&a)]);
    assert!(r.stdout.contains("(equal)"), "{r:?}");
    // Trouble is 2.
    for args in [vec!["diff".to_string(), s(&a)], vec!["diff".into(), "-s".into(), "nope".into(), s(&a), s(&b)]] {
        let r = run(&args);
        assert_eq!(r.code, 2, "{args:?}: {r:?}");
    }
}

#[test]
fn interrupted_diff_stops_with_status_2() {
    let d = tempfile::tempdir().unwrap();
    let a = d.path().join("a");
    std::fs::create_dir(&a).unwrap();
    {
        let env = Env::builder().max_dbs(4).open(&a).unwrap();
        let mut txn = env.begin_rw_txn().unwrap();
        let t = txn.create_db(Some("bulk"), DbFlags::empty()).unwrap();
        for i in 0..200_000u32 {
            txn.put(t, format!("key-{i:09}").as_bytes(), &[0x5a; 40], PutFlags::empty()).unwrap();
        }
        txn.commit().unwrap();
    }
    let b = d.path().join("b");
    std::fs::create_dir(&b).unwrap();
    {
        let env = Env::builder().max_dbs(4).open(&b).unwrap();
        let mut txn = env.begin_rw_txn().unwrap();
        txn.create_db(Some("bulk"), DbFlags::empty()).unwrap();
        txn.commit().unwrap();
    }
    // Nobody reads the output: the diff blocks once the pipe is full.
    let child = spawn(&["diff".into(), s(&a), s(&b)], std::process::Stdio::null());
    wait_blocked_on_pipe(&child);
    signal(&child, libc::SIGINT);
    let r = wait(child, "diff to a full pipe");
    assert_eq!(r.code, 2, "{r:?}");
    assert!(r.stderr.contains("Interrupted by signal/user"), "{r:?}");
}

// ---------------------------------------------------------------------------
// meta, meta --use, page

fn tree_schema() -> Value {
    json!({"root": "u64", "height": "u64", "flags": "u64", "branch_pages": "u64", "leaf_pages": "u64",
           "large_pages": "u64", "items": "u64", "sequence": "u64", "mod_txnid": "u64"})
}

fn meta_slot_schema() -> Value {
    json!({
        "index": "u64", "role": "string", "valid": "bool", "error": "string|null", "signature": "string",
        "txnid": "u64|null", "txnid_a": "u64", "txnid_b": "u64", "magic_version": "string",
        "geometry_pages": {"lower": "u64", "now": "u64", "upper": "u64", "grow": "u64", "shrink": "u64",
                           "first_unallocated": "u64"},
        "gc": tree_schema(), "main": tree_schema(), "canary": ["u64"], "pages_retired": "u64", "bootid": "string",
    })
}

/// A database with one commit more than `sample_db`: returns its path and
/// the checksum (JSON) of the snapshot before that last commit.
fn db_with_a_last_commit(d: &Path) -> (PathBuf, Value) {
    let a = new_db(d, "a");
    let before = json_of(&ok(&["checksum", "--json", &s(&a)]));
    change(&a, "plain", b"k00001", b"the last commit");
    (a, before)
}

#[test]
fn meta_use_rescues_a_database_whose_newest_meta_is_zeroed() {
    let d = tempfile::tempdir().unwrap();
    let (a, before) = db_with_a_last_commit(d.path());
    let j = json_of(&ok(&["meta", "--json", &s(&a)]));
    check_schema(
        &j,
        &json!({"path": "string", "page_size": "u64", "file_size": "u64", "head": "u64", "steady": "u64",
                "metas": [meta_slot_schema()], "hint": "string|null"}),
        "meta",
    );
    assert!(j["hint"].is_null(), "{j}");
    // Zero the newest meta.
    let mut img = Img::open(&a);
    let head = img.head();
    let ps = img.ps;
    img.b[head * ps..(head + 1) * ps].fill(0);
    img.save();
    let prev = Img::open(&a).head();
    assert_ne!(prev, head);
    // Every tool sees the damage.
    assert_ne!(run(&["chk", &s(&a)]).code, 0);
    let j = json_of(&ok(&["meta", "--json", &s(&a)]));
    assert_eq!(j["metas"][head]["valid"], false);
    assert_eq!(j["head"], prev);
    let h = j["hint"].as_str().expect("a hint");
    assert!(h.contains(&format!("meta --use {prev}")), "{h}");
    let r = ok(&["meta", &s(&a)]);
    assert!(r.stdout.contains(&format!("meta {head}: invalid")) && r.stdout.contains("note: "), "{r:?}");

    // Without --force and without a terminal: refused, nothing written.
    let bytes = std::fs::read(a.join("mdbx.dat")).unwrap();
    let r = run(&["meta", "--use", &prev.to_string(), &s(&a)]);
    assert_eq!(r.code, 1, "{r:?}");
    assert!(r.stderr.contains("--force"), "{r:?}");
    // The zeroed meta cannot be used.
    let r = run(&["meta", "--use", &head.to_string(), "--force", &s(&a)]);
    assert_eq!(r.code, 1, "{r:?}");
    assert!(r.stderr.contains("not intact"), "{r:?}");
    assert!(std::fs::read(a.join("mdbx.dat")).unwrap() == bytes, "refusals write nothing");

    let r = ok(&["meta", "--use", &prev.to_string(), "--force", "--json", &s(&a)]);
    let j = json_of(&r);
    assert_eq!(j["turned"], true, "{r:?}");
    // The records of the previous commit are all there; both checks are clean.
    let after = json_of(&ok(&["checksum", "--json", &s(&a)]));
    assert_eq!(after["sha256"], before["sha256"]);
    ok(&["chk", &s(&a)]);
    let sum = rdbx_tests::oracle::chk(&a).unwrap();
    assert!(sum.is_clean(), "libmdbx's check after the rescue:\n{}", sum.report());
    let j = json_of(&ok(&["meta", "--json", &s(&a)]));
    assert_eq!(j["head"], prev);
    assert_eq!(j["metas"][prev]["signature"], "steady");
    assert!(j["hint"].is_null(), "{j}");
    // And it takes new commits.
    change(&a, "plain", b"k00001", b"after the rescue");
    ok(&["chk", &s(&a)]);
}

#[test]
fn meta_use_refuses_a_damaged_snapshot_and_a_database_in_use() {
    let d = tempfile::tempdir().unwrap();
    let (a, _) = db_with_a_last_commit(d.path());
    let mut img = Img::open(&a);
    let head = img.head();
    let ps = img.ps;
    img.b[head * ps..(head + 1) * ps].fill(0);
    img.save();
    let img = Img::open(&a);
    let prev = img.head();
    // In use by another process (this one): refused.
    {
        let _env = Env::builder().max_dbs(8).open(&a).unwrap();
        let r = run(&["meta", "--use", &prev.to_string(), "--force", &s(&a)]);
        assert_eq!(r.code, 1, "{r:?}");
        assert!(r.stderr.contains("another process"), "{r:?}");
    }
    // The previous snapshot damaged too (its main tree's root page): refused.
    let mut img = Img::open(&a);
    let root = img.meta(prev).main.root as usize;
    img.b[root * ps + 10] = 0x7f;
    img.save();
    let bytes = std::fs::read(a.join("mdbx.dat")).unwrap();
    let r = run(&["meta", "--use", &prev.to_string(), "--force", &s(&a)]);
    assert_eq!(r.code, 1, "{r:?}");
    assert!(r.stderr.contains("not turned"), "{r:?}");
    assert!(std::fs::read(a.join("mdbx.dat")).unwrap() == bytes, "nothing written");
}

#[test]
fn page_shows_nodes_and_the_tree_and_level_it_belongs_to() {
    let d = tempfile::tempdir().unwrap();
    let a = new_db(d.path(), "a");
    let img = Img::open(&a);
    let (_, plain) = img.table("plain");
    assert!(plain.height >= 2, "a two-level tree");
    let leaf = img.leaves(plain.root)[0];
    let r = ok(&["page", &leaf.to_string(), &s(&a)]);
    assert!(
        r.stdout.contains(&format!("belongs to: table plain, level {} of {} (leaf)", plain.height, plain.height)),
        "{r:?}"
    );
    assert!(r.stdout.contains("#0"), "{r:?}");
    let r = ok(&["page", &plain.root.to_string(), "--json", &s(&a)]);
    let j = json_of(&r);
    check_schema(
        &j,
        &json!({"path": "string", "pgno": "u64", "header_pgno": "u64", "txnid": "u64", "flags": "u64", "kind": "string",
                "entries": "u64", "free": "u64", "large_pages": "u64|null", "problem": "string|null",
                "owner": {"kind": "string", "table": "string|null", "main": "bool", "level": "u64", "height": "u64",
                          "nested_key_hex": "string|null"},
                "owner_error": "null",
                "nodes": [{"index": "u64", "flags": "u64", "key": "string|null", "key_hex": "string", "type": "string",
                           "detail": {"child": "u64"}}]}),
        "page",
    );
    assert_eq!((j["kind"].as_str(), j["owner"]["level"].as_u64()), (Some("branch"), Some(1)));
    // The large value, a meta, the tail, a bad number.
    let r = ok(&["page", "1", &s(&a)]);
    assert!(r.stdout.contains("belongs to: meta page 1"), "{r:?}");
    let r = run(&["page", "99999999", &s(&a)]);
    assert_eq!(r.code, 1, "{r:?}");
    let big = {
        let env = Env::builder().max_dbs(8).open(&a).unwrap();
        let txn = env.begin_ro_txn().unwrap();
        let t = txn.open_db(Some("plain")).unwrap();
        let _ = txn.get(t, b"big").unwrap();
        drop(txn);
        let mut found = None;
        for p in img.leaves(plain.root) {
            for i in 0..img.nentries(p) {
                if img.node_key(p, i) == b"big" {
                    found = Some(u32_at(&img.b, img.node_val_off(p, i)));
                }
            }
        }
        found.expect("the large value's node")
    };
    let r = ok(&["page", &(big + 1).to_string(), &s(&a)]);
    assert!(r.stdout.contains("the large value of key big"), "{r:?}");
}

// ---------------------------------------------------------------------------
// space

#[test]
fn space_names_the_reader_that_retains_pages() {
    let d = tempfile::tempdir().unwrap();
    let a = new_db(d.path(), "a");
    let env = Env::builder().max_dbs(8).open(&a).unwrap();
    let reader = env.begin_ro_txn().unwrap();
    for i in 0..3 {
        let mut txn = env.begin_rw_txn().unwrap();
        let t = txn.open_db(Some("plain")).unwrap();
        for k in 0..200u32 {
            txn.put(t, format!("k{k:05}").as_bytes(), format!("again {i}").as_bytes(), PutFlags::empty()).unwrap();
        }
        txn.commit().unwrap();
    }
    let r = ok(&["space", "--json", &s(&a)]);
    let j = json_of(&r);
    check_schema(
        &j,
        &json!({
            "path": "string", "page_size": "u64", "file_size": "u64", "txnid": "u64",
            "geometry": {"lower": "u64", "now": "u64", "upper": "u64", "growth": "u64", "shrink": "u64"},
            "pages": {"total": "u64", "backed": "u64", "allocated": "u64", "tables": "u64", "gc_tree": "u64",
                      "gc_listed": "u64", "reclaimable": "u64", "retained": "u64", "free_tail": "u64"},
            "tables": [{"name": "string|null", "main": "bool", "pages": "u64", "branch_pages": "u64",
                        "leaf_pages": "u64", "large_pages": "u64", "records": "u64"}],
            "gc_records": [{"txnid": "u64", "pages": "u64", "reclaimable": "bool"}],
            "oldest_reader_txnid": "u64",
            "retained_by": {"kind": "string", "pid": "u64", "txnid": "u64", "lag": "u64"},
            "readers": [{"slot": "u64", "pid": "u64", "txnid": "u64|null", "lag": "u64", "pages_used": "u64",
                         "pages_retained": "u64"}],
        }),
        "space",
    );
    let me = std::process::id() as u64;
    assert_eq!((j["retained_by"]["pid"].as_u64(), j["retained_by"]["txnid"].as_u64()), (Some(me), Some(reader.id())));
    assert!(j["pages"]["retained"].as_u64().unwrap() > 0, "{j}");
    let mine = j["readers"].as_array().unwrap().iter().find(|x| x["pid"] == me).expect("our reader");
    assert_eq!(mine["lag"], 3);
    assert!(mine["pages_retained"].as_u64().unwrap() > 0, "{j}");
    // The pages add up: tables + GC tree + GC-listed = allocated (minus the metas).
    let p = &j["pages"];
    let sum = p["tables"].as_u64().unwrap() + p["gc_tree"].as_u64().unwrap() + p["gc_listed"].as_u64().unwrap() + 3;
    assert_eq!(sum, p["allocated"].as_u64().unwrap(), "{p}");
    let r = ok(&["space", &s(&a)]);
    assert!(r.stdout.contains(&format!("retained by: the reader of pid {me}")), "{r:?}");
    drop(reader);
    let j = json_of(&ok(&["space", "--json", &s(&a)]));
    assert!(j["retained_by"].is_null() && j["pages"]["retained"] == 0, "{j}");
}
