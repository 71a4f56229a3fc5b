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
//!
//! A server whose READY ends in ` upload` asks for bytes the client has, as a BitTorrent peer
//! asks for pieces: the client says what it has (`TOY HAVE first-end ...`, from what the engine
//! claims), the server answers `TOY WANT first len` (or `TOY NOWANT`), and the client sends
//! `TOY BYTES path first len` and the bytes (`Step::Serve`: read back from its file into a block
//! and sent from the pool), or `TOY NOBYTES`; then it goes on as above. The server checks every
//! byte against the file.
//!
//! A server whose READY ends in ` keep` (with a data connection) keeps the conversation's
//! connection after a transfer, as FTP's control connection is kept: it says `TOY DONE` once the
//! bytes are on their way, and takes another `HELLO`. The client leaves the connection for the
//! next exchange (`Conversation::keep`); that one reads the `DONE` first if it was not read.
use crate::engine::job::Failure;
use crate::engine::sources::{Answer, Conversation, Kept, Step};
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
    /// What the download had when the exchange began (the first few ranges).
    have: Vec<(u64, u64)>,
    /// The bytes asked for were not sent: said with the next line.
    refused: bool,
    /// The server keeps the connection after a transfer.
    keeps: bool,
    /// The answer came (the bytes flow), and then the transfer's last line.
    answered: bool,
    done: bool,
    /// On a kept connection: the last transfer's `DONE` is still to come; READY has not come.
    awaiting_done: bool,
    carried: bool,
    ready: bool,
    /// The kept connection was not one of this protocol's.
    foreign: bool,
}

/// What a toy exchange leaves on a kept connection: whether its `DONE` was read.
struct ToyKept {
    done: bool,
}

/// Makes the toy protocol the one for `toy://` URIs on this thread.
pub(super) fn register() {
    crate::engine::sources::add_test_protocol("toy", || Box::<Toy>::default());
}

impl Toy {
    /// After READY (and the server's request for bytes, if any): the bytes' connection, or SEND.
    fn after_ready(&self) -> Step {
        match (self.data, self.active) {
            (_, true) => Step::Listen,
            (true, false) => Step::Send(b"TOY PASV\n".to_vec()),
            (false, _) => Step::Send(self.send_line()),
        }
    }
}

impl Conversation for Toy {
    fn have(&mut self, have: &crate::plan::RangeSet) {
        self.have = have
            .ranges()
            .iter()
            .take(4)
            .map(|r| (r.start, r.end))
            .collect();
    }

    fn served(&mut self, sent: bool) -> Step {
        let next = self.after_ready();
        match (sent, next) {
            (true, next) => next,
            (false, Step::Send(mut line)) => {
                line.splice(0..0, b"TOY NOBYTES\n".iter().copied());
                Step::Send(line)
            }
            // (Listen: the refusal goes with the ACTIVE line, `listening`.)
            (false, next) => {
                self.refused = true;
                next
            }
        }
    }

    fn begin(&mut self, url: &Url, range: Option<(u64, Option<u64>)>) -> Vec<u8> {
        self.path = url.path().to_string();
        self.range = range;
        match self.awaiting_done {
            true => Vec::new(),
            false => self.hello(),
        }
    }

    fn keep(&mut self) -> Option<Kept> {
        (self.keeps && self.answered).then(|| Box::new(ToyKept { done: self.done }) as Kept)
    }

    fn carry_on(&mut self, kept: Kept) {
        match kept.downcast::<ToyKept>() {
            Ok(k) => {
                self.carried = true;
                self.awaiting_done = !k.done;
            }
            Err(_) => self.foreign = true,
        }
    }

    fn stale(&self) -> bool {
        self.foreign || (self.carried && !self.ready)
    }

    fn listening(&mut self, addr: std::net::SocketAddr) -> Step {
        let refused = match std::mem::take(&mut self.refused) {
            true => "TOY NOBYTES\n",
            false => "",
        };
        match self.active {
            true => Step::Send(format!("{refused}TOY ACTIVE {}\n", addr.port()).into_bytes()),
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
        if self.foreign {
            return (0, Step::Fail(bad("a kept connection of another protocol")));
        }
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
            ["TOY", "DONE"] if self.awaiting_done => {
                self.awaiting_done = false;
                Step::Send(self.hello())
            }
            ["TOY", "DONE"] if self.answered && !self.done => {
                self.done = true;
                Step::Wait
            }
            ["TOY", "READY", total, ranges, ref flags @ ..] if !self.awaiting_done => {
                let mode = flags
                    .iter()
                    .filter(|f| !matches!(**f, "upload" | "keep"))
                    .collect::<Vec<_>>();
                let upload = flags.contains(&"upload");
                self.keeps = flags.contains(&"keep");
                self.ready = true;
                match (number(total), &mode[..]) {
                    (Some(t), [] | [&"data"] | [&"active"]) => {
                        self.total = Some(t);
                        self.ranges = ranges == "1";
                        self.data = !mode.is_empty();
                        self.active = mode == [&"active"];
                        match upload {
                            true => {
                                let have: Vec<String> =
                                    self.have.iter().map(|(a, b)| format!("{a}-{b}")).collect();
                                let line = format!("TOY HAVE {}\n", have.join(" "));
                                Step::Send(line.into_bytes())
                            }
                            false => self.after_ready(),
                        }
                    }
                    _ => Step::Fail(bad(&line)),
                }
            }
            ["TOY", "WANT", first, len] => match (number(first), number(len)) {
                (Some(first), Some(len)) => Step::Serve {
                    header: format!("TOY BYTES {} {first} {len}\n", self.path).into_bytes(),
                    first,
                    len: len as usize,
                },
                _ => Step::Fail(bad(&line)),
            },
            ["TOY", "NOWANT"] => self.after_ready(),
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
                        wrapped: false,
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
        if matches!(step, Step::Answer(_)) {
            self.answered = true;
        }
        (used, step)
    }
}

impl Toy {
    fn hello(&self) -> Vec<u8> {
        format!("TOY HELLO {}\n", self.path).into_bytes()
    }

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
    fn a_server_asking_for_bytes_is_told_what_the_client_has_and_served() {
        let mut t = Toy::default();
        let url = Url::parse("toy://127.0.0.1:1/f").expect("a URL");
        let mut have = crate::plan::RangeSet::default();
        have.insert(0..100);
        have.insert(200..300);
        t.have(&have);
        t.begin(&url, Some((300, None)));
        match t.received(b"TOY READY 500 1 upload\n") {
            (_, Step::Send(b)) => assert_eq!(b, b"TOY HAVE 0-100 200-300\n"),
            other => panic!("{other:?}"),
        }
        match t.received(b"TOY WANT 200 50\n") {
            (_, Step::Serve { header, first, len }) => {
                assert_eq!(
                    (header, first, len),
                    (b"TOY BYTES /f 200 50\n".to_vec(), 200, 50)
                );
            }
            other => panic!("{other:?}"),
        }
        match t.served(true) {
            Step::Send(b) => assert_eq!(b, b"TOY SEND /f 300 -\n"),
            other => panic!("{other:?}"),
        }
        match t.served(false) {
            Step::Send(b) => assert_eq!(b, b"TOY NOBYTES\nTOY SEND /f 300 -\n"),
            other => panic!("{other:?}"),
        }
        let mut t = Toy::default();
        t.begin(&url, None);
        assert!(matches!(
            t.received(b"TOY READY 5 1 active upload\n"),
            (_, Step::Send(_))
        ));
        assert!(matches!(t.received(b"TOY NOWANT\n"), (_, Step::Listen)));
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
