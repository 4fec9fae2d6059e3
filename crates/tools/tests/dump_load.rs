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
    // A geometry this system cannot have (64 TiB, within the bounds mdbx_load
    // takes, beyond the 8 TiB of 4 KiB pages): error (the real mdbx_load
    // exits 0), nothing left behind.
    let q = d.path().join("huge.db");
    let r = run_stdin(
        &["load", "-n", &s(&q)],
        Some(b"VERSION=3\nmapsize=70368744177664\nHEADER=END\n 61\n 62\nDATA=END\n"),
    );
    assert_eq!(r.code, 1, "{r:?}");
    assert!(r.stderr.contains("exceeds the largest database of 4096-byte pages (8796093022208 bytes)"), "{r:?}");
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

/// Database-wide header settings count in the first section only, and
/// only within the bounds mdbx_load takes: otherwise they are ignored with
/// its warnings and the load goes on. (A `mapsize=0` stopped the load with
/// "geometry lower 12288 exceeds upper 0".)
#[test]
fn header_settings_out_of_bounds_or_after_the_first_section_are_ignored() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("w.db");
    let text = "VERSION=3\nformat=bytevalue\ntype=btree\ndb_pagesize=4096\nmapsize=0\nmaxreaders=0\ntxnid=0\n\
                mapaddr=0x10\nHEADER=END\n 61\n 31\nDATA=END\n\
                VERSION=3\nformat=bytevalue\ndatabase=t\ntype=btree\ndb_pagesize=4096\nHEADER=END\n 62\n 32\nDATA=END\n\
                VERSION=3\nformat=bytevalue\ndatabase=u\ntype=btree\ndb_pagesize=1024\nmapsize=1048576\n\
                maxreaders=5\ngeometry=nonsense\ncanary=nonsense\nHEADER=END\n 63\n 33\nDATA=END\n";
    let r = run_stdin(&["load", "-n", &s(&p)], Some(text.as_bytes()));
    assert_eq!(r.code, 0, "{r:?}");
    for w in [
        "line 5: ignore unsupported value 0x0 for mapsize",
        "line 6: ignore unsupported value 0x0 for maxreaders",
        "line 7: ignore unsupported value 0x0 for txnid",
        "line 8: ignore unsupported value 0x10 for mapaddr",
        "line 26: ignore value 1024 for 'db_pagesize' in non-global context",
        "line 27: ignore value 1048576 for 'mapsize' in non-global context",
        "line 28: ignore value 5 for 'maxreaders' in non-global context",
        "line 29: ignore values nonsense for 'geometry' in non-global context",
        "line 30: ignore values nonsense for 'canary' in non-global context",
    ] {
        assert!(r.stderr.contains(w), "{w:?} in {r:?}");
    }
    // The second section repeats the first one's page size: no warning.
    assert!(!r.stderr.contains("line 17:"), "{r:?}");
    assert_eq!(r.stderr.lines().filter(|l| l.contains("ignore")).count(), 9, "{r:?}");
    // Every record loaded; the database has the default geometry.
    for (t, kv) in [("t", " 62\n 32\n"), ("u", " 63\n 33\n")] {
        let r = run(&["dump", "-s", t, &s(&p)]);
        assert!(r.stdout.contains(&format!("HEADER=END\n{kv}DATA=END")), "{r:?}");
    }
    assert_eq!(run(&["chk", "-q", &s(&p)]).code, 0);
    // Numbers that are not numbers are errors, as there.
    let r = run_stdin(&["load", "-n", &s(&d.path().join("x.db"))], Some(b"VERSION=3\nmapaddr=x\nHEADER=END\n"));
    assert_eq!(r.code, 1, "{r:?}");
    assert!(r.stderr.contains("line 2: unexpected number format for 'mapaddr'"), "{r:?}");
    // A map size beyond libmdbx's bounds (2^60): ignored, as mdbx_load does.
    let q = d.path().join("big.db");
    let r = run_stdin(
        &["load", "-n", &s(&q)],
        Some(b"VERSION=3\nmapsize=1152921504606846976\nHEADER=END\n 61\n 62\nDATA=END\n"),
    );
    assert_eq!(r.code, 0, "{r:?}");
    assert!(r.stderr.contains("line 2: ignore unsupported value 0x1000000000000000 for mapsize"), "{r:?}");
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

/// A dump without geometry lines (they differ between page sizes by design).
fn records_only(text: &[u8]) -> Vec<u8> {
    let keep =
        |l: &&[u8]| !(l.starts_with(b"geometry=") || l.starts_with(b"mapsize=") || l.starts_with(b"db_pagesize="));
    text.split_inclusive(|&c| c == b'\n').filter(keep).flatten().copied().collect()
}

fn page_size_of(p: &Path) -> usize {
    rdbx::Env::builder().read_only(true).max_dbs(64).open(p).unwrap().page_size()
}

fn last_txnid(p: &Path) -> u64 {
    rdbx::Env::builder().read_only(true).max_dbs(64).open(p).unwrap().info().unwrap().last_txnid
}

#[test]
fn load_geometry_option_migrates_the_page_size() {
    let d = tempfile::tempdir().unwrap();
    let g1 = golden_copy("g1", d.path());
    let text = dump(&["-a", &s(&g1)]);
    // dump | load -G ...:65536 into a new database.
    let big = d.path().join("big.db");
    let r = run_stdin(&["load", "-q", "-n", "-G", "-1:-1:-1:-1:65536", &s(&big)], Some(&text));
    assert_eq!(r.code, 0, "{r:?}");
    assert!(r.stderr.is_empty(), "-q: {r:?}");
    let e = run(&["stat", "-e", &s(&big)]);
    assert_eq!(e.code, 0, "{e:?}");
    assert!(e.stdout.contains("  Pagesize: 65536\n"), "{e:?}");
    assert_eq!(page_size_of(&big), 65536);
    let again = dump(&["-a", &s(&big)]);
    assert!(again.windows(17).any(|w| w == b"db_pagesize=65536"), "the dump of the copy names its page size");
    assert!(records_only(&again) == records_only(&text), "the records must be identical after the migration");
    assert_eq!(run(&["chk", "-q", &s(&big)]).code, 0);
    let c = oracle::chk(&big).unwrap();
    assert!(c.is_clean(), "{}", c.report());
    // Every field, attached to the option letter, and a directory database.
    let mid = d.path().join("mid");
    let r = run(&[
        "load",
        "-q",
        "-G1048576:67108864:2097152:4194304:16384",
        "-f",
        &s(&golden_dir().join("g1.dump")),
        &s(&mid),
    ]);
    assert_eq!(r.code, 0, "{r:?}");
    let e = run(&["stat", "-e", &s(&mid)]).stdout;
    assert!(e.contains("  Pagesize: 16384\n"), "{e}");
    assert!(e.contains("  Dynamic datafile: 1048576..67108864 bytes (+2097152/-4194304)"), "{e}");
    assert!(records_only(&dump(&["-a", &s(&mid)])) == records_only(&text));
    // 0 = the minimum page size (256).
    let small = d.path().join("small.db");
    let r = run_stdin(
        &["load", "-q", "-n", "-G", "0:-1:-1:-1:0", &s(&small)],
        Some(b"VERSION=3\nformat=print\ntype=btree\nHEADER=END\n a\n 1\n b\n 2\nDATA=END\n"),
    );
    assert_eq!(r.code, 0, "{r:?}");
    assert_eq!(page_size_of(&small), 256);
    // An existing database keeps its page size, with a warning.
    let r = run(&["load", "-G", "-1:-1:-1:-1:4096", "-f", &s(&golden_dir().join("g1.dump")), &s(&big)]);
    assert_eq!(r.code, 0, "{r:?}");
    assert!(r.stderr.contains("-G page size 4096 ignored") && r.stderr.contains(&s(&big)), "{r:?}");
    assert_eq!(page_size_of(&big), 65536);
}

#[test]
fn load_geometry_option_rejects_bad_values() {
    let d = tempfile::tempdir().unwrap();
    let src = golden_dir().join("g1.dump");
    let db = d.path().join("x.db");
    for bad in ["1:2:3", "1:2:3:4:5:6", "a:b:c:d:e", "1M:-1:-1:-1:-1", ""] {
        let r = run(&["load", "-G", bad, "-f", &s(&src), &s(&db)]);
        assert_eq!(r.code, 1, "{bad}: {r:?}");
        assert_eq!(
            r.stderr,
            format!("rdbx-tools load: -G option: expecting five numbers delimited by a colon, but got '{bad}'\n")
        );
        assert!(!db.exists(), "{bad}: nothing may be created");
    }
    for ps in ["3000", "128", "131072"] {
        let g = format!("-1:-1:-1:-1:{ps}");
        let r = run(&["load", "-G", &g, "-f", &s(&src), &s(&db)]);
        assert_eq!(r.code, 1, "{g}: {r:?}");
        assert!(r.stderr.contains(&format!("invalid page size {ps}")), "{r:?}");
        assert!(r.stderr.contains("error 22, Invalid argument"), "{r:?}");
        assert!(!db.exists());
    }
    let r = run(&["load", "-G", "67108864:-1:1048576:-1:-1", "-f", &s(&src), &s(&db)]);
    assert_eq!(r.code, 0, "lower alone is fine: {r:?}");
    let r = run(&["load", "-G", "67108864:1048576:-1:-1:-1", "-f", &s(&src), &s(&d.path().join("y"))]);
    assert_eq!(r.code, 1, "{r:?}");
    assert!(r.stderr.contains("lower bound 67108864 exceeds the upper bound 1048576"), "{r:?}");
    // A geometry too small for the data: the error says what to do.
    let r = run(&["load", "-G", "-1:-1:0:-1:-1", "-f", &s(&src), &s(&d.path().join("full"))]);
    assert_eq!(r.code, 1, "{r:?}");
    assert!(r.stderr.contains("full") && r.stderr.contains("-G"), "{r:?}");
}

/// A dump of one table with `n` records of `vlen`-byte values.
fn synthetic_dump(n: u32, vlen: usize) -> Vec<u8> {
    let mut t = String::from("VERSION=3\nformat=bytevalue\ntype=btree\ndatabase=bulk\nduplicates=0\nHEADER=END\n");
    for i in 0..n {
        let key = format!("key-{i:08}");
        t.push(' ');
        t.extend(key.bytes().map(|b| format!("{b:02x}")));
        t.push_str("\n ");
        t.extend((0..vlen).map(|j| format!("{:02x}", (i as usize * 7 + j) as u8)));
        t.push('\n');
    }
    t.push_str("DATA=END\n");
    t.into_bytes()
}

#[test]
fn load_dirty_limit_commits_early_with_the_same_data() {
    let d = tempfile::tempdir().unwrap();
    let text = synthetic_dump(6000, 1000);
    let one = d.path().join("one.db");
    let r = run_stdin(&["load", "-q", "-n", "-b", "0", &s(&one)], Some(&text));
    assert_eq!(r.code, 0, "{r:?}");
    let limited = d.path().join("limited.db");
    let r = run_stdin(&["load", "-q", "-n", "-b", "0", "-L", "1", &s(&limited)], Some(&text));
    assert_eq!(r.code, 0, "{r:?}");
    let (a, b) = (dump(&["-a", &s(&one)]), dump(&["-a", &s(&limited)]));
    assert!(a == b, "-L must not change the data");
    let data = |t: &[u8]| t.split(|&c| c == b'\n').filter(|l| l.starts_with(b" ")).count();
    assert_eq!(data(&a), data(&text));
    assert!(a.ends_with(&text[text.len() - 2200..]), "the last record must be there");
    // About 6 MB of dirty pages in batches of at most 1 MiB: several commits.
    let (ta, tb) = (last_txnid(&one), last_txnid(&limited));
    assert!(tb >= ta + 4, "-L 1 should commit every MiB: txnid {tb} vs {ta} with one transaction");
    assert_eq!(run(&["chk", "-q", &s(&limited)]).code, 0);
    // -L 0 is no limit; a bad value is refused before anything is created.
    let z = d.path().join("z.db");
    let r = run_stdin(&["load", "-q", "-n", "-b", "0", "-L", "0", &s(&z)], Some(&text));
    assert_eq!(r.code, 0, "{r:?}");
    assert_eq!(last_txnid(&z), ta);
    let bad = d.path().join("bad.db");
    for v in ["x", "1.5", "-1"] {
        let r = run_stdin(&["load", "-L", v, &s(&bad)], Some(&text));
        assert_eq!(r.code, 1, "{v}: {r:?}");
        assert!(r.stderr.contains("-L option") && r.stderr.contains(&format!("'{v}'")), "{r:?}");
        assert!(!bad.exists());
    }
}

#[test]
fn load_fill_percent_is_validated() {
    let d = tempfile::tempdir().unwrap();
    let src = golden_dir().join("g1.dump");
    let db = d.path().join("x.db");
    for bad in ["49", "101", "0", "x", "-60", "75%"] {
        let r = run(&["load", "-d", bad, "-f", &s(&src), &s(&db)]);
        assert_eq!(r.code, 1, "{bad}: {r:?}");
        assert_eq!(
            r.stderr,
            format!(
                "rdbx-tools load: -d option: expecting unsigned integer value in range between 50 and 100, but got '{bad}'\n"
            )
        );
        assert!(!db.exists());
    }
    for good in ["50", "75", "100"] {
        let p = d.path().join(format!("fill{good}"));
        let r = run(&["load", "-q", "-d", good, "-f", &s(&src), &s(&p)]);
        assert_eq!(r.code, 0, "{good}: {r:?}");
        assert!(dump(&["-a", &s(&p)]) == golden_text("g1.dump"));
    }
    let h = run(&["load", "--help"]).stdout;
    assert!(h.contains("fill each page completely"), "{h}");
}

#[test]
fn load_nonblock_fails_at_once_while_another_writer_is_active() {
    let d = tempfile::tempdir().unwrap();
    let p = golden_copy("g1", d.path());
    let before = dump(&["-a", &s(&p)]);
    let text = synthetic_dump(10, 10);
    let env = rdbx::Env::builder().max_dbs(64).open(&p).unwrap();
    let txn = env.begin_rw_txn().unwrap();
    let r = run_no_wait(&["load", "--nonblock", &s(&p)], Some(&text));
    assert_eq!(r.code, 1, "{r:?}");
    assert!(r.stderr.contains(&s(&p)), "the message names the database: {r:?}");
    assert!(r.stderr.contains("another writer is active"), "{r:?}");
    assert!(r.stderr.contains(&format!("held by process {}", std::process::id())), "{r:?}");
    assert!(r.stderr.contains("retry") && r.stderr.contains("--nonblock"), "{r:?}");
    assert!(r.stderr.contains("nothing committed"), "{r:?}");
    txn.abort();
    drop(env);
    assert!(dump(&["-a", &s(&p)]) == before, "nothing may be loaded");
    // Without a competing writer --nonblock loads normally.
    let r = run_stdin(&["load", "-q", "--nonblock", &s(&p)], Some(&text));
    assert_eq!(r.code, 0, "{r:?}");
    let st = run(&["stat", "-s", "bulk", &s(&p)]).stdout;
    assert!(st.contains("Entries: 10\n"), "{st}");
    assert_eq!(run(&["chk", "-q", &s(&p)]).code, 0);
}
