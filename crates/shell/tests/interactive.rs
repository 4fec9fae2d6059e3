//! The interactive shell in a pseudo-terminal: typing commands, tab
//! completion, usage hints, history (within a session and across sessions),
//! Ctrl-C on a line and in a paged listing, Ctrl-D to leave.

mod common;

use std::path::Path;
use std::process::Command;

use rexpect::session::{spawn_command, PtySession};

/// Generous: only a hang (a test failure anyway) waits this long.
const TIMEOUT_MS: u64 = 30_000;

const UP: &str = "\x1b[A";

fn start(db: &Path, history: &Path) -> PtySession {
    let mut c = Command::new(common::BIN);
    c.arg(db).env("RDBX_HISTORY", history).env("TERM", "xterm").env_remove("NO_COLOR");
    spawn_command(c, Some(TIMEOUT_MS)).expect("spawn rdbx in a pty")
}

/// Sends keys (no Enter).
fn keys(p: &mut PtySession, s: &str) {
    p.send(s).unwrap();
    p.flush().unwrap();
}

/// Waits for `text` on the screen; returns what came before it.
fn expect(p: &mut PtySession, text: &str) -> String {
    p.exp_string(text).unwrap_or_else(|e| panic!("waiting for {text:?}: {e}"))
}

/// Sends Ctrl-C on a line being edited and waits for the fresh prompt.
///
/// While a line is edited, every keystroke redraws the prompt after a bare
/// `\r`, so waiting for the prompt text alone can match a redraw that was on
/// the screen before the Ctrl-C was read. The fresh prompt is the first one
/// after a line feed. Waiting for it matters: rustyline drops bytes that
/// arrive in the same read as the Ctrl-C, so typing on too early loses keys.
fn cancel_line(p: &mut PtySession, prompt: &str) {
    p.send_control('c').unwrap();
    fresh_prompt(p, prompt);
}

/// Ctrl-D at a fresh prompt, then waits for the shell to end. Sent earlier,
/// while a command still runs, the terminal is in its cooked mode between
/// two line reads: the kernel takes the Ctrl-D as an end of input marker,
/// which reads as a NUL byte once rustyline switches to raw mode, so the
/// shell stays at its prompt (seen in CI on a loaded machine).
fn quit(p: &mut PtySession, prompt: &str) {
    fresh_prompt(p, prompt);
    p.send_control('d').unwrap();
    p.exp_eof().unwrap();
}

/// Waits for the prompt that starts a new line (not a redraw of the line
/// being edited; see `cancel_line`); returns what came before it. Typing the
/// next line before it appears can lose keys.
fn fresh_prompt(p: &mut PtySession, prompt: &str) -> String {
    let pattern = format!("\n[^\n]*{}", regex_escape(prompt));
    p.exp_regex(&pattern).unwrap_or_else(|e| panic!("waiting for a fresh {prompt:?}: {e}")).0
}

fn regex_escape(s: &str) -> String {
    s.chars().fold(String::new(), |mut out, c| {
        if "\\.+*?()|[]{}^$".contains(c) {
            out.push('\\');
        }
        out.push(c);
        out
    })
}

/// The shell on a new demo database in `dir`, at its first prompt.
fn demo_session(dir: &Path) -> (PtySession, std::path::PathBuf) {
    let db = dir.join("demo");
    let r = common::run(&["--create-demo", db.to_str().unwrap()], None);
    assert!(r.ok(), "{r:?}");
    let mut p = start(&db, &dir.join("history"));
    fresh_prompt(&mut p, "demo [ro] @MAIN> ");
    (p, db)
}

#[test]
fn a_session_at_the_terminal() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("demo");
    let history = dir.path().join("state").join("history");
    let r = common::run(&["--create-demo", db.to_str().unwrap()], None);
    assert!(r.ok(), "{r:?}");

    let mut p = start(&db, &history);
    expect(&mut p, "open read-only");
    fresh_prompt(&mut p, "demo [ro] @MAIN> ");

    // Tab completes a table name; the prompt shows the current table.
    keys(&mut p, "use fr");
    keys(&mut p, "\t");
    expect(&mut p, "fruit");
    keys(&mut p, "\r");
    fresh_prompt(&mut p, "demo [ro] fruit> ");

    p.send_line("get kiwi").unwrap();
    expect(&mut p, "green");
    fresh_prompt(&mut p, "demo [ro] fruit> ");

    // A hint shows the usage; Tab completes the command and an option.
    keys(&mut p, "sca");
    expect(&mut p, "[FROM [TO]]");
    keys(&mut p, "\t");
    keys(&mut p, "--lim");
    keys(&mut p, "\t");
    expect(&mut p, "--limit");
    keys(&mut p, "2\r");
    expect(&mut p, "banana");
    expect(&mut p, "2 records (--limit reached");
    fresh_prompt(&mut p, "demo [ro] fruit> ");

    // Up arrow brings the last command back.
    keys(&mut p, UP);
    expect(&mut p, "scan --limit 2");
    keys(&mut p, "\r");
    expect(&mut p, "2 records (--limit reached");
    fresh_prompt(&mut p, "demo [ro] fruit> ");

    // Ctrl-C drops the line being typed: it does not run.
    keys(&mut p, "get nothing-here");
    expect(&mut p, "here");
    cancel_line(&mut p, "demo [ro] fruit> ");
    p.send_line("get apple").unwrap();
    let before = expect(&mut p, "red");
    assert!(!before.contains("not found"), "the cancelled line ran: {before:?}");
    fresh_prompt(&mut p, "demo [ro] fruit> ");

    // Errors get one line and the session goes on.
    p.send_line("put a b").unwrap();
    expect(&mut p, "error: put: the database is open read-only");
    fresh_prompt(&mut p, "demo [ro] fruit> ");
    p.send_line("frobnicate").unwrap();
    expect(&mut p, "error: unknown command 'frobnicate'");
    fresh_prompt(&mut p, "demo [ro] fruit> ");

    // Long output comes a screenful at a time (screen lines, not records);
    // one key at the pause: space, Enter (one more line), q.
    p.send_line("pager 8").unwrap();
    fresh_prompt(&mut p, "demo [ro] fruit> ");
    p.send_line("use numbers").unwrap();
    fresh_prompt(&mut p, "demo [ro] numbers> ");
    p.send_line("scan").unwrap();
    // 7 lines: the top of the box, the header, its rule and 4 records.
    let out = expect(&mut p, "-- more");
    assert!(out.contains("4 squared is 16") && !out.contains("5 squared is 25"), "{out:?}");
    // While it waits, the shell holds no snapshot (nothing is kept from reuse).
    let r = common::run(&[db.to_str().unwrap(), "-f", "json", "-c", "readers"], None);
    for reader in common::json(&r) {
        assert!(reader["txnid"].is_null(), "a snapshot is held: {r:?}");
    }
    keys(&mut p, " ");
    let out = expect(&mut p, "-- more");
    assert!(out.contains("8 squared is 64") && !out.contains("9 squared is 81"), "{out:?}");
    keys(&mut p, "\r");
    expect(&mut p, "-- more");
    keys(&mut p, "q");
    expect(&mut p, "(stopped at the pager)");
    fresh_prompt(&mut p, "demo [ro] numbers> ");
    // Every listing is paged: tables too.
    p.send_line("pager 5; tables").unwrap();
    let out = expect(&mut p, "-- more");
    assert!(out.contains("blobs") && !out.contains("by-color"), "{out:?}");
    keys(&mut p, "q");
    fresh_prompt(&mut p, "demo [ro] numbers> ");
    p.send_line("pager auto").unwrap();
    fresh_prompt(&mut p, "demo [ro] numbers> ");

    // The write mode shows in the prompt.
    p.send_line("open rw").unwrap();
    fresh_prompt(&mut p, "demo [rw] numbers> ");
    p.send_line("begin").unwrap();
    fresh_prompt(&mut p, "demo [rw txn] numbers> ");
    p.send_line("put 51 \"51 squared is 2601\"").unwrap();
    fresh_prompt(&mut p, "demo [rw txn] numbers> ");
    p.send_line("commit").unwrap();
    expect(&mut p, "committed transaction");

    // Ctrl-D leaves.
    quit(&mut p, "demo [rw] numbers> ");
    let status = p.process().wait().unwrap();
    let status = format!("{status:?}");
    assert!(status.starts_with("Exited(") && status.ends_with(", 0)"), "{status}");

    // The history file has the commands; a new session starts with them.
    let h = std::fs::read_to_string(&history).unwrap();
    assert!(h.contains("get kiwi") && h.contains("put 51"), "{h}");
    assert!(!h.contains("nothing-here"), "a cancelled line is not history: {h}");
    let r = common::cmd(&db, "get -t numbers 51");
    assert_eq!(r.stdout, "51 squared is 2601\n", "{r:?}");

    let mut p = start(&db, &history);
    fresh_prompt(&mut p, "demo [ro] @MAIN> ");
    keys(&mut p, UP);
    expect(&mut p, "commit");
    cancel_line(&mut p, "demo [ro] @MAIN> ");
    p.send_line("history 3").unwrap();
    expect(&mut p, "commit");
    expect(&mut p, "history 3");
    fresh_prompt(&mut p, "demo [ro] @MAIN> ");
    p.send_line("quit").unwrap();
    p.exp_eof().unwrap();
}

#[test]
fn creating_a_database_asks_first() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("new-db");
    let history = dir.path().join("history");

    let mut p = start(&db, &history);
    expect(&mut p, "does not exist. Create a new database there? [y/N]");
    p.send_line("n").unwrap();
    p.exp_eof().unwrap();
    assert!(!db.exists());

    let mut p = start(&db, &history);
    expect(&mut p, "Create a new database there? [y/N]");
    p.send_line("y").unwrap();
    fresh_prompt(&mut p, "new-db [rw] @MAIN> ");
    p.send_line("create t").unwrap();
    expect(&mut p, "created table 't'");
    p.send_line("drop t").unwrap();
    expect(&mut p, "drop table 't' and its 0 record(s)? [y/N]");
    p.send_line("n").unwrap();
    expect(&mut p, "nothing was changed");
    p.send_line("tables").unwrap();
    expect(&mut p, "1 table(s)");
    quit(&mut p, "new-db [rw] @MAIN> ");
    assert!(db.join("mdbx.dat").is_file());
}

/// The shell in a pseudo-terminal whose output is read only as far as the
/// test asks. rexpect's session drains the terminal on a thread of its own
/// as fast as the shell writes, so output can run any distance ahead of
/// what the test has matched: on a loaded machine a 300,000-row scan was
/// all read before the test had found its 1,000th row and sent Ctrl-C.
/// Here a thread hands over one read at a time and waits until the test
/// takes it; while the test does not read, the shell blocks on a full
/// terminal.
struct HeldPty {
    process: rexpect::process::PtyProcess,
    input: std::fs::File,
    reads: std::sync::mpsc::Receiver<Vec<u8>>,
    /// Read and not matched yet.
    seen: Vec<u8>,
}

impl HeldPty {
    fn start(db: &Path, history: &Path) -> HeldPty {
        use std::io::Read;
        let mut c = Command::new(common::BIN);
        c.arg(db).env("RDBX_HISTORY", history).env("TERM", "xterm").env_remove("NO_COLOR");
        let process = rexpect::process::PtyProcess::new(c).expect("spawn rdbx in a pty");
        let mut output = process.get_file_handle().unwrap();
        let input = process.get_file_handle().unwrap();
        let (tx, reads) = std::sync::mpsc::sync_channel(0);
        std::thread::spawn(move || {
            let mut buf = vec![0u8; 4096];
            while let Ok(n @ 1..) = output.read(&mut buf) {
                if tx.send(buf[..n].to_vec()).is_err() {
                    break;
                }
            }
        });
        HeldPty { process, input, reads, seen: Vec::new() }
    }

    fn send(&mut self, bytes: &[u8]) {
        use std::io::Write;
        self.input.write_all(bytes).unwrap();
    }

    /// Reads until `text` comes after a line feed (`after_newline`: a fresh
    /// prompt, see `fresh_prompt`) or anywhere; returns what came before it
    /// and keeps what came after.
    fn read_until(&mut self, text: &str, after_newline: bool) -> String {
        let t = text.as_bytes();
        // Where a match may start that was not looked at yet.
        let mut from = 0;
        loop {
            let found = (from..self.seen.len().saturating_sub(t.len() - 1))
                .find(|&i| self.seen[i..].starts_with(t) && (!after_newline || self.seen[..i].contains(&b'\n')));
            if let Some(i) = found {
                let rest = self.seen.split_off(i + t.len());
                self.seen.truncate(i);
                let before = std::mem::replace(&mut self.seen, rest);
                return String::from_utf8_lossy(&before).into_owned();
            }
            from = self.seen.len().saturating_sub(t.len() - 1);
            match self.reads.recv_timeout(std::time::Duration::from_millis(TIMEOUT_MS)) {
                Ok(r) => self.seen.extend_from_slice(&r),
                Err(e) => {
                    let tail = &self.seen[self.seen.len().saturating_sub(300)..];
                    panic!("waiting for {text:?}: {e}; the last output: {:?}", String::from_utf8_lossy(tail))
                }
            }
        }
    }

    /// Waits until the shell has closed the terminal (it ended).
    fn read_to_end(&mut self) {
        while let Ok(r) = self.reads.recv_timeout(std::time::Duration::from_millis(TIMEOUT_MS)) {
            self.seen.extend_from_slice(&r);
        }
        let status = self.process.wait().unwrap();
        assert!(
            matches!(status, rexpect::process::WaitStatus::Exited(_, 0)),
            "{status:?}; the last output: {:?}",
            String::from_utf8_lossy(&self.seen)
        );
    }
}

#[test]
fn ctrl_c_stops_a_long_scan() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("big");
    {
        std::fs::create_dir_all(&db).unwrap();
        let env = rdbx::Env::builder().max_dbs(4).open(&db).unwrap();
        let mut txn = env.begin_rw_txn().unwrap();
        let t = txn.create_db(Some("big"), rdbx::DbFlags::empty()).unwrap();
        for i in 0..300_000u32 {
            txn.put(t, format!("key{i:07}").as_bytes(), b"some value", rdbx::PutFlags::APPEND).unwrap();
        }
        txn.commit().unwrap();
    }
    let prompt = "big [ro] @MAIN> ";
    let mut p = HeldPty::start(&db, &dir.path().join("history"));
    p.read_until(prompt, false);
    p.send(b"pager off\r");
    p.read_until(prompt, true);
    p.send(b"scan -t big\r");
    p.read_until("key0001000", false);
    // The shell is at most a terminal's buffer and a read ahead (a few
    // thousand rows of 300,000), blocked until the test reads on.
    p.send(b"\x03");
    let out = p.read_until("shown (interrupted)", false);
    assert!(!out.contains("key0299999"), "the scan ran to its end");
    p.read_until(prompt, false);
    p.send(b"count -t big\r");
    let out = p.read_until(prompt, true);
    assert!(out.contains("300000"), "{out:?}");
    p.send(b"\x04");
    p.read_to_end();
}

#[test]
fn ctrl_c_gives_up_waiting_for_another_writer() {
    let dir = tempfile::tempdir().unwrap();
    let (mut p, db) = demo_session(dir.path());
    p.send_line("open rw").unwrap();
    fresh_prompt(&mut p, "demo [rw] @MAIN> ");

    // Another writer (this test) holds the lock: the put waits, says so, and
    // Ctrl-C gives up without changing anything.
    let env = rdbx::Env::builder().max_dbs(8).open(&db).unwrap();
    let txn = env.begin_rw_txn().unwrap();
    p.send_line("put -t fruit waiting-key v").unwrap();
    // It names the process that holds the lock (this one).
    expect(&mut p, &format!("process {} holds the write lock", std::process::id()));
    expect(&mut p, "waiting for it to finish (Ctrl-C gives up)");
    p.send_control('c').unwrap();
    let out = fresh_prompt(&mut p, "demo [rw] @MAIN> ");
    assert!(out.contains("interrupted while waiting for another writer; nothing was changed"), "{out:?}");
    drop(txn);

    // With the lock free the same put goes through.
    p.send_line("put -t fruit waiting-key v").unwrap();
    let out = fresh_prompt(&mut p, "demo [rw] @MAIN> ");
    assert!(out.contains("stored 'waiting-key'"), "{out:?}");
    p.send_line("get -t fruit waiting-key").unwrap();
    let out = fresh_prompt(&mut p, "demo [rw] @MAIN> ");
    assert!(out.contains("\nv\r"), "{out:?}");
    p.send_line("quit").unwrap();
    p.exp_eof().unwrap();
    drop(env);
    let r = common::cmd(&db, "get -t fruit waiting-key");
    assert_eq!(r.stdout, "v\n", "{r:?}");
}

#[test]
fn quit_inside_a_transaction_asks_first() {
    let dir = tempfile::tempdir().unwrap();
    let (mut p, db) = demo_session(dir.path());
    p.send_line("open rw").unwrap();
    fresh_prompt(&mut p, "demo [rw] @MAIN> ");
    p.send_line("begin").unwrap();
    fresh_prompt(&mut p, "demo [rw txn] @MAIN> ");
    p.send_line("put -t fruit kept-key v").unwrap();
    fresh_prompt(&mut p, "demo [rw txn] @MAIN> ");
    // No: the session goes on inside the transaction.
    p.send_line("quit").unwrap();
    expect(&mut p, "is open: quit and discard its changes? [y/N]");
    p.send_line("n").unwrap();
    expect(&mut p, "not quitting: 'commit' keeps the changes");
    fresh_prompt(&mut p, "demo [rw txn] @MAIN> ");
    p.send_line("commit").unwrap();
    fresh_prompt(&mut p, "demo [rw] @MAIN> ");
    // Yes: the changes are discarded.
    p.send_line("begin; put -t fruit lost-key v").unwrap();
    fresh_prompt(&mut p, "demo [rw txn] @MAIN> ");
    p.send_line("exit").unwrap();
    expect(&mut p, "quit and discard its changes? [y/N]");
    p.send_line("y").unwrap();
    p.exp_eof().unwrap();
    let r = common::cmd(&db, "get -t fruit kept-key; get -t fruit lost-key");
    assert_eq!(r.stdout, "v\n", "{r:?}");
    assert!(r.stderr.contains("'lost-key' not found"), "{r:?}");
}

/// `load` from a named pipe, so that the test decides when the input comes:
/// 110 000 records (one batch of 100 000 committed), Ctrl-C, then more.
#[test]
fn ctrl_c_stops_a_load_and_says_how_many_records_are_kept() {
    use std::io::Write;
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("in.dump");
    let st = Command::new("mkfifo").arg(&fifo).status().unwrap();
    assert!(st.success());
    let (mut p, _) = demo_session(dir.path());
    p.send_line("open rw").unwrap();
    fresh_prompt(&mut p, "demo [rw] @MAIN> ");
    p.send_line(&format!("load {}", fifo.display())).unwrap();
    let mut w = std::fs::OpenOptions::new().write(true).open(&fifo).unwrap();
    let record = |w: &mut std::fs::File, i: u32| {
        let k = format!("k{i:08}");
        writeln!(w, " {}\n {}", rdbx::to_hex(k.as_bytes()), rdbx::to_hex(b"value"))
    };
    write!(w, "VERSION=3\nformat=bytevalue\ndatabase=loaded\ntype=btree\nHEADER=END\n").unwrap();
    for i in 0..110_000 {
        record(&mut w, i).unwrap();
    }
    w.flush().unwrap();
    expect(&mut p, "loading: ");
    expect(&mut p, "106496 records");
    p.send_control('c').unwrap();
    // More input: the load reads on and notices the Ctrl-C.
    let feeder = std::thread::spawn(move || {
        for i in 110_000..200_000 {
            if record(&mut w, i).is_err() {
                return;
            }
        }
    });
    let out = fresh_prompt(&mut p, "demo [rw] @MAIN> ");
    assert!(out.contains("interrupted: 100000 records kept"), "{out:?}");
    p.send_line("count -t loaded").unwrap();
    let out = fresh_prompt(&mut p, "demo [rw] @MAIN> ");
    assert!(out.contains("100000"), "{out:?}");
    p.send_control('d').unwrap();
    p.exp_eof().unwrap();
    let _ = feeder.join();
}

#[test]
fn a_quoted_value_goes_on_on_the_next_line() {
    let dir = tempfile::tempdir().unwrap();
    let (mut p, _) = demo_session(dir.path());
    p.send_line("OPEN rw   # any case, a comment").unwrap();
    fresh_prompt(&mut p, "demo [rw] @MAIN> ");
    // Enter inside the quote continues the line instead of running it.
    p.send_line("put -t fruit poem \"roses").unwrap();
    p.send_line("are red\"").unwrap();
    let out = fresh_prompt(&mut p, "demo [rw] @MAIN> ");
    assert!(out.contains("stored 'poem'"), "{out:?}");
    p.send_line("format json; get -t fruit poem").unwrap();
    expect(&mut p, r#""value":"roses\nare red""#);
    quit(&mut p, "demo [rw] @MAIN> ");
}

#[test]
fn check_and_copy_show_progress_in_pages() {
    let dir = tempfile::tempdir().unwrap();
    let (mut p, _) = demo_session(dir.path());
    p.send_line("check").unwrap();
    let out = expect(&mut p, "no problems found");
    assert!(out.contains(" pages)") && !out.contains("(0 of 0 pages)"), "{out:?}");
    fresh_prompt(&mut p, "demo [ro] @MAIN> ");
    p.send_line(&format!("copy {}", dir.path().join("c.dat").display())).unwrap();
    let out = expect(&mut p, "pages in use; file size");
    assert!(out.contains("copying: ") && out.contains(" pages)"), "{out:?}");
    quit(&mut p, "demo [ro] @MAIN> ");
}
