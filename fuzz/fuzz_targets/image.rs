#![no_main]
//! See `rdbx_fuzzing::image`.

libfuzzer_sys::fuzz_target!(|data: &[u8]| rdbx_fuzzing::image::run(data));
