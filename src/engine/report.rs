//! What the engine tells the outside, and nothing of how it looks: log lines by level, the
//! progress of the active downloads at every tick, aria2's periodic summary. `ui::Console` renders
//! them; the simulation keeps or drops them. The engine never prints.
use std::time::Duration;

/// Log levels, lowest first (aria2's `--log-level` and `--console-log-level`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum LogLevel {
    Debug,
    Info,
    Notice,
    Warn,
    Error,
}

/// A snapshot of one active download, for the readout and the summary.
#[derive(Debug, Clone)]
pub struct Progress {
    pub gid: u64,
    pub done: u64,
    pub total: Option<u64>,
    pub connections: usize,
    pub speed: u64,
}

/// Where the engine's reports go.
pub trait Report {
    /// One log line at `level`.
    fn log(&mut self, level: LogLevel, msg: &str);
    /// A NOTICE line.
    fn notice(&mut self, msg: &str) {
        self.log(LogLevel::Notice, msg);
    }
    /// An ERROR line.
    fn error(&mut self, msg: &str) {
        self.log(LogLevel::Error, msg);
    }
    /// The active downloads, every [`tick_interval`](Self::tick_interval).
    fn tick(&mut self, active: &[Progress]);
    /// aria2's periodic summary (`--summary-interval`): the active downloads and their paths.
    fn summary(&mut self, active: &[Progress], paths: &[String]);
    /// The progress display ends (before an emergency stop's line, and at the end).
    fn finish(&mut self);
    /// How often the engine should report progress.
    fn tick_interval(&self) -> Duration;
}
