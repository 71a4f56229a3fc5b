//! The engine: one thread, one loop over a reactor (io_uring in production, a seeded simulation in
//! tests), turning completions into calls on the protocol layers. `http/`, `tls/`, `plan/` and
//! `store/` decide what the bytes mean; `reactor/` is the only code that touches the kernel; the
//! driver is split by job. README.md in this folder says which part owns what.
mod config;
mod conn;
mod download;
mod driver;
mod exit;
mod ftp;
mod job;
pub mod layout;
pub(crate) mod packing;
pub mod pieces;
mod reactor;
pub mod report;
mod resolver;
mod sftp;
#[cfg(test)]
mod simulation;
mod sink;
mod sources;
mod supervisor;
pub mod sys;

pub use config::{
    index_out, Config, DownloadOptions, EngineChoice, Follow, Hooks, MetalinkOptions, RpcSettings,
    SessionOut, UriSelector,
};
pub use driver::{
    engine_report, random_gid, run, run_following, serve, session_entry_of_job, Follower,
    StartError, Summary, MAX_RESULTS,
};
/// Work for the file-job thread (a session's save).
pub type BlockingJob = reactor::Job;
pub use exit::ExitCode;
pub use job::{Followed, Job, Outcome};
pub use pieces::PieceHashes;
pub use report::{LogLevel, Progress, Report};
pub use sources::{check_uri, is_recognized_uri};
pub use supervisor::{Control, Disposition, Ended, HookEvent, ServerView, Supervisor};
