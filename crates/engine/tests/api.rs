//! The rest of the data model (issue 3): bounds, multi-value pages, replace,
//! is_dirty, sequences, canary, and the information calls — checked against the
//! results libmdbx gives for the same calls.

use rdbx::{DbFlags, Env, Error, PutFlags};

fn env(dir: &tempfile::TempDir) -> Env {
    Env::builder().max_dbs(8).open(dir.path().join("db")).unwrap()
}

#[test]
fn bounds_like_libmdbx() {
    let dir = tempfile::tempdir().unwrap();
    let env = env(&dir);
    let mut txn = env.begin_rw_txn().unwrap();
    let d = txn.create_db(Some("dups"), DbFlags::DUP_SORT).unwrap();
    for (k, v) in [("a", "1"), ("a", "2"), ("a", "3"), ("c", "1"), ("e", "5"), ("e", "6")] {
        txn.put(d, k.as_bytes(), v.as_bytes(), PutFlags::empty()).unwrap();
    }
    let p = txn.create_db(Some("plain"), DbFlags::empty()).unwrap();
    for k in ["b", "d", "f"] {
        txn.put(p, k.as_bytes(), k.as_bytes(), PutFlags::empty()).unwrap();
    }
    txn.commit().unwrap();
    let r = env.begin_ro_txn().unwrap();
    let d = r.open_db(Some("dups")).unwrap();
    let s = |p: Option<(&[u8], &[u8])>| {
        p.map(|(k, v)| format!("{}:{}", String::from_utf8_lossy(k), String::from_utf8_lossy(v)))
    };
    let p = r.open_db(Some("plain")).unwrap();
    let mut c = r.cursor(p).unwrap();
    // plain table b,d,f
    for (probe, want) in [("d", Some((true, "d"))), ("c", Some((false, "d"))), ("g", None)] {
        let got = c
            .set_lowerbound(probe.as_bytes(), None)
            .unwrap()
            .map(|(e, (k, _))| (e, String::from_utf8_lossy(k).to_string()));
        assert_eq!(got, want.map(|(e, k)| (e, k.to_string())), "lowerbound {probe}");
    }
    for (probe, want) in [("d", Some("f")), ("c", Some("d")), ("f", None)] {
        let got =
            c.set_upperbound(probe.as_bytes(), None).unwrap().map(|(k, _)| String::from_utf8_lossy(k).to_string());
        assert_eq!(got.as_deref(), want, "upperbound {probe}");
    }
    // dupsort a:[1,2,3] c:[1] e:[5,6]
    let mut c = r.cursor(d).unwrap();
    let lb = |c: &mut rdbx::Cursor<'_>, k: &str, v: Option<&str>| {
        c.set_lowerbound(k.as_bytes(), v.map(str::as_bytes)).unwrap().map(|(e, p)| (e, s(Some(p)).unwrap()))
    };
    assert_eq!(lb(&mut c, "a", Some("2")), Some((true, "a:2".into())));
    assert_eq!(lb(&mut c, "a", Some("25")), Some((false, "a:3".into())));
    assert_eq!(lb(&mut c, "a", Some("4")), Some((false, "c:1".into())));
    assert_eq!(lb(&mut c, "e", Some("7")), None);
    assert_eq!(lb(&mut c, "b", None), Some((false, "c:1".into())));
    let ub = |c: &mut rdbx::Cursor<'_>, k: &str, v: Option<&str>| {
        s(c.set_upperbound(k.as_bytes(), v.map(str::as_bytes)).unwrap())
    };
    assert_eq!(ub(&mut c, "a", Some("2")).as_deref(), Some("a:3"));
    assert_eq!(ub(&mut c, "a", Some("3")).as_deref(), Some("c:1"));
    assert_eq!(ub(&mut c, "e", Some("6")), None);
    assert_eq!(ub(&mut c, "b", None).as_deref(), Some("c:1"));
    // dup navigation (libmdbx's cursor operations on a DUPSORT table)
    assert_eq!(s(c.first().unwrap()).as_deref(), Some("a:1"));
    assert_eq!(s(c.next().unwrap()).as_deref(), Some("a:2"));
    assert_eq!(s(c.next_dup().unwrap()).as_deref(), Some("a:3"));
    assert_eq!(s(c.next_dup().unwrap()), None);
    assert_eq!(s(c.next_nodup().unwrap()).as_deref(), Some("c:1"));
    assert_eq!(s(c.next_dup().unwrap()), None);
    assert_eq!(s(c.prev_dup().unwrap()), None);
    assert_eq!(s(c.prev_nodup().unwrap()).as_deref(), Some("a:3"));
    assert_eq!(s(c.prev_nodup().unwrap()), None);
    assert_eq!(s(c.last().unwrap()).as_deref(), Some("e:6"));
    assert_eq!(s(c.first_dup().unwrap()).as_deref(), Some("e:5"));
    assert_eq!(s(c.last_dup().unwrap()).as_deref(), Some("e:6"));
    assert_eq!(s(c.prev().unwrap()).as_deref(), Some("e:5"));
    assert_eq!(s(c.set(b"a").unwrap()).as_deref(), Some("a:1"));
    assert_eq!(c.count().unwrap(), 3);
    assert_eq!(s(c.get_both(b"a", b"2").unwrap()).as_deref(), Some("a:2"));
    assert_eq!(s(c.get_both(b"a", b"9").unwrap()), None);
    assert_eq!(s(c.get_both_range(b"a", b"25").unwrap()).as_deref(), Some("a:3"));
    assert_eq!(s(c.get_both_range(b"a", b"4").unwrap()), None);
    assert_eq!(s(c.get_both_range(b"b", b"1").unwrap()), None);
    let mut plain = r.cursor(p).unwrap();
    assert!(matches!(plain.get_both(b"b", b"b"), Err(Error::Incompatible(_))));
}

#[test]
fn multiple_values_of_dupfixed() {
    let dir = tempfile::tempdir().unwrap();
    let env = env(&dir);
    let mut txn = env.begin_rw_txn().unwrap();
    let f = txn.create_db(Some("f"), DbFlags::DUP_SORT | DbFlags::DUP_FIXED | DbFlags::INTEGER_DUP).unwrap();
    let vals: Vec<u8> = (1u32..=6).flat_map(|v| v.to_le_bytes()).collect();
    assert_eq!(txn.put_multiple(f, b"k", &vals, 4, PutFlags::empty()).unwrap(), 6);
    assert!(matches!(txn.put(f, b"k", &7u64.to_le_bytes(), PutFlags::empty()), Err(Error::BadValSize(_))));
    // many values: several pages
    let many: Vec<u8> = (100u32..5100).flat_map(|v| v.to_le_bytes()).collect();
    txn.put_multiple(f, b"m", &many, 4, PutFlags::empty()).unwrap();
    txn.commit().unwrap();
    let r = env.begin_ro_txn().unwrap();
    let f = r.open_db(Some("f")).unwrap();
    let mut c = r.cursor(f).unwrap();
    c.set(b"k").unwrap().unwrap();
    assert_eq!(c.get_multiple().unwrap().unwrap(), &vals[..]);
    assert_eq!(c.next_multiple().unwrap(), None);
    c.set(b"m").unwrap().unwrap();
    let mut got = Vec::new();
    let mut page = c.get_multiple().unwrap();
    while let Some(p) = page {
        got.extend_from_slice(p);
        page = c.next_multiple().unwrap();
    }
    assert_eq!(got, many);
    assert_eq!(c.count().unwrap(), 5000);
}

#[test]
fn replace_is_dirty_sequence_canary_info() {
    let dir = tempfile::tempdir().unwrap();
    let env = env(&dir);
    let mut txn = env.begin_rw_txn().unwrap();
    let t = txn.create_db(Some("t"), DbFlags::empty()).unwrap();
    assert_eq!(txn.replace(t, b"k", Some(b"v1"), PutFlags::empty()).unwrap(), None);
    assert_eq!(txn.replace(t, b"k", Some(b"v2"), PutFlags::empty()).unwrap().as_deref(), Some(&b"v1"[..]));
    assert_eq!(txn.replace(t, b"k", None, PutFlags::empty()).unwrap().as_deref(), Some(&b"v2"[..]));
    assert_eq!(txn.get(t, b"k").unwrap(), None);
    let d = txn.create_db(Some("d"), DbFlags::DUP_SORT).unwrap();
    txn.put(d, b"k", b"1", PutFlags::empty()).unwrap();
    txn.put(d, b"k", b"2", PutFlags::empty()).unwrap();
    assert!(matches!(txn.replace(d, b"k", Some(b"3"), PutFlags::empty()), Err(Error::MultiVal)));
    assert_eq!(txn.replace(d, b"k", Some(b"3"), PutFlags::ALL_DUPS).unwrap().as_deref(), Some(&b"1"[..]));
    assert_eq!(txn.cursor(d).unwrap().set(b"k").unwrap().map(|p| p.1.to_vec()), Some(b"3".to_vec()));
    txn.put(t, b"x", b"y", PutFlags::empty()).unwrap();
    assert!(txn.is_dirty(txn.get(t, b"x").unwrap().unwrap()));
    assert_eq!(txn.sequence(t, 5).unwrap(), 0);
    assert_eq!(txn.sequence(t, 1).unwrap(), 5);
    txn.set_canary(1, 2, 3);
    let id = txn.id();
    let info = txn.info().unwrap();
    assert_eq!(info.id, id);
    assert!(info.space_dirty > 0 && info.space_used > 0 && info.space_limit_hard >= info.space_limit_soft);
    txn.commit().unwrap();
    let r = env.begin_ro_txn().unwrap();
    let t = r.open_db(Some("t")).unwrap();
    assert_eq!(r.get(t, b"x").unwrap(), Some(&b"y"[..]));
    assert_eq!(r.db_sequence(t).unwrap(), 6);
    assert_eq!(r.canary(), [1, 2, 3, id]);
    assert_eq!(r.info().unwrap().reader_lag, 0);
    assert_eq!(env.stat().unwrap().entries, 2); // two table records in the main table
    let i = env.info().unwrap();
    assert_eq!(i.last_txnid, r.id());
    // A sequence survives reopen, clear_db resets it (as mdbx_drop(del=false)).
    drop(r);
    let mut txn = env.begin_rw_txn().unwrap();
    let t = txn.open_db(Some("t")).unwrap();
    txn.clear_db(t).unwrap();
    assert_eq!(txn.db_sequence(t).unwrap(), 0);
}
