//! What a seed draws: the file, its mirrors, the options, the faults, what is on disk before the
//! run, piece digests and mirrors serving changed bytes; and the servers the scenario stands for.
use super::*;

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
pub(super) const REGRESSIONS: &[u64] = &[
    3692, 4737, 11777, 297655, 1012619, 1005825, 1734084, 205, 1165, 207040, 125117, 493071, 735,
    992702, 82567, 156812, 153497, 133303, 79186, 139619, 139048, 284917, 889197, 937905,
];

/// What a seed drew.
#[derive(Debug)]
pub(super) struct Scenario {
    pub(super) seed: u64,
    pub(super) data: Rc<Vec<u8>>,
    /// Served in the second run when the file changed in between.
    pub(super) changed: Option<Rc<Vec<u8>>>,
    /// The servers speak TLS: (1.3 rather than 1.2, ChaCha20 rather than AES-GCM).
    pub(super) tls: Option<(bool, bool)>,
    pub(super) mirrors: Vec<Mirror>,
    pub(super) args: Vec<String>,
    pub(super) faults: Faults,
    pub(super) budget: usize,
    /// What is on disk before the first run (the run then has `-c`).
    pub(super) prior: Prior,
    /// The download's piece digests (both runs have them), and what a `Corrupt` mirror serves.
    pub(super) pieces: Option<Arc<PieceHashes>>,
    /// The download is over several files (its data laid across them).
    pub(super) layout: Option<Arc<Files>>,
    pub(super) corrupt: Option<Rc<Vec<u8>>>,
    /// The mirrors speak the toy protocol (`toy.rs`), not HTTP.
    pub(super) toy: bool,
    /// ... and send the file's bytes on a data connection (`World::toy_data`), which they open
    /// to the client (`World::toy_active`).
    pub(super) toy_data: bool,
    pub(super) toy_active: bool,
    /// ... and keep the conversation's connection for another exchange (`World::toy_keep`).
    pub(super) toy_keep: bool,
    /// ... and ask the client for bytes it has (`World::toy_upload`).
    pub(super) toy_upload: bool,
}

/// A state a user or an earlier run left on disk before the first run: every byte of it is the
/// source's, so the run must never lose one (cut the file below its length, or write bytes that
/// are not the source's into it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Prior {
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
pub(super) fn prior_state(seed: u64, len: usize, changed: bool) -> Prior {
    let mut rng = Rng::new(seed ^ 0x1a7e_d4a5_0000_000b);
    // (Not where the file changes between the runs: a file made outside ringdl carries no
    // validator, so nothing can tell its bytes from the new version's, in ringdl or in aria2c.)
    if RECORDED_WITHOUT_PRIORS.contains(&seed) || len == 0 || changed || rng.below(5) != 0 {
        return Prior::Nothing;
    }
    draw_prior(&mut rng, len)
}

/// One of the states on disk, for a source of `len` (> 0) bytes.
pub(super) fn draw_prior(rng: &mut Rng, len: usize) -> Prior {
    let n = rng.below(len as u64) as usize;
    match rng.below(4) {
        0 => Prior::Prefix(n),
        1 => Prior::Complete,
        2 => Prior::Claimed(n / 16384 * 16384),
        _ => Prior::CompleteClaimed,
    }
}

/// The prior state of job `job` of list seed `seed` (a stream of its own: one job in five has one).
pub(super) fn list_prior(seed: u64, job: u64, len: usize) -> Prior {
    let mut rng = Rng::new((seed ^ 0x1a7e_d4a5_0000_000c).wrapping_add(job << 40));
    if len == 0 || rng.below(5) != 0 {
        return Prior::Nothing;
    }
    draw_prior(&mut rng, len)
}

impl Prior {
    /// Makes the state in `dir`; the bytes the file then has.
    pub(super) fn make(self, dir: &Path, data: &[u8]) -> Result<Option<Vec<u8>>, String> {
        self.make_at(&dir.join(NAME), data)
    }

    /// Makes the state at `path`; the bytes the file then has.
    pub(super) fn make_at(self, path: &Path, data: &[u8]) -> Result<Option<Vec<u8>>, String> {
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
pub(super) enum Mirror {
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

pub(super) fn addr(i: usize) -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], 10_000 + i as u16))
}

pub(super) fn url(i: usize) -> String {
    format!("http://{}/d/{NAME}", addr(i))
}

/// The simulated servers' certificate (for 127.0.0.1) and the CA that signed it, made once a
/// thread; the CA's file stays for the thread's runs to name in `--ca-certificate`.
pub(super) struct Pki {
    pub(super) _dir: tempfile::TempDir,
    pub(super) ca_file: std::path::PathBuf,
    pub(super) chain: Vec<Vec<u8>>,
    pub(super) key: Vec<u8>,
}

thread_local! {
    pub(super) static PKI: Pki = make_pki();
}

pub(super) fn make_pki() -> Pki {
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
pub(super) fn server_tls(tls: Option<(bool, bool)>) -> Option<crate::tls::server::ServerTlsConfig> {
    let (tls13, chacha) = tls?;
    PKI.with(|p| {
        Some(crate::tls::server::ServerTlsConfig::for_simulation(
            &p.chain, &p.key, tls13, chacha,
        ))
    })
}

/// HTTPS in one seed of four, from a stream of its own: TLS 1.3 or 1.2, AES-GCM or ChaCha20,
/// through the engine's own record layer; the CA goes into `args`.
pub(super) fn https(seed: u64, args: &mut Vec<String>) -> Option<(bool, bool)> {
    let mut rng = Rng::new(seed ^ 0x1a7e_d4a5_0000_000a);
    if rng.below(4) != 0 {
        return None;
    }
    let ca = PKI.with(|p| p.ca_file.display().to_string());
    args.push(format!("--ca-certificate={ca}"));
    Some((rng.below(2) == 0, rng.below(2) == 0))
}

/// The SHA-256 digest of each `length`-byte piece of `data`.
pub(super) fn piece_hashes(data: &[u8], length: u64) -> Arc<PieceHashes> {
    use crate::store::checksum::{Hasher, Kind};
    let digest = |c: &[u8]| {
        let mut h = Hasher::new(Kind::Sha256);
        h.update(c);
        h.finish()
    };
    Arc::new(PieceHashes {
        length,
        kind: Kind::Sha256,
        digests: data.chunks(length as usize).map(digest).collect(),
    })
}

/// The toy protocol instead of HTTP for one seed in eight whose file does not change between the
/// runs (a stream of its own; none for the regression seeds): it has no redirects (a redirecting
/// mirror answers "not found") and no versions to tell a changed file by.
fn draw_toy(seed: u64, changed: bool, mirrors: &mut [Mirror]) -> bool {
    let mut rng = Rng::new(seed ^ 0x1a7e_d4a5_0000_000e);
    let recorded = REGRESSIONS.contains(&seed) || PIECE_REGRESSIONS.contains(&seed);
    if recorded || changed || rng.below(8) != 0 {
        return false;
    }
    for m in mirrors.iter_mut().filter(|m| **m == Mirror::Redirect) {
        *m = Mirror::NotFound;
    }
    true
}

/// A toy seed's servers send the bytes on a data connection (as FTP's passive mode) for half the
/// seeds (a stream of its own), but the seeds recorded before this was drawn, which replay as
/// they were.
fn draw_toy_data(seed: u64) -> bool {
    let recorded = [
        super::TOY_REGRESSIONS,
        super::LATE_REGRESSIONS,
        super::files::LAYOUT_REGRESSIONS,
    ]
    .concat();
    !recorded.contains(&seed) && Rng::new(seed ^ 0x1a7e_d4a5_0000_0010).below(2) == 0
}

/// Piece digests for one seed in five whose file does not change between the runs (a stream of
/// its own; none for the regression seeds), and in half of those a mirror serving changed bytes
/// (it takes the place of a drawn mirror, or joins them). The pieces are 1 MiB where a control
/// file is found (its piece length), else of a length drawn to split on (multiples of 16 KiB) or
/// not (read back where bytes come out of order).
pub(super) fn draw_pieces(
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
    let pieces = piece_hashes(data, length);
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

pub(super) fn content(rng: &mut Rng, len: usize) -> Vec<u8> {
    let mut v = Vec::with_capacity(len + 8);
    while v.len() < len {
        v.extend_from_slice(&rng.next_u64().to_le_bytes());
    }
    v.truncate(len);
    v
}

pub(super) fn sha256_hex(data: &[u8]) -> String {
    use sha2::Digest;
    sha2::Sha256::digest(data)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The I/O faults of a scenario, single or list: short reads, EAGAIN, resets, stalls, short
/// writes, reordering and sometimes a write error. The draws keep their order, so seeds keep
/// their scenarios.
pub(super) fn draw_faults(rng: &mut Rng) -> Faults {
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
pub(super) fn uncached_refusal(seed: u64) -> u32 {
    [0, 0, 1000, 300][Rng::new(seed ^ 0x1a7e_d4a5_0000_0003).below(4) as usize]
}

/// How often a writeback of pages written through the cache fails, from a stream of its own.
pub(super) fn writeback_failure(seed: u64) -> u32 {
    [0, 0, 0, 0, 300, 1000][Rng::new(seed ^ 0x1a7e_d4a5_0000_0004).below(6) as usize]
}

/// File jobs that fail, power losses and kills in the shutdown wait, from a stream of their own:
/// a file job fails in one seed of four (now and then, or always), with ENOSPC, EIO,
/// ENAMETOOLONG or EACCES; a third of the kills lose the power too; one seed of six without a
/// kill or a Ctrl-C is killed while the engine waits for its last file jobs.
pub(super) fn disk_and_power(seed: u64, faults: &mut Faults) {
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
pub(super) fn trickle(seed: u64, faults: &mut Faults, args: &mut Vec<String>) {
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
pub(super) fn misbehaving_servers(seed: u64, faults: &mut Faults, changed: Option<&Rc<Vec<u8>>>) {
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
pub(super) fn link_rate(seed: u64) -> u64 {
    [0, 0, 20, 100, 1000][Rng::new(seed ^ 0x1a7e_d4a5_0000_0002).below(5) as usize]
}

impl Scenario {
    pub(super) fn draw(seed: u64) -> Scenario {
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
        let toy = draw_toy(seed, changed.is_some(), &mut mirrors);
        let toy_data = toy && draw_toy_data(seed);
        // Active for half of those (a stream of its own).
        let toy_active = toy_data && Rng::new(seed ^ 0x1a7e_d4a5_0000_0011).below(2) == 0;
        // Kept connections for half of those (a stream of its own).
        let toy_keep = toy_data && Rng::new(seed ^ 0x1a7e_d4a5_0000_0013).below(2) == 0;
        // Servers asking for bytes for half the toy seeds drawn since (a stream of its own).
        let toy_upload = toy
            && !super::TOY_REGRESSIONS.contains(&seed)
            && Rng::new(seed ^ 0x1a7e_d4a5_0000_0012).below(2) == 0;
        if toy_data {
            faults.server.no_data_port = [0, 0, 20, 100][(seed >> 7) as usize % 4];
        }
        let tls = if toy { None } else { https(seed, &mut args) };
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
            layout: None,
            corrupt,
            toy,
            toy_data,
            toy_active,
            toy_keep,
            toy_upload,
        }
    }

    /// The URI of mirror `i`.
    pub(super) fn url(&self, i: usize) -> String {
        let scheme = match (self.toy, self.tls.is_some()) {
            (true, _) => "toy",
            (false, true) => "https",
            (false, false) => "http",
        };
        format!("{scheme}://{}/d/{NAME}", addr(i))
    }

    /// The first run's servers.
    pub(super) fn servers(&self) -> HashMap<SocketAddr, HashMap<String, Route>> {
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

    pub(super) fn blackholes(&self) -> Vec<SocketAddr> {
        (0..self.mirrors.len())
            .filter(|&i| self.mirrors[i] == Mirror::Silent)
            .map(addr)
            .collect()
    }

    pub(super) fn replay(&self) -> String {
        format!(
            "RINGDL_SIM_SEED={} cargo test --lib engine::simulation -- --nocapture",
            self.seed
        )
    }
}
