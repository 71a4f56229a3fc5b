//! Pieces verified before they are claimed: a download's byte space cut into pieces of one length,
//! each with the digest it must have (a Metalink's `<pieces>`, a torrent's piece hashes). A piece's
//! bytes are hashed as their blocks are issued for writing, in order; a piece whose bytes came out
//! of order (or were written over) is read back from disk once its writes are done. Only a piece
//! whose digest matched and whose writes have all completed counts as claimed; one that failed is
//! handed back, with the sources that sent its bytes. Nothing here submits I/O.
use crate::plan::{RangeSet, ALIGN};
use crate::store::checksum::{Hasher, Kind};
use std::collections::BTreeMap;
use std::ops::Range;

/// The digests a download's pieces must have: every piece `length` bytes but the last.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PieceHashes {
    pub length: u64,
    pub kind: Kind,
    pub digests: Vec<Vec<u8>>,
}

impl PieceHashes {
    /// Whether these digests describe a `total`-byte download: one per piece, each of its kind's
    /// length. The error says what does not fit.
    pub fn check(&self, total: u64) -> Result<(), String> {
        if self.length == 0 {
            return Err("a piece length of 0".to_string());
        }
        let want = total.div_ceil(self.length);
        if want != self.digests.len() as u64 {
            return Err(format!(
                "{} piece digests for {total} bytes in pieces of {} (expected {want})",
                self.digests.len(),
                self.length
            ));
        }
        let len = self.kind.digest_len();
        if let Some(i) = self.digests.iter().position(|d| d.len() != len) {
            return Err(format!(
                "piece digest {i} is not a {} digest",
                self.kind.name()
            ));
        }
        Ok(())
    }
}

/// What a check decided about a piece.
#[derive(Debug, PartialEq, Eq)]
pub enum Verdict {
    Good(usize),
    /// Its bytes are not the piece: `sources` sent them (several when it was fetched in parts).
    Bad {
        piece: usize,
        range: Range<u64>,
        sources: Vec<usize>,
        expected: Vec<u8>,
        actual: Vec<u8>,
    },
}

/// A piece whose bytes are being written.
struct Progress {
    hasher: Hasher,
    /// The piece's bytes before this offset are hashed.
    at: u64,
    /// Writes issued into it and not completed yet.
    inflight: u32,
    /// A read-back of it is in flight.
    reading: bool,
    /// Counts the piece's restarts (bytes written over what was hashed): a read-back of an earlier
    /// one brings bytes that may not be on disk any more, and is not hashed.
    epoch: u32,
    /// Written over while earlier writes of the same bytes may still be in flight: which lands
    /// last is not known, so the piece is hashed only from disk, once its writes are done.
    from_disk: bool,
    sources: Vec<usize>,
}

/// A read-back a piece needs: its bytes from `from` to its end, at the piece's `epoch`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReadBack {
    pub piece: usize,
    pub from: u64,
    pub end: u64,
    pub epoch: u32,
}

/// The pieces of one download.
pub struct Pieces {
    hashes: std::sync::Arc<PieceHashes>,
    total: u64,
    verified: Vec<u64>,
    count_verified: usize,
    /// Pieces no file wanted holds a byte of (files left unselected): never opened, checked or
    /// claimed, and nothing waits for them.
    excused: Vec<u64>,
    count_excused: usize,
    open: BTreeMap<usize, Progress>,
    /// How often each piece that failed has failed.
    failed: BTreeMap<usize, u32>,
}

impl Pieces {
    /// The pieces of a `total`-byte download (the digests were checked against it).
    pub fn new(hashes: std::sync::Arc<PieceHashes>, total: u64) -> Pieces {
        let n = hashes.digests.len();
        Pieces {
            hashes,
            total,
            verified: vec![0; n.div_ceil(64)],
            count_verified: 0,
            excused: vec![0; n.div_ceil(64)],
            count_excused: 0,
            open: BTreeMap::new(),
            failed: BTreeMap::new(),
        }
    }

    pub fn length(&self) -> u64 {
        self.hashes.length
    }

    pub fn count(&self) -> usize {
        self.hashes.digests.len()
    }

    /// The bytes of piece `i`.
    pub fn range(&self, i: usize) -> Range<u64> {
        let start = i as u64 * self.hashes.length;
        start..(start + self.hashes.length).min(self.total)
    }

    /// The pieces the bytes `r` touch.
    /// The pieces that hold bytes of `r` (excused ones among them: callers skip those).
    fn touching(&self, r: &Range<u64>) -> Range<usize> {
        let r = r.start..r.end.min(self.total);
        if r.is_empty() {
            return 0..0;
        }
        let len = self.hashes.length;
        (r.start / len) as usize..r.end.div_ceil(len) as usize
    }

    fn is_excused(&self, i: usize) -> bool {
        self.excused
            .get(i / 64)
            .is_some_and(|w| w & (1 << (i % 64)) != 0)
    }

    pub fn is_verified(&self, i: usize) -> bool {
        self.verified
            .get(i / 64)
            .is_some_and(|w| w & (1 << (i % 64)) != 0)
    }

    fn set_verified(&mut self, i: usize, yes: bool) {
        let Some(w) = self.verified.get_mut(i / 64) else {
            return;
        };
        let bit = 1 << (i % 64);
        match (*w & bit != 0, yes) {
            (false, true) => self.count_verified += 1,
            (true, false) => self.count_verified -= 1,
            _ => {}
        }
        if yes {
            *w |= bit;
        } else {
            *w &= !bit;
        }
    }

    /// Every piece is verified.
    /// Every piece is verified, or excused.
    pub fn all_verified(&self) -> bool {
        self.count_verified + self.count_excused == self.count()
    }

    /// Excuses every piece `needed` says no file wanted holds a byte of: it is never opened,
    /// checked or claimed (bytes of it written to fill a neighbour's 16 KiB block stay
    /// unclaimed), and the download is complete without it.
    pub fn excuse(&mut self, needed: impl Fn(Range<u64>) -> bool) {
        for i in 0..self.count() {
            if self.is_excused(i) || needed(self.range(i)) {
                continue;
            }
            self.open.remove(&i);
            self.set_verified(i, false);
            if let Some(w) = self.excused.get_mut(i / 64) {
                *w |= 1 << (i % 64);
                self.count_excused += 1;
            }
        }
    }

    /// Pieces wholly inside `done` (a control file's claims, which are verified pieces) count as
    /// verified, as aria2 trusts them; nothing else does.
    pub fn trust(&mut self, done: &RangeSet) {
        self.open.clear();
        for i in 0..self.count() {
            let yes = done.covers(self.range(i)) && !self.is_excused(i);
            self.set_verified(i, yes);
        }
    }

    /// Forgets everything: the download starts over.
    pub fn reset(&mut self) {
        self.open.clear();
        self.verified.iter_mut().for_each(|w| *w = 0);
        self.count_verified = 0;
    }

    fn fresh(&self, i: usize, epoch: u32) -> Progress {
        Progress {
            hasher: Hasher::new(self.hashes.kind),
            at: self.range(i).start,
            inflight: 0,
            reading: false,
            epoch,
            from_disk: false,
            sources: Vec::new(),
        }
    }

    /// `data`, bound for offset `off`, is being written, sent by `source`: hashed where it
    /// continues its pieces' hashes. Bytes written over a piece's hashed (or verified) bytes
    /// restart that piece, which is then read back from disk once its writes are done.
    pub fn issued(&mut self, off: u64, data: &[u8], source: Option<usize>) {
        let end = off + data.len() as u64;
        for i in self.touching(&(off..end)) {
            if self.is_excused(i) {
                continue;
            }
            let r = self.range(i);
            let (a, b) = (off.max(r.start), end.min(r.end));
            if self.is_verified(i) {
                self.set_verified(i, false);
                let p = self.fresh(i, 0);
                self.open.insert(i, p);
            }
            if !self.open.contains_key(&i) {
                let p = self.fresh(i, 0);
                self.open.insert(i, p);
            }
            let kind = self.hashes.kind;
            let Some(p) = self.open.get_mut(&i) else {
                continue;
            };
            if a < p.at || p.reading {
                // Written over: what was hashed may not be what the disk will hold.
                p.hasher = Hasher::new(kind);
                p.at = r.start;
                p.epoch = p.epoch.wrapping_add(1);
                p.reading = false;
                p.from_disk = true;
            }
            p.inflight += 1;
            if let Some(s) = source.filter(|s| !p.sources.contains(s)) {
                p.sources.push(s);
            }
            if a == p.at && !p.from_disk {
                let from = (a - off) as usize;
                let to = (b - off) as usize;
                p.hasher.update(&data[from..to]);
                p.at = b;
            }
        }
    }

    /// The write of the bytes `r` (issued through [`Pieces::issued`]) completed, or ended without
    /// landing: `written` says which bytes are on disk now. Returns the pieces it decided.
    pub fn write_done(&mut self, r: Range<u64>, written: &RangeSet) -> Vec<Verdict> {
        let mut out = Vec::new();
        for i in self.touching(&r) {
            if self.is_excused(i) {
                continue;
            }
            if let Some(p) = self.open.get_mut(&i) {
                p.inflight = p.inflight.saturating_sub(1);
            }
            if let Some(v) = self.settle(i, written) {
                out.push(v);
            }
        }
        out
    }

    /// Decides piece `i` if it can be: hashed to its end, wholly on disk, nothing in flight.
    fn settle(&mut self, i: usize, written: &RangeSet) -> Option<Verdict> {
        let r = self.range(i);
        let p = self.open.get(&i)?;
        if p.inflight > 0 || p.reading || p.at < r.end || !written.covers(r.clone()) {
            return None;
        }
        let p = self.open.remove(&i)?;
        let actual = p.hasher.finish();
        let expected = self.hashes.digests.get(i)?;
        if actual == *expected {
            self.set_verified(i, true);
            Some(Verdict::Good(i))
        } else {
            Some(Verdict::Bad {
                piece: i,
                range: r,
                sources: p.sources,
                expected: expected.clone(),
                actual,
            })
        }
    }

    /// The next piece that must be read back: wholly on disk, nothing in flight on it, not hashed
    /// to its end. It is marked as being read.
    pub fn next_read(&mut self, written: &RangeSet) -> Option<ReadBack> {
        let ends: Vec<(usize, Range<u64>)> = self
            .open
            .iter()
            .filter(|(_, p)| p.inflight == 0 && !p.reading)
            .map(|(&i, _)| (i, self.range(i)))
            .filter(|(_, r)| written.covers(r.clone()))
            .collect();
        for (i, r) in ends {
            let Some(p) = self.open.get_mut(&i) else {
                continue;
            };
            if p.at < r.end {
                p.reading = true;
                return Some(ReadBack {
                    piece: i,
                    from: p.at,
                    end: r.end,
                    epoch: p.epoch,
                });
            }
        }
        None
    }

    /// Every piece wholly in `written` that is neither verified nor being written is to be read
    /// back from its start (bytes found on disk and not trusted).
    pub fn open_unverified(&mut self, written: &RangeSet) {
        for i in 0..self.count() {
            let unverified = !self.is_verified(i) && !self.is_excused(i);
            if unverified && !self.open.contains_key(&i) && written.covers(self.range(i)) {
                let mut p = self.fresh(i, 0);
                p.from_disk = true;
                self.open.insert(i, p);
            }
        }
    }

    /// Some piece waits only for a read-back (see [`Pieces::next_read`]).
    pub fn wants_read(&self, written: &RangeSet) -> bool {
        self.open.iter().any(|(&i, p)| {
            let r = self.range(i);
            p.inflight == 0 && !p.reading && p.at < r.end && written.covers(r)
        })
    }

    /// A read-back of piece `rb.piece` brought `data` from offset `at` (`None`: it failed, and the
    /// piece is read again later). Returns the verdict once the piece is hashed to its end.
    pub fn read_back(
        &mut self,
        rb: ReadBack,
        at: u64,
        data: Option<&[u8]>,
        written: &RangeSet,
    ) -> Option<Verdict> {
        let p = self.open.get_mut(&rb.piece)?;
        if p.epoch != rb.epoch || !p.reading {
            // Written over meanwhile: the bytes read may not be on disk any more.
            return None;
        }
        p.reading = false;
        let data = data?;
        if at != p.at {
            return None;
        }
        let n = (data.len() as u64).min(rb.end - at) as usize;
        p.hasher.update(&data[..n]);
        p.at += n as u64;
        self.settle(rb.piece, written)
    }

    /// The bytes of `written` that verified pieces hold: what may be claimed. Where pieces do not
    /// end on [`ALIGN`] boundaries, a run of verified pieces is claimed only from the first
    /// boundary in it to the last: a piece fetched again is fetched in whole 16 KiB blocks
    /// (`Plan::reopen`), and the bytes of those blocks outside it, written over meanwhile, must
    /// never be claimed by a control file already on disk.
    pub fn claims(&self, written: &RangeSet) -> RangeSet {
        let mut runs = RangeSet::new();
        for r in written.ranges() {
            for i in self.touching(r) {
                let p = self.range(i);
                if self.is_verified(i) && r.start <= p.start && p.end <= r.end {
                    runs.insert(p);
                }
            }
        }
        let mut out = RangeSet::new();
        for r in runs.ranges() {
            let start = r.start.div_ceil(ALIGN) * ALIGN;
            let end = if r.end == self.total {
                r.end
            } else {
                r.end / ALIGN * ALIGN
            };
            if start < end {
                out.insert(start..end);
            }
        }
        out
    }

    /// The bytes to fetch again for piece `i`, which failed: whole [`ALIGN`] blocks, so that
    /// every write stays where `O_DIRECT` can write, and none before `keep` (bytes found on
    /// disk, a user's, which nothing fetched may write over: if they are what is wrong, the
    /// piece keeps failing and the download ends).
    pub fn refetch(&self, i: usize, keep: u64) -> Range<u64> {
        let r = self.range(i);
        let end = (r.end.div_ceil(ALIGN) * ALIGN).min(self.total);
        let start = (r.start / ALIGN * ALIGN)
            .max(keep.div_ceil(ALIGN) * ALIGN)
            .min(end);
        start..end
    }

    /// How many pieces are verified, and where the open ones stand (for messages).
    pub fn state(&self) -> String {
        let open: Vec<String> = self
            .open
            .iter()
            .map(|(i, p)| {
                format!(
                    "{i}: at {}, {} writes, reading {}",
                    p.at, p.inflight, p.reading
                )
            })
            .collect();
        format!(
            "{} of {} verified; open {open:?}",
            self.count_verified,
            self.count()
        )
    }

    /// Piece `i` failed: it starts again from nothing. How often it has failed now.
    pub fn forget(&mut self, i: usize) -> u32 {
        self.open.remove(&i);
        self.set_verified(i, false);
        let n = self.failed.entry(i).or_insert(0);
        *n += 1;
        *n
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    fn digest(kind: Kind, data: &[u8]) -> Vec<u8> {
        let mut h = Hasher::new(kind);
        h.update(data);
        h.finish()
    }

    fn hashes(data: &[u8], length: usize) -> Arc<PieceHashes> {
        Arc::new(PieceHashes {
            length: length as u64,
            kind: Kind::Sha256,
            digests: data
                .chunks(length)
                .map(|c| digest(Kind::Sha256, c))
                .collect(),
        })
    }

    fn data(n: usize) -> Vec<u8> {
        (0..n).map(|i| (i * 7 + i / 251) as u8).collect()
    }

    /// Writes `data[r]` (as issued and completed), returning the verdicts.
    fn write(p: &mut Pieces, w: &mut RangeSet, src: &[u8], r: Range<usize>, from: usize) {
        p.issued(r.start as u64, &src[r.clone()], Some(from));
        w.insert(r.start as u64..r.end as u64);
    }

    #[test]
    fn digests_must_fit_the_length() {
        let h = hashes(&data(100), 30);
        assert!(h.check(100).is_ok());
        assert!(h.check(90).is_err(), "three pieces, not four");
        assert!(h.check(121).is_err());
        let mut short = (*h).clone();
        short.digests[1].pop();
        assert!(short.check(100).is_err());
    }

    /// A 16 KiB block, the unit pieces of the tests below are made of.
    const K: usize = ALIGN as usize;

    #[test]
    fn pieces_written_in_order_are_verified_as_their_writes_complete() {
        let total = 6 * K + 100;
        let src = data(total);
        let mut p = Pieces::new(hashes(&src, 2 * K), total as u64);
        let mut w = RangeSet::new();
        write(&mut p, &mut w, &src, 0..3 * K, 0);
        // Hashed, but on disk only once the write completes.
        assert!(p.claims(&w).is_empty());
        assert_eq!(p.write_done(0..3 * K as u64, &w), vec![Verdict::Good(0)]);
        assert_eq!(p.claims(&w).len(), 2 * K as u64);
        write(&mut p, &mut w, &src, 3 * K..total, 0);
        let v = p.write_done(3 * K as u64..total as u64, &w);
        assert_eq!(
            v,
            vec![Verdict::Good(1), Verdict::Good(2), Verdict::Good(3)]
        );
        assert!(p.all_verified());
        assert_eq!(p.claims(&w).len(), total as u64);
        assert!(p.next_read(&w).is_none(), "nothing to read back");
    }

    #[test]
    fn a_bad_piece_names_who_sent_it_and_claims_nothing() {
        let total = 4 * K;
        let src = data(total);
        let mut p = Pieces::new(hashes(&src, 2 * K), total as u64);
        let mut bad = src.clone();
        bad[3 * K] ^= 1;
        let mut w = RangeSet::new();
        write(&mut p, &mut w, &bad, 0..3 * K, 3);
        write(&mut p, &mut w, &bad, 3 * K..total, 5);
        assert_eq!(p.write_done(0..3 * K as u64, &w), vec![Verdict::Good(0)]);
        let v = p.write_done(3 * K as u64..total as u64, &w);
        match &v[..] {
            [Verdict::Bad {
                piece: 1,
                range,
                sources,
                ..
            }] => {
                assert_eq!(range, &(2 * K as u64..total as u64));
                assert_eq!(sources, &vec![3, 5]);
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(p.claims(&w).len(), 2 * K as u64);
        assert!(p.claims(&w).covers(0..2 * K as u64));
        assert!(!p.all_verified());
    }

    #[test]
    fn bytes_out_of_order_are_read_back() {
        let src = data(64);
        let mut p = Pieces::new(hashes(&src, 64), 64);
        let mut w = RangeSet::new();
        // The back half first: not hashable yet.
        write(&mut p, &mut w, &src, 32..64, 1);
        assert!(p.write_done(32..64, &w).is_empty());
        write(&mut p, &mut w, &src, 0..32, 2);
        assert!(p.next_read(&w).is_none(), "a write is in flight");
        assert!(p.write_done(0..32, &w).is_empty());
        let rb = p.next_read(&w).expect("a read-back");
        assert_eq!((rb.from, rb.end), (32, 64));
        assert!(p.next_read(&w).is_none(), "one read at a time");
        assert_eq!(
            p.read_back(rb, 32, Some(&src[32..64]), &w),
            Some(Verdict::Good(0))
        );
    }

    #[test]
    fn bytes_written_over_what_was_hashed_restart_the_piece() {
        let src = data(64);
        let mut p = Pieces::new(hashes(&src, 64), 64);
        let mut w = RangeSet::new();
        let mut bad = src.clone();
        bad[3] ^= 0xff;
        // Good bytes hashed, then bad ones written over them: the hash of the first must not
        // stand for the second.
        write(&mut p, &mut w, &src, 0..32, 1);
        write(&mut p, &mut w, &bad, 0..32, 2);
        write(&mut p, &mut w, &src, 32..64, 1);
        assert!(p.write_done(0..32, &w).is_empty());
        assert!(p.write_done(0..32, &w).is_empty());
        assert!(p.write_done(32..64, &w).is_empty());
        let rb = p.next_read(&w).expect("read back from the start");
        assert_eq!(rb.from, 0);
        let disk = [&bad[..32], &src[32..]].concat();
        assert!(matches!(
            p.read_back(rb, 0, Some(&disk), &w),
            Some(Verdict::Bad { piece: 0, .. })
        ));
    }

    #[test]
    fn a_read_back_overtaken_by_a_write_is_not_hashed() {
        let src = data(64);
        let mut p = Pieces::new(hashes(&src, 64), 64);
        let mut w = RangeSet::new();
        write(&mut p, &mut w, &src, 32..64, 1);
        write(&mut p, &mut w, &src, 0..32, 1);
        p.write_done(32..64, &w);
        p.write_done(0..32, &w);
        let rb = p.next_read(&w).expect("a read-back");
        write(&mut p, &mut w, &src, 0..64, 2);
        assert_eq!(p.read_back(rb, rb.from, Some(&src[32..]), &w), None);
        assert!(p.write_done(0..64, &w).is_empty());
        // Read again from the start, once the write is done.
        let rb = p.next_read(&w).expect("a read-back");
        assert_eq!(rb.from, 0);
        assert_eq!(p.read_back(rb, 0, Some(&src), &w), Some(Verdict::Good(0)));
    }

    #[test]
    fn pieces_off_the_16k_grid_are_claimed_only_between_its_lines() {
        let len = 5 * 20_000 + 7;
        let src = data(len);
        let mut p = Pieces::new(hashes(&src, 20_000), len as u64);
        // Pieces 0, 1, 3, 4 and 5 verified, 2 (40 000..60 000) not.
        p.trust(&RangeSet::from_ranges(&[0..40_000, 60_000..len as u64]));
        let w = RangeSet::single(0..len as u64);
        let c = p.claims(&w);
        // [0, 32 768): 16 KiB blocks wholly in pieces 0 and 1; from 65 536 to the end.
        assert_eq!(c.ranges(), &[0..32_768, 65_536..len as u64]);
        assert_eq!(p.refetch(2, 0), 32_768..65_536);
        assert_eq!(p.refetch(5, 0), 98_304..len as u64);
        // Found bytes before 50 000 stay as they are.
        assert_eq!(p.refetch(2, 50_000), 65_536..65_536);
        assert_eq!(p.refetch(2, 40_000), 49_152..65_536);
    }

    #[test]
    fn control_file_claims_are_trusted_whole_pieces_only() {
        let total = 6 * K + 100;
        let src = data(total);
        let mut p = Pieces::new(hashes(&src, 2 * K), total as u64);
        let (k, t) = (K as u64, total as u64);
        p.trust(&RangeSet::from_ranges(&[0..3 * k, 4 * k..t]));
        assert!(p.is_verified(0) && !p.is_verified(1));
        assert!(p.is_verified(2) && p.is_verified(3));
        let w = RangeSet::single(0..t);
        assert_eq!(p.claims(&w).ranges(), &[0..2 * k, 4 * k..t]);
        p.reset();
        assert!(p.claims(&w).is_empty());
    }
}
