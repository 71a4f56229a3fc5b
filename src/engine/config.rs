//! What the engine is configured with: a run's `Config` and each download's `DownloadOptions`,
//! built by `cli/` from the command line, an input list's entries or an RPC call's options.
use std::path::PathBuf;

/// What one download is made with: the global options, or an input-file entry's own.
#[derive(Debug, Clone, PartialEq)]
pub struct DownloadOptions {
    pub dir: PathBuf,
    pub out: Option<String>,
    /// `--gid`: the download's GID (else a random one).
    pub gid: Option<u64>,
    pub max_conn_per_server: usize,
    pub split: usize,
    pub min_split_size: u64,
    pub allow_overwrite: bool,
    pub auto_file_renaming: bool,
    pub user_agent: String,
    pub headers: Vec<String>,
    /// `--referer`: `*` means the URI requested.
    pub referer: Option<String>,
    /// `--http-no-cache`: send `Cache-Control: no-cache` and `Pragma: no-cache`.
    pub http_no_cache: bool,
    /// `--http-user`/`--http-passwd`: Basic credentials for the origins of this download's URIs.
    pub http_user: Option<String>,
    pub http_passwd: Option<String>,
    /// `--ftp-user`/`--ftp-passwd`: the FTP login for URIs that name no user (else aria2c's
    /// `anonymous` / `ARIA2USER@`).
    pub ftp_user: Option<String>,
    pub ftp_passwd: Option<String>,
    /// `--ftp-type=ascii`: FTP's ASCII transfer type (else binary).
    pub ftp_ascii: bool,
    /// `--ftp-pasv`: passive mode (the client connects for the data), else active.
    pub ftp_pasv: bool,
    /// Keep an FTP control connection, logged in, for the next file or range.
    pub ftp_reuse_connection: bool,
    /// How a Metalink's files and mirrors are picked (`--metalink-*`, `--select-file`).
    pub metalink: MetalinkOptions,
    /// Made from a Metalink: its mirrors are the Metalink's (`Link` headers add none).
    pub from_metalink: bool,
    /// `--follow-metalink`: a Metalink this download fetches (by its name's suffix or its
    /// content type) goes on to the downloads it describes, saved first or held in memory.
    pub follow_metalink: Follow,
    /// A download that cannot start, and the line saying why (a Metalink's file given only as
    /// a torrent): it fails at once with exit 1.
    pub refused: Option<String>,
    /// Fetched by the engine to describe the running download of this GID (a `describedby`
    /// Metalink): held in memory, its result none of the run's.
    pub describes: Option<u64>,
    /// Ask servers for the file's digest (`Want-Digest`; off with `--no-want-digest-header`).
    pub want_digest: bool,
    /// The file's length as its description (a Metalink's `<size>`) says: a source that says
    /// another is not this file.
    pub expected_total: Option<u64>,
    /// `--ssh-host-key-md=TYPE=HEX`: the digest the SFTP server's host key must have (then
    /// known_hosts is not asked).
    pub ssh_host_key_md: Option<String>,
    /// `--http-auth-challenge`: send them only once a server asked (401).
    pub http_auth_challenge: bool,
    /// `-n`: do not take credentials from the netrc file.
    pub no_netrc: bool,
    /// `--http-accept-gzip`: ask for gzip/deflate bodies and inflate them.
    pub http_accept_gzip: bool,
    /// `--enable-http-keep-alive`: false sends `Connection: close` and reuses no connection.
    pub http_keep_alive: bool,
    /// `--content-disposition-default-utf8`.
    pub content_disposition_default_utf8: bool,
    /// `--use-head`: ask with HEAD before the first GET.
    pub use_head: bool,
    /// `-c`: go on from an existing file that has no control file.
    pub continue_partial: bool,
    /// Piece length of new control files.
    pub piece_length: u32,
    pub allow_piece_length_change: bool,
    pub remove_control_file: bool,
    /// When the server cannot resume: fail with exit 8 (true) or restart from zero (false).
    pub always_resume: bool,
    pub max_resume_failure_tries: u32,
    /// `--checksum=TYPE=DIGEST` the finished file must have.
    pub checksum: Option<String>,
    /// The digest of each piece (a Metalink's chunk checksums): a piece is claimed only once its
    /// bytes match, and one that does not is fetched again from another mirror.
    pub pieces: Option<std::sync::Arc<super::pieces::PieceHashes>>,
    /// The files of a download over several (a torrent's), end to end in its byte space: its
    /// length is theirs, each is created under `dir`, and a control file describes them from
    /// before the first write. `None`: one file, named by `out` or the answer.
    pub layout: Option<std::sync::Arc<super::layout::Layout>>,
    /// Bytes per second this download may receive (0: no limit).
    pub max_download_limit: u64,
    /// Bytes per second at or below which the download fails with exit 5 (0: never).
    pub lowest_speed_limit: u64,
    /// "Not found" answers tolerated before exit 4 (0: the first is fatal, exit 3).
    pub max_file_not_found: u32,
    /// `--dry-run`: only ask (HEAD) whether the file is there.
    pub dry_run: bool,
    /// `-R`: give the file the server's Last-Modified time.
    pub remote_time: bool,
    /// `--conditional-get`: download only if newer than the local file.
    pub conditional_get: bool,
    /// `-V`: check an existing file against `--checksum` before fetching anything.
    pub check_integrity: bool,
    /// `--hash-check-only`: stop once the file is found and checked, without fetching.
    pub hash_check_only: bool,
    /// `--uri-selector`: how a connection's mirror is picked.
    pub uri_selector: UriSelector,
    /// `--file-allocation`: none, prealloc, trunc or falloc.
    pub file_allocation: String,
    /// Files smaller than this are not allocated ahead.
    pub no_file_allocation_limit: u64,
    /// The proxies (`--all-proxy`, `--http-proxy`, `--https-proxy`, the environment's,
    /// `--no-proxy`, `--proxy-method`).
    pub proxies: crate::http::proxy::Routes,
    /// The proxy options' values the routes were made from.
    pub proxy_values: Vec<(&'static str, String)>,
}

/// `--follow-metalink`: what becomes of a Metalink a download from a URI fetched.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Follow {
    /// `false`: it is saved as any file.
    No,
    /// `true`: saved, then read for the downloads it describes.
    Saved,
    /// `mem`: held in memory (never written to disk) and read for them.
    Memory,
}

impl Follow {
    pub fn parse(v: &str) -> Option<Follow> {
        match v {
            "true" => Some(Follow::Saved),
            "mem" => Some(Follow::Memory),
            "false" => Some(Follow::No),
            _ => None,
        }
    }
}

/// How a Metalink's files are picked and its mirrors ordered.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MetalinkOptions {
    /// `--metalink-location`: preferred countries, lowercased.
    pub locations: Vec<String>,
    /// `--metalink-language`, `--metalink-os`, `--metalink-version`: only files that say so.
    pub language: Option<String>,
    pub os: Option<String>,
    pub version: Option<String>,
    /// `--metalink-preferred-protocol` (`none`: none).
    pub preferred_protocol: Option<String>,
    /// `--metalink-enable-unique-protocol`: one URI per host.
    pub unique_protocol: bool,
    /// `--metalink-base-uri`: where relative URLs of a local Metalink are from.
    pub base_uri: Option<String>,
    /// `--select-file`, as given (`1,3-5`).
    pub select_file: Option<String>,
    /// `--index-out`: the path (in `--dir`) of the file of each index (as `-S` numbers them).
    pub index_out: Vec<(usize, String)>,
}

/// An `--index-out` value, `INDEX=PATH` (checked when the option was read).
pub fn index_out(v: &str) -> Option<(usize, String)> {
    let (i, path) = v.split_once('=')?;
    Some((i.parse().ok()?, path.to_string()))
}

/// `--uri-selector`: which mirror a new connection takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UriSelector {
    /// The mirrors in the order given, in turn.
    InOrder,
    /// The fastest known server not in use, then unmeasured ones; failed ones skipped.
    Feedback,
    /// The best known servers for the first connections, unmeasured ones for the extra ones.
    Adaptive,
}

/// What a run of the engine is configured with, built by `cli/` from the options (`-i` entries and
/// RPC calls start their downloads from `download`).
#[derive(Debug, Clone)]
pub struct Config {
    /// The options each command-line download gets (input-file entries start from these, less `out`).
    pub download: DownloadOptions,
    pub max_concurrent: usize,
    /// `--interface` (else `--multiple-interface`'s list): what connections leave from, each an
    /// interface name, an IP address or a host name; connections take them in turn.
    pub interfaces: Vec<String>,
    /// `--disable-ipv6`: IPv6 addresses are never connected to.
    pub disable_ipv6: bool,
    /// `--async-dns-server` (with `--async-dns=true`): names are looked up by these servers on the
    /// ring, the system resolver asked only when they give no address. Empty: the system resolver.
    pub dns_servers: Vec<std::net::SocketAddr>,
    /// `--enable-async-dns6`: those lookups ask for IPv6 addresses too.
    pub dns_ipv6: bool,
    /// `--stop`: seconds after which the run stops as on Ctrl-C (0: never).
    pub stop_after: u64,
    /// `--stop-with-process`: the run stops as on Ctrl-C once this process is gone.
    pub stop_with_process: Option<u32>,
    pub ca_certificate: Option<PathBuf>,
    pub check_certificate: bool,
    pub summary_interval: u64,
    pub timeout_secs: u64,
    pub connect_timeout_secs: u64,
    /// `-m`: tries of a download before it fails (0: no limit).
    pub max_tries: u32,
    /// Seconds between control-file saves (0: only when stopping).
    pub auto_save_interval: u64,
    /// Seconds between tries (0: at once); with it, 502/503 answers are retried.
    pub retry_wait: u64,
    /// Bytes per second all downloads together may receive (0: no limit).
    pub max_overall_download_limit: u64,
    /// `--netrc-path` (`~/.netrc` unless given).
    pub netrc_path: PathBuf,
    /// `--load-cookies`: a Netscape/Mozilla cookie file read at start.
    pub load_cookies: Option<PathBuf>,
    /// `--save-cookies`: where the cookies are written at the end.
    pub save_cookies: Option<PathBuf>,
    /// `--server-stat-if`, `--server-stat-of`, `--server-stat-timeout`: the server performance
    /// profile read at the start and written at the end, and how old an entry may be.
    pub server_stat_if: Option<PathBuf>,
    pub server_stat_of: Option<PathBuf>,
    pub server_stat_timeout: i64,
    /// `--certificate` and `--private-key`: the client certificate presented to servers.
    pub certificate: Option<PathBuf>,
    pub private_key: Option<PathBuf>,
    /// `--min-tls-version=TLSv1.3` (rustls has no TLS 1.1, so TLSv1.1 and TLSv1.2 mean 1.2).
    pub tls13_only: bool,
    /// `--engine` (else `RINGDL_ENGINE`): which reactor runs the downloads.
    pub engine: EngineChoice,
    /// `--on-download-*`: the event hooks.
    pub hooks: Hooks,
    /// `--enable-rpc`: the RPC server's settings.
    pub rpc: Option<RpcSettings>,
    /// `--save-session` without `--enable-rpc`: where the downloads that did not finish are
    /// written at exit, for a later `-i`.
    pub session_out: Option<SessionOut>,
    /// Every option's value as resolved (the user's, else the default; cumulative ones joined with
    /// newlines): what `aria2.getGlobalOption` reports.
    pub option_values: Vec<(&'static str, String)>,
}

/// The RPC server's options.
#[derive(Debug, Clone)]
pub struct RpcSettings {
    pub port: u16,
    pub listen_all: bool,
    pub secret: Option<String>,
    /// `--rpc-user` and `--rpc-passwd` (deprecated): HTTP basic authentication.
    pub user: Option<String>,
    pub passwd: Option<String>,
    pub allow_origin_all: bool,
    pub max_request_size: u64,
    /// `--rpc-secure`: serve over TLS with `--rpc-certificate` and `--rpc-private-key`.
    pub secure: bool,
    pub certificate: Option<PathBuf>,
    pub private_key: Option<PathBuf>,
    /// `--pause`: downloads are added paused.
    pub pause: bool,
    /// `--max-download-result`: stopped downloads `tellStopped` keeps.
    pub max_download_result: usize,
    pub keep_unfinished_download_result: bool,
    /// `--save-session`: where the session goes at exit, on `saveSession`, and every
    /// `--save-session-interval` seconds.
    pub save_session: Option<PathBuf>,
    pub save_session_interval: u64,
    /// `--force-save`: completed and removed downloads are saved too.
    pub force_save: bool,
    /// `--save-not-found`: downloads that failed with "not found" are saved.
    pub save_not_found: bool,
    /// The per-download options given on the command line (a session writes them into every
    /// entry, as aria2 does).
    pub command_line: Vec<(&'static str, String)>,
}

/// aria2's event hooks: the command each event runs (see engine/driver/hooks.rs).
#[derive(Debug, Clone, Default)]
pub struct Hooks {
    pub start: Option<String>,
    pub pause: Option<String>,
    pub stop: Option<String>,
    pub complete: Option<String>,
    pub error: Option<String>,
}

/// ringdl's own `--engine=auto|uring|portable`: io_uring where it works and the portable (epoll)
/// reactor elsewhere, or either one forced.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum EngineChoice {
    #[default]
    Auto,
    Uring,
    Portable,
}

impl EngineChoice {
    pub fn parse(v: &str) -> Option<EngineChoice> {
        match v {
            "auto" => Some(EngineChoice::Auto),
            "uring" | "io_uring" => Some(EngineChoice::Uring),
            "portable" | "epoll" => Some(EngineChoice::Portable),
            _ => None,
        }
    }
}

/// `--save-session` in a run without RPC: aria2 writes the downloads that failed or did not finish
/// (with `--force-save`, all of them; without `--save-not-found`, not those that were not found)
/// to this file at exit, as an input list with their options.
#[derive(Debug, Clone, PartialEq)]
pub struct SessionOut {
    pub path: PathBuf,
    pub force_save: bool,
    pub save_not_found: bool,
    /// The per-download options given on the command line, written into every entry.
    pub command_line: Vec<(&'static str, String)>,
}
