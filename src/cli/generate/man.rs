//! The man page: every option from the table, then the description, environment, files and
//! examples.
use super::*;

pub(super) fn man_page(opts: &[OptDef]) -> String {
    let mut m = String::new();
    m.push_str(
        ".\\\" Generated from ringdl's option table by `ringdl --generate=man`; do not edit.\n",
    );
    let _ = writeln!(
        m,
        ".TH RINGDL 1 {} {} \"User Commands\"",
        roff_arg(release_date()),
        roff_arg(&format!("ringdl {VERSION}"))
    );
    m.push_str(".SH NAME\nringdl \\- download files over HTTP and HTTPS, with aria2c's command line, through io_uring\n");

    m.push_str(".SH SYNOPSIS\n");
    m.push_str(".B ringdl\n[\\fIOPTION\\fR]... \\fIURI\\fR...\n.br\n");
    let kinds: Vec<String> = Target::ALL.iter().map(|t| bold(t.name())).collect();
    let _ = writeln!(m, ".B ringdl\n{}={}", bold("--generate"), kinds.join("|"));

    m.push_str(".SH DESCRIPTION\n");
    m.push_str(&md_to_roff(DESCRIPTION));
    let unsupported = opts
        .iter()
        .filter(|o| matches!(o.support, Support::No(_)))
        .count();
    if unsupported > 0 {
        m.push_str(&md_to_roff(UNSUPPORTED));
    }
    m.push_str(&md_to_roff(GENERATE));
    m.push_str(&md_to_roff(ENGINE));

    m.push_str(".SH OPTIONS\n");
    m.push_str(&md_to_roff(OPTIONS_INTRO));
    for (title, members) in sections(opts) {
        let _ = writeln!(m, ".SS {}", roff_arg(&title));
        for o in members {
            man_option(&mut m, o);
        }
    }

    let per_download: Vec<String> = opts
        .iter()
        .filter(|o| o.in_input_file)
        .map(|o| bold(o.name))
        .collect();
    m.push_str(".SH \"INPUT FILE\"\n");
    m.push_str(&md_to_roff(INPUT_FILE));
    if !per_download.is_empty() {
        m.push_str(".PP\nThe options an input file may set for one download are:\n");
        m.push_str(&per_download.join(",\n"));
        m.push_str(".\n");
    }

    m.push_str(".SH \"EXIT STATUS\"\n");
    m.push_str(&md_to_roff(EXIT_INTRO));
    for (code, meaning) in EXIT_CODES.iter().enumerate() {
        let _ = writeln!(m, ".TP\n.B {code}\n{}", roff_line(&md_inline(meaning)));
    }
    m.push_str(&md_to_roff(EXIT_OUTRO));

    m.push_str(".SH ENVIRONMENT\n");
    for (var, text, option) in ENVIRONMENT {
        let _ = writeln!(m, ".TP\n.B {}\n{}", roff(var), roff_line(&md_inline(text)));
        if let Some(name) = option {
            let note = option_note(opts, name);
            if !note.is_empty() {
                m.push_str(&roff_line(&md_inline(&note)));
                m.push('\n');
            }
        }
    }

    m.push_str(".SH FILES\n");
    for (path, text, option) in FILES {
        let _ = writeln!(
            m,
            ".TP\n\\fI{}\\fR\n{}",
            roff(path),
            roff_line(&md_inline(text))
        );
        let note = option_note(opts, option);
        if !note.is_empty() {
            m.push_str(&roff_line(&md_inline(&note)));
            m.push('\n');
        }
    }

    m.push_str(".SH EXAMPLES\n");
    m.push_str(&md_to_roff(EXAMPLES));

    m.push_str(".SH COMPATIBILITY\n");
    m.push_str(&md_to_roff(COMPAT_INTRO));
    m.push_str(&md_to_roff(KNOWN_DIFFERENCES));

    m.push_str(".SH \"SEE ALSO\"\n");
    m.push_str(".BR aria2c (1),\n.BR io_uring (7),\n.BR open (2),\n.BR getrlimit (2)\n");
    m
}

/// One option's entry: its forms, its help, and what the table knows about its value.
pub(super) fn man_option(m: &mut String, o: &OptDef) {
    let mut head = String::new();
    if let Some(c) = o.short {
        let _ = write!(head, "{}, ", bold(&format!("-{c}")));
    }
    head.push_str(&bold(&format!("--{}", o.name)));
    match o.arg {
        ArgKind::None => {}
        ArgKind::Required => {
            let _ = write!(head, "=\\fI{}\\fR", roff(o.value_name));
        }
        ArgKind::Optional => {
            let _ = write!(head, "[=\\fI{}\\fR]", roff(o.value_name));
        }
    }
    let _ = writeln!(m, ".TP\n{}", roff_line(&head));
    let _ = writeln!(m, "{}", roff_line(&md_inline(&sentence(o.help))));

    let mut more = String::new();
    if !o.long_help.trim().is_empty() {
        more.push_str(&md_to_roff(o.long_help));
    }
    let mut facts = Vec::new();
    if o.arg != ArgKind::None {
        let possible = possible_values(o);
        if !possible.is_empty() {
            facts.push(format!("Possible values: {}", roff(&possible)));
        }
    }
    if o.arg == ArgKind::Optional && !(o.value == ValueKind::Bool && o.implied == "true") {
        facts.push(format!("Given without a value: {}", roff(o.implied)));
    }
    if let Some(d) = o.default.filter(|d| !d.is_empty()) {
        facts.push(format!("Default: {}", roff(d)));
    }
    if !facts.is_empty() {
        more.push_str(".PP\n");
        more.push_str(
            &facts
                .iter()
                .map(|f| roff_line(f))
                .collect::<Vec<_>>()
                .join("\n.br\n"),
        );
        more.push('\n');
    }
    if o.cumulative {
        more.push_str(".PP\nMay be given more than once; every value is used.\n");
    }
    match o.support {
        Support::No(feature) => {
            let _ = writeln!(
                more,
                ".PP\nAccepted for compatibility and ignored: ringdl does not support {} yet.",
                roff(feature)
            );
        }
        Support::NoEffect(why) => {
            let _ = writeln!(
                more,
                ".PP\nAccepted for compatibility, without a warning: it changes nothing here, as {}.",
                roff(why)
            );
        }
        Support::Yes => {}
    }
    if !more.is_empty() {
        m.push_str(".RS\n");
        m.push_str(&more);
        m.push_str(".RE\n");
    }
}

/// What to add where a file or variable works through an option ringdl does not act on yet.
pub(super) fn option_note(opts: &[OptDef], name: &str) -> String {
    match find(opts, name).map(|o| o.support) {
        Some(Support::Yes) | Some(Support::NoEffect(_)) => String::new(),
        Some(Support::No(feature)) => {
            format!("ringdl does not support {feature} yet, so it ignores this.")
        }
        None => format!("ringdl does not support `--{name}` yet, so it ignores this."),
    }
}

pub(super) const DESCRIPTION: &str = "\
ringdl downloads files over HTTP and HTTPS. It takes aria2c's command line: the same options, the \
same configuration file and input files, the same file names and the same exit status, so scripts \
and habits made for aria2c keep working after `alias aria2c=ringdl`. The URIs given together are \
mirrors of one file, fetched over several connections at once; with `-Z` each URI is a download of \
its own.

What differs is underneath:

* **One io_uring ring.** Every connect, socket read, file write and timeout of the process goes \
through one io_uring submission queue, submitted in batches; there is no thread per connection and \
no system call per chunk of data.
* **Registered buffers, a fixed pool.** Memory for data is one pool of page-aligned buffers, \
allocated at start and registered with the kernel, sized from the number of connections to fit \
within `RLIMIT_MEMLOCK` (8 MiB on common distributions). ringdl needs no root and no raised limits, \
and its memory does not grow with the size of a file or the length of a download list.
* **TLS in the same buffers.** rustls makes the handshake; then a body's records are received \
straight into the aligned write blocks and decrypted where they lie, so the plaintext is not copied \
(only the part of a record that runs past a block's end is copied, to the next block). Plain HTTP bodies are received \
straight into the write blocks too.
* **O_DIRECT.** Files are written with `O_DIRECT` in 4 KiB-aligned blocks, so a download leaves the \
page cache as it found it: a large file does not push other programs' data out of memory. Where a \
filesystem refuses `O_DIRECT` (FUSE, some network filesystems), ringdl writes through the cache \
instead, drops what it wrote behind itself, and says so once.

ringdl runs on io_uring (Linux 5.6 or later) where it works. Where io_uring is refused (a \
container's seccomp profile, `kernel.io_uring_disabled`, gVisor), it says why in one line and runs on \
its portable epoll reactor instead, with the same O_DIRECT writes and memory budget; only \
`--engine=uring` makes that refusal an error (exit status 1). See ENGINE below.
";

pub(super) const UNSUPPORTED: &str = "\
aria2c options of features ringdl does not have are recognised, never reported as unknown: they are \
listed below with a note, and are accepted and ignored with one warning naming the feature. A \
download that needs such a feature (a `.torrent` or Metalink file, a magnet or `ftp://` URI) fails \
with one clear line and exit status 1.
";

pub(super) const GENERATE: &str = "\
`ringdl --generate=KIND` prints this manual page (`man`) or a completion script for `bash`, `zsh` or \
`fish`. All of them, and `--help`, come from the one option table the parser uses.
";

pub(super) const ENGINE: &str = "\
`--engine=auto|uring|portable` is ringdl's own option; the `RINGDL_ENGINE` environment variable \
gives its default. With `auto` (the default) ringdl runs on io_uring where it works, and on a \
portable epoll reactor where it does not: where a seccomp profile (Docker's and containerd's \
default ones), gVisor or `kernel.io_uring_disabled` refuses it, where the kernel lacks an \
operation ringdl uses, where its first operation fails, or where the buffers do not fit \
`RLIMIT_MEMLOCK`. One notice says why. The portable reactor writes the same aligned blocks with \
`O_DIRECT` and keeps the same memory budget; it costs more CPU. `uring` fails instead of falling \
back (exit 1); `portable` never tries io_uring. `ringdl -v` says which one runs.
";

pub(super) const OPTIONS_INTRO: &str = "\
The options are aria2c's, grouped by aria2's tags; an option with several tags is listed under the \
first. A long option takes its value as `--name=VALUE` or `--name VALUE`, a short one as `-xVALUE` or \
`-x VALUE`. A value in brackets may only be attached (`--name=false`, `-Zfalse`); without it the \
option means `true`. A long option may be shortened to any unique prefix. When an option is given \
twice the last one counts, unless it says otherwise. Sizes take a `K` (1024) or `M` (1048576) suffix. \
Options are read, weakest first, from their defaults, the configuration file, the environment and \
the command line.
";

pub(super) const INPUT_FILE: &str = "\
`-i FILE` (`-` for standard input) reads downloads from a file, one per line: the URIs of one \
download on one line, separated by TABs, are mirrors of one file. Lines starting with `#` are \
comments. Lines below a download that start with a space or a TAB set options for that download \
only, as `name=value` with the long option name without its dashes. The `--out` of the command line \
does not apply to downloads from an input file.
";

pub(super) const EXIT_INTRO: &str = "\
ringdl exits with aria2's status codes, so scripts that test them keep working:
";

pub(super) const EXIT_OUTRO: &str = "\
When several downloads fail, the status is that of the last failure. When none failed but some \
were left unfinished, it is 7.
";

/// aria2's exit codes 0 to 32 (its `error_code.h`), in ringdl's words.
pub(super) const EXIT_CODES: [&str; 33] = [
    "Every download finished.",
    "An error with no code of its own: a refused connection, a command line without a URI, an \
     unreadable input or configuration file, io_uring refused with `--engine=uring`.",
    "A connection timed out.",
    "The server answered that the file does not exist (404).",
    "As many \"not found\" answers as `--max-file-not-found` allows were received.",
    "A download stayed slower than `--lowest-speed-limit` and was aborted.",
    "A network error.",
    "Downloads were left unfinished because ringdl was interrupted (Ctrl-C, SIGTERM).",
    "The download had to resume, but the server does not serve ranges.",
    "The disk is full.",
    "The piece length differs from the one in the control file.",
    "The same file was already being downloaded.",
    "A torrent with the same info hash was already being downloaded.",
    "The output file already exists and may be neither overwritten nor renamed.",
    "Renaming the output file failed.",
    "The output file could not be opened.",
    "The output file could not be created or truncated.",
    "Reading or writing a file failed.",
    "A directory could not be created.",
    "A host name could not be resolved.",
    "A Metalink document could not be parsed.",
    "An FTP command failed.",
    "The server's HTTP response was malformed, or not one ringdl could use.",
    "Too many redirects.",
    "HTTP authorization failed.",
    "A bencoded file (a torrent) could not be parsed.",
    "A torrent file is corrupt or incomplete.",
    "A magnet URI is malformed.",
    "An option is unknown, or its value is malformed or out of range.",
    "The server was temporarily unable to serve the request (502, 503).",
    "A JSON-RPC request could not be parsed.",
    "Reserved: aria2 uses it internally and never exits with it.",
    "A checksum did not match.",
];

/// Variables ringdl reads: name, meaning, and the option that does the same (whose support the note
/// follows).
pub(super) const ENVIRONMENT: &[(&str, &str, Option<&str>)] = &[
    (
        "http_proxy",
        "Proxy for HTTP, as `--http-proxy`: `[http://][USER:PASSWORD@]HOST[:PORT]`.",
        Some("http-proxy"),
    ),
    (
        "https_proxy",
        "Proxy for HTTPS, as `--https-proxy`.",
        Some("https-proxy"),
    ),
    (
        "ftp_proxy",
        "Proxy for FTP, as `--ftp-proxy`.",
        Some("ftp-proxy"),
    ),
    (
        "all_proxy",
        "Proxy for every protocol, as `--all-proxy`.",
        Some("all-proxy"),
    ),
    (
        "no_proxy",
        "Comma-separated hosts, domains and networks reached without a proxy, as `--no-proxy`. \
         Like aria2c, ringdl reads only the lower-case names of these five variables; a proxy \
         option in the configuration file is overridden by the variable, one on the command line \
         overrides it.",
        Some("no-proxy"),
    ),
    (
        "HOME",
        "Where the configuration file and `.netrc` are looked for; `${HOME}` in a path option is \
         replaced by it.",
        None,
    ),
    (
        "XDG_CONFIG_HOME",
        "Where the configuration file is looked for when `$HOME/.aria2/aria2.conf` does not exist \
         (`$HOME/.config` when unset).",
        None,
    ),
    (
        crate::store::NO_DIRECT_ENV,
        "Set, ringdl writes through the page cache as if the filesystem had refused `O_DIRECT`, \
         with uncached writes (`RWF_DONTCACHE`) where the kernel has them; set to `writeback`, \
         each write is written back and dropped from the cache by a call of its own. For \
         comparing the ways of writing, or for a filesystem whose `O_DIRECT` is slow.",
        None,
    ),
];

/// Files ringdl reads or writes: path, meaning, the option that governs them.
pub(super) const FILES: &[(&str, &str, &str)] = &[
    (
        "$HOME/.aria2/aria2.conf",
        "The configuration file, read unless `--no-conf` is given; when it does not exist, \
         `${XDG_CONFIG_HOME:-$HOME/.config}/aria2/aria2.conf` is read instead, and `--conf-path` \
         names another file. One option per line as `name=value`, the long name without its \
         dashes; lines starting with `#` are comments. An unknown name or an option of a feature \
         ringdl lacks gets a warning, not an error.",
        "conf-path",
    ),
    (
        "$HOME/.netrc",
        "Logins for hosts, used unless `-n` (`--no-netrc`) is given; `--netrc-path` names another \
         file.",
        "netrc-path",
    ),
    (
        "FILE.aria2",
        "The control file of an unfinished download of FILE, beside it, in aria2's own format: \
         ringdl and aria2c can each continue (`-c`) a download the other started. It is removed \
         when the download completes.",
        "continue",
    ),
];

pub(super) const EXAMPLES: &str = "\
Use ringdl wherever aria2c is typed (in `~/.bashrc`, `~/.zshrc` or fish's `config.fish`):

```
alias aria2c=ringdl
```

Download a large file over HTTPS with 8 connections into `~/Downloads`:

```
ringdl -x8 -s8 -d ~/Downloads https://example.org/images/disk.iso
```

The same file from two mirrors at once (URIs given together are one file):

```
ringdl https://a.example/disk.iso https://b.example/disk.iso
```

Two files, each a download of its own:

```
ringdl -Z https://example.org/a.tar.gz https://example.org/b.tar.gz
```

Every download listed in `list.txt`, three at a time; the indented lines set the directory and the \
name of the download above them:

```
ringdl -i list.txt -j3
```

where `list.txt` holds:

```
https://example.org/one.iso
  dir=/srv/isos
  out=first.iso
https://example.org/two.iso
```

Trust a private certificate authority:

```
ringdl --ca-certificate=my-ca.pem https://intranet.example/report.pdf
```
";

pub(super) const COMPAT_INTRO: &str = "\
ringdl aims to do what aria2c does with the same command line: the same files under the same \
names, the same exit status, and output a person recognises. A differential test suite runs aria2c \
and ringdl side by side to check it; what follows is its record of the differences \
(`compat-tests/KNOWN_DIFFERENCES.md` in ringdl's source).
";
