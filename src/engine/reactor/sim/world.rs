//! The world the simulated reactor stands in for: its random draws, the servers' routes and
//! framings, the faults a seed drew, and what the run did (requests, steps, fault counts).
use super::*;

/// A small seeded generator (SplitMix64).
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A number in `0..n` (0 when `n` is 0).
    pub fn below(&mut self, n: u64) -> u64 {
        if n == 0 {
            0
        } else {
            self.next_u64() % n
        }
    }

    /// True with probability `per_mille`/1000.
    pub fn chance(&mut self, per_mille: u32) -> bool {
        self.below(1000) < u64::from(per_mille)
    }
}

/// How a file's body is framed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Framing {
    Length,
    Chunked,
    UntilClose,
}

/// What a server answers for one path.
#[derive(Debug, Clone)]
pub enum Route {
    File {
        data: Rc<Vec<u8>>,
        etag: String,
        ranges: bool,
        framing: Framing,
    },
    /// 302 to this absolute URL.
    Redirect(String),
    /// This status, empty body.
    Status(u16),
}

/// The faults a run is subjected to, each a rate in per mille unless said otherwise.
#[derive(Debug, Clone, Default)]
pub struct Faults {
    /// Largest receive the network delivers at once (0: as much as asked).
    pub max_chunk: usize,
    /// A receive or send completes with EAGAIN or EINTR instead.
    pub again: u32,
    /// A response's connection is reset part-way through its body.
    pub reset: u32,
    /// A response stops part-way through its body, the connection left open (a timeout).
    pub stall: u32,
    /// A write is short.
    pub short_write: u32,
    /// An uncached write fails with EOPNOTSUPP (a kernel or file system without `RWF_DONTCACHE`).
    pub uncached_refused: u32,
    /// A writeback of pages written through the cache fails (an I/O error after the write
    /// returned), and what it was writing back is lost.
    pub writeback_error: u32,
    /// A write fails with `write_errno`.
    pub write_error: u32,
    pub write_errno: i32,
    /// Completions that are ready come out in a random order, some held back a step.
    pub reorder: bool,
    /// The run is killed when it reaches this step.
    pub kill_at: Option<u64>,
    /// The kill comes after the kernel has carried out what was ready at that step (writes land
    /// in the file), before the process sees any of it.
    pub kill_late: bool,
    /// Every file write takes this long (a slow disk): it may land after the engine has moved on
    /// (a reconnect, a new file).
    pub write_time: Duration,
    /// Ctrl-C arrives (on the descriptor from [`signal_fd`]) at these steps, in order.
    pub interrupts: Vec<u64>,
    /// Every read of the signal descriptor fails at once (EBADF).
    pub signal_fd_fails: bool,
    /// Every received byte takes this long (0: no time at all): a link of a given rate, so that
    /// the engine measures rates and sets low-water marks as on a real one.
    pub ns_per_byte: u64,
    /// Every response with a longer body stops after this many body bytes, the connection left
    /// open (a stall at a chosen place, where `stall` draws one).
    pub stall_after: Option<usize>,
    /// A file job (creating the file, saving or removing a control file, cutting the file) fails
    /// at its first file-system step with `job_errno`.
    pub job_errors: u32,
    pub job_errno: i32,
    /// A kill is a power loss too: every data write no `fdatasync` made durable is undone (its
    /// bytes and the file's length as they were before it).
    pub power_loss: bool,
    /// The run is killed in the wait for its last file jobs after the loop ended, before the
    /// job of this number (0: the first).
    pub kill_in_shutdown: Option<u32>,
    /// What the servers do wrong (see [`ServerFaults`]).
    pub server: ServerFaults,
    /// A read of a file back (to verify it) fails with EIO.
    pub read_error: u32,
    /// A write through the page cache (a file without `O_DIRECT`) is short by any number of bytes.
    pub odd_writes: u32,
    /// A datagram sent is lost on the way (per mille), as UDP may lose it.
    pub datagram_loss: u32,
}

/// Servers that misbehave, each a rate in per mille of responses.
#[derive(Clone, Default)]
pub struct ServerFaults {
    /// A whole response more after the body, nobody having asked for it.
    pub excess: u32,
    /// The connection closed (a FIN, no reset) part-way through the body.
    pub fin: u32,
    /// `100 Continue` and `103 Early Hints` heads before the response's.
    pub informational: u32,
    /// A range answered with its first part only (a correct, shorter `Content-Range`).
    pub short_range: u32,
    /// The connection closed once the response is sent, though it said nothing of it.
    pub idle_close: u32,
    /// After this many requests, every origin serves `changed_to` (ETag `"v2"`), and answers
    /// ranges whatever `If-Range` says.
    pub change_after: Option<usize>,
    pub changed_to: Option<Rc<Vec<u8>>>,
    /// A toy server's data port takes no connection (`World::toy_data`).
    pub no_data_port: u32,
}

impl std::fmt::Debug for ServerFaults {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerFaults")
            .field("excess", &self.excess)
            .field("fin", &self.fin)
            .field("informational", &self.informational)
            .field("short_range", &self.short_range)
            .field("idle_close", &self.idle_close)
            .field("no_data_port", &self.no_data_port)
            .field("change_after", &self.change_after)
            .field("changed_to_len", &self.changed_to.as_ref().map(|v| v.len()))
            .finish()
    }
}

/// How a run on the simulated reactor ended, when not by the engine's own choice.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Stop {
    Killed,
    /// Nothing in flight could ever complete, or virtual time ran past the limit: a hang.
    Hung(String),
}

/// The servers and what happened: shared between the reactor (which the engine owns) and the
/// test that reads it afterwards.
/// A simulated UDP server: the datagrams it answers one from a peer with (none: it stays silent).
pub type UdpServer = Box<dyn FnMut(SocketAddr, &[u8]) -> Vec<Vec<u8>>>;

#[derive(Default)]
pub struct World {
    /// UDP servers by address (trackers, DHT nodes, DNS servers to come).
    pub udp_servers: HashMap<SocketAddr, UdpServer>,
    pub servers: HashMap<SocketAddr, HashMap<String, Route>>,
    /// Addresses that accept no connection and refuse nothing (connects time out).
    pub blackholes: Vec<SocketAddr>,
    pub faults: Faults,
    pub stop: Option<Stop>,
    /// Requests served, as (address, request line, range header).
    pub requests: Vec<(SocketAddr, String, Option<String>)>,
    pub steps: u64,
    /// Operations (other than timers) the engine left in flight when its run ended.
    pub left_in_flight: usize,
    /// File reads done (`--checksum` reading back what was not hashed as it was written).
    pub file_reads: u64,
    /// Receive low-water marks above the default set on sockets.
    pub low_water_marks: u64,
    /// TLS close_notify alerts the engine sent its servers before closing connections.
    pub client_close_notifies: u64,
    /// Virtual time at the last completion.
    pub elapsed: Duration,
    /// The longest a connection had bytes to read and no receive asking for them (what a server
    /// sees as a client not reading; servers give up on such a connection after a while).
    pub longest_unread: Duration,
    /// RPC clients (daemon mode): each connects once the run has taken its step and sends its
    /// bytes, in order; `rpc_answers` gets what the engine sent back on each connection.
    pub rpc_calls: std::collections::VecDeque<(u64, Vec<u8>)>,
    pub rpc_answers: Vec<Vec<u8>>,
    /// How often each fault class fired, by name.
    pub fired: std::collections::BTreeMap<&'static str, u64>,
    /// Every server speaks TLS with this configuration (through rustls, to the engine's own
    /// record layer).
    pub tls: Option<crate::tls::server::ServerTlsConfig>,
    /// Toy servers send the file's bytes on a data connection the client opens to a port they
    /// name (as FTP's passive mode), not on the conversation's own.
    pub toy_data: bool,
    /// ... or on one they open to a port the client names (as FTP's active mode).
    pub toy_active: bool,
    /// ... and keep the conversation's connection after a transfer (as FTP's control
    /// connection): `TOY DONE` once the bytes are on their way, then another `HELLO` is taken.
    pub toy_keep: bool,
    /// Toy servers ask the client for bytes it says it has (`TOY HAVE` → `TOY WANT`), as a
    /// BitTorrent peer asks for pieces, and check what comes.
    pub toy_upload: bool,
    /// Bytes clients sent that way, and what was wrong with any: checked against `truth` (the
    /// source's bytes, which a corrupt mirror does not serve), else the server's own file.
    pub truth: Option<Rc<Vec<u8>>>,
    pub uploaded: u64,
    pub upload_errors: Vec<String>,
}

impl World {
    pub(super) fn fire(&mut self, class: &'static str) {
        *self.fired.entry(class).or_default() += 1;
    }
}

/// A data write not yet made durable: what a power loss undoes.
pub(super) struct Volatile {
    pub(super) file: std::fs::File,
    pub(super) inode: (u64, u64),
    pub(super) offset: u64,
    pub(super) old: Vec<u8>,
    pub(super) old_len: u64,
    /// How many bytes the write wrote.
    pub(super) len: u64,
    /// Still only in the page cache: a buffered write no writeback or sync has covered (a
    /// direct write reached the device when it completed).
    pub(super) dirty: bool,
}
