//! FTP servers on loopback for the tests: vsftpd (anonymous, from its Debian package) and
//! pure-ftpd (a virtual user with a password; its Debian package conflicts with vsftpd's, so
//! `.ci/run` unpacks it into `target/peers/pure-ftpd` instead of installing it). Each serves a
//! root directory of the test's on a port of its own, with its config, pid and logs in a
//! temporary directory removed on drop, when the server is killed.
//!
//! A missing server skips the test loudly, and fails it under `RINGDL_REQUIRE_PEERS=1`.
//! `RINGDL_VSFTPD` and `RINGDL_PURE_FTPD` name the binaries explicitly.

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
    log: PathBuf,
    /// `user:password@` for URIs, or empty for an anonymous server.
    login: String,
}

/// The user and password of the pure-ftpd server's virtual user.
pub const USER: &str = "ringdl";
pub const PASSWORD: &str = "s3cret pass";

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
fn open_up(root: &Path) {
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
        let mut last = String::new();
        for _ in 0..5 {
            let port = ports::port_for_child();
            let conf = format!(
                "listen=YES\nlisten_address=127.0.0.1\nlisten_port={port}\n\
                 anonymous_enable=YES\nanon_root={}\nno_anon_password=YES\nlocal_enable=NO\n\
                 write_enable=NO\nsecure_chroot_dir={}\npasv_enable=YES\n\
                 seccomp_sandbox=NO\nbackground=NO\nlog_ftp_protocol=YES\nxferlog_enable=YES\n\
                 vsftpd_log_file={}\ndual_log_enable=YES\nftp_username=ftp\n\
                 max_clients=0\nmax_per_ip=0\n",
                root_dir.display(),
                empty.display(),
                log.display()
            );
            let conf_path = dir.path().join("vsftpd.conf");
            fs::write(&conf_path, conf).expect("vsftpd.conf");
            let mut child = Command::new(&bin)
                .arg(&conf_path)
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap_or_else(|e| panic!("cannot run {}: {e}", bin.display()));
            match ports::wait_until_child_listens(&mut child, &[port], Duration::from_secs(10)) {
                Ok(()) => {
                    return Some(FtpServer {
                        child,
                        dir,
                        port,
                        log,
                        login: String::new(),
                    })
                }
                Err(e) => {
                    let _ = child.kill();
                    let _ = child.wait();
                    last = e;
                }
            }
        }
        panic!("vsftpd did not start: {last}");
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
        let mut last = String::new();
        for _ in 0..5 {
            let port = ports::port_for_child();
            let stderr = fs::File::create(&log).expect("log");
            let mut child = Command::new(&bin)
                .arg("-S")
                .arg(format!("127.0.0.1,{port}"))
                .arg("-l")
                .arg(format!("puredb:{}", db.display()))
                .args(["-E", "-A", "-d", "-d"])
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(stderr)
                .spawn()
                .unwrap_or_else(|e| panic!("cannot run {}: {e}", bin.display()));
            match ports::wait_until_child_listens(&mut child, &[port], Duration::from_secs(10)) {
                Ok(()) => {
                    let user = USER;
                    let pass = PASSWORD.replace(' ', "%20");
                    return Some(FtpServer {
                        child,
                        dir,
                        port,
                        log,
                        login: format!("{user}:{pass}@"),
                    });
                }
                Err(e) => {
                    let _ = child.kill();
                    let _ = child.wait();
                    last = e;
                }
            }
        }
        panic!("pure-ftpd did not start: {last}");
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// `ftp://127.0.0.1:PORT/path`, without credentials.
    pub fn url(&self, path: &str) -> String {
        format!(
            "ftp://127.0.0.1:{}/{}",
            self.port,
            path.trim_start_matches('/')
        )
    }

    /// The URI with the server's user and password in it (the same as [`url`] for an anonymous
    /// server).
    pub fn url_with_login(&self, path: &str) -> String {
        format!(
            "ftp://{}127.0.0.1:{}/{}",
            self.login,
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

impl Drop for FtpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        // vsftpd forks a process per session; they go when their clients do.
        let _ = &self.dir;
    }
}
