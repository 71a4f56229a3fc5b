//! The engine's promises beyond single downloads: reuse of connections and TLS sessions, a buffer
//! pool that fits an ordinary user's locked-memory limit, a clear message when it does not, and
//! output to a pipe whose reader has gone.

use std::io::Read;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use crate::support::server::{Route, TestServer};
use crate::support::{content, ringdl, run_program, sha256_file, sha256_hex, TestDir, RUN_TIMEOUT};

const MIB: usize = 1024 * 1024;

fn bin() -> String {
    env!("CARGO_BIN_EXE_ringdl").to_string()
}

#[test]
fn split_tls_download_resumes_sessions() {
    let server = TestServer::https();
    let data = content(71, 6 * MIB + 3);
    server.route("/r.bin", Route::bytes(data.clone()));
    let dir = TestDir::new();
    let ca = format!("--ca-certificate={}", server.ca_file().display());
    let run = ringdl(
        &dir,
        &[
            "-d",
            &dir.arg(),
            &ca,
            "-x4",
            "-s4",
            "-k1M",
            &server.url("/r.bin"),
        ],
    );
    assert_eq!(run.code(), 0, "{run}");
    assert_eq!(sha256_file(&dir.join("r.bin")), sha256_hex(&data));
    let stats = server.stats();
    assert!(stats.connections >= 2, "no split: {stats:?}");
    // The extra connections open after the first response, when a session ticket is in hand.
    assert!(
        stats.tls_resumed >= 1,
        "no TLS session was resumed: {stats:?}"
    );
}

#[test]
fn many_files_use_at_most_j_connections() {
    let server = TestServer::plain();
    let mut uris = Vec::new();
    for i in 0..40 {
        server.route(
            &format!("/s/{i}"),
            Route::bytes(content(i, 100 + i as usize * 513)),
        );
        uris.push(server.url(&format!("/s/{i}")));
    }
    let dir = TestDir::new();
    let mut args = vec!["-d".to_string(), dir.arg(), "-Z".into(), "-j3".into()];
    args.extend(uris);
    let run = ringdl(&dir, &args);
    assert_eq!(run.code(), 0, "{run}");
    for i in 0..40u64 {
        assert_eq!(
            sha256_file(&dir.join(&i.to_string())),
            sha256_hex(&content(i, 100 + i as usize * 513))
        );
    }
    let stats = server.stats();
    assert_eq!(stats.requests, 40);
    assert!(stats.connections <= 3, "{stats:?}");
}

/// A locked-memory limit too small for io_uring's registered buffers: with `--engine=uring`, one
/// line saying which limit to raise and by how much, exit 1, nothing sent; by default the run goes
/// on the portable reactor (whose buffers need no locked memory) with one notice saying why.
#[test]
fn pool_too_big_for_memlock_says_which_limit_to_raise() {
    let server = TestServer::plain();
    let data = content(1, 1000);
    server.route("/f", Route::bytes(data.clone()));
    let dir = TestDir::new();
    let under = |limit: u64, engine: &str| {
        run_program(
            Path::new("/usr/bin/prlimit"),
            &dir,
            &[
                &format!("--memlock={limit}:{limit}"),
                &bin(),
                engine,
                "--allow-overwrite=true",
                "-d",
                &dir.arg(),
                &server.url("/f"),
            ],
            RUN_TIMEOUT,
        )
    };
    let under_limit = |engine: &str| under(65536, engine);
    let run = under_limit("--engine=uring");
    assert_eq!(run.code(), 1, "{run}");
    let out = run.output();
    assert!(
        out.contains("RLIMIT_MEMLOCK") && out.contains("ulimit -l"),
        "{run}"
    );
    assert_eq!(
        out.lines().filter(|l| l.contains("ulimit -l")).count(),
        1,
        "{run}"
    );
    assert_eq!(server.stats().requests, 0);
    // The limit it names is enough.
    let kib: u64 = out
        .split("ulimit -l ")
        .nth(1)
        .and_then(|rest| rest.split(|c: char| !c.is_ascii_digit()).next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no number after 'ulimit -l': {run}"));
    let raised = under(kib * 1024, "--engine=uring");
    assert_eq!(raised.code(), 0, "under 'ulimit -l {kib}': {raised}");
    assert_eq!(sha256_file(&dir.join("f")), sha256_hex(&data));

    let run = under_limit("--engine=auto");
    assert_eq!(run.code(), 0, "{run}");
    assert_eq!(sha256_file(&dir.join("f")), sha256_hex(&data));
    let notice = run.lines_with("using the portable reactor (epoll)");
    assert_eq!(notice.len(), 1, "{run}");
    assert!(notice[0].contains("locked-memory limit (64 KiB)"), "{run}");
}

/// As an unprivileged user with the common 8 MiB locked-memory limit, a 16-connection TLS download
/// works without raising anything.
#[test]
fn works_as_ordinary_user_under_default_memlock() {
    if !nix_is_root() {
        eprintln!(
            "SKIPPED: works_as_ordinary_user_under_default_memlock: needs root to switch user"
        );
        return;
    }
    let server = TestServer::https();
    let data = content(5, 5 * MIB + 777);
    server.route("/u.bin", Route::bytes(data.clone()));
    let dir = TestDir::new();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
    let ca = dir.join("ca.pem");
    std::fs::copy(server.ca_file(), &ca).unwrap();
    std::fs::set_permissions(&ca, std::fs::Permissions::from_mode(0o644)).unwrap();
    let out_dir = dir.join("out");
    std::fs::create_dir(&out_dir).unwrap();
    std::fs::set_permissions(&out_dir, std::fs::Permissions::from_mode(0o777)).unwrap();
    let run = run_program(
        Path::new("/usr/bin/prlimit"),
        &dir,
        &[
            "--memlock=8388608:8388608",
            "/usr/bin/setpriv",
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            &bin(),
            "-d",
            out_dir.to_str().unwrap(),
            &format!("--ca-certificate={}", ca.display()),
            "-x16",
            "-s16",
            "-k1M",
            &server.url("/u.bin"),
        ],
        RUN_TIMEOUT,
    );
    assert_eq!(run.code(), 0, "{run}");
    assert_eq!(sha256_file(&out_dir.join("u.bin")), sha256_hex(&data));
    assert!(server.stats().connections > 1);
}

fn nix_is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .map(|s| {
            s.lines()
                .any(|l| l.starts_with("Uid:") && l.split_whitespace().nth(1) == Some("0"))
        })
        .unwrap_or(false)
}

/// `ringdl ... | head -1`: the reader leaves early, the download still completes, no panic.
#[test]
fn closed_stdout_does_not_stop_the_download() {
    let server = TestServer::plain();
    let data = content(9, 3 * MIB);
    server.route(
        "/p.bin",
        Route::bytes(data.clone()).throttle(256 * 1024, Duration::from_millis(300)),
    );
    let dir = TestDir::new();
    let mut child = Command::new(bin())
        .args(["-d", &dir.arg(), &server.url("/p.bin")])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = [0u8; 16];
    let mut stdout = child.stdout.take().unwrap();
    let _ = stdout.read(&mut first);
    drop(stdout);
    let status = child.wait().unwrap();
    let mut err = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    assert!(!err.contains("panicked"), "{err}");
    assert_eq!(status.code(), Some(0), "{err}");
    assert_eq!(sha256_file(&dir.join("p.bin")), sha256_hex(&data));
}

/// Pages of `path` resident in the page cache, from util-linux's `fincore`.
fn resident_bytes(path: &Path) -> u64 {
    let out = Command::new("fincore")
        .args(["--bytes", "--noheadings", "--output", "RES"])
        .arg(path)
        .output()
        .expect("run fincore");
    String::from_utf8_lossy(&out.stdout)
        .trim()
        .parse()
        .expect("fincore RES")
}

/// The written file does not stay in the page cache: with O_DIRECT, and on both page-cache paths
/// (`RINGDL_NO_DIRECT=1`: uncached writes; `=writeback`: each write written back and dropped).
#[test]
fn downloads_leave_the_page_cache_alone() {
    let server = TestServer::plain();
    let data = content(12, 24 * MIB + 5);
    server.route("/c.bin", Route::bytes(data.clone()));
    for forced in [None, Some("1"), Some("writeback")] {
        let dir = TestDir::new();
        let mut cmd = Command::new(bin());
        cmd.args(["-d", &dir.arg(), "-x4", "-k1M", &server.url("/c.bin")]);
        if let Some(v) = forced {
            cmd.env("RINGDL_NO_DIRECT", v);
        }
        let out = cmd.output().unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert_eq!(out.status.code(), Some(0), "{stdout}");
        let path = dir.join("c.bin");
        let notice = stdout.contains("O_DIRECT is not supported here");
        assert_eq!(notice, forced.is_some(), "{stdout}");
        // Measured before the file is read back for its hash, which would fill the cache.
        let resident = resident_bytes(&path);
        assert!(
            resident <= data.len() as u64 / 100,
            "{forced:?}: {resident} bytes left in the page cache"
        );
        assert_eq!(sha256_file(&path), sha256_hex(&data));
    }
}

/// Files of one write block or less are written through the page cache, uncached, with their
/// exact length: each is whole, none is left in the page cache, and no notice says O_DIRECT was
/// refused (it was not asked for). The sizes straddle the alignment and the block.
#[test]
fn small_files_are_exact_and_leave_the_page_cache_alone() {
    let server = TestServer::plain();
    let sizes = [
        0, 1, 4095, 4096, 4097, 100_000, 131_071, 131_072, 131_073, 300_001,
    ];
    let mut urls = Vec::new();
    for (i, &n) in sizes.iter().enumerate() {
        let name = format!("/s{i}.bin");
        server.route(&name, Route::bytes(content(40 + i as u64, n)));
        urls.push(server.url(&name));
    }
    let dir = TestDir::new();
    let out = Command::new(bin())
        .args(["-d", &dir.arg(), "-Z", "-j4"])
        .args(&urls)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    assert!(!stdout.contains("O_DIRECT is not supported"), "{stdout}");
    for (i, &n) in sizes.iter().enumerate() {
        let path = dir.join(&format!("s{i}.bin"));
        assert_eq!(
            std::fs::metadata(&path).unwrap().len(),
            n as u64,
            "s{i}.bin"
        );
        assert_eq!(resident_bytes(&path), 0, "s{i}.bin left in the page cache");
        assert_eq!(
            sha256_file(&path),
            sha256_hex(&content(40 + i as u64, n)),
            "s{i}.bin"
        );
    }
}

/// On a file system without `RWF_DONTCACHE` (tmpfs) an uncached write is refused with EOPNOTSUPP:
/// the file goes on with a writeback of its own after each write, and comes out whole, small and
/// large, forced off O_DIRECT or not.
#[test]
fn a_file_system_without_uncached_writes_gets_whole_files() {
    let shm = Path::new("/dev/shm");
    assert!(shm.is_dir(), "/dev/shm (tmpfs) is needed for this test");
    let server = TestServer::plain();
    let small = content(50, 70_001);
    let large = content(51, 3 * MIB + 7);
    server.route("/small.bin", Route::bytes(small.clone()));
    server.route("/large.bin", Route::bytes(large.clone()));
    for forced in [false, true] {
        let dir = tempfile::Builder::new()
            .prefix("ringdl-test-")
            .tempdir_in(shm)
            .unwrap();
        let mut cmd = Command::new(bin());
        cmd.args(["-d", &dir.path().to_string_lossy(), "-Z", "-x2", "-k1M"])
            .args([server.url("/small.bin"), server.url("/large.bin")]);
        if forced {
            cmd.env("RINGDL_NO_DIRECT", "1");
        }
        let out = cmd.output().unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert_eq!(out.status.code(), Some(0), "forced={forced}: {stdout}");
        for (name, data) in [("small.bin", &small), ("large.bin", &large)] {
            let path = dir.path().join(name);
            assert_eq!(
                sha256_file(&path),
                sha256_hex(data),
                "forced={forced}: {name}"
            );
        }
    }
}

/// Ctrl-C: the in-flight operations drain, the results show the download in progress, exit 7, and
/// the partial file stays.
#[test]
fn sigint_stops_cleanly_with_exit_7() {
    let server = TestServer::plain();
    let data = content(13, 4 * MIB);
    server.route(
        "/i.bin",
        Route::bytes(data).throttle(128 * 1024, Duration::from_millis(100)),
    );
    let dir = TestDir::new();
    let child = Command::new(bin())
        .args(["-d", &dir.arg(), "-x2", "-k1M", &server.url("/i.bin")])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(1200));
    let killed = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let out = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(7), "{stdout}");
    assert!(
        stdout.contains("Shutdown sequence commencing..."),
        "{stdout}"
    );
    assert!(stdout.contains("|INPR|"), "{stdout}");
    assert!(dir.join("i.bin").exists(), "partial file removed");
}

/// On a terminal the readout is an indicatif bar redrawn in place (`script` gives the run a pty).
#[test]
fn terminal_gets_a_progress_bar() {
    if !crate::support::require_peer("script", Path::new("/usr/bin/script").exists()) {
        return;
    }
    let server = TestServer::plain();
    let data = content(17, 2 * MIB);
    server.route(
        "/t.bin",
        Route::bytes(data.clone()).throttle(128 * 1024, Duration::from_millis(100)),
    );
    let dir = TestDir::new();
    let cmdline = format!("{} -d {} {}", bin(), dir.arg(), server.url("/t.bin"));
    let out = Command::new("/usr/bin/script")
        .args(["-qec", &cmdline, "/dev/null"])
        .env("COLUMNS", "100")
        .env("TERM", "xterm")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(
        text.contains('█') || text.contains('░'),
        "no bar drawn:\n{text}"
    );
    assert!(
        text.contains(" CN:1 ") && text.contains("%) "),
        "no readout in the bar:\n{text}"
    );
    assert!(text.contains("Download complete:"), "{text}");
    assert_eq!(sha256_file(&dir.join("t.bin")), sha256_hex(&data));
}

/// A connection that finishes its range takes another range of the same file over the same kept-alive
/// connection. Two mirrors, one slow: the fast one's connection finishes its half, then takes half of
/// what the slow one has left, with a second range request on its one connection.
#[test]
fn finished_connection_takes_another_range_on_the_same_connection() {
    let (slow, fast) = (TestServer::plain(), TestServer::plain());
    let data = content(23, 16 * MIB + 1);
    slow.route(
        "/k.bin",
        Route::bytes(data.clone()).throttle(64 * 1024, Duration::from_millis(20)),
    );
    fast.route("/k.bin", Route::bytes(data.clone()));
    let dir = TestDir::new();
    let run = ringdl(
        &dir,
        &[
            "-d",
            &dir.arg(),
            "-x1",
            "-s2",
            "-k1M",
            &slow.url("/k.bin"),
            &fast.url("/k.bin"),
        ],
    );
    assert_eq!(run.code(), 0, "{run}");
    assert_eq!(sha256_file(&dir.join("k.bin")), sha256_hex(&data));
    let ranged = fast
        .requests_to("/k.bin")
        .iter()
        .filter(|r| r.range().is_some())
        .count();
    assert_eq!(fast.stats().connections, 1, "{:?}", fast.stats());
    assert!(
        ranged >= 2,
        "the fast mirror's connection took {ranged} range(s)"
    );
}
