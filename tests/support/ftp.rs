//! FTP servers on loopback for the tests: vsftpd (anonymous, from its Debian package), proftpd
//! (anonymous) and pure-ftpd (a virtual user with a password); the packages of the last two
//! conflict with vsftpd's, so `.ci/run` unpacks them into `target/peers/` instead of installing
//! them. Each serves a
//! root directory of the test's on a port of its own, with its config, pid and logs in a
//! temporary directory removed on drop, when the server is killed.
//!
//! A missing server skips the test loudly, and fails it under `RINGDL_REQUIRE_PEERS=1`.
//! `RINGDL_VSFTPD`, `RINGDL_PROFTPD` and `RINGDL_PURE_FTPD` name the binaries explicitly.

#![allow(dead_code)]

use super::ports;
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// A running FTP server; killed when dropped.
pub struct FtpServer {
    child: Child,
    dir: tempfile::TempDir,
    port: u16,
    /// The host in its URIs: `127.0.0.1`, or `[::1]`.
    host: &'static str,
    log: PathBuf,
    /// `user:password@` for URIs, or empty for an anonymous server.
    login: String,
}

/// The user and password of the pure-ftpd server's virtual user.
pub const USER: &str = "ringdl";
pub const PASSWORD: &str = "s3cret:p@ss%";

fn find(var: &str, candidates: &[PathBuf]) -> Option<PathBuf> {
    if let Some(p) = std::env::var_os(var).filter(|p| !p.is_empty()) {
        return Some(PathBuf::from(p));
    }
    candidates.iter().find(|p| p.is_file()).cloned()
}

fn peers() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("target/peers")
}

/// Makes `root` and everything under it readable by the servers' unprivileged user.
pub fn open_up(root: &Path) {
    let mode = if root.is_dir() { 0o755 } else { 0o644 };
    let _ = fs::set_permissions(root, fs::Permissions::from_mode(mode));
    if let Ok(entries) = fs::read_dir(root) {
        for e in entries.flatten() {
            open_up(&e.path());
        }
    }
}

/// Whether this process may start the servers (they need root to drop privileges and chroot).
fn root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

impl FtpServer {
    /// vsftpd serving `root` to anonymous users, logging every command and reply.
    pub fn vsftpd(root_dir: &Path) -> Option<FtpServer> {
        Self::vsftpd_on(root_dir, false, None)
    }

    /// vsftpd requiring TLS of anonymous users for logins and data (RFC 4217), with a data
    /// connection's TLS session required to resume the control connection's (its
    /// `require_ssl_reuse`): implicit (TLS from the first byte) or explicit (`AUTH TLS`). Its
    /// certificate (for `127.0.0.1`) is `cert` (`--ca-certificate`).
    pub fn vsftpd_tls(
        root_dir: &Path,
        implicit: bool,
        cert: &Path,
        key: &Path,
    ) -> Option<FtpServer> {
        let tls = format!(
            "ssl_enable=YES\nallow_anon_ssl=YES\nforce_anon_logins_ssl=YES\n\
             force_anon_data_ssl=YES\nrequire_ssl_reuse=YES\nimplicit_ssl={}\n\
             rsa_cert_file={}\nrsa_private_key_file={}\n",
            if implicit { "YES" } else { "NO" },
            cert.display(),
            key.display()
        );
        Self::vsftpd_on(root_dir, false, Some(tls))
    }

    /// The same on `::1` (`None`, after a SKIPPED line, where loopback has no IPv6).
    pub fn vsftpd_v6(root_dir: &Path) -> Option<FtpServer> {
        // (A machine without it is a fact of the machine, not a missing peer: skipped loudly, as
        // the HTTP tests over IPv6 are, even under RINGDL_REQUIRE_PEERS.)
        if std::net::TcpListener::bind("[::1]:0").is_err() {
            let test = super::test_name();
            eprintln!("SKIPPED: {test}: no IPv6 loopback ([::1]) on this machine");
            return None;
        }
        Self::vsftpd_on(root_dir, true, None)
    }

    fn vsftpd_on(root_dir: &Path, v6: bool, tls: Option<String>) -> Option<FtpServer> {
        let bin = find("RINGDL_VSFTPD", &[PathBuf::from("/usr/sbin/vsftpd")]);
        if !super::require_peer("vsftpd", bin.is_some())
            || !super::skip_unless(root(), "vsftpd needs root")
        {
            return None;
        }
        let bin = bin?;
        open_up(root_dir);
        let dir = tempfile::Builder::new()
            .prefix("ringdl-vsftpd-")
            .tempdir()
            .expect("temp dir");
        let empty = dir.path().join("empty");
        fs::create_dir(&empty).expect("secure chroot dir");
        let log = dir.path().join("vsftpd.log");
        let root_dir = fs::canonicalize(root_dir).expect("root");
        let host = if v6 { "[::1]" } else { "127.0.0.1" };
        let args = |port: u16| {
            let listen = match v6 {
                true => "listen=NO\nlisten_ipv6=YES\nlisten_address6=::1",
                false => "listen=YES\nlisten_address=127.0.0.1",
            };
            let conf = format!(
                "{listen}\nlisten_port={port}\n\
                 anonymous_enable=YES\nanon_root={}\nno_anon_password=YES\nlocal_enable=NO\n\
                 write_enable=NO\nsecure_chroot_dir={}\npasv_enable=YES\n\
                 seccomp_sandbox=NO\nbackground=NO\nlog_ftp_protocol=YES\nxferlog_enable=YES\n\
                 vsftpd_log_file={}\ndual_log_enable=YES\nftp_username=ftp\n\
                 max_clients=0\nmax_per_ip=0\n{}",
                root_dir.display(),
                empty.display(),
                log.display(),
                tls.as_deref().unwrap_or("")
            );
            let conf_path = dir.path().join("vsftpd.conf");
            fs::write(&conf_path, conf).expect("vsftpd.conf");
            vec![conf_path.into_os_string()]
        };
        let (child, port) = start("vsftpd", &bin, host, args, None);
        Some(FtpServer {
            child,
            dir,
            port,
            host,
            log,
            login: String::new(),
        })
    }

    /// proftpd serving `root` to anonymous users.
    pub fn proftpd(root_dir: &Path) -> Option<FtpServer> {
        let bin = find(
            "RINGDL_PROFTPD",
            &[
                peers().join("proftpd/usr/sbin/proftpd"),
                PathBuf::from("/usr/sbin/proftpd"),
            ],
        );
        if !super::require_peer("proftpd", bin.is_some())
            || !super::skip_unless(root(), "proftpd needs root")
        {
            return None;
        }
        let bin = bin?;
        open_up(root_dir);
        let root_dir = fs::canonicalize(root_dir).expect("root");
        let dir = tempfile::Builder::new()
            .prefix("ringdl-proftpd-")
            .tempdir()
            .expect("temp dir");
        let log = dir.path().join("system.log");
        let args = |port: u16| {
            let d = dir.path().display();
            let conf = format!(
                "ServerName \"ringdl test\"\nServerType standalone\nPort {port}\n\
             DefaultAddress 127.0.0.1\nSocketBindTight on\nUseIPv6 off\nUser nobody\n\
             Group nogroup\nPidFile {d}/proftpd.pid\nScoreboardFile {d}/scoreboard\n\
             DelayTable none\nWtmpLog off\nUseReverseDNS off\nTransferLog none\n\
             SystemLog {}\n<Anonymous {}>\n  User ftp\n  Group nogroup\n\
             UserAlias anonymous ftp\n  RequireValidShell off\n  <Limit WRITE>\n\
             DenyAll\n  </Limit>\n</Anonymous>\n",
                log.display(),
                root_dir.display()
            );
            let conf_path = dir.path().join("proftpd.conf");
            fs::write(&conf_path, conf).expect("proftpd.conf");
            vec!["-n".into(), "-c".into(), conf_path.into_os_string()]
        };
        let (child, port) = start("proftpd", &bin, "127.0.0.1", args, None);
        Some(FtpServer {
            child,
            dir,
            port,
            host: "127.0.0.1",
            log,
            login: String::new(),
        })
    }

    /// pure-ftpd serving `root` to one virtual user ([`USER`], [`PASSWORD`]), chrooted there.
    pub fn pure_ftpd(root_dir: &Path) -> Option<FtpServer> {
        let unpacked = peers().join("pure-ftpd/usr");
        let bin = find(
            "RINGDL_PURE_FTPD",
            &[
                unpacked.join("sbin/pure-ftpd"),
                PathBuf::from("/usr/sbin/pure-ftpd"),
            ],
        );
        if !super::require_peer("pure-ftpd", bin.is_some())
            || !super::skip_unless(root(), "pure-ftpd needs root")
        {
            return None;
        }
        let bin = bin?;
        let pw_bin = bin
            .parent()
            .and_then(Path::parent)
            .map(|usr| usr.join("bin/pure-pw"))
            .filter(|p| p.is_file())
            .unwrap_or_else(|| PathBuf::from("pure-pw"));
        open_up(root_dir);
        let root_dir = fs::canonicalize(root_dir).expect("root");
        let dir = tempfile::Builder::new()
            .prefix("ringdl-pure-ftpd-")
            .tempdir()
            .expect("temp dir");
        let (passwd, db) = (dir.path().join("pw.txt"), dir.path().join("pw.pdb"));
        let mut pw = Command::new(&pw_bin)
            .args(["useradd", USER, "-u", "ftp", "-d"])
            .arg(&root_dir)
            .arg("-f")
            .arg(&passwd)
            .arg("-m")
            .arg("-F")
            .arg(&db)
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot run {}: {e}", pw_bin.display()));
        {
            use std::io::Write;
            let mut input = pw.stdin.take().expect("stdin");
            let _ = writeln!(input, "{PASSWORD}\n{PASSWORD}");
        }
        assert!(
            pw.wait().expect("pure-pw").success(),
            "pure-pw useradd failed"
        );
        let log = dir.path().join("pure-ftpd.log");
        let args = |port: u16| {
            let mut a: Vec<std::ffi::OsString> =
                vec!["-S".into(), format!("127.0.0.1,{port}").into()];
            a.extend(["-l".into(), format!("puredb:{}", db.display()).into()]);
            a.extend(["-E", "-A", "-d", "-d"].map(Into::into));
            a
        };
        let (child, port) = start("pure-ftpd", &bin, "127.0.0.1", args, Some(&log));
        // Every byte but letters and digits escaped, as a URI's password must be.
        let pass: String = PASSWORD
            .bytes()
            .map(|b| match b.is_ascii_alphanumeric() {
                true => char::from(b).to_string(),
                false => format!("%{b:02X}"),
            })
            .collect();
        Some(FtpServer {
            child,
            dir,
            port,
            host: "127.0.0.1",
            log,
            login: format!("{USER}:{pass}@"),
        })
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// `ftp://127.0.0.1:PORT/path` (or `[::1]`), without credentials.
    pub fn url(&self, path: &str) -> String {
        let path = path.trim_start_matches('/');
        format!("ftp://{}:{}/{path}", self.host, self.port)
    }

    /// The URI with the server's user and password in it (the same as [`url`] for an anonymous
    /// server).
    pub fn url_with_login(&self, path: &str) -> String {
        format!(
            "ftp://{}{}:{}/{}",
            self.login,
            self.host,
            self.port,
            path.trim_start_matches('/')
        )
    }

    /// What the server logged so far (vsftpd: every command and reply).
    pub fn log(&self) -> String {
        fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// The commands the server was sent, in order (vsftpd's log only).
    pub fn commands(&self) -> Vec<String> {
        self.log()
            .lines()
            .filter_map(|l| l.split("FTP command: ").nth(1))
            .filter_map(|c| c.split(", \"").nth(1))
            .map(|c| c.trim_end_matches('"').to_string())
            .collect()
    }
}

/// Starts `what` (`bin` with the arguments `args` makes for a free port) until it listens on
/// that port of `host` (five tries, each on a port of its own), its stderr into `stderr_log` if
/// given; panics if it never does.
pub fn start(
    what: &str,
    bin: &Path,
    host: &str,
    mut args: impl FnMut(u16) -> Vec<std::ffi::OsString>,
    stderr_log: Option<&Path>,
) -> (Child, u16) {
    let mut last = String::new();
    for _ in 0..5 {
        let port = ports::port_for_child();
        let stderr = match stderr_log {
            Some(path) => Stdio::from(fs::File::create(path).expect("log")),
            None => Stdio::null(),
        };
        let mut child = Command::new(bin)
            .args(args(port))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(stderr)
            .spawn()
            .unwrap_or_else(|e| panic!("cannot run {}: {e}", bin.display()));
        let listening = match host {
            "[::1]" => wait_for_v6(&mut child, port),
            _ => ports::wait_until_child_listens(&mut child, &[port], Duration::from_secs(10)),
        };
        match listening {
            Ok(()) => return (child, port),
            Err(e) => {
                let _ = child.kill();
                let _ = child.wait();
                last = e;
            }
        }
    }
    panic!("{what} did not start: {last}");
}

/// Waits until something listens on `[::1]:port` (the child's own check is for IPv4 only).
fn wait_for_v6(child: &mut Child, port: u16) -> Result<(), String> {
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        if let Ok(Some(status)) = child.try_wait() {
            return Err(format!("exited at start with {status}"));
        }
        if std::net::TcpStream::connect(("::1", port)).is_ok() {
            return Ok(());
        }
        if std::time::Instant::now() > deadline {
            return Err(format!("nothing listens on [::1]:{port}"));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

impl Drop for FtpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        // vsftpd forks a process per session; they go when their clients do.
        let _ = &self.dir;
    }
}

/// How a [`FakeFtp`] misbehaves; the default serves its file as an honest server would.
#[derive(Clone, Default)]
pub struct Misbehaviour {
    /// The `SIZE` reply's number, if not the file's length.
    pub size: Option<u64>,
    /// The address a `227` reply names (its port is the real one).
    pub pasv_host: Option<[u8; 4]>,
    /// EPSV is not understood (500): the client must fall back to PASV.
    pub no_epsv: bool,
    /// The passive port named is 0.
    pub port_zero: bool,
    /// The data connection closes after this many bytes.
    pub cut_after: Option<usize>,
    /// Bytes sent on the data connection after the file's last.
    pub extra: usize,
    /// The greeting is a multi-line reply that never ends (lines until the client goes).
    pub endless_greeting: bool,
    /// The greeting is one line of 10 MB with no end.
    pub huge_line: bool,
    /// REST is refused (502).
    pub no_rest: bool,
    /// EPRT is not understood (500): the client must fall back to PORT.
    pub no_eprt: bool,
    /// In active mode the server never connects to the client.
    pub never_connects: bool,
    /// After a transfer's last reply, the server says `421` and closes the control connection
    /// (as an idle timeout would).
    pub closes_after_transfer: bool,
}

/// A scripted FTP server in this process, for what real servers will not do: each control
/// connection gets a thread, passive mode only, one file at any path ending in its name.
pub struct FakeFtp {
    port: u16,
    pub commands: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
    /// Data connections accepted.
    pub data_connections: std::sync::Arc<std::sync::atomic::AtomicUsize>,
}

impl FakeFtp {
    pub fn start(name: &str, file: Vec<u8>, how: Misbehaviour) -> FakeFtp {
        use std::net::TcpListener;
        use std::sync::{atomic::AtomicUsize, Arc, Mutex};
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let port = listener.local_addr().expect("addr").port();
        let commands = Arc::new(Mutex::new(Vec::new()));
        let data_connections = Arc::new(AtomicUsize::new(0));
        let (c2, d2) = (commands.clone(), data_connections.clone());
        let (file, name) = (Arc::new(file), name.to_string());
        std::thread::spawn(move || {
            for conn in listener.incoming().flatten() {
                let (file, how, name) = (file.clone(), how.clone(), name.clone());
                let (commands, data) = (c2.clone(), d2.clone());
                std::thread::spawn(move || {
                    let _ = fake_session(conn, &name, &file, &how, &commands, &data);
                });
            }
        });
        FakeFtp {
            port,
            commands,
            data_connections,
        }
    }

    pub fn url(&self, path: &str) -> String {
        format!(
            "ftp://127.0.0.1:{}/{}",
            self.port,
            path.trim_start_matches('/')
        )
    }

    pub fn commands(&self) -> Vec<String> {
        self.commands.lock().map(|c| c.clone()).unwrap_or_default()
    }
}

fn fake_session(
    conn: std::net::TcpStream,
    name: &str,
    file: &[u8],
    how: &Misbehaviour,
    commands: &std::sync::Mutex<Vec<String>>,
    data_count: &std::sync::atomic::AtomicUsize,
) -> std::io::Result<()> {
    use std::io::{BufRead, BufReader, Write};
    use std::net::TcpListener;
    let mut out = conn.try_clone()?;
    let _ = conn.set_read_timeout(Some(Duration::from_secs(30)));
    if how.huge_line {
        let chunk = vec![b'x'; 64 * 1024];
        out.write_all(b"220 ")?;
        for _ in 0..160 {
            out.write_all(&chunk)?;
        }
        std::thread::sleep(Duration::from_secs(5));
        return Ok(());
    }
    if how.endless_greeting {
        out.write_all(b"220-Welcome\r\n")?;
        loop {
            out.write_all(b"220-and a little more about this server\r\n")?;
        }
    }
    out.write_all(b"220 fake\r\n")?;
    let mut lines = BufReader::new(conn);
    let mut passive: Option<TcpListener> = None;
    let mut active: Option<std::net::SocketAddr> = None;
    let mut rest = 0usize;
    let mut line = String::new();
    loop {
        line.clear();
        if lines.read_line(&mut line)? == 0 {
            return Ok(());
        }
        let cmd = line.trim_end().to_string();
        if let Ok(mut c) = commands.lock() {
            c.push(cmd.clone());
        }
        let (verb, arg) = cmd.split_once(' ').unwrap_or((&cmd, ""));
        let reply = match verb {
            "USER" => "331 password please".to_string(),
            "PASS" => "230 in".to_string(),
            "TYPE" | "CWD" => "200 ok".to_string(),
            "PWD" => "257 \"/\" is the current directory".to_string(),
            "SIZE" if arg == name => format!("213 {}", how.size.unwrap_or(file.len() as u64)),
            "SIZE" => "550 no such file".to_string(),
            "EPSV" if how.no_epsv => "500 what".to_string(),
            "EPSV" | "PASV" => {
                let l = TcpListener::bind("127.0.0.1:0")?;
                let port = if how.port_zero {
                    0
                } else {
                    l.local_addr()?.port()
                };
                passive = Some(l);
                let h = how.pasv_host.unwrap_or([127, 0, 0, 1]);
                match verb {
                    "EPSV" => format!("229 Entering Extended Passive Mode (|||{port}|)"),
                    _ => format!(
                        "227 Entering Passive Mode ({},{},{},{},{},{})",
                        h[0],
                        h[1],
                        h[2],
                        h[3],
                        port >> 8,
                        port & 255
                    ),
                }
            }
            "EPRT" if how.no_eprt => "500 what".to_string(),
            "EPRT" | "PORT" => {
                let to = match verb {
                    // |1|127.0.0.1|4000|
                    "EPRT" => {
                        let parts: Vec<&str> = arg.split('|').collect();
                        format!(
                            "{}:{}",
                            parts.get(2).unwrap_or(&""),
                            parts.get(3).unwrap_or(&"")
                        )
                        .parse()
                        .ok()
                    }
                    _ => {
                        let n: Vec<u16> = arg.split(',').filter_map(|x| x.parse().ok()).collect();
                        (n.len() == 6).then(|| {
                            std::net::SocketAddr::from((
                                [n[0] as u8, n[1] as u8, n[2] as u8, n[3] as u8],
                                n[4] << 8 | n[5],
                            ))
                        })
                    }
                };
                active = to;
                match to {
                    Some(_) => "200 ok".to_string(),
                    None => "501 bad address".to_string(),
                }
            }
            "REST" if how.no_rest => "502 no".to_string(),
            "REST" => {
                rest = arg.parse().unwrap_or(0);
                format!("350 from {rest}")
            }
            "RETR" if arg == name => {
                out.write_all(b"150 here it comes\r\n")?;
                let mut d = match (passive.take(), active.take()) {
                    (Some(l), _) => l.accept()?.0,
                    (None, Some(_)) if how.never_connects => {
                        std::thread::sleep(Duration::from_secs(30));
                        return Ok(());
                    }
                    (None, Some(to)) => std::net::TcpStream::connect(to)?,
                    (None, None) => {
                        out.write_all(b"425 use PASV or PORT first\r\n")?;
                        continue;
                    }
                };
                data_count.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let mut body = file.get(rest.min(file.len())..).unwrap_or(&[]).to_vec();
                body.extend(std::iter::repeat_n(b'#', how.extra));
                if let Some(n) = how.cut_after {
                    body.truncate(n);
                }
                let sent = d.write_all(&body);
                drop(d);
                rest = 0;
                match (sent, how.closes_after_transfer) {
                    (Ok(()), true) => {
                        // (Later than the client can take the connection for its next file.)
                        out.write_all(b"226 done\r\n")?;
                        std::thread::sleep(Duration::from_millis(300));
                        out.write_all(b"421 Timeout.\r\n")?;
                        return Ok(());
                    }
                    (Ok(()), false) => "226 done".to_string(),
                    (Err(_), _) => "426 aborted".to_string(),
                }
            }
            "RETR" => "550 no such file".to_string(),
            "QUIT" => {
                out.write_all(b"221 bye\r\n")?;
                return Ok(());
            }
            _ => "502 not here".to_string(),
        };
        out.write_all(reply.as_bytes())?;
        out.write_all(b"\r\n")?;
    }
}
