//! The table of operations in flight both reactors keep: an entry a place, named by a user-data
//! word of the place's index and its generation, so an id whose operation is gone (its place
//! reused) names nothing.

struct Slot<E> {
    generation: u32,
    entry: Option<E>,
}

pub(super) struct Table<E> {
    slots: Vec<Slot<E>>,
    free: Vec<u32>,
    live: usize,
}

impl<E> Default for Table<E> {
    fn default() -> Self {
        Table {
            slots: Vec::new(),
            free: Vec::new(),
            live: 0,
        }
    }
}

impl<E> Table<E> {
    /// Keeps `entry`; its id.
    pub(super) fn insert(&mut self, entry: E) -> u64 {
        self.live += 1;
        let index = match self.free.pop() {
            Some(i) => {
                let s = &mut self.slots[i as usize];
                s.generation = s.generation.wrapping_add(1) & 0x7fff_ffff;
                s.entry = Some(entry);
                i
            }
            None => {
                self.slots.push(Slot {
                    generation: 0,
                    entry: Some(entry),
                });
                (self.slots.len() - 1) as u32
            }
        };
        (u64::from(self.slots[index as usize].generation) << 32) | u64::from(index)
    }

    fn slot(&self, id: u64) -> Option<&Slot<E>> {
        self.slots
            .get((id & 0xffff_ffff) as usize)
            .filter(|s| u64::from(s.generation) == id >> 32)
    }

    pub(super) fn get(&self, id: u64) -> Option<&E> {
        self.slot(id)?.entry.as_ref()
    }

    pub(super) fn get_mut(&mut self, id: u64) -> Option<&mut E> {
        let slot = self.slots.get_mut((id & 0xffff_ffff) as usize)?;
        if u64::from(slot.generation) != id >> 32 {
            return None;
        }
        slot.entry.as_mut()
    }

    /// Takes entry `id` out; its place may be reused.
    pub(super) fn take(&mut self, id: u64) -> Option<E> {
        let index = (id & 0xffff_ffff) as u32;
        let slot = self.slots.get_mut(index as usize)?;
        if u64::from(slot.generation) != id >> 32 {
            return None;
        }
        let e = slot.entry.take()?;
        self.free.push(index);
        self.live -= 1;
        Some(e)
    }

    /// Whether any entry is as `keep` says (no list made).
    pub(super) fn any(&self, keep: impl Fn(&E) -> bool) -> bool {
        self.slots
            .iter()
            .any(|s| s.entry.as_ref().is_some_and(&keep))
    }

    /// Entries held.
    pub(super) fn live(&self) -> usize {
        self.live
    }

    /// The ids of the entries `keep` says yes to.
    pub(super) fn ids(&self, keep: impl Fn(&E) -> bool) -> Vec<u64> {
        self.slots
            .iter()
            .enumerate()
            .filter(|(_, s)| s.entry.as_ref().is_some_and(&keep))
            .map(|(i, s)| (u64::from(s.generation) << 32) | i as u64)
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::Table;

    #[test]
    fn a_reused_place_does_not_answer_to_the_old_id() {
        let mut t = Table::default();
        let a = t.insert("a");
        assert_eq!(t.take(a), Some("a"));
        let b = t.insert("b");
        assert_ne!(a, b, "same place, new generation");
        assert_eq!(t.get(a), None);
        assert_eq!(t.take(a), None);
        assert_eq!(t.get(b), Some(&"b"));
        assert_eq!((t.live(), t.ids(|_| true)), (1, vec![b]));
    }
}
