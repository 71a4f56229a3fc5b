//! Local file names the way aria2 picks them: from the URL's last path segment
//! (percent-decoded, sanitised like aria2's `createSafePath`) or from a Content-Disposition
//! header (RFC 6266 / RFC 5987). Choosing between them and auto-renaming is the caller's job.

use url::Url;

/// The name used when a URL has no usable last path segment.
const DEFAULT_NAME: &str = "index.html";

/// The longest file name Linux filesystems take (`NAME_MAX`), in bytes.
pub const NAME_MAX: usize = 255;

/// `name` cut to `NAME_MAX` bytes at a character boundary, keeping a short extension.
fn fit_name_max(name: String) -> String {
    if name.len() <= NAME_MAX {
        return name;
    }
    let ext = name
        .rfind('.')
        .map(|i| &name[i..])
        .filter(|e| e.len() <= 16)
        .unwrap_or("");
    let mut stem_len = NAME_MAX - ext.len();
    while !name.is_char_boundary(stem_len) {
        stem_len -= 1;
    }
    format!("{}{ext}", &name[..stem_len])
}

/// The local file name aria2 would pick from a URL.
///
/// The last path segment, percent-decoded, without the query; empty gives `index.html`.
/// A UTF-8 name has `/` written as `%2F` and control characters percent-escaped; a name
/// that is not UTF-8 is percent-encoded. `.` and `..` are never returned.
pub fn filename_from_url(url: &Url) -> String {
    let segment = url.path().rsplit('/').next().unwrap_or_default();
    let decoded = percent_decode(segment.as_bytes());
    if decoded.is_empty() {
        return DEFAULT_NAME.to_string();
    }
    let name = match String::from_utf8(decoded) {
        Ok(s) => escape_controls(&s.replace('/', "%2F")),
        Err(e) => percent_encode(e.as_bytes()),
    };
    if name == "." || name == ".." {
        DEFAULT_NAME.to_string()
    } else {
        fit_name_max(name)
    }
}

/// Decodes `%XX` escapes; a `%` not followed by two hex digits stays as it is.
fn percent_decode(s: &[u8]) -> Vec<u8> {
    percent_encoding::percent_decode(s).collect()
}

fn hex_digit(b: u8) -> Option<u8> {
    match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        b'A'..=b'F' => Some(b - b'A' + 10),
        _ => None,
    }
}

fn push_escaped(out: &mut String, b: u8) {
    const HEX: &[u8; 16] = b"0123456789ABCDEF";
    out.push('%');
    out.push(char::from(HEX[usize::from(b >> 4)]));
    out.push(char::from(HEX[usize::from(b & 0xf)]));
}

/// aria2's `escapePath`: C0 controls and DEL become `%XX`.
fn escape_controls(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match u8::try_from(c) {
            Ok(b) if b < 0x20 || b == 0x7f => push_escaped(&mut out, b),
            _ => out.push(c),
        }
    }
    out
}

/// aria2's `percentEncode`: every byte but RFC 3986 unreserved characters becomes `%XX`.
fn percent_encode(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len() * 3);
    for &b in bytes {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(char::from(b));
        } else {
            push_escaped(&mut out, b);
        }
    }
    out
}

/// The file name in a Content-Disposition value (RFC 6266), or `None`.
///
/// Understands `filename*=UTF-8''...` and `filename*=ISO-8859-1''...` (RFC 5987,
/// converted to UTF-8), and quoted or token `filename=`; `filename*` wins. The value must
/// start with a disposition type (`attachment`, `inline`, ...). Like aria2, a malformed
/// value, a repeated `filename` or `filename*`, or a name that is empty, `.`, `..`, or
/// contains `/`, `\` or a control character gives `None`.
pub fn filename_from_content_disposition(value: &str) -> Option<String> {
    filename_from_content_disposition_with(value, false)
}

/// The same; with `default_utf8` (`--content-disposition-default-utf8`) the plain `filename="..."`
/// value's bytes are read as UTF-8 rather than ISO-8859-1 (`value` holds header bytes as
/// ISO-8859-1 characters); `filename*` names its own charset either way.
pub fn filename_from_content_disposition_with(value: &str, default_utf8: bool) -> Option<String> {
    let mut p = Parser {
        s: value.as_bytes(),
        pos: 0,
    };
    p.skip_lws();
    p.token()?; // disposition type
    let mut plain: Option<String> = None;
    let mut extended: Option<String> = None;
    loop {
        p.skip_lws();
        if p.at_end() {
            break;
        }
        p.eat(b';')?;
        p.skip_lws();
        if p.at_end() {
            // A trailing ';' is common in the wild and harmless.
            break;
        }
        let name = p.token()?;
        p.skip_lws();
        p.eat(b'=')?;
        p.skip_lws();
        if name.len() > 1 && name.ends_with('*') {
            let (charset, bytes) = p.ext_value()?;
            if name.eq_ignore_ascii_case("filename*") {
                if extended.is_some() {
                    return None;
                }
                extended = Some(decode_charset(&charset, bytes)?);
            }
        } else {
            let v = if p.peek() == Some(b'"') {
                p.quoted_string()?
            } else {
                p.token()?.to_string()
            };
            if name.eq_ignore_ascii_case("filename") {
                if plain.is_some() {
                    return None;
                }
                let v = if default_utf8 && v.chars().all(|c| (c as u32) < 256) {
                    let bytes: Vec<u8> = v.chars().map(|c| c as u32 as u8).collect();
                    String::from_utf8(bytes).unwrap_or(v)
                } else {
                    v
                };
                plain = Some(v);
            }
        }
    }
    let name = extended.or(plain)?;
    let unsafe_name = name.is_empty()
        || name == "."
        || name == ".."
        || name.len() > NAME_MAX
        || name.contains(['/', '\\'])
        || name.chars().any(|c| c.is_ascii_control());
    (!unsafe_name).then_some(name)
}

/// Converts RFC 5987 value bytes to text; `None` when they are not valid in that charset.
fn decode_charset(charset: &str, bytes: Vec<u8>) -> Option<String> {
    if charset.eq_ignore_ascii_case("iso-8859-1") {
        Some(bytes.iter().map(|&b| char::from(b)).collect())
    } else {
        // UTF-8, and any other charset whose bytes happen to be UTF-8 (as aria2 keeps them).
        String::from_utf8(bytes).ok()
    }
}

/// A cursor over a Content-Disposition value.
struct Parser<'a> {
    s: &'a [u8],
    pos: usize,
}

/// RFC 9110 tchar.
fn is_tchar(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

/// RFC 5987 attr-char.
fn is_attr_char(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$&+-.^_`|~".contains(&b)
}

/// RFC 2978 mime-charset character.
fn is_charset_char(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&+-^_`{}~".contains(&b)
}

impl<'a> Parser<'a> {
    fn peek(&self) -> Option<u8> {
        self.s.get(self.pos).copied()
    }

    fn at_end(&self) -> bool {
        self.pos >= self.s.len()
    }

    fn skip_lws(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t')) {
            self.pos += 1;
        }
    }

    fn eat(&mut self, b: u8) -> Option<()> {
        (self.peek() == Some(b)).then(|| self.pos += 1)
    }

    /// Bytes while `pred` holds, as text (only ASCII predicates are used, so the slice is
    /// valid UTF-8); `None` when there are none.
    fn take_while(&mut self, pred: fn(u8) -> bool) -> Option<&'a str> {
        let start = self.pos;
        while self.peek().is_some_and(pred) {
            self.pos += 1;
        }
        let s: &'a [u8] = self.s;
        let run = s.get(start..self.pos)?;
        if run.is_empty() {
            return None;
        }
        std::str::from_utf8(run).ok()
    }

    fn token(&mut self) -> Option<&'a str> {
        self.take_while(is_tchar)
    }

    /// A quoted-string, unescaped. Non-ASCII text passes through; controls other than
    /// HTAB make the whole value malformed.
    fn quoted_string(&mut self) -> Option<String> {
        self.eat(b'"')?;
        let mut out = Vec::new();
        loop {
            let b = self.peek()?;
            self.pos += 1;
            match b {
                b'"' => break,
                b'\\' => {
                    let escaped = self.peek()?;
                    if is_ctl(escaped) {
                        return None;
                    }
                    out.push(escaped);
                    self.pos += 1;
                }
                _ if is_ctl(b) => return None,
                _ => out.push(b),
            }
        }
        // Only ASCII bytes were split on, so multi-byte characters arrive whole.
        String::from_utf8(out).ok()
    }

    /// An RFC 5987 ext-value: `charset'[language]'value-chars`; returns the charset and the
    /// percent-decoded bytes.
    fn ext_value(&mut self) -> Option<(String, Vec<u8>)> {
        let charset = self.take_while(is_charset_char)?.to_string();
        self.eat(b'\'')?;
        while self
            .peek()
            .is_some_and(|b| b.is_ascii_alphanumeric() || b == b'-')
        {
            self.pos += 1;
        }
        self.eat(b'\'')?;
        let mut out = Vec::new();
        while let Some(b) = self.peek() {
            if is_attr_char(b) {
                out.push(b);
                self.pos += 1;
            } else if b == b'%' {
                let h = self.s.get(self.pos + 1).and_then(|&d| hex_digit(d))?;
                let l = self.s.get(self.pos + 2).and_then(|&d| hex_digit(d))?;
                out.push(h << 4 | l);
                self.pos += 3;
            } else if matches!(b, b';' | b' ' | b'\t') {
                break;
            } else {
                return None;
            }
        }
        Some((charset, out))
    }
}

/// A control character other than HTAB.
fn is_ctl(b: u8) -> bool {
    (b < 0x20 && b != b'\t') || b == 0x7f
}

#[cfg(test)]
mod tests {
    use super::*;

    fn from_url(s: &str) -> String {
        filename_from_url(&Url::parse(s).unwrap())
    }

    #[test]
    fn url_aria2_vectors() {
        assert_eq!(from_url("http://h/dir/a%2Fb.txt?x=1"), "a%2Fb.txt");
        assert_eq!(from_url("http://h/pct%20name.txt"), "pct name.txt");
    }

    #[test]
    fn url_query_and_fragment_dropped() {
        assert_eq!(from_url("http://h/file.iso?x=1&y=a/b.txt"), "file.iso");
        assert_eq!(from_url("http://h/file.iso#part/2.txt"), "file.iso");
        assert_eq!(from_url("https://h:8443/a/b/c.tar.gz?"), "c.tar.gz");
    }

    #[test]
    fn url_empty_segment_is_index_html() {
        assert_eq!(from_url("http://h/dir/"), "index.html");
        assert_eq!(from_url("http://h"), "index.html");
        assert_eq!(from_url("http://h/?q=file.txt"), "index.html");
        // Dot segments are resolved by the URL parser, encoded or not.
        assert_eq!(from_url("http://h/a/%2e%2E"), "index.html");
        assert_eq!(from_url("http://h/a/."), "index.html");
        assert_eq!(from_url("http://h/a/.."), "index.html");
    }

    #[test]
    fn url_decoding_and_sanitising() {
        assert_eq!(from_url("http://h/%E2%82%AC.txt"), "\u{20ac}.txt");
        assert_eq!(from_url("http://h/\u{fc}ber.txt"), "\u{fc}ber.txt");
        assert_eq!(from_url("http://h/a%25b"), "a%b");
        assert_eq!(from_url("http://h/a%zzb%4"), "a%zzb%4");
        // Controls are escaped so they cannot fool a terminal.
        assert_eq!(from_url("http://h/a%0Ab%09c%7F"), "a%0Ab%09c%7F");
        assert_eq!(from_url("http://h/nul%00"), "nul%00");
        // Not UTF-8: the whole name is percent-encoded.
        assert_eq!(from_url("http://h/caf%E9.txt"), "caf%E9.txt");
        assert_eq!(from_url("http://h/a%20b%FF~_-.x"), "a%20b%FF~_-.x");
        assert_eq!(from_url("http://h/%2F%FF"), "%2F%FF");
        // "..." is an ordinary name.
        assert_eq!(from_url("http://h/..."), "...");
    }

    fn cd(s: &str) -> Option<String> {
        filename_from_content_disposition(s)
    }

    #[test]
    fn cd_plain_forms() {
        assert_eq!(
            cd("attachment; filename=\"foo.html\"").as_deref(),
            Some("foo.html")
        );
        assert_eq!(
            cd("attachment; filename=foo.html").as_deref(),
            Some("foo.html")
        );
        assert_eq!(cd("inline; filename=foo.html").as_deref(), Some("foo.html"));
        assert_eq!(
            cd("  ATTACHMENT ;FILENAME = \"a b.txt\"  ").as_deref(),
            Some("a b.txt")
        );
        assert_eq!(
            cd("attachment; filename=\"f\\\"o\\\\o.txt\"").as_deref(),
            None,
            "a backslash in the name is refused"
        );
        assert_eq!(
            cd("attachment; filename=\"say \\\"hi\\\".txt\"").as_deref(),
            Some("say \"hi\".txt")
        );
        assert_eq!(
            cd("attachment; size=10; filename=x.txt; creation-date=\"Wed, 12 Feb 1997\";")
                .as_deref(),
            Some("x.txt")
        );
        // Non-ASCII text in a quoted string (parse_head reads raw bytes as ISO-8859-1 or UTF-8).
        assert_eq!(
            cd("attachment; filename=\"caf\u{e9}.txt\"").as_deref(),
            Some("caf\u{e9}.txt")
        );
        // No percent-decoding of plain filename=.
        assert_eq!(
            cd("attachment; filename=\"a%20b\"").as_deref(),
            Some("a%20b")
        );
        // No file name at all.
        assert_eq!(cd("attachment"), None);
        assert_eq!(cd("inline; size=3"), None);
    }

    #[test]
    fn cd_rfc5987_forms() {
        assert_eq!(
            cd("attachment; filename*=UTF-8''%E2%82%AC%20rates").as_deref(),
            Some("\u{20ac} rates")
        );
        assert_eq!(
            cd("attachment; filename*=utf-8'en-US'A%20B.txt").as_deref(),
            Some("A B.txt")
        );
        assert_eq!(
            cd("attachment; filename*=ISO-8859-1''%A3%20rates.txt").as_deref(),
            Some("\u{a3} rates.txt")
        );
        // filename* wins wherever it appears.
        assert_eq!(
            cd("attachment; filename=\"EURO rates\"; filename*=utf-8''%e2%82%ac%20rates")
                .as_deref(),
            Some("\u{20ac} rates")
        );
        assert_eq!(
            cd("attachment; filename*=utf-8''%e2%82%ac%20rates; filename=\"EURO rates\"")
                .as_deref(),
            Some("\u{20ac} rates")
        );
        // Other extended parameters are parsed and ignored.
        assert_eq!(
            cd("attachment; title*=UTF-8''t%C3%AFtle; filename=ok.txt").as_deref(),
            Some("ok.txt")
        );
    }

    #[test]
    fn cd_traversal_and_unsafe_names_refused() {
        for v in [
            "attachment; filename=\"../../etc/passwd\"",
            "attachment; filename=\"/etc/passwd\"",
            "attachment; filename=\"dir/file\"",
            "attachment; filename=\"..\\\\evil.exe\"",
            "attachment; filename=..",
            "attachment; filename=.",
            "attachment; filename=\"\"",
            "attachment; filename*=UTF-8''..%2F..%2Fetc%2Fpasswd",
            "attachment; filename*=UTF-8''%2E%2E",
            "attachment; filename*=UTF-8''a%5Cb",
            "attachment; filename*=UTF-8''a%0Ab",
            "attachment; filename*=UTF-8''",
            // A safe filename= does not rescue an unsafe filename*.
            "attachment; filename=ok.txt; filename*=UTF-8''..%2Fx",
        ] {
            assert_eq!(cd(v), None, "{v}");
        }
    }

    #[test]
    fn cd_malformed_refused() {
        for v in [
            "",
            "filename=\"foo.txt\"",
            "attachment filename=foo.txt",
            "attachment; filename=foo bar.txt",
            "attachment; filename=\"unterminated",
            "attachment; filename=\"a\u{1}b\"",
            "attachment; filename=",
            "attachment; filename",
            "attachment; =x",
            "attachment; filename=\"a.txt\"; filename=\"b.txt\"",
            "attachment; filename*=UTF-8''a; filename*=UTF-8''b",
            "attachment; filename*=''%41",
            "attachment; filename*=UTF-8'%41",
            "attachment; filename*=UTF-8''%FF",
            "attachment; filename*=UTF-8''a%2",
            "attachment; filename*=UTF-8''\u{20ac}",
            "attachment; filename*=UTF-8''a\"b\"",
            "attachment;; filename=x",
            "attachment; filename=x junk",
        ] {
            assert_eq!(cd(v), None, "{v:?}");
        }
    }

    #[test]
    fn over_long_names_fit_the_filesystem() {
        let long = "a".repeat(400);
        let n = from_url(&format!("http://h/{long}.tar.gz"));
        assert_eq!(n.len(), NAME_MAX);
        assert!(n.ends_with(".gz"), "{n}");
        let wide = "é".repeat(200);
        let n = from_url(&format!("http://h/{wide}"));
        assert!(n.len() <= NAME_MAX && n.chars().all(|c| c == 'é'), "{n}");
        assert_eq!(cd(&format!("attachment; filename=\"{long}\"")), None);
    }

    #[test]
    fn default_utf8_reads_plain_filename_bytes_as_utf8() {
        // "€.txt" sent as raw UTF-8 bytes, which the head parser holds as ISO-8859-1 characters.
        let raw: String = "€.txt".bytes().map(char::from).collect();
        let v = format!("attachment; filename=\"{raw}\"");
        assert_eq!(
            filename_from_content_disposition_with(&v, true).as_deref(),
            Some("€.txt")
        );
        assert_eq!(filename_from_content_disposition_with(&v, false), Some(raw));
        // filename* keeps its own charset.
        let ext = "attachment; filename*=ISO-8859-1''%A3.txt";
        assert_eq!(
            filename_from_content_disposition_with(ext, true).as_deref(),
            Some("£.txt")
        );
    }
}
