//! `netdelay --queue N --delay-us D`: binds NFQUEUE queue N (in the network namespace it runs in)
//! and accepts each queued packet D microseconds after it arrived, in arrival order. With an
//! `iptables ... -j NFQUEUE --queue-num N` rule on a namespace's OUTPUT chain this is a fixed
//! one-way delay, the part of `tc netem delay` that bench/link.sh needs where the kernel has no
//! sch_netem. Only packet metadata crosses to user space (copy mode META); packets stay whole
//! (GSO) and a verdict accepts every packet up to an id, so the cost is one message per packet
//! in and one per batch out. Runs until SIGTERM or SIGINT; exits 1 with one line on any error.

use std::collections::VecDeque;
use std::io;
use std::time::{Duration, Instant};

const NETLINK_NETFILTER: i32 = 12;
const NFNL_SUBSYS_QUEUE: u16 = 3;
const NFQNL_MSG_PACKET: u16 = 0;
const NFQNL_MSG_CONFIG: u16 = 2;
const NFQNL_MSG_VERDICT_BATCH: u16 = 3;
const NFQA_PACKET_HDR: u16 = 1;
const NFQA_VERDICT_HDR: u16 = 2;
const NFQA_CFG_CMD: u16 = 1;
const NFQA_CFG_PARAMS: u16 = 2;
const NFQA_CFG_QUEUE_MAXLEN: u16 = 3;
const NFQA_CFG_MASK: u16 = 4;
const NFQA_CFG_FLAGS: u16 = 5;
const NFQNL_CFG_CMD_BIND: u8 = 1;
const NFQNL_COPY_META: u8 = 1;
const NFQA_CFG_F_GSO: u32 = 4;
const NF_ACCEPT: u32 = 1;
const NLMSG_ERROR: u16 = 2;
const NLM_F_REQUEST: u16 = 1;
const NLM_F_ACK: u16 = 4;

static STOP: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

extern "C" fn on_signal(_: libc::c_int) {
    STOP.store(true, std::sync::atomic::Ordering::Relaxed);
}

fn main() {
    if let Err(e) = run() {
        eprintln!("netdelay: {e}");
        std::process::exit(1);
    }
}

fn run() -> Result<(), String> {
    let mut queue: u16 = 0;
    let mut delay_us: u64 = 0;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut val = |name: &str| args.next().ok_or(format!("{name} needs a value"));
        match a.as_str() {
            "--queue" => {
                queue = val("--queue")?
                    .parse()
                    .map_err(|_| "--queue wants 0..65535")?
            }
            "--delay-us" => {
                delay_us = val("--delay-us")?
                    .parse()
                    .map_err(|_| "--delay-us wants a number")?
            }
            _ => {
                return Err(format!(
                    "unknown argument {a} (usage: netdelay --queue N --delay-us D)"
                ))
            }
        }
    }
    let delay = Duration::from_micros(delay_us);
    // SAFETY: installs an async-signal-safe handler that only stores to an atomic.
    unsafe {
        let mut sa: libc::sigaction = std::mem::zeroed();
        sa.sa_sigaction = on_signal as extern "C" fn(libc::c_int) as usize;
        libc::sigaction(libc::SIGTERM, &sa, std::ptr::null_mut());
        libc::sigaction(libc::SIGINT, &sa, std::ptr::null_mut());
    }
    let sock = Netlink::open().map_err(|e| format!("netlink socket: {e}"))?;
    let mut seq = 0u32;
    // Bind the queue (the family is not used by current kernels' queue binding).
    let cmd = [NFQNL_CFG_CMD_BIND, 0, 0, libc::AF_INET as u8];
    sock.request(queue, NFQNL_MSG_CONFIG, &[(NFQA_CFG_CMD, &cmd)], &mut seq)
        .map_err(|e| format!("bind queue {queue}: {e} (is another program bound to it?)"))?;
    let mut params = [0u8; 5];
    params[4] = NFQNL_COPY_META;
    let maxlen = 65536u32.to_be_bytes();
    let flags = NFQA_CFG_F_GSO.to_be_bytes();
    sock.request(
        queue,
        NFQNL_MSG_CONFIG,
        &[
            (NFQA_CFG_PARAMS, &params),
            (NFQA_CFG_QUEUE_MAXLEN, &maxlen),
            (NFQA_CFG_MASK, &flags),
            (NFQA_CFG_FLAGS, &flags),
        ],
        &mut seq,
    )
    .map_err(|e| format!("configure queue {queue}: {e}"))?;

    let mut held: VecDeque<(u32, Instant)> = VecDeque::new();
    let mut buf = vec![0u8; 1 << 16];
    while !STOP.load(std::sync::atomic::Ordering::Relaxed) {
        // Accept everything that has waited long enough, with one verdict for the newest of it.
        let now = Instant::now();
        let mut last = None;
        while let Some(&(id, at)) = held.front() {
            if now.duration_since(at) < delay {
                break;
            }
            last = Some(id);
            held.pop_front();
        }
        if let Some(id) = last {
            let mut v = [0u8; 8];
            v[..4].copy_from_slice(&NF_ACCEPT.to_be_bytes());
            v[4..].copy_from_slice(&id.to_be_bytes());
            sock.send(
                queue,
                NFQNL_MSG_VERDICT_BATCH,
                0,
                &[(NFQA_VERDICT_HDR, &v)],
                &mut seq,
            )
            .map_err(|e| format!("verdict: {e}"))?;
        }
        let wait_ms = match held.front() {
            Some(&(_, at)) => {
                let due = (at + delay).saturating_duration_since(Instant::now());
                // poll's unit is a millisecond: round up, and never sleep past a due packet by
                // more than that.
                due.as_micros().div_ceil(1000) as i32
            }
            None => 100,
        };
        let mut pfd = libc::pollfd {
            fd: sock.fd,
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one valid pollfd.
        let r = unsafe { libc::poll(&mut pfd, 1, wait_ms) };
        if r < 0 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(format!("poll: {e}"));
        }
        if r == 0 {
            continue;
        }
        loop {
            let n = match sock.recv(&mut buf) {
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.raw_os_error() == Some(libc::ENOBUFS) => continue,
                Err(e) => return Err(format!("receive: {e}")),
            };
            let at = Instant::now();
            for (ty, payload) in messages(&buf[..n]) {
                if ty == NLMSG_ERROR {
                    let code = payload
                        .get(..4)
                        .map(|b| i32::from_ne_bytes([b[0], b[1], b[2], b[3]]));
                    if let Some(c) = code.filter(|c| *c != 0) {
                        return Err(format!("kernel: {}", io::Error::from_raw_os_error(-c)));
                    }
                    continue;
                }
                if ty != (NFNL_SUBSYS_QUEUE << 8 | NFQNL_MSG_PACKET) {
                    continue;
                }
                // nfgenmsg (4 bytes), then attributes.
                if let Some(hdr) =
                    attrs(payload.get(4..).unwrap_or(&[])).find(|a| a.0 == NFQA_PACKET_HDR)
                {
                    if let Some(b) = hdr.1.get(..4) {
                        held.push_back((u32::from_be_bytes([b[0], b[1], b[2], b[3]]), at));
                    }
                }
            }
        }
    }
    // Let go of what is held: the namespace and its rule may outlive this process.
    if let Some(&(id, _)) = held.back() {
        let mut v = [0u8; 8];
        v[..4].copy_from_slice(&NF_ACCEPT.to_be_bytes());
        v[4..].copy_from_slice(&id.to_be_bytes());
        let _ = sock.send(
            queue,
            NFQNL_MSG_VERDICT_BATCH,
            0,
            &[(NFQA_VERDICT_HDR, &v)],
            &mut seq,
        );
    }
    Ok(())
}

struct Netlink {
    fd: i32,
}

impl Netlink {
    fn open() -> io::Result<Netlink> {
        // SAFETY: plain socket calls on a descriptor this function owns.
        unsafe {
            let fd = libc::socket(
                libc::AF_NETLINK,
                libc::SOCK_RAW | libc::SOCK_CLOEXEC | libc::SOCK_NONBLOCK,
                NETLINK_NETFILTER,
            );
            if fd < 0 {
                return Err(io::Error::last_os_error());
            }
            let s = Netlink { fd };
            let mut addr: libc::sockaddr_nl = std::mem::zeroed();
            addr.nl_family = libc::AF_NETLINK as u16;
            if libc::bind(
                fd,
                &addr as *const _ as *const libc::sockaddr,
                std::mem::size_of::<libc::sockaddr_nl>() as u32,
            ) < 0
            {
                return Err(io::Error::last_os_error());
            }
            // A deep receive buffer: packets arrive in bursts of a window.
            let size: libc::c_int = 8 << 20;
            libc::setsockopt(
                fd,
                libc::SOL_SOCKET,
                libc::SO_RCVBUFFORCE,
                &size as *const _ as *const libc::c_void,
                4,
            );
            let one: libc::c_int = 1;
            libc::setsockopt(
                fd,
                libc::SOL_NETLINK,
                libc::NETLINK_NO_ENOBUFS,
                &one as *const _ as *const libc::c_void,
                4,
            );
            Ok(s)
        }
    }

    fn send(
        &self,
        queue: u16,
        msg: u16,
        flags: u16,
        attrs: &[(u16, &[u8])],
        seq: &mut u32,
    ) -> io::Result<()> {
        *seq += 1;
        let mut m = Vec::with_capacity(64);
        m.extend_from_slice(&0u32.to_ne_bytes()); // length, below
        m.extend_from_slice(&(NFNL_SUBSYS_QUEUE << 8 | msg).to_ne_bytes());
        m.extend_from_slice(&(NLM_F_REQUEST | flags).to_ne_bytes());
        m.extend_from_slice(&seq.to_ne_bytes());
        m.extend_from_slice(&0u32.to_ne_bytes());
        m.extend_from_slice(&[libc::AF_UNSPEC as u8, 0]); // nfgenmsg: family, version 0
        m.extend_from_slice(&queue.to_be_bytes());
        for (ty, data) in attrs {
            m.extend_from_slice(&((4 + data.len()) as u16).to_ne_bytes());
            m.extend_from_slice(&ty.to_ne_bytes());
            m.extend_from_slice(data);
            while m.len() % 4 != 0 {
                m.push(0);
            }
        }
        let len = (m.len() as u32).to_ne_bytes();
        m[..4].copy_from_slice(&len);
        let mut addr: libc::sockaddr_nl = unsafe { std::mem::zeroed() };
        addr.nl_family = libc::AF_NETLINK as u16;
        // SAFETY: the buffer and address outlive the call.
        let r = unsafe {
            libc::sendto(
                self.fd,
                m.as_ptr() as *const libc::c_void,
                m.len(),
                0,
                &addr as *const _ as *const libc::sockaddr,
                std::mem::size_of::<libc::sockaddr_nl>() as u32,
            )
        };
        if r < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    /// Sends a configuration message and waits for its acknowledgement.
    fn request(
        &self,
        queue: u16,
        msg: u16,
        attrs: &[(u16, &[u8])],
        seq: &mut u32,
    ) -> io::Result<()> {
        self.send(queue, msg, NLM_F_ACK, attrs, seq)?;
        let mut buf = vec![0u8; 8192];
        let deadline = Instant::now() + Duration::from_secs(2);
        while Instant::now() < deadline {
            match self.recv(&mut buf) {
                Ok(n) => {
                    for (ty, payload) in messages(&buf[..n]) {
                        if ty == NLMSG_ERROR {
                            let c = payload
                                .get(..4)
                                .map(|b| i32::from_ne_bytes([b[0], b[1], b[2], b[3]]))
                                .unwrap_or(0);
                            return if c == 0 {
                                Ok(())
                            } else {
                                Err(io::Error::from_raw_os_error(-c))
                            };
                        }
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    std::thread::sleep(Duration::from_millis(1))
                }
                Err(e) => return Err(e),
            }
        }
        Err(io::Error::new(
            io::ErrorKind::TimedOut,
            "no answer from the kernel",
        ))
    }

    fn recv(&self, buf: &mut [u8]) -> io::Result<usize> {
        // SAFETY: the buffer is valid for its length.
        let r = unsafe { libc::recv(self.fd, buf.as_mut_ptr() as *mut libc::c_void, buf.len(), 0) };
        if r < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(r as usize)
    }
}

impl Drop for Netlink {
    fn drop(&mut self) {
        // SAFETY: the descriptor is this value's.
        unsafe { libc::close(self.fd) };
    }
}

/// The netlink messages in one datagram: (type, payload after the 16-byte header).
fn messages(mut b: &[u8]) -> impl Iterator<Item = (u16, &[u8])> {
    std::iter::from_fn(move || {
        if b.len() < 16 {
            return None;
        }
        let len = u32::from_ne_bytes([b[0], b[1], b[2], b[3]]) as usize;
        let ty = u16::from_ne_bytes([b[4], b[5]]);
        if len < 16 || len > b.len() {
            return None;
        }
        let payload = &b[16..len];
        b = b.get((len + 3) & !3..).unwrap_or(&[]);
        Some((ty, payload))
    })
}

/// The attributes of a message: (type without flag bits, value).
fn attrs(mut b: &[u8]) -> impl Iterator<Item = (u16, &[u8])> {
    std::iter::from_fn(move || {
        if b.len() < 4 {
            return None;
        }
        let len = u16::from_ne_bytes([b[0], b[1]]) as usize;
        let ty = u16::from_ne_bytes([b[2], b[3]]) & 0x3fff;
        if len < 4 || len > b.len() {
            return None;
        }
        let v = &b[4..len];
        b = b.get((len + 3) & !3..).unwrap_or(&[]);
        Some((ty, v))
    })
}
