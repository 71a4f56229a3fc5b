//! The findings of issue 8 ("Engine v2"), each reproduced through the binary: a hang on a mirror that
//! redirects to the other, a failed checksum that leaves the O_DIRECT padding, a resume from a control
//! file whose pieces are not 4 KiB multiples (exit 17, or exit 0 with a hole), an HTTPS body cut
//! without close_notify called complete, and a write block leaked by every connection closed with a
//! receive in flight (the pool runs dry and the run stalls). Two more pin what must stay true through
//! the rewrite: errors of an apt-fast list with a dead first mirror are blamed on that mirror only,
//! and a download stopped with receives in flight claims only bytes that are on disk.
//!
//! Where a finding is a difference from aria2c, aria2c runs the same case first (when installed) and
//! the test checks it still does what the test says. Every run has a deadline well under the
//! harness's [`RUN_TIMEOUT`]: a hang is a failure ("ringdl hung: killed after ..."), never a stuck
//! test.

use std::ffi::OsStr;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::support::server::{Fault, Route, TestServer, When};
use crate::support::{
    aria2_control_file, content, have_program, isolated_command, require_peer, ringdl_with_timeout,
    run_program, sha256_hex, Run, TestDir, RUN_TIMEOUT,
};

const KIB: usize = 1 << 10;
const MIB: usize = 1 << 20;

/// Deadline of one run in these tests: each case takes a second or two when it works.
const DEADLINE: Duration = Duration::from_secs(20);

fn aria2c_present() -> bool {
    require_peer("aria2c", have_program("aria2c"))
}

fn ringdl<S: AsRef<OsStr>>(dir: &TestDir, args: &[S]) -> Run {
    assert!(DEADLINE < RUN_TIMEOUT);
    ringdl_with_timeout(dir, args, DEADLINE)
}

fn aria2c<S: AsRef<OsStr>>(dir: &TestDir, args: &[S]) -> Run {
    run_program(Path::new("aria2c"), dir, args, DEADLINE)
}

/// The file at `path` is `data`, byte for byte; otherwise a message with both lengths and the first
/// differing offset.
fn assert_file_is(path: &Path, data: &[u8], what: &str, run: &Run) {
    let got = std::fs::read(path)
        .unwrap_or_else(|e| panic!("{what}: read {}: {e}\n{run}", path.display()));
    if got == data {
        return;
    }
    let first = got.iter().zip(data).position(|(g, d)| g != d);
    panic!(
        "{what}: {} is {} bytes, the source {} (first differing byte at {:?}; on disk there: {:?})\n{run}",
        path.display(),
        got.len(),
        data.len(),
        first,
        first.map(|at| got[at]),
    );
}

/// Exit 0 and `name` in `dir` is `data`.
fn assert_complete(run: &Run, dir: &TestDir, name: &str, data: &[u8], what: &str) {
    assert_eq!(run.code(), 0, "{what}: did not complete\n{run}");
    assert_file_is(&dir.join(name), data, what, run);
}

// ---- Hang: a mirror that redirects to the other ----------------------------------------------

/// Two URIs for one file, the second a redirect to the first, split (`-k1M`, so a 6 MiB file is
/// split at all). aria2c finishes; ringdl stopped at 50 % with `CN:1 DL:0B` and never ended: the
/// redirected connection is closed (`close_exchange_conn`) without giving its range back, so the
/// range stays owned by a connection that no longer exists.
fn mirror_redirecting_to_the_other(https: bool, opts: &[&str]) {
    let server = if https {
        TestServer::https()
    } else {
        TestServer::plain()
    };
    let data = content(801, 6 * MIB + 4321);
    server.route("/a/f.bin", Route::bytes(data.clone()));
    server.route("/b/f.bin", Route::redirect(302, server.url("/a/f.bin")));
    let urls = [server.url("/a/f.bin"), server.url("/b/f.bin")];
    let what = format!("{opts:?}, https={https}");
    if aria2c_present() {
        let dir = TestDir::new();
        let run = aria2c(&dir, &server.args(&dir, opts, &urls));
        assert_complete(&run, &dir, "f.bin", &data, &format!("aria2c {what}"));
    }
    let dir = TestDir::new();
    let run = ringdl(&dir, &server.args(&dir, opts, &urls));
    assert_complete(&run, &dir, "f.bin", &data, &what);
    assert_eq!(dir.entries(), ["f.bin"], "{what}: left behind\n{run}");
}

#[test]
fn second_mirror_redirecting_to_the_first_completes_s2() {
    mirror_redirecting_to_the_other(false, &["-s2", "-k1M"]);
}

#[test]
fn second_mirror_redirecting_to_the_first_completes_https_x4_s4() {
    mirror_redirecting_to_the_other(true, &["-x4", "-s4", "-k1M"]);
}

// ---- A failed checksum leaves the real length ----------------------------------------------

/// `--checksum` with the wrong digest: exit 32, and the file is the server's bytes at their real
/// length (aria2c's result), not the O_DIRECT padding up to the next 4 KiB (10,002,432 bytes).
#[test]
fn failed_checksum_leaves_the_real_length_and_bytes() {
    const LEN: usize = 10_000_019;
    let server = TestServer::plain();
    let data = content(802, LEN);
    server.route("/c.bin", Route::bytes(data.clone()));
    let wrong = format!("--checksum=sha-256={}", "0".repeat(64));
    let urls = [server.url("/c.bin")];
    for (program, opts) in [
        ("aria2c", &[][..]),
        ("ringdl", &[][..]),
        ("ringdl", &["-x4"][..]),
    ] {
        let mut o = vec![wrong.as_str()];
        o.extend_from_slice(opts);
        let dir = TestDir::new();
        let run = match program {
            "aria2c" if !aria2c_present() => continue,
            "aria2c" => aria2c(&dir, &server.args(&dir, &o, &urls)),
            _ => ringdl(&dir, &server.args(&dir, &o, &urls)),
        };
        let what = format!("{program} {opts:?}");
        assert_eq!(run.code(), 32, "{what}: a checksum error is exit 32\n{run}");
        assert_file_is(&dir.join("c.bin"), &data, &what, &run);
    }
}

// ---- Piece lengths that are not 4 KiB multiples --------------------------------------------

/// The byte ranges a control file made by [`aria2_control_file`] claims.
fn claimed(
    total: u64,
    piece_len: u32,
    done: &[u32],
    in_flight: &[(u32, &[u32])],
) -> Vec<(u64, u64)> {
    let plen = u64::from(piece_len);
    let mut out: Vec<(u64, u64)> = done
        .iter()
        .map(|&p| (u64::from(p) * plen, ((u64::from(p) + 1) * plen).min(total)))
        .collect();
    for &(index, blocks) in in_flight {
        let start = u64::from(index) * plen;
        let end = (start + plen).min(total);
        for &b in blocks {
            let a = start + u64::from(b) * 16 * 1024;
            out.push((a, (a + 16 * 1024).min(end)));
        }
    }
    out
}

/// A partial download as aria2c leaves it: the file at its full length (preallocated), the claimed
/// ranges holding the source's bytes and zeros elsewhere, and its control file.
fn partial_download(
    dir: &TestDir,
    name: &str,
    data: &[u8],
    piece_len: u32,
    done: &[u32],
    in_flight: &[(u32, &[u32])],
) {
    let total = data.len() as u64;
    let mut file = vec![0u8; data.len()];
    for (a, b) in claimed(total, piece_len, done, in_flight) {
        file[a as usize..b as usize].copy_from_slice(&data[a as usize..b as usize]);
    }
    std::fs::write(dir.join(name), file).unwrap();
    std::fs::write(
        dir.join(&format!("{name}.aria2")),
        aria2_control_file(total, piece_len, done, in_flight),
    )
    .unwrap();
}

fn copy_of(dir: &TestDir) -> TestDir {
    let copy = TestDir::new();
    for name in dir.entries() {
        std::fs::copy(dir.join(&name), copy.join(&name)).unwrap();
    }
    copy
}

/// Resumes the partial download in `dir` with aria2c (on a copy: it must finish, which checks the
/// fixture) and with ringdl: exit 0, SHA-exact, no control file left.
fn resume_both(
    server: &TestServer,
    dir: &TestDir,
    name: &str,
    data: &[u8],
    opts: &[&str],
    what: &str,
) {
    let urls = [server.url(&format!("/{name}"))];
    if aria2c_present() {
        let copy = copy_of(dir);
        let run = aria2c(&copy, &server.args(&copy, opts, &urls));
        assert_complete(
            &run,
            &copy,
            name,
            data,
            &format!("aria2c resuming ({what})"),
        );
    }
    let run = ringdl(dir, &server.args(dir, opts, &urls));
    assert_complete(&run, dir, name, data, &format!("ringdl resuming ({what})"));
    assert_eq!(dir.entries(), [name], "{what}: left behind\n{run}");
}

/// aria2's `--piece-length=1048577`: every piece after the first starts 1 byte further past a 4 KiB
/// boundary. A partial download made by aria2c with it (four connections, stopped with Ctrl-C part
/// way) is resumed by `ringdl -c --piece-length=1048577` (it exited 17, "Failed to write into the
/// file ... Invalid argument": an O_DIRECT write at an unaligned offset).
#[test]
fn resume_of_aria2c_download_with_piece_length_1048577() {
    if !aria2c_present() {
        return;
    }
    let server = TestServer::plain();
    let data = content(803, 16 * MIB + 999);
    // About 1.6 MiB/s per connection: a second gets a third of the file with -x4.
    server.route(
        "/p.bin",
        Route::bytes(data.clone()).throttle(16 * KIB, Duration::from_millis(10)),
    );
    let dir = TestDir::new();
    let started = server.args(
        &dir,
        &["--piece-length=1048577", "-x4", "--console-log-level=error"],
        &[server.url("/p.bin")],
    );
    let home = dir.join(".home");
    std::fs::create_dir_all(&home).unwrap();
    let mut child = isolated_command(Path::new("aria2c"), dir.path(), &home)
        .args(&started)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn aria2c");
    std::thread::sleep(Duration::from_millis(1500));
    let _ = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status();
    let deadline = Instant::now() + DEADLINE;
    let code = loop {
        if let Some(status) = child.try_wait().expect("wait for aria2c") {
            break status.code();
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("aria2c did not stop after Ctrl-C");
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    assert_eq!(code, Some(7), "aria2c was not interrupted part way");
    assert!(
        dir.join("p.bin.aria2").exists(),
        "aria2c left no control file: {:?}",
        dir.entries()
    );
    server.route("/p.bin", Route::bytes(data.clone()));
    let sum = format!("--checksum=sha-256={}", sha256_hex(&data));
    resume_both(
        &server,
        &dir,
        "p.bin",
        &data,
        &["-c", "--piece-length=1048577", "-x4", &sum],
        "aria2c's partial download, --piece-length=1048577",
    );
}

/// The same without aria2c: a control file with `--piece-length=1048577` claiming pieces 0, 2 and 4
/// and some 16 KiB blocks of piece 1 (so every gap starts and ends off a 4 KiB boundary), and the
/// file holding exactly those bytes. `ringdl -c --checksum` must complete SHA-exact.
#[test]
fn resume_from_control_file_with_piece_length_1048577() {
    const P: u32 = 1_048_577;
    let server = TestServer::plain();
    let data = content(804, 6 * P as usize + 123);
    server.route("/u.bin", Route::bytes(data.clone()));
    let dir = TestDir::new();
    partial_download(
        &dir,
        "u.bin",
        &data,
        P,
        &[0, 2, 4],
        &[(1, &[0, 1, 5, 20, 63])],
    );
    let sum = format!("--checksum=sha-256={}", sha256_hex(&data));
    resume_both(
        &server,
        &dir,
        "u.bin",
        &data,
        &["-c", "--piece-length=1048577", "-x4", &sum],
        "constructed control file, --piece-length=1048577",
    );
}

/// Review finding 3: a gap that starts aligned but ends 4000 bytes past a 4 KiB boundary (piece 0
/// missing, every other piece done, pieces of 1 MiB + 4000). `write_len` rounds the gap's last
/// block down, the plan marks the rest received, and the in-order hash covers the bytes received,
/// not those written. aria2c completes it; ringdl must too, SHA-exact, with and without
/// `--checksum` (without it, the hole must not be left behind with exit 0).
#[test]
fn resume_gap_ending_off_alignment_hashes_what_is_on_disk() {
    const P: u32 = 1_048_576 + 4000;
    let server = TestServer::plain();
    let data = content(805, 4 * P as usize + 777);
    server.route("/g.bin", Route::bytes(data.clone()));
    let sum = format!("--checksum=sha-256={}", sha256_hex(&data));
    let piece = format!("--piece-length={P}");
    let url = [server.url("/g.bin")];
    let fixture = || {
        let dir = TestDir::new();
        partial_download(&dir, "g.bin", &data, P, &[1, 2, 3, 4], &[]);
        dir
    };
    if aria2c_present() {
        let dir = fixture();
        let run = aria2c(&dir, &server.args(&dir, &["-c", &piece, &sum], &url));
        assert_complete(&run, &dir, "g.bin", &data, "aria2c resuming");
    }
    // Every variant runs before the verdict, so a failure shows them all.
    let mut wrong = Vec::new();
    for opts in [&["-x1"][..], &["-x4"], &["-x1", &sum], &["-x4", &sum]] {
        let dir = fixture();
        let mut o = vec!["-c", piece.as_str()];
        o.extend_from_slice(opts);
        let run = ringdl(&dir, &server.args(&dir, &o, &url));
        let got = std::fs::read(dir.join("g.bin")).unwrap_or_default();
        if run.code() != 0 || got != data {
            let hole = got.iter().zip(&data).position(|(g, d)| g != d);
            let zeros = hole.map_or(0, |at| got[at..].iter().take_while(|&&b| b == 0).count());
            wrong.push(format!(
                "{opts:?}: exit {}, {} bytes of {}, first wrong byte at {hole:?} ({zeros} zeros \
                 from there)",
                run.code(),
                got.len(),
                data.len()
            ));
        }
    }
    assert!(
        wrong.is_empty(),
        "resuming with piece 0 of {P} bytes missing:\n{}",
        wrong.join("\n")
    );
}

// ---- A dead mirror in an apt-fast list -----------------------------------------------------

/// apt-fast's command line over a list whose every entry is `URL1<TAB>URL2`, URL1's server
/// answering 404 for everything. aria2c exits 0 with every file; ringdl exited 3 and named URL2
/// with a 404 URL2's server never sent. A 404 must only ever be attributed to URL1.
#[test]
fn apt_fast_list_with_a_dead_first_mirror() {
    let dead = TestServer::plain(); // no routes: 404 for every path
    let good = TestServer::plain();
    let sizes = [
        300 * KIB + 7,
        MIB + 1,
        2 * MIB + 4321,
        3 * MIB + 11,
        700 * KIB,
    ];
    let files: Vec<(String, Vec<u8>)> = sizes
        .iter()
        .enumerate()
        .map(|(i, &len)| {
            (
                format!("pkg{i}_1.0_amd64.deb"),
                content(810 + i as u64, len),
            )
        })
        .collect();
    let mut list = String::new();
    for (name, data) in &files {
        let path = format!("/debian/pool/main/{name}");
        good.route(&path, Route::bytes(data.clone()));
        list.push_str(&format!(
            "{}\t{}\n checksum=sha-256={}\n out={name}\n",
            dead.url(&path),
            good.url(&path),
            sha256_hex(data)
        ));
    }
    let opts = |dir: &TestDir| -> Vec<String> { crate::support::apt_fast_args(dir, &list) };
    let check = |program: &str, run: &Run, dir: &TestDir| {
        assert_eq!(run.code(), 0, "{program}: the list did not complete\n{run}");
        for (name, data) in &files {
            assert_file_is(&dir.join(name), data, &format!("{program} {name}"), run);
        }
        let good_prefix = good.url("/");
        for line in run.lines_with("status=404") {
            assert!(
                !line.contains(&good_prefix),
                "{program}: a 404 blamed on the mirror that never sent one ({good_prefix}): {line}\n{run}"
            );
        }
    };
    if aria2c_present() {
        let dir = TestDir::new();
        let run = aria2c(&dir, &opts(&dir));
        check("aria2c", &run, &dir);
    }
    let dir = TestDir::new();
    let run = ringdl(&dir, &opts(&dir));
    check("ringdl", &run, &dir);
    assert!(
        good.requests()
            .iter()
            .all(|r| r.header("Accept") == Some("*/*")),
        "--header \"Accept: */*\" not sent"
    );
}

// ---- HTTPS truncation without close_notify -------------------------------------------------

/// An HTTPS body framed by the connection's close (no Content-Length) ends with a TCP FIN but no TLS
/// close_notify, part way: anyone on the path can cut it there, so it is not a complete download.
/// aria2c (GnuTLS) fails it; ringdl called it complete (exit 0, a short file).
#[test]
fn https_until_close_body_cut_without_close_notify_is_not_complete() {
    let server = TestServer::https();
    let data = content(806, 2 * MIB + 77);
    let cut = 700_000u64;
    server.route(
        "/t.bin",
        Route::bytes(data.clone())
            .close_delimited()
            .fault(Fault::TruncateWithoutCloseNotify(cut), When::Always),
    );
    let urls = [server.url("/t.bin")];
    let opts = ["--max-tries=2"];
    let aria2_code = if aria2c_present() {
        let dir = TestDir::new();
        let run = aria2c(&dir, &server.args(&dir, &opts, &urls));
        assert_ne!(run.code(), 0, "aria2c called the cut body complete\n{run}");
        Some(run.code())
    } else {
        None
    };
    let dir = TestDir::new();
    let run = ringdl(&dir, &server.args(&dir, &opts, &urls));
    let len = std::fs::metadata(dir.join("t.bin")).map(|m| m.len()).ok();
    assert_ne!(
        run.code(),
        0,
        "a body cut without close_notify after {cut} bytes was called complete (file: {len:?} \
         bytes; aria2c exits {aria2_code:?})\n{run}"
    );
    if let Some(code) = aria2_code {
        assert_eq!(run.code(), code, "aria2c exits {code}\n{run}");
    }
    // The same body ended by close_notify is complete.
    server.route("/t.bin", Route::bytes(data.clone()).close_delimited());
    let dir = TestDir::new();
    let run = ringdl(&dir, &server.args(&dir, &opts, &urls));
    assert_complete(
        &run,
        &dir,
        "t.bin",
        &data,
        "the same body ended by close_notify",
    );
}

// ---- Write blocks leaked by connections closed with a receive in flight --------------------

/// Review finding 1: a connection closed with a receive in flight loses its write block
/// (`forget_op` drops the closing connection, with its fill, before `on_recv` can free it). Here
/// every download but the last fails as soon as a segment request is answered 503 (`-m1
/// --retry-wait=1`: no retry), while its first connection is receiving a throttled body into a
/// write block: `stop_conns` closes it mid-receive and the block is gone. Sixteen of them leak
/// more than the pool's twelve write blocks (`-x4 -s4 -j1`); the last download, from a healthy
/// route, then sat at `0B/5.0MiB CN:4 DL:0B` forever. The run must end, with that file exact.
#[test]
fn connections_stopped_mid_receive_do_not_drain_the_write_pool() {
    let server = TestServer::plain();
    let bad = content(820, 4 * MIB);
    let good = content(821, 5 * MIB + 3);
    server.route(
        "/bad.bin",
        Route::bytes(bad)
            .throttle(32 * KIB, Duration::from_millis(5))
            .fault(Fault::Unavailable(None), When::SegmentRequests),
    );
    server.route("/good.bin", Route::bytes(good.clone()));
    let mut list = String::new();
    for i in 0..16 {
        list.push_str(&format!("{}\n out=bad{i}.bin\n", server.url("/bad.bin")));
    }
    list.push_str(&format!("{}\n out=good.bin\n", server.url("/good.bin")));
    let dir = TestDir::new();
    std::fs::write(dir.join("list"), &list).unwrap();
    let opts = [
        "-x4",
        "-s4",
        "-k1M",
        "-j1",
        "-m1",
        "--retry-wait=1",
        "-i",
        "list",
    ];
    let run = ringdl(&dir, &server.args(&dir, &opts, &[]));
    assert_file_is(
        &dir.join("good.bin"),
        &good,
        "the download after sixteen stopped ones",
        &run,
    );
    assert_ne!(run.code(), 0, "the bad downloads failed\n{run}");
}

/// The byte ranges a version 1 `.aria2` control file claims: complete pieces, and the complete
/// 16 KiB blocks of in-flight pieces (read here, not through ringdl's own decoder).
fn claims_of(ctl: &[u8]) -> Vec<(u64, u64)> {
    let mut at = 0usize;
    let mut take = |n: usize| {
        let s = &ctl[at..at + n];
        at += n;
        s
    };
    let u32_ = |b: &[u8]| u32::from_be_bytes(b.try_into().unwrap());
    assert_eq!(take(2), [0, 1], "version 1");
    take(4);
    assert_eq!(u32_(take(4)), 0, "no info hash");
    let plen = u64::from(u32_(take(4)));
    let total = u64::from_be_bytes(take(8).try_into().unwrap());
    take(8);
    let blen = u32_(take(4)) as usize;
    let bits = take(blen).to_vec();
    let mut out = Vec::new();
    for p in 0..total.div_ceil(plen) {
        if bits[p as usize / 8] & (0x80 >> (p % 8)) != 0 {
            out.push((p * plen, ((p + 1) * plen).min(total)));
        }
    }
    for _ in 0..u32_(take(4)) {
        let index = u64::from(u32_(take(4)));
        let length = u64::from(u32_(take(4)));
        let n = u32_(take(4)) as usize;
        let bits = take(n).to_vec();
        let start = index * plen;
        for b in 0..length.div_ceil(16 * 1024) {
            if bits[b as usize / 8] & (0x80 >> (b % 8)) != 0 {
                let a = start + b * 16 * 1024;
                out.push((a, (a + 16 * 1024).min(start + length)));
            }
        }
    }
    out
}

/// Review finding 2: `return_range` counts the bytes of a fill whose receive is in flight as
/// received (`keep = seg.pos`) although they are never written. A download that fails while its
/// first connection is receiving (after about half a second, the segment requests are answered
/// 503, `-m1 --retry-wait=1`) must leave a control file that claims only bytes that are on disk,
/// and resuming it must give the exact file.
#[test]
fn failed_download_claims_only_bytes_on_disk() {
    let server = TestServer::plain();
    let data = content(830, 8 * MIB + 5);
    let broken = || {
        Route::bytes(data.clone())
            .throttle(32 * KIB, Duration::from_millis(5))
            .then_after(
                1,
                Route::bytes(data.clone())
                    .delay_head(Duration::from_millis(500))
                    .fault(Fault::Unavailable(None), When::Always),
            )
    };
    let urls = [server.url("/f.bin")];
    let opts = ["-x4", "-s4", "-k1M", "-m1", "--retry-wait=1"];
    let mut wrong = Vec::new();
    // A few rounds: where the first connection's block stands when the 503 arrives varies.
    for round in 0..3 {
        server.route("/f.bin", broken());
        let dir = TestDir::new();
        let run = ringdl(&dir, &server.args(&dir, &opts, &urls));
        assert_ne!(
            run.code(),
            0,
            "round {round}: the 503 did not end it\n{run}"
        );
        let ctl = std::fs::read(dir.join("f.bin.aria2"))
            .unwrap_or_else(|e| panic!("round {round}: no control file ({e})\n{run}"));
        let file = std::fs::read(dir.join("f.bin")).unwrap();
        for (a, b) in claims_of(&ctl) {
            let (a, b) = (a as usize, b as usize);
            if b > file.len() || file[a..b] != data[a..b] {
                let at = (a..b.min(file.len()))
                    .find(|&i| file[i] != data[i])
                    .unwrap_or(file.len());
                wrong.push(format!(
                    "round {round}: claims {a}..{b}, but byte {at} on disk is not the source's \
                     (file {} bytes)",
                    file.len()
                ));
                break;
            }
        }
        assert!(
            !claims_of(&ctl).is_empty(),
            "round {round}: nothing claimed, nothing tested\n{run}"
        );
        server.route("/f.bin", Route::bytes(data.clone()));
        let run = ringdl(&dir, &server.args(&dir, &opts, &urls));
        if run.code() != 0 || std::fs::read(dir.join("f.bin")).ok().as_deref() != Some(&data[..]) {
            wrong.push(format!(
                "round {round}: resuming gave exit {} and a wrong file",
                run.code()
            ));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}
