//! The download options: where files go and what they are called, splitting and concurrency,
//! TLS trust, existing files, console output, request headers. Plus nginx.

use super::harness::{Case, Cmp, Diff, Pre, Srv, M, R};

const F: &[R] = &[R::File("/f.bin", 100_000)];
const BIG: &[R] = &[R::File("/big.bin", 4 << 20)];
/// /f.bin (4 MiB: aria2c 1.36 aborts on an assertion when it starts a file of one piece over
/// after a failed resume), and two mirrors of it that ignore Range.
const F_AND_NO_RANGE_MIRROR: &[R] = &[
    R::File("/f.bin", 4 << 20),
    R::CopyWith("/nr/f.bin", "/f.bin", 4 << 20, &[M::NoRanges]),
    R::CopyWith("/nr2/f.bin", "/f.bin", 4 << 20, &[M::NoRanges]),
];
/// The same two, throttled (about 160 ms a body), so that every connection is answered before
/// the download ends: unthrottled, aria2c sometimes finishes first and reports nothing.
const SLOW_F_AND_NO_RANGE_MIRROR: &[R] = &[
    R::FileWith("/f.bin", 4 << 20, &[M::Throttle(256 * 1024, 10)]),
    R::CopyWith(
        "/nr/f.bin",
        "/f.bin",
        4 << 20,
        &[M::NoRanges, M::Throttle(256 * 1024, 10)],
    ),
];
const SIX: &[R] = &[
    R::File("/z/1.bin", 10_000),
    R::File("/z/2.bin", 20_001),
    R::File("/z/3.bin", 4_096),
    R::File("/z/4.bin", 1),
    R::File("/z/5.bin", 30_000),
    R::File("/z/6.bin", 12_345),
];
/// About 2.6 s: long enough for aria2c's one-second readout and summaries.
const SLOW: &[R] = &[R::FileWith(
    "/slow.bin",
    320 * 1024,
    &[M::Throttle(16 * 1024, 130)],
)];

/// Several downloads at once finish in any order.
const ANY: Case = Case {
    cmp: Cmp::EventsAnyOrder,
    ..Case::DEFAULT
};
/// A 1 MiB partial f.bin (no control file) and the mirrors of F_AND_NO_RANGE_MIRROR.
const PARTIAL_WITH_NO_RANGE_MIRRORS: Case = Case {
    routes: F_AND_NO_RANGE_MIRROR,
    pre: &[Pre::Bytes("f.bin", 1 << 20)],
    ..Case::DEFAULT
};

cases! {
    // ---- where and under which name ----
    basic_download = Case { args: &["{url}/f.bin"], routes: F, ..Case::DEFAULT };
    dir_relative = Case { args: &["-d", "sub", "{url}/f.bin"], routes: F, ..Case::DEFAULT };
    dir_absolute = Case { args: &["-d", "{dir}/abs", "{url}/f.bin"], routes: F, ..Case::DEFAULT };
    dir_nested_created = Case { args: &["--dir=a/b/c", "{url}/f.bin"], routes: F, ..Case::DEFAULT };
    dir_is_a_file = Case {
        args: &["-d", "plain", "{url}/f.bin"],
        routes: F,
        pre: &[Pre::Text("plain", "not a directory\n")],
        ..Case::DEFAULT
    };
    out_name = Case { args: &["-o", "renamed.bin", "{url}/f.bin"], routes: F, ..Case::DEFAULT };
    out_in_subdir = Case { args: &["-o", "x/y/renamed.bin", "{url}/f.bin"], routes: F, ..Case::DEFAULT };
    out_with_dir = Case { args: &["-d", "sub", "-o", "named.bin", "{url}/f.bin"], routes: F, ..Case::DEFAULT };
    mirrors_one_file = Case {
        args: &["{url}/a/f.bin", "{url}/b/f.bin"],
        routes: &[R::File("/a/f.bin", 100_000), R::Copy("/b/f.bin", "/a/f.bin", 100_000)],
        ..Case::DEFAULT
    };
    mirrors_split = Case {
        args: &["-s2", "-k1M", "{url}/a/big.bin", "{url}/b/big.bin"],
        routes: &[R::File("/a/big.bin", 4 << 20), R::Copy("/b/big.bin", "/a/big.bin", 4 << 20)],
        ..Case::DEFAULT
    };

    // A dead mirror beside good ones on the same server, the file split in many segments (apt-fast's
    // `MIRRORS` command line: its options, a list with tab-separated mirrors): the good mirrors
    // finish it.
    mirrors_dead_beside_good_split = Case {
        args: &["-x10", "-s8", "--min-split-size=1M", "-m0", "{url}/a/big.bin", "{url}/dead/big.bin", "{url}/b/big.bin"],
        routes: &[
            R::Status("/dead/big.bin", 404),
            R::FileWith("/a/big.bin", 12 << 20, &[M::Throttle(256 << 10, 20)]),
            R::CopyWith("/b/big.bin", "/a/big.bin", 12 << 20, &[M::Throttle(256 << 10, 20)]),
        ],
        vary: &["Download aborted", "Resource not found", "errorCode=3"],
        ..Case::DEFAULT
    };
    mirrors_dead_apt_fast = Case {
        args: &["--no-conf", "-c", "-j5", "-x10", "-s8", "-i", "list", "--min-split-size=1M",
            "--stream-piece-selector=default", "--connect-timeout=600", "--timeout=600", "-m0",
            "--header", "Accept: */*"],
        routes: &[
            R::Status("/dead/big.bin", 404),
            R::FileWith("/a/big.bin", 12 << 20, &[M::Throttle(256 << 10, 20)]),
            R::Status("/dead/small.bin", 404),
            R::File("/a/small.bin", 300_000),
        ],
        pre: &[Pre::Text("list", "{url}/dead/big.bin\t{url}/a/big.bin\n out=big.bin\n{url}/dead/small.bin\t{url}/a/small.bin\n out=small.bin\n")],
        cmp: Cmp::EventsAnyOrder,
        vary: &["Download aborted", "Resource not found", "errorCode=3"],
        ..Case::DEFAULT
    };

    // ---- --stderr: the console on standard error ----
    console_on_stderr = Case {
        args: &["--stderr", "{url}/f.bin"],
        routes: &[R::File("/f.bin", 100_000)],
        ..Case::DEFAULT
    };
    console_on_stderr_error = Case {
        args: &["--stderr=true", "{url}/missing.bin"],
        routes: &[R::Status("/missing.bin", 404)],
        ..Case::DEFAULT
    };

    // ---- --reuse-uri=false: a URI is not used again for a second connection ----
    reuse_uri_false_one_uri = Case {
        args: &["--reuse-uri=false", "-x4", "-s4", "-k1M", "{url}/big.bin"],
        routes: &[R::File("/big.bin", 4 << 20)],
        conns: true,
        ..Case::DEFAULT
    };

    // ---- -P: parameterized URIs ----
    parameterized_each = Case {
        args: &["-P", "-Z", "{url}/{a,b}/f.bin", "{url}/n[08-10:2].bin", "{url}/[x-y]z.bin"],
        // Both tools name two downloads of one name by whose answer came first (aria2c too):
        // b's answer comes a second later, so a's file is f.bin in both runs.
        routes: &[
            R::File("/a/f.bin", 3000),
            R::FileWith("/b/f.bin", 4000, &[M::DelayHead(1000)]),
            R::File("/n08.bin", 100),
            R::File("/n10.bin", 200),
            R::File("/xz.bin", 300),
            R::File("/yz.bin", 400),
        ],
        cmp: Cmp::EventsAnyOrder,
        ..Case::DEFAULT
    };
    parameterized_mirrors = Case {
        args: &["-P", "-s2", "-k1M", "{url}/{a,b}/big.bin"],
        routes: &[R::File("/a/big.bin", 4 << 20), R::Copy("/b/big.bin", "/a/big.bin", 4 << 20)],
        ..Case::DEFAULT
    };
    parameterized_malformed = Case {
        args: &["-P", "{url}/x[1-3"],
        cmp: Cmp::Nothing,
        ..Case::DEFAULT
    };

    // ---- event hooks: the start hook's arguments (the GID's length, the number of files, the
    // file's name), written before the download ends (the body is slow) ----
    hook_start_arguments = Case {
        args: &["--on-download-start={dir}/hook.sh", "-o", "named.bin", "{url}/f.bin"],
        routes: &[R::FileWith("/f.bin", 100_000, &[M::Throttle(20_000, 100)])],
        pre: &[Pre::Script("hook.sh", "#!/bin/sh\necho \"$# ${#1} $2 $(basename \"$3\")\" > {dir}/hook.out\n")],
        ..Case::DEFAULT
    };
    hook_start_arguments_unnamed = Case {
        args: &["--on-download-start={dir}/hook.sh", "{url}/f.bin"],
        routes: &[R::FileWith("/f.bin", 100_000, &[M::Throttle(20_000, 100)])],
        pre: &[Pre::Script("hook.sh", "#!/bin/sh\necho \"$# ${#1} $2 [$3]\" > {dir}/hook.out\n")],
        ..Case::DEFAULT
    };

    // ---- splitting: -x, -s, -k (the server counts connections) ----
    split_x4_k1m = Case { args: &["-x4", "-s4", "-k1M", "{url}/big.bin"], routes: BIG, conns: true, req_headers: &["Range"], ..Case::DEFAULT };
    split_default_k_no_split = Case {
        // 4 MiB < 2 × 20M: one connection whatever -x says.
        args: &["-x4", "{url}/big.bin"],
        routes: BIG,
        conns: true,
        ..Case::DEFAULT
    };
    split_s1_one_connection = Case { args: &["-x8", "-s1", "-k1M", "{url}/big.bin"], routes: BIG, conns: true, ..Case::DEFAULT };
    split_k2m_two_connections = Case { args: &["-x8", "-s8", "-k2M", "{url}/big.bin"], routes: BIG, conns: true, ..Case::DEFAULT };
    split_x16 = Case { args: &["-x16", "-s16", "-k1M", "{url}/big.bin"], routes: BIG, ..Case::DEFAULT };

    // ---- several downloads: -Z, -j ----
    z_many_files = Case {
        args: &["-Z", "{url}/z/1.bin", "{url}/z/2.bin", "{url}/z/3.bin", "{url}/z/4.bin", "{url}/z/5.bin", "{url}/z/6.bin"],
        routes: SIX,
        ..ANY
    };
    z_j1_in_order = Case {
        args: &["-Z", "-j1", "{url}/z/1.bin", "{url}/z/2.bin", "{url}/z/3.bin"],
        routes: SIX,
        ..Case::DEFAULT
    };
    z_j2 = Case {
        args: &["-Z", "-j", "2", "{url}/z/1.bin", "{url}/z/2.bin", "{url}/z/3.bin", "{url}/z/4.bin"],
        routes: SIX,
        ..ANY
    };
    z_out_ignored = Case { args: &["-Z", "-o", "x.bin", "{url}/z/1.bin", "{url}/z/2.bin"], routes: SIX, ..ANY };
    z_same_name_twice = Case {
        // Two downloads of the same name in one run.
        args: &["-Z", "-j1", "{url}/z/1.bin", "{url}/z/1.bin"],
        routes: SIX,
        ..Case::DEFAULT
    };

    // ---- TLS ----
    tls_ca_certificate = Case {
        args: &["--ca-certificate={ca}", "{url}/f.bin"],
        server: Srv::Tls,
        routes: F,
        ..Case::DEFAULT
    };
    tls_ca_certificate_split = Case {
        args: &["--ca-certificate", "{ca}", "-x4", "-k1M", "{url}/big.bin"],
        server: Srv::Tls,
        routes: BIG,
        ..Case::DEFAULT
    };
    tls_untrusted = Case {
        args: &["{url}/f.bin"],
        server: Srv::Tls,
        routes: F,
        known: &["K-TLSTEXT"],
        diffs: &[Diff::Rewrite(TLS_UNTRUSTED_DETAIL, "")],
        ..Case::DEFAULT
    };
    tls_wrong_host_with_ca = Case {
        args: &["--ca-certificate={ca}", "{url}/f.bin"],
        server: Srv::TlsWrongHost,
        routes: F,
        known: &["K-TLSTEXT"],
        diffs: &[Diff::Rewrite(TLS_WRONG_HOST_DETAIL, "")],
        ..Case::DEFAULT
    };
    tls_check_certificate_false = Case {
        args: &["--check-certificate=false", "{url}/f.bin"],
        server: Srv::TlsWrongHost,
        routes: F,
        ..Case::DEFAULT
    };
    tls_check_certificate_false_untrusted = Case {
        args: &["--check-certificate=false", "{url}/f.bin"],
        server: Srv::Tls,
        routes: F,
        ..Case::DEFAULT
    };

    // ---- existing files ----
    auto_rename = Case {
        args: &["{url}/f.bin"],
        routes: F,
        pre: &[Pre::Text("f.bin", "old\n")],
        ..Case::DEFAULT
    };
    auto_rename_twice = Case {
        args: &["{url}/f.bin"],
        routes: F,
        pre: &[Pre::Text("f.bin", "old\n"), Pre::Text("f.1.bin", "older\n")],
        ..Case::DEFAULT
    };
    auto_rename_no_extension = Case {
        args: &["-o", "data", "{url}/f.bin"],
        routes: F,
        pre: &[Pre::Text("data", "old\n")],
        ..Case::DEFAULT
    };
    continue_into_empty_file = Case {
        // Nothing to keep: aria2c downloads the whole file into it rather than renaming.
        args: &["-c", "{url}/f.bin"],
        routes: F,
        pre: &[Pre::Bytes("f.bin", 0)],
        req_headers: &["Range"],
        ..Case::DEFAULT
    };
    continue_into_file_shorter_than_a_block = Case {
        args: &["-c", "{url}/f.bin"],
        routes: F,
        pre: &[Pre::Bytes("f.bin", 100)],
        req_headers: &["Range"],
        ..Case::DEFAULT
    };
    continue_over_a_whole_file_of_whole_blocks = Case {
        // The file is already whole and its length a multiple of 16 KiB: ringdl's request for the
        // rest is answered 416 (aria2c's first GET has no Range); both call it complete, exit 0.
        args: &["-c", "{url}/w.bin"],
        routes: &[R::File("/w.bin", 65_536)],
        pre: &[Pre::Bytes("w.bin", 65_536)],
        known: &["K-CONTREQ"],
        ..Case::DEFAULT
    };
    continue_from_a_partial_file = Case {
        args: &["-c", "{url}/f.bin"],
        routes: F,
        pre: &[Pre::Bytes("f.bin", 40_000)],
        known: &["K-CONTREQ"],
        ..Case::DEFAULT
    };
    // ---- -c against mirrors that cannot resume (they answer a Range request with the whole file) ----
    continue_skips_a_mirror_that_cannot_resume = Case {
        args: &["-c", "-x1", "{url}/nr/f.bin", "{url}/f.bin"],
        ..PARTIAL_WITH_NO_RANGE_MIRRORS
    };
    continue_fails_when_no_mirror_can_resume = Case {
        args: &["-c", "-x1", "{url}/nr/f.bin", "{url}/nr2/f.bin"],
        ..PARTIAL_WITH_NO_RANGE_MIRRORS
    };
    split_over_a_mirror_that_ignores_ranges = Case {
        // The mirror that ignores ranges is dropped after its first segment request; which
        // segment that was depends on timing.
        args: &["-x4", "-k1M", "{url}/f.bin", "{url}/nr/f.bin"],
        routes: SLOW_F_AND_NO_RANGE_MIRROR,
        vary: &["Invalid range header"],
        ..Case::DEFAULT
    };
    continue_always_resume_false_starts_over = Case {
        args: &["-c", "-x1", "--always-resume=false", "{url}/nr/f.bin"],
        ..PARTIAL_WITH_NO_RANGE_MIRRORS
    };
    continue_always_resume_false_skips_below_the_limit = Case {
        args: &["-c", "-x1", "--always-resume=false", "{url}/nr/f.bin", "{url}/f.bin"],
        ..PARTIAL_WITH_NO_RANGE_MIRRORS
    };
    continue_resume_failure_limit_reached_starts_over = Case {
        args: &["-c", "-x1", "--always-resume=false", "--max-resume-failure-tries=1", "{url}/nr/f.bin", "{url}/f.bin"],
        ..PARTIAL_WITH_NO_RANGE_MIRRORS
    };
    auto_rename_disabled = Case {
        args: &["--auto-file-renaming=false", "{url}/f.bin"],
        routes: F,
        pre: &[Pre::Text("f.bin", "old\n")],
        ..Case::DEFAULT
    };
    allow_overwrite = Case {
        args: &["--allow-overwrite=true", "{url}/f.bin"],
        routes: F,
        pre: &[Pre::Bytes("f.bin", 200_000)],
        ..Case::DEFAULT
    };
    allow_overwrite_false_renames = Case {
        args: &["--allow-overwrite=false", "{url}/f.bin"],
        routes: F,
        pre: &[Pre::Text("f.bin", "old\n")],
        ..Case::DEFAULT
    };

    // ---- console output ----
    console_log_level_warn = Case { args: &["--console-log-level=warn", "{url}/f.bin"], routes: F, ..Case::DEFAULT };
    console_log_level_error_on_404 = Case {
        args: &["--console-log-level=error", "{url}/f.bin", "{url}/nope"],
        routes: F,
        ..Case::DEFAULT
    };
    console_log_level_notice = Case { args: &["--console-log-level", "notice", "{url}/f.bin"], routes: F, ..Case::DEFAULT };
    quiet = Case { args: &["-q", "{url}/f.bin"], routes: F, cmp: Cmp::Exact, ..Case::DEFAULT };
    quiet_on_404 = Case { args: &["--quiet", "{url}/nope"], routes: F, cmp: Cmp::Exact, ..Case::DEFAULT };
    quiet_false = Case { args: &["-qfalse", "{url}/f.bin"], routes: F, ..Case::DEFAULT };
    download_result_full = Case { args: &["--download-result=full", "{url}/f.bin"], routes: F, ..Case::DEFAULT };
    download_result_full_error = Case { args: &["--download-result=full", "{url}/nope"], routes: F, ..Case::DEFAULT };
    download_result_hide = Case { args: &["--download-result=hide", "{url}/f.bin"], routes: F, ..Case::DEFAULT };
    download_result_default_two = Case {
        args: &["-Z", "-j1", "--download-result=default", "{url}/z/1.bin", "{url}/z/2.bin"],
        routes: SIX,
        ..Case::DEFAULT
    };
    colour_by_default = Case { args: &["-Z", "-j1", "{url}/f.bin", "{url}/nope"], routes: F, colour: true, ..Case::DEFAULT };
    colour_off = Case {
        args: &["--enable-color=false", "-Z", "-j1", "{url}/f.bin", "{url}/nope"],
        routes: F,
        colour: true,
        ..Case::DEFAULT
    };
    readout_slow = Case { args: &["{url}/slow.bin"], routes: SLOW, cmp: Cmp::Progress, ..Case::DEFAULT };
    readout_off = Case {
        args: &["--show-console-readout=false", "{url}/slow.bin"],
        routes: SLOW,
        cmp: Cmp::Progress,
        ..Case::DEFAULT
    };
    summary_interval_1 = Case {
        args: &["--summary-interval=1", "{url}/slow.bin"],
        routes: SLOW,
        cmp: Cmp::Progress,
        ..Case::DEFAULT
    };
    summary_interval_0 = Case {
        args: &["--summary-interval", "0", "{url}/slow.bin"],
        routes: SLOW,
        cmp: Cmp::Progress,
        ..Case::DEFAULT
    };
    summary_with_readout_off = Case {
        args: &["--summary-interval=1", "--show-console-readout=false", "{url}/slow.bin"],
        routes: SLOW,
        cmp: Cmp::Progress,
        ..Case::DEFAULT
    };

    // ---- request headers ----
    header_custom = Case {
        args: &["--header", "X-Compat: one", "{url}/f.bin"],
        routes: F,
        req_headers: &["X-Compat"],
        ..Case::DEFAULT
    };
    header_repeated = Case {
        args: &["--header=X-A: 1", "--header", "X-B: 2", "--header=X-A: 3", "{url}/f.bin"],
        routes: F,
        req_headers: &["X-A", "X-B"],
        ..Case::DEFAULT
    };
    header_replaces_builtin = Case {
        args: &["--header", "Accept: text/plain", "--header", "User-Agent: from-header/1", "{url}/f.bin"],
        routes: F,
        req_headers: &["Accept", "User-Agent"],
        ..Case::DEFAULT
    };
    user_agent_default = Case {
        args: &["{url}/f.bin"],
        routes: F,
        req_headers: &["User-Agent", "Accept", "Want-Digest", "Range"],
        known: &["K-VERSION"],
        ..Case::DEFAULT
    };
    user_agent_short = Case {
        args: &["-U", "compat-agent/1.0", "{url}/f.bin"],
        routes: F,
        req_headers: &["User-Agent"],
        ..Case::DEFAULT
    };
    user_agent_last_wins = Case {
        args: &["-U", "first/1", "--user-agent=second/2", "{url}/f.bin"],
        routes: F,
        req_headers: &["User-Agent"],
        ..Case::DEFAULT
    };
    user_agent_on_every_segment = Case {
        args: &["-U", "seg/1", "-x4", "-k1M", "{url}/big.bin"],
        routes: BIG,
        req_headers: &["User-Agent", "X-None"],
        ..Case::DEFAULT
    };

    // ---- a real nginx ----
    nginx_https_split = Case {
        args: &["--ca-certificate={ca}", "-x4", "-k1M", "{surl}/big.bin"],
        server: Srv::Nginx,
        routes: BIG,
        ..Case::DEFAULT
    };
    nginx_http_many = Case {
        args: &["-Z", "{url}/z/1.bin", "{url}/z/2.bin", "{url}/z/3.bin", "{url}/z/5.bin"],
        server: Srv::Nginx,
        routes: SIX,
        ..ANY
    };
    nginx_404 = Case { args: &["{url}/missing.bin"], server: Srv::Nginx, routes: F, ..Case::DEFAULT };
}

/// GnuTLS's wording in aria2c's handshake error, after `SSL/TLS handshake failure:` (ringdl's
/// TLS library words the reason its own way, K-TLSTEXT).
const TLS_UNTRUSTED_DETAIL: &str =
    "  `not signed by known authorities or invalid' `issuer is not known'";
const TLS_WRONG_HOST_DETAIL: &str = " hostname does not match";
