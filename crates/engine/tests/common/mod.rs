//! Helpers shared by the engine's integration tests.

/// A small deterministic generator (xorshift64): tests replay from a seed.
pub struct Rng(pub u64);

#[allow(dead_code)]
impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// A number in `0..n`.
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    /// An index in `0..n`.
    pub fn index(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// Runs test `child` of the current test binary again, in a child process
/// under `ulimit -<flag> <kib>` (e.g. `d` for RLIMIT_DATA, `v` for
/// RLIMIT_AS), with the environment `envs`; returns its output. The child
/// test does its work only when one of those variables is set.
#[allow(dead_code)]
pub fn run_child_under_ulimit(flag: char, kib: u64, child: &str, envs: &[(&str, &str)]) -> std::process::Output {
    let exe = std::env::current_exe().expect("the test binary");
    std::process::Command::new("sh")
        .arg("-c")
        .arg(format!("ulimit -{flag} {kib} && exec \"$0\" \"$@\""))
        .arg(&exe)
        .args(["--exact", child, "--nocapture", "--test-threads=1"])
        .envs(envs.iter().copied())
        .output()
        .expect("running the child test")
}

/// Whether `dir` is on tmpfs or ramfs, where a sync does nothing: the engine
/// makes lazy commits steady there (docs/design.md, "Syncs on tmpfs"), so
/// tests of the lazy modes' unsynced state expect none there.
#[allow(dead_code)]
pub fn in_memory_fs(dir: &std::path::Path) -> bool {
    let out = std::process::Command::new("stat").args(["-f", "-c", "%T"]).arg(dir).output().expect("stat -f");
    matches!(String::from_utf8_lossy(&out.stdout).trim(), "tmpfs" | "ramfs")
}
