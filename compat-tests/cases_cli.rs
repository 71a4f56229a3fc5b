//! The command line itself: option forms, value errors (exit 28), unknown and ambiguous options,
//! no URI, help and version.

use super::harness::{Case, Cmp, Diff, Pre, Srv, R};

const F: &[R] = &[R::File("/f.bin", 100_000)];
const FG: &[R] = &[R::File("/f.bin", 100_000), R::File("/g.bin", 70_001)];
const BIG: &[R] = &[R::File("/big.bin", 4 << 20)];

/// A parse error: nothing is downloaded, stderr compared line by line.
/// K-SUGGEST: the "Did you mean" lists are not compared.
const SUGGEST: Diff = Diff::CutFrom("Did you mean:");

const PARSE: Case = Case {
    cmp: Cmp::ParseError,
    routes: F,
    ..Case::DEFAULT
};

cases! {
    // ---- no URI, unknown, ambiguous, malformed ----
    no_uri = Case { args: &[], server: Srv::None, known: &["K-PROGNAME", "K-USAGE"], ..PARSE };
    no_uri_only_options = Case { args: &["-x", "4", "-d", "sub"], server: Srv::None, ..PARSE };
    unknown_option_did_you_mean = Case {
        args: &["--foo", "{url}/f.bin"],
        known: &["K-PROGNAME", "K-USAGE", "K-SUGGEST"],
        diffs: &[SUGGEST],
        ..PARSE
    };
    unknown_option_typo = Case {
        args: &["--max-conection-per-server=2", "{url}/f.bin"],
        known: &["K-SUGGEST"],
        diffs: &[SUGGEST],
        ..PARSE
    };
    unknown_option_after_uri = Case {
        args: &["{url}/f.bin", "--outt=x"],
        known: &["K-SUGGEST"],
        diffs: &[SUGGEST],
        ..PARSE
    };
    ambiguous_prefix = Case {
        args: &["--max", "{url}/f.bin"],
        known: &["K-SUGGEST"],
        diffs: &[SUGGEST],
        ..PARSE
    };
    ambiguous_prefix_with_value = Case {
        args: &["--check=false", "{url}/f.bin"],
        known: &["K-SUGGEST"],
        diffs: &[SUGGEST],
        ..PARSE
    };
    unknown_short_option = Case { args: &["-y", "{url}/f.bin"], ..PARSE };
    missing_argument_long = Case { args: &["{url}/f.bin", "--dir"], ..PARSE };
    missing_argument_short = Case { args: &["{url}/f.bin", "-x"], ..PARSE };

    // ---- bad values: exit 28, aria2's message and the option's usage ----
    x_zero = Case {
        args: &["-x", "0", "{url}/f.bin"],
        known: &["K-XCAP"],
        diffs: &[Diff::Rewrite("between 1 and 16.", "between 1 and 64.")],
        ..PARSE
    };
    x_65_rejected = Case {
        args: &["-x65", "{url}/f.bin"],
        known: &["K-XCAP"],
        diffs: &[Diff::Rewrite("between 1 and 16.", "between 1 and 64.")],
        ..PARSE
    };
    x_not_a_number = Case { args: &["-x", "four", "{url}/f.bin"], ..PARSE };
    k_5g = Case { args: &["-k", "5G", "{url}/f.bin"], ..PARSE };
    k_512k = Case { args: &["-k", "512K", "{url}/f.bin"], ..PARSE };
    k_negative = Case { args: &["--min-split-size=-1M", "{url}/f.bin"], ..PARSE };
    j_abc = Case { args: &["-j", "abc", "{url}/f.bin"], ..PARSE };
    j_zero = Case { args: &["-j0", "{url}/f.bin"], ..PARSE };
    s_zero = Case { args: &["--split=0", "{url}/f.bin"], ..PARSE };
    console_log_level_loud = Case { args: &["--console-log-level=loud", "{url}/f.bin"], ..PARSE };
    download_result_bad = Case { args: &["--download-result=some", "{url}/f.bin"], ..PARSE };
    check_certificate_maybe = Case { args: &["--check-certificate=maybe", "{url}/f.bin"], ..PARSE };
    summary_interval_negative = Case { args: &["--summary-interval=-5", "{url}/f.bin"], ..PARSE };
    file_allocation_bad = Case { args: &["--file-allocation=fast", "{url}/f.bin"], ..PARSE };
    max_download_limit_negative = Case { args: &["--max-download-limit=-1", "{url}/f.bin"], ..PARSE };
    index_out_bad = Case { args: &["-O", "x=a.bin", "{url}/f.bin"], ..PARSE };
    // `--show-console-readout` takes a required argument, although it is documented as a
    // boolean: the URI is swallowed as its value.
    show_console_readout_bare = Case { args: &["--show-console-readout", "{url}/f.bin"], ..PARSE };
    // `-Z` takes an optional attached argument: `-Zq` is -Z with the value "q".
    short_optional_swallows_rest = Case { args: &["-Zq", "{url}/f.bin"], ..PARSE };
    // An optional boolean argument only attaches: `false` is a URI, and not a valid one.
    check_certificate_space_false = Case {
        args: &["--check-certificate", "false", "{url}/f.bin"],
        routes: F,
        known: &["K-ONELINE"],
        ..Case::DEFAULT
    };

    // ---- option forms that work ----
    form_long_equals = Case {
        args: &["--max-connection-per-server=2", "--split=2", "--min-split-size=1M", "{url}/big.bin"],
        routes: BIG,
        ..Case::DEFAULT
    };
    form_long_space = Case { args: &["--dir", "sub", "--out", "x.bin", "{url}/f.bin"], routes: F, ..Case::DEFAULT };
    form_short_attached = Case { args: &["-x16", "-s16", "-k1M", "-dsub", "{url}/big.bin"], routes: BIG, ..Case::DEFAULT };
    form_short_space = Case { args: &["-x", "16", "-s", "16", "-k", "1M", "-d", "sub", "{url}/big.bin"], routes: BIG, ..Case::DEFAULT };
    form_bool_attached = Case {
        args: &["-Vfalse", "-Ztrue", "{url}/f.bin", "{url}/g.bin"],
        routes: FG,
        cmp: Cmp::EventsAnyOrder,
        ..Case::DEFAULT
    };
    form_bool_bare = Case { args: &["-Z", "{url}/f.bin", "{url}/g.bin"], routes: FG, cmp: Cmp::EventsAnyOrder, ..Case::DEFAULT };
    form_bool_last_wins = Case {
        // -Z then -Zfalse: the two URIs are mirrors of one file again (named after the first).
        args: &["-Z", "{url}/f.bin", "-Zfalse", "{url}/g.bin"],
        routes: &[R::File("/f.bin", 100_000), R::Copy("/g.bin", "/f.bin", 100_000)],
        ..Case::DEFAULT
    };
    form_unique_prefix = Case {
        args: &["--max-conn=4", "--allow-over=true", "--min-split=1M", "{url}/f.bin"],
        routes: F,
        pre: &[Pre::Text("f.bin", "old contents\n")],
        ..Case::DEFAULT
    };
    form_options_after_uri = Case { args: &["{url}/f.bin", "-d", "sub", "-o", "x.bin"], routes: F, ..Case::DEFAULT };
    form_double_dash = Case { args: &["-d", "sub", "--", "{url}/f.bin"], routes: F, ..Case::DEFAULT };
    form_double_dash_then_dash_word = Case {
        // After `--`, `-o` is a URI (an unsupported one), not an option.
        args: &["--", "-o", "{url}/f.bin"],
        routes: F,
        ..Case::DEFAULT
    };
    form_last_one_wins = Case {
        args: &["-d", "a", "-o", "x.bin", "-d", "b", "-o", "y.bin", "{url}/f.bin"],
        routes: F,
        ..Case::DEFAULT
    };
    form_bool_empty_value = Case {
        // `--allow-overwrite=` : an empty optional argument means true.
        args: &["--allow-overwrite=", "{url}/f.bin"],
        routes: F,
        pre: &[Pre::Text("f.bin", "old\n")],
        ..Case::DEFAULT
    };
    x_seventeen_accepted = Case {
        args: &["-x", "17", "-k", "1M", "{url}/big.bin"],
        routes: BIG,
        known: &["K-XCAP"],
        diffs: &[Diff::Aria2Args(&["-x", "16", "-k", "1M", "{url}/big.bin"])],
        ..Case::DEFAULT
    };
    x_64_accepted = Case {
        args: &["-x64", "-s64", "-k1M", "{url}/big.bin"],
        routes: BIG,
        known: &["K-XCAP"],
        diffs: &[Diff::Aria2Args(&["-x16", "-s64", "-k1M", "{url}/big.bin"])],
        ..Case::DEFAULT
    };

    // ---- help and version: layout and option names, not prose ----
    help_basic = Case {
        args: &["-h"],
        server: Srv::None,
        cmp: Cmp::Help,
        known: &["K-HELPTEXT", "K-HELP-A"],
        ..Case::DEFAULT
    };
    help_http_tag = Case {
        args: &["--help=#http"],
        server: Srv::None,
        cmp: Cmp::Help,
        known: &["K-HELPTEXT", "K-VERSION"],
        ..Case::DEFAULT
    };
    help_tag_attached_short = Case { args: &["-h#basic"], server: Srv::None, cmp: Cmp::Help, ..Case::DEFAULT };
    help_keyword_split = Case { args: &["--help=split"], server: Srv::None, cmp: Cmp::Help, ..Case::DEFAULT };
    help_keyword_no_match = Case { args: &["--help=nosuchword"], server: Srv::None, cmp: Cmp::Help, ..Case::DEFAULT };
    help_all = Case {
        args: &["--help=#all"],
        server: Srv::None,
        cmp: Cmp::Help,
        known: &["K-HELPTEXT", "K-HELP-A", "K-VERSION"],
        ..Case::DEFAULT
    };
    help_wins_over_uri = Case { args: &["{url}/f.bin", "-h"], routes: F, cmp: Cmp::Help, ..Case::DEFAULT };
    version_short = Case {
        args: &["-v"],
        server: Srv::None,
        cmp: Cmp::Version,
        known: &["K-PROGNAME"],
        ..Case::DEFAULT
    };
    version_long = Case { args: &["--version", "{url}/f.bin"], routes: F, cmp: Cmp::Version, ..Case::DEFAULT };
}
