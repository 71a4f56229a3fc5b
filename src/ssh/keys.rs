//! The user's keys for public-key authentication: OpenSSH's private key files
//! (`-----BEGIN OPENSSH PRIVATE KEY-----`, not encrypted) for Ed25519, ECDSA (P-256, P-384) and
//! RSA (signing with rsa-sha2-512), and the signatures they make in SSH's wire form.
use super::wire::{Reader, Writer};
use base64::Engine as _;
use ring::rand::SystemRandom;
use ring::signature::{self, EcdsaKeyPair, Ed25519KeyPair, KeyPair, RsaKeyPair};

/// A key that can sign for public-key authentication.
pub enum UserKey {
    Ed25519(Ed25519KeyPair),
    Ecdsa {
        pair: EcdsaKeyPair,
        alg: &'static str,
        curve: &'static str,
    },
    /// A key an ssh-agent holds: its blob, the algorithm it signs with, the agent's flags for
    /// that (RSA's SHA-512), signed through [`super::sftp::Login::agent`].
    Agent {
        blob: Vec<u8>,
        alg: &'static str,
        flags: u32,
    },
    /// With its public exponent and modulus (big-endian), for the public key's blob.
    Rsa {
        pair: RsaKeyPair,
        e: Vec<u8>,
        n: Vec<u8>,
    },
}

impl std::fmt::Debug for UserKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.algorithm())
    }
}

/// Why a key file gives no key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeyError {
    /// Not an OpenSSH private key file, or one that does not read right.
    Malformed,
    /// Protected by a passphrase (an ssh-agent can use it; this cannot).
    Encrypted,
    /// A key type this cannot sign with (RSA, DSA, P-521, security keys).
    Unsupported(String),
}

impl UserKey {
    /// The algorithm name it signs with.
    pub fn algorithm(&self) -> &'static str {
        match self {
            UserKey::Ed25519(_) => "ssh-ed25519",
            UserKey::Ecdsa { alg, .. } => alg,
            UserKey::Rsa { .. } => "rsa-sha2-512",
            UserKey::Agent { alg, .. } => alg,
        }
    }

    /// A key an agent lists (its blob), if it is of a type that can sign here.
    pub fn from_agent(blob: &[u8]) -> Option<UserKey> {
        let (alg, flags) = match Reader::new(blob).text()? {
            "ssh-ed25519" => ("ssh-ed25519", 0),
            "ecdsa-sha2-nistp256" => ("ecdsa-sha2-nistp256", 0),
            "ecdsa-sha2-nistp384" => ("ecdsa-sha2-nistp384", 0),
            "ecdsa-sha2-nistp521" => ("ecdsa-sha2-nistp521", 0),
            // SSH_AGENT_RSA_SHA2_512
            "ssh-rsa" => ("rsa-sha2-512", 4),
            _ => return None,
        };
        Some(UserKey::Agent {
            blob: blob.to_vec(),
            alg,
            flags,
        })
    }

    /// The public key's wire blob.
    pub fn public_blob(&self) -> Vec<u8> {
        let mut b = Vec::new();
        match self {
            UserKey::Ed25519(k) => {
                b.put_string(self.algorithm().as_bytes());
                b.put_string(k.public_key().as_ref());
            }
            UserKey::Ecdsa { pair, curve, .. } => {
                b.put_string(self.algorithm().as_bytes());
                b.put_string(curve.as_bytes());
                b.put_string(pair.public_key().as_ref());
            }
            UserKey::Rsa { e, n, .. } => {
                b.put_string(b"ssh-rsa");
                b.put_mpint(e);
                b.put_mpint(n);
            }
            UserKey::Agent { blob, .. } => b = blob.clone(),
        }
        b
    }

    /// `data` signed, as SSH's signature blob.
    pub fn sign(&self, data: &[u8]) -> Option<Vec<u8>> {
        let mut b = Vec::new();
        b.put_string(self.algorithm().as_bytes());
        match self {
            UserKey::Ed25519(k) => b.put_string(k.sign(data).as_ref()),
            UserKey::Ecdsa { pair, .. } => {
                let sig = pair.sign(&SystemRandom::new(), data).ok()?;
                let fixed = sig.as_ref();
                let (r, s) = fixed.split_at(fixed.len() / 2);
                let mut rs = Vec::new();
                rs.put_mpint(r);
                rs.put_mpint(s);
                b.put_string(&rs);
            }
            UserKey::Rsa { pair, .. } => {
                let mut sig = vec![0u8; pair.public().modulus_len()];
                pair.sign(
                    &signature::RSA_PKCS1_SHA512,
                    &SystemRandom::new(),
                    data,
                    &mut sig,
                )
                .ok()?;
                b.put_string(&sig);
            }
            UserKey::Agent { .. } => return None,
        }
        Some(b)
    }

    /// The first key of an OpenSSH private key file's text.
    pub fn from_openssh(text: &str) -> Result<UserKey, KeyError> {
        const BEGIN: &str = "-----BEGIN OPENSSH PRIVATE KEY-----";
        const END: &str = "-----END OPENSSH PRIVATE KEY-----";
        let start = text.find(BEGIN).ok_or(KeyError::Malformed)? + BEGIN.len();
        let end = text[start..].find(END).ok_or(KeyError::Malformed)? + start;
        let b64: String = text[start..end]
            .chars()
            .filter(|c| !c.is_whitespace())
            .collect();
        let raw = base64::engine::general_purpose::STANDARD
            .decode(b64)
            .map_err(|_| KeyError::Malformed)?;
        let body = raw
            .strip_prefix(b"openssh-key-v1\0")
            .ok_or(KeyError::Malformed)?;
        let mut r = Reader::new(body);
        let bad = || KeyError::Malformed;
        let cipher = r.string().ok_or_else(bad)?;
        let _kdf = r.string().ok_or_else(bad)?;
        let _kdf_options = r.string().ok_or_else(bad)?;
        if cipher != b"none" {
            return Err(KeyError::Encrypted);
        }
        let n = r.u32().ok_or_else(bad)?;
        if n == 0 {
            return Err(bad());
        }
        for _ in 0..n {
            r.string().ok_or_else(bad)?;
        }
        let mut p = Reader::new(r.string().ok_or_else(bad)?);
        let (c1, c2) = (p.u32().ok_or_else(bad)?, p.u32().ok_or_else(bad)?);
        if c1 != c2 {
            return Err(bad());
        }
        let kind = p.text().ok_or_else(bad)?;
        match kind {
            "ssh-ed25519" => {
                let public = p.string().ok_or_else(bad)?;
                let private = p.string().ok_or_else(bad)?;
                if private.len() != 64 {
                    return Err(bad());
                }
                Ed25519KeyPair::from_seed_and_public_key(&private[..32], public)
                    .map(UserKey::Ed25519)
                    .map_err(|_| bad())
            }
            "ecdsa-sha2-nistp256" | "ecdsa-sha2-nistp384" => {
                let (alg, curve, signing, n): (_, _, &'static signature::EcdsaSigningAlgorithm, _) =
                    match kind {
                        "ecdsa-sha2-nistp256" => (
                            "ecdsa-sha2-nistp256",
                            "nistp256",
                            &signature::ECDSA_P256_SHA256_FIXED_SIGNING,
                            32,
                        ),
                        _ => (
                            "ecdsa-sha2-nistp384",
                            "nistp384",
                            &signature::ECDSA_P384_SHA384_FIXED_SIGNING,
                            48,
                        ),
                    };
                let _curve = p.string().ok_or_else(bad)?;
                let q = p.string().ok_or_else(bad)?;
                let d = p.mpint_positive().ok_or_else(bad)?;
                if d.len() > n {
                    return Err(bad());
                }
                let mut fixed = vec![0u8; n - d.len()];
                fixed.extend_from_slice(d);
                let pair = EcdsaKeyPair::from_private_key_and_public_key(
                    signing,
                    &fixed,
                    q,
                    &SystemRandom::new(),
                )
                .map_err(|_| bad())?;
                Ok(UserKey::Ecdsa { pair, alg, curve })
            }
            "ssh-rsa" => {
                let mut next = || p.mpint_positive().ok_or_else(bad);
                let (n, e, d, iqmp, pp, q) = (next()?, next()?, next()?, next()?, next()?, next()?);
                let der = rsa_der(n, e, d, pp, q, iqmp).ok_or_else(bad)?;
                let pair = RsaKeyPair::from_der(&der).map_err(|_| bad())?;
                Ok(UserKey::Rsa {
                    pair,
                    e: e.to_vec(),
                    n: n.to_vec(),
                })
            }
            other => Err(KeyError::Unsupported(other.to_string())),
        }
    }
}

/// PKCS#1's RSAPrivateKey in DER (what `ring` reads) from OpenSSH's parts: the CRT exponents
/// `d mod (p-1)` and `d mod (q-1)` are worked out here.
fn rsa_der(n: &[u8], e: &[u8], d: &[u8], p: &[u8], q: &[u8], iqmp: &[u8]) -> Option<Vec<u8>> {
    let minus_one = |x: &[u8]| -> Option<Vec<u8>> {
        // p and q are odd: p - 1 only clears the lowest bit.
        let mut v = x.to_vec();
        let last = v.last_mut()?;
        if *last & 1 == 0 {
            return None;
        }
        *last &= !1;
        Some(v)
    };
    let dp = big_mod(d, &minus_one(p)?)?;
    let dq = big_mod(d, &minus_one(q)?)?;
    let mut body = Vec::new();
    for part in [&[0u8][..], n, e, d, p, q, &dp, &dq, iqmp] {
        der_integer(&mut body, part);
    }
    let mut out = vec![0x30];
    der_length(&mut out, body.len());
    out.extend_from_slice(&body);
    Some(out)
}

fn der_length(out: &mut Vec<u8>, len: usize) {
    if len < 0x80 {
        out.push(len as u8);
    } else {
        let bytes: Vec<u8> = len
            .to_be_bytes()
            .into_iter()
            .skip_while(|&b| b == 0)
            .collect();
        out.push(0x80 | bytes.len() as u8);
        out.extend_from_slice(&bytes);
    }
}

/// A non-negative INTEGER from its big-endian magnitude.
fn der_integer(out: &mut Vec<u8>, v: &[u8]) {
    let skip = v.iter().take_while(|&&b| b == 0).count();
    let v = &v[skip.min(v.len().saturating_sub(1))..];
    let v: &[u8] = if v.is_empty() { &[0] } else { v };
    let pad = v[0] & 0x80 != 0;
    out.push(0x02);
    der_length(out, v.len() + pad as usize);
    if pad {
        out.push(0);
    }
    out.extend_from_slice(v);
}

/// `a mod m` for big-endian magnitudes (bit by bit: a key's few thousand bits, once).
fn big_mod(a: &[u8], m: &[u8]) -> Option<Vec<u8>> {
    // Little-endian 32-bit limbs.
    let limbs = |x: &[u8]| -> Vec<u32> {
        let mut v: Vec<u32> = x
            .rchunks(4)
            .map(|c| c.iter().fold(0u32, |acc, &b| acc << 8 | b as u32))
            .collect();
        while v.last() == Some(&0) {
            v.pop();
        }
        v
    };
    let m = limbs(m);
    if m.is_empty() {
        return None;
    }
    let ge = |r: &[u32]| -> bool {
        for i in (0..r.len().max(m.len())).rev() {
            let (x, y) = (
                r.get(i).copied().unwrap_or(0),
                m.get(i).copied().unwrap_or(0),
            );
            if x != y {
                return x > y;
            }
        }
        true
    };
    let mut r: Vec<u32> = vec![0; m.len() + 1];
    for byte in a {
        for bit in (0..8).rev() {
            // r = 2r + bit
            let mut carry = (byte >> bit) as u32 & 1;
            for limb in r.iter_mut() {
                let next = *limb >> 31;
                *limb = *limb << 1 | carry;
                carry = next;
            }
            if ge(&r) {
                let mut borrow = 0i64;
                for (i, limb) in r.iter_mut().enumerate() {
                    let d = *limb as i64 - m.get(i).copied().unwrap_or(0) as i64 - borrow;
                    borrow = (d < 0) as i64;
                    *limb = d.rem_euclid(1 << 32) as u32;
                }
            }
        }
    }
    let mut out: Vec<u8> = r.iter().rev().flat_map(|l| l.to_be_bytes()).collect();
    let skip = out.iter().take_while(|&&b| b == 0).count();
    out.drain(..skip.min(out.len().saturating_sub(1)));
    Some(out)
}

/// The ssh-agent protocol's messages (draft-miller-ssh-agent): the requests, framed, and the
/// answers read; the socket is the caller's.
pub mod agent {
    use super::super::wire::{Reader, Writer};

    const REQUEST_IDENTITIES: u8 = 11;
    const IDENTITIES_ANSWER: u8 = 12;
    const SIGN_REQUEST: u8 = 13;
    const SIGN_RESPONSE: u8 = 14;

    fn framed(body: Vec<u8>) -> Vec<u8> {
        let mut m = Vec::new();
        m.put_string(&body);
        m
    }

    /// The request for the keys the agent holds.
    pub fn list_request() -> Vec<u8> {
        framed(vec![REQUEST_IDENTITIES])
    }

    /// The request to sign `data` with the key `blob`.
    pub fn sign_request(blob: &[u8], data: &[u8], flags: u32) -> Vec<u8> {
        let mut b = vec![SIGN_REQUEST];
        b.put_string(blob);
        b.put_string(data);
        b.put_u32(flags);
        framed(b)
    }

    /// The length of the answer that `head` (its first 4 bytes) begins, whole.
    pub fn answer_len(head: &[u8]) -> Option<usize> {
        let n = Reader::new(head).u32()? as usize;
        (n <= 256 * 1024).then_some(4 + n)
    }

    /// The key blobs of an identities answer (whole, with its length).
    pub fn keys(answer: &[u8]) -> Vec<Vec<u8>> {
        let mut r = Reader::new(answer);
        let mut out = Vec::new();
        let (Some(_), Some(IDENTITIES_ANSWER), Some(n)) = (r.u32(), r.u8(), r.u32()) else {
            return out;
        };
        for _ in 0..n.min(100) {
            let (Some(blob), Some(_comment)) = (r.string(), r.string()) else {
                break;
            };
            out.push(blob.to_vec());
        }
        out
    }

    /// The signature blob of a sign answer (whole, with its length).
    pub fn signature(answer: &[u8]) -> Option<Vec<u8>> {
        let mut r = Reader::new(answer);
        r.u32()?;
        (r.u8()? == SIGN_RESPONSE).then_some(())?;
        r.string().map(|s| s.to_vec())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn big_numbers_are_reduced_as_u128_arithmetic_says() {
        for (a, m) in [
            (0u128, 7u128),
            (12345678901234567890123456789, 1_000_000_007),
            (u128::MAX, 0xffff_ffff_ffff_fffb),
            (99, 100),
            (1 << 100, (1 << 64) + 13),
        ] {
            let got = big_mod(&a.to_be_bytes(), &m.to_be_bytes()).unwrap();
            let mut want = (a % m).to_be_bytes().to_vec();
            let skip = want.iter().take_while(|&&b| b == 0).count();
            want.drain(..skip.min(15));
            assert_eq!(got, want, "{a} mod {m}");
        }
    }

    #[test]
    fn a_file_that_is_no_key_is_refused_without_panicking() {
        assert_eq!(
            UserKey::from_openssh("hello").unwrap_err(),
            KeyError::Malformed
        );
        let junk = "-----BEGIN OPENSSH PRIVATE KEY-----\nAAAA\n-----END OPENSSH PRIVATE KEY-----";
        assert_eq!(
            UserKey::from_openssh(junk).unwrap_err(),
            KeyError::Malformed
        );
    }
}
