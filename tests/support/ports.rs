//! Ports for servers the tests start as other processes (nginx, daemons, proxies), and a wait
//! that knows the listener it found is that process's own.
//!
//! A port taken with `bind(127.0.0.1:0)` and released comes from the ephemeral range, which every
//! other test's listener and outgoing connection draws from at the same time: another test may
//! bind it before the child does, the child then fails to start, and a readiness check by
//! `connect` succeeds against the other test's listener. Seen as aria2c "Connection refused" from a
//! compat case's nginx, whose port a concurrent case's nginx held and had since closed.
//!
//! So ports here come from below the ephemeral range, handed out once per process from a counter
//! (no two callers in this process get the same one), and `wait_until_child_listens` accepts a
//! listener only when `/proc` shows the child itself holds its socket.

use std::net::{Ipv4Addr, TcpListener};
use std::process::Child;
use std::sync::atomic::{AtomicU32, Ordering};
use std::thread;
use std::time::{Duration, Instant};

/// Below Linux's default ephemeral range (32768–60999), where `bind(0)` and `connect` draw.
const FIRST: u32 = 20_000;
const COUNT: u32 = 12_000;

static NEXT: AtomicU32 = AtomicU32::new(u32::MAX);

/// A loopback port that nothing listened on a moment ago, never handed out before by this
/// process, outside the range the kernel picks ports from. For a child process to listen on, or
/// (left unused) for a port where a connection is refused.
pub fn port_for_child() -> u16 {
    // Start where this process's pid says, so the test binaries of two concurrent runs (the
    // io_uring and portable passes are sequential, but a developer may run two) rarely overlap.
    let _ = NEXT.compare_exchange(
        u32::MAX,
        (std::process::id().wrapping_mul(7919)) % COUNT,
        Ordering::Relaxed,
        Ordering::Relaxed,
    );
    for _ in 0..COUNT {
        let n = NEXT.fetch_add(1, Ordering::Relaxed) % COUNT;
        let port = (FIRST + n) as u16;
        if TcpListener::bind((Ipv4Addr::LOCALHOST, port)).is_ok() {
            return port;
        }
    }
    panic!("no free loopback port in {FIRST}..{}", FIRST + COUNT);
}

/// Waits until `child` itself listens on every port in `ports` (a listening socket on
/// 127.0.0.1:port that is one of the child's descriptors), for at most `limit`. Fails at once if
/// the child exits, and with the ports still missing after `limit`.
pub fn wait_until_child_listens(
    child: &mut Child,
    ports: &[u16],
    limit: Duration,
) -> Result<(), String> {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(status) = child.try_wait().map_err(|e| e.to_string())? {
            return Err(format!("exited at start with {status}"));
        }
        let missing: Vec<u16> = ports
            .iter()
            .copied()
            .filter(|&p| !listens(child.id(), p))
            .collect();
        if missing.is_empty() {
            return Ok(());
        }
        if Instant::now() > deadline {
            return Err(format!(
                "was not listening on port(s) {missing:?} after {limit:?}"
            ));
        }
        thread::sleep(Duration::from_millis(20));
    }
}

/// Whether process `pid` holds a socket listening on 127.0.0.1:`port` (or on every address).
pub fn listens(pid: u32, port: u16) -> bool {
    let Ok(table) = std::fs::read_to_string("/proc/net/tcp") else {
        return false;
    };
    let inodes: Vec<String> = table
        .lines()
        .skip(1)
        .filter_map(|line| {
            let f: Vec<&str> = line.split_whitespace().collect();
            // sl local rem st tx:rx tr:when retrnsmt uid timeout inode
            let (local, state, inode) = (f.get(1)?, f.get(3)?, f.get(9)?);
            let (addr, p) = local.split_once(':')?;
            let listening = *state == "0A";
            let here = addr == "0100007F" || addr == "00000000";
            (listening && here && u16::from_str_radix(p, 16).ok()? == port)
                .then(|| format!("socket:[{inode}]"))
        })
        .collect();
    if inodes.is_empty() {
        return false;
    }
    let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
        return false;
    };
    fds.flatten().any(|fd| {
        std::fs::read_link(fd.path())
            .map(|target| inodes.iter().any(|i| target.as_os_str() == i.as_str()))
            .unwrap_or(false)
    })
}

#[test]
fn a_port_is_seen_as_this_process_listening_only_while_it_listens() {
    let port = port_for_child();
    assert!((FIRST..FIRST + COUNT).contains(&u32::from(port)));
    assert_ne!(port, port_for_child(), "one port handed out twice");
    assert!(!listens(std::process::id(), port));
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, port)).expect("bind the port");
    assert!(listens(std::process::id(), port));
    // Another process does not hold it.
    assert!(!listens(1, port));
    drop(listener);
    assert!(!listens(std::process::id(), port));
}

#[test]
fn another_process_listening_on_the_port_is_not_taken_for_the_child() {
    // The failure this module exists for: the port is served, but not by the child (which here
    // never listens at all); a check by `connect` would have called the child ready.
    let port = port_for_child();
    let _theirs = TcpListener::bind((Ipv4Addr::LOCALHOST, port)).expect("bind the port");
    let mut child = std::process::Command::new("sleep")
        .arg("5")
        .spawn()
        .expect("run sleep");
    let waited = wait_until_child_listens(&mut child, &[port], Duration::from_millis(300));
    let _ = child.kill();
    let _ = child.wait();
    let why = waited.expect_err("a listener of another process was taken for the child's");
    assert!(why.contains(&port.to_string()), "{why}");
    // A child that exits is reported at once, not after the limit.
    let mut gone = std::process::Command::new("true")
        .spawn()
        .expect("run true");
    let started = Instant::now();
    let why = wait_until_child_listens(&mut gone, &[port], Duration::from_secs(5))
        .expect_err("an exited child reported as listening");
    assert!(why.contains("exited"), "{why}");
    assert!(started.elapsed() < Duration::from_secs(2));
}
