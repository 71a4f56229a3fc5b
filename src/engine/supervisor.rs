//! What drives the engine from above: daemon mode's queue (`crate::daemon`) sits on top of the
//! engine and talks to it through these two traits only. Commands go in through [`Control`],
//! which the engine implements; events come out through [`Supervisor`], which the daemon
//! implements: the next download to start, a download that ended, an RPC call to answer. The
//! engine knows nothing of queues, results, sessions or option tables; the daemon knows nothing of
//! connections, plans or files. A protocol's fields in aria2's RPC (a torrent's peers, say) come
//! through [`Control`]'s views.
use super::{ExitCode, Job};

use crate::rpc::status::StatusView;
use crate::rpc::{Params, RpcError};
use serde_json::Value;
use std::time::Instant;

/// The engine as the daemon drives it. Downloads are named by GID.
pub trait Control {
    /// The engine's clock.
    fn now(&self) -> Instant;
    /// The GIDs of the running downloads, in the order they started.
    fn active(&self) -> Vec<u64>;
    /// A running download's status (`None`: not running).
    fn status(&self, gid: u64) -> Option<StatusView>;
    /// A running download's connections: where each one's mirror (as given) led, and its share
    /// of the download's speed (`None`: not running).
    fn servers(&self, gid: u64) -> Option<Vec<ServerView>>;
    /// Stops a running download for a call (`removing`: for `aria2.remove`): its connections
    /// close, its writes complete, its control file is saved, then it ends (`Supervisor::ended`).
    /// One whose every byte is in finishes instead, unless it is being removed. Whether it stops.
    fn stop(&mut self, gid: u64, removing: bool) -> bool;
    /// Sets a running download's own speed limit (bytes a second, 0: none).
    fn set_download_limit(&mut self, gid: u64, rate: u64);
    /// Changes a running download's mirrors: the URIs in `del` go, `add` join.
    fn change_mirrors(&mut self, gid: u64, del: &[String], add: &[url::Url]);
    /// Sets the overall speed limit (bytes a second, 0: none).
    fn set_overall_limit(&mut self, rate: u64);
    /// The running downloads' speed, added up.
    fn download_speed(&self) -> u64;
    /// Saves the session now (`aria2.saveSession`); the call's answer waits until it is written.
    fn save_session(&mut self);
    /// Shuts down once the answers to this request are out (`aria2.shutdown`).
    fn shutdown(&mut self);
    /// The downloads that ended within this call (a stop can end one at once), for the daemon
    /// to take as `Supervisor::ended` would, then hand back what to do ([`Control::dispose`]).
    fn take_ended(&mut self) -> Vec<Ended>;
    /// Sends the notification and runs the hook the daemon decided for an ended download.
    fn dispose(&mut self, gid: u64, path: &str, what: Disposition);
}

/// One connection of a running download, as `aria2.getServers` shows it.
#[derive(Debug, Clone)]
pub struct ServerView {
    /// The mirror as given.
    pub uri: String,
    /// Where it led (after redirects).
    pub current: String,
    /// Bytes a second.
    pub speed: u64,
}

/// A download that ended, as the engine leaves it.
#[derive(Debug, Clone)]
pub struct Ended {
    pub gid: u64,
    /// Its failure's exit code (OK: none).
    pub code: ExitCode,
    /// It ran to its end (not stopped part-way).
    pub finished: bool,
    /// Its failure's message.
    pub message: String,
    pub total: u64,
    /// What is on disk as its control file says (all of it once complete).
    pub completed: u64,
    pub dir: String,
    pub path: String,
    pub piece_length: u32,
    /// Its pieces on disk, as `tellStatus` shows them (None while the length is unknown).
    pub bitfield: Option<String>,
    /// Its last control-file save is still in flight: it may not start again before
    /// [`Supervisor::settled`].
    pub settling: bool,
    /// It fetched a Metalink to follow (`--follow-metalink`), to hand to
    /// [`Supervisor::followed`] (an end the daemon takes within a call carries it here).
    pub followed: Option<super::Followed>,
}

/// What the engine does about a download that ended, as the daemon decides.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Disposition {
    /// The notification sent to every WebSocket client.
    pub notify: Option<&'static str>,
    /// The user command run (`--on-download-*`).
    pub hook: Option<HookEvent>,
    /// It went back to the queue (paused, or to start again): not a result of this run.
    pub requeued: bool,
}

/// Which `--on-download-*` command runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HookEvent {
    Start,
    /// Paused (daemon mode).
    Pause,
    Complete,
    Error,
    /// Stopped otherwise: removed, or in progress when the run ended.
    Stop,
}

/// The daemon as the engine reports to it.
pub trait Supervisor {
    /// The next download to start, if one may (the engine starts at most [`max_concurrent`]).
    ///
    /// [`max_concurrent`]: Supervisor::max_concurrent
    fn next_job(&mut self) -> Option<Job>;
    /// `-j`, as the command line or `changeGlobalOption` set it.
    fn max_concurrent(&self) -> usize;
    /// A running download ended.
    fn ended(&mut self, ended: Ended) -> Disposition;
    /// A download that ended with `settling` has its last control file on disk.
    fn settled(&mut self, gid: u64);
    /// A download fetched a Metalink to follow (`--follow-metalink`): the daemon queues the
    /// downloads it describes (told before the download's [`Supervisor::ended`]); `Err`: the
    /// line saying why none.
    fn followed(&mut self, doc: super::Followed) -> Result<(), String>;
    /// Answers an RPC call (its token already checked), driving the engine through `engine`.
    fn call(
        &mut self,
        engine: &mut dyn Control,
        method: &str,
        params: Params,
    ) -> Result<Value, RpcError>;
    /// Whether a session file is to be saved (`--save-session`, or one named by a call).
    fn has_session(&self) -> bool;
    /// Seconds between the session's saves (0: only when asked and at the end).
    fn session_interval(&self) -> u64;
    /// The session's save, to run on the file-job thread (`running`: the running downloads, in
    /// order; `only_if_changed`: an interval's save, which writes nothing if the text is what was
    /// saved last). `None` without a session file.
    fn session_job(
        &mut self,
        running: &[u64],
        only_if_changed: bool,
    ) -> Option<super::reactor::Job>;
    /// A session save ended; the line to log about it, if any.
    fn session_saved(&mut self, result: Result<(), String>) -> Option<(super::LogLevel, String)>;
    /// The exit code's error (the last failure among the results held) and how many downloads
    /// were still in progress when the daemon stopped.
    fn exit_state(&self) -> (Option<ExitCode>, usize);
    /// Checks the daemon's own invariants (debug builds, after every step).
    fn check(&self) {}
}
