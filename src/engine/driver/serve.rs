//! A source that sends: the download's own bytes read back from disk into a block of the pool
//! and sent on the connection that asked (`sources::Step::Serve`; BitTorrent's peers asking for
//! pieces). Only bytes the download claims (written, and verified where it has digests) go out,
//! from the one file that holds them; the block comes from the same pool as receives, and only
//! when one is free (serving never waits for a block: a request without one is refused, so an
//! upload can never hold up the download), the read counts as one of the
//! download's file operations (so the file outlives it), and the bytes go out after whatever
//! the connection had to say first (the header), straight from the block
//! (`Reactor::send_block`). Then the conversation hears `served`. Not built: bytes that straddle
//! two files, and sending over TLS (each would need the block's bytes sealed first).
use super::*;
use crate::engine::conn::{ServeAsk, Serving};

impl<R: Reactor<Tag>> Engine<'_, R> {
    /// Begins sending what `ask` asks of the download on connection `slot`.
    pub(super) fn serve(&mut self, slot: usize, ask: ServeAsk) {
        let write_size = self.reactor.pool().size(Class::Write);
        let Some(c) = self.conns[slot].as_mut() else {
            return;
        };
        let Some(dl) = c.ex.as_ref().map(|ex| ex.dl) else {
            return;
        };
        let d = &self.dls[dl];
        let end = ask.first.saturating_add(ask.len as u64);
        let claimed = d
            .claims()
            .ranges()
            .iter()
            .any(|r| r.start <= ask.first && end <= r.end);
        let one_file = d.opts.layout.as_ref().is_none_or(|l| {
            l.first_span(ask.first..end)
                .is_some_and(|s| s.range.end >= end)
        });
        // (At most an `O_DIRECT` alignment's worth of bytes before them is read too.)
        let fits = ask.len > 0 && store::DIO_ALIGN + ask.len <= write_size;
        let ours = claimed && one_file && fits && c.tls.is_none() && c.serving.is_none();
        if !ours {
            self.tell_conversation(slot, |conv| conv.served(false));
            return;
        }
        self.read_to_serve(slot, dl, ask);
    }

    /// Reads the bytes asked for back into a block, if one is free (else the request is
    /// refused).
    fn read_to_serve(&mut self, slot: usize, dl: usize, ask: ServeAsk) {
        let Some(block) = self.reactor.pool().alloc(Class::Write) else {
            // Serving never waits for a block: a connection waiting for one could hold up the
            // download (a stream parked until this connection's answer, which waits on the
            // request served), so without one free the request is refused (a peer is told no).
            return self.tell_conversation(slot, |conv| conv.served(false));
        };
        let Some(id) = self.conns[slot].as_ref().map(|c| c.id) else {
            return;
        };
        // From where `O_DIRECT` can read (the bytes before the first asked for are skipped), in
        // the file that holds them.
        let Some((file, at, file_at)) = self.read_place(dl, ask.first) else {
            drop(block);
            return self.tell_conversation(slot, |conv| conv.served(false));
        };
        let d = &mut self.dls[dl];
        d.writes += 1;
        let tag = Tag::ServeRead {
            file: d.file_of(),
            slot,
            id,
        };
        self.reactor.read_file(tag, file, block, file_at);
        if let Some(c) = self.conns[slot].as_mut() {
            c.serving = Some(Serving::Reading { ask, at });
        }
    }

    /// The bytes came back from the file: the header goes out, then the block's bytes.
    pub(super) fn on_serve_read(&mut self, slot: usize, id: Owner, block: Option<Block>, res: i32) {
        let Some(c) = self.conns[slot].as_mut().filter(|c| c.id == id) else {
            return; // The connection went meanwhile: the block goes back to the pool.
        };
        let Some(Serving::Reading { ask, at }) = c.serving.take() else {
            return;
        };
        let from = usize::try_from(ask.first - at).unwrap_or(usize::MAX);
        let to = from + ask.len;
        let got = usize::try_from(res).unwrap_or(0);
        let Some(block) = block.filter(|_| got >= to) else {
            let why = match res < 0 {
                true => errno_text(res),
                false => "the file is shorter than what it claims".to_string(),
            };
            let f = Failure::retry(ExitCode::FILE_IO, format!("reading bytes to send: {why}"));
            return self.fail_conn(slot, f);
        };
        c.out.extend_from_slice(&ask.header);
        c.serving = Some(Serving::Sending {
            block: Some(block),
            from,
            to,
        });
        self.start_send(slot);
    }

    /// Once the connection has sent what it had to say, the block's bytes go (`start_send`).
    pub(super) fn send_served(&mut self, slot: usize) {
        let Some(c) = self.conns[slot].as_mut() else {
            return;
        };
        let Some(Serving::Sending { block, from, to }) = c.serving.as_mut() else {
            return;
        };
        let (Some(fd), Some(b)) = (c.fd.clone(), block.take()) else {
            return;
        };
        let tag = Tag::ServeSend { slot, id: c.id };
        let op = self.reactor.send_block(tag, fd, b, *from..*to);
        c.sending = true;
        c.inflight.push(op);
    }

    /// Part of the block went out: the rest follows, or the conversation hears it is done.
    pub(super) fn on_serve_send(&mut self, slot: usize, res: i32, block: Option<Block>) {
        let Some(c) = self.conns[slot].as_mut() else {
            return;
        };
        c.sending = false;
        let Some(Serving::Sending {
            block: held,
            from,
            to,
        }) = c.serving.as_mut()
        else {
            return;
        };
        if res < 0 && !nothing_happened(res) {
            let f = Failure::retry(
                ExitCode::UNKNOWN,
                format!("send failed: {}", errno_text(res)),
            );
            return self.fail_conn(slot, f);
        }
        *from += usize::try_from(res).unwrap_or(0);
        if *from < *to {
            *held = block;
            return self.start_send(slot);
        }
        c.serving = None;
        drop(block);
        self.wake_starved();
        self.tell_conversation(slot, |conv| conv.served(true));
    }
}
