//! The differential harness: one [`Case`] (plain data) is run by `aria2c` and by `ringdl`, each in
//! a fresh directory with a private HOME and against a fresh but identical server, and the two
//! runs are compared: exit codes, the files left behind (names and SHA-256, nothing stray), the
//! shape of stdout and stderr (see [`Cmp`] and `normalize.rs`), and where a case asks, the request
//! headers the server received and the number of connections.
//!
//! Where ringdl differs from aria2c on purpose, the case lists the documented difference's id
//! (`known`, see KNOWN_DIFFERENCES.md) and its mechanics ([`Diff`]); it still asserts ringdl's side
//! of it and everything else that agrees.
//!
//! Environment:
//! * `RINGDL_REQUIRE_PEERS=1`: a missing aria2c (or nginx) fails the case instead of skipping.
//! * `RINGDL_COMPAT_VERBOSE=1`: print the full report of passing cases too.
//! * `RINGDL_COMPAT_SELF_CHECK=1`: run aria2c on both sides, without the documented differences:
//!   checks that the normalisation hides everything that varies from run to run.

use std::collections::BTreeMap;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use super::normalize::{self, Context, Event, Events};
use crate::support::ftp::{FtpServer, PASSWORD, USER};
use crate::support::nginx::Nginx;
use crate::support::server::{Fault, Location, RequestRecord, Route, TestServer, When};
use crate::support::sshd::Sshd;
use crate::support::{self, TestDir};

/// How long one run may take before it is killed (and the case fails as a hang).
const RUN_DEADLINE: Duration = Duration::from_secs(30);

/// Which server the case's `{url}` points at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Srv {
    /// No server (parse errors, help).
    None,
    /// The in-repo test server, plain HTTP.
    Plain,
    /// The in-repo test server, HTTPS with a certificate for 127.0.0.1 (`{ca}` is its CA).
    Tls,
    /// HTTPS with a certificate (signed by `{ca}`) only for `wrong-host.invalid`.
    TlsWrongHost,
    /// A private nginx serving the case's `R::File` routes: `{url}` plain, `{surl}` HTTPS,
    /// `{ca}` its CA.
    Nginx,
    /// vsftpd serving the case's `R::File` routes to anonymous users at `{ftp}`
    /// (`ftp://127.0.0.1:PORT`), beside the test server serving them at `{url}`.
    Ftp,
    /// pure-ftpd serving them to one user: `{ftp}` without the login, `{ftpu}` with it in the
    /// URI, `{ftpuser}` and `{ftppass}` for the options; the test server at `{url}`.
    FtpLogin,
    /// OpenSSH's sshd with the case's `R::File` routes under a root of its own (`{ROOT}` in the
    /// output): `{sftp}` is `sftp://127.0.0.1:PORT/ROOT`, `{sshuser}` and `{sshpass}` the password
    /// user's login for `--ftp-user`/`--ftp-passwd`, `{sshmd}` the `md5=` digest of its ECDSA
    /// host key (for `--ssh-host-key-md`); the test server at `{url}`.
    Sftp,
}

/// A modifier of a served file (see `support::server::Route`).
#[derive(Debug, Clone, Copy)]
#[allow(dead_code)]
pub enum M {
    Chunked,
    /// 200 with the whole body for Range requests.
    NoRanges,
    /// Like `NoRanges`, with `Accept-Ranges: none`.
    RangesNone,
    /// No Content-Length; the body ends with the connection.
    CloseDelimited,
    /// `piece` bytes, then `ms` milliseconds of pause.
    Throttle(usize, u64),
    /// The response head held back this many milliseconds (orders answers that race).
    DelayHead(u64),
    Disposition(&'static str),
    Header(&'static str, &'static str),
    Fault(Fault, When),
    /// The body gzip-compressed, with `Content-Encoding: gzip`.
    Gzip,
    /// The byte at this offset served wrong (a mirror with a corrupt piece).
    Corrupt(usize),
}

/// One route of the server. File contents are pseudo-random bytes seeded by the path, so both
/// runs are served the same bytes.
#[derive(Debug, Clone, Copy)]
pub enum R {
    /// `path`, `len` bytes.
    File(&'static str, usize),
    /// The same with modifiers.
    FileWith(&'static str, usize, &'static [M]),
    /// `path` answers `status` with a short text body.
    Status(&'static str, u16),
    /// `path` answers `status` with `Location: loc` (`{url}` substituted).
    Redirect(&'static str, u16, &'static str),
    /// `path` serves the same `len` bytes as `like` does (a mirror).
    Copy(&'static str, &'static str, usize),
    /// The same with modifiers (a mirror that, say, ignores ranges).
    CopyWith(&'static str, &'static str, usize, &'static [M]),
    /// `hops` redirects `/name/0` → `/name/1` → ... → `target` (relative Locations).
    Chain(&'static str, usize, &'static str),
    /// `path` serves `text` with the case's placeholders substituted (a Metalink document),
    /// with modifiers (a `Content-Type`).
    Doc(&'static str, &'static str, &'static [M]),
}

/// A file created in the run's directory (or under HOME with a `~/` prefix) before the run.
/// Text has the placeholders substituted.
#[derive(Debug, Clone, Copy)]
pub enum Pre {
    Text(&'static str, &'static str),
    /// A text file only its owner may read and write (mode 600).
    Private(&'static str, &'static str),
    /// `len` pseudo-random bytes (seeded by the name).
    Bytes(&'static str, usize),
    Dir(&'static str),
    /// A named pipe that gives the text once to whoever opens it (as `-i <(echo URL)` does).
    Fifo(&'static str, &'static str),
    /// An executable file (a hook script).
    Script(&'static str, &'static str),
    /// What the program reads on its standard input (else it is closed).
    Stdin(&'static str),
}

/// How the output is compared (exit codes and files are always compared).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cmp {
    /// The whole normalised stdout and stderr.
    Exact,
    /// Parse errors: every line of stdout and stderr, with option help blocks reduced to the
    /// option names and `Default:` (the description is each program's own prose).
    ParseError,
    /// Meaningful lines in order: log lines (level + text; a folded error trace may be followed
    /// by more detail), results table, legend, resume hint, others. Readouts and summaries are
    /// ignored (they depend on timing).
    Events,
    /// The same as a multiset: concurrent downloads finish in any order.
    EventsAnyOrder,
    /// `Events`, and also whether readout lines and progress summaries appeared at all.
    Progress,
    /// `-h` and friends: the first line, `Printing options...`, listed option names + defaults.
    Help,
    /// `-v`: the first line, `PROG version V`.
    Version,
    /// Exit code and files only.
    Nothing,
}

/// The mechanics of a documented difference (the case's `known` ids name the documentation).
#[derive(Debug, Clone, Copy)]
pub enum Diff {
    /// aria2c is run with these arguments instead (placeholders allowed): ringdl accepts the
    /// case's command line and must behave as aria2c does with these.
    Aria2Args(&'static [&'static str]),
    /// In aria2c's normalised output, `from` becomes `to` before comparing.
    Rewrite(&'static str, &'static str),
    /// ringdl prints one WARN log line mentioning this word (case-insensitive) that aria2c does
    /// not print; it is checked and then left out of the comparison.
    ExtraWarning(&'static str),
    /// The same for a NOTICE line (a host key added to known_hosts).
    ExtraNotice(&'static str),
    /// ringdl's own outcome, not compared with aria2c's: this exit code, exactly one output line
    /// mentioning `line` (case-insensitive) and, when `sole`, no other output line at all; no
    /// file created when `no_files`. From aria2c only "the command line was accepted" is
    /// compared (no exit 28, no "unrecognized option").
    Own {
        exit: i32,
        line: &'static str,
        no_files: bool,
        sole: bool,
    },
    /// ringdl writes this line first in this file (relative to the run's directory); aria2c's file
    /// gets it too before the files are compared.
    FirstLine(&'static str, &'static str),
    /// aria2c's log lines containing this text are not expected from ringdl (it does not do
    /// what they report).
    Aria2Only(&'static str),
    /// aria2c does not exit by itself (e.g. it keeps serving RPC): it is stopped after this many
    /// milliseconds, and its outcome is "still running".
    Aria2Runs(u64),
    /// Both outputs are compared only up to the first line containing this text (what follows it
    /// is a documented difference, e.g. the "Did you mean" list).
    CutFrom(&'static str),
    /// aria2c leaves this file empty where ringdl leaves nothing (an FTP file not found): checked,
    /// then left out of the comparison.
    Aria2Empty(&'static str),
}

/// One differential case. Placeholders in `args` and `Pre::Text`: `{url}` (the server, no
/// trailing slash), `{surl}` (nginx's HTTPS), `{ca}` (CA file), `{dir}` (the run's directory, also
/// its working directory), `{authority}` (the test server's `127.0.0.1:PORT`, e.g. to use it as
/// an HTTP proxy: it serves absolute-form targets by their path), `{home}`, `{refused}` (`http://127.0.0.1:PORT` where nothing listens),
/// `{rftp}` (the same port as `ftp://`), `{sha256_N}` (the SHA-256 of the Nth `R::File` route,
/// for Metalinks), `{pieces_N}` (a Metalink `<pieces>` element of its SHA-256 digests per
/// 256 KiB).
#[derive(Debug, Clone, Copy)]
pub struct Case {
    pub args: &'static [&'static str],
    pub server: Srv,
    pub routes: &'static [R],
    pub pre: &'static [Pre],
    pub cmp: Cmp,
    /// Request headers to compare (the set of distinct `METHOD path | Header: value ...` lines
    /// the server saw). Empty: requests are not compared.
    pub req_headers: &'static [&'static str],
    /// Compare how many TCP connections the server accepted.
    pub conns: bool,
    /// Log lines containing one of these come and go with timing (e.g. how many segment
    /// connections were opened before the first one finished): each is compared as "printed at
    /// least once", not counted or ordered.
    pub vary: &'static [&'static str],
    /// Keep colour escapes (shown as `<ESC>`) instead of stripping them.
    pub colour: bool,
    /// Ids of KNOWN_DIFFERENCES.md sections this case shows.
    pub known: &'static [&'static str],
    pub diffs: &'static [Diff],
    /// `Srv::Nginx`: configuration pasted into its `server { }` blocks (a `location` adding
    /// headers; `{sha256b64_N}` is the base64 SHA-256 of the Nth `R::File` route).
    pub nginx: &'static str,
}

impl Case {
    pub const DEFAULT: Case = Case {
        args: &[],
        server: Srv::Plain,
        routes: &[],
        pre: &[],
        cmp: Cmp::Events,
        req_headers: &[],
        conns: false,
        vary: &[],
        colour: false,
        known: &[],
        diffs: &[],
        nginx: "",
    };
}

/// Every case is a `#[test]` and an entry of `CASES` (for the suite's own invariants).
macro_rules! cases {
    ($($name:ident = $case:expr;)*) => {
        $(
            #[test]
            fn $name() {
                const CASE: $crate::compat::harness::Case = $case;
                $crate::compat::harness::run(stringify!($name), &CASE);
            }
        )*
        #[allow(dead_code)]
        pub const CASES: &[(&str, $crate::compat::harness::Case)] = &[$((stringify!($name), $case),)*];
    };
}

/// One program's run of a case.
#[derive(Debug)]
struct Side {
    label: &'static str,
    program: PathBuf,
    args: Vec<String>,
    dir: PathBuf,
    status: Option<i32>,
    /// Still running at its stop time (`Diff::Aria2Runs`), then killed.
    stopped: bool,
    elapsed: Duration,
    stdout: String,
    stderr: String,
    /// Relative path → `len sha256` (directories as `path/` → `dir`).
    files: BTreeMap<String, String>,
    pre_files: BTreeMap<String, String>,
    requests: Vec<String>,
    connections: Option<u64>,
    /// Connections on which no request arrived.
    idle_connections: Option<u64>,
    /// Connections whose every request repeats one (method, path, Range) already made on an
    /// earlier connection.
    repeat_connections: Option<u64>,
}

/// Runs `case` with both programs and panics with a full report if they disagree.
pub fn run(name: &str, case: &Case) {
    if !support::require_peer("aria2c", support::have_program("aria2c")) {
        return;
    }
    if matches!(case.server, Srv::Ftp | Srv::FtpLogin) {
        // A missing server skips loudly (or fails under RINGDL_REQUIRE_PEERS=1).
        let root = TestDir::new();
        let server = match case.server {
            Srv::Ftp => FtpServer::vsftpd(root.path()),
            _ => FtpServer::pure_ftpd(root.path()),
        };
        if server.is_none() {
            return;
        }
    }
    if case.server == Srv::Sftp && Sshd::start(&[], &[]).is_none() {
        return;
    }
    if case.server == Srv::Nginx && !have_nginx() {
        // Nginx::start prints the loud SKIPPED line (or panics under RINGDL_REQUIRE_PEERS=1).
        let _ = Nginx::start(Path::new("/nonexistent"));
        return;
    }
    let self_check = std::env::var("RINGDL_COMPAT_SELF_CHECK").as_deref() == Ok("1");
    let diffs: Vec<Diff> = if self_check {
        case.diffs
            .iter()
            .copied()
            .filter(|d| matches!(d, Diff::Aria2Runs(_)))
            .collect()
    } else {
        let mut d = case.diffs.to_vec();
        d.extend(
            GLOBAL_REWRITES
                .iter()
                .map(|(from, to)| Diff::Rewrite(from, to)),
        );
        d
    };
    let aria2_args: &[&str] = diffs
        .iter()
        .find_map(|d| match d {
            Diff::Aria2Args(a) => Some(*a),
            _ => None,
        })
        .unwrap_or(case.args);
    let aria2_stop = diffs.iter().find_map(|d| match d {
        Diff::Aria2Runs(ms) => Some(Duration::from_millis(*ms)),
        _ => None,
    });
    if self_check && diffs_have_own(case.diffs) {
        eprintln!("{name}: self-check skips a case whose ringdl outcome is its own");
        return;
    }
    let aria2c = which("aria2c");
    let ours = if self_check {
        aria2c.clone()
    } else {
        PathBuf::from(env!("CARGO_BIN_EXE_ringdl"))
    };
    let ours_stop = if self_check { aria2_stop } else { None };
    let (a, b) = thread::scope(|s| {
        let a = s.spawn(|| run_side("aria2c", &aria2c, case, &diffs, aria2_args, aria2_stop));
        let b = s.spawn(|| run_side("ringdl", &ours, case, &diffs, case.args, ours_stop));
        (
            a.join().expect("aria2c side"),
            b.join().expect("ringdl side"),
        )
    });
    let mismatches = compare(case, &diffs, self_check, &a, &b);
    let verbose = std::env::var("RINGDL_COMPAT_VERBOSE").as_deref() == Ok("1");
    if !mismatches.is_empty() || verbose {
        let report = report(name, case, &mismatches, &a, &b);
        if mismatches.is_empty() {
            eprintln!("{report}");
        } else {
            panic!("{report}");
        }
    }
}

/// How many connections carried only requests that repeat (same method, path and `Range`) a
/// request the server had already received, in arrival order.
fn repeat_connections(requests: &[RequestRecord]) -> u64 {
    let mut seen = std::collections::HashSet::new();
    let mut used = std::collections::BTreeSet::new();
    let mut new_work = std::collections::BTreeSet::new();
    for r in requests {
        used.insert(r.conn);
        if seen.insert((&r.method, &r.path, r.header("Range"))) {
            new_work.insert(r.conn);
        }
    }
    used.difference(&new_work).count() as u64
}

fn diffs_have_own(diffs: &[Diff]) -> bool {
    diffs.iter().any(|d| matches!(d, Diff::Own { .. }))
}

fn have_nginx() -> bool {
    std::env::var_os("RINGDL_NGINX").is_some()
        || support::have_program("nginx")
        || Path::new("/usr/sbin/nginx").exists()
}

fn which(program: &str) -> PathBuf {
    std::env::var_os("PATH")
        .and_then(|paths| {
            std::env::split_paths(&paths)
                .map(|d| d.join(program))
                .find(|p| p.is_file())
        })
        .unwrap_or_else(|| PathBuf::from(program))
}

/// FNV-1a of the path: the seed of a served file's bytes.
fn seed_of(path: &str) -> u64 {
    path.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// The placeholders of the first plain file routes' SHA-256 digests.
const SHA256_KEYS: [&str; 4] = ["{sha256_0}", "{sha256_1}", "{sha256_2}", "{sha256_3}"];
const PIECES_KEYS: [&str; 4] = ["{pieces_0}", "{pieces_1}", "{pieces_2}", "{pieces_3}"];

/// A Metalink 4 `<pieces>` element: the SHA-256 of each `length` bytes of `bytes`.
fn pieces_element(bytes: &[u8], length: usize) -> String {
    let mut out = format!("<pieces length=\"{length}\" type=\"sha-256\">");
    for piece in bytes.chunks(length) {
        out.push_str(&format!("<hash>{}</hash>", support::sha256_hex(piece)));
    }
    out.push_str("</pieces>");
    out
}

fn file_bytes(path: &str, len: usize) -> Arc<Vec<u8>> {
    Arc::new(support::content(seed_of(path), len))
}

/// A server of either kind, kept alive for the run.
enum Running {
    None,
    Test(TestServer),
    /// The server and its document root (kept until the server is gone).
    Nginx(Nginx, #[allow(dead_code)] TestDir),
    /// The test server, the FTP server and its root, and a `CONNECT` proxy.
    Ftp(
        TestServer,
        #[allow(dead_code)] FtpServer,
        #[allow(dead_code)] TestDir,
        #[allow(dead_code)] crate::support::proxy::TestProxy,
    ),
    /// The test server, sshd and the files' root, and a `CONNECT` proxy.
    Sftp(
        TestServer,
        #[allow(dead_code)] Sshd,
        #[allow(dead_code)] TestDir,
        #[allow(dead_code)] crate::support::proxy::TestProxy,
    ),
}

/// The md5 digest (hex) of the key in an OpenSSH `.pub` line, as `--ssh-host-key-md` takes it.
fn ssh_md5(pub_line: &str) -> String {
    use base64::Engine as _;
    use md5::Digest as _;
    let b64 = pub_line.split_whitespace().nth(1).unwrap_or_default();
    let blob = base64::engine::general_purpose::STANDARD
        .decode(b64)
        .expect("host key");
    md5::Md5::digest(&blob)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

struct Placeholders {
    pairs: Vec<(&'static str, String)>,
}

impl Placeholders {
    fn apply(&self, s: &str) -> String {
        let mut out = s.to_string();
        for (k, v) in &self.pairs {
            out = out.replace(k, v);
        }
        out
    }
}

fn start_server(case: &Case) -> (Running, Vec<(&'static str, String)>, Vec<u16>) {
    match case.server {
        Srv::None => (Running::None, Vec::new(), Vec::new()),
        Srv::Plain | Srv::Tls | Srv::TlsWrongHost => {
            let server = match case.server {
                Srv::Plain => TestServer::plain(),
                Srv::Tls => TestServer::https(),
                _ => TestServer::builder().tls_wrong_host().start(),
            };
            let base = server.url("");
            for r in case.routes {
                mount(&server, r, &base);
            }
            let mut pairs = vec![
                ("{url}", base),
                ("{authority}", format!("127.0.0.1:{}", server.port())),
            ];
            // `{sha256_N}`: the digest of the case's Nth plain file route (a Metalink's hash).
            let files = case.routes.iter().filter_map(|r| match r {
                R::File(path, len) => Some(file_bytes(path, *len)),
                _ => None,
            });
            for (i, bytes) in files.enumerate().take(SHA256_KEYS.len()) {
                pairs.push((SHA256_KEYS[i], support::sha256_hex(&bytes)));
                pairs.push((PIECES_KEYS[i], pieces_element(&bytes, 256 * 1024)));
            }
            // Documents last: they name the others' digests.
            for r in case.routes {
                if let R::Doc(path, text, mods) = r {
                    let mut body = text.to_string();
                    for (k, v) in &pairs {
                        body = body.replace(k, v);
                    }
                    let route = Route::bytes(body.into_bytes());
                    server.route(path, modified(route, mods, &pairs[0].1, ""));
                }
            }
            if server.is_tls() {
                pairs.push(("{ca}", server.ca_file().display().to_string()));
            }
            let port = server.port();
            (Running::Test(server), pairs, vec![port])
        }
        Srv::Nginx => {
            let root = TestDir::new();
            for r in case.routes {
                let (path, like, len) = match r {
                    R::File(path, len) => (path, path, len),
                    R::Copy(path, like, len) => (path, like, len),
                    other => panic!("nginx cases serve plain files only, not {other:?}"),
                };
                let target = root.path().join(path.trim_start_matches('/'));
                if let Some(parent) = target.parent() {
                    std::fs::create_dir_all(parent).expect("nginx root subdir");
                }
                std::fs::write(&target, &*file_bytes(like, *len)).expect("nginx file");
            }
            let mut extra = case.nginx.to_string();
            let files = case.routes.iter().filter_map(|r| match r {
                R::File(path, len) => Some(file_bytes(path, *len)),
                _ => None,
            });
            for (i, bytes) in files.enumerate() {
                extra = extra.replace(&format!("{{sha256b64_{i}}}"), &sha256_b64(&bytes));
            }
            let nginx = Nginx::start_with(root.path(), &extra).expect("nginx (checked installed)");
            let pairs = vec![
                (
                    "{url}",
                    nginx.http_url("").trim_end_matches('/').to_string(),
                ),
                (
                    "{surl}",
                    nginx.https_url("").trim_end_matches('/').to_string(),
                ),
                ("{ca}", nginx.ca_path().display().to_string()),
            ];
            let ports = vec![nginx.http_port(), nginx.https_port()];
            (Running::Nginx(nginx, root), pairs, ports)
        }
        Srv::Ftp | Srv::FtpLogin => {
            let (server, base, root) = served_and_rooted(case);
            let ftp = match case.server {
                Srv::Ftp => FtpServer::vsftpd(root.path()),
                _ => FtpServer::pure_ftpd(root.path()),
            }
            .expect("an FTP server (checked installed)");
            let proxy = crate::support::proxy::TestProxy::http_patient();
            let pairs = vec![
                ("{url}", base),
                (
                    "{ftpu}",
                    ftp.url_with_login("").trim_end_matches('/').into(),
                ),
                ("{ftpuser}", USER.to_string()),
                ("{ftppass}", PASSWORD.to_string()),
                ("{ftp}", ftp.url("").trim_end_matches('/').to_string()),
                ("{tunnel}", format!("http://127.0.0.1:{}", proxy.port())),
            ];
            let ports = vec![server.port(), ftp.port()];
            (Running::Ftp(server, ftp, root, proxy), pairs, ports)
        }
        Srv::Sftp => {
            let (server, base, root) = served_and_rooted(case);
            crate::support::ftp::open_up(root.path());
            let sshd = Sshd::start(&[], &[]).expect("sshd (checked installed)");
            let proxy = crate::support::proxy::TestProxy::http_patient();
            let md = ssh_md5(&sshd.host_key("ecdsa"));
            let pairs = vec![
                ("{url}", base),
                ("{sftproot}", root.arg()),
                ("{sshuser}", crate::support::sshd::USER.to_string()),
                ("{sshpass}", crate::support::sshd::PASSWORD.to_string()),
                (
                    "{sftp}",
                    format!("sftp://127.0.0.1:{}{}", sshd.port, root.arg()),
                ),
                ("{sshmd}", format!("md5={md}")),
                ("{tunnel}", format!("http://127.0.0.1:{}", proxy.port())),
            ];
            let ports = vec![server.port(), sshd.port];
            (Running::Sftp(server, sshd, root, proxy), pairs, ports)
        }
    }
}

/// The test server with the case's routes, its base URL, and a directory holding the case's
/// `R::File`s at their paths (the root an FTP or SFTP server serves beside it).
fn served_and_rooted(case: &Case) -> (TestServer, String, TestDir) {
    let server = TestServer::plain();
    let base = server.url("");
    let root = TestDir::new();
    for r in case.routes {
        mount(&server, r, &base);
        if let R::File(path, len) = r {
            let target = root.path().join(path.trim_start_matches('/'));
            if let Some(parent) = target.parent() {
                std::fs::create_dir_all(parent).expect("a directory of the root");
            }
            std::fs::write(&target, &*file_bytes(path, *len)).expect("a file of the root");
        }
    }
    (server, base, root)
}

fn mount(server: &TestServer, r: &R, base: &str) {
    match r {
        R::File(path, len) => {
            server.route(path, Route::bytes(file_bytes(path, *len)));
        }
        R::FileWith(path, len, mods) => {
            let mut bytes = file_bytes(path, *len).to_vec();
            if mods.iter().any(|m| matches!(m, M::Gzip)) {
                let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
                std::io::Write::write_all(&mut e, &bytes).expect("gzip");
                bytes = e.finish().expect("gzip");
            }
            let digest = sha256_b64(&file_bytes(path, *len));
            server.route(path, modified(Route::bytes(bytes), mods, base, &digest));
        }
        R::Copy(path, like, len) => {
            server.route(path, Route::bytes(file_bytes(like, *len)));
        }
        R::CopyWith(path, like, len, mods) => {
            let bytes = file_bytes(like, *len);
            let digest = sha256_b64(&bytes);
            let mut bytes = bytes.to_vec();
            for m in mods.iter() {
                if let M::Corrupt(at) = m {
                    if let Some(b) = bytes.get_mut(*at) {
                        *b ^= 0x5a;
                    }
                }
            }
            server.route(path, modified(Route::bytes(bytes), mods, base, &digest));
        }
        // (Mounted once the placeholders are known: `start_server`.)
        R::Doc(..) => {}
        R::Status(path, status) => {
            server.route(path, Route::status(*status));
        }
        R::Redirect(path, status, loc) => {
            server.route(path, Route::redirect(*status, loc.replace("{url}", base)));
        }
        R::Chain(name, hops, target) => {
            server.redirect_chain(name, *hops, target, Location::Relative);
        }
    }
}

/// The SHA-256 of `bytes` in base64, as a `Digest` header gives it.
fn sha256_b64(bytes: &[u8]) -> String {
    use base64::Engine as _;
    use sha2::Digest as _;
    base64::engine::general_purpose::STANDARD.encode(sha2::Sha256::digest(bytes))
}

/// `route` with `mods`; in a header's value `{url}` is the server and `{sha256b64}` the digest
/// of the route's file.
fn modified(mut route: Route, mods: &[M], base: &str, digest: &str) -> Route {
    for m in mods {
        route = match *m {
            M::Chunked => route.chunked(),
            M::NoRanges => route.no_ranges(),
            M::RangesNone => route.accept_ranges_none(),
            M::CloseDelimited => route.close_delimited(),
            M::Throttle(piece, ms) => route.throttle(piece, Duration::from_millis(ms)),
            M::DelayHead(ms) => route.delay_head(Duration::from_millis(ms)),
            M::Disposition(v) => route.content_disposition(v),
            M::Header(n, v) => {
                route.header(n, &v.replace("{url}", base).replace("{sha256b64}", digest))
            }
            M::Gzip => route.header("Content-Encoding", "gzip"),
            M::Fault(f, w) => route.fault(f, w),
            M::Corrupt(_) => route,
        };
    }
    route
}

fn run_side(
    label: &'static str,
    program: &Path,
    case: &Case,
    diffs: &[Diff],
    args: &[&str],
    stop_after: Option<Duration>,
) -> Side {
    let dir = TestDir::new();
    let home = dir.join(".home");
    std::fs::create_dir_all(&home).expect("HOME");
    let (server, mut pairs, mut ports) = start_server(case);
    let refused = support::ports::port_for_child();
    ports.push(refused);
    pairs.push(("{refused}", format!("http://127.0.0.1:{refused}")));
    pairs.push(("{rftp}", format!("ftp://127.0.0.1:{refused}")));
    pairs.push(("{home}", home.display().to_string()));
    pairs.push(("{dir}", dir.arg()));
    let ph = Placeholders { pairs };

    for p in case.pre {
        let (rel, bytes) = match p {
            Pre::Text(rel, text) | Pre::Private(rel, text) | Pre::Script(rel, text) => {
                (*rel, ph.apply(text).into_bytes())
            }
            Pre::Stdin(text) => (STDIN_FILE, ph.apply(text).into_bytes()),
            Pre::Bytes(rel, len) => (*rel, support::content(seed_of(rel), *len)),
            Pre::Dir(rel) => {
                std::fs::create_dir_all(resolve(&dir, &home, rel)).expect("pre dir");
                continue;
            }
            Pre::Fifo(rel, text) => {
                let target = resolve(&dir, &home, rel);
                let c = std::ffi::CString::new(target.as_os_str().as_encoded_bytes())
                    .expect("fifo path");
                // SAFETY: mkfifo(3) on a NUL-terminated path this function owns.
                let made = unsafe { libc::mkfifo(c.as_ptr(), 0o600) };
                assert_eq!(made, 0, "mkfifo {}", target.display());
                let text = ph.apply(text);
                // Blocks until the program opens it; a program that never does leaves the
                // thread waiting, harmlessly, until the test binary ends.
                thread::spawn(move || {
                    if let Ok(mut f) = std::fs::OpenOptions::new().write(true).open(&target) {
                        let _ = std::io::Write::write_all(&mut f, text.as_bytes());
                    }
                });
                continue;
            }
        };
        let target = resolve(&dir, &home, rel);
        if let Some(parent) = target.parent() {
            std::fs::create_dir_all(parent).expect("pre parent");
        }
        std::fs::write(&target, bytes).expect("pre file");
        if let Pre::Private(..) | Pre::Script(..) = p {
            use std::os::unix::fs::PermissionsExt;
            let mode = if matches!(p, Pre::Script(..)) {
                0o755
            } else {
                0o600
            };
            let mode = std::fs::Permissions::from_mode(mode);
            std::fs::set_permissions(&target, mode).expect("pre file mode");
        }
    }
    let pre_files = list_files(dir.path());
    let args: Vec<String> = args.iter().map(|a| ph.apply(a)).collect();

    let started = Instant::now();
    let (status, stopped, stdout, stderr) = spawn_and_wait(
        program,
        dir.path(),
        &home,
        &args,
        stop_after.unwrap_or(RUN_DEADLINE),
        stop_after.is_some(),
    );
    let elapsed = started.elapsed();
    for d in diffs {
        if let (Diff::FirstLine(rel, line), "aria2c") = (d, label) {
            let path = dir.join(rel);
            if let Ok(body) = std::fs::read(&path) {
                let mut with = format!("{line}\n").into_bytes();
                with.extend(body);
                std::fs::write(&path, with).expect("rewrite aria2c's file");
            }
        }
    }
    // A file the case created that the run left alone is shown as such: its bytes may hold this
    // run's port, so its hash differs between the two runs.
    let files = list_files(dir.path())
        .into_iter()
        .map(|(k, v)| {
            if pre_files.get(&k) == Some(&v) && v != "dir" {
                (k, "created by the case, unchanged".to_string())
            } else {
                (k, v)
            }
        })
        .collect();
    let idle_connections = match &server {
        Running::Test(s) | Running::Ftp(s, ..) | Running::Sftp(s, ..) => {
            let mut used: Vec<u64> = s.requests().iter().map(|r| r.conn).collect();
            used.sort_unstable();
            used.dedup();
            Some(s.stats().connections.saturating_sub(used.len() as u64))
        }
        _ => None,
    };
    let repeat_connections = match &server {
        Running::Test(s) | Running::Ftp(s, ..) | Running::Sftp(s, ..) => {
            Some(repeat_connections(&s.requests()))
        }
        _ => None,
    };
    let (requests, connections) = match &server {
        Running::Test(s) | Running::Ftp(s, ..) | Running::Sftp(s, ..) => (
            s.requests()
                .iter()
                .map(|r| {
                    let mut line = format!("{} {}", r.method, r.path);
                    for h in case.req_headers {
                        let values: Vec<&str> = r
                            .headers
                            .iter()
                            .filter(|(n, _)| n.eq_ignore_ascii_case(h))
                            .map(|(_, v)| v.as_str())
                            .collect();
                        let shown = if values.is_empty() {
                            "<none>".to_string()
                        } else {
                            values.join(" + ")
                        };
                        line.push_str(&format!(" | {h}: {shown}"));
                    }
                    line
                })
                .collect(),
            Some(s.stats().connections),
        ),
        Running::Nginx(n, _) => (
            n.requests()
                .iter()
                .map(|r| {
                    let mut line = format!("{} {}", r.method, r.path);
                    for h in case.req_headers {
                        let v = if h.eq_ignore_ascii_case("user-agent") {
                            r.user_agent.clone()
                        } else {
                            "<not logged by nginx>".to_string()
                        };
                        line.push_str(&format!(" | {h}: {v}"));
                    }
                    line
                })
                .collect(),
            None,
        ),
        Running::None => (Vec::new(), None),
    };
    let cx = Context {
        paths: {
            let mut p = vec![(dir.arg(), "{DIR}")];
            for (k, v) in &ph.pairs {
                if *k == "{ca}" {
                    p.push((v.clone(), "{CA}"));
                }
                if *k == "{sftproot}" {
                    p.push((v.clone(), "{ROOT}"));
                }
            }
            p
        },
        ports,
        keep_ansi: case.colour,
        names: if program.file_name().is_some_and(|n| n == "aria2c") {
            normalize::ARIA2_NAMES
        } else {
            normalize::RINGDL_NAMES
        },
    };
    let side = Side {
        label,
        program: program.to_path_buf(),
        args,
        dir: dir.path().to_path_buf(),
        status,
        stopped,
        elapsed,
        stdout: normalize::normalize(&stdout, &cx),
        stderr: normalize::normalize(&stderr, &cx),
        files,
        pre_files,
        requests: requests
            .into_iter()
            .map(|r: String| normalize::normalize(&r, &cx))
            .collect(),
        connections,
        idle_connections,
        repeat_connections,
    };
    drop(server);
    side
}

fn resolve_home(home: &Path, rel: &str) -> PathBuf {
    home.join(rel.trim_start_matches("~/"))
}

fn resolve(dir: &TestDir, home: &Path, rel: &str) -> PathBuf {
    match rel.strip_prefix("~/") {
        Some(r) => home.join(r),
        None => dir.join(rel),
    }
}

/// Where `Pre::Stdin`'s text is kept (under HOME, out of the files compared).
const STDIN_FILE: &str = "~/.stdin";

/// Runs `program` in `dir` with HOME=`home`, no proxy variables, `LC_ALL=C`, stdin closed (or
/// `Pre::Stdin`'s text).
/// Returns (exit code, stopped, stdout, stderr). A run past `limit` is killed: when `expected`
/// that is its normal outcome (`stopped`), otherwise the case fails as a hang.
fn spawn_and_wait(
    program: &Path,
    dir: &Path,
    home: &Path,
    args: &[String],
    limit: Duration,
    expected: bool,
) -> (Option<i32>, bool, String, String) {
    let mut cmd = support::isolated_command(program, dir, home);
    // argv[0] as a user's shell passes it (glibc's getopt messages start with it).
    let name = program.file_name().unwrap_or(program.as_os_str());
    cmd.arg0(name)
        .args(args)
        .env("LC_ALL", "C")
        .env_remove("LANG")
        .env_remove("LANGUAGE");
    if let Ok(f) = std::fs::File::open(resolve_home(home, STDIN_FILE)) {
        cmd.stdin(f);
    }
    let started = Instant::now();
    let mut child = cmd
        .spawn()
        .unwrap_or_else(|e| panic!("spawn {}: {e}", program.display()));
    let out = support::drain(child.stdout.take().expect("stdout"));
    let err = support::drain(child.stderr.take().expect("stderr"));
    let mut stopped = false;
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break status;
        }
        if started.elapsed() > limit {
            // SAFETY: kill(2) on the process group this function created for the child.
            unsafe {
                libc::kill(-(child.id() as libc::pid_t), libc::SIGKILL);
            }
            let _ = child.kill();
            stopped = true;
            break child.wait().expect("wait killed");
        }
        thread::sleep(Duration::from_millis(10));
    };
    let stdout = out.join().expect("stdout reader");
    let stderr = err.join().expect("stderr reader");
    assert!(
        !stopped || expected,
        "{} {} hung: killed after {limit:?}\n--- stdout ---\n{stdout}\n--- stderr ---\n{stderr}",
        program.display(),
        args.join(" ")
    );
    (
        if stopped { None } else { status.code() },
        stopped,
        stdout,
        stderr,
    )
}

/// Every file and directory under `root` (but `.home`), relative, with size and SHA-256.
fn list_files(root: &Path) -> BTreeMap<String, String> {
    fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<String, String>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for e in entries.flatten() {
            let path = e.path();
            let rel = path
                .strip_prefix(root)
                .expect("under root")
                .to_string_lossy()
                .into_owned();
            if rel == ".home" {
                continue;
            }
            let Ok(meta) = std::fs::symlink_metadata(&path) else {
                continue;
            };
            if meta.is_dir() {
                out.insert(format!("{rel}/"), "dir".into());
                walk(root, &path, out);
            } else if !meta.is_file() {
                // A pipe is not read: that would take what the program is to read.
                out.insert(rel, "not a regular file".into());
            } else {
                let sha = support::sha256_file(&path);
                out.insert(rel, format!("{} bytes, sha256 {}", meta.len(), &sha[..16]));
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(root, root, &mut out);
    out
}

fn status_str(s: &Side) -> String {
    if s.stopped {
        "still running (stopped)".to_string()
    } else {
        match s.status {
            Some(c) => c.to_string(),
            None => "killed by a signal".to_string(),
        }
    }
}

fn lower(s: &str) -> String {
    s.to_ascii_lowercase()
}

/// aria2c's normalised text with the case's rewrites applied.
/// `Diff::CutFrom`: both outputs end before the first line containing the marker.
fn cut(text: &str, diffs: &[Diff]) -> String {
    let mut out = text.to_string();
    for d in diffs {
        if let Diff::CutFrom(marker) = d {
            if let Some(i) = out.find(marker) {
                let start = out[..i].rfind('\n').map_or(0, |n| n + 1);
                out.truncate(start);
            }
        }
    }
    out
}

fn rewritten(text: &str, diffs: &[Diff]) -> String {
    let mut out = text.to_string();
    for d in diffs {
        if let Diff::Rewrite(from, to) = d {
            out = out.replace(from, to);
        }
    }
    out
}

/// Rewrites of aria2c's output that apply to every case (each is a section of
/// KNOWN_DIFFERENCES.md).
const GLOBAL_REWRITES: &[(&str, &str)] = &[
    // K-USAGE: ringdl's usage line names what it downloads.
    (
        "Usage: PROG [OPTIONS] [URI | MAGNET | TORRENT_FILE | METALINK_FILE]...",
        "Usage: PROG [OPTIONS] [URI]...",
    ),
    // K-VERSION: ringdl follows aria2 1.37.0; the aria2c installed here is 1.36.0.
    ("aria2/1.36.0", "aria2/1.37.0"),
    (
        " --http-accept-gzip[=true|false]",
        " --no-want-digest-header[=true|false] (1.37.0)\n\n                              Default: false\n\n --http-accept-gzip[=true|false]",
    ),
    ("A2-1-36-0-", "A2-1-37-0-"),
    // K-HELP-A: aria2c accepts `-a` but its help does not show it.
    (" --file-allocation=METHOD", " -a, --file-allocation=METHOD"),
];

fn compare(case: &Case, diffs: &[Diff], self_check: bool, a: &Side, b: &Side) -> Vec<String> {
    let mut bad = Vec::new();
    if b.stdout.contains("panicked") || b.stderr.contains("panicked") {
        bad.push("ringdl panicked".to_string());
    }
    if let Some(Diff::Own {
        exit,
        line,
        no_files,
        sole,
    }) = diffs.iter().find(|d| matches!(d, Diff::Own { .. }))
    {
        own_outcome(*exit, line, *no_files, *sole, a, b, &mut bad);
        return bad;
    }

    if a.status != b.status || a.stopped != b.stopped {
        bad.push(format!(
            "exit code: aria2c {}, ringdl {}",
            status_str(a),
            status_str(b)
        ));
    }
    let mut a_files = a.files.clone();
    for d in diffs {
        if let Diff::Aria2Empty(name) = d {
            match a_files.remove(*name) {
                Some(v) if v.starts_with("0 bytes,") => {}
                other => bad.push(format!("aria2c was to leave {name} empty: {other:?}")),
            }
        }
    }
    if a_files != b.files {
        bad.push(format!(
            "files differ:\n{}",
            indent(&line_diff(&file_lines(&a_files), &file_lines(&b.files)))
        ));
    }
    let a_out = cut(&rewritten(&a.stdout, diffs), diffs);
    let a_err = cut(&rewritten(&a.stderr, diffs), diffs);
    let b_out = cut(&b.stdout, diffs);
    let b_err = cut(&b.stderr, diffs);
    match case.cmp {
        Cmp::Exact => {
            for (what, x, y) in [("stdout", &a_out, &b_out), ("stderr", &a_err, &b_err)] {
                if x.trim_end() != y.trim_end() {
                    bad.push(format!(
                        "{what} differs (exact, normalised):\n{}",
                        indent(&line_diff(&lines(x), &lines(y)))
                    ));
                }
            }
        }
        Cmp::ParseError => {
            for (what, x, y) in [("stdout", &a_out, &b_out), ("stderr", &a_err, &b_err)] {
                let (fx, fy) = (normalize::fold_help(x), normalize::fold_help(y));
                if fx != fy {
                    bad.push(format!(
                        "{what} differs (parse error; help blocks as option names):\n{}",
                        indent(&line_diff(&fx, &fy))
                    ));
                }
            }
        }
        Cmp::Help => {
            let hx = normalize::help_shape(&a_out);
            let hy = normalize::without_own_options(normalize::help_shape(&b_out));
            if hx != hy {
                bad.push(format!(
                    "help differs (first line, option names, defaults):\n{}",
                    indent(&line_diff(&hx, &hy))
                ));
            }
            if a_err.trim() != b_err.trim() {
                bad.push(format!(
                    "stderr differs:\n{}",
                    indent(&line_diff(&lines(&a_err), &lines(&b_err)))
                ));
            }
        }
        Cmp::Version => {
            let (vx, vy) = (
                normalize::version_shape(&a_out),
                normalize::version_shape(&b_out),
            );
            if vx != vy {
                bad.push(format!("version line: aria2c `{vx}`, ringdl `{vy}`"));
            }
            if a_err.trim() != b_err.trim() {
                bad.push("stderr differs".to_string());
            }
        }
        Cmp::Events | Cmp::EventsAnyOrder | Cmp::Progress => {
            for (what, x, y) in [("stdout", &a_out, &b_out), ("stderr", &a_err, &b_err)] {
                let mut ex = normalize::events(x);
                for d in diffs {
                    if let Diff::Aria2Only(text) = d {
                        ex.events
                            .retain(|e| !matches!(e, Event::Log { msg, .. } if msg.contains(text)));
                    }
                }
                let mut ey = normalize::events(y);
                for text in case.vary {
                    collapse(&mut ex, text);
                    collapse(&mut ey, text);
                }
                extra_warnings(diffs, what, &mut ey, &mut bad);
                if ey.trace_lines > 0 && what == "stdout" && !self_check {
                    bad.push(format!(
                        "ringdl printed {} exception trace line(s) on stdout; its errors are one \
                         line (K-ONELINE)",
                        ey.trace_lines
                    ));
                }
                let ordered = case.cmp != Cmp::EventsAnyOrder;
                if !events_match(&ex.events, &ey.events, ordered) {
                    let (mut sx, mut sy) = (ex.events.clone(), ey.events.clone());
                    if !ordered {
                        sx.sort_by_key(|e| e.to_string());
                        sy.sort_by_key(|e| e.to_string());
                    }
                    bad.push(format!(
                        "{what} events differ{}:\n{}",
                        if ordered {
                            ""
                        } else {
                            " (compared in any order)"
                        },
                        indent(&diff_by(&sx, &sy, |e, o| e.accepts(o)))
                    ));
                }
                if case.cmp == Cmp::Progress {
                    for (kind, nx, ny) in [
                        ("readout lines", ex.readouts, ey.readouts),
                        ("progress summaries", ex.summaries, ey.summaries),
                    ] {
                        if (nx > 0) != (ny > 0) {
                            bad.push(format!("{what}: {kind}: aria2c printed {nx}, ringdl {ny}"));
                        }
                    }
                }
            }
        }
        Cmp::Nothing => {}
    }
    if !case.req_headers.is_empty() {
        let dedup = |v: &[String]| {
            let mut v = v.to_vec();
            v.sort();
            v.dedup();
            v
        };
        let a_requests: Vec<String> = a.requests.iter().map(|r| rewritten(r, diffs)).collect();
        let (rx, ry) = (dedup(&a_requests), dedup(&b.requests));
        if rx != ry {
            bad.push(format!(
                "requests the server saw differ:\n{}",
                indent(&line_diff(&rx, &ry))
            ));
        }
    }
    // aria2c now and then requests a range a second time, on a fresh connection, after another
    // connection has already asked for it (7 of 160 runs of `-x4 -s4 -k1M` on a 4 MiB file with
    // four runs at once): a timing artefact, not part of the split, so connections that only
    // repeat earlier requests are not counted.
    let counted = |s: &Side| Some(s.connections? - s.repeat_connections.unwrap_or(0));
    if case.conns && counted(a) != counted(b) {
        bad.push(format!(
            "connections accepted by the server (not counting ones that only repeat an earlier request): \
             aria2c {:?}, ringdl {:?}",
            counted(a),
            counted(b)
        ));
    }
    bad
}

/// `Case::vary`: every log line containing `text` becomes one `[seen] text` event at the place
/// of the first.
fn collapse(ev: &mut Events, text: &str) {
    let mut seen = false;
    ev.events.retain_mut(|e| match e {
        Event::Log { msg, .. } if msg.contains(text) => {
            if seen {
                return false;
            }
            seen = true;
            *e = Event::Line(format!("[seen at least once] {text}"));
            true
        }
        _ => true,
    });
}

/// `Diff::ExtraWarning`: exactly one such WARN line in ringdl's events (then removed).
fn extra_warnings(diffs: &[Diff], stream: &str, ey: &mut Events, bad: &mut Vec<String>) {
    if stream != "stdout" {
        return;
    }
    for d in diffs {
        let (level, word) = match d {
            Diff::ExtraWarning(word) => ("WARN", word),
            Diff::ExtraNotice(word) => ("NOTICE", word),
            _ => continue,
        };
        let level_wanted = &level;
        {
            let hits: Vec<usize> = ey
                .events
                .iter()
                .enumerate()
                .filter(|(_, e)| {
                    matches!(e, Event::Log { level, msg, .. }
                        if level == *level_wanted && lower(msg).contains(&lower(word)))
                })
                .map(|(i, _)| i)
                .collect();
            if hits.len() != 1 {
                bad.push(format!(
                    "expected exactly one {level} line naming `{word}` from ringdl, found {}",
                    hits.len()
                ));
            }
            for i in hits.into_iter().rev() {
                ey.events.remove(i);
            }
        }
    }
}

fn own_outcome(
    exit: i32,
    line: &str,
    no_files: bool,
    sole: bool,
    a: &Side,
    b: &Side,
    bad: &mut Vec<String>,
) {
    let a_all = format!("{}\n{}", a.stdout, a.stderr);
    if a.status == Some(28) || lower(&a_all).contains("unrecognized option") {
        bad.push(format!(
            "aria2c rejected the command line (exit {}); the case must use one aria2c accepts",
            status_str(a)
        ));
    }
    if b.status != Some(exit) {
        bad.push(format!(
            "ringdl exit code: expected {exit}, got {}",
            status_str(b)
        ));
    }
    let b_all = format!("{}\n{}", b.stdout, b.stderr);
    let hits = b_all
        .lines()
        .filter(|l| lower(l).contains(&lower(line)))
        .count();
    if hits != 1 {
        bad.push(format!(
            "ringdl should print exactly one line mentioning `{line}`, printed {hits}"
        ));
    }
    let others = b_all
        .lines()
        .filter(|l| !l.trim().is_empty() && !lower(l).contains(&lower(line)))
        .count();
    if sole && others > 0 {
        bad.push(format!(
            "ringdl should print that one line and nothing else, printed {others} other line(s)"
        ));
    }
    if lower(&b_all).contains("unrecognized option") {
        bad.push("ringdl said `unrecognized option` for an option aria2c knows".into());
    }
    let untouched = b
        .files
        .iter()
        .all(|(k, v)| v == "created by the case, unchanged" || b.pre_files.get(k) == Some(v));
    if no_files && (!untouched || b.files.len() != b.pre_files.len()) {
        bad.push(format!(
            "ringdl should create no file, left:\n{}",
            indent(&line_diff(&file_lines(&b.pre_files), &file_lines(&b.files)))
        ));
    }
}

fn events_match(x: &[Event], y: &[Event], ordered: bool) -> bool {
    if x.len() != y.len() {
        return false;
    }
    if ordered {
        x.iter().zip(y).all(|(e, o)| e.accepts(o))
    } else {
        // Greedy matching is enough: an expectation accepts a line equal to it or extending it.
        let mut left: Vec<&Event> = y.iter().collect();
        x.iter()
            .all(|e| match left.iter().position(|o| e.accepts(o)) {
                Some(i) => {
                    left.remove(i);
                    true
                }
                None => false,
            })
    }
}

fn file_lines(files: &BTreeMap<String, String>) -> Vec<String> {
    files.iter().map(|(k, v)| format!("{k}  ({v})")).collect()
}

fn lines(s: &str) -> Vec<String> {
    s.trim_end().lines().map(str::to_string).collect()
}

fn indent(s: &str) -> String {
    s.lines()
        .map(|l| format!("    {l}"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// A unified-style diff of two line lists: ` ` both, `-` aria2c only, `+` ringdl only.
pub fn line_diff(a: &[String], b: &[String]) -> String {
    diff_by(a, b, |x, y| x == y)
}

/// [`line_diff`] with `same(expected, ours)` as the matching rule; a matched pair is shown as
/// ringdl printed it.
fn diff_by<T: std::fmt::Display>(a: &[T], b: &[T], same: impl Fn(&T, &T) -> bool) -> String {
    let (n, m) = (a.len(), b.len());
    let mut lcs = vec![vec![0usize; m + 1]; n + 1];
    for i in (0..n).rev() {
        for j in (0..m).rev() {
            lcs[i][j] = if same(&a[i], &b[j]) {
                lcs[i + 1][j + 1] + 1
            } else {
                lcs[i + 1][j].max(lcs[i][j + 1])
            };
        }
    }
    let (mut i, mut j) = (0, 0);
    let mut out = String::new();
    while i < n || j < m {
        if i < n && j < m && same(&a[i], &b[j]) {
            out.push_str(&format!("  {}\n", b[j]));
            i += 1;
            j += 1;
        } else if i < n && (j == m || lcs[i + 1][j] >= lcs[i][j + 1]) {
            out.push_str(&format!("- {}\n", a[i]));
            i += 1;
        } else {
            out.push_str(&format!("+ {}\n", b[j]));
            j += 1;
        }
    }
    out
}

fn shell_quote(s: &str) -> String {
    if !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_=./:,+@%{}#".contains(c))
    {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

fn side_report(s: &Side) -> String {
    let cmd: Vec<String> = s.args.iter().map(|a| shell_quote(a)).collect();
    let mut out = format!(
        "=== {}: (cd {} && {} {})\nexit {} after {:.2?}\n",
        s.label,
        s.dir.display(),
        s.program.display(),
        cmd.join(" "),
        status_str(s),
        s.elapsed
    );
    out.push_str(&format!(
        "--- stdout (normalised) ---\n{}\n--- stderr (normalised) ---\n{}\n--- files ---\n{}\n",
        s.stdout.trim_end(),
        s.stderr.trim_end(),
        file_lines(&s.files).join("\n")
    ));
    if !s.requests.is_empty() {
        out.push_str(&format!(
            "--- requests ({} connections, {} without a request, {} only repeating) ---\n{}\n",
            s.connections
                .map(|c| c.to_string())
                .unwrap_or_else(|| "?".into()),
            s.idle_connections
                .map(|c| c.to_string())
                .unwrap_or_else(|| "?".into()),
            s.repeat_connections
                .map(|c| c.to_string())
                .unwrap_or_else(|| "?".into()),
            s.requests.join("\n")
        ));
    }
    out
}

fn report(name: &str, case: &Case, bad: &[String], a: &Side, b: &Side) -> String {
    let mut out = format!(
        "\ncompat case `{name}`: {} mismatch(es) [mode {:?}{}]\n",
        bad.len(),
        case.cmp,
        if case.known.is_empty() {
            String::new()
        } else {
            format!("; documented differences {}", case.known.join(", "))
        }
    );
    for m in bad {
        out.push_str(&format!("  * {m}\n"));
    }
    out.push_str(&side_report(a));
    out.push_str(&side_report(b));
    out
}
