//! The daemon's waiting queue: downloads in order, paused ones among them. It keeps a count of
//! the entries that may start (not paused, not settling), changed only through its own methods,
//! so the scheduler asks for the next download after every step without walking a queue of a
//! million paused entries to find there is none.
//!
//! In memory each entry is a fixed-size slot (its GID, its two flags, where its record is); its
//! URIs, own options and what an earlier run reached are a record in a [`Records`] store, on disk
//! where the daemon can make a file. Reading an entry decodes a copy; changing one writes a new
//! record.
use super::daemon::{Known, Pending};
use crate::cli::defs::{self, OptDef};
use crate::store::records::{Dec, Enc, Frozen, Loc, Place, Records};
use std::collections::VecDeque;

#[derive(Debug)]
struct Slot {
    gid: u64,
    paused: bool,
    /// An earlier run's last control-file save is in flight (see [`Pending::settling`]).
    settling: bool,
    record: Loc,
}

#[derive(Debug)]
pub(crate) struct Queue {
    items: VecDeque<Slot>,
    records: Records,
    /// Entries that are neither paused nor settling.
    runnable: usize,
}

impl Default for Queue {
    fn default() -> Queue {
        Queue::new(Records::in_memory())
    }
}

fn runs(s: &Slot) -> bool {
    !s.paused && !s.settling
}

/// A download's URIs and own options (by name), into a record.
pub(super) fn put_uris_options(
    e: &mut Enc,
    uris: &[String],
    options: &[(&'static OptDef, String)],
) {
    e.u64(uris.len() as u64);
    for u in uris {
        e.str(u);
    }
    e.u64(options.len() as u64);
    for (d, v) in options {
        // The option's place in the table, one past it (records live only as long as this
        // process); 0 and its name for one not from the table.
        match defs::OPTIONS.iter().position(|o| std::ptr::eq(o, *d)) {
            Some(at) => e.u64(at as u64 + 1),
            None => e.u64(0).str(d.name),
        };
        e.str(v);
    }
}

/// A download's own options.
pub(super) type OwnOptions = Vec<(&'static OptDef, String)>;

/// What [`put_uris_options`] wrote.
pub(super) fn uris_options(d: &mut Dec) -> Option<(Vec<String>, OwnOptions)> {
    let n = d.u64()?;
    let mut uris = Vec::new();
    for _ in 0..n {
        uris.push(d.str()?.to_string());
    }
    let n = d.u64()?;
    let mut options = Vec::new();
    for _ in 0..n {
        let def = match d.u64()? {
            0 => defs::by_name(d.str()?),
            at => defs::OPTIONS.get(usize::try_from(at - 1).ok()?),
        };
        let value = d.str()?;
        if let Some(def) = def {
            options.push((def, value.to_string()));
        }
    }
    Some((uris, options))
}

/// An entry's record: its URIs, its own options and what an earlier run reached.
fn encode(p: &Pending) -> Vec<u8> {
    let mut e = Enc::default();
    put_uris_options(&mut e, &p.uris, &p.options);
    match &p.known {
        None => {
            e.u64(0);
        }
        Some(k) => {
            e.u64(1).u64(k.total).u64(k.completed).str(&k.path);
        }
    }
    e.0
}

/// The parts of an entry its record holds; `None` for a record cut short or unreadable.
type Parts = (Vec<String>, OwnOptions, Option<Known>);

fn decode(bytes: &[u8]) -> Option<Parts> {
    let mut d = Dec(bytes);
    let (uris, options) = uris_options(&mut d)?;
    let known = match d.u64()? {
        0 => None,
        _ => Some(Known {
            total: d.u64()?,
            completed: d.u64()?,
            path: d.str()?.to_string(),
        }),
    };
    Some((uris, options, known))
}

/// The queue as it was at one moment, for a session save made on another thread: each entry's
/// GID, whether it is paused and where its record is, with the records frozen (about 32 bytes an
/// entry; the URIs and options are read back from the store's file as the save goes).
#[derive(Debug)]
pub(crate) struct QueueSnapshot {
    records: Frozen,
    entries: Vec<(u64, bool, Place)>,
}

impl QueueSnapshot {
    /// Calls `f` with each entry's GID, paused flag, URIs and own options, in order; stops at
    /// the first error (a record that cannot be read back, or `f`'s).
    pub(crate) fn each(
        &self,
        mut f: impl FnMut(u64, bool, &[String], &OwnOptions) -> std::io::Result<()>,
    ) -> std::io::Result<()> {
        let mut reader = self.records.reader();
        for &(gid, paused, place) in &self.entries {
            let (uris, options, _) = decode(reader.read(place)?)
                .ok_or_else(|| std::io::Error::other("a queued download's record is cut short"))?;
            f(gid, paused, &uris, &options)?;
        }
        Ok(())
    }
}

impl Queue {
    /// The queue as it is now; see [`QueueSnapshot`].
    pub(crate) fn snapshot(&self) -> std::io::Result<QueueSnapshot> {
        Ok(QueueSnapshot {
            records: self.records.freeze()?,
            entries: self
                .items
                .iter()
                .map(|s| (s.gid, s.paused, Records::place(&s.record)))
                .collect(),
        })
    }

    /// An empty queue keeping its records in `records`.
    pub(crate) fn new(records: Records) -> Queue {
        Queue {
            items: VecDeque::new(),
            records,
            runnable: 0,
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.items.len()
    }

    /// The entry of `s`, read from its record.
    fn try_entry(&self, s: &Slot) -> std::io::Result<Pending> {
        let bytes = self.records.get(&s.record)?;
        let (uris, options, known) = decode(&bytes)
            .ok_or_else(|| std::io::Error::other("a queued download's record is cut short"))?;
        Ok(Pending {
            gid: s.gid,
            uris,
            options,
            paused: s.paused,
            known,
            settling: s.settling,
        })
    }

    /// The entry of `s` to show or start. A record that cannot be read back (an I/O error on the
    /// record file) gives the entry without URIs: it fails when it starts, with the error that
    /// says so, instead of vanishing. What is written back (`update`, the session) never takes
    /// such a copy.
    fn entry(&self, s: &Slot) -> Pending {
        self.try_entry(s).unwrap_or_else(|_| Pending {
            gid: s.gid,
            uris: Vec::new(),
            options: Vec::new(),
            paused: s.paused,
            known: None,
            settling: s.settling,
        })
    }

    /// A copy of the entry at `i`.
    pub(crate) fn get(&self, i: usize) -> Option<Pending> {
        self.items.get(i).map(|s| self.entry(s))
    }

    #[cfg(test)]
    /// Copies of the entries, in order; an error for one whose record cannot be read back.
    pub(crate) fn iter(&self) -> impl Iterator<Item = std::io::Result<Pending>> + '_ {
        self.items.iter().map(|s| self.try_entry(s))
    }

    /// The entries' GIDs, in order (no record is read).
    pub(crate) fn gids(&self) -> impl Iterator<Item = u64> + '_ {
        self.items.iter().map(|s| s.gid)
    }

    /// Where download `gid` waits.
    pub(crate) fn position(&self, gid: u64) -> Option<usize> {
        self.items.iter().position(|s| s.gid == gid)
    }

    /// Puts `p` at `at` (past the end: last).
    pub(crate) fn insert(&mut self, at: usize, p: Pending) {
        let s = Slot {
            gid: p.gid,
            paused: p.paused,
            settling: p.settling,
            record: self.records.put(&encode(&p)),
        };
        self.runnable += usize::from(runs(&s));
        self.items.insert(at.min(self.items.len()), s);
    }

    pub(crate) fn push_back(&mut self, p: Pending) {
        self.insert(self.items.len(), p);
    }

    pub(crate) fn push_front(&mut self, p: Pending) {
        self.insert(0, p);
    }

    /// Takes the entry at `i` out.
    pub(crate) fn remove(&mut self, i: usize) -> Option<Pending> {
        let s = self.items.remove(i)?;
        self.runnable -= usize::from(runs(&s));
        let p = self.entry(&s);
        self.records.free(s.record);
        self.compact_if_due();
        Some(p)
    }

    /// Moves the entry at `from` to `to` (its record stays where it is).
    pub(crate) fn move_item(&mut self, from: usize, to: usize) {
        if let Some(s) = self.items.remove(from) {
            self.items.insert(to.min(self.items.len()), s);
        }
    }

    /// Pauses or unpauses the entry at `i`; false if it already was so.
    pub(crate) fn set_paused(&mut self, i: usize, paused: bool) -> bool {
        let Some(s) = self.items.get_mut(i) else {
            return false;
        };
        if s.paused == paused {
            return false;
        }
        let before = runs(s);
        s.paused = paused;
        let after = runs(s);
        self.recount(before, after);
        true
    }

    /// Pauses or unpauses every entry.
    pub(crate) fn set_all_paused(&mut self, paused: bool) {
        for i in 0..self.items.len() {
            self.set_paused(i, paused);
        }
    }

    /// The download `gid` ran before and its control-file saves are done: it may start again.
    pub(crate) fn settle(&mut self, gid: u64) {
        let Some(s) = self.items.iter_mut().find(|s| s.gid == gid) else {
            return;
        };
        let before = runs(s);
        s.settling = false;
        let after = runs(s);
        self.recount(before, after);
    }

    fn recount(&mut self, before: bool, after: bool) {
        match (before, after) {
            (false, true) => self.runnable += 1,
            (true, false) => self.runnable -= 1,
            _ => {}
        }
    }

    /// The first entry that may start, taken out. Without one, no walk.
    pub(crate) fn take_runnable(&mut self) -> Option<Pending> {
        if self.runnable == 0 {
            return None;
        }
        let at = self.items.iter().position(runs)?;
        self.remove(at)
    }

    /// Changes the URIs or own options of the entry at `i` (neither decides whether it runs) and
    /// stores the result; `f`'s answer, `None` without such an entry, or the error that kept its
    /// record from being read (then nothing changes).
    pub(crate) fn update<R>(
        &mut self,
        i: usize,
        f: impl FnOnce(&mut Pending) -> R,
    ) -> Option<std::io::Result<R>> {
        let mut p = match self.try_entry(self.items.get(i)?) {
            Ok(p) => p,
            Err(e) => return Some(Err(e)),
        };
        let r = f(&mut p);
        let bytes = encode(&p);
        let s = self.items.get_mut(i)?;
        let old = std::mem::replace(&mut s.record, self.records.put(&bytes));
        self.records.free(old);
        self.compact_if_due();
        Some(Ok(r))
    }

    /// Rewrites the record store once most of it is dead.
    fn compact_if_due(&mut self) {
        if self.records.wants_compaction() {
            self.records
                .compact(self.items.iter_mut().map(|s| &mut s.record));
        }
    }

    /// Debug builds: the count agrees with the entries, and the store with the records held.
    pub(crate) fn check(&self) {
        let counted = self.items.iter().filter(|s| runs(s)).count();
        assert_eq!(
            counted, self.runnable,
            "the queue's count of runnable entries is out of step"
        );
        self.records.check(self.items.iter().map(|s| &s.record));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(gid: u64, paused: bool, settling: bool) -> Pending {
        Pending {
            gid,
            uris: vec![format!("http://h/{gid}")],
            options: Vec::new(),
            paused,
            known: None,
            settling,
        }
    }

    #[test]
    fn the_count_follows_every_change_and_take_skips_what_may_not_run() {
        let mut q = Queue::default();
        q.push_back(entry(1, true, false));
        q.push_back(entry(2, false, true));
        q.push_back(entry(3, true, false));
        q.check();
        assert!(q.take_runnable().is_none());
        q.settle(2);
        q.check();
        assert!(q.set_paused(0, false));
        assert!(!q.set_paused(0, false));
        q.check();
        q.move_item(0, 2);
        q.check();
        assert_eq!(q.take_runnable().map(|p| p.gid), Some(2));
        assert_eq!(q.take_runnable().map(|p| p.gid), Some(1));
        assert!(q.take_runnable().is_none());
        q.set_all_paused(false);
        q.push_front(entry(4, false, false));
        q.check();
        assert_eq!(q.remove(1).map(|p| p.gid), Some(3));
        q.check();
        assert_eq!(q.take_runnable().map(|p| p.gid), Some(4));
        assert_eq!(q.len(), 0);
        q.check();
    }

    /// Entries come back as they went in, through changes, moves and the record store's
    /// compactions, from a queue whose records are in a file.
    #[test]
    fn entries_read_back_exactly_through_changes_and_compactions() {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let mut q = Queue::new(Records::in_dir(dir.path()));
        let dir_opt = defs::by_name("dir").expect("dir is an option");
        let mut model: Vec<Pending> = Vec::new();
        for g in 1..=3000u64 {
            let mut p = entry(g, g % 3 == 0, false);
            p.uris
                .push(format!("https://mirror/{}", "m".repeat((g % 97) as usize)));
            if g % 5 == 0 {
                p.options.push((dir_opt, format!("/d/{g}")));
            }
            if g % 7 == 0 {
                p.known = Some(Known {
                    total: g * 1000,
                    completed: g,
                    path: format!("/d/f{g}"),
                });
            }
            model.push(p.clone());
            q.push_back(p);
        }
        let same = |q: &Queue, model: &[Pending]| {
            assert_eq!(q.len(), model.len());
            for (a, b) in q.iter().zip(model) {
                let a = a.expect("the record reads back");
                assert_eq!(format!("{a:?}"), format!("{b:?}"));
            }
            q.check();
        };
        same(&q, &model);
        // A session save's copy taken now reads back as the queue was, whatever happens after.
        let agrees = |snap: &QueueSnapshot, model: &[Pending]| {
            let mut seen = Vec::new();
            snap.each(|gid, paused, uris, own| {
                seen.push(format!("{gid} {paused} {uris:?} {own:?}"));
                Ok(())
            })
            .expect("the copy reads back");
            let want: Vec<String> = model
                .iter()
                .map(|p| format!("{} {} {:?} {:?}", p.gid, p.paused, p.uris, p.options))
                .collect();
            assert_eq!(seen, want);
        };
        let early = (q.snapshot().expect("copied"), model.clone());
        // Rewrite every entry's URIs many times: dead records pile up and are compacted away.
        for round in 0..40 {
            for i in (0..model.len()).step_by(3) {
                let u = format!("https://r{round}/{i}/{}", "u".repeat(200));
                assert!(matches!(
                    q.update(i, |p| p.uris[0].clone_from(&u)),
                    Some(Ok(()))
                ));
                model[i].uris[0] = u;
            }
        }
        // About 9 MiB were written; compactions kept the file near its live size.
        assert!(
            q.records.stored_bytes() < 4 << 20,
            "{}",
            q.records.stored_bytes()
        );
        same(&q, &model);
        agrees(&early.0, &early.1);
        let later = (q.snapshot().expect("copied"), model.clone());
        q.move_item(10, 0);
        let moved = model.remove(10);
        model.insert(0, moved);
        for i in (0..model.len()).rev().step_by(2) {
            assert_eq!(q.remove(i).map(|p| p.gid), Some(model.remove(i).gid));
        }
        same(&q, &model);
        assert!(q.update(model.len(), |_| ()).is_none());
        agrees(&later.0, &later.1);
        agrees(&q.snapshot().expect("copied"), &model);
    }

    /// An entry whose record cannot be read back is neither changed nor written out empty.
    #[test]
    fn an_unreadable_record_is_an_error_not_an_empty_entry() {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let mut q = Queue::new(Records::in_dir(dir.path()));
        for g in 1..=10 {
            q.push_back(entry(g, true, false));
        }
        q.records.damage();
        assert!(matches!(q.update(3, |p| p.uris.clear()), Some(Err(_))));
        assert!(q.iter().all(|p| p.is_err()));
        // Shown (and, if started, failed) without its URIs; its place and GID stay.
        assert_eq!(q.get(3).map(|p| (p.gid, p.uris.len())), Some((4, 0)));
        q.check();
    }
}
