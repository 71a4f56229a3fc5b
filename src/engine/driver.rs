//! The loop: stage every operation a step produces, one `submit_and_wait`, harvest every completion,
//! turn each into calls on the connection, the download and the protocol layers, and repeat until
//! every download has ended and every operation in flight has completed.
use super::conn::{
    http_failure, BodySink, Conn, ConnState, DlState, Download, Exchange, Failure, Fill, Flush,
    Job, Outcome, Phase, RecvInFlight, ServerKey, Validator, Want,
};
use super::reactor::{Block, Class, Completion, Fd, Layout, OpId, Pool, Reactor, SetupError};
use super::resolver::Resolver;
use super::sys;
use crate::cli::{LogLevel, Settings};
use crate::http::{self, Framing, RequestSpec};
use crate::plan::{Owner, Plan};
use crate::store;
use crate::tls::{PlainSink, TlsConfig, TlsSession, MIN_INCOMING};
use crate::ui::exit::ExitCode;
use crate::ui::{Console, Progress};
use std::collections::{HashMap, VecDeque};
use std::fmt;
use std::hash::{BuildHasher, Hasher};
use std::net::SocketAddr;
use std::os::fd::AsRawFd;
use std::rc::Rc;
use std::time::{Duration, Instant};
use url::Url;

mod pace;
mod resume;
use resume::CannotResume;
mod verify;

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

/// aria2's redirect limit.
const MAX_REDIRECTS: u32 = 20;
/// Registered memory ringdl aims for at most, whatever the limit allows.
const POOL_CAP: usize = 8 << 20;
/// Most connection slots.
const MAX_SLOTS: usize = 64;

/// Why the engine could not start.
#[derive(Debug)]
pub enum StartError {
    /// io_uring is refused or incomplete here.
    NoIoUring(String),
    /// Not even one connection's buffers fit the locked-memory limit.
    Memlock {
        needed: usize,
        limit: Option<u64>,
    },
    Other(String),
}

impl fmt::Display for StartError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StartError::NoIoUring(why) => write!(
                f,
                "io_uring is not available ({why}); ringdl needs Linux 5.6 or later with io_uring allowed (check sysctl kernel.io_uring_disabled, seccomp or container settings)"
            ),
            StartError::Memlock { needed, limit } => write!(
                f,
                "cannot lock {} KiB of memory for I/O buffers (RLIMIT_MEMLOCK is {}); raise it with 'ulimit -l {}'",
                needed / 1024,
                limit.map_or("unlimited".to_string(), |l| format!("{} KiB", l / 1024)),
                needed.div_ceil(1024) + 64
            ),
            StartError::Other(m) => f.write_str(m),
        }
    }
}

/// What an operation in flight is for; the reactor hands it back with the completion. Connection
/// operations name the connection by slot and id, so one that outlived its connection is known;
/// file operations carry the generation of the file they were issued on, so a completion from a
/// file that was replaced never lands in the new file's state.
#[derive(Debug, Clone, Copy)]
enum Tag {
    Connect {
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
        dl: usize,
        generation: u64,
        off: u64,
        len: usize,
        done: usize,
        /// Bytes of real data at the front of `len` (the rest is padding).
        data: usize,
        /// The file was in O_DIRECT mode when this write was issued.
        direct: bool,
    },
    Writeback {
        dl: usize,
        generation: u64,
    },
    /// A one-off timer (rate limits, retry waits).
    Timer {
        at: Instant,
    },
    /// Allocating a new file's space ahead of its writes.
    Fallocate {
        dl: usize,
        generation: u64,
    },
    /// Reading the finished file back to check its digest.
    VerifyRead {
        dl: usize,
        generation: u64,
        off: u64,
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
    direct: bool,
}

struct Engine<'a> {
    /// Dropped first: it drains every operation while everything else is still there.
    reactor: Reactor<Tag>,
    s: &'a Settings,
    console: &'a mut Console,
    conns: Vec<Option<Conn>>,
    /// Downloads started so far; a finished one's place is reused by the next job.
    dls: Vec<Download>,
    jobs: &'a mut dyn Iterator<Item = Job>,
    jobs_done: bool,
    summary: Summary,
    /// Built when the first https:// connection needs it.
    tls: Option<TlsConfig>,
    /// `--max-overall-download-limit`.
    overall: Option<super::conn::Bucket>,
    /// When the timers in flight fire.
    timers: Vec<Instant>,
    resolver: Resolver,
    wake: Fd,
    wake_op: Option<OpId>,
    signals: Option<Fd>,
    sig_op: Option<OpId>,
    /// The first Ctrl-C/SIGTERM arrived: finish in-flight writes, start nothing new.
    stopping: bool,
    /// The second one: drop what is not on disk yet and leave as soon as the writes in flight end.
    emergency: bool,
    tick: Duration,
    tick_op: Option<OpId>,
    dns: HashMap<(String, u16), Vec<SocketAddr>>,
    next_id: u64,
    /// Full blocks waiting to be written, in the order they filled.
    flushes: VecDeque<Flush>,
    last_summary: Instant,
}

/// Most names kept in the DNS cache; past that it starts afresh.
const DNS_CACHE: usize = 256;

fn random_gid() -> u64 {
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

/// Runs every job to its end. `jobs` is pulled only as downloads can start, so a list of a million
/// entries is never in memory at once; `expected` (when known) sizes the buffer pool.
pub fn run(
    settings: &Settings,
    jobs: &mut dyn Iterator<Item = Job>,
    expected: Option<usize>,
    console: &mut Console,
) -> Result<Summary, StartError> {
    let opts = &settings.download;
    let per_dl = opts
        .split
        .min(opts.max_conn_per_server.saturating_mul(4))
        .max(1);
    let concurrent = settings
        .max_concurrent
        .min(expected.unwrap_or(usize::MAX))
        .max(1);
    let slots = per_dl.saturating_mul(concurrent).clamp(1, MAX_SLOTS);
    let read_size = MIN_INCOMING;
    let limit = sys::memlock_soft_limit();
    let budget = limit.map_or(POOL_CAP, |l| {
        (l as usize).saturating_sub(64 * 1024).min(POOL_CAP)
    });
    let layout = Layout::fit(slots, read_size, budget).ok_or(StartError::Memlock {
        needed: read_size + 4 * 64 * 1024,
        limit,
    })?;
    let tick = console.tick_interval();
    let pool =
        Pool::new(layout).map_err(|e| StartError::Other(format!("cannot map I/O buffers: {e}")))?;
    let reactor = Reactor::new(
        512,
        Duration::from_secs(settings.timeout_secs),
        Duration::from_secs(settings.connect_timeout_secs),
        pool,
    )
    .map_err(|e| match e {
        SetupError::Unavailable(why) => StartError::NoIoUring(why),
        SetupError::Register(e) if matches!(e.raw_os_error(), Some(libc::ENOMEM | libc::EPERM)) => {
            StartError::Memlock {
                needed: layout.bytes(),
                limit,
            }
        }
        SetupError::Register(e) => {
            StartError::NoIoUring(format!("registering buffers failed: {e}"))
        }
    })?;
    // Before any thread starts, so every thread has the signals blocked and only the ring sees them.
    let signals = sys::signal_fd().ok().map(|f| Rc::new(f) as Fd);
    let resolver =
        Resolver::start().map_err(|e| StartError::Other(format!("cannot start resolver: {e}")))?;
    let wake: Fd = Rc::new(resolver.wake_fd());
    let mut engine = Engine {
        reactor,
        s: settings,
        console,
        conns: (0..layout.reads).map(|_| None).collect(),
        dls: Vec::new(),
        jobs,
        jobs_done: false,
        summary: Summary::default(),
        tls: None,
        overall: (settings.max_overall_download_limit > 0)
            .then(|| super::conn::Bucket::new(settings.max_overall_download_limit)),
        timers: Vec::new(),
        resolver,
        wake,
        wake_op: None,
        signals,
        sig_op: None,
        stopping: false,
        emergency: false,
        tick,
        tick_op: None,
        dns: HashMap::new(),
        next_id: 1,
        flushes: VecDeque::new(),
        last_summary: Instant::now(),
    };
    let result = engine.run_loop();
    engine.drain();
    result.map_err(|e| StartError::Other(format!("io_uring failed: {e}")))?;
    engine.check_pool();
    Ok(std::mem::take(&mut engine.summary))
}

impl Engine<'_> {
    fn run_loop(&mut self) -> std::io::Result<()> {
        self.arm_wake();
        self.arm_signal();
        let mut done = Vec::with_capacity(256);
        loop {
            self.schedule();
            if self.jobs_done && self.dls.iter().all(|d| d.state == DlState::Finished) {
                return Ok(());
            }
            if self.tick_op.is_none() {
                self.tick_op = Some(self.reactor.timer(Tag::Tick, self.tick));
            }
            self.reactor.wait(&mut done)?;
            for c in done.drain(..) {
                self.complete(c);
            }
            self.submit_flushes();
        }
    }

    /// Closes every connection and waits for every operation in flight (invariant 2); the reactor
    /// does the waiting, and would do it on its own if the engine were dropped by a panic.
    fn drain(&mut self) {
        for slot in 0..self.conns.len() {
            self.close_conn(slot);
        }
        self.flushes.clear();
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

    /// Adds the ended download `dl` to the summary; its place can then take the next job.
    fn record(&mut self, dl: usize) {
        let d = &self.dls[dl];
        let seconds = match (d.started, d.ended) {
            (Some(a), Some(b)) => b.duration_since(a).as_secs_f64(),
            _ => 0.0,
        };
        let outcome = Outcome {
            gid: d.gid,
            code: d.error.as_ref().map_or(ExitCode::OK, |f| f.code),
            finished: !d.halted,
            path: d.path.clone(),
            first_uri: d.first_uri.clone(),
            bytes: if d.no_data { 0 } else { d.received() },
            total: d.total(),
            seconds,
        };
        let sum = &mut self.summary;
        sum.total += 1;
        if outcome.code != ExitCode::OK {
            sum.last_error = Some(outcome.code);
        } else if !outcome.finished {
            sum.unfinished += 1;
        }
        if sum.results.len() == MAX_RESULTS {
            sum.results.remove(0);
        }
        sum.results.push(outcome);
    }

    /// Takes the next job, if a download may start, into a free place of `dls`.
    fn next_download(&mut self) -> Option<usize> {
        if self.jobs_done {
            return None;
        }
        let Some(job) = self.jobs.next() else {
            self.jobs_done = true;
            return None;
        };
        let first = job.uris.first().cloned().unwrap_or_default();
        let mut urls = Vec::new();
        let mut bad = None;
        for u in &job.uris {
            match crate::cli::check_uri(u).and_then(|_| Url::parse(u).map_err(|e| e.to_string())) {
                Ok(url) => urls.push(url),
                Err(e) => bad = Some(e),
            }
        }
        let d = Download::new(random_gid(), urls, first, job.opts);
        let reusable = self.dls.iter().position(|d| d.state == DlState::Finished);
        let i = match reusable {
            Some(i) => {
                self.dls[i] = d;
                i
            }
            None => {
                self.dls.push(d);
                self.dls.len() - 1
            }
        };
        if self.dls[i].uris.is_empty() {
            let why = bad.unwrap_or_else(|| "no URI".to_string());
            self.dls[i].state = DlState::Active;
            self.fail_download(i, Failure::fatal(ExitCode::UNKNOWN, why), None);
        }
        Some(i)
    }

    // ---- scheduling -------------------------------------------------------------------------

    fn schedule(&mut self) {
        if self.stopping {
            return;
        }
        let active = self
            .dls
            .iter()
            .filter(|d| d.state == DlState::Active)
            .count();
        let mut room = self.s.max_concurrent.saturating_sub(active);
        while room > 0 {
            let Some(i) = self.next_download() else { break };
            if self.dls[i].state == DlState::Waiting {
                self.start_download(i);
                room -= 1;
            }
        }
        for i in 0..self.dls.len() {
            if self.dls[i].state != DlState::Active || self.dls[i].error.is_some() {
                continue;
            }
            while self.dls[i].wanted > 0 {
                if !self.open_extra(i) {
                    break;
                }
                self.dls[i].wanted -= 1;
            }
            self.check_stalled(i);
        }
    }

    fn start_download(&mut self, i: usize) {
        let d = &mut self.dls[i];
        d.state = DlState::Active;
        let now = Instant::now();
        d.started = Some(now);
        d.samples.push_back((now, 0));
        if let Some(out) = &d.opts.out {
            // Named by -o: failures show the path it would have had, as aria2 does.
            d.path = Some(d.opts.dir.join(out));
        }
        if let Err(f) = self.prepare_resume(i) {
            self.fail_download(i, f, None);
            return;
        }
        if self.dls[i].checking_existing {
            // -V: the digest of the file on disk decides whether anything is fetched.
            self.maybe_finish(i);
            return;
        }
        let d = &mut self.dls[i];
        let Some(mirror) = d.bad_uris.iter().position(|b| !b) else {
            return;
        };
        let url = d.uris[mirror].clone();
        d.wanted = 0;
        if !self.open(Want {
            dl: i,
            url,
            mirror,
            redirects: 0,
        }) {
            self.dls[i].wanted = 1;
        }
    }

    /// Opens (or reuses) a connection for one more worker on download `i`. False if no slot is free.
    fn open_extra(&mut self, i: usize) -> bool {
        let working = self.conn_count(i);
        let d = &self.dls[i];
        let usable: Vec<usize> = (0..d.uris.len()).filter(|&m| !d.bad_uris[m]).collect();
        if usable.is_empty() {
            return true;
        }
        let mirror = usable[working % usable.len()];
        let url = match (&d.split_url, d.plan.is_some()) {
            (Some((m, u)), true) if *m == mirror => u.clone(),
            _ => d.uris[mirror].clone(),
        };
        self.open(Want {
            dl: i,
            url,
            mirror,
            redirects: 0,
        })
    }

    /// A download with work left but nobody working on it.
    fn check_stalled(&mut self, i: usize) {
        let working = self.conn_count(i);
        let d = &self.dls[i];
        if working > 0 || d.wanted > 0 || d.plan.is_none() || d.error.is_some() {
            return;
        }
        let Some(plan) = &d.plan else { return };
        if plan.is_complete() {
            return;
        }
        if d.ranges_ok {
            self.dls[i].wanted = 1;
        } else {
            let f = d.soft_error.clone().unwrap_or_else(|| {
                Failure::fatal(
                    ExitCode::CANNOT_RESUME,
                    "the server does not support ranges and the connection that could finish the file is gone",
                )
            });
            self.fail_download(i, f, None);
        }
    }

    /// Starts work `w` on an idle kept-alive connection to its server, or on a new connection.
    fn open(&mut self, w: Want) -> bool {
        let key = ServerKey::of(&w.url);
        let idle = self.conns.iter().position(|c| {
            c.as_ref()
                .is_some_and(|c| c.state == ConnState::Idle && c.server == key)
        });
        if let Some(slot) = idle {
            if let Some(c) = self.conns[slot].as_mut() {
                c.state = ConnState::Open;
                c.want = Some(w);
                c.reused = true;
            }
            self.dispatch(slot);
            return true;
        }
        let slot = match self.conns.iter().position(Option::is_none) {
            Some(s) => s,
            None => {
                // Make room by closing an idle connection to another server.
                let Some(victim) = self
                    .conns
                    .iter()
                    .position(|c| c.as_ref().is_some_and(|c| c.state == ConnState::Idle))
                else {
                    return false;
                };
                self.close_conn(victim);
                victim
            }
        };
        // A closed connection's read block comes back when its last operation completes; until
        // then no new connection can start.
        let Some(rbuf) = self.reactor.pool().alloc(Class::Read) else {
            return false;
        };
        let id = self.next_id;
        self.next_id += 1;
        let mut conn = Conn::new(id, key.clone(), rbuf);
        let host = w.url.host().map(|h| h.to_owned());
        conn.want = Some(w);
        self.conns[slot] = Some(conn);
        match host {
            Some(url::Host::Ipv4(a)) => {
                self.connect_to(slot, vec![SocketAddr::new(a.into(), key.port)])
            }
            Some(url::Host::Ipv6(a)) => {
                self.connect_to(slot, vec![SocketAddr::new(a.into(), key.port)])
            }
            _ => {
                if let Some(addrs) = self.dns.get(&(key.host.clone(), key.port)) {
                    let addrs = addrs.clone();
                    self.connect_to(slot, addrs);
                } else {
                    self.resolver.lookup(id, &key.host, key.port);
                }
            }
        }
        true
    }

    fn connect_to(&mut self, slot: usize, addrs: Vec<SocketAddr>) {
        if let Some(c) = self.conns[slot].as_mut() {
            c.state = ConnState::Connecting { addrs, next: 0 };
        }
        self.connect_next(slot);
    }

    fn connect_next(&mut self, slot: usize) {
        let Some(c) = self.conns[slot].as_mut() else {
            return;
        };
        let ConnState::Connecting { addrs, next } = &mut c.state else {
            return;
        };
        let Some(addr) = addrs.get(*next).copied() else {
            let f = if c.connect_error == -libc::ECANCELED {
                Failure::retry(ExitCode::TIMEOUT, "Timeout while connecting to the server")
            } else {
                Failure::retry(
                    ExitCode::UNKNOWN,
                    format!(
                        "Failed to establish connection, cause: {}",
                        errno_text(c.connect_error)
                    ),
                )
            };
            self.fail_conn(slot, f);
            return;
        };
        *next += 1;
        let (id, retrying) = (c.id, *next > 1);
        if retrying {
            let failed = addrs[*next - 2];
            let why = errno_text(c.connect_error);
            self.console.log(
                LogLevel::Info,
                &format!(
                    "CUID#{id} - Could not connect to {failed} ({why}). Trying another address"
                ),
            );
        }
        self.console
            .log(LogLevel::Info, &format!("CUID#{id} - Connecting to {addr}"));
        let Some(c) = self.conns[slot].as_mut() else {
            return;
        };
        match sys::tcp_socket(&addr) {
            Ok(fd) => {
                let fd = Rc::new(fd);
                c.fd = Some(fd.clone());
                let op = self
                    .reactor
                    .connect(Tag::Connect { slot, id }, fd, sys::raw_addr(&addr));
                c.inflight.push(op);
            }
            Err(e) => {
                let f = Failure::retry(ExitCode::UNKNOWN, format!("cannot create socket: {e}"));
                self.fail_conn(slot, f);
            }
        }
    }

    // ---- completions ------------------------------------------------------------------------

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
                dl,
                generation,
                off,
                len,
                done,
                data,
                direct,
            } => {
                let block = owned.into_block();
                if self.file_op_done(dl, generation) {
                    if let Some(block) = block {
                        let w = WriteDone {
                            off,
                            len,
                            done,
                            data,
                            direct,
                        };
                        self.on_write(dl, block, w, res);
                    }
                }
            }
            Tag::VerifyRead {
                dl,
                generation,
                off,
            } => {
                let block = owned.into_block();
                if self.file_op_done(dl, generation) {
                    if let Some(block) = block {
                        self.on_verify_read(dl, block, off, res);
                    }
                }
            }
            Tag::Timer { at } => self.on_timer(at),
            Tag::Fallocate { dl, generation } => {
                if self.file_op_done(dl, generation) {
                    self.on_fallocate(dl, res);
                }
            }
            Tag::Writeback { dl, generation } => {
                if self.file_op_done(dl, generation) {
                    self.on_writeback(dl, res);
                }
            }
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
        res >= 0 || res == -libc::EINTR || res == -libc::EAGAIN || res == -libc::ECANCELED
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

    /// A file operation of download `dl` on the file of `generation` completed. True if that file
    /// is still the download's; a completion for a replaced file only counts down the old
    /// generation's operations (the new file's writes wait for them, see `submit_flushes`).
    fn file_op_done(&mut self, dl: usize, generation: u64) -> bool {
        let Some(d) = self.dls.get_mut(dl) else {
            return false;
        };
        if d.generation == generation {
            d.writes -= 1;
            true
        } else {
            d.old_writes = d.old_writes.saturating_sub(1);
            self.maybe_finish(dl);
            false
        }
    }

    fn on_wake(&mut self) {
        let answers: Vec<_> = self.resolver.answers().collect();
        for (id, result) in answers {
            let Some(slot) = self.conns.iter().position(|c| {
                c.as_ref()
                    .is_some_and(|c| c.id == id && c.state == ConnState::Resolving)
            }) else {
                continue;
            };
            let (host, port) = match &self.conns[slot] {
                Some(c) => (c.server.host.clone(), c.server.port),
                None => continue,
            };
            match result {
                Ok(addrs) => {
                    if self.dns.len() >= DNS_CACHE {
                        self.dns.clear();
                    }
                    self.dns.insert((host, port), addrs.clone());
                    self.connect_to(slot, addrs);
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
        if self.stopping {
            if !self.emergency {
                self.emergency = true;
                self.summary.emergency = true;
                self.console.finish();
                self.console.notice("Emergency shutdown.");
                self.flushes.clear();
                for slot in 0..self.conns.len() {
                    self.close_conn(slot);
                }
                for dl in 0..self.dls.len() {
                    self.maybe_finish(dl);
                }
            }
            return;
        }
        self.stopping = true;
        self.jobs_done = true;
        self.console
            .notice("Shutdown sequence commencing... Press Ctrl-C again for emergency shutdown.");
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

    /// Closes every connection working for download `dl`, keeping what they wrote.
    fn stop_conns(&mut self, dl: usize) {
        for slot in 0..self.conns.len() {
            let mine = self.conns[slot].as_ref().is_some_and(|c| c.works_for(dl));
            if mine {
                self.return_range(slot);
                self.close_conn(slot);
            }
        }
    }

    fn arm_wake(&mut self) {
        if self.wake_op.is_some() {
            return;
        }
        let fd = self.wake.clone();
        self.wake_op = Some(self.reactor.read(Tag::Wake, fd, vec![0; 8]));
    }

    fn on_connect(&mut self, slot: usize, res: i32) {
        if res < 0 {
            // Refused, unreachable or timed out: try the next address.
            if let Some(c) = self.conns[slot].as_mut() {
                c.fd = None;
                c.connect_error = res;
            }
            self.connect_next(slot);
            return;
        }
        let tls = match self.conns[slot].as_mut() {
            Some(c) => {
                c.state = ConnState::Open;
                c.server.https
            }
            None => return,
        };
        if tls {
            if self.tls.is_none() {
                match TlsConfig::new(self.s.ca_certificate.as_deref(), self.s.check_certificate) {
                    Ok(c) => self.tls = Some(c),
                    Err(e) => {
                        self.fail_conn(slot, Failure::fatal(ExitCode::UNKNOWN, e.to_string()));
                        return;
                    }
                }
            }
            let Some(cfg) = &self.tls else { return };
            let session = {
                let Some(c) = self.conns[slot].as_ref() else {
                    return;
                };
                let host = url::Host::parse(&c.server.host).or_else(|_| {
                    url::Host::parse(c.server.host.trim_start_matches('[').trim_end_matches(']'))
                });
                match host {
                    Ok(h) => {
                        let h: url::Host<&str> = match &h {
                            url::Host::Domain(d) => url::Host::Domain(d.as_str()),
                            url::Host::Ipv4(a) => url::Host::Ipv4(*a),
                            url::Host::Ipv6(a) => url::Host::Ipv6(*a),
                        };
                        TlsSession::new(cfg, &h).map_err(|e| e.to_string())
                    }
                    Err(e) => Err(e.to_string()),
                }
            };
            match session {
                Ok(s) => {
                    if let Some(c) = self.conns[slot].as_mut() {
                        c.tls = Some(s);
                    }
                }
                Err(e) => {
                    self.fail_conn(slot, Failure::fatal(ExitCode::UNKNOWN, e));
                    return;
                }
            }
        }
        self.dispatch(slot);
    }

    /// A connected (or reused) connection starts the exchange it was opened for.
    fn dispatch(&mut self, slot: usize) {
        let Some(w) = self.conns[slot].as_mut().and_then(|c| c.want.take()) else {
            return;
        };
        let reserve = self.split_reserve();
        let d = &mut self.dls[w.dl];
        if d.state != DlState::Active || d.error.is_some() {
            self.release_conn(slot, w.dl);
            return;
        }
        let Some(c) = self.conns[slot].as_ref() else {
            return;
        };
        let ex = match d.plan.as_mut() {
            None => Exchange::new(w.dl, w.url, w.mirror, d.continue_from.map(|l| (l, None)), 0),
            Some(plan) => {
                if !d.ranges_ok {
                    self.release_conn(slot, w.dl);
                    return;
                }
                match plan.take(c.id, |_| reserve) {
                    Some(seg) => {
                        let s = plan.segment(seg);
                        let total = plan.total();
                        let last = if s.end == total {
                            None
                        } else {
                            Some(s.end - 1)
                        };
                        let last = last.or(Some(total - 1));
                        Exchange::new(w.dl, w.url, w.mirror, Some((s.pos, last)), seg)
                    }
                    None => {
                        self.release_conn(slot, w.dl);
                        return;
                    }
                }
            }
        };
        let mut ex = ex;
        ex.redirects = w.redirects;
        self.begin_exchange(slot, ex);
    }

    /// The connection has no work for download `dl` any more: keep it for reuse.
    fn release_conn(&mut self, slot: usize, dl: usize) {
        let reusable = self.conns[slot].as_ref().is_some_and(|c| {
            c.state == ConnState::Open && !c.eof && !c.tls_peer_closed && c.fd.is_some()
        });
        if reusable {
            if let Some(c) = self.conns[slot].as_mut() {
                c.state = ConnState::Idle;
                c.ex = None;
                c.want = None;
            }
        } else {
            self.close_conn(slot);
        }
        self.maybe_finish(dl);
    }

    fn begin_exchange(&mut self, slot: usize, ex: Exchange) {
        let mut req = Vec::with_capacity(512);
        let d = &self.dls[ex.dl];
        let mut headers = d.opts.headers.clone();
        if let (Some(since), None) = (&d.if_modified_since, ex.range) {
            headers.push(format!("If-Modified-Since: {since}"));
        }
        let if_range = d.validator.as_ref().and_then(|v| v.for_url(&ex.url));
        if let (Some(v), Some(_)) = (if_range, ex.range) {
            headers.push(format!("If-Range: {v}"));
        }
        http::write_request(
            &RequestSpec {
                method: if d.opts.dry_run { "HEAD" } else { "GET" },
                url: &ex.url,
                range: ex.range,
                user_agent: &d.opts.user_agent,
                headers: &headers,
                keep_alive: true,
            },
            &mut req,
        );
        let Some(c) = self.conns[slot].as_mut() else {
            return;
        };
        c.ex = Some(ex);
        c.eof = false;
        if c.tls.is_some() {
            c.plain_out = req;
        } else {
            c.out.extend_from_slice(&req);
        }
        self.pump(slot);
        self.after_io(slot);
    }

    fn start_send(&mut self, slot: usize) {
        let Some(c) = self.conns[slot].as_mut() else {
            return;
        };
        if c.sending || c.out.is_empty() {
            return;
        }
        let Some(fd) = c.fd.clone() else {
            return;
        };
        let buf = std::mem::take(&mut c.out);
        c.sending = true;
        let tag = Tag::Send {
            slot,
            id: c.id,
            sent: 0,
        };
        let op = self.reactor.send(tag, fd, buf, 0);
        c.inflight.push(op);
    }

    fn on_send(&mut self, slot: usize, res: i32, buf: Vec<u8>, sent: usize) {
        if res == -libc::EINTR
            || res == -libc::EAGAIN
            || (res > 0 && sent + (res as usize) < buf.len())
        {
            let sent = if res > 0 { sent + res as usize } else { sent };
            let Some(c) = self.conns[slot].as_mut() else {
                return;
            };
            let Some(fd) = c.fd.clone() else {
                return;
            };
            let tag = Tag::Send {
                slot,
                id: c.id,
                sent,
            };
            let op = self.reactor.send(tag, fd, buf, sent);
            c.inflight.push(op);
            return;
        }
        if res < 0 {
            let code = if res == -libc::ECANCELED {
                ExitCode::TIMEOUT
            } else {
                ExitCode::UNKNOWN
            };
            self.fail_conn(
                slot,
                Failure::retry(code, format!("send failed: {}", errno_text(res))),
            );
            return;
        }
        if let Some(c) = self.conns[slot].as_mut() {
            c.sending = false;
        }
        self.start_send(slot);
    }

    /// A receive completed; `block` is the buffer it received into, back from the kernel: the
    /// connection's read block, or (`direct`) its fill's write block.
    fn on_recv(&mut self, slot: usize, res: i32, direct: bool, block: Option<Block>) {
        let Some(c) = self.conns[slot].as_mut() else {
            return;
        };
        let inflight = c.recv.take();
        if let Some(block) = block {
            match inflight.and_then(|r| r.fill) {
                Some((off, filled)) if direct => {
                    c.fill = Some(Fill { block, off, filled });
                }
                _ => c.rbuf = Some(block),
            }
        }
        if res == -libc::EINTR || res == -libc::EAGAIN {
            self.after_io(slot);
            return;
        }
        if res < 0 {
            let (code, msg) = if res == -libc::ECANCELED {
                (
                    ExitCode::TIMEOUT,
                    "Timeout while receiving data from the server".to_string(),
                )
            } else {
                (
                    ExitCode::UNKNOWN,
                    format!("receive failed: {}", errno_text(res)),
                )
            };
            self.fail_conn(slot, Failure::retry(code, msg));
            return;
        }
        if res == 0 {
            if let Some(c) = self.conns[slot].as_mut() {
                c.eof = true;
            }
            if !direct {
                self.pump(slot);
            }
            self.on_eof(slot);
            return;
        }
        let n = res as usize;
        if let Some(dl) = self.conns[slot]
            .as_ref()
            .and_then(|c| c.ex.as_ref())
            .map(|e| e.dl)
        {
            self.charge(dl, n as u64);
        }
        if direct {
            self.received_direct(slot, n);
        } else {
            if let Some(c) = self.conns[slot].as_mut() {
                c.rb_end += n;
            }
            self.pump(slot);
        }
        self.after_io(slot);
    }

    /// Bytes of a plain body arrived straight in the connection's write block.
    fn received_direct(&mut self, slot: usize, n: usize) {
        let write_size = self.reactor.pool().size(Class::Write);
        let Some(c) = self.conns[slot].as_mut() else {
            return;
        };
        let (Some(ex), Some(fill)) = (c.ex.as_mut(), c.fill.as_mut()) else {
            return;
        };
        ex.any_bytes = true;
        fill.filled += n;
        if let Framing::Length(_) = ex.framing {
            ex.remaining = ex.remaining.saturating_sub(n as u64);
            if ex.remaining == 0 {
                ex.body_complete = true;
            }
        }
        let d = &mut self.dls[ex.dl];
        let Some(plan) = d.plan.as_mut() else { return };
        if plan.segment(ex.seg).owner != Some(c.id) {
            // Taken over by the whole-file response: these bytes are somebody else's now.
            ex.unusable = true;
            ex.overruled = true;
            c.fill = None;
            return;
        }
        plan.advance(ex.seg, n as u64);
        let seg_end = plan.segment(ex.seg).end;
        let end = fill.off + fill.filled as u64;
        if fill.filled == write_size || end == seg_end {
            if let Some(fill) = c.fill.take() {
                self.flushes.push_back(Flush {
                    dl: ex.dl,
                    fill,
                    at_file_end: end == plan.total(),
                });
            }
        }
    }

    /// Runs the protocol layers over the unprocessed bytes of the connection's read block.
    fn pump(&mut self, slot: usize) {
        for _ in 0..4 {
            let Some(c) = self.conns[slot].as_mut() else {
                return;
            };
            let ranges_unconfirmed =
                c.ex.as_ref()
                    .is_some_and(|ex| !self.dls[ex.dl].ranges_confirmed);
            let plan = match c.ex.as_ref() {
                Some(ex) => self.dls[ex.dl].plan.as_mut(),
                None => None,
            };
            // Without its read block the connection has a receive in flight; its completion pumps.
            let Some(rbuf) = c.rbuf.as_mut() else { return };
            let read_size = rbuf.len();
            let rb = &mut rbuf.as_mut_slice()[c.rb_start..c.rb_end];
            let pool = self.reactor.pool();
            if let Some(tls) = c.tls.as_mut() {
                let mut idle = IdleSink { got_data: false };
                let mut body;
                let sink: &mut dyn PlainSink = match c.ex.as_mut() {
                    Some(ex) => {
                        body = BodySink {
                            owner: c.id,
                            ex,
                            fill: &mut c.fill,
                            blocks: pool,
                            plan,
                            ranges_unconfirmed,
                            flushes: &mut self.flushes,
                        };
                        &mut body
                    }
                    None => &mut idle,
                };
                match tls.process(rb, &mut c.out, &mut c.plain_out, sink) {
                    Ok(step) => {
                        c.rb_start += step.consumed;
                        c.tls_blocked = step.sink_full;
                        if step.peer_closed {
                            c.tls_peer_closed = true;
                        }
                        if idle.got_data {
                            // Data on an idle connection: it cannot be trusted for another request.
                            c.eof = true;
                        }
                    }
                    Err(e) => {
                        let f = match e {
                            crate::tls::TlsError::Certificate(_) => {
                                Failure::fatal(ExitCode::UNKNOWN, e.to_string())
                            }
                            _ => Failure::retry(ExitCode::UNKNOWN, e.to_string()),
                        };
                        self.fail_conn(slot, f);
                        return;
                    }
                }
            } else if let Some(ex) = c.ex.as_mut() {
                if ex.spill.is_empty() {
                    let mut sink = BodySink {
                        owner: c.id,
                        ex,
                        fill: &mut c.fill,
                        blocks: pool,
                        plan,
                        ranges_unconfirmed,
                        flushes: &mut self.flushes,
                    };
                    sink.feed(rb);
                    c.rb_start = c.rb_end;
                }
            } else {
                c.rb_start = c.rb_end;
            }
            if c.rb_start == c.rb_end {
                c.rb_start = 0;
                c.rb_end = 0;
            } else if read_size - c.rb_end < 20 * 1024 && c.rb_start > 0 {
                let (a, b) = (c.rb_start, c.rb_end);
                if let Some(rbuf) = c.rbuf.as_mut() {
                    rbuf.as_mut_slice().copy_within(a..b, 0);
                }
                c.rb_start = 0;
                c.rb_end = b - a;
            }
            let decide = c.ex.as_ref().is_some_and(|ex| ex.phase == Phase::Decide);
            if !decide {
                return;
            }
            self.on_head(slot);
        }
    }

    /// What to do with a parsed response head.
    fn on_head(&mut self, slot: usize) {
        let Some(c) = self.conns[slot].as_mut() else {
            return;
        };
        let Some(ex) = c.ex.as_mut() else { return };
        let Some(resp) = ex.response.take() else {
            return;
        };
        let dl = ex.dl;
        let seg_i = ex.seg;
        let status = resp.status;
        let conn_id = c.id;
        if http::is_redirect(status) {
            let Some(loc) = resp.location.as_deref() else {
                self.fail_conn(
                    slot,
                    Failure::fatal(
                        ExitCode::HTTP_PROTOCOL,
                        format!("Got {status} status, but no location header provided."),
                    ),
                );
                return;
            };
            let next = match http::resolve_location(&ex.url, loc) {
                Ok(u) => u,
                Err(e) => {
                    self.fail_conn(slot, Failure::fatal(ExitCode::HTTP_PROTOCOL, e.to_string()));
                    return;
                }
            };
            if ex.redirects + 1 > MAX_REDIRECTS {
                self.fail_conn(
                    slot,
                    Failure::fatal(
                        ExitCode::TOO_MANY_REDIRECTS,
                        format!("Too many redirects: count={MAX_REDIRECTS}"),
                    ),
                );
                return;
            }
            let w = Want {
                dl,
                url: next.clone(),
                mirror: ex.mirror,
                redirects: ex.redirects + 1,
            };
            self.console
                .notice(&format!("CUID#{conn_id} - Redirecting to {next}"));
            // The redirect's body is not wanted; a fresh connection is simpler than skipping it.
            self.close_exchange_conn(slot);
            if !self.open(w) {
                self.dls[dl].wanted += 1;
            }
            return;
        }
        if status == 304 && self.dls[dl].if_modified_since.is_some() {
            // --conditional-get: the local file is as new as the server's; it stays as it is.
            self.finish_without_body(dl, None);
            self.close_exchange_conn(slot);
            self.maybe_finish(dl);
            return;
        }
        let range = ex.range;
        let mirror = ex.mirror;
        let is_range = range.is_some();
        let uri = ex.url.to_string();
        let others_working = is_range
            && self.conns.iter().flatten().any(|o| {
                o.id != conn_id
                    && o.ex
                        .as_ref()
                        .is_some_and(|e| e.dl == dl && e.phase == Phase::Body)
            });
        if !(200..300).contains(&status) && others_working && self.s.retry_wait == 0 {
            // A range request refused while other connections carry the file: this connection
            // gives up (as aria2's do) and its range goes back to them.
            self.say_aborted(
                conn_id,
                &uri,
                ExitCode::for_http_status(status),
                &format!("The response status is not successful. status={status}"),
            );
            self.dls[dl].ranges_ok = false;
            self.dls[dl].soft_error = Some(Failure::retry(
                ExitCode::for_http_status(status),
                format!("The response status is not successful. status={status}"),
            ));
            self.abandon_exchange(slot);
            return;
        }
        if !(200..300).contains(&status) {
            let code = ExitCode::for_http_status(status);
            let msg = match status {
                404 => format!("Resource not found. status={status}"),
                401 => format!("Authorization failed. status={status}"),
                _ => format!("The response status is not successful. status={status}"),
            };
            let d = &mut self.dls[dl];
            // aria2 retries 502/503 only with --retry-wait (honouring Retry-After here), and 504
            // always.
            if matches!(status, 502 | 503) && self.s.retry_wait > 0 || status == 504 {
                let wait = resp.retry_after.map_or(self.s.retry_wait, |s| s.min(600));
                self.fail_conn(slot, Failure::retry(code, msg).after(wait));
                return;
            }
            if status == 404 && d.opts.max_file_not_found > 0 {
                d.not_found += 1;
                let limit = d.opts.max_file_not_found;
                let f = if d.not_found >= limit {
                    Failure::fatal(
                        ExitCode(4),
                        format!("{msg}; {limit} 'not found' answers (--max-file-not-found)"),
                    )
                } else {
                    Failure::retry(code, msg)
                };
                self.fail_conn(slot, f);
                return;
            }
            d.bad_uris[mirror] = true;
            if d.bad_uris.iter().all(|b| *b) {
                self.fail_conn(slot, Failure::fatal(code, msg));
            } else {
                // Another mirror may have it.
                self.fail_conn(slot, Failure::retry(code, msg));
            }
            return;
        }
        let framing = resp.framing(self.dls[dl].opts.dry_run);
        match range {
            None => {
                if let Err(f) = self.accept_first_response(slot, &resp, framing) {
                    self.fail_conn(slot, f);
                    return;
                }
            }
            Some((first, _)) if self.dls[dl].plan.is_none() => {
                // -c: the first request asked for the rest of the existing file.
                if let Err(f) = self.accept_continued(slot, &resp, first) {
                    self.fail_conn(slot, f);
                    return;
                }
            }
            Some((first, last)) => {
                let seg_owner = self.dls[dl]
                    .plan
                    .as_ref()
                    .and_then(|p| p.segment(seg_i).owner);
                if seg_owner != Some(conn_id) {
                    // The whole-file response took this range over while we waited.
                    self.close_exchange_conn(slot);
                    self.maybe_finish(dl);
                    return;
                }
                let total = self.dls[dl].total();
                let d = &self.dls[dl];
                let remote_total = resp.content_range.and_then(|cr| cr.complete_length);
                if d.resumed && !d.ranges_confirmed && status == 206 && remote_total != total {
                    // The file on the server is not the one the partial file is part of.
                    let f = Failure::fatal(
                        ExitCode::UNKNOWN,
                        format!(
                            "total length mismatch. expected: {}, actual: {}",
                            remote_total.unwrap_or(0),
                            total.unwrap_or(0)
                        ),
                    );
                    self.fail_conn(slot, f);
                    return;
                }
                let asked = self.conns[slot]
                    .as_ref()
                    .and_then(|c| c.ex.as_ref())
                    .and_then(|ex| d.validator.as_ref().and_then(|v| v.for_url(&ex.url)));
                if d.resumed
                    && !d.ranges_confirmed
                    && status == 200
                    && asked.is_some()
                    && d.opts.always_resume
                {
                    // If-Range was sent with the partial file's version: a whole answer means the
                    // file changed since, and its bytes must not be mixed with the old ones; or,
                    // when the answer still carries that version, that the server ignores ranges.
                    // Another mirror may still serve the old file.
                    let same = resp.etag.as_deref().or(resp.last_modified.as_deref()) == asked;
                    let (code, msg) = if same {
                        (
                            ExitCode::CANNOT_RESUME,
                            invalid_range_header(first, last.unwrap_or(0), total.unwrap_or(0)),
                        )
                    } else {
                        (ExitCode::UNKNOWN, "The file on the server changed since this partial download began (If-Range did not match); remove the partial file or use --allow-overwrite=true --remove-control-file".to_string())
                    };
                    let f = match self.cannot_resume(slot) {
                        CannotResume::NextMirror => Failure::retry(code, msg),
                        _ => Failure::fatal(code, msg),
                    };
                    self.fail_conn(slot, f);
                    return;
                }
                let check = match (status, resp.content_range) {
                    (206, Some(cr)) => cr.check(first, last, total).map_err(http_failure),
                    _ => Err(Failure::retry(
                        ExitCode::CANNOT_RESUME,
                        invalid_range_header(first, last.unwrap_or(0), total.unwrap_or(0)),
                    )),
                };
                let d = &self.dls[dl];
                let resuming = d.resumed && !d.ranges_confirmed && status == 200;
                let decision = match &check {
                    Err(_) if resuming => self.cannot_resume(slot),
                    _ => CannotResume::Fail,
                };
                if let (Err(f), CannotResume::NextMirror | CannotResume::ScratchElsewhere) =
                    (&check, decision)
                {
                    // This mirror cannot resume; another one goes on (or starts over).
                    let mut f = Failure::retry(f.code, f.message.clone());
                    f.from_scratch = decision == CannotResume::ScratchElsewhere;
                    self.fail_conn(slot, f);
                    return;
                }
                if let (Err(f), CannotResume::ScratchHere) = (&check, decision) {
                    // Resuming is impossible here and --always-resume=false: start over.
                    let why = f.message.clone();
                    self.say_cannot_resume(slot, &why);
                    if let Err(f) = self.restart_from_scratch(slot, &resp, framing) {
                        self.fail_conn(slot, f);
                        return;
                    }
                } else if let Err(f) = check {
                    let d = &self.dls[dl];
                    let others = d.other_mirrors(mirror);
                    if others {
                        // This mirror cannot serve ranges: drop it (aria2c does) and let the
                        // others go on splitting. A resumed download has no whole-body stream to
                        // fall back on, so turning ranges off would end it with exit 8.
                        self.fail_conn(slot, Failure::retry(f.code, f.message));
                        return;
                    }
                    // The server cannot serve this range: stop splitting, let the sequential
                    // connection finish the file, as aria2 does.
                    self.dls[dl].ranges_ok = false;
                    let uri = self.conns[slot]
                        .as_ref()
                        .and_then(|c| c.ex.as_ref())
                        .map(|e| e.url.to_string())
                        .unwrap_or_default();
                    self.say_aborted(conn_id, &uri, f.code, &f.message);
                    self.dls[dl].soft_error = Some(f);
                    self.abandon_exchange(slot);
                    return;
                }
                if !self.dls[dl].ranges_confirmed && status == 206 {
                    self.dls[dl].ranges_confirmed = true;
                    self.end_parked(dl);
                    if self.dls[dl].resumed {
                        // A resumed download starts on one connection; now that ranges work, the
                        // others join.
                        let working = self.conn_count(dl);
                        let d = &self.dls[dl];
                        let more = d.connections_wanted().saturating_sub(working);
                        self.dls[dl].wanted += more;
                    }
                }
            }
        }
        let Some(c) = self.conns[slot].as_mut() else {
            return;
        };
        let Some(ex) = c.ex.as_mut() else { return };
        ex.start_body(framing);
        if !resp.keep_alive || framing == Framing::UntilClose {
            ex.unusable = true;
        }
        let rest = std::mem::take(&mut ex.head_rest);
        if !rest.is_empty() {
            let ranges_unconfirmed = !self.dls[dl].ranges_confirmed;
            let plan = self.dls[dl].plan.as_mut();
            let mut sink = BodySink {
                owner: c.id,
                ex,
                fill: &mut c.fill,
                blocks: self.reactor.pool(),
                plan,
                ranges_unconfirmed,
                flushes: &mut self.flushes,
            };
            sink.unframe(&rest);
        }
    }

    /// The first response of a download: name and open the file, make the plan, ask for helpers.
    fn accept_first_response(
        &mut self,
        slot: usize,
        resp: &http::ResponseHead,
        framing: Framing,
    ) -> Result<(), Failure> {
        let Some((c, ex)) = self.exchange_at(slot) else {
            return Ok(());
        };
        let conn_id = c.id;
        let (dl, mirror) = (ex.dl, ex.mirror);
        let url = ex.url.clone();
        let total = match (framing, resp.status, resp.content_range) {
            (Framing::Length(n), 200, _) => Some(n),
            (Framing::Length(n), 206, Some(cr))
                if cr.first == 0 && cr.complete_length == Some(n) =>
            {
                Some(n)
            }
            (Framing::Empty, _, _) => Some(0),
            (Framing::Length(_), 206, _) => {
                return Err(Failure::fatal(
                    ExitCode::HTTP_PROTOCOL,
                    "unexpected partial content",
                ));
            }
            _ => None,
        };
        let d = &mut self.dls[dl];
        d.last_modified = resp.last_modified.clone();
        d.validator = Validator::of(resp, &url);
        if d.opts.dry_run {
            let name = d
                .opts
                .out
                .clone()
                .unwrap_or_else(|| http::filename_from_url(&url));
            let path = d.opts.dir.join(name);
            self.finish_without_body(dl, Some((path, total.unwrap_or(0))));
            return Ok(());
        }
        // Whether this response creates the file (not a retry that goes on writing into it).
        let created = d.file.is_none();
        let mut allocating = false;
        if created {
            let name = match d.opts.out.clone() {
                Some(o) => o,
                None => resp
                    .content_disposition
                    .as_deref()
                    .and_then(http::filename_from_content_disposition)
                    .unwrap_or_else(|| http::filename_from_url(&url)),
            };
            // Until the file is open, failures still name the path it would have had (as aria2).
            d.path = Some(d.opts.dir.join(&name));
            let (path, renamed) = store::choose_path(
                &d.opts.dir,
                &name,
                d.opts.allow_overwrite,
                d.opts.auto_file_renaming,
                |p| p.exists(),
            )
            .map_err(|e| match e {
                store::PathError::Exists(_) => Failure::fatal(ExitCode::FILE_EXISTS, e.to_string()),
                store::PathError::NoFreeName(_) => {
                    Failure::fatal(ExitCode::RENAME_FAILED, e.to_string())
                }
            })?;
            if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
                std::fs::create_dir_all(parent).map_err(|e| {
                    Failure::fatal(
                        ExitCode::MKDIR,
                        format!(
                            "Failed to make the directory {}, cause: {}",
                            parent.display(),
                            sys::cause(&e)
                        ),
                    )
                })?;
            }
            if renamed {
                self.console.notice(&format!(
                    "File already exists. Renamed to {}.",
                    path.display()
                ));
            }
            // A download starting over keeps its old control file until this one replaces it
            // (below); one under another name belongs to a file this run leaves alone.
            let d = &mut self.dls[dl];
            if d.control.as_ref() != Some(&store::control::control_path(&path)) {
                d.control = None;
            }
            let out = store::open_output(&path, true).map_err(|e| {
                Failure::fatal(
                    ExitCode::FILE_CREATE,
                    format!(
                        "Failed to open the file {}, cause: {}",
                        path.display(),
                        sys::cause(&e)
                    ),
                )
            })?;
            let d = &mut self.dls[dl];
            if !out.direct {
                self.console.notice(&format!(
                    "{}: O_DIRECT is not supported here; writing through the page cache and dropping it behind",
                    path.display()
                ));
            }
            d.direct = out.direct;
            let fd = out.file.as_raw_fd();
            if let Some(v) = &d.validator {
                sys::set_validator(fd, &v.encode());
            }
            d.open_file(out.file);
            d.path = Some(path);
            if let Some(n) = total.filter(|&n| n > 0 && n >= d.opts.no_file_allocation_limit) {
                allocating = true;
                self.allocate(dl, n);
            }
        }
        let one_block = total.is_some_and(|n| n <= self.reactor.pool().size(Class::Write) as u64);
        let d = &mut self.dls[dl];
        let mut plan = Plan::new(total.unwrap_or(u64::MAX), d.opts.min_split_size);
        plan.assign(0, conn_id);
        d.length_known = total.is_some();
        d.ranges_ok = total.is_some() && !resp.accept_ranges_none;
        d.split_url = Some((mirror, url));
        if d.ranges_ok {
            let pieces = plan.presplit(d.connections_wanted());
            d.wanted += pieces.saturating_sub(1);
        }
        d.plan = Some(plan);
        if created && !allocating && one_block && d.control.is_none() {
            // The whole body fits one write block, so its only write is its last and the file
            // stays empty until then: there is nothing to resume yet. Its control file waits for
            // the next tick (within a second; `autosave`), so a small file that finishes before
            // does not pay for creating, renaming and removing one. Stops and failures save it.
        } else {
            // The control file exists from the start, like aria2's, for a file of known length.
            self.save_control(dl);
        }
        Ok(())
    }

    fn on_eof(&mut self, slot: usize) {
        let Some(c) = self.conns[slot].as_mut() else {
            return;
        };
        let Some(ex) = c.ex.as_mut() else {
            // An idle or handshaking connection closed.
            if c.want.is_none() {
                self.close_conn(slot);
            }
            return;
        };
        match ex.phase {
            Phase::Body if ex.framing == Framing::UntilClose || ex.body_complete => {
                ex.body_complete = true;
                ex.unusable = true;
                self.check_exchange(slot);
            }
            Phase::Head if !ex.any_bytes && c.reused => {
                // The server dropped a kept-alive connection we reused: redo on a fresh one.
                let w = Want {
                    dl: ex.dl,
                    url: ex.url.clone(),
                    mirror: ex.mirror,
                    redirects: ex.redirects,
                };
                let dl = ex.dl;
                self.abandon_exchange(slot);
                if !self.open(w) {
                    self.dls[dl].wanted += 1;
                }
            }
            _ => {
                let f = Failure::retry(ExitCode::UNKNOWN, "Got EOF from the server.");
                self.fail_conn(slot, f);
            }
        }
    }

    /// After any event on a connection: finish or continue its exchange, keep it reading and sending.
    fn after_io(&mut self, slot: usize) {
        self.check_exchange(slot);
        self.start_send(slot);
        self.arm_recv(slot);
    }

    fn check_exchange(&mut self, slot: usize) {
        let Some(c) = self.conns[slot].as_mut() else {
            return;
        };
        let Some(ex) = c.ex.as_mut() else { return };
        if let Some(f) = ex.error.take() {
            self.fail_conn(slot, f);
            return;
        }
        if ex.overruled {
            let dl = ex.dl;
            self.close_exchange_conn(slot);
            self.maybe_finish(dl);
            return;
        }
        if ex.phase != Phase::Body || !ex.spill.is_empty() {
            return;
        }
        let dl = ex.dl;
        let d = &mut self.dls[dl];
        let may_park = !d.ranges_confirmed && ex.range.is_none();
        let Some(plan) = d.plan.as_mut() else { return };
        if ex.body_complete {
            if !d.length_known {
                let pos = plan.segment(0).pos;
                plan.set_total(pos);
                d.length_known = true;
                if let Some(f) = c.fill.take() {
                    self.flushes.push_back(Flush {
                        dl,
                        fill: f,
                        at_file_end: true,
                    });
                }
            }
            let seg = plan.segment(ex.seg);
            if seg.pos < seg.end && seg.owner == Some(c.id) && !plan.is_complete() {
                let f = Failure::retry(
                    ExitCode::UNKNOWN,
                    "the response body ended before its range was complete",
                );
                self.fail_conn(slot, f);
                return;
            }
            let reusable = !ex.unusable && !c.eof && !c.tls_peer_closed;
            let done = c.ex.take();
            if reusable {
                c.want = None;
                let (url, mirror) = done.map(|e| (e.url, e.mirror)).unzip();
                self.next_work(slot, dl, url, mirror.unwrap_or(0));
            } else {
                self.close_conn(slot);
                if self.needs_another_connection(dl) {
                    self.dls[dl].wanted += 1;
                }
                self.maybe_finish(dl);
            }
            return;
        }
        let seg = plan.segment(ex.seg).clone();
        if seg.pos >= seg.end {
            // This range is done but the response goes on (a whole-file response, or a range another
            // connection took over): go on into the next range if it is free; wait while its owner's
            // range request is unanswered; else stop here.
            if let Some(next) = plan.continue_into(ex.seg, c.id) {
                ex.seg = next;
                return;
            }
            if may_park && plan.next_unstarted(ex.seg) {
                ex.parked = true;
                return;
            }
            c.ex = None;
            self.close_conn(slot);
            if self.needs_another_connection(dl) {
                self.dls[dl].wanted += 1;
            }
            self.maybe_finish(dl);
        }
    }

    /// Connections working for download `dl` (in an exchange for it, or connecting to start one).
    fn conn_count(&self, dl: usize) -> usize {
        self.conns
            .iter()
            .flatten()
            .filter(|c| c.works_for(dl))
            .count()
    }

    /// Whether a new connection would find work on download `dl`: a range nobody owns, or one big
    /// enough to split (the connections at work may be about to finish, which is not enough).
    fn needs_another_connection(&self, dl: usize) -> bool {
        let d = &self.dls[dl];
        d.ranges_ok
            && d.plan
                .as_ref()
                .is_some_and(|p| p.has_work_for_newcomer(self.split_reserve()))
    }

    /// How far past its position a connection may already be receiving (see `Plan::take`).
    fn split_reserve(&self) -> u64 {
        let pool = self.reactor.pool();
        (pool.size(Class::Read) + pool.size(Class::Write)) as u64 + 64 * 1024
    }

    /// A connection finished its range: take more of the same download on the same connection.
    /// `url` is what the connection just fetched (on its own server, whichever mirror that is).
    fn next_work(&mut self, slot: usize, dl: usize, url: Option<Url>, mirror: usize) {
        let server = self.conns[slot].as_ref().map(|c| c.server.clone());
        match url {
            Some(u) if self.dls[dl].ranges_ok && server == Some(ServerKey::of(&u)) => {
                if let Some(c) = self.conns[slot].as_mut() {
                    c.want = Some(Want {
                        dl,
                        url: u,
                        mirror,
                        redirects: 0,
                    });
                    c.reused = true;
                }
                self.dispatch(slot);
            }
            _ => self.release_conn(slot, dl),
        }
    }

    /// A parked whole-file stream of download `dl` can go on: the range after it came free.
    fn unpark(&mut self, dl: usize) {
        for slot in 0..self.conns.len() {
            let parked = self.conns[slot].as_ref().is_some_and(|c| {
                c.state == ConnState::Open && c.ex.as_ref().is_some_and(|e| e.dl == dl && e.parked)
            });
            if !parked {
                continue;
            }
            if let Some(ex) = self.conns[slot].as_mut().and_then(|c| c.ex.as_mut()) {
                ex.parked = false;
            }
            self.resume(slot);
        }
    }

    /// Lets a connection that was held back go on: places what it had spilled, runs the protocol
    /// layers over what its read block holds, and keeps it reading.
    fn resume(&mut self, slot: usize) {
        if let Some(c) = self.conns[slot].as_mut() {
            if let Some(ex) = c.ex.as_mut() {
                let ranges_unconfirmed = !self.dls[ex.dl].ranges_confirmed;
                let plan = self.dls[ex.dl].plan.as_mut();
                let mut sink = BodySink {
                    owner: c.id,
                    ex,
                    fill: &mut c.fill,
                    blocks: self.reactor.pool(),
                    plan,
                    ranges_unconfirmed,
                    flushes: &mut self.flushes,
                };
                sink.drain_spill();
            }
        }
        self.pump(slot);
        self.after_io(slot);
    }

    /// The connection in `slot` and the exchange it is in, if it has both.
    fn exchange_at(&self, slot: usize) -> Option<(&Conn, &Exchange)> {
        let c = self.conns[slot].as_ref()?;
        Some((c, c.ex.as_ref()?))
    }

    /// Ranges work: parked whole-file streams of download `dl` will not be needed.
    fn end_parked(&mut self, dl: usize) {
        for slot in 0..self.conns.len() {
            let parked = self.conns[slot]
                .as_ref()
                .is_some_and(|c| c.ex.as_ref().is_some_and(|e| e.dl == dl && e.parked));
            if parked {
                self.close_exchange_conn(slot);
            }
        }
    }

    /// Abandons the connection's exchange without counting a failure (its range goes back).
    fn abandon_exchange(&mut self, slot: usize) {
        let dl = self.conns[slot]
            .as_ref()
            .and_then(|c| c.ex.as_ref())
            .map(|e| e.dl);
        self.return_range(slot);
        if let Some(dl) = dl {
            self.unpark(dl);
        }
        if let Some(dl) = dl {
            self.close_conn(slot);
            self.maybe_finish(dl);
        } else {
            self.close_conn(slot);
        }
    }

    /// Closes a connection whose exchange is over (e.g. after a redirect).
    fn close_exchange_conn(&mut self, slot: usize) {
        self.close_conn(slot);
    }

    /// Writes what the connection's block holds that can be written, and gives the rest of its range
    /// back to the plan.
    fn return_range(&mut self, slot: usize) {
        let Some(c) = self.conns[slot].as_mut() else {
            return;
        };
        let Some(ex) = c.ex.as_ref() else { return };
        let dl = ex.dl;
        let seg_i = ex.seg;
        let owner = c.id;
        // A receive straight into the fill's block holds that block: none of its bytes can be
        // written, so the range goes back from where the block starts.
        let in_flight = c.recv.and_then(|r| r.fill).map(|(off, _)| off);
        let fill = c.fill.take();
        let d = &mut self.dls[dl];
        let Some(plan) = d.plan.as_mut() else {
            return;
        };
        let seg = plan.segment(seg_i).clone();
        if seg.owner != Some(owner) {
            return;
        }
        // While the download goes on, only the aligned part of a block is written and the rest is
        // fetched again (a padded write could land after the refetched bytes). When it ends here,
        // every received byte is written, padded, and the file is cut to what arrived.
        let ending = d.error.is_some() || d.halted;
        let keep = match (fill, in_flight) {
            (_, Some(off)) => off,
            (Some(f), None) => {
                let at_end = f.off + f.filled as u64 == plan.total() && d.length_known;
                let whole = at_end || ending;
                let kept = if whole {
                    f.filled
                } else {
                    store::write_len(f.filled, false)
                };
                let keep = if at_end {
                    f.off + f.filled as u64
                } else {
                    f.off + store::write_len(f.filled, false) as u64
                };
                if kept > 0 {
                    self.flushes.push_back(Flush {
                        dl,
                        fill: Fill { filled: kept, ..f },
                        at_file_end: whole,
                    });
                }
                keep
            }
            (None, None) => seg.pos,
        };
        plan.release(seg_i, keep);
    }

    fn fail_conn(&mut self, slot: usize, f: Failure) {
        let (dl, mirror, conn_id) = match self.conns[slot].as_ref() {
            Some(c) => match (&c.ex, &c.want) {
                (Some(ex), _) => (Some(ex.dl), ex.mirror, c.id),
                (None, Some(w)) => (Some(w.dl), w.mirror, c.id),
                (None, None) => (None, 0, c.id),
            },
            None => return,
        };
        let Some(dl) = dl else {
            self.close_conn(slot);
            return;
        };
        let d = &mut self.dls[dl];
        if d.error.is_some() || d.state != DlState::Active {
            self.return_range(slot);
            self.close_conn(slot);
            self.maybe_finish(dl);
            return;
        }
        // Messages name the URI as given (aria2 does not name the last redirect hop).
        let uri = d.uris.get(mirror).map(Url::to_string).unwrap_or_default();
        d.failures += 1;
        let others = d.other_mirrors(mirror);
        let last_try = !f.retry
            || (self.s.max_tries > 0 && d.failures >= self.s.max_tries)
            || d.bad_uris.iter().all(|b| *b);
        if last_try && !(f.retry && others) {
            // The download ends here; its connections, this one too, keep what they received.
            self.fail_download(dl, f, Some((conn_id, uri)));
            return;
        }
        self.return_range(slot);
        self.close_conn(slot);
        self.unpark(dl);
        let d = &mut self.dls[dl];
        if f.retry && others {
            // Another mirror may do better: say why this one failed and go on without it.
            d.bad_uris[mirror] = true;
            self.say_aborted(conn_id, &uri, f.code, &f.message);
            if f.from_scratch {
                self.say_from_scratch(conn_id);
            }
        } else {
            self.console.log(
                LogLevel::Info,
                &format!(
                    "CUID#{conn_id} - Restarting the download. URI={uri}: {}",
                    f.message
                ),
            );
        }
        let d = &mut self.dls[dl];
        let wait = f.wait.unwrap_or(self.s.retry_wait);
        if d.plan.is_some() && !d.length_known {
            // A body of unknown length cannot be resumed: like aria2, start it over.
            d.plan = None;
            d.drop_file();
            d.written = crate::plan::RangeSet::new();
            d.high_water = 0;
            d.opts.allow_overwrite = true;
        }
        let again = d.plan.is_none() || d.ranges_ok;
        let working = self.conns.iter().flatten().any(|c| c.works_for(dl));
        let d = &mut self.dls[dl];
        if !again && !working {
            // Nothing can carry on: the server refused ranges earlier (that is the reason to
            // report) and the connection that did not need them is gone.
            let reason = d.soft_error.take().unwrap_or(f);
            self.fail_download(dl, reason, None);
            return;
        }
        d.soft_error = Some(f);
        if again {
            self.retry_later(dl, wait);
        }
        self.maybe_finish(dl);
    }

    /// aria2's one-line error for a connection that gives up on `uri`.
    fn say_aborted(&mut self, conn: Owner, uri: &str, code: ExitCode, msg: &str) {
        self.console.error(&format!(
            "CUID#{conn} - Download aborted. URI={uri}: errorCode={} {msg}",
            code.0
        ));
    }

    /// Ends download `dl` with `f`, saying so in one error line (naming the connection and URI that
    /// failed when there is one).
    fn fail_download(&mut self, dl: usize, f: Failure, at: Option<(u64, String)>) {
        match at {
            Some((conn, uri)) => self.say_aborted(conn, &uri, f.code, &f.message),
            None => self.console.error(&format!(
                "Download aborted. URI={}: errorCode={} {}",
                self.dls[dl].first_uri, f.code.0, f.message
            )),
        }
        self.dls[dl].error = Some(f);
        self.dls[dl].wanted = 0;
        self.stop_conns(dl);
        self.maybe_finish(dl);
    }

    /// Tears a connection down at once: its operations in flight are abandoned (the reactor keeps
    /// what they own until their completions), its blocks go back to the pool as they are dropped.
    fn close_conn(&mut self, slot: usize) {
        let Some(c) = self.conns.get_mut(slot).and_then(Option::take) else {
            return;
        };
        for op in c.inflight {
            self.reactor.abandon(op);
        }
    }

    /// Keeps one receive in flight on a connection that expects bytes.
    fn arm_recv(&mut self, slot: usize) {
        let write_size = self.reactor.pool().size(Class::Write);
        let Some(c) = self.conns[slot].as_mut() else {
            return;
        };
        if c.recv.is_some() || c.state != ConnState::Open || c.eof {
            return;
        }
        let Some(ex) = c.ex.as_mut() else {
            // TLS handshakes of a connection with no exchange yet still need reading.
            return;
        };
        if ex.parked {
            return;
        }
        if ex.phase == Phase::Decide || ex.body_complete || !ex.spill.is_empty() || c.tls_blocked {
            if !ex.spill.is_empty() || c.tls_blocked {
                c.starved = true;
            }
            return;
        }
        if c.throttled {
            return;
        }
        let dl = ex.dl;
        if !self.may_read(slot, dl) {
            return;
        }
        let Some(c) = self.conns[slot].as_mut() else {
            return;
        };
        let Some(fd) = c.fd.clone() else {
            return;
        };
        let Some(ex) = c.ex.as_mut() else { return };
        let id = c.id;
        if c.tls.is_none() && ex.direct_body() {
            let d = &mut self.dls[ex.dl];
            let Some(plan) = d.plan.as_mut() else { return };
            let seg = plan.segment(ex.seg).clone();
            if seg.pos >= seg.end {
                return;
            }
            let fill = match c.fill.take() {
                Some(f) => f,
                None => match self.reactor.pool().alloc(Class::Write) {
                    Some(block) => Fill {
                        block,
                        off: seg.pos,
                        filled: 0,
                    },
                    None => {
                        c.starved = true;
                        return;
                    }
                },
            };
            let mut len = store::room(fill.off, fill.filled, write_size, seg.end);
            if let Framing::Length(_) = ex.framing {
                len = len.min(usize::try_from(ex.remaining).unwrap_or(usize::MAX));
            }
            if len == 0 {
                c.fill = Some(fill);
                return;
            }
            let Fill { block, off, filled } = fill;
            let tag = Tag::Recv {
                slot,
                id,
                direct: true,
            };
            let op = self.reactor.recv(tag, fd, block, filled, len);
            c.recv = Some(RecvInFlight {
                fill: Some((off, filled)),
            });
            c.inflight.push(op);
            return;
        }
        let Some(mut rbuf) = c.rbuf.take() else {
            return;
        };
        let read_size = rbuf.len();
        if c.rb_end == read_size {
            if c.rb_start == 0 {
                c.rbuf = Some(rbuf);
                self.fail_conn(
                    slot,
                    Failure::retry(
                        ExitCode::UNKNOWN,
                        "a TLS record does not fit the receive buffer",
                    ),
                );
                return;
            }
            let (a, b) = (c.rb_start, c.rb_end);
            rbuf.as_mut_slice().copy_within(a..b, 0);
            c.rb_start = 0;
            c.rb_end = b - a;
        }
        let tag = Tag::Recv {
            slot,
            id,
            direct: false,
        };
        let (at, len) = (c.rb_end, read_size - c.rb_end);
        let op = self.reactor.recv(tag, fd, rbuf, at, len);
        c.recv = Some(RecvInFlight { fill: None });
        c.inflight.push(op);
    }

    // ---- the file ---------------------------------------------------------------------------

    /// Issues the writes of the blocks that filled, in the order they filled. A download whose
    /// earlier file still has writes in flight keeps its blocks until those end.
    fn submit_flushes(&mut self) {
        let mut idle = Vec::new();
        let mut held = VecDeque::new();
        while let Some(fl) = self.flushes.pop_front() {
            let d = &mut self.dls[fl.dl];
            if d.old_writes > 0 {
                held.push_back(fl);
                continue;
            }
            let len = store::write_len(fl.fill.filled, fl.at_file_end);
            let file = d.file.clone().filter(|_| len > 0);
            let Some(file) = file else {
                // Nothing to write: the download may be waiting only for this.
                idle.push(fl.dl);
                continue;
            };
            let Flush { fill, .. } = fl;
            let Fill {
                mut block,
                off,
                filled,
            } = fill;
            if d.direct && (off % store::DIO_ALIGN as u64 != 0 || len % store::DIO_ALIGN != 0) {
                // Every boundary is aligned by construction (plan/); this would be a bug, which
                // must not turn into a refused write or a silent fallback.
                debug_assert!(false, "unaligned O_DIRECT write at {off}+{len}");
                if sys::clear_direct(file.as_raw_fd()).is_ok() {
                    d.direct = false;
                }
            }
            if len > filled {
                block.as_mut_slice()[filled..len].fill(0);
            }
            if d.hasher.is_some() && d.hash_pos == off {
                // In file order: hash the block now, while it is in memory.
                if let Some(h) = d.hasher.as_mut() {
                    h.update(&block.as_slice()[..filled]);
                }
                d.hash_pos += filled as u64;
            }
            d.writes += 1;
            d.high_water = d.high_water.max(off + filled as u64);
            let tag = Tag::Write {
                dl: fl.dl,
                generation: d.generation,
                off,
                len,
                done: 0,
                data: filled.min(len),
                direct: d.direct,
            };
            self.reactor.write(tag, file, block, 0, len, off);
        }
        self.flushes = held;
        for dl in idle {
            self.maybe_finish(dl);
        }
        // Connections waiting for blocks can go on if some were freed above.
        self.wake_starved();
    }

    /// A write of download `dl`'s current file completed (`file_op_done` counted it).
    fn on_write(&mut self, dl: usize, block: Block, w: WriteDone, res: i32) {
        let d = &mut self.dls[dl];
        let Some(file) = d.file.clone() else {
            return;
        };
        let again = match res {
            r if r == -libc::EINTR || r == -libc::EAGAIN => Some(w.done),
            r if r == -libc::EINVAL && w.direct && w.done == 0 => {
                // The filesystem refused O_DIRECT after all: go buffered, bounded by writeback.
                // Any write issued in direct mode may see this, in any order; the first switches
                // the file, every one of them is issued again.
                if d.direct && sys::clear_direct(file.as_raw_fd()).is_ok() {
                    d.direct = false;
                    let path = d
                        .path
                        .as_ref()
                        .map(|p| p.display().to_string())
                        .unwrap_or_default();
                    self.console.notice(&format!(
                        "{path}: O_DIRECT is not supported here; writing through the page cache and dropping it behind"
                    ));
                }
                (!self.dls[dl].direct).then_some(0)
            }
            r if r > 0 && w.done + (r as usize) < w.len => Some(w.done + r as usize),
            _ => None,
        };
        let d = &mut self.dls[dl];
        if let Some(done) = again {
            d.writes += 1;
            let tag = Tag::Write {
                dl,
                generation: d.generation,
                off: w.off,
                len: w.len,
                done,
                data: w.data,
                direct: d.direct,
            };
            self.reactor
                .write(tag, file, block, done, w.len - done, w.off + done as u64);
            return;
        }
        drop(block);
        if res < 0 || (res == 0 && w.len > w.done) {
            let errno = if res < 0 { -res } else { libc::EIO };
            self.write_failed(dl, errno);
        } else {
            // On disk now: a control file may claim these bytes.
            d.written.insert(w.off..w.off + w.data as u64);
            if !d.direct {
                d.writes += 1;
                let tag = Tag::Writeback {
                    dl,
                    generation: d.generation,
                };
                self.reactor.writeback(tag, file, w.off, w.len);
            }
        }
        self.wake_starved();
        self.maybe_finish(dl);
    }

    /// Writing to download `dl`'s file failed with `errno`: the download ends with aria2's code.
    fn write_failed(&mut self, dl: usize, errno: i32) {
        let d = &self.dls[dl];
        if d.error.is_some() {
            return;
        }
        let path = d
            .path
            .as_ref()
            .map(|p| p.display().to_string())
            .unwrap_or_default();
        let f = Failure::fatal(
            ExitCode::for_write_error(errno),
            format!(
                "Failed to write into the file {path}, cause: {}",
                errno_text(-errno)
            ),
        );
        self.fail_download(dl, f, None);
    }

    /// The buffered fallback's writeback (and page-cache drop) of a range completed.
    fn on_writeback(&mut self, dl: usize, res: i32) {
        if res < 0 {
            // ECANCELED: the linked sync_file_range failed, so the data may not reach the disk.
            let errno = if res == -libc::ECANCELED {
                libc::EIO
            } else {
                -res
            };
            self.write_failed(dl, errno);
        }
        self.maybe_finish(dl);
    }

    fn wake_starved(&mut self) {
        if self.reactor.pool().free_count(Class::Write) == 0 {
            return;
        }
        for slot in 0..self.conns.len() {
            let starved = self.conns[slot]
                .as_ref()
                .is_some_and(|c| c.starved && c.state == ConnState::Open);
            if !starved {
                continue;
            }
            if let Some(c) = self.conns[slot].as_mut() {
                c.starved = false;
                c.tls_blocked = false;
            }
            self.resume(slot);
            if self.reactor.pool().free_count(Class::Write) == 0 {
                break;
            }
        }
    }

    /// Ends a download whose work is done (or failed) once nothing of it is in flight.
    fn maybe_finish(&mut self, dl: usize) {
        if self.flushes.iter().any(|f| f.dl == dl) {
            return;
        }
        let working = self.conn_count(dl) > 0;
        let d = &mut self.dls[dl];
        if d.state != DlState::Active || d.writes > 0 || d.old_writes > 0 {
            return;
        }
        if d.error.is_some() || d.halted {
            if !working {
                d.state = DlState::Finished;
                d.ended = Some(Instant::now());
                let total = d.total();
                if let Some(file) = d.file.take() {
                    // Cut the padding of the last block (and nothing that arrived, in this run or
                    // an earlier one) away; a preallocated file keeps its real length.
                    let arrived = d
                        .written
                        .ranges()
                        .last()
                        .map_or(0, |r| r.end)
                        .max(d.high_water);
                    let keep = match total {
                        Some(t) if d.preallocated => t,
                        _ => arrived,
                    };
                    let len = file.metadata().map(|m| m.len()).unwrap_or(0);
                    if len > keep {
                        let _ = file.set_len(keep);
                    }
                }
                // What is on disk stays resumable, by ringdl or by aria2c.
                self.save_control(dl);
                let d = &mut self.dls[dl];
                let path = d
                    .path
                    .as_ref()
                    .map(|p| p.display().to_string())
                    .unwrap_or_default();
                let gid = d.gid;
                self.record(dl);
                self.console
                    .notice(&format!("Download GID#{gid:016x} not complete: {path}"));
            }
            return;
        }
        let complete = d.length_known && d.plan.as_ref().is_some_and(Plan::is_complete);
        let pending_fill = self
            .conns
            .iter()
            .flatten()
            .any(|c| c.fill.is_some() && c.ex.as_ref().is_some_and(|e| e.dl == dl))
            || self.flushes.iter().any(|f| f.dl == dl);
        if !complete || pending_fill {
            return;
        }
        if self.dls[dl].expected.is_some() && !self.dls[dl].verified {
            // The digest decides: finish hashing (reading the file back if needed) first.
            if !self.dls[dl].verifying {
                self.start_verify(dl);
            }
            return;
        }
        let d = &mut self.dls[dl];
        let total = d.plan.as_ref().map_or(0, Plan::total);
        let path = d
            .path
            .as_ref()
            .map(|p| p.display().to_string())
            .unwrap_or_default();
        if let Some(file) = d.file.take() {
            if let Err(e) = file.set_len(total) {
                let f =
                    Failure::fatal(ExitCode::FILE_IO, format!("Failed to truncate {path}: {e}"));
                d.error = Some(f);
            }
            // -R: the server's Last-Modified time (best effort: a bad date changes nothing).
            let remote = d
                .last_modified
                .as_deref()
                .and_then(|t| httpdate::parse_http_date(t).ok());
            if let (true, Some(t)) = (d.opts.remote_time, remote) {
                let _ = file.set_modified(t);
            }
        }
        d.state = DlState::Finished;
        d.ended = Some(Instant::now());
        if d.error.is_none() {
            self.remove_control(dl);
        }
        self.record(dl);
        if self.dls[dl].error.is_none() {
            self.console.notice(&format!("Download complete: {path}"));
        }
        // Connections still streaming into this finished download, or still connecting for it, are
        // of no further use (and must not carry its index to whatever job takes its place).
        for slot in 0..self.conns.len() {
            let streaming = self.conns[slot].as_ref().is_some_and(|c| c.works_for(dl));
            if streaming {
                self.close_conn(slot);
            }
        }
    }

    // ---- progress ---------------------------------------------------------------------------

    fn on_tick(&mut self) {
        self.autosave();
        // A verification that found no free block waits for one here.
        for dl in 0..self.dls.len() {
            let d = &self.dls[dl];
            if d.state == DlState::Active && d.expected.is_some() && !d.verifying && !d.verified {
                self.maybe_finish(dl);
            }
        }
        let now = Instant::now();
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
