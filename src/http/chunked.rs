//! A push-style decoder for chunked bodies (RFC 9112 §7.1): size lines with extensions,
//! chunk data, the CRLF after it, the last chunk and the trailer section. It owns no
//! buffer: it reports which bytes of the caller's input are body data.

use std::ops::Range;

use super::error::HttpError;

/// Longest chunk size line accepted, extensions included, line ending excluded.
pub const MAX_CHUNK_LINE: usize = 4 * 1024;

/// Longest trailer section accepted, line endings included.
pub const MAX_TRAILERS: usize = 64 * 1024;

/// What one call to [`ChunkedDecoder::decode`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ChunkEvent {
    /// `input[range]` is body data (never empty).
    Data(Range<usize>),
    /// The body and its trailers are complete.
    Done,
}

/// Where the decoder is in the chunked framing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Reading the hex digits of a chunk size; `true` once at least one was seen.
    Size(bool),
    /// After the size digits, in whitespace (BWS) before `;` or the line end.
    SizeSpace,
    /// Inside chunk extensions, skipped up to the line end.
    Extension,
    /// Saw CR at the end of the size line.
    SizeLf,
    /// Inside chunk data; this many bytes are still to come.
    Data(u64),
    /// Chunk data complete; expecting its CRLF.
    DataCr,
    /// Saw the CR after chunk data.
    DataLf,
    /// At the start of a trailer line (or of the final empty line).
    TrailerStart,
    /// Inside a trailer field line.
    TrailerLine,
    /// Saw CR at the end of a trailer field line.
    TrailerLf,
    /// Saw CR of the final empty line.
    FinalLf,
    /// The message is complete.
    Done,
}

/// Decodes a chunked body pushed to it in pieces of any size, down to one byte.
#[derive(Debug, Clone)]
pub struct ChunkedDecoder {
    state: State,
    /// Size of the chunk whose size line is being read.
    size: u64,
    /// Bytes of the current size line so far.
    line_len: usize,
    /// Bytes of the trailer section so far.
    trailer_len: usize,
}

impl Default for ChunkedDecoder {
    fn default() -> Self {
        Self::new()
    }
}

fn bad(why: &str) -> HttpError {
    HttpError::BadChunk(why.to_string())
}

impl ChunkedDecoder {
    /// A decoder positioned at the first chunk size line.
    pub fn new() -> Self {
        ChunkedDecoder {
            state: State::Size(false),
            size: 0,
            line_len: 0,
            trailer_len: 0,
        }
    }

    /// The last chunk and trailer section have been read.
    pub fn is_done(&self) -> bool {
        self.state == State::Done
    }

    /// Decodes from the start of `input`; returns `(consumed, event)`.
    ///
    /// * `Some(Data(r))`: `input[r]` is body data and `r.end == consumed`; call again with
    ///   `input[consumed..]`.
    /// * `None`: all of `input` was consumed (framing bytes are remembered); need more.
    /// * `Some(Done)`: the message ends exactly at `consumed`; later bytes belong to the next
    ///   response. Further calls return `(0, Some(Done))`.
    ///
    /// Line endings may be CRLF or, leniently (RFC 9112 §2.2), a bare LF. After an error
    /// the body is unusable and the decoder should be dropped with the connection.
    pub fn decode(&mut self, input: &[u8]) -> Result<(usize, Option<ChunkEvent>), HttpError> {
        let mut pos = 0;
        loop {
            match self.state {
                State::Done => return Ok((pos, Some(ChunkEvent::Done))),
                State::Data(remaining) => {
                    let available = input.len() - pos;
                    if available == 0 {
                        return Ok((pos, None));
                    }
                    // Bounded by `available`, so the cast cannot truncate.
                    let take = remaining.min(available as u64) as usize;
                    let left = remaining - take as u64;
                    self.state = if left == 0 {
                        State::DataCr
                    } else {
                        State::Data(left)
                    };
                    return Ok((pos + take, Some(ChunkEvent::Data(pos..pos + take))));
                }
                _ => {
                    let Some(&b) = input.get(pos) else {
                        return Ok((pos, None));
                    };
                    pos += 1;
                    self.step(b)?;
                }
            }
        }
    }

    /// Advances the framing state machine by one byte outside chunk data.
    fn step(&mut self, b: u8) -> Result<(), HttpError> {
        let in_size_line = matches!(
            self.state,
            State::Size(_) | State::SizeSpace | State::Extension
        );
        if in_size_line && b != b'\r' && b != b'\n' {
            self.line_len += 1;
            if self.line_len > MAX_CHUNK_LINE {
                return Err(bad("chunk size line longer than 4 KiB"));
            }
        }
        let in_trailers = matches!(
            self.state,
            State::TrailerStart | State::TrailerLine | State::TrailerLf | State::FinalLf
        );
        if in_trailers {
            self.trailer_len += 1;
            if self.trailer_len > MAX_TRAILERS {
                return Err(bad("trailer section larger than 64 KiB"));
            }
        }
        self.state = match self.state {
            State::Size(seen) => match hex_value(b) {
                Some(d) => {
                    self.size = self
                        .size
                        .checked_mul(16)
                        .and_then(|v| v.checked_add(u64::from(d)))
                        .ok_or_else(|| bad("chunk size does not fit in 64 bits"))?;
                    State::Size(true)
                }
                None if !seen => return Err(bad("chunk size is not a hexadecimal number")),
                None => match b {
                    b' ' | b'\t' => State::SizeSpace,
                    b';' => State::Extension,
                    b'\r' => State::SizeLf,
                    b'\n' => self.end_size_line(),
                    _ => return Err(bad("chunk size is not a hexadecimal number")),
                },
            },
            State::SizeSpace => match b {
                b' ' | b'\t' => State::SizeSpace,
                b';' => State::Extension,
                b'\r' => State::SizeLf,
                b'\n' => self.end_size_line(),
                _ => return Err(bad("unexpected character after chunk size")),
            },
            State::Extension => match b {
                b'\r' => State::SizeLf,
                b'\n' => self.end_size_line(),
                // Extensions are ignored, but they are still text: no other controls.
                0x00..=0x08 | 0x0b..=0x1f | 0x7f => {
                    return Err(bad("control character in chunk extension"))
                }
                _ => State::Extension,
            },
            State::SizeLf => match b {
                b'\n' => self.end_size_line(),
                _ => return Err(bad("CR without LF in chunk size line")),
            },
            State::DataCr => match b {
                b'\r' => State::DataLf,
                b'\n' => self.start_size_line(),
                _ => return Err(bad("missing CRLF after chunk data")),
            },
            State::DataLf => match b {
                b'\n' => self.start_size_line(),
                _ => return Err(bad("missing CRLF after chunk data")),
            },
            State::TrailerStart => match b {
                b'\r' => State::FinalLf,
                b'\n' => State::Done,
                b' ' | b'\t' => return Err(bad("trailer line starts with whitespace")),
                _ => State::TrailerLine,
            },
            State::TrailerLine => match b {
                b'\r' => State::TrailerLf,
                b'\n' => State::TrailerStart,
                _ => State::TrailerLine,
            },
            State::TrailerLf => match b {
                b'\n' => State::TrailerStart,
                _ => return Err(bad("CR without LF in trailer section")),
            },
            State::FinalLf => match b {
                b'\n' => State::Done,
                _ => return Err(bad("CR without LF at end of chunked body")),
            },
            // `decode` never feeds bytes in these states.
            State::Data(_) | State::Done => self.state,
        };
        Ok(())
    }

    /// A size line ended: data follows, or for the last chunk (size 0) the trailers.
    fn end_size_line(&mut self) -> State {
        self.line_len = 0;
        if self.size == 0 {
            State::TrailerStart
        } else {
            State::Data(self.size)
        }
    }

    /// Chunk data and its CRLF ended: the next size line starts.
    fn start_size_line(&mut self) -> State {
        self.size = 0;
        self.line_len = 0;
        State::Size(false)
    }
}

fn hex_value(b: u8) -> Option<u8> {
    match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        b'A'..=b'F' => Some(b - b'A' + 10),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A body with extensions (quoted, with ';' and spaces), upper- and lower-case hex,
    /// leading zeros, a chunk containing CRLF bytes, and two trailer fields.
    const MSG: &[u8] = b"5;name=value\r\nhello\r\n\
0000a ; ext=\"q;uo ted\" ; flag\r\n0123456789\r\n\
1A\r\nabcdefghijklmnopqrstuvwxy\n\r\n\
3\r\n\r\n\r\r\n\
0;last\r\nExpires: never\r\nX-Sum: abc\r\n\r\n";
    const BODY: &[u8] = b"hello0123456789abcdefghijklmnopqrstuvwxy\n\r\n\r";
    const NEXT: &[u8] = b"HTTP/1.1 200 OK\r\n";

    /// Feeds `pieces` in order the way an engine would (leftovers carried into the next
    /// read); returns the body and the bytes left after Done.
    fn feed(pieces: &[&[u8]]) -> Result<(Vec<u8>, Vec<u8>), HttpError> {
        let mut dec = ChunkedDecoder::new();
        let mut body = Vec::new();
        let mut pending: Vec<u8> = Vec::new();
        for (i, piece) in pieces.iter().enumerate() {
            pending.extend_from_slice(piece);
            loop {
                let (used, ev) = dec.decode(&pending)?;
                assert!(used <= pending.len());
                match ev {
                    Some(ChunkEvent::Data(r)) => {
                        assert!(!r.is_empty() && r.end <= used);
                        body.extend_from_slice(&pending[r]);
                        pending.drain(..used);
                    }
                    Some(ChunkEvent::Done) => {
                        assert!(dec.is_done());
                        pending.drain(..used);
                        pending.extend(pieces[i + 1..].concat());
                        return Ok((body, pending));
                    }
                    None => {
                        assert_eq!(used, pending.len(), "None must consume everything");
                        pending.clear();
                        break;
                    }
                }
            }
            assert!(!dec.is_done());
        }
        Err(HttpError::BadChunk("input ended before Done".into()))
    }

    fn whole() -> Vec<u8> {
        [MSG, NEXT].concat()
    }

    #[test]
    fn whole_message() {
        let all = whole();
        let (body, rest) = feed(&[&all]).unwrap();
        assert_eq!(body, BODY);
        assert_eq!(rest, NEXT);
    }

    #[test]
    fn split_at_every_boundary() {
        let all = whole();
        for cut in 0..=all.len() {
            let (a, b) = all.split_at(cut);
            let (body, rest) = feed(&[a, b]).unwrap_or_else(|e| panic!("cut {cut}: {e}"));
            assert_eq!(body, BODY, "cut {cut}");
            assert_eq!(rest, NEXT, "cut {cut}");
        }
    }

    #[test]
    fn split_at_every_pair_of_boundaries() {
        let all = whole();
        // Under Miri every fifth first cut (with every second cut after it).
        let step = if cfg!(miri) { 5 } else { 1 };
        for i in (0..=all.len()).step_by(step) {
            for j in i..=all.len() {
                let (body, rest) = feed(&[&all[..i], &all[i..j], &all[j..]]).unwrap();
                assert_eq!((body.as_slice(), rest.as_slice()), (BODY, NEXT), "{i} {j}");
            }
        }
    }

    #[test]
    fn one_byte_at_a_time() {
        let all = whole();
        let pieces: Vec<&[u8]> = all.chunks(1).collect();
        let (body, rest) = feed(&pieces).unwrap();
        assert_eq!(body, BODY);
        assert_eq!(rest, NEXT);
    }

    #[test]
    fn done_leaves_following_bytes_and_stays_done() {
        let mut dec = ChunkedDecoder::new();
        let input = b"0\r\n\r\nNEXT";
        assert_eq!(dec.decode(input).unwrap(), (5, Some(ChunkEvent::Done)));
        assert!(dec.is_done());
        assert_eq!(dec.decode(b"NEXT").unwrap(), (0, Some(ChunkEvent::Done)));
        assert_eq!(dec.decode(b"").unwrap(), (0, Some(ChunkEvent::Done)));
    }

    #[test]
    fn data_event_reports_range_and_consumed() {
        let mut dec = ChunkedDecoder::new();
        let input = b"3\r\nabc\r\n0\r\n\r\n";
        assert_eq!(
            dec.decode(input).unwrap(),
            (6, Some(ChunkEvent::Data(3..6)))
        );
        assert_eq!(
            dec.decode(&input[6..]).unwrap(),
            (7, Some(ChunkEvent::Done))
        );
        // Empty input before anything: nothing consumed, need more.
        assert_eq!(ChunkedDecoder::new().decode(b"").unwrap(), (0, None));
        // A size line alone is consumed and remembered.
        let mut dec = ChunkedDecoder::new();
        assert_eq!(dec.decode(b"4\r\n").unwrap(), (3, None));
        assert_eq!(
            dec.decode(b"ab").unwrap(),
            (2, Some(ChunkEvent::Data(0..2)))
        );
        assert_eq!(dec.decode(b"").unwrap(), (0, None));
        assert_eq!(
            dec.decode(b"cd\r").unwrap(),
            (2, Some(ChunkEvent::Data(0..2)))
        );
        assert_eq!(dec.decode(b"\r").unwrap(), (1, None));
        assert!(!dec.is_done());
    }

    #[test]
    fn bare_lf_line_endings_accepted() {
        let (body, rest) = feed(&[b"3\nabc\n0\nTrailer: x\n\nZ"]).unwrap();
        assert_eq!(body, b"abc");
        assert_eq!(rest, b"Z");
    }

    #[test]
    fn huge_chunk_size_without_overflow() {
        let mut dec = ChunkedDecoder::new();
        let (used, ev) = dec.decode(b"FFFFFFFFFFFFFFFF\r\nxy").unwrap();
        assert_eq!((used, ev), (20, Some(ChunkEvent::Data(18..20))));
        assert_eq!(dec.state, State::Data(u64::MAX - 2));
    }

    fn error_of(input: &[u8]) -> String {
        let mut dec = ChunkedDecoder::new();
        let mut pos = 0;
        loop {
            match dec.decode(&input[pos..]) {
                Err(HttpError::BadChunk(m)) => return m,
                Err(e) => panic!("unexpected error {e:?}"),
                Ok((used, Some(ChunkEvent::Data(_)))) => pos += used,
                Ok(other) => panic!(
                    "{:?}: no error, got {other:?}",
                    String::from_utf8_lossy(input)
                ),
            }
        }
    }

    #[test]
    fn bad_size_lines() {
        assert_eq!(
            error_of(b"xyz\r\n"),
            "chunk size is not a hexadecimal number"
        );
        assert_eq!(error_of(b"\r\n"), "chunk size is not a hexadecimal number");
        assert_eq!(
            error_of(b";ext\r\n"),
            "chunk size is not a hexadecimal number"
        );
        assert_eq!(
            error_of(b"-5\r\n"),
            "chunk size is not a hexadecimal number"
        );
        assert_eq!(
            error_of(b"0x5\r\n"),
            "chunk size is not a hexadecimal number"
        );
        assert_eq!(
            error_of(b"5 5\r\n"),
            "unexpected character after chunk size"
        );
        assert_eq!(error_of(b"5\rX"), "CR without LF in chunk size line");
        assert_eq!(
            error_of(b"5;a\x01b\r\n"),
            "control character in chunk extension"
        );
        // A bad size after good chunks.
        assert_eq!(
            error_of(b"1\r\na\r\nzz\r\n"),
            "chunk size is not a hexadecimal number"
        );
    }

    #[test]
    fn size_overflow() {
        assert_eq!(
            error_of(b"10000000000000000\r\n"),
            "chunk size does not fit in 64 bits"
        );
        // Leading zeros are not an overflow.
        let mut dec = ChunkedDecoder::new();
        let input = b"00000000000000000000001\r\nq\r\n0\r\n\r\n";
        assert_eq!(dec.decode(input).unwrap().1, Some(ChunkEvent::Data(25..26)));
    }

    #[test]
    fn over_long_size_line() {
        let mut line = b"5;".to_vec();
        line.resize(MAX_CHUNK_LINE, b'x');
        line.extend_from_slice(b"\r\nhello\r\n0\r\n\r\n");
        // Exactly 4 KiB before the line end is accepted...
        let (body, _) = feed(&[&line]).unwrap();
        assert_eq!(body, b"hello");
        // ...one more byte is not, even fed one byte at a time.
        let mut long = b"5;".to_vec();
        long.resize(MAX_CHUNK_LINE + 1, b'x');
        assert_eq!(error_of(&long), "chunk size line longer than 4 KiB");
        let mut dec = ChunkedDecoder::new();
        let mut result = Ok((0, None));
        for b in long.chunks(1) {
            result = dec.decode(b);
            if result.is_err() {
                break;
            }
        }
        assert_eq!(
            result,
            Err(HttpError::BadChunk(
                "chunk size line longer than 4 KiB".into()
            ))
        );
    }

    #[test]
    fn missing_crlf_after_data() {
        assert_eq!(error_of(b"3\r\nabcX"), "missing CRLF after chunk data");
        assert_eq!(error_of(b"3\r\nabc\rX"), "missing CRLF after chunk data");
        // Data longer than its size: the extra byte is where the CRLF should be.
        assert_eq!(error_of(b"3\r\nabcd\r\n"), "missing CRLF after chunk data");
    }

    #[test]
    fn bad_trailers() {
        assert_eq!(
            error_of(b"0\r\nX: a\rZ"),
            "CR without LF in trailer section"
        );
        assert_eq!(
            error_of(b"0\r\n\rZ"),
            "CR without LF at end of chunked body"
        );
        assert_eq!(
            error_of(b"0\r\nX: a\r\n folded\r\n\r\n"),
            "trailer line starts with whitespace"
        );
        let mut big = b"0\r\n".to_vec();
        while big.len() < MAX_TRAILERS + 10 {
            big.extend_from_slice(b"X-Pad: 0123456789012345678901234567890123456789\r\n");
        }
        big.extend_from_slice(b"\r\n");
        assert_eq!(error_of(&big), "trailer section larger than 64 KiB");
    }

    #[test]
    fn error_display() {
        assert_eq!(
            HttpError::BadChunk("missing CRLF after chunk data".into()).to_string(),
            "malformed chunked body: missing CRLF after chunk data"
        );
    }
}
