//! The soak: two long-lived ringdl processes, one on each reactor, work through a long input list
//! of mixed downloads (big and small, HTTP and HTTPS, split, chunked, and routes whose every
//! response is cut or reset part-way, so every download of them goes through retries) from the
//! in-repo server, while their resident memory, open descriptors, operations in flight,
//! connections, blocks out and download places are sampled every second. At the end (Ctrl-C, as
//! a user stops it) the figures must have stayed flat and every file left without a control file
//! must hold its content's bytes.
//!
//! `RINGDL_SOAK_SECS` sets how long (default 15 s in the suite; `bench/soak.sh` runs 30 minutes
//! and prints the summary that goes into `bench/RESULTS.md`).

use std::io::Read;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::support::server::{Fault, Route, TestServer, When};
use crate::support::{binary_under_test, content, TestDir};

const NAMES: usize = 128;
const JOBS: usize = 4;

/// What route `k` serves, as the server and the checks both need it.
fn body(k: usize) -> Vec<u8> {
    let len = match k % 8 {
        0 => 4 << 20,
        1 | 4 => 20_000 + k * 97,
        2 | 3 => 1 << 20,
        5 => 2 << 20,
        _ => 300_000 + k * 1013,
    };
    content(9000 + k as u64, len)
}

fn route(k: usize, body: &[u8]) -> Route {
    let r = Route::bytes(body.to_vec());
    match k % 8 {
        // Every response cut (or reset) part-way: each try resumes where the last one ended.
        2 => r.fault(Fault::TruncateAfter(400_000), When::Always),
        3 => r.fault(Fault::ResetAfter(300_000), When::Always),
        6 => r.chunked(),
        _ => r,
    }
}

/// One sample of a process.
#[derive(Debug, Clone, Copy, Default)]
struct Sample {
    rss_kib: u64,
    fds: u64,
    in_flight: u64,
    conns: u64,
    blocks: u64,
    places: u64,
}

fn sample(pid: u32, log: &std::path::Path) -> Option<Sample> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let rss_kib = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())?;
    let fds = std::fs::read_dir(format!("/proc/{pid}/fd")).ok()?.count() as u64;
    let mut s = Sample {
        rss_kib,
        fds,
        ..Sample::default()
    };
    // The engine's last debug line: "engine: N operations in flight, C connections, R read and
    // W write blocks out, D downloads held".
    if let Ok(text) = read_tail(log, 64 * 1024) {
        if let Some(line) = text.lines().rev().find(|l| l.contains("] engine: ")) {
            let nums: Vec<u64> = line
                .split("engine: ")
                .nth(1)
                .unwrap_or_default()
                .split(|c: char| !c.is_ascii_digit())
                .filter_map(|t| t.parse().ok())
                .collect();
            if let [ops, conns, reads, writes, places] = nums[..] {
                s.in_flight = ops;
                s.conns = conns;
                s.blocks = reads + writes;
                s.places = places;
            }
        }
    }
    Some(s)
}

fn read_tail(path: &std::path::Path, n: u64) -> std::io::Result<String> {
    use std::io::{Seek, SeekFrom};
    let mut f = std::fs::File::open(path)?;
    let len = f.metadata()?.len();
    f.seek(SeekFrom::Start(len.saturating_sub(n)))?;
    let mut bytes = Vec::new();
    f.read_to_end(&mut bytes)?;
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

struct Soaker {
    engine: &'static str,
    dir: TestDir,
    child: Child,
    samples: Vec<Sample>,
}

impl Drop for Soaker {
    /// A failed check must not leave the other process running: it is killed with the test.
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start(engine: &'static str, plain: &TestServer, tls: &TestServer, entries: usize) -> Soaker {
    let dir = TestDir::new();
    let mut list = String::new();
    for i in 0..entries {
        let k = (i * 37) % NAMES;
        let server = if k % 8 == 1 || k % 8 == 5 { tls } else { plain };
        list.push_str(&format!(
            "{}\n  out=n{k}.bin\n",
            server.url(&format!("/r{k}.bin"))
        ));
        if k % 8 == 0 || k % 8 == 5 {
            list.push_str("  split=4\n  max-connection-per-server=4\n  min-split-size=1M\n");
        }
    }
    std::fs::write(dir.join("list.txt"), list).expect("write the list");
    let home = dir.join(".home");
    std::fs::create_dir_all(&home).expect("HOME");
    let child = Command::new(binary_under_test())
        .current_dir(dir.path())
        .env("HOME", &home)
        .args([
            "--no-conf".to_string(),
            format!("--engine={engine}"),
            format!("-d{}", dir.join("out").display()),
            format!("-i{}", dir.join("list.txt").display()),
            format!("-j{JOBS}"),
            format!("--ca-certificate={}", tls.ca_file().display()),
            "--max-tries=0".into(),
            "--retry-wait=0".into(),
            "--timeout=5".into(),
            "--allow-overwrite=true".into(),
            "--auto-file-renaming=false".into(),
            "--file-allocation=none".into(),
            "--console-log-level=error".into(),
            "--summary-interval=0".into(),
            "--download-result=hide".into(),
            format!("-l{}", dir.join("ringdl.log").display()),
            "--log-level=debug".into(),
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start ringdl");
    Soaker {
        engine,
        dir,
        child,
        samples: Vec::new(),
    }
}

fn max_of(xs: &[Sample], f: impl Fn(&Sample) -> u64) -> u64 {
    xs.iter().map(f).max().unwrap_or(0)
}

#[test]
fn soak_two_reactors_stay_flat_and_exact() {
    let secs: u64 = std::env::var("RINGDL_SOAK_SECS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(15);
    let plain = TestServer::plain();
    let tls = TestServer::https();
    let bodies: Vec<Vec<u8>> = (0..NAMES).map(body).collect();
    for (k, b) in bodies.iter().enumerate() {
        plain.route(&format!("/r{k}.bin"), route(k, b));
        tls.route(&format!("/r{k}.bin"), route(k, b));
    }
    // More entries than the time allows (a release build did 72 a second): the run is stopped,
    // not finished.
    let entries = (secs as usize * 400).max(8000);
    let mut soakers: Vec<Soaker> = ["uring", "portable"]
        .into_iter()
        .map(|e| start(e, &plain, &tls, entries))
        .collect();
    let started = Instant::now();
    while started.elapsed() < Duration::from_secs(secs) {
        std::thread::sleep(Duration::from_secs(1));
        for s in &mut soakers {
            if let Ok(Some(status)) = s.child.try_wait() {
                panic!("{} ringdl ended early: {status}", s.engine);
            }
            if let Some(x) = sample(s.child.id(), &s.dir.join("ringdl.log")) {
                s.samples.push(x);
            }
        }
    }
    let mut report = vec![format!(
        "soak: {secs} s, {} names, -j{JOBS}, two processes at once",
        NAMES
    )];
    // Ctrl-C to both at once, as the checks below take a while.
    for s in &soakers {
        // SAFETY: kill(2) with the pid of a child this test started and has not reaped.
        unsafe {
            libc::kill(s.child.id() as libc::pid_t, libc::SIGINT);
        }
    }
    for s in &mut soakers {
        let deadline = Instant::now() + Duration::from_secs(60);
        let status = loop {
            if let Some(st) = s.child.try_wait().expect("wait") {
                break st;
            }
            assert!(
                Instant::now() < deadline,
                "{}: no exit after Ctrl-C",
                s.engine
            );
            std::thread::sleep(Duration::from_millis(50));
        };
        let mut err = String::new();
        if let Some(mut e) = s.child.stderr.take() {
            let _ = e.read_to_string(&mut err);
        }
        assert!(!err.contains("panicked"), "{}: {err}", s.engine);
        assert!(
            matches!(status.code(), Some(0 | 7)),
            "{}: exit {status} after Ctrl-C\n{err}",
            s.engine
        );
        let log = std::fs::read_to_string(s.dir.join("ringdl.log")).unwrap_or_default();
        let completed = log.matches("Download complete:").count();
        assert!(completed > 0, "{}: nothing completed", s.engine);
        assert!(
            !log.contains("[ERROR]"),
            "{}: {}",
            s.engine,
            log.lines()
                .find(|l| l.contains("[ERROR]"))
                .unwrap_or_default()
        );

        // Every file without a control file holds its content's first bytes (all of them when
        // complete; a cut chunked body is its gap-free prefix).
        let mut whole = 0;
        for (k, want) in bodies.iter().enumerate() {
            let path = s.dir.join("out").join(format!("n{k}.bin"));
            let ctl = s.dir.join("out").join(format!("n{k}.bin.aria2"));
            if !path.exists() || ctl.exists() {
                continue;
            }
            let got = std::fs::read(&path).expect("read a finished file");
            assert!(
                got.len() <= want.len() && got[..] == want[..got.len()],
                "{}: n{k}.bin ({} bytes) is not its content's bytes",
                s.engine,
                got.len()
            );
            if got.len() == want.len() {
                whole += 1;
            }
        }
        assert!(whole > 0, "{}: no whole file", s.engine);

        // Flat: the second half never climbs above the first half's peak by more than noise.
        let n = s.samples.len();
        assert!(n >= 4, "{}: {n} samples", s.engine);
        let (first, second) = s.samples.split_at(n / 2);
        let rss = |xs: &[Sample]| max_of(xs, |x| x.rss_kib);
        assert!(
            rss(second) <= rss(first) + rss(first) / 10 + 2048,
            "{}: RSS climbed from {} to {} KiB",
            s.engine,
            rss(first),
            rss(second)
        );
        assert!(
            rss(&s.samples) < 96 * 1024,
            "{}: RSS {} KiB",
            s.engine,
            rss(&s.samples)
        );
        let fds = |xs: &[Sample]| max_of(xs, |x| x.fds);
        assert!(
            fds(second) <= fds(first) + 8,
            "{}: fds {} -> {}",
            s.engine,
            fds(first),
            fds(second)
        );
        let ops = |xs: &[Sample]| max_of(xs, |x| x.in_flight);
        assert!(
            ops(&s.samples) <= 256,
            "{}: {} operations in flight",
            s.engine,
            ops(&s.samples)
        );
        let places = max_of(&s.samples, |x| x.places);
        assert!(
            places <= (JOBS + 2) as u64,
            "{}: {places} download places",
            s.engine
        );
        let median = |f: fn(&Sample) -> u64, xs: &[Sample]| {
            let mut v: Vec<u64> = xs.iter().map(f).collect();
            v.sort_unstable();
            v.get(v.len() / 2).copied().unwrap_or(0)
        };
        report.push(format!(
            "{}: {completed} downloads completed, {whole} of {NAMES} files whole at the end; \
             RSS KiB median/max first half {}/{}, second half {}/{}; fds max {}/{}; \
             operations in flight max {}; connections max {}; blocks out max {}; download places max {places}; {n} samples",
            s.engine,
            median(|x| x.rss_kib, first),
            rss(first),
            median(|x| x.rss_kib, second),
            rss(second),
            fds(first),
            fds(second),
            ops(&s.samples),
            max_of(&s.samples, |x| x.conns),
            max_of(&s.samples, |x| x.blocks),
        ));
    }
    println!("{}", report.join("\n"));
}
