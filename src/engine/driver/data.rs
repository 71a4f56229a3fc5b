//! A protocol's second connection (FTP's data connection). Passive: opened when a conversation
//! asks for it (`sources::Step::Data`), always to the address its own connection is connected
//! to, so a server cannot aim it at another host; the conversation hears when it is connected
//! (`Conversation::data_ready`). Active: a socket listens on the address the connection leaves
//! from (`Step::Listen`), the conversation hears where (`Conversation::listening`) and the first
//! connection accepted is the data connection; one that does not come within the connect timeout
//! fails the exchange. Either way an answer saying its bytes come there (`Answer::on_data`)
//! moves the body onto it (waiting for the accept if the answer came first), and the connection
//! the conversation went on waits, set aside (`Parked`), until the exchange ends and both close
//! (neither is kept for another exchange yet). Everything else about the body (blocks, ranges,
//! pieces, the writer) is as for any answer: the exchange and its range stay the connection's.
use super::*;
use crate::engine::conn::{DataAsk, DataConn, Parked};
use crate::engine::reactor::Owned;
use crate::engine::sink;
use crate::engine::sources::Step;
use std::net::SocketAddr;

impl<R: Reactor<Tag>> Engine<'_, R> {
    /// What a conversation asked for as it read: its bytes to send, a data connection, and, once
    /// it has answered (or a response head came), its meaning: true then.
    pub(super) fn conversed(&mut self, slot: usize) -> bool {
        let Some(c) = self.conns[slot].as_mut() else {
            return false;
        };
        let (notices, out) =
            c.ex.as_mut()
                .and_then(|ex| ex.conversation.as_mut())
                .map(|conv| (conv.notices(), conv.outgoing()))
                .unwrap_or_default();
        if let Some(ex) = c.ex.as_mut() {
            ex.outgoing.extend_from_slice(&out);
        }
        for n in notices {
            if self.noticed.insert(n.clone()) {
                self.console.log(LogLevel::Notice, &n);
            }
        }
        let Some(c) = self.conns[slot].as_mut() else {
            return false;
        };
        // Bytes for TLS to seal need another round of the pump (which seals them).
        let mut again = false;
        if let Some(ex) = c.ex.as_mut().filter(|ex| !ex.outgoing.is_empty()) {
            // A conversation's reply, sent as a request is.
            let out = std::mem::take(&mut ex.outgoing);
            match c.tls.is_some() {
                true => {
                    c.plain_out.extend_from_slice(&out);
                    again = true;
                }
                false => c.out.extend_from_slice(&out),
            }
        }
        if let Some(then) = c.ex.as_mut().and_then(|ex| ex.start_tls.take()) {
            // TLS begins on this connection (FTP's AUTH TLS): the bytes after go under it, and
            // the pump's next round makes the ClientHello.
            // Bytes that came after the server's go-ahead, in the clear, would be read as if they
            // had come under TLS: whoever is on the path could answer the commands to come
            // (the STARTTLS injection of CVE-2011-0411).
            let after = c.ex.as_ref().is_some_and(|ex| !ex.head.is_empty());
            if c.tls.is_some() || c.rb_start != c.rb_end || after {
                let f = Failure::fatal(
                    ExitCode::UNKNOWN,
                    "the server sent more after its TLS go-ahead (AUTH TLS): refused",
                );
                self.fail_conn(slot, f);
                return false;
            }
            if !self.put_tls(slot) {
                return false;
            }
            if let Some(c) = self.conns[slot].as_mut() {
                c.plain_out = then;
            }
            return true;
        }
        match c.ex.as_mut().and_then(|ex| ex.data_port.take()) {
            Some(DataAsk::Connect(port)) => self.open_data(slot, port),
            Some(DataAsk::Listen) => self.listen_for_data(slot),
            None => {}
        }
        let ask = self.conns[slot]
            .as_mut()
            .and_then(|c| c.ex.as_mut())
            .and_then(|ex| ex.serve_ask.take());
        if let Some(ask) = ask {
            self.serve(slot, ask);
        }
        let Some(c) = self.conns[slot].as_ref() else {
            return false;
        };
        let Some(ex) = c.ex.as_ref().filter(|ex| ex.phase == Phase::Decide) else {
            return again;
        };
        let on_data = ex.answer.as_ref().is_some_and(|a| a.on_data);
        if on_data && ex.error.is_none() && matches!(c.data, Some(DataConn::Listening(..))) {
            // The server connects once it has answered: the answer waits for the accept.
            return false;
        }
        self.on_head(slot);
        true
    }

    /// Opens the data connection a conversation asked for, to `port` of its own peer; through
    /// the proxy's tunnel when the connection came through one (to that port of the server the
    /// tunnel went to, as aria2c does).
    fn open_data(&mut self, slot: usize, port: u16) {
        let Some(c) = self.conns[slot].as_mut() else {
            return;
        };
        let refused = |m: &str| Failure::retry(ExitCode::UNKNOWN, m.to_string());
        let tunnel = c.proxy.is_some() && c.server.tunnels();
        let f = match (c.peer, &c.data, &c.control) {
            _ if port == 0 => refused("the server named port 0 for the data connection"),
            (Some(peer), None, None) => {
                let (addr, then) = match tunnel {
                    // (The peer is the proxy.)
                    true => (peer, Some(port)),
                    false => (SocketAddr::new(peer.ip(), port), None),
                };
                let id = c.id;
                let through = match tunnel {
                    true => format!(" (the proxy, for port {port} of {})", c.server.host),
                    false => String::new(),
                };
                self.console.log(
                    LogLevel::Info,
                    &format!("CUID#{id} - Connecting to {addr}{through} for the data"),
                );
                match self.reactor.socket(&addr) {
                    Ok(fd) => {
                        let tag = Tag::DataConnect { slot, id };
                        let op = self.reactor.connect(tag, fd.clone(), addr);
                        if let Some(c) = self.conns[slot].as_mut() {
                            c.data = Some(DataConn::Connecting(fd, then));
                            c.inflight.push(op);
                        }
                        return;
                    }
                    Err(e) => refused(&format!("cannot create socket: {e}")),
                }
            }
            (None, _, _) => refused("a data connection asked for before the connection was made"),
            _ => refused("a second data connection asked for in one exchange"),
        };
        self.fail_conn(slot, f);
    }

    /// The data connection reached the proxy: ask it for the tunnel to `port` of the server.
    fn open_data_tunnel(&mut self, slot: usize, fd: Fd, port: u16) {
        let now = self.reactor.now();
        let Some(c) = self.conns[slot].as_mut() else {
            return;
        };
        let Some(p) = c.proxy.as_ref() else {
            return;
        };
        let (h, first) =
            crate::http::proxy::Handshake::start(p, &c.server.host, port, c.socks_target);
        let id = c.id;
        c.data = Some(DataConn::Tunneling(fd.clone(), h, now));
        let send = Tag::DataTunnelSend { slot, id, sent: 0 };
        let op = self.reactor.send(send, fd.clone(), first, 0);
        c.inflight.push(op);
        let op = self
            .reactor
            .read(Tag::DataTunnelRead { slot, id }, fd, vec![0; 4096]);
        c.inflight.push(op);
    }

    /// Some of what the data connection says to the proxy went out; the rest goes next.
    pub(super) fn on_data_tunnel_send(&mut self, slot: usize, res: i32, buf: Vec<u8>, sent: usize) {
        if res < 0 {
            let f = Failure::retry(
                ExitCode::UNKNOWN,
                format!("the proxy for the data connection: {}", errno_text(res)),
            );
            return self.fail_conn(slot, f);
        }
        let sent = sent + res as usize;
        let Some(c) = self.conns[slot].as_mut() else {
            return;
        };
        let Some(DataConn::Tunneling(fd, ..)) = c.data.as_ref() else {
            return;
        };
        if sent < buf.len() {
            let id = c.id;
            let fd = fd.clone();
            let op = self
                .reactor
                .send(Tag::DataTunnelSend { slot, id, sent }, fd, buf, sent);
            c.inflight.push(op);
        }
    }

    /// The proxy answered on the data connection: the tunnel is open (the conversation hears
    /// the data connection is ready), needs more said or read, or failed.
    pub(super) fn on_data_tunnel_read(&mut self, slot: usize, res: i32, buf: Vec<u8>) {
        let proxy_failed = |m: String| {
            Failure::retry(
                ExitCode::UNKNOWN,
                format!("the proxy's tunnel for the data connection: {m}"),
            )
        };
        if res <= 0 {
            let why = match res {
                0 => "the proxy closed the connection".to_string(),
                _ => errno_text(res),
            };
            return self.fail_conn(slot, proxy_failed(why));
        }
        let Some(c) = self.conns[slot].as_mut() else {
            return;
        };
        let Some(DataConn::Tunneling(fd, h, _)) = c.data.as_mut() else {
            return;
        };
        let got = buf.get(..res as usize).unwrap_or(&[]);
        let (id, fd) = (c.id, fd.clone());
        match h.on_bytes(got) {
            Ok(crate::http::proxy::Step::Open) => {
                if !h.take_rest().is_empty() {
                    // (The server speaks only once asked for its file.)
                    let f = proxy_failed("bytes before the tunnel was used".to_string());
                    return self.fail_conn(slot, f);
                }
                c.data = Some(DataConn::Connected(fd));
                self.tell_conversation(slot, |conv| conv.data_ready());
            }
            Ok(step) => {
                if let crate::http::proxy::Step::Send(bytes) = step {
                    let send = Tag::DataTunnelSend { slot, id, sent: 0 };
                    let op = self.reactor.send(send, fd.clone(), bytes, 0);
                    c.inflight.push(op);
                }
                let read = Tag::DataTunnelRead { slot, id };
                let op = self.reactor.read(read, fd, vec![0; 4096]);
                c.inflight.push(op);
            }
            Err(e) => self.fail_conn(slot, proxy_failed(e.to_string())),
        }
    }

    /// Listens for the server's data connection on the address the connection leaves from, and
    /// tells the conversation where.
    fn listen_for_data(&mut self, slot: usize) {
        let Some(c) = self.conns[slot].as_ref() else {
            return;
        };
        let (id, fd) = (c.id, c.fd.clone());
        let taken = c.data.is_some() || c.control.is_some() || c.proxy.is_some();
        let local = fd.map(|fd| self.reactor.local_addr(&fd));
        let listened = match (taken, local) {
            (true, _) => Err("a second data connection asked for in one exchange".to_string()),
            (false, Some(Ok(local))) => {
                let at = SocketAddr::new(local.ip(), 0);
                self.reactor
                    .listen(&at)
                    .and_then(|l| Ok((self.reactor.local_addr(&l)?, l)))
                    .map_err(|e| format!("cannot listen for the data connection: {e}"))
            }
            (false, Some(Err(e))) => Err(format!("the connection's own address: {e}")),
            (false, None) => Err("no connection to listen beside".to_string()),
        };
        let (addr, listener) = match listened {
            Ok(l) => l,
            Err(m) => return self.fail_conn(slot, Failure::retry(ExitCode::UNKNOWN, m)),
        };
        self.console.log(
            LogLevel::Info,
            &format!("CUID#{id} - Waiting for the data connection at {addr}"),
        );
        let op = self
            .reactor
            .accept(Tag::DataAccept { slot, id }, listener.clone());
        let now = self.reactor.now();
        let Some(c) = self.conns[slot].as_mut() else {
            return;
        };
        c.data = Some(DataConn::Listening(listener, now));
        c.inflight.push(op);
        self.tell_conversation(slot, |conv| conv.listening(addr));
    }

    /// Hands the conversation of the exchange on `slot` an event and takes its step.
    pub(super) fn tell_conversation(
        &mut self,
        slot: usize,
        event: impl FnOnce(&mut dyn crate::engine::sources::Conversation) -> Step,
    ) {
        let Some(ex) = self.conns[slot].as_mut().and_then(|c| c.ex.as_mut()) else {
            return;
        };
        let Some(conv) = ex.conversation.as_mut() else {
            return;
        };
        let step = event(conv.as_mut());
        if sink::take_step(ex, 0, step) {
            sink::converse(ex);
        }
        if self.conversed(slot) {
            // (Bytes for TLS to seal, or an answer taken: the pump goes on from there.)
            self.pump(slot);
        }
        self.after_io(slot);
    }

    /// The data connection connected (`res` 0) or failed.
    pub(super) fn on_data_connect(&mut self, slot: usize, res: i32) {
        if res < 0 {
            let f = if res == -libc::ECANCELED {
                Failure::retry(
                    ExitCode::TIMEOUT,
                    "Timeout while opening the data connection",
                )
            } else {
                Failure::retry(
                    ExitCode::UNKNOWN,
                    format!(
                        "Failed to establish the data connection, cause: {}",
                        errno_text(res)
                    ),
                )
            };
            self.fail_conn(slot, f);
            return;
        }
        let Some(c) = self.conns[slot].as_mut() else {
            return;
        };
        match c.data.take() {
            Some(DataConn::Connecting(fd, Some(port))) => {
                return self.open_data_tunnel(slot, fd, port);
            }
            Some(DataConn::Connecting(fd, None)) => c.data = Some(DataConn::Connected(fd)),
            other => c.data = other,
        }
        self.tell_conversation(slot, |conv| conv.data_ready());
    }

    /// The server's data connection accepted (active mode), or the accept failed.
    pub(super) fn on_data_accept(&mut self, slot: usize, res: i32, owned: Owned) {
        let accepted = owned.into_accepted().filter(|_| res >= 0);
        let Some(conn) = accepted else {
            let f = Failure::retry(
                ExitCode::UNKNOWN,
                format!(
                    "Failed to accept the data connection, cause: {}",
                    errno_text(res)
                ),
            );
            return self.fail_conn(slot, f);
        };
        let Some(c) = self.conns[slot].as_mut() else {
            return;
        };
        // The listener goes: one connection is all it was for.
        let fd: Fd = std::rc::Rc::new(conn);
        c.data = Some(DataConn::Connected(fd));
        let waiting = c.ex.as_ref().is_some_and(|ex| ex.phase == Phase::Decide);
        if waiting {
            self.on_head(slot);
        }
        self.after_io(slot);
    }

    /// A listening data socket the server has not connected to within the connect timeout
    /// fails its exchange (the tick asks).
    pub(super) fn data_overdue(&mut self, now: Instant, limit: Duration) {
        for slot in 0..self.conns.len() {
            let since = self.conns[slot].as_ref().and_then(|c| match c.data {
                Some(DataConn::Listening(_, since)) => {
                    Some((since, "the server's data connection"))
                }
                Some(DataConn::Tunneling(_, _, since)) => {
                    Some((since, "the proxy's tunnel for the data connection"))
                }
                _ => None,
            });
            if let Some((since, what)) = since {
                if now.saturating_duration_since(since) >= limit {
                    let f = Failure::retry(
                        ExitCode::TIMEOUT,
                        format!("Timeout while waiting for {what}"),
                    );
                    self.fail_conn(slot, f);
                }
            }
        }
    }

    /// An answer whose bytes come on the data connection: the body moves there, and the
    /// connection the conversation went on is set aside with what it sent after the answer.
    /// False when it cannot (the connection has then failed).
    pub(super) fn move_to_data(&mut self, slot: usize) -> bool {
        let Some(c) = self.conns[slot].as_mut() else {
            return false;
        };
        let connected = c.data.as_ref().is_some_and(DataConn::connected);
        let why = match (connected, c.recv.is_some() || c.sending) {
            (true, false) => None,
            (true, true) => Some("the answer came with a receive in flight"),
            _ => Some("the answer came before its data connection"),
        };
        if let Some(why) = why {
            self.fail_conn(slot, Failure::retry(ExitCode::UNKNOWN, why));
            return false;
        }
        let Some(DataConn::Connected(data)) = c.data.take() else {
            return false;
        };
        // What came after the answer on the control connection is not the body's: it stays with
        // the control connection (FTP: the transfer's last reply, read if the connection is kept),
        // with the bytes of the read block not yet opened (TLS records after the answer's).
        let rest =
            c.ex.as_mut()
                .map(|ex| std::mem::take(&mut ex.head_rest))
                .unwrap_or_default();
        let raw = c
            .rbuf
            .as_ref()
            .and_then(|b| b.as_slice().get(c.rb_start..c.rb_end))
            .map(<[u8]>::to_vec)
            .unwrap_or_default();
        c.rb_start = 0;
        c.rb_end = 0;
        let control_tls = c.tls.take();
        let under_tls = control_tls.is_some();
        if let Some(fd) = c.fd.replace(data) {
            c.control = Some(Parked {
                fd,
                tls: control_tls,
                rest,
                raw,
            });
        }
        c.eof = false;
        c.tls_peer_closed = false;
        c.tls_cipher = None;
        c.low_water = crate::engine::conn::LowWater::default();
        // FTPS: the data connection is under TLS too, resuming the control connection's session
        // (the same configuration and server name), as servers may require.
        !under_tls || self.put_tls(slot)
    }

    /// The body that came on the data connection is all in: when the conversation can leave its
    /// control connection for another exchange, the data connection closes and the control
    /// connection takes its place, kept with what the conversation leaves on it
    /// (`Conn::kept`). False when it cannot (the connection then closes as before).
    pub(super) fn keep_control(&mut self, slot: usize) -> bool {
        let Some(c) = self.conns[slot].as_mut() else {
            return false;
        };
        // (Nothing of the data connection's may be on its way out or waiting to go: it would
        // go out on the control connection.)
        let idle = c.rbuf.is_some()
            && c.recv.is_none()
            && !c.sending
            && c.out.is_empty()
            && c.plain_out.is_empty();
        let (Some(ex), Some(parked), true) = (c.ex.as_mut(), c.control.as_mut(), idle) else {
            return false;
        };
        let d = &self.dls[ex.dl];
        let netrc = self.identity.ftp_netrc(&ex.url, d.opts.no_netrc);
        let Some(key) = crate::engine::sources::kept_key(&ex.url, &d.opts, netrc) else {
            return false;
        };
        let Some(conv) = ex.conversation.as_mut() else {
            return false;
        };
        // Replies that came after the answer (the transfer's last, from a quick server) are
        // read now; a part of one, or one that fails the conversation, keeps nothing.
        let mut rest = std::mem::take(&mut parked.rest);
        while !rest.is_empty() {
            match conv.received(&rest) {
                (used, Step::Wait) if used > 0 => {
                    rest.drain(..used.min(rest.len()));
                }
                _ => return false,
            }
        }
        let Some(kept) = conv.keep() else {
            return false;
        };
        let Some(parked) = c.control.take() else {
            return false;
        };
        // The data connection goes (its socket closes with its last operation).
        c.fd = Some(parked.fd);
        c.tls = parked.tls;
        c.data = None;
        c.rb_start = 0;
        c.rb_end = 0;
        c.eof = false;
        c.tls_peer_closed = false;
        c.tls_cipher = None;
        c.tls_blocked = false;
        c.low_water = crate::engine::conn::LowWater::default();
        c.kept = Some(crate::engine::conn::KeptConn {
            key,
            kept,
            raw: parked.raw,
        });
        true
    }
}
