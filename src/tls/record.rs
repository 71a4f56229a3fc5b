//! The record layer of an established connection: rustls makes the handshake and keeps the key
//! schedule (its `KernelConnection`, meant for kTLS); this module protects and unprotects the
//! records, in place in the caller's buffer, with ring's AEADs.
//!
//! Why: rustls 0.23's unbuffered reader hands every record out of a fresh `Vec` (a copy, an
//! allocation and a free per record); opening a record where it lies leaves its plaintext in the
//! caller's buffer with no copy at all (bench/RESULTS.md has the measurement).
//!
//! What is handled: TLS 1.3 and TLS 1.2 with AES-128-GCM, AES-256-GCM and ChaCha20-Poly1305 (every
//! suite ringdl offers); application data, alerts (close_notify ends the stream, any other fatal
//! alert is an error), TLS 1.3 session tickets (kept by rustls for resumption) and key updates
//! (both directions), TLS 1.2 hello requests (ignored: ringdl never renegotiates).
use ring::aead::{self, Aad, LessSafeKey, Nonce, UnboundKey, NONCE_LEN};
use rustls::client::ClientConnectionData;
use rustls::kernel::KernelConnection;
use rustls::{ConnectionTrafficSecrets, ExtractedSecrets, ProtocolVersion};

use super::{InPlace, TlsError};

const HEADER: usize = 5;
const TAG: usize = 16;
/// Largest plaintext of one record (RFC 8446 5.1, RFC 5246 6.2.1).
const MAX_PLAIN: usize = 1 << 14;
/// The longest record body (after the header) accepted, TLS 1.2's limit: so no record's
/// [`Traffic::plain_bound`] exceeds it.
pub(super) const LONGEST_BODY: usize = MAX_PLAIN + 2048;
/// Most bytes TLS 1.2 GCM puts before the ciphertext of a record (its explicit nonce).
const EXPLICIT_NONCE: usize = 8;

const APPLICATION_DATA: u8 = 23;
const HANDSHAKE: u8 = 22;
const ALERT: u8 = 21;

const HS_HELLO_REQUEST: u8 = 0;
const HS_NEW_SESSION_TICKET: u8 = 4;
const HS_KEY_UPDATE: u8 = 24;
/// The longest post-handshake message body taken; a longer one is refused rather than buffered
/// (rustls's limit).
const MAX_HANDSHAKE_MESSAGE: usize = 0xffff;
/// The limits rustls (after BoringSSL) puts on what a peer may do without sending data, which
/// this record layer keeps with the same numbers: key updates with no application data between
/// them, records with nothing in them in a row, warning alerts and renegotiation requests in the
/// whole connection.
const MAX_UPDATES_IN_A_ROW: u32 = 32;
const MAX_EMPTY_IN_A_ROW: u32 = 32;
const MAX_WARNINGS: u32 = 4;
const MAX_HELLO_REQUESTS: u32 = 1;

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Version {
    Tls12,
    Tls13,
}

/// One direction's key, IV and sequence number.
struct Keys {
    key: LessSafeKey,
    iv: [u8; NONCE_LEN],
    seq: u64,
    /// TLS 1.2 AES-GCM: the last 8 bytes of the nonce travel in the record.
    explicit_nonce: bool,
}

impl Keys {
    fn new(
        version: Version,
        (seq, secrets): (u64, ConnectionTrafficSecrets),
    ) -> Result<Keys, TlsError> {
        let (alg, key, iv, gcm) = match &secrets {
            ConnectionTrafficSecrets::Aes128Gcm { key, iv } => (&aead::AES_128_GCM, key, iv, true),
            ConnectionTrafficSecrets::Aes256Gcm { key, iv } => (&aead::AES_256_GCM, key, iv, true),
            ConnectionTrafficSecrets::Chacha20Poly1305 { key, iv } => {
                (&aead::CHACHA20_POLY1305, key, iv, false)
            }
            _ => return Err(protocol("the negotiated cipher suite is not supported")),
        };
        let key = UnboundKey::new(alg, key.as_ref())
            .map_err(|_| protocol("a traffic key has the wrong length"))?;
        let iv: [u8; NONCE_LEN] = iv
            .as_ref()
            .try_into()
            .map_err(|_| protocol("a traffic IV has the wrong length"))?;
        Ok(Keys {
            key: LessSafeKey::new(key),
            iv,
            seq,
            explicit_nonce: gcm && version == Version::Tls12,
        })
    }

    /// The IV with the sequence number folded into its last eight bytes (RFC 8446 5.3; also how
    /// TLS 1.2 ChaCha20 forms its nonce, and how this side picks its TLS 1.2 GCM explicit nonces).
    fn xored_nonce(&self) -> [u8; NONCE_LEN] {
        let mut n = self.iv;
        for (b, s) in n[4..].iter_mut().zip(self.seq.to_be_bytes()) {
            *b ^= s;
        }
        n
    }

    fn next_seq(&mut self) -> Result<(), TlsError> {
        self.seq = self
            .seq
            .checked_add(1)
            .ok_or_else(|| protocol("the record sequence number ran out"))?;
        Ok(())
    }
}

fn protocol(why: &str) -> TlsError {
    TlsError::Protocol(why.to_string())
}

/// A record whose tag does not match: rustls's words, and what it means.
fn not_authentic() -> TlsError {
    TlsError::Protocol(format!(
        "{} (a TLS record failed its integrity check)",
        rustls::Error::DecryptError
    ))
}

/// A record opened in place: its content type and the length of its plaintext, which now lies
/// at the front of the buffer.
struct Opened {
    kind: u8,
    plain: usize,
}

/// The whole length of the record whose header is at the front of `buf` (header included), once
/// the header is there.
pub(super) fn header_len(buf: &[u8]) -> Option<usize> {
    match buf {
        [_, _, _, a, b, ..] => Some(HEADER + usize::from(u16::from_be_bytes([*a, *b]))),
        _ => None,
    }
}

/// An established connection's record protection in both directions.
pub(super) struct Traffic {
    version: Version,
    rx: Keys,
    tx: Keys,
    kernel: KernelConnection<ClientConnectionData>,
    /// Post-handshake handshake bytes of a message not yet whole (messages may span records),
    /// from `handshake_at` on (messages taken are skipped, not drained one by one: a record of
    /// many tiny messages costs no more than one of a single message).
    handshake: Vec<u8>,
    handshake_at: usize,
    /// A key update the server asked for was answered, and nothing has been sent since: further
    /// requests get no further answer (RFC 8446 4.6.3).
    update_answered: bool,
    /// Key updates since the last application data (a server sending nothing else is refused).
    updates_in_a_row: u32,
    /// Records with no content since the last that had some.
    empty_in_a_row: u32,
    /// Warning alerts and TLS 1.2 hello requests taken so far.
    warnings: u32,
    hello_requests: u32,
}

impl Traffic {
    pub(super) fn new(
        secrets: ExtractedSecrets,
        kernel: KernelConnection<ClientConnectionData>,
    ) -> Result<Traffic, TlsError> {
        let version = match kernel.protocol_version() {
            ProtocolVersion::TLSv1_3 => Version::Tls13,
            ProtocolVersion::TLSv1_2 => Version::Tls12,
            _ => return Err(protocol("the negotiated TLS version is not supported")),
        };
        Ok(Traffic {
            version,
            rx: Keys::new(version, secrets.rx)?,
            tx: Keys::new(version, secrets.tx)?,
            kernel,
            handshake: Vec::new(),
            handshake_at: 0,
            update_answered: false,
            updates_in_a_row: 0,
            empty_in_a_row: 0,
            warnings: 0,
            hello_requests: 0,
        })
    }

    /// The length of the whole record at the front of `buf` (header included), once its header is
    /// there; an error for a length no peer may send.
    pub(super) fn record_len(&self, buf: &[u8]) -> Result<Option<usize>, TlsError> {
        let Some(len) = header_len(buf) else {
            return Ok(None);
        };
        let max = match self.version {
            Version::Tls13 => MAX_PLAIN + 256,
            Version::Tls12 => LONGEST_BODY,
        };
        if len > HEADER + max {
            return Err(protocol("the server sent a record longer than TLS allows"));
        }
        Ok(Some(len))
    }

    /// The most plaintext a record of `record_len` bytes (header included) can hold: exactly its
    /// plaintext, but for TLS 1.3's optional padding.
    pub(super) fn plain_bound(&self, record_len: usize) -> usize {
        let overhead = HEADER
            + TAG
            + match self.version {
                Version::Tls13 => 1,
                Version::Tls12 if self.rx.explicit_nonce => EXPLICIT_NONCE,
                Version::Tls12 => 0,
            };
        record_len.saturating_sub(overhead)
    }

    /// Opens the record that is `buf[at..]` (the whole of it, to the end of `buf`) and acts on it.
    /// The plaintext is left at the front of `buf`.
    pub(super) fn open_next(
        &mut self,
        buf: &mut [u8],
        at: usize,
        outgoing: &mut Vec<u8>,
    ) -> Result<InPlace, TlsError> {
        let opened = self.open(buf, at)?;
        if opened.kind != HANDSHAKE && self.handshake.len() > self.handshake_at {
            // A handshake message split over records may not have others between its pieces.
            return Err(protocol(
                "the server interleaved a handshake message with other records",
            ));
        }
        if opened.plain == 0 {
            // Only application data may be empty (RFC 8446 5.1, 5.4; RFC 5246 6.2.1), and even
            // then not without end.
            if opened.kind != APPLICATION_DATA {
                return Err(protocol("the server sent an empty TLS record"));
            }
            self.empty_in_a_row += 1;
            if self.empty_in_a_row > MAX_EMPTY_IN_A_ROW {
                return Err(protocol("the server sent too many empty TLS records"));
            }
            return Ok(InPlace::Data(0));
        }
        self.empty_in_a_row = 0;
        match opened.kind {
            APPLICATION_DATA => {
                self.updates_in_a_row = 0;
                Ok(InPlace::Data(opened.plain))
            }
            ALERT => self.alert(&buf[..opened.plain]),
            HANDSHAKE => {
                let held = self.handshake.len() - self.handshake_at;
                if held + opened.plain > 4 + MAX_HANDSHAKE_MESSAGE {
                    return Err(protocol("the server sent an oversized handshake message"));
                }
                if self.handshake_at == self.handshake.len() {
                    self.handshake.clear();
                    self.handshake_at = 0;
                }
                self.handshake.extend_from_slice(&buf[..opened.plain]);
                self.handshake_messages(outgoing)?;
                Ok(InPlace::Nothing)
            }
            _ => Err(protocol("the server sent an unexpected TLS record")),
        }
    }

    /// An alert: close_notify ends the stream; a warning is taken a few times (TLS 1.3 has only
    /// user_canceled as one); anything else ends the connection, said as rustls says it.
    fn alert(&mut self, alert: &[u8]) -> Result<InPlace, TlsError> {
        let &[level, description] = alert else {
            return Err(protocol("the server sent a malformed TLS alert"));
        };
        if description == 0 {
            return Ok(InPlace::Closed);
        }
        const WARNING: u8 = 1;
        const USER_CANCELED: u8 = 90;
        let fatal =
            level != WARNING || (self.version == Version::Tls13 && description != USER_CANCELED);
        if !fatal {
            self.warnings += 1;
            if self.warnings <= MAX_WARNINGS {
                return Ok(InPlace::Nothing);
            }
            return Err(protocol("the server sent too many TLS warning alerts"));
        }
        Err(super::from_rustls(rustls::Error::AlertReceived(
            rustls::AlertDescription::from(description),
        )))
    }

    fn open(&mut self, buf: &mut [u8], at: usize) -> Result<Opened, TlsError> {
        let outer = buf[at];
        let body_len = buf.len() - at - HEADER;
        let opened = match self.version {
            Version::Tls13 => {
                if outer != APPLICATION_DATA {
                    return Err(protocol("the server sent an unprotected TLS record"));
                }
                if body_len < TAG + 1 {
                    return Err(protocol("the server sent a truncated TLS record"));
                }
                let mut header = [0u8; HEADER];
                header.copy_from_slice(&buf[at..at + HEADER]);
                let nonce = Nonce::assume_unique_for_key(self.rx.xored_nonce());
                let plain = self
                    .rx
                    .key
                    .open_within(nonce, Aad::from(header), buf, at + HEADER..)
                    .map_err(|_| not_authentic())?
                    .len();
                // The inner plaintext: content, its real type, then zero padding; all of it at
                // most 2^14 + 1 bytes (RFC 8446 5.4).
                if plain > MAX_PLAIN + 1 {
                    return Err(protocol("the server sent a record longer than TLS allows"));
                }
                let end = buf[..plain]
                    .iter()
                    .rposition(|&b| b != 0)
                    .ok_or_else(|| protocol("the server sent a TLS record with no type"))?;
                if end > MAX_PLAIN {
                    return Err(protocol("the server sent a record longer than TLS allows"));
                }
                Opened {
                    kind: buf[end],
                    plain: end,
                }
            }
            Version::Tls12 => {
                let skip = if self.rx.explicit_nonce {
                    EXPLICIT_NONCE
                } else {
                    0
                };
                if body_len < skip + TAG {
                    return Err(protocol("the server sent a truncated TLS record"));
                }
                let nonce = if self.rx.explicit_nonce {
                    let mut n = self.rx.iv;
                    n[4..].copy_from_slice(&buf[at + HEADER..at + HEADER + EXPLICIT_NONCE]);
                    n
                } else {
                    self.rx.xored_nonce()
                };
                let plain_len = body_len - skip - TAG;
                if plain_len > MAX_PLAIN {
                    return Err(protocol("the server sent a record longer than TLS allows"));
                }
                // The record's own version bytes: the negotiated version's, and part of what
                // the tag authenticates (RFC 5246 6.2.3.3), so none can be rewritten on the way.
                let version = [buf[at + 1], buf[at + 2]];
                if version != TLS12_VERSION {
                    return Err(protocol(
                        "the server sent a TLS record of another version than the one negotiated",
                    ));
                }
                let aad = tls12_aad(self.rx.seq, outer, version, plain_len);
                let plain = self
                    .rx
                    .key
                    .open_within(
                        Nonce::assume_unique_for_key(nonce),
                        Aad::from(aad),
                        buf,
                        at + HEADER + skip..,
                    )
                    .map_err(|_| not_authentic())?
                    .len();
                Opened { kind: outer, plain }
            }
        };
        self.rx.next_seq()?;
        Ok(opened)
    }

    /// Acts on every whole message in the post-handshake buffer.
    fn handshake_messages(&mut self, outgoing: &mut Vec<u8>) -> Result<(), TlsError> {
        loop {
            let [kind, a, b, c, ..] = self.handshake[self.handshake_at..] else {
                return Ok(());
            };
            let len = u32::from_be_bytes([0, a, b, c]) as usize;
            if len > MAX_HANDSHAKE_MESSAGE {
                return Err(protocol("the server sent an oversized handshake message"));
            }
            let start = self.handshake_at + 4;
            if self.handshake.len() < start + len {
                return Ok(());
            }
            self.handshake_at = start + len;
            let message = &self.handshake[start..start + len];
            match (self.version, kind) {
                (Version::Tls13, HS_NEW_SESSION_TICKET) => self
                    .kernel
                    .handle_new_session_ticket(message)
                    .map_err(|e| TlsError::Protocol(e.to_string()))?,
                (Version::Tls13, HS_KEY_UPDATE) => {
                    let requested = match message {
                        [0] => false,
                        [1] => true,
                        _ => return Err(protocol("the server sent a malformed key update")),
                    };
                    if self.handshake_at < self.handshake.len() {
                        // The next key starts with the next record (RFC 8446 5.1).
                        return Err(protocol("a key update did not end its record"));
                    }
                    self.updates_in_a_row += 1;
                    if self.updates_in_a_row > MAX_UPDATES_IN_A_ROW {
                        return Err(protocol("the server sent too many key updates"));
                    }
                    let next = self
                        .kernel
                        .update_rx_secret()
                        .map_err(|e| TlsError::Protocol(e.to_string()))?;
                    self.rx = Keys::new(self.version, next)?;
                    if requested && !self.update_answered {
                        self.update_answered = true;
                        // Answered under the old key, then this side moves to its next one.
                        self.seal(HANDSHAKE, &[HS_KEY_UPDATE, 0, 0, 1, 0], outgoing)?;
                        let next = self
                            .kernel
                            .update_tx_secret()
                            .map_err(|e| TlsError::Protocol(e.to_string()))?;
                        self.tx = Keys::new(self.version, next)?;
                    }
                }
                // A request to renegotiate: ringdl never does, and goes on with the keys it has
                // (RFC 5246 7.4.1.1 lets a client ignore it); asking again is refused, as
                // rustls refuses it.
                (Version::Tls12, HS_HELLO_REQUEST) if message.is_empty() => {
                    self.hello_requests += 1;
                    if self.hello_requests > MAX_HELLO_REQUESTS {
                        return Err(protocol("the server asked to renegotiate again"));
                    }
                }
                _ => return Err(protocol("the server sent an unexpected handshake message")),
            }
        }
    }

    /// Appends `data` to `outgoing` as application data records.
    pub(super) fn seal_data(
        &mut self,
        data: &[u8],
        outgoing: &mut Vec<u8>,
    ) -> Result<(), TlsError> {
        self.update_answered = false;
        self.seal(APPLICATION_DATA, data, outgoing)
    }

    /// Appends this side's close_notify alert (a warning, as TLS 1.2 sends it; TLS 1.3 ignores
    /// the level) to `outgoing`.
    pub(super) fn seal_close_notify(&mut self, outgoing: &mut Vec<u8>) -> Result<(), TlsError> {
        self.seal(ALERT, &[1, 0], outgoing)
    }

    fn seal(&mut self, kind: u8, data: &[u8], outgoing: &mut Vec<u8>) -> Result<(), TlsError> {
        for chunk in data.chunks(MAX_PLAIN) {
            seal_record(self.version, &mut self.tx, kind, chunk, 0, outgoing)?;
        }
        Ok(())
    }
}

/// Appends one record of `kind` carrying `chunk` (at most [`MAX_PLAIN`] bytes) under `keys`, and
/// moves them to the next sequence number. TLS 1.3 puts `padding` zeros after the inner type.
fn seal_record(
    version: Version,
    keys: &mut Keys,
    kind: u8,
    chunk: &[u8],
    padding: usize,
    outgoing: &mut Vec<u8>,
) -> Result<(), TlsError> {
    let start = outgoing.len();
    let nonce = keys.xored_nonce();
    match version {
        Version::Tls13 => {
            let len = chunk.len() + 1 + padding + TAG;
            let header = [APPLICATION_DATA, 3, 3, (len >> 8) as u8, len as u8];
            outgoing.extend_from_slice(&header);
            outgoing.extend_from_slice(chunk);
            outgoing.push(kind);
            outgoing.resize(outgoing.len() + padding, 0);
            let tag = keys
                .key
                .seal_in_place_separate_tag(
                    Nonce::assume_unique_for_key(nonce),
                    Aad::from(header),
                    &mut outgoing[start + HEADER..],
                )
                .map_err(|_| protocol("a record could not be encrypted"))?;
            outgoing.extend_from_slice(tag.as_ref());
        }
        Version::Tls12 => {
            let skip = if keys.explicit_nonce {
                EXPLICIT_NONCE
            } else {
                0
            };
            let len = skip + chunk.len() + TAG;
            outgoing.extend_from_slice(&[kind, 3, 3, (len >> 8) as u8, len as u8]);
            if keys.explicit_nonce {
                outgoing.extend_from_slice(&nonce[4..]);
            }
            outgoing.extend_from_slice(chunk);
            let aad = tls12_aad(keys.seq, kind, TLS12_VERSION, chunk.len());
            let tag = keys
                .key
                .seal_in_place_separate_tag(
                    Nonce::assume_unique_for_key(nonce),
                    Aad::from(aad),
                    &mut outgoing[start + HEADER + skip..],
                )
                .map_err(|_| protocol("a record could not be encrypted"))?;
            outgoing.extend_from_slice(tag.as_ref());
        }
    }
    keys.next_seq()
}

/// A server's side of the record layer for tests and the fuzz harness: any record a peer could
/// send, sealed with the server's real keys (taken from a rustls server after its handshake), so
/// what the client makes of records no well-behaved server sends can be tried.
pub(super) struct Forger {
    version: Version,
    keys: Keys,
}

impl Forger {
    pub(super) fn new(tls13: bool, tx: (u64, ConnectionTrafficSecrets)) -> Forger {
        let version = if tls13 {
            Version::Tls13
        } else {
            Version::Tls12
        };
        let Ok(keys) = Keys::new(version, tx) else {
            panic!("the server's keys are of a suite ringdl offers");
        };
        Forger { version, keys }
    }

    /// TLS 1.3: a KeyUpdate record (asking for one back when `requested`), after which this side
    /// seals with the next keys. `secret` is the traffic secret in use (as a key log gives it);
    /// the next one is returned, for the update after.
    #[cfg(test)]
    pub(super) fn key_update(&mut self, secret: &[u8], requested: bool) -> (Vec<u8>, Vec<u8>) {
        let record = self.record(HANDSHAKE, &[HS_KEY_UPDATE, 0, 0, 1, u8::from(requested)], 0);
        let hash = match secret.len() {
            48 => ring::hkdf::HKDF_SHA384,
            _ => ring::hkdf::HKDF_SHA256,
        };
        let next = expand_label(hash, secret, b"traffic upd", secret.len());
        let alg = self.keys.key.algorithm();
        let key = expand_label(hash, &next, b"key", alg.key_len());
        let iv = expand_label(hash, &next, b"iv", NONCE_LEN);
        let (Ok(key), Ok(iv)) = (UnboundKey::new(alg, &key), <[u8; NONCE_LEN]>::try_from(iv))
        else {
            panic!("the next keys have the lengths asked for");
        };
        self.keys = Keys {
            key: LessSafeKey::new(key),
            iv,
            seq: 0,
            explicit_nonce: false,
        };
        (record, next)
    }

    /// One record of `kind` with `data` (any length up to what TLS allows, empty included) and,
    /// on TLS 1.3, `padding` zeros after its type.
    pub(super) fn record(&mut self, kind: u8, data: &[u8], padding: usize) -> Vec<u8> {
        let mut out = Vec::new();
        if seal_record(self.version, &mut self.keys, kind, data, padding, &mut out).is_err() {
            panic!("a record could not be sealed");
        }
        out
    }
}

/// The record version of TLS 1.2.
const TLS12_VERSION: [u8; 2] = [3, 3];

/// TLS 1.2's additional data: sequence number, type, the record's version, plaintext length (RFC
/// 5246 6.2.3.3).
fn tls12_aad(seq: u64, kind: u8, version: [u8; 2], plain_len: usize) -> [u8; 13] {
    let mut aad = [0u8; 13];
    aad[..8].copy_from_slice(&seq.to_be_bytes());
    aad[8] = kind;
    aad[9] = version[0];
    aad[10] = version[1];
    aad[11] = (plain_len >> 8) as u8;
    aad[12] = plain_len as u8;
    aad
}

/// TLS 1.3's HKDF-Expand-Label with an empty context (RFC 8446 7.1), for the forger's key updates.
#[cfg(test)]
fn expand_label(hash: ring::hkdf::Algorithm, secret: &[u8], label: &[u8], len: usize) -> Vec<u8> {
    struct Len(usize);
    impl ring::hkdf::KeyType for Len {
        fn len(&self) -> usize {
            self.0
        }
    }
    let prk = ring::hkdf::Prk::new_less_safe(hash, secret);
    let length = (len as u16).to_be_bytes();
    let label_len = [(6 + label.len()) as u8];
    let info: [&[u8]; 5] = [&length, &label_len, b"tls13 ", label, &[0]];
    let mut out = vec![0u8; len];
    let filled = prk
        .expand(&info, Len(len))
        .and_then(|okm| okm.fill(&mut out));
    if filled.is_err() {
        panic!("HKDF-Expand-Label of {len} bytes");
    }
    out
}
