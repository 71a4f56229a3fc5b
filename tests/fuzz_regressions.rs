//! What the fuzzers (`bench/fuzz.sh`, targets in `bench/fuzz/fuzz_targets/`) found, replayed on
//! every test run through the same entry points (`ringdl::fuzzing`): each file under
//! `tests/fuzz-regressions/TARGET/` is an input that crashed a target once, or stands for a kind of
//! input that did. A panic here is a finding come back.

use std::path::Path;

type Target = fn(&[u8]);

const TARGETS: [(&str, Target); 17] = [
    ("response_head", ringdl::fuzzing::response_head),
    ("chunked", ringdl::fuzzing::chunked),
    ("content_disposition", ringdl::fuzzing::content_disposition),
    ("uri_name", ringdl::fuzzing::uri_name),
    ("control_file", ringdl::fuzzing::control_file),
    ("input_list", ringdl::fuzzing::input_list),
    ("config", ringdl::fuzzing::config),
    ("cookies", ringdl::fuzzing::cookies),
    ("netrc", ringdl::fuzzing::netrc),
    ("pack_body", ringdl::fuzzing::pack_body),
    ("rpc_request", ringdl::fuzzing::rpc_request),
    ("ws_frames", ringdl::fuzzing::ws_frames),
    ("rpc_request_head", ringdl::fuzzing::rpc_request_head),
    ("tls_records", ringdl::fuzzing::tls_records),
    ("ftp_replies", ringdl::fuzzing::ftp_replies),
    ("ssh_packets", ringdl::fuzzing::ssh_packets),
    ("metalink", ringdl::fuzzing::metalink),
];

#[test]
fn fuzz_findings_stay_fixed() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fuzz-regressions");
    let mut replayed = 0;
    for (name, target) in TARGETS {
        let dir = root.join(name);
        let entries = std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
        for entry in entries {
            let path = entry.expect("a directory entry").path();
            let input = std::fs::read(&path).expect("a regression input");
            let run = std::panic::catch_unwind(|| target(&input));
            assert!(run.is_ok(), "{name}: {} panics again", path.display());
            replayed += 1;
        }
    }
    assert!(replayed >= TARGETS.len(), "only {replayed} inputs");
}

/// Every fuzz target has its entry here, so a new target's findings cannot go unreplayed.
#[test]
fn every_fuzz_target_is_replayed() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("bench/fuzz/fuzz_targets");
    let mut on_disk: Vec<String> = std::fs::read_dir(&dir)
        .expect("bench/fuzz/fuzz_targets")
        .map(|e| {
            let p = e.expect("an entry").path();
            p.file_stem()
                .expect("a name")
                .to_string_lossy()
                .into_owned()
        })
        .collect();
    on_disk.sort();
    let mut here: Vec<String> = TARGETS.iter().map(|(n, _)| n.to_string()).collect();
    here.sort();
    assert_eq!(on_disk, here);
}
