//! `-M` Metalinks as aria2c takes them: a download per `<file>` under its name, mirrors tried by
//! priority (a dead one given up for the next), the strongest digest checked (exit 32 when it
//! does not match), `--select-file`, the language filter, `--metalink-location`, Metalink 3 in
//! Fedora MirrorManager's dialect, `-S`'s listing, and a name that would leave the directory
//! (exit 20).

use super::harness::{Case, Cmp, Diff, Pre, Srv, M, R};

const TWO: &[R] = &[R::File("/a.bin", 300_001), R::File("/sub/b.bin", 150_000)];

/// Two files; `a.bin`'s first mirror refuses connections.
const V4: &str = r#"<?xml version="1.0" encoding="UTF-8"?>
<metalink xmlns="urn:ietf:params:xml:ns:metalink">
  <file name="a.bin">
    <size>300001</size>
    <language>en</language>
    <hash type="md5">0123456789abcdef0123456789abcdef</hash>
    <hash type="sha-256">{sha256_0}</hash>
    <url priority="1">{refused}/a.bin</url>
    <url priority="2">{url}/a.bin</url>
  </file>
  <file name="sub/b.bin">
    <size>150000</size>
    <language>de</language>
    <hash type="sha-256">{sha256_1}</hash>
    <url>{url}/sub/b.bin</url>
  </file>
</metalink>
"#;

const WRONG_HASH: &str = r#"<?xml version="1.0" encoding="UTF-8"?>
<metalink xmlns="urn:ietf:params:xml:ns:metalink">
  <file name="a.bin">
    <hash type="sha-256">0000000000000000000000000000000000000000000000000000000000000000</hash>
    <url>{url}/a.bin</url>
  </file>
</metalink>
"#;

/// `us` is preferred by priority; `--metalink-location=jp` makes `jp`'s the first asked.
const LOCATIONS: &str = r#"<?xml version="1.0" encoding="UTF-8"?>
<metalink xmlns="urn:ietf:params:xml:ns:metalink">
  <file name="a.bin">
    <url priority="1" location="us">{url}/us/a.bin</url>
    <url priority="2" location="jp">{url}/jp/a.bin</url>
  </file>
</metalink>
"#;

const MIRRORED: &[R] = &[
    R::File("/a.bin", 300_001),
    R::Copy("/us/a.bin", "/a.bin", 300_001),
    R::Copy("/jp/a.bin", "/a.bin", 300_001),
];

const BAD_NAME: &str = r#"<?xml version="1.0" encoding="UTF-8"?>
<metalink xmlns="urn:ietf:params:xml:ns:metalink">
  <file name="ok.bin"><url>{url}/a.bin</url></file>
  <file name="../escape.bin"><url>{url}/a.bin</url></file>
</metalink>
"#;

/// Fedora MirrorManager's `repomd.xml` metalink: Metalink 3, `mm0:` elements, preferences.
const MIRRORMANAGER: &str = r#"<?xml version="1.0" encoding="utf-8"?>
<metalink version="3.0" xmlns="http://www.metalinker.org/" type="dynamic" pubdate="Mon, 01 Jan 2024 00:00:00 GMT" generator="mirrormanager" xmlns:mm0="http://fedorahosted.org/mirrormanager">
 <files>
  <file name="repomd.xml">
   <mm0:timestamp>1700000000</mm0:timestamp>
   <size>300001</size>
   <verification>
     <hash type="sha256">{sha256_0}</hash>
   </verification>
   <mm0:alternates>
     <mm0:alternate>
       <mm0:timestamp>1600000000</mm0:timestamp>
       <size>1</size>
     </mm0:alternate>
   </mm0:alternates>
   <resources maxconnections="1">
    <url protocol="http" type="http" location="US" preference="100">{url}/a.bin</url>
    <url protocol="http" type="http" location="DE" preference="90">{url}/us/a.bin</url>
   </resources>
  </file>
 </files>
</metalink>
"#;

/// Served from the test server, its URLs relative (of the document's own URI; and the saved
/// document is the same bytes for both programs).
const FOLLOWED: &str = r#"<?xml version="1.0" encoding="UTF-8"?>
<metalink xmlns="urn:ietf:params:xml:ns:metalink">
  <file name="a.bin">
    <size>300001</size>
    <hash type="sha-256">{sha256_0}</hash>
    <url>a.bin</url>
  </file>
  <file name="b.bin">
    <size>150000</size>
    <url>sub/b.bin</url>
  </file>
</metalink>
"#;

const SERVED: &[R] = &[
    R::File("/a.bin", 300_001),
    R::File("/sub/b.bin", 150_000),
    R::Doc("/files.meta4", FOLLOWED, &[]),
    R::Doc(
        "/mirrorlist",
        FOLLOWED,
        &[M::Header("Content-Type", "application/metalink4+xml")],
    ),
];

/// One file of 1 MiB in four pieces; its first mirror serves a byte of the third wrong.
const REPAIR: &str = r#"<?xml version="1.0" encoding="UTF-8"?>
<metalink xmlns="urn:ietf:params:xml:ns:metalink">
  <file name="big.bin">
    <size>1048576</size>
    <hash type="sha-256">{sha256_0}</hash>
    {pieces_0}
    <url priority="1">{url}/bad/big.bin</url>
    <url priority="2">{url}/big.bin</url>
  </file>
</metalink>
"#;

const CORRUPT: &[R] = &[
    R::File("/big.bin", 1_048_576),
    R::CopyWith(
        "/bad/big.bin",
        "/big.bin",
        1_048_576,
        &[M::Corrupt(600_000)],
    ),
];

cases! {
    metalink_two_files_one_dead_mirror = Case {
        args: &["-M", "files.meta4"],
        routes: TWO,
        pre: &[Pre::Text("files.meta4", V4)],
        cmp: Cmp::EventsAnyOrder,
        ..Case::DEFAULT
    };
    metalink_select_file = Case {
        args: &["-M", "files.meta4", "--select-file=2"],
        routes: TWO,
        pre: &[Pre::Text("files.meta4", V4)],
        cmp: Cmp::EventsAnyOrder,
        ..Case::DEFAULT
    };
    metalink_language_filter = Case {
        args: &["-M", "files.meta4", "--metalink-language=de"],
        routes: TWO,
        pre: &[Pre::Text("files.meta4", V4)],
        cmp: Cmp::EventsAnyOrder,
        ..Case::DEFAULT
    };
    metalink_show_files = Case {
        args: &["-S", "-M", "files.meta4"],
        routes: TWO,
        pre: &[Pre::Text("files.meta4", V4)],
        ..Case::DEFAULT
    };
    metalink_wrong_hash = Case {
        args: &["-M", "files.meta4"],
        routes: TWO,
        pre: &[Pre::Text("files.meta4", WRONG_HASH)],
        ..Case::DEFAULT
    };
    metalink_location_first = Case {
        args: &["-s1", "--metalink-location=jp", "-M", "files.meta4"],
        routes: MIRRORED,
        pre: &[Pre::Text("files.meta4", LOCATIONS)],
        req_headers: &["Range"],
        ..Case::DEFAULT
    };
    metalink_name_outside_the_directory = Case {
        args: &["-M", "files.meta4"],
        routes: TWO,
        pre: &[Pre::Text("files.meta4", BAD_NAME)],
        known: &["K-METALINK"],
        diffs: &[Diff::Own { exit: 20, line: "Bad file@name", no_files: true, sole: true }],
        ..Case::DEFAULT
    };
    metalink_v3_mirrormanager = Case {
        args: &["-M", "repomd.meta4"],
        routes: MIRRORED,
        pre: &[Pre::Text("repomd.meta4", MIRRORMANAGER)],
        ..Case::DEFAULT
    };
    // Metalink/HTTP: a Digest header checks the file (right, then wrong: exit 32), Link
    // headers name a mirror.
    digest_header_right = Case {
        args: &["{url}/f.bin"],
        routes: &[R::FileWith("/f.bin", 200_001, &[M::Header("Digest", "SHA-256={sha256b64}")])],
        ..Case::DEFAULT
    };
    digest_header_wrong = Case {
        args: &["{url}/f.bin"],
        routes: &[R::FileWith(
            "/f.bin",
            200_001,
            &[M::Header("Digest", "SHA-256=47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=")],
        )],
        ..Case::DEFAULT
    };
    link_header_mirror = Case {
        args: &["{url}/f.bin"],
        routes: &[
            R::FileWith("/f.bin", 300_001, &[M::Header("Link", "<{url}/m2/f.bin>; rel=duplicate; pri=1")]),
            R::Copy("/m2/f.bin", "/f.bin", 300_001),
        ],
        ..Case::DEFAULT
    };
    // --follow-metalink: a Metalink fetched from a URI (by its suffix, or by its Content-Type
    // alone) goes on to its files (true: the document kept; mem: never written; false: only
    // saved).
    metalink_follow_true = Case {
        args: &["{url}/files.meta4"],
        routes: SERVED,
        cmp: Cmp::EventsAnyOrder,
        ..Case::DEFAULT
    };
    metalink_follow_mem = Case {
        args: &["--follow-metalink=mem", "{url}/files.meta4"],
        routes: SERVED,
        cmp: Cmp::EventsAnyOrder,
        ..Case::DEFAULT
    };
    metalink_follow_false = Case {
        args: &["--follow-metalink=false", "{url}/files.meta4"],
        routes: SERVED,
        ..Case::DEFAULT
    };
    metalink_follow_content_type = Case {
        args: &["{url}/mirrorlist"],
        routes: SERVED,
        cmp: Cmp::EventsAnyOrder,
        ..Case::DEFAULT
    };
    // A Metalink from standard input, and one named in an -i list.
    metalink_from_stdin = Case {
        args: &["-M", "-"],
        routes: TWO,
        pre: &[Pre::Stdin(V4)],
        cmp: Cmp::EventsAnyOrder,
        ..Case::DEFAULT
    };
    metalink_in_input_list = Case {
        args: &["-i", "list.txt"],
        routes: TWO,
        pre: &[Pre::Text("files.meta4", V4), Pre::Text("list.txt", "files.meta4\n")],
        cmp: Cmp::EventsAnyOrder,
        ..Case::DEFAULT
    };
    // A piece served wrong by the preferred mirror: aria2c asks that mirror again until its
    // tries run out and fails (exit 1, "Invalid checksum index=2"); ringdl gives the mirror
    // up, fetches the piece from the other and completes, its digest checked (K-METALINK).
    metalink_chunk_repair = Case {
        args: &["-M", "files.meta4", "-s1"],
        routes: CORRUPT,
        pre: &[Pre::Text("files.meta4", REPAIR)],
        known: &["K-METALINK"],
        diffs: &[Diff::Own {
            exit: 0,
            line: "Chunk checksum validation failed. checksumIndex=2",
            no_files: false,
            sole: false,
        }],
        ..Case::DEFAULT
    };
    // Metalink/HTTP from nginx (`add_header`): a right Digest, a wrong one (exit 32 for both),
    // and a Link naming a mirror (absolute, from nginx's own variables).
    nginx_digest_header_right = Case {
        args: &["{url}/f.bin"],
        server: Srv::Nginx,
        routes: &[R::File("/f.bin", 300_001)],
        nginx: r#"location = /f.bin { add_header Digest "SHA-256={sha256b64_0}"; }"#,
        ..Case::DEFAULT
    };
    nginx_digest_header_wrong = Case {
        args: &["{url}/f.bin"],
        server: Srv::Nginx,
        routes: &[R::File("/f.bin", 300_001)],
        nginx: r#"location = /f.bin { add_header Digest "SHA-256=47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU="; }"#,
        ..Case::DEFAULT
    };
    nginx_link_header_mirror = Case {
        args: &["-s2", "-k1M", "{url}/f.bin"],
        server: Srv::Nginx,
        routes: &[R::File("/f.bin", 3_000_001), R::Copy("/m2/f.bin", "/f.bin", 3_000_001)],
        nginx: r#"location = /f.bin { add_header Link "<$scheme://$http_host/m2/f.bin>; rel=duplicate; pri=1"; }"#,
        cmp: Cmp::EventsAnyOrder,
        ..Case::DEFAULT
    };
}
