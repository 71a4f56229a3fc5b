//! The simulated servers: what a request on the wire gets (a route's file with or without ranges,
//! in its framing, a status, a redirect), sent in chunks the faults allow, misbehaving as drawn.
use super::*;

impl<T> Sim<T> {
    /// A receive on `fd` completed: bytes left with none asking for them start to wait.
    pub(super) fn received(&mut self, fd: RawFd) {
        let clock = self.clock;
        if let Some(w) = self.wires.get_mut(&fd) {
            w.receiving = w.receiving.saturating_sub(1);
            if w.receiving == 0 && w.readable() > 0 {
                w.unread_since.get_or_insert(clock);
            }
        }
    }

    /// The most one read may return now: any amount, or up to a drawn part of `max_chunk`.
    pub(super) fn chunk_limit(&mut self, max_chunk: usize) -> usize {
        if max_chunk == 0 {
            usize::MAX
        } else {
            1 + self.rng.below(max_chunk as u64) as usize
        }
    }

    /// The server behind `fd` answers every complete request in its inbound bytes.
    pub(super) fn serve(&mut self, fd: RawFd) {
        loop {
            let Some(wire) = self.wires.get_mut(&fd) else {
                return;
            };
            let Some(addr) = wire.server else { return };
            if wire.inbound.starts_with(b"TOY ") {
                if !self.serve_toy(fd, addr) {
                    return;
                }
                continue;
            }
            let mut headers = [httparse::EMPTY_HEADER; 32];
            let mut req = httparse::Request::new(&mut headers);
            let used = match req.parse(&wire.inbound) {
                Ok(httparse::Status::Complete(n)) => n,
                _ => return,
            };
            let method = req.method.unwrap_or("GET").to_string();
            let path = req.path.unwrap_or("/").to_string();
            let header = |name: &str| {
                req.headers
                    .iter()
                    .find(|h| h.name.eq_ignore_ascii_case(name))
                    .map(|h| String::from_utf8_lossy(h.value).to_string())
            };
            let range = header("Range");
            let if_range = header("If-Range");
            let close = header("Connection").is_some_and(|v| v.eq_ignore_ascii_case("close"));
            wire.inbound.drain(..used);
            let mut world = self.world.borrow_mut();
            world
                .requests
                .push((addr, format!("{method} {path}"), range.clone()));
            let mut route = world
                .servers
                .get(&addr)
                .and_then(|s| s.get(&path))
                .cloned()
                .unwrap_or(Route::Status(404));
            let faults = world.faults.clone();
            let sf = &faults.server;
            let mut if_range = if_range;
            // The file changed on the server, which answers ranges whatever If-Range says.
            if let (
                Some(after),
                Some(v2),
                Route::File {
                    ranges, framing, ..
                },
            ) = (sf.change_after, &sf.changed_to, &route)
            {
                if world.requests.len() > after {
                    route = Route::File {
                        data: v2.clone(),
                        etag: "\"v2\"".into(),
                        ranges: *ranges,
                        framing: *framing,
                    };
                    if range.is_some() && if_range.take().is_some_and(|v| v != "\"v2\"") {
                        world.fire("a range of another version, If-Range ignored");
                    }
                }
            }
            drop(world);
            let head_only = method == "HEAD";
            let cap = (sf.short_range > 0 && range.is_some() && self.rng2.chance(sf.short_range))
                .then(|| 1 + self.rng2.below(300_000) as usize);
            let (mut bytes, mut body_at, mut close_after) = respond(
                &route,
                range.as_deref(),
                if_range.as_deref(),
                head_only,
                &mut self.rng,
                cap,
            );
            let mut fired = Vec::new();
            if cap.is_some() && bytes.starts_with(b"HTTP/1.1 206") {
                fired.push("a range answered short");
            }
            let length_framed = !close_after;
            if sf.informational > 0 && self.rng2.chance(sf.informational) {
                let interim: &[u8] = b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </s.css>; rel=preload\r\n\r\n";
                bytes.splice(0..0, interim.iter().copied());
                body_at += interim.len();
                fired.push("1xx heads before the response");
            }
            if bytes.len() > body_at && length_framed && sf.fin > 0 && self.rng2.chance(sf.fin) {
                // (A close-delimited body cut by a FIN is whole as far as anyone can tell.)
                let keep = body_at + self.rng2.below((bytes.len() - body_at) as u64) as usize;
                bytes.truncate(keep);
                close_after = true;
                fired.push("a FIN mid-body");
            }
            let excess =
                length_framed && !close_after && sf.excess > 0 && self.rng2.chance(sf.excess);
            if !close_after && sf.idle_close > 0 && self.rng2.chance(sf.idle_close) {
                close_after = true;
                fired.push("a kept-alive connection closed after its response");
            }
            if !fired.is_empty() {
                let mut w = self.world.borrow_mut();
                for class in &fired {
                    w.fire(class);
                }
            }
            let cut_short = close_after && fired.contains(&"a FIN mid-body");
            let Some(wire) = self.wires.get_mut(&fd) else {
                return;
            };
            let before = wire.pending();
            let body_len = match wire.tls.as_mut() {
                Some(session) => {
                    // Sealed into records: the whole response stands for its body where faults
                    // fall. A server that closes says so with close_notify, unless it was cut.
                    session.seal(&bytes, &mut wire.outbound);
                    if close_after && !cut_short {
                        session.close(&mut wire.outbound);
                    }
                    // (A response without a body has none for a reset or a stall to fall in.)
                    if bytes.len() > body_at {
                        wire.pending() - before
                    } else {
                        0
                    }
                }
                None => {
                    wire.outbound.extend_from_slice(&bytes);
                    bytes.len() - body_at
                }
            };
            if wire.receiving == 0 {
                wire.unread_since.get_or_insert(self.clock);
            }
            wire.close_after |= close_after || close;
            if let Some(n) = faults.stall_after.filter(|&n| body_len > n) {
                wire.stall_in = Some(wire.pending() - body_len + n);
            } else if body_len > 0 && wire.reset_in.is_none() && self.rng.chance(faults.reset) {
                let already = wire.pending() - body_len;
                wire.reset_in = Some(already + self.rng.below(body_len as u64) as usize);
            } else if body_len > 0 && wire.stall_in.is_none() && self.rng.chance(faults.stall) {
                let already = wire.pending() - body_len;
                wire.stall_in = Some(already + self.rng.below(body_len as u64) as usize);
            }
            if excess {
                // A whole response more, after the body, that nobody asked for.
                let stray: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Length: 7\r\n\r\nGARBAGE";
                match wire.tls.as_mut() {
                    Some(session) => session.seal(stray, &mut wire.outbound),
                    None => wire.outbound.extend_from_slice(stray),
                }
                self.world.borrow_mut().fire("a response past the framing");
            }
            if wire.close_after {
                return;
            }
        }
    }
}
impl<T> Sim<T> {
    /// A toy server in active mode connects to the port its client on `control` named: a wire
    /// waiting in that listener's backlog (its descriptor not yet known: the body goes into it
    /// below through `data_of`). Now and then (`no_data_port`) it never connects.
    fn connect_back(&mut self, control: RawFd, no_data_port: u32) -> Option<RawFd> {
        let port = self.active_of.remove(&control)?;
        let listener = self
            .listeners
            .iter()
            .find(|(_, a)| a.port() == port)
            .map(|(fd, _)| *fd)?;
        if no_data_port > 0 && self.rng2.chance(no_data_port) {
            self.world
                .borrow_mut()
                .fire("a server that never connects back");
            // The DATA line goes out; the data connection never comes.
            return Some(-1);
        }
        // The wire is made here, under a key no descriptor has, and queued in the listener's
        // backlog once its body is in (the end of `serve_toy`).
        self.next_sock += 1;
        let key = -2 - self.next_sock;
        self.wires.insert(key, Wire::default());
        self.data_of.insert(key, listener);
        Some(key)
    }

    /// The toy protocol's server side (`simulation/toy.rs` is its client): one line from the
    /// inbound bytes answered, with the route's file. False while no whole line has come.
    ///
    /// `TOY HELLO path` → `TOY READY total ranges(0|1)`, `TOY NOTFOUND` or `TOY BUSY`;
    /// `TOY SEND path first end|-` → `TOY DATA first len` and the bytes (`-` for a body that ends
    /// when the server closes: the route's framing is not `Length`); the server closes after.
    /// With `World::toy_data`, READY ends in ` data`, the client asks `TOY PASV` → `TOY PORT p`
    /// (a port of the server's address that takes one connection; now and then none does), opens
    /// it, then sends `SEND`: the bytes go on the data connection, which closes after them.
    fn serve_toy(&mut self, fd: RawFd, addr: SocketAddr) -> bool {
        let Some(wire) = self.wires.get_mut(&fd) else {
            return false;
        };
        let Some(nl) = wire.inbound.iter().position(|&b| b == b'\n') else {
            return false;
        };
        let line: String = String::from_utf8_lossy(&wire.inbound[..nl]).into();
        let words: Vec<&str> = line.split(' ').collect();
        let path = words.get(2).copied().unwrap_or("/");
        if words.get(1) == Some(&"BYTES") {
            // `TOY BYTES path first len` and the bytes: taken once all of them are here.
            let number = |i: usize| words.get(i).and_then(|w| w.parse::<usize>().ok());
            let (first, len) = (number(3).unwrap_or(0), number(4).unwrap_or(0));
            if wire.inbound.len() < nl + 1 + len {
                return false;
            }
            let bytes: Vec<u8> = wire.inbound[nl + 1..nl + 1 + len].to_vec();
            wire.inbound.drain(..nl + 1 + len);
            let mut world = self.world.borrow_mut();
            let truth = match (
                &world.truth,
                world.servers.get(&addr).and_then(|s| s.get(path)),
            ) {
                (Some(data), _) | (None, Some(Route::File { data, .. })) => {
                    data.get(first..first + len).map(<[u8]>::to_vec)
                }
                _ => None,
            };
            world.uploaded += len as u64;
            if truth.as_deref() != Some(&bytes[..]) {
                let why = format!("{len} bytes at {first} differ from the file's");
                world.upload_errors.push(why);
            }
            return true;
        }
        wire.inbound.drain(..=nl);
        let mut world = self.world.borrow_mut();
        let route = world.servers.get(&addr).and_then(|s| s.get(path)).cloned();
        let range = match words.get(1) {
            Some(&"SEND") => Some(format!("bytes={}-", words.get(3).unwrap_or(&"?"))),
            _ => None,
        };
        world
            .requests
            .push((addr, format!("TOY {}", words[1..].join(" ")), range));
        if words.get(1) == Some(&"HELLO") && self.toy_kept.remove(&fd) {
            world.fire("a toy connection taken again after a transfer");
        }
        let faults = world.faults.clone();
        let data_mode = world.toy_data || world.toy_active;
        let active = world.toy_active;
        let upload = world.toy_upload;
        let keeps = world.toy_keep && data_mode;
        drop(world);
        if words.get(1) == Some(&"HAVE") {
            // The first range the client has (`first-end`), a part of it asked for.
            let have = words[2..].iter().find_map(|r| {
                let (a, b) = r.split_once('-')?;
                let (a, b) = (a.parse::<u64>().ok()?, b.parse::<u64>().ok()?);
                (b > a).then_some((a, b))
            });
            let reply = match have {
                Some((a, b)) => {
                    // Anywhere in it (bytes of a file that starts mid-block too).
                    let first = a + self.rng2.below(b - a);
                    let len = (b - first).min(1 + self.rng2.below(24_576));
                    format!("TOY WANT {first} {len}\n")
                }
                None => "TOY NOWANT\n".to_string(),
            };
            let Some(wire) = self.wires.get_mut(&fd) else {
                return false;
            };
            wire.outbound.extend_from_slice(reply.as_bytes());
            if wire.receiving == 0 {
                wire.unread_since.get_or_insert(self.clock);
            }
            return true;
        }
        if words.get(1) == Some(&"NOBYTES") {
            return true;
        }
        if words.get(1) == Some(&"ACTIVE") {
            // The client listens at this port of its address; the server connects at SEND.
            let port = words.get(2).and_then(|p| p.parse::<u16>().ok());
            let reply = match port {
                Some(p) => {
                    self.active_of.insert(fd, p);
                    "TOY OK\n"
                }
                None => "TOY BAD\n",
            };
            let Some(wire) = self.wires.get_mut(&fd) else {
                return false;
            };
            wire.outbound.extend_from_slice(reply.as_bytes());
            if wire.receiving == 0 {
                wire.unread_since.get_or_insert(self.clock);
            }
            return port.is_some();
        }
        if words.get(1) == Some(&"PASV") {
            let port = self.next_data_port;
            self.next_data_port = self.next_data_port.wrapping_add(1).max(40_000);
            if faults.server.no_data_port > 0 && self.rng2.chance(faults.server.no_data_port) {
                self.world
                    .borrow_mut()
                    .fire("a data port that takes no connection");
            } else {
                self.data_listeners
                    .insert(SocketAddr::new(addr.ip(), port), fd);
            }
            let Some(wire) = self.wires.get_mut(&fd) else {
                return false;
            };
            wire.outbound
                .extend_from_slice(format!("TOY PORT {port}\n").as_bytes());
            if wire.receiving == 0 {
                wire.unread_since.get_or_insert(self.clock);
            }
            return true;
        }
        let busy = matches!(route, Some(Route::Status(503)));
        let file = match route {
            Some(Route::File {
                data,
                ranges,
                framing,
                ..
            }) => Some((data, ranges, framing)),
            _ => None,
        };
        let (head, body) = match (words.get(1).copied(), file) {
            (Some("HELLO"), Some((data, ranges, _))) => (
                format!(
                    "TOY READY {} {}{}{}",
                    data.len(),
                    u8::from(ranges),
                    match (data_mode, active) {
                        (_, true) => " active",
                        (true, false) => " data",
                        _ => "",
                    },
                    if upload { " upload" } else { "" }
                ) + if keeps { " keep" } else { "" }
                    + "\n",
                Vec::new(),
            ),
            (_, None) if busy => ("TOY BUSY\n".to_string(), Vec::new()),
            (Some("SEND"), Some((data, ranges, framing))) => {
                let len = data.len() as u64;
                let number = |i: usize| words.get(i).and_then(|w| w.parse::<u64>().ok());
                let (first, end) = match ranges {
                    true => (number(3).unwrap_or(0), number(4).unwrap_or(len).min(len)),
                    false => (0, len),
                };
                if first > end {
                    ("TOY BAD\n".to_string(), Vec::new())
                } else {
                    let bytes = data[first as usize..end as usize].to_vec();
                    let size = match framing {
                        Framing::Length => bytes.len().to_string(),
                        _ => "-".to_string(),
                    };
                    (format!("TOY DATA {first} {size}\n"), bytes)
                }
            }
            _ => ("TOY NOTFOUND\n".to_string(), Vec::new()),
        };
        // The bytes go on the data connection where there is one (none: the client never
        // opened it, and the server says so).
        let data_fd = match (data_mode, head.starts_with("TOY DATA")) {
            (true, true) if active => self.connect_back(fd, faults.server.no_data_port),
            (true, true) => self.data_of.remove(&fd),
            _ => None,
        };
        let head = match (data_mode, head.starts_with("TOY DATA"), data_fd) {
            (true, true, None) => "TOY NODATA\n".to_string(),
            _ => head,
        };
        let clock = self.clock;
        let Some(wire) = self.wires.get_mut(&fd) else {
            return false;
        };
        wire.outbound.extend_from_slice(head.as_bytes());
        if wire.receiving == 0 {
            wire.unread_since.get_or_insert(clock);
        }
        // Only READY keeps the conversation going; a keeping server's transfer too, ended by
        // its last line.
        let kept = keeps && head.starts_with("TOY DATA") && data_fd.is_some();
        if kept {
            wire.outbound.extend_from_slice(b"TOY DONE\n");
            self.toy_kept.insert(fd);
        }
        wire.close_after |= !head.starts_with("TOY READY") && !kept;
        let keep = !wire.close_after;
        let body_fd = match (data_mode, data_fd) {
            (false, _) => fd,
            (true, Some(d)) => d,
            (true, None) => return keep,
        };
        let Some(wire) = self.wires.get_mut(&body_fd) else {
            return keep;
        };
        wire.outbound.extend_from_slice(&body);
        if data_mode {
            wire.close_after = true;
        }
        if wire.receiving == 0 && !body.is_empty() {
            wire.unread_since.get_or_insert(clock);
        }
        // A reset or a stall somewhere in the body, as for HTTP's.
        let body_len = body.len();
        if body_len > 0 && wire.reset_in.is_none() && self.rng.chance(faults.reset) {
            let already = wire.pending() - body_len;
            wire.reset_in = Some(already + self.rng.below(body_len as u64) as usize);
        } else if body_len > 0 && wire.stall_in.is_none() && self.rng.chance(faults.stall) {
            let already = wire.pending() - body_len;
            wire.stall_in = Some(already + self.rng.below(body_len as u64) as usize);
        }
        if body_fd < -1 {
            // Active mode: the connection the server made waits in its listener's backlog.
            let made = (self.wires.remove(&body_fd), self.data_of.remove(&body_fd));
            if let (Some(w), Some(listener)) = made {
                if let Some(q) = self.backlog.get_mut(&listener) {
                    q.push_back(w);
                }
            }
        }
        keep
    }
}

/// The bytes a server sends for one request: head and body, where the body starts, and whether
/// the connection closes after it.
pub(super) fn respond(
    route: &Route,
    range: Option<&str>,
    if_range: Option<&str>,
    head_only: bool,
    rng: &mut Rng,
    cap: Option<usize>,
) -> (Vec<u8>, usize, bool) {
    let empty = |status: u16, extra: &str| {
        let head = format!("HTTP/1.1 {status} X\r\nContent-Length: 0\r\n{extra}\r\n");
        let n = head.len();
        (head.into_bytes(), n, false)
    };
    let (data, etag, ranges, framing) = match route {
        Route::Redirect(to) => return empty(302, &format!("Location: {to}\r\n")),
        Route::Status(s) => return empty(*s, ""),
        Route::File {
            data,
            etag,
            ranges,
            framing,
        } => (data, etag, *ranges, *framing),
    };
    let total = data.len() as u64;
    let wanted = range
        .filter(|_| ranges && if_range.is_none_or(|v| v == etag))
        .and_then(|r| r.strip_prefix("bytes="))
        .and_then(|r| {
            let (a, b) = r.split_once('-')?;
            let a: u64 = a.parse().ok()?;
            let b: u64 = if b.is_empty() {
                total.saturating_sub(1)
            } else {
                b.parse::<u64>().ok()?.min(total.saturating_sub(1))
            };
            Some((a, b))
        });
    let mut head = String::new();
    let (start, end) = match wanted {
        Some((a, _)) if a >= total => {
            return empty(416, &format!("Content-Range: bytes */{total}\r\n"));
        }
        Some((a, b)) => {
            // A server that answers a range with its first part only.
            let b = cap.map_or(b, |c| b.min(a + c as u64 - 1));
            head.push_str("HTTP/1.1 206 Partial Content\r\n");
            head.push_str(&format!("Content-Range: bytes {a}-{b}/{total}\r\n"));
            (a, b + 1)
        }
        None => {
            head.push_str("HTTP/1.1 200 OK\r\n");
            (0, total)
        }
    };
    if ranges {
        head.push_str("Accept-Ranges: bytes\r\n");
    }
    head.push_str(&format!("ETag: {etag}\r\n"));
    let body = &data[start as usize..end as usize];
    let mut close = false;
    let mut out;
    match framing {
        Framing::Length => {
            head.push_str(&format!("Content-Length: {}\r\n\r\n", body.len()));
            out = head.into_bytes();
        }
        Framing::UntilClose => {
            head.push_str("Connection: close\r\n\r\n");
            out = head.into_bytes();
            close = true;
        }
        Framing::Chunked => {
            head.push_str("Transfer-Encoding: chunked\r\n\r\n");
            out = head.into_bytes();
        }
    }
    let at = out.len();
    if head_only {
        return (out, at, close);
    }
    if framing == Framing::Chunked {
        let mut rest = body;
        while !rest.is_empty() {
            let n = (1 + rng.below(40_000) as usize).min(rest.len());
            out.extend_from_slice(format!("{n:x}\r\n").as_bytes());
            out.extend_from_slice(&rest[..n]);
            out.extend_from_slice(b"\r\n");
            rest = &rest[n..];
        }
        out.extend_from_slice(b"0\r\n\r\n");
    } else {
        out.extend_from_slice(body);
    }
    (out, at, close)
}
