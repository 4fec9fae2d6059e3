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
    let pages: Vec<&str> = copied.stdout.split_whitespace().filter(|w| w.parse::<u64>().is_ok()).collect();
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
