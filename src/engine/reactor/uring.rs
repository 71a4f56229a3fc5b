//! The io_uring reactor: one ring, the pool registered with it, and the table of operations in
//! flight keyed by user_data (index and generation, so a stale id names nothing).
use super::table::Table;
use super::worker::Worker;
use super::{Block, Completion, Datagram, Fd, Job, OpId, Owned, Pool, RawAddr, Reactor};
use io_uring::{opcode, squeue, types, IoUring, Probe};
use std::collections::VecDeque;
use std::io;
use std::net::SocketAddr;
use std::ops::Range;
use std::os::fd::RawFd;
use std::rc::Rc;
use std::time::{Duration, Instant};

/// user_data of completions nobody waits for (linked timeouts, cancel requests).
const IGNORE: u64 = u64::MAX;
/// The user data of the sweep timer (see `sweep`).
const SWEEP: u64 = u64::MAX - 1;
/// How often sends and receives are checked against the I/O timeout: a quarter of it, at most a
/// second (a timeout fires at most that late).
fn sweep_every(io_timeout: Duration) -> Duration {
    (io_timeout / 4).clamp(Duration::from_millis(10), Duration::from_secs(1))
}

/// Opcodes the engine uses; a kernel without any of them is refused at start.
const NEEDED: &[(u8, &str)] = &[
    (opcode::Nop::CODE, "NOP"),
    (opcode::ReadFixed::CODE, "READ_FIXED"),
    (opcode::WriteFixed::CODE, "WRITE_FIXED"),
    (opcode::Connect::CODE, "CONNECT"),
    (opcode::Accept::CODE, "ACCEPT"),
    (opcode::Send::CODE, "SEND"),
    (opcode::SendMsg::CODE, "SENDMSG"),
    (opcode::RecvMsg::CODE, "RECVMSG"),
    (opcode::Read::CODE, "READ"),
    (opcode::Timeout::CODE, "TIMEOUT"),
    (opcode::LinkTimeout::CODE, "LINK_TIMEOUT"),
    (opcode::AsyncCancel::CODE, "ASYNC_CANCEL"),
    (opcode::SyncFileRange::CODE, "SYNC_FILE_RANGE"),
    (opcode::Fadvise::CODE, "FADVISE"),
    (opcode::Fallocate::CODE, "FALLOCATE"),
];

struct Entry<T> {
    /// `None` for the reactor's own read of the worker's eventfd.
    tag: Option<T>,
    owned: Owned,
    /// Abandoned: the completion is dropped here, never delivered.
    abandoned: bool,
    /// A send or receive: when it has waited too long (`--timeout`), and whether it has been
    /// cancelled for that (its completion is then delivered with ECANCELED).
    deadline: Option<Instant>,
    timed_out: bool,
}

/// The ring, the table of operations in flight, and the pool registered with it.
pub struct Uring<T> {
    ring: IoUring,
    table: Table<Entry<T>>,
    /// Completions reaped while making room in the submission queue, delivered at the next `wait`.
    backlog: VecDeque<(u64, i32)>,
    /// The connect timeout's timespec (`--connect-timeout`, linked to each connect); the kernel
    /// reads it when the entries are submitted.
    connect_deadline: Box<types::Timespec>,
    /// The ring failed: nothing more will complete, so what the table holds is never freed.
    broken: bool,
    pool: Pool,
    /// The thread that runs blocking jobs, started by the first one.
    worker: Option<Worker>,
    /// Shutting down: the worker's eventfd read is not issued again.
    closing: bool,
    /// Sends and receives carry no linked timeout each (a GiB of receives would bring thousands
    /// of cancelled timeouts back): one timer wakes the ring every `sweep_period` while any is in
    /// flight, and those past their deadline are cancelled.
    io_timeout: Duration,
    sweep_period: Duration,
    sweep_ts: Box<types::Timespec>,
    sweep_armed: bool,
    next_sweep: Instant,
}

/// Refuses a ring whose kernel lacks an opcode the engine uses (`supported` answers the probe), so
/// the run falls back before any operation could fail half-way.
fn opcodes_present(supported: impl Fn(u8) -> bool) -> Result<(), SetupError> {
    let missing: Vec<&str> = NEEDED
        .iter()
        .filter(|(code, _)| !supported(*code))
        .map(|(_, name)| *name)
        .collect();
    if missing.is_empty() {
        Ok(())
    } else {
        Err(SetupError::Unavailable(format!(
            "the kernel's io_uring lacks {}",
            missing.join(", ")
        )))
    }
}

fn timespec(d: Duration) -> types::Timespec {
    types::Timespec::new()
        .sec(d.as_secs())
        .nsec(d.subsec_nanos())
}

/// Why a reactor could not be made.
#[derive(Debug)]
pub enum SetupError {
    /// io_uring is refused, incomplete, or did not run a test operation.
    Unavailable(String),
    /// Registering the pool failed (usually RLIMIT_MEMLOCK).
    Register(io::Error),
}

impl<T> Uring<T> {
    /// Creates the ring, checks every opcode the engine uses and runs a test operation through it,
    /// then registers `pool`.
    pub fn new(
        entries: u32,
        io_timeout: Duration,
        connect_timeout: Duration,
        pool: Pool,
    ) -> Result<Uring<T>, SetupError> {
        let unavailable = |e: io::Error| SetupError::Unavailable(e.to_string());
        let ring = IoUring::builder()
            .setup_single_issuer()
            .setup_defer_taskrun()
            .setup_coop_taskrun()
            .build(entries)
            .or_else(|_| IoUring::new(entries))
            .map_err(unavailable)?;
        let mut probe = Probe::new();
        ring.submitter()
            .register_probe(&mut probe)
            .map_err(unavailable)?;
        opcodes_present(|code| probe.is_supported(code))?;
        let mut r = Uring {
            ring,
            table: Table::default(),
            backlog: VecDeque::new(),
            connect_deadline: Box::new(timespec(connect_timeout)),
            broken: false,
            pool,
            worker: None,
            closing: false,
            io_timeout,
            sweep_period: sweep_every(io_timeout),
            sweep_ts: Box::new(timespec(sweep_every(io_timeout))),
            sweep_armed: false,
            next_sweep: Instant::now() + sweep_every(io_timeout),
        };
        r.push(&[opcode::Nop::new().build().user_data(IGNORE)]);
        r.ring.submit_and_wait(1).map_err(unavailable)?;
        let ok = r.ring.completion().next().map(|c| c.result());
        if ok != Some(0) {
            return Err(SetupError::Unavailable(
                "a test operation did not complete".into(),
            ));
        }
        // SAFETY: the iovec describes the pool's mapping, which stays mapped while any block or the
        // pool exists; the reactor owns the pool, and blocks the kernel uses are in the table.
        unsafe { r.ring.submitter().register_buffers(&[r.pool.iovec()]) }
            .map_err(SetupError::Register)?;
        Ok(r)
    }

    fn insert(&mut self, tag: T, owned: Owned) -> u64 {
        self.insert_entry(Some(tag), owned)
    }

    fn insert_entry(&mut self, tag: Option<T>, owned: Owned) -> u64 {
        self.table.insert(Entry {
            tag,
            owned,
            abandoned: false,
            deadline: None,
            timed_out: false,
        })
    }

    /// A send or receive, with its deadline; the sweep timer is armed if it is not.
    fn insert_io(&mut self, tag: T, owned: Owned) -> u64 {
        let ud = self.table.insert(Entry {
            tag: Some(tag),
            owned,
            abandoned: false,
            deadline: Some(Instant::now() + self.io_timeout),
            timed_out: false,
        });
        self.arm_sweep();
        ud
    }

    fn arm_sweep(&mut self) {
        if self.sweep_armed || self.closing || self.broken {
            return;
        }
        let ptr: *const types::Timespec = &*self.sweep_ts;
        let t = opcode::Timeout::new(ptr).build().user_data(SWEEP);
        if self.push(&[t]) {
            self.sweep_armed = true;
        }
    }

    /// Cancels the sends and receives past their deadline; their completions come back with
    /// ECANCELED, as a linked timeout's would have.
    fn sweep(&mut self) {
        let now = Instant::now();
        if now < self.next_sweep {
            return;
        }
        self.next_sweep = now + self.sweep_period;
        let late = self
            .table
            .ids(|e| !e.abandoned && !e.timed_out && e.deadline.is_some_and(|d| d <= now));
        for id in late {
            if let Some(e) = self.table.get_mut(id) {
                e.timed_out = true;
            }
            let c = opcode::AsyncCancel::new(id).build().user_data(IGNORE);
            self.push(&[c]);
        }
    }

    fn take(&mut self, ud: u64) -> Option<Entry<T>> {
        self.table.take(ud)
    }

    /// Stages entries as one unit (a linked pair must not be split by a submission). When the queue
    /// is full it submits; a kernel that wants its completions reaped first gets them reaped into
    /// the backlog. False when the ring has failed.
    fn push(&mut self, entries: &[squeue::Entry]) -> bool {
        loop {
            if self.broken {
                return false;
            }
            let mut sq = self.ring.submission();
            if sq.capacity() - sq.len() >= entries.len() {
                // SAFETY: every entry's memory (blocks, buffers, addresses, timespecs) is owned by
                // the table entry of its user_data, or by `self.connect_deadline` and
                // `self.sweep_ts` (as long as the ring), until its completion is reaped;
                // descriptors are kept open by the same entry.
                unsafe {
                    let _ = sq.push_multiple(entries);
                }
                return true;
            }
            drop(sq);
            match self.ring.submit() {
                Ok(_) => {}
                Err(e) if e.raw_os_error() == Some(libc::EINTR) => {}
                Err(e) if matches!(e.raw_os_error(), Some(libc::EBUSY | libc::EAGAIN)) => {
                    self.reap()
                }
                Err(_) => self.broken = true,
            }
        }
    }

    fn reap(&mut self) {
        self.backlog
            .extend(self.ring.completion().map(|c| (c.user_data(), c.result())));
    }

    /// Stages `entries` for an operation inserted as `ud`; if the ring has failed the operation
    /// completes at once with EIO, so its owner still hears of it.
    fn stage(&mut self, ud: u64, entries: &[squeue::Entry]) -> OpId {
        if !self.push(entries) {
            self.backlog.push_back((ud, -libc::EIO));
        }
        OpId(ud)
    }

    /// Keeps a read in flight on the worker's eventfd.
    fn arm_worker(&mut self) {
        let Some(w) = self.worker.as_ref() else {
            return;
        };
        if w.armed.is_some() || self.closing {
            return;
        }
        let fd: Fd = Rc::new(w.wake.clone());
        let raw = fd.as_raw_fd();
        let mut buf = vec![0u8; 8];
        let ptr = buf.as_mut_ptr();
        let ud = self.insert_entry(None, Owned::Bytes(fd, buf));
        let r = opcode::Read::new(types::Fd(raw), ptr, 8)
            .build()
            .user_data(ud);
        self.stage(ud, &[r]);
        if let Some(w) = self.worker.as_mut() {
            w.armed = Some(ud);
        }
    }

    /// The worker rang: its results become completions, and the read goes on.
    fn worker_rang(&mut self) {
        if let Some(w) = self.worker.as_mut() {
            w.armed = None;
            self.backlog.extend(w.finished());
        }
        self.arm_worker();
    }

    fn connect_deadline(&self) -> squeue::Entry {
        opcode::LinkTimeout::new(&*self.connect_deadline)
            .build()
            .user_data(IGNORE)
    }
}

impl<T> Reactor<T> for Uring<T> {
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
        Ok(Rc::new(super::super::sys::tcp_socket(addr)?))
    }

    /// Connects `sock` to `addr`, failing with ECANCELED after the connect timeout.
    fn listen(&mut self, addr: &SocketAddr) -> io::Result<Fd> {
        Ok(Rc::new(super::super::sys::tcp_listener(addr)?))
    }

    fn udp_socket(&mut self, peer: &SocketAddr) -> io::Result<Fd> {
        Ok(Rc::new(super::super::sys::udp_connected(peer)?))
    }

    fn udp_bound(&mut self, local: &SocketAddr) -> io::Result<Fd> {
        Ok(Rc::new(super::super::sys::udp_bound(local)?))
    }

    fn send_to(&mut self, tag: T, sock: Fd, mut datagram: Box<Datagram>) -> OpId {
        let fd = sock.as_raw_fd();
        let msg = datagram.header();
        // Moving the box into the table does not move the datagram the header points into.
        let ud = self.insert(tag, Owned::Datagram(sock, datagram));
        let s = opcode::SendMsg::new(types::Fd(fd), msg)
            .flags(libc::MSG_NOSIGNAL as u32)
            .build()
            .user_data(ud);
        self.stage(ud, &[s])
    }

    fn recv_from(&mut self, tag: T, sock: Fd, mut datagram: Box<Datagram>) -> OpId {
        let fd = sock.as_raw_fd();
        let msg = datagram.header_for_receive();
        let ud = self.insert(tag, Owned::Datagram(sock, datagram));
        let r = opcode::RecvMsg::new(types::Fd(fd), msg)
            .build()
            .user_data(ud);
        self.stage(ud, &[r])
    }

    fn accept(&mut self, tag: T, listener: Fd) -> OpId {
        let raw: RawFd = listener.as_raw_fd();
        let ud = self.insert(tag, Owned::Accept(listener, None));
        let a = opcode::Accept::new(types::Fd(raw), std::ptr::null_mut(), std::ptr::null_mut())
            .flags(libc::SOCK_CLOEXEC)
            .build()
            .user_data(ud);
        self.stage(ud, &[a])
    }

    fn connect(&mut self, tag: T, sock: Fd, addr: SocketAddr) -> OpId {
        let addr: Box<RawAddr> = super::super::sys::raw_addr(&addr);
        let fd = sock.as_raw_fd();
        let (ptr, len) = (
            &addr.storage as *const libc::sockaddr_storage as *const libc::sockaddr,
            addr.len,
        );
        let ud = self.insert(tag, Owned::Connect(sock, addr));
        let c = opcode::Connect::new(types::Fd(fd), ptr, len)
            .build()
            .flags(squeue::Flags::IO_LINK)
            .user_data(ud);
        let t = self.connect_deadline();
        self.stage(ud, &[c, t])
    }

    /// Receives into `block[at..at + len]` (cut to the block and its spare bytes), failing with
    /// ECANCELED after the I/O timeout.
    fn recv(&mut self, tag: T, sock: Fd, mut block: Block, at: usize, len: usize) -> OpId {
        let fd = sock.as_raw_fd();
        let at = at.min(block.room());
        let len = len.min(block.room() - at);
        let ptr = block.addr().wrapping_add(at);
        let ud = self.insert_io(tag, Owned::Block(sock, block));
        let r = opcode::ReadFixed::new(types::Fd(fd), ptr, len as u32, 0)
            .build()
            .user_data(ud);
        self.stage(ud, &[r])
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

    /// Sends `buf[from..]`, failing with ECANCELED after the I/O timeout.
    fn send(&mut self, tag: T, sock: Fd, buf: Vec<u8>, from: usize) -> OpId {
        let fd = sock.as_raw_fd();
        let from = from.min(buf.len());
        let (ptr, len) = (buf[from..].as_ptr(), buf.len() - from);
        // Moving the Vec into the table does not move its heap buffer.
        let ud = self.insert_io(tag, Owned::Bytes(sock, buf));
        let s = opcode::Send::new(types::Fd(fd), ptr, len as u32)
            .flags(libc::MSG_NOSIGNAL)
            .build()
            .user_data(ud);
        self.stage(ud, &[s])
    }

    fn send_block(&mut self, tag: T, sock: Fd, mut block: Block, span: Range<usize>) -> OpId {
        let fd = sock.as_raw_fd();
        let from = span.start.min(block.len());
        let len = span.len().min(block.len() - from);
        let ptr = block.addr().wrapping_add(from);
        // Moving the block into the table does not move its memory (the pool's).
        let ud = self.insert_io(tag, Owned::Block(sock, block));
        let s = opcode::Send::new(types::Fd(fd), ptr, len as u32)
            .flags(libc::MSG_NOSIGNAL)
            .build()
            .user_data(ud);
        self.stage(ud, &[s])
    }

    /// Writes `block[from..from + len]` (cut to the block) to `file` at `offset`.
    fn write(
        &mut self,
        tag: T,
        file: Fd,
        mut block: Block,
        span: Range<usize>,
        offset: u64,
        uncached: bool,
    ) -> OpId {
        let fd = file.as_raw_fd();
        let from = span.start.min(block.len());
        let len = span.len().min(block.len() - from);
        let ptr = block.addr().wrapping_add(from);
        let ud = self.insert(tag, Owned::Block(file, block));
        let flags = if uncached { libc::RWF_DONTCACHE } else { 0 };
        let w = opcode::WriteFixed::new(types::Fd(fd), ptr, len as u32, 0)
            .offset(offset)
            .rw_flags(flags)
            .build()
            .user_data(ud);
        self.stage(ud, &[w])
    }

    /// Reads up to a block of `file` at `offset` into `block`.
    fn read_file(&mut self, tag: T, file: Fd, mut block: Block, offset: u64) -> OpId {
        let fd = file.as_raw_fd();
        let (ptr, len) = (block.addr(), block.len());
        let ud = self.insert(tag, Owned::Block(file, block));
        let r = opcode::ReadFixed::new(types::Fd(fd), ptr, len as u32, 0)
            .offset(offset)
            .build()
            .user_data(ud);
        self.stage(ud, &[r])
    }

    /// Writes a range of `file` back and drops it from the page cache (the buffered fallback). The
    /// result is the drop's; a failed writeback makes it ECANCELED.
    fn writeback(&mut self, tag: T, file: Fd, offset: u64, len: usize) -> OpId {
        let fd = file.as_raw_fd();
        let ud = self.insert(tag, Owned::Fd(file));
        let s = opcode::SyncFileRange::new(types::Fd(fd), len as u32)
            .offset(offset)
            .flags(
                libc::SYNC_FILE_RANGE_WAIT_BEFORE
                    | libc::SYNC_FILE_RANGE_WRITE
                    | libc::SYNC_FILE_RANGE_WAIT_AFTER,
            )
            .build()
            .flags(squeue::Flags::IO_LINK)
            .user_data(IGNORE);
        let f = opcode::Fadvise::new(types::Fd(fd), len as libc::off_t, libc::POSIX_FADV_DONTNEED)
            .offset(offset)
            .build()
            .user_data(ud);
        self.stage(ud, &[s, f])
    }

    /// Allocates `len` bytes of `file` from offset 0 (the file grows to `len`).
    fn fallocate(&mut self, tag: T, file: Fd, len: u64) -> OpId {
        let fd = file.as_raw_fd();
        let ud = self.insert(tag, Owned::Fd(file));
        let f = opcode::Fallocate::new(types::Fd(fd), len)
            .build()
            .user_data(ud);
        self.stage(ud, &[f])
    }

    /// Reads up to `buf.len()` bytes from `fd` (an eventfd or a signalfd).
    fn read(&mut self, tag: T, fd: Fd, mut buf: Vec<u8>) -> OpId {
        let raw: RawFd = fd.as_raw_fd();
        let (ptr, len) = (buf.as_mut_ptr(), buf.len());
        let ud = self.insert(tag, Owned::Bytes(fd, buf));
        let r = opcode::Read::new(types::Fd(raw), ptr, len as u32)
            .build()
            .user_data(ud);
        self.stage(ud, &[r])
    }

    /// A timer that completes (with ETIME) after `after`.
    fn timer(&mut self, tag: T, after: Duration) -> OpId {
        let ts = Box::new(timespec(after));
        let ptr: *const types::Timespec = &*ts;
        let ud = self.insert(tag, Owned::Timer(ts));
        let t = opcode::Timeout::new(ptr).build().user_data(ud);
        self.stage(ud, &[t])
    }

    /// Gives up on an operation: the kernel is asked to cancel it, and when its completion arrives
    /// it is dropped here with what it owned. A stale id does nothing.
    fn abandon(&mut self, id: OpId) {
        let Some(e) = self.table.get_mut(id.0) else {
            return;
        };
        if e.abandoned {
            return;
        }
        e.abandoned = true;
        let c = opcode::AsyncCancel::new(id.0).build().user_data(IGNORE);
        self.push(&[c]);
    }

    fn cancel(&mut self, id: OpId) {
        let Some(e) = self.table.get_mut(id.0) else {
            return;
        };
        if e.abandoned || e.timed_out {
            return;
        }
        // As a timeout's cancellation: the completion comes back with ECANCELED (or its result,
        // if it finished first), and the sweep leaves it alone.
        e.timed_out = true;
        let c = opcode::AsyncCancel::new(id.0).build().user_data(IGNORE);
        self.push(&[c]);
    }

    /// Submits what is staged, waits for at least one completion unless some are already waiting,
    /// and moves every completion the engine should see into `out`. An error means the ring failed.
    fn wait(&mut self, out: &mut Vec<Completion<T>>) -> io::Result<()> {
        if self.broken && self.backlog.is_empty() {
            return Err(io::Error::other("the ring failed"));
        }
        self.sweep();
        let want = usize::from(self.backlog.is_empty());
        if !self.broken {
            match self.ring.submit_and_wait(want) {
                Ok(_) => {}
                Err(e)
                    if matches!(
                        e.raw_os_error(),
                        Some(libc::EINTR | libc::EBUSY | libc::EAGAIN)
                    ) => {}
                Err(e) => {
                    self.broken = true;
                    if self.backlog.is_empty() {
                        return Err(e);
                    }
                }
            }
            self.reap();
        }
        while let Some((ud, res)) = self.backlog.pop_front() {
            if ud == IGNORE {
                continue;
            }
            if ud == SWEEP {
                self.sweep_armed = false;
                self.sweep();
                if self.table.any(|e| e.deadline.is_some()) {
                    self.arm_sweep();
                }
                continue;
            }
            let Some(mut e) = self.take(ud) else { continue };
            e.owned.adopt(res);
            match e.tag {
                None => self.worker_rang(),
                Some(tag) if !e.abandoned => out.push(Completion {
                    id: OpId(ud),
                    tag,
                    res,
                    owned: e.owned,
                }),
                Some(_) => {}
            }
        }
        Ok(())
    }

    /// Abandons every operation and waits for all of them (invariant 2). If the ring fails first,
    /// what the table holds is kept for the life of the process rather than freed under the kernel.
    fn shutdown(&mut self) {
        // Everything but the worker's read is abandoned; blocking jobs cannot be, and are waited
        // for (a control file is saved or removed before the process ends). Then the read goes.
        for id in self.table.ids(|e| e.tag.is_some()) {
            self.abandon(OpId(id));
        }
        let mut sink = Vec::new();
        loop {
            let internal = self.worker.as_ref().and_then(|w| w.armed);
            if self.table.live() <= usize::from(internal.is_some()) {
                self.closing = true;
                match internal {
                    Some(ud) if self.table.live() == 1 => self.abandon(OpId(ud)),
                    _ => {}
                }
                if self.table.live() == 0 {
                    break;
                }
            }
            if self.wait(&mut sink).is_err() {
                std::mem::forget(std::mem::take(&mut self.table));
                return;
            }
            sink.clear();
        }
        if let Some(w) = self.worker.as_mut() {
            w.stop();
        }
    }

    fn blocking(&mut self, tag: T, job: Job) -> OpId {
        if self.worker.is_none() {
            match Worker::start() {
                Ok(w) => self.worker = Some(w),
                Err(e) => {
                    // No thread: the job runs here, and completes at the next wait.
                    let _ = e;
                    let ud = self.insert(tag, Owned::Nothing);
                    let res = super::completion_result(job().map(|()| 0));
                    self.backlog.push_back((ud, res));
                    return OpId(ud);
                }
            }
        }
        let ud = self.insert(tag, Owned::Nothing);
        let sent = self.worker.as_ref().is_some_and(|w| w.send(ud, job));
        if !sent {
            self.backlog.push_back((ud, -libc::EIO));
        }
        self.arm_worker();
        OpId(ud)
    }
}

impl<T> Drop for Uring<T> {
    fn drop(&mut self) {
        // If the ring broke, `shutdown` forgot the table: the blocks in it keep the pool's mapping
        // alive for the rest of the process, so the kernel never writes into freed memory.
        self.shutdown();
    }
}

#[cfg(test)]
mod tests {
    use super::super::{Class, Layout};
    use super::*;
    use std::os::fd::OwnedFd;
    use std::os::unix::net::UnixStream;

    fn reactor() -> Uring<u32> {
        let pool = Pool::new(Layout::fit(2, 72 * 1024, 2 << 20).unwrap()).unwrap();
        Uring::new(64, Duration::from_secs(30), Duration::from_secs(30), pool)
            .map_err(|e| format!("{e:?}"))
            .expect("io_uring is needed for these tests")
    }

    fn pair() -> (Fd, UnixStream) {
        let (a, b) = UnixStream::pair().unwrap();
        (Rc::new(OwnedFd::from(a)), b)
    }

    #[test]
    fn dropping_the_reactor_drains_what_is_in_flight_even_in_a_panic() {
        let pool_check = {
            let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                let mut r = reactor();
                let (sock, _peer) = pair();
                let block = r.pool().alloc(Class::Read).unwrap();
                r.recv(1, sock, block, 0, 1000);
                r.timer(2, Duration::from_secs(3600));
                // Submit, so the kernel holds the block, then panic with both in flight.
                let _ = r.ring.submit();
                panic!("on purpose");
            }));
            r.is_err()
        };
        // Had the drop not waited for the cancelled receive, the block's memory could be unmapped
        // under the kernel; reaching here without a hang means both completions were reaped.
        assert!(pool_check);
    }

    #[test]
    fn a_kernel_without_an_opcode_is_refused_naming_it() {
        assert!(opcodes_present(|_| true).is_ok());
        let e = opcodes_present(|code| {
            code != opcode::LinkTimeout::CODE && code != opcode::Fadvise::CODE
        });
        match e {
            Err(SetupError::Unavailable(why)) => {
                assert_eq!(why, "the kernel's io_uring lacks LINK_TIMEOUT, FADVISE")
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_full_submission_queue_is_submitted_not_spun_on() {
        let mut r = reactor();
        // More timers than the queue has entries: pushing must submit and go on.
        for i in 0..200 {
            r.timer(i, Duration::from_millis(1));
        }
        let mut out = Vec::new();
        while out.len() < 200 {
            r.wait(&mut out).unwrap();
        }
        assert!(out.iter().all(|c| c.res == -libc::ETIME));
    }
}
