//! Names (roles, table kinds, durability modes), the PRNG, and the probe
//! configuration sampled from the seed.

use rdbx::{DbFlags, Durability};

/// SplitMix64: small, deterministic, good enough to sample work.
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed ^ 0x6a09_e667_f3bc_c908)
    }
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    /// Uniform in `0..n` (0 when `n == 0`).
    pub fn below(&mut self, n: u64) -> u64 {
        ((self.next_u64() as u128 * n as u128) >> 64) as u64
    }
    /// Uniform in `lo..=hi`.
    pub fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.below(hi - lo + 1)
    }
    /// True with probability `num/den`.
    pub fn chance(&mut self, num: u64, den: u64) -> bool {
        self.below(den) < num
    }
    pub fn pick<'a, T>(&mut self, v: &'a [T]) -> &'a T {
        &v[self.below(v.len() as u64) as usize]
    }
    pub fn bytes(&mut self, len: usize) -> Vec<u8> {
        let mut v = Vec::with_capacity(len + 8);
        while v.len() < len {
            v.extend_from_slice(&self.next_u64().to_le_bytes());
        }
        v.truncate(len);
        v
    }
}

macro_rules! named_enum {
    ($name:ident { $($var:ident = $s:literal),* $(,)? }) => {
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum $name { $($var),* }
        impl $name {
            pub const ALL: &'static [$name] = &[$($name::$var),*];
            pub fn name(self) -> &'static str {
                match self { $($name::$var => $s),* }
            }
            pub fn parse(s: &str) -> Option<$name> {
                match s { $($s => Some($name::$var),)* _ => None }
            }
            pub fn names() -> String {
                [$($s),*].join(",")
            }
        }
        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.name())
            }
        }
    };
}

named_enum!(Role {
    Hill = "hill",
    Ttl = "ttl",
    Nested = "nested",
    Append = "append",
    Jitter = "jitter",
    Copy = "copy",
    DeadRead = "deadread",
    DeadWrite = "deadwrite",
    Try = "try",
    Reader = "reader",
});

named_enum!(Kind {
    Plain = "plain",
    IntegerKey = "integerkey",
    DupSort = "dupsort",
    DupFixed = "dupfixed",
    IntegerDup = "integerdup",
    ReverseKey = "reversekey",
    ReverseDup = "reversedup",
});

named_enum!(Mode {
    Durable = "durable",
    NoMetaSync = "nometasync",
    SafeNoSync = "safe-nosync",
    UtterlyNoSync = "utterly-nosync",
});

/// Roles a foreign actor must implement.
pub const FOREIGN_ROLES: &[Role] = &[Role::Hill, Role::Ttl];

impl Kind {
    pub fn flags(self) -> DbFlags {
        match self {
            Kind::Plain => DbFlags::empty(),
            Kind::IntegerKey => DbFlags::INTEGER_KEY,
            Kind::DupSort => DbFlags::DUP_SORT,
            Kind::DupFixed => DbFlags::DUP_SORT | DbFlags::DUP_FIXED,
            Kind::IntegerDup => DbFlags::DUP_SORT | DbFlags::DUP_FIXED | DbFlags::INTEGER_DUP,
            Kind::ReverseKey => DbFlags::REVERSE_KEY,
            Kind::ReverseDup => DbFlags::DUP_SORT | DbFlags::REVERSE_DUP,
        }
    }
    pub fn dup(self) -> bool {
        self.flags().contains(DbFlags::DUP_SORT)
    }
}

impl Mode {
    pub fn durability(self) -> Durability {
        match self {
            Mode::Durable => Durability::SyncDurable,
            Mode::NoMetaSync => Durability::NoMetaSync,
            Mode::SafeNoSync => Durability::SafeNoSync,
            Mode::UtterlyNoSync => Durability::UtterlyNoSync,
        }
    }
}

/// Parses a comma-separated list of names.
pub fn parse_list<T: Copy>(s: &str, what: &str, parse: fn(&str) -> Option<T>, all: &str) -> Result<Vec<T>, String> {
    let mut out = Vec::new();
    for w in s.split(',').map(str::trim).filter(|w| !w.is_empty()) {
        match parse(w) {
            Some(x) => out.push(x),
            None => return Err(format!("unknown {what} '{w}' (known: {all})")),
        }
    }
    if out.is_empty() {
        return Err(format!("empty list of {what}s"));
    }
    Ok(out)
}

/// What the user allows; probes sample from it.
#[derive(Debug, Clone)]
pub struct Space {
    pub roles: Vec<Role>,
    pub page_sizes: Vec<usize>,
    pub modes: Vec<Mode>,
    /// How the probes write pages: `false` pwrite, `true` WRITEMAP.
    pub maps: Vec<bool>,
    pub kinds: Vec<Kind>,
    pub processes: usize,
    pub upto_mb: u64,
    pub foreign: bool,
}

/// One actor of a probe.
#[derive(Debug, Clone)]
pub struct ActorPlan {
    pub table: String,
    pub role: Role,
    pub kind: Kind,
    pub seed: u64,
    pub foreign: bool,
}

/// One probe's configuration.
#[derive(Debug, Clone)]
pub struct ProbeConfig {
    pub probe: u64,
    pub page_size: usize,
    pub mode: Mode,
    /// Every process of the probe opens the database with WRITEMAP (they
    /// must agree: the lock file records it).
    pub write_map: bool,
    /// The rdbx actors' dirty-page budget, when small (their transactions
    /// then spill pages; `None`: the default, from the RAM).
    pub dirty_limit: Option<usize>,
    pub size_lower: usize,
    pub size_upper: usize,
    pub growth_step: usize,
    pub shrink_threshold: usize,
    pub actors: Vec<ActorPlan>,
    pub seed: u64,
}

/// The seed of probe `k` of a run.
pub fn probe_seed(seed: u64, k: u64) -> u64 {
    let mut r = Rng::new(seed ^ k.wrapping_mul(0xa076_1d64_78bd_642f));
    r.next_u64()
}

pub fn sample(space: &Space, seed: u64, k: u64) -> ProbeConfig {
    let pseed = probe_seed(seed, k);
    let mut r = Rng::new(pseed);
    let page_size = *r.pick(&space.page_sizes);
    let mode = *r.pick(&space.modes);
    // Drawn apart, so that the rest of a seed's probes stay what they were
    // before WRITEMAP probes existed (`--maps pwrite` repeats them).
    let write_map = *Rng::new(pseed ^ 0x5752_4954_454d_4150).pick(&space.maps);
    // Drawn apart as well: three probes in five spill (a transaction past the
    // budget writes dirty pages out and takes them back when it changes
    // them again).
    let dirty_limit = *Rng::new(pseed ^ 0x4449_5254_594c_494d).pick(&[None, None, Some(16), Some(64), Some(256)]);
    let upper_cap = (space.upto_mb as usize) << 20;
    // A small upper bound (the hill actors run into it), growth and shrink steps.
    let size_upper = *r.pick(&[upper_cap, upper_cap / 2, upper_cap / 4]);
    let size_upper = size_upper.max(page_size * 256).max(1 << 20).min(upper_cap.max(1 << 20));
    let growth_step = (*r.pick(&[16usize, 64, 256, 1024]) * page_size).min(size_upper / 4).max(page_size);
    let shrink_threshold = if r.chance(1, 2) { 0 } else { growth_step * 2 };
    let size_lower = (page_size * 64).min(size_upper);
    // Roles: a reader first when allowed, then every other allowed role in a
    // rotation that starts at a random place, so all of them get turns.
    let mut roles = Vec::new();
    let writers: Vec<Role> = space.roles.iter().copied().filter(|&x| x != Role::Reader).collect();
    if space.roles.contains(&Role::Reader) && (space.processes >= 2 || writers.is_empty()) {
        roles.push(Role::Reader);
    }
    let start = r.below(writers.len().max(1) as u64) as usize;
    let mut i = 0;
    while roles.len() < space.processes {
        if writers.is_empty() {
            roles.push(Role::Reader);
        } else {
            roles.push(writers[(start + i) % writers.len()]);
        }
        i += 1;
    }
    let foreign_slots: Vec<usize> = if space.foreign {
        let cands: Vec<usize> = (0..roles.len()).filter(|&i| FOREIGN_ROLES.contains(&roles[i])).collect();
        if cands.is_empty() {
            // Make one writer foreign (as hill or ttl).
            let w = roles.iter().position(|&x| x != Role::Reader).unwrap_or(0);
            roles[w] = *r.pick(FOREIGN_ROLES);
            vec![w]
        } else {
            cands.into_iter().step_by(2).collect()
        }
    } else {
        Vec::new()
    };
    let actors = roles
        .iter()
        .enumerate()
        .map(|(i, &role)| ActorPlan {
            table: format!("a{i}"),
            role,
            kind: *r.pick(&space.kinds),
            seed: r.next_u64(),
            foreign: foreign_slots.contains(&i),
        })
        .collect();
    ProbeConfig {
        probe: k,
        page_size,
        mode,
        write_map,
        dirty_limit,
        size_lower,
        size_upper,
        growth_step,
        shrink_threshold,
        actors,
        seed: pseed,
    }
}

/// The default page-size sweep.
pub const PAGE_SIZES: &[usize] = &[256, 512, 1024, 2048, 4096, 8192, 16384, 32768, 65536];
