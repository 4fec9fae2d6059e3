//! The messages of issue 14 item 8: what the shell says when a key has the
//! wrong size, a file is truncated, a dump leaves tables out, a copy is
//! compacted, or a session ends inside a transaction.

mod common;

use common::*;

fn db() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    make_db(dir.path());
    dir
}

#[test]
fn a_key_of_the_wrong_width_is_named_by_get_put_and_del() {
    let d = db();
    // `ints` holds 8-byte integer keys: a 4-byte key cannot be in it.
    for c in ["get -t ints u32:1", "put -t ints u32:1 x", "del -t ints u32:1"] {
        let r = cmd_rw(d.path(), c);
        assert_eq!(r.code, Some(1), "{c}: {r:?}");
        assert!(
            r.stderr.contains("table 'ints' has 8-byte integer keys: give a number or u64:N (this key has 4 bytes)"),
            "{c}: {r:?}"
        );
        assert!(!r.stderr.contains("INTEGER_KEY") && !r.stderr.contains("not found"), "{c}: {r:?}");
    }
    // The right width is found as before.
    let r = cmd(d.path(), "get -t ints u64:1; get -t ints 1");
    assert!(r.ok(), "{r:?}");
    assert_eq!(r.stdout, "n1\nn1\n");
}

#[test]
fn a_truncated_file_names_the_expected_and_actual_size() {
    let d = db();
    let data = d.path().join("mdbx.dat");
    let ps = 4096u64;
    let len = std::fs::metadata(&data).unwrap().len();
    // Keep the metas, cut the rest: the newest meta uses more pages.
    let f = std::fs::OpenOptions::new().write(true).open(&data).unwrap();
    f.set_len(4 * ps).unwrap();
    drop(f);
    assert!(len > 4 * ps);
    let r = cmd(d.path(), "tables");
    assert_eq!(r.code, Some(1), "{r:?}");
    assert!(r.stderr.contains(&format!("the file has {} bytes, but its newest meta", 4 * ps)), "{r:?}");
    assert!(r.stderr.contains("it was truncated"), "{r:?}");
}

#[test]
fn dumping_the_main_table_of_a_database_with_tables_suggests_all() {
    let d = db();
    let r = cmd(d.path(), "dump");
    assert!(r.ok(), "{r:?}");
    assert!(r.stderr.contains("5 named table(s)") && r.stderr.contains("use -a"), "{r:?}");
    // Not with --all, nor for a named table.
    for c in ["dump --all", "use colors; dump"] {
        let r = cmd(d.path(), c);
        assert!(r.ok() && !r.stderr.contains("use -a"), "{c}: {r:?}");
    }
}

#[test]
fn a_compacted_copy_reports_its_size_on_disk() {
    let d = db();
    let out = tempfile::tempdir().unwrap();
    let dst = out.path().join("c.dat");
    let r = cmd(d.path(), &format!("copy --compact {}", dst.display()));
    assert!(r.ok(), "{r:?}");
    use std::os::unix::fs::MetadataExt;
    let m = std::fs::metadata(&dst).unwrap();
    let on_disk = m.blocks() * 512;
    assert!(r.stderr.contains(&format!("file size {}", m.len())), "{r:?}");
    assert!(r.stderr.contains(&format!(", {on_disk} ")) && r.stderr.contains("allocated on disk"), "{r:?}");
}

#[test]
fn a_script_that_quits_inside_a_transaction_aborts_it_with_a_message() {
    let d = db();
    let r = run(&[d.path().to_str().unwrap(), "--write"], Some("begin\nput -t colors new 1\nquit\n"));
    assert_eq!(r.code, Some(1), "{r:?}");
    assert!(r.stderr.contains("line 1: quit inside the transaction begun here: it was aborted"), "{r:?}");
    assert!(!dump_table(d.path(), "colors").iter().any(|(k, _)| k == b"new"));
}
