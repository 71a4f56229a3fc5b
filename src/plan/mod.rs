//! The piece map of one file: which byte ranges are done, which connection works on which range, and
//! how a range is split when a connection goes idle. Pure bookkeeping, no I/O.
//!
//! Split points are multiples of [`ALIGN`], so every segment except the file's last starts and ends
//! on a boundary that both `O_DIRECT` (4 KiB) and aria2's control file (16 KiB blocks) accept.

mod ranges;
pub use ranges::RangeSet;

/// Granularity of split points: aria2's 16 KiB block.
pub const ALIGN: u64 = 16 * 1024;

/// Identifies the connection working on a segment.
pub type Owner = u64;

/// A contiguous byte range of the file: `[start, pos)` received, `[pos, end)` still to come.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Segment {
    pub start: u64,
    pub pos: u64,
    pub end: u64,
    pub owner: Option<Owner>,
}

impl Segment {
    /// Bytes still to receive.
    pub fn remaining(&self) -> u64 {
        self.end - self.pos
    }
}

/// Segments of one file whose length is known.
#[derive(Debug, Clone)]
pub struct Plan {
    total: u64,
    min_split: u64,
    /// Split points are multiples of this ([`ALIGN`], or a piece length that is a multiple of it).
    grain: u64,
    segments: Vec<Segment>,
}

fn align_up(v: u64) -> u64 {
    v.div_ceil(ALIGN) * ALIGN
}

fn grain_up(v: u64, grain: u64) -> u64 {
    v.div_ceil(grain) * grain
}

impl Plan {
    /// A plan for a `total`-byte file, never splitting a range shorter than `2 * min_split`.
    pub fn new(total: u64, min_split: u64) -> Plan {
        Plan {
            total,
            min_split: min_split.max(ALIGN),
            grain: ALIGN,
            segments: vec![Segment {
                start: 0,
                pos: 0,
                end: total,
                owner: None,
            }],
        }
    }

    /// A plan for a `total`-byte file of which `done` is already on disk: the done ranges are
    /// finished segments, every gap an unowned segment waiting for a connection. A control file
    /// (aria2c's, with any piece length) may put gap edges anywhere; each gap is widened to
    /// [`ALIGN`] boundaries (or the file's end), so the few bytes around an edge are fetched again
    /// and every segment keeps the plan's rule: it starts and ends on `ALIGN` (or the file's end),
    /// where `O_DIRECT` can write.
    pub fn from_done(total: u64, min_split: u64, done: &RangeSet) -> Plan {
        let mut gaps: Vec<std::ops::Range<u64>> = Vec::new();
        for g in done.gaps(total) {
            let g = g.start / ALIGN * ALIGN..align_up(g.end).min(total);
            match gaps.last_mut() {
                Some(last) if last.end >= g.start => last.end = last.end.max(g.end),
                _ => gaps.push(g),
            }
        }
        let mut segments = Vec::new();
        let mut at = 0;
        for g in &gaps {
            if g.start > at {
                segments.push(Segment {
                    start: at,
                    pos: g.start,
                    end: g.start,
                    owner: None,
                });
            }
            segments.push(Segment {
                start: g.start,
                pos: g.start,
                end: g.end,
                owner: None,
            });
            at = g.end;
        }
        if at < total || segments.is_empty() {
            segments.push(Segment {
                start: at,
                pos: total,
                end: total,
                owner: None,
            });
        }
        Plan {
            total,
            min_split: min_split.max(ALIGN),
            grain: ALIGN,
            segments,
        }
    }

    /// New splits fall on multiples of `piece` (a verified download's piece length), so each piece
    /// is fetched by one connection, in order, and hashed as it is written. A length that is not a
    /// multiple of [`ALIGN`] changes nothing: split points must stay where `O_DIRECT` can write.
    pub fn split_on_pieces(&mut self, piece: u64) {
        if piece > 0 && piece % ALIGN == 0 {
            self.grain = piece;
            self.min_split = self.min_split.max(piece);
        }
    }

    /// The bytes `r`, received, are to be fetched again (a piece failed its check): they become a
    /// segment of their own with nobody on it. `r` must start on [`ALIGN`] and end on it or at the
    /// file's end. A segment still being received past `r` keeps its place (its index) and owner
    /// for what is after `r`.
    pub fn reopen(&mut self, r: std::ops::Range<u64>) {
        let r = r.start..r.end.min(self.total);
        if r.is_empty() {
            return;
        }
        let mut add = Vec::new();
        for s in &mut self.segments {
            if s.end <= r.start || s.start >= r.end || s.end == s.start {
                continue;
            }
            // [s.start, r.start): stays as it is, received.
            if s.start < r.start {
                add.push(Segment {
                    start: s.start,
                    pos: s.pos.min(r.start),
                    end: r.start,
                    owner: None,
                });
            }
            if s.end > r.end {
                // Past `r`: the segment itself, so its owner keeps it.
                s.start = r.end;
                s.pos = s.pos.max(r.end);
            } else {
                // Within `r`: left empty, at its end (where its owner, done with it, may go on).
                s.start = s.end;
                s.pos = s.end;
            }
        }
        add.push(Segment {
            start: r.start,
            pos: r.start,
            end: r.end,
            owner: None,
        });
        self.segments.extend(add);
    }

    /// File length.
    pub fn total(&self) -> u64 {
        self.total
    }

    /// Segment by index. Indices are stable for the plan's life.
    pub fn segment(&self, i: usize) -> &Segment {
        &self.segments[i]
    }

    /// All segments.
    pub fn segments(&self) -> &[Segment] {
        &self.segments
    }

    /// Hands segment `i` to `owner`.
    pub fn assign(&mut self, i: usize, owner: Owner) {
        self.segments[i].owner = Some(owner);
    }

    /// Records `n` more bytes received at the front of segment `i`.
    pub fn advance(&mut self, i: usize, n: u64) {
        let s = &mut self.segments[i];
        s.pos = (s.pos + n).min(s.end);
    }

    /// Takes back the last `n` bytes recorded for segment `i`: they are held in memory again, not
    /// placed (a connection handing over its part-filled block keeps its unaligned tail).
    pub fn retreat(&mut self, i: usize, n: u64) {
        let s = &mut self.segments[i];
        debug_assert!(
            s.pos - s.start >= n,
            "retreating past the start of a segment"
        );
        s.pos = s.pos.saturating_sub(n).max(s.start);
    }

    /// Gives segment `i` back (its connection failed or left). Bytes after `keep_until` are
    /// forgotten and fetched again; `keep_until` must be an aligned position within the segment.
    pub fn release(&mut self, i: usize, keep_until: u64) {
        let s = &mut self.segments[i];
        s.owner = None;
        s.pos = keep_until.clamp(s.start, s.pos);
    }

    /// Takes every segment from `owner`, which is gone; what it received stays received.
    pub fn disown(&mut self, owner: Owner) {
        for s in &mut self.segments {
            if s.owner == Some(owner) {
                s.owner = None;
            }
        }
    }

    /// Owners of segments that still have bytes to come.
    pub fn active_owners(&self) -> impl Iterator<Item = Owner> + '_ {
        self.segments
            .iter()
            .filter(|s| s.pos < s.end)
            .filter_map(|s| s.owner)
    }

    /// Bytes received over all segments.
    pub fn received(&self) -> u64 {
        self.segments.iter().map(|s| s.pos - s.start).sum()
    }

    /// Every byte has been received.
    pub fn is_complete(&self) -> bool {
        self.segments.iter().all(|s| s.pos == s.end)
    }

    /// A sequential stream that reached the end of segment `i` may go on into the segment that
    /// starts there if nobody owns it and nothing of it was received. Returns that segment, now owned
    /// by `owner`.
    pub fn continue_into(&mut self, i: usize, owner: Owner) -> Option<usize> {
        let end = self.segments[i].end;
        let j = self.segments.iter().position(|s| {
            s.start == end && s.owner.is_none() && s.pos == s.start && s.end > s.start
        })?;
        self.segments[j].owner = Some(owner);
        Some(j)
    }

    /// Whether the segment after `i` is owned by a connection that has received nothing of it yet
    /// (its request may still fail, and then the stream ending at `i` could go on into it).
    pub fn next_unstarted(&self, i: usize) -> bool {
        let end = self.segments[i].end;
        self.segments
            .iter()
            .any(|s| s.start == end && s.owner.is_some() && s.pos == s.start && s.end > s.start)
    }

    /// Fixes the length of a file whose size was unknown (a single segment being streamed) once
    /// its body has ended.
    pub fn set_total(&mut self, total: u64) {
        self.total = total;
        self.segments.truncate(1);
        let s = &mut self.segments[0];
        s.end = total;
        s.pos = s.pos.min(total);
    }

    /// Cuts the unreceived part of the largest range into up to `parts` about equal pieces for the
    /// connections about to open: the range keeps its owner and the first piece, the others are left
    /// unowned. No piece is shorter than `min_split`. Returns how many pieces there are now.
    pub fn presplit(&mut self, parts: usize) -> usize {
        let Some(i) = (0..self.segments.len()).max_by_key(|&i| self.segments[i].remaining()) else {
            return 0;
        };
        let (pos, end) = (self.segments[i].pos, self.segments[i].end);
        let len = end - pos;
        let parts = (parts as u64).min(len / self.min_split).max(1);
        let piece = grain_up(len.div_ceil(parts), self.grain);
        let mut cut = grain_up(pos + piece, self.grain);
        if cut >= end {
            return 1;
        }
        self.segments[i].end = cut;
        let mut made = 1;
        while cut < end {
            let next = (cut + piece).min(end);
            self.segments.push(Segment {
                start: cut,
                pos: cut,
                end: next,
                owner: None,
            });
            made += 1;
            cut = next;
        }
        made
    }

    /// Whether [`Plan::take`] would find work for a connection that is not here yet.
    pub fn has_work_for_newcomer(&self, reserve: u64) -> bool {
        self.segments.iter().any(|s| {
            (s.owner.is_none() && s.pos < s.end)
                || (s.remaining() >= 2 * self.min_split
                    && s.end
                        .saturating_sub(s.pos + if s.owner.is_some() { reserve } else { 0 })
                        > ALIGN)
        })
    }

    /// Work for `owner`, which just became free: an unowned unfinished segment if there is one,
    /// otherwise the back half of the range in progress with the most bytes left, if that range is at
    /// least `2 * min_split` (aria2's rule). `reserved(o)` is how many bytes past its position
    /// connection `o` may already be receiving into memory; a split never lands inside them.
    pub fn take(&mut self, owner: Owner, reserved: impl Fn(Owner) -> u64) -> Option<usize> {
        if let Some(i) = self
            .segments
            .iter()
            .position(|s| s.owner.is_none() && s.pos < s.end)
        {
            self.segments[i].owner = Some(owner);
            return Some(i);
        }
        let free_from = |s: &Segment| s.pos + s.owner.map_or(0, &reserved);
        let (i, _) = self
            .segments
            .iter()
            .enumerate()
            .filter(|(_, s)| s.remaining() >= 2 * self.min_split)
            .map(|(i, s)| (i, s.end.saturating_sub(free_from(s))))
            .max_by_key(|&(_, left)| left)?;
        let s = &self.segments[i];
        let from = free_from(s);
        if from >= s.end {
            return None;
        }
        let cut = grain_up(from + (s.end - from) / 2, self.grain);
        if cut >= s.end {
            return None;
        }
        let end = s.end;
        self.segments[i].end = cut;
        self.segments.push(Segment {
            start: cut,
            pos: cut,
            end,
            owner: Some(owner),
        });
        Some(self.segments.len() - 1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: u64 = 1 << 20;

    #[test]
    fn resumed_gaps_are_widened_to_direct_io_edges() {
        // aria2c's --piece-length=1048577: done pieces end at odd offsets.
        let total = 10 * 1_048_577 + 123;
        let done = RangeSet::from_ranges(&[0..1_048_577, 3 * 1_048_577..5 * 1_048_577]);
        let p = Plan::from_done(total, MIB, &done);
        check_cover(&p);
        for s in p.segments() {
            for edge in [s.start, s.end] {
                assert!(edge % ALIGN == 0 || edge == total, "{s:?}");
            }
            if s.pos == s.end && s.end > s.start {
                // What the plan takes as done is done on disk.
                assert!(done
                    .ranges()
                    .iter()
                    .any(|r| r.start <= s.start && s.end <= r.end));
            }
        }
        // [0, 1 MiB) of the first piece, and [193, 320) × 16 KiB of the second run of pieces.
        assert_eq!(p.received(), 1_048_576 + (320 - 193) * ALIGN);
    }

    fn check_cover(p: &Plan) {
        let mut segs: Vec<&Segment> = p.segments().iter().collect();
        segs.sort_by_key(|s| (s.start, s.end));
        let mut at = 0;
        for s in segs {
            assert_eq!(s.start, at, "gap or overlap in {:?}", p.segments());
            assert!(s.start <= s.pos && s.pos <= s.end);
            if s.end != p.total() {
                assert_eq!(s.end % ALIGN, 0, "unaligned cut {s:?}");
            }
            at = s.end;
        }
        assert_eq!(at, p.total());
    }

    #[test]
    fn presplit_gives_equal_aligned_pieces() {
        let mut p = Plan::new(100 * MIB + 12345, MIB);
        p.assign(0, 1);
        assert_eq!(p.presplit(8), 8);
        check_cover(&p);
        assert_eq!(p.segment(0).owner, Some(1));
        let sizes: Vec<u64> = p.segments().iter().map(|s| s.end - s.start).collect();
        let max = *sizes.iter().max().unwrap();
        let min = *sizes.iter().min().unwrap();
        assert!(max - min <= 8 * ALIGN, "{sizes:?}");
        assert_eq!(p.segments().iter().filter(|s| s.owner.is_none()).count(), 7);
    }

    #[test]
    fn presplit_respects_min_split() {
        let mut p = Plan::new(3 * MIB, MIB);
        assert_eq!(p.presplit(16), 3);
        check_cover(&p);
        let mut small = Plan::new(MIB + 1, MIB);
        assert_eq!(small.presplit(16), 1);
        assert_eq!(small.segments().len(), 1);
        let mut empty = Plan::new(0, MIB);
        assert_eq!(empty.presplit(4), 1);
        assert!(empty.is_complete());
    }

    #[test]
    fn take_prefers_unowned_then_steals_half() {
        let mut p = Plan::new(64 * MIB, MIB);
        p.assign(0, 1);
        p.presplit(2);
        assert_eq!(p.take(2, |_| 0), Some(1));
        let j = p.take(3, |_| 0).unwrap();
        assert_eq!(j, 2);
        assert_eq!(p.segment(j).owner, Some(3));
        assert_eq!(p.segment(j).end - p.segment(j).start, 16 * MIB);
        check_cover(&p);
    }

    #[test]
    fn steal_splits_largest_remaining_after_reservation() {
        let mut p = Plan::new(64 * MIB, MIB);
        p.assign(0, 1);
        p.advance(0, 10 * MIB);
        // Connection 1 may already be receiving 256 KiB past its position.
        let i = p.take(2, |o| if o == 1 { 256 * 1024 } else { 0 }).unwrap();
        check_cover(&p);
        let victim = p.segment(0);
        let thief = p.segment(i);
        assert_eq!(victim.end, thief.start);
        assert!(victim.end >= 10 * MIB + 256 * 1024);
        let expect = align_up(10 * MIB + 256 * 1024 + (64 * MIB - 10 * MIB - 256 * 1024) / 2);
        assert_eq!(thief.start, expect);
        assert_eq!(thief.owner, Some(2));
    }

    #[test]
    fn no_steal_below_twice_min_split() {
        let mut p = Plan::new(4 * MIB, 2 * MIB);
        p.assign(0, 1);
        p.advance(0, 1);
        assert_eq!(p.take(2, |_| 0), None);
        let mut q = Plan::new(4 * MIB, 2 * MIB);
        q.assign(0, 1);
        assert!(q.take(2, |_| 0).is_some());
    }

    #[test]
    fn stream_continues_into_untouched_neighbour_only() {
        let mut p = Plan::new(8 * MIB, MIB);
        p.assign(0, 1);
        p.presplit(4);
        assert_eq!(p.take(2, |_| 0), Some(1));
        p.advance(0, 2 * MIB);
        // Segment 1 is owned and untouched: no continuation, but worth waiting for.
        assert_eq!(p.continue_into(0, 1), None);
        assert!(p.next_unstarted(0));
        p.release(1, 2 * MIB);
        assert!(!p.next_unstarted(0));
        assert_eq!(p.continue_into(0, 1), Some(1));
        p.advance(1, 100);
        p.advance(1, 2 * MIB);
        // Segment 2 untouched and unowned: continue again.
        assert_eq!(p.continue_into(1, 1), Some(2));
        p.advance(2, 2 * MIB);
        p.assign(3, 9);
        p.advance(3, 1);
        // Its owner has started: neither continue nor wait.
        assert_eq!(p.continue_into(2, 1), None);
        assert!(!p.next_unstarted(2));
    }

    #[test]
    fn from_done_leaves_the_gaps_to_fetch() {
        let done = RangeSet::from_ranges(&[0..3 * MIB, 5 * MIB..6 * MIB]);
        let mut p = Plan::from_done(8 * MIB + 5, MIB, &done);
        check_cover(&p);
        assert_eq!(p.received(), 4 * MIB);
        assert!(!p.is_complete());
        let a = p.take(1, |_| 0).unwrap();
        assert_eq!(p.segment(a).start, 3 * MIB);
        let b = p.take(2, |_| 0).unwrap();
        assert_eq!(
            (p.segment(b).start, p.segment(b).end),
            (6 * MIB, 8 * MIB + 5)
        );
        let all = Plan::from_done(100, MIB, &RangeSet::single(0..100));
        assert!(all.is_complete());
        let empty = Plan::from_done(0, MIB, &RangeSet::new());
        assert!(empty.is_complete());
    }

    #[test]
    fn unknown_length_is_cut_at_the_end() {
        let mut p = Plan::new(u64::MAX, MIB);
        p.assign(0, 1);
        p.advance(0, 12345);
        assert!(!p.is_complete());
        p.set_total(12345);
        assert!(p.is_complete());
        assert_eq!(p.total(), 12345);
    }

    #[test]
    fn retreat_takes_back_bytes_and_keeps_the_owner() {
        let mut p = Plan::new(8 * MIB, MIB);
        p.assign(0, 1);
        p.advance(0, 3 * MIB + 100);
        p.retreat(0, 100);
        assert_eq!((p.segment(0).pos, p.segment(0).owner), (3 * MIB, Some(1)));
        assert_eq!(p.received(), 3 * MIB);
        p.advance(0, 100);
        assert_eq!(p.segment(0).pos, 3 * MIB + 100);
    }

    #[test]
    fn release_returns_range_to_the_pool() {
        let mut p = Plan::new(8 * MIB, MIB);
        p.assign(0, 1);
        p.advance(0, 3 * MIB + 100);
        p.release(0, 3 * MIB);
        assert_eq!(p.segment(0).pos, 3 * MIB);
        assert_eq!(p.segment(0).owner, None);
        assert_eq!(p.take(5, |_| 0), Some(0));
        assert_eq!(p.received(), 3 * MIB);
        assert!(!p.is_complete());
        p.advance(0, 99 * MIB);
        assert!(p.is_complete());
    }

    #[test]
    fn repeated_stealing_converges_without_gaps() {
        let mut p = Plan::new(200 * MIB + 777, MIB);
        p.assign(0, 0);
        for o in 1..16 {
            assert!(p.take(o, |_| 64 * 1024).is_some());
        }
        check_cover(&p);
        // Everyone works a little; finished ones steal again until nothing is splittable.
        for round in 0..200 {
            let owners: Vec<(usize, Owner)> = p
                .segments()
                .iter()
                .enumerate()
                .filter_map(|(i, s)| s.owner.map(|o| (i, o)))
                .collect();
            for (i, o) in owners {
                p.advance(i, (o + 1) * 300 * 1024);
                if p.segment(i).pos == p.segment(i).end {
                    p.segments[i].owner = None;
                    p.take(o, |_| 0);
                }
            }
            check_cover(&p);
            if round > 190 {
                break;
            }
        }
        assert!(p.is_complete());
    }

    #[test]
    fn a_reopened_range_is_fetched_again_and_its_neighbours_keep_their_owners() {
        let total = 8 * MIB;
        let mut p = Plan::new(total, MIB);
        p.assign(0, 7);
        p.advance(0, 5 * MIB);
        // The range [1 MiB, 2 MiB) failed its check; connection 7 is past it.
        p.reopen(MIB..2 * MIB);
        check_cover(&p);
        let s0 = p.segment(0);
        assert_eq!(
            (s0.start, s0.pos, s0.end, s0.owner),
            (2 * MIB, 5 * MIB, total, Some(7))
        );
        assert_eq!(
            p.received(),
            4 * MIB,
            "the reopened MiB is not received any more"
        );
        let open: Vec<_> = p
            .segments()
            .iter()
            .filter(|s| s.owner.is_none() && s.pos < s.end)
            .collect();
        assert_eq!(open.len(), 1);
        assert_eq!((open[0].start, open[0].end), (MIB, 2 * MIB));
        // A connection that comes free takes it.
        let i = p.take(9, |_| 0).expect("work");
        assert_eq!(p.segment(i).start, MIB);
        // A finished segment inside the range, and one ending in it.
        let mut p = Plan::from_done(total, MIB, &RangeSet::single(0..total));
        p.reopen(7 * MIB..total);
        check_cover(&p);
        assert_eq!(p.received(), 7 * MIB);
        assert!(!p.is_complete());
    }

    #[test]
    fn splits_fall_on_pieces() {
        let piece = 3 * ALIGN * 16;
        let mut p = Plan::new(100 * MIB + 5, MIB);
        p.split_on_pieces(piece);
        p.presplit(7);
        check_cover(&p);
        for s in p.segments() {
            assert!(s.start % piece == 0, "{s:?}");
        }
        p.assign(0, 1);
        let i = p.take(2, |_| 0).expect("a split");
        assert_eq!(p.segment(i).start % piece, 0);
        // A length O_DIRECT cannot split on is not taken.
        let mut q = Plan::new(10 * MIB, MIB);
        q.split_on_pieces(ALIGN + 1);
        q.presplit(4);
        assert!(q.segments().iter().all(|s| s.start % ALIGN == 0));
    }
}
