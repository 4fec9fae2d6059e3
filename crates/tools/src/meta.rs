//! `meta` (the three meta pages; `--use N` makes an older intact one the
//! current one, as `mdbx_chk -0/-1/-2 -t -w` does) and `page N` (one page
//! decoded, with the tree and level it belongs to).

use std::io::{BufRead, IsTerminal, Write};
use std::path::PathBuf;

use clap::Args;
use rdbx::inspect::{self, MetaList, MetaSlot, NodeValue, PageOwner};
use rdbx::CheckOptions;
use serde_json::{json, Map, Value};

use crate::common::{self, locate, open_env, ToolError, INTERRUPTED_MSG, PROG};

const META_HELP: &str = "\
Without --use: the three meta pages read straight from the data file (no
lock taken, nothing written): txnid (both copies), signature (steady, weak),
validity, role (head = the current snapshot, tail = the slot of the next
commit), geometry, the roots of the GC and main trees.

--use N (0, 1 or 2) rescues a database whose newest commit is damaged: it
opens the database read-write and exclusively (refused while another
process has it open), checks the snapshot of meta N completely (as chk -N;
refused if any problem is found or the meta is not intact), and makes it
the current one: meta N gets a txnid above every valid meta and a steady
signature, metas that are not valid are wiped (txnid 0); valid newer ones
stay but are older than it. The commits after meta N's are dropped. It
asks for confirmation on a terminal; elsewhere it needs --force. (Same as
`rdbx-tools chk -w -N -t` and libmdbx's mdbx_env_turn_for_recovery.)

EXIT STATUS: 0 success (--use: turned, or already current), 1 any failure
(usage, not intact, in use, refused confirmation).";

const PAGE_HELP: &str = "\
Page N of the data file decoded: header (txnid, type, entries, free bytes),
then every node (key, and value, child page, large value, table descriptor,
or the values of a multimap key); keys and values are text when printable,
else 0x and hex (long ones shortened unless --full). Also which structure
of the current snapshot the page belongs to: a table's tree and its level
(1 = root), a large value, the GC tree, a GC record (free), the unallocated
tail, or nothing (lost or leaked, see chk). Read-only.

EXIT STATUS: 0 success, 1 any failure.";

/// Arguments of `meta`.
#[derive(Args, Debug)]
#[command(after_help = META_HELP)]
pub struct MetaArgs {
    /// Make meta N (0, 1, 2) the current one (writes; see below)
    #[arg(long = "use", value_name = "N", value_parser = clap::value_parser!(u8).range(0..3))]
    use_meta: Option<u8>,
    /// With --use: do not ask for confirmation
    #[arg(long)]
    force: bool,
    /// Print one JSON object
    #[arg(long)]
    json: bool,
    /// Database directory or data file
    path: PathBuf,
}

/// Arguments of `page`.
#[derive(Args, Debug)]
#[command(after_help = PAGE_HELP)]
pub struct PageArgs {
    /// Page number
    pgno: u32,
    /// Database directory or data file
    path: PathBuf,
    /// Keys and values in full (not shortened)
    #[arg(long)]
    full: bool,
    /// Print one JSON object
    #[arg(long)]
    json: bool,
}

fn fail(json: bool, what: &str, e: &ToolError) -> u8 {
    if json {
        common::json_error(json!({}), e.code, &e.msg);
    }
    eprintln!("{PROG} {what}: {e}");
    1
}

pub fn run_meta(a: MetaArgs) -> u8 {
    let r = match a.use_meta {
        None => show_metas(&a),
        Some(n) => use_meta(&a, n as usize),
    };
    match r {
        Ok(()) => 0,
        Err(e) => fail(a.json, "meta", &e),
    }
}

fn tree_json(t: &rdbx::format::tree::Tree) -> Value {
    json!({"root": t.root, "height": t.height, "flags": t.flags, "branch_pages": t.branch_pages, "leaf_pages": t.leaf_pages,
           "large_pages": t.large_pages, "items": t.items, "sequence": t.sequence, "mod_txnid": t.mod_txnid})
}

fn slot_json(s: &MetaSlot) -> Value {
    let m = &s.meta;
    let g = &m.geo;
    json!({
        "index": s.index, "role": s.role, "valid": s.valid, "error": s.error, "signature": s.signature,
        "txnid": if s.valid { Some(m.txnid()) } else { None }, "txnid_a": m.txnid_a, "txnid_b": m.txnid_b,
        "magic_version": format!("{:#x}", m.magic),
        "geometry_pages": {"lower": g.lower, "now": g.now, "upper": g.upper,
                            "grow": rdbx::format::meta::pv2pages(g.grow_pv), "shrink": rdbx::format::meta::pv2pages(g.shrink_pv),
                            "first_unallocated": g.first_unallocated},
        "gc": tree_json(&m.gc), "main": tree_json(&m.main),
        "canary": m.canary, "pages_retired": m.pages_retired, "bootid": rdbx::to_hex(&m.bootid),
    })
}

fn hint(path: &std::path::Path, l: &MetaList) -> Option<String> {
    let d = l.damaged_newer()?;
    Some(format!(
        "meta {} is damaged ({}) and may have held a newer commit than the current meta {} (txn {}); \
         if that commit is lost, `{PROG} meta --use {} {}` makes the current snapshot steady and the head \
         (check it first with `{PROG} chk -{} {}`)",
        d.index,
        d.error.clone().unwrap_or_default(),
        l.head,
        l.slots[l.head].meta.txnid(),
        l.head,
        path.display(),
        l.head,
        path.display()
    ))
}

fn show_metas(a: &MetaArgs) -> Result<(), ToolError> {
    let t = locate(&a.path)?;
    let l = common::read_metas(&t)?;
    if a.json {
        println!(
            "{}",
            json!({
                "path": a.path.display().to_string(), "page_size": l.page_size, "file_size": l.file_size,
                "head": l.head, "steady": l.steady, "metas": l.slots.iter().map(slot_json).collect::<Vec<_>>(),
                "hint": hint(&a.path, &l),
            })
        );
        return Ok(());
    }
    let ps = l.page_size as u64;
    println!("page size {}, data file {} bytes ({} pages)", l.page_size, l.file_size, l.file_size / ps);
    for s in &l.slots {
        let m = &s.meta;
        if !s.valid {
            println!(
                "meta {}: invalid: {} (txnid_a {}, txnid_b {}, signature {})",
                s.index,
                s.error.clone().unwrap_or_default(),
                m.txnid_a,
                m.txnid_b,
                s.signature
            );
            continue;
        }
        println!("meta {}: {}, txn {}, {}", s.index, s.role, m.txnid(), s.signature);
        let g = &m.geo;
        println!(
            "    geometry: lower {} now {} upper {} pages, grow {} shrink {} pages, first unallocated {}",
            g.lower,
            g.now,
            g.upper,
            rdbx::format::meta::pv2pages(g.grow_pv),
            rdbx::format::meta::pv2pages(g.shrink_pv),
            g.first_unallocated
        );
        for (name, tr) in [("gc", &m.gc), ("main", &m.main)] {
            let root = if tr.root == rdbx::format::P_INVALID { "-".to_string() } else { tr.root.to_string() };
            println!(
                "    {name}: root {root}, height {}, {} items; pages: {} branch, {} leaf, {} large",
                tr.height, tr.items, tr.branch_pages, tr.leaf_pages, tr.large_pages
            );
        }
        println!("    pages retired {}, canary {:?}", m.pages_retired, m.canary);
    }
    if let Some(h) = hint(&a.path, &l) {
        println!("note: {h}");
    }
    Ok(())
}

fn use_meta(a: &MetaArgs, n: usize) -> Result<(), ToolError> {
    let t = locate(&a.path)?;
    let before = common::read_metas(&t)?;
    let slot = &before.slots[n];
    if !slot.valid {
        return Err(ToolError::sys(
            libc::EINVAL,
            format!(
                "{}: meta {n} is not intact ({}): it cannot become the current one",
                a.path.display(),
                slot.error.clone().unwrap_or_default()
            ),
        ));
    }
    let txnid = slot.meta.txnid();
    if before.head == n && before.damaged_newer().is_none() && slot.signature == "steady" {
        if !a.json {
            println!("meta {n} (txn {txnid}) is already the current steady meta: nothing to do");
        } else {
            println!("{}", json!({"path": a.path.display().to_string(), "meta": n, "txnid": txnid, "turned": false}));
        }
        return Ok(());
    }
    let newest = before.slots.iter().map(|s| s.meta.txnid_a.max(s.meta.txnid_b)).max().unwrap_or(0);
    if !a.force {
        if !std::io::stdin().is_terminal() {
            return Err(ToolError::sys(
                libc::EINVAL,
                format!("{}: making meta {n} (txn {txnid}) the current one drops the commits after it; confirm on a terminal or pass --force", a.path.display()),
            ));
        }
        eprint!(
            "Make meta {n} (txn {txnid}) the current snapshot of {}? Commits after it (up to txn {newest}) are dropped. [y/N] ",
            a.path.display()
        );
        let _ = std::io::stderr().flush();
        let mut line = String::new();
        let _ = std::io::stdin().lock().read_line(&mut line);
        if !matches!(line.trim(), "y" | "Y" | "yes") {
            return Err(ToolError::sys(libc::ECANCELED, "not confirmed: nothing was changed"));
        }
    }
    let env = open_env(&t, false)?;
    if !env.opened_exclusively() {
        return Err(ToolError::sys(
            libc::EBUSY,
            format!(
                "{}: another process has the database open; close it first (meta --use needs exclusive access)",
                a.path.display()
            ),
        ));
    }
    let opts = CheckOptions {
        meta: Some(n),
        turn: true,
        force_turn: false,
        interrupt: Some(common::interrupt_flag()),
        ..Default::default()
    };
    let report = env.check(&opts, &mut |_| {}).map_err(|e| match &e {
        rdbx::Error::Io(io) if io.kind() == std::io::ErrorKind::Interrupted => {
            ToolError::sys(libc::EINTR, INTERRUPTED_MSG)
        }
        _ => ToolError::engine(&e, a.path.display()),
    })?;
    if !report.turned {
        let mut msg = format!(
            "{}: the snapshot of meta {n} (txn {txnid}) has {} problem(s); not turned to it:",
            a.path.display(),
            report.problem_count()
        );
        for p in report.problems.iter().take(10) {
            msg.push_str(&format!("\n  {}", p.message));
        }
        return Err(ToolError::sys(libc::EINVAL, msg));
    }
    drop(env);
    let after = common::read_metas(&t)?;
    let new_txnid = after.slots[after.head].meta.txnid();
    if a.json {
        println!(
            "{}",
            json!({"path": a.path.display().to_string(), "meta": n, "txnid": txnid, "new_txnid": new_txnid, "turned": true,
                   "metas": after.slots.iter().map(slot_json).collect::<Vec<_>>()})
        );
    } else {
        println!(
            "meta {n} (the snapshot of txn {txnid}) is now the current steady meta, as txn {new_txnid}; checked clean before turning"
        );
    }
    Ok(())
}

pub fn run_page(a: PageArgs) -> u8 {
    match page(&a) {
        Ok(()) => 0,
        Err(e) => fail(a.json, "page", &e),
    }
}

fn shown(b: &[u8], full: bool) -> String {
    if full || b.len() <= 48 {
        return common::render(b);
    }
    format!("{}... ({} bytes)", common::render(&b[..32]), b.len())
}

fn owner_text(o: &PageOwner) -> String {
    let label = |t: &Option<Vec<u8>>| common::table_label(t.as_deref());
    match o {
        PageOwner::Meta(i) => format!("meta page {i}"),
        PageOwner::Tree { gc: true, level, height, .. } => format!("the GC tree, level {level} of {height}"),
        PageOwner::Tree { table, level, height, nested_key: None, .. } => {
            format!("table {}, level {level} of {height}{}", label(table), if level == height { " (leaf)" } else { "" })
        }
        PageOwner::Tree { table, level, height, nested_key: Some(k), .. } => format!(
            "table {}, the nested tree of the values of key {}, level {level} of {height}",
            label(table),
            common::render(k)
        ),
        PageOwner::Large { table, key, head, pages } => {
            format!(
                "table {}, the large value of key {} (pages {head}..{})",
                label(table),
                common::render(key),
                head + pages - 1
            )
        }
        PageOwner::Free { txnid } => format!("free: listed in the GC record of txn {txnid}"),
        PageOwner::Unallocated => "nothing: the unallocated tail of the file".into(),
        PageOwner::Unreferenced => "nothing: allocated but unreferenced (lost or leaked; see chk)".into(),
    }
}

fn owner_json(o: &PageOwner) -> Value {
    let name = |t: &Option<Vec<u8>>| t.as_ref().map(|n| String::from_utf8_lossy(n).into_owned());
    match o {
        PageOwner::Meta(i) => json!({"kind": "meta", "meta": i}),
        PageOwner::Tree { gc, table, level, height, nested_key } => json!({
            "kind": if *gc { "gc-tree" } else { "tree" }, "table": name(table), "main": !gc && table.is_none(),
            "level": level, "height": height, "nested_key_hex": nested_key.as_ref().map(|k| rdbx::to_hex(k)),
        }),
        PageOwner::Large { table, key, head, pages } => json!({
            "kind": "large", "table": name(table), "main": table.is_none(), "key_hex": rdbx::to_hex(key), "head": head, "pages": pages,
        }),
        PageOwner::Free { txnid } => json!({"kind": "free", "gc_txnid": txnid}),
        PageOwner::Unallocated => json!({"kind": "unallocated"}),
        PageOwner::Unreferenced => json!({"kind": "unreferenced"}),
    }
}

fn page(a: &PageArgs) -> Result<(), ToolError> {
    let t = locate(&a.path)?;
    let metas = common::read_metas(&t)?;
    let buf =
        inspect::read_page(&t.data, metas.page_size, a.pgno).map_err(|e| ToolError::engine(&e, t.data.display()))?;
    let mut info = inspect::decode_page(&buf, a.pgno);
    let (owner, owner_err) = match open_env(&t, true)
        .and_then(|env| env.page_owner(a.pgno).map_err(|e| ToolError::engine(&e, a.path.display())))
    {
        Ok(o) => (Some(o), None),
        Err(e) => (None, Some(e.msg)),
    };
    if let Some(PageOwner::Large { head, .. }) = &owner {
        if *head != a.pgno {
            // Inside a large chunk: value bytes, no header.
            info = inspect::PageInfo {
                kind: "large-data",
                flags: 0,
                txnid: 0,
                header_pgno: a.pgno,
                problem: None,
                ..info
            };
        }
    }
    if a.json {
        let nodes: Vec<Value> = info
            .nodes
            .iter()
            .map(|n| {
                let mut m = Map::new();
                m.insert("index".into(), n.index.into());
                m.insert("flags".into(), n.flags.into());
                common::json_bytes(&mut m, "key", &n.key);
                let (kind, extra): (&str, Value) = match &n.value {
                    NodeValue::Child(c) => ("child", json!({"child": c})),
                    NodeValue::Inline(v) => {
                        ("inline", json!({"value": std::str::from_utf8(v).ok(), "value_hex": rdbx::to_hex(v)}))
                    }
                    NodeValue::Large { size, pgno } => ("large", json!({"size": size, "pgno": pgno})),
                    NodeValue::Table(tr) => ("table", tree_json(tr)),
                    NodeValue::SubPage(items) => {
                        ("subpage", json!({"items_hex": items.iter().map(|i| rdbx::to_hex(i)).collect::<Vec<_>>()}))
                    }
                    NodeValue::NestedTree(tr) => ("nested-tree", tree_json(tr)),
                    NodeValue::Item => ("item", json!({})),
                    NodeValue::Bad(e) => ("bad", json!({"error": e})),
                };
                m.insert("type".into(), kind.into());
                m.insert("detail".into(), extra);
                m.into()
            })
            .collect();
        println!(
            "{}",
            json!({
                "path": a.path.display().to_string(), "pgno": info.pgno, "header_pgno": info.header_pgno,
                "txnid": info.txnid, "flags": info.flags, "kind": info.kind, "entries": info.entries,
                "free": info.free, "large_pages": info.large_pages, "problem": info.problem,
                "owner": owner.as_ref().map(owner_json), "owner_error": owner_err, "nodes": nodes,
            })
        );
        return Ok(());
    }
    let mut o = std::io::stdout().lock();
    let io = |e: std::io::Error| ToolError::sys(libc::EIO, e.to_string());
    writeln!(
        o,
        "page {}: {} (flags {:#x}), txnid {}, header pgno {}",
        info.pgno, info.kind, info.flags, info.txnid, info.header_pgno
    )
    .map_err(io)?;
    match (&owner, &owner_err) {
        (Some(ow), _) => writeln!(o, "belongs to: {}", owner_text(ow)).map_err(io)?,
        (None, Some(e)) => writeln!(o, "belongs to: unknown (the database cannot be opened: {e})").map_err(io)?,
        _ => {}
    }
    if let Some(p) = &info.problem {
        writeln!(o, "problem: {p}").map_err(io)?;
    }
    if info.kind == "large-data" {
        writeln!(o, "the bytes of a large value (no page header): {}", shown(&buf, a.full)).map_err(io)?;
    }
    if let Some(n) = info.large_pages {
        writeln!(o, "large chunk of {n} pages").map_err(io)?;
    }
    if info.kind == "meta" {
        writeln!(o, "(a meta page: see `{PROG} meta`)").map_err(io)?;
    }
    if matches!(info.kind, "branch" | "leaf" | "dupfix-leaf") {
        writeln!(o, "{} entries, {} bytes free", info.entries, info.free).map_err(io)?;
    }
    for n in &info.nodes {
        let k = shown(&n.key, a.full);
        let v = match &n.value {
            NodeValue::Child(c) => format!("-> page {c}"),
            NodeValue::Inline(v) => format!("= {}", shown(v, a.full)),
            NodeValue::Large { size, pgno } => format!("= large value of {size} bytes at page {pgno}"),
            NodeValue::Table(tr) => {
                format!("= table: root {}, height {}, {} items", tr.root as i64, tr.height, tr.items)
            }
            NodeValue::SubPage(items) => format!(
                "= {} values (sub-page): {}",
                items.len(),
                items.iter().take(8).map(|i| shown(i, a.full)).collect::<Vec<_>>().join(", ")
            ),
            NodeValue::NestedTree(tr) => {
                format!("= {} values in a nested tree: root {}, height {}", tr.items, tr.root, tr.height)
            }
            NodeValue::Item => String::new(),
            NodeValue::Bad(e) => format!("(cannot decode: {e})"),
        };
        let k = if n.index == 0 && info.kind == "branch" && n.key.is_empty() { "(leftmost)".to_string() } else { k };
        writeln!(o, "  #{:<4} {k} {v}", n.index).map_err(io)?;
    }
    Ok(())
}
