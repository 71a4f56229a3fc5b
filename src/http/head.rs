//! Response heads: parsing the status line and header block (with httparse) into an owned
//! [`ResponseHead`], skipping interim 1xx responses, and deciding how the body is framed.
//! Reading the body itself is the caller's job (see `chunked.rs` for chunked bodies).

use super::error::HttpError;
use super::range::{parse_content_range, parse_pos, ContentRange};

/// A response head larger than this (interim 1xx heads included) is an error.
pub const MAX_HEAD: usize = 64 * 1024;

/// Most header fields accepted in one response head; more is treated as malformed.
pub const MAX_HEADERS: usize = 128;

/// The parts of a final (non-1xx) response head that the downloader acts on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResponseHead {
    /// Status code, 100..=999.
    pub status: u16,
    /// Reason phrase (empty when absent or not plain ASCII).
    pub reason: String,
    /// Content-Length; `None` when absent or when Transfer-Encoding overrides it (RFC 9112 §6.3).
    pub content_length: Option<u64>,
    /// The last transfer coding is `chunked`.
    pub chunked: bool,
    /// Parsed Content-Range (a malformed one is an error only on a 206).
    pub content_range: Option<ContentRange>,
    /// The length a 416 reports (`Content-Range: bytes */N`): the range asked for starts past it.
    pub unsatisfied_length: Option<u64>,
    /// `Accept-Ranges: none` was sent.
    pub accept_ranges_none: bool,
    /// Location value, as sent (resolve it with [`super::resolve_location`]).
    pub location: Option<String>,
    /// Content-Disposition value; bytes that are not UTF-8 are read as ISO-8859-1.
    pub content_disposition: Option<String>,
    /// The server lets us reuse the connection (HTTP/1.1 without `Connection: close`,
    /// HTTP/1.0 with `Connection: keep-alive`). A close-delimited body ends it regardless.
    pub keep_alive: bool,
    /// Retry-After in seconds (the HTTP-date form is ignored).
    pub retry_after: Option<u64>,
    /// Last-Modified value, as sent.
    pub last_modified: Option<String>,
    /// ETag value, as sent.
    pub etag: Option<String>,
    /// Content-Encoding value, as sent.
    pub content_encoding: Option<String>,
    /// Set-Cookie values, as sent, in order (the cookie jar decides which it keeps).
    pub set_cookies: Vec<String>,
    /// `Digest` values (RFC 3230), as sent, in order.
    pub digests: Vec<String>,
    /// `Link` values (RFC 8288), as sent, in order.
    pub links: Vec<String>,
    /// Content-Type's media type, lowercased, without its parameters.
    pub content_type: Option<String>,
}

/// How the body of a response is delimited.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Framing {
    /// No body at all (HEAD request, 1xx, 204, 304).
    Empty,
    /// Exactly this many bytes follow the head.
    Length(u64),
    /// A chunked body: feed it to a [`super::ChunkedDecoder`].
    Chunked,
    /// The body ends when the server closes the connection.
    UntilClose,
}

impl ResponseHead {
    /// The length of the whole file this answer to a GET speaks of, where it says one: a 416's
    /// `bytes */N`, a 206's complete length, a 200's Content-Length when no content coding
    /// stands between it and the file. `None`: the answer does not say (chunked, delimited by the
    /// close, encoded, or a range of `/*`).
    pub fn file_length(&self) -> Option<u64> {
        match self.status {
            416 => self.unsatisfied_length,
            206 => self.content_range?.complete_length,
            200 if self.content_encoding.is_none() => self.content_length,
            _ => None,
        }
    }

    /// How this response's body is delimited (RFC 9112 §6.3): no body for a HEAD request,
    /// 1xx, 204 and 304; chunked wins over Content-Length; otherwise Content-Length, or read
    /// until close. (A Transfer-Encoding whose last coding is not chunked also means until
    /// close: `parse_head` discards Content-Length whenever Transfer-Encoding is present.)
    pub fn framing(&self, request_was_head: bool) -> Framing {
        if request_was_head || (100..200).contains(&self.status) || matches!(self.status, 204 | 304)
        {
            Framing::Empty
        } else if self.chunked {
            Framing::Chunked
        } else if let Some(n) = self.content_length {
            Framing::Length(n)
        } else {
            Framing::UntilClose
        }
    }
}

/// Parses a response head at the start of `buf`.
///
/// `Ok(None)`: incomplete, call again with more bytes (but `Err(HeadTooLarge)` once
/// `buf.len() >= MAX_HEAD` without a complete head). `Ok(Some((head, body_offset)))`: the
/// body starts at `buf[body_offset]`. Interim 1xx responses (100 Continue, 103 Early Hints)
/// before the final one are skipped, so `body_offset` is then after the final head.
pub fn parse_head(buf: &[u8]) -> Result<Option<(ResponseHead, usize)>, HttpError> {
    let mut offset = 0;
    loop {
        let rest = buf.get(offset..).unwrap_or_default();
        let step = match parse_one(rest) {
            // A control byte in a header's value (aria2c reads such a head): read it as a space,
            // in a copy of the head. Line ends stay as they are, so the framing is unchanged.
            Err(httparse::Error::HeaderValue) => parse_one(&controls_as_spaces(rest)),
            other => other,
        };
        let (len, parsed) = match step {
            Ok(Some(found)) => found,
            Ok(None) => {
                return if buf.len() >= MAX_HEAD {
                    Err(HttpError::HeadTooLarge)
                } else {
                    Ok(None)
                };
            }
            Err(httparse::Error::TooManyHeaders) => {
                return Err(HttpError::Malformed(format!(
                    "more than {MAX_HEADERS} header fields"
                )));
            }
            Err(e) => return Err(HttpError::Malformed(describe(e).to_string())),
        };
        let end = offset + len;
        // The limit does not depend on how the bytes were split into reads.
        if end > MAX_HEAD {
            return Err(HttpError::HeadTooLarge);
        }
        match parsed? {
            // An interim 1xx answer: the final one follows.
            None => offset = end,
            Some(head) => return Ok(Some((head, end))),
        }
    }
}

/// One head at the start of `rest`: `None` while incomplete; else its length and the head,
/// `None` for an interim 1xx answer.
type OneHead = Option<(usize, Result<Option<ResponseHead>, HttpError>)>;

fn parse_one(rest: &[u8]) -> Result<OneHead, httparse::Error> {
    let mut fields = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut resp = httparse::Response::new(&mut fields);
    let mut config = httparse::ParserConfig::default();
    config
        .allow_spaces_after_header_name_in_responses(true)
        .allow_obsolete_multiline_headers_in_responses(true)
        .allow_multiple_spaces_in_response_status_delimiters(true);
    let len = match config.parse_response(&mut resp, rest)? {
        httparse::Status::Complete(len) => len,
        httparse::Status::Partial => return Ok(None),
    };
    let status = resp.code.unwrap_or(0);
    let head = match status {
        101 => Err(HttpError::Malformed(
            "unexpected 101 Switching Protocols".to_string(),
        )),
        100..=199 => Ok(None),
        0..=99 => Err(HttpError::Malformed(format!(
            "status code {status:03} out of range"
        ))),
        _ => {
            let http11 = resp.version == Some(1);
            build_head(status, resp.reason.unwrap_or(""), http11, resp.headers).map(Some)
        }
    };
    Ok(Some((len, head)))
}

/// A copy of `head` (up to the largest head read) with the control bytes other than tab, CR and
/// LF as spaces.
fn controls_as_spaces(head: &[u8]) -> Vec<u8> {
    head.iter()
        .take(MAX_HEAD)
        .map(|&b| match b {
            b'\t' | b'\r' | b'\n' => b,
            0..=0x1f | 0x7f => b' ',
            _ => b,
        })
        .collect()
}

/// Names httparse's error in words a user can act on.
fn describe(e: httparse::Error) -> &'static str {
    match e {
        httparse::Error::HeaderName => "invalid header field name",
        httparse::Error::HeaderValue => "invalid header field value",
        httparse::Error::NewLine => "invalid line ending",
        httparse::Error::Status => "invalid status line",
        httparse::Error::Token => "invalid token",
        httparse::Error::TooManyHeaders => "too many header fields",
        httparse::Error::Version => "not an HTTP/1.0 or HTTP/1.1 response",
    }
}

/// Header value as text: non-UTF-8 replaced, obs-fold line breaks turned into spaces, trimmed.
fn text(value: &[u8]) -> String {
    let s = String::from_utf8_lossy(value);
    unfold(&s)
}

/// Header value as text, reading non-UTF-8 bytes as ISO-8859-1 (what aria2 assumes for
/// Content-Disposition), so no byte of a file name is lost.
fn text_latin1(value: &[u8]) -> String {
    match std::str::from_utf8(value) {
        Ok(s) => unfold(s),
        Err(_) => unfold(&value.iter().map(|&b| char::from(b)).collect::<String>()),
    }
}

fn unfold(s: &str) -> String {
    s.replace(['\r', '\n'], " ").trim().to_string()
}

/// Splits a list-valued header into its trimmed, non-empty elements.
fn elements(value: &str) -> impl Iterator<Item = &str> {
    value.split(',').map(str::trim).filter(|e| !e.is_empty())
}

fn build_head(
    status: u16,
    reason: &str,
    http11: bool,
    fields: &[httparse::Header<'_>],
) -> Result<ResponseHead, HttpError> {
    let mut content_length: Option<u64> = None;
    let mut codings: Vec<String> = Vec::new();
    let mut transfer_encoded = false;
    let mut content_range_value: Option<String> = None;
    let mut accept_ranges_none = false;
    let mut location = None;
    let mut content_disposition = None;
    let mut conn_close = false;
    let mut conn_keep_alive = false;
    let mut retry_after = None;
    let mut last_modified = None;
    let mut etag = None;
    let mut content_encoding = None;
    let mut set_cookies = Vec::new();
    let mut digests = Vec::new();
    let mut links = Vec::new();
    let mut content_type = None;

    for field in fields {
        // Of repeated singleton fields the first one counts.
        match field.name.to_ascii_lowercase().as_str() {
            "content-length" => {
                let v = text(field.value);
                let mut any = false;
                for e in v.split(',').map(str::trim) {
                    any = true;
                    let n = parse_pos(e).ok_or_else(|| {
                        HttpError::BadContentLength(format!("{v:?} is not a byte count"))
                    })?;
                    match content_length {
                        Some(prev) if prev != n => {
                            return Err(HttpError::BadContentLength(format!(
                                "conflicting values {prev} and {n}"
                            )))
                        }
                        _ => content_length = Some(n),
                    }
                }
                if !any {
                    return Err(HttpError::BadContentLength("empty value".to_string()));
                }
            }
            "transfer-encoding" => {
                transfer_encoded = true;
                let v = text(field.value);
                // A coding may carry parameters ("gzip;q=1"); only its name matters here.
                codings.extend(elements(&v).map(|e| {
                    let name = e.split(';').next().unwrap_or_default();
                    name.trim().to_ascii_lowercase()
                }));
            }
            "content-range" if content_range_value.is_none() => {
                content_range_value = Some(text(field.value));
            }
            "accept-ranges" => {
                let v = text(field.value);
                if elements(&v).any(|e| e.eq_ignore_ascii_case("none")) {
                    accept_ranges_none = true;
                }
            }
            "location" if location.is_none() => location = Some(text(field.value)),
            "content-disposition" if content_disposition.is_none() => {
                content_disposition = Some(text_latin1(field.value));
            }
            "connection" => {
                let v = text(field.value);
                for e in elements(&v) {
                    if e.eq_ignore_ascii_case("close") {
                        conn_close = true;
                    } else if e.eq_ignore_ascii_case("keep-alive") {
                        conn_keep_alive = true;
                    }
                }
            }
            "retry-after" if retry_after.is_none() => {
                retry_after = parse_pos(&text(field.value));
            }
            "last-modified" if last_modified.is_none() => {
                last_modified = Some(text(field.value));
            }
            "etag" if etag.is_none() => {
                etag = Some(text(field.value));
            }
            "content-encoding" if content_encoding.is_none() => {
                content_encoding = Some(text(field.value));
            }
            "set-cookie" => set_cookies.push(text(field.value)),
            "digest" => digests.push(text(field.value)),
            "link" => links.push(text(field.value)),
            "content-type" if content_type.is_none() => {
                let v = text(field.value);
                let media = v.split(';').next().unwrap_or_default().trim();
                content_type = Some(media.to_ascii_lowercase());
            }
            _ => {}
        }
    }

    if codings.iter().any(|c| c != "chunked" && c != "identity") {
        // aria2c refuses these (exit 1) rather than write the body still encoded.
        return Err(HttpError::UnsupportedTransferCoding(codings.join(", ")));
    }
    let chunked = codings.last().is_some_and(|c| c == "chunked");
    if transfer_encoded {
        // RFC 9112 §6.3: Transfer-Encoding overrides Content-Length.
        content_length = None;
    }
    let unsatisfied_length = content_range_value
        .as_deref()
        .filter(|_| status == 416)
        .and_then(|v| v.trim().strip_prefix("bytes */"))
        .and_then(|n| n.trim().parse().ok());
    let content_range = match content_range_value {
        None => None,
        Some(v) => match parse_content_range(&v) {
            Ok(r) => Some(r),
            Err(e) if status == 206 => return Err(e),
            // Outside a 206 (e.g. "bytes */1000" on a 416) it frames nothing we read.
            Err(_) => None,
        },
    };
    let keep_alive = !conn_close && (http11 || conn_keep_alive);

    Ok(ResponseHead {
        status,
        reason: reason.to_string(),
        content_length,
        chunked,
        content_range,
        unsatisfied_length,
        accept_ranges_none,
        location,
        content_disposition,
        keep_alive,
        retry_after,
        last_modified,
        etag,
        content_encoding,
        set_cookies,
        digests,
        links,
        content_type,
    })
}

/// A mirror a response's `Link` header names (RFC 6249's `rel=duplicate`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Duplicate {
    /// The target, as written (resolve it against the request's URL).
    pub target: String,
    /// `pri`, 1 to 999999 (999999 when absent or out of range): lower is preferred.
    pub priority: u32,
    /// `geo`, lowercased.
    pub geo: Option<String>,
    /// `pref`: the server prefers it.
    pub preferred: bool,
}

/// Each link of `Link` values (RFC 8288: links separated by commas outside `<...>` and quotes,
/// each `<target>` then `;`-separated parameters, names in any case, values quoted or not): its
/// target and its parameters, names lowercased.
fn each_link(values: &[String]) -> Vec<(String, Vec<(String, String)>)> {
    let mut out = Vec::new();
    for value in values {
        for link in split_links(value) {
            let Some(rest) = link.trim().strip_prefix('<') else {
                continue;
            };
            let Some((target, params)) = rest.split_once('>') else {
                continue;
            };
            let params = params
                .split(';')
                .map(str::trim)
                .filter(|p| !p.is_empty())
                .map(|p| {
                    let (name, v) = p.split_once('=').unwrap_or((p, ""));
                    (
                        name.trim().to_ascii_lowercase(),
                        v.trim().trim_matches('"').to_string(),
                    )
                })
                .collect();
            out.push((target.trim().to_string(), params));
        }
    }
    out
}

/// Whether a link's `rel` names `relation` (among space-separated ones, in any case).
fn has_rel(params: &[(String, String)], relation: &str) -> bool {
    params.iter().any(|(n, v)| {
        n == "rel"
            && v.split_ascii_whitespace()
                .any(|r| r.eq_ignore_ascii_case(relation))
    })
}

/// The `rel=duplicate` links of `Link` values, in order.
pub fn duplicates(values: &[String]) -> Vec<Duplicate> {
    let mut out = Vec::new();
    for (target, params) in each_link(values) {
        if target.is_empty() || !has_rel(&params, "duplicate") {
            continue;
        }
        let mut dup = Duplicate {
            target,
            priority: 999_999,
            geo: None,
            preferred: false,
        };
        for (name, v) in &params {
            match name.as_str() {
                "pri" => {
                    if let Ok(n) = v.parse::<u32>() {
                        if (1..=999_999).contains(&n) {
                            dup.priority = n;
                        }
                    }
                }
                "geo" => dup.geo = Some(v.to_ascii_lowercase()).filter(|g| !g.is_empty()),
                "pref" => dup.preferred = true,
                _ => {}
            }
        }
        out.push(dup);
    }
    out
}

/// The Metalink that describes the file (RFC 6249's `rel=describedby` link of a Metalink media
/// type, or, without a type, one whose target ends in `.meta4` or `.metalink`): its target.
pub fn described_by(values: &[String]) -> Option<String> {
    each_link(values)
        .into_iter()
        .find(|(target, params)| {
            let kind = params.iter().find(|(n, _)| n == "type").map(|(_, v)| v);
            let lower = target.to_ascii_lowercase();
            let metalink = match kind {
                Some(t) => super::METALINK_TYPES
                    .iter()
                    .any(|m| m.eq_ignore_ascii_case(t.trim())),
                None => lower.ends_with(".meta4") || lower.ends_with(".metalink"),
            };
            !target.is_empty() && has_rel(params, "describedby") && metalink
        })
        .map(|(target, _)| target)
}

/// The links of one `Link` value: split at commas outside `<...>` and quoted strings.
fn split_links(value: &str) -> Vec<&str> {
    let (mut parts, mut start, mut in_target, mut quoted) = (Vec::new(), 0, false, false);
    for (i, c) in value.char_indices() {
        match c {
            '<' if !quoted => in_target = true,
            '>' if !quoted => in_target = false,
            '"' if !in_target => quoted = !quoted,
            ',' if !in_target && !quoted => {
                parts.push(&value[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&value[start..]);
    parts
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_describedby_link_names_the_metalink_of_the_file() {
        let v = vec![
            "<http://a.example/f>; rel=duplicate".to_string(),
            r#"<http://d.example/f.meta4>; rel="describedby"; type="application/metalink4+xml""#
                .to_string(),
        ];
        assert_eq!(
            described_by(&v).as_deref(),
            Some("http://d.example/f.meta4")
        );
        // Another type is not a Metalink; no type, and the suffix says.
        let other = vec![
            r#"<http://d.example/f.sig>; rel=describedby; type="application/pgp-signature""#
                .to_string(),
        ];
        assert_eq!(described_by(&other), None);
        let bare = vec!["<f.metalink>; REL=DescribedBy".to_string()];
        assert_eq!(described_by(&bare).as_deref(), Some("f.metalink"));
        assert_eq!(described_by(&["<x>; rel=duplicate".to_string()]), None);
    }

    #[test]
    fn link_headers_name_duplicates_with_their_priority_location_and_preference() {
        let v = vec![
            r#"<http://a.example/f>; rel=duplicate; pri=2; geo=JP, <http://b.example/f>; rel="duplicate"; pref"#.to_string(),
            "<http://c.example/f>; REL=Duplicate; pri=0".to_string(),
            r#"<http://d.example/f.meta4>; rel=describedby; type="application/metalink4+xml""#.to_string(),
            r#"<http://e.example/a,b>; rel="duplicate other"; title="x, y""#.to_string(),
        ];
        let got = duplicates(&v);
        let short: Vec<(&str, u32, Option<&str>, bool)> = got
            .iter()
            .map(|d| (d.target.as_str(), d.priority, d.geo.as_deref(), d.preferred))
            .collect();
        assert_eq!(
            short,
            [
                ("http://a.example/f", 2, Some("jp"), false),
                ("http://b.example/f", 999_999, None, true),
                ("http://c.example/f", 999_999, None, false),
                ("http://e.example/a,b", 999_999, None, false),
            ]
        );
    }

    /// Parses `msg` fed as every prefix: `None` until the head is complete, then always the
    /// same head and offset as parsing the whole message at once.
    fn parse_every_split(msg: &[u8]) -> (ResponseHead, usize) {
        let (head, off) = parse_head(msg).unwrap().expect("complete head");
        for n in 0..msg.len() {
            match parse_head(&msg[..n]).unwrap() {
                None => assert!(n < off, "prefix {n} incomplete but head ends at {off}"),
                Some((h, o)) => {
                    assert!(n >= off, "prefix {n} complete before the head ends ({off})");
                    assert_eq!((&h, o), (&head, off), "prefix {n}");
                }
            }
        }
        (head, off)
    }

    /// aria2c reads a head whose header values hold control bytes (a stray \x01, a DEL in
    /// `Server:`); ringdl refused the whole response ("invalid header field value", exit 22).
    #[test]
    fn control_bytes_in_header_values_are_read_as_spaces() {
        let head = b"HTTP/1.1 200 OK\r\nX-Junk: a\x01b\r\nServer: x\x7fy\r\nContent-Disposition: attachment; filename=\"n\x02.bin\"\r\nContent-Length: 5\r\n\r\nhello";
        let (h, at) = parse_head(head).unwrap().unwrap();
        assert_eq!(h.status, 200);
        assert_eq!(h.content_length, Some(5));
        assert_eq!(&head[at..], b"hello");
        assert_eq!(
            h.content_disposition.as_deref(),
            Some("attachment; filename=\"n .bin\"")
        );
        // Still incomplete: wait for more, as for any head.
        assert!(parse_head(&head[..30]).unwrap().is_none());
    }

    #[test]
    fn simple_response_every_split() {
        let msg = b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nServer: x\r\n\r\nhello";
        let (head, off) = parse_every_split(msg);
        assert_eq!(&msg[off..], b"hello");
        assert_eq!(head.status, 200);
        assert_eq!(head.reason, "OK");
        assert_eq!(head.content_length, Some(5));
        assert!(head.keep_alive);
        assert!(!head.chunked);
        assert_eq!(head.framing(false), Framing::Length(5));
        assert_eq!(head.framing(true), Framing::Empty);
    }

    #[test]
    fn interim_100_continue_is_skipped_every_split() {
        let msg = b"HTTP/1.1 100 Continue\r\n\r\n\
HTTP/1.1 103 Early Hints\r\nLink: </s.css>; rel=preload\r\n\r\n\
HTTP/1.1 206 Partial Content\r\nContent-Range: bytes 10-14/100\r\nContent-Length: 5\r\n\r\nabcde";
        let (head, off) = parse_every_split(msg);
        assert_eq!(head.status, 206);
        assert_eq!(&msg[off..], b"abcde");
        assert_eq!(
            head.content_range,
            Some(ContentRange {
                first: 10,
                last: 14,
                complete_length: Some(100)
            })
        );
        // Only the interim heads arrived: still incomplete.
        assert_eq!(parse_head(b"HTTP/1.1 100 Continue\r\n\r\n").unwrap(), None);
    }

    #[test]
    fn all_fields_every_split() {
        let msg = b"HTTP/1.1 503 Service Unavailable\r\n\
content-length: 0\r\n\
ACCEPT-RANGES: none\r\n\
Location:   /elsewhere  \r\n\
Content-Disposition: attachment; filename=\"a b.txt\"\r\n\
Retry-After: 120\r\n\
Last-Modified: Wed, 21 Oct 2015 07:28:00 GMT\r\n\
Content-Encoding: gzip\r\n\
Connection: close\r\n\r\n";
        let (head, off) = parse_every_split(msg);
        assert_eq!(off, msg.len());
        assert_eq!(head.status, 503);
        assert_eq!(head.reason, "Service Unavailable");
        assert_eq!(head.content_length, Some(0));
        assert!(head.accept_ranges_none);
        assert_eq!(head.location.as_deref(), Some("/elsewhere"));
        assert_eq!(
            head.content_disposition.as_deref(),
            Some("attachment; filename=\"a b.txt\"")
        );
        assert_eq!(head.retry_after, Some(120));
        assert_eq!(
            head.last_modified.as_deref(),
            Some("Wed, 21 Oct 2015 07:28:00 GMT")
        );
        assert_eq!(head.content_encoding.as_deref(), Some("gzip"));
        assert!(!head.keep_alive);
    }

    #[test]
    fn retry_after_date_form_ignored() {
        let msg = b"HTTP/1.1 503 x\r\nRetry-After: Fri, 31 Dec 1999 23:59:59 GMT\r\n\r\n";
        let (head, _) = parse_head(msg).unwrap().unwrap();
        assert_eq!(head.retry_after, None);
    }

    #[test]
    fn keep_alive_rules() {
        let ka = |m: &[u8]| parse_every_split(m).0.keep_alive;
        assert!(ka(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"));
        assert!(!ka(b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n"));
        assert!(!ka(
            b"HTTP/1.1 200 OK\r\nConnection: Upgrade, CLOSE\r\n\r\n"
        ));
        assert!(!ka(b"HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n"));
        assert!(ka(b"HTTP/1.0 200 OK\r\nConnection: Keep-Alive\r\n\r\n"));
        assert!(!ka(
            b"HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nConnection: close\r\n\r\n"
        ));
    }

    #[test]
    fn duplicate_equal_content_length_ok() {
        let (h, _) = parse_every_split(
            b"HTTP/1.1 200 OK\r\nContent-Length: 42\r\nContent-Length: 42\r\n\r\n",
        );
        assert_eq!(h.content_length, Some(42));
        let (h, _) = parse_every_split(b"HTTP/1.1 200 OK\r\nContent-Length: 42, 42\r\n\r\n");
        assert_eq!(h.content_length, Some(42));
    }

    #[test]
    fn conflicting_or_bad_content_length_errors() {
        for msg in [
            &b"HTTP/1.1 200 OK\r\nContent-Length: 42\r\nContent-Length: 43\r\n\r\n"[..],
            b"HTTP/1.1 200 OK\r\nContent-Length: 42, 7\r\n\r\n",
            b"HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n",
            b"HTTP/1.1 200 OK\r\nContent-Length: +5\r\n\r\n",
            b"HTTP/1.1 200 OK\r\nContent-Length: 5x\r\n\r\n",
            b"HTTP/1.1 200 OK\r\nContent-Length: \r\n\r\n",
            b"HTTP/1.1 200 OK\r\nContent-Length: 42,\r\n\r\n",
            b"HTTP/1.1 200 OK\r\nContent-Length: 18446744073709551616\r\n\r\n",
        ] {
            assert!(
                matches!(parse_head(msg), Err(HttpError::BadContentLength(_))),
                "{:?}",
                String::from_utf8_lossy(msg)
            );
        }
        let err =
            parse_head(b"HTTP/1.1 200 OK\r\nContent-Length: 42\r\nContent-Length: 43\r\n\r\n")
                .unwrap_err();
        assert_eq!(
            err.to_string(),
            "bad Content-Length: conflicting values 42 and 43"
        );
    }

    #[test]
    fn head_too_large() {
        let mut msg = b"HTTP/1.1 200 OK\r\n".to_vec();
        while msg.len() < MAX_HEAD + 100 {
            msg.extend_from_slice(format!("X-Filler: {}\r\n", "a".repeat(2000)).as_bytes());
        }
        // Under the limit and incomplete: need more.
        assert_eq!(parse_head(&msg[..MAX_HEAD - 1]).unwrap(), None);
        // At the limit without an end: too large.
        assert_eq!(parse_head(&msg[..MAX_HEAD]), Err(HttpError::HeadTooLarge));
        assert_eq!(parse_head(&msg), Err(HttpError::HeadTooLarge));
        // The same head, complete, is still too large however it arrives.
        msg.extend_from_slice(b"\r\n");
        assert_eq!(parse_head(&msg), Err(HttpError::HeadTooLarge));
        assert_eq!(
            HttpError::HeadTooLarge.to_string(),
            "response header block exceeds 64 KiB"
        );
        // Interim heads count towards the limit too.
        let mut many = Vec::new();
        while many.len() < MAX_HEAD {
            many.extend_from_slice(b"HTTP/1.1 100 Continue\r\n\r\n");
        }
        many.extend_from_slice(b"HTTP/1.1 200 OK\r\n\r\n");
        assert_eq!(parse_head(&many), Err(HttpError::HeadTooLarge));
    }

    #[test]
    fn header_count_limit() {
        let mut ok = b"HTTP/1.1 200 OK\r\n".to_vec();
        for i in 0..MAX_HEADERS {
            ok.extend_from_slice(format!("X-{i}: v\r\n").as_bytes());
        }
        let mut too_many = ok.clone();
        ok.extend_from_slice(b"\r\n");
        assert!(parse_head(&ok).unwrap().is_some());
        too_many.extend_from_slice(b"X-last: v\r\n\r\n");
        assert!(matches!(
            parse_head(&too_many),
            Err(HttpError::Malformed(m)) if m.contains("128")
        ));
    }

    #[test]
    fn garbage_is_malformed() {
        for msg in [
            &b"garbage\r\n\r\n"[..],
            b"<html>",
            b"HTTP/2 200\r\n\r\n",
            b"HTTP/1.1 2x0 OK\r\n\r\n",
            b"HTTP/1.1 200 OK\r\nBad Header\r\n\r\n",
            b"HTTP/1.1 200 OK\r\n: empty-name\r\n\r\n",
            b"HTTP/1.1 099 Low\r\n\r\n",
            b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: h2c\r\n\r\n",
        ] {
            assert!(
                matches!(parse_head(msg), Err(HttpError::Malformed(_))),
                "{:?} gave {:?}",
                String::from_utf8_lossy(msg),
                parse_head(msg)
            );
        }
        assert!(parse_head(b"garbage")
            .unwrap_err()
            .to_string()
            .starts_with("malformed HTTP response: "));
    }

    #[test]
    fn malformed_content_range_only_fatal_on_206() {
        let bad_206 = b"HTTP/1.1 206 Partial\r\nContent-Range: bytes 9-5/10\r\n\r\n";
        assert!(matches!(
            parse_head(bad_206),
            Err(HttpError::BadContentRange(_))
        ));
        let unsatisfied =
            b"HTTP/1.1 416 Range Not Satisfiable\r\nContent-Range: bytes */1000\r\n\r\n";
        let (h, _) = parse_head(unsatisfied).unwrap().unwrap();
        assert_eq!(h.content_range, None);
        assert_eq!(h.unsatisfied_length, Some(1000));
    }

    #[test]
    fn obs_text_and_folding_and_lenient_forms() {
        let msg = b"\r\nHTTP/1.1  200\r\n\
Location: /caf\xe9\r\n\
Content-Disposition: attachment; filename=\"caf\xe9.txt\"\r\n\
X-Folded: a\r\n  b\r\n\
Content-Length : 3\r\n\r\nabc";
        let (head, off) = parse_every_split(msg);
        assert_eq!(&msg[off..], b"abc");
        assert_eq!(head.reason, "");
        assert_eq!(head.location.as_deref(), Some("/caf\u{fffd}"));
        assert_eq!(
            head.content_disposition.as_deref(),
            Some("attachment; filename=\"caf\u{e9}.txt\"")
        );
        assert_eq!(head.content_length, Some(3));
        // UTF-8 Content-Disposition stays as it is.
        let (head, _) = parse_head(
            "HTTP/1.1 200 OK\r\nContent-Disposition: attachment; filename=\"\u{e9}t\u{e9}.txt\"\r\n\r\n"
                .as_bytes(),
        )
        .unwrap()
        .unwrap();
        assert_eq!(
            head.content_disposition.as_deref(),
            Some("attachment; filename=\"\u{e9}t\u{e9}.txt\"")
        );
    }

    #[test]
    fn framing_rules() {
        let frame = |m: &[u8], head_req: bool| parse_head(m).unwrap().unwrap().0.framing(head_req);
        // Chunked wins over Content-Length, which is discarded.
        let both = b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\nTransfer-Encoding: chunked\r\n\r\n";
        assert_eq!(frame(both, false), Framing::Chunked);
        assert_eq!(parse_head(both).unwrap().unwrap().0.content_length, None);
        // Codings may be split over several fields; one other than chunked is refused (aria2c:
        // "Transfer encoding gzip, chunked is not supported.", exit 1), where ringdl wrote the
        // body still gzipped and called it complete.
        let multi =
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: identity\r\nTransfer-Encoding: Chunked\r\n\r\n";
        assert_eq!(frame(multi, false), Framing::Chunked);
        for te in [&b"gzip, chunked"[..], b"chunked, gzip", b"deflate"] {
            let mut m = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: ".to_vec();
            m.extend_from_slice(te);
            m.extend_from_slice(b"\r\n\r\n");
            let e = parse_head(&m).unwrap_err();
            assert!(
                matches!(e, HttpError::UnsupportedTransferCoding(_)),
                "{e:?}"
            );
        }
        let e = parse_head(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n");
        assert_eq!(
            e.unwrap_err().to_string(),
            "Transfer encoding gzip, chunked is not supported."
        );
        assert_eq!(
            frame(b"HTTP/1.1 200 OK\r\n\r\n", false),
            Framing::UntilClose
        );
        assert_eq!(
            frame(
                b"HTTP/1.1 204 No Content\r\nContent-Length: 5\r\n\r\n",
                false
            ),
            Framing::Empty
        );
        assert_eq!(
            frame(
                b"HTTP/1.1 304 Not Modified\r\nTransfer-Encoding: chunked\r\n\r\n",
                false
            ),
            Framing::Empty
        );
        assert_eq!(
            frame(
                b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n",
                true
            ),
            Framing::Empty
        );
        assert_eq!(
            frame(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", false),
            Framing::Length(0)
        );
    }
}
