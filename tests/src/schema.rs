//! A small JSON schema check shared by the CLI tests of the tools and the
//! shell (their `--json` / `format json` outputs have one fixed schema per
//! command).

/// Checks `v` against a small schema language (the `--json` schemas of
/// crates/tools/README.md): a string names the type(s), `|`-separated:
/// `string`, `u64`, `i64`, `f64`, `bool`, `null`, `any`; an object requires
/// exactly its keys (no more, no fewer); a one-element array types every
/// item. Panics with the path of the first mismatch.
pub fn check_schema(v: &serde_json::Value, schema: &serde_json::Value, at: &str) {
    use serde_json::Value as V;
    match schema {
        V::String(types) => {
            let ok = types.split('|').any(|t| match t {
                "string" => v.is_string(),
                "u64" => v.is_u64(),
                "i64" => v.is_i64() || v.is_u64(),
                "f64" => v.is_number(),
                "bool" => v.is_boolean(),
                "null" => v.is_null(),
                "any" => true,
                other => panic!("schema: unknown type {other}"),
            });
            assert!(ok, "{at}: {v} is not {types}");
        }
        V::Object(fields) => {
            let o = v.as_object().unwrap_or_else(|| panic!("{at}: {v} is not an object"));
            for (k, s) in fields {
                let x = o.get(k).unwrap_or_else(|| panic!("{at}: field {k} is missing in {v}"));
                check_schema(x, s, &format!("{at}.{k}"));
            }
            for k in o.keys() {
                assert!(fields.contains_key(k), "{at}: field {k} is not in the schema");
            }
        }
        V::Array(items) => {
            let a = v.as_array().unwrap_or_else(|| panic!("{at}: {v} is not an array"));
            for (i, x) in a.iter().enumerate() {
                check_schema(x, &items[0], &format!("{at}[{i}]"));
            }
        }
        _ => panic!("schema: bad schema {schema}"),
    }
}
