//! The response policy: aria2's rules for what a response head means — status codes, redirects,
//! ranges answered or refused, mirrors that cannot resume — and, for the first response of a
//! download, naming and opening the file and making the plan.
use super::first::FirstAnswer;
use super::*;

impl<R: Reactor<Tag>> Engine<'_, R> {
    /// What to do with a parsed response head.
    pub(super) fn on_head(&mut self, slot: usize) {
        let Some(c) = self.conns[slot].as_mut() else {
            return;
        };
        let Some(ex) = c.ex.as_mut() else { return };
        if ex.answer.is_some() {
            // A protocol other than HTTP answered.
            self.on_answer(slot);
            return;
        }
        let Some(resp) = ex.response.take() else {
            return;
        };
        let dl = ex.dl;
        let seg_i = ex.seg;
        let status = resp.status;
        let conn_id = c.id;
        // Every response's cookies count, a redirect's and an error's too.
        self.identity.keep_cookies(&ex.url, &resp.set_cookies);
        if http::is_redirect(status) {
            let Some(loc) = resp.location.as_deref() else {
                self.fail_conn(
                    slot,
                    Failure::fatal(
                        ExitCode::HTTP_PROTOCOL,
                        format!("Got {status} status, but no location header provided."),
                    ),
                );
                return;
            };
            let next = match http::resolve_location(&ex.url, loc) {
                Ok(u) => u,
                Err(e) => {
                    // aria2c: its generic code, and the request is tried again.
                    self.fail_conn(slot, Failure::retry(ExitCode::UNKNOWN, e.to_string()));
                    return;
                }
            };
            if ex.redirects + 1 > MAX_REDIRECTS {
                self.fail_conn(
                    slot,
                    Failure::fatal(
                        ExitCode::TOO_MANY_REDIRECTS,
                        format!("Too many redirects: count={MAX_REDIRECTS}"),
                    ),
                );
                return;
            }
            let w = Want {
                dl,
                url: next.clone(),
                mirror: ex.mirror,
                redirects: ex.redirects + 1,
            };
            self.console.notice(&format!(
                "CUID#{conn_id} - Redirecting to {}",
                crate::http::auth::redact(next.as_str())
            ));
            // The redirect's body is not wanted; a fresh connection is simpler than skipping it.
            self.close_conn(slot);
            self.open_or_defer(w);
            return;
        }
        if status == 304 && self.dls[dl].if_modified_since.is_some() {
            // --conditional-get: the local file is as new as the server's; it stays as it is.
            self.finish_without_body(dl, None);
            self.close_conn(slot);
            self.maybe_finish(dl);
            return;
        }
        let mut asked = ex.range;
        let mirror = ex.mirror;
        if status == 401 && self.answer_challenge(slot) {
            return;
        }
        if status == 200 && resp.file_length().is_none() && self.leave_found_alone(slot) {
            // This answer is the first response of a download that takes nothing from disk.
            asked = None;
        }
        let found = self.continued_over(dl, asked, &resp);
        if self.on_found(slot, dl, found) {
            return;
        }
        if self.claimed_whole(dl, asked) && ((200..300).contains(&status) || status == 416) {
            self.on_claimed_whole(slot, &resp);
            return;
        }
        if let Some(f) = self.length_mismatch(dl, asked, &resp) {
            self.fail_conn(slot, f);
            return;
        }
        let range = asked;
        // A refusal from the only mirror while other connections carry the body: this one gives
        // up (`give_up_range`). From one of several mirrors, it says that mirror is dead, not
        // that ranges fail: the mirror is dropped below and its range goes to the others, however
        // the file is split.
        let only_mirror = !self.dls[dl].other_mirrors(mirror);
        if !(200..300).contains(&status) && self.s.retry_wait == 0 && only_mirror {
            let f = Failure::retry(
                ExitCode::for_http_status(status),
                format!("The response status is not successful. status={status}"),
            );
            if self.give_up_range(slot, &f) {
                return;
            }
        }
        if !(200..300).contains(&status) {
            let code = ExitCode::for_http_status(status);
            let msg = match status {
                404 => format!("Resource not found. status={status}"),
                401 => format!("Authorization failed. status={status}"),
                _ => format!("The response status is not successful. status={status}"),
            };
            let d = &mut self.dls[dl];
            // aria2 retries 502/503 only with --retry-wait (honouring Retry-After here), and 504
            // always.
            if matches!(status, 502 | 503) && self.s.retry_wait > 0 || status == 504 {
                let wait = resp.retry_after.map_or(self.s.retry_wait, |s| s.min(600));
                self.fail_conn(slot, Failure::retry(code, msg).after(wait));
                return;
            }
            if status == 404 {
                self.not_found(slot, msg);
                return;
            }
            d.bad_uris[mirror] = true;
            if d.bad_uris.iter().all(|b| *b) {
                self.fail_conn(slot, Failure::fatal(code, msg));
            } else {
                // Another mirror may have it.
                self.fail_conn(slot, Failure::retry(code, msg));
            }
            return;
        }
        if !matches!(status, 200 | 206) {
            // Only 200 and 206 carry a file (a 204's nothing or a 201's body is not one): aria2
            // fails such an answer at once, without retrying.
            self.fail_conn(
                slot,
                Failure::fatal(
                    ExitCode::HTTP_PROTOCOL,
                    format!("Unexpected status {status}"),
                ),
            );
            return;
        }
        let head_request = self.conns[slot]
            .as_ref()
            .and_then(|c| c.ex.as_ref())
            .is_some_and(|ex| ex.head_request);
        if head_request && !self.dls[dl].opts.dry_run && range.is_none() {
            // `--use-head`: the HEAD was answered; the GET that follows makes the file, on this
            // connection when it can be kept.
            self.dls[dl].head_done = true;
            if let Some(ex) = self.conns[slot].as_mut().and_then(|c| c.ex.as_mut()) {
                ex.start_body(Framing::Empty);
                ex.unusable |= !resp.keep_alive;
            }
            self.dls[dl].wanted += 1;
            self.release_conn(slot, dl);
            return;
        }
        let framing = resp.framing(head_request);
        // `--http-accept-gzip`: an encoded whole-file answer is inflated on its way to the file.
        let coding = resp
            .content_encoding
            .as_deref()
            .and_then(http::decode::Coding::of)
            .filter(|_| range.is_none() && self.dls[dl].opts.http_accept_gzip);
        if status == 206 && self.ignored_if_range(slot, &resp) {
            let d = &self.dls[dl];
            // A resumed download's partial file from an earlier run keeps its own rules (its
            // version is not the server's: `--always-resume` says what then); this run's own
            // bytes are of the version it began with, and this range is not.
            let resuming = d.resumed && !d.ranges_confirmed;
            let continuing = d.plan.is_none() && d.continue_from.is_some();
            let earlier_run = (resuming || continuing) && d.opts.always_resume;
            if !earlier_run {
                self.restart_for_new_version(slot);
                return;
            }
        }
        if let Err(f) = self.take_digest(dl, &resp) {
            self.fail_conn(slot, f);
            return;
        }
        if range.is_none() {
            self.take_duplicates(slot, dl, &resp);
            self.take_description(slot, dl, &resp);
        }
        match range {
            None => {
                if let Err(f) = self.accept_first_response(slot, &resp, framing, coding.is_some()) {
                    self.fail_conn(slot, f);
                    return;
                }
            }
            Some((first, _)) if self.dls[dl].plan.is_none() => {
                // -c: the first request asked for the rest of the existing file.
                if let Err(f) = self.accept_continued(slot, &resp, first) {
                    self.fail_conn(slot, f);
                    return;
                }
            }
            Some((first, last)) => {
                if self.taken_over(slot, dl, seg_i, conn_id) {
                    return;
                }
                let total = self.dls[dl].total();
                let d = &self.dls[dl];
                let remote_total = resp.content_range.and_then(|cr| cr.complete_length);
                if d.resumed && !d.ranges_confirmed && status == 206 && remote_total != total {
                    // The file on the server is not the one the partial file is part of.
                    let f = total_mismatch(remote_total, total);
                    self.fail_conn(slot, f);
                    return;
                }
                let asked = self.conns[slot]
                    .as_ref()
                    .and_then(|c| c.ex.as_ref())
                    .and_then(|ex| d.validator.as_ref().and_then(|v| v.for_url(&ex.url)));
                if d.resumed
                    && !d.ranges_confirmed
                    && (status == 200 || asked.is_some_and(|a| changed_since(&resp, a)))
                    && asked.is_some()
                    && d.opts.always_resume
                {
                    // If-Range was sent with the partial file's version: a whole answer means the
                    // file changed since, and its bytes must not be mixed with the old ones; or,
                    // when the answer still carries that version, that the server ignores ranges.
                    // Another mirror may still serve the old file.
                    let (code, msg) = if asked.is_some_and(|a| changed_since(&resp, a)) {
                        file_changed()
                    } else {
                        (
                            ExitCode::CANNOT_RESUME,
                            invalid_range_header(first, last.unwrap_or(0), total.unwrap_or(0)),
                        )
                    };
                    let f = match self.cannot_resume(slot) {
                        CannotResume::NextMirror => Failure::retry(code, msg),
                        _ => Failure::fatal(code, msg),
                    };
                    self.fail_conn(slot, f);
                    return;
                }
                let check = match (status, resp.content_range) {
                    (206, Some(cr)) => cr.check(first, last, total).map_err(http_failure),
                    _ => Err(Failure::retry(
                        ExitCode::CANNOT_RESUME,
                        invalid_range_header(first, last.unwrap_or(0), total.unwrap_or(0)),
                    )),
                };
                let d = &self.dls[dl];
                let resuming = d.resumed && !d.ranges_confirmed && status == 200;
                let decision = match &check {
                    Err(_) if resuming => self.cannot_resume(slot),
                    _ => CannotResume::Fail,
                };
                if let (Err(f), CannotResume::NextMirror | CannotResume::ScratchElsewhere) =
                    (&check, decision)
                {
                    // This mirror cannot resume; another one goes on (or starts over).
                    let mut f = Failure::retry(f.code, f.message.clone());
                    f.from_scratch = decision == CannotResume::ScratchElsewhere;
                    self.fail_conn(slot, f);
                    return;
                }
                if let (Err(f), CannotResume::ScratchHere) = (&check, decision) {
                    // Resuming is impossible here and --always-resume=false: start over.
                    let why = f.message.clone();
                    self.say_cannot_resume(slot, &why);
                    if let Err(f) = self.restart_from_scratch(slot, &resp, framing) {
                        self.fail_conn(slot, f);
                        return;
                    }
                } else if let Err(f) = check {
                    let d = &self.dls[dl];
                    let others = d.other_mirrors(mirror);
                    if others {
                        // This mirror cannot serve ranges: drop it (aria2c does) and let the
                        // others go on splitting. A resumed download has no whole-body stream to
                        // fall back on, so turning ranges off would end it with exit 8.
                        self.fail_conn(slot, Failure::retry(f.code, f.message));
                        return;
                    }
                    // The server cannot serve this range: stop splitting, let the sequential
                    // connection finish the file, as aria2 does.
                    self.dls[dl].ranges_ok = false;
                    let uri = self.conns[slot]
                        .as_ref()
                        .and_then(|c| c.ex.as_ref())
                        .map(|e| e.url.to_string())
                        .unwrap_or_default();
                    self.say_aborted(dl, conn_id, &uri, f.code, &f.message);
                    self.dls[dl].soft_error = Some(f);
                    self.abandon_exchange(slot);
                    return;
                }
                if status == 206 {
                    self.confirm_ranges(dl);
                }
            }
        }
        self.begin_body(slot, framing, resp.keep_alive, coding);
    }

    /// The mirror of connection `slot` says it has no such file (HTTP's 404, any protocol's "not
    /// found"; aria2's exit 3): it is given up on unless `--max-file-not-found` counts these
    /// answers (then it is asked again, until the count is reached: exit 4), and the download
    /// fails once no mirror is left.
    pub(super) fn not_found(&mut self, slot: usize, msg: String) {
        let Some((_, ex)) = self.exchange_at(slot) else {
            return;
        };
        let (dl, mirror) = (ex.dl, ex.mirror);
        let code = ExitCode::NOT_FOUND;
        let d = &mut self.dls[dl];
        if d.opts.max_file_not_found > 0 {
            d.not_found += 1;
            let limit = d.opts.max_file_not_found;
            let f = if d.not_found >= limit {
                Failure::fatal(
                    ExitCode(4),
                    format!("{msg}; {limit} 'not found' answers (--max-file-not-found)"),
                )
            } else {
                Failure::retry(code, msg)
            };
            self.fail_conn(slot, f);
            return;
        }
        if let Some(b) = d.bad_uris.get_mut(mirror) {
            *b = true;
        }
        if d.bad_uris.iter().all(|b| *b) {
            self.fail_conn(slot, Failure::fatal(code, msg));
        } else {
            // Another mirror may have it.
            self.fail_conn(slot, Failure::retry(code, msg));
        }
    }

    /// The answer is taken: the body begins on the connection, with what came after the head.
    pub(super) fn begin_body(
        &mut self,
        slot: usize,
        framing: Framing,
        keep_alive: bool,
        coding: Option<http::decode::Coding>,
    ) {
        let Some(dl) = self.exchange_at(slot).map(|(_, ex)| ex.dl) else {
            return;
        };
        if self.dls[dl].opts.hash_check_only && !self.dls[dl].checking_existing {
            // --hash-check-only: the file is found (or made) as for the download, and nothing
            // is fetched (aria2c's rule for a download no digest checks): not complete, exit 1.
            self.fail_conn(slot, hash_check_only_stop());
            return;
        }
        let Some(c) = self.conns[slot].as_mut() else {
            return;
        };
        let Some(ex) = c.ex.as_mut() else { return };
        ex.start_body(framing);
        ex.decoder = coding.map(http::decode::Decoder::new);
        if !keep_alive || framing == Framing::UntilClose {
            ex.unusable = true;
        }
        let mut rest = std::mem::take(&mut ex.head_rest);
        if !rest.is_empty() {
            let ranges_unconfirmed = !self.dls[dl].ranges_confirmed;
            let plan = self.dls[dl].plan.as_mut();
            let mut sink = BodySink {
                owner: c.id,
                ex,
                fill: &mut c.fill,
                blocks: self.reactor.pool(),
                plan,
                ranges_unconfirmed,
                flushes: &mut self.flushes,
            };
            match sink.ex.wrapped {
                true => {
                    // (A wrapping conversation keeps what came after its answer itself.)
                    let (used, _) = sink.unwrap_body(&mut rest);
                    if used < rest.len() {
                        sink.ex.error = Some(Failure::retry(
                            ExitCode::UNKNOWN,
                            "bytes after the answer could not be taken",
                        ));
                    }
                }
                false => sink.unframe(&rest),
            }
        }
    }

    /// The first response of a download: name and open the file, make the plan, ask for helpers.
    /// `inflating`: the body is encoded and will be inflated (`--http-accept-gzip`).
    pub(super) fn accept_first_response(
        &mut self,
        slot: usize,
        resp: &http::ResponseHead,
        framing: Framing,
        inflating: bool,
    ) -> Result<(), Failure> {
        let Some((_, ex)) = self.exchange_at(slot) else {
            return Ok(());
        };
        let dl = ex.dl;
        let url = ex.url.clone();
        let total = match (framing, resp.status, resp.content_range) {
            // Inflated, the file's length is known only at its end, and it cannot be split.
            _ if inflating && framing != Framing::Empty => None,
            (Framing::Length(n), 200, _) => Some(n),
            (Framing::Length(n), 206, Some(cr))
                if cr.first == 0 && cr.complete_length == Some(n) =>
            {
                Some(n)
            }
            (Framing::Empty, _, _) => Some(0),
            (Framing::Length(_), 206, _) => {
                return Err(Failure::fatal(
                    ExitCode::HTTP_PROTOCOL,
                    "unexpected partial content",
                ));
            }
            _ => None,
        };
        let d = &self.dls[dl];
        let name = resp.content_disposition.as_deref().and_then(|v| {
            http::filename_from_content_disposition_with(v, d.opts.content_disposition_default_utf8)
        });
        let first = FirstAnswer {
            total,
            ranges: !resp.accept_ranges_none,
            name,
            validator: Validator::of(resp, &url),
            last_modified: resp.last_modified.clone(),
            content_type: resp.content_type.clone(),
        };
        self.take_first_answer(slot, first)
    }

    /// The first answer to a download that took up what it found on disk (a control file and
    /// its file, or a file under `-c` or `-V`) is a whole body that does not say the file's
    /// length: what is on disk cannot be measured against the server's file, so none of it is
    /// taken, and the download starts as if nothing had been found, with this answer as its
    /// first response (aria2c's rule): named as a new download would be (`name.1.ext`,
    /// overwritten with `--allow-overwrite`, exit 13 with `--auto-file-renaming=false`). Two
    /// files are written over in place: an empty one under `-c` (nothing to keep, as aria2c
    /// does), and a daemon's own partial file of a download it restarted. Whether it did so.
    fn leave_found_alone(&mut self, slot: usize) -> bool {
        let Some((_, ex)) = self.exchange_at(slot) else {
            return false;
        };
        let dl = ex.dl;
        let d = &self.dls[dl];
        let adopted =
            d.resumed && !d.ranges_confirmed || d.plan.is_none() && d.continue_from.is_some();
        if !adopted {
            return false;
        }
        let empty = d
            .path
            .as_deref()
            .and_then(|p| std::fs::metadata(p).ok())
            .is_some_and(|m| m.is_file() && m.len() == 0);
        let in_place = d.restarted || d.opts.continue_partial && empty;
        self.reset_to_scratch(slot);
        let d = &mut self.dls[dl];
        d.validator = None;
        d.own_path = match in_place {
            true => d.path.clone(),
            // Named afresh by this answer.
            false => None,
        };
        true
    }

    /// A range request that failed (refused, or answered with a head that cannot be read) while
    /// other connections carry the download's body: this connection gives up, as aria2's do, its
    /// range goes back to them and no more ranges are asked for; the download goes on. `false`
    /// (nothing done): not a range request, or no other connection is receiving.
    pub(super) fn give_up_range(&mut self, slot: usize, f: &Failure) -> bool {
        let Some((c, ex)) = self.exchange_at(slot) else {
            return false;
        };
        let (conn_id, dl, mirror) = (c.id, ex.dl, ex.mirror);
        let others_working = ex.range.is_some()
            && self.conns.iter().flatten().any(|o| {
                o.id != conn_id
                    && o.ex
                        .as_ref()
                        .is_some_and(|e| e.dl == dl && e.phase == Phase::Body)
            });
        if !others_working {
            return false;
        }
        let uri = self.dls[dl]
            .uris
            .get(mirror)
            .map(Url::to_string)
            .unwrap_or_default();
        self.say_aborted(dl, conn_id, &uri, f.code, &f.message);
        self.dls[dl].ranges_ok = false;
        self.dls[dl].soft_error = Some(f.clone());
        self.abandon_exchange(slot);
        true
    }

    /// What `-c`'s first answer says of the file found, acted on (`found`: by the server's length,
    /// see [`continued_over`](Self::continued_over)): whole, it is checked by its digest or is
    /// already complete; longer (or, for `-V`, of another length), it is left alone and the file
    /// asked for again, whole. True when that ended this answer's handling.
    pub(super) fn on_found(&mut self, slot: usize, dl: usize, found: Option<Existing>) -> bool {
        match found {
            None => {}
            Some(Existing::Whole(total)) if self.dls[dl].expected.is_some() => {
                // The file is as long as the server's, and a digest can tell whether it is the
                // server's: it is read back and checked; if it is not, it is fetched again
                // (aria2c's rule for `-c` and for `-V`).
                self.close_conn(slot);
                self.check_found(dl, total);
                return true;
            }
            Some(Existing::Whole(total)) => {
                // -c over a file that is already whole: aria2c learns the same from the length
                // of its first answer, whatever the server does with ranges.
                let d = &self.dls[dl];
                let path = d.path.clone().unwrap_or_default();
                self.console.notice(&format!(
                    "GID#{:016x} - Download has already completed: {}",
                    d.gid,
                    path.display()
                ));
                self.finish_without_body(dl, Some((path, total)));
                self.close_conn(slot);
                self.maybe_finish(dl);
                return true;
            }
            Some(Existing::Shorter) if !self.dls[dl].verify_found => {
                // -c: a part of the server's file, resumed (`accept_continued`, below).
            }
            Some(Existing::Longer | Existing::Shorter) => {
                // Not the server's file by its length (longer than it; or, for `-V`, of another
                // length): it is left alone and the download starts as if the file were not
                // looked at (renamed, overwritten with --allow-overwrite, or refused), as aria2c
                // does. The answer to the range asked for is of no use: the file is asked for
                // again, whole.
                let w = self.conns[slot]
                    .as_ref()
                    .and_then(|c| c.ex.as_ref())
                    .map(|ex| Want {
                        dl,
                        url: ex.url.clone(),
                        mirror: ex.mirror,
                        redirects: ex.redirects,
                    });
                let d = &mut self.dls[dl];
                d.continue_from = None;
                d.verify_found = false;
                d.path = None;
                d.own_path = None;
                d.validator = None;
                self.close_conn(slot);
                if let Some(w) = w {
                    self.open_or_defer(w);
                }
                return true;
            }
        }
        false
    }

    /// What the first answer to `-c`'s `Range: bytes=L-` (L: the existing file's length, down to
    /// a block) says of the existing file, by the server's length: a 416 naming it, or the
    /// complete length of a 206 or the length of a 200. `None`: shorter, so it is resumed (or
    /// the answer says nothing of the length, or this is not that answer).
    fn continued_over(
        &self,
        dl: usize,
        range: Option<(u64, Option<u64>)>,
        resp: &http::ResponseHead,
    ) -> Option<Existing> {
        let d = &self.dls[dl];
        let total = resp.file_length()?;
        // A file whose recorded version the server no longer has is not this file, whatever
        // its length: the usual answer (`accept_continued`) says so. (`-V`'s digest decides for
        // itself.)
        let asked = self.conns.iter().flatten().find_map(|c| {
            c.ex.as_ref()
                .filter(|ex| ex.dl == dl && ex.range == range)
                .and_then(|ex| d.validator.as_ref().and_then(|v| v.for_url(&ex.url)))
        });
        if !d.verify_found && asked.is_some_and(|a| changed_since(resp, a)) {
            return None;
        }
        self.found_against(dl, range, total)
    }

    /// The file found for `-c` (or `-V`) against a server's `total`, when `range` is the request
    /// for its rest: whole, longer or shorter. `None` when this is not that request.
    pub(super) fn found_against(
        &self,
        dl: usize,
        range: Option<(u64, Option<u64>)>,
        total: u64,
    ) -> Option<Existing> {
        let d = &self.dls[dl];
        let (Some(from), Some(path)) = (d.continue_from, &d.path) else {
            return None;
        };
        if d.plan.is_some() || range != Some((from, None)) {
            return None;
        }
        // (A directory in the way has no length to compare: opening it fails, as aria2c's does.)
        let len = std::fs::metadata(path)
            .ok()
            .filter(|m| m.is_file())
            .map(|m| m.len())?;
        Some(match len.cmp(&total) {
            std::cmp::Ordering::Equal => Existing::Whole(total),
            std::cmp::Ordering::Greater => Existing::Longer,
            std::cmp::Ordering::Less => Existing::Shorter,
        })
    }

    /// A resumed download whose control file claims every byte, and `asked` the range its first
    /// request asked for: that request only asks the server whether the file is still there
    /// and of the same length (`Range: bytes=T-`), as aria2c asks before it trusts a control
    /// file. Whether this is that answer.
    pub(super) fn claimed_whole(&self, dl: usize, asked: Option<(u64, Option<u64>)>) -> bool {
        let d = &self.dls[dl];
        d.plan.as_ref().is_some_and(|plan| {
            d.resumed
                && !d.ranges_confirmed
                && plan.is_complete()
                && asked == Some((plan.total(), None))
        })
    }

    /// The answer to [`claimed_whole`](Self::claimed_whole)'s question: the same length (and
    /// version) lets the download end, through its digest when it has one; another length is
    /// aria2c's "total length mismatch" (exit 1, both files kept).
    fn on_claimed_whole(&mut self, slot: usize, resp: &http::ResponseHead) {
        let Some((_, ex)) = self.exchange_at(slot) else {
            return;
        };
        let dl = ex.dl;
        if let Some(f) = self.length_mismatch(dl, ex.range, resp) {
            self.fail_conn(slot, f);
            return;
        }
        let d = &self.dls[dl];
        let asked = d.validator.as_ref().and_then(|v| v.for_url(&ex.url));
        if resp.status != 416 && asked.is_some_and(|a| changed_since(resp, a)) {
            let (code, msg) = file_changed();
            let f = match self.cannot_resume(slot) {
                CannotResume::NextMirror => Failure::retry(code, msg),
                _ => Failure::fatal(code, msg),
            };
            self.fail_conn(slot, f);
            return;
        }
        let d = &mut self.dls[dl];
        d.ranges_confirmed = true;
        // Bytes only found on disk: a digest that fails has them fetched again.
        d.checking_existing = d.expected.is_some();
        self.close_conn(slot);
        self.maybe_finish(dl);
    }

    /// A resumed download's first answer stating a length other than its control file's: the
    /// file on the server is not the one the partial file is part of (aria2c's exit 1).
    fn length_mismatch(
        &self,
        dl: usize,
        asked: Option<(u64, Option<u64>)>,
        resp: &http::ResponseHead,
    ) -> Option<Failure> {
        let d = &self.dls[dl];
        if !d.resumed || d.ranges_confirmed || asked.is_none() {
            return None;
        }
        let total = d.total()?;
        let remote = resp.file_length()?;
        (remote != total).then(|| total_mismatch(Some(remote), Some(total)))
    }

    /// Whether the range connection `slot` asked for (segment `seg_i` of download `dl`) was
    /// taken over by the first answer while this one waited: the connection then closes.
    pub(super) fn taken_over(&mut self, slot: usize, dl: usize, seg_i: usize, conn: u64) -> bool {
        let owner = self.dls[dl]
            .plan
            .as_ref()
            .and_then(|p| p.segment(seg_i).owner);
        if owner == Some(conn) {
            return false;
        }
        self.close_conn(slot);
        self.maybe_finish(dl);
        true
    }

    /// A range was answered as asked: download `dl` serves ranges, streams parked on the first
    /// answer go on, and a resumed download (begun on one connection) gets its others.
    pub(super) fn confirm_ranges(&mut self, dl: usize) {
        if self.dls[dl].ranges_confirmed {
            return;
        }
        self.dls[dl].ranges_confirmed = true;
        self.end_parked(dl);
        if self.dls[dl].resumed {
            let working = self.conn_count(dl);
            let d = &self.dls[dl];
            let more = d.connections_wanted().saturating_sub(working);
            self.dls[dl].wanted += more;
        }
    }
}

/// A resumed download's answer states another length than its control file's (aria2c's words,
/// its exit 1: the server's file is not the one the partial file is part of).
pub(super) fn total_mismatch(theirs: Option<u64>, ours: Option<u64>) -> Failure {
    Failure::fatal(
        ExitCode::UNKNOWN,
        format!(
            "total length mismatch. expected: {}, actual: {}",
            theirs.unwrap_or(0),
            ours.unwrap_or(0)
        ),
    )
}

impl<R: Reactor<Tag>> Engine<'_, R> {
    /// A response's `Digest` header (RFC 3230), for download `dl`: a digest of the kind the
    /// download already expects must be that one (aria2c's words and exit code when not: the
    /// mirror is not serving this file); the first answer of a download that expects none gives
    /// it the strongest said, checked once the file is whole.
    /// Metalink/HTTP (RFC 6249): the first answer of a download made from a URI names mirrors of
    /// the file in `Link: <...>; rel=duplicate` headers; they join its mirrors, after those it
    /// has, the server's preferred ones first, then by `pri` (raised for a `geo` in
    /// `--metalink-location`), each once.
    fn take_duplicates(&mut self, slot: usize, dl: usize, resp: &http::ResponseHead) {
        if resp.links.is_empty() || !(200..300).contains(&resp.status) {
            return;
        }
        let d = &self.dls[dl];
        if d.opts.from_metalink || d.plan.is_some() {
            return;
        }
        let Some(base) = self.exchange_at(slot).map(|(_, ex)| ex.url.clone()) else {
            return;
        };
        let mut dups: Vec<(i64, Url)> = http::duplicates(&resp.links)
            .into_iter()
            .filter_map(|l| {
                let url = base.join(&l.target).ok()?;
                let fetchable = matches!(url.scheme(), "http" | "https" | "ftp" | "sftp");
                let home = l
                    .geo
                    .as_ref()
                    .is_some_and(|g| d.opts.metalink.locations.contains(g));
                let mut rank = i64::from(l.priority);
                if home {
                    rank -= 999_999;
                }
                if l.preferred {
                    rank -= 2 * 999_999;
                }
                (fetchable && !d.uris.contains(&url)).then_some((rank, url))
            })
            .collect();
        dups.sort_by_key(|(r, _)| *r);
        dups.dedup_by(|a, b| a.1 == b.1);
        let add: Vec<Url> = dups.into_iter().map(|(_, u)| u).collect();
        if !add.is_empty() {
            let n = add.len();
            self.dls[dl].change_mirrors(&[], &add);
            self.console.log(
                LogLevel::Info,
                &format!("{n} mirror(s) added from the server's Link headers"),
            );
        }
    }

    fn take_digest(&mut self, dl: usize, resp: &http::ResponseHead) -> Result<(), Failure> {
        if resp.digests.is_empty() || !(200..300).contains(&resp.status) {
            return Ok(());
        }
        let said = crate::store::checksum::from_digest_header(&resp.digests);
        let d = &mut self.dls[dl];
        if d.opts.layout.is_some() {
            return Ok(());
        }
        match &d.expected {
            Some(e) => match said.iter().find(|s| s.kind == e.kind) {
                Some(s) if s.digest != e.digest => Err(Failure::retry(
                    ExitCode::UNKNOWN,
                    "Invalid hash found in Digest header field.",
                )),
                _ => Ok(()),
            },
            None if d.plan.is_none() && d.hash_pos == 0 => {
                if let Some(s) = said.into_iter().next() {
                    d.hasher = Some(crate::store::checksum::Hasher::new(s.kind));
                    d.expected = Some(s);
                }
                Ok(())
            }
            None => Ok(()),
        }
    }
}

/// How `--hash-check-only` ends a download it does not let fetch.
fn hash_check_only_stop() -> Failure {
    Failure::fatal(
        ExitCode::UNKNOWN,
        "Stopped after the check (--hash-check-only): nothing was fetched",
    )
}

/// What `-c`'s first answer says of the file already there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Existing {
    /// It is the whole file (of this length): nothing to fetch.
    Whole(u64),
    /// It is longer than the server's file, so not a part of it.
    Longer,
    /// It is shorter: a part of it for `-c`; another file for `-V`.
    Shorter,
}
