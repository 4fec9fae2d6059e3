//! The reference model of a database (plain `BTreeMap`s, no DUPSORT), the
//! libmdbx key orderings, and a random workload generator that emits an
//! [`ops`](crate::ops) script while updating the model.

use std::cmp::Ordering;
use std::collections::BTreeMap;

use crate::golden::DumpSection;
use crate::ops::Op;
use crate::rng::Rng;

pub const REVERSE_KEY: u32 = 0x02;
pub const DUP_SORT: u32 = 0x04;
pub const INTEGER_KEY: u32 = 0x08;

/// libmdbx's key comparator for a table with `flags` (docs/format.md, "Comparators").
pub fn key_cmp(flags: u32, a: &[u8], b: &[u8]) -> Ordering {
    if flags & INTEGER_KEY != 0 && a.len() == b.len() && (a.len() == 4 || a.len() == 8) {
        let n = |x: &[u8]| {
            let mut w = [0u8; 8];
            w[..x.len()].copy_from_slice(x);
            u64::from_le_bytes(w)
        };
        n(a).cmp(&n(b))
    } else if flags & REVERSE_KEY != 0 {
        a.iter().rev().cmp(b.iter().rev())
    } else {
        a.cmp(b)
    }
}

/// Maximum key length of an ordinary table for a page size (docs/format.md, "Size limits").
pub fn max_key_size(page_size: usize) -> usize {
    let space = page_size - 20;
    ((space - 2 - 8) / 2 - 2) / 2 * 2 - 8
}

/// One table of the model.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TableModel {
    pub flags: u32,
    pub map: BTreeMap<Vec<u8>, Vec<u8>>,
}

impl TableModel {
    /// Records in the table's cursor order.
    pub fn ordered(&self) -> Vec<(Vec<u8>, Vec<u8>)> {
        let mut v: Vec<_> = self.map.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
        if self.flags & (INTEGER_KEY | REVERSE_KEY) != 0 {
            v.sort_by(|a, b| key_cmp(self.flags, &a.0, &b.0));
        }
        v
    }
}

/// The whole database: the main table's plain records under `None`, named
/// tables under their names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Model {
    pub tables: BTreeMap<Option<Vec<u8>>, TableModel>,
}

impl Default for Model {
    fn default() -> Self {
        let mut tables = BTreeMap::new();
        tables.insert(None, TableModel::default());
        Model { tables }
    }
}

impl Model {
    /// Apply a script (non-DUPSORT semantics: a put replaces the value).
    pub fn apply(&mut self, ops: &[Op]) {
        for op in ops {
            self.apply_one(op);
        }
    }

    fn apply_one(&mut self, op: &Op) {
        match op {
            Op::Create { table, flags } => {
                self.tables.entry(table.clone()).or_insert_with(|| TableModel { flags: *flags, map: BTreeMap::new() });
            }
            Op::Put { table, key, value, .. } => {
                self.tables.entry(table.clone()).or_default().map.insert(key.clone(), value.clone());
            }
            Op::Del { table, key, .. } => {
                if let Some(t) = self.tables.get_mut(table) {
                    t.map.remove(key);
                }
            }
            Op::Clear { table } => {
                if let Some(t) = self.tables.get_mut(table) {
                    t.map.clear();
                }
            }
            Op::Drop { table } => {
                if table.is_some() {
                    self.tables.remove(table);
                } else if let Some(t) = self.tables.get_mut(table) {
                    t.map.clear();
                }
            }
            Op::Commit => {}
        }
    }

    /// Names of the named tables in main-table order.
    pub fn table_names(&self) -> Vec<Vec<u8>> {
        self.tables.keys().flatten().cloned().collect()
    }

    /// The sections a full dump of this database has, in the layout of
    /// [`crate::oracle::dump_sections`]: main-table plain records first (if any,
    /// or if there is no named table), then each named table.
    pub fn sections(&self) -> Vec<DumpSection> {
        let mut out = Vec::new();
        let main = self.tables.get(&None).cloned().unwrap_or_default();
        if !main.map.is_empty() || self.tables.len() == 1 {
            let mut s = DumpSection::new(None, 0);
            s.records = main.ordered();
            out.push(s);
        }
        for (name, t) in &self.tables {
            if let Some(n) = name {
                let mut s = DumpSection::new(Some(n), t.flags);
                s.records = t.ordered();
                out.push(s);
            }
        }
        out
    }

    /// Total number of records.
    pub fn len(&self) -> usize {
        self.tables.values().map(|t| t.map.len()).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

fn hex_short(b: &[u8]) -> String {
    let mut s: String = b.iter().take(32).map(|x| format!("{x:02x}")).collect();
    if b.len() > 32 {
        s.push_str(&format!("..({} bytes)", b.len()));
    }
    if b.is_empty() {
        s.push_str("<empty>");
    }
    s
}

/// Describe the first difference between two record lists, or `None` if equal.
pub fn diff_records(what: &str, expected: &[(Vec<u8>, Vec<u8>)], got: &[(Vec<u8>, Vec<u8>)]) -> Option<String> {
    if expected == got {
        return None;
    }
    let mut msg = format!("{what}: expected {} records, got {}", expected.len(), got.len());
    for (i, (e, g)) in expected.iter().zip(got).enumerate() {
        if e != g {
            if e.0 != g.0 {
                msg.push_str(&format!(
                    "; first difference at #{i}: expected key {}, got key {}",
                    hex_short(&e.0),
                    hex_short(&g.0)
                ));
            } else {
                msg.push_str(&format!(
                    "; first difference at #{i}: key {}: expected value {} ({} bytes), got {} ({} bytes)",
                    hex_short(&e.0),
                    hex_short(&e.1),
                    e.1.len(),
                    hex_short(&g.1),
                    g.1.len()
                ));
            }
            return Some(msg);
        }
    }
    let n = expected.len().min(got.len());
    if expected.len() > n {
        msg.push_str(&format!("; missing from #{n}: key {}", hex_short(&expected[n].0)));
    } else {
        msg.push_str(&format!("; extra from #{n}: key {}", hex_short(&got[n].0)));
    }
    Some(msg)
}

/// Describe the differences between two full dumps (as sections), or `None`.
pub fn diff_sections(expected: &[DumpSection], got: &[DumpSection]) -> Option<String> {
    let names = |s: &[DumpSection]| s.iter().map(|x| x.display_name()).collect::<Vec<_>>();
    if names(expected) != names(got) {
        return Some(format!("tables differ: expected {:?}, got {:?}", names(expected), names(got)));
    }
    let mut msgs = Vec::new();
    for (e, g) in expected.iter().zip(got) {
        if e.flags != g.flags {
            msgs.push(format!("table {}: flags expected {:#x}, got {:#x}", e.display_name(), e.flags, g.flags));
        }
        if let Some(m) = diff_records(&format!("table {}", e.display_name()), &e.records, &g.records) {
            msgs.push(m);
        }
    }
    if msgs.is_empty() {
        None
    } else {
        Some(msgs.join("\n"))
    }
}

/// Parameters of a random workload.
#[derive(Clone, Debug)]
pub struct WorkloadSpec {
    pub seed: u64,
    pub page_size: usize,
    /// Number of write transactions.
    pub txns: usize,
    /// Operations per transaction (puts and deletes).
    pub ops_per_txn: usize,
    /// One value in `large_one_in` is larger than the page size.
    pub large_one_in: u64,
    /// Percentage of operations that delete (after the first transaction).
    pub delete_percent: u64,
    /// Also keep a few plain records in the main table.
    pub main_records: bool,
}

impl WorkloadSpec {
    pub fn new(seed: u64, page_size: usize) -> Self {
        WorkloadSpec {
            seed,
            page_size,
            txns: 6,
            ops_per_txn: 800,
            large_one_in: 40,
            delete_percent: 25,
            main_records: true,
        }
    }
}

/// Tables every workload uses: (name, flags).
pub const WORKLOAD_TABLES: [(&str, u32); 5] =
    [("plain", 0), ("ints64", INTEGER_KEY), ("ints32", INTEGER_KEY), ("rev", REVERSE_KEY), ("cleared", 0)];

/// A table created, filled and dropped within the workload (first phase).
pub const TEMP_TABLE: &str = "temp";

fn gen_key(rng: &mut Rng, table: &str, max_key: usize) -> Vec<u8> {
    match table {
        "ints64" => {
            let n = if rng.chance(1, 2) { rng.below(5000) } else { rng.next_u64() };
            n.to_le_bytes().to_vec()
        }
        "ints32" => {
            let n = if rng.chance(1, 2) { rng.below(5000) as u32 } else { rng.next_u64() as u32 };
            n.to_le_bytes().to_vec()
        }
        "rev" => {
            // Shared suffixes make the reverse order matter.
            let suffixes: [&[u8]; 4] = [b".com", b".org", b"-x", b""];
            let mut k: Vec<u8> = (0..rng.range(1, 12)).map(|_| b'a' + rng.below(26) as u8).collect();
            k.extend_from_slice(suffixes[rng.below(4) as usize]);
            k.truncate(max_key);
            k
        }
        _ => {
            let len = rng.range(1, 32.min(max_key));
            rng.bytes(len)
        }
    }
}

fn gen_value(rng: &mut Rng, spec: &WorkloadSpec) -> Vec<u8> {
    let ps = spec.page_size;
    let len = if rng.below(spec.large_one_in) == 0 {
        rng.range(ps + 1, (ps * 5 / 2).min(200_000).max(ps + 2))
    } else if rng.chance(1, 20) {
        0
    } else if rng.chance(1, 4) {
        rng.range(64, 400.min(ps))
    } else {
        rng.range(1, 64)
    };
    let mut v = rng.bytes(len.min(64));
    // Large values: a cheap pattern after a random head.
    let fill = rng.next_u64() as u8;
    v.resize(len, fill);
    v
}

/// Emit one phase of a random workload (`spec.txns` transactions, separated
/// by `commit`), updating `model`. Tables missing from the model are created
/// first. The first phase on an empty model also includes: a zero-length key
/// with a zero-length value, a key of the maximum length, a table that is
/// filled and then dropped, and a table that is emptied and refilled.
pub fn generate(spec: &WorkloadSpec, model: &mut Model) -> Vec<Op> {
    let mut rng = Rng::new(spec.seed);
    let max_key = max_key_size(spec.page_size);
    let mut ops = Vec::new();
    let first_phase = !model.tables.contains_key(&Some(WORKLOAD_TABLES[0].0.as_bytes().to_vec()));
    let push = |ops: &mut Vec<Op>, model: &mut Model, op: Op| {
        model.apply(std::slice::from_ref(&op));
        ops.push(op);
    };
    for (name, flags) in WORKLOAD_TABLES {
        let t = Some(name.as_bytes().to_vec());
        if !model.tables.contains_key(&t) {
            push(&mut ops, model, Op::Create { table: t, flags });
        }
    }
    if first_phase {
        let plain = Some(b"plain".to_vec());
        push(&mut ops, model, Op::Put { table: plain.clone(), key: vec![], value: vec![], flags: 0 });
        push(
            &mut ops,
            model,
            Op::Put { table: plain.clone(), key: vec![0xee; max_key], value: b"max-key".to_vec(), flags: 0 },
        );
        push(
            &mut ops,
            model,
            Op::Put { table: Some(b"rev".to_vec()), key: vec![b'z'; max_key], value: vec![], flags: 0 },
        );
        let temp = Some(TEMP_TABLE.as_bytes().to_vec());
        push(&mut ops, model, Op::Create { table: temp.clone(), flags: 0 });
        for i in 0..(spec.ops_per_txn / 4).max(10) {
            let v = gen_value(&mut rng, spec);
            push(
                &mut ops,
                model,
                Op::Put { table: temp.clone(), key: format!("temp{i:06}").into_bytes(), value: v, flags: 0 },
            );
        }
    }
    let tables: Vec<&str> = WORKLOAD_TABLES.iter().map(|t| t.0).collect();
    for txn in 0..spec.txns {
        if txn > 0 {
            push(&mut ops, model, Op::Commit);
        }
        if first_phase && txn == 2 {
            push(&mut ops, model, Op::Drop { table: Some(TEMP_TABLE.as_bytes().to_vec()) });
        }
        if txn == spec.txns / 2 {
            push(&mut ops, model, Op::Clear { table: Some(b"cleared".to_vec()) });
        }
        if spec.main_records && rng.chance(1, 2) {
            let k = format!("~main-{:04}", rng.below(20)).into_bytes();
            let v = gen_value(&mut rng, spec);
            push(&mut ops, model, Op::Put { table: None, key: k, value: v, flags: 0 });
        }
        for _ in 0..spec.ops_per_txn {
            let name = tables[rng.below(tables.len() as u64) as usize];
            let table = Some(name.as_bytes().to_vec());
            let existing = &model.tables[&table].map;
            let delete = (txn > 0 || !first_phase) && !existing.is_empty() && rng.below(100) < spec.delete_percent;
            if delete {
                // Delete an existing key (picked by a random lower bound), or
                // now and then a missing one.
                let probe = gen_key(&mut rng, name, max_key);
                let key = existing
                    .range(probe.clone()..)
                    .next()
                    .or_else(|| existing.iter().next())
                    .map(|(k, _)| k.clone())
                    .unwrap_or(probe);
                let key = if rng.chance(1, 20) { gen_key(&mut rng, name, max_key) } else { key };
                push(&mut ops, model, Op::Del { table, key, value: None });
            } else {
                // Overwrite an existing key now and then (value sizes change).
                let key = if !existing.is_empty() && rng.chance(1, 5) {
                    let probe = gen_key(&mut rng, name, max_key);
                    existing.range(probe.clone()..).next().map(|(k, _)| k.clone()).unwrap_or(probe)
                } else {
                    gen_key(&mut rng, name, max_key)
                };
                let value = gen_value(&mut rng, spec);
                push(&mut ops, model, Op::Put { table, key, value, flags: 0 });
            }
        }
    }
    ops
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn max_key_sizes_match_the_format_doc() {
        for (ps, k) in [(256, 102), (1024, 486), (4096, 2022), (16384, 8166), (65536, 32742)] {
            assert_eq!(max_key_size(ps), k, "page size {ps}");
        }
    }

    #[test]
    fn comparators() {
        let mut v: Vec<&[u8]> = vec![b"ab", b"zzza", b"a", b"ba"];
        v.sort_by(|a, b| key_cmp(REVERSE_KEY, a, b));
        assert_eq!(v, vec![&b"a"[..], b"ba", b"zzza", b"ab"]);
        let a = 256u32.to_le_bytes();
        let b = 2u32.to_le_bytes();
        assert_eq!(key_cmp(INTEGER_KEY, &a, &b), Ordering::Greater);
    }

    #[test]
    fn workload_is_deterministic_and_matches_its_model() {
        let spec = WorkloadSpec::new(7, 4096);
        let mut m1 = Model::default();
        let ops1 = generate(&spec, &mut m1);
        let mut m2 = Model::default();
        let ops2 = generate(&spec, &mut m2);
        assert_eq!(ops1, ops2);
        let mut m3 = Model::default();
        m3.apply(&ops1);
        assert_eq!(m1, m3);
        assert!(m1.len() > 1000, "{}", m1.len());
        assert!(!m1.tables.contains_key(&Some(TEMP_TABLE.as_bytes().to_vec())));
    }

    #[test]
    fn oracle_runs_a_workload_and_agrees_with_the_model() {
        let tmp = tempfile::tempdir().unwrap();
        for ps in [256usize, 4096] {
            let path = tmp.path().join(format!("w{ps}"));
            let mut model = Model::default();
            let mut spec = WorkloadSpec::new(ps as u64, ps);
            spec.ops_per_txn = 300;
            let ops = generate(&spec, &mut model);
            let env = crate::oracle::Env::open(
                &path,
                &crate::oracle::EnvOptions {
                    page_size: Some(ps),
                    durability: crate::oracle::Durability::SafeNoSync,
                    ..Default::default()
                },
            )
            .unwrap();
            crate::ops::apply_oracle(&env, &ops).unwrap();
            let txn = env.begin_ro().unwrap();
            let got = crate::oracle::dump_sections(&txn).unwrap();
            if let Some(d) = diff_sections(&model.sections(), &got) {
                panic!("page size {ps}: {d}");
            }
            drop(txn);
            env.close().unwrap();
            let s = crate::oracle::chk(&path).unwrap();
            assert!(s.is_clean(), "{}", s.report());
        }
    }
}
