//! Integration tests of the `rdbx-tools` binary on databases written through the
//! rdbx API.

use std::path::Path;
use std::process::{Command, Output};

use rdbx::{DbFlags, Env, PutFlags};

const BIN: &str = env!("CARGO_BIN_EXE_rdbx-tools");

fn run(args: &[&str]) -> Output {
    Command::new(BIN)
        .args(args)
        .output()
        .expect("spawn rdbx-tools")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Two tables: "small" (10 records), "big" (40 records of 10000 bytes: large pages).
fn make_db(dir: &Path) {
    let env = Env::builder().max_dbs(8).open(dir).expect("create env");
    let mut txn = env.begin_rw_txn().unwrap();
    let small = txn.create_db(Some("small"), DbFlags::empty()).unwrap();
    for i in 0..10u32 {
        txn.put(
            small,
            format!("k{i:02}").as_bytes(),
            b"v",
            PutFlags::empty(),
        )
        .unwrap();
    }
    let big = txn.create_db(Some("big"), DbFlags::empty()).unwrap();
    for i in 0..40u32 {
        txn.put(
            big,
            format!("b{i:02}").as_bytes(),
            &vec![i as u8; 10_000],
            PutFlags::empty(),
        )
        .unwrap();
    }
    txn.commit().unwrap();
}

/// Parses the "Status of NAME" blocks into (name, [(field, value)]).
fn blocks(s: &str) -> Vec<(String, Vec<(String, u64)>)> {
    let mut out: Vec<(String, Vec<(String, u64)>)> = Vec::new();
    for line in s.lines() {
        if let Some(name) = line.strip_prefix("Status of ") {
            out.push((name.to_string(), Vec::new()));
        } else {
            let l = line
                .strip_prefix("  ")
                .unwrap_or_else(|| panic!("unexpected line {line:?}"));
            let (k, v) = l
                .split_once(": ")
                .unwrap_or_else(|| panic!("bad line {line:?}"));
            out.last_mut()
                .expect("field before title")
                .1
                .push((k.to_string(), v.parse().unwrap()));
        }
    }
    out
}

const FIELDS: [&str; 6] = [
    "Pagesize",
    "Tree depth",
    "Branch pages",
    "Leaf pages",
    "Large/Overflow pages",
    "Entries",
];

#[test]
fn help_is_honest() {
    for flag in ["--help", "-h", "help"] {
        let out = run(&[flag]);
        assert!(out.status.success(), "{out:?}");
        let s = text(&out.stdout);
        assert!(s.contains("stat"), "{s}");
        let planned = s.split("PLANNED").nth(1).expect("a PLANNED section");
        for tool in ["chk", "copy", "dump", "load", "drop", "stress"] {
            assert!(
                planned.contains(tool),
                "{tool} should be listed as planned:\n{s}"
            );
        }
    }
}

#[test]
fn planned_and_unknown_subcommands_fail() {
    for sub in ["chk", "dump", "frob"] {
        let out = run(&[sub, "/nonexistent"]);
        assert_eq!(out.status.code(), Some(1), "{sub}: {out:?}");
    }
    let out = run(&["chk", "x"]);
    assert!(text(&out.stderr).contains("not implemented"), "{out:?}");
    let out = run(&[]);
    assert_eq!(out.status.code(), Some(1));
}

#[test]
fn stat_prints_every_table_in_mdbx_stat_layout() {
    let dir = tempfile::tempdir().unwrap();
    make_db(dir.path());
    let p = dir.path().to_str().unwrap();
    let out = run(&["stat", p]);
    assert!(out.status.success(), "{out:?}");
    let b = blocks(&text(&out.stdout));
    let names: Vec<&str> = b.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["Main DB", "big", "small"]);
    for (name, fields) in &b {
        let keys: Vec<&str> = fields.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(keys, FIELDS, "{name}");
    }
    let get = |t: usize, f: &str| b[t].1.iter().find(|(k, _)| k == f).unwrap().1;
    assert_eq!(get(0, "Entries"), 2);
    assert_eq!(get(1, "Entries"), 40);
    assert_eq!(get(2, "Entries"), 10);
    assert_eq!(get(2, "Tree depth"), 1);
    assert_eq!(get(2, "Leaf pages"), 1);
    assert_eq!(get(2, "Large/Overflow pages"), 0);
    let ps = get(1, "Pagesize");
    // each 10000-byte value needs ceil((10000 + 20) / ps) large pages
    assert_eq!(
        get(1, "Large/Overflow pages"),
        40 * (10_020u64).div_ceil(ps)
    );

    // -a is the same; -s selects one table
    let out_a = run(&["stat", "-a", p]);
    assert_eq!(out_a.stdout, out.stdout);
    let out = run(&["stat", "-s", "small", p]);
    assert!(out.status.success(), "{out:?}");
    let b = blocks(&text(&out.stdout));
    assert_eq!(b.len(), 1);
    assert_eq!(b[0].0, "small");
    let out = run(&["stat", "-s", "@MAIN", p]);
    assert_eq!(blocks(&text(&out.stdout))[0].0, "Main DB");
}

#[test]
fn stat_errors() {
    let dir = tempfile::tempdir().unwrap();
    make_db(dir.path());
    let p = dir.path().to_str().unwrap();
    let out = run(&["stat", "-s", "nosuch", p]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert!(text(&out.stderr).contains("nosuch"), "{out:?}");
    let out = run(&["stat", "-a", "-s", "small", p]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let out = run(&["stat"]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
}

#[test]
fn stat_missing_path_names_it() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("nothing-here");
    let m = missing.to_str().unwrap();
    let out = run(&["stat", m]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert!(text(&out.stderr).contains(m), "{out:?}");
    assert!(
        !missing.exists(),
        "a read-only open must not create the path"
    );
}
