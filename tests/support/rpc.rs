//! A daemon under test (`--enable-rpc` on a free port) and small RPC clients: JSON-RPC over HTTP
//! (one request per connection, or several on one kept-alive connection) and over WebSocket.
use super::{binary_under_test, drain, isolated_command, TestDir};
use serde_json::{json, Value};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::Child;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A byte stream to the daemon: plain TCP, or TLS over it.
pub trait Stream: Read + Write + Send {}
impl<T: Read + Write + Send> Stream for T {}

/// How clients reach the daemon: plain, or over TLS trusting one certificate (`--rpc-secure`).
#[derive(Clone, Default)]
pub enum Transport {
    #[default]
    Plain,
    Tls(Arc<rustls::ClientConfig>),
}

impl Transport {
    /// TLS to `localhost`, trusting the PEM certificate `cert`.
    pub fn trusting(cert_pem: &str) -> Transport {
        use rustls::pki_types::{pem::PemObject, CertificateDer};
        let mut roots = rustls::RootCertStore::empty();
        roots
            .add(CertificateDer::from_pem_slice(cert_pem.as_bytes()).expect("a PEM certificate"))
            .expect("add the certificate");
        let config = rustls::ClientConfig::builder_with_provider(ringdl::tls::crypto_provider())
            .with_safe_default_protocol_versions()
            .expect("versions")
            .with_root_certificates(roots)
            .with_no_client_auth();
        Transport::Tls(Arc::new(config))
    }

    /// A new connection to `port` on loopback.
    pub fn connect(&self, port: u16) -> std::io::Result<Box<dyn Stream>> {
        let s = TcpStream::connect(("127.0.0.1", port))?;
        s.set_read_timeout(Some(Duration::from_secs(20)))?;
        match self {
            Transport::Plain => Ok(Box::new(s)),
            Transport::Tls(config) => {
                let conn = rustls::ClientConnection::new(
                    config.clone(),
                    "localhost".try_into().expect("a server name"),
                )
                .map_err(std::io::Error::other)?;
                Ok(Box::new(rustls::StreamOwned::new(conn, s)))
            }
        }
    }
}

/// A daemon process; killed (with everything it started) when dropped.
pub struct Daemon {
    pub port: u16,
    child: Option<Child>,
    out: Option<std::thread::JoinHandle<String>>,
    err: Option<std::thread::JoinHandle<String>>,
    pub secret: Option<String>,
    pub transport: Transport,
}

/// What a daemon printed and how it exited.
#[derive(Debug)]
pub struct Ended {
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
}

impl Daemon {
    /// Starts `program` (ringdl, or aria2c for the compat cases) with `--enable-rpc` on a free port
    /// and `args`, in `dir`, and waits until it answers.
    pub fn start_program(program: &Path, dir: &TestDir, args: &[&str]) -> Daemon {
        Daemon::start_over(program, dir, args, Transport::Plain)
    }

    /// As `start_program`, reached over `transport`.
    pub fn start_over(
        program: &Path,
        dir: &TestDir,
        args: &[&str],
        transport: Transport,
    ) -> Daemon {
        let port = super::ports::port_for_child();
        let home = dir.join(".home");
        std::fs::create_dir_all(&home).expect("create HOME");
        let mut cmd = isolated_command(program, dir.path(), &home);
        cmd.arg("--enable-rpc")
            .arg(format!("--rpc-listen-port={port}"))
            .args(args);
        let mut child = cmd.spawn().expect("spawn the daemon");
        let out = drain(child.stdout.take().expect("stdout"));
        let err = drain(child.stderr.take().expect("stderr"));
        let secret = args
            .iter()
            .find_map(|a| a.strip_prefix("--rpc-secret="))
            .map(str::to_string);
        let mut d = Daemon {
            port,
            child: Some(child),
            out: Some(out),
            err: Some(err),
            secret,
            transport,
        };
        let start = Instant::now();
        loop {
            // The answer must come from this daemon: a port of another test's daemon would answer
            // as well.
            let ours = d
                .child
                .as_ref()
                .is_some_and(|c| super::ports::listens(c.id(), port));
            if ours {
                if let Ok(v) = d.try_call("system.listMethods", json!([])) {
                    if v.get("result").is_some() {
                        return d;
                    }
                }
            }
            if let Some(c) = d.child.as_mut() {
                if let Ok(Some(status)) = c.try_wait() {
                    let e = d.finish_after(status.code());
                    panic!("the daemon exited at start: {e:?}");
                }
            }
            assert!(
                start.elapsed() < Duration::from_secs(10),
                "the daemon did not answer on port {port}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// ringdl as a daemon.
    pub fn start(dir: &TestDir, args: &[&str]) -> Daemon {
        Daemon::start_program(&binary_under_test(), dir, args)
    }

    /// `params` with the secret's token in front (when the daemon has one).
    pub fn with_token(&self, params: Value) -> Value {
        let mut list = match params {
            Value::Array(a) => a,
            other => vec![other],
        };
        if let Some(s) = &self.secret {
            list.insert(0, json!(format!("token:{s}")));
        }
        Value::Array(list)
    }

    /// Calls `method` (the token added) and returns the whole response object.
    pub fn try_call(&self, method: &str, params: Value) -> std::io::Result<Value> {
        let params = if method.starts_with("aria2.") {
            self.with_token(params)
        } else {
            params
        };
        let body = json!({"jsonrpc": "2.0", "id": "t", "method": method, "params": params});
        let (_, _, text) = http_over(
            &self.transport,
            self.port,
            "POST",
            "/jsonrpc",
            &[],
            body.to_string().as_bytes(),
        )?;
        serde_json::from_slice(&text).map_err(std::io::Error::other)
    }

    /// Calls `method` and returns its result; panics on an error response.
    pub fn call(&self, method: &str, params: Value) -> Value {
        let v = self
            .try_call(method, params.clone())
            .unwrap_or_else(|e| panic!("{method}({params}): {e}"));
        match v.get("result") {
            Some(r) => r.clone(),
            None => panic!("{method}({params}) failed: {v}"),
        }
    }

    /// Calls `method` and returns its error message; panics if it succeeded.
    pub fn call_err(&self, method: &str, params: Value) -> String {
        let v = self.try_call(method, params.clone()).expect("call");
        match v["error"]["message"].as_str() {
            Some(m) => m.to_string(),
            None => panic!("{method}({params}) did not fail: {v}"),
        }
    }

    /// Polls `tellStatus(gid)` until `done` says yes (or panics after `limit`).
    pub fn wait_for(&self, gid: &str, limit: Duration, done: impl Fn(&Value) -> bool) -> Value {
        let start = Instant::now();
        loop {
            let s = self.call("aria2.tellStatus", json!([gid]));
            if done(&s) {
                return s;
            }
            assert!(start.elapsed() < limit, "gave up waiting on {gid}: {s}");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Waits for the process to exit (after a shutdown), up to `limit`.
    pub fn wait_exit(mut self, limit: Duration) -> Ended {
        let start = Instant::now();
        loop {
            if let Some(c) = self.child.as_mut() {
                if let Ok(Some(status)) = c.try_wait() {
                    return self.finish_after(status.code());
                }
            }
            assert!(start.elapsed() < limit, "the daemon did not exit");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn finish_after(&mut self, code: Option<i32>) -> Ended {
        self.child = None;
        Ended {
            code,
            stdout: self
                .out
                .take()
                .and_then(|h| h.join().ok())
                .unwrap_or_default(),
            stderr: self
                .err
                .take()
                .and_then(|h| h.join().ok())
                .unwrap_or_default(),
        }
    }

    /// The process id (for signals).
    pub fn pid(&self) -> u32 {
        self.child.as_ref().map_or(0, Child::id)
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        if let Some(c) = self.child.as_mut() {
            // SAFETY: kill(2) on the process group the daemon was started in.
            unsafe {
                libc::kill(-(c.id() as libc::pid_t), libc::SIGKILL);
            }
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// One HTTP request on a new connection: (status, head, body).
pub fn http(
    port: u16,
    method: &str,
    target: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> std::io::Result<(u16, String, Vec<u8>)> {
    http_over(&Transport::Plain, port, method, target, headers, body)
}

/// One HTTP request on a new connection over `transport`.
pub fn http_over(
    transport: &Transport,
    port: u16,
    method: &str,
    target: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> std::io::Result<(u16, String, Vec<u8>)> {
    let mut s = transport.connect(port)?;
    let mut req = format!(
        "{method} {target} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Length: {}\r\nConnection: close\r\n",
        body.len()
    );
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    req.push_str("\r\n");
    s.write_all(req.as_bytes())?;
    s.write_all(body)?;
    read_response(&mut std::io::BufReader::new(s))
}

/// Reads one response (head, then `Content-Length` bytes) from `s`, leaving what follows in the
/// reader (a pipelined answer).
pub fn read_response(s: &mut impl std::io::BufRead) -> std::io::Result<(u16, String, Vec<u8>)> {
    let mut head = String::new();
    loop {
        let mut line = String::new();
        if s.read_line(&mut line)? == 0 {
            return Err(std::io::Error::new(
                std::io::ErrorKind::UnexpectedEof,
                "closed before a response",
            ));
        }
        head.push_str(&line);
        if line == "\r\n" {
            break;
        }
    }
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    let len: usize = head
        .lines()
        .find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.eq_ignore_ascii_case("content-length")
                .then(|| v.trim().parse().ok())?
        })
        .unwrap_or(0);
    let mut body = vec![0u8; len];
    s.read_exact(&mut body)?;
    Ok((status, head, body))
}

/// A connection to the daemon, read through a buffer.
pub fn connect(port: u16) -> (TcpStream, std::io::BufReader<TcpStream>) {
    let s = TcpStream::connect(("127.0.0.1", port)).expect("connect to the daemon");
    s.set_read_timeout(Some(Duration::from_secs(10)))
        .expect("timeout");
    let r = std::io::BufReader::new(s.try_clone().expect("clone the socket"));
    (s, r)
}

/// A WebSocket client on `/jsonrpc`.
pub struct WsClient {
    s: Box<dyn Stream>,
    buf: Vec<u8>,
}

impl WsClient {
    pub fn connect(port: u16, extra: &[(&str, &str)]) -> std::io::Result<WsClient> {
        WsClient::connect_over(&Transport::Plain, port, extra)
    }

    pub fn connect_over(
        transport: &Transport,
        port: u16,
        extra: &[(&str, &str)],
    ) -> std::io::Result<WsClient> {
        let mut s = transport.connect(port)?;
        let mut req = format!(
            "GET /jsonrpc HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n"
        );
        for (k, v) in extra {
            req.push_str(&format!("{k}: {v}\r\n"));
        }
        req.push_str("\r\n");
        s.write_all(req.as_bytes())?;
        let mut buf = Vec::new();
        let mut chunk = [0u8; 4096];
        let end = loop {
            if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                break i + 4;
            }
            let n = s.read(&mut chunk)?;
            if n == 0 {
                return Err(std::io::Error::other("closed during the handshake"));
            }
            buf.extend_from_slice(&chunk[..n]);
        };
        let head = String::from_utf8_lossy(&buf[..end]).into_owned();
        if !head.starts_with("HTTP/1.1 101") || !head.contains("s3pPLMBiTxaQ9kYGzzhZRbK+xOo=") {
            return Err(std::io::Error::other(format!("handshake refused: {head}")));
        }
        buf.drain(..end);
        Ok(WsClient { s, buf })
    }

    /// Sends a masked text frame.
    pub fn send_text(&mut self, text: &str) -> std::io::Result<()> {
        self.send_frame(0x1, text.as_bytes())
    }

    pub fn send_frame(&mut self, op: u8, payload: &[u8]) -> std::io::Result<()> {
        let mut f = vec![0x80 | op];
        match payload.len() {
            n if n < 126 => f.push(0x80 | n as u8),
            n if n <= 0xFFFF => {
                f.push(0x80 | 126);
                f.extend_from_slice(&(n as u16).to_be_bytes());
            }
            n => {
                f.push(0x80 | 127);
                f.extend_from_slice(&(n as u64).to_be_bytes());
            }
        }
        let key = [0x12u8, 0x34, 0x56, 0x78];
        f.extend_from_slice(&key);
        f.extend(payload.iter().enumerate().map(|(i, b)| b ^ key[i % 4]));
        self.s.write_all(&f)
    }

    /// Writes raw bytes (a hand-made frame).
    pub fn send_raw(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        self.s.write_all(bytes)
    }

    /// The next server frame: (opcode, payload).
    pub fn next_frame(&mut self) -> std::io::Result<(u8, Vec<u8>)> {
        let mut chunk = [0u8; 8192];
        loop {
            if self.buf.len() >= 2 {
                let op = self.buf[0] & 0x0F;
                let (len, at) = match self.buf[1] & 0x7F {
                    126 if self.buf.len() >= 4 => {
                        (u16::from_be_bytes([self.buf[2], self.buf[3]]) as usize, 4)
                    }
                    127 if self.buf.len() >= 10 => {
                        let mut b = [0u8; 8];
                        b.copy_from_slice(&self.buf[2..10]);
                        (u64::from_be_bytes(b) as usize, 10)
                    }
                    126 | 127 => (usize::MAX, 0),
                    n => (n as usize, 2),
                };
                if len != usize::MAX && self.buf.len() >= at + len {
                    let payload = self.buf[at..at + len].to_vec();
                    self.buf.drain(..at + len);
                    return Ok((op, payload));
                }
            }
            let n = self.s.read(&mut chunk)?;
            if n == 0 {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::UnexpectedEof,
                    "closed",
                ));
            }
            self.buf.extend_from_slice(&chunk[..n]);
        }
    }

    /// The next text message, as JSON.
    pub fn next_json(&mut self) -> std::io::Result<Value> {
        loop {
            let (op, payload) = self.next_frame()?;
            if op == 0x1 {
                return serde_json::from_slice(&payload).map_err(std::io::Error::other);
            }
            if op == 0x8 {
                return Err(std::io::Error::other(format!("closed: {payload:?}")));
            }
        }
    }
}
