//! Long readers: parking read transactions, the writer ousting parked
//! readers that hold back the pages it needs, in one process and across
//! processes.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Stdio};

use std::sync::{Arc, Mutex};

use rdbx::{Db, Env, Error, Geometry, PutFlags, SlowReader, SlowReaderAction};

const PARKED: u64 = u64::MAX;
const OUSTED: u64 = u64::MAX - 1;

fn tempdir() -> tempfile::TempDir {
    tempfile::tempdir().expect("tempdir")
}

fn key(i: u64) -> [u8; 8] {
    i.to_be_bytes()
}

/// A database whose file grows in small steps, with 300 records.
fn open_small(dir: &Path) -> Env {
    open_small_with(dir, Env::builder(), 64 << 10)
}

/// [`open_small`] from builder `b`, the file growing by `step` bytes.
fn open_small_with(dir: &Path, b: rdbx::EnvBuilder, step: usize) -> Env {
    let env = b
        .geometry(Geometry {
            page_size: Some(4096),
            size_lower: Some(64 << 10),
            size_now: Some(64 << 10),
            size_upper: Some(256 << 20),
            growth_step: Some(step),
            ..Default::default()
        })
        .open(dir)
        .expect("open");
    let mut txn = env.begin_rw_txn().expect("begin");
    for i in 0..300u64 {
        txn.put(Db::MAIN, &key(i), &[1; 200], PutFlags::empty()).expect("put");
    }
    txn.commit().expect("commit");
    env
}

/// Overwrites every record `rounds` times, one transaction per round: with
/// a reader pinning an old snapshot the file has to grow.
fn churn(env: &Env, rounds: u64) {
    for r in 0..rounds {
        let mut txn = env.begin_rw_txn().expect("begin");
        for i in 0..300u64 {
            txn.put(Db::MAIN, &key(i), &[(r % 250) as u8 + 2; 200], PutFlags::empty()).expect("put");
        }
        txn.commit().expect("commit");
    }
}

fn file_len(dir: &Path) -> u64 {
    std::fs::metadata(dir.join("mdbx.dat")).expect("stat").len()
}

#[test]
fn a_parked_transaction_refuses_reads_until_unparked() {
    let dir = tempdir();
    let env = open_small(dir.path());
    let mut txn = env.begin_ro_txn().expect("ro");
    let id = txn.id();
    assert_eq!(txn.get(Db::MAIN, &key(5)).expect("get"), Some(&[1u8; 200][..]));
    let me = env.readers().expect("readers").into_iter().find(|r| r.txnid == Some(id)).expect("slot").tid;
    assert!(me < OUSTED, "an active reader's slot holds its thread id");

    txn.park().expect("park");
    assert!(txn.is_parked());
    assert!(matches!(txn.get(Db::MAIN, &key(5)), Err(Error::BadTxn(_))), "a parked transaction must not read");
    assert!(matches!(txn.cursor(Db::MAIN), Err(Error::BadTxn(_))));
    let slot = env.readers().expect("readers").into_iter().find(|r| r.txnid == Some(id)).expect("slot");
    assert_eq!(slot.tid, PARKED, "a parked slot keeps its snapshot and has tid MDBX_TID_TXN_PARKED");

    txn.unpark().expect("unpark");
    assert!(!txn.is_parked());
    assert_eq!(txn.get(Db::MAIN, &key(5)).expect("get"), Some(&[1u8; 200][..]));
    let slot = env.readers().expect("readers").into_iter().find(|r| r.txnid == Some(id)).expect("slot");
    assert_eq!(slot.tid, me, "unpark gives the slot back to its thread");

    // Parking and dropping leaves the slot with its thread id, no snapshot.
    txn.park().expect("park again");
    drop(txn);
    for r in env.readers().expect("readers") {
        assert_eq!(r.txnid, None);
        assert!(r.tid < OUSTED, "a finished parked transaction left tid {:#x}", r.tid);
    }
}

#[test]
fn the_writer_ousts_a_parked_reader_instead_of_growing_the_file() {
    let dir = tempdir();
    let env = open_small(dir.path());
    let mut parked = env.begin_ro_txn().expect("ro");
    parked.park().expect("park");
    churn(&env, 200);
    let slot = env.readers().expect("readers");
    assert!(
        slot.iter().any(|r| r.tid == OUSTED && r.txnid.is_none()),
        "the writer did not oust the parked reader: {slot:?}"
    );
    assert!(matches!(parked.unpark(), Err(Error::Ousted)), "unpark of an ousted transaction must say so");
    assert!(matches!(parked.get(Db::MAIN, &key(1)), Err(Error::Ousted)));
    assert!(matches!(parked.unpark(), Err(Error::Ousted)));
    drop(parked);
    assert!(env.readers().expect("readers").iter().all(|r| r.txnid.is_none() && r.tid < OUSTED));
    // The GC was reused: the file stayed small (a pinned snapshot makes it
    // grow by every round's pages).
    let ousted_len = file_len(dir.path());
    // No bigger than the same churn with no reader at all: the writer
    // ousts the reader when a page would grow the file, in the middle of a
    // transaction, not only when its commit updates the GC (that grew the
    // file by a step).
    let dir0 = tempdir();
    let env0 = open_small(dir0.path());
    churn(&env0, 200);
    let clean_len = file_len(dir0.path());
    assert!(ousted_len <= clean_len, "the file grew to {ousted_len} bytes, {clean_len} with no reader");

    // The same churn against a reader that is not parked grows the file,
    // and that reader keeps its snapshot.
    let dir2 = tempdir();
    let env2 = open_small(dir2.path());
    let active = env2.begin_ro_txn().expect("ro");
    churn(&env2, 200);
    assert_eq!(active.get(Db::MAIN, &key(7)).expect("get"), Some(&[1u8; 200][..]));
    let pinned_len = file_len(dir2.path());
    eprintln!("file after churn: {ousted_len} bytes with the parked reader ousted, {pinned_len} with an active one, {clean_len} with none");
    assert!(ousted_len * 4 < pinned_len, "ousting did not keep the file small: {ousted_len} vs {pinned_len}");
}

#[test]
fn an_unousted_parked_reader_keeps_its_snapshot() {
    let dir = tempdir();
    let env = open_small(dir.path());
    let mut parked = env.begin_ro_txn().expect("ro");
    parked.park().expect("park");
    // Commits that fit in the file as it is do not oust anyone.
    let mut txn = env.begin_rw_txn().expect("begin");
    txn.put(Db::MAIN, &key(1), &[9; 200], PutFlags::empty()).expect("put");
    txn.commit().expect("commit");
    parked.unpark().expect("unpark");
    assert_eq!(parked.get(Db::MAIN, &key(1)).expect("get"), Some(&[1u8; 200][..]));
}

#[test]
fn only_the_parked_readers_that_hold_back_what_is_needed_are_ousted() {
    // 300 records, reader A parks, 300 overwrites, reader B parks. Small
    // commits fill the file's room (a growth step of 1 MiB) until a page
    // would grow it: the writer ousts A, whose snapshot pins the
    // overwritten pages, and those pages are enough, so B, older than the
    // commits since but newer than those pages, keeps its snapshot.
    let dir = tempdir();
    let env = open_small_with(dir.path(), Env::builder(), 1 << 20);
    let mut a = env.begin_ro_txn().expect("ro");
    a.park().expect("park");
    churn(&env, 1);
    let mut b = env.begin_ro_txn().expect("ro");
    b.park().expect("park");
    let (a_id, b_id) = (a.id(), b.id());
    let slot = |id: u64| env.readers().expect("readers").into_iter().find(|r| r.txnid == Some(id));
    let mut commits = 0;
    while slot(a_id).is_some() {
        commits += 1;
        assert!(commits < 10_000, "A was never ousted");
        let mut txn = env.begin_rw_txn().expect("begin");
        txn.put(Db::MAIN, &key(commits % 300), &[255; 200], PutFlags::empty()).expect("put");
        txn.commit().expect("commit");
    }
    assert!(commits > 10, "the file had no room: A was ousted at commit {commits}");
    assert_eq!(slot(b_id).map(|r| r.tid), Some(PARKED), "B was ousted with A, at commit {commits}");
    assert!(matches!(a.unpark(), Err(Error::Ousted)));
    b.unpark().expect("B unparks");
    // (Key 1 was overwritten by the first of the small commits.)
    assert_eq!(b.get(Db::MAIN, &key(1)).expect("get"), Some(&[2u8; 200][..]), "B's snapshot changed");
    assert_eq!(env.begin_ro_txn().expect("ro").get(Db::MAIN, &key(1)).expect("get"), Some(&[255u8; 200][..]));
}

// ---------------------------------------------------------------------------
// Across processes

const CHILD_ENV: &str = "RDBX_PARK_CHILD";
/// Set: the child holds its read transaction without parking it.
const HOLD_ENV: &str = "RDBX_PARK_HOLD";

/// Child process: opens the database, parks a read transaction, says
/// "parked <txnid>", waits for a line on stdin, unparks and reports.
#[test]
fn park_child_entry() {
    let Ok(dir) = std::env::var(CHILD_ENV) else { return };
    let env = Env::builder().open(&dir).expect("child open");
    let mut txn = env.begin_ro_txn().expect("child ro txn");
    let before = txn.get(Db::MAIN, &key(3)).expect("get").map(<[u8]>::to_vec);
    let hold = std::env::var_os(HOLD_ENV).is_some();
    if !hold {
        txn.park().expect("park");
    }
    println!("reader {}", txn.id());
    std::io::stdout().flush().expect("flush");
    let mut line = String::new();
    std::io::stdin().read_line(&mut line).expect("stdin");
    if hold {
        println!("unpark not parked");
        return;
    }
    match txn.unpark() {
        Ok(()) => {
            let after = txn.get(Db::MAIN, &key(3)).expect("get").map(<[u8]>::to_vec);
            println!("unpark ok, same data: {}", after == before);
        }
        Err(Error::Ousted) => println!("unpark ousted"),
        Err(e) => println!("unpark error {e}"),
    }
    std::io::stdout().flush().expect("flush");
}

fn spawn_parker(dir: &Path) -> (Child, ChildStdin, BufReader<std::process::ChildStdout>, u64) {
    spawn_reader(dir, false)
}

/// The child is handed back to the caller, which waits for it.
#[allow(clippy::zombie_processes)]
fn spawn_reader(dir: &Path, hold: bool) -> (Child, ChildStdin, BufReader<std::process::ChildStdout>, u64) {
    let mut cmd = Command::new(std::env::current_exe().expect("exe"));
    if hold {
        cmd.env(HOLD_ENV, "1");
    }
    let mut child = cmd
        .args(["park_child_entry", "--exact", "--nocapture", "--test-threads=1"])
        .env(CHILD_ENV, dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn");
    let stdin = child.stdin.take().expect("stdin");
    let mut out = BufReader::new(child.stdout.take().expect("stdout"));
    let mut line = String::new();
    loop {
        line.clear();
        if out.read_line(&mut line).expect("read") == 0 {
            panic!("parking child exited early: {:?}", child.wait());
        }
        if let Some(at) = line.find("reader ") {
            let id = line[at + 7..].trim().parse().expect("txnid");
            return (child, stdin, out, id);
        }
    }
}

fn child_result(mut child: Child, mut stdin: ChildStdin, mut out: BufReader<std::process::ChildStdout>) -> String {
    stdin.write_all(b"go\n").expect("write");
    stdin.flush().expect("flush");
    let mut line = String::new();
    loop {
        line.clear();
        if out.read_line(&mut line).expect("read") == 0 {
            panic!("parking child exited without a result: {:?}", child.wait());
        }
        if let Some(at) = line.find("unpark ") {
            let result = line[at..].trim().to_string();
            child.wait().expect("wait");
            return result;
        }
    }
}

#[test]
fn a_reader_parked_in_another_process_is_ousted_and_told_so() {
    let dir = tempdir();
    let env = open_small(dir.path());
    let (child, stdin, out, txnid) = spawn_parker(dir.path());
    let pid = child.id();
    let slot = env.readers().expect("readers").into_iter().find(|r| r.pid == pid).expect("child slot");
    assert_eq!((slot.tid, slot.txnid), (PARKED, Some(txnid)), "the child's slot is parked on its snapshot");
    churn(&env, 200);
    let slot = env.readers().expect("readers").into_iter().find(|r| r.pid == pid).expect("child slot");
    assert_eq!((slot.tid, slot.txnid), (OUSTED, None), "the writer did not oust the child's parked reader");
    assert_eq!(child_result(child, stdin, out), "unpark ousted");
}

#[test]
fn a_reader_parked_in_another_process_unparks_when_not_ousted() {
    let dir = tempdir();
    let env = open_small(dir.path());
    let (child, stdin, out, _) = spawn_parker(dir.path());
    let mut txn = env.begin_rw_txn().expect("begin");
    txn.put(Db::MAIN, &key(3), &[7; 200], PutFlags::empty()).expect("put");
    txn.commit().expect("commit");
    assert_eq!(child_result(child, stdin, out), "unpark ok, same data: true");
}

// ---------------------------------------------------------------------------
// The handle-slow-readers callback

type Calls = Arc<Mutex<Vec<SlowReader>>>;

/// Churns against a reader held (not parked) by a child process, with a
/// callback that records its calls and answers `answer(call)`. Returns the
/// calls, the child's pid and snapshot, the last txnid and the file size.
fn churn_with_callback(answer: fn(&SlowReader) -> SlowReaderAction) -> (Vec<SlowReader>, u32, u64, u64, u64) {
    let dir = tempdir();
    let calls: Calls = Arc::default();
    let seen = calls.clone();
    let b = Env::builder().handle_slow_readers(move |r| {
        seen.lock().unwrap().push(*r);
        answer(r)
    });
    let env = open_small_with(dir.path(), b, 64 << 10);
    let (child, stdin, out, txnid) = spawn_reader(dir.path(), true);
    let pid = child.id();
    churn(&env, 200);
    let last = env.info().expect("info").last_txnid;
    assert_eq!(child_result(child, stdin, out), "unpark not parked");
    let calls = calls.lock().unwrap().clone();
    (calls, pid, txnid, last, file_len(dir.path()))
}

#[test]
fn the_callback_is_told_about_a_reader_of_another_process_and_may_clear_it() {
    // First answer "retry" (as if it waited), then "transaction aborted".
    let (calls, pid, txnid, last, len) = churn_with_callback(|r| match r.retry {
        0 => SlowReaderAction::Retry,
        _ => SlowReaderAction::ClearTxn,
    });
    assert!(calls.len() >= 3, "the callback was not called: {calls:?}");
    let first = calls[0];
    assert_eq!((first.pid, first.txnid, first.retry), (pid, txnid, 0), "{first:?}");
    assert!(first.tid != 0 && first.tid < OUSTED, "tid {:#x}", first.tid);
    assert!(first.lag >= 1 && txnid + first.lag < last, "lag {} (reader {txnid}, last {last})", first.lag);
    assert!(first.retained_bytes > 0 && first.retained_bytes % 4096 == 0, "retained {}", first.retained_bytes);
    let second = calls[1];
    assert_eq!((second.pid, second.tid, second.txnid, second.retry), (pid, first.tid, txnid, 1), "{second:?}");
    let end = calls[2];
    assert_eq!((end.pid, end.tid, end.txnid, end.retry, end.retained_bytes), (0, 0, txnid, -2, 0), "{end:?}");
    assert!(end.lag >= 1, "the oldest snapshot did not move: {end:?}");
    assert_eq!(calls.iter().filter(|c| c.pid == pid).count(), 2, "the cleared reader was reported again: {calls:?}");
    assert!(len < 1 << 20, "the file grew to {len} bytes although the callback cleared the reader");
}

#[test]
fn the_callback_may_let_the_file_grow() {
    let (calls, pid, txnid, _, len) = churn_with_callback(|_| SlowReaderAction::Grow);
    assert!(!calls.is_empty(), "the callback was not called");
    assert!(calls.iter().all(|c| c.pid == pid && c.txnid == txnid && c.retry == 0), "{calls:?}");
    assert!(len > 4 << 20, "the file did not grow ({len} bytes) although the callback said so");
}
