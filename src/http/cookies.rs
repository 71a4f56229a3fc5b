//! Cookies: the jar of one run. Storage and matching follow RFC 6265 (the `cookie_store` crate);
//! this file adds what a downloader needs around it: the Netscape/Mozilla text format that browser
//! exporters, yt-dlp and aria2 read and write (`--load-cookies`, `--save-cookies`), and limits, so
//! that no server can make the jar grow without bound or plant a cookie for a whole top-level
//! domain.
use cookie::time::OffsetDateTime;
use cookie_store::{CookieDomain, CookieExpiration, CookieStore};
use std::io;
use std::path::Path;
use url::Url;

/// A `Set-Cookie` value longer than this is ignored (RFC 6265 §6.1 asks for at least 4096).
pub const MAX_COOKIE_BYTES: usize = 4096;
/// Most cookies kept for one domain (aria2 keeps 50 too); more from the same domain are ignored.
pub const MAX_PER_DOMAIN: usize = 50;
/// Most cookies in the jar.
pub const MAX_COOKIES: usize = 3000;

/// The first line of a cookie file; Python's `MozillaCookieJar` (yt-dlp) will not load a file
/// without it, and aria2 skips it as a comment.
const MAGIC: &str = "# Netscape HTTP Cookie File";

/// The cookies of a run.
#[derive(Default)]
pub struct Jar {
    store: CookieStore,
}

impl std::fmt::Debug for Jar {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Values are secrets: never printed.
        write!(f, "Jar({} cookies)", self.len())
    }
}

/// The host a cookie's domain field names, and whether it covers the subdomains too.
fn domain_of(c: &cookie_store::Cookie<'_>) -> Option<(String, bool)> {
    match &c.domain {
        CookieDomain::HostOnly(h) => Some((h.clone(), false)),
        CookieDomain::Suffix(d) => Some((d.clone(), true)),
        CookieDomain::NotPresent | CookieDomain::Empty => None,
    }
}

impl Jar {
    pub fn new() -> Jar {
        Jar::default()
    }

    /// Cookies kept (unexpired).
    pub fn len(&self) -> usize {
        self.store.iter_unexpired().count()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Reads a cookie file. Lines that are not cookies (comments, blank, malformed) are skipped, as
    /// are expired cookies; `#HttpOnly_` lines (curl's and browsers' exporters mark HttpOnly
    /// cookies so) are cookies. Returns how many were taken.
    pub fn load_netscape(&mut self, text: &str) -> usize {
        let now = OffsetDateTime::now_utc().unix_timestamp();
        let mut taken = 0;
        for line in text.lines() {
            let line = line.trim_end_matches('\r');
            let (line, http_only) = match line.strip_prefix("#HttpOnly_") {
                Some(rest) => (rest, true),
                None => (line, false),
            };
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let f: Vec<&str> = line.split('\t').collect();
            if !(6..=7).contains(&f.len()) {
                continue;
            }
            let (domain, subdomains, path, secure) = (f[0], f[1], f[2], f[3]);
            let Ok(expires) = f[4].trim().parse::<i64>() else {
                continue;
            };
            let (name, value) = (f[5], f.get(6).copied().unwrap_or(""));
            if !fits_a_line(name, value) {
                continue;
            }
            if expires != 0 && expires <= now {
                continue;
            }
            let host = domain.trim_start_matches('.').to_ascii_lowercase();
            // A domain cookie for a name that cannot have one (`localhost`, `fileserver`, an
            // address) is still the user's cookie for that host: aria2c sends it there, so it is
            // kept for the host itself rather than dropped.
            let subdomains = (subdomains.eq_ignore_ascii_case("TRUE") || domain.starts_with('.'))
                && is_registrable(&host);
            let secure = secure.eq_ignore_ascii_case("TRUE");
            let path = if path.starts_with('/') { path } else { "/" };
            if host.is_empty() || name.is_empty() {
                continue;
            }
            let scheme = if secure { "https" } else { "http" };
            let Ok(origin) = Url::parse(&format!("{scheme}://{host}{path}")) else {
                continue;
            };
            let mut raw = cookie::Cookie::build((name.to_string(), value.to_string()))
                .path(path.to_string())
                .secure(secure)
                .http_only(http_only);
            if subdomains {
                raw = raw.domain(host.clone());
            }
            if expires != 0 {
                match OffsetDateTime::from_unix_timestamp(expires) {
                    Ok(t) => raw = raw.expires(t),
                    Err(_) => continue,
                }
            }
            if self.room_for(&host) && self.store.insert_raw(&raw.build(), &origin).is_ok() {
                taken += 1;
            }
        }
        taken
    }

    /// Reads the cookie file at `path`. A browser's SQLite cookie database is refused with the
    /// reason (ringdl reads the text format only).
    pub fn load_file(&mut self, path: &Path) -> io::Result<usize> {
        let bytes = std::fs::read(path)?;
        if bytes.starts_with(b"SQLite format 3\0") {
            return Err(io::Error::other(
                "it is a browser's SQLite database; ringdl reads cookies in the Netscape text format (export them, e.g. with yt-dlp --cookies-from-browser BROWSER --cookies FILE)",
            ));
        }
        Ok(self.load_netscape(&String::from_utf8_lossy(&bytes)))
    }

    /// Whether one more cookie for `host` fits the limits.
    fn room_for(&self, host: &str) -> bool {
        let mut all = 0;
        let mut here = 0;
        for c in self.store.iter_any() {
            all += 1;
            if domain_of(c).is_some_and(|(d, _)| d == host) {
                here += 1;
            }
        }
        all < MAX_COOKIES && here < MAX_PER_DOMAIN
    }

    /// Takes the `Set-Cookie` values of a response to a request for `url`. A cookie is ignored
    /// when it is too long, marked `Secure` but not sent over https, scoped to a domain the URL's
    /// host is not in or to a whole top-level domain, or over the limits.
    pub fn store_response(&mut self, url: &Url, set_cookies: &[String]) {
        for value in set_cookies {
            if value.len() > MAX_COOKIE_BYTES {
                continue;
            }
            let Ok(raw) = cookie::Cookie::parse(value.as_str()) else {
                continue;
            };
            if !fits_a_line(raw.name(), raw.value()) {
                continue;
            }
            if raw.secure().unwrap_or(false) && url.scheme() != "https" {
                continue;
            }
            let host = match raw.domain() {
                Some(d) if !d.trim_start_matches('.').is_empty() => {
                    let d = d.trim_start_matches('.').to_ascii_lowercase();
                    if !is_registrable(&d) && url.host_str() != Some(d.as_str()) {
                        continue;
                    }
                    d
                }
                _ => url.host_str().unwrap_or_default().to_ascii_lowercase(),
            };
            let replaces = self
                .store
                .iter_any()
                .any(|c| c.name() == raw.name() && domain_of(c).is_some_and(|(d, _)| d == host));
            if !replaces && !self.room_for(&host) {
                continue;
            }
            // Rejected ones (domain mismatch, expired) are simply not kept.
            let _ = self.store.insert_raw(&raw, url);
        }
    }

    /// The `Cookie` header value for a request to `url`, if any cookie applies: longer paths
    /// first (RFC 6265 §5.4), then by name, so the header is the same every time.
    pub fn header_for(&self, url: &Url) -> Option<String> {
        let mut cookies: Vec<_> = self.store.matches(url);
        if cookies.is_empty() {
            return None;
        }
        cookies.sort_by(|a, b| {
            let (pa, pb) = (String::from(&a.path), String::from(&b.path));
            pb.len().cmp(&pa.len()).then_with(|| a.name().cmp(b.name()))
        });
        let pairs: Vec<String> = cookies
            .iter()
            .map(|c| format!("{}={}", c.name(), c.value()))
            .collect();
        Some(pairs.join("; "))
    }

    /// The jar in the Netscape format (session cookies with an expiry of 0, as aria2 writes them),
    /// sorted by domain, path and name.
    pub fn to_netscape(&self) -> String {
        let mut lines: Vec<(String, String, String, String)> = self
            .store
            .iter_unexpired()
            .filter_map(|c| {
                let (host, subdomains) = domain_of(c)?;
                let path = String::from(&c.path);
                let expires = match c.expires {
                    CookieExpiration::AtUtc(t) => t.unix_timestamp(),
                    CookieExpiration::SessionEnd => 0,
                };
                let domain = if subdomains { format!(".{host}") } else { host };
                let line = format!(
                    "{domain}\t{}\t{path}\t{}\t{expires}\t{}\t{}",
                    if subdomains { "TRUE" } else { "FALSE" },
                    if c.secure().unwrap_or(false) {
                        "TRUE"
                    } else {
                        "FALSE"
                    },
                    c.name(),
                    c.value()
                );
                Some((domain, path, c.name().to_string(), line))
            })
            .collect();
        lines.sort();
        let mut out = String::from(MAGIC);
        out.push('\n');
        for (_, _, _, line) in lines {
            out.push_str(&line);
            out.push('\n');
        }
        out
    }

    /// Writes the jar to `path` (replacing it), readable by its owner only: cookies are secrets.
    pub fn save_file(&self, path: &Path) -> io::Result<()> {
        use std::io::Write;
        use std::os::unix::fs::OpenOptionsExt;
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(path)?;
        f.write_all(self.to_netscape().as_bytes())?;
        f.sync_all()
    }
}

/// Whether a cookie may be scoped to `domain` and its subdomains: a name with an inner dot, not a
/// top-level domain (`com`) nor an address. Without a public-suffix list this lets `co.uk`
/// through; it stops the worst case, a cookie for every `.com` host.
/// A cookie's name and value may go into a `Cookie` header and onto one line of a cookie file:
/// no control character (a tab would split the file's line, a CR or LF the header; browsers
/// refuse control characters in cookies too).
fn fits_a_line(name: &str, value: &str) -> bool {
    !name.chars().chain(value.chars()).any(char::is_control)
}

fn is_registrable(domain: &str) -> bool {
    let d = domain.trim_end_matches('.');
    d.contains('.') && d.parse::<std::net::IpAddr>().is_err()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn url(s: &str) -> Url {
        Url::parse(s).unwrap()
    }

    fn jar(text: &str) -> Jar {
        let mut j = Jar::new();
        j.load_netscape(text);
        j
    }

    /// aria2c sends a cookie file's domain cookie for a name without a dot (`localhost`, a LAN
    /// host) or an address to that host; ringdl dropped it, so a server that wants it answered
    /// 403. Kept for the host itself; a Set-Cookie from a server still cannot scope one so.
    #[test]
    fn a_domain_cookie_for_a_single_label_host_goes_to_that_host() {
        let far = "4102444800";
        let j = jar(&format!(
            "localhost\tTRUE\t/\tFALSE\t{far}\tsid\tabc\n.fileserver\tTRUE\t/\tFALSE\t{far}\tk\tv\n.127.0.0.1\tTRUE\t/\tFALSE\t{far}\tip\t1\n"
        ));
        assert_eq!(
            j.header_for(&url("http://localhost:8080/f")).as_deref(),
            Some("sid=abc")
        );
        assert_eq!(
            j.header_for(&url("http://fileserver/f")).as_deref(),
            Some("k=v")
        );
        assert_eq!(
            j.header_for(&url("http://127.0.0.1:1/f")).as_deref(),
            Some("ip=1")
        );
        assert_eq!(j.header_for(&url("http://other/f")), None);
    }

    #[test]
    fn netscape_lines_host_only_domain_secure_httponly_and_expiry() {
        let j = jar("# Netscape HTTP Cookie File\n\
             host.example\tFALSE\t/\tFALSE\t0\ta\t1\n\
             .example.org\tTRUE\t/\tFALSE\t0\tb\t2\n\
             secure.example\tFALSE\t/\tTRUE\t0\tc\t3\n\
             #HttpOnly_host.example\tFALSE\t/p\tFALSE\t4102444800\td\t4\n\
             host.example\tFALSE\t/\tFALSE\t1000\told\tx\n\
             host.example\tFALSE\t/\tFALSE\tbad\tbad\tx\n\
             not a cookie line\n\
             host.example\tFALSE\t/\tFALSE\t0\tempty\n");
        assert_eq!(j.len(), 5);
        assert_eq!(
            j.header_for(&url("http://host.example/")).as_deref(),
            Some("a=1; empty=")
        );
        assert_eq!(
            j.header_for(&url("http://host.example/p/f")).as_deref(),
            Some("d=4; a=1; empty=")
        );
        // Host-only: not for a subdomain.
        assert_eq!(j.header_for(&url("http://sub.host.example/")), None);
        // A domain cookie covers the subdomains.
        assert_eq!(
            j.header_for(&url("https://dl.example.org/x")).as_deref(),
            Some("b=2")
        );
        // Secure: only over https.
        assert_eq!(j.header_for(&url("http://secure.example/")), None);
        assert_eq!(
            j.header_for(&url("https://secure.example/")).as_deref(),
            Some("c=3")
        );
        // Another host gets nothing.
        assert_eq!(j.header_for(&url("http://other.example/")), None);
    }

    #[test]
    fn set_cookie_rules_secure_domain_and_limits() {
        let mut j = Jar::new();
        let u = url("http://a.example.com/dir/f.bin");
        j.store_response(
            &u,
            &[
                "s=1; Path=/".into(),
                "sec=2; Secure".into(),
                "tld=3; Domain=com".into(),
                "other=4; Domain=example.net".into(),
                "wide=5; Domain=example.com; Path=/".into(),
                format!("big={}", "x".repeat(MAX_COOKIE_BYTES)),
                "gone=6; Max-Age=0".into(),
            ],
        );
        assert_eq!(
            j.header_for(&url("http://a.example.com/")).as_deref(),
            Some("s=1; wide=5")
        );
        assert_eq!(
            j.header_for(&url("http://b.example.com/")).as_deref(),
            Some("wide=5")
        );
        assert_eq!(j.header_for(&url("http://x.com/")), None);
        assert_eq!(j.header_for(&url("http://example.net/")), None);
        // A flood from one domain stops at the limit; replacing a cookie is always allowed.
        let flood: Vec<String> = (0..500).map(|i| format!("f{i}=v; Path=/")).collect();
        j.store_response(&u, &flood);
        let n = j.len();
        assert!(n <= MAX_PER_DOMAIN + 1, "{n} cookies");
        j.store_response(&u, &["s=again; Path=/".into()]);
        assert!(j
            .header_for(&url("http://a.example.com/"))
            .is_some_and(|h| h.contains("s=again")));
    }

    #[test]
    fn saved_file_loads_back_the_same() {
        let mut j = jar(".example.org\tTRUE\t/\tFALSE\t0\tb\t2\n\
             host.example\tFALSE\t/d\tTRUE\t4102444800\tc\t3\n");
        j.store_response(&url("http://host.example/"), &["n=v".into()]);
        let text = j.to_netscape();
        assert!(text.starts_with(MAGIC), "{text}");
        assert!(
            text.contains(".example.org\tTRUE\t/\tFALSE\t0\tb\t2\n"),
            "{text}"
        );
        assert!(
            text.contains("host.example\tFALSE\t/d\tTRUE\t4102444800\tc\t3\n"),
            "{text}"
        );
        assert!(
            text.contains("host.example\tFALSE\t/\tFALSE\t0\tn\tv\n"),
            "{text}"
        );
        let again = jar(&text);
        assert_eq!(again.to_netscape(), text);
    }

    /// Found by the cookies fuzz target: a `Set-Cookie` whose name held a tab was kept, written
    /// by `--save-cookies` as a line of eight fields, and lost when the file was read back.
    #[test]
    fn control_characters_in_a_cookie_are_refused() {
        let url = Url::parse("http://example.com/a").unwrap();
        let mut jar = Jar::new();
        jar.store_response(
            &url,
            &[
                "\u{d7}\t\u{c0}=".to_string(),
                "a=b\rX-Injected: 1".to_string(),
                "c=d\u{1}".to_string(),
                "ok=1".to_string(),
            ],
        );
        assert_eq!(jar.len(), 1);
        assert_eq!(jar.header_for(&url).as_deref(), Some("ok=1"));
        let mut back = Jar::new();
        assert_eq!(back.load_netscape(&jar.to_netscape()), 1);
        assert_eq!(
            back.load_netscape("example.com\tFALSE\t/\tFALSE\t0\tn\tv\u{7f}\n"),
            0
        );
    }
}
