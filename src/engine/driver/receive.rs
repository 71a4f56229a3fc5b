//! The receive in flight: one per connection, into the next write block of its range (a plain
//! body, straight to where the file wants it) or into its read block (heads, TLS records,
//! chunked or encoded bodies), with a receive low-water mark that follows the connection's rate;
//! what a receive brought, and the peer's close.
use super::*;

impl<R: Reactor<Tag>> Engine<'_, R> {
    /// A receive completed; `block` is the buffer it received into, back from the kernel: the
    /// connection's read block, or (`direct`) its fill's write block.
    pub(super) fn on_recv(&mut self, slot: usize, res: i32, direct: bool, block: Option<Block>) {
        let Some(c) = self.conns[slot].as_mut() else {
            return;
        };
        let inflight = c.recv.take();
        if let Some(block) = block {
            match inflight.and_then(|r| r.fill) {
                Some((off, filled, attempt)) if direct => {
                    c.fill = Some(Fill {
                        block,
                        off,
                        filled,
                        attempt,
                    });
                }
                _ => c.rbuf = Some(block),
            }
        }
        if c.draining {
            // The cancelled receive of a stopping download: what it brought counts, then the
            // connection closes, writing what its block holds (`return_range`).
            let dl = c.ex.as_ref().map(|e| e.dl);
            let id = c.id;
            if res > 0 && direct {
                self.received_in_fill(slot, res as usize);
            }
            // (Opening TLS records can fail the connection, and its slot be taken by another.)
            if self.conns[slot].as_ref().is_some_and(|c| c.id == id) {
                self.close_conn(slot);
            }
            if let Some(dl) = dl {
                self.maybe_finish(dl);
            }
            return;
        }
        let yielding = std::mem::take(&mut c.yielding);
        let id = c.id;
        if yielding && (res == -libc::ECANCELED || nothing_happened(res)) {
            // The receive was cancelled to take its block back; it brought nothing, so the time
            // it waited counts towards the connection's silence.
            if let Some(r) = inflight {
                c.silent_for += self.reactor.now().saturating_duration_since(r.since);
            }
            self.hand_over_fill(slot);
            self.after_io(slot);
            return;
        }
        if nothing_happened(res) {
            self.after_io(slot);
            return;
        }
        if res < 0 {
            let (code, msg) = if res == -libc::ECANCELED {
                (
                    ExitCode::TIMEOUT,
                    "Timeout while receiving data from the server".to_string(),
                )
            } else {
                (
                    ExitCode::UNKNOWN,
                    format!("receive failed: {}", errno_text(res)),
                )
            };
            self.fail_conn(slot, Failure::retry(code, msg));
            return;
        }
        if res == 0 {
            if let Some(c) = self.conns[slot].as_mut() {
                c.eof = true;
            }
            if !direct {
                self.pump(slot);
            }
            self.on_eof(slot);
            return;
        }
        let n = res as usize;
        // One clock reading for the connection's rate and the download's rate limits.
        let now = self.reactor.now();
        let mut dl = None;
        if let Some(c) = self.conns[slot].as_mut() {
            c.silent_for = Duration::ZERO;
            c.low_water.received(now, n);
            dl = c.ex.as_ref().map(|e| e.dl);
        }
        if let Some(dl) = dl {
            self.charge(dl, n as u64, now);
        }
        if direct {
            self.received_in_fill(slot, n);
        } else {
            if let Some(c) = self.conns[slot].as_mut() {
                c.rb_end += n;
            }
            self.pump(slot);
        }
        if yielding && self.conns[slot].as_ref().is_some_and(|c| c.id == id) {
            // The cancellation came after the bytes: they are placed, then the block goes.
            self.hand_over_fill(slot);
        }
        self.after_io(slot);
    }

    pub(super) fn on_eof(&mut self, slot: usize) {
        let Some(c) = self.conns[slot].as_mut() else {
            return;
        };
        let Some(ex) = c.ex.as_mut() else {
            // An idle or handshaking connection closed.
            if c.want.is_none() {
                self.close_conn(slot);
            }
            return;
        };
        match ex.phase {
            Phase::Body
                if ex.framing == Framing::UntilClose
                    && !ex.body_complete
                    && c.tls.is_some()
                    && !c.tls_peer_closed =>
            {
                // Only close_notify ends a body framed by the close over TLS: a bare TCP close can
                // be forged by anyone on the path (a truncation attack).
                let f = Failure::retry(
                    ExitCode::UNKNOWN,
                    "the TLS connection was closed without close_notify; the body may be truncated",
                );
                self.fail_conn(slot, f);
            }
            Phase::Body if ex.framing == Framing::UntilClose || ex.body_complete => {
                ex.body_complete = true;
                ex.unusable = true;
                self.check_exchange(slot);
            }
            Phase::Head if !ex.any_bytes && c.reused => {
                // The server dropped a kept-alive connection we reused: redo on a fresh one.
                let w = ex.again();
                self.abandon_exchange(slot);
                self.open_or_defer(w);
            }
            _ => {
                let f = Failure::retry(ExitCode::UNKNOWN, "Got EOF from the server.");
                self.fail_conn(slot, f);
            }
        }
    }

    /// After any event on a connection: finish or continue its exchange, keep it reading and sending.
    pub(super) fn after_io(&mut self, slot: usize) {
        self.check_exchange(slot);
        self.start_send(slot);
        self.arm_recv(slot);
    }

    /// Keeps one receive in flight on a connection that expects bytes.
    pub(super) fn arm_recv(&mut self, slot: usize) {
        let write_size = self.reactor.pool().size(Class::Write);
        let Some(c) = self.conns[slot].as_mut() else {
            return;
        };
        if c.recv.is_some() || c.state != ConnState::Open || c.eof {
            return;
        }
        let Some(ex) = c.ex.as_mut() else {
            // TLS handshakes of a connection with no exchange yet still need reading.
            return;
        };
        if ex.parked {
            return;
        }
        if ex.phase == Phase::Decide || ex.body_complete || ex.pending() || c.tls_blocked {
            if ex.pending() || c.tls_blocked {
                c.starve(&mut self.waits);
            }
            return;
        }
        if c.throttled {
            return;
        }
        let dl = ex.dl;
        if !self.may_read(slot, dl) {
            return;
        }
        let Some(c) = self.conns[slot].as_mut() else {
            return;
        };
        let Some(fd) = c.fd.clone() else {
            return;
        };
        let Some(ex) = c.ex.as_mut() else { return };
        let id = c.id;
        // A receive may wait for as many bytes as are sure to come: the rest of a body of known
        // length, less what is already buffered here (TLS: ciphertext is never shorter than its
        // plaintext).
        let sure = match ex.framing {
            // (A wrapped body's conversation may hold a part of a packet aside, whose file bytes
            // will not come again: it reads as bytes come.)
            _ if ex.wrapped => 1,
            Framing::Length(_) if ex.phase == Phase::Body && !ex.body_complete => {
                let in_fill = c.tls_cipher.map_or(0, |(cs, ce)| ce - cs);
                let buffered = (c.rb_end - c.rb_start + in_fill) as u64;
                usize::try_from(ex.remaining.saturating_sub(buffered)).unwrap_or(usize::MAX)
            }
            _ => 1,
        };
        let want = c.low_water.want(sure);
        if want != c.low_water.set {
            self.reactor.recv_low_water(&fd, want);
            c.low_water.set = want;
        }
        let tls_in_fill = c.tls.as_ref().is_some_and(|t| t.in_place_ready())
            && c.tunnel.is_none()
            && ex.direct_body()
            && !ex.pending()
            && (c.tls_cipher.is_some() || c.rb_start == c.rb_end);
        if tls_in_fill || (c.tls.is_none() && ex.direct_body()) {
            // The body is received straight into its write block: plain, or TLS records that
            // `open_in_fill` opens there.
            let d = &mut self.dls[ex.dl];
            let Some(plan) = d.plan.as_mut() else { return };
            let seg = plan.segment(ex.seg).clone();
            if seg.pos >= seg.end || (tls_in_fill && seg.owner != Some(c.id)) {
                if c.tls_cipher.is_some() {
                    // The range was cut short under it: the copying path sorts out the rest.
                    self.leave_fill(slot);
                    self.after_io(slot);
                }
                return;
            }
            let fill = match c.fill.take() {
                Some(f) => {
                    let block = (ex.dl, f.off, f.attempt);
                    if c.held_at_tick.is_none_or(|(held, _)| held != block) {
                        // A block the body sink took (the bytes after the head, a spill): held
                        // from now on (`reclaim_blocks` would only see it on the next tick).
                        c.held_at_tick = Some((block, self.reactor.now()));
                    }
                    f
                }
                None if c.tls_cipher.is_some() => {
                    let f = Failure::retry(ExitCode::UNKNOWN, "TLS records were lost");
                    return self.fail_conn(slot, f);
                }
                // Waiting in line: blocks come to it in turn (`wake_starved`).
                None if c.starved.is_some() => return,
                None => match self.reactor.pool().alloc(Class::Write) {
                    Some(block) => {
                        // Held from now (`reclaim_blocks` would only see it on the next tick).
                        c.held_at_tick = Some(((ex.dl, seg.pos, ex.attempt), self.reactor.now()));
                        Fill {
                            block,
                            off: seg.pos,
                            filled: 0,
                            attempt: ex.attempt,
                        }
                    }
                    None => {
                        c.starve(&mut self.waits);
                        return;
                    }
                },
            };
            // What the block, its range and the body can still take.
            let mut room = store::room(fill.off, fill.filled, write_size, seg.end);
            if let Framing::Length(_) = ex.framing {
                room = room.min(usize::try_from(ex.remaining).unwrap_or(usize::MAX));
            }
            let (at, len, cipher) = if tls_in_fill {
                // About the ciphertext of that room: a record's header and tag on top of every
                // 16 KiB, and one record more; after the ciphertext not yet opened.
                let (cs, ce) = c.tls_cipher.unwrap_or((fill.filled, fill.filled));
                let wanted = room + (room / 16384 + 1) * 64 + 17 * 1024;
                let len = (fill.block.room() - ce).min(wanted.saturating_sub(ce - cs).max(1024));
                (ce, len, Some((cs, ce)))
            } else {
                (fill.filled, room, None)
            };
            if len == 0 {
                c.fill = Some(fill);
                return;
            }
            let Fill {
                block,
                off,
                filled,
                attempt,
            } = fill;
            let tag = Tag::Recv {
                slot,
                id,
                direct: true,
            };
            let op = self.reactor.recv(tag, fd, block, at, len);
            // Reading again, it waits for no block (whichever way it got one).
            c.starved = None;
            c.tls_cipher = cipher;
            c.recv = Some(RecvInFlight {
                fill: Some((off, filled, attempt)),
                op,
                since: self.reactor.now(),
            });
            c.inflight.push(op);
            return;
        }
        let Some(mut rbuf) = c.rbuf.take() else {
            return;
        };
        let read_size = rbuf.len();
        if c.rb_end == read_size {
            if c.rb_start == 0 {
                c.rbuf = Some(rbuf);
                self.fail_conn(
                    slot,
                    Failure::retry(
                        ExitCode::UNKNOWN,
                        "a TLS record does not fit the receive buffer",
                    ),
                );
                return;
            }
            let (a, b) = (c.rb_start, c.rb_end);
            rbuf.as_mut_slice().copy_within(a..b, 0);
            c.rb_start = 0;
            c.rb_end = b - a;
        }
        let tag = Tag::Recv {
            slot,
            id,
            direct: false,
        };
        let (at, mut len) = (c.rb_end, read_size - c.rb_end);
        if let (Some(tls), true) = (c.tls.as_ref(), ex.direct_body()) {
            // A body's records go straight into write blocks once the read block holds none
            // (`open_in_fill`): read to the end of the record begun here, not into the next.
            if tls.in_place_ready() && c.rb_end > c.rb_start {
                let have = c.rb_end - c.rb_start;
                match tls.record_len(&rbuf.as_slice()[c.rb_start..c.rb_end]) {
                    Ok(Some(whole)) if whole > have => len = len.min(whole - have),
                    Ok(None) => len = len.min(5 - have),
                    _ => {}
                }
            }
        }
        let op = self.reactor.recv(tag, fd, rbuf, at, len);
        c.starved = None;
        c.recv = Some(RecvInFlight {
            fill: None,
            op,
            since: self.reactor.now(),
        });
        c.inflight.push(op);
    }
}
