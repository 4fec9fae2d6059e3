//! Table handles (`Db`) are bound to their environment and to the life of
//! their table (issue 10, item 6): a handle of another environment, or one
//! kept across `drop_db` while another table took its slot, is refused with
//! `BadDbi` (libmdbx: `MDBX_BAD_DBI`) instead of silently reading the table
//! that now has its number. `Db::MAIN` names the main table of every
//! environment.

use rdbx::{Db, DbFlags, Env, Error, PutFlags};

fn env(dir: &tempfile::TempDir, name: &str) -> Env {
    Env::builder().max_dbs(8).open(dir.path().join(name)).unwrap()
}

fn bad_dbi<T: std::fmt::Debug>(r: rdbx::Result<T>, what: &str) {
    assert!(matches!(r, Err(Error::BadDbi)), "{what}: {r:?}");
}

/// Every call that takes a `Db` refuses `db` in a write and a read transaction of `env`.
fn refused_everywhere(env: &Env, db: Db, what: &str) {
    let mut txn = env.begin_rw_txn().unwrap();
    bad_dbi(txn.get(db, b"k"), &format!("{what}: get"));
    bad_dbi(txn.cursor(db).map(|_| ()), &format!("{what}: cursor"));
    bad_dbi(txn.db_stat(db), &format!("{what}: db_stat"));
    bad_dbi(txn.db_flags(db), &format!("{what}: db_flags"));
    bad_dbi(txn.put(db, b"k", b"v", PutFlags::empty()), &format!("{what}: put"));
    bad_dbi(txn.del(db, b"k", None), &format!("{what}: del"));
    bad_dbi(txn.sequence(db, 1), &format!("{what}: sequence"));
    bad_dbi(txn.rw_cursor(db).map(|_| ()), &format!("{what}: rw_cursor"));
    bad_dbi(txn.clear_db(db), &format!("{what}: clear_db"));
    bad_dbi(txn.drop_db(db), &format!("{what}: drop_db"));
    // Refusals are soft errors: the transaction goes on.
    let main = txn.open_db(None).unwrap();
    txn.put(main, b"still-usable", b"1", PutFlags::empty()).unwrap();
    txn.commit().unwrap();
    let r = env.begin_ro_txn().unwrap();
    bad_dbi(r.get(db, b"k"), &format!("{what}: ro get"));
    bad_dbi(r.cursor(db).map(|_| ()), &format!("{what}: ro cursor"));
    bad_dbi(r.db_stat(db), &format!("{what}: ro db_stat"));
}

#[test]
fn a_handle_of_another_environment_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (env(&dir, "a"), env(&dir, "b"));
    let mut ta = a.begin_rw_txn().unwrap();
    let da = ta.create_db(Some("t"), DbFlags::empty()).unwrap();
    ta.put(da, b"k", b"from a", PutFlags::empty()).unwrap();
    ta.commit().unwrap();
    // b has a table in the same slot, even of the same name.
    let mut tb = b.begin_rw_txn().unwrap();
    let db = tb.create_db(Some("t"), DbFlags::empty()).unwrap();
    tb.put(db, b"k", b"from b", PutFlags::empty()).unwrap();
    tb.commit().unwrap();
    refused_everywhere(&b, da, "a's handle in b");
    refused_everywhere(&a, db, "b's handle in a");
    // A handle of the same file opened by another Env is foreign too.
    let a2 = Env::builder().max_dbs(8).open(dir.path().join("a"));
    if let Ok(a2) = a2 {
        bad_dbi(a2.begin_ro_txn().unwrap().get(da, b"k"), "a's handle in a second Env of the same file");
    }
    // The main table exists in every environment: Db::MAIN works in both.
    for (e, want) in [(&a, &b"1"[..]), (&b, &b"1"[..])] {
        let r = e.begin_ro_txn().unwrap();
        assert_eq!(r.open_db(None).unwrap(), Db::MAIN);
        assert_eq!(r.get(Db::MAIN, b"still-usable").unwrap(), Some(want));
    }
    // The handles still work where they belong.
    assert_eq!(a.begin_ro_txn().unwrap().get(da, b"k").unwrap(), Some(&b"from a"[..]));
    assert_eq!(b.begin_ro_txn().unwrap().get(db, b"k").unwrap(), Some(&b"from b"[..]));
}

#[test]
fn a_handle_kept_across_drop_db_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let e = env(&dir, "db");
    let mut txn = e.begin_rw_txn().unwrap();
    let old = txn.create_db(Some("old"), DbFlags::empty()).unwrap();
    txn.put(old, b"k", b"old", PutFlags::empty()).unwrap();
    txn.commit().unwrap();
    // Dropped and another table created in the same transaction.
    let mut txn = e.begin_rw_txn().unwrap();
    txn.drop_db(old).unwrap();
    let new = txn.create_db(Some("new"), DbFlags::empty()).unwrap();
    txn.put(new, b"k", b"new", PutFlags::empty()).unwrap();
    bad_dbi(txn.get(old, b"k"), "stale handle in the dropping transaction");
    txn.commit().unwrap();
    refused_everywhere(&e, old, "handle of a dropped table");
    // Dropped in one transaction, another table created in the next.
    let mut txn = e.begin_rw_txn().unwrap();
    txn.drop_db(new).unwrap();
    txn.commit().unwrap();
    let mut txn = e.begin_rw_txn().unwrap();
    let third = txn.create_db(Some("third"), DbFlags::DUP_SORT).unwrap();
    txn.put(third, b"k", b"third", PutFlags::empty()).unwrap();
    txn.commit().unwrap();
    refused_everywhere(&e, new, "handle of a table dropped in an earlier transaction");
    // Re-creating the dropped name gives a new handle; the old one stays stale.
    let mut txn = e.begin_rw_txn().unwrap();
    let again = txn.create_db(Some("old"), DbFlags::empty()).unwrap();
    assert_ne!(again, old);
    txn.commit().unwrap();
    refused_everywhere(&e, old, "handle of a dropped table whose name was created again");
    // Clearing the main table deletes the named tables: their handles go stale.
    let mut txn = e.begin_rw_txn().unwrap();
    txn.clear_db(Db::MAIN).unwrap();
    txn.commit().unwrap();
    refused_everywhere(&e, third, "handle of a table deleted by clear_db(MAIN)");
}

#[test]
fn a_handle_stays_valid_across_transactions() {
    let dir = tempfile::tempdir().unwrap();
    let e = env(&dir, "db");
    let mut txn = e.begin_rw_txn().unwrap();
    let db = txn.create_db(Some("t"), DbFlags::empty()).unwrap();
    let other = txn.create_db(Some("u"), DbFlags::empty()).unwrap();
    txn.put(db, b"k", b"1", PutFlags::empty()).unwrap();
    txn.commit().unwrap();
    for i in 0..3u8 {
        let mut txn = e.begin_rw_txn().unwrap();
        assert_eq!(txn.open_db(Some("t")).unwrap(), db);
        txn.put(db, b"k", &[b'2' + i], PutFlags::empty()).unwrap();
        txn.commit().unwrap();
        let r = e.begin_ro_txn().unwrap();
        assert_eq!(r.open_db(Some("t")).unwrap(), db);
        assert_eq!(r.get(db, b"k").unwrap(), Some(&[b'2' + i][..]));
    }
    // Dropping another table leaves this handle alone.
    let mut txn = e.begin_rw_txn().unwrap();
    txn.drop_db(other).unwrap();
    txn.commit().unwrap();
    let e2 = e.clone();
    assert_eq!(e2.begin_ro_txn().unwrap().get(db, b"k").unwrap(), Some(&b"4"[..]));
    // A nested transaction shares its parent's handles.
    let mut txn = e.begin_rw_txn().unwrap();
    {
        let mut child = txn.begin_nested_txn().unwrap();
        child.put(db, b"k", b"5", PutFlags::empty()).unwrap();
        child.commit().unwrap();
    }
    assert_eq!(txn.get(db, b"k").unwrap(), Some(&b"5"[..]));
    txn.commit().unwrap();
}
