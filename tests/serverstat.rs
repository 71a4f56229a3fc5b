//! `--uri-selector` and the server performance profile (`--server-stat-if`, `--server-stat-of`,
//! `--server-stat-timeout`): which mirror a download's connections take, from what earlier
//! downloads (this run's, or a profile file's) measured. The profile's format is aria2c's; the
//! compat suite checks ringdl reads aria2c's file and writes the same lines.

use std::time::{SystemTime, UNIX_EPOCH};

use crate::support::dns::closed_port;
use crate::support::server::{Route, TestServer};
use crate::support::{content, ringdl, sha256_file, sha256_hex, TestDir};

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// One server with the same file as `/a.bin` and `/b.bin`; mirror A named by address, mirror B
/// by `localhost`, so the profile (which is by host) can tell them apart.
fn two_mirrors() -> (TestServer, Vec<u8>, [String; 2]) {
    let server = TestServer::plain();
    let data = content(0x5e1, 300_000);
    server.route("/a.bin", Route::bytes(data.clone()));
    server.route("/b.bin", Route::bytes(data.clone()));
    let a = format!("http://127.0.0.1:{}/a.bin", server.port());
    let b = format!("http://localhost:{}/b.bin", server.port());
    (server, data, [a, b])
}

fn profile(dir: &TestDir, text: &str) -> String {
    let path = dir.join("servers.txt");
    std::fs::write(&path, text).expect("profile");
    path.display().to_string()
}

/// Which of the two mirrors were asked, in order.
fn asked(server: &TestServer) -> Vec<String> {
    server
        .requests()
        .into_iter()
        .map(|r| r.path.clone())
        .collect()
}

#[test]
fn the_profile_is_written_in_aria2s_format() {
    let server = TestServer::plain();
    let data = content(0x5e2, 400_000);
    server.route("/f.bin", Route::bytes(data.clone()));
    let dir = TestDir::new();
    let of = dir.join("out.txt");
    let before = now();
    let run = ringdl(
        &dir,
        &[
            "--no-conf",
            "-d",
            &dir.arg(),
            &format!("--server-stat-of={}", of.display()),
            &server.url("/f.bin"),
        ],
    );
    assert_eq!(run.code(), 0, "{run}");
    assert!(
        run.stdout.contains("ServerStat file") && run.stdout.contains("saved successfully"),
        "{run}"
    );
    let text = std::fs::read_to_string(&of).expect("written");
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 1, "{text}");
    let fields: Vec<(&str, &str)> = lines[0]
        .split(", ")
        .map(|f| f.split_once('=').expect("key=value"))
        .collect();
    let keys: Vec<&str> = fields.iter().map(|f| f.0).collect();
    assert_eq!(
        keys,
        [
            "host",
            "protocol",
            "dl_speed",
            "sc_avg_speed",
            "mc_avg_speed",
            "last_updated",
            "counter",
            "status"
        ]
    );
    let get = |k: &str| {
        fields
            .iter()
            .find(|f| f.0 == k)
            .map(|f| f.1)
            .expect("field")
    };
    assert_eq!(get("host"), "127.0.0.1");
    assert_eq!(get("protocol"), "http");
    assert!(get("dl_speed").parse::<u64>().expect("speed") > 0, "{text}");
    // One connection: the single-connection average is the speed.
    assert_eq!(get("sc_avg_speed"), get("dl_speed"), "{text}");
    assert_eq!(get("mc_avg_speed"), "0");
    let at: u64 = get("last_updated").parse().expect("time");
    assert!(at >= before && at <= now(), "{text}");
    assert_eq!(get("counter"), "1");
    assert_eq!(get("status"), "OK");
    assert!(!dir.join("out.txt__temp").exists());
    assert_eq!(sha256_file(&dir.join("f.bin")), sha256_hex(&data));
}

#[test]
fn feedback_takes_the_fastest_known_server_and_inorder_the_first() {
    let t = now();
    let text = format!(
        "host=127.0.0.1, protocol=http, dl_speed=30000, sc_avg_speed=30000, mc_avg_speed=0, last_updated={t}, counter=2, status=OK\n\
         host=localhost, protocol=http, dl_speed=9000000, sc_avg_speed=9000000, mc_avg_speed=0, last_updated={t}, counter=2, status=OK\n"
    );
    for (selector, expect) in [
        ("feedback", "/b.bin"),
        ("adaptive", "/b.bin"),
        ("inorder", "/a.bin"),
    ] {
        let (server, data, [a, b]) = two_mirrors();
        let dir = TestDir::new();
        let path = profile(&dir, &text);
        let run = ringdl(
            &dir,
            &[
                "--no-conf",
                "-s1",
                "-d",
                &dir.arg(),
                "-o",
                "f.bin",
                &format!("--uri-selector={selector}"),
                &format!("--server-stat-if={path}"),
                &a,
                &b,
            ],
        );
        assert_eq!(run.code(), 0, "{selector}: {run}");
        assert!(run.stdout.contains("loaded successfully"), "{run}");
        assert_eq!(asked(&server), vec![expect.to_string()], "{selector}");
        assert_eq!(sha256_file(&dir.join("f.bin")), sha256_hex(&data));
    }
}

#[test]
fn stale_entries_are_dropped_and_failed_servers_skipped() {
    // B measured fast but long ago: with --server-stat-timeout=60 nothing is known, and the
    // order given decides.
    let old = now() - 3600;
    let text = format!(
        "host=localhost, protocol=http, dl_speed=9000000, sc_avg_speed=9000000, mc_avg_speed=0, last_updated={old}, counter=2, status=OK\n"
    );
    let (server, _, [a, b]) = two_mirrors();
    let dir = TestDir::new();
    let path = profile(&dir, &text);
    let run = ringdl(
        &dir,
        &[
            "--no-conf",
            "-s1",
            "-d",
            &dir.arg(),
            "--server-stat-timeout=60",
            &format!("--server-stat-if={path}"),
            &a,
            &b,
        ],
    );
    assert_eq!(run.code(), 0, "{run}");
    assert_eq!(asked(&server), vec!["/a.bin".to_string()]);

    // A failed (the profile says ERROR): feedback goes to B first.
    let text = format!(
        "host=127.0.0.1, protocol=http, dl_speed=0, sc_avg_speed=0, mc_avg_speed=0, last_updated={}, counter=0, status=ERROR\n",
        now()
    );
    let (server, _, [a, b]) = two_mirrors();
    let dir = TestDir::new();
    let path = profile(&dir, &text);
    let run = ringdl(
        &dir,
        &[
            "--no-conf",
            "-s1",
            "-d",
            &dir.arg(),
            &format!("--server-stat-if={path}"),
            &a,
            &b,
        ],
    );
    assert_eq!(run.code(), 0, "{run}");
    assert_eq!(asked(&server), vec!["/b.bin".to_string()]);
}

#[test]
fn a_server_that_refused_is_left_by_the_next_download_of_the_run() {
    // Two downloads in a list, each with a dead mirror (a refused port, named `localhost`) listed
    // before a good one. The first learns the dead one is dead; the second goes to the good one
    // at once, and the profile written at the end says so.
    let server = TestServer::plain();
    let data = content(0x5e3, 200_000);
    server.route("/1.bin", Route::bytes(data.clone()));
    server.route("/2.bin", Route::bytes(data.clone()));
    let dead = closed_port();
    let dir = TestDir::new();
    let list = dir.join("list.txt");
    let mut text = String::new();
    for n in 1..=2 {
        text.push_str(&format!(
            "http://localhost:{}/{n}.bin\thttp://127.0.0.1:{}/{n}.bin\n",
            dead.port(),
            server.port()
        ));
    }
    std::fs::write(&list, text).expect("list");
    let of = dir.join("out.txt");
    let run = ringdl(
        &dir,
        &[
            "--no-conf",
            "-j1",
            "-s1",
            "--console-log-level=info",
            "-d",
            &dir.arg(),
            "-i",
            &list.display().to_string(),
            &format!("--server-stat-of={}", of.display()),
        ],
    );
    assert_eq!(run.code(), 0, "{run}");
    let dead_tries: Vec<&str> = run
        .stdout
        .lines()
        .filter(|l| l.contains("Connecting to") && l.contains(&format!(":{}", dead.port())))
        .collect();
    let first_done = run
        .stdout
        .find("Download complete")
        .expect("a download completed");
    let last_dead = run
        .stdout
        .rfind(&format!(":{}", dead.port()))
        .expect("the dead mirror was tried");
    assert!(!dead_tries.is_empty(), "{run}");
    assert!(
        last_dead < first_done,
        "the second download tried the dead mirror:\n{run}"
    );
    let profile = std::fs::read_to_string(&of).expect("written");
    assert!(
        profile
            .lines()
            .any(|l| l.starts_with("host=localhost,") && l.ends_with("status=ERROR")),
        "{profile}"
    );
    assert!(
        profile
            .lines()
            .any(|l| l.starts_with("host=127.0.0.1,") && l.ends_with("status=OK")),
        "{profile}"
    );
    for n in 1..=2 {
        assert_eq!(
            sha256_file(&dir.join(&format!("{n}.bin"))),
            sha256_hex(&data)
        );
    }
}

#[test]
fn an_unreadable_profile_is_said_and_the_download_goes_on() {
    let (_server, data, [a, _]) = two_mirrors();
    let dir = TestDir::new();
    let run = ringdl(
        &dir,
        &[
            "--no-conf",
            "-d",
            &dir.arg(),
            "--server-stat-if=/nonexistent/servers.txt",
            &a,
        ],
    );
    assert_eq!(run.code(), 0, "{run}");
    assert!(
        run.stdout
            .contains("Failed to open ServerStat file /nonexistent/servers.txt"),
        "{run}"
    );
    assert_eq!(sha256_file(&dir.join("a.bin")), sha256_hex(&data));
}
