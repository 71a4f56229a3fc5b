//! `--async-dns-server`: names looked up by the given DNS servers over UDP on ringdl's ring, each
//! answer checked against its query, a failing server handing over to the next, and the system
//! resolver asked when the servers give no address. Every case runs on both reactors (the suite's
//! second pass sets `RINGDL_ENGINE=portable`).

use crate::support::dns::{closed_port, Behaviour, DnsServer};
use crate::support::server::{Route, TestServer};
use crate::support::{content, ringdl, sha256_file, sha256_hex, TestDir};

const LOCAL: &str = "127.0.0.1";

/// A server with `/f.bin`, and its URL under `host` instead of its address.
fn served(host: &str) -> (TestServer, Vec<u8>, String) {
    let server = TestServer::plain();
    let data = content(0xd45, 200_000);
    server.route("/f.bin", Route::bytes(data.clone()));
    let url = format!("http://{host}:{}/f.bin", server.port());
    (server, data, url)
}

fn get(dir: &TestDir, extra: &[&str], url: &str) -> crate::support::Run {
    let mut args = vec!["--no-conf", "--console-log-level=info", "-d"];
    let d = dir.arg();
    args.push(&d);
    args.extend_from_slice(extra);
    args.push(url);
    ringdl(dir, &args)
}

#[test]
fn a_name_is_looked_up_by_the_given_server() {
    let dns = DnsServer::start();
    dns.set(
        "files.test",
        Behaviour::Addresses(vec![LOCAL.parse().expect("ip")]),
    );
    let (_server, data, url) = served("files.test");
    let dir = TestDir::new();
    let opt = format!("--async-dns-server={}", dns.addr());
    let run = get(&dir, &[&opt], &url);
    assert_eq!(run.code(), 0, "{run}");
    assert_eq!(sha256_file(&dir.join("f.bin")), sha256_hex(&data));
    // Only A records unless IPv6 lookups are asked for, as aria2c.
    assert_eq!(
        dns.asked(),
        vec![("files.test".to_string(), "TYPE(A)".to_string())]
    );

    let dir = TestDir::new();
    let run = get(&dir, &[&opt, "--enable-async-dns6=true"], &url);
    assert_eq!(run.code(), 0, "{run}");
    let asked = dns.asked();
    assert!(
        asked.contains(&("files.test".into(), "TYPE(AAAA)".into())),
        "{asked:?}"
    );
}

#[test]
fn forged_answers_before_the_real_one_are_ignored() {
    let dns = DnsServer::start();
    // A wrong id and a wrong question, each naming 192.0.2.66 (which would never connect), come
    // before the real answer.
    dns.set(
        "files.test",
        Behaviour::ForgedFirst(vec![LOCAL.parse().expect("ip")]),
    );
    let (_server, data, url) = served("files.test");
    let dir = TestDir::new();
    let opt = format!("--async-dns-server={}", dns.addr());
    let run = get(&dir, &[&opt, "--connect-timeout=2", "--max-tries=1"], &url);
    assert_eq!(run.code(), 0, "{run}");
    assert!(!run.stdout.contains("192.0.2.66"), "{run}");
    assert_eq!(sha256_file(&dir.join("f.bin")), sha256_hex(&data));
}

#[test]
fn failing_servers_hand_over_to_the_next() {
    let refusing = closed_port();
    let failing = DnsServer::start();
    failing.set("files.test", Behaviour::ServFail);
    let truncating = DnsServer::start();
    truncating.set("files.test", Behaviour::Truncated);
    let good = DnsServer::start();
    good.set(
        "files.test",
        Behaviour::Addresses(vec![LOCAL.parse().expect("ip")]),
    );
    let (_server, data, url) = served("files.test");
    let dir = TestDir::new();
    let opt = format!(
        "--async-dns-server={refusing},{},{},{}",
        failing.addr(),
        truncating.addr(),
        good.addr()
    );
    let started = std::time::Instant::now();
    let run = get(&dir, &[&opt], &url);
    assert_eq!(run.code(), 0, "{run}");
    assert_eq!(sha256_file(&dir.join("f.bin")), sha256_hex(&data));
    assert_eq!(failing.asked().len(), 1);
    assert_eq!(truncating.asked().len(), 1);
    assert_eq!(good.asked().len(), 1);
    // None of them needed a timeout: a refused port, SERVFAIL and TC end a try at once.
    assert!(started.elapsed().as_secs() < 4, "{:?}", started.elapsed());
}

#[test]
fn a_silent_server_is_tried_twice_then_the_next_answers() {
    let silent = DnsServer::start();
    silent.set("files.test", Behaviour::Silent);
    let good = DnsServer::start();
    good.set(
        "files.test",
        Behaviour::Addresses(vec![LOCAL.parse().expect("ip")]),
    );
    let (_server, data, url) = served("files.test");
    let dir = TestDir::new();
    let opt = format!("--async-dns-server={},{}", silent.addr(), good.addr());
    let run = get(&dir, &[&opt], &url);
    assert_eq!(run.code(), 0, "{run}");
    assert_eq!(sha256_file(&dir.join("f.bin")), sha256_hex(&data));
    assert_eq!(silent.asked().len(), 2, "{:?}", silent.asked());
}

#[test]
fn the_system_resolver_is_asked_when_the_servers_know_nothing() {
    // The server says "localhost" does not exist; the system resolver knows it.
    let dns = DnsServer::start();
    let (_server, data, url) = served("localhost");
    let dir = TestDir::new();
    let opt = format!("--async-dns-server={}", dns.addr());
    let run = get(&dir, &[&opt], &url);
    assert_eq!(run.code(), 0, "{run}");
    assert!(run.stdout.contains("asking the system resolver"), "{run}");
    assert_eq!(dns.asked().len(), 1);
    assert_eq!(sha256_file(&dir.join("f.bin")), sha256_hex(&data));

    // A name nobody knows: aria2c's exit 19, one line naming it.
    let dir = TestDir::new();
    let run = get(
        &dir,
        &[&opt, "--max-tries=1"],
        "http://no-such-host.invalid/f.bin",
    );
    assert_eq!(run.code(), 19, "{run}");
    assert!(
        run.stdout
            .contains("Name resolution for no-such-host.invalid failed"),
        "{run}"
    );
}

#[test]
fn async_dns_false_leaves_the_servers_alone() {
    let dns = DnsServer::start();
    dns.set(
        "localhost",
        Behaviour::Addresses(vec!["192.0.2.66".parse().expect("ip")]),
    );
    let (_server, data, url) = served("localhost");
    let dir = TestDir::new();
    let opt = format!("--async-dns-server={}", dns.addr());
    let run = get(&dir, &[&opt, "--async-dns=false"], &url);
    assert_eq!(run.code(), 0, "{run}");
    assert!(dns.asked().is_empty(), "{:?}", dns.asked());
    assert_eq!(sha256_file(&dir.join("f.bin")), sha256_hex(&data));
}

#[test]
fn a_server_that_is_not_an_address_is_a_bad_value() {
    let dir = TestDir::new();
    let run = get(
        &dir,
        &["--async-dns-server=dns.example"],
        "http://127.0.0.1:9/f.bin",
    );
    assert_eq!(run.code(), 28, "{run}");
    assert!(
        run.stdout.contains("'dns.example' is not an IP address")
            || run.stderr.contains("'dns.example' is not an IP address"),
        "{run}"
    );
}
