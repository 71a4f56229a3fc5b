//! The ring itself: setup with a real probe, buffer registration, and one method per operation the
//! engine issues. Every SQE that points at memory is pushed here, so the `unsafe` of handing memory to
//! the kernel is in one place; the callers keep that memory in the in-flight table until the CQE.
use io_uring::{opcode, squeue, types, IoUring, Probe};
use std::io;
use std::os::fd::RawFd;
use std::time::Duration;

/// user_data of completions the engine ignores (linked timeouts, cancel requests).
pub const IGNORE: u64 = u64::MAX;

/// Opcodes the data path needs; a kernel without any of them gets the portable message.
const NEEDED: &[(u8, &str)] = &[
    (opcode::ReadFixed::CODE, "READ_FIXED"),
    (opcode::WriteFixed::CODE, "WRITE_FIXED"),
    (opcode::Connect::CODE, "CONNECT"),
    (opcode::Send::CODE, "SEND"),
    (opcode::Read::CODE, "READ"),
    (opcode::Timeout::CODE, "TIMEOUT"),
    (opcode::LinkTimeout::CODE, "LINK_TIMEOUT"),
    (opcode::AsyncCancel::CODE, "ASYNC_CANCEL"),
    (opcode::SyncFileRange::CODE, "SYNC_FILE_RANGE"),
    (opcode::Fadvise::CODE, "FADVISE"),
];

/// A set-up ring with the pool registered.
pub struct Ring {
    ring: IoUring,
    /// Timespecs the kernel reads at submission; boxed so their addresses stay put.
    timespecs: Box<[types::Timespec; 3]>,
}

/// Which stored timespec a timeout uses.
#[derive(Debug, Clone, Copy)]
pub enum Clock {
    Io = 0,
    Connect = 1,
    Tick = 2,
}

fn timespec(d: Duration) -> types::Timespec {
    types::Timespec::new()
        .sec(d.as_secs())
        .nsec(d.subsec_nanos())
}

impl Ring {
    /// Creates the ring and checks, by running a NOP through it, that io_uring really works here.
    pub fn new(entries: u32, io: Duration, connect: Duration, tick: Duration) -> io::Result<Ring> {
        let ring = IoUring::builder()
            .setup_single_issuer()
            .setup_defer_taskrun()
            .setup_coop_taskrun()
            .build(entries)
            .or_else(|_| IoUring::new(entries))?;
        let mut probe = Probe::new();
        ring.submitter().register_probe(&mut probe)?;
        let missing: Vec<&str> = NEEDED
            .iter()
            .filter(|(code, _)| !probe.is_supported(*code))
            .map(|(_, name)| *name)
            .collect();
        if !missing.is_empty() {
            return Err(io::Error::other(format!(
                "the kernel's io_uring lacks {}",
                missing.join(", ")
            )));
        }
        let mut r = Ring {
            ring,
            timespecs: Box::new([timespec(io), timespec(connect), timespec(tick)]),
        };
        r.push(&[opcode::Nop::new().build().user_data(IGNORE)]);
        r.ring.submit_and_wait(1)?;
        let ok = r.ring.completion().next().map(|c| c.result());
        if ok != Some(0) {
            return Err(io::Error::other("a test operation did not complete"));
        }
        Ok(r)
    }

    /// Registers the pool as fixed buffer 0.
    pub fn register(&self, iov: libc::iovec) -> io::Result<()> {
        // SAFETY: the iovec describes the pool's mapping, which outlives the ring (the engine drops
        // the ring first) and is never unmapped while registered.
        unsafe { self.ring.submitter().register_buffers(&[iov]) }
    }

    /// Pushes entries as one unit (a linked pair must not be split by a submission).
    fn push(&mut self, entries: &[squeue::Entry]) {
        loop {
            let mut sq = self.ring.submission();
            if sq.capacity() - sq.len() >= entries.len() {
                // SAFETY: every entry's memory (buffers, addresses, timespecs) is owned by the
                // in-flight table or by `self.timespecs` until its completion, as each caller documents.
                unsafe {
                    let _ = sq.push_multiple(entries);
                }
                return;
            }
            drop(sq);
            // The queue is full: hand what is there to the kernel and try again.
            let _ = self.ring.submit();
        }
    }

    fn timeout_entry(&self, clock: Clock) -> squeue::Entry {
        opcode::LinkTimeout::new(&self.timespecs[clock as usize])
            .build()
            .user_data(IGNORE)
    }

    /// Receive into `buf` (inside the registered pool) with a linked timeout.
    pub fn recv_fixed(&mut self, fd: RawFd, buf: *mut u8, len: usize, ud: u64) {
        let read = opcode::ReadFixed::new(types::Fd(fd), buf, len as u32, 0)
            .build()
            .flags(squeue::Flags::IO_LINK)
            .user_data(ud);
        let t = self.timeout_entry(Clock::Io);
        self.push(&[read, t]);
    }

    /// Send `len` bytes at `buf` (owned by the in-flight table) with a linked timeout.
    pub fn send(&mut self, fd: RawFd, buf: *const u8, len: usize, ud: u64) {
        let send = opcode::Send::new(types::Fd(fd), buf, len as u32)
            .flags(libc::MSG_NOSIGNAL)
            .build()
            .flags(squeue::Flags::IO_LINK)
            .user_data(ud);
        let t = self.timeout_entry(Clock::Io);
        self.push(&[send, t]);
    }

    /// Connect to `addr` (owned by the in-flight table) with the connect timeout.
    pub fn connect(
        &mut self,
        fd: RawFd,
        addr: *const libc::sockaddr,
        len: libc::socklen_t,
        ud: u64,
    ) {
        let c = opcode::Connect::new(types::Fd(fd), addr, len)
            .build()
            .flags(squeue::Flags::IO_LINK)
            .user_data(ud);
        let t = self.timeout_entry(Clock::Connect);
        self.push(&[c, t]);
    }

    /// Write `len` bytes of the registered pool at `buf` to `fd` at `offset`.
    pub fn write_fixed(&mut self, fd: RawFd, buf: *const u8, len: usize, offset: u64, ud: u64) {
        let w = opcode::WriteFixed::new(types::Fd(fd), buf, len as u32, 0)
            .offset(offset)
            .build()
            .user_data(ud);
        self.push(&[w]);
    }

    /// Read `len` bytes of `fd` at `offset` into `buf` inside the registered pool.
    pub fn read_file_fixed(&mut self, fd: RawFd, buf: *mut u8, len: usize, offset: u64, ud: u64) {
        let r = opcode::ReadFixed::new(types::Fd(fd), buf, len as u32, 0)
            .offset(offset)
            .build()
            .user_data(ud);
        self.push(&[r]);
    }

    /// Start writeback of a range and then drop it from the page cache (buffered fallback only).
    pub fn writeback_and_drop(&mut self, fd: RawFd, offset: u64, len: usize, ud: u64) {
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
        self.push(&[s, f]);
    }

    /// Read up to `len` bytes from `fd` (an eventfd or signalfd) into `buf`, which the engine owns
    /// until the CQE.
    pub fn read(&mut self, fd: RawFd, buf: *mut u8, len: usize, ud: u64) {
        let r = opcode::Read::new(types::Fd(fd), buf, len as u32)
            .build()
            .user_data(ud);
        self.push(&[r]);
    }

    /// A one-off timer firing after `ts` (owned by the in-flight table until the CQE).
    pub fn timer(&mut self, ts: *const types::Timespec, ud: u64) {
        let t = opcode::Timeout::new(ts).build().user_data(ud);
        self.push(&[t]);
    }

    /// Allocates `len` bytes of `fd` from offset 0 (mode 0: the file grows to `len`).
    pub fn fallocate(&mut self, fd: RawFd, len: u64, ud: u64) {
        let f = opcode::Fallocate::new(types::Fd(fd), len)
            .build()
            .user_data(ud);
        self.push(&[f]);
    }

    /// The UI tick.
    pub fn tick(&mut self, ud: u64) {
        let t = opcode::Timeout::new(&self.timespecs[Clock::Tick as usize])
            .build()
            .user_data(ud);
        self.push(&[t]);
    }

    /// Asks the kernel to cancel the operation with `target` user_data; its CQE still arrives.
    pub fn cancel(&mut self, target: u64) {
        let c = opcode::AsyncCancel::new(target).build().user_data(IGNORE);
        self.push(&[c]);
    }

    /// Submits everything staged and waits for at least one completion. An interrupted wait, or a
    /// kernel that wants its completions reaped first (EBUSY/EAGAIN), returns so the caller harvests.
    pub fn submit_and_wait(&mut self) -> io::Result<()> {
        match self.ring.submit_and_wait(1) {
            Ok(_) => Ok(()),
            Err(e)
                if matches!(
                    e.raw_os_error(),
                    Some(libc::EINTR | libc::EBUSY | libc::EAGAIN)
                ) =>
            {
                Ok(())
            }
            Err(e) => Err(e),
        }
    }

    /// Moves every ready completion into `out` as (user_data, result).
    pub fn harvest(&mut self, out: &mut Vec<(u64, i32)>) {
        out.extend(self.ring.completion().map(|c| (c.user_data(), c.result())));
    }
}
