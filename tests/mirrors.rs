//! Mirrors that fail beside good ones: a download never fails while a good mirror remains,
//! whatever the bad one does (not found, forbidden, a server error, a redirect to nothing, a
//! refused connection, ranges refused), wherever it is listed and however the file is split.

use std::time::Duration;

use crate::support::server::{Route, TestServer};
use crate::support::{content, ringdl, sha256_file, sha256_hex, TestDir};

/// What the bad mirror does.
#[derive(Debug, Clone, Copy)]
enum Bad {
    Status(u16),
    RedirectToMissing,
    Refused,
    NoRanges,
}

/// How the file is split (apt-fast's own options among them).
const SPLITS: &[&[&str]] = &[
    &["-x1"],
    &["-s2", "-k1M"],
    &["-x10", "-s8", "--min-split-size=1M"],
    &[
        "-c",
        "-j5",
        "-x10",
        "-s8",
        "--min-split-size=1M",
        "--stream-piece-selector=default",
        "-m0",
    ],
];

fn bad_mirror_never_fails(bad: Bad) {
    let server = TestServer::plain();
    let data = content(0x6d69_7272, 6 * 1024 * 1024 + 777);
    // Good mirrors slow enough for every segment's request to be in flight when the bad answers.
    let good = || Route::bytes(data.clone()).throttle(128 * 1024, Duration::from_millis(10));
    server.route("/a/f.bin", good());
    server.route("/b/f.bin", good());
    let bad_url = match bad {
        Bad::Status(s) => {
            server.route("/bad/f.bin", Route::status(s));
            server.url("/bad/f.bin")
        }
        Bad::RedirectToMissing => {
            server.route(
                "/bad/f.bin",
                Route::redirect(302, server.url("/missing/f.bin")),
            );
            server.route("/missing/f.bin", Route::status(404));
            server.url("/bad/f.bin")
        }
        Bad::Refused => format!(
            "http://127.0.0.1:{}/bad/f.bin",
            crate::support::ports::port_for_child()
        ),
        Bad::NoRanges => {
            server.route("/bad/f.bin", Route::bytes(data.clone()).no_ranges());
            server.url("/bad/f.bin")
        }
    };
    let (a, b) = (server.url("/a/f.bin"), server.url("/b/f.bin"));
    let orders = [
        vec![bad_url.clone(), a.clone(), b.clone()],
        vec![a.clone(), bad_url.clone(), b.clone()],
        vec![a.clone(), b.clone(), bad_url.clone()],
    ];
    for split in SPLITS {
        for uris in &orders {
            let dir = TestDir::new();
            let mut args: Vec<String> = vec!["--no-conf".into(), "-d".into(), dir.arg()];
            args.extend(split.iter().map(|s| s.to_string()));
            args.extend(uris.iter().cloned());
            let run = ringdl(&dir, &args);
            assert_eq!(run.code(), 0, "{bad:?} {split:?} {uris:?}\n{run}");
            assert_eq!(
                sha256_file(&dir.join("f.bin")),
                sha256_hex(&data),
                "{bad:?} {split:?}\n{run}"
            );
            assert!(!dir.join("f.bin.aria2").exists(), "{run}");
        }
    }
}

#[test]
fn a_mirror_not_found_beside_good_ones() {
    bad_mirror_never_fails(Bad::Status(404));
}

#[test]
fn a_forbidden_mirror_beside_good_ones() {
    bad_mirror_never_fails(Bad::Status(403));
}

#[test]
fn a_failing_mirror_beside_good_ones() {
    bad_mirror_never_fails(Bad::Status(500));
}

#[test]
fn an_unavailable_mirror_beside_good_ones() {
    bad_mirror_never_fails(Bad::Status(503));
}

#[test]
fn a_mirror_redirecting_to_nothing_beside_good_ones() {
    bad_mirror_never_fails(Bad::RedirectToMissing);
}

#[test]
fn a_refused_mirror_beside_good_ones() {
    bad_mirror_never_fails(Bad::Refused);
}

#[test]
fn a_mirror_without_ranges_beside_good_ones() {
    bad_mirror_never_fails(Bad::NoRanges);
}
