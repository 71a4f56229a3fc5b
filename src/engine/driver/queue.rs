//! The daemon's waiting queue: downloads in order, paused ones among them. It keeps a count of
//! the entries that may start (not paused, not settling), changed only through its own methods,
//! so the scheduler asks for the next download after every step without walking a queue of a
//! million paused entries to find there is none.
use super::daemon::Pending;
use std::collections::VecDeque;

#[derive(Debug, Default)]
pub(crate) struct Queue {
    items: VecDeque<Pending>,
    /// Entries that are neither paused nor settling.
    runnable: usize,
}

fn runs(p: &Pending) -> bool {
    !p.paused && !p.settling
}

impl Queue {
    pub(crate) fn len(&self) -> usize {
        self.items.len()
    }

    pub(crate) fn get(&self, i: usize) -> Option<&Pending> {
        self.items.get(i)
    }

    pub(crate) fn iter(&self) -> impl Iterator<Item = &Pending> + '_ {
        self.items.iter()
    }

    /// Where download `gid` waits.
    pub(crate) fn position(&self, gid: u64) -> Option<usize> {
        self.items.iter().position(|p| p.gid == gid)
    }

    /// Puts `p` at `at` (past the end: last).
    pub(crate) fn insert(&mut self, at: usize, p: Pending) {
        self.runnable += usize::from(runs(&p));
        self.items.insert(at.min(self.items.len()), p);
    }

    pub(crate) fn push_back(&mut self, p: Pending) {
        self.insert(self.items.len(), p);
    }

    pub(crate) fn push_front(&mut self, p: Pending) {
        self.insert(0, p);
    }

    pub(crate) fn remove(&mut self, i: usize) -> Option<Pending> {
        let p = self.items.remove(i)?;
        self.runnable -= usize::from(runs(&p));
        Some(p)
    }

    /// Moves the entry at `from` to `to`.
    pub(crate) fn move_item(&mut self, from: usize, to: usize) {
        if let Some(p) = self.remove(from) {
            self.insert(to, p);
        }
    }

    /// Pauses or unpauses the entry at `i`; false if it already was so.
    pub(crate) fn set_paused(&mut self, i: usize, paused: bool) -> bool {
        let Some(p) = self.items.get_mut(i) else {
            return false;
        };
        if p.paused == paused {
            return false;
        }
        let before = runs(p);
        p.paused = paused;
        let after = runs(p);
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
        let Some(p) = self.items.iter_mut().find(|p| p.gid == gid) else {
            return;
        };
        let before = runs(p);
        p.settling = false;
        let after = runs(p);
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

    /// The entry at `i`'s own options and URIs, to change (neither decides whether it runs).
    pub(crate) fn options_mut(
        &mut self,
        i: usize,
    ) -> Option<&mut Vec<(&'static crate::cli::defs::OptDef, String)>> {
        self.items.get_mut(i).map(|p| &mut p.options)
    }

    pub(crate) fn uris_mut(&mut self, i: usize) -> Option<&mut Vec<String>> {
        self.items.get_mut(i).map(|p| &mut p.uris)
    }

    /// Debug builds: the count agrees with the entries.
    pub(crate) fn check(&self) {
        let counted = self.items.iter().filter(|p| runs(p)).count();
        assert_eq!(
            counted, self.runnable,
            "the queue's count of runnable entries is out of step"
        );
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
}
