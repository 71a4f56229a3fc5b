//! The in-repo proxies: an HTTP forward proxy (`GET http://...` forwarded, `CONNECT` tunnels) and
//! a SOCKS5 server (RFC 1928, RFC 1929 username/password), each on a loopback port, recording
//! what every client asked for so tests can check what ringdl sent the proxy and what it did not.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::thread;

/// What one client asked the proxy for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProxyRecord {
    /// `GET`, `CONNECT` or `SOCKS5`.
    pub kind: String,
    /// The request target: an absolute URL (`GET`), `host:port` (`CONNECT`, `SOCKS5`).
    pub target: String,
    /// The `Proxy-Authorization` value, or `user:password` for SOCKS5.
    pub auth: Option<String>,
}

/// A proxy serving until the test ends.
pub struct TestProxy {
    port: u16,
    seen: Arc<Mutex<Vec<ProxyRecord>>>,
}

impl TestProxy {
    /// An HTTP proxy; with `auth` it answers 407 to requests without those Basic credentials.
    pub fn http(auth: Option<(&str, &str)>) -> TestProxy {
        use base64::Engine as _;
        let want = auth.map(|(u, p)| {
            format!(
                "Basic {}",
                base64::engine::general_purpose::STANDARD.encode(format!("{u}:{p}"))
            )
        });
        TestProxy::serve(move |client, seen| {
            http_client(client, seen, want.as_deref(), Tunnel::AsItComes)
        })
    }

    /// An HTTP proxy that, after its `CONNECT` answer, holds the tunnel 400 ms before carrying
    /// anything: what the server says first never comes in the same read as the answer.
    /// (aria2c 1.36 drops bytes that come with the answer and then waits for the server's
    /// greeting until it times out; with a plain proxy that happened now and then on a loaded
    /// machine, making aria2c's side of a compat case hang.)
    pub fn http_patient() -> TestProxy {
        TestProxy::serve(move |client, seen| http_client(client, seen, None, Tunnel::Patient))
    }

    /// An HTTP proxy whose `CONNECT` answer comes in one write with what the server said first
    /// (an FTP greeting, an SSH version): the client must take those bytes as the server's.
    pub fn http_eager() -> TestProxy {
        TestProxy::serve(move |client, seen| http_client(client, seen, None, Tunnel::Eager))
    }

    /// A SOCKS5 server; with `auth` it requires that username and password.
    pub fn socks5(auth: Option<(&str, &str)>) -> TestProxy {
        let want = auth.map(|(u, p)| format!("{u}:{p}"));
        TestProxy::serve(move |client, seen| socks_client(client, seen, want.as_deref()))
    }

    fn serve<F>(handle: F) -> TestProxy
    where
        F: Fn(TcpStream, &Mutex<Vec<ProxyRecord>>) -> std::io::Result<()> + Send + Sync + 'static,
    {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind the proxy");
        let port = listener.local_addr().expect("proxy address").port();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let handle = Arc::new(handle);
        let s = seen.clone();
        thread::spawn(move || {
            for client in listener.incoming().flatten() {
                let (handle, s) = (handle.clone(), s.clone());
                thread::spawn(move || {
                    let _ = handle(client, &s);
                });
            }
        });
        TestProxy { port, seen }
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// What every client asked for, in order.
    pub fn seen(&self) -> Vec<ProxyRecord> {
        self.seen.lock().map(|v| v.clone()).unwrap_or_default()
    }
}

/// Copies both ways until either side ends.
fn pipe(a: TcpStream, b: TcpStream) {
    let (mut a2, mut b2) = match (a.try_clone(), b.try_clone()) {
        (Ok(a2), Ok(b2)) => (a2, b2),
        _ => return,
    };
    let (mut a, mut b) = (a, b);
    let t = thread::spawn(move || {
        let _ = std::io::copy(&mut a2, &mut b2);
        let _ = b2.shutdown(Shutdown::Write);
    });
    let _ = std::io::copy(&mut b, &mut a);
    let _ = a.shutdown(Shutdown::Write);
    let _ = t.join();
}

/// How a `CONNECT` tunnel's first bytes from the server reach the client.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Tunnel {
    /// As they come.
    AsItComes,
    /// In the same write as the proxy's answer.
    Eager,
    /// Only 400 ms after the answer.
    Patient,
}

fn http_client(
    client: TcpStream,
    seen: &Mutex<Vec<ProxyRecord>>,
    want: Option<&str>,
    tunnel: Tunnel,
) -> std::io::Result<()> {
    let mut reader = BufReader::new(client.try_clone()?);
    let mut head = Vec::new();
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line)? == 0 {
            return Ok(());
        }
        if line == "\r\n" {
            break;
        }
        head.push(line.trim_end().to_string());
    }
    let request = head.first().cloned().unwrap_or_default();
    let mut parts = request.split_whitespace();
    let (method, target) = (
        parts.next().unwrap_or_default().to_string(),
        parts.next().unwrap_or_default().to_string(),
    );
    let header = |name: &str| {
        head.iter().skip(1).find_map(|h| {
            let (n, v) = h.split_once(':')?;
            n.trim()
                .eq_ignore_ascii_case(name)
                .then(|| v.trim().to_string())
        })
    };
    let auth = header("Proxy-Authorization");
    if let Ok(mut s) = seen.lock() {
        s.push(ProxyRecord {
            kind: method.clone(),
            target: target.clone(),
            auth: auth.clone(),
        });
    }
    let mut client = client;
    if want.is_some() && auth.as_deref() != want {
        client.write_all(
            b"HTTP/1.1 407 Proxy Authentication Required\r\nProxy-Authenticate: Basic realm=\"t\"\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
        )?;
        return Ok(());
    }
    if method == "CONNECT" {
        let upstream = TcpStream::connect(target.as_str())?;
        let mut answer = b"HTTP/1.1 200 Connection established\r\n\r\n".to_vec();
        if tunnel == Tunnel::Eager {
            let mut first = [0u8; 4096];
            upstream.set_read_timeout(Some(std::time::Duration::from_millis(500)))?;
            if let Ok(n) = (&upstream).read(&mut first) {
                answer.extend_from_slice(&first[..n]);
            }
            upstream.set_read_timeout(None)?;
        }
        client.write_all(&answer)?;
        if tunnel == Tunnel::Patient {
            thread::sleep(std::time::Duration::from_millis(400));
        }
        pipe(client, upstream);
        return Ok(());
    }
    // GET http://host:port/path: one request per client connection, forwarded in origin form.
    let rest = target.strip_prefix("http://").unwrap_or(&target);
    let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    let path = if path.is_empty() { "/" } else { path };
    let mut upstream = TcpStream::connect(authority)?;
    let mut out = format!("{method} {path} HTTP/1.1\r\n");
    for h in head.iter().skip(1) {
        let name = h
            .split(':')
            .next()
            .unwrap_or_default()
            .trim()
            .to_ascii_lowercase();
        if !matches!(
            name.as_str(),
            "proxy-authorization" | "proxy-connection" | "connection"
        ) {
            out.push_str(h);
            out.push_str("\r\n");
        }
    }
    out.push_str("Via: 1.1 ringdl-test-proxy\r\nConnection: close\r\n\r\n");
    upstream.write_all(out.as_bytes())?;
    let mut upstream_read = upstream.try_clone()?;
    let _ = std::io::copy(&mut upstream_read, &mut client);
    let _ = client.shutdown(Shutdown::Both);
    Ok(())
}

fn socks_client(
    mut client: TcpStream,
    seen: &Mutex<Vec<ProxyRecord>>,
    want: Option<&str>,
) -> std::io::Result<()> {
    let mut b = [0u8; 2];
    client.read_exact(&mut b)?;
    let mut methods = vec![0u8; b[1] as usize];
    client.read_exact(&mut methods)?;
    let mut auth = None;
    match want {
        Some(want) if methods.contains(&2) => {
            client.write_all(&[5, 2])?;
            let mut v = [0u8; 2];
            client.read_exact(&mut v)?;
            let mut user = vec![0u8; v[1] as usize];
            client.read_exact(&mut user)?;
            let mut l = [0u8; 1];
            client.read_exact(&mut l)?;
            let mut pass = vec![0u8; l[0] as usize];
            client.read_exact(&mut pass)?;
            let got = format!(
                "{}:{}",
                String::from_utf8_lossy(&user),
                String::from_utf8_lossy(&pass)
            );
            let ok = got == want;
            auth = Some(got);
            client.write_all(&[1, if ok { 0 } else { 1 }])?;
            if !ok {
                return Ok(());
            }
        }
        Some(_) => {
            client.write_all(&[5, 0xff])?;
            return Ok(());
        }
        None => client.write_all(&[5, 0])?,
    }
    let mut req = [0u8; 4];
    client.read_exact(&mut req)?;
    let host = match req[3] {
        1 => {
            let mut a = [0u8; 4];
            client.read_exact(&mut a)?;
            std::net::Ipv4Addr::from(a).to_string()
        }
        4 => {
            let mut a = [0u8; 16];
            client.read_exact(&mut a)?;
            format!("[{}]", std::net::Ipv6Addr::from(a))
        }
        _ => {
            let mut l = [0u8; 1];
            client.read_exact(&mut l)?;
            let mut name = vec![0u8; l[0] as usize];
            client.read_exact(&mut name)?;
            String::from_utf8_lossy(&name).into_owned()
        }
    };
    let mut p = [0u8; 2];
    client.read_exact(&mut p)?;
    let target = format!("{host}:{}", u16::from_be_bytes(p));
    if let Ok(mut s) = seen.lock() {
        s.push(ProxyRecord {
            kind: "SOCKS5".into(),
            target: target.clone(),
            auth,
        });
    }
    match TcpStream::connect(target.as_str()) {
        Ok(upstream) => {
            client.write_all(&[5, 0, 0, 1, 0, 0, 0, 0, 0, 0])?;
            pipe(client, upstream);
        }
        Err(_) => client.write_all(&[5, 5, 0, 1, 0, 0, 0, 0, 0, 0])?,
    }
    Ok(())
}
