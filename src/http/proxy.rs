//! Proxies: which one a URL goes through (`--all-proxy`, `--http-proxy`, `--https-proxy`, the
//! environment's `*_proxy` variables via the option layer, `--no-proxy`), and the handshakes that
//! open a tunnel through one — HTTP `CONNECT` and SOCKS5 (RFC 1928, with RFC 1929
//! username/password) — as byte-in, byte-out state machines the connection drives.
use super::auth::Credentials;
use url::Url;

/// The kinds of proxy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    /// An HTTP proxy: plain-http URLs are asked for with `GET http://...` (`--proxy-method=get`)
    /// or through a `CONNECT` tunnel (`tunnel`); https URLs always through a tunnel.
    Http,
    /// SOCKS5, the target's name resolved here (`socks5://`).
    Socks5,
    /// SOCKS5, the target's name resolved by the proxy (`socks5h://`).
    Socks5h,
}

/// A proxy as configured.
#[derive(Clone, PartialEq, Eq)]
pub struct Proxy {
    pub kind: Kind,
    pub host: String,
    pub port: u16,
    pub credentials: Option<Credentials>,
}

impl std::fmt::Debug for Proxy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:?} proxy {}:{}", self.kind, self.host, self.port)
    }
}

impl Proxy {
    /// Parses a proxy option's value: `[http://|socks5://|socks5h://][USER:PASSWORD@]HOST[:PORT]`
    /// (aria2 takes `HOST:PORT` alone as an HTTP proxy). `user`/`password` (the `*-proxy-user`
    /// options) replace credentials written in the value.
    pub fn parse(value: &str, user: Option<&str>, password: Option<&str>) -> Result<Proxy, String> {
        let value = value.trim();
        let with_scheme = if value.contains("://") {
            value.to_string()
        } else {
            format!("http://{value}")
        };
        let url = Url::parse(&with_scheme).map_err(|e| format!("bad proxy {value:?}: {e}"))?;
        let kind = match url.scheme() {
            "http" => Kind::Http,
            "socks5" => Kind::Socks5,
            "socks5h" => Kind::Socks5h,
            "https" => return Err("a proxy reached over https is not supported".into()),
            other => return Err(format!("unsupported proxy scheme {other}://")),
        };
        let host = url
            .host_str()
            .filter(|h| !h.is_empty())
            .ok_or_else(|| format!("bad proxy {value:?}: no host"))?
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_string();
        let port = url.port().unwrap_or(match kind {
            Kind::Http => 80,
            Kind::Socks5 | Kind::Socks5h => 1080,
        });
        let mut credentials = Credentials::from_url(&url);
        if let Some(u) = user.filter(|u| !u.is_empty()) {
            credentials = Some(Credentials {
                user: u.to_string(),
                password: password.unwrap_or_default().to_string(),
            });
        }
        Ok(Proxy {
            kind,
            host,
            port,
            credentials,
        })
    }

    /// Whether a request for `url` through this proxy needs a tunnel (else it is an HTTP proxy
    /// asked with the URL in the request line).
    pub fn tunnels(&self, url: &Url, method_tunnel: bool) -> bool {
        // (An HTTP proxy fetches only http:// and ftp:// itself; TLS and SSH go through.)
        self.kind != Kind::Http
            || matches!(url.scheme(), "https" | "ftps" | "ftpes" | "sftp")
            || method_tunnel
    }
}

/// Which proxy each URL goes through.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Routes {
    /// For http:// URLs (`--http-proxy`, else `--all-proxy`).
    pub http: Option<Proxy>,
    /// For https:// URLs (`--https-proxy`, else `--all-proxy`).
    pub https: Option<Proxy>,
    /// For ftp:// (and sftp://, ftps://) URLs: `--ftp-proxy`, else `--all-proxy` (never
    /// `--http-proxy`, as in aria2). An HTTP proxy gets `GET ftp://...` for ftp:// unless
    /// `--proxy-method=tunnel`; the rest goes through a tunnel.
    pub ftp: Option<Proxy>,
    /// `--no-proxy`.
    pub no_proxy: String,
    /// `--proxy-method=tunnel`: plain-http URLs through a CONNECT tunnel too.
    pub tunnel: bool,
}

/// The options that choose a download's proxies (all may be set per entry of an input file).
pub const OPTIONS: [&str; 14] = [
    "all-proxy",
    "all-proxy-user",
    "all-proxy-passwd",
    "ftp-proxy",
    "ftp-proxy-user",
    "ftp-proxy-passwd",
    "http-proxy",
    "http-proxy-user",
    "http-proxy-passwd",
    "https-proxy",
    "https-proxy-user",
    "https-proxy-passwd",
    "no-proxy",
    "proxy-method",
];

impl Routes {
    /// The routes the proxy options give (`get` answers an option's value, if set): a protocol's
    /// own proxy, else `--all-proxy`; an empty value means none. Err names the option whose value
    /// is not a proxy, and why.
    pub fn from_options(
        get: impl Fn(&str) -> Option<String>,
    ) -> Result<Routes, (&'static str, String)> {
        let one = |name: &'static str| -> Result<Option<Proxy>, (&'static str, String)> {
            let Some(v) = get(name).filter(|v| !v.trim().is_empty()) else {
                return Ok(None);
            };
            let user = get(&format!("{name}-user"));
            let pass = get(&format!("{name}-passwd"));
            Proxy::parse(&v, user.as_deref(), pass.as_deref())
                .map(Some)
                .map_err(|why| (name, why))
        };
        let all = one("all-proxy")?;
        Ok(Routes {
            http: one("http-proxy")?.or_else(|| all.clone()),
            https: one("https-proxy")?.or_else(|| all.clone()),
            ftp: one("ftp-proxy")?.or(all),
            no_proxy: get("no-proxy").unwrap_or_default(),
            tunnel: get("proxy-method").as_deref() == Some("tunnel"),
        })
    }

    /// The proxy a request for `url` goes through, if any.
    pub fn for_url(&self, url: &Url) -> Option<&Proxy> {
        let proxy = match url.scheme() {
            "https" => self.https.as_ref(),
            // (SFTP as FTP: aria2c takes the FTP proxy for both.)
            "ftp" | "ftps" | "ftpes" | "sftp" => self.ftp.as_ref(),
            _ => self.http.as_ref(),
        }?;
        let host = url.host_str()?;
        (!bypasses(&self.no_proxy, host)).then_some(proxy)
    }
}

/// `--no-proxy`: comma-separated host names (a name matches itself and its subdomains; a leading
/// `.` is the same), IP addresses and CIDR blocks (`192.168.0.0/16`, `fd00::/8`).
pub fn bypasses(no_proxy: &str, host: &str) -> bool {
    let host = host
        .trim_start_matches('[')
        .trim_end_matches(']')
        .to_ascii_lowercase();
    let ip: Option<std::net::IpAddr> = host.parse().ok();
    no_proxy
        .split(',')
        .map(str::trim)
        .filter(|e| !e.is_empty())
        .any(|entry| {
            if entry == "*" {
                return true;
            }
            if let Some((net, bits)) = entry.split_once('/') {
                let (Some(ip), Ok(net), Ok(bits)) = (ip, net.parse(), bits.parse::<u32>()) else {
                    return false;
                };
                return in_cidr(ip, net, bits);
            }
            let entry = entry.trim_start_matches('.').to_ascii_lowercase();
            host == entry || host.ends_with(&format!(".{entry}"))
        })
}

fn in_cidr(ip: std::net::IpAddr, net: std::net::IpAddr, bits: u32) -> bool {
    use std::net::IpAddr;
    match (ip, net) {
        (IpAddr::V4(a), IpAddr::V4(n)) if bits <= 32 => {
            let mask = if bits == 0 {
                0
            } else {
                u32::MAX << (32 - bits)
            };
            u32::from(a) & mask == u32::from(n) & mask
        }
        (IpAddr::V6(a), IpAddr::V6(n)) if bits <= 128 => {
            let mask = if bits == 0 {
                0
            } else {
                u128::MAX << (128 - bits)
            };
            u128::from(a) & mask == u128::from(n) & mask
        }
        _ => false,
    }
}

/// What the handshake wants next.
#[derive(Debug, PartialEq, Eq)]
pub enum Step {
    /// Send these bytes, then wait for more from the proxy.
    Send(Vec<u8>),
    /// Wait for more bytes from the proxy.
    More,
    /// The tunnel is open: the connection now talks to the target.
    Open,
}

/// Why a tunnel could not be opened.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProxyError(pub String);

impl std::fmt::Display for ProxyError {
    /// aria2c's words for any failed tunnel, then the reason.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Proxy connection failed. {}", self.0)
    }
}

/// Most bytes of a CONNECT answer's head accepted.
const MAX_CONNECT_HEAD: usize = 16 * 1024;

#[derive(Debug)]
enum State {
    /// HTTP CONNECT sent; reading the answer's head.
    ConnectSent,
    /// SOCKS5 greeting sent; reading the method choice.
    Greeted,
    /// Username/password sent; reading the verdict.
    Authenticating,
    /// CONNECT request sent; reading the reply.
    Requested,
    Open,
}

/// One tunnel being opened to `host:port` through a proxy.
#[derive(Debug)]
pub struct Handshake {
    kind: Kind,
    host: String,
    port: u16,
    /// The target's address when the name was resolved here (`socks5://`).
    addr: Option<std::net::IpAddr>,
    credentials: Option<Credentials>,
    state: State,
    /// Bytes read but not yet used.
    got: Vec<u8>,
}

impl Handshake {
    /// A tunnel to `host:port`; `addr` is the target's address for `socks5://` (resolved by the
    /// caller), unused otherwise. Returns the handshake and the first bytes to send.
    pub fn start(
        proxy: &Proxy,
        host: &str,
        port: u16,
        addr: Option<std::net::IpAddr>,
    ) -> (Handshake, Vec<u8>) {
        let host = host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_string();
        let mut h = Handshake {
            kind: proxy.kind,
            host,
            port,
            addr,
            credentials: proxy.credentials.clone(),
            state: State::Open,
            got: Vec::new(),
        };
        let first = match proxy.kind {
            Kind::Http => {
                h.state = State::ConnectSent;
                let authority = if h.host.contains(':') {
                    format!("[{}]:{}", h.host, port)
                } else {
                    format!("{}:{}", h.host, port)
                };
                let mut req = format!("CONNECT {authority} HTTP/1.1\r\nHost: {authority}\r\n");
                if let Some(c) = &h.credentials {
                    req.push_str(&format!("Proxy-Authorization: {}\r\n", c.basic()));
                }
                req.push_str("\r\n");
                req.into_bytes()
            }
            Kind::Socks5 | Kind::Socks5h => {
                h.state = State::Greeted;
                if h.credentials.is_some() {
                    vec![5, 2, 0, 2]
                } else {
                    vec![5, 1, 0]
                }
            }
        };
        (h, first)
    }

    pub fn is_open(&self) -> bool {
        matches!(self.state, State::Open)
    }

    /// Takes bytes from the proxy and says what comes next. Bytes past the end of the handshake
    /// are the target's: [`Handshake::take_rest`] gives them back once the tunnel is open.
    pub fn on_bytes(&mut self, input: &[u8]) -> Result<Step, ProxyError> {
        self.got.extend_from_slice(input);
        let (used, step) = self.advance()?;
        self.got.drain(..used.min(self.got.len()));
        Ok(step)
    }

    /// What the proxy sent after the end of the handshake (the target's first bytes).
    pub fn take_rest(&mut self) -> Vec<u8> {
        std::mem::take(&mut self.got)
    }

    /// Runs the state machine over `self.got`: how many of its bytes it used, and the next step.
    fn advance(&mut self) -> Result<(usize, Step), ProxyError> {
        let got = &self.got;
        match self.state {
            State::ConnectSent => {
                let Some(end) = got.windows(4).position(|w| w == b"\r\n\r\n") else {
                    if got.len() > MAX_CONNECT_HEAD {
                        return Err(ProxyError(
                            "the proxy's answer to CONNECT is too long".into(),
                        ));
                    }
                    return Ok((0, Step::More));
                };
                let head = String::from_utf8_lossy(&got[..end]);
                let status_line = head.lines().next().unwrap_or_default();
                let mut parts = status_line.split_whitespace();
                let version = parts.next().unwrap_or_default();
                let status: u16 = parts.next().and_then(|s| s.parse().ok()).unwrap_or(0);
                if !version.starts_with("HTTP/1.") || !(100..1000).contains(&status) {
                    return Err(ProxyError(format!(
                        "the proxy answered CONNECT with something that is not HTTP: {:?}",
                        status_line.chars().take(60).collect::<String>()
                    )));
                }
                if !(200..300).contains(&status) {
                    let why = if status == 407 {
                        "proxy authentication required (407)".to_string()
                    } else {
                        format!("status {status}")
                    };
                    return Err(ProxyError(format!("The proxy refused the tunnel: {why}")));
                }
                self.state = State::Open;
                Ok((end + 4, Step::Open))
            }
            State::Greeted => {
                if got.len() < 2 {
                    return Ok((0, Step::More));
                }
                if got[0] != 5 {
                    return Err(ProxyError(format!(
                        "the SOCKS proxy answered with version {}, not 5",
                        got[0]
                    )));
                }
                match (got[1], &self.credentials) {
                    (0, _) => {
                        self.state = State::Requested;
                        Ok((2, Step::Send(self.connect_request())))
                    }
                    (2, Some(c)) => {
                        let (u, p) = (c.user.as_bytes(), c.password.as_bytes());
                        if u.len() > 255 || p.len() > 255 {
                            return Err(ProxyError(
                                "SOCKS5 user names and passwords are at most 255 bytes".into(),
                            ));
                        }
                        let mut msg = vec![1, u.len() as u8];
                        msg.extend_from_slice(u);
                        msg.push(p.len() as u8);
                        msg.extend_from_slice(p);
                        self.state = State::Authenticating;
                        Ok((2, Step::Send(msg)))
                    }
                    (0xff, _) | (2, None) => Err(ProxyError(
                        "the SOCKS proxy accepts none of the offered authentication methods".into(),
                    )),
                    (m, _) => Err(ProxyError(format!(
                        "the SOCKS proxy chose authentication method {m}, which was not offered"
                    ))),
                }
            }
            State::Authenticating => {
                if got.len() < 2 {
                    return Ok((0, Step::More));
                }
                if got[1] != 0 {
                    return Err(ProxyError(
                        "the SOCKS proxy refused the user name and password".into(),
                    ));
                }
                self.state = State::Requested;
                Ok((2, Step::Send(self.connect_request())))
            }
            State::Requested => {
                if got.len() < 5 {
                    return Ok((0, Step::More));
                }
                if got[0] != 5 {
                    return Err(ProxyError(format!(
                        "the SOCKS proxy answered with version {}, not 5",
                        got[0]
                    )));
                }
                if got[1] != 0 {
                    return Err(ProxyError(format!(
                        "The SOCKS proxy could not connect: {}",
                        socks_reply(got[1])
                    )));
                }
                let len = match got[3] {
                    1 => 4 + 4 + 2,
                    4 => 4 + 16 + 2,
                    3 => 4 + 1 + got[4] as usize + 2,
                    t => {
                        return Err(ProxyError(format!(
                            "the SOCKS proxy's reply has an unknown address type {t}"
                        )))
                    }
                };
                if got.len() < len {
                    return Ok((0, Step::More));
                }
                self.state = State::Open;
                Ok((len, Step::Open))
            }
            State::Open => Ok((0, Step::Open)),
        }
    }

    fn connect_request(&self) -> Vec<u8> {
        let mut msg = vec![5, 1, 0];
        match (
            self.kind,
            self.addr,
            self.host.parse::<std::net::IpAddr>().ok(),
        ) {
            (_, _, Some(std::net::IpAddr::V4(a)))
            | (Kind::Socks5, Some(std::net::IpAddr::V4(a)), _) => {
                msg.push(1);
                msg.extend_from_slice(&a.octets());
            }
            (_, _, Some(std::net::IpAddr::V6(a)))
            | (Kind::Socks5, Some(std::net::IpAddr::V6(a)), _) => {
                msg.push(4);
                msg.extend_from_slice(&a.octets());
            }
            _ => {
                let name = self.host.as_bytes();
                msg.push(3);
                msg.push(name.len().min(255) as u8);
                msg.extend_from_slice(&name[..name.len().min(255)]);
            }
        }
        msg.extend_from_slice(&self.port.to_be_bytes());
        msg
    }
}

fn socks_reply(code: u8) -> &'static str {
    match code {
        1 => "general failure",
        2 => "connection not allowed by ruleset",
        3 => "network unreachable",
        4 => "host unreachable",
        5 => "connection refused",
        6 => "TTL expired",
        7 => "command not supported",
        8 => "address type not supported",
        _ => "unknown reply",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn proxy(s: &str) -> Proxy {
        Proxy::parse(s, None, None).unwrap()
    }

    #[test]
    fn proxy_values() {
        let p = proxy("127.0.0.1:3128");
        assert_eq!(
            (p.kind, p.host.as_str(), p.port),
            (Kind::Http, "127.0.0.1", 3128)
        );
        let p = proxy("http://u:p%40ss@proxy.example");
        assert_eq!(
            (p.port, p.credentials.unwrap().password.as_str()),
            (80, "p@ss")
        );
        let p = proxy("socks5h://[::1]");
        assert_eq!(
            (p.kind, p.host.as_str(), p.port),
            (Kind::Socks5h, "::1", 1080)
        );
        let p = Proxy::parse("socks5://h:1", Some("x"), Some("y")).unwrap();
        assert_eq!(p.credentials.unwrap().user, "x");
        assert!(Proxy::parse("ftp://h", None, None).is_err());
        assert!(!format!("{:?}", proxy("http://u:secret@h")).contains("secret"));
    }

    #[test]
    fn no_proxy_names_suffixes_and_cidr() {
        let np = "localhost, .internal.example,example.org,10.0.0.0/8,fd00::/8,192.168.1.7";
        assert!(bypasses(np, "localhost"));
        assert!(bypasses(np, "a.internal.example"));
        assert!(bypasses(np, "internal.example"));
        assert!(bypasses(np, "dl.example.org"));
        assert!(!bypasses(np, "badexample.org"));
        assert!(bypasses(np, "10.1.2.3"));
        assert!(!bypasses(np, "11.1.2.3"));
        assert!(bypasses(np, "[fd12::1]"));
        assert!(bypasses(np, "192.168.1.7"));
        assert!(!bypasses(np, "192.168.1.8"));
        assert!(bypasses("*", "anything"));
    }

    #[test]
    fn http_connect_answers() {
        let p = proxy("http://u:p@h:8080");
        let (mut h, first) = Handshake::start(&p, "files.example", 443, None);
        let first = String::from_utf8(first).unwrap();
        assert!(
            first.starts_with("CONNECT files.example:443 HTTP/1.1\r\nHost: files.example:443\r\n")
        );
        assert!(first.contains("Proxy-Authorization: Basic dTpw\r\n"));
        assert_eq!(
            h.on_bytes(b"HTTP/1.1 200 Connection est").unwrap(),
            Step::More
        );
        assert_eq!(h.on_bytes(b"ablished\r\n\r\nTARGET").unwrap(), Step::Open);
        assert!(h.is_open());
        assert_eq!(h.take_rest(), b"TARGET");
        for (answer, says) in [
            (
                &b"HTTP/1.1 407 Proxy Authentication Required\r\n\r\n"[..],
                "407",
            ),
            (b"HTTP/1.0 403 Forbidden\r\nX: y\r\n\r\n", "status 403"),
            (b"SSH-2.0-OpenSSH\r\n\r\n", "not HTTP"),
        ] {
            let (mut h, _) = Handshake::start(&proxy("h:1"), "t", 443, None);
            let e = h.on_bytes(answer).unwrap_err();
            assert!(e.0.contains(says), "{e}");
        }
        let (mut h, _) = Handshake::start(&proxy("h:1"), "t", 443, None);
        assert!(h.on_bytes(&vec![b'x'; MAX_CONNECT_HEAD + 10]).is_err());
    }

    #[test]
    fn socks5_with_and_without_password() {
        let (mut h, first) = Handshake::start(&proxy("socks5h://h"), "files.example", 443, None);
        assert_eq!(first, [5, 1, 0]);
        let step = h.on_bytes(&[5, 0]).unwrap();
        let mut want = vec![5, 1, 0, 3, 13];
        want.extend_from_slice(b"files.example");
        want.extend_from_slice(&443u16.to_be_bytes());
        assert_eq!(step, Step::Send(want));
        assert_eq!(h.on_bytes(&[5, 0, 0, 1, 10, 0]).unwrap(), Step::More);
        assert_eq!(h.on_bytes(&[0, 1, 0x1f, 0x90]).unwrap(), Step::Open);

        let p = Proxy::parse("socks5://h", Some("user"), Some("pw")).unwrap();
        let addr = "192.0.2.1".parse().ok();
        let (mut h, first) = Handshake::start(&p, "files.example", 80, addr);
        assert_eq!(first, [5, 2, 0, 2]);
        let step = h.on_bytes(&[5, 2]).unwrap();
        assert_eq!(
            step,
            Step::Send(vec![1, 4, b'u', b's', b'e', b'r', 2, b'p', b'w'])
        );
        let step = h.on_bytes(&[1, 0]).unwrap();
        assert_eq!(step, Step::Send(vec![5, 1, 0, 1, 192, 0, 2, 1, 0, 80]));
        assert_eq!(
            h.on_bytes(&[5, 0, 0, 1, 0, 0, 0, 0, 0, 0]).unwrap(),
            Step::Open
        );
    }

    #[test]
    fn socks5_refusals_and_garbage() {
        for (replies, says) in [
            (vec![&[4u8, 0][..]], "version 4"),
            (vec![&[5, 0xff][..]], "none of the offered"),
            (
                vec![&[5, 0][..], &[5, 5, 0, 1, 0, 0, 0, 0, 0, 0][..]],
                "connection refused",
            ),
            (
                vec![&[5, 0][..], &[5, 0, 0, 9, 0][..]],
                "unknown address type",
            ),
        ] {
            let (mut h, _) = Handshake::start(&proxy("socks5://h"), "t.example", 80, None);
            let mut err = None;
            for r in replies {
                if let Err(e) = h.on_bytes(r) {
                    err = Some(e);
                }
            }
            let e = err.expect("an error");
            assert!(e.0.contains(says), "{e}");
        }
        let p = Proxy::parse("socks5://h", Some("u"), Some("bad")).unwrap();
        let (mut h, _) = Handshake::start(&p, "t", 80, None);
        h.on_bytes(&[5, 2]).unwrap();
        assert!(h
            .on_bytes(&[1, 1])
            .unwrap_err()
            .0
            .contains("refused the user name"));
    }
}
