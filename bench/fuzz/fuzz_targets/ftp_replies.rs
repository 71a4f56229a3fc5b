#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| ringdl::fuzzing::ftp_replies(data));
