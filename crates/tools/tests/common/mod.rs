//! Test support: running the binary, golden files, and a small page walker
//! that finds pages in a data file so corruption cases can be applied by
//! structure (not by fixed offsets).
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use rdbx::format::meta::{troika, Meta};
use rdbx::format::page::Page;
use rdbx::format::tree::Tree;

pub fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_rdbx-tools")
}

pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
    pub raw_stdout: Vec<u8>,
}

impl Run {
    pub fn all(&self) -> String {
        format!("{}\n{}", self.stdout, self.stderr)
    }
}

impl std::fmt::Debug for Run {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "exit {}\n--- stdout\n{}\n--- stderr\n{}", self.code, self.stdout, self.stderr)
    }
}

pub fn run<S: AsRef<std::ffi::OsStr>>(args: &[S]) -> Run {
    run_stdin(args, None)
}

/// As `run_stdin`, for a command that must not wait for anything the test
/// holds (a writer lock): should it wait, the test fails after a generous
/// deadline instead of hanging. Nothing about speed is asserted.
#[allow(dead_code)]
pub fn run_no_wait<S: AsRef<std::ffi::OsStr>>(args: &[S], input: Option<&[u8]>) -> Run {
    let args: Vec<std::ffi::OsString> = args.iter().map(|a| a.as_ref().to_owned()).collect();
    let input = input.map(<[u8]>::to_vec);
    let (tx, rx) = std::sync::mpsc::channel();
    let shown = format!("{args:?}");
    std::thread::spawn(move || {
        let _ = tx.send(run_stdin(&args, input.as_deref()));
    });
    rx.recv_timeout(std::time::Duration::from_secs(120))
        .unwrap_or_else(|_| panic!("rdbx-tools {shown} did not return in 120 s: it waits for the lock"))
}

pub fn run_stdin<S: AsRef<std::ffi::OsStr>>(args: &[S], input: Option<&[u8]>) -> Run {
    let mut c = Command::new(bin());
    c.args(args).stdout(Stdio::piped()).stderr(Stdio::piped());
    c.stdin(if input.is_some() { Stdio::piped() } else { Stdio::null() });
    let mut child = c.spawn().expect("spawn rdbx-tools");
    if let Some(data) = input {
        use std::io::Write;
        let mut sin = child.stdin.take().expect("stdin");
        let data = data.to_vec();
        std::thread::spawn(move || {
            let _ = sin.write_all(&data);
        });
    }
    let o: Output = child.wait_with_output().expect("wait");
    Run {
        code: o.status.code().unwrap_or(-1000 - o.status.signal_or_zero()),
        stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
        raw_stdout: o.stdout,
    }
}

trait SignalOrZero {
    fn signal_or_zero(&self) -> i32;
}
impl SignalOrZero for std::process::ExitStatus {
    fn signal_or_zero(&self) -> i32 {
        use std::os::unix::process::ExitStatusExt;
        self.signal().unwrap_or(0)
    }
}

pub fn golden_dir() -> PathBuf {
    let here = Path::new(env!("CARGO_MANIFEST_DIR"));
    for c in
        [here.join("../../../shared/golden"), here.join("../../shared/golden"), PathBuf::from("/work/shared/golden")]
    {
        if c.join("README.md").is_file() {
            return c;
        }
    }
    panic!("golden directory not found")
}

pub fn golden_text(name: &str) -> Vec<u8> {
    std::fs::read(golden_dir().join(name)).expect("golden file")
}

/// Copies golden database `name` ("g1", "g2", "g3", "gmain") into `dir`,
/// writable; returns the path to give the tools.
pub fn golden_copy(name: &str, dir: &Path) -> PathBuf {
    let g = golden_dir();
    let f = g.join(format!("{name}.mdbx"));
    let make_writable = |p: &Path| {
        let mut perm = std::fs::metadata(p).unwrap().permissions();
        #[allow(clippy::permissions_set_readonly_false)]
        perm.set_readonly(false);
        std::fs::set_permissions(p, perm).unwrap();
    };
    if f.is_file() {
        let dst = dir.join(format!("{name}.mdbx"));
        std::fs::copy(&f, &dst).unwrap();
        make_writable(&dst);
        return dst;
    }
    let dst = dir.join(name);
    std::fs::create_dir_all(&dst).unwrap();
    std::fs::copy(g.join(name).join("mdbx.dat"), dst.join("mdbx.dat")).unwrap();
    make_writable(&dst.join("mdbx.dat"));
    dst
}

pub fn u16_at(b: &[u8], o: usize) -> u16 {
    u16::from_le_bytes([b[o], b[o + 1]])
}
pub fn u32_at(b: &[u8], o: usize) -> u32 {
    u32::from_le_bytes(b[o..o + 4].try_into().unwrap())
}
pub fn u64_at(b: &[u8], o: usize) -> u64 {
    u64::from_le_bytes(b[o..o + 8].try_into().unwrap())
}
pub fn put_u16(b: &mut [u8], o: usize, v: u16) {
    b[o..o + 2].copy_from_slice(&v.to_le_bytes());
}
pub fn put_u32(b: &mut [u8], o: usize, v: u32) {
    b[o..o + 4].copy_from_slice(&v.to_le_bytes());
}
pub fn put_u64(b: &mut [u8], o: usize, v: u64) {
    b[o..o + 8].copy_from_slice(&v.to_le_bytes());
}

/// Byte offsets inside a meta page.
pub mod meta_off {
    pub const MAGIC: usize = 20;
    pub const TXNID_A: usize = 28;
    pub const GEO_NOW: usize = 52;
    pub const FIRST_UNALLOC: usize = 56;
    pub const GC_TREE: usize = 60;
    pub const PAGESIZE: usize = 64;
    pub const MAIN_TREE: usize = 108;
    pub const SIGN: usize = 188;
    pub const TXNID_B: usize = 196;
}

/// Byte offsets inside a tree descriptor.
pub mod tree_off {
    pub const FLAGS: usize = 0;
    pub const HEIGHT: usize = 2;
    pub const ROOT: usize = 8;
    pub const BRANCH: usize = 12;
    pub const LEAF: usize = 16;
    pub const LARGE: usize = 20;
    pub const ITEMS: usize = 32;
}

/// A data file image with a structural walker.
pub struct Img {
    pub b: Vec<u8>,
    pub ps: usize,
    pub path: PathBuf,
}

impl Img {
    pub fn open(path: &Path) -> Img {
        let data = if path.is_dir() { path.join("mdbx.dat") } else { path.to_path_buf() };
        let b = std::fs::read(&data).unwrap();
        let ps = u32_at(&b, meta_off::PAGESIZE) as usize;
        Img { b, ps, path: data }
    }
    pub fn save(&self) {
        std::fs::write(&self.path, &self.b).unwrap();
    }
    pub fn meta(&self, i: usize) -> Meta {
        Meta::read(&self.b[i * self.ps..], i as u32).unwrap()
    }
    /// Index of the head meta.
    pub fn head(&self) -> usize {
        let st = [0, 1, 2].map(|i| {
            let m = self.meta(i);
            (m.txnid(), m.is_steady())
        });
        troika(st).recent
    }
    pub fn head_off(&self) -> usize {
        self.head() * self.ps
    }
    pub fn page(&self, p: u32) -> &[u8] {
        &self.b[p as usize * self.ps..(p as usize + 1) * self.ps]
    }
    pub fn poff(&self, p: u32) -> usize {
        p as usize * self.ps
    }
    pub fn nentries(&self, p: u32) -> usize {
        Page { buf: self.page(p) }.num_entries()
    }
    /// Absolute offset of node `i` of page `p`.
    pub fn node_off(&self, p: u32, i: usize) -> usize {
        let base = self.poff(p);
        base + 20 + u16_at(&self.b, base + 20 + 2 * i) as usize
    }
    pub fn node_key(&self, p: u32, i: usize) -> &[u8] {
        let o = self.node_off(p, i);
        let k = u16_at(&self.b, o + 6) as usize;
        &self.b[o + 8..o + 8 + k]
    }
    /// Absolute offset of the value of leaf node `i` of page `p`.
    pub fn node_val_off(&self, p: u32, i: usize) -> usize {
        let o = self.node_off(p, i);
        o + 8 + u16_at(&self.b, o + 6) as usize
    }
    pub fn node_flags(&self, p: u32, i: usize) -> u8 {
        self.b[self.node_off(p, i) + 4]
    }
    pub fn child(&self, p: u32, i: usize) -> u32 {
        u32_at(&self.b, self.node_off(p, i))
    }
    pub fn is_branch(&self, p: u32) -> bool {
        Page { buf: self.page(p) }.is_branch()
    }
    pub fn main(&self) -> Tree {
        self.meta(self.head()).main
    }
    pub fn gc(&self) -> Tree {
        self.meta(self.head()).gc
    }
    /// Absolute offset of the descriptor of table `name` and the descriptor.
    pub fn table(&self, name: &str) -> (usize, Tree) {
        for p in self.pages_of(self.main().root) {
            if self.is_branch(p) {
                continue;
            }
            for i in 0..self.nentries(p) {
                if self.node_key(p, i) == name.as_bytes() && self.node_flags(p, i) & 2 != 0 {
                    let o = self.node_val_off(p, i);
                    return (o, Tree::read(&self.b[o..o + 48]));
                }
            }
        }
        panic!("table {name} not found")
    }
    /// Tree pages reachable from `root` (pre-order; no nested trees).
    pub fn pages_of(&self, root: u32) -> Vec<u32> {
        let mut out = Vec::new();
        if root == u32::MAX {
            return out;
        }
        let mut st = vec![root];
        while let Some(p) = st.pop() {
            out.push(p);
            if self.is_branch(p) {
                for i in (0..self.nentries(p)).rev() {
                    st.push(self.child(p, i));
                }
            }
        }
        out
    }
    pub fn leaves(&self, root: u32) -> Vec<u32> {
        self.pages_of(root).into_iter().filter(|&p| !self.is_branch(p)).collect()
    }
    pub fn branches(&self, root: u32) -> Vec<u32> {
        self.pages_of(root).into_iter().filter(|&p| self.is_branch(p)).collect()
    }
}

// ---------------------------------------------------------------------------
// The real libmdbx command-line tools, when a developer has them: set
// RDBX_MDBX_TOOLS_DIR to a directory holding mdbx_load, mdbx_dump, mdbx_chk,
// mdbx_stat, mdbx_copy and mdbx_drop built from libmdbx. rdbx does not ship
// libmdbx's sources, so without it these cross-checks skip; the always-on
// checks use the golden outputs of the real tools (../shared/golden) and the
// libmdbx library itself through the mdbx-sys oracle.

fn build_real_tools() -> Option<PathBuf> {
    let dir = PathBuf::from(std::env::var_os("RDBX_MDBX_TOOLS_DIR")?);
    let tools = ["mdbx_load", "mdbx_dump", "mdbx_chk", "mdbx_stat", "mdbx_copy", "mdbx_drop"];
    tools.iter().all(|t| dir.join(t).is_file()).then_some(dir)
}

pub fn real_tool(name: &str) -> Option<PathBuf> {
    static DIR: std::sync::OnceLock<Option<PathBuf>> = std::sync::OnceLock::new();
    let d = DIR.get_or_init(build_real_tools);
    match d {
        Some(d) => Some(d.join(name)),
        None => {
            eprintln!("note: RDBX_MDBX_TOOLS_DIR does not name a directory with the real mdbx_* tools: skipping the comparison with {name}");
            None
        }
    }
}

/// Runs a real libmdbx tool.
pub fn run_real(tool: &Path, args: &[&str], input: Option<&[u8]>) -> Run {
    let mut c = Command::new(tool);
    c.args(args).stdout(Stdio::piped()).stderr(Stdio::piped());
    c.stdin(if input.is_some() { Stdio::piped() } else { Stdio::null() });
    let mut child = c.spawn().expect("spawn real tool");
    if let Some(data) = input {
        use std::io::Write;
        let mut sin = child.stdin.take().expect("stdin");
        let data = data.to_vec();
        std::thread::spawn(move || {
            let _ = sin.write_all(&data);
        });
    }
    let o = child.wait_with_output().expect("wait");
    Run {
        code: o.status.code().unwrap_or(-1000 - o.status.signal_or_zero()),
        stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
        raw_stdout: o.stdout,
    }
}

// Child processes: signals and waits (Ctrl-C tests).

use std::process::Child;
use std::time::{Duration, Instant};

/// Sends signal `sig` to `child`.
pub fn signal(child: &Child, sig: libc::c_int) {
    let pid = libc::pid_t::try_from(child.id()).unwrap();
    // SAFETY: kill(2) takes plain integers; `pid` is our own child, not yet reaped.
    let rc = unsafe { libc::kill(pid, sig) };
    assert_eq!(rc, 0, "kill {pid}");
}

/// Waits for `child` with a generous deadline that only a hang reaches.
pub fn wait(mut child: Child, what: &str) -> Run {
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        if child.try_wait().unwrap().is_some() {
            break;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{what} did not stop in 120 s after the signal");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let o = child.wait_with_output().unwrap();
    use std::os::unix::process::ExitStatusExt;
    Run {
        code: o.status.code().unwrap_or(-1000 - o.status.signal().unwrap_or(0)),
        stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
        raw_stdout: o.stdout,
    }
}

pub fn spawn(args: &[String], stdin: Stdio) -> Child {
    Command::new(bin()).args(args).stdin(stdin).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap()
}

/// Waits until the child sleeps in a pipe read or write (its wchan in /proc).
pub fn wait_blocked_on_pipe(child: &Child) {
    let stat = PathBuf::from(format!("/proc/{}/wchan", child.id()));
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let w = std::fs::read_to_string(&stat).unwrap_or_default();
        if w.contains("pipe") {
            return;
        }
        assert!(Instant::now() < deadline, "the child never blocked on the pipe (wchan {w:?})");
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[allow(unused_imports)] // not every test file validates JSON
pub use rdbx_tests::schema::check_schema;
