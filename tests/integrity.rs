//! Issue 33's findings, each reproduced through the binary against the in-repo server: complete
//! means byte-exact even when the server misbehaves or the disk refuses the last control file.
//!
//! * Bytes a server sends after a body on a kept-alive connection (a whole response nobody asked
//!   for) were read as the answer to the next request on it: the second file of a list ended as
//!   those 7 bytes, exit 0.
//! * A 206 carrying another version's validator than the one sent in `If-Range` (a server that
//!   ignores `If-Range`, its file changed between two requests) was spliced onto the old bytes.
//! * A failed download's last control-file save was trusted before it happened: where it failed
//!   (`NAME.aria2` too long a name), the file kept its length with nothing describing it, and the
//!   next `-c` run called it complete.
//!
//! Every run has a deadline well under the harness's: a hang is a failure, never a stuck test.

use std::ffi::OsStr;
use std::time::Duration;

use crate::support::server::{Fault, Route, TestServer, When};
use crate::support::{content, ringdl_with_timeout, Run, TestDir};

const MIB: usize = 1 << 20;
const DEADLINE: Duration = Duration::from_secs(30);

fn ringdl<S: AsRef<OsStr>>(dir: &TestDir, args: &[S]) -> Run {
    ringdl_with_timeout(dir, args, DEADLINE)
}

/// The file `name` in `dir` is `data`, byte for byte.
fn assert_file_is(dir: &TestDir, name: &str, data: &[u8], what: &str, run: &Run) {
    let path = dir.join(name);
    let got = std::fs::read(&path)
        .unwrap_or_else(|e| panic!("{what}: read {}: {e}\n{run}", path.display()));
    if got != data {
        let first = got.iter().zip(data).position(|(g, d)| g != d);
        panic!(
            "{what}: {name} is {} bytes, the source {} (first differing byte at {first:?})\n{run}",
            got.len(),
            data.len(),
        );
    }
}

// ---- Bytes past a response's framing --------------------------------------------------------

/// Files from one server in one `-i` list, one at a time (`-j1`), so each reuses the kept-alive
/// connection of the one before. The first file's responses are followed by a whole response
/// more: in the body's last write (`delay_ms` 0), or a moment later while the connection waits
/// idle for the next request (a slow file from another server comes between). That response may
/// never become the next file.
fn excess_after_body(server: TestServer, delay_ms: u64, split: bool) {
    let first = content(3301, 3 * MIB + 300_001);
    let second = content(3302, 2 * MIB + 99);
    let between = content(3303, 50_000);
    server.route(
        "/one.bin",
        Route::bytes(first.clone()).fault(Fault::Excess(delay_ms), When::Always),
    );
    server.route("/two.bin", Route::bytes(second.clone()));
    let other = TestServer::plain();
    other.route(
        "/between.bin",
        Route::bytes(between.clone()).delay_head(Duration::from_millis(4 * delay_ms)),
    );
    let dir = TestDir::new();
    let list = dir.join("list.txt");
    let mut urls = vec![server.url("/one.bin")];
    if delay_ms > 0 {
        urls.push(other.url("/between.bin"));
    }
    urls.push(server.url("/two.bin"));
    std::fs::write(&list, urls.join("\n") + "\n").expect("write the list");
    let list = list.display().to_string();
    let mut opts = vec!["-j1", "-i", &list];
    if split {
        opts.extend(["-x3", "-s3", "-k1M"]);
    }
    let run = ringdl(&dir, &server.args(&dir, &opts, &[]));
    let what = format!(
        "excess after {delay_ms} ms, split={split}, tls={}",
        server.is_tls()
    );
    assert_eq!(run.code(), 0, "{what}\n{run}");
    assert_file_is(&dir, "one.bin", &first, &what, &run);
    assert_file_is(&dir, "two.bin", &second, &what, &run);
    if delay_ms > 0 {
        assert_file_is(&dir, "between.bin", &between, &what, &run);
    }
}

#[test]
fn a_response_after_the_body_is_never_the_next_answer() {
    excess_after_body(TestServer::plain(), 0, false);
}

#[test]
fn a_response_after_the_body_is_never_the_next_answer_split() {
    excess_after_body(TestServer::plain(), 0, true);
}

#[test]
fn a_response_after_the_body_is_never_the_next_answer_https() {
    excess_after_body(TestServer::https(), 0, true);
}

#[test]
fn a_response_arriving_on_an_idle_connection_is_never_the_next_answer() {
    excess_after_body(TestServer::plain(), 100, false);
}

#[test]
fn a_response_arriving_on_an_idle_connection_is_never_the_next_answer_https() {
    excess_after_body(TestServer::https(), 100, false);
}

// ---- A range from another version of the file ------------------------------------------------

/// A route whose first answer is `first` (with ETag "v1") and every later one `then` (ETag "v2"),
/// ranges answered with a 206 whatever `If-Range` says: a file that changed on a server that
/// ignores `If-Range`.
fn changing_file(first: Route, then: &[u8]) -> Route {
    first.header("ETag", "\"v1\"").then_after(
        1,
        Route::bytes(then.to_vec())
            .header("ETag", "\"v2\"")
            .ignore_if_range(),
    )
}

/// Split four ways: the first answer is v1, the other ranges are v2. The download starts over on
/// the new version and ends with it whole, never a file of both.
#[test]
fn ranges_of_a_changed_file_are_never_spliced() {
    let v1 = content(3311, 4 * MIB + 12_345);
    let v2 = content(3312, 4 * MIB + 12_345);
    let server = TestServer::plain();
    server.route("/f.bin", changing_file(Route::bytes(v1), &v2));
    let dir = TestDir::new();
    let opts = ["-x4", "-s4", "-k1M"];
    let run = ringdl(&dir, &server.args(&dir, &opts, &[server.url("/f.bin")]));
    assert_eq!(run.code(), 0, "{run}");
    assert_file_is(&dir, "f.bin", &v2, "a changed file split four ways", &run);
    assert!(
        run.output().contains("changed during the download"),
        "the restart is said\n{run}"
    );
}

/// A partial file of v1 from an earlier run, resumed with `-c` once the server has v2 and
/// ignores `If-Range`: with `--always-resume` (the default) the download fails as for a whole
/// answer to `If-Range` (exit 1) and the partial file keeps its bytes; with
/// `--always-resume=false` it starts over and ends as v2.
#[test]
fn resuming_over_a_changed_file_never_splices() {
    let v1 = content(3313, 3 * MIB + 777);
    let v2 = content(3314, 3 * MIB + 777);
    // (Without its control file, `-c` goes on from the partial file's length, the version kept
    // on the file: review finding, that path took the new version's range for a restart and
    // emptied the file.)
    for (always, without_control_file) in [(true, false), (true, true), (false, false)] {
        let server = TestServer::plain();
        let first =
            Route::bytes(v1.clone()).fault(Fault::TruncateAfter(MIB as u64 + 5000), When::Always);
        server.route("/f.bin", changing_file(first, &v2));
        let dir = TestDir::new();
        let url = [server.url("/f.bin")];
        let run = ringdl(&dir, &server.args(&dir, &["--max-tries=1"], &url));
        assert_ne!(run.code(), 0, "the first run is cut short\n{run}");
        let partial = std::fs::read(dir.join("f.bin")).expect("a partial file");
        assert!(
            !partial.is_empty() && v1.starts_with(&partial),
            "a prefix of v1\n{run}"
        );
        if without_control_file {
            std::fs::remove_file(dir.join("f.bin.aria2")).expect("a control file to remove");
        }
        let resume = if always {
            "--always-resume=true"
        } else {
            "--always-resume=false"
        };
        let run = ringdl(
            &dir,
            &server.args(&dir, &["-c", resume, "--max-tries=1"], &url),
        );
        if always {
            assert_eq!(run.code(), 1, "{run}");
            // (Its bytes past the last claimed piece go: nothing claims them.)
            let now = std::fs::read(dir.join("f.bin")).expect("the partial file");
            assert!(now.len() >= MIB, "the claimed bytes stay\n{run}");
            assert!(partial.starts_with(&now), "only v1's bytes\n{run}");
            assert!(
                run.output()
                    .contains("changed since this partial download began"),
                "the refusal says why\n{run}"
            );
        } else {
            assert_eq!(run.code(), 0, "{run}");
            assert_file_is(&dir, "f.bin", &v2, "--always-resume=false", &run);
        }
    }
}

// ---- A failed download's last control-file save ------------------------------------------------

/// SHA-256 of `data` as `--checksum` takes it.
fn sha256_option(data: &[u8]) -> String {
    format!("--checksum=sha-256={}", crate::support::sha256_hex(data))
}

/// A name whose control file (`NAME.aria2`) is too long for the file system (255 bytes), while
/// the name itself is not: every control-file save fails with ENAMETOOLONG.
fn long_name() -> String {
    format!("{}.bin", "n".repeat(247))
}

/// The server sends bytes that fail `--checksum`, and no control file can be saved. The download
/// fails (exit 32); its file must not be left at its length with nothing saying its bytes are
/// not the file's, or the next `-c --checksum` run calls it complete and fails on it forever.
/// That run, against a server with the right bytes, downloads them (as aria2c does).
#[test]
fn a_failed_last_save_leaves_nothing_claimed() {
    // (Split, such a download fails already: without its control file, a write would leave a
    // gap, exit 17.)
    for tls in [false, true] {
        let right = content(3321, 3 * MIB + 4321);
        let wrong = content(3322, 3 * MIB + 4321);
        let server = if tls {
            TestServer::https()
        } else {
            TestServer::plain()
        };
        server.route("/f.bin", Route::bytes(wrong));
        let dir = TestDir::new();
        let name = long_name();
        let out = format!("--out={name}");
        let digest = sha256_option(&right);
        let mut o = vec![out.as_str(), digest.as_str(), "--max-tries=1"];
        let url = [server.url("/f.bin")];
        let run = ringdl(&dir, &server.args(&dir, &o, &url));
        assert_eq!(run.code(), 32, "tls={tls}: the checksum fails\n{run}");
        assert!(
            run.output().contains("Failed to save the control file"),
            "tls={tls}: the failed save is said\n{run}"
        );
        let left = std::fs::metadata(dir.join(&name)).map_or(0, |m| m.len());
        assert_eq!(
            left, 0,
            "tls={tls}: nothing describes the bytes: none is kept\n{run}"
        );
        server.route("/f.bin", Route::bytes(right.clone()));
        o.insert(0, "-c");
        let run = ringdl(&dir, &server.args(&dir, &o, &url));
        assert_eq!(
            run.code(),
            0,
            "tls={tls}: the rerun downloads the file\n{run}"
        );
        assert_file_is(&dir, &name, &right, "the rerun", &run);
    }
}
