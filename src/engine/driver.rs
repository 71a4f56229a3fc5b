//! The loop: stage every operation a step produces, one `submit_and_wait`, harvest every completion,
//! turn each into calls on the connection, the download and the protocol layers, and repeat until
//! every download has ended and every operation in flight has completed.
use super::config::{Config, EngineChoice};
use super::conn::{Conn, ConnState, Exchange, Fill, Phase, RecvInFlight, ServerKey, Want};
use super::download::{DlId, DlState, Download, FileOf, Opening, Validator};
use super::job::{http_failure, Failure, Job, Outcome};
use super::reactor::{
    Block, Class, Completion, Epoll, Fd, Layout, OpId, Pool, Reactor, SetupError, Uring,
};
use super::report::{LogLevel, Progress, Report};
use super::resolver::Resolver;
use super::sink::{BodySink, Flush};
use super::supervisor::Supervisor;
use super::sys;
use crate::engine::ExitCode;
use crate::http::{self, Framing, RequestSpec};
use crate::plan::{Owner, Plan};
use crate::store::{self, WriteMode};
use crate::tls::{InPlace, PlainSink, TlsConfig, TlsSession, MIN_INCOMING};
use std::collections::{HashMap, VecDeque};
use std::fmt;
use std::hash::{BuildHasher, Hasher};
use std::net::SocketAddr;
use std::os::fd::AsRawFd;
use std::rc::Rc;
use std::time::{Duration, Instant};
use url::Url;

mod answer;
mod body;
mod connection;
mod credentials;
mod daemon;
mod data;
mod described;
mod files;
mod first;
mod hooks;
mod lookup;
mod pace;
mod pieces;
mod proxy;
mod receive;
mod response;
mod resume;
mod rpc;
mod schedule;
mod select;
mod serve;
mod start;
mod verify;
mod writer;
use resume::CannotResume;
pub use start::{engine_report, run, run_following, serve, Follower, StartError};
#[cfg(test)]
pub(crate) use start::{run_on, wanted_slots, Outside};
pub(super) use writer::Flushes;

/// Receives application data on a TLS connection that has no exchange (idle, or between requests):
/// there should be none, and any makes the connection unfit for reuse.
struct IdleSink {
    got_data: bool,
}

impl PlainSink for IdleSink {
    fn room(&self) -> usize {
        usize::MAX
    }
    fn put(&mut self, data: &[u8]) {
        self.got_data |= !data.is_empty();
    }
}

/// Restarts of one download for a file that changed under it before it fails.
const MAX_VERSION_RESTARTS: u32 = 3;
/// aria2's redirect limit.
const MAX_REDIRECTS: u32 = 20;
/// Registered memory ringdl aims for at most, whatever the limit allows.
const POOL_CAP: usize = 8 << 20;
/// Most connection slots.
const MAX_SLOTS: usize = 64;

/// What an operation in flight is for; the reactor hands it back with the completion. Connection
/// operations name the connection by slot and id, so one that outlived its connection is known;
/// file operations carry the generation of the file they were issued on, so a completion from a
/// file that was replaced never lands in the new file's state.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Tag {
    Connect {
        slot: usize,
        id: Owner,
    },
    /// A protocol's second connection (FTP's data connection) connected, or not.
    DataConnect {
        slot: usize,
        id: Owner,
    },
    /// ... or accepted from the server (active mode), or not.
    DataAccept {
        slot: usize,
        id: Owner,
    },
    /// What the data connection says to the proxy for its tunnel went out (from `sent`).
    DataTunnelSend {
        slot: usize,
        id: Owner,
        sent: usize,
    },
    /// The proxy's answer for the data connection's tunnel.
    DataTunnelRead {
        slot: usize,
        id: Owner,
    },
    /// The download's bytes read back to be sent on connection `slot` (`driver/serve.rs`).
    ServeRead {
        file: FileOf,
        slot: usize,
        id: Owner,
    },
    /// ... and sent from their block.
    ServeSend {
        slot: usize,
        id: Owner,
    },
    Recv {
        slot: usize,
        id: Owner,
        direct: bool,
    },
    Send {
        slot: usize,
        id: Owner,
        sent: usize,
    },
    Write {
        file: FileOf,
        off: u64,
        len: usize,
        done: usize,
        /// Bytes of real data at the front of `len` (the rest is padding).
        data: usize,
        /// The file's write mode when this write was issued.
        mode: WriteMode,
        /// A download over several files: which part of the block this is.
        span: Option<SpanWrite>,
    },
    Writeback {
        file: FileOf,
    },
    /// A one-off timer (rate limits, retry waits).
    Timer {
        at: Instant,
    },
    /// A new output file created (or not) by the file-job thread.
    Opened {
        file: FileOf,
    },
    /// A finished file cut to its length by the file-job thread.
    Truncated {
        file: FileOf,
    },
    /// Allocating a new file's space ahead of its writes.
    Fallocate {
        file: FileOf,
    },
    /// Reading the finished file back to check its digest.
    VerifyRead {
        file: FileOf,
        off: u64,
    },
    /// Reading a piece back to finish its check (`pieces.rs`), from `at`.
    PieceRead {
        file: FileOf,
        rb: crate::engine::pieces::ReadBack,
        at: u64,
    },
    /// A control file saved (or not) by the file-job thread.
    ControlSaved {
        file: FileOf,
    },
    ControlRemoved,
    /// The RPC server: an accept on listener `listener`, a client's read or send, an answer held
    /// back for a refused token.
    RpcAccept {
        listener: usize,
    },
    RpcRead {
        slot: usize,
        id: u64,
    },
    RpcSent {
        slot: usize,
        id: u64,
        sent: usize,
    },
    RpcHeld {
        slot: usize,
        id: u64,
    },
    /// The session file saved (or not) by the file-job thread.
    SessionSaved,
    /// A lookup through `--async-dns-server`: connection `conn`'s, its try `try_no`.
    Dns {
        conn: u64,
        try_no: u64,
        op: lookup::DnsOp,
    },
    Tick,
    Wake,
    Signal,
}

/// Where a write stood when it completed.
#[derive(Debug, Clone, Copy)]
struct WriteDone {
    off: u64,
    len: usize,
    done: usize,
    data: usize,
    mode: WriteMode,
    span: Option<SpanWrite>,
}

/// One file's part of a block of a download over several files: its parts are written one after
/// the other from the same block, `off` (the write's) being where this part starts in the
/// download.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(in crate::engine) struct SpanWrite {
    /// The file (its place in the layout).
    file: usize,
    /// Where the part starts in the file.
    at: u64,
    /// Where the part starts in the block.
    mem: usize,
    /// The block's place in the download, and the bytes of it to write.
    block_off: u64,
    block_data: usize,
}

struct Engine<'a, R: Reactor<Tag>> {
    /// Dropped first: it drains every operation while everything else is still there.
    reactor: R,
    s: &'a Config,
    console: &'a mut dyn Report,
    conns: Vec<Option<Conn>>,
    /// Downloads started so far; a finished one's place is reused by the next job.
    dls: Vec<Download>,
    jobs: &'a mut dyn Iterator<Item = Job>,
    jobs_done: bool,
    /// Outside daemon mode: what takes a Metalink a download fetched to follow.
    follower: Option<start::Follower>,
    /// Metalinks that describe running downloads (`describedby`), to fetch at once.
    described_jobs: std::collections::VecDeque<Job>,
    summary: Summary,
    /// Built when the first https:// connection needs it.
    tls: Option<TlsConfig>,
    /// Rate limits and the timers in flight (`pace.rs` owns them).
    pace: pace::Pacer,
    /// Name resolution off the loop (none in the simulation, whose URLs name addresses).
    resolver: Option<Resolver>,
    /// `--async-dns-server`'s lookups on the ring (`lookup.rs`).
    ring_dns: Option<lookup::RingDns>,
    /// The server performance profile (`select.rs`).
    server_stats: crate::store::serverstat::ServerStats,
    wake: Option<Fd>,
    wake_op: Option<OpId>,
    signals: Option<Fd>,
    sig_op: Option<OpId>,
    /// The first Ctrl-C/SIGTERM arrived: finish in-flight writes, start nothing new.
    stopping: bool,
    /// The second one: drop what is not on disk yet and leave as soon as the writes in flight end.
    emergency: bool,
    /// Notices conversations gave (said once a run, however many connections give them).
    noticed: std::collections::HashSet<String>,
    tick: Duration,
    tick_op: Option<OpId>,
    dns: connection::DnsCache,
    next_id: u64,
    /// Waits for a write block begun so far: a waiting connection's place in the line.
    waits: u64,
    /// Full blocks waiting to be written, in the order they filled.
    flushes: Flushes,
    last_summary: Instant,
    /// The run's cookies and the netrc file's credentials (`credentials.rs` owns them).
    identity: credentials::Identity,
    /// The proxies' addresses, resolved at the start (`proxy.rs` owns them).
    proxy_addrs: proxy::ProxyAddrs,
    /// Daemon mode (`--enable-rpc`): the RPC server and the session's saves (`daemon.rs`).
    daemon: Option<Box<daemon::DaemonIo>>,
    /// Daemon mode: the daemon above the engine (`crate::daemon`), taken out while it answers a
    /// call.
    sup: Option<Box<dyn crate::engine::Supervisor>>,
    /// Downloads that ended while the daemon was answering a call, for it to take.
    ends: Vec<(crate::engine::Ended, Outcome)>,
    /// Their outcomes, once the daemon took them, until it says what becomes of them.
    taken_ends: Vec<Outcome>,
    /// Event hooks still running (`hooks.rs`): reaped when they end, never waited for.
    hooks_running: Vec<std::process::Child>,
    /// When the run began (`--stop`).
    began: Instant,
    /// `--interface`/`--multiple-interface`: each entry's addresses; connections take the
    /// entries in turn.
    binds: Vec<Vec<std::net::IpAddr>>,
}

/// A random 64-bit number (GIDs, DNS query ids).
pub fn random_gid() -> u64 {
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos()),
    );
    h.finish()
}

fn errno_text(res: i32) -> String {
    sys::cause(&std::io::Error::from_raw_os_error(-res))
}

/// What a run did: the last results (at most `MAX_RESULTS`, in the order the downloads ended) and
/// the counts that decide the exit code.
#[derive(Debug, Default)]
pub struct Summary {
    pub results: Vec<Outcome>,
    /// Code of the last download that ended with an error (aria2: the last error wins).
    pub last_error: Option<ExitCode>,
    /// Downloads stopped before they finished (Ctrl-C).
    pub unfinished: usize,
    pub total: usize,
    /// A second Ctrl-C ended the run.
    pub emergency: bool,
    /// `--save-session` outside daemon mode: the session's text, when a download went into it.
    pub session: Option<String>,
}

/// How many finished downloads are remembered for the results table (aria2's
/// `--max-download-result` default); older ones only count towards the exit code.
pub const MAX_RESULTS: usize = 1000;

/// aria2's message for a range request answered with something else (here: the whole file).
fn invalid_range_header(first: u64, last: u64, total: u64) -> String {
    format!(
        "Invalid range header. Request: {first}-{last}/{total}, Response: 0-{}/{total}",
        total.saturating_sub(1)
    )
}

/// An answer to a range request sent with `If-Range: asked` (the version of the bytes already on
/// disk): whether it says the file changed since. A whole (200) answer carrying another version
/// (or none) did; one carrying the same says that the server ignores ranges. A range (206)
/// carrying another version comes from a server that ignored `If-Range`. The bytes already there
/// must then never be mixed with the new file's, nor claimed for it.
fn changed_since(resp: &http::ResponseHead, asked: &str) -> bool {
    // An entity tag is compared with the answer's entity tag (weak or strong alike: a proxy may
    // weaken one), a date with its Last-Modified.
    let tag = |t: &str| t.strip_prefix("W/").unwrap_or(t).to_string();
    let theirs = match asked.starts_with('"') || asked.starts_with("W/") {
        true => resp.etag.as_deref().map(tag),
        false => resp.last_modified.clone(),
    };
    match theirs {
        // A range (206) carrying another version's validator: the server ignored If-Range, and
        // its bytes are not of the file the others came from.
        Some(v) => v != tag(asked),
        // A whole answer without one cannot be told from a new version; a range without one is
        // taken on its word.
        None => resp.status == 200,
    }
}

/// The error for [`changed_since`].
fn file_changed() -> (ExitCode, String) {
    (
        ExitCode::UNKNOWN,
        "The file on the server changed since this partial download began (If-Range did not match); remove the partial file or use --allow-overwrite=true --remove-control-file".to_string(),
    )
}

/// Appends the session entry of a job that never started (the rest of a stopped run's list), for
/// `--save-session` outside daemon mode: a GID is made for it, as aria2 gives every entry one.
pub fn session_entry_of_job(out: &mut String, job: &Job, command_line: &[(&'static str, String)]) {
    let gid = job.opts.gid.unwrap_or_else(random_gid);
    crate::store::session::session_entry(out, &job.uris, gid, false, command_line, &job.own);
}

/// A socket operation that ended with `res` did nothing and is simply issued again (EINTR, or
/// EAGAIN from a reactor that tried too early): downloads and RPC connections alike.
pub(super) fn nothing_happened(res: i32) -> bool {
    res == -libc::EINTR || res == -libc::EAGAIN
}

impl<R: Reactor<Tag>> Engine<'_, R> {
    fn run_loop(&mut self) -> std::io::Result<()> {
        self.arm_wake();
        self.arm_signal();
        let mut done = Vec::with_capacity(256);
        loop {
            self.schedule();
            if self.jobs_done
                && self.dls.iter().all(|d| d.state == DlState::Finished)
                && self.rpc_done()
            {
                return Ok(());
            }
            if self.tick_op.is_none() {
                self.tick_op = Some(self.reactor.timer(Tag::Tick, self.tick));
            }
            self.reactor.wait(&mut done)?;
            for c in done.drain(..) {
                self.complete(c);
            }
            self.unpark_released();
            self.submit_flushes();
            // Blocks freed on any path go to what waits for them.
            self.wake_starved();
            if cfg!(debug_assertions) {
                self.check_owners();
                self.check_waits();
            }
        }
    }

    /// No connection waits for a write block while it keeps a part-filled one: with every block
    /// kept so, none would ever come back (a deadlock). Checked after every step of every debug
    /// run.
    fn check_waits(&self) {
        for c in self.conns.iter().flatten() {
            assert!(
                !(c.starved.is_some() && c.fill.as_ref().is_some_and(|f| f.filled > 0)),
                "connection {:?} waits for a write block and keeps a part-filled one",
                c.id
            );
        }
    }

    /// Every unfinished range is owned by nobody or by a live connection working for its download:
    /// a range owned by a connection that is gone would never be fetched (a hang). Checked after
    /// every step of every debug run, so every test checks it.
    fn check_owners(&self) {
        // Connections and flushes name their download by place: it must not have ended (its
        // place could be given to the next job) while they do.
        let named = self.conns.iter().flatten().flat_map(|c| {
            let ex = c.ex.as_ref().map(|e| e.dl);
            ex.into_iter().chain(c.want.as_ref().map(|w| w.dl))
        });
        for dl in named.chain(self.flushes.downloads()) {
            assert!(
                self.dls
                    .get(dl)
                    .is_some_and(|d| d.state != DlState::Finished),
                "a connection or a flush names download {dl}, which has ended"
            );
        }
        // An exchange belongs to its download's current attempt: one started over closes the
        // connections of the attempt it forgot (`start_over`).
        for c in self.conns.iter().flatten() {
            if let Some(ex) = c.ex.as_ref() {
                assert!(
                    self.dls.get(ex.dl).is_none_or(|d| d.attempt == ex.attempt),
                    "CUID#{} carries an exchange of a download's forgotten attempt",
                    c.id
                );
            }
        }
        if let Some(sup) = self.sup.as_deref() {
            sup.check();
        }
        for (dl, d) in self.dls.iter().enumerate() {
            // A download told to stop (Ctrl-C, or paused or removed over RPC) that is still
            // waiting for its writes asks for nothing more: no connection wanted, none on the way.
            if d.halted && d.state == DlState::Active {
                let connecting = self
                    .conns
                    .iter()
                    .flatten()
                    .any(|c| c.want.as_ref().is_some_and(|w| w.dl == dl));
                assert!(
                    d.wanted == 0 && !connecting,
                    "download {dl} was stopped but wants a connection"
                );
            }
            let Some(plan) = d.plan.as_ref().filter(|_| d.state == DlState::Active) else {
                continue;
            };
            for owner in plan.active_owners() {
                let alive = self
                    .conns
                    .iter()
                    .flatten()
                    .any(|c| c.id == owner && c.works_for(dl));
                assert!(
                    alive,
                    "download {dl}: a range is owned by connection {owner}, which is gone"
                );
            }
        }
    }

    /// Closes every connection and waits for every operation in flight (invariant 2); the reactor
    /// does the waiting, and would do it on its own if the engine were dropped by a panic.
    fn drain(&mut self) {
        for slot in 0..self.conns.len() {
            self.close_conn(slot);
        }
        self.rpc_stop();
        if let Some(sup) = self.sup.take() {
            (self.summary.last_error, self.summary.unfinished) = sup.exit_state();
        }
        self.daemon = None;
        self.flushes.drop_all();
        self.reactor.shutdown();
    }

    /// After a run every block is back in the pool: anything else is a leak the types did not
    /// catch, and a test run must not pass with one.
    fn check_pool(&self) {
        let (reads, writes) = self.reactor.pool().outstanding();
        if (reads, writes) != (0, 0) {
            let msg = format!(
                "internal error: {reads} read and {writes} write blocks not back in the pool"
            );
            if cfg!(debug_assertions) {
                panic!("{msg}");
            }
            self.console_log_error(&msg);
        }
    }

    fn console_log_error(&self, msg: &str) {
        eprintln!("ringdl: {msg}");
    }

    fn complete(&mut self, c: Completion<Tag>) {
        let Completion {
            id: op,
            tag,
            res,
            owned,
        } = c;
        match tag {
            Tag::Connect { slot, id } => {
                if self.forget_op(slot, id, op) {
                    self.on_connect(slot, res);
                }
            }
            Tag::DataConnect { slot, id } => {
                if self.forget_op(slot, id, op) {
                    self.on_data_connect(slot, res);
                }
            }
            Tag::DataAccept { slot, id } => {
                if self.forget_op(slot, id, op) {
                    self.on_data_accept(slot, res, owned);
                }
            }
            Tag::DataTunnelSend { slot, id, sent } => {
                if self.forget_op(slot, id, op) {
                    let buf = owned.into_bytes().unwrap_or_default();
                    self.on_data_tunnel_send(slot, res, buf, sent);
                }
            }
            Tag::DataTunnelRead { slot, id } => {
                if self.forget_op(slot, id, op) {
                    let buf = owned.into_bytes().unwrap_or_default();
                    self.on_data_tunnel_read(slot, res, buf);
                }
            }
            Tag::ServeRead { file, slot, id } => {
                let block = owned.into_block();
                if self.file_op_done(file).is_some() {
                    self.on_serve_read(slot, id, block, res);
                }
            }
            Tag::ServeSend { slot, id } => {
                if self.forget_op(slot, id, op) {
                    self.on_serve_send(slot, res, owned.into_block());
                }
            }
            Tag::Recv { slot, id, direct } => {
                if self.forget_op(slot, id, op) {
                    self.on_recv(slot, res, direct, owned.into_block());
                }
            }
            Tag::Send { slot, id, sent } => {
                if self.forget_op(slot, id, op) {
                    let buf = owned.into_bytes().unwrap_or_default();
                    self.on_send(slot, res, buf, sent);
                }
            }
            Tag::Write {
                file,
                off,
                len,
                done,
                data,
                mode,
                span,
            } => {
                let block = owned.into_block();
                if let Some(dl) = self.file_op_done(file) {
                    if let Some(block) = block {
                        let w = WriteDone {
                            off,
                            len,
                            done,
                            data,
                            mode,
                            span,
                        };
                        self.on_write(dl, block, w, res);
                    }
                }
            }
            Tag::VerifyRead { file, off } => {
                let block = owned.into_block();
                if let Some(dl) = self.file_op_done(file) {
                    if let Some(block) = block {
                        self.on_verify_read(dl, block, off, res);
                    }
                }
            }
            Tag::PieceRead { file, rb, at } => {
                let block = owned.into_block();
                if let Some(dl) = self.file_op_done(file) {
                    self.on_piece_read(dl, block, rb, at, res);
                }
            }
            Tag::Timer { at } => self.on_timer(at),
            Tag::Truncated { file } => {
                if let Some(dl) = self.file_op_done(file) {
                    self.on_truncated(dl, res);
                }
            }
            Tag::Opened { file } => {
                if let Some(dl) = self.file_op_done(file) {
                    self.on_opened(dl);
                }
            }
            Tag::Fallocate { file } => {
                if let Some(dl) = self.file_op_done(file) {
                    self.on_fallocate(dl, res);
                }
            }
            Tag::Writeback { file } => {
                if let Some(dl) = self.file_op_done(file) {
                    self.on_writeback(dl, res);
                }
            }
            Tag::ControlSaved { file } => self.on_control_saved(file, res),
            Tag::ControlRemoved => {}
            Tag::RpcAccept { listener } => self.on_rpc_accept(listener, res, owned),
            Tag::RpcRead { slot, id } => self.on_rpc_read(slot, id, res, owned),
            Tag::RpcSent { slot, id, sent } => self.on_rpc_sent(slot, id, sent, res, owned),
            Tag::RpcHeld { slot, id } => self.on_rpc_held(slot, id),
            Tag::SessionSaved => self.on_session_saved(op, res),
            Tag::Dns { conn, try_no, op } => self.on_dns(conn, try_no, op, res, owned),
            Tag::Tick => {
                self.tick_op = None;
                self.on_tick();
            }
            Tag::Wake => {
                self.wake_op = None;
                self.on_wake();
                if Self::rearm(res) {
                    self.arm_wake();
                }
            }
            Tag::Signal => {
                self.sig_op = None;
                if res > 0 {
                    self.on_signal();
                }
                if Self::rearm(res) {
                    self.arm_signal();
                }
            }
        }
    }

    /// Whether a descriptor read that ended with `res` should be issued again: not when the
    /// descriptor failed, which would only fail again at once, for ever.
    fn rearm(res: i32) -> bool {
        res >= 0 || nothing_happened(res) || res == -libc::ECANCELED
    }

    /// Drops the completed operation from connection `slot`'s list. False if the connection it was
    /// for is gone (its slot empty or holding another connection).
    fn forget_op(&mut self, slot: usize, id: Owner, op: OpId) -> bool {
        match self.conns.get_mut(slot).and_then(Option::as_mut) {
            Some(c) if c.id == id => {
                c.inflight.retain(|o| *o != op);
                true
            }
            _ => false,
        }
    }

    /// The place of download `id`, if it is still there (not replaced by a later job's).
    pub(super) fn live(&self, id: DlId) -> Option<usize> {
        self.dls
            .get(id.slot)
            .filter(|d| d.id == id)
            .map(|_| id.slot)
    }

    /// A file operation on `file` completed. The download's place if that file is still the
    /// download's; a completion for a replaced file only counts down the old generation's
    /// operations (the new file's writes wait for them, see `submit_flushes`).
    fn file_op_done(&mut self, file: FileOf) -> Option<usize> {
        // A download ends only once its file operations have (`maybe_finish`), so its place
        // cannot have been taken by another.
        let Some(dl) = self.live(file.dl) else {
            debug_assert!(false, "a file operation outlived its download: {file:?}");
            return None;
        };
        let d = &mut self.dls[dl];
        if d.generation == file.generation {
            d.writes -= 1;
            Some(dl)
        } else {
            d.old_writes = d.old_writes.saturating_sub(1);
            if d.old_writes == 0 {
                if let Some(job) = d.parked_open.take() {
                    let file = d.file_of();
                    self.reactor.blocking(Tag::Opened { file }, job);
                }
            }
            self.maybe_finish(dl);
            None
        }
    }

    fn on_wake(&mut self) {
        let answers: Vec<_> = self
            .resolver
            .as_ref()
            .map(|r| r.answers().collect())
            .unwrap_or_default();
        for (id, result) in answers {
            self.on_resolved(id, result);
        }
    }

    /// The addresses found for connection `id`'s server (or why there are none).
    fn on_resolved(&mut self, id: u64, result: Result<Vec<SocketAddr>, String>) {
        let Some(slot) = self.conns.iter().position(|c| {
            c.as_ref()
                .is_some_and(|c| c.id == id && c.state == ConnState::Resolving)
        }) else {
            return;
        };
        let (host, port) = match &self.conns[slot] {
            Some(c) => (c.server.host.clone(), c.server.port),
            None => return,
        };
        match result {
            Ok(addrs) => {
                self.dns.insert(host, port, addrs.clone());
                let socks = self.conns[slot].as_mut().filter(|c| c.proxy.is_some());
                if let Some(c) = socks {
                    // socks5://: the target's address goes to the proxy.
                    c.socks_target = addrs.first().map(SocketAddr::ip);
                    self.connect_to_proxy(slot);
                } else {
                    self.connect_to(slot, addrs);
                }
            }
            Err(e) => {
                let f = Failure::retry(
                    ExitCode::RESOLVE,
                    format!("Name resolution for {host} failed: {e}"),
                );
                self.fail_conn(slot, f);
            }
        }
    }

    fn arm_signal(&mut self) {
        let Some(fd) = self.signals.clone() else {
            return;
        };
        if self.sig_op.is_some() {
            return;
        }
        let buf = vec![0; sys::SIGINFO_SIZE];
        self.sig_op = Some(self.reactor.read(Tag::Signal, fd, buf));
    }

    /// First Ctrl-C/SIGTERM: stop every download where it is, after its writes complete. A second
    /// one drops what is not on disk yet and leaves as soon as the writes in flight end (they are
    /// never abandoned: a control file then claims only what they wrote).
    fn on_signal(&mut self) {
        if let (Some(d), false) = (self.daemon.as_deref_mut(), self.stopping) {
            d.shutdown.get_or_insert(Instant::now());
        }
        if self.stopping {
            if !self.emergency {
                self.emergency = true;
                self.summary.emergency = true;
                self.console.finish();
                self.console.notice("Emergency shutdown.");
                self.flushes.drop_all();
                for slot in 0..self.conns.len() {
                    self.close_conn(slot);
                }
                for dl in 0..self.dls.len() {
                    self.maybe_finish(dl);
                }
            }
            return;
        }
        self.console
            .notice("Shutdown sequence commencing... Press Ctrl-C again for emergency shutdown.");
        self.halt();
    }

    /// Stops every download where it is, after its writes complete (the first Ctrl-C, `--stop`,
    /// `--stop-with-process`).
    fn halt(&mut self) {
        if let Some(d) = self.daemon.as_deref_mut() {
            d.shutdown.get_or_insert(Instant::now());
        }
        self.stopping = true;
        self.jobs_done = true;
        for dl in 0..self.dls.len() {
            if self.dls[dl].state == DlState::Finished {
                continue;
            }
            self.dls[dl].halted = true;
            self.dls[dl].wanted = 0;
            if self.dls[dl].state == DlState::Waiting {
                self.dls[dl].state = DlState::Finished;
                self.record(dl);
                continue;
            }
            self.stop_conns(dl);
            self.maybe_finish(dl);
        }
    }

    /// `--stop` and `--stop-with-process`: the run stops as on a first Ctrl-C once the time has
    /// passed or the process is gone (checked at each tick, about once a second, as aria2c does).
    fn auto_stop(&mut self) {
        if self.stopping {
            return;
        }
        let now = self.reactor.now();
        let secs = self.s.stop_after;
        if secs > 0 && now.saturating_duration_since(self.began).as_secs() >= secs {
            self.console.notice(&format!(
                "{secs} second(s) has passed. Stopping application."
            ));
            self.halt();
            return;
        }
        if let Some(pid) = self.s.stop_with_process {
            if !std::path::Path::new(&format!("/proc/{pid}")).exists() {
                self.console.log(
                    LogLevel::Info,
                    &format!("Process {pid} is not running. Commencing shutdown."),
                );
                self.halt();
            }
        }
    }

    fn arm_wake(&mut self) {
        if self.wake_op.is_some() {
            return;
        }
        let Some(fd) = self.wake.clone() else { return };
        self.wake_op = Some(self.reactor.read(Tag::Wake, fd, vec![0; 8]));
    }

    fn on_tick(&mut self) {
        self.autosave();
        self.reap_hooks();
        self.auto_stop();
        self.rpc_tick();
        // A verification that found no free block waits for one here.
        for dl in 0..self.dls.len() {
            let d = &self.dls[dl];
            if d.state == DlState::Active && d.expected.is_some() && !d.verifying && !d.verified {
                self.maybe_finish(dl);
            }
        }
        self.reclaim_blocks();
        let now = self.reactor.now();
        let connect_timeout = Duration::from_secs(self.s.connect_timeout_secs);
        self.data_overdue(now, connect_timeout);
        // A connection that went quiet reads whatever arrives again.
        for c in self.conns.iter_mut().flatten() {
            if c.low_water.quiet(now) {
                if let Some(fd) = c.fd.as_ref() {
                    self.reactor.recv_low_water(fd, 1);
                }
            }
        }
        let mut active = Vec::new();
        let mut paths = Vec::new();
        let mut speeds = Vec::new();
        let counts: Vec<usize> = (0..self.dls.len()).map(|i| self.conn_count(i)).collect();
        for (i, d) in self
            .dls
            .iter_mut()
            .enumerate()
            .filter(|(_, d)| d.state == DlState::Active)
        {
            let speed = d.sample_speed(now);
            speeds.push((i, speed));
            active.push(Progress {
                gid: d.gid,
                done: d.received(),
                total: d.total(),
                connections: counts[i],
                speed,
            });
            paths.push(
                d.path
                    .as_ref()
                    .map_or_else(|| d.first_uri.clone(), |p| p.display().to_string()),
            );
        }
        self.console.tick(&active);
        let (reads, writes) = self.reactor.pool().outstanding();
        self.console.log(
            LogLevel::Debug,
            &format!(
                "engine: {} operations in flight, {} connections, {reads} read and {writes} write blocks out, {} downloads held",
                self.reactor.in_flight(),
                self.conns.iter().filter(|c| c.is_some()).count(),
                self.dls.len(),
            ),
        );
        for (dl, speed) in speeds {
            self.check_slow(dl, speed);
        }
        let every = self.s.summary_interval;
        if every > 0 && now.duration_since(self.last_summary).as_secs() >= every {
            self.last_summary = now;
            self.console.summary(&active, &paths);
        }
    }
}
