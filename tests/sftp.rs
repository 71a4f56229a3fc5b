//! `sftp://` downloads against OpenSSH's sshd on loopback: password and public-key logins,
//! whole and split over several SSH connections, resumed (also across aria2c), beside an HTTP
//! mirror, with each cipher, key exchange and host-key type ringdl speaks, a server that rekeys,
//! the host key checked against known_hosts and `--ssh-host-key-md`, and the failures aria2c has
//! words and exit codes for. Hostile servers (tests at the end) get a line and exit 1, no hang.

use std::fs;
use std::io::{Read, Write};
use std::path::Path;
use std::time::Duration;

use crate::support::server::{Route, TestServer};
use crate::support::sshd::{keygen, Sshd};
use crate::support::{content, ringdl, run_program, sha256_file, sha256_hex, TestDir};

/// A directory readable by the password user with `f.bin` of `len` bytes; its bytes.
fn root_with(len: usize, seed: u64) -> (TestDir, Vec<u8>) {
    let root = TestDir::new();
    let data = content(seed, len);
    fs::write(root.join("f.bin"), &data).expect("write");
    crate::support::ftp::open_up(root.path());
    (root, data)
}

/// The run ended well with `name` holding `data` and no control file (as in the FTP tests).
use crate::ftp::same;

/// The HOME ringdl runs with in `dir` (see `support::ringdl`).
fn home(dir: &TestDir) -> std::path::PathBuf {
    let h = dir.join(".home");
    fs::create_dir_all(h.join(".ssh")).expect("~/.ssh");
    h
}

#[test]
fn password_logins_download_whole_and_split_byte_exact_and_remember_the_host() {
    let (root, data) = root_with(9 * 1024 * 1024 + 4097, 0x7366_7470);
    let Some(sshd) = Sshd::start(&[], &[]) else {
        return;
    };
    let url = sshd.password_url(&root.join("f.bin"));
    let dir = TestDir::new();
    let run = ringdl(&dir, &["--no-conf", "-d", &dir.arg(), &url]);
    same(&dir, "f.bin", &data, &run);
    let known = fs::read_to_string(home(&dir).join(".ssh/known_hosts")).expect("known_hosts");
    let name = format!("[127.0.0.1]:{}", sshd.port);
    assert!(known.starts_with(&name), "{known}");
    // Two downloads from the new host at once (each reading known_hosts before either added
    // it) add it once.
    fs::write(root.join("g.bin"), &data).expect("g.bin");
    crate::support::ftp::open_up(root.path());
    let two = TestDir::new();
    let g = sshd.password_url(&root.join("g.bin"));
    let args = ["--no-conf", "-Z", "-j2", "-d", &two.arg(), &url, &g];
    let run = ringdl(&two, &args);
    same(&two, "f.bin", &data, &run);
    same(&two, "g.bin", &data, &run);
    let lines = fs::read_to_string(home(&two).join(".ssh/known_hosts")).expect("known_hosts");
    assert_eq!(lines.lines().count(), 1, "{lines}");
    assert!(
        run.stdout.contains("Added the SSH host key of") || run.stderr.contains("Added"),
        "no notice of the new host\n{run}"
    );
    // The key recorded is the server's ECDSA key (the one libssh2, so aria2c, asks for first).
    let ecdsa = sshd.host_key("ecdsa");
    let blob = ecdsa.split_whitespace().nth(1).expect("key");
    assert!(known.contains(blob), "{known}\n{ecdsa}");

    // Again, split over four connections: the host is known now, so nothing is added.
    fs::remove_file(dir.join("f.bin")).expect("rm");
    let args = ["--no-conf", "-x4", "-s4", "-k1M", "-d", &dir.arg(), &url];
    let run = ringdl(&dir, &args);
    same(&dir, "f.bin", &data, &run);
    assert!(!run.stdout.contains("Added the SSH host key"), "{run}");
    let again = fs::read_to_string(home(&dir).join(".ssh/known_hosts")).expect("known_hosts");
    assert_eq!(again, known);
    std::thread::sleep(Duration::from_millis(300));
    let reads = sshd.bytes_sent();
    assert!(
        reads
            .iter()
            .filter(|&&n| n > 64 * 1024 && n < data.len() as u64)
            .count()
            >= 2,
        "the split run did not read parts over several connections: {reads:?}\n{}",
        sshd.log()
    );
}

#[test]
fn public_key_logins_use_the_users_ed25519_ecdsa_or_rsa_key() {
    let (root, data) = root_with(3 * 1024 * 1024 + 1, 0x6b65);
    let keys = TestDir::new();
    let (ed, ec, rsa) = (
        keys.join("id_ed25519"),
        keys.join("id_ecdsa"),
        keys.join("id_rsa"),
    );
    keygen("ed25519", &ed);
    keygen("ecdsa", &ec);
    keygen("rsa", &rsa);
    let ed_pub = keys.join("id_ed25519.pub");
    let ec_pub = keys.join("id_ecdsa.pub");
    let rsa_pub = keys.join("id_rsa.pub");
    for (key, authorized) in [(&ed, &ed_pub), (&ec, &ec_pub), (&rsa, &rsa_pub)] {
        let Some(sshd) = Sshd::start(&[], &[authorized.as_path()]) else {
            return;
        };
        let dir = TestDir::new();
        let name = key.file_name().expect("name");
        fs::copy(key, home(&dir).join(".ssh").join(name)).expect("key");
        let url = sshd.url("root", &root.join("f.bin"));
        let run = ringdl(&dir, &["--no-conf", "-d", &dir.arg(), &url]);
        same(&dir, "f.bin", &data, &run);
    }
    // A key the server does not know, and no password: refused as aria2c words it.
    let Some(sshd) = Sshd::start(&[], &[ec_pub.as_path()]) else {
        return;
    };
    let dir = TestDir::new();
    fs::copy(&ed, home(&dir).join(".ssh/id_ed25519")).expect("key");
    let url = sshd.url("root", &root.join("f.bin"));
    let run = ringdl(&dir, &["--no-conf", "-d", &dir.arg(), &url]);
    assert_eq!(run.code(), 1, "{run}");
    assert!(run.stdout.contains("SSH authentication failure"), "{run}");
    assert!(!dir.join("f.bin").exists());
}

#[test]
fn every_cipher_key_exchange_and_host_key_type_and_a_rekeying_server_give_the_same_bytes() {
    let (root, data) = root_with(2 * 1024 * 1024 + 333, 0x6369);
    for line in [
        "Ciphers aes128-gcm@openssh.com",
        "Ciphers aes256-gcm@openssh.com",
        "Ciphers chacha20-poly1305@openssh.com",
        "KexAlgorithms ecdh-sha2-nistp256",
        "KexAlgorithms curve25519-sha256@libssh.org",
        "HostKeyAlgorithms ssh-ed25519",
        "HostKeyAlgorithms rsa-sha2-256",
        "HostKeyAlgorithms rsa-sha2-512",
        "RekeyLimit 256K",
    ] {
        let Some(sshd) = Sshd::start(&[line], &[]) else {
            return;
        };
        let dir = TestDir::new();
        let url = sshd.password_url(&root.join("f.bin"));
        let run = ringdl(&dir, &["--no-conf", "-d", &dir.arg(), &url]);
        assert_eq!(run.code(), 0, "with {line}:\n{run}\n{}", sshd.log());
        same(&dir, "f.bin", &data, &run);
    }
}

#[test]
fn a_changed_host_key_is_refused_and_the_digest_option_pins_one() {
    let (root, data) = root_with(100_000, 0x686b);
    let Some(sshd) = Sshd::start(&[], &[]) else {
        return;
    };
    let url = sshd.password_url(&root.join("f.bin"));
    let name = format!("[127.0.0.1]:{}", sshd.port);

    // known_hosts has another ECDSA key for this host: refused, nothing written, exit 1.
    let other = TestDir::new();
    keygen("ecdsa", &other.join("k"));
    let other_pub = fs::read_to_string(other.join("k.pub")).expect("pub");
    let dir = TestDir::new();
    let line = format!("{name} {}\n", other_pub.trim());
    fs::write(home(&dir).join(".ssh/known_hosts"), &line).expect("known_hosts");
    let run = ringdl(&dir, &["--no-conf", "-d", &dir.arg(), &url]);
    assert_eq!(run.code(), 1, "{run}");
    assert!(run.stdout.contains("changed"), "{run}");
    assert!(!dir.join("f.bin").exists(), "{run}");
    let kept = fs::read_to_string(home(&dir).join(".ssh/known_hosts")).expect("kept");
    assert_eq!(kept, line, "known_hosts was changed");

    // --ssh-host-key-md names the ECDSA key's digest (as ssh-keygen -l -E shows it): taken,
    // whatever known_hosts says; a wrong one: aria2c's line, exit 1.
    let pub_file = TestDir::new();
    fs::write(pub_file.join("h.pub"), sshd.host_key("ecdsa")).expect("pub");
    for (kind, flag) in [("md5", "md5"), ("sha-1", "sha1"), ("sha-256", "sha256")] {
        let digest = key_digest(&sshd.host_key("ecdsa"), flag);
        let md = format!("--ssh-host-key-md={kind}={digest}");
        let run = ringdl(&dir, &["--no-conf", &md, "-d", &dir.arg(), &url]);
        same(&dir, "f.bin", &data, &run);
        fs::remove_file(dir.join("f.bin")).expect("rm");
    }
    let wrong = format!("--ssh-host-key-md=md5={}", "ab".repeat(16));
    let run = ringdl(&dir, &["--no-conf", &wrong, "-d", &dir.arg(), &url]);
    assert_eq!(run.code(), 1, "{run}");
    assert!(
        run.stdout
            .contains("Unexpected SSH host key: expected abab"),
        "{run}"
    );
    // A value that is no digest: refused as the option is read (aria2c's exit 28).
    for bad in ["md5", "sha-512=00", "md5=xyz", "sha-1=abcd"] {
        let md = format!("--ssh-host-key-md={bad}");
        let run = ringdl(&dir, &["--no-conf", &md, &url]);
        assert_eq!(run.code(), 28, "{bad}: {run}");
    }
}

/// The hex digest `flag` (`md5`, `sha1`, `sha256`) of the key in a `.pub` line: of the key's
/// wire form, as `ssh-keygen -l -E md5` shows md5 (sha256 in hex, not base64).
fn key_digest(pub_line: &str, flag: &str) -> String {
    use base64::Engine as _;
    let b64 = pub_line.split_whitespace().nth(1).expect("key");
    let blob = base64::engine::general_purpose::STANDARD
        .decode(b64)
        .expect("base64");
    let dir = TestDir::new();
    fs::write(dir.join("blob"), &blob).expect("blob");
    let out = std::process::Command::new(format!("{flag}sum"))
        .arg(dir.join("blob"))
        .output()
        .expect("digest program");
    String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .next()
        .expect("digest")
        .to_string()
}

#[test]
fn missing_files_directories_and_wrong_passwords_fail_as_aria2c_says() {
    let (root, _) = root_with(1000, 0x6d66);
    let Some(sshd) = Sshd::start(&[], &[]) else {
        return;
    };
    let cases = [
        (
            sshd.password_url(&root.join("nope.bin")),
            "SSH opening SFTP path",
        ),
        (sshd.password_url(root.path()), "SSH opening SFTP path"),
        (
            format!("{}/", sshd.password_url(root.path())),
            "doesn't contain file path",
        ),
        (
            sshd.url("ringdltest:wrong", &root.join("f.bin")),
            "SSH authentication failure",
        ),
    ];
    for (url, words) in cases {
        let dir = TestDir::new();
        let run = ringdl(&dir, &["--no-conf", "-d", &dir.arg(), &url]);
        assert_eq!(run.code(), 1, "{url}: {run}");
        assert!(run.stdout.contains(words), "{url}: {run}");
        let left: Vec<_> = fs::read_dir(dir.path())
            .expect("dir")
            .flatten()
            .filter(|e| e.file_name() != ".home")
            .collect();
        assert!(left.is_empty(), "{url}: files left {left:?}");
    }
}

#[test]
fn a_download_stopped_part_way_resumes_and_cross_resumes_with_aria2c() {
    let (root, data) = root_with(24 * 1024 * 1024 + 11, 0x7273);
    let Some(sshd) = Sshd::start(&[], &[]) else {
        return;
    };
    let url = sshd.password_url(&root.join("f.bin"));
    let ours = crate::support::binary_under_test();
    let aria2c = std::path::PathBuf::from("aria2c");
    let have_aria2c =
        crate::support::require_peer("aria2c", crate::support::have_program("aria2c"));
    let mut pairs = vec![(&ours, &ours)];
    if have_aria2c {
        pairs.extend([(&aria2c, &ours), (&ours, &aria2c)]);
    }
    for (first, second) in pairs {
        let dir = TestDir::new();
        let common = ["--no-conf", "-x4", "-s4", "-k1M"];
        let mut args: Vec<String> = common.iter().map(|s| s.to_string()).collect();
        args.extend(["--max-download-limit=4M".into(), "--stop=2".into()]);
        args.extend(["-d".into(), dir.arg(), url.clone()]);
        let run = run_program(first, &dir, &args, Duration::from_secs(60));
        assert!(
            dir.join("f.bin.aria2").exists(),
            "{} left no control file\n{run}",
            first.display()
        );
        // The server's first 64 KiB change: a run that went on from where the first stopped
        // keeps those the first run wrote, one that started over takes the new ones.
        let original = fs::read(root.join("f.bin")).expect("read");
        let mut changed = original.clone();
        changed[..64 * 1024].fill(0);
        fs::write(root.join("f.bin"), &changed).expect("change");
        let mut args: Vec<String> = common.iter().map(|s| s.to_string()).collect();
        args.extend(["-c".into(), "-d".into(), dir.arg(), url.clone()]);
        let run = run_program(second, &dir, &args, Duration::from_secs(60));
        same(&dir, "f.bin", &data, &run);
        fs::write(root.join("f.bin"), &original).expect("restore");
    }
}

#[test]
fn an_sftp_mirror_beside_an_http_one_serves_the_same_download() {
    let (root, data) = root_with(8 * 1024 * 1024 + 5, 0x6d78);
    let Some(sshd) = Sshd::start(&[], &[]) else {
        return;
    };
    let http = TestServer::plain();
    http.route(
        "/f.bin",
        Route::bytes(data.clone()).throttle(256 * 1024, Duration::from_millis(20)),
    );
    let dir = TestDir::new();
    let sftp = sshd.password_url(&root.join("f.bin"));
    let args = [
        "--no-conf",
        "-s4",
        "-k1M",
        "-d",
        &dir.arg(),
        &http.url("/f.bin"),
        &sftp,
    ];
    let run = ringdl(&dir, &args);
    same(&dir, "f.bin", &data, &run);
    std::thread::sleep(Duration::from_millis(300));
    let sent: u64 = sshd.bytes_sent().iter().sum();
    assert!(
        sent > 1024 * 1024,
        "the SFTP mirror served {sent} bytes\n{}",
        sshd.log()
    );
}

/// A server that speaks SSH's version line and then sends `then`.
fn hostile(then: Vec<u8>) -> (std::net::TcpListener, u16, std::thread::JoinHandle<()>) {
    let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = l.local_addr().expect("addr").port();
    let l2 = l.try_clone().expect("clone");
    let t = std::thread::spawn(move || {
        for s in l2.incoming().take(5) {
            let Ok(mut s) = s else { return };
            let then = then.clone();
            std::thread::spawn(move || {
                let _ = s.write_all(b"SSH-2.0-hostile\r\n");
                let _ = s.write_all(&then);
                let mut sink = [0u8; 4096];
                let _ = s.set_read_timeout(Some(Duration::from_secs(5)));
                while matches!(s.read(&mut sink), Ok(n) if n > 0) {}
            });
        }
    });
    (l, port, t)
}

#[test]
fn hostile_servers_get_a_line_and_exit_1_without_hanging() {
    let mut huge = vec![0xff, 0xff, 0xff, 0xf0];
    huge.extend_from_slice(&[0; 64]);
    // A KEXINIT offering nothing ringdl speaks.
    let mut kexinit = vec![20u8];
    kexinit.extend_from_slice(&[0; 16]);
    for list in [
        "diffie-hellman-group1-sha1",
        "ssh-dss",
        "3des-cbc",
        "3des-cbc",
    ] {
        kexinit.extend_from_slice(&(list.len() as u32).to_be_bytes());
        kexinit.extend_from_slice(list.as_bytes());
    }
    for _ in 0..6 {
        kexinit.extend_from_slice(&4u32.to_be_bytes());
        kexinit.extend_from_slice(b"none");
    }
    kexinit.extend_from_slice(&[0, 0, 0, 0, 0]);
    let pad = 8 - (kexinit.len() + 5) % 8 + 8;
    let mut packet = ((kexinit.len() + 1 + pad) as u32).to_be_bytes().to_vec();
    packet.push(pad as u8);
    packet.extend_from_slice(&kexinit);
    packet.extend(std::iter::repeat_n(0, pad));
    for (then, words) in [
        (huge, "SSH packet of"),
        (packet, "no key exchange both sides have"),
        (b"\0\0\0\x0c\x0a\x05\0\0\0\0\0\0\0\0\0\0".to_vec(), "SSH"),
    ] {
        let (_l, port, _t) = hostile(then);
        let dir = TestDir::new();
        let url = format!("sftp://u:p@127.0.0.1:{port}/f.bin");
        let args = [
            "--no-conf",
            "--max-tries=2",
            "--retry-wait=0",
            "-d",
            &dir.arg(),
            &url,
        ];
        let run = ringdl(&dir, &args);
        assert_eq!(run.code(), 1, "{run}");
        assert!(run.stdout.contains(words), "{words}: {run}");
        assert!(!Path::new(&dir.join("f.bin")).exists());
    }
}

/// An SFTP download a proxy carries (`--ftp-proxy`, else `--all-proxy`, as for FTP) goes
/// through its tunnel: an HTTP proxy's `CONNECT` (its answer in one write with the server's
/// version line), or SOCKS5; `--http-proxy` is not for SFTP.
#[test]
fn sftp_goes_through_a_proxys_tunnel_and_never_the_http_proxy() {
    use crate::support::proxy::TestProxy;
    let (root, data) = root_with(1_000_000, 0x7078);
    let Some(sshd) = Sshd::start(&[], &[]) else {
        return;
    };
    let url = sshd.password_url(&root.join("f.bin"));
    for (proxy, how) in [
        (TestProxy::http_eager(), "--all-proxy=http"),
        (TestProxy::socks5(None), "--ftp-proxy=socks5"),
    ] {
        let dir = TestDir::new();
        let at = format!("{how}://127.0.0.1:{}", proxy.port());
        let run = ringdl(&dir, &["--no-conf", &at, "-s2", "-d", &dir.arg(), &url]);
        same(&dir, "f.bin", &data, &run);
        let targets: Vec<String> = proxy.seen().into_iter().map(|r| r.target).collect();
        let server = format!("127.0.0.1:{}", sshd.port);
        assert!(
            !targets.is_empty() && targets.iter().all(|t| *t == server),
            "{how}: {targets:?}"
        );
    }
    let dir = TestDir::new();
    let proxy = "--http-proxy=http://127.0.0.1:9";
    let run = ringdl(&dir, &["--no-conf", proxy, "-d", &dir.arg(), &url]);
    same(&dir, "f.bin", &data, &run);
}

/// The keys an ssh-agent holds (`SSH_AUTH_SOCK`) are offered first, signed by the agent; a key
/// file protected by a passphrase is passed over with a notice.
#[test]
fn an_agents_keys_log_in_and_a_key_with_a_passphrase_is_passed_over() {
    let (root, data) = root_with(4 * 1024 * 1024 + 3, 0x6167);
    let keys = TestDir::new();
    let (rsa, ed) = (keys.join("agent_rsa"), keys.join("agent_ed"));
    keygen("rsa", &rsa);
    keygen("ed25519", &ed);
    let Some(sshd) = Sshd::start(
        &[],
        &[&keys.join("agent_rsa.pub"), &keys.join("agent_ed.pub")],
    ) else {
        return;
    };
    let sock = keys.join("agent.sock");
    /// The agent, killed when the test ends (passed or not).
    struct Agent(std::process::Child);
    impl Drop for Agent {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
    let _agent = Agent(
        std::process::Command::new("ssh-agent")
            .args(["-D", "-a"])
            .arg(&sock)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("ssh-agent"),
    );
    for _ in 0..100 {
        if sock.exists() {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let url = sshd.url("root", &root.join("f.bin"));
    for key in [&rsa, &ed] {
        let added = std::process::Command::new("ssh-add")
            .arg(key)
            .env("SSH_AUTH_SOCK", &sock)
            .stderr(std::process::Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        assert!(added, "ssh-add failed");
        let dir = TestDir::new();
        // A key file ringdl cannot read without its passphrase.
        let locked = home(&dir).join(".ssh/id_ed25519");
        keygen("ed25519", &locked);
        let ok = std::process::Command::new("ssh-keygen")
            .args(["-q", "-p", "-N", "secret phrase", "-P", "", "-f"])
            .arg(&locked)
            .stdout(std::process::Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        assert!(ok, "ssh-keygen -p failed");
        let args = ["--no-conf", "-x2", "-s2", "-k1M", "-d", &dir.arg(), &url];
        let run = crate::support::run_changed(
            &crate::support::binary_under_test(),
            &dir,
            &args,
            Duration::from_secs(60),
            |c| {
                c.env("SSH_AUTH_SOCK", &sock);
            },
        );
        same(&dir, "f.bin", &data, &run);
        // Said once, though each of the two connections found the key.
        let said = run.stdout.matches("passphrase").count();
        assert_eq!(said, 1, "the locked key's notice {said} times\n{run}");
        let _ = std::process::Command::new("ssh-add")
            .arg("-D")
            .env("SSH_AUTH_SOCK", &sock)
            .stderr(std::process::Stdio::null())
            .status();
    }
}

/// Over RPC an SFTP URI is a download as an HTTP one is: `addUri`, `tellStatus` with its
/// lengths and its URI as it was given (as aria2 gives it back), complete and byte-exact.
#[test]
fn an_sftp_uri_added_over_rpc_completes_with_aria2s_status_fields() {
    use crate::support::rpc::Daemon;
    use serde_json::json;
    let (root, data) = root_with(3 * 1024 * 1024 + 9, 0x7270);
    let Some(sshd) = Sshd::start(&[], &[]) else {
        return;
    };
    let url = sshd.password_url(&root.join("f.bin"));
    let dir = TestDir::new();
    let d = Daemon::start(&dir, &["-d", &dir.arg()]);
    let gid = d.call(
        "aria2.addUri",
        json!([[&url], {"split": "2", "min-split-size": "1M"}]),
    );
    let gid = gid.as_str().expect("a gid").to_string();
    let s = d.wait_for(&gid, Duration::from_secs(30), |s| s["status"] == "complete");
    assert_eq!(s["totalLength"], json!(data.len().to_string()), "{s}");
    assert_eq!(s["completedLength"], json!(data.len().to_string()), "{s}");
    let uri = s["files"][0]["uris"][0]["uri"]
        .as_str()
        .expect("a uri")
        .to_string();
    assert_eq!(uri, url);
    assert_eq!(sha256_file(&dir.join("f.bin")), sha256_hex(&data));
}
