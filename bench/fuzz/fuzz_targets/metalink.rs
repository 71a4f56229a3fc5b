#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| ringdl::fuzzing::metalink(data));
