#![no_main]
//! See `rdbx_fuzzing::ops`.

libfuzzer_sys::fuzz_target!(|data: &[u8]| rdbx_fuzzing::ops::run(data));
