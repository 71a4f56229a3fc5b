//! Pieces with digests (a Metalink's chunk checksums; a torrent's pieces next): each is decided as
//! its last write completes, read back through the ring where its bytes came out of order, and one
//! that fails goes back to the plan to be fetched again, while the mirrors that sent it are given
//! up on as long as another one is left. The rules of what a piece is are `engine/pieces.rs`'s.
use super::*;
use crate::engine::pieces::{ReadBack, Verdict};
use std::ops::Range;

/// Failures of one piece after which the download ends (exit 32), whatever mirrors are left.
const MAX_PIECE_FAILURES: u32 = 5;

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

impl<R: Reactor<Tag>> Engine<'_, R> {
    /// The bytes `r` of download `dl` are on disk: the pieces they finish are decided, and those
    /// waiting for a read-back are read.
    pub(super) fn pieces_written(&mut self, dl: usize, r: Range<u64>) {
        let (Some(p), written) = self.dls[dl].live_pieces() else {
            return;
        };
        let verdicts = p.write_done(r, written);
        self.judge_pieces(dl, verdicts);
        self.read_pieces(dl);
    }

    fn judge_pieces(&mut self, dl: usize, verdicts: Vec<Verdict>) {
        for v in verdicts {
            match v {
                Verdict::Good(i) => {
                    let msg = format!("Good chunk checksum. checksumIndex={i}");
                    self.console.log(LogLevel::Debug, &msg);
                }
                Verdict::Bad {
                    piece,
                    range,
                    sources,
                    expected,
                    actual,
                } => {
                    let msg = format!(
                        "Chunk checksum validation failed. checksumIndex={piece}, offset={}, expectedHash={}, actualHash={}",
                        range.start,
                        hex(&expected),
                        hex(&actual)
                    );
                    self.bad_piece(dl, piece, range, &sources, msg);
                }
            }
        }
    }

    /// Piece `piece` of download `dl` (the bytes `range`) failed its check: nothing of it is
    /// claimed, it is fetched again, and the mirrors that sent it are given up on while another
    /// mirror is left (with none left, the failure counts towards `--max-tries`).
    fn bad_piece(
        &mut self,
        dl: usize,
        piece: usize,
        range: Range<u64>,
        sources: &[usize],
        msg: String,
    ) {
        let d = &mut self.dls[dl];
        if d.error.is_some() {
            return;
        }
        d.bad_pieces += 1;
        let keep = d.untouched;
        let (again, times) = match d.pieces.as_mut() {
            Some(p) => {
                let times = p.forget(piece);
                (p.refetch(piece, keep), times)
            }
            None => (range.clone(), 1),
        };
        // (What is not fetched again, bytes found on disk, stays on disk and is checked again.)
        d.written
            .remove(range.start.max(again.start)..range.end.min(again.end).max(again.start));
        // Without ranges, the piece cannot be asked for again on its own; with nothing of it to
        // fetch, the bytes found on disk are what is wrong; and a piece that failed again and
        // again will not come right.
        if !d.ranges_ok || again.is_empty() || times > MAX_PIECE_FAILURES {
            let f = Failure::fatal(ExitCode::CHECKSUM, msg);
            self.fail_download(dl, f, None);
            return;
        }
        // A connection still receiving inside the bytes fetched again (a piece off the 16 KiB
        // grid is fetched again in whole blocks, past its end) would go on placing its stream
        // where the plan now says nothing is: it stops first, writing what it can.
        self.stop_receiving_in(dl, &again);
        let d = &mut self.dls[dl];
        if d.hash_pos > again.start {
            // The whole file's digest has taken in the bad bytes: it starts again, and the file
            // is read back for it once complete (a digest cannot be taken back).
            d.hash_pos = 0;
            d.hasher = d
                .expected
                .as_ref()
                .map(|e| crate::store::checksum::Hasher::new(e.kind));
        }
        if let Some(plan) = d.plan.as_mut() {
            plan.reopen(again);
        }
        let d = &mut self.dls[dl];
        let others = (0..d.uris.len()).any(|m| !d.bad_uris[m] && !sources.contains(&m));
        if others {
            self.console.notice(&format!("{msg}; fetching it again"));
            for &m in sources {
                self.drop_mirror_for_bad_piece(dl, m);
            }
        } else {
            d.failures += 1;
            if self.s.max_tries > 0 && d.failures >= self.s.max_tries {
                let f = Failure::fatal(ExitCode::CHECKSUM, msg);
                self.fail_download(dl, f, None);
                return;
            }
            self.console.notice(&format!("{msg}; fetching it again"));
        }
        // (A download told to stop starts nothing new: the piece waits, unclaimed, for the next
        // run.)
        let d = &self.dls[dl];
        let stopped = d.halted || self.stopping || d.error.is_some();
        if !stopped && self.conn_count(dl) < d.connections_wanted() {
            self.dls[dl].wanted += 1;
        }
    }

    /// Closes download `dl`'s connections whose range has bytes inside `r` still to receive.
    fn stop_receiving_in(&mut self, dl: usize, r: &Range<u64>) {
        for slot in 0..self.conns.len() {
            let Some((c, ex)) = self.exchange_at(slot) else {
                continue;
            };
            let inside = ex.dl == dl
                && self.dls[dl].plan.as_ref().is_some_and(|p| {
                    let s = p.segment(ex.seg);
                    s.owner == Some(c.id) && s.start < r.end && s.end > r.start && s.pos < r.end
                });
            if inside {
                self.return_range(slot);
                self.close_conn(slot);
            }
        }
    }

    /// Mirror `m` of download `dl` sent a piece that failed its check: it is used no more, and
    /// its connections for this download close (what they wrote stays, to be checked).
    fn drop_mirror_for_bad_piece(&mut self, dl: usize, m: usize) {
        let d = &mut self.dls[dl];
        if d.bad_uris.get(m).is_none_or(|b| *b) {
            return;
        }
        d.bad_uris[m] = true;
        let uri = d.uris.get(m).map(Url::to_string).unwrap_or_default();
        for slot in 0..self.conns.len() {
            let on_it = self.conns[slot].as_ref().is_some_and(|c| {
                c.ex.as_ref().is_some_and(|e| e.dl == dl && e.mirror == m)
                    || c.want.as_ref().is_some_and(|w| w.dl == dl && w.mirror == m)
            });
            if on_it {
                let id = self.conns[slot].as_ref().map_or(0, |c| c.id);
                self.say_aborted(
                    dl,
                    id,
                    &uri,
                    ExitCode::CHECKSUM,
                    "a piece it sent failed its check; using the other mirrors",
                );
                self.return_range(slot);
                self.close_conn(slot);
            }
        }
        self.unpark(dl);
    }

    /// Issues the read-back download `dl`'s pieces need, one at a time: a piece wholly written
    /// whose bytes could not all be hashed as they were written. Without a free block, the next
    /// one freed comes here (`wake_starved`).
    pub(super) fn read_pieces(&mut self, dl: usize) {
        let d = &mut self.dls[dl];
        if d.error.is_some() || d.reading_piece {
            return;
        }
        if d.file.is_none() {
            return;
        }
        let (Some(p), written) = d.live_pieces() else {
            return;
        };
        if !p.wants_read(written) {
            return;
        }
        let Some(block) = self.reactor.pool().alloc(Class::Write) else {
            d.verify_waits = true;
            return;
        };
        let Some(rb) = p.next_read(written) else {
            return;
        };
        // From where `O_DIRECT` can read; the bytes before the piece's position are skipped
        // (several files: from the one that holds the piece's position; the read ends at its
        // end, and the piece goes on from the next file in the next read).
        let Some((file, at, file_at)) = self.read_place(dl, rb.from) else {
            return;
        };
        let d = &mut self.dls[dl];
        d.reading_piece = true;
        d.writes += 1;
        let tag = Tag::PieceRead {
            file: d.file_of(),
            rb,
            at,
        };
        self.reactor.read_file(tag, file, block, file_at);
    }

    /// A read-back of a piece of download `dl`'s current file completed (`file_op_done` counted
    /// it).
    pub(super) fn on_piece_read(
        &mut self,
        dl: usize,
        block: Option<Block>,
        rb: ReadBack,
        at: u64,
        res: i32,
    ) {
        let d = &mut self.dls[dl];
        d.reading_piece = false;
        let skip = (rb.from - at) as usize;
        let mut got = usize::try_from(res).unwrap_or(0);
        if let Some(layout) = d.opts.layout.clone() {
            // Never past the end of the file read (its last block's padding may follow).
            if let Some(s) = layout.first_span(at..at + 1) {
                let end = layout.files()[s.file].range().end;
                got = got.min(usize::try_from(end - at).unwrap_or(usize::MAX));
            }
        }
        let data = block
            .as_ref()
            .filter(|_| got > skip)
            .map(|b| &b.as_slice()[skip..got]);
        let failed = data.is_none();
        let (pieces, written) = d.live_pieces();
        let live = pieces.is_some();
        let verdict = pieces.and_then(|p| p.read_back(rb, rb.from, data, written));
        drop(block);
        let d = &mut self.dls[dl];
        if failed && d.error.is_none() && live {
            let path = d.path_text();
            let why = if res < 0 {
                errno_text(res)
            } else {
                "the file is shorter than expected".to_string()
            };
            let f = Failure::fatal(
                ExitCode::FILE_IO,
                format!("Failed to read the file {path} back to check a piece, cause: {why}"),
            );
            self.fail_download(dl, f, None);
            return;
        }
        self.judge_pieces(dl, verdict.into_iter().collect());
        self.read_pieces(dl);
        self.maybe_finish(dl);
    }

    /// Every byte of download `dl` is in and written, yet not every piece is verified: pieces
    /// whose bytes were found on disk untrusted are read back, as are those waiting for it.
    /// False if the digests do not fit the file (the download has failed).
    pub(super) fn settle_pieces(&mut self, dl: usize) -> bool {
        let d = &mut self.dls[dl];
        if let Err(e) = d.pieces() {
            self.fail_download(dl, Failure::fatal(ExitCode::CHECKSUM, e), None);
            return false;
        }
        if let Some(p) = d.pieces.as_mut() {
            p.open_unverified(&d.written);
        }
        self.read_pieces(dl);
        true
    }
}
