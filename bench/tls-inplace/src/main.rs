//! Receive-path CPU cost of rustls 0.23's unbuffered API (every decrypted record is
//! copied into a fresh `Vec` that `ReadTraffic::next_record` hands out) versus
//! rustls 0.24.0-dev.2's `read_tls` + `MessageHandler::next_payload` (plaintext is
//! borrowed from the receive buffer it was decrypted in).
//!
//! Everything happens in memory: a server and a client complete a TLS 1.3
//! handshake by passing byte buffers, the server encrypts the whole payload into
//! one ciphertext `Vec` (untimed), then the client consumes it the way a
//! downloader does (timed): socket-sized chunks are copied into a receive buffer,
//! complete records are processed, the incomplete tail is moved to the front, and
//! each plaintext record is copied into a reused "write block".

use std::error::Error;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Instant;

type BoxResult<T> = Result<T, Box<dyn Error>>;

const KIB: usize = 1024;
const MIB: usize = 1024 * KIB;
const GIB: f64 = (1u64 << 30) as f64;
/// Size of the block the downloader assembles before writing it to disk.
const WRITE_BLOCK: usize = 128 * KIB;
/// Full-size TLS 1.3 application data record: 5 header + 16384 plaintext + 1 content type + 16 tag.
const FULL_RECORD: usize = 5 + 16 * KIB + 1 + 16;
const SERVER_NAME: &str = "localhost";

#[derive(Clone, Copy, Debug)]
enum Suite {
    Aes256,
    Aes128,
}

impl Suite {
    fn name(self) -> &'static str {
        match self {
            Suite::Aes256 => "TLS13_AES_256_GCM_SHA384",
            Suite::Aes128 => "TLS13_AES_128_GCM_SHA256",
        }
    }
}

#[derive(Clone, Debug)]
struct Opts {
    mib: usize,
    rounds: usize,
    chunk: usize,
    rbuf: usize,
    suite: Suite,
    checksum_every_round: bool,
    native_sender: bool,
    only: Option<Version>,
    rbuf_offset: usize,
    block_offset: usize,
}

const USAGE: &str = "\
usage: tls-inplace [OPTIONS]

  --mib N                 application data per run, in MiB (default 1024)
  --rounds R              timed rounds; each runs both versions (default 5)
  --chunk-kib K           bytes per simulated socket read, KiB (default 64)
  --rbuf-kib K            receive buffer size, KiB (default 72)
  --aes128                use TLS13_AES_128_GCM_SHA256 instead of TLS13_AES_256_GCM_SHA384
  --checksum-every-round  also checksum the received plaintext inside the timed rounds
                          (by default only the untimed verification pass does)
  --native-sender         encrypt with each version's own server; by default one sender
                          (rustls 0.23) serves both clients, so both receive identical
                          records of 16384 plaintext bytes (0.24's own sender caps the
                          plaintext at 16367 bytes so the record fits 16384+5 bytes)
  --only 0.23|0.24        run one version only (for profiling; no ratio is printed)
  --rbuf-offset B         start the receive buffer B bytes past a page boundary (default 0)
  --block-offset B        start the write block B bytes past a page boundary (default 0);
                          ringdl's blocks are page-aligned, and memcpy speed on some CPUs
                          depends a lot on the relative alignment of source and destination";

fn parse_args() -> Result<Opts, String> {
    let mut opts = Opts {
        mib: 1024,
        rounds: 5,
        chunk: 64 * KIB,
        rbuf: 72 * KIB,
        suite: Suite::Aes256,
        checksum_every_round: false,
        native_sender: false,
        only: None,
        rbuf_offset: 0,
        block_offset: 0,
    };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut number = |name: &str| -> Result<usize, String> {
            let v = args.next().ok_or_else(|| format!("{name} needs a value"))?;
            v.parse::<usize>().map_err(|e| format!("{name} {v}: {e}"))
        };
        match arg.as_str() {
            "--mib" => opts.mib = number("--mib")?,
            "--rounds" => opts.rounds = number("--rounds")?,
            "--chunk-kib" => opts.chunk = number("--chunk-kib")? * KIB,
            "--rbuf-kib" => opts.rbuf = number("--rbuf-kib")? * KIB,
            "--aes128" => opts.suite = Suite::Aes128,
            "--checksum-every-round" => opts.checksum_every_round = true,
            "--native-sender" => opts.native_sender = true,
            "--rbuf-offset" => opts.rbuf_offset = number("--rbuf-offset")?,
            "--block-offset" => opts.block_offset = number("--block-offset")?,
            "--only" => {
                opts.only = match args.next().as_deref() {
                    Some("0.23") => Some(Version::V23),
                    Some("0.24") => Some(Version::V24),
                    other => return Err(format!("--only 0.23|0.24, not {other:?}")),
                }
            }
            "-h" | "--help" => {
                println!("{USAGE}");
                std::process::exit(0);
            }
            other => return Err(format!("unknown argument {other:?}\n{USAGE}")),
        }
    }
    if opts.mib == 0 || opts.rounds == 0 || opts.chunk == 0 {
        return Err("--mib, --rounds and --chunk-kib must be positive".into());
    }
    if opts.rbuf < FULL_RECORD {
        return Err(format!(
            "--rbuf-kib must hold one full record ({FULL_RECORD} bytes)"
        ));
    }
    Ok(opts)
}

// ---------------------------------------------------------------------------
// Plaintext, checksum and the write block.

/// Deterministic pseudo-random plaintext (xorshift64*), so compression or
/// patterns cannot play a part.
fn make_plaintext(len: usize) -> Vec<u8> {
    let mut out = vec![0u8; len];
    let mut s: u64 = 0x2545_f491_4f6c_dd1d;
    for word in out.chunks_mut(8) {
        s ^= s >> 12;
        s ^= s << 25;
        s ^= s >> 27;
        let v = s.wrapping_mul(0x2545_f491_4f6c_dd1d).to_le_bytes();
        word.copy_from_slice(&v[..word.len()]);
    }
    out
}

/// Order-dependent checksum over one block, chained through `h`.
fn hash_block(mut h: u64, block: &[u8]) -> u64 {
    const K: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut words = block.chunks_exact(8);
    for w in &mut words {
        let v = u64::from_le_bytes(w.try_into().unwrap());
        h = (h ^ v).wrapping_mul(K).rotate_left(23);
    }
    for &b in words.remainder() {
        h = (h ^ u64::from(b)).wrapping_mul(K).rotate_left(23);
    }
    h ^ block.len() as u64
}

const HASH_SEED: u64 = 0x6a09_e667_f3bc_c908;

/// Checksum of a whole stream as the receiver computes it: per write block.
fn expected_checksum(plaintext: &[u8]) -> u64 {
    plaintext.chunks(WRITE_BLOCK).fold(HASH_SEED, hash_block)
}

/// A buffer starting `offset` bytes past a page boundary, like ringdl's
/// page-aligned pool blocks (offset 0).
struct AlignedBuf {
    ptr: std::ptr::NonNull<u8>,
    layout: std::alloc::Layout,
    offset: usize,
    len: usize,
}

impl AlignedBuf {
    fn new(len: usize, offset: usize, fill: u8) -> Self {
        let layout = std::alloc::Layout::from_size_align(len + offset, 4096).unwrap();
        // SAFETY: the layout has a non-zero size (len > 0 is checked by the callers' options).
        let raw = unsafe { std::alloc::alloc(layout) };
        let ptr =
            std::ptr::NonNull::new(raw).unwrap_or_else(|| std::alloc::handle_alloc_error(layout));
        // SAFETY: the allocation is len + offset bytes long; touching every page
        // now keeps page faults out of the timed part.
        unsafe { std::ptr::write_bytes(ptr.as_ptr(), fill, len + offset) };
        Self {
            ptr,
            layout,
            offset,
            len,
        }
    }
}

impl std::ops::Deref for AlignedBuf {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        // SAFETY: in bounds of the live allocation, initialised in `new`.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr().add(self.offset), self.len) }
    }
}

impl std::ops::DerefMut for AlignedBuf {
    fn deref_mut(&mut self) -> &mut [u8] {
        // SAFETY: as above, and `&mut self` gives exclusive access.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr().add(self.offset), self.len) }
    }
}

impl Drop for AlignedBuf {
    fn drop(&mut self) {
        // SAFETY: allocated in `new` with this layout.
        unsafe { std::alloc::dealloc(self.ptr.as_ptr(), self.layout) }
    }
}

/// The downloader's reused write block: plaintext is copied in, and when the
/// block is full it would be written to disk; here it just wraps around.
struct WriteBlock {
    buf: AlignedBuf,
    pos: usize,
    total: u64,
    checksum: Option<u64>,
}

impl WriteBlock {
    fn new(offset: usize, checksum: bool) -> Self {
        Self {
            buf: AlignedBuf::new(WRITE_BLOCK, offset, 0xa5),
            pos: 0,
            total: 0,
            checksum: checksum.then_some(HASH_SEED),
        }
    }

    #[inline]
    fn put(&mut self, mut data: &[u8]) {
        self.total += data.len() as u64;
        while !data.is_empty() {
            let n = data.len().min(self.buf.len() - self.pos);
            self.buf[self.pos..self.pos + n].copy_from_slice(&data[..n]);
            self.pos += n;
            data = &data[n..];
            if self.pos == self.buf.len() {
                self.block_done();
                self.pos = 0;
            }
        }
    }

    fn block_done(&mut self) {
        if let Some(h) = self.checksum.as_mut() {
            *h = hash_block(*h, &self.buf[..self.pos]);
        }
    }

    /// Account for a final partial block (not needed when the stream is a
    /// multiple of the block size, as it is with whole MiB).
    fn finish(&mut self) {
        if self.pos != 0 {
            self.block_done();
        }
    }

    /// The block must hold the last bytes of the stream, laid out as the
    /// wrap-around left them.
    fn tail_matches(&self, plaintext: &[u8]) -> bool {
        let total = self.total as usize;
        if total != plaintext.len() {
            return false;
        }
        let pos = self.pos;
        let head_ok = self.buf[..pos] == plaintext[total - pos..];
        let rest = self.buf.len() - pos;
        let rest_ok =
            total < pos + rest || self.buf[pos..] == plaintext[total - pos - rest..total - pos];
        head_ok && rest_ok
    }
}

// ---------------------------------------------------------------------------
// Simulated socket reads into a fixed receive buffer.

/// Feeds `ciphertext` to `process` the way a socket reader does: each "read"
/// copies up to `chunk` bytes (as much as fits) to the end of `rbuf`'s filled
/// part; `process` handles the complete records and returns how many bytes
/// from the start of the buffer it consumed; the rest is moved to the front.
#[inline(always)]
fn feed(
    ciphertext: &[u8],
    chunk: usize,
    rbuf: &mut [u8],
    mut process: impl FnMut(&mut [u8]) -> BoxResult<usize>,
) -> BoxResult<()> {
    let mut filled = 0;
    let mut pos = 0;
    while pos < ciphertext.len() {
        let n = chunk.min(ciphertext.len() - pos).min(rbuf.len() - filled);
        if n == 0 {
            return Err("receive buffer full but no record was consumed".into());
        }
        rbuf[filled..filled + n].copy_from_slice(&ciphertext[pos..pos + n]);
        filled += n;
        pos += n;

        let used = process(&mut rbuf[..filled])?;
        if used > 0 {
            rbuf.copy_within(used..filled, 0);
            filled -= used;
        }
    }
    if filled != 0 {
        return Err(format!("{filled} bytes left unprocessed at end of stream").into());
    }
    Ok(())
}

// ---------------------------------------------------------------------------
// Measurement.

#[derive(Clone, Copy, Debug, Default)]
struct Times {
    cpu: f64,
    user: f64,
    sys: f64,
    wall: f64,
    minflt: i64,
}

struct Snapshot {
    wall: Instant,
    cpu: f64,
    user: f64,
    sys: f64,
    minflt: i64,
}

fn tv_secs(tv: libc::timeval) -> f64 {
    tv.tv_sec as f64 + tv.tv_usec as f64 * 1e-6
}

fn snapshot() -> Snapshot {
    // SAFETY: both calls only write into the zero-initialised structs we pass.
    let (ts, ru) = unsafe {
        let mut ts: libc::timespec = std::mem::zeroed();
        let rc = libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut ts);
        assert_eq!(rc, 0, "clock_gettime");
        let mut ru: libc::rusage = std::mem::zeroed();
        let rc = libc::getrusage(libc::RUSAGE_SELF, &mut ru);
        assert_eq!(rc, 0, "getrusage");
        (ts, ru)
    };
    Snapshot {
        wall: Instant::now(),
        cpu: ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9,
        user: tv_secs(ru.ru_utime),
        sys: tv_secs(ru.ru_stime),
        minflt: ru.ru_minflt,
    }
}

fn timed(f: impl FnOnce() -> BoxResult<()>) -> BoxResult<Times> {
    let a = snapshot();
    f()?;
    let b = snapshot();
    Ok(Times {
        cpu: b.cpu - a.cpu,
        user: b.user - a.user,
        sys: b.sys - a.sys,
        wall: (b.wall - a.wall).as_secs_f64(),
        minflt: b.minflt - a.minflt,
    })
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Version {
    V23,
    V24,
}

impl Version {
    fn label(self) -> &'static str {
        match self {
            Version::V23 => "0.23 unbuffered (copying)",
            Version::V24 => "0.24 read_tls (in place)",
        }
    }
}

struct Run {
    times: Times,
    sink: WriteBlock,
    suite: String,
}

/// Common inputs for one run.
struct Env<'a> {
    opts: &'a Opts,
    cert: &'a rustls24::pki_types::CertificateDer<'static>,
    key_pkcs8: &'a [u8],
    plaintext: &'a [u8],
}

fn run_once(v: Version, env: &Env<'_>, ct: &mut Vec<u8>, checksum: bool) -> BoxResult<Run> {
    let mut server: Box<dyn Server> = match (v, env.opts.native_sender) {
        (Version::V24, true) => Box::new(v24::server(env)?),
        _ => Box::new(v23::server(env)?),
    };
    match v {
        Version::V23 => v23::run(env, &mut *server, ct, checksum),
        Version::V24 => v24::run(env, &mut *server, ct, checksum),
    }
}

/// The sending side, used untimed: handshake, then encrypt the whole payload.
trait Server {
    /// Process the peer's bytes in `input` (consumed bytes are removed from
    /// it), appending anything to send to `out`.
    fn step(&mut self, input: &mut Vec<u8>, out: &mut Vec<u8>) -> BoxResult<()>;
    fn handshaking(&self) -> bool;
    /// Encrypt `plaintext` as application data records appended to `ct`.
    fn encrypt(&mut self, plaintext: &[u8], ct: &mut Vec<u8>) -> BoxResult<()>;
}

/// Checks that the sender produced only the expected application data records.
fn check_ciphertext(ct: &[u8], plaintext_len: usize) -> BoxResult<()> {
    let mut off = 0;
    let (mut records, mut full, mut payload) = (0usize, 0usize, 0usize);
    while off < ct.len() {
        let hdr = ct
            .get(off..off + 5)
            .ok_or("truncated record header in ciphertext")?;
        if hdr[0] != 23 {
            return Err(format!("record of content type {} in ciphertext", hdr[0]).into());
        }
        let len = usize::from(u16::from_be_bytes([hdr[3], hdr[4]]));
        records += 1;
        full += usize::from(len == FULL_RECORD - 5);
        payload += len - 17;
        off += 5 + len;
    }
    if off != ct.len() || payload != plaintext_len {
        return Err(format!(
            "ciphertext of {} bytes does not hold {plaintext_len} plaintext bytes",
            ct.len()
        )
        .into());
    }
    if full != records {
        eprintln!(
            "note: {full} of {records} records carry 16384 plaintext bytes ({:.1} bytes on average)",
            payload as f64 / records as f64
        );
    }
    Ok(())
}

// ---------------------------------------------------------------------------
// rustls 0.23: buffered server (sender), unbuffered client (timed receiver).

mod v23 {
    use super::*;
    use rustls23::client::UnbufferedClientConnection;
    use rustls23::crypto::{ring, CryptoProvider};
    use rustls23::pki_types::{PrivateKeyDer, PrivatePkcs8KeyDer, ServerName};
    use rustls23::unbuffered::{ConnectionState, EncodeError, UnbufferedStatus};
    use rustls23::{ClientConfig, RootCertStore, ServerConfig, ServerConnection};
    use std::io::Write;

    fn provider(suite: Suite) -> Arc<CryptoProvider> {
        let s = match suite {
            Suite::Aes256 => ring::cipher_suite::TLS13_AES_256_GCM_SHA384,
            Suite::Aes128 => ring::cipher_suite::TLS13_AES_128_GCM_SHA256,
        };
        Arc::new(CryptoProvider {
            cipher_suites: vec![s],
            ..ring::default_provider()
        })
    }

    pub(super) fn server(env: &Env<'_>) -> BoxResult<ServerConnection> {
        let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(env.key_pkcs8.to_vec()));
        let config = ServerConfig::builder_with_provider(provider(env.opts.suite))
            .with_protocol_versions(&[&rustls23::version::TLS13])?
            .with_no_client_auth()
            .with_single_cert(vec![env.cert.clone()], key)?;
        Ok(ServerConnection::new(Arc::new(config))?)
    }

    impl Server for ServerConnection {
        fn step(&mut self, input: &mut Vec<u8>, out: &mut Vec<u8>) -> BoxResult<()> {
            let mut rd: &[u8] = input;
            while !rd.is_empty() {
                self.read_tls(&mut rd)?;
                self.process_new_packets()?;
            }
            input.clear();
            while self.wants_write() {
                self.write_tls(out)?;
            }
            Ok(())
        }

        fn handshaking(&self) -> bool {
            self.is_handshaking()
        }

        fn encrypt(&mut self, plaintext: &[u8], ct: &mut Vec<u8>) -> BoxResult<()> {
            // The writer buffers at most 64 KiB of TLS data; drain after each write.
            for piece in plaintext.chunks(64 * KIB) {
                let mut rest = piece;
                while !rest.is_empty() {
                    let n = self.writer().write(rest)?;
                    while self.wants_write() {
                        self.write_tls(ct)?;
                    }
                    if n == 0 {
                        return Err("0.23 server accepted no plaintext".into());
                    }
                    rest = &rest[n..];
                }
            }
            Ok(())
        }
    }

    /// Encode one handshake record into `out` (growing the scratch space if needed).
    fn encode(
        e: &mut rustls23::unbuffered::EncodeTlsData<'_, rustls23::client::ClientConnectionData>,
        out: &mut Vec<u8>,
    ) -> BoxResult<()> {
        let mut scratch = vec![0u8; 16 * KIB];
        loop {
            match e.encode(&mut scratch) {
                Ok(n) => {
                    out.extend_from_slice(&scratch[..n]);
                    return Ok(());
                }
                Err(EncodeError::InsufficientSize(need)) => scratch.resize(need.required_size, 0),
                Err(other) => return Err(format!("encode: {other}").into()),
            }
        }
    }

    /// Drive the client with everything in `input`; returns whether it has
    /// reached the traffic state. Handshake output is appended to `out`.
    fn client_step(
        client: &mut UnbufferedClientConnection,
        input: &mut Vec<u8>,
        out: &mut Vec<u8>,
    ) -> BoxResult<bool> {
        loop {
            let UnbufferedStatus { discard, state } = client.process_tls_records(input);
            let finished = match state? {
                ConnectionState::EncodeTlsData(mut e) => {
                    encode(&mut e, out)?;
                    None
                }
                // `out` is handed to the server by the caller.
                ConnectionState::TransmitTlsData(t) => {
                    t.done();
                    None
                }
                ConnectionState::BlockedHandshake => Some(false),
                ConnectionState::WriteTraffic(_) => Some(true),
                other => return Err(format!("unexpected client state {other:?}").into()),
            };
            input.drain(..discard);
            if let Some(done) = finished {
                return Ok(done);
            }
        }
    }

    pub(super) fn run(
        env: &Env<'_>,
        server: &mut dyn Server,
        ct: &mut Vec<u8>,
        checksum: bool,
    ) -> BoxResult<Run> {
        let mut roots = RootCertStore::empty();
        roots.add(env.cert.clone())?;
        let client_config = ClientConfig::builder_with_provider(provider(env.opts.suite))
            .with_protocol_versions(&[&rustls23::version::TLS13])?
            .with_root_certificates(roots)
            .with_no_client_auth();
        let mut client = UnbufferedClientConnection::new(
            Arc::new(client_config),
            ServerName::try_from(SERVER_NAME)?,
        )?;

        // Handshake, including the server's session tickets.
        let (mut c2s, mut s2c, mut client_in) = (Vec::new(), Vec::new(), Vec::new());
        let mut done = false;
        for _ in 0..32 {
            let client_done = client_step(&mut client, &mut client_in, &mut c2s)?;
            server.step(&mut c2s, &mut s2c)?;
            let server_quiet = s2c.is_empty();
            client_in.append(&mut s2c);
            if client_done
                && server_quiet
                && c2s.is_empty()
                && client_in.is_empty()
                && !server.handshaking()
            {
                done = true;
                break;
            }
        }
        if !done {
            return Err("0.23 client: handshake did not complete".into());
        }
        let suite = format!("{:?}", client.negotiated_cipher_suite().map(|s| s.suite()));

        // Sender (untimed).
        ct.clear();
        server.encrypt(env.plaintext, ct)?;
        check_ciphertext(ct, env.plaintext.len())?;

        // Receiver (timed). This is what a user of the unbuffered API must do:
        // call `process_tls_records` until it stops yielding records, draining
        // every `ReadTraffic` state, and apply each `discard`.
        let mut rbuf = AlignedBuf::new(env.opts.rbuf, env.opts.rbuf_offset, 0x5a);
        let mut sink = WriteBlock::new(env.opts.block_offset, checksum);
        let mut out = Vec::new();
        let times = timed(|| {
            feed(ct, env.opts.chunk, &mut rbuf, |buf| {
                let mut consumed = 0;
                loop {
                    let UnbufferedStatus { mut discard, state } =
                        client.process_tls_records(&mut buf[consumed..]);
                    let need_input = match state? {
                        ConnectionState::ReadTraffic(mut rt) => {
                            while let Some(rec) = rt.next_record() {
                                let rec = rec?;
                                discard += rec.discard;
                                sink.put(rec.payload);
                            }
                            false
                        }
                        ConnectionState::EncodeTlsData(mut e) => {
                            encode(&mut e, &mut out)?;
                            false
                        }
                        ConnectionState::TransmitTlsData(t) => {
                            t.done();
                            false
                        }
                        // No complete record left: read more from the socket.
                        ConnectionState::WriteTraffic(_)
                        | ConnectionState::BlockedHandshake
                        | ConnectionState::PeerClosed
                        | ConnectionState::Closed => true,
                        other => return Err(format!("unexpected client state {other:?}").into()),
                    };
                    consumed += discard;
                    if need_input {
                        return Ok(consumed);
                    }
                }
            })
        })?;
        sink.finish();
        if !out.is_empty() {
            return Err(format!("0.23 client produced {} unexpected bytes", out.len()).into());
        }
        Ok(Run { times, sink, suite })
    }
}

// ---------------------------------------------------------------------------
// rustls 0.24.0-dev.2: `Connection<ClientSide, Tcp>` + `read_tls`/`next_payload`.

mod v24 {
    use super::*;
    use rustls24::crypto::cipher::OutboundPlain;
    use rustls24::crypto::{CryptoProvider, Identity};
    use rustls24::pki_types::{PrivateKeyDer, PrivatePkcs8KeyDer, ServerName};
    use rustls24::{
        ClientConfig, ClientSide, Connection, RootCertStore, ServerConfig, ServerSide, SideData,
        SliceInput, Tcp,
    };
    use std::borrow::Cow;

    fn provider(suite: Suite) -> Arc<CryptoProvider> {
        let s = match suite {
            Suite::Aes256 => rustls_ring::cipher_suite::TLS13_AES_256_GCM_SHA384,
            Suite::Aes128 => rustls_ring::cipher_suite::TLS13_AES_128_GCM_SHA256,
        };
        Arc::new(CryptoProvider {
            tls12_cipher_suites: Cow::Borrowed(&[]),
            tls13_cipher_suites: Cow::Owned(vec![s]),
            ..rustls_ring::DEFAULT_PROVIDER
        })
    }

    /// Process everything in `input` (handshake phase); output goes to `out`.
    fn pump<S: SideData>(
        conn: &mut Connection<S, Tcp>,
        input: &mut Vec<u8>,
        out: &mut Vec<u8>,
    ) -> BoxResult<()> {
        let mut slice = SliceInput::new(input.as_mut_slice());
        {
            let mut handler = conn.read_tls(&mut slice, out);
            while let Some(payload) = handler.next_payload() {
                if !payload?.bytes().is_empty() {
                    return Err("unexpected application data during handshake".into());
                }
            }
        }
        let used = slice.into_used();
        input.drain(..used);
        Ok(())
    }

    pub(super) fn server(env: &Env<'_>) -> BoxResult<Connection<ServerSide, Tcp>> {
        let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(env.key_pkcs8.to_vec()));
        let identity = Identity::from_cert_chain(vec![env.cert.clone()])
            .map_err(|e| format!("identity: {e:?}"))?;
        let config = ServerConfig::builder(provider(env.opts.suite))
            .with_no_client_auth()
            .with_single_cert(Arc::new(identity), key)?;
        Ok(Connection::<ServerSide, Tcp>::new(Arc::new(config))?)
    }

    impl Server for Connection<ServerSide, Tcp> {
        fn step(&mut self, input: &mut Vec<u8>, out: &mut Vec<u8>) -> BoxResult<()> {
            pump(self, input, out)
        }

        fn handshaking(&self) -> bool {
            self.is_handshaking()
        }

        fn encrypt(&mut self, plaintext: &[u8], ct: &mut Vec<u8>) -> BoxResult<()> {
            for piece in plaintext.chunks(MIB) {
                self.write(OutboundPlain::new(&[piece]), ct)?;
            }
            Ok(())
        }
    }

    pub(super) fn run(
        env: &Env<'_>,
        server: &mut dyn Server,
        ct: &mut Vec<u8>,
        checksum: bool,
    ) -> BoxResult<Run> {
        let mut roots = RootCertStore::empty();
        roots.add(env.cert.clone())?;
        let client_config = Arc::new(
            ClientConfig::builder(provider(env.opts.suite))
                .with_root_certificates(roots)
                .with_no_client_auth()?,
        );
        let mut c2s = Vec::new();
        let mut client: Connection<ClientSide, Tcp> = client_config
            .connect(ServerName::try_from(SERVER_NAME)?)
            .build(&mut c2s)?;

        // Handshake, including the server's session tickets.
        let (mut s2c, mut client_in) = (Vec::new(), Vec::new());
        let mut done = false;
        for _ in 0..32 {
            server.step(&mut c2s, &mut s2c)?;
            let server_quiet = s2c.is_empty();
            client_in.append(&mut s2c);
            pump(&mut client, &mut client_in, &mut c2s)?;
            if server_quiet
                && c2s.is_empty()
                && client_in.is_empty()
                && !client.is_handshaking()
                && !server.handshaking()
            {
                done = true;
                break;
            }
        }
        if !done {
            return Err("0.24 client: handshake did not complete".into());
        }
        let suite = format!("{:?}", client.negotiated_cipher_suite().map(|s| s.suite()));

        // Sender (untimed).
        ct.clear();
        server.encrypt(env.plaintext, ct)?;
        check_ciphertext(ct, env.plaintext.len())?;

        // Receiver (timed): one `read_tls` per socket read; each payload is
        // borrowed from `buf`, where it was decrypted in place.
        let mut rbuf = AlignedBuf::new(env.opts.rbuf, env.opts.rbuf_offset, 0x5a);
        let mut sink = WriteBlock::new(env.opts.block_offset, checksum);
        let mut out = Vec::new();
        let times = timed(|| {
            feed(ct, env.opts.chunk, &mut rbuf, |buf| {
                let mut input = SliceInput::new(buf);
                {
                    let mut handler = client.read_tls(&mut input, &mut out);
                    while let Some(payload) = handler.next_payload() {
                        sink.put(payload?.bytes());
                    }
                }
                Ok(input.into_used())
            })
        })?;
        sink.finish();
        if !out.is_empty() {
            return Err(format!("0.24 client produced {} unexpected bytes", out.len()).into());
        }
        Ok(Run { times, sink, suite })
    }
}

// ---------------------------------------------------------------------------

fn median(v: &[f64]) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    let n = s.len();
    if n % 2 == 1 {
        s[n / 2]
    } else {
        (s[n / 2 - 1] + s[n / 2]) / 2.0
    }
}

fn verify(v: Version, run: &Run, plaintext: &[u8], expected: u64) -> Result<(), String> {
    if run.sink.total != plaintext.len() as u64 {
        return Err(format!(
            "{}: received {} plaintext bytes, expected {}",
            v.label(),
            run.sink.total,
            plaintext.len()
        ));
    }
    if !run.sink.tail_matches(plaintext) {
        return Err(format!(
            "{}: final write block does not match the end of the stream",
            v.label()
        ));
    }
    if let Some(h) = run.sink.checksum {
        if h != expected {
            return Err(format!(
                "{}: checksum {h:016x} != sender's {expected:016x}",
                v.label()
            ));
        }
    }
    Ok(())
}

fn real_main() -> BoxResult<()> {
    let opts = parse_args()?;
    let len = opts.mib * MIB;
    let gib = len as f64 / GIB;

    let certified = rcgen::generate_simple_self_signed(vec![SERVER_NAME.to_string()])?;
    let cert = certified.cert.der().clone();
    let key_pkcs8 = certified.key_pair.serialize_der();

    let plaintext = make_plaintext(len);
    let expected = expected_checksum(&plaintext);
    let env = Env {
        opts: &opts,
        cert: &cert,
        key_pkcs8: &key_pkcs8,
        plaintext: &plaintext,
    };
    // One ciphertext buffer, reused (and so already faulted in) for every run.
    let mut ct = Vec::with_capacity(len.div_ceil(16 * KIB) * FULL_RECORD);

    println!(
        "tls-inplace: {} MiB per run, suite {}, socket reads of {} KiB into a {} KiB receive buffer, \
         {} KiB write block (page offsets {}/{}), {} rounds, sender {}; \
         CPU = CLOCK_PROCESS_CPUTIME_ID over the receive loop only",
        opts.mib,
        opts.suite.name(),
        opts.chunk / KIB,
        opts.rbuf / KIB,
        WRITE_BLOCK / KIB,
        opts.rbuf_offset,
        opts.block_offset,
        opts.rounds,
        if opts.native_sender {
            "native (each version's own server)"
        } else {
            "rustls 0.23 server for both clients"
        }
    );

    // Untimed-for-the-result verification pass (also a warm-up): full checksum.
    let wanted = |v: Version| opts.only.is_none_or(|o| o == v);
    for v in [Version::V23, Version::V24] {
        if !wanted(v) {
            continue;
        }
        let run = run_once(v, &env, &mut ct, true)?;
        verify(v, &run, &plaintext, expected)?;
        println!(
            "verify  {:<27} negotiated {}: {} bytes, checksum {:016x} ok ({:.3} s CPU incl. checksum)",
            v.label(),
            run.suite,
            run.sink.total,
            expected,
            run.times.cpu
        );
    }

    let mut per = [Vec::new(), Vec::new()]; // s/GiB for [0.23, 0.24]
    let mut ratios = Vec::new();
    for round in 0..opts.rounds {
        let order = if round % 2 == 0 {
            [Version::V23, Version::V24]
        } else {
            [Version::V24, Version::V23]
        };
        let mut got = [Times::default(); 2];
        for v in order {
            if !wanted(v) {
                continue;
            }
            let run = run_once(v, &env, &mut ct, opts.checksum_every_round)?;
            verify(v, &run, &plaintext, expected)?;
            got[(v == Version::V24) as usize] = run.times;
        }
        let (a, b) = (got[0], got[1]);
        if let Some(o) = opts.only {
            let t = got[(o == Version::V24) as usize];
            per[0].push(t.cpu / gib);
            println!(
                "round {} {}: {:.4} s/GiB CPU (user {:.3} s, sys {:.3} s, wall {:.3} s)",
                round + 1,
                o.label(),
                t.cpu / gib,
                t.user,
                t.sys,
                t.wall
            );
            continue;
        }
        let ratio = b.cpu / a.cpu;
        per[0].push(a.cpu / gib);
        per[1].push(b.cpu / gib);
        ratios.push(ratio);
        println!(
            "round {} (first {}): 0.23 {:.4} s/GiB CPU (user {:.3} s, sys {:.3} s, wall {:.3} s, minflt {}) | \
             0.24 {:.4} s/GiB CPU (user {:.3} s, sys {:.3} s, wall {:.3} s, minflt {}) | ratio 0.24/0.23 {:.4}",
            round + 1,
            if order[0] == Version::V23 { "0.23" } else { "0.24" },
            a.cpu / gib,
            a.user,
            a.sys,
            a.wall,
            a.minflt,
            b.cpu / gib,
            b.user,
            b.sys,
            b.wall,
            b.minflt,
            ratio
        );
    }

    if let Some(o) = opts.only {
        println!(
            "tls-inplace: only {}: median CPU {:.4} s/GiB over {} x {} MiB",
            o.label(),
            median(&per[0]),
            opts.rounds,
            opts.mib
        );
        return Ok(());
    }
    let (m23, m24, mr) = (median(&per[0]), median(&per[1]), median(&ratios));
    println!(
        "tls-inplace: {} x {} MiB {}, median CPU s/GiB: 0.23-unbuffered {:.4}, 0.24-inplace {:.4}; \
         median per-round ratio 0.24/0.23 = {:.4} ({:+.1}% CPU){}",
        opts.rounds,
        opts.mib,
        opts.suite.name(),
        m23,
        m24,
        mr,
        (mr - 1.0) * 100.0,
        if opts.checksum_every_round {
            " [checksum inside timed loop]"
        } else {
            ""
        }
    );
    Ok(())
}

fn main() -> ExitCode {
    match real_main() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("tls-inplace: FAILED: {e}");
            ExitCode::FAILURE
        }
    }
}
