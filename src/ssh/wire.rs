//! SSH's wire types (RFC 4251 §5): bytes, big-endian integers, length-prefixed strings, `mpint`s
//! and name-lists, read from a slice that may lie (every read is bounded) and written to a `Vec`.

/// Reads SSH wire types from a slice; each read fails with `None` past its end.
pub struct Reader<'a> {
    data: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    pub fn new(data: &'a [u8]) -> Reader<'a> {
        Reader { data, at: 0 }
    }

    /// Bytes not read yet.
    pub fn rest(&self) -> &'a [u8] {
        &self.data[self.at..]
    }

    pub fn bytes(&mut self, n: usize) -> Option<&'a [u8]> {
        let end = self.at.checked_add(n)?;
        let b = self.data.get(self.at..end)?;
        self.at = end;
        Some(b)
    }

    pub fn u8(&mut self) -> Option<u8> {
        self.bytes(1).map(|b| b[0])
    }

    pub fn bool(&mut self) -> Option<bool> {
        self.u8().map(|b| b != 0)
    }

    pub fn u32(&mut self) -> Option<u32> {
        let b = self.bytes(4)?;
        Some(u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }

    pub fn u64(&mut self) -> Option<u64> {
        let hi = self.u32()? as u64;
        let lo = self.u32()? as u64;
        Some(hi << 32 | lo)
    }

    /// A length-prefixed string of bytes.
    pub fn string(&mut self) -> Option<&'a [u8]> {
        let n = self.u32()? as usize;
        self.bytes(n)
    }

    /// A string that must be UTF-8 (names, messages).
    pub fn text(&mut self) -> Option<&'a str> {
        std::str::from_utf8(self.string()?).ok()
    }

    /// A non-negative `mpint`'s magnitude, big-endian, without leading zero bytes.
    pub fn mpint_positive(&mut self) -> Option<&'a [u8]> {
        let b = self.string()?;
        if b.first().is_some_and(|&x| x & 0x80 != 0) {
            return None;
        }
        let skip = b.iter().take_while(|&&x| x == 0).count();
        Some(&b[skip..])
    }
}

/// Appends SSH wire types to a buffer.
pub trait Writer {
    fn put_u8(&mut self, v: u8);
    fn put_bool(&mut self, v: bool);
    fn put_u32(&mut self, v: u32);
    fn put_u64(&mut self, v: u64);
    fn put_string(&mut self, v: &[u8]);
    /// A non-negative integer given big-endian (leading zeros allowed) as an `mpint`.
    fn put_mpint(&mut self, v: &[u8]);
}

impl Writer for Vec<u8> {
    fn put_u8(&mut self, v: u8) {
        self.push(v);
    }
    fn put_bool(&mut self, v: bool) {
        self.push(v as u8);
    }
    fn put_u32(&mut self, v: u32) {
        self.extend_from_slice(&v.to_be_bytes());
    }
    fn put_u64(&mut self, v: u64) {
        self.extend_from_slice(&v.to_be_bytes());
    }
    fn put_string(&mut self, v: &[u8]) {
        self.put_u32(v.len() as u32);
        self.extend_from_slice(v);
    }
    fn put_mpint(&mut self, v: &[u8]) {
        let skip = v.iter().take_while(|&&x| x == 0).count();
        let v = &v[skip..];
        let pad = v.first().is_some_and(|&x| x & 0x80 != 0);
        self.put_u32((v.len() + pad as usize) as u32);
        if pad {
            self.push(0);
        }
        self.extend_from_slice(v);
    }
}

/// The first name of `ours` (in our order of preference) that `theirs` (a name-list) also has.
pub fn choose<'a>(ours: &[&'a str], theirs: &[u8]) -> Option<&'a str> {
    let theirs = std::str::from_utf8(theirs).ok()?;
    ours.iter()
        .copied()
        .find(|o| theirs.split(',').any(|t| t == *o))
}

/// Whether name-list `list` has `name`.
pub fn has(list: &[u8], name: &str) -> bool {
    std::str::from_utf8(list).is_ok_and(|l| l.split(',').any(|t| t == name))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mpints_are_written_and_read_as_rfc_4251_shows_them() {
        // RFC 4251 §5's examples.
        let mut v = Vec::new();
        v.put_mpint(&[0]);
        assert_eq!(v, [0, 0, 0, 0]);
        let mut v = Vec::new();
        v.put_mpint(&[0x09, 0xa3, 0x78, 0xf9, 0xb2, 0xe3, 0x32, 0xa7]);
        assert_eq!(
            v,
            [0, 0, 0, 8, 0x09, 0xa3, 0x78, 0xf9, 0xb2, 0xe3, 0x32, 0xa7]
        );
        let mut v = Vec::new();
        v.put_mpint(&[0x00, 0x80]);
        assert_eq!(v, [0, 0, 0, 2, 0, 0x80]);
        assert_eq!(Reader::new(&v).mpint_positive(), Some(&[0x80u8][..]));
        // A negative number is no key's part.
        assert_eq!(Reader::new(&[0, 0, 0, 1, 0xff]).mpint_positive(), None);
    }

    #[test]
    fn reads_past_the_end_fail_instead_of_panicking() {
        let mut r = Reader::new(&[0, 0, 0, 9, 1, 2]);
        assert_eq!(r.string(), None);
        let mut r = Reader::new(&[0xff, 0xff, 0xff, 0xff]);
        assert_eq!(r.string(), None);
        assert_eq!(Reader::new(&[1, 2, 3]).u32(), None);
    }

    #[test]
    fn the_first_of_our_names_the_peer_has_is_chosen() {
        assert_eq!(choose(&["a", "b", "c"], b"c,b"), Some("b"));
        assert_eq!(choose(&["a"], b"ab,b"), None);
        assert!(has(
            b"x,kex-strict-s-v00@openssh.com",
            "kex-strict-s-v00@openssh.com"
        ));
    }
}
