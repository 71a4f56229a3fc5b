//! Metalink/HTTP's `rel=describedby` (RFC 6249), beyond aria2c: the first answer of a download
//! from a URI names the Metalink that describes its file. The download goes on at once; the
//! Metalink is fetched beside it, in memory (a download of the engine's own, in no result, no
//! hook, no RPC listing), and what it says joins the running download: its mirrors, and its
//! whole-file digest where the download has none (checked as it ends; the file is read back
//! for it if its first bytes were already past).
use super::*;

impl<R: Reactor<Tag>> Engine<'_, R> {
    /// Download `dl`'s first answer `resp` (over connection `slot`): with `--follow-metalink`
    /// not `false`, a `describedby` Metalink is fetched beside it.
    pub(super) fn take_description(&mut self, slot: usize, dl: usize, resp: &http::ResponseHead) {
        if resp.links.is_empty() || !(200..300).contains(&resp.status) {
            return;
        }
        let d = &self.dls[dl];
        let eligible = !d.opts.from_metalink
            && d.opts.describes.is_none()
            && d.opts.follow_metalink != crate::engine::Follow::No
            && d.opts.layout.is_none()
            && !d.opts.dry_run
            && d.plan.is_none()
            && !d.describing;
        if !eligible {
            return;
        }
        let Some(target) = http::described_by(&resp.links) else {
            return;
        };
        let Some(base) = self.exchange_at(slot).map(|(_, ex)| ex.url.clone()) else {
            return;
        };
        let Ok(url) = base.join(&target) else {
            return;
        };
        if !matches!(url.scheme(), "http" | "https") || d.uris.contains(&url) {
            return;
        }
        let mut opts = d.opts.clone();
        opts.describes = Some(d.gid);
        opts.follow_metalink = crate::engine::Follow::Memory;
        opts.out = None;
        opts.gid = None;
        opts.checksum = None;
        opts.pieces = None;
        opts.expected_total = None;
        opts.continue_partial = false;
        opts.check_integrity = false;
        opts.split = 1;
        let gid = d.gid;
        self.dls[dl].describing = true;
        self.console.log(
            LogLevel::Info,
            &format!("GID#{gid:016x} is described by the Metalink {url}: fetching it"),
        );
        self.described_jobs.push_back(Job {
            uris: vec![url.to_string()],
            opts,
            own: Vec::new(),
            restarted: false,
        });
    }

    /// Stops the fetches of Metalinks describing download `gid`, which ended: the run does not
    /// wait for them.
    pub(super) fn stop_describers(&mut self, gid: u64) {
        self.described_jobs
            .retain(|j| j.opts.describes != Some(gid));
        let fetching: Vec<usize> = (0..self.dls.len())
            .filter(|&i| {
                let d = &self.dls[i];
                d.opts.describes == Some(gid) && d.state != DlState::Finished
            })
            .collect();
        for i in fetching {
            self.stop_download(i, false);
        }
    }

    /// The Metalink fetched for the download `doc.opts.describes` names: the file of its name
    /// (or its only file) lends the download its mirrors and, when it has none, its digest. A
    /// Metalink that cannot be read, or that describes a file of another length, is said and
    /// changes nothing.
    pub(super) fn describe(&mut self, doc: crate::engine::Followed) {
        let Some(parent) = doc.opts.describes else {
            return;
        };
        let Some(dl) = self
            .dls
            .iter()
            .position(|d| d.gid == parent && d.state == DlState::Active && d.error.is_none())
        else {
            return;
        };
        let name = doc.path.display().to_string();
        let mut opts = self.dls[dl].opts.clone();
        opts.describes = None;
        let files = match crate::metalink::source::open(&doc.file, &name, &opts, Some(&doc.uri)) {
            Ok(f) => f,
            Err((msg, _)) => {
                self.console
                    .log(LogLevel::Info, &format!("Not used: {msg}"));
                return;
            }
        };
        let own_name = self.dls[dl]
            .path
            .as_ref()
            .and_then(|p| p.file_name())
            .map(|n| n.to_string_lossy().into_owned());
        let count = files.count;
        let Some(job) = files
            .into_iter()
            .find(|j| count == 1 || j.opts.out.is_some() && j.opts.out == own_name)
        else {
            let msg = format!("The Metalink {name} does not describe this file: not used");
            self.console.log(LogLevel::Info, &msg);
            return;
        };
        let d = &mut self.dls[dl];
        if let (Some(want), Some(has)) = (job.opts.expected_total, d.total()) {
            if want != has {
                let msg = format!(
                    "The Metalink {name} describes {want} bytes, the file has {has}: not used"
                );
                self.console.log(LogLevel::Info, &msg);
                return;
            }
        }
        let add: Vec<Url> = job
            .uris
            .iter()
            .filter_map(|u| Url::parse(u).ok())
            .filter(|u| matches!(u.scheme(), "http" | "https" | "ftp" | "sftp"))
            .filter(|u| !d.uris.contains(u))
            .collect();
        let n = add.len();
        if n > 0 {
            d.change_mirrors(&[], &add);
        }
        let digest = job
            .opts
            .checksum
            .as_deref()
            .and_then(crate::store::checksum::parse);
        // (Not once every byte is in: the file may already be on its way to being cut and
        // closed, with nothing left to read it back from.)
        let all_in = d.plan.as_ref().is_some_and(Plan::is_complete);
        let took_digest = match digest {
            Some(e)
                if d.expected.is_none()
                    && !d.verifying
                    && !all_in
                    && (d.file.is_some() || d.opening.is_some()) =>
            {
                // Taken from the first byte: in order as the blocks go out, or read back at
                // the end for what went out before.
                d.hasher = Some(crate::store::checksum::Hasher::new(e.kind));
                d.hash_pos = 0;
                d.verified = false;
                d.expected = Some(e);
                true
            }
            _ => false,
        };
        if n > 0 && d.ranges_ok {
            let now = self.conn_count(dl);
            let d = &mut self.dls[dl];
            d.wanted = d.connections_wanted().saturating_sub(now);
        }
        let gid = self.dls[dl].gid;
        let msg = format!(
            "GID#{gid:016x}: {n} mirror(s){} added from the Metalink {name}",
            if took_digest { " and its digest" } else { "" }
        );
        self.console.log(LogLevel::Info, &msg);
    }
}
