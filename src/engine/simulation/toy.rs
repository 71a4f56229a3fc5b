//! A toy protocol, tests only, that proves the engine does not assume HTTP: `toy://HOST:PORT/PATH`
//! comes in through `sources::Conversation` as any protocol other than HTTP would, and the
//! simulation's seeds run it through the same faults, kills, control files, resumes and piece
//! checks as HTTP (`Scenario::toy`). Its server side is the simulated reactor's (`serve_toy`).
//!
//! A two-step conversation, one line each way per step: `TOY HELLO path` → `TOY READY total
//! ranges(0|1)` (or `TOY NOTFOUND`, `TOY BUSY`); then `TOY SEND path first end|-` → `TOY DATA
//! first len|-` and the bytes (to the server's close for `-`).
//!
//! A server that sends its bytes on a second connection (as FTP's passive mode does) says
//! `TOY READY total ranges data`; the client asks `TOY PASV` → `TOY PORT p`, opens a data
//! connection to that port (`Step::Data`), and sends `SEND` once it is connected; the `DATA`
//! line then comes on the conversation's connection and the bytes on the data connection.
//! One that says `TOY READY total ranges active` connects to the client instead (as FTP's active
//! mode): the client listens (`Step::Listen`), says `TOY ACTIVE port` → `TOY OK`, then `SEND`.
use crate::engine::job::Failure;
use crate::engine::sources::{Answer, Conversation, Step};
use crate::engine::ExitCode;
use crate::http::Framing;
use url::Url;

/// The longest line a toy server may send before its answer.
const MAX_LINE: usize = 256;

#[derive(Default)]
pub(super) struct Toy {
    path: String,
    range: Option<(u64, Option<u64>)>,
    total: Option<u64>,
    ranges: bool,
    /// The server sends the bytes on a data connection.
    data: bool,
    /// ... which it opens to the client.
    active: bool,
}

/// Makes the toy protocol the one for `toy://` URIs on this thread.
pub(super) fn register() {
    crate::engine::sources::add_test_protocol("toy", || Box::<Toy>::default());
}

impl Conversation for Toy {
    fn begin(&mut self, url: &Url, range: Option<(u64, Option<u64>)>) -> Vec<u8> {
        self.path = url.path().to_string();
        self.range = range;
        format!("TOY HELLO {}\n", self.path).into_bytes()
    }

    fn listening(&mut self, addr: std::net::SocketAddr) -> Step {
        match self.active {
            true => Step::Send(format!("TOY ACTIVE {}\n", addr.port()).into_bytes()),
            false => Step::Fail(bad("a listening socket nobody asked for")),
        }
    }

    fn data_ready(&mut self) -> Step {
        match self.data {
            true => Step::Send(self.send_line()),
            false => Step::Fail(bad("a data connection nobody asked for")),
        }
    }

    fn received(&mut self, bytes: &[u8]) -> (usize, Step) {
        let Some(nl) = bytes.iter().position(|&b| b == b'\n') else {
            return match bytes.len() > MAX_LINE {
                true => (0, Step::Fail(bad("a line that does not end"))),
                false => (0, Step::Wait),
            };
        };
        let line = String::from_utf8_lossy(&bytes[..nl]).into_owned();
        let used = nl + 1;
        let words: Vec<&str> = line.split(' ').collect();
        let number = |w: &str| w.parse::<u64>().ok();
        let step = match words[..] {
            ["TOY", "READY", total, ranges, ref data @ ..] if data.len() <= 1 => {
                match (number(total), data) {
                    (Some(t), [] | ["data"] | ["active"]) => {
                        self.total = Some(t);
                        self.ranges = ranges == "1";
                        self.data = !data.is_empty();
                        self.active = data == ["active"];
                        match (self.data, self.active) {
                            (_, true) => Step::Listen,
                            (true, false) => Step::Send(b"TOY PASV\n".to_vec()),
                            (false, _) => Step::Send(self.send_line()),
                        }
                    }
                    _ => Step::Fail(bad(&line)),
                }
            }
            ["TOY", "PORT", port] if self.data => match port.parse::<u16>() {
                Ok(p) => Step::Data(p),
                Err(_) => Step::Fail(bad(&line)),
            },
            ["TOY", "NODATA"] => Step::Fail(bad("no data connection")),
            ["TOY", "OK"] if self.active => Step::Send(self.send_line()),
            ["TOY", "DATA", first, len] => {
                let framing = match len {
                    "-" => Some(Framing::UntilClose),
                    n => number(n).map(Framing::Length),
                };
                match (number(first), framing) {
                    (Some(first), Some(framing)) => Step::Answer(Answer {
                        total: self.total,
                        first,
                        framing,
                        ranges: self.ranges,
                        name: None,
                        keep_alive: false,
                        on_data: self.data,
                        modified: None,
                    }),
                    _ => Step::Fail(bad(&line)),
                }
            }
            ["TOY", "NOTFOUND"] => Step::Fail(Failure::retry(
                ExitCode::NOT_FOUND,
                "Resource not found (toy)".to_string(),
            )),
            ["TOY", "BUSY"] => Step::Fail(Failure::retry(
                ExitCode(22),
                "The server is busy (toy)".to_string(),
            )),
            _ => Step::Fail(bad(&line)),
        };
        (used, step)
    }
}

impl Toy {
    /// The line asking for the range.
    fn send_line(&self) -> Vec<u8> {
        let (first, end) = match self.range {
            None => (0, None),
            Some((f, last)) => (f, last.map(|l| l + 1)),
        };
        let end = end.map_or("-".to_string(), |e| e.to_string());
        format!("TOY SEND {} {first} {end}\n", self.path).into_bytes()
    }
}

fn bad(what: &str) -> Failure {
    Failure::retry(ExitCode::UNKNOWN, format!("not a toy answer: {what:?}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_conversation_goes_hello_ready_send_data() {
        let mut t = Toy::default();
        let url = Url::parse("toy://127.0.0.1:1/d/f.bin").expect("a URL");
        assert_eq!(t.begin(&url, Some((10, Some(19)))), b"TOY HELLO /d/f.bin\n");
        assert!(matches!(t.received(b"TOY REA"), (0, Step::Wait)));
        match t.received(b"TOY READY 100 1\nTOY") {
            (16, Step::Send(b)) => assert_eq!(b, b"TOY SEND /d/f.bin 10 20\n"),
            other => panic!("{other:?}"),
        }
        match t.received(b"TOY DATA 10 10\n0123456789") {
            (15, Step::Answer(a)) => {
                assert_eq!(
                    (a.total, a.first, a.framing),
                    (Some(100), 10, Framing::Length(10))
                );
                assert!(a.ranges && !a.keep_alive);
            }
            other => panic!("{other:?}"),
        }
        assert!(matches!(t.received(b"TOY DATA x 1\n"), (13, Step::Fail(_))));
        assert!(matches!(t.received(&[b'a'; 300]), (0, Step::Fail(_))));
    }

    #[test]
    fn a_server_with_a_data_connection_is_asked_for_its_port_first() {
        let mut t = Toy::default();
        let url = Url::parse("toy://127.0.0.1:1/f").expect("a URL");
        t.begin(&url, None);
        match t.received(b"TOY READY 5 0 data\n") {
            (_, Step::Send(b)) => assert_eq!(b, b"TOY PASV\n"),
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            t.received(b"TOY PORT 4242\n"),
            (_, Step::Data(4242))
        ));
        match t.data_ready() {
            Step::Send(b) => assert_eq!(b, b"TOY SEND /f 0 -\n"),
            other => panic!("{other:?}"),
        }
        match t.received(b"TOY DATA 0 5\n") {
            (_, Step::Answer(a)) => assert!(a.on_data),
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            t.received(b"TOY PORT 99999\n"),
            (_, Step::Fail(_))
        ));

        let mut t = Toy::default();
        t.begin(&url, Some((2, None)));
        assert!(matches!(
            t.received(b"TOY READY 5 1 active\n"),
            (_, Step::Listen)
        ));
        let at: std::net::SocketAddr = "10.0.0.1:45001".parse().expect("an address");
        match t.listening(at) {
            Step::Send(b) => assert_eq!(b, b"TOY ACTIVE 45001\n"),
            other => panic!("{other:?}"),
        }
        match t.received(b"TOY OK\n") {
            (_, Step::Send(b)) => assert_eq!(b, b"TOY SEND /f 2 -\n"),
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            t.received(b"TOY READY 5 0 x\n"),
            (_, Step::Fail(_))
        ));
    }
}
