//! The engine: one thread, one loop over a reactor (io_uring in production, a seeded simulation in
//! tests), turning completions into calls on the protocol layers. `http/`, `tls/`, `plan/` and
//! `store/` decide what the bytes mean; `reactor/` is the only code that touches the kernel; the
//! driver is split by job. README.md in this folder says which part owns what.
mod conn;
mod driver;
pub(crate) mod packing;
mod reactor;
mod resolver;
#[cfg(test)]
mod simulation;
pub mod sys;

pub use conn::{Job, Outcome};
pub use driver::daemon::Pending;
pub use driver::{
    engine_report, run, serve, session_entry_of_job, StartError, Summary, MAX_RESULTS,
};
