//! A set of byte ranges kept sorted, disjoint and merged: which parts of a file are on disk.

use std::ops::Range;

/// Sorted, disjoint, non-adjacent byte ranges.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RangeSet {
    ranges: Vec<Range<u64>>,
}

impl RangeSet {
    /// The empty set.
    pub fn new() -> RangeSet {
        RangeSet::default()
    }

    /// The set holding these ranges (in any order, overlapping or not).
    pub fn from_ranges(ranges: &[Range<u64>]) -> RangeSet {
        let mut s = RangeSet::new();
        for r in ranges {
            s.insert(r.clone());
        }
        s
    }

    /// The set holding just `r`.
    pub fn single(r: Range<u64>) -> RangeSet {
        let mut s = RangeSet::new();
        s.insert(r);
        s
    }

    /// Adds `r`, merging it with every range it touches.
    pub fn insert(&mut self, r: Range<u64>) {
        if r.start >= r.end {
            return;
        }
        // First range that ends at or after r.start (it may touch or overlap r).
        let i = self.ranges.partition_point(|x| x.end < r.start);
        let mut merged = r;
        let mut j = i;
        while j < self.ranges.len() && self.ranges[j].start <= merged.end {
            merged.start = merged.start.min(self.ranges[j].start);
            merged.end = merged.end.max(self.ranges[j].end);
            j += 1;
        }
        self.ranges.splice(i..j, std::iter::once(merged));
    }

    /// Takes `r` out, splitting the ranges it cuts.
    pub fn remove(&mut self, r: Range<u64>) {
        if r.start >= r.end {
            return;
        }
        // First range that ends after r.start, up to the first that starts at or after r.end.
        let i = self.ranges.partition_point(|x| x.end <= r.start);
        let j = self.ranges.partition_point(|x| x.start < r.end);
        if i >= j {
            return;
        }
        // What is left of the first and last ranges it cuts.
        let (first, last) = (self.ranges[i].start, self.ranges[j - 1].end);
        let before = (first < r.start).then_some(first..r.start);
        let after = (last > r.end).then_some(r.end..last);
        self.ranges.splice(i..j, before.into_iter().chain(after));
    }

    /// The ranges, sorted.
    pub fn ranges(&self) -> &[Range<u64>] {
        &self.ranges
    }

    /// Whether every byte of `r` is in the set.
    pub fn covers(&self, r: Range<u64>) -> bool {
        r.is_empty()
            || self
                .ranges
                .iter()
                .any(|x| x.start <= r.start && r.end <= x.end)
    }

    /// Where the bytes covered without a gap from 0 end (0 if 0 is not covered).
    pub fn prefix_end(&self) -> u64 {
        self.ranges
            .first()
            .filter(|r| r.start == 0)
            .map_or(0, |r| r.end)
    }

    /// Bytes covered.
    pub fn len(&self) -> u64 {
        self.ranges.iter().map(|r| r.end - r.start).sum()
    }

    /// Whether nothing is covered.
    pub fn is_empty(&self) -> bool {
        self.ranges.is_empty()
    }

    /// The ranges of `0..total` not covered.
    pub fn gaps(&self, total: u64) -> Vec<Range<u64>> {
        let mut out = Vec::new();
        let mut at = 0;
        for r in &self.ranges {
            if r.start >= total {
                break;
            }
            if r.start > at {
                out.push(at..r.start);
            }
            at = at.max(r.end);
        }
        if at < total {
            out.push(at..total);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A small deterministic generator (xorshift64) for the randomized tests.
    fn xorshift(mut seed: u64) -> impl FnMut() -> u64 {
        move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        }
    }

    #[test]
    fn inserts_merge_touching_and_overlapping() {
        let mut s = RangeSet::new();
        s.insert(10..20);
        s.insert(30..40);
        s.insert(20..25);
        assert_eq!(s.ranges(), &[10..25, 30..40]);
        s.insert(0..5);
        s.insert(24..31);
        assert_eq!(s.ranges(), &[0..5, 10..40]);
        s.insert(5..10);
        assert_eq!(s.ranges().to_vec(), vec![0..40]);
        s.insert(7..7);
        assert_eq!(s.len(), 40);
    }

    #[test]
    fn gaps_cover_the_rest() {
        let s = RangeSet::from_ranges(&[50..60, 0..10, 20..30]);
        assert_eq!(s.gaps(100), vec![10..20, 30..50, 60..100]);
        assert_eq!(s.gaps(55), vec![10..20, 30..50]);
        assert_eq!(RangeSet::new().gaps(7), vec![0..7]);
        assert_eq!(RangeSet::single(0..7).gaps(7), Vec::<Range<u64>>::new());
    }

    #[test]
    fn random_inserts_match_a_bitmap() {
        let mut next = xorshift(0x1234_5678);
        for _ in 0..200 {
            let mut s = RangeSet::new();
            let mut bits = [false; 256];
            for _ in 0..10 {
                let a = next() % 256;
                let b = (a + next() % 40).min(256);
                s.insert(a..b);
                for bit in bits.iter_mut().take(b as usize).skip(a as usize) {
                    *bit = true;
                }
            }
            assert_eq!(s.len(), bits.iter().filter(|b| **b).count() as u64);
            for w in s.ranges().windows(2) {
                assert!(w[0].end < w[1].start, "{:?}", s.ranges());
            }
        }
    }

    #[test]
    fn random_inserts_and_removes_match_a_bitmap() {
        let mut next = xorshift(0x9e37_79b9);
        for _ in 0..300 {
            let mut s = RangeSet::new();
            let mut bits = [false; 256];
            for _ in 0..16 {
                let a = next() % 256;
                let b = (a + next() % 60).min(256);
                let add = next() % 3 != 0;
                if add {
                    s.insert(a..b);
                } else {
                    s.remove(a..b);
                }
                for bit in bits.iter_mut().take(b as usize).skip(a as usize) {
                    *bit = add;
                }
                let want: Vec<u64> = (0..256u64).filter(|&i| bits[i as usize]).collect();
                let have: Vec<u64> = s.ranges().iter().flat_map(|r| r.clone()).collect();
                assert_eq!(
                    have,
                    want,
                    "after {} {a}..{b}",
                    if add { "insert" } else { "remove" }
                );
                for w in s.ranges().windows(2) {
                    assert!(w[0].end < w[1].start, "{:?}", s.ranges());
                }
            }
        }
    }
}
