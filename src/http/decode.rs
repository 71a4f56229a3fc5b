//! `--http-accept-gzip`: response bodies in `Content-Encoding: gzip` or `deflate`, inflated as they
//! stream in (flate2 over zlib-rs). The caller gives compressed bytes and an output buffer of its
//! choosing, so however much a body inflates to (a gzip bomb), memory stays what that buffer is.
use flate2::{Decompress, FlushDecompress, Status};

/// A content coding ringdl decodes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Coding {
    Gzip,
    /// HTTP's `deflate` is a zlib stream (RFC 9110 §8.4.1.2); some servers send raw deflate,
    /// which is recognised by its first two bytes.
    Deflate,
}

impl Coding {
    /// The coding a `Content-Encoding` value names, if ringdl decodes it.
    pub fn of(content_encoding: &str) -> Option<Coding> {
        match content_encoding.trim().to_ascii_lowercase().as_str() {
            "gzip" | "x-gzip" => Some(Coding::Gzip),
            "deflate" => Some(Coding::Deflate),
            _ => None,
        }
    }
}

/// Why a body could not be inflated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DecodeError(pub String);

impl std::fmt::Display for DecodeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Failed to inflate the response body: {}", self.0)
    }
}

/// The inflating state of one response body.
pub struct Decoder {
    coding: Coding,
    /// Made once the first bytes say which stream it is (deflate: zlib or raw).
    z: Option<Decompress>,
    /// Deflate: a first byte that came alone, kept until the second says which stream it is.
    first: Option<u8>,
    done: bool,
    /// The last call filled the output buffer: more output may come without more input.
    more: bool,
}

impl Decoder {
    pub fn new(coding: Coding) -> Decoder {
        Decoder {
            coding,
            z: None,
            first: None,
            done: false,
            more: false,
        }
    }

    /// The stream has ended (bytes after its end are not part of the file).
    pub fn finished(&self) -> bool {
        self.done
    }

    /// Output may be waiting inside the decoder for room, without more input.
    pub fn has_more(&self) -> bool {
        self.more && !self.done
    }

    /// Inflates from `input` into `out`: how many input bytes were used and how many output bytes
    /// were made. While `out` has room every byte of `input` is used (kept inside the decoder if
    /// need be), so `(0, 0)` means the stream has ended, or more input is needed and none was
    /// given: a caller that waits for `input` to be used up before it reads more never waits for
    /// ever.
    pub fn run(&mut self, input: &[u8], out: &mut [u8]) -> Result<(usize, usize), DecodeError> {
        if self.done || out.is_empty() {
            return Ok((0, 0));
        }
        let bad = |e: flate2::DecompressError| DecodeError(e.to_string());
        let mut made_first = 0;
        let z = match self.z.as_mut() {
            Some(z) => z,
            None => {
                let z = match self.coding {
                    Coding::Gzip => Decompress::new_gzip(15),
                    Coding::Deflate => {
                        let mut head = self.first.iter().chain(input).copied();
                        let (Some(b0), Some(b1)) = (head.next(), head.next()) else {
                            // One byte cannot say which stream it is: it waits here.
                            return Ok(match input.first() {
                                Some(&b) => {
                                    self.first = Some(b);
                                    (1, 0)
                                }
                                None => (0, 0),
                            });
                        };
                        // A zlib header: CM 8 in the low nibble, and the two bytes a multiple
                        // of 31 (RFC 1950 §2.2).
                        let zlib = b0 & 0x0f == 8 && (u16::from(b0) << 8 | u16::from(b1)) % 31 == 0;
                        Decompress::new(zlib)
                    }
                };
                let z = self.z.insert(z);
                if let Some(b) = self.first.take() {
                    z.decompress(&[b], out, FlushDecompress::None)
                        .map_err(bad)?;
                    made_first = z.total_out() as usize;
                }
                z
            }
        };
        let (in0, out0) = (z.total_in(), z.total_out());
        let status = z
            .decompress(input, &mut out[made_first..], FlushDecompress::None)
            .map_err(bad)?;
        let used = (z.total_in() - in0) as usize;
        let made = made_first + (z.total_out() - out0) as usize;
        self.more = made == out.len();
        if status == Status::StreamEnd {
            self.done = true;
        }
        Ok((used, made))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use flate2::write::{DeflateEncoder, GzEncoder, ZlibEncoder};
    use flate2::Compression;
    use std::io::Write;

    fn data() -> Vec<u8> {
        (0..50_000u32)
            .flat_map(|i| (i % 251).to_le_bytes())
            .collect()
    }

    /// Feeds `stream` in `step`-byte pieces with a `room`-byte output buffer.
    fn inflate(coding: Coding, stream: &[u8], step: usize, room: usize) -> Vec<u8> {
        let mut d = Decoder::new(coding);
        let mut pending: Vec<u8> = Vec::new();
        let mut got = Vec::new();
        let mut out = vec![0u8; room];
        let mut fed = 0;
        let mut hungry = true;
        loop {
            if fed < stream.len() && hungry {
                let n = step.min(stream.len() - fed);
                pending.extend_from_slice(&stream[fed..fed + n]);
                fed += n;
            }
            let (used, made) = d.run(&pending, &mut out).unwrap();
            pending.drain(..used);
            got.extend_from_slice(&out[..made]);
            // As in the engine: more input comes only once the decoder has used what it has, so
            // one that kept input back without using it would wait for ever.
            assert!(
                used > 0 || made > 0 || pending.is_empty() || d.finished(),
                "{coding:?}, steps of {step}: {} bytes held back unused",
                pending.len()
            );
            hungry = pending.is_empty();
            if d.finished() || (used == 0 && made == 0 && fed == stream.len() && !d.has_more()) {
                break;
            }
        }
        assert!(d.finished(), "the stream did not end");
        got
    }

    #[test]
    fn gzip_zlib_and_raw_deflate_in_small_steps_and_small_room() {
        let data = data();
        let mut gz = GzEncoder::new(Vec::new(), Compression::default());
        gz.write_all(&data).unwrap();
        let gz = gz.finish().unwrap();
        let mut zl = ZlibEncoder::new(Vec::new(), Compression::default());
        zl.write_all(&data).unwrap();
        let zl = zl.finish().unwrap();
        let mut raw = DeflateEncoder::new(Vec::new(), Compression::default());
        raw.write_all(&data).unwrap();
        let raw = raw.finish().unwrap();
        for (coding, stream) in [
            (Coding::Gzip, &gz),
            (Coding::Deflate, &zl),
            (Coding::Deflate, &raw),
        ] {
            for (step, room) in [(1, 61), (13, 4096), (65536, 65536)] {
                assert_eq!(
                    inflate(coding, stream, step, room),
                    data,
                    "{coding:?} {step} {room}"
                );
            }
        }
    }

    #[test]
    fn a_bomb_inflates_within_the_output_buffer() {
        // 16 MiB of zeros compresses to about 16 KiB: each call makes at most `room` bytes.
        let mut gz = GzEncoder::new(Vec::new(), Compression::fast());
        let zeros = vec![0u8; 1 << 20];
        for _ in 0..16 {
            gz.write_all(&zeros).unwrap();
        }
        let gz = gz.finish().unwrap();
        let mut d = Decoder::new(Coding::Gzip);
        let mut out = vec![0u8; 65536];
        let (mut at, mut total, mut calls) = (0, 0u64, 0);
        while !d.finished() {
            let (used, made) = d.run(&gz[at..], &mut out).unwrap();
            assert!(made <= out.len());
            at += used;
            total += made as u64;
            calls += 1;
            assert!(calls < 10_000);
        }
        assert_eq!(total, 16 << 20);
        assert!(gz.len() < 1 << 20, "{} bytes compressed", gz.len());
    }

    #[test]
    fn garbage_is_an_error_and_names_are_read() {
        let mut d = Decoder::new(Coding::Gzip);
        let mut out = vec![0u8; 1024];
        assert!(d.run(b"this is not gzip at all", &mut out).is_err());
        assert_eq!(Coding::of("GZIP"), Some(Coding::Gzip));
        assert_eq!(Coding::of("x-gzip"), Some(Coding::Gzip));
        assert_eq!(Coding::of("deflate"), Some(Coding::Deflate));
        assert_eq!(Coding::of("br"), None);
    }
}
