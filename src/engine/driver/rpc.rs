//! The RPC server on the engine's ring: listening sockets, client connections read and written
//! with the same reactor as the downloads (no second loop, no thread per client), HTTP requests
//! and WebSocket sessions answered through `crate::rpc`, answers to refused tokens held back a
//! second by a timer, notifications pushed to WebSocket clients. A client costs a 4 KiB read
//! buffer plus what it sent; there are at most `MAX_CLIENTS`, the one idle longest making room for
//! a new one; a request not complete `REQUEST_TIMEOUT` after its first byte closes its connection.
use super::super::reactor::Owned;
use super::*;
use crate::rpc::http::{self as rh, Parsed, RequestHead, Response};
use crate::rpc::{self, ws, Secret};
use crate::tls::server::{ServerSession, ServerTlsConfig};
use base64::Engine as _;

/// Most RPC connections at once.
const MAX_CLIENTS: usize = 256;
/// A request (or WebSocket frame) not complete after this closes its connection; an idle HTTP
/// connection is closed after `IDLE_TIMEOUT`.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);
const IDLE_TIMEOUT: Duration = Duration::from_secs(120);
/// How long an answer to a refused token is held back (aria2: about a second).
const AUTH_DELAY: Duration = Duration::from_secs(1);
/// Bytes queued to a WebSocket client that does not read before it is dropped.
const MAX_QUEUED: usize = 8 << 20;
const READ_SIZE: usize = 4096;

struct Listener {
    fd: Fd,
    op: Option<OpId>,
}

struct Client {
    id: u64,
    fd: Fd,
    /// What arrived and is not answered yet.
    buf: Vec<u8>,
    /// A WebSocket session (after the upgrade).
    ws: Option<ws::Decoder>,
    /// `--rpc-secure`: what arrives is decrypted into `buf`, what is queued is encrypted first.
    tls: Option<Box<ServerSession>>,
    reading: Option<OpId>,
    /// The send in flight and what follows it.
    sending: Option<OpId>,
    out: VecDeque<Vec<u8>>,
    queued: usize,
    /// Close once everything queued is sent.
    close_after: bool,
    /// An answer held back, and its timer.
    held: Option<(OpId, Vec<u8>)>,
    last: Instant,
    /// When the request (or TLS handshake) now arriving began: a request not complete
    /// `REQUEST_TIMEOUT` after its first byte closes the connection, however slowly it trickles.
    since: Option<Instant>,
}

/// The server: its listeners, clients and settings.
pub(crate) struct Server {
    listeners: Vec<Listener>,
    clients: Vec<Option<Client>>,
    next_id: u64,
    pub secret: Secret,
    /// `Basic ...` that `--rpc-user`/`--rpc-passwd` ask for.
    basic: Option<String>,
    allow_origin_all: bool,
    max_request: usize,
    port: u16,
    listen_all: bool,
    tls: Option<ServerTlsConfig>,
}

impl Server {
    pub(crate) fn new(s: &crate::engine::RpcSettings, tls: Option<ServerTlsConfig>) -> Server {
        let basic = match (&s.user, &s.passwd) {
            (None, None) => None,
            (u, p) => Some(format!(
                "Basic {}",
                base64::engine::general_purpose::STANDARD.encode(format!(
                    "{}:{}",
                    u.as_deref().unwrap_or(""),
                    p.as_deref().unwrap_or("")
                ))
            )),
        };
        Server {
            listeners: Vec::new(),
            clients: Vec::new(),
            next_id: 1,
            secret: Secret::new(s.secret.as_deref()),
            basic,
            allow_origin_all: s.allow_origin_all,
            max_request: usize::try_from(s.max_request_size).unwrap_or(usize::MAX),
            port: s.port,
            listen_all: s.listen_all,
            tls,
        }
    }

    /// Nothing left to send to anyone.
    pub(crate) fn quiet(&self) -> bool {
        self.clients
            .iter()
            .flatten()
            .all(|c| c.sending.is_none() && c.out.is_empty() && c.held.is_none())
    }

    fn client(&mut self, slot: usize, id: u64) -> Option<&mut Client> {
        self.clients
            .get_mut(slot)
            .and_then(Option::as_mut)
            .filter(|c| c.id == id)
    }
}

/// What a request comes to.
struct Reply {
    bytes: Vec<u8>,
    hold: bool,
    close: bool,
    upgrade: bool,
}

impl Reply {
    fn plain(bytes: Vec<u8>) -> Reply {
        Reply {
            bytes,
            hold: false,
            close: false,
            upgrade: false,
        }
    }

    fn closing(bytes: Vec<u8>) -> Reply {
        Reply {
            close: true,
            ..Reply::plain(bytes)
        }
    }
}

/// What arrived on a connection, taken out of its buffer.
enum Incoming {
    Http(Box<RequestHead>, Vec<u8>),
    Ws(ws::Event),
    Done(Reply),
}

/// The answer to a request refused for its size or its chunked body (aria2 just closes the
/// connection; a word says why).
fn refusal(head: &RequestHead, max: usize) -> Vec<u8> {
    let mut r = Response::new(if head.chunked { 400 } else { 413 });
    r.close = true;
    r.content_type = Some("text/plain");
    r.body = if head.chunked {
        b"chunked requests are not accepted\n".to_vec()
    } else {
        format!("the request is larger than --rpc-max-request-size ({max} bytes)\n").into_bytes()
    };
    r.render()
}

impl<R: Reactor<Tag>> Engine<'_, R> {
    fn server(&mut self) -> Option<&mut Server> {
        self.daemon.as_deref_mut().map(|d| &mut d.server)
    }

    /// Binds the listening sockets (loopback, or every interface with `--rpc-listen-all`) and
    /// starts accepting. An error if none could be bound.
    pub(super) fn rpc_start(&mut self) -> Result<(), String> {
        let Some(srv) = self.daemon.as_deref() else {
            return Ok(());
        };
        let (port, all) = (srv.server.port, srv.server.listen_all);
        let addrs: [SocketAddr; 2] = if all {
            [
                SocketAddr::from(([0, 0, 0, 0], port)),
                SocketAddr::from(([0u16; 8], port)),
            ]
        } else {
            [
                SocketAddr::from(([127, 0, 0, 1], port)),
                SocketAddr::from(([0, 0, 0, 0, 0, 0, 0, 1], port)),
            ]
        };
        let mut errors = Vec::new();
        let mut bound = Vec::new();
        for a in addrs {
            // Each family said as aria2c says it: a port taken on one is an error a user must
            // see (clients of that family reach whatever holds it), not a silent fallback.
            let family = if a.is_ipv4() { "IPv4" } else { "IPv6" };
            match self.reactor.listen(&a) {
                Ok(fd) => {
                    bound.push(Listener { fd, op: None });
                    self.console
                        .notice(&format!("{family} RPC: listening on TCP port {port}"));
                }
                Err(e) => {
                    self.console.error(&format!(
                        "{family} RPC: failed to bind TCP port {port}, cause: {}",
                        sys::cause(&e)
                    ));
                    errors.push(format!("{a}: {}", sys::cause(&e)));
                }
            }
        }
        if bound.is_empty() {
            return Err(format!("Failed to setup RPC server: {}", errors.join("; ")));
        }
        if let Some(s) = self.server() {
            s.listeners = bound;
        }
        self.rpc_arm_accepts();
        Ok(())
    }

    /// Keeps an accept in flight on every listener.
    fn rpc_arm_accepts(&mut self) {
        let Some(s) = self.server() else { return };
        let want: Vec<(usize, Fd)> = s
            .listeners
            .iter()
            .enumerate()
            .filter(|(_, l)| l.op.is_none())
            .map(|(i, l)| (i, l.fd.clone()))
            .collect();
        for (i, fd) in want {
            let op = self.reactor.accept(Tag::RpcAccept { listener: i }, fd);
            if let Some(s) = self.server() {
                s.listeners[i].op = Some(op);
            }
        }
    }

    pub(super) fn on_rpc_accept(&mut self, listener: usize, res: i32, owned: Owned) {
        let now = self.reactor.now();
        let Some(s) = self.server() else { return };
        if let Some(l) = s.listeners.get_mut(listener) {
            l.op = None;
        }
        let conn = owned.into_accepted();
        let Some(conn) = conn.filter(|_| res >= 0) else {
            // Out of descriptors and the like: accepting again waits for the next tick.
            if !matches!(
                -res,
                libc::EMFILE | libc::ENFILE | libc::ENOBUFS | libc::ENOMEM
            ) {
                self.rpc_arm_accepts();
            }
            return;
        };
        let live = s.clients.iter().flatten().count();
        if live >= MAX_CLIENTS {
            // The client idle longest makes room.
            let oldest = s
                .clients
                .iter()
                .enumerate()
                .filter_map(|(i, c)| c.as_ref().map(|c| (i, c.last)))
                .min_by_key(|(_, t)| *t)
                .map(|(i, _)| i);
            if let Some(i) = oldest {
                self.rpc_close(i);
            }
        }
        let Some(s) = self.server() else { return };
        let id = s.next_id;
        s.next_id += 1;
        let tls = match s.tls.as_ref().map(ServerSession::new) {
            None => None,
            Some(Ok(t)) => Some(Box::new(t)),
            // Dropping the socket closes it.
            Some(Err(_)) => {
                self.rpc_arm_accepts();
                return;
            }
        };
        let client = Client {
            id,
            fd: Rc::new(conn),
            buf: Vec::new(),
            ws: None,
            tls,
            reading: None,
            sending: None,
            out: VecDeque::new(),
            queued: 0,
            close_after: false,
            held: None,
            last: now,
            since: None,
        };
        let slot = match s.clients.iter().position(Option::is_none) {
            Some(i) => {
                s.clients[i] = Some(client);
                i
            }
            None => {
                s.clients.push(Some(client));
                s.clients.len() - 1
            }
        };
        self.rpc_read(slot, Vec::new());
        self.rpc_arm_accepts();
    }

    /// Issues a read on client `slot` unless one is in flight (or it is closing or held).
    fn rpc_read(&mut self, slot: usize, mut buf: Vec<u8>) {
        let Some(c) = self
            .server()
            .and_then(|s| s.clients.get_mut(slot)?.as_mut())
        else {
            return;
        };
        if c.reading.is_some() || c.close_after || c.held.is_some() {
            return;
        }
        buf.clear();
        buf.resize(READ_SIZE, 0);
        let (fd, id) = (c.fd.clone(), c.id);
        let op = self.reactor.read(Tag::RpcRead { slot, id }, fd, buf);
        if let Some(c) = self.server().and_then(|s| s.client(slot, id)) {
            c.reading = Some(op);
        }
    }

    pub(super) fn on_rpc_read(&mut self, slot: usize, id: u64, res: i32, owned: Owned) {
        let now = self.reactor.now();
        let Some(c) = self.server().and_then(|s| s.client(slot, id)) else {
            return;
        };
        c.reading = None;
        let buf = owned.into_bytes().unwrap_or_default();
        if nothing_happened(res) {
            // Nothing happened: read again.
            self.rpc_read(slot, buf);
            return;
        }
        if res <= 0 {
            self.rpc_close(slot);
            return;
        }
        let got = &buf[..(res as usize).min(buf.len())];
        c.last = now;
        c.since.get_or_insert(now);
        match c.tls.as_mut() {
            None => c.buf.extend_from_slice(got),
            Some(t) => {
                let mut records = Vec::new();
                let r = t.receive(got, &mut c.buf, &mut records);
                if !records.is_empty() {
                    self.rpc_queue_raw(slot, id, records);
                }
                match r {
                    Ok(false) => {}
                    // close_notify, or a TLS error whose alert is queued: close once it is sent.
                    Ok(true) | Err(_) => {
                        if let Some(c) = self.server().and_then(|s| s.client(slot, id)) {
                            c.close_after = true;
                        }
                        self.rpc_kick(slot, id);
                        return;
                    }
                }
            }
        }
        self.rpc_process(slot, id);
        // What is left is the start of the next request.
        if let Some(c) = self.server().and_then(|s| s.client(slot, id)) {
            if !c.buf.is_empty() && c.since.is_none() {
                c.since = Some(now);
            }
        }
        self.rpc_read(slot, buf);
    }

    /// Answers every complete request that arrived on client `slot`.
    fn rpc_process(&mut self, slot: usize, id: u64) {
        loop {
            let Some(s) = self.server() else { return };
            let max = s.max_request;
            let Some(c) = s.client(slot, id) else { return };
            if c.close_after || c.held.is_some() {
                return;
            }
            let incoming = match c.ws.as_mut() {
                Some(dec) => match dec.next(&mut c.buf) {
                    Ok(None) => return,
                    Ok(Some(e)) => {
                        c.since = None;
                        Incoming::Ws(e)
                    }
                    Err(e) => Incoming::Done(Reply::closing(ws::close(e.close_code()))),
                },
                None => match rh::parse_request(&c.buf) {
                    Parsed::Partial => return,
                    Parsed::Bad => Incoming::Done(Reply::closing(
                        Response {
                            close: true,
                            ..Response::new(400)
                        }
                        .render(),
                    )),
                    Parsed::Done(head) => {
                        let body_len = usize::try_from(head.content_length).unwrap_or(usize::MAX);
                        if body_len > max || head.chunked {
                            Incoming::Done(Reply::closing(refusal(&head, max)))
                        } else if c.buf.len() < head.head_len.saturating_add(body_len) {
                            return;
                        } else {
                            let body = c.buf[head.head_len..head.head_len + body_len].to_vec();
                            c.buf.drain(..head.head_len + body_len);
                            c.since = None;
                            Incoming::Http(head, body)
                        }
                    }
                },
            };
            let reply = match incoming {
                Incoming::Done(r) => r,
                Incoming::Http(head, body) => self.rpc_http(*head, body),
                Incoming::Ws(ws::Event::Message(m)) => self.rpc_ws_message(&m),
                Incoming::Ws(ws::Event::Ping(p)) => Reply::plain(ws::encode(ws::OP_PONG, &p)),
                Incoming::Ws(ws::Event::Pong) => continue,
                Incoming::Ws(ws::Event::Close) => Reply::closing(ws::close(1000)),
            };
            let Some(c) = self.server().and_then(|s| s.client(slot, id)) else {
                return;
            };
            if reply.upgrade {
                c.ws = Some(ws::Decoder::new(max));
            }
            if reply.close {
                c.close_after = true;
            }
            let save = self
                .daemon
                .as_deref_mut()
                .filter(|d| d.call_waits_for_save)
                .and_then(|d| {
                    d.call_waits_for_save = false;
                    d.save_op
                });
            if let (Some(op), false) = (save, reply.hold) {
                // `saveSession` is answered once the file is written.
                if let Some(c) = self.server().and_then(|s| s.client(slot, id)) {
                    c.held = Some((op, reply.bytes));
                }
                return;
            }
            if reply.hold {
                let op = self.reactor.timer(Tag::RpcHeld { slot, id }, AUTH_DELAY);
                if let Some(c) = self.server().and_then(|s| s.client(slot, id)) {
                    c.held = Some((op, reply.bytes));
                }
                return;
            }
            self.rpc_queue(slot, id, reply.bytes);
        }
    }

    /// An HTTP request: JSON-RPC on `/jsonrpc` by POST or GET, the WebSocket upgrade, the CORS
    /// preflight, XML-RPC refused on `/rpc`, 404 elsewhere.
    fn rpc_http(&mut self, head: RequestHead, body: Vec<u8>) -> Reply {
        let Some(s) = self.server() else {
            return Reply {
                bytes: Vec::new(),
                hold: false,
                close: true,
                upgrade: false,
            };
        };
        let cors = s.allow_origin_all;
        let close = !head.keep_alive;
        let secret = s.secret.clone();
        let basic = s.basic.clone();
        let reply = |r: Response| {
            let close = r.close;
            Reply {
                bytes: r.render(),
                hold: false,
                close,
                upgrade: false,
            }
        };
        let plain = |status: u16| {
            let mut r = Response::new(status);
            r.close = close;
            r
        };
        if head.method == "OPTIONS" {
            let mut r = plain(200);
            if cors && head.origin.is_some() && head.acr_method.is_some() {
                r.cors = true;
                r.extra
                    .push(("Access-Control-Allow-Methods", "POST, GET, OPTIONS".into()));
                r.extra.push(("Access-Control-Max-Age", "1728000".into()));
                if let Some(h) = head.acr_headers.clone() {
                    r.extra.push(("Access-Control-Allow-Headers", h));
                }
            }
            return reply(r);
        }
        if let Some(want) = basic {
            if head.authorization.as_deref() != Some(want.as_str()) {
                let mut r = plain(401);
                r.extra
                    .push(("WWW-Authenticate", "Basic realm=\"aria2\"".into()));
                return reply(r);
            }
        }
        if !secret.is_set() {
            if let Some(why) = rh::foreign_request(&head, cors) {
                let mut r = plain(403);
                r.close = true;
                r.content_type = Some("text/plain");
                r.body = format!(
                    "refused: {why} and no --rpc-secret is set (a web page may not drive this server)\n"
                )
                .into_bytes();
                return reply(r);
            }
        }
        match (head.method.as_str(), head.path.as_str()) {
            ("GET", "/jsonrpc") if head.websocket => {
                let Some(key) = head.ws_key.as_deref() else {
                    return reply(plain(400));
                };
                if head.ws_version.as_deref() != Some("13") {
                    let mut r = plain(426);
                    r.extra.push(("Sec-WebSocket-Version", "13".into()));
                    return reply(r);
                }
                let text = format!(
                    "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: {}\r\n\r\n",
                    ws::accept_key(key)
                );
                Reply {
                    bytes: text.into_bytes(),
                    hold: false,
                    close: false,
                    upgrade: true,
                }
            }
            ("POST", "/jsonrpc") => {
                let mut calls = super::daemon::Dispatch { engine: self };
                let a = rpc::answer(&body, &secret, &mut calls);
                self.rpc_json_reply(a, None, cors, close)
            }
            ("GET", "/jsonrpc") => {
                let (request, callback) = rpc::from_query(&head.query);
                let a = match request {
                    Ok(request) => {
                        let mut calls = super::daemon::Dispatch { engine: self };
                        rpc::answer_value(request, &secret, &mut calls)
                    }
                    Err(a) => a,
                };
                self.rpc_json_reply(a, callback, cors, close)
            }
            ("POST", "/rpc") => {
                let mut r = plain(200);
                r.content_type = Some("text/xml");
                r.cors = cors;
                r.body = b"<?xml version=\"1.0\"?>\n<methodResponse><fault><value><struct>\
<member><name>faultCode</name><value><int>1</int></value></member>\
<member><name>faultString</name><value><string>ringdl does not speak XML-RPC; use JSON-RPC on /jsonrpc</string></value></member>\
</struct></value></fault></methodResponse>"
                    .to_vec();
                reply(r)
            }
            _ => reply(plain(404)),
        }
    }

    fn rpc_json_reply(
        &mut self,
        a: rpc::Answer,
        callback: Option<String>,
        cors: bool,
        close: bool,
    ) -> Reply {
        let text = a.json.to_string();
        let mut r = Response::new(a.status);
        r.cors = cors;
        // aria2 closes after an error.
        r.close = close || a.status != 200;
        match callback {
            Some(cb) => {
                r.content_type = Some("text/javascript");
                r.body = format!("{cb}({text})").into_bytes();
            }
            None => {
                r.content_type = Some("application/json-rpc");
                r.body = text.into_bytes();
            }
        }
        let close = r.close;
        self.after_calls();
        Reply {
            bytes: r.render(),
            hold: a.unauthorized,
            close,
            upgrade: false,
        }
    }

    fn rpc_ws_message(&mut self, m: &[u8]) -> Reply {
        let secret = self.server().map(|s| s.secret.clone()).unwrap_or_default();
        let mut calls = super::daemon::Dispatch { engine: self };
        let a = rpc::answer(m, &secret, &mut calls);
        self.after_calls();
        Reply {
            bytes: ws::encode(ws::OP_TEXT, a.json.to_string().as_bytes()),
            hold: a.unauthorized,
            close: false,
            upgrade: false,
        }
    }

    /// Queues bytes to client `slot` (encrypted first over TLS) and starts sending them. An
    /// answer that closes the connection is followed by close_notify.
    fn rpc_queue(&mut self, slot: usize, id: u64, bytes: Vec<u8>) {
        let Some(c) = self.server().and_then(|s| s.client(slot, id)) else {
            return;
        };
        let bytes = match c.tls.as_mut() {
            None => bytes,
            Some(t) => {
                let mut sealed = Vec::with_capacity(bytes.len() + 64);
                t.seal(&bytes, &mut sealed);
                if c.close_after {
                    t.close(&mut sealed);
                }
                sealed
            }
        };
        self.rpc_queue_raw(slot, id, bytes);
    }

    /// Queues bytes exactly as they go on the wire.
    fn rpc_queue_raw(&mut self, slot: usize, id: u64, bytes: Vec<u8>) {
        let Some(c) = self.server().and_then(|s| s.client(slot, id)) else {
            return;
        };
        c.queued += bytes.len();
        c.out.push_back(bytes);
        if c.queued > MAX_QUEUED {
            self.rpc_close(slot);
            return;
        }
        self.rpc_kick(slot, id);
    }

    fn rpc_kick(&mut self, slot: usize, id: u64) {
        let Some(c) = self.server().and_then(|s| s.client(slot, id)) else {
            return;
        };
        if c.sending.is_some() {
            return;
        }
        let Some(bytes) = c.out.pop_front() else {
            if c.close_after {
                self.rpc_close(slot);
            }
            return;
        };
        let fd = c.fd.clone();
        let op = self
            .reactor
            .send(Tag::RpcSent { slot, id, sent: 0 }, fd, bytes, 0);
        if let Some(c) = self.server().and_then(|s| s.client(slot, id)) {
            c.sending = Some(op);
        }
    }

    pub(super) fn on_rpc_sent(
        &mut self,
        slot: usize,
        id: u64,
        sent: usize,
        res: i32,
        owned: Owned,
    ) {
        let Some(c) = self.server().and_then(|s| s.client(slot, id)) else {
            return;
        };
        c.sending = None;
        let buf = owned.into_bytes().unwrap_or_default();
        let sent = match res {
            // Nothing was sent: the same bytes again.
            r if nothing_happened(r) => sent,
            r if r <= 0 => {
                self.rpc_close(slot);
                return;
            }
            r => sent + r as usize,
        };
        if sent < buf.len() {
            let fd = c.fd.clone();
            let op = self
                .reactor
                .send(Tag::RpcSent { slot, id, sent }, fd, buf, sent);
            if let Some(c) = self.server().and_then(|s| s.client(slot, id)) {
                c.sending = Some(op);
            }
            return;
        }
        c.queued = c.queued.saturating_sub(buf.len());
        self.rpc_kick(slot, id);
    }

    /// A held answer's second is up: it goes out, and the client's next requests are read.
    pub(super) fn on_rpc_held(&mut self, slot: usize, id: u64) {
        let Some(c) = self.server().and_then(|s| s.client(slot, id)) else {
            return;
        };
        let Some((_, bytes)) = c.held.take() else {
            return;
        };
        self.rpc_queue(slot, id, bytes);
        self.rpc_process(slot, id);
        self.rpc_read(slot, Vec::new());
    }

    /// Closes client `slot`: its operations are abandoned (the reactor closes the socket once the
    /// last one lets go of it).
    pub(super) fn rpc_close(&mut self, slot: usize) {
        let Some(c) = self
            .server()
            .and_then(|s| s.clients.get_mut(slot))
            .and_then(Option::take)
        else {
            return;
        };
        for op in [c.reading, c.sending, c.held.map(|h| h.0)]
            .into_iter()
            .flatten()
        {
            self.reactor.abandon(op);
        }
        self.rpc_arm_accepts();
    }

    /// The run is ending: every client is closed and the accepts in flight are abandoned, so
    /// nothing of the server is left with the reactor.
    pub(super) fn rpc_stop(&mut self) {
        let Some(s) = self.server() else { return };
        // Listeners first, so that closing a client does not arm an accept again.
        let listeners = std::mem::take(&mut s.listeners);
        let slots = s.clients.len();
        for op in listeners.into_iter().filter_map(|l| l.op) {
            self.reactor.abandon(op);
        }
        for slot in 0..slots {
            self.rpc_close(slot);
        }
    }

    /// Sends `frame` to every WebSocket client.
    pub(super) fn rpc_broadcast(&mut self, frame: Vec<u8>) {
        let Some(s) = self.server() else { return };
        let targets: Vec<(usize, u64)> = s
            .clients
            .iter()
            .enumerate()
            .filter_map(|(i, c)| c.as_ref().filter(|c| c.ws.is_some()).map(|c| (i, c.id)))
            .collect();
        for (slot, id) in targets {
            self.rpc_queue(slot, id, frame.clone());
        }
    }

    /// Every tick: connections stuck half-way through a request, or idle too long, are closed;
    /// accepts that stopped (out of descriptors) start again.
    pub(super) fn rpc_tick(&mut self) {
        let now = self.reactor.now();
        let every = match self.sup.as_deref() {
            Some(s) if s.has_session() => s.session_interval(),
            _ => 0,
        };
        let due = self.daemon.as_deref().and_then(|d| {
            let last = d.last_interval_save.unwrap_or(now);
            (every > 0 && now.duration_since(last) >= Duration::from_secs(every)).then_some(())
        });
        if let Some(d) = self.daemon.as_deref_mut() {
            if d.last_interval_save.is_none() || due.is_some() {
                d.last_interval_save = Some(now);
            }
        }
        if due.is_some() {
            self.save_session(true);
        }
        let Some(s) = self.server() else { return };
        let stale: Vec<usize> = s
            .clients
            .iter()
            .enumerate()
            .filter_map(|(i, c)| {
                let c = c.as_ref()?;
                let idle = now.duration_since(c.last);
                let busy = c.sending.is_some() || c.held.is_some();
                let half_sent = c
                    .since
                    .is_some_and(|t| now.duration_since(t) > REQUEST_TIMEOUT);
                let expired = !busy && (half_sent || (c.ws.is_none() && idle > IDLE_TIMEOUT));
                expired.then_some(i)
            })
            .collect();
        for i in stale {
            self.rpc_close(i);
        }
        self.rpc_arm_accepts();
    }

    /// Whether the run may end as far as the RPC server goes: not a daemon, or a daemon told to
    /// shut down whose answers are out (or that has waited three seconds for slow clients).
    pub(super) fn rpc_done(&mut self) -> bool {
        let has_session = self.sup.as_deref().is_some_and(|s| s.has_session());
        let Some(d) = self.daemon.as_deref() else {
            return true;
        };
        let Some(at) = d.shutdown else { return false };
        // The session is saved once every download has stopped (and gone back to the queue).
        if has_session && !d.final_saved {
            if d.save_op.is_none() {
                let op = self.save_session(false);
                if let Some(d) = self.daemon.as_deref_mut() {
                    d.final_op = op;
                }
            }
            return false;
        }
        d.server.quiet() || self.reactor.now().duration_since(at) > Duration::from_secs(3)
    }

    /// Answers held for the save `op` wait for the save `next` instead.
    pub(super) fn rpc_retarget(&mut self, op: OpId, next: OpId) {
        let Some(s) = self.server() else { return };
        for c in s.clients.iter_mut().flatten() {
            if let Some(h) = c.held.as_mut().filter(|h| h.0 == op) {
                h.0 = next;
            }
        }
    }

    /// Answers held for the save `op` go out.
    pub(super) fn rpc_release(&mut self, op: OpId) {
        let Some(s) = self.server() else { return };
        let held: Vec<(usize, u64)> = s
            .clients
            .iter()
            .enumerate()
            .filter_map(|(i, c)| {
                let c = c.as_ref()?;
                c.held.as_ref().filter(|h| h.0 == op).map(|_| (i, c.id))
            })
            .collect();
        for (slot, id) in held {
            self.on_rpc_held(slot, id);
        }
    }

    /// After calls were answered: a shutdown asked for starts now.
    fn after_calls(&mut self) {
        let start = self
            .daemon
            .as_ref()
            .is_some_and(|d| d.shutdown.is_some() && !self.jobs_done);
        if start {
            self.begin_shutdown();
        }
    }

    /// Stops every running download (kept as waiting) and ends the run once they are stopped and
    /// the answers are out.
    pub(super) fn begin_shutdown(&mut self) {
        self.jobs_done = true;
        self.stopping = true;
        let now = self.reactor.now();
        if let Some(d) = self.daemon.as_deref_mut() {
            d.shutdown.get_or_insert(now);
        }
        for dl in 0..self.dls.len() {
            if self.dls[dl].state == DlState::Active {
                self.stop_download(dl, false);
            }
        }
    }
}
