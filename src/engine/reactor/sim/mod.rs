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
//! ([`world::ServerFaults`]). Those added later draw from `rng2` and `rng3`, so that the draws of `rng`
//! for a seed stay as they were.
//!
//! Here: the scheduler (operations in flight, when each is ready, virtual time) and the `Reactor`
//! implementation. `world.rs` is the world it stands in for (routes, faults, what the run did),
//! `perform.rs` carries an operation out, `server.rs` answers requests on the wire.
use super::{completion_result, Block, Completion, Datagram, Fd, Job, OpId, Owned, Pool, Reactor};
use std::cell::RefCell;
use std::collections::HashMap;
use std::io;
use std::net::SocketAddr;
use std::ops::Range;
use std::os::fd::{AsRawFd, FromRawFd, RawFd};
use std::rc::Rc;
use std::time::{Duration, Instant};

mod perform;
mod server;
mod world;

use world::Volatile;
pub use world::{Faults, Framing, Rng, Route, Stop, World};

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
    /// A send of `block[from..from + len]`.
    SendBlock {
        from: usize,
        len: usize,
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
    /// A datagram sent from a bound UDP socket: delivered (or lost) at once.
    SendTo,
    /// A datagram received on a bound UDP socket: completes when one waits for it.
    RecvFrom,
}

/// A bound UDP socket: its address, and the datagrams that arrived for it (with who sent each).
struct Udp {
    addr: SocketAddr,
    inbox: std::collections::VecDeque<(SocketAddr, Vec<u8>)>,
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
    /// Bound UDP sockets, by descriptor.
    udp: HashMap<RawFd, Udp>,
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
    /// Toy servers' data ports waiting for their connection (for the control connection's
    /// descriptor), and the data connection each control connection has.
    data_listeners: HashMap<SocketAddr, RawFd>,
    data_of: HashMap<RawFd, RawFd>,
    next_data_port: u16,
    /// Sockets listening on a port of their own choosing (the engine's data listeners, FTP's
    /// active mode): their address, and the connections servers made to them, not accepted yet.
    listeners: HashMap<RawFd, SocketAddr>,
    backlog: HashMap<RawFd, std::collections::VecDeque<Wire>>,
    /// Toy control connections in active mode: the port their client listens on.
    active_of: HashMap<RawFd, u16>,
    /// Toy conversations kept after a transfer (`World::toy_keep`).
    toy_kept: std::collections::HashSet<RawFd>,
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
            udp: HashMap::new(),
            next_sock: 1 << 20,
            jobs_given: 0,
            jobs_done: 0,
            interrupts_given: 0,
            rng2: Rng::new(seed ^ 0x5157_0002),
            volatile: Vec::new(),
            rng3: Rng::new(seed ^ 0x5157_0003),
            data_listeners: HashMap::new(),
            data_of: HashMap::new(),
            next_data_port: 40_000,
            listeners: HashMap::new(),
            backlog: HashMap::new(),
            active_of: HashMap::new(),
            toy_kept: std::collections::HashSet::new(),
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
            Kind::Accept if self.backlog.contains_key(&fd_of(&op.owned)) => {
                // A data listener: due once a server has connected to it; else never (the
                // engine gives up on it by its own clock).
                let waiting = self
                    .backlog
                    .get(&fd_of(&op.owned))
                    .is_some_and(|q| !q.is_empty());
                waiting.then_some(op.since.max(self.clock))
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
            Kind::RecvFrom => {
                let fd = fd_of(&op.owned);
                match self.udp.get(&fd) {
                    Some(u) if !u.inbox.is_empty() => Some(op.since.max(self.clock)),
                    _ => None,
                }
            }
            _ => Some(op.since),
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

    /// The listener is only a key: its accepts complete as `World::rpc_calls` says (the RPC
    /// server's), or, on a port of its own choosing (0), as servers connect to it (the data
    /// listeners of FTP's active mode: `serve_toy`).
    fn listen(&mut self, addr: &SocketAddr) -> io::Result<Fd> {
        self.next_sock += 1;
        if addr.port() == 0 {
            let mut at = *addr;
            at.set_port(45_000 + (self.next_sock % 10_000) as u16);
            self.listeners.insert(self.next_sock, at);
            self.backlog.insert(self.next_sock, Default::default());
        }
        Ok(Rc::new(SimSock(self.next_sock)))
    }

    /// A listener's address; a connection leaves from the client's one address.
    fn local_addr(&mut self, sock: &Fd) -> io::Result<SocketAddr> {
        let raw = sock.as_raw_fd();
        Ok(self
            .listeners
            .get(&raw)
            .copied()
            .unwrap_or(SocketAddr::from((
                [10, 0, 0, 1],
                (raw % 20_000 + 20_000) as u16,
            ))))
    }

    fn accept(&mut self, tag: T, listener: Fd) -> OpId {
        self.insert(tag, Owned::Accept(listener, None), Kind::Accept)
    }

    /// A UDP socket at `local` (port 0: the next free one from 40 000), reached by every other
    /// simulated socket and by `World::udp_servers`.
    fn udp_bound(&mut self, local: &SocketAddr) -> io::Result<Fd> {
        let mut addr = *local;
        if addr.port() == 0 {
            let mut port = 40_000;
            while self.udp.values().any(|u| u.addr.port() == port) {
                port += 1;
            }
            addr.set_port(port);
        }
        if self.udp.values().any(|u| u.addr == addr) {
            return Err(io::ErrorKind::AddrInUse.into());
        }
        self.next_sock += 1;
        let udp = Udp {
            addr,
            inbox: Default::default(),
        };
        self.udp.insert(self.next_sock, udp);
        Ok(Rc::new(SimSock(self.next_sock)))
    }

    fn send_to(&mut self, tag: T, sock: Fd, datagram: Box<Datagram>) -> OpId {
        self.insert(tag, Owned::Datagram(sock, datagram), Kind::SendTo)
    }

    fn recv_from(&mut self, tag: T, sock: Fd, datagram: Box<Datagram>) -> OpId {
        self.insert(tag, Owned::Datagram(sock, datagram), Kind::RecvFrom)
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

    fn send_block(&mut self, tag: T, sock: Fd, block: Block, span: Range<usize>) -> OpId {
        let from = span.start.min(block.len());
        let len = span.len().min(block.len() - from);
        self.insert(
            tag,
            Owned::Block(sock, block),
            Kind::SendBlock { from, len },
        )
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

#[cfg(test)]
mod tests {
    use super::super::Layout;
    use super::*;

    fn sim(world: Rc<RefCell<World>>) -> Sim<u32> {
        let pool =
            Pool::new(Layout::fit(2, 72 * 1024, 2 << 20).expect("a layout")).expect("a pool");
        Sim::new(
            pool,
            world,
            1,
            Duration::from_secs(5),
            Duration::from_secs(3),
        )
    }

    fn wait_for(r: &mut Sim<u32>, n: usize) -> Vec<Completion<u32>> {
        let mut out = Vec::new();
        for _ in 0..100 {
            if out.len() >= n {
                break;
            }
            r.wait(&mut out).expect("a wait");
        }
        out.sort_by_key(|c| c.tag);
        out
    }

    /// A block's bytes sent from the pool (`send_block`) reach the simulated server as any sent
    /// bytes do, cut to the block, and the block comes back.
    #[test]
    fn a_block_is_sent_from_the_pool() {
        let world = Rc::new(RefCell::new(World::default()));
        let server: SocketAddr = "127.0.0.9:80".parse().expect("an address");
        world
            .borrow_mut()
            .servers
            .insert(server, std::collections::HashMap::new());
        let mut r = sim(world.clone());
        let sock = r.socket(&server).expect("a socket");
        r.connect(1, sock.clone(), server);
        assert_eq!(wait_for(&mut r, 1)[0].res, 0);
        let request = b"xxGET /d/x HTTP/1.1\r\nHost: 127.0.0.9\r\n\r\n";
        let mut block = r.pool().alloc(super::super::Class::Write).expect("a block");
        block.as_mut_slice()[..request.len()].copy_from_slice(request);
        let mut sent = 0;
        let mut block = Some(block);
        // (The simulation may send part of it: the rest goes as the engine would send it.)
        while sent < request.len() - 2 {
            let b = block.take().expect("the block back");
            r.send_block(2, sock.clone(), b, 2 + sent..request.len());
            let c = wait_for(&mut r, 1).pop().expect("a completion");
            if c.res > 0 {
                sent += c.res as usize;
            }
            block = c.owned.into_block();
        }
        assert!(block.is_some(), "the block did not come back");
        let requests = world.borrow().requests.clone();
        assert_eq!(requests.len(), 1, "{requests:?}");
        assert_eq!(requests[0].1, "GET /d/x");
    }

    /// What the real reactors' contract says of datagrams (`datagrams_go_to_and_come_from_any_
    /// peer`), on the simulated one: between two bound sockets, to and from a simulated server,
    /// cut to the room, never delivered once abandoned; and lost where the faults say.
    #[test]
    fn datagrams_go_to_and_come_from_any_peer() {
        let world = Rc::new(RefCell::new(World::default()));
        let server: SocketAddr = "127.0.0.9:6881".parse().expect("an address");
        world.borrow_mut().udp_servers.insert(
            server,
            Box::new(|from: SocketAddr, bytes: &[u8]| {
                vec![[
                    b"echo from ".as_slice(),
                    from.to_string().as_bytes(),
                    b": ",
                    bytes,
                ]
                .concat()]
            }),
        );
        let mut r = sim(world.clone());
        let any: SocketAddr = "127.0.0.1:0".parse().expect("an address");
        let a = r.udp_bound(&any).expect("a socket");
        let b = r.udp_bound(&any).expect("a socket");
        let a_addr = r.udp[&a.as_raw_fd()].addr;
        let b_addr = r.udp[&b.as_raw_fd()].addr;
        assert_ne!(a_addr, b_addr);
        assert_eq!(
            r.udp_bound(&a_addr).err().map(|e| e.kind()),
            Some(io::ErrorKind::AddrInUse)
        );

        r.recv_from(1, b.clone(), Datagram::receiving(vec![0; 64]));
        r.send_to(2, a.clone(), Datagram::to(b"ping".to_vec(), &b_addr));
        let mut out = wait_for(&mut r, 2);
        let got = out.remove(0);
        assert_eq!((got.tag, got.res), (1, 4));
        let d = got.owned.into_datagram().expect("a datagram");
        assert_eq!(d.peer(), Some(a_addr));
        assert_eq!(&d.into_bytes()[..4], b"ping");
        assert_eq!((out[0].tag, out[0].res), (2, 4));

        // A server's answer comes back from its address, cut to the room.
        r.send_to(3, a.clone(), Datagram::to(b"hello".to_vec(), &server));
        r.recv_from(4, a.clone(), Datagram::receiving(vec![0; 10]));
        let out = wait_for(&mut r, 2);
        assert_eq!((out[0].tag, out[0].res), (3, 5));
        assert_eq!((out[1].tag, out[1].res), (4, 10));
        let d = out.into_iter().nth(1).and_then(|c| c.owned.into_datagram());
        let d = d.expect("a datagram");
        assert_eq!(d.peer(), Some(server));
        assert_eq!(d.into_bytes(), b"echo from ");

        // Abandoned while waiting: never delivered, even once a datagram arrives.
        let id = r.recv_from(5, b.clone(), Datagram::receiving(vec![0; 64]));
        r.abandon(id);
        r.send_to(6, a.clone(), Datagram::to(b"late".to_vec(), &b_addr));
        let out = wait_for(&mut r, 1);
        assert_eq!(out.iter().map(|c| c.tag).collect::<Vec<_>>(), [6]);
        assert_eq!(
            r.udp[&b.as_raw_fd()].inbox.len(),
            1,
            "the late datagram waits"
        );

        // Lost on the way, when the faults say so: sent, never received.
        world.borrow_mut().faults.datagram_loss = 1000;
        r.send_to(7, a.clone(), Datagram::to(b"gone".to_vec(), &server));
        let out = wait_for(&mut r, 1);
        assert_eq!((out[0].tag, out[0].res), (7, 4));
        assert_eq!(world.borrow().fired.get("a datagram lost"), Some(&1));
        assert!(
            r.udp[&a.as_raw_fd()].inbox.is_empty(),
            "an answer to a lost datagram"
        );
    }
}
