//! A private nginx on loopback for integration tests.
//!
//! `Nginx::start(root)` serves `root` over plain HTTP and HTTPS (HTTP/1.1, `sendfile on`,
//! keepalive) on two free ports of 127.0.0.1, with a CA and a server certificate for
//! `127.0.0.1`/`localhost` made fresh for each server. Everything nginx writes (config, pid file,
//! logs, temp dirs, certificates) lives in its own temporary directory, removed on drop, when the
//! server is killed.
//!
//! If nginx is not installed the test is skipped with a loud `SKIPPED:` line on stderr and
//! `start` returns `None`; with `RINGDL_REQUIRE_PEERS=1` in the environment it panics instead
//! (set it in CI, so that a missing nginx can never pass as green). `RINGDL_NGINX=/path/to/nginx`
//! picks a binary explicitly.
//!
//! This file depends on nothing else in `tests/support`.

// Not every test binary uses every accessor.
#![allow(dead_code)]

use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use super::ports;
use std::time::Duration;

use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, KeyPair,
    KeyUsagePurpose,
};

/// How long nginx gets to accept connections after it was spawned.
const STARTUP_LIMIT: Duration = Duration::from_secs(10);
/// How many times a start is retried with new ports when nginx exits early (a port race).
const START_ATTEMPTS: usize = 5;

/// A running nginx; killed when dropped.
pub struct Nginx {
    child: Child,
    dir: tempfile::TempDir,
    http_port: u16,
    https_port: u16,
}

/// One line of the access log (see `log_format` in the generated config).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoggedRequest {
    /// nginx's connection serial number: requests with the same number shared a connection.
    pub connection: u64,
    pub method: String,
    /// The request target as sent, e.g. `/file.bin`.
    pub path: String,
    pub status: u16,
    pub body_bytes: u64,
    /// The `Range` header, if the request had one.
    pub range: Option<String>,
    /// `on` for HTTPS, empty for plain HTTP.
    pub https: bool,
    pub user_agent: String,
}

impl Nginx {
    /// Serves `root` over HTTP and HTTPS on loopback; `None` (after a loud SKIPPED line) when
    /// nginx is not installed and `RINGDL_REQUIRE_PEERS` is not `1`.
    pub fn start(root: &Path) -> Option<Nginx> {
        Self::start_with(root, "")
    }

    /// Like `start`, with `extra` pasted into both `server { }` blocks (e.g. a `location` with a
    /// `return 302 ...;`, or `limit_rate 1m;`).
    pub fn start_with(root: &Path, extra: &str) -> Option<Nginx> {
        Self::start_tls(root, "TLSv1.2 TLSv1.3", extra)
    }

    /// Like `start_with`, its HTTPS server speaking only `protocols` (nginx's `ssl_protocols`
    /// value, e.g. `TLSv1.2`); `extra` may choose cipher suites (`ssl_ciphers` for TLS 1.2,
    /// `ssl_conf_command Ciphersuites` for TLS 1.3).
    pub fn start_tls(root: &Path, protocols: &str, extra: &str) -> Option<Nginx> {
        let bin = match find_nginx() {
            Some(bin) => bin,
            None => {
                if std::env::var("RINGDL_REQUIRE_PEERS").as_deref() == Ok("1") {
                    panic!(
                        "nginx is not installed, and RINGDL_REQUIRE_PEERS=1 says the tests that \
                         need it must run: install it (Debian: apt-get install nginx-light) or \
                         point RINGDL_NGINX at the binary"
                    );
                }
                eprintln!();
                eprintln!("**************************************************************");
                eprintln!("SKIPPED: nginx not installed (looked at $RINGDL_NGINX,");
                eprintln!("         /usr/sbin/nginx and $PATH); this test did not run.");
                eprintln!("         Set RINGDL_REQUIRE_PEERS=1 to make this a failure.");
                eprintln!("**************************************************************");
                return None;
            }
        };
        let root =
            fs::canonicalize(root).unwrap_or_else(|e| panic!("nginx root {}: {e}", root.display()));

        let dir = tempfile::Builder::new()
            .prefix("ringdl-nginx-")
            .tempdir()
            .expect("temp dir for nginx");
        for sub in ["logs", "tmp"] {
            fs::create_dir_all(dir.path().join(sub)).expect("nginx dirs");
        }
        write_certificates(dir.path());
        let without = modules_left_out(&bin);

        let mut last_error = String::new();
        for _ in 0..START_ATTEMPTS {
            let (http_port, https_port) = (ports::port_for_child(), ports::port_for_child());
            let conf = config(
                dir.path(),
                &root,
                (http_port, https_port),
                protocols,
                extra,
                &without,
            );
            let conf_path = dir.path().join("nginx.conf");
            fs::write(&conf_path, conf).expect("write nginx.conf");
            let stderr_path = dir.path().join("logs/stderr.log");
            let stderr = fs::File::create(&stderr_path).expect("nginx stderr file");

            let mut child = Command::new(&bin)
                .arg("-p")
                .arg(dir.path())
                .arg("-c")
                .arg(&conf_path)
                .arg("-e")
                .arg(dir.path().join("logs/error.log"))
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(stderr)
                .spawn()
                .unwrap_or_else(|e| panic!("cannot run {}: {e}", bin.display()));

            match ports::wait_until_child_listens(
                &mut child,
                &[http_port, https_port],
                STARTUP_LIMIT,
            ) {
                Ok(()) => {
                    return Some(Nginx {
                        child,
                        dir,
                        http_port,
                        https_port,
                    })
                }
                Err(why) => {
                    let _ = child.kill();
                    let _ = child.wait();
                    last_error = format!(
                        "{why}\n--- stderr ---\n{}\n--- error.log ---\n{}",
                        read_lossy(&stderr_path),
                        read_lossy(&dir.path().join("logs/error.log"))
                    );
                }
            }
        }
        panic!(
            "nginx ({}) did not start after {START_ATTEMPTS} attempts: {last_error}",
            bin.display()
        );
    }

    /// `http://127.0.0.1:PORT` + `path` (which should start with `/`).
    pub fn http_url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{}", self.http_port, slash(path))
    }

    /// `https://127.0.0.1:PORT` + `path`; the certificate also names `localhost`.
    pub fn https_url(&self, path: &str) -> String {
        format!("https://127.0.0.1:{}{}", self.https_port, slash(path))
    }

    /// The PEM file of the CA that signed the server's certificate (`--ca-certificate`).
    pub fn ca_path(&self) -> PathBuf {
        self.dir.path().join("ca.pem")
    }

    pub fn http_port(&self) -> u16 {
        self.http_port
    }

    pub fn https_port(&self) -> u16 {
        self.https_port
    }

    /// The access log (one line per finished request; unbuffered, so it is current).
    pub fn access_log_path(&self) -> PathBuf {
        self.dir.path().join("logs/access.log")
    }

    /// The error log, for a failing test's message.
    pub fn error_log(&self) -> String {
        read_lossy(&self.dir.path().join("logs/error.log"))
    }

    /// Every request logged so far, oldest first.
    pub fn requests(&self) -> Vec<LoggedRequest> {
        read_lossy(&self.access_log_path())
            .lines()
            .filter_map(parse_log_line)
            .collect()
    }
}

impl Drop for Nginx {
    fn drop(&mut self) {
        // master_process is off: this one process is the whole server.
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn slash(path: &str) -> String {
    if path.starts_with('/') {
        path.to_string()
    } else {
        format!("/{path}")
    }
}

fn read_lossy(path: &Path) -> String {
    let mut bytes = Vec::new();
    if let Ok(mut f) = fs::File::open(path) {
        let _ = f.read_to_end(&mut bytes);
    }
    String::from_utf8_lossy(&bytes).into_owned()
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    fs::metadata(path)
        .map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        .unwrap_or(false)
}

fn find_nginx() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("RINGDL_NGINX") {
        let p = PathBuf::from(p);
        if is_executable(&p) {
            return Some(p);
        }
        eprintln!("RINGDL_NGINX={} is not an executable file", p.display());
    }
    let mut candidates = vec![PathBuf::from("/usr/sbin/nginx")];
    if let Some(path) = std::env::var_os("PATH") {
        candidates.extend(std::env::split_paths(&path).map(|d| d.join("nginx")));
    }
    candidates.push(PathBuf::from("/usr/local/sbin/nginx"));
    candidates.push(PathBuf::from("/usr/local/nginx/sbin/nginx"));
    candidates.into_iter().find(|p| is_executable(p))
}

/// The `--without-http_*_module` flags nginx was configured with, so the config names only
/// the temp paths of modules that exist (an unknown directive stops nginx).
fn modules_left_out(bin: &Path) -> String {
    Command::new(bin)
        .arg("-V")
        .output()
        .map(|o| {
            let mut s = String::from_utf8_lossy(&o.stderr).into_owned();
            s.push_str(&String::from_utf8_lossy(&o.stdout));
            s
        })
        .unwrap_or_default()
}

/// A CA (`ca.pem`) and a server certificate for `localhost` and `127.0.0.1` signed by it
/// (`server.pem`, ECDSA P-256 key in `server.key`), written to `dir`.
pub fn write_certificates(dir: &Path) {
    let ca_key = KeyPair::generate().expect("CA key");
    let mut ca = CertificateParams::new(Vec::<String>::new()).expect("CA params");
    ca.distinguished_name
        .push(DnType::CommonName, "ringdl test CA");
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    let ca_cert = ca.self_signed(&ca_key).expect("self-sign the CA");

    let leaf_key = KeyPair::generate().expect("server key");
    let mut leaf = CertificateParams::new(vec!["localhost".to_string(), "127.0.0.1".to_string()])
        .expect("server params");
    leaf.distinguished_name
        .push(DnType::CommonName, "localhost");
    leaf.is_ca = IsCa::ExplicitNoCa;
    leaf.key_usages = vec![KeyUsagePurpose::DigitalSignature];
    leaf.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    let leaf_cert = leaf
        .signed_by(&leaf_key, &ca_cert, &ca_key)
        .expect("sign the server certificate");

    fs::write(dir.join("ca.pem"), ca_cert.pem()).expect("write ca.pem");
    fs::write(dir.join("server.pem"), leaf_cert.pem()).expect("write server.pem");
    fs::write(dir.join("server.key"), leaf_key.serialize_pem()).expect("write server.key");
}

fn config(
    dir: &Path,
    root: &Path,
    (http_port, https_port): (u16, u16),
    protocols: &str,
    extra: &str,
    nginx_v: &str,
) -> String {
    let d = dir.display();
    let root = root.display();
    let mut c = String::new();
    // nginx started by root drops its workers to `nobody`, who may not read the test's files;
    // with master_process off nothing is dropped, but say it anyway where it is allowed.
    if is_root() {
        c.push_str("user root;\n");
    }
    c.push_str(&format!(
        "daemon off;\n\
         master_process off;\n\
         pid {d}/nginx.pid;\n\
         error_log {d}/logs/error.log warn;\n\
         events {{ worker_connections 512; }}\n\
         http {{\n\
         \x20   default_type application/octet-stream;\n\
         \x20   types {{ }}\n\
         \x20   log_format ringdl '$connection $status $body_bytes_sent $https \"$request\" \"$http_range\" \"$http_user_agent\"';\n\
         \x20   access_log {d}/logs/access.log ringdl;\n\
         \x20   sendfile on;\n\
         \x20   tcp_nopush on;\n\
         \x20   keepalive_timeout 30s;\n\
         \x20   keepalive_requests 10000;\n\
         \x20   client_body_temp_path {d}/tmp/body;\n"
    ));
    for (module, directive) in [
        ("proxy", "proxy_temp_path"),
        ("fastcgi", "fastcgi_temp_path"),
        ("uwsgi", "uwsgi_temp_path"),
        ("scgi", "scgi_temp_path"),
    ] {
        if !nginx_v.contains(&format!("--without-http_{module}_module")) {
            c.push_str(&format!("    {directive} {d}/tmp/{module};\n"));
        }
    }
    c.push_str(&format!(
        "    server {{\n\
         \x20       listen 127.0.0.1:{http_port};\n\
         \x20       root {root};\n\
         {extra}\n\
         \x20   }}\n\
         \x20   server {{\n\
         \x20       listen 127.0.0.1:{https_port} ssl;\n\
         \x20       root {root};\n\
         \x20       ssl_certificate {d}/server.pem;\n\
         \x20       ssl_certificate_key {d}/server.key;\n\
         \x20       ssl_protocols {protocols};\n\
         {extra}\n\
         \x20   }}\n\
         }}\n"
    ));
    c
}

fn is_root() -> bool {
    // The owner of /proc/self is the effective uid; no unsafe FFI needed.
    use std::os::unix::fs::MetadataExt;
    fs::metadata("/proc/self")
        .map(|m| m.uid() == 0)
        .unwrap_or(false)
}

/// `7 206 1048576 on "GET /f.bin HTTP/1.1" "bytes=0-1048575" "aria2/1.36.0"`
fn parse_log_line(line: &str) -> Option<LoggedRequest> {
    let mut head = line.splitn(5, ' ');
    let connection = head.next()?.parse().ok()?;
    let status = head.next()?.parse().ok()?;
    let body_bytes = head.next()?.parse().ok()?;
    let https = head.next()? == "on";
    let rest = head.next()?;
    let quoted: Vec<&str> = rest.split('"').collect();
    // rest = "REQUEST" "RANGE" "UA"  ->  ["", REQUEST, " ", RANGE, " ", UA, ""]
    if quoted.len() < 7 {
        return None;
    }
    let mut request = quoted[1].split(' ');
    let method = request.next()?.to_string();
    let path = request.next().unwrap_or("").to_string();
    let range = match quoted[3] {
        "-" | "" => None,
        r => Some(r.to_string()),
    };
    Some(LoggedRequest {
        connection,
        method,
        path,
        status,
        body_bytes,
        range,
        https,
        user_agent: quoted[5].to_string(),
    })
}
