//! What every integration test needs: a fresh directory, the ringdl binary run with a deadline,
//! SHA-256 of bytes and files, deterministic content, and a loud skip when a peer program
//! (aria2c, nginx) is missing. The HTTP(S) test server lives in [`server`].
//!
//! `RINGDL_TEST_BIN=/usr/bin/aria2c cargo test --test tests download::` runs the end-to-end tests
//! against aria2c itself, to check what they expect of aria2's behaviour.
#![allow(dead_code)]

pub mod dns;
pub mod ftp;
pub mod nginx;
pub mod ports;
pub mod proxy;
pub mod rpc;
pub mod seccomp;
pub mod server;
pub mod sshd;
pub mod tamper;

use std::ffi::OsStr;
use std::io::Read;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use sha2::{Digest, Sha256};

/// How long one ringdl run may take before it is killed and the test fails as a hang.
pub const RUN_TIMEOUT: Duration = Duration::from_secs(60);

/// A temporary directory that lives as long as the test holds it.
pub struct TestDir {
    dir: tempfile::TempDir,
    path: PathBuf,
}

impl TestDir {
    pub fn new() -> TestDir {
        let dir = tempfile::Builder::new()
            .prefix("ringdl-test-")
            .tempdir()
            .expect("temp dir");
        // Canonical, so it compares equal to the absolute paths ringdl prints.
        let path = dir.path().canonicalize().expect("canonicalize temp dir");
        TestDir { dir, path }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The path of `name` inside the directory.
    pub fn join(&self, name: &str) -> PathBuf {
        self.path.join(name)
    }

    /// The path as a `String`, for `-d`.
    pub fn arg(&self) -> String {
        self.path.to_str().expect("UTF-8 temp dir").to_string()
    }

    /// Names of the entries in the directory, sorted.
    pub fn entries(&self) -> Vec<String> {
        entries_of(&self.path)
    }
}

/// Names of the entries in directory `path` (but the tests' `.home`), sorted.
pub fn entries_of(path: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(path)
        .expect("read directory")
        .map(|e| {
            e.expect("dir entry")
                .file_name()
                .to_string_lossy()
                .into_owned()
        })
        .filter(|n| n != ".home")
        .collect();
    names.sort();
    names
}

/// The result of one ringdl run.
#[derive(Debug)]
pub struct Run {
    pub args: Vec<String>,
    /// The exit code; None when a signal ended the process.
    pub status: Option<i32>,
    pub stdout: String,
    pub stderr: String,
    pub elapsed: Duration,
}

impl Run {
    /// The exit code; panics (showing the output) when the process died from a signal.
    pub fn code(&self) -> i32 {
        match self.status {
            Some(code) => code,
            None => panic!("ringdl was killed by a signal\n{self}"),
        }
    }

    /// stdout followed by stderr.
    pub fn output(&self) -> String {
        format!("{}{}", self.stdout, self.stderr)
    }

    /// Lines of stdout and stderr that contain `needle`.
    pub fn lines_with(&self, needle: &str) -> Vec<String> {
        self.output()
            .lines()
            .filter(|l| l.contains(needle))
            .map(str::to_string)
            .collect()
    }
}

impl std::fmt::Display for Run {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "ringdl {}\nexit: {:?} after {:?}\n--- stdout ---\n{}\n--- stderr ---\n{}",
            self.args.join(" "),
            self.status,
            self.elapsed,
            self.stdout,
            self.stderr
        )
    }
}

/// Runs ringdl with `args` in `dir` (its working directory, and its HOME, so no user
/// configuration or proxy variables leak in). Fails the test when the run takes longer than
/// [`RUN_TIMEOUT`] (it is killed) or when its output contains `panicked`.
pub fn ringdl<S: AsRef<OsStr>>(dir: &TestDir, args: &[S]) -> Run {
    ringdl_with_timeout(dir, args, RUN_TIMEOUT)
}

pub fn ringdl_with_timeout<S: AsRef<OsStr>>(dir: &TestDir, args: &[S], timeout: Duration) -> Run {
    run_program(&binary_under_test(), dir, args, timeout)
}

/// The ringdl binary Cargo built, or the program named by `RINGDL_TEST_BIN`: with
/// `RINGDL_TEST_BIN=aria2c` the same tests check aria2c itself, which is how their expectations
/// of aria2's behaviour were checked.
pub fn binary_under_test() -> PathBuf {
    match std::env::var_os("RINGDL_TEST_BIN") {
        Some(program) if !program.is_empty() => PathBuf::from(program),
        _ => PathBuf::from(env!("CARGO_BIN_EXE_ringdl")),
    }
}

/// [`ringdl_with_timeout`] for any program (the helpers' own tests use `sh`).
pub fn run_program<S: AsRef<OsStr>>(
    program: &Path,
    dir: &TestDir,
    args: &[S],
    timeout: Duration,
) -> Run {
    run_changed(program, dir, args, timeout, |_| {})
}

/// [`run_program`], with `change` applied to the command first (e.g. a seccomp filter).
pub fn run_changed<S: AsRef<OsStr>>(
    program: &Path,
    dir: &TestDir,
    args: &[S],
    timeout: Duration,
    change: impl FnOnce(&mut Command),
) -> Run {
    let home = dir.join(".home");
    std::fs::create_dir_all(&home).expect("create HOME");
    let mut cmd = isolated_command(program, dir.path(), &home);
    cmd.args(args);
    change(&mut cmd);
    let args: Vec<String> = args
        .iter()
        .map(|a| a.as_ref().to_string_lossy().into_owned())
        .collect();
    let started = Instant::now();
    let mut child = cmd
        .spawn()
        .unwrap_or_else(|e| panic!("spawn {}: {e}", program.display()));
    let stdout = drain(child.stdout.take().expect("stdout pipe"));
    let stderr = drain(child.stderr.take().expect("stderr pipe"));
    let (status, timed_out) = loop {
        if let Some(status) = child.try_wait().expect("wait for ringdl") {
            break (status, false);
        }
        if started.elapsed() > timeout {
            // The whole group, so a child still holding the pipes cannot keep us waiting.
            // SAFETY: kill(2) with the id of the process group this function created.
            unsafe {
                libc::kill(-(child.id() as libc::pid_t), libc::SIGKILL);
            }
            let _ = child.kill();
            break (child.wait().expect("wait for killed ringdl"), true);
        }
        thread::sleep(Duration::from_millis(10));
    };
    let run = Run {
        args,
        status: status.code(),
        stdout: stdout.join().expect("stdout reader"),
        stderr: stderr.join().expect("stderr reader"),
        elapsed: started.elapsed(),
    };
    assert!(!timed_out, "ringdl hung: killed after {timeout:?}\n{run}");
    assert!(!run.output().contains("panicked"), "ringdl panicked\n{run}");
    run
}

/// A command for `program` in `cwd` that sees none of the caller's configuration: HOME (and the XDG
/// config directory) under `home`, no proxy variables, stdin closed, stdout and stderr piped, and
/// its own process group, so a timeout can kill everything it started.
pub fn isolated_command(program: &Path, cwd: &Path, home: &Path) -> Command {
    let mut cmd = Command::new(program);
    cmd.current_dir(cwd)
        .env("HOME", home)
        .env("XDG_CONFIG_HOME", home.join(".config"))
        .process_group(0)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for var in [
        "http_proxy",
        "https_proxy",
        "ftp_proxy",
        "all_proxy",
        "no_proxy",
    ] {
        cmd.env_remove(var).env_remove(var.to_uppercase());
    }
    cmd
}

/// Reads a child's pipe to the end on its own thread (so neither pipe can fill and stall it).
pub fn drain(mut pipe: impl Read + Send + 'static) -> thread::JoinHandle<String> {
    thread::spawn(move || {
        let mut bytes = Vec::new();
        let _ = pipe.read_to_end(&mut bytes);
        String::from_utf8_lossy(&bytes).into_owned()
    })
}

pub fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// SHA-256 of a file's contents; panics (naming the file) when it cannot be read.
pub fn sha256_file(path: &Path) -> String {
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
    sha256_hex(&bytes)
}

/// A small seeded generator (SplitMix64), so content and chunk sizes repeat run to run.
pub struct SplitMix64(u64);

impl SplitMix64 {
    pub fn new(seed: u64) -> SplitMix64 {
        SplitMix64(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
}

/// `len` pseudo-random bytes determined by `seed`.
pub fn content(seed: u64, len: usize) -> Vec<u8> {
    let mut rng = SplitMix64::new(seed);
    let mut out = Vec::with_capacity(len + 8);
    while out.len() < len {
        out.extend_from_slice(&rng.next_u64().to_le_bytes());
    }
    out.truncate(len);
    out
}

/// The running test's name, as the test harness names its thread.
pub fn test_name() -> String {
    thread::current()
        .name()
        .unwrap_or("<unnamed test>")
        .to_string()
}

/// Whether a program is on PATH.
pub fn have_program(program: &str) -> bool {
    std::env::var_os("PATH").is_some_and(|paths| {
        std::env::split_paths(&paths).any(|dir| {
            let candidate = dir.join(program);
            candidate.metadata().is_ok_and(|m| {
                use std::os::unix::fs::PermissionsExt;
                m.is_file() && m.permissions().mode() & 0o111 != 0
            })
        })
    })
}

/// For a test that needs `program`: true when it was `found`. When it was not, panics if
/// `RINGDL_REQUIRE_PEERS=1` (CI that must run everything), otherwise prints a loud
/// `SKIPPED: <test>: <program> not installed` line and returns false, so the test can return.
pub fn require_peer(program: &str, found: bool) -> bool {
    if found {
        return true;
    }
    let test = test_name();
    if std::env::var("RINGDL_REQUIRE_PEERS").as_deref() == Ok("1") {
        panic!("{test}: {program} not installed, and RINGDL_REQUIRE_PEERS=1");
    }
    eprintln!("SKIPPED: {test}: {program} not installed");
    false
}

/// Skips a test that needs something this machine cannot give (root, a mount), loudly; fails it
/// under `RINGDL_REQUIRE_PEERS=1` (as [`require_peer`] does for programs).
pub fn skip_unless(ok: bool, why: &str) -> bool {
    if ok {
        return true;
    }
    let test = test_name();
    if std::env::var("RINGDL_REQUIRE_PEERS").as_deref() == Ok("1") {
        panic!("{test}: {why}, and RINGDL_REQUIRE_PEERS=1");
    }
    eprintln!("SKIPPED: {test}: {why}");
    false
}

/// apt-fast's aria2c command line over its input file: `list` is written to `apt-fast.list` in
/// `dir`, which is also the download directory.
pub fn apt_fast_args(dir: &TestDir, list: &str) -> Vec<String> {
    std::fs::write(dir.join("apt-fast.list"), list).expect("write apt-fast.list");
    [
        "--no-conf",
        "-c",
        "-j",
        "5",
        "-x",
        "10",
        "-s",
        "8",
        "-i",
        "apt-fast.list",
        "--min-split-size=1M",
        "--stream-piece-selector=default",
        "--connect-timeout=600",
        "--timeout=600",
        "-m0",
        "--header",
        "Accept: */*",
        "-d",
        &dir.arg(),
    ]
    .iter()
    .map(|s| s.to_string())
    .collect()
}

/// Writes the bytes of a version 1 `.aria2` control file (aria2's DefaultBtProgressInfoFile format,
/// big-endian) for an HTTP download of `total` bytes in pieces of `piece_len`: `done` pieces complete,
/// `in_flight` pieces with the listed 16 KiB blocks (counted from the piece's start) complete.
pub fn aria2_control_file(
    total: u64,
    piece_len: u32,
    done: &[u32],
    in_flight: &[(u32, &[u32])],
) -> Vec<u8> {
    let plen = u64::from(piece_len);
    let pieces = total.div_ceil(plen);
    let mut bitfield = vec![0u8; pieces.div_ceil(8) as usize];
    for &p in done {
        bitfield[p as usize / 8] |= 0x80 >> (p % 8);
    }
    let mut out = Vec::new();
    out.extend_from_slice(&1u16.to_be_bytes()); // version
    out.extend_from_slice(&[0; 4]); // extension flags
    out.extend_from_slice(&0u32.to_be_bytes()); // info hash length
    out.extend_from_slice(&piece_len.to_be_bytes());
    out.extend_from_slice(&total.to_be_bytes());
    out.extend_from_slice(&0u64.to_be_bytes()); // upload length
    out.extend_from_slice(&(bitfield.len() as u32).to_be_bytes());
    out.extend_from_slice(&bitfield);
    out.extend_from_slice(&(in_flight.len() as u32).to_be_bytes());
    for &(index, blocks) in in_flight {
        let start = u64::from(index) * plen;
        let length = (total - start).min(plen) as u32;
        let nblocks = u64::from(length).div_ceil(16 * 1024);
        let mut bits = vec![0u8; nblocks.div_ceil(8) as usize];
        for &b in blocks {
            assert!(u64::from(b) < nblocks);
            bits[b as usize / 8] |= 0x80 >> (b % 8);
        }
        out.extend_from_slice(&index.to_be_bytes());
        out.extend_from_slice(&length.to_be_bytes());
        out.extend_from_slice(&(bits.len() as u32).to_be_bytes());
        out.extend_from_slice(&bits);
    }
    out
}

/// The byte ranges a version 1 `.aria2` control file (as [`aria2_control_file`] writes it, and
/// aria2c and ringdl for HTTP downloads) claims as done: whole pieces, and the 16 KiB blocks of
/// pieces in flight. `None` for bytes that are not such a file.
pub fn control_claims(bytes: &[u8]) -> Option<Vec<(u64, u64)>> {
    let mut at = 0usize;
    let mut take = |n: usize| -> Option<&[u8]> {
        let part = bytes.get(at..at + n)?;
        at += n;
        Some(part)
    };
    let u32_of = |b: &[u8]| u32::from_be_bytes([b[0], b[1], b[2], b[3]]);
    if take(2)? != [0, 1] {
        return None;
    }
    take(4)?;
    let hash_len = u32_of(take(4)?) as usize;
    take(hash_len)?;
    let plen = u64::from(u32_of(take(4)?));
    let total = u64::from_be_bytes(take(8)?.try_into().ok()?);
    take(8)?;
    let bits_len = u32_of(take(4)?) as usize;
    let bits = take(bits_len)?.to_vec();
    let mut out = Vec::new();
    for p in 0..total.div_ceil(plen.max(1)) {
        if bits
            .get((p / 8) as usize)
            .is_some_and(|b| b & (0x80 >> (p % 8)) != 0)
        {
            out.push((p * plen, ((p + 1) * plen).min(total)));
        }
    }
    let in_flight = u32_of(take(4)?);
    for _ in 0..in_flight {
        let index = u64::from(u32_of(take(4)?));
        let length = u64::from(u32_of(take(4)?));
        let n = u32_of(take(4)?) as usize;
        let blocks = take(n)?.to_vec();
        let start = index * plen;
        for b in 0..length.div_ceil(16 * 1024) {
            if blocks
                .get((b / 8) as usize)
                .is_some_and(|x| x & (0x80 >> (b % 8)) != 0)
            {
                let a = start + b * 16 * 1024;
                out.push((a, (a + 16 * 1024).min(start + length)));
            }
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_claims_reads_what_aria2_control_file_writes() {
        let mib = 1 << 20;
        let ctl = aria2_control_file(5 * mib + 100, mib as u32, &[0, 3], &[(5, &[0])]);
        assert_eq!(
            control_claims(&ctl),
            Some(vec![(0, mib), (3 * mib, 4 * mib), (5 * mib, 5 * mib + 100)])
        );
        assert_eq!(control_claims(&ctl[..ctl.len() - 1]), None);
    }

    fn sh(script: &str, timeout: Duration) -> Run {
        let dir = TestDir::new();
        run_program(Path::new("/bin/sh"), &dir, &["-c", script], timeout)
    }

    #[test]
    fn run_captures_output_and_exit_code() {
        let run = sh("echo out; echo err >&2; exit 3", RUN_TIMEOUT);
        assert_eq!(
            (run.code(), run.stdout.as_str(), run.stderr.as_str()),
            (3, "out\n", "err\n")
        );
        assert_eq!(run.lines_with("er"), vec!["err".to_string()]);
    }

    #[test]
    fn run_uses_the_test_dir_and_a_private_home() {
        let dir = TestDir::new();
        let run = run_program(
            Path::new("/bin/sh"),
            &dir,
            &["-c", "pwd; echo $HOME"],
            RUN_TIMEOUT,
        );
        let lines: Vec<&str> = run.stdout.lines().collect();
        assert_eq!(lines, [dir.arg(), dir.join(".home").display().to_string()]);
        assert!(dir.entries().is_empty(), "HOME is hidden from entries()");
    }

    #[test]
    #[should_panic(expected = "hung: killed after")]
    fn run_kills_a_hang() {
        sh("sleep 30", Duration::from_millis(300));
    }

    #[test]
    #[should_panic(expected = "ringdl panicked")]
    fn run_fails_on_panic_text() {
        sh(
            "echo \"thread 'main' panicked at src/main.rs:1:1\" >&2",
            RUN_TIMEOUT,
        );
    }

    #[test]
    fn content_is_deterministic() {
        assert_eq!(content(7, 1000), content(7, 1000));
        assert_ne!(content(7, 1000), content(8, 1000));
        assert_eq!(content(7, 13), content(7, 1000)[..13]);
        assert_eq!(
            sha256_hex(b"abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        let dir = TestDir::new();
        std::fs::write(dir.join("f"), b"abc").unwrap();
        assert_eq!(sha256_file(&dir.join("f")), sha256_hex(b"abc"));
    }

    #[test]
    fn require_peer_reports_a_missing_program() {
        assert!(require_peer("sh", have_program("sh")));
        assert!(!have_program("surely-not-a-program-ringdl"));
        if std::env::var("RINGDL_REQUIRE_PEERS").as_deref() != Ok("1") {
            assert!(!require_peer("surely-not-a-program-ringdl", false));
        }
    }
}
