//! Carrying out an operation when the scheduler says it completes: connects, receives and sends
//! over the in-memory wire, file writes and reads with `pwrite`/`pread`, file jobs, and the kill
//! and power loss that end a run.
use super::*;

impl<T> Sim<T> {
    /// Sends the datagram `owned` holds from its bound socket: into another simulated socket's
    /// inbox, or to a `World::udp_servers` server whose answers go into the sender's; lost at
    /// `datagram_loss`, or when nothing is at its address (UDP says nothing either way).
    fn send_datagram(&mut self, owned: &Owned, faults: &Faults) -> i32 {
        let Owned::Datagram(sock, d) = owned else {
            return -libc::EINVAL;
        };
        let len = d.bytes().len() as i32;
        let (Some(to), Some(from)) = (d.peer(), self.udp.get(&sock.as_raw_fd()).map(|u| u.addr))
        else {
            return -libc::EDESTADDRREQ;
        };
        if faults.datagram_loss > 0 && self.rng3.chance(faults.datagram_loss) {
            self.world.borrow_mut().fire("a datagram lost");
            return len;
        }
        if let Some(peer) = self.udp.values_mut().find(|u| u.addr == to) {
            peer.inbox.push_back((from, d.bytes().to_vec()));
            return len;
        }
        let answers = match self.world.borrow_mut().udp_servers.get_mut(&to) {
            Some(server) => server(from, d.bytes()),
            None => Vec::new(),
        };
        if let Some(me) = self.udp.get_mut(&sock.as_raw_fd()) {
            me.inbox.extend(answers.into_iter().map(|a| (to, a)));
        }
        len
    }

    /// Carries out operation `op` now; returns its result.
    pub(super) fn perform(&mut self, op: &mut Op<T>) -> i32 {
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
            Kind::SendTo => self.send_datagram(&op.owned, &faults),
            Kind::RecvFrom => {
                let fd = fd_of(&op.owned);
                let Owned::Datagram(_, d) = &mut op.owned else {
                    return -libc::EINVAL;
                };
                match self.udp.get_mut(&fd).and_then(|u| u.inbox.pop_front()) {
                    Some((from, bytes)) => d.receive(&bytes, &from) as i32,
                    None => -libc::EAGAIN,
                }
            }
            Kind::Accept if self.backlog.contains_key(&fd_of(&op.owned)) => {
                let listener = fd_of(&op.owned);
                let Some(wire) = self.backlog.get_mut(&listener).and_then(|q| q.pop_front()) else {
                    return -libc::EAGAIN;
                };
                // SAFETY: eventfd(2) with constant arguments; the result is checked.
                let raw = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC) };
                if raw < 0 {
                    return -libc::EMFILE;
                }
                // SAFETY: `raw` was just returned by eventfd and is owned by nothing else.
                let conn = unsafe { std::os::fd::OwnedFd::from_raw_fd(raw) };
                self.wires.insert(raw, wire);
                if let Owned::Accept(_, slot) = &mut op.owned {
                    *slot = Some(conn);
                }
                raw
            }
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
                if let Some(control) = self.data_listeners.remove(&addr) {
                    // A toy server's data connection: it only ever sends.
                    drop(w);
                    self.data_of.insert(control, fd);
                    self.wires.insert(fd, Wire::default());
                    return 0;
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
            Kind::Send { .. } | Kind::SendBlock { .. } => {
                if self.rng.chance(faults.again) {
                    return -libc::EAGAIN;
                }
                let fd = fd_of(&op.owned);
                let rest = match (&op.owned, &op.kind) {
                    (Owned::Bytes(_, buf), Kind::Send { from }) => &buf[(*from).min(buf.len())..],
                    (Owned::Block(_, block), Kind::SendBlock { from, len }) => {
                        &block.as_slice()[*from..*from + *len]
                    }
                    _ => return -libc::EINVAL,
                };
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
    pub(super) fn run_job(&mut self, job: Job, faults: &Faults) -> i32 {
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
    pub(super) fn lose_power(&mut self) {
        if self.undo_writes(|_| true) {
            self.world.borrow_mut().fire("power loss undid writes");
        }
    }

    /// Undoes, newest first, the writes not made durable to the files `which` picks; whether
    /// there were any.
    pub(super) fn undo_writes(&mut self, which: impl Fn(&Volatile) -> bool) -> bool {
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
    pub(super) fn kill(&mut self) {
        let power_loss = {
            let mut w = self.world.borrow_mut();
            w.stop = Some(Stop::Killed);
            w.faults.power_loss
        };
        if power_loss {
            self.lose_power();
        }
    }
}
