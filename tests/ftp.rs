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

fn same(dir: &TestDir, name: &str, data: &[u8], run: &crate::support::Run) {
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
