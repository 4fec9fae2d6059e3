//! The shell on databases written by the real libmdbx (through the oracle of
//! the rdbx-tests crate), and libmdbx reading what the shell wrote.

mod common;

use common::*;
use rdbx::DbFlags;
use rdbx_tests::oracle::{self, EnvOptions};

const PLAIN: u32 = 0;

/// A libmdbx database: `people` (with a large value), `idx` (dupsort with
/// many values per key: nested trees), `seq` (integerkey, 4-byte keys),
/// `rev` (reversekey).
fn libmdbx_db(dir: &std::path::Path) {
    let env = oracle::Env::open(dir, &EnvOptions { max_dbs: 16, ..EnvOptions::default() }).expect("libmdbx open");
    let mut txn = env.begin_rw().unwrap();
    let people = txn.create_table(Some(b"people"), PLAIN).unwrap();
    for i in 0..2000u32 {
        txn.put(people, format!("person{i:05}").as_bytes(), format!("name {i}").as_bytes(), 0).unwrap();
    }
    txn.put(people, b"photo", &vec![0xAB; 10_000], 0).unwrap();
    let idx = txn.create_table(Some(b"idx"), DbFlags::DUP_SORT.bits()).unwrap();
    for k in 0..5u32 {
        for v in 0..300u32 {
            txn.put(idx, format!("k{k}").as_bytes(), format!("v{v:04}").as_bytes(), 0).unwrap();
        }
    }
    let seq = txn.create_table(Some(b"seq"), DbFlags::INTEGER_KEY.bits()).unwrap();
    for n in [7u32, 70, 700, 7000] {
        txn.put(seq, &n.to_ne_bytes(), format!("seven-ish {n}").as_bytes(), 0).unwrap();
    }
    let rev = txn.create_table(Some(b"rev"), DbFlags::REVERSE_KEY.bits()).unwrap();
    for h in ["x.example.com", "y.example.org", "z.example.com"] {
        txn.put(rev, h.as_bytes(), b"1", 0).unwrap();
    }
    txn.commit().unwrap();
    env.close().unwrap();
}

#[test]
fn browse_a_libmdbx_database() {
    let dir = tempfile::tempdir().unwrap();
    libmdbx_db(dir.path());
    let p = dir.path();

    let r = run(&[p.to_str().unwrap(), "-f", "json", "-c", "tables"], None);
    assert!(r.ok(), "{r:?}");
    let t = json(&r);
    let names: Vec<&str> = t.iter().map(|v| v["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["idx", "people", "rev", "seq"]);
    assert_eq!(t[0]["records"], 1500);
    assert_eq!(t[0]["flags"], "dupsort");
    assert_eq!(t[3]["flags"], "integerkey");

    let r =
        cmd(p, "use people; get person01234; count; count --prefix person019; use seq; get 700; use idx; count k1 k3");
    assert!(r.ok(), "{r:?}");
    assert_eq!(r.stdout, "name 1234\n2001\n100\nseven-ish 700\n600\n");

    let r =
        run(&[p.to_str().unwrap(), "-f", "raw", "-c", "use seq; scan 8 --keys-only; use rev; scan --keys-only"], None);
    let mut want = Vec::new();
    for n in [70u32, 700, 7000] {
        want.extend_from_slice(&n.to_ne_bytes());
        want.push(b'\n');
    }
    want.extend_from_slice(b"y.example.org\nx.example.com\nz.example.com\n");
    assert_eq!(r.raw, want, "{r:?}");

    let r =
        run(&[p.to_str().unwrap(), "-f", "json", "-c", "get -t people photo; estimate-range * * --exact -t idx"], None);
    let v = json(&r);
    assert_eq!(v[0]["value"].as_str().map(str::len), None, "binary value goes to value_hex");
    assert_eq!(v[0]["value_hex"].as_str().unwrap().len(), 20_000);
    assert_eq!(v[1]["exact"], 1500);
    assert_eq!(v[1]["exact_keys"], 5);

    // the engine's check agrees with libmdbx's: clean
    let r = cmd(p, "check");
    assert!(r.ok(), "{r:?}");
    // stat matches what libmdbx says
    let env = oracle::Env::open(p, &EnvOptions { read_only: true, ..EnvOptions::default() }).unwrap();
    let txn = env.begin_ro().unwrap();
    let st = txn.stat(txn.open_table(Some(b"people")).unwrap()).unwrap();
    drop(txn);
    env.close().unwrap();
    let r = run(&[p.to_str().unwrap(), "-f", "json", "-c", "stat people"], None);
    let v = &json(&r)[0];
    assert_eq!(v["records"], st.entries);
    assert_eq!(v["depth"], st.depth);
    assert_eq!(v["leaf_pages"], st.leaf_pages);
    assert_eq!(v["large_pages"], st.overflow_pages);
}

#[test]
fn libmdbx_reads_what_the_shell_wrote() {
    let dir = tempfile::tempdir().unwrap();
    libmdbx_db(dir.path());
    let p = dir.path();
    let script = "\
use people
del person00000
put person00001 renamed
begin
put photo 0x00
create fresh --dupsort
put -t fresh a 1
put -t fresh a 2
commit
use seq
put 8 eight
drop rev --yes
use idx
del k0
";
    let r = run(&[p.to_str().unwrap(), "--write"], Some(script));
    assert!(r.ok(), "{r:?}");

    let env = oracle::Env::open(p, &EnvOptions { read_only: true, max_dbs: 16, ..EnvOptions::default() }).unwrap();
    {
        let txn = env.begin_ro().unwrap();
        let people = txn.open_table(Some(b"people")).unwrap();
        assert_eq!(txn.get(people, b"person00000").unwrap(), None);
        assert_eq!(txn.get(people, b"person00001").unwrap().as_deref(), Some(&b"renamed"[..]));
        assert_eq!(txn.get(people, b"photo").unwrap().as_deref(), Some(&[0u8][..]));
        let fresh = txn.open_table(Some(b"fresh")).unwrap();
        assert_eq!(txn.read_all(fresh).unwrap(), vec![(b"a".to_vec(), b"1".to_vec()), (b"a".to_vec(), b"2".to_vec())]);
        let seq = txn.open_table(Some(b"seq")).unwrap();
        assert_eq!(txn.get(seq, &8u32.to_ne_bytes()).unwrap().as_deref(), Some(&b"eight"[..]), "4-byte keys kept");
        assert!(txn.open_table(Some(b"rev")).is_err());
        let idx = txn.open_table(Some(b"idx")).unwrap();
        assert_eq!(txn.stat(idx).unwrap().entries, 1200);
        let names = txn.table_names().unwrap();
        assert_eq!(names, vec![b"fresh".to_vec(), b"idx".to_vec(), b"people".to_vec(), b"seq".to_vec()]);
    }
    let chk = env.chk().unwrap();
    assert!(chk.is_clean(), "{}", chk.report());
    env.close().unwrap();

    // a compacted copy made by the shell passes libmdbx's check too
    let out = tempfile::tempdir().unwrap();
    let copy = out.path().join("copy.dat");
    let r = cmd(p, &format!("copy {} --compact", copy.display()));
    assert!(r.ok(), "{r:?}");
    let chk = oracle::chk(&copy).unwrap();
    assert!(chk.is_clean(), "{}", chk.report());
}
