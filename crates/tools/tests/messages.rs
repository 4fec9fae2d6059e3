//! The messages of issue 14 item 8 from the tools: a truncated file names
//! both sizes, a dump of the main table suggests -a, a copy reports what it
//! takes on disk.

mod common;

use std::path::Path;

use common::*;

fn s(p: &Path) -> String {
    p.display().to_string()
}

fn make(dir: &Path) {
    let env = rdbx::Env::builder().max_dbs(4).open(dir).unwrap();
    let mut txn = env.begin_rw_txn().unwrap();
    for name in ["a", "b"] {
        let t = txn.create_db(Some(name), rdbx::DbFlags::empty()).unwrap();
        for i in 0..2000u32 {
            txn.put(t, format!("key{i:05}").as_bytes(), &[7u8; 100], rdbx::PutFlags::empty()).unwrap();
        }
    }
    txn.commit().unwrap();
}

#[test]
fn a_truncated_file_names_the_expected_and_actual_size() {
    let d = tempfile::tempdir().unwrap();
    make(d.path());
    let data = d.path().join("mdbx.dat");
    std::fs::OpenOptions::new().write(true).open(&data).unwrap().set_len(4 * 4096).unwrap();
    for sub in ["stat", "dump", "checksum"] {
        let r = run(&[sub, &s(d.path())]);
        assert_eq!(r.code, 1, "{sub}: {r:?}");
        assert!(r.stderr.contains("the file has 16384 bytes, but its newest meta (txn "), "{sub}: {r:?}");
        assert!(r.stderr.contains("it was truncated"), "{sub}: {r:?}");
    }
}

#[test]
fn a_dump_of_the_main_table_suggests_all() {
    let d = tempfile::tempdir().unwrap();
    make(d.path());
    let r = run(&["dump", &s(d.path())]);
    assert_eq!(r.code, 0, "{r:?}");
    assert!(r.stderr.contains("the database has 2 named table(s)") && r.stderr.contains("use -a"), "{r:?}");
    for args in [&["dump", "-a"][..], &["dump", "-s", "a"]] {
        let mut a = args.to_vec();
        let p = s(d.path());
        a.push(&p);
        let r = run(&a);
        assert!(r.code == 0 && !r.stderr.contains("use -a"), "{args:?}: {r:?}");
    }
}

#[test]
fn a_copy_reports_its_size_on_disk() {
    use std::os::unix::fs::MetadataExt;
    let d = tempfile::tempdir().unwrap();
    make(d.path());
    let dst = d.path().join("compact.dat");
    let r = run(&["copy", "--compact", &s(d.path()), &s(&dst)]);
    assert_eq!(r.code, 0, "{r:?}");
    let m = std::fs::metadata(&dst).unwrap();
    assert!(r.stderr.contains(&format!("{} bytes, {} allocated", m.len(), m.blocks() * 512)), "{r:?}");
    assert!(r.stdout.is_empty(), "status lines go to stderr: {r:?}");
}

/// With --json every subcommand answers a failure with a JSON error object
/// on stdout (and the message on stderr): a missing database, a file that
/// is not one, and a usage error.
#[test]
fn json_errors_on_every_subcommand() {
    use serde_json::json;
    let d = tempfile::tempdir().unwrap();
    let missing = s(&d.path().join("nope"));
    let text = d.path().join("text");
    std::fs::write(&text, b"hello world\n").unwrap();
    let text = s(&text);
    let err = json!({"code": "i64", "message": "string"});
    let cases: Vec<(Vec<&str>, serde_json::Value)> = vec![
        (vec!["chk", "--json"], json!({"path": "string", "exit_code": "u64", "error": err})),
        (vec!["stat", "--json"], json!({"error": err})),
        (vec!["checksum", "--json"], json!({"path": "string", "error": err})),
        (vec!["space", "--json"], json!({"error": err})),
        (vec!["meta", "--json"], json!({"error": err})),
        (vec!["page", "--json", "3"], json!({"error": err})),
        (vec!["diff", "--json", "/bin/ls"], json!({"type": "string", "error": err})),
    ];
    for (args, schema) in &cases {
        for path in [&missing, &text] {
            let mut a = args.clone();
            let at = if args[0] == "page" { 2 } else { a.len() - usize::from(args[0] == "diff") };
            a.insert(at, path);
            let r = run(&a);
            assert_ne!(r.code, 0, "{a:?}: {r:?}");
            let v: serde_json::Value =
                serde_json::from_str(r.stdout.trim()).unwrap_or_else(|e| panic!("{a:?}: not JSON: {e}: {r:?}"));
            check_schema(&v, schema, &format!("{a:?}"));
            assert!(!r.stderr.is_empty(), "{a:?}: the message also goes to stderr");
        }
    }
    // A usage error, when --json was asked for.
    for sub in ["stat", "chk", "space", "diff"] {
        let r = run(&[sub, "--json", "--bogus", "x"]);
        assert_ne!(r.code, 0, "{r:?}");
        let v: serde_json::Value =
            serde_json::from_str(r.stdout.trim()).unwrap_or_else(|e| panic!("{sub}: {e}: {r:?}"));
        check_schema(&v, &json!({"error": err}), sub);
        assert!(v["error"]["message"].as_str().unwrap().contains("--bogus"), "{r:?}");
    }
}
