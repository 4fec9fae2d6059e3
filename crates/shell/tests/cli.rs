//! Integration tests of the `rdbx` shell binary on databases written through the
//! rdbx API.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};

use rdbx::{DbFlags, Env, PutFlags};

const BIN: &str = env!("CARGO_BIN_EXE_rdbx");

fn run(args: &[&str], stdin: Option<&str>) -> Output {
    let mut child = Command::new(BIN)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn rdbx");
    {
        let mut input = child.stdin.take().unwrap();
        if let Some(s) = stdin {
            input.write_all(s.as_bytes()).unwrap();
        }
    }
    child.wait_with_output().unwrap()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// A database with a text table, an INTEGER_KEY table and a binary record.
fn make_db(dir: &Path) {
    let env = Env::builder().max_dbs(8).open(dir).expect("create env");
    let mut txn = env.begin_rw_txn().unwrap();
    let colors = txn.create_db(Some("colors"), DbFlags::empty()).unwrap();
    for (k, v) in [("red", "ff0000"), ("green", "00ff00"), ("blue", "0000ff"), ("black", "000000")] {
        txn.put(colors, k.as_bytes(), v.as_bytes(), PutFlags::empty()).unwrap();
    }
    txn.put(colors, b"bin\x01", &[0u8, 1, 2, 0xff], PutFlags::empty()).unwrap();
    txn.put(colors, b"with space", b"two words", PutFlags::empty()).unwrap();
    let ints = txn.create_db(Some("ints"), DbFlags::INTEGER_KEY).unwrap();
    for n in [3u64, 1, 2, 1000] {
        txn.put(ints, &n.to_ne_bytes(), format!("n{n}").as_bytes(), PutFlags::empty()).unwrap();
    }
    txn.commit().unwrap();
}

#[test]
fn help_lists_commands_and_planned_features() {
    for flag in ["--help", "-h"] {
        let out = run(&[flag], None);
        assert!(out.status.success(), "{flag}: {out:?}");
        let s = text(&out.stdout);
        for word in ["tables", "get TABLE KEY", "scan TABLE", "stat TABLE", "quit", "--create-demo", "-c"] {
            assert!(s.contains(word), "help lacks {word:?}:\n{s}");
        }
        assert!(s.contains("planned"), "help must say what is not there yet:\n{s}");
    }
}

#[test]
fn usage_error_exits_2() {
    let out = run(&["--bogus"], None);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let out = run(&[], None);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(text(&out.stderr).contains("missing PATH"));
}

#[test]
fn get_scan_stat_tables_with_dash_c() {
    let dir = tempfile::tempdir().unwrap();
    make_db(dir.path());
    let p = dir.path().to_str().unwrap();

    let out = run(&[p, "-c", "tables"], None);
    assert!(out.status.success(), "{out:?}");
    assert_eq!(text(&out.stdout), "colors\nints\n");

    let out = run(&[p, "-c", "get colors green; get colors 0x626c7565"], None);
    assert!(out.status.success(), "{out:?}");
    assert_eq!(text(&out.stdout), "00ff00\n0000ff\n");

    // binary values come out as hex, binary keys go in as hex, quotes group words
    let out = run(&[p, "-c", "get colors 0x62696e01; get colors \"with space\""], None);
    assert!(out.status.success(), "{out:?}");
    assert_eq!(text(&out.stdout), "0x000102ff\ntwo words\n");

    let out = run(&[p, "-c", "scan colors 3"], None);
    assert!(out.status.success(), "{out:?}");
    assert_eq!(text(&out.stdout), "0x62696e01: 0x000102ff\nblack: 000000\nblue: 0000ff\n");

    // integer keys: numeric order, decimal input and output
    let out = run(&[p, "-c", "scan ints; get ints 1000"], None);
    assert!(out.status.success(), "{out:?}");
    assert_eq!(text(&out.stdout), "1: n1\n2: n2\n3: n3\n1000: n1000\nn1000\n");

    let out = run(&[p, "-c", "stat colors"], None);
    assert!(out.status.success(), "{out:?}");
    let s = text(&out.stdout);
    assert!(s.starts_with("Status of colors\n  Pagesize: "), "{s}");
    assert!(s.contains("\n  Tree depth: 1\n"), "{s}");
    assert!(s.contains("\n  Entries: 6\n"), "{s}");

    let out = run(&[p, "-c", "stat @MAIN"], None);
    assert!(out.status.success(), "{out:?}");
    assert!(text(&out.stdout).contains("Status of Main DB\n"), "{out:?}");
    assert!(text(&out.stdout).contains("  Entries: 2\n"), "{out:?}");
}

#[test]
fn commands_from_stdin() {
    let dir = tempfile::tempdir().unwrap();
    make_db(dir.path());
    let p = dir.path().to_str().unwrap();
    let out = run(&[p], Some("help\nget colors red\nscan ints 2\nquit\nget colors blue\n"));
    assert!(out.status.success(), "{out:?}");
    let s = text(&out.stdout);
    assert!(s.contains("commands:"), "{s}");
    assert!(s.ends_with("ff0000\n1: n1\n2: n2\n"), "quit must stop before the last line:\n{s}");
}

#[test]
fn failing_commands_exit_nonzero_and_name_the_file() {
    let dir = tempfile::tempdir().unwrap();
    make_db(dir.path());
    let p = dir.path().to_str().unwrap();
    for cmd in ["get colors purple", "get nosuchtable x", "frobnicate", "scan colors notanumber", "get colors"] {
        let out = run(&[p, "-c", cmd], None);
        assert_eq!(out.status.code(), Some(1), "{cmd}: {out:?}");
        assert!(text(&out.stderr).contains(p), "{cmd}: error must name the file: {out:?}");
    }
    // a failure does not stop later commands
    let out = run(&[p, "-c", "get colors purple; get colors red"], None);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(text(&out.stdout), "ff0000\n");
}

#[test]
fn missing_path_fails_with_message_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("does-not-exist");
    let m = missing.to_str().unwrap();
    let out = run(&[m, "-c", "tables"], None);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert!(text(&out.stderr).contains(m), "{out:?}");
    assert!(!missing.exists(), "a read-only open must not create the path");
}

#[test]
fn create_demo_then_browse() {
    let dir = tempfile::tempdir().unwrap();
    let demo = dir.path().join("demo");
    let d = demo.to_str().unwrap();
    let out = run(&["--create-demo", d], None);
    assert!(out.status.success(), "{out:?}");
    // twice is fine (records are refreshed)
    let out = run(&["--create-demo", d], None);
    assert!(out.status.success(), "{out:?}");

    let out = run(&[d, "-c", "tables; get fruit kiwi; get numbers 7; scan domains 2; get blobs big"], None);
    assert!(out.status.success(), "{out:?}");
    let s = text(&out.stdout);
    let lines: Vec<&str> = s.lines().collect();
    assert_eq!(&lines[..4], &["blobs", "domains", "fruit", "numbers"], "{s}");
    assert_eq!(lines[4], "green");
    assert_eq!(lines[5], "7 squared is 49");
    // REVERSE_KEY: ordered by the reversed bytes ("gro.elpmaxe" < "gro.gnal-tsur.www" < "moc...")
    assert_eq!(lines[6], "example.org: 93.184.215.34", "{s}");
    assert_eq!(lines[7], "www.rust-lang.org: 18.244.28.2", "{s}");
    assert!(lines[8].starts_with("0x000102030405"), "{s}");
    assert_eq!(lines[8].len(), 2 + 2 * 20_000);
}
