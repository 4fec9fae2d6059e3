//! The dump-parser target: the input is `mdbx_dump` text.
//!
//! Input: one header byte (bit 0: headerless `mdbx_load -T` plain text),
//! then the text. It is parsed with [`rdbx_dump::DumpReader`] (as `rdbx-tools
//! load` does) up to the end or the first error; what parsed (headers and
//! records) is written again as dump text and parsed again: that must succeed
//! and give the same headers and records.

use std::io::Write;

use rdbx_dump::{encode, DumpError, DumpReader, Format, Header, FLAG_LINES};

/// One parsed section: its header (with `end_line` zeroed) and its records.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Section {
    /// The header.
    pub header: Header,
    /// (key, value) pairs in input order.
    pub records: Vec<(Vec<u8>, Vec<u8>)>,
}

/// What a parse gave.
#[derive(Debug, Default)]
pub struct Parsed {
    /// Sections, the last one maybe cut short by the error.
    pub sections: Vec<Section>,
    /// The error that stopped the parse, if any.
    pub error: Option<String>,
}

/// Parses `text` like `rdbx-tools load` (headers, then records per section).
pub fn parse(text: &[u8], plain_text: bool) -> Parsed {
    let mut r = DumpReader::with_mode(text, plain_text);
    let mut out = Parsed::default();
    let err = |e: DumpError| Some(e.to_string());
    loop {
        let h = match r.next_header() {
            Ok(Some(h)) => h,
            Ok(None) => break,
            Err(e) => {
                out.error = err(e);
                break;
            }
        };
        out.sections.push(Section { header: Header { end_line: 0, ..h }, records: Vec::new() });
        let recs = &mut out.sections.last_mut().expect("pushed").records;
        loop {
            match r.next_record() {
                Ok(Some(rec)) => recs.push((rec.key, rec.value)),
                Ok(None) => break,
                Err(e) => {
                    out.error = err(e);
                    return out;
                }
            }
        }
    }
    out
}

/// Writes `sections` as dump text (plain text: key and value lines only).
pub fn unparse(sections: &[Section], plain_text: bool) -> Vec<u8> {
    let mut out = Vec::new();
    for s in sections {
        let h = &s.header;
        let fmt = if plain_text { Format::Print } else { h.format };
        if !plain_text {
            out.extend_from_slice(b"VERSION=3\n");
            let _ = writeln!(out, "format={}", h.format.as_str());
            if let Some(n) = &h.name {
                out.extend_from_slice(b"database=");
                out.extend_from_slice(n);
                // The reader drops one CR before the newline.
                if n.last() == Some(&b'\r') {
                    out.push(b'\r');
                }
                out.push(b'\n');
            }
            out.extend_from_slice(b"type=btree\n");
            if let Some(p) = h.page_size {
                let _ = writeln!(out, "db_pagesize={p}");
            }
            if let Some(m) = h.mapsize {
                let _ = writeln!(out, "mapsize={m}");
            }
            if let Some(r) = h.max_readers {
                let _ = writeln!(out, "maxreaders={r}");
            }
            if let Some(g) = &h.geometry {
                match g.current {
                    Some(c) => {
                        let _ = writeln!(out, "geometry=l{},c{c},u{},s{},g{}", g.lower, g.upper, g.shrink, g.grow);
                    }
                    None => {
                        let _ = writeln!(out, "geometry=l{},u{},s{},g{}", g.lower, g.upper, g.shrink, g.grow);
                    }
                }
            }
            if let Some([x, y, z, v]) = h.canary {
                let _ = writeln!(out, "canary=v{v},x{x},y{y},z{z}");
            }
            for (name, f) in FLAG_LINES {
                if h.flags.contains(f) {
                    let _ = writeln!(out, "{name}=1");
                }
            }
            if h.sequence != 0 {
                let _ = writeln!(out, "sequence={}", h.sequence);
            }
            out.extend_from_slice(b"HEADER=END\n");
        }
        for (k, v) in &s.records {
            if !plain_text {
                out.push(b' ');
            }
            encode(fmt, k, &mut out);
            out.extend_from_slice(if plain_text { b"\n" } else { b"\n " });
            encode(fmt, v, &mut out);
            out.push(b'\n');
        }
        if !plain_text {
            out.extend_from_slice(b"DATA=END\n");
        }
    }
    out
}

/// Runs the target over `data`.
pub fn run(data: &[u8]) {
    crate::note_input(data);
    let Some((&hdr, text)) = data.split_first() else { return };
    let plain = hdr & 1 != 0;
    let first = parse(text, plain);
    let again_text = unparse(&first.sections, plain);
    let again = parse(&again_text, plain);
    assert!(
        again.error.is_none(),
        "re-encoded input does not parse: {:?}\n--- re-encoded:\n{}",
        again.error,
        String::from_utf8_lossy(&again_text)
    );
    assert!(
        again.sections == first.sections,
        "re-encoded input parses differently:\nfirst: {:?}\nagain: {:?}\n--- re-encoded:\n{}",
        first.sections,
        again.sections,
        String::from_utf8_lossy(&again_text)
    );
}
