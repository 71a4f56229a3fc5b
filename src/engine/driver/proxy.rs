//! Connections through a proxy: which proxy a request takes, reaching it (its address is resolved
//! once at the start of the run), and opening the tunnel (HTTP `CONNECT`, SOCKS5) before TLS or the
//! request go through it. The handshakes themselves are `http::proxy`'s state machines; here they
//! are fed from the connection's read block and answered through its send queue.
use super::*;
use crate::http::proxy::{Handshake, Kind, Proxy, Step};
use std::net::ToSocketAddrs;

/// Each proxy's addresses, or why it has none (private to this file).
#[derive(Default)]
pub(super) struct ProxyAddrs(HashMap<(String, u16), Result<Vec<SocketAddr>, String>>);

impl<R: Reactor<Tag>> Engine<'_, R> {
    /// Resolves the names of download `dl`'s proxies when it starts, each proxy once per run (so
    /// no connection waits on a proxy's lookup; downloads of a list rarely name new ones).
    pub(super) fn resolve_proxies(&mut self, dl: usize) {
        let routes = &self.dls[dl].opts.proxies;
        for p in [
            routes.http.as_ref(),
            routes.https.as_ref(),
            routes.ftp.as_ref(),
        ]
        .into_iter()
        .flatten()
        {
            let key = (p.host.clone(), p.port);
            if self.proxy_addrs.0.contains_key(&key) {
                continue;
            }
            let addrs = (p.host.as_str(), p.port)
                .to_socket_addrs()
                .map(|a| a.collect::<Vec<_>>())
                .map_err(|e| e.to_string())
                .and_then(|a| {
                    if a.is_empty() {
                        Err("no address".to_string())
                    } else {
                        Ok(a)
                    }
                });
            self.proxy_addrs.0.insert(key, addrs);
        }
    }

    /// Connects connection `slot`, whose request goes to `target` through `proxy`.
    pub(super) fn connect_via(&mut self, slot: usize, proxy: &Proxy, target: Option<url::Host>) {
        match target {
            // socks5:// sends the target's address: a name is resolved here first (`on_wake`
            // connects to the proxy once it is).
            Some(url::Host::Domain(name)) if proxy.kind == Kind::Socks5 => {
                let (id, port) = match self.conns[slot].as_ref() {
                    Some(c) => (c.id, c.server.port),
                    None => return,
                };
                if let Some(addrs) = self.dns.get(&name, port) {
                    let ip = addrs.first().map(SocketAddr::ip);
                    if let Some(c) = self.conns[slot].as_mut() {
                        c.socks_target = ip;
                    }
                } else if self.look_up(id, &name, port) {
                    return;
                }
            }
            Some(url::Host::Ipv4(a)) => {
                if let Some(c) = self.conns[slot].as_mut() {
                    c.socks_target = Some(a.into());
                }
            }
            Some(url::Host::Ipv6(a)) => {
                if let Some(c) = self.conns[slot].as_mut() {
                    c.socks_target = Some(a.into());
                }
            }
            _ => {}
        }
        self.connect_to_proxy(slot);
    }

    /// Connects to the connection's proxy's addresses.
    pub(super) fn connect_to_proxy(&mut self, slot: usize) {
        let Some(p) = self.conns[slot].as_ref().and_then(|c| c.proxy.clone()) else {
            return;
        };
        match self.proxy_addrs.0.get(&(p.host.clone(), p.port)) {
            Some(Ok(addrs)) => {
                let addrs = addrs.clone();
                self.connect_to(slot, addrs);
            }
            Some(Err(e)) => {
                let f = Failure::retry(
                    ExitCode::RESOLVE,
                    format!("Name resolution for the proxy {} failed: {e}", p.host),
                );
                self.fail_conn(slot, f);
            }
            None => {
                let f = Failure::retry(ExitCode::RESOLVE, "the proxy was not resolved");
                self.fail_conn(slot, f);
            }
        }
    }

    /// Connected to the proxy: start the tunnel if this request takes one.
    pub(super) fn start_tunnel(&mut self, slot: usize) {
        let Some(c) = self.conns[slot].as_mut() else {
            return;
        };
        let Some(p) = c.proxy.as_ref() else { return };
        if !c.server.tunnels() {
            return;
        }
        let (h, first) = Handshake::start(p, &c.server.host, c.server.port, c.socks_target);
        c.tunnel = Some(h);
        c.out.extend_from_slice(&first);
    }

    /// Feeds the proxy's bytes to the tunnel being opened. False when the connection failed or
    /// the tunnel is still opening (nothing else may read the bytes yet).
    pub(super) fn pump_tunnel(&mut self, slot: usize) -> bool {
        let Some(c) = self.conns[slot].as_mut() else {
            return false;
        };
        let Some(h) = c.tunnel.as_mut() else {
            return true;
        };
        let Some(rbuf) = c.rbuf.as_ref() else {
            return false;
        };
        let data = rbuf.as_slice()[c.rb_start..c.rb_end].to_vec();
        c.rb_start = 0;
        c.rb_end = 0;
        match h.on_bytes(&data) {
            Ok(Step::Send(bytes)) => {
                c.out.extend_from_slice(&bytes);
                false
            }
            Ok(Step::More) => false,
            Ok(Step::Open) => {
                let rest = h.take_rest();
                c.tunnel = None;
                // A server that speaks first (FTP's greeting, SSH's version) may have spoken
                // already: its bytes are read as the conversation's, as if they came next.
                let speaks_first =
                    c.tls.is_none() && c.ex.as_ref().is_some_and(|ex| ex.conversation.is_some());
                if speaks_first && !rest.is_empty() {
                    if let Some(b) = c.rbuf.as_mut().filter(|b| b.len() >= rest.len()) {
                        b.as_mut_slice()[..rest.len()].copy_from_slice(&rest);
                        c.rb_end = rest.len();
                        let held = std::mem::take(&mut c.held_out);
                        c.out.extend_from_slice(&held);
                        return true;
                    }
                }
                if !rest.is_empty() {
                    let f = Failure::retry(
                        ExitCode::UNKNOWN,
                        "the proxy sent data before the request went through the tunnel",
                    );
                    self.fail_conn(slot, f);
                    return false;
                }
                let held = std::mem::take(&mut c.held_out);
                c.out.extend_from_slice(&held);
                true
            }
            Err(e) => {
                self.fail_conn(slot, Failure::retry(ExitCode::UNKNOWN, e.to_string()));
                false
            }
        }
    }
}
