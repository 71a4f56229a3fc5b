//! SFTP as one of the engine's sources: `crate::ssh`'s session (no I/O) as a
//! `sources::Conversation` whose body is wrapped (SSH packets, SFTP replies) and unwrapped by it,
//! the host key checked against `--ssh-host-key-md` or the user's known_hosts, the login as
//! aria2c takes it for SFTP, the user's keys tried first, and failures as aria2c says them.
use super::config::DownloadOptions;
use super::job::Failure;
use super::sources::{Answer, Conversation, Step};
use super::ExitCode;
use crate::http::Framing;
use crate::ssh::keys::{KeyError, UserKey};
use crate::ssh::known_hosts::{self, Verdict};
use crate::ssh::{ErrorKind, Event, Login, Session};
use std::path::PathBuf;
use url::Url;

/// How the server's host key is checked.
struct HostCheck {
    /// The name known_hosts records the server under.
    name: String,
    /// `--ssh-host-key-md`'s type and hex digest: then only this decides.
    md: Option<(String, String)>,
    /// The user's known_hosts file (read, and added to) and the system's (read).
    user_file: Option<PathBuf>,
    known: String,
}

impl HostCheck {
    fn new(url: &Url, md: Option<&str>) -> HostCheck {
        let host = url.host_str().unwrap_or("").trim_matches(['[', ']']);
        let name = known_hosts::host_name(host, url.port().unwrap_or(22));
        let md = md
            .and_then(|m| m.split_once('='))
            .map(|(k, d)| (k.to_ascii_lowercase(), d.to_ascii_lowercase()));
        let user_file = home().map(|h| h.join(".ssh/known_hosts"));
        let mut known = String::new();
        for f in [
            Some(PathBuf::from("/etc/ssh/ssh_known_hosts")),
            user_file.clone(),
        ]
        .into_iter()
        .flatten()
        {
            if let Ok(t) = std::fs::read_to_string(f) {
                known.push_str(&t);
                known.push('\n');
            }
        }
        HostCheck {
            name,
            md,
            user_file,
            known,
        }
    }

    /// Host-key types to ask the server for first.
    fn known_types(&self) -> Vec<String> {
        match self.md {
            Some(_) => Vec::new(),
            None => known_hosts::known_types(&self.known, &self.name),
        }
    }

    /// Whether `key` is the server's; a notice to give when it was added to known_hosts.
    fn check(&self, key: &[u8]) -> Result<Option<String>, Failure> {
        let fatal = |m: String| Failure::fatal(ExitCode::UNKNOWN, m);
        if let Some((kind, want)) = &self.md {
            let got = known_hosts::digest_hex(kind, key).unwrap_or_default();
            return match got == *want {
                true => Ok(None),
                false => Err(fatal(format!(
                    "Unexpected SSH host key: expected {want}, actual {got}"
                ))),
            };
        }
        let kind = known_hosts::key_type(key).unwrap_or("?");
        let fp = known_hosts::fingerprint(key);
        let file = self
            .user_file
            .as_ref()
            .map(|f| f.display().to_string())
            .unwrap_or_else(|| "known_hosts".into());
        match known_hosts::check(&self.known, &self.name, key) {
            Verdict::Known => Ok(None),
            Verdict::Changed { .. } => Err(fatal(format!(
                "SSH host key of {} changed: it is now {kind} {fp}, not the one {file} has; \
                 if the change is expected, remove the old key (ssh-keygen -R '{}')",
                self.name, self.name
            ))),
            Verdict::OtherType => Err(fatal(format!(
                "SSH host key of {} is a {kind} key ({fp}), while {file} knows it by keys of \
                 other types only",
                self.name
            ))),
            Verdict::New => {
                // Another connection of this run (split) may have added it since this one read
                // the file: then it is known, and not added twice.
                let now = self
                    .user_file
                    .as_ref()
                    .and_then(|f| std::fs::read_to_string(f).ok());
                if now.is_some_and(|t| known_hosts::check(&t, &self.name, key) == Verdict::Known) {
                    return Ok(None);
                }
                let line = known_hosts::line_for(&self.name, key);
                match self.user_file.as_ref().map(|f| add_line(f, &line)) {
                    Some(Ok(())) => Ok(Some(format!(
                        "Added the SSH host key of {} ({kind} {fp}) to {file}",
                        self.name
                    ))),
                    _ => Ok(Some(format!(
                        "The SSH host key of {} ({kind} {fp}) is taken for this run: {file} \
                         could not be written",
                        self.name
                    ))),
                }
            }
        }
    }
}

fn home() -> Option<PathBuf> {
    std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .map(PathBuf::from)
}

/// Appends `line` to known_hosts file `f`, making `~/.ssh` (mode 700) when it is missing.
fn add_line(f: &std::path::Path, line: &str) -> std::io::Result<()> {
    use std::io::Write as _;
    use std::os::unix::fs::{DirBuilderExt as _, OpenOptionsExt as _};
    if let Some(dir) = f.parent().filter(|d| !d.exists()) {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)?;
    }
    let mut file = std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .mode(0o644)
        .open(f)?;
    file.write_all(line.as_bytes())
}

/// The user's private keys OpenSSH would offer by default that can be used here; notices for
/// those that cannot.
fn user_keys() -> (Vec<UserKey>, Vec<String>) {
    let (mut keys, mut notes) = (Vec::new(), Vec::new());
    let Some(home) = home() else {
        return (keys, notes);
    };
    for name in ["id_ed25519", "id_ecdsa", "id_rsa"] {
        let path = home.join(".ssh").join(name);
        let Ok(text) = std::fs::read_to_string(&path) else {
            continue;
        };
        match UserKey::from_openssh(&text) {
            Ok(k) => keys.push(k),
            Err(KeyError::Encrypted) => notes.push(format!(
                "{} is protected by a passphrase: not used",
                path.display()
            )),
            Err(_) => notes.push(format!("{} could not be read as a key", path.display())),
        }
    }
    (keys, notes)
}

/// One request to the ssh-agent at `sock` and its answer (a local socket: a few milliseconds;
/// an agent that does not answer within the time below is given up).
fn agent_ask(sock: &std::path::Path, request: &[u8]) -> Option<Vec<u8>> {
    use std::io::{Read as _, Write as _};
    let mut s = std::os::unix::net::UnixStream::connect(sock).ok()?;
    let limit = Some(std::time::Duration::from_secs(10));
    s.set_read_timeout(limit).ok()?;
    s.set_write_timeout(limit).ok()?;
    s.write_all(request).ok()?;
    let mut answer = vec![0u8; 4];
    s.read_exact(&mut answer).ok()?;
    let n = crate::ssh::keys::agent::answer_len(&answer)?;
    answer.resize(n, 0);
    s.read_exact(&mut answer[4..]).ok()?;
    Some(answer)
}

/// The keys the agent at `sock` holds that can sign here.
fn agent_keys(sock: &std::path::Path) -> Vec<UserKey> {
    let Some(answer) = agent_ask(sock, &crate::ssh::keys::agent::list_request()) else {
        return Vec::new();
    };
    crate::ssh::keys::agent::keys(&answer)
        .iter()
        .filter_map(|b| UserKey::from_agent(b))
        .collect()
}

fn agent_sign(sock: &std::path::Path, blob: &[u8], data: &[u8], flags: u32) -> Option<Vec<u8>> {
    let request = crate::ssh::keys::agent::sign_request(blob, data, flags);
    crate::ssh::keys::agent::signature(&agent_ask(sock, &request)?)
}

/// A URI's part with its `%XX` escapes decoded, as bytes.
fn decode(s: &str) -> Vec<u8> {
    percent_encoding::percent_decode_str(s).collect()
}

/// One exchange with an SFTP server: SSH, the login, the file opened and its range read.
pub struct SftpConversation {
    url: Url,
    login: Option<Login>,
    check: HostCheck,
    remote_time: bool,
    range: Option<(u64, Option<u64>)>,
    session: Option<Session>,
    answer: Option<Answer>,
    failed: Option<Failure>,
    notices: Vec<String>,
}

impl SftpConversation {
    /// The conversation for `url` with `opts`; `netrc`: the netrc file's entry for its host.
    pub fn new(
        url: &Url,
        opts: &DownloadOptions,
        netrc: Option<&crate::http::auth::Credentials>,
    ) -> SftpConversation {
        let (user, password) = super::ftp::given_login(url, opts, netrc);
        // No user given anywhere: the local one, as ssh and sftp do (aria2c logs in as
        // `anonymous`, which an SSH server hardly ever has).
        let user = user
            .or_else(|| std::env::var("USER").ok().filter(|u| !u.is_empty()))
            .or_else(|| std::env::var("LOGNAME").ok().filter(|u| !u.is_empty()))
            .unwrap_or_else(|| "anonymous".into());
        let (mut keys, notices) = user_keys();
        let agent = std::env::var_os("SSH_AUTH_SOCK")
            .filter(|s| !s.is_empty())
            .map(PathBuf::from);
        let mut signer: Option<Box<crate::ssh::sftp::AgentSigner>> = None;
        if let Some(sock) = agent {
            // The agent's keys first, as OpenSSH offers them (a key file the agent also holds
            // is offered once).
            let held = agent_keys(&sock);
            if !held.is_empty() {
                keys.retain(|k| !held.iter().any(|h| h.public_blob() == k.public_blob()));
                let mut all = held;
                all.append(&mut keys);
                keys = all;
                signer = Some(Box::new(move |blob: &[u8], data: &[u8], flags: u32| {
                    agent_sign(&sock, blob, data, flags)
                }));
            }
        }
        SftpConversation {
            url: url.clone(),
            login: Some(Login {
                user,
                password,
                keys,
                agent: signer,
            }),
            check: HostCheck::new(url, opts.ssh_host_key_md.as_deref()),
            remote_time: opts.remote_time,
            range: None,
            session: None,
            answer: None,
            failed: None,
            notices,
        }
    }

    fn failure(&self, e: crate::ssh::Error) -> Failure {
        let path = String::from_utf8_lossy(&decode(self.url.path())).into_owned();
        let m = e.message;
        match e.kind {
            ErrorKind::NotFound | ErrorKind::NotAFile => Failure::fatal(
                ExitCode::UNKNOWN,
                format!("SSH opening SFTP path {path} failed: {m}"),
            ),
            ErrorKind::Auth | ErrorKind::HostKey => Failure::fatal(ExitCode::UNKNOWN, m),
            ErrorKind::Sftp => Failure::fatal(ExitCode::UNKNOWN, format!("SFTP: {m}")),
            ErrorKind::Protocol | ErrorKind::Crypto | ErrorKind::Disconnected => {
                Failure::retry(ExitCode::UNKNOWN, format!("SSH: {m}"))
            }
            ErrorKind::Short => Failure::retry(ExitCode::UNKNOWN, format!("SFTP: {m}")),
        }
    }

    /// Acts on the session's events until it needs more bytes or the file is open.
    fn drive(&mut self, bytes: &[u8]) -> Result<(), Failure> {
        let mut input = bytes;
        loop {
            let Some(s) = self.session.as_mut() else {
                return Err(Failure::fatal(ExitCode::UNKNOWN, "no SFTP session"));
            };
            let event = s.received(input);
            input = &[];
            let event = match event {
                Ok(e) => e,
                Err(e) => return Err(self.failure(e)),
            };
            match event {
                Event::Wait => return Ok(()),
                Event::HostKey(key) => {
                    if let Some(n) = self.check.check(&key)? {
                        self.notices.push(n);
                    }
                    if let Some(s) = self.session.as_mut() {
                        s.host_key_checked();
                    }
                }
                Event::Opened { size, mtime } => {
                    let Some(size) = size else {
                        return Err(Failure::fatal(
                            ExitCode::UNKNOWN,
                            "the SFTP server does not say the file's size",
                        ));
                    };
                    let (first, last) = self.range.unwrap_or((0, None));
                    let end = last.map_or(size, |l| l.saturating_add(1).min(size));
                    if first > size || (first == size && size > 0) {
                        return Err(Failure::retry(
                            ExitCode::UNKNOWN,
                            format!("the file is {size} bytes: there is nothing from byte {first}"),
                        ));
                    }
                    if let Some(s) = self.session.as_mut() {
                        s.read(first, end);
                    }
                    let modified = mtime
                        .filter(|_| self.remote_time)
                        .map(|t| std::time::UNIX_EPOCH + std::time::Duration::from_secs(t as u64));
                    self.answer = Some(Answer {
                        total: Some(size),
                        first,
                        framing: Framing::Length(end - first),
                        ranges: true,
                        name: None,
                        keep_alive: false,
                        on_data: false,
                        modified,
                        wrapped: true,
                    });
                    return Ok(());
                }
            }
        }
    }
}

impl Conversation for SftpConversation {
    fn begin(&mut self, url: &Url, range: Option<(u64, Option<u64>)>) -> Vec<u8> {
        self.range = range;
        let path = decode(url.path());
        if path.is_empty() || path.ends_with(b"/") {
            self.failed = Some(Failure::fatal(
                ExitCode::UNKNOWN,
                format!("FTP/SFTP URI {url} doesn't contain file path."),
            ));
            return Vec::new();
        }
        if path.contains(&0) {
            self.failed = Some(Failure::fatal(
                ExitCode::UNKNOWN,
                format!("the SFTP path of {url} holds a NUL byte"),
            ));
            return Vec::new();
        }
        let Some(login) = self.login.take() else {
            return Vec::new();
        };
        let mut s = Session::new(&path, login, &self.check.known_types());
        let out = s.take_out();
        self.session = Some(s);
        out
    }

    fn received(&mut self, bytes: &[u8]) -> (usize, Step) {
        if let Some(f) = self.failed.clone() {
            return (0, Step::Fail(f));
        }
        if let Err(f) = self.drive(bytes) {
            self.failed = Some(f.clone());
            return (bytes.len(), Step::Fail(f));
        }
        // The answer first, whatever is to be sent with it (the first reads, a reply to a
        // request the server made meanwhile): that goes out through `outgoing`, so the answer is
        // never left behind a `Send` while the file's data comes in.
        if let Some(a) = self.answer.take() {
            return (bytes.len(), Step::Answer(a));
        }
        let out = self
            .session
            .as_mut()
            .map(|s| s.take_out())
            .unwrap_or_default();
        match out.is_empty() {
            true => (bytes.len(), Step::Wait),
            false => (bytes.len(), Step::Send(out)),
        }
    }

    fn unwrap(
        &mut self,
        data: &mut [u8],
        room: usize,
        place: &mut dyn FnMut(&[u8]),
    ) -> Result<(usize, bool), Failure> {
        let Some(s) = self.session.as_mut() else {
            return Err(Failure::fatal(ExitCode::UNKNOWN, "no SFTP session"));
        };
        s.unwrap(data, room, place).map_err(|e| self.failure(e))
    }

    fn outgoing(&mut self) -> Vec<u8> {
        self.session
            .as_mut()
            .map(|s| s.take_out())
            .unwrap_or_default()
    }

    fn notices(&mut self) -> Vec<String> {
        std::mem::take(&mut self.notices)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ssh::wire::Writer;

    /// Runs `conv` over `bytes` as `sink::converse` does: again after each `Send` that took
    /// bytes, until it waits or answers; the last step.
    fn converse(conv: &mut SftpConversation, bytes: &[u8]) -> Step {
        let mut input = bytes;
        loop {
            let (used, step) = conv.received(input);
            match step {
                Step::Send(_) if used > 0 => input = &[],
                other => return other,
            }
        }
    }

    #[test]
    fn the_answer_is_given_even_when_a_server_request_came_with_the_attributes() {
        let argv = ["sftp://u:p@h/d/f"].map(std::ffi::OsString::from);
        let opts = match crate::cli::parse_args(argv) {
            Ok(crate::cli::Command::Download(s)) => s.config.download.clone(),
            Ok(_) => panic!("not a download"),
            Err(e) => panic!("{}", e.message),
        };
        let url = Url::parse("sftp://u:p@h/d/f").expect("a URL");
        let mut conv = SftpConversation::new(&url, &opts, None);
        let _ = conv.begin(&url, None);
        let login = Login {
            user: "u".into(),
            password: Some("p".into()),
            keys: Vec::new(),
            agent: None,
        };
        conv.session = Some(Session::plain_after_kex(b"/d/f", login));
        // The attributes, and in the same bytes a keepalive the server wants answered.
        let mut bytes = crate::ssh::sftp::plain_server_head(100_000);
        let mut g = vec![80u8];
        g.put_string(b"keepalive@openssh.com");
        g.put_bool(true);
        crate::ssh::sftp::plain_packet(&mut bytes, &g);
        match converse(&mut conv, &bytes) {
            Step::Answer(a) => assert_eq!((a.total, a.wrapped), (Some(100_000), true)),
            other => panic!("no answer: {other:?}"),
        }
        // The first reads go out with the answer; the keepalive waits with the session and is
        // answered as the body's bytes are taken.
        assert!(!conv.outgoing().is_empty(), "no reads to send");
        let taken = conv.unwrap(&mut [], usize::MAX, &mut |_| {});
        assert_eq!(taken.ok(), Some((0, false)));
        assert!(!conv.outgoing().is_empty(), "the keepalive is not answered");
    }
}
