//! The reactor: the only code that hands memory and descriptors to the kernel. Every operation owns
//! what the kernel may touch — its block, its send buffer, the socket or file it works on, its
//! address or timespec — from submission until its completion is reaped, and gives it back with the
//! completion. An operation the engine no longer wants is abandoned: it is cancelled and its
//! resources are parked in the table until its completion arrives, then dropped (blocks go back to
//! the pool by themselves). Dropping the reactor cancels and drains everything, so success, errors,
//! an emergency stop and a panic all leave nothing in the kernel's hands.
//!
//! The engine names each operation with a tag of its own type `T` and gets it back with the
//! result; a reactor knows nothing of downloads. The engine cannot tell which reactor it runs on:
//! [`Uring`] in production, [`sim::Sim`] in the simulation tests (seeded faults, in-memory
//! servers). No safe function here takes a raw pointer.
#[cfg(test)]
mod contract;
mod epoll;
pub mod pool;
#[cfg(test)]
pub mod sim;
mod table;
mod uring;
mod worker;

pub use epoll::Epoll;
pub use pool::{Block, Class, Layout, Pool};
pub use uring::{SetupError, Uring};

use super::sys::{Datagram, RawAddr};
use std::io;
use std::net::SocketAddr;
use std::ops::Range;
use std::os::fd::AsRawFd;
use std::rc::Rc;
use std::time::{Duration, Instant};

/// A descriptor an operation keeps open until its completion (a socket, a file, an eventfd).
pub type Fd = Rc<dyn AsRawFd>;

/// File work that blocks (writing, syncing and renaming a control file): a reactor runs it off the
/// loop and reports its result as a completion, in the order the jobs were given.
pub type Job = Box<dyn FnOnce() -> io::Result<()> + Send>;

/// What an operation owns while the kernel works on it; it comes back with the completion. Some
/// of it is only held, never read: holding it is the point (the descriptor stays open, the address
/// and timespec stay put).
#[allow(dead_code)]
pub enum Owned {
    Fd(Fd),
    Connect(Fd, Box<RawAddr>),
    Block(Fd, Block),
    Bytes(Fd, Vec<u8>),
    Timer(Box<io_uring::types::Timespec>),
    /// An accept: the listening socket, and once the accept succeeded the connection it made,
    /// owned from the moment the kernel handed it over (an abandoned accept closes it).
    Accept(Fd, Option<std::os::fd::OwnedFd>),
    /// A datagram sent or received on a UDP socket: its bytes, its peer and the message header
    /// the kernel reads.
    Datagram(Fd, Box<Datagram>),
    /// Nothing to hold (the simulated reactor's timers).
    Nothing,
}

impl Owned {
    /// The block of a receive, write or read.
    pub fn into_block(self) -> Option<Block> {
        match self {
            Owned::Block(_, b) => Some(b),
            _ => None,
        }
    }

    /// The connection an accept made.
    pub fn into_accepted(self) -> Option<std::os::fd::OwnedFd> {
        match self {
            Owned::Accept(_, conn) => conn,
            _ => None,
        }
    }

    /// Takes ownership of the descriptor a successful accept returned as its result, so that it
    /// is closed with the operation's resources if nobody takes it.
    pub(crate) fn adopt(&mut self, res: i32) {
        if let (Owned::Accept(_, conn @ None), true) = (self, res >= 0) {
            // SAFETY: the kernel returned a fresh descriptor for this accept; nobody else has it.
            *conn = Some(unsafe { std::os::fd::FromRawFd::from_raw_fd(res) });
        }
    }

    /// The datagram of a `send_to` or `recv_from`.
    // (Datagram sockets are built ahead of their first user, the trackers and the DHT; the
    // contract tests use them on both reactors.)
    #[cfg_attr(not(test), allow(dead_code))]
    pub fn into_datagram(self) -> Option<Box<Datagram>> {
        match self {
            Owned::Datagram(_, d) => Some(d),
            _ => None,
        }
    }

    /// The buffer of a send or a descriptor read.
    pub fn into_bytes(self) -> Option<Vec<u8>> {
        match self {
            Owned::Bytes(_, b) => Some(b),
            _ => None,
        }
    }
}

/// A result as a completion carries it: the count, or a negative errno.
pub fn completion_result(r: io::Result<usize>) -> i32 {
    match r {
        Ok(n) => i32::try_from(n).unwrap_or(i32::MAX),
        Err(e) => -e.raw_os_error().unwrap_or(libc::EIO),
    }
}

/// A finished operation: the engine's tag, the kernel's result (bytes, 0, or a negative errno) and
/// what the operation owned.
pub struct Completion<T> {
    pub id: OpId,
    pub tag: T,
    pub res: i32,
    pub owned: Owned,
}

/// Names an operation in flight, to abandon it. A stale id (its operation completed, its table
/// entry reused) names nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OpId(pub(crate) u64);

/// What the engine asks of a reactor. Every operation completes exactly once (abandoned ones
/// inside the reactor, without being delivered); `shutdown` returns only when none is left.
pub trait Reactor<T> {
    /// The pool blocks come from.
    fn pool(&self) -> &Pool;
    /// The reactor's clock: real time, or the simulation's.
    fn now(&self) -> Instant;
    /// A new TCP socket for `addr`'s family.
    fn socket(&mut self, addr: &SocketAddr) -> io::Result<Fd>;
    /// A listening TCP socket bound to `addr` (the RPC server's).
    fn listen(&mut self, addr: &SocketAddr) -> io::Result<Fd>;
    /// A UDP socket connected to `peer`: `send` sends one datagram, `read` receives one. A
    /// reactor without datagrams (the simulation's) says `Unsupported`.
    fn udp_socket(&mut self, _peer: &SocketAddr) -> io::Result<Fd> {
        Err(io::ErrorKind::Unsupported.into())
    }
    /// A UDP socket bound to `local` (port 0: one the kernel picks), for datagrams to and from
    /// any peer (`send_to`, `recv_from`): trackers and the DHT. A reactor without datagrams (the
    /// simulation's) says `Unsupported`.
    #[cfg_attr(not(test), allow(dead_code))]
    fn udp_bound(&mut self, _local: &SocketAddr) -> io::Result<Fd> {
        Err(io::ErrorKind::Unsupported.into())
    }
    /// Sends one datagram ([`Datagram::to`]) on a bound UDP socket; the result is its length.
    #[cfg_attr(not(test), allow(dead_code))]
    fn send_to(&mut self, tag: T, sock: Fd, datagram: Box<Datagram>) -> OpId;
    /// Receives one datagram into `datagram` ([`Datagram::receiving`]; a longer one is cut to it);
    /// the result is its length, and the completion's datagram says who sent it. No deadline: a
    /// socket that waits for datagrams waits until the engine abandons the receive.
    #[cfg_attr(not(test), allow(dead_code))]
    fn recv_from(&mut self, tag: T, sock: Fd, datagram: Box<Datagram>) -> OpId;
    /// Accepts one connection on `listener`; a result of 0 or more means the completion's
    /// `Owned::Accept` holds the new socket. No deadline.
    fn accept(&mut self, tag: T, listener: Fd) -> OpId;
    /// Connects `sock` to `addr`, failing with ECANCELED after the connect timeout.
    fn connect(&mut self, tag: T, sock: Fd, addr: SocketAddr) -> OpId;
    /// Receives into `block[at..at + len]` (the block's spare bytes included, see
    /// [`pool::WRITE_SPARE`]), failing with ECANCELED after the I/O timeout.
    fn recv(&mut self, tag: T, sock: Fd, block: Block, at: usize, len: usize) -> OpId;
    /// Asks that a receive on `sock` complete only once `bytes` are waiting (or the peer closed).
    /// The caller must know that many bytes are coming.
    fn recv_low_water(&mut self, _sock: &Fd, _bytes: usize) {}
    /// Whether `sock`, a connection with no receive in flight, is open with nothing waiting to be
    /// read. Asked before a kept-alive connection takes another request: bytes after the last
    /// response's end (a server sending past its framing) or a close make it unfit.
    fn quiet(&mut self, sock: &Fd) -> bool;
    /// The local address `sock` is bound to (a listener's port, the address a connection
    /// leaves from).
    fn local_addr(&mut self, sock: &Fd) -> io::Result<SocketAddr> {
        crate::engine::sys::local_addr(sock.as_raw_fd())
    }
    /// Sends `bytes` on `sock` as far as the socket takes them at once, with nothing to complete
    /// and nothing waited for: a connection's last word before it is closed (TLS close_notify).
    /// Only for a connection with no send in flight, so nothing can come between its records.
    fn farewell(&mut self, sock: &Fd, bytes: &[u8]);
    /// Sends `buf[from..]`, failing with ECANCELED after the I/O timeout.
    fn send(&mut self, tag: T, sock: Fd, buf: Vec<u8>, from: usize) -> OpId;
    /// Sends `block[span]` (cut to the block) straight from the pool, failing with ECANCELED
    /// after the I/O timeout: bytes read back from a file (`read_file`) go out to a peer without
    /// a copy, under the pool's budget (a source that sends: seeding). The result is how many
    /// bytes went; the completion gives the block back.
    #[cfg_attr(not(test), allow(dead_code))]
    fn send_block(&mut self, tag: T, sock: Fd, block: Block, span: Range<usize>) -> OpId;
    /// Writes `block[span]` to `file` at `offset`; `uncached` with `RWF_DONTCACHE` (a kernel or
    /// file system without it fails the write with EOPNOTSUPP).
    fn write(
        &mut self,
        tag: T,
        file: Fd,
        block: Block,
        span: Range<usize>,
        offset: u64,
        uncached: bool,
    ) -> OpId;
    /// Reads up to a block of `file` at `offset`.
    fn read_file(&mut self, tag: T, file: Fd, block: Block, offset: u64) -> OpId;
    /// Writes a range of a buffered file back and drops it from the page cache (`len` 0: to the
    /// end of the file).
    fn writeback(&mut self, tag: T, file: Fd, offset: u64, len: usize) -> OpId;
    /// Allocates `len` bytes of `file` from offset 0.
    fn fallocate(&mut self, tag: T, file: Fd, len: u64) -> OpId;
    /// Reads from an eventfd, a signalfd or a socket, with no deadline.
    fn read(&mut self, tag: T, fd: Fd, buf: Vec<u8>) -> OpId;
    /// Completes after `after`.
    fn timer(&mut self, tag: T, after: Duration) -> OpId;
    /// Runs `job` off the loop; jobs run one at a time in the order given, and the result is 0 or
    /// a negative errno. An abandoned job still runs (its result is dropped).
    fn blocking(&mut self, tag: T, job: Job) -> OpId;
    /// Gives up on an operation; its completion is dropped with what it owned.
    fn abandon(&mut self, id: OpId);
    /// Ends a receive or send early: it completes with ECANCELED, giving back what it owned, or,
    /// when it was done already, with what it did. Unlike `abandon`, the completion is delivered
    /// (a stopping connection gets its block back, with the bytes received before). A stale id
    /// does nothing.
    fn cancel(&mut self, id: OpId);
    /// Waits for completions and moves them into `out`; an error ends the run.
    fn wait(&mut self, out: &mut Vec<Completion<T>>) -> io::Result<()>;
    /// Abandons everything and waits until nothing is in flight.
    fn shutdown(&mut self);
    /// Operations submitted and not yet delivered or dropped (what the soak watches stay flat).
    fn in_flight(&self) -> usize;
}
