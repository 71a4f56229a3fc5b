//! Every option that aria2c 1.36 lists in `aria2c --help=#all`, in the same order, with aria2's
//! facts: long and short names, argument kind, value name, "Possible Values", default and tags. The
//! help text is ringdl's own. Options ringdl does not act on yet name the feature they belong to.
//!
//! The facts come from aria2c 1.36.0's own output and were checked by running it; the tests below
//! compare the table with `aria2c --help=#all` whenever aria2c is installed.
use super::defs::{opt, OptDef, ValueKind, MAX_CONN_PER_SERVER};

/// aria2's `*` upper bound.
const ANY: i64 = i64::MAX;
/// aria2's `*` upper bound for sizes.
const ANY_SIZE: u64 = i64::MAX as u64;
const MIB: u64 = 1024 * 1024;
const GIB: u64 = 1024 * MIB;

/// ringdl's own options, which aria2c does not have: listed after aria2c's in `--help`, the manual
/// and the completions (the parser takes them before looking in [`OPTIONS`]).
pub static OWN_OPTIONS: &[OptDef] = &[opt(
    "engine",
    ValueKind::Choice(&["auto", "uring", "portable"]),
    "Which reactor runs the downloads: io_uring, or the portable epoll one",
)
.value_name("ENGINE")
.possible("auto, uring, portable")
.default("auto")
.tags(&["#basic", "#advanced"])
.long(
    "'auto' runs on io_uring where it works and on the portable epoll reactor where it \
        does not (a seccomp profile, a disabled io_uring, an old kernel, a low \
        RLIMIT_MEMLOCK), saying why once. 'uring' fails instead (exit 1). 'portable' never \
        tries io_uring. The RINGDL_ENGINE environment variable gives the default. ringdl -v \
        says which reactor runs.",
)];

pub static OPTIONS: &[OptDef] = &[
    opt("version", ValueKind::Text, "Print the version and exit")
        .short('v')
        .flag()
        .value_name("")
        .tags(&["#basic"]),
    opt(
        "help",
        ValueKind::Text,
        "Print usage and exit; a TAG or KEYWORD picks which options are shown",
    )
    .short('h')
    .optional("#basic")
    .value_name("TAG|KEYWORD")
    .possible(
        "#basic, #advanced, #http, #https, #ftp, #metalink, #bittorrent, #cookie, \
            #hook, #file, #rpc, #checksum, #experimental, #deprecated, #help, #all",
    )
    .default("#basic")
    .tags(&["#basic", "#help"])
    .long(
        "Every option carries tags such as #basic, #http or #file. `--help=#http` \
            lists the options with that tag, `--help=#all` lists every option, and \
            any other word lists the options whose name contains it. A bare --help \
            shows the #basic options.",
    ),
    opt(
        "timeout",
        ValueKind::Int { min: 1, max: 600 },
        "Seconds without any data before a connection is given up",
    )
    .short('t')
    .value_name("SEC")
    .possible("1-600")
    .default("60")
    .tags(&["#http", "#ftp"])
    .input()
    .long(
        "Counts once the connection is up; the time allowed to open it is \
            --connect-timeout.",
    ),
    opt(
        "connect-timeout",
        ValueKind::Int { min: 1, max: 600 },
        "Seconds allowed to establish a connection to a server or proxy",
    )
    .value_name("SEC")
    .possible("1-600")
    .default("60")
    .tags(&["#http", "#ftp"])
    .input()
    .long("Once the connection is up, --timeout applies instead."),
    opt(
        "max-tries",
        ValueKind::Int { min: 0, max: ANY },
        "How many times to try a download; 0 means no limit",
    )
    .short('m')
    .value_name("N")
    .possible("0-*")
    .default("5")
    .tags(&["#http", "#ftp"])
    .input()
    .long(
        "See also --retry-wait for the pause between tries and \
            --max-file-not-found.",
    ),
    opt(
        "auto-save-interval",
        ValueKind::Int { min: 0, max: 600 },
        "Seconds between saves of the .aria2 control file; 0 saves only at the \
            end",
    )
    .value_name("SEC")
    .possible("0-600")
    .default("60")
    .tags(&["#advanced"])
    .long(
        "The control file records progress so that an interrupted download can \
            resume. It is always written when a download stops, whatever this value \
            is.",
    ),
    opt(
        "log",
        ValueKind::Path,
        "Write a log to FILE; '-' writes it to standard output",
    )
    .short('l')
    .value_name("LOG")
    .possible("/path/to/file, -")
    .tags(&["#basic"])
    .long(
        "How much is written is set by --log-level. Without this option no log is \
            kept.",
    ),
    // Default: None here: aria2's default is the current directory, found at run time.
    opt("dir", ValueKind::Path, "Directory to save downloads in")
        .short('d')
        .value_name("DIR")
        .possible("/path/to/directory")
        .tags(&["#basic", "#file"])
        .input()
        .long(
            "Defaults to the current working directory. --out and per-file names are \
            relative to it.",
        ),
    opt(
        "out",
        ValueKind::Path,
        "Name to save the download as, relative to --dir",
    )
    .short('o')
    .value_name("FILE")
    .possible("/path/to/file")
    .tags(&["#basic", "#http", "#ftp", "#file"])
    .input()
    .long(
        "Ignored with -Z/--force-sequential. Entries of an -i input file do not \
            inherit it; give `out=` on the entry's own option lines instead.",
    ),
    opt(
        "split",
        ValueKind::Int { min: 1, max: ANY },
        "How many connections one download uses in total, over all its URIs",
    )
    .short('s')
    .value_name("N")
    .possible("1-*")
    .default("5")
    .tags(&["#basic", "#http", "#ftp"])
    .input()
    .long(
        "With fewer URIs than N, URIs are used more than once to reach N \
            connections; with more, the extra URIs are kept in reserve. Connections \
            to one host are further capped by --max-connection-per-server, and \
            --min-split-size limits how finely a file is cut.",
    ),
    opt(
        "daemon",
        ValueKind::Bool,
        "Detach from the terminal and keep running in the background",
    )
    .short('D')
    .default("false")
    .tags(&["#advanced"])
    .long(
        "The working directory becomes / and standard input, output and error go \
            to /dev/null.",
    ),
    opt(
        "referer",
        ValueKind::Text,
        "Referer header to send; '*' sends each download's own URI",
    )
    .value_name("REFERER")
    .tags(&["#http"])
    .input()
    .long(
        "Applies to every HTTP(S) download. '*' pairs well with \
            -P/--parameterized-uri.",
    ),
    opt(
        "lowest-speed-limit",
        ValueKind::Size {
            min: 0,
            max: ANY_SIZE,
        },
        "Drop a connection whose speed falls to SPEED bytes/s or below; 0 \
            disables",
    )
    .value_name("SPEED")
    .possible("0-*")
    .default("0")
    .tags(&["#http", "#ftp"])
    .input()
    .long(
        "SPEED takes a K or M suffix (1K = 1024, 1M = 1024K). BitTorrent \
            downloads are not affected.",
    ),
    opt(
        "piece-length",
        ValueKind::Size { min: MIB, max: GIB },
        "Size of the pieces HTTP(S)/FTP downloads are cut into",
    )
    .value_name("LENGTH")
    .possible("1048576-1073741824")
    .default("1M")
    .tags(&["#advanced", "#http", "#ftp"])
    .input()
    .long(
        "Splits between connections always fall on a multiple of this length, and \
            it is the unit the .aria2 control file records progress in. Takes a K or \
            M suffix. Ignored for BitTorrent, and for Metalink files that carry \
            piece hashes.",
    ),
    opt(
        "max-overall-download-limit",
        ValueKind::Size {
            min: 0,
            max: ANY_SIZE,
        },
        "Cap on the total download speed in bytes/s; 0 means no cap",
    )
    .value_name("SPEED")
    .possible("0-*")
    .default("0")
    .tags(&["#http", "#ftp", "#bittorrent"])
    .long(
        "Takes a K or M suffix. --max-download-limit caps each download on its \
            own.",
    ),
    opt(
        "max-download-limit",
        ValueKind::Size {
            min: 0,
            max: ANY_SIZE,
        },
        "Cap on each download's speed in bytes/s; 0 means no cap",
    )
    .value_name("SPEED")
    .possible("0-*")
    .default("0")
    .tags(&["#http", "#ftp", "#bittorrent"])
    .input()
    .long(
        "Takes a K or M suffix. --max-overall-download-limit caps all downloads \
            together.",
    ),
    // aria2c accepts -a for this option although its --help does not show it.
    opt(
        "file-allocation",
        ValueKind::Choice(&["none", "prealloc", "trunc", "falloc"]),
        "How disk space is reserved before downloading: none, prealloc, trunc, \
            falloc",
    )
    .short('a')
    .value_name("METHOD")
    .possible("none, prealloc, trunc, falloc")
    .default("prealloc")
    .tags(&["#basic", "#file"])
    .input()
    .long(
        "'none' reserves nothing. 'prealloc' writes out the whole file first, \
            which can take a while for big files. 'falloc' asks the filesystem with \
            posix_fallocate(): almost instant on ext4, btrfs or xfs, but as slow as \
            'prealloc' on ext3 or FAT32. 'trunc' only sets the length with \
            ftruncate(). aria2c also accepts the undocumented short form -a.",
    ),
    opt(
        "no-file-allocation-limit",
        ValueKind::Size {
            min: 0,
            max: ANY_SIZE,
        },
        "Skip file allocation for files smaller than SIZE",
    )
    .value_name("SIZE")
    .possible("0-*")
    .default("5M")
    .tags(&["#advanced", "#file"])
    .input()
    .long("Takes a K or M suffix."),
    opt(
        "allow-overwrite",
        ValueKind::Bool,
        "Start over, overwriting, when the file exists without a control file",
    )
    .default("false")
    .tags(&["#advanced", "#file"])
    .input()
    .long(
        "Otherwise such a file is left alone and the new one is renamed or \
            refused; see --auto-file-renaming.",
    ),
    opt(
        "realtime-chunk-checksum",
        ValueKind::Bool,
        "Check chunks against their checksums while downloading, when known",
    )
    .default("true")
    .tags(&["#metalink", "#checksum"])
    .input()
    .no_effect("it applies to Metalink chunk checksums only")
    .long("Chunk checksums come from Metalink files."),
    opt(
        "check-integrity",
        ValueKind::Bool,
        "Verify the file against piece hashes or a whole-file checksum",
    )
    .short('V')
    .default("false")
    .tags(&["#basic", "#metalink", "#bittorrent", "#file", "#checksum"])
    .input()
    .long(
        "Works for BitTorrent, for Metalink files with checksums, and for \
            HTTP(S)/FTP downloads given --checksum. With piece hashes, damaged parts \
            are found and fetched again. With only a whole-file checksum, the check \
            runs once the file has its full length, and a mismatch restarts the \
            download from scratch. When both exist, piece hashes win.",
    ),
    // Default: aria2's documented form; aria2 prints the expanded home directory.
    opt(
        "netrc-path",
        ValueKind::Path,
        "File to read .netrc credentials from",
    )
    .value_name("FILE")
    .possible("/path/to/file")
    .default("$HOME/.netrc")
    .tags(&[])
    .long(
        "Defaults to .netrc in the home directory. -n/--no-netrc turns netrc off. \
            Only machine entries are used for HTTP: a default entry is ignored, as aria2 does.",
    ),
    opt(
        "continue",
        ValueKind::Bool,
        "Resume a partly downloaded file that has no control file",
    )
    .short('c')
    .default("false")
    .tags(&["#basic", "#http", "#ftp"])
    .input()
    .long(
        "For files started by a browser or another tool that writes from the \
            beginning: the bytes already on disk are kept and the download carries \
            on after them. HTTP(S)/FTP only.",
    ),
    opt(
        "no-netrc",
        ValueKind::Bool,
        "Do not read credentials from the .netrc file",
    )
    .short('n')
    .default("false")
    .tags(&["#http", "#ftp"])
    .input(),
    opt(
        "input-file",
        ValueKind::Path,
        "Download the URIs listed in FILE; '-' reads standard input",
    )
    .short('i')
    .value_name("FILE")
    .possible("/path/to/file, -")
    .tags(&["#basic"])
    .long(
        "One download per line; mirrors of the same file share a line, separated \
            by TABs. Lines that start with whitespace after a URI line set options \
            for that download only, as name=value without the leading --. Lines \
            starting with # are comments. See also --deferred-input.",
    ),
    opt(
        "deferred-input",
        ValueKind::Bool,
        "Read the -i file one entry at a time as downloads start, not all at once",
    )
    .default("false")
    .tags(&["#advanced"])
    .no_effect("ringdl reads input files as it goes")
    .long("Saves memory when the input file is very large."),
    opt(
        "max-concurrent-downloads",
        ValueKind::Int { min: 1, max: ANY },
        "How many downloads run at the same time",
    )
    .short('j')
    .value_name("N")
    .possible("1-*")
    .default("5")
    .tags(&["#basic"])
    .long(
        "Counts every queued URI, torrent and Metalink. See also --split and \
            --optimize-concurrent-downloads.",
    ),
    opt(
        "optimize-concurrent-downloads",
        ValueKind::Text,
        "Adapt the number of parallel downloads to the measured bandwidth",
    )
    .optional("true")
    .value_name("true|false|A:B")
    .possible("true, false, A:B")
    .default("false")
    .tags(&["#advanced"])
    .no_effect("ringdl runs --max-concurrent-downloads downloads at once")
    .long(
        "The count becomes A + B * log10(speed in Mbit/s), using the speed of \
            earlier downloads, and never exceeds --max-concurrent-downloads. `true` \
            uses A=5, B=25; give A:B to choose others.",
    ),
    opt(
        "force-sequential",
        ValueKind::Bool,
        "Download each command-line URI as a file of its own, not as mirrors",
    )
    .short('Z')
    .default("false")
    .tags(&["#basic"])
    .long(
        "Without it, all URIs on the command line are taken as mirrors of a \
            single file. --out is ignored in this mode.",
    ),
    opt(
        "auto-file-renaming",
        ValueKind::Bool,
        "Save as NAME.N.EXT instead when the target file already exists",
    )
    .default("true")
    .tags(&["#advanced", "#file"])
    .input()
    .long(
        "N runs from 1 to 9999 and goes before the extension, if there is one. \
            HTTP(S)/FTP only.",
    ),
    opt(
        "parameterized-uri",
        ValueKind::Bool,
        "Expand {a,b} alternatives and [000-100:2] ranges in URIs",
    )
    .short('P')
    .default("false")
    .tags(&["#advanced"])
    .input()
    .long(
        "http://{sv1,sv2}/f.iso names two mirrors of one file; \
            http://host/img[000-100:2].png counts from 000 to 100 in steps of 2 (the \
            step may be left out). When the expanded URIs are different files, add \
            -Z.",
    ),
    opt(
        "allow-piece-length-change",
        ValueKind::Bool,
        "Carry on when the piece length differs from the control file's",
    )
    .default("false")
    .tags(&["#advanced"])
    .input()
    .long(
        "When false the download is aborted instead. Carrying on loses some \
            recorded progress.",
    ),
    opt(
        "no-conf",
        ValueKind::Bool,
        "Do not read the aria2.conf configuration file",
    )
    .default("false")
    .tags(&["#advanced"]),
    // Default: None here: aria2's default depends on $HOME and $XDG_CONFIG_HOME (see the long
    // help).
    opt(
        "conf-path",
        ValueKind::Path,
        "Read the configuration from PATH instead of the default aria2.conf",
    )
    .value_name("PATH")
    .possible("/path/to/file")
    .tags(&["#advanced"])
    .long(
        "The default is $HOME/.aria2/aria2.conf when it exists, otherwise \
            $XDG_CONFIG_HOME/aria2/aria2.conf ($HOME/.config when XDG_CONFIG_HOME is \
            unset or not absolute). The file has one NAME=VALUE per line; lines \
            starting with # are comments.",
    ),
    opt(
        "stop",
        ValueKind::Int {
            min: 0,
            max: 2147483647,
        },
        "Quit after SEC seconds; 0 disables",
    )
    .value_name("SEC")
    .possible("0-2147483647")
    .default("0")
    .tags(&["#advanced"]),
    opt("quiet", ValueKind::Bool, "Print nothing on the console")
        .short('q')
        .default("false")
        .tags(&["#advanced"]),
    opt(
        "async-dns",
        ValueKind::Bool,
        "Resolve host names asynchronously",
    )
    .default("true")
    .tags(&["#advanced"])
    .input()
    .long(
        "Names are always looked up off the loop. With --async-dns-server, true asks \
            those servers on the ring (falling back to the system resolver); false \
            ignores them.",
    ),
    opt(
        "summary-interval",
        ValueKind::Int {
            min: 0,
            max: 2147483647,
        },
        "Seconds between progress summaries; 0 turns them off",
    )
    .value_name("SEC")
    .possible("0-2147483647")
    .default("60")
    .tags(&["#advanced"]),
    opt(
        "log-level",
        ValueKind::Choice(&["debug", "info", "notice", "warn", "error"]),
        "Lowest level of message written to the --log file",
    )
    .value_name("LEVEL")
    .possible("debug, info, notice, warn, error")
    .default("debug")
    .tags(&["#advanced"]),
    opt(
        "console-log-level",
        ValueKind::Choice(&["debug", "info", "notice", "warn", "error"]),
        "Lowest level of message printed on the console",
    )
    .value_name("LEVEL")
    .possible("debug, info, notice, warn, error")
    .default("notice")
    .tags(&["#advanced"]),
    opt(
        "uri-selector",
        ValueKind::Choice(&["inorder", "feedback", "adaptive"]),
        "How the next mirror is picked: inorder, feedback or adaptive",
    )
    .value_name("SELECTOR")
    .possible("inorder, feedback, adaptive")
    .default("feedback")
    .tags(&["#http", "#ftp"])
    .input()
    .long(
        "'inorder' tries URIs in the order given. 'feedback' prefers the server \
            that was fastest in earlier downloads, which also skips dead mirrors. \
            'adaptive' gives the first connections to the best known mirrors and \
            spends extra ones on mirrors not measured yet. Both use the server \
            performance profile (--server-stat-if, --server-stat-of).",
    ),
    opt(
        "server-stat-timeout",
        ValueKind::Int {
            min: 0,
            max: 2147483647,
        },
        "Seconds after last contact before a server's profile is discarded",
    )
    .value_name("SEC")
    .possible("0-2147483647")
    .default("86400")
    .tags(&["#http", "#ftp"]),
    opt(
        "server-stat-if",
        ValueKind::Path,
        "Load the server performance profile from FILE",
    )
    .value_name("FILE")
    .possible("/path/to/file")
    .tags(&["#http", "#ftp"])
    .long(
        "Mirror selectors such as 'feedback' use it; see --uri-selector. aria2c's \
            profiles are read as they are, and entries older than \
            --server-stat-timeout are dropped.",
    ),
    opt(
        "server-stat-of",
        ValueKind::Path,
        "Save the server performance profile to FILE",
    )
    .value_name("FILE")
    .possible("/path/to/file")
    .tags(&["#http", "#ftp"])
    .long(
        "Written when the run ends, in aria2c's format: each server's last and average \
            speeds and whether it failed. Load it in a later run with --server-stat-if.",
    ),
    opt(
        "remote-time",
        ValueKind::Bool,
        "Give the saved file the server's modification time, when it is known",
    )
    .short('R')
    .default("false")
    .tags(&["#http", "#ftp"])
    .input(),
    opt(
        "max-file-not-found",
        ValueKind::Int { min: 0, max: ANY },
        "Fail after N 'not found' answers without any data; 0 disables",
    )
    .value_name("NUM")
    .possible("0-*")
    .default("0")
    .tags(&["#http", "#ftp"])
    .input()
    .long(
        "Each such answer uses up a try, so --max-tries must allow at least N \
            tries. HTTP(S)/FTP only.",
    ),
    opt(
        "event-poll",
        ValueKind::Choice(&["epoll", "poll", "select"]),
        "Event polling method: epoll, poll or select",
    )
    .value_name("POLL")
    .possible("epoll, poll, select")
    .default("epoll")
    .tags(&["#advanced"])
    .no_effect("ringdl waits on io_uring")
    .long("The choices depend on the platform aria2 was built for."),
    opt(
        "enable-rpc",
        ValueKind::Bool,
        "Run the JSON-RPC server (over HTTP and WebSocket)",
    )
    .default("false")
    .tags(&["#rpc"])
    .long(
        "Set a secret token with --rpc-secret; the port comes from \
            --rpc-listen-port.",
    ),
    opt(
        "rpc-listen-port",
        ValueKind::Int {
            min: 1024,
            max: 65535,
        },
        "TCP port the RPC server listens on",
    )
    .value_name("PORT")
    .possible("1024-65535")
    .default("6800")
    .tags(&["#rpc"]),
    opt(
        "rpc-user",
        ValueKind::Text,
        "User name for the RPC server (deprecated; use --rpc-secret)",
    )
    .value_name("USER")
    .tags(&["#rpc", "#deprecated"]),
    opt(
        "rpc-passwd",
        ValueKind::Text,
        "Password for the RPC server (deprecated; use --rpc-secret)",
    )
    .value_name("PASSWD")
    .tags(&["#rpc", "#deprecated"]),
    opt(
        "rpc-max-request-size",
        ValueKind::Size {
            min: 0,
            max: ANY_SIZE,
        },
        "Largest RPC request accepted; a bigger one is refused (HTTP 413)",
    )
    .value_name("SIZE")
    .possible("0-*")
    .default("2M")
    .tags(&["#rpc"])
    .long("Takes a K or M suffix."),
    opt(
        "rpc-listen-all",
        ValueKind::Bool,
        "Accept RPC connections on every interface, not only loopback",
    )
    .default("false")
    .tags(&["#rpc"]),
    opt(
        "rpc-allow-origin-all",
        ValueKind::Bool,
        "Add 'Access-Control-Allow-Origin: *' to RPC responses",
    )
    .default("false")
    .tags(&["#rpc"]),
    opt(
        "rpc-certificate",
        ValueKind::Path,
        "PEM certificate for the RPC server's TLS",
    )
    .value_name("FILE")
    .possible("/path/to/file")
    .tags(&["#rpc"])
    .long("Its key comes from --rpc-private-key; --rpc-secure turns TLS on."),
    opt(
        "rpc-private-key",
        ValueKind::Path,
        "Unencrypted PEM private key for the RPC server's TLS",
    )
    .value_name("FILE")
    .possible("/path/to/file")
    .tags(&["#rpc"])
    .long("See --rpc-certificate and --rpc-secure."),
    opt(
        "rpc-secure",
        ValueKind::Bool,
        "Serve RPC over TLS (https and wss)",
    )
    .default("false")
    .tags(&["#rpc"])
    .long(
        "The certificate and key come from --rpc-certificate and \
            --rpc-private-key.",
    ),
    opt(
        "rpc-save-upload-metadata",
        ValueKind::Bool,
        "Save torrents and Metalinks uploaded over RPC as files in --dir",
    )
    .default("true")
    .tags(&["#rpc"])
    .input()
    .unsupported("BitTorrent/Metalink")
    .long(
        "Files are named by the SHA-1 of their content plus .torrent or .meta4. \
            When false, downloads added with aria2.addTorrent or aria2.addMetalink \
            are left out of --save-session.",
    ),
    opt(
        "dry-run",
        ValueKind::Bool,
        "Only check that the remote files exist; download nothing",
    )
    .default("false")
    .tags(&["#http", "#ftp"])
    .input()
    .long("Applies to HTTP(S)/FTP downloads; BitTorrent downloads are cancelled."),
    opt(
        "reuse-uri",
        ValueKind::Bool,
        "Use already tried URIs again once no untried ones are left",
    )
    .default("true")
    .tags(&["#http", "#ftp"])
    .input()
    .no_effect(
        "a download's connections take its usable mirrors in turn; aria2c splits a download \
            among its URIs (-s) the same with either value",
    ),
    opt(
        "on-download-start",
        ValueKind::Path,
        "Run COMMAND when a download starts",
    )
    .value_name("COMMAND")
    .possible("/path/to/command")
    .tags(&["#advanced", "#hook"])
    .long(
        "COMMAND gets three arguments: the GID, the number of files, and the path \
            of the first file.",
    ),
    opt(
        "on-download-pause",
        ValueKind::Path,
        "Run COMMAND when a download is paused",
    )
    .value_name("COMMAND")
    .possible("/path/to/command")
    .tags(&["#advanced", "#hook"])
    .long("Arguments as for --on-download-start."),
    opt(
        "on-download-stop",
        ValueKind::Path,
        "Run COMMAND when a download stops, whatever the outcome",
    )
    .value_name("COMMAND")
    .possible("/path/to/command")
    .tags(&["#advanced", "#hook"])
    .long(
        "Skipped when --on-download-complete or --on-download-error covers the \
            outcome. Arguments as for --on-download-start.",
    ),
    opt(
        "on-download-complete",
        ValueKind::Path,
        "Run COMMAND when a download completes",
    )
    .value_name("COMMAND")
    .possible("/path/to/command")
    .tags(&["#advanced", "#hook"])
    .long("Arguments as for --on-download-start. See also --on-download-stop."),
    opt(
        "on-download-error",
        ValueKind::Path,
        "Run COMMAND when a download fails",
    )
    .value_name("COMMAND")
    .possible("/path/to/command")
    .tags(&["#advanced", "#hook"])
    .long("Arguments as for --on-download-start. See also --on-download-stop."),
    opt(
        "interface",
        ValueKind::Text,
        "Bind connections to an interface, IP address or host name",
    )
    .value_name("INTERFACE")
    .possible("interface, IP address, hostname")
    .tags(&["#advanced"]),
    opt(
        "multiple-interface",
        ValueKind::Text,
        "Spread connections over a comma-separated list of interfaces",
    )
    .value_name("INTERFACES")
    .possible("interface, IP address, hostname")
    .tags(&["#advanced"])
    .long(
        "Entries are interface names, IP addresses or host names; requests are \
            shared among them to combine links. Ignored when --interface is given.",
    ),
    opt("disable-ipv6", ValueKind::Bool, "Do not use IPv6")
        .default("false")
        .tags(&["#advanced"]),
    opt(
        "human-readable",
        ValueKind::Bool,
        "Show sizes and speeds with units such as 1.2Ki and 3.4Mi in the readout",
    )
    .default("true")
    .tags(&["#advanced"]),
    opt(
        "remove-control-file",
        ValueKind::Bool,
        "Delete the control file before starting",
    )
    .default("false")
    .tags(&["#advanced"])
    .input()
    .long(
        "Together with --allow-overwrite=true, every download starts from \
            scratch: useful behind proxies that break resuming.",
    ),
    opt(
        "always-resume",
        ValueKind::Bool,
        "Abort instead of starting over when a download cannot be resumed",
    )
    .default("true")
    .tags(&["#advanced", "#http", "#ftp"])
    .input()
    .long(
        "When false, a download starts again from scratch once all its URIs, or \
            --max-resume-failure-tries of them, turn out not to support resuming.",
    ),
    opt(
        "max-resume-failure-tries",
        ValueKind::Int { min: 0, max: ANY },
        "With --always-resume=false: start over after N URIs fail to resume",
    )
    .value_name("N")
    .possible("0-*")
    .default("0")
    .tags(&["#advanced", "#http", "#ftp"])
    .input()
    .long("0 waits until every URI has failed to resume."),
    opt(
        "save-session",
        ValueKind::Path,
        "On exit, save failed and unfinished downloads to FILE",
    )
    .value_name("FILE")
    .possible("/path/to/file")
    .tags(&["#advanced"])
    .long(
        "Feed the file back with -i to carry on later. Removed downloads, and \
            torrents or Metalinks uploaded over RPC whose metadata could not be \
            saved, are left out.",
    ),
    // aria2c stops at 16 ("Possible Values: 1-16"); ringdl deliberately lifts the cap.
    opt(
        "max-connection-per-server",
        ValueKind::Int {
            min: 1,
            max: MAX_CONN_PER_SERVER,
        },
        "Most connections opened to one server for one download",
    )
    .short('x')
    .value_name("NUM")
    .possible("1-64")
    .default("1")
    .tags(&["#basic", "#http", "#ftp"])
    .input()
    .long("aria2c stops at 16; ringdl accepts up to 64."),
    opt(
        "min-split-size",
        ValueKind::Size { min: MIB, max: GIB },
        "Never split a range smaller than twice this size between connections",
    )
    .short('k')
    .value_name("SIZE")
    .possible("1048576-1073741824")
    .default("20M")
    .tags(&["#basic", "#http", "#ftp"])
    .input()
    .long(
        "A 20 MiB file with SIZE 10M can be fetched over two connections; with \
            SIZE 15M it uses one. Takes a K or M suffix.",
    ),
    opt(
        "conditional-get",
        ValueKind::Bool,
        "Download only when the remote file is newer than the local one",
    )
    .default("false")
    .tags(&["#advanced", "#http"])
    .input()
    .long(
        "Compares with the local file's modification time through an \
            If-Modified-Since request. HTTP(S) only, and aria2 applies it in limited \
            cases (see its manual).",
    ),
    // Deprecated in aria2; it has no default.
    opt(
        "enable-async-dns6",
        ValueKind::Bool,
        "Also look up IPv6 addresses in the asynchronous resolver (deprecated)",
    )
    .tags(&["#advanced", "#deprecated"])
    .input()
    .long(
        "Applies to lookups through --async-dns-server (the system resolver returns \
            what it has). Has no effect with --async-dns=false or --disable-ipv6.",
    ),
    opt(
        "max-download-result",
        ValueKind::Int { min: 0, max: ANY },
        "How many finished downloads' results are kept in memory",
    )
    .value_name("NUM")
    .possible("0-*")
    .default("1000")
    .tags(&["#advanced"])
    .long(
        "Results of completed, failed and removed downloads are kept first in, \
            first out; 0 keeps none. Unfinished downloads are kept anyway; see \
            --keep-unfinished-download-result.",
    ),
    opt(
        "retry-wait",
        ValueKind::Int { min: 0, max: 600 },
        "Seconds to wait between tries",
    )
    .value_name("SEC")
    .possible("0-600")
    .default("0")
    .tags(&["#http", "#ftp"])
    .input()
    .long("Above 0, an HTTP 503 answer is retried as well."),
    opt(
        "async-dns-server",
        ValueKind::Text,
        "DNS servers for the asynchronous resolver, comma-separated",
    )
    .value_name("IPADDRESS[,...]")
    .tags(&["#advanced"])
    .long(
        "Used instead of the system resolver: names are looked up by these servers, \
            in turn, over UDP on ringdl's own ring. IPv4 and IPv6 addresses both work, \
            each optionally with a port (192.0.2.1:5353, [2001:db8::1]:5353). When no \
            server gives an address, the system resolver is asked.",
    ),
    // Documented as [=true|false], but aria2c 1.36 takes a required argument.
    opt(
        "show-console-readout",
        ValueKind::Bool,
        "Show the one-line progress readout",
    )
    .required()
    .default("true")
    .tags(&["#advanced"])
    .long(
        "Unlike the other switches this one needs its value: write \
            --show-console-readout=false. A bare --show-console-readout takes the \
            next argument as its value.",
    ),
    opt(
        "stream-piece-selector",
        ValueKind::Choice(&["default", "inorder", "random", "geom"]),
        "Which part of a file to fetch next: default, inorder, random, geom",
    )
    .value_name("SELECTOR")
    .possible("default, inorder, random, geom")
    .default("default")
    .tags(&["#http", "#ftp"])
    .input()
    .no_effect("ringdl splits and orders ranges its own way")
    .long(
        "'default' keeps the number of new connections low. 'inorder' fetches \
            from the start of the file first, so media can play while it downloads. \
            'random' picks pieces at random. 'geom' starts at the beginning like \
            'inorder' but leaves growing gaps, so it opens fewer connections while \
            still getting the start early. All of them respect --min-split-size.",
    ),
    opt(
        "truncate-console-readout",
        ValueKind::Bool,
        "Cut the progress readout to fit on one line",
    )
    .default("true")
    .tags(&["#advanced"])
    .no_effect(
        "on a terminal ringdl draws one bar per download to the terminal's width; off a \
            terminal, as aria2c, the readout lines are never cut",
    ),
    opt(
        "pause",
        ValueKind::Bool,
        "Add downloads paused; only with --enable-rpc",
    )
    .default("false")
    .tags(&["#advanced", "#rpc"])
    .input(),
    opt(
        "download-result",
        ValueKind::Choice(&["default", "full", "hide"]),
        "How the Download Results table is printed at the end",
    )
    .value_name("OPT")
    .possible("default, full, hide")
    .default("default")
    .tags(&["#advanced"])
    .long(
        "'default' prints GID, status, average speed and the path or URI of the \
            first file. 'full' adds the progress percentage and prints a row per \
            file. 'hide' prints no table.",
    ),
    opt(
        "hash-check-only",
        ValueKind::Bool,
        "Stop after the --check-integrity hash check, complete or not",
    )
    .default("false")
    .tags(&[
        "#advanced",
        "#metalink",
        "#bittorrent",
        "#file",
        "#checksum",
    ])
    .input()
    .long(
        "For an HTTP(S) download, as aria2c: the server is asked for the file's length \
            and the file found (or made) as for a download, then the download stops \
            without fetching (not complete, exit 1). A whole file checked against \
            --checksum is checked, and fetched again if wrong, as without it.",
    ),
    opt(
        "checksum",
        ValueKind::Text,
        "Expected checksum of the file, as TYPE=HEXDIGEST",
    )
    .value_name("TYPE=DIGEST")
    .possible("HASH_TYPE=HEX_DIGEST")
    .tags(&["#http", "#ftp", "#checksum"])
    .input()
    .long(
        "For example sha-256=<64 hex digits>. The types aria2 knows (md5, sha-1, \
            sha-224, sha-256, sha-384, sha-512, adler32) are listed by `aria2c -v`. \
            HTTP(S)/FTP downloads only.",
    ),
    opt(
        "stop-with-process",
        ValueKind::Int { min: 0, max: ANY },
        "Quit once process PID is no longer running",
    )
    .value_name("PID")
    .possible("0-*")
    .tags(&["#advanced"])
    .long(
        "A parent process can pass its own PID so that the download stops when \
            the parent exits.",
    ),
    opt(
        "enable-mmap",
        ValueKind::Bool,
        "Map files into memory to write them (experimental)",
    )
    .default("false")
    .tags(&["#advanced", "#experimental"])
    .input()
    .no_effect("ringdl writes with O_DIRECT from its own aligned blocks")
    .long("See --max-mmap-limit for the size limit."),
    opt(
        "force-save",
        ValueKind::Bool,
        "Keep completed and removed downloads in the --save-session file too",
    )
    .default("false")
    .tags(&["#advanced"])
    .input()
    .long(
        "Their control files are kept as well. Useful for BitTorrent seeding, \
            which counts as completed.",
    ),
    opt(
        "save-not-found",
        ValueKind::Bool,
        "Keep downloads whose file was not found in the --save-session file",
    )
    .default("true")
    .tags(&["#advanced"])
    .input()
    .long("Their control files are kept as well."),
    opt(
        "disk-cache",
        ValueKind::Size {
            min: 0,
            max: ANY_SIZE,
        },
        "Memory used to cache downloaded data before it is written; 0 disables",
    )
    .value_name("SIZE")
    .possible("0-*")
    .default("16M")
    .tags(&["#advanced"])
    .no_effect("ringdl writes with O_DIRECT from its own aligned blocks")
    .long(
        "One cache serves all downloads. Writing larger blocks in file order cuts \
            disk I/O, and cached data need not be read back for hash checks. Takes a \
            K or M suffix.",
    ),
    opt(
        "gid",
        ValueKind::Text,
        "GID of the download, as 16 hex digits",
    )
    .value_name("GID")
    .tags(&["#advanced"])
    .input()
    .long(
        "The GID names a download in RPC calls and session files. Leading zeros \
            count, all zeros is reserved, and it must not clash with another \
            download. Mostly used to restore a saved session; otherwise one is \
            generated.",
    ),
    opt(
        "save-session-interval",
        ValueKind::Int { min: 0, max: ANY },
        "Also save the --save-session file every SEC seconds; 0 only at exit",
    )
    .value_name("SEC")
    .possible("0-*")
    .default("0")
    .tags(&["#advanced"]),
    opt(
        "enable-color",
        ValueKind::Bool,
        "Use colour on the console when it is a terminal",
    )
    .default("true")
    .tags(&["#advanced"]),
    opt(
        "rpc-secret",
        ValueKind::Text,
        "Secret token that RPC clients must send",
    )
    .value_name("TOKEN")
    .tags(&["#rpc"]),
    opt(
        "dscp",
        ValueKind::Int { min: 0, max: ANY },
        "DSCP value set on outgoing BitTorrent packets, for QoS",
    )
    .value_name("DSCP")
    .possible("0-*")
    .default("0")
    .tags(&["#advanced"])
    .no_effect("aria2c sets it on BitTorrent traffic only, which ringdl does not have yet")
    .long(
        "Only the DSCP bits of the TOS field are set. Divide values taken from \
            <netinet/ip.h> by 4; use values from RFCs or vendor documentation \
            unchanged.",
    ),
    opt(
        "pause-metadata",
        ValueKind::Bool,
        "Pause downloads created from metadata; only with --enable-rpc",
    )
    .default("false")
    .tags(&["#advanced", "#rpc"])
    .input()
    .long(
        "Metadata downloads are .torrent files, magnet-link metadata and Metalink \
            files; the downloads they lead to start paused.",
    ),
    opt(
        "rlimit-nofile",
        ValueKind::Int { min: 1, max: ANY },
        "Raise the soft limit on open files to NUM",
    )
    .value_name("NUM")
    .possible("1-*")
    .default("1024")
    .tags(&["#advanced"])
    .no_effect("ringdl needs few descriptors: one per connection and file")
    .long(
        "Never lowers the limit or exceeds the hard limit; does nothing where the \
            system lacks it.",
    ),
    opt(
        "min-tls-version",
        ValueKind::Choice(&["TLSv1.1", "TLSv1.2", "TLSv1.3"]),
        "Oldest TLS version allowed: TLSv1.1, TLSv1.2 or TLSv1.3",
    )
    .value_name("VERSION")
    .possible("TLSv1.1, TLSv1.2, TLSv1.3")
    .default("TLSv1.2")
    .tags(&["#advanced"]),
    opt(
        "socket-recv-buffer-size",
        ValueKind::Size {
            min: 0,
            max: 16 * MIB,
        },
        "Socket receive buffer (SO_RCVBUF) in bytes; 0 keeps the system's",
    )
    .value_name("SIZE")
    .possible("0-16777216")
    .default("0")
    .tags(&["#advanced"])
    .no_effect("ringdl leaves socket buffers to the kernel")
    .long("Takes a K or M suffix; at most 16M."),
    opt(
        "max-mmap-limit",
        ValueKind::Size {
            min: 0,
            max: ANY_SIZE,
        },
        "Largest download, by total file size, that --enable-mmap applies to",
    )
    .value_name("SIZE")
    .possible("0-*")
    .default("9223372036854775807")
    .tags(&["#advanced"])
    .input()
    .no_effect("ringdl writes with O_DIRECT from its own aligned blocks")
    .long(
        "The size is the sum of all files in the download; bigger downloads are \
            not memory-mapped. Takes a K or M suffix.",
    ),
    opt(
        "stderr",
        ValueKind::Bool,
        "Print console output on standard error instead of standard output",
    )
    .default("false")
    .tags(&["#advanced"]),
    opt(
        "keep-unfinished-download-result",
        ValueKind::Bool,
        "Keep unfinished downloads' results past --max-download-result",
    )
    .default("true")
    .tags(&["#advanced"])
    .long(
        "Makes sure every unfinished download reaches the --save-session file; \
            there is no upper bound on how many are kept.",
    ),
    opt("ftp-user", ValueKind::Text, "FTP user name, for every URI")
        .value_name("USER")
        .tags(&["#basic", "#ftp"])
        .input(),
    opt("ftp-passwd", ValueKind::Text, "FTP password, for every URI")
        .value_name("PASSWD")
        .tags(&["#basic", "#ftp"])
        .input(),
    opt(
        "ftp-type",
        ValueKind::Choice(&["binary", "ascii"]),
        "FTP transfer type: binary or ascii",
    )
    .value_name("TYPE")
    .possible("binary, ascii")
    .default("binary")
    .tags(&["#ftp"])
    .input(),
    opt(
        "ftp-pasv",
        ValueKind::Bool,
        "Use FTP passive mode; false uses active mode",
    )
    .short('p')
    .default("true")
    .tags(&["#ftp"])
    .input(),
    opt(
        "ftp-reuse-connection",
        ValueKind::Bool,
        "Reuse FTP connections",
    )
    .default("true")
    .tags(&["#ftp"])
    .input(),
    opt(
        "ssh-host-key-md",
        ValueKind::Text,
        "Expected SFTP host key fingerprint, as TYPE=HEXDIGEST",
    )
    .value_name("TYPE=DIGEST")
    .possible("HASH_TYPE=HEX_DIGEST")
    .tags(&["#ftp"])
    .input()
    .long(
        "TYPE is sha-1, md5 or sha-256 (the digest of the key's wire form, as `ssh-keygen -l -E md5` \
         shows it). Without it the key is checked against ~/.ssh/known_hosts: a changed key is \
         refused, a host not there yet is added (OpenSSH's StrictHostKeyChecking=accept-new).",
    ),
    opt(
        "http-user",
        ValueKind::Text,
        "User name for HTTP authentication, for every URI",
    )
    .value_name("USER")
    .tags(&["#basic", "#http"])
    .input(),
    opt(
        "http-passwd",
        ValueKind::Text,
        "Password for HTTP authentication, for every URI",
    )
    .value_name("PASSWD")
    .tags(&["#basic", "#http"])
    .input(),
    // Default: aria2/<version>. ringdl presents itself as aria2 1.37.0, as src/http/request.rs
    // does; the installed aria2c 1.36 prints aria2/1.36.0.
    opt(
        "user-agent",
        ValueKind::Text,
        "User-Agent header sent to servers",
    )
    .short('U')
    .value_name("USER_AGENT")
    .default("aria2/1.37.0")
    .tags(&["#http"])
    .input(),
    opt(
        "load-cookies",
        ValueKind::Path,
        "Load cookies from FILE (Firefox 3 or Netscape/Mozilla format)",
    )
    .value_name("FILE")
    .possible("/path/to/file")
    .tags(&["#basic", "#http", "#cookie"]),
    opt(
        "save-cookies",
        ValueKind::Path,
        "Save cookies to FILE in Netscape/Mozilla format",
    )
    .value_name("FILE")
    .possible("/path/to/file")
    .tags(&["#http", "#cookie"])
    .long(
        "An existing file is replaced. Session cookies are saved too, with an \
            expiry of 0.",
    ),
    opt(
        "enable-http-keep-alive",
        ValueKind::Bool,
        "Keep HTTP/1.1 connections open for reuse",
    )
    .default("true")
    .tags(&["#http"])
    .input(),
    opt(
        "enable-http-pipelining",
        ValueKind::Bool,
        "Send pipelined HTTP/1.1 requests",
    )
    .default("false")
    .tags(&["#http"])
    .input()
    .no_effect("ringdl sends one request at a time on a connection, which servers answer the same"),
    opt(
        "header",
        ValueKind::Text,
        "Extra request header; may be given several times",
    )
    .value_name("HEADER")
    .tags(&["#http"])
    .cumulative()
    .input()
    .long("Repeat it to add several headers: --header='X-A: 1' --header='X-B: 2'."),
    opt(
        "certificate",
        ValueKind::Path,
        "Client certificate (PEM) to present to HTTPS servers",
    )
    .value_name("FILE")
    .possible("/path/to/file")
    .tags(&["#http", "#https"])
    .long("Its key goes in --private-key."),
    opt(
        "private-key",
        ValueKind::Path,
        "Unencrypted PEM private key for --certificate",
    )
    .value_name("FILE")
    .possible("/path/to/file")
    .tags(&["#http", "#https"]),
    // Default: None here: aria2's default is the CA bundle fixed when it was built (on Debian
    // /etc/ssl/certs/ca-certificates.crt).
    opt(
        "ca-certificate",
        ValueKind::Path,
        "PEM file of certificate authorities to trust instead of the system's",
    )
    .value_name("FILE")
    .possible("/path/to/file")
    .tags(&["#http", "#https"])
    .long(
        "The file may hold several certificates. Whether they are checked at all \
            is set by --check-certificate.",
    ),
    opt(
        "check-certificate",
        ValueKind::Bool,
        "Verify the server's certificate against the trusted authorities",
    )
    .default("true")
    .tags(&["#http", "#https"])
    .long("The authorities are the system's, or those in --ca-certificate."),
    opt(
        "use-head",
        ValueKind::Bool,
        "Make the first request to a server a HEAD request",
    )
    .default("false")
    .tags(&["#http"])
    .input(),
    opt(
        "http-auth-challenge",
        ValueKind::Bool,
        "Send HTTP credentials only once the server asks for them",
    )
    .default("false")
    .tags(&["#http"])
    .input()
    .long(
        "When false they go with every request. Credentials written in the URI \
            are always sent.",
    ),
    opt(
        "http-no-cache",
        ValueKind::Bool,
        "Ask for a fresh copy with Cache-Control and Pragma: no-cache",
    )
    .default("false")
    .tags(&["#http"])
    .input()
    .long(
        "When false these headers are not sent, and --header can add a \
            Cache-Control of your own.",
    ),
    opt(
        "no-want-digest-header",
        ValueKind::Bool,
        "Leave the Want-Digest header out of requests",
    )
    .default("false")
    .tags(&["#http"])
    .input(),
    opt(
        "http-accept-gzip",
        ValueKind::Bool,
        "Accept gzip or deflate encoded responses and decode them",
    )
    .default("false")
    .tags(&["#http"])
    .input()
    .long(
        "Sends 'Accept-Encoding: deflate, gzip' and inflates responses whose \
            Content-Encoding is gzip or deflate.",
    ),
    opt(
        "content-disposition-default-utf8",
        ValueKind::Bool,
        "Read quoted Content-Disposition file names as UTF-8",
    )
    .default("false")
    .tags(&["#advanced", "#http"])
    .input()
    .long("Instead of ISO-8859-1. The extended filename* parameter is not affected."),
    opt("http-proxy", ValueKind::Text, "Proxy for HTTP downloads")
        .value_name("PROXY")
        .possible("[http://][USER:PASSWORD@]HOST[:PORT]")
        .tags(&["#http"])
        .input()
        .long(
            "Written [http://][USER:PASSWORD@]HOST[:PORT]. An empty value cancels a \
            proxy set earlier, for example in aria2.conf. See also --all-proxy.",
        ),
    opt("https-proxy", ValueKind::Text, "Proxy for HTTPS downloads")
        .value_name("PROXY")
        .possible("[http://][USER:PASSWORD@]HOST[:PORT]")
        .tags(&["#http", "#https"])
        .input()
        .long(
            "Written [http://][USER:PASSWORD@]HOST[:PORT]. An empty value cancels a \
            proxy set earlier, for example in aria2.conf. See also --all-proxy.",
        ),
    opt("ftp-proxy", ValueKind::Text, "Proxy for FTP downloads")
        .value_name("PROXY")
        .possible("[http://][USER:PASSWORD@]HOST[:PORT]")
        .tags(&["#ftp"])
        .input()
        .long(
            "Written [http://][USER:PASSWORD@]HOST[:PORT]. An ftp:// download goes to an HTTP \
            proxy as GET ftp://... (the proxy speaks FTP); with --proxy-method=tunnel, or a \
            socks5:// proxy, its commands and each data connection go through tunnels (passive \
            mode only). ftps://, ftpes:// and sftp:// always take a tunnel. An empty value \
            cancels a proxy set earlier, for example in aria2.conf. See also --all-proxy.",
        ),
    opt("all-proxy", ValueKind::Text, "Proxy for every protocol")
        .value_name("PROXY")
        .possible("[http://][USER:PASSWORD@]HOST[:PORT]")
        .tags(&["#http", "#https", "#ftp"])
        .input()
        .long(
            "Written [http://][USER:PASSWORD@]HOST[:PORT]. --http-proxy, \
            --https-proxy and --ftp-proxy override it for their protocol. An empty \
            value cancels a proxy set earlier.",
        ),
    opt(
        "no-proxy",
        ValueKind::Text,
        "Hosts, domains and networks reached without a proxy, comma-separated",
    )
    .value_name("DOMAINS")
    .possible("HOSTNAME,DOMAIN,NETWORK/CIDR")
    .tags(&["#http", "#https", "#ftp"])
    .input()
    .long("Networks may carry a CIDR suffix, such as 192.168.0.0/16."),
    opt(
        "proxy-method",
        ValueKind::Choice(&["get", "tunnel"]),
        "How requests pass a proxy: get or tunnel",
    )
    .value_name("METHOD")
    .possible("get, tunnel")
    .default("get")
    .tags(&["#http", "#ftp"])
    .input()
    .long(
        "'get' hands the request to the proxy; 'tunnel' opens a CONNECT tunnel \
            through it.",
    ),
    opt(
        "http-proxy-user",
        ValueKind::Text,
        "User name for --http-proxy",
    )
    .value_name("USER")
    .tags(&["#http"])
    .input(),
    opt(
        "http-proxy-passwd",
        ValueKind::Text,
        "Password for --http-proxy",
    )
    .value_name("PASSWD")
    .tags(&["#http"])
    .input(),
    opt(
        "https-proxy-user",
        ValueKind::Text,
        "User name for --https-proxy",
    )
    .value_name("USER")
    .tags(&["#http", "#https"])
    .input(),
    opt(
        "https-proxy-passwd",
        ValueKind::Text,
        "Password for --https-proxy",
    )
    .value_name("PASSWD")
    .tags(&["#http", "#https"])
    .input(),
    opt(
        "ftp-proxy-user",
        ValueKind::Text,
        "User name for --ftp-proxy",
    )
    .value_name("USER")
    .tags(&["#ftp"])
    .input(),
    opt(
        "ftp-proxy-passwd",
        ValueKind::Text,
        "Password for --ftp-proxy",
    )
    .value_name("PASSWD")
    .tags(&["#ftp"])
    .input(),
    opt(
        "all-proxy-user",
        ValueKind::Text,
        "User name for --all-proxy",
    )
    .value_name("USER")
    .tags(&["#http", "#https", "#ftp"])
    .input(),
    opt(
        "all-proxy-passwd",
        ValueKind::Text,
        "Password for --all-proxy",
    )
    .value_name("PASSWD")
    .tags(&["#http", "#https", "#ftp"])
    .input(),
    opt(
        "show-files",
        ValueKind::Bool,
        "List the files in a .torrent, .meta4 or .metalink file and exit",
    )
    .short('S')
    .default("false")
    .tags(&["#basic", "#metalink", "#bittorrent"]),
    opt(
        "max-overall-upload-limit",
        ValueKind::Size {
            min: 0,
            max: ANY_SIZE,
        },
        "Cap on the total upload speed in bytes/s; 0 means no cap",
    )
    .value_name("SPEED")
    .possible("0-*")
    .default("0")
    .tags(&["#basic", "#bittorrent"])
    .unsupported("BitTorrent")
    .long("Takes a K or M suffix. --max-upload-limit caps each torrent on its own."),
    opt(
        "max-upload-limit",
        ValueKind::Size {
            min: 0,
            max: ANY_SIZE,
        },
        "Cap on each torrent's upload speed in bytes/s; 0 means no cap",
    )
    .short('u')
    .value_name("SPEED")
    .possible("0-*")
    .default("0")
    .tags(&["#basic", "#bittorrent"])
    .input()
    .unsupported("BitTorrent")
    .long(
        "Takes a K or M suffix. --max-overall-upload-limit caps all torrents \
            together.",
    ),
    opt(
        "torrent-file",
        ValueKind::Path,
        "Path of a .torrent file to download",
    )
    .short('T')
    .value_name("TORRENT_FILE")
    .possible("/path/to/file")
    .tags(&["#basic", "#bittorrent"])
    .unsupported("BitTorrent"),
    opt(
        "listen-port",
        ValueKind::Text,
        "TCP ports for BitTorrent, such as 6881,6885 or 6881-6999",
    )
    .value_name("PORT...")
    .possible("1024-65535")
    .default("6881-6999")
    .tags(&["#basic", "#bittorrent"])
    .unsupported("BitTorrent"),
    opt(
        "follow-torrent",
        ValueKind::Choice(&["true", "mem", "false"]),
        "What to do with a downloaded .torrent: true, mem or false",
    )
    .value_name("true|false|mem")
    .possible("true, mem, false")
    .default("true")
    .tags(&["#bittorrent"])
    .input()
    .unsupported("BitTorrent")
    .long(
        "'true' goes on to download the files it describes; 'mem' does too but \
            keeps the .torrent in memory only; 'false' just saves it. A file counts \
            as a torrent by its .torrent suffix or the application/x-bittorrent \
            content type.",
    ),
    opt(
        "select-file",
        ValueKind::Text,
        "Indexes of the files to download, such as 3,6 or 1-5",
    )
    .value_name("INDEX...")
    .possible("1-1048576")
    .tags(&["#metalink", "#bittorrent"])
    .input()
    .long(
        "--show-files prints the indexes. With Metalink, indexes depend on the \
            --metalink-* filters.",
    ),
    opt(
        "seed-time",
        ValueKind::Float {
            min: 0.0,
            max: f64::MAX,
        },
        "Minutes to keep seeding after completion (fractions allowed)",
    )
    .value_name("MINUTES")
    .possible("0.0-*")
    .tags(&["#bittorrent"])
    .input()
    .unsupported("BitTorrent")
    .long(
        "Seeding ends when this or --seed-ratio is reached, whichever comes \
            first.",
    ),
    opt(
        "seed-ratio",
        ValueKind::Float {
            min: 0.0,
            max: f64::MAX,
        },
        "Keep seeding until the share ratio reaches RATIO",
    )
    .value_name("RATIO")
    .possible("0.0-*")
    .default("1.0")
    .tags(&["#bittorrent"])
    .input()
    .unsupported("BitTorrent")
    .long(
        "0.0 seeds regardless of ratio; 1.0 or more is considerate. With \
            --seed-time, seeding ends at whichever limit is met first.",
    ),
    // Default: A2-<major>-<minor>-<micro>-, as for --user-agent.
    opt(
        "peer-id-prefix",
        ValueKind::Text,
        "Start of the 20-byte BitTorrent peer ID",
    )
    .value_name("PEER_ID_PREFIX")
    .default("A2-1-37-0-")
    .tags(&["#bittorrent"])
    .unsupported("BitTorrent")
    .long(
        "A longer prefix is cut to 20 bytes; a shorter one is padded with random \
            bytes.",
    ),
    // Default: aria2/<version>, as for --user-agent.
    opt(
        "peer-agent",
        ValueKind::Text,
        "Client name sent in the BitTorrent extended handshake",
    )
    .value_name("PEER_AGENT")
    .default("aria2/1.37.0")
    .tags(&["#bittorrent"])
    .unsupported("BitTorrent"),
    opt(
        "enable-peer-exchange",
        ValueKind::Bool,
        "Use the BitTorrent Peer Exchange extension",
    )
    .default("true")
    .tags(&["#bittorrent"])
    .input()
    .unsupported("BitTorrent"),
    opt(
        "enable-dht",
        ValueKind::Bool,
        "Use the IPv4 DHT and UDP trackers",
    )
    .default("true")
    .tags(&["#basic", "#bittorrent"])
    .unsupported("BitTorrent")
    .long("Torrents marked private never use the DHT."),
    opt(
        "dht-listen-port",
        ValueKind::Text,
        "UDP ports for the DHT and UDP trackers, such as 6881,6885 or 6881-6999",
    )
    .value_name("PORT...")
    .possible("1024-65535")
    .default("6881-6999")
    .tags(&["#basic", "#bittorrent"])
    .unsupported("BitTorrent"),
    opt(
        "dht-entry-point",
        ValueKind::Text,
        "HOST:PORT to join the IPv4 DHT through",
    )
    .value_name("HOST:PORT")
    .possible("HOST:PORT")
    .tags(&["#bittorrent"])
    .unsupported("BitTorrent"),
    // Default: None here: aria2's default depends on $HOME and $XDG_CACHE_HOME (see the long
    // help).
    opt(
        "dht-file-path",
        ValueKind::Path,
        "File holding the IPv4 DHT routing table",
    )
    .value_name("PATH")
    .possible("/path/to/file")
    .tags(&["#bittorrent"])
    .unsupported("BitTorrent")
    .long(
        "The default is $HOME/.aria2/dht.dat when it exists, otherwise \
            $XDG_CACHE_HOME/aria2/dht.dat ($HOME/.cache when XDG_CACHE_HOME is unset \
            or not absolute).",
    ),
    opt("enable-dht6", ValueKind::Bool, "Use the IPv6 DHT")
        .default("false")
        .tags(&["#basic", "#bittorrent"])
        .unsupported("BitTorrent")
        .long("The port comes from --dht-listen-port; see also --dht-listen-addr6."),
    opt(
        "dht-listen-addr6",
        ValueKind::Text,
        "Global unicast IPv6 address for the IPv6 DHT socket",
    )
    .value_name("ADDR")
    .tags(&["#basic", "#bittorrent"])
    .unsupported("BitTorrent"),
    opt(
        "dht-entry-point6",
        ValueKind::Text,
        "HOST:PORT to join the IPv6 DHT through",
    )
    .value_name("HOST:PORT")
    .possible("HOST:PORT")
    .tags(&["#bittorrent"])
    .unsupported("BitTorrent"),
    // Default: None here: aria2's default depends on $HOME and $XDG_CACHE_HOME (see the long
    // help).
    opt(
        "dht-file-path6",
        ValueKind::Path,
        "File holding the IPv6 DHT routing table",
    )
    .value_name("PATH")
    .possible("/path/to/file")
    .tags(&["#bittorrent"])
    .unsupported("BitTorrent")
    .long(
        "The default is $HOME/.aria2/dht6.dat when it exists, otherwise \
            $XDG_CACHE_HOME/aria2/dht6.dat ($HOME/.cache when XDG_CACHE_HOME is \
            unset or not absolute).",
    ),
    opt(
        "bt-min-crypto-level",
        ValueKind::Choice(&["plain", "arc4"]),
        "Weakest peer encryption accepted: plain or arc4",
    )
    .value_name("plain|arc4")
    .possible("plain, arc4")
    .default("plain")
    .tags(&["#bittorrent"])
    .input()
    .unsupported("BitTorrent")
    .long(
        "When a peer offers several methods, the weakest one that meets this \
            level is used.",
    ),
    opt(
        "bt-require-crypto",
        ValueKind::Bool,
        "Refuse the legacy BitTorrent handshake; always obfuscate",
    )
    .default("false")
    .tags(&["#bittorrent"])
    .input()
    .unsupported("BitTorrent"),
    opt(
        "bt-request-peer-speed-limit",
        ValueKind::Size {
            min: 0,
            max: ANY_SIZE,
        },
        "Look for more peers while the total speed is below SPEED",
    )
    .value_name("SPEED")
    .possible("0-*")
    .default("50K")
    .tags(&["#bittorrent"])
    .input()
    .unsupported("BitTorrent")
    .long("Takes a K or M suffix."),
    opt(
        "bt-max-open-files",
        ValueKind::Int { min: 1, max: ANY },
        "Most files open at once over all multi-file downloads",
    )
    .value_name("NUM")
    .possible("1-*")
    .default("100")
    .tags(&["#bittorrent"])
    .unsupported("BitTorrent"),
    opt(
        "bt-seed-unverified",
        ValueKind::Bool,
        "Seed files downloaded earlier without checking their piece hashes",
    )
    .default("false")
    .tags(&["#bittorrent"])
    .input()
    .unsupported("BitTorrent"),
    opt(
        "bt-hash-check-seed",
        ValueKind::Bool,
        "Keep seeding when a --check-integrity check finds the file complete",
    )
    .default("true")
    .tags(&["#bittorrent", "#checksum"])
    .input()
    .unsupported("BitTorrent")
    .long(
        "Set it to false to only check, and download just when the file is \
            damaged or incomplete.",
    ),
    opt(
        "bt-max-peers",
        ValueKind::Int { min: 0, max: ANY },
        "Most peers per torrent; 0 means no limit",
    )
    .value_name("NUM")
    .possible("0-*")
    .default("55")
    .tags(&["#bittorrent"])
    .input()
    .unsupported("BitTorrent"),
    opt(
        "bt-external-ip",
        ValueKind::Text,
        "IP address to report to trackers and the DHT",
    )
    .value_name("IPADDRESS")
    .possible("a numeric IP address")
    .tags(&["#bittorrent"])
    .input()
    .unsupported("BitTorrent")
    .long(
        "Needed for the DHT in a private network. Any IP address is accepted \
            despite the name.",
    ),
    opt(
        "index-out",
        ValueKind::Text,
        "Save the file with index INDEX as PATH, relative to --dir",
    )
    .short('O')
    .value_name("INDEX=PATH")
    .possible("INDEX=PATH")
    .tags(&["#bittorrent"])
    .cumulative()
    .input()
    .long("--show-files prints the indexes. Repeat the option for several files."),
    opt(
        "bt-tracker-interval",
        ValueKind::Int { min: 0, max: ANY },
        "Seconds between tracker requests; 0 lets the tracker decide",
    )
    .value_name("SEC")
    .possible("0-*")
    .default("0")
    .tags(&["#bittorrent"])
    .input()
    .unsupported("BitTorrent")
    .long(
        "A non-zero value overrides the interval and min interval the tracker \
            sends.",
    ),
    opt(
        "bt-stop-timeout",
        ValueKind::Int { min: 0, max: ANY },
        "Stop a torrent after SEC seconds at zero speed; 0 disables",
    )
    .value_name("SEC")
    .possible("0-*")
    .default("0")
    .tags(&["#bittorrent"])
    .input()
    .unsupported("BitTorrent"),
    opt(
        "bt-prioritize-piece",
        ValueKind::Text,
        "Fetch the first and/or last pieces of each file first",
    )
    .value_name("head[=SIZE],tail[=SIZE]")
    .possible("head[=SIZE], tail[=SIZE]")
    .tags(&["#bittorrent"])
    .input()
    .unsupported("BitTorrent")
    .long(
        "Give head, tail or head,tail; each may take =SIZE to widen its range (1M \
            when left out; K or M suffixes). Handy for previewing media.",
    ),
    opt(
        "bt-save-metadata",
        ValueKind::Bool,
        "Save magnet-link metadata as a .torrent file next to the download",
    )
    .default("false")
    .tags(&["#bittorrent"])
    .input()
    .unsupported("BitTorrent")
    .long(
        "Named by the hex info hash; an existing file is kept. See also \
            --bt-metadata-only.",
    ),
    opt(
        "bt-metadata-only",
        ValueKind::Bool,
        "Fetch only a magnet link's metadata, not its files",
    )
    .default("false")
    .tags(&["#bittorrent"])
    .input()
    .unsupported("BitTorrent"),
    opt(
        "bt-enable-lpd",
        ValueKind::Bool,
        "Find peers on the local network (Local Peer Discovery)",
    )
    .default("false")
    .tags(&["#bittorrent"])
    .input()
    .unsupported("BitTorrent"),
    opt(
        "bt-lpd-interface",
        ValueKind::Text,
        "Interface or IP address for Local Peer Discovery",
    )
    .value_name("INTERFACE")
    .possible("interface, IP address")
    .tags(&["#bittorrent"])
    .unsupported("BitTorrent"),
    opt(
        "bt-tracker-timeout",
        ValueKind::Int { min: 1, max: 600 },
        "Seconds without data before a tracker request is given up",
    )
    .value_name("SEC")
    .possible("1-600")
    .default("60")
    .tags(&["#bittorrent"])
    .input()
    .unsupported("BitTorrent"),
    opt(
        "bt-tracker-connect-timeout",
        ValueKind::Int { min: 1, max: 600 },
        "Seconds allowed to connect to a tracker",
    )
    .value_name("SEC")
    .possible("1-600")
    .default("60")
    .tags(&["#bittorrent"])
    .input()
    .unsupported("BitTorrent"),
    opt(
        "dht-message-timeout",
        ValueKind::Int { min: 1, max: 60 },
        "Seconds to wait for a DHT reply",
    )
    .value_name("SEC")
    .possible("1-60")
    .default("10")
    .tags(&["#bittorrent"])
    .unsupported("BitTorrent"),
    opt(
        "on-bt-download-complete",
        ValueKind::Path,
        "Run COMMAND when a torrent completes, before seeding",
    )
    .value_name("COMMAND")
    .possible("/path/to/command")
    .tags(&["#advanced", "#hook"])
    .unsupported("BitTorrent")
    .long(
        "--on-download-complete runs only once seeding is over. Arguments as for \
            --on-download-start.",
    ),
    opt(
        "bt-tracker",
        ValueKind::Text,
        "Extra tracker announce URIs, comma-separated",
    )
    .value_name("URI[,...]")
    .possible("URI,...")
    .tags(&["#bittorrent"])
    .input()
    .unsupported("BitTorrent")
    .long(
        "They are added after --bt-exclude-tracker is applied, so they are never \
            excluded.",
    ),
    opt(
        "bt-exclude-tracker",
        ValueKind::Text,
        "Tracker announce URIs to drop, comma-separated; '*' drops them all",
    )
    .value_name("URI[,...]")
    .possible("URI,... or *")
    .tags(&["#bittorrent"])
    .input()
    .unsupported("BitTorrent")
    .long("Quote '*' from the shell."),
    opt(
        "bt-remove-unselected-file",
        ValueKind::Bool,
        "When a torrent completes, delete files not chosen by --select-file",
    )
    .default("false")
    .tags(&["#bittorrent"])
    .input()
    .unsupported("BitTorrent")
    .long(
        "Without --select-file every file counts as chosen. The files really are \
            deleted.",
    ),
    opt(
        "bt-detach-seed-only",
        ValueKind::Bool,
        "Do not count torrents that are only seeding against -j",
    )
    .default("false")
    .tags(&["#bittorrent"])
    .unsupported("BitTorrent")
    .long(
        "Frees their slot for the next queued download; RPC still reports them as \
            active.",
    ),
    opt(
        "bt-force-encryption",
        ValueKind::Bool,
        "Require encrypted peer connections (arc4)",
    )
    .default("false")
    .tags(&["#bittorrent"])
    .input()
    .unsupported("BitTorrent")
    .long("Short for --bt-require-crypto --bt-min-crypto-level=arc4."),
    opt(
        "bt-enable-hook-after-hash-check",
        ValueKind::Bool,
        "Run --on-bt-download-complete after a passing -V hash check",
    )
    .default("true")
    .tags(&["#bittorrent"])
    .input()
    .unsupported("BitTorrent"),
    opt(
        "bt-load-saved-metadata",
        ValueKind::Bool,
        "Load metadata saved by --bt-save-metadata before asking the DHT",
    )
    .default("false")
    .tags(&["#bittorrent"])
    .input()
    .unsupported("BitTorrent"),
    opt(
        "metalink-file",
        ValueKind::Path,
        "Path of a .meta4 or .metalink file to download; '-' reads standard input",
    )
    .short('M')
    .value_name("METALINK_FILE")
    .possible("/path/to/file, -")
    .tags(&["#basic", "#metalink"]),
    opt(
        "metalink-version",
        ValueKind::Text,
        "Version of the file to pick from a Metalink",
    )
    .value_name("VERSION")
    .tags(&["#metalink"])
    .input(),
    opt(
        "metalink-language",
        ValueKind::Text,
        "Language of the file to pick from a Metalink",
    )
    .value_name("LANGUAGE")
    .tags(&["#metalink"])
    .input(),
    opt(
        "metalink-os",
        ValueKind::Text,
        "Operating system of the file to pick from a Metalink",
    )
    .value_name("OS")
    .tags(&["#metalink"])
    .input(),
    opt(
        "metalink-location",
        ValueKind::Text,
        "Preferred server locations, comma-separated (such as jp,us)",
    )
    .value_name("LOCATION[,...]")
    .tags(&["#metalink"])
    .input(),
    opt(
        "follow-metalink",
        ValueKind::Choice(&["true", "mem", "false"]),
        "What to do with a downloaded Metalink: true, mem or false",
    )
    .value_name("true|false|mem")
    .possible("true, mem, false")
    .default("true")
    .tags(&["#metalink"])
    .input()
    .long(
        "'true' goes on to download the files it describes; 'mem' does too but \
            keeps the Metalink in memory only; 'false' just saves it. A file counts \
            as a Metalink by its .meta4 or .metalink suffix or its Metalink content \
            type.",
    ),
    opt(
        "metalink-preferred-protocol",
        ValueKind::Choice(&["http", "https", "ftp", "none"]),
        "Protocol to prefer among Metalink mirrors: http, https, ftp, none",
    )
    .value_name("PROTO")
    .possible("http, https, ftp, none")
    .default("none")
    .tags(&["#metalink"])
    .input(),
    opt(
        "metalink-enable-unique-protocol",
        ValueKind::Bool,
        "Use only one protocol of a Metalink mirror that offers several",
    )
    .default("true")
    .tags(&["#metalink"])
    .input()
    .long("The preference comes from --metalink-preferred-protocol."),
    opt(
        "metalink-base-uri",
        ValueKind::Text,
        "Base URI for relative URLs in a local Metalink file",
    )
    .value_name("URI")
    .tags(&["#metalink"])
    .input()
    .long("A URI naming a directory must end with '/'."),
];

#[cfg(test)]
mod tests {
    /// Options of aria2 1.37 (which ringdl follows) that the aria2c 1.36 the suite compares with
    /// does not have (K-VERSION).
    const SINCE_1_37: &[&str] = &["no-want-digest-header"];

    use super::super::defs::{ArgKind, Support};
    use super::*;
    use std::collections::BTreeMap;

    fn find(name: &str) -> &'static OptDef {
        OPTIONS
            .iter()
            .find(|o| o.name == name)
            .unwrap_or_else(|| panic!("no --{name}"))
    }

    #[test]
    fn has_all_197_options_and_aria2_1_37s() {
        assert_eq!(OPTIONS.len(), 197 + SINCE_1_37.len());
    }

    #[test]
    fn optional_arguments_have_an_implied_value() {
        for o in OPTIONS {
            if o.arg == ArgKind::Optional {
                assert!(!o.implied.is_empty(), "--{} has no implied value", o.name);
            }
            if o.arg != ArgKind::None {
                assert!(!o.value_name.is_empty(), "--{} has no value name", o.name);
            }
        }
        assert_eq!(find("help").implied, "#basic");
        assert_eq!(find("optimize-concurrent-downloads").implied, "true");
    }

    #[test]
    fn booleans_follow_aria2() {
        for o in OPTIONS.iter().filter(|o| o.value == ValueKind::Bool) {
            let want = if o.name == "show-console-readout" {
                ArgKind::Required
            } else {
                ArgKind::Optional
            };
            assert_eq!(o.arg, want, "--{}", o.name);
            assert_eq!(o.implied, "true", "--{}", o.name);
            assert_eq!(o.value_name, "true|false", "--{}", o.name);
            assert_eq!(o.possible, "true, false", "--{}", o.name);
        }
        assert_eq!(find("version").arg, ArgKind::None);
    }

    fn size(s: &str) -> Option<u64> {
        let (digits, mult) = match s.as_bytes().last()? {
            b'K' | b'k' => (&s[..s.len() - 1], 1024),
            b'M' | b'm' => (&s[..s.len() - 1], MIB),
            _ => (s, 1),
        };
        digits.parse::<u64>().ok()?.checked_mul(mult)
    }

    #[test]
    fn defaults_fit_their_kind() {
        for o in OPTIONS {
            let Some(d) = o.default else { continue };
            let ok = match o.value {
                ValueKind::Bool => d == "true" || d == "false",
                ValueKind::Int { min, max } => d.parse::<i64>().is_ok_and(|v| v >= min && v <= max),
                ValueKind::Size { min, max } => size(d).is_some_and(|v| v >= min && v <= max),
                ValueKind::Float { min, max } => {
                    d.parse::<f64>().is_ok_and(|v| v >= min && v <= max)
                }
                ValueKind::Choice(c) => c.contains(&d),
                ValueKind::Path | ValueKind::Text => true,
            };
            assert!(ok, "default of --{} does not fit its kind: {d}", o.name);
        }
    }

    /// "Possible Values" and the value kind say the same thing.
    #[test]
    fn possible_values_match_value_kinds() {
        fn bound(s: &str) -> i64 {
            if s == "*" {
                i64::MAX
            } else {
                s.parse().unwrap()
            }
        }
        for o in OPTIONS {
            match o.value {
                ValueKind::Int { min, max } => {
                    let (lo, hi) = o.possible.split_once('-').expect(o.name);
                    assert_eq!((bound(lo), bound(hi)), (min, max), "--{}", o.name);
                }
                ValueKind::Size { min, max } => {
                    let (lo, hi) = o.possible.split_once('-').expect(o.name);
                    assert_eq!(
                        (bound(lo) as u64, bound(hi) as u64),
                        (min, max),
                        "--{}",
                        o.name
                    );
                }
                ValueKind::Float { min, .. } => {
                    assert_eq!(o.possible, "0.0-*", "--{}", o.name);
                    assert_eq!(min, 0.0);
                }
                ValueKind::Choice(c) => assert_eq!(o.possible, c.join(", "), "--{}", o.name),
                ValueKind::Path => assert!(o.possible.starts_with("/path/to/"), "--{}", o.name),
                ValueKind::Bool | ValueKind::Text => {}
            }
        }
        assert_eq!(
            find("max-connection-per-server").possible,
            format!("1-{MAX_CONN_PER_SERVER}")
        );
    }

    #[test]
    fn choice_defaults_are_choices() {
        for o in OPTIONS {
            if let (ValueKind::Choice(c), Some(d)) = (o.value, o.default) {
                assert!(c.contains(&d), "--{} default {d} not in {c:?}", o.name);
            }
        }
    }

    #[test]
    fn cumulative_input_and_support_flags() {
        let cumulative: Vec<_> = OPTIONS
            .iter()
            .filter(|o| o.cumulative)
            .map(|o| o.name)
            .collect();
        assert_eq!(cumulative, ["header", "index-out"]);
        for name in [
            "dir",
            "out",
            "header",
            "split",
            "max-connection-per-server",
            "user-agent",
        ] {
            assert!(find(name).in_input_file, "--{name}");
        }
        for name in [
            "input-file",
            "quiet",
            "log",
            "max-concurrent-downloads",
            "help",
        ] {
            assert!(!find(name).in_input_file, "--{name}");
        }
        assert_eq!(OPTIONS.iter().filter(|o| o.in_input_file).count(), 113);
        // An option is marked supported exactly when the settings builder acts on it.
        let supported: Vec<&str> = OPTIONS
            .iter()
            .filter(|o| o.support == Support::Yes)
            .map(|o| o.name)
            .collect();
        let mut acted_on = crate::cli::parse::ACTED_ON.to_vec();
        acted_on.sort();
        let mut supported_sorted = supported.clone();
        supported_sorted.sort();
        assert_eq!(supported_sorted, acted_on);
        for o in OPTIONS {
            assert!(
                !o.help.is_empty() && o.help.len() <= 80,
                "--{} help length",
                o.name
            );
            if let Support::No(feature) = o.support {
                assert!(!feature.is_empty(), "--{}", o.name);
            }
        }
    }

    /// One option as `aria2c --help=#all` prints it.
    #[derive(Debug)]
    struct Aria2Opt {
        short: Option<char>,
        name: String,
        /// What follows the name: `=SEC`, `[=true|false]` or nothing.
        usage: String,
        possible: String,
        default: Option<String>,
        tags: Vec<String>,
    }

    /// Parses `aria2c --help=#all`; None when aria2c is not installed.
    fn aria2_options() -> Option<Vec<Aria2Opt>> {
        let out = std::process::Command::new("aria2c")
            .args(["--no-conf", "--help=#all"])
            .output()
            .ok()?;
        let text = String::from_utf8_lossy(&out.stdout);
        let mut opts: Vec<Aria2Opt> = Vec::new();
        for line in text.lines() {
            // Option lines: " -x, --name=VALUE  text" or " --name[=VALUE]  text".
            if let Some(spec) = line.strip_prefix(' ').filter(|l| l.starts_with('-')) {
                let (short, spec) = match spec.strip_prefix("--") {
                    Some(long) => (None, long),
                    None => {
                        let mut chars = spec.chars();
                        chars.next();
                        let c = chars.next().unwrap();
                        (
                            Some(c),
                            spec[2..].trim_start_matches(", ").trim_start_matches("--"),
                        )
                    }
                };
                let spec = spec.split_whitespace().next().unwrap();
                let end = spec.find(['=', '[']).unwrap_or(spec.len());
                opts.push(Aria2Opt {
                    short,
                    name: spec[..end].to_string(),
                    usage: spec[end..].to_string(),
                    possible: String::new(),
                    default: None,
                    tags: Vec::new(),
                });
                continue;
            }
            let Some(cur) = opts.last_mut() else { continue };
            let t = line.trim();
            if let Some(p) = t.strip_prefix("Possible Values: ") {
                cur.possible = p.to_string();
            } else if let Some(d) = line.trim_start().strip_prefix("Default: ") {
                cur.default = Some(d.to_string());
            } else if let Some(tags) = t.strip_prefix("Tags:") {
                cur.tags = tags
                    .split(',')
                    .map(|s| s.trim().to_string())
                    .filter(|s| !s.is_empty())
                    .collect();
            }
        }
        if opts.is_empty() {
            None
        } else {
            Some(opts)
        }
    }

    #[test]
    fn same_names_and_shorts_as_aria2c() {
        let Some(aria2) = aria2_options() else {
            eprintln!("aria2c not found; skipping the comparison");
            return;
        };
        let theirs: Vec<&str> = aria2.iter().map(|o| o.name.as_str()).collect();
        let ours: Vec<&str> = OPTIONS
            .iter()
            .map(|o| o.name)
            .filter(|n| !SINCE_1_37.contains(n))
            .collect();
        assert_eq!(
            ours, theirs,
            "long names or their order differ from aria2c --help=#all"
        );
        let mut their_shorts: BTreeMap<char, &str> = aria2
            .iter()
            .filter_map(|o| o.short.map(|c| (c, o.name.as_str())))
            .collect();
        // aria2c accepts `-a` for --file-allocation, but its help does not print it.
        their_shorts.insert('a', "file-allocation");
        let our_shorts: BTreeMap<char, &str> = OPTIONS
            .iter()
            .filter_map(|o| o.short.map(|c| (c, o.name)))
            .collect();
        assert_eq!(our_shorts, their_shorts);
    }

    #[test]
    fn same_facts_as_aria2c() {
        let Some(aria2) = aria2_options() else {
            eprintln!("aria2c not found; skipping the comparison");
            return;
        };
        // Defaults that depend on the machine or on the aria2 version.
        const OWN_DEFAULT: &[&str] = &[
            "dir",
            "conf-path",
            "netrc-path",
            "ca-certificate",
            "dht-file-path",
            "dht-file-path6",
            "user-agent",
            "peer-agent",
            "peer-id-prefix",
        ];
        for a in &aria2 {
            let o = find(&a.name);
            let usage = match o.arg {
                ArgKind::None => String::new(),
                ArgKind::Optional => format!("[={}]", o.value_name),
                // aria2 documents this one as optional, but it takes a required argument.
                ArgKind::Required if o.name == "show-console-readout" => "[=true|false]".into(),
                ArgKind::Required => format!("={}", o.value_name),
            };
            assert_eq!(usage, a.usage, "usage of --{}", a.name);
            if o.name != "max-connection-per-server" {
                assert_eq!(o.possible, a.possible, "possible values of --{}", a.name);
            }
            if !OWN_DEFAULT.contains(&o.name) {
                assert_eq!(o.default, a.default.as_deref(), "default of --{}", a.name);
            }
            assert_eq!(o.tags, a.tags, "tags of --{}", a.name);
        }
    }
}
