//! What every reactor promises the engine, checked on each one by the same tests: completions
//! carry what the operation owned, abandoned operations are never delivered and give their
//! resources back, deadlines fail with ECANCELED, timers with ETIME, blocking jobs run in order,
//! and descriptors in error or hung up end their operations instead of leaving them waiting.
use super::{Class, Completion, Fd, Layout, OpId, Pool, Reactor};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener};
use std::os::fd::OwnedFd;
use std::os::unix::net::UnixStream;
use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};

fn pool() -> Pool {
    Pool::new(Layout::fit(2, 72 * 1024, 2 << 20).unwrap()).unwrap()
}

fn pair() -> (Fd, UnixStream) {
    let (a, b) = UnixStream::pair().unwrap();
    (Rc::new(OwnedFd::from(a)), b)
}

/// Waits until `n` completions arrived (or panics after 10 s).
fn collect<R: Reactor<u32>>(r: &mut R, n: usize) -> Vec<Completion<u32>> {
    let start = Instant::now();
    let mut out = Vec::new();
    while out.len() < n {
        assert!(start.elapsed() < Duration::from_secs(10), "no completion");
        r.wait(&mut out).unwrap();
    }
    out
}

fn a_receive_hands_its_block_back_with_the_bytes<R: Reactor<u32>>(mut r: R) {
    let (sock, mut peer) = pair();
    let block = r.pool().alloc(Class::Read).unwrap();
    r.recv(7, sock, block, 10, 100);
    peer.write_all(b"hello").unwrap();
    let c = collect(&mut r, 1).pop().unwrap();
    assert_eq!((c.tag, c.res), (7, 5));
    let block = c.owned.into_block().unwrap();
    assert_eq!(&block.as_slice()[10..15], b"hello");
    assert_eq!(r.pool().outstanding(), (1, 0));
    drop(block);
    assert_eq!(r.pool().outstanding(), (0, 0));
}

fn an_abandoned_receive_is_not_delivered_and_its_block_comes_back<R: Reactor<u32>>(mut r: R) {
    let (sock, _peer) = pair();
    let block = r.pool().alloc(Class::Write).unwrap();
    let id = r.recv(1, sock, block, 0, 4096);
    r.timer(2, Duration::from_millis(20));
    r.abandon(id);
    // A stale id names nothing.
    r.abandon(OpId(id.0 ^ (1 << 40)));
    let out = collect(&mut r, 1);
    assert_eq!(out.iter().map(|c| c.tag).collect::<Vec<_>>(), [2]);
    assert_eq!(r.pool().outstanding(), (0, 0), "the block came back");
}

fn blocking_jobs_run_in_order_and_come_back_as_completions<R: Reactor<u32>>(mut r: R) {
    let log = Arc::new(std::sync::Mutex::new(Vec::new()));
    for i in 0..5u32 {
        let log = log.clone();
        r.blocking(
            i,
            Box::new(move || {
                log.lock().unwrap().push(i);
                if i == 3 {
                    Err(std::io::Error::from_raw_os_error(libc::ENOSPC))
                } else {
                    Ok(())
                }
            }),
        );
    }
    let out = collect(&mut r, 5);
    let got: Vec<(u32, i32)> = out.iter().map(|c| (c.tag, c.res)).collect();
    assert_eq!(got, [(0, 0), (1, 0), (2, 0), (3, -libc::ENOSPC), (4, 0)]);
    assert_eq!(*log.lock().unwrap(), [0, 1, 2, 3, 4]);
}

fn shutdown_waits_for_queued_jobs<R: Reactor<u32>>(r: R) {
    let done = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    {
        let mut r = r;
        for _ in 0..3 {
            let done = done.clone();
            r.blocking(
                0,
                Box::new(move || {
                    std::thread::sleep(Duration::from_millis(20));
                    done.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                    Ok(())
                }),
            );
        }
        r.shutdown();
    }
    assert_eq!(done.load(std::sync::atomic::Ordering::SeqCst), 3);
}

fn timers_complete_in_deadline_order_with_etime<R: Reactor<u32>>(mut r: R) {
    for (tag, ms) in [(1, 60), (2, 10), (3, 30)] {
        r.timer(tag, Duration::from_millis(ms));
    }
    let start = Instant::now();
    let out = collect(&mut r, 3);
    assert_eq!(out.iter().map(|c| c.tag).collect::<Vec<_>>(), [2, 3, 1]);
    assert!(out.iter().all(|c| c.res == -libc::ETIME));
    assert!(start.elapsed() >= Duration::from_millis(60));
}

/// A connect to a listener completes with 0; one to a port where nothing listens with
/// ECONNREFUSED; a send reaches the peer.
fn connects_and_sends<R: Reactor<u32>>(mut r: R) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let sock = r.socket(&addr).unwrap();
    r.connect(1, sock.clone(), addr);
    let c = collect(&mut r, 1).pop().unwrap();
    assert_eq!((c.tag, c.res), (1, 0));
    let (mut peer, _) = listener.accept().unwrap();
    r.send(2, sock, b"GET / HTTP/1.1\r\n\r\n".to_vec(), 4);
    let c = collect(&mut r, 1).pop().unwrap();
    assert_eq!((c.tag, c.res), (2, 14));
    let mut got = [0u8; 14];
    peer.read_exact(&mut got).unwrap();
    assert_eq!(&got, b"/ HTTP/1.1\r\n\r\n");

    let closed: SocketAddr = {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap()
    };
    let sock = r.socket(&closed).unwrap();
    r.connect(3, sock, closed);
    let c = collect(&mut r, 1).pop().unwrap();
    assert_eq!((c.tag, c.res), (3, -libc::ECONNREFUSED));
}

/// A socket that says nothing fails its receive with ECANCELED after the I/O timeout; one whose
/// peer closes ends it with 0; one whose peer resets with ECONNRESET.
fn silence_close_and_reset_end_a_receive<R: Reactor<u32>>(mut r: R) {
    let (sock, _quiet) = pair();
    let block = r.pool().alloc(Class::Read).unwrap();
    let start = Instant::now();
    r.recv(1, sock, block, 0, 100);
    let c = collect(&mut r, 1).pop().unwrap();
    assert_eq!((c.tag, c.res), (1, -libc::ECANCELED));
    assert!(start.elapsed() >= Duration::from_millis(150));

    let (sock, peer) = pair();
    let block = c.owned.into_block().unwrap();
    r.recv(2, sock, block, 0, 100);
    drop(peer);
    let c = collect(&mut r, 1).pop().unwrap();
    assert_eq!((c.tag, c.res), (2, 0));

    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let sock = r.socket(&addr).unwrap();
    r.connect(3, sock.clone(), addr);
    assert_eq!(collect(&mut r, 1)[0].res, 0);
    let (peer, _) = listener.accept().unwrap();
    r.recv(4, sock, c.owned.into_block().unwrap(), 0, 100);
    // SO_LINGER 0: the close sends a reset.
    let linger = libc::linger {
        l_onoff: 1,
        l_linger: 0,
    };
    // SAFETY: setsockopt reads the struct from a local; the socket is open.
    unsafe {
        libc::setsockopt(
            std::os::fd::AsRawFd::as_raw_fd(&peer),
            libc::SOL_SOCKET,
            libc::SO_LINGER,
            &linger as *const libc::linger as *const libc::c_void,
            std::mem::size_of::<libc::linger>() as libc::socklen_t,
        );
    }
    drop(peer);
    let c = collect(&mut r, 1).pop().unwrap();
    assert_eq!((c.tag, c.res), (4, -libc::ECONNRESET));
}

/// A connected socket is quiet until a byte waits on it or its peer closes; asking takes nothing
/// from it.
fn quiet_until_bytes_wait_or_the_peer_closes<R: Reactor<u32>>(mut r: R) {
    let (sock, mut peer) = pair();
    assert!(r.quiet(&sock), "nothing waits");
    peer.write_all(b"x").unwrap();
    assert!(!r.quiet(&sock), "a byte waits");
    assert!(!r.quiet(&sock), "and still waits: asking read nothing");
    let block = r.pool().alloc(Class::Read).unwrap();
    r.recv(1, sock.clone(), block, 0, 100);
    assert_eq!(collect(&mut r, 1)[0].res, 1);
    assert!(r.quiet(&sock), "read, nothing waits");
    drop(peer);
    assert!(!r.quiet(&sock), "the peer closed");
}

/// Writes and reads at offsets, with the block coming back each time.
fn file_writes_and_reads_at_offsets<R: Reactor<u32>>(mut r: R) {
    let path = std::env::temp_dir().join(format!("ringdl-contract-{}", std::process::id()));
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(true)
        .read(true)
        .write(true)
        .open(&path)
        .unwrap();
    let _ = std::fs::remove_file(&path);
    let file: Fd = Rc::new(file);
    let mut block = r.pool().alloc(Class::Write).unwrap();
    block.as_mut_slice()[..4].copy_from_slice(b"abcd");
    r.write(1, file.clone(), block, 1..4, 4096, false);
    let c = collect(&mut r, 1).pop().unwrap();
    assert_eq!((c.tag, c.res), (1, 3));
    r.read_file(2, file.clone(), c.owned.into_block().unwrap(), 4095);
    let c = collect(&mut r, 1).pop().unwrap();
    assert_eq!((c.tag, c.res), (2, 4));
    assert_eq!(&c.owned.into_block().unwrap().as_slice()[..4], b"\0bcd");
    r.fallocate(3, file, 1 << 20);
    assert_eq!(collect(&mut r, 1)[0].res, 0);
}

/// A block read back from a file goes out on a socket straight from the pool (what a source that
/// sends does), cut to the block, and comes back with the completion.
fn a_block_read_from_a_file_is_sent_from_the_pool<R: Reactor<u32>>(mut r: R) {
    let path = std::env::temp_dir().join(format!("ringdl-contract-send-{}", std::process::id()));
    let content: Vec<u8> = (0..20_000u32).map(|i| (i * 7 % 251) as u8).collect();
    std::fs::write(&path, &content).unwrap();
    let file = std::fs::File::open(&path).unwrap();
    let _ = std::fs::remove_file(&path);
    let file: Fd = Rc::new(file);
    let block = r.pool().alloc(Class::Write).unwrap();
    r.read_file(1, file, block, 4096);
    let c = collect(&mut r, 1).pop().unwrap();
    assert_eq!((c.tag, c.res), (1, 20_000 - 4096));
    let block = c.owned.into_block().unwrap();
    let size = block.len();
    let (sock, mut peer) = pair();
    r.send_block(2, sock.clone(), block, 100..9_100);
    let c = collect(&mut r, 1).pop().unwrap();
    assert_eq!((c.tag, c.res), (2, 9_000));
    let mut got = vec![0u8; 9_000];
    peer.read_exact(&mut got).unwrap();
    assert_eq!(got, content[4096 + 100..4096 + 9_100]);
    // A span past the block's end is cut to it.
    let block = c.owned.into_block().unwrap();
    r.send_block(3, sock, block, size - 10..size + 50);
    let c = collect(&mut r, 1).pop().unwrap();
    assert_eq!((c.tag, c.res), (3, 10));
    assert!(c.owned.into_block().is_some());
}

fn accepts_and_reads_a_socket_and_an_abandoned_accept_closes_its_connection<R: Reactor<u32>>(
    mut r: R,
) {
    let listener = r.listen(&"127.0.0.1:0".parse().unwrap()).unwrap();
    let port = {
        let probe = std::mem::ManuallyDrop::new(unsafe {
            // SAFETY: borrows the listener's descriptor to ask its address; never closed here.
            <TcpListener as std::os::fd::FromRawFd>::from_raw_fd(listener.as_raw_fd())
        });
        probe.local_addr().unwrap().port()
    };
    let addr: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
    r.accept(1, listener.clone());
    let mut client = std::net::TcpStream::connect(addr).unwrap();
    let c = collect(&mut r, 1).pop().unwrap();
    assert_eq!(c.tag, 1);
    assert!(c.res >= 0, "accept failed: {}", c.res);
    let conn: Fd = Rc::new(c.owned.into_accepted().expect("the accepted socket"));
    client.write_all(b"ping").unwrap();
    r.read(2, conn.clone(), vec![0; 16]);
    let c = collect(&mut r, 1).pop().unwrap();
    assert_eq!((c.tag, c.res), (2, 4));
    assert_eq!(&c.owned.into_bytes().unwrap()[..4], b"ping");
    drop(conn);
    // The client sees the end of a connection the engine dropped.
    let mut rest = Vec::new();
    client.read_to_end(&mut rest).unwrap();

    // An accept abandoned after its connection may have arrived: once the listener is gone too,
    // the connection is closed (accepted and dropped, or reset from the backlog), not leaked,
    // whichever way the race went.
    let id = r.accept(3, listener);
    let mut late = std::net::TcpStream::connect(addr).unwrap();
    std::thread::sleep(Duration::from_millis(20));
    r.abandon(id);
    r.timer(4, Duration::from_millis(20));
    let out = collect(&mut r, 1);
    assert_eq!(out.iter().map(|c| c.tag).collect::<Vec<_>>(), [4]);
    late.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let mut rest = Vec::new();
    if let Err(e) = late.read_to_end(&mut rest) {
        assert_eq!(
            e.kind(),
            std::io::ErrorKind::ConnectionReset,
            "the abandoned accept's connection is still open"
        );
    }
    assert_eq!(r.in_flight(), 0);
}

/// A cancelled receive is delivered, not dropped: ECANCELED (no bytes had come) with its block
/// back, long before the I/O timeout; a stale id afterwards does nothing.
fn a_cancelled_receive_comes_back_with_its_block<R: Reactor<u32>>(mut r: R) {
    let (sock, _quiet) = pair();
    let mut block = r.pool().alloc(Class::Read).unwrap();
    block.as_mut_slice()[..5].copy_from_slice(b"kept!");
    let start = Instant::now();
    let id = r.recv(1, sock, block, 5, 100);
    r.cancel(id);
    let c = collect(&mut r, 1).pop().unwrap();
    assert_eq!((c.tag, c.res), (1, -libc::ECANCELED));
    assert!(
        start.elapsed() < Duration::from_millis(150),
        "waited for the timeout"
    );
    let block = c.owned.into_block().unwrap();
    assert_eq!(&block.as_slice()[..5], b"kept!");
    r.cancel(id);
    assert_eq!(r.in_flight(), 0);
}

/// Datagrams between two bound UDP sockets on the ring and a third, plain one: each arrives whole
/// with its sender's address, a datagram longer than the room is cut to it, and an abandoned
/// receive is never delivered.
fn datagrams_go_to_and_come_from_any_peer<R: Reactor<u32>>(mut r: R) {
    use crate::engine::sys::{self, Datagram};
    let any: SocketAddr = "127.0.0.1:0".parse().unwrap();
    let a = r.udp_bound(&any).unwrap();
    let b = r.udp_bound(&any).unwrap();
    let a_addr = sys::local_addr(a.as_raw_fd()).unwrap();
    let b_addr = sys::local_addr(b.as_raw_fd()).unwrap();
    assert_ne!(a_addr.port(), 0);
    r.recv_from(1, b.clone(), Datagram::receiving(vec![0; 64]));
    r.send_to(2, a.clone(), Datagram::to(b"ping".to_vec(), &b_addr));
    let mut out = collect(&mut r, 2);
    out.sort_by_key(|c| c.tag);
    let got = out.remove(0);
    assert_eq!((got.tag, got.res), (1, 4));
    let d = got.owned.into_datagram().unwrap();
    assert_eq!(d.peer(), Some(a_addr));
    assert_eq!(&d.into_bytes()[..4], b"ping");
    let sent = out.remove(0);
    assert_eq!((sent.tag, sent.res), (2, 4));
    assert_eq!(sent.owned.into_datagram().unwrap().peer(), Some(b_addr));

    // From a peer the ring knows nothing of; longer than the room.
    let plain = std::net::UdpSocket::bind(any).unwrap();
    r.recv_from(3, b.clone(), Datagram::receiving(vec![0; 8]));
    plain.send_to(b"a longer datagram", b_addr).unwrap();
    let got = collect(&mut r, 1).pop().unwrap();
    assert_eq!((got.tag, got.res), (3, 8));
    let d = got.owned.into_datagram().unwrap();
    assert_eq!(d.peer(), Some(plain.local_addr().unwrap()));
    assert_eq!(d.into_bytes(), b"a longer");
    // And back to it.
    r.send_to(
        4,
        b.clone(),
        Datagram::to(b"pong".to_vec(), &plain.local_addr().unwrap()),
    );
    assert_eq!(collect(&mut r, 1).pop().unwrap().res, 4);
    let mut buf = [0u8; 16];
    plain
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    let (n, from) = plain.recv_from(&mut buf).unwrap();
    assert_eq!((&buf[..n], from), (&b"pong"[..], b_addr));

    // Abandoned while waiting: never delivered, even once a datagram arrives.
    let id = r.recv_from(5, a.clone(), Datagram::receiving(vec![0; 64]));
    r.abandon(id);
    plain.send_to(b"late", a_addr).unwrap();
    r.timer(6, Duration::from_millis(50));
    let out = collect(&mut r, 1);
    assert_eq!(out.iter().map(|c| c.tag).collect::<Vec<_>>(), [6]);
}

macro_rules! contract {
    ($name:ident, $make:expr) => {
        mod $name {
            use super::*;
            #[allow(unused_imports)]
            use std::time::Duration;

            fn make() -> impl Reactor<u32> {
                $make
            }

            #[test]
            fn a_receive_hands_its_block_back_with_the_bytes() {
                super::a_receive_hands_its_block_back_with_the_bytes(make());
            }
            #[test]
            fn an_abandoned_receive_is_not_delivered_and_its_block_comes_back() {
                super::an_abandoned_receive_is_not_delivered_and_its_block_comes_back(make());
            }
            #[test]
            fn blocking_jobs_run_in_order_and_come_back_as_completions() {
                super::blocking_jobs_run_in_order_and_come_back_as_completions(make());
            }
            #[test]
            fn shutdown_waits_for_queued_jobs() {
                super::shutdown_waits_for_queued_jobs(make());
            }
            #[test]
            fn timers_complete_in_deadline_order_with_etime() {
                super::timers_complete_in_deadline_order_with_etime(make());
            }
            #[test]
            fn connects_and_sends() {
                super::connects_and_sends(make());
            }
            #[test]
            fn a_cancelled_receive_comes_back_with_its_block() {
                super::a_cancelled_receive_comes_back_with_its_block(make());
            }
            #[test]
            fn silence_close_and_reset_end_a_receive() {
                super::silence_close_and_reset_end_a_receive(make());
            }
            #[test]
            fn accepts_and_reads_a_socket_and_an_abandoned_accept_closes_its_connection() {
                super::accepts_and_reads_a_socket_and_an_abandoned_accept_closes_its_connection(
                    make(),
                );
            }
            #[test]
            fn quiet_until_bytes_wait_or_the_peer_closes() {
                super::quiet_until_bytes_wait_or_the_peer_closes(make());
            }
            #[test]
            fn file_writes_and_reads_at_offsets() {
                super::file_writes_and_reads_at_offsets(make());
            }
            #[test]
            fn datagrams_go_to_and_come_from_any_peer() {
                super::datagrams_go_to_and_come_from_any_peer(make());
            }
            #[test]
            fn a_block_read_from_a_file_is_sent_from_the_pool() {
                super::a_block_read_from_a_file_is_sent_from_the_pool(make());
            }
        }
    };
}

contract!(
    uring,
    super::super::Uring::new(
        64,
        Duration::from_millis(150),
        Duration::from_secs(5),
        pool()
    )
    .map_err(|e| format!("{e:?}"))
    .expect("io_uring is needed for these tests")
);
contract!(
    epoll,
    super::super::Epoll::new(Duration::from_millis(150), Duration::from_secs(5), pool())
        .expect("epoll")
);
