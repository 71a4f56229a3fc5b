//! An SFTP download over SSH as a client machine without I/O: the transport's key exchange, the
//! host key handed to the caller to check, public-key then password authentication (RFC 4252),
//! a session channel with the `sftp` subsystem (RFC 4254), and SFTP version 3
//! (draft-ietf-secsh-filexfer-02): `OPEN`, `FSTAT` for the size and time, then `READ`s at offsets,
//! several in flight, whose data is handed to the caller in order as it comes out of each packet,
//! never gathered.
use super::keys::UserKey;
use super::transport::Transport;
#[cfg(test)]
use super::transport::MAX_PACKET;
use super::wire::{Reader, Writer};
use super::{Error, ErrorKind};
use std::collections::VecDeque;

const SERVICE_REQUEST: u8 = 5;
const SERVICE_ACCEPT: u8 = 6;
const EXT_INFO: u8 = 7;
const USERAUTH_REQUEST: u8 = 50;
const USERAUTH_FAILURE: u8 = 51;
const USERAUTH_SUCCESS: u8 = 52;
const USERAUTH_BANNER: u8 = 53;
const USERAUTH_60: u8 = 60;
const GLOBAL_REQUEST: u8 = 80;
const REQUEST_FAILURE: u8 = 82;
const CHANNEL_OPEN: u8 = 90;
const OPEN_CONFIRMATION: u8 = 91;
const OPEN_FAILURE: u8 = 92;
const WINDOW_ADJUST: u8 = 93;
const CHANNEL_DATA: u8 = 94;
const EXTENDED_DATA: u8 = 95;
const CHANNEL_EOF: u8 = 96;
const CHANNEL_CLOSE: u8 = 97;
const CHANNEL_REQUEST: u8 = 98;
const CHANNEL_SUCCESS: u8 = 99;
const CHANNEL_FAILURE: u8 = 100;

const FXP_INIT: u8 = 1;
const FXP_VERSION: u8 = 2;
const FXP_OPEN: u8 = 3;
const FXP_READ: u8 = 5;
const FXP_FSTAT: u8 = 8;
const FXP_STATUS: u8 = 101;
const FXP_HANDLE: u8 = 102;
const FXP_DATA: u8 = 103;
const FXP_ATTRS: u8 = 105;
const FX_EOF: u32 = 1;
const FX_NO_SUCH_FILE: u32 = 2;
const FX_PERMISSION_DENIED: u32 = 3;

/// Bytes one READ asks for (every server takes 32 KiB) and how many are in flight at once.
pub const READ_LEN: u32 = 32 * 1024;
/// The window the server may fill before we say we took its bytes, and the largest channel
/// packet we take: one READ's answer with its header fits one (so a packet split by a read's
/// end, the one kept aside, is never much larger).
const WINDOW: u32 = 8 * 1024 * 1024;
const MAX_CHANNEL_PACKET: u32 = READ_LEN + 1024;
pub const READS_IN_FLIGHT: usize = 64;
/// The longest SFTP reply other than data that is taken.
const MAX_REPLY: usize = 256 * 1024;

/// Who logs in, and how.
pub struct Login {
    pub user: String,
    /// A password, tried after the keys.
    pub password: Option<String>,
    pub keys: Vec<UserKey>,
    /// Signs for keys an agent holds ([`UserKey::Agent`]): the key's blob, the data, the
    /// agent's flags; the signature's blob.
    pub agent: Option<Box<AgentSigner>>,
}

/// An ssh-agent's signing, done by the caller (it is I/O).
pub type AgentSigner = dyn FnMut(&[u8], &[u8], u32) -> Option<Vec<u8>>;

/// What a session needs from the caller.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    /// More bytes are needed (after those [`Session::take_out`] has are sent).
    Wait,
    /// The server proved it holds this host key (its wire blob): check it, then
    /// [`Session::host_key_checked`].
    HostKey(Vec<u8>),
    /// The file is open: its size and modification time (seconds since 1970) where the server
    /// says them; then [`Session::read`].
    Opened {
        size: Option<u64>,
        mtime: Option<u32>,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Kex,
    HostKey,
    Service,
    Auth,
    Channel,
    Subsystem,
    Init,
    Open,
    Fstat,
    Opened,
    Reading,
}

/// One read in flight: its request id, offset and length.
#[derive(Debug, Clone, Copy)]
struct Read {
    id: u32,
    off: u64,
    len: u32,
    /// Asked before a short read came back: its answer is out of order now, and dropped.
    discard: bool,
}

/// A client session downloading one file.
pub struct Session {
    t: Transport,
    state: State,
    login: Login,
    next_key: usize,
    password_sent: bool,
    path: Vec<u8>,
    /// Received bytes not yet a whole packet.
    pending: Vec<u8>,
    their_chan: u32,
    their_window: u64,
    their_max: u32,
    /// Channel data sent while the server's window was full.
    blocked: VecDeque<Vec<u8>>,
    /// Channel bytes taken since the window was last opened again.
    taken: u32,
    /// The SFTP packet being collected (its first bytes, or all of one that is not data).
    reply: Vec<u8>,
    /// Bytes of the data packet being passed on still to come.
    data_left: u32,
    /// Bytes of the front read's data passed on so far.
    front_got: u32,
    next_id: u32,
    handle: Vec<u8>,
    next_off: u64,
    end: u64,
    reads: VecDeque<Read>,
    /// Bytes a READ asks for: READ_LEN, or what a server that answered short gives.
    read_len: u32,
    /// The data being passed on is a dropped read's.
    discarding: bool,
    event: Option<Event>,
    /// File bytes that may still be handed out in this call ([`Session::unwrap`]'s room).
    budget: usize,
}

fn err(kind: ErrorKind, m: impl Into<String>) -> Error {
    Error {
        kind,
        message: m.into(),
    }
}

fn proto(m: impl Into<String>) -> Error {
    err(ErrorKind::Protocol, m)
}

impl Session {
    /// A session for `path` (the name the server opens, as bytes), logging in as `login`;
    /// `host_key_types`: types known for the server, asked for first.
    pub fn new(path: &[u8], login: Login, host_key_types: &[String]) -> Session {
        let version = concat!("SSH-2.0-ringdl_", env!("CARGO_PKG_VERSION"));
        Session {
            t: Transport::new(version, host_key_types),
            state: State::Kex,
            login,
            next_key: 0,
            password_sent: false,
            path: path.to_vec(),
            pending: Vec::new(),
            their_chan: 0,
            their_window: 0,
            their_max: 0,
            blocked: VecDeque::new(),
            taken: 0,
            reply: Vec::new(),
            data_left: 0,
            front_got: 0,
            next_id: 0,
            handle: Vec::new(),
            next_off: 0,
            end: 0,
            reads: VecDeque::new(),
            read_len: READ_LEN,
            discarding: false,
            event: None,
            budget: usize::MAX,
        }
    }

    /// A session past its key exchange with no cipher, its host key taken (the fuzz target's).
    #[doc(hidden)]
    pub fn plain_after_kex(path: &[u8], login: Login) -> Session {
        let mut s = Session::new(path, login, &[]);
        s.t = Transport::plain_after_kex();
        s.state = State::HostKey;
        s.host_key_checked();
        s
    }

    /// The bytes to send, taken.
    pub fn take_out(&mut self) -> Vec<u8> {
        self.t.take_out()
    }

    /// Takes bytes received before the file is open; what it needs next. Bytes after an event
    /// are kept for the next call (an empty one will do).
    pub fn received(&mut self, bytes: &[u8]) -> Result<Event, Error> {
        self.budget = usize::MAX;
        self.pending.extend_from_slice(bytes);
        let mut buf = std::mem::take(&mut self.pending);
        // The file's data before it was asked for is not the session's to drop.
        let mut early = false;
        let mut refuse = |d: &[u8]| early |= !d.is_empty();
        let r = self.run(&mut buf, &mut refuse);
        if early {
            return Err(proto("file data before the file was read"));
        }
        let used = r.as_ref().map(|u| *u).unwrap_or(0);
        buf.drain(..used);
        self.pending = buf;
        r?;
        if self.data_left > 0 {
            return Err(proto("file data before the file was read"));
        }
        Ok(self.event.take().unwrap_or(Event::Wait))
    }

    /// The host key the session reported is the right one: go on (logging in).
    pub fn host_key_checked(&mut self) {
        if self.state == State::HostKey {
            let mut p = vec![SERVICE_REQUEST];
            p.put_string(b"ssh-userauth");
            self.t.send(&p);
            self.state = State::Service;
        }
    }

    /// Reads the file's bytes from `first` up to (not including) `end`.
    pub fn read(&mut self, first: u64, end: u64) {
        self.state = State::Reading;
        self.next_off = first;
        self.end = end;
        self.fill_reads();
    }

    /// Takes body bytes: the file's data found in them is passed to `place`, in order, until
    /// about `room` bytes of it were (a packet is not split for it: one may run past). A packet
    /// split by the end of `data` is kept here for the rest. How many bytes of `data` were
    /// used, and whether the rest waits for room (`true`) rather than for more bytes.
    pub fn unwrap(
        &mut self,
        data: &mut [u8],
        room: usize,
        place: &mut dyn FnMut(&[u8]),
    ) -> Result<(usize, bool), Error> {
        self.budget = room;
        let mut at = 0;
        // What was kept before: its whole packets, then the one it begins, joined with the bytes
        // it needs of these.
        while !self.pending.is_empty() && self.budget > 0 {
            let mut buf = std::mem::take(&mut self.pending);
            let r = self.run(&mut buf, place);
            let used = r.as_ref().map(|u| *u).unwrap_or(0);
            buf.drain(..used);
            self.pending = buf;
            r?;
            if self.pending.is_empty() || self.budget == 0 {
                break;
            }
            let want = self.t.packet_len(&self.pending).unwrap_or(4);
            let take = want.saturating_sub(self.pending.len()).min(data.len() - at);
            if take == 0 {
                if at == data.len() {
                    return Ok((at, false));
                }
                return Err(proto("an SSH packet would not complete"));
            }
            // (Exactly what the packet needs: eight connections' spare capacity is memory.)
            self.pending.reserve_exact(take);
            self.pending.extend_from_slice(&data[at..at + take]);
            at += take;
        }
        if !self.pending.is_empty() || self.budget == 0 {
            return Ok((at, at < data.len()));
        }
        let rest = &mut data[at..];
        let used = self.run(rest, place)?;
        if self.budget == 0 {
            return Ok((at + used, at + used < data.len()));
        }
        let tail = &rest[used..];
        if let Some(want) = self.t.packet_len(tail) {
            self.pending.reserve_exact(want.max(tail.len()));
        }
        self.pending.extend_from_slice(tail);
        Ok((data.len(), false))
    }

    /// Opens the whole packets at the front of `buf` and acts on them, until one needs the
    /// caller (an event); how many bytes were used.
    fn run(&mut self, buf: &mut [u8], place: &mut dyn FnMut(&[u8])) -> Result<usize, Error> {
        let mut at = 0;
        while self.event.is_none() && self.budget > 0 {
            let input = self.t.input(&mut buf[at..])?;
            if input.used == 0 {
                break;
            }
            let payload = input.payload.map(|r| r.start + at..r.end + at);
            at += input.used;
            if input.first_kex_done {
                let key = self.t.host_key().unwrap_or_default().to_vec();
                self.state = State::HostKey;
                self.event = Some(Event::HostKey(key));
            }
            if let Some(p) = payload {
                self.message(&buf[p], place)?;
            }
        }
        Ok(at)
    }

    fn message(&mut self, p: &[u8], place: &mut dyn FnMut(&[u8])) -> Result<(), Error> {
        let mut r = Reader::new(&p[1..]);
        let short = || proto(format!("a short SSH message {}", p[0]));
        match p[0] {
            SERVICE_ACCEPT if self.state == State::Service => {
                self.state = State::Auth;
                self.next_auth(None)?;
            }
            USERAUTH_FAILURE if self.state == State::Auth => {
                let methods = r.string().ok_or_else(short)?.to_vec();
                self.next_auth(Some(&methods))?;
            }
            USERAUTH_SUCCESS if self.state == State::Auth => {
                let mut o = vec![CHANNEL_OPEN];
                o.put_string(b"session");
                o.put_u32(0);
                o.put_u32(WINDOW);
                o.put_u32(MAX_CHANNEL_PACKET);
                self.t.send(&o);
                self.state = State::Channel;
            }
            USERAUTH_60 if self.state == State::Auth && self.password_sent => {
                return Err(err(
                    ErrorKind::Auth,
                    "SSH authentication failure: the server asks for a new password",
                ));
            }
            USERAUTH_BANNER | USERAUTH_60 | EXT_INFO => {}
            GLOBAL_REQUEST => {
                let _ = r.string().ok_or_else(short)?;
                if r.bool().ok_or_else(short)? {
                    self.t.send(&[REQUEST_FAILURE]);
                }
            }
            OPEN_CONFIRMATION if self.state == State::Channel => {
                let _ours = r.u32().ok_or_else(short)?;
                self.their_chan = r.u32().ok_or_else(short)?;
                self.their_window = r.u32().ok_or_else(short)? as u64;
                self.their_max = r.u32().ok_or_else(short)?;
                // Every request sent is under 1 KiB plus the path (OPEN) or handle: a server
                // taking less could never be asked anything.
                let need = self.path.len() + 1024;
                if (self.their_max as usize) < need {
                    return Err(proto(format!(
                        "the server takes channel packets of {} bytes at most",
                        self.their_max
                    )));
                }
                let mut q = vec![CHANNEL_REQUEST];
                q.put_u32(self.their_chan);
                q.put_string(b"subsystem");
                q.put_bool(true);
                q.put_string(b"sftp");
                self.t.send(&q);
                self.state = State::Subsystem;
            }
            OPEN_FAILURE => {
                let _ = r.u32();
                let _ = r.u32();
                let why = r.text().unwrap_or("").to_string();
                return Err(err(
                    ErrorKind::Sftp,
                    format!("the server refused a session channel: {why}"),
                ));
            }
            CHANNEL_SUCCESS if self.state == State::Subsystem => {
                let mut init = Vec::new();
                init.put_u32(5);
                init.put_u8(FXP_INIT);
                init.put_u32(3);
                self.send_sftp(init);
                self.state = State::Init;
            }
            CHANNEL_FAILURE if self.state == State::Subsystem => {
                return Err(err(ErrorKind::Sftp, "the server has no SFTP subsystem"));
            }
            WINDOW_ADJUST => {
                let _ = r.u32().ok_or_else(short)?;
                self.their_window += r.u32().ok_or_else(short)? as u64;
                while let Some(d) = self.blocked.pop_front() {
                    if (d.len() as u64) > self.their_window {
                        self.blocked.push_front(d);
                        break;
                    }
                    self.their_window -= d.len() as u64;
                    self.channel_send(&d);
                }
            }
            CHANNEL_DATA => {
                let _ = r.u32().ok_or_else(short)?;
                let d = r.string().ok_or_else(short)?;
                self.took(d.len())?;
                self.channel_data(d, place)?;
            }
            EXTENDED_DATA => {
                let _ = r.u32().ok_or_else(short)?;
                let _ = r.u32().ok_or_else(short)?;
                let d = r.string().ok_or_else(short)?;
                self.took(d.len())?;
            }
            CHANNEL_REQUEST => {
                let _ = r.u32().ok_or_else(short)?;
                let _ = r.string().ok_or_else(short)?;
                if r.bool().ok_or_else(short)? {
                    let mut f = vec![CHANNEL_FAILURE];
                    f.put_u32(self.their_chan);
                    self.t.send(&f);
                }
            }
            CHANNEL_EOF | CHANNEL_CLOSE => {
                return Err(err(ErrorKind::Sftp, "the server closed the SFTP channel"));
            }
            k => {
                return Err(proto(format!(
                    "SSH message {k} where it has no place ({:?})",
                    self.state
                )))
            }
        }
        Ok(())
    }

    /// Offers the next way of logging in, after `methods` (the server's list of those that can
    /// go on) or first.
    fn next_auth(&mut self, methods: Option<&[u8]>) -> Result<(), Error> {
        let can = |m: &str| methods.is_none_or(|l| super::wire::has(l, m));
        let user = self.login.user.clone();
        if can("publickey") {
            while let Some(key) = self.login.keys.get(self.next_key) {
                self.next_key += 1;
                let Some(sid) = self.t.session_id() else {
                    break;
                };
                let alg = key.algorithm();
                let blob = key.public_blob();
                let mut signed = Vec::new();
                signed.put_string(sid);
                signed.put_u8(USERAUTH_REQUEST);
                signed.put_string(user.as_bytes());
                signed.put_string(b"ssh-connection");
                signed.put_string(b"publickey");
                signed.put_bool(true);
                signed.put_string(alg.as_bytes());
                signed.put_string(&blob);
                let sig = match key {
                    UserKey::Agent { blob, flags, .. } => {
                        let (blob, flags) = (blob.clone(), *flags);
                        self.login
                            .agent
                            .as_mut()
                            .and_then(|a| a(&blob, &signed, flags))
                    }
                    _ => key.sign(&signed),
                };
                let Some(sig) = sig else {
                    continue;
                };
                let mut p = signed[4 + sid.len()..].to_vec();
                p.put_string(&sig);
                self.t.send(&p);
                return Ok(());
            }
        }
        if let (Some(pass), false, true) = (
            self.login.password.clone(),
            self.password_sent,
            can("password"),
        ) {
            let mut p = vec![USERAUTH_REQUEST];
            p.put_string(user.as_bytes());
            p.put_string(b"ssh-connection");
            p.put_string(b"password");
            p.put_bool(false);
            p.put_string(pass.as_bytes());
            self.t.send(&p);
            self.password_sent = true;
            return Ok(());
        }
        let offered = match methods {
            Some(m) => String::from_utf8_lossy(m).into_owned(),
            None => String::new(),
        };
        Err(err(
            ErrorKind::Auth,
            format!("SSH authentication failure: the server refused {user}'s login (it takes: {offered})"),
        ))
    }

    /// Channel bytes taken: the window is opened again once half of it is used.
    fn took(&mut self, n: usize) -> Result<(), Error> {
        self.taken = self.taken.saturating_add(n as u32);
        if self.taken >= WINDOW / 2 {
            let mut a = vec![WINDOW_ADJUST];
            a.put_u32(self.their_chan);
            a.put_u32(self.taken);
            self.t.send(&a);
            self.taken = 0;
        }
        Ok(())
    }

    fn channel_send(&mut self, d: &[u8]) {
        let mut p = vec![CHANNEL_DATA];
        p.put_u32(self.their_chan);
        p.put_string(d);
        self.t.send(&p);
    }

    /// Sends an SFTP packet on the channel, or holds it while the server's window is full.
    /// (A request larger than the server's largest channel packet fails the session as it
    /// opens the channel: `OPEN_CONFIRMATION`.)
    fn send_sftp(&mut self, packet: Vec<u8>) {
        let fits = packet.len() as u64 <= self.their_window;
        if self.blocked.is_empty() && fits {
            self.their_window -= packet.len() as u64;
            self.channel_send(&packet);
        } else {
            self.blocked.push_back(packet);
        }
    }

    fn new_id(&mut self) -> u32 {
        self.next_id = self.next_id.wrapping_add(1);
        self.next_id
    }

    /// Sends SFTP request `kind` with a new id and `body` after it; the id.
    fn request(&mut self, kind: u8, body: &[u8]) -> u32 {
        let id = self.new_id();
        let mut p = Vec::with_capacity(9 + body.len());
        p.put_u32((1 + 4 + body.len()) as u32);
        p.put_u8(kind);
        p.put_u32(id);
        p.extend_from_slice(body);
        self.send_sftp(p);
        id
    }

    /// Sends READs until enough are in flight or the range is asked for.
    fn fill_reads(&mut self) {
        let live = |reads: &VecDeque<Read>| reads.iter().filter(|r| !r.discard).count();
        while live(&self.reads) < READS_IN_FLIGHT && self.next_off < self.end {
            let len = (self.end - self.next_off).min(self.read_len as u64) as u32;
            let mut body = Vec::new();
            body.put_string(&self.handle);
            body.put_u64(self.next_off);
            body.put_u32(len);
            let id = self.request(FXP_READ, &body);
            self.reads.push_back(Read {
                id,
                off: self.next_off,
                len,
                discard: false,
            });
            self.next_off += len as u64;
        }
    }

    /// The SFTP stream's bytes from one channel packet: data passed on, replies collected.
    fn channel_data(&mut self, mut d: &[u8], place: &mut dyn FnMut(&[u8])) -> Result<(), Error> {
        while !d.is_empty() {
            if self.data_left > 0 {
                let n = (self.data_left as usize).min(d.len());
                if !self.discarding {
                    place(&d[..n]);
                    self.budget = self.budget.saturating_sub(n);
                }
                self.data_left -= n as u32;
                self.front_got += n as u32;
                d = &d[n..];
                if self.data_left == 0 {
                    self.read_done()?;
                }
                continue;
            }
            let head = if self.reply.len() >= 5 && self.reply[4] == FXP_DATA {
                13
            } else {
                5
            };
            if self.reply.len() < head {
                let n = (head - self.reply.len()).min(d.len());
                self.reply.extend_from_slice(&d[..n]);
                d = &d[n..];
                if self.reply.len() < head {
                    continue;
                }
            }
            let mut r = Reader::new(&self.reply);
            let len = r.u32().unwrap_or(0) as usize;
            let kind = r.u8().unwrap_or(0);
            if len == 0 || len > MAX_REPLY + 13 {
                return Err(proto(format!("an SFTP packet of {len} bytes")));
            }
            if kind == FXP_DATA {
                if self.reply.len() < 13 {
                    continue;
                }
                let id = r.u32().unwrap_or(0);
                let n = r.u32().unwrap_or(0);
                let front = self.reads.front().copied();
                match front {
                    _ if state_not_reading(self.state) => {
                        return Err(proto("file data before the file was read"))
                    }
                    Some(f) if f.id == id && n <= f.len && n as usize + 9 == len && n > 0 => {}
                    Some(f) if f.id != id => {
                        return Err(proto("the server answered the reads out of order"))
                    }
                    _ => return Err(proto("the server sent data nobody asked for")),
                }
                self.reply.clear();
                self.data_left = n;
                self.front_got = 0;
                self.discarding = front.is_some_and(|f| f.discard);
                continue;
            }
            let n = (4 + len - self.reply.len()).min(d.len());
            self.reply.extend_from_slice(&d[..n]);
            d = &d[n..];
            if self.reply.len() == 4 + len {
                let reply = std::mem::take(&mut self.reply);
                self.sftp_reply(&reply[4..])?;
            }
        }
        Ok(())
    }

    /// The front read's data all came.
    fn read_done(&mut self) -> Result<(), Error> {
        let Some(r) = self.reads.pop_front() else {
            return Err(proto("data nobody asked for"));
        };
        if !r.discard && self.front_got < r.len {
            // A short read (SFTP lets a server answer with less): the reads after it are out of
            // order now and dropped as they come; reading goes on from where this one ended,
            // in reads of the length the server gave.
            for later in self.reads.iter_mut() {
                later.discard = true;
            }
            self.next_off = r.off + self.front_got as u64;
            self.read_len = self.front_got.clamp(1, READ_LEN);
        }
        self.discarding = false;
        self.fill_reads();
        Ok(())
    }

    /// An SFTP packet other than data (its type byte first).
    fn sftp_reply(&mut self, p: &[u8]) -> Result<(), Error> {
        let mut r = Reader::new(&p[1..]);
        let short = || proto("a short SFTP reply");
        let kind = p[0];
        if kind == FXP_VERSION && self.state == State::Init {
            let mut body = Vec::new();
            body.put_string(&self.path);
            body.put_u32(1); // SSH_FXF_READ
            body.put_u32(0); // no attributes
            self.request(FXP_OPEN, &body);
            self.state = State::Open;
            return Ok(());
        }
        let id = r.u32().ok_or_else(short)?;
        match (kind, self.state) {
            (FXP_HANDLE, State::Open) if id == self.next_id => {
                self.handle = r.string().ok_or_else(short)?.to_vec();
                let mut body = Vec::new();
                body.put_string(&self.handle);
                self.request(FXP_FSTAT, &body);
                self.state = State::Fstat;
            }
            (FXP_ATTRS, State::Fstat) if id == self.next_id => {
                let flags = r.u32().ok_or_else(short)?;
                let size = match flags & 1 {
                    0 => None,
                    _ => Some(r.u64().ok_or_else(short)?),
                };
                if flags & 2 != 0 {
                    r.u32().ok_or_else(short)?;
                    r.u32().ok_or_else(short)?;
                }
                let mode = match flags & 4 {
                    0 => None,
                    _ => Some(r.u32().ok_or_else(short)?),
                };
                let mtime = match flags & 8 {
                    0 => None,
                    _ => {
                        r.u32().ok_or_else(short)?;
                        Some(r.u32().ok_or_else(short)?)
                    }
                };
                if mode.is_some_and(|m| m & 0o170000 == 0o040000) {
                    return Err(err(ErrorKind::NotAFile, "the path names a directory"));
                }
                self.state = State::Opened;
                self.event = Some(Event::Opened { size, mtime });
            }
            (FXP_STATUS, State::Reading) if self.reads.front().is_some_and(|f| f.discard) => {
                // A dropped read's answer (its end of file or error) changes nothing.
                if self.reads.front().is_some_and(|f| f.id == id) {
                    self.reads.pop_front();
                    self.fill_reads();
                    return Ok(());
                }
                return Err(proto("the server answered the reads out of order"));
            }
            (FXP_STATUS, _) => {
                let code = r.u32().ok_or_else(short)?;
                let text = r.text().unwrap_or("").to_string();
                let reading = self.state == State::Reading;
                return Err(match code {
                    FX_EOF if reading => err(
                        ErrorKind::Short,
                        format!(
                            "the file ended before byte {}",
                            self.reads.front().map(|r| r.off).unwrap_or(self.next_off)
                        ),
                    ),
                    FX_NO_SUCH_FILE => err(ErrorKind::NotFound, text),
                    FX_PERMISSION_DENIED => {
                        err(ErrorKind::Sftp, format!("permission denied: {text}"))
                    }
                    _ => err(ErrorKind::Sftp, format!("SFTP status {code}: {text}")),
                });
            }
            (k, s) => {
                return Err(proto(format!(
                    "SFTP reply {k} where it has no place ({s:?})"
                )));
            }
        }
        Ok(())
    }
}

fn state_not_reading(s: State) -> bool {
    s != State::Reading
}

/// A server's side of a whole plain session (past the key exchange) for a file whose bytes are
/// `data`, in packets with no cipher: for tests and the fuzz target's seed.
#[doc(hidden)]
pub fn plain_server_stream(data: &[u8]) -> Vec<u8> {
    let mut out = plain_server_head(data.len() as u64);
    // The reads' answers, the data of each split over two channel packets.
    for (i, part) in data.chunks(READ_LEN as usize).enumerate() {
        let mut d = Vec::new();
        d.put_u32((1 + 4 + 4 + part.len()) as u32);
        d.put_u8(FXP_DATA);
        d.put_u32(3 + i as u32);
        d.put_string(part);
        let half = d.len() / 2;
        plain_channel(&mut out, &d[..half]);
        plain_channel(&mut out, &d[half..]);
    }
    out
}

/// A packet with no cipher, appended to `out`.
#[doc(hidden)]
pub fn plain_packet(out: &mut Vec<u8>, payload: &[u8]) {
    let mut pad = 8 - (4 + 1 + payload.len()) % 8;
    if pad < 4 {
        pad += 8;
    }
    out.put_u32((1 + payload.len() + pad) as u32);
    out.put_u8(pad as u8);
    out.extend_from_slice(payload);
    out.extend(std::iter::repeat_n(0, pad));
}

fn plain_channel(out: &mut Vec<u8>, sftp: &[u8]) {
    let mut p = vec![CHANNEL_DATA];
    p.put_u32(0);
    p.put_string(sftp);
    plain_packet(out, &p);
}

/// The server's side of a plain session up to the file's attributes (`size` bytes).
#[doc(hidden)]
pub fn plain_server_head(size: u64) -> Vec<u8> {
    let packet = plain_packet;
    let channel = plain_channel;
    let mut out = Vec::new();
    let mut p = vec![SERVICE_ACCEPT];
    p.put_string(b"ssh-userauth");
    packet(&mut out, &p);
    packet(&mut out, &[USERAUTH_SUCCESS]);
    let mut p = vec![OPEN_CONFIRMATION];
    for v in [0, 5, 1 << 21, 32768] {
        p.put_u32(v);
    }
    packet(&mut out, &p);
    let mut p = vec![CHANNEL_SUCCESS];
    p.put_u32(0);
    packet(&mut out, &p);
    let mut v = Vec::new();
    v.put_u32(5);
    v.put_u8(FXP_VERSION);
    v.put_u32(3);
    channel(&mut out, &v);
    let mut h = Vec::new();
    h.put_u32(1 + 4 + 4 + 2);
    h.put_u8(FXP_HANDLE);
    h.put_u32(1);
    h.put_string(b"h1");
    channel(&mut out, &h);
    let mut a = Vec::new();
    a.put_u32(1 + 4 + 4 + 8);
    a.put_u8(FXP_ATTRS);
    a.put_u32(2);
    a.put_u32(1);
    a.put_u64(size);
    channel(&mut out, &a);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// User `u`, with the password `p` when `password`, no keys.
    fn login(password: bool) -> Login {
        Login {
            user: "u".into(),
            password: password.then(|| "p".into()),
            keys: Vec::new(),
            agent: None,
        }
    }

    #[test]
    fn a_short_read_drops_the_reads_after_it_and_goes_on_in_reads_of_its_length() {
        let data: Vec<u8> = (0..100_000u32).map(|i| (i * 13 % 251) as u8).collect();
        let mut stream = plain_server_head(data.len() as u64);
        let answer = |out: &mut Vec<u8>, id: u32, part: &[u8]| {
            let mut d = Vec::new();
            d.put_u32((1 + 4 + 4 + part.len()) as u32);
            d.put_u8(FXP_DATA);
            d.put_u32(id);
            d.put_string(part);
            plain_channel(out, &d);
        };
        // Reads 3..=6 asked for 0, 32 KiB, 64 KiB, 96 KiB; the first comes back with 1000 bytes,
        // the others whole (now out of order: dropped), then the client's reads of 1000 bytes
        // from byte 1000 (ids from 7), one of them answered with the end of file.
        answer(&mut stream, 3, &data[..1000]);
        answer(&mut stream, 4, &data[32768..65536]);
        let mut eof = Vec::new();
        eof.put_u32(1 + 4 + 4 + 4 + 4);
        eof.put_u8(FXP_STATUS);
        eof.put_u32(5);
        eof.put_u32(FX_EOF);
        eof.put_string(b"");
        eof.put_string(b"");
        plain_channel(&mut stream, &eof);
        answer(&mut stream, 6, &data[98304..]);
        for (k, part) in data[1000..].chunks(1000).enumerate() {
            answer(&mut stream, 7 + k as u32, part);
        }
        let login = login(true);
        let mut s = Session::plain_after_kex(b"/f", login);
        let head = plain_server_head(data.len() as u64);
        let mut ev = s.received(&stream[..head.len()]).expect("head");
        while ev == Event::Wait {
            ev = s.received(&[]).expect("head");
        }
        assert!(matches!(ev, Event::Opened { .. }), "{ev:?}");
        s.read(0, data.len() as u64);
        let mut got = Vec::new();
        let mut rest = stream[head.len()..].to_vec();
        let (used, blocked) = s
            .unwrap(&mut rest, usize::MAX, &mut |d| got.extend_from_slice(d))
            .expect("body");
        assert_eq!((used, blocked), (rest.len(), false));
        assert!(got == data, "{} bytes, not the file's", got.len());
    }

    #[test]
    fn a_plain_session_reads_the_file_in_order_whole_or_split_anywhere() {
        let data: Vec<u8> = (0..100_000u32).map(|i| (i * 7 % 251) as u8).collect();
        let stream = plain_server_stream(&data);
        for step in [usize::MAX, 1, 3, 4096, 33_000] {
            let login = login(true);
            let mut s = Session::plain_after_kex(b"/f", login);
            let mut at = 0;
            let mut size = None;
            while size.is_none() {
                let end = (at + step.min(16)).min(stream.len());
                let mut ev = s.received(&stream[at..end]).expect("head");
                at = end;
                while let Event::Wait = ev {
                    if at == end {
                        break;
                    }
                    ev = s.received(&[]).expect("head");
                }
                if let Event::Opened { size: sz, .. } = ev {
                    size = sz;
                }
                assert!(at < stream.len(), "never opened");
            }
            assert_eq!(size, Some(data.len() as u64));
            s.read(0, data.len() as u64);
            let out = s.take_out();
            assert!(!out.is_empty(), "no reads sent");
            let mut got = Vec::new();
            while at < stream.len() {
                let end = at.saturating_add(step).min(stream.len());
                let mut chunk = stream[at..end].to_vec();
                // Room for one READ's data at a time at most: what is left waits in the chunk.
                let mut from = 0;
                while from < chunk.len() {
                    let room = if step == 1 { usize::MAX } else { 40_000 };
                    let (used, blocked) = s
                        .unwrap(&mut chunk[from..], room, &mut |d| got.extend_from_slice(d))
                        .expect("body");
                    from += used;
                    assert!(
                        blocked || from == chunk.len(),
                        "bytes left unused, not blocked"
                    );
                }
                at = end;
            }
            assert!(got == data, "step {step}: {} bytes", got.len());
        }
        crate::fuzzing::ssh_packets(&[[3u8].as_slice(), &stream].concat());
    }

    #[test]
    fn a_session_begins_with_its_version_line_and_a_key_exchange_offer() {
        let login = login(false);
        let mut s = Session::new(b"/f", login, &[]);
        let out = s.take_out();
        assert!(out.starts_with(b"SSH-2.0-ringdl_"));
        let nl = out.iter().position(|&b| b == b'\n').unwrap();
        assert_eq!(out[nl + 6], 20, "KEXINIT follows the version line");
        const { assert!(MAX_PACKET >= 35000) };
    }

    #[test]
    fn a_server_that_is_not_ssh_is_refused() {
        let mut s = Session::new(b"/f", login(false), &[]);
        assert_eq!(s.received(b"220 FTP here\r\n").unwrap(), Event::Wait);
        assert!(s.received(&[b'x'; 70 * 1024]).is_err());
        let mut s = Session::new(b"/f", login(false), &[]);
        assert!(s.received(b"SSH-1.5-old\r\n").is_err());
    }
}
