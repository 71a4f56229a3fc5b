//! The daemon's waiting queue: downloads in order, paused ones among them, and the daemon's index
//! of every GID it holds. Memory stays flat however long the queue grows:
//!
//! * The entries are cut into chunks of consecutive entries (at most 1024, or about 64 KiB of
//!   records; see [`Limits`]). A chunk's entries (GID, two flags, URIs, own options and what
//!   an earlier run reached) are one record in a [`Records`] store, on disk where the daemon can
//!   make a file; the four chunks used last are also kept decoded in memory, written back
//!   when they leave. In memory per chunk: its length, counts and place.
//! * The GID index ([`GidMap`], in a file of buckets) gives each held GID its chunk (or
//!   [`OUTSIDE`] for a running download or a result), so a GID is found without a walk.
//! * Counts of the entries that may start (not paused, not settling), per chunk and in all, are
//!   changed only through the queue's methods, so the scheduler asks for the next download after
//!   every step without reading a queue of a million paused entries to find there is none.
//!
//! Adjacent chunks are merged when together they fill less than half a chunk, so their number
//! stays proportional to the entries' size. Reading an entry decodes a copy; changing one
//! changes its chunk's decoded copy.
use super::entries::{decode, encode, OwnOptions, Parts};
use super::Pending;
use crate::store::gidmap::GidMap;
use crate::store::records::{Dec, Enc, Frozen, Loc, Place, Records};

/// How large chunks grow and how many stay decoded.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Limits {
    /// Entries a chunk holds at most.
    pub entries: usize,
    /// A chunk whose entries' bytes pass this is split (unless it holds one entry).
    pub bytes: usize,
    /// Chunks kept decoded in memory.
    pub resident: usize,
}

impl Limits {
    pub(crate) const DEFAULT: Limits = Limits {
        entries: 1024,
        bytes: 64 * 1024,
        resident: 4,
    };

    /// Small chunks, for the simulation: its queues of a few entries then split, merge and leave
    /// memory as a long queue's do.
    pub(crate) const SMALL: Limits = Limits {
        entries: 4,
        bytes: 512,
        resident: 1,
    };
}
/// The GID index's value for a GID held outside the queue (running, or a result).
pub(crate) const OUTSIDE: u32 = u32::MAX;
/// What an entry costs its chunk besides its record's bytes (its GID, flags and lengths).
const ITEM_OVERHEAD: usize = 24;

/// One waiting entry, decoded.
#[derive(Debug, Clone)]
struct Item {
    gid: u64,
    paused: bool,
    /// An earlier run's last control-file save is in flight (see [`Pending::settling`]).
    settling: bool,
    /// Its URIs, own options and what an earlier run reached ([`encode`]).
    record: Vec<u8>,
}

/// An entry's two flags, which decide whether it may start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Flags {
    paused: bool,
    settling: bool,
}

impl Flags {
    fn runs(self) -> bool {
        !self.paused && !self.settling
    }
}

impl Item {
    fn runs(&self) -> bool {
        Flags {
            paused: self.paused,
            settling: self.settling,
        }
        .runs()
    }

    fn size(&self) -> usize {
        self.record.len() + ITEM_OVERHEAD
    }
}

#[derive(Debug)]
struct Chunk {
    /// Its name in the GID index (never [`OUTSIDE`]).
    id: u32,
    len: usize,
    /// Its entries that may start.
    runnable: usize,
    /// Its entries' sizes ([`Item::size`]).
    bytes: usize,
    /// Its entries as last written to the store; `None` once the decoded copy has changed.
    stored: Option<Loc>,
    /// Its entries decoded, while it is one of the [`Limits::resident`] chunks used last.
    items: Option<Vec<Item>>,
    /// When it was last used, for choosing which resident chunk leaves.
    used: u64,
}

#[derive(Debug)]
pub(crate) struct Queue {
    chunks: Vec<Chunk>,
    records: Records,
    gids: GidMap,
    len: usize,
    /// Entries that are neither paused nor settling.
    runnable: usize,
    next_id: u32,
    clock: u64,
    limits: Limits,
    /// Chunks decoded in memory now.
    decoded: usize,
    /// A chunk was rebuilt with fewer entries than it counted (it may be empty).
    emptied: bool,
}

impl Default for Queue {
    fn default() -> Queue {
        Queue::new(Records::in_memory(), GidMap::in_memory())
    }
}

/// A chunk's entries, into a record.
fn encode_items(items: &[Item]) -> Vec<u8> {
    let mut e = Enc::default();
    for it in items {
        let flags = u64::from(it.paused) | (u64::from(it.settling) << 1);
        e.u64(it.gid).u64(flags).bytes(&it.record);
    }
    e.0
}

/// What [`encode_items`] wrote; `None` for a record cut short.
fn decode_items(bytes: &[u8]) -> Option<Vec<Item>> {
    let mut d = Dec(bytes);
    let mut items = Vec::new();
    while !d.0.is_empty() {
        let gid = d.u64()?;
        let flags = d.u64()?;
        items.push(Item {
            gid,
            paused: flags & 1 != 0,
            settling: flags & 2 != 0,
            record: d.bytes()?.to_vec(),
        });
    }
    Some(items)
}

fn item_of(p: &Pending) -> Item {
    Item {
        gid: p.gid,
        paused: p.paused,
        settling: p.settling,
        record: encode(p),
    }
}

/// The entry `it` holds. A record that cannot be decoded gives the entry without URIs: it fails
/// when it starts, with the error that says so, instead of vanishing.
fn pending_of(it: &Item) -> Pending {
    with_parts(it, decode(&it.record).unwrap_or_default())
}

/// The entry of `it`'s GID and flags with the parts of its record.
fn with_parts(it: &Item, (uris, options, known): Parts) -> Pending {
    Pending {
        gid: it.gid,
        uris,
        options,
        paused: it.paused,
        known,
        settling: it.settling,
    }
}

/// The queue as it was at one moment, for a session save made on another thread: where each
/// chunk's record is, with the records frozen (the entries are read back from the store's file
/// as the save goes).
#[derive(Debug)]
pub(crate) struct QueueSnapshot {
    records: Frozen,
    chunks: Vec<Place>,
}

impl QueueSnapshot {
    /// Calls `f` with each entry's GID, paused flag, URIs and own options, in order; stops at
    /// the first error (a record that cannot be read back, or `f`'s).
    pub(crate) fn each(
        &self,
        mut f: impl FnMut(u64, bool, &[String], &OwnOptions) -> std::io::Result<()>,
    ) -> std::io::Result<()> {
        let cut = || std::io::Error::other("a queued download's record is cut short");
        let mut reader = self.records.reader();
        for &place in &self.chunks {
            let items = decode_items(reader.read(place)?).ok_or_else(cut)?;
            for it in &items {
                let (uris, options, _) = decode(&it.record).ok_or_else(cut)?;
                f(it.gid, it.paused, &uris, &options)?;
            }
        }
        Ok(())
    }
}

impl Queue {
    /// An empty queue keeping its chunks in `records` and its GID index in `gids`.
    pub(crate) fn new(records: Records, gids: GidMap) -> Queue {
        Queue::with_limits(records, gids, Limits::DEFAULT)
    }

    pub(crate) fn with_limits(records: Records, gids: GidMap, limits: Limits) -> Queue {
        Queue {
            chunks: Vec::new(),
            records,
            gids,
            len: 0,
            runnable: 0,
            next_id: 0,
            clock: 0,
            limits,
            decoded: 0,
            emptied: false,
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.len
    }

    // The GID index.

    /// Whether the daemon holds `gid` (waiting, running or a result).
    pub(crate) fn knows(&self, gid: u64) -> bool {
        self.gids.contains(gid)
    }

    /// The daemon no longer holds `gid`.
    pub(crate) fn forget(&mut self, gid: u64) {
        self.gids.remove(gid);
    }

    /// How many GIDs the daemon holds.
    pub(crate) fn known_count(&self) -> usize {
        self.gids.len()
    }

    /// Calls `f` with every GID the daemon holds, in no order (reads the whole index).
    pub(crate) fn each_known(&self, mut f: impl FnMut(u64)) {
        self.gids.for_each(|g, _| f(g));
    }

    // Chunks.

    /// The chunk holding entry `i` and `i`'s place in it; `i == len` gives the end of the last
    /// chunk. `None` past that, or without chunks.
    fn locate(&self, i: usize) -> Option<(usize, usize)> {
        // The ends, where most changes are, without a walk.
        let last = self.chunks.len().checked_sub(1)?;
        if i == self.len {
            return Some((last, self.chunks[last].len));
        }
        if i < self.chunks[0].len {
            return Some((0, i));
        }
        let mut base = 0;
        for (c, ch) in self.chunks.iter().enumerate() {
            if i < base + ch.len || (i == base + ch.len && c + 1 == self.chunks.len()) {
                return Some((c, i - base));
            }
            base += ch.len;
        }
        None
    }

    /// The entries before chunk `c`.
    fn base(&self, c: usize) -> usize {
        self.chunks[..c].iter().map(|ch| ch.len).sum()
    }

    fn new_id(&mut self) -> u32 {
        let id = self.next_id;
        self.next_id = self.next_id.wrapping_add(1);
        if self.next_id == OUTSIDE {
            self.next_id = 0;
        }
        id
    }

    /// Chunk `c`'s entries read from its record (no copy is kept). A record that cannot be read
    /// back gives, as an error, its entries found in the GID index: without their URIs, options,
    /// flags or order (they fail when they start instead of vanishing).
    fn read_items(&self, c: usize) -> Result<Vec<Item>, Vec<Item>> {
        let ch = &self.chunks[c];
        let stored = ch.stored.as_ref().map(|loc| self.records.get(loc));
        if let Some(items) = stored
            .and_then(Result::ok)
            .and_then(|b| decode_items(&b))
            .filter(|items| items.len() == ch.len)
        {
            return Ok(items);
        }
        let mut items = Vec::new();
        self.gids.for_each(|g, v| {
            if v == ch.id {
                items.push(Item {
                    gid: g,
                    paused: false,
                    settling: false,
                    record: Vec::new(),
                });
            }
        });
        Err(items)
    }

    /// Chunk `c`'s entries as they are, read or decoded.
    fn items(&self, c: usize) -> std::borrow::Cow<'_, [Item]> {
        match self.chunks[c].items.as_ref() {
            Some(items) => std::borrow::Cow::Borrowed(items),
            None => std::borrow::Cow::Owned(self.read_items(c).unwrap_or_else(|found| found)),
        }
    }

    /// Chunk `c`'s entries, decoded in memory (read from its record unless they are already).
    fn load(&mut self, c: usize) -> &mut Vec<Item> {
        self.clock += 1;
        if self.chunks[c].items.is_none() {
            self.decoded += 1;
            let read = self.read_items(c);
            let ch = &mut self.chunks[c];
            match read {
                Ok(items) => ch.items = Some(items),
                Err(found) => {
                    // Rebuilt from the index: the counts follow what was found.
                    let runs = found.iter().filter(|i| i.runs()).count();
                    self.emptied |= found.len() < ch.len;
                    self.len = self.len - ch.len + found.len();
                    self.runnable = self.runnable - ch.runnable + runs;
                    ch.len = found.len();
                    ch.runnable = runs;
                    ch.bytes = found.iter().map(Item::size).sum();
                    if let Some(loc) = ch.stored.take() {
                        self.records.free(loc);
                    }
                    ch.items = Some(found);
                }
            }
        }
        let ch = &mut self.chunks[c];
        ch.used = self.clock;
        ch.items.get_or_insert_with(Vec::new)
    }

    /// Chunk `c`'s entries, decoded, to be changed: its stored copy is given up.
    fn change(&mut self, c: usize) -> &mut Vec<Item> {
        self.load(c);
        if let Some(loc) = self.chunks[c].stored.take() {
            self.records.free(loc);
        }
        self.chunks[c].items.get_or_insert_with(Vec::new)
    }

    /// Writes chunk `c`'s changed entries to the store (it stays decoded).
    fn store(&mut self, c: usize) {
        let ch = &mut self.chunks[c];
        if ch.stored.is_none() {
            if let Some(items) = ch.items.as_ref() {
                ch.stored = Some(self.records.put(&encode_items(items)));
            }
        }
    }

    /// Ends a change: chunks past [`Limits::resident`] leave memory (the longest unused first), and the
    /// store is compacted once most of it is dead.
    fn settle_memory(&mut self) {
        // A chunk rebuilt from a damaged index may have come back empty.
        if std::mem::take(&mut self.emptied) {
            while let Some(c) = self.chunks.iter().position(|ch| ch.len == 0) {
                self.drop_empty(c);
            }
        }
        while self.decoded > self.limits.resident {
            let Some(c) = (0..self.chunks.len())
                .filter(|&c| self.chunks[c].items.is_some())
                .min_by_key(|&c| self.chunks[c].used)
            else {
                break;
            };
            self.store(c);
            self.chunks[c].items = None;
            self.decoded -= 1;
        }
        if self.records.wants_compaction() {
            self.records
                .compact(self.chunks.iter_mut().filter_map(|c| c.stored.as_mut()));
        }
    }

    /// A new empty chunk at `c`, decoded.
    fn new_chunk(&mut self, c: usize) {
        self.decoded += 1;
        let id = self.new_id();
        self.chunks.insert(
            c,
            Chunk {
                id,
                len: 0,
                runnable: 0,
                bytes: 0,
                stored: None,
                items: Some(Vec::new()),
                used: self.clock,
            },
        );
    }

    /// Puts `it` at `at` (past the end: last).
    fn put_item(&mut self, at: usize, it: Item) {
        let at = at.min(self.len);
        let (mut c, mut o) = match self.locate(at) {
            Some(p) => p,
            None => {
                self.new_chunk(0);
                (0, 0)
            }
        };
        let lim = self.limits;
        let full = |ch: &Chunk| ch.len >= lim.entries || ch.bytes >= lim.bytes;
        // At either end of the queue a full chunk gets a new neighbour rather than a split, so a
        // queue filled from one end keeps its chunks full.
        if full(&self.chunks[c]) && o == self.chunks[c].len && c + 1 == self.chunks.len() {
            self.new_chunk(c + 1);
            (c, o) = (c + 1, 0);
        } else if full(&self.chunks[c]) && o == 0 && c == 0 {
            self.new_chunk(0);
        }
        // Decoded before the index names it here: a chunk rebuilt from the index (its record
        // lost) must not find the new entry there already.
        let (runs, size, gid) = (it.runs(), it.size(), it.gid);
        let items = self.change(c);
        let o = o.min(items.len());
        items.insert(o, it);
        let id = self.chunks[c].id;
        self.gids.insert(gid, id);
        let ch = &mut self.chunks[c];
        ch.len += 1;
        ch.runnable += usize::from(runs);
        ch.bytes += size;
        self.len += 1;
        self.runnable += usize::from(runs);
        if ch.len > lim.entries || (ch.bytes > lim.bytes && ch.len > 1) {
            self.split(c);
        }
    }

    /// Splits chunk `c` in two halves (by count, or by bytes for a few large entries).
    fn split(&mut self, c: usize) {
        let most = self.limits.bytes;
        let items = self.change(c);
        let total: usize = items.iter().map(Item::size).sum();
        let mut at = items.len() / 2;
        if total > most {
            let mut sum = 0;
            at = items
                .iter()
                .position(|i| {
                    sum += i.size();
                    sum > total / 2
                })
                .unwrap_or(at);
        }
        let at = at.clamp(1, items.len().saturating_sub(1).max(1));
        let tail = items.split_off(at);
        self.recount(c);
        self.new_chunk(c + 1);
        let id = self.chunks[c + 1].id;
        for it in &tail {
            self.gids.insert(it.gid, id);
        }
        self.chunks[c + 1].items = Some(tail);
        self.recount(c + 1);
        // A half cut by bytes may be small beside its outer neighbour.
        if c + 2 < self.chunks.len() {
            self.merge_if_small(c + 1);
        }
        if c > 0 {
            self.merge_if_small(c - 1);
        }
    }

    /// Sets chunk `c`'s counts from its decoded entries.
    fn recount(&mut self, c: usize) {
        let ch = &mut self.chunks[c];
        if let Some(items) = ch.items.as_ref() {
            ch.len = items.len();
            ch.runnable = items.iter().filter(|i| i.runs()).count();
            ch.bytes = items.iter().map(Item::size).sum();
        }
    }

    /// Takes the entry at `i` out (its GID stays in the index, as [`OUTSIDE`]).
    fn take_item(&mut self, i: usize) -> Option<Item> {
        if i >= self.len {
            return None;
        }
        let (c, o) = self.locate(i)?;
        let items = self.change(c);
        // (A chunk rebuilt from a damaged index may hold fewer entries than it counted.)
        if o >= items.len() {
            return None;
        }
        let it = items.remove(o);
        let ch = &mut self.chunks[c];
        ch.len -= 1;
        ch.runnable -= usize::from(it.runs());
        ch.bytes -= it.size();
        self.len -= 1;
        self.runnable -= usize::from(it.runs());
        self.gids.insert(it.gid, OUTSIDE);
        if ch.len == 0 {
            self.drop_empty(c);
        } else {
            // A chunk and its neighbour that together fill less than half a chunk become one.
            if c + 1 < self.chunks.len() {
                self.merge_if_small(c);
            }
            if c > 0 {
                self.merge_if_small(c - 1);
            }
        }
        Some(it)
    }

    /// Drops the empty chunk `c`; its neighbours, now adjacent, merge if small.
    fn drop_empty(&mut self, c: usize) {
        let ch = self.chunks.remove(c);
        self.decoded -= usize::from(ch.items.is_some());
        if let Some(loc) = ch.stored {
            self.records.free(loc);
        }
        if c > 0 && c < self.chunks.len() {
            self.merge_if_small(c - 1);
        }
    }

    /// Merges chunk `c + 1` into chunk `c` if together they fill less than half a chunk.
    fn merge_if_small(&mut self, c: usize) {
        let (a, b) = (&self.chunks[c], &self.chunks[c + 1]);
        if a.len + b.len > self.limits.entries / 2 || a.bytes + b.bytes > self.limits.bytes / 2 {
            return;
        }
        self.load(c + 1);
        // Decoded before the index names its new entries here (see `put_item`).
        self.change(c);
        let Some(next) = self.chunks[c + 1].items.take() else {
            return;
        };
        self.decoded -= 1;
        let gone = self.chunks.remove(c + 1);
        if let Some(loc) = gone.stored {
            self.records.free(loc);
        }
        let id = self.chunks[c].id;
        for it in &next {
            self.gids.insert(it.gid, id);
        }
        self.change(c).extend(next);
        self.recount(c);
    }

    /// Where entry `gid` is: its chunk and its place in it.
    fn find(&self, gid: u64) -> Option<(usize, usize)> {
        let id = self.gids.get(gid).filter(|&v| v != OUTSIDE)?;
        let c = self.chunks.iter().position(|ch| ch.id == id)?;
        let o = self.items(c).iter().position(|i| i.gid == gid)?;
        Some((c, o))
    }

    // The queue's methods.

    /// A copy of the entry at `i`.
    pub(crate) fn get(&self, i: usize) -> Option<Pending> {
        self.get_many(&[i]).pop()
    }

    /// Copies of the entries at `at` (in that order, any missing left out), each chunk read
    /// once for a run of entries in it.
    pub(crate) fn get_many(&self, at: &[usize]) -> Vec<Pending> {
        let mut out = Vec::with_capacity(at.len());
        let mut read: Option<(usize, Vec<Item>)> = None;
        // Where each chunk starts, for a binary search per entry instead of a walk.
        let starts: Vec<usize> = self
            .chunks
            .iter()
            .scan(0, |base, ch| {
                let start = *base;
                *base += ch.len;
                Some(start)
            })
            .collect();
        for &i in at {
            if i >= self.len {
                continue;
            }
            let c = starts.partition_point(|&s| s <= i).saturating_sub(1);
            let o = i - starts[c];
            if let Some(items) = self.chunks[c].items.as_ref() {
                out.extend(items.get(o).map(pending_of));
                continue;
            }
            if read.as_ref().is_none_or(|(rc, _)| *rc != c) {
                read = Some((c, self.items(c).into_owned()));
            }
            if let Some((_, items)) = read.as_ref() {
                out.extend(items.get(o).map(pending_of));
            }
        }
        out
    }

    /// The entries' GIDs, in order (tests and debug checks: every chunk is read).
    pub(crate) fn gids(&self) -> Vec<u64> {
        let mut out = Vec::with_capacity(self.len);
        for c in 0..self.chunks.len() {
            out.extend(self.items(c).iter().map(|i| i.gid));
        }
        out
    }

    /// Where download `gid` waits.
    pub(crate) fn position(&self, gid: u64) -> Option<usize> {
        let (c, o) = self.find(gid)?;
        Some(self.base(c) + o)
    }

    /// Puts `p` at `at` (past the end: last); its GID joins the index.
    pub(crate) fn insert(&mut self, at: usize, p: Pending) {
        self.put_item(at, item_of(&p));
        self.settle_memory();
    }

    pub(crate) fn push_back(&mut self, p: Pending) {
        self.insert(self.len, p);
    }

    pub(crate) fn push_front(&mut self, p: Pending) {
        self.insert(0, p);
    }

    /// Takes the entry at `i` out; its GID stays known (it runs, or becomes a result, or the
    /// caller [forgets](Queue::forget) it).
    pub(crate) fn remove(&mut self, i: usize) -> Option<Pending> {
        let it = self.take_item(i);
        self.settle_memory();
        it.map(|it| pending_of(&it))
    }

    /// Moves the entry at `from` to `to`.
    pub(crate) fn move_item(&mut self, from: usize, to: usize) {
        if let Some(it) = self.take_item(from) {
            self.put_item(to, it);
        }
        self.settle_memory();
    }

    /// Pauses or unpauses the entry at `i`; false if it already was so.
    pub(crate) fn set_paused(&mut self, i: usize, paused: bool) -> bool {
        let Some((c, o)) = self.locate(i).filter(|_| i < self.len) else {
            return false;
        };
        let changed = self.set_flags(c, o, |it| it.paused = paused);
        self.settle_memory();
        changed
    }

    /// Changes the flags of entry `o` of chunk `c` with `f`; whether they changed (its chunk is
    /// written again only then).
    fn set_flags(&mut self, c: usize, o: usize, f: impl FnOnce(&mut Flags)) -> bool {
        let Some(it) = self.load(c).get(o) else {
            return false;
        };
        let before = Flags {
            paused: it.paused,
            settling: it.settling,
        };
        let mut after = before;
        f(&mut after);
        if after == before {
            return false;
        }
        if let Some(it) = self.change(c).get_mut(o) {
            (it.paused, it.settling) = (after.paused, after.settling);
        }
        let ch = &mut self.chunks[c];
        match (before.runs(), after.runs()) {
            (false, true) => {
                ch.runnable += 1;
                self.runnable += 1;
            }
            (true, false) => {
                ch.runnable -= 1;
                self.runnable -= 1;
            }
            _ => {}
        }
        true
    }

    /// Pauses or unpauses every entry (a chunk at a time).
    pub(crate) fn set_all_paused(&mut self, paused: bool) {
        for c in 0..self.chunks.len() {
            for o in 0..self.chunks[c].len {
                self.set_flags(c, o, |it| it.paused = paused);
            }
            self.settle_memory();
        }
    }

    /// The download `gid` ran before and its control-file saves are done: it may start again.
    pub(crate) fn settle(&mut self, gid: u64) {
        if let Some((c, o)) = self.find(gid) {
            self.set_flags(c, o, |it| it.settling = false);
            self.settle_memory();
        }
    }

    /// The first entry that may start, taken out. Without one, no walk.
    pub(crate) fn take_runnable(&mut self) -> Option<Pending> {
        if self.runnable == 0 {
            return None;
        }
        let c = self.chunks.iter().position(|ch| ch.runnable > 0)?;
        let o = self.load(c).iter().position(Item::runs)?;
        let i = self.base(c) + o;
        self.remove(i)
    }

    /// Changes the URIs or own options of the entry at `i` (neither decides whether it runs) and
    /// stores the result; `f`'s answer, `None` without such an entry, or the error that kept its
    /// record from being read (then nothing changes).
    pub(crate) fn update<R>(
        &mut self,
        i: usize,
        f: impl FnOnce(&mut Pending) -> R,
    ) -> Option<std::io::Result<R>> {
        let (c, o) = self.locate(i).filter(|_| i < self.len)?;
        let r = self.update_in(c, o, f);
        self.settle_memory();
        r
    }

    fn update_in<R>(
        &mut self,
        c: usize,
        o: usize,
        f: impl FnOnce(&mut Pending) -> R,
    ) -> Option<std::io::Result<R>> {
        let it = self.load(c).get(o)?;
        let Some(parts) = decode(&it.record) else {
            return Some(Err(std::io::Error::other(
                "a queued download's record is cut short",
            )));
        };
        let mut p = with_parts(it, parts);
        let r = f(&mut p);
        let record = encode(&p);
        let it = self.change(c).get_mut(o)?;
        let old = std::mem::replace(&mut it.record, record);
        let new = it.record.len();
        let ch = &mut self.chunks[c];
        ch.bytes = ch.bytes - old.len() + new;
        if ch.bytes > self.limits.bytes && ch.len > 1 {
            self.split(c);
        } else if new < old.len() {
            // Smaller: it may now fill less than half a chunk with a neighbour.
            if c + 1 < self.chunks.len() {
                self.merge_if_small(c);
            }
            if c > 0 {
                self.merge_if_small(c - 1);
            }
        }
        Some(Ok(r))
    }

    /// The queue as it is now; see [`QueueSnapshot`]. Changed chunks are written to the store
    /// first (they stay decoded).
    pub(crate) fn snapshot(&mut self) -> std::io::Result<QueueSnapshot> {
        for c in 0..self.chunks.len() {
            self.store(c);
        }
        Ok(QueueSnapshot {
            records: self.records.freeze()?,
            chunks: self
                .chunks
                .iter()
                .filter_map(|c| c.stored.as_ref().map(Records::place))
                .collect(),
        })
    }

    /// Bytes the queue holds in memory: its chunks' descriptions and decoded entries.
    #[cfg(test)]
    pub(crate) fn memory_bytes(&self) -> usize {
        let decoded: usize = self
            .chunks
            .iter()
            .filter_map(|c| c.items.as_ref())
            .map(|items| {
                items.capacity() * std::mem::size_of::<Item>()
                    + items.iter().map(|i| i.record.capacity()).sum::<usize>()
            })
            .sum();
        self.chunks.capacity() * std::mem::size_of::<Chunk>()
            + decoded
            + self.records.memory_bytes()
    }

    /// Debug builds and tests: the counts agree with the entries, every entry's GID names its
    /// chunk, the store's count with the records held, and at most [`Limits::resident`] chunks are
    /// decoded.
    pub(crate) fn check(&self) {
        let mut len = 0;
        let mut runnable = 0;
        for (c, ch) in self.chunks.iter().enumerate() {
            assert!(ch.len > 0, "an empty chunk is kept");
            assert!(
                ch.items.is_some() || ch.stored.is_some(),
                "a chunk is neither decoded nor stored"
            );
            let (items, whole) = match ch.items.as_ref() {
                Some(items) => (std::borrow::Cow::Borrowed(&items[..]), true),
                None => match self.read_items(c) {
                    Ok(items) => (std::borrow::Cow::Owned(items), true),
                    // Unreadable (a failed disk): only its GIDs are known until it is used.
                    Err(found) => (std::borrow::Cow::Owned(found), false),
                },
            };
            assert_eq!(items.len(), ch.len, "a chunk's length is out of step");
            if whole {
                let runs = items.iter().filter(|i| i.runs()).count();
                assert_eq!(
                    runs, ch.runnable,
                    "a chunk's count of runnable entries is out of step"
                );
                let bytes: usize = items.iter().map(Item::size).sum();
                assert_eq!(bytes, ch.bytes, "a chunk's size is out of step");
            }
            for it in items.iter() {
                assert_eq!(
                    self.gids.get(it.gid),
                    Some(ch.id),
                    "the GID index misplaces an entry"
                );
            }
            len += ch.len;
            runnable += ch.runnable;
        }
        assert_eq!(len, self.len, "the queue's length is out of step");
        for pair in self.chunks.windows(2) {
            assert!(
                pair[0].len + pair[1].len > self.limits.entries / 2
                    || pair[0].bytes + pair[1].bytes > self.limits.bytes / 2,
                "two adjacent chunks fill less than half a chunk"
            );
        }
        assert_eq!(
            runnable, self.runnable,
            "the queue's count of runnable entries is out of step"
        );
        let mut indexed = 0;
        self.gids
            .for_each(|_, v| indexed += usize::from(v != OUTSIDE));
        assert_eq!(
            indexed, self.len,
            "the GID index holds entries the queue does not"
        );
        let resident = self.chunks.iter().filter(|c| c.items.is_some()).count();
        assert_eq!(
            resident, self.decoded,
            "the count of decoded chunks is out of step"
        );
        assert!(
            resident <= self.limits.resident,
            "{resident} chunks decoded"
        );
        self.records
            .check(self.chunks.iter().filter_map(|c| c.stored.as_ref()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::defs;
    use crate::daemon::Known;

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
        let mut q = Queue::new(Records::in_dir(dir.path()), GidMap::in_dir(dir.path()));
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
                    bitfield: Some("c0".repeat((g % 4) as usize + 1)),
                });
            }
            model.push(p.clone());
            q.push_back(p);
        }
        let same = |q: &Queue, model: &[Pending]| {
            assert_eq!(q.len(), model.len());
            let all: Vec<usize> = (0..q.len()).collect();
            let got = q.get_many(&all);
            assert_eq!(got.len(), model.len());
            for (i, (a, b)) in got.iter().zip(model).enumerate() {
                assert_eq!(format!("{a:?}"), format!("{b:?}"));
                assert_eq!(q.position(b.gid), Some(i));
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

    /// Entries whose chunk cannot be read back (the disk failed) stay in the queue by their GIDs,
    /// without their URIs: a change to one is an error, a session save fails rather than lose
    /// them, and each fails when it starts instead of vanishing.
    #[test]
    fn an_unreadable_chunk_keeps_its_entries_by_gid() {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let mut q = Queue::new(Records::in_dir(dir.path()), GidMap::in_dir(dir.path()));
        let n = 8 * Limits::DEFAULT.entries as u64;
        for g in 1..=n {
            q.push_back(entry(g, true, false));
        }
        // The first chunks have left memory; their records are lost.
        assert!(q.chunks[0].items.is_none());
        q.records.damage();
        assert!(matches!(q.update(3, |p| p.uris.clear()), Some(Err(_))));
        assert!(q
            .snapshot()
            .expect("copied")
            .each(|_, _, _, _| Ok(()))
            .is_err());
        q.check();
        assert_eq!(q.len(), n as usize);
        let mut gids = q.gids();
        gids.sort_unstable();
        assert_eq!(gids, (1..=n).collect::<Vec<_>>());
        // Shown (and, if started, failed) without its URIs; its GID stays and is found.
        let p = q.get(3).expect("still there");
        assert!(p.uris.is_empty());
        assert_eq!(q.position(p.gid), Some(3));
        assert!(q.take_runnable().is_some_and(|p| p.uris.is_empty()));
        q.check();
    }

    /// Changes to chunks whose records are lost, one of them also missing from the index (the
    /// disk failed under both files): an entry inserted or moved into such a chunk is there
    /// once, removals past what was found remove nothing, and the counts follow what is there.
    #[test]
    fn changes_to_lost_chunks_neither_duplicate_nor_panic() {
        const NEW: u64 = 1 << 40;
        for limits in [Limits::DEFAULT, Limits::SMALL] {
            let dir = tempfile::tempdir().expect("a temporary directory");
            let mut q = Queue::with_limits(
                Records::in_dir(dir.path()),
                GidMap::in_dir(dir.path()),
                limits,
            );
            let n = 8 * limits.entries as u64 + 3;
            for g in 1..=n {
                q.push_back(entry(g, true, false));
            }
            assert!(q.chunks[0].items.is_none() && q.chunks[1].items.is_none());
            q.records.damage();
            // GID 2 is lost from the index too: its chunk comes back one short.
            q.gids.remove(2);
            q.insert(1, entry(NEW, true, false));
            q.move_item(q.len() - 1, 2);
            let last = q.len() - 1;
            q.remove(last);
            // The first chunk's count was one too many: removing at its end finds nothing.
            let _ = q.remove(limits.entries.min(q.len() - 1));
            q.check();
            let mut gids = q.gids();
            let before = gids.len();
            gids.sort_unstable();
            gids.dedup();
            assert_eq!(gids.len(), before, "an entry is in the queue twice");
            assert!(gids.contains(&NEW) && gids.contains(&n) && !gids.contains(&(n - 1)));
            assert_eq!(q.len(), before);

            // A removal at the end of a lost chunk that comes back one short finds nothing there.
            let mut q = Queue::with_limits(
                Records::in_dir(dir.path()),
                GidMap::in_dir(dir.path()),
                limits,
            );
            for g in 1..=n {
                q.push_back(entry(g, true, false));
            }
            q.records.damage();
            q.gids.remove(3);
            assert!(q.remove(limits.entries - 1).is_none());
            q.check();
            assert_eq!(q.len(), n as usize - 1);
        }
    }

    /// The queue agrees with a plain list through random inserts, moves, removals, pauses,
    /// changes and takes that split and merge its chunks many times, with every chunk's record
    /// written to and read back from its file; a session copy taken at any point reads back as
    /// the queue was then.
    #[test]
    fn agrees_with_a_list_through_random_changes() {
        for limits in [Limits::DEFAULT, Limits::SMALL] {
            agrees_with_a_list(limits);
        }
    }

    fn agrees_with_a_list(limits: Limits) {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let mut q = Queue::with_limits(
            Records::in_dir(dir.path()),
            GidMap::in_dir(dir.path()),
            limits,
        );
        let mut model: Vec<Pending> = Vec::new();
        let mut x = 0x2545_f491_4f6c_dd1du64;
        let mut rand = move |n: usize| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x % n.max(1) as u64) as usize
        };
        let mut next = 1u64;
        let mut copies = Vec::new();
        for step in 0..40_000 {
            let len = model.len();
            match rand(20) {
                // Grow to a few thousand entries, then hover there.
                0..=5 if len < 6000 => {
                    let mut p = entry(next, rand(3) == 0, rand(5) == 0);
                    p.uris.push("x".repeat(rand(300)));
                    next += 1;
                    let at = match rand(3) {
                        0 => 0,
                        1 => len,
                        _ => rand(len + 1),
                    };
                    model.insert(at, p.clone());
                    q.insert(at, p);
                }
                6..=8 if len > 0 => {
                    let i = rand(len);
                    let got = q.remove(i).map(|p| p.gid);
                    assert_eq!(got, Some(model.remove(i).gid), "step {step}");
                }
                9..=10 if len > 0 => {
                    let (from, to) = (rand(len), rand(len));
                    q.move_item(from, to);
                    let p = model.remove(from);
                    model.insert(to.min(model.len()), p);
                }
                11..=12 if len > 0 => {
                    let (i, paused) = (rand(len), rand(2) == 0);
                    let changed = model[i].paused != paused;
                    model[i].paused = paused;
                    assert_eq!(q.set_paused(i, paused), changed, "step {step}");
                }
                13 if len > 0 => {
                    let i = rand(len);
                    model[i].settling = false;
                    q.settle(model[i].gid);
                }
                14 if len > 0 => {
                    // Entries grow and shrink: chunks split by bytes and merge again.
                    let i = rand(len);
                    if rand(2) == 0 {
                        let u = "u".repeat(rand(2000));
                        model[i].uris.push(u.clone());
                        assert!(matches!(q.update(i, |p| p.uris.push(u)), Some(Ok(()))));
                    } else {
                        model[i].uris.truncate(1);
                        assert!(matches!(q.update(i, |p| p.uris.truncate(1)), Some(Ok(()))));
                    }
                }
                15 => {
                    let want = model.iter().position(|p| !p.paused && !p.settling);
                    let got = q.take_runnable().map(|p| p.gid);
                    assert_eq!(got, want.map(|i| model.remove(i).gid), "step {step}");
                }
                16 if rand(50) == 0 => {
                    let paused = rand(2) == 0;
                    q.set_all_paused(paused);
                    model.iter_mut().for_each(|p| p.paused = paused);
                }
                17 if rand(200) == 0 => {
                    copies.push((q.snapshot().expect("copied"), model.clone()));
                }
                18 if len > 0 => {
                    let i = rand(len);
                    assert_eq!(q.position(model[i].gid), Some(i), "step {step}");
                    let p = q.get(i).expect("there");
                    assert_eq!(format!("{p:?}"), format!("{:?}", model[i]));
                }
                _ => {}
            }
            assert_eq!(q.len(), model.len());
            if step % 997 == 0 {
                q.check();
                assert_eq!(q.gids(), model.iter().map(|p| p.gid).collect::<Vec<_>>());
            }
        }
        q.check();
        let all: Vec<usize> = (0..q.len()).collect();
        let got: Vec<String> = q.get_many(&all).iter().map(|p| format!("{p:?}")).collect();
        let want: Vec<String> = model.iter().map(|p| format!("{p:?}")).collect();
        assert_eq!(got, want);
        assert!(copies.len() > 3, "{} copies", copies.len());
        for (snap, then) in &copies {
            let mut seen = Vec::new();
            snap.each(|gid, paused, uris, _| {
                seen.push((gid, paused, uris.to_vec()));
                Ok(())
            })
            .expect("the copy reads back");
            let want: Vec<_> = then
                .iter()
                .map(|p| (p.gid, p.paused, p.uris.clone()))
                .collect();
            assert_eq!(seen, want);
        }
    }

    /// A queue of a hundred thousand entries holds no more memory than one of twenty thousand: a
    /// few chunks decoded and a few dozen bytes a chunk.
    #[test]
    fn memory_stays_flat_however_long_the_queue() {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let mut q = Queue::new(Records::in_dir(dir.path()), GidMap::in_dir(dir.path()));
        let mut at_20k = 0;
        for g in 1..=100_000u64 {
            let mut p = entry(g, true, false);
            p.uris
                .push(format!("https://mirror.example/path/{g}/file.iso"));
            q.push_back(p);
            if g == 20_000 {
                at_20k = q.memory_bytes();
            }
        }
        q.check();
        let at_end = q.memory_bytes();
        // 80 more chunks' descriptions (under 16 KiB) beside the same few decoded chunks; the
        // store's write buffer swings by up to 128 KiB. (A slot of 32 bytes an entry, as
        // before, would be 2.5 MB more.)
        assert!(
            at_end < at_20k + (160 << 10) && at_end < 1 << 20,
            "{at_20k} B with 20 000 entries, {at_end} B with a hundred thousand"
        );
        // Still found by GID, anywhere in it.
        assert_eq!(q.position(50_000), Some(49_999));
        assert!(q.gids.on_disk() && q.records.on_disk());
    }
}
