//! The state the driver keeps per connection and per download, and the placement of response bytes:
//! head bytes are collected and parsed, body bytes are unframed and copied into the connection's
//! current write block at their file offset. Nothing here submits I/O; full blocks are queued for the
//! driver to write.
use super::reactor::{Block, Class, Fd, OpId, Pool};
use crate::cli::DownloadOptions;
use crate::http::{self, ChunkEvent, ChunkedDecoder, Framing, HttpError, ResponseHead};
use crate::plan::{Owner, Plan};
use crate::store::{self, WriteMode};
use crate::tls::{PlainSink, TlsSession};
use crate::ui::exit::ExitCode;
use std::fs::File;
use std::path::PathBuf;
use std::rc::Rc;
use std::time::{Duration, Instant};
use url::Url;

/// One download as the command line (or `-Z`) gives it: mirrors of one file.
#[derive(Debug, Clone)]
pub struct Job {
    pub uris: Vec<String>,
    pub opts: DownloadOptions,
    /// An input-list entry's own options (what a saved session writes for it).
    pub own: Vec<(&'static crate::cli::defs::OptDef, String)>,
    /// Started before by this process (a daemon's paused or restarted download): the file
    /// `opts.out` names is its own partial file, not one a user left there.
    pub restarted: bool,
}

/// What a saved session writes of a download: its URIs as given, and its entry's own options.
pub type SessionEntry = (
    Vec<String>,
    Vec<(&'static crate::cli::defs::OptDef, String)>,
);

/// How a download ended.
#[derive(Debug, Clone)]
pub struct Outcome {
    pub gid: u64,
    pub code: ExitCode,
    /// None while unfinished (interrupted).
    pub finished: bool,
    /// Removed by `aria2.remove` (daemon mode): aria2's `RM`, neither a failure nor unfinished.
    pub removed: bool,
    pub path: Option<PathBuf>,
    pub first_uri: String,
    pub bytes: u64,
    /// File length, when it was known.
    pub total: Option<u64>,
    pub seconds: f64,
}

/// Why a connection or download stopped, with aria2's exit code.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    pub code: ExitCode,
    pub message: String,
    /// Worth another connection (network trouble) rather than fatal for the download.
    pub retry: bool,
    /// Seconds to wait before that retry, when the server said (Retry-After).
    pub wait: Option<u64>,
    /// The server could not resume and the download starts over on another mirror: said after
    /// the line that drops this one.
    pub from_scratch: bool,
}

impl Failure {
    pub fn fatal(code: ExitCode, message: impl Into<String>) -> Failure {
        Failure {
            code,
            message: message.into(),
            retry: false,
            wait: None,
            from_scratch: false,
        }
    }
    pub fn retry(code: ExitCode, message: impl Into<String>) -> Failure {
        Failure {
            code,
            message: message.into(),
            retry: true,
            wait: None,
            from_scratch: false,
        }
    }

    /// This failure's retry waits `secs` seconds.
    pub fn after(mut self, secs: u64) -> Failure {
        self.wait = Some(secs);
        self
    }
}

/// The version of a file (its `ETag`, else its `Last-Modified`) and the origin
/// (`scheme://host:port`) that gave it. `If-Range` goes only to that origin: another mirror's
/// validators are its own, and it would answer every resuming request with the whole file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Validator {
    pub origin: String,
    pub value: String,
}

impl Validator {
    /// The validator of `resp`, an answer from `url`.
    pub fn of(resp: &ResponseHead, url: &Url) -> Option<Validator> {
        let value = resp.etag.clone().or_else(|| resp.last_modified.clone())?;
        Some(Validator {
            origin: url.origin().ascii_serialization(),
            value,
        })
    }

    /// The `If-Range` value for a request to `url`: none for another origin.
    pub fn for_url(&self, url: &Url) -> Option<&str> {
        (url.origin().ascii_serialization() == self.origin).then_some(self.value.as_str())
    }

    /// As kept in the partial file's extended attribute: origin, newline, value.
    pub fn encode(&self) -> String {
        format!("{}\n{}", self.origin, self.value)
    }

    pub fn decode(kept: &str) -> Option<Validator> {
        let (origin, value) = kept.split_once('\n')?;
        Some(Validator {
            origin: origin.to_string(),
            value: value.to_string(),
        })
    }
}

/// (https, host, port): connections to the same key can be reused.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ServerKey {
    pub https: bool,
    pub host: String,
    pub port: u16,
    /// The proxy the connection goes through: a connection is reused only for requests that
    /// would take the same way.
    pub via: Option<Via>,
}

impl ServerKey {
    pub fn of(url: &Url) -> ServerKey {
        ServerKey {
            https: url.scheme() == "https",
            host: url.host_str().unwrap_or_default().to_string(),
            port: url.port_or_known_default().unwrap_or(80),
            via: None,
        }
    }

    /// The key of a request for `url` taking `routes`.
    pub fn through(url: &Url, routes: &crate::http::proxy::Routes) -> ServerKey {
        ServerKey {
            via: routes.for_url(url).map(|p| Via {
                kind: p.kind,
                host: p.host.clone(),
                port: p.port,
                tunnel: p.tunnels(url, routes.tunnel),
            }),
            ..ServerKey::of(url)
        }
    }

    /// Whether requests on this connection go through a tunnel (CONNECT or SOCKS5) opened first.
    pub fn tunnels(&self) -> bool {
        self.via.as_ref().is_some_and(|v| v.tunnel)
    }
}

/// The proxy a connection goes through, and whether through a tunnel (else an HTTP proxy reads
/// each request, its URL in absolute form).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Via {
    pub kind: crate::http::proxy::Kind,
    pub host: String,
    pub port: u16,
    pub tunnel: bool,
}

/// The write block a connection is filling: `filled` bytes destined for file offset `off`. It owns
/// its block: dropped on any path, the block goes back to the pool.
pub struct Fill {
    pub block: Block,
    pub off: u64,
    pub filled: usize,
    /// The download's attempt the bytes belong to ([`Download::attempt`]): the writer drops a
    /// block of an attempt that was forgotten, so none of its bytes lands in the next one's file.
    pub attempt: u64,
}

/// A receive in flight; for a receive straight into the connection's write block, where that
/// block's bytes belong (its `Fill` is in the operation meanwhile).
#[derive(Debug, Clone, Copy)]
pub struct RecvInFlight {
    /// (file offset, bytes already in the block, attempt) of the fill the operation holds.
    pub fill: Option<(u64, usize, u64)>,
    /// The receive itself.
    pub op: OpId,
    /// When it was asked for.
    pub since: Instant,
}

/// Where an exchange is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// Collecting the response head.
    Head,
    /// Head parsed; the driver decides what to do with it.
    Decide,
    /// Receiving the body.
    Body,
}

/// One request/response on a connection.
pub struct Exchange {
    pub dl: usize,
    /// The download's attempt this exchange works for ([`Download::attempt`]).
    pub attempt: u64,
    pub url: Url,
    pub mirror: usize,
    pub redirects: u32,
    /// What we asked for: `None` is the whole file (the first request of a download).
    pub range: Option<(u64, Option<u64>)>,
    /// The plan segment the body fills.
    pub seg: usize,
    pub phase: Phase,
    pub head: Vec<u8>,
    pub response: Option<ResponseHead>,
    /// Raw bytes that followed the head in the same read.
    pub head_rest: Vec<u8>,
    pub framing: Framing,
    /// Length framing: body bytes still to come.
    pub remaining: u64,
    pub chunked: Option<ChunkedDecoder>,
    /// Decoded body bytes that did not fit in a write block yet.
    pub spill: Vec<u8>,
    pub body_complete: bool,
    /// The server sent bytes this exchange could not use (past its range or its length): the
    /// connection cannot carry another request.
    pub unusable: bool,
    pub error: Option<Failure>,
    pub any_bytes: bool,
    /// The range was taken over by another connection: end quietly.
    pub overruled: bool,
    /// A whole-file stream at the end of its range, waiting to learn whether the connection that owns
    /// the next range gets it (then this one ends) or fails (then this one goes on into it).
    pub parked: bool,
    /// The request carried an `Authorization` header.
    pub sent_auth: bool,
    /// The request was a HEAD (`--dry-run`, `--use-head`): its answer has no body.
    pub head_request: bool,
    /// `--http-accept-gzip` and an encoded body: the inflater, and its output buffer (made once,
    /// `INFLATE_STEP` bytes) whose `inflated_waiting` part still waits for a write block (then
    /// `spill` holds encoded bytes not inflated yet).
    pub decoder: Option<crate::http::decode::Decoder>,
    pub inflated: Vec<u8>,
    pub inflated_waiting: std::ops::Range<usize>,
    /// Body bytes placed for the file, and when the request went out: the server's speed for
    /// the performance profile (`driver/select.rs`).
    pub body_bytes: u64,
    pub began: Option<std::time::Instant>,
}

/// Most inflated bytes made at a time: what an encoded body can hold in memory beyond its blocks.
const INFLATE_STEP: usize = 64 * 1024;

impl Exchange {
    /// The same request again, for a fresh connection.
    pub fn again(&self) -> Want {
        Want {
            dl: self.dl,
            url: self.url.clone(),
            mirror: self.mirror,
            redirects: self.redirects,
        }
    }

    /// Body bytes received but not yet in a write block (spilled, or waiting to be inflated).
    pub fn pending(&self) -> bool {
        !self.spill.is_empty()
            || !self.inflated_waiting.is_empty()
            || self.decoder.as_ref().is_some_and(|d| d.has_more())
    }

    /// Puts file bytes that were placed in a write block back in front of the bytes waiting for
    /// one, to be placed again first: decoded bytes wait in the spill, inflated ones in
    /// `inflated` (the spill then holds encoded bytes).
    pub fn put_back(&mut self, bytes: &[u8]) {
        if bytes.is_empty() {
            return;
        }
        if self.decoder.is_some() {
            let mut waiting = bytes.to_vec();
            waiting.extend_from_slice(&self.inflated[self.inflated_waiting.clone()]);
            self.inflated_waiting = 0..waiting.len();
            self.inflated = waiting;
        } else {
            self.spill.splice(0..0, bytes.iter().copied());
        }
    }

    pub fn new(
        (dl, attempt): (usize, u64),
        url: Url,
        mirror: usize,
        range: Option<(u64, Option<u64>)>,
        seg: usize,
    ) -> Exchange {
        Exchange {
            dl,
            attempt,
            url,
            mirror,
            redirects: 0,
            range,
            seg,
            phase: Phase::Head,
            head: Vec::new(),
            response: None,
            head_rest: Vec::new(),
            framing: Framing::UntilClose,
            remaining: 0,
            chunked: None,
            spill: Vec::new(),
            body_complete: false,
            unusable: false,
            error: None,
            any_bytes: false,
            overruled: false,
            parked: false,
            sent_auth: false,
            head_request: false,
            decoder: None,
            inflated: Vec::new(),
            inflated_waiting: 0..0,
            body_bytes: 0,
            began: None,
        }
    }

    /// Moves to the body phase with the framing of the accepted response.
    pub fn start_body(&mut self, framing: Framing) {
        self.phase = Phase::Body;
        self.framing = framing;
        match framing {
            Framing::Empty => self.body_complete = true,
            Framing::Length(n) => {
                self.remaining = n;
                self.body_complete = n == 0;
            }
            Framing::Chunked => self.chunked = Some(ChunkedDecoder::new()),
            Framing::UntilClose => {}
        }
    }

    /// Whether body bytes can be read straight into write blocks (no framing to strip).
    /// Whether the body's bytes are the file's as they come off the socket, so they can be
    /// received straight into write blocks (not chunked, not encoded).
    pub fn direct_body(&self) -> bool {
        self.phase == Phase::Body
            && self.decoder.is_none()
            && matches!(self.framing, Framing::Length(_) | Framing::UntilClose)
    }
}

/// How many bytes a receive on a connection waits for (`SO_RCVLOWAT`): what arrives in about
/// `AHEAD` at the connection's recent rate, so a fast connection is read in large steps (fewer
/// completions, fewer window updates and wake-ups per byte) and a slow one as soon as anything
/// arrives. The caller never asks for more than is sure to come, and a connection that goes quiet
/// is brought back to the kernel's default on the next tick, so no byte waits long for company.
#[derive(Debug)]
pub struct LowWater {
    /// The mark the socket has (1, the kernel's default, until set).
    pub set: usize,
    /// The mark the recent rate asks for.
    mark: usize,
    /// The start of the rate window and the bytes received in it.
    since: Option<Instant>,
    bytes: u64,
    /// The last receive that brought bytes.
    last: Option<Instant>,
}

impl Default for LowWater {
    fn default() -> Self {
        LowWater {
            set: 1,
            mark: 1,
            since: None,
            bytes: 0,
            last: None,
        }
    }
}

impl LowWater {
    /// The most a receive waits for.
    pub const MAX: usize = 256 * 1024;
    /// Below this a mark is not worth a system call.
    const MIN: usize = 16 * 1024;
    /// How much time's worth of bytes a receive waits for.
    const AHEAD: Duration = Duration::from_millis(25);
    /// The rate is measured over windows this long.
    const WINDOW: Duration = Duration::from_millis(100);
    /// A connection that brought nothing for this long gets the kernel's default back.
    pub const QUIET: Duration = Duration::from_millis(250);

    /// A receive brought `n` bytes at `now`.
    pub fn received(&mut self, now: Instant, n: usize) {
        self.last = Some(now);
        let Some(since) = self.since else {
            self.since = Some(now);
            return;
        };
        self.bytes += n as u64;
        let dt = now.saturating_duration_since(since);
        if dt < Self::WINDOW {
            return;
        }
        let ahead = self.bytes as f64 * Self::AHEAD.as_secs_f64() / dt.as_secs_f64();
        // A power of two, so that small changes of rate do not each cost a system call.
        let mark = (ahead as usize).min(Self::MAX);
        self.mark = if mark < Self::MIN {
            1
        } else {
            1 << mark.ilog2()
        };
        self.since = Some(now);
        self.bytes = 0;
    }

    /// The mark for the next receive, when `sure` more bytes are certain to come.
    pub fn want(&self, sure: usize) -> usize {
        if self.mark > 1 && sure >= self.mark {
            self.mark
        } else {
            1
        }
    }

    /// True when the connection has a mark above 1 and brought nothing for `QUIET`: its rate is
    /// forgotten and the mark goes back to 1 (the caller sets it on the socket).
    pub fn quiet(&mut self, now: Instant) -> bool {
        let quiet = self
            .last
            .is_none_or(|t| now.saturating_duration_since(t) >= Self::QUIET);
        if self.set == 1 || !quiet {
            return false;
        }
        *self = LowWater::default();
        true
    }
}

/// Connection life cycle.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConnState {
    Resolving,
    Connecting {
        addrs: Vec<std::net::SocketAddr>,
        next: usize,
    },
    Open,
    Idle,
}

/// One TCP (and maybe TLS) connection. Its socket is shared with the operations in flight on it, so
/// it closes when the last of them completes; its read block is here or in the receive in flight.
pub struct Conn {
    pub id: Owner,
    pub server: ServerKey,
    pub fd: Option<Fd>,
    /// The receive buffer; `None` while a receive into it is in flight.
    pub rbuf: Option<Block>,
    pub state: ConnState,
    pub tls: Option<TlsSession>,
    /// Unprocessed bytes of the read block.
    pub rb_start: usize,
    pub rb_end: usize,
    /// Bytes to send after the send in flight.
    pub out: Vec<u8>,
    /// TLS: request plaintext waiting for the handshake.
    pub plain_out: Vec<u8>,
    pub sending: bool,
    /// The receive in flight.
    pub recv: Option<RecvInFlight>,
    /// Its download stopped while a receive into its fill's block was in flight: that receive
    /// was cancelled, and its completion (bringing the block back) closes the connection, so
    /// the bytes the block holds are written, not dropped with it.
    pub draining: bool,
    /// This connection's operations in flight, abandoned when it closes.
    pub inflight: Vec<OpId>,
    /// What the connection is for once it is connected.
    pub want: Option<Want>,
    pub ex: Option<Exchange>,
    pub fill: Option<Fill>,
    /// TLS records received straight into the fill's block: the ciphertext not yet opened lies at
    /// this range of the block, after its plaintext (see `Driver::open_in_fill`). `None` while the
    /// connection reads into its read block.
    pub tls_cipher: Option<(usize, usize)>,
    /// This exchange reuses a kept-alive connection (a close before any byte is not an error).
    pub reused: bool,
    pub eof: bool,
    pub tls_peer_closed: bool,
    /// Waiting for a free write block before it can go on: its place in the line (the engine's
    /// count of waits when this one began). Blocks that come free go to the longest waiting first.
    pub starved: Option<u64>,
    /// Its write block was asked back (`Driver::reclaim_blocks`): the receive holding it was
    /// cancelled, and its completion hands the block over.
    pub yielding: bool,
    /// The write block (download, file offset, attempt) the connection held at the last tick,
    /// and since when: a block held long is handed over (`Driver::reclaim_blocks`).
    pub held_at_tick: Option<((usize, u64, u64), Instant)>,
    /// How long the receives cancelled to hand the block over waited with nothing received (since
    /// the last byte): each new receive has its own I/O timeout, so a silent connection's waits
    /// add up here and it times out on the tick as one receive would. Time spent waiting in line
    /// for a block does not count.
    pub silent_for: std::time::Duration,
    /// TLS had a record that did not fit the write blocks.
    pub tls_blocked: bool,
    /// The last connect's error (negative errno), for the message when every address failed.
    pub connect_error: i32,
    /// Not reading because a rate limit's tokens are spent; a timer wakes it.
    pub throttled: bool,
    /// How many bytes a receive waits for.
    pub low_water: LowWater,
    /// The proxy this connection goes through.
    pub proxy: Option<crate::http::proxy::Proxy>,
    /// The tunnel through the proxy being opened; while it is, nothing else is sent or read.
    pub tunnel: Option<crate::http::proxy::Handshake>,
    /// A plain request written while the tunnel was being opened, sent once it is.
    pub held_out: Vec<u8>,
    /// `socks5://`: the target's address, resolved here.
    pub socks_target: Option<std::net::IpAddr>,
}

/// The work a new connection is opened for.
#[derive(Debug, Clone)]
pub struct Want {
    pub dl: usize,
    pub url: Url,
    pub mirror: usize,
    pub redirects: u32,
}

impl Conn {
    pub fn new(id: Owner, server: ServerKey, rbuf: Block) -> Conn {
        Conn {
            id,
            server,
            fd: None,
            rbuf: Some(rbuf),
            state: ConnState::Resolving,
            tls: None,
            rb_start: 0,
            rb_end: 0,
            out: Vec::new(),
            plain_out: Vec::new(),
            sending: false,
            recv: None,
            draining: false,
            inflight: Vec::new(),
            want: None,
            ex: None,
            fill: None,
            tls_cipher: None,
            reused: false,
            eof: false,
            tls_peer_closed: false,
            proxy: None,
            tunnel: None,
            held_out: Vec::new(),
            socks_target: None,
            starved: None,
            yielding: false,
            held_at_tick: None,
            silent_for: std::time::Duration::ZERO,
            tls_blocked: false,
            connect_error: -libc::ECONNREFUSED,
            throttled: false,
            low_water: LowWater::default(),
        }
    }

    /// The connection waits for a write block; `waits` counts the waits begun, so that the one
    /// that began first is served first. Waiting already, it keeps its place.
    pub fn starve(&mut self, waits: &mut u64) {
        if self.starved.is_none() {
            *waits += 1;
            self.starved = Some(*waits);
        }
    }

    /// Working for download `dl`: in an exchange for it, or connecting to start one.
    pub fn works_for(&self, dl: usize) -> bool {
        self.ex.as_ref().is_some_and(|e| e.dl == dl)
            || self.want.as_ref().is_some_and(|w| w.dl == dl)
    }
}

/// Download life cycle.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DlState {
    Waiting,
    Active,
    Finished,
}

/// A new output file being created on the file-job thread: the job leaves the opened file (or
/// why it could not be opened) here, and the connection and URI whose response asked for it, to
/// name in the error.
#[derive(Debug, Clone)]
pub struct Opening {
    pub result: std::sync::Arc<std::sync::Mutex<Option<std::io::Result<store::OutFile>>>>,
    pub conn: Owner,
    pub uri: String,
    /// The file was asked for in [`WriteMode::Uncached`], not put in it by a refused `O_DIRECT`.
    pub uncached: bool,
}

/// One file being downloaded.
pub struct Download {
    /// Where it is in the engine's list, and its serial there.
    pub id: DlId,
    pub gid: u64,
    /// With `--save-session` outside daemon mode: its URIs as given and its entry's own options,
    /// for the session written at exit.
    pub session: Option<Box<SessionEntry>>,
    /// Control-file saves in flight: its place is not reused until they have ended.
    pub saves: usize,
    /// A server asked for credentials (401): `--http-auth-challenge` ones go out from now on.
    pub auth_challenged: bool,
    /// `--use-head`: the HEAD request was answered; the GETs follow.
    pub head_done: bool,
    pub uris: Vec<Url>,
    pub bad_uris: Vec<bool>,
    /// The best speed (bytes/s) an exchange of this attempt had from each mirror, and how many
    /// exchanges brought body bytes (one: a single-connection download): the server profile's
    /// measurements (`driver/select.rs`).
    pub mirror_speeds: Vec<u32>,
    pub exchanges_with_body: u32,
    /// Mirrors taken away by `aria2.changeUri`: never used again (also marked bad) and no longer
    /// listed. A connection already on one finishes its range.
    pub dropped_uris: Vec<bool>,
    pub first_uri: String,
    pub opts: DownloadOptions,
    pub state: DlState,
    pub path: Option<PathBuf>,
    /// The file this download made or took up (resumed, continued, or checked as found): an
    /// attempt that starts over writes over it, under its name, and over no other file.
    pub own_path: Option<PathBuf>,
    /// The open output file, shared with the file operations in flight on it.
    pub file: Option<Rc<File>>,
    /// Generation of `file` (0: none open). Every opened file gets a new one; completions carry
    /// the generation they were issued on.
    pub generation: u64,
    /// Counts the attempts [`Download::forget_attempt`] ended: blocks and exchanges carry the one
    /// they belong to.
    pub attempt: u64,
    /// File operations in flight on an earlier file of this download, which the new file's writes
    /// must wait for (they could otherwise land after them).
    pub old_writes: usize,
    /// How the open file is written (set when it is opened).
    pub mode: WriteMode,
    /// Known once the first response arrives. An unknown length is a plan of `u64::MAX` bytes cut
    /// to size when the body ends.
    pub plan: Option<Plan>,
    pub length_known: bool,
    pub ranges_ok: bool,
    /// A range request has been answered correctly (until then the first, whole-file response may
    /// take over ranges other connections have not started).
    pub ranges_confirmed: bool,
    /// Final URL of the first request (after redirects) and the mirror it came from: extra
    /// connections to that mirror use it.
    pub split_url: Option<(usize, Url)>,
    /// Connections asked for but not yet started (no slot free yet).
    pub wanted: usize,
    pub writes: usize,
    /// End of the furthest data written (for cutting a failed download's padding).
    pub high_water: u64,
    /// Bytes whose writes have completed: what a control file may claim.
    pub written: crate::plan::RangeSet,
    /// The `.aria2` file kept for this download, once there is one.
    pub control: Option<PathBuf>,
    /// Piece length of its control file.
    pub piece_length: u32,
    pub last_save: Option<Instant>,
    /// The generation of the file the last completed control-file save described.
    pub saved_generation: u64,
    /// The generation of the file whose final writeback was issued (a file written through the
    /// page cache is complete once that is done; see `maybe_finish`).
    pub synced_generation: u64,
    /// A writeback of the current file failed: none of its bytes may be claimed any more.
    pub claims_lost: bool,
    /// The errno of a control-file save's sync of the data file that failed, set on the
    /// file-job thread: a writeback error, reported once to whoever asks first, so the loop
    /// treats it as a failed writeback (`on_control_saved`).
    pub sync_error: std::sync::Arc<std::sync::atomic::AtomicI32>,
    /// Counts the times claims were withdrawn ([`Download::withdraw_claims`]); a control-file
    /// save queued before one is not written (the job reads it just before it saves).
    pub withdrawals: std::sync::Arc<std::sync::atomic::AtomicU64>,
    /// The first save of the current file is in flight: until it is on disk nothing is written
    /// and nothing allocated, so a file never holds bytes (or length) no control file accounts
    /// for — a later `-c` would take them for data.
    pub first_save_pending: bool,
    /// An allocation waiting for that save (or for the file's creation).
    pub alloc_after_save: Option<u64>,
    /// The current generation's file is being created by the file-job thread: until it is
    /// open, filled blocks wait (`submit_flushes`) and the download cannot end (the creation
    /// counts in `writes`).
    pub opening: Option<Opening>,
    /// The job creating the current generation's file, waiting for the operations on the file it
    /// replaces (`old_writes`) to end: it empties the file, and a write still in flight would land
    /// in it after (counted in `writes` meanwhile; issued by `file_op_done`).
    pub parked_open: Option<crate::engine::reactor::Job>,
    /// A control-file save was asked for while the file was being created: it is made once the
    /// file exists (a file that cannot be created leaves no control file).
    pub save_when_open: bool,
    /// Its file could not be created: it leaves no control file.
    pub create_failed: bool,
    /// Resumed from a control file: the first request already asks for a range.
    pub resumed: bool,
    /// `-c` without a control file: the existing file's length (rounded down to 16 KiB), asked for
    /// first; or, with `verify_found`, `-V`'s file's length.
    pub continue_from: Option<u64>,
    /// `continue_from` is `-V`'s (without `-c`): a file of the server's length is checked by its
    /// digest, one of another length is not this file.
    pub verify_found: bool,
    /// A control file found without its file: removed when the first response creates the file.
    pub defunct_control: Option<std::path::PathBuf>,
    /// `--checksum`: the digest the file must have, and the hash of its first `hash_pos` bytes,
    /// taken as blocks are written in order.
    pub expected: Option<crate::store::checksum::Expected>,
    pub hasher: Option<crate::store::checksum::Hasher>,
    pub hash_pos: u64,
    /// Reading the file back to finish the hash (blocks arrived out of order, or resumed).
    pub verifying: bool,
    pub verified: bool,
    /// The read-back found no free block: the next block freed goes to it first.
    pub verify_waits: bool,
    /// `--max-download-limit`.
    pub bucket: Option<Bucket>,
    /// Connections to open once `retry_at` has passed (`--retry-wait`).
    pub deferred: usize,
    pub retry_at: Option<Instant>,
    /// "Not found" answers so far (`--max-file-not-found`).
    pub not_found: u32,
    /// `--conditional-get`: the local file's time, sent as If-Modified-Since.
    pub if_modified_since: Option<String>,
    /// The server's Last-Modified, for `-R`.
    pub last_modified: Option<String>,
    /// Which version of the remote file this download holds: sent as If-Range, so a changed file
    /// is answered whole instead of being mixed in.
    pub validator: Option<Validator>,
    /// Ended without receiving a body (dry run, 304), or without a file to keep it in (its
    /// creation failed after the body had begun to arrive).
    pub no_data: bool,
    /// `-V`: the existing file is being checked; nothing is fetched unless it fails.
    pub checking_existing: bool,
    /// Started before by this process: the file found is its own partial file (`Job::restarted`).
    pub restarted: bool,
    /// The length was learnt only when the body ended (no answer said it): no control file
    /// describes such a download, as aria2 writes none for it.
    pub length_at_end: bool,
    /// The file was preallocated to its full length.
    pub preallocated: bool,
    /// The file's length when this run opened it without emptying it (a control file's, `-c`'s
    /// or `-V`'s file; 0 for one it created): a run that fails never leaves it shorter, so no
    /// byte a user or an earlier run had is cut away.
    pub found_len: u64,
    /// Bytes counted done from disk when this run's plan was made (see `received_here`).
    pub done_at_start: u64,
    /// How much of the file's start this run never writes (`-c`'s resume offset, a control
    /// file's gap-free claims): what stays even when a lost writeback makes this run's own
    /// writes anything.
    pub untouched: u64,
    pub failures: u32,
    /// Mirrors that answered a resuming request with the whole file (`--max-resume-failure-tries`).
    pub resume_failures: u32,
    /// Times the download started over because a range came from another version of the file
    /// than the one it began with (a server that ignores `If-Range`).
    pub version_restarts: u32,
    pub error: Option<Failure>,
    /// Stopped by Ctrl-C/SIGTERM before it finished: reported as in progress.
    pub halted: bool,
    /// Why ranges were turned off (a range request refused): reported if the download then
    /// stalls, since it is what stopped the splitting.
    pub soft_error: Option<Failure>,
    pub started: Option<Instant>,
    pub ended: Option<Instant>,
    /// (time, bytes received) at recent readouts: the speed is measured over the last few seconds.
    pub samples: std::collections::VecDeque<(Instant, u64)>,
}

/// Names a download from something that may outlive it (an operation in flight, a file job): its
/// place in the engine's list and the serial of the download that held the place then. A place is
/// reused by a later job, so a stale id finds nothing rather than that job's download.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DlId {
    pub slot: usize,
    pub serial: u64,
}

/// Names the file an operation was issued on: its download and the generation of the file (a
/// download that starts over opens a new one).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileOf {
    pub dl: DlId,
    pub generation: u64,
}

impl Download {
    pub fn new(
        id: DlId,
        gid: u64,
        uris: Vec<Url>,
        first_uri: String,
        opts: DownloadOptions,
        now: Instant,
    ) -> Download {
        let n = uris.len();
        let piece_length = opts.piece_length;
        let opts_limit = opts.max_download_limit;
        let expected = opts
            .checksum
            .as_deref()
            .and_then(crate::store::checksum::parse);
        let hasher = expected
            .as_ref()
            .map(|e| crate::store::checksum::Hasher::new(e.kind));
        Download {
            id,
            gid,
            saves: 0,
            auth_challenged: false,
            head_done: false,
            uris,
            bad_uris: vec![false; n],
            mirror_speeds: vec![0; n],
            exchanges_with_body: 0,
            dropped_uris: vec![false; n],
            first_uri,
            opts,
            state: DlState::Waiting,
            path: None,
            own_path: None,
            file: None,
            generation: 0,
            attempt: 0,
            old_writes: 0,
            mode: WriteMode::Direct,
            plan: None,
            length_known: false,
            ranges_ok: false,
            ranges_confirmed: false,
            split_url: None,
            wanted: 0,
            writes: 0,
            high_water: 0,
            written: crate::plan::RangeSet::new(),
            control: None,
            piece_length,
            last_save: None,
            saved_generation: 0,
            synced_generation: 0,
            claims_lost: false,
            sync_error: Default::default(),
            withdrawals: Default::default(),
            first_save_pending: false,
            alloc_after_save: None,
            opening: None,
            parked_open: None,
            save_when_open: false,
            create_failed: false,
            resumed: false,
            continue_from: None,
            verify_found: false,
            defunct_control: None,
            expected,
            hasher,
            hash_pos: 0,
            verifying: false,
            verified: false,
            verify_waits: false,
            bucket: (opts_limit > 0).then(|| Bucket::new(opts_limit, now)),
            deferred: 0,
            retry_at: None,
            not_found: 0,
            if_modified_since: None,
            last_modified: None,
            validator: None,
            no_data: false,
            checking_existing: false,
            restarted: false,
            length_at_end: false,
            preallocated: false,
            found_len: 0,
            done_at_start: 0,
            untouched: 0,
            failures: 0,
            resume_failures: 0,
            version_restarts: 0,
            error: None,
            soft_error: None,
            halted: false,
            started: None,
            ended: None,
            samples: std::collections::VecDeque::new(),
            session: None,
        }
    }

    /// Forgets what the file holds so that the next first response starts it over (overwriting
    /// it, `own_path`): the plan, the bytes on disk and everything derived from them. Only through the
    /// engine's `start_over`, which also drops the blocks still waiting to be written for the
    /// attempt forgotten here (written later, into the next file, they would count as its bytes).
    pub fn forget_attempt(&mut self) {
        self.attempt += 1;
        self.plan = None;
        self.drop_file();
        self.written = crate::plan::RangeSet::new();
        self.resumed = false;
        self.continue_from = None;
        self.verify_found = false;
        self.wanted = 0;
        self.split_url = None;
        self.high_water = 0;
        self.preallocated = false;
        // The next first response empties the file: nothing found in it is left to keep.
        self.found_len = 0;
        self.done_at_start = 0;
        self.untouched = 0;
        self.piece_length = self.opts.piece_length;
        self.last_save = None;
        self.hash_pos = 0;
        self.hasher = self
            .expected
            .as_ref()
            .map(|e| crate::store::checksum::Hasher::new(e.kind));
    }

    /// Nothing written is claimed any more (a checksum failed, a writeback was lost): not by
    /// this download's next control file, nor by one already queued.
    pub fn withdraw_claims(&mut self) {
        self.written = crate::plan::RangeSet::new();
        self.withdrawals
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    }

    /// Takes `file` as the download's output file, under a new generation.
    pub fn open_file(&mut self, file: File) {
        self.new_generation();
        self.file = Some(Rc::new(file));
    }

    /// Starts a new generation whose file `open` is still creating ([`Download::attach_file`]
    /// gives it); what the creation's completion is tagged with.
    pub fn begin_open(&mut self, open: Opening) -> FileOf {
        self.new_generation();
        self.opening = Some(open);
        self.file_of()
    }

    /// The file the current generation's creation opened.
    pub fn attach_file(&mut self, file: File) {
        self.opening = None;
        self.file = Some(Rc::new(file));
    }

    fn new_generation(&mut self) {
        static GENERATIONS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
        self.drop_file();
        self.claims_lost = false;
        self.generation = GENERATIONS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }

    /// Lets go of the open file. Its operations in flight complete on it and count down
    /// `old_writes`; nothing they report is taken for the next file's. Private: dropping the file
    /// without forgetting what was derived from its bytes (`start_over`) would mix two attempts.
    fn drop_file(&mut self) {
        self.file = None;
        self.opening = None;
        if self.parked_open.take().is_some() {
            // Never issued: nothing will complete for it.
            self.writes -= 1;
        }
        self.save_when_open = false;
        self.generation = 0;
        self.first_save_pending = false;
        self.alloc_after_save = None;
        self.old_writes += std::mem::take(&mut self.writes);
    }

    /// The file operations are issued on now.
    pub fn file_of(&self) -> FileOf {
        FileOf {
            dl: self.id,
            generation: self.generation,
        }
    }

    /// Whether a saved control file describes the current file. Until one does, `-c` would take
    /// the file's length for what is done: the file holds no allocated length, and grows only at
    /// the end of its bytes written without a gap (`submit_flushes`).
    pub fn described(&self) -> bool {
        self.saved_generation == self.generation
    }

    /// The output path as messages name it (empty until there is one).
    pub fn path_text(&self) -> String {
        self.path
            .as_ref()
            .map(|p| p.display().to_string())
            .unwrap_or_default()
    }

    /// Whether a mirror other than `mirror` is still usable.
    pub fn other_mirrors(&self, mirror: usize) -> bool {
        (0..self.uris.len()).any(|m| m != mirror && !self.bad_uris[m])
    }

    /// `aria2.changeUri` on a running download: one listed mirror per entry of `del` is dropped
    /// (compared as parsed URLs), then `add` become usable mirrors. Indices of mirrors in use do
    /// not move: added ones go to the end. The counts of dropped and added mirrors.
    pub fn change_mirrors(&mut self, del: &[String], add: &[Url]) -> (usize, usize) {
        let mut dropped = 0;
        for d in del {
            let Ok(want) = Url::parse(d) else { continue };
            let found =
                (0..self.uris.len()).find(|&m| !self.dropped_uris[m] && self.uris[m] == want);
            if let Some(m) = found {
                self.dropped_uris[m] = true;
                self.bad_uris[m] = true;
                dropped += 1;
            }
        }
        for u in add {
            self.uris.push(u.clone());
            self.bad_uris.push(false);
            self.dropped_uris.push(false);
        }
        (dropped, add.len())
    }

    /// How many connections this download should have: `-s` in all, at most `-x` per usable mirror.
    pub fn connections_wanted(&self) -> usize {
        let servers = self.bad_uris.iter().filter(|b| !**b).count().max(1);
        self.opts.split.min(self.opts.max_conn_per_server * servers)
    }

    /// Bytes received so far.
    pub fn received(&self) -> u64 {
        self.plan.as_ref().map_or(0, Plan::received)
    }

    /// Bytes received by this run: what was on disk when it began (a control file's claims,
    /// `-c`'s file) is not counted in its speed or its average.
    pub fn received_here(&self) -> u64 {
        self.received().saturating_sub(self.done_at_start)
    }

    /// Records the byte count now and returns the speed over the last ~3 seconds (bytes/s).
    pub fn sample_speed(&mut self, now: Instant) -> u64 {
        let got = self.received_here();
        self.samples.push_back((now, got));
        while self.samples.len() > 2
            && now.duration_since(self.samples[0].0) > std::time::Duration::from_secs(3)
        {
            self.samples.pop_front();
        }
        let (t0, b0) = self.samples[0];
        let secs = now.duration_since(t0).as_secs_f64();
        if secs < 0.05 {
            return 0;
        }
        (got.saturating_sub(b0) as f64 / secs) as u64
    }

    /// The speed over the samples the readout took (bytes/s), without taking one.
    pub fn speed(&self, now: Instant) -> u64 {
        let Some(&(t0, b0)) = self.samples.front() else {
            return 0;
        };
        let secs = now.duration_since(t0).as_secs_f64();
        if secs < 0.05 {
            return 0;
        }
        (self.received_here().saturating_sub(b0) as f64 / secs) as u64
    }

    /// The file length, when known.
    pub fn total(&self) -> Option<u64> {
        if self.length_known {
            self.plan.as_ref().map(Plan::total)
        } else {
            None
        }
    }
}

/// A token bucket: bytes may be received while it holds tokens; it refills at `rate` per second.
/// Reads are not cut to the tokens left, so it may go below zero; the connection then waits until
/// the debt is repaid, which keeps the long-run rate exact.
#[derive(Debug, Clone)]
pub struct Bucket {
    pub rate: u64,
    tokens: f64,
    last: Instant,
}

impl Bucket {
    pub fn new(rate: u64, now: Instant) -> Bucket {
        Bucket {
            rate,
            tokens: 0.0,
            last: now,
        }
    }

    fn refill(&mut self, now: Instant) {
        let dt = now.saturating_duration_since(self.last).as_secs_f64();
        self.last = now;
        // A small burst allowance: a tenth of a second's worth, at least 16 KiB.
        let cap = (self.rate as f64 / 10.0).max(16384.0);
        self.tokens = (self.tokens + dt * self.rate as f64).min(cap);
    }

    /// When reading may go on: now (None) or at the returned instant.
    pub fn wait_until(&mut self, now: Instant) -> Option<Instant> {
        self.refill(now);
        if self.tokens > 0.0 {
            None
        } else {
            let secs = (-self.tokens + 1.0) / self.rate.max(1) as f64;
            Some(now + std::time::Duration::from_secs_f64(secs))
        }
    }

    /// Records `n` bytes received.
    pub fn charge(&mut self, n: u64, now: Instant) {
        self.refill(now);
        self.tokens -= n as f64;
    }
}

/// A full (or final) write block, ready for the driver to write.
pub struct Flush {
    pub dl: usize,
    pub fill: Fill,
    pub at_file_end: bool,
}

/// Feeds response bytes of one exchange: head collection, unframing, placement into write blocks.
pub struct BodySink<'a> {
    pub owner: Owner,
    pub ex: &'a mut Exchange,
    pub fill: &'a mut Option<Fill>,
    pub blocks: &'a Pool,
    pub plan: Option<&'a mut Plan>,
    /// No range request of this download has been answered yet.
    pub ranges_unconfirmed: bool,
    pub flushes: &'a mut super::driver::Flushes,
}

impl BodySink<'_> {
    /// Takes bytes of the response as they come off the wire (plaintext).
    pub fn feed(&mut self, data: &[u8]) {
        if self.ex.error.is_some() || data.is_empty() {
            return;
        }
        self.ex.any_bytes = true;
        match self.ex.phase {
            Phase::Head => {
                self.ex.head.extend_from_slice(data);
                match http::parse_head(&self.ex.head) {
                    Ok(None) => {}
                    Ok(Some((resp, off))) => {
                        self.ex.head_rest = self.ex.head.split_off(off);
                        self.ex.response = Some(resp);
                        self.ex.phase = Phase::Decide;
                    }
                    Err(e) => self.ex.error = Some(http_failure(e)),
                }
            }
            Phase::Decide => self.ex.head_rest.extend_from_slice(data),
            Phase::Body => self.unframe(data),
        }
    }

    /// Strips the framing from raw body bytes and places the data; what does not fit is spilled.
    pub fn unframe(&mut self, data: &[u8]) {
        match self.ex.framing {
            Framing::Empty => {
                self.ex.unusable = true;
            }
            Framing::Length(_) => {
                let n = usize::try_from(self.ex.remaining)
                    .unwrap_or(usize::MAX)
                    .min(data.len());
                self.ex.remaining -= n as u64;
                self.place_or_spill(&data[..n]);
                if self.ex.remaining == 0 {
                    self.ex.body_complete = true;
                }
                if n < data.len() {
                    self.ex.unusable = true;
                }
            }
            Framing::UntilClose => self.place_or_spill(data),
            Framing::Chunked => {
                let mut at = 0;
                while at < data.len() && !self.ex.body_complete {
                    let Some(dec) = self.ex.chunked.as_mut() else {
                        return;
                    };
                    match dec.decode(&data[at..]) {
                        Ok((used, ev)) => {
                            let base = at;
                            at += used;
                            match ev {
                                Some(ChunkEvent::Data(r)) => {
                                    self.place_or_spill(&data[base + r.start..base + r.end]);
                                }
                                Some(ChunkEvent::Done) => self.ex.body_complete = true,
                                None => {
                                    if used == 0 {
                                        break;
                                    }
                                }
                            }
                        }
                        Err(e) => {
                            self.ex.error = Some(http_failure(e));
                            return;
                        }
                    }
                }
                if at < data.len() {
                    self.ex.unusable = true;
                }
            }
        }
    }

    fn place_or_spill(&mut self, data: &[u8]) {
        if self.ex.decoder.is_some() {
            // Encoded: kept as it came, and inflated only as far as write blocks take it.
            self.ex.spill.extend_from_slice(data);
            self.inflate();
            return;
        }
        if !self.ex.spill.is_empty() {
            self.ex.spill.extend_from_slice(data);
            return;
        }
        let n = self.place(data);
        if n < data.len() {
            self.ex.spill.extend_from_slice(&data[n..]);
        }
    }

    /// Places spilled bytes now that blocks may be free. Returns true when the spill is empty.
    pub fn drain_spill(&mut self) -> bool {
        if self.ex.decoder.is_some() {
            self.inflate();
            return !self.ex.pending();
        }
        if self.ex.spill.is_empty() {
            return true;
        }
        let spill = std::mem::take(&mut self.ex.spill);
        let n = self.place(&spill);
        self.ex.spill = spill[n..].to_vec();
        self.ex.spill.is_empty()
    }

    /// Inflates the encoded bytes held in `spill` into write blocks, `INFLATE_STEP` bytes at a time,
    /// until they are used up or no write block is free: however much a body inflates to, memory
    /// holds at most one step of it.
    fn inflate(&mut self) {
        loop {
            if !self.ex.inflated_waiting.is_empty() {
                let out = std::mem::take(&mut self.ex.inflated);
                let waiting = self.ex.inflated_waiting.clone();
                let n = self.place(&out[waiting.clone()]);
                self.ex.inflated = out;
                self.ex.inflated_waiting = waiting.start + n..waiting.end;
                if !self.ex.inflated_waiting.is_empty() {
                    return;
                }
            }
            let Some(dec) = self.ex.decoder.as_mut() else {
                return;
            };
            if dec.finished() {
                // Bytes after the end of the stream are not the file's.
                self.ex.spill.clear();
                return;
            }
            if self.ex.spill.is_empty() && !dec.has_more() {
                return;
            }
            if self.ex.inflated.len() != INFLATE_STEP {
                // (Bytes put back can have made it longer.)
                self.ex.inflated.resize(INFLATE_STEP, 0);
            }
            match dec.run(&self.ex.spill, &mut self.ex.inflated) {
                Ok((used, made)) => {
                    // Input left unused here would never be joined by more: the connection reads
                    // again only once the spill is empty (`Decoder::run` uses all it is given).
                    debug_assert!(
                        used > 0 || made > 0 || self.ex.spill.is_empty() || dec.finished(),
                        "the decoder kept {} bytes back unused",
                        self.ex.spill.len()
                    );
                    self.ex.spill.drain(..used);
                    self.ex.inflated_waiting = 0..made;
                    if used == 0 && made == 0 {
                        return;
                    }
                }
                Err(e) => {
                    self.ex.inflated_waiting = 0..0;
                    self.ex.spill.clear();
                    self.ex.error = Some(Failure::retry(ExitCode::UNKNOWN, e.to_string()));
                    return;
                }
            }
        }
    }

    /// Copies body bytes into write blocks at their file offset, queuing full blocks. Bytes past the
    /// segment's end go into the next segment when nobody else has started it, else are dropped.
    /// Returns how many bytes were consumed (fewer only when no write block is free).
    pub fn place(&mut self, data: &[u8]) -> usize {
        let Some(plan) = self.plan.as_deref_mut() else {
            return data.len();
        };
        let write_size = self.blocks.size(Class::Write);
        let mut used = 0;
        while used < data.len() {
            let seg = plan.segment(self.ex.seg).clone();
            if seg.owner != Some(self.owner) {
                // Another connection took this range over: these bytes are not ours to place.
                self.ex.unusable = true;
                self.ex.overruled = true;
                return data.len();
            }
            if seg.pos >= seg.end {
                match plan.continue_into(self.ex.seg, self.owner) {
                    Some(next) => {
                        self.ex.seg = next;
                        continue;
                    }
                    None if self.ranges_unconfirmed
                        && self.ex.range.is_none()
                        && plan.next_unstarted(self.ex.seg) =>
                    {
                        self.ex.parked = true;
                        return used;
                    }
                    None => {
                        self.ex.unusable = true;
                        return data.len();
                    }
                }
            }
            let mut fill = match self.fill.take() {
                Some(f) if f.off + f.filled as u64 == seg.pos => f,
                Some(f) => {
                    // A continuation jumped segments: the old block ended at the old segment's end
                    // and was queued then, so this cannot hold; keep the block and stop here.
                    *self.fill = Some(f);
                    return used;
                }
                None => match self.blocks.alloc(Class::Write) {
                    Some(block) => Fill {
                        block,
                        off: seg.pos,
                        filled: 0,
                        attempt: self.ex.attempt,
                    },
                    None => return used,
                },
            };
            let room = store::room(fill.off, fill.filled, write_size, seg.end);
            let n = room.min(data.len() - used);
            fill.block.put(fill.filled, &data[used..used + n]);
            used += n;
            plan.advance(self.ex.seg, n as u64);
            self.ex.body_bytes += n as u64;
            fill.filled += n;
            let end = fill.off + fill.filled as u64;
            if fill.filled == write_size || end == seg.end {
                self.flushes.push(Flush {
                    dl: self.ex.dl,
                    fill,
                    at_file_end: end == plan.total(),
                });
            } else {
                *self.fill = Some(fill);
            }
        }
        used
    }

    /// Bytes the sink can take without spilling.
    fn capacity(&self) -> usize {
        if self.ex.pending() || self.ex.error.is_some() || self.ex.parked {
            return 0;
        }
        if self.ex.phase != Phase::Body {
            return if self.ex.phase == Phase::Head {
                http::MAX_HEAD
            } else {
                0
            };
        }
        let w = self.blocks.size(Class::Write);
        let free = self.blocks.free_count(Class::Write) * w;
        match self.fill.as_ref() {
            // A block being filled takes the next record whatever its size: what runs past the
            // block and the free ones waits in the spill (one record at most: nothing more is
            // taken while the spill holds bytes). A connection that kept a part-filled block while
            // it waited for a free one would deadlock with the others once every block was kept
            // so. (An empty block takes any record anyway: a block is larger than a record.)
            Some(f) => w - f.filled + free + crate::tls::PLAIN_BOUND_MAX,
            None => free,
        }
    }
}

impl PlainSink for BodySink<'_> {
    fn room(&self) -> usize {
        self.capacity()
    }
    fn put(&mut self, data: &[u8]) {
        self.feed(data);
    }
}

/// The failure for a protocol error in a response.
pub fn http_failure(e: HttpError) -> Failure {
    match e {
        HttpError::RangeMismatch { .. } => Failure::retry(ExitCode::CANNOT_RESUME, e.to_string()),
        // An answer that is not HTTP, a broken chunk, a Content-Length that is no count, a
        // Location that is no URL: aria2c ends these with its generic code, 1 (not 22).
        HttpError::Malformed(_)
        | HttpError::BadChunk(_)
        | HttpError::BadContentLength(_)
        | HttpError::BadLocation(_) => Failure::retry(ExitCode::UNKNOWN, e.to_string()),
        // Asking again brings the same coding: aria2c fails at once, with its generic code.
        HttpError::UnsupportedTransferCoding(_) => Failure::fatal(ExitCode::UNKNOWN, e.to_string()),
        other => Failure::retry(ExitCode::HTTP_PROTOCOL, other.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::LowWater;
    use std::time::{Duration, Instant};

    /// Feeds `per_ms` bytes a millisecond for `ms` milliseconds, one receive a millisecond.
    fn feed(w: &mut LowWater, start: Instant, ms: u64, per_ms: usize) -> Instant {
        let mut t = start;
        for _ in 0..ms {
            t += Duration::from_millis(1);
            w.received(t, per_ms);
        }
        t
    }

    #[test]
    fn the_mark_follows_the_rate_and_never_passes_what_is_sure_to_come() {
        let t0 = Instant::now();
        let mut w = LowWater::default();
        assert_eq!(w.want(usize::MAX), 1, "no rate measured yet");
        // 10 MB/s: 25 ms are 250 000 bytes, a mark of 128 KiB.
        let t = feed(&mut w, t0, 150, 10_000);
        assert_eq!(w.want(usize::MAX), 128 * 1024);
        assert_eq!(w.want(128 * 1024), 128 * 1024);
        assert_eq!(
            w.want(128 * 1024 - 1),
            1,
            "fewer bytes to come than the mark"
        );
        // 1 GB/s: capped.
        let t = feed(&mut w, t, 150, 1_000_000);
        assert_eq!(w.want(usize::MAX), LowWater::MAX);
        // 200 kB/s: 5 000 bytes in 25 ms, not worth a mark.
        feed(&mut w, t, 150, 200);
        assert_eq!(w.want(usize::MAX), 1);
    }

    #[test]
    fn a_quiet_connection_gets_the_default_back_once() {
        let t0 = Instant::now();
        let mut w = LowWater::default();
        let t = feed(&mut w, t0, 150, 10_000);
        w.set = w.want(usize::MAX);
        assert!(w.set > 1);
        assert!(!w.quiet(t + Duration::from_millis(100)), "not quiet yet");
        assert!(w.quiet(t + LowWater::QUIET));
        assert_eq!((w.set, w.want(usize::MAX)), (1, 1), "the rate is forgotten");
        assert!(!w.quiet(t + LowWater::QUIET * 4), "already at the default");
    }

    /// Bytes a connection takes back from the block it hands over go in front of what waits for
    /// a block, in the buffer that is placed first: the spill for a plain body, the inflated
    /// bytes for an encoded one (whose spill holds encoded bytes, not the file's).
    #[test]
    fn bytes_put_back_are_placed_before_what_waited() {
        let url = url::Url::parse("http://example.com/f").expect("a URL");
        let mut ex = super::Exchange::new((0, 0), url.clone(), 0, None, 0);
        ex.spill = b"later".to_vec();
        ex.put_back(b"first-");
        assert_eq!(ex.spill, b"first-later");
        ex.put_back(b"");
        assert_eq!(ex.spill, b"first-later");

        let mut ex = super::Exchange::new((0, 0), url, 0, None, 0);
        let coding = crate::http::decode::Coding::Gzip;
        ex.decoder = Some(crate::http::decode::Decoder::new(coding));
        ex.spill = b"encoded".to_vec();
        ex.inflated = b"xxxxlaterxx".to_vec();
        ex.inflated_waiting = 4..9;
        ex.put_back(b"first-");
        assert_eq!(&ex.inflated[ex.inflated_waiting.clone()], b"first-later");
        assert_eq!(ex.spill, b"encoded");
        assert!(ex.pending());
    }
}
