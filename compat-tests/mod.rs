//! Differential tests: the same command lines run by aria2c and by ringdl, against the same local
//! servers (the in-repo test server, plain and TLS, and nginx), compared by exit code, files
//! produced and the shape of the output. `harness.rs` runs and compares, `normalize.rs` makes two
//! runs' output comparable, the `cases_*.rs` files hold the cases as data, and
//! KNOWN_DIFFERENCES.md documents every place ringdl differs from aria2c on purpose.
//!
//! `cargo test --test tests compat::` runs them; a missing aria2c is a loud `SKIPPED:` (or a
//! failure with `RINGDL_REQUIRE_PEERS=1`). See harness.rs for `RINGDL_COMPAT_VERBOSE` and
//! `RINGDL_COMPAT_SELF_CHECK`.

#[macro_use]
mod harness;
mod normalize;

mod cases_cli;
mod cases_download;
mod cases_files;
mod cases_ftp;
mod cases_http;
mod cases_metalink;
mod cases_sftp;
mod cases_unsupported;
mod control;
mod reruns;
mod rpc;
mod serverstat;

/// Every case of the suite, with its name.
fn all_cases() -> Vec<(&'static str, harness::Case)> {
    [
        cases_cli::CASES,
        cases_download::CASES,
        cases_files::CASES,
        cases_ftp::CASES,
        cases_sftp::CASES,
        cases_http::CASES,
        cases_metalink::CASES,
        cases_unsupported::CASES,
    ]
    .concat()
}

/// The suite's own invariants: enough cases, unique names, and every documented difference a case
/// cites is a section of KNOWN_DIFFERENCES.md that names the case.
#[test]
fn suite_cases_are_documented() {
    let cases = all_cases();
    assert!(cases.len() >= 60, "only {} cases", cases.len());
    let mut names: Vec<&str> = cases.iter().map(|(n, _)| *n).collect();
    names.sort();
    let before = names.len();
    names.dedup();
    assert_eq!(before, names.len(), "duplicate case names");

    let doc = include_str!("KNOWN_DIFFERENCES.md");
    let mut sections: Vec<(&str, &str)> = Vec::new();
    for part in doc.split("\n## ").skip(1) {
        let id = part.split_whitespace().next().unwrap_or("");
        sections.push((id, part));
    }
    let listed = |section: &str| -> Vec<String> {
        section
            .lines()
            .filter(|l| l.starts_with("Cases:"))
            .flat_map(|l| l.split('`').skip(1).step_by(2).map(str::to_string))
            .collect()
    };
    for (name, case) in &cases {
        if !case.diffs.is_empty() {
            assert!(
                !case.known.is_empty(),
                "case {name} has differences but cites no KNOWN_DIFFERENCES.md section"
            );
        }
        for id in case.known {
            let section = sections
                .iter()
                .find(|(s, _)| s == id)
                .unwrap_or_else(|| panic!("case {name} cites {id}, not in KNOWN_DIFFERENCES.md"));
            assert!(
                listed(section.1).iter().any(|c| c == name),
                "KNOWN_DIFFERENCES.md section {id} does not list case `{name}` on its Cases: line"
            );
        }
    }
    // And the other way: every case a section lists exists and cites the section.
    for (id, text) in &sections {
        for case in listed(text) {
            let found = cases.iter().find(|(n, _)| *n == case);
            let Some((_, c)) = found else {
                panic!("KNOWN_DIFFERENCES.md section {id} lists unknown case {case}");
            };
            assert!(
                c.known.contains(id),
                "KNOWN_DIFFERENCES.md section {id} lists case {case}, which does not cite it"
            );
        }
    }
}
