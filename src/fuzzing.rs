//! Entry points for the coverage-guided fuzz targets (`bench/fuzz/`, run by `bench/fuzz.sh`) and
//! for the regression tests made from what they find (`tests/fuzz_regressions.rs`). Each takes
//! arbitrary bytes, runs one parser of input a stranger controls, and checks what must hold
//! whatever the input; a panic, in the parser or in a check, is a finding.
use crate::http::{self, ChunkEvent, ChunkedDecoder};
use std::io::Cursor;

/// The bytes as header text (ISO-8859-1, each byte one character), as the engine hands headers on.
fn latin1(data: &[u8]) -> String {
    data.iter().map(|&b| char::from(b)).collect()
}

fn text(data: &[u8]) -> String {
    String::from_utf8_lossy(data).into_owned()
}

/// A response head: parsed, or refused, or waiting for more; never past the bytes it was given,
/// and a parsed head has a framing whatever its fields say.
pub fn response_head(data: &[u8]) {
    if let Ok(Some((head, body_at))) = http::parse_head(data) {
        assert!(body_at <= data.len());
        let _ = head.framing(false);
        let _ = head.framing(true);
        // The same head with the body cut off parses the same way.
        let again = http::parse_head(&data[..body_at]);
        assert!(matches!(again, Ok(Some((_, n))) if n == body_at));
    }
}

/// What a chunked decoder makes of `input` fed in pieces of `piece` bytes (each call sees what
/// earlier calls left unconsumed plus the next piece): the body, and whether it ended or failed.
fn decode_chunked(input: &[u8], piece: usize) -> (Vec<u8>, bool, bool) {
    let mut dec = ChunkedDecoder::new();
    let mut body = Vec::new();
    let mut held: Vec<u8> = Vec::new();
    for part in input.chunks(piece.max(1)) {
        held.extend_from_slice(part);
        loop {
            match dec.decode(&held) {
                Ok((used, ev)) => {
                    assert!(used <= held.len());
                    if let Some(ChunkEvent::Data(r)) = &ev {
                        assert!(r.end == used && r.start <= r.end);
                        body.extend_from_slice(&held[r.clone()]);
                    }
                    let done = matches!(ev, Some(ChunkEvent::Done));
                    held.drain(..used);
                    if done {
                        return (body, true, false);
                    }
                    if ev.is_none() {
                        // All consumed; more is needed.
                        assert!(held.is_empty());
                        break;
                    }
                }
                Err(_) => return (body, false, true),
            }
        }
    }
    (body, false, false)
}

/// The chunked decoder: the first byte sets a piece size, the rest is the body as sent. However
/// the bytes are split, the decoded body, its end and its failure are the same as in one piece.
pub fn chunked(data: &[u8]) {
    let Some((&piece, body)) = data.split_first() else {
        return;
    };
    let whole = decode_chunked(body, body.len().max(1));
    let split = decode_chunked(body, usize::from(piece % 17) + 1);
    assert_eq!(whole, split);
}

/// A name a file may be given: not empty, not `.` or `..`, no separator, NUL or control
/// character, within `NAME_MAX`.
fn assert_safe_name(name: &str) {
    assert!(!name.is_empty() && name != "." && name != "..", "{name:?}");
    assert!(!name.contains(['/', '\0']), "{name:?}");
    assert!(name.len() <= http::naming::NAME_MAX, "{} bytes", name.len());
}

/// Content-Disposition values, read either way `--content-disposition-default-utf8` reads them:
/// any name that comes out is one a file may safely be given (after the engine's own fitting).
pub fn content_disposition(data: &[u8]) {
    let value = latin1(data);
    for utf8 in [false, true] {
        if let Some(name) = http::filename_from_content_disposition_with(&value, utf8) {
            assert!(!name.is_empty() && name != "." && name != "..", "{name:?}");
            assert!(!name.contains(['/', '\\', '\0']), "{name:?}");
            assert!(!name.chars().any(char::is_control), "{name:?}");
        }
    }
}

/// The name a URI gives a file: always a safe one.
pub fn uri_name(data: &[u8]) {
    let Ok(url) = url::Url::parse(&text(data)) else {
        return;
    };
    assert_safe_name(&http::filename_from_url(&url));
}

/// A control file: refused, or read into ranges that encode and read back the same.
pub fn control_file(data: &[u8]) {
    let Ok(cf) = crate::store::control::ControlFile::decode(data) else {
        return;
    };
    let _ = cf.done_bytes();
    if cf.check().is_ok() {
        let again = crate::store::control::ControlFile::decode(&cf.encode())
            .expect("an encoded control file reads back");
        assert_eq!(again.done_ranges(), cf.done_ranges());
    }
}

/// An `-i` list: every entry read or refused with a reason, never more entries than lines.
pub fn input_list(data: &[u8]) {
    let lines = data.split(|&b| b == b'\n').count();
    let reader = crate::cli::input::InputReader::new(Cursor::new(data), "fuzz");
    let mut n = 0;
    for entry in reader {
        n += 1;
        assert!(n <= lines);
        if entry.is_err() {
            break;
        }
    }
}

/// An `aria2.conf`.
pub fn config(data: &[u8]) {
    let mut warnings = Vec::new();
    let _ = crate::cli::parse::parse_config(&text(data), &mut warnings);
}

/// A cookie file and `Set-Cookie` values: what is kept saves and loads back to as many cookies,
/// and the jar stays within its bounds.
pub fn cookies(data: &[u8]) {
    let mut jar = http::cookies::Jar::new();
    jar.load_netscape(&text(data));
    let url = url::Url::parse("https://example.com/a/b").expect("a fixed URL");
    let set: Vec<String> = data.split(|&b| b == b'\n').take(200).map(latin1).collect();
    jar.store_response(&url, &set);
    let _ = jar.header_for(&url);
    assert!(jar.len() <= http::cookies::MAX_COOKIES);
    let saved = jar.to_netscape();
    let mut back = http::cookies::Jar::new();
    back.load_netscape(&saved);
    assert_eq!(back.len(), jar.len(), "{saved}");
}

/// The packer: body bytes in pieces of any size (the second byte), Content-Length or chunked (the
/// first byte's low bit), unframed into aligned write blocks; the blocks, written where they say,
/// make exactly the file the body stands for, with no hole and no byte written twice.
pub fn pack_body(data: &[u8]) {
    let [mode, _, body @ ..] = data else {
        return;
    };
    let expected = if mode & 1 == 1 {
        let (decoded, done, failed) = decode_chunked(body, body.len().max(1));
        (done && !failed).then_some(decoded)
    } else {
        Some(body.to_vec())
    };
    if expected.as_ref().is_some_and(Vec::is_empty) {
        return;
    }
    crate::engine::packing::pack_body(data, expected);
}

/// A netrc file.
pub fn netrc(data: &[u8]) {
    let n = http::auth::Netrc::parse(&text(data));
    let _ = n.lookup("example.com");
}

/// A service that answers every method with its parameters (the envelope is what is fuzzed).
struct Echo;
impl crate::rpc::Service for Echo {
    fn call(
        &mut self,
        method: &str,
        params: crate::rpc::Params,
    ) -> Result<serde_json::Value, crate::rpc::RpcError> {
        Ok(serde_json::json!({ "method": method, "params": params.0 }))
    }
}

/// A JSON-RPC request body, with and without a secret: the answer is one JSON value (an object
/// with the request's `id`, or an array of them), with a status aria2 uses, and it serialises.
pub fn rpc_request(data: &[u8]) {
    for secret in [None, Some("s")] {
        let a = crate::rpc::answer(data, &crate::rpc::Secret::new(secret), &mut Echo);
        assert!(matches!(a.status, 200 | 400 | 500), "{}", a.status);
        match &a.json {
            serde_json::Value::Object(m) => {
                assert!(
                    m.contains_key("id") && m.contains_key("jsonrpc"),
                    "{}",
                    a.json
                );
                assert!(
                    m.contains_key("result") != m.contains_key("error"),
                    "{}",
                    a.json
                );
            }
            serde_json::Value::Array(_) => assert_eq!(a.status, 200),
            other => panic!("an answer that is neither object nor array: {other}"),
        }
        let _ = a.json.to_string();
    }
    // The GET form of the same bytes as a query string.
    if let Ok(q) = std::str::from_utf8(data) {
        let _ = crate::rpc::from_query(q);
    }
}

/// WebSocket client frames, the first byte choosing how the rest is cut: however the bytes
/// arrive, the same events come out, and no message is larger than the limit.
pub fn ws_frames(data: &[u8]) {
    let [cut, wire @ ..] = data else { return };
    let max = 4096;
    let run = |piece: usize| {
        let mut d = crate::rpc::ws::Decoder::new(max);
        let mut buf = Vec::new();
        let mut events = Vec::new();
        for chunk in wire.chunks(piece.max(1)) {
            buf.extend_from_slice(chunk);
            loop {
                match d.next(&mut buf) {
                    Ok(Some(e)) => {
                        if let crate::rpc::ws::Event::Message(m) = &e {
                            assert!(m.len() <= max);
                        }
                        events.push(Ok(e));
                    }
                    Ok(None) => break,
                    Err(e) => {
                        events.push(Err(e));
                        return events;
                    }
                }
            }
        }
        events
    };
    assert_eq!(run(usize::from(*cut)), run(wire.len()));
}

/// An RPC server's request head: parsed or refused, never past the bytes given, and the
/// foreign-page check decides either way.
pub fn rpc_request_head(data: &[u8]) {
    match crate::rpc::http::parse_request(data) {
        crate::rpc::http::Parsed::Done(h) => {
            assert!(h.head_len <= data.len() && h.head_len <= crate::rpc::http::MAX_HEAD);
            let _ = crate::rpc::http::foreign_request(&h, false);
        }
        crate::rpc::http::Parsed::Partial => assert!(data.len() < crate::rpc::http::MAX_HEAD),
        crate::rpc::http::Parsed::Bad => {}
    }
}

/// TLS records as a network between a real server and the client may make them (see
/// `tls::fuzz`): whatever arrives, the client hands out as data only a prefix of what the server
/// sealed as application data.
pub fn tls_records(data: &[u8]) {
    let _ = crate::tls::fuzz::record_layer(data);
}

/// FTP replies as a server sends them: each reply parsed whole or refused, never past the bytes
/// given, the same whether the bytes come at once or in pieces; the passive ports read from any
/// text; and a session driven by the replies to its end sends only whole command lines (one CRLF,
/// at the end: no reply can make it send a line of its own).
pub fn ftp_replies(data: &[u8]) {
    use crate::ftp::{reply, Event, Login, Session};
    let whole = reply::parse(data);
    if let Ok(Some((used, r))) = &whole {
        assert!(*used <= data.len() && (100..600).contains(&r.code));
        // The same reply with what follows it cut off reads the same.
        assert_eq!(reply::parse(&data[..*used]), whole);
    }
    let text = String::from_utf8_lossy(data);
    let _ = reply::pasv_port(&text);
    let _ = reply::epsv_port(&text);
    let range = (data.len() % 3 == 0).then_some((data.len() as u64, Some(data.len() as u64 * 2)));
    let Ok(s) = Session::new("/d/f.bin", Login::default(), false, range) else {
        panic!("a plain path is a session");
    };
    // Where the login starts asked (to keep the connection) for a third of the inputs.
    let s = if data.len() % 3 == 1 {
        s.asking_base()
    } else {
        s
    };
    // Active mode for half the inputs; TLS, explicit or implicit, for some.
    let s = if data.len() % 2 == 1 { s.active() } else { s };
    let mut s = match data.len() % 5 {
        1 => s.with_tls(crate::ftp::Tls::Explicit),
        2 => s.with_tls(crate::ftp::Tls::Implicit),
        _ => s,
    };
    let mut held = data;
    for _ in 0..64 {
        let (used, mut event) = s.received(held);
        assert!(used <= held.len());
        held = &held[used..];
        if let Event::OpenData(port) = event {
            assert_ne!(port, 0);
            event = s.data_ready();
        }
        if event == Event::Listen {
            event = s.listening(std::net::SocketAddr::from(([127, 0, 0, 1], 4000)));
        }
        match event {
            Event::Send(line) | Event::StartTls(line) => {
                let breaks = line.iter().filter(|&&b| b == b'\r' || b == b'\n').count();
                assert!(line.ends_with(b"\r\n") && breaks == 2, "{line:?}");
            }
            Event::Transfer { first, length, .. } => {
                if let (Some((f, Some(l))), Some(n)) = (range, length) {
                    assert_eq!((first, n), (f, l + 1 - f));
                }
                // The transfer's last reply, then the next file over the connection kept.
                let (used, _) = s.received(held);
                assert!(used <= held.len());
                return kept_session(s, &held[used..]);
            }
            Event::Fail(_) => return,
            Event::Wait if used == 0 => return,
            Event::Wait | Event::OpenData(_) | Event::Listen => {}
        }
    }
}

/// A session going on over the connection `done` kept (if it did), fed `data`: never a command
/// with a line break in it, whatever the replies and the directory the server named.
fn kept_session(done: crate::ftp::Session, data: &[u8]) {
    use crate::ftp::{Event, Login, Session};
    let Some(kept) = done.kept() else { return };
    let Ok(mut s) = Session::new("/e/g.bin", Login::default(), false, None) else {
        panic!("a plain path is a session");
    };
    let first = match s.go_on(kept) {
        Ok(first) => first,
        Err(e) => panic!("the same login and TLS go on: {e:?}"),
    };
    let one_line = |line: &[u8]| {
        let breaks = line.iter().filter(|&&b| b == b'\r' || b == b'\n').count();
        assert!(
            line.is_empty() || (line.ends_with(b"\r\n") && breaks == 2),
            "{line:?}"
        );
    };
    one_line(&first);
    let mut held = data;
    for _ in 0..32 {
        let (used, event) = s.received(held);
        assert!(used <= held.len());
        held = &held[used..];
        match event {
            Event::Send(line) => one_line(&line),
            Event::Wait if used > 0 => {}
            _ => return,
        }
    }
}

/// What an SSH server sends: from the version line on (the key exchange's messages parsed, keys
/// and signatures checked, never a panic), and, past the key exchange with no cipher, every
/// message above it (authentication, the channel, SFTP's replies and data). The file's data
/// handed out is never more than was asked for, and the same whether the bytes come at once or
/// split anywhere.
pub fn ssh_packets(data: &[u8]) {
    use crate::ssh::{Event, Login, Session};
    let login = || Login {
        user: "u".into(),
        password: Some("p".into()),
        keys: Vec::new(),
        agent: None,
    };
    let mut s = Session::new(b"/f", login(), &[]);
    let _ = s.received(data);
    let _ = s.take_out();

    // Past the key exchange: the head until the file is open, then the body, at once and split.
    let Some((&cut, body)) = data.split_first() else {
        return;
    };
    let run = |split: usize| -> (Vec<u8>, bool) {
        let mut s = Session::plain_after_kex(b"/f", login());
        let mut got = Vec::new();
        let mut ok = true;
        let mut head = body;
        let mut rest: &[u8] = &[];
        // The head: bytes up to the file's opening (fed one by one, so where it opened is known).
        let mut opened = None;
        for (i, b) in head.iter().enumerate() {
            match s.received(std::slice::from_ref(b)) {
                Ok(Event::Opened { size, .. }) => {
                    opened = Some(size.unwrap_or(0).min(1 << 20));
                    rest = &head[i + 1..];
                    break;
                }
                Ok(_) => {}
                Err(_) => return (got, false),
            }
        }
        let Some(size) = opened else {
            return (got, ok);
        };
        head = &[];
        let _ = head;
        s.read(0, size);
        let mut place = |d: &[u8]| got.extend_from_slice(d);
        let step = split.max(1);
        let mut at = 0;
        while at < rest.len() && ok {
            let end = (at + step).min(rest.len());
            let mut chunk = rest[at..end].to_vec();
            // Room for a few thousand bytes at a time: the rest is given again, as blocks free.
            let room = cut as usize * 64 + 1;
            let mut from = 0;
            while ok && from < chunk.len() {
                match s.unwrap(&mut chunk[from..], room, &mut place) {
                    Ok((used, blocked)) => {
                        from += used;
                        assert!(blocked || from == chunk.len(), "bytes left, not blocked");
                        assert!(used > 0 || blocked, "no progress");
                    }
                    Err(_) => ok = false,
                }
            }
            at = end;
        }
        assert!(got.len() as u64 <= size, "more data than asked for");
        (got, ok)
    };
    let whole = run(usize::MAX);
    let split = run(cut as usize % 7 + 1);
    // Split input: the same data up to where either run failed.
    let n = whole.0.len().min(split.0.len());
    assert_eq!(whole.0[..n], split.0[..n]);
    if whole.1 && split.1 {
        assert_eq!(whole.0, split.0);
    }
}

/// A Metalink document: never a panic; every file it gives has a name that stays in the
/// download directory, absolute URLs of schemes ringdl fetches with priorities in Metalink 4's
/// range, digests of their kind's length; and the same files however the bytes are split.
pub fn metalink(data: &[u8]) {
    use crate::metalink::{safe_name, Reader, LOWEST_PRIORITY};
    let base = url::Url::parse("http://base.example/dir/").ok();
    let whole = read_metalink(Reader::new(data, base.clone()));
    if let Ok(files) = &whole {
        for f in files {
            assert_eq!(safe_name(&f.name).as_deref(), Ok(f.name.as_str()));
            for u in &f.urls {
                assert!(url::Url::parse(&u.url).is_ok(), "{}", u.url);
                assert!((1..=LOWEST_PRIORITY).contains(&u.priority));
            }
            if let Some((k, d)) = &f.hash {
                assert_eq!(d.len(), k.digest_len());
            }
            if let Some(p) = &f.pieces {
                assert!(p.length > 0 && !p.digests.is_empty());
                assert!(p.digests.iter().all(|d| d.len() == p.kind.digest_len()));
            }
        }
    }
    // Byte by byte: the same.
    struct OneByte<'a>(&'a [u8]);
    impl std::io::Read for OneByte<'_> {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            match (self.0.split_first(), buf.is_empty()) {
                (Some((b, rest)), false) => {
                    buf[0] = *b;
                    self.0 = rest;
                    Ok(1)
                }
                _ => Ok(0),
            }
        }
    }
    let split = std::io::BufReader::with_capacity(1, OneByte(data));
    let split = read_metalink(Reader::new(split, base));
    assert_eq!(whole.is_ok(), split.is_ok());
    if let (Ok(a), Ok(b)) = (whole, split) {
        assert_eq!(a, b);
    }
}

fn read_metalink<R: std::io::BufRead>(
    mut r: crate::metalink::Reader<R>,
) -> Result<Vec<crate::metalink::MetaFile>, crate::metalink::Error> {
    let mut files = Vec::new();
    while let Some(f) = r.next_file()? {
        files.push(f);
    }
    Ok(files)
}

#[cfg(test)]
mod tests {
    /// Each entry point runs on ordinary input (the fuzzers start from nothing; these show the
    /// checks hold where the answer is known).
    #[test]
    fn entry_points_accept_ordinary_input() {
        super::response_head(b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nabc");
        super::chunked(b"\x03" as &[u8]);
        super::chunked(b"\x05a\r\n0123456789\r\n3\r\nabc\r\n0\r\n\r\n");
        super::content_disposition(b"attachment; filename*=UTF-8''r%C3%A9sum%C3%A9.pdf");
        super::uri_name(b"http://h/a/%2e%2e");
        super::uri_name(b"http://h/dir/");
        super::input_list(b"http://h/a\n  out=x\n  split=abc\n");
        super::config(b"split=4\n# c\nbad line\n");
        super::cookies(b".example.com\tTRUE\t/\tTRUE\t0\tsid\t1\nsid=2; Path=/\n");
        super::pack_body(
            &[0, 7]
                .iter()
                .copied()
                .chain((0..300_000u32).map(|i| i as u8))
                .collect::<Vec<u8>>(),
        );
        super::pack_body(b"\x01\x03a\r\n0123456789\r\n3\r\nabc\r\n0\r\n\r\n");
        super::netrc(b"machine example.com login u password p\ndefault login d password d\n");
        let cf = crate::store::control::ControlFile::from_done(
            1 << 20,
            1 << 16,
            &[0..65536, 131_072..196_608],
        );
        super::control_file(&cf.encode());
        super::rpc_request(br#"[{"id":1,"method":"aria2.x","params":["token:s"]},{"method":1}]"#);
        super::rpc_request(
            br#"{"id":1,"method":"system.multicall","params":[[{"methodName":"a"}]]}"#,
        );
        super::rpc_request(b"method=m&id=1&params=W10=");
        super::ws_frames(&[3, 0x81, 0x82, 1, 2, 3, 4, b'h' ^ 1, b'i' ^ 2]);
        super::rpc_request_head(b"POST /jsonrpc HTTP/1.1\r\nHost: h\r\nOrigin: null\r\n\r\n");
    }
}
