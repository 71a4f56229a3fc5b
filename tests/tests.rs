//! The one integration-test binary: the test server's and helpers' own tests (`support::`), the
//! ringdl binary's end-to-end tests against that server (`download::`), and against a real nginx
//! (`nginx::`).

mod download;
mod engine;
mod nginx;
mod support;
