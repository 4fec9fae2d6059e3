//! Running the `rdbx` binary in tests, and a database to run it on.
#![allow(dead_code)]

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

use rdbx::{DbFlags, Env, PutFlags};

pub const BIN: &str = env!("CARGO_BIN_EXE_rdbx");

/// What a run printed and how it ended.
pub struct Run {
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
    pub raw: Vec<u8>,
}

impl std::fmt::Debug for Run {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "exit {:?}\n--- stdout\n{}--- stderr\n{}", self.code, self.stdout, self.stderr)
    }
}

impl Run {
    pub fn ok(&self) -> bool {
        self.code == Some(0)
    }
    pub fn lines(&self) -> Vec<&str> {
        self.stdout.lines().collect()
    }
}

/// Runs `rdbx ARGS` with `stdin` as its standard input (empty if `None`).
pub fn run(args: &[&str], stdin: Option<&str>) -> Run {
    run_bytes(args, stdin.map(str::as_bytes))
}

pub fn run_bytes(args: &[&str], stdin: Option<&[u8]>) -> Run {
    run_in(None, args, stdin)
}

/// [`run_bytes`] in the working directory `cwd`.
pub fn run_in(cwd: Option<&Path>, args: &[&str], stdin: Option<&[u8]>) -> Run {
    let mut c = Command::new(BIN);
    if let Some(d) = cwd {
        c.current_dir(d);
    }
    let mut child = c
        .args(args)
        .env("RDBX_HISTORY", "")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn rdbx");
    let input = stdin.map(<[u8]>::to_vec).unwrap_or_default();
    let mut sin = child.stdin.take().expect("stdin");
    let writer = std::thread::spawn(move || {
        let _ = sin.write_all(&input);
    });
    let o = child.wait_with_output().expect("wait for rdbx");
    let _ = writer.join();
    Run {
        code: o.status.code(),
        stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
        raw: o.stdout,
    }
}

/// `rdbx PATH -c CMDS` (read-only).
pub fn cmd(path: &Path, cmds: &str) -> Run {
    run(&[path.to_str().unwrap(), "-c", cmds], None)
}

/// `rdbx PATH --write -c CMDS`.
pub fn cmd_rw(path: &Path, cmds: &str) -> Run {
    run(&[path.to_str().unwrap(), "--write", "-c", cmds], None)
}

/// JSON output lines, parsed.
pub fn json(r: &Run) -> Vec<serde_json::Value> {
    r.stdout.lines().map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON: {l:?}: {e}"))).collect()
}

/// A database with a text table, an INTEGER_KEY table, a dupsort table, a
/// reverse-key table and some binary records.
pub fn make_db(dir: &Path) {
    let env = Env::builder().max_dbs(8).open(dir).expect("create env");
    let mut txn = env.begin_rw_txn().unwrap();
    let none = PutFlags::empty();
    let colors = txn.create_db(Some("colors"), DbFlags::empty()).unwrap();
    for (k, v) in [("red", "ff0000"), ("green", "00ff00"), ("blue", "0000ff"), ("black", "000000")] {
        txn.put(colors, k.as_bytes(), v.as_bytes(), none).unwrap();
    }
    txn.put(colors, b"bin\x01", &[0u8, 1, 2, 0xff], none).unwrap();
    txn.put(colors, b"with space", b"two words", none).unwrap();
    let ints = txn.create_db(Some("ints"), DbFlags::INTEGER_KEY).unwrap();
    for n in [3u64, 1, 2, 1000] {
        txn.put(ints, &n.to_ne_bytes(), format!("n{n}").as_bytes(), none).unwrap();
    }
    let tags = txn.create_db(Some("tags"), DbFlags::DUP_SORT).unwrap();
    for (k, v) in [("fruit", "apple"), ("fruit", "pear"), ("fruit", "fig"), ("veg", "kale")] {
        txn.put(tags, k.as_bytes(), v.as_bytes(), none).unwrap();
    }
    let hosts = txn.create_db(Some("hosts"), DbFlags::REVERSE_KEY).unwrap();
    for h in ["a.example.com", "b.example.com", "a.example.org", "www.rust-lang.org"] {
        txn.put(hosts, h.as_bytes(), b"up", none).unwrap();
    }
    let many = txn.create_db(Some("many"), DbFlags::empty()).unwrap();
    for i in 0..500u32 {
        txn.put(many, format!("k{i:04}").as_bytes(), format!("v{i}").as_bytes(), none).unwrap();
    }
    txn.commit().unwrap();
}

/// All records of a table through the engine (for before/after comparisons).
pub fn dump_table(dir: &Path, name: &str) -> Vec<(Vec<u8>, Vec<u8>)> {
    let env = Env::builder().max_dbs(8).read_only(true).open(dir).expect("open env");
    let txn = env.begin_ro_txn().unwrap();
    let db = txn.open_db(Some(name)).unwrap();
    let mut c = txn.cursor(db).unwrap();
    let mut v = Vec::new();
    while let Some((k, val)) = c.next().unwrap() {
        v.push((k.to_vec(), val.to_vec()));
    }
    v
}
