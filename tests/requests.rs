//! What ringdl's requests say, against the test server that records them: `--referer`,
//! `--http-no-cache`, credentials (`--http-user`, in the URI, the netrc file, after a 401 with
//! `--http-auth-challenge`), cookies (`--load-cookies`, `Set-Cookie` within the run,
//! `--save-cookies`), and the security properties around them: credentials stay with their origin,
//! nothing injects a header, and no password is ever printed or saved.

use std::os::unix::fs::PermissionsExt;

use crate::support::server::{Route, TestServer};
use crate::support::{content, ringdl, sha256_file, sha256_hex, Run, TestDir};

/// `--no-conf -d DIR`, then `opts`, then `url`.
fn get(dir: &TestDir, opts: &[&str], url: &str) -> Run {
    let mut args: Vec<String> = vec!["--no-conf".into(), format!("-d{}", dir.path().display())];
    args.extend(opts.iter().map(|s| s.to_string()));
    args.push(url.to_string());
    ringdl(dir, &args)
}

fn assert_got(run: &Run, dir: &TestDir, name: &str, data: &[u8]) {
    assert_eq!(run.code(), 0, "{run}");
    assert_eq!(sha256_file(&dir.join(name)), sha256_hex(data), "{run}");
}

/// The value of header `name` in every request the server saw for `path`.
fn sent(server: &TestServer, path: &str, name: &str) -> Vec<Option<String>> {
    server
        .requests_to(path)
        .iter()
        .map(|r| r.header(name).map(str::to_string))
        .collect()
}

#[test]
fn referer_and_no_cache_headers() {
    let server = TestServer::plain();
    let data = content(301, 50_000);
    server.route("/r.bin", Route::bytes(data.clone()));
    let dir = TestDir::new();
    let run = get(
        &dir,
        &["--referer=*", "--http-no-cache=true"],
        &server.url("/r.bin"),
    );
    assert_got(&run, &dir, "r.bin", &data);
    assert_eq!(
        sent(&server, "/r.bin", "Referer"),
        [Some(server.url("/r.bin"))]
    );
    assert_eq!(sent(&server, "/r.bin", "Pragma"), [Some("no-cache".into())]);
    assert_eq!(
        sent(&server, "/r.bin", "Cache-Control"),
        [Some("no-cache".into())]
    );

    let dir = TestDir::new();
    let run = get(
        &dir,
        &[
            "--referer=http://from.example/page",
            "--header=Cache-Control: max-age=0",
        ],
        &server.url("/r.bin"),
    );
    assert_got(&run, &dir, "r.bin", &data);
    let last = |name: &str| sent(&server, "/r.bin", name).pop().flatten();
    assert_eq!(last("Referer").as_deref(), Some("http://from.example/page"));
    assert_eq!(last("Pragma"), None, "no --http-no-cache: aria2's default");
    assert_eq!(last("Cache-Control").as_deref(), Some("max-age=0"));
}

/// `--no-want-digest-header` (aria2 1.37) is taken quietly, on the command line and in an input
/// file: with it no request carries `Want-Digest`; without it (or set to false) every request
/// asks as aria2c does.
#[test]
fn no_want_digest_header_is_accepted_and_no_digest_is_wanted() {
    let server = TestServer::plain();
    let data = content(302, 20_000);
    server.route("/w.bin", Route::bytes(data.clone()));
    server.route("/v.bin", Route::bytes(data.clone()));
    let dir = TestDir::new();
    let run = get(
        &dir,
        &["--no-want-digest-header=true"],
        &server.url("/w.bin"),
    );
    assert_got(&run, &dir, "w.bin", &data);
    assert!(
        !run.stdout.contains("WARN") && run.stderr.is_empty(),
        "{run}"
    );
    let list = format!("{}\n  no-want-digest-header=false\n", server.url("/v.bin"));
    std::fs::write(dir.join("list.txt"), list).expect("write the list");
    let args = [
        "--no-conf".to_string(),
        format!("-d{}", dir.path().display()),
        format!("-i{}", dir.join("list.txt").display()),
    ];
    let run = ringdl(&dir, &args);
    assert_got(&run, &dir, "v.bin", &data);
    assert!(!run.stdout.contains("WARN"), "{run}");
    assert_eq!(sent(&server, "/w.bin", "Want-Digest"), [None]);
    assert_eq!(
        sent(&server, "/v.bin", "Want-Digest"),
        [Some("SHA-512;q=1, SHA-256;q=1, SHA;q=0.1".to_string())]
    );
}

#[test]
fn http_user_and_password_are_sent_as_basic_credentials() {
    let server = TestServer::plain();
    let data = content(302, 3 << 20);
    server.route("/a.bin", Route::bytes(data.clone()).basic_auth("u", "pw"));
    let dir = TestDir::new();
    let run = get(&dir, &["-x4", "-k1M"], &server.url("/a.bin"));
    assert_eq!(
        run.code(),
        24,
        "no credentials: aria2's 'Authorization failed'\n{run}"
    );
    assert!(!run.lines_with("Authorization failed").is_empty(), "{run}");

    let dir = TestDir::new();
    let opts = ["-x4", "-k1M", "--http-user=u", "--http-passwd=pw"];
    let run = get(&dir, &opts, &server.url("/a.bin"));
    assert_got(&run, &dir, "a.bin", &data);
    // Every connection, segment requests too, carries them (the route refuses any without).
    assert!(server.requests_to("/a.bin").len() > 2);

    let dir = TestDir::new();
    let run = get(
        &dir,
        &["--http-user=u", "--http-passwd=wrong"],
        &server.url("/a.bin"),
    );
    assert_eq!(run.code(), 24, "{run}");
}

#[test]
fn credentials_in_the_uri_are_sent() {
    let server = TestServer::plain();
    let data = content(303, 100_000);
    server.route(
        "/u.bin",
        Route::bytes(data.clone()).basic_auth("us@er", "p:w"),
    );
    let dir = TestDir::new();
    let url = server.url("/u.bin").replace("://", "://us%40er:p%3Aw@");
    let run = get(&dir, &[], &url);
    assert_got(&run, &dir, "u.bin", &data);
}

/// `--http-auth-challenge=true`: no credentials until the server asks with a 401; then the same
/// request again with them.
#[test]
fn auth_challenge_sends_credentials_only_after_a_401() {
    let server = TestServer::plain();
    let data = content(304, 200_000);
    server.route("/c.bin", Route::bytes(data.clone()).basic_auth("u", "pw"));
    let dir = TestDir::new();
    let opts = [
        "--http-user=u",
        "--http-passwd=pw",
        "--http-auth-challenge=true",
    ];
    let run = get(&dir, &opts, &server.url("/c.bin"));
    assert_got(&run, &dir, "c.bin", &data);
    let auth = sent(&server, "/c.bin", "Authorization");
    assert_eq!(auth.len(), 2, "{auth:?}");
    assert_eq!(auth[0], None);
    assert!(auth[1].as_deref().is_some_and(|v| v.starts_with("Basic ")));
}

/// Security: credentials given for a URI stay with its origin. A redirect to another host or port
/// (or from https to http) gets none of them, whether they came from `--http-user` or from the
/// URI itself. aria2c sends `--http-user` credentials wherever a redirect leads.
#[test]
fn credentials_are_not_sent_to_another_origin_after_a_redirect() {
    let other = TestServer::plain();
    let data = content(305, 100_000);
    other.route("/f.bin", Route::bytes(data.clone()));
    for https in [false, true] {
        let origin = if https {
            TestServer::https()
        } else {
            TestServer::plain()
        };
        origin.route("/f.bin", Route::redirect(302, other.url("/f.bin")));
        let tls: Vec<String> = if https {
            vec![format!("--ca-certificate={}", origin.ca_file().display())]
        } else {
            Vec::new()
        };
        let mut opts: Vec<&str> = tls.iter().map(String::as_str).collect();
        opts.extend(["--http-user=u", "--http-passwd=secret"]);
        let dir = TestDir::new();
        let run = get(&dir, &opts, &origin.url("/f.bin"));
        assert_got(&run, &dir, "f.bin", &data);
        assert!(sent(&origin, "/f.bin", "Authorization")[0].is_some());
        assert_eq!(
            sent(&other, "/f.bin", "Authorization").pop(),
            Some(None),
            "https: {https}"
        );

        let dir = TestDir::new();
        let url = origin.url("/f.bin").replace("://", "://u:secret@");
        let run = get(&dir, &opts[..tls.len()], &url);
        assert_got(&run, &dir, "f.bin", &data);
        assert_eq!(
            sent(&other, "/f.bin", "Authorization").pop(),
            Some(None),
            "https: {https}"
        );
    }
}

/// A redirect within the origin keeps them.
#[test]
fn credentials_follow_a_redirect_within_their_origin() {
    let server = TestServer::plain();
    let data = content(306, 100_000);
    server.route("/old.bin", Route::redirect(302, "/new.bin"));
    server.route("/new.bin", Route::bytes(data.clone()).basic_auth("u", "pw"));
    let dir = TestDir::new();
    let run = get(
        &dir,
        &["--http-user=u", "--http-passwd=pw"],
        &server.url("/old.bin"),
    );
    assert_got(&run, &dir, "new.bin", &data);
}

fn write_netrc(dir: &TestDir, text: &str, mode: u32) {
    let path = dir.join(".home/.netrc");
    std::fs::create_dir_all(dir.join(".home")).unwrap();
    std::fs::write(&path, text).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
}

/// `~/.netrc` (or `--netrc-path`) gives the credentials of the machines it names; `-n` turns it
/// off; a netrc others may read is refused with a warning, as curl refuses it.
#[test]
fn netrc_credentials_by_machine_and_its_permissions() {
    let server = TestServer::plain();
    let data = content(307, 100_000);
    server.route("/n.bin", Route::bytes(data.clone()).basic_auth("nu", "npw"));
    let netrc = "machine 127.0.0.1 login nu password npw\n";

    let dir = TestDir::new();
    write_netrc(&dir, netrc, 0o600);
    let run = get(&dir, &[], &server.url("/n.bin"));
    assert_got(&run, &dir, "n.bin", &data);

    let dir = TestDir::new();
    write_netrc(&dir, netrc, 0o600);
    let run = get(&dir, &["-n"], &server.url("/n.bin"));
    assert_eq!(run.code(), 24, "-n: no netrc\n{run}");

    let dir = TestDir::new();
    write_netrc(&dir, netrc, 0o644);
    let run = get(&dir, &[], &server.url("/n.bin"));
    assert_eq!(run.code(), 24, "a netrc others can read is not used\n{run}");
    assert_eq!(run.lines_with("chmod 600").len(), 1, "{run}");

    let dir = TestDir::new();
    let other = dir.join("my-netrc");
    std::fs::write(&other, netrc).unwrap();
    std::fs::set_permissions(&other, std::fs::Permissions::from_mode(0o600)).unwrap();
    let path = format!("--netrc-path={}", other.display());
    let run = get(&dir, &[&path], &server.url("/n.bin"));
    assert_got(&run, &dir, "n.bin", &data);
}

/// The cookie file yt-dlp passes (Netscape format, `#HttpOnly_` lines included): a URL that needs
/// the cookie is refused without it (403), downloaded with it.
#[test]
fn load_cookies_sends_the_matching_cookies() {
    let server = TestServer::plain();
    let data = content(308, 300_000);
    server.route(
        "/v.bin",
        Route::bytes(data.clone()).require("Cookie", "session=s3cr3t", 403),
    );
    let dir = TestDir::new();
    let run = get(&dir, &[], &server.url("/v.bin"));
    assert_eq!(run.code(), 22, "{run}");

    let dir = TestDir::new();
    let cookies = dir.join("cookies.txt");
    std::fs::write(
        &cookies,
        "# Netscape HTTP Cookie File\n\
         #HttpOnly_127.0.0.1\tFALSE\t/\tFALSE\t0\tsession\ts3cr3t\n\
         127.0.0.1\tFALSE\t/other\tFALSE\t0\telsewhere\t1\n\
         other.example\tFALSE\t/\tFALSE\t0\tforeign\t1\n\
         127.0.0.1\tFALSE\t/\tFALSE\t1000\texpired\t1\n",
    )
    .unwrap();
    let load = format!("--load-cookies={}", cookies.display());
    let run = get(&dir, &[&load, "-x2", "-k1M"], &server.url("/v.bin"));
    assert_got(&run, &dir, "v.bin", &data);
    let last = sent(&server, "/v.bin", "Cookie").pop().flatten();
    assert_eq!(last.as_deref(), Some("session=s3cr3t"));
}

#[test]
fn a_missing_cookie_file_is_said_and_the_download_goes_on() {
    let server = TestServer::plain();
    let data = content(309, 10_000);
    server.route("/m.bin", Route::bytes(data.clone()));
    let dir = TestDir::new();
    let load = format!("--load-cookies={}", dir.join("none.txt").display());
    let run = get(&dir, &[&load], &server.url("/m.bin"));
    assert_got(&run, &dir, "m.bin", &data);
    assert_eq!(
        run.lines_with("Failed to load cookies from").len(),
        1,
        "{run}"
    );

    // A browser's cookie database (Firefox's cookies.sqlite): said, with what to do instead.
    let dir = TestDir::new();
    let db = dir.join("cookies.sqlite");
    std::fs::write(&db, b"SQLite format 3\0 and pages of a database").unwrap();
    let load = format!("--load-cookies={}", db.display());
    let run = get(&dir, &[&load], &server.url("/m.bin"));
    assert_got(&run, &dir, "m.bin", &data);
    assert_eq!(run.lines_with("Netscape text format").len(), 1, "{run}");
}

/// A cookie set by a redirect is sent on the request it leads to, and `--save-cookies` writes what
/// the run ended with, private to its owner, in the format `--load-cookies` reads.
#[test]
fn set_cookie_within_the_run_and_save_cookies() {
    let server = TestServer::plain();
    let data = content(310, 100_000);
    server.route(
        "/login",
        Route::redirect(302, "/file.bin")
            .header("Set-Cookie", "token=abc; Path=/")
            .header("Set-Cookie", "persist=1; Max-Age=3600; Path=/"),
    );
    server.route(
        "/file.bin",
        Route::bytes(data.clone()).require("Cookie", "token=abc", 403),
    );
    let dir = TestDir::new();
    let jar = dir.join("jar.txt");
    let save = format!("--save-cookies={}", jar.display());
    let run = get(&dir, &[&save], &server.url("/login"));
    assert_got(&run, &dir, "file.bin", &data);
    let text = std::fs::read_to_string(&jar).unwrap();
    assert!(text.starts_with("# Netscape HTTP Cookie File\n"), "{text}");
    assert!(
        text.contains("127.0.0.1\tFALSE\t/\tFALSE\t0\ttoken\tabc\n"),
        "{text}"
    );
    assert!(text
        .lines()
        .any(|l| l.ends_with("\tpersist\t1") && !l.contains("\t0\tpersist")));
    let mode = std::fs::metadata(&jar).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);

    // The saved jar is a cookie file for the next run.
    let dir2 = TestDir::new();
    let load = format!("--load-cookies={}", jar.display());
    let run = get(&dir2, &[&load], &server.url("/file.bin"));
    assert_got(&run, &dir2, "file.bin", &data);
}

/// Security: a cookie goes only to the host it belongs to; a redirect to another host (here
/// `localhost` for `127.0.0.1`) does not take it along, nor does one from https to http take a
/// `Secure` cookie.
#[test]
fn cookies_are_not_sent_to_another_host_after_a_redirect() {
    let server = TestServer::plain();
    let data = content(311, 50_000);
    server.route("/go", Route::redirect(302, server.url_localhost("/f.bin")));
    server.route("/f.bin", Route::bytes(data.clone()));
    let dir = TestDir::new();
    let cookies = dir.join("c.txt");
    std::fs::write(&cookies, "127.0.0.1\tFALSE\t/\tFALSE\t0\tmine\tsecret\n").unwrap();
    let load = format!("--load-cookies={}", cookies.display());
    let run = get(&dir, &[&load], &server.url("/go"));
    assert_got(&run, &dir, "f.bin", &data);
    assert_eq!(sent(&server, "/go", "Cookie"), [Some("mine=secret".into())]);
    assert_eq!(sent(&server, "/f.bin", "Cookie"), [None]);
}

/// Security: a CR or LF in a value that goes into the request would start a header of someone
/// else's choosing. `--header`, `--user-agent`, `--referer`, `--http-user`/`--http-passwd` and
/// URIs with one are refused with exit 28 before anything is sent, from the command line, a
/// config file or an input file. aria2c passes `--header` values through.
#[test]
fn crlf_in_header_user_agent_referer_or_uri_cannot_inject_a_header() {
    let server = TestServer::plain();
    server.route("/i.bin", Route::bytes(content(312, 1000)));
    let url = server.url("/i.bin");
    for bad in [
        "--header=X-A: 1\r\nX-Injected: 1",
        "--header=X-A: 1\nX-Injected: 1",
        "--user-agent=ua\r\nX-Injected: 1",
        "--referer=http://r/\r\nX-Injected: 1",
        "--http-user=u\r\nX-Injected: 1",
        "--http-passwd=p\nX-Injected: 1",
    ] {
        let dir = TestDir::new();
        let run = get(&dir, &[bad], &url);
        assert_eq!(run.code(), 28, "{bad:?}\n{run}");
        assert!(run.output().contains("errorCode=28"), "{run}");
    }
    let dir = TestDir::new();
    let run = get(&dir, &[], &format!("{url}\r\nX-Injected: 1"));
    assert_eq!(run.code(), 28, "{run}");

    let dir = TestDir::new();
    let conf = dir.join("a.conf");
    std::fs::write(&conf, "header=X-A: 1\rX-Injected: 1\n").unwrap();
    let mut args = vec![
        format!("--conf-path={}", conf.display()),
        format!("-d{}", dir.path().display()),
    ];
    args.push(url.clone());
    let run = ringdl(&dir, &args);
    assert_eq!(run.code(), 28, "config file\n{run}");

    let dir = TestDir::new();
    let list = dir.join("list.txt");
    std::fs::write(&list, format!("{url}\n  header=X-A: 1\rX-Injected: 1\n")).unwrap();
    let args = [
        "--no-conf".to_string(),
        format!("-d{}", dir.path().display()),
        format!("-i{}", list.display()),
    ];
    let run = ringdl(&dir, &args);
    assert_ne!(run.code(), 0, "input file\n{run}");
    assert!(run.output().contains("header"), "{run}");
    assert!(server
        .requests()
        .iter()
        .all(|r| r.header("X-Injected").is_none()));
}

/// Security: a password given in any way never appears in what ringdl prints, logs or saves:
/// the console, `-l` at debug level, Download Results, error messages, control files.
#[test]
fn passwords_never_appear_in_output_logs_or_saved_files() {
    const PW: &str = "Sup3rS3cretPw";
    let server = TestServer::plain();
    let data = content(313, 2 << 20);
    server.route("/p.bin", Route::bytes(data.clone()).basic_auth("u", PW));
    server.route("/denied.bin", Route::status(401));
    server.route(
        "/cut.bin",
        Route::bytes(data.clone()).basic_auth("u", PW).fault(
            crate::support::server::Fault::ResetAfter(1_200_000),
            crate::support::server::When::Always,
        ),
    );
    let check = |dir: &TestDir, run: &Run| {
        assert!(!run.output().contains(PW), "printed\n{run}");
        for entry in walk(dir.path()) {
            let bytes = std::fs::read(&entry).unwrap_or_default();
            let hay = String::from_utf8_lossy(&bytes);
            assert!(!hay.contains(PW), "{} holds the password", entry.display());
        }
    };
    let in_uri = |path: &str| server.url(path).replace("://", &format!("://u:{PW}@"));
    for (url, opts) in [
        (
            server.url("/p.bin"),
            vec![format!("--http-passwd={PW}"), "--http-user=u".into()],
        ),
        (in_uri("/p.bin"), vec![]),
        (in_uri("/denied.bin"), vec![]),
        (
            in_uri("/cut.bin"),
            vec!["--max-tries=1".into(), "-x2".into(), "-k1M".into()],
        ),
    ] {
        let dir = TestDir::new();
        let mut opts = opts;
        opts.push(format!("-l{}", dir.join("log.txt").display()));
        opts.push("--log-level=debug".into());
        opts.push("--console-log-level=debug".into());
        opts.push("--download-result=full".into());
        let refs: Vec<&str> = opts.iter().map(String::as_str).collect();
        let run = get(&dir, &refs, &url);
        check(&dir, &run);
    }
}

fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
}

fn gzip(data: &[u8]) -> Vec<u8> {
    use std::io::Write;
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    e.write_all(data).unwrap();
    e.finish().unwrap()
}

fn zlib(data: &[u8]) -> Vec<u8> {
    use std::io::Write;
    let mut e = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::fast());
    e.write_all(data).unwrap();
    e.finish().unwrap()
}

fn raw_deflate(data: &[u8]) -> Vec<u8> {
    use std::io::Write;
    let mut e = flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::fast());
    e.write_all(data).unwrap();
    e.finish().unwrap()
}

/// Compressible bytes: text-like lines with a counter.
fn text(len: usize) -> Vec<u8> {
    let mut v = Vec::with_capacity(len + 64);
    let mut i = 0u64;
    while v.len() < len {
        v.extend_from_slice(format!("line {i} of a log that compresses well\n").as_bytes());
        i += 1;
    }
    v.truncate(len);
    v
}

/// `--http-accept-gzip=true` (yt-dlp passes it on every download): `Accept-Encoding: deflate,
/// gzip` is sent, and a gzip, zlib-deflate or raw-deflate body is inflated into the file, over one
/// connection (an encoded body cannot be split), plain or chunked. aria2c does the same.
#[test]
fn accept_gzip_inflates_gzip_and_deflate_bodies() {
    let server = TestServer::plain();
    let data = text(3 << 20);
    let cases = [
        ("/g.bin", gzip(&data), "gzip", false),
        ("/x.bin", gzip(&data), "x-gzip", true),
        ("/z.bin", zlib(&data), "deflate", false),
        ("/r.bin", raw_deflate(&data), "deflate", true),
    ];
    for (path, body, coding, chunked) in &cases {
        let mut route = Route::bytes(body.clone()).header("Content-Encoding", coding);
        if *chunked {
            route = route.chunked();
        }
        server.route(path, route);
        let dir = TestDir::new();
        let run = get(
            &dir,
            &["--http-accept-gzip=true", "-x4", "-k1M"],
            &server.url(path),
        );
        assert_got(&run, &dir, path.trim_start_matches('/'), &data);
        assert_eq!(
            sent(&server, path, "Accept-Encoding"),
            [Some("deflate, gzip".to_string())],
            "{path}: one request, asking for the codings"
        );
        assert!(run.lines_with("WARN").is_empty(), "{run}");
        assert!(!dir
            .join(&format!("{}.aria2", path.trim_start_matches('/')))
            .exists());
    }
    // Without the option nothing is asked for, and what comes is kept as it came (aria2c too).
    let dir = TestDir::new();
    let run = get(&dir, &[], &server.url("/g.bin"));
    assert_got(&run, &dir, "g.bin", &cases[0].1);
    assert_eq!(sent(&server, "/g.bin", "Accept-Encoding").pop(), Some(None));
}

/// A deflate body whose first byte comes alone (here every byte comes alone): one byte cannot say
/// whether the stream is zlib or raw deflate, and the decoder kept it back unused, while the
/// connection reads more only once what it holds is used, so it never read again and the
/// download hung. Both kinds, plain and chunked, end byte-exact.
#[test]
fn a_deflate_body_whose_first_byte_comes_alone_is_inflated() {
    let server = TestServer::plain();
    let data = text(3000);
    for (i, (body, chunked)) in [(zlib(&data), false), (raw_deflate(&data), true)]
        .into_iter()
        .enumerate()
    {
        let path = format!("/one{i}.bin");
        let mut route = Route::bytes(body)
            .header("Content-Encoding", "deflate")
            .throttle(1, std::time::Duration::from_millis(5));
        if chunked {
            route = route.chunked();
        }
        server.route(&path, route);
        let dir = TestDir::new();
        let run = get(&dir, &["--http-accept-gzip=true"], &server.url(&path));
        assert_got(&run, &dir, &path[1..], &data);
    }
}

/// A gzip stream cut short (the connection ends where the compressed stream has not) is not a
/// complete file: it is fetched again, and with no tries left the download fails; a stream that
/// is not gzip at all fails with one clear line.
#[test]
fn a_cut_or_corrupt_gzip_body_is_not_a_complete_file() {
    let server = TestServer::plain();
    let data = text(2 << 20);
    let gz = gzip(&data);
    let cut = gz[..gz.len() / 2].to_vec();
    server.route(
        "/cut.bin",
        Route::bytes(cut)
            .header("Content-Encoding", "gzip")
            .then_after(
                1,
                Route::bytes(gz.clone()).header("Content-Encoding", "gzip"),
            ),
    );
    let dir = TestDir::new();
    let run = get(
        &dir,
        &["--http-accept-gzip=true", "--max-tries=3"],
        &server.url("/cut.bin"),
    );
    assert_got(&run, &dir, "cut.bin", &data);
    assert_eq!(server.requests_to("/cut.bin").len(), 2);

    server.route(
        "/bad.bin",
        Route::bytes(b"this is not a gzip stream, not at all".to_vec())
            .header("Content-Encoding", "gzip"),
    );
    let dir = TestDir::new();
    let run = get(
        &dir,
        &["--http-accept-gzip=true", "--max-tries=1"],
        &server.url("/bad.bin"),
    );
    assert_eq!(run.code(), 1, "{run}");
    assert_eq!(run.lines_with("Failed to inflate").len(), 1, "{run}");
}

/// A gzip bomb: 384 MiB of zeros in well under a megabyte. It inflates straight into the file, one
/// step at a time: ringdl's peak memory stays where a small download's is, whatever the ratio.
#[test]
fn a_gzip_bomb_inflates_with_flat_memory() {
    let server = TestServer::plain();
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    let zeros = vec![0u8; 1 << 20];
    for _ in 0..384 {
        std::io::Write::write_all(&mut e, &zeros).unwrap();
    }
    let bomb = e.finish().unwrap();
    assert!(bomb.len() < 1 << 20);
    server.route(
        "/bomb.bin",
        Route::bytes(bomb).header("Content-Encoding", "gzip"),
    );
    let dir = TestDir::new();
    let args = [
        "--no-conf".to_string(),
        format!("-d{}", dir.path().display()),
        "--http-accept-gzip=true".to_string(),
        "--file-allocation=none".to_string(),
        server.url("/bomb.bin"),
    ];
    let (code, peak_kib) = run_measuring_peak(&dir, &args);
    assert_eq!(code, Some(0));
    let len = std::fs::metadata(dir.join("bomb.bin")).unwrap().len();
    assert_eq!(len, 384 << 20);
    assert!(
        peak_kib < 64 * 1024,
        "peak RSS {peak_kib} KiB inflating a 384 MiB bomb"
    );
    let _ = std::fs::remove_file(dir.join("bomb.bin"));
}

/// Runs ringdl and samples its peak resident memory (`VmHWM`) until it exits: (exit code, KiB).
pub(crate) fn run_measuring_peak(dir: &TestDir, args: &[String]) -> (Option<i32>, u64) {
    let home = dir.join(".home");
    std::fs::create_dir_all(&home).unwrap();
    let mut cmd =
        crate::support::isolated_command(&crate::support::binary_under_test(), dir.path(), &home);
    cmd.args(args);
    let mut child = cmd.spawn().expect("start ringdl");
    let out = crate::support::drain(child.stdout.take().expect("stdout"));
    let err = crate::support::drain(child.stderr.take().expect("stderr"));
    let status_file = format!("/proc/{}/status", child.id());
    let started = std::time::Instant::now();
    let mut peak = 0;
    let status = loop {
        if let Ok(text) = std::fs::read_to_string(&status_file) {
            if let Some(kib) = text
                .lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
            {
                peak = peak.max(kib);
            }
        }
        if let Some(s) = child.try_wait().expect("wait") {
            break s;
        }
        assert!(
            started.elapsed() < std::time::Duration::from_secs(120),
            "ringdl hung"
        );
        std::thread::sleep(std::time::Duration::from_millis(5));
    };
    let _ = (out.join(), err.join());
    (status.code(), peak)
}

/// Security: a name a server supplies — Content-Disposition (plain or RFC 5987), or the last
/// segment of a redirect target — never places a file outside the download directory: `../`,
/// absolute paths, `\`, NUL and control characters, encoded slashes, over-long names. Each such
/// name is refused (the URL's own name is used) or made safe, and nothing is written elsewhere.
#[test]
fn a_server_supplied_name_never_places_a_file_outside_the_download_directory() {
    let server = TestServer::plain();
    let data = content(320, 10_000);
    let long = "n".repeat(300);
    let dispositions = [
        "attachment; filename=\"../../escaped.bin\"".to_string(),
        "attachment; filename=\"/tmp/escaped.bin\"".to_string(),
        "attachment; filename*=UTF-8''..%2F..%2Fescaped.bin".to_string(),
        "attachment; filename=\"..\\\\escaped.bin\"".to_string(),
        "attachment; filename*=UTF-8''esc%00aped.bin".to_string(),
        "attachment; filename*=UTF-8''esc%0Aaped.bin".to_string(),
        "attachment; filename=\"..\"".to_string(),
        format!("attachment; filename=\"{long}.bin\""),
    ];
    for (i, cd) in dispositions.iter().enumerate() {
        let path = format!("/cd{i}.bin");
        server.route(
            &path,
            Route::bytes(data.clone()).header("Content-Disposition", cd),
        );
        let parent = TestDir::new();
        let dir_path = parent.join("downloads");
        std::fs::create_dir_all(&dir_path).unwrap();
        let args = vec![
            "--no-conf".to_string(),
            format!("-d{}", dir_path.display()),
            "--content-disposition-default-utf8=true".to_string(),
            server.url(&path),
        ];
        let run = ringdl(&parent, &args);
        assert_eq!(run.code(), 0, "{cd}\n{run}");
        let inside = crate::support::entries_of(&dir_path);
        assert_eq!(
            inside,
            [format!("cd{i}.bin")],
            "{cd}: the URL's name is used\n{run}"
        );
        let outside: Vec<String> = parent
            .entries()
            .into_iter()
            .filter(|e| e != "downloads" && e != ".home")
            .collect();
        assert!(outside.is_empty(), "{cd}: {outside:?}");
        assert!(!std::path::Path::new("/tmp/escaped.bin").exists());
    }
    // Redirect targets whose last segment encodes a path, or is over-long.
    for (i, target) in [
        "/dl/..%2F..%2Fescaped.bin".to_string(),
        "/dl/%2Ftmp%2Fescaped.bin".to_string(),
        format!("/dl/{}.iso", "x".repeat(400)),
    ]
    .iter()
    .enumerate()
    {
        let from = format!("/r{i}");
        server.route(&from, Route::redirect(302, target.clone()));
        server.route(target, Route::bytes(data.clone()));
        let parent = TestDir::new();
        let dir_path = parent.join("downloads");
        std::fs::create_dir_all(&dir_path).unwrap();
        let args = vec![
            "--no-conf".to_string(),
            format!("-d{}", dir_path.display()),
            server.url(&from),
        ];
        let run = ringdl(&parent, &args);
        assert_eq!(run.code(), 0, "{target}\n{run}");
        let inside = crate::support::entries_of(&dir_path);
        assert_eq!(inside.len(), 1, "{target}: {inside:?}");
        assert!(
            inside[0].len() <= 255 && !inside[0].contains('/'),
            "{inside:?}"
        );
        let outside: Vec<String> = parent
            .entries()
            .into_iter()
            .filter(|e| e != "downloads" && e != ".home")
            .collect();
        assert!(outside.is_empty(), "{target}: {outside:?}");
    }
    assert!(!std::path::Path::new("/tmp/escaped.bin").exists());
}

/// Security: a redirect to a scheme ringdl does not fetch (`file:`, `ftp:`, `data:`, `gopher:`)
/// ends that URI with one error line; nothing is read from the local disk and no file is made.
#[test]
fn redirects_to_unsupported_schemes_fail_cleanly() {
    let server = TestServer::plain();
    for (i, target) in [
        "file:///etc/passwd",
        "ftp://127.0.0.1/f.bin",
        "data:text/plain,hello",
        "gopher://127.0.0.1/x",
    ]
    .iter()
    .enumerate()
    {
        let from = format!("/s{i}");
        server.route(&from, Route::redirect(302, *target));
        let dir = TestDir::new();
        let run = get(&dir, &["--max-tries=1"], &server.url(&from));
        assert_ne!(run.code(), 0, "{target}\n{run}");
        assert_eq!(run.lines_with("errorCode=").len(), 1, "{target}\n{run}");
        let made: Vec<String> = dir.entries().into_iter().filter(|e| e != ".home").collect();
        assert!(made.is_empty(), "{target}: {made:?}");
    }
}

/// `--use-head`: the first request of a download is a HEAD, then GETs fetch the file (aria2c's
/// order too); with `--dry-run` the HEAD is all.
#[test]
fn use_head_asks_with_head_first() {
    let server = TestServer::plain();
    let data = content(330, 3 << 20);
    server.route("/h.bin", Route::bytes(data.clone()));
    let dir = TestDir::new();
    let run = get(
        &dir,
        &["--use-head=true", "-x2", "-k1M"],
        &server.url("/h.bin"),
    );
    assert_got(&run, &dir, "h.bin", &data);
    let methods: Vec<String> = server
        .requests_to("/h.bin")
        .iter()
        .map(|r| r.method.clone())
        .collect();
    assert_eq!(methods[0], "HEAD", "{methods:?}");
    assert!(
        methods[1..].iter().all(|m| m == "GET") && methods.len() >= 2,
        "{methods:?}"
    );
    assert!(run.lines_with("WARN").is_empty(), "{run}");
}

/// Bad input in response heads: a Content-Disposition of 10 MB is a head over 64 KiB, so the
/// download ends with one line and exit 22 (K-HEAD64K) at flat memory, and the partial name never
/// reaches the disk; a flood of 1200 `Set-Cookie` fields over a redirect chain leaves at most
/// aria2's 50 cookies for the host in `--save-cookies`, and the download completes.
#[test]
fn hostile_heads_a_huge_content_disposition_and_a_cookie_flood() {
    let server = TestServer::plain();
    let data = content(303, 40_000);
    let name = "n".repeat(10 << 20);
    server.route(
        "/cd.bin",
        Route::bytes(data.clone()).header(
            "Content-Disposition",
            &format!("attachment; filename=\"{name}\""),
        ),
    );
    let dir = TestDir::new();
    let run = get(&dir, &[], &server.url("/cd.bin"));
    assert_eq!(run.code(), 22, "{run}");
    assert_eq!(run.lines_with("errorCode=22").len(), 1, "{run}");
    assert!(
        run.stdout.len() + run.stderr.len() < 64 << 10,
        "the name was not echoed"
    );
    let names: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| !n.starts_with('.'))
        .collect();
    assert!(names.iter().all(|n| n.len() < 256), "{names:?}");
    let dir = TestDir::new();
    let args = [
        "--no-conf".to_string(),
        format!("-d{}", dir.path().display()),
        server.url("/cd.bin"),
    ];
    let (code, peak_kib) = run_measuring_peak(&dir, &args);
    assert_eq!(code, Some(22));
    assert!(peak_kib < 32 * 1024, "peak RSS {peak_kib} KiB");

    // 10 hops of 120 cookies each, then the file.
    for hop in 0..10 {
        let next = if hop == 9 {
            "/flood/f.bin".to_string()
        } else {
            format!("/flood/{}", hop + 1)
        };
        let mut route = Route::redirect(302, &next);
        for i in 0..120 {
            route = route.header("Set-Cookie", &format!("c{hop}_{i}=v; Path=/"));
        }
        server.route(&format!("/flood/{hop}"), route);
    }
    server.route("/flood/f.bin", Route::bytes(data.clone()));
    let dir = TestDir::new();
    let saved = dir.join("saved.txt");
    let run = get(
        &dir,
        &[&format!("--save-cookies={}", saved.display())],
        &server.url("/flood/0"),
    );
    assert_got(&run, &dir, "f.bin", &data);
    let text = std::fs::read_to_string(&saved).expect("saved cookies");
    let kept = text
        .lines()
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .count();
    assert!((1..=50).contains(&kept), "{kept} cookies kept");
    let last = server.requests_to("/flood/f.bin");
    let cookie = last.last().and_then(|r| r.header("Cookie")).unwrap_or("");
    assert!(cookie.split("; ").count() <= 50, "{cookie}");
}
