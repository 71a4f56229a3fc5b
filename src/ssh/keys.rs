//! The user's keys for public-key authentication: OpenSSH's private key files
//! (`-----BEGIN OPENSSH PRIVATE KEY-----`, not encrypted) for Ed25519 and ECDSA (P-256, P-384),
//! and the signatures they make in SSH's wire form.
use super::wire::{Reader, Writer};
use base64::Engine as _;
use ring::rand::SystemRandom;
use ring::signature::{self, EcdsaKeyPair, Ed25519KeyPair, KeyPair};

/// A key that can sign for public-key authentication.
pub enum UserKey {
    Ed25519(Ed25519KeyPair),
    Ecdsa {
        pair: EcdsaKeyPair,
        alg: &'static str,
        curve: &'static str,
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
        }
    }

    /// The public key's wire blob.
    pub fn public_blob(&self) -> Vec<u8> {
        let mut b = Vec::new();
        b.put_string(self.algorithm().as_bytes());
        match self {
            UserKey::Ed25519(k) => b.put_string(k.public_key().as_ref()),
            UserKey::Ecdsa { pair, curve, .. } => {
                b.put_string(curve.as_bytes());
                b.put_string(pair.public_key().as_ref());
            }
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
            other => Err(KeyError::Unsupported(other.to_string())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
