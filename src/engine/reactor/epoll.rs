//! The portable reactor, for where io_uring is refused (container seccomp profiles, gVisor,
//! `kernel.io_uring_disabled`). It takes the same operations and gives the same completions as the
//! io_uring reactor, with the same ownership: an operation holds its block, buffer, socket or file
//! until its completion is delivered. Underneath:
//!
//! * sockets, eventfds and signalfds are non-blocking; an operation on one is tried when it is
//!   submitted and again each time epoll says its descriptor is ready (one-shot interest, so an
//!   idle descriptor never wakes the loop);
//! * file work (`pwrite`/`pread` from the same aligned blocks, so `O_DIRECT` stays as the file was
//!   opened; `sync_file_range` with `fadvise`; `fallocate`) is done when submitted;
//! * timers and the connect and I/O deadlines share one timerfd, armed for the earliest;
//! * blocking jobs run on the same worker thread as with io_uring, which rings an eventfd.
//!
//! Everything completes through `wait`, never inside the call that submitted it, so the engine
//! above sees the same order of events whichever reactor it runs on.
use super::table::Table;
use super::worker::Worker;
use super::{Block, Completion, Datagram, Fd, Job, OpId, Owned, Pool, Reactor};
use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap, VecDeque};
use std::io;
use std::net::SocketAddr;
use std::ops::Range;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::rc::{Rc, Weak};
use std::time::{Duration, Instant};

/// epoll keys of the reactor's own descriptors (a watched descriptor's key is its number).
const TIMER_KEY: u64 = u64::MAX;
const WORKER_KEY: u64 = u64::MAX - 1;

/// What an operation still has to do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    /// `started`: connect(2) said EINPROGRESS; writable means it ended.
    Connect {
        started: bool,
    },
    Recv {
        at: usize,
        len: usize,
    },
    Send {
        from: usize,
    },
    /// A send of a block's bytes.
    #[cfg_attr(not(test), allow(dead_code))]
    SendBlock {
        from: usize,
        len: usize,
    },
    /// An accept on a listening socket.
    Accept,
    /// A datagram out, or in.
    #[cfg_attr(not(test), allow(dead_code))]
    SendTo,
    #[cfg_attr(not(test), allow(dead_code))]
    RecvFrom,
    /// A read of an eventfd or signalfd into the operation's buffer.
    Read,
    Timer,
    Job,
    /// Done; its result waits in `ready`.
    Finished,
}

impl Op {
    /// The readiness it waits for.
    fn interest(self) -> u32 {
        match self {
            Op::Connect { .. } | Op::Send { .. } | Op::SendBlock { .. } | Op::SendTo => {
                libc::EPOLLOUT as u32
            }
            Op::Recv { .. } | Op::Read | Op::Accept | Op::RecvFrom => libc::EPOLLIN as u32,
            Op::Timer | Op::Job | Op::Finished => 0,
        }
    }
}

struct Entry<T> {
    tag: T,
    owned: Owned,
    op: Op,
    /// When it fails (or, for a timer, completes) if still pending, and with what result.
    deadline: Option<(Instant, i32)>,
    /// Abandoned after it finished: dropped when its result comes up, never delivered.
    abandoned: bool,
}

/// The operations waiting on one descriptor, and its epoll registration.
struct Watch {
    /// The descriptor as the operations hold it: once it is gone (closed), so is its
    /// registration, and its number may come back as another descriptor.
    fd: Weak<dyn AsRawFd>,
    ops: Vec<u64>,
    registered: bool,
}

/// The portable reactor: an epoll instance, a timerfd, and the table of operations in flight keyed
/// by index and generation (so a stale id names nothing), as in the io_uring reactor.
pub struct Epoll<T> {
    ep: OwnedFd,
    timer: OwnedFd,
    /// When the timerfd is set to fire, if it is.
    timer_at: Option<Instant>,
    table: Table<Entry<T>>,
    /// Finished operations, delivered by the next `wait` in this order.
    ready: VecDeque<(u64, i32)>,
    watches: HashMap<RawFd, Watch>,
    deadlines: BinaryHeap<Reverse<(Instant, u64)>>,
    io_timeout: Duration,
    connect_timeout: Duration,
    pool: Pool,
    worker: Option<Worker>,
    events: Vec<libc::epoll_event>,
}

fn errno() -> i32 {
    io::Error::last_os_error()
        .raw_os_error()
        .unwrap_or(libc::EIO)
}

/// A syscall's return value as a completion's: the count, or a negative errno.
fn result_of(rc: isize) -> i32 {
    if rc < 0 {
        -errno()
    } else {
        i32::try_from(rc).unwrap_or(i32::MAX)
    }
}

fn set_nonblocking(fd: RawFd) {
    // SAFETY: fcntl on a descriptor an operation keeps open for the call.
    unsafe {
        let flags = libc::fcntl(fd, libc::F_GETFL);
        if flags >= 0 && flags & libc::O_NONBLOCK == 0 {
            libc::fcntl(fd, libc::F_SETFL, flags | libc::O_NONBLOCK);
        }
    }
}

impl<T> Epoll<T> {
    /// An epoll instance and a timerfd for `pool` (nothing is registered with the kernel, so no
    /// locked memory is needed).
    pub fn new(
        io_timeout: Duration,
        connect_timeout: Duration,
        pool: Pool,
    ) -> io::Result<Epoll<T>> {
        // SAFETY: plain syscalls; on success each returns a fresh descriptor we then own.
        let ep = unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) };
        if ep < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: as above.
        let ep = unsafe { OwnedFd::from_raw_fd(ep) };
        // SAFETY: as above.
        let timer = unsafe {
            libc::timerfd_create(
                libc::CLOCK_MONOTONIC,
                libc::TFD_CLOEXEC | libc::TFD_NONBLOCK,
            )
        };
        if timer < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: as above.
        let timer = unsafe { OwnedFd::from_raw_fd(timer) };
        let r = Epoll {
            ep,
            timer,
            timer_at: None,
            table: Table::default(),
            ready: VecDeque::new(),
            watches: HashMap::new(),
            deadlines: BinaryHeap::new(),
            io_timeout,
            connect_timeout,
            pool,
            worker: None,
            events: Vec::with_capacity(64),
        };
        r.ctl(
            libc::EPOLL_CTL_ADD,
            r.timer.as_raw_fd(),
            libc::EPOLLIN as u32,
            TIMER_KEY,
        )?;
        Ok(r)
    }

    fn ctl(&self, op: libc::c_int, fd: RawFd, events: u32, key: u64) -> io::Result<()> {
        let mut ev = libc::epoll_event { events, u64: key };
        // SAFETY: epoll_ctl reads the event from a local; both descriptors are open.
        if unsafe { libc::epoll_ctl(self.ep.as_raw_fd(), op, fd, &mut ev) } < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    fn insert(&mut self, tag: T, owned: Owned, op: Op) -> u64 {
        self.table.insert(Entry {
            tag,
            owned,
            op,
            deadline: None,
            abandoned: false,
        })
    }

    fn entry(&mut self, ud: u64) -> Option<&mut Entry<T>> {
        self.table.get_mut(ud)
    }

    fn take(&mut self, ud: u64) -> Option<Entry<T>> {
        self.table.take(ud)
    }

    /// Marks `ud` finished with `res`; its completion goes out with the next `wait`.
    fn finish(&mut self, ud: u64, res: i32) {
        if let Some(e) = self.entry(ud) {
            e.op = Op::Finished;
            e.deadline = None;
            self.ready.push_back((ud, res));
        }
    }

    /// Gives `ud` a deadline `after` from now, failing it with `res` then. Only timers go into the
    /// heap: an I/O operation's deadline stays in its entry and is looked at only while it waits
    /// on its descriptor (most complete at once), so nothing grows with the rate of operations.
    fn set_deadline(&mut self, ud: u64, after: Duration, res: i32) {
        let when = Instant::now() + after;
        if let Some(e) = self.entry(ud) {
            e.deadline = Some((when, res));
            if e.op == Op::Timer {
                self.deadlines.push(Reverse((when, ud)));
            }
        }
    }

    /// The operations waiting on descriptors, with their deadlines.
    fn waiting_deadlines(&self) -> impl Iterator<Item = (u64, Instant)> + '_ {
        self.watches.values().flat_map(|w| {
            w.ops.iter().filter_map(|&ud| {
                let (when, _) = self.table.get(ud)?.deadline?;
                Some((ud, when))
            })
        })
    }

    /// Tries operation `ud` once: its result, or None if its descriptor is not ready.
    fn attempt(&mut self, ud: u64) -> Option<i32> {
        let e = self.entry(ud)?;
        match (e.op, &mut e.owned) {
            (Op::Connect { started: false }, Owned::Connect(fd, addr)) => {
                let (ptr, len) = (
                    &addr.storage as *const libc::sockaddr_storage as *const libc::sockaddr,
                    addr.len,
                );
                // SAFETY: the address is the operation's own, for the call; the socket is open.
                let rc = unsafe { libc::connect(fd.as_raw_fd(), ptr, len) };
                if rc == 0 {
                    return Some(0);
                }
                match errno() {
                    libc::EINPROGRESS | libc::EINTR | libc::EALREADY => {
                        e.op = Op::Connect { started: true };
                        None
                    }
                    err => Some(-err),
                }
            }
            (Op::Connect { started: true }, Owned::Connect(fd, _)) => {
                let err =
                    super::super::sys::int_option(fd.as_raw_fd(), libc::SOL_SOCKET, libc::SO_ERROR);
                Some(match err {
                    Ok(err) => -err,
                    Err(e) => -e.raw_os_error().unwrap_or(libc::EIO),
                })
            }
            (Op::Recv { at, len }, Owned::Block(fd, block)) => {
                let ptr = block.addr().wrapping_add(at);
                // SAFETY: `ptr..ptr + len` lies in the block this operation owns (`recv` cut it to
                // the block and its spare bytes); the descriptor is open.
                let rc = unsafe { libc::read(fd.as_raw_fd(), ptr.cast(), len) };
                Self::unless_again(rc)
            }
            (Op::Send { from }, Owned::Bytes(fd, buf)) => {
                let rest = &buf[from..];
                // SAFETY: reads `rest`, borrowed for the call; the socket is open.
                let rc = unsafe {
                    libc::send(
                        fd.as_raw_fd(),
                        rest.as_ptr().cast(),
                        rest.len(),
                        libc::MSG_NOSIGNAL,
                    )
                };
                Self::unless_again(rc)
            }
            (Op::SendBlock { from, len }, Owned::Block(fd, block)) => {
                let ptr = block.addr().wrapping_add(from);
                // SAFETY: `ptr..ptr + len` lies in the block this operation owns (`send_block`
                // cut it to the block); the socket is open.
                let rc = unsafe { libc::send(fd.as_raw_fd(), ptr.cast(), len, libc::MSG_NOSIGNAL) };
                Self::unless_again(rc)
            }
            (Op::Accept, Owned::Accept(listener, conn)) => {
                // SAFETY: accept4 with no address out-parameters; the listener is open.
                let rc = unsafe {
                    libc::accept4(
                        listener.as_raw_fd(),
                        std::ptr::null_mut(),
                        std::ptr::null_mut(),
                        libc::SOCK_CLOEXEC | libc::SOCK_NONBLOCK,
                    )
                };
                let res = Self::unless_again(rc as isize)?;
                if res >= 0 {
                    // SAFETY: a fresh descriptor from accept4 that nobody else owns.
                    *conn = Some(unsafe { OwnedFd::from_raw_fd(res) });
                    return Some(0);
                }
                Some(res)
            }
            (Op::SendTo, Owned::Datagram(fd, d)) => {
                Self::unless_again_io(d.send_now(fd.as_raw_fd()))
            }
            (Op::RecvFrom, Owned::Datagram(fd, d)) => {
                Self::unless_again_io(d.recv_now(fd.as_raw_fd()))
            }
            (Op::Read, Owned::Bytes(fd, buf)) => {
                // SAFETY: writes at most `buf.len()` bytes into the operation's buffer.
                let rc = unsafe { libc::read(fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) };
                Self::unless_again(rc)
            }
            _ => None,
        }
    }

    /// A non-blocking call's result, or None for "not ready" (EINTR is tried again later too).
    fn unless_again(rc: isize) -> Option<i32> {
        if rc >= 0 {
            return Some(i32::try_from(rc).unwrap_or(i32::MAX));
        }
        match errno() {
            libc::EAGAIN | libc::EINTR => None,
            err => Some(-err),
        }
    }

    /// [`unless_again`](Self::unless_again) for a call that returns an `io::Result`.
    fn unless_again_io(r: io::Result<usize>) -> Option<i32> {
        match r {
            Ok(n) => Some(i32::try_from(n).unwrap_or(i32::MAX)),
            Err(e) => match e.raw_os_error().unwrap_or(libc::EIO) {
                libc::EAGAIN | libc::EINTR => None,
                err => Some(-err),
            },
        }
    }

    /// Submits a descriptor operation: tried now, and if its descriptor is not ready, watched.
    fn submit_on(&mut self, fd: &Fd, ud: u64) {
        let raw = fd.as_raw_fd();
        let known = self
            .watches
            .get(&raw)
            .is_some_and(|w| w.fd.upgrade().is_some());
        if !known {
            // A new descriptor, or a closed one's number again (its registration went with it).
            set_nonblocking(raw);
            self.watches.insert(
                raw,
                Watch {
                    fd: Rc::downgrade(fd),
                    ops: Vec::new(),
                    registered: false,
                },
            );
        }
        match self.attempt(ud) {
            Some(res) => self.finish(ud, res),
            None => {
                if let Some(w) = self.watches.get_mut(&raw) {
                    w.ops.push(ud);
                }
                self.arm(raw);
            }
        }
    }

    /// Asks epoll, once, for the readiness the operations on `raw` wait for.
    fn arm(&mut self, raw: RawFd) {
        let Some(w) = self.watches.get(&raw) else {
            return;
        };
        let mut interest = 0;
        for &ud in &w.ops {
            if let Some(e) = self.table.get(ud) {
                interest |= e.op.interest();
            }
        }
        if interest == 0 {
            return;
        }
        let events = interest | libc::EPOLLONESHOT as u32;
        let first = if w.registered {
            libc::EPOLL_CTL_MOD
        } else {
            libc::EPOLL_CTL_ADD
        };
        let done = self.ctl(first, raw, events, raw as u64).or_else(|e| {
            let other = match e.raw_os_error() {
                Some(libc::ENOENT) => libc::EPOLL_CTL_ADD,
                Some(libc::EEXIST) => libc::EPOLL_CTL_MOD,
                _ => return Err(e),
            };
            self.ctl(other, raw, events, raw as u64)
        });
        match done {
            Ok(()) => {
                if let Some(w) = self.watches.get_mut(&raw) {
                    w.registered = true;
                }
            }
            Err(e) => {
                // Not pollable (epoll refuses it): its operations fail now rather than wait for ever.
                let err = -e.raw_os_error().unwrap_or(libc::EIO);
                let ops = self
                    .watches
                    .get_mut(&raw)
                    .map(|w| std::mem::take(&mut w.ops))
                    .unwrap_or_default();
                for ud in ops {
                    self.finish(ud, err);
                }
            }
        }
    }

    /// epoll said `raw` is ready (or in error, or hung up): its operations are tried again.
    fn on_ready(&mut self, raw: RawFd, events: u32) {
        let Some(w) = self.watches.get_mut(&raw) else {
            return;
        };
        let ops = std::mem::take(&mut w.ops);
        let broken = events & (libc::EPOLLERR | libc::EPOLLHUP) as u32 != 0;
        let mut waiting = Vec::new();
        for ud in ops {
            let wants = self.entry(ud).map_or(0, |e| e.op.interest());
            if wants == 0 {
                continue;
            }
            let outcome = if broken || events & wants != 0 {
                self.attempt(ud)
            } else {
                None
            };
            match outcome {
                Some(res) => self.finish(ud, res),
                None => waiting.push(ud),
            }
        }
        if let Some(w) = self.watches.get_mut(&raw) {
            w.ops = waiting;
        }
        self.arm(raw);
    }

    /// Ends every operation whose deadline has passed: timers with ETIME, I/O with ECANCELED.
    fn expire(&mut self) {
        let now = Instant::now();
        while let Some(&Reverse((when, ud))) = self.deadlines.peek() {
            if when > now {
                break;
            }
            self.deadlines.pop();
            let due = self
                .entry(ud)
                .and_then(|e| e.deadline)
                .filter(|(w, _)| *w == when);
            if let Some((_, res)) = due {
                self.finish(ud, res);
            }
        }
        let due: Vec<u64> = self
            .waiting_deadlines()
            .filter(|&(_, when)| when <= now)
            .map(|(ud, _)| ud)
            .collect();
        for ud in due {
            let res = self
                .entry(ud)
                .and_then(|e| e.deadline)
                .map_or(-libc::ECANCELED, |(_, r)| r);
            self.unwatch(ud);
            self.finish(ud, res);
        }
    }

    /// Takes `ud` off the descriptor it waits on, if any.
    fn unwatch(&mut self, ud: u64) {
        let raw = match self.entry(ud).map(|e| &e.owned) {
            Some(
                Owned::Connect(fd, _)
                | Owned::Block(fd, _)
                | Owned::Bytes(fd, _)
                | Owned::Accept(fd, _),
            ) => fd.as_raw_fd(),
            _ => return,
        };
        if let Some(w) = self.watches.get_mut(&raw) {
            w.ops.retain(|&o| o != ud);
        }
    }

    /// Sets the timerfd for the earliest deadline still pending (stale timers are dropped first).
    fn arm_timer(&mut self) {
        let timer = loop {
            let Some(&Reverse((when, ud))) = self.deadlines.peek() else {
                break None;
            };
            let live = self
                .entry(ud)
                .and_then(|e| e.deadline)
                .is_some_and(|(w, _)| w == when);
            if live {
                break Some(when);
            }
            self.deadlines.pop();
        };
        let io = self.waiting_deadlines().map(|(_, w)| w).min();
        let next = match (timer, io) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        if next == self.timer_at {
            return;
        }
        self.timer_at = next;
        let after = next.map_or(Duration::ZERO, |w| {
            w.saturating_duration_since(Instant::now())
                .max(Duration::from_nanos(1))
        });
        let spec = libc::itimerspec {
            it_interval: libc::timespec {
                tv_sec: 0,
                tv_nsec: 0,
            },
            it_value: libc::timespec {
                tv_sec: after.as_secs() as libc::time_t,
                tv_nsec: libc::c_long::from(after.subsec_nanos() as i32),
            },
        };
        // SAFETY: timerfd_settime reads the spec from a local; the old value is not asked for.
        unsafe {
            libc::timerfd_settime(self.timer.as_raw_fd(), 0, &spec, std::ptr::null_mut());
        }
    }

    /// Reads an eventfd or timerfd counter to zero (nothing to read is fine).
    fn drain(fd: RawFd) {
        let mut buf = [0u8; 8];
        // SAFETY: reads at most 8 bytes into a local.
        unsafe {
            libc::read(fd, buf.as_mut_ptr().cast(), 8);
        }
    }

    fn worker_rang(&mut self) {
        let Some(w) = self.worker.as_ref() else {
            return;
        };
        Self::drain(w.wake.as_raw_fd());
        let done: Vec<(u64, i32)> = w.finished().collect();
        for (ud, res) in done {
            self.finish(ud, res);
        }
    }

    /// A file operation done now; its completion goes out with the next `wait`.
    fn file_op(&mut self, tag: T, owned: Owned, res: i32) -> OpId {
        let ud = self.insert(tag, owned, Op::Finished);
        self.ready.push_back((ud, res));
        OpId(ud)
    }
}

impl<T> Reactor<T> for Epoll<T> {
    fn pool(&self) -> &Pool {
        &self.pool
    }

    fn in_flight(&self) -> usize {
        self.table.live()
    }

    fn now(&self) -> Instant {
        Instant::now()
    }

    fn socket(&mut self, addr: &SocketAddr) -> io::Result<Fd> {
        let sock = super::super::sys::tcp_socket(addr)?;
        set_nonblocking(sock.as_raw_fd());
        Ok(Rc::new(sock))
    }

    fn listen(&mut self, addr: &SocketAddr) -> io::Result<Fd> {
        let sock = super::super::sys::tcp_listener(addr)?;
        set_nonblocking(sock.as_raw_fd());
        Ok(Rc::new(sock))
    }

    fn udp_socket(&mut self, peer: &SocketAddr) -> io::Result<Fd> {
        let sock = super::super::sys::udp_connected(peer)?;
        set_nonblocking(sock.as_raw_fd());
        Ok(Rc::new(sock))
    }

    fn udp_bound(&mut self, local: &SocketAddr) -> io::Result<Fd> {
        Ok(Rc::new(super::super::sys::udp_bound(local)?))
    }

    fn send_to(&mut self, tag: T, sock: Fd, datagram: Box<Datagram>) -> OpId {
        let ud = self.insert(tag, Owned::Datagram(sock.clone(), datagram), Op::SendTo);
        self.submit_on(&sock, ud);
        OpId(ud)
    }

    fn recv_from(&mut self, tag: T, sock: Fd, datagram: Box<Datagram>) -> OpId {
        let ud = self.insert(tag, Owned::Datagram(sock.clone(), datagram), Op::RecvFrom);
        self.submit_on(&sock, ud);
        OpId(ud)
    }

    fn accept(&mut self, tag: T, listener: Fd) -> OpId {
        let ud = self.insert(tag, Owned::Accept(listener.clone(), None), Op::Accept);
        self.submit_on(&listener, ud);
        OpId(ud)
    }

    fn connect(&mut self, tag: T, sock: Fd, addr: SocketAddr) -> OpId {
        let raw = super::super::sys::raw_addr(&addr);
        let ud = self.insert(
            tag,
            Owned::Connect(sock.clone(), raw),
            Op::Connect { started: false },
        );
        self.set_deadline(ud, self.connect_timeout, -libc::ECANCELED);
        self.submit_on(&sock, ud);
        OpId(ud)
    }

    fn recv(&mut self, tag: T, sock: Fd, block: Block, at: usize, len: usize) -> OpId {
        let at = at.min(block.room());
        let len = len.min(block.room() - at);
        let ud = self.insert(tag, Owned::Block(sock.clone(), block), Op::Recv { at, len });
        self.set_deadline(ud, self.io_timeout, -libc::ECANCELED);
        self.submit_on(&sock, ud);
        OpId(ud)
    }

    fn farewell(&mut self, sock: &Fd, bytes: &[u8]) {
        // Best effort: a full socket buffer or a peer gone leaves it unsaid.
        let _ = super::super::sys::send_now(sock.as_raw_fd(), bytes);
    }

    fn quiet(&mut self, sock: &Fd) -> bool {
        super::super::sys::socket_quiet(sock.as_raw_fd())
    }

    fn recv_low_water(&mut self, sock: &Fd, bytes: usize) {
        // Only a cost when it fails: the receive then completes with fewer bytes, as before.
        let _ = super::super::sys::set_recv_low_water(sock.as_raw_fd(), bytes);
    }

    fn send(&mut self, tag: T, sock: Fd, buf: Vec<u8>, from: usize) -> OpId {
        let from = from.min(buf.len());
        let ud = self.insert(tag, Owned::Bytes(sock.clone(), buf), Op::Send { from });
        self.set_deadline(ud, self.io_timeout, -libc::ECANCELED);
        self.submit_on(&sock, ud);
        OpId(ud)
    }

    fn send_block(&mut self, tag: T, sock: Fd, block: Block, span: Range<usize>) -> OpId {
        let from = span.start.min(block.len());
        let len = span.len().min(block.len() - from);
        let ud = self.insert(
            tag,
            Owned::Block(sock.clone(), block),
            Op::SendBlock { from, len },
        );
        self.set_deadline(ud, self.io_timeout, -libc::ECANCELED);
        self.submit_on(&sock, ud);
        OpId(ud)
    }

    fn write(
        &mut self,
        tag: T,
        file: Fd,
        mut block: Block,
        span: Range<usize>,
        offset: u64,
        uncached: bool,
    ) -> OpId {
        let from = span.start.min(block.len());
        let len = span.len().min(block.len() - from);
        let ptr = block.addr().wrapping_add(from);
        let iov = libc::iovec {
            iov_base: ptr.cast(),
            iov_len: len,
        };
        let fd = file.as_raw_fd();
        // SAFETY: `ptr..ptr + len` lies in the block, owned here for the call; the file is open.
        // Plain pwrite unless the flag is wanted: where io_uring is refused, a sandbox may refuse
        // pwritev2 as well, and the writer then retries without it.
        let rc = unsafe {
            if uncached {
                libc::pwritev2(fd, &iov, 1, offset as libc::off_t, libc::RWF_DONTCACHE)
            } else {
                libc::pwrite(fd, ptr.cast(), len, offset as libc::off_t)
            }
        };
        self.file_op(tag, Owned::Block(file, block), result_of(rc))
    }

    fn read_file(&mut self, tag: T, file: Fd, mut block: Block, offset: u64) -> OpId {
        let (ptr, len) = (block.addr(), block.len());
        // SAFETY: writes at most the block's length into the block, owned here for the call.
        let rc = unsafe { libc::pread(file.as_raw_fd(), ptr.cast(), len, offset as libc::off_t) };
        self.file_op(tag, Owned::Block(file, block), result_of(rc))
    }

    /// As with io_uring: the result is the page-cache drop's; a failed writeback is ECANCELED.
    fn writeback(&mut self, tag: T, file: Fd, offset: u64, len: usize) -> OpId {
        let fd = file.as_raw_fd();
        let flags = libc::SYNC_FILE_RANGE_WAIT_BEFORE
            | libc::SYNC_FILE_RANGE_WRITE
            | libc::SYNC_FILE_RANGE_WAIT_AFTER;
        // SAFETY: plain syscalls on a file the operation keeps open.
        let res = unsafe {
            if libc::sync_file_range(fd, offset as libc::off_t, len as libc::off_t, flags) < 0 {
                -libc::ECANCELED
            } else {
                -libc::posix_fadvise(
                    fd,
                    offset as libc::off_t,
                    len as libc::off_t,
                    libc::POSIX_FADV_DONTNEED,
                )
            }
        };
        self.file_op(tag, Owned::Fd(file), res)
    }

    fn fallocate(&mut self, tag: T, file: Fd, len: u64) -> OpId {
        // SAFETY: plain syscall on a file the operation keeps open.
        let rc = unsafe { libc::fallocate(file.as_raw_fd(), 0, 0, len as libc::off_t) };
        let res = if rc < 0 { -errno() } else { 0 };
        self.file_op(tag, Owned::Fd(file), res)
    }

    fn read(&mut self, tag: T, fd: Fd, buf: Vec<u8>) -> OpId {
        let ud = self.insert(tag, Owned::Bytes(fd.clone(), buf), Op::Read);
        self.submit_on(&fd, ud);
        OpId(ud)
    }

    /// A timer that completes with ETIME after `after`.
    fn timer(&mut self, tag: T, after: Duration) -> OpId {
        let ud = self.insert(tag, Owned::Nothing, Op::Timer);
        self.set_deadline(ud, after, -libc::ETIME);
        OpId(ud)
    }

    fn blocking(&mut self, tag: T, job: Job) -> OpId {
        if self.worker.is_none() {
            if let Ok(w) = Worker::start() {
                let wake = w.wake.as_raw_fd();
                set_nonblocking(wake);
                if self
                    .ctl(libc::EPOLL_CTL_ADD, wake, libc::EPOLLIN as u32, WORKER_KEY)
                    .is_ok()
                {
                    self.worker = Some(w);
                }
            }
        }
        let ud = self.insert(tag, Owned::Nothing, Op::Job);
        match self.worker.as_ref() {
            Some(w) => {
                if !w.send(ud, job) {
                    self.finish(ud, -libc::EIO);
                }
            }
            // No thread: the job runs here, and completes at the next wait (as with io_uring).
            None => {
                let res = super::completion_result(job().map(|()| 0));
                self.finish(ud, res);
            }
        }
        OpId(ud)
    }

    /// Gives up on an operation. One still waiting is dropped at once with what it owned (the
    /// kernel holds nothing of it); one already finished, or a blocking job, is dropped when its
    /// result comes up. A stale id does nothing.
    fn abandon(&mut self, id: OpId) {
        let Some(e) = self.entry(id.0) else { return };
        match e.op {
            Op::Finished | Op::Job => e.abandoned = true,
            _ => {
                self.unwatch(id.0);
                self.take(id.0);
            }
        }
    }

    /// A receive or send still waiting on its descriptor finishes now with ECANCELED; one that
    /// finished already, or a blocking job, is left as it is.
    fn cancel(&mut self, id: OpId) {
        let Some(e) = self.entry(id.0) else { return };
        if e.abandoned || matches!(e.op, Op::Finished | Op::Job) {
            return;
        }
        self.unwatch(id.0);
        self.finish(id.0, -libc::ECANCELED);
    }

    /// Delivers what has finished; if nothing has, waits for a descriptor, a deadline or the
    /// worker. An error means epoll itself failed.
    fn wait(&mut self, out: &mut Vec<Completion<T>>) -> io::Result<()> {
        self.expire();
        let timeout = if self.ready.is_empty() {
            self.arm_timer();
            -1
        } else {
            0
        };
        self.events.clear();
        // SAFETY: epoll_wait writes at most `capacity` events into the vector's spare capacity,
        // whose length is then set to what it wrote.
        let n = unsafe {
            libc::epoll_wait(
                self.ep.as_raw_fd(),
                self.events.as_mut_ptr(),
                self.events.capacity() as libc::c_int,
                timeout,
            )
        };
        if n < 0 {
            let e = io::Error::last_os_error();
            if e.raw_os_error() != Some(libc::EINTR) {
                return Err(e);
            }
        } else {
            // SAFETY: the kernel initialised the first `n` events.
            unsafe { self.events.set_len(n as usize) };
        }
        let events: Vec<(u64, u32)> = self
            .events
            .iter()
            .map(|e| ({ e.u64 }, { e.events }))
            .collect();
        for (key, flags) in events {
            match key {
                TIMER_KEY => {
                    Self::drain(self.timer.as_raw_fd());
                    self.timer_at = None;
                }
                WORKER_KEY => self.worker_rang(),
                fd => self.on_ready(fd as RawFd, flags),
            }
        }
        self.expire();
        while let Some((ud, res)) = self.ready.pop_front() {
            let Some(e) = self.take(ud) else { continue };
            if !e.abandoned {
                out.push(Completion {
                    id: OpId(ud),
                    tag: e.tag,
                    res,
                    owned: e.owned,
                });
            }
        }
        Ok(())
    }

    /// Abandons everything; blocking jobs are waited for (a control file is saved or removed before
    /// the process ends), then the worker stops.
    fn shutdown(&mut self) {
        for id in self.table.ids(|_| true) {
            self.abandon(OpId(id));
        }
        let mut sink = Vec::new();
        while self.table.live() > 0 {
            if self.wait(&mut sink).is_err() {
                break;
            }
            sink.clear();
        }
        if let Some(w) = self.worker.as_mut() {
            w.stop();
        }
    }
}

impl<T> Drop for Epoll<T> {
    fn drop(&mut self) {
        self.shutdown();
    }
}

#[cfg(test)]
mod tests {
    use super::super::{Class, Layout};
    use super::*;
    use std::io::Write;
    use std::os::unix::net::UnixStream;

    /// Receives, done at once or after waiting, leave no deadline behind: the reactor's memory
    /// does not grow with the number of operations (a 60 s timeout at thousands of reads a second
    /// would otherwise hold them all).
    #[test]
    fn finished_receives_leave_no_deadline_behind() {
        let pool = Pool::new(Layout::fit(2, 72 * 1024, 2 << 20).unwrap()).unwrap();
        let mut r: Epoll<u32> =
            Epoll::new(Duration::from_secs(60), Duration::from_secs(5), pool).unwrap();
        let (a, mut peer) = UnixStream::pair().unwrap();
        let sock: Fd = Rc::new(OwnedFd::from(a));
        let mut out = Vec::new();
        for i in 0..2000u32 {
            if i % 2 == 0 {
                peer.write_all(b"x").unwrap();
            }
            let block = r.pool().alloc(Class::Read).unwrap();
            r.recv(i, sock.clone(), block, 0, 1);
            if i % 2 == 1 {
                peer.write_all(b"y").unwrap();
            }
            out.clear();
            while out.is_empty() {
                r.wait(&mut out).unwrap();
            }
            assert_eq!((out[0].tag, out[0].res), (i, 1));
        }
        assert!(
            r.deadlines.is_empty(),
            "{} deadlines kept",
            r.deadlines.len()
        );
        assert_eq!(r.waiting_deadlines().count(), 0);
    }
}
