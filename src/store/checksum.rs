//! Whole-file checksums, `--checksum=TYPE=DIGEST` with aria2's type names: which kinds there are,
//! parsing the option, and one streaming hasher over all of them.
use sha2::Digest;

/// A hash aria2 knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Md5,
    Sha1,
    Sha224,
    Sha256,
    Sha384,
    Sha512,
    Adler32,
}

impl Kind {
    /// Every kind, in the order `aria2c -v` lists them after `Hash Algorithms:`.
    pub const ALL: [Kind; 7] = [
        Kind::Sha1,
        Kind::Sha224,
        Kind::Sha256,
        Kind::Sha384,
        Kind::Sha512,
        Kind::Md5,
        Kind::Adler32,
    ];

    /// aria2's name for it (`sha-256`).
    pub fn name(self) -> &'static str {
        match self {
            Kind::Md5 => "md5",
            Kind::Sha1 => "sha-1",
            Kind::Sha224 => "sha-224",
            Kind::Sha256 => "sha-256",
            Kind::Sha384 => "sha-384",
            Kind::Sha512 => "sha-512",
            Kind::Adler32 => "adler32",
        }
    }

    /// The kind aria2 names `s`, in any case (aria2c takes `SHA-256=` as `sha-256=`).
    pub fn from_name(s: &str) -> Option<Kind> {
        Kind::ALL
            .into_iter()
            .find(|k| k.name().eq_ignore_ascii_case(s))
    }

    /// Digest length in bytes.
    pub fn digest_len(self) -> usize {
        match self {
            Kind::Md5 => 16,
            Kind::Sha1 => 20,
            Kind::Sha224 => 28,
            Kind::Sha256 => 32,
            Kind::Sha384 => 48,
            Kind::Sha512 => 64,
            Kind::Adler32 => 4,
        }
    }
}

/// The digest a file must have.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Expected {
    pub kind: Kind,
    pub digest: Vec<u8>,
}

/// Parses `TYPE=HEXDIGEST` (the option's syntax was checked when the command line was read).
pub fn parse(spec: &str) -> Option<Expected> {
    let (name, hex) = spec.split_once('=')?;
    let kind = Kind::from_name(name)?;
    if hex.len() != kind.digest_len() * 2 {
        return None;
    }
    let digest = (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(hex.get(i..i + 2)?, 16).ok())
        .collect::<Option<Vec<u8>>>()?;
    Some(Expected { kind, digest })
}

/// The digests `Digest` header values say (RFC 3230: `ALG=BASE64`, comma-separated; SHA-512,
/// SHA-256, SHA (SHA-1) and MD5 taken, names in any case), strongest first; an algorithm given
/// twice with different values is left out, as is a value of the wrong length.
pub fn from_digest_header(values: &[String]) -> Vec<Expected> {
    use base64::Engine as _;
    let mut found: Vec<Expected> = Vec::new();
    let mut conflicting: Vec<Kind> = Vec::new();
    for pair in values.iter().flat_map(|v| v.split(',')) {
        let Some((alg, value)) = pair.split_once('=') else {
            continue;
        };
        let kind = match alg.trim().to_ascii_lowercase().as_str() {
            "sha-512" => Kind::Sha512,
            "sha-256" => Kind::Sha256,
            "sha" => Kind::Sha1,
            "md5" => Kind::Md5,
            _ => continue,
        };
        let Ok(digest) = base64::engine::general_purpose::STANDARD.decode(value.trim()) else {
            continue;
        };
        if digest.len() != kind.digest_len() {
            continue;
        }
        match found.iter().find(|e| e.kind == kind) {
            Some(e) if e.digest != digest => conflicting.push(kind),
            Some(_) => {}
            None => found.push(Expected { kind, digest }),
        }
    }
    found.retain(|e| !conflicting.contains(&e.kind));
    let order = [Kind::Sha512, Kind::Sha256, Kind::Sha1, Kind::Md5];
    found.sort_by_key(|e| order.iter().position(|k| *k == e.kind));
    found
}

/// Hashes bytes fed in file order.
pub enum Hasher {
    Md5(md5::Md5),
    Sha1(sha1::Sha1),
    Sha224(sha2::Sha224),
    Sha256(sha2::Sha256),
    Sha384(sha2::Sha384),
    Sha512(sha2::Sha512),
    Adler32(adler2::Adler32),
}

impl Hasher {
    pub fn new(kind: Kind) -> Hasher {
        match kind {
            Kind::Md5 => Hasher::Md5(md5::Md5::new()),
            Kind::Sha1 => Hasher::Sha1(sha1::Sha1::new()),
            Kind::Sha224 => Hasher::Sha224(sha2::Sha224::new()),
            Kind::Sha256 => Hasher::Sha256(sha2::Sha256::new()),
            Kind::Sha384 => Hasher::Sha384(sha2::Sha384::new()),
            Kind::Sha512 => Hasher::Sha512(sha2::Sha512::new()),
            Kind::Adler32 => Hasher::Adler32(adler2::Adler32::new()),
        }
    }

    pub fn update(&mut self, data: &[u8]) {
        match self {
            Hasher::Md5(h) => h.update(data),
            Hasher::Sha1(h) => h.update(data),
            Hasher::Sha224(h) => h.update(data),
            Hasher::Sha256(h) => h.update(data),
            Hasher::Sha384(h) => h.update(data),
            Hasher::Sha512(h) => h.update(data),
            Hasher::Adler32(h) => h.write_slice(data),
        }
    }

    pub fn finish(self) -> Vec<u8> {
        match self {
            Hasher::Md5(h) => h.finalize().to_vec(),
            Hasher::Sha1(h) => h.finalize().to_vec(),
            Hasher::Sha224(h) => h.finalize().to_vec(),
            Hasher::Sha256(h) => h.finalize().to_vec(),
            Hasher::Sha384(h) => h.finalize().to_vec(),
            Hasher::Sha512(h) => h.finalize().to_vec(),
            Hasher::Adler32(h) => h.checksum().to_be_bytes().to_vec(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn digest_headers_give_their_strongest_known_digest_first() {
        use base64::Engine as _;
        let b64 = |d: &[u8]| base64::engine::general_purpose::STANDARD.encode(d);
        let sha256 = [7u8; 32];
        let md5 = [9u8; 16];
        let header = format!("MD5={}, SHA-256={}, UNIXsum=30637", b64(&md5), b64(&sha256));
        let got = from_digest_header(&[header]);
        let kinds: Vec<Kind> = got.iter().map(|e| e.kind).collect();
        assert_eq!(kinds, [Kind::Sha256, Kind::Md5]);
        assert_eq!(got[0].digest, sha256);
        // SHA (SHA-1) taken, a wrong length and bad base64 passed over, two values of one
        // algorithm dropped.
        let v = vec![
            format!("sha={}", b64(&[1u8; 20])),
            format!("sha-512={}", b64(&[1u8; 10])),
            "md5=!!!".to_string(),
            format!("sha-256={}", b64(&[1u8; 32])),
            format!("SHA-256={}", b64(&[2u8; 32])),
        ];
        let kinds: Vec<Kind> = from_digest_header(&v).iter().map(|e| e.kind).collect();
        assert_eq!(kinds, [Kind::Sha1]);
    }

    fn hex(b: &[u8]) -> String {
        b.iter().map(|x| format!("{x:02x}")).collect()
    }

    /// Known digests of "abc" (RFC 1321, FIPS 180, and zlib's adler32).
    #[test]
    fn digests_of_abc() {
        let cases = [
            (Kind::Md5, "900150983cd24fb0d6963f7d28e17f72"),
            (Kind::Sha1, "a9993e364706816aba3e25717850c26c9cd0d89d"),
            (
                Kind::Sha224,
                "23097d223405d8228642a477bda255b32aadbce4bda0b3f7e36c9da7",
            ),
            (
                Kind::Sha256,
                "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad",
            ),
            (Kind::Adler32, "024d0127"),
        ];
        for (kind, want) in cases {
            let mut h = Hasher::new(kind);
            h.update(b"a");
            h.update(b"bc");
            assert_eq!(hex(&h.finish()), want, "{}", kind.name());
            let e = parse(&format!("{}={want}", kind.name())).unwrap();
            assert_eq!(e.kind, kind);
            assert_eq!(hex(&e.digest), want);
        }
        let mut h = Hasher::new(Kind::Sha512);
        h.update(b"abc");
        assert!(hex(&h.finish()).starts_with("ddaf35a193617aba"));
        let mut h = Hasher::new(Kind::Sha384);
        h.update(b"abc");
        assert!(hex(&h.finish()).starts_with("cb00753f45a35e8b"));
    }

    #[test]
    fn kind_names_in_any_case() {
        let hex = "900150983cd24fb0d6963f7d28e17f72";
        for name in ["md5", "MD5", "Md5"] {
            assert_eq!(
                parse(&format!("{name}={hex}")).map(|e| e.kind),
                Some(Kind::Md5)
            );
        }
        assert_eq!(Kind::from_name("SHA-256"), Some(Kind::Sha256));
        assert_eq!(Kind::from_name("Sha-1"), Some(Kind::Sha1));
        assert_eq!(Kind::from_name("sha256"), None);
    }

    #[test]
    fn bad_specs() {
        assert_eq!(parse("sha-256=abc"), None);
        assert_eq!(
            parse("sha256=ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"),
            None
        );
        assert_eq!(parse("md5=zz0150983cd24fb0d6963f7d28e17f72"), None);
        assert_eq!(parse("md5"), None);
    }
}
