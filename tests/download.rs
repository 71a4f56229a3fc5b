//! End-to-end tests of the ringdl binary against the test server: every download is checked by
//! SHA-256 of the file on disk, every failure by aria2's exit code and a line naming the URI, and
//! every run (through `support::ringdl`) fails the test if it hangs or prints `panicked`.

use std::collections::BTreeSet;
use std::time::Duration;

use crate::support::server::{Fault, Location, Route, TestServer, TlsVersions, When};
use crate::support::{content, ringdl, sha256_file, sha256_hex, Run, TestDir};

const MIB: usize = 1024 * 1024;
/// Odd on purpose: not a multiple of any block, piece or segment size.
const BIG: usize = 5 * MIB + 12345;
const SPLIT: &[&str] = &["-x16", "-s16", "-k1M"];
const SINGLE: &[&str] = &["-x1"];

/// Runs ringdl into `dir` (`-d`), trusting the server's CA when it is HTTPS.
fn download(server: &TestServer, dir: &TestDir, options: &[&str], uris: &[&str]) -> Run {
    let mut args = vec!["-d".to_string(), dir.arg()];
    if server.is_tls() {
        args.push(format!("--ca-certificate={}", server.ca_file().display()));
    }
    args.extend(options.iter().map(|o| o.to_string()));
    args.extend(uris.iter().map(|u| u.to_string()));
    ringdl(dir, &args)
}

/// Exit 0, the aria2 completion notice and results row for `dir/name`, the exact bytes, and no
/// control file left behind.
fn assert_downloaded(run: &Run, dir: &TestDir, name: &str, data: &[u8]) {
    assert_eq!(run.code(), 0, "expected success\n{run}");
    let path = dir.join(name);
    let shown = path.display().to_string();
    assert!(
        run.stdout.contains(&format!("Download complete: {shown}")),
        "no `Download complete: {shown}`\n{run}"
    );
    assert!(
        run.stdout.contains("Download Results:"),
        "no results table\n{run}"
    );
    assert!(
        run.stdout
            .lines()
            .any(|l| l.contains("|OK  |") && l.contains(&shown)),
        "no OK row for {shown}\n{run}"
    );
    assert!(
        path.is_file(),
        "{shown} missing; dir holds {:?}\n{run}",
        dir.entries()
    );
    assert_eq!(
        std::fs::metadata(&path).unwrap().len(),
        data.len() as u64,
        "size of {shown}\n{run}"
    );
    assert_eq!(
        sha256_file(&path),
        sha256_hex(data),
        "content of {shown}\n{run}"
    );
    assert!(
        !dir.join(&format!("{name}.aria2")).exists(),
        "control file left\n{run}"
    );
}

/// A failure reported the aria2 way: the exit code, and an error line naming the URI.
fn assert_failed(run: &Run, code: i32, uri: &str) {
    assert_eq!(run.code(), code, "expected exit {code}\n{run}");
    assert_error_names(run, uri);
}

fn assert_error_names(run: &Run, uri: &str) {
    assert!(
        run.output()
            .lines()
            .any(|l| l.contains(uri) && l.to_ascii_lowercase().contains("err")),
        "no error line naming {uri}\n{run}"
    );
}

/// A broken server where nothing can complete the file: a non-zero exit, an error line naming
/// the URI, and (`partial`) the partly written file still in place for a later resume.
fn assert_failed_cleanly(run: &Run, dir: &TestDir, name: &str, uri: &str, partial: bool) {
    assert_ne!(run.code(), 0, "expected failure\n{run}");
    assert_error_names(run, uri);
    if partial {
        assert!(
            dir.join(name).exists(),
            "partial file removed; dir holds {:?}\n{run}",
            dir.entries()
        );
    }
}

/// A broken server where aria2 may still finish (from the other connections, or because it
/// tolerates the fault): either the exact file, or a clean failure as in
/// [`assert_failed_cleanly`]. Never wrong bytes reported as a success.
fn assert_exact_or_failed_cleanly(
    run: &Run,
    dir: &TestDir,
    name: &str,
    uri: &str,
    data: &[u8],
    partial: bool,
) {
    if run.code() == 0 {
        eprintln!(
            "{}: completed despite the fault",
            crate::support::test_name()
        );
        assert_downloaded(run, dir, name, data);
    } else {
        eprintln!(
            "{}: failed with exit {}",
            crate::support::test_name(),
            run.code()
        );
        assert_failed_cleanly(run, dir, name, uri, partial);
    }
}

// ---------------------------------------------------------------------------------------------
// Sizes, single and split, plain and TLS.

fn sizes(server: TestServer, options: &[&str]) {
    for (i, size) in [0, 1, 4095, 4096, 4097, BIG].into_iter().enumerate() {
        let data = content(100 + i as u64, size);
        let name = format!("size-{size}.bin");
        server.route(&format!("/{name}"), Route::bytes(data.clone()));
        let dir = TestDir::new();
        let run = download(&server, &dir, options, &[&server.url(&format!("/{name}"))]);
        assert_downloaded(&run, &dir, &name, &data);
    }
}

#[test]
fn sizes_plain_single_connection() {
    sizes(TestServer::plain(), SINGLE);
}

#[test]
fn sizes_plain_split() {
    sizes(TestServer::plain(), SPLIT);
}

#[test]
fn sizes_tls_single_connection() {
    sizes(TestServer::https(), SINGLE);
}

#[test]
fn sizes_tls_split() {
    sizes(TestServer::https(), SPLIT);
}

/// The bodies are throttled a little so the first connection cannot finish the file alone
/// before the others have started.
fn split_uses_several_connections(server: TestServer) {
    let data = content(7, BIG);
    server.route(
        "/big.bin",
        Route::bytes(data.clone()).throttle(64 * 1024, Duration::from_millis(2)),
    );
    let dir = TestDir::new();
    let run = download(&server, &dir, SPLIT, &[&server.url("/big.bin")]);
    assert_downloaded(&run, &dir, "big.bin", &data);

    let gets: Vec<_> = server
        .requests_to("/big.bin")
        .into_iter()
        .filter(|r| r.method == "GET")
        .collect();
    let conns: BTreeSet<u64> = gets.iter().map(|r| r.conn).collect();
    let starts: BTreeSet<u64> = gets
        .iter()
        .map(|r| r.range().map_or(0, |(start, _)| start))
        .collect();
    assert!(
        conns.len() >= 3,
        "only {} connection(s) fetched: {gets:#?}",
        conns.len()
    );
    assert!(
        starts.len() >= 3,
        "only {} distinct range start(s): {gets:#?}",
        starts.len()
    );
    assert!(
        starts.iter().all(|&s| s < BIG as u64),
        "a range past the end: {gets:#?}"
    );
    // Without faults no byte is asked for twice (the compat harness forgives aria2c for doing so).
    assert_eq!(
        starts.len(),
        gets.len(),
        "a range requested twice: {gets:#?}"
    );
}

#[test]
fn split_plain_uses_several_connections_for_different_ranges() {
    split_uses_several_connections(TestServer::plain());
}

#[test]
fn split_tls_uses_several_connections_for_different_ranges() {
    split_uses_several_connections(TestServer::https());
}

#[test]
fn tls12_only_server() {
    let server = TestServer::builder()
        .tls()
        .tls_versions(TlsVersions::Tls12Only)
        .start();
    let data = content(8, 2 * MIB + 5);
    server.route("/t12.bin", Route::bytes(data.clone()));
    let dir = TestDir::new();
    let run = download(
        &server,
        &dir,
        &["-x4", "-s4", "-k1M"],
        &[&server.url("/t12.bin")],
    );
    assert_downloaded(&run, &dir, "t12.bin", &data);
}

// ---------------------------------------------------------------------------------------------
// Servers that cannot or will not serve ranges, and other body framings: one connection does it.

fn unsplittable(server: TestServer, route: impl Fn(Vec<u8>) -> Route) {
    let data = content(9, 3 * MIB + 777);
    server.route("/u.bin", route(data.clone()));
    for options in [SINGLE, SPLIT] {
        let dir = TestDir::new();
        let run = download(&server, &dir, options, &[&server.url("/u.bin")]);
        assert_downloaded(&run, &dir, "u.bin", &data);
    }
}

#[test]
fn server_ignoring_range() {
    unsplittable(TestServer::plain(), |d| Route::bytes(d).no_ranges());
}

#[test]
fn server_with_accept_ranges_none() {
    unsplittable(TestServer::plain(), |d| {
        Route::bytes(d).accept_ranges_none()
    });
}

#[test]
fn chunked_body() {
    unsplittable(TestServer::plain(), |d| Route::bytes(d).chunked());
}

#[test]
fn chunked_body_tls() {
    unsplittable(TestServer::https(), |d| Route::bytes(d).chunked());
}

#[test]
fn close_delimited_body() {
    unsplittable(TestServer::plain(), |d| Route::bytes(d).close_delimited());
}

#[test]
fn close_delimited_body_tls() {
    unsplittable(TestServer::https(), |d| Route::bytes(d).close_delimited());
}

#[test]
fn slow_server_with_late_head() {
    let server = TestServer::plain();
    let data = content(10, 2 * MIB + 1);
    server.route(
        "/slow.bin",
        Route::bytes(data.clone())
            .delay_head(Duration::from_millis(300))
            .throttle(32 * 1024, Duration::from_millis(5)),
    );
    let dir = TestDir::new();
    let run = download(
        &server,
        &dir,
        &["-x4", "-s4", "-k1M"],
        &[&server.url("/slow.bin")],
    );
    assert_downloaded(&run, &dir, "slow.bin", &data);
}

// ---------------------------------------------------------------------------------------------
// Names.

#[test]
fn name_from_last_segment_percent_decoded_without_query() {
    let server = TestServer::plain();
    let data = content(11, 1000);
    server.route("/dir/pct%20name.txt", Route::bytes(data.clone()));
    let dir = TestDir::new();
    let run = download(
        &server,
        &dir,
        &[],
        &[&server.url("/dir/pct%20name.txt?x=1&y=2")],
    );
    assert_downloaded(&run, &dir, "pct name.txt", &data);
}

#[test]
fn name_from_content_disposition() {
    let server = TestServer::plain();
    let data = content(12, 1000);
    server.route(
        "/get",
        Route::bytes(data.clone()).content_disposition("attachment; filename=\"from-header.bin\""),
    );
    let dir = TestDir::new();
    let run = download(&server, &dir, &[], &[&server.url("/get")]);
    assert_downloaded(&run, &dir, "from-header.bin", &data);
}

#[test]
fn name_from_dash_o_wins() {
    let server = TestServer::plain();
    let data = content(13, 1000);
    server.route(
        "/get.bin",
        Route::bytes(data.clone()).content_disposition("attachment; filename=\"not-this.bin\""),
    );
    let dir = TestDir::new();
    let run = download(
        &server,
        &dir,
        &["-o", "chosen.bin"],
        &[&server.url("/get.bin")],
    );
    assert_downloaded(&run, &dir, "chosen.bin", &data);
    assert_eq!(dir.entries(), ["chosen.bin"]);
}

// ---------------------------------------------------------------------------------------------
// Redirects.

fn redirected(hops: usize, style: Location, options: &[&str]) {
    let server = TestServer::plain();
    let data = content(14, 2 * MIB + 3);
    server.route("/files/target.bin", Route::bytes(data.clone()));
    let first = server.redirect_chain("hop", hops, "/files/target.bin", style);
    let dir = TestDir::new();
    let run = download(&server, &dir, options, &[&server.url(&first)]);
    // The name comes from the URI the file was finally fetched from.
    assert_downloaded(&run, &dir, "target.bin", &data);
}

#[test]
fn redirect_chain_relative() {
    redirected(5, Location::Relative, SINGLE);
}

#[test]
fn redirect_chain_absolute_split() {
    redirected(5, Location::Absolute, SPLIT);
}

#[test]
fn redirect_chain_of_20_hops_is_followed() {
    redirected(20, Location::Relative, SINGLE);
}

#[test]
fn redirect_chain_of_21_hops_exits_23() {
    let server = TestServer::plain();
    server.route("/files/target.bin", Route::bytes(content(15, 100)));
    let first = server.redirect_chain("hop", 21, "/files/target.bin", Location::Relative);
    let dir = TestDir::new();
    let uri = server.url(&first);
    let run = download(&server, &dir, &[], &[&uri]);
    assert_failed(&run, 23, &uri);
    assert!(
        server.requests_to("/files/target.bin").is_empty(),
        "went past 20 redirects"
    );
}

#[test]
fn redirect_loop_exits_23() {
    let server = TestServer::plain();
    server.route("/loop", Route::redirect(302, "/loop"));
    let dir = TestDir::new();
    let uri = server.url("/loop");
    let run = download(&server, &dir, &[], &[&uri]);
    assert_failed(&run, 23, &uri);
    assert!(server.stats().requests <= 25, "{:?}", server.stats());
}

// ---------------------------------------------------------------------------------------------
// HTTP errors map to aria2's exit codes, and create no file.

fn http_error(status: u16, code: i32) {
    let server = TestServer::plain();
    server.route("/e.bin", Route::status(status));
    let dir = TestDir::new();
    let uri = server.url("/e.bin");
    let run = download(&server, &dir, &[], &[&uri]);
    assert_failed(&run, code, &uri);
    assert!(
        !dir.join("e.bin").exists(),
        "a file was created for HTTP {status}\n{run}"
    );
}

#[test]
fn http_404_exits_3() {
    http_error(404, 3);
}

#[test]
fn http_401_exits_24() {
    http_error(401, 24);
}

#[test]
fn http_503_exits_29() {
    http_error(503, 29);
}

#[test]
fn http_502_exits_29() {
    http_error(502, 29);
}

#[test]
fn http_500_exits_22() {
    http_error(500, 22);
}

/// aria2 maps a 504 with 502 and 503 to "service unavailable"; ringdl gave the generic 22.
#[test]
fn http_504_exits_29() {
    http_error(504, 29);
}

/// A 2xx other than 200 and 206 carries no file: aria2c fails it at once ("Unexpected status",
/// exit 22, one request). ringdl used to save a 204's nothing or a 201's body as the file and
/// report it complete.
#[test]
fn other_2xx_answers_are_not_a_file() {
    for status in [201, 202, 203, 204, 205] {
        http_error(status, 22);
    }
    let server = TestServer::plain();
    server.route("/c.bin", Route::status(201));
    let dir = TestDir::new();
    let uri = server.url("/c.bin");
    let run = download(&server, &dir, &["--max-tries=3"], &[&uri]);
    assert!(run.output().contains("Unexpected status 201"), "{run}");
    assert_eq!(server.requests_to("/c.bin").len(), 1, "retried: {run}");
}

#[test]
fn connection_refused_exits_1() {
    let port = crate::support::ports::port_for_child();
    let dir = TestDir::new();
    let uri = format!("http://127.0.0.1:{port}/nobody.bin");
    let run = ringdl(&dir, &["-d".to_string(), dir.arg(), uri.clone()]);
    assert_failed(&run, 1, &uri);
}

// ---------------------------------------------------------------------------------------------
// Many files (-Z) reuse connections.

fn many_files(server: TestServer) {
    let files: Vec<(String, Vec<u8>)> = (0..30)
        .map(|i| {
            (
                format!("z-{i:02}.bin"),
                content(200 + i, 1000 + 37 * i as usize),
            )
        })
        .collect();
    for (name, data) in &files {
        server.route(&format!("/z/{name}"), Route::bytes(data.clone()));
    }
    let uris: Vec<String> = files
        .iter()
        .map(|(name, _)| server.url(&format!("/z/{name}")))
        .collect();
    let dir = TestDir::new();
    let uris: Vec<&str> = uris.iter().map(String::as_str).collect();
    let run = download(&server, &dir, &["-Z", "-j", "4"], &uris);
    for (name, data) in &files {
        assert_downloaded(&run, &dir, name, data);
    }
    let stats = server.stats();
    eprintln!("{}: {stats:?}", crate::support::test_name());
    assert_eq!(stats.requests, 30, "one request per file: {stats:?}");
    assert!(
        stats.connections <= 12,
        "30 files over {} connections: no reuse? {stats:?}",
        stats.connections
    );
}

#[test]
fn many_files_reuse_connections() {
    many_files(TestServer::plain());
}

#[test]
fn many_files_reuse_tls_connections() {
    many_files(TestServer::https());
}

// ---------------------------------------------------------------------------------------------
// Mirrors: several URIs for one file.

#[test]
fn mirrors_both_good() {
    let (a, b) = (TestServer::plain(), TestServer::plain());
    let data = content(16, 3 * MIB + 11);
    a.route("/m.bin", Route::bytes(data.clone()));
    b.route("/m.bin", Route::bytes(data.clone()));
    let dir = TestDir::new();
    let run = ringdl(
        &dir,
        &[
            "-d",
            &dir.arg(),
            "-x4",
            "-s4",
            "-k1M",
            &a.url("/m.bin"),
            &b.url("/m.bin"),
        ],
    );
    assert_downloaded(&run, &dir, "m.bin", &data);
    assert_eq!(dir.entries(), ["m.bin"]);
}

#[test]
fn mirrors_one_missing() {
    let (bad, good) = (TestServer::plain(), TestServer::plain());
    let data = content(17, 3 * MIB + 11);
    bad.route("/m.bin", Route::status(404));
    good.route("/m.bin", Route::bytes(data.clone()));
    let dir = TestDir::new();
    let run = ringdl(
        &dir,
        &[
            "-d",
            &dir.arg(),
            "-x4",
            "-s4",
            "-k1M",
            &bad.url("/m.bin"),
            &good.url("/m.bin"),
        ],
    );
    assert_downloaded(&run, &dir, "m.bin", &data);
    assert_eq!(dir.entries(), ["m.bin"]);
}

// ---------------------------------------------------------------------------------------------
// Broken servers: a clean error (or the exact file), never a hang, a panic or wrong bytes.

#[test]
fn truncated_body_without_ranges_fails() {
    let server = TestServer::plain();
    let data = content(18, 300_000);
    server.route(
        "/t.bin",
        Route::bytes(data)
            .no_ranges()
            .fault(Fault::TruncateAfter(100_000), When::Always),
    );
    let dir = TestDir::new();
    let uri = server.url("/t.bin");
    let run = download(&server, &dir, SINGLE, &[&uri]);
    assert_failed_cleanly(&run, &dir, "t.bin", &uri, true);
}

/// aria2 retries the cut-off response with a Range request from where it stopped (observed:
/// aria2c 1.36 completes this).
#[test]
fn truncated_first_response_is_resumed() {
    let server = TestServer::plain();
    let data = content(19, 300_000);
    server.route(
        "/t.bin",
        Route::bytes(data.clone()).fault(Fault::TruncateAfter(100_000), When::Request(1)),
    );
    let dir = TestDir::new();
    let uri = server.url("/t.bin");
    let run = download(&server, &dir, SINGLE, &[&uri]);
    assert_downloaded(&run, &dir, "t.bin", &data);
    let resumed = server
        .requests_to("/t.bin")
        .iter()
        .any(|r| r.range().is_some_and(|(s, _)| s > 0));
    assert!(
        resumed,
        "the rest was fetched again from 0: {:#?}",
        server.requests()
    );
}

#[test]
fn reset_mid_segment_in_split_download() {
    let server = TestServer::plain();
    let data = content(20, 4 * MIB + 99);
    server.route(
        "/r.bin",
        Route::bytes(data.clone()).fault(Fault::ResetAfter(64 * 1024), When::SegmentRequests),
    );
    let dir = TestDir::new();
    let uri = server.url("/r.bin");
    let run = download(&server, &dir, &["-x4", "-s4", "-k1M"], &[&uri]);
    assert_exact_or_failed_cleanly(&run, &dir, "r.bin", &uri, &data, true);
}

#[test]
fn reset_mid_segment_in_split_download_tls() {
    let server = TestServer::https();
    let data = content(21, 4 * MIB + 99);
    server.route(
        "/r.bin",
        Route::bytes(data.clone()).fault(Fault::ResetAfter(64 * 1024), When::SegmentRequests),
    );
    let dir = TestDir::new();
    let uri = server.url("/r.bin");
    let run = download(&server, &dir, &["-x4", "-s4", "-k1M"], &[&uri]);
    assert_exact_or_failed_cleanly(&run, &dir, "r.bin", &uri, &data, true);
}

/// The segment connections fail with "Invalid range header", the first connection's 200 carries
/// the whole file, so aria2 finishes from it and exits 0 (reference §6, and observed with aria2c
/// 1.36 on this very test). Wrong bytes must never reach the file.
#[test]
fn wrong_content_range_on_segments_completes_from_first_connection() {
    let server = TestServer::plain();
    let data = content(22, 4 * MIB + 99);
    server.route(
        "/w.bin",
        Route::bytes(data.clone()).fault(Fault::WrongContentRange, When::SegmentRequests),
    );
    let dir = TestDir::new();
    let uri = server.url("/w.bin");
    let run = download(&server, &dir, &["-x4", "-s4", "-k1M"], &[&uri]);
    assert_downloaded(&run, &dir, "w.bin", &data);
}

/// The same with a Content-Range that cannot be read at all: aria2c drops the segment connection
/// and finishes from the first one (exit 0). ringdl took the unreadable head for the download's
/// failure, asked for the range again until --max-tries ran out and failed the whole download
/// (exit 22) with an empty file.
#[test]
fn malformed_content_range_on_segments_completes_from_first_connection() {
    let server = TestServer::plain();
    let data = content(25, 4 * MIB + 99);
    server.route(
        "/m.bin",
        Route::bytes(data.clone())
            .throttle(256 * 1024, Duration::from_millis(10))
            .fault(Fault::MalformedContentRange, When::SegmentRequests),
    );
    let dir = TestDir::new();
    let uri = server.url("/m.bin");
    let run = download(&server, &dir, &["-x4", "-s4", "-k1M"], &[&uri]);
    assert_downloaded(&run, &dir, "m.bin", &data);
}

/// aria2 1.36 reads heads of 600 KB without complaint; a ringdl with a bounded head buffer may
/// refuse one over 64 KiB instead, as long as it says so cleanly.
#[test]
fn response_head_over_64k() {
    let server = TestServer::plain();
    let data = content(23, 10_000);
    server.route(
        "/h.bin",
        Route::bytes(data.clone()).fault(Fault::HugeHead, When::Always),
    );
    let dir = TestDir::new();
    let uri = server.url("/h.bin");
    let run = download(&server, &dir, SINGLE, &[&uri]);
    assert_exact_or_failed_cleanly(&run, &dir, "h.bin", &uri, &data, false);
}

#[test]
fn bad_chunk_size_fails() {
    let server = TestServer::plain();
    server.route(
        "/c.bin",
        Route::bytes(content(24, 100_000))
            .chunked()
            .fault(Fault::BadChunkSize, When::Always),
    );
    let dir = TestDir::new();
    let uri = server.url("/c.bin");
    let run = download(&server, &dir, SINGLE, &[&uri]);
    assert_failed_cleanly(&run, &dir, "c.bin", &uri, false);
    // aria2c: "Bad chunk size: not hex string", errorCode=1 (ringdl said 22). An answer that is
    // not HTTP, a Content-Length that is no count and a Location that is no URL end with 1 too.
    assert_eq!(run.code(), 1, "{run}");
}

#[test]
fn content_length_larger_than_body_fails() {
    let server = TestServer::plain();
    server.route(
        "/l.bin",
        Route::bytes(content(25, 200_000)).fault(Fault::ContentLengthLie(50_000), When::Always),
    );
    let dir = TestDir::new();
    let uri = server.url("/l.bin");
    let run = download(&server, &dir, SINGLE, &[&uri]);
    assert_failed_cleanly(&run, &dir, "l.bin", &uri, true);
}

#[test]
fn content_length_larger_than_body_fails_split() {
    let server = TestServer::plain();
    server.route(
        "/l.bin",
        Route::bytes(content(26, 3 * MIB)).fault(Fault::ContentLengthLie(MIB as u64), When::Always),
    );
    let dir = TestDir::new();
    let uri = server.url("/l.bin");
    let run = download(&server, &dir, SPLIT, &[&uri]);
    assert_failed_cleanly(&run, &dir, "l.bin", &uri, true);
}

// ---------------------------------------------------------------------------------------------
// Certificates.

#[test]
fn certificate_for_another_host_exits_1() {
    let server = TestServer::builder().tls_wrong_host().start();
    server.route("/f.bin", Route::bytes(content(27, 1000)));
    let dir = TestDir::new();
    let uri = server.url("/f.bin");
    let run = download(&server, &dir, &[], &[&uri]);
    assert_failed(&run, 1, &uri);
    assert!(
        server.requests().is_empty(),
        "a request went over an unverified connection"
    );
    assert!(!dir.join("f.bin").exists());
}

#[test]
fn certificate_from_an_unknown_ca_exits_1() {
    let server = TestServer::https();
    server.route("/f.bin", Route::bytes(content(28, 1000)));
    let dir = TestDir::new();
    let uri = server.url("/f.bin");
    // No --ca-certificate: the system roots do not know the test CA.
    let run = ringdl(&dir, &["-d".to_string(), dir.arg(), uri.clone()]);
    assert_failed(&run, 1, &uri);
    assert!(
        server.requests().is_empty(),
        "a request went over an unverified connection"
    );
}

#[test]
fn check_certificate_false_accepts_another_host() {
    let server = TestServer::builder().tls_wrong_host().start();
    let data = content(29, 100_000);
    server.route("/f.bin", Route::bytes(data.clone()));
    let dir = TestDir::new();
    let run = ringdl(
        &dir,
        &[
            "-d".to_string(),
            dir.arg(),
            "--check-certificate=false".into(),
            server.url("/f.bin"),
        ],
    );
    assert_downloaded(&run, &dir, "f.bin", &data);
}

#[test]
fn localhost_name_over_tls() {
    let server = TestServer::https();
    let data = content(30, 100_000);
    server.route("/f.bin", Route::bytes(data.clone()));
    let dir = TestDir::new();
    let run = download(&server, &dir, &[], &[&server.url_localhost("/f.bin")]);
    assert_downloaded(&run, &dir, "f.bin", &data);
}

// ---------------------------------------------------------------------------------------------
// IPv6.

fn ipv6(server: TestServer) {
    if !server.has_ipv6() {
        eprintln!(
            "SKIPPED: {}: no IPv6 loopback ([::1]) on this machine",
            crate::support::test_name()
        );
        return;
    }
    let data = content(31, 2 * MIB + 1);
    server.route("/v6.bin", Route::bytes(data.clone()));
    let dir = TestDir::new();
    let run = download(
        &server,
        &dir,
        &["-x4", "-s4", "-k1M"],
        &[&server.url_v6("/v6.bin")],
    );
    assert_downloaded(&run, &dir, "v6.bin", &data);
}

#[test]
fn ipv6_literal() {
    ipv6(TestServer::plain());
}

#[test]
fn ipv6_literal_tls() {
    ipv6(TestServer::https());
}

/// Runs ringdl with `args` in `dir` where `name` resolves to `addrs` (in that order): a hosts
/// file bind-mounted over /etc/hosts in a mount namespace of its own (`unshare -m`), so nothing
/// outside the run sees it. None (after a loud skip) without root.
fn with_hosts(dir: &TestDir, name: &str, addrs: &[&str], args: &[String]) -> Option<Run> {
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    if !crate::support::skip_unless(root, "a private /etc/hosts needs root") {
        return None;
    }
    let hosts = dir.join("hosts");
    let lines: String = addrs.iter().map(|a| format!("{a} {name}\n")).collect();
    std::fs::write(&hosts, lines).expect("write hosts");
    let mut argv: Vec<String> = vec![
        "-m".into(),
        "sh".into(),
        "-c".into(),
        r#"mount --bind "$0" /etc/hosts && exec "$@""#.into(),
        hosts.display().to_string(),
        crate::support::binary_under_test().display().to_string(),
    ];
    argv.extend(args.iter().cloned());
    let run =
        crate::support::run_program("unshare".as_ref(), dir, &argv, crate::support::RUN_TIMEOUT);
    assert!(
        !run.output().contains("mount: "),
        "could not bind-mount the hosts file\n{run}"
    );
    Some(run)
}

/// Fetches `http://multi.test:PORT/multi.bin` into `dir` with `opts` and the INFO log on stdout,
/// where `multi.test` resolves to `addrs` (see [`with_hosts`]).
fn fetch_multi(dir: &TestDir, port: u16, addrs: &[&str], opts: &[&str]) -> Option<Run> {
    let mut args = vec![
        "-d".to_string(),
        dir.arg(),
        "--log-level=info".into(),
        "-l".into(),
        "-".into(),
    ];
    args.extend(opts.iter().map(|o| o.to_string()));
    args.push(format!("http://multi.test:{port}/multi.bin"));
    with_hosts(dir, "multi.test", addrs, &args)
}

/// A name whose first address refuses the connection ([::1], where the server does not listen):
/// the connect moves on to the next address and the download completes over it; the INFO log
/// shows both attempts in order.
#[test]
fn connect_tries_each_resolved_address() {
    let server = TestServer::builder().ipv4_only().start();
    let data = content(33, MIB + 3);
    server.route("/multi.bin", Route::bytes(data.clone()));
    let dir = TestDir::new();
    let port = server.port();
    let Some(run) = fetch_multi(&dir, port, &["::1", "127.0.0.1"], &[]) else {
        return;
    };
    assert_downloaded(&run, &dir, "multi.bin", &data);
    let out = run.output();
    let first = out.find(&format!("Connecting to [::1]:{port}"));
    let refused = out.find(&format!("Could not connect to [::1]:{port}"));
    let second = out.find(&format!("Connecting to 127.0.0.1:{port}"));
    assert!(
        matches!((first, refused, second), (Some(a), Some(b), Some(c)) if a < b && b < c),
        "expected a refused connect to [::1] and then one to 127.0.0.1\n{run}"
    );
}

/// Every address refuses: aria2's "Failed to establish connection" and exit 1, after trying each.
/// (The server holds the port on 127.0.0.1 so that nothing else takes it; the name resolves to
/// [::1] and 127.0.0.2, where nothing listens on it.)
#[test]
fn connect_fails_when_every_resolved_address_refuses() {
    let server = TestServer::builder().ipv4_only().start();
    let port = server.port();
    let dir = TestDir::new();
    let Some(run) = fetch_multi(&dir, port, &["::1", "127.0.0.2"], &["--max-tries=1"]) else {
        return;
    };
    assert_eq!(run.code(), 1, "{run}");
    assert_eq!(server.stats().connections, 0);
    let out = run.output();
    for addr in [format!("[::1]:{port}"), format!("127.0.0.2:{port}")] {
        assert!(
            out.contains(&format!("Connecting to {addr}")),
            "{addr} not tried\n{run}"
        );
    }
    assert!(
        !run.lines_with("Failed to establish connection").is_empty(),
        "no connection error line\n{run}"
    );
}

/// A file that cannot be created (its path is a directory) fails the download with aria2's
/// errorCode 16 and its words, on one connection or split, whatever arrived meanwhile: no control
/// file and nothing else is left, and the results table shows no speed, as aria2c's does (it
/// opens the file before it reads the body).
#[test]
fn a_file_that_cannot_be_created_fails_with_16_and_leaves_nothing() {
    let server = TestServer::plain();
    server.route("/f.bin", Route::bytes(content(91, 3 * MIB)));
    for split in [SINGLE, SPLIT] {
        let dir = TestDir::new();
        std::fs::create_dir(dir.join("sub")).unwrap();
        let mut args = vec!["--allow-overwrite=true", "-d"];
        let d = dir.arg();
        args.push(&d);
        args.extend_from_slice(&["-o", "sub"]);
        args.extend_from_slice(split);
        let url = server.url("/f.bin");
        args.push(&url);
        let run = ringdl(&dir, &args);
        assert_eq!(run.code(), 16, "{run}");
        let want = format!(
            "errorCode=16 Failed to open the file {}, cause: Is a directory",
            dir.join("sub").display()
        );
        assert_eq!(run.lines_with(&want).len(), 1, "{run}");
        let table = run.lines_with("|ERR |");
        assert_eq!(table.len(), 1, "{run}");
        assert!(table[0].contains("n/a"), "{run}");
        let left: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n != ".home")
            .collect();
        assert_eq!(left, vec!["sub".to_string()], "{run}");
        assert_eq!(std::fs::read_dir(dir.join("sub")).unwrap().count(), 0);
    }
}

/// Eight downloads whose files take the same name, started together: each gets a name of its own
/// (`x.bin`, `x.1.bin`, ... as aria2 renames) and its own bytes, even while the first files are
/// still being created.
#[test]
fn same_named_downloads_started_together_get_names_of_their_own() {
    let server = TestServer::plain();
    let bodies: Vec<Vec<u8>> = (0..8)
        .map(|i| content(200 + i, 300_000 + i as usize))
        .collect();
    let mut args = vec!["-Z".to_string(), "-j8".to_string()];
    for (i, b) in bodies.iter().enumerate() {
        server.route(&format!("/d{i}/x.bin"), Route::bytes(b.clone()));
        args.push(server.url(&format!("/d{i}/x.bin")));
    }
    let dir = TestDir::new();
    args.extend(["-d".to_string(), dir.arg()]);
    let run = ringdl(&dir, &args);
    assert_eq!(run.code(), 0, "{run}");
    let mut names: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n != ".home")
        .collect();
    names.sort();
    let mut want: Vec<String> = (1..8).map(|i| format!("x.{i}.bin")).collect();
    want.push("x.bin".into());
    want.sort();
    assert_eq!(names, want, "{run}");
    let mut got: Vec<String> = names.iter().map(|n| sha256_file(&dir.join(n))).collect();
    let mut expected: Vec<String> = bodies.iter().map(|b| sha256_hex(b)).collect();
    got.sort();
    expected.sort();
    assert_eq!(got, expected, "{run}");
}
