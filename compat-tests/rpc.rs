//! Daemon mode against aria2c: one scenario of RPC calls run by aria2c and by ringdl as daemons,
//! each against its own test server holding the same files, and every answer compared field by
//! field. Before comparing, GIDs are replaced by their order of first appearance, the download
//! directory and the server's address by placeholders, and values that depend on time or speed
//! (`downloadSpeed`, `connections`, an active download's progress) are left out. Where ringdl
//! differs on purpose (K-RPC in KNOWN_DIFFERENCES.md), the step says so and checks ringdl's own
//! answer instead.
use std::collections::HashMap;
use std::time::Duration;

use serde_json::{json, Value};

use crate::support::rpc::Daemon;
use crate::support::server::{Route, TestServer};
use crate::support::{content, have_program, require_peer, sha256_file, sha256_hex, TestDir};

const MIB: usize = 1024 * 1024;

/// One program's run of the scenario.
struct Side {
    d: Daemon,
    server: TestServer,
    dir: TestDir,
    /// GIDs by the name the scenario gave them.
    gids: HashMap<&'static str, String>,
}

/// Puts the run's GIDs, URL base and directory in placeholders, and drops what depends on time.
fn normalize(v: &Value, side: &Side) -> Value {
    match v {
        Value::String(s) => {
            let mut s = s.clone();
            for (name, g) in &side.gids {
                s = s.replace(g.as_str(), &format!("<{name}>"));
            }
            s = s.replace(&side.server.url(""), "<url>");
            s = s.replace(&side.dir.arg(), "<dir>");
            Value::String(s)
        }
        Value::Array(a) => Value::Array(a.iter().map(|x| normalize(x, side)).collect()),
        Value::Object(m) => Value::Object(
            m.iter()
                .filter(|(k, _)| !matches!(k.as_str(), "downloadSpeed" | "connections"))
                .map(|(k, x)| (k.clone(), normalize(x, side)))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// Leaves `uris` out of `files` entries.
fn strip_uris(v: &mut Value) {
    match v {
        Value::Array(a) => a.iter_mut().for_each(strip_uris),
        Value::Object(m) => {
            if m.contains_key("selected") {
                m.remove("uris");
            }
            m.values_mut().for_each(strip_uris);
        }
        _ => {}
    }
}

fn start(program: &std::path::Path, big: &[u8], small: &[u8]) -> Side {
    let server = TestServer::plain();
    server.route(
        "/big.bin",
        Route::bytes(big.to_vec()).throttle(16 * 1024, Duration::from_millis(20)),
    );
    server.route("/small.bin", Route::bytes(small.to_vec()));
    let dir = TestDir::new();
    let d = Daemon::start_program(
        program,
        &dir,
        &[
            "-d",
            &dir.arg(),
            "-j1",
            "--rpc-secret=cmp",
            "--no-conf",
            "--max-download-limit=500K",
            "--console-log-level=warn",
        ],
    );
    Side {
        d,
        server,
        dir,
        gids: HashMap::new(),
    }
}

/// A call's answer: `{"result": ...}` or `{"error": ...}`, the URL placeholder filled in.
fn ask(side: &mut Side, method: &str, params: &Value) -> Value {
    let text = params.to_string().replace("<url>", &side.server.url(""));
    let mut p: Value = serde_json::from_str(&text).unwrap();
    if let Value::Array(a) = &mut p {
        for x in a.iter_mut() {
            if let Value::String(s) = x {
                if let Some(name) = s.strip_prefix('<').and_then(|n| n.strip_suffix('>')) {
                    if let Some(g) = side.gids.get(name) {
                        *s = g.clone();
                    }
                }
            }
        }
    }
    let v = side.d.try_call(method, p).expect("call");
    let mut out = serde_json::Map::new();
    if let Some(r) = v.get("result") {
        out.insert("result".into(), r.clone());
    }
    if let Some(e) = v.get("error") {
        out.insert("error".into(), e.clone());
    }
    Value::Object(out)
}

#[test]
fn a_daemon_session_answers_as_aria2cs() {
    if !require_peer("aria2c", have_program("aria2c")) {
        return;
    }
    let big = content(101, 3 * MIB + 11);
    let small = content(102, 70_000);
    let aria2c = std::path::PathBuf::from("aria2c");
    let ringdl = crate::support::binary_under_test();
    let mut sides = [start(&aria2c, &big, &small), start(&ringdl, &big, &small)];

    // (name the result as a GID, method, params, how to compare)
    #[derive(Clone, Copy, PartialEq)]
    enum Cmp {
        /// Both answers, normalized, are equal.
        Same,
        /// Only that both succeeded (or both failed).
        Kind,
    }
    let status_keys = json!(["gid", "status", "totalLength", "errorCode", "dir", "files"]);
    let steps: Vec<(Option<&'static str>, &str, Value, Cmp)> = vec![
        (
            Some("big"),
            "aria2.addUri",
            json!([["<url>/big.bin"]]),
            Cmp::Kind,
        ),
        (
            Some("held"),
            "aria2.addUri",
            json!([["<url>/small.bin"], {"pause": "true", "out": "held.bin"}]),
            Cmp::Kind,
        ),
        (
            Some("next"),
            "aria2.addUri",
            json!([["<url>/small.bin"], {"out": "next.bin"}]),
            Cmp::Kind,
        ),
        (
            Some("front"),
            "aria2.addUri",
            json!([["<url>/small.bin"], {"out": "front.bin"}, 0]),
            Cmp::Kind,
        ),
        (
            None,
            "aria2.tellWaiting",
            json!([0, 10, ["gid", "status"]]),
            Cmp::Same,
        ),
        (
            None,
            "aria2.tellWaiting",
            json!([-1, 2, ["gid", "status"]]),
            Cmp::Same,
        ),
        (
            None,
            "aria2.changePosition",
            json!(["<next>", 0, "POS_SET"]),
            Cmp::Same,
        ),
        (
            None,
            "aria2.changePosition",
            json!(["<next>", 5, "POS_CUR"]),
            Cmp::Same,
        ),
        (
            None,
            "aria2.changePosition",
            json!(["<next>", -1, "POS_END"]),
            Cmp::Same,
        ),
        (
            None,
            "aria2.changePosition",
            json!(["<next>", 0, "POS_BAD"]),
            Cmp::Same,
        ),
        (
            None,
            "aria2.tellWaiting",
            json!([0, 10, ["gid"]]),
            Cmp::Same,
        ),
        (
            None,
            "aria2.tellStatus",
            json!(["<held>", status_keys]),
            Cmp::Same,
        ),
        (None, "aria2.pause", json!(["<held>"]), Cmp::Same),
        (None, "aria2.unpause", json!(["<next>"]), Cmp::Same),
        (None, "aria2.pause", json!(["<next>"]), Cmp::Same),
        (None, "aria2.unpause", json!(["<next>"]), Cmp::Same),
        (None, "aria2.getUris", json!(["<held>"]), Cmp::Same),
        (None, "aria2.getFiles", json!(["<held>"]), Cmp::Same),
        (None, "aria2.getServers", json!(["<held>"]), Cmp::Same),
        (None, "aria2.tellStatus", json!(["zz"]), Cmp::Same),
        (
            None,
            "aria2.tellStatus",
            json!(["0123456789abcdef"]),
            Cmp::Same,
        ),
        (None, "aria2.tellStatus", json!([7]), Cmp::Same),
        (None, "aria2.tellStatus", json!([]), Cmp::Same),
        (None, "aria2.noSuchMethod", json!([]), Cmp::Same),
        (
            None,
            "aria2.addUri",
            json!([["<url>/small.bin"], {"split": "zero"}]),
            Cmp::Same,
        ),
        (
            None,
            "aria2.addUri",
            json!([["<url>/small.bin"], {}, -1]),
            Cmp::Same,
        ),
        (None, "aria2.addUri", json!([[]]), Cmp::Same),
        (None, "aria2.addUri", json!([["/etc/passwd"]]), Cmp::Same),
        (None, "aria2.getOption", json!(["<held>"]), Cmp::Kind),
        (
            None,
            "aria2.changeOption",
            json!(["<held>", {"split": "3", "no-such-option": "1"}]),
            Cmp::Same,
        ),
        (None, "aria2.remove", json!(["<held>"]), Cmp::Same),
        (None, "aria2.tellStatus", json!(["<held>"]), Cmp::Same),
        (None, "aria2.remove", json!(["<held>"]), Cmp::Same),
        (
            None,
            "system.multicall",
            json!([[
                {"methodName": "aria2.getGlobalStat", "params": ["token:cmp"]},
                {"methodName": "aria2.tellStatus", "params": ["token:wrong", "<big>"]},
                {"methodName": "system.multicall", "params": []},
                {"params": []}
            ]]),
            Cmp::Same,
        ),
        (
            None,
            "aria2.changeGlobalOption",
            json!([{"max-concurrent-downloads": "5", "max-download-limit": "0"}]),
            Cmp::Same,
        ),
        (
            None,
            "aria2.changeOption",
            json!(["<big>", {"max-download-limit": "0"}]),
            Cmp::Same,
        ),
    ];
    let wait_for_stopped = "4"; // big, next, front and the 404 below end up stopped.
    for (step, (name, method, params, cmp)) in steps.iter().enumerate() {
        let answers: Vec<Value> = sides
            .iter_mut()
            .map(|side| {
                let a = ask(side, method, params);
                if let (Some(n), Some(g)) = (name, a["result"].as_str()) {
                    side.gids.insert(n, g.to_string());
                }
                if step == 0 {
                    // Let the first one start before the others are queued behind it.
                    side.d
                        .wait_for(&side.gids["big"], Duration::from_secs(10), |s| {
                            s["status"] == "active"
                        });
                }
                normalize(&a, side)
            })
            .collect();
        match cmp {
            Cmp::Same => assert_eq!(
                answers[0], answers[1],
                "step {step} {method}({params}): aria2c (left) and ringdl (right) differ"
            ),
            Cmp::Kind => assert_eq!(
                answers[0].get("result").is_some(),
                answers[1].get("result").is_some(),
                "step {step} {method}({params}): {} / {}",
                answers[0],
                answers[1]
            ),
        }
    }
    // A missing file, then everything runs to its end.
    for side in sides.iter_mut() {
        let a = ask(side, "aria2.addUri", &json!([["<url>/missing.bin"]]));
        side.gids
            .insert("missing", a["result"].as_str().unwrap().to_string());
    }
    for side in &sides {
        let start = std::time::Instant::now();
        loop {
            let stat = side.d.call("aria2.getGlobalStat", json!([]));
            if stat["numStopped"] == wait_for_stopped && stat["numActive"] == "0" {
                break;
            }
            assert!(start.elapsed() < Duration::from_secs(60), "{stat}");
            std::thread::sleep(Duration::from_millis(50));
        }
        assert_eq!(sha256_file(&side.dir.join("big.bin")), sha256_hex(&big));
        assert_eq!(sha256_file(&side.dir.join("next.bin")), sha256_hex(&small));
    }
    let after: Vec<(&str, Value)> = vec![
        (
            "aria2.tellStopped",
            json!([
                0,
                10,
                [
                    "gid",
                    "status",
                    "errorCode",
                    "totalLength",
                    "completedLength"
                ]
            ]),
        ),
        (
            "aria2.tellStatus",
            json!(["<missing>", ["status", "errorCode", "totalLength", "files"]]),
        ),
        ("aria2.getFiles", json!(["<next>"])),
        ("aria2.getUris", json!(["<next>"])),
        ("aria2.getServers", json!(["<next>"])),
        ("aria2.removeDownloadResult", json!(["<front>"])),
        ("aria2.removeDownloadResult", json!(["<front>"])),
        ("aria2.getGlobalStat", json!([])),
        ("aria2.purgeDownloadResult", json!([])),
        ("aria2.getGlobalStat", json!([])),
        ("aria2.tellStopped", json!([0, 10])),
    ];
    for (method, params) in &after {
        let answers: Vec<Value> = sides
            .iter_mut()
            .map(|side| {
                let mut a = normalize(&ask(side, method, params), side);
                // aria2c lists a URI once more for each extra connection it gave it (`-s` over the
                // number of URIs); that is its bookkeeping, not the download's.
                strip_uris(&mut a);
                // The order downloads ended in is the machine's, not the program's.
                if *method == "aria2.tellStopped" {
                    if let Some(list) = a["result"].as_array_mut() {
                        list.sort_by_key(|x| x["gid"].to_string());
                    }
                }
                a
            })
            .collect();
        assert_eq!(
            answers[0], answers[1],
            "{method}({params}): aria2c (left) and ringdl (right) differ"
        );
    }
    let codes: Vec<Option<i32>> = sides
        .into_iter()
        .map(|side| {
            side.d.call("aria2.shutdown", json!([]));
            side.d.wait_exit(Duration::from_secs(15)).code
        })
        .collect();
    assert_eq!(codes[0], codes[1], "exit codes");
}

/// `--rpc-secure`: both serve JSON-RPC over https and wss with the same answers, refuse plain HTTP
/// on that port, and stop with the same exit code when the certificate or key is missing, bad or
/// absent.
#[test]
fn rpc_secure_serves_and_refuses_as_aria2c() {
    use crate::support::rpc::{http, http_over, Transport, WsClient};
    if !require_peer("aria2c", have_program("aria2c")) {
        return;
    }
    let ck = rcgen::generate_simple_self_signed(vec!["localhost".to_string()]).unwrap();
    let programs = [
        std::path::PathBuf::from("aria2c"),
        crate::support::binary_under_test(),
    ];
    let mut answers = Vec::new();
    let mut codes = Vec::new();
    for program in &programs {
        let dir = TestDir::new();
        let cert = dir.join("c.pem").display().to_string();
        let key = dir.join("k.pem").display().to_string();
        let junk = dir.join("junk.pem").display().to_string();
        std::fs::write(&cert, ck.cert.pem()).unwrap();
        std::fs::write(&key, ck.key_pair.serialize_pem()).unwrap();
        std::fs::write(&junk, "junk\n").unwrap();
        let tls = Transport::trusting(&ck.cert.pem());
        let d = Daemon::start_over(
            program,
            &dir,
            &[
                "--no-conf",
                "--rpc-secret=sec",
                "--rpc-secure",
                &format!("--rpc-certificate={cert}"),
                &format!("--rpc-private-key={key}"),
            ],
            tls.clone(),
        );
        let stat = d.call("aria2.getGlobalStat", json!([]));
        let (_, _, wrong) = http_over(
            &tls,
            d.port,
            "POST",
            "/jsonrpc",
            &[],
            br#"{"jsonrpc":"2.0","id":1,"method":"aria2.getGlobalStat","params":["token:wrong"]}"#,
        )
        .unwrap();
        let wrong: Value = serde_json::from_slice(&wrong).unwrap();
        let mut ws = WsClient::connect_over(&tls, d.port, &[]).unwrap();
        ws.send_text(
            r#"{"jsonrpc":"2.0","id":7,"method":"aria2.tellActive","params":["token:sec"]}"#,
        )
        .unwrap();
        let over_ws = ws.next_json().unwrap();
        let clear = http(d.port, "POST", "/jsonrpc", &[], b"{}")
            .ok()
            .map(|r| r.0);
        answers.push(json!({"stat": stat, "wrong": wrong, "ws": over_ws, "clear": clear}));
        d.call("aria2.shutdown", json!([]));
        let _ = d.wait_exit(Duration::from_secs(10));
        let port = format!(
            "--rpc-listen-port={}",
            crate::support::ports::port_for_child()
        );
        let cases: [Vec<String>; 4] = [
            vec![],
            vec![format!("--rpc-certificate={cert}")],
            vec![
                format!("--rpc-certificate={junk}"),
                format!("--rpc-private-key={key}"),
            ],
            vec![
                format!("--rpc-certificate={cert}"),
                "--rpc-private-key=/nonexistent/k.pem".to_string(),
            ],
        ];
        let mut these = Vec::new();
        for extra in cases {
            let mut args = vec![
                "--no-conf".to_string(),
                "--enable-rpc".to_string(),
                "--rpc-secure".to_string(),
                port.clone(),
            ];
            args.extend(extra);
            let r = crate::support::run_program(program, &dir, &args, Duration::from_secs(20));
            these.push(r.status);
        }
        codes.push(these);
    }
    assert_eq!(answers[0], answers[1], "aria2c first, ringdl second");
    assert_eq!(
        codes[0], codes[1],
        "exit codes: aria2c first, ringdl second"
    );
    assert_eq!(codes[1], [Some(1), Some(1), Some(1), Some(28)]);
}
