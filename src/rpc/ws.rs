//! WebSocket (RFC 6455) as the RPC server speaks it: the handshake's accept key, client frames
//! read from what arrived (masked, possibly fragmented, with a limit on a message's size that is
//! checked from the frame header, before anything is buffered), and server frames.
use base64::Engine as _;
use sha1::{Digest, Sha1};

pub const OP_CONTINUATION: u8 = 0x0;
pub const OP_TEXT: u8 = 0x1;
pub const OP_BINARY: u8 = 0x2;
pub const OP_CLOSE: u8 = 0x8;
pub const OP_PING: u8 = 0x9;
pub const OP_PONG: u8 = 0xA;

/// `Sec-WebSocket-Accept` for a client's `Sec-WebSocket-Key`.
pub fn accept_key(key: &str) -> String {
    let mut h = Sha1::new();
    h.update(key.trim().as_bytes());
    h.update(b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11");
    base64::engine::general_purpose::STANDARD.encode(h.finalize())
}

/// What the client sent: a whole message (text or binary, both read as JSON-RPC, as aria2 does),
/// a ping to answer, a pong, or the close.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    Message(Vec<u8>),
    Ping(Vec<u8>),
    Pong,
    Close,
}

/// Why the connection must end, with the close code to send.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WsError {
    /// 1009: a message larger than `--rpc-max-request-size`.
    TooLarge,
    /// 1002: not a frame a client may send.
    Protocol(&'static str),
}

impl WsError {
    pub fn close_code(self) -> u16 {
        match self {
            WsError::TooLarge => 1009,
            WsError::Protocol(_) => 1002,
        }
    }
}

/// Reads client frames; keeps the fragments of a message until its last one.
#[derive(Debug)]
pub struct Decoder {
    max: usize,
    message: Vec<u8>,
    fragmented: bool,
}

impl Decoder {
    pub fn new(max_message: usize) -> Decoder {
        Decoder {
            max: max_message,
            message: Vec::new(),
            fragmented: false,
        }
    }

    /// The next event from the front of `buf` (its bytes are taken off), `Ok(None)` when more
    /// bytes are needed.
    pub fn next(&mut self, buf: &mut Vec<u8>) -> Result<Option<Event>, WsError> {
        loop {
            let Some((fin, op, payload, used)) = self.frame(buf)? else {
                return Ok(None);
            };
            buf.drain(..used);
            match op {
                OP_PING => return Ok(Some(Event::Ping(payload))),
                OP_PONG => return Ok(Some(Event::Pong)),
                OP_CLOSE => return Ok(Some(Event::Close)),
                OP_TEXT | OP_BINARY if self.fragmented => {
                    return Err(WsError::Protocol("a new message inside a fragmented one"))
                }
                OP_CONTINUATION if !self.fragmented => {
                    return Err(WsError::Protocol("a continuation with no message"))
                }
                OP_TEXT | OP_BINARY | OP_CONTINUATION => {
                    if self.message.len() + payload.len() > self.max {
                        return Err(WsError::TooLarge);
                    }
                    self.message.extend_from_slice(&payload);
                    if fin {
                        self.fragmented = false;
                        return Ok(Some(Event::Message(std::mem::take(&mut self.message))));
                    }
                    self.fragmented = true;
                }
                _ => return Err(WsError::Protocol("an unknown opcode")),
            }
        }
    }

    /// One frame at the front of `buf`: (fin, opcode, unmasked payload, bytes used).
    #[allow(clippy::type_complexity)]
    fn frame(&self, buf: &[u8]) -> Result<Option<(bool, u8, Vec<u8>, usize)>, WsError> {
        if buf.len() < 2 {
            return Ok(None);
        }
        let (b0, b1) = (buf[0], buf[1]);
        if b0 & 0x70 != 0 {
            return Err(WsError::Protocol("reserved bits set"));
        }
        if b1 & 0x80 == 0 {
            return Err(WsError::Protocol("an unmasked client frame"));
        }
        let fin = b0 & 0x80 != 0;
        let op = b0 & 0x0F;
        let (len, mut at) = match b1 & 0x7F {
            126 if buf.len() >= 4 => (u64::from(u16::from_be_bytes([buf[2], buf[3]])), 4),
            127 if buf.len() >= 10 => {
                let mut b = [0u8; 8];
                b.copy_from_slice(&buf[2..10]);
                (u64::from_be_bytes(b), 10)
            }
            126 | 127 => return Ok(None),
            n => (u64::from(n), 2),
        };
        if op >= OP_CLOSE && (!fin || len > 125) {
            return Err(WsError::Protocol("a fragmented or long control frame"));
        }
        // Checked from the header: a frame claiming gigabytes is refused before any of it is kept.
        if len > self.max as u64 || self.message.len() as u64 + len > self.max as u64 {
            return Err(WsError::TooLarge);
        }
        let len = len as usize;
        if buf.len() < at + 4 + len {
            return Ok(None);
        }
        let mask = [buf[at], buf[at + 1], buf[at + 2], buf[at + 3]];
        at += 4;
        let payload = buf[at..at + len]
            .iter()
            .enumerate()
            .map(|(i, b)| b ^ mask[i % 4])
            .collect();
        Ok(Some((fin, op, payload, at + len)))
    }
}

/// A server frame (unmasked, unfragmented).
pub fn encode(op: u8, payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(payload.len() + 10);
    out.push(0x80 | op);
    match payload.len() {
        n if n < 126 => out.push(n as u8),
        n if n <= 0xFFFF => {
            out.push(126);
            out.extend_from_slice(&(n as u16).to_be_bytes());
        }
        n => {
            out.push(127);
            out.extend_from_slice(&(n as u64).to_be_bytes());
        }
    }
    out.extend_from_slice(payload);
    out
}

/// A close frame with `code`.
pub fn close(code: u16) -> Vec<u8> {
    encode(OP_CLOSE, &code.to_be_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A client frame: masked with a fixed key.
    fn client(fin: bool, op: u8, payload: &[u8]) -> Vec<u8> {
        let mut f = encode(op, payload);
        if !fin {
            f[0] &= 0x7F;
        }
        f[1] |= 0x80;
        let key = [1u8, 2, 3, 4];
        let start = f.len() - payload.len();
        f.splice(start..start, key);
        for (i, b) in f[start + 4..].iter_mut().enumerate() {
            *b ^= key[i % 4];
        }
        f
    }

    #[test]
    fn the_accept_key_is_rfc_6455s() {
        // RFC 6455 section 1.3.
        assert_eq!(
            accept_key("dGhlIHNhbXBsZSBub25jZQ=="),
            "s3pPLMBiTxaQ9kYGzzhZRbK+xOo="
        );
    }

    #[test]
    fn messages_arrive_whole_however_the_bytes_are_cut() {
        // Long enough for the 64-bit length form; shorter under Miri, which interprets each byte.
        let big = vec![b'x'; if cfg!(miri) { 300 } else { 70_000 }];
        let mut wire = client(true, OP_TEXT, b"{\"id\":1}");
        wire.extend(client(false, OP_TEXT, b"[1,"));
        wire.extend(client(true, OP_PING, b"p"));
        wire.extend(client(true, OP_CONTINUATION, b"2]"));
        wire.extend(client(true, OP_BINARY, &big));
        wire.extend(client(true, OP_CLOSE, &1000u16.to_be_bytes()));
        let want = vec![
            Event::Message(b"{\"id\":1}".to_vec()),
            Event::Ping(b"p".to_vec()),
            Event::Message(b"[1,2]".to_vec()),
            Event::Message(big.clone()),
            Event::Close,
        ];
        let steps: &[usize] = if cfg!(miri) {
            &[7, 1000]
        } else {
            &[1, 3, 7, 1000]
        };
        for &step in steps.iter().chain([&wire.len()]) {
            let mut d = Decoder::new(100_000);
            let mut buf = Vec::new();
            let mut got = Vec::new();
            for chunk in wire.chunks(step) {
                buf.extend_from_slice(chunk);
                while let Some(e) = d.next(&mut buf).unwrap() {
                    got.push(e);
                }
            }
            assert_eq!(got, want, "step {step}");
            assert!(buf.is_empty());
        }
    }

    #[test]
    fn bad_frames_end_the_connection() {
        let mut d = Decoder::new(1000);
        // A length of 2^63 in the header: refused at once, nothing kept.
        let mut huge = vec![0x81, 0xFF];
        huge.extend_from_slice(&(1u64 << 63).to_be_bytes());
        assert_eq!(d.next(&mut huge.clone()), Err(WsError::TooLarge));
        let mut unmasked = encode(OP_TEXT, b"hi");
        assert!(matches!(d.next(&mut unmasked), Err(WsError::Protocol(_))));
        let mut stray = client(true, OP_CONTINUATION, b"x");
        assert!(matches!(d.next(&mut stray), Err(WsError::Protocol(_))));
        let mut long_ping = client(true, OP_PING, &[0; 126]);
        assert!(matches!(d.next(&mut long_ping), Err(WsError::Protocol(_))));
        // Fragments that add up to more than the limit.
        let mut d = Decoder::new(10);
        let mut wire = client(false, OP_TEXT, b"123456");
        wire.extend(client(true, OP_CONTINUATION, b"789012"));
        assert_eq!(d.next(&mut wire), Err(WsError::TooLarge));
        assert_eq!(WsError::TooLarge.close_code(), 1009);
    }

    #[test]
    fn server_frames() {
        assert_eq!(encode(OP_TEXT, b"ab"), [0x81, 2, b'a', b'b']);
        assert_eq!(&encode(OP_TEXT, &[0; 300])[..4], [0x81, 126, 1, 44]);
        assert_eq!(&encode(OP_TEXT, &[0; 70_000])[..2], [0x81, 127]);
        assert_eq!(close(1009), [0x88, 2, 0x03, 0xF1]);
    }
}
