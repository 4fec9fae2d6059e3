//! Basic end-to-end behaviour of the engine through its public API.

use std::collections::BTreeMap;

use rdbx::{Db, DbFlags, Env, Error, Geometry, PutFlags};

fn env_at(dir: &std::path::Path, ps: usize) -> Env {
    Env::builder()
        .max_dbs(8)
        .geometry(Geometry { page_size: Some(ps), ..Default::default() })
        .open(dir.join("db"))
        .unwrap()
}

#[test]
fn put_get_commit_reopen() {
    let dir = tempfile::tempdir().unwrap();
    {
        let env = env_at(dir.path(), 4096);
        let mut txn = env.begin_rw_txn().unwrap();
        let db = txn.create_db(Some("t"), DbFlags::empty()).unwrap();
        txn.put(db, b"apple", b"red", PutFlags::empty()).unwrap();
        txn.put(db, b"", b"empty key", PutFlags::empty()).unwrap();
        txn.put(db, b"zero", b"", PutFlags::empty()).unwrap();
        assert_eq!(txn.get(db, b"apple").unwrap(), Some(&b"red"[..]));
        txn.commit().unwrap();
    }
    let env = env_at(dir.path(), 4096);
    let rtxn = env.begin_ro_txn().unwrap();
    let db = rtxn.open_db(Some("t")).unwrap();
    assert_eq!(rtxn.get(db, b"apple").unwrap(), Some(&b"red"[..]));
    assert_eq!(rtxn.get(db, b"").unwrap(), Some(&b"empty key"[..]));
    assert_eq!(rtxn.get(db, b"zero").unwrap(), Some(&b""[..]));
    assert_eq!(rtxn.get(db, b"nope").unwrap(), None);
    assert_eq!(rtxn.table_names().unwrap(), vec![b"t".to_vec()]);
}

#[test]
fn many_records_splits_and_deletes() {
    for ps in [256usize, 4096, 65536] {
        let dir = tempfile::tempdir().unwrap();
        let env = env_at(dir.path(), ps);
        let mut model = BTreeMap::new();
        let mut x: u64 = 12345;
        let mut rnd = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        for round in 0..6 {
            let mut txn = env.begin_rw_txn().unwrap();
            let db = txn.create_db(Some("t"), DbFlags::empty()).unwrap();
            for _ in 0..2000 {
                let k = format!("key{:06}", rnd() % 5000).into_bytes();
                let vlen = if rnd() % 50 == 0 { (rnd() % (3 * ps as u64)) as usize } else { (rnd() % 40) as usize };
                let v = vec![(round * 7 + k.len()) as u8; vlen];
                txn.put(db, &k, &v, PutFlags::empty()).unwrap();
                model.insert(k, v);
            }
            for _ in 0..1500 {
                let k = format!("key{:06}", rnd() % 5000).into_bytes();
                let deleted = txn.del(db, &k, None).unwrap();
                assert_eq!(deleted, model.remove(&k).is_some());
            }
            txn.commit().unwrap();
            let r = env.begin_ro_txn().unwrap();
            let db = r.open_db(Some("t")).unwrap();
            let mut c = r.cursor(db).unwrap();
            let mut got = Vec::new();
            while let Some((k, v)) = c.next().unwrap() {
                got.push((k.to_vec(), v.to_vec()));
            }
            let want: Vec<_> = model.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
            assert_eq!(got.len(), want.len(), "ps {ps} round {round}");
            assert!(got == want, "ps {ps} round {round}");
            assert_eq!(r.db_stat(db).unwrap().entries, model.len() as u64);
        }
    }
}

#[test]
fn put_flags() {
    let dir = tempfile::tempdir().unwrap();
    let env = env_at(dir.path(), 4096);
    let mut txn = env.begin_rw_txn().unwrap();
    let db = txn.create_db(None, DbFlags::empty()).unwrap();
    txn.put(db, b"a", b"1", PutFlags::empty()).unwrap();
    assert!(matches!(txn.put(db, b"a", b"2", PutFlags::NO_OVERWRITE), Err(Error::KeyExist)));
    assert!(matches!(txn.put(db, b"b", b"2", PutFlags::CURRENT), Err(Error::NotFound)));
    txn.put(db, b"a", b"3", PutFlags::CURRENT).unwrap();
    txn.put(db, b"c", b"3", PutFlags::APPEND).unwrap();
    assert!(matches!(txn.put(db, b"b", b"3", PutFlags::APPEND), Err(Error::KeyMismatch(_))));
    let long = vec![b'k'; 3000];
    assert!(matches!(txn.put(db, &long, b"x", PutFlags::empty()), Err(Error::BadValSize(_))));
    txn.reserve(db, b"r", 5, PutFlags::empty()).unwrap().copy_from_slice(b"hello");
    assert_eq!(txn.get(db, b"r").unwrap(), Some(&b"hello"[..]));
    txn.commit().unwrap();
}

#[test]
fn cursor_semantics_like_libmdbx() {
    let dir = tempfile::tempdir().unwrap();
    let env = env_at(dir.path(), 4096);
    let mut txn = env.begin_rw_txn().unwrap();
    let db = Db::MAIN;
    for k in [b"b", b"d", b"f"] {
        txn.put(db, k, k, PutFlags::empty()).unwrap();
    }
    txn.commit().unwrap();
    let r = env.begin_ro_txn().unwrap();
    let mut c = r.cursor(db).unwrap();
    assert!(matches!(c.get_current(), Err(Error::NoData)));
    assert_eq!(c.next().unwrap().unwrap().0, b"b"); // unpositioned NEXT = FIRST
    let mut c = r.cursor(db).unwrap();
    assert_eq!(c.prev().unwrap().unwrap().0, b"f"); // unpositioned PREV = LAST
    assert_eq!(c.next().unwrap(), None);
    assert_eq!(c.get_current().unwrap().unwrap().0, b"f");
    assert_eq!(c.next().unwrap(), None);
    assert_eq!(c.prev().unwrap().unwrap().0, b"d");
    assert_eq!(c.first().unwrap().unwrap().0, b"b");
    assert_eq!(c.prev().unwrap(), None);
    assert_eq!(c.get_current().unwrap().unwrap().0, b"b");
    assert_eq!(c.next().unwrap().unwrap().0, b"d");
    assert_eq!(c.set(b"c").unwrap(), None);
    assert!(matches!(c.get_current(), Err(Error::NoData)));
    for (probe, want) in [(&b"c"[..], Some(&b"d"[..])), (b"d", Some(b"d")), (b"g", None), (b"", Some(b"b"))] {
        assert_eq!(c.set_range(probe).unwrap().map(|p| p.0), want, "set_range {probe:?}");
    }
    drop(r);

    let mut txn = env.begin_rw_txn().unwrap();
    txn.put(db, b"a", b"a", PutFlags::empty()).unwrap();
    let mut c = txn.rw_cursor(db).unwrap();
    assert_eq!(c.set(b"b").unwrap().unwrap().0, b"b");
    c.del().unwrap();
    assert_eq!(c.get_current().unwrap().unwrap().0, b"d");
    assert_eq!(c.next().unwrap().unwrap().0, b"d");
    c.del().unwrap();
    assert_eq!(c.prev().unwrap().unwrap().0, b"a");
    c.put(b"a", b"A", PutFlags::CURRENT).unwrap();
    assert!(matches!(c.put(b"z", b"Z", PutFlags::CURRENT), Err(Error::KeyMismatch(_))));
    drop(c);
    assert_eq!(txn.get(db, b"a").unwrap(), Some(&b"A"[..]));
    assert_eq!(txn.get(db, b"b").unwrap(), None);
    assert_eq!(txn.get(db, b"d").unwrap(), None);
    txn.commit().unwrap();
}

#[test]
fn aborted_txn_leaves_nothing_and_second_writer_on_same_thread_is_busy() {
    let dir = tempfile::tempdir().unwrap();
    let env = env_at(dir.path(), 4096);
    let mut txn = env.begin_rw_txn().unwrap();
    txn.put(Db::MAIN, b"k", b"v", PutFlags::empty()).unwrap();
    assert!(matches!(env.begin_rw_txn(), Err(Error::Busy(_))));
    txn.abort();
    let r = env.begin_ro_txn().unwrap();
    assert_eq!(r.get(Db::MAIN, b"k").unwrap(), None);
}

#[test]
fn integer_and_reverse_keys() {
    let dir = tempfile::tempdir().unwrap();
    let env = env_at(dir.path(), 4096);
    let mut txn = env.begin_rw_txn().unwrap();
    let ints = txn.create_db(Some("ints"), DbFlags::INTEGER_KEY).unwrap();
    for v in [256u64, 1, 1 << 40, u64::MAX, 255] {
        txn.put(ints, &v.to_le_bytes(), b"", PutFlags::empty()).unwrap();
    }
    assert!(matches!(txn.put(ints, &7u32.to_le_bytes(), b"", PutFlags::empty()), Err(Error::BadValSize(_))));
    assert!(matches!(txn.put(ints, b"abc", b"", PutFlags::empty()), Err(Error::BadValSize(_))));
    let rev = txn.create_db(Some("rev"), DbFlags::REVERSE_KEY).unwrap();
    for k in [&b"ab"[..], b"zzza", b"a", b"ba"] {
        txn.put(rev, k, b"", PutFlags::empty()).unwrap();
    }
    assert!(matches!(txn.create_db(Some("rev"), DbFlags::empty()), Err(Error::Incompatible(_))));
    txn.commit().unwrap();
    let r = env.begin_ro_txn().unwrap();
    let ints = r.open_db(Some("ints")).unwrap();
    let mut c = r.cursor(ints).unwrap();
    let mut got = vec![];
    while let Some((k, _)) = c.next().unwrap() {
        got.push(u64::from_le_bytes(k.try_into().unwrap()));
    }
    assert_eq!(got, vec![1, 255, 256, 1 << 40, u64::MAX]);
    let rev = r.open_db(Some("rev")).unwrap();
    let mut c = r.cursor(rev).unwrap();
    let mut got = vec![];
    while let Some((k, _)) = c.next().unwrap() {
        got.push(k.to_vec());
    }
    assert_eq!(got, vec![b"a".to_vec(), b"ba".to_vec(), b"zzza".to_vec(), b"ab".to_vec()]);
    assert_eq!(r.db_flags(rev).unwrap(), DbFlags::REVERSE_KEY);
}

#[test]
fn try_begin_rw_txn_is_busy_while_another_thread_writes() {
    let dir = tempfile::tempdir().unwrap();
    let env = env_at(dir.path(), 4096);
    let (tx, rx) = std::sync::mpsc::channel();
    let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
    let e2 = env.clone();
    let t = std::thread::spawn(move || {
        let txn = e2.begin_rw_txn().unwrap();
        tx.send(()).unwrap();
        done_rx.recv().unwrap();
        txn.abort();
    });
    rx.recv().unwrap();
    assert!(matches!(env.try_begin_rw_txn(), Err(Error::Busy(_))));
    done_tx.send(()).unwrap();
    t.join().unwrap();
    env.try_begin_rw_txn().unwrap().abort();
}

/// Deleting the last record of a table that is one leaf frees the leaf as it
/// is: no copy-on-write of a page only to free it (each small commit empties
/// the GC tree this way). The table is empty and the file checks clean, and
/// a nested transaction that does it can still be aborted.
#[test]
fn deleting_the_last_record_frees_the_leaf_without_copying_it() {
    let dir = tempfile::tempdir().unwrap();
    let env = env_at(dir.path(), 4096);
    let mut txn = env.begin_rw_txn().unwrap();
    let t = txn.create_db(Some("t"), DbFlags::empty()).unwrap();
    txn.put(t, b"only", &[5u8; 300], PutFlags::empty()).unwrap();
    txn.put(t, b"big", &vec![6u8; 20_000], PutFlags::empty()).unwrap();
    txn.commit().unwrap();
    let mut txn = env.begin_rw_txn().unwrap();
    txn.del(t, b"big", None).unwrap();
    txn.commit().unwrap();

    // A nested transaction deletes the last record, then aborts.
    let mut txn = env.begin_rw_txn().unwrap();
    {
        let mut child = txn.begin_nested_txn().unwrap();
        assert!(child.del(t, b"only", None).unwrap());
        assert_eq!(child.db_stat(t).unwrap().entries, 0);
        child.abort();
    }
    assert_eq!(txn.get(t, b"only").unwrap(), Some(&[5u8; 300][..]));
    txn.abort();

    let before = env.page_ops();
    let mut txn = env.begin_rw_txn().unwrap();
    assert!(txn.del(t, b"only", None).unwrap());
    let s = txn.db_stat(t).unwrap();
    assert_eq!((s.entries, s.depth, s.leaf_pages), (0, 0, 0));
    txn.commit().unwrap();
    // The commit copies the main table's leaf (the table's record) and the
    // GC's; the deleted leaf is not copied.
    let cow = env.page_ops().cow - before.cow;
    assert!(cow <= 2, "{cow} pages copied");
    let r = env.begin_ro_txn().unwrap();
    assert_eq!(r.get(t, b"only").unwrap(), None);
    assert_eq!(r.db_stat(t).unwrap().entries, 0);
    drop(r);
    let report = env.check(&Default::default(), &mut |_| {}).unwrap();
    assert_eq!(report.problem_count(), 0, "{report:?}");

    // The last record is a large value: its pages are freed too (the
    // checker counts every page, so a leak would show).
    let mut txn = env.begin_rw_txn().unwrap();
    let b = txn.create_db(Some("b"), DbFlags::empty()).unwrap();
    txn.put(b, b"big", &vec![7u8; 50_000], PutFlags::empty()).unwrap();
    txn.commit().unwrap();
    let mut txn = env.begin_rw_txn().unwrap();
    assert!(txn.del(b, b"big", None).unwrap());
    let s = txn.db_stat(b).unwrap();
    assert_eq!((s.entries, s.leaf_pages, s.overflow_pages), (0, 0, 0));
    txn.commit().unwrap();
    let report = env.check(&Default::default(), &mut |_| {}).unwrap();
    assert_eq!(report.problem_count(), 0, "{report:?}");
}
