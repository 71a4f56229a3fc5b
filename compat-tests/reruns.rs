//! The rerun matrix: a command run again over whatever an earlier run (or the user) left on disk.
//! Every case prepares one state in two fresh directories, identically (a complete file, a partial
//! one, a corrupt one, a longer one, an empty one, a directory in the way, a control file with or
//! without its file, the partial files aria2c and ringdl leave when interrupted...), runs aria2c in
//! one and ringdl in the other against the same server with one set of options, and compares the
//! exit codes and the files left behind.
//!
//! Besides agreeing with aria2c, ringdl must keep its own promise in every case: no byte a user or
//! an earlier run had is lost unless an option says so ([`kept_or_replaced`]).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};
use std::thread;
use std::time::{Duration, Instant};

use crate::support::server::{Route, TestServer};
use crate::support::{
    aria2_control_file, content, isolated_command, require_peer, sha256_hex, TestDir,
};

/// The remote file's length: more than one write block and more than one 1 MiB piece.
const LEN: usize = 1_500_000;
/// aria2's piece length (and ringdl's), the unit of a control file's bitfield.
const PIECE: u64 = 1 << 20;
/// How long one run may take.
const DEADLINE: Duration = Duration::from_secs(30);
/// The served file's name in every case.
const NAME: &str = "f.bin";
const CTL: &str = "f.bin.aria2";

/// What the server has at `/<remote>/f.bin`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Remote {
    /// The file the states were made from.
    Same,
    /// The same, without range support (every request gets a 200 with the whole body).
    NoRanges,
    /// The same, chunked and without range support: no answer says the file's length.
    NoLength,
    /// A third of it: an existing complete file is longer than the remote.
    Shorter,
    /// It with 300,000 more bytes: an existing complete file is a part of it.
    Longer,
    /// Another file of the same length (the remote changed since the earlier run).
    Changed,
    /// 404.
    Gone,
}

impl Remote {
    fn path(self) -> &'static str {
        match self {
            Remote::Same => "/same/f.bin",
            Remote::NoRanges => "/noranges/f.bin",
            Remote::NoLength => "/nolength/f.bin",
            Remote::Shorter => "/shorter/f.bin",
            Remote::Longer => "/longer/f.bin",
            Remote::Changed => "/changed/f.bin",
            Remote::Gone => "/gone/f.bin",
        }
    }

    /// The bytes served (empty for `Gone`).
    fn bytes(self) -> Vec<u8> {
        let base = original();
        match self {
            Remote::Same | Remote::NoRanges | Remote::NoLength => base,
            Remote::Shorter => base[..LEN / 3].to_vec(),
            Remote::Longer => {
                let mut b = base;
                b.extend(content(0x5eed_0002, 300_000));
                b
            }
            Remote::Changed => content(0x5eed_0003, LEN),
            Remote::Gone => Vec::new(),
        }
    }
}

/// The file every state is made from.
fn original() -> Vec<u8> {
    content(0x5eed_0001, LEN)
}

/// What is on disk before the run, under the name the download will use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum State {
    Nothing,
    /// The original file, whole.
    Complete,
    /// The whole file and a control file claiming every piece.
    CompleteClaimed,
    /// The original with 64 bytes flipped in its second piece.
    Corrupt,
    /// A file of zeros of the original's length, a control file claiming every piece.
    ZerosClaimed,
    /// The first half of the original, no control file.
    Half,
    /// The first 5,000 bytes (less than one 16 KiB block).
    Tiny,
    /// The original followed by 100,000 more bytes.
    Longer,
    /// An empty file.
    Empty,
    /// The first piece of the original, then zeros to full length, a control file claiming the
    /// first piece (a file allocated up front).
    PieceClaimed,
    /// The first piece only (the file cut there), a control file claiming it.
    PieceClaimedShort,
    /// A control file claiming the first piece, no file.
    ControlAlone,
    /// A control file for another length (the remote of an earlier run was longer).
    ControlOtherLength,
    /// A directory where the file would be.
    Directory,
    /// The first half of the original made immutable (`chattr +i`): no one can write it.
    Immutable,
    /// What aria2c leaves when interrupted with SIGINT part-way (`-x4`).
    Aria2Interrupted,
    /// What ringdl leaves when interrupted with SIGINT part-way (`-x4`).
    RingdlInterrupted,
    /// What aria2c leaves when killed with SIGKILL part-way (`-x4`).
    Aria2Killed,
    /// What ringdl leaves when killed with SIGKILL part-way (`-x4`).
    RingdlKilled,
}

pub const STATES: &[State] = &[
    State::Nothing,
    State::Complete,
    State::CompleteClaimed,
    State::Corrupt,
    State::ZerosClaimed,
    State::Half,
    State::Tiny,
    State::Longer,
    State::Empty,
    State::PieceClaimed,
    State::PieceClaimedShort,
    State::ControlAlone,
    State::ControlOtherLength,
    State::Directory,
    State::Immutable,
    State::Aria2Interrupted,
    State::RingdlInterrupted,
    State::Aria2Killed,
    State::RingdlKilled,
];

/// The option sets of the matrix (`{sha}`: the served file's SHA-256, `{bad}`: another one).
pub const OPTIONS: &[&[&str]] = &[
    &[],
    &["-c"],
    &["-V", "--checksum=sha-256={sha}"],
    &["-c", "--checksum=sha-256={sha}"],
    &["--checksum=sha-256={sha}"],
    &["--checksum=sha-256={bad}"],
    &["-V", "--checksum=sha-256={bad}"],
    &["-V"],
    &["--allow-overwrite=true"],
    &["--auto-file-renaming=false"],
    &["-c", "--always-resume=false"],
    &["--remove-control-file=true"],
    &["-c", "-x4", "-s4", "--min-split-size=1M"],
    &["--conditional-get=true"],
    &["--hash-check-only"],
    &["-c", "--hash-check-only"],
    &["-V", "--hash-check-only", "--checksum=sha-256={sha}"],
];

/// The option sets run against the remotes other than `Same`.
pub const FEW_OPTIONS: &[&[&str]] = &[
    &[],
    &["-c"],
    &["-V", "--checksum=sha-256={sha}"],
    &["-c", "--checksum=sha-256={bad}"],
    &["--allow-overwrite=true"],
];

/// Every case of the matrix, for the suite's own count.
pub fn cases() -> Vec<(State, &'static [&'static str], Remote)> {
    let mut out = Vec::new();
    for &s in STATES {
        for &o in OPTIONS {
            out.push((s, o, Remote::Same));
        }
    }
    for r in [
        Remote::NoRanges,
        Remote::NoLength,
        Remote::Shorter,
        Remote::Longer,
        Remote::Changed,
        Remote::Gone,
    ] {
        for &s in STATES {
            if matches!(s, State::Nothing | State::Directory | State::Immutable)
                && r != Remote::Gone
            {
                continue;
            }
            for &o in FEW_OPTIONS {
                out.push((s, o, r));
            }
        }
    }
    out
}

/// One shared server for the whole matrix: every remote, and a slow copy of the original for
/// making interrupted partial files.
fn server() -> &'static TestServer {
    static SERVER: OnceLock<TestServer> = OnceLock::new();
    SERVER.get_or_init(|| {
        let s = TestServer::plain();
        let lm = "Wed, 01 Jan 2025 00:00:00 GMT";
        for r in [
            Remote::Same,
            Remote::NoRanges,
            Remote::NoLength,
            Remote::Shorter,
            Remote::Longer,
            Remote::Changed,
        ] {
            let mut route = Route::bytes(r.bytes()).header("Last-Modified", lm);
            if r == Remote::NoRanges {
                route = route.no_ranges();
            }
            if r == Remote::NoLength {
                route = route.no_ranges().chunked();
            }
            s.route(r.path(), route);
        }
        s.route(Remote::Gone.path(), Route::status(404));
        s.route(
            "/slow/f.bin",
            Route::bytes(original()).throttle(8 * 1024, Duration::from_millis(50)),
        );
        s
    })
}

/// The files `program` leaves when `signal` stops it part-way (`-x4` against the slow copy), made
/// once for each.
fn interrupted(program: &'static str, signal: i32) -> &'static BTreeMap<String, Vec<u8>> {
    type Files = OnceLock<BTreeMap<String, Vec<u8>>>;
    static CELLS: [Files; 4] = [
        OnceLock::new(),
        OnceLock::new(),
        OnceLock::new(),
        OnceLock::new(),
    ];
    let cell = &CELLS[usize::from(program == "ringdl") * 2 + usize::from(signal == libc::SIGKILL)];
    cell.get_or_init(|| {
        let dir = TestDir::new();
        let home = dir.join(".home");
        std::fs::create_dir_all(&home).expect("HOME");
        let url = format!("{}/slow/f.bin", server().url(""));
        let mut child = isolated_command(&program_path(program), dir.path(), &home)
            .args([
                "--no-conf",
                "-x4",
                "-s4",
                "--min-split-size=1M",
                "--auto-save-interval=1",
                &url,
            ])
            .spawn()
            .expect("spawn");
        let started = Instant::now();
        // Until the control file records some progress.
        loop {
            let ctl = std::fs::read(dir.join(CTL)).unwrap_or_default();
            let claimed = ctl.get(34).is_some_and(|b| *b != 0);
            let in_flight = ctl.len() > 40;
            if (claimed || in_flight) && started.elapsed() > Duration::from_millis(1500) {
                break;
            }
            assert!(
                started.elapsed() < DEADLINE,
                "{program} made no progress on the slow file"
            );
            thread::sleep(Duration::from_millis(50));
        }
        // SAFETY: kill(2) on a child this function started and has not reaped.
        unsafe {
            libc::kill(child.id() as libc::pid_t, signal);
        }
        let status = child.wait().expect("wait");
        if signal == libc::SIGINT {
            assert_eq!(status.code(), Some(7), "{program} interrupted must exit 7");
        }
        let mut files = BTreeMap::new();
        for name in [NAME, CTL] {
            let bytes = std::fs::read(dir.join(name))
                .unwrap_or_else(|e| panic!("{program} left no {name}: {e}"));
            files.insert(name.to_string(), bytes);
        }
        files
    })
}

fn program_path(program: &str) -> PathBuf {
    if program == "ringdl" {
        PathBuf::from(env!("CARGO_BIN_EXE_ringdl"))
    } else {
        PathBuf::from(program)
    }
}

/// Makes `state` in `dir`.
fn prepare(state: State, dir: &Path) {
    let orig = original();
    let write = |name: &str, bytes: &[u8]| std::fs::write(dir.join(name), bytes).expect("prepare");
    match state {
        State::Nothing => {}
        State::Complete => write(NAME, &orig),
        State::CompleteClaimed => {
            write(NAME, &orig);
            write(
                CTL,
                &aria2_control_file(LEN as u64, PIECE as u32, &[0, 1], &[]),
            );
        }
        State::Corrupt => {
            let mut b = orig.clone();
            for x in &mut b[1_200_000..1_200_064] {
                *x ^= 0x5a;
            }
            write(NAME, &b);
        }
        State::ZerosClaimed => {
            write(NAME, &vec![0; LEN]);
            write(
                CTL,
                &aria2_control_file(LEN as u64, PIECE as u32, &[0, 1], &[]),
            );
        }
        State::Half => write(NAME, &orig[..LEN / 2]),
        State::Tiny => write(NAME, &orig[..5000]),
        State::Longer => {
            let mut b = orig.clone();
            b.extend(content(0x5eed_0004, 100_000));
            write(NAME, &b);
        }
        State::Empty => write(NAME, &[]),
        State::PieceClaimed => {
            let mut b = orig[..PIECE as usize].to_vec();
            b.resize(LEN, 0);
            write(NAME, &b);
            write(
                CTL,
                &aria2_control_file(LEN as u64, PIECE as u32, &[0], &[]),
            );
        }
        State::PieceClaimedShort => {
            write(NAME, &orig[..PIECE as usize]);
            write(
                CTL,
                &aria2_control_file(LEN as u64, PIECE as u32, &[0], &[]),
            );
        }
        State::ControlAlone => write(
            CTL,
            &aria2_control_file(LEN as u64, PIECE as u32, &[0], &[]),
        ),
        State::ControlOtherLength => {
            let mut b = orig[..PIECE as usize].to_vec();
            b.resize(LEN, 0);
            write(NAME, &b);
            write(
                CTL,
                &aria2_control_file(LEN as u64 + 300_000, PIECE as u32, &[0], &[]),
            );
        }
        State::Directory => {
            std::fs::create_dir(dir.join(NAME)).expect("prepare dir");
            write("f.bin/inside.txt", b"the user's");
        }
        State::Immutable => {
            write(NAME, &orig[..LEN / 2]);
            chattr(&dir.join(NAME), "+i");
        }
        State::Aria2Interrupted
        | State::RingdlInterrupted
        | State::Aria2Killed
        | State::RingdlKilled => {
            let (program, signal) = stopped_by(state).expect("a stopped state");
            for (name, bytes) in interrupted(program, signal) {
                write(name, bytes);
            }
        }
    }
}

/// Which program and signal made a stopped state.
fn stopped_by(state: State) -> Option<(&'static str, i32)> {
    match state {
        State::Aria2Interrupted => Some(("aria2c", libc::SIGINT)),
        State::RingdlInterrupted => Some(("ringdl", libc::SIGINT)),
        State::Aria2Killed => Some(("aria2c", libc::SIGKILL)),
        State::RingdlKilled => Some(("ringdl", libc::SIGKILL)),
        _ => None,
    }
}

fn chattr(path: &Path, how: &str) {
    let ok = std::process::Command::new("chattr")
        .arg(how)
        .arg(path)
        .status()
        .is_ok_and(|s| s.success());
    assert!(ok, "chattr {how} {} failed", path.display());
}

/// Whether `chattr +i` works here (root on a file system that supports it).
fn immutable_works() -> bool {
    static WORKS: OnceLock<bool> = OnceLock::new();
    *WORKS.get_or_init(|| {
        let dir = TestDir::new();
        let p = dir.join("probe");
        std::fs::write(&p, b"x").expect("probe");
        let set = std::process::Command::new("chattr")
            .arg("+i")
            .arg(&p)
            .status()
            .is_ok_and(|s| s.success());
        if set {
            let writable = std::fs::OpenOptions::new().write(true).open(&p).is_ok();
            let _ = std::process::Command::new("chattr")
                .arg("-i")
                .arg(&p)
                .status();
            !writable
        } else {
            false
        }
    })
}

/// Files under `dir` (relative path → bytes; directories as `name/`), `.home` left out.
fn snapshot(dir: &Path) -> BTreeMap<String, Option<Vec<u8>>> {
    let mut out = BTreeMap::new();
    fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<String, Option<Vec<u8>>>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for e in entries.flatten() {
            let path = e.path();
            let rel = path
                .strip_prefix(root)
                .expect("under root")
                .to_string_lossy()
                .into_owned();
            if rel == ".home" {
                continue;
            }
            if path.is_dir() {
                out.insert(format!("{rel}/"), None);
                walk(root, &path, out);
            } else {
                out.insert(rel, Some(std::fs::read(&path).unwrap_or_default()));
            }
        }
    }
    walk(dir, dir, &mut out);
    out
}

/// The files as compared: data files by length and hash, control files by presence only (their
/// in-flight records depend on timing).
fn shown(files: &BTreeMap<String, Option<Vec<u8>>>, served: &[u8]) -> BTreeMap<String, String> {
    files
        .iter()
        .map(|(k, v)| {
            let what = match v {
                None => "directory".to_string(),
                Some(_) if k.ends_with(".aria2") => "control file".to_string(),
                Some(b) if b == served => format!("{} bytes: the served file", b.len()),
                Some(b) => format!("{} bytes, sha256 {}", b.len(), &sha256_hex(b)[..12]),
            };
            (k.clone(), what)
        })
        .collect()
}

struct Side {
    code: Option<i32>,
    output: String,
    before: BTreeMap<String, Option<Vec<u8>>>,
    after: BTreeMap<String, Option<Vec<u8>>>,
}

fn run_side(program: &str, state: State, args: &[String]) -> Side {
    let dir = TestDir::new();
    let home = dir.join(".home");
    std::fs::create_dir_all(&home).expect("HOME");
    prepare(state, dir.path());
    let before = snapshot(dir.path());
    let mut child = isolated_command(&program_path(program), dir.path(), &home)
        .args(args)
        .spawn()
        .expect("spawn");
    let out = crate::support::drain(child.stdout.take().expect("stdout"));
    let err = crate::support::drain(child.stderr.take().expect("stderr"));
    let started = Instant::now();
    let code = loop {
        if let Some(st) = child.try_wait().expect("wait") {
            break st.code();
        }
        if started.elapsed() > DEADLINE {
            // SAFETY: kill(2) on the process group of a child this function started.
            unsafe {
                libc::kill(-(child.id() as libc::pid_t), libc::SIGKILL);
            }
            let _ = child.wait();
            break None;
        }
        thread::sleep(Duration::from_millis(5));
    };
    let output = format!(
        "{}{}",
        out.join().unwrap_or_default(),
        err.join().unwrap_or_default()
    );
    if state == State::Immutable {
        chattr(&dir.join(NAME), "-i");
    }
    let after = snapshot(dir.path());
    Side {
        code,
        output,
        before,
        after,
    }
}

/// ringdl's promise, whatever aria2c does: every file that was there before the run (control
/// files aside) is still there with its bytes, or each of its bytes was replaced by the served
/// byte at that offset (resuming, or fetching again what a check found wrong), or it is now
/// exactly the served file; it never becomes shorter unless it is now the served file.
/// `--allow-overwrite=true` lets a whole file be replaced by the served one.
fn kept_or_replaced(side: &Side, served: &[u8]) -> Vec<String> {
    let mut bad = Vec::new();
    for (name, before) in &side.before {
        let Some(before) = before else { continue };
        if name.ends_with(".aria2") {
            continue;
        }
        match side.after.get(name) {
            Some(Some(after)) if after == before || after.as_slice() == served => {}
            Some(Some(after)) => {
                if after.len() < before.len() {
                    bad.push(format!(
                        "{name} was cut from {} to {} bytes",
                        before.len(),
                        after.len()
                    ));
                    continue;
                }
                let lost = before
                    .iter()
                    .enumerate()
                    .filter(|&(i, b)| after[i] != *b && served.get(i) != Some(&after[i]))
                    .count();
                if lost > 0 {
                    bad.push(format!(
                        "{name}: {lost} of its {} bytes were replaced by bytes not served there",
                        before.len()
                    ));
                }
            }
            _ => bad.push(format!("{name} is gone")),
        }
    }
    bad
}

fn substitute(opts: &[&str], remote: Remote) -> Vec<String> {
    let served = remote.bytes();
    let sha = sha256_hex(&served);
    let bad = sha256_hex(b"not this file");
    let mut args: Vec<String> = vec!["--no-conf".into()];
    args.extend(
        opts.iter()
            .map(|o| o.replace("{sha}", &sha).replace("{bad}", &bad)),
    );
    args.push(format!("{}{}", server().url(""), remote.path()));
    args
}

/// Runs one case; a list of what went wrong (empty: agreed).
fn run_case(state: State, opts: &[&str], remote: Remote) -> Vec<String> {
    let args = substitute(opts, remote);
    let (a, b) = thread::scope(|s| {
        let a = s.spawn(|| run_side("aria2c", state, &args));
        let b = s.spawn(|| run_side("ringdl", state, &args));
        (
            a.join().expect("aria2c side"),
            b.join().expect("ringdl side"),
        )
    });
    let served = remote.bytes();
    let mut bad = kept_or_replaced(&b, &served);
    let ours = shown(&b.after, &served);
    let (code, files) = deliberately(remote, &a);
    if code != b.code {
        bad.push(format!(
            "exit: aria2c {:?} (ringdl's should be {code:?}), ringdl {:?}",
            a.code, b.code
        ));
    }
    let theirs = shown(&files, &served);
    if theirs != ours {
        bad.push(format!("files: aria2c {theirs:?}\n       ringdl {ours:?}"));
    }
    if !bad.is_empty() {
        bad.insert(
            0,
            format!(
                "state {state:?}, remote {remote:?}: {}\n  aria2c output:\n{}\n  ringdl output:\n{}",
                args[1..args.len() - 1].join(" "),
                indent(&a.output),
                indent(&b.output)
            ),
        );
    }
    bad
}

/// aria2c's result as ringdl's should be, where ringdl differs on purpose (each rule is in
/// KNOWN_DIFFERENCES.md, K-NOLENGTH):
/// - a control file left beside the file a download of unknown length wrote is removed: it
///   claims bytes of the file that body replaced or cut, and a later `-c` would take them as
///   done;
/// - a wrong digest of such a download is exit 32, where aria2c says "Verification finished
///   successfully" and exits 1.
fn deliberately(remote: Remote, a: &Side) -> (Option<i32>, BTreeMap<String, Option<Vec<u8>>>) {
    let mut files = a.after.clone();
    let mut code = a.code;
    if remote != Remote::NoLength {
        return (code, files);
    }
    let wrote = a.output.lines().find_map(|l| {
        let (_, path) = l.split_once("complete: ")?;
        Path::new(path.trim())
            .file_name()?
            .to_str()
            .map(String::from)
    });
    if let Some(name) = wrote {
        files.remove(&format!("{name}.aria2"));
    }
    let said_verified = a.output.contains("Verification finished successfully");
    if code == Some(1) && said_verified && a.output.contains("not complete: ") {
        code = Some(32);
    }
    (code, files)
}

fn indent(s: &str) -> String {
    s.lines()
        .filter(|l| !l.trim().is_empty() && !l.contains("[#") && !l.starts_with(" *** "))
        .map(|l| format!("    | {l}\n"))
        .collect()
}

/// Runs the cases `filter` keeps on a few threads and fails with every disagreement.
fn run_matrix(filter: impl Fn(State, Remote) -> bool) {
    if !require_peer("aria2c", crate::support::have_program("aria2c")) {
        return;
    }
    let immutable = immutable_works();
    let todo: Vec<_> = cases()
        .into_iter()
        .filter(|&(s, _, r)| filter(s, r))
        .filter(|&(s, _, _)| s != State::Immutable || immutable)
        .collect();
    if !immutable {
        eprintln!("SKIPPED (partly): chattr +i does not work here; the Immutable state is not run");
    }
    // Made before the workers start, so no two make them at once.
    for &state in STATES {
        if let (Some((program, signal)), true) =
            (stopped_by(state), todo.iter().any(|c| c.0 == state))
        {
            interrupted(program, signal);
        }
    }
    let total = todo.len();
    let queue = Arc::new(Mutex::new(todo));
    let failures = Arc::new(Mutex::new(Vec::new()));
    thread::scope(|s| {
        for _ in 0..3 {
            let queue = queue.clone();
            let failures = failures.clone();
            s.spawn(move || loop {
                let Some((state, opts, remote)) = queue.lock().expect("queue").pop() else {
                    break;
                };
                let bad = run_case(state, opts, remote);
                if !bad.is_empty() {
                    failures.lock().expect("failures").push(bad.join("\n"));
                }
            });
        }
    });
    let failures = failures.lock().expect("failures");
    assert!(
        failures.is_empty(),
        "{} of {total} rerun cases failed:\n\n{}",
        failures.len(),
        failures.join("\n\n")
    );
}

#[test]
fn reruns_over_the_same_remote() {
    run_matrix(|_, r| r == Remote::Same);
}

#[test]
fn reruns_over_another_remote() {
    run_matrix(|_, r| r != Remote::Same && r != Remote::NoLength);
}

/// A remote whose answers never say the file's length (chunked, no ranges): nothing found on
/// disk can be resumed or checked against it.
#[test]
fn reruns_over_a_remote_without_length() {
    run_matrix(|_, r| r == Remote::NoLength);
}

#[test]
fn rerun_matrix_is_large() {
    assert!(cases().len() >= 100, "only {} cases", cases().len());
}
