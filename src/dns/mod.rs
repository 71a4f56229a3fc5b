//! A stub resolver's exchange with DNS servers over UDP, sans I/O (`--async-dns-server`): the
//! queries to send, the answers that count, and when to give up on a server. The engine moves the
//! datagrams on its ring (`engine/driver/lookup.rs`) and falls back to the system resolver when
//! this gives no address. The wire format is `simple-dns`'s.
//!
//! One lookup asks one server at a time: an A query (and an AAAA query when IPv6 addresses are
//! wanted), each with a random id, on a socket of its own (a random source port). An answer
//! counts only if it comes from that socket, carries the id of a query still open, repeats its
//! question, and is not truncated; anything else is ignored, as a stray or forged datagram must
//! be. A server that fails (SERVFAIL, REFUSED, a truncated answer, silence for `TIMEOUT` twice)
//! hands the lookup to the next one.
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::time::Duration;

use simple_dns::rdata::RData;
use simple_dns::{Name, Packet, PacketFlag, Question, CLASS, QCLASS, QTYPE, RCODE, TYPE};

/// How long one server has to answer one try.
pub const TIMEOUT: Duration = Duration::from_secs(2);
/// Tries per server before the next one is asked.
pub const TRIES: u32 = 2;
/// The longest answer read (a server asked without EDNS answers in 512 bytes or truncates).
pub const MAX_ANSWER: usize = 4096;
/// CNAME records followed before a chain is taken for a loop.
const MAX_CHAIN: usize = 8;

/// The well-known port of DNS servers.
pub const PORT: u16 = 53;

/// Parses `--async-dns-server`'s value: comma-separated addresses, each `IP`, `IP:PORT` or
/// `[IPv6]:PORT`.
pub fn parse_servers(text: &str) -> Result<Vec<SocketAddr>, String> {
    let mut out = Vec::new();
    for item in text.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let addr = if let Ok(ip) = item.parse::<IpAddr>() {
            SocketAddr::new(ip, PORT)
        } else if let Ok(sa) = item.parse::<SocketAddr>() {
            sa
        } else {
            return Err(format!("'{item}' is not an IP address"));
        };
        out.push(addr);
    }
    if out.is_empty() {
        return Err("no DNS server given".into());
    }
    Ok(out)
}

/// What the engine does next for a lookup.
#[derive(Debug, PartialEq, Eq)]
pub enum Step {
    /// Send these queries to `server` from a new socket and wait up to `TIMEOUT` for answers
    /// (the socket and waits of any earlier step are done with).
    Ask {
        server: SocketAddr,
        queries: Vec<Vec<u8>>,
    },
    /// Nothing to do: wait for more datagrams.
    Wait,
    /// The lookup is over: the addresses found, or why there are none.
    Done(Result<Vec<IpAddr>, String>),
}

/// One name being looked up.
#[derive(Debug)]
pub struct Lookup {
    name: String,
    servers: Vec<SocketAddr>,
    types: Vec<TYPE>,
    server: usize,
    tries: u32,
    /// The open queries of the current try: id and type, and what each answered.
    open: Vec<(u16, TYPE, Option<Vec<IpAddr>>)>,
    /// Why the last server gave nothing.
    why: String,
    /// A server said the name does not exist.
    no_such_name: bool,
}

impl Lookup {
    /// A lookup of `name` (A records, and AAAA when `ipv6`) over `servers`, in order.
    pub fn new(name: &str, servers: Vec<SocketAddr>, ipv6: bool) -> Lookup {
        let mut types = vec![TYPE::A];
        if ipv6 {
            types.push(TYPE::AAAA);
        }
        Lookup {
            name: name.trim_end_matches('.').to_ascii_lowercase(),
            servers,
            types,
            server: 0,
            tries: 0,
            open: Vec::new(),
            why: "no DNS server answered".into(),
            no_such_name: false,
        }
    }

    /// The first step; `random` gives query ids.
    pub fn start(&mut self, random: &mut impl FnMut() -> u16) -> Step {
        if Name::new(&self.name).is_err() || self.name.is_empty() {
            return Step::Done(Err(format!("'{}' is not a host name", self.name)));
        }
        self.ask(random)
    }

    /// The current try waited `TIMEOUT` in vain: again, or the next server.
    pub fn on_timeout(&mut self, random: &mut impl FnMut() -> u16) -> Step {
        self.why = format!("{} did not answer", self.servers[self.server]);
        if self.tries < TRIES {
            return self.ask(random);
        }
        self.next_server(random)
    }

    /// A datagram arrived on the current try's socket.
    pub fn on_datagram(&mut self, data: &[u8], random: &mut impl FnMut() -> u16) -> Step {
        let Ok(packet) = Packet::parse(data) else {
            return Step::Wait;
        };
        let Some(i) = self
            .open
            .iter()
            .position(|(id, _, got)| *id == packet.id() && got.is_none())
        else {
            return Step::Wait;
        };
        let qtype = self.open[i].1;
        // The answer must repeat the question asked (RFC 5452 §9.1).
        let same_question = packet.questions.len() == 1
            && packet.questions.first().is_some_and(|q| {
                q.qtype == QTYPE::TYPE(qtype) && same_name(&q.qname.to_string(), &self.name)
            });
        if !packet.has_flags(PacketFlag::RESPONSE) || !same_question {
            return Step::Wait;
        }
        let server = self.servers[self.server];
        if packet.has_flags(PacketFlag::TRUNCATION) {
            self.why = format!("{server} sent a truncated answer");
            return self.next_server(random);
        }
        match packet.rcode() {
            RCODE::NoError => {}
            RCODE::NameError => {
                self.no_such_name = true;
                self.why = format!("{server} says the name does not exist");
                return self.next_server(random);
            }
            other => {
                self.why = format!("{server} answered {other:?}");
                return self.next_server(random);
            }
        }
        let addrs = addresses(&packet, &self.name, qtype);
        self.open[i].2 = Some(addrs);
        if self.open.iter().any(|(_, _, got)| got.is_none()) {
            return Step::Wait;
        }
        let found: Vec<IpAddr> = self
            .open
            .iter_mut()
            .flat_map(|(_, _, got)| got.take().unwrap_or_default())
            .collect();
        if found.is_empty() {
            return Step::Done(Err(format!("{server} has no address for the name")));
        }
        Step::Done(Ok(found))
    }

    fn next_server(&mut self, random: &mut impl FnMut() -> u16) -> Step {
        self.open.clear();
        if self.server + 1 >= self.servers.len() {
            return Step::Done(Err(self.why.clone()));
        }
        self.server += 1;
        self.tries = 0;
        self.ask(random)
    }

    fn ask(&mut self, random: &mut impl FnMut() -> u16) -> Step {
        self.tries += 1;
        self.open.clear();
        let mut queries = Vec::new();
        for &t in &self.types {
            let mut id = random();
            while self.open.iter().any(|(o, _, _)| *o == id) {
                id = random();
            }
            match query(id, &self.name, t) {
                Ok(q) => queries.push(q),
                Err(e) => return Step::Done(Err(e)),
            }
            self.open.push((id, t, None));
        }
        Step::Ask {
            server: self.servers[self.server],
            queries,
        }
    }

    /// Whether a server said the name does not exist (the system resolver may still know it, from
    /// its hosts file).
    pub fn no_such_name(&self) -> bool {
        self.no_such_name
    }
}

/// A recursive query for `name`'s records of type `t`.
pub fn query(id: u16, name: &str, t: TYPE) -> Result<Vec<u8>, String> {
    let qname = Name::new(name).map_err(|e| format!("'{name}' is not a host name: {e}"))?;
    let mut p = Packet::new_query(id);
    p.set_flags(PacketFlag::RECURSION_DESIRED);
    p.questions.push(Question::new(
        qname,
        QTYPE::TYPE(t),
        QCLASS::CLASS(CLASS::IN),
        false,
    ));
    p.build_bytes_vec()
        .map_err(|e| format!("cannot build a DNS query: {e}"))
}

/// The addresses of type `t` an answer gives for `name`, following its CNAME chain.
fn addresses(packet: &Packet, name: &str, t: TYPE) -> Vec<IpAddr> {
    let mut target = name.to_string();
    for _ in 0..MAX_CHAIN {
        let alias = packet.answers.iter().find_map(|rr| match &rr.rdata {
            RData::CNAME(c) if same_name(&rr.name.to_string(), &target) => Some(c.0.to_string()),
            _ => None,
        });
        match alias {
            Some(next) => target = next,
            None => break,
        }
    }
    packet
        .answers
        .iter()
        .filter(|rr| rr.class == CLASS::IN && same_name(&rr.name.to_string(), &target))
        .filter_map(|rr| match (&rr.rdata, t) {
            (RData::A(a), TYPE::A) => Some(IpAddr::V4(Ipv4Addr::from(a.address))),
            (RData::AAAA(a), TYPE::AAAA) => Some(IpAddr::V6(Ipv6Addr::from(a.address))),
            _ => None,
        })
        .collect()
}

fn same_name(a: &str, b: &str) -> bool {
    a.trim_end_matches('.')
        .eq_ignore_ascii_case(b.trim_end_matches('.'))
}

#[cfg(test)]
mod tests {
    use super::*;
    use simple_dns::rdata::{A, AAAA, CNAME};
    use simple_dns::ResourceRecord;

    fn ids() -> impl FnMut() -> u16 {
        let mut n = 100u16;
        move || {
            n += 1;
            n
        }
    }

    fn servers() -> Vec<SocketAddr> {
        parse_servers("127.0.0.1:5300,[::1]:5301").expect("servers")
    }

    /// An answer to `q` (a query's bytes) with `records` built by `fill`.
    fn answer(q: &[u8], rcode: RCODE, fill: impl FnOnce(&mut Packet)) -> Vec<u8> {
        let query = Packet::parse(q).expect("query");
        let mut p = Packet::new_reply(query.id());
        p.questions = query.questions.clone();
        *p.rcode_mut() = rcode;
        fill(&mut p);
        p.build_bytes_vec().expect("answer")
    }

    fn asked(step: Step) -> (SocketAddr, Vec<Vec<u8>>) {
        match step {
            Step::Ask { server, queries } => (server, queries),
            other => panic!("expected a query, got {other:?}"),
        }
    }

    #[test]
    fn servers_parse_with_and_without_ports() {
        assert_eq!(
            parse_servers("192.0.2.1, [2001:db8::1]:5353,2001:db8::2").expect("ok"),
            vec![
                "192.0.2.1:53".parse().expect("a"),
                "[2001:db8::1]:5353".parse().expect("b"),
                "[2001:db8::2]:53".parse().expect("c"),
            ]
        );
        assert!(parse_servers("dns.example").is_err());
        assert!(parse_servers("").is_err());
    }

    #[test]
    fn both_families_answered_through_a_cname_chain() {
        let mut random = ids();
        let mut l = Lookup::new("Files.Example.", servers(), true);
        let (server, queries) = asked(l.start(&mut random));
        assert_eq!(server, servers()[0]);
        assert_eq!(queries.len(), 2);
        let a = answer(&queries[0], RCODE::NoError, |p| {
            p.answers.push(ResourceRecord::new(
                Name::new_unchecked("files.example"),
                CLASS::IN,
                60,
                RData::CNAME(CNAME(Name::new_unchecked("cdn.example"))),
            ));
            p.answers.push(ResourceRecord::new(
                Name::new_unchecked("cdn.example"),
                CLASS::IN,
                60,
                RData::A(A {
                    address: u32::from(Ipv4Addr::new(192, 0, 2, 7)),
                }),
            ));
            // A record for another name: not this lookup's.
            p.answers.push(ResourceRecord::new(
                Name::new_unchecked("evil.example"),
                CLASS::IN,
                60,
                RData::A(A {
                    address: u32::from(Ipv4Addr::new(203, 0, 113, 1)),
                }),
            ));
        });
        assert_eq!(l.on_datagram(&a, &mut random), Step::Wait);
        // The same answer again changes nothing: its query is answered.
        assert_eq!(l.on_datagram(&a, &mut random), Step::Wait);
        let aaaa = answer(&queries[1], RCODE::NoError, |p| {
            p.answers.push(ResourceRecord::new(
                Name::new_unchecked("files.example"),
                CLASS::IN,
                60,
                RData::AAAA(AAAA {
                    address: u128::from("2001:db8::7".parse::<Ipv6Addr>().expect("v6")),
                }),
            ));
        });
        assert_eq!(
            l.on_datagram(&aaaa, &mut random),
            Step::Done(Ok(vec![
                "192.0.2.7".parse().expect("a"),
                "2001:db8::7".parse().expect("b")
            ]))
        );
    }

    #[test]
    fn forged_and_stray_datagrams_are_ignored() {
        let mut random = ids();
        let mut l = Lookup::new("files.example", servers(), false);
        let (_, queries) = asked(l.start(&mut random));
        let good = |p: &mut Packet| {
            p.answers.push(ResourceRecord::new(
                Name::new_unchecked("files.example"),
                CLASS::IN,
                60,
                RData::A(A { address: 1 }),
            ));
        };
        // Another id.
        let mut other = Packet::parse(&queries[0]).expect("q").questions[0].clone();
        other.qname = Name::new_unchecked("files.example");
        let mut wrong_id = Packet::new_reply(9);
        wrong_id.questions.push(other);
        let wrong_id = wrong_id.build_bytes_vec().expect("b");
        assert_eq!(l.on_datagram(&wrong_id, &mut random), Step::Wait);
        // Another question under the right id.
        let q = query(
            Packet::parse(&queries[0]).expect("q").id(),
            "other.example",
            TYPE::A,
        )
        .expect("q");
        assert_eq!(
            l.on_datagram(&answer(&q, RCODE::NoError, good), &mut random),
            Step::Wait
        );
        // The query itself echoed back (not a response).
        assert_eq!(l.on_datagram(&queries[0], &mut random), Step::Wait);
        // Garbage, and a truncated header.
        assert_eq!(l.on_datagram(b"\x00\x01garbage", &mut random), Step::Wait);
        assert_eq!(l.on_datagram(&[], &mut random), Step::Wait);
        // Then the real answer still counts.
        assert!(matches!(
            l.on_datagram(&answer(&queries[0], RCODE::NoError, good), &mut random),
            Step::Done(Ok(_))
        ));
    }

    #[test]
    fn a_failing_server_hands_over_to_the_next_and_the_last_failure_is_said() {
        let mut random = ids();
        let mut l = Lookup::new("files.example", servers(), false);
        let (_, q) = asked(l.start(&mut random));
        let (server, q) =
            asked(l.on_datagram(&answer(&q[0], RCODE::ServerFailure, |_| {}), &mut random));
        assert_eq!(server, servers()[1]);
        // Silence twice on the last server ends the lookup.
        let (again, _) = asked(l.on_timeout(&mut random));
        assert_eq!(again, servers()[1]);
        let _ = q;
        match l.on_timeout(&mut random) {
            Step::Done(Err(why)) => assert!(why.contains("did not answer"), "{why}"),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn truncated_and_empty_answers_give_no_address() {
        let mut random = ids();
        let one = vec!["127.0.0.1:5300".parse().expect("s")];
        let mut l = Lookup::new("files.example", one.clone(), false);
        let (_, q) = asked(l.start(&mut random));
        let tc = {
            let query = Packet::parse(&q[0]).expect("q");
            let mut p = Packet::new_reply(query.id());
            p.questions = query.questions.clone();
            p.set_flags(PacketFlag::TRUNCATION);
            p.build_bytes_vec().expect("b")
        };
        assert!(
            matches!(l.on_datagram(&tc, &mut random), Step::Done(Err(w)) if w.contains("truncated"))
        );
        let mut l = Lookup::new("files.example", one.clone(), false);
        let (_, q) = asked(l.start(&mut random));
        assert!(matches!(
            l.on_datagram(&answer(&q[0], RCODE::NoError, |_| {}), &mut random),
            Step::Done(Err(_))
        ));
        let mut l = Lookup::new("files.example", one, false);
        let (_, q) = asked(l.start(&mut random));
        assert!(matches!(
            l.on_datagram(&answer(&q[0], RCODE::NameError, |_| {}), &mut random),
            Step::Done(Err(_))
        ));
        assert!(l.no_such_name());
    }

    #[test]
    fn a_chain_that_loops_ends() {
        let mut random = ids();
        let mut l = Lookup::new("a.example", servers(), false);
        let (_, q) = asked(l.start(&mut random));
        let looped = answer(&q[0], RCODE::NoError, |p| {
            for (from, to) in [("a.example", "b.example"), ("b.example", "a.example")] {
                p.answers.push(ResourceRecord::new(
                    Name::new_unchecked(from),
                    CLASS::IN,
                    60,
                    RData::CNAME(CNAME(Name::new_unchecked(to))),
                ));
            }
        });
        assert!(matches!(
            l.on_datagram(&looped, &mut random),
            Step::Done(Err(_))
        ));
    }

    #[test]
    fn names_that_cannot_be_asked_end_at_once() {
        let mut random = ids();
        let long = "a".repeat(64);
        let mut l = Lookup::new(&long, servers(), false);
        assert!(matches!(l.start(&mut random), Step::Done(Err(_))));
    }
}
