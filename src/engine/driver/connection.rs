//! The connection life cycle: connect (each resolved address in turn), TLS set-up, sending the
//! request, keep-alive reuse, and closing (the receive in flight is `receive.rs`). Failures of a
//! connection are decided here: retry, another mirror, or the end of the download.
use super::*;

/// Most names the DNS cache keeps; past that it starts afresh.
const DNS_CACHE: usize = 256;

/// Names resolved during the run, so that later connections to a host skip the lookup. Bounded: a
/// run over a list of many hosts forgets them all once `DNS_CACHE` are known, rather than growing.
#[derive(Default)]
pub(super) struct DnsCache {
    names: HashMap<(String, u16), Vec<SocketAddr>>,
}

impl DnsCache {
    pub(super) fn get(&self, host: &str, port: u16) -> Option<&[SocketAddr]> {
        self.names.get(&(host.to_string(), port)).map(Vec::as_slice)
    }

    pub(super) fn insert(&mut self, host: String, port: u16, addrs: Vec<SocketAddr>) {
        if self.names.len() >= DNS_CACHE && !self.names.contains_key(&(host.clone(), port)) {
            self.names.clear();
        }
        self.names.insert((host, port), addrs);
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.names.len()
    }
}

impl<R: Reactor<Tag>> Engine<'_, R> {
    /// Starts work `w` now, or, with no connection slot or block free, leaves it to the scheduler
    /// (one more connection wanted by its download).
    pub(super) fn open_or_defer(&mut self, w: Want) {
        let dl = w.dl;
        if !self.open(w) {
            self.dls[dl].wanted += 1;
        }
    }

    /// Starts work `w` on an idle kept-alive connection to its server, or on a new connection.
    pub(super) fn open(&mut self, w: Want) -> bool {
        let routes = &self.dls[w.dl].opts.proxies;
        let proxy = routes.for_url(&w.url).cloned();
        let key = ServerKey::through(&w.url, routes);
        // A protocol that keeps its connections (FTP) goes only on one kept for an exchange like
        // its own (the same login); HTTP only on one no protocol kept.
        let kept_key = match crate::engine::sources::is_conversation(&w.url)
            && !proxy_reads_ftp(&w.url, &key)
        {
            true => {
                let opts = &self.dls[w.dl].opts;
                let netrc = self.identity.ftp_netrc(&w.url, opts.no_netrc);
                Some(crate::engine::sources::kept_key(&w.url, opts, netrc))
            }
            false => None,
        };
        let idle = loop {
            let found = self.conns.iter().position(|c| {
                c.as_ref().is_some_and(|c| {
                    c.state == ConnState::Idle
                        && c.server == key
                        && match (&c.kept, &kept_key) {
                            (Some(k), Some(want)) => want.as_ref() == Some(&k.key),
                            (None, None) => true,
                            _ => false,
                        }
                })
            });
            let Some(slot) = found else { break None };
            if self.conns[slot].as_ref().is_some_and(|c| c.kept.is_some()) {
                // (What waits on a kept connection is its last transfer's reply: the
                // conversation reads it, and a connection that went meanwhile is replaced.)
                break Some(slot);
            }
            // Bytes that came after the last response's end (a server sending past its framing)
            // would be read as this request's answer, and a closed connection would fail it:
            // such a connection goes, and the next idle one (or a new one) is tried.
            let fd = self.conns[slot].as_ref().and_then(|c| c.fd.clone());
            if fd.is_some_and(|fd| self.reactor.quiet(&fd)) {
                break Some(slot);
            }
            self.close_conn(slot);
        };
        if let Some(slot) = idle {
            if let Some(c) = self.conns[slot].as_mut() {
                c.state = ConnState::Open;
                c.want = Some(w);
                c.reused = true;
            }
            self.dispatch(slot);
            return true;
        }
        let slot = match self.conns.iter().position(Option::is_none) {
            Some(s) => s,
            None => {
                // Make room by closing an idle connection to another server.
                let Some(victim) = self
                    .conns
                    .iter()
                    .position(|c| c.as_ref().is_some_and(|c| c.state == ConnState::Idle))
                else {
                    return false;
                };
                self.close_conn(victim);
                victim
            }
        };
        // A closed connection's read block comes back when its last operation completes; until
        // then no new connection can start.
        let Some(rbuf) = self.reactor.pool().alloc(Class::Read) else {
            return false;
        };
        let id = self.next_id;
        self.next_id += 1;
        let mut conn = Conn::new(id, key.clone(), rbuf);
        let host = w.url.host().map(|h| h.to_owned());
        let other_protocol =
            crate::engine::sources::is_conversation(&w.url) && !proxy_reads_ftp(&w.url, &key);
        let active = !self.dls[w.dl].opts.ftp_pasv && w.url.scheme() != "sftp";
        conn.want = Some(w);
        conn.proxy = proxy.clone();
        self.conns[slot] = Some(conn);
        if proxy.is_some() && other_protocol && active {
            // Through a tunnel the server could only connect back to the proxy's side.
            let f = Failure::fatal(
                ExitCode::UNKNOWN,
                "FTP's active mode (--ftp-pasv=false) cannot go through a proxy's tunnel",
            );
            self.fail_conn(slot, f);
            return true;
        }
        if let Some(p) = proxy {
            self.connect_via(slot, &p, host);
            return true;
        }
        match host.as_ref().and_then(literal_ip) {
            Some(ip) => self.connect_to(slot, vec![SocketAddr::new(ip, key.port)]),
            None => {
                if let Some(addrs) = self.dns.get(&key.host, key.port) {
                    let addrs = addrs.to_vec();
                    self.connect_to(slot, addrs);
                } else if self.look_up(id, &key.host, key.port) {
                } else {
                    let f = Failure::retry(
                        ExitCode::RESOLVE,
                        format!("Name resolution for {} failed: no resolver", key.host),
                    );
                    self.fail_conn(slot, f);
                }
            }
        }
        true
    }

    pub(super) fn connect_to(&mut self, slot: usize, addrs: Vec<SocketAddr>) {
        let mut addrs = addrs;
        if self.s.disable_ipv6 {
            addrs.retain(SocketAddr::is_ipv4);
            if addrs.is_empty() {
                if let Some(c) = self.conns[slot].as_mut() {
                    c.connect_error = -libc::EAFNOSUPPORT;
                }
            }
        }
        if let Some(c) = self.conns[slot].as_mut() {
            c.state = ConnState::Connecting { addrs, next: 0 };
        }
        self.connect_next(slot);
    }

    pub(super) fn connect_next(&mut self, slot: usize) {
        let Some(c) = self.conns[slot].as_mut() else {
            return;
        };
        let ConnState::Connecting { addrs, next } = &mut c.state else {
            return;
        };
        let Some(addr) = addrs.get(*next).copied() else {
            let f = if c.connect_error == -libc::ECANCELED {
                Failure::retry(ExitCode::TIMEOUT, "Timeout while connecting to the server")
            } else {
                Failure::retry(
                    ExitCode::UNKNOWN,
                    format!(
                        "Failed to establish connection, cause: {}",
                        errno_text(c.connect_error)
                    ),
                )
            };
            self.fail_conn(slot, f);
            return;
        };
        *next += 1;
        let (id, retrying) = (c.id, *next > 1);
        if retrying {
            let failed = addrs[*next - 2];
            let why = errno_text(c.connect_error);
            self.console.log(
                LogLevel::Info,
                &format!(
                    "CUID#{id} - Could not connect to {failed} ({why}). Trying another address"
                ),
            );
        }
        self.console
            .log(LogLevel::Info, &format!("CUID#{id} - Connecting to {addr}"));
        let socket = self.reactor.socket(&addr).and_then(|fd| {
            // `--interface`: the connection leaves from an address of its entry (connections
            // take the entries in turn) of the target's family; none is a failed connect, and
            // the next address is tried.
            if !self.binds.is_empty() {
                let entry = &self.binds[(id as usize) % self.binds.len()];
                let from = entry
                    .iter()
                    .find(|ip| ip.is_ipv4() == addr.is_ipv4())
                    .copied()
                    .ok_or_else(|| std::io::Error::from_raw_os_error(libc::EADDRNOTAVAIL))?;
                sys::bind_to(fd.as_raw_fd(), from)?;
            }
            Ok(fd)
        });
        match socket {
            Err(e) if !self.binds.is_empty() => {
                if let Some(c) = self.conns[slot].as_mut() {
                    c.connect_error = -e.raw_os_error().unwrap_or(libc::EADDRNOTAVAIL);
                }
                self.connect_next(slot);
            }
            Ok(fd) => {
                let op = self
                    .reactor
                    .connect(Tag::Connect { slot, id }, fd.clone(), addr);
                if let Some(c) = self.conns[slot].as_mut() {
                    c.fd = Some(fd);
                    c.peer = Some(addr);
                    c.inflight.push(op);
                }
            }
            Err(e) => {
                let f = Failure::retry(ExitCode::UNKNOWN, format!("cannot create socket: {e}"));
                self.fail_conn(slot, f);
            }
        }
    }

    pub(super) fn on_connect(&mut self, slot: usize, res: i32) {
        if res < 0 {
            // Refused, unreachable or timed out: try the next address.
            if let Some(c) = self.conns[slot].as_mut() {
                c.fd = None;
                c.connect_error = res;
            }
            self.connect_next(slot);
            return;
        }
        let tls = match self.conns[slot].as_mut() {
            Some(c) => {
                c.state = ConnState::Open;
                c.server.https
            }
            None => return,
        };
        // Through a proxy, the tunnel opens first; TLS and the request wait for it.
        self.start_tunnel(slot);
        if tls && !self.put_tls(slot) {
            return;
        }
        self.dispatch(slot);
    }

    /// Puts a new TLS session ([`Self::tls_session`]) on connection `slot`; false when that
    /// failed the connection.
    pub(super) fn put_tls(&mut self, slot: usize) -> bool {
        match self.tls_session(slot) {
            Ok(s) => {
                if let Some(c) = self.conns[slot].as_mut() {
                    c.tls = Some(s);
                }
                true
            }
            Err(f) => {
                self.fail_conn(slot, f);
                false
            }
        }
    }

    /// A TLS client session for connection `slot`'s server (the configuration made on first
    /// use): HTTPS and implicit FTPS as they connect, FTP's `AUTH TLS`, and FTPS data
    /// connections (which resume the control connection's session: the same configuration and
    /// server name).
    pub(super) fn tls_session(&mut self, slot: usize) -> Result<TlsSession, Failure> {
        {
            if self.tls.is_none() {
                let options = crate::tls::TlsOptions {
                    ca_file: self.s.ca_certificate.as_deref(),
                    verify: self.s.check_certificate,
                    certificate: self.s.certificate.as_deref(),
                    private_key: self.s.private_key.as_deref(),
                    tls13_only: self.s.tls13_only,
                };
                match TlsConfig::with(&options) {
                    Ok(c) => self.tls = Some(c),
                    Err(e) => return Err(Failure::fatal(ExitCode::UNKNOWN, e.to_string())),
                }
            }
            let gone = || Failure::retry(ExitCode::UNKNOWN, "the connection is gone");
            let Some(cfg) = &self.tls else {
                return Err(gone());
            };
            let session = {
                let Some(c) = self.conns[slot].as_ref() else {
                    return Err(gone());
                };
                let host = url::Host::parse(&c.server.host).or_else(|_| {
                    url::Host::parse(c.server.host.trim_start_matches('[').trim_end_matches(']'))
                });
                match host {
                    Ok(h) => {
                        let h: url::Host<&str> = match &h {
                            url::Host::Domain(d) => url::Host::Domain(d.as_str()),
                            url::Host::Ipv4(a) => url::Host::Ipv4(*a),
                            url::Host::Ipv6(a) => url::Host::Ipv6(*a),
                        };
                        TlsSession::new(cfg, &h).map_err(|e| e.to_string())
                    }
                    Err(e) => Err(e.to_string()),
                }
            };
            session.map_err(|e| Failure::fatal(ExitCode::UNKNOWN, e))
        }
    }

    /// A connected (or reused) connection starts the exchange it was opened for.
    pub(super) fn dispatch(&mut self, slot: usize) {
        let Some(w) = self.conns[slot].as_mut().and_then(|c| c.want.take()) else {
            return;
        };
        let reserve = self.split_reserve();
        let d = &mut self.dls[w.dl];
        if d.state != DlState::Active || d.error.is_some() {
            self.release_conn(slot, w.dl);
            return;
        }
        let Some(c) = self.conns[slot].as_ref() else {
            return;
        };
        let ex = match d.plan.as_mut() {
            None => Exchange::new(
                (w.dl, d.attempt),
                w.url,
                w.mirror,
                d.continue_from.map(|l| (l, None)),
                0,
            ),
            Some(plan) => {
                if !d.ranges_ok {
                    self.release_conn(slot, w.dl);
                    return;
                }
                if d.resumed && !d.ranges_confirmed && plan.is_complete() {
                    // A control file claims every byte: the server is asked whether the file is
                    // still there, of that length (`on_claimed_whole`), before the download ends.
                    let total = plan.total();
                    let ex =
                        Exchange::new((w.dl, d.attempt), w.url, w.mirror, Some((total, None)), 0);
                    let mut ex = ex;
                    ex.redirects = w.redirects;
                    self.begin_exchange(slot, ex);
                    return;
                }
                match plan.take(c.id, |_| reserve) {
                    Some(seg) => {
                        let s = plan.segment(seg);
                        let total = plan.total();
                        let last = if s.end == total {
                            None
                        } else {
                            Some(s.end - 1)
                        };
                        let last = last.or(Some(total - 1));
                        Exchange::new((w.dl, d.attempt), w.url, w.mirror, Some((s.pos, last)), seg)
                    }
                    None => {
                        self.release_conn(slot, w.dl);
                        return;
                    }
                }
            }
        };
        let mut ex = ex;
        ex.redirects = w.redirects;
        self.begin_exchange(slot, ex);
    }

    /// The connection has no work for download `dl` any more: keep it for reuse.
    pub(super) fn release_conn(&mut self, slot: usize, dl: usize) {
        let reusable = self.conns[slot].as_ref().is_some_and(|c| {
            c.state == ConnState::Open
                && !c.eof
                && !c.tls_peer_closed
                && c.tls_cipher.is_none()
                && c.fd.is_some()
                // (A data connection, or one waiting for it, takes no other exchange.)
                && c.data.is_none()
                && c.control.is_none()
        });
        if reusable {
            if let Some(ex) = self.conns[slot].as_mut().and_then(|c| c.ex.take()) {
                self.credit(&ex);
            }
            if let Some(c) = self.conns[slot].as_mut() {
                c.state = ConnState::Idle;
                c.want = None;
            }
        } else {
            self.close_conn(slot);
        }
        self.maybe_finish(dl);
    }

    pub(super) fn begin_exchange(&mut self, slot: usize, ex: Exchange) {
        let mut ex = ex;
        let opts = &self.dls[ex.dl].opts;
        let netrc = self.identity.ftp_netrc(&ex.url, opts.no_netrc);
        let by_proxy = self.conns[slot]
            .as_ref()
            .is_some_and(|c| proxy_reads_ftp(&ex.url, &c.server));
        let conv = match by_proxy {
            // The HTTP proxy speaks FTP: the request is HTTP's, `GET ftp://...`.
            true => None,
            false => crate::engine::sources::conversation_for(&ex.url, opts, netrc),
        };
        let kept = self.conns[slot].as_mut().and_then(|c| c.kept.take());
        debug_assert!(
            kept.is_none() || conv.is_some(),
            "a kept connection given to another protocol"
        );
        if let Some(mut conv) = conv {
            // A protocol other than HTTP: its machine says what opens the exchange.
            conv.have(&self.dls[ex.dl].claims());
            let raw = kept.map(|k| {
                conv.carry_on(k.kept);
                k.raw
            });
            let req = conv.begin(&ex.url, ex.range);
            if let Some(raw) = raw {
                // On a kept connection nothing may come before the conversation's first bytes
                // are answered: a failure to begin is said now. What it had received and not
                // opened is read first.
                if let (_, crate::engine::sources::Step::Fail(f)) = conv.received(&[]) {
                    ex.error = Some(f);
                }
                if let Some(c) = self.conns[slot].as_mut() {
                    if let Some(b) = c.rbuf.as_mut().filter(|b| b.len() >= raw.len()) {
                        b.as_mut_slice()[..raw.len()].copy_from_slice(&raw);
                        c.rb_start = 0;
                        c.rb_end = raw.len();
                    }
                }
            }
            ex.conversation = Some(conv);
            self.send_exchange(slot, ex, req);
            return;
        }
        let mut req = Vec::with_capacity(512);
        let mut authorization = self.authorization(ex.dl, ex.mirror, &ex.url);
        // FTP through a proxy that fetches it: the FTP login goes to the proxy as aria2c sends
        // it, the user in the target and both in `Authorization`.
        let ftp_login = by_proxy.then(|| {
            let opts = &self.dls[ex.dl].opts;
            super::super::ftp::proxy_login(&ex.url, opts, netrc)
        });
        if let Some((user, pass)) = &ftp_login {
            use base64::Engine as _;
            let b64 = base64::engine::general_purpose::STANDARD.encode(format!("{user}:{pass}"));
            authorization = Some(format!("Basic {b64}"));
        }
        let cookie = self.identity.cookie_header(&ex.url);
        // Through an HTTP proxy without a tunnel the proxy reads the request itself.
        let (absolute_form, proxy_authorization) = match self.conns[slot].as_ref() {
            Some(c) => match &c.proxy {
                Some(p) if !c.server.tunnels() => (true, p.credentials.as_ref().map(|c| c.basic())),
                _ => (false, None),
            },
            None => (false, None),
        };
        let d = &self.dls[ex.dl];
        // `-c` over a file shorter than one 16 KiB block asks for the whole file (`bytes=0-`),
        // without a Range header, as aria2c does: its answer is read as a range from 0.
        // (aria2c asks a proxy for FTP ranges without their end; ringdl names the end, as for
        // HTTP, so a connection is not left sending past its range: K-FTP.)
        let sent_range = ex.range.filter(|&r| r != (0, None));
        let mut headers = d.opts.headers.clone();
        if let (Some(since), None) = (&d.if_modified_since, ex.range) {
            headers.push(format!("If-Modified-Since: {since}"));
        }
        let if_range = d.validator.as_ref().and_then(|v| v.for_url(&ex.url));
        if let (Some(v), Some(_)) = (if_range, sent_range) {
            headers.push(format!("If-Range: {v}"));
        }
        // `--referer=*`: the URI asked for (without its credentials), made only then.
        let referer: Option<std::borrow::Cow<str>> = match d.opts.referer.as_deref() {
            Some("*") => {
                let mut u = ex.url.clone();
                let _ = u.set_username("");
                let _ = u.set_password(None);
                u.set_fragment(None);
                Some(u.to_string().into())
            }
            other => other.map(Into::into),
        };
        ex.sent_auth = authorization.is_some();
        // `--use-head`: the first request of a download asks with HEAD, then GETs follow.
        let probe = d.opts.use_head && !d.head_done && d.plan.is_none() && ex.range.is_none();
        ex.head_request = d.opts.dry_run || probe;
        http::write_request(
            &RequestSpec {
                method: if ex.head_request { "HEAD" } else { "GET" },
                url: &ex.url,
                range: sent_range,
                user_agent: &d.opts.user_agent,
                headers: &headers,
                keep_alive: d.opts.http_keep_alive,
                referer: referer.as_deref(),
                no_cache: d.opts.http_no_cache,
                authorization: authorization.as_deref(),
                cookie: cookie.as_deref(),
                // A range of an encoded body cannot be decoded on its own: only whole-file
                // requests may get one.
                accept_encoding: d.opts.http_accept_gzip && ex.range.is_none(),
                absolute_form,
                proxy_authorization: proxy_authorization.as_deref(),
                target_user: ftp_login.as_ref().map(|(u, _)| u.as_str()),
                want_digest: d.opts.want_digest,
                // Until the first answer, as aria2c: a server may answer with a Metalink.
                accept_metalink: !d.opts.from_metalink && d.plan.is_none(),
            },
            &mut req,
        );
        self.send_exchange(slot, ex, req);
    }

    /// Puts exchange `ex` on connection `slot` and sends its opening bytes `req`.
    fn send_exchange(&mut self, slot: usize, ex: Exchange, req: Vec<u8>) {
        let Some(c) = self.conns[slot].as_mut() else {
            return;
        };
        let mut ex = ex;
        ex.began = Some(self.reactor.now());
        c.ex = Some(ex);
        c.eof = false;
        if c.tls.is_some() {
            c.plain_out = req;
        } else if c.tunnel.is_some() {
            c.held_out = req;
        } else {
            c.out.extend_from_slice(&req);
        }
        self.pump(slot);
        self.after_io(slot);
    }

    pub(super) fn start_send(&mut self, slot: usize) {
        let Some(c) = self.conns[slot].as_mut() else {
            return;
        };
        if c.sending {
            return;
        }
        if c.out.is_empty() {
            // What a connection sends of the download's own bytes goes after what it had to say.
            self.send_served(slot);
            return;
        }
        let Some(fd) = c.fd.clone() else {
            return;
        };
        let buf = std::mem::take(&mut c.out);
        c.sending = true;
        let tag = Tag::Send {
            slot,
            id: c.id,
            sent: 0,
        };
        let op = self.reactor.send(tag, fd, buf, 0);
        c.inflight.push(op);
    }

    pub(super) fn on_send(&mut self, slot: usize, res: i32, buf: Vec<u8>, sent: usize) {
        if nothing_happened(res) || (res > 0 && sent + (res as usize) < buf.len()) {
            let sent = if res > 0 { sent + res as usize } else { sent };
            let Some(c) = self.conns[slot].as_mut() else {
                return;
            };
            let Some(fd) = c.fd.clone() else {
                return;
            };
            let tag = Tag::Send {
                slot,
                id: c.id,
                sent,
            };
            let op = self.reactor.send(tag, fd, buf, sent);
            c.inflight.push(op);
            return;
        }
        if res < 0 {
            let code = if res == -libc::ECANCELED {
                ExitCode::TIMEOUT
            } else {
                ExitCode::UNKNOWN
            };
            self.fail_conn(
                slot,
                Failure::retry(code, format!("send failed: {}", errno_text(res))),
            );
            return;
        }
        if let Some(c) = self.conns[slot].as_mut() {
            c.sending = false;
        }
        self.start_send(slot);
    }

    /// Tears a connection down at once: its operations in flight are abandoned (the reactor keeps
    /// what they own until their completions), its blocks go back to the pool as they are dropped.
    pub(super) fn close_conn(&mut self, slot: usize) {
        // What it received and can write is kept; the range it owned goes back to the plan, so no
        // range is ever left to a connection that is gone.
        self.return_range(slot);
        let Some(mut c) = self.conns.get_mut(slot).and_then(Option::take) else {
            return;
        };
        // A TLS connection says close_notify before it goes, when nothing else is on its way out
        // (a record half sent would be cut by it); never waited for.
        if let (Some(fd), Some(tls), false, true) =
            (&c.fd, c.tls.as_mut(), c.sending, c.out.is_empty())
        {
            if let Some(bye) = tls.close_notify() {
                self.reactor.farewell(fd, &bye);
            }
        }
        if let Some(ex) = &c.ex {
            self.credit(ex);
        }
        let dl =
            c.ex.as_ref()
                .map(|e| e.dl)
                .or(c.want.as_ref().map(|w| w.dl));
        if let Some(plan) = dl
            .and_then(|dl| self.dls.get_mut(dl))
            .and_then(|d| d.plan.as_mut())
        {
            plan.disown(c.id);
        }
        for op in c.inflight {
            self.reactor.abandon(op);
        }
    }

    /// A connection kept by its protocol (FTP's control connection) that failed before it was
    /// back where its login started: the connection's failure (closed while kept), not the
    /// source's; the exchange is made again on another connection. True when it was so.
    pub(super) fn redo_if_stale(&mut self, slot: usize, f: &Failure) -> bool {
        let Some(c) = self.conns[slot].as_ref() else {
            return false;
        };
        let Some(ex) = c.ex.as_ref() else {
            return false;
        };
        let stale = c.reused && ex.conversation.as_ref().is_some_and(|v| v.stale());
        if !stale {
            return false;
        }
        let (id, w) = (c.id, ex.again());
        self.console.log(
            LogLevel::Info,
            &format!(
                "CUID#{id} - The kept connection could not go on ({}); another is used",
                f.message
            ),
        );
        self.abandon_exchange(slot);
        self.open_or_defer(w);
        true
    }

    /// A connection finished its range: take more of the same download on the same connection.
    /// `url` is what the connection just fetched (on its own server, whichever mirror that is).
    pub(super) fn next_work(&mut self, slot: usize, dl: usize, url: Option<Url>, mirror: usize) {
        let server = self.conns[slot].as_ref().map(|c| c.server.clone());
        match url {
            Some(u) if self.dls[dl].ranges_ok && server == Some(ServerKey::of(&u)) => {
                if let Some(c) = self.conns[slot].as_mut() {
                    c.want = Some(Want {
                        dl,
                        url: u,
                        mirror,
                        redirects: 0,
                    });
                    c.reused = true;
                }
                self.dispatch(slot);
            }
            _ => self.release_conn(slot, dl),
        }
    }

    pub(super) fn fail_conn(&mut self, slot: usize, f: Failure) {
        if self.redo_if_stale(slot, &f) {
            return;
        }
        // A server that could not be reached (its name, its port) or that went silent is marked
        // failed in the server profile; through a proxy, the proxy may be what failed.
        if let Some(c) = self.conns[slot].as_ref() {
            let unreachable =
                matches!(c.state, ConnState::Resolving | ConnState::Connecting { .. })
                    || f.code == ExitCode::TIMEOUT
                    || f.code == ExitCode::RESOLVE;
            let url =
                c.ex.as_ref()
                    .map(|e| &e.url)
                    .or(c.want.as_ref().map(|w| &w.url));
            if let (true, None, Some(url)) = (unreachable, &c.proxy, url) {
                let url = url.clone();
                self.profile_failure(&url);
            }
        }
        let (dl, mirror, conn_id) = match self.conns[slot].as_ref() {
            Some(c) => match (&c.ex, &c.want) {
                (Some(ex), _) => (Some(ex.dl), ex.mirror, c.id),
                (None, Some(w)) => (Some(w.dl), w.mirror, c.id),
                (None, None) => (None, 0, c.id),
            },
            None => return,
        };
        let Some(dl) = dl else {
            self.close_conn(slot);
            return;
        };
        let d = &mut self.dls[dl];
        if d.error.is_some() || d.state != DlState::Active {
            self.return_range(slot);
            self.close_conn(slot);
            self.maybe_finish(dl);
            return;
        }
        // Messages name the URI as given (aria2 does not name the last redirect hop).
        let uri = d.uris.get(mirror).map(Url::to_string).unwrap_or_default();
        d.failures += 1;
        let others = d.other_mirrors(mirror);
        let last_try = !f.retry
            || (self.s.max_tries > 0 && d.failures >= self.s.max_tries)
            || d.bad_uris.iter().all(|b| *b);
        if last_try && !(f.retry && others) {
            // The download ends here; its connections, this one too, keep what they received.
            self.fail_download(dl, f, Some((conn_id, uri)));
            return;
        }
        self.return_range(slot);
        self.close_conn(slot);
        self.unpark(dl);
        let d = &mut self.dls[dl];
        if f.retry && others {
            // Another mirror may do better: say why this one failed and go on without it.
            d.bad_uris[mirror] = true;
            self.say_aborted(dl, conn_id, &uri, f.code, &f.message);
            if f.from_scratch {
                self.say_from_scratch(conn_id);
            }
        } else {
            self.console.log(
                LogLevel::Info,
                &format!(
                    "CUID#{conn_id} - Restarting the download. URI={}: {}",
                    crate::http::auth::redact(&uri),
                    f.message
                ),
            );
        }
        let wait = f.wait.unwrap_or(self.s.retry_wait);
        // (This connection's range went back to the plan when it closed.)
        let streamed_elsewhere = self.dls[dl]
            .plan
            .as_ref()
            .is_some_and(|p| p.segment(0).owner.is_some());
        if self.dls[dl].plan.is_some() && !self.dls[dl].length_known && !streamed_elsewhere {
            // A body of unknown length cannot be resumed: like aria2, start it over, forgetting
            // everything taken from the attempt that was cut (the digest's bytes too). Not when
            // the one that failed was not carrying it (a helper asked for before the length
            // turned out unknown): the body goes on where it is.
            self.start_over(dl, None);
        }
        let d = &self.dls[dl];
        let again = d.plan.is_none() || d.ranges_ok;
        let working = self.conns.iter().flatten().any(|c| c.works_for(dl));
        let d = &mut self.dls[dl];
        if !again && !working {
            // Nothing can carry on: a server refused ranges earlier (that is the reason to
            // report, when it is what stopped the splitting) and the connection that did not
            // need them is gone. Another mirror's earlier failure is never the reason: each
            // error is the one of the URI that produced it.
            let reason = d.soft_error.take().unwrap_or(f);
            self.fail_download(dl, reason, None);
            return;
        }
        if again {
            self.retry_later(dl, wait);
        }
        self.maybe_finish(dl);
    }

    /// aria2's one-line error for a connection that gives up on `uri`.
    pub(super) fn say_aborted(
        &mut self,
        dl: usize,
        conn: Owner,
        uri: &str,
        code: ExitCode,
        msg: &str,
    ) {
        // (The engine's own fetch of a Metalink describing a download fails quietly: the
        // download it describes goes on.)
        let own_fetch = self.dls[dl].opts.describes.is_some();
        let uri = crate::http::auth::redact(uri);
        let line = format!(
            "CUID#{conn} - Download aborted. URI={uri}: errorCode={} {msg}",
            code.0
        );
        match own_fetch {
            true => self.console.log(LogLevel::Info, &line),
            false => self.console.error(&line),
        }
    }
}

/// The address a URL's host names literally: an IP host, or, for a scheme the URL standard
/// does not know (`sftp://`, a test's `toy://`), whose host it leaves as written, text that is
/// one (`127.0.0.1`, `[::1]`).
fn literal_ip(host: &url::Host<String>) -> Option<std::net::IpAddr> {
    match host {
        url::Host::Ipv4(a) => Some((*a).into()),
        url::Host::Ipv6(a) => Some((*a).into()),
        url::Host::Domain(d) => d.trim_start_matches('[').trim_end_matches(']').parse().ok(),
    }
}

/// Whether an `ftp://` download on a connection to `key` goes to an HTTP proxy that fetches it
/// itself (`GET ftp://...`, as aria2c's `--proxy-method=get` does).
fn proxy_reads_ftp(url: &url::Url, key: &crate::engine::conn::ServerKey) -> bool {
    url.scheme() == "ftp" && key.via.is_some() && !key.tunnels()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A scheme the URL standard does not know keeps its host as written: an address there is
    /// still connected to directly, never looked up.
    #[test]
    fn an_address_in_an_opaque_host_is_taken_as_it_is() {
        for (u, ip) in [
            ("sftp://127.0.0.1:22/f", Some("127.0.0.1")),
            ("sftp://[::1]:22/f", Some("::1")),
            ("sftp://example.com/f", None),
            ("http://10.0.0.1/f", Some("10.0.0.1")),
        ] {
            let url = Url::parse(u).expect("a URL");
            let host = url.host().map(|h| h.to_owned()).expect("a host");
            let want = ip.map(|i| i.parse::<std::net::IpAddr>().expect("an address"));
            assert_eq!(literal_ip(&host), want, "{u}");
        }
    }

    /// Review finding 8: the DNS cache was never evicted, so a run over a list of many hosts kept
    /// every name it had resolved.
    #[test]
    fn the_dns_cache_stays_bounded_and_keeps_what_it_holds_up_to_date() {
        let mut cache = DnsCache::default();
        let a = |i: u16| vec![SocketAddr::from(([10, 0, (i >> 8) as u8, i as u8], 80))];
        for i in 0..(DNS_CACHE as u16 * 4) {
            cache.insert(format!("h{i}.example"), 80, a(i));
            assert!(cache.len() <= DNS_CACHE, "{} names after {i}", cache.len());
            assert_eq!(cache.get(&format!("h{i}.example"), 80), Some(&a(i)[..]));
        }
        // Another port is another entry; a name already there is replaced, not a reason to evict.
        let before = cache.len();
        let last = format!("h{}.example", DNS_CACHE as u16 * 4 - 1);
        assert_eq!(cache.get(&last, 443), None);
        cache.insert(last.clone(), 80, a(1));
        assert_eq!(cache.len(), before);
        assert_eq!(cache.get(&last, 80), Some(&a(1)[..]));
    }
}
