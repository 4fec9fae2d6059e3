//! The `rdbx` shell driven through `-c` and stdin scripts: every command,
//! its error cases, output formats and exit codes.

mod common;

use common::*;
use std::path::Path;

fn db() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    make_db(dir.path());
    dir
}

fn p(d: &tempfile::TempDir) -> &Path {
    d.path()
}

// ---------------------------------------------------------------------------
// Command line

#[test]
fn help_version_and_usage_errors() {
    for flag in ["--help", "-h"] {
        let r = run(&[flag], None);
        assert!(r.ok(), "{r:?}");
        for word in ["--write", "--create", "-c", "--format", "--keep-going", "--create-demo", "EXIT STATUS"] {
            assert!(r.stdout.contains(word), "help lacks {word:?}:\n{}", r.stdout);
        }
    }
    let r = run(&["-V"], None);
    assert!(r.ok() && r.stdout.starts_with("rdbx "), "{r:?}");
    for args in [&["--bogus"][..], &[], &["a", "b"], &["-c"], &["--format", "xml", "x"]] {
        let r = run(args, None);
        assert_eq!(r.code, Some(2), "{args:?}: {r:?}");
        assert!(r.stderr.starts_with("rdbx: ") && r.stderr.contains("usage:"), "{r:?}");
    }
    assert!(run(&[], None).stderr.contains("missing PATH"));
}

#[test]
fn missing_database_is_not_created_without_create() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("nope");
    let m = missing.to_str().unwrap();
    let r = run(&[m, "-c", "tables"], None);
    assert_eq!(r.code, Some(1), "{r:?}");
    assert!(r.stderr.contains(m) && r.stderr.contains("--create"), "{r:?}");
    assert!(!missing.exists(), "a read-only open must not create anything");
    // An empty directory is not a database either.
    let r = run(&[dir.path().to_str().unwrap(), "-c", "tables"], None);
    assert_eq!(r.code, Some(1), "{r:?}");
    assert!(r.stderr.contains("mdbx.dat is missing"), "{r:?}");
    assert!(!dir.path().join("mdbx.lck").exists());

    // --create makes it, read-write.
    let r = run(&[m, "--create", "-c", "create t; put -t t k v; get -t t k"], None);
    assert!(r.ok(), "{r:?}");
    assert_eq!(r.stdout, "v\n");
    assert!(missing.join("mdbx.dat").is_file());
}

#[test]
fn not_a_database() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("junk.dat");
    std::fs::write(&f, vec![7u8; 8192]).unwrap();
    let r = run(&[f.to_str().unwrap(), "-c", "tables"], None);
    assert_eq!(r.code, Some(1), "{r:?}");
    assert!(r.stderr.contains("junk.dat"), "{r:?}");
    assert_eq!(std::fs::read(&f).unwrap(), vec![7u8; 8192], "the file must stay as it was");
}

#[test]
fn create_demo_then_browse() {
    let dir = tempfile::tempdir().unwrap();
    let demo = dir.path().join("demo");
    let d = demo.to_str().unwrap();
    let r = run(&["--create-demo", d], None);
    assert!(r.ok(), "{r:?}");
    assert!(r.stdout.contains("created demo database"), "{r:?}");
    let r = run(
        &[
            d,
            "-f",
            "raw",
            "-c",
            "tables; use fruit; get kiwi; use numbers; get 7; scan --limit 2 -t domains; get -t blobs big",
        ],
        None,
    );
    assert!(r.ok(), "{r:?}");
    let lines = r.lines();
    let names: Vec<&str> = lines[..5].iter().map(|l| l.split('\t').next().unwrap()).collect();
    assert_eq!(names, ["blobs", "by-color", "domains", "fruit", "numbers"], "{r:?}");
    assert_eq!(lines[5], "green");
    assert_eq!(lines[6], "7 squared is 49");
    // REVERSE_KEY: ordered by the reversed bytes ("gro.elpmaxe" < "gro.gnal-tsur.www" < "moc...")
    assert_eq!(lines[7], "example.org\t93.184.215.34", "{r:?}");
    assert_eq!(lines[8], "www.rust-lang.org\t18.244.28.2", "{r:?}");
    let big: Vec<u8> = (0..20_000u32).map(|i| (i % 251) as u8).collect();
    assert!(r.raw.windows(big.len()).any(|w| w == big), "raw output carries the bytes as stored");
}

#[test]
fn create_demo_refuses_an_existing_database() {
    let dir = tempfile::tempdir().unwrap();
    let demo = dir.path().join("demo");
    let d = demo.to_str().unwrap();
    assert!(run(&["--create-demo", d], None).ok());
    let r = run(&[d, "--write", "-c", "put -t fruit apple green"], None);
    assert!(r.ok(), "{r:?}");
    let dat = demo.join("mdbx.dat");
    let before = std::fs::read(&dat).unwrap();
    for target in [demo.clone(), dat.clone()] {
        let t = target.to_str().unwrap();
        let r = run(&["--create-demo", t], None);
        assert_eq!(r.code, Some(1), "{r:?}");
        assert!(r.stderr.contains(t) && r.stderr.contains("already holds a database"), "{r:?}");
        assert!(!r.stdout.contains("created demo database"), "{r:?}");
    }
    assert_eq!(std::fs::read(&dat).unwrap(), before, "the database is untouched");
    let r = run(&[d, "-f", "raw", "-c", "get -t fruit apple"], None);
    assert_eq!(r.stdout, "green\n", "the user's record stays: {r:?}");
    // A fresh path, and an existing empty directory, still work.
    let empty = dir.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    assert!(run(&["--create-demo", empty.to_str().unwrap()], None).ok());
    let r = run(&[empty.to_str().unwrap(), "-f", "raw", "-c", "get -t fruit apple"], None);
    assert_eq!(r.stdout, "red\n", "{r:?}");
}

// ---------------------------------------------------------------------------
// Reading

#[test]
fn tables_use_get() {
    let d = db();
    let r = cmd(p(&d), "tables");
    assert!(r.ok(), "{r:?}");
    for (name, flags) in [("colors", "-"), ("ints", "integerkey"), ("tags", "dupsort"), ("hosts", "reversekey")] {
        let line = r.lines().into_iter().find(|l| l.contains(&format!(" {name} "))).unwrap_or_else(|| panic!("{r:?}"));
        assert!(line.contains(flags), "{line}");
    }
    assert!(r.stdout.contains("5 table(s)"), "{r:?}");

    let r = run(&[p(&d).to_str().unwrap(), "-f", "json", "-c", "tables"], None);
    let v = json(&r);
    assert_eq!(v[0]["name"], "colors");
    assert_eq!(v[0]["records"], 6);
    assert_eq!(v[1]["flags"], "reversekey");

    // text, hex keys, quoted words, --table, integer keys
    let r = cmd(
        p(&d),
        "use colors; get green; get 0x626c7565; get 0x62696e01; get \"with space\"; get -t ints 1000; get -t ints u64:2",
    );
    assert!(r.ok(), "{r:?}");
    assert_eq!(r.stdout, "00ff00\n0000ff\n0x000102ff\ntwo words\nn1000\nn2\n");

    // dupsort: every value of the key
    let r = cmd(p(&d), "use tags; get fruit");
    assert_eq!(r.stdout, "apple\nfig\npear\n", "{r:?}");
    let r = run(&[p(&d).to_str().unwrap(), "-f", "json", "-c", "use tags; get veg"], None);
    assert_eq!(r.stdout, "{\"key\":\"veg\",\"key_hex\":\"766567\",\"value\":\"kale\",\"value_hex\":\"6b616c65\"}\n");
}

#[test]
fn scan_ranges_prefixes_limits() {
    let d = db();
    let keys =
        |r: &Run| -> Vec<String> { r.lines().iter().map(|l| l.split('\t').next().unwrap().to_string()).collect() };
    let raw = |c: &str| run(&[p(&d).to_str().unwrap(), "-f", "raw", "-c", c], None);

    let r = raw("use many; scan k0010 k0013");
    assert_eq!(keys(&r), ["k0010", "k0011", "k0012"], "{r:?}");
    let r = raw("use many; scan k0010 k0013 --reverse");
    assert_eq!(keys(&r), ["k0012", "k0011", "k0010"], "{r:?}");
    let r = raw("use many; scan * k0002");
    assert_eq!(keys(&r), ["k0000", "k0001"], "{r:?}");
    let r = raw("use many; scan k0498");
    assert_eq!(keys(&r), ["k0498", "k0499"], "{r:?}");
    let r = raw("use many; scan --prefix k001 --limit 3");
    assert_eq!(keys(&r), ["k0010", "k0011", "k0012"], "{r:?}");
    let r = raw("use many; scan --prefix k001 --reverse");
    assert_eq!(keys(&r).len(), 10);
    assert_eq!(keys(&r)[0], "k0019", "{r:?}");
    let r = raw("use many; scan --reverse --limit 2 --keys-only");
    assert_eq!(r.stdout, "k0499\nk0498\n", "{r:?}");
    let r = raw("use many; scan --prefix zz");
    assert_eq!(r.stdout, "");
    // raw: the bytes as stored (integer keys are native-endian u64 here)
    let r = raw("use ints; scan 2 1000");
    let mut want = 2u64.to_ne_bytes().to_vec();
    want.extend_from_slice(b"\tn2\n");
    want.extend_from_slice(&3u64.to_ne_bytes());
    want.extend_from_slice(b"\tn3\n");
    assert_eq!(r.raw, want, "{r:?}");
    let r = run(&[p(&d).to_str().unwrap(), "-f", "json", "-c", "use ints; scan 2 1000 --keys-only"], None);
    let v = json(&r);
    assert_eq!((v[0]["key"].clone(), v[1]["key"].clone()), (2.into(), 3.into()), "{r:?}");
    let r = raw("use tags; scan --keys-only");
    assert_eq!(r.stdout, "fruit\nveg\n", "{r:?}");
    let r = raw("use tags; scan --reverse");
    assert_eq!(r.stdout, "veg\tkale\nfruit\tpear\nfruit\tfig\nfruit\tapple\n", "{r:?}");
    // reverse-key table: the prefix is matched on the key as written
    let r = raw("use hosts; scan --prefix a.");
    assert_eq!(keys(&r), ["a.example.org", "a.example.com"], "{r:?}");

    // table format: a box and a count; long scans come in batches
    let r = cmd(p(&d), "use many; scan --limit 3");
    assert!(r.stdout.contains("│ k0002 ") && r.stdout.contains("3 records (--limit reached"), "{r:?}");
    let r = cmd(p(&d), "use many; scan");
    assert!(r.stdout.contains("500 records"), "{r:?}");

    // hex and json
    let r = run(&[p(&d).to_str().unwrap(), "-f", "hex", "-c", "use colors; scan bin bio"], None);
    assert_eq!(r.stdout, "0x62696e01\t0x000102ff\n", "{r:?}");
    let r = run(&[p(&d).to_str().unwrap(), "-f", "json", "-c", "use colors; scan b c; use ints; scan --limit 1"], None);
    let v = json(&r);
    assert_eq!(v[0]["key_hex"], "62696e01");
    assert_eq!(v[0]["value_hex"], "000102ff");
    assert!(v[0]["key"].is_null() && v[0]["value"].is_null(), "not text: null, with the _hex field");
    assert_eq!(v[1]["key"], "black");
    assert_eq!(v[3]["key"], 1, "integer keys are JSON numbers");

    let r = cmd(p(&d), "scan --prefix x -t ints");
    assert_eq!(r.code, Some(1));
    assert!(r.stderr.contains("integers"), "{r:?}");
    let r = cmd(p(&d), "scan --limit many");
    assert!(r.stderr.contains("bad --limit"), "{r:?}");
}

#[test]
fn paged_scans_resume_where_they_stopped() {
    // Each page comes from a snapshot of its own: the rows must be the same
    // as in one go, whatever the page size, direction and table kind.
    let d = db();
    let raw = |c: &str| run(&[p(&d).to_str().unwrap(), "-f", "raw", "-c", c], None);
    for scan in [
        "use tags; scan",
        "use tags; scan --reverse",
        "use tags; scan --keys-only",
        "use tags; scan --keys-only --reverse",
        "use tags; scan fruit veg",
        "use many; scan k0100 k0120",
        "use many; scan k0100 k0120 --reverse",
        "use many; scan --prefix k04 --limit 25",
        "use hosts; scan --prefix a.",
        "use hosts; scan --reverse",
        "use ints; scan --reverse",
    ] {
        let whole = raw(scan);
        assert!(whole.ok(), "{whole:?}");
        for page in [1, 2, 3, 7] {
            let paged = raw(&format!("pager {page}; {scan}"));
            assert_eq!(paged.raw, whole.raw, "{scan} in pages of {page}: {paged:?}");
        }
    }
    // tables: one box per page
    let r = cmd(p(&d), "pager 2; use many; scan --limit 5");
    assert_eq!(r.stdout.matches("╭").count(), 3, "{r:?}");
    assert!(r.stdout.contains("5 records (--limit reached"), "{r:?}");
}

#[test]
fn count_estimate_stat() {
    let d = db();
    let r = cmd(p(&d), "use many; count; count k0100 k0200; count --prefix k04; count -t tags");
    assert_eq!(r.stdout, "500\n100\n100\n4\n", "{r:?}");
    let r = run(&[p(&d).to_str().unwrap(), "-f", "json", "-c", "use many; estimate-range k0100 k0300 --exact"], None);
    let v = &json(&r)[0];
    assert_eq!(v["exact"], 200, "{r:?}");
    let est = v["estimate"].as_u64().unwrap();
    assert!((100..=400).contains(&est), "estimate {est} is far off: {r:?}");
    let r = run(&[p(&d).to_str().unwrap(), "-f", "json", "-c", "estimate-range * * -t many"], None);
    assert_eq!(json(&r)[0]["estimate"], 500, "{r:?}");
    let r = cmd(p(&d), "estimate-range a");
    assert_eq!(r.code, Some(1));
    assert!(r.stderr.contains("usage: estimate-range FROM TO"), "{r:?}");

    let r = cmd(p(&d), "stat colors");
    let line = r.lines().into_iter().find(|l| l.contains(" records ")).unwrap_or_else(|| panic!("{r:?}"));
    assert!(line.contains(" 6 "), "{r:?}");
    let r = run(&[p(&d).to_str().unwrap(), "-f", "json", "-c", "stat tags; use ints; stat; stat @MAIN"], None);
    let v = json(&r);
    assert_eq!(
        (v[0]["table"].as_str(), v[0]["records"].as_u64(), v[0]["flags"].as_str()),
        (Some("tags"), Some(4), Some("dupsort"))
    );
    assert_eq!(v[1]["table"], "ints");
    assert!(v[2]["table"].is_null() && v[2]["table_hex"].is_null(), "the main table: null");
    assert_eq!(v[2]["records"], 5, "the main table holds the 5 table records");
}

#[test]
fn info_geometry_readers() {
    let d = db();
    let r = run(&[p(&d).to_str().unwrap(), "-f", "json", "-c", "info; geometry; readers"], None);
    assert!(r.ok(), "{r:?}");
    let v = json(&r);
    assert_eq!(v[0]["mode"], "read-only");
    assert_eq!(v[0]["page_size"], 4096);
    assert_eq!(v[0]["tables"], 5);
    assert!(v[0]["meta_0"].as_str().unwrap().contains("steady"), "{r:?}");
    assert_eq!(v[1]["page_size"], 4096);
    assert!(v[1]["upper"].as_u64().unwrap() >= 1 << 30, "{r:?}");
    // readers: this shell's own slot
    assert!(v[2..].iter().any(|x| x["who"] == "this shell" && x["pid"].as_u64().is_some()), "{r:?}");

    // A reader of another process that lags behind two commits.
    {
        let env = rdbx::Env::builder().max_dbs(8).open(p(&d)).unwrap();
        let snap = env.begin_ro_txn().unwrap();
        let old = snap.id();
        assert!(cmd_rw(p(&d), "use many; del k0001; del k0002").ok());
        let r = run(&[p(&d).to_str().unwrap(), "-f", "json", "-c", "readers"], None);
        let me = std::process::id() as u64;
        let row = json(&r).into_iter().find(|x| x["pid"] == me).unwrap_or_else(|| panic!("{r:?}"));
        assert_eq!(row["txnid"], old, "{r:?}");
        assert_eq!(row["lag"], 2, "{r:?}");
        assert!(row["pages_used"].as_u64().unwrap() > 0, "{r:?}");
        assert!(row["pages_retained"].as_u64().is_some(), "{r:?}");
        assert_eq!(row["who"], "");
        drop(snap);
    }

    // setting the geometry needs rw
    let r = cmd(p(&d), "geometry --upper 1G");
    assert_eq!(r.code, Some(1));
    assert!(r.stderr.contains("read-only"), "{r:?}");
    let r = run(&[p(&d).to_str().unwrap(), "-w", "-f", "json", "-c", "geometry --upper 1G --growth 4M"], None);
    assert!(r.ok(), "{r:?}");
    assert_eq!(json(&r)[0]["upper"], 1 << 30);
    assert_eq!(json(&r)[0]["growth"], 4 << 20);
    let r = cmd(p(&d), "geometry");
    assert!(r.stdout.contains("1073741824 (1 GiB)"), "tables show sizes with units: {r:?}");
    let r = cmd_rw(p(&d), "geometry --upper 10Q");
    assert!(r.stderr.contains("--upper: bad size unit"), "{r:?}");
    let r = cmd_rw(p(&d), "geometry --upper 4K");
    assert_eq!(r.code, Some(1), "an upper bound below the data must be refused: {r:?}");
}

// ---------------------------------------------------------------------------
// Writing

#[test]
fn read_only_by_default() {
    let d = db();
    let before = dump_table(p(&d), "colors");
    for c in ["put k v", "del red -t colors", "create t", "drop colors --yes", "begin", "load x.txt"] {
        let r = cmd(p(&d), c);
        assert_eq!(r.code, Some(1), "{c}: {r:?}");
        assert!(r.stderr.contains("read-only") && r.stderr.contains("open rw"), "{c}: {r:?}");
        assert_eq!(r.stderr.lines().count(), 1, "one line per error: {r:?}");
    }
    assert_eq!(dump_table(p(&d), "colors"), before);
    // `open rw` switches the session to read-write.
    let r = cmd(p(&d), "open rw; put -t colors k v; get -t colors k");
    assert!(r.ok(), "{r:?}");
    assert_eq!(r.stdout, "v\n");
}

#[test]
fn put_get_del_notations() {
    let d = db();
    let r = cmd_rw(
        p(&d),
        r#"create t; use t; put a 1; put 0x00ff bin; put "sp ace" "x\ty"; put 'it''s' q; put u32:7 seven; put "0x12" text; put key 0x;
           get a; get 0x00ff; get "sp ace"; get its; get u32:7; get "0x12"; get key"#,
    );
    assert!(r.ok(), "{r:?}");
    assert_eq!(r.stdout, "1\nbin\n0x7809 79\n".replace("0x7809 79", "0x780979") + "q\nseven\ntext\n\"\"\n");
    assert_eq!(r.stdout.lines().nth(2), Some("0x780979"));

    // overwrite, --no-overwrite, --append
    let r = cmd_rw(p(&d), "use t; put a 2; get a; put a 3 --no-overwrite");
    assert_eq!(r.code, Some(1), "{r:?}");
    assert_eq!(r.stdout, "2\n");
    assert!(r.stderr.contains("already exists"), "{r:?}");
    let r = cmd_rw(p(&d), "create log; use log; put 1 a --append; put 2 b --append; put 0 c --append");
    assert_eq!(r.code, Some(1), "{r:?}");
    assert!(r.stderr.contains("command 5") && r.stderr.contains("--append"), "{r:?}");

    // delete: a key, a missing key, a dupsort pair, all values of a key
    let r = cmd_rw(p(&d), "use t; del a; get a");
    assert_eq!(r.code, Some(1));
    assert!(r.stderr.contains("command 3: get: key 'a' not found in table 't'"), "{r:?}");
    let r = cmd_rw(p(&d), "del nope -t t");
    assert!(r.stderr.contains("key 'nope' not found"), "{r:?}");
    let r = cmd_rw(p(&d), "use tags; del fruit fig; get fruit; del fruit pear; del fruit nothing");
    assert_eq!(r.stdout, "apple\npear\n", "{r:?}");
    assert!(r.stderr.contains("no pair 'fruit' = 'nothing'"), "{r:?}");
    let r = cmd_rw(p(&d), "use tags; put veg leek; put veg leek --no-dup");
    assert!(r.stderr.contains("already exists"), "{r:?}");
    let r = cmd_rw(p(&d), "use tags; del veg; count");
    assert_eq!(r.stdout, "1\n", "{r:?}");

    // integer tables: numbers, and the width of the stored keys
    let r = cmd_rw(p(&d), "use ints; put 5 five; get 5; put u32:6 x");
    assert_eq!(r.stdout, "five\n");
    assert!(r.stderr.contains("8-byte"), "{r:?}");
    let r = cmd_rw(p(&d), "use ints; put abc x");
    assert!(r.stderr.contains("integer keys"), "{r:?}");
}

#[test]
fn bad_input_gets_one_line_and_changes_nothing() {
    let d = db();
    let before = dump_table(p(&d), "colors");
    let big = "x".repeat(3000);
    let cases: Vec<(String, &str)> = vec![
        ("frobnicate".into(), "unknown command 'frobnicate'"),
        ("sacn".into(), "did you mean 'scan'"),
        ("get".into(), "expected 1 argument"),
        ("put a".into(), "expected 2 argument"),
        ("get a b c".into(), "usage: get KEY"),
        ("get 0xabc".into(), "odd number of hex digits"),
        ("get 0xgg".into(), "not a hex digit"),
        ("get u32:-1".into(), "not an unsigned 32-bit number"),
        (format!("get {big}"), "key too large: 3000 bytes"),
        ("put k v".into(), "read-only"),
        ("use nosuch".into(), "no table named 'nosuch'"),
        ("get -t nosuch k".into(), "no table named 'nosuch'"),
        ("scan --bogus".into(), "unknown option '--bogus'"),
        ("get \"open".into(), "unterminated double quote"),
        ("get \"\\q\"".into(), "unknown escape"),
        ("commit".into(), "no transaction is open"),
        ("format xml".into(), "unknown format 'xml'"),
        ("help nosuch".into(), "unknown command 'nosuch'"),
    ];
    for (c, want) in &cases {
        let r = cmd(p(&d), &format!("use colors; {c}"));
        assert_eq!(r.code, Some(1), "{c}: {r:?}");
        assert_eq!(r.stderr.lines().count(), 1, "{c}: one line: {r:?}");
        assert!(r.stderr.contains(want), "{c}: want {want:?}: {r:?}");
        assert!(r.stderr.starts_with("rdbx: command "), "{c}: names the command: {r:?}");
    }
    // the same in read-write mode: a too large key is refused before the engine
    let r = cmd_rw(p(&d), &format!("use colors; put {big} v"));
    assert!(r.stderr.contains("at most 2022 bytes"), "{r:?}");
    let r = cmd_rw(p(&d), &format!("use tags; put k {big}"));
    assert!(r.stderr.contains("value too large"), "{r:?}");
    assert_eq!(dump_table(p(&d), "colors"), before);
    let r = cmd(p(&d), "check");
    assert!(r.ok(), "{r:?}");
}

#[test]
fn create_and_drop_tables() {
    let d = db();
    let r = cmd_rw(p(&d), "create a --dupsort --dupfixed --integerdup; create b --integerkey; create \"c d\"; tables");
    assert!(r.ok(), "{r:?}");
    assert!(r.stdout.contains("dupsort,dupfixed,integerdup") && r.stdout.contains("c d"), "{r:?}");
    let r = cmd_rw(p(&d), "use a; put k 5; put k 3; get k");
    assert_eq!(r.stdout, "3\n5\n", "integerdup values are numbers: {r:?}");
    let r = cmd_rw(p(&d), "create a");
    assert!(r.stderr.contains("table 'a' already exists"), "{r:?}");
    let r = cmd_rw(p(&d), "create x --dupfixed");
    assert!(r.stderr.contains("do not go together"), "{r:?}");
    let r = cmd_rw(p(&d), "create @MAIN");
    assert!(r.stderr.contains("always exists"), "{r:?}");
    let r = cmd_rw(p(&d), "drop @MAIN");
    assert!(r.stderr.contains("cannot be dropped"), "{r:?}");

    // drop --empty keeps the table; drop removes it; scripts are not asked
    let r = cmd_rw(p(&d), "drop colors --empty; count -t colors; use colors; drop colors; stat; tables");
    assert!(r.ok(), "{r:?}");
    assert!(r.stdout.starts_with("0\n"), "{r:?}");
    assert!(r.stdout.contains("@MAIN"), "the current table falls back to the main table: {r:?}");
    assert!(!r.stdout.contains("colors"), "{r:?}");
    let r = cmd_rw(p(&d), "drop colors");
    assert!(r.stderr.contains("no table named 'colors'"), "{r:?}");
}

#[test]
fn explicit_transactions() {
    let d = db();
    // commit keeps, abort drops, nested abort drops only the inner changes
    let r = cmd_rw(
        p(&d),
        "use colors; begin; put a 1; get a; begin; put b 2; abort; begin; put c 3; commit; commit; get a; get c; get b",
    );
    assert_eq!(r.code, Some(1), "{r:?}");
    assert_eq!(r.stdout, "1\n1\n3\n");
    assert!(r.stderr.contains("command 14: get: key 'b' not found"), "{r:?}");
    let r = cmd_rw(p(&d), "use colors; begin; put x 1; abort; get x");
    assert!(r.stderr.contains("key 'x' not found"), "{r:?}");
    // create + write in one transaction, visible inside it
    let r = cmd_rw(p(&d), "begin; create n; put -t n k v; tables; get -t n k; commit");
    assert!(r.ok(), "{r:?}");
    assert!(r.stdout.contains(" n ") && r.stdout.ends_with("v\n"), "{r:?}");
    // a table created in an aborted transaction is gone, and no longer current
    let r = cmd_rw(
        p(&d),
        "begin; create gone; use gone; abort; stat; begin; begin; create g2; use g2; abort; stat; commit",
    );
    assert!(r.ok(), "{r:?}");
    assert_eq!(r.stdout.matches("@MAIN").count(), 2, "{r:?}");
    // what cannot run inside a transaction
    for c in ["open x", "close", "check", "copy /tmp/x", "dump", "load x"] {
        let r = cmd_rw(p(&d), &format!("begin; {c}"));
        assert!(r.stderr.contains("finish the transaction first"), "{c}: {r:?}");
    }
    // the end of a script inside a transaction discards it and is an error
    let r = run(&[p(&d).to_str().unwrap(), "-w"], Some("use colors\nbegin\nput y 1\n"));
    assert_eq!(r.code, Some(1), "{r:?}");
    assert!(r.stderr.contains("line 2") && r.stderr.contains("aborted"), "{r:?}");
    let r = cmd(p(&d), "get -t colors y");
    assert_eq!(r.code, Some(1), "the changes are gone: {r:?}");
    // an error inside a transaction stops the script and rolls it back
    let r = run(&[p(&d).to_str().unwrap(), "-w"], Some("use colors\nbegin\nput z 1\nget nope\ncommit\n"));
    assert!(r.stderr.contains("line 4: get:"), "{r:?}");
    assert_eq!(cmd(p(&d), "get -t colors z").code, Some(1));
    // with --keep-going the transaction goes on after the error
    let r = run(&[p(&d).to_str().unwrap(), "-w", "-k"], Some("use colors\nbegin\nput z 1\nget nope\ncommit\n"));
    assert_eq!(r.code, Some(1), "{r:?}");
    assert_eq!(cmd(p(&d), "get -t colors z").stdout, "1\n");
}

// ---------------------------------------------------------------------------
// Scripts

#[test]
fn scripts_stop_at_the_first_error_and_name_the_line() {
    let d = db();
    let script = "# a comment\nuse colors\n\nget red\nget nope\nget green\n";
    let r = run(&[p(&d).to_str().unwrap()], Some(script));
    assert_eq!(r.code, Some(1), "{r:?}");
    assert_eq!(r.stdout, "ff0000\n");
    assert_eq!(r.stderr, "rdbx: line 5: get: key 'nope' not found in table 'colors'\n");
    // --keep-going runs the rest, and still fails
    let r = run(&[p(&d).to_str().unwrap(), "--keep-going"], Some(script));
    assert_eq!(r.code, Some(1), "{r:?}");
    assert_eq!(r.stdout, "ff0000\n00ff00\n");
    // -c: the same, commands numbered
    let r = cmd(p(&d), "use colors; get nope; get red");
    assert_eq!((r.code, r.stdout.as_str()), (Some(1), ""), "{r:?}");
    assert!(r.stderr.starts_with("rdbx: command 2: get:"), "{r:?}");
    // a -c text that cannot be read runs nothing
    let r = cmd(p(&d), "get -t colors red; get \"x");
    assert_eq!((r.code, r.stdout.as_str()), (Some(1), ""), "{r:?}");
    // quit ends a script; a clean script exits 0
    let r = run(&[p(&d).to_str().unwrap()], Some("use colors\nget red; quit\nget nope\n"));
    assert!(r.ok(), "{r:?}");
    assert_eq!(r.stdout, "ff0000\n");
    // bytes that are not UTF-8 in a script line
    let r = run_bytes(&[p(&d).to_str().unwrap()], Some(b"get \xff\n"));
    assert_eq!(r.code, Some(1));
    assert!(r.stderr.contains("line 1") && r.stderr.contains("UTF-8"), "{r:?}");
}

#[test]
fn session_commands() {
    let d = db();
    let r = cmd(p(&d), "help");
    assert!(r.ok(), "{r:?}");
    for c in [
        "open",
        "close",
        "tables",
        "use",
        "create",
        "drop",
        "put",
        "get",
        "del",
        "scan",
        "count",
        "estimate-range",
        "readers",
        "geometry",
        "stat",
        "info",
        "begin",
        "commit",
        "abort",
        "check",
        "copy",
        "dump",
        "load",
        "history",
        "format",
        "pager",
        "quit",
    ] {
        assert!(r.stdout.contains(&format!("\n  {c}")), "help lacks {c}: {r:?}");
        let h = cmd(p(&d), &format!("help {c}"));
        assert!(h.ok() && h.stdout.contains("usage: ") && h.stdout.contains(c), "help {c}: {h:?}");
    }
    let r = cmd(p(&d), "help scan");
    for o in ["--prefix", "--limit", "--reverse", "--keys-only", "--table"] {
        assert!(r.stdout.contains(o), "{r:?}");
    }
    // format / .mode switch within the session
    let r = cmd(p(&d), "use colors; get red; format json; get red; .mode hex; get red; format");
    assert_eq!(
        r.stdout,
        "ff0000\n{\"key\":\"red\",\"key_hex\":\"726564\",\"value\":\"ff0000\",\"value_hex\":\"666630303030\"}\n\
         0x666630303030\nhex\n",
        "{r:?}"
    );
    let r = cmd(p(&d), "pager 5; pager; pager off; pager; pager lots");
    assert_eq!(r.stdout, "5\noff\n", "{r:?}");
    assert!(r.stderr.contains("bad pager setting"), "{r:?}");
    // history of a script: the lines read so far
    let r = run(&[p(&d).to_str().unwrap(), "-f", "raw"], Some("use colors\nget red\nhistory\n"));
    assert_eq!(r.stdout, "ff0000\n1\tuse colors\n2\tget red\n3\thistory\n", "{r:?}");
    // close and open
    let r = cmd(p(&d), "close; tables");
    assert!(r.stderr.contains("no database is open"), "{r:?}");
    let other = db();
    let r = cmd(p(&d), &format!("use colors; open {}; stat", p(&other).display()));
    assert!(r.ok(), "{r:?}");
    assert!(r.stdout.contains("@MAIN"), "a new database starts on the main table: {r:?}");
    let r = cmd(p(&d), "open /nonexistent/db; tables");
    assert_eq!(r.code, Some(1), "{r:?}");
    assert!(r.stderr.contains("command 1: open:") && r.stderr.contains("--create"), "{r:?}");
    let r = run(&[p(&d).to_str().unwrap(), "-k", "-c", "open /nonexistent/db; get -t colors red"], None);
    assert_eq!(r.stdout, "ff0000\n", "a failed open keeps the database that was open: {r:?}");
    // a session without a database
    let r = run(&["-c", "help; format json; tables"], None);
    assert_eq!(r.code, Some(1));
    assert!(r.stderr.contains("command 3: tables: no database is open"), "{r:?}");
}

// ---------------------------------------------------------------------------
// Maintenance

#[test]
fn copy_and_dump_never_overwrite_a_database_file() {
    let d = db();
    let dat = p(&d).join("mdbx.dat");
    let before = std::fs::read(&dat).unwrap();
    let out = tempfile::tempdir().unwrap();
    // The open database under other names: a hard link, a symlink, the lock file.
    let hard = out.path().join("hard.dat");
    std::fs::hard_link(&dat, &hard).unwrap();
    let soft = out.path().join("soft.dat");
    std::os::unix::fs::symlink(&dat, &soft).unwrap();
    let lck = p(&d).join("mdbx.lck");
    for dst in [&hard, &soft, &lck] {
        for c in [format!("copy {} --force", dst.display()), format!("dump {} --all --force", dst.display())] {
            let r = cmd(p(&d), &c);
            assert_eq!(r.code, Some(1), "{c}: {r:?}");
            assert!(r.stderr.contains(&dst.display().to_string()), "{c}: {r:?}");
            assert!(r.stderr.contains("choose another"), "{c}: {r:?}");
        }
    }
    assert_eq!(std::fs::read(&dat).unwrap(), before, "the database is untouched");
    // Another database, open in this process: its lock file never, its data
    // file not without --force.
    let other = tempfile::tempdir().unwrap();
    make_db(other.path());
    let env = rdbx::Env::builder().max_dbs(8).open(other.path()).unwrap();
    let (odat, olck) = (other.path().join("mdbx.dat"), other.path().join("mdbx.lck"));
    let (ob, lb) = (std::fs::read(&odat).unwrap(), std::fs::read(&olck).unwrap());
    for c in [
        format!("copy {} --force", olck.display()),
        format!("dump {} --all --force", olck.display()),
        format!("dump {} --all", odat.display()),
        format!("copy {}", odat.display()),
    ] {
        let r = cmd(p(&d), &c);
        assert_eq!(r.code, Some(1), "{c}: {r:?}");
        assert!(r.stderr.contains("MDBX database"), "{c}: {r:?}");
    }
    assert_eq!(std::fs::read(&odat).unwrap(), ob);
    assert_eq!(std::fs::read(&olck).unwrap(), lb);
    drop(env);
}

#[test]
fn check_copy_dump_load() {
    let d = db();
    let r = cmd(p(&d), "check");
    assert!(r.ok(), "{r:?}");
    // Status lines go to stderr: stdout holds only data.
    assert!(r.stderr.contains("no problems found") && !r.stdout.contains("no problems"), "{r:?}");

    let out = tempfile::tempdir().unwrap();
    let c1 = out.path().join("copy.dat");
    let c2 = out.path().join("compact");
    std::fs::create_dir(&c2).unwrap();
    let r = cmd(p(&d), &format!("copy {}; copy {} --compact", c1.display(), c2.display()));
    assert!(r.ok(), "{r:?}");
    assert!(r.stderr.contains("compacted copy") && r.stdout.is_empty(), "{r:?}");
    for c in [&c1, &c2] {
        let r = cmd(c, "check; count -t many");
        assert!(r.ok() && r.stdout.ends_with("500\n"), "{}: {r:?}", c.display());
    }
    let r = cmd(p(&d), &format!("copy {}", c1.display()));
    assert!(r.stderr.contains("data file of an MDBX database") && r.stderr.contains("--force"), "{r:?}");
    assert!(cmd(p(&d), &format!("copy {} --force", c1.display())).ok());
    let own = p(&d).join("mdbx.dat");
    let r = cmd(p(&d), &format!("copy {} --force", own.display()));
    assert!(r.stderr.contains("data file of the open database"), "{r:?}");
    assert!(cmd(p(&d), "check").ok(), "the database is intact");

    // dump a table, load it under another name, and compare
    let f = out.path().join("tags.dump");
    let r = cmd(p(&d), &format!("dump {} -t tags", f.display()));
    assert!(r.ok() && r.stderr.contains("4 record(s)"), "{r:?}");
    let text = std::fs::read_to_string(&f).unwrap();
    assert!(text.starts_with("VERSION=3\n") && text.contains("database=tags\n") && text.contains("dupsort=1\n"));
    let r = cmd_rw(p(&d), &format!("load {} --into tags2; stat tags2", f.display()));
    assert!(r.ok(), "{r:?}");
    assert!(r.stdout.contains("dupsort"), "{r:?}");
    assert_eq!(dump_table(p(&d), "tags2"), dump_table(p(&d), "tags"));
    // the dump on the screen
    let r = cmd(p(&d), "use colors; dump --print");
    assert!(r.stdout.contains("database=colors\nformat=print") || r.stdout.contains("format=print"), "{r:?}");
    assert!(r.stdout.contains(" red\n ff0000\n"), "{r:?}");
    // dump --all into a new database
    let all = out.path().join("all.dump");
    assert!(cmd(p(&d), &format!("dump {} --all", all.display())).ok());
    let fresh = out.path().join("fresh");
    let r = run(&[fresh.to_str().unwrap(), "--create", "-c", &format!("load {}; tables", all.display())], None);
    assert!(r.ok(), "{r:?}");
    assert_eq!(dump_table(&fresh, "many"), dump_table(p(&d), "many"));
    let r = cmd(p(&d), &format!("dump {}", all.display()));
    assert!(r.stderr.contains("exists"), "{r:?}");
    let r = cmd_rw(p(&d), "load /nonexistent.dump");
    assert!(r.stderr.contains("/nonexistent.dump"), "{r:?}");
    let bad = out.path().join("bad.dump");
    std::fs::write(&bad, "VERSION=3\nformat=bytevalue\nHEADER=END\n zz\n").unwrap();
    let r = cmd_rw(p(&d), &format!("load {}", bad.display()));
    assert_eq!(r.code, Some(1), "{r:?}");
    assert!(r.stderr.contains("line 4"), "{r:?}");
}

#[test]
fn check_reports_damage() {
    let d = db();
    // Overwrite one page of the 'many' table's leaves (not a meta page).
    let data = p(&d).join("mdbx.dat");
    let mut bytes = std::fs::read(&data).unwrap();
    let ps = 4096;
    let pages = bytes.len() / ps;
    // the last allocated page with a leaf flag (0x02) in its header
    let victim = (3..pages).rev().find(|&pg| bytes[pg * ps + 10] == 0x02).expect("a leaf page");
    for b in &mut bytes[victim * ps + 20..victim * ps + 200] {
        *b = 0xA5;
    }
    std::fs::write(&data, &bytes).unwrap();
    let r = cmd(p(&d), "check");
    assert_eq!(r.code, Some(1), "{r:?}");
    assert!(r.stdout.contains("major"), "{r:?}");
    assert!(r.stderr.contains("problem(s) found"), "{r:?}");
}

#[test]
fn output_that_goes_away() {
    // a reader that stops early must not make the shell panic
    let d = db();
    let mut child = std::process::Command::new(BIN)
        .args([p(&d).to_str().unwrap(), "-f", "raw", "-c", "use many; scan; scan; scan"])
        .env("RDBX_HISTORY", "")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    {
        use std::io::Read;
        let mut out = child.stdout.take().unwrap();
        let mut buf = [0u8; 16];
        out.read_exact(&mut buf).unwrap();
    }
    let o = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!err.contains("panicked"), "{err}");
}

#[test]
fn random_input_never_panics_nor_corrupts() {
    // Deterministic garbage built from the shell's own vocabulary.
    let d = db();
    let words = [
        "get",
        "put",
        "del",
        "scan",
        "count",
        "estimate-range",
        "use",
        "create",
        "drop",
        "tables",
        "stat",
        "info",
        "geometry",
        "readers",
        "begin",
        "commit",
        "abort",
        "help",
        "format",
        "pager",
        "history",
        "dump",
        "copy",
        "colors",
        "ints",
        "tags",
        "hosts",
        "many",
        "@MAIN",
        "k0001",
        "0x",
        "0xff00",
        "0xf",
        "u32:7",
        "u64:",
        "i64:-3",
        "f64:nan",
        "\"a b\"",
        "'q'",
        "\"\\x00\"",
        "--limit",
        "--prefix",
        "--reverse",
        "--keys-only",
        "-t",
        "--table",
        "--dupsort",
        "--integerkey",
        "--dupfixed",
        "--empty",
        "--yes",
        "--exact",
        "--upper",
        "--lower",
        "1K",
        "0",
        "99999999999999999999999",
        "*",
        "--",
        ";",
        "#",
        "é",
        "\"",
        "'",
        "\\",
        "-",
        "--bogus",
        "json",
        "raw",
        "hex",
        "table",
        "",
    ];
    let mut seed: u64 = 0x5eed;
    let mut next = |n: usize| {
        seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (seed >> 33) as usize % n
    };
    let mut script = String::new();
    for _ in 0..600 {
        let len = 1 + next(5);
        let line: Vec<&str> = (0..len).map(|_| words[next(words.len())]).collect();
        script.push_str(&line.join(" "));
        script.push('\n');
    }
    script.push_str("commit\n");
    // (copy and dump may write files named by the garbage: in a directory of their own)
    let cwd = tempfile::tempdir().unwrap();
    let args = [p(&d).to_str().unwrap(), "--write", "--keep-going", "-f", "raw"];
    let r = run_in(Some(cwd.path()), &args, Some(script.as_bytes()));
    assert!(!r.stderr.contains("panicked"), "{}", r.stderr);
    assert!(r.code == Some(0) || r.code == Some(1), "{:?}", r.code);
    let c = cmd(p(&d), "check");
    assert!(c.ok(), "{c:?}");
}

#[test]
fn lock_format_option() {
    let d = tempfile::tempdir().unwrap();
    let path = d.path().join("new");
    let path = path.to_str().unwrap();
    let r = run(&["--lock-format", "6", "--create", path, "-f", "json", "-c", "info"], None);
    assert!(r.ok(), "{r:?}");
    assert_eq!(json(&r)[0]["lock_format"], "v6 (libmdbx 0.13)", "{r:?}");
    let r = run(&[path, "-f", "json", "-c", "info"], None);
    assert_eq!(json(&r)[0]["lock_format"], "v7 (libmdbx 0.14.2+)", "{r:?}");
    let r = run(&["--lock-format=8", path, "-c", "info"], None);
    assert_eq!(r.code, Some(2), "{r:?}");
    assert!(r.stderr.contains("unknown lock format"), "{r:?}");
}
