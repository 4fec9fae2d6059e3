//! `rdbx-tools dump` / `load`: byte equality with the real mdbx_dump output of
//! the golden databases, round trips, interop with the real mdbx_load /
//! mdbx_dump and with libmdbx, bad input handling, and the BEAT cases.

mod common;

use std::path::{Path, PathBuf};

use common::*;
use rdbx_tests::{golden, oracle};

fn s(p: &Path) -> String {
    p.display().to_string()
}

fn dump(args: &[&str]) -> Vec<u8> {
    let mut a = vec!["dump"];
    a.extend_from_slice(args);
    let r = run(&a);
    assert_eq!(r.code, 0, "{r:?}");
    r.raw_stdout
}

/// The real mdbx_dump -p output with leading spaces escaped as rdbx writes them.
fn escape_leading_spaces(text: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(text.len());
    let mut in_data = false;
    for line in text.split_inclusive(|&c| c == b'\n') {
        if line.starts_with(b"HEADER=END") {
            in_data = true;
        } else if line.starts_with(b"DATA=END") {
            in_data = false;
        } else if in_data && line.starts_with(b"  ") {
            out.extend_from_slice(b" \\20");
            out.extend_from_slice(&line[2..]);
            continue;
        }
        out.extend_from_slice(line);
    }
    out
}

#[test]
fn golden_dumps_are_byte_identical() {
    let d = tempfile::tempdir().unwrap();
    for name in ["g1", "g2", "g3"] {
        let p = golden_copy(name, d.path());
        assert!(
            dump(&["-a", &s(&p)]) == golden_text(&format!("{name}.dump")),
            "{name}: dump -a differs from mdbx_dump -a"
        );
    }
    let p = golden_copy("gmain", d.path());
    assert!(dump(&[&s(&p)]) == golden_text("gmain.dump"));
    assert!(dump(&["-a", &s(&p)]) == golden_text("gmain.dump"));
    // Print mode: identical except the escaped leading spaces (A.3.2).
    let g3 = golden_copy("g3", d.path());
    let ours = dump(&["-a", "-p", &s(&g3)]);
    assert!(ours == escape_leading_spaces(&golden_text("g3.print.dump")), "g3 -p");
    let ours = dump(&["-p", &s(&p)]);
    assert!(ours == escape_leading_spaces(&golden_text("gmain.print.dump")), "gmain -p");
    // -f FILE and -s TABLE.
    let f = d.path().join("out.txt");
    let r = run(&["dump", "-s", "users", "-f", &s(&f), &s(&g3)]);
    assert_eq!(r.code, 0, "{r:?}");
    let text = std::fs::read_to_string(&f).unwrap();
    assert!(text.starts_with("VERSION=3\ngeometry="), "{text:.200}");
    assert!(text.contains("database=users\n") && text.ends_with("DATA=END\n"));
    // -l lists only.
    let l = String::from_utf8(dump(&["-l", &s(&g3)])).unwrap();
    assert_eq!(l, "after\nbig\ndupfix\nints32\nints64\nmany\nrev\nrevdup\ntags\nusers\n");
    let l = dump(&["-l", &s(&p)]);
    assert!(l.is_empty(), "-l on a database without named tables must list nothing");
}

#[test]
fn load_golden_dumps_round_trip_and_libmdbx_reads_them() {
    let d = tempfile::tempdir().unwrap();
    for (name, file) in [
        ("g1", "g1.dump"),
        ("g3", "g3.print.dump"),
        ("gmain", "gmain.dump"),
        ("gmain", "gmain.print.dump"),
        ("g2", "g2.dump"),
    ] {
        let db = d.path().join(format!("{file}.db"));
        let src = golden_dir().join(file);
        let r = run(&["load", "-q", "-n", "-f", &s(&src), &s(&db)]);
        assert_eq!(r.code, 0, "{file}: {r:?}");
        assert!(db.is_file(), "-n makes a single-file database");
        let want = golden_text(&format!("{name}.dump"));
        let args: Vec<&str> = if name == "gmain" { vec![] } else { vec!["-a"] };
        let mut a = args.clone();
        let ds = s(&db);
        a.push(&ds);
        assert!(dump(&a) == want, "{file}: load then dump differs");
        assert_eq!(run(&["chk", "-q", &s(&db)]).code, 0, "{file}: chk");
        // libmdbx reads the same records.
        let env =
            oracle::Env::open(&db, &oracle::EnvOptions { read_only: true, max_dbs: 64, ..Default::default() }).unwrap();
        let txn = env.begin_ro().unwrap();
        let secs = oracle::dump_sections(&txn).unwrap();
        let ours = golden::parse_dump(&want).unwrap();
        assert_eq!(secs.len(), ours.len());
        for (a, b) in secs.iter().zip(&ours) {
            assert_eq!(a.name, b.name);
            assert_eq!(a.flags, b.flags);
            assert!(a.records == b.records, "{file}: records of {:?} differ", a.display_name());
        }
        drop(txn);
        env.close().unwrap();
        let c = oracle::chk(&db).unwrap();
        assert!(c.is_clean(), "{file}: {}", c.report());
    }
    // Directory layout (default) and standard input.
    let db = d.path().join("dirdb");
    let r = run_stdin(&["load", "-q", &s(&db)], Some(&golden_text("g3.dump")));
    assert_eq!(r.code, 0, "{r:?}");
    assert!(db.join("mdbx.dat").is_file());
    assert!(dump(&["-a", &s(&db)]) == golden_text("g3.dump"));
}

#[test]
fn concise_round_trip() {
    let d = tempfile::tempdir().unwrap();
    let g1 = golden_copy("g1", d.path());
    let c = dump(&["-a", "-c", &s(&g1)]);
    assert!(c.len() < golden_text("g1.dump").len());
    assert!(c.windows(3).any(|w| w == b"\n  "), "concise continuation lines expected");
    let db = d.path().join("c.db");
    let r = run_stdin(&["load", "-q", "-n", &s(&db)], Some(&c));
    assert_eq!(r.code, 0, "{r:?}");
    assert!(dump(&["-a", &s(&db)]) == golden_text("g1.dump"));
}

#[test]
fn real_mdbx_load_and_dump_interoperate() {
    let (Some(mload), Some(mdump)) = (real_tool("mdbx_load"), real_tool("mdbx_dump")) else { return };
    let d = tempfile::tempdir().unwrap();
    // rdbx dump (bytevalue, print, concise) -> real mdbx_load -> real mdbx_dump == golden.
    let g1 = golden_copy("g1", d.path());
    for (i, flags) in [vec!["-a"], vec!["-a", "-p"], vec!["-a", "-c"]].into_iter().enumerate() {
        let mut a = flags.clone();
        let gs = s(&g1);
        a.push(&gs);
        let text = dump(&a);
        let db = d.path().join(format!("real{i}.db"));
        let r = run_real(&mload, &["-q", "-n", &s(&db)], Some(&text));
        assert_eq!(r.code, 0, "{flags:?}: {r:?}");
        let r = run_real(&mdump, &["-q", "-a", &s(&db)], None);
        assert_eq!(r.code, 0, "{r:?}");
        assert!(r.raw_stdout == golden_text("g1.dump"), "{flags:?}: real mdbx_load of our dump differs");
    }
    // Leading spaces: our -p output reloads correctly with the real mdbx_load.
    let src = d.path().join("spaces.db");
    make_spaces_db(&src);
    let text = dump(&["-p", &s(&src)]);
    let db = d.path().join("spaces-real.db");
    let r = run_real(&mload, &["-q", "-n", &s(&db)], Some(&text));
    assert_eq!(r.code, 0, "{r:?}");
    assert!(dump(&[&s(&db)]) == dump(&[&s(&src)]), "the real mdbx_load must read back the same records");
    // real mdbx_dump of an rdbx-made database == rdbx dump of it.
    let ours = d.path().join("ours.db");
    let r = run(&["load", "-q", "-n", "-f", &s(&golden_dir().join("g2.dump")), &s(&ours)]);
    assert_eq!(r.code, 0, "{r:?}");
    let r = run_real(&mdump, &["-q", "-a", &s(&ours)], None);
    assert_eq!(r.code, 0, "{r:?}");
    assert!(r.raw_stdout == dump(&["-a", &s(&ours)]));
    assert!(r.raw_stdout == golden_text("g2.dump"));
}

/// A database with records starting with spaces ({" a" -> "  ", "b" -> " c"}).
fn make_spaces_db(p: &Path) {
    let text = "VERSION=3\nformat=bytevalue\ntype=btree\ndb_pagesize=4096\nduplicates=0\nHEADER=END\n 2061\n 2020\n 62\n 2063\nDATA=END\n";
    let r = run_stdin(&["load", "-q", "-n", &s(p)], Some(text.as_bytes()));
    assert_eq!(r.code, 0, "{r:?}");
}

#[test]
fn print_mode_escapes_leading_spaces() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("sp.db");
    make_spaces_db(&p);
    let text = String::from_utf8(dump(&["-p", &s(&p)])).unwrap();
    let data: Vec<&str> = text.lines().skip_while(|l| *l != "HEADER=END").skip(1).take(4).collect();
    assert_eq!(data, vec![" \\20a", " \\20 ", " b", " \\20c"]);
    // Our loader reads it back exactly.
    let q = d.path().join("sp2.db");
    let r = run_stdin(&["load", "-q", "-n", &s(&q)], Some(text.as_bytes()));
    assert_eq!(r.code, 0, "{r:?}");
    assert!(dump(&[&s(&q)]) == dump(&[&s(&p)]));
}

#[test]
fn dump_all_keeps_main_table_records() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("mixed.db");
    {
        let env =
            oracle::Env::open(&p, &oracle::EnvOptions { no_sub_dir: Some(true), max_dbs: 8, ..Default::default() })
                .unwrap();
        let mut txn = env.begin_rw().unwrap();
        txn.put(oracle::MAIN_DBI, b"plain1", b"v1", 0).unwrap();
        txn.put(oracle::MAIN_DBI, b"plain2", b"v2", 0).unwrap();
        let t = txn.create_table(Some(b"tab"), 0).unwrap();
        txn.put(t, b"k", b"v", 0).unwrap();
        txn.commit().unwrap();
        env.close().unwrap();
    }
    let r = run(&["dump", "-a", &s(&p)]);
    assert_eq!(r.code, 0, "{r:?}");
    assert!(r.stderr.contains("2 plain record(s)"), "a warning is expected: {r:?}");
    let secs = golden::parse_dump(&r.raw_stdout).unwrap();
    assert_eq!(secs.len(), 2);
    assert_eq!(secs[0].name, None);
    assert_eq!(secs[0].records, vec![(b"plain1".to_vec(), b"v1".to_vec()), (b"plain2".to_vec(), b"v2".to_vec())]);
    assert_eq!(secs[1].name.as_deref(), Some(&b"tab"[..]));
    // And a reload holds everything.
    let q = d.path().join("mixed2.db");
    let r2 = run_stdin(&["load", "-q", "-n", &s(&q)], Some(&r.raw_stdout));
    assert_eq!(r2.code, 0, "{r2:?}");
    assert!(run(&["dump", "-a", "-q", &s(&q)]).raw_stdout == r.raw_stdout);
}

#[test]
fn bad_input_stops_with_line_number_and_keeps_earlier_batches() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("b.db");
    let mut text = String::from(
        "VERSION=3\nformat=bytevalue\ndatabase=t\ntype=btree\ndb_pagesize=4096\nduplicates=0\nHEADER=END\n",
    );
    for i in 0..25u32 {
        text.push_str(&format!(" {:08x}\n 76\n", i));
    }
    let bad_line = 8 + 50;
    text.push_str(" zz\n 76\n");
    text.push_str("DATA=END\n");
    let r = run_stdin(&["load", "-b", "10", "-n", &s(&p)], Some(text.as_bytes()));
    assert_eq!(r.code, 1, "{r:?}");
    assert!(r.stderr.contains(&format!("line {bad_line}")), "{r:?}");
    // Batches of 10: records 0..20 were committed, the failing batch (20..25) is rolled back.
    let st = run(&["stat", "-s", "t", &s(&p)]);
    assert!(st.stdout.contains("Entries: 20\n"), "{st:?}");
    assert_eq!(run(&["chk", "-q", &s(&p)]).code, 0);
    // Header errors name the line.
    for (input, line) in
        [("VERSION=2\n", 1), ("VERSION=3\nformat=hex\n", 2), ("VERSION=3\ntype=hash\n", 2), ("VERSION =3\n", 1)]
    {
        let q = d.path().join("h.db");
        let r = run_stdin(&["load", "-n", &s(&q)], Some(input.as_bytes()));
        assert_eq!(r.code, 1, "{r:?}");
        assert!(r.stderr.contains(&format!("line {line}:")), "{input:?}: {r:?}");
        assert!(!q.exists(), "no database is created for a bad header");
    }
    // A geometry this system cannot have: error (the real mdbx_load exits 0), nothing left behind.
    let q = d.path().join("huge.db");
    let r = run_stdin(
        &["load", "-n", &s(&q)],
        Some(b"VERSION=3\nmapsize=1152921504606846976\nHEADER=END\n 61\n 62\nDATA=END\n"),
    );
    assert_eq!(r.code, 1, "{r:?}");
    assert!(!q.exists() && !d.path().join("huge.db-lck").exists());
    // Empty input: error, nothing created.
    let q = d.path().join("empty.db");
    let r = run_stdin(&["load", "-n", &s(&q)], Some(b""));
    assert_eq!(r.code, 1, "{r:?}");
    assert!(!q.exists());
    // A key line without its value at the end.
    let r = run_stdin(&["load", "-n", &s(&q)], Some(b"VERSION=3\nHEADER=END\n 61\n"));
    assert_eq!(r.code, 1);
    assert!(r.stderr.contains("line 3"), "{r:?}");
    // A data line without the leading space.
    let r = run_stdin(&["load", "-n", &s(&d.path().join("x.db"))], Some(b"VERSION=3\nHEADER=END\nX a\n"));
    assert_eq!(r.code, 1);
    assert!(r.stderr.contains("line 3"), "{r:?}");
}

#[test]
fn load_options_no_overwrite_purge_sequence_plain_text_rescue() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("o.db");
    let head =
        "VERSION=3\nformat=print\ndatabase=t\ntype=btree\ndb_pagesize=4096\nduplicates=0\nsequence=5\nHEADER=END\n";
    let r = run_stdin(&["load", "-q", "-n", &s(&p)], Some(format!("{head} a\n 1\n b\n 2\nDATA=END\n").as_bytes()));
    assert_eq!(r.code, 0, "{r:?}");
    // -N keeps existing values.
    let r = run_stdin(&["load", "-q", "-N", &s(&p)], Some(format!("{head} a\n X\n c\n 3\nDATA=END\n").as_bytes()));
    assert_eq!(r.code, 0, "{r:?}");
    let t = String::from_utf8(dump(&["-p", "-s", "t", &s(&p)])).unwrap();
    assert!(t.contains(" a\n 1\n b\n 2\n c\n 3\n"), "{t}");
    assert!(t.contains("sequence=5\n"));
    // -p purges first and keeps the sequence (the real mdbx_load -p loses it).
    let r = run_stdin(&["load", "-q", "-p", &s(&p)], Some(format!("{head} z\n 9\nDATA=END\n").as_bytes()));
    assert_eq!(r.code, 0, "{r:?}");
    let t = String::from_utf8(dump(&["-p", "-s", "t", &s(&p)])).unwrap();
    assert!(t.contains("sequence=5\nHEADER=END\n z\n 9\nDATA=END\n"), "{t}");
    // A smaller sequence than present is an error.
    let lower = head.replace("sequence=5", "sequence=2");
    let r = run_stdin(&["load", "-q", &s(&p)], Some(format!("{lower} y\n 1\nDATA=END\n").as_bytes()));
    assert_eq!(r.code, 1);
    assert!(r.stderr.contains("greater than loaded"), "{r:?}");
    // Flags differing from the existing table.
    let dup = head.replace("duplicates=0", "duplicates=1\ndupsort=1");
    let r = run_stdin(&["load", "-q", &s(&p)], Some(format!("{dup} y\n 1\nDATA=END\n").as_bytes()));
    assert_eq!(r.code, 1, "{r:?}");
    // -T: headerless plain text into -s TABLE.
    let r = run_stdin(&["load", "-q", "-T", "-s", "plain", &s(&p)], Some(b"k1\nv1\nk\\5c2\nv\\00\n"));
    assert_eq!(r.code, 0, "{r:?}");
    let t = String::from_utf8(dump(&["-p", "-s", "plain", &s(&p)])).unwrap();
    assert!(t.contains(" k1\n v1\n k\\5c2\n v\\00\n"), "{t}");
    // -r skips only the record with a bad size (the real -r loses the rest of the section).
    let long = "k".repeat(3000);
    let text = format!("VERSION=3\nformat=print\ndatabase=r\ntype=btree\ndb_pagesize=4096\nduplicates=0\nHEADER=END\n a\n 1\n {long}\n 2\n c\n 3\nDATA=END\n");
    let r = run_stdin(&["load", "-q", "-r", &s(&p)], Some(text.as_bytes()));
    assert_eq!(r.code, 0, "{r:?}");
    let t = String::from_utf8(dump(&["-p", "-s", "r", &s(&p)])).unwrap();
    assert!(t.contains(" a\n 1\n c\n 3\nDATA=END"), "{t}");
    let r = run_stdin(&["load", "-q", &s(&p)], Some(text.replace("database=r", "database=r2").as_bytes()));
    assert_eq!(r.code, 1);
    assert!(r.stderr.contains("line 10"), "{r:?}");
    assert_eq!(run(&["chk", "-q", &s(&p)]).code, 0);
}

#[test]
fn dump_errors_and_read_only() {
    let d = tempfile::tempdir().unwrap();
    let r = run(&["dump", &s(&d.path().join("missing"))]);
    assert_eq!(r.code, 1);
    assert!(r.stderr.contains("missing"), "{r:?}");
    let p: PathBuf = golden_copy("g3", d.path());
    let before = std::fs::read(&p).unwrap();
    let r = run(&["dump", "-s", "nosuch", &s(&p)]);
    assert_eq!(r.code, 1);
    assert!(r.stderr.contains("no table named 'nosuch'"), "{r:?}");
    let _ = dump(&["-a", "-p", &s(&p)]);
    assert_eq!(std::fs::read(&p).unwrap(), before, "dump must not write to the data file");
    assert_eq!(run(&["dump", "-a", "-s", "x", &s(&p)]).code, 1);
    // Not a database.
    let g = d.path().join("junk");
    std::fs::write(&g, vec![0x5au8; 65536]).unwrap();
    let r = run(&["dump", &s(&g)]);
    assert_eq!(r.code, 1);
    assert!(r.stderr.contains("not an MDBX database"), "{r:?}");
    assert!(!d.path().join("junk-lck").exists());
}

#[test]
fn rescue_dump_goes_on_after_a_damaged_table() {
    let d = tempfile::tempdir().unwrap();
    let p = golden_copy("g1", d.path());
    let mut img = Img::open(&p);
    let many = img.table("many").1;
    let leaf = img.leaves(many.root)[5];
    let o = img.poff(leaf);
    img.b[o..o + img.ps].fill(0);
    img.save();
    let r = run(&["dump", "-a", &s(&p)]);
    assert_eq!(r.code, 1, "{r:?}");
    let r = run(&["dump", "-a", "-r", &s(&p)]);
    assert_eq!(r.code, 1, "{r:?}");
    assert!(r.stderr.contains("for `many` and continue"), "{r:?}");
    let text = String::from_utf8_lossy(&r.raw_stdout).into_owned();
    for t in ["rev", "revdup", "tags", "users"] {
        assert!(text.contains(&format!("database={t}\n")), "{t} missing after the damaged table");
    }
    assert_eq!(text.matches("VERSION=3\n").count(), text.matches("DATA=END\n").count());
    // Every undamaged table is complete.
    let golden = golden::parse_dump(&golden_text("g1.dump")).unwrap();
    let ours = golden::parse_dump(&r.raw_stdout).unwrap();
    for sec in ours.iter().filter(|s| s.name.as_deref() != Some(&b"many"[..])) {
        let g = golden.iter().find(|g| g.name == sec.name).unwrap();
        assert!(g.records == sec.records, "{}", sec.display_name());
    }
}
