//! What the engine can download: which URIs name a source it has a protocol for (HTTP and HTTPS
//! today), and the one-line reason for one it has not. A new protocol is added here first.
//!
//! A protocol other than HTTP comes in through [`Conversation`]: a sans-I/O machine for one
//! exchange over one connection that says what to send, reads what comes back until it can say
//! what the answer means for the file ([`Answer`]); from there the body's bytes go into write
//! blocks, and scheduling, the writer, piece checks, control files and resume work as for HTTP,
//! without knowing the protocol. [`conversation_for`] says which URIs have one. (HTTP keeps its
//! own path: cookies, credentials, proxies, redirects and aria2's status rules are its alone.)
use super::job::Failure;
use crate::http::Framing;
use std::path::Path;
use url::Url;

/// What a source's answer says of the file and of the bytes that follow it on the connection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answer {
    /// The file's length, when the answer says it.
    pub total: Option<u64>,
    /// Where the bytes that follow start in the file: 0, or the first byte of the range asked.
    pub first: u64,
    /// How the bytes that follow end: after a length, or when the peer closes.
    pub framing: Framing,
    /// The source serves ranges.
    pub ranges: bool,
    /// The file's name as the source gives it.
    pub name: Option<String>,
    /// The connection takes another exchange once the body has ended.
    pub keep_alive: bool,
    /// The bytes come on the data connection the conversation had opened ([`Step::Data`]), not
    /// on this one, which waits meanwhile (FTP's control connection).
    pub on_data: bool,
    /// The file's modification time as the source says it (for `-R`).
    pub modified: Option<std::time::SystemTime>,
    /// The bytes that follow are wrapped in the protocol's own packets (SFTP over SSH): the
    /// conversation takes them all and gives the file's bytes out of them
    /// ([`Conversation::unwrap`]).
    pub wrapped: bool,
}

/// Where a conversation stands after bytes came in.
#[derive(Debug)]
#[cfg_attr(not(test), allow(dead_code))]
pub enum Step {
    /// More bytes are needed.
    Wait,
    /// Send these, then read on.
    Send(Vec<u8>),
    /// Open a data connection to this port of the address this connection is connected to (never
    /// another host: a server cannot aim it elsewhere), then [`Conversation::data_ready`].
    Data(u16),
    /// Listen for a data connection from the server, on the address this connection leaves
    /// from, then [`Conversation::listening`] with the address listened on; the first connection
    /// that comes is the data connection (FTP's active mode).
    Listen,
    /// Send `header`, then `len` of the download's own bytes from `first` (bytes it has
    /// written and claims), read back from disk into a block of the pool; then
    /// [`Conversation::served`]. A source that also sends (BitTorrent's peers asking for pieces).
    Serve {
        header: Vec<u8>,
        first: u64,
        len: usize,
    },
    /// Start TLS on this connection (FTP's `AUTH TLS`), then send these bytes under it; a
    /// data connection opened later is under TLS too, resuming this connection's session.
    StartTls(Vec<u8>),
    /// The answer: the file's bytes follow.
    Answer(Answer),
    /// The exchange failed (aria2's exit code, and whether another try may do better).
    Fail(Failure),
}

/// What an exchange leaves on its connection for the next exchange of its protocol (FTP: a
/// control connection logged in, and where), for the engine to hand over unread.
pub type Kept = Box<dyn std::any::Any>;

/// One exchange of a protocol other than HTTP, over one connection, as a machine without I/O.
pub trait Conversation {
    /// The bytes that open the exchange for `url`: the whole file, or the bytes from `first` to
    /// `last` (inclusive; `None`: to the end).
    fn begin(&mut self, url: &Url, range: Option<(u64, Option<u64>)>) -> Vec<u8>;
    /// Bytes received before the answer: how many it took, and where it stands. Bytes it did
    /// not take are given again with the next ones.
    fn received(&mut self, bytes: &[u8]) -> (usize, Step);
    /// What the download has (claims) when the exchange begins, before [`Conversation::begin`]
    /// (BitTorrent's bitfield); most protocols have no use for it.
    fn have(&mut self, _have: &crate::plan::RangeSet) {}
    /// The bytes asked for with [`Step::Serve`] went out (`true`), or were not the download's to
    /// send (`false`: not claimed, not in one file, over TLS): what now.
    fn served(&mut self, _sent: bool) -> Step {
        Step::Fail(Failure::retry(
            super::ExitCode::UNKNOWN,
            "bytes served nobody asked for",
        ))
    }
    /// The data connection is listened for ([`Step::Listen`]) at `addr`: what now.
    fn listening(&mut self, _addr: std::net::SocketAddr) -> Step {
        Step::Fail(Failure::retry(
            super::ExitCode::UNKNOWN,
            "a listening socket nobody asked for",
        ))
    }
    /// Body bytes of a wrapped answer ([`Answer::wrapped`]), opened in place where the protocol
    /// can: the file's bytes in them are given to `place`, in order, until about `room` of them
    /// were. How many bytes were taken (the rest is given again), and whether the rest waits for
    /// room (then not before blocks are free) rather than for more bytes.
    fn unwrap(
        &mut self,
        _data: &mut [u8],
        _room: usize,
        _place: &mut dyn FnMut(&[u8]),
    ) -> Result<(usize, bool), Failure> {
        Err(Failure::retry(
            super::ExitCode::UNKNOWN,
            "wrapped bytes nobody can unwrap",
        ))
    }
    /// Bytes to send that taking body bytes made (SFTP's next reads, SSH's window updates).
    fn outgoing(&mut self) -> Vec<u8> {
        Vec::new()
    }
    /// Lines for the user (at notice level) the conversation has to say.
    fn notices(&mut self) -> Vec<String> {
        Vec::new()
    }
    /// The answer's bytes are all in (on the data connection; what came on this connection
    /// after the answer was given to [`Conversation::received`] first): what the exchange leaves
    /// this connection for another of the same protocol, if it can take one.
    fn keep(&mut self) -> Option<Kept> {
        None
    }
    /// The exchange goes on a connection an earlier one kept ([`Conversation::keep`]); said
    /// before [`Conversation::begin`].
    fn carry_on(&mut self, _kept: Kept) {}
    /// Whether a failure now is the kept connection's (closed while it waited, say), not the
    /// source's: the exchange is then made again on a new connection.
    fn stale(&self) -> bool {
        false
    }
    /// The data connection asked for ([`Step::Data`]) is connected: what now.
    fn data_ready(&mut self) -> Step {
        Step::Fail(Failure::retry(
            super::ExitCode::UNKNOWN,
            "a data connection nobody asked for",
        ))
    }
}

/// Which kept connections (see [`Conversation::keep`]) an exchange with `url` for a download
/// made with `opts` can go on: those whose key is this. `None`: none (HTTP's, or a protocol
/// that keeps no connection).
pub fn kept_key(
    url: &Url,
    opts: &super::config::DownloadOptions,
    netrc: Option<&crate::http::auth::Credentials>,
) -> Option<String> {
    match url.scheme() {
        "ftp" | "ftps" | "ftpes" if opts.ftp_reuse_connection => {
            Some(super::ftp::kept_key(url, opts, netrc))
        }
        // (A test protocol keeps its connections when its server says so.)
        s if test_protocol(s).is_some() => Some(s.to_string()),
        _ => None,
    }
}

/// A protocol machine made for a URI's scheme.
pub type Maker = fn() -> Box<dyn Conversation>;

#[cfg(test)]
thread_local! {
    /// Protocols the tests add (the simulation's toy protocol), by scheme.
    static TEST_PROTOCOLS: std::cell::RefCell<Vec<(&'static str, Maker)>> =
        const { std::cell::RefCell::new(Vec::new()) };
}

/// Makes protocol `maker` the one for URIs of `scheme` on this thread (tests only).
#[cfg(test)]
pub fn add_test_protocol(scheme: &'static str, maker: Maker) {
    TEST_PROTOCOLS.with(|p| {
        let mut p = p.borrow_mut();
        p.retain(|(s, _)| *s != scheme);
        p.push((scheme, maker));
    });
}

/// A test protocol for `scheme`, if one was added.
fn test_protocol(scheme: &str) -> Option<Maker> {
    #[cfg(test)]
    {
        TEST_PROTOCOLS.with(|p| {
            p.borrow()
                .iter()
                .find(|(s, _)| *s == scheme)
                .map(|(_, m)| *m)
        })
    }
    #[cfg(not(test))]
    {
        let _ = scheme;
        None
    }
}

/// Whether `url`'s protocol is one of the conversations' (not HTTP's).
pub fn is_conversation(url: &Url) -> bool {
    matches!(url.scheme(), "ftp" | "ftps" | "ftpes" | "sftp")
        || test_protocol(url.scheme()).is_some()
}

/// The machine for an exchange with `url` for a download made with `opts`, when its protocol
/// is not HTTP's; `netrc`: the netrc file's entry for its host, if one may be used.
pub fn conversation_for(
    url: &Url,
    opts: &super::config::DownloadOptions,
    netrc: Option<&crate::http::auth::Credentials>,
) -> Option<Box<dyn Conversation>> {
    match url.scheme() {
        "ftp" | "ftps" | "ftpes" => {
            Some(Box::new(super::ftp::FtpConversation::new(url, opts, netrc)))
        }
        "sftp" => Some(Box::new(super::sftp::SftpConversation::new(
            url, opts, netrc,
        ))),
        s => test_protocol(s).map(|make| make()),
    }
}

/// Whether aria2 takes `u` for a URI at all: anything with a scheme (one it or ringdl cannot
/// fetch fails as a download), a magnet link, a torrent or Metalink file. An input list's line
/// that is none of these (`notauri`, a stray `out=x`) is skipped with an error instead.
pub fn is_recognized_uri(u: &str) -> bool {
    u.contains("://") || !matches!(check_uri(u), Err(e) if e.starts_with("Unrecognized URI"))
}

/// A URI ringdl can download, or the one-line reason it cannot.
pub fn check_uri(u: &str) -> Result<(), String> {
    let lower = u.to_ascii_lowercase();
    // (A Metalink file named where a URI goes is read before a job is made of it.)
    let feature = if lower.starts_with("magnet:") || lower.ends_with(".torrent") {
        Some("BitTorrent")
    } else {
        None
    };
    let is_http = lower.starts_with("http://") || lower.starts_with("https://");
    let is_ftp = ["ftp://", "ftps://", "ftpes://", "sftp://"]
        .iter()
        .any(|s| lower.starts_with(s));
    match feature {
        Some(f) if !is_http || lower.starts_with("magnet:") => Err(format!(
            "ringdl does not support {f}: {u}; use aria2c for it"
        )),
        Some(f) if Path::new(u).exists() => Err(format!(
            "ringdl does not support {f}: {u}; use aria2c for it"
        )),
        _ if (is_http || is_ftp) && url::Url::parse(u).is_ok_and(|p| p.host().is_some()) => Ok(()),
        _ if url::Url::parse(u).is_ok_and(|p| test_protocol(p.scheme()).is_some()) => Ok(()),
        _ => Err(format!("Unrecognized URI or unsupported protocol: {u}")),
    }
}
