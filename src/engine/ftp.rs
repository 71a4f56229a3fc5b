//! FTP as one of the engine's sources: `crate::ftp`'s session (no I/O) as a
//! `sources::Conversation`, its failures as aria2c's exit codes. The control connection is the
//! conversation's; the file's bytes come on the data connection it opens (`Step::Data`), always
//! to the control connection's peer.
use super::config::DownloadOptions;
use super::job::Failure;
use super::sources::{Answer, Conversation, Kept, Step};
use super::ExitCode;
use crate::ftp::{Event, Kind, Login, Session};
use crate::http::Framing;
use url::Url;

/// aria2's exit code for an FTP failure.
pub const FTP_ERROR: ExitCode = ExitCode(21);

/// One exchange with an FTP server: log in, find the file, open the data connection, ask for
/// the range.
pub struct FtpConversation {
    login: Login,
    ascii: bool,
    passive: bool,
    remote_time: bool,
    /// Keep the control connection for another file or range (`--ftp-reuse-connection`).
    reuse: bool,
    /// The connection this exchange goes on was kept by an earlier one, logged in.
    carried: Option<crate::ftp::Kept>,
    /// It failed as a kept connection that could not go on.
    stale: bool,
    url: Url,
    session: Result<Option<Session>, Failure>,
}

impl FtpConversation {
    /// The conversation for `url` with `opts`; `netrc`: the netrc file's entry for its host
    /// (its own or the `default` one; none with `-n`).
    pub fn new(
        url: &Url,
        opts: &DownloadOptions,
        netrc: Option<&crate::http::auth::Credentials>,
    ) -> FtpConversation {
        FtpConversation {
            login: login_for(url, opts, netrc),
            ascii: opts.ftp_ascii,
            passive: opts.ftp_pasv,
            remote_time: opts.remote_time,
            reuse: opts.ftp_reuse_connection,
            carried: None,
            stale: false,
            url: url.clone(),
            session: Ok(None),
        }
    }
}

/// Who logs in for `url`, as aria2c decides: the URI's user with the URI's password, or the
/// netrc entry's for that host when its login is that user, or `--ftp-passwd`; a URI without a
/// user logs in with `--ftp-user`/`--ftp-passwd`, whose defaults are aria2c's anonymous login
/// (so the netrc file is never asked then).
fn login_for(
    url: &Url,
    opts: &DownloadOptions,
    netrc: Option<&crate::http::auth::Credentials>,
) -> Login {
    let default = Login::default();
    let (user, pass) = given_login(url, opts, netrc);
    Login {
        user: user.unwrap_or(default.user),
        pass: pass.unwrap_or(default.pass),
    }
}

/// The key of the kept control connections an exchange with `url` can go on: the server's are
/// told apart by the engine; here, who logs in (a session checks it again, `Session::go_on`).
pub fn kept_key(
    url: &Url,
    opts: &DownloadOptions,
    netrc: Option<&crate::http::auth::Credentials>,
) -> String {
    let l = login_for(url, opts, netrc);
    format!("{}:{}\n{}", url.scheme(), l.user, l.pass)
}

/// Who an HTTP proxy that fetches `url` (FTP) is told to log in as: aria2c's FTP login, its
/// defaults included.
pub fn proxy_login(
    url: &Url,
    opts: &DownloadOptions,
    netrc: Option<&crate::http::auth::Credentials>,
) -> (String, String) {
    let l = login_for(url, opts, netrc);
    (l.user, l.pass)
}

/// The user and password given for `url` by aria2c's rules for FTP and SFTP (the URI's, the
/// netrc entry's for the URI's user, `--ftp-user`/`--ftp-passwd`), where given.
pub fn given_login(
    url: &Url,
    opts: &DownloadOptions,
    netrc: Option<&crate::http::auth::Credentials>,
) -> (Option<String>, Option<String>) {
    let decode = percent_decode;
    match url.username() {
        "" => (opts.ftp_user.clone(), opts.ftp_passwd.clone()),
        u => {
            let u = decode(u);
            let from_netrc = netrc.filter(|c| c.user == u).map(|c| c.password.clone());
            let pass = url.password().map(decode).or(from_netrc);
            (Some(u), pass.or_else(|| opts.ftp_passwd.clone()))
        }
    }
}

/// A URI's user or password with its `%XX` escapes decoded (bytes that are not UTF-8 kept as
/// replacement characters: a login they would break is refused by the server, not here).
fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let hex = (b[i] == b'%')
            .then(|| b.get(i + 1..i + 3))
            .flatten()
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match hex {
            Some(v) => {
                out.push(v);
                i += 3;
            }
            None => {
                out.push(b[i]);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// aria2c's exit code, retry rule and words for a session's failure with `url`: a reply that
/// failed it is said as aria2c says it (the reply's text is in the log at debug level).
fn failure(e: crate::ftp::Error, url: &Url) -> Failure {
    let message = match (e.kind, e.reply) {
        (Kind::NotFound, _) => "Resource not found".to_string(),
        (Kind::NoFile, _) => format!("FTP/SFTP URI {url} doesn't contain file path."),
        (Kind::NoResume, _) => "FTP server doesn't support resuming.".to_string(),
        (Kind::NoTls, _) => format!("{}; nothing is sent in the clear", e.message),
        (Kind::Stale, _) => e.message,
        (_, Some(code)) => format!("The response status is not successful. status={code}"),
        (_, None) => e.message,
    };
    match e.kind {
        Kind::NotFound => Failure::retry(ExitCode::NOT_FOUND, message),
        Kind::NoFile | Kind::BadUri => Failure::fatal(ExitCode::UNKNOWN, message),
        Kind::Login => Failure::fatal(FTP_ERROR, message),
        // (aria2c aborts too: another try would be refused the same way.)
        Kind::NoResume => Failure::fatal(ExitCode::CANNOT_RESUME, message),
        Kind::NoTls => Failure::fatal(FTP_ERROR, message),
        Kind::Transient | Kind::Stale => Failure::retry(FTP_ERROR, message),
        Kind::Permanent => Failure::fatal(FTP_ERROR, message),
    }
}

impl FtpConversation {
    fn step(&mut self, e: Event) -> Step {
        match e {
            Event::Wait => Step::Wait,
            Event::Send(b) => Step::Send(b),
            Event::OpenData(port) => Step::Data(port),
            Event::Listen => Step::Listen,
            Event::StartTls(then) => Step::StartTls(then),
            Event::Transfer {
                size,
                first,
                length,
                modified,
            } => Step::Answer(Answer {
                total: size,
                first,
                framing: length.map_or(Framing::UntilClose, Framing::Length),
                // REST serves any offset (a server that refuses it says so when asked).
                ranges: size.is_some(),
                name: None,
                keep_alive: false,
                on_data: true,
                modified,
                wrapped: false,
            }),
            Event::Fail(e) => Step::Fail(self.failed(e)),
        }
    }

    fn failed(&mut self, e: crate::ftp::Error) -> Failure {
        self.stale |= e.kind == Kind::Stale;
        failure(e, &self.url)
    }
}

impl Conversation for FtpConversation {
    fn begin(&mut self, url: &Url, range: Option<(u64, Option<u64>)>) -> Vec<u8> {
        if self.stale {
            self.session = Err(Failure::retry(FTP_ERROR, "not an FTP connection"));
            return Vec::new();
        }
        let session = Session::new(url.path(), self.login.clone(), self.ascii, range);
        let session = session.map(|s| if self.remote_time { s.with_time() } else { s });
        let tls = match url.scheme() {
            "ftps" => crate::ftp::Tls::Implicit,
            "ftpes" => crate::ftp::Tls::Explicit,
            _ => crate::ftp::Tls::None,
        };
        let session = session.map(|s| s.with_tls(tls));
        let session = session.map(|s| if self.reuse { s.asking_base() } else { s });
        let session = session.map(|s| if self.passive { s } else { s.active() });
        let first = session.and_then(|mut s| {
            let first = match self.carried.take() {
                Some(kept) => s.go_on(kept)?,
                None => s.start(),
            };
            Ok((s, first))
        });
        match first {
            Ok((s, first)) => {
                self.session = Ok(Some(s));
                first
            }
            Err(e) => {
                self.session = Err(self.failed(e));
                Vec::new()
            }
        }
    }

    fn keep(&mut self) -> Option<Kept> {
        match &self.session {
            Ok(Some(s)) if self.reuse => s.kept().map(|k| Box::new(k) as Kept),
            _ => None,
        }
    }

    fn carry_on(&mut self, kept: Kept) {
        self.carried = kept.downcast::<crate::ftp::Kept>().ok().map(|k| *k);
        // (Another protocol's connection: refused as a kept one that cannot go on.)
        self.stale = self.carried.is_none();
    }

    fn stale(&self) -> bool {
        self.stale || matches!(&self.session, Ok(Some(s)) if s.stale())
    }

    fn received(&mut self, bytes: &[u8]) -> (usize, Step) {
        match &mut self.session {
            Ok(Some(s)) => {
                let (used, e) = s.received(bytes);
                (used, self.step(e))
            }
            Ok(None) => (0, Step::Fail(Failure::fatal(FTP_ERROR, "no session"))),
            Err(f) => (0, Step::Fail(f.clone())),
        }
    }

    fn listening(&mut self, addr: std::net::SocketAddr) -> Step {
        match &mut self.session {
            Ok(Some(s)) => {
                let e = s.listening(addr);
                self.step(e)
            }
            Ok(None) => Step::Fail(Failure::fatal(FTP_ERROR, "no session")),
            Err(f) => Step::Fail(f.clone()),
        }
    }

    fn data_ready(&mut self) -> Step {
        match &mut self.session {
            Ok(Some(s)) => {
                let e = s.data_ready();
                self.step(e)
            }
            Ok(None) => Step::Fail(Failure::fatal(FTP_ERROR, "no session")),
            Err(f) => Step::Fail(f.clone()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_login_comes_from_the_uri_then_the_options_then_aria2cs_defaults() {
        let argv = ["ftp://h/f"].map(std::ffi::OsString::from);
        let mut opts = match crate::cli::parse_args(argv) {
            Ok(crate::cli::Command::Download(s)) => s.config.download.clone(),
            Ok(_) => panic!("not a download"),
            Err(e) => panic!("{}", e.message),
        };
        let url = |u: &str| Url::parse(u).expect("a URL");
        let netrc = crate::http::auth::Credentials {
            user: "al".into(),
            password: "from-netrc".into(),
        };
        let l = login_for(&url("ftp://h/f"), &opts, Some(&netrc));
        assert_eq!(
            (l.user.as_str(), l.pass.as_str()),
            ("anonymous", "ARIA2USER@"),
            "no user in the URI: the netrc file is not asked"
        );
        let l = login_for(&url("ftp://al@h/f"), &opts, Some(&netrc));
        assert_eq!((l.user.as_str(), l.pass.as_str()), ("al", "from-netrc"));
        let l = login_for(&url("ftp://bo@h/f"), &opts, Some(&netrc));
        assert_eq!((l.user.as_str(), l.pass.as_str()), ("bo", "ARIA2USER@"));
        opts.ftp_user = Some("bob".into());
        opts.ftp_passwd = Some("secret".into());
        let l = login_for(&url("ftp://h/f"), &opts, None);
        assert_eq!((l.user.as_str(), l.pass.as_str()), ("bob", "secret"));
        let l = login_for(&url("ftp://al%40x:p%3Aw@h/f"), &opts, Some(&netrc));
        assert_eq!((l.user.as_str(), l.pass.as_str()), ("al@x", "p:w"));
        let l = login_for(&url("ftp://al@h/f"), &opts, None);
        assert_eq!((l.user.as_str(), l.pass.as_str()), ("al", "secret"));
    }
}
