//! Deterministic simulation of the whole engine (FoundationDB's and TigerBeetle's idea): one seed
//! draws a file, a set of mirrors (good, without ranges, chunked, close-delimited, 404, 503,
//! redirecting to another mirror, not answering), command-line options and faults (short reads and
//! writes, EAGAIN/EINTR, resets and stalls mid-body, ENOSPC/EIO, completions out of order, a kill at
//! a random step). Classes added later each draw from a stream of their own, so that a recorded
//! seed replays as it was: file jobs that fail, kills in the wait for the last file jobs, power
//! losses, odd-length short writes, failed read-backs, servers that speak TLS, trickle, send past
//! their framing, close mid-body, send 1xx heads, answer ranges short, close kept-alive connections
//! or change the file under `If-Range`; each block's report counts how often each fired. The real
//! engine runs on the simulated reactor; then a second run with `-c` on healed mirrors —
//! sometimes serving a changed file — must finish what the first left. After every run it checks:
//!
//! * a download reported complete equals its source byte for byte;
//! * a failed, stopped or killed one left a control file that claims only bytes that are on disk and
//!   right (after a power loss too);
//! * every block is back in the pool and nothing is in flight;
//! * the run ended within the simulation's time and step limits (no hang), and did not panic;
//! * the exit code is aria2's for the failures that decide it (404 everywhere: 3; a full disk: 9;
//!   a wrong checksum: 32).
//!
//! Two tests run a block of seeds each, on two cores: `RINGDL_SIM_SEEDS=N` seeds per block (default
//! 1000), from `RINGDL_SIM_FIRST` (default 1); `RINGDL_SIM_SEED=S` replays one, printing what it
//! drew and did (`RINGDL_SIM_LOG=1` adds the engine's own log). A failing seed prints the command
//! that replays it; `bench/sim.sh` runs millions.
use super::driver::{run_on, wanted_slots, Outside, Summary};
use super::pieces::PieceHashes;
use super::reactor::sim::{signal_fd, Faults, Framing, Rng, Route, Sim, Stop, World};
use super::reactor::{Layout, Pool};
use super::{DownloadOptions, Job};
use crate::cli::{self, Command, LogLevel};
use crate::engine::ExitCode;
use crate::store::control;
use crate::ui::{Console, ConsoleOptions};
use std::cell::RefCell;
use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::Path;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

mod daemon;
mod lists;

/// Seeds that once found a bug: they run first, every time. `Scenario::draw` only ever adds draws
/// from a separate stream, so a seed keeps its scenario. 3692 and 4737: a download of unknown
/// length that failed after a write error left its file with a hole and no control file, and `-c`
/// took the hole for data.
/// 11777: a whole-file stream parked at the end of its range, waiting for the connection that
/// owned the next one; that connection was redirected and gave the range back, and nothing woke
/// the stream (a hang).
/// 297655: a chunked body whose end arrived while earlier blocks were held; its length then known,
/// the held blocks went out together, and a kill between their completions left a gap in a file
/// no control file described, which `-c` took for data.
/// 1012619: a body of unknown length started over after a reset; the second attempt failed
/// part-way and its last block, padded to 4 KiB, overwrote bytes the first attempt had written
/// and the file still counted as on disk; `-c` then took the padding for data. 1005825: the same
/// with a chunked body, there taken for data of the file's next version.
/// 1734084: a chunked body written one block at a time; a write failed (ENOSPC), the next block,
/// past the failed one, was still written, and a kill before the failed download's cut left a
/// file with a hole and no control file, which `-c` took for data.
/// 1165: a power loss undid data writes a saved control file claimed (nothing synced the data
/// before the control file).
/// 207040: a control-file save queued before a writeback failed withdrew the claims still
/// claimed them when it ran; a kill before the next save left them over lost bytes.
/// 125117: a download stopped by Ctrl-C while its writes were still in flight got a connection
/// back when a retry it had put off came due.
/// 205: a one-block file whose every writeback failed (its claims lost, its bytes zeroed) was
/// killed while the engine waited for its last control-file save; the file had been kept at its
/// length for that save, and `-c` took the zeros for data.
/// 735: `-c` over a 2 MB prefix left by the user; the first control-file save's data sync failed
/// (a lost writeback), and the failed download's file was cut to what this run had proven,
/// nothing: the user's 2 MB were lost. Only what this run rewrote (from the last whole block) is
/// suspect now.
/// 992702: two saves queued; the first one's data sync failed, and the second, run before the
/// loop heard of it, synced and saved claims over the lost writes; the failed download's file was
/// cut to nothing, and a kill left that control file claiming 160 KiB of an empty file. A failed
/// sync now withdraws the claims on the file-job thread at once.
/// 82567, 156812: a control file claiming the whole file, a digest that fails it, and Ctrl-C
/// while the file was read back: the failed check started the download again in a stopping run
/// (an engine check: a stopped download wanting a connection).
/// 153497, 133303: `-c` over a file left on disk, written again from its last whole block; the
/// body ended early, the last block (zero-padded for O_DIRECT) covered the user's bytes past what
/// arrived, and the failed run kept the file at its found length, zeros inside, with no control
/// file. A file judged by its length now keeps found bytes only where this run never wrote.
/// 493071: a control-file save skipped as stale (a writeback failed after it was queued) was
/// answered as saved, so the file counted as described; the failed download's file was then not
/// cut at once, a kill before its last save left it with zeroed bytes and no control file, and
/// `-c` took the zeros for data.
/// 79186: a control file claiming the whole file, a digest that fails it, three mirrors that
/// all answer 404: the first 404 let the check begin while the others were still asked, and its
/// mismatch, after the last 404, overwrote that failure (exit 32 where aria2c exits 3).
/// 139619 (the model; 105172 too): `-c` over a part of the file, servers without ranges and a full
/// disk: the first answer ends the run (exit 8) before any write fails; 200655, 99205 (not listed:
/// a listed seed runs without its slow disk) showed that is certain only when no failing file job,
/// reset or slow server can end the run first. 139048 (the model): a file found complete, read
/// back for its digest with every read failing: exit 17 first.
/// 284917: `-c` over an empty file, a chunked answer without ranges: exit 8 ("Invalid range
/// header. Request: 0-0/0") where aria2c downloads into the empty file.
const REGRESSIONS: &[u64] = &[
    3692, 4737, 11777, 297655, 1012619, 1005825, 1734084, 205, 1165, 207040, 125117, 493071, 735,
    992702, 82567, 156812, 153497, 133303, 79186, 139619, 139048, 284917, 889197, 937905,
];

/// Seeds that found faults of the piece checks once piece digests and mirrors serving changed
/// bytes were drawn (`draw_pieces`, which the seeds above never draw): 17 and 24, a file found
/// whole; 291, a piece failing with no other mirror while a writeback was issued; 1430 and 5555,
/// control-file saves that fail (claims past the cut, unverified bytes in a file `-c` trusts by
/// its length); 832 and 1419, a piece over bytes found on disk; 37106 and 38897, a piece failing
/// during a Ctrl-C stop.
const PIECE_REGRESSIONS: &[u64] = &[17, 24, 291, 1430, 5555, 832, 1419, 37106, 38897];

/// The regression seeds recorded before prior states on disk were drawn: they replay without one.
const RECORDED_WITHOUT_PRIORS: &[u64] = &[
    3692, 4737, 11777, 297655, 1012619, 1005825, 1734084, 205, 1165, 207040, 125117, 493071,
];

/// Seeds each of the two simulation tests runs by default (the two run in parallel).
const DEFAULT_SEEDS: u64 = 1000;

const NAME: &str = "f.bin";

/// What a seed drew.
#[derive(Debug)]
struct Scenario {
    seed: u64,
    data: Rc<Vec<u8>>,
    /// Served in the second run when the file changed in between.
    changed: Option<Rc<Vec<u8>>>,
    /// The servers speak TLS: (1.3 rather than 1.2, ChaCha20 rather than AES-GCM).
    tls: Option<(bool, bool)>,
    mirrors: Vec<Mirror>,
    args: Vec<String>,
    faults: Faults,
    budget: usize,
    /// What is on disk before the first run (the run then has `-c`).
    prior: Prior,
    /// The download's piece digests (both runs have them), and what a `Corrupt` mirror serves.
    pieces: Option<Arc<PieceHashes>>,
    corrupt: Option<Rc<Vec<u8>>>,
}

/// A state a user or an earlier run left on disk before the first run: every byte of it is the
/// source's, so the run must never lose one (cut the file below its length, or write bytes that
/// are not the source's into it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Prior {
    Nothing,
    /// The source's first bytes, no control file.
    Prefix(usize),
    /// The whole source, no control file.
    Complete,
    /// The source's first bytes (whole 16 KiB blocks) and a control file claiming them.
    Claimed(usize),
    /// The whole source and a control file claiming all of it.
    CompleteClaimed,
}

/// The prior state of a seed, from a stream of its own (one seed in five has one; none for the
/// regression seeds, which replay what they were recorded with).
fn prior_state(seed: u64, len: usize, changed: bool) -> Prior {
    let mut rng = Rng::new(seed ^ 0x1a7e_d4a5_0000_000b);
    // (Not where the file changes between the runs: a file made outside ringdl carries no
    // validator, so nothing can tell its bytes from the new version's, in ringdl or in aria2c.)
    if RECORDED_WITHOUT_PRIORS.contains(&seed) || len == 0 || changed || rng.below(5) != 0 {
        return Prior::Nothing;
    }
    draw_prior(&mut rng, len)
}

/// One of the states on disk, for a source of `len` (> 0) bytes.
fn draw_prior(rng: &mut Rng, len: usize) -> Prior {
    let n = rng.below(len as u64) as usize;
    match rng.below(4) {
        0 => Prior::Prefix(n),
        1 => Prior::Complete,
        2 => Prior::Claimed(n / 16384 * 16384),
        _ => Prior::CompleteClaimed,
    }
}

/// The prior state of job `job` of list seed `seed` (a stream of its own: one job in five has one).
fn list_prior(seed: u64, job: u64, len: usize) -> Prior {
    let mut rng = Rng::new((seed ^ 0x1a7e_d4a5_0000_000c).wrapping_add(job << 40));
    if len == 0 || rng.below(5) != 0 {
        return Prior::Nothing;
    }
    draw_prior(&mut rng, len)
}

/// Whether `now`, the file after a run, kept every byte of `before`, what a prior state put there:
/// `-c` writes again from the last whole 16 KiB block of a file without a control file (O_DIRECT
/// writes whole blocks; a padded last block may cover bytes past what arrived), and a failed sync
/// or writeback (`lost_writes`) may cut the file back to what it had before those writes. A file
/// that became the source whole kept them too.
fn kept_prior(prior: Prior, before: &[u8], now: &[u8], source: &[u8], lost_writes: bool) -> bool {
    let rewritten_from = match prior {
        Prior::Prefix(_) | Prior::Complete => before.len() / 16384 * 16384,
        _ => before.len(),
    }
    .min(before.len());
    let kept = now.len() >= rewritten_from
        && now[..rewritten_from] == before[..rewritten_from]
        && (now.len() >= before.len() || rewritten_from < before.len() || lost_writes);
    kept || now == source
}

/// The name a download of `name` takes when a file of that name is left alone: `f.1.bin`.
fn renamed(name: &str) -> String {
    match name.rsplit_once('.') {
        Some((stem, ext)) => format!("{stem}.1.{ext}"),
        None => format!("{name}.1"),
    }
}

/// Where the download of `name`, run over a prior state, put its file: that name, or the renamed
/// one when its first answer said no length, so nothing found could be measured against it
/// (aria2c's rule: the download starts as if nothing had been found, and is renamed). Only a
/// mirror that answers without a length (`lengthless`) can do that, and the file and control
/// file found (`before`, `before_ctl`) must then be exactly as they were.
fn landed(
    dir: &Path,
    name: &str,
    before: Option<&[u8]>,
    before_ctl: Option<&[u8]>,
    lengthless: bool,
) -> Result<String, String> {
    let other = renamed(name);
    if !dir.join(&other).exists() {
        return Ok(name.to_string());
    }
    if before.is_none() || !lengthless {
        return Err(format!(
            "renamed to {other}, though nothing was found or every mirror says the length"
        ));
    }
    let path = dir.join(name);
    if std::fs::read(&path).ok().as_deref() != before {
        return Err(format!(
            "renamed to {other}, and the file found was not left alone"
        ));
    }
    let ctl = std::fs::read(control::control_path(&path)).ok();
    if ctl.as_deref() != before_ctl {
        return Err(format!(
            "renamed to {other}, and the control file found was not left alone"
        ));
    }
    Ok(other)
}

/// Whether one of `mirrors` answers a whole body without its length.
fn lengthless(mirrors: &[Mirror]) -> bool {
    mirrors
        .iter()
        .any(|m| matches!(m, Mirror::Good { framing, .. } if *framing != Framing::Length))
}

impl Prior {
    /// Makes the state in `dir`; the bytes the file then has.
    fn make(self, dir: &Path, data: &[u8]) -> Result<Option<Vec<u8>>, String> {
        self.make_at(&dir.join(NAME), data)
    }

    /// Makes the state at `path`; the bytes the file then has.
    fn make_at(self, path: &Path, data: &[u8]) -> Result<Option<Vec<u8>>, String> {
        let path = path.to_path_buf();
        let claimed = |n: usize| -> Result<(), String> {
            let done = std::iter::once(0..n as u64).collect::<Vec<_>>();
            let cf = control::ControlFile::from_done(data.len() as u64, 1 << 20, &done);
            control::save(&control::control_path(&path), &cf)
                .map_err(|e| format!("the prior control file: {e}"))
        };
        let bytes = match self {
            Prior::Nothing => return Ok(None),
            Prior::Prefix(n) | Prior::Claimed(n) => data[..n].to_vec(),
            Prior::Complete | Prior::CompleteClaimed => data.to_vec(),
        };
        std::fs::write(&path, &bytes).map_err(|e| format!("the prior file: {e}"))?;
        match self {
            Prior::Claimed(n) if n > 0 => claimed(n)?,
            Prior::CompleteClaimed => claimed(data.len())?,
            _ => {}
        }
        Ok(Some(bytes))
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mirror {
    Good {
        ranges: bool,
        framing: Framing,
    },
    NotFound,
    Unavailable,
    /// Redirects to the first good mirror (or to itself when there is none).
    Redirect,
    Silent,
    /// Serves the file with a few bytes changed, under the same validator and length: drawn only
    /// for a download with piece digests, which must catch every changed byte, fetch its piece
    /// again from another mirror, and never claim it.
    Corrupt,
}

fn addr(i: usize) -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], 10_000 + i as u16))
}

fn url(i: usize) -> String {
    format!("http://{}/d/{NAME}", addr(i))
}

/// The simulated servers' certificate (for 127.0.0.1) and the CA that signed it, made once a
/// thread; the CA's file stays for the thread's runs to name in `--ca-certificate`.
struct Pki {
    _dir: tempfile::TempDir,
    ca_file: std::path::PathBuf,
    chain: Vec<Vec<u8>>,
    key: Vec<u8>,
}

thread_local! {
    static PKI: Pki = make_pki();
}

fn make_pki() -> Pki {
    use rcgen::{BasicConstraints, CertificateParams, IsCa, KeyPair};
    let ca_key = KeyPair::generate().expect("a CA key");
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).expect("CA parameters");
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let ca = ca_params.self_signed(&ca_key).expect("a CA certificate");
    let leaf_key = KeyPair::generate().expect("a server key");
    let mut leaf_params =
        CertificateParams::new(vec!["127.0.0.1".to_string()]).expect("server parameters");
    leaf_params.use_authority_key_identifier_extension = true;
    let leaf = leaf_params
        .signed_by(&leaf_key, &ca, &ca_key)
        .expect("a server certificate");
    let dir = tempfile::tempdir().expect("a directory for the CA");
    let ca_file = dir.path().join("ca.pem");
    std::fs::write(&ca_file, ca.pem()).expect("the CA's file");
    Pki {
        _dir: dir,
        ca_file,
        chain: vec![leaf.der().to_vec()],
        key: leaf_key.serialize_der(),
    }
}

/// The TLS of the servers of a scenario with `tls` (see [`Scenario::tls`]).
fn server_tls(tls: Option<(bool, bool)>) -> Option<crate::tls::server::ServerTlsConfig> {
    let (tls13, chacha) = tls?;
    PKI.with(|p| {
        Some(crate::tls::server::ServerTlsConfig::for_simulation(
            &p.chain, &p.key, tls13, chacha,
        ))
    })
}

/// HTTPS in one seed of four, from a stream of its own: TLS 1.3 or 1.2, AES-GCM or ChaCha20,
/// through the engine's own record layer; the CA goes into `args`.
fn https(seed: u64, args: &mut Vec<String>) -> Option<(bool, bool)> {
    let mut rng = Rng::new(seed ^ 0x1a7e_d4a5_0000_000a);
    if rng.below(4) != 0 {
        return None;
    }
    let ca = PKI.with(|p| p.ca_file.display().to_string());
    args.push(format!("--ca-certificate={ca}"));
    Some((rng.below(2) == 0, rng.below(2) == 0))
}

/// Piece digests for one seed in five whose file does not change between the runs (a stream of
/// its own; none for the regression seeds), and in half of those a mirror serving changed bytes
/// (it takes the place of a drawn mirror, or joins them). The pieces are 1 MiB where a control
/// file is found (its piece length), else of a length drawn to split on (multiples of 16 KiB) or
/// not (read back where bytes come out of order).
fn draw_pieces(
    seed: u64,
    data: &[u8],
    prior: Prior,
    changed: bool,
    mirrors: &mut Vec<Mirror>,
) -> (Option<Arc<PieceHashes>>, Option<Rc<Vec<u8>>>) {
    let mut rng = Rng::new(seed ^ 0x1a7e_d4a5_0000_000d);
    if REGRESSIONS.contains(&seed) || data.is_empty() || changed || rng.below(5) != 0 {
        return (None, None);
    }
    let length: u64 = match prior {
        Prior::Claimed(_) | Prior::CompleteClaimed => 1 << 20,
        _ => [16_384, 65_536, 262_144, 1 << 20, 49_152, 20_000][rng.below(6) as usize],
    };
    let pieces = Arc::new(PieceHashes {
        length,
        kind: crate::store::checksum::Kind::Sha256,
        digests: data
            .chunks(length as usize)
            .map(|c| {
                let mut h =
                    crate::store::checksum::Hasher::new(crate::store::checksum::Kind::Sha256);
                h.update(c);
                h.finish()
            })
            .collect(),
    });
    if rng.below(2) != 0 {
        return (Some(pieces), None);
    }
    let mut bad = data.to_vec();
    for _ in 0..1 + rng.below(3) {
        let at = rng.below(bad.len() as u64) as usize;
        bad[at] ^= 1 + rng.below(255) as u8;
    }
    if rng.below(2) == 0 || mirrors.len() >= 3 {
        let i = rng.below(mirrors.len() as u64) as usize;
        mirrors[i] = Mirror::Corrupt;
    } else {
        let at = rng.below(mirrors.len() as u64 + 1) as usize;
        mirrors.insert(at, Mirror::Corrupt);
    }
    (Some(pieces), Some(Rc::new(bad)))
}

fn content(rng: &mut Rng, len: usize) -> Vec<u8> {
    let mut v = Vec::with_capacity(len + 8);
    while v.len() < len {
        v.extend_from_slice(&rng.next_u64().to_le_bytes());
    }
    v.truncate(len);
    v
}

fn sha256_hex(data: &[u8]) -> String {
    use sha2::Digest;
    sha2::Sha256::digest(data)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The I/O faults of a scenario, single or list: short reads, EAGAIN, resets, stalls, short
/// writes, reordering and sometimes a write error. The draws keep their order, so seeds keep
/// their scenarios.
fn draw_faults(rng: &mut Rng) -> Faults {
    let mut faults = Faults {
        max_chunk: [0, 1000, 20_000, 100_000][rng.below(4) as usize],
        again: rng.below(30) as u32,
        reset: [0, 0, 50, 200][rng.below(4) as usize],
        stall: [0, 0, 0, 50][rng.below(4) as usize],
        short_write: rng.below(200) as u32,
        reorder: rng.below(2) == 0,
        ..Faults::default()
    };
    if rng.below(10) == 0 {
        faults.write_error = [5, 1000][rng.below(2) as usize];
        faults.write_errno = [libc::ENOSPC, libc::EIO][rng.below(2) as usize];
    }
    faults
}

/// How often the file system refuses an uncached (`RWF_DONTCACHE`) write, from a stream of its
/// own: never, always (a kernel without it), or now and then.
fn uncached_refusal(seed: u64) -> u32 {
    [0, 0, 1000, 300][Rng::new(seed ^ 0x1a7e_d4a5_0000_0003).below(4) as usize]
}

/// How often a writeback of pages written through the cache fails, from a stream of its own.
fn writeback_failure(seed: u64) -> u32 {
    [0, 0, 0, 0, 300, 1000][Rng::new(seed ^ 0x1a7e_d4a5_0000_0004).below(6) as usize]
}

/// File jobs that fail, power losses and kills in the shutdown wait, from a stream of their own:
/// a file job fails in one seed of four (now and then, or always), with ENOSPC, EIO,
/// ENAMETOOLONG or EACCES; a third of the kills lose the power too; one seed of six without a
/// kill or a Ctrl-C is killed while the engine waits for its last file jobs.
fn disk_and_power(seed: u64, faults: &mut Faults) {
    let mut rng = Rng::new(seed ^ 0x1a7e_d4a5_0000_0005);
    if rng.below(4) == 0 {
        faults.job_errors = [100, 300, 1000][rng.below(3) as usize];
        faults.job_errno =
            [libc::ENOSPC, libc::EIO, libc::ENAMETOOLONG, libc::EACCES][rng.below(4) as usize];
    }
    if faults.kill_at.is_some() {
        faults.power_loss = rng.below(3) == 0;
    } else if faults.interrupts.is_empty() && rng.below(6) == 0 {
        faults.kill_in_shutdown = Some(rng.below(3) as u32);
        faults.power_loss = rng.below(2) == 0;
    }
    let mut rng = Rng::new(seed ^ 0x1a7e_d4a5_0000_0008);
    if rng.below(6) == 0 {
        faults.read_error = [200, 1000][rng.below(2) as usize];
    }
    if rng.below(4) == 0 {
        faults.odd_writes = [100, 500][rng.below(2) as usize];
    }
}

/// A server that trickles below `--lowest-speed-limit`, from a stream of its own, in one seed of
/// eight: 10 kB/s against a limit of 50 kB/s.
fn trickle(seed: u64, faults: &mut Faults, args: &mut Vec<String>) {
    let mut rng = Rng::new(seed ^ 0x1a7e_d4a5_0000_0009);
    if rng.below(8) == 0 {
        faults.ns_per_byte = 100_000;
        args.push("--lowest-speed-limit=50K".into());
    }
}

/// Servers that misbehave, from a stream of their own, in one seed of three: bytes past the
/// framing, FINs mid-body, 1xx heads first, ranges answered short, kept-alive connections closed
/// after a response; and, in half the seeds whose file changes, the change comes during the
/// first run, on a server that then ignores If-Range.
fn misbehaving_servers(seed: u64, faults: &mut Faults, changed: Option<&Rc<Vec<u8>>>) {
    let mut rng = Rng::new(seed ^ 0x1a7e_d4a5_0000_0006);
    let mut rate = || [0, 0, 100, 500][rng.below(4) as usize];
    let (excess, fin, informational, short_range, idle_close) =
        (rate(), rate(), rate(), rate(), rate());
    let mut rng = Rng::new(seed ^ 0x1a7e_d4a5_0000_0007);
    if rng.below(3) == 0 {
        faults.server.excess = excess;
        faults.server.fin = fin / 2;
        faults.server.informational = informational;
        faults.server.short_range = short_range;
        faults.server.idle_close = idle_close;
    }
    if let (Some(v2), true) = (changed, rng.below(2) == 0) {
        faults.server.change_after = Some(1 + rng.below(6) as usize);
        faults.server.changed_to = Some(v2.clone());
    }
}

/// The link's speed, from a stream of its own: none (every byte at once), 50, 10 or 1 MB/s.
fn link_rate(seed: u64) -> u64 {
    [0, 0, 20, 100, 1000][Rng::new(seed ^ 0x1a7e_d4a5_0000_0002).below(5) as usize]
}

impl Scenario {
    fn draw(seed: u64) -> Scenario {
        let mut rng = Rng::new(seed);
        let len = match rng.below(8) {
            0 => [0, 1, 4095, 4096, 16_385, 65_536][rng.below(6) as usize],
            1..=4 => rng.below(700_000) as usize,
            _ => 1_000_000 + rng.below(3_500_000) as usize,
        };
        let data = Rc::new(content(&mut rng, len));
        let mirrors: Vec<Mirror> = (0..1 + rng.below(3))
            .map(|_| match rng.below(12) {
                0..=6 => Mirror::Good {
                    ranges: rng.below(5) != 0,
                    framing: match rng.below(8) {
                        0 => Framing::Chunked,
                        1 => Framing::UntilClose,
                        _ => Framing::Length,
                    },
                },
                7 => Mirror::NotFound,
                8 => Mirror::Unavailable,
                9 | 10 => Mirror::Redirect,
                _ => Mirror::Silent,
            })
            .collect();
        let mut args: Vec<String> = vec!["--no-conf".into(), "-q".into()];
        let split = [1, 2, 4, 8][rng.below(4) as usize];
        args.push(format!("-s{split}"));
        args.push(format!("-x{}", [1, 2, 4, 16][rng.below(4) as usize]));
        args.push("-k1M".into());
        args.push(format!("--max-tries={}", 1 + rng.below(5)));
        args.push(format!("--retry-wait={}", rng.below(3)));
        args.push("--timeout=5".into());
        args.push("--connect-timeout=3".into());
        let alloc = ["none", "prealloc", "trunc", "falloc"][rng.below(4) as usize];
        args.push(format!("--file-allocation={alloc}"));
        let wrong_checksum = rng.below(20) == 0;
        if wrong_checksum {
            args.push(format!("--checksum=sha-256={}", "0".repeat(64)));
        } else if rng.below(3) == 0 {
            args.push(format!("--checksum=sha-256={}", sha256_hex(&data)));
        }
        let mut faults = draw_faults(&mut rng);
        if rng.below(5) < 2 {
            faults.kill_at = Some(1 + rng.below(400));
        }
        let changed = (rng.below(8) == 0).then(|| {
            let len = if rng.below(2) == 0 {
                data.len()
            } else {
                rng.below(2_000_000) as usize
            };
            Rc::new(content(&mut rng, len))
        });
        let budget = [1 << 20, 2 << 20, 8 << 20][rng.below(3) as usize];
        // Draws added later come from a stream of their own, so that every seed above keeps the
        // scenario it had when it was recorded (a regression seed must replay what it found).
        let mut later = Rng::new(seed ^ 0x1a7e_d4a5_0000_0001);
        if faults.kill_at.is_none() && later.below(6) == 0 {
            // Ctrl-C: the download stops where it is; sometimes a second one soon after.
            let at = 1 + later.below(400);
            faults.interrupts.push(at);
            if later.below(3) == 0 {
                faults.interrupts.push(at + 1 + later.below(20));
            }
        }
        // Half the kills come after the kernel carried out what was ready at that step: a write
        // has landed, the process never saw it. (Not for the regression seeds, which replay the
        // kill they were recorded with.)
        if faults.kill_at.is_some() && !REGRESSIONS.contains(&seed) {
            faults.kill_late = later.below(2) == 0;
        }
        // A slow disk in one seed of eight: writes land up to 80 ms after they were issued.
        if later.below(8) == 0 && !REGRESSIONS.contains(&seed) {
            faults.write_time = Duration::from_millis(later.below(80));
        }
        faults.ns_per_byte = link_rate(seed);
        faults.uncached_refused = uncached_refusal(seed);
        faults.writeback_error = writeback_failure(seed);
        disk_and_power(seed, &mut faults);
        misbehaving_servers(seed, &mut faults, changed.as_ref());
        trickle(seed, &mut faults, &mut args);
        let mut mirrors = mirrors;
        if changed.is_some() {
            // A changed file is recognised by the validator (ETag) of the origin that served it,
            // sent as If-Range to that origin only (another mirror's validators are its own), so
            // such a scenario has one origin: every other good mirror redirects to it.
            let first_good = mirrors
                .iter()
                .position(|m| matches!(m, Mirror::Good { .. }));
            for (i, m) in mirrors.iter_mut().enumerate() {
                if matches!(m, Mirror::Good { .. }) && Some(i) != first_good {
                    *m = Mirror::Redirect;
                }
            }
        }
        let tls = https(seed, &mut args);
        let prior = prior_state(seed, data.len(), changed.is_some());
        if prior != Prior::Nothing {
            args.push("-c".into());
        }
        let (pieces, corrupt) = draw_pieces(seed, &data, prior, changed.is_some(), &mut mirrors);
        Scenario {
            seed,
            data,
            changed,
            tls,
            mirrors,
            args,
            faults,
            budget,
            prior,
            pieces,
            corrupt,
        }
    }

    /// The URI of mirror `i`.
    fn url(&self, i: usize) -> String {
        let scheme = if self.tls.is_some() { "https" } else { "http" };
        format!("{scheme}://{}/d/{NAME}", addr(i))
    }

    /// The first run's servers.
    fn servers(&self) -> HashMap<SocketAddr, HashMap<String, Route>> {
        let first_good = self
            .mirrors
            .iter()
            .position(|m| matches!(m, Mirror::Good { .. }));
        let mut servers = HashMap::new();
        for (i, m) in self.mirrors.iter().enumerate() {
            let route = match *m {
                Mirror::Good { ranges, framing } => Route::File {
                    data: self.data.clone(),
                    etag: "\"v1\"".into(),
                    ranges,
                    framing,
                },
                Mirror::NotFound => Route::Status(404),
                Mirror::Unavailable => Route::Status(503),
                Mirror::Redirect => Route::Redirect(self.url(first_good.unwrap_or(i))),
                Mirror::Silent => continue,
                Mirror::Corrupt => Route::File {
                    data: self.corrupt.clone().unwrap_or_else(|| self.data.clone()),
                    etag: "\"v1\"".into(),
                    ranges: true,
                    framing: Framing::Length,
                },
            };
            servers.insert(addr(i), HashMap::from([(format!("/d/{NAME}"), route)]));
        }
        servers
    }

    fn blackholes(&self) -> Vec<SocketAddr> {
        (0..self.mirrors.len())
            .filter(|&i| self.mirrors[i] == Mirror::Silent)
            .map(addr)
            .collect()
    }

    fn replay(&self) -> String {
        format!(
            "RINGDL_SIM_SEED={} cargo test --lib engine::simulation -- --nocapture",
            self.seed
        )
    }
}

/// How one run ended.
enum Ended {
    /// The engine finished: its summary.
    Done(Summary),
    Stopped(Stop),
}

fn console() -> Console {
    let loud = std::env::var_os("RINGDL_SIM_LOG").is_some();
    Console::new(ConsoleOptions {
        level: if loud {
            LogLevel::Debug
        } else {
            LogLevel::Error
        },
        quiet: !loud,
        show_readout: false,
        color: false,
        human_readable: false,
        log: None,
        log_level: LogLevel::Error,
    })
}

/// Runs the engine once over `world` with `args` (plus `-d DIR` and the URIs) and a `budget` of
/// registered memory: one job for the URIs, or `jobs` (an input list's) when given.
fn run(
    budget: usize,
    dir: &Path,
    args: &[String],
    uris: &[String],
    jobs: Option<Vec<Job>>,
    world: Rc<RefCell<World>>,
    seed: u64,
) -> Result<Ended, String> {
    run_with(budget, dir, args, uris, jobs, world, seed, None, None)
}

/// [`run`], in daemon mode when `daemon` holds the queue it starts with (`args` then has
/// `--enable-rpc`; `World::rpc_calls` are its clients).
#[allow(clippy::too_many_arguments)]
fn run_with(
    budget: usize,
    dir: &Path,
    args: &[String],
    uris: &[String],
    jobs: Option<Vec<Job>>,
    world: Rc<RefCell<World>>,
    seed: u64,
    daemon: Option<Vec<super::Pending>>,
    pieces: Option<Arc<PieceHashes>>,
) -> Result<Ended, String> {
    let mut argv: Vec<String> = args.to_vec();
    argv.push("-d".into());
    argv.push(dir.display().to_string());
    argv.extend(uris.iter().cloned());
    let settings = match cli::parse_args(argv.iter().map(std::ffi::OsString::from)) {
        Ok(Command::Download(s)) => s,
        _ => return Err(format!("bad command line {argv:?}")),
    };
    let slots = wanted_slots(&settings.config, Some(1));
    let layout =
        Layout::fit(slots, crate::tls::MIN_INCOMING, budget).ok_or("no layout fits the budget")?;
    let pool = Pool::new(layout).map_err(|e| e.to_string())?;
    let sim = Sim::new(
        pool,
        world.clone(),
        seed,
        Duration::from_secs(settings.config.timeout_secs),
        Duration::from_secs(settings.config.connect_timeout_secs),
    );
    let mut jobs = jobs
        .unwrap_or_else(|| {
            vec![Job {
                uris: settings.uris.clone(),
                opts: DownloadOptions {
                    pieces,
                    ..settings.config.download.clone()
                },
                own: Vec::new(),
                restarted: false,
            }]
        })
        .into_iter();
    let mut console = console();
    let daemon = match daemon {
        Some(pending) => Some(Box::new(
            super::driver::daemon::Daemon::new(&settings.config, pending, None)
                .ok_or("daemon mode without --enable-rpc")?,
        )),
        None => None,
    };
    let outside = Outside {
        signals: Some(signal_fd()),
        resolver: None,
        binds: Vec::new(),
        daemon,
    };
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        run_on(sim, &settings.config, &mut jobs, &mut console, outside)
    }))
    .map_err(|p| {
        let msg = p
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_default();
        format!("the engine panicked: {msg}")
    })?;
    tally(&world.borrow());
    match result {
        Ok(summary) => {
            let left = world.borrow().left_in_flight;
            if left > 0 {
                return Err(format!("the run ended with {left} operations in flight"));
            }
            if let Some(stop @ Stop::Killed) = world.borrow().stop.clone() {
                // Killed while the engine waited for its last file jobs.
                return Ok(Ended::Stopped(stop));
            }
            Ok(Ended::Done(summary))
        }
        Err(e) => match world.borrow().stop.clone() {
            Some(stop) => Ok(Ended::Stopped(stop)),
            None => Err(format!("the run failed: {e}")),
        },
    }
}

thread_local! {
    /// How often each fault class fired in this thread's runs (`World::fired`, added up).
    static FIRED: RefCell<std::collections::BTreeMap<&'static str, u64>> =
        const { RefCell::new(std::collections::BTreeMap::new()) };
}

/// Adds a run's fault counts to the thread's.
fn tally(world: &World) {
    FIRED.with(|f| {
        let mut f = f.borrow_mut();
        for (class, n) in &world.fired {
            *f.entry(*class).or_default() += n;
        }
    });
}

/// The thread's fault counts so far, as `class=N` words.
fn fired_report() -> String {
    FIRED.with(|f| {
        f.borrow()
            .iter()
            .map(|(class, n)| format!("{}={n}", class.replace(' ', "_")))
            .collect::<Vec<_>>()
            .join(" ")
    })
}

/// The control file next to the output claims only bytes that are on disk and equal `source`.
fn check_claims(dir: &Path, source: &[u8]) -> Result<(), String> {
    check_claims_of(dir, NAME, source)
}

/// The same for the file `name`.
fn check_claims_of(dir: &Path, name: &str, source: &[u8]) -> Result<(), String> {
    let path = dir.join(name);
    let ctl = control::control_path(&path);
    let cf = match control::load(&ctl) {
        Ok(Some(cf)) => cf,
        Ok(None) => return Ok(()),
        Err(e) => return Err(format!("unreadable control file: {e}")),
    };
    if cf.total_length != source.len() as u64 {
        // A control file for another version of the file (the source changed): it must not be
        // used, which the second run checks; its claims are about bytes of that version.
        return Ok(());
    }
    let on_disk = std::fs::read(&path).map_err(|e| format!("control file but no file: {e}"))?;
    for r in cf.done_ranges() {
        let (a, b) = (r.start as usize, r.end as usize);
        if b > on_disk.len() {
            return Err(format!(
                "the control file claims {a}..{b} but the file has {} bytes",
                on_disk.len()
            ));
        }
        if on_disk[a..b] != source[a..b] {
            let first = (a..b).find(|&i| on_disk[i] != source[i]).unwrap_or(a);
            return Err(format!(
                "the control file claims {a}..{b}, but byte {first} on disk is wrong"
            ));
        }
    }
    Ok(())
}

fn check_complete(dir: &Path, source: &[u8], what: &str) -> Result<(), String> {
    check_complete_of(dir, NAME, source, what)
}

/// The file `name` is `source`, byte for byte, and has no control file left.
fn check_complete_of(dir: &Path, name: &str, source: &[u8], what: &str) -> Result<(), String> {
    let path = dir.join(name);
    let got = std::fs::read(&path).map_err(|e| format!("{what}: reported complete, {e}"))?;
    if got.len() != source.len() {
        return Err(format!(
            "{what}: reported complete with {} bytes, the source has {}",
            got.len(),
            source.len()
        ));
    }
    if got != *source {
        let first = (0..got.len()).find(|&i| got[i] != source[i]).unwrap_or(0);
        return Err(format!("{what}: reported complete, byte {first} differs"));
    }
    if control::control_path(&path).exists() {
        return Err(format!("{what}: complete but the control file is left"));
    }
    Ok(())
}

/// Whether `on_disk` is a prefix of `source` (what `-c` may take for data without a control
/// file); `Err` says where it is not.
fn is_prefix(on_disk: &[u8], source: &[u8]) -> Result<(), String> {
    if source.starts_with(on_disk) {
        return Ok(());
    }
    let first = (0..on_disk.len())
        .find(|&i| source.get(i) != Some(&on_disk[i]))
        .unwrap_or(0);
    Err(format!("{} bytes, byte {first} wrong", on_disk.len()))
}

/// Runs one seed; `Err` says what broke.
fn run_seed(seed: u64, verbose: bool) -> Result<(), String> {
    check_scenario(&Scenario::draw(seed), verbose)
}

/// Runs a scenario: the first run, then (unless it finished) the healed `-c` run; `Err` says
/// what broke.
fn check_scenario(sc: &Scenario, verbose: bool) -> Result<(), String> {
    let seed = sc.seed;
    if verbose {
        eprintln!(
            "seed {seed}: {} bytes, prior {:?}, mirrors {:?}, args {:?}, faults {:?}, changed: {}, budget {}",
            sc.data.len(),
            sc.prior,
            sc.mirrors,
            sc.args,
            sc.faults,
            sc.changed.as_ref().map_or(0, |c| c.len()),
            sc.budget
        );
    }
    let dir = tempfile::tempdir().map_err(|e| format!("no temporary directory: {e}"))?;
    let before = sc.prior.make(dir.path(), &sc.data)?;
    let before_ctl = std::fs::read(control::control_path(&dir.path().join(NAME))).ok();
    let uris: Vec<String> = (0..sc.mirrors.len()).map(|i| sc.url(i)).collect();
    let world = Rc::new(RefCell::new(World {
        servers: sc.servers(),
        blackholes: sc.blackholes(),
        faults: sc.faults.clone(),
        tls: server_tls(sc.tls),
        ..World::default()
    }));
    if let Some((tls13, chacha)) = sc.tls {
        let class = match (tls13, chacha) {
            (true, true) => "https, TLS 1.3, ChaCha20",
            (true, false) => "https, TLS 1.3, AES-GCM",
            (false, true) => "https, TLS 1.2, ChaCha20",
            (false, false) => "https, TLS 1.2, AES-GCM",
        };
        *world.borrow_mut().fired.entry(class).or_default() += 1;
    }
    if sc.prior != Prior::Nothing {
        *world
            .borrow_mut()
            .fired
            .entry("a file on disk before the run")
            .or_default() += 1;
    }
    if sc.pieces.is_some() {
        *world.borrow_mut().fired.entry("piece digests").or_default() += 1;
    }
    if sc.corrupt.is_some() {
        *world
            .borrow_mut()
            .fired
            .entry("a mirror serving changed bytes")
            .or_default() += 1;
    }
    if sc
        .args
        .iter()
        .any(|a| a.starts_with("--lowest-speed-limit"))
    {
        *world
            .borrow_mut()
            .fired
            .entry("a server trickling")
            .or_default() += 1;
    }
    let first = run_with(
        sc.budget,
        dir.path(),
        &sc.args,
        &uris,
        None,
        world.clone(),
        seed,
        None,
        sc.pieces.clone(),
    )?;
    let steps = world.borrow().steps;
    if verbose {
        let w = world.borrow();
        eprintln!("first run requests: {:?}", w.requests);
    }
    // The first run's own file (the second run goes on with the file found, under its name).
    let name = landed(
        dir.path(),
        NAME,
        before.as_deref(),
        before_ctl.as_deref(),
        lengthless(&sc.mirrors),
    )
    .map_err(|e| format!("first run: {e}"))?;
    // What was on disk before: every byte kept (it is the source's), the file never shorter,
    // unless the run replaced it whole or a digest or a new version of the file said it is not
    // the server's (then it is fetched again from nothing, as aria2c does).
    let refetch_allowed = sc.faults.server.changed_to.is_some()
        || sc.args.iter().any(|a| a.starts_with("--checksum"));
    if let (Some(before), false) = (&before, refetch_allowed) {
        let now = std::fs::read(dir.path().join(NAME)).unwrap_or_default();
        // `-c` writes again from the last whole 16 KiB block of a file without a control file
        // (O_DIRECT writes whole blocks); if a failed sync or writeback made those writes
        // anything, only the part before them is proven, and the file may end there.
        let lost_writes = sc.faults.job_errors > 0 || sc.faults.writeback_error > 0;
        if !kept_prior(sc.prior, before, &now, &sc.data, lost_writes) {
            return Err(format!(
                "first run over {:?}: the file went from {} to {} bytes, its first {} bytes {}",
                sc.prior,
                before.len(),
                now.len(),
                before.len().min(now.len()),
                if now.len() >= before.len() {
                    "changed"
                } else {
                    "cut"
                }
            ));
        }
    }
    match &first {
        Ended::Stopped(Stop::Hung(why)) => {
            return Err(format!("first run hung after {steps} steps: {why}"));
        }
        Ended::Stopped(Stop::Killed) => {}
        Ended::Done(summary) => {
            let outcome = summary.results.first().ok_or("no result")?;
            let code = outcome.code.0;
            if code == 0 && outcome.finished {
                // The file may have changed during this run: it must then be one version whole.
                let mut versions = vec![(&sc.data, "first run")];
                if let Some(v2) = &sc.faults.server.changed_to {
                    versions.push((v2, "first run (new version)"));
                }
                let mut last = Ok(());
                for (source, what) in versions {
                    last = check_complete_of(dir.path(), &name, source, what).or_else(|e| {
                        // A control file whose removal failed stays, true: it claims right bytes.
                        if sc.faults.job_errors > 0 && e.ends_with("the control file is left") {
                            check_claims_of(dir.path(), &name, source)
                        } else {
                            Err(e)
                        }
                    });
                    if last.is_ok() {
                        break;
                    }
                }
                return last;
            }
            let interrupted = !sc.faults.interrupts.is_empty();
            if !(interrupted && code == 0) {
                expect_code(sc, code)?;
            }
        }
    }
    match &sc.faults.server.changed_to {
        Some(v2) => check_claims(dir.path(), &sc.data)
            .or_else(|_| check_claims(dir.path(), v2))
            .map_err(|e| format!("after the first run: the versions are mixed: {e}"))?,
        None => {
            check_claims_of(dir.path(), &name, &sc.data)
                .map_err(|e| format!("after the first run: {e}"))?;
            // A file no control file describes is judged by its length (`-c`): every byte of it
            // must be right. (Checked here, not only by what the second run then makes of it.)
            let path = dir.path().join(&name);
            if !control::control_path(&path).exists() {
                if let Ok(on_disk) = std::fs::read(&path) {
                    is_prefix(&on_disk, &sc.data).map_err(|e| {
                        format!("after the first run: no control file, and the file is not a prefix: {e}")
                    })?;
                }
            }
        }
    }
    if verbose {
        let path = dir.path().join(NAME);
        let cf = control::load(&control::control_path(&path)).ok().flatten();
        eprintln!(
            "first run: {} steps, requests {:?}; file {:?} bytes, control file claims {:?}",
            world.borrow().steps,
            world.borrow().requests,
            std::fs::metadata(&path).map(|m| m.len()).ok(),
            cf.map(|c| c.done_ranges())
        );
    }

    // The second run: one healthy mirror with ranges, no faults, `-c`; the file may have changed
    // (then on the origin that served it).
    let source = sc.changed.clone().unwrap_or_else(|| sc.data.clone());
    let origin = if sc.changed.is_some() {
        sc.mirrors
            .iter()
            .position(|m| matches!(m, Mirror::Good { .. }))
            .unwrap_or(0)
    } else {
        0
    };
    let etag = if sc.changed.is_some() {
        "\"v2\""
    } else {
        "\"v1\""
    };
    let mut servers = HashMap::new();
    servers.insert(
        addr(origin),
        HashMap::from([(
            format!("/d/{NAME}"),
            Route::File {
                data: source.clone(),
                etag: etag.into(),
                ranges: true,
                framing: Framing::Length,
            },
        )]),
    );
    let world2 = Rc::new(RefCell::new(World {
        servers,
        tls: server_tls(sc.tls),
        ..World::default()
    }));
    let mut args: Vec<String> = sc
        .args
        .iter()
        .filter(|a| !a.starts_with("--checksum"))
        .cloned()
        .collect();
    args.push("-c".into());
    if sc.changed.is_some() {
        // Whatever is on disk may be of the old version: with aria2's defaults a changed file is
        // started over (If-Range) or refused; it is never mixed.
        args.push("--allow-overwrite=true".into());
    }
    let second = run_with(
        sc.budget,
        dir.path(),
        &args,
        &[sc.url(origin)],
        None,
        world2.clone(),
        seed ^ 0xabcd,
        None,
        sc.pieces.clone(),
    )?;
    if verbose {
        eprintln!(
            "second run {args:?}: {} steps, requests {:?}",
            world2.borrow().steps,
            world2.borrow().requests
        );
    }
    match second {
        Ended::Stopped(stop) => Err(format!(
            "second run (healed, -c) stopped: {stop:?} after {} steps",
            world2.borrow().steps
        )),
        Ended::Done(summary) => {
            let outcome = summary.results.first().ok_or("no result")?;
            if outcome.code.0 == 0 && outcome.finished {
                // A file that changed may still be reported complete as the old version when the
                // first run had written all of it (its control file claims it all); it must be one
                // version or the other, never both.
                check_complete(dir.path(), &source, "second run").or_else(|e| match sc.changed {
                    Some(_) => check_complete(dir.path(), &sc.data, "second run (old version)")
                        .map_err(|_| e),
                    None => Err(e),
                })
            } else if sc.changed.is_some() {
                // Refusing a changed file is allowed (the old partial file stays as it was);
                // mixing the two versions is not.
                check_claims(dir.path(), &source)
                    .or_else(|_| check_claims(dir.path(), &sc.data))
                    .map_err(|e| format!("second run: the versions are mixed: {e}"))
            } else {
                Err(format!(
                    "second run (healed, -c) ended with exit code {}",
                    outcome.code.0
                ))
            }
        }
    }
}

/// The exit code of a first run that failed, where the scenario decides it.
fn expect_code(sc: &Scenario, code: u8) -> Result<(), String> {
    let all_404 = sc.mirrors.iter().all(|m| *m == Mirror::NotFound);
    // A full disk decides the code only when nothing on the network can end the download first.
    let sf = &sc.faults.server;
    let clean_network = sc.faults.reset == 0
        && sc.faults.stall == 0
        && sc.mirrors.iter().all(|m| matches!(m, Mirror::Good { .. }))
        && sf.fin == 0
        && sf.short_range == 0
        && sf.change_after.is_none()
        && !sc
            .args
            .iter()
            .any(|a| a.starts_with("--lowest-speed-limit"));
    let full_disk = sc.faults.write_error == 1000
        && sc.faults.write_errno == libc::ENOSPC
        && clean_network
        && sc.faults.job_errors == 0;
    // A part of the file on disk that the run resumes, from servers that all ignore ranges:
    // the first answer ends it (aria2c's --always-resume=true), before any write can fail.
    let has = |a: &str| sc.args.iter().any(|x| x == a);
    let resumes_part = match sc.prior {
        // (Less than one write block is fetched again from the start, with no range to refuse.)
        Prior::Prefix(n) => has("-c") && n >= 16384 && n < sc.data.len(),
        Prior::Claimed(n) => n > 0 && n < sc.data.len(),
        _ => false,
    };
    // (A whole answer without a length leaves the file found alone: the download is renamed
    // and runs as a new one, `landed`.)
    let no_ranges = sc.mirrors.iter().all(|m| {
        matches!(
            m,
            Mirror::Good {
                ranges: false,
                framing: Framing::Length
            }
        )
    });
    // The bytes found on disk are read back for a digest: a read that fails ends the run first.
    let reads_found = sc.prior != Prior::Nothing
        && sc.faults.read_error > 0
        && sc.args.iter().any(|a| a.starts_with("--checksum"));
    let expected = if all_404 {
        Some(3)
    } else if resumes_part
        && no_ranges
        && !has("--always-resume=false")
        && clean_network
        && sc.faults.job_errors == 0
    {
        // (Unless a failing file job, a reset or a slow server ends it first.)
        Some(8)
    } else if reads_found && code == ExitCode::FILE_IO.0 {
        None
    } else if full_disk && !sc.data.is_empty() && sc.faults.kill_at.is_none() {
        // Unless nothing was ever written (no mirror served anything).
        sc.mirrors
            .iter()
            .any(|m| matches!(m, Mirror::Good { .. }))
            .then_some(9)
    } else {
        None
    };
    match expected {
        Some(e) if e != code => Err(format!("first run exited {code}, aria2 gives {e}")),
        _ if code == 0 => Err("first run exited 0 without finishing".into()),
        _ => Ok(()),
    }
}

/// Runs `run` on `count` seeds from `first`, stopping after ten failures; each failure is printed
/// with `what`, the seed, and the command that replays it (`replay_env=SEED cargo test --lib
/// engine::simulation::MODULE`). The seeds that failed.
fn run_block(
    what: &str,
    replay: (&str, &str),
    first: u64,
    count: u64,
    mut run: impl FnMut(u64) -> Result<(), String>,
) -> Vec<u64> {
    let mut failures = Vec::new();
    for seed in first..first.saturating_add(count) {
        if let Err(e) = run(seed) {
            eprintln!(
                "{what} {seed} FAILED: {e}\n  replay: {}={seed} cargo test --lib \
                 engine::simulation::{} -- --nocapture",
                replay.0, replay.1
            );
            failures.push(seed);
            if failures.len() >= 10 {
                break;
            }
        }
    }
    failures
}

fn env_u64(name: &str) -> Option<u64> {
    std::env::var(name).ok().and_then(|v| v.parse().ok())
}

/// A scenario built by hand: `mirrors` serving `len` bytes, `args`, `faults`; nothing changes
/// between the runs.
fn custom(seed: u64, len: usize, mirrors: Vec<Mirror>, args: &[&str], faults: Faults) -> Scenario {
    let mut rng = Rng::new(seed);
    let mut all: Vec<String> = ["--no-conf", "-q", "--timeout=5", "--connect-timeout=3"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    all.extend(args.iter().map(|s| s.to_string()));
    Scenario {
        seed,
        data: Rc::new(content(&mut rng, len)),
        changed: None,
        tls: None,
        mirrors,
        args: all,
        faults,
        budget: 2 << 20,
        prior: Prior::Nothing,
        pieces: None,
        corrupt: None,
    }
}

/// Checks every scenario (`check_scenario`: the first run, then the healed `-c` run), each named
/// by its label, and fails with every scenario that broke.
fn check_each(name: &str, cases: impl IntoIterator<Item = (String, Scenario)>) {
    let failures: Vec<String> = cases
        .into_iter()
        .filter_map(|(label, sc)| {
            check_scenario(&sc, false)
                .err()
                .map(|e| format!("{label}, seed {}: {e}", sc.seed))
        })
        .collect();
    assert!(failures.is_empty(), "{name}:\n{}", failures.join("\n"));
}

/// Kills at every step of the first part of a run: whatever a kill leaves, `-c` finishes exactly.
fn kill_everywhere(name: &str, mirrors: Vec<Mirror>, args: &[&str], len: usize) {
    kill_everywhere_with(name, mirrors, args, len, Faults::default());
}

/// [`kill_everywhere`], with `more` faults (its write errors, say) besides.
fn kill_everywhere_with(name: &str, mirrors: Vec<Mirror>, args: &[&str], len: usize, more: Faults) {
    let cases = (1..240).step_by(2).flat_map(|kill| {
        let mirrors = mirrors.clone();
        let more = more.clone();
        (1..4).map(move |seed| {
            let faults = Faults {
                max_chunk: 150_000,
                short_write: 300,
                reorder: true,
                kill_at: Some(kill),
                ..more.clone()
            };
            let sc = custom(seed * 1000 + kill, len, mirrors.clone(), args, faults);
            (format!("kill at step {kill}"), sc)
        })
    });
    check_each(name, cases);
}

/// A power loss drops every data write no `fdatasync` made durable: a control file (synced,
/// renamed into place) must never claim such bytes, or `-c` takes whatever the disk then holds
/// for data. Seed 1165 found it: nothing synced the data before its control file was saved.
#[test]
fn a_power_loss_never_leaves_claims_over_lost_writes() {
    let good = Mirror::Good {
        ranges: true,
        framing: Framing::Length,
    };
    // A 1 MB/s link, so that control files are saved (every second) while the data comes.
    let more = Faults {
        power_loss: true,
        ns_per_byte: 1000,
        ..Faults::default()
    };
    let args = ["-x2", "-k1M", "--auto-save-interval=1"];
    kill_everywhere_with("power loss", vec![good], &args, 2_500_000, more);
}

/// The servers speak TLS 1.3 and 1.2, with AES-GCM and ChaCha20, to the engine's own record
/// layer: whole files, split ones, and ones cut by resets, each complete byte for byte (or
/// resumed so by the healed run).
#[test]
fn tls_of_each_version_and_cipher_carries_files_exactly() {
    let mut cases = Vec::new();
    for tls13 in [true, false] {
        for chacha in [true, false] {
            for (len, x, reset) in [
                (70_000, "-x1", 0),
                (2_600_000, "-x4", 0),
                (2_600_000, "-x2", 300),
            ] {
                let good = Mirror::Good {
                    ranges: true,
                    framing: Framing::Length,
                };
                let faults = Faults {
                    max_chunk: 30_000,
                    reset,
                    ..Faults::default()
                };
                let mut sc = custom(len as u64 + 7, len, vec![good], &[x, "-k1M"], faults);
                sc.tls = Some((tls13, chacha));
                let ca = PKI.with(|p| p.ca_file.display().to_string());
                sc.args.push(format!("--ca-certificate={ca}"));
                let label = format!(
                    "TLS 1.{} {} {len} bytes {x} resets {reset}",
                    if tls13 { 3 } else { 2 },
                    if chacha { "ChaCha20" } else { "AES-GCM" }
                );
                if reset == 0 {
                    // Without faults the first run itself completes, over TLS.
                    let (dir, world, ended) = run_once(&sc);
                    let outcome = only_outcome(ended, &label).unwrap_or_else(|e| panic!("{e}"));
                    assert!(
                        outcome.code.0 == 0 && outcome.finished,
                        "{label}: exit {}",
                        outcome.code.0
                    );
                    check_complete(dir.path(), &sc.data, &label).unwrap_or_else(|e| panic!("{e}"));
                    let w = world.borrow();
                    assert!(!w.requests.is_empty(), "{label}: no request");
                    // Every connection says close_notify before it goes (here all end idle).
                    assert!(w.client_close_notifies > 0, "{label}: no close_notify sent");
                }
                cases.push((label, sc));
            }
        }
    }
    check_each("TLS", cases);
}

/// A body of unknown length (close-delimited) has no control file: a kill must leave its file
/// without a gap, since `-c` takes its length for what is done. Writes completing out of order
/// left one.
#[test]
fn a_kill_never_leaves_a_gap_in_a_file_of_unknown_length() {
    let good = Mirror::Good {
        ranges: false,
        framing: Framing::UntilClose,
    };
    kill_everywhere("unknown length", vec![good], &["-s4", "-k1M"], 1_900_000);
}

/// A file no control file describes grows only at the end of its bytes without a gap, even once
/// a write has failed: a block after the failed one, written, left a hole that a kill kept and
/// `-c` took for data (seed 1734084).
#[test]
fn a_failed_write_never_leaves_a_gap_in_a_file_of_unknown_length() {
    for framing in [Framing::UntilClose, Framing::Chunked] {
        let good = Mirror::Good {
            ranges: true,
            framing,
        };
        let more = Faults {
            write_error: 4,
            write_errno: libc::ENOSPC,
            ..Faults::default()
        };
        let name = format!("{framing:?}, writes failing");
        kill_everywhere_with(&name, vec![good], &["-x4", "-k1M"], 1_900_000, more);
    }
}

/// Starting over at the same path (the file changed on the server) empties the file: at no step
/// may the earlier attempt's control file still claim bytes the file no longer holds. Review
/// finding: the file was emptied on the file-job thread and the new control file saved only a
/// step later, so a kill between left the old claims over zeros, which `-c` took for data.
#[test]
fn starting_over_never_leaves_old_claims_over_an_emptied_file() {
    let len = 3_000_000;
    let v1 = Mirror::Good {
        ranges: true,
        framing: Framing::Length,
    };
    let args = ["-x2", "-k1M", "--allow-overwrite=true", "-c"];
    // The first run stops (Ctrl-C) once some of v1 is on disk, its control file saying which.
    let first = custom(7, len, vec![v1], &args, Faults::default());
    let v2: Rc<Vec<u8>> = Rc::new(first.data.iter().map(|b| b ^ 0x5a).collect());
    let mut failures = Vec::new();
    let mut restarted = 0;
    for framing in [Framing::Length, Framing::Chunked] {
        for kill in 1..70 {
            let mut sc = custom(7, len, vec![v1], &args, Faults::default());
            sc.faults.interrupts = vec![12];
            let (dir, _, ended) = run_once(&sc);
            let claimed = control::load(&control::control_path(&dir.path().join(NAME)))
                .ok()
                .flatten()
                .is_some_and(|cf| cf.done_bytes() > 0);
            assert!(
                ended.is_ok() && claimed,
                "the first run left no claims to start over from"
            );
            let route = Route::File {
                data: v2.clone(),
                etag: "\"v2\"".into(),
                ranges: true,
                framing,
            };
            let world = Rc::new(RefCell::new(World {
                servers: HashMap::from([(addr(0), HashMap::from([(format!("/d/{NAME}"), route)]))]),
                faults: Faults {
                    kill_at: Some(kill),
                    ..Faults::default()
                },
                ..World::default()
            }));
            let mut all: Vec<String> = sc.args.clone();
            all.push("--always-resume=false".into());
            let _ = run(
                sc.budget,
                dir.path(),
                &all,
                &[url(0)],
                None,
                world.clone(),
                kill,
            );
            restarted += usize::from(world.borrow().requests.len() > 1);
            // What is left is claimed right for one version or the other, never over zeros.
            let claims =
                check_claims(dir.path(), &v2).or_else(|_| check_claims(dir.path(), &first.data));
            if let Err(e) = claims.and_then(|_| {
                let path = dir.path().join(NAME);
                let on_disk = std::fs::read(&path).unwrap_or_default();
                let cf = control::load(&control::control_path(&path)).ok().flatten();
                // Without a control file, `-c` takes the file's length: it must be v2's
                // bytes or v1's, without a gap.
                match cf {
                    Some(_) => Ok(()),
                    None if v2.starts_with(&on_disk) || first.data.starts_with(&on_disk) => Ok(()),
                    None => Err(format!("{} bytes of neither version", on_disk.len())),
                }
            }) {
                failures.push(format!("{framing:?}, kill at step {kill}: {e}"));
            }
        }
    }
    assert!(restarted > 0, "no run got as far as starting over");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// A body of unknown length cannot be resumed, so a reset starts it over and its file is emptied:
/// not while a write of the attempt before is still in flight, which would land after in the
/// emptied file (zeros, then the old attempt's bytes). Review finding: the job emptying the file
/// was issued at once, and with slow writes a kill then left a file `-c` took for data.
#[test]
fn a_file_emptied_to_start_over_waits_for_the_writes_before() {
    let good = Mirror::Good {
        ranges: false,
        framing: Framing::UntilClose,
    };
    let mut failures = Vec::new();
    let mut checked = 0;
    for seed in 1..40 {
        for kill in (10..200).step_by(5) {
            let faults = Faults {
                kill_at: Some(kill),
                kill_late: kill % 2 == 0,
                max_chunk: 150_000,
                reset: 150,
                write_time: Duration::from_millis(50),
                ..Faults::default()
            };
            let args = ["-k1M", "--max-tries=0", "--retry-wait=0"];
            let sc = custom(seed, 1_200_000, vec![good], &args, faults);
            let (dir, world, _) = run_once(&sc);
            if world.borrow().requests.len() < 2 {
                continue;
            }
            checked += 1;
            let on_disk = std::fs::read(dir.path().join(NAME)).unwrap_or_default();
            if let Err(e) = is_prefix(&on_disk, &sc.data) {
                failures.push(format!("seed {seed}, killed at step {kill}: {e}"));
            }
        }
    }
    assert!(checked > 50, "only {checked} runs started over");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The control file cannot be saved (a directory stands where it goes): a kill at any step, early
/// or late, leaves a file `-c` may trust, a prefix of the source, and a run to the end fails with
/// exit 17 (FILE_IO) leaving such a prefix. Before, the file was preallocated and written at every
/// connection's offsets, and a kill left holes `-c` took for data. (aria2c finishes such a
/// download; going on with one connection in file order was tried, and a review found ways for it
/// to hang, so a split download fails here instead.)
#[test]
fn a_control_file_that_cannot_be_saved_never_leaves_a_gap() {
    let good = Mirror::Good {
        ranges: true,
        framing: Framing::Length,
    };
    let args = ["-x4", "-s4", "-k1M", "--file-allocation=prealloc"];
    let mut failures = Vec::new();
    for kill in (1..300).step_by(3).map(Some).chain([None]) {
        for late in [false, true] {
            let faults = Faults {
                kill_at: kill,
                kill_late: late,
                max_chunk: 150_000,
                reorder: true,
                ..Faults::default()
            };
            let sc = custom(5, 3_000_000, vec![good], &args, faults);
            let dir = tempfile::tempdir().expect("a temporary directory");
            let path = dir.path().join(NAME);
            std::fs::create_dir_all(control::control_path(&path).join("in-the-way"))
                .expect("a directory where the control file goes");
            let world = Rc::new(RefCell::new(World {
                servers: sc.servers(),
                faults: sc.faults.clone(),
                ..World::default()
            }));
            let ended = run(sc.budget, dir.path(), &sc.args, &[url(0)], None, world, 5);
            let on_disk = std::fs::read(&path).unwrap_or_default();
            let what = format!("kill {kill:?} (late: {late})");
            if kill.is_none() {
                match only_outcome(ended, &what) {
                    Ok(o) if o.code.0 == 17 && sc.data.starts_with(&on_disk) => {}
                    Ok(o) => failures.push(format!(
                        "{what}: ended {} (finished: {})",
                        o.code.0, o.finished
                    )),
                    Err(e) => failures.push(e),
                }
            } else if let Err(e) = is_prefix(&on_disk, &sc.data) {
                failures.push(format!("{what}: {e}"));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// A kill that comes after the kernel has carried out what was ready (a write landed) but before
/// the process saw it: a file no control file describes is still a prefix of the source. Review
/// finding: the last block of a body of unknown length, and the partly filled block of a failing
/// download, went out padded to 4 KiB and the padding was cut only once the write was seen
/// complete, so such a kill left it for `-c` to take as data (here at step 56: 1 503 232 bytes
/// for 1 500 000). Such a block now goes through the page cache at its exact length.
#[test]
fn a_late_kill_never_leaves_padding_in_a_file_no_control_file_describes() {
    let good = Mirror::Good {
        ranges: false,
        framing: Framing::UntilClose,
    };
    let mut failures = Vec::new();
    for seed in 4..120 {
        for after in 1..5 {
            let faults = Faults {
                kill_at: Some(seed + after),
                kill_late: true,
                max_chunk: 70_001,
                reset: 60,
                reorder: true,
                ..Faults::default()
            };
            let sc = custom(
                seed,
                1_500_000,
                vec![good],
                &["-k1M", "--max-tries=1"],
                faults,
            );
            let (dir, _, _) = run_once(&sc);
            let path = dir.path().join(NAME);
            let on_disk = std::fs::read(&path).unwrap_or_default();
            let described = control::control_path(&path).exists();
            let checked = if described {
                Ok(())
            } else {
                is_prefix(&on_disk, &sc.data)
            };
            if let Err(e) = checked {
                failures.push(format!("killed at step {}: {e}", seed + after));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// A split download's file holds no byte, and no allocated length, before a control file
/// describes it: a kill right after the first response must not leave a file `-c` trusts.
#[test]
fn a_kill_never_leaves_bytes_no_control_file_accounts_for() {
    let good = Mirror::Good {
        ranges: true,
        framing: Framing::Length,
    };
    for alloc in ["--file-allocation=trunc", "--file-allocation=prealloc"] {
        kill_everywhere(alloc, vec![good], &["-s4", "-k1M", alloc], 2_500_000);
    }
}

/// A Ctrl-C that arrives once every byte is in (the last write, the final writeback of a file
/// written through the page cache, or the cut still in flight) changes nothing: whenever the run
/// leaves the whole file, it reports the download complete and leaves no control file beside it.
/// Review finding: the final writeback of a one-block file, and before it the last write of any
/// file, was a window in which a stop left a whole file reported "not complete".
#[test]
fn a_stop_after_the_last_byte_changes_nothing() {
    let good = Mirror::Good {
        ranges: true,
        framing: Framing::Length,
    };
    let mut failures = Vec::new();
    let mut stopped_whole = 0;
    for (len, args) in [(50_000, &["-x1"][..]), (700_000, &["-x2", "-k1M"][..])] {
        for step in 1..160 {
            let faults = Faults {
                interrupts: vec![step],
                reorder: step % 2 == 0,
                ..Faults::default()
            };
            let sc = custom(step, len, vec![good], args, faults);
            let (dir, _, ended) = run_once(&sc);
            let what = format!("{len} bytes, Ctrl-C at step {step}");
            let outcome = match only_outcome(ended, &what) {
                Ok(o) => o,
                Err(e) => {
                    failures.push(e);
                    continue;
                }
            };
            let whole = std::fs::read(dir.path().join(NAME)).ok().as_deref() == Some(&sc.data[..]);
            if !whole {
                continue;
            }
            if !(outcome.code.0 == 0 && outcome.finished) {
                stopped_whole += 1;
                failures.push(format!(
                    "{what}: the file is whole, the download reported {} (finished: {})",
                    outcome.code.0, outcome.finished
                ));
            } else if let Err(e) = check_complete(dir.path(), &sc.data, &what) {
                failures.push(e);
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{stopped_whole} whole files reported stopped:\n{}",
        failures.join("\n")
    );
}

/// A second Ctrl-C drops the blocks still waiting to be written: a download whose bytes had all
/// arrived but not all reached the file must not then be reported complete (its file cut to
/// length over the hole, its control file removed). Whatever the two stops leave is either
/// complete and exact, or claims only bytes that are on disk. Review finding on 9c8aea1, which
/// took "every byte arrived" for "every byte written".
#[test]
fn an_emergency_stop_never_completes_a_file_with_a_hole() {
    let length = Mirror::Good {
        ranges: true,
        framing: Framing::Length,
    };
    let until_close = Mirror::Good {
        ranges: false,
        framing: Framing::UntilClose,
    };
    let mut failures = Vec::new();
    for (len, mirror, args) in [
        (50_000, length, &["-x1"][..]),
        (700_000, length, &["-x2", "-k1M"][..]),
        (300_000, until_close, &["-x1"][..]),
    ] {
        for step in 1..120 {
            for gap in [0, 1, 3] {
                let faults = Faults {
                    interrupts: vec![step, step + gap],
                    reorder: step % 2 == 0,
                    ..Faults::default()
                };
                let sc = custom(step, len, vec![mirror], args, faults);
                let (dir, _, ended) = run_once(&sc);
                let what = format!("{len} bytes, Ctrl-C at steps {step} and {}", step + gap);
                let outcome = match only_outcome(ended, &what) {
                    Ok(o) => o,
                    Err(e) => {
                        failures.push(e);
                        continue;
                    }
                };
                let checked = if outcome.code.0 == 0 && outcome.finished {
                    check_complete(dir.path(), &sc.data, &what)
                } else {
                    check_claims(dir.path(), &sc.data).map_err(|e| format!("{what}: {e}"))
                };
                if let Err(e) = checked {
                    failures.push(e);
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// A writeback that fails after its write returned (a file written through the page cache) loses
/// what it was writing: the download fails, and neither its control file nor its cut file may
/// claim those bytes, so that `-c` fetches them again. One-block files (uncached, then with each
/// write written back where the flag is refused), with and without completions out of order.
/// Review finding: the claims were made when the write returned and kept after the writeback
/// failed.
#[test]
fn a_failed_writeback_claims_nothing_it_was_writing() {
    let good = Mirror::Good {
        ranges: true,
        framing: Framing::Length,
    };
    let mut cases = Vec::new();
    for refused in [0, 1000] {
        for rate in [300, 1000] {
            for seed in 1..25 {
                let faults = Faults {
                    uncached_refused: refused,
                    writeback_error: rate,
                    reorder: seed % 2 == 0,
                    short_write: 300,
                    ..Faults::default()
                };
                let sc = custom(
                    seed,
                    20_000 + 4_000 * seed as usize,
                    vec![good],
                    &[],
                    faults,
                );
                cases.push((format!("refused {refused}, rate {rate}"), sc));
            }
        }
    }
    check_each("failed writebacks", cases);
}

/// Runs scenario `sc` (one download of its first mirror) once, into a new directory: the
/// directory, the world it ran in and how the run ended.
fn run_once(sc: &Scenario) -> (tempfile::TempDir, Rc<RefCell<World>>, Result<Ended, String>) {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let world = Rc::new(RefCell::new(World {
        servers: sc.servers(),
        faults: sc.faults.clone(),
        tls: server_tls(sc.tls),
        ..World::default()
    }));
    let ended = run(
        sc.budget,
        dir.path(),
        &sc.args,
        &[sc.url(0)],
        None,
        world.clone(),
        sc.seed,
    );
    (dir, world, ended)
}

/// The result of a run that ended by itself with one download; `Err` says what went wrong.
fn only_outcome(ended: Result<Ended, String>, what: &str) -> Result<super::job::Outcome, String> {
    match ended {
        Ok(Ended::Done(summary)) => summary
            .results
            .into_iter()
            .next()
            .ok_or_else(|| format!("{what}: no result")),
        _ => Err(format!("{what}: the run did not end by itself")),
    }
}

/// Runs scenario `sc` once and requires that it ends by itself, complete and exact; the world it
/// ran in, for what else the test checks.
fn run_to_completion(sc: &Scenario, what: &str) -> Rc<RefCell<World>> {
    let (dir, world, ended) = run_once(sc);
    let Ok(Ended::Done(summary)) = ended else {
        panic!("{what}: the run did not end by itself");
    };
    let outcome = summary.results.first().expect("a result");
    assert_eq!((outcome.code.0, outcome.finished), (0, true), "{what}");
    check_complete(dir.path(), &sc.data, what).unwrap_or_else(|e| panic!("{e}"));
    world
}

/// Review finding 8: full blocks were written newest first (a LIFO queue), so when several waited
/// at once (behind the first control-file save, or one write at a time for a file of unknown
/// length) they went out backwards and missed `--checksum`'s in-order hash, which then read the
/// file back. One stream, short writes, completions out of order: every byte must be hashed as it
/// is written, in file order, and nothing read back.
#[test]
fn one_stream_is_hashed_in_file_order_without_reading_back() {
    for framing in [Framing::Length, Framing::Chunked, Framing::UntilClose] {
        for seed in 1..6 {
            let good = Mirror::Good {
                ranges: true,
                framing,
            };
            let faults = Faults {
                max_chunk: 100_000,
                short_write: 300,
                reorder: true,
                ..Faults::default()
            };
            let mut sc = custom(seed, 3_000_017, vec![good], &["-s1", "-x1"], faults);
            sc.args
                .push(format!("--checksum=sha-256={}", sha256_hex(&sc.data)));
            let what = format!("{framing:?}, seed {seed}");
            let world = run_to_completion(&sc, &what);
            let reads = world.borrow().file_reads;
            assert_eq!(reads, 0, "{what}: {reads} blocks read back for the digest");
        }
    }
}

/// Scenario `sc` with piece digests of `length` bytes (and, with `corrupt`, what its `Corrupt`
/// mirrors serve: the file with the byte at each offset changed), run once over every mirror.
fn run_with_pieces(
    mut sc: Scenario,
    length: u64,
    corrupt: &[usize],
) -> (
    Scenario,
    tempfile::TempDir,
    Rc<RefCell<World>>,
    Result<Ended, String>,
) {
    let digests = sc
        .data
        .chunks(length as usize)
        .map(|c| {
            let mut h = crate::store::checksum::Hasher::new(crate::store::checksum::Kind::Sha256);
            h.update(c);
            h.finish()
        })
        .collect();
    let pieces = Arc::new(PieceHashes {
        length,
        kind: crate::store::checksum::Kind::Sha256,
        digests,
    });
    let mut bad = sc.data.to_vec();
    for &at in corrupt {
        bad[at] ^= 0x5a;
    }
    sc.corrupt = Some(Rc::new(bad));
    sc.pieces = Some(pieces.clone());
    let dir = tempfile::tempdir().expect("a temporary directory");
    let world = Rc::new(RefCell::new(World {
        servers: sc.servers(),
        faults: sc.faults.clone(),
        ..World::default()
    }));
    let uris: Vec<String> = (0..sc.mirrors.len()).map(|i| sc.url(i)).collect();
    let ended = run_with(
        sc.budget,
        dir.path(),
        &sc.args,
        &uris,
        None,
        world.clone(),
        sc.seed,
        None,
        Some(pieces),
    );
    (sc, dir, world, ended)
}

/// Metalink's chunk checksums, in the engine: a mirror that serves changed bytes under the same
/// length and validator is caught piece by piece, given up on, and its pieces fetched again from
/// the other mirror; the file ends byte-exact. Pieces on the 16 KiB grid and off it (fetched
/// again in whole 16 KiB blocks, the bytes around read back), changed bytes at the start, the
/// end and a piece boundary.
#[test]
fn a_mirror_serving_changed_bytes_is_given_up_and_its_pieces_fetched_again() {
    // (Over 2 MiB: `-k1M` splits it.)
    let len = 3_000_003;
    for length in [65_536, 262_144, 20_000] {
        for (seed, first) in [(1, true), (2, false), (3, true)] {
            let good = Mirror::Good {
                ranges: true,
                framing: Framing::Length,
            };
            let mirrors = match first {
                true => vec![Mirror::Corrupt, good],
                false => vec![good, Mirror::Corrupt],
            };
            // (A link slow enough for the second connection to start before the first is done.)
            let faults = Faults {
                max_chunk: 50_000,
                reorder: true,
                ns_per_byte: 2_000,
                ..Faults::default()
            };
            let sc = custom(seed, len, mirrors, &["-s4", "-x1", "-k1M"], faults);
            let at = [0, 19_999, 20_000, 2_500_000, len - 1];
            let (sc, dir, world, ended) = run_with_pieces(sc, length, &at);
            let what = format!("pieces of {length}, seed {seed}");
            let outcome = only_outcome(ended, &what).unwrap_or_else(|e| panic!("{e}"));
            assert_eq!((outcome.code.0, outcome.finished), (0, true), "{what}");
            check_complete(dir.path(), &sc.data, &what).unwrap_or_else(|e| panic!("{e}"));
            let w = world.borrow();
            let bad = addr(if first { 0 } else { 1 });
            assert!(
                w.requests.iter().any(|(a, _, _)| *a == bad),
                "{what}: the corrupt mirror was never asked: {:?}",
                w.requests
            );
        }
    }
}

/// A piece that no mirror sends right ends the download with aria2's checksum error (exit 32),
/// and its control file claims only pieces that were verified.
#[test]
fn a_piece_no_mirror_sends_right_ends_the_download_with_exit_32() {
    for length in [65_536, 20_000] {
        let faults = Faults::default();
        let sc = custom(4, 700_001, vec![Mirror::Corrupt], &["-s2", "-x2"], faults);
        let (sc, dir, _world, ended) = run_with_pieces(sc, length, &[300_000]);
        let what = format!("pieces of {length}");
        let outcome = only_outcome(ended, &what).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(outcome.code.0, 32, "{what}");
        check_claims(dir.path(), &sc.data).unwrap_or_else(|e| panic!("{what}: {e}"));
        let cf = control::load(&control::control_path(&dir.path().join(NAME)))
            .ok()
            .flatten()
            .expect("a control file");
        let claimed: u64 = cf.done_ranges().iter().map(|r| r.end - r.start).sum();
        assert!(claimed > 0, "{what}: the good pieces are kept");
        assert!(
            !cf.done_ranges()
                .iter()
                .any(|r| r.start <= 300_000 && 300_000 < r.end),
            "{what}: the bad piece is claimed"
        );
    }
}

/// Pieces on the 16 KiB grid, split between connections on their boundaries, are each fetched
/// in order by one connection and hashed as their blocks are written: nothing is read back.
#[test]
fn pieces_split_on_their_boundaries_are_hashed_as_written() {
    for seed in 1..4 {
        let good = Mirror::Good {
            ranges: true,
            framing: Framing::Length,
        };
        let faults = Faults {
            max_chunk: 100_000,
            short_write: 300,
            reorder: true,
            ..Faults::default()
        };
        let sc = custom(seed, 3_000_017, vec![good], &["-s4", "-x4", "-k1M"], faults);
        let (sc, dir, world, ended) = run_with_pieces(sc, 262_144, &[]);
        let what = format!("seed {seed}");
        let outcome = only_outcome(ended, &what).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!((outcome.code.0, outcome.finished), (0, true), "{what}");
        check_complete(dir.path(), &sc.data, &what).unwrap_or_else(|e| panic!("{e}"));
        let reads = world.borrow().file_reads;
        assert_eq!(reads, 0, "{what}: {reads} blocks read back for the pieces");
    }
}

/// A receive on a fast connection waits for a low-water mark of bytes (`SO_RCVLOWAT`), which must
/// never ask for bytes that are not coming: past the end of a body, or of a range, or on a
/// kept-alive connection waiting for its next head. Over a 10 MB/s link with every framing, split
/// and not: the run ends complete, marks were set where the length was known, and no receive
/// waited for a quiet connection's mark to be taken back on a tick (3 MB take 0.3 s; a tick is 1 s).
#[test]
fn low_water_marks_never_wait_for_bytes_that_are_not_coming() {
    for framing in [Framing::Length, Framing::Chunked, Framing::UntilClose] {
        for (seed, split) in [(1, "-s1"), (2, "-s4"), (3, "-s3")] {
            let good = Mirror::Good {
                ranges: true,
                framing,
            };
            let faults = Faults {
                max_chunk: 100_000,
                ns_per_byte: 100,
                ..Faults::default()
            };
            let sc = custom(seed, 3_000_017, vec![good], &[split, "-x4", "-k1M"], faults);
            let what = format!("{framing:?}, {split}");
            let world = run_to_completion(&sc, &what);
            let w = world.borrow();
            if framing == Framing::Length {
                assert!(w.low_water_marks > 0, "{what}: no mark was set");
            }
            assert!(
                w.elapsed < Duration::from_millis(800),
                "{what}: {:?} for 3 MB at 10 MB/s: a receive waited for bytes that never came",
                w.elapsed
            );
        }
    }
}

/// Three 1 MiB write blocks serve eight connections, so most wait for one at any time while
/// their bytes wait in the socket. A connection that kept its block while it received slowly or
/// not at all (a stalled response) held everyone behind it until its receive timed out, and
/// blocks that came free went to the lowest-numbered connections first, so others could wait
/// until those were done. With responses that stall and a long I/O timeout: no connection with
/// bytes waiting goes unread for more than a few ticks (a tick is 1 s), and the file is
/// complete.
#[test]
fn no_connection_with_bytes_waiting_goes_unread_for_long() {
    let faults = Faults {
        stall: 400,
        max_chunk: 100_000,
        ..Faults::default()
    };
    eight_sharing_three_blocks_read_promptly(1..=6, 16_000_017, faults);
}

/// Seeds `seeds` of a `len`-byte download at -x8 (three 1 MiB write blocks) over a 5 MB/s link
/// with `faults` and a 20 s I/O timeout: each run ends complete, and no connection had bytes
/// waiting with no receive for them for more than 4 s.
fn eight_sharing_three_blocks_read_promptly(
    seeds: std::ops::RangeInclusive<u64>,
    len: usize,
    faults: Faults,
) {
    for seed in seeds {
        let good = Mirror::Good {
            ranges: true,
            framing: Framing::Length,
        };
        let faults = Faults {
            ns_per_byte: 200,
            ..faults.clone()
        };
        let args = ["-s8", "-x8", "-k1M", "--timeout=20", "--max-tries=0"];
        let mut sc = custom(seed, len, vec![good], &args, faults);
        sc.budget = 8 << 20;
        let what = format!("seed {seed}");
        let world = run_to_completion(&sc, &what);
        let w = world.borrow();
        assert!(
            w.longest_unread <= Duration::from_secs(4),
            "{what}: a connection's bytes went unread for {:?}",
            w.longest_unread
        );
    }
}

/// A connection whose response stalled just as it took a fresh write block handed that empty
/// block over and took it straight back (the pool's free list is last in, first out, and the
/// connection did not join the line), so it kept a block until its I/O timeout while the others
/// waited. Every response here stalls after exactly 1 MiB of its body, where a block ends (the
/// ranges are 2 MiB, aligned): the connections holding empty blocks give them up, and no
/// connection with bytes waiting goes unread for long.
#[test]
fn a_connection_stalled_with_an_empty_block_gives_it_up() {
    let faults = Faults {
        stall_after: Some(1 << 20),
        ..Faults::default()
    };
    eight_sharing_three_blocks_read_promptly(1..=3, 16 << 20, faults);
}

/// A response that stops for good, its connection left open, still ends in aria2's timeout within
/// about `--timeout`. A connection that holds a write block for half a second hands it over: its
/// receive is cancelled and a new one, with a new timeout, goes out when it has a block again, so
/// no single receive lives long enough to time out. The waits of the receives that brought nothing
/// add up, and reach the timeout instead. One connection here, so nobody waits for its block; the
/// stall comes inside a block, at a block's end, and before the body's first byte.
#[test]
fn a_stalled_response_times_out_though_its_block_is_handed_over() {
    let good = Mirror::Good {
        ranges: true,
        framing: Framing::Length,
    };
    for (seed, stall_at) in [(1, 100_000), (2, 1 << 20), (3, 0)] {
        let faults = Faults {
            stall_after: Some(stall_at),
            ..Faults::default()
        };
        let args = ["-x1", "-s1", "-k1M", "--timeout=6", "--max-tries=1"];
        let sc = custom(seed, 4 << 20, vec![good], &args, faults);
        let what = format!("a stall after {stall_at} body bytes");
        let (_dir, world, ended) = run_once(&sc);
        let outcome = only_outcome(ended, &what).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(outcome.code, ExitCode::TIMEOUT, "{what}: {outcome:?}");
        let elapsed = world.borrow().elapsed;
        assert!(
            elapsed <= Duration::from_secs(6 + 3),
            "{what}: timed out only after {elapsed:?}"
        );
    }
}

/// Review finding 6: a descriptor read that failed (the signal descriptor here) was issued again at
/// once, failed again, for ever: the loop spun and the download never ended. A broken signal
/// descriptor must cost Ctrl-C, not the download.
#[test]
fn a_failing_signal_descriptor_is_not_read_again_for_ever() {
    let good = Mirror::Good {
        ranges: true,
        framing: Framing::Length,
    };
    let faults = Faults {
        max_chunk: 100_000,
        signal_fd_fails: true,
        ..Faults::default()
    };
    let sc = custom(7, 2_000_000, vec![good], &["-s2"], faults);
    check_scenario(&sc, false).unwrap_or_else(|e| panic!("{e}"));
}

/// Runs block `block` of the seeds: `RINGDL_SIM_SEEDS` of them (default [`DEFAULT_SEEDS`]) from
/// `RINGDL_SIM_FIRST` (default 1) + `block` × that count; or only `RINGDL_SIM_SEED`.
fn run_seeds(block: u64) {
    let with_regressions = block == 0;
    if let Some(seed) = env_u64("RINGDL_SIM_SEED") {
        if with_regressions {
            if let Err(e) = run_seed(seed, true) {
                panic!("seed {seed}: {e}");
            }
        }
        return;
    }
    let count = env_u64("RINGDL_SIM_SEEDS").unwrap_or(DEFAULT_SEEDS);
    let first = env_u64("RINGDL_SIM_FIRST")
        .unwrap_or(1)
        .saturating_add(block.saturating_mul(count));
    let regressions = if with_regressions { REGRESSIONS } else { &[] };
    let pieces = if with_regressions {
        PIECE_REGRESSIONS
    } else {
        &[]
    };
    let mut failures = Vec::new();
    let started = std::time::Instant::now();
    for seed in regressions
        .iter()
        .chain(pieces)
        .copied()
        .chain(first..first.saturating_add(count))
    {
        if let Err(e) = run_seed(seed, false) {
            let replay = Scenario::draw(seed).replay();
            eprintln!("seed {seed} FAILED: {e}\n  replay: {replay}");
            failures.push(seed);
            if failures.len() >= 10 {
                break;
            }
        }
    }
    eprintln!(
        "simulation: seeds {first}..{} in {:.1} s, {} failed; faults fired: {}",
        first.saturating_add(count),
        started.elapsed().as_secs_f64(),
        failures.len(),
        fired_report()
    );
    assert!(
        failures.is_empty(),
        "{} seed(s) failed: {failures:?} (each printed its replay command above)",
        failures.len()
    );
}

#[test]
fn simulated_runs_end_complete_or_resumable() {
    run_seeds(0);
}

/// The next block of seeds, on the other core.
#[test]
fn simulated_runs_end_complete_or_resumable_more_seeds() {
    run_seeds(1);
}
