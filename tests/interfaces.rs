//! `--interface`, `--multiple-interface` and `--disable-ipv6`: where connections leave from, and
//! which addresses they may go to.

use crate::support::server::{Route, TestServer};
use crate::support::{content, ringdl, sha256_file, sha256_hex, TestDir};

fn run(opts: &[&str], url: &str) -> (TestDir, crate::support::Run) {
    let dir = TestDir::new();
    let mut args: Vec<String> = vec!["--no-conf".into(), "-d".into(), dir.arg()];
    args.extend(opts.iter().map(|s| s.to_string()));
    args.push(url.to_string());
    let r = ringdl(&dir, &args);
    (dir, r)
}

#[test]
fn interface_by_name_address_or_list() {
    let server = TestServer::plain();
    let data = content(501, 200_000);
    server.route("/f.bin", Route::bytes(data.clone()));
    let url = server.url("/f.bin");
    for opts in [
        &["--interface=lo"][..],
        &["--interface=127.0.0.2"],
        &["--interface=localhost"],
        &["--multiple-interface=lo,127.0.0.3", "-x2", "-s2", "-k1M"],
    ] {
        let (dir, r) = run(opts, &url);
        assert_eq!(r.code(), 0, "{opts:?}\n{r}");
        assert_eq!(sha256_file(&dir.join("f.bin")), sha256_hex(&data));
    }
}

#[test]
fn an_interface_without_an_address_of_the_targets_family_cannot_connect() {
    let server = TestServer::plain();
    server.route("/f.bin", Route::bytes(content(502, 1000)));
    // Only an IPv6 address to leave from, an IPv4 server: no connection can be made.
    let (_, r) = run(&["--interface=::1", "--max-tries=1"], &server.url("/f.bin"));
    assert_eq!(r.code(), 1, "{r}");
}

#[test]
fn a_missing_interface_is_one_line_and_exit_1() {
    let server = TestServer::plain();
    let (dir, r) = run(&["--interface=no-such-if0"], &server.url("/f.bin"));
    assert_eq!(r.code(), 1, "{r}");
    assert_eq!(
        r.lines_with("Failed to find given interface no-such-if0")
            .len(),
        1,
        "{r}"
    );
    assert!(dir.entries().is_empty(), "{:?}", dir.entries());
}

#[test]
fn disable_ipv6_never_connects_to_an_ipv6_address() {
    let server = TestServer::plain();
    let data = content(503, 50_000);
    server.route("/f.bin", Route::bytes(data.clone()));
    if !server.has_ipv6() {
        eprintln!("SKIPPED (partly): the test server has no IPv6 loopback here");
        return;
    }
    let (_, r) = run(
        &["--disable-ipv6", "--max-tries=1"],
        &server.url_v6("/f.bin"),
    );
    assert_eq!(r.code(), 1, "{r}");
    assert!(server.requests().is_empty(), "an IPv6 connection was made");
    // Without it, the same URI works.
    let (dir, r) = run(&[], &server.url_v6("/f.bin"));
    assert_eq!(r.code(), 0, "{r}");
    assert_eq!(sha256_file(&dir.join("f.bin")), sha256_hex(&data));
}
