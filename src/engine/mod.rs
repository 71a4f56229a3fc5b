//! The io_uring driver: one ring, one registered buffer pool, the table of operations in flight, and
//! the loop that turns completions into calls on the protocol layers. Connections, downloads and the
//! plan are plain data here; `http/`, `tls/`, `plan/` and `store/` decide what the bytes mean.
//!
//! Ring invariants (ARCHITECTURE.md): a buffer handed to the kernel belongs to the in-flight table
//! until its completion arrives; every exit path drains the table before the ring and pool go away;
//! short transfers and EINTR/EAGAIN are resubmitted; the ring is probed for real at start.
mod conn;
mod driver;
mod reactor;
mod resolver;
pub mod sys;

pub use conn::{Job, Outcome};
pub use driver::{run, StartError, Summary, MAX_RESULTS};
