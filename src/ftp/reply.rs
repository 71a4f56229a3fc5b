//! FTP replies (RFC 959 4.2): a three-digit code and text, on one line (`213 3000000`) or on
//! several (`211-Features:` … `211 End`), each line ended by CRLF (a bare LF is taken too).
//! Bounded: a line longer than [`MAX_LINE`] or a reply longer than [`MAX_REPLY`] is an error,
//! never a buffer that grows with what a server sends.

/// The longest reply line taken.
pub const MAX_LINE: usize = 8 * 1024;
/// The longest reply taken, all its lines together.
pub const MAX_REPLY: usize = 64 * 1024;

/// One reply: its code and its text (the lines after the first joined by `\n`; for a one-line
/// reply, the text after the code).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reply {
    pub code: u16,
    pub text: String,
}

impl Reply {
    /// 1xx: a preliminary reply; another follows.
    pub fn preliminary(&self) -> bool {
        self.code / 100 == 1
    }
    /// 2xx.
    pub fn ok(&self) -> bool {
        self.code / 100 == 2
    }
    /// 4xx: may succeed if tried again.
    pub fn transient(&self) -> bool {
        self.code / 100 == 4
    }
}

/// The reply at the front of `bytes`: `Ok(None)` while it is not whole, else how many bytes it
/// took and the reply; `Err` for bytes that are not a reply.
pub fn parse(bytes: &[u8]) -> Result<Option<(usize, Reply)>, String> {
    let mut at = 0;
    let mut first: Option<(u16, bool)> = None;
    let mut text = String::new();
    loop {
        let rest = &bytes[at..];
        let Some(nl) = rest.iter().position(|&b| b == b'\n') else {
            if rest.len() > MAX_LINE {
                return Err(format!("a reply line longer than {MAX_LINE} bytes"));
            }
            if at + rest.len() > MAX_REPLY {
                return Err(format!("a reply longer than {MAX_REPLY} bytes"));
            }
            return Ok(None);
        };
        if nl > MAX_LINE {
            return Err(format!("a reply line longer than {MAX_LINE} bytes"));
        }
        let line = &rest[..nl];
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        at += nl + 1;
        if at > MAX_REPLY {
            return Err(format!("a reply longer than {MAX_REPLY} bytes"));
        }
        let line = String::from_utf8_lossy(line);
        let code = code_of(&line);
        match first {
            None => {
                let Some(code) = code else {
                    return Err(format!("not an FTP reply: {:?}", shorten(&line)));
                };
                let more = line.as_bytes().get(3) == Some(&b'-');
                text = line.get(4..).unwrap_or("").to_string();
                if !more {
                    return Ok(Some((at, Reply { code, text })));
                }
                first = Some((code, more));
            }
            Some((want, _)) => {
                // A line of a multi-line reply; the one that starts with the code and a space
                // (or is only the code) ends it.
                let last = code == Some(want) && line.as_bytes().get(3).is_none_or(|&b| b == b' ');
                if !text.is_empty() {
                    text.push('\n');
                }
                text.push_str(if last {
                    line.get(4..).unwrap_or("")
                } else {
                    &line
                });
                if last {
                    return Ok(Some((at, Reply { code: want, text })));
                }
            }
        }
    }
}

/// The code a reply line starts with: three digits, the first 1 to 5, then the end of the line,
/// a space or a dash.
fn code_of(line: &str) -> Option<u16> {
    let b = line.as_bytes();
    if b.len() < 3 || !b[..3].iter().all(u8::is_ascii_digit) || !(b'1'..=b'5').contains(&b[0]) {
        return None;
    }
    if b.len() > 3 && b[3] != b' ' && b[3] != b'-' {
        return None;
    }
    line[..3].parse().ok()
}

/// At most 80 characters of `s`, for a message.
pub fn shorten(s: &str) -> String {
    s.chars().take(80).collect()
}

/// The directory a `257 "/home/al" is the current directory` reply names (RFC 959's PWD: the
/// name between the first quote and the next lone one, a doubled quote inside standing for
/// one); `None` when the text does not start with a quoted name.
pub fn pwd_dir(text: &str) -> Option<String> {
    let mut chars = text.trim_start().strip_prefix('"')?.chars().peekable();
    let mut dir = String::new();
    while let Some(c) = chars.next() {
        if c != '"' {
            dir.push(c);
            continue;
        }
        if chars.peek() == Some(&'"') {
            chars.next();
            dir.push('"');
            continue;
        }
        return (!dir.is_empty()).then_some(dir);
    }
    None
}

/// The port of a `229 Entering Extended Passive Mode (|||6446|)` reply (RFC 2428): the text
/// between the parentheses is a delimiter three times, the port, the delimiter.
pub fn epsv_port(text: &str) -> Option<u16> {
    let open = text.find('(')?;
    let inner = &text[open + 1..];
    let close = inner.find(')')?;
    let inner = &inner[..close];
    let d = inner.chars().next()?;
    let parts: Vec<&str> = inner.split(d).collect();
    match parts[..] {
        ["", "", "", port, ""] => port.parse().ok(),
        _ => None,
    }
}

/// The port of a `227 Entering Passive Mode (h1,h2,h3,h4,p1,p2)` reply: the first six numbers
/// separated by commas (with or without parentheses). The address the reply names is not
/// returned: the data connection goes to the control connection's peer, whatever it says.
pub fn pasv_port(text: &str) -> Option<u16> {
    let bytes = text.as_bytes();
    let mut start = 0;
    while start < bytes.len() {
        if bytes[start].is_ascii_digit() {
            let end = bytes[start..]
                .iter()
                .position(|b| !(b.is_ascii_digit() || *b == b','))
                .map_or(bytes.len(), |n| start + n);
            let numbers: Vec<&str> = text[start..end].split(',').collect();
            if numbers.len() >= 6 {
                let n: Option<Vec<u8>> = numbers[..6].iter().map(|n| n.parse().ok()).collect();
                if let Some(n) = n {
                    return Some(u16::from(n[4]) << 8 | u16::from(n[5]));
                }
            }
            start = end;
        } else {
            start += 1;
        }
    }
    None
}

/// The time of a `213 YYYYMMDDHHMMSS[.sss]` reply to `MDTM` (RFC 3659 3.1: UTC), if it is one.
pub fn mdtm_time(text: &str) -> Option<std::time::SystemTime> {
    let digits = text.trim().split('.').next()?;
    if digits.len() != 14 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let n = |a: usize, b: usize| digits[a..b].parse::<i64>().ok();
    let (y, mo, d) = (n(0, 4)?, n(4, 6)?, n(6, 8)?);
    let (h, mi, s) = (n(8, 10)?, n(10, 12)?, n(12, 14)?);
    if !(1..=12).contains(&mo) || !(1..=31).contains(&d) || h > 23 || mi > 59 || s > 60 {
        return None;
    }
    // Days since 1970-01-01 of a proleptic Gregorian date (the usual era arithmetic).
    let y = if mo <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (mo + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    let secs = days * 86_400 + h * 3600 + mi * 60 + s;
    let secs = u64::try_from(secs).ok()?;
    std::time::UNIX_EPOCH.checked_add(std::time::Duration::from_secs(secs))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pwd_names_the_directory_between_quotes_with_doubled_quotes_inside() {
        let dir = |t: &str| pwd_dir(t);
        assert_eq!(
            dir("\"/home/al\" is the current directory").as_deref(),
            Some("/home/al")
        );
        assert_eq!(dir("\"/\"").as_deref(), Some("/"));
        assert_eq!(dir("\"/a \"\"b\"\"\" here").as_deref(), Some("/a \"b\""));
        for bad in ["/home/al", "\"/unended", "\"\" empty", ""] {
            assert_eq!(dir(bad), None, "{bad}");
        }
    }

    fn whole(b: &[u8]) -> (usize, Reply) {
        match parse(b) {
            Ok(Some(r)) => r,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn one_line_and_multi_line_replies_are_read_whole_and_no_further() {
        let (n, r) = whole(b"220 (vsFTPd 3.0.3)\r\n331 next");
        assert_eq!((n, r.code, r.text.as_str()), (20, 220, "(vsFTPd 3.0.3)"));
        let (n, r) = whole(b"213 3000000\n");
        assert_eq!((n, r.code, r.text.as_str()), (12, 213, "3000000"));
        let (n, r) = whole(b"200\r\n");
        assert_eq!((n, r.code), (5, 200));
        let multi = b"230-Welcome\r\n  230 is not the end\r\n230-still not\r\n230 Login ok.\r\nX";
        let (n, r) = whole(multi);
        assert_eq!(n, multi.len() - 1);
        assert_eq!(r.code, 230);
        assert_eq!(
            r.text,
            "Welcome\n  230 is not the end\n230-still not\nLogin ok."
        );
        assert_eq!(parse(b"230-Welcome\r\n230-more\r\n"), Ok(None));
        assert_eq!(parse(b"22"), Ok(None));
        assert!(r.ok() && !r.transient() && !r.preliminary());
    }

    #[test]
    fn what_is_not_a_reply_or_never_ends_is_an_error() {
        assert!(parse(b"HTTP/1.1 200 OK\r\n").is_err());
        assert!(parse(b"620 no\r\n").is_err());
        assert!(parse(b"2000 no\r\n").is_err());
        assert!(
            parse(&[b'2'; MAX_LINE + 1]).is_err(),
            "a line that never ends"
        );
        let mut long = b"220-".to_vec();
        while long.len() <= MAX_REPLY {
            long.extend_from_slice(b"a line of a reply that never ends\r\n");
        }
        assert!(parse(&long).is_err(), "a reply that never ends");
    }

    #[test]
    fn mdtm_times_are_read_as_utc() {
        let t = |s: &str| {
            mdtm_time(s).map(|t| {
                t.duration_since(std::time::UNIX_EPOCH)
                    .map(|d| d.as_secs())
                    .unwrap_or(0)
            })
        };
        assert_eq!(t("19700101000000"), Some(0));
        assert_eq!(t("20000229123456"), Some(951_827_696));
        assert_eq!(t("20261206213959.123"), Some(1_796_593_199));
        for bad in [
            "2026120621395",
            "20261306000000",
            "abcdefghijklmn",
            "",
            "1969123123595x",
        ] {
            assert_eq!(t(bad), None, "{bad}");
        }
    }

    #[test]
    fn passive_ports_are_read_and_their_addresses_ignored() {
        assert_eq!(
            pasv_port("Entering Passive Mode (127,0,0,1,117,53)."),
            Some(117 * 256 + 53)
        );
        assert_eq!(pasv_port("=10,0,0,9,4,1"), Some(1025));
        assert_eq!(pasv_port("Entering Passive Mode (1,2,3)"), None);
        assert_eq!(pasv_port("(1,2,3,4,300,1)"), None);
        assert_eq!(
            epsv_port("Entering Extended Passive Mode (|||6446|)"),
            Some(6446)
        );
        assert_eq!(epsv_port("(!!!21!)"), Some(21));
        assert_eq!(epsv_port("(|1|127.0.0.1|6446|)"), None);
        assert_eq!(epsv_port("no parentheses"), None);
        assert_eq!(epsv_port("(|||99999|)"), None);
    }
}
