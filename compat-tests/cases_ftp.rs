//! `ftp://` against vsftpd (anonymous) and pure-ftpd (a user with a password), as aria2c takes
//! them: whole and split downloads, the login from the URI or the options, a wrong password, a
//! missing file, a directory, and an FTP mirror beside an HTTP one. Both sides get
//! `--ftp-reuse-connection=false`: aria2c 1.36 now and then hangs with its default (see K-FTP in
//! KNOWN_DIFFERENCES.md); `tests/ftp.rs` shows ringdl keeping its connections.

use super::harness::{Case, Diff, Srv, R};

const PUB: &[R] = &[R::File("/pub/f.bin", 3_000_001)];
const BIG: &[R] = &[R::File("/pub/big.bin", 9 << 20)];

cases! {
    ftp_whole = Case {
        args: &["--ftp-reuse-connection=false", "{ftp}/pub/f.bin"],
        server: Srv::Ftp,
        routes: PUB,
        known: &["K-FTP"],
        ..Case::DEFAULT
    };
    ftp_split = Case {
        args: &["--ftp-reuse-connection=false", "-x4", "-s4", "-k1M", "{ftp}/pub/big.bin"],
        server: Srv::Ftp,
        routes: BIG,
        known: &["K-FTP"],
        ..Case::DEFAULT
    };
    ftp_missing_file = Case {
        args: &["--ftp-reuse-connection=false", "{ftp}/pub/none.bin"],
        server: Srv::Ftp,
        routes: PUB,
        known: &["K-FTP", "K-FTP-MISSING"],
        diffs: &[
            Diff::Aria2Empty("none.bin"),
            Diff::Rewrite("not complete: {DIR}/none.bin", "not complete: "),
            Diff::Rewrite("|{DIR}/none.bin", "|ftp://127.0.0.1:PORT/pub/none.bin"),
        ],
        ..Case::DEFAULT
    };
    ftp_missing_directory = Case {
        args: &["--ftp-reuse-connection=false", "{ftp}/none/f.bin"],
        server: Srv::Ftp,
        routes: PUB,
        known: &["K-FTP"],
        ..Case::DEFAULT
    };
    ftp_directory_uri = Case {
        args: &["--ftp-reuse-connection=false", "{ftp}/pub/"],
        server: Srv::Ftp,
        routes: PUB,
        known: &["K-FTP"],
        ..Case::DEFAULT
    };
    ftp_mirror_beside_http = Case {
        args: &["--ftp-reuse-connection=false", "-s2", "-k1M", "{url}/pub/big.bin", "{ftp}/pub/big.bin"],
        server: Srv::Ftp,
        routes: BIG,
        known: &["K-FTP"],
        ..Case::DEFAULT
    };
    ftp_active = Case {
        args: &["--ftp-reuse-connection=false", "--ftp-pasv=false", "-s2", "{ftp}/pub/big.bin"],
        server: Srv::Ftp,
        routes: BIG,
        known: &["K-FTP"],
        ..Case::DEFAULT
    };
    ftp_login_in_uri = Case {
        args: &["--ftp-reuse-connection=false", "{ftpu}/pub/f.bin"],
        server: Srv::FtpLogin,
        routes: PUB,
        known: &["K-FTP"],
        ..Case::DEFAULT
    };
    ftp_login_options = Case {
        args: &["--ftp-reuse-connection=false", "--ftp-user={ftpuser}", "--ftp-passwd={ftppass}", "-s2", "{ftp}/pub/big.bin"],
        server: Srv::FtpLogin,
        routes: BIG,
        known: &["K-FTP"],
        ..Case::DEFAULT
    };
    ftp_wrong_password = Case {
        args: &["--ftp-reuse-connection=false", "--ftp-user={ftpuser}", "--ftp-passwd=wrong", "{ftp}/pub/f.bin"],
        server: Srv::FtpLogin,
        routes: PUB,
        known: &["K-FTP"],
        ..Case::DEFAULT
    };
    // An HTTP proxy that fetches FTP itself: both programs send it `GET ftp://...` (the test
    // server, as the proxy, serves it by its path; the request lines are compared).
    ftp_proxy_get = Case {
        args: &["--ftp-proxy={authority}", "ftp://ftp.invalid/pub/f.bin"],
        server: Srv::Plain,
        routes: PUB,
        req_headers: &["Host", "Proxy-Connection"],
        known: &["K-FTP"],
        ..Case::DEFAULT
    };
    ftp_all_proxy_get_split = Case {
        args: &["--all-proxy={authority}", "-x4", "-s4", "-k1M", "ftp://ftp.invalid/pub/big.bin"],
        server: Srv::Plain,
        routes: BIG,
        req_headers: &["Authorization"],
        known: &["K-FTP"],
        ..Case::DEFAULT
    };
    // The FTP commands through the proxy's CONNECT tunnel, the data connection through one of
    // its own (aria2c asks PASV there, ringdl EPSV first: the server's log is not compared).
    // aria2c 1.36 drops server bytes that come in the same read as the proxy's answer and then
    // waits for the greeting (it hung here, now and then, on a loaded machine): the harness's
    // proxy holds each tunnel a moment after its answer (`TestProxy::http_patient`); ringdl
    // takes such bytes (`http_eager` in tests/ftp.rs). One connection; ringdl's split through
    // tunnels is in tests/ftp.rs.
    ftp_proxy_tunnel = Case {
        args: &["--ftp-reuse-connection=false", "--ftp-proxy={tunnel}", "--proxy-method=tunnel", "{ftp}/pub/f.bin"],
        server: Srv::Ftp,
        routes: PUB,
        known: &["K-FTP"],
        ..Case::DEFAULT
    };
}
