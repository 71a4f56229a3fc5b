//! `ftp://` downloads against real servers on loopback: vsftpd (anonymous) and pure-ftpd (a user
//! with a password), whole and split over several control and data connection pairs, resumed,
//! beside an HTTP mirror, and the failures aria2c has exit codes for.

use std::fs;
use std::time::Duration;

use crate::support::ftp::{FtpServer, PASSWORD, USER};
use crate::support::server::{Route, TestServer};
use crate::support::{content, ringdl, ringdl_with_timeout, sha256_file, sha256_hex, TestDir};

/// A root with `pub/f.bin` of `len` bytes; its bytes.
fn root_with(len: usize, seed: u64) -> (TestDir, Vec<u8>) {
    let root = TestDir::new();
    fs::create_dir(root.join("pub")).expect("pub");
    let data = content(seed, len);
    fs::write(root.join("pub/f.bin"), &data).expect("write");
    (root, data)
}

/// The run ended well with `name` in `dir` holding `data`, and no control file left.
pub(crate) fn same(dir: &TestDir, name: &str, data: &[u8], run: &crate::support::Run) {
    assert_eq!(run.code(), 0, "{run}");
    assert_eq!(
        sha256_file(&dir.join(name)),
        sha256_hex(data),
        "bytes differ\n{run}"
    );
    assert!(
        !dir.join(&format!("{name}.aria2")).exists(),
        "a control file left"
    );
}

#[test]
fn vsftpd_whole_and_split_downloads_are_byte_exact() {
    // Odd, past a 4 KiB block: the last direct write is padded and cut.
    let (root, data) = root_with(9 * 1024 * 1024 + 4097, 0x6674_7031);
    let Some(server) = FtpServer::vsftpd(root.path()) else {
        return;
    };
    let url = server.url("pub/f.bin");
    let dir = TestDir::new();
    let run = ringdl(&dir, &["--no-conf", "-d", &dir.arg(), &url]);
    same(&dir, "f.bin", &data, &run);
    let commands = server.commands();
    for c in [
        "USER anonymous",
        "TYPE I",
        "CWD pub",
        "SIZE f.bin",
        "RETR f.bin",
    ] {
        assert!(commands.iter().any(|x| x == c), "no {c}: {commands:?}");
    }

    let dir = TestDir::new();
    let args = ["--no-conf", "-x4", "-s4", "-k1M", "-d", &dir.arg(), &url];
    let run = ringdl(&dir, &args);
    same(&dir, "f.bin", &data, &run);
    let rests: Vec<_> = server
        .commands()
        .into_iter()
        .filter(|c| c.starts_with("REST "))
        .collect();
    assert!(rests.len() >= 3, "not split: {rests:?}");
}

/// The same downloads from proftpd and pure-ftpd (their own replies, passive ports and aborts):
/// whole, split, active mode.
#[test]
fn proftpd_and_pure_ftpd_serve_whole_split_and_active_downloads() {
    let (root, data) = root_with(6 * 1024 * 1024 + 333, 0x7072);
    let servers = [
        FtpServer::proftpd(root.path()),
        FtpServer::pure_ftpd(root.path()),
    ];
    for server in servers.iter().flatten() {
        let url = server.url_with_login("pub/f.bin");
        for opts in [
            &[][..],
            &["-x4", "-s4", "-k1M"][..],
            &["--ftp-pasv=false", "-s3"][..],
        ] {
            let dir = TestDir::new();
            let mut args = vec!["--no-conf".to_string(), "-d".into(), dir.arg()];
            args.extend(opts.iter().map(|s| s.to_string()));
            args.push(url.clone());
            let run = ringdl(&dir, &args);
            same(&dir, "f.bin", &data, &run);
        }
    }
}

/// The control connections a run opened to `port` (its data connections not counted), from its
/// log at info level.
fn control_connections(log: &std::path::Path, port: u16) -> usize {
    let log = fs::read_to_string(log).unwrap_or_default();
    let to = format!("Connecting to 127.0.0.1:{port}");
    log.lines().filter(|l| l.trim_end().ends_with(&to)).count()
}

/// Three files of one server, one after another (`-j1`): aria2c's default keeps the control
/// connection, logged in, for the next file (back to where the login started, then into the
/// next file's directories); `--ftp-reuse-connection=false` logs in for each. Each server, both
/// data connection modes, and a list whose files are split.
#[test]
fn a_list_of_files_goes_over_one_logged_in_connection() {
    let root = TestDir::new();
    fs::create_dir_all(root.join("pub/sub")).expect("dirs");
    let files = [
        ("pub/a.bin", content(0xa1, 2 * 1024 * 1024 + 7)),
        ("pub/sub/b.bin", content(0xb2, 300_001)),
        ("c.bin", content(0xc3, 4096)),
    ];
    for (path, data) in &files {
        fs::write(root.join(path), data).expect("write");
    }
    let servers = [
        FtpServer::vsftpd(root.path()),
        FtpServer::proftpd(root.path()),
        FtpServer::pure_ftpd(root.path()),
    ];
    let mut tried = 0;
    for server in servers.iter().flatten() {
        for (opts, logins) in [
            (&["-j1"][..], 1),
            (&["-j1", "--ftp-pasv=false"][..], 1),
            (&["-j1", "--ftp-reuse-connection=false"][..], 3),
        ] {
            tried += 1;
            let dir = TestDir::new();
            let list: String = files
                .iter()
                .map(|(p, _)| format!("{}\n", server.url_with_login(p)))
                .collect();
            fs::write(dir.join("list"), list).expect("list");
            let log = dir.join("run.log");
            let mut args = vec![
                "--no-conf".to_string(),
                "--log-level=info".into(),
                "-l".into(),
                log.display().to_string(),
                "-d".into(),
                dir.arg(),
                "-i".into(),
                dir.join("list").display().to_string(),
            ];
            args.extend(opts.iter().map(|s| s.to_string()));
            let run = ringdl(&dir, &args);
            for (path, data) in &files {
                let name = path.rsplit('/').next().unwrap_or(path);
                same(&dir, name, data, &run);
            }
            assert_eq!(
                control_connections(&log, server.port()),
                logins,
                "{opts:?}: {}\n{run}",
                fs::read_to_string(&log).unwrap_or_default()
            );
        }
    }
    if tried > 0 {
        // vsftpd logs its commands: one login, then back to the start for each next file.
        if let Some(server) = servers[0].as_ref() {
            assert_eq!(users(server), 1 + 1 + 3, "{:?}", server.commands());
        }
    }
}

/// A kept control connection the server closed meanwhile (`421` after the transfer, as an idle
/// timeout says it): the next file goes on a new connection, and nothing fails.
#[test]
fn a_kept_connection_the_server_closed_is_replaced_without_a_failure() {
    use crate::support::ftp::{FakeFtp, Misbehaviour};
    let data = content(0x4242, 100_000);
    let how = Misbehaviour {
        closes_after_transfer: true,
        ..Misbehaviour::default()
    };
    let server = FakeFtp::start("f.bin", data.clone(), how);
    let dir = TestDir::new();
    let list = format!(
        "{}\n  out=one.bin\n{}\n  out=two.bin\n",
        server.url("pub/f.bin"),
        server.url("pub/f.bin")
    );
    fs::write(dir.join("list"), list).expect("list");
    let args = [
        "--no-conf",
        "-j1",
        "-d",
        &dir.arg(),
        "-i",
        "list",
        "--max-tries=1",
        "--log-level=info",
        "-l",
        "run.log",
    ];
    let run = ringdl(&dir, &args);
    same(&dir, "one.bin", &data, &run);
    same(&dir, "two.bin", &data, &run);
    let log = fs::read_to_string(dir.join("run.log")).unwrap_or_default();
    assert!(
        log.contains("The kept connection could not go on"),
        "the second file did not try the kept connection first:\n{log}"
    );
    let commands = server.commands();
    let users = commands.iter().filter(|c| c.starts_with("USER ")).count();
    assert_eq!(users, 2, "{commands:?}");
    assert!(commands.iter().any(|c| c == "PWD"), "{commands:?}");
}

#[test]
fn a_missing_file_exits_3_a_directory_1_and_nothing_is_left() {
    let (root, _) = root_with(1000, 1);
    let Some(server) = FtpServer::vsftpd(root.path()) else {
        return;
    };
    let dir = TestDir::new();
    let run = ringdl(
        &dir,
        &["--no-conf", "-d", &dir.arg(), &server.url("pub/none.bin")],
    );
    assert_eq!(run.code(), 3, "{run}");
    let run = ringdl(
        &dir,
        &["--no-conf", "-d", &dir.arg(), &server.url("nodir/f.bin")],
    );
    assert_eq!(run.code(), 3, "{run}");
    let run = ringdl(&dir, &["--no-conf", "-d", &dir.arg(), &server.url("pub/")]);
    assert_eq!(run.code(), 1, "{run}");
    assert!(dir.entries().is_empty(), "{:?}", dir.entries());
}

#[test]
fn a_password_comes_from_the_uri_or_the_options_and_a_wrong_one_exits_21() {
    let (root, data) = root_with(2 * 1024 * 1024 + 3, 0x7077);
    let Some(server) = FtpServer::pure_ftpd(root.path()) else {
        return;
    };
    let dir = TestDir::new();
    let run = ringdl(
        &dir,
        &[
            "--no-conf",
            "-d",
            &dir.arg(),
            &server.url_with_login("pub/f.bin"),
        ],
    );
    same(&dir, "f.bin", &data, &run);

    let dir = TestDir::new();
    let user = format!("--ftp-user={USER}");
    let pass = format!("--ftp-passwd={PASSWORD}");
    let args = [
        "--no-conf",
        "-s2",
        "-d",
        &dir.arg(),
        &user,
        &pass,
        &server.url("pub/f.bin"),
    ];
    let run = ringdl(&dir, &args);
    same(&dir, "f.bin", &data, &run);

    let dir = TestDir::new();
    let wrong = [
        "--no-conf",
        "-d",
        &dir.arg(),
        &user,
        "--ftp-passwd=nope",
        &server.url("pub/f.bin"),
    ];
    let run = ringdl_with_timeout(&dir, &wrong, Duration::from_secs(60));
    assert_eq!(run.code(), 21, "{run}");
    assert!(dir.entries().is_empty(), "{:?}", dir.entries());
}

#[test]
fn a_download_stopped_part_way_resumes_from_its_control_file() {
    let (root, data) = root_with(24 * 1024 * 1024 + 11, 0x7265);
    let Some(server) = FtpServer::vsftpd(root.path()) else {
        return;
    };
    let url = server.url("pub/f.bin");
    let dir = TestDir::new();
    // Stopped by the time limit after a few seconds at 4 MiB/s.
    let args = [
        "--no-conf",
        "-x4",
        "-s4",
        "-k1M",
        "--max-download-limit=4M",
        "--stop=2",
        "-d",
        &dir.arg(),
        &url,
    ];
    let run = ringdl(&dir, &args);
    assert_ne!(run.code(), 0, "{run}");
    assert!(dir.join("f.bin.aria2").exists(), "no control file\n{run}");
    let run = ringdl(
        &dir,
        &["--no-conf", "-c", "-x4", "-s4", "-d", &dir.arg(), &url],
    );
    same(&dir, "f.bin", &data, &run);
    let rest = server
        .commands()
        .iter()
        .filter(|c| c.starts_with("REST "))
        .count();
    assert!(rest >= 2, "the second run did not go on from offsets");
}

#[test]
fn an_ftp_mirror_beside_an_http_one_serves_the_same_download() {
    let (root, data) = root_with(8 * 1024 * 1024 + 5, 0x6d69);
    let Some(ftp) = FtpServer::vsftpd(root.path()) else {
        return;
    };
    let http = TestServer::plain();
    http.route(
        "/pub/f.bin",
        Route::bytes(data.clone()).throttle(256 * 1024, Duration::from_millis(20)),
    );
    let dir = TestDir::new();
    let args = [
        "--no-conf",
        "-s4",
        "-k1M",
        "-d",
        &dir.arg(),
        &http.url("/pub/f.bin"),
        &ftp.url("pub/f.bin"),
    ];
    let run = ringdl(&dir, &args);
    same(&dir, "f.bin", &data, &run);
    assert!(
        ftp.commands().iter().any(|c| c.starts_with("RETR")),
        "the FTP mirror was not used"
    );
}

mod hostile {
    use super::*;
    use crate::support::ftp::{FakeFtp, Misbehaviour};

    fn get(server: &FakeFtp, extra: &[&str]) -> (TestDir, crate::support::Run) {
        let dir = TestDir::new();
        let mut args = vec!["--no-conf".to_string(), "-d".into(), dir.arg()];
        args.extend(extra.iter().map(|s| s.to_string()));
        args.push(server.url("pub/f.bin"));
        let run = ringdl(&dir, &args);
        (dir, run)
    }

    /// A `227` reply naming another host: the data connection still goes to the control
    /// connection's peer (as curl does), so a server cannot aim it anywhere else.
    #[test]
    fn a_passive_reply_naming_another_host_is_not_followed() {
        let data = content(0x3232, 700_001);
        let how = Misbehaviour {
            pasv_host: Some([10, 255, 255, 1]),
            no_epsv: true,
            ..Misbehaviour::default()
        };
        let server = FakeFtp::start("f.bin", data.clone(), how);
        let (dir, run) = get(&server, &["--connect-timeout=5"]);
        same(&dir, "f.bin", &data, &run);
        assert!(
            server.commands().iter().any(|c| c == "PASV"),
            "{:?}",
            server.commands()
        );
    }

    /// Replies that never end, or a line of 10 MB: one line, exit 21, quickly, bounded.
    #[test]
    fn replies_that_never_end_fail_with_one_line() {
        for how in [
            Misbehaviour {
                endless_greeting: true,
                ..Misbehaviour::default()
            },
            Misbehaviour {
                huge_line: true,
                ..Misbehaviour::default()
            },
            Misbehaviour {
                port_zero: true,
                ..Misbehaviour::default()
            },
        ] {
            let server = FakeFtp::start("f.bin", vec![1; 10], how);
            let (dir, run) = get(&server, &["--max-tries=1"]);
            assert_eq!(run.code(), 21, "{run}");
            assert_eq!(run.lines_with("errorCode=").len(), 1, "{run}");
            assert!(dir.entries().is_empty(), "{:?}", dir.entries());
        }
    }

    /// Data connections that close early are gone on from where they stopped (REST), and
    /// bytes past `SIZE` are never written: the file ends byte-exact.
    #[test]
    fn early_closes_are_resumed_and_bytes_past_the_size_are_cut() {
        let data = content(0x6375, 1_000_003);
        let how = Misbehaviour {
            cut_after: Some(300_000),
            ..Misbehaviour::default()
        };
        let server = FakeFtp::start("f.bin", data.clone(), how);
        let (dir, run) = get(&server, &["--max-tries=10", "--retry-wait=0"]);
        same(&dir, "f.bin", &data, &run);
        assert!(
            server
                .data_connections
                .load(std::sync::atomic::Ordering::Relaxed)
                >= 4
        );

        let how = Misbehaviour {
            extra: 5000,
            ..Misbehaviour::default()
        };
        let server = FakeFtp::start("f.bin", data.clone(), how);
        let (dir, run) = get(&server, &["-s3", "-k1M"]);
        same(&dir, "f.bin", &data, &run);
    }

    /// A server whose `SIZE` is short is taken at its word (as aria2c does: the file is what
    /// SIZE said); one whose `SIZE` is long fails, and what it left is a prefix that resumes.
    #[test]
    fn a_size_that_lies_never_puts_wrong_bytes_on_disk() {
        let data = content(0x6c69, 600_000);
        let how = Misbehaviour {
            size: Some(400_000),
            ..Misbehaviour::default()
        };
        let server = FakeFtp::start("f.bin", data.clone(), how);
        let (dir, run) = get(&server, &[]);
        same(&dir, "f.bin", &data[..400_000], &run);

        let how = Misbehaviour {
            size: Some(900_000),
            ..Misbehaviour::default()
        };
        let server = FakeFtp::start("f.bin", data.clone(), how);
        let (dir, run) = get(&server, &["--max-tries=2", "--retry-wait=0"]);
        assert_ne!(run.code(), 0, "{run}");
        let on_disk = fs::read(dir.join("f.bin")).unwrap_or_default();
        let n = on_disk.len().min(data.len());
        assert_eq!(&on_disk[..n], &data[..n], "wrong bytes on disk\n{run}");
    }

    /// A path or user with CR/LF is refused before anything is sent: no command injection.
    #[test]
    fn line_breaks_in_names_are_refused_before_any_command() {
        let server = FakeFtp::start("f.bin", vec![1; 10], Misbehaviour::default());
        let dir = TestDir::new();
        for url in [
            server.url("pub/a%0d%0aDELE%20x"),
            format!(
                "ftp://u%0d%0aDELE%20x:p@127.0.0.1:{}/f.bin",
                server
                    .url("")
                    .split(':')
                    .nth(2)
                    .unwrap_or("0")
                    .trim_end_matches('/')
            ),
        ] {
            let run = ringdl(&dir, &["--no-conf", "-d", &dir.arg(), &url]);
            assert_eq!(run.code(), 1, "{run}");
            assert_eq!(run.lines_with("errorCode=").len(), 1, "{run}");
        }
        let sent = server.commands();
        assert!(!sent.iter().any(|c| c.contains("DELE")), "{sent:?}");
        assert!(dir.entries().is_empty(), "{:?}", dir.entries());
    }
}

/// A download stopped part-way by one program is finished by the other from its control file,
/// both ways (`-c`, the same command line): the file ends byte-exact and the second run fetched
/// only the rest.
#[test]
fn ftp_downloads_cross_resume_with_aria2c_both_ways() {
    if !crate::support::require_peer("aria2c", crate::support::have_program("aria2c")) {
        return;
    }
    let (root, data) = root_with(20 * 1024 * 1024 + 4097, 0x6372);
    let Some(server) = FtpServer::vsftpd(root.path()) else {
        return;
    };
    let url = server.url("pub/f.bin");
    let aria2c = std::path::PathBuf::from("aria2c");
    let ours = crate::support::binary_under_test();
    for (first, second) in [(&aria2c, &ours), (&ours, &aria2c)] {
        let dir = TestDir::new();
        let common = [
            "--no-conf",
            "-x4",
            "-s4",
            "-k1M",
            "--ftp-reuse-connection=false",
        ];
        let mut args: Vec<String> = common.iter().map(|s| s.to_string()).collect();
        args.extend(["--max-download-limit=3M".into(), "--stop=2".into()]);
        args.extend(["-d".into(), dir.arg(), url.clone()]);
        let run = crate::support::run_program(first, &dir, &args, Duration::from_secs(60));
        let partial = fs::metadata(dir.join("f.bin.aria2")).is_ok();
        assert!(partial, "{} left no control file\n{run}", first.display());
        let mut args: Vec<String> = common.iter().map(|s| s.to_string()).collect();
        args.extend(["-c".into(), "-d".into(), dir.arg(), url.clone()]);
        let before = server.log().len();
        let run = crate::support::run_program(second, &dir, &args, Duration::from_secs(60));
        same(&dir, "f.bin", &data, &run);
        let later = &server.log()[before..];
        let rest: Vec<u64> = later
            .lines()
            .filter_map(|l| l.split("\"REST ").nth(1))
            .filter_map(|r| r.trim_end_matches('"').parse().ok())
            .collect();
        assert!(
            !rest.is_empty() && rest.iter().all(|&r| r > 0),
            "{} started over: {rest:?}",
            second.display()
        );
    }
}

/// `--ftp-pasv=false`: the server connects to a socket ringdl listens on (EPRT), whole and
/// split, byte-exact, against vsftpd and, with a password, pure-ftpd.
#[test]
fn active_mode_downloads_are_byte_exact() {
    let (root, data) = root_with(7 * 1024 * 1024 + 1, 0x6163);
    let Some(server) = FtpServer::vsftpd(root.path()) else {
        return;
    };
    for split in [&["-x1"][..], &["-x4", "-s4", "-k1M"][..]] {
        let dir = TestDir::new();
        let mut args = vec!["--no-conf", "--ftp-pasv=false", "-d"];
        let d = dir.arg();
        args.push(&d);
        args.extend_from_slice(split);
        let url = server.url("pub/f.bin");
        args.push(&url);
        let run = ringdl(&dir, &args);
        same(&dir, "f.bin", &data, &run);
    }
    let commands = server.commands();
    let eprt = commands
        .iter()
        .filter(|c| c.starts_with("EPRT |1|127.0.0.1|"))
        .count();
    assert!(eprt >= 2, "{commands:?}");
    assert!(
        !commands.iter().any(|c| c == "EPSV" || c == "PASV"),
        "{commands:?}"
    );

    let Some(server) = FtpServer::pure_ftpd(root.path()) else {
        return;
    };
    let dir = TestDir::new();
    let url = server.url_with_login("pub/f.bin");
    let run = ringdl(
        &dir,
        &[
            "--no-conf",
            "--ftp-pasv=false",
            "-s2",
            "-d",
            &dir.arg(),
            &url,
        ],
    );
    same(&dir, "f.bin", &data, &run);
}

mod active {
    use super::*;
    use crate::support::ftp::{FakeFtp, Misbehaviour};

    /// A server that does not understand EPRT is told the address with PORT.
    #[test]
    fn port_is_said_where_eprt_is_not_understood() {
        let data = content(0x706f, 300_001);
        let how = Misbehaviour {
            no_eprt: true,
            ..Misbehaviour::default()
        };
        let server = FakeFtp::start("f.bin", data.clone(), how);
        let dir = TestDir::new();
        let url = server.url("pub/f.bin");
        let run = ringdl(
            &dir,
            &["--no-conf", "--ftp-pasv=false", "-d", &dir.arg(), &url],
        );
        same(&dir, "f.bin", &data, &run);
        let sent = server.commands();
        assert!(
            sent.iter().any(|c| c.starts_with("PORT 127,0,0,1,")),
            "{sent:?}"
        );
    }

    /// A server that never connects back: the wait ends at the connect timeout, exit 2, and
    /// nothing is left behind.
    #[test]
    fn a_server_that_never_connects_times_out() {
        let how = Misbehaviour {
            never_connects: true,
            ..Misbehaviour::default()
        };
        let server = FakeFtp::start("f.bin", vec![7; 1000], how);
        let dir = TestDir::new();
        let url = server.url("pub/f.bin");
        let args = [
            "--no-conf",
            "--ftp-pasv=false",
            "--connect-timeout=2",
            "--max-tries=1",
            "-d",
            &dir.arg(),
            &url,
        ];
        let run = ringdl(&dir, &args);
        assert_eq!(run.code(), 2, "{run}");
        assert_eq!(run.lines_with("errorCode=").len(), 1, "{run}");
        assert!(run.elapsed < Duration::from_secs(20), "{run}");
    }
}

/// A URI with a user and no password takes the password from the netrc file when its entry for
/// the host has that login (aria2c's rule); `-n` does not read the file.
#[test]
fn a_password_comes_from_the_netrc_file_for_the_uris_user() {
    let (root, data) = root_with(300_007, 0x6e65);
    let Some(server) = FtpServer::pure_ftpd(root.path()) else {
        return;
    };
    let dir = TestDir::new();
    let netrc = dir.join("netrc");
    fs::write(
        &netrc,
        format!("machine 127.0.0.1 login {USER} password {PASSWORD}\n"),
    )
    .expect("netrc");
    {
        use std::os::unix::fs::PermissionsExt;
        fs::set_permissions(&netrc, fs::Permissions::from_mode(0o600)).expect("chmod");
    }
    let url = format!("ftp://{USER}@127.0.0.1:{}/pub/f.bin", server.port());
    let netrc_arg = format!("--netrc-path={}", netrc.display());
    let out = dir.join("out");
    let out_arg = out.display().to_string();
    let run = ringdl(&dir, &["--no-conf", &netrc_arg, "-d", &out_arg, &url]);
    assert_eq!(run.code(), 0, "{run}");
    assert_eq!(sha256_file(&out.join("f.bin")), sha256_hex(&data));
    let run = ringdl(
        &dir,
        &[
            "--no-conf",
            &netrc_arg,
            "-n",
            "-d",
            &out_arg,
            "--allow-overwrite=true",
            &url,
        ],
    );
    assert_eq!(run.code(), 21, "-n: the default password, refused\n{run}");
}

/// `-R`: the file gets the server's modification time (MDTM, asked only then).
#[test]
fn remote_time_comes_from_mdtm() {
    let (root, data) = root_with(100_003, 0x6d64);
    let when = std::time::UNIX_EPOCH + Duration::from_secs(981_173_106); // 2001-02-03 04:05:06
    fs::File::options()
        .write(true)
        .open(root.join("pub/f.bin"))
        .and_then(|f| f.set_modified(when))
        .expect("set the source's time");
    let Some(server) = FtpServer::vsftpd(root.path()) else {
        return;
    };
    let dir = TestDir::new();
    let url = server.url("pub/f.bin");
    let run = ringdl(&dir, &["--no-conf", "-d", &dir.arg(), &url]);
    same(&dir, "f.bin", &data, &run);
    assert!(!server.commands().iter().any(|c| c.starts_with("MDTM")));
    let dir = TestDir::new();
    let run = ringdl(&dir, &["--no-conf", "-R", "-d", &dir.arg(), &url]);
    same(&dir, "f.bin", &data, &run);
    assert!(server.commands().iter().any(|c| c == "MDTM f.bin"));
    let got = fs::metadata(dir.join("f.bin"))
        .and_then(|m| m.modified())
        .expect("mtime");
    assert_eq!(got, when, "{run}");
}

/// Over IPv6 (`ftp://[::1]:PORT/`): EPSV, and EPRT with `|2|` in active mode.
#[test]
fn ipv6_passive_and_active_downloads() {
    let (root, data) = root_with(2 * 1024 * 1024 + 9, 0x7636);
    let Some(server) = FtpServer::vsftpd_v6(root.path()) else {
        return;
    };
    for opts in [&["-s2"][..], &["--ftp-pasv=false", "-s2"][..]] {
        let dir = TestDir::new();
        let mut args = vec!["--no-conf".to_string(), "-d".into(), dir.arg()];
        args.extend(opts.iter().map(|s| s.to_string()));
        args.push(server.url("pub/f.bin"));
        let run = ringdl(&dir, &args);
        same(&dir, "f.bin", &data, &run);
    }
    let sent = server.commands();
    assert!(sent.iter().any(|c| c == "EPSV"), "{sent:?}");
    assert!(
        sent.iter().any(|c| c.starts_with("EPRT |2|::1|")),
        "{sent:?}"
    );
}

/// `--http-proxy` (and `http_proxy`) is not for FTP, as in aria2c: the download goes straight
/// to the server. `--ftp-proxy` (and `ftp_proxy`, and `--all-proxy`) naming an HTTP proxy gets
/// the file as aria2c does, `GET ftp://...` to the proxy, which fetches it; active mode through
/// a tunnel is refused in one line before anything is sent.
#[test]
fn ftp_goes_to_an_http_proxy_as_get_and_never_to_the_http_proxy() {
    let (root, data) = root_with(200_001, 0x7078);
    let Some(server) = FtpServer::vsftpd(root.path()) else {
        return;
    };
    let unused = std::net::TcpListener::bind("127.0.0.1:0").expect("a listener");
    let at = format!("http://{}", unused.local_addr().expect("addr"));
    unused.set_nonblocking(true).expect("nonblocking");
    let url = server.url("pub/f.bin");
    let dir = TestDir::new();
    let http_proxy = format!("--http-proxy={at}");
    let run = ringdl(&dir, &["--no-conf", &http_proxy, "-d", &dir.arg(), &url]);
    same(&dir, "f.bin", &data, &run);
    assert!(
        unused.accept().is_err(),
        "something was sent to the HTTP proxy"
    );

    // The proxy: the test server, which serves `GET ftp://host/path` by its path.
    let proxy = TestServer::plain();
    proxy.route("/pub/f.bin", Route::bytes(data.clone()));
    let authority = proxy.url("").trim_end_matches('/').to_string();
    let ftp_url = "ftp://ftp.example.invalid/pub/f.bin";
    for how in ["--ftp-proxy", "--all-proxy"] {
        let dir = TestDir::new();
        let opt = format!("{how}={authority}");
        let run = ringdl(&dir, &["--no-conf", &opt, "-d", &dir.arg(), ftp_url]);
        same(&dir, "f.bin", &data, &run);
    }
    // As aria2c asks: the FTP user in the target (the password in Authorization).
    let targets: Vec<String> = proxy.requests().iter().map(|r| r.path.clone()).collect();
    let asked = "ftp://anonymous@ftp.example.invalid/pub/f.bin";
    assert!(
        targets.len() >= 2 && targets.iter().all(|t| t == asked),
        "{targets:?}"
    );
    let auth = proxy.requests()[0]
        .header("Authorization")
        .map(str::to_string);
    assert_eq!(
        auth.as_deref(),
        Some("Basic YW5vbnltb3VzOkFSSUEyVVNFUkA="),
        "anonymous:ARIA2USER@"
    );
    // The environment's ftp_proxy too.
    let dir = TestDir::new();
    let args = ["--no-conf", "-d", &dir.arg(), ftp_url];
    let run = crate::support::run_changed(
        &crate::support::binary_under_test(),
        &dir,
        &args,
        Duration::from_secs(60),
        |c| {
            c.env("ftp_proxy", &authority);
        },
    );
    same(&dir, "f.bin", &data, &run);

    // Active mode cannot go through a tunnel (the server would have to reach back past the
    // proxy): refused in one line before anything is sent.
    let dir = TestDir::new();
    let tunnel = format!("--ftp-proxy={at}");
    let args = [
        "--no-conf",
        &tunnel,
        "--proxy-method=tunnel",
        "--ftp-pasv=false",
        "-d",
        &dir.arg(),
        &url,
    ];
    let run = ringdl(&dir, &args);
    assert_eq!(run.code(), 1, "{run}");
    let said = run.lines_with("errorCode=");
    assert!(said.len() == 1 && said[0].contains("active mode"), "{run}");
    assert!(dir.entries().is_empty(), "{:?}", dir.entries());
    assert!(unused.accept().is_err(), "something was sent to the proxy");
}

/// `--proxy-method=tunnel` takes FTP through the HTTP proxy's `CONNECT` as aria2c does: the
/// control connection to the server's port 21, each data connection to the port `PASV`/`EPSV`
/// named, of the same host; a SOCKS5 proxy (beyond aria2c) the same way. Split and kept
/// connections too, with the proxy's own login.
#[test]
fn ftp_goes_through_a_connect_tunnel_or_socks_with_its_data_connections() {
    use crate::support::proxy::TestProxy;
    let (root, data) = root_with(3 * 1024 * 1024 + 5, 0x7475);
    let Some(server) = FtpServer::vsftpd(root.path()) else {
        return;
    };
    let url = server.url("pub/f.bin");
    let port = server.port().to_string();
    for socks in [false, true] {
        let proxy = match socks {
            false => TestProxy::http(Some(("pu", "pp"))),
            true => TestProxy::socks5(Some(("pu", "pp"))),
        };
        let scheme = if socks { "socks5" } else { "http" };
        let at = format!("--ftp-proxy={scheme}://127.0.0.1:{}", proxy.port());
        for extra in [&["-x1"][..], &["-x3", "-s3", "-k1M"][..]] {
            let dir = TestDir::new();
            let mut args = vec![
                "--no-conf",
                &at,
                "--ftp-proxy-user=pu",
                "--ftp-proxy-passwd=pp",
                "--proxy-method=tunnel",
                "-d",
            ];
            let d = dir.arg();
            args.push(&d);
            args.extend_from_slice(extra);
            args.push(&url);
            let run = ringdl(&dir, &args);
            same(&dir, "f.bin", &data, &run);
        }
        let seen = proxy.seen();
        let control = seen
            .iter()
            .filter(|r| r.target.ends_with(&format!(":{port}")))
            .count();
        let data_conns = seen.len() - control;
        assert!(
            control >= 2 && data_conns >= 2 && data_conns >= control,
            "{scheme}: {:?}",
            seen.iter().map(|r| &r.target).collect::<Vec<_>>()
        );
        assert!(
            seen.iter().all(|r| r.target.starts_with("127.0.0.1:")),
            "{scheme}: every tunnel goes to the server's host"
        );
    }
    // The greeting in the same read as the proxy's answer is the server's, not refused.
    let proxy = TestProxy::http_eager();
    let dir = TestDir::new();
    let at = format!("--ftp-proxy=http://127.0.0.1:{}", proxy.port());
    let args = [
        "--no-conf",
        &at,
        "--proxy-method=tunnel",
        "-d",
        &dir.arg(),
        &url,
    ];
    let run = ringdl(&dir, &args);
    same(&dir, "f.bin", &data, &run);
}

/// A server that refuses REST cannot go on from an offset: `-c` over a partial file ends with
/// aria2c's line and exit 8, the file as it was.
#[test]
fn a_server_without_rest_cannot_resume_and_the_file_is_kept() {
    use crate::support::ftp::{FakeFtp, Misbehaviour};
    let data = content(0x7265, 500_000);
    let how = Misbehaviour {
        no_rest: true,
        ..Misbehaviour::default()
    };
    let server = FakeFtp::start("f.bin", data.clone(), how);
    let dir = TestDir::new();
    fs::write(dir.join("f.bin"), &data[..200_000]).expect("a partial file");
    let url = server.url("pub/f.bin");
    let run = ringdl(&dir, &["--no-conf", "-c", "-d", &dir.arg(), &url]);
    assert_eq!(run.code(), 8, "{run}");
    let said = run.lines_with("errorCode=8");
    assert!(
        said.len() == 1 && said[0].contains("doesn't support resuming"),
        "{run}"
    );
    assert_eq!(
        fs::read(dir.join("f.bin")).expect("the file"),
        &data[..200_000]
    );
}

/// A certificate for 127.0.0.1 and its key, made with openssl: (cert, key).
fn loopback_certificate(dir: &TestDir) -> (std::path::PathBuf, std::path::PathBuf) {
    let (cert, key) = (dir.join("cert.pem"), dir.join("key.pem"));
    let ok = std::process::Command::new("openssl")
        .args([
            "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
        ])
        .args([
            "-subj",
            "/CN=127.0.0.1",
            "-addext",
            "subjectAltName=IP:127.0.0.1",
        ])
        .arg("-keyout")
        .arg(&key)
        .arg("-out")
        .arg(&cert)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    assert!(ok, "openssl could not make a certificate");
    crate::support::ftp::open_up(dir.path());
    (cert, key)
}

/// FTPS, beyond aria2c: `ftps://` (TLS from the first byte) and `ftpes://` (`AUTH TLS`), whole,
/// split and (explicit) active, byte-exact, against vsftpd requiring TLS for the login and the
/// data and requiring each data connection to resume the control connection's TLS session.
#[test]
fn ftps_implicit_and_explicit_downloads_are_byte_exact_resuming_the_tls_session() {
    let (root, data) = root_with(5 * 1024 * 1024 + 77, 0x7466);
    let certs = TestDir::new();
    let (cert, key) = loopback_certificate(&certs);
    let ca = format!("--ca-certificate={}", cert.display());
    for (implicit, scheme) in [(true, "ftps"), (false, "ftpes")] {
        let Some(server) = FtpServer::vsftpd_tls(root.path(), implicit, &cert, &key) else {
            return;
        };
        let url = server.url("pub/f.bin").replacen("ftp", scheme, 1);
        let modes: &[&[&str]] = match implicit {
            true => &[&["-x1"], &["-x3", "-s3", "-k1M"]],
            false => &[&["-x1"], &["-x3", "-s3", "-k1M"], &["--ftp-pasv=false"]],
        };
        for extra in modes {
            let dir = TestDir::new();
            let mut args = vec!["--no-conf", &ca, "-d"];
            let d = dir.arg();
            args.push(&d);
            args.extend_from_slice(extra);
            args.push(&url);
            let run = ringdl(&dir, &args);
            assert_eq!(run.code(), 0, "{scheme} {extra:?}: {run}\n{}", server.log());
            same(&dir, "f.bin", &data, &run);
        }
        // Two files, one after the other: the second goes over the first's control connection,
        // under the same TLS session (its records read on where the first's left off).
        let users_before = users(&server);
        let dir = TestDir::new();
        fs::write(
            dir.join("list"),
            format!("{url}\n  out=one.bin\n{url}\n  out=two.bin\n"),
        )
        .expect("list");
        let d = dir.arg();
        let args = ["--no-conf", &ca, "-d", &d, "-j1", "-i", "list"];
        let run = ringdl(&dir, &args);
        same(&dir, "one.bin", &data, &run);
        same(&dir, "two.bin", &data, &run);
        assert_eq!(users(&server), users_before + 1, "{:?}", server.commands());
        // Through an HTTP proxy's tunnel (TLS always goes through one), the data connections
        // too, each under TLS resuming the control connection's session.
        let proxy = crate::support::proxy::TestProxy::http(None);
        let dir = TestDir::new();
        let at = format!("--ftp-proxy=http://127.0.0.1:{}", proxy.port());
        let d = dir.arg();
        let run = ringdl(
            &dir,
            &["--no-conf", &ca, &at, "-d", &d, "-s2", "-k1M", &url],
        );
        same(&dir, "f.bin", &data, &run);
        let targets: Vec<String> = proxy.seen().into_iter().map(|r| r.target).collect();
        let control = format!("127.0.0.1:{}", server.port());
        assert!(
            targets.contains(&control) && targets.iter().any(|t| *t != control),
            "{scheme}: not both connections through the proxy: {targets:?}\n{run}"
        );
        let commands = server.commands();
        let auth = commands.iter().any(|c| c == "AUTH TLS");
        assert_eq!(auth, !implicit, "{scheme}: {commands:?}");
        for c in ["PBSZ 0", "PROT P", "USER anonymous"] {
            assert!(
                commands.iter().any(|x| x == c),
                "{scheme}: no {c}: {commands:?}"
            );
        }
    }
}

/// How many logins `server` (vsftpd) was asked for.
fn users(server: &FtpServer) -> usize {
    server
        .commands()
        .iter()
        .filter(|c| c.starts_with("USER "))
        .count()
}

/// A certificate nobody vouches for fails the download in one line (exit 1, nothing written)
/// unless `--check-certificate=false`; `ftpes://` to a server without TLS never logs in in the
/// clear.
#[test]
fn ftps_checks_the_certificate_and_never_falls_back_to_the_clear() {
    let (root, data) = root_with(100_000, 0x6365);
    let certs = TestDir::new();
    let (cert, key) = loopback_certificate(&certs);
    let Some(server) = FtpServer::vsftpd_tls(root.path(), true, &cert, &key) else {
        return;
    };
    let url = server.url("pub/f.bin").replacen("ftp", "ftps", 1);
    let dir = TestDir::new();
    let run = ringdl(
        &dir,
        &["--no-conf", "--max-tries=1", "-d", &dir.arg(), &url],
    );
    assert_eq!(run.code(), 1, "{run}");
    assert!(run.stdout.contains("certificate"), "{run}");
    assert!(!dir.join("f.bin").exists());
    let args = [
        "--no-conf",
        "--check-certificate=false",
        "-d",
        &dir.arg(),
        &url,
    ];
    let run = ringdl(&dir, &args);
    same(&dir, "f.bin", &data, &run);

    let Some(plain) = FtpServer::vsftpd(root.path()) else {
        return;
    };
    let url = plain.url("pub/f.bin").replacen("ftp", "ftpes", 1);
    let dir = TestDir::new();
    let run = ringdl(
        &dir,
        &["--no-conf", "--max-tries=1", "-d", &dir.arg(), &url],
    );
    assert_ne!(run.code(), 0, "{run}");
    assert!(run.stdout.contains("AUTH TLS"), "{run}");
    let commands = plain.commands();
    assert!(
        !commands.iter().any(|c| c.starts_with("USER")),
        "{commands:?}"
    );
    assert!(!dir.join("f.bin").exists());
}

/// Replies sent in the clear right after the server's TLS go-ahead (`234`) would be read as if
/// they came under TLS, so that whoever is on the path could answer the commands to come (the
/// STARTTLS injection of CVE-2011-0411): refused in one line, nothing logged in.
#[test]
fn replies_injected_after_auth_tls_are_refused() {
    use std::io::{BufRead, BufReader, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    let server = std::thread::spawn(move || {
        let mut seen = Vec::new();
        let Ok((s, _)) = listener.accept() else {
            return seen;
        };
        let _ = s.set_read_timeout(Some(Duration::from_secs(5)));
        let mut w = s.try_clone().expect("clone");
        let mut r = BufReader::new(s);
        let _ = w.write_all(b"220 hi\r\n");
        let mut line = String::new();
        while r.read_line(&mut line).is_ok_and(|n| n > 0) {
            seen.push(line.trim_end().to_string());
            if line.starts_with("AUTH TLS") {
                // The go-ahead and, in the same segment, forged answers to what follows.
                let _ = w.write_all(b"234 go\r\n200 PBSZ\r\n200 PROT\r\n230 in\r\n");
            }
            line.clear();
        }
        seen
    });
    let dir = TestDir::new();
    let url = format!("ftpes://127.0.0.1:{port}/f.bin");
    let run = ringdl(
        &dir,
        &["--no-conf", "--max-tries=1", "-d", &dir.arg(), &url],
    );
    assert_eq!(run.code(), 1, "{run}");
    assert!(run.stdout.contains("after its TLS go-ahead"), "{run}");
    let seen = server.join().expect("server");
    assert_eq!(
        seen,
        vec!["AUTH TLS".to_string()],
        "sent after the go-ahead"
    );
    assert!(dir.entries().is_empty(), "{:?}", dir.entries());
}
