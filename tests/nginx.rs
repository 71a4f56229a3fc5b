//! End to end against a real nginx on loopback: a split download (`-x8 -s8 -k1M`) of a file whose
//! size is not a multiple of any block size must come out byte for byte, and must really have
//! been split into several Range requests.

use std::fs;
use std::io::{BufWriter, Read, Write};
use std::path::Path;
use std::process::{Command, ExitStatus, Stdio};
use std::thread;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use sha2::{Digest, Sha256};

use crate::support::nginx::Nginx;

/// 24 MiB + 4097 bytes: odd, and one byte past a 4 KiB block.
const FILE_SIZE: u64 = 24 * 1024 * 1024 + 4097;
const FILE_NAME: &str = "odd-size.bin";
/// A hung download fails the test instead of hanging the suite.
const RUN_LIMIT: Duration = Duration::from_secs(120);

#[test]
fn split_download_over_http_matches_source() {
    split_download(false);
}

#[test]
fn split_download_over_https_matches_source() {
    split_download(true);
}

fn split_download(https: bool) {
    // On the target's disk rather than /tmp (which may be tmpfs, where O_DIRECT is refused).
    let root = scratch_dir("www");
    let source = root.path().join(FILE_NAME);
    let want = write_random_file(&source, FILE_SIZE);

    let Some(nginx) = Nginx::start(root.path()) else {
        return; // skipped, loudly, by Nginx::start
    };
    let out = scratch_dir("out");
    let url = if https {
        nginx.https_url(&format!("/{FILE_NAME}"))
    } else {
        nginx.http_url(&format!("/{FILE_NAME}"))
    };

    let mut cmd = Command::new(env!("CARGO_BIN_EXE_ringdl"));
    cmd.args(["-x8", "-s8", "-k1M", "-d"])
        .arg(out.path())
        .arg(format!("--ca-certificate={}", nginx.ca_path().display()))
        .arg(&url)
        .current_dir(out.path());
    let run = run_with_limit(cmd, RUN_LIMIT);
    let context = || {
        format!(
            "ringdl -x8 -s8 -k1M {url}\n--- stdout ---\n{}\n--- stderr ---\n{}\n--- nginx error.log ---\n{}",
            run.stdout,
            run.stderr,
            nginx.error_log()
        )
    };
    assert!(
        run.status.success(),
        "ringdl exited with {}\n{}",
        run.status,
        context()
    );

    let got_path = out.path().join(FILE_NAME);
    let len = fs::metadata(&got_path)
        .unwrap_or_else(|e| panic!("no output file {}: {e}\n{}", got_path.display(), context()))
        .len();
    assert_eq!(len, FILE_SIZE, "output size differs\n{}", context());
    assert!(
        sha256_of(&got_path) == want,
        "output SHA-256 differs from the source's\n{}",
        context()
    );

    let requests = nginx.requests();
    let ranged: Vec<_> = requests
        .iter()
        .filter(|r| r.path == format!("/{FILE_NAME}") && r.range.is_some())
        .collect();
    assert!(
        ranged.len() > 1,
        "expected more than one Range request for /{FILE_NAME} (a split download), nginx logged:\n{}",
        requests
            .iter()
            .map(|r| format!("{r:?}"))
            .collect::<Vec<_>>()
            .join("\n")
    );
    assert!(
        ranged.iter().all(|r| r.status == 206),
        "every Range request should have been answered 206: {ranged:?}"
    );
    assert!(
        requests.iter().all(|r| r.https == https),
        "requests went to the wrong scheme: {requests:?}"
    );
}

fn scratch_dir(what: &str) -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix(&format!("nginx-{what}-"))
        .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
        .expect("temp dir under CARGO_TARGET_TMPDIR")
}

/// Fills `path` with `len` pseudo-random bytes (splitmix64, seeded from the clock) and returns
/// their SHA-256.
fn write_random_file(path: &Path, len: u64) -> [u8; 32] {
    let mut state = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0x9E37_79B9_7F4A_7C15)
        ^ u64::from(std::process::id());
    let mut next = move || {
        state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    };
    let mut hasher = Sha256::new();
    let mut file = BufWriter::new(fs::File::create(path).expect("create source file"));
    let mut chunk = vec![0u8; 64 * 1024];
    let mut left = len;
    while left > 0 {
        let n = left.min(chunk.len() as u64) as usize;
        for word in chunk[..n].chunks_mut(8) {
            let bytes = next().to_le_bytes();
            word.copy_from_slice(&bytes[..word.len()]);
        }
        hasher.update(&chunk[..n]);
        file.write_all(&chunk[..n]).expect("write source file");
        left -= n as u64;
    }
    file.flush().expect("flush source file");
    hasher.finalize().into()
}

fn sha256_of(path: &Path) -> [u8; 32] {
    let mut file = fs::File::open(path).expect("open output");
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = file.read(&mut buf).expect("read output");
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
    }
    hasher.finalize().into()
}

struct Finished {
    status: ExitStatus,
    stdout: String,
    stderr: String,
}

/// Runs `cmd` with stdout/stderr captured to files (no pipe can fill and stall it); kills it and
/// panics if it is still running after `limit`.
fn run_with_limit(mut cmd: Command, limit: Duration) -> Finished {
    let logs = tempfile::Builder::new()
        .prefix("ringdl-run-")
        .tempdir()
        .expect("temp dir for the child's output");
    let out_path = logs.path().join("stdout");
    let err_path = logs.path().join("stderr");
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(fs::File::create(&out_path).expect("stdout file"))
        .stderr(fs::File::create(&err_path).expect("stderr file"))
        .spawn()
        .expect("spawn ringdl");
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait for ringdl") {
            break status;
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "ringdl still running after {limit:?}: killed\n--- stdout ---\n{}\n--- stderr ---\n{}",
                fs::read_to_string(&out_path).unwrap_or_default(),
                fs::read_to_string(&err_path).unwrap_or_default()
            );
        }
        thread::sleep(Duration::from_millis(50));
    };
    Finished {
        status,
        stdout: String::from_utf8_lossy(&fs::read(&out_path).unwrap_or_default()).into_owned(),
        stderr: String::from_utf8_lossy(&fs::read(&err_path).unwrap_or_default()).into_owned(),
    }
}
