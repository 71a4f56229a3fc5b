//! Event hooks (`--on-download-start`, `-pause`, `-complete`, `-error`, `-stop`): each runs with
//! aria2c's arguments (the GID, the number of files, the first file's path) at its moment, beside
//! the loop; a hook that is missing, fails or never ends leaves the downloads alone.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::json;

use crate::support::rpc::Daemon;
use crate::support::server::{Route, TestServer};
use crate::support::{content, ringdl, sha256_file, sha256_hex, TestDir};

/// A hook script in `dir` that appends `NAME ARGC GID FILES PATH SIZE` to `dir/hooks.log`, where
/// SIZE is the file's size when the hook ran (`-` if there is none).
fn hook(dir: &TestDir, name: &str) -> PathBuf {
    let path = dir.join(name);
    let log = dir.join("hooks.log");
    let script = format!(
        "#!/bin/sh\nsize=$(stat -c %s \"$3\" 2>/dev/null || echo -)\necho \"{name} $# $1 $2 $3 $size\" >> '{}'\n",
        log.display()
    );
    std::fs::write(&path, script).unwrap();
    make_executable(&path);
    path
}

fn make_executable(path: &Path) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// The log's lines once it has `n` of them (hooks run beside the run and may end after it).
fn log_lines(dir: &TestDir, n: usize) -> Vec<Vec<String>> {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let text = std::fs::read_to_string(dir.join("hooks.log")).unwrap_or_default();
        let lines: Vec<Vec<String>> = text
            .lines()
            .map(|l| l.split(' ').map(str::to_string).collect())
            .collect();
        if lines.len() >= n || Instant::now() > deadline {
            return lines;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// `ringdl --no-conf` with `start.sh` and `done.sh` (see [`hook`]) as the start and complete
/// hooks, `opts`, `-d DIR` and `url`.
fn with_start_and_done_hooks(dir: &TestDir, opts: &[&str], url: &str) -> crate::support::Run {
    let start = hook(dir, "start.sh");
    let done = hook(dir, "done.sh");
    let mut args = vec![
        "--no-conf".to_string(),
        format!("--on-download-start={}", start.display()),
        format!("--on-download-complete={}", done.display()),
    ];
    args.extend(opts.iter().map(|o| o.to_string()));
    args.extend(["-d".to_string(), dir.arg(), url.to_string()]);
    ringdl(dir, &args)
}

#[test]
fn start_and_complete_hooks_get_the_gid_one_file_and_the_path() {
    let server = TestServer::plain();
    let data = content(301, 700_000);
    server.route("/f.bin", Route::bytes(data.clone()));
    let dir = TestDir::new();
    let run = with_start_and_done_hooks(&dir, &[], &server.url("/f.bin"));
    assert_eq!(run.code(), 0, "{run}");
    assert_eq!(sha256_file(&dir.join("f.bin")), sha256_hex(&data));
    let mut lines = log_lines(&dir, 2);
    assert_eq!(lines.len(), 2, "{lines:?}\n{run}");
    // Each hook is its own process: the two may write in either order.
    lines.sort_by(|a, b| b[0].cmp(&a[0]));
    let gid = &lines[0][2];
    assert_eq!(gid.len(), 16, "{lines:?}");
    assert!(gid.bytes().all(|b| b.is_ascii_hexdigit()), "{lines:?}");
    // At the start the file is not named yet (no -o): an empty path, as aria2c gives.
    assert_eq!(lines[0][..5], ["start.sh", "3", gid, "1", ""], "{lines:?}");
    // At completion the file is whole.
    let path = dir.join("f.bin").display().to_string();
    assert_eq!(
        lines[1],
        ["done.sh", "3", gid, "1", &path, &data.len().to_string()],
        "{lines:?}"
    );
    // The run says which command it ran, at --log-level info and above only: nothing on the
    // console by default.
    assert!(!run.output().contains("Executing user command"), "{run}");
}

/// `-V --checksum` over a complete file whose bytes are wrong: the check fails and the file is
/// fetched again, within the same download. Its start hook runs once, as aria2c's does (it ran
/// again for the fetch before: two start lines).
#[test]
fn a_file_fetched_again_after_a_failed_check_starts_once() {
    let server = TestServer::plain();
    let data = content(303, 700_000);
    server.route("/f.bin", Route::bytes(data.clone()));
    let dir = TestDir::new();
    let mut corrupt = data.clone();
    corrupt[400_000..400_064].fill(0x5a);
    std::fs::write(dir.join("f.bin"), &corrupt).unwrap();
    let checksum = format!("--checksum=sha-256={}", sha256_hex(&data));
    let run = with_start_and_done_hooks(&dir, &["-V", &checksum], &server.url("/f.bin"));
    assert_eq!(run.code(), 0, "{run}");
    assert!(run.output().contains("Checksum error detected"), "{run}");
    assert_eq!(sha256_file(&dir.join("f.bin")), sha256_hex(&data));
    log_lines(&dir, 2);
    // A second start hook would have been spawned before the completion's: give it the time a
    // hook takes to run all the same.
    std::thread::sleep(Duration::from_millis(300));
    let mut names: Vec<String> = log_lines(&dir, 2)
        .into_iter()
        .map(|l| l[0].clone())
        .collect();
    names.sort();
    assert_eq!(names, ["done.sh", "start.sh"], "{run}");
}

#[test]
fn with_dash_o_the_start_hook_gets_the_path() {
    let server = TestServer::plain();
    server.route("/f.bin", Route::bytes(content(302, 10_000)));
    let dir = TestDir::new();
    let start = hook(&dir, "start.sh");
    let run = ringdl(
        &dir,
        &[
            "--no-conf".to_string(),
            format!("--on-download-start={}", start.display()),
            "-d".into(),
            dir.arg(),
            "-o".into(),
            "named.bin".into(),
            server.url("/f.bin"),
        ],
    );
    assert_eq!(run.code(), 0, "{run}");
    let lines = log_lines(&dir, 1);
    assert_eq!(
        lines[0][4],
        dir.join("named.bin").display().to_string(),
        "{lines:?}"
    );
}

#[test]
fn the_error_hook_or_else_the_stop_hook_runs_on_failure() {
    let server = TestServer::plain();
    server.route("/gone", Route::status(404));
    server.route("/f.bin", Route::bytes(content(303, 5_000)));
    // Error and stop given: the error hook runs, not the stop hook.
    let dir = TestDir::new();
    let error = hook(&dir, "error.sh");
    let stop = hook(&dir, "stop.sh");
    let run = ringdl(
        &dir,
        &[
            "--no-conf".to_string(),
            format!("--on-download-error={}", error.display()),
            format!("--on-download-stop={}", stop.display()),
            "-d".into(),
            dir.arg(),
            server.url("/gone"),
        ],
    );
    assert_eq!(run.code(), 3, "{run}");
    let lines = log_lines(&dir, 1);
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert_eq!(lines[0][0], "error.sh", "{lines:?}");
    // Only stop given: it runs for a failure and for a completion alike.
    let dir = TestDir::new();
    let stop = hook(&dir, "stop.sh");
    for path in ["/gone", "/f.bin"] {
        let run = ringdl(
            &dir,
            &[
                "--no-conf".to_string(),
                format!("--on-download-stop={}", stop.display()),
                "-d".into(),
                dir.arg(),
                server.url(path),
            ],
        );
        assert!(run.code() == 3 || run.code() == 0, "{run}");
    }
    let lines = log_lines(&dir, 2);
    assert_eq!(lines.len(), 2, "{lines:?}");
    assert!(lines.iter().all(|l| l[0] == "stop.sh"), "{lines:?}");
}

#[test]
fn a_missing_or_hanging_hook_leaves_the_download_alone() {
    let server = TestServer::plain();
    let data = content(304, 300_000);
    server.route("/f.bin", Route::bytes(data.clone()));
    let dir = TestDir::new();
    // Never ends (its output elsewhere, so it holds none of ringdl's pipes).
    let hang = dir.join("hang.sh");
    std::fs::write(
        &hang,
        "#!/bin/sh\nexec sleep 600 >/dev/null 2>&1 </dev/null\n",
    )
    .unwrap();
    make_executable(&hang);
    // Writes to ringdl's own output: passed through.
    let talk = dir.join("talk.sh");
    std::fs::write(&talk, "#!/bin/sh\necho hook-says-hello\n").unwrap();
    make_executable(&talk);
    let started = Instant::now();
    let run = ringdl(
        &dir,
        &[
            "--no-conf".to_string(),
            format!("--on-download-start={}", hang.display()),
            format!("--on-download-complete={}", talk.display()),
            "--on-download-error=/nonexistent/hook".into(),
            "-d".into(),
            dir.arg(),
            server.url("/f.bin"),
        ],
    );
    assert_eq!(run.code(), 0, "{run}");
    assert_eq!(sha256_file(&dir.join("f.bin")), sha256_hex(&data));
    assert!(started.elapsed() < Duration::from_secs(60), "{run}");
    let _ = std::process::Command::new("pkill")
        .args(["-f", &hang.display().to_string()])
        .status();
    // A hook that cannot be run: one line, the download unaffected.
    server.route("/gone", Route::status(404));
    let run = ringdl(
        &dir,
        &[
            "--no-conf".to_string(),
            "--on-download-error=/nonexistent/hook".into(),
            "-d".into(),
            dir.arg(),
            server.url("/gone"),
        ],
    );
    assert_eq!(run.code(), 3, "{run}");
    let said = run.lines_with("Could not execute user command: /nonexistent/hook");
    assert_eq!(said.len(), 1, "{run}");
}

#[test]
fn hook_output_is_passed_through() {
    let server = TestServer::plain();
    server.route("/f.bin", Route::bytes(content(305, 1000)));
    let dir = TestDir::new();
    let talk = dir.join("talk.sh");
    std::fs::write(&talk, "#!/bin/sh\necho hook-says-hello\n").unwrap();
    make_executable(&talk);
    let run = ringdl(
        &dir,
        &[
            "--no-conf".to_string(),
            format!("--on-download-start={}", talk.display()),
            "-d".into(),
            dir.arg(),
            server.url("/f.bin"),
        ],
    );
    assert_eq!(run.code(), 0, "{run}");
    assert!(run.stdout.contains("hook-says-hello"), "{run}");
}

#[test]
fn hooks_run_for_downloads_added_over_rpc() {
    let server = TestServer::plain();
    server.route(
        "/slow.bin",
        Route::bytes(content(306, 2 << 20)).throttle(16 * 1024, Duration::from_millis(20)),
    );
    server.route("/f.bin", Route::bytes(content(307, 20_000)));
    let dir = TestDir::new();
    let args: Vec<String> = ["start", "pause", "complete", "stop"]
        .iter()
        .map(|e| {
            format!(
                "--on-download-{e}={}",
                hook(&dir, &format!("{e}.sh")).display()
            )
        })
        .collect();
    let dirarg = dir.arg();
    let mut all: Vec<&str> = vec!["-d", &dirarg];
    all.extend(args.iter().map(String::as_str));
    let d = Daemon::start(&dir, &all);
    let done = d.call("aria2.addUri", json!([[server.url("/f.bin")]]));
    let done = done.as_str().unwrap().to_string();
    d.wait_for(&done, Duration::from_secs(10), |s| {
        s["status"] == "complete"
    });
    let slow = d.call("aria2.addUri", json!([[server.url("/slow.bin")]]));
    let slow = slow.as_str().unwrap().to_string();
    d.wait_for(&slow, Duration::from_secs(10), |s| s["status"] == "active");
    d.call("aria2.pause", json!([slow]));
    d.wait_for(&slow, Duration::from_secs(10), |s| s["status"] == "paused");
    d.call("aria2.remove", json!([slow]));
    // Start and complete of the first, start and pause of the second (removed once paused, it
    // leaves the queue without a result, and without a hook, as in aria2c).
    let lines = log_lines(&dir, 4);
    // Hooks run beside the loop, each its own process: two that start close together may write
    // in either order, so the events are compared as a set.
    let mut events: Vec<(&str, &str)> = lines
        .iter()
        .map(|l| (l[0].as_str(), l[2].as_str()))
        .filter(|(name, _)| *name != "stop.sh")
        .collect();
    events.sort();
    let mut want = vec![
        ("start.sh", done.as_str()),
        ("complete.sh", done.as_str()),
        ("start.sh", slow.as_str()),
        ("pause.sh", slow.as_str()),
    ];
    want.sort();
    assert_eq!(events, want, "{lines:?}");
    let _ = d.call("aria2.shutdown", json!([]));
}
