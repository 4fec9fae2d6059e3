//! `rdbx-tools chk`: clean databases (libmdbx-made golden files, rdbx-made
//! databases) and a catalogue of hand-made corruption cases, applied to a
//! copy of the golden `g1` database by locating pages structurally.

mod common;

use std::path::{Path, PathBuf};

use common::*;
use tempfile::TempDir;

fn chk(path: &Path, extra: &[&str]) -> Run {
    let mut a: Vec<String> = vec!["chk".into()];
    a.extend(extra.iter().map(|s| s.to_string()));
    a.push(path.display().to_string());
    run(&a)
}

fn base() -> (TempDir, PathBuf) {
    let d = tempfile::tempdir().unwrap();
    let p = golden_copy("g1", d.path());
    (d, p)
}

/// g1 after dropping `many` (emptied) and deleting `rev`: a GC with records.
fn gcbase() -> (TempDir, PathBuf) {
    let (d, p) = base();
    let r = run(&["drop", "-q", "-s", "many", p.to_str().unwrap()]);
    assert_eq!(r.code, 0, "{r:?}");
    let r = run(&["drop", "-q", "-d", "-s", "rev", p.to_str().unwrap()]);
    assert_eq!(r.code, 0, "{r:?}");
    let r = chk(&p, &[]);
    assert_eq!(r.code, 0, "gcbase must be clean: {r:?}");
    (d, p)
}

fn mutate(p: &Path, f: impl FnOnce(&mut Img)) {
    let mut img = Img::open(p);
    f(&mut img);
    img.save();
}

/// Runs chk and checks the exit code and that every `want` text appears.
fn expect(p: &Path, extra: &[&str], code: i32, want: &[&str]) -> Run {
    let r = chk(p, extra);
    assert_eq!(r.code, code, "{r:?}");
    let all = r.all();
    for w in want {
        assert!(all.contains(w), "missing {w:?} in {r:?}");
    }
    // -q: nothing printed, same code.
    let mut q = vec!["-q"];
    q.extend_from_slice(extra);
    let rq = chk(p, &q);
    assert_eq!(rq.code, code, "-q: {rq:?}");
    assert!(rq.stdout.is_empty() && rq.stderr.is_empty(), "-q printed: {rq:?}");
    // Whatever the real mdbx_chk finds, rdbx finds too.
    // (Not with -i: the real mdbx_chk -i fails to open tables with
    // MDBX_INCOMPATIBLE, a defect of its custom-comparator path.)
    let real = if extra.contains(&"-i") { None } else { real_tool("mdbx_chk") };
    if let Some(real) = real {
        let mut a: Vec<String> = extra.iter().map(|s| s.to_string()).collect();
        a.push(p.display().to_string());
        let a: Vec<&str> = a.iter().map(String::as_str).collect();
        let rr = run_real(&real, &a, None);
        if rr.code != 0 {
            assert_ne!(code, 0, "the real mdbx_chk found a problem (exit {}): {rr:?}", rr.code);
        }
        if rr.code == 2 {
            assert!(code == 2 || code == 3, "real mdbx_chk: 2 (major), rdbx: {code}");
        }
    }
    r
}

// ---------------------------------------------------------------------------
// Clean databases

#[test]
fn golden_databases_are_clean_and_figures_match_mdbx_chk() {
    let d = tempfile::tempdir().unwrap();
    for name in ["g1", "g2", "g3", "gmain"] {
        let p = golden_copy(name, d.path());
        let r = chk(&p, &["-vv"]);
        assert_eq!(r.code, 0, "{name}: {r:?}");
        assert!(r.stdout.contains("No error is detected"), "{r:?}");
        assert!(r.stderr.is_empty(), "{r:?}");
        assert!(!r.stdout.contains('\x1b'), "no progress bar or escape codes when piped");
        // Every structural figure line of the real mdbx_chk -vv output is ours too.
        let golden = String::from_utf8(golden_text(&format!("{name}.chk"))).unwrap();
        for line in golden.lines() {
            let t = line.trim_start();
            let figure = t.starts_with("used:")
                || t.starts_with("allocated:")
                || t.starts_with("reclaimable:")
                || t.starts_with("remained:")
                || t.starts_with("available:")
                || t.starts_with("backed by file:")
                || t.starts_with("current datafile:")
                || t.starts_with("dynamic datafile:")
                || t.starts_with("pagesize ")
                || t.starts_with("= upto")
                || t.contains("summary:");
            if figure {
                assert!(r.stdout.contains(t), "{name}: line {t:?} not in our output:\n{}", r.stdout);
            }
        }
        let rc: i32 = String::from_utf8(golden_text(&format!("{name}.chk.rc"))).unwrap().trim().parse().unwrap();
        assert_eq!(rc, r.code);
    }
}

#[test]
fn json_report() {
    let (_d, p) = base();
    let r = chk(&p, &["--json"]);
    assert_eq!(r.code, 0, "{r:?}");
    let v: serde_json::Value = serde_json::from_str(r.stdout.trim()).unwrap();
    assert_eq!(v["exit_code"], 0);
    assert_eq!(v["problems"]["total"], 0);
    assert_eq!(v["space"]["used_pages"], 921);
    assert_eq!(v["space"]["allocated_pages"], 923);
    assert_eq!(v["space"]["gc_listed_pages"], 2);
    assert_eq!(v["tables"].as_array().unwrap().len(), 12);
    assert!(r.stderr.is_empty());
    // The file and each named table as the engine sees them.
    let data = if p.is_dir() { p.join("mdbx.dat") } else { p.clone() };
    assert_eq!(v["data_path"], data.display().to_string());
    assert_eq!(v["file_size"], std::fs::metadata(&data).unwrap().len());
    {
        let env = rdbx::Env::builder().max_dbs(64).read_only(true).open(&p).unwrap();
        let txn = env.begin_ro_txn().unwrap();
        assert_eq!(v["page_size"], env.stat().unwrap().page_size);
        let names = txn.table_names().unwrap();
        assert!(!names.is_empty());
        let mut dbs = vec![("@MAIN".to_string(), rdbx::Db::MAIN)];
        for name in names {
            dbs.push((String::from_utf8_lossy(&name).into_owned(), txn.open_db_bytes(Some(&name)).unwrap()));
        }
        for (shown, db) in dbs {
            let t = v["tables"].as_array().unwrap().iter().find(|t| t["name"] == shown.as_str()).unwrap();
            let st = txn.db_stat(db).unwrap();
            assert_eq!(t["flags"], txn.db_flags(db).unwrap().bits(), "{shown}");
            assert_eq!((&t["depth"], &t["mod_txnid"]), (&st.depth.into(), &st.mod_txnid.into()), "{shown}");
            assert_eq!(t["root"].as_u64().unwrap() >= 3, st.depth > 0, "{shown}: root {}", t["root"]);
        }
    }
    // A corrupted database in JSON: problems listed with page and table.
    mutate(&p, |img| {
        let (o, _) = img.table("users");
        let items = u64_at(&img.b, o + tree_off::ITEMS);
        put_u64(&mut img.b, o + tree_off::ITEMS, items - 1);
    });
    let r = chk(&p, &["--json"]);
    assert_eq!(r.code, 2, "{r:?}");
    let v: serde_json::Value = serde_json::from_str(r.stdout.trim()).unwrap();
    assert_eq!(v["exit_code"], 2);
    let list = v["problem_list"].as_array().unwrap();
    assert_eq!(list[0]["table"], "users");
    assert_eq!(list[0]["severity"], "major");
    assert!(list[0]["message"].as_str().unwrap().contains("different number of entries"));
}

#[test]
fn rdbx_made_database_is_clean() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("db");
    let dump = golden_dir().join("g3.dump");
    let r = run(&["load", "-q", "-b", "1000", "-f", dump.to_str().unwrap(), p.to_str().unwrap()]);
    assert_eq!(r.code, 0, "{r:?}");
    expect(&p, &["-v"], 0, &["No error is detected"]);
}

// ---------------------------------------------------------------------------
// Usage and environment errors

#[test]
fn usage_and_open_errors() {
    let d = tempfile::tempdir().unwrap();
    // Missing path: system error.
    let r = chk(&d.path().join("nope"), &[]);
    assert_eq!(r.code, 4, "{r:?}");
    assert!(r.stderr.contains("nope"), "{r:?}");
    // Empty directory: missing file.
    let e = d.path().join("emptydir");
    std::fs::create_dir(&e).unwrap();
    assert_eq!(chk(&e, &[]).code, 4);
    // Zero-length file: ENODATA (4), no lock file left behind.
    let z = d.path().join("zero");
    std::fs::write(&z, b"").unwrap();
    assert_eq!(chk(&z, &[]).code, 4);
    // A short text file is not a database, as /bin/ls is not: the same
    // message and exit code (3) from every subcommand.
    let s = d.path().join("short");
    std::fs::write(&s, b"hello world\n").unwrap();
    let r = chk(&s, &[]);
    assert_eq!(r.code, 3, "{r:?}");
    assert!(r.stderr.contains("not an MDBX database"), "{r:?}");
    let ls = chk(Path::new("/bin/ls"), &[]);
    assert_eq!(ls.code, 3, "{ls:?}");
    assert!(ls.stderr.contains("not an MDBX database"), "{ls:?}");
    for sub in ["stat", "dump", "checksum", "space", "meta"] {
        let a = run(&[sub, s.to_str().unwrap()]);
        let b = run(&[sub, "/bin/ls"]);
        assert_eq!(a.code, b.code, "{sub}: {a:?} vs {b:?}");
        assert!(
            a.stderr.contains("not an MDBX database") && b.stderr.contains("not an MDBX database"),
            "{sub}: {a:?} {b:?}"
        );
    }
    // Not a database: engine error (3), and the failed open leaves no lock file.
    let g = d.path().join("garbage");
    let mut x = 0x1234_5678_9abc_def0u64;
    let bytes: Vec<u8> = (0..100_000)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect();
    std::fs::write(&g, &bytes).unwrap();
    let r = chk(&g, &[]);
    assert_eq!(r.code, 3, "{r:?}");
    assert!(!d.path().join("garbage-lck").exists(), "a read-only tool left a lock file");
    // Usage: bad option, missing path, turn without meta/write: 5.
    assert_eq!(run(&["chk", "--bogus", "x"]).code, 5);
    assert_eq!(run(&["chk"]).code, 5);
    let (_d2, p) = base();
    let r = chk(&p, &["-t"]);
    assert_eq!(r.code, 5);
    assert!(
        r.stderr.contains("meta-page must be specified") && r.stderr.contains("write-mode must be enabled"),
        "{r:?}"
    );
    assert_eq!(chk(&p, &["-1", "-w", "-t", "-d"]).code, 5);
    // A wrong table name is an error here (mdbx_chk silently accepts it).
    let r = chk(&p, &["-s", "nosuch"]);
    assert_eq!(r.code, 5, "{r:?}");
    assert!(r.stderr.contains("nosuch"));
    assert_eq!(chk(&p, &["-s", "users", "-vv"]).code, 0);
    // --help documents the exit codes.
    let h = run(&["chk", "--help"]);
    assert_eq!(h.code, 0);
    assert!(h.stdout.contains("EXIT STATUS") && h.stdout.contains("5  usage error"), "{h:?}");
}

#[test]
fn read_only_check_writes_nothing() {
    let (_d, p) = base();
    let before = std::fs::read(&p).unwrap();
    let m = std::fs::metadata(&p).unwrap().modified().unwrap();
    assert_eq!(chk(&p, &["-vvv"]).code, 0);
    assert_eq!(run(&["stat", "-efrra", p.to_str().unwrap()]).code, 0);
    assert_eq!(run(&["dump", "-a", "-q", p.to_str().unwrap()]).code, 0);
    assert_eq!(std::fs::read(&p).unwrap(), before);
    assert_eq!(std::fs::metadata(&p).unwrap().modified().unwrap(), m);
}

#[test]
fn locked_exclusively_by_libmdbx() {
    use rdbx_tests::oracle;
    let (_d, p) = base();
    let env =
        oracle::Env::open(&p, &oracle::EnvOptions { exclusive: true, ..Default::default() }).expect("exclusive open");
    let r = chk(&p, &[]);
    assert_eq!(r.code, 4, "{r:?}");
    assert!(r.stderr.contains("exclusively"), "{r:?}");
    for sub in [&["stat"][..], &["dump"], &["drop", "-s", "users"]] {
        let mut a: Vec<&str> = sub.to_vec();
        let ps = p.to_str().unwrap();
        a.push(ps);
        let r = run(&a);
        assert_eq!(r.code, 1, "{sub:?}: {r:?}");
        assert!(r.stderr.contains("exclusively"), "{r:?}");
    }
    let ps = p.to_str().unwrap();
    let dst = p.with_extension("copy");
    let r = run(&["copy", ps, dst.to_str().unwrap()]);
    assert_eq!(r.code, 1, "{r:?}");
    assert!(r.stderr.contains("exclusively"), "{r:?}");
    assert!(!dst.exists());
    let r = run_stdin(&["load", ps], Some(b"VERSION=3\nHEADER=END\n 61\n 62\nDATA=END\n"));
    assert_eq!(r.code, 1, "{r:?}");
    assert!(r.stderr.contains("exclusively"), "{r:?}");
    drop(env);
}

// ---------------------------------------------------------------------------
// A.10 corruption cases

fn many_root(img: &Img) -> u32 {
    img.table("many").1.root
}

#[test]
fn t01_branch_child_pgno_garbage() {
    let (_d, p) = base();
    let mut root = 0;
    mutate(&p, |img| {
        root = many_root(img);
        let o = img.node_off(root, 1);
        put_u32(&mut img.b, o, 0x00FF_FFFF);
    });
    expect(&p, &[], 2, &["many", &format!("page #{root}"), "wrong pgno (16777215)"]);
}

#[test]
fn t02_branch_child_points_meta() {
    let (_d, p) = base();
    mutate(&p, |img| {
        let root = many_root(img);
        let o = img.node_off(root, 1);
        put_u32(&mut img.b, o, 1);
    });
    expect(&p, &[], 2, &["wrong pgno (1)"]);
}

#[test]
fn t03_branch_child_dup_ref_reports_lost_pages() {
    let (_d, p) = base();
    let mut dup = 0;
    mutate(&p, |img| {
        let root = many_root(img);
        let mid = img.child(root, 0);
        assert!(img.is_branch(mid));
        dup = img.child(mid, 0);
        let o = img.node_off(mid, 1);
        put_u32(&mut img.b, o, dup);
    });
    let r = expect(&p, &[], 2, &[&format!("page #{dup}: already used")]);
    // BEAT: the orphaned subtree's pages are reported as lost.
    assert!(r.stderr.contains("owned by nobody"), "{r:?}");
}

#[test]
fn t04_branch_flags_to_leaf() {
    let (_d, p) = base();
    mutate(&p, |img| {
        let root = many_root(img);
        let mid = img.child(root, 0);
        let o = img.poff(mid) + 10;
        put_u16(&mut img.b, o, 0x02);
    });
    expect(&p, &[], 2, &["many"]);
}

#[test]
fn t05_branch_random_bytes() {
    let (_d, p) = base();
    mutate(&p, |img| {
        let root = many_root(img);
        let mid = img.child(root, 0);
        let o = img.poff(mid);
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        for b in &mut img.b[o..o + img.ps] {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            *b = x as u8;
        }
    });
    expect(&p, &[], 2, &["many"]);
}

#[test]
fn t06_branch_zeroed() {
    let (_d, p) = base();
    let mut root = 0;
    mutate(&p, |img| {
        root = many_root(img);
        let o = img.poff(root);
        img.b[o..o + img.ps].fill(0);
    });
    expect(&p, &[], 2, &[&format!("page #{root}"), "pgno mismatch (0 != expected"]);
}

#[test]
fn t07_branch_key_byte_flip() {
    let (_d, p) = base();
    mutate(&p, |img| {
        let root = many_root(img);
        let mid = img.child(root, 0);
        let o = img.node_off(mid, 2);
        let k = u16_at(&img.b, o + 6) as usize;
        assert!(k > 0);
        img.b[o + 8] ^= 0x7f;
    });
    expect(&p, &[], 2, &["many", "wrong order"]);
}

#[test]
fn t08_leaf_key_byte_flip_and_ignore_order() {
    let (_d, p) = base();
    mutate(&p, |img| {
        let users = img.table("users").1;
        let leaf = img.leaves(users.root)[0];
        let o = img.node_off(leaf, 4);
        img.b[o + 8] ^= 0x80;
    });
    expect(&p, &[], 2, &["users", "key wrong order"]);
    // -i: order problems are not reported.
    expect(&p, &["-i"], 0, &[]);
}

#[test]
fn t09_leaf_value_byte_flip_is_undetectable() {
    let (_d, p) = base();
    mutate(&p, |img| {
        let users = img.table("users").1;
        let leaf = img.leaves(users.root)[0];
        let o = img.node_val_off(leaf, 1);
        img.b[o] ^= 0x01;
    });
    expect(&p, &[], 0, &["No error is detected"]);
}

#[test]
fn t10_leaf_lower_upper() {
    let (_d, p) = base();
    let mut leaf = 0;
    mutate(&p, |img| {
        leaf = img.leaves(img.table("users").1.root)[0];
        let o = img.poff(leaf);
        put_u16(&mut img.b, o + 12, 4000);
        put_u16(&mut img.b, o + 14, 10);
    });
    expect(&p, &[], 2, &[&format!("page #{leaf}"), "lower 4000, upper 10"]);
}

#[test]
fn t11_leaf_pgno_mismatch() {
    let (_d, p) = base();
    let mut leaf = 0;
    mutate(&p, |img| {
        leaf = img.leaves(many_root(img))[3];
        let o = img.poff(leaf) + 16;
        put_u32(&mut img.b, o, leaf + 1);
    });
    expect(&p, &[], 2, &[&format!("pgno mismatch ({} != expected {leaf})", leaf + 1)]);
}

#[test]
fn t12_leaf_txnid_future() {
    let (_d, p) = base();
    mutate(&p, |img| {
        let leaf = img.leaves(many_root(img))[3];
        let o = img.poff(leaf);
        put_u64(&mut img.b, o, 1000);
    });
    expect(&p, &[], 2, &["invalid page txnid (1000)"]);
}

#[test]
fn t13_leaf_zeroed() {
    let (_d, p) = base();
    let mut leaf = 0;
    mutate(&p, |img| {
        leaf = img.leaves(many_root(img))[3];
        let o = img.poff(leaf);
        img.b[o..o + img.ps].fill(0);
    });
    expect(&p, &[], 2, &[&format!("expected {leaf}")]);
}

#[test]
fn t14_leaf_node_ksize_huge() {
    let (_d, p) = base();
    mutate(&p, |img| {
        let leaf = img.leaves(img.table("users").1.root)[0];
        let o = img.node_off(leaf, 0);
        put_u16(&mut img.b, o + 6, 60000);
    });
    expect(&p, &[], 2, &["users"]);
}

#[test]
fn t15_leaf_dsize_huge() {
    let (_d, p) = base();
    mutate(&p, |img| {
        let leaf = img.leaves(img.table("users").1.root)[0];
        let o = img.node_off(leaf, 0);
        put_u32(&mut img.b, o, 0x7FFF_FFFF);
    });
    expect(&p, &[], 2, &["users", "overruns"]);
}

/// The first 2-page large chunk of table `big`: (leaf, node, head pgno).
fn big_chunk(img: &Img, pages: u32) -> u32 {
    let big = img.table("big").1;
    for leaf in img.leaves(big.root) {
        for i in 0..img.nentries(leaf) {
            if img.node_flags(leaf, i) & 1 != 0 {
                let head = u32_at(&img.b, img.node_val_off(leaf, i));
                if u32_at(&img.b, img.poff(head) + 12) == pages {
                    return head;
                }
            }
        }
    }
    panic!("no large chunk of {pages} pages")
}

#[test]
fn t16_large_npages_wrong_is_one_problem() {
    let (_d, p) = base();
    let mut head = 0;
    mutate(&p, |img| {
        head = big_chunk(img, 2);
        let o = img.poff(head) + 12;
        put_u32(&mut img.b, o, 50);
    });
    let r = expect(&p, &[], 2, &[&format!("page #{head}: large chunk of 50 pages")]);
    // BEAT: one summarised problem, not one line per overlapped page.
    let lines = r.stderr.lines().filter(|l| l.contains("large chunk of 50")).count();
    assert_eq!(lines, 1, "{r:?}");
}

#[test]
fn t17_large_flags_wrong() {
    let (_d, p) = base();
    mutate(&p, |img| {
        let head = big_chunk(img, 2);
        let o = img.poff(head) + 10;
        put_u16(&mut img.b, o, 0x02);
    });
    expect(&p, &[], 2, &["instead of large/overflow"]);
}

#[test]
fn t18_table_items_wrong() {
    let (_d, p) = base();
    mutate(&p, |img| {
        let (o, t) = img.table("users");
        put_u64(&mut img.b, o + tree_off::ITEMS, t.items - 1);
    });
    expect(&p, &[], 2, &["users", "different number of entries 3000 (walked) != 2999"]);
}

#[test]
fn t19_table_leafcount_wrong() {
    let (_d, p) = base();
    mutate(&p, |img| {
        let (o, t) = img.table("ints32");
        put_u32(&mut img.b, o + tree_off::LEAF, t.leaf_pages + 1);
    });
    expect(&p, &[], 2, &["ints32", "all-leaf pages mismatch"]);
}

#[test]
fn t20_table_root_garbage_no_crash() {
    let (_d, p) = base();
    mutate(&p, |img| {
        let (o, _) = img.table("rev");
        put_u32(&mut img.b, o + tree_off::ROOT, 5_000_000);
    });
    // The real mdbx_chk dies with SIGSEGV here.
    expect(&p, &[], 2, &["rev", "page #5000000 is beyond the allocated pages"]);
    expect(&p, &["-d"], 2, &["5000000"]);
}

#[test]
fn t21_table_flags_dupsort_added() {
    let (_d, p) = base();
    mutate(&p, |img| {
        let (o, t) = img.table("users");
        put_u16(&mut img.b, o + tree_off::FLAGS, t.flags | 0x04);
    });
    // A DUPSORT table whose keys hold one value each is valid, so this is
    // not a problem (the real mdbx_chk finds nothing either, exit 0; a
    // nightly `chk || mail` must not alarm on a healthy database). With -v
    // rdbx mentions that the flags may be wrong.
    let r = chk(&p, &[]);
    assert_eq!(r.code, 0, "{r:?}");
    assert!(r.stderr.is_empty(), "{r:?}");
    let r = chk(&p, &["-v"]);
    assert_eq!(r.code, 0, "{r:?}");
    assert!(r.stdout.contains("info: users") && r.stdout.contains("DUPSORT"), "{r:?}");
}

#[test]
fn t22_meta_head_txnid_mismatch_is_reported() {
    let (_d, p) = base();
    mutate(&p, |img| {
        let o = img.head_off() + meta_off::TXNID_B;
        let t = u64_at(&img.b, o);
        put_u64(&mut img.b, o, t + 7);
    });
    // The real mdbx_chk silently checks the previous snapshot and exits 0.
    expect(&p, &[], 1, &["torn", "newest snapshot"]);
}

#[test]
fn t23_meta_head_magic_and_recovery_by_turning() {
    let (_d, p) = base();
    let head = Img::open(&p).head();
    mutate(&p, |img| {
        let o = img.head_off() + meta_off::MAGIC;
        img.b[o] ^= 0xff;
    });
    let r = expect(&p, &[], 3, &["manual recovery needed"]);
    assert!(r.stderr.contains("--meta"), "{r:?}");
    // Pick an older meta explicitly: its snapshot is checked.
    let older = (0..3).filter(|&i| i != head).max_by_key(|&i| Img::open(&p).meta(i).txnid()).unwrap();
    let sel = format!("-{older}");
    let r = chk(&p, &["-vvv", &sel]);
    assert_eq!(r.code, 0, "{r:?}");
    assert!(r.stdout.contains("forced for checking"), "{r:?}");
    // Turn to it: afterwards the database opens normally and checks clean.
    let r = chk(&p, &[&sel, "-w", "-t"]);
    assert_eq!(r.code, 0, "{r:?}");
    assert!(r.stdout.contains("is now the head"), "{r:?}");
    let r = chk(&p, &["-vvv"]);
    assert_eq!(r.code, 0, "{r:?}");
    let img = Img::open(&p);
    assert_eq!(img.head(), older);
    let d = run(&["dump", "-a", p.to_str().unwrap()]);
    assert_eq!(d.code, 0, "{d:?}");
}

#[test]
fn t24_meta_head_weak_needs_recovery() {
    let (_d, p) = base();
    let head = Img::open(&p).head();
    let txn = Img::open(&p).meta(head).txnid();
    mutate(&p, |img| {
        let o = img.head_off() + meta_off::SIGN;
        put_u64(&mut img.b, o, 1);
    });
    // A weak head meta from another boot: read-only cannot recover (3).
    expect(&p, &[], 3, &["recovery", "chk -w"]);
    // -w recovers (a weak meta from another boot is rolled back), then clean.
    let r = chk(&p, &["-w"]);
    assert_eq!(r.code, 0, "{r:?}");
    let r = chk(&p, &[]);
    assert_eq!(r.code, 0, "{r:?}");
    let img = Img::open(&p);
    assert!(img.meta(img.head()).is_steady());
    assert!(img.meta(img.head()).txnid() < txn);
}

#[test]
fn t25_meta_head_root_garbage() {
    let (_d, p) = base();
    mutate(&p, |img| {
        let o = img.head_off() + meta_off::MAIN_TREE + tree_off::ROOT;
        put_u32(&mut img.b, o, 0x00FF_FFFF);
    });
    expect(&p, &[], 3, &["manual recovery needed"]);
}

#[test]
fn t26_meta_nonhead_magic_is_minor() {
    let (_d, p) = base();
    mutate(&p, |img| {
        let h = img.head();
        let other = (0..3).find(|&i| i != h).unwrap();
        let o = other * img.ps + meta_off::MAGIC;
        img.b[o] ^= 0xff;
    });
    expect(&p, &[], 1, &["one fallback snapshot less"]);
}

#[test]
fn t27_meta_all_magic() {
    let (_d, p) = base();
    mutate(&p, |img| {
        for i in 0..3 {
            let o = i * img.ps + meta_off::MAGIC;
            img.b[o] ^= 0x10;
        }
    });
    expect(&p, &[], 3, &[]);
}

#[test]
fn t28_t30_meta_pagesize() {
    for (all, ps) in [(true, 8192u32), (false, 8192), (true, 1000)] {
        let (_d, p) = base();
        mutate(&p, |img| {
            let h = img.head();
            for i in 0..3 {
                if all || i == h {
                    let o = i * img.ps + meta_off::PAGESIZE;
                    put_u32(&mut img.b, o, ps);
                }
            }
        });
        expect(&p, &[], 3, &[]);
    }
}

#[test]
fn t31_meta_page_zeroed_head_reports_lost_snapshot() {
    let (_d, p) = base();
    mutate(&p, |img| {
        let o = img.head_off();
        img.b[o..o + img.ps].fill(0);
    });
    // The real mdbx_chk checks the previous snapshot and says nothing.
    expect(&p, &[], 2, &["lost"]);
}

#[test]
fn t32_meta_geo_now_small() {
    let (_d, p) = base();
    mutate(&p, |img| {
        let o = img.head_off() + meta_off::GEO_NOW;
        put_u32(&mut img.b, o, 100);
    });
    expect(&p, &[], 1, &["geometry is inconsistent"]);
}

#[test]
fn t33_meta_first_unalloc_small() {
    let (_d, p) = base();
    mutate(&p, |img| {
        let o = img.head_off() + meta_off::FIRST_UNALLOC;
        let main = img.main().root;
        put_u32(&mut img.b, o, main.min(500));
    });
    expect(&p, &[], 3, &["manual recovery needed"]);
}

#[test]
fn t34_page_leak_lists_pages() {
    let (_d, p) = base();
    let mut first = 0;
    mutate(&p, |img| {
        let o = img.head_off() + meta_off::FIRST_UNALLOC;
        first = u32_at(&img.b, o);
        put_u32(&mut img.b, o, first + 5);
    });
    expect(&p, &[], 2, &["used pages mismatch", "5 page(s) owned by nobody", &format!("{}-{}", first, first + 4)]);
}

/// Offset of the value of the first inline GC record with at least `n` pages.
fn gc_record(img: &Img, n: u32) -> (u32, usize, usize) {
    for leaf in img.leaves(img.gc().root) {
        for i in 0..img.nentries(leaf) {
            if img.node_flags(leaf, i) == 0 {
                let v = img.node_val_off(leaf, i);
                if u32_at(&img.b, v) >= n {
                    return (leaf, i, v);
                }
            }
        }
    }
    panic!("no GC record of {n} pages")
}

#[test]
fn t35_gc_entry_in_use() {
    let (_d, p) = gcbase();
    let mut live = 0;
    mutate(&p, |img| {
        live = img.leaves(img.table("users").1.root)[0];
        let (_, _, v) = gc_record(img, 3);
        // Keep the order: replace the smallest entry by a smaller live page if possible.
        let n = u32_at(&img.b, v) as usize;
        put_u32(&mut img.b, v + 4 * n, live);
    });
    expect(&p, &[], 2, &[&format!("page #{live}: already used")]);
}

#[test]
fn t36_gc_entry_beyond_eof() {
    let (_d, p) = gcbase();
    mutate(&p, |img| {
        let (_, _, v) = gc_record(img, 3);
        put_u32(&mut img.b, v + 4, 50_000);
    });
    expect(&p, &[], 2, &["wrong idl entry (pgno 50000"]);
}

#[test]
fn t37_gc_entry_duplicate() {
    let (_d, p) = gcbase();
    mutate(&p, |img| {
        let (_, _, v) = gc_record(img, 3);
        let a = u32_at(&img.b, v + 4);
        put_u32(&mut img.b, v + 8, a);
    });
    expect(&p, &[], 2, &["bad sequence", "already listed in GC"]);
}

#[test]
fn t38_gc_entry_unsorted() {
    let (_d, p) = gcbase();
    mutate(&p, |img| {
        let (_, _, v) = gc_record(img, 3);
        let a = u32_at(&img.b, v + 4);
        let b = u32_at(&img.b, v + 8);
        put_u32(&mut img.b, v + 4, b);
        put_u32(&mut img.b, v + 8, a);
    });
    expect(&p, &[], 2, &["bad sequence"]);
}

#[test]
fn t39_gc_count_too_big() {
    let (_d, p) = gcbase();
    mutate(&p, |img| {
        let (_, _, v) = gc_record(img, 1);
        put_u32(&mut img.b, v, 100_000);
    });
    expect(&p, &[], 2, &["trimmed idl"]);
}

#[test]
fn t40_gc_key_txn_future() {
    let (_d, p) = gcbase();
    mutate(&p, |img| {
        let (leaf, i, _) = gc_record(img, 1);
        let o = img.node_off(leaf, i) + 8;
        put_u64(&mut img.b, o, 99_999);
    });
    expect(&p, &[], 2, &["wrong txn-id (99999)"]);
}

#[test]
fn t41_gc_leaf_zeroed() {
    let (_d, p) = gcbase();
    mutate(&p, |img| {
        let leaf = img.leaves(img.gc().root)[0];
        let o = img.poff(leaf);
        img.b[o..o + img.ps].fill(0);
    });
    expect(&p, &[], 2, &["@GC"]);
}

#[test]
fn t42_dupsort_subpage_order() {
    let (_d, p) = base();
    mutate(&p, |img| {
        let tags = img.table("tags").1;
        'outer: for leaf in img.leaves(tags.root) {
            for i in 0..img.nentries(leaf) {
                if img.node_flags(leaf, i) == 0x04 {
                    // Sub-page: make value #1 sort before value #0.
                    let sp = img.node_val_off(leaf, i);
                    let e1 = sp + 20 + u16_at(&img.b, sp + 22) as usize;
                    let k = u16_at(&img.b, e1 + 6) as usize;
                    assert!(k > 0);
                    img.b[e1 + 8] = 0;
                    break 'outer;
                }
            }
        }
    });
    expect(&p, &[], 2, &["tags", "nested-node-key #1 wrong order"]);
}

#[test]
fn t43_t48_file_size_cases() {
    // Truncated to half: the allocated pages are gone: no usable meta.
    let (_d, p) = base();
    let len = std::fs::metadata(&p).unwrap().len();
    std::fs::OpenOptions::new().write(true).open(&p).unwrap().set_len(len / 2 / 4096 * 4096).unwrap();
    expect(&p, &[], 3, &[]);
    // Truncated to exactly the allocated pages: fine (a note only).
    let (_d, p) = base();
    let first = u32_at(&Img::open(&p).b, Img::open(&p).head_off() + meta_off::FIRST_UNALLOC) as u64;
    std::fs::OpenOptions::new().write(true).open(&p).unwrap().set_len(first * 4096).unwrap();
    expect(&p, &[], 0, &["filesize mismatch"]);
    // Truncated to two pages.
    let (_d, p) = base();
    std::fs::OpenOptions::new().write(true).open(&p).unwrap().set_len(8192).unwrap();
    let r = chk(&p, &[]);
    assert!(r.code == 3 || r.code == 4, "{r:?}");
    // Not a multiple of the page size: recovery needed (3), -w repairs it.
    let (_d, p) = base();
    std::fs::OpenOptions::new().write(true).open(&p).unwrap().set_len(len - 100).unwrap();
    expect(&p, &[], 3, &["chk -w"]);
    let r = chk(&p, &["-w"]);
    assert_eq!(r.code, 0, "{r:?}");
    assert_eq!(std::fs::metadata(&p).unwrap().len() % 4096, 0);
    assert_eq!(chk(&p, &[]).code, 0);
    // Truncated to zero: system error.
    let (_d, p) = base();
    std::fs::OpenOptions::new().write(true).open(&p).unwrap().set_len(0).unwrap();
    expect(&p, &[], 4, &[]);
    // 1 MiB of zeroes appended: fine.
    let (_d, p) = base();
    std::fs::OpenOptions::new().write(true).open(&p).unwrap().set_len(len + (1 << 20)).unwrap();
    expect(&p, &[], 0, &["No error is detected"]);
}

/// Random damage never crashes chk, dump or copy: every run ends with one of
/// the documented exit codes.
#[test]
fn random_damage_never_crashes() {
    let mut x = 0x2545_f491_4f6c_dd1du64;
    let mut rnd = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let d = tempfile::tempdir().unwrap();
    let src = golden_copy("g3", d.path());
    let pristine = std::fs::read(&src).unwrap();
    let ps = 1024usize;
    let pages = pristine.len() / ps;
    for round in 0..40 {
        let mut b = pristine.clone();
        let n = 1 + rnd() % 6;
        for _ in 0..n {
            let page = 3 + (rnd() as usize) % (pages.min(1448) - 3);
            match rnd() % 4 {
                0 => {
                    // a few random bytes in the header or the entries
                    for _ in 0..4 {
                        let o = page * ps + (rnd() as usize) % 64;
                        b[o] = rnd() as u8;
                    }
                }
                1 => {
                    let o = page * ps + (rnd() as usize) % ps;
                    b[o] ^= 1 << (rnd() % 8);
                }
                2 => b[page * ps..(page + 1) * ps].fill(0),
                _ => {
                    for c in &mut b[page * ps..(page + 1) * ps] {
                        *c = rnd() as u8;
                    }
                }
            }
        }
        let p = d.path().join(format!("r{round}.mdbx"));
        std::fs::write(&p, &b).unwrap();
        let ps_ = p.display().to_string();
        let r = run(&["chk", "-q", &ps_]);
        assert!((0..=3).contains(&r.code), "round {round}: chk crashed: {r:?}");
        let r = run(&["dump", "-q", "-a", &ps_]);
        assert!(r.code == 0 || r.code == 1, "round {round}: dump crashed: {r:?}");
        let c = d.path().join(format!("r{round}.copy"));
        let r = run(&["copy", "-q", "-c", &ps_, &c.display().to_string()]);
        assert!(r.code == 0 || r.code == 1, "round {round}: copy crashed: {r:?}");
        if r.code == 0 {
            // A compacted copy of a damaged source is never worse than the source.
            let rc = run(&["chk", "-q", &c.display().to_string()]);
            assert!((0..=3).contains(&rc.code), "{rc:?}");
        }
        let _ = std::fs::remove_file(&c);
    }
}
