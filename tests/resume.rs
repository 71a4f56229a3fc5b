//! Downloads that survive: `.aria2` control files written while downloading and on every stop,
//! resumed by ringdl and by aria2c alike, `-c` without a control file, and the cases where resuming
//! is impossible or the control file is bad.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::support::server::{Fault, Route, TestServer, When};
use crate::support::{
    aria2_control_file, content, have_program, require_peer, ringdl, sha256_file, sha256_hex,
    TestDir,
};

const MIB: usize = 1 << 20;

fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_ringdl")
}

/// Runs `program args...` and stops it with `signal` after `after`; returns its exit code.
fn run_and_signal(program: &str, args: &[String], signal: &str, after: Duration) -> Option<i32> {
    let mut child = Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn");
    std::thread::sleep(after);
    let _ = Command::new("kill")
        .args([signal, &child.id().to_string()])
        .status();
    child.wait().expect("wait").code()
}

fn slow_route(data: &[u8]) -> Route {
    // About 6 MiB/s per connection: slow enough to stop part-way.
    Route::bytes(data.to_vec()).throttle(64 * 1024, Duration::from_millis(10))
}

#[test]
fn interrupted_download_leaves_a_control_file_and_resumes() {
    let server = TestServer::plain();
    let data = content(61, 12 * MIB + 4321);
    server.route("/r.bin", slow_route(&data));
    let dir = TestDir::new();
    let args = vec![
        "--no-conf".to_string(),
        "-d".into(),
        dir.arg(),
        "-x2".into(),
        "-k1M".into(),
        server.url("/r.bin"),
    ];
    let code = run_and_signal(bin(), &args, "-INT", Duration::from_millis(300));
    assert_eq!(code, Some(7));
    let ctl = dir.join("r.bin.aria2");
    assert!(
        ctl.exists(),
        "no control file after Ctrl-C: {:?}",
        dir.entries()
    );
    let first_leg = server.requests_to("/r.bin").len();
    // The second run finds the control file and asks only for what is missing.
    let run = ringdl(&dir, &args);
    assert_eq!(run.code(), 0, "{run}");
    assert_eq!(sha256_file(&dir.join("r.bin")), sha256_hex(&data));
    assert!(!ctl.exists(), "control file left after completion");
    let later = &server.requests_to("/r.bin")[first_leg..];
    assert!(!later.is_empty());
    assert!(
        later.iter().all(|r| r.range().is_some_and(|(a, _)| a > 0)),
        "the resumed run fetched from the start again: {:?}",
        later.iter().map(|r| r.range()).collect::<Vec<_>>()
    );
}

/// A stop over a slow link keeps what the write block holds. Plain bodies are received straight
/// into their write block, so a receive waiting for more holds the block and every byte received
/// into it before; the stop used to drop the block with the receive: after a second at 40 KB/s,
/// nothing was claimed and the resumed run fetched from 0 (and `--lowest-speed-limit` left an
/// empty file). The receive is now cancelled and its block comes back to be written.
#[test]
fn a_stop_over_a_slow_link_keeps_what_the_block_holds() {
    let server = TestServer::plain();
    let data = content(68, 600_000);
    server.route(
        "/s.bin",
        Route::bytes(data.clone()).throttle(4096, Duration::from_millis(100)),
    );
    let dir = TestDir::new();
    let args = vec![
        "--no-conf".to_string(),
        "-d".into(),
        dir.arg(),
        server.url("/s.bin"),
    ];
    let code = run_and_signal(bin(), &args, "-INT", Duration::from_millis(1500));
    assert_eq!(code, Some(7));
    let ctl = std::fs::read(dir.join("s.bin.aria2")).expect("control file");
    let cf = ringdl::store::control::ControlFile::decode(&ctl).expect("valid control file");
    let file = std::fs::read(dir.join("s.bin")).unwrap();
    let claimed = cf.done_bytes();
    assert!(
        claimed >= 16_384,
        "claims {claimed} bytes after 1.5 s at 40 KB/s"
    );
    for r in cf.done_ranges() {
        let (a, b) = (r.start as usize, r.end as usize);
        assert!(
            b <= file.len() && file[a..b] == data[a..b],
            "claims {r:?} not on disk"
        );
    }
    let first_leg = server.requests_to("/s.bin").len();
    server.route("/s.bin", Route::bytes(data.clone()));
    let run = ringdl(&dir, &args);
    assert_eq!(run.code(), 0, "{run}");
    assert_eq!(sha256_file(&dir.join("s.bin")), sha256_hex(&data));
    let later = &server.requests_to("/s.bin")[first_leg..];
    assert!(
        later.iter().all(|r| r.range().is_some_and(|(a, _)| a > 0)),
        "fetched from the start again: {:?}",
        later.iter().map(|r| r.range()).collect::<Vec<_>>()
    );
}

/// A run stopped with Ctrl-C and `--save-session` writes both the download it stopped and the one
/// of its list that never started, so `-i` of the session finishes them.
#[test]
fn a_stopped_run_saves_what_it_stopped_and_what_never_started() {
    let server = TestServer::plain();
    let data = content(69, 3 * MIB);
    server.route("/a.bin", slow_route(&data));
    server.route("/b.bin", Route::bytes(data.clone()));
    let dir = TestDir::new();
    let list = dir.join("list.txt");
    std::fs::write(
        &list,
        format!("{}\n{}\n", server.url("/a.bin"), server.url("/b.bin")),
    )
    .unwrap();
    let session = dir.join("s.txt");
    let args: Vec<String> = vec![
        "--no-conf".into(),
        "-j1".into(),
        "-d".into(),
        dir.arg(),
        "-i".into(),
        list.display().to_string(),
        format!("--save-session={}", session.display()),
        "--max-download-limit=1M".into(),
    ];
    let code = run_and_signal(bin(), &args, "-INT", Duration::from_millis(400));
    assert_eq!(code, Some(7));
    let text = std::fs::read_to_string(&session).expect("session");
    for name in ["/a.bin", "/b.bin"] {
        assert!(
            text.contains(&format!("{}\t\n", server.url(name))),
            "{name}: {text}"
        );
    }
    assert!(text.contains(" max-download-limit=1M"), "{text}");
    let run = ringdl(
        &dir,
        &[
            "--no-conf",
            "-d",
            &dir.arg(),
            "-i",
            &session.display().to_string(),
        ],
    );
    assert_eq!(run.code(), 0, "{run}");
    assert_eq!(sha256_file(&dir.join("a.bin")), sha256_hex(&data));
    assert_eq!(sha256_file(&dir.join("b.bin")), sha256_hex(&data));
}

/// The control file cannot be saved (a directory stands where it goes): whatever moment a kill
/// comes, the split, preallocated download leaves only bytes `-c` may take for data, a prefix of
/// the file without a gap, and run to its end it fails (exit 17) leaving such a prefix. Allocating
/// after the failed save, or writing the other connections' blocks, left a file of full length
/// with holes, which `-c` then took for complete. (aria2c finishes such a download; see the
/// simulation test of the same name for why ringdl does not.)
#[test]
fn a_control_file_that_cannot_be_saved_leaves_only_a_gapless_prefix() {
    let server = TestServer::plain();
    let data = content(90, 8 * MIB + 123);
    server.route("/g.bin", slow_route(&data));
    let dir = TestDir::new();
    std::fs::create_dir_all(dir.join("g.bin.aria2").join("in-the-way")).unwrap();
    let file = dir.join("g.bin");
    let args: Vec<String> = [
        "--no-conf",
        "-x4",
        "-s4",
        "-k1M",
        "--file-allocation=prealloc",
    ]
    .iter()
    .map(|a| a.to_string())
    .chain(["-d".into(), dir.arg(), server.url("/g.bin")])
    .collect();
    let check = |what: &str| {
        let got = std::fs::read(&file).unwrap_or_default();
        assert!(
            got.len() <= data.len() && got[..] == data[..got.len()],
            "{what}: {} bytes left, not a prefix of the file",
            got.len()
        );
    };
    for after in [150, 400, 800] {
        let _ = std::fs::remove_file(&file);
        run_and_signal(bin(), &args, "-KILL", Duration::from_millis(after));
        check(&format!("killed after {after} ms"));
    }
    // Run to its end: the failed save and the refused write said, a prefix kept.
    let _ = std::fs::remove_file(&file);
    server.route("/g.bin", Route::bytes(data.clone()));
    let run = ringdl(&dir, &args);
    assert_eq!(run.code(), 17, "{run}");
    assert!(
        run.output().contains("Failed to save the control file")
            && run.output().contains("would leave a gap"),
        "{run}"
    );
    check("run to its end");
    // Killed part-way, `-c` goes on from what is there and ends with the exact file.
    let _ = std::fs::remove_file(&file);
    server.route("/g.bin", slow_route(&data));
    run_and_signal(bin(), &args, "-KILL", Duration::from_millis(500));
    check("killed after 500 ms");
    server.route("/g.bin", Route::bytes(data.clone()));
    std::fs::remove_dir_all(dir.join("g.bin.aria2")).unwrap();
    let run = ringdl(
        &dir,
        &[
            "--no-conf",
            "-c",
            "-x4",
            "-d",
            &dir.arg(),
            &server.url("/g.bin"),
        ],
    );
    assert_eq!(run.code(), 0, "{run}");
    assert_eq!(sha256_file(&file), sha256_hex(&data));
}

#[test]
fn continue_without_control_file_asks_for_the_rest() {
    let server = TestServer::plain();
    let data = content(62, 1_000_000);
    server.route("/c.bin", Route::bytes(data.clone()));
    let dir = TestDir::new();
    std::fs::write(dir.join("c.bin"), &data[..400_000]).unwrap();
    let run = ringdl(
        &dir,
        &["--no-conf", "-c", "-d", &dir.arg(), &server.url("/c.bin")],
    );
    assert_eq!(run.code(), 0, "{run}");
    assert_eq!(sha256_file(&dir.join("c.bin")), sha256_hex(&data));
    let first = &server.requests_to("/c.bin")[0];
    // 400 000 rounded down to 16 KiB, as aria2 does.
    assert_eq!(first.range(), Some((393_216, None)));
}

/// `-c` over a file longer than the server's: that file is not a part of this one, so it is left
/// as it is and the download goes where it would without `-c` (aria2c's rule): renamed, over it
/// with `--allow-overwrite`, or refused (exit 13). It used to be cut to the server's length with
/// the server's tail after the user's bytes, and reported complete.
#[test]
fn continue_over_a_longer_file_leaves_it_alone() {
    let server = TestServer::plain();
    let data = content(64, 100_000);
    server.route("/l.bin", Route::bytes(data.clone()));
    server.route("/ln.bin", Route::bytes(data.clone()).no_ranges());
    let mine = content(65, 100_500);
    for (path, extra, code, kept, renamed) in [
        ("/l.bin", None, 0, true, true),
        ("/ln.bin", None, 0, true, true),
        ("/l.bin", Some("--allow-overwrite=true"), 0, false, false),
        (
            "/l.bin",
            Some("--auto-file-renaming=false"),
            13,
            true,
            false,
        ),
    ] {
        let dir = TestDir::new();
        let name = &path[1..];
        std::fs::write(dir.join(name), &mine).unwrap();
        let mut args = vec!["--no-conf", "-c"];
        args.extend(extra);
        let url = server.url(path);
        let d = dir.arg();
        args.extend(["-d", &d, &url]);
        let run = ringdl(&dir, &args);
        assert_eq!(run.code(), code, "{args:?}: {run}");
        let now = std::fs::read(dir.join(name)).unwrap();
        if kept {
            assert!(now == mine, "{args:?}: the existing file changed: {run}");
        } else {
            assert!(
                now == data,
                "{args:?}: not overwritten with the download: {run}"
            );
        }
        let other = dir.join(&name.replace(".bin", ".1.bin"));
        assert_eq!(other.exists(), renamed, "{args:?}: {:?}", dir.entries());
        if renamed {
            assert_eq!(sha256_file(&other), sha256_hex(&data), "{args:?}");
            assert!(
                run.output().contains("File already exists. Renamed to"),
                "{run}"
            );
        }
        assert!(
            !dir.join(&format!("{name}.aria2")).exists(),
            "{:?}",
            dir.entries()
        );
    }
}

/// `-c` over a file that is already whole is complete whatever the server does with ranges:
/// aria2c goes by the length of its first answer. Against a server that answers every request
/// with the whole file, ringdl used to fail with exit 8 and leave a control file claiming less
/// than the file held, which the next run without `-c` then cut the file to.
#[test]
fn continue_over_a_whole_file_is_complete_with_or_without_ranges() {
    let server = TestServer::plain();
    let data = content(66, 100_000);
    server.route("/w.bin", Route::bytes(data.clone()));
    server.route("/wn.bin", Route::bytes(data.clone()).no_ranges());
    for path in ["/w.bin", "/wn.bin"] {
        let dir = TestDir::new();
        let name = &path[1..];
        std::fs::write(dir.join(name), &data).unwrap();
        let url = server.url(path);
        let run = ringdl(&dir, &["--no-conf", "-c", "-d", &dir.arg(), &url]);
        assert_eq!(run.code(), 0, "{path}: {run}");
        assert!(
            run.output().contains("Download has already completed"),
            "{path}: {run}"
        );
        assert!(
            std::fs::read(dir.join(name)).unwrap() == data,
            "{path}: file changed"
        );
        assert_eq!(dir.entries(), vec![name.to_string()], "{path}");
    }
}

/// `--dry-run` reads nothing on disk for resuming, so it writes, cuts and claims nothing either: a
/// partial file with or without its control file is left byte for byte (aria2c's rule). Before,
/// it resumed for real: `-c --dry-run` cut a 100 000-byte partial file to its last whole block,
/// wrote a control file and failed with exit 1.
#[test]
fn dry_run_leaves_a_partial_download_as_it_is() {
    let norange = TestServer::plain();
    let server = TestServer::plain();
    let data = content(67, 300_000);
    norange.route("/d.bin", Route::bytes(data.clone()).no_ranges());
    server.route("/d.bin", Route::bytes(data.clone()));
    let dir = TestDir::new();
    std::fs::write(dir.join("d.bin"), &data[..100_000]).unwrap();
    // A partial file with a control file: -c against a server without ranges leaves both.
    let run = ringdl(
        &dir,
        &["--no-conf", "-c", "-d", &dir.arg(), &norange.url("/d.bin")],
    );
    assert_eq!(run.code(), 8, "{run}");
    let ctl = dir.join("d.bin.aria2");
    let before = (
        std::fs::read(dir.join("d.bin")).unwrap(),
        std::fs::read(&ctl).unwrap(),
    );
    for args in [&["--dry-run"][..], &["-c", "--dry-run"]] {
        let mut all = vec!["--no-conf"];
        all.extend(args);
        let (d, url) = (dir.arg(), server.url("/d.bin"));
        all.extend(["-d", &d, &url]);
        let run = ringdl(&dir, &all);
        assert_eq!(run.code(), 0, "{run}");
        let after = (
            std::fs::read(dir.join("d.bin")).unwrap(),
            std::fs::read(&ctl).unwrap(),
        );
        assert!(
            after == before,
            "{all:?} changed the partial download: {run}"
        );
    }
    // Without the control file, -c --dry-run leaves the partial file and makes none.
    std::fs::remove_file(&ctl).unwrap();
    let run = ringdl(
        &dir,
        &[
            "--no-conf",
            "-c",
            "--dry-run",
            "-d",
            &dir.arg(),
            &server.url("/d.bin"),
        ],
    );
    assert_eq!(run.code(), 0, "{run}");
    assert!(
        std::fs::read(dir.join("d.bin")).unwrap() == data[..100_000],
        "{run}"
    );
    assert_eq!(dir.entries(), vec!["d.bin".to_string()], "{run}");
}

#[test]
fn continue_against_a_server_without_ranges_exits_8_or_restarts() {
    let server = TestServer::plain();
    let data = content(63, 300_000);
    server.route("/n.bin", Route::bytes(data.clone()).no_ranges());
    let dir = TestDir::new();
    std::fs::write(dir.join("n.bin"), &data[..100_000]).unwrap();
    let run = ringdl(
        &dir,
        &["--no-conf", "-c", "-d", &dir.arg(), &server.url("/n.bin")],
    );
    assert_eq!(run.code(), 8, "{run}");
    assert!(run.output().contains("Invalid range header"), "{run}");
    assert_eq!(
        std::fs::read(dir.join("n.bin")).unwrap(),
        &data[..100_000],
        "partial file changed"
    );
    assert!(dir.join("n.bin.aria2").exists(), "{:?}", dir.entries());
    let run = ringdl(
        &dir,
        &[
            "--no-conf",
            "-c",
            "--always-resume=false",
            "-d",
            &dir.arg(),
            &server.url("/n.bin"),
        ],
    );
    assert_eq!(run.code(), 0, "{run}");
    assert!(
        run.stdout
            .contains("Failed to resume download. Download from scratch."),
        "{run}"
    );
    assert_eq!(sha256_file(&dir.join("n.bin")), sha256_hex(&data));
}

#[test]
fn control_file_without_its_data_file_is_removed() {
    let server = TestServer::plain();
    let data = content(64, 50_000);
    server.route("/d.bin", Route::bytes(data.clone()));
    let dir = TestDir::new();
    // A valid control file (written by an interrupted run) whose data file was deleted since.
    let args = vec![
        "--no-conf".to_string(),
        "-d".into(),
        dir.arg(),
        server.url("/d.bin"),
    ];
    let mut slow = TestServer::plain();
    let big = content(65, 4 * MIB);
    slow.route("/d.bin", slow_route(&big));
    let slow_args = vec![
        "--no-conf".to_string(),
        "-d".into(),
        dir.arg(),
        slow.url("/d.bin"),
    ];
    assert_eq!(
        run_and_signal(bin(), &slow_args, "-INT", Duration::from_millis(300)),
        Some(7)
    );
    drop(std::mem::replace(&mut slow, TestServer::plain()));
    assert!(dir.join("d.bin.aria2").exists());
    std::fs::remove_file(dir.join("d.bin")).unwrap();
    let run = ringdl(&dir, &args);
    assert_eq!(run.code(), 0, "{run}");
    assert!(
        run.stdout.contains("Removed the defunct control file"),
        "{run}"
    );
    assert_eq!(sha256_file(&dir.join("d.bin")), sha256_hex(&data));
}

#[test]
fn corrupt_control_file_is_refused_and_nothing_is_touched() {
    let server = TestServer::plain();
    server.route("/k.bin", Route::bytes(content(66, 100_000)));
    let dir = TestDir::new();
    std::fs::write(dir.join("k.bin"), b"partial").unwrap();
    std::fs::write(dir.join("k.bin.aria2"), b"\x00\x01\x00\x00\x00\x00garbage").unwrap();
    let run = ringdl(
        &dir,
        &["--no-conf", "-d", &dir.arg(), &server.url("/k.bin")],
    );
    assert_eq!(run.code(), 1, "{run}");
    assert!(
        run.output().contains("Failed to load the control file"),
        "{run}"
    );
    assert_eq!(std::fs::read(dir.join("k.bin")).unwrap(), b"partial");
    assert_eq!(server.stats().requests, 0);
}

/// Killed (SIGKILL: no chance to save) and interrupted (SIGINT) at random moments, resumed each time:
/// the result is byte-exact. With aria2c present, aria2c does every other leg on the same files.
fn kill_and_resume(with_aria2c: bool) {
    let server = TestServer::plain();
    let data = content(67, 256 * MIB + 777);
    // At most ~6 MiB/s per connection, -x4: twenty legs of 0.2–0.6 s cannot finish 256 MiB.
    server.route(
        "/k.bin",
        Route::bytes(data.clone()).throttle(64 * 1024, Duration::from_millis(10)),
    );
    let dir = TestDir::new();
    let mut seed = 0x9e37_79b9_7f4a_7c15_u64;
    let mut rand = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    for leg in 0..20 {
        let aria2 = with_aria2c && leg % 2 == 1;
        let program = if aria2 { "aria2c" } else { bin() };
        let mut args = vec![
            "--no-conf".to_string(),
            "-c".into(),
            "-x4".into(),
            "-k1M".into(),
            "--auto-save-interval=1".into(),
            "-d".into(),
            dir.arg(),
            server.url("/k.bin"),
        ];
        if aria2 {
            args.push("--console-log-level=error".into());
        }
        let signal = if leg < 10 { "-KILL" } else { "-INT" };
        let after = Duration::from_millis(200 + rand() % 400);
        run_and_signal(program, &args, signal, after);
    }
    assert!(
        dir.join("k.bin.aria2").exists(),
        "the legs finished the download: nothing was interrupted"
    );
    // The last leg runs to the end, at full speed.
    server.route("/k.bin", Route::bytes(data.clone()));
    let run = ringdl(
        &dir,
        &[
            "--no-conf",
            "-c",
            "-x4",
            "-k1M",
            "-d",
            &dir.arg(),
            &server.url("/k.bin"),
        ],
    );
    assert_eq!(run.code(), 0, "{run}");
    assert_eq!(
        sha256_file(&dir.join("k.bin")),
        sha256_hex(&data),
        "final file differs"
    );
    assert!(!dir.join("k.bin.aria2").exists());
    let _ = Path::new("");
}

#[test]
fn killed_and_interrupted_twenty_times_then_exact() {
    kill_and_resume(false);
}

#[test]
fn killed_and_interrupted_with_aria2c_doing_every_other_leg() {
    if !require_peer("aria2c", have_program("aria2c")) {
        return;
    }
    kill_and_resume(true);
}

#[test]
fn range_fault_on_resume_keeps_the_file_resumable() {
    let server = TestServer::plain();
    let data = content(68, 3 * MIB);
    server.route(
        "/f.bin",
        Route::bytes(data.clone()).fault(Fault::ResetAfter(200_000), When::SegmentRequests),
    );
    let dir = TestDir::new();
    std::fs::write(dir.join("f.bin"), &data[..MIB]).unwrap();
    let run = ringdl(
        &dir,
        &[
            "--no-conf",
            "-c",
            "-m2",
            "-d",
            &dir.arg(),
            &server.url("/f.bin"),
        ],
    );
    assert_ne!(run.code(), 0, "{run}");
    assert!(dir.join("f.bin.aria2").exists(), "{:?}", dir.entries());
    // Healed server: the next run completes from the control file.
    server.route("/f.bin", Route::bytes(data.clone()));
    let run = ringdl(
        &dir,
        &["--no-conf", "-d", &dir.arg(), &server.url("/f.bin")],
    );
    assert_eq!(run.code(), 0, "{run}");
    assert_eq!(sha256_file(&dir.join("f.bin")), sha256_hex(&data));
}

fn digest_hex(kind: &str, data: &[u8]) -> String {
    use sha2::Digest;
    let bytes = match kind {
        "sha-256" => sha2::Sha256::digest(data).to_vec(),
        "sha-512" => sha2::Sha512::digest(data).to_vec(),
        _ => unreachable!(),
    };
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[test]
fn checksum_verified_in_order_and_read_back_out_of_order() {
    let server = TestServer::plain();
    let data = content(69, 5 * MIB + 99);
    server.route("/s.bin", Route::bytes(data.clone()));
    for (kind, split) in [("sha-256", "-x1"), ("sha-512", "-x8")] {
        let dir = TestDir::new();
        let sum = format!("--checksum={kind}={}", digest_hex(kind, &data));
        let run = ringdl(
            &dir,
            &[
                "--no-conf",
                split,
                "-k1M",
                &sum,
                "-d",
                &dir.arg(),
                &server.url("/s.bin"),
            ],
        );
        assert_eq!(run.code(), 0, "{run}");
        assert!(
            run.stdout
                .contains("Verification finished successfully. file="),
            "{run}"
        );
        assert_eq!(sha256_file(&dir.join("s.bin")), sha256_hex(&data));
    }
}

#[test]
fn checksum_mismatch_exits_32_and_keeps_the_file() {
    let server = TestServer::plain();
    let data = content(70, 300_000);
    server.route("/m.bin", Route::bytes(data.clone()));
    let dir = TestDir::new();
    let wrong = format!("--checksum=sha-256={}", "0".repeat(64));
    let run = ringdl(
        &dir,
        &["--no-conf", &wrong, "-d", &dir.arg(), &server.url("/m.bin")],
    );
    assert_eq!(run.code(), 32, "{run}");
    assert!(
        run.stdout.contains("Checksum error detected. file="),
        "{run}"
    );
    assert!(dir.join("m.bin").exists());
    // A failed download, not one in progress: aria2c's row says ERR (ringdl's said INPR, the
    // bytes it stopped claiming taken for bytes lost to a stop).
    assert!(run.stdout.contains("|ERR |"), "{run}");
    assert!(run.stdout.contains("(ERR):error occurred."), "{run}");
    assert!(!run.stdout.contains("INPR"), "{run}");
    // The control file claims nothing, so a rerun fetches everything again; the kind of digest
    // may be written in any case, as aria2c takes it.
    let right = format!("--checksum=SHA-256={}", digest_hex("sha-256", &data));
    let run = ringdl(
        &dir,
        &["--no-conf", &right, "-d", &dir.arg(), &server.url("/m.bin")],
    );
    assert_eq!(run.code(), 0, "{run}");
    assert_eq!(sha256_file(&dir.join("m.bin")), sha256_hex(&data));
}

#[test]
fn checksum_after_resume_reads_the_earlier_bytes_back() {
    let server = TestServer::plain();
    let data = content(71, 2 * MIB + 5);
    server.route("/v.bin", Route::bytes(data.clone()));
    let dir = TestDir::new();
    std::fs::write(dir.join("v.bin"), &data[..MIB]).unwrap();
    let sum = format!("--checksum=sha-256={}", digest_hex("sha-256", &data));
    let run = ringdl(
        &dir,
        &[
            "--no-conf",
            "-c",
            &sum,
            "-d",
            &dir.arg(),
            &server.url("/v.bin"),
        ],
    );
    assert_eq!(run.code(), 0, "{run}");
    assert!(
        run.stdout.contains("Verification finished successfully"),
        "{run}"
    );
    // A partial file with wrong bytes fails the check instead of passing unseen.
    std::fs::write(dir.join("v.bin"), vec![0u8; MIB]).unwrap();
    let run = ringdl(
        &dir,
        &[
            "--no-conf",
            "-c",
            &sum,
            "-d",
            &dir.arg(),
            &server.url("/v.bin"),
        ],
    );
    assert_eq!(run.code(), 32, "{run}");
}

/// `--dry-run` asks with HEAD and writes nothing; `-R` dates the file like the server's;
/// `--conditional-get` leaves an up-to-date file alone (nginx answers 304 to an exact date).
#[test]
fn dry_run_remote_time_and_conditional_get_against_nginx() {
    let www = TestDir::new();
    let data = content(72, 123_457);
    std::fs::write(www.join("t.bin"), &data).unwrap();
    let Some(nginx) = crate::support::nginx::Nginx::start(www.path()) else {
        return;
    };
    let url = nginx.http_url("/t.bin");
    let dir = TestDir::new();
    let run = ringdl(&dir, &["--no-conf", "--dry-run", "-d", &dir.arg(), &url]);
    assert_eq!(run.code(), 0, "{run}");
    assert!(run.stdout.contains("Download complete:"), "{run}");
    assert!(
        !dir.join("t.bin").exists(),
        "--dry-run wrote {:?}",
        dir.entries()
    );
    assert_eq!(
        nginx.requests().last().map(|r| r.method.clone()).as_deref(),
        Some("HEAD")
    );

    let run = ringdl(&dir, &["--no-conf", "-R", "-d", &dir.arg(), &url]);
    assert_eq!(run.code(), 0, "{run}");
    let theirs = std::fs::metadata(www.join("t.bin"))
        .unwrap()
        .modified()
        .unwrap();
    let ours = std::fs::metadata(dir.join("t.bin"))
        .unwrap()
        .modified()
        .unwrap();
    let secs =
        |t: std::time::SystemTime| t.duration_since(std::time::UNIX_EPOCH).unwrap().as_secs();
    assert_eq!(
        secs(ours),
        secs(theirs),
        "-R did not take the server's time"
    );

    let before = nginx.requests().len();
    let run = ringdl(
        &dir,
        &[
            "--no-conf",
            "--conditional-get",
            "--allow-overwrite=true",
            "-d",
            &dir.arg(),
            &url,
        ],
    );
    assert_eq!(run.code(), 0, "{run}");
    let after = nginx.requests();
    assert_eq!(after.len(), before + 1);
    assert_eq!(after[before].status, 304, "{:?}", after[before]);
    assert_eq!(sha256_file(&dir.join("t.bin")), sha256_hex(&data));
}

#[test]
fn check_integrity_verifies_an_existing_file_and_refetches_a_bad_one() {
    let server = TestServer::plain();
    let data = content(73, MIB + 17);
    server.route("/i.bin", Route::bytes(data.clone()));
    let dir = TestDir::new();
    std::fs::write(dir.join("i.bin"), &data).unwrap();
    let sum = format!("--checksum=sha-256={}", digest_hex("sha-256", &data));
    let run = ringdl(
        &dir,
        &[
            "--no-conf",
            "-V",
            &sum,
            "-d",
            &dir.arg(),
            &server.url("/i.bin"),
        ],
    );
    assert_eq!(run.code(), 0, "{run}");
    assert!(
        run.stdout.contains("Verification finished successfully"),
        "{run}"
    );
    // The server is asked only for what follows the file (its length must be the server's, as
    // aria2c checks before it verifies): nothing of the file is fetched.
    let asked = server.requests_to("/i.bin");
    assert_eq!(asked.len(), 1, "a good file was fetched again");
    assert_eq!(asked[0].range(), Some((data.len() as u64, None)));
    let mut bad = data.clone();
    bad[1000] ^= 0xff;
    std::fs::write(dir.join("i.bin"), &bad).unwrap();
    let run = ringdl(
        &dir,
        &[
            "--no-conf",
            "-V",
            &sum,
            "-d",
            &dir.arg(),
            &server.url("/i.bin"),
        ],
    );
    assert_eq!(run.code(), 0, "{run}");
    assert!(run.stdout.contains("Checksum error detected"), "{run}");
    assert_eq!(sha256_file(&dir.join("i.bin")), sha256_hex(&data));
    // The length question, then the whole file.
    assert_eq!(server.stats().requests, 3);
}

#[test]
fn max_file_not_found_retries_404s_then_exits_4() {
    let server = TestServer::plain();
    let dir = TestDir::new();
    let run = ringdl(
        &dir,
        &[
            "--no-conf",
            "--max-file-not-found=3",
            "-d",
            &dir.arg(),
            &server.url("/missing.bin"),
        ],
    );
    assert_eq!(run.code(), 4, "{run}");
    assert_eq!(server.requests_to("/missing.bin").len(), 3);
}

/// aria2's 10 s grace, then a download at or below --lowest-speed-limit fails with exit 5.
#[test]
fn lowest_speed_limit_ends_a_crawling_download_with_exit_5() {
    let server = TestServer::plain();
    let data = content(74, 4 * MIB);
    server.route(
        "/slow.bin",
        Route::bytes(data).throttle(16 * 1024, Duration::from_millis(100)),
    );
    let dir = TestDir::new();
    let run = ringdl(
        &dir,
        &[
            "--no-conf",
            "--lowest-speed-limit=1M",
            "-d",
            &dir.arg(),
            &server.url("/slow.bin"),
        ],
    );
    assert_eq!(run.code(), 5, "{run}");
    assert!(run.stdout.contains("Too slow Downloading speed"), "{run}");
    assert!(
        run.elapsed >= Duration::from_secs(10),
        "failed before the grace period"
    );
    assert!(
        dir.join("slow.bin.aria2").exists(),
        "not resumable: {:?}",
        dir.entries()
    );
}

/// A second Ctrl-C leaves at once; the control file still claims only bytes on disk.
#[test]
fn second_sigint_exits_at_once_with_true_claims() {
    let server = TestServer::plain();
    let data = content(75, 64 * MIB);
    server.route("/two.bin", slow_route(&data));
    let dir = TestDir::new();
    let mut child = Command::new(bin())
        .args([
            "--no-conf",
            "-x4",
            "-k1M",
            "--auto-save-interval=1",
            "-d",
            &dir.arg(),
            &server.url("/two.bin"),
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(1500));
    let pid = child.id().to_string();
    let _ = Command::new("kill").args(["-INT", &pid]).status();
    let _ = Command::new("kill").args(["-INT", &pid]).status();
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(7));
    let ctl = std::fs::read(dir.join("two.bin.aria2")).expect("control file");
    let cf = ringdl::store::control::ControlFile::decode(&ctl).expect("valid control file");
    let file = std::fs::read(dir.join("two.bin")).unwrap();
    for r in cf.done_ranges() {
        let (a, b) = (r.start as usize, r.end as usize);
        assert!(b <= file.len(), "claims {r:?} beyond the file");
        assert!(file[a..b] == data[a..b], "claims {r:?} that is not on disk");
    }
}

/// A control file is written from the first response for a file larger than one write block (as
/// aria2c writes its own), but one whose whole body fits a block (its only write is its last, so
/// the file stays empty until the end) puts it off to the next tick, within about a second: a small
/// file that finishes sooner never writes one. Stalled, both have one; a Ctrl-C keeps it and the
/// next run finishes from it.
#[test]
fn one_block_control_file_waits_for_a_tick() {
    let server = TestServer::plain();
    // (name, length, whether its control file comes with the first response)
    for (name, len, at_once) in [("small.bin", 100 * 1024, false), ("big.bin", 3 * MIB, true)] {
        let data = content(76 + len as u64, len);
        let route =
            Route::bytes(data.clone()).fault(Fault::StallAfter(len as u64 / 2), When::Request(1));
        server.route(&format!("/{name}"), route);
        let dir = TestDir::new();
        let url = server.url(&format!("/{name}"));
        let args = ["--no-conf", "-x1", "-d", &dir.arg(), &url];
        let spawned = Instant::now();
        let mut child = Command::new(bin())
            .args(args)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn ringdl");
        let file = dir.join(name);
        let ctl = dir.join(&format!("{name}.aria2"));
        let wait_for = |p: &Path| {
            while !p.exists() && spawned.elapsed() < Duration::from_secs(20) {
                std::thread::sleep(Duration::from_millis(5));
            }
            p.exists()
        };
        assert!(wait_for(&file), "{name}: the file was not created");
        let early = spawned.elapsed();
        let ctl_early = ctl.exists();
        assert!(
            wait_for(&ctl),
            "{name}: no control file while stalled: {:?}",
            dir.entries()
        );
        // Seen later than this, the first tick may have come and the check would prove nothing.
        if !at_once && early < Duration::from_millis(600) {
            assert!(
                !ctl_early,
                "{name}: control file at once for a one-block body"
            );
        }
        let _ = Command::new("kill")
            .args(["-INT", &child.id().to_string()])
            .status();
        assert_eq!(child.wait().expect("wait").code(), Some(7), "{name}");
        assert!(
            ctl.exists(),
            "{name}: no control file after Ctrl-C: {:?}",
            dir.entries()
        );
        let run = ringdl(&dir, &args);
        assert_eq!(run.code(), 0, "{name}\n{run}");
        assert_eq!(sha256_file(&file), sha256_hex(&data), "{name}");
        assert!(!ctl.exists(), "{name}: control file left after completion");
    }
}

/// Resuming from a control file with a mirror that cannot resume (it answers a Range request
/// with the whole file) listed first: with no other mirror, exit 8 and the partial file and its
/// control file stay; with a good mirror after it, that mirror is dropped with one error line and
/// the download goes on from the good one, asking only for what is missing (aria2c does both).
#[test]
fn resume_skips_mirrors_that_cannot_resume() {
    let server = TestServer::plain();
    let data = content(81, 12 * MIB + 4321);
    server.route("/m.bin", slow_route(&data));
    server.route("/nr/m.bin", Route::bytes(data.clone()).no_ranges());
    let dir = TestDir::new();
    let args = |paths: &[&str]| {
        let urls: Vec<String> = paths.iter().map(|p| server.url(p)).collect();
        in_dir(&dir, &["-x2", "-k1M"], &urls)
    };
    interrupted(&server, &dir, "/m.bin", &data);
    let (file, ctl) = (dir.join("m.bin"), dir.join("m.bin.aria2"));
    let partial = std::fs::read(&ctl).expect("control file");

    let run = ringdl(&dir, &args(&["/nr/m.bin"]));
    assert_eq!(run.code(), 8, "{run}");
    assert!(
        run.lines_with("errorCode=8")
            .iter()
            .any(|l| l.contains("/nr/m.bin")),
        "no error line naming the mirror\n{run}"
    );
    assert_eq!(
        std::fs::read(&ctl).ok(),
        Some(partial),
        "the control file changed"
    );

    let before = server.requests_to("/m.bin").len();
    let run = ringdl(&dir, &args(&["/nr/m.bin", "/m.bin"]));
    assert_eq!(run.code(), 0, "{run}");
    assert_eq!(sha256_file(&file), sha256_hex(&data));
    assert!(!ctl.exists(), "control file left after completion");
    let aborted = run.lines_with("Download aborted");
    assert!(
        aborted.len() == 1
            && aborted[0].contains("/nr/m.bin")
            && aborted[0].contains("errorCode=8"),
        "expected one abort line for the mirror that cannot resume\n{run}"
    );
    let later = &server.requests_to("/m.bin")[before..];
    assert!(
        !later.is_empty() && later.iter().all(|r| r.range().is_some_and(|(a, _)| a > 0)),
        "the good mirror was asked for bytes already on disk: {:?}",
        later.iter().map(|r| r.range()).collect::<Vec<_>>()
    );
}

/// `--no-conf -d DIR`, then `opts`, then `urls`.
fn in_dir(dir: &TestDir, opts: &[&str], urls: &[String]) -> Vec<String> {
    let mut args = vec!["--no-conf".to_string(), "-d".into(), dir.arg()];
    args.extend(opts.iter().map(|o| o.to_string()));
    args.extend(urls.iter().cloned());
    args
}

/// Partial download of `data` from `server`'s `path` (`-x2`, stopped with Ctrl-C part-way), in
/// `dir`, with its control file.
fn interrupted(server: &TestServer, dir: &TestDir, path: &str, data: &[u8]) {
    let args = in_dir(dir, &["-x2", "-k1M"], &[server.url(path)]);
    let code = run_and_signal(bin(), &args, "-INT", Duration::from_millis(300));
    assert_eq!(code, Some(7));
    let name = path.rsplit('/').next().unwrap_or(path);
    let len = std::fs::metadata(dir.join(name))
        .map(|m| m.len())
        .unwrap_or(0);
    assert!(
        len > 0 && len <= data.len() as u64,
        "partial file of {len} bytes"
    );
    assert!(
        dir.join(&format!("{name}.aria2")).exists(),
        "no control file"
    );
}

/// `--always-resume=false --max-resume-failure-tries=1`: the first mirror cannot resume, so the
/// download starts over on the next, which is missing (404). The partial file and its control
/// file must still describe each other, so a later run finishes it byte-exact.
#[test]
fn starting_over_on_a_mirror_that_fails_keeps_the_partial_file_resumable() {
    let server = TestServer::plain();
    let data = content(82, 12 * MIB + 77);
    server.route("/s.bin", slow_route(&data));
    server.route("/nr/s.bin", Route::bytes(data.clone()).no_ranges());
    let dir = TestDir::new();
    interrupted(&server, &dir, "/s.bin", &data);
    let ctl = dir.join("s.bin.aria2");
    let opts = ["--always-resume=false", "--max-resume-failure-tries=1"];
    let urls = [server.url("/nr/s.bin"), server.url("/missing/s.bin")];
    let run = ringdl(&dir, &in_dir(&dir, &opts, &urls));
    assert_eq!(run.code(), 3, "{run}");
    assert!(ctl.exists(), "the control file went: {:?}", dir.entries());
    let run = ringdl(&dir, &in_dir(&dir, &[], &[server.url("/s.bin")]));
    assert_eq!(run.code(), 0, "{run}");
    assert_eq!(sha256_file(&dir.join("s.bin")), sha256_hex(&data));
    assert!(!ctl.exists());
}

/// A resumed download split over a good mirror and one that ignores ranges: the bad mirror is
/// dropped with an error line and the good one finishes the file (there is no whole-body stream
/// to fall back on). aria2c 1.36 finishes it too.
#[test]
fn resumed_split_download_drops_a_mirror_that_ignores_ranges() {
    let server = TestServer::plain();
    let data = content(83, 12 * MIB + 99);
    server.route("/r.bin", slow_route(&data));
    server.route("/nr/r.bin", Route::bytes(data.clone()).no_ranges());
    let dir = TestDir::new();
    interrupted(&server, &dir, "/r.bin", &data);
    let urls = [server.url("/r.bin"), server.url("/nr/r.bin")];
    let run = ringdl(&dir, &in_dir(&dir, &["-x2", "-k1M"], &urls));
    assert_eq!(run.code(), 0, "{run}");
    assert_eq!(sha256_file(&dir.join("r.bin")), sha256_hex(&data));
    assert!(!dir.join("r.bin.aria2").exists());
}

/// Two mirrors on different origins with their own ETags: `If-Range` carries the first
/// response's validator to its own origin only, so the other mirror serves its ranges instead
/// of answering each with the whole file.
#[test]
fn if_range_only_to_its_origin() {
    let (a, b) = (TestServer::plain(), TestServer::plain());
    let data = content(84, 8 * MIB + 5);
    let route = |etag: &str| {
        Route::bytes(data.clone())
            .throttle(64 * 1024, Duration::from_millis(5))
            .header("ETag", etag)
    };
    a.route("/o.bin", route("\"from-a\""));
    b.route("/o.bin", route("\"from-b\""));
    let dir = TestDir::new();
    let urls = [a.url("/o.bin"), b.url("/o.bin")];
    let run = ringdl(&dir, &in_dir(&dir, &["-x4", "-s4", "-k1M"], &urls));
    assert_eq!(run.code(), 0, "{run}");
    assert_eq!(sha256_file(&dir.join("o.bin")), sha256_hex(&data));
    assert!(run.lines_with("Download aborted").is_empty(), "{run}");
    let ranged = |s: &TestServer| -> Vec<Option<String>> {
        s.requests_to("/o.bin")
            .iter()
            .filter(|r| r.range().is_some_and(|(first, _)| first > 0))
            .map(|r| r.header("If-Range").map(str::to_owned))
            .collect()
    };
    let (from_a, from_b) = (ranged(&a), ranged(&b));
    assert!(!from_b.is_empty(), "the second mirror served no range");
    assert!(
        from_b.iter().all(Option::is_none),
        "If-Range sent to the other origin: {from_b:?}"
    );
    // The first request goes to the first mirror, whose answer gives the validator.
    assert!(
        from_a.iter().all(|v| v.as_deref() == Some("\"from-a\"")),
        "{from_a:?}"
    );
}

/// `-V` on a bad file big enough that its read-back spans an auto-save tick (about 2.5 s for
/// 128 MiB in a debug build; the tick comes every second): the tick must not save a control file
/// claiming the bad bytes, or the refetch would trust it and end with exit 32.
#[test]
fn check_integrity_refetch_survives_an_auto_save_tick() {
    let server = TestServer::plain();
    let data = content(85, 128 * MIB);
    server.route("/v.bin", Route::bytes(data.clone()));
    let dir = TestDir::new();
    let mut bad = data.clone();
    bad[100 * MIB] ^= 0xff;
    std::fs::write(dir.join("v.bin"), &bad).unwrap();
    let sum = format!("--checksum=sha-256={}", digest_hex("sha-256", &data));
    let run = ringdl(
        &dir,
        &[
            "--no-conf",
            "-V",
            &sum,
            "-d",
            &dir.arg(),
            &server.url("/v.bin"),
        ],
    );
    assert_eq!(run.code(), 0, "{run}");
    assert!(run.stdout.contains("Checksum error detected"), "{run}");
    assert_eq!(sha256_file(&dir.join("v.bin")), sha256_hex(&data));
    assert!(!dir.join("v.bin.aria2").exists(), "control file left");
}

/// `-c` without a control file, on a partial file whose version (the xattr an earlier run kept)
/// the server no longer has: the If-Range answer is the whole new file. That is "the file
/// changed", not "cannot resume", and the partial file's bytes belong to the old version, so no
/// control file may claim them for the new one (aria2c, which sends no If-Range, would then
/// resume from that claim and mix the two versions).
#[test]
fn continue_on_a_changed_file_says_so_and_claims_nothing() {
    let server = TestServer::plain();
    let old = content(85, 12 * MIB + 3);
    let new = content(86, 13 * MIB + 7);
    server.route("/v.bin", slow_route(&old).header("ETag", "\"v1\""));
    let dir = TestDir::new();
    interrupted(&server, &dir, "/v.bin", &old);
    let ctl = dir.join("v.bin.aria2");
    std::fs::remove_file(&ctl).unwrap();
    let partial = std::fs::read(dir.join("v.bin")).unwrap();
    server.route("/v.bin", Route::bytes(new.clone()).header("ETag", "\"v2\""));
    let run = ringdl(&dir, &in_dir(&dir, &["-c"], &[server.url("/v.bin")]));
    let asked = server.requests_to("/v.bin");
    let last = asked.last().expect("a request");
    assert_eq!(last.header("If-Range"), Some("\"v1\""), "{run}");
    assert!(last.range().is_some(), "{run}");
    assert_eq!(run.code(), 1, "{run}");
    assert!(run.output().contains("changed"), "{run}");
    assert!(
        !ctl.exists(),
        "a control file claims the old version's bytes"
    );
    assert_eq!(std::fs::read(dir.join("v.bin")).unwrap(), partial);
    // The same answer with the version the partial file has is the server ignoring ranges:
    // exit 8 as before, the bytes kept claimed for a later run. (The partial file is cut to a
    // prefix first: the interrupted run preallocated it to its full length, and -c over a file
    // of the server's length is "already completed", as in aria2c.)
    let f = std::fs::OpenOptions::new()
        .write(true)
        .open(dir.join("v.bin"))
        .unwrap();
    f.set_len(4 * MIB as u64).unwrap();
    drop(f);
    server.route(
        "/v.bin",
        Route::bytes(old.clone())
            .no_ranges()
            .header("ETag", "\"v1\""),
    );
    let run = ringdl(&dir, &in_dir(&dir, &["-c"], &[server.url("/v.bin")]));
    assert_eq!(run.code(), 8, "{run}");
    assert!(ctl.exists(), "{:?}", dir.entries());
}

/// The average speed of the results table (and the readout's) counts what this run received,
/// not what was on disk before it: `-c` over three quarters of a file, at a limited rate, shows
/// that rate, as aria2c does (it showed about four times it).
#[test]
fn a_resumed_download_averages_only_what_it_received() {
    let server = TestServer::plain();
    let data = content(97, 4 * MIB);
    server.route("/r.bin", Route::bytes(data.clone()));
    let dir = TestDir::new();
    std::fs::write(dir.join("r.bin"), &data[..3 * MIB]).unwrap();
    let run = ringdl(
        &dir,
        &[
            "--no-conf",
            "-c",
            "--max-download-limit=512K",
            "-d",
            &dir.arg(),
            &server.url("/r.bin"),
        ],
    );
    assert_eq!(run.code(), 0, "{run}");
    assert_eq!(sha256_file(&dir.join("r.bin")), sha256_hex(&data));
    let row = run
        .stdout
        .lines()
        .find(|l| l.contains("|OK  |"))
        .unwrap_or_else(|| panic!("no results row\n{run}"));
    let speed = row.split('|').nth(2).unwrap_or("").trim();
    let (number, unit) = speed.trim_end_matches("/s").split_at(
        speed
            .find(|c: char| c.is_ascii_alphabetic())
            .unwrap_or(speed.len()),
    );
    let scale = match unit.trim_end_matches("/s") {
        "KiB" => 1024.0,
        "MiB" => 1024.0 * 1024.0,
        "B" => 1.0,
        other => panic!("unit {other} in {row}"),
    };
    let bytes_per_s = number.parse::<f64>().unwrap() * scale;
    // 512 KiB/s; 1 MiB/s leaves room for a burst at the start, and is half of what counting
    // the 3 MiB already there would show.
    assert!(bytes_per_s < 1024.0 * 1024.0, "{row}\n{run}");
}

/// A control file that claims every piece, rerun with `-c` and a digest the file does not match,
/// against mirrors that no longer have the file: aria2c asks a server before it believes the
/// control file, so the 404s decide (exit 3) and both files stay as they were. The first mirror's
/// 404 once let the check of the file begin while the others were still being asked, and its
/// mismatch, arriving after the last 404, ended the download with exit 32 instead (the file is
/// large enough that hashing it outlasts the other answers).
#[test]
fn a_claimed_whole_file_on_mirrors_that_lost_it_exits_3_unhashed() {
    let server = TestServer::plain();
    for path in ["/gone.bin", "/a/gone.bin", "/b/gone.bin"] {
        server.route(path, Route::status(404));
    }
    let len = 48 * MIB;
    let data = content(0x0c1a_1e3d, len);
    let dir = TestDir::new();
    std::fs::write(dir.join("gone.bin"), &data).expect("file");
    let pieces: Vec<u32> = (0..(len as u64).div_ceil(MIB as u64) as u32).collect();
    let ctl = aria2_control_file(len as u64, MIB as u32, &pieces, &[]);
    std::fs::write(dir.join("gone.bin.aria2"), &ctl).expect("control file");
    let wrong = format!("--checksum=sha-256={}", "0".repeat(64));
    let run = ringdl(
        &dir,
        &[
            "--no-conf",
            "-c",
            &wrong,
            "-d",
            &dir.arg(),
            &server.url("/gone.bin"),
            &server.url("/a/gone.bin"),
            &server.url("/b/gone.bin"),
        ],
    );
    assert_eq!(run.code(), 3, "{run}");
    assert!(!run.stdout.contains("Checksum error"), "{run}");
    assert_eq!(sha256_file(&dir.join("gone.bin")), sha256_hex(&data));
    assert_eq!(
        std::fs::read(dir.join("gone.bin.aria2")).expect("kept"),
        ctl
    );
}

/// `-c` over an empty file (no control file) against a body of unknown length (chunked, or
/// delimited by the close): the body replaces it, as aria2c's does. Found by the simulation (seed
/// 284917), where it failed with exit 8 ("Invalid range header. Request: 0-0/0"). A non-empty
/// file shorter than one block is left alone and the download renamed, as aria2c does (it was
/// exit 8 before the rule for answers without a length, `leave_found_alone`).
#[test]
fn continue_over_an_empty_file_takes_a_body_of_unknown_length() {
    let server = TestServer::plain();
    let data = content(0x0e11, 300_000);
    server.route("/chunked.bin", Route::bytes(data.clone()).chunked());
    server.route("/closed.bin", Route::bytes(data.clone()).close_delimited());
    for name in ["chunked.bin", "closed.bin"] {
        let dir = TestDir::new();
        std::fs::write(dir.join(name), b"").expect("empty file");
        let run = ringdl(
            &dir,
            &[
                "--no-conf",
                "-c",
                "-d",
                &dir.arg(),
                &server.url(&format!("/{name}")),
            ],
        );
        assert_eq!(run.code(), 0, "{name}: {run}");
        assert_eq!(sha256_file(&dir.join(name)), sha256_hex(&data), "{name}");

        let dir = TestDir::new();
        std::fs::write(dir.join(name), b"mine").expect("short file");
        let run = ringdl(
            &dir,
            &[
                "--no-conf",
                "-c",
                "-d",
                &dir.arg(),
                &server.url(&format!("/{name}")),
            ],
        );
        assert_eq!(run.code(), 0, "{name}: {run}");
        assert_eq!(std::fs::read(dir.join(name)).expect("kept"), b"mine");
        let renamed = name.replace(".bin", ".1.bin");
        assert_eq!(
            sha256_file(&dir.join(&renamed)),
            sha256_hex(&data),
            "{renamed}"
        );
    }
}

/// A control file claiming every byte of a file whose bytes are wrong, rerun with the right
/// `--checksum` (and `-c`, or `-V`): the check fails, the file is fetched whole again, exit 0, as
/// aria2c does. The fetch again must not take the control file still on disk for the new
/// attempt's (it claims the bad bytes: the second check would fail, exit 32), and that control
/// file goes through the file-job thread, after any save still queued (seeds 889197 and 937905
/// of the simulation, where a queued save wrote it back over the emptied file).
#[test]
fn a_claimed_whole_file_with_wrong_bytes_is_fetched_again() {
    let server = TestServer::plain();
    let len = 5 * MIB + 123;
    let data = content(0x5eed_0889, len);
    server.route("/w.bin", Route::bytes(data.clone()));
    let sum = format!("--checksum=sha-256={}", digest_hex("sha-256", &data));
    for mode in ["-c", "-V"] {
        let dir = TestDir::new();
        let mut bad = data.clone();
        bad[len / 2] ^= 0x5a;
        std::fs::write(dir.join("w.bin"), &bad).expect("file");
        let pieces: Vec<u32> = (0..(len as u64).div_ceil(MIB as u64) as u32).collect();
        let ctl = aria2_control_file(len as u64, MIB as u32, &pieces, &[]);
        std::fs::write(dir.join("w.bin.aria2"), &ctl).expect("control file");
        let run = ringdl(
            &dir,
            &[
                "--no-conf",
                mode,
                &sum,
                "-d",
                &dir.arg(),
                &server.url("/w.bin"),
            ],
        );
        assert_eq!(run.code(), 0, "{mode}: {run}");
        assert!(run.stdout.contains("downloading it again"), "{mode}: {run}");
        assert_eq!(sha256_file(&dir.join("w.bin")), sha256_hex(&data), "{mode}");
        assert!(
            !dir.join("w.bin.aria2").exists(),
            "{mode}: control file left"
        );
    }
}
