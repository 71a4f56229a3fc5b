//! `-M` Metalinks beyond what `compat-tests/cases_metalink.rs` compares with aria2c: standard
//! input, names that would leave the download directory, a document too deep or with an entity
//! to expand, and a Metalink of 10 000 files with 100 mirrors each read in flat memory.

use std::fs;
use std::io::Write;

use crate::support::server::{Route, TestServer};
use crate::support::{content, ringdl, sha256_hex, TestDir};

fn meta4(files: &[(&str, &[u8], &[String])]) -> String {
    let mut doc = String::from(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<metalink xmlns=\"urn:ietf:params:xml:ns:metalink\">\n",
    );
    for (name, data, urls) in files {
        doc.push_str(&format!(
            "  <file name=\"{name}\">\n    <size>{}</size>\n    <hash type=\"sha-256\">{}</hash>\n",
            data.len(),
            sha256_hex(data)
        ));
        for (i, u) in urls.iter().enumerate() {
            doc.push_str(&format!("    <url priority=\"{}\">{u}</url>\n", i + 1));
        }
        doc.push_str("  </file>\n");
    }
    doc.push_str("</metalink>\n");
    doc
}

/// `-M -` reads the Metalink from standard input; each file lands under its name (a
/// subdirectory made), byte-exact and checked by its digest.
#[test]
fn a_metalink_from_standard_input_gives_each_file_under_its_name() {
    let server = TestServer::plain();
    let a = content(0x6d31, 700_001);
    let b = content(0x6d32, 5_000);
    server.route("/a.bin", Route::bytes(a.clone()));
    server.route("/b.bin", Route::bytes(b.clone()));
    let dir = TestDir::new();
    let doc = meta4(&[
        ("a.bin", &a, &[server.url("/a.bin")]),
        ("d/e/b.bin", &b, &[server.url("/b.bin")]),
    ]);
    fs::write(dir.join("in.meta4"), &doc).expect("meta4");
    let input = fs::File::open(dir.join("in.meta4")).expect("open");
    let args = ["--no-conf", "-d", &dir.arg(), "-M", "-"];
    let run = crate::support::run_changed(
        &crate::support::binary_under_test(),
        &dir,
        &args,
        std::time::Duration::from_secs(60),
        |c| {
            c.stdin(input);
        },
    );
    assert_eq!(run.code(), 0, "{run}");
    assert_eq!(fs::read(dir.join("a.bin")).expect("a.bin"), a);
    assert_eq!(fs::read(dir.join("d/e/b.bin")).expect("b.bin"), b);
}

/// A name that would leave the download directory, an entity to expand, elements nested past
/// the limit, bytes that are not XML: one line, exit 20, nothing written or asked for.
#[test]
fn hostile_metalinks_are_refused_in_one_line_before_anything_starts() {
    let server = TestServer::plain();
    server.route("/a.bin", Route::bytes(content(1, 1000)));
    let url = server.url("/a.bin");
    let file = |name: &str| format!("<file name=\"{name}\"><url>{url}</url></file>");
    let ns = "xmlns=\"urn:ietf:params:xml:ns:metalink\"";
    for (what, doc) in [
        (
            "../",
            format!(
                "<metalink {ns}>{}{}</metalink>",
                file("ok.bin"),
                file("../x.bin")
            ),
        ),
        (
            "absolute",
            format!("<metalink {ns}>{}</metalink>", file("/tmp/x.bin")),
        ),
        (
            "drive",
            format!("<metalink {ns}>{}</metalink>", file("C:x.bin")),
        ),
        (
            "control",
            format!("<metalink {ns}>{}</metalink>", file("a&#9;b")),
        ),
        (
            "entity",
            format!(
                "<!DOCTYPE m [<!ENTITY e \"x\">]><metalink {ns}><file name=\"&e;\"/>{}</metalink>",
                file("ok.bin")
            ),
        ),
        (
            "deep",
            format!(
                "<metalink {ns}>{}{}</metalink>",
                "<x>".repeat(500),
                "</x>".repeat(500)
            ),
        ),
        ("not xml", "this is not a metalink".to_string()),
    ] {
        let dir = TestDir::new();
        fs::write(dir.join("m.meta4"), doc).expect("meta4");
        let run = ringdl(&dir, &["--no-conf", "-d", &dir.arg(), "-M", "m.meta4"]);
        assert_eq!(run.code(), 20, "{what}: {run}");
        let lines: Vec<&str> = run
            .stderr
            .lines()
            .filter(|l| !l.trim().is_empty())
            .collect();
        assert_eq!(lines.len(), 1, "{what}: {run}");
        assert!(lines[0].contains("errorCode=20"), "{what}: {run}");
        assert_eq!(dir.entries(), ["m.meta4"], "{what}");
    }
    assert!(server.requests().is_empty(), "something was fetched");
}

/// 10 000 files with 100 mirrors each (a 60 MB document): read whole to count and check it,
/// again to queue the one selected, and listed with `-S`, in flat memory, never held whole.
#[test]
fn a_metalink_of_ten_thousand_files_is_read_in_flat_memory() {
    let server = TestServer::plain();
    let data = content(0x6d33, 4096);
    server.route("/m0/f9999", Route::bytes(data.clone()));
    let dir = TestDir::new();
    let path = dir.join("big.meta4");
    let mut out = std::io::BufWriter::new(fs::File::create(&path).expect("create"));
    let base = server.url("");
    let base = base.trim_end_matches('/');
    writeln!(
        out,
        "<?xml version=\"1.0\"?><metalink xmlns=\"urn:ietf:params:xml:ns:metalink\">"
    )
    .expect("write");
    let digest = sha256_hex(&data);
    for i in 0..10_000 {
        write!(out, "<file name=\"f{i}\"><size>4096</size>").expect("write");
        if i == 9_999 {
            write!(out, "<hash type=\"sha-256\">{digest}</hash>").expect("write");
        }
        for m in 0..100 {
            write!(out, "<url priority=\"{}\">{base}/m{m}/f{i}</url>", m + 1).expect("write");
        }
        writeln!(out, "</file>").expect("write");
    }
    writeln!(out, "</metalink>").expect("write");
    out.flush().expect("flush");
    drop(out);
    let size = fs::metadata(&path).expect("size").len();
    assert!(size > 50 << 20, "{size}");
    let args: Vec<String> = [
        "--no-conf",
        "-d",
        &dir.arg(),
        "-M",
        "big.meta4",
        "--select-file=10000",
    ]
    .map(String::from)
    .to_vec();
    let (code, peak_kib) = crate::requests::run_measuring_peak(&dir, &args);
    assert_eq!(code, Some(0));
    assert_eq!(fs::read(dir.join("f9999")).expect("f9999"), data);
    assert!(
        peak_kib < 40 * 1024,
        "peak RSS {peak_kib} KiB for a {size}-byte Metalink"
    );
    let args: Vec<String> = ["--no-conf", "-S", "-M", "big.meta4"]
        .map(String::from)
        .to_vec();
    let (code, peak_kib) = crate::requests::run_measuring_peak(&dir, &args);
    assert_eq!(code, Some(0));
    assert!(peak_kib < 40 * 1024, "peak RSS {peak_kib} KiB listing it");
}

/// Piece digests of `data` in pieces of `length`, as a Metalink 4 `<pieces>` element.
fn pieces(data: &[u8], length: usize) -> String {
    let mut p = format!("<pieces length=\"{length}\" type=\"sha-256\">");
    for chunk in data.chunks(length) {
        p.push_str(&format!("<hash>{}</hash>", sha256_hex(chunk)));
    }
    p.push_str("</pieces>");
    p
}

/// A mirror that serves a piece wrong (the first asked, by priority) and a good one: the piece
/// fails its digest as its bytes are written, is fetched again from the good mirror, and the
/// file ends byte-exact (its whole digest, where one is given, checked as it ends); with every
/// mirror wrong, the download fails and claims nothing wrong.
#[test]
fn a_piece_a_mirror_serves_wrong_is_fetched_again_from_another() {
    let server = TestServer::plain();
    let data = content(0x6d34, 2 * 1024 * 1024 + 5);
    let mut bad = data.clone();
    bad[3 * 256 * 1024 + 17] ^= 0x55;
    server.route("/bad/a.bin", Route::bytes(bad.clone()));
    server.route("/good/a.bin", Route::bytes(data.clone()));
    let doc = |urls: &[String], whole: bool| {
        let hash = match whole {
            true => format!("<hash type=\"sha-256\">{}</hash>", sha256_hex(&data)),
            false => String::new(),
        };
        let mut d = format!(
            "<?xml version=\"1.0\"?><metalink xmlns=\"urn:ietf:params:xml:ns:metalink\"><file name=\"a.bin\"><size>{}</size>{hash}{}",
            data.len(),
            pieces(&data, 256 * 1024)
        );
        for (i, u) in urls.iter().enumerate() {
            d.push_str(&format!("<url priority=\"{}\">{u}</url>", i + 1));
        }
        d.push_str("</file></metalink>");
        d
    };
    // (With the whole file's digest too, that digest is of the repaired file: it once took in
    // the bad piece's bytes and failed the download, exit 32, with every byte right.)
    for (split, whole) in [("-s1", false), ("-s4", false), ("-s1", true), ("-s4", true)] {
        let dir = TestDir::new();
        let m = doc(
            &[server.url("/bad/a.bin"), server.url("/good/a.bin")],
            whole,
        );
        fs::write(dir.join("m.meta4"), m).expect("meta4");
        let args = [
            "--no-conf",
            "-d",
            &dir.arg(),
            split,
            "-k1M",
            "-M",
            "m.meta4",
        ];
        let run = ringdl(&dir, &args);
        assert_eq!(run.code(), 0, "{split}: {run}");
        assert!(
            run.stdout
                .contains("Chunk checksum validation failed. checksumIndex=3"),
            "{split}: the bad piece was never fetched: {run}"
        );
        assert!(
            fs::read(dir.join("a.bin")).expect("a.bin") == data,
            "{split}: bytes differ"
        );
        assert!(!dir.join("a.bin.aria2").exists());
    }
    // Every mirror wrong: not complete, and what the control file claims is right.
    let dir = TestDir::new();
    fs::write(dir.join("m.meta4"), doc(&[server.url("/bad/a.bin")], false)).expect("meta4");
    let args = [
        "--no-conf",
        "-d",
        &dir.arg(),
        "--max-tries=2",
        "-M",
        "m.meta4",
    ];
    let run = ringdl(&dir, &args);
    assert_ne!(run.code(), 0, "{run}");
    let control = dir.join("a.bin.aria2");
    if control.exists() {
        let got = fs::read(dir.join("a.bin")).expect("a.bin");
        let ctl = fs::read(&control).expect("control file");
        let claims = crate::support::control_claims(&ctl).expect("a control file ringdl reads");
        for (from, to) in claims {
            let r = from as usize..(to as usize).min(data.len());
            assert!(
                got[r.clone()] == data[r.clone()],
                "a claimed range is wrong: {r:?}"
            );
        }
    }
}

/// A mirror whose file is not of the length the Metalink says is not this file: given up for
/// the next (exit 8 when none is left, as aria2c), nothing of it kept as the file.
#[test]
fn a_mirror_of_another_length_is_given_up() {
    let server = TestServer::plain();
    let data = content(0x6d35, 300_001);
    server.route("/short/a.bin", Route::bytes(data[..1000].to_vec()));
    server.route("/good/a.bin", Route::bytes(data.clone()));
    let doc = |urls: &[String]| {
        let mut d = format!(
            "<?xml version=\"1.0\"?><metalink xmlns=\"urn:ietf:params:xml:ns:metalink\"><file name=\"a.bin\"><size>{}</size>",
            data.len()
        );
        for (i, u) in urls.iter().enumerate() {
            d.push_str(&format!("<url priority=\"{}\">{u}</url>", i + 1));
        }
        d.push_str("</file></metalink>");
        d
    };
    let dir = TestDir::new();
    let m = doc(&[server.url("/short/a.bin"), server.url("/good/a.bin")]);
    fs::write(dir.join("m.meta4"), m).expect("meta4");
    let run = ringdl(&dir, &["--no-conf", "-d", &dir.arg(), "-M", "m.meta4"]);
    assert_eq!(run.code(), 0, "{run}");
    assert!(fs::read(dir.join("a.bin")).expect("a.bin") == data);
    let dir = TestDir::new();
    fs::write(dir.join("m.meta4"), doc(&[server.url("/short/a.bin")])).expect("meta4");
    let run = ringdl(&dir, &["--no-conf", "-d", &dir.arg(), "-M", "m.meta4"]);
    assert_eq!(run.code(), 8, "{run}");
    assert!(
        run.stdout
            .contains("The Metalink says 300001 bytes; the server has 1000"),
        "{run}"
    );
}

/// A Metalink file named on the command line (found by its `<?xml` start, as aria2c does,
/// whatever its name) is downloaded as with `-M`, beside the URIs named with it.
#[test]
fn a_metalink_file_named_beside_uris_is_downloaded_as_with_dash_m() {
    let server = TestServer::plain();
    let a = content(0x6d36, 10_001);
    let c = content(0x6d37, 20_002);
    server.route("/a.bin", Route::bytes(a.clone()));
    server.route("/c.bin", Route::bytes(c.clone()));
    let dir = TestDir::new();
    fs::write(
        dir.join("list.xml"),
        meta4(&[("from-meta.bin", &a, &[server.url("/a.bin")])]),
    )
    .expect("meta4");
    let c_url = server.url("/c.bin");
    let run = ringdl(&dir, &["--no-conf", "-d", &dir.arg(), "list.xml", &c_url]);
    assert_eq!(run.code(), 0, "{run}");
    assert!(run.stdout.contains("Downloading 2 item(s)"), "{run}");
    assert!(fs::read(dir.join("from-meta.bin")).expect("from-meta.bin") == a);
    assert!(fs::read(dir.join("c.bin")).expect("c.bin") == c);
}

/// `aria2.addMetalink` (the document in base64, as aria2 takes it): a download per file picked,
/// their GIDs in order; each completes under its name, its digest checked; a document that is
/// not one is refused with aria2's words.
#[test]
fn add_metalink_over_rpc_queues_a_download_per_file() {
    use base64::Engine as _;
    use serde_json::json;
    let server = TestServer::plain();
    let a = content(0x6d38, 300_001);
    let b = content(0x6d39, 7_000);
    server.route("/a.bin", Route::bytes(a.clone()));
    server.route("/b.bin", Route::bytes(b.clone()));
    let doc = meta4(&[
        ("a.bin", &a, &[server.url("/a.bin")]),
        ("d/b.bin", &b, &[server.url("/b.bin")]),
    ]);
    let encoded = base64::engine::general_purpose::STANDARD.encode(doc.as_bytes());
    let dir = TestDir::new();
    let d = crate::support::rpc::Daemon::start(&dir, &["-d", &dir.arg()]);
    let gids = d.call("aria2.addMetalink", json!([encoded]));
    let gids: Vec<String> = gids
        .as_array()
        .expect("a list of GIDs")
        .iter()
        .map(|g| g.as_str().expect("a GID").to_string())
        .collect();
    assert_eq!(gids.len(), 2, "{gids:?}");
    for g in &gids {
        let s = d.wait_for(g, std::time::Duration::from_secs(20), |s| {
            s["status"] == "complete" || s["status"] == "error"
        });
        assert_eq!(s["status"], "complete", "{s}");
    }
    assert!(fs::read(dir.join("a.bin")).expect("a.bin") == a);
    assert!(fs::read(dir.join("d/b.bin")).expect("b.bin") == b);
    // `select-file` picks; a bad document is refused.
    let picked = d.call(
        "aria2.addMetalink",
        json!([encoded, {"select-file": "2", "dir": dir.join("second").display().to_string()}]),
    );
    assert_eq!(picked.as_array().map(Vec::len), Some(1), "{picked}");
    let err = d.call_err(
        "aria2.addMetalink",
        json!([base64::engine::general_purpose::STANDARD.encode("not xml")]),
    );
    assert!(
        err.contains("Could not parse Metalink XML document"),
        "{err}"
    );
    // A rule broken by its last file refuses the whole document: nothing of it is queued
    // (files are queued as they are read, after a first reading checked it whole).
    let waiting = |d: &crate::support::rpc::Daemon| {
        d.call("aria2.getGlobalStat", json!([]))["numWaiting"].clone()
    };
    let before = waiting(&d);
    let broken = meta4(&[
        ("ok.bin", &a, &[server.url("/a.bin")]),
        ("../x.bin", &b, &[server.url("/b.bin")]),
    ]);
    let encoded = base64::engine::general_purpose::STANDARD.encode(broken.as_bytes());
    let err = d.call_err("aria2.addMetalink", json!([encoded, {"pause": "true"}]));
    assert!(err.contains("file@name"), "{err}");
    assert_eq!(waiting(&d), before);
    assert_eq!(d.call("aria2.shutdown", json!([])), "OK");
}

/// Metalink/HTTP's `Digest` header (RFC 3230): a download that expects no digest takes the
/// strongest one said and checks the file against it (exit 32 when it does not match); one that
/// expects a digest of that kind refuses a mirror that says another (aria2c's words).
#[test]
fn a_digest_header_is_checked_as_the_files_digest() {
    use base64::Engine as _;
    let b64 = |d: &[u8]| base64::engine::general_purpose::STANDARD.encode(d);
    let sha256 = |d: &[u8]| {
        use sha2::Digest as _;
        sha2::Sha256::digest(d).to_vec()
    };
    let server = TestServer::plain();
    let data = content(0x6d3a, 200_001);
    let right = format!("SHA-256={}", b64(&sha256(&data)));
    let wrong = format!("SHA-256={}", b64(&sha256(b"another file")));
    server.route(
        "/right.bin",
        Route::bytes(data.clone()).header("Digest", &right),
    );
    server.route(
        "/wrong.bin",
        Route::bytes(data.clone()).header("Digest", &wrong),
    );
    let dir = TestDir::new();
    let run = ringdl(
        &dir,
        &["--no-conf", "-d", &dir.arg(), &server.url("/right.bin")],
    );
    assert_eq!(run.code(), 0, "{run}");
    assert!(
        run.stdout.contains("Verification finished successfully"),
        "{run}"
    );
    let run = ringdl(
        &dir,
        &["--no-conf", "-d", &dir.arg(), &server.url("/wrong.bin")],
    );
    assert_eq!(run.code(), 32, "{run}");
    // Expected already (a Metalink's hash): the mirror saying another is given up.
    let m = meta4(&[(
        "m.bin",
        &data,
        &[server.url("/wrong.bin"), server.url("/right.bin")],
    )]);
    fs::write(dir.join("m.meta4"), m).expect("meta4");
    let run = ringdl(&dir, &["--no-conf", "-d", &dir.arg(), "-M", "m.meta4"]);
    assert_eq!(run.code(), 0, "{run}");
    assert!(
        run.stdout
            .contains("Invalid hash found in Digest header field."),
        "{run}"
    );
    assert!(fs::read(dir.join("m.bin")).expect("m.bin") == data);
}

/// Metalink/HTTP's `Link: <...>; rel=duplicate` headers (RFC 6249) on the first answer add
/// mirrors that split the download with the first; relative targets are resolved against the
/// URL asked. A download made from a Metalink takes none (its mirrors are the Metalink's).
#[test]
fn link_headers_add_mirrors_to_a_download_from_a_uri() {
    let server = TestServer::plain();
    let data = content(0x6d3b, 6 * 1024 * 1024 + 3);
    let links =
        "</m2/a.bin>; rel=duplicate; pri=1, <http://127.0.0.1:1/a.bin>; rel=duplicate; pri=9";
    server.route("/a.bin", Route::bytes(data.clone()).header("Link", links));
    server.route("/m2/a.bin", Route::bytes(data.clone()));
    let dir = TestDir::new();
    let url = server.url("/a.bin");
    let run = ringdl(&dir, &["--no-conf", "-d", &dir.arg(), "-s4", "-k1M", &url]);
    assert_eq!(run.code(), 0, "{run}");
    assert!(fs::read(dir.join("a.bin")).expect("a.bin") == data);
    assert!(
        !server.requests_to("/m2/a.bin").is_empty(),
        "the mirror the Link header named was never asked"
    );
    // From a Metalink: the Link header adds nothing.
    let asked = server.requests_to("/m2/a.bin").len();
    let dir = TestDir::new();
    fs::write(
        dir.join("m.meta4"),
        meta4(&[("a.bin", &data, std::slice::from_ref(&url))]),
    )
    .expect("meta4");
    let run = ringdl(
        &dir,
        &[
            "--no-conf",
            "-d",
            &dir.arg(),
            "-s4",
            "-k1M",
            "-M",
            "m.meta4",
        ],
    );
    assert_eq!(run.code(), 0, "{run}");
    assert_eq!(server.requests_to("/m2/a.bin").len(), asked);
}

/// `--follow-metalink`: a Metalink fetched from a URI (by its suffix) goes on to its files,
/// relative URLs taken from where it came from; `true` keeps the document, `mem` never writes
/// it (shown as `[MEMORY]name`), `false` only saves it. The first request advertises the
/// Metalink types (as aria2c's does); the files' requests do not.
#[test]
fn a_metalink_fetched_from_a_uri_is_followed_in_each_mode() {
    let server = TestServer::plain();
    let a = content(0x6d3c, 300_001);
    let b = content(0x6d3d, 5_000);
    server.route("/a.bin", Route::bytes(a.clone()));
    server.route("/sub/b.bin", Route::bytes(b.clone()));
    // (b's URL is relative: of the Metalink's own URI.)
    let doc = meta4(&[
        ("a.bin", &a, &[server.url("/a.bin")]),
        ("b.bin", &b, &["b.bin".to_string()]),
    ]);
    server.route("/sub/x.meta4", Route::bytes(doc.clone().into_bytes()));
    let url = server.url("/sub/x.meta4");
    for mode in ["true", "mem", "false"] {
        let dir = TestDir::new();
        let follow = format!("--follow-metalink={mode}");
        let run = ringdl(&dir, &["--no-conf", "-d", &dir.arg(), &follow, &url]);
        assert_eq!(run.code(), 0, "{mode}: {run}");
        let saved = fs::read_to_string(dir.join("x.meta4")).ok();
        match mode {
            "true" | "false" => assert_eq!(saved.as_deref(), Some(doc.as_str()), "{mode}"),
            _ => assert_eq!(saved, None, "mem writes nothing: {run}"),
        }
        let followed = mode != "false";
        assert_eq!(
            fs::read(dir.join("a.bin")).ok(),
            followed.then(|| a.clone()),
            "{mode}"
        );
        assert_eq!(
            fs::read(dir.join("b.bin")).ok(),
            followed.then(|| b.clone()),
            "{mode}"
        );
        let shown = match mode {
            "mem" => "[MEMORY]x.meta4".to_string(),
            _ => dir.join("x.meta4").display().to_string(),
        };
        assert!(run.stdout.contains("|OK  |"), "{run}");
        assert!(run.stdout.contains(&shown), "{mode}: {run}");
        assert!(!dir.join("x.meta4.aria2").exists());
    }
    let asked = server.requests_to("/sub/x.meta4");
    assert!(
        asked.iter().all(|r| r.header("accept")
            == Some("*/*,application/metalink4+xml,application/metalink+xml")),
        "{asked:?}"
    );
    let files = server.requests_to("/a.bin");
    assert!(
        !files.is_empty() && files.iter().all(|r| r.header("accept") == Some("*/*")),
        "{files:?}"
    );
}

/// A Metalink known by its Content-Type alone (no suffix) is followed too; one that is not a
/// Metalink after all is said in one ERROR line, and the download that fetched it stays
/// complete (aria2c's result and exit code, 0).
#[test]
fn a_metalink_known_by_its_content_type_is_followed_and_a_broken_one_said() {
    let server = TestServer::plain();
    let a = content(0x6d3e, 20_000);
    server.route("/a.bin", Route::bytes(a.clone()));
    let doc = meta4(&[("a.bin", &a, &[server.url("/a.bin")])]);
    server.route(
        "/mirrors",
        Route::bytes(doc.into_bytes())
            .header("Content-Type", "application/metalink4+xml; charset=utf-8"),
    );
    server.route("/bad.meta4", Route::bytes(b"hello, not XML".to_vec()));
    for mode in ["true", "mem"] {
        let dir = TestDir::new();
        let follow = format!("--follow-metalink={mode}");
        let run = ringdl(
            &dir,
            &[
                "--no-conf",
                "-d",
                &dir.arg(),
                &follow,
                &server.url("/mirrors"),
            ],
        );
        assert_eq!(run.code(), 0, "{run}");
        assert!(fs::read(dir.join("a.bin")).expect("a.bin") == a, "{mode}");
        assert_eq!(dir.join("mirrors").exists(), mode == "true", "{mode}");
        let dir = TestDir::new();
        let run = ringdl(
            &dir,
            &[
                "--no-conf",
                "-d",
                &dir.arg(),
                &follow,
                &server.url("/bad.meta4"),
            ],
        );
        assert_eq!(run.code(), 0, "{run}");
        let errors = run.lines_with("ERROR");
        assert!(
            errors.len() == 1 && errors[0].contains("errorCode=20"),
            "{mode}: {run}"
        );
    }
}

/// A Metalink larger than memory may hold (`mem`) is refused in one line before its body is
/// taken; `true` reads one of any size from disk.
#[test]
fn a_metalink_too_large_for_memory_is_refused_with_mem() {
    let server = TestServer::plain();
    let mut big =
        b"<?xml version=\"1.0\"?>\n<metalink xmlns=\"urn:ietf:params:xml:ns:metalink\">".to_vec();
    big.resize(65 << 20, b' ');
    big.extend_from_slice(b"</metalink>");
    server.route("/big.meta4", Route::bytes(big));
    let dir = TestDir::new();
    let run = ringdl(
        &dir,
        &[
            "--no-conf",
            "-d",
            &dir.arg(),
            "--follow-metalink=mem",
            &server.url("/big.meta4"),
        ],
    );
    assert_eq!(run.code(), 1, "{run}");
    assert!(
        run.stderr.contains("too large to hold in memory")
            || run.stdout.contains("too large to hold in memory"),
        "{run}"
    );
    assert!(
        !dir.join("big.meta4").exists() && !dir.join("big.meta4.aria2").exists(),
        "nothing written"
    );
}

/// A local Metalink file named in an `-i` entry stands for its downloads, with the entry's
/// options (here its own `dir`); the list's other entries go on as before.
#[test]
fn a_metalink_file_in_an_input_list_stands_for_its_downloads() {
    let server = TestServer::plain();
    let a = content(0x6d3f, 40_000);
    let c = content(0x6d40, 9_000);
    server.route("/a.bin", Route::bytes(a.clone()));
    server.route("/c.bin", Route::bytes(c.clone()));
    let dir = TestDir::new();
    fs::write(
        dir.join("list.meta4"),
        meta4(&[("a.bin", &a, &[server.url("/a.bin")])]),
    )
    .expect("meta4");
    let list = format!(
        "{}\n  dir={}\n{}\n",
        dir.join("list.meta4").display(),
        dir.join("m").display(),
        server.url("/c.bin")
    );
    fs::write(dir.join("in.txt"), list).expect("list");
    let run = ringdl(
        &dir,
        &[
            "--no-conf",
            "-d",
            &dir.arg(),
            "-i",
            &dir.join("in.txt").display().to_string(),
        ],
    );
    assert_eq!(run.code(), 0, "{run}");
    assert!(fs::read(dir.join("m/a.bin")).expect("m/a.bin") == a);
    assert!(fs::read(dir.join("c.bin")).expect("c.bin") == c);
}

/// Over RPC, a Metalink an `addUri` download fetched becomes downloads queued first, each
/// `following` it, and it `followedBy` them (aria2's fields); `--pause-metadata` adds them
/// paused.
#[test]
fn a_followed_metalink_links_its_downloads_over_rpc() {
    use serde_json::json;
    let server = TestServer::plain();
    let a = content(0x6d41, 70_000);
    let b = content(0x6d42, 3_000);
    server.route("/a.bin", Route::bytes(a.clone()));
    server.route("/b.bin", Route::bytes(b.clone()));
    let doc = meta4(&[
        ("a.bin", &a, &[server.url("/a.bin")]),
        ("b.bin", &b, &[server.url("/b.bin")]),
    ]);
    server.route("/x.meta4", Route::bytes(doc.into_bytes()));
    let dir = TestDir::new();
    let d = crate::support::rpc::Daemon::start(&dir, &["-d", &dir.arg()]);
    let parent = d.call("aria2.addUri", json!([[server.url("/x.meta4")]]));
    let parent = parent.as_str().expect("a GID").to_string();
    let s = d.wait_for(&parent, std::time::Duration::from_secs(20), |s| {
        s["status"] == "complete" && s["followedBy"].is_array()
    });
    let children: Vec<String> = s["followedBy"]
        .as_array()
        .expect("followedBy")
        .iter()
        .map(|g| g.as_str().expect("GID").to_string())
        .collect();
    assert_eq!(children.len(), 2, "{s}");
    for g in &children {
        let c = d.wait_for(g, std::time::Duration::from_secs(20), |s| {
            s["status"] == "complete" || s["status"] == "error"
        });
        assert_eq!(c["status"], "complete", "{c}");
        assert_eq!(c["following"], parent.as_str(), "{c}");
    }
    assert!(fs::read(dir.join("a.bin")).expect("a.bin") == a);
    assert!(fs::read(dir.join("b.bin")).expect("b.bin") == b);
    // --pause-metadata: they wait, paused.
    d.call(
        "aria2.changeGlobalOption",
        json!([{"pause-metadata": "true"}]),
    );
    let second = d.call(
        "aria2.addUri",
        json!([[server.url("/x.meta4")], {"dir": dir.join("p").display().to_string()}]),
    );
    let second = second.as_str().expect("a GID").to_string();
    let s = d.wait_for(&second, std::time::Duration::from_secs(20), |s| {
        s["status"] == "complete" && s["followedBy"].is_array()
    });
    for g in s["followedBy"].as_array().expect("followedBy") {
        let c = d.call("aria2.tellStatus", json!([g, ["status", "following"]]));
        assert_eq!(c["status"], "paused", "{c}");
        assert_eq!(c["following"], second.as_str(), "{c}");
    }
    assert_eq!(d.call("aria2.shutdown", json!([])), "OK");
}

/// A file the Metalink gives only as a torrent (`metaurl`) fails at once with one line naming
/// BitTorrent (exit 1; nothing fetched, the torrent never taken for the file), one with no
/// resource at all with a line of its own; a file with URLs beside its torrent is downloaded
/// from them.
#[test]
fn a_file_given_only_as_a_torrent_is_refused_in_one_line() {
    let server = TestServer::plain();
    let u = content(0x6d43, 30_000);
    server.route("/u.bin", Route::bytes(u.clone()));
    server.route("/t.torrent", Route::bytes(b"d4:infod4:name1:xee".to_vec()));
    let torrent = server.url("/t.torrent");
    let doc = format!(
        "<?xml version=\"1.0\"?><metalink xmlns=\"urn:ietf:params:xml:ns:metalink\">\
         <file name=\"t.bin\"><metaurl mediatype=\"torrent\">{torrent}</metaurl></file>\
         <file name=\"u.bin\"><url>{}</url><metaurl mediatype=\"torrent\">{torrent}</metaurl></file>\
         <file name=\"z.bin\"><size>10</size></file>\
         </metalink>",
        server.url("/u.bin")
    );
    let dir = TestDir::new();
    fs::write(dir.join("m.meta4"), doc).expect("meta4");
    let run = ringdl(&dir, &["--no-conf", "-d", &dir.arg(), "-M", "m.meta4"]);
    assert_eq!(run.code(), 1, "{run}");
    let refused = run.lines_with("does not support BitTorrent");
    assert!(refused.len() == 1 && refused[0].contains("t.bin"), "{run}");
    assert!(!dir.join("t.bin").exists(), "{run}");
    // (A file with no resource at all: aria2c's exit code, 1, and a line of its own.)
    assert_eq!(run.lines_with("gives no URI for z.bin").len(), 1, "{run}");
    assert!(fs::read(dir.join("u.bin")).expect("u.bin") == u);
    assert!(server.requests_to("/t.torrent").is_empty());
}

/// Metalink/HTTP's `rel=describedby` (beyond aria2c, which ignores it): the download goes on
/// at once, the Metalink is fetched beside it in memory (no file, no result row), and its
/// mirrors join the download and its digest checks the file; a digest that does not match
/// fails the download (exit 32). With `--follow-metalink=false` it is not fetched; a Metalink
/// that is not there changes nothing and is not an error.
#[test]
fn a_describedby_metalink_lends_the_download_its_mirrors_and_digest() {
    let server = TestServer::plain();
    let data = content(0x6d44, 3 * 1024 * 1024 + 7);
    let link =
        |target: &str| format!("<{target}>; rel=describedby; type=\"application/metalink4+xml\"");
    // (Slow enough that the Metalink comes before the file is done.)
    let slow = |r: Route| r.throttle(64 * 1024, std::time::Duration::from_millis(20));
    server.route(
        "/f.iso",
        slow(Route::bytes(data.clone())).header("Link", &link("/f.iso.meta4")),
    );
    server.route("/m2/f.iso", Route::bytes(data.clone()));
    server.route(
        "/w/f.iso",
        slow(Route::bytes(data.clone())).header("Link", &link("/wrong.meta4")),
    );
    server.route(
        "/gone/f.iso",
        Route::bytes(data.clone()).header("Link", &link("/nothing.meta4")),
    );
    let doc = |digest: &str| {
        format!(
            "<?xml version=\"1.0\"?><metalink xmlns=\"urn:ietf:params:xml:ns:metalink\"><file name=\"f.iso\">\
             <size>{}</size><hash type=\"sha-256\">{digest}</hash><url priority=\"1\">{}</url></file></metalink>",
            data.len(),
            server.url("/m2/f.iso")
        )
    };
    server.route(
        "/f.iso.meta4",
        Route::bytes(doc(&sha256_hex(&data)).into_bytes()),
    );
    server.route(
        "/wrong.meta4",
        Route::bytes(doc(&"0".repeat(64)).into_bytes()),
    );
    let dir = TestDir::new();
    let run = ringdl(
        &dir,
        &[
            "--no-conf",
            "-d",
            &dir.arg(),
            "-s4",
            "-k1M",
            &server.url("/f.iso"),
        ],
    );
    assert_eq!(run.code(), 0, "{run}");
    assert!(fs::read(dir.join("f.iso")).expect("f.iso") == data);
    assert_eq!(server.requests_to("/f.iso.meta4").len(), 1);
    assert!(
        !server.requests_to("/m2/f.iso").is_empty(),
        "the Metalink's mirror was never asked: {run}"
    );
    assert!(!dir.join("f.iso.meta4").exists());
    assert!(
        !run.stdout.contains("meta4"),
        "no result row, no line of its own: {run}"
    );
    assert!(
        run.stdout.contains("Verification finished successfully"),
        "{run}"
    );
    // A digest the file does not have: the download fails as with --checksum.
    let dir = TestDir::new();
    let run = ringdl(
        &dir,
        &["--no-conf", "-d", &dir.arg(), &server.url("/w/f.iso")],
    );
    assert_eq!(run.code(), 32, "{run}");
    // Not followed with false; a Metalink that is not there is not an error.
    let dir = TestDir::new();
    let url = server.url("/f.iso");
    let run = ringdl(
        &dir,
        &[
            "--no-conf",
            "-d",
            &dir.arg(),
            "--follow-metalink=false",
            &url,
        ],
    );
    assert_eq!(run.code(), 0, "{run}");
    assert_eq!(
        server.requests_to("/f.iso.meta4").len(),
        1,
        "fetched with false"
    );
    let dir = TestDir::new();
    let run = ringdl(
        &dir,
        &["--no-conf", "-d", &dir.arg(), &server.url("/gone/f.iso")],
    );
    assert_eq!(run.code(), 0, "{run}");
    assert!(run.lines_with("ERROR").is_empty(), "{run}");
    assert!(fs::read(dir.join("f.iso")).expect("f.iso") == data);
    // A Metalink that is slow to come is not waited for once the download is complete (the
    // run would otherwise last until its server answered or timed out).
    server.route(
        "/slow.meta4",
        Route::bytes(doc(&sha256_hex(&data)).into_bytes())
            .delay_head(std::time::Duration::from_secs(40)),
    );
    server.route(
        "/s/f.iso",
        Route::bytes(data.clone()).header("Link", &link("/slow.meta4")),
    );
    let dir = TestDir::new();
    let args = ["--no-conf", "-d", &dir.arg(), &server.url("/s/f.iso")];
    let run = crate::support::ringdl_with_timeout(&dir, &args, std::time::Duration::from_secs(20));
    assert_eq!(run.code(), 0, "{run}");
    assert!(fs::read(dir.join("f.iso")).expect("f.iso") == data);
}

/// A Metalink's file that did not finish is saved in the session under its own name and
/// digest (`out`, `checksum`): the session run again downloads it as the Metalink named it (it
/// was saved as its URL alone, which a rerun saved under the URL's name, unchecked).
#[test]
fn a_metalink_file_left_unfinished_is_saved_in_the_session_by_its_name() {
    let server = TestServer::plain();
    let data = content(0x6d45, 20_000);
    server.route("/x/data", Route::status(503));
    let doc = meta4(&[("named.bin", &data, &[server.url("/x/data")])]);
    let dir = TestDir::new();
    fs::write(dir.join("m.meta4"), doc).expect("meta4");
    let session = dir.join("s.txt").display().to_string();
    let args = [
        "--no-conf",
        "-d",
        &dir.arg(),
        "--max-tries=1",
        "--save-session",
        &session,
        "-M",
        "m.meta4",
    ];
    let run = ringdl(&dir, &args);
    assert_ne!(run.code(), 0, "{run}");
    let saved = fs::read_to_string(&session).expect("session");
    assert!(
        saved.contains(" out=named.bin")
            && saved.contains(&format!(" checksum=sha-256={}", sha256_hex(&data))),
        "{saved}"
    );
    server.route("/x/data", Route::bytes(data.clone()));
    let run = ringdl(&dir, &["--no-conf", "-d", &dir.arg(), "-i", &session]);
    assert_eq!(run.code(), 0, "{run}");
    assert!(fs::read(dir.join("named.bin")).expect("named.bin") == data);
    assert!(!dir.join("data").exists());
}

/// `--index-out` names the file of an index (as `-S` numbers them) in `--dir`, beyond aria2c
/// (which takes it for torrents only); a value that is not `INDEX=PATH` is refused as aria2c
/// refuses it (exit 28).
#[test]
fn index_out_names_a_metalink_file_by_its_index() {
    let server = TestServer::plain();
    let a = content(0x6d46, 10_000);
    let b = content(0x6d47, 12_000);
    server.route("/a.bin", Route::bytes(a.clone()));
    server.route("/b.bin", Route::bytes(b.clone()));
    let dir = TestDir::new();
    let doc = meta4(&[
        ("a.bin", &a, &[server.url("/a.bin")]),
        ("b.bin", &b, &[server.url("/b.bin")]),
    ]);
    fs::write(dir.join("m.meta4"), doc).expect("meta4");
    let run = ringdl(
        &dir,
        &[
            "--no-conf",
            "-d",
            &dir.arg(),
            "-O",
            "2=sub/renamed.bin",
            "-M",
            "m.meta4",
        ],
    );
    assert_eq!(run.code(), 0, "{run}");
    assert!(fs::read(dir.join("a.bin")).expect("a.bin") == a);
    assert!(fs::read(dir.join("sub/renamed.bin")).expect("renamed") == b);
    assert!(!dir.join("b.bin").exists());
    let run = ringdl(
        &dir,
        &["--no-conf", "-d", &dir.arg(), "-O", "x", "-M", "m.meta4"],
    );
    assert_eq!(run.code(), 28, "{run}");
}

/// `--follow-metalink=mem` never touches the disk for the document: not when its answer is cut
/// and the download starts over (it once went on into `./[MEMORY]name`), not a file and control
/// file of its name already in `--dir` (left as they were, never taken up or removed), and a
/// document of several MiB is held whole over one connection (split without a control file it
/// failed on its own write rule); a chunked one past the limit is refused as it arrives.
#[test]
fn a_metalink_held_in_memory_never_touches_the_disk() {
    use crate::support::server::{Fault, When};
    let server = TestServer::plain();
    let a = content(0x6d48, 10_000);
    server.route("/a.bin", Route::bytes(a.clone()));
    // Over 2 MiB (padded with comments), so -k1M would split it.
    let mut doc = meta4(&[("a.bin", &a, &[server.url("/a.bin")])]);
    let pad = format!("<!-- {} -->\n", "x".repeat(1000));
    doc = doc.replacen("<metalink ", &format!("{}<metalink ", pad.repeat(2500)), 1);
    let bytes = doc.into_bytes();
    server.route(
        "/cut.meta4",
        Route::bytes(bytes.clone())
            .chunked()
            .fault(Fault::ResetAfter(300_000), When::Request(1)),
    );
    server.route("/big.meta4", Route::bytes(bytes.clone()));
    let mut huge =
        b"<?xml version=\"1.0\"?>\n<metalink xmlns=\"urn:ietf:params:xml:ns:metalink\">".to_vec();
    huge.resize(65 << 20, b' ');
    server.route("/huge.meta4", Route::bytes(huge).chunked());
    let dir = TestDir::new();
    fs::write(dir.join("cut.meta4"), b"mine").expect("a file of the name");
    fs::write(dir.join("cut.meta4.aria2"), b"not a control file").expect("control");
    for url in ["/cut.meta4", "/big.meta4"] {
        let run = ringdl(
            &dir,
            &[
                "--no-conf",
                "-d",
                &dir.arg(),
                "--follow-metalink=mem",
                "--remove-control-file",
                "-k1M",
                "-s4",
                "--allow-overwrite",
                &server.url(url),
            ],
        );
        assert_eq!(run.code(), 0, "{url}: {run}");
        assert!(fs::read(dir.join("a.bin")).expect("a.bin") == a, "{url}");
        fs::remove_file(dir.join("a.bin")).expect("rm");
    }
    assert_eq!(fs::read(dir.join("cut.meta4")).expect("cut.meta4"), b"mine");
    assert_eq!(
        fs::read(dir.join("cut.meta4.aria2")).expect("control"),
        b"not a control file"
    );
    assert!(!dir.join("big.meta4").exists());
    let stray: Vec<_> = fs::read_dir(dir.path())
        .expect("dir")
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().contains("MEMORY"))
        .collect();
    assert!(stray.is_empty(), "{stray:?}");
    let run = ringdl(
        &dir,
        &[
            "--no-conf",
            "-d",
            &dir.arg(),
            "--follow-metalink=mem",
            &server.url("/huge.meta4"),
        ],
    );
    assert_eq!(run.code(), 1, "{run}");
    assert_eq!(
        run.lines_with("too large to hold in memory").len(),
        1,
        "{run}"
    );
}

/// A Metalink download that goes on from what an earlier run left (`-c` over its partial file)
/// is followed once complete, as a new one is.
#[test]
fn a_resumed_metalink_download_is_followed() {
    let server = TestServer::plain();
    let a = content(0x6d49, 10_000);
    server.route("/a.bin", Route::bytes(a.clone()));
    let doc = meta4(&[("a.bin", &a, &[server.url("/a.bin")])]);
    server.route("/x.meta4", Route::bytes(doc.clone().into_bytes()));
    let dir = TestDir::new();
    fs::write(dir.join("x.meta4"), &doc.as_bytes()[..100]).expect("partial");
    let run = ringdl(
        &dir,
        &["--no-conf", "-d", &dir.arg(), "-c", &server.url("/x.meta4")],
    );
    assert_eq!(run.code(), 0, "{run}");
    assert_eq!(
        fs::read_to_string(dir.join("x.meta4")).expect("x.meta4"),
        doc
    );
    assert!(fs::read(dir.join("a.bin")).expect("a.bin") == a, "{run}");
}

/// A Metalink download with piece digests stopped part-way by one program is finished by the
/// other from its control file, both ways (`-c`, the same command line): byte-exact, its
/// digests checked, and the second run asked only for the rest.
#[test]
fn a_metalink_download_cross_resumes_with_aria2c_both_ways() {
    if !crate::support::require_peer("aria2c", crate::support::have_program("aria2c")) {
        return;
    }
    let server = TestServer::plain();
    let data = content(0x6d4a, 20 * 1024 * 1024 + 4097);
    server.route("/f.bin", Route::bytes(data.clone()));
    let doc = format!(
        "<?xml version=\"1.0\"?><metalink xmlns=\"urn:ietf:params:xml:ns:metalink\"><file name=\"f.bin\">\
         <size>{}</size><hash type=\"sha-256\">{}</hash>{}<url>{}</url></file></metalink>",
        data.len(),
        sha256_hex(&data),
        pieces(&data, 256 * 1024),
        server.url("/f.bin")
    );
    let aria2c = std::path::PathBuf::from("aria2c");
    let ours = crate::support::binary_under_test();
    for (first, second) in [(&aria2c, &ours), (&ours, &aria2c)] {
        let dir = TestDir::new();
        fs::write(dir.join("m.meta4"), &doc).expect("meta4");
        let common = ["--no-conf", "-x4", "-s4", "-k1M", "-M", "m.meta4"];
        let mut args: Vec<String> = common.iter().map(|s| s.to_string()).collect();
        args.extend(["--max-download-limit=3M".into(), "--stop=2".into()]);
        args.extend(["-d".into(), dir.arg()]);
        let run =
            crate::support::run_program(first, &dir, &args, std::time::Duration::from_secs(60));
        assert!(
            dir.join("f.bin.aria2").exists(),
            "{} left no control file\n{run}",
            first.display()
        );
        let mut args: Vec<String> = common.iter().map(|s| s.to_string()).collect();
        args.extend(["-c".into(), "-d".into(), dir.arg()]);
        let before = server.requests().len();
        let run =
            crate::support::run_program(second, &dir, &args, std::time::Duration::from_secs(60));
        assert_eq!(run.code(), 0, "{}: {run}", second.display());
        assert!(
            fs::read(dir.join("f.bin")).expect("f.bin") == data,
            "{}",
            second.display()
        );
        let later = &server.requests()[before..];
        let from_zero = later
            .iter()
            .any(|r| r.header("range").is_none_or(|v| v.starts_with("bytes=0-")));
        assert!(!from_zero, "{} started over: {later:?}", second.display());
    }
}

/// In daemon mode a Metalink file named on the command line (or with `-M`) has its files queued
/// as `aria2.addMetalink` queues them (it was refused in one line).
#[test]
fn a_daemon_queues_the_files_of_a_metalink_named_on_its_command_line() {
    use serde_json::json;
    let server = TestServer::plain();
    let a = content(0x6d4b, 30_000);
    let b = content(0x6d4c, 3_000);
    server.route("/a.bin", Route::bytes(a.clone()));
    server.route("/b.bin", Route::bytes(b.clone()));
    let dir = TestDir::new();
    let doc = meta4(&[
        ("a.bin", &a, &[server.url("/a.bin")]),
        ("b.bin", &b, &[server.url("/b.bin")]),
    ]);
    fs::write(dir.join("m.meta4"), doc).expect("meta4");
    let m = dir.join("m.meta4").display().to_string();
    let d = crate::support::rpc::Daemon::start(&dir, &["-d", &dir.arg(), &m]);
    let mut done = Vec::new();
    for _ in 0..200 {
        let stopped = d.call("aria2.tellStopped", json!([0, 10, ["status"]]));
        done = stopped.as_array().cloned().unwrap_or_default();
        if done.len() == 2 {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert_eq!(done.len(), 2, "{done:?}");
    assert!(done.iter().all(|s| s["status"] == "complete"), "{done:?}");
    assert!(fs::read(dir.join("a.bin")).expect("a.bin") == a);
    assert!(fs::read(dir.join("b.bin")).expect("b.bin") == b);
    assert_eq!(d.call("aria2.shutdown", json!([])), "OK");
}
