//! Real RPC clients driving ringdl's daemon mode: aria2p (PyPI; its library and its CLI) and the npm
//! `aria2` package (HTTP and WebSocket), each adding, polling, pausing, resuming, removing,
//! changing options and shutting down, with every finished file checked by SHA-256. The clients
//! are found in `target/peers/` (where `.ci/run` installs them) or in `RINGDL_PYTHON` /
//! `RINGDL_NODE_MODULES`; without them the tests skip loudly (fail under `RINGDL_REQUIRE_PEERS=1`).
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use serde_json::{json, Value};

use crate::support::rpc::{Daemon, Transport};
use crate::support::server::{Route, TestServer};
use crate::support::{binary_under_test, content, require_peer, sha256_file, sha256_hex, TestDir};

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
    // A Metalink an addUri download fetches and follows (its URL relative to its own).
    server.route(
        "/follow.meta4",
        Route::bytes(
            b"<?xml version=\"1.0\"?><metalink xmlns=\"urn:ietf:params:xml:ns:metalink\">\
              <file name=\"followed.bin\"><url>small.bin</url></file></metalink>"
                .to_vec(),
        ),
    );
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
    npm_aria2_scenario(false);
}

/// The same scenario with `--rpc-secure`: https and wss, Node trusting the daemon's certificate.
#[test]
fn npm_aria2_over_https_and_wss() {
    npm_aria2_scenario(true);
}

fn npm_aria2_scenario(secure: bool) {
    let modules = node_modules();
    if !require_peer("node and the npm aria2 package", modules.is_some()) {
        return;
    }
    let server = TestServer::plain();
    let (big, small) = files(&server);
    let dir = TestDir::new();
    let mut args = vec![
        "-d".to_string(),
        dir.arg(),
        "--rpc-secret=n0de".into(),
        "-x2".into(),
    ];
    let mut transport = Transport::Plain;
    let cert = dir.join("rpc-cert.pem");
    if secure {
        let ck = rcgen::generate_simple_self_signed(vec!["localhost".to_string()]).unwrap();
        let key = dir.join("rpc-key.pem");
        std::fs::write(&cert, ck.cert.pem()).unwrap();
        std::fs::write(&key, ck.key_pair.serialize_pem()).unwrap();
        args.push("--rpc-secure".into());
        args.push(format!("--rpc-certificate={}", cert.display()));
        args.push(format!("--rpc-private-key={}", key.display()));
        transport = Transport::trusting(&ck.cert.pem());
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let d = Daemon::start_over(&binary_under_test(), &dir, &args, transport);
    let mut cmd = Command::new("node");
    cmd.arg(script("npm_aria2_scenario.js"))
        .arg(d.port.to_string())
        .arg("n0de")
        .arg(server.url(""))
        .env("NODE_PATH", modules.unwrap());
    if secure {
        cmd.arg("secure").env("NODE_EXTRA_CA_CERTS", &cert);
    }
    let out = run(cmd, Duration::from_secs(120));
    let report: Value = serde_json::from_str(out.lines().last().unwrap_or("")).expect(&out);
    let ended = d.wait_exit(Duration::from_secs(10));
    assert_eq!(ended.code, Some(0), "{ended:?}");
    assert_eq!(sha256_file(&dir.join("big.bin")), sha256_hex(&big));
    assert_eq!(sha256_file(&dir.join("ws.bin")), sha256_hex(&small));
    assert_eq!(sha256_file(&dir.join("http.bin")), sha256_hex(&small));
    assert_eq!(sha256_file(&dir.join("meta.bin")), sha256_hex(&small));
    assert_eq!(sha256_file(&dir.join("followed.bin")), sha256_hex(&small));
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

/// AriaNg's list keys (`aria2TaskService.js`): the basic set, and the full set of the detail page.
const ARIANG_BASIC_KEYS: &[&str] = &[
    "gid",
    "totalLength",
    "completedLength",
    "uploadSpeed",
    "downloadSpeed",
    "connections",
    "numSeeders",
    "seeder",
    "status",
    "errorCode",
    "verifiedLength",
    "verifyIntegrityPending",
];

/// Sends requests shaped as AriaNg's (from its source: `jsonrpc` 2.0, unique string ids, the token
/// in front of `aria2.*` parameters only, `Content-Type: application/json` and an `Origin`), over
/// HTTP after a CORS preflight, or over one WebSocket.
struct AriaNg<'a> {
    d: &'a Daemon,
    ws: Option<crate::support::rpc::WsClient>,
    next: u64,
}

impl AriaNg<'_> {
    fn call(&mut self, method: &str, params: Value) -> Value {
        let mut p = params.as_array().cloned().unwrap_or_default();
        if method.starts_with("aria2.") {
            p.insert(0, json!("token:ng"));
        }
        self.raw(method, Value::Array(p))
    }

    fn raw(&mut self, method: &str, params: Value) -> Value {
        self.next += 1;
        let id = format!("{}-{}", 1_700_000_000_000u64 + self.next, self.next);
        let body = json!({"jsonrpc": "2.0", "method": method, "id": id, "params": params});
        let v = match self.ws.as_mut() {
            Some(ws) => {
                ws.send_text(&body.to_string()).unwrap();
                loop {
                    let m = ws.next_json().unwrap();
                    if m["id"] == id {
                        break m;
                    }
                }
            }
            None => {
                let origin = [("Origin", "https://ariang.example")];
                let (status, head, _) = crate::support::rpc::http(
                    self.d.port,
                    "OPTIONS",
                    "/jsonrpc",
                    &[
                        origin[0],
                        ("Access-Control-Request-Method", "POST"),
                        ("Access-Control-Request-Headers", "content-type"),
                    ],
                    b"",
                )
                .unwrap();
                assert_eq!(status, 200);
                assert!(head.contains("Access-Control-Allow-Origin: *"), "{head}");
                let (_, head, text) = crate::support::rpc::http(
                    self.d.port,
                    "POST",
                    "/jsonrpc",
                    &[
                        origin[0],
                        ("Content-Type", "application/json;charset=UTF-8"),
                    ],
                    body.to_string().as_bytes(),
                )
                .unwrap();
                assert!(head.contains("Access-Control-Allow-Origin: *"), "{head}");
                serde_json::from_slice(&text).unwrap()
            }
        };
        assert_eq!(v["id"], id, "{v}");
        v
    }

    fn ok(&mut self, method: &str, params: Value) -> Value {
        let v = self.call(method, params.clone());
        match v.get("result") {
            Some(r) => r.clone(),
            None => panic!("{method}({params}): {v}"),
        }
    }

    /// One refresh of the list page and the header statistics.
    fn refresh(&mut self) -> Vec<Value> {
        let keys = json!(ARIANG_BASIC_KEYS);
        let mut all = Vec::new();
        for (m, p) in [
            ("aria2.tellActive", json!([keys])),
            ("aria2.tellWaiting", json!([0, 1000, keys])),
            ("aria2.tellStopped", json!([-1, 1000, keys])),
        ] {
            all.extend(self.ok(m, p).as_array().unwrap().iter().cloned());
        }
        let stat = self.ok("aria2.getGlobalStat", json!([]));
        assert!(stat["numActive"].is_string(), "{stat}");
        all
    }

    fn status_of(&mut self, gid: &str) -> String {
        let all = self.refresh();
        let t = all
            .iter()
            .find(|t| t["gid"] == gid)
            .unwrap_or_else(|| panic!("{gid} not listed"));
        // Stopped tasks carry errorCode; none carries BitTorrent keys.
        assert!(
            t.get("numSeeders").is_none() && t.get("bitfield").is_none(),
            "{t}"
        );
        t["status"].as_str().unwrap().to_string()
    }

    fn until(&mut self, gid: &str, status: &str) {
        let start = std::time::Instant::now();
        while self.status_of(gid) != status {
            assert!(
                start.elapsed() < Duration::from_secs(60),
                "{gid} never {status}"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

/// AriaNg's sessions: new tasks (one paused, headers as an array), the list polled, the detail
/// page's multicall, the settings tab, pause/start/remove, retry of a failed task, reordering,
/// global settings, save and shut down.
fn ariang_session(
    ng: &mut AriaNg<'_>,
    server: &TestServer,
    dir: &TestDir,
    big: &[u8],
    small: &[u8],
) {
    let methods = ng.raw("system.listMethods", json!([]));
    assert_eq!(methods["result"].as_array().unwrap().len(), 36);
    assert!(ng.ok("aria2.getVersion", json!([]))["version"].is_string());
    ng.ok("aria2.getGlobalOption", json!([]));
    let big_gid = ng.ok(
        "aria2.addUri",
        json!([[server.url("/big.bin")], {"header": ["X-Ng: 1"], "split": "2"}]),
    );
    let big_gid = big_gid.as_str().unwrap().to_string();
    let paused = ng.ok(
        "aria2.addUri",
        json!([[server.url("/small.bin")], {"pause": "true", "out": "ng-small.bin"}]),
    );
    let paused = paused.as_str().unwrap().to_string();
    assert_eq!(ng.status_of(&paused), "paused");
    // The detail page: tellStatus, then a multicall of it (no getPeers for HTTP tasks).
    let detail = ng.ok("aria2.tellStatus", json!([big_gid]));
    assert_eq!(detail["files"][0]["uris"][0]["uri"], server.url("/big.bin"));
    let multi = ng.raw(
        "system.multicall",
        json!([[{"methodName": "aria2.tellStatus", "params": ["token:ng", big_gid]}]]),
    );
    assert_eq!(multi["result"][0][0]["gid"], big_gid, "{multi}");
    // The settings tab.
    let opts = ng.ok("aria2.getOption", json!([big_gid]));
    assert_eq!(opts["split"], "2");
    assert_eq!(
        ng.ok(
            "aria2.changeOption",
            json!([big_gid, {"max-download-limit": "1M"}])
        ),
        "OK"
    );
    // Pause and start from the list.
    ng.until(&big_gid, "active");
    assert_eq!(ng.ok("aria2.forcePause", json!([big_gid])), big_gid);
    ng.until(&big_gid, "paused");
    assert_eq!(
        ng.ok("aria2.changePosition", json!([paused, 0, "POS_SET"])),
        0
    );
    assert_eq!(ng.ok("aria2.unpause", json!([paused])), paused);
    assert_eq!(ng.ok("aria2.unpause", json!([big_gid])), big_gid);
    let v = ng.call(
        "aria2.changeOption",
        json!([big_gid, {"max-download-limit": "0"}]),
    );
    // Paused near its start, it cannot have finished yet (it did when a paused download went on
    // fetching).
    assert_eq!(v["result"], "OK", "{v}");
    ng.until(&paused, "complete");
    ng.until(&big_gid, "complete");
    let st = ng.ok("aria2.tellStatus", json!([big_gid]));
    assert_eq!(
        sha256_file(&dir.join("big.bin")),
        sha256_hex(big),
        "{} bytes; {st}",
        std::fs::metadata(dir.join("big.bin")).map_or(0, |m| m.len())
    );
    assert_eq!(sha256_file(&dir.join("ng-small.bin")), sha256_hex(small));
    // Retry of a failed task: its status and options, the same URIs and options again, the old
    // result removed.
    let failed = ng.ok("aria2.addUri", json!([[server.url("/gone.bin")]]));
    let failed = failed.as_str().unwrap().to_string();
    ng.until(&failed, "error");
    let both = ng.raw(
        "system.multicall",
        json!([[
            {"methodName": "aria2.tellStatus", "params": ["token:ng", failed]},
            {"methodName": "aria2.getOption", "params": ["token:ng", failed]}
        ]]),
    );
    let uri = both["result"][0][0]["files"][0]["uris"][0]["uri"].clone();
    let options = both["result"][1][0].clone();
    assert!(options.is_object(), "{both}");
    server.route("/gone.bin", Route::bytes(small.to_vec()));
    let again = ng.ok("aria2.addUri", json!([[uri], options]));
    assert_eq!(ng.ok("aria2.removeDownloadResult", json!([failed])), "OK");
    let again = again.as_str().unwrap().to_string();
    ng.until(&again, "complete");
    assert_eq!(
        sha256_file(&dir.join("gone.bin")),
        sha256_hex(small),
        "{:?} {}",
        dir.entries(),
        ng.ok("aria2.tellStatus", json!([again]))
    );
    // Remove from the list, clear stopped, global settings, save, shut down.
    let extra = ng.ok(
        "aria2.addUri",
        json!([[server.url("/small.bin")], {"pause": "true", "out": "x.bin"}]),
    );
    assert_eq!(ng.ok("aria2.forceRemove", json!([extra])), extra);
    assert_eq!(ng.ok("aria2.purgeDownloadResult", json!([])), "OK");
    assert_eq!(
        ng.ok(
            "aria2.changeGlobalOption",
            json!([{"max-overall-download-limit": "0"}])
        ),
        "OK"
    );
    assert_eq!(ng.ok("aria2.saveSession", json!([])), "OK");
    assert!(ng.refresh().is_empty());
    assert_eq!(ng.ok("aria2.shutdown", json!([])), "OK");
}

#[test]
fn ariang_request_sequences_over_http_and_websocket() {
    for websocket in [false, true] {
        let server = TestServer::plain();
        let (big, small) = files(&server);
        let dir = TestDir::new();
        let session = format!("--save-session={}", dir.join("ng.session").display());
        let mut args = vec![
            "-d".to_string(),
            dir.arg(),
            "--rpc-secret=ng".into(),
            session,
        ];
        if !websocket {
            // AriaNg's HTTP mode needs it: the browser's preflight must be answered.
            args.push("--rpc-allow-origin-all".into());
        }
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let d = Daemon::start(&dir, &args);
        let ws = websocket.then(|| {
            crate::support::rpc::WsClient::connect(d.port, &[("Origin", "https://ariang.example")])
                .expect("AriaNg's WebSocket, with a secret and a foreign origin")
        });
        let mut ng = AriaNg { d: &d, ws, next: 0 };
        ariang_session(&mut ng, &server, &dir, &big, &small);
        let ended = d.wait_exit(Duration::from_secs(10));
        // The failed try's result was removed (the retry replaced it): exit 0, as aria2c's.
        assert_eq!(ended.code, Some(0), "websocket={websocket}: {ended:?}");
        assert!(dir.join("ng.session").is_file());
    }
}

/// aria2p's own suite's tests that need BitTorrent (a torrent, a magnet): the only ones allowed
/// to fail. (Its Metalink tests, `aria2.addMetalink` through the API, the client and the CLI,
/// pass.)
const ARIA2P_NEEDS_BT: &[&str] = &[
    "tests/test_api.py::test_add_magnet_method",
    "tests/test_api.py::test_add_torrent_method",
    "tests/test_cli.py::test_add_magnet_subcommand",
    "tests/test_cli.py::test_add_torrent_subcommand",
    "tests/test_client.py::TestClientClass::test_add_torrent_method",
    // Adds a magnet first, then HTTP mirrors.
    "tests/test_client.py::TestClientClass::test_add_uri_method",
];

/// aria2p's whole test suite (from its sdist, which `.ci/run` unpacks in `target/peers/`), run
/// with ringdl as the `aria2c` its fixtures start: everything passes but the cases that need
/// BitTorrent. Its own configuration is kept but for coverage (it reruns a failing
/// test up to five times, as its CI does, for the races it has with aria2c too); `CI` skips the
/// two tests that need a clipboard, as on its CI.
#[test]
fn aria2p_own_suite_passes_but_for_bittorrent() {
    let python = python();
    let suite = peers().join("aria2p-suite/aria2p-0.12.3");
    let ready = python.as_ref().is_some_and(|p| {
        suite.join("tests/conftest.py").is_file()
            && Command::new(p)
                .args([
                    "-c",
                    "import pytest, xdist, fastapi, uvicorn, psutil, griffe, mkdocstrings",
                ])
                .output()
                .is_ok_and(|o| o.status.success())
    });
    if !require_peer("aria2p's test suite", ready) {
        return;
    }
    let python = python.expect("checked");
    // `aria2c` on the PATH is ringdl.
    let shim = TestDir::new();
    std::os::unix::fs::symlink(binary_under_test(), shim.join("aria2c")).expect("symlink");
    let venv_bin = python.parent().expect("venv bin").to_path_buf();
    let path = std::env::join_paths([shim.path().to_path_buf(), venv_bin].into_iter().chain(
        std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()),
    ))
    .expect("PATH");
    // What an interrupted earlier run may have left: its port registry and the lock guarding it
    // (the suite's fixtures wait for that lock forever).
    let _ = std::fs::remove_dir(suite.join(".lockdir"));
    let _ = std::fs::remove_file(suite.join(".ports.json"));
    let mut child = Command::new(&python)
        .current_dir(&suite)
        .env("PATH", path)
        .env("CI", "1")
        .args([
            "-m",
            "pytest",
            "-p",
            "no:cacheprovider",
            "-p",
            "no:randomly",
            "-o",
            "addopts=--reruns 5 --reruns-delay 0.1",
            "-n",
            "2",
            "-q",
            "-rfEs",
            "tests",
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("run pytest");
    let out = crate::support::drain(child.stdout.take().expect("stdout"));
    let err = crate::support::drain(child.stderr.take().expect("stderr"));
    // A hung suite fails the test instead of the whole run.
    let started = std::time::Instant::now();
    let finished = loop {
        if child.try_wait().expect("wait").is_some() {
            break true;
        }
        if started.elapsed() > Duration::from_secs(600) {
            let _ = child.kill();
            let _ = child.wait();
            break false;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let text = out.join().unwrap_or_default() + &err.join().unwrap_or_default();
    assert!(
        finished,
        "aria2p's suite did not end in 10 minutes:\n{text}"
    );
    let failed: Vec<&str> = text
        .lines()
        .filter_map(|l| {
            l.strip_prefix("FAILED ")
                .or_else(|| l.strip_prefix("ERROR "))
        })
        .map(|l| l.split(' ').next().unwrap_or(l))
        .collect();
    let unexpected: Vec<&&str> = failed
        .iter()
        .filter(|f| !ARIA2P_NEEDS_BT.contains(f))
        .collect();
    assert!(
        unexpected.is_empty(),
        "aria2p's tests failed: {unexpected:?}\n{text}"
    );
    // The suite ran: hundreds of tests passed (a suite that collected nothing passes nothing).
    let summary = text.lines().last().unwrap_or_default();
    let passed: u32 = summary
        .split(", ")
        .find_map(|p| {
            p.trim_start_matches(|c: char| !c.is_ascii_digit())
                .strip_suffix(" passed")
        })
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or(0);
    assert!(passed >= 600, "only {passed} passed: {summary}\n{text}");
    eprintln!("aria2p's suite against ringdl: {summary}; failed: {failed:?}");
}
