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
    /// Recognised and accepted without a word: it tunes something ringdl does its own way, and no
    /// value of it changes anything a user can see in the files, the output or the exit status.
    /// Programs that call aria2c pass such options on every run. The text says why (for the manual).
    NoEffect(&'static str),
}

/// One aria2c option.
#[derive(Debug, Clone)]
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

/// An option is named by its long name (what session files and RPC options write).
impl AsRef<str> for OptDef {
    fn as_ref(&self) -> &str {
        self.name
    }
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
    pub const fn no_effect(mut self, why: &'static str) -> Self {
        self.support = Support::NoEffect(why);
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

/// Highest `-x` ringdl accepts. aria2c stops at 16; lifting that cap is its users' most common request.
pub const MAX_CONN_PER_SERVER: i64 = 64;

pub use super::table::{OPTIONS, OWN_OPTIONS};

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
        // aria2's own vectors (UtilTest getRealSize).
        assert_eq!(parse_size("4096M"), Some(4_294_967_296));
        assert_eq!(parse_size("1K"), Some(1024));
        assert_eq!(parse_size("foo"), None);
        assert_eq!(parse_size("9223372036854775807K"), None);
        assert_eq!(parse_size("9223372036854775807M"), None);
    }
}
