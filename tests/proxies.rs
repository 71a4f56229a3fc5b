//! Downloads through proxies: real ones packaged by Debian, started by the tests (tinyproxy for
//! HTTP `GET` and `CONNECT`, microsocks for SOCKS5), and fake ones that misbehave (garbage for an
//! answer, a close in the middle of the handshake, the wrong SOCKS version). Under
//! `RINGDL_REQUIRE_PEERS=1` a missing tinyproxy or microsocks fails the test.

use std::io::{Read, Write};
use std::net::TcpListener;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use crate::support::server::{Route, TestServer};
use crate::support::{
    content, have_program, require_peer, ringdl, run_program, sha256_file, sha256_hex, Run,
    TestDir, RUN_TIMEOUT,
};

/// A proxy process, killed when dropped.
struct Daemon {
    child: Child,
    port: u16,
}

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn wait_listening(child: &mut std::process::Child, port: u16) {
    if let Err(e) =
        crate::support::ports::wait_until_child_listens(child, &[port], Duration::from_secs(10))
    {
        panic!("proxy on {port}: {e}");
    }
}

/// tinyproxy on a free port, allowing CONNECT to any port; `auth` adds `BasicAuth`.
fn tinyproxy(dir: &TestDir, auth: Option<(&str, &str)>) -> Daemon {
    let port = crate::support::ports::port_for_child();
    let conf = dir.join(&format!("tinyproxy-{port}.conf"));
    let mut text = format!(
        "Port {port}\nListen 127.0.0.1\nTimeout 60\nAllow 127.0.0.1\nLogLevel Info\nMaxClients 64\n"
    );
    if let Some((u, p)) = auth {
        text.push_str(&format!("BasicAuth {u} {p}\n"));
    }
    std::fs::write(&conf, text).unwrap();
    let mut child = Command::new("tinyproxy")
        .args(["-d", "-c"])
        .arg(&conf)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start tinyproxy");
    wait_listening(&mut child, port);
    Daemon { child, port }
}

/// microsocks on a free port, with a user and password if given.
fn microsocks(auth: Option<(&str, &str)>) -> Daemon {
    let port = crate::support::ports::port_for_child();
    let mut cmd = Command::new("microsocks");
    cmd.args(["-i", "127.0.0.1", "-p", &port.to_string()]);
    if let Some((u, p)) = auth {
        cmd.args(["-u", u, "-P", p]);
    }
    let mut child = cmd
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start microsocks");
    wait_listening(&mut child, port);
    Daemon { child, port }
}

fn get(dir: &TestDir, opts: &[String], url: &str) -> Run {
    let mut args: Vec<String> = vec!["--no-conf".into(), format!("-d{}", dir.path().display())];
    args.extend(opts.iter().cloned());
    args.push(url.to_string());
    ringdl(dir, &args)
}

fn assert_got(run: &Run, path: &Path, data: &[u8]) {
    assert_eq!(run.code(), 0, "{run}");
    assert_eq!(sha256_file(path), sha256_hex(data), "{run}");
}

/// Through tinyproxy: plain http as `GET http://...` (tinyproxy adds its `Via`), https through a
/// `CONNECT` tunnel (the origin sees TLS from the proxy's connection), plain http through a tunnel
/// with `--proxy-method=tunnel`, the proxy from `http_proxy`/`HTTPS_PROXY`, and `--no-proxy`
/// going direct. aria2c does the same with the same command lines (where it has the option).
#[test]
fn http_proxy_get_connect_environment_and_no_proxy_through_tinyproxy() {
    if !require_peer("tinyproxy", have_program("tinyproxy")) {
        return;
    }
    let dir0 = TestDir::new();
    let proxy = tinyproxy(&dir0, None);
    let purl = format!("http://127.0.0.1:{}", proxy.port);
    let plain = TestServer::plain();
    let tls = TestServer::https();
    let data = content(501, 3 << 20);
    plain.route("/f.bin", Route::bytes(data.clone()));
    tls.route("/f.bin", Route::bytes(data.clone()));
    let ca = format!("--ca-certificate={}", tls.ca_file().display());
    let split = ["-x4".to_string(), "-k1M".to_string()];

    let via = |s: &TestServer| {
        s.requests_to("/f.bin")
            .iter()
            .filter(|r| r.header("Via").is_some())
            .count()
    };

    let dir = TestDir::new();
    let mut opts = vec![format!("--all-proxy={purl}")];
    opts.extend(split.iter().cloned());
    let run = get(&dir, &opts, &plain.url("/f.bin"));
    assert_got(&run, &dir.join("f.bin"), &data);
    let through = via(&plain);
    assert!(through >= 2, "split requests through the proxy: {through}");
    assert_eq!(through, plain.requests_to("/f.bin").len());

    let dir = TestDir::new();
    let mut opts = vec![format!("--https-proxy={purl}"), ca.clone()];
    opts.extend(split.iter().cloned());
    let run = get(&dir, &opts, &tls.url("/f.bin"));
    assert_got(&run, &dir.join("f.bin"), &data);
    assert_eq!(via(&tls), 0, "CONNECT: the proxy cannot see into TLS");

    let dir = TestDir::new();
    let before = plain.requests_to("/f.bin").len();
    let opts = vec![
        format!("--http-proxy={purl}"),
        "--proxy-method=tunnel".into(),
    ];
    let run = get(&dir, &opts, &plain.url("/f.bin"));
    assert_got(&run, &dir.join("f.bin"), &data);
    let after = plain.requests_to("/f.bin");
    assert!(
        after[before..].iter().all(|r| r.header("Via").is_none()),
        "tunnelled, not forwarded"
    );

    // --no-proxy: direct.
    let dir = TestDir::new();
    let before = plain.requests_to("/f.bin").len();
    let opts = vec![
        format!("--all-proxy={purl}"),
        "--no-proxy=localhost,127.0.0.0/8".into(),
    ];
    let run = get(&dir, &opts, &plain.url("/f.bin"));
    assert_got(&run, &dir.join("f.bin"), &data);
    assert!(plain.requests_to("/f.bin")[before..]
        .iter()
        .all(|r| r.header("Via").is_none()));

    // The environment: lower and upper case.
    for (var, url, server) in [
        ("http_proxy", plain.url("/f.bin"), &plain),
        ("HTTPS_PROXY", tls.url("/f.bin"), &tls),
    ] {
        let dir = TestDir::new();
        let before = server.requests_to("/f.bin").len();
        let home = dir.join(".home");
        std::fs::create_dir_all(&home).unwrap();
        let mut cmd = crate::support::isolated_command(
            &crate::support::binary_under_test(),
            dir.path(),
            &home,
        );
        cmd.env(var, &purl).args([
            "--no-conf",
            &format!("-d{}", dir.path().display()),
            &ca,
            &url,
        ]);
        let out = cmd.output().expect("run ringdl");
        assert_eq!(
            out.status.code(),
            Some(0),
            "{var}: {}",
            String::from_utf8_lossy(&out.stdout)
        );
        assert_eq!(sha256_file(&dir.join("f.bin")), sha256_hex(&data));
        let seen = server.requests_to("/f.bin");
        assert!(seen.len() > before);
        if var == "http_proxy" {
            assert!(
                seen[before..].iter().all(|r| r.header("Via").is_some()),
                "{var} not used"
            );
        }
    }

    if have_program("aria2c") {
        let dir = TestDir::new();
        let args = [
            "--no-conf".to_string(),
            format!("-d{}", dir.path().display()),
            format!("--all-proxy={purl}"),
            plain.url("/f.bin"),
        ];
        let run = run_program(Path::new("aria2c"), &dir, &args, RUN_TIMEOUT);
        assert_got(&run, &dir.join("f.bin"), &data);
    }
}

/// A proxy that wants credentials: without them the download fails with the proxy's reason;
/// with `--http-proxy-user`/`--http-proxy-passwd` (or in the proxy URL) it goes through, and the
/// origin never sees them.
#[test]
fn proxy_credentials_through_tinyproxy() {
    if !require_peer("tinyproxy", have_program("tinyproxy")) {
        return;
    }
    let dir0 = TestDir::new();
    let proxy = tinyproxy(&dir0, Some(("pu", "ppw")));
    let server = TestServer::plain();
    let tls = TestServer::https();
    let data = content(502, 500_000);
    server.route("/f.bin", Route::bytes(data.clone()));
    tls.route("/f.bin", Route::bytes(data.clone()));
    let ca = format!("--ca-certificate={}", tls.ca_file().display());

    let dir = TestDir::new();
    let opts = vec![
        format!("--all-proxy=127.0.0.1:{}", proxy.port),
        "--max-tries=1".into(),
        ca.clone(),
    ];
    let run = get(&dir, &opts, &tls.url("/f.bin"));
    assert_ne!(run.code(), 0, "{run}");
    assert!(run.output().contains("407"), "{run}");

    for opts in [
        vec![
            format!("--all-proxy=127.0.0.1:{}", proxy.port),
            "--all-proxy-user=pu".into(),
            "--all-proxy-passwd=ppw".into(),
        ],
        vec![format!(
            "--http-proxy=http://pu:ppw@127.0.0.1:{}",
            proxy.port
        )],
    ] {
        let dir = TestDir::new();
        let run = get(&dir, &opts, &server.url("/f.bin"));
        assert_got(&run, &dir.join("f.bin"), &data);
        assert!(!run.output().contains("ppw"), "{run}");
    }
    let dir = TestDir::new();
    let opts = vec![
        format!("--https-proxy=http://pu:ppw@127.0.0.1:{}", proxy.port),
        ca,
    ];
    let run = get(&dir, &opts, &tls.url("/f.bin"));
    assert_got(&run, &dir.join("f.bin"), &data);
    for s in [&server, &tls] {
        assert!(s
            .requests()
            .iter()
            .all(|r| r.header("Proxy-Authorization").is_none()));
    }
}

/// SOCKS5 through microsocks: `socks5h://` (the proxy resolves `localhost`), `socks5://` (ringdl
/// resolves it and sends the address), with a user and password, a wrong password refused, and
/// https through the SOCKS tunnel.
#[test]
fn socks5_and_socks5h_through_microsocks() {
    if !require_peer("microsocks", have_program("microsocks")) {
        return;
    }
    let open = microsocks(None);
    let locked = microsocks(Some(("su", "spw")));
    let plain = TestServer::plain();
    let tls = TestServer::https();
    let data = content(503, 3 << 20);
    plain.route("/f.bin", Route::bytes(data.clone()));
    tls.route("/f.bin", Route::bytes(data.clone()));
    let ca = format!("--ca-certificate={}", tls.ca_file().display());
    let cases = [
        (
            format!("socks5h://127.0.0.1:{}", open.port),
            plain.url_localhost("/f.bin"),
        ),
        (
            format!("socks5://127.0.0.1:{}", open.port),
            plain.url_localhost("/f.bin"),
        ),
        (
            format!("socks5h://su:spw@127.0.0.1:{}", locked.port),
            plain.url("/f.bin"),
        ),
        (
            format!("socks5://127.0.0.1:{}", open.port),
            tls.url("/f.bin"),
        ),
    ];
    for (proxy, url) in cases {
        let dir = TestDir::new();
        let opts = vec![
            format!("--all-proxy={proxy}"),
            "-x4".into(),
            "-k1M".into(),
            ca.clone(),
        ];
        let run = get(&dir, &opts, &url);
        assert_got(&run, &dir.join("f.bin"), &data);
        assert!(!run.output().contains("spw"), "{run}");
    }
    let dir = TestDir::new();
    let opts = vec![
        format!("--all-proxy=socks5h://127.0.0.1:{}", locked.port),
        "--all-proxy-user=su".into(),
        "--all-proxy-passwd=wrong".into(),
        "--max-tries=1".into(),
    ];
    let run = get(&dir, &opts, &plain.url("/f.bin"));
    assert_eq!(run.code(), 1, "{run}");
    assert_eq!(
        run.lines_with("refused the user name and password").len(),
        1,
        "{run}"
    );
}

/// A fake proxy: accepts connections and answers each with `answer` (then closes).
fn fake_proxy(answer: &'static [u8]) -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = l.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for s in l.incoming().flatten() {
            let mut s = s;
            let _ = s.set_read_timeout(Some(Duration::from_millis(500)));
            let mut buf = [0u8; 1024];
            let _ = s.read(&mut buf);
            let _ = s.write_all(answer);
        }
    });
    port
}

/// Bad proxies: garbage for a CONNECT answer, a close in the middle of the handshake, a SOCKS
/// server speaking version 4. Each is one clear error line and exit 1, never a hang.
#[test]
fn a_misbehaving_proxy_is_a_clear_error() {
    let tls = TestServer::https();
    tls.route("/f.bin", Route::bytes(content(504, 1000)));
    let ca = format!("--ca-certificate={}", tls.ca_file().display());
    for (scheme, answer, says) in [
        ("http", &b"garbage garbage\r\n\r\n"[..], "not HTTP"),
        ("http", &b"HTTP/1.1 200 Conn"[..], "EOF"),
        ("socks5h", &[4u8, 0][..], "version 4"),
        ("socks5h", &[][..], "EOF"),
    ] {
        let port = fake_proxy(answer);
        let dir = TestDir::new();
        let opts = vec![
            format!("--all-proxy={scheme}://127.0.0.1:{port}"),
            "--max-tries=1".into(),
            ca.clone(),
        ];
        let run = get(&dir, &opts, &tls.url("/f.bin"));
        assert_eq!(run.code(), 1, "{scheme} {answer:?}\n{run}");
        let errors = run.lines_with("errorCode=1");
        assert_eq!(errors.len(), 1, "{run}");
        assert!(errors[0].contains(says), "{says}: {run}");
    }
    // A proxy option that is not a proxy: aria2's bad-value error before anything starts.
    let dir = TestDir::new();
    let run = get(&dir, &["--all-proxy=ftp://h:21".into()], &tls.url("/f.bin"));
    assert_eq!(run.code(), 28, "{run}");
}

/// The in-repo proxies record what ringdl asked them: through the HTTP proxy, plain http goes as
/// `GET` with the absolute URL and https as `CONNECT host:port`, each with `Proxy-Authorization`
/// (which the origin never sees); through SOCKS5, `socks5h://` sends the name and `socks5://` the
/// address, with the user and password. Split downloads take the proxy on every connection.
#[test]
fn in_repo_proxies_see_what_ringdl_asks() {
    use crate::support::proxy::TestProxy;
    let plain = TestServer::plain();
    let tls = TestServer::https();
    let data = content(505, 3 << 20);
    plain.route("/f.bin", Route::bytes(data.clone()));
    tls.route("/f.bin", Route::bytes(data.clone()));
    let ca = format!("--ca-certificate={}", tls.ca_file().display());

    let http = TestProxy::http(Some(("pu", "ppw")));
    let dir = TestDir::new();
    let opts = vec![
        format!("--all-proxy=http://pu:ppw@127.0.0.1:{}", http.port()),
        "-x4".into(),
        "-k1M".into(),
    ];
    let run = get(&dir, &opts, &plain.url("/f.bin"));
    assert_got(&run, &dir.join("f.bin"), &data);
    let seen = http.seen();
    assert!(seen.len() >= 2, "{seen:?}");
    assert!(
        seen.iter()
            .all(|r| r.kind == "GET" && r.target == plain.url("/f.bin")),
        "{seen:?}"
    );
    assert!(
        seen.iter()
            .all(|r| r.auth.as_deref() == Some("Basic cHU6cHB3")),
        "{seen:?}"
    );
    assert!(plain
        .requests()
        .iter()
        .all(|r| r.header("Proxy-Authorization").is_none()));
    assert!(plain.requests().iter().all(|r| r.header("Via").is_some()));

    let dir = TestDir::new();
    let opts = vec![
        format!("--https-proxy=http://pu:ppw@127.0.0.1:{}", http.port()),
        ca.clone(),
    ];
    let before = http.seen().len();
    let run = get(&dir, &opts, &tls.url("/f.bin"));
    assert_got(&run, &dir.join("f.bin"), &data);
    let connect = &http.seen()[before..];
    let authority = format!("127.0.0.1:{}", tls.port());
    assert!(
        !connect.is_empty()
            && connect
                .iter()
                .all(|r| r.kind == "CONNECT" && r.target == authority),
        "{connect:?}"
    );

    let socks = TestProxy::socks5(Some(("su", "spw")));
    for (scheme, target) in [
        ("socks5h", format!("localhost:{}", plain.port())),
        ("socks5", format!("127.0.0.1:{}", plain.port())),
    ] {
        let dir = TestDir::new();
        let before = socks.seen().len();
        let opts = vec![format!(
            "--all-proxy={scheme}://su:spw@127.0.0.1:{}",
            socks.port()
        )];
        // `localhost` may resolve to ::1 first: the test server listens on both.
        let run = get(&dir, &opts, &plain.url_localhost("/f.bin"));
        assert_got(&run, &dir.join("f.bin"), &data);
        let seen = &socks.seen()[before..];
        assert!(!seen.is_empty(), "{scheme}");
        for r in seen {
            assert_eq!(r.auth.as_deref(), Some("su:spw"), "{scheme}");
            if scheme == "socks5h" {
                assert_eq!(r.target, target, "{scheme}");
            } else {
                assert!(r.target.ends_with(&format!(":{}", plain.port())), "{r:?}");
                assert!(
                    !r.target.starts_with("localhost"),
                    "socks5:// sends an address: {r:?}"
                );
            }
        }
    }
}

/// An input file's entries choose their own proxies, as aria2's do: `all-proxy` with its user and
/// password, `no-proxy` and `proxy-method` on an entry apply to that download alone, and an entry
/// without them takes the command line's. aria2c, given the same list, sends the HTTP-proxy
/// entries the same way.
#[test]
fn input_file_entries_take_their_own_proxies() {
    use crate::support::proxy::TestProxy;
    let plain = TestServer::plain();
    let data = content(506, 300_000);
    for name in ["a", "b", "c", "d", "e"] {
        plain.route(&format!("/{name}.bin"), Route::bytes(data.clone()));
    }
    let global = TestProxy::http(None);
    let entry = TestProxy::http(Some(("eu", "epw")));
    let socks = TestProxy::socks5(Some(("su", "spw")));
    let list = format!(
        "{a}\n  all-proxy=http://127.0.0.1:{e}\n  all-proxy-user=eu\n  all-proxy-passwd=epw\n\
         {b}\n\
         {c}\n  no-proxy=127.0.0.1\n\
         {d}\n  all-proxy=socks5://su:spw@127.0.0.1:{s}\n\
         {x}\n  proxy-method=tunnel\n",
        a = plain.url("/a.bin"),
        b = plain.url("/b.bin"),
        c = plain.url("/c.bin"),
        d = plain.url("/d.bin"),
        x = plain.url("/e.bin"),
        e = entry.port(),
        s = socks.port(),
    );
    let dir = TestDir::new();
    std::fs::write(dir.join("list.txt"), &list).expect("write the list");
    let args: Vec<String> = vec![
        "--no-conf".into(),
        format!("-d{}", dir.path().display()),
        format!("--all-proxy=http://127.0.0.1:{}", global.port()),
        "-j1".into(),
        format!("-i{}", dir.join("list.txt").display()),
    ];
    let run = ringdl(&dir, &args);
    for name in ["a", "b", "c", "d", "e"] {
        assert_got(&run, &dir.join(&format!("{name}.bin")), &data);
    }
    let authority = format!("127.0.0.1:{}", plain.port());
    let entry_seen = entry.seen();
    assert!(
        !entry_seen.is_empty()
            && entry_seen.iter().all(|r| r.kind == "GET"
                && r.target == plain.url("/a.bin")
                && r.auth.as_deref() == Some("Basic ZXU6ZXB3")),
        "{entry_seen:?}"
    );
    let global_seen = global.seen();
    let targets: Vec<(&str, &str)> = global_seen
        .iter()
        .map(|r| (r.kind.as_str(), r.target.as_str()))
        .collect();
    assert!(
        targets.contains(&("GET", plain.url("/b.bin").as_str())),
        "{targets:?}"
    );
    assert!(
        targets.contains(&("CONNECT", authority.as_str())),
        "{targets:?}"
    );
    assert!(
        targets
            .iter()
            .all(|t| *t == ("GET", plain.url("/b.bin").as_str()) || t.0 == "CONNECT"),
        "only b (GET) and e (tunnel) take the command line's proxy: {targets:?}"
    );
    let socks_seen = socks.seen();
    assert!(
        !socks_seen.is_empty() && socks_seen.iter().all(|r| r.target == authority),
        "{socks_seen:?}"
    );
    // c went direct: no proxy adds a Via, and no proxy saw it.
    assert!(plain
        .requests_to("/c.bin")
        .iter()
        .all(|r| r.header("Via").is_none()));
    assert!(!targets.iter().any(|t| t.1.ends_with("/c.bin")));

    if !require_peer("aria2c", have_program("aria2c")) {
        return;
    }
    // aria2c has no SOCKS: its list is the HTTP-proxy entries only.
    let http_only = list.replace(
        &format!(
            "{}\n  all-proxy=socks5://su:spw@127.0.0.1:{}\n",
            plain.url("/d.bin"),
            socks.port()
        ),
        "",
    );
    let dir = TestDir::new();
    std::fs::write(dir.join("list.txt"), &http_only).expect("write the list");
    let (e0, g0) = (entry.seen().len(), global.seen().len());
    let mut args = args.clone();
    args[1] = format!("-d{}", dir.path().display());
    args[4] = format!("-i{}", dir.join("list.txt").display());
    let run = run_program(Path::new("aria2c"), &dir, &args, RUN_TIMEOUT);
    assert_eq!(run.code(), 0, "{run}");
    let entry_aria = &entry.seen()[e0..];
    assert!(
        !entry_aria.is_empty() && entry_aria.iter().all(|r| r.target == plain.url("/a.bin")),
        "aria2c: {entry_aria:?}"
    );
    let global_aria: Vec<String> = global.seen()[g0..]
        .iter()
        .map(|r| format!("{} {}", r.kind, r.target))
        .collect();
    assert!(
        global_aria.contains(&format!("GET {}", plain.url("/b.bin")))
            && global_aria.contains(&format!("CONNECT {authority}"))
            && !global_aria.iter().any(|t| t.ends_with("/c.bin")),
        "aria2c: {global_aria:?}"
    );
}
