//! `.aria2` control files across the two programs: a download interrupted under aria2c is finished
//! by ringdl and the reverse, ringdl's control files have the layout of aria2's own, the real
//! aria2c files of `src/store/testdata/` are resumed by ringdl, and a ringdl killed with SIGKILL
//! never leaves a control file that claims bytes it did not write.
//!
//! Control files are read here by a small parser of aria2's layout written for these tests
//! ([`Ctl`]), not by ringdl's own decoder, so that ringdl's reading and writing are checked against
//! an independent reading of the format (the two are also compared where ringdl's library is at
//! hand).
//!
//! Two tricks make "fetched only what was missing" checkable byte for byte:
//! * before a resume, every byte the control file does not claim is overwritten with garbage, so
//!   a SHA-exact result proves the resuming program fetched all of them;
//! * for the resume, the server serves *poisoned* bytes (the true bytes XOR 0xFF) where the
//!   control file claims the download is done, so any claimed byte fetched again and written
//!   shows up as a mismatch.
//!
//! Interruptions happen when the control file (saved every second with `--auto-save-interval=1`)
//! shows enough progress, not after a fixed sleep; the server's throttle keeps the download from
//! finishing first whatever the machine's load.

use std::ops::Range;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::Child;
use std::thread;
use std::time::{Duration, Instant};

use crate::support::server::{RequestRecord, Route, TestServer};
use crate::support::{
    content, drain, have_program, isolated_command, require_peer, sha256_file, sha256_hex, TestDir,
};

const MIB: u64 = 1 << 20;
/// aria2's block: progress inside a piece is recorded per 16 KiB.
const BLOCK: u64 = 16 * 1024;
/// How long a program may run before the test fails as a hang.
const DEADLINE: Duration = Duration::from_secs(60);
/// The real control files aria2c 1.36.0 left (see src/store/testdata/README.md), with the size of
/// the download each belongs to.
const FIXTURES: &[(&str, &[u8], u64)] = &[
    (
        "x4-3MiB.aria2",
        include_bytes!("../src/store/testdata/x4-3MiB.aria2"),
        3_145_728,
    ),
    (
        "x4-odd-3000001.aria2",
        include_bytes!("../src/store/testdata/x4-odd-3000001.aria2"),
        3_000_001,
    ),
    (
        "x4-10MiB-plus3.aria2",
        include_bytes!("../src/store/testdata/x4-10MiB-plus3.aria2"),
        10_485_763,
    ),
    (
        "x4-10MiB-plus3-slow.aria2",
        include_bytes!("../src/store/testdata/x4-10MiB-plus3-slow.aria2"),
        10_485_763,
    ),
];

// ---------------------------------------------------------------------------------------------
// An independent reading of aria2's control file (src/DefaultBtProgressInfoFile.cc, version 1).

/// A control file as aria2 lays it out: `VER(2) EXT(4) INFOHASHLEN(4) INFOHASH PIECELEN(4)
/// TOTALLEN(8) UPLOADLEN(8) BITFIELDLEN(4) BITFIELD NUMINFLIGHT(4) {INDEX(4) LENGTH(4)
/// PBITFIELDLEN(4) PBITFIELD}*`, big-endian, bitfields MSB first.
#[derive(Debug, Clone)]
struct Ctl {
    version: u16,
    ext: [u8; 4],
    info_hash_len: u32,
    piece_length: u32,
    total: u64,
    upload: u64,
    bitfield: Vec<u8>,
    in_flight: Vec<Piece>,
    /// Bytes after the last in-flight entry.
    trailing: usize,
}

#[derive(Debug, Clone)]
struct Piece {
    index: u32,
    length: u32,
    /// One bit per 16 KiB block of the piece, counted from the piece's start.
    bits: Vec<u8>,
}

fn bit(bits: &[u8], i: u64) -> bool {
    bits.get((i / 8) as usize)
        .is_some_and(|b| b & (0x80 >> (i % 8)) != 0)
}

impl Ctl {
    fn parse(bytes: &[u8]) -> Result<Ctl, String> {
        let mut pos = 0usize;
        let mut take = |n: usize, what: &str| -> Result<&[u8], String> {
            let out = bytes
                .get(pos..pos + n)
                .ok_or_else(|| format!("truncated at {pos} in {what}"))?;
            pos += n;
            Ok(out)
        };
        let be = |b: &[u8]| b.iter().fold(0u64, |acc, x| acc << 8 | u64::from(*x));
        let version = be(take(2, "VER")?) as u16;
        if version != 1 {
            return Err(format!("version {version} (only 1 is written today)"));
        }
        let ext: [u8; 4] = take(4, "EXT")?.try_into().unwrap();
        let info_hash_len = be(take(4, "INFOHASHLEN")?) as u32;
        take(info_hash_len as usize, "INFOHASH")?;
        let piece_length = be(take(4, "PIECELEN")?) as u32;
        let total = be(take(8, "TOTALLEN")?);
        let upload = be(take(8, "UPLOADLEN")?);
        let bitfield_len = be(take(4, "BITFIELDLEN")?) as usize;
        let bitfield = take(bitfield_len, "BITFIELD")?.to_vec();
        let count = be(take(4, "NUMINFLIGHT")?);
        let mut in_flight = Vec::new();
        for _ in 0..count {
            let index = be(take(4, "INDEX")?) as u32;
            let length = be(take(4, "LENGTH")?) as u32;
            let n = be(take(4, "PBITFIELDLEN")?) as usize;
            let bits = take(n, "PBITFIELD")?.to_vec();
            in_flight.push(Piece {
                index,
                length,
                bits,
            });
        }
        Ok(Ctl {
            version,
            ext,
            info_hash_len,
            piece_length,
            total,
            upload,
            bitfield,
            in_flight,
            trailing: bytes.len() - pos,
        })
    }

    fn read(path: &Path) -> Ctl {
        let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
        Ctl::parse(&bytes).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
    }

    fn pieces(&self) -> u64 {
        self.total.div_ceil(u64::from(self.piece_length))
    }

    fn piece_start(&self, index: u64) -> u64 {
        index * u64::from(self.piece_length)
    }

    fn piece_len(&self, index: u64) -> u64 {
        (self.total - self.piece_start(index)).min(u64::from(self.piece_length))
    }

    fn complete(&self, index: u64) -> bool {
        bit(&self.bitfield, index)
    }

    fn complete_pieces(&self) -> u64 {
        (0..self.pieces()).filter(|i| self.complete(*i)).count() as u64
    }

    /// The byte ranges of one in-flight piece's done blocks.
    fn blocks_done(&self, p: &Piece) -> Vec<Range<u64>> {
        let start = self.piece_start(u64::from(p.index));
        let end = start + self.piece_len(u64::from(p.index));
        let blocks = u64::from(p.length).div_ceil(BLOCK);
        (0..blocks)
            .filter(|b| bit(&p.bits, *b))
            .map(|b| start + b * BLOCK..(start + (b + 1) * BLOCK).min(end))
            .collect()
    }

    /// Every byte the file says is on disk: complete pieces and the done blocks of in-flight
    /// pieces (an entry for a complete piece adds nothing), sorted and merged.
    fn done_ranges(&self) -> Vec<Range<u64>> {
        let mut parts: Vec<Range<u64>> = (0..self.pieces())
            .filter(|i| self.complete(*i))
            .map(|i| self.piece_start(i)..self.piece_start(i) + self.piece_len(i))
            .collect();
        for p in &self.in_flight {
            if !self.complete(u64::from(p.index)) {
                parts.extend(self.blocks_done(p));
            }
        }
        merge(parts)
    }

    /// What aria2 itself never fetches again when it resumes from this file: complete pieces, and
    /// of an in-flight piece the done blocks before its first missing one. aria2 writes a piece
    /// sequentially from its first missing block (`PiecedSegment`), so done blocks after a gap may
    /// be fetched and written again (with the same bytes, from an unchanged server; observed: one
    /// read, 11 264 bytes, past the gap; see KNOWN_DIFFERENCES.md K-CTLSPLIT).
    fn aria2_keeps(&self) -> Vec<Range<u64>> {
        let mut parts: Vec<Range<u64>> = (0..self.pieces())
            .filter(|i| self.complete(*i))
            .map(|i| self.piece_start(i)..self.piece_start(i) + self.piece_len(i))
            .collect();
        for p in &self.in_flight {
            let start = self.piece_start(u64::from(p.index));
            let blocks = u64::from(p.length).div_ceil(BLOCK);
            let prefix = (0..blocks).take_while(|b| bit(&p.bits, *b)).count() as u64;
            if !self.complete(u64::from(p.index)) && prefix > 0 {
                parts.push(start..start + prefix * BLOCK);
            }
        }
        merge(parts)
    }

    /// Everything that does not have aria2's layout for a download of `total` bytes in pieces of
    /// `piece_length`; empty when the file is as aria2 writes it.
    fn layout_problems(&self, total: u64, piece_length: u32) -> Vec<String> {
        let mut bad = Vec::new();
        let mut expect = |ok: bool, what: String| {
            if !ok {
                bad.push(what);
            }
        };
        expect(
            self.version == 1,
            format!("VER {} (aria2 writes 1)", self.version),
        );
        expect(
            self.ext == [0; 4],
            format!("EXT {:?} (0 for HTTP)", self.ext),
        );
        expect(
            self.info_hash_len == 0,
            format!("INFOHASHLEN {} (0 for HTTP)", self.info_hash_len),
        );
        expect(
            self.piece_length == piece_length,
            format!("PIECELEN {} (expected {piece_length})", self.piece_length),
        );
        expect(
            self.total == total,
            format!("TOTALLEN {} (expected {total})", self.total),
        );
        expect(
            self.upload == 0,
            format!("UPLOADLEN {} (0 for HTTP)", self.upload),
        );
        expect(
            self.trailing == 0,
            format!("{} bytes after the last entry", self.trailing),
        );
        if self.piece_length == 0 || self.total == 0 {
            expect(false, "zero piece or total length".into());
            return bad;
        }
        let pieces = self.pieces();
        expect(
            self.bitfield.len() as u64 == pieces.div_ceil(8),
            format!(
                "BITFIELDLEN {} for {pieces} pieces (expected {})",
                self.bitfield.len(),
                pieces.div_ceil(8)
            ),
        );
        expect(
            (pieces..self.bitfield.len() as u64 * 8).all(|i| !bit(&self.bitfield, i)),
            "bits set past the last piece".into(),
        );
        let mut last: Option<u32> = None;
        for p in &self.in_flight {
            let i = u64::from(p.index);
            expect(
                last.is_none_or(|l| p.index > l),
                format!("in-flight piece {} out of ascending order", p.index),
            );
            last = Some(p.index);
            if i >= pieces {
                expect(false, format!("in-flight index {i} of {pieces} pieces"));
                continue;
            }
            expect(
                !self.complete(i),
                format!("in-flight piece {i} is also marked complete"),
            );
            expect(
                u64::from(p.length) == self.piece_len(i),
                format!(
                    "in-flight piece {i} has LENGTH {} (the piece is {})",
                    p.length,
                    self.piece_len(i)
                ),
            );
            let blocks = u64::from(p.length).div_ceil(BLOCK);
            expect(
                p.bits.len() as u64 == blocks.div_ceil(8),
                format!(
                    "in-flight piece {i}: PBITFIELDLEN {} for {blocks} blocks of 16 KiB",
                    p.bits.len()
                ),
            );
            expect(
                (blocks..p.bits.len() as u64 * 8).all(|b| !bit(&p.bits, b)),
                format!("in-flight piece {i}: bits set past its last block"),
            );
            expect(
                !(0..blocks).all(|b| bit(&p.bits, b)),
                format!("in-flight piece {i}: every block done but the piece not complete"),
            );
        }
        bad
    }
}

fn merge(mut parts: Vec<Range<u64>>) -> Vec<Range<u64>> {
    parts.retain(|r| r.start < r.end);
    parts.sort_by_key(|r| r.start);
    let mut out: Vec<Range<u64>> = Vec::new();
    for r in parts {
        match out.last_mut() {
            Some(l) if r.start <= l.end => l.end = l.end.max(r.end),
            _ => out.push(r),
        }
    }
    out
}

fn len_of(ranges: &[Range<u64>]) -> u64 {
    ranges.iter().map(|r| r.end - r.start).sum()
}

fn overlap(a: &Range<u64>, b: &Range<u64>) -> Option<Range<u64>> {
    let r = a.start.max(b.start)..a.end.min(b.end);
    (r.start < r.end).then_some(r)
}

/// ringdl's library reads the file too: its decoder must accept it and agree on the done bytes.
fn ringdl_agrees(bytes: &[u8], ctl: &Ctl) {
    let cf = ringdl::store::control::ControlFile::decode(bytes)
        .unwrap_or_else(|e| panic!("ringdl's decoder rejects the file: {e}\n{ctl:?}"));
    assert_eq!(
        cf.done_ranges(),
        ctl.done_ranges(),
        "done ranges of {ctl:?}"
    );
    assert_eq!(
        cf.encode(),
        bytes,
        "ringdl does not write the file back as it was"
    );
}

/// Claimed ranges whose bytes on disk are not the source's, as `range (first bad offset)`.
fn wrong_claims(file: &Path, claimed: &[Range<u64>], source: &[u8]) -> Vec<String> {
    let disk = std::fs::read(file).unwrap_or_else(|e| panic!("read {}: {e}", file.display()));
    claimed
        .iter()
        .filter_map(|r| {
            let (s, e) = (r.start as usize, r.end as usize);
            let got = disk.get(s..e.min(disk.len())).unwrap_or(&[]);
            let bad = got
                .iter()
                .zip(&source[s..e])
                .position(|(a, b)| a != b)
                .or((got.len() < e - s).then_some(got.len()));
            bad.map(|at| format!("{r:?} (first wrong byte at {})", s + at))
        })
        .collect()
}

/// Where `file` differs from `want`, as merged ranges (a file too short differs at its end).
fn differing(file: &Path, want: &[u8]) -> Vec<Range<u64>> {
    let got = std::fs::read(file).unwrap_or_default();
    let mut parts = Vec::new();
    for (i, w) in want.iter().enumerate() {
        if got.get(i) != Some(w) {
            parts.push(i as u64..i as u64 + 1);
        }
    }
    merge(parts)
}

/// The true bytes with every byte of `ranges` flipped: served where nothing may be fetched again.
fn poisoned(data: &[u8], ranges: &[Range<u64>]) -> Vec<u8> {
    let mut out = data.to_vec();
    for r in ranges {
        for b in &mut out[r.start as usize..r.end as usize] {
            *b ^= 0xff;
        }
    }
    out
}

/// Rewrites `file` to `total` bytes: garbage everywhere except `keep`, which holds `data`'s bytes.
fn scrub(file: &Path, data: &[u8], keep: &[Range<u64>]) {
    let mut bytes = content(0xbad, data.len());
    for r in keep {
        let r = r.start as usize..r.end as usize;
        bytes[r.clone()].copy_from_slice(&data[r]);
    }
    std::fs::write(file, bytes).unwrap();
}

// ---------------------------------------------------------------------------------------------
// Running the two programs.

fn ringdl_bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_ringdl"))
}

fn aria2c_bin() -> PathBuf {
    PathBuf::from("aria2c")
}

/// The options of every leg: aria2's piece length (1 MiB, also ringdl's default), four
/// connections, a save every second so that progress can be watched.
fn args(url: &str, extra: &[&str]) -> Vec<String> {
    let mut a: Vec<String> = ["--no-conf", "-x4", "-k1M", "--auto-save-interval=1"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    a.extend(extra.iter().map(|s| s.to_string()));
    a.push(url.to_string());
    a
}

/// A program running in the background, in the test's directory with a private HOME.
struct Bg {
    label: String,
    child: Child,
    started: Instant,
    out: thread::JoinHandle<String>,
    err: thread::JoinHandle<String>,
}

/// How a run ended.
struct Outcome {
    label: String,
    code: Option<i32>,
    signal: Option<i32>,
    output: String,
}

impl std::fmt::Display for Outcome {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}: exit {:?}, signal {:?}\n{}",
            self.label, self.code, self.signal, self.output
        )
    }
}

fn start(program: &Path, dir: &TestDir, args: &[String]) -> Bg {
    let home = dir.join(".home");
    std::fs::create_dir_all(&home).expect("HOME");
    let mut child = isolated_command(program, dir.path(), &home)
        .args(args)
        .spawn()
        .unwrap_or_else(|e| panic!("spawn {}: {e}", program.display()));
    let out = drain(child.stdout.take().expect("stdout"));
    let err = drain(child.stderr.take().expect("stderr"));
    Bg {
        label: format!("{} {}", program.display(), args.join(" ")),
        child,
        started: Instant::now(),
        out,
        err,
    }
}

impl Bg {
    /// Sends `signal` (if any), then waits for the end; a run past [`DEADLINE`] is killed and
    /// fails the test.
    fn finish(mut self, signal: Option<i32>) -> Outcome {
        if let Some(sig) = signal {
            // SAFETY: kill(2) on the id of a child this test started and has not reaped.
            unsafe {
                libc::kill(self.child.id() as libc::pid_t, sig);
            }
        }
        let status = loop {
            if let Some(s) = self.child.try_wait().expect("wait") {
                break s;
            }
            if self.started.elapsed() > DEADLINE {
                // SAFETY: as above, for the process group the child leads.
                unsafe {
                    libc::kill(-(self.child.id() as libc::pid_t), libc::SIGKILL);
                }
                let _ = self.child.wait();
                panic!("{} hung: killed after {DEADLINE:?}", self.label);
            }
            thread::sleep(Duration::from_millis(10));
        };
        let out = Outcome {
            label: self.label,
            code: status.code(),
            signal: status.signal(),
            output: format!(
                "--- stdout ---\n{}--- stderr ---\n{}",
                self.out.join().unwrap_or_default(),
                self.err.join().unwrap_or_default()
            ),
        };
        assert!(!out.output.contains("panicked"), "{out}");
        out
    }

    /// Waits until the control file at `ctl` (saved while the program runs) satisfies `ready`,
    /// and returns it. Fails the test if the program exits first or nothing comes in time.
    fn wait_for(&mut self, ctl: &Path, what: &str, ready: impl Fn(&Ctl) -> bool) -> Ctl {
        loop {
            if let Some(c) = std::fs::read(ctl).ok().and_then(|b| Ctl::parse(&b).ok()) {
                if ready(&c) {
                    return c;
                }
            }
            if let Some(s) = self.child.try_wait().expect("wait") {
                panic!(
                    "{} exited ({s}) before its control file showed {what}",
                    self.label
                );
            }
            if self.started.elapsed() > DEADLINE {
                let _ = self.child.kill();
                panic!("{}: control file never showed {what}", self.label);
            }
            thread::sleep(Duration::from_millis(20));
        }
    }
}

/// With `RINGDL_COMPAT_VERBOSE=1`, what a test saw is printed even when it passes.
fn note(what: &str) {
    if std::env::var("RINGDL_COMPAT_VERBOSE").as_deref() == Ok("1") {
        eprintln!("=== {}: {what}", crate::support::test_name());
    }
}

fn run(program: &Path, dir: &TestDir, args: &[String]) -> Outcome {
    start(program, dir, args).finish(None)
}

/// The ranges `[first, last]` a request asked for, as `first..last+1` (an open `first-` or a
/// request without Range runs to the end of the file).
fn requested(r: &RequestRecord, total: u64) -> Range<u64> {
    match r.range() {
        Some((a, Some(b))) => a..b + 1,
        Some((a, None)) => a..total,
        None => 0..total,
    }
}

fn show_requests(reqs: &[RequestRecord]) -> String {
    reqs.iter()
        .map(|r| {
            format!(
                "  conn {} {} Range: {}\n",
                r.conn,
                r.method,
                r.header("Range").unwrap_or("-")
            )
        })
        .collect()
}

/// The throttle of a download meant to be interrupted: 16 KiB per 50 ms, at most 320 KiB/s per
/// connection (1.25 MiB/s for four), so an 8 MiB file takes at least 6 s.
fn slow(data: &[u8]) -> Route {
    Route::bytes(data.to_vec()).throttle(16 * 1024, Duration::from_millis(50))
}

/// About 8 MiB, odd-sized: 9 pieces, 8 of 1 MiB and a last one of 12 345 bytes (one short block).
fn source(seed: u64) -> Vec<u8> {
    content(seed, (8 * MIB + 12_345) as usize)
}

/// Interrupted with SIGINT once piece 0 is complete and some other piece is in flight with done
/// blocks: the program must exit 7 and leave the data file and its control file.
fn interrupt_part_way(program: &Path, dir: &TestDir, args: &[String]) -> (Outcome, Ctl) {
    let ctl = dir.join("f.bin.aria2");
    let mut bg = start(program, dir, args);
    bg.wait_for(&ctl, "piece 0 complete and another piece in flight", |c| {
        c.complete(0) && c.in_flight.iter().any(|p| p.bits.iter().any(|b| *b != 0))
    });
    let out = bg.finish(Some(libc::SIGINT));
    assert_eq!(
        out.code,
        Some(7),
        "SIGINT must stop the download with exit 7\n{out}"
    );
    assert!(
        ctl.exists() && dir.join("f.bin").exists(),
        "{:?}\n{out}",
        dir.entries()
    );
    let c = Ctl::read(&ctl);
    (out, c)
}

// ---------------------------------------------------------------------------------------------
// 1. aria2c → ringdl

/// aria2c (`-x4 -k1M`) is interrupted part-way; ringdl, in the same directory with the same URL,
/// finishes the download from aria2c's control file.
///
/// Asserted: aria2c exits 7 leaving `f.bin` and `f.bin.aria2`; ringdl exits 0, the file is
/// SHA-exact and the control file is gone; ringdl fetched every byte aria2c's control file does
/// not claim (those bytes were overwritten with garbage first) and wrote none that it claims (the
/// server served those poisoned); and no request of ringdl's asked for any claimed byte — ringdl
/// asks for exactly the gaps, so this is stricter than "no done 16 KiB block is covered entirely".
#[test]
fn aria2c_interrupted_ringdl_finishes() {
    if !require_peer("aria2c", have_program("aria2c")) {
        return;
    }
    let server = TestServer::plain();
    let data = source(0xa21);
    let total = data.len() as u64;
    server.route("/f.bin", slow(&data));
    let dir = TestDir::new();
    let url = server.url("/f.bin");
    let (aria2, ctl) = interrupt_part_way(&aria2c_bin(), &dir, &args(&url, &[]));
    assert!(
        ctl.layout_problems(total, MIB as u32).is_empty(),
        "aria2c's own file fails the layout check: {:?}\n{ctl:?}",
        ctl.layout_problems(total, MIB as u32)
    );
    let done = ctl.done_ranges();
    let wrong = wrong_claims(&dir.join("f.bin"), &done, &data);
    assert!(
        wrong.is_empty(),
        "aria2c claims bytes it did not write: {wrong:?}"
    );
    let first_leg = server.requests_to("/f.bin").len();

    scrub(&dir.join("f.bin"), &data, &done);
    server.route("/f.bin", Route::bytes(poisoned(&data, &done)));
    let ours = run(&ringdl_bin(), &dir, &args(&url, &[]));
    let reqs = server.requests_to("/f.bin")[first_leg..].to_vec();
    let context = format!(
        "aria2c's control file claims {done:?} of {total} bytes\n{ctl:?}\n{aria2}\n{ours}\n\
         ringdl's requests:\n{}",
        show_requests(&reqs)
    );
    note(&context);
    assert_eq!(ours.code, Some(0), "{context}");
    let bad = differing(&dir.join("f.bin"), &data);
    assert!(
        bad.is_empty(),
        "the finished file differs from the source at {bad:?} (poisoned: refetched a claimed \
         byte; garbage: never fetched a missing one)\n{context}"
    );
    assert_eq!(sha256_file(&dir.join("f.bin")), sha256_hex(&data));
    assert!(!dir.join("f.bin.aria2").exists(), "{context}");
    assert!(!reqs.is_empty(), "{context}");
    for r in &reqs {
        let asked = requested(r, total);
        for d in &done {
            assert!(
                overlap(&asked, d).is_none(),
                "ringdl asked for {asked:?}, which overlaps the done range {d:?}\n{context}"
            );
        }
    }
}

// ---------------------------------------------------------------------------------------------
// 2. ringdl → aria2c

/// ringdl (`-x4 -k1M`) is interrupted part-way; aria2c, in the same directory with the same URL,
/// finishes the download from ringdl's control file.
///
/// Asserted: ringdl exits 7 leaving `f.bin` and `f.bin.aria2`, whose claims are true; aria2c
/// exits 0, the file is SHA-exact and the control file is gone. aria2c fetched every byte the
/// control file does not claim (garbage was written there first), and did not fetch again what
/// aria2 keeps when it resumes: complete pieces and the done blocks before an in-flight piece's
/// first missing block (served poisoned). aria2c's first request is a GET without Range (how
/// aria2 learns the size; its body is not used when byte 0 is done): it must be the only request
/// without Range, and every ranged request must start at a byte the control file does not claim.
#[test]
fn ringdl_interrupted_aria2c_finishes() {
    if !require_peer("aria2c", have_program("aria2c")) {
        return;
    }
    let server = TestServer::plain();
    let data = source(0x21a);
    let total = data.len() as u64;
    server.route("/f.bin", slow(&data));
    let dir = TestDir::new();
    let url = server.url("/f.bin");
    let (ours, ctl) = interrupt_part_way(&ringdl_bin(), &dir, &args(&url, &[]));
    let done = ctl.done_ranges();
    let wrong = wrong_claims(&dir.join("f.bin"), &done, &data);
    assert!(
        wrong.is_empty(),
        "ringdl claims bytes it did not write: {wrong:?}\n{ctl:?}"
    );
    let first_leg = server.requests_to("/f.bin").len();

    let keeps = ctl.aria2_keeps();
    scrub(&dir.join("f.bin"), &data, &done);
    server.route("/f.bin", Route::bytes(poisoned(&data, &keeps)));
    let aria2 = run(&aria2c_bin(), &dir, &args(&url, &[]));
    let reqs = server.requests_to("/f.bin")[first_leg..].to_vec();
    let context = format!(
        "ringdl's control file claims {done:?} of {total} bytes; aria2 keeps {keeps:?}\n{ctl:?}\n\
         {ours}\n{aria2}\naria2c's requests:\n{}",
        show_requests(&reqs)
    );
    note(&context);
    assert_eq!(aria2.code, Some(0), "{context}");
    let bad = differing(&dir.join("f.bin"), &data);
    assert!(
        bad.is_empty(),
        "the finished file differs from the source at {bad:?} (poisoned: aria2c refetched a \
         byte it should keep; garbage: it never fetched a missing one)\n{context}"
    );
    assert!(!dir.join("f.bin.aria2").exists(), "{context}");
    let unranged: Vec<usize> = (0..reqs.len())
        .filter(|i| reqs[*i].range().is_none())
        .collect();
    assert!(
        unranged.is_empty() || unranged == [0],
        "aria2c sent more than its first request without Range: it restarted\n{context}"
    );
    let ranged: Vec<&RequestRecord> = reqs.iter().filter(|r| r.range().is_some()).collect();
    assert!(!ranged.is_empty(), "{context}");
    for r in ranged {
        let first = requested(r, total).start;
        assert!(
            !done.iter().any(|d| d.contains(&first)),
            "aria2c asked for {first}-, a byte ringdl's control file claims\n{context}"
        );
    }
}

// ---------------------------------------------------------------------------------------------
// 3. Layout

/// The layout check is aria2's layout: every real aria2c file passes it.
#[test]
fn aria2c_fixtures_pass_the_layout_check() {
    for (name, bytes, total) in FIXTURES {
        let ctl = Ctl::parse(bytes).unwrap_or_else(|e| panic!("{name}: {e}"));
        let bad = ctl.layout_problems(*total, MIB as u32);
        assert!(bad.is_empty(), "{name}: {bad:?}\n{ctl:?}");
        ringdl_agrees(bytes, &ctl);
    }
}

/// ringdl's control file after an interrupted download has aria2's layout: version 1, EXT 0,
/// INFOHASHLEN 0, the download's total and piece length, BITFIELDLEN ceil(pieces/8), in-flight
/// pieces in ascending order with their real length and one bit per 16 KiB block; and it claims
/// only bytes that are on disk. Two shapes: a fresh `-x4` download (a complete piece and pieces in
/// flight), and a `-c` continuation stopped inside a short last piece (an in-flight entry shorter
/// than the piece length, whose last block is short). aria2c finishes the second one.
#[test]
fn ringdl_control_file_has_aria2_layout() {
    let server = TestServer::plain();
    let data = source(0x1a7);
    let total = data.len() as u64;
    server.route("/f.bin", slow(&data));

    let dir = TestDir::new();
    let url = server.url("/f.bin");
    let (ours, ctl) = interrupt_part_way(&ringdl_bin(), &dir, &args(&url, &[]));
    let raw = std::fs::read(dir.join("f.bin.aria2")).unwrap();
    note(&format!("fresh -x4 download stopped: {ctl:?}\n{ours}"));
    let bad = ctl.layout_problems(total, MIB as u32);
    assert!(bad.is_empty(), "{bad:?}\n{ctl:?}\n{ours}");
    assert_eq!(
        &raw[..10],
        &[0, 1, 0, 0, 0, 0, 0, 0, 0, 0],
        "VER, EXT, INFOHASHLEN"
    );
    // 38 bytes of fixed fields, a 2-byte bitfield for 9 pieces, then the in-flight entries.
    assert_eq!(
        raw.len(),
        38 + 2
            + ctl
                .in_flight
                .iter()
                .map(|p| 12 + p.bits.len())
                .sum::<usize>()
    );
    assert!(
        ctl.complete_pieces() >= 1 && !ctl.in_flight.is_empty(),
        "{ctl:?}"
    );
    let wrong = wrong_claims(&dir.join("f.bin"), &ctl.done_ranges(), &data);
    assert!(
        wrong.is_empty(),
        "claims bytes not on disk: {wrong:?}\n{ctl:?}"
    );
    ringdl_agrees(&raw, &ctl);

    // A partial file ending 100 000 bytes into the last piece of a download whose last piece is
    // short: 7 MiB + 900 000 bytes, the last piece 900 000 bytes (55 blocks, the last one
    // 15 264 bytes, a 7-byte block bitfield).
    let data = content(0x1a8, (7 * MIB + 900_000) as usize);
    let total = data.len() as u64;
    server.route("/g.bin", slow(&data));
    let dir = TestDir::new();
    let have = 7 * MIB + 100_000;
    std::fs::write(dir.join("g.bin"), &data[..have as usize]).unwrap();
    let url = server.url("/g.bin");
    let ctl_path = dir.join("g.bin.aria2");
    let mut bg = start(&ringdl_bin(), &dir, &args(&url, &["-c"]));
    let floor = have / BLOCK * BLOCK;
    bg.wait_for(&ctl_path, "new blocks of the last piece", |c| {
        c.done_ranges().last().is_some_and(|r| r.end > floor)
    });
    let ours = bg.finish(Some(libc::SIGINT));
    assert_eq!(ours.code, Some(7), "{ours}");
    let raw = std::fs::read(&ctl_path).unwrap();
    let ctl = Ctl::parse(&raw).unwrap();
    note(&format!("-c continuation stopped: {ctl:?}\n{ours}"));
    let bad = ctl.layout_problems(total, MIB as u32);
    assert!(bad.is_empty(), "{bad:?}\n{ctl:?}\n{ours}");
    assert_eq!(ctl.bitfield, [0xfe], "pieces 0-6 complete, 7 not: {ctl:?}");
    assert_eq!(ctl.in_flight.len(), 1, "{ctl:?}");
    let last = &ctl.in_flight[0];
    assert_eq!(
        (last.index, last.length, last.bits.len()),
        (7, 900_000, 7),
        "{ctl:?}"
    );
    assert!(bit(&last.bits, 0) && !bit(&last.bits, 54), "{ctl:?}");
    let wrong = wrong_claims(&dir.join("g.bin"), &ctl.done_ranges(), &data);
    assert!(
        wrong.is_empty(),
        "claims bytes not on disk: {wrong:?}\n{ctl:?}"
    );
    ringdl_agrees(&raw, &ctl);

    if !require_peer("aria2c", have_program("aria2c")) {
        return;
    }
    server.route("/g.bin", Route::bytes(poisoned(&data, &ctl.aria2_keeps())));
    let aria2 = run(&aria2c_bin(), &dir, &args(&url, &[]));
    note(&format!(
        "aria2c finished: {aria2}\n{}",
        show_requests(&server.requests_to("/g.bin"))
    ));
    assert_eq!(aria2.code, Some(0), "{aria2}\n{ctl:?}");
    let bad = differing(&dir.join("g.bin"), &data);
    assert!(bad.is_empty(), "differs at {bad:?}\n{aria2}\n{ctl:?}");
    assert!(!ctl_path.exists());
}

/// Each real aria2c control file of `src/store/testdata/` is resumed by ringdl. The original bytes
/// are gone, so the test makes a download of the file's size and a partial file holding that
/// download's bytes where the control file claims them, garbage elsewhere. ringdl must finish it
/// SHA-exact (so it fetched every unclaimed byte), never writing a claimed byte (served poisoned),
/// asking only for unclaimed bytes, and remove the control file.
#[test]
fn ringdl_resumes_aria2c_fixtures() {
    for (i, (name, bytes, total)) in FIXTURES.iter().enumerate() {
        let ctl = Ctl::parse(bytes).unwrap();
        let done = ctl.done_ranges();
        let data = content(0xf1 + i as u64, *total as usize);
        let server = TestServer::plain();
        server.route("/f.bin", Route::bytes(poisoned(&data, &done)));
        let dir = TestDir::new();
        scrub(&dir.join("f.bin"), &data, &done);
        std::fs::write(dir.join("f.bin.aria2"), bytes).unwrap();
        let ours = run(&ringdl_bin(), &dir, &args(&server.url("/f.bin"), &[]));
        let reqs = server.requests_to("/f.bin");
        let context = format!(
            "{name}: claims {done:?} of {total}\n{ctl:?}\n{ours}\nrequests:\n{}",
            show_requests(&reqs)
        );
        note(&context);
        assert_eq!(ours.code, Some(0), "{context}");
        let bad = differing(&dir.join("f.bin"), &data);
        assert!(bad.is_empty(), "differs at {bad:?}\n{context}");
        assert_eq!(sha256_file(&dir.join("f.bin")), sha256_hex(&data));
        assert!(!dir.join("f.bin.aria2").exists(), "{context}");
        for r in &reqs {
            let asked = requested(r, *total);
            assert!(
                done.iter().all(|d| overlap(&asked, d).is_none()),
                "asked for {asked:?}, which overlaps claimed bytes\n{context}"
            );
        }
        assert_eq!(
            len_of(&merge(reqs.iter().map(|r| requested(r, *total)).collect())),
            total - len_of(&done),
            "{context}"
        );
    }
}

// ---------------------------------------------------------------------------------------------
// 4. SIGKILL

/// ringdl killed with SIGKILL part-way (three times, at different moments after a save, each leg
/// resuming the last) leaves a control file that claims only bytes on disk: every claimed range
/// holds the source's bytes. Then ringdl finishes SHA-exact and, with aria2c present, the last
/// killed leg's file is checked to be one aria2c accepts too (it finishes a copy of it).
#[test]
fn sigkill_leaves_only_true_claims() {
    let server = TestServer::plain();
    let data = source(0x5e1);
    let total = data.len() as u64;
    server.route("/f.bin", slow(&data));
    let dir = TestDir::new();
    let url = server.url("/f.bin");
    let ctl_path = dir.join("f.bin.aria2");
    let mut claimed_before = 0;
    for (leg, extra_ms) in [0u64, 370, 730].into_iter().enumerate() {
        let mut bg = start(&ringdl_bin(), &dir, &args(&url, &[]));
        let target = claimed_before + 256 * 1024;
        bg.wait_for(&ctl_path, "progress past the last leg", |c| {
            len_of(&c.done_ranges()) >= target
        });
        thread::sleep(Duration::from_millis(extra_ms));
        let out = bg.finish(Some(libc::SIGKILL));
        assert_eq!(out.signal, Some(libc::SIGKILL), "leg {leg}: {out}");
        let raw = std::fs::read(&ctl_path).unwrap();
        let ctl = Ctl::parse(&raw).unwrap_or_else(|e| panic!("leg {leg}: {e}"));
        let bad = ctl.layout_problems(total, MIB as u32);
        assert!(bad.is_empty(), "leg {leg}: {bad:?}\n{ctl:?}");
        let done = ctl.done_ranges();
        note(&format!("leg {leg} killed, claims {done:?}\n{ctl:?}"));
        let wrong = wrong_claims(&dir.join("f.bin"), &done, &data);
        assert!(
            wrong.is_empty(),
            "leg {leg}: after SIGKILL the control file claims bytes not on disk: {wrong:?}\n\
             {ctl:?}\n{out}"
        );
        assert!(len_of(&done) >= target, "leg {leg}: {done:?}");
        claimed_before = len_of(&done);
    }
    let ctl = Ctl::read(&ctl_path);

    if have_program("aria2c") {
        let copy = TestDir::new();
        std::fs::copy(dir.join("f.bin"), copy.join("f.bin")).unwrap();
        std::fs::copy(&ctl_path, copy.join("f.bin.aria2")).unwrap();
        let s = TestServer::plain();
        s.route("/f.bin", Route::bytes(poisoned(&data, &ctl.aria2_keeps())));
        let aria2 = run(&aria2c_bin(), &copy, &args(&s.url("/f.bin"), &[]));
        note(&format!(
            "aria2c on a copy: {aria2}\n{}",
            show_requests(&s.requests())
        ));
        assert_eq!(aria2.code, Some(0), "{aria2}\n{ctl:?}");
        let bad = differing(&copy.join("f.bin"), &data);
        assert!(
            bad.is_empty(),
            "aria2c's copy differs at {bad:?}\n{aria2}\n{ctl:?}"
        );
    }

    server.route("/f.bin", Route::bytes(poisoned(&data, &ctl.done_ranges())));
    let ours = run(&ringdl_bin(), &dir, &args(&url, &[]));
    assert_eq!(ours.code, Some(0), "{ours}");
    let bad = differing(&dir.join("f.bin"), &data);
    assert!(bad.is_empty(), "differs at {bad:?}\n{ours}\n{ctl:?}");
    assert!(!ctl_path.exists());
}
