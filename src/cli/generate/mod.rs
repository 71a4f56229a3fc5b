//! The man page and the bash, zsh and fish completions, generated from the option table
//! (`defs::OPTIONS`) so they say exactly what the parser accepts. `ringdl --generate=KIND` prints one;
//! the committed copies (`man/ringdl.1`, `completions/*`) are checked current by `tests/generated.rs`.
//!
//! After changing the table or this file, regenerate every committed copy with one line:
//!
//! ```sh
//! RINGDL_REGENERATE=1 cargo test --test tests generated::committed
//! ```
//!
//! (or one at a time: `cargo run -- --generate=man > man/ringdl.1`, `--generate=bash >
//! completions/ringdl.bash`, `--generate=zsh > completions/_ringdl`, `--generate=fish >
//! completions/ringdl.fish`). The output depends on nothing but the source: the man page is dated
//! with the release date of the crate's version ([`RELEASES`]), never with the build date.
use super::defs::{self, ArgKind, OptDef, Support, ValueKind};
use std::fmt::Write as _;

/// What `--generate` can produce.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    Man,
    Bash,
    Zsh,
    Fish,
}

impl Target {
    pub const ALL: [Target; 4] = [Target::Man, Target::Bash, Target::Zsh, Target::Fish];

    /// The target named `s` on the command line (`man`, `bash`, `zsh`, `fish`).
    pub fn parse(s: &str) -> Option<Target> {
        Target::ALL.into_iter().find(|t| t.name() == s)
    }

    pub fn name(self) -> &'static str {
        match self {
            Target::Man => "man",
            Target::Bash => "bash",
            Target::Zsh => "zsh",
            Target::Fish => "fish",
        }
    }

    /// Where the generated file is committed, relative to the crate's root.
    pub fn committed_path(self) -> &'static str {
        match self {
            Target::Man => "man/ringdl.1",
            Target::Bash => "completions/ringdl.bash",
            Target::Zsh => "completions/_ringdl",
            Target::Fish => "completions/ringdl.fish",
        }
    }
}

/// The release date of each version, for the man page. A version bump adds its line here (a test
/// checks that the crate's version has one).
pub const RELEASES: &[(&str, &str)] = &[("0.1.0", "2026-11-29")];

const VERSION: &str = env!("CARGO_PKG_VERSION");

/// What ringdl deliberately does differently from aria2c, kept (and checked) by the compat suite.
const KNOWN_DIFFERENCES: &str = include_str!("../../../compat-tests/KNOWN_DIFFERENCES.md");

/// The text of `t`, generated from the option table.
pub fn generate(t: Target) -> String {
    generate_from(t, &all_options())
}

/// aria2c's options, then ringdl's own.
fn all_options() -> Vec<OptDef> {
    defs::OPTIONS
        .iter()
        .chain(defs::OWN_OPTIONS)
        .cloned()
        .collect()
}

fn generate_from(t: Target, opts: &[OptDef]) -> String {
    match t {
        Target::Man => man_page(opts),
        Target::Bash => bash(opts),
        Target::Zsh => zsh(opts),
        Target::Fish => fish(opts),
    }
}

fn release_date() -> &'static str {
    RELEASES
        .iter()
        .find(|(v, _)| *v == VERSION)
        .map_or("unreleased", |(_, d)| d)
}

// ---------------------------------------------------------------------------------------------
// What the generators share: how an option's value is described and completed.

/// How a completion offers an option's value.
#[derive(Debug, PartialEq)]
enum Values {
    /// Nothing to offer (a number, a header...).
    Free,
    Words(&'static [&'static str]),
    Files,
    Dirs,
}

fn values(o: &OptDef) -> Values {
    // The table has one Path kind for files and directories; the value name tells them apart, and
    // also marks the few Text options that name a file.
    match (o.value, o.value_name) {
        (_, "DIR") => Values::Dirs,
        (ValueKind::Path, _) | (_, "FILE") | (_, "PATH") => Values::Files,
        (ValueKind::Bool, _) => Values::Words(&["true", "false"]),
        (ValueKind::Choice(words), _) => Values::Words(words),
        _ => Values::Free,
    }
}

/// aria2's "Possible Values" text: the table's own, else one derived from the value's kind.
fn possible_values(o: &OptDef) -> String {
    if !o.possible.is_empty() {
        return o.possible.to_string();
    }
    match o.value {
        ValueKind::Bool => "true, false".to_string(),
        ValueKind::Int { min, max } => {
            let max = if max == i64::MAX {
                "*".to_string()
            } else {
                max.to_string()
            };
            format!("{min}-{max}")
        }
        ValueKind::Size { min, max } => format!("{}-{}", size_text(min), size_text(max)),
        ValueKind::Float { min, max } => {
            let max = if max >= f64::MAX {
                "*".to_string()
            } else {
                max.to_string()
            };
            format!("{min}-{max}")
        }
        ValueKind::Choice(words) => words.join(", "),
        ValueKind::Path | ValueKind::Text => String::new(),
    }
}

/// A byte count the way aria2 writes limits: `1M`, `16K`, `*` for no limit.
fn size_text(n: u64) -> String {
    const K: u64 = 1024;
    if n >= i64::MAX as u64 {
        "*".to_string()
    } else if n != 0 && n % (K * K) == 0 {
        format!("{}M", n / (K * K))
    } else if n != 0 && n % K == 0 {
        format!("{}K", n / K)
    } else {
        n.to_string()
    }
}

/// The one-line help as a sentence, ending with a period.
fn sentence(help: &str) -> String {
    let h = help.trim();
    if h.ends_with(['.', '!', '?']) || h.is_empty() {
        h.to_string()
    } else {
        format!("{h}.")
    }
}

/// The one-line help without its final period, as completion menus show it.
fn summary(o: &OptDef) -> &'static str {
    let h = o.help.trim();
    h.strip_suffix('.').unwrap_or(h)
}

fn find<'a>(opts: &'a [OptDef], name: &str) -> Option<&'a OptDef> {
    opts.iter().find(|o| o.name == name)
}

/// The page's sections: aria2's tags in reading order for an HTTP(S) downloader; the features ringdl
/// lacks come after the ones it has. Each option is listed once, under its first tag.
const SECTIONS: &[(&str, &str)] = &[
    ("#basic", "Basic options"),
    ("#http", "HTTP options"),
    ("#https", "HTTPS options"),
    ("#file", "File options"),
    ("#cookie", "Cookie options"),
    ("#checksum", "Checksum options"),
    ("#advanced", "Advanced options"),
    ("#hook", "Event hook options"),
    ("#experimental", "Experimental options"),
    ("#ftp", "FTP and SFTP options"),
    ("#metalink", "Metalink options"),
    ("#bittorrent", "BitTorrent options"),
    ("#rpc", "RPC options"),
    ("#deprecated", "Deprecated options"),
    ("#help", "Help options"),
];

/// Options grouped by first tag: known tags in [`SECTIONS`] order, then tags the table invents in
/// order of first use, then untagged options.
fn sections(opts: &[OptDef]) -> Vec<(String, Vec<&OptDef>)> {
    let mut tags: Vec<&str> = SECTIONS.iter().map(|(t, _)| *t).collect();
    for o in opts {
        if let Some(t) = o.tags.first() {
            if !tags.contains(t) {
                tags.push(t);
            }
        }
    }
    let mut out = Vec::new();
    for tag in tags {
        let members: Vec<&OptDef> = opts
            .iter()
            .filter(|o| o.tags.first() == Some(&tag))
            .collect();
        if members.is_empty() {
            continue;
        }
        let title = match SECTIONS.iter().find(|(t, _)| *t == tag) {
            Some((_, title)) => title.to_string(),
            None => {
                let word = tag.trim_start_matches('#');
                let mut chars = word.chars();
                let first = chars.next().map(|c| c.to_uppercase().collect::<String>());
                format!("{}{} options", first.unwrap_or_default(), chars.as_str())
            }
        };
        out.push((title, members));
    }
    let untagged: Vec<&OptDef> = opts.iter().filter(|o| o.tags.is_empty()).collect();
    if !untagged.is_empty() {
        out.push(("Other options".to_string(), untagged));
    }
    out
}

mod man;
mod roff;
mod shells;
use man::*;
use roff::*;
use shells::*;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::defs::opt;

    #[test]
    fn targets_parse_by_name() {
        for t in Target::ALL {
            assert_eq!(Target::parse(t.name()), Some(t));
        }
        assert_eq!(Target::parse("man"), Some(Target::Man));
        assert_eq!(Target::parse("bash"), Some(Target::Bash));
        assert_eq!(Target::parse("zsh"), Some(Target::Zsh));
        assert_eq!(Target::parse("fish"), Some(Target::Fish));
        assert_eq!(Target::parse("nonsense"), None);
        assert_eq!(Target::parse("Man"), None);
        assert_eq!(Target::parse(""), None);
    }

    #[test]
    fn the_version_has_a_release_date() {
        assert!(
            RELEASES.iter().any(|(v, _)| *v == VERSION),
            "add version {VERSION} and its release date to generate::RELEASES"
        );
        for (_, date) in RELEASES {
            let b = date.as_bytes();
            assert!(
                b.len() == 10 && b[4] == b'-' && b[7] == b'-',
                "{date} is not YYYY-MM-DD"
            );
        }
    }

    #[test]
    fn roff_escapes_specials() {
        assert_eq!(roff("--max-tries"), "\\%\\-\\-max\\-tries");
        assert_eq!(roff("a-b (-x)"), "a\\-b (\\%\\-x)");
        assert_eq!(roff("C:\\dir"), "C:\\edir");
        assert_eq!(roff("a\tb"), "a b");
        assert_eq!(
            roff("1 GiB × 2 — ü"),
            "1 GiB \\[u00D7] 2 \\[u2014] \\[u00FC]"
        );
        assert_eq!(roff("😀"), "\\[u1F600]");
        assert_eq!(roff_line(".hidden"), "\\&.hidden");
        assert_eq!(roff_line("'quoted"), "\\&'quoted");
        assert_eq!(roff_line("  indented"), "indented");
        assert_eq!(roff_line("plain. text"), "plain. text");
        assert_eq!(roff_arg("say \"hi\""), "\"say \\(dqhi\\(dq\"");
    }

    #[test]
    fn markdown_inline_marks_become_fonts() {
        assert_eq!(md_inline("use `--dir`"), "use \\fB\\%\\-\\-dir\\fR");
        assert_eq!(
            md_inline("**bold** and *it*"),
            "\\fBbold\\fR and \\fIit\\fR"
        );
        assert_eq!(md_inline("snake_case_name stays"), "snake_case_name stays");
        assert_eq!(md_inline("1-* and a * b"), "1\\-* and a * b");
        assert_eq!(md_inline("\\*not\\*"), "*not*");
        assert_eq!(
            md_inline("[aria2](https://x.example)"),
            "aria2 (\\fIhttps://x.example\\fR)"
        );
        assert_eq!(md_inline("`a\\b`"), "\\fB\\%a\\eb\\fR");
    }

    #[test]
    fn markdown_blocks_become_macros() {
        let md = "# Title\n\nIntro\ncontinued.\n\n## Part `two`\n\n* one\n  more\n  * nested\n* two\n\n\
                  After.\n\n1. first\n2. second\n\n```\n.dot first\ncode -x\n```\n\n| a | b |\n|---|---|\n| x | y |\n";
        let roff = md_to_roff(md);
        let expected = ".PP\nIntro continued.\n.SS \"Part two\"\n.IP \\(bu 2\none more\n.RS 2\n\
                        .IP \\(bu 2\nnested\n.RE\n.IP \\(bu 2\ntwo\n.PP\nAfter.\n.IP 1. 4\nfirst\n\
                        .IP 2. 4\nsecond\n.PP\n.RS 4\n.nf\n\\&.dot first\ncode \\%\\-x\n.fi\n.RE\n\
                        .TP\nx\nb: y\n.PP\n";
        assert_eq!(roff, expected);
    }

    #[test]
    fn sizes_and_ranges_read_like_aria2() {
        assert_eq!(size_text(1024 * 1024), "1M");
        assert_eq!(size_text(1024 * 1024 * 1024), "1024M");
        assert_eq!(size_text(16 * 1024), "16K");
        assert_eq!(size_text(0), "0");
        assert_eq!(size_text(1000), "1000");
        assert_eq!(size_text(u64::MAX), "*");
        let x = opt("x", ValueKind::Int { min: 1, max: 16 }, "h");
        assert_eq!(possible_values(&x), "1-16");
        let j = opt(
            "j",
            ValueKind::Int {
                min: 1,
                max: i64::MAX,
            },
            "h",
        );
        assert_eq!(possible_values(&j), "1-*");
        let c = opt("c", ValueKind::Choice(&["a", "b"]), "h");
        assert_eq!(possible_values(&c), "a, b");
        assert_eq!(possible_values(&c.possible("a or b")), "a or b");
    }

    /// A table with what the real one may hold: odd characters, unsupported features, a tag the page
    /// does not know, an untagged option.
    static ODD: &[OptDef] = &[
        opt("plain", ValueKind::Bool, "A boolean.").short('P'),
        opt(
            "quote-it",
            ValueKind::Text,
            "It's [odd]: a \\ backslash, \"quotes\", and .dots",
        )
        .long(".starts with a dot\n\n'starts with a quote")
        .cumulative()
        .tags(&["#http"]),
        opt(
            "seed-time",
            ValueKind::Int {
                min: 0,
                max: i64::MAX,
            },
            "Seeding minutes.",
        )
        .unsupported("BitTorrent")
        .tags(&["#bittorrent"]),
        opt("mode", ValueKind::Choice(&["a", "b"]), "Pick one.")
            .optional("a")
            .tags(&["#newtag"]),
        opt("where", ValueKind::Path, "A directory.")
            .value_name("DIR")
            .tags(&[]),
        opt("list", ValueKind::Path, "A file.")
            .short('L')
            .value_name("FILE"),
    ];

    #[test]
    fn man_page_sections_and_notes() {
        let m = generate_from(Target::Man, ODD);
        let titles: Vec<&str> = m.lines().filter(|l| l.starts_with(".SS ")).collect();
        let expected = [
            ".SS \"Basic options\"",
            ".SS \"HTTP options\"",
            ".SS \"BitTorrent options\"",
            ".SS \"Newtag options\"",
            ".SS \"Other options\"",
        ];
        assert_eq!(&titles[..expected.len()], &expected);
        assert!(m.contains(
            ".PP\nAccepted for compatibility and ignored: ringdl does not support BitTorrent yet.\n"
        ));
        assert!(m.contains("\\fB\\%\\-P\\fR, \\fB\\%\\-\\-plain\\fR[=\\fItrue|false\\fR]\n"));
        assert!(m.contains("\\fB\\%\\-\\-mode\\fR[=\\fICHOICE\\fR]\n"));
        assert!(m.contains("Given without a value: a"));
        assert!(m.contains("\\fB\\%\\-\\-where\\fR=\\fIDIR\\fR\n"));
        assert!(m.contains("It's [odd]: a \\e backslash, \"quotes\", and .dots.\n"));
        assert!(m.contains("\n\\&.starts with a dot\n"));
        assert!(m.contains("\n\\&'starts with a quote\n"));
        assert!(m.contains("May be given more than once"));
        assert_only_our_requests(&m);
    }

    /// Every line that roff reads as a request is one of ours.
    fn assert_only_our_requests(roff: &str) {
        for line in roff.lines() {
            assert!(line.is_ascii(), "non-ASCII line: {line}");
            if line.starts_with('.') || line.starts_with('\'') {
                let request = line[1..].split([' ', '"']).next().unwrap_or("");
                assert!(
                    request.starts_with('\\') || KNOWN_MACROS.contains(&request),
                    "a text line read as a request: {line}"
                );
            }
        }
    }

    #[test]
    fn markdown_text_never_becomes_a_request() {
        let md = ".dot\r\n'quote\r\n\\backslash\n\n<!-- a\ncomment -->\n* item\n\n  .para in item\n\n  \
                  ```\n  'code in item\n  ```\n* `.code` first\n\n|.a|'b|\n|-|-|\n|.c||\n\n### .heading ###\n\
                  > .quoted\n1) 'numbered\n+ .plus\n\n---\n\n~~~\n.tilde fence\n~~~\n";
        let roff = md_to_roff(md);
        assert_only_our_requests(&roff);
        assert!(!roff.contains("comment"));
        assert!(roff.contains(".SS \".heading\"\n"));
        assert!(
            roff.contains(".TP\n\\&.c\n.PP\n"),
            "an empty cell is left out"
        );
        for text in [
            "\\&.dot 'quote \\ebackslash\n",
            "\\&.para in item",
            "\\&'code in item",
        ] {
            assert!(roff.contains(text), "{text} missing from\n{roff}");
        }
    }

    const KNOWN_MACROS: &[&str] = &[
        "TH", "SH", "SS", "PP", "TP", "IP", "RS", "RE", "B", "BR", "I", "nf", "fi", "br",
    ];

    /// The first line of each `.TP` entry of the OPTIONS section.
    fn option_heads(man: &str) -> Vec<&str> {
        let start = man.find("\n.SH OPTIONS\n").expect("an OPTIONS section");
        let section = &man[start + 1..];
        let section = &section[..section[1..].find("\n.SH ").map_or(section.len(), |e| e + 1)];
        let lines: Vec<&str> = section.lines().collect();
        lines
            .windows(2)
            .filter(|w| w[0] == ".TP")
            .map(|w| w[1])
            .collect()
    }

    #[test]
    fn every_option_is_in_the_man_page_once() {
        let m = generate(Target::Man);
        let heads = option_heads(&m);
        assert_eq!(heads.len(), all_options().len());
        for o in &all_options() {
            let long = bold(&format!("--{}", o.name));
            let n = heads
                .iter()
                .filter(|h| {
                    h.split(", ").any(|form| {
                        form.strip_prefix(long.as_str())
                            .is_some_and(|rest| rest.is_empty() || rest.starts_with(['=', '[']))
                    })
                })
                .count();
            assert_eq!(n, 1, "--{} is not listed exactly once in OPTIONS", o.name);
            if let Support::No(feature) = o.support {
                assert!(m.contains(&format!("does not support {} yet.", roff(feature))));
            }
        }
    }

    #[test]
    fn every_option_is_in_every_completion() {
        let bash = generate(Target::Bash);
        let zsh = generate(Target::Zsh);
        let fish = generate(Target::Fish);
        let bash_words: Vec<&str> = bash
            .split(|c: char| c.is_whitespace() || c == '|' || c == ')')
            .collect();
        for o in &all_options() {
            let long = format!("--{}", o.name);
            assert!(bash_words.contains(&long.as_str()), "bash lacks {long}");
            assert!(
                ["[", "=", "}", "'"]
                    .iter()
                    .any(|end| zsh.contains(&format!("{long}{end}"))),
                "zsh lacks {long}"
            );
            assert!(
                fish.contains(&format!(" -l {} ", fish_quote(o.name))),
                "fish lacks {long}"
            );
            if let Some(c) = o.short {
                let short = format!("-{c}");
                assert!(bash_words.contains(&short.as_str()), "bash lacks {short}");
                assert!(zsh.contains(&format!("{{{short}")), "zsh lacks {short}");
                assert!(fish.contains(&format!(
                    "-s {} -l {} ",
                    fish_quote(&c.to_string()),
                    fish_quote(o.name)
                )));
            }
        }
    }

    #[test]
    fn completions_offer_values_by_kind() {
        let zsh = generate_from(Target::Zsh, ODD);
        assert!(zsh.contains("'(-P --plain)'{-P-,--plain=-}'[A boolean]::true|false:(true false)'"));
        assert!(zsh.contains(
            "'*'--quote-it='[It'\\''s \\[odd\\]: a \\\\ backslash, \"quotes\", and .dots]:VALUE: '"
        ));
        assert!(zsh.contains("--mode=-'[Pick one]::CHOICE:(a b)'"));
        assert!(zsh.contains("--where='[A directory]:DIR:_directories'"));
        assert!(zsh.contains("{-L+,--list=}'[A file]:FILE:_files'"));
        let fish = generate_from(Target::Fish, ODD);
        assert!(fish
            .contains("complete -c ringdl -s 'P' -l 'plain' -d 'A boolean' -f -a 'true false'\n"));
        assert!(fish.contains(
            "-l 'quote-it' -d 'It\\'s [odd]: a \\\\ backslash, \"quotes\", and .dots' -x\n"
        ));
        assert!(fish.contains("-l 'where' -d 'A directory' -x -a '(__ringdl_dirs)'\n"));
        assert!(fish.contains("-l 'list' -d 'A file' -r -F\n"));
        let bash = generate_from(Target::Bash, ODD);
        let case = |pats: &str, action: &str| {
            format!("            {pats})\n                {action}\n                ;;\n")
        };
        assert!(bash.contains(&case(
            "-P|--plain",
            "_ringdl_words \"$prefix\" \"$cur\" true false"
        )));
        assert!(bash.contains(&case("--where", "_ringdl_paths \"$prefix\" \"$cur\" -d")));
        assert!(bash.contains(&case("-L|--list", "_ringdl_paths \"$prefix\" \"$cur\" -f")));
        assert!(bash.contains(&case("--mode", "_ringdl_words \"$prefix\" \"$cur\" a b")));
        // Only required values may be the next word.
        assert!(bash.contains(&case(
            "--quote-it|--seed-time|--where|-L|--list",
            "opt=$prev"
        )));
    }
}
