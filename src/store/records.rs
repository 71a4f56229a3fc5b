//! Byte records kept out of the process's memory: the daemon's waiting queue keeps its entries
//! here in chunks of a thousand or so (in memory only a few chunks and a description of each),
//! and its stopped results keep a small fixed-size head per result in memory and their URIs,
//! options, paths and messages here.
//!
//! The backing is an unnamed file: `O_TMPFILE` in a directory the caller names (the download
//! directory), else in the system's temporary directory (there also a file unlinked as soon as
//! it is made), else memory. Records are appended through
//! a 64 KiB buffer; a record is read back with one `pread`, which the page cache answers for a
//! file this recent. These are synchronous calls of a few microseconds made while answering an
//! RPC call that needs the bytes at once; they never touch a download's data. A write that fails
//! (a full disk) leaves the file as it is and keeps every later record in memory: nothing is
//! lost, the store only stops saving memory.
//!
//! A record's place is a [`Loc`], an owned value: it is given by [`Records::put`] and ends in
//! exactly one [`Records::free`] or [`Records::take`], so the store knows how many of its bytes
//! are dead and rewrites itself (compaction) once they outnumber the live ones.
use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

/// Appended records are written to the file once this many bytes wait.
const FLUSH_AT: usize = 64 * 1024;
/// Dead bytes below this are never worth a compaction.
const COMPACT_MIN: u64 = 1 << 20;

/// Where one record is. Not `Clone`: it is handed back exactly once.
#[derive(Debug, PartialEq, Eq)]
#[must_use = "a record's place must be freed or taken"]
pub struct Loc {
    off: u64,
    len: u64,
}

impl Loc {
    /// The record's length in bytes.
    pub fn len(&self) -> u64 {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

/// Where one record is, as a plain position: what a [`Frozen`] copy of the store is read by.
/// Unlike a [`Loc`] it owns nothing; it stays right for the copy it was taken with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Place {
    off: u64,
    len: u64,
}

/// The store's bytes as they were when [`Records::freeze`] was called, readable on another
/// thread while the store goes on: records are only ever appended to a file, and a compaction
/// writes a new file, so the bytes a copy of the descriptor and of the write buffer see do not
/// change under it.
#[derive(Debug)]
pub struct Frozen {
    file: Option<File>,
    flushed: u64,
    tail: Vec<u8>,
}

impl Frozen {
    /// A reader of this copy's records, through one window of the file's bytes.
    pub fn reader(&self) -> Reader<'_> {
        Reader {
            bytes: Bytes {
                file: self.file.as_ref(),
                flushed: self.flushed,
                tail: &self.tail,
            },
            window: Window::default(),
        }
    }
}

/// Reads records of a [`Frozen`] store; records read in the order they lie cost one read per
/// window, not one each.
pub struct Reader<'a> {
    bytes: Bytes<'a>,
    window: Window,
}

impl Reader<'_> {
    /// The record at `place`.
    pub fn read(&mut self, place: Place) -> io::Result<&[u8]> {
        self.window.read(&self.bytes, place)
    }
}

/// A store's bytes: `[0, flushed)` in the file, the rest in `tail`.
#[derive(Clone, Copy)]
struct Bytes<'a> {
    file: Option<&'a File>,
    flushed: u64,
    tail: &'a [u8],
}

impl<'a> Bytes<'a> {
    /// The record at `place` from the write buffer, if it is there (not yet in the file; a
    /// record never spans the two).
    fn in_tail(&self, place: Place) -> Option<io::Result<&'a [u8]>> {
        let at = usize::try_from(place.off.checked_sub(self.flushed)?).ok()?;
        let len = usize::try_from(place.len).ok()?;
        Some(
            self.tail
                .get(at..at.saturating_add(len))
                .ok_or_else(|| io::Error::other("record past the store's end")),
        )
    }

    fn file(&self) -> io::Result<&'a File> {
        self.file
            .ok_or_else(|| io::Error::other("record store without its file"))
    }
}

/// An append-only store of records; see the module's documentation.
#[derive(Debug)]
pub struct Records {
    /// The backing file, if any: bytes `[0, flushed)` are in it.
    file: Option<File>,
    /// A write to the file failed: later records stay in `tail`.
    stuck: bool,
    flushed: u64,
    /// Bytes `[flushed, flushed + tail.len())`.
    tail: Vec<u8>,
    live: u64,
    dead: u64,
    /// Where a compaction makes its new file.
    dir: Option<PathBuf>,
}

impl Records {
    /// A store in memory only.
    pub fn in_memory() -> Records {
        Records {
            file: None,
            stuck: false,
            flushed: 0,
            tail: Vec::new(),
            live: 0,
            dead: 0,
            dir: None,
        }
    }

    /// A store backed by an unnamed file near `dir` (see [`unnamed_file_near`]), else in
    /// memory.
    pub fn in_dir(dir: &Path) -> Records {
        Records::new_file(Some(dir)).unwrap_or_else(Records::in_memory)
    }

    /// Whether records go to a file (false: in memory, by choice or since a write failed).
    pub fn on_disk(&self) -> bool {
        self.file.is_some() && !self.stuck
    }

    /// Bytes the store holds, dead ones included.
    pub fn stored_bytes(&self) -> u64 {
        self.flushed + self.tail.len() as u64
    }

    /// Bytes held in memory (the write buffer, or everything for a store in memory).
    pub fn memory_bytes(&self) -> usize {
        self.tail.capacity()
    }

    /// Stores `bytes` as a new record.
    pub fn put(&mut self, bytes: &[u8]) -> Loc {
        let loc = Loc {
            off: self.flushed + self.tail.len() as u64,
            len: bytes.len() as u64,
        };
        self.tail.extend_from_slice(bytes);
        self.live += loc.len;
        if self.tail.len() >= FLUSH_AT {
            self.flush();
        }
        loc
    }

    /// Writes the buffered records to the file (if there is one that still takes writes).
    fn flush(&mut self) {
        let Some(file) = self.file.as_ref().filter(|_| !self.stuck) else {
            return;
        };
        match file.write_all_at(&self.tail, self.flushed) {
            Ok(()) => {
                self.flushed += self.tail.len() as u64;
                self.tail.clear();
                if self.tail.capacity() > 2 * FLUSH_AT {
                    self.tail.shrink_to(FLUSH_AT);
                }
            }
            // The file keeps what it has; this and every later record stay in memory.
            Err(_) => self.stuck = true,
        }
    }

    /// The record at `loc`.
    pub fn get(&self, loc: &Loc) -> io::Result<Vec<u8>> {
        let bytes = self.bytes();
        if let Some(bytes) = bytes.in_tail(Records::place(loc)) {
            return bytes.map(<[u8]>::to_vec);
        }
        let len = usize::try_from(loc.len).map_err(io::Error::other)?;
        let mut out = vec![0u8; len];
        bytes.file()?.read_exact_at(&mut out, loc.off)?;
        Ok(out)
    }

    fn bytes(&self) -> Bytes<'_> {
        Bytes {
            file: self.file.as_ref(),
            flushed: self.flushed,
            tail: &self.tail,
        }
    }

    /// The plain position of the record at `loc`, for reading it from a [`Frozen`] copy.
    pub fn place(loc: &Loc) -> Place {
        Place {
            off: loc.off,
            len: loc.len,
        }
    }

    /// A copy of the store's bytes as they are now (a second descriptor of its file and a copy
    /// of the write buffer, at most [`FLUSH_AT`] bytes unless writes to the file failed).
    pub fn freeze(&self) -> io::Result<Frozen> {
        Ok(Frozen {
            file: self.file.as_ref().map(File::try_clone).transpose()?,
            flushed: self.flushed,
            tail: self.tail.clone(),
        })
    }

    /// The record at `loc` is no longer needed.
    pub fn free(&mut self, loc: Loc) {
        self.live -= loc.len;
        self.dead += loc.len;
    }

    /// The record at `loc`, freed.
    pub fn take(&mut self, loc: Loc) -> io::Result<Vec<u8>> {
        let bytes = self.get(&loc);
        self.free(loc);
        bytes
    }

    /// Replaces the record at `loc` with `bytes`.
    pub fn replace(&mut self, loc: Loc, bytes: &[u8]) -> Loc {
        self.free(loc);
        self.put(bytes)
    }

    /// Whether dead bytes outnumber live ones enough for [`Records::compact`] to pay.
    pub fn wants_compaction(&self) -> bool {
        self.dead >= COMPACT_MIN && self.dead > self.live
    }

    /// Rewrites the store with only the records at `locs` (every live one), which are updated
    /// to their new places. The records are read in the order they lie, through a 1 MiB window,
    /// not one read each. A store on disk that can make no new file is left as it is (it keeps
    /// working; its dead bytes stay until a later try succeeds). A record that cannot be read
    /// back becomes an empty one.
    pub fn compact<'a>(&mut self, locs: impl Iterator<Item = &'a mut Loc>) {
        let mut fresh = if self.file.is_some() {
            match Records::new_file(self.dir.as_deref()) {
                Some(r) => r,
                None => return,
            }
        } else {
            Records::in_memory()
        };
        let mut locs: Vec<&mut Loc> = locs.collect();
        locs.sort_unstable_by_key(|l| l.off);
        let mut window = Window::default();
        let bytes = self.bytes();
        for loc in locs {
            let record = window.read(&bytes, Records::place(loc)).unwrap_or_default();
            *loc = fresh.put(record);
        }
        fresh.flush();
        *self = fresh;
    }

    /// A store in a new unnamed file: in `dir` if given, else (or failing that) in the system's
    /// temporary directory.
    fn new_file(dir: Option<&Path>) -> Option<Records> {
        let file = match dir {
            Some(d) => unnamed_file_near(d).ok()?,
            None => unnamed_file(&std::env::temp_dir(), false).ok()?,
        };
        Some(Records {
            file: Some(file),
            // Later compactions try the directory asked for first again.
            dir: Some(dir.map_or_else(std::env::temp_dir, Path::to_path_buf)),
            ..Records::in_memory()
        })
    }

    /// Tests: loses every record written to the file so far, as a failing disk would.
    #[cfg(test)]
    pub fn damage(&mut self) {
        self.flush();
        if let Some(f) = self.file.as_ref() {
            f.set_len(0).expect("cut");
        }
    }

    /// Checks the store's count of live bytes against `locs` (debug checks and tests).
    pub fn check<'a>(&self, locs: impl Iterator<Item = &'a Loc>) {
        let sum: u64 = locs.map(|l| l.len).sum();
        assert_eq!(
            sum, self.live,
            "the record store's live bytes are out of step"
        );
    }
}

/// A file with no name for data kept for `dir`: `O_TMPFILE` in `dir`, else in the nearest
/// ancestor of it that exists (a download directory is made only by the first download; the
/// system's temporary directory is often memory, tmpfs, which the kernel cannot drop), else in
/// the system's temporary directory (there also a file unlinked as soon as it is made).
pub(crate) fn unnamed_file_near(dir: &Path) -> io::Result<File> {
    let here = Path::new(".");
    for d in dir.ancestors() {
        let d = if d.as_os_str().is_empty() { here } else { d };
        if d.is_dir() {
            if let Ok(f) = unnamed_file(d, true) {
                return Ok(f);
            }
            break;
        }
    }
    unnamed_file(&std::env::temp_dir(), false)
}

/// A file with no name in `dir`: `O_TMPFILE` where the filesystem has it, else, unless
/// `only_tmpfile` (asked for in a user's download directory, where no name may appear), a new
/// file removed at once.
pub(crate) fn unnamed_file(dir: &Path, only_tmpfile: bool) -> io::Result<File> {
    let mut opts = OpenOptions::new();
    opts.read(true).write(true).mode(0o600);
    let tmpfile = opts.clone().custom_flags(libc::O_TMPFILE).open(dir);
    if tmpfile.is_ok() || only_tmpfile {
        return tmpfile;
    }
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    let seed = (u64::from(std::process::id()) << 32) | u64::from(nanos);
    for n in 0..16u64 {
        let path = dir.join(format!(".ringdl-records-{:x}", seed.wrapping_add(n)));
        match opts.clone().create_new(true).open(&path) {
            Ok(f) => return std::fs::remove_file(&path).map(|()| f),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        }
    }
    Err(io::Error::other("no unused name for a record file"))
}

/// Reads records in the order they lie in a store, through one buffer of the file's bytes.
#[derive(Default)]
struct Window {
    start: u64,
    bytes: Vec<u8>,
    /// Bytes read from the file so far (tests).
    read: u64,
}

impl Window {
    const SIZE: u64 = 1 << 20;

    fn read<'w>(&'w mut self, r: &Bytes<'w>, loc: Place) -> io::Result<&'w [u8]> {
        let end = loc.off + loc.len;
        if let Some(bytes) = r.in_tail(loc) {
            return bytes;
        }
        if end > r.flushed {
            return Err(io::Error::other("record past the store's end"));
        }
        let window_end = self.start + self.bytes.len() as u64;
        let inside = loc.off >= self.start && end <= window_end;
        if !inside {
            // Read ahead only going on past the window (records read in the order they lie);
            // a record behind it or far ahead (a queue whose order is not the file's) is read
            // alone, or every such record would cost a whole window.
            let onward =
                loc.off >= self.start && loc.off <= window_end.saturating_add(Window::SIZE);
            let ahead = if onward {
                Window::SIZE.min(r.flushed - loc.off)
            } else {
                0
            };
            let want = (end - loc.off).max(ahead);
            self.bytes
                .resize(usize::try_from(want).map_err(io::Error::other)?, 0);
            self.start = loc.off;
            if let Err(e) = r
                .file()
                .and_then(|f| f.read_exact_at(&mut self.bytes, loc.off))
            {
                // Nothing of a failed read may be taken for the file's bytes later.
                self.bytes.clear();
                return Err(e);
            }
            self.read += want;
        }
        let from = usize::try_from(loc.off - self.start).map_err(io::Error::other)?;
        let len = usize::try_from(loc.len).map_err(io::Error::other)?;
        Ok(&self.bytes[from..from + len])
    }
}

/// Writes the fields of a record.
#[derive(Debug, Default)]
pub struct Enc(pub Vec<u8>);

impl Enc {
    pub fn u64(&mut self, mut v: u64) -> &mut Self {
        while v >= 0x80 {
            self.0.push((v as u8) | 0x80);
            v >>= 7;
        }
        self.0.push(v as u8);
        self
    }

    pub fn str(&mut self, s: &str) -> &mut Self {
        self.bytes(s.as_bytes())
    }

    pub fn bytes(&mut self, b: &[u8]) -> &mut Self {
        self.u64(b.len() as u64);
        self.0.extend_from_slice(b);
        self
    }
}

/// Reads the fields of a record in the order [`Enc`] wrote them; `None` past its end.
#[derive(Debug)]
pub struct Dec<'a>(pub &'a [u8]);

impl<'a> Dec<'a> {
    pub fn u64(&mut self) -> Option<u64> {
        let mut v = 0u64;
        for shift in (0..64).step_by(7) {
            let (&b, rest) = self.0.split_first()?;
            self.0 = rest;
            v |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return Some(v);
            }
        }
        None
    }

    pub fn str(&mut self) -> Option<&'a str> {
        std::str::from_utf8(self.bytes()?).ok()
    }

    pub fn bytes(&mut self) -> Option<&'a [u8]> {
        let n = usize::try_from(self.u64()?).ok()?;
        if n > self.0.len() {
            return None;
        }
        let (s, rest) = self.0.split_at(n);
        self.0 = rest;
        Some(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A download directory not made yet: the record file is made, with no name, in the
    /// nearest directory above it that exists (on its file system, not the temporary one).
    #[test]
    fn a_store_for_a_directory_not_made_yet_lives_beside_it() {
        use std::os::unix::fs::MetadataExt;
        let dir = tempfile::tempdir().expect("a temporary directory");
        let later = dir.path().join("not/made/yet");
        let r = Records::in_dir(&later);
        assert!(r.on_disk());
        let f = r.file.as_ref().expect("a file");
        let made_in = std::fs::read_link(format!(
            "/proc/self/fd/{}",
            std::os::fd::AsRawFd::as_raw_fd(f)
        ))
        .expect("its path");
        assert!(
            made_in.starts_with(dir.path()),
            "made in {}, not beside {}",
            made_in.display(),
            dir.path().display()
        );
        assert_eq!(
            f.metadata().expect("stat").dev(),
            dir.path().metadata().expect("stat").dev()
        );
        assert_eq!(
            std::fs::read_dir(dir.path()).expect("listed").count(),
            0,
            "a name appeared"
        );
        assert!(!later.exists());
    }

    fn fill(r: &mut Records, n: usize) -> Vec<(Loc, Vec<u8>)> {
        (0..n)
            .map(|i| {
                let bytes: Vec<u8> = format!("record {i} {}", "x".repeat(i % 300)).into_bytes();
                (r.put(&bytes), bytes)
            })
            .collect()
    }

    fn agrees(r: &Records, held: &[(Loc, Vec<u8>)]) {
        for (loc, bytes) in held {
            assert_eq!(&r.get(loc).expect("a record reads back"), bytes);
        }
        r.check(held.iter().map(|(l, _)| l));
    }

    #[test]
    fn records_read_back_from_the_file_and_the_buffer_and_survive_compaction() {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let mut r = Records::in_dir(dir.path());
        assert!(r.on_disk());
        // Nothing with a name is left in the directory.
        assert_eq!(std::fs::read_dir(dir.path()).expect("listed").count(), 0);
        let mut held = fill(&mut r, 20_000);
        assert!(r.flushed > 0, "most records went to the file");
        assert!(r.memory_bytes() <= 2 * FLUSH_AT);
        agrees(&r, &held);
        // Free three in four: the store then wants to drop them.
        let mut kept = Vec::new();
        for (i, (loc, bytes)) in held.drain(..).enumerate() {
            if i % 4 == 0 {
                kept.push((loc, bytes));
            } else if i % 4 == 1 {
                assert_eq!(r.take(loc).expect("taken"), bytes);
            } else {
                r.free(loc);
            }
        }
        assert!(r.wants_compaction());
        let before = r.stored_bytes();
        r.compact(kept.iter_mut().map(|(l, _)| l));
        assert!(!r.wants_compaction());
        assert!(r.stored_bytes() < before / 3);
        assert!(r.on_disk());
        agrees(&r, &kept);
        // Replacing moves a record and keeps the count.
        let (loc, _) = kept.pop().expect("one kept");
        let loc = r.replace(loc, b"new");
        assert_eq!(r.get(&loc).expect("read"), b"new");
        kept.push((loc, b"new".to_vec()));
        agrees(&r, &kept);
    }

    /// Records bigger than the compaction's read window, and a compaction whose directory has
    /// gone: it moves to the temporary directory, still on disk.
    #[test]
    fn compaction_reads_big_records_and_finds_another_directory() {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let sub = dir.path().join("gone");
        std::fs::create_dir(&sub).expect("made");
        let mut r = Records::in_dir(&sub);
        assert!(r.on_disk());
        let mut held = Vec::new();
        for i in 0..40usize {
            let bytes = vec![i as u8; if i % 10 == 3 { 1_500_000 } else { 70_000 + i }];
            let loc = r.put(&bytes);
            if i % 2 == 0 {
                held.push((loc, bytes));
            } else {
                r.free(loc);
            }
        }
        std::fs::remove_dir(&sub).expect("removed");
        assert!(r.wants_compaction());
        r.compact(held.iter_mut().map(|(l, _)| l));
        assert!(r.on_disk(), "compaction fell back to memory");
        agrees(&r, &held);
    }

    #[test]
    fn a_store_whose_file_refuses_writes_keeps_every_record_in_memory() {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let path = dir.path().join("read-only");
        std::fs::write(&path, b"").expect("made");
        let mut r = Records {
            file: Some(File::open(&path).expect("opened for reading only")),
            dir: Some(dir.path().to_path_buf()),
            ..Records::in_memory()
        };
        let held = fill(&mut r, 2_000);
        assert!(!r.on_disk(), "the failed write was seen");
        assert_eq!(r.flushed, 0);
        agrees(&r, &held);
        let mut held = held;
        for (loc, _) in held.drain(1..) {
            r.free(loc);
        }
        r.compact(held.iter_mut().map(|(l, _)| l));
        agrees(&r, &held);
    }

    #[test]
    fn a_store_in_memory_and_one_in_a_missing_directory_work_alike() {
        for mut r in [
            Records::in_memory(),
            Records::in_dir(Path::new("/nonexistent/ringdl/dir")),
        ] {
            let held = fill(&mut r, 1_000);
            agrees(&r, &held);
        }
    }

    /// A frozen copy reads back the records it was taken with, after the store has gone on
    /// appending, freeing and compacting (into a new file, or in memory), from another thread.
    #[test]
    fn a_frozen_copy_keeps_its_records_through_later_changes() {
        let dir = tempfile::tempdir().expect("a temporary directory");
        for mut r in [Records::in_dir(dir.path()), Records::in_memory()] {
            let held = fill(&mut r, 20_000);
            let frozen = r.freeze().expect("frozen");
            let places: Vec<(Place, Vec<u8>)> = held
                .iter()
                .map(|(l, b)| (Records::place(l), b.clone()))
                .collect();
            // Everything freed, new records written, the store compacted to them alone.
            for (loc, _) in held {
                r.free(loc);
            }
            let mut fresh = fill(&mut r, 3_000);
            assert!(r.wants_compaction());
            r.compact(fresh.iter_mut().map(|(l, _)| l));
            agrees(&r, &fresh);
            let read = std::thread::spawn(move || {
                let mut reader = frozen.reader();
                for (place, bytes) in &places {
                    assert_eq!(reader.read(*place).expect("read back"), &bytes[..]);
                }
                // Out of order too, through the window.
                for (place, bytes) in places.iter().rev().step_by(7) {
                    assert_eq!(reader.read(*place).expect("read back"), &bytes[..]);
                }
            });
            read.join().expect("the copy read back on another thread");
        }
    }

    /// Records read against the order they lie in (a queue whose entries went to its front)
    /// cost about their own bytes, not a read-ahead window each; in order, a window serves many.
    #[test]
    fn a_frozen_copy_read_out_of_order_reads_only_what_it_needs() {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let mut r = Records::in_dir(dir.path());
        let held = fill(&mut r, 20_000);
        let total: u64 = held.iter().map(|(l, _)| l.len).sum();
        let frozen = r.freeze().expect("frozen");
        let mut reader = frozen.reader();
        for (loc, bytes) in held.iter().rev() {
            assert_eq!(reader.read(Records::place(loc)).expect("read"), &bytes[..]);
        }
        assert!(
            reader.window.read <= 2 * total,
            "{} bytes read for {total}",
            reader.window.read
        );
        let mut reader = frozen.reader();
        for (loc, bytes) in &held {
            assert_eq!(reader.read(Records::place(loc)).expect("read"), &bytes[..]);
        }
        assert!(
            reader.window.read <= total + Window::SIZE,
            "{}",
            reader.window.read
        );
        let mut reader = frozen.reader();
        for (loc, bytes) in held.iter().step_by(97).chain(held.iter().rev().step_by(89)) {
            assert_eq!(reader.read(Records::place(loc)).expect("read"), &bytes[..]);
        }
        for (loc, _) in held {
            r.free(loc);
        }
    }

    #[test]
    fn fields_read_back_in_order_and_a_cut_record_reads_as_none() {
        let mut e = Enc::default();
        e.u64(0).u64(127).u64(128).u64(u64::MAX).str("").str("é\tx");
        let mut d = Dec(&e.0);
        assert_eq!(d.u64(), Some(0));
        assert_eq!(d.u64(), Some(127));
        assert_eq!(d.u64(), Some(128));
        assert_eq!(d.u64(), Some(u64::MAX));
        assert_eq!(d.str(), Some(""));
        assert_eq!(d.str(), Some("é\tx"));
        assert_eq!(d.u64(), None);
        for cut in 0..e.0.len() {
            let mut d = Dec(&e.0[..cut]);
            let all = (|| {
                for _ in 0..4 {
                    d.u64()?;
                }
                d.str()?;
                d.str()
            })();
            assert_eq!(all, None, "cut at {cut}");
        }
    }
}
