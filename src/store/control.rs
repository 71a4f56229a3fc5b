//! aria2's `.aria2` control file: which pieces of a download are on disk, in aria2's own binary format
//! (src/DefaultBtProgressInfoFile.cc), so that aria2c and ringdl can finish each other's downloads.
//! This module only turns bytes into a [`ControlFile`] and back, and reads/writes it atomically; when
//! to save, and what to do with a file that is rejected, is the engine's business.
//!
//! Layout (version 1 big-endian; version 0 in the writer's byte order, read here as little-endian):
//! `VER(2) EXT(4) INFOHASHLEN(4) INFOHASH PIECELEN(4) TOTALLEN(8) UPLOADLEN(8) BITFIELDLEN(4) BITFIELD
//! NUMINFLIGHT(4) {INDEX(4) LENGTH(4) PBITFIELDLEN(4) PBITFIELD}*`. Bitfields are MSB first. A piece's
//! blocks are counted from the piece's start, so the last block of a piece (not only of the file) may
//! be short when the piece length is not a multiple of [`BLOCK`].
//!
//! `decode` accepts exactly the files aria2 can resume from without crashing or skipping bytes, and
//! rejects the rest (see [`ControlError`] for each rule and whether aria2 enforces it too).

use std::fmt;
use std::fs;
use std::io::{self, Read};
use std::ops::Range;
use std::path::{Path, PathBuf};

/// aria2's block: progress inside a piece is tracked per 16 KiB.
pub const BLOCK: u64 = 16 * 1024;

/// Largest control file `load` reads. A real one is a few hundred bytes plus one bit per piece: 64 MiB
/// is a bitfield for 2^29 pieces (512 TiB at aria2's 1 MiB pieces). Anything larger is not read.
pub const MAX_FILE_LEN: u64 = 64 << 20;

/// Bytes of one in-flight entry before its bitfield: INDEX, LENGTH, PBITFIELDLEN.
const IN_FLIGHT_HEAD: usize = 12;

/// What an `.aria2` file says about one download.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ControlFile {
    pub piece_length: u32,
    pub total_length: u64,
    /// BitTorrent's uploaded bytes; aria2 writes 0 for HTTP. Kept so a file round-trips.
    pub upload_length: u64,
    /// One bit per piece, MSB first; len = ceil(ceil(total/piece)/8).
    pub bitfield: Vec<u8>,
    /// Pieces partly done, in file order (aria2 writes them by ascending index).
    pub in_flight: Vec<InFlightPiece>,
}

/// A piece of which only some 16 KiB blocks are done.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InFlightPiece {
    pub index: u32,
    /// The piece's length in bytes: the piece length, or less for the file's last piece.
    pub length: u32,
    /// One bit per 16 KiB block, MSB first; len = ceil(ceil(length/16K)/8).
    pub bitfield: Vec<u8>,
}

/// Why a control file was rejected. Each variant says whether aria2 1.36 rejects it too.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ControlError {
    /// The file ends at byte `at` while `field` still needs bytes. aria2: rejects ("Failed to read
    /// from the segment file").
    Truncated { at: usize, field: &'static str },
    /// VER is neither 0 nor 1. aria2: rejects ("Unsupported ctrl file version").
    Version(u16),
    /// INFOHASHLEN is not 0, or EXT bit 0 (info-hash check) is set. aria2: ignores both for an HTTP
    /// download (it skips an info hash of up to 20 bytes); ringdl refuses to resume from a torrent's
    /// progress.
    BitTorrent { info_hash_len: u32 },
    /// PIECELEN is 0. aria2 1.36: crashes (SIGFPE); later versions reject it.
    ZeroPieceLength,
    /// TOTALLEN is 0. aria2 never writes a control file for an empty download.
    ZeroTotalLength,
    /// TOTALLEN exceeds `i64::MAX`, which no file can have (aria2 keeps lengths in `int64_t`).
    TotalTooLarge(u64),
    /// BITFIELDLEN is not ceil(ceil(total/piece)/8). aria2: rejects ("bitfield length mismatch").
    BitfieldLength { len: u64, pieces: u64 },
    /// A bit past the last piece is set. aria2: accepts, then never sees the download as complete
    /// (observed: it downloads every byte and hangs).
    SpareBits { pieces: u64 },
    /// An in-flight INDEX is not below the piece count. aria2: rejects ("piece index out of range").
    InFlightIndex { index: u32, pieces: u64 },
    /// The same index is listed twice. aria2: keeps the first and drops the rest silently.
    DuplicateInFlight { index: u32 },
    /// An in-flight LENGTH is not the piece's real length. aria2 only checks `length <= piece
    /// length`, and then marks the whole piece done once `length` bytes are in (observed: a corrupt
    /// file with exit 0). An entry for a piece the bitfield already marks complete is ignored by both,
    /// so there the `<=` rule is enough (aria2's own test fixtures rely on that).
    InFlightLength {
        index: u32,
        length: u32,
        expected: u32,
    },
    /// PBITFIELDLEN is not ceil(ceil(length/16K)/8). aria2: rejects ("piece bitfield length mismatch").
    InFlightBitfieldLength { index: u32, len: u32, expected: u32 },
    /// A block bit past the piece's last block is set. aria2: accepts, then aborts on an assertion
    /// (observed, `PiecedSegment.cc:47`).
    InFlightSpareBits { index: u32, blocks: u64 },
    /// Every block of a piece not marked complete is set. aria2 never writes this (it completes the
    /// piece instead) and aborts on it (observed, `PiecedSegment.cc:47`).
    InFlightComplete { index: u32 },
    /// Bytes follow the last in-flight piece. aria2: ignores them.
    TrailingBytes { at: usize, extra: usize },
    /// The file is larger than [`MAX_FILE_LEN`].
    TooLarge { len: u64 },
}

impl fmt::Display for ControlError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ControlError::Truncated { at, field } => {
                write!(f, "control file is truncated at byte {at} (in {field})")
            }
            ControlError::Version(v) => write!(f, "control file version {v} is not supported"),
            ControlError::BitTorrent { info_hash_len } => write!(
                f,
                "control file is for a BitTorrent download (info hash of {info_hash_len} bytes)"
            ),
            ControlError::ZeroPieceLength => write!(f, "control file has piece length 0"),
            ControlError::ZeroTotalLength => write!(f, "control file has total length 0"),
            ControlError::TotalTooLarge(t) => {
                write!(
                    f,
                    "control file has total length {t}, which is out of range"
                )
            }
            ControlError::BitfieldLength { len, pieces } => write!(
                f,
                "bitfield length {len} does not match {pieces} pieces (expected {})",
                pieces.div_ceil(8)
            ),
            ControlError::SpareBits { pieces } => write!(
                f,
                "bitfield marks pieces past the last one ({pieces} pieces)"
            ),
            ControlError::InFlightIndex { index, pieces } => write!(
                f,
                "in-flight piece index {index} is out of range ({pieces} pieces)"
            ),
            ControlError::DuplicateInFlight { index } => {
                write!(f, "in-flight piece {index} is listed twice")
            }
            ControlError::InFlightLength {
                index,
                length,
                expected,
            } => write!(
                f,
                "in-flight piece {index} has length {length}, but the piece is {expected} bytes"
            ),
            ControlError::InFlightBitfieldLength {
                index,
                len,
                expected,
            } => write!(
                f,
                "in-flight piece {index} has bitfield length {len}, expected {expected}"
            ),
            ControlError::InFlightSpareBits { index, blocks } => write!(
                f,
                "in-flight piece {index} marks blocks past its last one ({blocks} blocks)"
            ),
            ControlError::InFlightComplete { index } => write!(
                f,
                "in-flight piece {index} has every block done but is not marked complete"
            ),
            ControlError::TrailingBytes { at, extra } => write!(
                f,
                "control file has {extra} unexpected bytes after byte {at}"
            ),
            ControlError::TooLarge { len } => write!(
                f,
                "control file is {len} bytes, more than the {MAX_FILE_LEN} a control file can need"
            ),
        }
    }
}

impl std::error::Error for ControlError {}

/// Why `load` found no usable control file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LoadError {
    /// Reading failed (other than "not found"); the io error's text.
    Io(String),
    /// The bytes are not a control file ringdl can resume from.
    Bad(ControlError),
}

impl fmt::Display for LoadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LoadError::Io(e) => write!(f, "cannot read control file: {e}"),
            LoadError::Bad(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for LoadError {}

impl From<ControlError> for LoadError {
    fn from(e: ControlError) -> Self {
        LoadError::Bad(e)
    }
}

/// Reads big- or little-endian fields off a byte slice, never past its end.
struct Fields<'a> {
    bytes: &'a [u8],
    pos: usize,
    little_endian: bool,
}

impl<'a> Fields<'a> {
    fn take(&mut self, n: usize, field: &'static str) -> Result<&'a [u8], ControlError> {
        let left = self.bytes.len() - self.pos;
        if n > left {
            return Err(ControlError::Truncated {
                at: self.bytes.len(),
                field,
            });
        }
        let out = &self.bytes[self.pos..self.pos + n];
        self.pos += n;
        Ok(out)
    }

    fn array<const N: usize>(&mut self, field: &'static str) -> Result<[u8; N], ControlError> {
        let mut a = [0u8; N];
        a.copy_from_slice(self.take(N, field)?);
        Ok(a)
    }

    fn u32(&mut self, field: &'static str) -> Result<u32, ControlError> {
        let a = self.array::<4>(field)?;
        Ok(if self.little_endian {
            u32::from_le_bytes(a)
        } else {
            u32::from_be_bytes(a)
        })
    }

    fn u64(&mut self, field: &'static str) -> Result<u64, ControlError> {
        let a = self.array::<8>(field)?;
        Ok(if self.little_endian {
            u64::from_le_bytes(a)
        } else {
            u64::from_be_bytes(a)
        })
    }

    fn left(&self) -> usize {
        self.bytes.len() - self.pos
    }
}

fn bit(bits: &[u8], i: u64) -> bool {
    usize::try_from(i / 8)
        .ok()
        .and_then(|byte| bits.get(byte))
        .is_some_and(|b| b & (0x80 >> (i % 8)) != 0)
}

fn set_bit(bits: &mut [u8], i: u64) {
    if let Some(b) = usize::try_from(i / 8)
        .ok()
        .and_then(|byte| bits.get_mut(byte))
    {
        *b |= 0x80 >> (i % 8);
    }
}

/// Whether any bit at position `n` or later is set.
fn bits_past(bits: &[u8], n: u64) -> bool {
    let full = n / 8;
    let Ok(full) = usize::try_from(full) else {
        return false;
    };
    let Some(rest) = bits.get(full..) else {
        return false;
    };
    let mut rest = rest.iter();
    if n % 8 != 0 {
        // The byte holding bit n: its low (8 - n%8) bits are past n.
        if let Some(b) = rest.next() {
            if b & (0xffu8 >> (n % 8)) != 0 {
                return true;
            }
        }
    }
    rest.any(|b| *b != 0)
}

/// Blocks in a piece of `length` bytes.
fn blocks_in(length: u32) -> u64 {
    u64::from(length).div_ceil(BLOCK)
}

/// Bytes of the bitfield of a piece of `length` bytes.
fn block_bitfield_len(length: u32) -> u32 {
    // At most ceil(2^32 / 2^14 / 8) = 2^15.
    u32::try_from(blocks_in(length).div_ceil(8)).unwrap_or(u32::MAX)
}

/// Whether bits 0..n are all set.
fn all_set(bits: &[u8], n: u64) -> bool {
    (0..n).all(|i| bit(bits, i))
}

/// Appends `r` to sorted ranges, merging it into the last one when they touch.
fn push_merged(out: &mut Vec<Range<u64>>, r: Range<u64>) {
    if r.start >= r.end {
        return;
    }
    match out.last_mut() {
        Some(last) if r.start <= last.end => last.end = last.end.max(r.end),
        _ => out.push(r),
    }
}

impl ControlFile {
    /// Parses version 1 (big-endian) and version 0 (written in the host's byte order by old aria2;
    /// read as little-endian, the order of every host ringdl runs on), then checks it with
    /// [`ControlFile::check`]. Allocation is bounded by `bytes.len()` whatever the counts say.
    pub fn decode(bytes: &[u8]) -> Result<ControlFile, ControlError> {
        let mut r = Fields {
            bytes,
            pos: 0,
            little_endian: false,
        };
        let version = u16::from_be_bytes(r.array::<2>("the version")?);
        match version {
            0 => r.little_endian = true,
            1 => {}
            v => return Err(ControlError::Version(v)),
        }
        let ext = r.array::<4>("the extension flags")?;
        let info_hash_len = r.u32("the info hash length")?;
        if info_hash_len != 0 || ext[3] & 1 != 0 {
            return Err(ControlError::BitTorrent { info_hash_len });
        }
        let piece_length = r.u32("the piece length")?;
        let total_length = r.u64("the total length")?;
        let upload_length = r.u64("the upload length")?;
        let bitfield_len = r.u32("the bitfield length")?;
        // Checked here so that a wrong length reads as a mismatch, not as a truncation.
        let expected = expected_bitfield_len(piece_length, total_length)?;
        if u64::from(bitfield_len) != expected {
            return Err(ControlError::BitfieldLength {
                len: u64::from(bitfield_len),
                pieces: piece_count(piece_length, total_length),
            });
        }
        let bitfield = r.take(bitfield_len as usize, "the bitfield")?.to_vec();
        let count = r.u32("the in-flight piece count")?;
        // Each entry takes at least IN_FLIGHT_HEAD bytes, so the file bounds the count.
        let room = r.left() / IN_FLIGHT_HEAD;
        let mut in_flight = Vec::with_capacity((count as usize).min(room));
        for _ in 0..count {
            let index = r.u32("an in-flight piece index")?;
            let length = r.u32("an in-flight piece length")?;
            let len = r.u32("an in-flight bitfield length")?;
            let expected = block_bitfield_len(length);
            if len != expected {
                return Err(ControlError::InFlightBitfieldLength {
                    index,
                    len,
                    expected,
                });
            }
            let bits = r.take(len as usize, "an in-flight bitfield")?.to_vec();
            in_flight.push(InFlightPiece {
                index,
                length,
                bitfield: bits,
            });
        }
        if r.left() != 0 {
            return Err(ControlError::TrailingBytes {
                at: r.pos,
                extra: r.left(),
            });
        }
        let cf = ControlFile {
            piece_length,
            total_length,
            upload_length,
            bitfield,
            in_flight,
        };
        cf.check()?;
        Ok(cf)
    }

    /// Every rule `decode` applies, on a value built in memory: `save` refuses to write a file that
    /// fails it, so ringdl never hands aria2 a file it would crash on or misread.
    pub fn check(&self) -> Result<(), ControlError> {
        let expected = expected_bitfield_len(self.piece_length, self.total_length)?;
        let pieces = piece_count(self.piece_length, self.total_length);
        if self.bitfield.len() as u64 != expected {
            return Err(ControlError::BitfieldLength {
                len: self.bitfield.len() as u64,
                pieces,
            });
        }
        if bits_past(&self.bitfield, pieces) {
            return Err(ControlError::SpareBits { pieces });
        }
        // One bit per piece, the same size as the bitfield just checked, so bounded by the input.
        let mut seen = vec![0u8; self.bitfield.len()];
        for p in &self.in_flight {
            let index = p.index;
            if u64::from(index) >= pieces {
                return Err(ControlError::InFlightIndex { index, pieces });
            }
            if bit(&seen, u64::from(index)) {
                return Err(ControlError::DuplicateInFlight { index });
            }
            set_bit(&mut seen, u64::from(index));
            let complete = bit(&self.bitfield, u64::from(index));
            let real = self.piece_len(index);
            if p.length > self.piece_length || (!complete && p.length != real) {
                return Err(ControlError::InFlightLength {
                    index,
                    length: p.length,
                    expected: real,
                });
            }
            let expected = block_bitfield_len(p.length);
            if p.bitfield.len() as u64 != u64::from(expected) {
                return Err(ControlError::InFlightBitfieldLength {
                    index,
                    len: u32::try_from(p.bitfield.len()).unwrap_or(u32::MAX),
                    expected,
                });
            }
            let blocks = blocks_in(p.length);
            if bits_past(&p.bitfield, blocks) {
                return Err(ControlError::InFlightSpareBits { index, blocks });
            }
            if !complete && all_set(&p.bitfield, blocks) {
                return Err(ControlError::InFlightComplete { index });
            }
        }
        Ok(())
    }

    /// Version 1 bytes, exactly as aria2 writes them (EXT flags zero, INFOHASHLEN 0). The value is
    /// written as it is; call [`ControlFile::check`] first for one not made by `decode`/`from_done`.
    pub fn encode(&self) -> Vec<u8> {
        let len32 = |n: usize| u32::try_from(n).unwrap_or(u32::MAX).to_be_bytes();
        let mut out = Vec::with_capacity(
            38 + self.bitfield.len()
                + self
                    .in_flight
                    .iter()
                    .map(|p| IN_FLIGHT_HEAD + p.bitfield.len())
                    .sum::<usize>(),
        );
        out.extend_from_slice(&1u16.to_be_bytes());
        out.extend_from_slice(&[0; 4]);
        out.extend_from_slice(&0u32.to_be_bytes());
        out.extend_from_slice(&self.piece_length.to_be_bytes());
        out.extend_from_slice(&self.total_length.to_be_bytes());
        out.extend_from_slice(&self.upload_length.to_be_bytes());
        out.extend_from_slice(&len32(self.bitfield.len()));
        out.extend_from_slice(&self.bitfield);
        out.extend_from_slice(&len32(self.in_flight.len()));
        for p in &self.in_flight {
            out.extend_from_slice(&p.index.to_be_bytes());
            out.extend_from_slice(&p.length.to_be_bytes());
            out.extend_from_slice(&len32(p.bitfield.len()));
            out.extend_from_slice(&p.bitfield);
        }
        out
    }

    /// The control file for a download of `total` bytes in pieces of `piece_length` whose bytes `done`
    /// are on disk (any ranges; they are clamped to the file, sorted and merged here). A piece is
    /// complete when all its bytes are; otherwise its complete 16 KiB blocks (a piece's last block
    /// may be shorter) make it an in-flight piece. Only pieces with at least one complete block are
    /// listed: aria2 also lists pieces it was fetching with no block done yet, which says nothing.
    /// With `total` or `piece_length` 0 the result fails `check` (there is nothing to record).
    pub fn from_done(total: u64, piece_length: u32, done: &[Range<u64>]) -> ControlFile {
        let mut cf = ControlFile {
            piece_length,
            total_length: total,
            upload_length: 0,
            bitfield: Vec::new(),
            in_flight: Vec::new(),
        };
        if total == 0 || piece_length == 0 {
            return cf;
        }
        let plen = u64::from(piece_length);
        let pieces = total.div_ceil(plen);
        cf.bitfield = vec![0; usize::try_from(pieces.div_ceil(8)).unwrap_or(0)];

        let mut ranges: Vec<Range<u64>> = done
            .iter()
            .map(|r| r.start.min(total)..r.end.min(total))
            .filter(|r| r.start < r.end)
            .collect();
        ranges.sort_by_key(|r| r.start);
        let mut merged = Vec::with_capacity(ranges.len());
        for r in ranges {
            push_merged(&mut merged, r);
        }

        // Partial pieces by index, in ascending order because the ranges are.
        let mut partial: Vec<(u64, Vec<u8>)> = Vec::new();
        for r in merged {
            let first = r.start / plen;
            let last = (r.end - 1) / plen;
            for p in first..=last {
                let start = p * plen;
                let end = start.saturating_add(plen).min(total);
                if r.start <= start && end <= r.end {
                    set_bit(&mut cf.bitfield, p);
                    continue;
                }
                // Complete blocks of this piece inside r, relative to the piece's start.
                let (a, b, len) = (
                    r.start.max(start) - start,
                    r.end.min(end) - start,
                    end - start,
                );
                let mut blk = a.div_ceil(BLOCK);
                let mut marked = false;
                while blk * BLOCK < len && ((blk + 1) * BLOCK).min(len) <= b {
                    if !marked {
                        marked = true;
                        if partial.last().map(|(i, _)| *i) != Some(p) {
                            let bits = blocks_in(len as u32).div_ceil(8) as usize;
                            partial.push((p, vec![0; bits]));
                        }
                    }
                    if let Some((_, bits)) = partial.last_mut() {
                        set_bit(bits, blk);
                    }
                    blk += 1;
                }
            }
        }
        for (p, bits) in partial {
            let len = cf.piece_len_u64(p);
            if all_set(&bits, len.div_ceil(BLOCK)) {
                // Unreachable for merged ranges (a gap leaves a block incomplete), but aria2 aborts
                // on such an entry, so make sure.
                set_bit(&mut cf.bitfield, p);
                continue;
            }
            // A piece past index u32::MAX cannot be listed; its progress is lost, never invented.
            if let Ok(index) = u32::try_from(p) {
                cf.in_flight.push(InFlightPiece {
                    index,
                    length: len as u32,
                    bitfield: bits,
                });
            }
        }
        cf
    }

    /// The byte ranges this file says are done (complete pieces and complete blocks of in-flight
    /// pieces), merged, sorted, within `0..total_length`. Empty for a value that fails `check` on its
    /// lengths; in-flight entries of complete pieces add nothing.
    pub fn done_ranges(&self) -> Vec<Range<u64>> {
        if self.piece_length == 0 || self.total_length == 0 {
            return Vec::new();
        }
        let plen = u64::from(self.piece_length);
        let total = self.total_length;
        let pieces = piece_count(self.piece_length, total);
        let mut parts: Vec<Range<u64>> = Vec::new();
        // Runs of complete pieces.
        let mut p = 0u64;
        let limit = pieces.min(self.bitfield.len() as u64 * 8);
        while p < limit {
            if self.bitfield.get((p / 8) as usize) == Some(&0) && p % 8 == 0 {
                p += 8;
                continue;
            }
            if bit(&self.bitfield, p) {
                let start = p;
                while p < limit && bit(&self.bitfield, p) {
                    p += 1;
                }
                parts.push(start.saturating_mul(plen)..p.saturating_mul(plen).min(total));
            } else {
                p += 1;
            }
        }
        for ip in &self.in_flight {
            let index = u64::from(ip.index);
            if index >= pieces || bit(&self.bitfield, index) {
                continue;
            }
            let start = index.saturating_mul(plen);
            let end = start
                .saturating_add(u64::from(ip.length).min(plen))
                .min(total);
            for (byte_i, byte) in ip.bitfield.iter().enumerate() {
                if *byte == 0 {
                    continue;
                }
                for k in 0..8u64 {
                    if byte & (0x80 >> k) == 0 {
                        continue;
                    }
                    let b = byte_i as u64 * 8 + k;
                    let s = start.saturating_add(b.saturating_mul(BLOCK));
                    let e = s.saturating_add(BLOCK).min(end);
                    if s < e {
                        parts.push(s..e);
                    }
                }
            }
        }
        parts.sort_by_key(|r| r.start);
        let mut out = Vec::with_capacity(parts.len());
        for r in parts {
            push_merged(&mut out, r);
        }
        out
    }

    /// Bytes done.
    pub fn done_bytes(&self) -> u64 {
        self.done_ranges().iter().map(|r| r.end - r.start).sum()
    }

    /// Number of pieces.
    pub fn pieces(&self) -> u64 {
        piece_count(self.piece_length, self.total_length)
    }

    /// The real length of piece `index`: the piece length, or what is left for the last piece.
    pub fn piece_len(&self, index: u32) -> u32 {
        // Never above piece_length, so it fits.
        self.piece_len_u64(u64::from(index)) as u32
    }

    fn piece_len_u64(&self, index: u64) -> u64 {
        let plen = u64::from(self.piece_length);
        let start = index.saturating_mul(plen);
        self.total_length.saturating_sub(start).min(plen)
    }
}

/// ceil(total / piece), 0 when either is 0.
fn piece_count(piece_length: u32, total: u64) -> u64 {
    if piece_length == 0 {
        return 0;
    }
    total.div_ceil(u64::from(piece_length))
}

/// The BITFIELDLEN aria2 requires, after the length checks that must come first.
fn expected_bitfield_len(piece_length: u32, total: u64) -> Result<u64, ControlError> {
    if piece_length == 0 {
        return Err(ControlError::ZeroPieceLength);
    }
    if total == 0 {
        return Err(ControlError::ZeroTotalLength);
    }
    if total > i64::MAX as u64 {
        return Err(ControlError::TotalTooLarge(total));
    }
    Ok(piece_count(piece_length, total).div_ceil(8))
}

/// `<file>.aria2`.
pub fn control_path(file: &Path) -> PathBuf {
    let mut s = file.as_os_str().to_owned();
    s.push(".aria2");
    PathBuf::from(s)
}

/// Writes `cf` to `path` atomically: `<path>__temp` (as aria2 names it), fsync, rename, then fsync of
/// the directory so the rename itself survives a crash. A value failing `check` is not written
/// (`InvalidData`). On error the temporary file is removed and `path` is as it was.
pub fn save(path: &Path, cf: &ControlFile) -> io::Result<()> {
    cf.check()
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?;
    super::atomic_write(path, &cf.encode())
}

/// Makes the control file at `path` claim nothing, its length and pieces kept (a missing file is
/// left missing). Done before the file it describes is emptied to start over: at no moment may it
/// claim bytes the file no longer holds, which a later run would take for data. An unreadable one
/// is an error, and the file is then left as it is.
pub fn disclaim(path: &Path) -> io::Result<()> {
    match load(path) {
        Ok(Some(cf)) => save(
            path,
            &ControlFile::from_done(cf.total_length, cf.piece_length, &[]),
        ),
        Ok(None) => Ok(()),
        Err(e) => Err(io::Error::other(e.to_string())),
    }
}

/// Reads and decodes `path`; a missing file is `Ok(None)`. Reads at most [`MAX_FILE_LEN`] bytes.
pub fn load(path: &Path) -> Result<Option<ControlFile>, LoadError> {
    let f = match fs::File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(LoadError::Io(e.to_string())),
    };
    let mut bytes = Vec::new();
    f.take(MAX_FILE_LEN + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| LoadError::Io(e.to_string()))?;
    if bytes.len() as u64 > MAX_FILE_LEN {
        let len = fs::metadata(path)
            .map(|m| m.len())
            .unwrap_or(bytes.len() as u64);
        return Err(LoadError::Bad(ControlError::TooLarge { len }));
    }
    Ok(Some(ControlFile::decode(&bytes)?))
}

#[cfg(test)]
// Vectors of one range are what the tests mean.
#[allow(clippy::single_range_in_vec_init)]
mod tests {
    use super::*;

    const M: u32 = 1 << 20;

    #[allow(clippy::too_many_arguments)]
    /// Builds a control file the way the format describes it, field by field, independently of
    /// `encode`: `v0` writes version 0 in little-endian order.
    fn build(
        v0: bool,
        ext: [u8; 4],
        info_hash: &[u8],
        piece: u32,
        total: u64,
        upload: u64,
        bitfield: &[u8],
        in_flight: &[(u32, u32, &[u8])],
    ) -> Vec<u8> {
        let w32 = |v: u32| {
            if v0 {
                v.to_le_bytes()
            } else {
                v.to_be_bytes()
            }
        };
        let w64 = |v: u64| {
            if v0 {
                v.to_le_bytes()
            } else {
                v.to_be_bytes()
            }
        };
        let mut b = vec![0, if v0 { 0 } else { 1 }];
        b.extend_from_slice(&ext);
        b.extend_from_slice(&w32(info_hash.len() as u32));
        b.extend_from_slice(info_hash);
        b.extend_from_slice(&w32(piece));
        b.extend_from_slice(&w64(total));
        b.extend_from_slice(&w64(upload));
        b.extend_from_slice(&w32(bitfield.len() as u32));
        b.extend_from_slice(bitfield);
        b.extend_from_slice(&w32(in_flight.len() as u32));
        for (i, l, bits) in in_flight {
            b.extend_from_slice(&w32(*i));
            b.extend_from_slice(&w32(*l));
            b.extend_from_slice(&w32(bits.len() as u32));
            b.extend_from_slice(bits);
        }
        b
    }

    fn v1(piece: u32, total: u64, bitfield: &[u8], in_flight: &[(u32, u32, &[u8])]) -> Vec<u8> {
        build(false, [0; 4], &[], piece, total, 0, bitfield, in_flight)
    }

    fn ip(index: u32, length: u32, bitfield: &[u8]) -> InFlightPiece {
        InFlightPiece {
            index,
            length,
            bitfield: bitfield.to_vec(),
        }
    }

    // Real files left by aria2c 1.36.0 on SIGINT (see testdata/README.md for how they were made).
    const REAL_3MIB: &[u8] = include_bytes!("testdata/x4-3MiB.aria2");
    const REAL_ODD: &[u8] = include_bytes!("testdata/x4-odd-3000001.aria2");
    const REAL_10MIB: &[u8] = include_bytes!("testdata/x4-10MiB-plus3.aria2");
    const REAL_SLOW: &[u8] = include_bytes!("testdata/x4-10MiB-plus3-slow.aria2");
    const REAL: [&[u8]; 4] = [REAL_3MIB, REAL_ODD, REAL_10MIB, REAL_SLOW];

    #[test]
    fn real_3mib_file() {
        let cf = ControlFile::decode(REAL_3MIB).unwrap();
        assert_eq!(REAL_3MIB.len(), 99);
        let mut b0 = vec![0xff, 0xfe];
        b0.resize(8, 0);
        let mut b12 = vec![0xff, 0xf0];
        b12.resize(8, 0);
        assert_eq!(
            cf,
            ControlFile {
                piece_length: M,
                total_length: 3 << 20,
                upload_length: 0,
                bitfield: vec![0],
                in_flight: vec![ip(0, M, &b0), ip(1, M, &b12), ip(2, M, &b12)],
            }
        );
        assert_eq!(
            cf.done_ranges(),
            vec![
                0..15 * BLOCK,
                u64::from(M)..u64::from(M) + 12 * BLOCK,
                2 * u64::from(M)..2 * u64::from(M) + 12 * BLOCK
            ]
        );
        assert_eq!(cf.done_bytes(), 39 * BLOCK);
        assert_eq!(cf.encode(), REAL_3MIB);
    }

    #[test]
    fn real_file_with_short_last_piece() {
        let cf = ControlFile::decode(REAL_ODD).unwrap();
        assert_eq!((cf.piece_length, cf.total_length), (M, 3_000_001));
        assert_eq!(cf.bitfield, vec![0]);
        let idx: Vec<(u32, u32, usize)> = cf
            .in_flight
            .iter()
            .map(|p| (p.index, p.length, p.bitfield.len()))
            .collect();
        // The last piece is 3_000_001 - 2 MiB = 902_849 bytes: 56 blocks, 7 bytes of bits.
        assert_eq!(idx, vec![(0, M, 8), (1, M, 8), (2, 902_849, 7)]);
        assert_eq!(cf.in_flight[0].bitfield[..3], [0xff, 0xff, 0xf8]);
        assert_eq!(cf.in_flight[2].bitfield, vec![0xff, 0xff, 0xc0, 0, 0, 0, 0]);
        assert_eq!(cf.done_bytes(), (21 + 18 + 18) * BLOCK);
        assert_eq!(cf.encode(), REAL_ODD);
    }

    #[test]
    fn real_file_with_complete_pieces_and_empty_in_flight_pieces() {
        let cf = ControlFile::decode(REAL_10MIB).unwrap();
        assert_eq!((cf.piece_length, cf.total_length), (M, 10_485_763));
        assert_eq!(cf.pieces(), 11);
        // Pieces 0, 3, 6 and 9 complete.
        assert_eq!(cf.bitfield, vec![0x92, 0x40]);
        let summary: Vec<(u32, u32, Vec<u8>)> = cf
            .in_flight
            .iter()
            .map(|p| (p.index, p.length, p.bitfield.clone()))
            .collect();
        assert_eq!(
            summary,
            vec![
                (1, M, vec![0xc0, 0, 0, 0, 0, 0, 0, 0]),
                // aria2 lists pieces it was fetching even with no block done.
                (4, M, vec![0; 8]),
                (7, M, vec![0x80, 0, 0, 0, 0, 0, 0, 0]),
                // The 3-byte last piece: one short block.
                (10, 3, vec![0]),
            ]
        );
        let m = u64::from(M);
        assert_eq!(
            cf.done_ranges(),
            vec![
                0..m + 2 * BLOCK,
                3 * m..4 * m,
                6 * m..7 * m + BLOCK,
                9 * m..10 * m
            ]
        );
        assert_eq!(cf.encode(), REAL_10MIB);

        let slow = ControlFile::decode(REAL_SLOW).unwrap();
        assert_eq!(slow.bitfield, vec![0, 0]);
        let idx: Vec<u32> = slow.in_flight.iter().map(|p| p.index).collect();
        assert_eq!(idx, vec![0, 3, 6, 9]);
        assert_eq!(slow.done_ranges(), vec![0..BLOCK]);
        assert_eq!(slow.encode(), REAL_SLOW);
    }

    #[test]
    fn real_files_rebuilt_from_their_done_ranges() {
        // from_done drops the in-flight pieces with no block done; everything else is identical.
        for bytes in REAL {
            let cf = ControlFile::decode(bytes).unwrap();
            let again = ControlFile::from_done(cf.total_length, cf.piece_length, &cf.done_ranges());
            let mut expected = cf.clone();
            expected
                .in_flight
                .retain(|p| p.bitfield.iter().any(|b| *b != 0));
            assert_eq!(again, expected);
        }
    }

    #[test]
    fn round_trip_v1() {
        let cf = ControlFile {
            piece_length: M,
            total_length: 5 * u64::from(M) + 12345,
            upload_length: 77,
            bitfield: vec![0b1010_0000],
            in_flight: vec![ip(1, M, &[0x80, 0, 0, 0, 0, 0, 0, 1]), ip(5, 12345, &[0])],
        };
        cf.check().unwrap();
        let bytes = cf.encode();
        assert_eq!(&bytes[..2], &[0, 1]);
        assert_eq!(ControlFile::decode(&bytes).unwrap(), cf);
        assert_eq!(
            bytes,
            build(
                false,
                [0; 4],
                &[],
                M,
                cf.total_length,
                77,
                &[0xa0],
                &[(1, M, &[0x80, 0, 0, 0, 0, 0, 0, 1]), (5, 12345, &[0])]
            )
        );
    }

    /// aria2's test/load-nonBt.aria2 (version 0) and load-nonBt-v0001.aria2 (version 1) hold, per
    /// test/DefaultBtProgressInfoFileTest.cc: piece length 1024, total 81920 (80 pieces), bitfield
    /// fffffffffffffffffffe, and in-flight pieces 1 (1024 bytes, bits 00) and 2 (512 bytes). Both are
    /// accepted: pieces 1 and 2 are complete in the bitfield, so their entries add nothing.
    #[test]
    fn aria2_fixture_layouts() {
        let bits = [0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xfe];
        let entries: [(u32, u32, &[u8]); 2] = [(1, 1024, &[0]), (2, 512, &[0])];
        let expected = ControlFile {
            piece_length: 1024,
            total_length: 81920,
            upload_length: 0,
            bitfield: bits.to_vec(),
            in_flight: vec![ip(1, 1024, &[0]), ip(2, 512, &[0])],
        };
        let v0 = build(true, [0; 4], &[], 1024, 81920, 0, &bits, &entries);
        let v1 = build(false, [0; 4], &[], 1024, 81920, 0, &bits, &entries);
        // VER, EXT, INFOHASHLEN, PIECELEN = 1024 and TOTALLEN = 81920, little-endian.
        assert_eq!(
            &v0[..22],
            &[0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 4, 0, 0, 0, 0x40, 1, 0, 0, 0, 0, 0]
        );
        assert_eq!(ControlFile::decode(&v0).unwrap(), expected);
        assert_eq!(ControlFile::decode(&v1).unwrap(), expected);
        // Version 0 is read but written as version 1.
        assert_eq!(ControlFile::decode(&v0).unwrap().encode(), v1);
        assert_eq!(expected.done_ranges(), vec![0..79 * 1024]);
        // The same 512-byte entry for a piece that is not complete would lose bytes in aria2.
        let mut bits2 = bits;
        bits2[0] = 0x9f; // piece 1 and 2 not complete
        let bad = build(false, [0; 4], &[], 1024, 81920, 0, &bits2, &entries);
        assert_eq!(
            ControlFile::decode(&bad),
            Err(ControlError::InFlightLength {
                index: 2,
                length: 512,
                expected: 1024
            })
        );
    }

    #[test]
    fn v0_is_little_endian() {
        let v0 = build(
            true,
            [0; 4],
            &[],
            M,
            3 << 20,
            0,
            &[0x40],
            &[(0, M, &[0x80, 0, 0, 0, 0, 0, 0, 0])],
        );
        let cf = ControlFile::decode(&v0).unwrap();
        assert_eq!(cf.bitfield, vec![0x40]);
        assert_eq!(
            cf.done_ranges(),
            vec![0..BLOCK, u64::from(M)..2 * u64::from(M)]
        );
    }

    #[test]
    fn from_done_odd_totals() {
        let m = u64::from(M);
        // (total, done, expected complete-piece bits, expected in-flight, expected done_ranges)
        struct Case {
            total: u64,
            done: Vec<Range<u64>>,
            bitfield: Vec<u8>,
            in_flight: Vec<InFlightPiece>,
            ranges: Vec<Range<u64>>,
        }
        let cases = vec![
            Case {
                total: 1,
                done: vec![0..1],
                bitfield: vec![0x80],
                in_flight: vec![],
                ranges: vec![0..1],
            },
            Case {
                total: 1,
                done: vec![],
                bitfield: vec![0],
                in_flight: vec![],
                ranges: vec![],
            },
            Case {
                total: 16383,
                done: vec![0..16382],
                bitfield: vec![0],
                in_flight: vec![],
                ranges: vec![],
            },
            Case {
                total: 16383,
                done: vec![0..16383],
                bitfield: vec![0x80],
                in_flight: vec![],
                ranges: vec![0..16383],
            },
            Case {
                total: 16384,
                done: vec![1..16384],
                bitfield: vec![0],
                in_flight: vec![],
                ranges: vec![],
            },
            Case {
                total: 16384,
                done: vec![0..16384],
                bitfield: vec![0x80],
                in_flight: vec![],
                ranges: vec![0..16384],
            },
            Case {
                total: 16385,
                done: vec![0..16384],
                bitfield: vec![0],
                in_flight: vec![ip(0, 16385, &[0x80])],
                ranges: vec![0..16384],
            },
            // The file's last block is 1 byte, and counts once that byte is there.
            Case {
                total: 16385,
                done: vec![16384..16385],
                bitfield: vec![0],
                in_flight: vec![ip(0, 16385, &[0x40])],
                ranges: vec![16384..16385],
            },
            Case {
                total: 16385,
                done: vec![0..16385],
                bitfield: vec![0x80],
                in_flight: vec![],
                ranges: vec![0..16385],
            },
            // Three pieces, the last 5000 bytes: piece 0 complete, piece 1 blocks 0 and 2 (block 1
            // partial, block 3 partial), piece 2 its single short block.
            Case {
                total: 2 * m + 5000,
                done: vec![
                    0..m + BLOCK,
                    m + BLOCK + 10..m + 3 * BLOCK + 100,
                    2 * m..2 * m + 5000,
                ],
                bitfield: vec![0xa0],
                in_flight: vec![ip(1, M, &[0xa0, 0, 0, 0, 0, 0, 0, 0])],
                ranges: vec![
                    0..m + BLOCK,
                    m + 2 * BLOCK..m + 3 * BLOCK,
                    2 * m..2 * m + 5000,
                ],
            },
            // Short last piece of several blocks with a short last block (40000 = 2*16384 + 7232).
            Case {
                total: m + 40000,
                done: vec![m + 2 * BLOCK..m + 40000],
                bitfield: vec![0],
                in_flight: vec![ip(1, 40000, &[0x20])],
                ranges: vec![m + 2 * BLOCK..m + 40000],
            },
            Case {
                total: m + 40000,
                done: vec![m + 2 * BLOCK..m + 39999],
                bitfield: vec![0],
                in_flight: vec![],
                ranges: vec![],
            },
        ];
        for c in cases {
            let cf = ControlFile::from_done(c.total, M, &c.done);
            assert_eq!(
                cf.bitfield, c.bitfield,
                "total {} done {:?}",
                c.total, c.done
            );
            assert_eq!(
                cf.in_flight, c.in_flight,
                "total {} done {:?}",
                c.total, c.done
            );
            assert_eq!(
                cf.done_ranges(),
                c.ranges,
                "total {} done {:?}",
                c.total,
                c.done
            );
            cf.check().unwrap();
            assert_eq!(ControlFile::decode(&cf.encode()).unwrap(), cf);
        }
    }

    #[test]
    fn from_done_normalises_its_input() {
        let m = u64::from(M);
        let messy = [
            3 * BLOCK..4 * BLOCK,
            0..BLOCK,
            BLOCK..2 * BLOCK,
            5..20,
            2 * m..9 * m,
        ];
        let cf = ControlFile::from_done(2 * m, M, &messy);
        assert_eq!(cf.done_ranges(), vec![0..2 * BLOCK, 3 * BLOCK..4 * BLOCK]);
        // Adjacent ranges that together cover a piece make it complete.
        let cf = ControlFile::from_done(2 * m, M, &[0..100, 100..m]);
        assert_eq!((cf.bitfield.clone(), cf.in_flight.len()), (vec![0x80], 0));
        // A piece length that is not a multiple of 16 KiB: each piece's last block is short.
        let cf = ControlFile::from_done(100_000, 20_000, &[20_000..36_384, 36_384..39_999]);
        assert_eq!(cf.in_flight, vec![ip(1, 20_000, &[0x80])]);
        assert_eq!(cf.done_ranges(), vec![20_000..36_384]);
        let cf = ControlFile::from_done(100_000, 20_000, &[36_384..40_000]);
        assert_eq!(cf.in_flight, vec![ip(1, 20_000, &[0x40])]);
    }

    #[test]
    fn from_done_matches_a_byte_map() {
        // Random done sets on small geometries, checked against a byte-by-byte model.
        let mut rng = Rng(0x1234_5678_9abc_def1);
        // Under Miri, a few small geometries: the byte map is walked byte by byte.
        let (rounds, pieces) = if cfg!(miri) { (4, 2) } else { (300, 6) };
        for _ in 0..rounds {
            let piece = [BLOCK as u32, 3 * BLOCK as u32, 20_000, 65_536][rng.below(4) as usize];
            let total = 1 + rng.below(pieces * u64::from(piece));
            let mut done = Vec::new();
            for _ in 0..rng.below(6) {
                let s = rng.below(total);
                let e = s + rng.below(total - s + 1);
                done.push(s..e);
            }
            let mut have = vec![false; total as usize];
            for r in &done {
                for b in r.clone() {
                    have[b as usize] = true;
                }
            }
            let cf = ControlFile::from_done(total, piece, &done);
            cf.check().unwrap();
            // A block (of a piece, from the piece's start) is claimed whole exactly when every
            // one of its bytes is there, and not at all otherwise.
            let mut claimed = vec![false; total as usize];
            for r in cf.done_ranges() {
                for b in r {
                    claimed[b as usize] = true;
                }
            }
            let plen = u64::from(piece);
            for pstart in (0..total).step_by(plen as usize) {
                let pend = (pstart + plen).min(total);
                for bstart in (pstart..pend).step_by(BLOCK as usize) {
                    let block = bstart as usize..(bstart + BLOCK).min(pend) as usize;
                    let whole = have[block.clone()].iter().all(|h| *h);
                    assert!(
                        claimed[block.clone()].iter().all(|c| *c == whole),
                        "block {block:?} of total {total}, piece {piece}, done {done:?}"
                    );
                }
            }
            assert_eq!(ControlFile::decode(&cf.encode()).unwrap(), cf);
        }
    }

    #[test]
    fn every_truncation_is_an_error() {
        for bytes in REAL {
            for n in 0..bytes.len() {
                match ControlFile::decode(&bytes[..n]) {
                    Err(ControlError::Truncated { at, .. }) => assert_eq!(at, n),
                    other => panic!("prefix of {n} bytes gave {other:?}"),
                }
            }
        }
    }

    #[test]
    fn hostile_inputs() {
        let m = u64::from(M);
        let z8: &[u8] = &[0; 8];
        let e = |b: &[u8]| ControlFile::decode(b).unwrap_err();

        assert_eq!(
            e(&v1(M, 3 * m, &[0, 0], &[])),
            ControlError::BitfieldLength { len: 2, pieces: 3 }
        );
        assert_eq!(
            e(&v1(M, 17 * m, &[0, 0], &[])),
            ControlError::BitfieldLength { len: 2, pieces: 17 }
        );
        assert_eq!(
            e(&v1(M, 9 * m, &[0], &[])),
            ControlError::BitfieldLength { len: 1, pieces: 9 }
        );
        assert_eq!(
            e(&v1(M, 3 * m, &[0x10], &[])),
            ControlError::SpareBits { pieces: 3 }
        );
        assert_eq!(
            e(&v1(M, 9 * m, &[0xff, 0x40], &[])),
            ControlError::SpareBits { pieces: 9 }
        );
        assert_eq!(
            e(&v1(M, 3 * m, &[0], &[(3, M, z8)])),
            ControlError::InFlightIndex {
                index: 3,
                pieces: 3
            }
        );
        assert_eq!(
            e(&v1(M, 3 * m, &[0], &[(u32::MAX, M, z8)])),
            ControlError::InFlightIndex {
                index: u32::MAX,
                pieces: 3
            }
        );
        assert_eq!(
            e(&v1(M, 3 * m, &[0], &[(1, M, z8), (1, M, z8)])),
            ControlError::DuplicateInFlight { index: 1 }
        );
        assert_eq!(
            e(&v1(M, 3 * m, &[0], &[(0, 16384, &[0])])),
            ControlError::InFlightLength {
                index: 0,
                length: 16384,
                expected: M
            }
        );
        assert_eq!(
            e(&v1(M, 3 * m, &[0x80], &[(0, M + 1, &[0; 9])])),
            ControlError::InFlightLength {
                index: 0,
                length: M + 1,
                expected: M
            }
        );
        assert_eq!(
            e(&v1(M, 2 * m + 3, &[0], &[(2, M, z8)])),
            ControlError::InFlightLength {
                index: 2,
                length: M,
                expected: 3
            }
        );
        assert_eq!(
            e(&v1(M, 3 * m, &[0], &[(0, M, &[0; 7])])),
            ControlError::InFlightBitfieldLength {
                index: 0,
                len: 7,
                expected: 8
            }
        );
        assert_eq!(
            e(&v1(M, 2 * m + 3, &[0], &[(2, 3, &[0x40])])),
            ControlError::InFlightSpareBits {
                index: 2,
                blocks: 1
            }
        );
        assert_eq!(
            e(&v1(M, 3 * m, &[0], &[(0, M, &[0xff; 8])])),
            ControlError::InFlightComplete { index: 0 }
        );
        assert_eq!(
            e(&v1(M, 2 * m + 3, &[0], &[(2, 3, &[0x80])])),
            ControlError::InFlightComplete { index: 2 }
        );
        // ... but an all-done entry for a piece already marked complete is harmless.
        ControlFile::decode(&v1(M, 3 * m, &[0x80], &[(0, M, &[0xff; 8])])).unwrap();

        let mut trailing = REAL_3MIB.to_vec();
        trailing.extend_from_slice(b"junk");
        assert_eq!(
            e(&trailing),
            ControlError::TrailingBytes { at: 99, extra: 4 }
        );

        let mut ver = REAL_3MIB.to_vec();
        ver[1] = 2;
        assert_eq!(e(&ver), ControlError::Version(2));
        ver[0] = 1;
        ver[1] = 0;
        assert_eq!(e(&ver), ControlError::Version(256));

        let bt = build(false, [0, 0, 0, 1], &[0x11; 20], M, 3 * m, 0, &[0], &[]);
        assert_eq!(e(&bt), ControlError::BitTorrent { info_hash_len: 20 });
        let bt = build(false, [0; 4], &[0x11; 20], M, 3 * m, 0, &[0], &[]);
        assert_eq!(e(&bt), ControlError::BitTorrent { info_hash_len: 20 });
        let bt = build(false, [0, 0, 0, 1], &[], M, 3 * m, 0, &[0], &[]);
        assert_eq!(e(&bt), ControlError::BitTorrent { info_hash_len: 0 });
        // Other EXT bits mean nothing to aria2 and are ignored.
        let ext = build(false, [0x80, 0, 0, 2], &[], M, 3 * m, 0, &[0], &[]);
        assert_eq!(
            ControlFile::decode(&ext).unwrap().encode(),
            v1(M, 3 * m, &[0], &[])
        );
        assert!(e(&e_info_hash_huge()).to_string().contains("BitTorrent"));

        assert_eq!(e(&v1(M, 0, &[], &[])), ControlError::ZeroTotalLength);
        assert_eq!(e(&v1(0, 3 * m, &[], &[])), ControlError::ZeroPieceLength);
        assert_eq!(
            e(&v1(M, u64::MAX, &[], &[])),
            ControlError::TotalTooLarge(u64::MAX)
        );
        // A bitfield length that would need gigabytes: rejected before anything is read.
        assert_eq!(
            e(&v1(1, i64::MAX as u64, &[], &[])),
            ControlError::BitfieldLength {
                len: 0,
                pieces: i64::MAX as u64
            }
        );
    }

    fn e_info_hash_huge() -> Vec<u8> {
        let mut b = vec![0, 1, 0, 0, 0, 0];
        b.extend_from_slice(&u32::MAX.to_be_bytes());
        b
    }

    #[test]
    fn hostile_counts_do_not_allocate() {
        // NUMINFLIGHT = 0xFFFFFFFF followed by one real entry: truncated after it, and the vector was
        // sized by the bytes present (a 4-billion-entry reservation would abort the test binary).
        let good = v1(M, 3 << 20, &[0], &[(0, M, &[0x80, 0, 0, 0, 0, 0, 0, 0])]);
        let count_at = good.len() - 20 - 4;
        let mut bad = good.clone();
        bad[count_at..count_at + 4].copy_from_slice(&u32::MAX.to_be_bytes());
        assert_eq!(
            ControlFile::decode(&bad),
            Err(ControlError::Truncated {
                at: bad.len(),
                field: "an in-flight piece index"
            })
        );
        // A huge bitfield length that matches a huge total, in a short file.
        let huge = v1(1, 8 * u64::from(u32::MAX), &[], &[]);
        let mut huge = huge[..30].to_vec();
        huge.extend_from_slice(&u32::MAX.to_be_bytes());
        assert!(matches!(
            ControlFile::decode(&huge),
            Err(ControlError::Truncated {
                field: "the bitfield",
                ..
            })
        ));
    }

    #[test]
    fn errors_read_as_one_line() {
        let cases = [
            (
                ControlError::Truncated {
                    at: 37,
                    field: "the bitfield",
                },
                "control file is truncated at byte 37 (in the bitfield)",
            ),
            (
                ControlError::Version(2),
                "control file version 2 is not supported",
            ),
            (
                ControlError::BitTorrent { info_hash_len: 20 },
                "control file is for a BitTorrent download (info hash of 20 bytes)",
            ),
            (
                ControlError::BitfieldLength { len: 5, pieces: 3 },
                "bitfield length 5 does not match 3 pieces (expected 1)",
            ),
            (
                ControlError::InFlightLength {
                    index: 2,
                    length: 512,
                    expected: 1024,
                },
                "in-flight piece 2 has length 512, but the piece is 1024 bytes",
            ),
        ];
        for (e, text) in cases {
            assert_eq!(e.to_string(), text);
        }
        assert_eq!(
            LoadError::Bad(ControlError::ZeroTotalLength).to_string(),
            "control file has total length 0"
        );
    }

    /// xorshift64*: a fixed-seed generator, so failures reproduce.
    struct Rng(u64);
    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 >> 12;
            self.0 ^= self.0 << 25;
            self.0 ^= self.0 >> 27;
            self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
        }
        fn below(&mut self, n: u64) -> u64 {
            if n == 0 {
                0
            } else {
                self.next() % n
            }
        }
    }

    #[test]
    fn mutated_files_never_panic() {
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        let mut seeds: Vec<Vec<u8>> = REAL.iter().map(|b| b.to_vec()).collect();
        seeds.push(v1(1024, 81920, &[0xff; 10], &[]));
        seeds.push(ControlFile::from_done(16385, M, &[0..16384]).encode());
        let interesting: [u32; 8] = [0, 1, 2, 3, 0x80, 16384, M, u32::MAX];
        let mut accepted = 0;
        // Under Miri a fiftieth of the rounds (and of the acceptances asked for below).
        let rounds = if cfg!(miri) { 1_000 } else { 50_000 };
        for round in 0..rounds {
            let mut b = seeds[round % seeds.len()].clone();
            for _ in 0..1 + rng.below(4) {
                let len = b.len() as u64;
                match rng.below(6) {
                    0 if len > 0 => {
                        let i = rng.below(len) as usize;
                        b[i] ^= 1 << rng.below(8);
                    }
                    1 if len > 0 => {
                        let i = rng.below(len) as usize;
                        b[i] = rng.next() as u8;
                    }
                    2 => b.truncate(rng.below(len + 1) as usize),
                    3 => {
                        let i = rng.below(len + 1) as usize;
                        b.insert(i, rng.next() as u8);
                    }
                    4 if len >= 4 => {
                        // Overwrite an aligned-ish 4-byte field with a boundary value.
                        let i = rng.below(len - 3) as usize;
                        let v = interesting[rng.below(8) as usize].to_be_bytes();
                        b[i..i + 4].copy_from_slice(&v);
                    }
                    _ if len > 0 => {
                        let i = rng.below(len) as usize;
                        b.remove(i);
                    }
                    _ => {}
                }
            }
            if let Ok(cf) = ControlFile::decode(&b) {
                accepted += 1;
                cf.check().unwrap();
                let ranges = cf.done_ranges();
                let mut end = 0;
                for r in &ranges {
                    assert!(
                        r.start < r.end && r.end <= cf.total_length,
                        "{r:?} in {cf:?}"
                    );
                    assert!(end == 0 || r.start > end, "ranges not merged: {ranges:?}");
                    end = r.end;
                }
                assert_eq!(ControlFile::decode(&cf.encode()).unwrap(), cf);
            }
        }
        // The mutations must not all be rejected, or this tests only the first check.
        assert!(
            accepted > rounds / 25,
            "only {accepted} mutated files were accepted"
        );
    }

    #[test]
    fn save_and_load() {
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path().join("f.bin");
        let path = control_path(&data);
        assert_eq!(path, dir.path().join("f.bin.aria2"));
        assert_eq!(load(&path), Ok(None));

        let cf = ControlFile::decode(REAL_ODD).unwrap();
        save(&path, &cf).unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), REAL_ODD);
        assert!(!dir.path().join("f.bin.aria2__temp").exists());
        assert_eq!(load(&path), Ok(Some(cf.clone())));

        // Overwrites in place.
        let cf2 = ControlFile::from_done(cf.total_length, M, &[0..3 * BLOCK]);
        save(&path, &cf2).unwrap();
        assert_eq!(load(&path), Ok(Some(cf2)));

        // An invalid value is not written, and the old file stays.
        let mut bad = cf.clone();
        bad.bitfield.push(0);
        assert_eq!(
            save(&path, &bad).unwrap_err().kind(),
            io::ErrorKind::InvalidData
        );
        assert!(load(&path).unwrap().is_some());

        std::fs::write(&path, &REAL_ODD[..40]).unwrap();
        assert!(matches!(
            load(&path),
            Err(LoadError::Bad(ControlError::Truncated { .. }))
        ));

        // A directory where the file should be is an io error, not "missing".
        let d = dir.path().join("d.aria2");
        std::fs::create_dir(&d).unwrap();
        assert!(matches!(load(&d), Err(LoadError::Io(_))));
        // Saving into a missing directory fails and leaves no temp file behind.
        let missing = dir.path().join("no/such/f.aria2");
        assert!(save(&missing, &cf).is_err());
    }
}
