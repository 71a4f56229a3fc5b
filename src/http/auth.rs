//! HTTP authentication: Basic credentials, which origin they may be sent to, and the netrc file.
//!
//! Credentials given for a URI (in it, or by `--http-user`/`--http-passwd`) belong to that URI's
//! origin — scheme, host and port — and are never sent anywhere else, whatever a redirect says
//! (aria2c sends `--http-user` credentials to whatever host a redirect leads to). A netrc file
//! names its machines itself, so its credentials go to the hosts it names.
use base64::Engine as _;
use std::path::Path;
use url::Url;

/// A user name and password. `Debug` never shows the password.
#[derive(Clone, PartialEq, Eq)]
pub struct Credentials {
    pub user: String,
    pub password: String,
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Credentials({}, <password>)", self.user)
    }
}

impl Credentials {
    /// The `Authorization` header value for Basic authentication (RFC 7617).
    pub fn basic(&self) -> String {
        let pair = format!("{}:{}", self.user, self.password);
        format!(
            "Basic {}",
            base64::engine::general_purpose::STANDARD.encode(pair)
        )
    }

    /// The credentials written in a URL (`http://user:password@host/`), percent-decoded.
    pub fn from_url(url: &Url) -> Option<Credentials> {
        if url.username().is_empty() && url.password().is_none() {
            return None;
        }
        let decode = |s: &str| {
            percent_encoding::percent_decode_str(s)
                .decode_utf8_lossy()
                .into_owned()
        };
        Some(Credentials {
            user: decode(url.username()),
            password: decode(url.password().unwrap_or_default()),
        })
    }
}

/// A URI as ringdl shows it anywhere (console, log, results, error messages): without the password
/// it may carry (`http://user@host/...`). Text that does not parse as a URL is shown with anything
/// between `://` and the last `@` before the path taken out.
pub fn redact(uri: &str) -> String {
    if let Ok(mut u) = Url::parse(uri) {
        if u.password().is_some() {
            let _ = u.set_password(None);
            return u.to_string();
        }
        return uri.to_string();
    }
    let Some(start) = uri.find("://").map(|i| i + 3) else {
        return uri.to_string();
    };
    let end = uri[start..]
        .find(['/', '?', '#'])
        .map_or(uri.len(), |i| start + i);
    match uri[start..end].rfind('@') {
        Some(at) => format!("{}{}", &uri[..start], &uri[start + at + 1..]),
        None => uri.to_string(),
    }
}

/// Whether `a` and `b` have the same origin: scheme, host and port (RFC 6454).
pub fn same_origin(a: &Url, b: &Url) -> bool {
    // The url crate's origin: scheme, lower-cased host, port with the scheme's default filled in.
    a.origin() == b.origin()
}

/// A parsed netrc file: `machine NAME login USER password PASS` entries. A `default` entry is
/// kept apart: aria2 takes it for FTP only, never for HTTP. `account` is read and ignored,
/// `macdef` definitions are skipped.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Netrc {
    machines: Vec<(String, Credentials)>,
    default: Option<Credentials>,
}

impl Netrc {
    pub fn parse(text: &str) -> Netrc {
        let mut netrc = Netrc::default();
        // A macdef body runs to the next empty line; drop those bodies before splitting tokens.
        let mut kept = String::new();
        let mut in_macro = false;
        for line in text.lines() {
            if in_macro {
                in_macro = !line.trim().is_empty();
                continue;
            }
            if line.split_whitespace().next() == Some("macdef") {
                in_macro = true;
                continue;
            }
            if line.trim_start().starts_with('#') {
                continue;
            }
            kept.push_str(line);
            kept.push('\n');
        }
        // The entry being read: its machine (None: `default`) and what it has so far.
        let mut current: Option<(Option<String>, Credentials)> = None;
        // `default` (no machine): kept for FTP.
        let finish = |entry: Option<(Option<String>, Credentials)>, n: &mut Netrc| match entry {
            Some((Some(host), c)) => n.machines.push((host.to_ascii_lowercase(), c)),
            Some((None, c)) => {
                n.default.get_or_insert(c);
            }
            None => {}
        };
        let empty = || Credentials {
            user: String::new(),
            password: String::new(),
        };
        let mut tokens = kept.split_whitespace();
        while let Some(t) = tokens.next() {
            match t {
                "machine" => {
                    finish(current.take(), &mut netrc);
                    let Some(host) = tokens.next() else { break };
                    current = Some((Some(host.to_string()), empty()));
                }
                "default" => {
                    finish(current.take(), &mut netrc);
                    current = Some((None, empty()));
                }
                "login" => {
                    let v = tokens.next().unwrap_or_default();
                    if let Some((_, c)) = current.as_mut() {
                        c.user = v.to_string();
                    }
                }
                "password" => {
                    let v = tokens.next().unwrap_or_default();
                    if let Some((_, c)) = current.as_mut() {
                        c.password = v.to_string();
                    }
                }
                "account" => {
                    tokens.next();
                }
                _ => {}
            }
        }
        finish(current.take(), &mut netrc);
        netrc
    }

    /// For FTP: `host`'s own entry, else the `default` one (as aria2 takes them for FTP).
    pub fn lookup_or_default(&self, host: &str) -> Option<&Credentials> {
        self.lookup(host).or(self.default.as_ref())
    }

    /// The credentials for `host`: its own `machine` entry (the first, as aria2 reads them).
    pub fn lookup(&self, host: &str) -> Option<&Credentials> {
        let host = host.to_ascii_lowercase();
        self.machines
            .iter()
            .find(|(m, _)| *m == host)
            .map(|(_, c)| c)
    }

    /// Reads the netrc file at `path`: `Ok(None)` if there is none; `Err` (a warning to print)
    /// if others may read it, as curl and aria2 refuse such a file.
    pub fn load(path: &Path) -> Result<Option<Netrc>, String> {
        use std::os::unix::fs::PermissionsExt;
        let meta = match std::fs::metadata(path) {
            Ok(m) => m,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(format!("Cannot read {}: {e}", path.display())),
        };
        if meta.permissions().mode() & 0o077 != 0 {
            return Err(format!(
                "{} is readable or writable by others (mode {:o}); ignoring it. Make it private with chmod 600.",
                path.display(),
                meta.permissions().mode() & 0o777
            ));
        }
        match std::fs::read(path) {
            Ok(bytes) => Ok(Some(Netrc::parse(&String::from_utf8_lossy(&bytes)))),
            Err(e) => Err(format!("Cannot read {}: {e}", path.display())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn basic_value() {
        let c = Credentials {
            user: "Aladdin".into(),
            password: "open sesame".into(),
        };
        assert_eq!(c.basic(), "Basic QWxhZGRpbjpvcGVuIHNlc2FtZQ==");
        assert!(!format!("{c:?}").contains("sesame"));
    }

    #[test]
    fn credentials_in_a_url_are_percent_decoded() {
        let u = Url::parse("https://us%40er:p%3Ass@h.example/f").unwrap();
        let c = Credentials::from_url(&u).unwrap();
        assert_eq!((c.user.as_str(), c.password.as_str()), ("us@er", "p:ss"));
        assert_eq!(
            Credentials::from_url(&Url::parse("https://h.example/f").unwrap()),
            None
        );
    }

    #[test]
    fn redacted_uris_keep_no_password() {
        assert_eq!(redact("http://u:pw@h.example/f"), "http://u@h.example/f");
        assert_eq!(redact("https://h.example/f?a=b"), "https://h.example/f?a=b");
        assert_eq!(redact("http://u:p@w@h/x"), "http://u@h/x");
        assert_eq!(redact("weird://u:pw@[bad/x"), "weird://[bad/x");
        assert_eq!(redact("no uri at all"), "no uri at all");
    }

    #[test]
    fn origins() {
        let u = |s: &str| Url::parse(s).unwrap();
        assert!(same_origin(
            &u("http://H.example/a"),
            &u("http://h.example:80/b")
        ));
        assert!(!same_origin(
            &u("https://h.example/a"),
            &u("http://h.example/a")
        ));
        assert!(!same_origin(
            &u("http://h.example/a"),
            &u("http://h.example:8080/a")
        ));
        assert!(!same_origin(
            &u("http://h.example/a"),
            &u("http://g.example/a")
        ));
    }

    #[test]
    fn netrc_entries_default_and_macros() {
        let n = Netrc::parse(
            "# comment\n\
             machine a.example login alice password s3cret\n\
             macdef init\n  cd /pub\n  ls\n\n\
             machine B.example\n  login bob\n  account x\n  password pw2\n\
             default login anon password anon@\n",
        );
        assert_eq!(
            n.lookup("a.example").map(|c| c.password.as_str()),
            Some("s3cret")
        );
        assert_eq!(n.lookup("b.EXAMPLE").map(|c| c.user.as_str()), Some("bob"));
        assert_eq!(
            n.lookup("b.example").map(|c| c.password.as_str()),
            Some("pw2")
        );
        // aria2 uses `default` for FTP only: an HTTP host no machine names gets nothing.
        assert_eq!(n.lookup("other"), None);
        let ftp = |host| n.lookup_or_default(host).map(|c| c.user.as_str());
        assert_eq!(
            (ftp("other"), ftp("a.example")),
            (Some("anon"), Some("alice"))
        );
        let n = Netrc::parse("machine a.example login u password p");
        assert_eq!(n.lookup("other"), None);
        assert_eq!(n.lookup_or_default("other"), None);
    }
}
