//! The write transaction starts with the named tables the last commit of
//! this environment left (`txn::WriteState`), without looking them up in the
//! main table again, only while they are still what the file holds: no other
//! commit changed the main tree since, and their handle slots are unchanged.
//! Within a write transaction a table that reads loaded stays loaded
//! (`RwTxn::read_loaded`) until an edit, a drop or a nested abort.

use rdbx::{Db, DbFlags, Env, Error, Geometry, PutFlags};

fn open(path: &std::path::Path) -> Env {
    Env::builder().max_dbs(8).geometry(Geometry { page_size: Some(4096), ..Default::default() }).open(path).unwrap()
}

fn put(env: &Env, db: Db, k: &[u8], v: &[u8]) {
    let mut t = env.begin_rw_txn().unwrap();
    t.put(db, k, v, PutFlags::empty()).unwrap();
    t.commit().unwrap();
}

fn create(env: &Env, name: &str) -> Db {
    let mut t = env.begin_rw_txn().unwrap();
    let db = t.create_db(Some(name), DbFlags::empty()).unwrap();
    t.commit().unwrap();
    db
}

fn get(env: &Env, db: Db, k: &[u8]) -> Option<Vec<u8>> {
    env.begin_ro_txn().unwrap().get(db, k).unwrap().map(<[u8]>::to_vec)
}

/// Not a test: the other process of the tests below, which run this binary
/// again with `--ignored --exact child_writer`. One commit into table "t"
/// of the file named by `RDBX_KEPT_TABLES_CHILD`.
#[test]
#[ignore = "run as a child process by the tests of this file"]
fn child_writer() {
    let path = std::env::var_os("RDBX_KEPT_TABLES_CHILD").expect("RDBX_KEPT_TABLES_CHILD names the database");
    let env = open(std::path::Path::new(&path));
    let mut t = env.begin_rw_txn().unwrap();
    let db = t.create_db(Some("t"), DbFlags::empty()).unwrap();
    t.put(db, b"k", b"from the child", PutFlags::empty()).unwrap();
    t.put(db, b"x", b"only the child wrote this", PutFlags::empty()).unwrap();
    t.commit().unwrap();
}

/// Runs [`child_writer`] in another process on the database at `path`.
fn run_child_writer(path: &std::path::Path) {
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--ignored", "--exact", "child_writer", "--nocapture", "--test-threads=1"])
        .env("RDBX_KEPT_TABLES_CHILD", path)
        .output()
        .unwrap();
    assert!(out.status.success(), "child: {}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stdout).contains("1 passed"), "the child ran");
}

/// A table the last commit only read is kept too, and a commit of another
/// process in between is seen by the next transaction's reads.
#[test]
fn a_table_only_read_follows_another_process() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    let env = open(&path);
    let db = create(&env, "t");
    put(&env, db, b"k", b"from the parent");
    for _ in 0..2 {
        let mut t = env.begin_rw_txn().unwrap();
        assert_eq!(t.get(db, b"k").unwrap(), Some(&b"from the parent"[..]));
        t.put(Db::MAIN, b"elsewhere", b"1", PutFlags::empty()).unwrap();
        t.commit().unwrap();
    }
    run_child_writer(&path);
    let mut t = env.begin_rw_txn().unwrap();
    assert_eq!(t.get(db, b"k").unwrap(), Some(&b"from the child"[..]));
    assert_eq!(t.get(db, b"x").unwrap(), Some(&b"only the child wrote this"[..]));
    t.put(db, b"y", b"the parent again", PutFlags::empty()).unwrap();
    t.commit().unwrap();
    assert_eq!(env.begin_ro_txn().unwrap().db_stat(db).unwrap().entries, 3);
}

/// Reads of a write transaction keep a table they loaded; they still see
/// it as the transaction changes it (puts, a child's puts undone by its
/// abort) and a dropped table is gone for its old handle.
#[test]
fn reads_follow_the_changes_of_their_transaction() {
    let dir = tempfile::tempdir().unwrap();
    let env = open(&dir.path().join("db"));
    let db = create(&env, "t");
    put(&env, db, b"a", b"1");
    drop(env.begin_rw_txn().unwrap());
    let mut t = env.begin_rw_txn().unwrap();
    assert_eq!(t.get(db, b"a").unwrap(), Some(&b"1"[..]));
    assert_eq!(t.get(db, b"b").unwrap(), None);
    t.put(db, b"b", b"2", PutFlags::empty()).unwrap();
    assert_eq!(t.get(db, b"b").unwrap(), Some(&b"2"[..]));
    {
        let mut child = t.begin_nested_txn().unwrap();
        assert_eq!(child.get(db, b"b").unwrap(), Some(&b"2"[..]));
        child.put(db, b"c", b"3", PutFlags::empty()).unwrap();
        assert_eq!(child.get(db, b"c").unwrap(), Some(&b"3"[..]));
        child.abort();
    }
    assert_eq!(t.get(db, b"c").unwrap(), None);
    assert_eq!(t.db_stat(db).unwrap().entries, 2);
    t.commit().unwrap();
    // An aborted transaction leaves no kept tables: the next one loads "t"
    // by a read, then drops it.
    drop(env.begin_rw_txn().unwrap());
    let mut t = env.begin_rw_txn().unwrap();
    assert_eq!(t.get(db, b"b").unwrap(), Some(&b"2"[..]));
    t.drop_db(db).unwrap();
    assert!(matches!(t.get(db, b"a"), Err(Error::BadDbi)), "{:?}", t.get(db, b"a"));
    t.commit().unwrap();
    assert!(matches!(env.begin_rw_txn().unwrap().get(db, b"a"), Err(Error::BadDbi)));
    let again = create(&env, "t");
    assert_eq!(env.begin_rw_txn().unwrap().get(again, b"a").unwrap(), None);
}

/// Another process commits into the table between two commits of this
/// environment: this one's next commit builds on that (a kept table state
/// from before would write the table's record back without it).
#[test]
fn a_commit_of_another_process_is_not_overwritten() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    let env = open(&path);
    let db = create(&env, "t");
    put(&env, db, b"k", b"from the parent");
    run_child_writer(&path);
    put(&env, db, b"y", b"the parent again");
    let r = env.begin_ro_txn().unwrap();
    assert_eq!(r.get(db, b"k").unwrap(), Some(&b"from the child"[..]));
    assert_eq!(r.get(db, b"x").unwrap(), Some(&b"only the child wrote this"[..]));
    assert_eq!(r.get(db, b"y").unwrap(), Some(&b"the parent again"[..]));
    assert_eq!(r.db_stat(db).unwrap().entries, 3);
}

/// An aborted transaction's changes to a kept table are not kept.
#[test]
fn an_aborted_change_is_forgotten() {
    let dir = tempfile::tempdir().unwrap();
    let env = open(&dir.path().join("db"));
    let db = create(&env, "t");
    put(&env, db, b"a", b"1");
    let mut t = env.begin_rw_txn().unwrap();
    for i in 0..500u32 {
        t.put(db, &i.to_be_bytes(), &[7; 100], PutFlags::empty()).unwrap();
    }
    drop(t);
    put(&env, db, b"b", b"2");
    let r = env.begin_ro_txn().unwrap();
    assert_eq!(r.db_stat(db).unwrap().entries, 2);
    assert_eq!(r.get(db, &5u32.to_be_bytes()).unwrap(), None);
    drop(r);
    // A transaction that fails (here: its table cannot take a value that
    // large) is not kept either.
    let mut t = env.begin_rw_txn().unwrap();
    t.put(db, b"c", b"3", PutFlags::empty()).unwrap();
    assert!(t.put(db, &[1u8; 5000], b"too long a key", PutFlags::empty()).is_err());
    drop(t);
    put(&env, db, b"d", b"4");
    assert_eq!(get(&env, db, b"c"), None);
    assert_eq!(env.begin_ro_txn().unwrap().db_stat(db).unwrap().entries, 3);
}

/// A dropped table's handle slot taken by another table, and a drop undone
/// by a nested abort: the kept state of the old table is not used for
/// handles of the slot's new table, and the old handle stays stale.
#[test]
fn a_freed_handle_slot_does_not_reach_the_kept_table() {
    let dir = tempfile::tempdir().unwrap();
    let env = open(&dir.path().join("db"));
    let t1 = create(&env, "one");
    put(&env, t1, b"k", b"one");
    let mut t = env.begin_rw_txn().unwrap();
    t.drop_db(t1).unwrap();
    let t2 = t.create_db(Some("two"), DbFlags::empty()).unwrap();
    t.commit().unwrap();
    put(&env, t2, b"k", b"two");
    assert_eq!(get(&env, t2, b"k").as_deref(), Some(&b"two"[..]));
    assert!(matches!(env.begin_rw_txn().unwrap().get(t1, b"k"), Err(Error::BadDbi)));

    // A nested transaction drops "two" and aborts; the parent commits.
    let mut t = env.begin_rw_txn().unwrap();
    t.put(t2, b"p", b"parent", PutFlags::empty()).unwrap();
    {
        let mut child = t.begin_nested_txn().unwrap();
        child.drop_db(t2).unwrap();
        child.abort();
    }
    t.commit().unwrap();
    // The table is still there, under a new handle (opened by a reader: the
    // write transaction meets it first in a put).
    let again = env.begin_ro_txn().unwrap().open_db(Some("two")).unwrap();
    put(&env, again, b"q", b"after");
    assert!(matches!(env.begin_rw_txn().unwrap().get(t2, b"k"), Err(Error::BadDbi)));
    let r = env.begin_ro_txn().unwrap();
    assert_eq!(r.get(again, b"k").unwrap(), Some(&b"two"[..]));
    assert_eq!(r.get(again, b"p").unwrap(), Some(&b"parent"[..]));
    assert_eq!(r.get(again, b"q").unwrap(), Some(&b"after"[..]));
    assert_eq!(r.db_stat(again).unwrap().entries, 3);
}

/// A commit rewrites a changed table's record where the commit before left
/// it in the main tree, when that tree is one leaf nothing changed since
/// (`txn::commit`): with several tables changed by one commit (the first
/// rewrite copies the leaf, the next ones find the copy), the main table
/// written to directly, tables created and dropped (records come and go,
/// the others move), and enough of them that the main tree grows past one
/// leaf. Each table's record must describe that table: its entry count and
/// contents follow a model, and the checker passes.
#[test]
fn table_records_rewritten_in_place_stay_right() {
    let dir = tempfile::tempdir().unwrap();
    let env = Env::builder()
        .max_dbs(64)
        .geometry(Geometry { page_size: Some(512), ..Default::default() })
        .open(dir.path())
        .unwrap();
    let names: Vec<String> = (0..40).map(|i| format!("table-{i:02}")).collect();
    let mut model: Vec<Option<std::collections::BTreeMap<u64, u64>>> = vec![None; names.len()];
    let mut rng = 0x2545_f491_4f6c_dd1d_u64;
    let mut next = || {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng
    };
    for step in 0..400u64 {
        // Few tables first (one leaf of records), all of them later.
        let live = if step < 200 { 4 } else { names.len() as u64 };
        let mut t = env.begin_rw_txn().unwrap();
        for _ in 0..=next() % 3 {
            let i = (next() % live) as usize;
            match next() % 10 {
                0 if model[i].is_some() => {
                    let db = t.create_db(Some(&names[i]), DbFlags::empty()).unwrap();
                    t.drop_db(db).unwrap();
                    model[i] = None;
                }
                _ => {
                    let db = t.create_db(Some(&names[i]), DbFlags::empty()).unwrap();
                    let m = model[i].get_or_insert_with(Default::default);
                    let k = next() % 50;
                    t.put(db, &k.to_be_bytes(), &step.to_be_bytes(), PutFlags::empty()).unwrap();
                    m.insert(k, step);
                }
            }
        }
        if next() % 4 == 0 {
            t.put(Db::MAIN, b"plain-key", &step.to_be_bytes(), PutFlags::empty()).unwrap();
        }
        t.commit().unwrap();
        let r = env.begin_ro_txn().unwrap();
        for (i, m) in model.iter().enumerate() {
            match (m, r.open_db(Some(&names[i]))) {
                (None, Err(Error::NotFound)) => {}
                (Some(m), Ok(db)) => {
                    assert_eq!(r.db_stat(db).unwrap().entries, m.len() as u64, "step {step}, {}", names[i]);
                    for (k, v) in m {
                        assert_eq!(r.get(db, &k.to_be_bytes()).unwrap(), Some(&v.to_be_bytes()[..]), "step {step}");
                    }
                }
                (m, got) => panic!("step {step}, {}: model {m:?}, open_db {got:?}", names[i]),
            }
        }
        if step % 50 == 49 {
            let report = env.check(&Default::default(), &mut |_| {}).unwrap();
            assert_eq!(report.problem_count(), 0, "step {step}: {report:?}");
        }
    }
}
