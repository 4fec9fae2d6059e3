//! Counters, the progress display (a terminal only), the summary table and
//! the JSON summary.

use std::io::IsTerminal;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use serde_json::json;

/// Counters of one probe (and, added up, of the run).
#[derive(Debug, Clone, Default)]
pub struct Counts {
    /// Acknowledged commits.
    pub commits: u64,
    /// Commits that returned an error (the map was full).
    pub commit_failures: u64,
    /// Transactions (top-level or nested) aborted on purpose, or after MapFull.
    pub aborts: u64,
    /// Actors killed with SIGKILL by the runner while working.
    pub kills: u64,
    /// Actors that exited inside a transaction on purpose (deadread, deadwrite).
    pub dead_exits: u64,
    /// Actors started again after a kill or a dead exit.
    pub restarts: u64,
    /// Tables verified against their op log after a kill or a dead exit.
    pub recoveries_verified: u64,
    /// Commits in flight at a kill, resolved by the database content.
    pub inflight_applied: u64,
    pub inflight_absent: u64,
    /// Integrity checks with no problem (the database, copies).
    pub checks_passed: u64,
    /// Tables whose content equalled their replayed op log at the end.
    pub tables_verified: u64,
    pub failures: u64,
}

impl Counts {
    pub fn add(&mut self, o: &Counts) {
        self.commits += o.commits;
        self.commit_failures += o.commit_failures;
        self.aborts += o.aborts;
        self.kills += o.kills;
        self.dead_exits += o.dead_exits;
        self.restarts += o.restarts;
        self.recoveries_verified += o.recoveries_verified;
        self.inflight_applied += o.inflight_applied;
        self.inflight_absent += o.inflight_absent;
        self.checks_passed += o.checks_passed;
        self.tables_verified += o.tables_verified;
        self.failures += o.failures;
    }

    pub fn json(&self) -> serde_json::Value {
        json!({
            "commits": self.commits,
            "commit_failures": self.commit_failures,
            "aborts": self.aborts,
            "kills": self.kills,
            "dead_exits": self.dead_exits,
            "restarts": self.restarts,
            "recoveries_verified": self.recoveries_verified,
            "inflight_applied": self.inflight_applied,
            "inflight_absent": self.inflight_absent,
            "checks_passed": self.checks_passed,
            "tables_verified": self.tables_verified,
            "failures": self.failures,
        })
    }

    fn rows(&self) -> Vec<(&'static str, u64)> {
        vec![
            ("commits (acknowledged)", self.commits),
            ("commits failed (map full)", self.commit_failures),
            ("transactions aborted", self.aborts),
            ("actors killed (SIGKILL)", self.kills),
            ("deliberate dead exits", self.dead_exits),
            ("actor restarts", self.restarts),
            ("recoveries verified", self.recoveries_verified),
            ("  in-flight commit applied", self.inflight_applied),
            ("  in-flight commit absent", self.inflight_absent),
            ("tables verified at the end", self.tables_verified),
            ("integrity checks passed", self.checks_passed),
            ("failures", self.failures),
        ]
    }
}

/// One probe's result.
#[derive(Debug, Clone)]
pub struct ProbeReport {
    pub probe: u64,
    pub page_size: usize,
    pub mode: String,
    pub geometry: String,
    pub actors: Vec<String>,
    pub seconds: f64,
    pub counts: Counts,
    /// The space check: (first_unallocated, bound, the readers' part of the
    /// bound), in pages.
    pub space: Option<(u64, u64, u64)>,
    pub failures: Vec<String>,
    pub kept: Option<String>,
    pub repro: Option<String>,
    pub interrupted: bool,
}

impl ProbeReport {
    pub fn json(&self) -> serde_json::Value {
        json!({
            "probe": self.probe,
            "page_size": self.page_size,
            "mode": self.mode,
            "geometry": self.geometry,
            "actors": self.actors,
            "seconds": (self.seconds * 10.0).round() / 10.0,
            "counts": self.counts.json(),
            "space": self.space.map(|(used, bound, retained)| {
                json!({"first_unallocated": used, "bound": bound, "retained_while_growing": retained})
            }),
            "failures": self.failures,
            "kept": self.kept,
            "repro": self.repro,
            "interrupted": self.interrupted,
        })
    }

    pub fn line(&self) -> String {
        let status = if !self.failures.is_empty() {
            "FAILED"
        } else if self.interrupted {
            "interrupted"
        } else {
            "ok"
        };
        format!(
            "probe {}: page {} {} {:.1}s [{}]: {} commits, {} kills, {} restarts, {} checks: {status}",
            self.probe,
            self.page_size,
            self.mode,
            self.seconds,
            self.actors.join(" "),
            self.counts.commits,
            self.counts.kills,
            self.counts.restarts,
            self.counts.checks_passed
        )
    }
}

/// The progress line, on a terminal only.
pub struct Progress {
    bar: Option<ProgressBar>,
}

impl Progress {
    pub fn new(enabled: bool) -> Progress {
        let bar = (enabled && std::io::stderr().is_terminal()).then(|| {
            let b = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr_with_hz(4));
            b.set_style(ProgressStyle::with_template("{spinner} [{elapsed_precise}] {msg}").expect("valid template"));
            b.enable_steady_tick(Duration::from_millis(250));
            b
        });
        Progress { bar }
    }
    pub fn set(&self, msg: String) {
        if let Some(b) = &self.bar {
            b.set_message(msg);
        }
    }
    /// Prints a line above the progress line.
    pub fn println(&self, s: &str) {
        match &self.bar {
            Some(b) => b.println(s),
            None => eprintln!("{s}"),
        }
    }
    pub fn finish(&self) {
        if let Some(b) = &self.bar {
            b.finish_and_clear();
        }
    }
}

/// The summary table (text mode).
pub fn table(total: &Counts, probes: usize, seconds: f64, seed: u64, verdict: &str) -> String {
    let mut s = format!("stress summary (seed {seed}, {probes} probes, {seconds:.1} s): {verdict}\n");
    for (name, v) in total.rows() {
        s.push_str(&format!("  {name:<30} {v:>10}\n"));
    }
    s
}
