//! What the engine is configured with, per download: built by `cli/` from the command line, an
//! input list's entry or an RPC call's options, and read by the engine alone.
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
