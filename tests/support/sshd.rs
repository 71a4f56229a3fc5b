//! OpenSSH's `sshd` on a loopback port for the SFTP tests: host keys made for it (ECDSA and
//! Ed25519, RSA when asked), `internal-sftp`, public-key logins for `root` with the keys in its
//! own `authorized_keys`, and password logins for a local user made once (`ringdltest`). The
//! server's files are the machine's own: URIs name absolute paths. Extra `sshd_config` lines
//! restrict what it offers (ciphers, key exchange, host-key types, rekeying).
//!
//! A missing sshd skips the test loudly, and fails it under `RINGDL_REQUIRE_PEERS=1`.

#![allow(dead_code)]

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Once;

/// The local user with a password the server takes.
pub const USER: &str = "ringdltest";
pub const PASSWORD: &str = "s3cret:p@ss";

/// A running sshd; killed when dropped.
pub struct Sshd {
    child: Child,
    dir: tempfile::TempDir,
    pub port: u16,
}

fn root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// Makes the password user, once per test process.
fn make_user() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let exists = Command::new("id")
            .arg(USER)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        if !exists {
            let _ = Command::new("useradd")
                .args(["-M", "-d", "/tmp", "-s", "/bin/sh", USER])
                .status();
        }
        let mut p = Command::new("chpasswd")
            .stdin(Stdio::piped())
            .spawn()
            .expect("chpasswd");
        use std::io::Write as _;
        if let Some(mut i) = p.stdin.take() {
            let _ = writeln!(i, "{USER}:{PASSWORD}");
        }
        assert!(p.wait().is_ok_and(|s| s.success()), "chpasswd failed");
    });
}

/// Makes a key pair of `kind` (ssh-keygen's `-t`) at `path` (and `path.pub`).
pub fn keygen(kind: &str, path: &Path) {
    let _ = fs::remove_file(path);
    let bits: &[&str] = if kind == "rsa" { &["-b", "2048"] } else { &[] };
    let ok = Command::new("ssh-keygen")
        .args(["-q", "-t", kind, "-N", "", "-C", "ringdl-test", "-f"])
        .arg(path)
        .args(bits)
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    assert!(ok, "ssh-keygen -t {kind} failed");
}

impl Sshd {
    /// sshd with `extra` config lines; its `authorized_keys` (for every user) holds the public
    /// keys `authorized`.
    pub fn start(extra: &[&str], authorized: &[&Path]) -> Option<Sshd> {
        let bin = PathBuf::from(
            std::env::var_os("RINGDL_SSHD")
                .filter(|p| !p.is_empty())
                .unwrap_or_else(|| "/usr/sbin/sshd".into()),
        );
        if !super::require_peer("sshd", bin.is_file())
            || !super::skip_unless(root(), "sshd needs root")
        {
            return None;
        }
        make_user();
        let _ = fs::create_dir_all("/run/sshd");
        let dir = tempfile::Builder::new()
            .prefix("ringdl-sshd-")
            .tempdir()
            .expect("temp dir");
        let mut host_keys = String::new();
        let rsa = extra.iter().any(|l| l.contains("rsa"));
        let kinds: &[&str] = if rsa {
            &["ecdsa", "ed25519", "rsa"]
        } else {
            &["ecdsa", "ed25519"]
        };
        for kind in kinds {
            let p = dir.path().join(format!("host_{kind}"));
            keygen(kind, &p);
            host_keys.push_str(&format!("HostKey {}\n", p.display()));
        }
        let mut auth = String::new();
        for k in authorized {
            auth.push_str(&fs::read_to_string(k).expect("public key"));
        }
        let auth_path = dir.path().join("authorized_keys");
        fs::write(&auth_path, auth).expect("authorized_keys");
        let (child, port) = super::ftp::start(
            "sshd",
            &bin,
            "127.0.0.1",
            |port| {
                let conf = format!(
                    "Port {port}\nListenAddress 127.0.0.1\n{host_keys}\
                     AuthorizedKeysFile {}\nStrictModes no\nUsePAM no\n\
                     PasswordAuthentication yes\nKbdInteractiveAuthentication no\n\
                     PermitRootLogin yes\nSubsystem sftp internal-sftp\nPidFile none\n\
                     LogLevel VERBOSE\nMaxStartups 100\nMaxSessions 100\n{}\n",
                    auth_path.display(),
                    extra.join("\n")
                );
                let path = dir.path().join("sshd_config");
                fs::write(&path, conf).expect("sshd_config");
                vec!["-D".into(), "-e".into(), "-f".into(), path.into_os_string()]
            },
            Some(&dir.path().join("sshd.log")),
        );
        Some(Sshd { child, dir, port })
    }

    /// The URI of absolute path `path` with login `login` (`user` or `user:password`).
    pub fn url(&self, login: &str, path: &Path) -> String {
        format!("sftp://{login}@127.0.0.1:{}{}", self.port, path.display())
    }

    /// The password user's URI of `path`.
    pub fn password_url(&self, path: &Path) -> String {
        self.url(
            &format!(
                "{USER}:{}",
                PASSWORD.replace(':', "%3A").replace('@', "%40")
            ),
            path,
        )
    }

    /// The server's public host key of `kind` (`ecdsa`, `ed25519`, `rsa`), as its `.pub` line.
    pub fn host_key(&self, kind: &str) -> String {
        fs::read_to_string(self.dir.path().join(format!("host_{kind}.pub"))).expect("host key")
    }

    /// What sshd logged (errors).
    pub fn log(&self) -> String {
        fs::read_to_string(self.dir.path().join("sshd.log")).unwrap_or_default()
    }
}

impl Drop for Sshd {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Sshd {
    /// Bytes the server sent on each connection that ended (its log's `Transferred: sent N`
    /// lines: the file's bytes and SSH's few), in log order.
    pub fn bytes_sent(&self) -> Vec<u64> {
        self.log()
            .lines()
            .filter_map(|l| l.split("Transferred: sent ").nth(1))
            .filter_map(|r| r.split(',').next())
            .filter_map(|n| n.parse().ok())
            .collect()
    }
}
