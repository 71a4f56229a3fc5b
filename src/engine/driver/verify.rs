//! `--checksum`: a file's digest is taken from its blocks as they are written in file order; what
//! arrived out of order (or was on disk from an earlier run) is read back through the ring, with
//! `O_DIRECT` where the file is written so (a file written through the page cache is read through
//! it, and dropped from it when the download completes), and hashed before the download may
//! complete.
use super::*;

impl<R: Reactor<Tag>> Engine<'_, R> {
    /// Completes the digest of download `dl` (reading the rest of the file back) and then decides.
    pub(super) fn start_verify(&mut self, dl: usize) {
        self.dls[dl].verifying = true;
        self.verify_next(dl);
    }

    /// Issues the next read-back, or compares the digest once the whole file is hashed.
    fn verify_next(&mut self, dl: usize) {
        let d = &mut self.dls[dl];
        if d.error.is_some() {
            // The download failed while its file was being hashed (its last mirror, a stop): that
            // failure is its end, and a digest of bytes it keeps as they are decides nothing.
            d.verifying = false;
            self.maybe_finish(dl);
            return;
        }
        let total = d.plan.as_ref().map_or(0, Plan::total);
        if d.hash_pos >= total {
            self.verify_done(dl);
            return;
        }
        let Some(file) = d.file.clone() else {
            self.verify_done(dl);
            return;
        };
        let Some(block) = self.reactor.pool().alloc(Class::Write) else {
            // Every block is busy elsewhere: the next one freed comes here first (`wake_starved`),
            // or the tick tries again.
            d.verifying = false;
            d.verify_waits = true;
            return;
        };
        d.writes += 1;
        let off = d.hash_pos;
        let tag = Tag::VerifyRead {
            file: d.file_of(),
            off,
        };
        self.reactor.read_file(tag, file, block, off);
    }

    /// A read-back of download `dl`'s current file completed (`file_op_done` counted it).
    pub(super) fn on_verify_read(&mut self, dl: usize, block: Block, off: u64, res: i32) {
        let total = self.dls[dl].plan.as_ref().map_or(0, Plan::total);
        if self.dls[dl].error.is_some() {
            // Failed meanwhile: `verify_next` ends the check without another read.
            drop(block);
            self.verify_next(dl);
            return;
        }
        if res <= 0 {
            let path = self.dls[dl].path_text();
            let why = if res < 0 {
                errno_text(res)
            } else {
                "the file is shorter than expected".to_string()
            };
            self.dls[dl].verifying = false;
            self.fail_download(
                dl,
                Failure::fatal(
                    ExitCode::FILE_IO,
                    format!("Failed to read the file {path} back for its checksum, cause: {why}"),
                ),
                None,
            );
            return;
        }
        let n = (res as u64).min(total.saturating_sub(off)) as usize;
        let d = &mut self.dls[dl];
        if let Some(h) = d.hasher.as_mut() {
            h.update(&block.as_slice()[..n]);
        }
        d.hash_pos = off + n as u64;
        drop(block);
        self.verify_next(dl);
    }

    /// The whole file is hashed: a match lets the download complete, a mismatch is exit 32.
    fn verify_done(&mut self, dl: usize) {
        let d = &mut self.dls[dl];
        d.verifying = false;
        if d.error.is_some() {
            self.maybe_finish(dl);
            return;
        }
        let (Some(expected), Some(hasher)) = (d.expected.clone(), d.hasher.take()) else {
            return;
        };
        let path = d.path_text();
        if hasher.finish() == expected.digest {
            d.verified = true;
            self.console
                .notice(&format!("Verification finished successfully. file={path}"));
            self.maybe_finish(dl);
        } else if d.checking_existing && !d.halted && !self.stopping {
            // (Not once the run is stopping: a download told to stop starts nothing new.)
            // -V found a bad file: fetch it all again, over the network this time.
            self.console.notice(&format!(
                "Checksum error detected. file={path}; downloading it again"
            ));
            // No save still queued may claim the bad bytes again; the control file on disk is
            // made to claim nothing by the new attempt's file creation, on the file-job thread
            // after those saves and before the file is emptied (`accept_first_response`). An
            // attempt that never creates its file leaves both as they were.
            self.dls[dl].withdraw_claims();
            self.start_over(dl, None);
            let d = &mut self.dls[dl];
            d.checking_existing = false;
            d.no_data = false;
            d.length_known = false;
            d.opts.check_integrity = false;
            // The file found is not the server's: this attempt takes nothing of it, and fetches
            // it whole (`--hash-check-only` stops downloads no digest checks, not this one).
            d.opts.continue_partial = false;
            d.opts.hash_check_only = false;
            // The same download goes on (no second start, nor its hook): asked for again, and
            // nothing on disk is taken for it.
            self.first_request(dl);
        } else {
            // Nothing of this file can be trusted for a resume.
            d.withdraw_claims();
            self.console
                .error(&format!("Checksum error detected. file={path}"));
            self.dls[dl].error = Some(Failure::fatal(
                ExitCode::CHECKSUM,
                format!("Checksum error detected. file={path}"),
            ));
            self.maybe_finish(dl);
        }
    }
}
