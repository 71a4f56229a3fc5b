//! Features ringdl does not have (BitTorrent, Metalink, FTP, RPC): their options are recognised,
//! warned about once and ignored; a download that needs one fails with one line and exit 1.
//! aria2c supports them all, so every case here is a documented difference (K-UNSUPPORTED); what
//! is compared with aria2c is that it accepts the same command line.

use super::harness::{Case, Diff, Pre, R};

const F: &[R] = &[R::File("/f.bin", 100_000)];

const METALINK: &str = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n\
<metalink xmlns=\"urn:ietf:params:xml:ns:metalink\">\n\
  <file name=\"meta.bin\">\n\
    <size>100000</size>\n\
    <url>{url}/f.bin</url>\n\
  </file>\n\
</metalink>\n";

cases! {
    // ---- options of missing features: a warning, and the download goes on ----
    bt_option_seed_time = Case {
        args: &["--seed-time=1", "{url}/f.bin"],
        routes: F,
        known: &["K-UNSUPPORTED"],
        diffs: &[Diff::ExtraWarning("BitTorrent")],
        ..Case::DEFAULT
    };
    bt_option_max_peers = Case {
        args: &["--bt-max-peers=5", "{url}/f.bin"],
        routes: F,
        known: &["K-UNSUPPORTED"],
        diffs: &[Diff::ExtraWarning("BitTorrent")],
        ..Case::DEFAULT
    };
    bt_option_in_conf = Case {
        args: &["--conf-path=my.conf", "{url}/f.bin"],
        routes: F,
        pre: &[Pre::Text("my.conf", "seed-ratio=2.0\n")],
        known: &["K-UNSUPPORTED"],
        diffs: &[Diff::ExtraWarning("BitTorrent")],
        ..Case::DEFAULT
    };
    // Turning a feature ringdl lacks off changes nothing: no warning, the same output as aria2c.
    bt_switched_off_in_conf = Case {
        args: &["--conf-path=my.conf", "{url}/f.bin"],
        routes: F,
        pre: &[Pre::Text("my.conf", "follow-torrent=false\nenable-dht=false\n")],
        ..Case::DEFAULT
    };
    // A Metalink option beside an HTTP download: taken, nothing said, as aria2c.
    metalink_option = Case {
        args: &["--metalink-language=en", "{url}/f.bin"],
        routes: F,
        ..Case::DEFAULT
    };
    // An FTP option beside an HTTP download: taken, nothing said, as aria2c.
    ftp_option = Case {
        args: &["--ftp-reuse-connection=false", "{url}/f.bin"],
        routes: F,
        ..Case::DEFAULT
    };

    // ---- downloads that need them: one line, exit 1 ----
    // An FTP server that refuses the connection: exit 1, as aria2c.
    ftp_uri = Case {
        args: &["{rftp}/pub/f.bin"],
        routes: F,
        ..Case::DEFAULT
    };
    torrent_file = Case {
        args: &["x.torrent"],
        routes: F,
        pre: &[Pre::Text("x.torrent", "d4:infod4:name1:aee")],
        known: &["K-UNSUPPORTED"],
        diffs: &[Diff::Own { exit: 1, line: "BitTorrent", no_files: true, sole: true }],
        ..Case::DEFAULT
    };
    torrent_option_file = Case {
        args: &["--torrent-file=x.torrent"],
        routes: F,
        pre: &[Pre::Text("x.torrent", "d4:infod4:name1:aee")],
        known: &["K-UNSUPPORTED"],
        diffs: &[Diff::Own { exit: 1, line: "BitTorrent", no_files: true, sole: true }],
        ..Case::DEFAULT
    };
    // A Metalink file named on the command line: downloaded as with -M, as aria2c does.
    metalink_file = Case {
        args: &["files.meta4"],
        routes: F,
        pre: &[Pre::Text("files.meta4", METALINK)],
        ..Case::DEFAULT
    };
    magnet_uri = Case {
        args: &["magnet:?xt=urn:btih:0123456789abcdef0123456789abcdef01234567"],
        routes: F,
        known: &["K-UNSUPPORTED"],
        diffs: &[
            Diff::Aria2Runs(1500),
            Diff::Own { exit: 1, line: "BitTorrent", no_files: true, sole: true },
        ],
        ..Case::DEFAULT
    };
}
