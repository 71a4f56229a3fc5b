//! Resuming and saving progress in aria2's `.aria2` control files: a control file beside the file
//! means go on from what it records; `-c` without one means go on from the file's length; progress is
//! saved every `--auto-save-interval` seconds and whenever a download stops, and only bytes whose
//! writes have completed are ever recorded.
//!
//! # What a run does with what it finds on disk
//!
//! The one place this is decided (`prepare_resume` before the first request, the first response in
//! response.rs after it). T is the server's length, learnt from the first answer; F the file's.
//! The rule above all: no byte the user or an earlier run left is cut, emptied or overwritten
//! unless an option says so (`--allow-overwrite`, or a digest that proved the file is not the
//! server's); a run that fails leaves the file at least as long as it found it (`found_len`).
//!
//! * **Nothing there**: the file is created.
//! * **A control file and its file** (aria2c's or ringdl's; `--remove-control-file` deletes it
//!   first, and the file is then one found without a control file): its claims are resumed, with
//!   `If-Range` carrying the version recorded in the file. A first answer of another length than
//!   the control file's is exit 1 ("total length mismatch"), files kept; a refusal (404...) is the
//!   status's exit code, files kept. A control file claiming every byte still asks the server
//!   (`Range: bytes=T-`): same length, the download ends (checked by its digest if it has one).
//!   A control file of another piece length: exit 10 unless `--allow-piece-length-change`.
//! * **A control file alone**: removed (with aria2c's notice) once the server answers with a file;
//!   kept when it does not.
//! * **A file without a control file**, with `-c`: F down to a whole 16 KiB block is asked for
//!   (`bytes=L-`, no Range at all from 0). F = T: already complete (read back and checked when a
//!   digest is given; fetched again if wrong). F < T: resumed from L (or rewritten from 0 in place,
//!   never emptied). F > T: not this file: renamed as below. A directory in the way: exit 15.
//! * **A file without a control file**, with `-V` and a digest, without `-c`: `bytes=F-` is asked;
//!   F = T: read back and checked, fetched again only if wrong; any other length: not this file,
//!   renamed as below.
//! * **A file without a control file**, otherwise (and every "not this file" above): renamed to
//!   `name.1.ext` and so on (aria2c's `--auto-file-renaming`), or overwritten with
//!   `--allow-overwrite=true`, or refused with exit 13 with `--auto-file-renaming=false`.
//!   `--conditional-get` first asks `If-Modified-Since` the file's time: 304 keeps it.
//! * **Anything found, and a first answer that says no length** (a 200 chunked, delimited by the
//!   close, or encoded): nothing on disk can be measured against it, so nothing is taken; the
//!   download is named as if nothing had been found (renamed, overwritten, or refused as above;
//!   aria2c's rule). In place only over an empty file under `-c`, and over a daemon's own
//!   partial file of a download it restarted. The control file of a file written over goes, and
//!   so does one found alone (aria2c keeps both, claiming bytes the new body replaces); no
//!   control file describes the new download (`length_at_end`), and a wrong digest is exit 32
//!   with the server's bytes kept (aria2c: exit 1).
//! * **A download that cannot resume** (a 200 to a range): `--always-resume=true` tries the next
//!   mirror, then exit 8, file kept; `=false` starts over after `--max-resume-failure-tries`
//!   mirrors. A range from another version than the one recorded is never spliced in (see
//!   `ignored_if_range`).
//! * **Starting over**, for any reason: in the file the download made or took up (`own_path`:
//!   resumed, continued with `-c`, checked and found wrong), under its name; never renamed
//!   again, and never onto a file it left alone.
use super::*;
use crate::plan::RangeSet;
use crate::store::control::{self, ControlFile, BLOCK};
use std::path::PathBuf;

/// Opens a file that is already (partly) there, without emptying it; its length is the download's
/// `found_len`.
fn open_existing(path: &std::path::Path) -> Result<(store::OutFile, u64), Failure> {
    let out = store::open_output(path, false, false).map_err(|e| {
        Failure::fatal(
            ExitCode::FILE_OPEN,
            format!(
                "Failed to open the file {}, cause: {}",
                path.display(),
                sys::cause(&e)
            ),
        )
    })?;
    let len = out.file.metadata().map(|m| m.len()).unwrap_or(0);
    Ok((out, len))
}

/// The control file at `ctl`, if there is one. Unreadable (e.g. the directory is not one) is
/// taken for none: opening the file will say why. One that cannot be read as a control file is an
/// error (exit 1).
pub(super) fn load_control(ctl: &std::path::Path) -> Result<Option<ControlFile>, Failure> {
    match control::load(ctl) {
        Ok(l) => Ok(l),
        Err(control::LoadError::Io(_)) => Ok(None),
        Err(e) => Err(Failure::fatal(
            ExitCode::UNKNOWN,
            format!("Failed to load the control file {}: {e}", ctl.display()),
        )),
    }
}

/// What [`Engine::cannot_resume`] decided for a mirror that cannot resume.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum CannotResume {
    /// Drop this mirror and go on resuming with another.
    NextMirror,
    /// Drop this mirror and start over on another (the download is already reset).
    ScratchElsewhere,
    /// Start over with this mirror's response.
    ScratchHere,
    /// The download fails with exit 8.
    Fail,
}

impl<R: Reactor<Tag>> Engine<'_, R> {
    /// Before the first request of download `dl`: finds its control file (or, with `-c`, its
    /// partial file) under the name the URL or `-o` gives.
    /// The first mirror download `dl` may use, and its place.
    pub(super) fn first_mirror(&self, dl: usize) -> Option<(usize, Url)> {
        let d = &self.dls[dl];
        d.uris
            .iter()
            .zip(&d.bad_uris)
            .enumerate()
            .find(|(_, (_, bad))| !**bad)
            .map(|(m, (u, _))| (m, u.clone()))
    }

    pub(super) fn prepare_resume(&mut self, dl: usize) -> Result<(), Failure> {
        let d = &mut self.dls[dl];
        if d.opts.dry_run {
            // --dry-run only asks whether the file is there: nothing on disk is read for
            // resuming, and so nothing on disk is written, cut or claimed (aria2c's rule).
            return Ok(());
        }
        if let Some(layout) = d.opts.layout.clone() {
            return self.prepare_layout(dl, &layout);
        }
        let first = self.first_mirror(dl);
        let d = &mut self.dls[dl];
        let name = match (&d.opts.out, &first) {
            (Some(o), _) => o.clone(),
            (None, Some((_, u))) => http::filename_from_url(u),
            (None, None) => return Ok(()),
        };
        // Held in memory (a Metalink to follow with `mem`, known by its name; one describing
        // another download): nothing on disk is looked at, taken up or removed (aria2c's
        // in-memory downloads skip the local file checks too).
        let memory = d.opts.describes.is_some()
            || (d.opts.follow_metalink == crate::engine::Follow::Memory
                && super::first::is_metalink(&name, None));
        if memory {
            return Ok(());
        }
        let path = d.opts.dir.join(&name);
        let ctl = control::control_path(&path);
        if d.opts.remove_control_file {
            let _ = std::fs::remove_file(&ctl);
        }
        let loaded = load_control(&ctl)?;
        match loaded {
            Some(cf) if path.is_file() => self.resume_from_control(dl, path, ctl, cf, first),
            Some(_) => {
                // Removed once the server has answered with a file (`accept_first_response`), as
                // aria2c does: a download that fails before leaves it as it was.
                d.defunct_control = Some(ctl);
                Ok(())
            }
            None => {
                if d.opts.conditional_get {
                    if let Ok(m) = std::fs::metadata(&path).and_then(|m| m.modified()) {
                        d.if_modified_since = Some(httpdate::fmt_http_date(m));
                        d.path = Some(path.clone());
                    }
                }
                // A file already there under `-c`, or under `-V` with a digest to check it by, is
                // judged by the server's length (see `found_file` in response.rs): the first
                // request asks for what follows it (`-c`: from its last whole 16 KiB block, which
                // is 0 for a shorter one; `-V`: from its end), and the answer says whether it is
                // the whole file, a part of it, or something else.
                let verify = d.opts.check_integrity && d.expected.is_some();
                if d.opts.continue_partial || verify {
                    if let Ok(m) = std::fs::metadata(&path) {
                        // (A directory in the way is opened as `-c`'s file, and fails as aria2c's
                        // does; `-V` alone leaves it to the renaming.)
                        let from = match d.opts.continue_partial {
                            true => m.len() / BLOCK * BLOCK,
                            false => m.len(),
                        };
                        if m.is_file() || d.opts.continue_partial {
                            d.continue_from = Some(from);
                            d.verify_found = !d.opts.continue_partial;
                            // `-c` takes the file as the download's own: one that cannot be
                            // resumed is started over in it (`-V` alone only checks it).
                            if d.opts.continue_partial {
                                d.own_path = Some(path.clone());
                            }
                            d.validator = std::fs::File::open(&path)
                                .ok()
                                .and_then(|f| sys::validator(f.as_raw_fd()))
                                .and_then(|kept| Validator::decode(&kept));
                            d.path = Some(path);
                        }
                    }
                }
                Ok(())
            }
        }
    }

    /// The file found for `-c` or `-V` is as long as the server's (`total`) and the download has
    /// a digest: the file is opened as it is, and read back and checked; a mismatch fetches it
    /// again (`verify_done`).
    pub(super) fn check_found(&mut self, dl: usize, total: u64) {
        let d = &mut self.dls[dl];
        let Some(path) = d.path.clone() else { return };
        let out = match open_existing(&path) {
            Ok((out, found)) => {
                d.found_len = found;
                d.untouched = found;
                out
            }
            Err(f) => {
                self.fail_download(dl, f, None);
                return;
            }
        };
        d.install_plan(Plan::from_done(
            total,
            d.opts.min_split_size,
            &RangeSet::single(0..total),
        ));
        d.written = RangeSet::single(0..total);
        d.length_known = true;
        d.continue_from = None;
        d.verify_found = false;
        d.mode = out.mode;
        d.open_file(out.file);
        // Fetched again over itself if its digest fails.
        d.own_path = Some(path);
        d.checking_existing = true;
        d.no_data = true;
        self.maybe_finish(dl);
    }

    fn resume_from_control(
        &mut self,
        dl: usize,
        path: PathBuf,
        ctl: PathBuf,
        cf: ControlFile,
        first: Option<(usize, Url)>,
    ) -> Result<(), Failure> {
        let d = &mut self.dls[dl];
        if cf.piece_length != d.opts.piece_length
            && !d.opts.allow_piece_length_change
            && cf.done_bytes() > 0
        {
            return Err(Failure::fatal(
                ExitCode(10),
                format!(
                    "The piece length in {} ({}) differs from --piece-length ({}); use --allow-piece-length-change=true to go on",
                    ctl.display(),
                    cf.piece_length,
                    d.opts.piece_length
                ),
            ));
        }
        let (out, found) = open_existing(&path)?;
        d.found_len = found;
        let done = RangeSet::from_ranges(&cf.done_ranges());
        d.validator =
            sys::validator(out.file.as_raw_fd()).and_then(|kept| Validator::decode(&kept));
        d.install_plan(Plan::from_done(
            cf.total_length,
            d.opts.min_split_size,
            &done,
        ));
        d.done_at_start = done.len();
        d.untouched = done.prefix_end();
        d.written = done;
        d.length_known = true;
        d.ranges_ok = true;
        d.resumed = true;
        d.mode = out.mode;
        d.open_file(out.file);
        // The control file on disk describes this file as it is.
        d.saved_generation = d.generation;
        d.own_path = Some(path.clone());
        d.path = Some(path);
        d.control = Some(ctl);
        d.piece_length = cf.piece_length;
        d.split_url = first;
        Ok(())
    }

    /// The first response to `-c`'s `Range: bytes=L-`: a 206 from L goes on from there; anything
    /// else means the server cannot resume (exit 8, or from scratch with `--always-resume=false`).
    pub(super) fn accept_continued(
        &mut self,
        slot: usize,
        resp: &http::ResponseHead,
        from: u64,
    ) -> Result<(), Failure> {
        let Some((_, ex)) = self.exchange_at(slot) else {
            return Ok(());
        };
        let (dl, url) = (ex.dl, ex.url.clone());
        let d = &self.dls[dl];
        let asked = d.validator.as_ref().and_then(|v| v.for_url(&url));
        if d.opts.always_resume && asked.is_some_and(|a| changed_since(resp, a)) {
            // The partial file is another version of the file: say so, and claim none of its
            // bytes for this one (a control file saying they are done would have a later run,
            // or aria2c, mix the two). Another mirror may still serve the old version.
            let (code, msg) = file_changed();
            return Err(match self.cannot_resume(slot) {
                CannotResume::NextMirror => Failure::retry(code, msg),
                _ => Failure::fatal(code, msg),
            });
        }
        let total = resp
            .content_range
            .and_then(|cr| cr.complete_length)
            .or(resp.content_length);
        // (From 0, the file found was shorter than one block: a whole answer is as good.)
        let resumable = (resp.status == 206
            && resp.content_range.is_some_and(|cr| cr.first == from)
            || resp.status == 200 && from == 0)
            && total.is_some_and(|t| t >= from);
        if !resumable {
            let t = total.unwrap_or(0);
            let why = invalid_range_header(from, t.saturating_sub(1), t);
            let decision = if resp.status == 200 {
                self.cannot_resume(slot)
            } else {
                CannotResume::Fail
            };
            match decision {
                CannotResume::NextMirror => {
                    return Err(Failure::retry(ExitCode::CANNOT_RESUME, why));
                }
                CannotResume::ScratchElsewhere => {
                    let mut f = Failure::retry(ExitCode::CANNOT_RESUME, why);
                    f.from_scratch = true;
                    return Err(f);
                }
                CannotResume::Fail => {
                    // What is on disk stays claimed, so a later run (or aria2c) can go on from it.
                    let d = &mut self.dls[dl];
                    if t >= from {
                        d.written = RangeSet::single(0..from);
                        d.install_plan(Plan::from_done(t, d.opts.min_split_size, &d.written));
                        d.length_known = true;
                    }
                    return Err(Failure::fatal(ExitCode::CANNOT_RESUME, why));
                }
                CannotResume::ScratchHere => {}
            }
            self.say_cannot_resume(slot, &why);
            return self.restart_from_scratch(slot, resp, resp.framing(false));
        }
        self.continue_found(slot, from, total.unwrap_or(from))
    }

    /// `-c`'s first answer, from any protocol, carries the file found's rest from `from` of a
    /// `total`-byte file: the file is opened as it is and the download goes on from there.
    pub(super) fn continue_found(
        &mut self,
        slot: usize,
        from: u64,
        total: u64,
    ) -> Result<(), Failure> {
        let Some((c, ex)) = self.exchange_at(slot) else {
            return Ok(());
        };
        let (dl, mirror, conn_id, url) = (ex.dl, ex.mirror, c.id, ex.url.clone());
        let d = &mut self.dls[dl];
        let path = d
            .path
            .clone()
            .unwrap_or_else(|| d.opts.dir.join(http::filename_from_url(&url)));
        let (out, found) = open_existing(&path)?;
        let done = RangeSet::single(0..from);
        let mut plan = Plan::from_done(total, d.opts.min_split_size, &done);
        let seg = plan
            .segments()
            .iter()
            .position(|s| s.start == from && s.pos < s.end);
        if let Some(seg) = seg {
            plan.assign(seg, conn_id);
            d.wanted += plan.presplit(d.connections_wanted()).saturating_sub(1);
        }
        d.done_at_start = from;
        d.found_len = found;
        d.untouched = from;
        d.written = done;
        d.install_plan(plan);
        d.length_known = true;
        d.ranges_ok = true;
        d.ranges_confirmed = true;
        d.continue_from = None;
        d.mode = out.mode;
        d.open_file(out.file);
        d.own_path = Some(path.clone());
        d.path = Some(path);
        d.split_url = Some((mirror, url));
        if let Some(ex) = self.conns[slot].as_mut().and_then(|c| c.ex.as_mut()) {
            ex.seg = seg.unwrap_or(0);
        }
        self.save_control(dl);
        Ok(())
    }

    /// A resumed download whose server cannot resume, with `--always-resume=false`: everything is
    /// fetched again through this connection's whole-file response.
    pub(super) fn restart_from_scratch(
        &mut self,
        slot: usize,
        resp: &http::ResponseHead,
        framing: Framing,
    ) -> Result<(), Failure> {
        let Some((c, _)) = self.exchange_at(slot) else {
            return Ok(());
        };
        let conn_id = c.id;
        self.say_from_scratch(conn_id);
        self.reset_to_scratch(slot);
        // The request asked for a range, so for no encoding: nothing is inflated.
        self.accept_first_response(slot, resp, framing, false)
    }

    /// Whether `resp`, a range answered on connection `slot`, carries another version of the
    /// file (its `ETag`, else its `Last-Modified`) than the one sent in `If-Range`: a server that
    /// ignored `If-Range` after its file changed.
    pub(super) fn ignored_if_range(&self, slot: usize, resp: &http::ResponseHead) -> bool {
        let Some((_, ex)) = self.exchange_at(slot) else {
            return false;
        };
        let d = &self.dls[ex.dl];
        ex.range.is_some()
            && d.validator
                .as_ref()
                .and_then(|v| v.for_url(&ex.url))
                .is_some_and(|asked| changed_since(resp, asked))
    }

    /// The range on connection `slot` came from another version of the file than the bytes the
    /// download holds (`ignored_if_range`): the two must never be spliced. The download starts
    /// over with a request for the whole file, whose version then holds; a file that changes
    /// under every restart fails it after [`MAX_VERSION_RESTARTS`], its partial file resumable
    /// (a later `-c` sends that version in `If-Range` again).
    pub(super) fn restart_for_new_version(&mut self, slot: usize) {
        let Some((c, ex)) = self.exchange_at(slot) else {
            return;
        };
        let conn_id = c.id;
        let w = Want {
            dl: ex.dl,
            url: ex.url.clone(),
            mirror: ex.mirror,
            redirects: ex.redirects,
        };
        let d = &mut self.dls[w.dl];
        d.version_restarts += 1;
        if d.version_restarts > MAX_VERSION_RESTARTS {
            let f = Failure::fatal(
                ExitCode::UNKNOWN,
                "The file on the server changed during the download, and again after each restart (a range came with another ETag or Last-Modified than the one sent in If-Range)",
            );
            self.fail_conn(slot, f);
            return;
        }
        self.console.notice(&format!(
            "CUID#{conn_id} - The file on the server changed during the download (a range came with another version than the one sent in If-Range). Download from scratch."
        ));
        self.reset_to_scratch(slot);
        // The new version is asked for whole, and nothing of it is known yet.
        let d = &mut self.dls[w.dl];
        d.ranges_confirmed = false;
        d.if_modified_since = None;
        self.close_conn(slot);
        self.open_or_defer(w);
    }

    /// Forgets what the partial file of the download `slot` works for holds, so that its next
    /// first response (on this connection or another) starts the file over; the download's other
    /// connections close. The control file stays until that response replaces it (see
    /// `accept_first_response`): if no mirror answers, the partial file is still resumable.
    pub(super) fn reset_to_scratch(&mut self, slot: usize) {
        let Some((_, ex)) = self.exchange_at(slot) else {
            return;
        };
        let dl = ex.dl;
        for other in 0..self.conns.len() {
            let theirs =
                other != slot && self.conns[other].as_ref().is_some_and(|c| c.works_for(dl));
            if theirs {
                self.close_conn(other);
            }
        }
        self.start_over(dl, Some(slot));
        let attempt = self.dls[dl].attempt;
        if let Some(ex) = self.conns[slot].as_mut().and_then(|c| c.ex.as_mut()) {
            // This exchange's answer is the new attempt's first response.
            ex.attempt = attempt;
            ex.range = None;
            ex.seg = 0;
        }
    }

    /// aria2's answer to a mirror that sent the whole file to a resuming request (the caller has
    /// `why`, the error text). `--always-resume=true` drops the mirror while others are left, then
    /// fails (exit 8). `--always-resume=false` drops mirrors until `--max-resume-failure-tries`
    /// of them could not resume (0: all of them), then starts over: on another mirror if one is
    /// left, else on this response.
    pub(super) fn cannot_resume(&mut self, slot: usize) -> CannotResume {
        let Some((_, ex)) = self.exchange_at(slot) else {
            return CannotResume::Fail;
        };
        let (dl, mirror) = (ex.dl, ex.mirror);
        let d = &mut self.dls[dl];
        d.resume_failures += 1;
        let others = d.other_mirrors(mirror);
        let limit = d.opts.max_resume_failure_tries;
        match (d.opts.always_resume, others) {
            (true, true) => CannotResume::NextMirror,
            (true, false) => CannotResume::Fail,
            (false, false) => CannotResume::ScratchHere,
            (false, true) if limit > 0 && d.resume_failures >= limit => {
                self.reset_to_scratch(slot);
                CannotResume::ScratchElsewhere
            }
            (false, true) => CannotResume::NextMirror,
        }
    }

    /// aria2's notice for a download that starts over after a mirror could not resume.
    pub(super) fn say_from_scratch(&mut self, conn_id: Owner) {
        self.console.notice(&format!(
            "CUID#{conn_id} - Failed to resume download. Download from scratch."
        ));
    }

    /// Says that this mirror cannot resume, as aria2 does before it starts over.
    pub(super) fn say_cannot_resume(&mut self, slot: usize, why: &str) {
        let Some((c, ex)) = self.exchange_at(slot) else {
            return;
        };
        let (conn_id, dl) = (c.id, ex.dl);
        let uri = self.dls[dl]
            .uris
            .get(ex.mirror)
            .map(Url::to_string)
            .unwrap_or_default();
        self.say_aborted(dl, conn_id, &uri, ExitCode::CANNOT_RESUME, why);
    }

    /// A download that ends without a body: `--dry-run` (the file that would be written, and its
    /// length) or a 304 to `--conditional-get` (the file already there).
    pub(super) fn finish_without_body(&mut self, dl: usize, would_be: Option<(PathBuf, u64)>) {
        let d = &mut self.dls[dl];
        if let Some((path, _)) = &would_be {
            d.path = Some(path.clone());
        }
        let total = would_be.map_or(0, |(_, t)| t);
        d.install_plan(Plan::from_done(
            total,
            d.opts.min_split_size,
            &RangeSet::single(0..total),
        ));
        d.length_known = true;
        d.no_data = true;
    }

    /// Saves download `dl`'s control file, off the loop (written, synced and renamed into place by
    /// the reactor's file-job thread, after every earlier save or removal); false when there is none
    /// to describe what is on disk (length unknown, or nothing to resume).
    pub(super) fn save_control(&mut self, dl: usize) -> bool {
        self.save_control_then(dl, None)
    }

    /// [`save_control`](Self::save_control); then, with `settle`, the file is cut on the same
    /// job, to a length that depends on whether the save happened (see [`Settle`]).
    pub(super) fn save_control_then(&mut self, dl: usize, settle: Option<Settle>) -> bool {
        let d = &mut self.dls[dl];
        if !d.length_known || d.length_at_end {
            return false;
        }
        if d.opening.is_some() {
            // The file is being created: the save waits for it (`on_opened`).
            d.save_when_open = true;
            return false;
        }
        if d.create_failed || d.in_memory {
            // Nothing for a control file to describe (or nothing on disk to resume).
            return false;
        }
        let (Some(path), Some(plan)) = (&d.path, &d.plan) else {
            return false;
        };
        if plan.total() == 0 {
            // Nothing to resume (aria2 writes no control file for an empty file either).
            return false;
        }
        let ctl = d
            .control
            .get_or_insert_with(|| control::control_path(path))
            .clone();
        let claims = d.claims();
        let cf = ControlFile::from_done(plan.total(), d.piece_length, claims.ranges());
        d.last_save = Some(self.reactor.now());
        if d.saved_generation != d.generation {
            d.first_save_pending = true;
        }
        d.saves += 1;
        let tag = Tag::ControlSaved { file: d.file_of() };
        // The data the control file claims reaches the disk before the control file does: a
        // power loss may drop writes not yet synced (the drive's cache, a buffered fallback),
        // and must not leave a control file claiming them. A control file that claims nothing
        // (the first, saved before any byte is written) needs no sync: blocks wait for it, and
        // syncing a file just created and allocated costs a journal commit.
        let data: Vec<std::fs::File> = match claims.is_empty() {
            true => Vec::new(),
            false if !d.files.is_empty() => d
                .files
                .iter()
                .filter_map(|(f, _)| f.try_clone().ok())
                .collect(),
            false => d.file.iter().filter_map(|f| f.try_clone().ok()).collect(),
        };
        let sync_error = d.sync_error.clone();
        let withdrawals = d.withdrawals.clone();
        let epoch = withdrawals.load(std::sync::atomic::Ordering::SeqCst);
        let job = move || {
            let synced = data.iter().try_for_each(store::sync_data);
            if let Err(e) = &synced {
                let errno = e.raw_os_error().unwrap_or(libc::EIO);
                sync_error.store(errno, std::sync::atomic::Ordering::SeqCst);
                // The writes may be lost: their claims are withdrawn from here, on this thread,
                // so that a save queued behind this one (before the loop hears of the failure)
                // skips as stale instead of claiming them.
                withdrawals.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            }
            // Claims withdrawn since this save was queued: it would claim them again (a later
            // save, queued with the withdrawal, says what is left).
            let stale = withdrawals.load(std::sync::atomic::Ordering::SeqCst) != epoch;
            // (Skipped as stale, it is not a save: ESTALE tells `on_control_saved` so, without
            // a message. Nothing on disk describes the file because of it.)
            let saved = synced.and_then(|()| match stale {
                true => Err(std::io::Error::from_raw_os_error(libc::ESTALE)),
                false => control::save(&ctl, &cf),
            });
            if let Some(s) = settle {
                let len = match (&saved, s.stale_lies) {
                    (Ok(()), _) => s.saved,
                    // The data may not be on disk: only an earlier control file's claims (synced
                    // before it was saved) stand.
                    _ if sync_error.load(std::sync::atomic::Ordering::SeqCst) != 0 => s.lost,
                    (Err(_), false) => s.unsaved,
                    (Err(_), true) => {
                        let _ = std::fs::remove_file(&ctl);
                        s.unsaved
                    }
                };
                if s.file.metadata()?.len() > len {
                    store::step()?;
                    s.file.set_len(len)?;
                }
            }
            saved
        };
        self.reactor.blocking(tag, Box::new(job));
        true
    }

    /// A control-file save of download `dl` ended with `res`.
    pub(super) fn on_control_saved(&mut self, file: FileOf, res: i32) {
        // A finished download's place waits for its saves (`next_download`).
        let Some(dl) = self.live(file.dl) else {
            debug_assert!(false, "a control-file save outlived its download: {file:?}");
            return;
        };
        let generation = file.generation;
        let d = &mut self.dls[dl];
        d.saves -= 1;
        let lost = d.sync_error.swap(0, std::sync::atomic::Ordering::SeqCst);
        if lost != 0 && d.generation == generation && d.state != DlState::Finished {
            // The sync before the save found a writeback error (the file's, reported to it and to
            // nobody else): as a failed writeback, nothing written is claimed any more.
            d.withdraw_claims();
            d.claims_lost = true;
            self.write_failed(dl, lost);
        }
        let d = &mut self.dls[dl];
        if d.generation == generation && d.first_save_pending {
            // Written or not (the error is said below), the file may go on: held blocks go out
            // at the end of this step, the allocation now.
            d.first_save_pending = false;
            if res >= 0 {
                d.saved_generation = generation;
                // Not before: an allocated length no control file describes is one `-c` takes
                // for data. A save that failed leaves it to the next that succeeds.
                if let Some(n) = d.alloc_after_save.take() {
                    self.allocate(dl, n);
                }
            } else if (d.opts.pieces.is_some() || d.opts.layout.is_some())
                && d.error.is_none()
                && res != -libc::ESTALE
            {
                // Its bytes are verified only once written, and without a control file `-c`
                // would take the file's length for verified bytes; files of a download over
                // several are resumed only by their control file: nothing is written.
                let path = d.control.as_ref().map(|p| p.display().to_string());
                let what = match d.opts.pieces.is_some() {
                    true => "a download with piece digests",
                    false => "a download over several files",
                };
                let f = Failure::fatal(
                    ExitCode::FILE_IO,
                    format!(
                        "Failed to save the control file {}, cause: {}; {what} is not written without one",
                        path.unwrap_or_default(),
                        errno_text(res)
                    ),
                );
                self.fail_download(dl, f, None);
            }
        }
        if res < 0 && res != -libc::ESTALE {
            let path = self.dls[dl]
                .control
                .as_ref()
                .map(|p| p.display().to_string())
                .unwrap_or_default();
            self.console.error(&format!(
                "Failed to save the control file {path}, cause: {}",
                errno_text(res)
            ));
        }
        let d = &self.dls[dl];
        if d.state == DlState::Finished && d.saves == 0 {
            // Its last control file is on disk: a daemon may start it again.
            let gid = d.gid;
            if let Some(dm) = self.sup.as_deref_mut() {
                dm.settled(gid);
            }
        }
    }

    /// Saves the control files whose `--auto-save-interval` has passed, and the first one of a
    /// download that put it off at its first response (a body that fits one write block).
    pub(super) fn autosave(&mut self) {
        let every = self.s.auto_save_interval;
        let now = self.reactor.now();
        for dl in 0..self.dls.len() {
            let d = &self.dls[dl];
            let due = match d.last_save {
                None => true,
                Some(t) => every > 0 && now.saturating_duration_since(t).as_secs() >= every,
            };
            // (-V reading an existing file back claims it all only once it checks out.)
            let running = d.state == DlState::Active && d.error.is_none() && !d.checking_existing;
            if due && running && d.file.is_some() {
                self.save_control(dl);
            }
        }
    }

    /// The download is complete: its control file goes.
    pub(super) fn remove_control(&mut self, dl: usize) {
        if let Some(ctl) = self.dls[dl].control.take() {
            // After any save still queued, so nothing writes it back.
            let job = move || {
                let removed = store::step().and_then(|()| std::fs::remove_file(&ctl));
                match removed {
                    Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e),
                    _ => Ok(()),
                }
            };
            self.reactor.blocking(Tag::ControlRemoved, Box::new(job));
        }
    }
}

/// How a failed download's file is left once its last control-file save has run: it keeps its
/// length only once a control file describes it.
pub(super) struct Settle {
    /// The file (a descriptor of the job's own).
    pub file: std::fs::File,
    /// Its length once the save succeeded: what arrived (or its allocated length).
    pub saved: u64,
    /// Its length when the save failed: what the control file left from before describes (its
    /// claims never shrink unless withdrawn), or, with none, the gap-free prefix `-c` may take
    /// for done by length.
    pub unsaved: u64,
    /// Claims were withdrawn since the last save (a checksum that failed, a lost writeback): the
    /// control file left from before claims bytes this one no longer does, and goes if the save
    /// fails.
    pub stale_lies: bool,
    /// Its length when the sync of its data failed (bytes written since the last sync may be
    /// lost): what the control file left from before describes, or nothing.
    pub lost: u64,
}

impl<R: Reactor<Tag>> Engine<'_, R> {
    /// `--file-allocation` for a new file of `len` bytes: `prealloc` and `falloc` reserve the space
    /// through the ring (never by writing zeros through the page cache), `trunc` only sets the
    /// length, `none` does nothing. Reserving first keeps `O_DIRECT` writes from extending the file
    /// one by one, and finds a full disk before any byte is fetched.
    pub(super) fn allocate(&mut self, dl: usize, len: u64) {
        let d = &mut self.dls[dl];
        if d.first_save_pending || d.opening.is_some() || !d.described() {
            d.alloc_after_save = Some(len);
            return;
        }
        match d.opts.file_allocation.as_str() {
            "prealloc" | "falloc" => {
                let Some(file) = d.file.clone() else { return };
                d.writes += 1;
                let tag = Tag::Fallocate { file: d.file_of() };
                self.reactor.fallocate(tag, file, len);
            }
            "trunc" => {
                if let Some(f) = d.file.as_ref() {
                    let _ = f.set_len(len);
                }
            }
            _ => {}
        }
    }

    pub(super) fn on_fallocate(&mut self, dl: usize, res: i32) {
        let d = &mut self.dls[dl];
        if res >= 0 {
            d.preallocated = true;
        } else if res == -libc::ENOSPC || res == -libc::EDQUOT {
            let path = d.path_text();
            let f = Failure::fatal(
                ExitCode::NO_SPACE,
                format!(
                    "Failed to allocate the file {path}, cause: {}",
                    errno_text(res)
                ),
            );
            if d.error.is_none() {
                self.fail_download(dl, f, None);
                return;
            }
        }
        // Other refusals (a filesystem without fallocate) only cost speed.
        self.maybe_finish(dl);
    }
}
