//! The state the driver keeps per connection: its socket and TLS session, the receive in flight,
//! the exchange (one request and its response) and its adaptive receive low-water mark. Nothing
//! here submits I/O.
use super::job::Failure;
use super::reactor::{Block, Fd, OpId};
use crate::http::{ChunkedDecoder, Framing, ResponseHead};
use crate::plan::Owner;
use crate::tls::TlsSession;
use std::time::{Duration, Instant};
use url::Url;

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

/// The port a URI of `scheme` names when it names none.
pub fn default_port(scheme: &str) -> u16 {
    match scheme {
        "https" => 443,
        "ftp" | "ftpes" => 21,
        "ftps" => 990,
        "sftp" => 22,
        _ => 80,
    }
}

impl ServerKey {
    pub fn of(url: &Url) -> ServerKey {
        ServerKey {
            // (Implicit FTPS speaks TLS from the first byte, as HTTPS does.)
            https: matches!(url.scheme(), "https" | "ftps"),
            host: url.host_str().unwrap_or_default().to_string(),
            port: url.port().unwrap_or_else(|| default_port(url.scheme())),
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
    /// A protocol other than HTTP: its machine for this exchange (`sources::Conversation`), the
    /// answer it gave (the head phase's end), and bytes it asked to send meanwhile.
    pub conversation: Option<Box<dyn super::sources::Conversation>>,
    pub answer: Option<super::sources::Answer>,
    pub outgoing: Vec<u8>,
    /// The conversation asked for a data connection (`sources::Step::Data`, `Step::Listen`).
    pub data_port: Option<DataAsk>,
    /// The conversation asked to send the download's bytes (`sources::Step::Serve`).
    pub serve_ask: Option<ServeAsk>,
    /// The body is wrapped in the protocol's packets: the conversation unwraps it
    /// (`sources::Answer::wrapped`).
    pub wrapped: bool,
    /// The conversation asked for TLS on the connection (`sources::Step::StartTls`), then these
    /// bytes.
    pub start_tls: Option<Vec<u8>>,
}

/// Bytes of the download a conversation asked to send: `header`, then `len` bytes from `first`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServeAsk {
    pub header: Vec<u8>,
    pub first: u64,
    pub len: usize,
}

/// Where sending the download's bytes on a connection stands (`driver/serve.rs`).
pub enum Serving {
    /// Read back from the file into a block (the read owns it), from byte `at` of the download.
    Reading { ask: ServeAsk, at: u64 },
    /// The block's bytes `from..to` still to go, after the header in `out` (`None` while a send
    /// of the block is in flight).
    Sending {
        block: Option<Block>,
        from: usize,
        to: usize,
    },
}

/// A data connection a conversation asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DataAsk {
    /// To this port of the connection's peer.
    Connect(u16),
    /// From the server, to a port listened on.
    Listen,
}

/// Most inflated bytes made at a time: what an encoded body can hold in memory beyond its blocks.
pub const INFLATE_STEP: usize = 64 * 1024;

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
            conversation: None,
            answer: None,
            outgoing: Vec::new(),
            data_port: None,
            serve_ask: None,
            wrapped: false,
            start_tls: None,
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
            && !self.wrapped
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
    /// The address the socket is connected to.
    pub peer: Option<std::net::SocketAddr>,
    /// A protocol's second connection (FTP's data connection), before the answer that moves
    /// the body onto it.
    pub data: Option<DataConn>,
    /// The body comes on the data connection: the connection the conversation went on, set
    /// aside meanwhile.
    pub control: Option<Parked>,
    /// The download's bytes on their way out on this connection.
    pub serving: Option<Serving>,
    /// Idle, kept by its protocol for the next exchange that can go on it.
    pub kept: Option<KeptConn>,
}

/// A protocol's second connection, on its way.
pub enum DataConn {
    /// Connecting to the server's port (passive mode), or to the proxy the connection goes
    /// through, to ask it for a tunnel to this port of the server.
    Connecting(Fd, Option<u16>),
    /// Opening the tunnel through the proxy (since then).
    Tunneling(Fd, crate::http::proxy::Handshake, Instant),
    /// Listening, since then, for the server to connect (active mode); held open until it has.
    Listening(#[allow(dead_code)] Fd, Instant),
    Connected(Fd),
}

impl DataConn {
    pub fn connected(&self) -> bool {
        matches!(self, DataConn::Connected(_))
    }
}

/// A connection set aside while its body comes on another (FTP's control connection): held
/// open, since a server ends the transfer when it closes; it closes with the connection.
pub struct Parked {
    pub fd: Fd,
    /// Its TLS session (FTPS), kept with it.
    pub tls: Option<crate::tls::TlsSession>,
    /// What it had received after the answer, for the conversation (FTP: the transfer's last
    /// reply, when it came early).
    pub rest: Vec<u8>,
    /// Bytes of its read block not yet processed (TLS records not yet opened).
    pub raw: Vec<u8>,
}

/// A connection kept, with what its last exchange left on it, for the next exchange of the same
/// protocol (FTP's control connection, logged in): only an exchange whose
/// `sources::kept_key` is `key` goes on it.
pub struct KeptConn {
    pub key: String,
    pub kept: crate::engine::sources::Kept,
    /// Bytes received on it not yet processed (TLS records), put back in the read block when
    /// the next exchange begins.
    pub raw: Vec<u8>,
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
            peer: None,
            data: None,
            control: None,
            serving: None,
            kept: None,
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

#[cfg(test)]
mod tests {
    use super::LowWater;
    use std::time::{Duration, Instant};

    #[test]
    fn each_scheme_goes_to_its_own_default_port() {
        for (u, port, tls) in [
            ("http://h/f", 80, false),
            ("https://h/f", 443, true),
            ("ftp://h/f", 21, false),
            ("sftp://h/f", 22, false),
            ("ftps://h/f", 990, true),
            ("ftpes://h/f", 21, false),
            ("sftp://h:2222/f", 2222, false),
        ] {
            let k = super::ServerKey::of(&url::Url::parse(u).expect("a URL"));
            assert_eq!((k.port, k.https), (port, tls), "{u}");
        }
    }

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
