//! aria2.conf (`--conf-path`, the default locations, `--no-conf`) and input files (`-i`).

use super::harness::{Case, Cmp, Pre, R};

const F: &[R] = &[R::File("/f.bin", 100_000)];
const LIST: &[R] = &[
    R::File("/f.bin", 100_000),
    R::File("/g.bin", 7_000),
    R::File("/h.bin", 3_333),
    R::Copy("/mirror/f.bin", "/f.bin", 100_000),
];

const ANY: Case = Case {
    cmp: Cmp::EventsAnyOrder,
    ..Case::DEFAULT
};

cases! {
    // ---- input lists that are not regular files ----
    input_from_a_pipe = Case {
        args: &["-i", "list.fifo"],
        routes: LIST,
        pre: &[Pre::Fifo("list.fifo", "{url}/f.bin\n{url}/g.bin\n  out=renamed.bin\n")],
        cmp: Cmp::EventsAnyOrder,
        ..Case::DEFAULT
    };
    input_from_dev_null = Case {
        args: &["-i", "/dev/null"],
        routes: LIST,
        cmp: Cmp::Exact,
        ..Case::DEFAULT
    };
    // ---- -P over a list: each entry's URIs are patterns ----
    input_patterns_each_their_own_download = Case {
        args: &["-P", "-Z", "-i", "list.txt"],
        routes: LIST,
        pre: &[Pre::Text("list.txt", "{url}/{f,g,h}.bin\n")],
        cmp: Cmp::EventsAnyOrder,
        ..Case::DEFAULT
    };
    input_patterns_as_mirrors = Case {
        args: &["-P", "-i", "list.txt"],
        routes: LIST,
        pre: &[Pre::Text("list.txt", "{url}/[f-f].bin\t{url}/mirror/f.bin\n{url}/{g,g}.bin\n")],
        cmp: Cmp::EventsAnyOrder,
        ..Case::DEFAULT
    };
    input_pattern_broken = Case {
        args: &["-P", "-i", "list.txt"],
        routes: LIST,
        pre: &[Pre::Text("list.txt", "{url}/{f,g.bin\n")],
        // Exit code and files: the message is one line (K-ONELINE), naming the list.
        cmp: Cmp::Nothing,
        ..Case::DEFAULT
    };
    // ---- configuration files ----
    conf_path_missing = Case {
        args: &["--conf-path={dir}/nonexistent.conf", "{url}/f.bin"],
        routes: F,
        cmp: Cmp::ParseError,
        ..Case::DEFAULT
    };
    conf_sets_options = Case {
        args: &["--conf-path=my.conf", "{url}/f.bin"],
        routes: F,
        pre: &[Pre::Text("my.conf", "dir=fromconf\nout=named.bin\nuser-agent=conf-agent/1\n")],
        req_headers: &["User-Agent"],
        ..Case::DEFAULT
    };
    conf_whitespace_and_comments = Case {
        args: &["--conf-path", "my.conf", "{url}/f.bin"],
        routes: F,
        pre: &[Pre::Text("my.conf", "# a comment\n\n  dir = spaced  \n#out=never.bin\nallow-overwrite=true\n")],
        ..Case::DEFAULT
    };
    conf_garbage_lines = Case {
        args: &["--conf-path=my.conf", "{url}/f.bin"],
        routes: F,
        pre: &[Pre::Text("my.conf", "max-connection-per-server=2\nthis is garbage\nno-such-option=1\n=novalue\ndir=ok\n")],
        ..Case::DEFAULT
    };
    conf_bad_value = Case {
        args: &["--conf-path=my.conf", "{url}/f.bin"],
        routes: F,
        pre: &[Pre::Text("my.conf", "max-connection-per-server=0\n")],
        cmp: Cmp::ParseError,
        known: &["K-XCAP"],
        diffs: &[super::harness::Diff::Rewrite("between 1 and 16.", "between 1 and 64.")],
        ..Case::DEFAULT
    };
    conf_bad_boolean = Case {
        args: &["--conf-path=my.conf", "{url}/f.bin"],
        routes: F,
        pre: &[Pre::Text("my.conf", "check-certificate=yes\n")],
        cmp: Cmp::ParseError,
        ..Case::DEFAULT
    };
    conf_command_line_wins = Case {
        args: &["--conf-path=my.conf", "-d", "fromcli", "{url}/f.bin"],
        routes: F,
        pre: &[Pre::Text("my.conf", "dir=fromconf\n")],
        ..Case::DEFAULT
    };
    conf_header_and_command_line_header = Case {
        args: &["--conf-path=my.conf", "--header", "X-Cli: 2", "{url}/f.bin"],
        routes: F,
        pre: &[Pre::Text("my.conf", "header=X-Conf: 1\n")],
        req_headers: &["X-Conf", "X-Cli"],
        ..Case::DEFAULT
    };
    conf_default_home = Case {
        args: &["{url}/f.bin"],
        routes: F,
        pre: &[Pre::Text("~/.aria2/aria2.conf", "dir=fromhome\n")],
        ..Case::DEFAULT
    };
    conf_default_xdg = Case {
        args: &["{url}/f.bin"],
        routes: F,
        pre: &[Pre::Text("~/.config/aria2/aria2.conf", "dir=fromxdg\n")],
        ..Case::DEFAULT
    };
    conf_home_before_xdg = Case {
        args: &["{url}/f.bin"],
        routes: F,
        pre: &[
            Pre::Text("~/.aria2/aria2.conf", "dir=fromhome\n"),
            Pre::Text("~/.config/aria2/aria2.conf", "dir=fromxdg\n"),
        ],
        ..Case::DEFAULT
    };
    no_conf = Case {
        args: &["--no-conf", "{url}/f.bin"],
        routes: F,
        pre: &[Pre::Text("~/.aria2/aria2.conf", "dir=fromhome\n")],
        ..Case::DEFAULT
    };
    no_conf_with_conf_path = Case {
        args: &["--no-conf=true", "--conf-path=my.conf", "{url}/f.bin"],
        routes: F,
        pre: &[Pre::Text("my.conf", "dir=fromconf\n")],
        ..Case::DEFAULT
    };

    // ---- input files ----
    input_file_basic = Case {
        args: &["-i", "list.txt"],
        routes: LIST,
        pre: &[Pre::Text("list.txt", "{url}/f.bin\n{url}/g.bin\n")],
        ..ANY
    };
    input_file_mirrors_and_options = Case {
        args: &["--input-file=list.txt"],
        routes: LIST,
        pre: &[Pre::Text(
            "list.txt",
            "# downloads\n\n{url}/f.bin\t{url}/mirror/f.bin\n  out=first.bin\n\tdir=d1\n\n{url}/g.bin\n dir = d2 \n# trailing comment\n{url}/h.bin\n",
        )],
        ..ANY
    };
    input_file_global_out_not_inherited = Case {
        args: &["-o", "global.bin", "-i", "list.txt"],
        routes: LIST,
        pre: &[Pre::Text("list.txt", "{url}/g.bin\n")],
        ..Case::DEFAULT
    };
    input_file_global_dir_inherited = Case {
        args: &["-d", "gdir", "-i", "list.txt"],
        routes: LIST,
        pre: &[Pre::Text("list.txt", "{url}/g.bin\n{url}/h.bin\n  dir=own\n")],
        ..ANY
    };
    input_file_unknown_key = Case {
        args: &["-i", "list.txt"],
        routes: LIST,
        pre: &[Pre::Text("list.txt", "{url}/g.bin\n  no-such-key=1\n  out=x.bin\n")],
        ..Case::DEFAULT
    };
    input_file_indented_uri_and_bare_option = Case {
        args: &["-i", "list.txt"],
        routes: LIST,
        pre: &[
            Pre::Text("g.bin", "old"),
            Pre::Text("list.txt", "# first\n\t{url}/g.bin\n  allow-overwrite\n")
        ],
        ..Case::DEFAULT
    };
    input_file_line_that_is_no_uri = Case {
        args: &["-i", "list.txt"],
        routes: LIST,
        pre: &[Pre::Text("list.txt", "notauri\t{url}/g.bin\nout=x.bin\n")],
        ..Case::DEFAULT
    };
    conf_bare_option_names = Case {
        args: &["--conf-path=my.conf", "{url}/f.bin"],
        routes: F,
        pre: &[Pre::Text("f.bin", "old"), Pre::Text("my.conf", "allow-overwrite\nremote-time=\n")],
        ..Case::DEFAULT
    };
    input_file_and_command_line_uri = Case {
        args: &["-i", "list.txt", "{url}/h.bin"],
        routes: LIST,
        pre: &[Pre::Text("list.txt", "{url}/g.bin\n")],
        ..ANY
    };
    input_file_missing = Case { args: &["-i", "nolist.txt"], routes: LIST, known: &["K-ONELINE"], ..Case::DEFAULT };
    input_file_empty = Case {
        args: &["-i", "list.txt"],
        routes: LIST,
        pre: &[Pre::Text("list.txt", "# nothing here\n\n")],
        ..Case::DEFAULT
    };
    input_file_with_404 = Case {
        args: &["-j1", "-i", "list.txt"],
        routes: LIST,
        pre: &[Pre::Text("list.txt", "{url}/g.bin\n{url}/nope\n")],
        ..Case::DEFAULT
    };
    input_file_bad_option_value = Case {
        args: &["-i", "list.txt"],
        routes: LIST,
        pre: &[Pre::Text("list.txt", "{url}/g.bin\n  split=0\n{url}/h.bin\n")],
        ..Case::DEFAULT
    };
    input_file_is_a_directory = Case { args: &["-i", "adir"], routes: LIST, pre: &[Pre::Dir("adir")], ..Case::DEFAULT };
}
