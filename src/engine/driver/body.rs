//! The body: response bytes placed into write blocks at their file offsets, exchanges that end or
//! go on into the next range, and ranges given back to the plan when a connection leaves.
use super::*;

impl<R: Reactor<Tag>> Engine<'_, R> {
    /// Bytes of a plain body arrived straight in the connection's write block.
    pub(super) fn received_direct(&mut self, slot: usize, n: usize) {
        let write_size = self.reactor.pool().size(Class::Write);
        let Some(c) = self.conns[slot].as_mut() else {
            return;
        };
        let (Some(ex), Some(fill)) = (c.ex.as_mut(), c.fill.as_mut()) else {
            return;
        };
        ex.any_bytes = true;
        fill.filled += n;
        if let Framing::Length(_) = ex.framing {
            ex.remaining = ex.remaining.saturating_sub(n as u64);
            if ex.remaining == 0 {
                ex.body_complete = true;
            }
        }
        let d = &mut self.dls[ex.dl];
        let Some(plan) = d.plan.as_mut() else { return };
        if plan.segment(ex.seg).owner != Some(c.id) {
            // Taken over by the whole-file response: these bytes are somebody else's now.
            ex.unusable = true;
            ex.overruled = true;
            c.fill = None;
            return;
        }
        plan.advance(ex.seg, n as u64);
        ex.body_bytes += n as u64;
        let seg_end = plan.segment(ex.seg).end;
        let end = fill.off + fill.filled as u64;
        if fill.filled == write_size || end == seg_end {
            if let Some(fill) = c.fill.take() {
                self.flushes.push(Flush {
                    dl: ex.dl,
                    fill,
                    at_file_end: end == plan.total(),
                    source: ex.mirror,
                });
            }
        }
    }

    /// Bytes arrived straight in the connection's write block: a plain body's, or TLS records.
    pub(super) fn received_in_fill(&mut self, slot: usize, n: usize) {
        let tls = match self.conns[slot].as_mut() {
            Some(c) => match c.tls_cipher.as_mut() {
                Some(cipher) => {
                    cipher.1 += n;
                    true
                }
                None => false,
            },
            None => return,
        };
        if tls {
            self.open_in_fill(slot);
        } else {
            self.received_direct(slot, n);
        }
    }

    /// Opens the whole TLS records received into the fill's block where they lie: each record's
    /// plaintext is left right after the block's plaintext so far, with no copy. The record that
    /// straddles the block's end is received into the block's spare bytes and opened there too;
    /// its plaintext past the end, and the ciphertext after it, are copied to the start of the
    /// next block, which becomes the fill. Anything this cannot do in place (a record that does
    /// not fit the block with its spare bytes, or its range; the range's or the body's end; no
    /// free block for what runs past the end; close_notify) hands the rest of the ciphertext back
    /// to the read block and the copying path (`pump`).
    pub(super) fn open_in_fill(&mut self, slot: usize) {
        let write_size = self.reactor.pool().size(Class::Write);
        loop {
            let Some(c) = self.conns[slot].as_mut() else {
                return;
            };
            let (Some((cs, ce)), Some(tls), Some(ex)) =
                (c.tls_cipher, c.tls.as_mut(), c.ex.as_ref())
            else {
                return;
            };
            let Some(fill) = c.fill.as_mut() else {
                return self.leave_fill(slot);
            };
            let room = fill.block.room();
            let rest = &fill.block.with_spare()[cs..ce];
            let len = match tls.record_len(rest) {
                Ok(Some(len)) => len,
                Ok(None) if ce < room => return,
                Ok(None) => return self.leave_fill(slot),
                Err(e) => return self.fail_tls(slot, e),
            };
            if rest.len() < len {
                if cs + len > room {
                    return self.leave_fill(slot);
                }
                return;
            }
            // The plaintext this range and this body can still take, and this block.
            let Some(plan) = self.dls[ex.dl].plan.as_ref() else {
                return self.leave_fill(slot);
            };
            let seg = plan.segment(ex.seg);
            let mut left = store::room(fill.off, fill.filled, usize::MAX, seg.end);
            if let Framing::Length(_) = ex.framing {
                left = left.min(usize::try_from(ex.remaining).unwrap_or(usize::MAX));
            }
            let cap = left.min(write_size - fill.filled);
            let bound = tls.plain_bound(len);
            if seg.owner != Some(c.id) || ex.body_complete || bound > left {
                return self.leave_fill(slot);
            }
            // A record that may run past the block's end needs the next block first: its
            // plaintext cannot be put back once opened.
            let spill = if bound > cap {
                match self.reactor.pool().alloc(Class::Write) {
                    Some(b) => Some(b),
                    None => return self.leave_fill(slot),
                }
            } else {
                None
            };
            let filled = fill.filled;
            let region = &mut fill.block.with_spare_mut()[filled..cs + len];
            let opened = tls.open_in_place(region, cs - filled, &mut c.out);
            let mut next = (cs + len, ce);
            let placed = match opened {
                Err(e) => return self.fail_tls(slot, e),
                Ok(InPlace::Data(n)) => n,
                Ok(InPlace::Nothing) => 0,
                Ok(InPlace::Closed) => {
                    c.tls_peer_closed = true;
                    c.tls_cipher = Some(next);
                    return self.leave_fill(slot);
                }
            };
            if let Some(mut block) = spill.filter(|_| filled + placed > write_size) {
                // The plaintext past the block's end, then the ciphertext after the record, go to
                // the start of the next block; the full block goes to disk.
                let over = filled + placed - write_size;
                let tail = next.1 - next.0;
                let from = fill.block.with_spare_mut();
                block.put(0, &from[write_size..write_size + over]);
                block.with_spare_mut()[over..over + tail].copy_from_slice(&from[next.0..next.1]);
                let (off, attempt) = (fill.off + write_size as u64, fill.attempt);
                self.received_direct(slot, placed - over);
                let Some(c) = self.conns[slot].as_mut() else {
                    return;
                };
                if c.fill.is_some() || c.ex.as_ref().is_none_or(|e| e.overruled) {
                    // The full block was not handed over, or the range was taken over: neither
                    // can happen after the checks above, and the stream would be out of step.
                    let f = Failure::retry(ExitCode::UNKNOWN, "TLS records were lost");
                    return self.fail_conn(slot, f);
                }
                c.fill = Some(Fill {
                    block,
                    off,
                    filled: 0,
                    attempt,
                });
                c.tls_cipher = Some((over, over + tail));
                if placed == left {
                    // The record ended the range or the body, so the next block is handed over
                    // at once, as at the end of any fill.
                    return self.end_fill(slot, over);
                }
                self.received_direct(slot, over);
                continue;
            }
            if next.0 == next.1 {
                // Nothing left over: the next records start right after the plaintext.
                next = (filled + placed, filled + placed);
            } else if next.0 - (filled + placed) > 4096 {
                // Records' headers and tags leave a gap; a large one is closed up.
                let to = filled + placed;
                fill.block.with_spare_mut().copy_within(next.0..next.1, to);
                next = (to, to + (next.1 - next.0));
            }
            c.tls_cipher = Some(next);
            if placed == cap {
                // The block, its range or the body is complete.
                return self.end_fill(slot, placed);
            }
            if placed > 0 {
                self.received_direct(slot, placed);
            }
        }
    }

    /// The fill ends with the `placed` bytes just opened in it (the block, its range or the body
    /// is complete): the ciphertext after them (a close_notify, the next response) goes to the
    /// read block before the fill is handed over, and the copying path goes on from there.
    fn end_fill(&mut self, slot: usize, placed: usize) {
        if self.stash_cipher(slot) {
            self.received_direct(slot, placed);
            self.pump(slot);
        }
    }

    /// Moves the ciphertext not yet opened from the fill's block to the (empty) read block, and
    /// runs the copying path over it.
    pub(super) fn leave_fill(&mut self, slot: usize) {
        if self.stash_cipher(slot) {
            self.pump(slot);
        }
    }

    /// Moves the ciphertext not yet opened from the fill's block to the (empty) read block. False
    /// when that failed the connection.
    fn stash_cipher(&mut self, slot: usize) -> bool {
        let Some(c) = self.conns[slot].as_mut() else {
            return false;
        };
        let Some((cs, ce)) = c.tls_cipher.take() else {
            return true;
        };
        if cs < ce {
            let (Some(fill), Some(rbuf)) = (c.fill.as_ref(), c.rbuf.as_mut()) else {
                let f = Failure::retry(ExitCode::UNKNOWN, "TLS records were lost");
                self.fail_conn(slot, f);
                return false;
            };
            if c.rb_end != c.rb_start || ce - cs > rbuf.len() {
                let f = Failure::retry(
                    ExitCode::UNKNOWN,
                    "a TLS record does not fit the receive buffer",
                );
                self.fail_conn(slot, f);
                return false;
            }
            rbuf.as_mut_slice()[..ce - cs].copy_from_slice(&fill.block.with_spare()[cs..ce]);
            c.rb_start = 0;
            c.rb_end = ce - cs;
        }
        true
    }

    fn fail_tls(&mut self, slot: usize, e: crate::tls::TlsError) {
        let Some(c) = self.conns[slot].as_mut() else {
            return;
        };
        let f = Failure::retry(ExitCode::UNKNOWN, e.after_handshake(&c.server.host));
        self.fail_conn(slot, f);
    }

    /// Runs the protocol layers over the unprocessed bytes of the connection's read block.
    pub(super) fn pump(&mut self, slot: usize) {
        for _ in 0..4 {
            if !self.pump_tunnel(slot) {
                return;
            }
            let Some(c) = self.conns[slot].as_mut() else {
                return;
            };
            let ranges_unconfirmed =
                c.ex.as_ref()
                    .is_some_and(|ex| !self.dls[ex.dl].ranges_confirmed);
            let plan = match c.ex.as_ref() {
                Some(ex) => self.dls[ex.dl].plan.as_mut(),
                None => None,
            };
            // Without its read block the connection has a receive in flight; its completion pumps.
            // (What waits to be sealed for TLS goes now: the peer may wait for it.)
            let Some(rbuf) = c.rbuf.as_mut() else {
                return self.seal_plain(slot);
            };
            let read_size = rbuf.len();
            let rb = &mut rbuf.as_mut_slice()[c.rb_start..c.rb_end];
            let pool = self.reactor.pool();
            if let Some(tls) = c.tls.as_mut() {
                let mut idle = IdleSink { got_data: false };
                let mut body;
                let sink: &mut dyn PlainSink = match c.ex.as_mut() {
                    Some(ex) => {
                        body = BodySink {
                            owner: c.id,
                            ex,
                            fill: &mut c.fill,
                            blocks: pool,
                            plan,
                            ranges_unconfirmed,
                            flushes: &mut self.flushes,
                        };
                        &mut body
                    }
                    None => &mut idle,
                };
                match tls.process(rb, &mut c.out, &mut c.plain_out, sink) {
                    Ok(step) => {
                        c.rb_start += step.consumed;
                        c.tls_blocked = step.sink_full;
                        if step.peer_closed {
                            c.tls_peer_closed = true;
                        }
                        if idle.got_data {
                            // Data on an idle connection: it cannot be trusted for another request.
                            c.eof = true;
                        }
                    }
                    Err(e) => {
                        let msg = match tls.handshake_done() {
                            true => e.after_handshake(&c.server.host),
                            false => e.with_host(&c.server.host),
                        };
                        let f = match e {
                            crate::tls::TlsError::Certificate(_) => {
                                Failure::fatal(ExitCode::UNKNOWN, msg)
                            }
                            _ => Failure::retry(ExitCode::UNKNOWN, msg),
                        };
                        self.fail_conn(slot, f);
                        return;
                    }
                }
            } else if let Some(ex) = c.ex.as_mut() {
                if !ex.pending() {
                    let mut sink = BodySink {
                        owner: c.id,
                        ex,
                        fill: &mut c.fill,
                        blocks: pool,
                        plan,
                        ranges_unconfirmed,
                        flushes: &mut self.flushes,
                    };
                    if sink.ex.wrapped && sink.ex.phase == Phase::Body {
                        // What the blocks had no room for stays in the read block, and the
                        // connection waits for a free block as a TLS one does.
                        let (used, blocked) = sink.unwrap_body(rb);
                        c.rb_start += used.min(c.rb_end - c.rb_start);
                        c.tls_blocked = blocked;
                    } else {
                        sink.feed(rb);
                        c.rb_start = c.rb_end;
                    }
                }
            } else {
                c.rb_start = c.rb_end;
            }
            if c.rb_start == c.rb_end {
                c.rb_start = 0;
                c.rb_end = 0;
            } else if read_size - c.rb_end < 20 * 1024 && c.rb_start > 0 {
                let (a, b) = (c.rb_start, c.rb_end);
                if let Some(rbuf) = c.rbuf.as_mut() {
                    rbuf.as_mut_slice().copy_within(a..b, 0);
                }
                c.rb_start = 0;
                c.rb_end = b - a;
            }
            if !self.conversed(slot) {
                return;
            }
        }
    }

    /// Seals the plaintext waiting to go out under TLS (a conversation's next command), with no
    /// incoming bytes: for a connection whose read block is out with a receive.
    fn seal_plain(&mut self, slot: usize) {
        let Some(c) = self.conns[slot].as_mut() else {
            return;
        };
        let Some(tls) = c.tls.as_mut().filter(|_| !c.plain_out.is_empty()) else {
            return;
        };
        let mut idle = IdleSink { got_data: false };
        if let Err(e) = tls.process(&mut [], &mut c.out, &mut c.plain_out, &mut idle) {
            let f = Failure::retry(ExitCode::UNKNOWN, e.with_host(&c.server.host));
            self.fail_conn(slot, f);
        }
    }

    pub(super) fn check_exchange(&mut self, slot: usize) {
        let Some(c) = self.conns[slot].as_mut() else {
            return;
        };
        let Some(ex) = c.ex.as_mut() else { return };
        if let Some(f) = ex.error.take() {
            if self.redo_if_stale(slot, &f) {
                return;
            }
            let Some(ex) = self.conns[slot].as_mut().and_then(|c| c.ex.as_mut()) else {
                return;
            };
            let head = matches!(ex.phase, Phase::Head | Phase::Decide);
            if head && ex.conversation.is_some() && f.code == ExitCode::NOT_FOUND {
                // Another protocol's "not found": aria2's rules for a 404.
                self.not_found(slot, f.message);
                return;
            }
            // A range answered with a head that cannot be read (a malformed Content-Range, say)
            // while others carry the file is one connection's failure, not the download's.
            if head && self.give_up_range(slot, &f) {
                return;
            }
            self.fail_conn(slot, f);
            return;
        }
        if ex.overruled {
            let dl = ex.dl;
            self.close_conn(slot);
            self.maybe_finish(dl);
            return;
        }
        if ex.phase != Phase::Body || ex.pending() {
            return;
        }
        if c.tls_peer_closed && ex.framing == Framing::UntilClose && !ex.body_complete {
            // close_notify ends a body framed by the close: every byte before it is
            // authenticated, and a server may wait for our close_notify before it closes TCP
            // (RFC 8446 6.1), so waiting for the FIN could wait until the timeout.
            ex.body_complete = true;
            ex.unusable = true;
        }
        if ex.body_complete && ex.decoder.as_ref().is_some_and(|d| !d.finished()) {
            let f = Failure::retry(
                ExitCode::UNKNOWN,
                "the response body ended before the end of its compressed stream",
            );
            self.fail_conn(slot, f);
            return;
        }
        let dl = ex.dl;
        let d = &mut self.dls[dl];
        let may_park = !d.ranges_confirmed && ex.range.is_none();
        let Some(plan) = d.plan.as_mut() else { return };
        if ex.body_complete {
            if !d.length_known {
                debug_assert!(
                    plan.segment(0).owner == Some(c.id) && ex.attempt == d.attempt,
                    "a body of unknown length ended on a connection not carrying it"
                );
                let pos = plan.segment(0).pos;
                plan.set_total(pos);
                d.length_known = true;
                d.length_at_end = true;
                if let Some(f) = c.fill.take() {
                    self.flushes.push(Flush {
                        dl,
                        fill: f,
                        at_file_end: true,
                        source: ex.mirror,
                    });
                }
            }
            let seg = plan.segment(ex.seg);
            if seg.pos < seg.end && seg.owner == Some(c.id) && !plan.is_complete() {
                let f = Failure::retry(
                    ExitCode::UNKNOWN,
                    "the response body ended before its range was complete",
                );
                self.fail_conn(slot, f);
                return;
            }
            // A body that came on a data connection: its control connection may be kept, with
            // the transfer's last reply still to read on it.
            let kept = c.control.is_some() && self.keep_control(slot);
            let Some(c) = self.conns[slot].as_mut() else {
                return;
            };
            let Some(ex) = c.ex.as_ref() else { return };
            // Bytes waiting after the body's end (a server sending past its framing) must never
            // be read as the next answer: the connection is not kept.
            let quiet = c.fd.as_ref().is_some_and(|fd| self.reactor.quiet(fd));
            let reusable = kept || (!ex.unusable && !c.eof && !c.tls_peer_closed && quiet);
            let done = c.ex.take();
            if reusable {
                c.want = None;
            }
            if let Some(ex) = &done {
                self.credit(ex);
            }
            if reusable {
                let (url, mirror) = done.map(|e| (e.url, e.mirror)).unzip();
                self.next_work(slot, dl, url, mirror.unwrap_or(0));
            } else {
                self.close_conn(slot);
                if self.needs_another_connection(dl) {
                    self.dls[dl].wanted += 1;
                }
                self.maybe_finish(dl);
            }
            return;
        }
        let seg = plan.segment(ex.seg).clone();
        if seg.pos >= seg.end {
            // This range is done but the response goes on (a whole-file response, or a range another
            // connection took over): go on into the next range if it is free; wait while its owner's
            // range request is unanswered; else stop here.
            if let Some(next) = plan.continue_into(ex.seg, c.id) {
                ex.seg = next;
                return;
            }
            if may_park && plan.next_unstarted(ex.seg) {
                ex.parked = true;
                return;
            }
            let done = c.ex.take();
            if let Some(ex) = &done {
                self.credit(ex);
            }
            self.close_conn(slot);
            if self.needs_another_connection(dl) {
                self.dls[dl].wanted += 1;
            }
            self.maybe_finish(dl);
        }
    }

    /// A parked whole-file stream of download `dl` can go on: the range after it came free.
    pub(super) fn unpark(&mut self, dl: usize) {
        for slot in 0..self.conns.len() {
            let parked = self.conns[slot].as_ref().is_some_and(|c| {
                c.state == ConnState::Open && c.ex.as_ref().is_some_and(|e| e.dl == dl && e.parked)
            });
            if !parked {
                continue;
            }
            if let Some(ex) = self.conns[slot].as_mut().and_then(|c| c.ex.as_mut()) {
                ex.parked = false;
            }
            self.resume(slot);
        }
    }

    /// A parked stream waits only while the range after it belongs to a connection that has not
    /// received a byte of it. Whatever ended that wait — the owner failed, was redirected, closed
    /// for any reason — the stream goes on: checked after every step, so no path has to remember.
    pub(super) fn unpark_released(&mut self) {
        for slot in 0..self.conns.len() {
            let waiting_for_nothing = self.conns[slot].as_ref().is_some_and(|c| {
                c.state == ConnState::Open
                    && c.ex.as_ref().is_some_and(|e| {
                        e.parked
                            && self.dls[e.dl]
                                .plan
                                .as_ref()
                                .is_some_and(|p| !p.next_unstarted(e.seg))
                    })
            });
            if waiting_for_nothing {
                if let Some(ex) = self.conns[slot].as_mut().and_then(|c| c.ex.as_mut()) {
                    ex.parked = false;
                }
                self.resume(slot);
            }
        }
    }

    /// Lets a connection that was held back go on: places what it had spilled, runs the protocol
    /// layers over what its read block holds, and keeps it reading.
    pub(super) fn resume(&mut self, slot: usize) {
        if let Some(c) = self.conns[slot].as_mut() {
            if let Some(ex) = c.ex.as_mut() {
                let ranges_unconfirmed = !self.dls[ex.dl].ranges_confirmed;
                let plan = self.dls[ex.dl].plan.as_mut();
                let mut sink = BodySink {
                    owner: c.id,
                    ex,
                    fill: &mut c.fill,
                    blocks: self.reactor.pool(),
                    plan,
                    ranges_unconfirmed,
                    flushes: &mut self.flushes,
                };
                sink.drain_spill();
            }
        }
        self.pump(slot);
        self.after_io(slot);
    }

    /// The connection in `slot` and the exchange it is in, if it has both.
    pub(super) fn exchange_at(&self, slot: usize) -> Option<(&Conn, &Exchange)> {
        let c = self.conns[slot].as_ref()?;
        Some((c, c.ex.as_ref()?))
    }

    /// Ranges work: parked whole-file streams of download `dl` will not be needed.
    pub(super) fn end_parked(&mut self, dl: usize) {
        for slot in 0..self.conns.len() {
            let parked = self.conns[slot]
                .as_ref()
                .is_some_and(|c| c.ex.as_ref().is_some_and(|e| e.dl == dl && e.parked));
            if parked {
                self.close_conn(slot);
            }
        }
    }

    /// Abandons the connection's exchange without counting a failure (its range goes back).
    pub(super) fn abandon_exchange(&mut self, slot: usize) {
        let dl = self.conns[slot]
            .as_ref()
            .and_then(|c| c.ex.as_ref())
            .map(|e| e.dl);
        self.return_range(slot);
        if let Some(dl) = dl {
            self.unpark(dl);
        }
        if let Some(dl) = dl {
            self.close_conn(slot);
            self.maybe_finish(dl);
        } else {
            self.close_conn(slot);
        }
    }

    /// Hands the connection's part-filled write block over to the writer for connections waiting
    /// for one: its 4 KiB-aligned part is written, the bytes after it go back in front of what
    /// the exchange holds in memory (and its range's position back with them), TLS ciphertext
    /// not yet opened goes to the read block, and the connection waits for a block in line like
    /// any other. Nothing is received again or lost; only the connection's block is given up.
    pub(super) fn hand_over_fill(&mut self, slot: usize) {
        let Some((c, ex)) = self.exchange_at(slot) else {
            return;
        };
        let Some(fill) = c.fill.as_ref() else { return };
        let Some(plan) = self.dls[ex.dl].plan.as_ref() else {
            return;
        };
        let seg = plan.segment(ex.seg);
        if seg.owner != Some(c.id)
            || fill.attempt != ex.attempt
            || fill.off + fill.filled as u64 != seg.pos
        {
            // Not this exchange's range any more: the exchange's own checks end it.
            return;
        }
        let dl = ex.dl;
        if !self.stash_cipher(slot) {
            return;
        }
        let Some(c) = self.conns[slot].as_mut() else {
            return;
        };
        let (Some(ex), Some(plan)) = (c.ex.as_mut(), self.dls[dl].plan.as_mut()) else {
            return;
        };
        let Some(fill) = c.fill.take() else { return };
        let kept = store::write_len(fill.filled, false);
        ex.put_back(&fill.block.as_slice()[kept..fill.filled]);
        plan.retreat(ex.seg, (fill.filled - kept) as u64);
        if kept > 0 {
            self.flushes.push(Flush {
                dl: ex.dl,
                fill: Fill {
                    filled: kept,
                    ..fill
                },
                at_file_end: false,
                source: ex.mirror,
            });
        }
        // In line behind those already waiting (its block is not its to take back at once),
        // and the next block it gets is held from when it gets it.
        c.held_at_tick = None;
        c.starve(&mut self.waits);
    }

    /// Writes what the connection's block holds that can be written, and gives the rest of its range
    /// back to the plan.
    pub(super) fn return_range(&mut self, slot: usize) {
        let Some(c) = self.conns[slot].as_mut() else {
            return;
        };
        let Some(ex) = c.ex.as_ref() else { return };
        let dl = ex.dl;
        let seg_i = ex.seg;
        let mirror = ex.mirror;
        let owner = c.id;
        // A receive straight into the fill's block holds that block: none of its bytes can be
        // written, so the range goes back from where the block starts.
        let in_flight = c.recv.and_then(|r| r.fill).map(|(off, _, _)| off);
        let fill = c.fill.take();
        let d = &mut self.dls[dl];
        let Some(plan) = d.plan.as_mut() else {
            return;
        };
        let seg = plan.segment(seg_i).clone();
        if seg.owner != Some(owner) {
            return;
        }
        // While the download goes on, only the aligned part of a block is written and the rest is
        // fetched again (a padded write could land after the refetched bytes). When it ends here,
        // every received byte is written, padded, and the file is cut to what arrived.
        let ending = d.error.is_some() || d.halted;
        let keep = match (fill, in_flight) {
            (_, Some(off)) => off,
            (Some(f), None) => {
                let at_end = f.off + f.filled as u64 == plan.total() && d.length_known;
                let whole = at_end || ending;
                let kept = if whole {
                    f.filled
                } else {
                    store::write_len(f.filled, false)
                };
                let keep = if at_end {
                    f.off + f.filled as u64
                } else {
                    f.off + store::write_len(f.filled, false) as u64
                };
                if kept > 0 {
                    self.flushes.push(Flush {
                        dl,
                        fill: Fill { filled: kept, ..f },
                        at_file_end: whole,
                        source: mirror,
                    });
                }
                keep
            }
            (None, None) => seg.pos,
        };
        plan.release(seg_i, keep);
    }
}
