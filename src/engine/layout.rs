//! A download over several files (a torrent's, next): the files laid end to end in the
//! download's one byte space, in which the plan, the claims, the piece checks and the control file
//! all stay (as aria2's control file does for a multi-file torrent). No I/O: this says which
//! file each byte of a range lands in, and how each file can be written.
//!
//! A block of the byte space (4 KiB-aligned there) may straddle files. A file whose start is
//! aligned in the byte space has every block of it aligned in the file too, and is written with
//! `O_DIRECT` (its last block padded past its end, cut when it finishes); a file that starts
//! mid-block has no aligned block at all, and is written through the page cache, uncached, at
//! each write's exact length.
use crate::store::DIO_ALIGN;
use std::ops::Range;

/// A file of a download over several, as given: its path under the download's directory and its
/// length.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileSpec {
    /// Relative, `/`-separated; checked by [`Layout::new`].
    pub path: String,
    pub length: u64,
    /// Wanted (`--select-file`): an unselected file is fetched only where a piece of a selected
    /// one reaches into it.
    pub selected: bool,
}

/// A file laid in the byte space.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LaidFile {
    pub path: String,
    /// Where its first byte is in the download.
    pub start: u64,
    pub length: u64,
    pub selected: bool,
}

impl LaidFile {
    /// The bytes of the download it holds.
    pub fn range(&self) -> Range<u64> {
        self.start..self.start + self.length
    }
}

/// The part of a range of the download that lands in one file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Span {
    pub file: usize,
    /// Where in the file it starts.
    pub at: u64,
    /// The bytes of the download it holds.
    pub range: Range<u64>,
}

/// The files of a download, end to end.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Layout {
    files: Vec<LaidFile>,
    total: u64,
}

impl Layout {
    /// Lays `files` end to end. Refused: no file, a path that is empty, absolute, has an empty,
    /// `.` or `..` component or a control character (a file must never land outside the
    /// download's directory), the same path twice, or lengths whose sum overflows.
    pub fn new(files: Vec<FileSpec>) -> Result<Layout, String> {
        if files.is_empty() {
            return Err("a download over several files has no file".into());
        }
        let mut laid: Vec<LaidFile> = Vec::with_capacity(files.len());
        let mut start = 0u64;
        for f in files {
            check_path(&f.path)?;
            if laid.iter().any(|l| l.path == f.path) {
                return Err(format!("the file {} is given twice", f.path));
            }
            let end = start
                .checked_add(f.length)
                .ok_or_else(|| format!("the files are too long: {} overflows", f.path))?;
            laid.push(LaidFile {
                path: f.path,
                start,
                length: f.length,
                selected: f.selected,
            });
            start = end;
        }
        Ok(Layout {
            files: laid,
            total: start,
        })
    }

    /// The download's length: every file's, added up.
    pub fn total(&self) -> u64 {
        self.total
    }

    pub fn files(&self) -> &[LaidFile] {
        &self.files
    }

    /// Whether file `i` is written with `O_DIRECT`: its first byte is aligned in the byte space,
    /// so every block of it is aligned in the file.
    pub fn direct(&self, i: usize) -> bool {
        self.files[i].start % DIO_ALIGN as u64 == 0
    }

    /// The bytes the download does not fetch: those of no selected file, outside every piece
    /// (of `piece` bytes, 0: no pieces) that holds a byte of one, and outside the 16 KiB blocks
    /// (`grain`) around those pieces. Empty when every file is selected.
    pub fn unwanted(&self, piece: u64, grain: u64) -> Vec<Range<u64>> {
        if self.files.iter().all(|f| f.selected) {
            return Vec::new();
        }
        let down = |x: u64, g: u64| if g > 1 { x / g * g } else { x };
        let up = |x: u64, g: u64| if g > 1 { x.div_ceil(g) * g } else { x };
        let mut wanted: Vec<Range<u64>> = Vec::new();
        for f in self.files.iter().filter(|f| f.selected && f.length > 0) {
            // Out to whole pieces, then to whole blocks. (A piece that a block's edge reaches
            // into holds no byte of a selected file: it is written in part, never checked nor
            // claimed, `Pieces::excuse`.)
            let (a, b) = (down(f.start, piece), up(f.start + f.length, piece));
            let (a, b) = (down(a, grain), up(b, grain).min(self.total));
            match wanted.last_mut() {
                Some(last) if last.end >= a => last.end = last.end.max(b),
                _ => wanted.push(a..b),
            }
        }
        let mut out = Vec::new();
        let mut at = 0;
        for w in wanted {
            if w.start > at {
                out.push(at..w.start);
            }
            at = at.max(w.end);
        }
        if at < self.total {
            out.push(at..self.total);
        }
        out
    }

    /// Whether `range` holds a byte of a selected file.
    pub fn wants(&self, range: Range<u64>) -> bool {
        self.spans_of(range).any(|s| self.files[s.file].selected)
    }

    /// The parts of `range` in each file it covers, in order (files of no length hold none).
    pub fn spans(&self, range: Range<u64>) -> Vec<Span> {
        self.spans_of(range).collect()
    }

    /// The first part of `range`: the file that holds its first byte, up to that file's end
    /// (none for an empty range, or one past the end). Nothing allocated: the writer asks for
    /// one per part it issues.
    pub fn first_span(&self, range: Range<u64>) -> Option<Span> {
        self.spans_of(range).next()
    }

    fn spans_of(&self, range: Range<u64>) -> impl Iterator<Item = Span> + '_ {
        let first = self
            .files
            .partition_point(|f| f.start + f.length <= range.start);
        self.files[first..]
            .iter()
            .enumerate()
            .take_while(move |(_, f)| f.start < range.end)
            .filter(|(_, f)| f.length > 0)
            .map(move |(k, f)| {
                let from = range.start.max(f.start);
                let to = range.end.min(f.start + f.length);
                Span {
                    file: first + k,
                    at: from - f.start,
                    range: from..to,
                }
            })
            .filter(|s| s.range.start < s.range.end)
    }
}

/// A relative path that stays under the directory it is joined to.
fn check_path(path: &str) -> Result<(), String> {
    let bad = path.is_empty()
        || path.starts_with('/')
        || path.contains('\\')
        || path.chars().any(char::is_control)
        || path
            .split('/')
            .any(|c| c.is_empty() || c == "." || c == "..");
    if bad {
        return Err(format!(
            "the file name {path:?} is not a safe relative path"
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn layout(lens: &[u64]) -> Layout {
        Layout::new(
            lens.iter()
                .enumerate()
                .map(|(i, &length)| FileSpec {
                    path: format!("d/f{i}"),
                    length,
                    selected: true,
                })
                .collect(),
        )
        .unwrap()
    }

    #[test]
    fn files_lie_end_to_end() {
        let l = layout(&[5000, 0, 3192, 10]);
        assert_eq!(l.total(), 8202);
        let starts: Vec<u64> = l.files().iter().map(|f| f.start).collect();
        assert_eq!(starts, [0, 5000, 5000, 8192]);
        assert!(l.direct(0));
        assert!(!l.direct(2));
        assert!(l.direct(3));
    }

    #[test]
    fn a_block_is_cut_at_each_file_it_covers() {
        let l = layout(&[5000, 0, 3192, 10]);
        assert_eq!(
            l.spans(4096..8202),
            [
                Span {
                    file: 0,
                    at: 4096,
                    range: 4096..5000
                },
                Span {
                    file: 2,
                    at: 0,
                    range: 5000..8192
                },
                Span {
                    file: 3,
                    at: 0,
                    range: 8192..8202
                },
            ]
        );
        assert_eq!(
            l.spans(0..4096),
            [Span {
                file: 0,
                at: 0,
                range: 0..4096
            }]
        );
        assert_eq!(l.spans(6000..6001)[0].at, 1000);
        assert!(l.spans(8202..9000).is_empty());
    }

    /// Every byte of any range lands in exactly one file, at its place there.
    #[test]
    fn spans_cover_a_range_once() {
        let l = layout(&[1, 4095, 0, 4097, 12288, 3, 0, 5]);
        for a in (0..l.total()).step_by(97) {
            for len in [1u64, 100, 4096, 16384] {
                let r = a..(a + len).min(l.total());
                let spans = l.spans(r.clone());
                let mut at = r.start;
                for s in &spans {
                    assert_eq!(s.range.start, at);
                    let f = &l.files()[s.file];
                    assert_eq!(f.start + s.at, s.range.start);
                    assert!(s.range.end <= f.start + f.length);
                    at = s.range.end;
                }
                assert_eq!(at, r.end);
            }
        }
    }

    /// Unselected files are not fetched, but for the pieces (and 16 KiB blocks) that reach into
    /// them from a selected one.
    #[test]
    fn unselected_files_are_unwanted_but_for_the_pieces_of_selected_ones() {
        let mut l = layout(&[100_000, 50_000, 300_000, 20_000, 60_000]);
        assert!(l.unwanted(0, 16_384).is_empty());
        for i in [1, 3] {
            l.files[i].selected = false;
        }
        // File 1 (100 000..150 000) is unwanted but for the blocks it shares with files 0 and 2;
        // file 3 (450 000..470 000) lies within the blocks of files 2 and 4.
        let one = |r: Range<u64>| std::iter::once(r).collect::<Vec<_>>();
        assert_eq!(l.unwanted(0, 16_384), one(114_688..147_456));
        // With pieces of 65 536: the pieces holding bytes of files 0, 2 and 4 cover everything.
        assert!(l.unwanted(65_536, 16_384).is_empty());
        l.files[2].selected = false;
        assert_eq!(l.unwanted(65_536, 16_384), one(131_072..458_752));
        // Pieces off the block grid: out to whole pieces, then to whole blocks.
        assert_eq!(l.unwanted(20_000, 16_384), one(114_688..458_752));
        assert!(l.wants(99_999..100_001));
        assert!(!l.wants(100_000..470_000));
        assert!(l.wants(100_000..470_001));
        for f in &mut l.files {
            f.selected = false;
        }
        assert_eq!(l.unwanted(65_536, 16_384), one(0..l.total()));
    }

    #[test]
    fn names_that_leave_the_directory_are_refused() {
        for bad in [
            "",
            "/etc/passwd",
            "../x",
            "a/../../x",
            "a//b",
            "./a",
            "a/.",
            "a\\b",
            "a\nb",
            "a/",
        ] {
            let r = Layout::new(vec![FileSpec {
                path: bad.into(),
                length: 1,
                selected: true,
            }]);
            assert!(r.is_err(), "{bad:?} was taken");
        }
        assert!(Layout::new(Vec::new()).is_err());
        let twice = vec![
            FileSpec {
                path: "a".into(),
                length: 1,
                selected: true,
            },
            FileSpec {
                path: "a".into(),
                length: 2,
                selected: true,
            },
        ];
        assert!(Layout::new(twice).is_err());
        let huge = vec![
            FileSpec {
                path: "a".into(),
                length: u64::MAX,
                selected: true,
            },
            FileSpec {
                path: "b".into(),
                length: 1,
                selected: true,
            },
        ];
        assert!(Layout::new(huge).is_err());
    }
}
