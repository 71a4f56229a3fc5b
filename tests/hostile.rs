//! A hostile network between ringdl and real TLS servers: the tampering proxy
//! (`support::tamper`) in front of nginx, `openssl s_server` and the in-repo server, on TLS 1.2
//! and 1.3, AES-GCM and ChaCha20, with bodies framed by Content-Length, chunked or the close,
//! fetched over one connection and split over four. For every tamper, once (a retry goes through
//! clean) the run ends 0 with the file byte-exact; on every connection, it fails without trusting
//! a wrong byte: a later `-c` run over what it left, with no one in the middle, ends byte-exact
//! (a control file, or without one the file's length, claiming a byte the server did not send
//! would keep it). Plus what a TLS server may do mid-body that well-behaved tests never do:
//! TLS 1.3 key updates asked of ringdl, a TLS 1.2 HelloRequest (openssl `s_server`'s commands).
use crate::support::nginx::{write_certificates, Nginx};
use crate::support::ports;
use crate::support::server::{Route, TestServer, TlsVersions};
use crate::support::tamper::{Tamper, TamperProxy, Times};
use crate::support::*;
use std::io::{BufRead, BufReader, Write};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const LEN: usize = 4 << 20;

/// Who serves the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// The in-repo server (rustls, AES-GCM): Content-Length, chunked, close-delimited, or
    /// Content-Length with key updates asked of the client mid-body.
    InRepo(Framing),
    Nginx,
    /// `openssl s_server -WWW`: HTTP/1.0, the body ended by the close (close_notify first).
    SServer,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Framing {
    Length,
    Chunked,
    Close,
    KeyUpdates,
}

#[derive(Debug, Clone, Copy)]
struct Setup {
    kind: Kind,
    tls12: bool,
    chacha: bool,
    split: bool,
}

/// The combinations each tamper runs on: every server, version, suite family and framing, and
/// split downloads where the server takes ranges.
const SETUPS: [Setup; 12] = [
    Setup {
        kind: Kind::InRepo(Framing::Length),
        tls12: false,
        chacha: false,
        split: false,
    },
    Setup {
        kind: Kind::InRepo(Framing::Length),
        tls12: true,
        chacha: false,
        split: true,
    },
    Setup {
        kind: Kind::InRepo(Framing::Chunked),
        tls12: false,
        chacha: false,
        split: false,
    },
    Setup {
        kind: Kind::InRepo(Framing::Close),
        tls12: true,
        chacha: false,
        split: false,
    },
    Setup {
        kind: Kind::InRepo(Framing::KeyUpdates),
        tls12: false,
        chacha: false,
        split: true,
    },
    Setup {
        kind: Kind::Nginx,
        tls12: false,
        chacha: false,
        split: true,
    },
    Setup {
        kind: Kind::Nginx,
        tls12: false,
        chacha: true,
        split: false,
    },
    Setup {
        kind: Kind::Nginx,
        tls12: true,
        chacha: true,
        split: true,
    },
    Setup {
        kind: Kind::Nginx,
        tls12: true,
        chacha: false,
        split: false,
    },
    Setup {
        kind: Kind::SServer,
        tls12: false,
        chacha: true,
        split: false,
    },
    Setup {
        kind: Kind::SServer,
        tls12: true,
        chacha: false,
        split: false,
    },
    Setup {
        kind: Kind::SServer,
        tls12: true,
        chacha: true,
        split: false,
    },
];

/// A running origin: where it listens, the CA that signed it, and what keeps it alive.
struct Origin {
    addr: SocketAddr,
    ca: PathBuf,
    /// Ranges taken: a later `-c` run can go to it directly.
    ranges: bool,
    _keep: Keep,
}

enum Keep {
    InRepo(#[allow(dead_code)] TestServer),
    Nginx(#[allow(dead_code)] Nginx, #[allow(dead_code)] TestDir),
    SServer(#[allow(dead_code)] SServer),
}

/// `openssl s_server`, killed when dropped.
struct SServer {
    child: Child,
    _dir: tempfile::TempDir,
}

impl Drop for SServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn openssl_present() -> bool {
    require_peer("openssl", have_program("openssl"))
}

/// The cipher options of `openssl s_server` for one version and suite family.
fn openssl_suite(tls12: bool, chacha: bool) -> Vec<String> {
    match (tls12, chacha) {
        (true, true) => vec![
            "-tls1_2".into(),
            "-cipher".into(),
            "ECDHE-ECDSA-CHACHA20-POLY1305".into(),
        ],
        (true, false) => vec![
            "-tls1_2".into(),
            "-cipher".into(),
            "ECDHE-ECDSA-AES128-GCM-SHA256".into(),
        ],
        (false, true) => vec![
            "-tls1_3".into(),
            "-ciphersuites".into(),
            "TLS_CHACHA20_POLY1305_SHA256".into(),
        ],
        (false, false) => vec![
            "-tls1_3".into(),
            "-ciphersuites".into(),
            "TLS_AES_128_GCM_SHA256".into(),
        ],
    }
}

/// Starts `openssl s_server` in `dir` (which holds the certificates) with `args`; `None` after a
/// loud skip when openssl is missing. Its stdin and stdout are pipes.
fn s_server(dir: tempfile::TempDir, args: &[String]) -> Option<(SServer, u16)> {
    if !openssl_present() {
        return None;
    }
    for _ in 0..5 {
        let port = ports::port_for_child();
        let mut child = Command::new("openssl")
            .arg("s_server")
            .arg("-accept")
            .arg(format!("127.0.0.1:{port}"))
            .arg("-cert")
            .arg(dir.path().join("server.pem"))
            .arg("-key")
            .arg(dir.path().join("server.key"))
            .args(args)
            .current_dir(dir.path())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("openssl s_server");
        match ports::wait_until_child_listens(&mut child, &[port], Duration::from_secs(10)) {
            Ok(()) => return Some((SServer { child, _dir: dir }, port)),
            Err(_) => {
                let _ = child.kill();
                let _ = child.wait();
            }
        }
    }
    panic!("openssl s_server did not start");
}

fn start(setup: Setup, data: &[u8]) -> Option<Origin> {
    match setup.kind {
        Kind::InRepo(framing) => {
            let versions = if setup.tls12 {
                TlsVersions::Tls12Only
            } else {
                TlsVersions::Both
            };
            let server = TestServer::builder().tls().tls_versions(versions).start();
            let route = Route::bytes(data.to_vec());
            let route = match framing {
                Framing::Length => route,
                Framing::Chunked => route.chunked(),
                Framing::Close => route.close_delimited(),
                Framing::KeyUpdates => route.key_updates(),
            };
            server.route("/f.bin", route);
            Some(Origin {
                addr: server.addr(),
                ca: server.ca_file().to_path_buf(),
                ranges: matches!(framing, Framing::Length | Framing::KeyUpdates),
                _keep: Keep::InRepo(server),
            })
        }
        Kind::Nginx => {
            let root = TestDir::new();
            std::fs::write(root.join("f.bin"), data).expect("root file");
            let (protocols, extra) = match (setup.tls12, setup.chacha) {
                (true, true) => ("TLSv1.2", "ssl_ciphers ECDHE-ECDSA-CHACHA20-POLY1305;"),
                (true, false) => ("TLSv1.2", "ssl_ciphers ECDHE-ECDSA-AES128-GCM-SHA256;"),
                (false, true) => (
                    "TLSv1.3",
                    "ssl_conf_command Ciphersuites TLS_CHACHA20_POLY1305_SHA256;",
                ),
                (false, false) => ("TLSv1.3", ""),
            };
            let nginx = Nginx::start_tls(root.path(), protocols, extra)?;
            Some(Origin {
                addr: SocketAddr::from(([127, 0, 0, 1], nginx.https_port())),
                ca: nginx.ca_path(),
                ranges: true,
                _keep: Keep::Nginx(nginx, root),
            })
        }
        Kind::SServer => {
            let dir = tempfile::Builder::new()
                .prefix("ringdl-sserver-")
                .tempdir()
                .expect("dir");
            write_certificates(dir.path());
            std::fs::write(dir.path().join("f.bin"), data).expect("served file");
            let ca = dir.path().join("ca.pem");
            let mut args = vec!["-WWW".to_string(), "-quiet".to_string()];
            args.extend(openssl_suite(setup.tls12, setup.chacha));
            let (server, port) = s_server(dir, &args)?;
            Some(Origin {
                addr: SocketAddr::from(([127, 0, 0, 1], port)),
                ca,
                ranges: false,
                _keep: Keep::SServer(server),
            })
        }
    }
}

fn run_args(dir: &TestDir, ca: &Path, port: u16, split: bool, extra: &[&str]) -> Vec<String> {
    let mut args: Vec<String> = vec![
        "--no-conf".into(),
        format!("-d{}", dir.path().display()),
        format!("--ca-certificate={}", ca.display()),
        "--retry-wait=0".into(),
        "--timeout=10".into(),
    ];
    if split {
        args.extend(["-x4", "-s4", "-k1M"].map(String::from));
    }
    args.extend(extra.iter().map(|s| s.to_string()));
    args.push(format!("https://127.0.0.1:{port}/f.bin"));
    args
}

/// Runs every setup through `tamper`: once (exit 0, exact), and on every connection (a failure
/// that trusts nothing wrong, which a clean `-c` run finishes). Returns the lines that broke.
fn through(tamper: Tamper) -> Vec<String> {
    let mut broken = Vec::new();
    for (i, setup) in SETUPS.iter().enumerate() {
        let data = content(0x7a3e_0000 + i as u64, LEN);
        let Some(origin) = start(*setup, &data) else {
            return broken;
        };
        let what = format!("{tamper:?} on {setup:?}");
        // Once: a retry goes through clean.
        let proxy = TamperProxy::start(origin.addr, tamper, Times::Once);
        let dir = TestDir::new();
        let run = ringdl(
            &dir,
            &run_args(&dir, &origin.ca, proxy.port(), setup.split, &[]),
        );
        if proxy.tampered() == 0 {
            broken.push(format!("{what}: the proxy never tampered\n{run}"));
        }
        if run.code() != 0 || sha256_file(&dir.join("f.bin")) != sha256_hex(&data) {
            broken.push(format!(
                "{what}, once: not exact, exit {:?}\n{run}",
                run.code()
            ));
            continue;
        }
        if tamper == Tamper::Trickle {
            continue;
        }
        // Always, with two tries: the download fails, said as a failure after the handshake
        // (not a handshake failure) where a record was refused.
        let proxy = TamperProxy::start(origin.addr, tamper, Times::Always);
        let dir = TestDir::new();
        let run = ringdl(
            &dir,
            &run_args(
                &dir,
                &origin.ca,
                proxy.port(),
                setup.split,
                &["--max-tries=2"],
            ),
        );
        let file = dir.join("f.bin");
        if run.code() == 0 {
            broken.push(format!("{what}, always: exit 0\n{run}"));
            continue;
        }
        if tamper != Tamper::Truncate && !run.output().contains("Failed to receive data") {
            broken.push(format!(
                "{what}, always: not said as a failed receive\n{run}"
            ));
        }
        if run.output().contains("handshake failure") {
            broken.push(format!("{what}, always: called a handshake failure\n{run}"));
        }
        // What it left trusts no wrong byte: what its control file claims, or without one the
        // whole file (what `-c` takes by its length), is the source's.
        let left_bytes = std::fs::read(&file).unwrap_or_default();
        let trusted = match std::fs::read(dir.join("f.bin.aria2")) {
            Ok(ctl) => {
                control_claims(&ctl).unwrap_or_else(|| panic!("{what}: control file unreadable"))
            }
            Err(_) => vec![(0, left_bytes.len() as u64)],
        };
        for (a, b) in trusted {
            let (a, b) = (a as usize, b as usize);
            if left_bytes.get(a..b) != data.get(a..b) {
                broken.push(format!(
                    "{what}, always: bytes {a}..{b} are trusted and wrong\n{run}"
                ));
            }
        }
        // What it left, finished by `-c` with no one in the middle: directly where the origin
        // takes ranges, else from an in-repo server with the same bytes.
        let resume_from = if origin.ranges {
            None
        } else {
            let s = TestServer::builder().tls().start();
            s.route("/f.bin", Route::bytes(data.clone()));
            Some(s)
        };
        let (port, ca) = match &resume_from {
            Some(s) => (s.port(), s.ca_file().to_path_buf()),
            None => (origin.addr.port(), origin.ca.clone()),
        };
        let left = std::fs::metadata(&file).map(|m| m.len()).unwrap_or(0);
        let again = ringdl(&dir, &run_args(&dir, &ca, port, setup.split, &["-c"]));
        if again.code() != 0 || sha256_file(&file) != sha256_hex(&data) {
            broken.push(format!(
                "{what}, always: the -c run over the {left} bytes left is not exact (exit {:?})\n{again}",
                again.code()
            ));
        }
    }
    broken
}

fn check(tamper: Tamper) {
    let broken = through(tamper);
    assert!(
        broken.is_empty(),
        "{} broke:\n{}",
        broken.len(),
        broken.join("\n\n")
    );
}

#[test]
fn a_flipped_bit_is_refused_and_trusted_nowhere() {
    check(Tamper::Flip);
}

#[test]
fn a_dropped_record_is_refused_and_trusted_nowhere() {
    check(Tamper::Drop);
}

#[test]
fn a_repeated_record_is_refused_and_trusted_nowhere() {
    check(Tamper::Duplicate);
}

#[test]
fn swapped_records_are_refused_and_trusted_nowhere() {
    check(Tamper::Swap);
}

/// A cut without close_notify: never the end of a close-delimited body.
#[test]
fn a_cut_mid_record_is_refused_and_trusted_nowhere() {
    check(Tamper::Truncate);
}

#[test]
fn a_forged_record_is_refused_and_trusted_nowhere() {
    check(Tamper::Inject);
}

#[test]
fn rewritten_version_bytes_are_refused_and_trusted_nowhere() {
    check(Tamper::Version);
}

#[test]
fn one_byte_tcp_writes_change_nothing() {
    check(Tamper::Trickle);
}

/// `openssl s_server` driven from its stdin, which sends what it reads there and takes a line of
/// one letter as a command: the response is written in halves with `command` between them.
fn scripted(
    program: PathBuf,
    tls12: bool,
    chacha: bool,
    command: &str,
) -> Option<(Run, bool, String)> {
    let dir = tempfile::Builder::new()
        .prefix("ringdl-sserver-")
        .tempdir()
        .expect("dir");
    write_certificates(dir.path());
    let ca = dir.path().join("ca.pem");
    let ca_copy = TestDir::new();
    std::fs::copy(&ca, ca_copy.join("ca.pem")).expect("ca");
    let (mut server, port) = s_server(dir, &openssl_suite(tls12, chacha))?;
    let data = content(0x5c71_0001, 600_000);
    let out = TestDir::new();
    let args = run_args(
        &out,
        &ca_copy.join("ca.pem"),
        port,
        false,
        &["--max-tries=1"],
    );
    let client = std::thread::spawn(move || {
        let run = run_program(&program, &out, &args, Duration::from_secs(60));
        let got = std::fs::read(out.join("f.bin")).unwrap_or_default();
        (run, got)
    });
    // The request arrives (s_server prints what it reads), then the answer in two halves.
    let stdout = server.child.stdout.take().expect("stdout");
    let (tx, lines) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut seen = String::new();
    while let Some(left) = deadline.checked_duration_since(Instant::now()) {
        let Ok(line) = lines.recv_timeout(left) else {
            break;
        };
        seen.push_str(&line);
        seen.push('\n');
        if line.trim().is_empty() && seen.contains("GET /f.bin") {
            break;
        }
    }
    // Written from a thread of its own: a server busy with what the client did (aria2c answers a
    // HelloRequest) may stop reading its stdin, and the client's end is what is waited for.
    let mut stdin = server.child.stdin.take().expect("stdin");
    let body = data.clone();
    let cmd = command.to_string();
    std::thread::spawn(move || {
        let head = format!("HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n", body.len());
        let half = body.len() / 2;
        let pause = Duration::from_millis(300);
        let _ = stdin.write_all(head.as_bytes());
        let _ = stdin.write_all(&body[..half]);
        let _ = stdin.flush();
        std::thread::sleep(pause);
        let _ = stdin.write_all(cmd.as_bytes());
        let _ = stdin.flush();
        std::thread::sleep(pause);
        let _ = stdin.write_all(&body[half..]);
        let _ = stdin.flush();
    });
    let (run, got) = client.join().expect("client");
    drop(server);
    let label =
        format!("tls12 {tls12} chacha {chacha} command {command:?}; s_server read:\n{seen}");
    Some((run, got == data, label))
}

/// TLS 1.3 key updates from OpenSSL in the middle of a body, with and without asking ringdl to
/// update its own keys (`update_requested`): the body is exact and the run ends 0.
#[test]
fn openssl_key_updates_mid_body_are_followed() {
    for chacha in [false, true] {
        for command in ["k\n", "K\n"] {
            let Some((run, exact, label)) = scripted(binary_under_test(), false, chacha, command)
            else {
                return;
            };
            assert!(run.code() == 0 && exact, "{label}\n{run}");
        }
    }
}

/// A TLS 1.2 HelloRequest from OpenSSL mid-body (`R`): ringdl never renegotiates and goes on
/// with the keys it has; the body is exact and the run ends 0. aria2c fails such a download
/// (KNOWN_DIFFERENCES, K-HELLOREQUEST).
#[test]
fn an_openssl_hello_request_mid_body_is_ignored() {
    for chacha in [false, true] {
        let Some((run, exact, label)) = scripted(binary_under_test(), true, chacha, "R\n") else {
            return;
        };
        assert!(run.code() == 0 && exact, "{label}\n{run}");
    }
    if require_peer("aria2c", have_program("aria2c")) {
        let aria2c = PathBuf::from("aria2c");
        if let Some((run, exact, label)) = scripted(aria2c, true, false, "R\n") {
            assert!(run.code() != 0 && !exact, "aria2c: {label}\n{run}");
        }
    }
}
