//! How much memory this process may use: physical RAM (`sysinfo`), the
//! process's own limits (`RLIMIT_DATA`, `RLIMIT_AS`) and its cgroup's
//! `memory.max`. The write transaction sizes its dirty-page budget from these
//! (see `spill`).

use std::path::{Path, PathBuf};

/// Total and available physical RAM in bytes (`sysinfo`), if known.
pub(crate) fn ram() -> Option<(u64, u64)> {
    // SAFETY: an all-zero sysinfo is a valid value of this plain C struct.
    let mut si: libc::sysinfo = unsafe { std::mem::zeroed() };
    // SAFETY: `si` is a valid, writable sysinfo for the duration of the call.
    let rc = unsafe { libc::sysinfo(&mut si) };
    if rc != 0 {
        return None;
    }
    let unit = u64::from(si.mem_unit.max(1));
    Some(((si.totalram as u64).saturating_mul(unit), (si.freeram as u64).saturating_mul(unit)))
}

fn rlimit(resource: libc::__rlimit_resource_t) -> Option<u64> {
    let mut r = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: `r` is a valid, writable rlimit for the duration of the call.
    let rc = unsafe { libc::getrlimit(resource, &mut r) };
    (rc == 0 && r.rlim_cur != libc::RLIM_INFINITY).then_some(r.rlim_cur)
}

/// The smallest `memory.max` of this process's cgroup (v2) and its parents.
fn cgroup_limit() -> Option<u64> {
    let own = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    let rel = own.lines().find_map(|l| l.strip_prefix("0::"))?.trim().trim_start_matches('/');
    let root = Path::new("/sys/fs/cgroup");
    let mut dir: PathBuf = root.join(rel);
    let mut least: Option<u64> = None;
    loop {
        if let Ok(s) = std::fs::read_to_string(dir.join("memory.max")) {
            if let Ok(v) = s.trim().parse::<u64>() {
                least = Some(least.map_or(v, |l| l.min(v)));
            }
        }
        if dir == root || !dir.pop() || !dir.starts_with(root) {
            break;
        }
    }
    least
}

/// The tightest memory limit set on this process, if any: `RLIMIT_DATA`
/// (heap and private writable mappings: where dirty pages live),
/// `RLIMIT_AS` (all mappings, the data file's map included) and the cgroup's
/// `memory.max`.
pub(crate) fn process_limit() -> Option<u64> {
    [rlimit(libc::RLIMIT_DATA), rlimit(libc::RLIMIT_AS), cgroup_limit()].into_iter().flatten().min()
}
