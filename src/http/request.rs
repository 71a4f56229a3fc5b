//! Request bytes: the request line and header block for one GET (or HEAD) of a URL,
//! with an optional Range and the user's own `--header` lines.

use url::{Position, Url};

/// Everything needed to write one request.
#[derive(Debug, Clone, Copy)]
pub struct RequestSpec<'a> {
    /// Request method, e.g. `GET` or `HEAD`.
    pub method: &'a str,
    /// The URL to fetch (its fragment and userinfo are never sent).
    pub url: &'a Url,
    /// `Some((first, Some(last)))`: `bytes=first-last`; `Some((first, None))`: `bytes=first-`.
    pub range: Option<(u64, Option<u64>)>,
    /// User-Agent value.
    pub user_agent: &'a str,
    /// User header lines (`Name: value`); one named like a built-in header replaces it.
    pub headers: &'a [String],
    /// `false` sends `Connection: close`.
    pub keep_alive: bool,
    /// `Referer` value.
    pub referer: Option<&'a str>,
    /// `--http-no-cache`: `Pragma: no-cache` and `Cache-Control: no-cache`.
    pub no_cache: bool,
    /// `Authorization` value.
    pub authorization: Option<&'a str>,
    /// `Cookie` value.
    pub cookie: Option<&'a str>,
    /// `--http-accept-gzip`: `Accept-Encoding: deflate, gzip` (aria2's value).
    pub accept_encoding: bool,
    /// Through an HTTP proxy without a tunnel: the request line names the whole URL.
    pub absolute_form: bool,
    /// `Proxy-Authorization` value (an HTTP proxy without a tunnel).
    pub proxy_authorization: Option<&'a str>,
    /// A user name for the absolute-form target, `ftp://USER@host/...`: how aria2c tells a proxy
    /// that fetches FTP whom to log in as (the password goes in `Authorization`).
    pub target_user: Option<&'a str>,
    /// `Want-Digest` (RFC 3230) with aria2's value: the digests a `Digest` header may give.
    pub want_digest: bool,
    /// `Accept` names the Metalink types too (aria2c's first request of a download from a URI,
    /// so a server may answer with a Metalink describing the file).
    pub accept_metalink: bool,
}

/// The media types of a Metalink document (RFC 5854's, then Metalink 3's), as `Accept` names
/// them and a response's `Content-Type` says one is.
pub const METALINK_TYPES: [&str; 2] = ["application/metalink4+xml", "application/metalink+xml"];

/// What `Want-Digest` asks for, as aria2 asks (SHA-512 and SHA-256 preferred, SHA-1 taken).
pub const WANT_DIGEST: &str = "SHA-512;q=1, SHA-256;q=1, SHA;q=0.1";

/// Appends the request bytes for `spec` to `out`.
///
/// Order: request line (path and query exactly as `url` holds them, percent-encoded),
/// `Host` (with the port only when it is not the scheme's default; IPv6 in brackets),
/// `User-Agent`, `Accept: */*` (and the Metalink types on a download's first request), `Want-Digest`, `Range`, `Connection: close` when not keeping alive, `Pragma` and
/// `Cache-Control`, `Authorization`, `Referer`, `Cookie`, then the user headers in their order,
/// then the blank line. A built-in header named by a user
/// header (case-insensitively) is left out, so the user's line takes its place, as in
/// aria2. User lines that are empty, have no `name:`, or contain CR or LF are skipped
/// (they would corrupt the request).
pub fn write_request(spec: &RequestSpec, out: &mut Vec<u8>) {
    let user: Vec<(&str, &str)> = spec
        .headers
        .iter()
        .filter_map(|line| {
            let line = line.trim();
            if line.contains(['\r', '\n']) {
                return None;
            }
            let (name, _) = line.split_once(':')?;
            let name = name.trim();
            (!name.is_empty()).then_some((name, line))
        })
        .collect();
    let overridden = |name: &str| user.iter().any(|(n, _)| n.eq_ignore_ascii_case(name));

    let path = &spec.url[Position::BeforePath..Position::AfterQuery];
    let path = if path.is_empty() { "/" } else { path };
    // The absolute form never carries the URL's credentials or fragment (but a user name for
    // FTP through a proxy, percent-encoded).
    let login = spec.target_user.map(|u| {
        let enc = percent_encoding::utf8_percent_encode(u, percent_encoding::NON_ALPHANUMERIC);
        format!("{enc}@")
    });
    let absolute = format!(
        "{}://{}{}{}",
        spec.url.scheme(),
        login.unwrap_or_default(),
        &spec.url[Position::BeforeHost..Position::AfterPort],
        path
    );
    let target = if spec.absolute_form { &absolute } else { path };
    let mut line = |s: &str| {
        out.extend_from_slice(s.as_bytes());
        out.extend_from_slice(b"\r\n");
    };
    line(&format!("{} {} HTTP/1.1", spec.method, target));

    if !overridden("host") {
        let host = spec.url.host_str().unwrap_or_default();
        // (aria2c names FTP's port in the Host of a request to a proxy: `host:21`.)
        let ftp_port = (spec.url.scheme() == "ftp").then_some(21);
        match spec.url.port().or(ftp_port) {
            Some(port) => line(&format!("Host: {host}:{port}")),
            None => line(&format!("Host: {host}")),
        }
    }
    if !overridden("user-agent") {
        line(&format!("User-Agent: {}", spec.user_agent));
    }
    if !overridden("accept") {
        match spec.accept_metalink {
            true => line(&format!("Accept: */*,{}", METALINK_TYPES.join(","))),
            false => line("Accept: */*"),
        }
    }
    if spec.want_digest && !overridden("want-digest") {
        line(&format!("Want-Digest: {WANT_DIGEST}"));
    }
    if let Some((first, last)) = spec.range {
        if !overridden("range") {
            match last {
                Some(last) => line(&format!("Range: bytes={first}-{last}")),
                None => line(&format!("Range: bytes={first}-")),
            }
        }
    }
    if !spec.keep_alive && !overridden("connection") {
        line("Connection: close");
    }
    if spec.no_cache {
        if !overridden("pragma") {
            line("Pragma: no-cache");
        }
        if !overridden("cache-control") {
            line("Cache-Control: no-cache");
        }
    }
    // Values with CR or LF never get here (the options are checked); a value from elsewhere
    // (a server's cookie, a URI) that has one is left out rather than break the request.
    let safe = |v: &&str| !v.contains(['\r', '\n']);
    if let Some(v) = spec.authorization.filter(safe) {
        if !overridden("authorization") {
            line(&format!("Authorization: {v}"));
        }
    }
    if let Some(v) = spec.referer.filter(safe) {
        if !overridden("referer") {
            line(&format!("Referer: {v}"));
        }
    }
    if let Some(v) = spec.cookie.filter(safe) {
        if !overridden("cookie") {
            line(&format!("Cookie: {v}"));
        }
    }
    if spec.accept_encoding && !overridden("accept-encoding") {
        line("Accept-Encoding: deflate, gzip");
    }
    if let Some(v) = spec.proxy_authorization.filter(safe) {
        line(&format!("Proxy-Authorization: {v}"));
    }
    for (_, user_line) in &user {
        line(user_line);
    }
    out.extend_from_slice(b"\r\n");
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(
        url: &str,
        range: Option<(u64, Option<u64>)>,
        headers: &[String],
        keep_alive: bool,
    ) -> String {
        request_asking(url, range, headers, keep_alive, false, false)
    }

    /// [`request`], asking for the file's digest when `want_digest`, advertising Metalink when
    /// `accept_metalink`.
    fn request_asking(
        url: &str,
        range: Option<(u64, Option<u64>)>,
        headers: &[String],
        keep_alive: bool,
        want_digest: bool,
        accept_metalink: bool,
    ) -> String {
        let url = Url::parse(url).unwrap();
        let spec = RequestSpec {
            method: "GET",
            url: &url,
            range,
            user_agent: "aria2/1.37.0",
            headers,
            keep_alive,
            referer: None,
            no_cache: false,
            authorization: None,
            cookie: None,
            accept_encoding: false,
            absolute_form: false,
            target_user: None,
            want_digest,
            accept_metalink,
            proxy_authorization: None,
        };
        let mut out = b"previous".to_vec();
        write_request(&spec, &mut out);
        let text = String::from_utf8(out).unwrap();
        text.strip_prefix("previous")
            .expect("appends, keeps what was there")
            .to_string()
    }

    #[test]
    fn want_digest_is_asked_as_aria2_asks_unless_a_header_of_the_users_says_otherwise() {
        let ask = |headers: &[String]| {
            request_asking("http://example.com/f", None, headers, true, true, false)
        };
        assert_eq!(
            ask(&[]),
            "GET /f HTTP/1.1\r\nHost: example.com\r\nUser-Agent: aria2/1.37.0\r\nAccept: */*\r\nWant-Digest: SHA-512;q=1, SHA-256;q=1, SHA;q=0.1\r\n\r\n"
        );
        let advertised = request_asking("http://example.com/f", None, &[], true, false, true);
        assert!(advertised
            .contains("\r\nAccept: */*,application/metalink4+xml,application/metalink+xml\r\n"));
        let own = ask(&["want-digest: MD5".to_string()]);
        assert!(
            own.contains("want-digest: MD5\r\n") && !own.contains("SHA-512"),
            "{own}"
        );
    }

    #[test]
    fn plain_get() {
        assert_eq!(
            request(
                "http://example.com/a%20b/c.iso?x=1&y=%2F#frag",
                None,
                &[],
                true
            ),
            "GET /a%20b/c.iso?x=1&y=%2F HTTP/1.1\r\n\
Host: example.com\r\n\
User-Agent: aria2/1.37.0\r\n\
Accept: */*\r\n\r\n"
        );
    }

    #[test]
    fn with_range_and_close() {
        assert_eq!(
            request(
                "https://user:pw@example.com:443/f",
                Some((999424, Some(3145727))),
                &[],
                false
            ),
            "GET /f HTTP/1.1\r\n\
Host: example.com\r\n\
User-Agent: aria2/1.37.0\r\n\
Accept: */*\r\n\
Range: bytes=999424-3145727\r\n\
Connection: close\r\n\r\n"
        );
        assert_eq!(
            request("http://example.com/f", Some((100, None)), &[], true),
            "GET /f HTTP/1.1\r\n\
Host: example.com\r\n\
User-Agent: aria2/1.37.0\r\n\
Accept: */*\r\n\
Range: bytes=100-\r\n\r\n"
        );
    }

    #[test]
    fn ipv6_and_non_default_ports() {
        assert_eq!(
            request("http://[::1]:8080/x", None, &[], true),
            "GET /x HTTP/1.1\r\nHost: [::1]:8080\r\nUser-Agent: aria2/1.37.0\r\nAccept: */*\r\n\r\n"
        );
        assert_eq!(
            request("http://[2001:db8::1]/", None, &[], true),
            "GET / HTTP/1.1\r\nHost: [2001:db8::1]\r\nUser-Agent: aria2/1.37.0\r\nAccept: */*\r\n\r\n"
        );
        // 443 is only the default for https.
        assert_eq!(
            request("http://example.com:443", None, &[], true),
            "GET / HTTP/1.1\r\nHost: example.com:443\r\nUser-Agent: aria2/1.37.0\r\nAccept: */*\r\n\r\n"
        );
        assert_eq!(
            request("https://127.0.0.1:8443/?q", None, &[], true),
            "GET /?q HTTP/1.1\r\nHost: 127.0.0.1:8443\r\nUser-Agent: aria2/1.37.0\r\nAccept: */*\r\n\r\n"
        );
        // IDN hosts go out as punycode.
        assert!(request("http://bücher.example/", None, &[], true)
            .contains("\r\nHost: xn--bcher-kva.example\r\n"));
    }

    #[test]
    fn user_headers_replace_builtins() {
        let headers = vec![
            "X-Token: abc".to_string(),
            "user-agent: Wget/1.21".to_string(),
            "Cookie: a=b; c=d".to_string(),
            "bogus line".to_string(),
            ": no name".to_string(),
            "X-Evil: a\r\nInjected: 1".to_string(),
            "   ".to_string(),
        ];
        assert_eq!(
            request("http://example.com/f", Some((0, Some(9))), &headers, true),
            "GET /f HTTP/1.1\r\n\
Host: example.com\r\n\
Accept: */*\r\n\
Range: bytes=0-9\r\n\
X-Token: abc\r\n\
user-agent: Wget/1.21\r\n\
Cookie: a=b; c=d\r\n\r\n"
        );
        let headers = vec!["Accept: text/plain".to_string(), "HOST: other".to_string()];
        assert_eq!(
            request("http://example.com/f", None, &headers, false),
            "GET /f HTTP/1.1\r\n\
User-Agent: aria2/1.37.0\r\n\
Connection: close\r\n\
Accept: text/plain\r\n\
HOST: other\r\n\r\n"
        );
    }

    #[test]
    fn head_method() {
        let url = Url::parse("http://example.com/").unwrap();
        let spec = RequestSpec {
            method: "HEAD",
            url: &url,
            range: None,
            user_agent: "ua",
            headers: &[],
            keep_alive: true,
            referer: None,
            no_cache: false,
            authorization: None,
            cookie: None,
            accept_encoding: false,
            absolute_form: false,
            target_user: None,
            want_digest: false,
            accept_metalink: false,
            proxy_authorization: None,
        };
        let mut out = Vec::new();
        write_request(&spec, &mut out);
        assert!(out.starts_with(b"HEAD / HTTP/1.1\r\n"));
        assert!(out.ends_with(b"Accept: */*\r\n\r\n"));
    }

    #[test]
    fn credentials_cookies_referer_no_cache_and_user_overrides() {
        let url = Url::parse("http://example.com/f").unwrap();
        let headers = ["Cookie: mine=1".to_string()];
        let spec = RequestSpec {
            method: "GET",
            url: &url,
            range: None,
            user_agent: "ua",
            headers: &headers,
            keep_alive: true,
            referer: Some("http://r.example/"),
            no_cache: true,
            authorization: Some("Basic dTpw"),
            cookie: Some("a=1; b=2"),
            accept_encoding: false,
            absolute_form: false,
            target_user: None,
            want_digest: false,
            accept_metalink: false,
            proxy_authorization: None,
        };
        let mut out = Vec::new();
        write_request(&spec, &mut out);
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "GET /f HTTP/1.1\r\n\
Host: example.com\r\n\
User-Agent: ua\r\n\
Accept: */*\r\n\
Pragma: no-cache\r\n\
Cache-Control: no-cache\r\n\
Authorization: Basic dTpw\r\n\
Referer: http://r.example/\r\n\
Cookie: mine=1\r\n\r\n"
        );
        // A value with CR or LF from elsewhere (a server's cookie) is left out, not sent.
        let spec = RequestSpec {
            cookie: Some("a=1\r\nX-Injected: 1"),
            headers: &[],
            ..spec
        };
        let mut out = Vec::new();
        write_request(&spec, &mut out);
        assert!(!String::from_utf8(out).unwrap().contains("Injected"));
    }
}
