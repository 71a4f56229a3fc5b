//! A map from a download's GID to a small number (where the daemon keeps that download), held in
//! an unnamed file of 4 KiB buckets rather than in the process's memory, so that the daemon's
//! index of a million held downloads costs it no memory (the bytes are page cache, which the
//! kernel writes back and drops as it needs).
//!
//! A GID's bucket is a keyed hash of it (random per process, so chosen GIDs cannot crowd one
//! bucket) masked to the table's size, a power of two. A bucket is read and written whole with
//! one `pread`/`pwrite`: a look-up is one read, a change a read and a write, a few microseconds
//! answered from the page cache. The table doubles in place when its average bucket is two
//! thirds full, or at once when one bucket fills: each bucket `b` splits into `b` and
//! `b + size`, by the next bit of the hash.
//!
//! Where no file can be made, or a write to it fails (a full disk), the buckets are kept in memory
//! instead: nothing is lost, the map only stops saving memory.
use std::collections::hash_map::RandomState;
use std::fs::File;
use std::hash::BuildHasher;
use std::io;
use std::os::unix::fs::FileExt;
use std::path::Path;

const PAGE: usize = 4096;
/// A GID (8 bytes) and its value (4 bytes).
const ENTRY: usize = 12;
/// Entries a bucket holds after its 4-byte count.
const PER_PAGE: usize = (PAGE - 4) / ENTRY;
/// The table doubles once the entries average this many a bucket.
const GROW_AT: usize = PER_PAGE * 2 / 3;

type Page = [u8; PAGE];

#[derive(Debug)]
enum Pages {
    File(File),
    Memory(Vec<u8>),
}

/// See the module's documentation.
#[derive(Debug)]
pub struct GidMap {
    pages: Pages,
    /// Buckets in the table, a power of two.
    buckets: u64,
    len: usize,
    hasher: RandomState,
    /// Tests: the write that fails, counting down from here.
    #[cfg(test)]
    writes_left: Option<u32>,
}

fn count(p: &Page) -> usize {
    usize::from(u16::from_le_bytes([p[0], p[1]])).min(PER_PAGE)
}

fn set_count(p: &mut Page, n: usize) {
    p[..2].copy_from_slice(&(n as u16).to_le_bytes());
}

fn entry(p: &Page, i: usize) -> (u64, u32) {
    let at = 4 + i * ENTRY;
    let mut g = [0u8; 8];
    g.copy_from_slice(&p[at..at + 8]);
    let mut v = [0u8; 4];
    v.copy_from_slice(&p[at + 8..at + 12]);
    (u64::from_le_bytes(g), u32::from_le_bytes(v))
}

fn set_entry(p: &mut Page, i: usize, g: u64, v: u32) {
    let at = 4 + i * ENTRY;
    p[at..at + 8].copy_from_slice(&g.to_le_bytes());
    p[at + 8..at + 12].copy_from_slice(&v.to_le_bytes());
}

impl GidMap {
    /// A map in memory only.
    pub fn in_memory() -> GidMap {
        GidMap {
            pages: Pages::Memory(vec![0u8; PAGE]),
            buckets: 1,
            len: 0,
            hasher: RandomState::new(),
            #[cfg(test)]
            writes_left: None,
        }
    }

    /// A map in an unnamed file near `dir` (see [`super::records::unnamed_file_near`]), else in
    /// memory.
    pub fn in_dir(dir: &Path) -> GidMap {
        let mut m = GidMap::in_memory();
        let file = super::records::unnamed_file_near(dir);
        if let Ok(f) = file {
            if f.write_all_at(&[0u8; PAGE], 0).is_ok() {
                m.pages = Pages::File(f);
            }
        }
        m
    }

    /// Whether the buckets are in a file.
    pub fn on_disk(&self) -> bool {
        matches!(self.pages, Pages::File(_))
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    fn hash(&self, g: u64) -> u64 {
        self.hasher.hash_one(g)
    }

    /// Reads bucket `b` into `p` (pages are filled in place: a bucket is not moved around).
    fn read(&self, b: u64, p: &mut Page) -> io::Result<()> {
        let at = b * PAGE as u64;
        match &self.pages {
            Pages::File(f) => f.read_exact_at(p, at)?,
            Pages::Memory(m) => {
                let at = usize::try_from(at).map_err(io::Error::other)?;
                p.copy_from_slice(&m[at..at + PAGE]);
            }
        }
        Ok(())
    }

    /// Writes bucket `b`; a file that refuses it is given up for memory (read back whole first).
    fn write(&mut self, b: u64, p: &Page) {
        let at = b * PAGE as u64;
        if let Pages::File(f) = &self.pages {
            #[cfg(test)]
            let refused = self.writes_left.as_mut().is_some_and(|n| {
                *n = n.saturating_sub(1);
                *n == 0
            });
            #[cfg(not(test))]
            let refused = false;
            if !refused && f.write_all_at(p, at).is_ok() {
                return;
            }
            self.move_to_memory();
        }
        if let Pages::Memory(m) = &mut self.pages {
            let at = at as usize;
            if m.len() < at + PAGE {
                m.resize(at + PAGE, 0);
            }
            m[at..at + PAGE].copy_from_slice(p);
        }
    }

    /// Moves the buckets from the file into memory: every page the file holds, which during a
    /// [`GidMap::grow`] includes the upper halves already written past the table. A bucket that
    /// cannot be read back is lost (the disk failed twice); its entries read as absent.
    fn move_to_memory(&mut self) {
        let Pages::File(f) = &self.pages else {
            return;
        };
        let pages = f
            .metadata()
            .map_or(0, |m| m.len() / PAGE as u64)
            .max(self.buckets) as usize;
        let mut m = vec![0u8; pages * PAGE];
        for (b, chunk) in m.chunks_mut(PAGE).enumerate() {
            if f.read_exact_at(chunk, (b * PAGE) as u64).is_err() {
                chunk.fill(0);
            }
        }
        self.pages = Pages::Memory(m);
        self.recount();
    }

    /// Sets the count of entries from the buckets (after they moved into memory).
    fn recount(&mut self) {
        if let Pages::Memory(m) = &self.pages {
            self.len = m
                .chunks_exact(PAGE)
                .filter_map(|c| <&Page>::try_from(c).ok())
                .map(count)
                .sum();
        }
    }

    /// Where `g` is: its bucket (read into `p`) and its place in it; `Err` if the bucket could
    /// not be read.
    fn find(&self, g: u64, p: &mut Page) -> Result<(u64, Option<usize>), ()> {
        let b = self.hash(g) & (self.buckets - 1);
        self.read(b, p).map_err(|_| ())?;
        let at = (0..count(p)).find(|&i| entry(p, i).0 == g);
        Ok((b, at))
    }

    /// The value of `g`.
    pub fn get(&self, g: u64) -> Option<u32> {
        let mut p = [0u8; PAGE];
        let (_, at) = self.find(g, &mut p).ok()?;
        Some(entry(&p, at?).1)
    }

    pub fn contains(&self, g: u64) -> bool {
        self.get(g).is_some()
    }

    /// Sets the value of `g`; its old value.
    pub fn insert(&mut self, g: u64, v: u32) -> Option<u32> {
        let mut p = [0u8; PAGE];
        loop {
            let Ok((b, at)) = self.find(g, &mut p) else {
                // The file gave no bucket back: go on in memory with what it still gives.
                self.move_to_memory();
                continue;
            };
            if let Some(i) = at {
                let old = entry(&p, i).1;
                set_entry(&mut p, i, g, v);
                self.write(b, &p);
                return Some(old);
            }
            let n = count(&p);
            if n < PER_PAGE {
                set_entry(&mut p, n, g, v);
                set_count(&mut p, n + 1);
                self.write(b, &p);
                self.len += 1;
                if self.len > GROW_AT * self.buckets as usize {
                    self.grow();
                }
                return None;
            }
            // This bucket is full: double the table and try again.
            self.grow();
        }
    }

    /// Forgets `g`; its value.
    pub fn remove(&mut self, g: u64) -> Option<u32> {
        let mut p = [0u8; PAGE];
        let (b, at) = self.find(g, &mut p).ok()?;
        let i = at?;
        let old = entry(&p, i).1;
        let last = count(&p) - 1;
        let (lg, lv) = entry(&p, last);
        set_entry(&mut p, i, lg, lv);
        set_count(&mut p, last);
        self.write(b, &p);
        self.len -= 1;
        Some(old)
    }

    /// Doubles the table: bucket `b`'s entries stay or move to `b + size` by the next bit of
    /// their hash.
    fn grow(&mut self) {
        let size = self.buckets;
        let mut p = [0u8; PAGE];
        for b in 0..size {
            if self.read(b, &mut p).is_err() {
                // Go on in memory with what the file still gives (this bucket lost).
                self.move_to_memory();
                if self.read(b, &mut p).is_err() {
                    p.fill(0);
                }
            }
            let (mut lo, mut hi) = ([0u8; PAGE], [0u8; PAGE]);
            let (mut nl, mut nh) = (0, 0);
            for i in 0..count(&p) {
                let (g, v) = entry(&p, i);
                if self.hash(g) & size == 0 {
                    set_entry(&mut lo, nl, g, v);
                    nl += 1;
                } else {
                    set_entry(&mut hi, nh, g, v);
                    nh += 1;
                }
            }
            set_count(&mut lo, nl);
            set_count(&mut hi, nh);
            // The upper half first: bucket `b` keeps its old entries until its new half is in.
            self.write(b + size, &hi);
            self.write(b, &lo);
        }
        self.buckets = size * 2;
        // Moved into memory part way: a bucket may have been counted in both halves.
        if !self.on_disk() {
            self.recount();
        }
    }

    /// Calls `f` with every entry, in no order. Buckets are read 16 at a time.
    pub fn for_each(&self, mut f: impl FnMut(u64, u32)) {
        let mut buf = vec![0u8; 16 * PAGE];
        let mut b = 0;
        while b < self.buckets {
            let n = (self.buckets - b).min(16) as usize;
            let bytes = &mut buf[..n * PAGE];
            let ok = match &self.pages {
                Pages::File(file) => file.read_exact_at(bytes, b * PAGE as u64).is_ok(),
                Pages::Memory(m) => {
                    let at = b as usize * PAGE;
                    bytes.copy_from_slice(&m[at..at + n * PAGE]);
                    true
                }
            };
            if ok {
                for page in bytes.chunks_exact(PAGE) {
                    let Ok(p) = <&Page>::try_from(page) else {
                        continue;
                    };
                    for i in 0..count(p) {
                        let (g, v) = entry(p, i);
                        f(g, v);
                    }
                }
            }
            b += n as u64;
        }
    }

    /// Tests: a file that takes no more writes, as a full disk would.
    #[cfg(test)]
    fn refuse_writes(&mut self) {
        if let Pages::File(f) = &self.pages {
            let path = format!("/proc/self/fd/{}", std::os::fd::AsRawFd::as_raw_fd(f));
            if let Ok(ro) = File::open(path) {
                self.pages = Pages::File(ro);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    /// The map agrees with a `HashMap` through inserts, overwrites and removals that make it
    /// grow many times, in a file and in memory, and after its file refuses writes.
    #[test]
    fn agrees_with_a_hash_map_through_growth_and_a_failing_file() {
        let dir = tempfile::tempdir().expect("a temporary directory");
        for on_file in [true, false] {
            let mut m = if on_file {
                GidMap::in_dir(dir.path())
            } else {
                GidMap::in_memory()
            };
            assert_eq!(m.on_disk(), on_file);
            let mut model: HashMap<u64, u32> = HashMap::new();
            let mut x = 0x9e37_79b9_7f4a_7c15u64;
            for step in 0..60_000u32 {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                // A small range of GIDs, so that overwrites and removals hit held ones.
                let g = x % 40_000;
                if step == 30_000 && on_file {
                    m.refuse_writes();
                }
                if x % 5 == 0 {
                    assert_eq!(m.remove(g), model.remove(&g), "step {step}");
                } else {
                    assert_eq!(m.insert(g, step), model.insert(g, step), "step {step}");
                }
                assert_eq!(m.len(), model.len());
            }
            if on_file {
                assert!(!m.on_disk(), "a refused write moves the map into memory");
            }
            for (g, v) in &model {
                assert_eq!(m.get(*g), Some(*v));
            }
            assert_eq!(m.get(1 << 40), None);
            let mut seen = HashMap::new();
            m.for_each(|g, v| {
                assert!(seen.insert(g, v).is_none(), "{g} listed twice");
            });
            assert_eq!(seen, model);
        }
    }

    /// A write refused part way through a doubling (where a full disk shows: only a doubling
    /// makes the file longer) loses nothing: the upper halves already written past the table come
    /// into memory with the rest. For every write of the doubling in turn.
    #[test]
    fn a_write_refused_while_growing_loses_nothing() {
        let dir = tempfile::tempdir().expect("a temporary directory");
        // Ten short of doubling 16 buckets: the 11th insert's write is followed by the doubling's
        // 32 writes (each bucket's upper half, then its lower).
        let fill = 16 * GROW_AT - 10;
        for fail_at in [5, 11, 12, 13, 14, 20, 27, 42, 43] {
            let mut m = GidMap::in_dir(dir.path());
            let mut model = HashMap::new();
            for g in 0..fill as u64 {
                m.insert(g * 7919, g as u32);
                model.insert(g * 7919, g as u32);
            }
            assert_eq!(m.buckets, 16);
            assert!(m.on_disk());
            m.writes_left = Some(fail_at);
            for g in fill as u64..fill as u64 + 40 {
                m.insert(g * 7919, g as u32);
                model.insert(g * 7919, g as u32);
            }
            assert!(!m.on_disk(), "write {fail_at} of the doubling was refused");
            assert_eq!(m.len(), model.len(), "write {fail_at}");
            for (g, v) in &model {
                assert_eq!(m.get(*g), Some(*v), "write {fail_at}: GID {g}");
            }
        }
    }

    /// GIDs that share their low bits still spread over the buckets: the table grows by its
    /// average, not by one crowded bucket.
    #[test]
    fn gids_alike_in_their_low_bits_do_not_crowd_one_bucket() {
        let mut m = GidMap::in_memory();
        for i in 0..20_000u64 {
            m.insert(i << 32, 1);
        }
        assert!(m.buckets <= 128, "{} buckets for 20 000 entries", m.buckets);
        assert_eq!(m.len(), 20_000);
    }
}
