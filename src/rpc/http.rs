//! The RPC server's side of HTTP/1.1: a request head read from what arrived, and responses laid
//! out as aria2's (`Date`, `Content-Length`, `Expires`, `Cache-Control: no-cache`, the type, CORS
//! when allowed).

/// Most bytes a request head may take.
pub const MAX_HEAD: usize = 16 * 1024;

/// What a request head says that the server acts on.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RequestHead {
    pub method: String,
    /// The path without query or fragment.
    pub path: String,
    pub query: String,
    /// Bytes of the head, blank line included.
    pub head_len: usize,
    pub content_length: u64,
    /// The body is chunked (not something RPC clients send; refused).
    pub chunked: bool,
    pub keep_alive: bool,
    pub origin: Option<String>,
    pub host: Option<String>,
    pub authorization: Option<String>,
    /// `Upgrade: websocket` with `Connection: upgrade`.
    pub websocket: bool,
    pub ws_key: Option<String>,
    pub ws_version: Option<String>,
    /// `Access-Control-Request-Method` / `-Headers` (a CORS preflight).
    pub acr_method: Option<String>,
    pub acr_headers: Option<String>,
}

/// A request head, not all there yet, or not a request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Parsed {
    Partial,
    Done(Box<RequestHead>),
    Bad,
}

/// Reads the request head at the start of `buf`.
pub fn parse_request(buf: &[u8]) -> Parsed {
    let mut headers = [httparse::EMPTY_HEADER; 64];
    let mut req = httparse::Request::new(&mut headers);
    let head_len = match req.parse(buf) {
        Ok(httparse::Status::Complete(n)) => n,
        Ok(httparse::Status::Partial) if buf.len() < MAX_HEAD => return Parsed::Partial,
        _ => return Parsed::Bad,
    };
    if head_len > MAX_HEAD {
        return Parsed::Bad;
    }
    let target = req.path.unwrap_or("/");
    let target = target.split('#').next().unwrap_or("");
    let (path, query) = match target.split_once('?') {
        Some((p, q)) => (p, q),
        None => (target, ""),
    };
    let mut h = RequestHead {
        method: req.method.unwrap_or("").to_string(),
        path: path.to_string(),
        query: query.to_string(),
        head_len,
        keep_alive: req.version == Some(1),
        ..RequestHead::default()
    };
    let mut upgrade = false;
    let mut connection_upgrade = false;
    for f in req.headers.iter() {
        let Ok(v) = std::str::from_utf8(f.value) else {
            continue;
        };
        let v = v.trim();
        let name = f.name.to_ascii_lowercase();
        match name.as_str() {
            "content-length" => match v.parse() {
                Ok(n) => h.content_length = n,
                Err(_) => return Parsed::Bad,
            },
            "transfer-encoding" => h.chunked = v.to_ascii_lowercase().contains("chunked"),
            "connection" => {
                let lower = v.to_ascii_lowercase();
                for token in lower.split(',').map(str::trim) {
                    match token {
                        "close" => h.keep_alive = false,
                        "keep-alive" => h.keep_alive = true,
                        "upgrade" => connection_upgrade = true,
                        _ => {}
                    }
                }
            }
            "upgrade" => upgrade = v.eq_ignore_ascii_case("websocket"),
            "origin" => h.origin = Some(v.to_string()),
            "host" => h.host = Some(v.to_string()),
            "authorization" => h.authorization = Some(v.to_string()),
            "sec-websocket-key" => h.ws_key = Some(v.to_string()),
            "sec-websocket-version" => h.ws_version = Some(v.to_string()),
            "access-control-request-method" => h.acr_method = Some(v.to_string()),
            "access-control-request-headers" => h.acr_headers = Some(v.to_string()),
            _ => {}
        }
    }
    h.websocket = upgrade && connection_upgrade;
    Parsed::Done(Box::new(h))
}

/// Whether `host` (a `Host` header or an origin's host, port allowed) names this machine's
/// loopback: `localhost`, 127.0.0.0/8 or `::1`.
pub fn is_loopback_host(host: &str) -> bool {
    let name = host_without_port(host);
    name.eq_ignore_ascii_case("localhost")
        || name
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

fn host_without_port(host: &str) -> &str {
    if let Some(rest) = host.strip_prefix('[') {
        return rest.split(']').next().unwrap_or("");
    }
    match host.rsplit_once(':') {
        Some((h, port)) if port.bytes().all(|b| b.is_ascii_digit()) => h,
        _ => host,
    }
}

/// Why a request from a browser page must be refused when no secret protects the server, or
/// `None`. A `Host` that is a name other than `localhost` is a DNS-rebinding page talking to the
/// loopback through its own name; an `Origin` that is not local is another site's page (unless
/// `--rpc-allow-origin-all` says any origin may call). Programs (aria2p, the npm package) send no
/// `Origin` and an address or `localhost` as `Host`.
pub fn foreign_request(head: &RequestHead, allow_origin_all: bool) -> Option<&'static str> {
    if let Some(host) = head.host.as_deref() {
        let name = host_without_port(host);
        let is_ip = name.parse::<std::net::IpAddr>().is_ok();
        if !is_ip && !name.eq_ignore_ascii_case("localhost") {
            return Some("Host is not an address or localhost");
        }
    }
    if allow_origin_all {
        return None;
    }
    match head.origin.as_deref() {
        None | Some("null") => None,
        Some(o) => {
            let host = o.split_once("://").map_or(o, |(_, rest)| rest);
            let host = host.split('/').next().unwrap_or("");
            if o.starts_with("file:") || is_loopback_host(host) {
                None
            } else {
                Some("Origin is not local")
            }
        }
    }
}

fn reason(status: u16) -> &'static str {
    match status {
        101 => "Switching Protocols",
        200 => "OK",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        413 => "Request Entity Too Large",
        426 => "Upgrade Required",
        500 => "Internal Server Error",
        _ => "Unknown",
    }
}

/// A response to write.
#[derive(Debug, Clone, Default)]
pub struct Response {
    pub status: u16,
    pub content_type: Option<&'static str>,
    pub body: Vec<u8>,
    /// `--rpc-allow-origin-all`: `Access-Control-Allow-Origin: *`.
    pub cors: bool,
    /// The connection closes after this response.
    pub close: bool,
    pub extra: Vec<(&'static str, String)>,
}

impl Response {
    pub fn new(status: u16) -> Response {
        Response {
            status,
            ..Response::default()
        }
    }

    /// The bytes on the wire.
    pub fn render(&self) -> Vec<u8> {
        let date = httpdate::fmt_http_date(std::time::SystemTime::now());
        let mut head = format!(
            "HTTP/1.1 {} {}\r\nDate: {date}\r\nContent-Length: {}\r\nExpires: {date}\r\nCache-Control: no-cache\r\n",
            self.status,
            reason(self.status),
            self.body.len()
        );
        if let Some(t) = self.content_type {
            head.push_str(&format!("Content-Type: {t}\r\n"));
        }
        if self.cors {
            head.push_str("Access-Control-Allow-Origin: *\r\n");
        }
        for (k, v) in &self.extra {
            head.push_str(&format!("{k}: {v}\r\n"));
        }
        if self.close {
            head.push_str("Connection: close\r\n");
        }
        head.push_str("\r\n");
        let mut out = head.into_bytes();
        out.extend_from_slice(&self.body);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn head(text: &str) -> RequestHead {
        match parse_request(text.as_bytes()) {
            Parsed::Done(h) => *h,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn request_heads() {
        let h = head(
            "POST /jsonrpc?x=1#f HTTP/1.1\r\nHost: 127.0.0.1:6800\r\nContent-Length: 12\r\n\r\n{}",
        );
        assert_eq!(
            (h.method.as_str(), h.path.as_str(), h.query.as_str()),
            ("POST", "/jsonrpc", "x=1")
        );
        assert_eq!((h.content_length, h.keep_alive, h.head_len), (12, true, 74));
        let h = head("GET /jsonrpc HTTP/1.0\r\n\r\n");
        assert!(!h.keep_alive);
        let h = head("GET /jsonrpc HTTP/1.1\r\nConnection: close\r\n\r\n");
        assert!(!h.keep_alive);
        let h = head("GET /jsonrpc HTTP/1.1\r\nUpgrade: WebSocket\r\nConnection: keep-alive, Upgrade\r\nSec-WebSocket-Key: k\r\nSec-WebSocket-Version: 13\r\n\r\n");
        assert!(h.websocket && h.keep_alive);
        assert_eq!(h.ws_key.as_deref(), Some("k"));
        assert_eq!(
            parse_request(b"POST /jsonrpc HTTP/1.1\r\nHost: x"),
            Parsed::Partial
        );
        assert_eq!(parse_request(b"\x16\x03\x01 garbage\r\n\r\n"), Parsed::Bad);
        assert_eq!(
            parse_request(b"POST / HTTP/1.1\r\nContent-Length: -1\r\n\r\n"),
            Parsed::Bad
        );
        let mut huge = b"GET / HTTP/1.1\r\n".to_vec();
        huge.extend(std::iter::repeat_n(b'a', MAX_HEAD));
        assert_eq!(parse_request(&huge), Parsed::Bad);
    }

    #[test]
    fn foreign_pages_are_told_apart_from_programs() {
        let with = |host: Option<&str>, origin: Option<&str>| RequestHead {
            host: host.map(str::to_string),
            origin: origin.map(str::to_string),
            ..RequestHead::default()
        };
        for (host, origin) in [
            (Some("127.0.0.1:6800"), None),
            (Some("localhost:6800"), None),
            (Some("[::1]:6800"), None),
            (Some("192.168.1.5:6800"), None),
            (None, None),
            (Some("localhost:6800"), Some("http://localhost:8080")),
            (Some("127.0.0.1:6800"), Some("null")),
            (Some("127.0.0.1:6800"), Some("file://")),
            (Some("127.0.0.1:6800"), Some("http://[::1]:3000")),
        ] {
            assert_eq!(
                foreign_request(&with(host, origin), false),
                None,
                "{host:?} {origin:?}"
            );
        }
        // DNS rebinding: the page's own name resolves to 127.0.0.1.
        assert!(foreign_request(&with(Some("evil.example:6800"), None), false).is_some());
        assert!(foreign_request(&with(Some("evil.example:6800"), None), true).is_some());
        let other = with(Some("127.0.0.1:6800"), Some("https://evil.example"));
        assert!(foreign_request(&other, false).is_some());
        assert_eq!(foreign_request(&other, true), None);
    }

    #[test]
    fn responses_are_laid_out_as_aria2s() {
        let mut r = Response::new(200);
        r.content_type = Some("application/json-rpc");
        r.body = b"{}".to_vec();
        r.cors = true;
        let text = String::from_utf8(r.render()).unwrap();
        assert!(text.starts_with("HTTP/1.1 200 OK\r\nDate: "), "{text}");
        for line in [
            "Content-Length: 2\r\n",
            "Cache-Control: no-cache\r\n",
            "Content-Type: application/json-rpc\r\n",
            "Access-Control-Allow-Origin: *\r\n",
        ] {
            assert!(text.contains(line), "{line} in {text}");
        }
        assert!(text.ends_with("\r\n\r\n{}"));
        assert!(!text.contains("Connection: close"));
        r.close = true;
        assert!(String::from_utf8(r.render())
            .unwrap()
            .contains("Connection: close\r\n"));
    }
}
