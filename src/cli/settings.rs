//! What a command line becomes: the plain, typed settings the rest of the program reads
//! (`Settings`, a download's `DownloadOptions`, daemon mode's `RpcSettings`), built by `parse`.
use super::help;

use crate::engine::LogLevel;
pub use crate::engine::{
    Config, DownloadOptions, EngineChoice, Hooks, RpcSettings, SessionOut, UriSelector,
};
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

/// Everything a command line says, validated: what the engine runs with (`config`), and what
/// only the command line and the console use.
#[derive(Debug, Clone)]
pub struct Settings {
    /// What the engine is configured with.
    pub config: Config,
    pub force_sequential: bool,
    /// `-P`: the command line's URIs are patterns (`cli::paramed`).
    pub parameterized_uri: bool,
    /// `--stderr`: console output on standard error.
    pub stderr: bool,
    pub console_log_level: LogLevel,
    pub show_console_readout: bool,
    pub download_result: ResultMode,
    pub quiet: bool,
    /// `-l`: a file, or `-` for stdout.
    pub log: Option<String>,
    pub log_level: LogLevel,
    pub enable_color: bool,
    pub human_readable: bool,
    /// `-i`: a file, or `-` for stdin.
    pub input_file: Option<String>,
    /// `-M`: a Metalink file, or `-` for stdin.
    pub metalink_file: Option<String>,
    /// `-S`: list the files of the Metalinks given and exit.
    pub show_files: bool,
    pub uris: Vec<String>,
    /// Warnings to print once logging is set up (unknown config keys, ignored options).
    pub warnings: Vec<String>,
    /// `-D`: detach and run in the background.
    pub daemon: bool,
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
