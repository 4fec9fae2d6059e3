//! `Env::writer_pid`: who holds the write lock, for "waiting for process N"
//! messages.

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};

use rdbx::Env;

const CHILD_ENV: &str = "RDBX_WRITER_PID_CHILD";

/// Child side: holds a write transaction until a line arrives on stdin.
#[test]
fn writer_pid_child() {
    let Ok(dir) = std::env::var(CHILD_ENV) else { return };
    let env = Env::open(&dir).unwrap();
    let txn = env.begin_rw_txn().unwrap();
    println!("holding");
    std::io::stdout().flush().unwrap();
    let mut line = String::new();
    std::io::stdin().read_line(&mut line).unwrap();
    txn.abort();
}

#[test]
fn the_writer_is_named() {
    let d = tempfile::tempdir().unwrap();
    let env = Env::open(d.path()).unwrap();
    assert_eq!(env.writer_pid(), None, "nobody writes");
    // Another thread of this process.
    std::thread::scope(|s| {
        let (tx, rx) = std::sync::mpsc::channel();
        let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
        let env = &env;
        s.spawn(move || {
            let txn = env.begin_rw_txn().unwrap();
            tx.send(()).unwrap();
            done_rx.recv().unwrap();
            txn.abort();
        });
        rx.recv().unwrap();
        assert_eq!(env.writer_pid(), Some(std::process::id()));
        done_tx.send(()).unwrap();
    });
    assert_eq!(env.writer_pid(), None, "released");
    // Another process.
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "writer_pid_child", "--nocapture", "--test-threads=1"])
        .env(CHILD_ENV, d.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    while !line.contains("holding") {
        line.clear();
        assert!(out.read_line(&mut line).unwrap() > 0, "the child ended early");
    }
    assert_eq!(env.writer_pid(), Some(child.id()));
    assert!(matches!(env.try_begin_rw_txn(), Err(rdbx::Error::Busy(_))));
    child.stdin.take().unwrap().write_all(b"go\n").unwrap();
    assert!(child.wait().unwrap().success());
    assert_eq!(env.writer_pid(), None);
}
