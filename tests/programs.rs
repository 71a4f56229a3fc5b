//! ringdl in aria2c's place under the programs that call aria2c: yt-dlp (from PyPI, with
//! `--downloader aria2c` and a cookies file), each run also with the real aria2c for comparison.
//! yt-dlp is looked for in `RINGDL_YTDLP`, then `target/peers/venv/bin/yt-dlp` (where `.ci/run`
//! installs it), then `PATH`; under `RINGDL_REQUIRE_PEERS=1` a missing one fails the test.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use crate::support::server::{Route, TestServer};
use crate::support::{
    binary_under_test, content, drain, have_program, isolated_command, require_peer, sha256_file,
    sha256_hex, TestDir,
};

fn yt_dlp() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("RINGDL_YTDLP") {
        return Some(PathBuf::from(p));
    }
    let venv = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/peers/venv/bin/yt-dlp");
    if venv.is_file() {
        return Some(venv);
    }
    have_program("yt-dlp").then(|| PathBuf::from("yt-dlp"))
}

/// What a program run printed and how it ended.
struct Ran {
    code: Option<i32>,
    output: String,
}

/// Runs `program args` in `dir` with an `aria2c` on `PATH` that is `aria2c_is`, and nothing of the
/// caller's configuration.
fn run_with_aria2c(program: &Path, args: &[String], dir: &TestDir, aria2c_is: &Path) -> Ran {
    let shim = dir.join("shim");
    std::fs::create_dir_all(&shim).unwrap();
    std::os::unix::fs::symlink(aria2c_is, shim.join("aria2c")).unwrap();
    let home = dir.join(".home");
    std::fs::create_dir_all(&home).unwrap();
    let mut cmd = isolated_command(program, dir.path(), &home);
    let path = format!("{}:/usr/local/bin:/usr/bin:/bin", shim.display());
    cmd.args(args).env("PATH", path);
    let started = Instant::now();
    let mut child = cmd.spawn().expect("start the program");
    let out = drain(child.stdout.take().expect("stdout"));
    let err = drain(child.stderr.take().expect("stderr"));
    let status = loop {
        if let Some(s) = child.try_wait().expect("wait") {
            break s;
        }
        if started.elapsed() > Duration::from_secs(120) {
            let _ = child.kill();
            break child.wait().expect("wait for the killed program");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let output = format!(
        "{}\n--- stderr ---\n{}",
        out.join().unwrap_or_default(),
        err.join().unwrap_or_default()
    );
    Ran {
        code: status.code(),
        output,
    }
}

fn which(program: &str) -> PathBuf {
    let out = Command::new("sh")
        .args(["-c", &format!("command -v {program}")])
        .output()
        .expect("sh");
    PathBuf::from(String::from_utf8_lossy(&out.stdout).trim())
}

/// yt-dlp with `--downloader aria2c` and `--cookies`, on a direct video URL that answers 403
/// without the session cookie. yt-dlp hands aria2c its cookies in a file (`--load-cookies`) along
/// with `--http-accept-gzip=true` and a dozen options more; ringdl used to ignore the cookies (exit
/// 22, the download failed) and warn about gzip in yt-dlp's output. Both must download the file
/// exactly, with the cookie on every request aria2c makes, and ringdl must print no warning.
#[test]
fn yt_dlp_with_cookies_downloads_through_ringdl_as_through_aria2c() {
    let Some(ytdlp) = yt_dlp() else {
        require_peer("yt-dlp", false);
        return;
    };
    let with_aria2c = require_peer("aria2c", have_program("aria2c"));
    let server = TestServer::plain();
    let data = content(401, 3 << 20);
    server.route(
        "/media/clip.mp4",
        Route::bytes(data.clone())
            .header("Content-Type", "video/mp4")
            .require("Cookie", "sid=tok3n", 403),
    );
    let mut runs = vec![("ringdl", binary_under_test())];
    if with_aria2c {
        runs.push(("aria2c", which("aria2c")));
    }
    for (who, aria2c_is) in runs {
        let dir = TestDir::new();
        let cookies = dir.join("cookies.txt");
        std::fs::write(
            &cookies,
            "# Netscape HTTP Cookie File\n127.0.0.1\tFALSE\t/\tFALSE\t0\tsid\ttok3n\n",
        )
        .unwrap();
        let args: Vec<String> = [
            "--ignore-config",
            "--no-cache-dir",
            "--no-progress",
            "--downloader",
            "aria2c",
            "--cookies",
            cookies.to_str().unwrap(),
            "-o",
            "clip.%(ext)s",
            &server.url("/media/clip.mp4"),
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let before = server.requests_to("/media/clip.mp4").len();
        let ran = run_with_aria2c(&ytdlp, &args, &dir, &aria2c_is);
        assert_eq!(ran.code, Some(0), "{who}:\n{}", ran.output);
        assert_eq!(
            sha256_file(&dir.join("clip.mp4")),
            sha256_hex(&data),
            "{who}:\n{}",
            ran.output
        );
        // yt-dlp's own look at the URL, then the downloader's request(s).
        let requests = server.requests_to("/media/clip.mp4")[before..].to_vec();
        assert!(
            requests.len() >= 2,
            "{who}: yt-dlp did not call it\n{}",
            ran.output
        );
        assert!(
            requests
                .iter()
                .all(|r| r.header("Cookie").is_some_and(|c| c.contains("sid=tok3n"))),
            "{who}"
        );
        if who == "ringdl" {
            assert!(!ran.output.contains("WARN"), "{}", ran.output);
        }
    }
}

/// apt-fast: it reads `aria2c -v`'s `Hash Algorithms:` line to decide whether to pass checksums
/// (without the line it printed "Checksums disabled" and took a corrupt package), then runs its
/// command line over a list of `URL`, ` checksum=sha-256=...`, ` out=NAME` entries. With one
/// mirror serving a corrupt package, aria2c exits 32 and keeps the good ones; so must ringdl.
#[test]
fn apt_fast_checksums_catch_a_corrupt_package_as_with_aria2c() {
    let server = TestServer::plain();
    let packages: Vec<(String, Vec<u8>)> = (0..3)
        .map(|i| {
            (
                format!("pkg{i}_1.0_amd64.deb"),
                content(420 + i, 1_500_000 + i as usize),
            )
        })
        .collect();
    let mut list = String::new();
    for (i, (name, data)) in packages.iter().enumerate() {
        let path = format!("/pool/{name}");
        let served = if i == 1 {
            let mut bad = data.clone();
            bad[700_000] ^= 0xff;
            bad
        } else {
            data.clone()
        };
        server.route(&path, Route::bytes(served));
        list.push_str(&format!(
            "{}\n checksum=sha-256={}\n out={name}\n",
            server.url(&path),
            sha256_hex(data)
        ));
    }
    let mut runs = vec![("ringdl", binary_under_test())];
    if require_peer("aria2c", have_program("aria2c")) {
        runs.push(("aria2c", which("aria2c")));
    }
    for (who, program) in runs {
        // apt-fast's check: `aria2c -v | grep "Hash Algorithms"`, then the names it offers.
        let version = Command::new(&program).arg("-v").output().expect("-v");
        let version = String::from_utf8_lossy(&version.stdout);
        let hashes = version
            .lines()
            .find_map(|l| l.strip_prefix("Hash Algorithms: "))
            .unwrap_or_else(|| {
                panic!("{who}: no Hash Algorithms line, apt-fast disables checksums")
            });
        assert!(
            hashes.split(", ").any(|h| h == "sha-256"),
            "{who}: {hashes}"
        );

        let dir = TestDir::new();
        let args = crate::support::apt_fast_args(&dir, &list);
        let run = crate::support::run_program(&program, &dir, &args, Duration::from_secs(60));
        assert_eq!(run.code(), 32, "{who}\n{run}");
        assert!(run.lines_with("WARN").is_empty(), "{who}\n{run}");
        for (i, (name, data)) in packages.iter().enumerate() {
            let path = dir.join(name);
            if i == 1 {
                let same = path.exists() && sha256_file(&path) == sha256_hex(data);
                assert!(!same, "{who}: the corrupt package cannot match its digest");
            } else {
                assert_eq!(sha256_file(&path), sha256_hex(data), "{who} {name}\n{run}");
            }
        }
    }
}
