//! The placement of response bytes: head bytes are collected and parsed, body bytes are unframed
//! and copied into the connection's current write block at their file offset; full blocks are
//! queued for the driver to write. Nothing here submits I/O.
use super::conn::{DataAsk, Exchange, Fill, Phase, INFLATE_STEP};
use super::job::{http_failure, Failure};
use super::reactor::{Class, Pool};
use super::sources::Step;
use crate::engine::ExitCode;
use crate::http::{self, ChunkEvent, Framing};
use crate::plan::{Owner, Plan};
use crate::store;
use crate::tls::PlainSink;

/// A full (or final) write block, ready for the driver to write.
pub struct Flush {
    pub dl: usize,
    pub fill: Fill,
    pub at_file_end: bool,
    /// The source (mirror) its bytes came from: a piece that fails its check names it.
    pub source: usize,
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
            Phase::Head if self.ex.conversation.is_some() => {
                self.ex.head.extend_from_slice(data);
                self.converse();
            }
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

    /// A protocol other than HTTP reads what came before its answer: bytes to send go out, the
    /// answer ends the head phase (what came after it is the body's), a failure ends the exchange.
    fn converse(&mut self) {
        converse(self.ex);
    }

    /// Body bytes wrapped in the protocol's packets (`Exchange::wrapped`): the conversation
    /// unwraps them, in place where it can, as far as the write blocks have room; the file's
    /// bytes in them are framed and placed as any body's; what it has to send on account of them
    /// goes out with the next send. How many bytes it took, and whether the rest waits for room.
    pub fn unwrap_body(&mut self, data: &mut [u8]) -> (usize, bool) {
        if self.ex.error.is_some() || data.is_empty() {
            return (data.len(), false);
        }
        self.ex.any_bytes = true;
        let Some(mut conv) = self.ex.conversation.take() else {
            return (data.len(), false);
        };
        let room = self.capacity();
        let r = conv.unwrap(data, room, &mut |d| self.unframe(d));
        self.ex.outgoing.extend_from_slice(&conv.outgoing());
        self.ex.conversation = Some(conv);
        match r {
            Ok(taken) => taken,
            Err(f) => {
                self.ex.error = Some(f);
                (data.len(), false)
            }
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
                    source: self.ex.mirror,
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

/// Runs exchange `ex`'s conversation over the head bytes it has, step after step, until it waits.
pub fn converse(ex: &mut Exchange) {
    loop {
        let Some(conv) = ex.conversation.as_mut() else {
            return;
        };
        let (used, step) = conv.received(&ex.head);
        let used = used.min(ex.head.len());
        if !take_step(ex, used, step) || used == 0 {
            return;
        }
    }
}

/// Where a conversation's `step` leaves exchange `ex`, `used` bytes of its head taken: whether the
/// conversation should read on (it sent bytes, and may take more of what came).
pub fn take_step(ex: &mut Exchange, used: usize, step: Step) -> bool {
    match step {
        Step::Wait => {
            ex.head.drain(..used);
            false
        }
        Step::Send(bytes) => {
            ex.head.drain(..used);
            ex.outgoing.extend_from_slice(&bytes);
            true
        }
        Step::Data(port) => {
            // The driver opens it; the conversation hears of it through `data_ready`.
            ex.head.drain(..used);
            ex.data_port = Some(DataAsk::Connect(port));
            false
        }
        Step::Serve { header, first, len } => {
            // The driver reads the bytes back and sends them; then `served`.
            ex.head.drain(..used);
            ex.serve_ask = Some(super::conn::ServeAsk { header, first, len });
            false
        }
        Step::Listen => {
            // The driver listens; the conversation hears where through `listening`.
            ex.head.drain(..used);
            ex.data_port = Some(DataAsk::Listen);
            false
        }
        Step::StartTls(then) => {
            // The driver starts TLS; what follows on the connection is TLS's.
            ex.head.drain(..used);
            ex.start_tls = Some(then);
            false
        }
        Step::Answer(a) => {
            ex.head_rest = ex.head.split_off(used);
            ex.head.clear();
            ex.answer = Some(a);
            ex.phase = Phase::Decide;
            false
        }
        Step::Fail(f) => {
            ex.error = Some(f);
            false
        }
    }
}
