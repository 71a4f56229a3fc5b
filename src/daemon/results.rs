//! The daemon's stopped results (`tellStopped`, at most `--max-download-result`) and the failed
//! ones dropped past that limit that only the session file still wants
//! (`--keep-unfinished-download-result`). In memory each is a fixed-size head (GID, state, sizes);
//! its message, paths, URIs and own options are a record in a [`Records`] store, so a hundred
//! thousand results cost their heads. Reading a result decodes a copy.
use super::entries::{put_uris_options, uris_options, OwnOptions};
use super::Stopped;
use crate::engine::ExitCode;
use crate::rpc::status::Status;
use crate::store::records::{Dec, Enc, Frozen, Loc, Place, Records};
use std::collections::VecDeque;

/// What a result keeps in memory.
#[derive(Debug)]
pub(crate) struct Head {
    pub gid: u64,
    pub status: Status,
    pub code: ExitCode,
    pub total: u64,
    pub completed: u64,
    pub piece_length: u32,
    record: Loc,
}

#[derive(Debug)]
pub(crate) struct Results {
    held: VecDeque<Head>,
    /// Dropped past `--max-download-result`, kept for the session file only.
    unfinished: Vec<Head>,
    records: Records,
}

impl Default for Results {
    fn default() -> Results {
        Results::new(Records::in_memory())
    }
}

fn encode(s: &Stopped) -> Vec<u8> {
    let mut e = Enc::default();
    e.str(&s.message).str(&s.dir).str(&s.path);
    e.str(s.bitfield.as_deref().unwrap_or(""));
    put_uris_options(&mut e, &s.uris, &s.options);
    e.0
}

/// What [`encode`] wrote: message, dir, path, bitfield, URIs and own options.
type Parts = (
    String,
    String,
    String,
    Option<String>,
    Vec<String>,
    OwnOptions,
);

fn decode(bytes: &[u8]) -> std::io::Result<Parts> {
    let mut d = Dec(bytes);
    let mut fields = || {
        let message = d.str()?.to_string();
        let dir = d.str()?.to_string();
        let path = d.str()?.to_string();
        let bitfield = Some(d.str()?.to_string()).filter(|b| !b.is_empty());
        let (uris, options) = uris_options(&mut d)?;
        Some((message, dir, path, bitfield, uris, options))
    };
    fields().ok_or_else(|| std::io::Error::other("a result's record is cut short"))
}

/// Results as they were at one moment, for a session save made on another thread: the GID and
/// record place of each one `wanted` chose (the unfinished ones dropped past the limit first,
/// then the held ones, oldest first), with the records frozen.
#[derive(Debug)]
pub(crate) struct ResultsSnapshot {
    records: Frozen,
    entries: Vec<(u64, Place)>,
}

impl ResultsSnapshot {
    /// Calls `f` with each chosen result's GID, URIs and own options, in order; stops at the
    /// first error (a record that cannot be read back, or `f`'s).
    pub(crate) fn each(
        &self,
        mut f: impl FnMut(u64, &[String], &OwnOptions) -> std::io::Result<()>,
    ) -> std::io::Result<()> {
        let mut reader = self.records.reader();
        for &(gid, place) in &self.entries {
            let (_, _, _, _, uris, options) = decode(reader.read(place)?)?;
            f(gid, &uris, &options)?;
        }
        Ok(())
    }
}

impl Results {
    /// The results `wanted` chooses (by status and code), as they are now; see
    /// [`ResultsSnapshot`].
    pub(crate) fn snapshot(
        &self,
        wanted: impl Fn(Status, ExitCode) -> bool,
    ) -> std::io::Result<ResultsSnapshot> {
        Ok(ResultsSnapshot {
            records: self.records.freeze()?,
            entries: self
                .unfinished
                .iter()
                .chain(self.held.iter())
                .filter(|h| wanted(h.status, h.code))
                .map(|h| (h.gid, Records::place(&h.record)))
                .collect(),
        })
    }

    pub(crate) fn new(records: Records) -> Results {
        Results {
            held: VecDeque::new(),
            unfinished: Vec::new(),
            records,
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.held.len()
    }

    /// The result `h`, read from its record.
    fn try_result(&self, h: &Head) -> std::io::Result<Stopped> {
        let parts = decode(&self.records.get(&h.record)?)?;
        Ok(self.with_head(h, parts))
    }

    /// The result `h` to show. One whose record cannot be read back (an I/O error on the record
    /// file) keeps its head's facts and says why the rest is missing; the session never takes
    /// such a copy.
    fn result(&self, h: &Head) -> Stopped {
        self.try_result(h).unwrap_or_else(|e| {
            let lost = format!("The result's record could not be read back: {e}");
            self.with_head(
                h,
                (
                    lost,
                    String::new(),
                    String::new(),
                    None,
                    Vec::new(),
                    Vec::new(),
                ),
            )
        })
    }

    fn with_head(&self, h: &Head, parts: Parts) -> Stopped {
        let (message, dir, path, bitfield, uris, options) = parts;
        Stopped {
            gid: h.gid,
            status: h.status,
            code: h.code,
            message,
            total: h.total,
            completed: h.completed,
            dir,
            path,
            uris,
            options,
            piece_length: h.piece_length,
            bitfield,
        }
    }

    /// Keeps `s` as the newest result.
    pub(crate) fn push(&mut self, s: Stopped) {
        let record = self.records.put(&encode(&s));
        self.held.push_back(Head {
            gid: s.gid,
            status: s.status,
            code: s.code,
            total: s.total,
            completed: s.completed,
            piece_length: s.piece_length,
            record,
        });
    }

    /// A copy of the result at `i` (0: the oldest).
    pub(crate) fn get(&self, i: usize) -> Option<Stopped> {
        self.held.get(i).map(|h| self.result(h))
    }

    /// The results' heads, oldest first (no record is read).
    pub(crate) fn heads(&self) -> impl DoubleEndedIterator<Item = &Head> + '_ {
        self.held.iter()
    }

    /// Copies of the results, oldest first; an error for one whose record cannot be read back.
    #[cfg(test)]
    pub(crate) fn iter(&self) -> impl Iterator<Item = std::io::Result<Stopped>> + '_ {
        self.held.iter().map(|h| self.try_result(h))
    }

    pub(crate) fn position(&self, gid: u64) -> Option<usize> {
        self.held.iter().position(|h| h.gid == gid)
    }

    /// Forgets the result at `i`; its GID, if there was one.
    pub(crate) fn remove(&mut self, i: usize) -> Option<u64> {
        let h = self.held.remove(i)?;
        let gid = h.gid;
        self.records.free(h.record);
        self.compact_if_due();
        Some(gid)
    }

    /// Forgets every result; their GIDs.
    pub(crate) fn clear(&mut self) -> Vec<u64> {
        let gids = self.held.iter().map(|h| h.gid).collect();
        for h in std::mem::take(&mut self.held) {
            self.records.free(h.record);
        }
        self.compact_if_due();
        gids
    }

    /// Drops the oldest result, or with `keep` moves it to the results only the session file
    /// wants (its record stays as it is). Its head's facts (GID, state, code) and whether it was
    /// kept.
    pub(crate) fn drop_oldest(
        &mut self,
        keep: impl FnOnce(&Head) -> bool,
    ) -> Option<(u64, Status, ExitCode, bool)> {
        let h = self.held.pop_front()?;
        let (gid, status, code) = (h.gid, h.status, h.code);
        let kept = keep(&h);
        if kept {
            self.unfinished.push(h);
        } else {
            self.records.free(h.record);
            self.compact_if_due();
        }
        Some((gid, status, code, kept))
    }

    /// The GIDs of the results kept only for the session file.
    pub(crate) fn unfinished_gids(&self) -> impl Iterator<Item = u64> + '_ {
        self.unfinished.iter().map(|h| h.gid)
    }

    #[cfg(test)]
    /// Copies of the results dropped past the limit that the session file still wants, oldest
    /// first; an error for one whose record cannot be read back.
    pub(crate) fn unfinished(&self) -> impl Iterator<Item = std::io::Result<Stopped>> + '_ {
        self.unfinished.iter().map(|h| self.try_result(h))
    }

    fn compact_if_due(&mut self) {
        if self.records.wants_compaction() {
            self.records.compact(
                self.held
                    .iter_mut()
                    .chain(self.unfinished.iter_mut())
                    .map(|h| &mut h.record),
            );
        }
    }

    /// Debug builds and tests: the store agrees with the records held.
    pub(crate) fn check(&self) {
        self.records
            .check(self.held.iter().chain(&self.unfinished).map(|h| &h.record));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn result(gid: u64) -> Stopped {
        let dir = crate::cli::defs::by_name("dir").expect("dir is an option");
        Stopped {
            gid,
            status: if gid % 2 == 0 {
                Status::Complete
            } else {
                Status::Error
            },
            code: ExitCode((gid % 30) as u8),
            message: format!("message {gid} {}", "m".repeat((gid % 50) as usize)),
            total: gid * 4096,
            completed: gid,
            dir: format!("/d{gid}"),
            path: format!("/d{gid}/f"),
            uris: vec![format!("http://h/{gid}"), "http://mirror/x".into()],
            options: vec![(dir, format!("/d{gid}"))],
            piece_length: 1 << 20,
            bitfield: (gid % 3 != 0).then(|| "ff".repeat((gid % 5) as usize + 1)),
        }
    }

    fn same(a: &Stopped, b: &Stopped) {
        assert_eq!(format!("{a:?}"), format!("{b:?}"));
    }

    /// Results come back exactly through the limit's drops (some kept for the session), removals,
    /// a purge and the compactions those cause, from a store in a file.
    #[test]
    fn results_read_back_exactly_through_drops_removals_and_compactions() {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let mut r = Results::new(Records::in_dir(dir.path()));
        let mut model: VecDeque<Stopped> = VecDeque::new();
        let mut kept: Vec<Stopped> = Vec::new();
        for g in 1..=20_000u64 {
            r.push(result(g));
            model.push_back(result(g));
            while r.len() > 1000 {
                let facts = r.drop_oldest(|h| h.status == Status::Error && h.gid % 3 == 0);
                let m = model.pop_front().expect("the model agrees");
                let keeps = m.status == Status::Error && m.gid % 3 == 0;
                assert_eq!(facts, Some((m.gid, m.status, m.code, keeps)));
                if keeps {
                    kept.push(m);
                }
            }
            if g % 7 == 0 {
                let i = (g as usize * 31) % r.len();
                assert_eq!(r.remove(i), model.remove(i).map(|m| m.gid));
            }
        }
        r.check();
        // About 3.6 MB went in; what is held is a small part of it.
        assert!(
            r.records.stored_bytes() < 2 << 20,
            "{}",
            r.records.stored_bytes()
        );
        assert_eq!(r.len(), model.len());
        for (a, b) in r.iter().zip(&model) {
            same(&a.expect("the record reads back"), b);
        }
        for (i, b) in model.iter().enumerate() {
            same(&r.get(i).expect("held"), b);
            assert_eq!(r.position(b.gid), Some(i));
        }
        assert_eq!(r.unfinished().count(), kept.len());
        for (a, b) in r.unfinished().zip(&kept) {
            same(&a.expect("the record reads back"), b);
        }
        // A session save's copy: the unfinished ones then the held ones that the rule chooses,
        // as they are now, whatever happens after.
        let wanted = |_: Status, code: ExitCode| code.0 % 3 != 2;
        let snap = r.snapshot(wanted).expect("copied");
        let want: Vec<String> = kept
            .iter()
            .chain(model.iter())
            .filter(|m| wanted(m.status, m.code))
            .map(|m| format!("{} {:?} {:?}", m.gid, m.uris, m.options))
            .collect();
        assert!(want.len() > kept.len(), "the rule chose held ones too");
        let gids = r.clear();
        assert_eq!(gids, model.iter().map(|m| m.gid).collect::<Vec<_>>());
        assert_eq!(r.len(), 0);
        r.check();
        for g in 30_000..32_000u64 {
            r.push(result(g));
            r.remove(0);
        }
        let mut seen = Vec::new();
        snap.each(|gid, uris, own| {
            seen.push(format!("{gid} {uris:?} {own:?}"));
            Ok(())
        })
        .expect("the copy reads back");
        assert_eq!(seen, want);
        for (a, b) in r.unfinished().zip(&kept) {
            same(&a.expect("the record reads back"), b);
        }
    }
}
