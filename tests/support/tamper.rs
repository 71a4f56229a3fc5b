//! A man in the middle for TLS: a loopback TCP proxy in front of a real TLS server that passes the
//! client's bytes on untouched and reads the server's stream as TLS records (their 5-byte headers
//! are in the clear), so it can flip a bit in one, drop, repeat, swap, cut or forge one, or hand
//! the client everything in 1-byte writes. Nothing it does can be authenticated: what the tests
//! check is that the client notices every time, and that no byte of the file is trusted wrongly.

use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::Duration;

/// What is done to the server's stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tamper {
    /// One bit of the record's body flipped.
    Flip,
    /// The record left out.
    Drop,
    /// The record sent twice.
    Duplicate,
    /// The record sent after the one that follows it.
    Swap,
    /// Half the record, then the connection closed both ways (a FIN, no close_notify).
    Truncate,
    /// A made-up application-data record sent before it.
    Inject,
    /// Its header's version bytes rewritten (3,3 to 3,1): part of what the tag covers on both
    /// versions (TLS 1.2's additional data, TLS 1.3's header).
    Version,
    /// No change to any byte: everything from the start of the connection (the handshake
    /// included) goes out in 1-byte writes, up to 20,000 bytes, then as it comes.
    Trickle,
}

/// How often the tamper is done.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Times {
    /// Once in the proxy's life: retries go through clean.
    Once,
    /// On every connection that gets that far.
    Always,
}

/// A proxy serving until it is dropped.
pub struct TamperProxy {
    port: u16,
    done: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
}

/// Where in the server's stream of one connection the tamper falls: the first record that
/// begins at or after this many bytes (well past any handshake).
pub const AFTER: usize = 150_000;

impl TamperProxy {
    pub fn start(upstream: SocketAddr, tamper: Tamper, times: Times) -> TamperProxy {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind the tampering proxy");
        let port = listener.local_addr().expect("its address").port();
        let done = Arc::new(AtomicU64::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let (d, s) = (done.clone(), stop.clone());
        thread::spawn(move || {
            for client in listener.incoming() {
                if s.load(Ordering::SeqCst) {
                    return;
                }
                let Ok(client) = client else { continue };
                let Ok(server) = TcpStream::connect(upstream) else {
                    continue;
                };
                let d = d.clone();
                thread::spawn(move || relay(client, server, tamper, times, &d));
            }
        });
        TamperProxy { port, done, stop }
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// How many times the tamper was done.
    pub fn tampered(&self) -> u64 {
        self.done.load(Ordering::SeqCst)
    }
}

impl Drop for TamperProxy {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wake the accept loop so it sees the flag.
        let _ = TcpStream::connect(("127.0.0.1", self.port));
    }
}

fn relay(client: TcpStream, server: TcpStream, tamper: Tamper, times: Times, done: &AtomicU64) {
    let _ = client.set_nodelay(true);
    let _ = server.set_nodelay(true);
    for s in [&client, &server] {
        let _ = s.set_read_timeout(Some(Duration::from_secs(30)));
    }
    // The client's bytes go through as they are.
    let (mut c_in, mut s_out) = match (client.try_clone(), server.try_clone()) {
        (Ok(c), Ok(s)) => (c, s),
        _ => return,
    };
    let up = thread::spawn(move || {
        let mut buf = [0u8; 16384];
        loop {
            match c_in.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    if s_out.write_all(&buf[..n]).is_err() {
                        break;
                    }
                }
            }
        }
        let _ = s_out.shutdown(Shutdown::Write);
    });
    down(&server, &client, tamper, times, done);
    let _ = up.join();
}

/// The server's stream, record by record, to the client.
fn down(server: &TcpStream, client: &TcpStream, tamper: Tamper, times: Times, done: &AtomicU64) {
    let (mut from, mut to) = (server, client);
    let mut held: Vec<u8> = Vec::new();
    // Bytes of the stream passed on (or dealt with) so far.
    let mut offset = 0usize;
    // A record kept back to go after the next (Swap).
    let mut swapped: Option<Vec<u8>> = None;
    let mut acted = false;
    let mut buf = [0u8; 16384];
    loop {
        let n = match from.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        held.extend_from_slice(&buf[..n]);
        while let Some(h) = held.get(..5) {
            let whole = 5 + usize::from(u16::from_be_bytes([h[3], h[4]]));
            if held.len() < whole {
                break;
            }
            let record: Vec<u8> = held.drain(..whole).collect();
            let at = offset;
            offset += whole;
            let due = tamper != Tamper::Trickle && !acted && at >= AFTER && claim(times, done);
            if !due {
                let out = match swapped.take() {
                    Some(first) => [record, first].concat(),
                    None => record,
                };
                if tamper == Tamper::Trickle && at < 20_000 {
                    if trickle(&mut to, &out, done).is_err() {
                        return;
                    }
                } else if to.write_all(&out).is_err() {
                    return;
                }
                continue;
            }
            acted = true;
            let sent = match tamper {
                Tamper::Flip => {
                    let mut r = record;
                    let mid = 5 + (r.len() - 5) / 2;
                    r[mid] ^= 0x10;
                    to.write_all(&r)
                }
                Tamper::Drop => Ok(()),
                Tamper::Duplicate => to.write_all(&[record.clone(), record].concat()),
                Tamper::Swap => {
                    swapped = Some(record);
                    Ok(())
                }
                Tamper::Truncate => {
                    let _ = to.write_all(&record[..record.len() / 2]);
                    let _ = client.shutdown(Shutdown::Both);
                    let _ = server.shutdown(Shutdown::Both);
                    return;
                }
                Tamper::Inject => {
                    let len = 200u16;
                    let mut forged = vec![23, 3, 3, (len >> 8) as u8, len as u8];
                    forged.extend((0..len).map(|i| (i as u8).wrapping_mul(37)));
                    to.write_all(&[forged, record].concat())
                }
                Tamper::Version => {
                    let mut r = record;
                    r[2] = 1;
                    to.write_all(&r)
                }
                Tamper::Trickle => Ok(()),
            };
            if sent.is_err() {
                return;
            }
        }
    }
    // The server's end (its FIN) goes on; a record still held back goes first.
    if let Some(r) = swapped.take() {
        let _ = to.write_all(&r);
    }
    if !held.is_empty() {
        let _ = to.write_all(&held);
    }
    let _ = client.shutdown(Shutdown::Write);
}

/// Whether this connection may tamper now (once in the proxy's life, or always); counts it.
fn claim(times: Times, done: &AtomicU64) -> bool {
    match times {
        Times::Always => {
            done.fetch_add(1, Ordering::SeqCst);
            true
        }
        Times::Once => done
            .compare_exchange(0, 1, Ordering::SeqCst, Ordering::SeqCst)
            .is_ok(),
    }
}

fn trickle(to: &mut &TcpStream, bytes: &[u8], done: &AtomicU64) -> std::io::Result<()> {
    for b in bytes {
        to.write_all(std::slice::from_ref(b))?;
    }
    done.fetch_add(1, Ordering::SeqCst);
    Ok(())
}
