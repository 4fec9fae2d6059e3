#![no_main]
//! See `rdbx_fuzzing::dump`.

libfuzzer_sys::fuzz_target!(|data: &[u8]| rdbx_fuzzing::dump::run(data));
