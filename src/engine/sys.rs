//! Small safe wrappers over the libc calls the engine needs (sockets, eventfd, signalfd, xattrs),
//! and the few the rest of the program needs (local time, random bytes): with the reactor, the
//! only place `unsafe` is written.
use std::io;
use std::net::SocketAddr;
use std::os::fd::{FromRawFd, OwnedFd};

/// An I/O error as aria2 words its causes: the system's text without Rust's " (os error N)".
pub fn cause(e: &io::Error) -> String {
    let s = e.to_string();
    match s.rfind(" (os error ") {
        Some(i) => s[..i].to_string(),
        None => s,
    }
}

/// The soft `RLIMIT_MEMLOCK`, in bytes (`None` when unlimited).
pub fn memlock_soft_limit() -> Option<u64> {
    let mut r = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes one `rlimit` into memory we own.
    let rc = unsafe { libc::getrlimit(libc::RLIMIT_MEMLOCK, &mut r) };
    if rc != 0 || r.rlim_cur == libc::RLIM_INFINITY {
        None
    } else {
        Some(r.rlim_cur)
    }
}

/// A new blocking socket of `kind` (`SOCK_STREAM`, `SOCK_DGRAM`) for the address's family,
/// close-on-exec.
fn new_socket(addr: &SocketAddr, kind: libc::c_int) -> io::Result<OwnedFd> {
    let domain = if addr.is_ipv4() {
        libc::AF_INET
    } else {
        libc::AF_INET6
    };
    // SAFETY: plain syscall; on success we take sole ownership of the returned descriptor.
    let fd = unsafe { libc::socket(domain, kind | libc::SOCK_CLOEXEC, 0) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `fd` is a fresh descriptor nobody else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// A new blocking TCP socket of the address's family, close-on-exec.
pub fn tcp_socket(addr: &SocketAddr) -> io::Result<OwnedFd> {
    let fd = new_socket(addr, libc::SOCK_STREAM)?;
    // Failure only costs latency, so it is ignored.
    let _ = set_int_option(
        std::os::fd::AsRawFd::as_raw_fd(&fd),
        libc::IPPROTO_TCP,
        libc::TCP_NODELAY,
        1,
    );
    Ok(fd)
}

/// A UDP socket connected to `peer` (a DNS server): its sends go there, and only datagrams from
/// there are received. Connecting a datagram socket sends nothing.
pub fn udp_connected(peer: &SocketAddr) -> io::Result<OwnedFd> {
    let fd = new_socket(peer, libc::SOCK_DGRAM)?;
    let raw = raw_addr(peer);
    // SAFETY: `raw` holds a valid address of `raw.len` bytes for the socket's family.
    let rc = unsafe {
        libc::connect(
            std::os::fd::AsRawFd::as_raw_fd(&fd),
            &raw.storage as *const libc::sockaddr_storage as *const libc::sockaddr,
            raw.len,
        )
    };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(fd)
}

/// Sets an integer socket option.
pub fn set_int_option(
    fd: std::os::fd::RawFd,
    level: libc::c_int,
    name: libc::c_int,
    value: libc::c_int,
) -> io::Result<()> {
    // SAFETY: setsockopt reads one c_int from a local; the descriptor is the caller's.
    let r = unsafe {
        libc::setsockopt(
            fd,
            level,
            name,
            &value as *const _ as *const libc::c_void,
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Reads an integer socket option.
pub fn int_option(
    fd: std::os::fd::RawFd,
    level: libc::c_int,
    name: libc::c_int,
) -> io::Result<libc::c_int> {
    let mut value: libc::c_int = 0;
    let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: getsockopt writes at most `len` bytes into a local c_int; the descriptor is the
    // caller's.
    let r = unsafe {
        libc::getsockopt(
            fd,
            level,
            name,
            &mut value as *mut _ as *mut libc::c_void,
            &mut len,
        )
    };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(value)
}

/// Sets the bytes a socket must hold before it counts as readable (`SO_RCVLOWAT`), at most a
/// quarter of its receive buffer: a mark near the buffer's size would let the sender fill the
/// window and wait while the reader waits for more (loopback's buffers stay small, about 270 KiB).
pub fn set_recv_low_water(fd: std::os::fd::RawFd, bytes: usize) -> io::Result<()> {
    let mut v = libc::c_int::try_from(bytes)
        .unwrap_or(libc::c_int::MAX)
        .max(1);
    if v > 1 {
        let buf = int_option(fd, libc::SOL_SOCKET, libc::SO_RCVBUF)?;
        v = v.min(buf / 4).max(1);
    }
    set_int_option(fd, libc::SOL_SOCKET, libc::SO_RCVLOWAT, v)
}

/// Whether a connected socket is quiet: open, with nothing waiting to be read. A kept-alive
/// connection that is not (bytes sent after its last response's end, or the peer's close) is unfit
/// for another request. One peek that never blocks.
pub fn socket_quiet(fd: std::os::fd::RawFd) -> bool {
    let mut byte = 0u8;
    loop {
        // SAFETY: `byte` is a valid one-byte buffer for the duration of the call, and MSG_PEEK
        // leaves what is queued in place.
        let r = unsafe {
            libc::recv(
                fd,
                std::ptr::addr_of_mut!(byte).cast(),
                1,
                libc::MSG_PEEK | libc::MSG_DONTWAIT,
            )
        };
        if r >= 0 {
            return false;
        }
        match io::Error::last_os_error().raw_os_error() {
            Some(libc::EINTR) => continue,
            Some(e) => return e == libc::EAGAIN || e == libc::EWOULDBLOCK,
            None => return false,
        }
    }
}

/// Sends `bytes` on a connected socket only as far as it takes them at once: never blocks, never
/// raises SIGPIPE. How much went is returned; a full buffer or a closed peer is an error the
/// caller may ignore (a last word before closing, such as TLS's close_notify).
pub fn send_now(fd: std::os::fd::RawFd, bytes: &[u8]) -> io::Result<usize> {
    loop {
        // SAFETY: `bytes` is a valid buffer of its length for the duration of the call.
        let r = unsafe {
            libc::send(
                fd,
                bytes.as_ptr().cast(),
                bytes.len(),
                libc::MSG_DONTWAIT | libc::MSG_NOSIGNAL,
            )
        };
        if r >= 0 {
            return Ok(r as usize);
        }
        let e = io::Error::last_os_error();
        if e.raw_os_error() != Some(libc::EINTR) {
            return Err(e);
        }
    }
}

/// A listening TCP socket bound to `addr`, close-on-exec, with `SO_REUSEADDR` (a restarted daemon
/// binds at once) and, for IPv6, `IPV6_V6ONLY` (the IPv4 socket is bound on its own).
pub fn tcp_listener(addr: &SocketAddr) -> io::Result<OwnedFd> {
    let fd = tcp_socket(addr)?;
    let raw = std::os::fd::AsRawFd::as_raw_fd(&fd);
    let set = |level, name| set_int_option(raw, level, name, 1);
    let _ = set(libc::SOL_SOCKET, libc::SO_REUSEADDR);
    if addr.is_ipv6() {
        let _ = set(libc::IPPROTO_IPV6, libc::IPV6_V6ONLY);
    }
    bind(raw, addr)?;
    // SAFETY: listen takes the descriptor only.
    if unsafe { libc::listen(raw, 1024) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(fd)
}

/// A socket address in the C layout that `connect` takes.
pub struct RawAddr {
    pub storage: libc::sockaddr_storage,
    pub len: libc::socklen_t,
}

/// Converts a std address to the C layout.
pub fn raw_addr(addr: &SocketAddr) -> Box<RawAddr> {
    // SAFETY: an all-zero sockaddr_storage is valid; we then fill the family-specific prefix, which
    // fits because sockaddr_storage is large enough for every address family.
    let mut storage: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
    let len = match addr {
        SocketAddr::V4(a) => {
            let sin = libc::sockaddr_in {
                sin_family: libc::AF_INET as libc::sa_family_t,
                sin_port: a.port().to_be(),
                sin_addr: libc::in_addr {
                    s_addr: u32::from_ne_bytes(a.ip().octets()),
                },
                sin_zero: [0; 8],
            };
            // SAFETY: see above; sockaddr_in is smaller than sockaddr_storage.
            unsafe { std::ptr::write(&mut storage as *mut _ as *mut libc::sockaddr_in, sin) };
            std::mem::size_of::<libc::sockaddr_in>()
        }
        SocketAddr::V6(a) => {
            let sin6 = libc::sockaddr_in6 {
                sin6_family: libc::AF_INET6 as libc::sa_family_t,
                sin6_port: a.port().to_be(),
                sin6_flowinfo: a.flowinfo(),
                sin6_addr: libc::in6_addr {
                    s6_addr: a.ip().octets(),
                },
                sin6_scope_id: a.scope_id(),
            };
            // SAFETY: see above; sockaddr_in6 is smaller than sockaddr_storage.
            unsafe { std::ptr::write(&mut storage as *mut _ as *mut libc::sockaddr_in6, sin6) };
            std::mem::size_of::<libc::sockaddr_in6>()
        }
    };
    Box::new(RawAddr {
        storage,
        len: len as libc::socklen_t,
    })
}

/// A UDP socket bound to `local` (port 0: one the kernel picks), close-on-exec and non-blocking:
/// datagrams to and from any peer (trackers, the DHT), one per operation.
pub fn udp_bound(local: &SocketAddr) -> io::Result<OwnedFd> {
    let fd = new_socket(local, libc::SOCK_DGRAM | libc::SOCK_NONBLOCK)?;
    bind(std::os::fd::AsRawFd::as_raw_fd(&fd), local)?;
    Ok(fd)
}

/// The address a socket is bound to (`getsockname`).
pub fn local_addr(fd: std::os::fd::RawFd) -> io::Result<SocketAddr> {
    // SAFETY: an all-zero sockaddr_storage is valid; getsockname writes at most `len` bytes of it.
    let mut raw = RawAddr {
        storage: unsafe { std::mem::zeroed() },
        len: std::mem::size_of::<libc::sockaddr_storage>() as libc::socklen_t,
    };
    // SAFETY: as above; the descriptor is open for the call.
    let rc = unsafe {
        libc::getsockname(
            fd,
            &mut raw.storage as *mut libc::sockaddr_storage as *mut libc::sockaddr,
            &mut raw.len,
        )
    };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    socket_addr(&raw).ok_or_else(|| io::Error::other("not an IP socket"))
}

/// The IPv4 or IPv6 address in `raw` (as the kernel wrote it); `None` for another family.
pub fn socket_addr(raw: &RawAddr) -> Option<SocketAddr> {
    let len = raw.len as usize;
    match raw.storage.ss_family as libc::c_int {
        libc::AF_INET if len >= std::mem::size_of::<libc::sockaddr_in>() => {
            // SAFETY: the family says the storage holds a sockaddr_in, which it is large enough
            // for and aligned for.
            let sin = unsafe { &*(&raw.storage as *const _ as *const libc::sockaddr_in) };
            let ip = std::net::Ipv4Addr::from(sin.sin_addr.s_addr.to_ne_bytes());
            Some(SocketAddr::from((ip, u16::from_be(sin.sin_port))))
        }
        libc::AF_INET6 if len >= std::mem::size_of::<libc::sockaddr_in6>() => {
            // SAFETY: as above, for a sockaddr_in6.
            let sin6 = unsafe { &*(&raw.storage as *const _ as *const libc::sockaddr_in6) };
            let ip = std::net::Ipv6Addr::from(sin6.sin6_addr.s6_addr);
            Some(SocketAddr::V6(std::net::SocketAddrV6::new(
                ip,
                u16::from_be(sin6.sin6_port),
                sin6.sin6_flowinfo,
                sin6.sin6_scope_id,
            )))
        }
        _ => None,
    }
}

/// One datagram on its way out or in: its bytes, its peer's address (where it goes, or once
/// received where it came from) and the message header `sendmsg`/`recvmsg` read, which points at
/// the other two. Boxed, so those pointers stay right however the box moves; the buffer's bytes
/// live on the heap and do not move either.
pub struct Datagram {
    buf: Vec<u8>,
    peer: RawAddr,
    iov: libc::iovec,
    msg: libc::msghdr,
}

impl Datagram {
    /// `buf` as one datagram to `to`.
    pub fn to(buf: Vec<u8>, to: &SocketAddr) -> Box<Datagram> {
        let peer = *raw_addr(to);
        Datagram::boxed(buf, peer)
    }

    /// Room for one datagram of up to `buf.len()` bytes (a longer one is cut, as recvmsg cuts it).
    pub fn receiving(buf: Vec<u8>) -> Box<Datagram> {
        let peer = RawAddr {
            // SAFETY: an all-zero sockaddr_storage is valid.
            storage: unsafe { std::mem::zeroed() },
            len: std::mem::size_of::<libc::sockaddr_storage>() as libc::socklen_t,
        };
        Datagram::boxed(buf, peer)
    }

    fn boxed(buf: Vec<u8>, peer: RawAddr) -> Box<Datagram> {
        let mut d = Box::new(Datagram {
            buf,
            peer,
            iov: libc::iovec {
                iov_base: std::ptr::null_mut(),
                iov_len: 0,
            },
            // SAFETY: an all-zero msghdr is valid (no name, no buffers, no control data).
            msg: unsafe { std::mem::zeroed() },
        });
        d.iov = libc::iovec {
            iov_base: d.buf.as_mut_ptr().cast(),
            iov_len: d.buf.len(),
        };
        d.msg.msg_name = std::ptr::addr_of_mut!(d.peer.storage).cast();
        d.msg.msg_namelen = d.peer.len;
        d.msg.msg_iov = std::ptr::addr_of_mut!(d.iov);
        d.msg.msg_iovlen = 1;
        d
    }

    /// The message header, for a `sendmsg`/`recvmsg` the caller keeps this box alive for.
    pub fn header(&mut self) -> *mut libc::msghdr {
        std::ptr::addr_of_mut!(self.msg)
    }

    /// The message header for a `recvmsg`: room for any peer's address.
    pub fn header_for_receive(&mut self) -> *mut libc::msghdr {
        self.msg.msg_namelen = std::mem::size_of::<libc::sockaddr_storage>() as libc::socklen_t;
        self.header()
    }

    /// The peer: where it was sent, or where a received datagram came from.
    pub fn peer(&self) -> Option<SocketAddr> {
        socket_addr(&RawAddr {
            storage: self.peer.storage,
            len: self.msg.msg_namelen,
        })
    }

    /// Its bytes (for a received one, the first `n` are the datagram, `n` the completion's
    /// result).
    pub fn into_bytes(self: Box<Datagram>) -> Vec<u8> {
        let Datagram { buf, .. } = *self;
        buf
    }

    /// Its bytes as they are (for one to send, the datagram).
    #[cfg(test)]
    pub fn bytes(&self) -> &[u8] {
        &self.buf
    }

    /// Takes `bytes`, from `from`, as a received datagram (cut to the room, as `recvmsg` cuts
    /// it): what the simulated reactor delivers. Its length.
    #[cfg(test)]
    pub fn receive(&mut self, bytes: &[u8], from: &SocketAddr) -> usize {
        let n = bytes.len().min(self.buf.len());
        self.buf[..n].copy_from_slice(&bytes[..n]);
        self.peer = *raw_addr(from);
        self.msg.msg_namelen = self.peer.len;
        n
    }

    /// `sendmsg` now, without waiting.
    pub fn send_now(&mut self, fd: std::os::fd::RawFd) -> io::Result<usize> {
        // SAFETY: the header points into this datagram, alive for the call; the socket is open.
        let rc =
            unsafe { libc::sendmsg(fd, self.header(), libc::MSG_DONTWAIT | libc::MSG_NOSIGNAL) };
        usize::try_from(rc).map_err(|_| io::Error::last_os_error())
    }

    /// `recvmsg` now, without waiting.
    pub fn recv_now(&mut self, fd: std::os::fd::RawFd) -> io::Result<usize> {
        let msg = self.header_for_receive();
        // SAFETY: as for `send_now`; recvmsg writes into the buffer and the address this datagram
        // owns, within the lengths the header gives.
        let rc = unsafe { libc::recvmsg(fd, msg, libc::MSG_DONTWAIT) };
        usize::try_from(rc).map_err(|_| io::Error::last_os_error())
    }
}

/// `-D`: detaches from the terminal as aria2c does (daemon(3): a new session, the working
/// directory `/`, standard input, output and error on /dev/null). Call before any thread starts.
pub fn daemonize() -> io::Result<()> {
    // SAFETY: daemon(3) forks; the process is still single-threaded here.
    if unsafe { libc::daemon(0, 0) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// A file held in memory only (`memfd_create`): written and read as any file, never on a disk,
/// gone with its last descriptor. `name` is only what /proc shows.
pub fn memory_file(name: &str) -> io::Result<std::fs::File> {
    let name: String = name.chars().filter(|&c| c != '\0').take(200).collect();
    let name = std::ffi::CString::new(format!("ringdl:{name}")).map_err(io::Error::other)?;
    // SAFETY: `name` is a valid NUL-terminated string for the call's duration.
    let fd = unsafe { libc::memfd_create(name.as_ptr(), libc::MFD_CLOEXEC) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `fd` was just returned by memfd_create and is owned by nothing else.
    Ok(unsafe { std::fs::File::from_raw_fd(fd) })
}

/// A non-blocking eventfd, for the resolver thread to wake the ring.
pub fn eventfd() -> io::Result<OwnedFd> {
    // SAFETY: plain syscall; on success we own the descriptor.
    let fd = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: fresh descriptor nobody else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Adds one to an eventfd counter.
pub fn eventfd_signal(fd: std::os::fd::RawFd) {
    let one: u64 = 1;
    // SAFETY: writes 8 bytes from a local; a failure (counter overflow) still leaves it readable.
    unsafe {
        libc::write(fd, &one as *const u64 as *const libc::c_void, 8);
    }
}

const VALIDATOR_XATTR: &[u8] = b"user.ringdl.validator\0";

/// Remembers beside a partial file which version of the remote file it holds (an ETag or
/// Last-Modified value), in an extended attribute; filesystems without them just do not keep it.
pub fn set_validator(fd: std::os::fd::RawFd, value: &str) {
    // SAFETY: fsetxattr reads the NUL-terminated name and `value.len()` bytes of `value`, both
    // borrowed for the call; the descriptor is the caller's open file.
    unsafe {
        libc::fsetxattr(
            fd,
            VALIDATOR_XATTR.as_ptr() as *const libc::c_char,
            value.as_ptr() as *const libc::c_void,
            value.len(),
            0,
        );
    }
}

/// The validator [`set_validator`] left on a partial file, if any.
pub fn validator(fd: std::os::fd::RawFd) -> Option<String> {
    let mut buf = [0u8; 512];
    // SAFETY: fgetxattr writes at most `buf.len()` bytes into the local buffer and returns how many.
    let n = unsafe {
        libc::fgetxattr(
            fd,
            VALIDATOR_XATTR.as_ptr() as *const libc::c_char,
            buf.as_mut_ptr() as *mut libc::c_void,
            buf.len(),
        )
    };
    if n <= 0 {
        return None;
    }
    String::from_utf8(buf[..n as usize].to_vec()).ok()
}

/// The file status flags of an open file (`F_GETFL`).
pub fn status_flags(fd: std::os::fd::RawFd) -> io::Result<i32> {
    // SAFETY: fcntl on a descriptor the caller keeps open for the call.
    let flags = unsafe { libc::fcntl(fd, libc::F_GETFL) };
    match flags {
        f if f < 0 => Err(io::Error::last_os_error()),
        f => Ok(f),
    }
}

/// Local time (`localtime_r`) of `t` seconds since the epoch, or of now.
pub fn local_time(t: Option<libc::time_t>) -> libc::tm {
    // SAFETY: `time` with a null pointer only returns the time; `localtime_r` reads the `time_t`
    // we pass and writes into the `tm` we own. A zeroed `tm` is a valid value of that plain C
    // struct.
    unsafe {
        let t = t.unwrap_or_else(|| libc::time(std::ptr::null_mut()));
        let mut tm: libc::tm = std::mem::zeroed();
        libc::localtime_r(&t, &mut tm);
        tm
    }
}

/// Fills `buf` from the kernel's random source; false when it could not, whole.
pub fn random_bytes(buf: &mut [u8]) -> bool {
    // SAFETY: `buf` is a valid buffer of `buf.len()` bytes for the kernel to fill.
    let n = unsafe { libc::getrandom(buf.as_mut_ptr().cast(), buf.len(), 0) };
    usize::try_from(n).is_ok_and(|n| n == buf.len())
}

/// Drops `O_DIRECT` from an open file (the filesystem refused a direct write).
pub fn clear_direct(fd: std::os::fd::RawFd) -> io::Result<()> {
    // SAFETY: fcntl on a descriptor the caller keeps open for the call.
    unsafe {
        let flags = libc::fcntl(fd, libc::F_GETFL);
        if flags < 0 || libc::fcntl(fd, libc::F_SETFL, flags & !libc::O_DIRECT) < 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

/// Blocks SIGINT and SIGTERM for this thread (and threads it starts later) and returns a signalfd
/// that reports them, so the ring can read signals like any other event.
pub fn signal_fd() -> io::Result<OwnedFd> {
    // SAFETY: sigset operations on a local set; pthread_sigmask and signalfd read it and return
    // status or a fresh descriptor that we then own.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGINT);
        libc::sigaddset(&mut set, libc::SIGTERM);
        if libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut()) != 0 {
            return Err(io::Error::last_os_error());
        }
        let fd = libc::signalfd(-1, &set, libc::SFD_CLOEXEC);
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(OwnedFd::from_raw_fd(fd))
    }
}

/// Size of one `signalfd_siginfo` record.
pub const SIGINFO_SIZE: usize = std::mem::size_of::<libc::signalfd_siginfo>();

/// The addresses of network interface `name` (`getifaddrs`), IPv4 and IPv6; empty when there is
/// no such interface or it has no address.
pub fn interface_addresses(name: &str) -> Vec<std::net::IpAddr> {
    let mut out = Vec::new();
    let mut head: *mut libc::ifaddrs = std::ptr::null_mut();
    // SAFETY: getifaddrs fills `head` with a list it allocates; freed below with freeifaddrs.
    if unsafe { libc::getifaddrs(&mut head) } != 0 {
        return out;
    }
    let mut cur = head;
    while !cur.is_null() {
        // SAFETY: `cur` is a node of the list getifaddrs returned, alive until freeifaddrs.
        let ifa = unsafe { &*cur };
        cur = ifa.ifa_next;
        if ifa.ifa_name.is_null() || ifa.ifa_addr.is_null() {
            continue;
        }
        // SAFETY: ifa_name is a NUL-terminated string owned by the list.
        let ifname = unsafe { std::ffi::CStr::from_ptr(ifa.ifa_name) };
        if ifname.to_bytes() != name.as_bytes() {
            continue;
        }
        // SAFETY: ifa_addr points to a sockaddr whose family says which struct it is.
        let family = i32::from(unsafe { (*ifa.ifa_addr).sa_family });
        if family == libc::AF_INET {
            // SAFETY: an AF_INET address is a sockaddr_in.
            let sin = unsafe { &*(ifa.ifa_addr as *const libc::sockaddr_in) };
            out.push(std::net::IpAddr::V4(std::net::Ipv4Addr::from(
                u32::from_be(sin.sin_addr.s_addr),
            )));
        } else if family == libc::AF_INET6 {
            // SAFETY: an AF_INET6 address is a sockaddr_in6.
            let sin6 = unsafe { &*(ifa.ifa_addr as *const libc::sockaddr_in6) };
            out.push(std::net::IpAddr::V6(std::net::Ipv6Addr::from(
                sin6.sin6_addr.s6_addr,
            )));
        }
    }
    // SAFETY: `head` came from getifaddrs and is freed once.
    unsafe { libc::freeifaddrs(head) };
    out
}

/// Binds `fd` (not yet connected) to `ip`, any port: the connection leaves from that address.
pub fn bind_to(fd: std::os::fd::RawFd, ip: std::net::IpAddr) -> io::Result<()> {
    bind(fd, &SocketAddr::new(ip, 0))
}

/// Binds `fd` to `addr`.
fn bind(fd: std::os::fd::RawFd, addr: &SocketAddr) -> io::Result<()> {
    let a = raw_addr(addr);
    // SAFETY: bind reads the address from the box, borrowed for the call.
    let r = unsafe {
        libc::bind(
            fd,
            &a.storage as *const libc::sockaddr_storage as *const libc::sockaddr,
            a.len,
        )
    };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// `--dscp`: the DSCP value in the IP header of the connection's packets (its TOS / traffic class
/// byte's upper six bits).
pub fn set_dscp(fd: std::os::fd::RawFd, v6: bool, dscp: u8) -> io::Result<()> {
    let tos = libc::c_int::from(dscp) << 2;
    match v6 {
        false => set_int_option(fd, libc::IPPROTO_IP, libc::IP_TOS, tos),
        true => set_int_option(fd, libc::IPPROTO_IPV6, libc::IPV6_TCLASS, tos),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn raw_addr_roundtrip_lengths() {
        let a4: SocketAddr = "127.0.0.1:8080".parse().unwrap();
        let r = raw_addr(&a4);
        assert_eq!(r.len as usize, std::mem::size_of::<libc::sockaddr_in>());
        assert_eq!(r.storage.ss_family as i32, libc::AF_INET);
        let a6: SocketAddr = "[::1]:443".parse().unwrap();
        let r = raw_addr(&a6);
        assert_eq!(r.len as usize, std::mem::size_of::<libc::sockaddr_in6>());
        assert_eq!(r.storage.ss_family as i32, libc::AF_INET6);
    }

    /// What the kernel writes (a datagram's sender) reads back as the address it was made from,
    /// an IPv6 scope and flow label included; a length too short for its family reads as none.
    #[test]
    fn socket_addresses_come_back_from_the_c_layout() {
        let scoped = SocketAddr::V6(std::net::SocketAddrV6::new(
            "fe80::1".parse().unwrap(),
            6881,
            7,
            2,
        ));
        for a in [
            "127.0.0.1:80".parse().unwrap(),
            "[::1]:443".parse().unwrap(),
            scoped,
        ] {
            assert_eq!(socket_addr(&raw_addr(&a)), Some(a));
        }
        let mut short = *raw_addr(&"10.0.0.1:1".parse().unwrap());
        short.len = 4;
        assert_eq!(socket_addr(&short), None);
    }
}
