//! A real HTTP/1.1 server on loopback that each test configures per path, so the ringdl binary can
//! be pointed at well-behaved, slow and broken servers alike. Plain std threads (one per
//! connection) and rustls's server side; nothing async, nothing shared with the code under test.
//!
//! ```ignore
//! let server = TestServer::https();                       // or TestServer::plain()
//! server.route("/f.bin", Route::bytes(data.clone()));     // 200/206/416, keep-alive
//! server.route("/slow", Route::bytes(data).throttle(16 * 1024, Duration::from_millis(2)));
//! server.route("/gone", Route::status(404));
//! server.route("/r", Route::redirect(302, "/f.bin"));
//! let first = server.redirect_chain("hop", 21, "/f.bin", Location::Relative);
//! server.route("/cut", Route::bytes(data).fault(Fault::ResetAfter(8192), When::SegmentRequests));
//! let url = server.url("/f.bin");          // http(s)://127.0.0.1:PORT/f.bin
//! let ca = server.ca_file();               // PEM of the generated CA, for --ca-certificate
//! ...run the client...
//! assert!(server.stats().connections < 5);
//! let ranges: Vec<_> = server.requests_to("/f.bin").iter().filter_map(|r| r.range()).collect();
//! ```
//!
//! * [`TestServer::builder`] picks TLS ([`ServerBuilder::tls`]), a leaf certificate for the wrong
//!   host ([`ServerBuilder::tls_wrong_host`]) and the protocol versions. Every TLS server makes its
//!   own CA and a leaf for `localhost`, `127.0.0.1` and `::1`; rustls's default in-memory session
//!   cache gives resumption (TLS 1.2 session ids, TLS 1.3 stateful tickets).
//! * The server listens on 127.0.0.1 and, where the machine has it, on [::1] with the same port
//!   ([`TestServer::url_v6`], [`TestServer::url_localhost`]).
//! * A [`Route`] serves bytes (ranges honoured, ignored, or refused with `Accept-Ranges: none`;
//!   framed by Content-Length, chunked or connection close; delayed or throttled;
//!   `Content-Disposition`), a redirect, or a fixed status. One [`Fault`] per route breaks it,
//!   always or only [`When`] a condition holds.
//! * Routes can be added or replaced at any time ([`Route::then_after`] replaces one after N
//!   requests, mid-download); unknown paths get 404. `If-Range` is honoured against a route's
//!   `ETag` / `Last-Modified` headers.
//! * [`TestServer::stats`] counts connections, TLS handshakes and requests;
//!   [`TestServer::requests`] is the log of every request head, in arrival order.
//! * Dropping the server stops the listeners, shuts every open connection down and joins every
//!   thread, so nothing outlives the test.

use std::borrow::Cow;
use std::collections::HashMap;
use std::fmt::Write as _;
use std::io::{self, Read, Write};
use std::net::{Ipv4Addr, Ipv6Addr, Shutdown, SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use rustls::server::{ServerConfig, ServerConnection};
use rustls::{HandshakeKind, StreamOwned, SupportedProtocolVersion};

use super::SplitMix64;

/// How long a connection may sit idle (or blocked writing to a client that stopped reading)
/// before the server gives up on it. A safety net only; Drop does not wait for it.
const IO_TIMEOUT: Duration = Duration::from_secs(30);
/// Largest request head the server accepts before dropping the connection.
const MAX_REQUEST_HEAD: usize = 1 << 20;
/// Host name in the leaf certificate of [`ServerBuilder::tls_wrong_host`].
pub const WRONG_HOST: &str = "wrong-host.invalid";

/// Which TLS versions the server offers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TlsVersions {
    Both,
    Tls12Only,
    Tls13Only,
}

/// How a redirect chain writes its `Location` headers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Location {
    /// `Location: 3` (relative to the current path) between hops, the target as given at the end.
    Relative,
    /// `Location: http://127.0.0.1:PORT/...` everywhere.
    Absolute,
}

/// What a route does with a `Range` request header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ranges {
    /// 206 with `Content-Range` (and `Accept-Ranges: bytes`), 416 when unsatisfiable.
    Honour,
    /// Always 200 with the whole body; no `Accept-Ranges` header.
    Ignore,
    /// Always 200 with the whole body, and `Accept-Ranges: none`.
    Refuse,
    /// As `Honour`, but `If-Range` is not looked at: a range is answered whatever version the
    /// client holds (a server that splices two versions of a changed file).
    IgnoreIfRange,
}

/// How a body's end is marked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Framing {
    ContentLength,
    /// `Transfer-Encoding: chunked`, random chunk sizes, some chunk extensions, a trailer.
    Chunked,
    /// No `Content-Length`, `Connection: close`, the body ends at the close.
    CloseDelimited,
}

/// A way for a route to misbehave. Byte counts are body bytes as sent on the wire (for chunked
/// framing that includes the chunk lines), counted per response.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// Send this many body bytes, then close cleanly (TLS close_notify, FIN).
    TruncateAfter(u64),
    /// Send this many body bytes (about: unsent ones are lost), then reset (SO_LINGER 0, close).
    ResetAfter(u64),
    /// Send this many body bytes, then close with a FIN but no TLS close_notify: the truncation
    /// anyone on the path can cause. On plain HTTP the same as [`Fault::TruncateAfter`].
    TruncateWithoutCloseNotify(u64),
    /// Answer a range request with a 206 for a different range (consistent bytes and header).
    WrongContentRange,
    /// Answer a range request with a 206 whose Content-Range cannot be read (`bytes xx`), and
    /// the bytes asked for.
    MalformedContentRange,
    /// A response head over 64 KiB (padding headers), then the normal body.
    HugeHead,
    /// Chunked framing whose second chunk-size line is not hex; then close.
    BadChunkSize,
    /// Claim this many more bytes than exist (Content-Length and Content-Range total); send the
    /// real ones and close.
    ContentLengthLie(u64),
    /// Send this many body bytes, then go silent with the connection open until the server
    /// stops (or [`STALL_LIMIT`] passes); then close. For clients' read timeouts.
    StallAfter(u64),
    /// Answer `503 Service Unavailable` instead of the body, with `Retry-After: N` when given.
    Unavailable(Option<u32>),
    /// After the body, wait this many milliseconds (0: in the body's last write), then send a
    /// whole response more that nobody asked for ([`EXCESS_RESPONSE`]) and keep the connection:
    /// bytes past the framing.
    Excess(u64),
}

/// What [`Fault::Excess`] sends after a body.
pub const EXCESS_RESPONSE: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Length: 7\r\n\r\nGARBAGE";

/// How long a [`Fault::StallAfter`] connection stays silent at most (Drop ends it at once).
pub const STALL_LIMIT: Duration = Duration::from_secs(60);

/// When a route's fault applies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum When {
    Always,
    /// Only the route's Nth request (1-based, counted per route since it was mounted).
    Request(usize),
    /// Only requests with a `Range` header starting after byte 0: segment requests, not the
    /// first request of a download (whether that sends no Range or `bytes=0-`).
    SegmentRequests,
    /// The route's first N requests (1-based, counted per route since it was mounted).
    FirstRequests(usize),
}

#[derive(Debug, Clone)]
enum Kind {
    Body(Arc<Vec<u8>>),
    Redirect { status: u16, location: String },
    Status(u16),
}

/// What the server does for one path. Built with [`Route::bytes`], [`Route::redirect`] or
/// [`Route::status`], then adjusted with the builder methods.
#[derive(Debug, Clone)]
pub struct Route {
    kind: Kind,
    ranges: Ranges,
    framing: Framing,
    head_delay: Duration,
    throttle: Option<(usize, Duration)>,
    headers: Vec<(String, String)>,
    fault: Option<(Fault, When)>,
    /// After this many requests, the rest are served by the other route.
    then: Option<(usize, Box<Route>)>,
    /// Requests without this header holding this text are answered with this status instead.
    gate: Option<(String, String, u16)>,
    /// TLS: a key update (asking the client for one too) between the body's pieces.
    key_updates: bool,
    /// Over TLS, a close-delimited body ends with close_notify, and the connection stays open
    /// until the client's close_notify (or its close), as OpenSSL servers calling
    /// `SSL_shutdown()` twice do.
    notify_then_wait: bool,
}

impl Route {
    /// Serve `data`: 200, or 206/416 for Range requests; keep-alive; Content-Length framing.
    pub fn bytes(data: impl Into<Arc<Vec<u8>>>) -> Route {
        Route::with_kind(Kind::Body(data.into()))
    }

    /// Answer with `status` (301, 302, 303, 307, 308) and `Location: location`, taken verbatim.
    pub fn redirect(status: u16, location: impl Into<String>) -> Route {
        Route::with_kind(Kind::Redirect {
            status,
            location: location.into(),
        })
    }

    /// Answer with `status` and a one-line text body.
    pub fn status(status: u16) -> Route {
        Route::with_kind(Kind::Status(status))
    }

    fn with_kind(kind: Kind) -> Route {
        Route {
            kind,
            ranges: Ranges::Honour,
            framing: Framing::ContentLength,
            head_delay: Duration::ZERO,
            throttle: None,
            headers: Vec::new(),
            fault: None,
            then: None,
            gate: None,
            key_updates: false,
            notify_then_wait: false,
        }
    }

    /// Answer `status` (a 401 with `WWW-Authenticate: Basic`) to every request whose header
    /// `name` does not contain `text`: a route that needs a password or a cookie.
    pub fn require(mut self, name: &str, text: &str, status: u16) -> Route {
        self.gate = Some((name.to_string(), text.to_string(), status));
        self
    }

    /// Needs Basic credentials `user:password`.
    pub fn basic_auth(self, user: &str, password: &str) -> Route {
        use base64::Engine as _;
        let token = base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"));
        self.require("Authorization", &format!("Basic {token}"), 401)
    }

    /// Ignore Range headers: 200 with the whole body every time.
    pub fn no_ranges(mut self) -> Route {
        self.ranges = Ranges::Ignore;
        self
    }

    /// Like [`Route::no_ranges`], and say so with `Accept-Ranges: none`.
    pub fn accept_ranges_none(mut self) -> Route {
        self.ranges = Ranges::Refuse;
        self
    }

    /// Answer every Range with a 206, whatever `If-Range` says.
    pub fn ignore_if_range(mut self) -> Route {
        self.ranges = Ranges::IgnoreIfRange;
        self
    }

    pub fn chunked(mut self) -> Route {
        self.framing = Framing::Chunked;
        self
    }

    /// A close-delimited body whose end over TLS is a close_notify the server then waits to see
    /// answered before it closes TCP (`Stats::client_close_notifies` counts the answers).
    pub fn close_notify_then_wait(mut self) -> Route {
        self.framing = Framing::CloseDelimited;
        self.notify_then_wait = true;
        self
    }

    pub fn close_delimited(mut self) -> Route {
        self.framing = Framing::CloseDelimited;
        self
    }

    /// Wait this long after reading the request before sending the response head.
    pub fn delay_head(mut self, delay: Duration) -> Route {
        self.head_delay = delay;
        self
    }

    /// Over TLS, move to new traffic keys between the body's pieces (see [`Route::throttle`]), and
    /// ask the client to do the same.
    pub fn key_updates(mut self) -> Route {
        self.key_updates = true;
        self
    }

    /// Send the body `piece` bytes at a time with `pause` between pieces.
    pub fn throttle(mut self, piece: usize, pause: Duration) -> Route {
        self.throttle = Some((piece.max(1), pause));
        self
    }

    /// `Content-Disposition: value`.
    pub fn content_disposition(self, value: &str) -> Route {
        self.header("Content-Disposition", value)
    }

    /// Any extra response header.
    pub fn header(mut self, name: &str, value: &str) -> Route {
        self.headers.push((name.to_string(), value.to_string()));
        self
    }

    pub fn fault(mut self, fault: Fault, when: When) -> Route {
        self.fault = Some((fault, when));
        self
    }

    /// Serve the first `requests` requests as this route, and every later one as `next` (whose
    /// own request count, for [`When::Request`] and [`When::FirstRequests`], starts after them):
    /// a file that changes on the server in the middle of a download.
    pub fn then_after(mut self, requests: usize, next: Route) -> Route {
        self.then = Some((requests, Box::new(next)));
        self
    }
}

/// Counters since the server started.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Stats {
    /// TCP connections accepted.
    pub connections: u64,
    /// TLS handshakes completed (full and resumed).
    pub tls_handshakes: u64,
    /// Of those, resumed ones.
    pub tls_resumed: u64,
    /// TLS handshakes that failed (e.g. the client rejected the certificate).
    pub tls_failures: u64,
    /// Request heads read.
    pub requests: u64,
    /// close_notify alerts from TLS clients: ending a kept-alive connection, or after the
    /// server's own close (`Route::close_notify_then_wait` waits for it).
    pub client_close_notifies: u64,
}

/// One request head as the server read it.
#[derive(Debug, Clone)]
pub struct RequestRecord {
    /// Connection id, 1-based in accept order.
    pub conn: u64,
    pub method: String,
    /// The request target as sent (path and query).
    pub path: String,
    pub headers: Vec<(String, String)>,
}

impl RequestRecord {
    /// The first header called `name` (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// The `Range: bytes=a-b` / `bytes=a-` header as (a, Some(b) / None); None without one or
    /// for suffix and multi-range forms.
    pub fn range(&self) -> Option<(u64, Option<u64>)> {
        match parse_range(self.header("Range")?)? {
            RangeSpec::From(a, b) => Some((a, b)),
            RangeSpec::Suffix(_) => None,
        }
    }
}

/// Configures a [`TestServer`] before it starts.
#[derive(Debug, Clone)]
pub struct ServerBuilder {
    tls: bool,
    leaf_names: Vec<String>,
    versions: TlsVersions,
    ipv4_only: bool,
    client_auth: bool,
    self_signed: bool,
}

impl ServerBuilder {
    /// Serve HTTPS, and require a client certificate signed by the test CA (see
    /// [`TestServer::client_identity`]).
    pub fn tls_client_auth(mut self) -> ServerBuilder {
        self.tls = true;
        self.client_auth = true;
        self
    }

    /// Serve HTTPS with a leaf for `localhost`, `127.0.0.1` and `::1`.
    pub fn tls(mut self) -> ServerBuilder {
        self.tls = true;
        self
    }

    /// Serve HTTPS with a self-signed leaf that says it is a CA (what `openssl req -x509` makes by
    /// default), trusted only through its own file ([`TestServer::leaf_file`]).
    pub fn tls_self_signed(mut self) -> ServerBuilder {
        self.tls = true;
        self.self_signed = true;
        self
    }

    /// Serve HTTPS with a leaf (signed by the same CA) valid only for [`WRONG_HOST`].
    pub fn tls_wrong_host(mut self) -> ServerBuilder {
        self.tls = true;
        self.leaf_names = vec![WRONG_HOST.to_string()];
        self
    }

    pub fn tls_versions(mut self, versions: TlsVersions) -> ServerBuilder {
        self.versions = versions;
        self
    }

    /// Listen on 127.0.0.1 only, leaving the port free on [::1] (connections there are refused).
    pub fn ipv4_only(mut self) -> ServerBuilder {
        self.ipv4_only = true;
        self
    }

    pub fn start(self) -> TestServer {
        TestServer::start(self)
    }
}

/// See the module documentation.
pub struct TestServer {
    shared: Arc<Shared>,
    port: u16,
    has_v6: bool,
    pki: Option<Pki>,
    acceptors: Vec<(SocketAddr, JoinHandle<()>)>,
}

struct Pki {
    ca_der: CertificateDer<'static>,
    ca_file: PathBuf,
    leaf_file: PathBuf,
    /// A client certificate signed by the CA, and its key (PEM files).
    client: (PathBuf, PathBuf),
    _dir: tempfile::TempDir,
}

struct Shared {
    routes: Mutex<HashMap<String, Arc<Mounted>>>,
    stop: AtomicBool,
    connections: AtomicU64,
    tls_handshakes: AtomicU64,
    tls_resumed: AtomicU64,
    tls_failures: AtomicU64,
    client_close_notifies: AtomicU64,
    requests: AtomicU64,
    log: Mutex<Vec<RequestRecord>>,
    /// A clone of every open connection's socket, so Drop can shut them down.
    live: Mutex<HashMap<u64, TcpStream>>,
    workers: Mutex<Vec<JoinHandle<()>>>,
}

struct Mounted {
    route: Route,
    hits: AtomicUsize,
}

/// A poisoned lock only means another server thread panicked; the data is still usable and the
/// panic is reported on its own.
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl TestServer {
    pub fn builder() -> ServerBuilder {
        ServerBuilder {
            tls: false,
            leaf_names: vec!["localhost".into(), "127.0.0.1".into(), "::1".into()],
            versions: TlsVersions::Both,
            ipv4_only: false,
            client_auth: false,
            self_signed: false,
        }
    }

    /// A plain HTTP server.
    pub fn plain() -> TestServer {
        TestServer::builder().start()
    }

    /// An HTTPS server with a valid certificate for loopback (see [`TestServer::ca_file`]).
    pub fn https() -> TestServer {
        TestServer::builder().tls().start()
    }

    fn start(b: ServerBuilder) -> TestServer {
        let (pki, config) = if b.tls {
            let (pki, config) = make_pki(&b.leaf_names, b.versions, b.client_auth, b.self_signed);
            (Some(pki), Some(config))
        } else {
            (None, None)
        };
        let v4 = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).expect("bind 127.0.0.1:0");
        let port = v4.local_addr().expect("local_addr").port();
        // Best effort: the same port on ::1, so `localhost` works whichever address it resolves to.
        let v6 = if b.ipv4_only {
            None
        } else {
            TcpListener::bind((Ipv6Addr::LOCALHOST, port)).ok()
        };
        let has_v6 = v6.is_some();

        let shared = Arc::new(Shared {
            routes: Mutex::new(HashMap::new()),
            stop: AtomicBool::new(false),
            connections: AtomicU64::new(0),
            tls_handshakes: AtomicU64::new(0),
            tls_resumed: AtomicU64::new(0),
            tls_failures: AtomicU64::new(0),
            client_close_notifies: AtomicU64::new(0),
            requests: AtomicU64::new(0),
            log: Mutex::new(Vec::new()),
            live: Mutex::new(HashMap::new()),
            workers: Mutex::new(Vec::new()),
        });
        let mut acceptors = Vec::new();
        for listener in std::iter::once(v4).chain(v6) {
            let addr = listener.local_addr().expect("local_addr");
            let shared = Arc::clone(&shared);
            let config = config.clone();
            let handle = thread::Builder::new()
                .name(format!("test-server-accept-{addr}"))
                .spawn(move || accept_loop(listener, shared, config))
                .expect("spawn acceptor");
            acceptors.push((addr, handle));
        }
        TestServer {
            shared,
            port,
            has_v6,
            pki,
            acceptors,
        }
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    pub fn is_tls(&self) -> bool {
        self.pki.is_some()
    }

    /// A ringdl command line for this server: `--no-conf -d DIR [--ca-certificate=CA]`, then
    /// `opts`, then `urls`.
    pub fn args(&self, dir: &super::TestDir, opts: &[&str], urls: &[String]) -> Vec<String> {
        let mut v = vec!["--no-conf".to_string(), "-d".into(), dir.arg()];
        if self.is_tls() {
            v.push(format!("--ca-certificate={}", self.ca_file().display()));
        }
        v.extend(opts.iter().map(|s| s.to_string()));
        v.extend(urls.iter().cloned());
        v
    }

    pub fn scheme(&self) -> &'static str {
        if self.is_tls() {
            "https"
        } else {
            "http"
        }
    }

    /// The IPv4 address the server listens on.
    pub fn addr(&self) -> SocketAddr {
        SocketAddr::from((Ipv4Addr::LOCALHOST, self.port))
    }

    /// Whether the server also listens on [::1].
    pub fn has_ipv6(&self) -> bool {
        self.has_v6
    }

    /// `scheme://127.0.0.1:PORT` + `path` (which should start with `/`).
    pub fn url(&self, path: &str) -> String {
        format!("{}://127.0.0.1:{}{}", self.scheme(), self.port, path)
    }

    /// `scheme://[::1]:PORT` + `path`. Panics when [`TestServer::has_ipv6`] is false.
    pub fn url_v6(&self, path: &str) -> String {
        assert!(self.has_v6, "the test server is not listening on [::1]");
        format!("{}://[::1]:{}{}", self.scheme(), self.port, path)
    }

    /// `scheme://localhost:PORT` + `path`.
    pub fn url_localhost(&self, path: &str) -> String {
        format!("{}://localhost:{}{}", self.scheme(), self.port, path)
    }

    /// PEM file of the CA that signed the server's certificate. Panics on a plain server.
    /// The client certificate and key files the server accepts (with `tls_client_auth`).
    pub fn client_identity(&self) -> (&Path, &Path) {
        let pki = self
            .pki
            .as_ref()
            .expect("client_identity() on a plain-HTTP test server");
        (&pki.client.0, &pki.client.1)
    }

    /// The server's own certificate (PEM), for pinning it with `--ca-certificate`.
    pub fn leaf_file(&self) -> &Path {
        &self
            .pki
            .as_ref()
            .expect("leaf_file() on a plain-HTTP test server")
            .leaf_file
    }

    pub fn ca_file(&self) -> &Path {
        &self
            .pki
            .as_ref()
            .expect("ca_file() on a plain-HTTP test server")
            .ca_file
    }

    /// The CA certificate, for in-process rustls clients.
    pub fn ca_der(&self) -> CertificateDer<'static> {
        self.pki
            .as_ref()
            .expect("ca_der() on a plain-HTTP test server")
            .ca_der
            .clone()
    }

    /// Mount (or replace) `route` at `path`. A request matches on its full target first, then on
    /// the target without its query.
    pub fn route(&self, path: &str, route: Route) -> &TestServer {
        let mounted = Arc::new(Mounted {
            route,
            hits: AtomicUsize::new(0),
        });
        lock(&self.shared.routes).insert(path.to_string(), mounted);
        self
    }

    /// Mount `hops` redirects `/{name}/0` -> `/{name}/1` -> ... -> `target` and return the first
    /// path (or `target` itself when `hops` is 0). Statuses cycle through 301, 302, 303, 307, 308.
    /// `target` is used verbatim in the last hop's `Location` with [`Location::Relative`], and
    /// made a full URL (if it is a path) with [`Location::Absolute`].
    pub fn redirect_chain(&self, name: &str, hops: usize, target: &str, style: Location) -> String {
        const STATUSES: [u16; 5] = [301, 302, 303, 307, 308];
        for i in 0..hops {
            let next = if i + 1 == hops {
                match style {
                    Location::Absolute if target.starts_with('/') => self.url(target),
                    _ => target.to_string(),
                }
            } else {
                match style {
                    Location::Relative => format!("{}", i + 1),
                    Location::Absolute => self.url(&format!("/{name}/{}", i + 1)),
                }
            };
            self.route(
                &format!("/{name}/{i}"),
                Route::redirect(STATUSES[i % 5], next),
            );
        }
        if hops == 0 {
            target.to_string()
        } else {
            format!("/{name}/0")
        }
    }

    pub fn stats(&self) -> Stats {
        let s = &self.shared;
        Stats {
            connections: s.connections.load(Ordering::SeqCst),
            tls_handshakes: s.tls_handshakes.load(Ordering::SeqCst),
            tls_resumed: s.tls_resumed.load(Ordering::SeqCst),
            tls_failures: s.tls_failures.load(Ordering::SeqCst),
            requests: s.requests.load(Ordering::SeqCst),
            client_close_notifies: s.client_close_notifies.load(Ordering::SeqCst),
        }
    }

    /// Every request head read so far, in arrival order.
    pub fn requests(&self) -> Vec<RequestRecord> {
        lock(&self.shared.log).clone()
    }

    /// The requests whose target, without its query, is `path`.
    pub fn requests_to(&self, path: &str) -> Vec<RequestRecord> {
        self.requests()
            .into_iter()
            .filter(|r| strip_query(&r.path) == path)
            .collect()
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::SeqCst);
        for (addr, handle) in self.acceptors.drain(..) {
            // Wake the blocking accept(); it sees the stop flag and returns.
            let _ = TcpStream::connect_timeout(&addr, Duration::from_secs(1));
            let _ = handle.join();
        }
        for stream in lock(&self.shared.live).values() {
            let _ = stream.shutdown(Shutdown::Both);
        }
        let workers = std::mem::take(&mut *lock(&self.shared.workers));
        for w in workers {
            let _ = w.join();
        }
    }
}

fn make_pki(
    leaf_names: &[String],
    versions: TlsVersions,
    client_auth: bool,
    self_signed: bool,
) -> (Pki, Arc<ServerConfig>) {
    use rcgen::{
        BasicConstraints, CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose,
        IsCa, KeyPair, KeyUsagePurpose,
    };
    let ca_key = KeyPair::generate().expect("CA key");
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).expect("CA params");
    ca_params.distinguished_name = DistinguishedName::new();
    ca_params
        .distinguished_name
        .push(DnType::CommonName, "ringdl test CA");
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca_params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
    let ca = ca_params.self_signed(&ca_key).expect("CA certificate");

    let leaf_key = KeyPair::generate().expect("leaf key");
    let mut leaf_params = CertificateParams::new(leaf_names.to_vec()).expect("leaf params");
    leaf_params.distinguished_name = DistinguishedName::new();
    leaf_params
        .distinguished_name
        .push(DnType::CommonName, leaf_names[0].as_str());
    leaf_params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
    leaf_params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    let leaf = if self_signed {
        leaf_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        leaf_params
            .self_signed(&leaf_key)
            .expect("self-signed leaf")
    } else {
        leaf_params.use_authority_key_identifier_extension = true;
        leaf_params
            .signed_by(&leaf_key, &ca, &ca_key)
            .expect("leaf certificate")
    };

    let dir = tempfile::Builder::new()
        .prefix("ringdl-test-pki-")
        .tempdir()
        .expect("pki dir");
    let ca_file = dir.path().join("ca.pem");
    std::fs::write(&ca_file, ca.pem()).expect("write ca.pem");
    let leaf_file = dir.path().join("leaf.pem");
    std::fs::write(&leaf_file, leaf.pem()).expect("write leaf.pem");

    let client_key = KeyPair::generate().expect("client key");
    let mut client_params = CertificateParams::new(Vec::<String>::new()).expect("client params");
    client_params.distinguished_name = DistinguishedName::new();
    client_params
        .distinguished_name
        .push(DnType::CommonName, "ringdl test client");
    client_params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
    client_params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
    client_params.use_authority_key_identifier_extension = true;
    let client_cert = client_params
        .signed_by(&client_key, &ca, &ca_key)
        .expect("client certificate");
    let client = (dir.path().join("client.pem"), dir.path().join("client.key"));
    std::fs::write(&client.0, client_cert.pem()).expect("write client.pem");
    std::fs::write(&client.1, client_key.serialize_pem()).expect("write client.key");

    let protocol_versions: &[&'static SupportedProtocolVersion] = match versions {
        TlsVersions::Both => &[&rustls::version::TLS13, &rustls::version::TLS12],
        TlsVersions::Tls12Only => &[&rustls::version::TLS12],
        TlsVersions::Tls13Only => &[&rustls::version::TLS13],
    };
    let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(leaf_key.serialize_der()));
    let builder = ServerConfig::builder_with_protocol_versions(protocol_versions);
    let builder = if client_auth {
        let mut roots = rustls::RootCertStore::empty();
        roots.add(ca.der().clone()).expect("client CA");
        let verifier = rustls::server::WebPkiClientVerifier::builder(Arc::new(roots))
            .build()
            .expect("client verifier");
        builder.with_client_cert_verifier(verifier)
    } else {
        builder.with_no_client_auth()
    };
    let config = builder
        .with_single_cert(vec![leaf.der().clone()], key)
        .expect("server config");
    let pki = Pki {
        ca_der: ca.der().clone(),
        ca_file,
        leaf_file,
        client,
        _dir: dir,
    };
    (pki, Arc::new(config))
}

fn accept_loop(listener: TcpListener, shared: Arc<Shared>, tls: Option<Arc<ServerConfig>>) {
    for incoming in listener.incoming() {
        if shared.stop.load(Ordering::SeqCst) {
            return;
        }
        let tcp = match incoming {
            Ok(tcp) => tcp,
            Err(_) => {
                // EMFILE and friends: back off instead of spinning.
                thread::sleep(Duration::from_millis(10));
                continue;
            }
        };
        let id = shared.connections.fetch_add(1, Ordering::SeqCst) + 1;
        let Ok(clone) = tcp.try_clone() else { continue };
        lock(&shared.live).insert(id, clone);
        let worker_shared = Arc::clone(&shared);
        let tls = tls.clone();
        let spawned = thread::Builder::new()
            .name(format!("test-server-conn-{id}"))
            .spawn(move || serve_connection(worker_shared, id, tcp, tls));
        let mut workers = lock(&shared.workers);
        workers.retain(|w| !w.is_finished());
        match spawned {
            Ok(handle) => workers.push(handle),
            Err(_) => {
                lock(&shared.live).remove(&id);
            }
        }
    }
}

enum Conn {
    Plain(TcpStream),
    Tls(Box<StreamOwned<ServerConnection, TcpStream>>),
}

impl Conn {
    fn tcp(&self) -> &TcpStream {
        match self {
            Conn::Plain(s) => s,
            Conn::Tls(s) => &s.sock,
        }
    }
}

impl Read for Conn {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Conn::Plain(s) => s.read(buf),
            Conn::Tls(s) => s.read(buf),
        }
    }
}

impl Write for Conn {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Conn::Plain(s) => s.write(buf),
            Conn::Tls(s) => s.write(buf),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match self {
            Conn::Plain(s) => s.flush(),
            Conn::Tls(s) => s.flush(),
        }
    }
}

/// What to do with a connection after a response.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum After {
    KeepAlive,
    Close,
    /// Close without a TLS close_notify.
    CloseWithoutNotify,
    /// Send close_notify, then wait for the client's before closing.
    NotifyThenWait,
    Reset,
}

fn serve_connection(shared: Arc<Shared>, id: u64, tcp: TcpStream, tls: Option<Arc<ServerConfig>>) {
    let _ = tcp.set_nodelay(true);
    let _ = tcp.set_read_timeout(Some(IO_TIMEOUT));
    let _ = tcp.set_write_timeout(Some(IO_TIMEOUT));
    let mut conn = match tls {
        None => Conn::Plain(tcp),
        Some(config) => match handshake(config, tcp, &shared) {
            Some(tls) => Conn::Tls(Box::new(tls)),
            None => {
                shared.tls_failures.fetch_add(1, Ordering::SeqCst);
                lock(&shared.live).remove(&id);
                return;
            }
        },
    };
    let after = request_loop(&shared, id, &mut conn);
    // The clone must go before the close below, or the socket would stay open through it.
    lock(&shared.live).remove(&id);
    finish(conn, after, &shared);
}

fn handshake(
    config: Arc<ServerConfig>,
    mut tcp: TcpStream,
    shared: &Shared,
) -> Option<StreamOwned<ServerConnection, TcpStream>> {
    let mut tls = ServerConnection::new(config).ok()?;
    while tls.is_handshaking() {
        if shared.stop.load(Ordering::SeqCst) {
            return None;
        }
        tls.complete_io(&mut tcp).ok()?;
    }
    shared.tls_handshakes.fetch_add(1, Ordering::SeqCst);
    if tls.handshake_kind() == Some(HandshakeKind::Resumed) {
        shared.tls_resumed.fetch_add(1, Ordering::SeqCst);
    }
    Some(StreamOwned::new(tls, tcp))
}

fn finish(mut conn: Conn, after: After, shared: &Shared) {
    let stop = &shared.stop;
    match after {
        After::NotifyThenWait => {
            let Conn::Tls(tls) = &mut conn else {
                return finish(conn, After::Close, shared);
            };
            tls.conn.send_close_notify();
            let _ = tls.flush();
            // No FIN: the client must end the body on the close_notify alone.
            drain_tls(tls, shared, Duration::from_secs(20));
        }
        After::Reset => {
            // Let the bytes already written reach the peer before the RST discards what is left.
            thread::sleep(Duration::from_millis(20));
            set_linger_zero(conn.tcp());
            drop(conn);
        }
        After::Close | After::KeepAlive | After::CloseWithoutNotify => {
            if let Conn::Tls(tls) = &mut conn {
                if after != After::CloseWithoutNotify {
                    tls.conn.send_close_notify();
                }
                let _ = tls.flush();
            }
            let _ = conn.tcp().shutdown(Shutdown::Write);
            // Drain what the client still sends (a close_notify, a request we will not answer)
            // so closing does not turn into a RST that could destroy the response in flight.
            if let Conn::Tls(tls) = &mut conn {
                drain_tls(tls, shared, Duration::from_secs(2));
                return;
            }
            let tcp = conn.tcp();
            let _ = tcp.set_read_timeout(Some(Duration::from_millis(100)));
            let deadline = Instant::now() + Duration::from_secs(2);
            let mut sink = [0u8; 4096];
            let mut raw = tcp;
            while Instant::now() < deadline && !stop.load(Ordering::SeqCst) {
                match raw.read(&mut sink) {
                    Ok(0) => break,
                    Ok(_) => continue,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                    Err(e)
                        if matches!(
                            e.kind(),
                            io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                        ) =>
                    {
                        continue
                    }
                    Err(_) => break,
                }
            }
        }
    }
}

/// Reads what a TLS client still sends after the response, until its close, its close_notify
/// (counted) or `limit`.
fn drain_tls(tls: &mut StreamOwned<ServerConnection, TcpStream>, shared: &Shared, limit: Duration) {
    let _ = tls.sock.set_read_timeout(Some(Duration::from_millis(100)));
    let deadline = Instant::now() + limit;
    while Instant::now() < deadline && !shared.stop.load(Ordering::SeqCst) {
        match tls.conn.read_tls(&mut tls.sock) {
            Ok(0) => break,
            Ok(_) => match tls.conn.process_new_packets() {
                Ok(state) if state.peer_has_closed() => {
                    shared.client_close_notifies.fetch_add(1, Ordering::SeqCst);
                    break;
                }
                Ok(_) => {
                    // Plaintext nobody will answer (a request after ours closed) is dropped.
                    let mut sink = [0u8; 4096];
                    while matches!(tls.conn.reader().read(&mut sink), Ok(1..)) {}
                }
                Err(_) => break,
            },
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock
                        | io::ErrorKind::TimedOut
                        | io::ErrorKind::Interrupted
                ) => {}
            Err(_) => break,
        }
    }
}

fn set_linger_zero(tcp: &TcpStream) {
    use std::os::fd::AsRawFd;
    let linger = libc::linger {
        l_onoff: 1,
        l_linger: 0,
    };
    // SAFETY: a valid socket fd owned by `tcp`, and a pointer/length pair describing `linger`.
    unsafe {
        libc::setsockopt(
            tcp.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_LINGER,
            &linger as *const libc::linger as *const libc::c_void,
            std::mem::size_of::<libc::linger>() as libc::socklen_t,
        );
    }
}

/// A parsed request head.
struct Request {
    record: RequestRecord,
    /// The client asked to close after this response (`Connection: close`, or HTTP/1.0
    /// without keep-alive).
    wants_close: bool,
    head_only: bool,
}

fn request_loop(shared: &Shared, id: u64, conn: &mut Conn) -> After {
    let mut buf = Vec::new();
    loop {
        let req = match read_request(conn, &mut buf, id) {
            Some(req) => req,
            None => {
                // A TLS stream that ends cleanly (rustls reads 0) ended with the client's
                // close_notify; a bare close is an error to rustls.
                if let Conn::Tls(tls) = conn {
                    if matches!(tls.read(&mut [0u8; 1]), Ok(0)) {
                        shared.client_close_notifies.fetch_add(1, Ordering::SeqCst);
                    }
                }
                return After::Close;
            }
        };
        shared.requests.fetch_add(1, Ordering::SeqCst);
        lock(&shared.log).push(req.record.clone());
        let after = match respond(shared, conn, &req) {
            Ok(after) => after,
            Err(_) => return After::Close,
        };
        if after != After::KeepAlive || req.wants_close || shared.stop.load(Ordering::SeqCst) {
            return after;
        }
    }
}

fn read_request(conn: &mut Conn, buf: &mut Vec<u8>, id: u64) -> Option<Request> {
    loop {
        let mut headers = [httparse::EMPTY_HEADER; 128];
        let mut parsed = httparse::Request::new(&mut headers);
        match parsed.parse(buf) {
            Ok(httparse::Status::Complete(len)) => {
                let record = RequestRecord {
                    conn: id,
                    method: parsed.method.unwrap_or("").to_string(),
                    path: parsed.path.unwrap_or("").to_string(),
                    headers: parsed
                        .headers
                        .iter()
                        .map(|h| {
                            (
                                h.name.to_string(),
                                String::from_utf8_lossy(h.value).into_owned(),
                            )
                        })
                        .collect(),
                };
                let connection = record
                    .header("Connection")
                    .unwrap_or("")
                    .to_ascii_lowercase();
                let wants_close = connection.contains("close")
                    || (parsed.version == Some(0) && !connection.contains("keep-alive"));
                let head_only = record.method == "HEAD";
                buf.drain(..len);
                return Some(Request {
                    record,
                    wants_close,
                    head_only,
                });
            }
            Ok(httparse::Status::Partial) if buf.len() < MAX_REQUEST_HEAD => {}
            _ => return None,
        }
        let mut chunk = [0u8; 8192];
        match conn.read(&mut chunk) {
            Ok(0) => return None,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => return None,
        }
    }
}

fn strip_query(target: &str) -> &str {
    target.split_once('?').map_or(target, |(p, _)| p)
}

/// The path of a request target: an absolute-form target (what a client sends an HTTP proxy,
/// `GET http://host/path`, or `GET ftp://host/path` for a proxy that fetches FTP) is routed by
/// its path, so the server also serves as a forward proxy whose requests tests can read as sent.
fn origin_form(target: &str) -> &str {
    match target.split_once("://") {
        Some((scheme, rest))
            if scheme.eq_ignore_ascii_case("http") || scheme.eq_ignore_ascii_case("ftp") =>
        {
            rest.find('/').map_or("/", |i| &rest[i..])
        }
        _ => target,
    }
}

fn respond(shared: &Shared, conn: &mut Conn, req: &Request) -> io::Result<After> {
    let target = origin_form(req.record.path.as_str());
    let mounted = {
        let routes = lock(&shared.routes);
        routes
            .get(target)
            .or_else(|| routes.get(strip_query(target)))
            .cloned()
    };
    let Some(mounted) = mounted else {
        return simple_response(conn, req, 404, &[]);
    };
    let mut hit = mounted.hits.fetch_add(1, Ordering::SeqCst) + 1;
    let mut route = &mounted.route;
    while let Some((after, next)) = &route.then {
        if hit <= *after {
            break;
        }
        hit -= after;
        route = next;
    }
    let fault = route.fault.and_then(|(fault, when)| {
        let applies = match when {
            When::Always => true,
            When::Request(n) => hit == n,
            When::SegmentRequests => req.record.range().is_some_and(|(start, _)| start > 0),
            When::FirstRequests(n) => hit <= n,
        };
        applies.then_some(fault)
    });
    sleep_unless_stopped(route.head_delay, &shared.stop);
    if let Some((name, text, status)) = &route.gate {
        if !req
            .record
            .header(name)
            .is_some_and(|v| v.contains(text.as_str()))
        {
            let mut headers = route.headers.clone();
            if *status == 401 {
                headers.push((
                    "WWW-Authenticate".to_string(),
                    "Basic realm=\"test\"".to_string(),
                ));
            }
            return simple_response(conn, req, *status, &headers);
        }
    }
    if let Some(Fault::Unavailable(retry_after)) = fault {
        let mut headers = route.headers.clone();
        if let Some(secs) = retry_after {
            headers.push(("Retry-After".to_string(), secs.to_string()));
        }
        return simple_response(conn, req, 503, &headers);
    }
    match &route.kind {
        Kind::Body(data) => body_response(shared, conn, req, route, data, fault, hit),
        Kind::Redirect { status, location } => {
            let mut headers = vec![("Location".to_string(), location.clone())];
            headers.extend(route.headers.iter().cloned());
            simple_response(conn, req, *status, &headers)
        }
        Kind::Status(status) => simple_response(conn, req, *status, &route.headers),
    }
}

fn sleep_unless_stopped(total: Duration, stop: &AtomicBool) {
    let deadline = Instant::now() + total;
    while !stop.load(Ordering::SeqCst) {
        let now = Instant::now();
        if now >= deadline {
            return;
        }
        thread::sleep((deadline - now).min(Duration::from_millis(10)));
    }
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        206 => "Partial Content",
        301 => "Moved Permanently",
        302 => "Found",
        303 => "See Other",
        307 => "Temporary Redirect",
        308 => "Permanent Redirect",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        416 => "Range Not Satisfiable",
        500 => "Internal Server Error",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        _ => "Unknown",
    }
}

fn write_head(conn: &mut Conn, status: u16, headers: &[(String, String)]) -> io::Result<()> {
    let mut head = format!("HTTP/1.1 {status} {}\r\n", reason(status));
    head.push_str("Server: ringdl-test-server\r\n");
    for (name, value) in headers {
        let _ = write!(head, "{name}: {value}\r\n");
    }
    head.push_str("\r\n");
    conn.write_all(head.as_bytes())?;
    conn.flush()
}

fn simple_response(
    conn: &mut Conn,
    req: &Request,
    status: u16,
    extra: &[(String, String)],
) -> io::Result<After> {
    let body = format!("{status} {}\n", reason(status));
    let mut headers = vec![
        ("Content-Type".to_string(), "text/plain".to_string()),
        ("Content-Length".to_string(), body.len().to_string()),
    ];
    headers.extend(extra.iter().cloned());
    write_head(conn, status, &headers)?;
    if !req.head_only {
        conn.write_all(body.as_bytes())?;
        conn.flush()?;
    }
    Ok(After::KeepAlive)
}

enum RangeSpec {
    From(u64, Option<u64>),
    Suffix(u64),
}

/// `bytes=a-b`, `bytes=a-`, `bytes=-n`; anything else (multi-range, garbage) is None.
fn parse_range(value: &str) -> Option<RangeSpec> {
    let spec = value.trim().strip_prefix("bytes=")?.trim();
    if spec.contains(',') {
        return None;
    }
    let (a, b) = spec.split_once('-')?;
    let (a, b) = (a.trim(), b.trim());
    if a.is_empty() {
        return Some(RangeSpec::Suffix(b.parse().ok()?));
    }
    let start: u64 = a.parse().ok()?;
    if b.is_empty() {
        return Some(RangeSpec::From(start, None));
    }
    let end: u64 = b.parse().ok()?;
    (end >= start).then_some(RangeSpec::From(start, Some(end)))
}

/// The byte range [start, end) a spec selects out of `total`, or None when unsatisfiable.
fn resolve(spec: &RangeSpec, total: u64) -> Option<(u64, u64)> {
    match *spec {
        RangeSpec::From(start, end) => {
            if start >= total {
                return None;
            }
            let end = end.map_or(total, |e| e.saturating_add(1).min(total));
            Some((start, end))
        }
        RangeSpec::Suffix(n) => (n > 0 && total > 0).then(|| (total - n.min(total), total)),
    }
}

/// RFC 9110 If-Range: without one the Range applies; with one, only when it equals the route's
/// `ETag` (strong comparison) or `Last-Modified` header exactly. Otherwise the whole body is sent.
fn if_range_holds(req: &Request, route: &Route) -> bool {
    let Some(condition) = req.record.header("If-Range") else {
        return true;
    };
    let condition = condition.trim();
    let validator = |name: &str| {
        route
            .headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.trim())
    };
    if condition.starts_with('"') || condition.starts_with("W/") {
        !condition.starts_with("W/") && validator("ETag") == Some(condition)
    } else {
        validator("Last-Modified") == Some(condition)
    }
}

/// A range of the same length as [start, end) that is not it.
fn different_range(start: u64, end: u64, total: u64) -> (u64, u64) {
    let len = end - start;
    if start > 0 {
        (0, len)
    } else if end < total {
        (1, end + 1)
    } else {
        (0, len.saturating_sub(1).max(1).min(total))
    }
}

fn body_response(
    shared: &Shared,
    conn: &mut Conn,
    req: &Request,
    route: &Route,
    data: &[u8],
    fault: Option<Fault>,
    hit: usize,
) -> io::Result<After> {
    let real_len = data.len() as u64;
    let advertised = match fault {
        Some(Fault::ContentLengthLie(extra)) => real_len + extra,
        _ => real_len,
    };
    let spec = match route.ranges {
        Ranges::Honour if if_range_holds(req, route) => {
            req.record.header("Range").and_then(parse_range)
        }
        Ranges::IgnoreIfRange => req.record.header("Range").and_then(parse_range),
        Ranges::Honour | Ranges::Ignore | Ranges::Refuse => None,
    };
    let mut headers: Vec<(String, String)> = Vec::new();
    match route.ranges {
        Ranges::Honour | Ranges::IgnoreIfRange => {
            headers.push(("Accept-Ranges".into(), "bytes".into()))
        }
        Ranges::Refuse => headers.push(("Accept-Ranges".into(), "none".into())),
        Ranges::Ignore => {}
    }
    let (status, start, end) = match &spec {
        None => (200, 0, advertised),
        Some(spec) => match resolve(spec, advertised) {
            None => {
                headers.push(("Content-Range".into(), format!("bytes */{advertised}")));
                headers.push(("Content-Length".into(), "0".into()));
                write_head(conn, 416, &headers)?;
                return Ok(After::KeepAlive);
            }
            Some((s, e)) if fault == Some(Fault::WrongContentRange) => {
                let (s, e) = different_range(s, e, advertised);
                (206, s, e)
            }
            Some((s, e)) => (206, s, e),
        },
    };
    if status == 206 && fault == Some(Fault::MalformedContentRange) {
        headers.push(("Content-Range".into(), "bytes xx".into()));
    } else if status == 206 {
        headers.push((
            "Content-Range".into(),
            format!("bytes {start}-{}/{advertised}", end - 1),
        ));
    }
    // A route's own Content-Type replaces the default one.
    if !route
        .headers
        .iter()
        .any(|(n, _)| n.eq_ignore_ascii_case("content-type"))
    {
        headers.push(("Content-Type".into(), "application/octet-stream".into()));
    }
    let framing = if fault == Some(Fault::BadChunkSize) {
        Framing::Chunked
    } else {
        route.framing
    };
    match framing {
        Framing::ContentLength => {
            headers.push(("Content-Length".into(), (end - start).to_string()))
        }
        Framing::Chunked => headers.push(("Transfer-Encoding".into(), "chunked".into())),
        Framing::CloseDelimited => headers.push(("Connection".into(), "close".into())),
    }
    headers.extend(route.headers.iter().cloned());
    if fault == Some(Fault::HugeHead) {
        let filler = "x".repeat(1000);
        for i in 0..70 {
            headers.push((format!("X-Filler-{i}"), filler.clone()));
        }
    }
    write_head(conn, status, &headers)?;
    if req.head_only {
        return Ok(if framing == Framing::CloseDelimited {
            After::Close
        } else {
            After::KeepAlive
        });
    }

    let real = &data[start.min(real_len) as usize..end.min(real_len) as usize];
    let clipped = (real.len() as u64) < end - start;
    let wire: Cow<[u8]> = match framing {
        Framing::Chunked => {
            let seed = 0x5eed ^ (hit as u64) ^ (start << 20);
            Cow::Owned(encode_chunked(
                real,
                seed,
                fault == Some(Fault::BadChunkSize),
                clipped,
            ))
        }
        _ => Cow::Borrowed(real),
    };
    let limit = match fault {
        Some(Fault::TruncateAfter(n))
        | Some(Fault::ResetAfter(n))
        | Some(Fault::StallAfter(n))
        | Some(Fault::TruncateWithoutCloseNotify(n)) => n.min(wire.len() as u64),
        _ => wire.len() as u64,
    };
    // Bytes past the framing sent at once leave in one write with the body's last bytes (over
    // TLS: in the same record).
    let (wire, tail): (&[u8], Cow<[u8]>) = match fault {
        Some(Fault::Excess(0)) => {
            let (body, last) =
                wire[..limit as usize].split_at((limit as usize).saturating_sub(1000));
            (body, Cow::Owned([last, EXCESS_RESPONSE].concat()))
        }
        _ => (&wire[..limit as usize], Cow::Borrowed(&[][..])),
    };
    send_body(conn, wire, route.throttle, route.key_updates, &shared.stop)?;
    if !tail.is_empty() {
        conn.write_all(&tail)?;
        conn.flush()?;
    }
    if let Some(Fault::StallAfter(_)) = fault {
        sleep_unless_stopped(STALL_LIMIT, &shared.stop);
        return Ok(After::Close);
    }
    if let Some(Fault::Excess(delay_ms @ 1..)) = fault {
        sleep_unless_stopped(Duration::from_millis(delay_ms), &shared.stop);
        conn.write_all(EXCESS_RESPONSE)?;
        conn.flush()?;
    }
    Ok(match fault {
        Some(Fault::ResetAfter(_)) => After::Reset,
        Some(Fault::TruncateWithoutCloseNotify(_)) => After::CloseWithoutNotify,
        Some(Fault::TruncateAfter(_)) | Some(Fault::BadChunkSize) => After::Close,
        _ if route.notify_then_wait && framing == Framing::CloseDelimited => After::NotifyThenWait,
        _ if clipped || framing == Framing::CloseDelimited => After::Close,
        _ => After::KeepAlive,
    })
}

/// Chunked encoding of `payload` with chunk sizes from 1 to 16 KiB, sizes in either hex case,
/// an extension on every third chunk and a trailer. With `bad_size`, the second size line is
/// garbage and nothing valid follows; with `unterminated`, the terminating chunk is left out.
fn encode_chunked(payload: &[u8], seed: u64, bad_size: bool, unterminated: bool) -> Vec<u8> {
    let mut rng = SplitMix64::new(seed);
    let mut out = Vec::with_capacity(payload.len() + payload.len() / 512 + 64);
    let mut pos = 0;
    let mut index = 0;
    while pos < payload.len() || (bad_size && index < 2) {
        if bad_size && index == 1 {
            out.extend_from_slice(b"zz-not-hex\r\nthis is not a chunk\r\n");
            return out;
        }
        let n = ((rng.next_u64() % 16384) as usize + 1).min(payload.len() - pos);
        if n == 0 {
            index += 1;
            continue;
        }
        let mut line = if index % 4 == 2 {
            format!("{n:X}")
        } else {
            format!("{n:x}")
        };
        if index % 3 == 1 {
            let _ = write!(line, ";ext{index}=\"v{index}\"");
        }
        line.push_str("\r\n");
        out.extend_from_slice(line.as_bytes());
        out.extend_from_slice(&payload[pos..pos + n]);
        out.extend_from_slice(b"\r\n");
        pos += n;
        index += 1;
    }
    if !unterminated {
        out.extend_from_slice(b"0;last=yes\r\nX-Trailer-Check: done\r\n\r\n");
    }
    out
}

fn send_body(
    conn: &mut Conn,
    body: &[u8],
    throttle: Option<(usize, Duration)>,
    key_updates: bool,
    stop: &AtomicBool,
) -> io::Result<()> {
    let (piece, pause) = throttle.unwrap_or((64 * 1024, Duration::ZERO));
    let mut pieces = body.chunks(piece).peekable();
    while let Some(p) = pieces.next() {
        if stop.load(Ordering::SeqCst) {
            return Err(io::Error::other("server stopping"));
        }
        conn.write_all(p)?;
        // Between pieces, not after the last: a record after the body's end leaves a kept-alive
        // connection unfit for reuse (the client cannot tell it from bytes past the framing).
        if let (true, Conn::Tls(tls), true) = (key_updates, &mut *conn, pieces.peek().is_some()) {
            tls.conn.refresh_traffic_keys().map_err(io::Error::other)?;
        }
        conn.flush()?;
        if !pause.is_zero() && pieces.peek().is_some() {
            sleep_unless_stopped(pause, stop);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    //! The server's own tests, with a minimal std client and a rustls client.

    use super::*;
    use crate::support::{content, sha256_hex};
    use rustls::pki_types::ServerName;
    use rustls::{ClientConfig, ClientConnection, RootCertStore};

    /// A response as read by the test client.
    #[derive(Debug)]
    struct Response {
        status: u16,
        headers: Vec<(String, String)>,
        head_len: usize,
        body: Vec<u8>,
        /// How the body read ended when it did not complete: an I/O error kind, or
        /// `UnexpectedEof` for a close before the framing said the body was done.
        cut: Option<io::ErrorKind>,
        /// The raw body bytes as they arrived (chunk lines included).
        raw_body: Vec<u8>,
    }

    impl Response {
        fn header(&self, name: &str) -> Option<&str> {
            self.headers
                .iter()
                .find(|(n, _)| n.eq_ignore_ascii_case(name))
                .map(|(_, v)| v.as_str())
        }
    }

    /// Reads one response from `stream`, keeping leftover bytes in `buf` for the next one.
    fn read_response(stream: &mut impl Read, buf: &mut Vec<u8>, head_only: bool) -> Response {
        let (status, headers, head_len) = loop {
            let mut hs = [httparse::EMPTY_HEADER; 200];
            let mut resp = httparse::Response::new(&mut hs);
            if let httparse::Status::Complete(n) = resp.parse(buf).expect("valid response head") {
                let headers = resp
                    .headers
                    .iter()
                    .map(|h| {
                        (
                            h.name.to_string(),
                            String::from_utf8_lossy(h.value).into_owned(),
                        )
                    })
                    .collect::<Vec<_>>();
                let status = resp.code.expect("status");
                buf.drain(..n);
                break (status, headers, n);
            }
            let mut chunk = [0u8; 16384];
            let n = stream.read(&mut chunk).expect("read head");
            assert!(n > 0, "EOF before the response head was complete");
            buf.extend_from_slice(&chunk[..n]);
        };
        let mut r = Response {
            status,
            headers,
            head_len,
            body: vec![],
            cut: None,
            raw_body: vec![],
        };
        if head_only || status == 416 && r.header("Content-Length") == Some("0") {
            return r;
        }
        let chunked = r
            .header("Transfer-Encoding")
            .is_some_and(|v| v.contains("chunked"));
        let length: Option<usize> = r.header("Content-Length").map(|v| v.parse().unwrap());
        // Read until the framing says the body is complete, or the stream ends.
        loop {
            if let Some(len) = length {
                if !chunked && buf.len() >= len {
                    r.raw_body = buf.drain(..len).collect();
                    r.body = r.raw_body.clone();
                    return r;
                }
            }
            if chunked {
                match decode_chunked(buf) {
                    Ok(Some((body, used))) => {
                        r.raw_body = buf.drain(..used).collect();
                        r.body = body;
                        return r;
                    }
                    Ok(None) => {}
                    Err(()) => {
                        r.raw_body = std::mem::take(buf);
                        r.cut = Some(io::ErrorKind::InvalidData);
                        return r;
                    }
                }
            }
            let mut chunk = [0u8; 65536];
            match stream.read(&mut chunk) {
                Ok(0) => {
                    r.raw_body = std::mem::take(buf);
                    r.body = r.raw_body.clone();
                    if length.is_some() || chunked {
                        r.cut = Some(io::ErrorKind::UnexpectedEof);
                    }
                    return r;
                }
                Ok(n) => buf.extend_from_slice(&chunk[..n]),
                Err(e) => {
                    r.raw_body = std::mem::take(buf);
                    r.body = r.raw_body.clone();
                    r.cut = Some(e.kind());
                    return r;
                }
            }
        }
    }

    /// Ok(Some((payload, bytes used))) once the whole chunked body (with trailer) is in `buf`,
    /// Ok(None) when more is needed, Err on a malformed size line.
    fn decode_chunked(buf: &[u8]) -> Result<Option<(Vec<u8>, usize)>, ()> {
        let mut pos = 0;
        let mut body = Vec::new();
        loop {
            let Some(eol) = find(&buf[pos..], b"\r\n") else {
                return Ok(None);
            };
            let line = std::str::from_utf8(&buf[pos..pos + eol]).map_err(|_| ())?;
            let size_text = line.split(';').next().unwrap_or("").trim();
            let size = usize::from_str_radix(size_text, 16).map_err(|_| ())?;
            pos += eol + 2;
            if size == 0 {
                // Trailer fields, then an empty line.
                loop {
                    let Some(eol) = find(&buf[pos..], b"\r\n") else {
                        return Ok(None);
                    };
                    pos += eol + 2;
                    if eol == 0 {
                        return Ok(Some((body, pos)));
                    }
                }
            }
            if buf.len() < pos + size + 2 {
                return Ok(None);
            }
            body.extend_from_slice(&buf[pos..pos + size]);
            if &buf[pos + size..pos + size + 2] != b"\r\n" {
                return Err(());
            }
            pos += size + 2;
        }
    }

    fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
        hay.windows(needle.len()).position(|w| w == needle)
    }

    fn connect(server: &TestServer) -> TcpStream {
        let s = TcpStream::connect(server.addr()).expect("connect");
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        s
    }

    fn send(stream: &mut impl Write, method: &str, path: &str, extra: &[&str]) {
        let mut req = format!("{method} {path} HTTP/1.1\r\nHost: test\r\n");
        for h in extra {
            req.push_str(h);
            req.push_str("\r\n");
        }
        req.push_str("\r\n");
        stream.write_all(req.as_bytes()).unwrap();
        stream.flush().unwrap();
    }

    /// One request on a fresh plain connection.
    fn get(server: &TestServer, path: &str, extra: &[&str]) -> Response {
        let mut s = connect(server);
        send(&mut s, "GET", path, extra);
        read_response(&mut s, &mut Vec::new(), false)
    }

    fn tls_client(
        server: &TestServer,
        versions: &[&'static SupportedProtocolVersion],
    ) -> Arc<ClientConfig> {
        let mut roots = RootCertStore::empty();
        roots.add(server.ca_der()).unwrap();
        Arc::new(
            ClientConfig::builder_with_protocol_versions(versions)
                .with_root_certificates(roots)
                .with_no_client_auth(),
        )
    }

    fn tls_connect(
        server: &TestServer,
        config: &Arc<ClientConfig>,
        name: &str,
    ) -> StreamOwned<ClientConnection, TcpStream> {
        let name = ServerName::try_from(name.to_string()).unwrap();
        let conn = ClientConnection::new(Arc::clone(config), name).unwrap();
        StreamOwned::new(conn, connect(server))
    }

    #[test]
    fn serves_whole_body_and_head() {
        let server = TestServer::plain();
        let data = content(1, 100_000);
        server.route("/f.bin", Route::bytes(data.clone()));
        let r = get(&server, "/f.bin", &[]);
        assert_eq!(r.status, 200);
        assert_eq!(r.header("Content-Length"), Some("100000"));
        assert_eq!(r.header("Accept-Ranges"), Some("bytes"));
        assert_eq!(sha256_hex(&r.body), sha256_hex(&data));

        let mut s = connect(&server);
        send(&mut s, "HEAD", "/f.bin", &[]);
        let h = read_response(&mut s, &mut Vec::new(), true);
        assert_eq!(h.status, 200);
        assert_eq!(h.header("Content-Length"), Some("100000"));

        assert_eq!(get(&server, "/nothing-here", &[]).status, 404);
        let log = server.requests();
        assert_eq!(log.len(), 3);
        assert_eq!(log[1].method, "HEAD");
        assert_eq!(log[0].header("host"), Some("test"));
    }

    #[test]
    fn empty_body() {
        let server = TestServer::plain();
        server.route("/empty", Route::bytes(Vec::new()));
        let r = get(&server, "/empty", &[]);
        assert_eq!(
            (r.status, r.header("Content-Length"), r.body.len()),
            (200, Some("0"), 0)
        );
        let r = get(&server, "/empty", &["Range: bytes=0-"]);
        assert_eq!(r.status, 416);
    }

    #[test]
    fn range_responses() {
        let server = TestServer::plain();
        let data = content(2, 10_000);
        server.route("/f", Route::bytes(data.clone()));

        let r = get(&server, "/f", &["Range: bytes=100-199"]);
        assert_eq!(r.status, 206);
        assert_eq!(r.header("Content-Range"), Some("bytes 100-199/10000"));
        assert_eq!(r.body, &data[100..200]);

        let r = get(&server, "/f", &["Range: bytes=9000-"]);
        assert_eq!(r.status, 206);
        assert_eq!(r.header("Content-Range"), Some("bytes 9000-9999/10000"));
        assert_eq!(r.body, &data[9000..]);

        let r = get(&server, "/f", &["Range: bytes=9990-20000"]);
        assert_eq!(r.header("Content-Range"), Some("bytes 9990-9999/10000"));
        assert_eq!(r.body, &data[9990..]);

        let r = get(&server, "/f", &["Range: bytes=-10"]);
        assert_eq!(r.body, &data[9990..]);

        let r = get(&server, "/f", &["Range: bytes=10000-"]);
        assert_eq!(r.status, 416);
        assert_eq!(r.header("Content-Range"), Some("bytes */10000"));

        let ranges: Vec<_> = server.requests_to("/f").iter().map(|r| r.range()).collect();
        assert_eq!(ranges[0], Some((100, Some(199))));
        assert_eq!(ranges[1], Some((9000, None)));
    }

    #[test]
    fn routes_without_ranges() {
        let server = TestServer::plain();
        let data = content(3, 5000);
        server.route("/ignore", Route::bytes(data.clone()).no_ranges());
        server.route("/none", Route::bytes(data.clone()).accept_ranges_none());
        let r = get(&server, "/ignore", &["Range: bytes=100-"]);
        assert_eq!((r.status, r.header("Accept-Ranges")), (200, None));
        assert_eq!(r.body, data);
        let r = get(&server, "/none", &["Range: bytes=100-"]);
        assert_eq!((r.status, r.header("Accept-Ranges")), (200, Some("none")));
        assert_eq!(r.body, data);
    }

    #[test]
    fn chunked_bytes_on_the_wire() {
        let server = TestServer::plain();
        let data = content(4, 200_000);
        server.route("/c", Route::bytes(data.clone()).chunked());
        let r = get(&server, "/c", &[]);
        assert_eq!(r.status, 200);
        assert_eq!(r.header("Transfer-Encoding"), Some("chunked"));
        assert_eq!(r.header("Content-Length"), None);
        assert_eq!(r.cut, None);
        assert_eq!(sha256_hex(&r.body), sha256_hex(&data));
        let wire = String::from_utf8_lossy(&r.raw_body);
        assert!(
            wire.contains(";ext1=\"v1\"\r\n"),
            "a chunk extension on the wire"
        );
        assert!(
            wire.ends_with("\r\n0;last=yes\r\nX-Trailer-Check: done\r\n\r\n"),
            "a trailer"
        );
        assert!(r.raw_body.len() > data.len() + 10 * 4, "several chunks");
    }

    #[test]
    fn close_delimited_body() {
        let server = TestServer::plain();
        let data = content(5, 70_000);
        server.route("/cd", Route::bytes(data.clone()).close_delimited());
        let r = get(&server, "/cd", &[]);
        assert_eq!(r.header("Content-Length"), None);
        assert_eq!(r.header("Connection"), Some("close"));
        assert_eq!(r.cut, None);
        assert_eq!(r.body, data);
    }

    #[test]
    fn keep_alive_reuses_one_connection() {
        let server = TestServer::plain();
        let data = content(6, 3000);
        server.route("/k", Route::bytes(data.clone()));
        server.route("/gone", Route::status(404));
        let mut s = connect(&server);
        let mut buf = Vec::new();
        for i in 0..3 {
            send(&mut s, "GET", "/k", &[]);
            let r = read_response(&mut s, &mut buf, false);
            assert_eq!(r.body, data, "response {i}");
        }
        send(&mut s, "GET", "/gone", &[]);
        assert_eq!(read_response(&mut s, &mut buf, false).status, 404);
        send(&mut s, "GET", "/k", &["Range: bytes=0-9"]);
        assert_eq!(read_response(&mut s, &mut buf, false).body, &data[..10]);
        // Connection: close ends it after the response.
        send(&mut s, "GET", "/k", &["Connection: close"]);
        assert_eq!(read_response(&mut s, &mut buf, false).body, data);
        let mut rest = Vec::new();
        assert_eq!(s.read_to_end(&mut rest).unwrap(), 0);

        let stats = server.stats();
        assert_eq!((stats.connections, stats.requests), (1, 6));
        assert!(server.requests().iter().all(|r| r.conn == 1));
    }

    #[test]
    fn redirects_statuses_and_headers() {
        let server = TestServer::plain();
        server.route("/target.bin", Route::bytes(content(7, 10)));
        let first = server.redirect_chain("rel", 3, "/target.bin", Location::Relative);
        assert_eq!(first, "/rel/0");
        let r = get(&server, "/rel/0", &[]);
        assert_eq!((r.status, r.header("Location")), (301, Some("1")));
        let r = get(&server, "/rel/1", &[]);
        assert_eq!((r.status, r.header("Location")), (302, Some("2")));
        let r = get(&server, "/rel/2", &[]);
        assert_eq!((r.status, r.header("Location")), (303, Some("/target.bin")));

        server.redirect_chain("abs", 2, "/target.bin", Location::Absolute);
        let r = get(&server, "/abs/0", &[]);
        assert_eq!(r.header("Location"), Some(server.url("/abs/1").as_str()));
        let r = get(&server, "/abs/1", &[]);
        assert_eq!(
            r.header("Location"),
            Some(server.url("/target.bin").as_str())
        );

        server.route("/loop", Route::redirect(307, "/loop"));
        let r = get(&server, "/loop?x=1", &[]);
        assert_eq!((r.status, r.header("Location")), (307, Some("/loop")));

        for status in [401, 404, 500, 502, 503] {
            server.route("/s", Route::status(status));
            let r = get(&server, "/s", &[]);
            assert_eq!(r.status, status);
            assert!(!r.body.is_empty());
        }

        server.route(
            "/cd",
            Route::bytes(content(8, 5)).content_disposition("attachment; filename=\"x.bin\""),
        );
        let r = get(&server, "/cd", &[]);
        assert_eq!(
            r.header("Content-Disposition"),
            Some("attachment; filename=\"x.bin\"")
        );
    }

    #[test]
    fn delay_and_throttle() {
        let server = TestServer::plain();
        let data = content(9, 40_000);
        server.route(
            "/slow",
            Route::bytes(data.clone())
                .delay_head(Duration::from_millis(200))
                .throttle(10_000, Duration::from_millis(50)),
        );
        let started = Instant::now();
        let r = get(&server, "/slow", &[]);
        assert_eq!(r.body, data);
        assert!(
            started.elapsed() >= Duration::from_millis(350),
            "{:?}",
            started.elapsed()
        );
    }

    #[test]
    fn fault_truncate_then_clean_close() {
        let server = TestServer::plain();
        let data = content(10, 50_000);
        server.route(
            "/t",
            Route::bytes(data.clone()).fault(Fault::TruncateAfter(1234), When::Always),
        );
        let r = get(&server, "/t", &[]);
        assert_eq!(r.header("Content-Length"), Some("50000"));
        assert_eq!(r.body, &data[..1234]);
        assert_eq!(r.cut, Some(io::ErrorKind::UnexpectedEof));
    }

    #[test]
    fn fault_reset() {
        let server = TestServer::plain();
        let data = content(11, 500_000);
        server.route(
            "/r",
            Route::bytes(data.clone()).fault(Fault::ResetAfter(20_000), When::Always),
        );
        let r = get(&server, "/r", &[]);
        assert_eq!(r.cut, Some(io::ErrorKind::ConnectionReset));
        assert!(r.body.len() <= 20_000);
        assert_eq!(r.body, &data[..r.body.len()]);
    }

    #[test]
    fn fault_wrong_content_range() {
        let server = TestServer::plain();
        let data = content(12, 10_000);
        server.route(
            "/w",
            Route::bytes(data.clone()).fault(Fault::WrongContentRange, When::Always),
        );
        let r = get(&server, "/w", &["Range: bytes=5000-5999"]);
        assert_eq!(r.status, 206);
        assert_eq!(r.header("Content-Range"), Some("bytes 0-999/10000"));
        assert_eq!(r.body, &data[..1000]);
        let r = get(&server, "/w", &["Range: bytes=0-999"]);
        assert_eq!(r.header("Content-Range"), Some("bytes 1-1000/10000"));
        // No Range: no range to get wrong.
        assert_eq!(get(&server, "/w", &[]).body, data);
    }

    #[test]
    fn fault_huge_head() {
        let server = TestServer::plain();
        let data = content(13, 100);
        server.route(
            "/h",
            Route::bytes(data.clone()).fault(Fault::HugeHead, When::Always),
        );
        let r = get(&server, "/h", &[]);
        assert!(r.head_len > 64 * 1024, "head is {} bytes", r.head_len);
        assert_eq!(r.body, data);
    }

    #[test]
    fn fault_bad_chunk_size() {
        let server = TestServer::plain();
        server.route(
            "/b",
            Route::bytes(content(14, 50_000)).fault(Fault::BadChunkSize, When::Always),
        );
        let r = get(&server, "/b", &[]);
        assert_eq!(r.header("Transfer-Encoding"), Some("chunked"));
        assert_eq!(r.cut, Some(io::ErrorKind::InvalidData));
        assert!(String::from_utf8_lossy(&r.raw_body).contains("\r\nzz-not-hex\r\n"));
    }

    #[test]
    fn fault_content_length_lie() {
        let server = TestServer::plain();
        let data = content(15, 10_000);
        server.route(
            "/l",
            Route::bytes(data.clone()).fault(Fault::ContentLengthLie(500), When::Always),
        );
        let r = get(&server, "/l", &[]);
        assert_eq!(r.header("Content-Length"), Some("10500"));
        assert_eq!(r.body, data);
        assert_eq!(r.cut, Some(io::ErrorKind::UnexpectedEof));
        let r = get(&server, "/l", &["Range: bytes=10200-"]);
        assert_eq!(r.header("Content-Range"), Some("bytes 10200-10499/10500"));
        assert!(r.body.is_empty());
        assert_eq!(r.cut, Some(io::ErrorKind::UnexpectedEof));
    }

    #[test]
    fn fault_only_on_nth_request() {
        let server = TestServer::plain();
        let data = content(16, 10_000);
        server.route(
            "/n",
            Route::bytes(data.clone()).fault(Fault::TruncateAfter(10), When::Request(2)),
        );
        assert_eq!(get(&server, "/n", &[]).cut, None);
        assert_eq!(get(&server, "/n", &[]).body.len(), 10);
        assert_eq!(get(&server, "/n", &[]).body, data);
    }

    #[test]
    fn fault_only_on_segment_requests() {
        let server = TestServer::plain();
        let data = content(17, 100_000);
        server.route(
            "/seg",
            Route::bytes(data.clone()).fault(Fault::ResetAfter(1000), When::SegmentRequests),
        );
        assert_eq!(get(&server, "/seg", &[]).body, data);
        assert_eq!(get(&server, "/seg", &["Range: bytes=0-"]).body, data);
        let r = get(&server, "/seg", &["Range: bytes=50000-"]);
        assert_eq!(r.status, 206);
        assert_eq!(r.cut, Some(io::ErrorKind::ConnectionReset));
    }

    #[test]
    fn fault_stall_goes_silent_with_the_connection_open() {
        let server = TestServer::plain();
        let data = content(24, 100_000);
        server.route(
            "/st",
            Route::bytes(data.clone()).fault(Fault::StallAfter(5000), When::Always),
        );
        let mut s = connect(&server);
        s.set_read_timeout(Some(Duration::from_millis(500)))
            .unwrap();
        send(&mut s, "GET", "/st", &[]);
        let started = Instant::now();
        let r = read_response(&mut s, &mut Vec::new(), false);
        assert_eq!(r.header("Content-Length"), Some("100000"));
        assert_eq!(r.body, &data[..5000]);
        assert!(
            matches!(
                r.cut,
                Some(io::ErrorKind::WouldBlock) | Some(io::ErrorKind::TimedOut)
            ),
            "{:?}",
            r.cut
        );
        assert!(started.elapsed() >= Duration::from_millis(500));
        // Dropping the server ends the stall at once.
        let started = Instant::now();
        drop(server);
        assert!(started.elapsed() < Duration::from_secs(3));
    }

    #[test]
    fn fault_unavailable_for_the_first_requests() {
        let server = TestServer::plain();
        let data = content(25, 1000);
        server.route(
            "/u",
            Route::bytes(data.clone()).fault(Fault::Unavailable(Some(1)), When::FirstRequests(2)),
        );
        server.route(
            "/v",
            Route::bytes(data.clone()).fault(Fault::Unavailable(None), When::Always),
        );
        for _ in 0..2 {
            let r = get(&server, "/u", &[]);
            assert_eq!((r.status, r.header("Retry-After")), (503, Some("1")));
        }
        let r = get(&server, "/u", &[]);
        assert_eq!((r.status, r.header("Retry-After")), (200, None));
        assert_eq!(r.body, data);
        let r = get(&server, "/v", &["Range: bytes=10-"]);
        assert_eq!((r.status, r.header("Retry-After")), (503, None));
    }

    #[test]
    fn then_after_changes_the_file_and_restarts_the_count() {
        let server = TestServer::plain();
        let (old, new) = (content(26, 5000), content(27, 7000));
        server.route(
            "/c",
            Route::bytes(old.clone())
                .header("ETag", "\"old\"")
                .then_after(
                    1,
                    Route::bytes(new.clone())
                        .header("ETag", "\"new\"")
                        .fault(Fault::TruncateAfter(10), When::Request(2)),
                ),
        );
        let r = get(&server, "/c", &[]);
        assert_eq!(r.header("ETag"), Some("\"old\""));
        assert_eq!(r.body, old);
        let r = get(&server, "/c", &["Range: bytes=100-"]);
        assert_eq!(r.header("ETag"), Some("\"new\""));
        assert_eq!(r.body, &new[100..]);
        assert_eq!(get(&server, "/c", &[]).body, &new[..10]);
        assert_eq!(get(&server, "/c", &[]).body, new);
    }

    #[test]
    fn if_range_sends_the_whole_body_when_the_validator_differs() {
        let server = TestServer::plain();
        let data = content(28, 3000);
        let lm = "Wed, 21 Oct 2015 07:28:00 GMT";
        server.route(
            "/i",
            Route::bytes(data.clone())
                .header("ETag", "\"v2\"")
                .header("Last-Modified", lm),
        );
        let r = get(&server, "/i", &["Range: bytes=1000-", "If-Range: \"v2\""]);
        assert_eq!((r.status, r.body.len()), (206, 2000));
        let if_lm = format!("If-Range: {lm}");
        let r = get(&server, "/i", &["Range: bytes=1000-", &if_lm]);
        assert_eq!((r.status, r.body.len()), (206, 2000));
        for stale in [
            "If-Range: \"v1\"",
            "If-Range: W/\"v2\"",
            "If-Range: Thu, 01 Jan 2015 00:00:00 GMT",
        ] {
            let r = get(&server, "/i", &["Range: bytes=1000-", stale]);
            assert_eq!((r.status, r.body), (200, data.clone()), "{stale}");
        }
    }

    #[test]
    fn tls_handshake_keep_alive_and_resumption() {
        let server = TestServer::https();
        assert!(std::fs::read_to_string(server.ca_file())
            .unwrap()
            .contains("BEGIN CERTIFICATE"));
        let data = content(18, 300_000);
        server.route("/f", Route::bytes(data.clone()));
        let config = tls_client(&server, rustls::DEFAULT_VERSIONS);
        let mut s = tls_connect(&server, &config, "127.0.0.1");
        let mut buf = Vec::new();
        for _ in 0..2 {
            send(&mut s, "GET", "/f", &[]);
            assert_eq!(
                sha256_hex(&read_response(&mut s, &mut buf, false).body),
                sha256_hex(&data)
            );
        }
        send(&mut s, "GET", "/f", &["Range: bytes=1000-1999"]);
        assert_eq!(
            read_response(&mut s, &mut buf, false).body,
            &data[1000..2000]
        );
        assert_eq!(
            s.conn.protocol_version(),
            Some(rustls::ProtocolVersion::TLSv1_3)
        );
        drop(s);

        // The same client config and name again: the ticket from the first connection resumes.
        let mut s = tls_connect(&server, &config, "127.0.0.1");
        send(&mut s, "GET", "/f", &["Range: bytes=0-9"]);
        assert_eq!(read_response(&mut s, &mut buf, false).body, &data[..10]);
        drop(s);
        // The leaf is also valid for `localhost` (a new name: a full handshake).
        let mut s = tls_connect(&server, &config, "localhost");
        send(&mut s, "GET", "/f", &["Range: bytes=0-9"]);
        assert_eq!(read_response(&mut s, &mut buf, false).body, &data[..10]);
        drop(s);

        let stats = server.stats();
        assert_eq!(stats.connections, 3);
        assert_eq!(stats.tls_handshakes, 3);
        assert_eq!(stats.tls_resumed, 1);
        assert_eq!(stats.requests, 5);
    }

    #[test]
    fn tls12_only_server() {
        let server = TestServer::builder()
            .tls()
            .tls_versions(TlsVersions::Tls12Only)
            .start();
        server.route("/f", Route::bytes(content(19, 1000)).chunked());
        let config = tls_client(&server, rustls::DEFAULT_VERSIONS);
        for _ in 0..2 {
            let mut s = tls_connect(&server, &config, "127.0.0.1");
            send(&mut s, "GET", "/f", &[]);
            assert_eq!(
                read_response(&mut s, &mut Vec::new(), false).body,
                content(19, 1000)
            );
            assert_eq!(
                s.conn.protocol_version(),
                Some(rustls::ProtocolVersion::TLSv1_2)
            );
        }
        assert_eq!(server.stats().tls_resumed, 1);
    }

    #[test]
    fn tls_close_delimited_and_truncation() {
        let server = TestServer::https();
        let data = content(20, 30_000);
        server.route("/cd", Route::bytes(data.clone()).close_delimited());
        server.route(
            "/t",
            Route::bytes(data.clone()).fault(Fault::TruncateAfter(100), When::Always),
        );
        let config = tls_client(&server, rustls::DEFAULT_VERSIONS);
        let mut s = tls_connect(&server, &config, "127.0.0.1");
        send(&mut s, "GET", "/cd", &[]);
        let r = read_response(&mut s, &mut Vec::new(), false);
        assert_eq!(
            (r.cut, r.body.len()),
            (None, data.len()),
            "close_notify ends the body"
        );
        let mut s = tls_connect(&server, &config, "127.0.0.1");
        send(&mut s, "GET", "/t", &[]);
        let r = read_response(&mut s, &mut Vec::new(), false);
        assert_eq!(
            (r.cut, r.body.len()),
            (Some(io::ErrorKind::UnexpectedEof), 100)
        );
        // A close-delimited body cut by a FIN without close_notify: rustls says so.
        server.route(
            "/nn",
            Route::bytes(data.clone())
                .close_delimited()
                .fault(Fault::TruncateWithoutCloseNotify(1000), When::Always),
        );
        let mut s = tls_connect(&server, &config, "127.0.0.1");
        send(&mut s, "GET", "/nn", &[]);
        let r = read_response(&mut s, &mut Vec::new(), false);
        assert_eq!(
            (r.cut, r.body.len()),
            (Some(io::ErrorKind::UnexpectedEof), 1000)
        );
    }

    #[test]
    fn tls_wrong_host_is_rejected_by_a_verifying_client() {
        let server = TestServer::builder().tls_wrong_host().start();
        server.route("/f", Route::bytes(content(21, 10)));
        let config = tls_client(&server, rustls::DEFAULT_VERSIONS);
        let mut s = tls_connect(&server, &config, "127.0.0.1");
        send_may_fail(&mut s);
        let mut byte = [0u8; 1];
        let err = s.read(&mut byte).expect_err("certificate for another host");
        assert!(err.to_string().contains("not valid for name"), "{err}");
        drop(s);
        // The same chain verifies for the name it was made for.
        let mut s = tls_connect(&server, &config, WRONG_HOST);
        send(&mut s, "GET", "/f", &[]);
        assert_eq!(
            read_response(&mut s, &mut Vec::new(), false).body,
            content(21, 10)
        );
        drop(s);
        wait_for(|| server.stats().tls_failures == 1);
        assert_eq!(server.stats().tls_handshakes, 1);
        assert_eq!(server.requests().len(), 1);
    }

    fn send_may_fail(s: &mut impl Write) {
        let _ = s.write_all(b"GET /f HTTP/1.1\r\nHost: t\r\n\r\n");
        let _ = s.flush();
    }

    fn wait_for(cond: impl Fn() -> bool) {
        let deadline = Instant::now() + Duration::from_secs(5);
        while !cond() {
            assert!(Instant::now() < deadline, "condition not reached in 5 s");
            thread::sleep(Duration::from_millis(10));
        }
    }

    #[test]
    fn ipv6_listener_when_available() {
        let server = TestServer::plain();
        if !server.has_ipv6() {
            eprintln!("SKIPPED: ipv6_listener_when_available: no [::1] on this machine");
            return;
        }
        server.route("/f", Route::bytes(content(22, 10)));
        let mut s = TcpStream::connect((Ipv6Addr::LOCALHOST, server.port())).unwrap();
        send(&mut s, "GET", "/f", &[]);
        assert_eq!(
            read_response(&mut s, &mut Vec::new(), false).body,
            content(22, 10)
        );
        assert!(server.url_v6("/f").starts_with("http://[::1]:"));
    }

    #[test]
    fn drop_with_idle_and_busy_connections_is_prompt() {
        let server = TestServer::https();
        server.route(
            "/slow",
            Route::bytes(content(23, 1_000_000)).throttle(1000, Duration::from_millis(50)),
        );
        let config = tls_client(&server, rustls::DEFAULT_VERSIONS);
        let mut busy = tls_connect(&server, &config, "127.0.0.1");
        send(&mut busy, "GET", "/slow", &[]);
        let mut byte = [0u8; 1];
        busy.read_exact(&mut byte).unwrap();
        let idle = connect(&server); // never says anything
        wait_for(|| server.stats().connections == 2);
        let started = Instant::now();
        drop(server);
        assert!(
            started.elapsed() < Duration::from_secs(3),
            "drop took {:?}",
            started.elapsed()
        );
        drop((busy, idle));
    }
}
