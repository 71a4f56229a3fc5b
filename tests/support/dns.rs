//! A DNS server for tests: answers A and AAAA queries over UDP on 127.0.0.1 from a table, and can
//! misbehave per name (silence, SERVFAIL, NXDOMAIN, a truncated answer, a forged answer first).
//! Records every question it was asked.
use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr, UdpSocket};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

use simple_dns::rdata::{RData, A, AAAA};
use simple_dns::{Name, Packet, PacketFlag, ResourceRecord, CLASS, QTYPE, RCODE, TYPE};

/// How the server answers a name.
#[derive(Debug, Clone)]
pub enum Behaviour {
    /// These addresses (those of the asked family).
    Addresses(Vec<IpAddr>),
    /// A forged answer (wrong id, then another question) before the real one.
    ForgedFirst(Vec<IpAddr>),
    /// No answer at all.
    Silent,
    ServFail,
    NxDomain,
    Truncated,
}

pub struct DnsServer {
    addr: SocketAddr,
    names: Arc<Mutex<HashMap<String, Behaviour>>>,
    asked: Arc<Mutex<Vec<(String, String)>>>,
}

impl DnsServer {
    /// Starts a server on a free UDP port of 127.0.0.1; names it does not know get NXDOMAIN.
    pub fn start() -> DnsServer {
        let sock = UdpSocket::bind("127.0.0.1:0").expect("bind a UDP port");
        let addr = sock.local_addr().expect("address");
        let names: Arc<Mutex<HashMap<String, Behaviour>>> = Arc::default();
        let asked: Arc<Mutex<Vec<(String, String)>>> = Arc::default();
        let (n, a) = (names.clone(), asked.clone());
        thread::spawn(move || {
            let mut buf = [0u8; 1500];
            loop {
                let Ok((len, from)) = sock.recv_from(&mut buf) else {
                    return;
                };
                let Ok(query) = Packet::parse(&buf[..len]) else {
                    continue;
                };
                let Some(q) = query.questions.first() else {
                    continue;
                };
                let name = q.qname.to_string().to_ascii_lowercase();
                let qtype = q.qtype;
                a.lock()
                    .expect("asked")
                    .push((name.clone(), format!("{qtype:?}")));
                let how = n
                    .lock()
                    .expect("names")
                    .get(&name)
                    .cloned()
                    .unwrap_or(Behaviour::NxDomain);
                let reply = |rcode: RCODE, ips: &[IpAddr], flags: Option<PacketFlag>| {
                    let mut p = Packet::new_reply(query.id());
                    p.questions = query.questions.clone();
                    *p.rcode_mut() = rcode;
                    if let Some(f) = flags {
                        p.set_flags(f);
                    }
                    for ip in ips {
                        let rdata = match (ip, qtype) {
                            (IpAddr::V4(v4), QTYPE::TYPE(TYPE::A)) => RData::A(A {
                                address: u32::from(*v4),
                            }),
                            (IpAddr::V6(v6), QTYPE::TYPE(TYPE::AAAA)) => RData::AAAA(AAAA {
                                address: u128::from(*v6),
                            }),
                            _ => continue,
                        };
                        p.answers
                            .push(ResourceRecord::new(q.qname.clone(), CLASS::IN, 60, rdata));
                    }
                    p.build_bytes_vec().expect("answer")
                };
                let out: Vec<Vec<u8>> = match how {
                    Behaviour::Silent => Vec::new(),
                    Behaviour::Addresses(ips) => vec![reply(RCODE::NoError, &ips, None)],
                    Behaviour::ForgedFirst(ips) => {
                        let evil: Vec<IpAddr> = vec!["192.0.2.66".parse().expect("ip")];
                        let mut wrong_id = reply(RCODE::NoError, &evil, None);
                        let forged_id = query.id().wrapping_add(1).to_be_bytes();
                        wrong_id[..2].copy_from_slice(&forged_id);
                        let mut other = Packet::new_reply(query.id());
                        let mut oq = q.clone();
                        oq.qname = Name::new_unchecked("evil.example");
                        other.questions.push(oq);
                        vec![
                            wrong_id,
                            other.build_bytes_vec().expect("forged"),
                            reply(RCODE::NoError, &ips, None),
                        ]
                    }
                    Behaviour::ServFail => vec![reply(RCODE::ServerFailure, &[], None)],
                    Behaviour::NxDomain => vec![reply(RCODE::NameError, &[], None)],
                    Behaviour::Truncated => {
                        vec![reply(RCODE::NoError, &[], Some(PacketFlag::TRUNCATION))]
                    }
                };
                for d in out {
                    let _ = sock.send_to(&d, from);
                }
            }
        });
        DnsServer { addr, names, asked }
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Answers `name` (lower case, no trailing dot) as `how`.
    pub fn set(&self, name: &str, how: Behaviour) -> &DnsServer {
        self.names
            .lock()
            .expect("names")
            .insert(name.to_string(), how);
        self
    }

    /// The questions asked so far: name and type.
    pub fn asked(&self) -> Vec<(String, String)> {
        self.asked.lock().expect("asked").clone()
    }
}

/// A UDP port on 127.0.0.1 where nothing listens (its ICMP answer ends a try at once).
pub fn closed_port() -> SocketAddr {
    let s = UdpSocket::bind("127.0.0.1:0").expect("bind");
    let a = s.local_addr().expect("addr");
    drop(s);
    thread::sleep(Duration::from_millis(10));
    a
}
