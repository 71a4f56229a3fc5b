//! The aria2c command line end to end: help listings against aria2c's own, config files and `-i`
//! lists driving real downloads, and bad input rejected before anything starts.

use std::path::Path;
use std::process::Command;

use crate::support::server::{Route, TestServer};
use crate::support::{
    content, have_program, require_peer, ringdl, sha256_file, sha256_hex, TestDir,
};

/// Long option names listed by a `--help=#all` output.
fn listed_names(help: &str) -> std::collections::BTreeSet<String> {
    help.lines()
        .filter(|l| l.starts_with(" -"))
        .filter_map(|l| {
            let start = l.find("--")? + 2;
            let rest = &l[start..];
            let end = rest.find(['=', '[', ' ']).unwrap_or(rest.len());
            Some(rest[..end].to_string())
        })
        .collect()
}

#[test]
fn help_all_lists_the_same_options_as_aria2c() {
    if !require_peer("aria2c", have_program("aria2c")) {
        return;
    }
    let dir = TestDir::new();
    let ours = ringdl(&dir, &["--help=#all"]);
    assert_eq!(ours.code(), 0, "{ours}");
    let theirs = Command::new("aria2c").arg("--help=#all").output().unwrap();
    let theirs = String::from_utf8_lossy(&theirs.stdout);
    let (a, b) = (listed_names(&ours.stdout), listed_names(&theirs));
    assert!(b.len() >= 190, "aria2c listed only {}", b.len());
    let missing: Vec<_> = b.difference(&a).collect();
    // The one aria2 1.37 option the 1.36 oracle lacks (K-VERSION), and ringdl's own
    // (K-HELPTEXT).
    let extra: Vec<_> = a
        .difference(&b)
        .filter(|n| !["no-want-digest-header", "engine"].contains(&n.as_str()))
        .collect();
    assert!(
        missing.is_empty() && extra.is_empty(),
        "missing {missing:?}, extra {extra:?}"
    );
}

#[test]
fn config_file_options_apply_and_the_command_line_wins() {
    let server = TestServer::plain();
    let data = content(41, 3 << 20);
    server.route("/c.bin", Route::bytes(data.clone()));
    let dir = TestDir::new();
    let conf = dir.join("my.conf");
    let out = dir.join("outdir");
    std::fs::write(
        &conf,
        format!(
            "# set by config\ndir={}\nout=from-conf.bin\nmax-connection-per-server=4\nsplit=4\nmin-split-size=1M\nfollow-torrent=false\nno-such-option=1\n",
            out.display()
        ),
    )
    .unwrap();
    let run = ringdl(
        &dir,
        &[
            &format!("--conf-path={}", conf.display()),
            "-o",
            "from-cli.bin",
            &server.url("/c.bin"),
        ],
    );
    assert_eq!(run.code(), 0, "{run}");
    assert_eq!(sha256_file(&out.join("from-cli.bin")), sha256_hex(&data));
    assert!(!out.join("from-conf.bin").exists());
    assert!(
        run.stdout.contains("Unknown option: no-such-option=1"),
        "{run}"
    );
    // follow-torrent=false is aria2's default: nothing to warn about.
    assert!(!run.stdout.contains("BitTorrent"), "{run}");
    let ranged = server
        .requests_to("/c.bin")
        .iter()
        .filter(|r| r.range().is_some())
        .count();
    assert!(
        ranged >= 1,
        "the config's -x4 -s4 -k1M did not split the download"
    );
}

#[test]
fn default_config_is_read_from_home_and_no_conf_skips_it() {
    let server = TestServer::plain();
    server.route("/h.bin", Route::bytes(content(42, 1000)));
    let dir = TestDir::new();
    // support::ringdl runs with HOME=<dir>/.home
    let home_conf = dir.join(".home/.aria2");
    std::fs::create_dir_all(&home_conf).unwrap();
    std::fs::write(home_conf.join("aria2.conf"), "out=renamed-by-conf.bin\n").unwrap();
    let run = ringdl(&dir, &["-d", &dir.arg(), &server.url("/h.bin")]);
    assert_eq!(run.code(), 0, "{run}");
    assert!(
        dir.join("renamed-by-conf.bin").exists(),
        "{:?}",
        dir.entries()
    );
    let run = ringdl(
        &dir,
        &["--no-conf", "-d", &dir.arg(), &server.url("/h.bin")],
    );
    assert_eq!(run.code(), 0, "{run}");
    assert!(dir.join("h.bin").exists(), "{:?}", dir.entries());
}

#[test]
fn input_file_entries_with_mirrors_and_their_own_options() {
    let (a, b) = (TestServer::plain(), TestServer::plain());
    let one = content(43, 2000);
    let two = content(44, 3000);
    a.route("/one", Route::bytes(one.clone()));
    b.route("/one", Route::bytes(one.clone()));
    a.route("/two", Route::bytes(two.clone()));
    let dir = TestDir::new();
    let list = dir.join("list.txt");
    std::fs::write(
        &list,
        format!(
            "# two downloads\n{}\t{}\n  out=first.bin\n  dir={}\n\n{}\n  max-connection-per-server=2\n  bogus=1\n",
            a.url("/one"),
            b.url("/one"),
            dir.join("sub").display(),
            a.url("/two")
        ),
    )
    .unwrap();
    // The global -o is not inherited by list entries.
    let run = ringdl(
        &dir,
        &[
            "-d",
            &dir.arg(),
            "-o",
            "global.bin",
            "-i",
            list.to_str().unwrap(),
        ],
    );
    assert_eq!(run.code(), 0, "{run}");
    assert_eq!(sha256_file(&dir.join("sub/first.bin")), sha256_hex(&one));
    assert_eq!(sha256_file(&dir.join("two")), sha256_hex(&two));
    assert!(!dir.join("global.bin").exists());
    assert!(run.stdout.contains("Downloading 2 item(s)"), "{run}");
    assert!(run.stdout.contains("Unknown option:   bogus=1"), "{run}");
}

/// `--save-session` without RPC writes, at exit, the downloads that did not finish as an input
/// list (URIs with aria2's trailing TAB, ` gid=`, the command line's per-download options and the
/// entry's own), so that `-i` of it retries them; an empty file when everything finished. ringdl
/// wrote nothing outside daemon mode.
#[test]
fn save_session_without_rpc_lists_what_did_not_finish() {
    let server = TestServer::plain();
    let data = content(45, 50_000);
    server.route("/ok.bin", Route::bytes(data.clone()));
    server.route("/gone", Route::status(404));
    server.route("/later.bin", Route::bytes(data.clone()));
    let dir = TestDir::new();
    let list = dir.join("list.txt");
    std::fs::write(
        &list,
        format!(
            "{}\n{}\t{}\n  split=3\n",
            server.url("/ok.bin"),
            server.url("/gone"),
            server.url("/gone")
        ),
    )
    .unwrap();
    let session = dir.join("s.txt");
    let d = dir.arg();
    let (l, s) = (list.display().to_string(), session.display().to_string());
    let run = ringdl(
        &dir,
        &[
            "--no-conf",
            "-d",
            &d,
            "--max-tries=1",
            "-i",
            &l,
            "--save-session",
            &s,
        ],
    );
    assert_eq!(run.code(), 3, "{run}");
    assert!(
        run.stdout
            .contains(&format!("Serialized session to '{s}' successfully.")),
        "{run}"
    );
    let text = std::fs::read_to_string(&session).unwrap();
    let gone = server.url("/gone");
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[0], format!("{gone}\t{gone}\t"), "{text}");
    assert!(
        lines[1].starts_with(" gid=") && lines[1].len() == 21,
        "{text}"
    );
    assert!(
        lines.contains(&" split=3") && lines.contains(&" max-tries=1"),
        "{text}"
    );
    assert!(
        !text.contains("ok.bin") && !text.contains("save-session"),
        "{text}"
    );
    // The session read back retries what failed, with its options.
    let run = ringdl(&dir, &["--no-conf", "-d", &d, "-i", &s]);
    assert_eq!(run.code(), 3, "{run}");
    // Everything finished: an empty session.
    let run = ringdl(
        &dir,
        &[
            "--no-conf",
            "-d",
            &d,
            "--save-session",
            &s,
            &server.url("/later.bin"),
        ],
    );
    assert_eq!(run.code(), 0, "{run}");
    assert_eq!(std::fs::read_to_string(&session).unwrap(), "");
}

#[test]
fn input_file_from_stdin() {
    let server = TestServer::plain();
    let data = content(45, 1234);
    server.route("/s", Route::bytes(data.clone()));
    let dir = TestDir::new();
    let out = Command::new(env!("CARGO_BIN_EXE_ringdl"))
        .args(["--no-conf", "-d", &dir.arg(), "-i", "-"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .and_then(|mut c| {
            use std::io::Write;
            c.stdin
                .take()
                .unwrap()
                .write_all(format!("{}\n", server.url("/s")).as_bytes())?;
            c.wait_with_output()
        })
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert_eq!(sha256_file(&dir.join("s")), sha256_hex(&data));
}

#[test]
fn bad_input_file_value_downloads_nothing() {
    let server = TestServer::plain();
    server.route("/x", Route::bytes(content(46, 100)));
    let dir = TestDir::new();
    let list = dir.join("list.txt");
    std::fs::write(
        &list,
        format!("{}\n{}\n  split=abc\n", server.url("/x"), server.url("/x")),
    )
    .unwrap();
    let run = ringdl(&dir, &["-d", &dir.arg(), "-i", list.to_str().unwrap()]);
    assert_eq!(run.code(), 28, "{run}");
    assert!(run.output().contains("Bad number abc"), "{run}");
    assert_eq!(server.stats().requests, 0, "something was downloaded");
}

#[test]
fn missing_or_unreadable_input_file_exit_1() {
    let dir = TestDir::new();
    let run = ringdl(&dir, &["-i", "/nonexistent/list.txt"]);
    assert_eq!(run.code(), 1, "{run}");
    assert!(
        run.stderr
            .contains("Failed to open the file /nonexistent/list.txt"),
        "{run}"
    );
    let run = ringdl(&dir, &["-i", &dir.arg()]);
    assert_eq!(run.code(), 1, "{run}");
}

#[test]
fn dir_that_is_a_file_exits_18() {
    let server = TestServer::plain();
    server.route("/f", Route::bytes(content(47, 100)));
    let dir = TestDir::new();
    let file = dir.join("plain-file");
    std::fs::write(&file, b"x").unwrap();
    let run = ringdl(&dir, &["-d", file.to_str().unwrap(), &server.url("/f")]);
    assert_eq!(run.code(), 18, "{run}");
    assert!(
        run.output().contains("Failed to make the directory"),
        "{run}"
    );
}

#[test]
fn unsupported_features_warn_or_refuse_in_one_line() {
    let server = TestServer::plain();
    server.route("/f", Route::bytes(content(48, 100)));
    let dir = TestDir::new();
    let run = ringdl(
        &dir,
        &[
            "-d",
            &dir.arg(),
            "--seed-time=1",
            "--bt-max-peers=5",
            &server.url("/f"),
        ],
    );
    assert_eq!(run.code(), 0, "{run}");
    let warn: Vec<&str> = run
        .stdout
        .lines()
        .filter(|l| l.contains("BitTorrent"))
        .collect();
    assert_eq!(warn.len(), 1, "{run}");
    let run = ringdl(
        &dir,
        &["magnet:?xt=urn:btih:0123456789abcdef0123456789abcdef01234567"],
    );
    assert_eq!(run.code(), 1, "{run}");
    assert_eq!(run.stderr.trim().lines().count(), 1, "{run}");
    let torrent = dir.join("x.torrent");
    std::fs::write(&torrent, b"d4:infod4:name1:xee").unwrap();
    let run = ringdl(&dir, &[torrent.to_str().unwrap()]);
    assert_eq!(run.code(), 1, "{run}");
    assert!(run.stderr.contains("BitTorrent"), "{run}");
}

#[test]
fn log_file_gets_timestamped_lines() {
    let server = TestServer::plain();
    server.route("/l", Route::bytes(content(49, 100)));
    let dir = TestDir::new();
    let log = dir.join("ringdl.log");
    let run = ringdl(
        &dir,
        &[
            "-d",
            &dir.arg(),
            "-q",
            "-l",
            log.to_str().unwrap(),
            "--log-level=notice",
            &server.url("/l"),
        ],
    );
    assert_eq!(run.code(), 0, "{run}");
    assert!(run.stdout.is_empty(), "-q printed: {run}");
    let text = std::fs::read_to_string(&log).unwrap();
    let complete = text
        .lines()
        .find(|l| l.contains("Download complete:"))
        .expect("no completion line");
    // 2026-11-29 21:33:06.135517 [NOTICE] Download complete: ...
    assert_eq!(&complete[4..5], "-");
    assert_eq!(&complete[26..36], " [NOTICE] ");
    let _ = Path::new(&log);
}

/// The `Hash Algorithms:` line of `-v`, as programs read it.
fn hash_algorithms(version: &str) -> Option<Vec<String>> {
    let line = version
        .lines()
        .find_map(|l| l.strip_prefix("Hash Algorithms: "))?;
    Some(line.split(", ").map(str::to_string).collect())
}

/// apt-fast runs `aria2c -v` and verifies packages only with the algorithms its `Hash
/// Algorithms:` line names; without the line it printed "Checksums disabled" and took a corrupt
/// package. The line must be there, name what aria2c names (in its order), and every name on it
/// must be one `--checksum` verifies: a wrong digest of that algorithm's length ends with 32.
#[test]
fn version_lists_the_hash_algorithms_checksum_verifies() {
    let dir = TestDir::new();
    let run = ringdl(&dir, &["-v"]);
    assert_eq!(run.code(), 0, "{run}");
    let ours =
        hash_algorithms(&run.stdout).unwrap_or_else(|| panic!("no Hash Algorithms line\n{run}"));
    if require_peer("aria2c", have_program("aria2c")) {
        let theirs = Command::new("aria2c").arg("-v").output().unwrap();
        let theirs = hash_algorithms(&String::from_utf8_lossy(&theirs.stdout));
        assert_eq!(Some(ours.clone()), theirs, "aria2c's Hash Algorithms line");
    }
    let server = TestServer::plain();
    let data = content(43, 100_000);
    server.route("/h.bin", Route::bytes(data));
    let digest_len = |name: &str| match name {
        "md5" => 16,
        "sha-1" => 20,
        "sha-224" => 28,
        "sha-256" => 32,
        "sha-384" => 48,
        "sha-512" => 64,
        "adler32" => 4,
        other => panic!("-v names {other}, which aria2 does not know"),
    };
    for name in &ours {
        let dir = TestDir::new();
        let wrong = "0".repeat(2 * digest_len(name));
        let checksum = format!("--checksum={name}={wrong}");
        let d = format!("-d{}", dir.path().display());
        let run = ringdl(
            &dir,
            &[
                "--no-conf",
                d.as_str(),
                checksum.as_str(),
                &server.url("/h.bin"),
            ],
        );
        assert_eq!(
            run.code(),
            32,
            "{name}: a wrong digest must fail the download\n{run}"
        );
    }
}

/// Options programs pass to aria2c on every run that tune what ringdl does its own way (yt-dlp,
/// apt-fast, download managers' aria2.conf files): no value of them changes a file, the output or
/// the exit status here, so they must not print a warning aria2c does not print. `--server-stat-of`
/// (which once warned, a file it asks for not being written) writes its file.
#[test]
fn tuning_options_are_accepted_without_a_warning() {
    let server = TestServer::plain();
    let data = content(44, 300_000);
    server.route("/t.bin", Route::bytes(data.clone()));
    let dir = TestDir::new();
    let d = format!("-d{}", dir.path().display());
    let quiet = [
        "--uri-selector=adaptive",
        "--stream-piece-selector=geom",
        "--server-stat-timeout=60",
        "--async-dns=false",
        "--enable-async-dns6=true",
        "--event-poll=epoll",
        "--enable-mmap=true",
        "--max-mmap-limit=1M",
        "--disk-cache=64M",
        "--deferred-input=true",
        "--optimize-concurrent-downloads=true",
        "--enable-http-pipelining=true",
        "--max-download-result=10",
        "--keep-unfinished-download-result=false",
        "--socket-recv-buffer-size=1M",
        "--rlimit-nofile=1024",
        "--realtime-chunk-checksum=false",
    ];
    let mut args: Vec<String> = vec!["--no-conf".into(), d.clone()];
    args.extend(quiet.iter().map(|s| s.to_string()));
    args.push(server.url("/t.bin"));
    let run = ringdl(&dir, &args);
    assert_eq!(run.code(), 0, "{run}");
    assert!(run.lines_with("WARN").is_empty(), "{run}");
    assert_eq!(sha256_file(&dir.join("t.bin")), sha256_hex(&data));

    let dir = TestDir::new();
    let d = format!("-d{}", dir.path().display());
    let stat = format!("--server-stat-of={}", dir.join("stats").display());
    let run = ringdl(
        &dir,
        &[
            "--no-conf",
            d.as_str(),
            stat.as_str(),
            &server.url("/t.bin"),
        ],
    );
    assert_eq!(run.code(), 0, "{run}");
    assert!(run.lines_with("WARN").is_empty(), "{run}");
    let stats = std::fs::read_to_string(dir.join("stats")).expect("the profile is written");
    assert!(
        stats.starts_with("host=127.0.0.1, protocol=http, "),
        "{stats}"
    );
}

/// `-P` without `-Z`: a pattern standing for more than 10,000 mirrors of one file is refused in
/// one line (K-PMIRRORS), before any connection; with `-Z` the same pattern is accepted.
#[test]
fn a_pattern_of_too_many_mirrors_is_refused_in_one_line() {
    let dir = TestDir::new();
    let run = ringdl(
        &dir,
        &[
            "--no-conf",
            "-P",
            "http://127.0.0.1:9/[0000-9999]/[0-9].bin",
        ],
    );
    assert_eq!(run.code(), 1, "{run}");
    assert_eq!(run.lines_with("give -Z").len(), 1, "{run}");
    assert!(run.lines_with("100000 mirrors").len() == 1, "{run}");
    assert!(dir.entries().is_empty());

    // The same in an -i list's entry (-P applies to lists too, as in aria2c).
    let dir = TestDir::new();
    std::fs::write(
        dir.join("list.txt"),
        "http://127.0.0.1:9/[0000-9999]/[0-9].bin\n",
    )
    .expect("list");
    let run = ringdl(&dir, &["--no-conf", "-P", "-i", "list.txt"]);
    assert_eq!(run.code(), 1, "{run}");
    assert_eq!(run.lines_with("give -Z").len(), 1, "{run}");
    assert_eq!(dir.entries(), vec!["list.txt".to_string()]);
}
