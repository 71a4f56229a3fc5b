//! FTP (RFC 959, with RFC 2428's EPSV and RFC 3659's SIZE and REST) as a machine without I/O:
//! what a client sends to fetch one file, or a range of it, over a control connection, and what
//! it reads back, up to the moment the file's bytes flow on the data connection. The engine
//! moves the bytes (`engine::ftp` adapts a [`Session`] to its sources).
pub mod reply;

use reply::Reply;

/// Who logs in: aria2c's defaults are `anonymous` and `ARIA2USER@`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Login {
    pub user: String,
    pub pass: String,
}

impl Default for Login {
    fn default() -> Self {
        Login {
            user: "anonymous".into(),
            pass: "ARIA2USER@".into(),
        }
    }
}

/// Why a session failed, as the engine maps it to aria2's exit codes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// The file or a directory of its path is not there (550).
    NotFound,
    /// The URI names a directory, not a file.
    NoFile,
    /// A name no FTP command can carry.
    BadUri,
    /// The server refused the login.
    Login,
    /// The server refused to go on from an offset (REST).
    NoResume,
    /// The server refused TLS (`AUTH TLS`, `PBSZ`, `PROT P`) where it was asked for.
    NoTls,
    /// A 4xx reply or a reply that did not come right: another try may do better.
    Transient,
    /// A 5xx reply, or bytes that are not FTP.
    Permanent,
    /// A control connection kept from an earlier transfer could not go on (the server closed
    /// it, or said no before the session was back where it started): a new one will.
    Stale,
}

/// A session's failure: its kind and a one-line message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    pub kind: Kind,
    pub message: String,
    /// The reply code that failed it, if a reply did.
    pub reply: Option<u16>,
}

fn error(kind: Kind, message: String) -> Error {
    Error {
        kind,
        message,
        reply: None,
    }
}

/// Where a session stands after bytes came in.
#[derive(Debug, PartialEq, Eq)]
pub enum Event {
    /// More bytes are needed.
    Wait,
    /// Send these, then read on.
    Send(Vec<u8>),
    /// Open the data connection, to this port of the control connection's peer; then
    /// [`Session::data_ready`].
    OpenData(u16),
    /// Listen for the server's data connection (active mode); then [`Session::listening`].
    Listen,
    /// Start TLS on the control connection (the server said yes to `AUTH TLS`), then send these
    /// bytes under it; data connections are under TLS too from now on.
    StartTls(Vec<u8>),
    /// The file's bytes come on the data connection: from `first`, `length` of them (`None`:
    /// until the server closes it), of a file of `size` bytes if the server said.
    Transfer {
        size: Option<u64>,
        first: u64,
        length: Option<u64>,
        /// The file's modification time, when asked for (`MDTM`) and said.
        modified: Option<std::time::SystemTime>,
    },
    Fail(Error),
}

/// FTP over TLS (RFC 4217).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tls {
    /// Plain FTP.
    None,
    /// `AUTH TLS` after the greeting (`ftpes://`): refused by the server, the session fails.
    Explicit,
    /// TLS from the first byte (`ftps://`, port 990), by the connection.
    Implicit,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Greeting,
    /// A kept connection: waiting for the last reply of the transfer before.
    Final,
    /// A kept connection: changing back to the directory the login started in.
    Home,
    AuthTls,
    Pbsz,
    Prot,
    User,
    Pass,
    Type,
    /// Asking where the login starts (to come back there when the connection is kept).
    Pwd,
    /// Changing into the path's `n`th directory.
    Cwd(usize),
    Size,
    Mdtm,
    Epsv,
    Pasv,
    /// Waiting for the data connection.
    Connecting,
    /// Active mode: waiting for the socket the server is to connect to, then for the replies to
    /// EPRT and PORT.
    Listening,
    Eprt(std::net::SocketAddr),
    Port,
    Rest,
    Retr,
    /// The file's bytes flow.
    Done,
    /// The transfer's last reply came: the connection can take another session.
    Ended,
}

/// What a session leaves on its control connection for the next one: who is logged in, under
/// which TLS, where the login started, and whether the transfer's last reply was read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Kept {
    login: Login,
    tls: Tls,
    base: String,
    ended: bool,
}

/// One file fetched over one control connection.
#[derive(Debug)]
pub struct Session {
    login: Login,
    ascii: bool,
    /// Passive mode (the client connects for the data), else active (the server does).
    passive: bool,
    /// Ask the file's modification time (`MDTM`), and what it is.
    ask_time: bool,
    modified: Option<std::time::SystemTime>,
    dirs: Vec<String>,
    name: String,
    /// From `first` to `last` inclusive (`None`: to the end).
    range: Option<(u64, Option<u64>)>,
    size: Option<u64>,
    state: State,
    tls: Tls,
    /// Ask where the login starts (`PWD`), so that the connection can be kept.
    ask_base: bool,
    base: Option<String>,
}

/// Refuses a name or credential that would break out of its command (CR, LF, NUL).
fn fits_command(what: &str, s: &str) -> Result<(), Error> {
    match s.bytes().any(|b| matches!(b, b'\r' | b'\n' | 0)) {
        true => Err(error(
            Kind::BadUri,
            format!("{what} holds a line break or NUL, which no FTP command can carry"),
        )),
        false => Ok(()),
    }
}

impl Session {
    /// A session for the file at URL path `path` (percent-encoded, as in the URI; its
    /// directories are changed into one by one, relative to where the login starts, as RFC 1738
    /// says), logging in as `login`, in ASCII mode if `ascii`, for `range`.
    pub fn new(
        path: &str,
        login: Login,
        ascii: bool,
        range: Option<(u64, Option<u64>)>,
    ) -> Result<Session, Error> {
        let path = path.strip_prefix('/').unwrap_or(path);
        let mut parts: Vec<String> = path
            .split('/')
            .map(|p| percent_decode(p).map_err(|m| error(Kind::BadUri, m)))
            .collect::<Result<_, _>>()?;
        let name = parts.pop().unwrap_or_default();
        if name.is_empty() {
            return Err(error(
                Kind::NoFile,
                "the URI names a directory, not a file".into(),
            ));
        }
        parts.retain(|p| !p.is_empty());
        for p in parts.iter().chain([&name]) {
            fits_command("the path", p)?;
        }
        fits_command("the user name", &login.user)?;
        fits_command("the password", &login.pass)?;
        Ok(Session {
            login,
            ascii,
            passive: true,
            ask_time: false,
            modified: None,
            dirs: parts,
            name,
            range,
            size: None,
            state: State::Greeting,
            tls: Tls::None,
            ask_base: false,
            base: None,
        })
    }

    /// Over TLS: explicit (`AUTH TLS`) or implicit; the data connections are protected
    /// (`PBSZ 0`, `PROT P`).
    pub fn with_tls(mut self, tls: Tls) -> Session {
        self.tls = tls;
        self
    }

    fn user(&mut self) -> Event {
        self.state = State::User;
        command(format!("USER {}", self.login.user))
    }

    /// Ask where the login starts (`PWD`, as aria2c does), so that the control connection can be
    /// kept for another file or range ([`Session::kept`]).
    pub fn asking_base(mut self) -> Session {
        self.ask_base = true;
        self
    }

    /// Goes on from a control connection an earlier session kept (`kept`): no greeting, no
    /// login; the transfer's last reply is read if it was not, then the directory the login
    /// started in is changed back to. The bytes to send first; an error of kind
    /// [`Kind::Stale`] if the connection is not this session's (another login or TLS).
    pub fn go_on(&mut self, kept: Kept) -> Result<Vec<u8>, Error> {
        if self.state != State::Greeting || kept.login != self.login || kept.tls != self.tls {
            return Err(error(
                Kind::Stale,
                "the kept connection is logged in for another session".into(),
            ));
        }
        self.ask_base = true;
        self.base = Some(kept.base);
        match kept.ended {
            true => match self.home() {
                Event::Send(b) => Ok(b),
                _ => Ok(Vec::new()),
            },
            false => {
                self.state = State::Final;
                Ok(Vec::new())
            }
        }
    }

    fn home(&mut self) -> Event {
        self.state = State::Home;
        command(format!("CWD {}", self.base.as_deref().unwrap_or("/")))
    }

    /// What this session leaves for the next one on its control connection, once its bytes are
    /// all in: only a transfer that went to the file's end (the server ends it itself, with
    /// one last reply) of a session that knows where its login started.
    pub fn kept(&self) -> Option<Kept> {
        let ended = match self.state {
            State::Done => false,
            State::Ended => true,
            _ => return None,
        };
        let to_the_end = match (self.range, self.size) {
            (Some((_, Some(last))), Some(size)) => last.saturating_add(1) >= size,
            (Some((_, Some(_))), None) => false,
            _ => true,
        };
        let base = self.base.clone().filter(|_| to_the_end)?;
        Some(Kept {
            login: self.login.clone(),
            tls: self.tls,
            base,
            ended,
        })
    }

    /// Whether the session is still coming back on a kept connection: a failure now is the
    /// connection's (closed while it was kept), not the file's.
    pub fn stale(&self) -> bool {
        matches!(self.state, State::Final | State::Home)
    }

    /// Ask the file's modification time (`MDTM`, for `-R`).
    pub fn with_time(mut self) -> Session {
        self.ask_time = true;
        self
    }

    /// Active mode: the server connects to the client for the data (`PORT`, `EPRT`).
    pub fn active(mut self) -> Session {
        self.passive = false;
        self
    }

    /// The socket the server is to connect to listens at `addr` (active mode): tell the server.
    pub fn listening(&mut self, addr: std::net::SocketAddr) -> Event {
        if self.state != State::Listening {
            return Event::Fail(error(
                Kind::Permanent,
                "a listening socket nobody asked for".into(),
            ));
        }
        self.state = State::Eprt(addr);
        let family = if addr.is_ipv4() { 1 } else { 2 };
        command(format!("EPRT |{family}|{}|{}|", addr.ip(), addr.port()))
    }

    /// The first bytes to send: none, the server speaks first.
    pub fn start(&self) -> Vec<u8> {
        Vec::new()
    }

    /// Bytes from the control connection: how many were taken, and what now. Bytes not taken
    /// are given again with the next ones.
    pub fn received(&mut self, bytes: &[u8]) -> (usize, Event) {
        match reply::parse(bytes) {
            Ok(None) => (0, Event::Wait),
            Ok(Some((used, r))) => (used, self.on_reply(&r)),
            Err(m) => (0, Event::Fail(error(Kind::Permanent, m))),
        }
    }

    /// The data connection is connected: ask for the file from the range's first byte.
    pub fn data_ready(&mut self) -> Event {
        if self.state != State::Connecting {
            return Event::Fail(error(
                Kind::Permanent,
                "a data connection nobody asked for".into(),
            ));
        }
        self.rest_or_retr()
    }

    fn first(&self) -> u64 {
        self.range.map_or(0, |r| r.0)
    }

    fn retr(&mut self) -> Event {
        self.state = State::Retr;
        command(format!("RETR {}", self.name))
    }

    fn after_cwd(&mut self, next: usize) -> Event {
        match self.dirs.get(next) {
            Some(d) => {
                self.state = State::Cwd(next);
                command(format!("CWD {d}"))
            }
            None => {
                self.state = State::Size;
                command(format!("SIZE {}", self.name))
            }
        }
    }

    fn on_reply(&mut self, r: &Reply) -> Event {
        let said = || format!("{} {}", r.code, reply::shorten(&r.text));
        if r.code == 421 {
            return Event::Fail(Error {
                kind: if self.stale() {
                    Kind::Stale
                } else {
                    Kind::Transient
                },
                message: format!("the server closes the connection: {}", said()),
                reply: Some(r.code),
            });
        }
        if r.preliminary() && !matches!(self.state, State::Retr) {
            // (120 "ready in a few minutes" before the greeting, and the like.)
            return Event::Wait;
        }
        let failed = |kind: Kind, what: &str| {
            let kind = match (kind, r.transient()) {
                (Kind::Permanent, true) => Kind::Transient,
                (k, _) => k,
            };
            Event::Fail(Error {
                kind,
                message: format!("{what}: the server answered {}", said()),
                reply: Some(r.code),
            })
        };
        match self.state {
            // (Whatever the transfer before ended with, the connection answered: go on.)
            State::Final => self.home(),
            State::Home if r.ok() => self.after_cwd(0),
            State::Home => failed(Kind::Stale, "CWD to the login's directory refused"),
            State::Greeting if r.code == 220 => match self.tls {
                Tls::None => self.user(),
                Tls::Explicit => {
                    self.state = State::AuthTls;
                    command("AUTH TLS".into())
                }
                Tls::Implicit => {
                    self.state = State::Pbsz;
                    command("PBSZ 0".into())
                }
            },
            State::Greeting => failed(Kind::Permanent, "no greeting"),
            State::AuthTls if r.code == 234 => {
                self.state = State::Pbsz;
                Event::StartTls(b"PBSZ 0\r\n".to_vec())
            }
            State::AuthTls => failed(Kind::NoTls, "AUTH TLS refused"),
            State::Pbsz if r.ok() => {
                self.state = State::Prot;
                command("PROT P".into())
            }
            State::Pbsz => failed(Kind::NoTls, "PBSZ refused"),
            State::Prot if r.ok() => self.user(),
            State::Prot => failed(Kind::NoTls, "a protected data connection refused (PROT P)"),
            State::User | State::Pass if r.code == 230 || r.code == 202 => {
                self.state = State::Type;
                command(format!("TYPE {}", if self.ascii { "A" } else { "I" }))
            }
            State::User if r.code == 331 => {
                self.state = State::Pass;
                command(format!("PASS {}", self.login.pass))
            }
            State::User | State::Pass if r.code == 530 || r.code == 332 => {
                failed(Kind::Login, "login failed")
            }
            State::User | State::Pass => failed(Kind::Permanent, "login failed"),
            State::Type if r.ok() && self.ask_base => {
                self.state = State::Pwd;
                command("PWD".into())
            }
            State::Type if r.ok() => self.after_cwd(0),
            State::Pwd => {
                // A directory that cannot be read back in a command only keeps the connection
                // from being kept.
                self.base = (r.code == 257)
                    .then(|| reply::pwd_dir(&r.text))
                    .flatten()
                    .filter(|d| fits_command("the directory", d).is_ok());
                self.after_cwd(0)
            }
            State::Type => failed(Kind::Permanent, "TYPE refused"),
            State::Cwd(i) if r.ok() => self.after_cwd(i + 1),
            State::Cwd(_) if r.code == 550 => failed(Kind::NotFound, "no such directory"),
            State::Cwd(_) => failed(Kind::Permanent, "CWD refused"),
            State::Size if r.code == 213 => match r.text.trim().parse::<u64>() {
                Ok(n) => {
                    self.size = Some(n);
                    self.mdtm()
                }
                Err(_) => failed(Kind::Permanent, "a SIZE that is not a number"),
            },
            State::Size if r.code == 550 => failed(Kind::NotFound, "no such file"),
            // SIZE not understood (500, 502) or refused in this mode: the length is unknown.
            State::Size => self.mdtm(),
            // A time that cannot be read, or none, changes nothing (as a bad Last-Modified).
            State::Mdtm => {
                if r.code == 213 {
                    self.modified = reply::mdtm_time(&r.text);
                }
                self.epsv()
            }
            State::Epsv if r.code == 229 => match reply::epsv_port(&r.text) {
                Some(p) if p != 0 => self.open_data(p),
                _ => failed(Kind::Permanent, "an EPSV reply without a port"),
            },
            State::Epsv => {
                self.state = State::Pasv;
                command("PASV".into())
            }
            State::Pasv if r.code == 227 => match reply::pasv_port(&r.text) {
                Some(p) if p != 0 => self.open_data(p),
                _ => failed(Kind::Permanent, "a PASV reply without a port"),
            },
            State::Pasv => failed(Kind::Permanent, "passive mode refused"),
            State::Connecting | State::Listening => {
                failed(Kind::Permanent, "a reply while the data connection opens")
            }
            State::Eprt(_) | State::Port if r.ok() => self.rest_or_retr(),
            State::Eprt(std::net::SocketAddr::V4(a)) if !r.transient() => {
                // EPRT not understood: PORT says the same for IPv4.
                self.state = State::Port;
                let [h1, h2, h3, h4] = a.ip().octets();
                let (p1, p2) = (a.port() >> 8, a.port() & 0xff);
                command(format!("PORT {h1},{h2},{h3},{h4},{p1},{p2}"))
            }
            State::Eprt(_) | State::Port => failed(Kind::Permanent, "active mode refused"),
            State::Rest if r.code == 350 => self.retr(),
            State::Rest => failed(Kind::NoResume, "REST refused"),
            State::Retr if r.code == 125 || r.code == 150 => self.transfer(),
            State::Retr if r.preliminary() => Event::Wait,
            State::Retr if r.code == 550 => failed(Kind::NotFound, "RETR refused"),
            State::Retr => failed(Kind::Permanent, "RETR refused"),
            // The transfer's last reply (226, or 426 for one the client cut short).
            State::Done if r.ok() || r.transient() => {
                self.state = State::Ended;
                Event::Wait
            }
            State::Done => failed(Kind::Permanent, "the transfer failed"),
            State::Ended => failed(Kind::Permanent, "a reply nobody asked for"),
        }
    }

    /// After SIZE: the modification time, if asked for.
    fn mdtm(&mut self) -> Event {
        if !self.ask_time {
            return self.epsv();
        }
        self.state = State::Mdtm;
        command(format!("MDTM {}", self.name))
    }

    /// Then the data connection, passive (EPSV first) or active.
    fn epsv(&mut self) -> Event {
        if !self.passive {
            self.state = State::Listening;
            return Event::Listen;
        }
        self.state = State::Epsv;
        command("EPSV".into())
    }

    /// The data connection is there (or will be): go on from the range's first byte.
    fn rest_or_retr(&mut self) -> Event {
        match self.first() {
            0 => self.retr(),
            n => {
                self.state = State::Rest;
                command(format!("REST {n}"))
            }
        }
    }

    fn open_data(&mut self, port: u16) -> Event {
        self.state = State::Connecting;
        Event::OpenData(port)
    }

    fn transfer(&mut self) -> Event {
        self.state = State::Done;
        let first = self.first();
        let end = match self.range {
            Some((_, Some(last))) => Some(last + 1),
            _ => self.size,
        };
        // ASCII mode may send more bytes than SIZE said (line ends rewritten): they are cut at
        // the length, as aria2c does.
        let length = end.map(|e| e.saturating_sub(first));
        Event::Transfer {
            size: self.size,
            first,
            length,
            modified: self.modified,
        }
    }
}

fn command(line: String) -> Event {
    let mut b = line.into_bytes();
    b.extend_from_slice(b"\r\n");
    Event::Send(b)
}

/// `%XX` escapes of a URI's path segment decoded; the bytes must be UTF-8.
fn percent_decode(s: &str) -> Result<String, String> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            let hex = b
                .get(i + 1..i + 3)
                .and_then(|h| std::str::from_utf8(h).ok());
            match hex.and_then(|h| u8::from_str_radix(h, 16).ok()) {
                Some(v) => {
                    out.push(v);
                    i += 3;
                    continue;
                }
                None => return Err(format!("a bad %-escape in the path: {s}")),
            }
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8(out).map_err(|_| format!("the path is not UTF-8: {s}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn explicit_tls_asks_auth_tls_then_protects_the_data_and_implicit_skips_to_pbsz() {
        let send = |e: Event| match e {
            Event::Send(b) => String::from_utf8(b).expect("text"),
            other => panic!("{other:?}"),
        };
        let mut s = Session::new("/f", Login::default(), false, None)
            .expect("session")
            .with_tls(Tls::Explicit);
        assert_eq!(send(s.received(b"220 hi\r\n").1), "AUTH TLS\r\n");
        assert_eq!(
            s.received(b"234 go\r\n").1,
            Event::StartTls(b"PBSZ 0\r\n".to_vec())
        );
        assert_eq!(send(s.received(b"200 ok\r\n").1), "PROT P\r\n");
        assert_eq!(send(s.received(b"200 ok\r\n").1), "USER anonymous\r\n");
        // A server without TLS: the session fails (never goes on in the clear).
        let mut s = Session::new("/f", Login::default(), false, None)
            .expect("session")
            .with_tls(Tls::Explicit);
        s.received(b"220 hi\r\n");
        assert!(matches!(s.received(b"500 what\r\n").1, Event::Fail(_)));
        let mut s = Session::new("/f", Login::default(), false, None)
            .expect("session")
            .with_tls(Tls::Implicit);
        assert_eq!(send(s.received(b"220 hi\r\n").1), "PBSZ 0\r\n");
        let mut s = Session::new("/f", Login::default(), false, None)
            .expect("session")
            .with_tls(Tls::Implicit);
        s.received(b"220 hi\r\n");
        s.received(b"200 ok\r\n");
        assert!(matches!(s.received(b"534 no\r\n").1, Event::Fail(_)));
    }

    fn sends(e: (usize, Event)) -> String {
        match e.1 {
            Event::Send(b) => String::from_utf8(b).expect("UTF-8"),
            other => panic!("{other:?}"),
        }
    }

    fn session(path: &str, range: Option<(u64, Option<u64>)>) -> Session {
        Session::new(path, Login::default(), false, range).expect("a session")
    }

    #[test]
    fn a_range_is_asked_for_as_aria2c_does_with_epsv_first() {
        let mut s = session("/pub/a%20b/f.bin", Some((100, Some(199))));
        assert!(s.start().is_empty());
        assert_eq!(s.received(b"220 ").1, Event::Wait);
        assert_eq!(sends(s.received(b"220 hi\r\n")), "USER anonymous\r\n");
        assert_eq!(sends(s.received(b"331 pw\r\n")), "PASS ARIA2USER@\r\n");
        assert_eq!(sends(s.received(b"230 ok\r\n")), "TYPE I\r\n");
        assert_eq!(sends(s.received(b"200 ok\r\n")), "CWD pub\r\n");
        assert_eq!(sends(s.received(b"250 ok\r\n")), "CWD a b\r\n");
        assert_eq!(sends(s.received(b"250 ok\r\n")), "SIZE f.bin\r\n");
        assert_eq!(sends(s.received(b"213 3000\r\n")), "EPSV\r\n");
        assert_eq!(sends(s.received(b"500 what\r\n")), "PASV\r\n");
        let pasv = b"227 Entering Passive Mode (10,9,8,7,117,53).\r\n";
        assert_eq!(s.received(pasv).1, Event::OpenData(117 * 256 + 53));
        assert_eq!(s.data_ready(), Event::Send(b"REST 100\r\n".to_vec()));
        assert_eq!(sends(s.received(b"350 ok\r\n")), "RETR f.bin\r\n");
        let (_, e) = s.received(b"150 Opening BINARY mode data connection\r\n");
        assert_eq!(
            e,
            Event::Transfer {
                size: Some(3000),
                first: 100,
                length: Some(100),
                modified: None,
            }
        );
    }

    #[test]
    fn a_whole_file_of_unknown_size_is_read_to_the_close() {
        let mut s = session("/f", None);
        s.received(b"220 hi\r\n");
        assert_eq!(
            sends(s.received(b"230 no password needed\r\n")),
            "TYPE I\r\n"
        );
        assert_eq!(sends(s.received(b"200 ok\r\n")), "SIZE f\r\n");
        assert_eq!(sends(s.received(b"502 no SIZE\r\n")), "EPSV\r\n");
        let epsv = b"229 Entering Extended Passive Mode (|||6446|)\r\n";
        assert_eq!(s.received(epsv).1, Event::OpenData(6446));
        assert_eq!(s.data_ready(), Event::Send(b"RETR f\r\n".to_vec()));
        assert_eq!(
            s.received(b"125 go\r\n").1,
            Event::Transfer {
                size: None,
                first: 0,
                length: None,
                modified: None,
            }
        );
    }

    #[test]
    fn active_mode_listens_then_says_where_with_eprt_or_port() {
        let mut s = session("/f", Some((7, None))).active();
        s.received(b"220 hi\r\n");
        s.received(b"230 ok\r\n");
        s.received(b"200 ok\r\n");
        assert_eq!(s.received(b"213 10\r\n").1, Event::Listen);
        let at: std::net::SocketAddr = "127.0.0.1:4000".parse().expect("an address");
        assert_eq!(
            s.listening(at),
            Event::Send(b"EPRT |1|127.0.0.1|4000|\r\n".to_vec())
        );
        assert_eq!(
            sends(s.received(b"500 EPRT?\r\n")),
            "PORT 127,0,0,1,15,160\r\n"
        );
        assert_eq!(sends(s.received(b"200 ok\r\n")), "REST 7\r\n");
        assert_eq!(sends(s.received(b"350 ok\r\n")), "RETR f\r\n");
        let (_, e) = s.received(b"150 connecting to you\r\n");
        assert_eq!(
            e,
            Event::Transfer {
                size: Some(10),
                first: 7,
                length: Some(3),
                modified: None,
            }
        );
        let mut s = session("/f", None).active();
        for r in [
            &b"220 hi\r\n"[..],
            b"230 ok\r\n",
            b"200 ok\r\n",
            b"213 10\r\n",
        ] {
            s.received(r);
        }
        let v6: std::net::SocketAddr = "[::1]:4000".parse().expect("an address");
        assert_eq!(sends((0, s.listening(v6))), "EPRT |2|::1|4000|\r\n");
        assert!(matches!(s.received(b"500 no\r\n").1, Event::Fail(_)));
    }

    #[test]
    fn failures_say_why_with_the_kind_aria2c_exits_by() {
        let fail = |path: &str, replies: &[&[u8]]| {
            let mut s = session(path, None);
            let mut last = Event::Wait;
            for r in replies {
                last = s.received(r).1;
                if s.state == State::Connecting {
                    last = s.data_ready();
                }
            }
            match last {
                Event::Fail(e) => e.kind,
                other => panic!("{other:?}"),
            }
        };
        let login: &[&[u8]] = &[b"220 hi\r\n", b"331 pw\r\n", b"530 Login incorrect.\r\n"];
        assert_eq!(fail("/f", login), Kind::Login);
        let gone: &[&[u8]] = &[b"220 hi\r\n", b"230 ok\r\n", b"200 ok\r\n", b"550 no\r\n"];
        assert_eq!(fail("/f", gone), Kind::NotFound);
        assert_eq!(fail("/d/f", gone), Kind::NotFound, "a missing directory");
        let busy: &[&[u8]] = &[b"421 Too many users\r\n"];
        assert_eq!(fail("/f", busy), Kind::Transient);
        let retr: &[&[u8]] = &[
            b"220 hi\r\n",
            b"230 ok\r\n",
            b"200 ok\r\n",
            b"213 5\r\n",
            b"229 (|||5000|)\r\n",
            b"451 local error\r\n",
        ];
        assert_eq!(fail("/f", retr), Kind::Transient);
        assert_eq!(fail("/f", &[b"SSH-2.0-OpenSSH\r\n"]), Kind::Permanent);
        let no_port: &[&[u8]] = &[
            b"220 hi\r\n",
            b"230 ok\r\n",
            b"200 ok\r\n",
            b"213 5\r\n",
            b"229 (|||0|)\r\n",
        ];
        assert_eq!(fail("/f", no_port), Kind::Permanent);
    }

    /// Logs in asking where (PWD), fetches `/pub/f` whole, and reads the transfer's last reply
    /// if `ended`: what the session leaves.
    fn kept_after(range: Option<(u64, Option<u64>)>, ended: bool) -> Option<Kept> {
        let mut s = session("/pub/f", range).asking_base();
        for r in [&b"220 hi\r\n"[..], b"230 ok\r\n"] {
            s.received(r);
        }
        assert_eq!(sends(s.received(b"200 ok\r\n")), "PWD\r\n");
        let pwd = b"257 \"/home/al\" is the current directory\r\n";
        assert_eq!(sends(s.received(pwd)), "CWD pub\r\n");
        s.received(b"250 ok\r\n");
        s.received(b"213 100\r\n");
        assert_eq!(s.received(b"229 (|||5000|)\r\n").1, Event::OpenData(5000));
        s.data_ready();
        if range.is_some_and(|r| r.0 > 0) {
            s.received(b"350 ok\r\n");
        }
        assert!(matches!(
            s.received(b"150 go\r\n").1,
            Event::Transfer { .. }
        ));
        if ended {
            assert_eq!(s.received(b"226 done\r\n").1, Event::Wait);
        }
        s.kept()
    }

    #[test]
    fn a_session_that_read_to_the_end_leaves_its_connection_for_the_next() {
        let kept = kept_after(None, true).expect("kept");
        // The next file: back to where the login started, then into its directories.
        let mut s = session("/d/g", Some((10, None))).asking_base();
        assert_eq!(s.go_on(kept).expect("goes on"), b"CWD /home/al\r\n");
        assert!(s.stale(), "back where it started only once CWD is answered");
        assert_eq!(sends(s.received(b"250 ok\r\n")), "CWD d\r\n");
        assert!(!s.stale());
        assert_eq!(sends(s.received(b"250 ok\r\n")), "SIZE g\r\n");
        // The transfer's last reply not read yet: it is read first, whatever it says.
        let kept = kept_after(Some((50, None)), false).expect("kept");
        let mut s = session("/g", None).asking_base();
        assert!(s.go_on(kept).expect("goes on").is_empty());
        assert_eq!(s.received(b"226-done\r\n").1, Event::Wait);
        assert_eq!(sends(s.received(b"226 done\r\n")), "CWD /home/al\r\n");
        // A server that closed it meanwhile: stale, not the file's failure.
        let kept = kept_after(None, true).expect("kept");
        let mut s = session("/g", None).asking_base();
        s.go_on(kept).expect("goes on");
        match s.received(b"421 Timeout.\r\n").1 {
            Event::Fail(e) => assert_eq!(e.kind, Kind::Stale),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_connection_is_kept_only_for_the_same_login_after_a_transfer_to_the_files_end() {
        assert!(kept_after(Some((0, Some(49))), true).is_none(), "cut short");
        assert!(kept_after(Some((0, Some(99))), true).is_some());
        let mut s = session("/f", None);
        for r in [&b"220 hi\r\n"[..], b"230 ok\r\n", b"200 ok\r\n"] {
            s.received(r);
        }
        assert_eq!(sends(s.received(b"213 5\r\n")), "EPSV\r\n", "no PWD asked");
        assert!(s.kept().is_none(), "nothing transferred");
        let kept = kept_after(None, true).expect("kept");
        let other = Login {
            user: "bo".into(),
            pass: "x".into(),
        };
        let mut s = Session::new("/f", other, false, None).expect("session");
        assert_eq!(
            s.go_on(kept.clone()).expect_err("another login").kind,
            Kind::Stale
        );
        let mut s = session("/f", None).with_tls(Tls::Explicit);
        assert_eq!(s.go_on(kept).expect_err("another TLS").kind, Kind::Stale);
        // A directory that no command can carry keeps nothing.
        let mut s = session("/f", None).asking_base();
        for r in [&b"220 hi\r\n"[..], b"230 ok\r\n", b"200 ok\r\n"] {
            s.received(r);
        }
        s.received(b"257 \"/a\r\nDELE x\" here\r\n");
        s.received(b"213 5\r\n");
        s.received(b"229 (|||5000|)\r\n");
        s.data_ready();
        s.received(b"150 go\r\n");
        assert!(s.kept().is_none());
    }

    #[test]
    fn names_that_would_inject_a_command_or_name_a_directory_are_refused() {
        for path in ["/d/", "/"] {
            let e = Session::new(path, Login::default(), false, None).expect_err(path);
            assert_eq!(e.kind, Kind::NoFile, "{path}");
        }
        for path in ["/a%0d%0aDELE%20x", "/f%00", "/%zz", "/%ff"] {
            let e = Session::new(path, Login::default(), false, None).expect_err(path);
            assert_eq!(e.kind, Kind::BadUri, "{path}");
        }
        let login = Login {
            user: "u\r\nDELE x".into(),
            pass: "p".into(),
        };
        assert!(Session::new("/f", login, false, None).is_err());
        let s = Session::new("/f", Login::default(), true, None).expect("a session");
        let mut s = s;
        s.received(b"220 hi\r\n");
        assert_eq!(sends(s.received(b"230 ok\r\n")), "TYPE A\r\n");
    }
}
