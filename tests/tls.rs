//! TLS options and failures: a client certificate (`--certificate`, `--private-key`), the oldest
//! version allowed (`--min-tls-version`), and certificate failures named with their host and
//! reason.

use crate::support::server::{Fault, Route, TestServer, TlsVersions, When};
use crate::support::{
    content, have_program, require_peer, ringdl, run_program, sha256_file, sha256_hex, Run,
    SplitMix64, TestDir, RUN_TIMEOUT,
};

fn get(dir: &TestDir, server: &TestServer, opts: &[String], path: &str) -> Run {
    ringdl(dir, &args(dir, server, opts, path))
}

/// aria2c with the same command line, where the suite has it (None after a loud skip).
fn aria2c_get(server: &TestServer, opts: &[String], path: &str) -> Option<(TestDir, Run)> {
    if !require_peer("aria2c", have_program("aria2c")) {
        return None;
    }
    let dir = TestDir::new();
    let run = run_program(
        std::path::Path::new("aria2c"),
        &dir,
        &args(&dir, server, opts, path),
        RUN_TIMEOUT,
    );
    Some((dir, run))
}

/// The run ended with 0 and left the file at `path` (the URL's path) byte-exact.
fn assert_exact(run: &Run, dir: &TestDir, path: &str, data: &[u8], what: &str) {
    assert_eq!(run.code(), 0, "{what}: {run}");
    let name = path.trim_start_matches('/');
    assert_eq!(sha256_file(&dir.join(name)), sha256_hex(data), "{what}");
}

fn args(dir: &TestDir, server: &TestServer, opts: &[String], path: &str) -> Vec<String> {
    let mut args: Vec<String> = vec![
        "--no-conf".into(),
        format!("-d{}", dir.path().display()),
        format!("--ca-certificate={}", server.ca_file().display()),
        "--max-tries=1".into(),
    ];
    args.extend(opts.iter().cloned());
    args.push(server.url(path));
    args
}

/// A server that requires a client certificate: refused without one, with a line that says what
/// is missing; served with `--certificate` and `--private-key` (or both in one PEM file).
#[test]
fn client_certificate_for_a_server_that_requires_one() {
    let server = TestServer::builder().tls_client_auth().start();
    let data = content(601, 2 << 20);
    server.route("/c.bin", Route::bytes(data.clone()));
    let dir = TestDir::new();
    let run = get(&dir, &server, &[], "/c.bin");
    assert_eq!(run.code(), 1, "{run}");
    assert!(server.requests().is_empty());
    assert_eq!(
        run.lines_with("requires a client certificate").len(),
        1,
        "{run}"
    );

    let (cert, key) = server.client_identity();
    let dir = TestDir::new();
    let opts = [
        format!("--certificate={}", cert.display()),
        format!("--private-key={}", key.display()),
        "-x4".into(),
        "-k1M".into(),
    ];
    let run = get(&dir, &server, &opts, "/c.bin");
    assert_eq!(run.code(), 0, "{run}");
    assert_eq!(sha256_file(&dir.join("c.bin")), sha256_hex(&data));
    // aria2c agrees: refused without the certificate, served with it.
    if let Some((_, run)) = aria2c_get(&server, &[], "/c.bin") {
        assert_eq!(run.code(), 1, "aria2c without a certificate: {run}");
        let (adir, run) = aria2c_get(&server, &opts, "/c.bin").expect("aria2c is here");
        assert_eq!(run.code(), 0, "aria2c: {run}");
        assert_eq!(sha256_file(&adir.join("c.bin")), sha256_hex(&data));
    }

    let dir = TestDir::new();
    let both = dir.join("identity.pem");
    let mut pem = std::fs::read(cert).unwrap();
    pem.extend(std::fs::read(key).unwrap());
    std::fs::write(&both, pem).unwrap();
    let run = get(
        &dir,
        &server,
        &[format!("--certificate={}", both.display())],
        "/c.bin",
    );
    assert_eq!(run.code(), 0, "{run}");

    // A file that is not a certificate: one clear line, exit 1, nothing sent.
    let dir = TestDir::new();
    let junk = dir.join("junk.pem");
    std::fs::write(&junk, "not a certificate\n").unwrap();
    let run = get(
        &dir,
        &server,
        &[format!("--certificate={}", junk.display())],
        "/c.bin",
    );
    assert_eq!(run.code(), 1, "{run}");
    assert_eq!(run.lines_with("no certificate found").len(), 1, "{run}");
}

/// `--min-tls-version=TLSv1.3` refuses a server that only speaks TLS 1.2; the default (TLSv1.2)
/// takes it.
#[test]
fn min_tls_version() {
    let old = TestServer::builder()
        .tls()
        .tls_versions(TlsVersions::Tls12Only)
        .start();
    let data = content(602, 100_000);
    old.route("/o.bin", Route::bytes(data.clone()));
    let dir = TestDir::new();
    let run = get(&dir, &old, &[], "/o.bin");
    assert_eq!(run.code(), 0, "{run}");
    let dir = TestDir::new();
    let run = get(&dir, &old, &["--min-tls-version=TLSv1.3".into()], "/o.bin");
    assert_eq!(run.code(), 1, "{run}");
    assert!(old.requests().len() == 1, "only the first run's request");
    let new = TestServer::https();
    new.route("/n.bin", Route::bytes(data.clone()));
    let dir = TestDir::new();
    let run = get(&dir, &new, &["--min-tls-version=TLSv1.3".into()], "/n.bin");
    assert_eq!(run.code(), 0, "{run}");
    // aria2c exits the same way in each case.
    let v13 = ["--min-tls-version=TLSv1.3".to_string()];
    if let Some((_, run)) = aria2c_get(&old, &[], "/o.bin") {
        assert_eq!(run.code(), 0, "aria2c: {run}");
        let (_, run) = aria2c_get(&old, &v13, "/o.bin").expect("aria2c is here");
        assert_eq!(run.code(), 1, "aria2c: {run}");
        let (_, run) = aria2c_get(&new, &v13, "/n.bin").expect("aria2c is here");
        assert_eq!(run.code(), 0, "aria2c: {run}");
    }
}

/// A certificate for another name and one from an unknown authority: the error line names the
/// host and the reason in words, not a library's error code.
#[test]
fn certificate_failures_name_the_host_and_the_reason() {
    let wrong = TestServer::builder().tls_wrong_host().start();
    wrong.route("/f.bin", Route::bytes(content(603, 1000)));
    let dir = TestDir::new();
    let run = get(&dir, &wrong, &[], "/f.bin");
    assert_eq!(run.code(), 1, "{run}");
    let line = run.lines_with("handshake failure: 127.0.0.1: ");
    assert_eq!(line.len(), 1, "{run}");
    assert!(line[0].contains("for another name"), "{run}");

    let unknown = TestServer::https();
    unknown.route("/f.bin", Route::bytes(content(604, 1000)));
    let dir = TestDir::new();
    let args = vec![
        "--no-conf".to_string(),
        format!("-d{}", dir.path().display()),
        unknown.url("/f.bin"),
    ];
    let run = ringdl(&dir, &args);
    assert_eq!(run.code(), 1, "{run}");
    let line = run.lines_with("handshake failure: 127.0.0.1: ");
    assert_eq!(line.len(), 1, "{run}");
    assert!(
        line[0].contains("not signed by a trusted authority"),
        "{run}"
    );
}

/// `--ca-certificate` naming the server's own certificate trusts it, as aria2c (GnuTLS) does: a
/// self-signed certificate that says it is a CA (`openssl req -x509`'s default; webpki refused it
/// as an end entity, exit 1), and a CA-signed leaf pinned without its CA (refused as "not signed
/// by a trusted authority"). aria2c is asked the same where the suite has it. The name must still
/// match, and a file that does not hold the certificate still does not trust it.
#[test]
fn a_servers_own_certificate_in_the_ca_file_is_trusted() {
    let data = content(605, 5000);
    let pinned = |server: &TestServer| {
        vec![
            "--no-conf".to_string(),
            "--max-tries=1".into(),
            format!("--ca-certificate={}", server.leaf_file().display()),
            server.url("/f.bin"),
        ]
    };
    let self_signed = TestServer::builder().tls_self_signed().start();
    let leaf = TestServer::https();
    for server in [&self_signed, &leaf] {
        server.route("/f.bin", Route::bytes(data.clone()));
        let dir = TestDir::new();
        let mut args = pinned(server);
        args.insert(1, format!("-d{}", dir.path().display()));
        let run = ringdl(&dir, &args);
        assert_eq!(run.code(), 0, "{run}");
        assert_eq!(sha256_file(&dir.join("f.bin")), sha256_hex(&data));
        if require_peer("aria2c", have_program("aria2c")) {
            let adir = TestDir::new();
            args[1] = format!("-d{}", adir.path().display());
            let theirs = run_program(std::path::Path::new("aria2c"), &adir, &args, RUN_TIMEOUT);
            assert_eq!(theirs.code(), 0, "aria2c: {theirs}");
        }
    }
    // Pinned, but for another name: refused.
    let wrong = TestServer::builder()
        .tls_wrong_host()
        .tls_self_signed()
        .start();
    wrong.route("/f.bin", Route::bytes(data.clone()));
    let dir = TestDir::new();
    let mut args = pinned(&wrong);
    args.insert(1, format!("-d{}", dir.path().display()));
    let run = ringdl(&dir, &args);
    assert_eq!(run.code(), 1, "{run}");
    assert!(run.output().contains("for another name"), "{run}");
    // Another server's certificate in the file: refused.
    let dir = TestDir::new();
    let mut args = pinned(&self_signed);
    args.insert(1, format!("-d{}", dir.path().display()));
    *args.last_mut().unwrap() = leaf.url("/f.bin");
    let run = ringdl(&dir, &args);
    assert_eq!(run.code(), 1, "{run}");
}

/// A body's TLS records are opened where they land in the write blocks. Records of one byte (far
/// more headers and tags than data), of odd sizes, of exactly a record's maximum and beyond it,
/// cut by the blocks' ends and by the ranges of a split download, over TLS 1.3 and 1.2: every file
/// arrives byte-exact.
#[test]
fn records_of_every_size_are_opened_in_the_write_blocks() {
    let cases: [(usize, usize); 6] = [
        (1, 70_001),
        (7, 300_001),
        (1000, 1_000_003),
        (16_383, 2_000_000),
        (16_384, 3 << 20),
        (40_000, (3 << 20) + 5),
    ];
    for versions in [TlsVersions::Both, TlsVersions::Tls12Only] {
        let server = TestServer::builder().tls().tls_versions(versions).start();
        for (i, (piece, size)) in cases.into_iter().enumerate() {
            let data = content(700 + i as u64, size);
            let path = format!("/r{i}.bin");
            server.route(
                &path,
                Route::bytes(data.clone()).throttle(piece, std::time::Duration::ZERO),
            );
            for opts in [vec![], vec!["-x4".to_string(), "-k1M".to_string()]] {
                let dir = TestDir::new();
                let run = get(&dir, &server, &opts, &path);
                let what = format!("{versions:?}, records of {piece} bytes, {opts:?}");
                assert_exact(&run, &dir, &path, &data, &what);
            }
        }
    }
}

/// The record that straddles a write block's end is opened in the block's spare bytes, and its
/// plaintext past the end goes to the next block. When that record also ends the body and the
/// server's close_notify follows it (`Connection: close`), the close_notify lands after it in the
/// next block, and must still reach the TLS layer rather than be taken for lost records. The last
/// record here straddles the first or second block's end, with 1 MiB blocks (`-s1`), 512 KiB (a
/// default command line) and 128 KiB (seventeen slots; the file is too small to split), over TLS 1.3
/// and 1.2: every download ends byte-exact on its one try.
#[test]
fn a_last_record_straddling_a_block_end_before_close_notify_ends_the_download() {
    const PIECE: usize = 10_000;
    for versions in [TlsVersions::Both, TlsVersions::Tls12Only] {
        let server = TestServer::builder().tls().tls_versions(versions).start();
        let layouts: [(&[&str], usize); 3] = [
            (&["-s1"], 1 << 20),
            (&[], 512 << 10),
            (&["-x16", "-s17"], 128 << 10),
        ];
        for (i, (opts, block)) in layouts.into_iter().enumerate() {
            for k in 1..=2 {
                // Records of PIECE bytes from the body's start; the last one starts before the
                // k-th block's end and ends after it.
                let end = k * block;
                let size = end - end % PIECE + PIECE - 1;
                assert!(size - (size - 1) % PIECE - 1 < end && size > end);
                let data = content(1100 + 10 * i as u64 + k as u64, size);
                let path = format!("/s{i}-{k}.bin");
                server.route(
                    &path,
                    Route::bytes(data.clone()).throttle(PIECE, std::time::Duration::ZERO),
                );
                let mut opts: Vec<String> = opts.iter().map(|o| o.to_string()).collect();
                opts.push("--enable-http-keep-alive=false".into());
                let dir = TestDir::new();
                let run = get(&dir, &server, &opts, &path);
                let what = format!("{versions:?} {opts:?} size {size}");
                assert_exact(&run, &dir, &path, &data, &what);
            }
        }
    }
}

/// A close-delimited HTTPS body ended by close_notify from a server that then waits for the
/// client's close_notify before it closes TCP (RFC 8446 6.1 allows it; OpenSSL servers calling
/// `SSL_shutdown()` twice do it): the body is complete at the close_notify, at once, on TLS 1.3
/// and 1.2, whatever the block layout. (Before, ringdl waited for a FIN that never came, until
/// `--timeout`, and exited 2.) aria2c finishes at once too.
#[test]
fn close_notify_ends_a_close_delimited_body_without_waiting_for_the_close() {
    for versions in [TlsVersions::Both, TlsVersions::Tls12Only] {
        let server = TestServer::builder().tls().tls_versions(versions).start();
        for (i, len) in [1usize, 70_000, 1_300_000].into_iter().enumerate() {
            let data = content(1200 + i as u64, len);
            let path = format!("/n{i}.bin");
            server.route(&path, Route::bytes(data.clone()).close_notify_then_wait());
            let dir = TestDir::new();
            let opts = vec!["--timeout=8".to_string()];
            let started = std::time::Instant::now();
            let run = get(&dir, &server, &opts, &path);
            let what = format!("{versions:?} {len} bytes");
            assert_exact(&run, &dir, &path, &data, &what);
            assert!(
                started.elapsed() < std::time::Duration::from_secs(4),
                "{what}: took {:?}",
                started.elapsed()
            );
            if i == 2 {
                if let Some((adir, arun)) = aria2c_get(&server, &opts, &path) {
                    assert_exact(&arun, &adir, &path, &data, &format!("aria2c: {what}"));
                }
            }
        }
    }
}

/// Every TLS connection ringdl opens ends with its close_notify (RFC 8446 6.1, RFC 5246 7.2.1
/// make it a MUST): kept-alive connections at the end of a run, the several connections of a split
/// download, and a server's own close_notify answered. Before, none was ever sent, and OpenSSL
/// servers logged an unexpected EOF for every download.
#[test]
fn every_tls_connection_ends_with_our_close_notify() {
    for versions in [TlsVersions::Both, TlsVersions::Tls12Only] {
        let server = TestServer::builder().tls().tls_versions(versions).start();
        let one = content(1301, 300_000);
        let split = content(1302, 6 << 20);
        let closed = content(1303, 90_000);
        server.route("/one.bin", Route::bytes(one.clone()));
        server.route("/split.bin", Route::bytes(split.clone()));
        server.route(
            "/closed.bin",
            Route::bytes(closed.clone()).close_notify_then_wait(),
        );
        let cases: [(&str, &[u8], &[&str]); 3] = [
            ("/one.bin", &one, &[]),
            ("/split.bin", &split, &["-x4", "-s4", "-k1M"]),
            ("/closed.bin", &closed, &[]),
        ];
        for (path, data, opts) in cases {
            let before = server.stats();
            let dir = TestDir::new();
            let opts: Vec<String> = opts.iter().map(|o| o.to_string()).collect();
            let run = get(&dir, &server, &opts, path);
            let what = format!("{versions:?} {path}");
            assert_exact(&run, &dir, path, data, &what);
            // The server counts on its own threads: wait for them to have read the ends.
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
            let (handshakes, notifies) = loop {
                let now = server.stats();
                let pair = (
                    now.tls_handshakes - before.tls_handshakes,
                    now.client_close_notifies - before.client_close_notifies,
                );
                if pair.0 == pair.1 || std::time::Instant::now() > deadline {
                    break pair;
                }
                std::thread::sleep(std::time::Duration::from_millis(20));
            };
            assert!(handshakes > 0, "{what}");
            assert_eq!(
                notifies, handshakes,
                "{what}: close_notify on {notifies} of {handshakes} connections"
            );
        }
    }
}

/// A server that moves to new keys in the middle of bodies, and asks the client to do the same:
/// the records after each key update are opened with the next keys, and the client's answer and
/// its next request (a second file on the same connection) are under its own next keys.
#[test]
fn key_updates_in_the_middle_of_bodies_are_followed() {
    let server = TestServer::builder().tls().start();
    let first = content(801, 2_000_000);
    let second = content(802, 700_001);
    server.route(
        "/k1.bin",
        Route::bytes(first.clone())
            .throttle(100_000, std::time::Duration::ZERO)
            .key_updates(),
    );
    server.route(
        "/k2.bin",
        Route::bytes(second.clone())
            .throttle(30_000, std::time::Duration::ZERO)
            .key_updates(),
    );
    let dir = TestDir::new();
    let mut args = args(
        &dir,
        &server,
        &["-Z".to_string(), "-j1".to_string()],
        "/k1.bin",
    );
    args.push(server.url("/k2.bin"));
    let run = ringdl(&dir, &args);
    assert_eq!(run.code(), 0, "{run}");
    assert_eq!(sha256_file(&dir.join("k1.bin")), sha256_hex(&first));
    assert_eq!(sha256_file(&dir.join("k2.bin")), sha256_hex(&second));
    assert_eq!(
        server.stats().connections,
        1,
        "the second file came over the first one's connection, after its key updates"
    );
}

/// Records of random sizes, bodies cut part-way (reset, truncated, closed without close_notify) in
/// the first requests at random offsets, random splits, both TLS versions: each cut leaves a record
/// half-received in a write block, and every download still ends byte-exact from its retries.
#[test]
fn random_records_and_cuts_over_tls_stay_exact() {
    let mut rng = SplitMix64::new(0x7e5_7ec0);
    for versions in [TlsVersions::Both, TlsVersions::Tls12Only] {
        let server = TestServer::builder().tls().tls_versions(versions).start();
        for i in 0..6 {
            let size = 1 + (rng.next_u64() % 3_000_000) as usize;
            let piece = 1 + (rng.next_u64() % 40_000) as usize;
            let cut = rng.next_u64() % size as u64;
            let fault = match rng.next_u64() % 3 {
                0 => Fault::ResetAfter(cut),
                1 => Fault::TruncateAfter(cut),
                _ => Fault::TruncateWithoutCloseNotify(cut),
            };
            let conns = [1, 2, 4][(rng.next_u64() % 3) as usize];
            let data = content(900 + i, size);
            let path = format!("/x{i}.bin");
            server.route(
                &path,
                Route::bytes(data.clone())
                    .throttle(piece, std::time::Duration::ZERO)
                    .fault(fault, When::FirstRequests(2)),
            );
            let dir = TestDir::new();
            let mut a = args(&dir, &server, &[format!("-x{conns}"), "-k1M".into()], &path);
            a.retain(|x| x != "--max-tries=1");
            a.push("--max-tries=0".into());
            a.push("--retry-wait=0".into());
            let run = ringdl(&dir, &a);
            let what = format!("{versions:?} size {size} records {piece} {fault:?} -x{conns}");
            assert_exact(&run, &dir, &path, &data, &what);
        }
    }
}

/// Eight connections over TLS, with every write block taken: a connection whose block is part
/// filled takes the next record whatever its size, and what runs past the block waits in memory
/// until a block is free. One that kept its block while it waited for another would wait for
/// ever once all of them did (and a debug build asserts after every step that none does). Over
/// TLS 1.3 and 1.2, with records of 16 KiB and of odd sizes: every download ends byte-exact on
/// its one try.
#[test]
fn connections_waiting_for_write_blocks_keep_none_part_filled() {
    for versions in [TlsVersions::Both, TlsVersions::Tls12Only] {
        let server = TestServer::builder().tls().tls_versions(versions).start();
        for (i, piece) in [16_384usize, 12_345].into_iter().enumerate() {
            let data = content(1300 + i as u64, (24 << 20) + 4321);
            let path = format!("/w{i}.bin");
            server.route(
                &path,
                Route::bytes(data.clone()).throttle(piece, std::time::Duration::ZERO),
            );
            let dir = TestDir::new();
            let run = get(&dir, &server, &["-x8".into(), "-s8".into()], &path);
            let what = format!("{versions:?}, records of {piece} bytes");
            assert_exact(&run, &dir, &path, &data, &what);
        }
    }
}

/// Three write blocks serve eight connections, and every connection is slow (its server sends a
/// record now and then): a connection that has kept its block for half a second hands it over
/// mid-block. Its TLS records not yet opened go back to the read block, its plaintext
/// after the last 4 KiB boundary back to memory, and it goes on later in a fresh block. Over
/// TLS 1.3 and 1.2, with records of 16 KiB and of odd sizes: blocks were handed over, and every
/// download ends byte-exact on its one try.
#[test]
fn a_slow_connection_hands_its_block_over_mid_record_and_loses_nothing() {
    for versions in [TlsVersions::Both, TlsVersions::Tls12Only] {
        let server = TestServer::builder().tls().tls_versions(versions).start();
        for (i, piece) in [16_384usize, 12_345].into_iter().enumerate() {
            // 1 MiB per connection at 250-330 KB/s: the first three hold blocks for seconds.
            let data = content(1400 + i as u64, (8 << 20) + 4321);
            let path = format!("/slow{i}.bin");
            let pause = std::time::Duration::from_millis(50);
            server.route(&path, Route::bytes(data.clone()).throttle(piece, pause));
            let dir = TestDir::new();
            let log = dir.join("run.log");
            let opts = [
                "-x8".to_string(),
                "-s8".to_string(),
                "-k1M".to_string(),
                format!("-l{}", log.display()),
                "--log-level=debug".to_string(),
            ];
            let run = get(&dir, &server, &opts, &path);
            let what = format!("{versions:?}, records of {piece} bytes");
            assert_exact(&run, &dir, &path, &data, &what);
            let text = std::fs::read_to_string(&log).expect("the log");
            assert!(
                text.contains("Handing its write block over"),
                "{what}: no block was handed over"
            );
        }
    }
}
