//! Real RPC clients driving ringdl's daemon mode: aria2p (PyPI; its library and its CLI) and the npm
//! `aria2` package (HTTP and WebSocket), each adding, polling, pausing, resuming, removing,
//! changing options and shutting down, with every finished file checked by SHA-256. The clients
//! are found in `target/peers/` (where `.ci/run` installs them) or in `RINGDL_PYTHON` /
//! `RINGDL_NODE_MODULES`; without them the tests skip loudly (fail under `RINGDL_REQUIRE_PEERS=1`).
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use serde_json::{json, Value};

use crate::support::rpc::Daemon;
use crate::support::server::{Route, TestServer};
use crate::support::{content, require_peer, sha256_file, sha256_hex, TestDir};

const MIB: usize = 1024 * 1024;

fn peers() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("target/peers")
}

/// The Python that has aria2p.
fn python() -> Option<PathBuf> {
    let p = std::env::var_os("RINGDL_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| peers().join("venv/bin/python"));
    let ok = Command::new(&p)
        .args(["-c", "import aria2p"])
        .output()
        .is_ok_and(|o| o.status.success());
    ok.then_some(p)
}

/// The `node_modules` that has the `aria2` package.
fn node_modules() -> Option<PathBuf> {
    let m = std::env::var_os("RINGDL_NODE_MODULES")
        .map(PathBuf::from)
        .unwrap_or_else(|| peers().join("node/node_modules"));
    let node = Command::new("node")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    (node && m.join("aria2/package.json").is_file()).then_some(m)
}

fn script(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/clients")
        .join(name)
}

/// Runs `cmd` with a deadline; its stdout, or a panic with everything it said.
fn run(mut cmd: Command, limit: Duration) -> String {
    cmd.stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let mut child = cmd.spawn().expect("spawn the client");
    let out = crate::support::drain(child.stdout.take().expect("stdout"));
    let err = crate::support::drain(child.stderr.take().expect("stderr"));
    let start = std::time::Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().expect("wait") {
            break Some(s);
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let (out, err) = (
        out.join().unwrap_or_default(),
        err.join().unwrap_or_default(),
    );
    match status {
        Some(s) if s.success() => out,
        _ => panic!("{cmd:?} failed ({status:?})\n--- stdout ---\n{out}\n--- stderr ---\n{err}"),
    }
}

/// A slow big file and a small one.
fn files(server: &TestServer) -> (Vec<u8>, Vec<u8>) {
    let big = content(71, 5 * MIB + 3);
    let small = content(72, 200_000);
    server.route(
        "/big.bin",
        Route::bytes(big.clone()).throttle(16 * 1024, Duration::from_millis(20)),
    );
    server.route("/small.bin", Route::bytes(small.clone()));
    (big, small)
}

#[test]
fn aria2p_library_drives_the_daemon() {
    let python = python();
    if !require_peer("aria2p", python.is_some()) {
        return;
    }
    let server = TestServer::plain();
    let (big, small) = files(&server);
    let dir = TestDir::new();
    let d = Daemon::start(&dir, &["-d", &dir.arg(), "--rpc-secret=p4ss", "-x2"]);
    let mut cmd = Command::new(python.unwrap());
    cmd.arg(script("aria2p_scenario.py"))
        .arg(d.port.to_string())
        .arg("p4ss")
        .arg(server.url(""));
    let out = run(cmd, Duration::from_secs(120));
    let report: Value = serde_json::from_str(out.lines().last().unwrap_or("")).expect(&out);
    let ended = d.wait_exit(Duration::from_secs(10));
    assert_eq!(ended.code, Some(0), "{ended:?}");
    assert_eq!(sha256_file(&dir.join("big.bin")), sha256_hex(&big));
    assert_eq!(
        sha256_file(&dir.join("small-renamed.bin")),
        sha256_hex(&small)
    );
    assert_eq!(sha256_file(&dir.join("q2.bin")), sha256_hex(&small));
    assert!(!dir.join("q1.bin").exists(), "removed before it started");
    assert!(!dir.join("big.bin.aria2").exists());
    // The WebSocket notifications aria2p heard for the big download, in order.
    let big_gid = report["big"].as_str().unwrap();
    let seen: Vec<&str> = report["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e[1] == big_gid)
        .map(|e| e[0].as_str().unwrap())
        .collect();
    assert_eq!(seen, ["start", "pause", "start", "complete"], "{report}");
}

#[test]
fn aria2p_cli_adds_shows_pauses_resumes_removes_and_purges() {
    let python = python();
    if !require_peer("aria2p", python.is_some()) {
        return;
    }
    let python = python.unwrap();
    let aria2p = python.with_file_name("aria2p");
    let server = TestServer::plain();
    let (big, small) = files(&server);
    let dir = TestDir::new();
    let d = Daemon::start(&dir, &["-d", &dir.arg(), "--rpc-secret=cli"]);
    let cli = |args: &[&str]| {
        let mut cmd = Command::new(&aria2p);
        cmd.args(["-p", &d.port.to_string(), "-s", "cli"])
            .args(args);
        run(cmd, Duration::from_secs(60))
    };
    cli(&["add", &server.url("/small.bin")]);
    cli(&["add", &server.url("/big.bin")]);
    let stopped_small = || {
        d.call(
            "aria2.tellStopped",
            json!([0, 10, ["gid", "status", "files"]]),
        )
        .as_array()
        .unwrap()
        .iter()
        .any(|s| s["status"] == "complete")
    };
    let start = std::time::Instant::now();
    while !stopped_small() {
        assert!(start.elapsed() < Duration::from_secs(20));
        std::thread::sleep(Duration::from_millis(50));
    }
    let active = d.call("aria2.tellActive", json!([["gid"]]));
    let gid = active[0]["gid"]
        .as_str()
        .expect("the big download runs")
        .to_string();
    let shown = cli(&["show"]);
    assert!(
        shown.contains("big.bin") && shown.contains("small.bin"),
        "{shown}"
    );
    cli(&["pause", &gid]);
    d.wait_for(&gid, Duration::from_secs(10), |s| s["status"] == "paused");
    cli(&["resume", &gid]);
    d.wait_for(&gid, Duration::from_secs(60), |s| s["status"] == "complete");
    assert_eq!(sha256_file(&dir.join("big.bin")), sha256_hex(&big));
    assert_eq!(sha256_file(&dir.join("small.bin")), sha256_hex(&small));
    let stat: Value = serde_json::from_str(&cli(&["call", "getGlobalStat"])).unwrap();
    assert_eq!(stat["numStopped"], "2", "{stat}");
    cli(&["remove", &gid]);
    assert_eq!(d.call("aria2.getGlobalStat", json!([]))["numStopped"], "1");
    cli(&["purge"]);
    assert_eq!(d.call("aria2.getGlobalStat", json!([]))["numStopped"], "0");
    cli(&["call", "shutdown"]);
    let ended = d.wait_exit(Duration::from_secs(10));
    assert_eq!(ended.code, Some(0), "{ended:?}");
}

#[test]
fn npm_aria2_over_http_and_websocket() {
    let modules = node_modules();
    if !require_peer("node and the npm aria2 package", modules.is_some()) {
        return;
    }
    let server = TestServer::plain();
    let (big, small) = files(&server);
    let dir = TestDir::new();
    let d = Daemon::start(&dir, &["-d", &dir.arg(), "--rpc-secret=n0de", "-x2"]);
    let mut cmd = Command::new("node");
    cmd.arg(script("npm_aria2_scenario.js"))
        .arg(d.port.to_string())
        .arg("n0de")
        .arg(server.url(""))
        .env("NODE_PATH", modules.unwrap());
    let out = run(cmd, Duration::from_secs(120));
    let report: Value = serde_json::from_str(out.lines().last().unwrap_or("")).expect(&out);
    let ended = d.wait_exit(Duration::from_secs(10));
    assert_eq!(ended.code, Some(0), "{ended:?}");
    assert_eq!(sha256_file(&dir.join("big.bin")), sha256_hex(&big));
    assert_eq!(sha256_file(&dir.join("ws.bin")), sha256_hex(&small));
    assert_eq!(sha256_file(&dir.join("http.bin")), sha256_hex(&small));
    let big_gid = report["big"].as_str().unwrap();
    let seen: Vec<&str> = report["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e[1] == big_gid)
        .map(|e| e[0].as_str().unwrap())
        .collect();
    assert_eq!(
        seen,
        [
            "onDownloadStart",
            "onDownloadPause",
            "onDownloadStart",
            "onDownloadComplete"
        ],
        "{report}"
    );
}
