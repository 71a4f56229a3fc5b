//! The writer: full blocks written in the order they filled, short writes and refused `O_DIRECT`
//! handled, completed writes recorded as bytes on disk (what a control file may claim), and the
//! buffered fallback's writeback.
use super::*;

/// How long a connection keeps one write block before it hands it over, on the next tick.
const HOLD_LIMIT: Duration = Duration::from_millis(500);

/// Full blocks waiting to be written, in the order they filled. The body puts them in; only the
/// writer takes them out (its field is private to this file); every other part may only ask which
/// downloads have some, or, on an emergency stop, drop them all.
#[derive(Default)]
pub(in crate::engine) struct Flushes(VecDeque<Flush>);

impl Flushes {
    pub(in crate::engine) fn push(&mut self, flush: Flush) {
        self.0.push_back(flush);
    }

    /// Whether blocks of download `dl` are waiting.
    pub(in crate::engine) fn holds(&self, dl: usize) -> bool {
        self.0.iter().any(|f| f.dl == dl)
    }

    /// The downloads of the waiting blocks (one entry per block).
    pub(in crate::engine) fn downloads(&self) -> impl Iterator<Item = usize> + '_ {
        self.0.iter().map(|f| f.dl)
    }

    /// Drops the waiting blocks of download `dl` (their memory goes back to the pool).
    pub(in crate::engine) fn drop_download(&mut self, dl: usize) {
        self.0.retain(|f| f.dl != dl);
    }

    /// Drops every waiting block (its memory goes back to the pool).
    pub(in crate::engine) fn drop_all(&mut self) {
        self.0.clear();
    }

    /// Every waiting block, in the order it filled, for a check that plays the writer's part
    /// (the packer's fuzz entry point, `engine::packing`); the engine's writer is `submit_flushes`.
    pub(in crate::engine) fn take_all(&mut self) -> Vec<Flush> {
        self.0.drain(..).collect()
    }
}

/// The errors with which a kernel, a file system or a sandbox refuses an uncached write for the
/// flag (or the call) rather than for the write: EOPNOTSUPP (kernels since 4.7 for an unknown
/// flag, and file systems without `RWF_DONTCACHE`), EINVAL, ENOSYS and EPERM (`pwritev2` refused
/// by a seccomp profile).
pub(super) const UNCACHED_REFUSED: [i32; 4] =
    [libc::EOPNOTSUPP, libc::EINVAL, libc::ENOSYS, libc::EPERM];

impl<R: Reactor<Tag>> Engine<'_, R> {
    /// Issues the writes of the blocks that filled, in the order they filled. A download whose
    /// earlier file still has writes in flight keeps its blocks until those end.
    pub(super) fn submit_flushes(&mut self) {
        let mut idle = Vec::new();
        let mut held = VecDeque::new();
        while let Some(fl) = self.flushes.0.pop_front() {
            let d = &mut self.dls[fl.dl];
            if fl.fill.attempt != d.attempt {
                // Bytes of an attempt the download forgot (it started over): they belong to no
                // file it has now. `start_over` drops such blocks already; this holds whatever
                // path a block took to get here.
                idle.push(fl.dl);
                continue;
            }
            let limit = super::first::MEMORY_DOCUMENT_MAX;
            if d.in_memory && fl.fill.off + fl.fill.filled as u64 > limit {
                // A Metalink held in memory whose answer did not say its length: held only up
                // to the limit a said length is held to.
                if d.error.is_none() {
                    let f = super::first::too_large_for_memory(&d.path_text());
                    self.fail_download(fl.dl, f, None);
                }
                idle.push(fl.dl);
                continue;
            }
            // A file no saved control file describes (length unknown, or known only once the
            // body ended, or a save that failed) is trusted by `-c` up to its length, so it must
            // only ever grow without a gap: one write at a time, each at the end of the bytes
            // written without a gap.
            let one_at_a_time = !d.described() && d.writes > 0;
            if d.old_writes > 0
                || d.opening.is_some()
                || d.first_save_pending
                || one_at_a_time
                || held.iter().any(|h: &Flush| h.dl == fl.dl)
            {
                held.push_back(fl);
                continue;
            }
            let verified = d.opts.pieces.is_some() || d.opts.layout.is_some();
            if !d.described() && verified && d.length_known && !d.length_at_end {
                // Piece digests, and no control file: the first save failed, which ended the
                // download. Its bytes are verified only once on disk, and `-c` would take a file
                // no control file describes for data up to its length: none is written.
                idle.push(fl.dl);
                continue;
            }
            if !d.described() && fl.fill.off != d.written.prefix_end() {
                // A gap lies before this block: a write before it failed (the download is
                // failing), or blocks of several connections came while the first save of a
                // split download failed. Written, it would leave a file whose length `-c` takes
                // for data over the gap; dropped, its bytes are simply not on disk, and the
                // download ends not complete, its file cut to the bytes without a gap.
                if d.error.is_none() {
                    let path = d.path_text();
                    let f = Failure::fatal(
                        ExitCode::FILE_IO,
                        format!(
                            "Failed to write into the file {path}, cause: without its control file, this write would leave a gap"
                        ),
                    );
                    self.fail_download(fl.dl, f, None);
                }
                idle.push(fl.dl);
                continue;
            }
            if fl.at_file_end && d.mode == WriteMode::Direct && !d.described() {
                // A last block padded to 4 KiB would leave the padding in a file `-c` trusts by
                // its length until the cut that follows the write's completion (a kill between
                // keeps it). It goes through the page cache at its exact length instead: there is
                // no write in flight on the file (one at a time), and the download finishes
                // once the page cache has written it back (`maybe_finish`).
                let file = d.file.as_ref().map(|f| f.as_raw_fd());
                if fl.fill.filled % store::DIO_ALIGN != 0
                    && file.is_some_and(|fd| sys::clear_direct(fd).is_ok())
                {
                    d.mode = WriteMode::Direct.fallback();
                }
            }
            if d.opts.layout.is_some() {
                // Several files: the block goes out a file's part at a time.
                self.write_layout_block(fl, &mut idle);
                continue;
            }
            let len = d.mode.write_len(fl.fill.filled, fl.at_file_end);
            let file = d.file.clone().filter(|_| len > 0);
            let Some(file) = file else {
                // Nothing to write: the download may be waiting only for this.
                idle.push(fl.dl);
                continue;
            };
            let Flush {
                dl, fill, source, ..
            } = fl;
            let Fill {
                mut block,
                off,
                filled,
                ..
            } = fill;
            let aligned = off % store::DIO_ALIGN as u64 == 0 && len % store::DIO_ALIGN == 0;
            if d.mode == WriteMode::Direct && !aligned {
                // Every boundary is aligned by construction (plan/); this would be a bug, which
                // must not turn into a refused write or a silent fallback.
                debug_assert!(false, "unaligned O_DIRECT write at {off}+{len}");
                if sys::clear_direct(file.as_raw_fd()).is_ok() {
                    d.mode = WriteMode::Direct.fallback();
                }
            }
            if len > filled {
                block.as_mut_slice()[filled..len].fill(0);
                // The padding overwrites whatever the file held there (an earlier attempt's or
                // run's bytes): no control file, and no cut to the bytes without a gap, may
                // count those as on disk any more.
                d.written.remove(off + filled as u64..off + len as u64);
            }
            if !self.issue_to_pieces(dl, off, &block.as_slice()[..filled], source) {
                drop(block);
                idle.push(dl);
                continue;
            }
            let d = &mut self.dls[dl];
            if d.hasher.is_some() && d.hash_pos == off {
                // In file order: hash the block now, while it is in memory.
                if let Some(h) = d.hasher.as_mut() {
                    h.update(&block.as_slice()[..filled]);
                }
                d.hash_pos += filled as u64;
            }
            d.writes += 1;
            d.high_water = d.high_water.max(off + filled as u64);
            let tag = Tag::Write {
                file: d.file_of(),
                off,
                len,
                done: 0,
                data: filled.min(len),
                mode: d.mode,
                span: None,
            };
            let uncached = d.mode == WriteMode::Uncached;
            self.reactor.write(tag, file, block, 0..len, off, uncached);
        }
        self.flushes.0 = held;
        for dl in idle {
            self.maybe_finish(dl);
        }
        // Connections waiting for blocks can go on if some were freed above.
        self.wake_starved();
    }

    /// Tells download `dl`'s piece checks that the bytes `data` at `off`, from mirror `source`,
    /// are being written. False when its digests do not fit the length the server gave: nothing
    /// of the file can be verified, so nothing is written, and the download fails (exit 32).
    pub(super) fn issue_to_pieces(
        &mut self,
        dl: usize,
        off: u64,
        data: &[u8],
        source: usize,
    ) -> bool {
        let d = &mut self.dls[dl];
        match d.pieces() {
            Ok(Some(p)) => p.issued(off, data, Some(source)),
            Ok(None) => {}
            Err(e) => {
                if d.error.is_none() {
                    self.fail_download(dl, Failure::fatal(ExitCode::CHECKSUM, e), None);
                }
                return false;
            }
        }
        true
    }

    /// Download `dl`'s new file was created on the file-job thread (`accept_first_response`), or
    /// could not be: the blocks that waited for it are written, or the download fails as a
    /// file that cannot be opened does.
    pub(super) fn on_opened(&mut self, dl: usize) {
        let d = &mut self.dls[dl];
        let Some(open) = d.opening.take() else {
            return;
        };
        let result = open.result.lock().ok().and_then(|mut r| r.take());
        let path = d.path_text();
        match result {
            Some(Ok(out)) => {
                if out.mode != WriteMode::Direct && !open.uncached {
                    self.console.notice(&format!(
                        "{path}: O_DIRECT is not supported here; writing through the page cache and dropping it behind"
                    ));
                }
                let d = &mut self.dls[dl];
                d.mode = out.mode;
                if d.opts.layout.is_some() {
                    let more =
                        std::mem::take(&mut *open.more.lock().unwrap_or_else(|e| e.into_inner()));
                    d.attach_files(std::iter::once(out).chain(more).collect());
                } else {
                    d.attach_file(out.file);
                }
                if std::mem::take(&mut d.save_when_open) {
                    self.save_control(dl);
                }
                let d = &mut self.dls[dl];
                // A download stopped or failed meanwhile keeps its file as written: no allocation.
                let stopping = d.halted || d.error.is_some();
                if !d.first_save_pending && !stopping {
                    if let Some(n) = d.alloc_after_save.take() {
                        self.allocate(dl, n);
                    }
                }
            }
            failed => {
                let cause = match failed {
                    Some(Err(e)) => sys::cause(&e),
                    _ => "the file-job thread did not open it".to_string(),
                };
                let f = Failure::fatal(
                    ExitCode::FILE_CREATE,
                    format!("Failed to open the file {path}, cause: {cause}"),
                );
                // What arrived meanwhile is dropped with its blocks: none of it was downloaded
                // to a file (aria2, opening first, shows no speed either).
                self.dls[dl].no_data = true;
                self.dls[dl].create_failed = true;
                if self.dls[dl].error.is_none() {
                    self.fail_download(dl, f, Some((open.conn, open.uri)));
                }
            }
        }
        // The blocks that waited are written now (or, without a file, dropped).
        self.submit_flushes();
        self.maybe_finish(dl);
    }

    /// Starts download `dl` over: forgets the attempt (`Download::forget_attempt`), drops the
    /// blocks of it that still wait to be written, so that none lands in the next file, and
    /// closes every connection still carrying an exchange of it (but `keep`'s, which the caller
    /// makes the new attempt's): an exchange of a forgotten attempt must never act on the next
    /// one (take its first answer, fix its length, fill its blocks).
    pub(super) fn start_over(&mut self, dl: usize, keep: Option<usize>) {
        let attempt = self.dls[dl].attempt;
        for slot in 0..self.conns.len() {
            let stale = Some(slot) != keep
                && self.conns[slot]
                    .as_ref()
                    .and_then(|c| c.ex.as_ref())
                    .is_some_and(|ex| ex.dl == dl && ex.attempt == attempt);
            if stale {
                self.close_conn(slot);
            }
        }
        self.flushes.drop_download(dl);
        self.dls[dl].forget_attempt();
    }

    /// A write of download `dl`'s current file completed (`file_op_done` counted it).
    pub(super) fn on_write(&mut self, dl: usize, block: Block, w: WriteDone, res: i32) {
        if let Some(span) = w.span {
            self.on_span_write(dl, block, w, span, res);
            return;
        }
        let d = &mut self.dls[dl];
        let Some(file) = d.file.clone() else {
            return;
        };
        let again = match res {
            r if r == -libc::EINTR || r == -libc::EAGAIN => Some(w.done),
            r if r == -libc::EINVAL && w.mode == WriteMode::Direct && w.done == 0 => {
                // The filesystem refused O_DIRECT after all: go through the page cache, dropping
                // it behind. Any write issued in direct mode may see this, in any order; the
                // first switches the file, every one of them is issued again.
                if d.mode == WriteMode::Direct && sys::clear_direct(file.as_raw_fd()).is_ok() {
                    d.mode = WriteMode::Direct.fallback();
                    let path = d.path_text();
                    self.console.notice(&format!(
                        "{path}: O_DIRECT is not supported here; writing through the page cache and dropping it behind"
                    ));
                }
                (self.dls[dl].mode != WriteMode::Direct).then_some(0)
            }
            r if w.mode == WriteMode::Uncached && UNCACHED_REFUSED.contains(&-r) => {
                // No RWF_DONTCACHE (an older kernel, or a file system without it; a sandbox may
                // refuse pwritev2 itself): each write is then written back and dropped by a
                // writeback of its own. A real error comes back from the retry without the flag.
                if d.mode == WriteMode::Uncached {
                    d.mode = WriteMode::Uncached.fallback();
                }
                Some(w.done)
            }
            r if r > 0 && w.done + (r as usize) < w.len => Some(w.done + r as usize),
            _ => None,
        };
        let d = &mut self.dls[dl];
        if let Some(done) = again {
            d.writes += 1;
            let tag = Tag::Write {
                file: d.file_of(),
                off: w.off,
                len: w.len,
                done,
                data: w.data,
                mode: d.mode,
                span: None,
            };
            let uncached = d.mode == WriteMode::Uncached;
            self.reactor
                .write(tag, file, block, done..w.len, w.off + done as u64, uncached);
            return;
        }
        drop(block);
        if res < 0 || (res == 0 && w.len > w.done) {
            let errno = if res < 0 { -res } else { libc::EIO };
            self.write_failed(dl, errno);
        } else {
            self.landed(dl, w.off..w.off + w.data as u64, w.mode, file, w.off, w.len);
            // (After the writeback is counted: a piece that fails may end the download.)
            self.pieces_written(dl, w.off..w.off + w.data as u64);
        }
        self.wake_starved();
        self.maybe_finish(dl);
    }

    /// The bytes `r` of download `dl`, written in `mode` to `file` at `at` (`len` bytes from
    /// there), are on disk now: a control file may claim them (unless a writeback of the file has
    /// failed, after which nothing of it is trusted); through the page cache, their writeback
    /// (and drop from the cache) starts.
    pub(super) fn landed(
        &mut self,
        dl: usize,
        r: std::ops::Range<u64>,
        mode: WriteMode,
        file: Fd,
        at: u64,
        len: usize,
    ) {
        let d = &mut self.dls[dl];
        if !d.claims_lost {
            d.written.insert(r);
        }
        if mode == WriteMode::Buffered {
            d.writes += 1;
            let tag = Tag::Writeback { file: d.file_of() };
            self.reactor.writeback(tag, file, at, len);
        }
    }

    /// Writing to download `dl`'s file failed with `errno`: the download ends with aria2's code.
    pub(super) fn write_failed(&mut self, dl: usize, errno: i32) {
        let d = &self.dls[dl];
        if d.error.is_some() {
            return;
        }
        let path = d.path_text();
        let f = Failure::fatal(
            ExitCode::for_write_error(errno),
            format!(
                "Failed to write into the file {path}, cause: {}",
                errno_text(-errno)
            ),
        );
        self.fail_download(dl, f, None);
    }

    /// The buffered fallback's writeback (and page-cache drop) of a range completed.
    pub(super) fn on_writeback(&mut self, dl: usize, res: i32) {
        if res < 0 {
            // ECANCELED: the linked sync_file_range failed, so the data may not reach the disk.
            let errno = if res == -libc::ECANCELED {
                libc::EIO
            } else {
                -res
            };
            // The writes returned, and were counted as on disk, before their writeback; which of
            // their pages it lost is not known (the error is the file's, reported once). Nothing
            // is claimed any more, nor will be by writes still in flight: no control file, and
            // no cut to the bytes without a gap, may count them.
            let d = &mut self.dls[dl];
            d.withdraw_claims();
            d.claims_lost = true;
            self.write_failed(dl, errno);
        }
        self.maybe_finish(dl);
    }

    /// On every tick, every connection that has held the same write block for [`HOLD_LIMIT`]
    /// hands it over (`hand_over_fill`): what it holds is written up to its last 4 KiB boundary,
    /// and it waits for a block in line behind the others. So a connection that fills blocks
    /// slowly (a slow server, a stalled response) keeps none for more than about a tick: there
    /// can be fewer blocks than connections without any waiting long for one (a server gives up
    /// on a connection it cannot send on for a while), and what a slow download has received is
    /// on disk, claimed by its control file, within about a tick whatever the block size.
    pub(super) fn reclaim_blocks(&mut self) {
        let now = self.reactor.now();
        let timeout = Duration::from_secs(self.s.timeout_secs);
        for slot in 0..self.conns.len() {
            let Some(c) = self.conns[slot].as_mut() else {
                continue;
            };
            if c.draining || c.yielding {
                continue;
            }
            let waited = c
                .recv
                .map_or(Duration::ZERO, |r| now.saturating_duration_since(r.since));
            if !c.silent_for.is_zero() && c.silent_for + waited >= timeout {
                // Handed over again and again with nothing received: the timeout of the one
                // receive it would have had.
                let msg = "Timeout while receiving data from the server";
                self.fail_conn(slot, Failure::retry(ExitCode::TIMEOUT, msg));
                continue;
            }
            let Some(dl) = c.ex.as_ref().map(|e| e.dl) else {
                continue;
            };
            let in_recv = c
                .recv
                .and_then(|r| r.fill.map(|(off, _, attempt)| (r.op, off, attempt)));
            let held = match (&c.fill, in_recv) {
                (Some(f), _) => Some((dl, f.off, f.attempt)),
                (None, Some((_, off, attempt))) => Some((dl, off, attempt)),
                (None, None) => None,
            };
            let since = match (held, c.held_at_tick) {
                (Some(b), Some((seen, t))) if b == seen => t,
                _ => now,
            };
            c.held_at_tick = held.map(|b| (b, since));
            if now.saturating_duration_since(since) < HOLD_LIMIT {
                continue;
            }
            let msg = format!("CUID#{} - Handing its write block over", c.id);
            match in_recv {
                Some((op, _, _)) => {
                    c.yielding = true;
                    self.reactor.cancel(op);
                }
                None => {
                    self.hand_over_fill(slot);
                    self.after_io(slot);
                }
            }
            self.console.log(LogLevel::Debug, &msg);
        }
        self.wake_starved();
    }

    /// Gives free write blocks to what waits for them: read-backs for `--checksum` first (a
    /// download that has every byte waits only for them), then connections, the longest waiting
    /// first, so that a connection never waits behind others that asked after it.
    pub(super) fn wake_starved(&mut self) {
        if self.reactor.pool().free_count(Class::Write) == 0 {
            return;
        }
        for dl in 0..self.dls.len() {
            if std::mem::take(&mut self.dls[dl].verify_waits) {
                self.maybe_finish(dl);
                if self.reactor.pool().free_count(Class::Write) == 0 {
                    return;
                }
            }
        }
        let mut line: Vec<(u64, usize)> = self
            .conns
            .iter()
            .enumerate()
            .filter_map(|(slot, c)| {
                let c = c.as_ref()?;
                let since = c.starved.filter(|_| c.state == ConnState::Open)?;
                Some((since, slot))
            })
            .collect();
        line.sort_unstable();
        for (_, slot) in line {
            if self.reactor.pool().free_count(Class::Write) == 0 {
                break;
            }
            // (A connection resumed before may have closed this one, and another taken its slot.)
            let Some(c) = self.conns[slot].as_mut().filter(|c| c.starved.is_some()) else {
                continue;
            };
            c.starved = None;
            c.tls_blocked = false;
            self.resume(slot);
        }
    }
}
