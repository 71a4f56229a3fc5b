//! The one table of aria2c options that ringdl knows. Parsing, `--help`, and (later) the man page and
//! completions are all derived from it, so an option is described in exactly one place.

/// How an option takes its argument on the command line (aria2's getopt rules).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ArgKind {
    /// No argument (`--version`).
    None,
    /// `--opt=v`, `--opt v`, `-xv`, `-x v`.
    Required,
    /// A value that may only be attached: `--opt`, `--opt=false`, `-Vfalse`. Absent, the option's
    /// `implied` value is used.
    Optional,
}

/// What a value must look like; checked when settings are built.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ValueKind {
    /// `true` or `false`.
    Bool,
    /// Integer within an inclusive range (`i64::MAX` for aria2's `*`).
    Int { min: i64, max: i64 },
    /// Byte size with an optional K/M suffix, within an inclusive range.
    Size { min: u64, max: u64 },
    /// Decimal number within an inclusive range.
    Float { min: f64, max: f64 },
    /// One of a fixed set of words.
    Choice(&'static [&'static str]),
    /// A path to a file or directory (`${HOME}` is expanded).
    Path,
    /// Anything else; options with their own syntax are checked by name.
    Text,
}

/// Whether ringdl acts on an option yet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Support {
    /// Implemented.
    Yes,
    /// Recognised and accepted, but the feature is not in ringdl (yet): using it warns once, naming
    /// the feature, e.g. `No("BitTorrent")`.
    No(&'static str),
}

/// One aria2c option.
#[derive(Debug)]
pub struct OptDef {
    pub name: &'static str,
    pub short: Option<char>,
    pub arg: ArgKind,
    pub value: ValueKind,
    /// Shown after `=` in help (`SEC`, `N`, `DIR`...), as aria2 names it.
    pub value_name: &'static str,
    /// aria2's "Possible Values:" text, when it prints one.
    pub possible: &'static str,
    pub default: Option<&'static str>,
    /// The value of an `Optional` option given without one (`true` for booleans).
    pub implied: &'static str,
    /// aria2's tags: `#basic`, `#http`, `#bittorrent`...
    pub tags: &'static [&'static str],
    /// Repeated uses accumulate instead of the last one winning (`--header`).
    pub cumulative: bool,
    pub support: Support,
    /// Allowed on the indented option lines of an `-i` input file (aria2's per-download options).
    pub in_input_file: bool,
    /// One line, in ringdl's words.
    pub help: &'static str,
    /// More detail for `--help=KEYWORD` and the man page, in ringdl's words; may be empty.
    pub long_help: &'static str,
}

/// A new option definition; refine it with the builder methods below.
pub const fn opt(name: &'static str, value: ValueKind, help: &'static str) -> OptDef {
    OptDef {
        name,
        short: None,
        arg: match value {
            ValueKind::Bool => ArgKind::Optional,
            _ => ArgKind::Required,
        },
        value,
        value_name: match value {
            ValueKind::Bool => "true|false",
            ValueKind::Int { .. } | ValueKind::Float { .. } => "N",
            ValueKind::Size { .. } => "SIZE",
            ValueKind::Choice(_) => "CHOICE",
            ValueKind::Path => "PATH",
            ValueKind::Text => "VALUE",
        },
        possible: match value {
            ValueKind::Bool => "true, false",
            _ => "",
        },
        default: None,
        implied: match value {
            ValueKind::Bool => "true",
            _ => "",
        },
        tags: &["#basic"],
        cumulative: false,
        support: Support::Yes,
        in_input_file: false,
        help,
        long_help: "",
    }
}

impl OptDef {
    pub const fn short(mut self, c: char) -> Self {
        self.short = Some(c);
        self
    }
    pub const fn default(mut self, d: &'static str) -> Self {
        self.default = Some(d);
        self
    }
    pub const fn tags(mut self, t: &'static [&'static str]) -> Self {
        self.tags = t;
        self
    }
    pub const fn value_name(mut self, v: &'static str) -> Self {
        self.value_name = v;
        self
    }
    pub const fn possible(mut self, p: &'static str) -> Self {
        self.possible = p;
        self
    }
    pub const fn cumulative(mut self) -> Self {
        self.cumulative = true;
        self
    }
    /// Takes no argument.
    pub const fn flag(mut self) -> Self {
        self.arg = ArgKind::None;
        self
    }
    /// Takes an optional attached argument, `implied` when absent.
    pub const fn optional(mut self, implied: &'static str) -> Self {
        self.arg = ArgKind::Optional;
        self.implied = implied;
        self
    }
    /// Takes a required argument even though it is a boolean (aria2's `--show-console-readout`).
    pub const fn required(mut self) -> Self {
        self.arg = ArgKind::Required;
        self
    }
    pub const fn unsupported(mut self, feature: &'static str) -> Self {
        self.support = Support::No(feature);
        self
    }
    pub const fn input(mut self) -> Self {
        self.in_input_file = true;
        self
    }
    pub const fn long(mut self, text: &'static str) -> Self {
        self.long_help = text;
        self
    }
}

const KIB: u64 = 1024;
const MIB: u64 = 1024 * 1024;
const GIB: u64 = 1024 * MIB;

/// Highest `-x` ringdl accepts. aria2c stops at 16; lifting that cap is its users' most common request.
pub const MAX_CONN_PER_SERVER: i64 = 64;

pub static OPTIONS: &[OptDef] = &[
    opt("dir", ValueKind::Path, "Directory to store the downloaded files in.")
        .short('d')
        .value_name("DIR")
        .tags(&["#basic", "#file"]),
    opt("out", ValueKind::Path, "File name of the downloaded file, relative to --dir. Ignored with -Z.")
        .short('o')
        .value_name("FILE")
        .tags(&["#basic", "#http", "#file"]),
    opt(
        "max-concurrent-downloads",
        ValueKind::Int { min: 1, max: i64::MAX },
        "How many downloads run at the same time.",
    )
    .short('j')
    .default("5")
    .tags(&["#basic", "#advanced"]),
    opt(
        "max-connection-per-server",
        ValueKind::Int { min: 1, max: MAX_CONN_PER_SERVER },
        "Most connections opened to one server for one download.",
    )
    .short('x')
    .default("1")
    .tags(&["#basic", "#http"]),
    opt(
        "split",
        ValueKind::Int { min: 1, max: i64::MAX },
        "Most connections one download uses in total, over all its mirrors.",
    )
    .short('s')
    .default("5")
    .tags(&["#basic", "#http"]),
    opt(
        "min-split-size",
        ValueKind::Size { min: MIB, max: GIB },
        "Never split a range smaller than twice this size between connections.",
    )
    .short('k')
    .default("20M")
    .tags(&["#basic", "#http"]),
    opt(
        "force-sequential",
        ValueKind::Bool,
        "Treat every URI on the command line as a download of its own instead of mirrors of one file.",
    )
    .short('Z')
    .default("false")
    .tags(&["#basic"]),
    opt(
        "ca-certificate",
        ValueKind::Path,
        "PEM file of certificate authorities to trust instead of the system's.",
    )
    .value_name("FILE")
    .tags(&["#http", "#https"]),
    opt(
        "check-certificate",
        ValueKind::Bool,
        "Verify the server's certificate against the trusted authorities.",
    )
    .default("true")
    .tags(&["#http", "#https"]),
    opt(
        "allow-overwrite",
        ValueKind::Bool,
        "Overwrite an existing file of the same name instead of renaming the new one.",
    )
    .default("false")
    .tags(&["#advanced", "#file"]),
    opt(
        "auto-file-renaming",
        ValueKind::Bool,
        "When the output file exists, save as NAME.N.EXT instead.",
    )
    .default("true")
    .tags(&["#advanced", "#file"]),
    opt(
        "console-log-level",
        ValueKind::Choice(&["debug", "info", "notice", "warn", "error"]),
        "Lowest level of log line printed on the console.",
    )
    .default("notice")
    .value_name("LEVEL")
    .tags(&["#advanced"]),
    opt(
        "summary-interval",
        ValueKind::Int { min: 0, max: i64::MAX },
        "Seconds between progress summaries; 0 turns them off.",
    )
    .default("60")
    .value_name("SEC")
    .tags(&["#advanced"]),
    opt(
        "show-console-readout",
        ValueKind::Choice(&["true", "false"]),
        "Show the one-line progress readout.",
    )
    .default("true")
    .tags(&["#advanced"]),
    opt(
        "download-result",
        ValueKind::Choice(&["default", "full", "hide"]),
        "How the Download Results table is printed at the end.",
    )
    .default("default")
    .tags(&["#advanced"]),
    opt("quiet", ValueKind::Bool, "Print nothing on the console.")
        .short('q')
        .default("false")
        .tags(&["#advanced"]),
    opt(
        "timeout",
        ValueKind::Int { min: 1, max: 600 },
        "Seconds without any data before a connection is given up.",
    )
    .short('t')
    .default("60")
    .value_name("SEC")
    .tags(&["#http"]),
    opt(
        "connect-timeout",
        ValueKind::Int { min: 1, max: 600 },
        "Seconds a connection may take to establish.",
    )
    .default("60")
    .value_name("SEC")
    .tags(&["#http"]),
    opt("user-agent", ValueKind::Text, "User-Agent header sent to servers.")
        .short('U')
        .default("aria2/1.37.0")
        .value_name("USER_AGENT")
        .tags(&["#http"]),
    opt("header", ValueKind::Text, "Extra request header; may be given several times.")
        .value_name("HEADER")
        .cumulative()
        .tags(&["#http"]),
    opt("help", ValueKind::Text, "Print usage and exit.")
        .short('h')
        .flag()
        .tags(&["#basic", "#help"]),
    opt("version", ValueKind::Text, "Print the version and exit.")
        .short('v')
        .flag()
        .tags(&["#basic"]),
];

/// Looks an option up by its full long name.
pub fn by_name(name: &str) -> Option<&'static OptDef> {
    OPTIONS.iter().find(|o| o.name == name)
}

/// Looks an option up by its short flag.
pub fn by_short(c: char) -> Option<&'static OptDef> {
    OPTIONS.iter().find(|o| o.short == Some(c))
}

/// Parses an aria2 size: digits with an optional K/k (×1024) or M/m (×1048576) suffix.
pub fn parse_size(s: &str) -> Option<u64> {
    let (digits, mult) = match s.as_bytes().last()? {
        b'K' | b'k' => (&s[..s.len() - 1], KIB),
        b'M' | b'm' => (&s[..s.len() - 1], MIB),
        _ => (s, 1),
    };
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse::<u64>().ok()?.checked_mul(mult)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn names_and_shorts_are_unique() {
        let mut names = HashSet::new();
        let mut shorts = HashSet::new();
        for o in OPTIONS {
            assert!(names.insert(o.name), "duplicate --{}", o.name);
            if let Some(c) = o.short {
                assert!(shorts.insert(c), "duplicate -{c}");
            }
        }
    }

    #[test]
    fn valued_options_have_value_names_and_defaults_parse() {
        for o in OPTIONS {
            if o.arg != ArgKind::None {
                assert!(!o.value_name.is_empty(), "--{} lacks a value name", o.name);
            }
            if o.arg == ArgKind::Optional {
                assert!(!o.implied.is_empty(), "--{} has no implied value", o.name);
            }
            if let Some(d) = o.default {
                let ok = match o.value {
                    ValueKind::Bool => d == "true" || d == "false",
                    ValueKind::Int { min, max } => {
                        d.parse::<i64>().is_ok_and(|v| v >= min && v <= max)
                    }
                    ValueKind::Size { min, max } => {
                        parse_size(d).is_some_and(|v| v >= min && v <= max)
                    }
                    ValueKind::Float { min, max } => {
                        d.parse::<f64>().is_ok_and(|v| v >= min && v <= max)
                    }
                    ValueKind::Choice(c) => c.contains(&d),
                    ValueKind::Path | ValueKind::Text => true,
                };
                assert!(ok, "default of --{} does not parse: {d}", o.name);
            }
        }
    }

    #[test]
    fn sizes_follow_aria2() {
        assert_eq!(parse_size("1"), Some(1));
        assert_eq!(parse_size("4096"), Some(4096));
        assert_eq!(parse_size("1K"), Some(1024));
        assert_eq!(parse_size("1k"), Some(1024));
        assert_eq!(parse_size("20M"), Some(20 * MIB));
        assert_eq!(parse_size("3m"), Some(3 * MIB));
        assert_eq!(parse_size(""), None);
        assert_eq!(parse_size("K"), None);
        assert_eq!(parse_size("-1"), None);
        assert_eq!(parse_size("1G"), None);
        assert_eq!(parse_size("1.5M"), None);
        assert_eq!(parse_size("99999999999999999999"), None);
    }
}
