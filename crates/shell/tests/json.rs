//! `format json` has one fixed schema per command (issue 14 item 7): an item
//! is always `X` (text, number or null) and `X_hex`, whatever its bytes, and
//! status lines go to stderr, so stdout holds only the JSON lines.

mod common;

use common::*;
use rdbx_tests::schema::check_schema;
use serde_json::json;

#[test]
fn every_line_of_a_command_has_the_same_fields() {
    let dir = tempfile::tempdir().unwrap();
    make_db(dir.path());
    let d = dir.path();
    let item = |name: &str| (name.to_string(), name.to_string() + "_hex");
    let pair = |a: &str, b: &str| {
        let (a, ah) = item(a);
        let (b, bh) = item(b);
        json!({a: "string|u64|null", ah: "string", b: "string|u64|null", bh: "string"})
    };
    let cases = [
        // text, binary, integer keys: the same fields
        ("scan -t colors", pair("key", "value")),
        ("scan -t ints", pair("key", "value")),
        ("get -t colors bin\\x01", pair("key", "value")),
        ("get -t colors \"bin\\x01\"", pair("key", "value")),
        ("scan -t colors --keys-only", json!({"key": "string|null", "key_hex": "string"})),
        ("exists -t colors nope", json!({"key": "string|null", "key_hex": "string", "exists": "bool"})),
        ("count -t colors", json!({"table": "string|null", "table_hex": "string|null", "records": "u64"})),
        ("count", json!({"table": "null", "table_hex": "null", "records": "u64"})),
        (
            "tables",
            json!({"name": "string|null", "name_hex": "string", "flags": "string", "records": "u64", "depth": "u64", "pages": "u64"}),
        ),
    ];
    for (c, schema) in &cases {
        let r = run(&[d.to_str().unwrap(), "-f", "json", "-k", "-c", c], None);
        for (i, v) in json(&r).iter().enumerate() {
            check_schema(v, schema, &format!("{c} line {i}"));
        }
        if r.ok() {
            assert!(!r.stdout.is_empty(), "{c}: {r:?}");
        }
    }
    // Writes: the confirmations are status lines on stderr, stdout is empty.
    let r =
        run(&[d.to_str().unwrap(), "-w", "-f", "json", "-c", "put -t colors k v; del -t colors k; create t2"], None);
    assert!(r.ok() && r.stdout.is_empty(), "{r:?}");
}
