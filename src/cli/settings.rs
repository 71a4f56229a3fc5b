//! What a command line becomes: the plain, typed settings the rest of the program reads
//! (`Settings`, a download's `DownloadOptions`, daemon mode's `RpcSettings`), built by `parse`.
use super::help;
use super::parse::SessionOut;
use crate::engine::LogLevel;
pub use crate::engine::{DownloadOptions, UriSelector};
use std::path::PathBuf;

/// `--download-result`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResultMode {
    Default,
    Full,
    Hide,
}

impl UriSelector {
    pub(super) fn parse(v: &str) -> Option<UriSelector> {
        match v {
            "inorder" => Some(UriSelector::InOrder),
            "feedback" => Some(UriSelector::Feedback),
            "adaptive" => Some(UriSelector::Adaptive),
            _ => None,
        }
    }
}

/// Everything the engine and the UI need to know, validated.
#[derive(Debug, Clone)]
pub struct Settings {
    /// The options each command-line download gets (input-file entries start from these, less `out`).
    pub download: DownloadOptions,
    pub max_concurrent: usize,
    pub force_sequential: bool,
    /// `-P`: the command line's URIs are patterns (`cli::paramed`).
    pub parameterized_uri: bool,
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
    /// `--stderr`: console output on standard error.
    pub stderr: bool,
    /// `--stop`: seconds after which the run stops as on Ctrl-C (0: never).
    pub stop_after: u64,
    /// `--stop-with-process`: the run stops as on Ctrl-C once this process is gone.
    pub stop_with_process: Option<u32>,
    pub ca_certificate: Option<PathBuf>,
    pub check_certificate: bool,
    pub console_log_level: LogLevel,
    pub summary_interval: u64,
    pub show_console_readout: bool,
    pub download_result: ResultMode,
    pub quiet: bool,
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
    /// `-l`: a file, or `-` for stdout.
    pub log: Option<String>,
    pub log_level: LogLevel,
    pub enable_color: bool,
    pub human_readable: bool,
    /// `-i`: a file, or `-` for stdin.
    pub input_file: Option<String>,
    pub uris: Vec<String>,
    /// Warnings to print once logging is set up (unknown config keys, ignored options).
    pub warnings: Vec<String>,
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
    /// `-D`: detach and run in the background.
    pub daemon: bool,
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

/// What the command line asks for.
#[derive(Debug)]
pub enum Command {
    Download(Box<Settings>),
    /// Print this help text and exit 0.
    Help(String),
    /// `-v`, with the engine asked for so far (it says which reactor would run).
    Version(EngineChoice),
    /// `--generate=KIND`: print a generated document (man page, completion) and exit 0.
    Generate(super::generate::Target),
}

/// A command line that cannot be run: the text to print on stderr and aria2's exit code.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UsageError {
    pub message: String,
    pub exit_code: i32,
}

/// Where the process environment comes in (a parameter, so tests need no real HOME).
#[derive(Debug, Clone, Default)]
pub struct Env {
    pub home: Option<PathBuf>,
    pub xdg_config_home: Option<PathBuf>,
    pub xdg_cache_home: Option<PathBuf>,
    /// Proxy variables that are set: (aria2 option name, value).
    pub proxies: Vec<(&'static str, String)>,
    pub cwd: PathBuf,
    /// `RINGDL_ENGINE`: the default of `--engine`.
    pub engine: Option<String>,
}

impl Env {
    /// The defaults help shows for machine-dependent options.
    pub fn machine_defaults(&self) -> help::MachineDefaults {
        let home = self.home.as_ref().map(|h| h.display().to_string());
        help::MachineDefaults {
            dir: Some(self.cwd.display().to_string()),
            conf_path: self.home.as_ref().map(|h| {
                let classic = h.join(".aria2").join("aria2.conf");
                if classic.is_file() {
                    classic
                } else {
                    self.xdg_config_home
                        .clone()
                        .unwrap_or_else(|| h.join(".config"))
                        .join("aria2")
                        .join("aria2.conf")
                }
                .display()
                .to_string()
            }),
            ca_bundle: crate::tls::system_bundle_path().map(str::to_string),
            cache_dir: self
                .xdg_cache_home
                .as_ref()
                .map(|c| c.display().to_string())
                .or_else(|| home.as_ref().map(|h| format!("{h}/.cache"))),
            home,
        }
    }

    /// The real environment of this process.
    pub fn from_process() -> Env {
        let var = |k: &str| std::env::var_os(k).filter(|v| !v.is_empty());
        let mut proxies = Vec::new();
        for (var_name, opt) in [
            ("http_proxy", "http-proxy"),
            ("https_proxy", "https-proxy"),
            ("ftp_proxy", "ftp-proxy"),
            ("all_proxy", "all-proxy"),
            ("no_proxy", "no-proxy"),
        ] {
            // The lower-case name wins, as in curl and wget; the upper-case one is read too.
            let value = var(var_name).or_else(|| var(&var_name.to_ascii_uppercase()));
            if let Some(v) = value.and_then(|v| v.into_string().ok()) {
                proxies.push((opt, v));
            }
        }
        Env {
            home: var("HOME").map(PathBuf::from),
            xdg_config_home: var("XDG_CONFIG_HOME").map(PathBuf::from),
            xdg_cache_home: var("XDG_CACHE_HOME").map(PathBuf::from),
            proxies,
            cwd: std::env::current_dir().unwrap_or_else(|_| PathBuf::from(".")),
            engine: std::env::var("RINGDL_ENGINE")
                .ok()
                .filter(|v| !v.is_empty()),
        }
    }
}
