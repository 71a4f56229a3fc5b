//! The portable reactor where io_uring is refused: ringdl run under a seccomp filter that denies
//! the io_uring system calls (as Docker's and containerd's default profiles do) falls back with one
//! notice and downloads SHA-exact; `--engine=uring` there fails with one clear line; `-v` says
//! which reactor runs; and a download started on one reactor finishes on the other.

use std::process::Command;

use crate::support::seccomp::{self, IO_URING};
use crate::support::server::{Fault, Route, TestServer, When};
use crate::support::{
    binary_under_test, content, ringdl, run_changed, sha256_file, sha256_hex, Run, TestDir,
    RUN_TIMEOUT,
};

const MIB: usize = 1024 * 1024;
const NOTICE: &str = "using the portable reactor (epoll)";

/// ringdl with `denied` system calls failing with `errno`.
fn under_filter(dir: &TestDir, args: &[String], denied: &[libc::c_long], errno: i32) -> Run {
    run_changed(
        &binary_under_test(),
        dir,
        args,
        RUN_TIMEOUT,
        |cmd: &mut Command| {
            // The environment's engine choice (the CI matrix) must not decide what is tested here.
            cmd.env_remove("RINGDL_ENGINE");
            seccomp::deny(cmd, denied, errno)
        },
    )
}

fn get_args(dir: &TestDir, server: &TestServer, path: &str, more: &[&str]) -> Vec<String> {
    let mut args = vec![
        "--no-conf".to_string(),
        format!("-d{}", dir.path().display()),
        "-x4".into(),
        "-k1M".into(),
    ];
    args.extend(more.iter().map(|s| s.to_string()));
    args.push(server.url(path));
    args
}

/// Every way a container refuses io_uring: all three calls denied with EPERM (Docker, containerd)
/// or ENOSYS (gVisor, old kernels); setup allowed but the first submission refused (the ring
/// appears to work, its first real operation fails); the probe of opcodes refused. Each time: one
/// notice, the file SHA-exact, exit 0, over HTTP and HTTPS.
#[test]
fn io_uring_refused_falls_back_to_the_portable_reactor() {
    let plain = TestServer::plain();
    let tls = TestServer::https();
    let data = content(801, 6 * MIB + 5);
    plain.route("/f.bin", Route::bytes(data.clone()));
    tls.route("/f.bin", Route::bytes(data.clone()));
    let ca = format!("--ca-certificate={}", tls.ca_file().display());
    let cases: [(&str, &[libc::c_long], i32); 4] = [
        ("all denied, EPERM", &IO_URING, libc::EPERM),
        ("all denied, ENOSYS", &IO_URING, libc::ENOSYS),
        (
            "first submission refused",
            &[libc::SYS_io_uring_enter],
            libc::EPERM,
        ),
        ("probe refused", &[libc::SYS_io_uring_register], libc::EPERM),
    ];
    for (what, denied, errno) in cases {
        for server in [&plain, &tls] {
            let dir = TestDir::new();
            let args = get_args(&dir, server, "/f.bin", &[&ca]);
            let run = under_filter(&dir, &args, denied, errno);
            assert_eq!(run.code(), 0, "{what}\n{run}");
            assert_eq!(
                sha256_file(&dir.join("f.bin")),
                sha256_hex(&data),
                "{what}\n{run}"
            );
            let notices = run.lines_with(NOTICE);
            assert_eq!(notices.len(), 1, "{what}: one notice\n{run}");
            assert!(
                notices[0].contains("io_uring is not available"),
                "{what}\n{run}"
            );
        }
    }
    // What -v says there, and here.
    let dir = TestDir::new();
    let run = under_filter(&dir, &["-v".to_string()], &IO_URING, libc::EPERM);
    assert_eq!(run.code(), 0, "{run}");
    assert_eq!(
        run.lines_with("Engine: portable (epoll), O_DIRECT; io_uring is not available")
            .len(),
        1,
        "{run}"
    );
    let run = ringdl(&dir, &["--engine=auto", "-v"]);
    assert_eq!(
        run.lines_with("Engine: io_uring, O_DIRECT").len(),
        1,
        "{run}"
    );
}

/// `--engine=uring` where io_uring is refused: one line saying so and what to check, exit 1,
/// nothing written, nothing sent, no panic. `--engine=portable` there needs no io_uring and prints no notice.
#[test]
fn forced_engines_where_io_uring_is_refused() {
    let server = TestServer::plain();
    let data = content(802, 300_000);
    server.route("/f.bin", Route::bytes(data.clone()));
    let dir = TestDir::new();
    let args = get_args(&dir, &server, "/f.bin", &["--engine=uring"]);
    let run = under_filter(&dir, &args, &IO_URING, libc::EPERM);
    assert_eq!(run.code(), 1, "{run}");
    assert_eq!(
        run.lines_with("io_uring is not available").len(),
        1,
        "{run}"
    );
    assert!(!dir.join("f.bin").exists());
    assert!(server.requests().is_empty());

    let log = dir.join("run.log");
    let log_arg = format!("-l{}", log.display());
    let args = get_args(
        &dir,
        &server,
        "/f.bin",
        &["--engine=portable", &log_arg, "--log-level=debug"],
    );
    let run = under_filter(&dir, &args, &IO_URING, libc::EPERM);
    assert_eq!(run.code(), 0, "{run}");
    assert!(run.lines_with(NOTICE).is_empty(), "{run}");
    assert_eq!(sha256_file(&dir.join("f.bin")), sha256_hex(&data));
    let text = std::fs::read_to_string(&log).expect("the log");
    assert!(
        text.contains("[DEBUG] engine: portable reactor (epoll)"),
        "{text}"
    );
}

/// A download cut on one reactor (its control file left) finishes on the other with `-c`, both
/// ways, SHA-exact, fetching only what was missing.
#[test]
fn a_download_resumes_across_reactors() {
    let data = content(803, 8 * MIB + 7);
    for (first, second) in [("uring", "portable"), ("portable", "uring")] {
        let server = TestServer::plain();
        server.route(
            "/f.bin",
            Route::bytes(data.clone())
                .fault(Fault::TruncateAfter(3 * MIB as u64), When::FirstRequests(1)),
        );
        let dir = TestDir::new();
        let engine = format!("--engine={first}");
        let args = get_args(&dir, &server, "/f.bin", &[&engine, "-x1", "--max-tries=1"]);
        let run = ringdl(&dir, &args);
        assert_ne!(
            run.code(),
            0,
            "{first}: the cut must fail the first run\n{run}"
        );
        assert!(
            dir.join("f.bin.aria2").exists(),
            "{first}: a control file\n{run}"
        );
        let before = server.requests().len();

        let engine = format!("--engine={second}");
        let args = get_args(&dir, &server, "/f.bin", &[&engine, "-c"]);
        let run = ringdl(&dir, &args);
        assert_eq!(run.code(), 0, "{first} then {second}\n{run}");
        assert_eq!(
            sha256_file(&dir.join("f.bin")),
            sha256_hex(&data),
            "{first} then {second}"
        );
        assert!(!dir.join("f.bin.aria2").exists());
        let resumed = &server.requests()[before..];
        assert!(
            resumed
                .iter()
                .all(|r| r.header("Range").is_some_and(|v| v != "bytes=0-")),
            "{first} then {second}: the second run fetched only what was missing: {:?}",
            resumed
                .iter()
                .map(|r| r.header("Range"))
                .collect::<Vec<_>>()
        );
    }
}
