//! ringdl: an aria2c-compatible downloader whose data path runs through one io_uring ring.
//!
//! Layers (ARCHITECTURE.md): `cli` parses the command line, `http`, `tls` and `dns` (the resolver's
//! exchange with DNS servers) are sans-I/O protocol state machines, `plan` splits files into
//! ranges, `store` decides where bytes go on disk, `engine` owns the ring and every byte in
//! flight, `ui` shows progress and results.
pub mod cli;
pub mod daemon;
pub mod dns;
pub mod engine;
pub mod ftp;
#[doc(hidden)]
pub mod fuzzing;
pub mod http;
pub mod metalink;
pub mod plan;
pub mod rpc;
pub mod ssh;
pub mod store;
pub mod tls;
pub mod ui;
