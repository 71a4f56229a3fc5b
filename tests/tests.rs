//! The one integration-test binary: the test server's and helpers' own tests (`support::`), the
//! ringdl binary's end-to-end tests against that server (`download::`, `engine::`), against a real
//! nginx (`nginx::`), the generated docs (`generated::`), and the differential suite against aria2c
//! (`compat::`, kept in compat-tests/).

mod cli;
mod clients;
#[path = "../compat-tests/mod.rs"]
mod compat;
mod dns;
mod download;
mod engine;
mod faults;
mod findings;
mod ftp;
mod fuzz_regressions;
mod generated;
mod hooks;
mod hostile;
mod integrity;
mod interfaces;
mod metalink;
mod mirrors;
mod nginx;
mod portable;
mod programs;
mod proxies;
mod requests;
mod resume;
mod rpc;
mod serverstat;
mod sftp;
mod soak;
mod stops;
mod support;
mod tls;
