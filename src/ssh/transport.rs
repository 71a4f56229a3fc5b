//! SSH's transport layer (RFC 4253) for a client, without I/O: the version lines, the key
//! exchange (curve25519-sha256 or ecdh-sha2-nistp256, RFC 8731 / 5656, with OpenSSH's strict
//! key exchange against prefix truncation), the server's host-key signature checked, keys
//! derived, and packets sealed and opened with an AEAD cipher (aes128-gcm / aes256-gcm
//! @openssh.com, chacha20-poly1305@openssh.com) — opened in place in the caller's buffer, so a
//! packet's payload is never copied to be read. A key exchange the server starts again later
//! (rekeying) is done here too, what the layers above send meanwhile held back until it ends.
//! The crypto is `ring`'s.
use super::wire::{self, Reader, Writer};
use super::{Error, ErrorKind};
use ring::aead::{self, chacha20_poly1305_openssh as chapoly, Aad, LessSafeKey, Nonce};
use ring::agreement;
use ring::digest;
use ring::rand::{SecureRandom, SystemRandom};
use ring::signature;
use std::ops::Range;

pub const MSG_DISCONNECT: u8 = 1;
pub const MSG_IGNORE: u8 = 2;
pub const MSG_UNIMPLEMENTED: u8 = 3;
pub const MSG_DEBUG: u8 = 4;
const MSG_KEXINIT: u8 = 20;
const MSG_NEWKEYS: u8 = 21;
const MSG_KEX_ECDH_INIT: u8 = 30;
const MSG_KEX_ECDH_REPLY: u8 = 31;

/// The most a packet may hold (RFC 4253 asks for 35000 at least); larger ones are refused, so a
/// packet always fits the buffer it is received into.
pub const MAX_PACKET: usize = 256 * 1024;

const KEX: &[&str] = &[
    "curve25519-sha256",
    "curve25519-sha256@libssh.org",
    "ecdh-sha2-nistp256",
];
/// Host-key algorithms, in libssh2's order (ECDSA before Ed25519 before RSA), so that the key
/// whose digest `--ssh-host-key-md` gives for aria2c is the one checked here too.
const HOST_KEY: &[&str] = &[
    "ecdsa-sha2-nistp256",
    "ecdsa-sha2-nistp384",
    "ssh-ed25519",
    "rsa-sha2-512",
    "rsa-sha2-256",
];
const CIPHERS: &[&str] = &[
    "aes128-gcm@openssh.com",
    "aes256-gcm@openssh.com",
    "chacha20-poly1305@openssh.com",
];
/// AEAD ciphers carry their own integrity; a MAC is still negotiated, and not used.
const MACS: &[&str] = &[
    "hmac-sha2-256-etm@openssh.com",
    "hmac-sha2-256",
    "hmac-sha1",
];
const STRICT_C: &str = "kex-strict-c-v00@openssh.com";
const STRICT_S: &str = "kex-strict-s-v00@openssh.com";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Cipher {
    Aes128Gcm,
    Aes256Gcm,
    ChaCha,
}

impl Cipher {
    fn named(n: &str) -> Cipher {
        match n {
            "aes128-gcm@openssh.com" => Cipher::Aes128Gcm,
            "aes256-gcm@openssh.com" => Cipher::Aes256Gcm,
            _ => Cipher::ChaCha,
        }
    }
}

/// One direction's packet protection.
enum Crypt {
    Plain,
    Gcm { key: Box<LessSafeKey>, iv: [u8; 12] },
    ChaChaOpen(chapoly::OpeningKey),
    ChaChaSeal(chapoly::SealingKey),
}

impl Crypt {
    /// Bytes a packet's length is padded to a multiple of, and whether the length field counts.
    fn block(&self) -> (usize, bool) {
        match self {
            Crypt::Plain => (8, true),
            Crypt::Gcm { .. } => (16, false),
            _ => (8, false),
        }
    }

    fn tag_len(&self) -> usize {
        match self {
            Crypt::Plain => 0,
            _ => 16,
        }
    }

    /// The GCM nonce for this packet, and the invocation counter moved on (RFC 5647 §7.1).
    fn next_nonce(iv: &mut [u8; 12]) -> Nonce {
        let n = Nonce::assume_unique_for_key(*iv);
        let mut c = [0u8; 8];
        c.copy_from_slice(&iv[4..]);
        iv[4..].copy_from_slice(&u64::from_be_bytes(c).wrapping_add(1).to_be_bytes());
        n
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum KexAlg {
    X25519,
    P256,
}

/// A key exchange under way.
struct Kex {
    /// Our KEXINIT's payload for this exchange (sent).
    i_c: Vec<u8>,
    alg: KexAlg,
    host_alg: &'static str,
    c2s: Cipher,
    s2c: Cipher,
    /// The server's KEXINIT payload.
    i_s: Vec<u8>,
    secret: Option<agreement::EphemeralPrivateKey>,
    q_c: Vec<u8>,
    /// The server guessed wrong with a first kex packet that follows: the next one is dropped.
    drop_next: bool,
    /// Our NEWKEYS is sent; incoming packets change keys at the server's.
    new_recv: Option<Crypt>,
}

enum Stage {
    /// Waiting for the server's version line.
    Version,
    /// Packets flow (a key exchange may be under way).
    Packets,
}

/// What one call to [`Transport::input`] did.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Input {
    /// Bytes at the front of the input that are finished with.
    pub used: usize,
    /// A packet for the layers above: its payload, a range of the input (opened in place).
    pub payload: Option<Range<usize>>,
    /// The first key exchange ended: [`Transport::host_key`] is the server's, proven.
    pub first_kex_done: bool,
}

/// A client's SSH transport.
pub struct Transport {
    /// Host-key algorithms in the order asked for.
    host_order: Vec<&'static str>,
    stage: Stage,
    v_c: Vec<u8>,
    v_s: Vec<u8>,
    kex: Option<Kex>,
    /// Our KEXINIT for the next exchange, when we sent it first (the very first one).
    pending_i_c: Option<Vec<u8>>,
    session_id: Option<Vec<u8>>,
    host_key: Option<Vec<u8>>,
    recv: Crypt,
    send: Crypt,
    seq_in: u32,
    seq_out: u32,
    strict: bool,
    /// The first key exchange has ended.
    first_done: bool,
    /// Bytes of lines the server sent before its version line.
    preamble: usize,
    /// Payloads sent during a key exchange, sent once it ends.
    held: Vec<Vec<u8>>,
    out: Vec<u8>,
    rng: SystemRandom,
}

fn err(kind: ErrorKind, m: impl Into<String>) -> Error {
    Error {
        kind,
        message: m.into(),
    }
}

fn proto(m: impl Into<String>) -> Error {
    err(ErrorKind::Protocol, m)
}

impl Transport {
    /// A transport whose version line and first KEXINIT are ready to send.
    /// `known`: host-key types known for the server, asked for before the others (as OpenSSH
    /// does, so a server's known key is the one it proves).
    pub fn new(version: &str, known: &[String]) -> Transport {
        let mut host_order: Vec<&'static str> = HOST_KEY
            .iter()
            .copied()
            .filter(|a| known.iter().any(|k| key_type_of(a) == k))
            .collect();
        let rest: Vec<&'static str> = HOST_KEY
            .iter()
            .copied()
            .filter(|a| !host_order.contains(a))
            .collect();
        host_order.extend(rest);
        let mut t = Transport {
            host_order,
            stage: Stage::Version,
            v_c: version.as_bytes().to_vec(),
            v_s: Vec::new(),
            kex: None,
            pending_i_c: None,
            session_id: None,
            host_key: None,
            recv: Crypt::Plain,
            send: Crypt::Plain,
            seq_in: 0,
            seq_out: 0,
            strict: false,
            first_done: false,
            preamble: 0,
            held: Vec::new(),
            out: Vec::new(),
            rng: SystemRandom::new(),
        };
        t.out.extend_from_slice(version.as_bytes());
        t.out.extend_from_slice(b"\r\n");
        let i_c = t.kexinit();
        t.seal(&i_c);
        t.pending_i_c = Some(i_c);
        t
    }

    /// A transport as if its first key exchange had ended with no cipher (the fuzz target's
    /// way past the crypto to the messages above it).
    #[doc(hidden)]
    pub fn plain_after_kex() -> Transport {
        let mut t = Transport::new("SSH-2.0-fuzz", &[]);
        t.out.clear();
        t.stage = Stage::Packets;
        t.pending_i_c = None;
        t.session_id = Some(vec![7; 32]);
        t.host_key = Some(Vec::new());
        t.first_done = true;
        t
    }

    /// The bytes to send, taken.
    pub fn take_out(&mut self) -> Vec<u8> {
        std::mem::take(&mut self.out)
    }

    /// Whether bytes wait to be sent.
    pub fn has_out(&self) -> bool {
        !self.out.is_empty()
    }

    /// The server's host key (its wire blob), once the first key exchange proved it.
    pub fn host_key(&self) -> Option<&[u8]> {
        self.host_key.as_deref()
    }

    /// The session identifier (the first exchange hash), signed in public-key authentication.
    pub fn session_id(&self) -> Option<&[u8]> {
        self.session_id.as_deref()
    }

    /// Sends a payload of the layers above (held while keys are being exchanged).
    pub fn send(&mut self, payload: &[u8]) {
        if self.kex.is_some() || self.session_id.is_none() {
            self.held.push(payload.to_vec());
        } else {
            self.seal(payload);
        }
    }

    fn kexinit(&self) -> Vec<u8> {
        let mut p = vec![MSG_KEXINIT];
        let mut cookie = [0u8; 16];
        let _ = self.rng.fill(&mut cookie);
        p.extend_from_slice(&cookie);
        let mut kex = KEX.join(",");
        if self.session_id.is_none() {
            kex.push(',');
            kex.push_str(STRICT_C);
        }
        p.put_string(kex.as_bytes());
        p.put_string(self.host_order.join(",").as_bytes());
        for _ in 0..2 {
            p.put_string(CIPHERS.join(",").as_bytes());
        }
        for _ in 0..2 {
            p.put_string(MACS.join(",").as_bytes());
        }
        for _ in 0..2 {
            p.put_string(b"none");
        }
        p.put_string(b"");
        p.put_string(b"");
        p.put_bool(false);
        p.put_u32(0);
        p
    }

    /// The whole length of the packet that `head` begins (once its length can be read).
    pub fn packet_len(&self, head: &[u8]) -> Option<usize> {
        let mut lenb: [u8; 4] = head.get(..4)?.try_into().ok()?;
        if let Crypt::ChaChaOpen(k) = &self.recv {
            lenb = k.decrypt_packet_length(self.seq_in, lenb);
        }
        let len = (u32::from_be_bytes(lenb) as usize).min(MAX_PACKET + 1);
        Some(4 + len + self.recv.tag_len())
    }

    /// Takes the bytes at the front of `data`: the server's version line, or one whole packet
    /// (opened in place). Nothing is used until a whole line or packet is there.
    pub fn input(&mut self, data: &mut [u8]) -> Result<Input, Error> {
        match self.stage {
            Stage::Version => self.version_line(data),
            Stage::Packets => self.packet(data),
        }
    }

    fn version_line(&mut self, data: &mut [u8]) -> Result<Input, Error> {
        let Some(nl) = data.iter().take(1024).position(|&b| b == b'\n') else {
            if data.len() >= 1024 {
                return Err(proto("the server's first line is not an SSH version line"));
            }
            return Ok(Input::default());
        };
        let line = &data[..nl];
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if line.starts_with(b"SSH-") {
            if !(line.starts_with(b"SSH-2.0-") || line.starts_with(b"SSH-1.99-")) {
                let v = String::from_utf8_lossy(line).into_owned();
                return Err(proto(format!("the server speaks another SSH version: {v}")));
            }
            self.v_s = line.to_vec();
            self.stage = Stage::Packets;
        } else {
            // (Lines before the version line are allowed, up to a bound.)
            self.preamble += nl + 1;
            if self.preamble > 64 * 1024 {
                return Err(proto("the server sends lines and no SSH version"));
            }
        }
        Ok(Input {
            used: nl + 1,
            ..Input::default()
        })
    }

    fn packet(&mut self, data: &mut [u8]) -> Result<Input, Error> {
        let tag_len = self.recv.tag_len();
        if data.len() < 4 {
            return Ok(Input::default());
        }
        let mut lenb = [0u8; 4];
        lenb.copy_from_slice(&data[..4]);
        if let Crypt::ChaChaOpen(k) = &self.recv {
            lenb = k.decrypt_packet_length(self.seq_in, lenb);
        }
        let len = u32::from_be_bytes(lenb) as usize;
        if !(5..=MAX_PACKET).contains(&len) {
            return Err(proto(format!("an SSH packet of {len} bytes")));
        }
        let whole = 4 + len + tag_len;
        if data.len() < whole {
            return Ok(Input::default());
        }
        let seq = self.seq_in;
        let plain: Range<usize> = match &mut self.recv {
            Crypt::Plain => 4..4 + len,
            Crypt::Gcm { key, iv } => {
                let nonce = Crypt::next_nonce(iv);
                let (head, body) = data[..whole].split_at_mut(4);
                key.open_in_place(nonce, Aad::from(&head[..]), body)
                    .map_err(|_| err(ErrorKind::Crypto, "an SSH packet failed its check"))?;
                4..4 + len
            }
            Crypt::ChaChaOpen(k) => {
                let (body, tag) = data[..whole].split_at_mut(4 + len);
                let mut t = [0u8; 16];
                t.copy_from_slice(tag);
                k.open_in_place(seq, body, &t)
                    .map_err(|_| err(ErrorKind::Crypto, "an SSH packet failed its check"))?;
                4..4 + len
            }
            Crypt::ChaChaSeal(_) => return Err(proto("keys crossed")),
        };
        self.seq_in = self.seq_in.wrapping_add(1);
        let pad = data[plain.start] as usize;
        if pad + 1 > len {
            return Err(proto("an SSH packet's padding runs past its end"));
        }
        let payload = plain.start + 1..plain.end - pad;
        let mut input = Input {
            used: whole,
            ..Input::default()
        };
        if payload.is_empty() {
            return Err(proto("an empty SSH packet"));
        }
        let kind = data[payload.start];
        if self.kex.as_ref().is_some_and(|k| k.drop_next) {
            if let Some(k) = self.kex.as_mut() {
                k.drop_next = false;
            }
            return Ok(input);
        }
        let body = &data[payload.clone()];
        match kind {
            MSG_KEXINIT => self.on_kexinit(body)?,
            MSG_KEX_ECDH_REPLY => self.on_reply(body)?,
            MSG_NEWKEYS => input.first_kex_done = self.on_newkeys()?,
            MSG_DISCONNECT => {
                let mut r = Reader::new(&body[1..]);
                let _ = r.u32();
                let why = r.text().unwrap_or("").trim().to_string();
                return Err(err(
                    ErrorKind::Disconnected,
                    format!("the server disconnected: {why}"),
                ));
            }
            MSG_IGNORE | MSG_DEBUG | MSG_UNIMPLEMENTED => {}
            // Nothing of the layers above before the first NEWKEYS (unauthenticated) nor while
            // keys are being exchanged again (RFC 4253 §7.1).
            _ if !self.first_done || self.kex.is_some() => {
                return Err(proto(format!(
                    "SSH message {kind} while keys were being exchanged"
                )));
            }
            // (During a later exchange the server may still send other messages: RFC 4253 §7.)
            _ => input.payload = Some(payload),
        }
        Ok(input)
    }

    fn on_kexinit(&mut self, body: &[u8]) -> Result<(), Error> {
        if self.kex.is_some() {
            return Err(proto("a second KEXINIT during a key exchange"));
        }
        let mut r = Reader::new(&body[1..]);
        r.bytes(16).ok_or_else(|| proto("a short KEXINIT"))?;
        let mut lists: Vec<&[u8]> = Vec::new();
        for _ in 0..10 {
            lists.push(r.string().ok_or_else(|| proto("a short KEXINIT"))?);
        }
        let follows = r.bool().ok_or_else(|| proto("a short KEXINIT"))?;
        let no = |what: &str| {
            proto(format!(
                "no {what} both sides have (the server offers {})",
                String::from_utf8_lossy(lists_get(&lists, what))
            ))
        };
        let kex_name = wire::choose(KEX, lists[0]).ok_or_else(|| no("key exchange"))?;
        let host_alg =
            wire::choose(&self.host_order, lists[1]).ok_or_else(|| no("host key type"))?;
        let c2s = wire::choose(CIPHERS, lists[2]).ok_or_else(|| no("cipher"))?;
        let s2c = wire::choose(CIPHERS, lists[3]).ok_or_else(|| no("cipher"))?;
        wire::choose(MACS, lists[4]).ok_or_else(|| no("MAC"))?;
        wire::choose(MACS, lists[5]).ok_or_else(|| no("MAC"))?;
        if !wire::has(lists[6], "none") || !wire::has(lists[7], "none") {
            return Err(proto("the server insists on compression"));
        }
        if self.session_id.is_none() && wire::has(lists[0], STRICT_S) {
            self.strict = true;
        }
        let first = |l: &[u8]| l.split(|&b| b == b',').next().map(|s| s.to_vec());
        let guessed_right = first(lists[0]).as_deref() == Some(kex_name.as_bytes())
            && first(lists[1]).as_deref() == Some(host_alg.as_bytes());
        let i_c = match self.pending_i_c.take() {
            Some(i) => i,
            None => {
                // The server starts a new exchange: our KEXINIT answers it.
                let i = self.kexinit();
                self.seal(&i);
                i
            }
        };
        let alg = match kex_name {
            "ecdh-sha2-nistp256" => KexAlg::P256,
            _ => KexAlg::X25519,
        };
        let curve = match alg {
            KexAlg::X25519 => &agreement::X25519,
            KexAlg::P256 => &agreement::ECDH_P256,
        };
        let secret = agreement::EphemeralPrivateKey::generate(curve, &self.rng)
            .map_err(|_| err(ErrorKind::Crypto, "no key could be made"))?;
        let q_c = secret
            .compute_public_key()
            .map_err(|_| err(ErrorKind::Crypto, "no key could be made"))?
            .as_ref()
            .to_vec();
        let mut init = vec![MSG_KEX_ECDH_INIT];
        init.put_string(&q_c);
        self.seal(&init);
        self.kex = Some(Kex {
            i_c,
            alg,
            host_alg,
            c2s: Cipher::named(c2s),
            s2c: Cipher::named(s2c),
            i_s: body.to_vec(),
            secret: Some(secret),
            q_c,
            drop_next: follows && !guessed_right,
            new_recv: None,
        });
        Ok(())
    }

    fn on_reply(&mut self, body: &[u8]) -> Result<(), Error> {
        let Some(kex) = self.kex.as_mut().filter(|k| k.secret.is_some()) else {
            return Err(proto("a key exchange reply nobody asked for"));
        };
        let mut r = Reader::new(&body[1..]);
        let short = || proto("a short key exchange reply");
        let k_s = r.string().ok_or_else(short)?.to_vec();
        let q_s = r.string().ok_or_else(short)?.to_vec();
        let sig = r.string().ok_or_else(short)?.to_vec();
        let curve = match kex.alg {
            KexAlg::X25519 => &agreement::X25519,
            KexAlg::P256 => &agreement::ECDH_P256,
        };
        let secret = kex.secret.take().ok_or_else(short)?;
        let peer = agreement::UnparsedPublicKey::new(curve, &q_s);
        let shared = agreement::agree_ephemeral(secret, &peer, |k| k.to_vec()).map_err(|_| {
            err(
                ErrorKind::Crypto,
                "the server's key exchange value is not valid",
            )
        })?;
        let mut k = Vec::new();
        k.put_mpint(&shared);
        let mut h = digest::Context::new(&digest::SHA256);
        let mut buf = Vec::new();
        buf.put_string(&self.v_c);
        buf.put_string(&self.v_s);
        buf.put_string(&kex.i_c);
        buf.put_string(&kex.i_s);
        buf.put_string(&k_s);
        buf.put_string(&kex.q_c);
        buf.put_string(&q_s);
        h.update(&buf);
        h.update(&k);
        let h = h.finish().as_ref().to_vec();
        verify_host_signature(kex.host_alg, &k_s, &sig, &h)?;
        if let Some(known) = &self.host_key {
            if *known != k_s {
                return Err(err(
                    ErrorKind::HostKey,
                    "the server's host key changed during the connection",
                ));
            }
        }
        let sid = self.session_id.clone().unwrap_or_else(|| h.clone());
        let derive = |letter: u8, n: usize| derive_key(&k, &h, letter, &sid, n);
        let (c2s, s2c) = (kex.c2s, kex.s2c);
        let send = make_crypt(c2s, &derive(b'A', 12), &derive(b'C', 64), true);
        let recv = make_crypt(s2c, &derive(b'B', 12), &derive(b'D', 64), false);
        kex.new_recv = Some(recv);
        self.seal(&[MSG_NEWKEYS]);
        self.send = send;
        if self.strict {
            self.seq_out = 0;
        }
        if self.session_id.is_none() {
            self.session_id = Some(h);
            self.host_key = Some(k_s);
        }
        Ok(())
    }

    fn on_newkeys(&mut self) -> Result<bool, Error> {
        let Some(recv) = self.kex.as_mut().and_then(|k| k.new_recv.take()) else {
            return Err(proto("NEWKEYS before the key exchange ended"));
        };
        self.recv = recv;
        if self.strict {
            self.seq_in = 0;
        }
        self.kex = None;
        let first = !self.first_done;
        self.first_done = true;
        for p in std::mem::take(&mut self.held) {
            self.seal(&p);
        }
        Ok(first)
    }

    /// Seals `payload` into one packet, appended to the bytes to send.
    fn seal(&mut self, payload: &[u8]) {
        let (block, len_counts) = self.send.block();
        let unpadded = 1 + payload.len() + if len_counts { 4 } else { 0 };
        let mut pad = block - unpadded % block;
        if pad < 4 {
            pad += block;
        }
        let len = 1 + payload.len() + pad;
        let start = self.out.len();
        self.out.extend_from_slice(&(len as u32).to_be_bytes());
        self.out.push(pad as u8);
        self.out.extend_from_slice(payload);
        let mut padding = [0u8; 32];
        let _ = self.rng.fill(&mut padding[..pad]);
        self.out.extend_from_slice(&padding[..pad]);
        let seq = self.seq_out;
        self.seq_out = self.seq_out.wrapping_add(1);
        match &mut self.send {
            Crypt::Plain | Crypt::ChaChaOpen(_) => {}
            Crypt::Gcm { key, iv } => {
                let nonce = Crypt::next_nonce(iv);
                let (head, body) = self.out[start..].split_at_mut(4);
                if let Ok(tag) = key.seal_in_place_separate_tag(nonce, Aad::from(&head[..]), body) {
                    self.out.extend_from_slice(tag.as_ref());
                }
            }
            Crypt::ChaChaSeal(k) => {
                let mut tag = [0u8; 16];
                k.seal_in_place(seq, &mut self.out[start..], &mut tag);
                self.out.extend_from_slice(&tag);
            }
        }
    }
}

/// The key type a host-key algorithm's keys have.
fn key_type_of(alg: &str) -> &str {
    match alg {
        "rsa-sha2-512" | "rsa-sha2-256" => "ssh-rsa",
        a => a,
    }
}

fn lists_get<'a>(lists: &[&'a [u8]], what: &str) -> &'a [u8] {
    let i = match what {
        "key exchange" => 0,
        "host key type" => 1,
        "cipher" => 2,
        "MAC" => 4,
        _ => 6,
    };
    lists.get(i).copied().unwrap_or(b"")
}

/// RFC 4253 §7.2: `HASH(K || H || letter || session_id)`, extended to `n` bytes.
fn derive_key(k: &[u8], h: &[u8], letter: u8, sid: &[u8], n: usize) -> Vec<u8> {
    let mut ctx = digest::Context::new(&digest::SHA256);
    ctx.update(k);
    ctx.update(h);
    ctx.update(&[letter]);
    ctx.update(sid);
    let mut out = ctx.finish().as_ref().to_vec();
    while out.len() < n {
        let mut ctx = digest::Context::new(&digest::SHA256);
        ctx.update(k);
        ctx.update(h);
        ctx.update(&out);
        out.extend_from_slice(ctx.finish().as_ref());
    }
    out.truncate(n);
    out
}

fn make_crypt(c: Cipher, iv: &[u8], key: &[u8], sealing: bool) -> Crypt {
    let gcm = |alg: &'static aead::Algorithm, n: usize| {
        let mut v = [0u8; 12];
        v.copy_from_slice(&iv[..12]);
        match aead::UnboundKey::new(alg, &key[..n]) {
            Ok(k) => Crypt::Gcm {
                key: Box::new(LessSafeKey::new(k)),
                iv: v,
            },
            // (The lengths are the algorithms' own: this cannot fail.)
            Err(_) => Crypt::Plain,
        }
    };
    match c {
        Cipher::Aes128Gcm => gcm(&aead::AES_128_GCM, 16),
        Cipher::Aes256Gcm => gcm(&aead::AES_256_GCM, 32),
        Cipher::ChaCha => {
            let mut k = [0u8; chapoly::KEY_LEN];
            k.copy_from_slice(&key[..chapoly::KEY_LEN]);
            match sealing {
                true => Crypt::ChaChaSeal(chapoly::SealingKey::new(&k)),
                false => Crypt::ChaChaOpen(chapoly::OpeningKey::new(&k)),
            }
        }
    }
}

/// Checks the server's signature `sig` (its wire blob) of the exchange hash `h` with host key
/// `key` (its wire blob), for host-key algorithm `alg`.
pub fn verify_host_signature(alg: &str, key: &[u8], sig: &[u8], h: &[u8]) -> Result<(), Error> {
    let bad = || {
        err(
            ErrorKind::HostKey,
            "the server's host key signature is not valid",
        )
    };
    let mut k = Reader::new(key);
    let key_type = k.text().ok_or_else(bad)?;
    let mut s = Reader::new(sig);
    let sig_type = s.text().ok_or_else(bad)?;
    let sig_blob = s.string().ok_or_else(bad)?;
    if sig_type != alg {
        return Err(bad());
    }
    let ok = match alg {
        "ssh-ed25519" if key_type == alg => {
            let pk = k.string().ok_or_else(bad)?;
            signature::UnparsedPublicKey::new(&signature::ED25519, pk).verify(h, sig_blob)
        }
        "ecdsa-sha2-nistp256" | "ecdsa-sha2-nistp384" if key_type == alg => {
            let (algo, n): (&'static signature::EcdsaVerificationAlgorithm, usize) = match alg {
                "ecdsa-sha2-nistp256" => (&signature::ECDSA_P256_SHA256_FIXED, 32),
                _ => (&signature::ECDSA_P384_SHA384_FIXED, 48),
            };
            let _curve = k.string().ok_or_else(bad)?;
            let q = k.string().ok_or_else(bad)?;
            let mut rs = Reader::new(sig_blob);
            let r = rs.mpint_positive().ok_or_else(bad)?;
            let s2 = rs.mpint_positive().ok_or_else(bad)?;
            if r.len() > n || s2.len() > n {
                return Err(bad());
            }
            let mut fixed = vec![0u8; 2 * n];
            fixed[n - r.len()..n].copy_from_slice(r);
            fixed[2 * n - s2.len()..].copy_from_slice(s2);
            signature::UnparsedPublicKey::new(algo, q).verify(h, &fixed)
        }
        "rsa-sha2-256" | "rsa-sha2-512" if key_type == "ssh-rsa" => {
            let e = k.mpint_positive().ok_or_else(bad)?;
            let n = k.mpint_positive().ok_or_else(bad)?;
            let params = match alg {
                "rsa-sha2-256" => &signature::RSA_PKCS1_2048_8192_SHA256,
                _ => &signature::RSA_PKCS1_2048_8192_SHA512,
            };
            let mut padded = vec![0u8; n.len().saturating_sub(sig_blob.len())];
            padded.extend_from_slice(sig_blob);
            signature::RsaPublicKeyComponents { n, e }.verify(params, h, &padded)
        }
        _ => return Err(bad()),
    };
    ok.map_err(|_| bad())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nothing_above_the_transport_is_taken_before_the_keys_are_exchanged() {
        let mut t = Transport::new("SSH-2.0-test", &[]);
        let mut line = b"SSH-2.0-server\r\n".to_vec();
        assert_eq!(t.input(&mut line).map(|i| i.used), Ok(line.len()));
        // CHANNEL_DATA, in the clear, before any key exchange: refused.
        let mut p = Vec::new();
        crate::ssh::sftp::plain_packet(&mut p, &[94, 0, 0, 0, 0, 0, 0, 0, 1, b'x']);
        let e = t.input(&mut p).expect_err("taken");
        assert!(e.message.contains("while keys were being exchanged"), "{e}");
        // IGNORE is nothing to act on, and passes.
        let mut t = Transport::new("SSH-2.0-test", &[]);
        let mut line = b"SSH-2.0-server\r\n".to_vec();
        t.input(&mut line).expect("version");
        let mut p = Vec::new();
        crate::ssh::sftp::plain_packet(&mut p, &[MSG_IGNORE, 0, 0, 0, 0]);
        assert_eq!(t.input(&mut p).map(|i| i.payload), Ok(None));
    }
}
