//! What the engine takes and gives back: a job (one download as the command line or a list
//! gives it), its outcome, and a failure with aria2's exit code.
use super::config::DownloadOptions;
use crate::engine::ExitCode;
use crate::http::HttpError;
use std::path::PathBuf;

/// One download as the command line (or `-Z`) gives it: mirrors of one file.
#[derive(Debug, Clone)]
pub struct Job {
    pub uris: Vec<String>,
    pub opts: DownloadOptions,
    /// An input-list entry's own options by name (what a saved session writes for it).
    pub own: Vec<(&'static str, String)>,
    /// Started before by this process (a daemon's paused or restarted download): the file
    /// `opts.out` names is its own partial file, not one a user left there.
    pub restarted: bool,
}

/// A Metalink a finished download fetched, to follow (`--follow-metalink`): the command line's
/// follower or the daemon reads it for the downloads it describes.
#[derive(Debug, Clone)]
pub struct Followed {
    /// The download that fetched it.
    pub gid: u64,
    /// The document, open (an in-memory one's only handle): read it from offset 0.
    pub file: std::rc::Rc<std::fs::File>,
    /// The URI it came from, as given: relative URLs in it are of this one.
    pub uri: String,
    /// Its path as the results show it (`[MEMORY]name` when held in memory).
    pub path: PathBuf,
    /// The options of the download that fetched it: its downloads start from them.
    pub opts: DownloadOptions,
    /// Its input-list entry's own options (with `--save-session`): a saved session writes them
    /// for each of its downloads.
    pub own: Vec<(&'static str, String)>,
}

/// What a saved session writes of a download: its URIs as given, and its entry's own options.
pub type SessionEntry = (Vec<String>, Vec<(&'static str, String)>);

/// How a download ended.
#[derive(Debug, Clone)]
pub struct Outcome {
    pub gid: u64,
    pub code: ExitCode,
    /// None while unfinished (interrupted).
    pub finished: bool,
    /// Removed by `aria2.remove` (daemon mode): aria2's `RM`, neither a failure nor unfinished.
    pub removed: bool,
    pub path: Option<PathBuf>,
    pub first_uri: String,
    pub bytes: u64,
    /// File length, when it was known.
    pub total: Option<u64>,
    pub seconds: f64,
}

/// Why a connection or download stopped, with aria2's exit code.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    pub code: ExitCode,
    pub message: String,
    /// Worth another connection (network trouble) rather than fatal for the download.
    pub retry: bool,
    /// Seconds to wait before that retry, when the server said (Retry-After).
    pub wait: Option<u64>,
    /// The server could not resume and the download starts over on another mirror: said after
    /// the line that drops this one.
    pub from_scratch: bool,
}

impl Failure {
    pub fn fatal(code: ExitCode, message: impl Into<String>) -> Failure {
        Failure {
            code,
            message: message.into(),
            retry: false,
            wait: None,
            from_scratch: false,
        }
    }
    pub fn retry(code: ExitCode, message: impl Into<String>) -> Failure {
        Failure {
            code,
            message: message.into(),
            retry: true,
            wait: None,
            from_scratch: false,
        }
    }

    /// This failure's retry waits `secs` seconds.
    pub fn after(mut self, secs: u64) -> Failure {
        self.wait = Some(secs);
        self
    }
}

/// The failure for a protocol error in a response.
pub fn http_failure(e: HttpError) -> Failure {
    match e {
        HttpError::RangeMismatch { .. } => Failure::retry(ExitCode::CANNOT_RESUME, e.to_string()),
        // An answer that is not HTTP, a broken chunk, a Content-Length that is no count, a
        // Location that is no URL: aria2c ends these with its generic code, 1 (not 22).
        HttpError::Malformed(_)
        | HttpError::BadChunk(_)
        | HttpError::BadContentLength(_)
        | HttpError::BadLocation(_) => Failure::retry(ExitCode::UNKNOWN, e.to_string()),
        // Asking again brings the same coding: aria2c fails at once, with its generic code.
        HttpError::UnsupportedTransferCoding(_) => Failure::fatal(ExitCode::UNKNOWN, e.to_string()),
        other => Failure::retry(ExitCode::HTTP_PROTOCOL, other.to_string()),
    }
}
