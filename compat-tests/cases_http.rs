//! HTTP outcomes: statuses and their exit codes, redirects, connection failures, body framings,
//! servers without Range, naming from the response.

use super::harness::{Case, Cmp, Diff, Pre, M, R};
use crate::support::server::{Fault, When};

const F: &[R] = &[R::File("/f.bin", 100_000)];
/// Throttled (about 160 ms for the body) so that the segment connections are answered while the
/// first one is still receiving: unthrottled, aria2c sometimes finishes before they are and
/// prints none of their errors.
const BIG_NO_RANGES: &[R] = &[R::FileWith(
    "/big.bin",
    4 << 20,
    &[M::NoRanges, M::Throttle(256 * 1024, 10)],
)];

cases! {
    // ---- statuses → exit codes ----
    http_404 = Case { args: &["{url}/nope"], routes: F, known: &["K-ONELINE"], ..Case::DEFAULT };
    http_401 = Case { args: &["{url}/auth"], routes: &[R::Status("/auth", 401)], ..Case::DEFAULT };
    http_403 = Case { args: &["{url}/forbidden"], routes: &[R::Status("/forbidden", 403)], ..Case::DEFAULT };
    http_500 = Case { args: &["{url}/err"], routes: &[R::Status("/err", 500)], ..Case::DEFAULT };
    http_502 = Case { args: &["{url}/gw"], routes: &[R::Status("/gw", 502)], ..Case::DEFAULT };
    http_503 = Case { args: &["{url}/busy"], routes: &[R::Status("/busy", 503)], ..Case::DEFAULT };
    mixed_404_and_ok = Case {
        // The last error among finished downloads decides the exit code.
        args: &["-Z", "-j1", "{url}/f.bin", "{url}/nope", "{url}/g.bin"],
        routes: &[R::File("/f.bin", 100_000), R::File("/g.bin", 5_000)],
        ..Case::DEFAULT
    };
    mixed_errors_last_wins = Case {
        args: &["-Z", "-j1", "{url}/busy", "{url}/nope", "{url}/f.bin"],
        routes: &[R::File("/f.bin", 100_000), R::Status("/busy", 503)],
        ..Case::DEFAULT
    };
    connection_refused = Case { args: &["{refused}/f.bin"], routes: F, ..Case::DEFAULT };
    mirror_refused_then_ok = Case {
        // A dead mirror first: the download still completes from the second.
        args: &["{refused}/f.bin", "{url}/f.bin"],
        routes: F,
        ..Case::DEFAULT
    };

    // ---- redirects ----
    redirect_302 = Case {
        args: &["{url}/r"],
        routes: &[R::Redirect("/r", 302, "/f.bin"), R::File("/f.bin", 100_000)],
        ..Case::DEFAULT
    };
    redirect_absolute_301 = Case {
        args: &["{url}/old/name.bin"],
        routes: &[R::Redirect("/old/name.bin", 301, "{url}/new/other.bin"), R::File("/new/other.bin", 3_000)],
        ..Case::DEFAULT
    };
    redirect_chain_5 = Case {
        args: &["{url}/hop/0"],
        routes: &[R::Chain("hop", 5, "/f.bin"), R::File("/f.bin", 100_000)],
        ..Case::DEFAULT
    };
    redirect_20_hops = Case {
        args: &["{url}/hop/0"],
        routes: &[R::Chain("hop", 20, "/f.bin"), R::File("/f.bin", 100_000)],
        ..Case::DEFAULT
    };
    redirect_21_hops = Case {
        args: &["{url}/hop/0"],
        known: &["K-ONELINE"],
        routes: &[R::Chain("hop", 21, "/f.bin"), R::File("/f.bin", 100_000)],
        ..Case::DEFAULT
    };
    redirect_to_404 = Case {
        args: &["{url}/r"],
        routes: &[R::Redirect("/r", 307, "/gone")],
        ..Case::DEFAULT
    };
    redirect_without_location = Case {
        args: &["{url}/r"],
        routes: &[R::Status("/r", 302)],
        ..Case::DEFAULT
    };
    redirect_split = Case {
        args: &["-x4", "-k1M", "{url}/r"],
        routes: &[R::Redirect("/r", 302, "/big.bin"), R::File("/big.bin", 4 << 20)],
        ..Case::DEFAULT
    };

    // ---- body framings and Range support ----
    chunked_body = Case {
        args: &["{url}/c.bin"],
        routes: &[R::FileWith("/c.bin", 300_001, &[M::Chunked])],
        ..Case::DEFAULT
    };
    chunked_with_split_options = Case {
        args: &["-x4", "-k1M", "{url}/c.bin"],
        routes: &[R::FileWith("/c.bin", 3 << 20, &[M::Chunked])],
        conns: true,
        ..Case::DEFAULT
    };
    close_delimited_body = Case {
        args: &["{url}/c.bin"],
        routes: &[R::FileWith("/c.bin", 200_000, &[M::CloseDelimited])],
        ..Case::DEFAULT
    };
    no_range_server_x4 = Case {
        // The first connection gets the whole body; the segment connections opened meanwhile
        // fail with "Invalid range header" (in any order) and the download still completes.
        args: &["-x4", "-k1M", "{url}/big.bin"],
        routes: BIG_NO_RANGES,
        cmp: Cmp::EventsAnyOrder,
        vary: &["Invalid range header"],
        ..Case::DEFAULT
    };
    accept_ranges_none_x4 = Case {
        args: &["-x4", "-k1M", "{url}/big.bin"],
        routes: &[R::FileWith("/big.bin", 4 << 20, &[M::RangesNone])],
        vary: &["Invalid range header"],
        known: &["K-NORANGES"],
        diffs: &[Diff::Aria2Only("Invalid range header")],
        ..Case::DEFAULT
    };
    empty_file = Case { args: &["{url}/empty"], routes: &[R::File("/empty", 0)], ..Case::DEFAULT };
    one_byte_file = Case { args: &["{url}/one"], routes: &[R::File("/one", 1)], ..Case::DEFAULT };

    // ---- names from the response and the URI ----
    content_disposition_name = Case {
        args: &["{url}/dl?id=7"],
        routes: &[R::FileWith("/dl", 5_000, &[M::Disposition("attachment; filename=\"report.pdf\"")])],
        ..Case::DEFAULT
    };
    content_disposition_utf8 = Case {
        args: &["{url}/dl"],
        routes: &[R::FileWith("/dl", 5_000, &[M::Disposition("attachment; filename*=UTF-8''caf%C3%A9.txt")])],
        ..Case::DEFAULT
    };
    content_disposition_traversal = Case {
        args: &["{url}/dl/safe.bin"],
        routes: &[R::FileWith("/dl/safe.bin", 5_000, &[M::Disposition("attachment; filename=\"../evil.bin\"")])],
        ..Case::DEFAULT
    };
    content_disposition_out_wins = Case {
        args: &["-o", "mine.bin", "{url}/dl"],
        routes: &[R::FileWith("/dl", 5_000, &[M::Disposition("attachment; filename=\"theirs.bin\"")])],
        ..Case::DEFAULT
    };
    name_percent_decoded = Case { args: &["{url}/pct%20name.txt"], routes: &[R::File("/pct%20name.txt", 900)], ..Case::DEFAULT };
    name_query_dropped = Case { args: &["{url}/q.bin?x=1&y=2"], routes: &[R::File("/q.bin", 900)], ..Case::DEFAULT };
    name_index_html = Case { args: &["{url}/"], routes: &[R::File("/", 900)], ..Case::DEFAULT };
    name_from_redirect_target = Case {
        args: &["{url}/latest"],
        routes: &[R::Redirect("/latest", 302, "/v/app-1.2.tar.gz"), R::File("/v/app-1.2.tar.gz", 4_321)],
        ..Case::DEFAULT
    };

    // ---- broken servers (ringdl's stricter limits are documented) ----
    huge_response_head = Case {
        args: &["{url}/huge"],
        routes: &[R::FileWith("/huge", 10_000, &[M::Fault(Fault::HugeHead, When::Always)])],
        known: &["K-HEAD64K"],
        diffs: &[Diff::Own { exit: 22, line: "header", no_files: false, sole: false }],
        ..Case::DEFAULT
    };
    truncated_body_no_retry = Case {
        // One try: the partial file and its control file stay (byte for byte aria2's), exit 1.
        args: &["--max-tries=1", "{url}/t.bin"],
        routes: &[R::FileWith("/t.bin", 200_000, &[M::Fault(Fault::TruncateAfter(50_000), When::Always)])],
        ..Case::DEFAULT
    };
    truncated_body_retried = Case {
        // Every response stops after 50 000 bytes; retries resume with Range until done.
        args: &["{url}/t.bin"],
        routes: &[R::FileWith("/t.bin", 200_000, &[M::Fault(Fault::TruncateAfter(50_000), When::Always)])],
        ..Case::DEFAULT
    };
    reset_once_then_ok = Case {
        args: &["{url}/t.bin"],
        routes: &[R::FileWith("/t.bin", 200_000, &[M::Fault(Fault::ResetAfter(20_000), When::Request(1))])],
        cmp: Cmp::Nothing,
        ..Case::DEFAULT
    };

    // ---- request shaping, credentials, cookies ----
    referer_star = Case {
        args: &["--referer=*", "{url}/f.bin"],
        routes: F,
        req_headers: &["Referer"],
        ..Case::DEFAULT
    };
    referer_value = Case {
        args: &["--referer", "http://from.example/page", "{url}/f.bin"],
        routes: F,
        req_headers: &["Referer"],
        ..Case::DEFAULT
    };
    http_no_cache = Case {
        args: &["--http-no-cache=true", "{url}/f.bin"],
        routes: F,
        req_headers: &["Pragma", "Cache-Control"],
        ..Case::DEFAULT
    };
    http_user_basic = Case {
        args: &["--http-user=alice", "--http-passwd=s3cret", "{url}/f.bin"],
        routes: F,
        req_headers: &["Authorization"],
        ..Case::DEFAULT
    };
    http_user_auth_challenge_without_a_challenge = Case {
        args: &["--http-user=alice", "--http-passwd=s3cret", "--http-auth-challenge=true", "{url}/f.bin"],
        routes: F,
        req_headers: &["Authorization"],
        ..Case::DEFAULT
    };
    unauthorized_is_24 = Case { args: &["{url}/a.bin"], routes: &[R::Status("/a.bin", 401)], ..Case::DEFAULT };
    load_cookies_sends_them = Case {
        args: &["--load-cookies=cookies.txt", "{url}/f.bin"],
        pre: &[Pre::Text(
            "cookies.txt",
            "127.0.0.1\tFALSE\t/\tFALSE\t0\tsid\tabc\n127.0.0.1\tFALSE\t/other\tFALSE\t0\tno\t1\n",
        )],
        routes: F,
        req_headers: &["Cookie"],
        known: &["K-COOKIES"],
        diffs: &[Diff::Rewrite("Cookie: sid=abc;", "Cookie: sid=abc")],
        ..Case::DEFAULT
    };
    load_cookies_missing_file = Case {
        args: &["--load-cookies=none.txt", "{url}/f.bin"],
        routes: F,
        ..Case::DEFAULT
    };
    keep_alive_off = Case {
        args: &["--enable-http-keep-alive=false", "-x2", "-k1M", "{url}/big.bin"],
        routes: &[R::File("/big.bin", 3_000_000)],
        req_headers: &["Connection"],
        ..Case::DEFAULT
    };
    content_disposition_default_utf8 = Case {
        args: &["--content-disposition-default-utf8=true", "{url}/cd.bin"],
        routes: &[R::FileWith("/cd.bin", 10_000, &[M::Disposition("attachment; filename=\"\u{20ac} rates.txt\"")])],
        ..Case::DEFAULT
    };
    content_disposition_raw_utf8_by_default = Case {
        args: &["{url}/cd.bin"],
        routes: &[R::FileWith("/cd.bin", 10_000, &[M::Disposition("attachment; filename=\"caf\u{e9}.txt\"")])],
        known: &["K-CDUTF8"],
        diffs: &[Diff::Aria2Args(&["--content-disposition-default-utf8=true", "{url}/cd.bin"])],
        ..Case::DEFAULT
    };
    use_head = Case {
        args: &["--use-head=true", "{url}/f.bin"],
        routes: F,
        ..Case::DEFAULT
    };
    use_head_not_found = Case { args: &["--use-head=true", "{url}/none.bin"], routes: F, ..Case::DEFAULT };

    // ---- netrc, cookies saved, gzip, pipelining ----
    netrc_path_private = Case {
        args: &["--netrc-path={dir}/netrc", "{url}/f.bin"],
        pre: &[Pre::Private("netrc", "machine 127.0.0.1 login nu password npw\n")],
        routes: F,
        req_headers: &["Authorization"],
        ..Case::DEFAULT
    };
    netrc_in_home_default_machine = Case {
        args: &["{url}/f.bin"],
        pre: &[Pre::Private("~/.netrc", "machine other.example login o password op\ndefault login du password dpw\n")],
        routes: F,
        req_headers: &["Authorization"],
        ..Case::DEFAULT
    };
    no_netrc_short = Case {
        args: &["-n", "{url}/f.bin"],
        pre: &[Pre::Private("~/.netrc", "machine 127.0.0.1 login nu password npw\n")],
        routes: F,
        req_headers: &["Authorization"],
        ..Case::DEFAULT
    };
    netrc_over_http_user = Case {
        args: &["--http-user=cu", "--http-passwd=cpw", "{url}/f.bin"],
        pre: &[Pre::Private("~/.netrc", "machine 127.0.0.1 login nu password npw\n")],
        routes: F,
        req_headers: &["Authorization"],
        ..Case::DEFAULT
    };
    netrc_readable_by_others = Case {
        args: &["--netrc-path={dir}/netrc", "{url}/f.bin"],
        pre: &[Pre::Text("netrc", "machine 127.0.0.1 login nu password npw\n")],
        routes: F,
        req_headers: &["Authorization"],
        known: &["K-CREDORIGIN"],
        diffs: &[Diff::ExtraWarning("netrc"), Diff::Aria2Only("does not have correct permissions")],
        ..Case::DEFAULT
    };
    save_cookies_from_set_cookie = Case {
        args: &["--save-cookies=saved.txt", "{url}/sc.bin"],
        // A fixed expiry: with Max-Age the saved expiry is the second each tool ran in, and the
        // two runs straddle a second now and then (tests/requests.rs covers Max-Age).
        routes: &[R::FileWith("/sc.bin", 10_000, &[M::Header("Set-Cookie", "sid=xyz; Path=/; Expires=Wed, 01 Jan 2031 00:00:00 GMT")])],
        known: &["K-COOKIES"],
        diffs: &[Diff::FirstLine("saved.txt", "# Netscape HTTP Cookie File")],
        ..Case::DEFAULT
    };
    http_accept_gzip_inflates = Case {
        args: &["--http-accept-gzip=true", "{url}/gz.bin"],
        routes: &[R::FileWith("/gz.bin", 300_000, &[M::Gzip])],
        req_headers: &["Accept-Encoding"],
        ..Case::DEFAULT
    };
    gzip_not_asked_for_is_kept = Case {
        args: &["{url}/gz.bin"],
        routes: &[R::FileWith("/gz.bin", 300_000, &[M::Gzip])],
        req_headers: &["Accept-Encoding"],
        ..Case::DEFAULT
    };
    pipelining_on = Case {
        args: &["--enable-http-pipelining=true", "-j1", "-Z", "{url}/f.bin", "{url}/g.bin"],
        routes: &[R::File("/f.bin", 100_000), R::File("/g.bin", 80_000)],
        ..Case::DEFAULT
    };

    // ---- proxies: the test server is the proxy ({authority}); it serves absolute-form targets
    // by their path, so the request lines show what each program asked the proxy ----
    all_proxy_asks_in_absolute_form = Case {
        args: &["--all-proxy={authority}", "http://files.invalid/f.bin"],
        routes: F,
        req_headers: &["Host", "Proxy-Authorization", "Proxy-Connection"],
        ..Case::DEFAULT
    };
    http_proxy_with_user_and_password_options = Case {
        args: &["--http-proxy=http://{authority}", "--http-proxy-user=pu", "--http-proxy-passwd=ppw", "http://files.invalid/f.bin"],
        routes: F,
        req_headers: &["Proxy-Authorization", "Authorization"],
        ..Case::DEFAULT
    };
    all_proxy_credentials_in_the_value = Case {
        args: &["--all-proxy=http://pu:ppw@{authority}", "http://files.invalid/f.bin"],
        routes: F,
        req_headers: &["Proxy-Authorization"],
        ..Case::DEFAULT
    };
    proxy_split_download = Case {
        args: &["--all-proxy={authority}", "-x4", "-s4", "-k1M", "http://files.invalid/big.bin"],
        routes: &[R::File("/big.bin", 4 << 20)],
        req_headers: &["Range"],
        conns: true,
        ..Case::DEFAULT
    };
    proxy_answers_404 = Case {
        args: &["--all-proxy={authority}", "http://files.invalid/none.bin"],
        routes: F,
        known: &["K-ONELINE"],
        ..Case::DEFAULT
    };
    https_proxy_is_not_taken_for_http = Case {
        args: &["--https-proxy={refused}", "{url}/f.bin"],
        routes: F,
        ..Case::DEFAULT
    };
    no_proxy_goes_direct = Case {
        args: &["--all-proxy={refused}", "--no-proxy=localhost,127.0.0.0/8", "{url}/f.bin"],
        routes: F,
        ..Case::DEFAULT
    };
    empty_http_proxy_cancels_all_proxy = Case {
        args: &["--all-proxy={refused}", "--http-proxy=", "{url}/f.bin"],
        routes: F,
        ..Case::DEFAULT
    };
    proxy_method_tunnel_refused_by_the_proxy = Case {
        args: &["--all-proxy={authority}", "--proxy-method=tunnel", "http://files.invalid/f.bin"],
        routes: F,
        req_headers: &["Host"],
        ..Case::DEFAULT
    };
    bad_proxy_value = Case {
        args: &["--all-proxy=ftp://proxy.invalid", "{url}/f.bin"],
        routes: F,
        known: &["K-PROXY"],
        diffs: &[Diff::Own { exit: 28, line: "unsupported proxy scheme ftp://", no_files: true, sole: false }],
        ..Case::DEFAULT
    };
    refused_proxy = Case {
        args: &["--all-proxy={refused}", "{url}/f.bin"],
        routes: F,
        known: &["K-ONELINE"],
        ..Case::DEFAULT
    };
    proxy_per_input_file_entry = Case {
        args: &["-j1", "-i", "list.txt"],
        pre: &[Pre::Text(
            "list.txt",
            "http://files.invalid/f.bin\n  all-proxy={authority}\n{url}/g.bin\n",
        )],
        routes: &[R::File("/f.bin", 70_000), R::File("/g.bin", 50_000)],
        req_headers: &["Host"],
        ..Case::DEFAULT
    };
}
