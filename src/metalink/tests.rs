use super::*;

fn read_all(doc: &str, base: Option<&str>) -> Result<Vec<MetaFile>, Error> {
    let base = base.map(|b| Url::parse(b).expect("a base URL"));
    let mut r = Reader::new(doc.as_bytes(), base);
    let mut files = Vec::new();
    while let Some(f) = r.next_file()? {
        files.push(f);
    }
    Ok(files)
}

fn hex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).expect("hex"))
        .collect()
}

/// A file's resources as (URL, priority, location).
fn short_urls(f: &MetaFile) -> Vec<(&str, i64, Option<&str>)> {
    f.urls
        .iter()
        .map(|u| (u.url.as_str(), u.priority, u.location.as_deref()))
        .collect()
}

const MD5: &str = "0123456789abcdef0123456789abcdef";
const SHA256: &str = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

#[test]
fn a_version_4_document_gives_each_file_with_its_mirrors_and_strongest_digests() {
    let doc = format!(
        r#"<?xml version="1.0" encoding="UTF-8"?>
<metalink xmlns="urn:ietf:params:xml:ns:metalink" xmlns:x="urn:example:other">
  <published>2024-01-01T00:00:00Z</published>
  <x:extra name="evil.bin"/>
  <file name="a.bin">
    <size> 3000000 </size>
    <version>1.0</version>
    <language>en</language><language>de</language>
    <os>Linux-x86_64</os>
    <identity>A</identity>
    <hash type="md5">{MD5}</hash>
    <hash type="SHA-256">
      {SHA256}
    </hash>
    <hash type="tiger">{MD5}</hash>
    <pieces length="262144" type="sha-1">
      <hash>{SHA1}</hash>
      <hash>{SHA1}</hash>
    </pieces>
    <url location="de" priority="1">http://one.example/a.bin</url>
    <url priority="2">
      ftp://two.example/pub/a.bin
    </url>
    <url>gopher://old.example/a.bin</url>
    <url>rel/a.bin</url>
    <metaurl mediatype="torrent" priority="3" name="d/a.bin">http://t.example/a.torrent</metaurl>
    <metaurl mediatype="application/x-other">http://t.example/a.other</metaurl>
    <x:note>skipped, <x:deep>with all below</x:deep></x:note>
  </file>
  <file name="sub/b &amp; c.bin"><url>https://one.example/b</url></file>
</metalink>"#,
        SHA1 = "da39a3ee5e6b4b0d3255bfef95601890afd80709"
    );
    let files = read_all(&doc, Some("http://base.example/dir/")).expect("read");
    assert_eq!(files.len(), 2, "{files:?}");
    let a = &files[0];
    assert_eq!(a.name, "a.bin");
    assert_eq!(a.size, Some(3_000_000));
    assert_eq!(a.version.as_deref(), Some("1.0"));
    assert_eq!(a.languages, ["en", "de"]);
    assert_eq!(a.oses, ["Linux-x86_64"]);
    assert_eq!(
        a.hash,
        Some((Kind::Sha256, hex(SHA256))),
        "the strongest, trimmed"
    );
    let p = a.pieces.as_ref().expect("pieces");
    assert_eq!(
        (p.length, p.kind, p.digests.len()),
        (262_144, Kind::Sha1, 2)
    );
    let urls = short_urls(a);
    assert_eq!(
        urls,
        [
            ("http://one.example/a.bin", 1, Some("de")),
            ("ftp://two.example/pub/a.bin", 2, None),
            ("http://base.example/dir/rel/a.bin", LOWEST_PRIORITY, None),
        ],
        "gopher dropped, the relative one resolved"
    );
    assert_eq!(a.metaurls.len(), 1, "only torrents are kept");
    assert_eq!(a.metaurls[0].name.as_deref(), Some("d/a.bin"));
    assert_eq!(files[1].name, "sub/b & c.bin");
    // Without a base, a relative URL is no URL.
    let files = read_all(&doc, None).expect("read");
    assert_eq!(files[0].urls.len(), 2);
}

#[test]
fn a_version_3_document_in_mirrormanagers_dialect() {
    let doc = format!(
        r#"<?xml version="1.0" encoding="utf-8"?>
<metalink version="3.0" xmlns="http://www.metalinker.org/" type="dynamic" pubdate="Mon, 01 Jan 2024 00:00:00 GMT" generator="mirrormanager" xmlns:mm0="http://fedorahosted.org/mirrormanager">
 <files>
  <file name="repomd.xml">
   <mm0:timestamp>1700000000</mm0:timestamp>
   <size>4000</size>
   <verification>
     <hash type="md5">{MD5}</hash>
     <hash type="sha256">{SHA256}</hash>
   </verification>
   <mm0:alternates>
     <mm0:alternate>
       <mm0:timestamp>1600000000</mm0:timestamp>
       <size>9</size>
       <verification><hash type="sha512">{SHA512}</hash></verification>
     </mm0:alternate>
   </mm0:alternates>
   <resources maxconnections="1">
    <url protocol="https" type="https" location="US" preference="100">https://us.example/repodata/repomd.xml</url>
    <url protocol="http" type="http" location="DE" preference="90">http://de.example/repodata/repomd.xml</url>
    <url protocol="rsync" type="rsync" location="FR" preference="99">rsync://fr.example/repomd.xml</url>
    <url preference="50">ftp://any.example/repomd.xml</url>
    <url type="bittorrent" preference="100">http://t.example/x.torrent</url>
   </resources>
  </file>
  <file name="../escape.xml"><resources><url type="http">http://x.example/e</url></resources></file>
  <file name="second.xml">
   <verification>
     <pieces length="1024" type="sha1">
       <hash piece="1">{SHA1}</hash>
       <hash piece="0">{SHA1}</hash>
     </pieces>
   </verification>
  </file>
 </files>
</metalink>"#,
        SHA512 = "0".repeat(128),
        SHA1 = "da39a3ee5e6b4b0d3255bfef95601890afd80709"
    );
    let files = read_all(&doc, None).expect("read");
    let names: Vec<&str> = files.iter().map(|f| f.name.as_str()).collect();
    assert_eq!(
        names,
        ["repomd.xml", "second.xml"],
        "the unsafe name left out"
    );
    let f = &files[0];
    assert_eq!(f.size, Some(4000), "not the alternate's");
    assert_eq!(
        f.hash,
        Some((Kind::Sha256, hex(SHA256))),
        "not the alternate's"
    );
    assert_eq!(f.max_connections, Some(1));
    let urls = short_urls(f);
    assert_eq!(
        urls,
        [
            ("https://us.example/repodata/repomd.xml", 1, Some("US")),
            ("http://de.example/repodata/repomd.xml", 11, Some("DE")),
            ("ftp://any.example/repomd.xml", 51, None),
        ]
    );
    assert_eq!(f.metaurls.len(), 1);
    let p = files[1].pieces.as_ref().expect("pieces in piece order");
    assert_eq!(p.digests.len(), 2);
}

#[test]
fn a_version_4_rule_broken_refuses_the_document() {
    for (file, why) in [
        (r#"<file name="../x.bin"/>"#, "Bad file@name"),
        (r#"<file name="/etc/passwd"/>"#, "Bad file@name"),
        (r#"<file name="C:x.bin"/>"#, "Bad file@name"),
        (r#"<file name="a&#10;b"/>"#, "Bad file@name"),
        (r#"<file name=""/>"#, "Missing file@name"),
        (r#"<file name="f"><size>-1</size></file>"#, "Bad size"),
        (r#"<file name="f"><size>12abc</size></file>"#, "Bad size"),
        (
            r#"<file name="f"><hash>00</hash></file>"#,
            "Missing hash@type",
        ),
        (
            r#"<file name="f"><url priority="0">http://h/f</url></file>"#,
            "url@priority is out of range",
        ),
        (
            r#"<file name="f"><url priority="x">http://h/f</url></file>"#,
            "Bad url@priority",
        ),
        (
            r#"<file name="f"><pieces type="sha-1"/></file>"#,
            "Missing pieces@length",
        ),
        (
            r#"<file name="f"><pieces length="x" type="sha-1"/></file>"#,
            "Bad pieces@length",
        ),
        (
            r#"<file name="f"><metaurl>http://h/t</metaurl></file>"#,
            "Missing metaurl@mediatype",
        ),
    ] {
        let doc = format!(
            r#"<metalink xmlns="urn:ietf:params:xml:ns:metalink"><file name="ok"/>{file}</metalink>"#
        );
        let e = read_all(&doc, None).expect_err(file);
        assert!(
            e.message.starts_with("Specification violation"),
            "{file}: {e:?}"
        );
        assert!(e.message.contains(why), "{file}: {e:?}");
    }
}

#[test]
fn what_is_not_a_metalink_gives_no_files_or_fails() {
    // Another root, or the old namespace-less one: no files (as aria2c reads it).
    for doc in [
        "<html><body/></html>",
        "<metalink><file name=\"a\"/></metalink>",
    ] {
        assert_eq!(read_all(doc, None).expect(doc), Vec::new());
    }
    for doc in [
        "",
        "not xml at all",
        "<metalink xmlns=\"urn:ietf:params:xml:ns:metalink\"><file name=\"a\">",
        "<metalink xmlns=\"urn:ietf:params:xml:ns:metalink\"></file></metalink>",
        "<x:metalink>",
    ] {
        let e = read_all(doc, None).expect_err(doc);
        assert!(e.message.starts_with("Could not parse"), "{doc}: {e:?}");
    }
}

#[test]
fn entities_are_never_expanded_and_nesting_and_lengths_are_bounded() {
    let bomb = r#"<?xml version="1.0"?>
<!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;&lol;">]>
<metalink xmlns="urn:ietf:params:xml:ns:metalink"><file name="a"><version>&lol2;</version></file></metalink>"#;
    let e = read_all(bomb, None).expect_err("an entity reference");
    assert!(e.message.contains("entity"), "{e:?}");
    // A DOCTYPE whose entities nobody refers to changes nothing.
    let quiet = bomb.replace("&lol2;", "1");
    assert_eq!(read_all(&quiet, None).expect("read").len(), 1);
    let deep = format!(
        r#"<metalink xmlns="urn:ietf:params:xml:ns:metalink">{}{}</metalink>"#,
        "<x>".repeat(100),
        "</x>".repeat(100)
    );
    assert!(read_all(&deep, None)
        .expect_err("deep")
        .message
        .contains("deep"));
    // 3 MB of text in one element, read from a reader that would hand it all out: refused once
    // 1 MiB is read (the parser's buffer never holds more).
    let huge = format!(
        r#"<metalink xmlns="urn:ietf:params:xml:ns:metalink"><file name="a"><version>{}</version></file></metalink>"#,
        "v".repeat(3 << 20)
    );
    let e = read_all(&huge, None).expect_err("huge");
    assert!(e.message.contains("1 MiB"), "{e:?}");
}

#[test]
fn many_files_are_read_one_at_a_time() {
    // 20 000 files: each comes as soon as it ends; the reader's own memory is one file's.
    struct Gen {
        n: usize,
        at: usize,
        chunk: Vec<u8>,
        pos: usize,
    }
    impl std::io::Read for Gen {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            if self.pos == self.chunk.len() {
                self.chunk = match self.at {
                    0 => b"<metalink xmlns=\"urn:ietf:params:xml:ns:metalink\">".to_vec(),
                    i if i <= self.n => format!(
                        "<file name=\"f{i}\"><size>{i}</size><url>http://m.example/f{i}</url></file>"
                    )
                    .into_bytes(),
                    i if i == self.n + 1 => b"</metalink>".to_vec(),
                    _ => return Ok(0),
                };
                self.at += 1;
                self.pos = 0;
            }
            let n = buf.len().min(self.chunk.len() - self.pos);
            buf[..n].copy_from_slice(&self.chunk[self.pos..self.pos + n]);
            self.pos += n;
            Ok(n)
        }
    }
    let gen = Gen {
        n: 20_000,
        at: 0,
        chunk: Vec::new(),
        pos: 0,
    };
    let mut r = Reader::new(std::io::BufReader::new(gen), None);
    let mut count = 0;
    while let Some(f) = r.next_file().expect("read") {
        count += 1;
        assert_eq!(f.size, Some(count));
        assert!(r.buf.capacity() < 64 * 1024);
    }
    assert_eq!(count, 20_000);
    assert_eq!(r.version(), Some(Version::V4));
}

#[test]
fn names_stay_inside_the_directory() {
    for ok in ["a.bin", "d1/d2/x.bin", "a//b.bin", "...", "a b.bin", "x..y"] {
        assert!(safe_name(ok).is_ok(), "{ok}");
    }
    assert_eq!(safe_name("a//b.bin").as_deref(), Ok("a/b.bin"));
    for bad in [
        "", "..", ".", "../x", "a/../x", "a/..", "./x", "/x", "\\x", "C:x", "c:\\x", "a\\..\\x",
        "a\u{1}b", "a\u{7f}", "d/",
    ] {
        assert!(safe_name(bad).is_err(), "{bad:?}");
    }
}

#[test]
fn a_file_takes_at_most_max_urls_resources() {
    let urls = |n: usize| -> String {
        (0..n)
            .map(|i| format!("<url>http://m{i}.example/f</url>"))
            .collect()
    };
    let v4 = |n: usize| {
        format!(
            r#"<metalink xmlns="urn:ietf:params:xml:ns:metalink"><file name="f">{}</file></metalink>"#,
            urls(n)
        )
    };
    assert_eq!(
        read_all(&v4(MAX_URLS), None).expect("at the limit")[0]
            .urls
            .len(),
        MAX_URLS
    );
    let e = read_all(&v4(MAX_URLS + 1), None).expect_err("past it");
    assert!(e.message.contains("too many url elements"), "{e:?}");
    // Metalink 3 leaves such a file out.
    let v3 = format!(
        r#"<metalink xmlns="http://www.metalinker.org/"><files><file name="f"><resources>{}</resources></file><file name="g"/></files></metalink>"#,
        urls(MAX_URLS + 1).replace("<url>", "<url type=\"http\">")
    );
    let names: Vec<String> = read_all(&v3, None)
        .expect("read")
        .into_iter()
        .map(|f| f.name)
        .collect();
    assert_eq!(names, ["g"]);
}
