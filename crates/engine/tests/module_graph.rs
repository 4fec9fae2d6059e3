//! The module graph of the engine crate, read from its sources: which module
//! uses which (`crate::…` and `super::…` paths, `use` trees included), and
//! the rules of the layering (docs/design.md, "Module map"):
//!
//! * the read side of the trees (`btree`, `btree::pages`, `cursor`, `walk`,
//!   `verify`, `estimate`) depends on no transaction, GC, environment, lock
//!   file or reader table;
//! * the tree editors (`btree::write`, `btree::dupsort`) and their write
//!   context (`btree::writer`) depend on no transaction, GC or environment:
//!   they see a write transaction only through the `TreeWriter` trait;
//! * the only cycle across layers is the environment, the transactions and
//!   the GC using each other; the others stay inside one layer (see
//!   `ALLOWED_CYCLES`).
//!
//! Dependencies are followed transitively, and through re-exports
//! (`pub use`), so `crate::Error` counts as a use of `error`. Comments,
//! string and character literals are ignored.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The strongly connected components with more than one module that may
/// exist; an actual one must lie inside one of these.
///
/// The first is the inherent one: the environment opens transactions and
/// keeps their shared state (`iter`'s `ReadTxn` is implemented by the
/// transactions, `readers` reports on the environment's reader table), a
/// write transaction allocates through the GC and commits its records, and
/// the GC works on the transaction's lists and the reader table. The tree
/// editors are not part of it: the transaction implements their write
/// context (`txn::tree_writer` implements `btree::writer::TreeWriter`), so
/// `txn` and `gc` use the editors and nothing leads back.
///
/// The others are a parent and child, or two siblings, of one layer calling
/// each other, never across layers: `btree::get` reads a multimap value with
/// a cursor; `write::put`/`del` hand multimap tables to `dupsort`, which edits
/// with `write`'s path helpers; the shared region of `os::mmap` hands out
/// `os::mutex` handles that borrow it.
const ALLOWED_CYCLES: &[&[&str]] = &[
    &[
        "env",
        "env::inner",
        "gc",
        "iter",
        "readers",
        "txn",
        "txn::commit",
        "txn::nested",
        "txn::page_ops",
        "txn::spill",
        "txn::tree_writer",
        "txn::write_cursor",
    ],
    &["btree", "btree::cursor"],
    &["btree::write", "btree::dupsort"],
    &["os::mmap", "os::mutex"],
];

const READ_SIDE: &[&str] =
    &["btree", "btree::pages", "btree::cursor", "btree::walk", "btree::verify", "btree::estimate"];
const READ_SIDE_MUST_NOT_REACH: &[&str] = &["txn", "gc", "env", "lck", "readers"];
const EDITORS: &[&str] = &["btree::write", "btree::dupsort", "btree::writer"];
const EDITORS_MUST_NOT_REACH: &[&str] = &["txn", "gc", "env"];

/// A parsed crate: modules (`a::b`, the root is `crate`) with their source.
struct Crate {
    modules: BTreeMap<String, String>,
}

fn rs_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).expect("read src dir") {
        let p = e.expect("dir entry").path();
        if p.is_dir() {
            rs_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

fn module_name(src: &Path, file: &Path) -> String {
    let rel = file.strip_prefix(src).expect("under src");
    let mut parts: Vec<String> = rel.iter().map(|s| s.to_string_lossy().into_owned()).collect();
    let last = parts.pop().expect("file name");
    let stem = last.trim_end_matches(".rs").to_string();
    if stem != "mod" && stem != "lib" {
        parts.push(stem);
    }
    if parts.is_empty() {
        "crate".to_string()
    } else {
        parts.join("::")
    }
}

/// The code of a file without comments, string and character literals
/// (replaced by spaces, so braces in them do not count).
fn strip(src: &str) -> String {
    let b = src.as_bytes();
    let mut out = String::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if c == b'/' && b.get(i + 1) == Some(&b'/') {
            while i < b.len() && b[i] != b'\n' {
                i += 1;
            }
            continue;
        }
        if c == b'/' && b.get(i + 1) == Some(&b'*') {
            let mut depth = 0;
            while i < b.len() {
                if b[i] == b'/' && b.get(i + 1) == Some(&b'*') {
                    depth += 1;
                    i += 2;
                } else if b[i] == b'*' && b.get(i + 1) == Some(&b'/') {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
            out.push(' ');
            continue;
        }
        // Raw strings r"…", r#"…"#, br"…".
        if (c == b'r' || (c == b'b' && b.get(i + 1) == Some(&b'r')))
            && (i == 0 || !(b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_'))
        {
            let mut j = if c == b'b' { i + 2 } else { i + 1 };
            let mut hashes = 0;
            while b.get(j) == Some(&b'#') {
                hashes += 1;
                j += 1;
            }
            if b.get(j) == Some(&b'"') {
                j += 1;
                let close: Vec<u8> = std::iter::once(b'"').chain(std::iter::repeat_n(b'#', hashes)).collect();
                while j < b.len() && !b[j..].starts_with(&close) {
                    j += 1;
                }
                i = j + close.len();
                out.push_str("\"\"");
                continue;
            }
        }
        if c == b'"' {
            i += 1;
            while i < b.len() && b[i] != b'"' {
                if b[i] == b'\\' {
                    i += 1;
                }
                i += 1;
            }
            i += 1;
            out.push_str("\"\"");
            continue;
        }
        if c == b'\'' {
            // A character literal ('x', '\n', '\u{..}'), not a lifetime.
            if b.get(i + 1) == Some(&b'\\') {
                let mut j = i + 2;
                while j < b.len() && b[j] != b'\'' {
                    j += 1;
                }
                i = j + 1;
                out.push_str("' '");
                continue;
            }
            let ch_len = src[i + 1..].chars().next().map_or(1, char::len_utf8);
            if b.get(i + 1 + ch_len) == Some(&b'\'') {
                i += 2 + ch_len;
                out.push_str("' '");
                continue;
            }
        }
        out.push(c as char);
        i += 1;
    }
    out
}

fn is_ident(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_'
}

/// Parses a path (or use tree) starting at `i` after `prefix::`, adding every
/// full path to `out`. Returns the index after it.
fn parse_tree(b: &[u8], mut i: usize, prefix: &[String], out: &mut Vec<Vec<String>>) -> usize {
    let skip_ws = |mut i: usize| {
        while i < b.len() && b[i].is_ascii_whitespace() {
            i += 1;
        }
        i
    };
    i = skip_ws(i);
    if b.get(i) == Some(&b'{') {
        i += 1;
        loop {
            i = skip_ws(i);
            match b.get(i) {
                None => return i,
                Some(b'}') => return i + 1,
                Some(b',') => i += 1,
                _ => {
                    let before = i;
                    i = parse_tree(b, i, prefix, out);
                    if i == before {
                        i += 1;
                    }
                }
            }
        }
    }
    let start = i;
    while i < b.len() && is_ident(b[i]) {
        i += 1;
    }
    if start == i {
        // `*` or something else: the prefix itself.
        if b.get(i) == Some(&b'*') {
            out.push(prefix.to_vec());
            return i + 1;
        }
        return i;
    }
    let seg = String::from_utf8_lossy(&b[start..i]).into_owned();
    let mut path = prefix.to_vec();
    if seg != "self" {
        path.push(seg);
    }
    let j = skip_ws(i);
    if b[j..].starts_with(b"::") {
        return parse_tree(b, j + 2, &path, out);
    }
    out.push(path);
    // A renaming (`x as y`) names nothing more.
    if b[j..].starts_with(b"as") && b.get(j + 2).is_some_and(u8::is_ascii_whitespace) {
        let mut k = skip_ws(j + 2);
        while k < b.len() && is_ident(b[k]) {
            k += 1;
        }
        return k;
    }
    i
}

/// Every path a module's code names through `crate::` or `super::`, as
/// absolute module paths (segments after `crate`). Inline modules
/// (`mod tests { … }`) are followed so `super::` resolves correctly.
fn paths_of(module: &str, code: &str, children: &[String]) -> Vec<Vec<String>> {
    let b = code.as_bytes();
    let base: Vec<String> = if module == "crate" { vec![] } else { module.split("::").map(String::from).collect() };
    // Inline module stack: (name, brace depth at which it opened).
    let mut inline: Vec<(String, usize)> = Vec::new();
    let mut depth = 0usize;
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if c == b'{' {
            depth += 1;
            i += 1;
            continue;
        }
        if c == b'}' {
            depth = depth.saturating_sub(1);
            if inline.last().is_some_and(|m| m.1 == depth) {
                inline.pop();
            }
            i += 1;
            continue;
        }
        let word_start = i == 0 || !is_ident(b[i - 1]);
        if word_start && b[i..].starts_with(b"mod ") {
            let mut j = i + 4;
            let s = j;
            while j < b.len() && is_ident(b[j]) {
                j += 1;
            }
            let name = String::from_utf8_lossy(&b[s..j]).into_owned();
            while j < b.len() && b[j].is_ascii_whitespace() {
                j += 1;
            }
            if b.get(j) == Some(&b'{') {
                inline.push((name, depth));
                depth += 1;
                i = j + 1;
                continue;
            }
        }
        if word_start && b[i..].starts_with(b"crate::") {
            i = parse_tree(b, i + 7, &[], &mut out);
            continue;
        }
        // A path through a child module of this file (`commit::commit(..)`,
        // `use nested::Frame`), outside inline modules.
        if word_start
            && inline.is_empty()
            && (i == 0 || b[i - 1] != b':')
            && children.iter().any(|c| b[i..].starts_with(format!("{c}::").as_bytes()))
        {
            i = parse_tree(b, i, &base, &mut out);
            continue;
        }
        if word_start && b[i..].starts_with(b"super::") {
            let mut here: Vec<String> = base.clone();
            here.extend(inline.iter().map(|m| m.0.clone()));
            let mut j = i;
            while b[j..].starts_with(b"super::") {
                here.pop();
                j += 7;
            }
            i = parse_tree(b, j, &here, &mut out);
            continue;
        }
        i += 1;
    }
    out
}

impl Crate {
    fn load() -> Crate {
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        let mut files = Vec::new();
        rs_files(&src, &mut files);
        let modules = files
            .iter()
            .map(|f| (module_name(&src, f), strip(&std::fs::read_to_string(f).expect("read source"))))
            .collect();
        Crate { modules }
    }

    /// The module (file) a path lands in: the longest prefix that is a
    /// module; a name a module re-exports (`pub use`, `pub(crate) use`) is
    /// followed to its source.
    fn resolve(&self, path: &[String], exports: &BTreeMap<String, BTreeMap<String, Vec<String>>>) -> String {
        let mut path = path.to_vec();
        for _ in 0..8 {
            let mut k = path.len();
            let module = loop {
                let name = if k == 0 { "crate".to_string() } else { path[..k].join("::") };
                if self.modules.contains_key(&name) {
                    break name;
                }
                k -= 1;
            };
            match path.get(k).and_then(|next| exports.get(&module).and_then(|m| m.get(next))) {
                Some(target) => {
                    let mut p = target.clone();
                    p.extend_from_slice(&path[k + 1..]);
                    path = p;
                }
                None => return module,
            }
        }
        panic!("re-exports do not end: {path:?}");
    }

    /// The names of the child modules of `m` that have files.
    fn children(&self, m: &str) -> Vec<String> {
        let prefix = if m == "crate" { String::new() } else { format!("{m}::") };
        self.modules
            .keys()
            .filter_map(|k| k.strip_prefix(&prefix).filter(|rest| !rest.contains("::") && k != m))
            .map(String::from)
            .collect()
    }

    /// Names each module re-exports, with the absolute path they stand for.
    fn exports(&self) -> BTreeMap<String, BTreeMap<String, Vec<String>>> {
        let mut all = BTreeMap::new();
        for (m, code) in &self.modules {
            let base: Vec<String> = if m == "crate" { vec![] } else { m.split("::").map(String::from).collect() };
            let mut map = BTreeMap::new();
            for stmt in code.split(';') {
                let s = stmt.trim();
                let rest = ["pub use ", "pub(crate) use ", "pub(super) use "].iter().find_map(|p| s.strip_prefix(p));
                let Some(rest) = rest else { continue };
                let rest = rest.trim();
                let (start, prefix): (&str, Vec<String>) = if let Some(r) = rest.strip_prefix("crate::") {
                    (r, vec![])
                } else if let Some(r) = rest.strip_prefix("super::") {
                    let mut p = base.clone();
                    p.pop();
                    (r, p)
                } else if let Some(r) = rest.strip_prefix("self::") {
                    (r, base.clone())
                } else {
                    // A child module's item (`pub use nested::NestedTxn`).
                    (rest, base.clone())
                };
                let mut paths = Vec::new();
                parse_tree(start.as_bytes(), 0, &prefix, &mut paths);
                for p in paths {
                    if let Some(last) = p.last() {
                        map.insert(last.clone(), p.clone());
                    }
                }
            }
            all.insert(m.clone(), map);
        }
        all
    }

    fn graph(&self) -> BTreeMap<String, BTreeSet<String>> {
        let exports = self.exports();
        let mut g = BTreeMap::new();
        for (m, code) in &self.modules {
            let children = self.children(m);
            let deps: BTreeSet<String> =
                paths_of(m, code, &children).iter().map(|p| self.resolve(p, &exports)).filter(|d| d != m).collect();
            g.insert(m.clone(), deps);
        }
        g
    }
}

fn reach(g: &BTreeMap<String, BTreeSet<String>>, from: &str) -> BTreeMap<String, String> {
    // Module -> the module through which it was first reached.
    let mut seen = BTreeMap::new();
    let mut stack = vec![from.to_string()];
    while let Some(m) = stack.pop() {
        for d in g.get(&m).into_iter().flatten() {
            if d != from && !seen.contains_key(d) {
                seen.insert(d.clone(), m.clone());
                stack.push(d.clone());
            }
        }
    }
    seen
}

fn chain(seen: &BTreeMap<String, String>, from: &str, to: &str) -> String {
    let mut v = vec![to.to_string()];
    let mut at = to.to_string();
    while let Some(p) = seen.get(&at) {
        if p == from {
            break;
        }
        v.push(p.clone());
        at = p.clone();
    }
    v.push(from.to_string());
    v.reverse();
    v.join(" -> ")
}

fn in_area(m: &str, area: &str) -> bool {
    m == area || m.starts_with(&format!("{area}::"))
}

fn violations(g: &BTreeMap<String, BTreeSet<String>>, from: &[&str], forbidden: &[&str]) -> Vec<String> {
    let mut bad = Vec::new();
    for &m in from {
        if !g.contains_key(m) {
            bad.push(format!("{m}: no such module"));
            continue;
        }
        let seen = reach(g, m);
        for d in seen.keys() {
            if forbidden.iter().any(|f| in_area(d, f)) {
                bad.push(chain(&seen, m, d));
            }
        }
    }
    bad
}

/// Tarjan's strongly connected components.
fn sccs(g: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    struct St<'a> {
        g: &'a BTreeMap<String, BTreeSet<String>>,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        on: BTreeSet<&'a str>,
        stack: Vec<&'a str>,
        out: Vec<Vec<String>>,
    }
    fn visit<'a>(s: &mut St<'a>, v: &'a str) {
        let n = s.index.len();
        s.index.insert(v, n);
        s.low.insert(v, n);
        s.stack.push(v);
        s.on.insert(v);
        let g = s.g;
        for w in g.get(v).into_iter().flatten() {
            let w = w.as_str();
            if !g.contains_key(w) {
                continue;
            }
            if !s.index.contains_key(w) {
                visit(s, w);
                let lw = s.low[w];
                let lv = s.low.get_mut(v).unwrap();
                *lv = (*lv).min(lw);
            } else if s.on.contains(w) {
                let iw = s.index[w];
                let lv = s.low.get_mut(v).unwrap();
                *lv = (*lv).min(iw);
            }
        }
        if s.low[v] == s.index[v] {
            let mut comp = Vec::new();
            loop {
                let w = s.stack.pop().unwrap();
                s.on.remove(w);
                comp.push(w.to_string());
                if w == v {
                    break;
                }
            }
            comp.sort();
            s.out.push(comp);
        }
    }
    let mut s =
        St { g, index: BTreeMap::new(), low: BTreeMap::new(), on: BTreeSet::new(), stack: Vec::new(), out: Vec::new() };
    for v in g.keys() {
        if !s.index.contains_key(v.as_str()) {
            visit(&mut s, v);
        }
    }
    s.out
}

#[test]
fn parser_understands_use_trees_and_super() {
    let code = strip(
        "use crate::a::{self, b::{C, d}, e as f};\n\
         // crate::commented::Out\n\
         let s = \"crate::in_string\"; let c = '{';\n\
         mod tests { use super::*; use super::super::x::Y; }\n\
         fn f<'a>(x: &'a u8) { crate::g::h(); super::sib::k(); kid::run(); other::kid::no(); }",
    );
    let got: BTreeSet<String> = paths_of("m::n", &code, &["kid".to_string()]).iter().map(|p| p.join("::")).collect();
    let want: BTreeSet<String> =
        ["a", "a::b::C", "a::b::d", "a::e", "m::n", "m::x::Y", "g::h", "m::sib::k", "m::n::kid::run"]
            .iter()
            .map(|s| s.to_string())
            .collect();
    assert_eq!(got, want);
}

#[test]
fn read_side_of_btree_stays_below_transactions() {
    let g = Crate::load().graph();
    let bad = violations(&g, READ_SIDE, READ_SIDE_MUST_NOT_REACH);
    assert!(bad.is_empty(), "the read side of btree reaches what it must not:\n{}", bad.join("\n"));
}

#[test]
fn tree_editors_see_only_the_writer_trait() {
    let g = Crate::load().graph();
    let bad = violations(&g, EDITORS, EDITORS_MUST_NOT_REACH);
    assert!(bad.is_empty(), "the tree editors reach what they must not:\n{}", bad.join("\n"));
}

#[test]
fn only_cycles_are_env_txn_gc_and_within_layers() {
    let g = Crate::load().graph();
    let comps = sccs(&g);
    let cyclic: Vec<&Vec<String>> = comps.iter().filter(|c| c.len() > 1).collect();
    println!("strongly connected components with more than one module:");
    for c in &cyclic {
        println!("  {}", c.join(", "));
    }
    let bad: Vec<&&Vec<String>> =
        cyclic.iter().filter(|c| !ALLOWED_CYCLES.iter().any(|a| c.iter().all(|m| a.contains(&m.as_str())))).collect();
    assert!(bad.is_empty(), "module cycles beyond the allowed ones ({ALLOWED_CYCLES:?}): {bad:?}");
    // The editors and the read side stay off the transaction's cycle.
    for e in EDITORS.iter().chain(READ_SIDE) {
        let c = cyclic.iter().find(|c| c.iter().any(|m| m == e));
        assert!(c.is_none_or(|c| c.iter().all(|m| in_area(m, "btree"))), "{e} is on a cycle: {c:?}");
    }
}
