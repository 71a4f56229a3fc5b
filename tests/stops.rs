//! `--stop` and `--stop-with-process`: the run stops as on a first Ctrl-C (exit 7, the partial
//! file resumable) once the time has passed or the process is gone, as aria2c's does.

use std::time::{Duration, Instant};

use crate::support::server::{Route, TestServer};
use crate::support::{content, ringdl, sha256_file, sha256_hex, TestDir};

fn slow_server() -> (TestServer, Vec<u8>) {
    let server = TestServer::plain();
    let data = content(401, 4 << 20);
    server.route(
        "/slow.bin",
        Route::bytes(data.clone()).throttle(16 * 1024, Duration::from_millis(50)),
    );
    server.route("/fast.bin", Route::bytes(data.clone()));
    (server, data)
}

/// The run stopped part-way, resumably: a second run with `-c` ends with the exact file.
fn assert_stopped_and_resumable(
    dir: &TestDir,
    server: &TestServer,
    data: &[u8],
    run: &crate::support::Run,
) {
    assert_eq!(run.code(), 7, "{run}");
    assert!(dir.join("slow.bin.aria2").exists(), "{run}");
    let again = ringdl(
        dir,
        &[
            "--no-conf".to_string(),
            "-c".into(),
            "-d".into(),
            dir.arg(),
            "-o".into(),
            "slow.bin".into(),
            server.url("/fast.bin"),
        ],
    );
    assert_eq!(again.code(), 0, "{again}");
    assert_eq!(sha256_file(&dir.join("slow.bin")), sha256_hex(data));
}

#[test]
fn stop_after_seconds_stops_as_ctrl_c() {
    let (server, data) = slow_server();
    let dir = TestDir::new();
    let started = Instant::now();
    let run = ringdl(
        &dir,
        &[
            "--no-conf".to_string(),
            "--stop=1".into(),
            "-d".into(),
            dir.arg(),
            server.url("/slow.bin"),
        ],
    );
    assert!(started.elapsed() >= Duration::from_secs(1), "{run}");
    assert!(
        run.stdout
            .contains("1 second(s) has passed. Stopping application."),
        "{run}"
    );
    assert_stopped_and_resumable(&dir, &server, &data, &run);
}

#[test]
fn stop_with_process_stops_once_it_is_gone() {
    let (server, data) = slow_server();
    // A process that ends a second from now, reaped at once (a zombie is still in /proc).
    let mut watched = std::process::Command::new("sleep")
        .arg("1")
        .spawn()
        .unwrap();
    let pid = watched.id();
    let reaper = std::thread::spawn(move || watched.wait());
    let dir = TestDir::new();
    let run = ringdl(
        &dir,
        &[
            "--no-conf".to_string(),
            format!("--stop-with-process={pid}"),
            "-d".into(),
            dir.arg(),
            server.url("/slow.bin"),
        ],
    );
    let _ = reaper.join();
    assert_stopped_and_resumable(&dir, &server, &data, &run);
    // A process that is not there at all: stopped at the first check.
    let dir = TestDir::new();
    let run = ringdl(
        &dir,
        &[
            "--no-conf".to_string(),
            "--stop-with-process=99999999".into(),
            "-d".into(),
            dir.arg(),
            server.url("/slow.bin"),
        ],
    );
    assert_stopped_and_resumable(&dir, &server, &data, &run);
}

#[test]
fn a_download_that_ends_first_is_not_stopped() {
    let (server, data) = slow_server();
    let dir = TestDir::new();
    let run = ringdl(
        &dir,
        &[
            "--no-conf".to_string(),
            "--stop=30".into(),
            "-d".into(),
            dir.arg(),
            server.url("/fast.bin"),
        ],
    );
    assert_eq!(run.code(), 0, "{run}");
    assert_eq!(sha256_file(&dir.join("fast.bin")), sha256_hex(&data));
}
