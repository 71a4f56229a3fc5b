//! Name lookups: the DNS cache, then either `--async-dns-server`'s servers asked over UDP on the
//! ring (`crate::dns` decides what to send and what an answer is worth; this moves the
//! datagrams, one connected socket per try, so each try has a fresh source port), or the system
//! resolver's thread. A lookup through the servers that gives no address goes on to the system
//! resolver, which also knows the hosts file. Either way the answer reaches `on_resolved`.
use super::super::reactor::Owned;
use super::*;
use crate::dns;

/// `--async-dns-server`'s lookups in flight, by the id of the connection waiting for each.
pub(super) struct RingDns {
    servers: Vec<SocketAddr>,
    ipv6: bool,
    active: HashMap<u64, Active>,
    /// Numbers each try, so a completion from an earlier try of a lookup is known as stale.
    next_try: u64,
}

struct Active {
    lookup: dns::Lookup,
    host: String,
    port: u16,
    /// The current try: its number, its socket, and its operations in flight.
    try_no: u64,
    sock: Option<Fd>,
    ops: Vec<OpId>,
}

/// Which operation of a try completed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum DnsOp {
    Sent,
    Read,
    Timeout,
}

impl RingDns {
    pub(super) fn new(servers: Vec<SocketAddr>, ipv6: bool) -> Option<RingDns> {
        (!servers.is_empty()).then(|| RingDns {
            servers,
            ipv6,
            active: HashMap::new(),
            next_try: 1,
        })
    }
}

/// A random query id (ids an off-path forger must guess, with the socket's random port).
fn random_id() -> u16 {
    let mut b = [0u8; 2];
    if sys::random_bytes(&mut b) {
        u16::from_ne_bytes(b)
    } else {
        random_gid() as u16
    }
}

impl<R: Reactor<Tag>> Engine<'_, R> {
    /// Looks up `host` for connection `id` (an answer goes to `on_resolved`). False when there is
    /// no resolver at all (the simulation's URLs name addresses).
    pub(super) fn look_up(&mut self, id: u64, host: &str, port: u16) -> bool {
        if let Some(ring) = self.ring_dns.as_mut() {
            let lookup = dns::Lookup::new(host, ring.servers.clone(), ring.ipv6);
            ring.active.insert(
                id,
                Active {
                    lookup,
                    host: host.to_string(),
                    port,
                    try_no: 0,
                    sock: None,
                    ops: Vec::new(),
                },
            );
            let step = match ring.active.get_mut(&id) {
                Some(a) => a.lookup.start(&mut random_id),
                None => return true,
            };
            self.dns_step(id, step);
            return true;
        }
        match self.resolver.as_ref() {
            Some(r) => {
                r.lookup(id, host, port);
                true
            }
            None => false,
        }
    }

    /// Acts on what the lookup for connection `id` said to do next.
    fn dns_step(&mut self, id: u64, step: dns::Step) {
        let mut step = step;
        loop {
            match step {
                dns::Step::Wait => return,
                dns::Step::Done(result) => {
                    self.dns_done(id, result);
                    return;
                }
                dns::Step::Ask { server, queries } => {
                    let Some(ring) = self.ring_dns.as_mut() else {
                        return;
                    };
                    let try_no = ring.next_try;
                    ring.next_try += 1;
                    let Some(a) = ring.active.get_mut(&id) else {
                        return;
                    };
                    for op in a.ops.drain(..) {
                        self.reactor.abandon(op);
                    }
                    a.try_no = try_no;
                    a.sock = None;
                    let sock = match self.reactor.udp_socket(&server) {
                        Ok(s) => s,
                        Err(e) => {
                            self.console.log(
                                LogLevel::Debug,
                                &format!("CUID#{id} - DNS server {server}: {e}"),
                            );
                            // As if it never answered.
                            step = a.lookup.on_timeout(&mut random_id);
                            continue;
                        }
                    };
                    let tag = |op| Tag::Dns {
                        conn: id,
                        try_no,
                        op,
                    };
                    let mut ops = Vec::new();
                    for q in queries {
                        ops.push(self.reactor.send(tag(DnsOp::Sent), sock.clone(), q, 0));
                    }
                    ops.push(self.reactor.read(
                        tag(DnsOp::Read),
                        sock.clone(),
                        vec![0; dns::MAX_ANSWER],
                    ));
                    ops.push(self.reactor.timer(tag(DnsOp::Timeout), dns::TIMEOUT));
                    if let Some(a) = self.ring_dns.as_mut().and_then(|r| r.active.get_mut(&id)) {
                        a.ops = ops;
                        a.sock = Some(sock);
                    }
                    return;
                }
            }
        }
    }

    /// A completion of a lookup's try.
    pub(super) fn on_dns(&mut self, id: u64, try_no: u64, op: DnsOp, res: i32, owned: Owned) {
        let Some(a) = self
            .ring_dns
            .as_mut()
            .and_then(|r| r.active.get_mut(&id))
            .filter(|a| a.try_no == try_no)
        else {
            return;
        };
        let step = match op {
            DnsOp::Sent if res >= 0 => return,
            DnsOp::Read if res >= 0 => {
                let buf = owned.into_bytes().unwrap_or_default();
                let n = (res as usize).min(buf.len());
                let step = a.lookup.on_datagram(&buf[..n], &mut random_id);
                if step == dns::Step::Wait {
                    // Not (all) the answers: read the next datagram.
                    if let Some(sock) = a.sock.clone() {
                        let tag = Tag::Dns {
                            conn: id,
                            try_no,
                            op: DnsOp::Read,
                        };
                        let op = self.reactor.read(tag, sock, buf);
                        if let Some(a) = self.ring_dns.as_mut().and_then(|r| r.active.get_mut(&id))
                        {
                            a.ops.push(op);
                        }
                    }
                    return;
                }
                step
            }
            // A send or read that failed (ICMP said no one listens there, no route): this try
            // is over, as if the server never answered.
            DnsOp::Sent | DnsOp::Read | DnsOp::Timeout => a.lookup.on_timeout(&mut random_id),
        };
        self.dns_step(id, step);
    }

    /// The servers' lookup for connection `id` ended: its addresses, or the system resolver.
    fn dns_done(&mut self, id: u64, result: Result<Vec<std::net::IpAddr>, String>) {
        let Some(a) = self.ring_dns.as_mut().and_then(|r| r.active.remove(&id)) else {
            return;
        };
        for op in a.ops {
            self.reactor.abandon(op);
        }
        match result {
            Ok(ips) => {
                let addrs = ips
                    .into_iter()
                    .map(|ip| SocketAddr::new(ip, a.port))
                    .collect();
                self.on_resolved(id, Ok(addrs));
            }
            Err(why) => match self.resolver.as_ref() {
                Some(r) => {
                    self.console.log(
                        LogLevel::Info,
                        &format!(
                            "CUID#{id} - No address for {} from the DNS servers ({why}); asking the system resolver",
                            a.host
                        ),
                    );
                    r.lookup(id, &a.host, a.port);
                }
                None => self.on_resolved(id, Err(why)),
            },
        }
    }
}
