//! rdbx reads the golden databases written by the real libmdbx
//! (shared/golden, see its README.md) exactly as libmdbx's own tools printed
//! them: every record (cursor order forwards and backwards, and `get`), the
//! table list and flags, and the `mdbx_stat` figures.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use rdbx::{Db, Env, RoTxn};
use rdbx_tests::engine::{figures, read_all, read_all_rev};
use rdbx_tests::golden::{self, DumpSection, StatFigures};
use rdbx_tests::model::diff_records;
use rdbx_tests::oracle::copy_golden;

const DUPSORT_TABLES: [&str; 3] = ["tags", "dupfix", "revdup"];

struct Golden {
    name: &'static str,
    sections: Vec<DumpSection>,
    stats: BTreeMap<Option<Vec<u8>>, StatFigures>,
}

fn load(name: &'static str) -> Golden {
    let dir = golden::golden_dir();
    let dump = std::fs::read(dir.join(format!("{name}.dump")))
        .unwrap_or_else(|e| panic!("golden {name}.dump in {dir:?}: {e}"));
    let sections = golden::parse_dump(&dump).unwrap_or_else(|e| panic!("{name}.dump: {e}"));
    let stat = std::fs::read_to_string(dir.join(format!("{name}.stat"))).unwrap();
    let stats = golden::parse_stat(&stat).unwrap_or_else(|e| panic!("{name}.stat: {e}"));
    Golden { name, sections, stats }
}

fn open_ro(path: &Path) -> Env {
    Env::builder()
        .max_dbs(32)
        .read_only(true)
        .open(path)
        .unwrap_or_else(|e| panic!("rdbx open read-only {path:?}: {e:?}"))
}

fn copy(name: &str) -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let p = copy_golden(name, tmp.path()).unwrap();
    (tmp, p)
}

/// Check one table against its dump section and stat figures; returns the
/// problems found (empty = fine).
fn check_table(g: &Golden, txn: &RoTxn<'_>, sec: &DumpSection) -> Vec<String> {
    let mut problems = Vec::new();
    let what = format!("{} table {}", g.name, sec.display_name());
    let db = match &sec.name {
        None => Db::MAIN,
        Some(n) => match txn.open_db_bytes(Some(n)) {
            Ok(db) => db,
            Err(e) => return vec![format!("{what}: open_db_bytes: {e:?}")],
        },
    };
    match txn.db_flags(db) {
        Ok(f) if f.bits() & 0x7e == sec.flags => {}
        Ok(f) => problems.push(format!("{what}: db_flags {:#x}, dump says {:#x}", f.bits(), sec.flags)),
        Err(e) => problems.push(format!("{what}: db_flags: {e:?}")),
    }
    match read_all(txn, db) {
        Ok(got) => {
            if let Some(d) = diff_records(&format!("{what} (cursor next)"), &sec.records, &got) {
                problems.push(d);
            }
        }
        Err(e) => problems.push(format!("{what}: cursor next: {e:?}")),
    }
    match read_all_rev(txn, db) {
        Ok(mut got) => {
            got.reverse();
            if let Some(d) = diff_records(&format!("{what} (cursor prev)"), &sec.records, &got) {
                problems.push(d);
            }
        }
        Err(e) => problems.push(format!("{what}: cursor prev: {e:?}")),
    }
    // Point lookups: the first value of each key; set/set_range land on it.
    let mut bad_gets = 0;
    let mut first_bad = None;
    let mut last: Option<&[u8]> = None;
    for (k, v) in &sec.records {
        if last == Some(k.as_slice()) {
            continue;
        }
        last = Some(k);
        let got = txn.get(db, k);
        if !matches!(&got, Ok(Some(x)) if *x == v.as_slice()) {
            bad_gets += 1;
            if first_bad.is_none() {
                first_bad =
                    Some(format!("key {:02x?}: got {:?}", &k[..k.len().min(16)], got.map(|o| o.map(|x| x.len()))));
            }
        }
    }
    if bad_gets > 0 {
        problems.push(format!("{what}: {bad_gets} get() results differ, first {}", first_bad.unwrap()));
    }
    if let Ok(mut c) = txn.cursor(db) {
        for (k, v) in sec.records.iter().step_by(97) {
            match c.set(k) {
                Ok(Some((gk, gv))) if gk == k.as_slice() && (sec.is_dupsort() || gv == v.as_slice()) => {}
                other => {
                    problems.push(format!(
                        "{what}: cursor set({:02x?}) -> {:?}",
                        &k[..k.len().min(16)],
                        other.map(|o| o.map(|(k, v)| (k.len(), v.len())))
                    ));
                    break;
                }
            }
            match c.set_range(k) {
                Ok(Some((gk, _))) if gk == k.as_slice() => {}
                other => {
                    problems.push(format!(
                        "{what}: cursor set_range(existing {:02x?}) -> {:?}",
                        &k[..k.len().min(16)],
                        other.map(|o| o.map(|(k, _)| k.to_vec()))
                    ));
                    break;
                }
            }
        }
    }
    match txn.db_stat(db) {
        Ok(st) => {
            let want = g.stats.get(&sec.name);
            match want {
                Some(w) if *w == figures(&st) => {}
                Some(w) => problems.push(format!("{what}: db_stat {:?}, mdbx_stat says {:?}", figures(&st), w)),
                None => problems.push(format!("{what}: no figures in {}.stat", g.name)),
            }
        }
        Err(e) => problems.push(format!("{what}: db_stat: {e:?}")),
    }
    problems
}

fn check_golden(name: &'static str, dupsort: bool) {
    let g = load(name);
    let (_tmp, path) = copy(name);
    let env = open_ro(&path);
    let txn = env.begin_ro_txn().expect("begin_ro_txn");
    let mut problems = Vec::new();

    // Tables: the dump lists every named table (or only the main table).
    let dump_names: Vec<Vec<u8>> = g.sections.iter().filter_map(|s| s.name.clone()).collect();
    match txn.table_names() {
        Ok(names) if names == dump_names => {}
        Ok(names) => problems.push(format!(
            "{name}: table_names {:?}, dump has {:?}",
            names.iter().map(|n| String::from_utf8_lossy(n)).collect::<Vec<_>>(),
            dump_names.iter().map(|n| String::from_utf8_lossy(n)).collect::<Vec<_>>()
        )),
        Err(e) => problems.push(format!("{name}: table_names: {e:?}")),
    }

    let mut checked = 0;
    for sec in &g.sections {
        let is_dup =
            sec.is_dupsort() || sec.name.as_deref().is_some_and(|n| DUPSORT_TABLES.iter().any(|d| d.as_bytes() == n));
        if is_dup != dupsort {
            continue;
        }
        checked += 1;
        problems.extend(check_table(&g, &txn, sec));
    }
    // The main table's figures (for g1..g3 its records are the table descriptors).
    if !dupsort && g.sections.iter().all(|s| s.name.is_some()) {
        match txn.db_stat(Db::MAIN) {
            Ok(st) if Some(&figures(&st)) == g.stats.get(&None) => {}
            other => problems.push(format!(
                "{name} main table: db_stat {:?}, mdbx_stat says {:?}",
                other.map(|s| figures(&s)),
                g.stats.get(&None)
            )),
        }
    }
    assert!(checked > 0, "{name}: no tables checked");
    drop(txn);
    drop(env);
    assert!(problems.is_empty(), "{name}: {} problem(s):\n{}", problems.len(), problems.join("\n"));
}

#[test]
fn g1_single_file_4k() {
    check_golden("g1", false);
}

#[test]
fn g2_directory_16k() {
    check_golden("g2", false);
}

#[test]
fn g3_single_file_1k() {
    check_golden("g3", false);
}

#[test]
fn gmain_main_table_only() {
    check_golden("gmain", false);
}

#[test]
fn dupsort_tables() {
    for name in ["g1", "g2", "g3"] {
        check_golden(name, true);
    }
}

/// The golden files themselves are never opened for writing: a read-only
/// open of a copy leaves the data file byte-identical.
#[test]
fn read_only_open_leaves_the_data_file_unchanged() {
    let (_tmp, path) = copy("g1");
    let before = std::fs::read(&path).unwrap();
    {
        let env = open_ro(&path);
        let txn = env.begin_ro_txn().unwrap();
        let db = txn.open_db(Some("users")).unwrap();
        assert!(read_all(&txn, db).unwrap().len() > 100);
    }
    assert!(std::fs::read(&path).unwrap() == before, "data file changed");
}
