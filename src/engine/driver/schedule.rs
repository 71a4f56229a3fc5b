//! Scheduling: which jobs become downloads (`-j`), how many connections each wants (`-s`, `-x`),
//! when a download is stalled, and when it ends — complete, failed or stopped — once nothing of it is
//! in flight.
use super::*;

impl<R: Reactor<Tag>> Engine<'_, R> {
    /// Takes the next job, if a download may start, into a free place of `dls`.
    pub(super) fn next_download(&mut self) -> Option<usize> {
        if self.jobs_done {
            return None;
        }
        let job = match self.sup.as_deref_mut() {
            // A daemon's queue may be empty now and not later.
            Some(dm) => dm.next_job()?,
            None if self.daemon.is_some() => return None,
            None => match self.jobs.next() {
                Some(job) => job,
                None => {
                    self.jobs_done = true;
                    return None;
                }
            },
        };
        Some(self.place_job(job))
    }

    /// Makes `job` a download in a free place of `dls`, waiting to start (or failed at once:
    /// no URI it can use); its place.
    fn place_job(&mut self, job: Job) -> usize {
        // Shown in messages and the results: never with a password.
        let first = job
            .uris
            .first()
            .map(|u| crate::http::auth::redact(u))
            .unwrap_or_default();
        let mut urls = Vec::new();
        let mut bad = None;
        for u in &job.uris {
            match crate::engine::check_uri(u).and_then(|_| Url::parse(u).map_err(|e| e.to_string()))
            {
                Ok(url) => urls.push(url),
                Err(e) => bad = Some(crate::http::auth::redact(&e)),
            }
        }
        // A finished download's place is reused once nothing it started is still running.
        let reusable = self
            .dls
            .iter()
            .position(|d| d.state == DlState::Finished && d.saves == 0);
        let i = reusable.unwrap_or(self.dls.len());
        let id = DlId {
            slot: i,
            serial: self.next_id,
        };
        self.next_id += 1;
        let gid = job.opts.gid.unwrap_or_else(random_gid);
        let session = self
            .s
            .session_out
            .is_some()
            .then(|| Box::new((job.uris.clone(), job.own.clone())));
        let mut d = Download::new(id, gid, urls, first, job.opts, self.reactor.now());
        d.session = session;
        d.restarted = job.restarted;
        match self.dls.get_mut(i) {
            Some(place) => *place = d,
            None => self.dls.push(d),
        }
        self.resolve_proxies(i);
        if let Some(why) = self.dls[i].opts.refused.clone() {
            let d = &mut self.dls[i];
            d.state = DlState::Active;
            d.path = d.opts.out.as_ref().map(|o| d.opts.dir.join(o));
            self.fail_download(i, Failure::fatal(ExitCode::UNKNOWN, why), None);
        } else if self.dls[i].uris.is_empty() {
            let why = bad.unwrap_or_else(|| "no URI".to_string());
            self.dls[i].state = DlState::Active;
            self.fail_download(i, Failure::fatal(ExitCode::UNKNOWN, why), None);
        }
        i
    }

    pub(super) fn schedule(&mut self) {
        if self.stopping {
            return;
        }
        // Metalinks describing running downloads start at once, beside them (`-j` counts them
        // not).
        while let Some(job) = self.described_jobs.pop_front() {
            let i = self.place_job(job);
            if self.dls[i].state == DlState::Waiting {
                self.start_download(i);
            }
        }
        let active = self
            .dls
            .iter()
            .filter(|d| d.state == DlState::Active && d.opts.describes.is_none())
            .count();
        let mut room = self.max_concurrent().saturating_sub(active);
        while room > 0 {
            let Some(i) = self.next_download() else { break };
            if self.dls[i].state == DlState::Waiting {
                self.start_download(i);
                room -= 1;
            }
        }
        for i in 0..self.dls.len() {
            // A stopped download (paused or removed over RPC, waiting for its writes) gets no
            // new connection: it would fetch on after being told to stop.
            let d = &self.dls[i];
            if d.state != DlState::Active || d.error.is_some() || d.halted {
                continue;
            }
            while self.dls[i].wanted > 0 {
                if !self.open_extra(i) {
                    break;
                }
                // (A connection that failed at once, with no address to try, may have ended the
                // download and its wants already.)
                self.dls[i].wanted = self.dls[i].wanted.saturating_sub(1);
            }
            self.check_stalled(i);
        }
    }

    pub(super) fn start_download(&mut self, i: usize) {
        let gid = self.dls[i].gid;
        let own = self.dls[i].opts.describes.is_some();
        if !own {
            self.notify("aria2.onDownloadStart", gid);
        }
        let d = &mut self.dls[i];
        d.state = DlState::Active;
        let now = self.reactor.now();
        d.started = Some(now);
        d.samples.push_back((now, 0));
        if let Some(out) = &d.opts.out {
            // Named by -o: failures show the path it would have had, as aria2 does.
            d.path = Some(d.opts.dir.join(out));
        }
        if !own {
            self.hook(i, hooks::Event::Start);
        }
        if let Err(f) = self.prepare_resume(i) {
            self.fail_download(i, f, None);
            return;
        }
        self.first_request(i);
    }

    /// Sends download `i`'s first request (the one whose answer names the file and makes the
    /// plan), on the first mirror it may use.
    pub(super) fn first_request(&mut self, i: usize) {
        let Some(mirror) = self.pick_mirror(i) else {
            return;
        };
        let d = &mut self.dls[i];
        let url = d.uris[mirror].clone();
        d.wanted = 0;
        if !self.open(Want {
            dl: i,
            url,
            mirror,
            redirects: 0,
        }) {
            self.dls[i].wanted = 1;
        }
    }

    /// Opens (or reuses) a connection for one more worker on download `i`. False if no slot is free.
    pub(super) fn open_extra(&mut self, i: usize) -> bool {
        let Some(mirror) = self.pick_mirror(i) else {
            return true;
        };
        let d = &self.dls[i];
        let url = match (&d.split_url, d.plan.is_some()) {
            (Some((m, u)), true) if *m == mirror => u.clone(),
            _ => d.uris[mirror].clone(),
        };
        self.open(Want {
            dl: i,
            url,
            mirror,
            redirects: 0,
        })
    }

    /// A download with work left but nobody working on it.
    pub(super) fn check_stalled(&mut self, i: usize) {
        let working = self.conn_count(i);
        let d = &self.dls[i];
        if working > 0 || d.wanted > 0 || d.plan.is_none() || d.error.is_some() || d.halted {
            return;
        }
        let Some(plan) = &d.plan else { return };
        if plan.is_complete() {
            return;
        }
        if d.ranges_ok {
            self.dls[i].wanted = 1;
        } else {
            let f = d.soft_error.clone().unwrap_or_else(|| {
                Failure::fatal(
                    ExitCode::CANNOT_RESUME,
                    "the server does not support ranges and the connection that could finish the file is gone",
                )
            });
            self.fail_download(i, f, None);
        }
    }

    /// Connections working for download `dl` (in an exchange for it, or connecting to start one).
    pub(super) fn conn_count(&self, dl: usize) -> usize {
        self.conns
            .iter()
            .flatten()
            .filter(|c| c.works_for(dl))
            .count()
    }

    /// Whether a new connection would find work on download `dl`: a range nobody owns, or one big
    /// enough to split (the connections at work may be about to finish, which is not enough).
    pub(super) fn needs_another_connection(&self, dl: usize) -> bool {
        let d = &self.dls[dl];
        d.ranges_ok
            && d.plan
                .as_ref()
                .is_some_and(|p| p.has_work_for_newcomer(self.split_reserve()))
    }

    /// How far past its position a connection may already be receiving (see `Plan::take`).
    pub(super) fn split_reserve(&self) -> u64 {
        let pool = self.reactor.pool();
        (pool.size(Class::Read) + pool.size(Class::Write)) as u64 + 64 * 1024
    }

    /// Closes every connection working for download `dl`, keeping what they wrote.
    pub(super) fn stop_conns(&mut self, dl: usize) {
        for slot in 0..self.conns.len() {
            let Some(c) = self.conns[slot].as_mut() else {
                continue;
            };
            if !c.works_for(dl) || c.draining {
                continue;
            }
            // A receive straight into the fill's block holds the bytes received before it: it is
            // cancelled, and its completion closes the connection with the block back, so they
            // are written (a slow link can have most of a block there).
            if let Some(op) = c.recv.as_ref().filter(|r| r.fill.is_some()).map(|r| r.op) {
                c.draining = true;
                self.reactor.cancel(op);
                continue;
            }
            self.return_range(slot);
            self.close_conn(slot);
        }
    }

    /// `--save-session` outside daemon mode: a download that failed or did not finish goes into
    /// the session written at exit (all of them with `--force-save`; one not found only with
    /// `--save-not-found`), as aria2c writes it: its URIs, GID, and options.
    fn keep_for_session(&mut self, dl: usize, outcome: &Outcome) {
        let Some(rules) = self.s.session_out.as_ref() else {
            return;
        };
        let Some(entry) = self.dls[dl].session.take() else {
            return;
        };
        let complete = outcome.finished && outcome.code == ExitCode::OK;
        let not_found = outcome.code == ExitCode::NOT_FOUND;
        let keep = rules.force_save || !complete && (!not_found || rules.save_not_found);
        if keep {
            let (uris, own) = *entry;
            let text = self.summary.session.get_or_insert_with(String::new);
            crate::store::session::session_entry(
                text,
                &uris,
                outcome.gid,
                false,
                &rules.command_line,
                &own,
            );
        }
    }

    /// Ends download `dl` with `f`, saying so in one error line (naming the connection and URI that
    /// failed when there is one).
    pub(super) fn fail_download(&mut self, dl: usize, f: Failure, at: Option<(u64, String)>) {
        match at {
            Some((conn, uri)) => self.say_aborted(dl, conn, &uri, f.code, &f.message),
            None => {
                let line = format!(
                    "Download aborted. URI={}: errorCode={} {}",
                    self.dls[dl].first_uri, f.code.0, f.message
                );
                match self.dls[dl].opts.describes {
                    Some(_) => self.console.log(LogLevel::Info, &line),
                    None => self.console.error(&line),
                }
            }
        }
        self.dls[dl].error = Some(f);
        self.dls[dl].wanted = 0;
        self.stop_conns(dl);
        self.maybe_finish(dl);
    }

    /// Download `dl`'s finished file was cut to its length (`maybe_finish`), or could not be.
    pub(super) fn on_truncated(&mut self, dl: usize, res: i32) {
        let d = &mut self.dls[dl];
        if res < 0 && d.error.is_none() {
            let f = Failure::fatal(
                ExitCode::FILE_IO,
                format!("Failed to truncate {}: {}", d.path_text(), errno_text(res)),
            );
            d.error = Some(f);
        }
        self.maybe_finish(dl);
    }

    /// Ends a download whose work is done (or failed) once nothing of it is in flight.
    pub(super) fn maybe_finish(&mut self, dl: usize) {
        if self.flushes.holds(dl) {
            return;
        }
        let d = &self.dls[dl];
        if d.state != DlState::Active || d.writes > 0 || d.old_writes > 0 {
            return;
        }
        let working = self.conn_count(dl) > 0;
        let pending_fill = self
            .conns
            .iter()
            .flatten()
            .any(|c| c.fill.is_some() && c.ex.as_ref().is_some_and(|e| e.dl == dl));
        let d = &mut self.dls[dl];
        // A control file that claims every byte is believed only once a server has answered
        // that the file is still there, of that length (`on_claimed_whole`): until then nothing
        // is in, and no digest is taken of bytes a 404 will leave as they are.
        let awaiting_server = d.resumed && !d.ranges_confirmed;
        let complete =
            d.length_known && !awaiting_server && d.plan.as_ref().is_some_and(Plan::is_complete);
        let all_in = complete && !pending_fill;
        // Every byte is written (and, with a digest, verified): what is left is finishing the
        // file (its final writeback, its cut), and a stop arriving meanwhile, as one arriving
        // while the last write was in flight, changes nothing. Written, not only arrived: an
        // emergency stop drops the blocks still waiting, whose bytes the plan counts as in.
        let total = d.plan.as_ref().map_or(0, Plan::total);
        // (A download that fetched no body, its file already whole or not wanted, has nothing
        // to write.)
        let written = d.no_data || d.all_written(total);
        let settled =
            all_in && written && (d.expected.is_none() || d.verified) && d.pieces_checked();
        // Every byte arrived and nothing is in flight or waiting, yet some never reached the
        // file: their blocks were dropped (an emergency stop, a forced shutdown) and nothing
        // will write them now. Complete means written: such a download ends not complete.
        // (A download that failed already, e.g. a checksum that disowned its bytes, is failed,
        // not stopped.)
        let lost = all_in && !written && d.error.is_none();
        if lost {
            d.halted = true;
        }
        if d.error.is_some() || (d.halted && !settled) {
            if !working {
                d.state = DlState::Finished;
                d.ended = Some(self.reactor.now());
                // What is on disk stays resumable, by ringdl or by aria2c: the control file says
                // which bytes are there. Without one, `-c` will take the file's length for what is
                // done, so the file is cut to the bytes written without a gap from its start. The
                // last save is trusted only once it has happened: the file keeps its length on
                // the save's job, after the save, and is cut to that prefix if the save fails.
                let d = &self.dls[dl];
                let total = d.total();
                let arrived = d
                    .written
                    .ranges()
                    .last()
                    .map_or(0, |r| r.end)
                    .max(d.high_water);
                // Never shorter than the file was when this run found it: its bytes beyond what
                // this run can vouch for were the user's or an earlier run's, and no option said
                // to drop them (a control file, when saved, says which are claimed). Unless a
                // lost writeback made this run's own writes anything: a file no control file
                // describes must then be right up to its length, and only what this run never
                // wrote (and what is proven) stays.
                let found = if d.claims_lost {
                    d.untouched.min(d.found_len)
                } else {
                    d.found_len
                };
                // Judged by its length (no control file), the file keeps found bytes only where
                // this run never wrote: its last block, padded for O_DIRECT, may have covered
                // found bytes past what arrived.
                let rewrote = d.high_water > d.untouched;
                let by_length = if rewrote {
                    d.untouched.min(found)
                } else {
                    found
                };
                // (With piece digests, only verified bytes: `-c` takes the prefix for data.)
                let prefix = d.claims().prefix_end().max(by_length);
                // A checksum that failed disowned the bytes written, which are the server's:
                // they stay for the user to see, as aria2c leaves them (a kill before the control
                // file saying so is saved leaves them as aria2c does, with none). Bytes a lost
                // writeback disowned may be anything: only what is proven stays.
                let checksum_failed = d
                    .error
                    .as_ref()
                    .is_some_and(|f| f.code == ExitCode::CHECKSUM);
                let kept = match total {
                    // A preallocated file keeps its real length.
                    Some(t) if d.preallocated => t,
                    // The padding of the last block goes, nothing that arrived does.
                    _ => arrived,
                }
                .max(found);
                if d.opts.layout.is_some() {
                    // Several files, described before any write: the control file says what
                    // is on disk; each file only loses the padding past its end.
                    self.save_control_then(dl, None);
                    self.cut_files(dl);
                    let d = &mut self.dls[dl];
                    d.file = None;
                    let (path, gid) = (d.path_text(), d.gid);
                    self.record(dl);
                    self.console
                        .notice(&format!("Download GID#{gid:016x} not complete: {path}"));
                    return;
                }
                // No control file of this file is on disk yet: until the last one is, a kill
                // leaves the file to be judged by its length, so it is cut to the gap-free prefix
                // now (it grew only there: nothing is lost but padding, or disowned bytes).
                let undescribed = !d.described() && !checksum_failed;
                let file = d.file.clone();
                if let (Some(f), true) = (&file, undescribed) {
                    cut_longer(f, prefix);
                }
                let withdrawn = d.claims_lost || checksum_failed;
                // What the control file left from before describes, where it still tells the truth.
                let standing = d.described() && !withdrawn;
                let settle =
                    file.as_ref()
                        .and_then(|f| f.try_clone().ok())
                        .map(|f| resume::Settle {
                            file: f,
                            saved: if undescribed { prefix } else { kept },
                            unsaved: if standing { kept } else { prefix },
                            stale_lies: withdrawn,
                            lost: if standing { kept } else { found },
                        });
                let cut_later = settle.is_some();
                if undescribed && file.is_some() {
                    // Cut there: nothing past it is on disk for the last save to claim.
                    self.dls[dl].written.remove(prefix..u64::MAX);
                }
                let described = self.save_control_then(dl, settle);
                self.dls[dl].file = None;
                if let (Some(f), false) = (&file, described && cut_later) {
                    // No save to wait for (length unknown, nothing to describe), or no
                    // descriptor for its job: cut now. (The server's bytes a checksum disowned
                    // stay, as above.)
                    cut_longer(
                        f,
                        if described || checksum_failed {
                            kept
                        } else {
                            prefix
                        },
                    );
                }
                let d = &mut self.dls[dl];
                let (path, gid, own) = (d.path_text(), d.gid, d.opts.describes.is_some());
                self.record(dl);
                if !own {
                    self.console
                        .notice(&format!("Download GID#{gid:016x} not complete: {path}"));
                }
            }
            return;
        }
        if !all_in {
            return;
        }
        if !self.dls[dl].pieces_checked() {
            // A piece is claimed only once verified: those not yet (bytes found on disk, or that
            // came out of order) are read back first; a piece that fails goes back to the plan,
            // and the download goes on.
            if !self.settle_pieces(dl) {
                return;
            }
            let d = &self.dls[dl];
            if !d.pieces_checked() {
                debug_assert!(
                    d.reading_piece || d.verify_waits || d.error.is_some(),
                    "pieces left unverified with nothing to check them: {}",
                    d.pieces_state()
                );
                return;
            }
        }
        if self.dls[dl].expected.is_some() && !self.dls[dl].verified {
            // The digest decides: finish hashing (reading the file back if needed) first.
            if !self.dls[dl].verifying {
                self.start_verify(dl);
            }
            return;
        }
        let d = &mut self.dls[dl];
        if !d.files.is_empty() && d.synced_generation != d.generation {
            // Several files: those written through the page cache are written back first.
            d.synced_generation = d.generation;
            let buffered: Vec<Rc<std::fs::File>> = d
                .files
                .iter()
                .filter(|(_, m)| *m != WriteMode::Direct)
                .map(|(f, _)| f.clone())
                .collect();
            if !buffered.is_empty() {
                for file in buffered {
                    let d = &mut self.dls[dl];
                    d.writes += 1;
                    let tag = Tag::Writeback { file: d.file_of() };
                    self.reactor.writeback(tag, file, 0, 0);
                }
                return;
            }
        }
        let d = &mut self.dls[dl];
        if d.files.is_empty() && d.mode != WriteMode::Direct && d.synced_generation != d.generation
        {
            // Written through the page cache: an uncached write returns once its writeback has
            // started, and an I/O error there would reach nobody. Complete means on disk, as
            // with O_DIRECT: the whole file's writeback is waited for (a failure fails the
            // download, `on_writeback`) and whatever is left of it in the cache dropped.
            if let Some(file) = d.file.clone() {
                d.synced_generation = d.generation;
                d.writes += 1;
                let tag = Tag::Writeback { file: d.file_of() };
                self.reactor.writeback(tag, file, 0, 0);
                return;
            }
        }
        let path = d.path_text();
        if let Some(layout) = d.opts.layout.clone().filter(|_| !d.files.is_empty()) {
            // Several files: each cut to its length (the padding of its last block goes) on the
            // file-job thread; the download finishes when that is done (`on_truncated`).
            d.file = None;
            // (A file left unselected holds only what pieces of its neighbours brought: never
            // made longer.)
            let files: Vec<(std::fs::File, u64, bool)> = std::mem::take(&mut d.files)
                .into_iter()
                .zip(layout.files())
                .filter_map(|((f, _), l)| f.try_clone().ok().map(|f| (f, l.length, l.selected)))
                .collect();
            d.writes += 1;
            let tag = Tag::Truncated { file: d.file_of() };
            self.reactor.blocking(
                tag,
                Box::new(move || {
                    for (file, len, selected) in &files {
                        let now = file.metadata()?.len();
                        if now > *len || (*selected && now != *len) {
                            store::step()?;
                            file.set_len(*len)?;
                        }
                    }
                    Ok(())
                }),
            );
            return;
        }
        if d.document {
            // A Metalink to follow: read once the download is recorded (`record`).
            d.document_file = d.file.clone();
        }
        if let Some(file) = d.file.take() {
            // -R: the server's Last-Modified time (best effort: a bad date changes nothing).
            let mtime = d
                .last_modified
                .as_deref()
                .and_then(|t| httpdate::parse_http_date(t).ok())
                .filter(|_| d.opts.remote_time);
            // Only a padded last block makes the file longer than its length: a file whose writes
            // had their exact length (through the page cache), or ending on a block boundary, is
            // not cut (cutting costs a metadata update, and a list of small files pays it once
            // each).
            let cut = move |file: &std::fs::File| {
                if file.metadata()?.len() != total {
                    store::step()?;
                    file.set_len(total)?;
                }
                if let Some(t) = mtime {
                    let _ = file.set_modified(t);
                }
                Ok(())
            };
            // Until it is cut, the file may end in the last block's padding. Where a saved
            // control file describes it, a kill meanwhile leaves a download `-c` resumes by that
            // file, and the cut goes to the file-job thread. Where none does (length unknown, or
            // a one-block file before its first save), `-c` would take the padded length for
            // what is done: the cut is made here, in the step that saw the last write.
            let described = d.saved_generation == d.generation && d.control.is_some();
            // The job gets a descriptor of its own: the file's `Rc` may still be held by the
            // completion being handled (the last write's).
            match described.then(|| file.try_clone().ok()).flatten() {
                Some(file) => {
                    // Cut to its length (the padding of the last block goes) and dated on the
                    // file-job thread: the download finishes when that is done
                    // (`on_truncated`), having waited on nothing of its own meanwhile.
                    d.writes += 1;
                    let tag = Tag::Truncated { file: d.file_of() };
                    self.reactor.blocking(tag, Box::new(move || cut(&file)));
                    return;
                }
                None => {
                    if let Err(e) = cut(&file) {
                        let f = Failure::fatal(
                            ExitCode::FILE_IO,
                            format!("Failed to truncate {path}: {e}"),
                        );
                        d.error = Some(f);
                    }
                }
            }
        }
        // Complete: a stop that arrived once every byte was in did not stop it.
        d.halted = false;
        d.state = DlState::Finished;
        d.ended = Some(self.reactor.now());
        if d.error.is_none() {
            self.remove_control(dl);
        }
        if self.dls[dl].error.is_none() && self.dls[dl].opts.describes.is_none() {
            self.console.notice(&format!("Download complete: {path}"));
        }
        // (Said before a Metalink it fetched is read: `record` follows it.)
        self.record(dl);
        // Connections still streaming into this finished download, or still connecting for it, are
        // of no further use (and must not carry its index to whatever job takes its place).
        for slot in 0..self.conns.len() {
            let streaming = self.conns[slot].as_ref().is_some_and(|c| c.works_for(dl));
            if streaming {
                self.close_conn(slot);
            }
        }
    }

    /// Adds the ended download `dl` to the summary; its place can then take the next job.
    pub(super) fn record(&mut self, dl: usize) {
        self.profile_download(dl);
        let d = &self.dls[dl];
        let seconds = match (d.started, d.ended) {
            (Some(a), Some(b)) => b.duration_since(a).as_secs_f64(),
            _ => 0.0,
        };
        let outcome = Outcome {
            gid: d.gid,
            code: d.error.as_ref().map_or(ExitCode::OK, |f| f.code),
            finished: !d.halted,
            removed: d.removing,
            path: d.path.clone(),
            first_uri: d.first_uri.clone(),
            bytes: if d.no_data { 0 } else { d.received_here() },
            total: d.total(),
            seconds,
        };
        let document = self.document(dl, &outcome);
        if self.dls[dl].describing {
            // A Metalink still being fetched to describe it is of no use now.
            self.stop_describers(self.dls[dl].gid);
        }
        if self.dls[dl].opts.describes.is_some() {
            // The engine's own fetch of a Metalink describing a download: no result, no hook;
            // what it says joins that download.
            match document {
                Some(doc) => self.describe(doc),
                None => {
                    let why = self.dls[dl]
                        .error
                        .as_ref()
                        .map_or("stopped".to_string(), |f| f.message.clone());
                    let msg = format!("The Metalink describing a download was not fetched: {why}");
                    self.console.log(LogLevel::Info, &msg);
                }
            }
            return;
        }
        if self.daemon.is_some() {
            // The daemon decides where it goes: back in the queue (paused or restarted), or a
            // result, with its notification and hook (and a Metalink's downloads).
            let mut ended = self.ended_of(dl, &outcome);
            ended.followed = document;
            self.report_end(ended, outcome);
            return;
        }
        if let Some(doc) = document {
            self.follow(doc);
        }
        self.hook(dl, daemon::hook_event(&outcome));
        self.keep_for_session(dl, &outcome);
        self.count_result(outcome);
    }

    /// The Metalink a finished download fetched to follow (`--follow-metalink`), open at its
    /// start; one that cannot be opened is said in one line, and the download stays complete.
    fn document(&mut self, dl: usize, outcome: &Outcome) -> Option<crate::engine::Followed> {
        let d = &mut self.dls[dl];
        let file = d.document_file.take();
        if !d.document
            && d.opts.layout.is_none()
            && d.opts.follow_metalink != crate::engine::Follow::No
        {
            // Resumed from what a run before left (its first answer a range, or none): a
            // Metalink to follow all the same, by its name or the type its server said.
            let name = d
                .path
                .as_ref()
                .and_then(|p| p.file_name())
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            d.document = super::first::is_metalink(&name, d.content_type.as_deref());
        }
        if !d.document || outcome.code != ExitCode::OK || !outcome.finished || d.halted {
            return None;
        }
        let path = d.path.clone().unwrap_or_default();
        let opened = match (file, d.in_memory) {
            (Some(f), _) => f.try_clone(),
            (None, false) => std::fs::File::open(&path),
            (None, true) => Err(std::io::Error::other("its memory is gone")),
        };
        // Relative URLs in it are of the URI it came from, as given (aria2c's base).
        let uri = d
            .split_url
            .as_ref()
            .and_then(|(m, _)| d.uris.get(*m))
            .or_else(|| d.uris.first())
            .map(Url::to_string)
            .unwrap_or_default();
        match opened {
            Ok(file) => Some(crate::engine::Followed {
                gid: d.gid,
                file: Rc::new(file),
                uri,
                path,
                opts: d.opts.clone(),
                own: d.session.as_ref().map(|s| s.1.clone()).unwrap_or_default(),
            }),
            Err(e) => {
                let msg = format!(
                    "Could not read the Metalink {}: {}",
                    path.display(),
                    sys::cause(&e)
                );
                self.console.log(LogLevel::Error, &msg);
                None
            }
        }
    }

    /// Hands a Metalink to the command line's follower, whose downloads start next (before the
    /// rest of the list, as aria2c puts them first); one that cannot be read is said in one
    /// line (aria2c: the download stays complete).
    fn follow(&mut self, doc: crate::engine::Followed) {
        let Some(f) = self.follower.as_mut() else {
            return;
        };
        match f(doc) {
            Ok(0) => {}
            // (A run stopping starts nothing more: they stay in the list, for the session.)
            Ok(_) if self.stopping => {}
            Ok(_) => self.jobs_done = false,
            Err(msg) => self.console.log(LogLevel::Error, &msg),
        }
    }

    /// Cuts each file of a download over several files to its length (the padding of its last
    /// block goes; nothing of the next file's is there).
    fn cut_files(&mut self, dl: usize) {
        let d = &self.dls[dl];
        let Some(layout) = d.opts.layout.clone() else {
            return;
        };
        for ((f, _), l) in d.files.iter().zip(layout.files()) {
            cut_longer(f, l.length);
        }
        self.dls[dl].files.clear();
    }

    /// A download that ended is one of the run's results (at most [`MAX_RESULTS`] kept).
    pub(super) fn count_result(&mut self, outcome: Outcome) {
        let sum = &mut self.summary;
        sum.total += 1;
        if outcome.removed {
            // Neither a failure nor unfinished.
        } else if outcome.code != ExitCode::OK {
            sum.last_error = Some(outcome.code);
        } else if !outcome.finished {
            sum.unfinished += 1;
        }
        if sum.results.len() == MAX_RESULTS {
            sum.results.remove(0);
        }
        sum.results.push(outcome);
    }
}

/// Cuts `file` to `len` bytes if it is longer. Best effort: a file that cannot be cut keeps bytes
/// nothing claims, which the next save or the next run's checks deal with.
fn cut_longer(file: &std::fs::File, len: u64) {
    if file.metadata().map(|m| m.len()).unwrap_or(0) > len {
        let _ = file.set_len(len);
    }
}
