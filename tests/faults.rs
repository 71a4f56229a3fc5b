//! Downloads against a broken server and onto a full disk. The server resets connections at
//! random offsets, stalls longer than `--timeout`, truncates bodies, answers 503, lies about the
//! length, or changes the file between or during attempts. Every case ends either complete and
//! SHA-exact, or with the exit code aria2c gives against the same server (checked against aria2c
//! itself when it is installed) and a partial file with its control file that ringdl and aria2c
//! both finish, SHA-exact, once the server is healed. A changed file is never mixed with the old
//! one. Nothing may hang (the runner kills at 60 s) or panic.
//!
//! What aria2c 1.36.0 does in each case is written beside it; the tests run it to keep that true.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use crate::support::server::{Fault, Route, TestServer, When};
use crate::support::{
    content, have_program, require_peer, ringdl, run_program, sha256_file, sha256_hex, skip_unless,
    Run, SplitMix64, TestDir, RUN_TIMEOUT,
};

const KIB: usize = 1 << 10;
const MIB: usize = 1 << 20;
const NAME: &str = "f.bin";
const CTL: &str = "f.bin.aria2";
const PATH: &str = "/f.bin";
/// An odd size, so the last piece and the last 16 KiB block are partial.
const LEN: usize = 3 * MIB + 4321;

const SPLIT: &[&str] = &["-x4", "-k1M"];

/// Whether aria2c is there to be the reference; a loud skip (a failure under
/// `RINGDL_REQUIRE_PEERS=1`) when it is not.
fn aria2c_present() -> bool {
    require_peer("aria2c", have_program("aria2c"))
}

fn aria2c<S: AsRef<OsStr>>(dir: &TestDir, args: &[S]) -> Run {
    run_program(Path::new("aria2c"), dir, args, RUN_TIMEOUT)
}

/// `--no-conf -d DIR [--ca-certificate=CA] OPTS... URL`, for ringdl and aria2c alike.
fn args(server: &TestServer, dir: &TestDir, opts: &[&str]) -> Vec<String> {
    let mut v = vec!["--no-conf".to_string(), "-d".into(), dir.arg()];
    if server.is_tls() {
        v.push(format!("--ca-certificate={}", server.ca_file().display()));
    }
    v.extend(opts.iter().map(|s| s.to_string()));
    v.push(server.url(PATH));
    v
}

fn opts<'a>(a: &[&'a str], b: &[&'a str]) -> Vec<&'a str> {
    a.iter().chain(b).copied().collect()
}

/// A new directory with copies of `dir`'s files (the partial file and its control file).
fn copy_of(dir: &TestDir) -> TestDir {
    let copy = TestDir::new();
    for name in dir.entries() {
        std::fs::copy(dir.join(&name), copy.join(&name))
            .unwrap_or_else(|e| panic!("copy {name}: {e}"));
    }
    copy
}

/// Exit 0, the file SHA-exact, no control file, nothing else left behind.
fn assert_complete(run: &Run, dir: &TestDir, data: &[u8], what: &str) {
    assert_eq!(
        run.code(),
        0,
        "{what}: the download did not complete\n{run}"
    );
    assert_eq!(
        sha256_file(&dir.join(NAME)),
        sha256_hex(data),
        "{what}: exit 0 but the file is not the server's file\n{run}"
    );
    assert_eq!(dir.entries(), [NAME], "{what}: left behind\n{run}");
}

/// A failed run that can be resumed: an error line with the exit code, the partial file and its
/// control file.
fn assert_resumable_failure(run: &Run, dir: &TestDir, what: &str) {
    let code = run.code();
    assert_ne!(code, 0, "{what}\n{run}");
    assert!(
        !run.lines_with(&format!("errorCode={code}")).is_empty(),
        "{what}: exit {code} without an error line saying errorCode={code}\n{run}"
    );
    assert!(
        dir.join(NAME).exists() && dir.join(CTL).exists(),
        "{what}: exit {code} without a partial file and its control file: {:?}\n{run}",
        dir.entries()
    );
}

/// Every byte of the file at `path` is the byte of `data` at the same offset, or a zero (a hole
/// not written yet): no byte from anywhere else.
fn assert_only_bytes_of(path: &Path, data: &[u8], what: &str) {
    let got = std::fs::read(path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
    assert!(
        got.len() <= data.len(),
        "{what}: partial file of {} bytes for a file of {}",
        got.len(),
        data.len()
    );
    if let Some(at) = got.iter().zip(data).position(|(&g, &d)| g != d && g != 0) {
        panic!("{what}: the partial file holds a foreign byte at offset {at}");
    }
}

/// Resumes copies of ringdl's partial download in `dir` with ringdl and with aria2c, against the
/// (healed) server: both must finish SHA-exact.
fn resume_with_both(server: &TestServer, dir: &TestDir, data: &[u8], opts: &[&str], what: &str) {
    let copy = copy_of(dir);
    let run = ringdl(&copy, &args(server, &copy, opts));
    assert_complete(&run, &copy, data, &format!("{what}: ringdl resuming"));
    if aria2c_present() {
        let copy = copy_of(dir);
        let run = aria2c(&copy, &args(server, &copy, opts));
        assert_complete(
            &run,
            &copy,
            data,
            &format!("{what}: aria2c resuming ringdl's partial file"),
        );
    }
}

/// One fault case.
struct Case<'a> {
    what: String,
    /// The file, as the healed server serves it.
    data: &'a [u8],
    /// The broken route for the first attempt.
    broken: Route,
    opts: Vec<&'a str>,
    /// What aria2c exits with against `broken` (several codes when aria2c's own answer depends
    /// on timing); 0: the download completes.
    aria2: &'a [i32],
    https: bool,
}

/// Runs `case` with aria2c (the reference: it must exit as the case says), then with ringdl: a
/// complete, SHA-exact file, or aria2c's exit code and a partial file that ringdl and aria2c
/// both finish once the server is healed. ringdl also finishes aria2c's partial file.
fn check(case: Case) {
    let server = if case.https {
        TestServer::https()
    } else {
        TestServer::plain()
    };
    let what = case.what.as_str();
    let aria2_partial = if aria2c_present() {
        server.route(PATH, case.broken.clone());
        let dir = TestDir::new();
        let run = aria2c(&dir, &args(&server, &dir, &case.opts));
        assert!(
            case.aria2.contains(&run.code()),
            "{what}: aria2c exits {}, not {:?} as this test says\n{run}",
            run.code(),
            case.aria2
        );
        (run.code() != 0).then_some(dir)
    } else {
        None
    };

    server.route(PATH, case.broken.clone());
    let dir = TestDir::new();
    let run = ringdl(&dir, &args(&server, &dir, &case.opts));
    let code = run.code();
    if code == 0 {
        assert_complete(&run, &dir, case.data, what);
    } else {
        assert_resumable_failure(&run, &dir, what);
        assert_only_bytes_of(&dir.join(NAME), case.data, what);
    }

    server.route(PATH, Route::bytes(case.data.to_vec()));
    if code != 0 {
        resume_with_both(&server, &dir, case.data, &case.opts, what);
    }
    if let Some(partial) = aria2_partial {
        let copy = copy_of(&partial);
        let again = ringdl(&copy, &args(&server, &copy, &case.opts));
        assert_complete(
            &again,
            &copy,
            case.data,
            &format!("{what}: ringdl resuming aria2c's partial file"),
        );
    }
    // Completing is always allowed (checked above); failing, only as aria2c fails.
    assert!(
        code == 0 || case.aria2.contains(&code),
        "{what}: ringdl exits {code}, aria2c {:?}\n{run}",
        case.aria2
    );
}

// ---- Resets ------------------------------------------------------------------------------

/// aria2c: a reset is "errorCode=1 Failed to receive data, cause: Connection reset by peer" and
/// is retried from where it stopped; when `--max-tries` runs out, exit 1 with a control file.
fn resets_at_random_offsets(split: bool) {
    let mode = if split { SPLIT } else { &[] };
    for seed in 1..=4u64 {
        let mut rng = SplitMix64::new(seed);
        let data = content(100 + seed, LEN);
        // The first 1–3 requests are reset anywhere in their body: the retries finish the file.
        let off = rng.next_u64() % LEN as u64;
        let n = 1 + (rng.next_u64() % 3) as usize;
        check(Case {
            what: format!("seed {seed} {mode:?}: reset after {off} bytes, first {n} requests"),
            data: &data,
            broken: Route::bytes(data.clone())
                .fault(Fault::ResetAfter(off), When::FirstRequests(n)),
            opts: opts(mode, &["--max-tries=5"]),
            aria2: &[0],
            https: false,
        });
        // Every response is reset after 32–192 KiB: two tries per connection cannot finish
        // (exit 1), not even with four connections.
        let off = (32 * KIB) as u64 + rng.next_u64() % (160 * KIB) as u64;
        check(Case {
            what: format!("seed {seed} {mode:?}: reset after {off} bytes, every request"),
            data: &data,
            broken: Route::bytes(data.clone()).fault(Fault::ResetAfter(off), When::Always),
            opts: opts(mode, &["--max-tries=2"]),
            aria2: &[1],
            https: false,
        });
    }
}

#[test]
fn resets_at_random_offsets_single_connection() {
    resets_at_random_offsets(false);
}

#[test]
fn resets_at_random_offsets_split_download() {
    resets_at_random_offsets(true);
}

#[test]
fn resets_over_https() {
    let data = content(110, LEN);
    check(Case {
        what: "https: reset after 700000 bytes, every request".into(),
        data: &data,
        broken: Route::bytes(data.clone()).fault(Fault::ResetAfter(700_000), When::Always),
        opts: vec!["--max-tries=2"],
        aria2: &[1],
        https: true,
    });
}

// ---- Stalls ------------------------------------------------------------------------------

/// aria2c: silence longer than `--timeout` is "errorCode=2 Timeout." and is retried; when
/// `--max-tries` runs out, exit 2 with a control file.
#[test]
fn stall_longer_than_timeout_once_is_retried() {
    let data = content(120, LEN);
    check(Case {
        what: "stall after 200000 bytes, first request, --timeout=1".into(),
        data: &data,
        broken: Route::bytes(data.clone())
            .fault(Fault::StallAfter(200_000), When::FirstRequests(1)),
        opts: vec!["--timeout=1", "--max-tries=3"],
        aria2: &[0],
        https: false,
    });
}

#[test]
fn stall_longer_than_timeout_every_time_exits_2() {
    let data = content(121, LEN);
    check(Case {
        what: "stall after 200000 bytes, every request, --timeout=1".into(),
        data: &data,
        broken: Route::bytes(data.clone()).fault(Fault::StallAfter(200_000), When::Always),
        opts: vec!["--timeout=1", "--max-tries=2"],
        aria2: &[2],
        https: false,
    });
}

#[test]
fn stall_longer_than_timeout_every_time_split_exits_2() {
    let data = content(122, LEN);
    check(Case {
        what: "-x4 -k1M: stall after 100000 bytes, every request, --timeout=1".into(),
        data: &data,
        broken: Route::bytes(data.clone()).fault(Fault::StallAfter(100_000), When::Always),
        opts: opts(SPLIT, &["--timeout=1", "--max-tries=2"]),
        aria2: &[2],
        https: false,
    });
}

/// The response head itself comes later than `--timeout`: retried, then complete (aria2c: 0).
#[test]
fn stalled_response_head_once_is_retried() {
    let data = content(123, LEN);
    check(Case {
        what: "response head delayed 5 s on the first request, --timeout=1".into(),
        data: &data,
        broken: Route::bytes(data.clone())
            .delay_head(Duration::from_secs(5))
            .then_after(1, Route::bytes(data.clone())),
        opts: vec!["--timeout=1", "--max-tries=2"],
        aria2: &[0],
        https: false,
    });
}

/// No response head ever arrives in time: aria2c exits 2 and leaves nothing behind.
#[test]
fn stalled_response_head_every_time_exits_2_without_a_file() {
    let server = TestServer::plain();
    let data = content(124, 100_000);
    let slow = Route::bytes(data.clone()).delay_head(Duration::from_secs(5));
    let opts = ["--timeout=1", "--max-tries=2"];
    if aria2c_present() {
        server.route(PATH, slow.clone());
        let dir = TestDir::new();
        let run = aria2c(&dir, &args(&server, &dir, &opts));
        assert_eq!(run.code(), 2, "aria2c\n{run}");
        assert!(dir.entries().is_empty(), "aria2c: {:?}", dir.entries());
    }
    server.route(PATH, slow);
    let dir = TestDir::new();
    let run = ringdl(&dir, &args(&server, &dir, &opts));
    assert_eq!(run.code(), 2, "{run}");
    assert!(!run.lines_with("errorCode=2").is_empty(), "{run}");
    assert!(dir.entries().is_empty(), "{:?}", dir.entries());
}

// ---- Truncated bodies --------------------------------------------------------------------

/// aria2c: a body that ends early is "errorCode=1 Got EOF from the server." and is retried from
/// where it stopped; when `--max-tries` runs out, exit 1 with a control file.
#[test]
fn truncated_bodies_are_retried() {
    let data = content(130, LEN);
    for (mode, n) in [(&[][..], 2), (SPLIT, 3)] {
        check(Case {
            what: format!("{mode:?}: truncated after 300000 bytes, first {n} requests"),
            data: &data,
            broken: Route::bytes(data.clone())
                .fault(Fault::TruncateAfter(300_000), When::FirstRequests(n)),
            opts: opts(mode, &["--max-tries=5"]),
            aria2: &[0],
            https: false,
        });
    }
}

#[test]
fn truncated_every_time_exits_1() {
    let data = content(131, LEN);
    for (mode, https) in [(&[][..], false), (SPLIT, false), (&[][..], true)] {
        check(Case {
            what: format!("{mode:?} https={https}: truncated after 300000 bytes, every request"),
            data: &data,
            broken: Route::bytes(data.clone()).fault(Fault::TruncateAfter(300_000), When::Always),
            opts: opts(mode, &["--max-tries=2"]),
            aria2: &[1],
            https,
        });
    }
}

/// A chunked body (size unknown, so no control file, as aria2c) cut short once: aria2c fetches
/// it again from the start and completes.
#[test]
fn truncated_chunked_body_is_fetched_again() {
    let server = TestServer::plain();
    let data = content(132, LEN);
    let broken = Route::bytes(data.clone())
        .chunked()
        .fault(Fault::TruncateAfter(300_000), When::FirstRequests(1));
    let opts = ["--max-tries=3"];
    if aria2c_present() {
        server.route(PATH, broken.clone());
        let dir = TestDir::new();
        let run = aria2c(&dir, &args(&server, &dir, &opts));
        assert_complete(&run, &dir, &data, "aria2c");
    }
    server.route(PATH, broken);
    let dir = TestDir::new();
    let run = ringdl(&dir, &args(&server, &dir, &opts));
    assert_complete(
        &run,
        &dir,
        &data,
        "chunked body truncated once, --max-tries=3",
    );
}

/// The same with `--checksum`, the file changing on the server between the attempts: the first
/// answer (an older version) is cut short, the second is whole and has the digest asked for. Only
/// the attempt that finished may count towards the digest. The restart kept the hasher and its
/// position from the cut attempt, so the old version's first 2 MB were hashed in place of the new
/// one's, and a whole, correct file failed with exit 32 (and a file whose first bytes were wrong
/// could pass).
#[test]
fn chunked_body_fetched_again_hashes_only_the_attempt_that_finished() {
    let server = TestServer::plain();
    let data = content(134, LEN);
    let old = content(135, LEN);
    let changing = Route::bytes(old)
        .chunked()
        .fault(Fault::TruncateAfter(2_000_000), When::Always)
        .then_after(1, Route::bytes(data.clone()).chunked());
    let checksum = format!("--checksum=sha-256={}", sha256_hex(&data));
    let opts = ["--max-tries=3", checksum.as_str()];
    if aria2c_present() {
        server.route(PATH, changing.clone());
        let dir = TestDir::new();
        let run = aria2c(&dir, &args(&server, &dir, &opts));
        assert_complete(&run, &dir, &data, "aria2c");
    }
    server.route(PATH, changing);
    let dir = TestDir::new();
    let run = ringdl(&dir, &args(&server, &dir, &opts));
    assert_complete(
        &run,
        &dir,
        &data,
        "chunked body of an old version cut short, then the new one, --checksum",
    );
}

/// Cut short every time: aria2c exits 1 and, the size being unknown, leaves the partial file
/// without a control file; a healed rerun with --allow-overwrite=true starts over and completes.
#[test]
fn truncated_chunked_body_every_time_exits_1_without_a_control_file() {
    let server = TestServer::plain();
    let data = content(133, LEN);
    let broken = Route::bytes(data.clone())
        .chunked()
        .fault(Fault::TruncateAfter(300_000), When::Always);
    let opts = ["--max-tries=2"];
    let overwrite = ["--max-tries=2", "--allow-overwrite=true"];
    let mut dirs = Vec::new();
    if aria2c_present() {
        server.route(PATH, broken.clone());
        let dir = TestDir::new();
        let run = aria2c(&dir, &args(&server, &dir, &opts));
        assert_eq!(run.code(), 1, "aria2c\n{run}");
        assert_eq!(dir.entries(), [NAME], "aria2c");
        dirs.push(("aria2c", dir));
    }
    server.route(PATH, broken);
    let dir = TestDir::new();
    let run = ringdl(&dir, &args(&server, &dir, &opts));
    assert_eq!(run.code(), 1, "{run}");
    assert!(!run.lines_with("errorCode=1").is_empty(), "{run}");
    assert_eq!(dir.entries(), [NAME], "{run}");
    assert_only_bytes_of(&dir.join(NAME), &data, "chunked, truncated");
    dirs.push(("ringdl", dir));

    server.route(PATH, Route::bytes(data.clone()).chunked());
    for (who, dir) in dirs {
        let run = ringdl(&dir, &args(&server, &dir, &overwrite));
        assert_complete(&run, &dir, &data, &format!("ringdl over {who}'s partial"));
    }
}

// ---- 503 ---------------------------------------------------------------------------------

/// aria2c: 503 is errorCode=29, retried only with `--retry-wait` > 0; `Retry-After` alone does
/// not make it retry. Nothing is written before the first good response.
#[test]
fn unavailable_without_retry_wait_exits_29_and_a_retry_wait_completes() {
    let server = TestServer::plain();
    let data = content(140, LEN);
    for retry_after in [None, Some(1)] {
        let broken = Route::bytes(data.clone())
            .fault(Fault::Unavailable(retry_after), When::FirstRequests(2));
        let mut programs = vec![("ringdl", None)];
        if aria2c_present() {
            programs.push(("aria2c", Some(Path::new("aria2c"))));
        }
        for (who, program) in programs {
            let what = format!("{who}, Retry-After {retry_after:?}");
            let run_it = |dir: &TestDir, opts: &[&str]| match program {
                None => ringdl(dir, &args(&server, dir, opts)),
                Some(p) => run_program(p, dir, &args(&server, dir, opts), RUN_TIMEOUT),
            };
            server.route(PATH, broken.clone());
            let dir = TestDir::new();
            let run = run_it(&dir, &[]);
            assert_eq!(run.code(), 29, "{what}\n{run}");
            assert!(!run.lines_with("errorCode=29").is_empty(), "{what}\n{run}");
            assert!(dir.entries().is_empty(), "{what}: {:?}", dir.entries());
            // The second request is the route's last 503; with --retry-wait the third is a 200.
            let run = run_it(&dir, &["--retry-wait=1"]);
            assert_complete(&run, &dir, &data, &format!("{what}, --retry-wait=1"));
        }
    }
}

/// 503 while resuming: exit 29 (aria2c too), the partial file and control file stay; a retry
/// wait lets both tools finish it.
#[test]
fn unavailable_while_resuming_keeps_the_partial_file() {
    let server = TestServer::plain();
    let data = content(141, LEN);
    server.route(
        PATH,
        Route::bytes(data.clone()).fault(Fault::ResetAfter(1_300_000), When::Always),
    );
    let dir = TestDir::new();
    let run = ringdl(&dir, &args(&server, &dir, &["--max-tries=1"]));
    assert_resumable_failure(&run, &dir, "setting up a partial file");

    let broken =
        Route::bytes(data.clone()).fault(Fault::Unavailable(Some(1)), When::FirstRequests(1));
    let mut programs = vec![("ringdl", None)];
    if aria2c_present() {
        programs.push(("aria2c", Some(Path::new("aria2c"))));
    }
    for (who, program) in programs {
        let copy = copy_of(&dir);
        let run_it = |opts: &[&str]| match program {
            None => ringdl(&copy, &args(&server, &copy, opts)),
            Some(p) => run_program(p, &copy, &args(&server, &copy, opts), RUN_TIMEOUT),
        };
        server.route(PATH, broken.clone());
        let run = run_it(&[]);
        assert_resumable_failure(&run, &copy, &format!("{who}: 503 on resume"));
        assert_eq!(run.code(), 29, "{who}\n{run}");
        assert_only_bytes_of(&copy.join(NAME), &data, who);
        server.route(PATH, broken.clone());
        let run = run_it(&["--retry-wait=1"]);
        assert_complete(
            &run,
            &copy,
            &data,
            &format!("{who}: 503 on resume, --retry-wait=1"),
        );
    }
}

/// 503 on the segment requests of a split download: those connections give up, the first one
/// goes on and finishes the file. aria2c: exit 0, the file exact.
#[test]
fn unavailable_on_segment_requests_the_other_connection_finishes() {
    let data = content(142, LEN);
    check(Case {
        what: "-x4 -k1M: 503 on every segment request".into(),
        data: &data,
        broken: Route::bytes(data.clone())
            .fault(Fault::Unavailable(Some(1)), When::SegmentRequests),
        opts: SPLIT.to_vec(),
        aria2: &[0],
        https: false,
    });
}

// ---- Content-Length lies -----------------------------------------------------------------

/// The server claims more bytes than it sends (Content-Length and Content-Range total) and
/// closes. aria2c: errorCode=1 "Got EOF from the server.", exit 1 with a control file for the
/// claimed size; once the server really has that many bytes, both tools finish.
#[test]
fn content_length_lie_exits_1_and_resumes() {
    let data = content(150, LEN);
    let short = data.len() - 100_000;
    for mode in [&[][..], SPLIT] {
        check(Case {
            what: format!("{mode:?}: Content-Length 100000 more than is sent"),
            data: &data,
            broken: Route::bytes(data[..short].to_vec())
                .fault(Fault::ContentLengthLie(100_000), When::Always),
            opts: opts(mode, &["--max-tries=2"]),
            aria2: &[1],
            https: false,
        });
    }
}

// ---- The file changes on the server ------------------------------------------------------

/// The old and new file with distinct validators, as a server that replaced it would send.
fn old_route(data: &[u8]) -> Route {
    Route::bytes(data.to_vec())
        .header("ETag", "\"old\"")
        .header("Last-Modified", "Wed, 21 Oct 2015 07:28:00 GMT")
}

fn new_route(data: &[u8]) -> Route {
    Route::bytes(data.to_vec())
        .header("ETag", "\"new\"")
        .header("Last-Modified", "Thu, 22 Oct 2015 09:00:00 GMT")
}

/// After a run against a file that changed: either exit 0 with the new file exactly, or a clear
/// failure that left only old bytes, claimed by a control file that still finishes the old file
/// (so nothing new was mixed in). Returns the exit code.
fn assert_new_file_or_clean_failure(
    run: &Run,
    dir: &TestDir,
    old: &[u8],
    new: &[u8],
    opts: &[&str],
    what: &str,
) -> i32 {
    let code = run.code();
    if code == 0 {
        let got = sha256_file(&dir.join(NAME));
        assert!(
            got == sha256_hex(new),
            "{what}: exit 0 with a file that is not the new file{}\n{run}",
            if got == sha256_hex(old) {
                " (it is the old one)"
            } else {
                ": old and new bytes mixed"
            }
        );
        assert_eq!(dir.entries(), [NAME], "{what}\n{run}");
        return 0;
    }
    assert_resumable_failure(run, dir, what);
    assert_only_bytes_of(&dir.join(NAME), old, what);
    // The control file claims old bytes only: against the old file it completes, exactly.
    let server = TestServer::plain();
    server.route(PATH, Route::bytes(old.to_vec()));
    let copy = copy_of(dir);
    let again = ringdl(&copy, &args(&server, &copy, opts));
    assert_complete(
        &again,
        &copy,
        old,
        &format!("{what}: the partial file finished against the old file"),
    );
    code
}

/// The first run fails part-way; the file on the server is then replaced by one of another
/// size. aria2c refuses the second run: "total length mismatch. expected: NEW, actual: OLD",
/// exit 1, the partial file and control file kept. With `--remove-control-file
/// --allow-overwrite=true` the download starts over and gets the new file.
fn file_changed_size_between_runs(new_len: usize) {
    let old = content(160, LEN);
    let new = content(161, new_len);
    let what = format!("file replaced: {} -> {new_len} bytes", old.len());
    let server = TestServer::plain();
    let broken = old_route(&old).fault(Fault::ResetAfter(1_300_000), When::Always);
    let first = ["--max-tries=1"];
    if aria2c_present() {
        server.route(PATH, broken.clone());
        let dir = TestDir::new();
        let run = aria2c(&dir, &args(&server, &dir, &first));
        assert_eq!(run.code(), 1, "aria2c, first run\n{run}");
        server.route(PATH, new_route(&new));
        let run = aria2c(&dir, &args(&server, &dir, &first));
        assert_eq!(run.code(), 1, "aria2c, {what}\n{run}");
        assert!(run.output().contains("total length mismatch"), "{run}");
    }
    server.route(PATH, broken);
    let dir = TestDir::new();
    let run = ringdl(&dir, &args(&server, &dir, &first));
    assert_resumable_failure(&run, &dir, "first run");

    server.route(PATH, new_route(&new));
    let run = ringdl(&dir, &args(&server, &dir, &first));
    let code = assert_new_file_or_clean_failure(&run, &dir, &old, &new, &first, &what);
    if code != 0 {
        let restart = ["--remove-control-file", "--allow-overwrite=true"];
        let again = ringdl(&dir, &args(&server, &dir, &restart));
        assert_complete(&again, &dir, &new, &format!("{what}: starting over"));
        assert_eq!(code, 1, "{what}: ringdl exits {code}, aria2c 1\n{run}");
    }
}

#[test]
fn file_changed_to_a_smaller_one_between_runs_is_refused() {
    file_changed_size_between_runs(2 * MIB);
}

#[test]
fn file_changed_to_a_bigger_one_between_runs_is_refused() {
    file_changed_size_between_runs(4 * MIB + 7);
}

/// The same size, other bytes, new ETag and Last-Modified. aria2c does not notice: it finishes
/// with old and new bytes mixed and exits 0. ringdl must not.
#[test]
fn file_changed_bytes_between_runs_is_not_mixed() {
    let old = content(162, LEN);
    let new = content(163, LEN);
    let server = TestServer::plain();
    server.route(
        PATH,
        old_route(&old).fault(Fault::ResetAfter(1_300_000), When::Always),
    );
    let dir = TestDir::new();
    let run = ringdl(&dir, &args(&server, &dir, &["--max-tries=1"]));
    assert_resumable_failure(&run, &dir, "first run");

    server.route(PATH, new_route(&new));
    let run = ringdl(&dir, &args(&server, &dir, &["--max-tries=1"]));
    assert_new_file_or_clean_failure(
        &run,
        &dir,
        &old,
        &new,
        &["--max-tries=1"],
        "file replaced by one of the same size",
    );
}

/// The file is replaced while the download runs: the first response is cut, every later one
/// is the new file. Another size: aria2c fails with errorCode=8 "Invalid range header" (with
/// -x4, a 416 for a range past the new end may come last: errorCode=22).
fn file_changed_size_during_a_run(split: bool) {
    let old = content(164, LEN);
    let new = content(165, 2 * MIB);
    let (mode, aria2) = if split {
        (SPLIT, &[8, 22][..])
    } else {
        (&[][..], &[8][..])
    };
    let what = format!("{mode:?}: file replaced by a 2 MiB one after the first request");
    let server = TestServer::plain();
    let changing = old_route(&old)
        .fault(Fault::ResetAfter(300_000), When::Request(1))
        .then_after(1, new_route(&new));
    let opts = opts(mode, &["--max-tries=3"]);
    if aria2c_present() {
        server.route(PATH, changing.clone());
        let dir = TestDir::new();
        let run = aria2c(&dir, &args(&server, &dir, &opts));
        assert!(aria2.contains(&run.code()), "aria2c, {what}\n{run}");
    }
    server.route(PATH, changing);
    let dir = TestDir::new();
    let run = ringdl(&dir, &args(&server, &dir, &opts));
    let code = assert_new_file_or_clean_failure(&run, &dir, &old, &new, &opts, &what);
    assert!(
        code == 0 || aria2.contains(&code),
        "{what}: ringdl exits {code}, aria2c {aria2:?}\n{run}"
    );
}

#[test]
fn file_changed_size_during_a_run_is_refused() {
    file_changed_size_during_a_run(false);
}

#[test]
fn file_changed_size_during_a_split_run_is_refused() {
    file_changed_size_during_a_run(true);
}

/// The same size, other bytes, during the run: aria2c mixes them and exits 0. ringdl must
/// either notice (the ETag changed; an If-Range would get the whole new file) or fail clearly.
fn file_changed_bytes_during_a_run(split: bool) {
    let old = content(166, LEN);
    let new = content(167, LEN);
    let mode = if split { SPLIT } else { &[][..] };
    let what = format!("{mode:?}: file replaced (same size) after the first request");
    let server = TestServer::plain();
    server.route(
        PATH,
        old_route(&old)
            .fault(Fault::ResetAfter(300_000), When::Request(1))
            .then_after(1, new_route(&new)),
    );
    let opts = opts(mode, &["--max-tries=3"]);
    let dir = TestDir::new();
    let run = ringdl(&dir, &args(&server, &dir, &opts));
    assert_new_file_or_clean_failure(&run, &dir, &old, &new, &opts, &what);
}

#[test]
fn file_changed_bytes_during_a_run_is_not_mixed() {
    file_changed_bytes_during_a_run(false);
}

#[test]
fn file_changed_bytes_during_a_split_run_is_not_mixed() {
    file_changed_bytes_during_a_run(true);
}

// ---- A full disk -------------------------------------------------------------------------

/// A small ext4 filesystem in an image file, loop-mounted; unmounted on drop, even when the
/// test fails.
struct LoopMount {
    mnt: PathBuf,
}

impl LoopMount {
    fn new(base: &TestDir, mib: u64) -> Result<LoopMount, String> {
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } != 0 {
            return Err("mounting a filesystem needs root".into());
        }
        let img = base.join("fs.img");
        let mnt = base.join("mnt");
        std::fs::create_dir(&mnt).map_err(|e| e.to_string())?;
        std::fs::File::create(&img)
            .and_then(|f| f.set_len(mib * MIB as u64))
            .map_err(|e| format!("image: {e}"))?;
        let sh = |program: &str, args: &[&OsStr]| -> Result<(), String> {
            let out = Command::new(program)
                .args(args)
                .output()
                .map_err(|e| format!("{program}: {e}"))?;
            if out.status.success() {
                Ok(())
            } else {
                Err(format!(
                    "{program} failed: {}",
                    String::from_utf8_lossy(&out.stderr).trim()
                ))
            }
        };
        sh(
            "mkfs.ext4",
            &["-q".as_ref(), "-F".as_ref(), img.as_os_str()],
        )?;
        sh(
            "mount",
            &[
                "-o".as_ref(),
                "loop".as_ref(),
                img.as_os_str(),
                mnt.as_os_str(),
            ],
        )?;
        Ok(LoopMount { mnt })
    }

    fn path(&self) -> &Path {
        &self.mnt
    }

    fn arg(&self) -> String {
        self.mnt.display().to_string()
    }

    /// Bytes still free for root (who may use the reserved blocks too).
    fn free(&self) -> u64 {
        let path = std::ffi::CString::new(self.mnt.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: a NUL-terminated path and a zeroed statvfs for the call to fill.
        unsafe {
            let mut st: libc::statvfs = std::mem::zeroed();
            assert_eq!(libc::statvfs(path.as_ptr(), &mut st), 0, "statvfs");
            st.f_bfree as u64 * st.f_frsize as u64
        }
    }
}

impl Drop for LoopMount {
    fn drop(&mut self) {
        let ok = Command::new("umount")
            .arg(&self.mnt)
            .status()
            .is_ok_and(|s| s.success());
        if !ok {
            // Still busy (a process the test could not stop): detach it lazily.
            let _ = Command::new("umount").arg("-l").arg(&self.mnt).status();
        }
    }
}

/// A 64 MiB ext4 filesystem with 8 MiB left free, and the file that fills the rest (None, after
/// a loud skip, where loop mounts are refused).
fn nearly_full(base: &TestDir) -> Option<(LoopMount, std::path::PathBuf)> {
    let fs = match LoopMount::new(base, 64) {
        Ok(fs) => fs,
        Err(why) => {
            skip_unless(false, &format!("cannot loop-mount an ext4 image: {why}"));
            return None;
        }
    };
    let filler = fs.path().join("filler");
    let keep = 8 * MIB as u64;
    {
        use std::os::fd::AsRawFd;
        let f = std::fs::File::create(&filler).expect("filler");
        let len = fs.free() - keep;
        // SAFETY: a valid fd and a length that fits off_t.
        let rc = unsafe { libc::posix_fallocate(f.as_raw_fd(), 0, len as libc::off_t) };
        assert_eq!(rc, 0, "posix_fallocate filler");
    }
    assert!(fs.free() < 9 * MIB as u64, "{} bytes free", fs.free());
    Some((fs, filler))
}

/// A 32 MiB download into a filesystem with 8 MiB free: exit 9 (aria2c too), a one-line error
/// about the space, and a control file; ringdl finishes it in place once space is freed, and
/// aria2c finishes a copy of it elsewhere.
///
/// aria2c 1.36.0 exits 9 here but is no model for the rest: with its default allocation it
/// leaves an empty control file (its next run exits 1), with `--file-allocation=none` and one
/// connection a good one, with -x4 an empty one.
fn full_disk(opts: &[&str]) {
    let base = TestDir::new();
    let Some((fs, filler)) = nearly_full(&base) else {
        return;
    };
    let server = TestServer::plain();
    let data = content(170, 32 * MIB);
    server.route(PATH, Route::bytes(data.clone()));
    let mut argv = vec!["--no-conf".to_string(), "-d".into(), fs.arg()];
    argv.extend(opts.iter().map(|s| s.to_string()));
    argv.push(server.url(PATH));

    let run = ringdl(&base, &argv);
    assert_eq!(run.code(), 9, "{run}");
    let lines = run.lines_with("No space left on device");
    assert!(
        lines.iter().any(|l| l.contains("errorCode=9")),
        "no one-line error with errorCode=9 and the cause\n{run}"
    );
    let ctl = fs.path().join(CTL);
    let ctl_len = ctl.metadata().map(|m| m.len()).unwrap_or(0);
    assert!(
        ctl_len > 0,
        "no control file after the disk filled up (length {ctl_len}): {:?}\n{run}",
        std::fs::read_dir(fs.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect::<Vec<_>>()
    );
    assert_only_bytes_of(
        &fs.path().join(NAME),
        &data,
        "partial file on the full disk",
    );

    if aria2c_present() {
        let elsewhere = TestDir::new();
        for name in [NAME, CTL] {
            std::fs::copy(fs.path().join(name), elsewhere.join(name)).expect("copy partial");
        }
        let run = aria2c(&elsewhere, &args(&server, &elsewhere, opts));
        assert_complete(&run, &elsewhere, &data, "aria2c finishing the copy");
    }

    std::fs::remove_file(&filler).expect("remove filler");
    let run = ringdl(&base, &argv);
    assert_eq!(run.code(), 0, "{run}");
    assert_eq!(
        sha256_file(&fs.path().join(NAME)),
        sha256_hex(&data),
        "resumed file differs\n{run}"
    );
    assert!(!ctl.exists(), "control file left after completion");
    assert!(
        !fs.path().join("f.1.bin").exists(),
        "the rerun started a new file instead of resuming\n{run}"
    );
}

#[test]
fn full_disk_exits_9_and_resumes_once_space_is_freed() {
    full_disk(&[]);
}

#[test]
fn full_disk_split_without_allocation_exits_9_and_resumes() {
    full_disk(&["--file-allocation=none", "-x4", "-k1M"]);
}

/// A gzip body that inflates past the free space (a 60 KiB bomb of 40 MiB) on a disk with 8 MiB
/// free: exit 9 with the one-line cause, and what reached the disk is the inflated bytes. An
/// inflated file's length is unknown until its end, so no control file describes it (aria2c
/// writes none either, and its rerun renames): once space is freed, the command line with
/// `--allow-overwrite=true` fetches it whole in place.
#[test]
fn an_inflating_body_on_a_full_disk_exits_9() {
    let base = TestDir::new();
    let Some((fs, filler)) = nearly_full(&base) else {
        return;
    };
    let inflated: Vec<u8> = (0..40 * MIB).map(|i| (i / 4096 % 251) as u8).collect();
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    std::io::Write::write_all(&mut e, &inflated).expect("gzip");
    let gz = e.finish().expect("gzip");
    assert!(gz.len() < MIB, "{} bytes of gzip", gz.len());
    let server = TestServer::plain();
    server.route(PATH, Route::bytes(gz).header("Content-Encoding", "gzip"));
    let argv = vec![
        "--no-conf".to_string(),
        "-d".into(),
        fs.arg(),
        "--http-accept-gzip=true".into(),
        server.url(PATH),
    ];
    let run = ringdl(&base, &argv);
    assert_eq!(run.code(), 9, "{run}");
    assert!(
        run.lines_with("No space left on device")
            .iter()
            .any(|l| l.contains("errorCode=9")),
        "no one-line error with errorCode=9 and the cause\n{run}"
    );
    assert_only_bytes_of(
        &fs.path().join(NAME),
        &inflated,
        "inflated file on the full disk",
    );

    assert!(!fs.path().join(CTL).exists());

    std::fs::remove_file(&filler).expect("remove filler");
    let mut argv = argv;
    argv.insert(1, "--allow-overwrite=true".into());
    let run = ringdl(&base, &argv);
    assert_eq!(run.code(), 0, "{run}");
    assert_eq!(
        sha256_file(&fs.path().join(NAME)),
        sha256_hex(&inflated),
        "refetched file differs\n{run}"
    );
}

/// A download renamed because a file of its name was there (`f.1.bin`), whose first attempt is
/// cut short with nothing to resume from (chunked, no ranges): the attempt after it starts its
/// own file over, under the name it was given, and never the user's file (aria2c's result too).
#[test]
fn a_renamed_download_that_starts_over_keeps_its_own_name() {
    let server = TestServer::plain();
    let data = content(136, LEN);
    let cut_once = Route::bytes(data.clone())
        .no_ranges()
        .chunked()
        .fault(Fault::TruncateAfter(300_000), When::Always)
        .then_after(1, Route::bytes(data.clone()).no_ranges().chunked());
    let mut runs = Vec::new();
    if aria2c_present() {
        runs.push("aria2c");
    }
    runs.push("ringdl");
    for who in runs {
        server.route(PATH, cut_once.clone());
        let dir = TestDir::new();
        std::fs::write(dir.join(NAME), b"the user's own file").unwrap();
        let a = args(&server, &dir, &["--max-tries=3"]);
        let run = match who {
            "aria2c" => aria2c(&dir, &a),
            _ => ringdl(&dir, &a),
        };
        assert_eq!(run.code(), 0, "{who}\n{run}");
        assert!(
            std::fs::read(dir.join(NAME)).unwrap() == b"the user's own file",
            "{who}: the file found was written over\n{run}"
        );
        assert_eq!(
            sha256_file(&dir.join("f.1.bin")),
            sha256_hex(&data),
            "{who}\n{run}"
        );
        assert_eq!(dir.entries(), ["f.1.bin", NAME], "{who}\n{run}");
    }
}
