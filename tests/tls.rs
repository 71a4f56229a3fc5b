//! TLS options and failures: a client certificate (`--certificate`, `--private-key`), the oldest
//! version allowed (`--min-tls-version`), and certificate failures named with their host and
//! reason.

use crate::support::server::{Route, TestServer, TlsVersions};
use crate::support::{
    content, have_program, require_peer, ringdl, run_program, sha256_file, sha256_hex, Run,
    TestDir, RUN_TIMEOUT,
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
