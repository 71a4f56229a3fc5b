//! The server performance profile against aria2c: both write the same lines (numbers aside) for
//! the same download, and each reads the other's file (the counter it finds goes on).

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::support::server::{Route, TestServer};
use crate::support::{
    binary_under_test, content, have_program, require_peer, run_program, TestDir,
};

const DEADLINE: Duration = Duration::from_secs(30);

/// Downloads `/f.bin` with `program`, reading the profile `read` (if any) and writing `write`.
fn download(program: &Path, server: &TestServer, read: Option<&Path>, write: &Path) {
    let dir = TestDir::new();
    let mut args = vec![
        "--no-conf".to_string(),
        "-d".to_string(),
        dir.arg(),
        format!("--server-stat-of={}", write.display()),
        server.url("/f.bin"),
    ];
    if let Some(r) = read {
        args.push(format!("--server-stat-if={}", r.display()));
    }
    let run = run_program(program, &dir, &args, DEADLINE);
    assert_eq!(run.code(), 0, "{run}");
}

/// The profile's line for 127.0.0.1 with every number replaced by `N`, and its counter.
fn masked(path: &Path) -> (String, u32) {
    let text = std::fs::read_to_string(path).expect("profile written");
    let line = text
        .lines()
        .find(|l| l.starts_with("host=127.0.0.1,"))
        .unwrap_or_else(|| panic!("no line for 127.0.0.1 in {text}"));
    let counter = line
        .split(", ")
        .find_map(|f| f.strip_prefix("counter="))
        .and_then(|n| n.parse().ok())
        .expect("counter");
    let mut out = String::new();
    let mut in_number = false;
    for ch in line.chars() {
        if ch.is_ascii_digit() && !out.ends_with("127.0.0.") && !out.ends_with("127.0.") {
            if !in_number {
                out.push('N');
            }
            in_number = true;
        } else {
            in_number = false;
            out.push(ch);
        }
    }
    (out, counter)
}

#[test]
fn profiles_match_aria2c_and_each_reads_the_others() {
    if !require_peer("aria2c", have_program("aria2c")) {
        return;
    }
    let server = TestServer::plain();
    // Slow enough that aria2c measures a speed (it counts none for a download under a second).
    server.route(
        "/f.bin",
        Route::bytes(content(0x5e7, 600_000)).throttle(64 * 1024, Duration::from_millis(150)),
    );
    let files = TestDir::new();
    let aria2c = PathBuf::from("aria2c");
    let ringdl = binary_under_test();
    let (a, r) = (files.join("aria2c.txt"), files.join("ringdl.txt"));
    download(&aria2c, &server, None, &a);
    download(&ringdl, &server, None, &r);
    let (la, ca) = masked(&a);
    let (lr, cr) = masked(&r);
    assert_eq!(lr, la, "ringdl's line, aria2c's line");
    assert_eq!((ca, cr), (1, 1));
    // Each reads the other's file: the counter goes on from it.
    let (a2, r2) = (files.join("aria2c-2.txt"), files.join("ringdl-2.txt"));
    download(&aria2c, &server, Some(&r), &a2);
    download(&ringdl, &server, Some(&a), &r2);
    assert_eq!(masked(&a2).1, 2, "aria2c read ringdl's profile");
    assert_eq!(masked(&r2).1, 2, "ringdl read aria2c's profile");
}
