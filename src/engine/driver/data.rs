//! A protocol's second connection (FTP's data connection): opened when a conversation asks for
//! it (`sources::Step::Data`), always to the address its own connection is connected to, so a
//! server cannot aim it at another host; the conversation hears when it is connected
//! (`Conversation::data_ready`); an answer saying its bytes come there (`Answer::on_data`) moves
//! the body onto it, and the connection the conversation went on waits, set aside (`Parked`),
//! until the exchange ends and both close (neither is kept for another exchange yet). Everything else about the body (blocks, ranges,
//! pieces, the writer) is as for any answer: the exchange and its range stay the connection's.
use super::*;
use crate::engine::conn::Parked;
use crate::engine::sink;
use std::net::SocketAddr;

impl<R: Reactor<Tag>> Engine<'_, R> {
    /// What a conversation asked for as it read: its bytes to send, a data connection, and, once
    /// it has answered (or a response head came), its meaning: true then.
    pub(super) fn conversed(&mut self, slot: usize) -> bool {
        let Some(c) = self.conns[slot].as_mut() else {
            return false;
        };
        if let Some(ex) = c.ex.as_mut().filter(|ex| !ex.outgoing.is_empty()) {
            // A conversation's reply, sent as a request is.
            let out = std::mem::take(&mut ex.outgoing);
            match c.tls.is_some() {
                true => c.plain_out.extend_from_slice(&out),
                false => c.out.extend_from_slice(&out),
            }
        }
        if let Some(port) = c.ex.as_mut().and_then(|ex| ex.data_port.take()) {
            self.open_data(slot, port);
        }
        let decide = self.conns[slot]
            .as_ref()
            .and_then(|c| c.ex.as_ref())
            .is_some_and(|ex| ex.phase == Phase::Decide);
        if decide {
            self.on_head(slot);
        }
        decide
    }

    /// Opens the data connection a conversation asked for, to `port` of its own peer.
    fn open_data(&mut self, slot: usize, port: u16) {
        let Some(c) = self.conns[slot].as_mut() else {
            return;
        };
        let refused = |m: &str| Failure::retry(ExitCode::UNKNOWN, m.to_string());
        let f = match (c.peer, &c.data, &c.control) {
            _ if port == 0 => refused("the server named port 0 for the data connection"),
            (Some(peer), None, None) => {
                let addr = SocketAddr::new(peer.ip(), port);
                let id = c.id;
                self.console.log(
                    LogLevel::Info,
                    &format!("CUID#{id} - Connecting to {addr} for the data"),
                );
                match self.reactor.socket(&addr) {
                    Ok(fd) => {
                        let tag = Tag::DataConnect { slot, id };
                        let op = self.reactor.connect(tag, fd.clone(), addr);
                        if let Some(c) = self.conns[slot].as_mut() {
                            c.data = Some((fd, false));
                            c.inflight.push(op);
                        }
                        return;
                    }
                    Err(e) => refused(&format!("cannot create socket: {e}")),
                }
            }
            (None, _, _) => refused("a data connection asked for through a proxy"),
            _ => refused("a second data connection asked for in one exchange"),
        };
        self.fail_conn(slot, f);
    }

    /// The data connection connected (`res` 0) or failed.
    pub(super) fn on_data_connect(&mut self, slot: usize, res: i32) {
        if res < 0 {
            let f = if res == -libc::ECANCELED {
                Failure::retry(
                    ExitCode::TIMEOUT,
                    "Timeout while opening the data connection",
                )
            } else {
                Failure::retry(
                    ExitCode::UNKNOWN,
                    format!(
                        "Failed to establish the data connection, cause: {}",
                        errno_text(res)
                    ),
                )
            };
            self.fail_conn(slot, f);
            return;
        }
        let Some(c) = self.conns[slot].as_mut() else {
            return;
        };
        if let Some((_, connected)) = c.data.as_mut() {
            *connected = true;
        }
        let Some(ex) = c.ex.as_mut() else { return };
        let Some(conv) = ex.conversation.as_mut() else {
            return;
        };
        let step = conv.data_ready();
        if sink::take_step(ex, 0, step) {
            sink::converse(ex);
        }
        self.conversed(slot);
        self.after_io(slot);
    }

    /// An answer whose bytes come on the data connection: the body moves there, and the
    /// connection the conversation went on is set aside with what it sent after the answer.
    /// False when it cannot (the connection has then failed).
    pub(super) fn move_to_data(&mut self, slot: usize) -> bool {
        let Some(c) = self.conns[slot].as_mut() else {
            return false;
        };
        let why = match (&c.data, c.recv.is_some() || c.sending, c.tls.is_some()) {
            (Some((_, true)), false, false) => None,
            (Some((_, true)), true, _) => Some("the answer came with a receive in flight"),
            (Some((_, true)), _, true) => Some("a data connection under TLS is not built yet"),
            _ => Some("the answer came before its data connection"),
        };
        if let Some(why) = why {
            self.fail_conn(slot, Failure::retry(ExitCode::UNKNOWN, why));
            return false;
        }
        let Some((data, _)) = c.data.take() else {
            return false;
        };
        // What came after the answer on the control connection is not the body's (FTP: the
        // transfer's last reply, unread since the connection is not reused); the read block's
        // bytes were all the conversation's (fed to it as they came).
        if let Some(ex) = c.ex.as_mut() {
            ex.head_rest.clear();
        }
        c.rb_start = 0;
        c.rb_end = 0;
        if let Some(fd) = c.fd.replace(data) {
            c.control = Some(Parked { fd });
        }
        c.eof = false;
        c.low_water = crate::engine::conn::LowWater::default();
        true
    }
}
