//! The simulated reactor: the same operations as the io_uring one, completed by a seeded scheduler
//! instead of the kernel. The network is in memory (HTTP servers answering from byte vectors, with
//! ranges or without, redirects, error statuses, chunked or close-delimited bodies); files are real
//! files in a test directory, written and read with `pwrite`/`pread` when their operations complete.
//! Time is virtual: it moves only when nothing can complete, straight to the next timer or
//! timeout, so a run that would take minutes takes milliseconds and repeats exactly for its seed.
//!
//! Faults, each drawn from the seed: short receives and sends, EAGAIN/EINTR, connections reset or
//! stalled mid-body, short writes, ENOSPC/EIO, completions delivered in any order, and a kill at a
//! chosen step (the run stops there, and nothing still in flight happens) or in the wait for the
//! last file jobs, with a power loss that undoes every write no `fdatasync` covered; file jobs
//! failing at one of their steps (`store::step`), failed read-backs, odd-length short writes; and
//! servers that speak TLS (rustls's server over the wire's bytes) and misbehave
//! ([`ServerFaults`]). Those added later draw from `rng2` and `rng3`, so that the draws of `rng`
//! for a seed stay as they were.
use super::{completion_result, Block, Completion, Datagram, Fd, Job, OpId, Owned, Pool, Reactor};
use std::cell::RefCell;
use std::collections::HashMap;
use std::io;
use std::net::SocketAddr;
use std::ops::Range;
use std::os::fd::{AsRawFd, FromRawFd, RawFd};
use std::rc::Rc;
use std::time::{Duration, Instant};

/// A small seeded generator (SplitMix64).
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A number in `0..n` (0 when `n` is 0).
    pub fn below(&mut self, n: u64) -> u64 {
        if n == 0 {
            0
        } else {
            self.next_u64() % n
        }
    }

    /// True with probability `per_mille`/1000.
    pub fn chance(&mut self, per_mille: u32) -> bool {
        self.below(1000) < u64::from(per_mille)
    }
}

/// How a file's body is framed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Framing {
    Length,
    Chunked,
    UntilClose,
}

/// What a server answers for one path.
#[derive(Debug, Clone)]
pub enum Route {
    File {
        data: Rc<Vec<u8>>,
        etag: String,
        ranges: bool,
        framing: Framing,
    },
    /// 302 to this absolute URL.
    Redirect(String),
    /// This status, empty body.
    Status(u16),
}

/// The faults a run is subjected to, each a rate in per mille unless said otherwise.
#[derive(Debug, Clone, Default)]
pub struct Faults {
    /// Largest receive the network delivers at once (0: as much as asked).
    pub max_chunk: usize,
    /// A receive or send completes with EAGAIN or EINTR instead.
    pub again: u32,
    /// A response's connection is reset part-way through its body.
    pub reset: u32,
    /// A response stops part-way through its body, the connection left open (a timeout).
    pub stall: u32,
    /// A write is short.
    pub short_write: u32,
    /// An uncached write fails with EOPNOTSUPP (a kernel or file system without `RWF_DONTCACHE`).
    pub uncached_refused: u32,
    /// A writeback of pages written through the cache fails (an I/O error after the write
    /// returned), and what it was writing back is lost.
    pub writeback_error: u32,
    /// A write fails with `write_errno`.
    pub write_error: u32,
    pub write_errno: i32,
    /// Completions that are ready come out in a random order, some held back a step.
    pub reorder: bool,
    /// The run is killed when it reaches this step.
    pub kill_at: Option<u64>,
    /// The kill comes after the kernel has carried out what was ready at that step (writes land
    /// in the file), before the process sees any of it.
    pub kill_late: bool,
    /// Every file write takes this long (a slow disk): it may land after the engine has moved on
    /// (a reconnect, a new file).
    pub write_time: Duration,
    /// Ctrl-C arrives (on the descriptor from [`signal_fd`]) at these steps, in order.
    pub interrupts: Vec<u64>,
    /// Every read of the signal descriptor fails at once (EBADF).
    pub signal_fd_fails: bool,
    /// Every received byte takes this long (0: no time at all): a link of a given rate, so that
    /// the engine measures rates and sets low-water marks as on a real one.
    pub ns_per_byte: u64,
    /// Every response with a longer body stops after this many body bytes, the connection left
    /// open (a stall at a chosen place, where `stall` draws one).
    pub stall_after: Option<usize>,
    /// A file job (creating the file, saving or removing a control file, cutting the file) fails
    /// at its first file-system step with `job_errno`.
    pub job_errors: u32,
    pub job_errno: i32,
    /// A kill is a power loss too: every data write no `fdatasync` made durable is undone (its
    /// bytes and the file's length as they were before it).
    pub power_loss: bool,
    /// The run is killed in the wait for its last file jobs after the loop ended, before the
    /// job of this number (0: the first).
    pub kill_in_shutdown: Option<u32>,
    /// What the servers do wrong (see [`ServerFaults`]).
    pub server: ServerFaults,
    /// A read of a file back (to verify it) fails with EIO.
    pub read_error: u32,
    /// A write through the page cache (a file without `O_DIRECT`) is short by any number of bytes.
    pub odd_writes: u32,
}

/// Servers that misbehave, each a rate in per mille of responses.
#[derive(Clone, Default)]
pub struct ServerFaults {
    /// A whole response more after the body, nobody having asked for it.
    pub excess: u32,
    /// The connection closed (a FIN, no reset) part-way through the body.
    pub fin: u32,
    /// `100 Continue` and `103 Early Hints` heads before the response's.
    pub informational: u32,
    /// A range answered with its first part only (a correct, shorter `Content-Range`).
    pub short_range: u32,
    /// The connection closed once the response is sent, though it said nothing of it.
    pub idle_close: u32,
    /// After this many requests, every origin serves `changed_to` (ETag `"v2"`), and answers
    /// ranges whatever `If-Range` says.
    pub change_after: Option<usize>,
    pub changed_to: Option<Rc<Vec<u8>>>,
}

impl std::fmt::Debug for ServerFaults {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerFaults")
            .field("excess", &self.excess)
            .field("fin", &self.fin)
            .field("informational", &self.informational)
            .field("short_range", &self.short_range)
            .field("idle_close", &self.idle_close)
            .field("change_after", &self.change_after)
            .field("changed_to_len", &self.changed_to.as_ref().map(|v| v.len()))
            .finish()
    }
}

/// How a run on the simulated reactor ended, when not by the engine's own choice.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Stop {
    Killed,
    /// Nothing in flight could ever complete, or virtual time ran past the limit: a hang.
    Hung(String),
}

/// The servers and what happened: shared between the reactor (which the engine owns) and the
/// test that reads it afterwards.
#[derive(Default)]
pub struct World {
    pub servers: HashMap<SocketAddr, HashMap<String, Route>>,
    /// Addresses that accept no connection and refuse nothing (connects time out).
    pub blackholes: Vec<SocketAddr>,
    pub faults: Faults,
    pub stop: Option<Stop>,
    /// Requests served, as (address, request line, range header).
    pub requests: Vec<(SocketAddr, String, Option<String>)>,
    pub steps: u64,
    /// Operations (other than timers) the engine left in flight when its run ended.
    pub left_in_flight: usize,
    /// File reads done (`--checksum` reading back what was not hashed as it was written).
    pub file_reads: u64,
    /// Receive low-water marks above the default set on sockets.
    pub low_water_marks: u64,
    /// TLS close_notify alerts the engine sent its servers before closing connections.
    pub client_close_notifies: u64,
    /// Virtual time at the last completion.
    pub elapsed: Duration,
    /// The longest a connection had bytes to read and no receive asking for them (what a server
    /// sees as a client not reading; servers give up on such a connection after a while).
    pub longest_unread: Duration,
    /// RPC clients (daemon mode): each connects once the run has taken its step and sends its
    /// bytes, in order; `rpc_answers` gets what the engine sent back on each connection.
    pub rpc_calls: std::collections::VecDeque<(u64, Vec<u8>)>,
    pub rpc_answers: Vec<Vec<u8>>,
    /// How often each fault class fired, by name.
    pub fired: std::collections::BTreeMap<&'static str, u64>,
    /// Every server speaks TLS with this configuration (through rustls, to the engine's own
    /// record layer).
    pub tls: Option<crate::tls::server::ServerTlsConfig>,
}

impl World {
    fn fire(&mut self, class: &'static str) {
        *self.fired.entry(class).or_default() += 1;
    }
}

/// A data write not yet made durable: what a power loss undoes.
struct Volatile {
    file: std::fs::File,
    inode: (u64, u64),
    offset: u64,
    old: Vec<u8>,
    old_len: u64,
    /// How many bytes the write wrote.
    len: u64,
    /// Still only in the page cache: a buffered write no writeback or sync has covered (a
    /// direct write reached the device when it completed).
    dirty: bool,
}

/// A simulated socket: its number is only a key.
struct SimSock(RawFd);

/// The descriptor a simulated run reads Ctrl-C from (`Faults::interrupts`).
pub const SIGNAL_FD: RawFd = -7;

/// A descriptor for the engine to read signals from in a simulated run.
pub fn signal_fd() -> Fd {
    Rc::new(SimSock(SIGNAL_FD))
}

impl Wire {
    fn pending(&self) -> usize {
        self.outbound.len() - self.taken
    }

    /// Bytes a receive could take now: what the server sent, up to a stall.
    fn readable(&self) -> usize {
        self.pending().min(self.stall_in.unwrap_or(usize::MAX))
    }

    /// A waiting receive is woken, as the kernel wakes one: once the bytes reach the low-water
    /// mark, or with any bytes once the server has closed behind them.
    fn wakes(&self) -> bool {
        let n = self.readable();
        n > 0 && (n >= self.low_water.max(1) || self.close_after && self.stall_in.is_none())
    }
}

impl AsRawFd for SimSock {
    fn as_raw_fd(&self) -> RawFd {
        self.0
    }
}

/// One connection as the network sees it.
#[derive(Default)]
struct Wire {
    server: Option<SocketAddr>,
    /// Request bytes not yet answered.
    inbound: Vec<u8>,
    /// Response bytes; those from `taken` on are not received yet.
    outbound: Vec<u8>,
    taken: usize,
    /// After `outbound`, the server closes.
    close_after: bool,
    /// After this many more bytes, the connection is reset.
    reset_in: Option<usize>,
    /// After this many more bytes, nothing more comes.
    stall_in: Option<usize>,
    reset: bool,
    /// Receives in flight on this connection.
    receiving: usize,
    /// Since when bytes have waited here with no receive in flight.
    unread_since: Option<Duration>,
    /// The receive low-water mark (`SO_RCVLOWAT`; 0 and 1 are the default).
    low_water: usize,
    /// An RPC client's connection (its number in `World::rpc_answers`): `outbound` is what the
    /// client sends, what the engine sends is recorded as the answer.
    rpc: Option<usize>,
    /// The server's TLS session: `inbound` then holds the plaintext it opened, and `outbound`
    /// the records it sealed.
    tls: Option<crate::tls::server::ServerSession>,
}

enum Kind {
    Connect(SocketAddr),
    Recv {
        at: usize,
        len: usize,
    },
    Send {
        from: usize,
    },
    Write {
        from: usize,
        len: usize,
        offset: u64,
        uncached: bool,
    },
    ReadFile {
        offset: u64,
    },
    /// A writeback and page-cache drop of `len` bytes at `offset` (0: to the end): fails at
    /// `writeback_error`, reported as io_uring reports a failed linked `sync_file_range`,
    /// ECANCELED; what it was writing back is then lost (zeroed).
    Writeback {
        offset: u64,
        len: usize,
    },
    Plain,
    /// Never completes by itself (eventfd and signalfd reads).
    Never,
    /// An accept on the RPC listener: completes when the next scripted client is due.
    Accept,
    /// A read on an RPC client's connection.
    ReadSock,
    Timer(Duration),
    /// A blocking job (its place in the queue), run when it completes: one at a time, in order.
    Job(u64, Option<Job>),
}

struct Op<T> {
    tag: T,
    owned: Owned,
    kind: Kind,
    since: Duration,
    abandoned: bool,
    /// Asked to end early (`cancel`): a receive or send completes now.
    cancelled: bool,
}

/// How long a blocking job (a control-file save: write, fsync, rename) takes.
const JOB_TIME: Duration = Duration::from_millis(20);

/// Virtual time a run may take before it counts as hung.
pub const TIME_LIMIT: Duration = Duration::from_secs(3600);
/// Steps a run may take before it counts as hung.
pub const STEP_LIMIT: u64 = 2_000_000;

pub struct Sim<T> {
    pool: Pool,
    world: Rc<RefCell<World>>,
    rng: Rng,
    base: Instant,
    clock: Duration,
    io_timeout: Duration,
    connect_timeout: Duration,
    slots: Vec<(u32, Option<Op<T>>)>,
    free: Vec<u32>,
    live: usize,
    wires: HashMap<RawFd, Wire>,
    next_sock: RawFd,
    jobs_given: u64,
    jobs_done: u64,
    interrupts_given: usize,
    /// Draws of the fault classes added later (file jobs, servers), kept apart from `rng` so
    /// that a seed without them replays as it was recorded.
    rng2: Rng,
    /// Data writes a power loss would undo, oldest first (only when one may come).
    volatile: Vec<Volatile>,
    /// Draws of the odd-length short writes and of the step a file job fails at, apart from
    /// `rng2` for the same reason.
    rng3: Rng,
}

impl<T> Sim<T> {
    pub fn new(
        pool: Pool,
        world: Rc<RefCell<World>>,
        seed: u64,
        io_timeout: Duration,
        connect_timeout: Duration,
    ) -> Sim<T> {
        Sim {
            pool,
            world,
            rng: Rng::new(seed ^ 0x5157_0001),
            base: Instant::now(),
            clock: Duration::ZERO,
            io_timeout,
            connect_timeout,
            slots: Vec::new(),
            free: Vec::new(),
            live: 0,
            wires: HashMap::new(),
            next_sock: 1 << 20,
            jobs_given: 0,
            jobs_done: 0,
            interrupts_given: 0,
            rng2: Rng::new(seed ^ 0x5157_0002),
            volatile: Vec::new(),
            rng3: Rng::new(seed ^ 0x5157_0003),
        }
    }

    fn insert(&mut self, tag: T, owned: Owned, kind: Kind) -> OpId {
        self.live += 1;
        let op = Op {
            tag,
            owned,
            kind,
            since: self.clock,
            abandoned: false,
            cancelled: false,
        };
        let index = match self.free.pop() {
            Some(i) => {
                let s = &mut self.slots[i as usize];
                s.0 = s.0.wrapping_add(1) & 0x7fff_ffff;
                s.1 = Some(op);
                i
            }
            None => {
                self.slots.push((0, Some(op)));
                (self.slots.len() - 1) as u32
            }
        };
        OpId((u64::from(self.slots[index as usize].0) << 32) | u64::from(index))
    }

    /// Carries out every operation ready now, its completion never seen (a late kill). Not a
    /// writeback: one failing at that same instant (an I/O error and a kill together) loses what
    /// it was writing with nothing left to say so, a double fault this does not model.
    fn perform_ready(&mut self) {
        let ready: Vec<usize> = (0..self.slots.len())
            .filter(|&i| {
                self.slots[i].1.as_ref().is_some_and(|op| {
                    !matches!(op.kind, Kind::Writeback { .. })
                        && self.ready_at(op).is_some_and(|t| t <= self.clock)
                })
            })
            .collect();
        for i in ready {
            if let Some(mut op) = self.slots[i].1.take() {
                self.perform(&mut op);
                self.slots[i].1 = Some(op);
            }
        }
    }

    /// When the operation in `i` can complete: now (`Some(clock)`), later, or never.
    fn ready_at(&self, op: &Op<T>) -> Option<Duration> {
        if let Kind::Job(n, _) = op.kind {
            // The worker runs jobs one after the other, each taking a while (an fsync), during
            // which the ring goes on.
            return (n == self.jobs_done).then_some((op.since + JOB_TIME).max(self.clock));
        }
        if op.abandoned || op.cancelled && matches!(op.kind, Kind::Recv { .. }) {
            return Some(self.clock);
        }
        match &op.kind {
            Kind::Timer(due) => Some(*due),
            Kind::Never => {
                let w = self.world.borrow();
                if w.faults.signal_fd_fails && fd_of(&op.owned) == SIGNAL_FD {
                    return Some(self.clock);
                }
                let due = w.faults.interrupts.get(self.interrupts_given).copied();
                // Due: now. Not yet: a second later (time moves on while nothing else does).
                match due.filter(|_| fd_of(&op.owned) == SIGNAL_FD) {
                    Some(at) if w.steps >= at => Some(self.clock),
                    Some(_) => Some(self.clock + Duration::from_secs(1)),
                    None => None,
                }
            }
            Kind::Connect(addr) => {
                let w = self.world.borrow();
                if w.blackholes.contains(addr) {
                    Some(op.since + self.connect_timeout)
                } else {
                    Some(op.since)
                }
            }
            Kind::Accept => {
                let w = self.world.borrow();
                // Due: now. Not yet: a moment later (time moves on while nothing else does).
                match w.rpc_calls.front() {
                    Some(&(at, _)) if w.steps >= at => Some(self.clock),
                    Some(_) => Some(self.clock + Duration::from_millis(100)),
                    None => None,
                }
            }
            Kind::ReadSock => {
                let fd = fd_of(&op.owned);
                match self.wires.get(&fd) {
                    Some(w) if w.pending() > 0 => Some(op.since),
                    _ => None,
                }
            }
            Kind::Recv { .. } => {
                let fd = fd_of(&op.owned);
                match self.wires.get(&fd) {
                    Some(w) if w.reset || w.wakes() => Some(op.since),
                    Some(w) if w.pending() == 0 && w.close_after => Some(op.since),
                    _ => Some(op.since + self.io_timeout),
                }
            }
            Kind::Write { .. } => Some(op.since + self.world.borrow().faults.write_time),
            _ => Some(op.since),
        }
    }

    /// Carries out operation `op` now; returns its result.
    fn perform(&mut self, op: &mut Op<T>) -> i32 {
        if op.abandoned && !matches!(op.kind, Kind::Job(..)) {
            return -libc::ECANCELED;
        }
        let faults = self.world.borrow().faults.clone();
        match op.kind {
            Kind::Timer(_) => -libc::ETIME,
            Kind::Job(_, ref mut job) => {
                self.jobs_done += 1;
                let Some(j) = job.take() else {
                    return -libc::EINVAL;
                };
                self.run_job(j, &faults)
            }
            Kind::Never if faults.signal_fd_fails => -libc::EBADF,
            Kind::Never => {
                // Only the signal descriptor's read ever completes: one Ctrl-C.
                self.interrupts_given += 1;
                std::mem::size_of::<libc::signalfd_siginfo>() as i32
            }
            Kind::Writeback { offset, len } => {
                if faults.writeback_error == 0 || !self.rng.chance(faults.writeback_error) {
                    // Written back: in the device's cache now, out of the page cache's.
                    if let Owned::Fd(file) = &op.owned {
                        if let Some(inode) = inode_of(file.as_raw_fd()) {
                            let end = if len == 0 {
                                u64::MAX
                            } else {
                                offset + len as u64
                            };
                            for v in self.volatile.iter_mut().filter(|v| v.inode == inode) {
                                if v.offset >= offset && v.offset < end {
                                    v.dirty = false;
                                }
                            }
                        }
                    }
                    return 0;
                }
                let Owned::Fd(file) = &op.owned else {
                    return -libc::EINVAL;
                };
                let fd = file.as_raw_fd();
                // SAFETY: an all-zero `stat` is a valid value for fstat to fill; the descriptor
                // is kept open by the operation.
                let size = unsafe {
                    let mut st: libc::stat = std::mem::zeroed();
                    if libc::fstat(fd, &mut st) == 0 {
                        st.st_size as u64
                    } else {
                        0
                    }
                };
                let end = if len == 0 {
                    size
                } else {
                    size.min(offset + len as u64)
                };
                // What is lost is what was still in the page cache: the writes in the range that
                // no earlier writeback or sync covered (a sync made the others durable).
                let lost: Vec<(u64, u64)> = match inode_of(fd) {
                    Some(inode) => self
                        .volatile
                        .iter()
                        .filter(|v| v.inode == inode && v.dirty)
                        .map(|v| (v.offset.max(offset), (v.offset + v.len).min(end)))
                        .filter(|(a, b)| a < b)
                        .collect(),
                    None => vec![(offset, end)],
                };
                for (a, b) in lost {
                    let zeros = vec![0u8; (b - a) as usize];
                    // SAFETY: pwrite reads `zeros`, borrowed for the call, from an open descriptor.
                    let _ = unsafe {
                        libc::pwrite(fd, zeros.as_ptr().cast(), zeros.len(), a as libc::off_t)
                    };
                }
                -libc::ECANCELED
            }
            Kind::Plain => 0,
            Kind::Accept => {
                let Some((_, bytes)) = self.world.borrow_mut().rpc_calls.pop_front() else {
                    return -libc::EAGAIN;
                };
                // A real descriptor stands for the connection (the engine owns and closes it);
                // its number keys the simulated wire.
                // SAFETY: eventfd(2) with constant arguments; the result is checked.
                let raw = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC) };
                if raw < 0 {
                    return -libc::EMFILE;
                }
                // SAFETY: `raw` was just returned by eventfd and is owned by nothing else.
                let conn = unsafe { std::os::fd::OwnedFd::from_raw_fd(raw) };
                let mut w = self.world.borrow_mut();
                w.rpc_answers.push(Vec::new());
                let k = w.rpc_answers.len() - 1;
                drop(w);
                self.wires.insert(
                    raw,
                    Wire {
                        outbound: bytes,
                        rpc: Some(k),
                        ..Wire::default()
                    },
                );
                if let Owned::Accept(_, slot) = &mut op.owned {
                    *slot = Some(conn);
                }
                raw
            }
            Kind::ReadSock => {
                if self.rng.chance(faults.again) {
                    return -libc::EINTR;
                }
                let fd = fd_of(&op.owned);
                let max_chunk = self.chunk_limit(faults.max_chunk);
                let Some(wire) = self.wires.get_mut(&fd) else {
                    return -libc::ENOTCONN;
                };
                let Owned::Bytes(_, buf) = &mut op.owned else {
                    return -libc::EINVAL;
                };
                let n = buf.len().min(wire.pending()).min(max_chunk);
                buf[..n].copy_from_slice(&wire.outbound[wire.taken..wire.taken + n]);
                wire.taken += n;
                n as i32
            }
            Kind::Connect(addr) => {
                let fd = fd_of(&op.owned);
                let w = self.world.borrow();
                if w.blackholes.contains(&addr) {
                    return -libc::ECANCELED;
                }
                if !w.servers.contains_key(&addr) {
                    return -libc::ECONNREFUSED;
                }
                let tls = w
                    .tls
                    .as_ref()
                    .and_then(|c| crate::tls::server::ServerSession::new(c).ok());
                drop(w);
                self.wires.insert(
                    fd,
                    Wire {
                        server: Some(addr),
                        tls,
                        ..Wire::default()
                    },
                );
                0
            }
            Kind::Send { from } => {
                if self.rng.chance(faults.again) {
                    return -libc::EAGAIN;
                }
                let fd = fd_of(&op.owned);
                let Owned::Bytes(_, buf) = &op.owned else {
                    return -libc::EINVAL;
                };
                let rest = &buf[from.min(buf.len())..];
                let n = if rest.len() > 1 && self.rng.chance(200) {
                    1 + self.rng.below(rest.len() as u64 - 1) as usize
                } else {
                    rest.len()
                };
                let Some(wire) = self.wires.get_mut(&fd) else {
                    return -libc::ENOTCONN;
                };
                if wire.reset {
                    return -libc::ECONNRESET;
                }
                if let Some(k) = wire.rpc {
                    if let Some(answer) = self.world.borrow_mut().rpc_answers.get_mut(k) {
                        answer.extend_from_slice(&rest[..n]);
                    }
                    return n as i32;
                }
                match wire.tls.as_mut() {
                    Some(session) => {
                        let (mut plain, mut out) = (Vec::new(), Vec::new());
                        let refused = session.receive(&rest[..n], &mut plain, &mut out).is_err();
                        wire.inbound.extend_from_slice(&plain);
                        wire.outbound.extend_from_slice(&out);
                        // A protocol error: its alert, then the server closes.
                        wire.close_after |= refused;
                    }
                    None => wire.inbound.extend_from_slice(&rest[..n]),
                }
                self.serve(fd);
                n as i32
            }
            Kind::Recv { at, len } => {
                let fd = fd_of(&op.owned);
                // Cancelled: no bytes, or (half the time) what is there already, as when the
                // kernel finishes the receive before the cancellation reaches it.
                if op.cancelled && self.rng.chance(500) {
                    return -libc::ECANCELED;
                }
                let waited = self.clock >= op.since + self.io_timeout || op.cancelled;
                if self.rng.chance(faults.again) {
                    return -libc::EINTR;
                }
                let max_chunk = self.chunk_limit(faults.max_chunk);
                let Some(wire) = self.wires.get_mut(&fd) else {
                    return -libc::ENOTCONN;
                };
                if wire.reset {
                    return -libc::ECONNRESET;
                }
                let mut n = len.min(wire.pending()).min(max_chunk);
                if let Some(left) = wire.reset_in {
                    if left == 0 {
                        wire.reset = true;
                        return -libc::ECONNRESET;
                    }
                    n = n.min(left);
                }
                if let Some(left) = wire.stall_in {
                    n = n.min(left);
                }
                if n > 0 && !wire.wakes() {
                    // Fewer bytes than the low-water mark, and more to come: still waiting.
                    return if waited {
                        -libc::ECANCELED
                    } else {
                        -libc::EAGAIN
                    };
                }
                if n == 0 {
                    if wire.pending() == 0 && wire.close_after && wire.stall_in != Some(0) {
                        return 0;
                    }
                    // Only a timeout gets here.
                    return if waited {
                        -libc::ECANCELED
                    } else {
                        -libc::EAGAIN
                    };
                }
                let Owned::Block(_, block) = &mut op.owned else {
                    return -libc::EINVAL;
                };
                block.with_spare_mut()[at..at + n]
                    .copy_from_slice(&wire.outbound[wire.taken..wire.taken + n]);
                wire.taken += n;
                if wire.taken == wire.outbound.len() {
                    wire.outbound.clear();
                    wire.taken = 0;
                }
                if let Some(left) = wire.reset_in.as_mut() {
                    *left -= n;
                }
                if let Some(left) = wire.stall_in.as_mut() {
                    *left -= n;
                }
                self.clock += Duration::from_nanos(faults.ns_per_byte.saturating_mul(n as u64));
                n as i32
            }
            Kind::Write {
                from,
                len,
                offset,
                uncached,
            } => {
                if self.rng.chance(faults.again) {
                    return -libc::EINTR;
                }
                if uncached
                    && faults.uncached_refused > 0
                    && self.rng.chance(faults.uncached_refused)
                {
                    // Each way a kernel, a file system or a sandbox refuses it.
                    let refusals = [libc::EOPNOTSUPP, libc::EINVAL, libc::ENOSYS, libc::EPERM];
                    return -refusals[self.rng.below(4) as usize];
                }
                if faults.write_error > 0 && self.rng.chance(faults.write_error) {
                    return -faults.write_errno;
                }
                let Owned::Block(file, block) = &op.owned else {
                    return -libc::EINVAL;
                };
                let mut n = len;
                if n > 4096 && self.rng.chance(faults.short_write) {
                    n = (1 + self.rng.below((n / 4096 - 1) as u64) as usize) * 4096;
                }
                // Through the page cache a write may stop at any byte (never with O_DIRECT).
                if n > 1 && faults.odd_writes > 0 && self.rng3.chance(faults.odd_writes) {
                    // SAFETY: F_GETFL on a descriptor the operation keeps open.
                    let flags = unsafe { libc::fcntl(file.as_raw_fd(), libc::F_GETFL) };
                    if flags >= 0 && flags & libc::O_DIRECT == 0 {
                        n = 1 + self.rng3.below(n as u64 - 1) as usize;
                        self.world.borrow_mut().fire("an odd-length short write");
                    }
                }
                let data = &block.as_slice()[from..from + n];
                if faults.power_loss || faults.job_errors > 0 || faults.writeback_error > 0 {
                    if let Some(v) = volatile(file.as_raw_fd(), offset, n) {
                        self.volatile.push(v);
                    }
                }
                // SAFETY: pwrite reads `n` bytes of `data`, which is borrowed for the call; the
                // descriptor is kept open by the operation.
                let r = unsafe {
                    libc::pwrite(
                        file.as_raw_fd(),
                        data.as_ptr().cast(),
                        n,
                        offset as libc::off_t,
                    )
                };
                completion_result(usize::try_from(r).map_err(|_| io::Error::last_os_error()))
            }
            Kind::ReadFile { offset } => {
                self.world.borrow_mut().file_reads += 1;
                if faults.read_error > 0 && self.rng2.chance(faults.read_error) {
                    self.world.borrow_mut().fire("a read-back failed");
                    return -libc::EIO;
                }
                let Owned::Block(file, block) = &mut op.owned else {
                    return -libc::EINVAL;
                };
                let buf = block.as_mut_slice();
                // SAFETY: pread writes at most `buf.len()` bytes into `buf`, borrowed mutably for
                // the call; the descriptor is kept open by the operation.
                let r = unsafe {
                    libc::pread(
                        file.as_raw_fd(),
                        buf.as_mut_ptr().cast(),
                        buf.len(),
                        offset as libc::off_t,
                    )
                };
                completion_result(usize::try_from(r).map_err(|_| io::Error::last_os_error()))
            }
        }
    }

    /// Runs a file job as the worker thread would, its first file-system step failing now and
    /// then (`Faults::job_errors`); the data files it synced are durable from then on.
    fn run_job(&mut self, job: Job, faults: &Faults) -> i32 {
        use crate::store::sim_hooks::{FAIL_NEXT, SYNCED};
        let inject = faults.job_errors > 0 && self.rng2.chance(faults.job_errors);
        if inject {
            // At its first, second or third step (for a save that claims bytes: the data's
            // sync, the control file's creation, its rename), drawn from `rng3` so that `rng2`
            // draws as it did.
            let skip = self.rng3.below(3) as u32;
            FAIL_NEXT.set(Some((skip, faults.job_errno)));
        }
        let res = completion_result(job().map(|()| 0));
        if inject && FAIL_NEXT.take().is_none() {
            self.world.borrow_mut().fire("file job failed");
        }
        let synced = SYNCED.take();
        if !synced.is_empty() {
            self.volatile.retain(|v| !synced.contains(&v.inode));
        }
        // A sync that failed is a writeback error: the writes still in the page cache that it
        // was to write back are lost (direct ones reached the device already).
        let failed = crate::store::sim_hooks::SYNC_FAILED.take();
        if !failed.is_empty() && self.undo_writes(|v| v.dirty && failed.contains(&v.inode)) {
            self.world
                .borrow_mut()
                .fire("a data sync failed, its writes lost");
        }
        res
    }

    /// The power goes: every data write not made durable since is undone, newest first.
    fn lose_power(&mut self) {
        if self.undo_writes(|_| true) {
            self.world.borrow_mut().fire("power loss undid writes");
        }
    }

    /// Undoes, newest first, the writes not made durable to the files `which` picks; whether
    /// there were any.
    fn undo_writes(&mut self, which: impl Fn(&Volatile) -> bool) -> bool {
        use std::os::unix::fs::FileExt;
        let (undo, keep): (Vec<Volatile>, Vec<Volatile>) = std::mem::take(&mut self.volatile)
            .into_iter()
            .partition(|v| which(v));
        self.volatile = keep;
        let any = !undo.is_empty();
        for v in undo.into_iter().rev() {
            let _ = v.file.write_all_at(&v.old, v.offset);
            if v.file.metadata().is_ok_and(|m| m.len() > v.old_len) {
                let _ = v.file.set_len(v.old_len);
            }
        }
        any
    }

    /// A kill: the run stops here; with `Faults::power_loss`, what was not durable is lost.
    fn kill(&mut self) {
        let power_loss = {
            let mut w = self.world.borrow_mut();
            w.stop = Some(Stop::Killed);
            w.faults.power_loss
        };
        if power_loss {
            self.lose_power();
        }
    }

    /// A receive on `fd` completed: bytes left with none asking for them start to wait.
    fn received(&mut self, fd: RawFd) {
        let clock = self.clock;
        if let Some(w) = self.wires.get_mut(&fd) {
            w.receiving = w.receiving.saturating_sub(1);
            if w.receiving == 0 && w.readable() > 0 {
                w.unread_since.get_or_insert(clock);
            }
        }
    }

    /// The most one read may return now: any amount, or up to a drawn part of `max_chunk`.
    fn chunk_limit(&mut self, max_chunk: usize) -> usize {
        if max_chunk == 0 {
            usize::MAX
        } else {
            1 + self.rng.below(max_chunk as u64) as usize
        }
    }

    /// The server behind `fd` answers every complete request in its inbound bytes.
    fn serve(&mut self, fd: RawFd) {
        loop {
            let Some(wire) = self.wires.get_mut(&fd) else {
                return;
            };
            let Some(addr) = wire.server else { return };
            let mut headers = [httparse::EMPTY_HEADER; 32];
            let mut req = httparse::Request::new(&mut headers);
            let used = match req.parse(&wire.inbound) {
                Ok(httparse::Status::Complete(n)) => n,
                _ => return,
            };
            let method = req.method.unwrap_or("GET").to_string();
            let path = req.path.unwrap_or("/").to_string();
            let header = |name: &str| {
                req.headers
                    .iter()
                    .find(|h| h.name.eq_ignore_ascii_case(name))
                    .map(|h| String::from_utf8_lossy(h.value).to_string())
            };
            let range = header("Range");
            let if_range = header("If-Range");
            let close = header("Connection").is_some_and(|v| v.eq_ignore_ascii_case("close"));
            wire.inbound.drain(..used);
            let mut world = self.world.borrow_mut();
            world
                .requests
                .push((addr, format!("{method} {path}"), range.clone()));
            let mut route = world
                .servers
                .get(&addr)
                .and_then(|s| s.get(&path))
                .cloned()
                .unwrap_or(Route::Status(404));
            let faults = world.faults.clone();
            let sf = &faults.server;
            let mut if_range = if_range;
            // The file changed on the server, which answers ranges whatever If-Range says.
            if let (
                Some(after),
                Some(v2),
                Route::File {
                    ranges, framing, ..
                },
            ) = (sf.change_after, &sf.changed_to, &route)
            {
                if world.requests.len() > after {
                    route = Route::File {
                        data: v2.clone(),
                        etag: "\"v2\"".into(),
                        ranges: *ranges,
                        framing: *framing,
                    };
                    if range.is_some() && if_range.take().is_some_and(|v| v != "\"v2\"") {
                        world.fire("a range of another version, If-Range ignored");
                    }
                }
            }
            drop(world);
            let head_only = method == "HEAD";
            let cap = (sf.short_range > 0 && range.is_some() && self.rng2.chance(sf.short_range))
                .then(|| 1 + self.rng2.below(300_000) as usize);
            let (mut bytes, mut body_at, mut close_after) = respond(
                &route,
                range.as_deref(),
                if_range.as_deref(),
                head_only,
                &mut self.rng,
                cap,
            );
            let mut fired = Vec::new();
            if cap.is_some() && bytes.starts_with(b"HTTP/1.1 206") {
                fired.push("a range answered short");
            }
            let length_framed = !close_after;
            if sf.informational > 0 && self.rng2.chance(sf.informational) {
                let interim: &[u8] = b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </s.css>; rel=preload\r\n\r\n";
                bytes.splice(0..0, interim.iter().copied());
                body_at += interim.len();
                fired.push("1xx heads before the response");
            }
            if bytes.len() > body_at && length_framed && sf.fin > 0 && self.rng2.chance(sf.fin) {
                // (A close-delimited body cut by a FIN is whole as far as anyone can tell.)
                let keep = body_at + self.rng2.below((bytes.len() - body_at) as u64) as usize;
                bytes.truncate(keep);
                close_after = true;
                fired.push("a FIN mid-body");
            }
            let excess =
                length_framed && !close_after && sf.excess > 0 && self.rng2.chance(sf.excess);
            if !close_after && sf.idle_close > 0 && self.rng2.chance(sf.idle_close) {
                close_after = true;
                fired.push("a kept-alive connection closed after its response");
            }
            if !fired.is_empty() {
                let mut w = self.world.borrow_mut();
                for class in &fired {
                    w.fire(class);
                }
            }
            let cut_short = close_after && fired.contains(&"a FIN mid-body");
            let Some(wire) = self.wires.get_mut(&fd) else {
                return;
            };
            let before = wire.pending();
            let body_len = match wire.tls.as_mut() {
                Some(session) => {
                    // Sealed into records: the whole response stands for its body where faults
                    // fall. A server that closes says so with close_notify, unless it was cut.
                    session.seal(&bytes, &mut wire.outbound);
                    if close_after && !cut_short {
                        session.close(&mut wire.outbound);
                    }
                    // (A response without a body has none for a reset or a stall to fall in.)
                    if bytes.len() > body_at {
                        wire.pending() - before
                    } else {
                        0
                    }
                }
                None => {
                    wire.outbound.extend_from_slice(&bytes);
                    bytes.len() - body_at
                }
            };
            if wire.receiving == 0 {
                wire.unread_since.get_or_insert(self.clock);
            }
            wire.close_after |= close_after || close;
            if let Some(n) = faults.stall_after.filter(|&n| body_len > n) {
                wire.stall_in = Some(wire.pending() - body_len + n);
            } else if body_len > 0 && wire.reset_in.is_none() && self.rng.chance(faults.reset) {
                let already = wire.pending() - body_len;
                wire.reset_in = Some(already + self.rng.below(body_len as u64) as usize);
            } else if body_len > 0 && wire.stall_in.is_none() && self.rng.chance(faults.stall) {
                let already = wire.pending() - body_len;
                wire.stall_in = Some(already + self.rng.below(body_len as u64) as usize);
            }
            if excess {
                // A whole response more, after the body, that nobody asked for.
                let stray: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Length: 7\r\n\r\nGARBAGE";
                match wire.tls.as_mut() {
                    Some(session) => session.seal(stray, &mut wire.outbound),
                    None => wire.outbound.extend_from_slice(stray),
                }
                self.world.borrow_mut().fire("a response past the framing");
            }
            if wire.close_after {
                return;
            }
        }
    }
}

/// What a write of `len` bytes at `offset` to file `fd` is about to overwrite, kept to undo it.
fn volatile(fd: RawFd, offset: u64, len: usize) -> Option<Volatile> {
    use std::os::unix::fs::{FileExt, MetadataExt};
    // The same file opened anew, without O_DIRECT (whose reads would need aligned buffers): the
    // kernel keeps its page cache coherent with the direct writes.
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(format!("/proc/self/fd/{fd}"))
        .ok()?;
    let m = file.metadata().ok()?;
    let old_len = m.len();
    let end = old_len.min(offset + len as u64);
    let mut old = vec![0u8; end.saturating_sub(offset) as usize];
    file.read_exact_at(&mut old, offset).ok()?;
    // SAFETY: F_GETFL on a descriptor the write operation keeps open.
    let flags = unsafe { libc::fcntl(fd, libc::F_GETFL) };
    Some(Volatile {
        inode: (m.dev(), m.ino()),
        file,
        offset,
        old,
        old_len,
        len: len as u64,
        dirty: flags >= 0 && flags & libc::O_DIRECT == 0,
    })
}

/// The `(device, inode)` of the open file `fd`.
fn inode_of(fd: RawFd) -> Option<(u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    let m = std::fs::metadata(format!("/proc/self/fd/{fd}")).ok()?;
    Some((m.dev(), m.ino()))
}

fn fd_of(owned: &Owned) -> RawFd {
    match owned {
        Owned::Fd(f)
        | Owned::Connect(f, _)
        | Owned::Block(f, _)
        | Owned::Bytes(f, _)
        | Owned::Datagram(f, _)
        | Owned::Accept(f, _) => f.as_raw_fd(),
        Owned::Timer(_) | Owned::Nothing => -1,
    }
}

/// The bytes a server sends for one request: head and body, where the body starts, and whether
/// the connection closes after it.
fn respond(
    route: &Route,
    range: Option<&str>,
    if_range: Option<&str>,
    head_only: bool,
    rng: &mut Rng,
    cap: Option<usize>,
) -> (Vec<u8>, usize, bool) {
    let empty = |status: u16, extra: &str| {
        let head = format!("HTTP/1.1 {status} X\r\nContent-Length: 0\r\n{extra}\r\n");
        let n = head.len();
        (head.into_bytes(), n, false)
    };
    let (data, etag, ranges, framing) = match route {
        Route::Redirect(to) => return empty(302, &format!("Location: {to}\r\n")),
        Route::Status(s) => return empty(*s, ""),
        Route::File {
            data,
            etag,
            ranges,
            framing,
        } => (data, etag, *ranges, *framing),
    };
    let total = data.len() as u64;
    let wanted = range
        .filter(|_| ranges && if_range.is_none_or(|v| v == etag))
        .and_then(|r| r.strip_prefix("bytes="))
        .and_then(|r| {
            let (a, b) = r.split_once('-')?;
            let a: u64 = a.parse().ok()?;
            let b: u64 = if b.is_empty() {
                total.saturating_sub(1)
            } else {
                b.parse::<u64>().ok()?.min(total.saturating_sub(1))
            };
            Some((a, b))
        });
    let mut head = String::new();
    let (start, end) = match wanted {
        Some((a, _)) if a >= total => {
            return empty(416, &format!("Content-Range: bytes */{total}\r\n"));
        }
        Some((a, b)) => {
            // A server that answers a range with its first part only.
            let b = cap.map_or(b, |c| b.min(a + c as u64 - 1));
            head.push_str("HTTP/1.1 206 Partial Content\r\n");
            head.push_str(&format!("Content-Range: bytes {a}-{b}/{total}\r\n"));
            (a, b + 1)
        }
        None => {
            head.push_str("HTTP/1.1 200 OK\r\n");
            (0, total)
        }
    };
    if ranges {
        head.push_str("Accept-Ranges: bytes\r\n");
    }
    head.push_str(&format!("ETag: {etag}\r\n"));
    let body = &data[start as usize..end as usize];
    let mut close = false;
    let mut out;
    match framing {
        Framing::Length => {
            head.push_str(&format!("Content-Length: {}\r\n\r\n", body.len()));
            out = head.into_bytes();
        }
        Framing::UntilClose => {
            head.push_str("Connection: close\r\n\r\n");
            out = head.into_bytes();
            close = true;
        }
        Framing::Chunked => {
            head.push_str("Transfer-Encoding: chunked\r\n\r\n");
            out = head.into_bytes();
        }
    }
    let at = out.len();
    if head_only {
        return (out, at, close);
    }
    if framing == Framing::Chunked {
        let mut rest = body;
        while !rest.is_empty() {
            let n = (1 + rng.below(40_000) as usize).min(rest.len());
            out.extend_from_slice(format!("{n:x}\r\n").as_bytes());
            out.extend_from_slice(&rest[..n]);
            out.extend_from_slice(b"\r\n");
            rest = &rest[n..];
        }
        out.extend_from_slice(b"0\r\n\r\n");
    } else {
        out.extend_from_slice(body);
    }
    (out, at, close)
}

impl<T> Reactor<T> for Sim<T> {
    fn pool(&self) -> &Pool {
        &self.pool
    }

    fn in_flight(&self) -> usize {
        self.live
    }

    fn now(&self) -> Instant {
        self.base + self.clock
    }

    fn socket(&mut self, _addr: &SocketAddr) -> io::Result<Fd> {
        self.next_sock += 1;
        Ok(Rc::new(SimSock(self.next_sock)))
    }

    /// The listener is only a key: its accepts complete as `World::rpc_calls` says.
    fn listen(&mut self, _addr: &SocketAddr) -> io::Result<Fd> {
        self.next_sock += 1;
        Ok(Rc::new(SimSock(self.next_sock)))
    }

    fn accept(&mut self, tag: T, listener: Fd) -> OpId {
        self.insert(tag, Owned::Accept(listener, None), Kind::Accept)
    }

    // No datagrams here (`udp_bound` says Unsupported, so no socket has them): an operation on
    // one would wait until abandoned.
    fn send_to(&mut self, tag: T, sock: Fd, datagram: Box<Datagram>) -> OpId {
        self.insert(tag, Owned::Datagram(sock, datagram), Kind::Never)
    }

    fn recv_from(&mut self, tag: T, sock: Fd, datagram: Box<Datagram>) -> OpId {
        self.insert(tag, Owned::Datagram(sock, datagram), Kind::Never)
    }

    fn connect(&mut self, tag: T, sock: Fd, addr: SocketAddr) -> OpId {
        let raw = super::super::sys::raw_addr(&addr);
        self.insert(tag, Owned::Connect(sock, raw), Kind::Connect(addr))
    }

    fn recv(&mut self, tag: T, sock: Fd, block: Block, at: usize, len: usize) -> OpId {
        if let Some(w) = self.wires.get_mut(&sock.as_raw_fd()) {
            w.receiving += 1;
            if let Some(t) = w.unread_since.take() {
                let mut world = self.world.borrow_mut();
                world.longest_unread = world.longest_unread.max(self.clock - t);
            }
        }
        let at = at.min(block.room());
        let len = len.min(block.room() - at);
        self.insert(tag, Owned::Block(sock, block), Kind::Recv { at, len })
    }

    fn quiet(&mut self, sock: &Fd) -> bool {
        self.wires
            .get(&sock.as_raw_fd())
            .is_some_and(|w| !w.reset && w.pending() == 0 && !w.close_after)
    }

    fn farewell(&mut self, sock: &Fd, bytes: &[u8]) {
        // Taken whole, as a socket with room takes a short record; a server that has gone takes
        // nothing.
        let Some(wire) = self.wires.get_mut(&sock.as_raw_fd()) else {
            return;
        };
        if wire.reset {
            return;
        }
        if let Some(session) = wire.tls.as_mut() {
            let (mut plain, mut out) = (Vec::new(), Vec::new());
            if let Ok(true) = session.receive(bytes, &mut plain, &mut out) {
                self.world.borrow_mut().client_close_notifies += 1;
            }
        }
    }

    fn recv_low_water(&mut self, sock: &Fd, bytes: usize) {
        if let Some(w) = self.wires.get_mut(&sock.as_raw_fd()) {
            w.low_water = bytes;
        }
        if bytes > 1 {
            self.world.borrow_mut().low_water_marks += 1;
        }
    }

    fn send(&mut self, tag: T, sock: Fd, buf: Vec<u8>, from: usize) -> OpId {
        self.insert(tag, Owned::Bytes(sock, buf), Kind::Send { from })
    }

    fn write(
        &mut self,
        tag: T,
        file: Fd,
        block: Block,
        span: Range<usize>,
        offset: u64,
        uncached: bool,
    ) -> OpId {
        let from = span.start.min(block.len());
        let len = span.len().min(block.len() - from);
        let kind = Kind::Write {
            from,
            len,
            offset,
            uncached,
        };
        self.insert(tag, Owned::Block(file, block), kind)
    }

    fn read_file(&mut self, tag: T, file: Fd, block: Block, offset: u64) -> OpId {
        self.insert(tag, Owned::Block(file, block), Kind::ReadFile { offset })
    }

    fn writeback(&mut self, tag: T, file: Fd, offset: u64, len: usize) -> OpId {
        self.insert(tag, Owned::Fd(file), Kind::Writeback { offset, len })
    }

    fn fallocate(&mut self, tag: T, file: Fd, _len: u64) -> OpId {
        // Allocation only reserves space; the simulation's files grow as they are written.
        self.insert(tag, Owned::Fd(file), Kind::Plain)
    }

    fn read(&mut self, tag: T, fd: Fd, buf: Vec<u8>) -> OpId {
        let rpc = self
            .wires
            .get(&fd.as_raw_fd())
            .is_some_and(|w| w.rpc.is_some());
        let kind = if rpc { Kind::ReadSock } else { Kind::Never };
        self.insert(tag, Owned::Bytes(fd, buf), kind)
    }

    fn timer(&mut self, tag: T, after: Duration) -> OpId {
        let due = self.clock + after;
        self.insert(tag, Owned::Nothing, Kind::Timer(due))
    }

    fn blocking(&mut self, tag: T, job: Job) -> OpId {
        self.jobs_given += 1;
        let kind = Kind::Job(self.jobs_given - 1, Some(job));
        self.insert(tag, Owned::Nothing, kind)
    }

    fn cancel(&mut self, id: OpId) {
        let index = (id.0 & 0xffff_ffff) as usize;
        if let Some((generation, Some(op))) = self.slots.get_mut(index) {
            if u64::from(*generation) == id.0 >> 32 {
                op.cancelled = true;
            }
        }
    }

    fn abandon(&mut self, id: OpId) {
        let index = (id.0 & 0xffff_ffff) as usize;
        if let Some((generation, Some(op))) = self.slots.get_mut(index) {
            if u64::from(*generation) == id.0 >> 32 {
                op.abandoned = true;
            }
        }
    }

    fn wait(&mut self, out: &mut Vec<Completion<T>>) -> io::Result<()> {
        loop {
            let stop = |why: Stop| {
                let msg = format!("simulation stopped: {why:?}");
                (why, io::Error::other(msg))
            };
            {
                let mut w = self.world.borrow_mut();
                w.steps += 1;
                let failed = if w.faults.kill_at.is_some_and(|k| w.steps >= k) {
                    Some(stop(Stop::Killed))
                } else if w.steps > STEP_LIMIT {
                    Some(stop(Stop::Hung(format!("{STEP_LIMIT} steps"))))
                } else {
                    None
                };
                if let Some((why, e)) = failed {
                    let killed = matches!(why, Stop::Killed);
                    let late = killed && w.faults.kill_late;
                    w.stop = Some(why);
                    drop(w);
                    if late {
                        self.perform_ready();
                    }
                    if killed {
                        self.kill();
                    }
                    return Err(e);
                }
            }
            let mut ready = Vec::new();
            let mut next: Option<Duration> = None;
            for (i, (_, op)) in self.slots.iter().enumerate() {
                let Some(op) = op else { continue };
                match self.ready_at(op) {
                    Some(t) if t <= self.clock => ready.push(i),
                    Some(t) => next = Some(next.map_or(t, |n: Duration| n.min(t))),
                    None => {}
                }
            }
            if ready.is_empty() {
                let Some(t) = next else {
                    let (why, e) = stop(Stop::Hung(
                        "nothing in flight can ever complete".to_string(),
                    ));
                    self.world.borrow_mut().stop = Some(why);
                    return Err(e);
                };
                self.clock = t;
                if self.clock > TIME_LIMIT {
                    let (why, e) = stop(Stop::Hung(format!("virtual time past {TIME_LIMIT:?}")));
                    self.world.borrow_mut().stop = Some(why);
                    return Err(e);
                }
                continue;
            }
            let reorder = self.world.borrow().faults.reorder;
            if reorder {
                // Shuffle, and hold some back for a later step.
                for k in (1..ready.len()).rev() {
                    let j = self.rng.below(k as u64 + 1) as usize;
                    ready.swap(k, j);
                }
                let keep = 1 + self.rng.below(ready.len() as u64) as usize;
                ready.truncate(keep);
            }
            for i in ready {
                let Some(mut op) = self.slots[i].1.take() else {
                    continue;
                };
                self.free.push(i as u32);
                self.live -= 1;
                let id = OpId((u64::from(self.slots[i].0) << 32) | i as u64);
                let res = self.perform(&mut op);
                if matches!(op.kind, Kind::Recv { .. }) {
                    self.received(fd_of(&op.owned));
                }
                if !op.abandoned {
                    out.push(Completion {
                        id,
                        tag: op.tag,
                        res,
                        owned: op.owned,
                    });
                }
            }
            if !out.is_empty() {
                self.world.borrow_mut().elapsed = self.clock;
                return Ok(());
            }
        }
    }

    fn shutdown(&mut self) {
        // A run that ended by itself waits for its blocking jobs, in order, as the worker thread
        // would be waited for; after a kill they never happen.
        if self.world.borrow().stop.is_none() {
            // A kill may come while these are waited for (`Faults::kill_in_shutdown`).
            let kill_before = self.world.borrow().faults.kill_in_shutdown;
            let mut waited = 0;
            while let Some(i) = self.slots.iter().position(|(_, op)| {
                op.as_ref()
                    .is_some_and(|o| matches!(o.kind, Kind::Job(n, _) if n == self.jobs_done))
            }) {
                if kill_before == Some(waited) {
                    self.world.borrow_mut().fire("kill in the shutdown wait");
                    self.kill();
                    break;
                }
                if let Some(mut op) = self.slots[i].1.take() {
                    self.perform(&mut op);
                }
                waited += 1;
            }
        }
        // Whatever else is still in flight never happens (a kill) or was abandoned: drop it all.
        // A run that ended by itself must have left nothing but timers.
        let mut w = self.world.borrow_mut();
        for (_, op) in &mut self.slots {
            if let Some(op) = op.take() {
                if !op.abandoned && !matches!(op.kind, Kind::Timer(_) | Kind::Never | Kind::Job(..))
                {
                    w.left_in_flight += 1;
                }
            }
        }
        self.live = 0;
        self.free = (0..self.slots.len() as u32).collect();
    }
}
