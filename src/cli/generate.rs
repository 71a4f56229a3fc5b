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
const KNOWN_DIFFERENCES: &str = include_str!("../../compat-tests/KNOWN_DIFFERENCES.md");

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

// ---------------------------------------------------------------------------------------------
// roff

/// `text` escaped for roff: backslashes, hyphens as `\-` (so option names stay copyable minus signs),
/// non-ASCII as `\[uXXXX]`, tabs and control characters as spaces; a word that starts with `-` (an
/// option) gets `\%`, so it is never hyphenated across lines. Protect a line's start with
/// [`roff_line`].
fn roff(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut prev = None;
    for c in text.chars() {
        match c {
            '\\' => out.push_str("\\e"),
            '-' if prev.is_none_or(|p: char| p.is_whitespace() || "([\"'".contains(p)) => {
                out.push_str("\\%\\-")
            }
            '-' => out.push_str("\\-"),
            c if c.is_ascii_control() => out.push(' '),
            c if c.is_ascii() => out.push(c),
            c => {
                let _ = write!(out, "\\[u{:04X}]", c as u32);
            }
        }
        prev = Some(c);
    }
    out
}

/// An already escaped text line, made safe to start a line: roff reads a leading `.` or `'` as a
/// request, and a leading space as a break.
fn roff_line(escaped: &str) -> String {
    let t = escaped.trim_start();
    if t.starts_with('.') || t.starts_with('\'') {
        format!("\\&{t}")
    } else {
        t.to_string()
    }
}

/// A quoted macro argument (`.SS "..."`).
fn roff_arg(text: &str) -> String {
    format!("\"{}\"", roff(text).replace('"', "\\(dq"))
}

/// `text` in bold, its words never hyphenated: it is something to type (an option, a command).
fn bold(text: &str) -> String {
    let words: Vec<String> = text
        .split(' ')
        .map(|w| match roff(w) {
            t if t.is_empty() || t.starts_with("\\%") => t,
            t => format!("\\%{t}"),
        })
        .collect();
    format!("\\fB{}\\fR", words.join(" "))
}

/// Markdown's inline marks as roff fonts: `code` and **strong** bold, *emphasis* italic, links as
/// their text followed by the address.
fn md_inline(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::new();
    let mut plain = String::new();
    let mut i = 0;
    let closing = |from: usize, pat: &[char]| -> Option<usize> {
        (from..chars.len().saturating_sub(pat.len() - 1)).find(|&j| chars[j..].starts_with(pat))
    };
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        let prev = if i == 0 { None } else { Some(chars[i - 1]) };
        let flush = |out: &mut String, plain: &mut String| {
            out.push_str(&roff(plain));
            plain.clear();
        };
        match c {
            '\\' if next.is_some_and(|n| n.is_ascii_punctuation()) => {
                plain.push(chars[i + 1]);
                i += 2;
                continue;
            }
            '`' => {
                let run = chars[i..].iter().take_while(|&&c| c == '`').count();
                let fence = vec!['`'; run];
                if let Some(end) = closing(i + run, &fence) {
                    flush(&mut out, &mut plain);
                    let code: String = chars[i + run..end].iter().collect();
                    out.push_str(&bold(code.trim()));
                    i = end + run;
                    continue;
                }
            }
            '*' | '_' if next == Some(c) => {
                if let Some(end) = closing(i + 2, &[c, c]) {
                    if end > i + 2 {
                        flush(&mut out, &mut plain);
                        let inner: String = chars[i + 2..end].iter().collect();
                        let _ = write!(out, "\\fB{}\\fR", md_inline(&inner));
                        i = end + 2;
                        continue;
                    }
                }
            }
            '*' | '_'
                if next.is_some_and(|n| !n.is_whitespace() && n != c)
                    && (c == '*' || !prev.is_some_and(char::is_alphanumeric)) =>
            {
                let end = (i + 1..chars.len()).find(|&j| {
                    chars[j] == c
                        && !chars[j - 1].is_whitespace()
                        && (c == '*' || !chars.get(j + 1).is_some_and(|n| n.is_alphanumeric()))
                });
                if let Some(end) = end {
                    flush(&mut out, &mut plain);
                    let inner: String = chars[i + 1..end].iter().collect();
                    let _ = write!(out, "\\fI{}\\fR", md_inline(&inner));
                    i = end + 1;
                    continue;
                }
            }
            '[' => {
                if let Some(mid) = closing(i + 1, &[']', '(']) {
                    if let Some(end) = closing(mid + 2, &[')']) {
                        flush(&mut out, &mut plain);
                        let label: String = chars[i + 1..mid].iter().collect();
                        let url: String = chars[mid + 2..end].iter().collect();
                        out.push_str(&md_inline(&label));
                        if label != url && !url.starts_with('#') {
                            let _ = write!(out, " (\\fI{}\\fR)", roff(&url));
                        }
                        i = end + 1;
                        continue;
                    }
                }
            }
            '<' if chars[i + 1..].starts_with(&['h', 't', 't', 'p']) => {
                if let Some(end) = closing(i + 1, &['>']) {
                    flush(&mut out, &mut plain);
                    let url: String = chars[i + 1..end].iter().collect();
                    let _ = write!(out, "\\fI{}\\fR", roff(&url));
                    i = end + 1;
                    continue;
                }
            }
            _ => {}
        }
        plain.push(c);
        i += 1;
    }
    out.push_str(&roff(&plain));
    out
}

/// Markdown (the subset our documents use: headings, paragraphs, nested `*`/`-` lists, numbered
/// lists, fenced code, tables, quotes) as roff body text. A level-1 heading is dropped (the man page
/// has its own section title); deeper ones become `.SS`.
fn md_to_roff(md: &str) -> String {
    let mut out = String::new();
    // Paragraph text waiting to be written, and the macro that opens it.
    let mut para: Vec<String> = Vec::new();
    let mut para_macro = String::from(".PP");
    // Indents of the list items we are inside, outermost first.
    let mut items: Vec<usize> = Vec::new();
    let mut blank_before = false;
    let mut lines = md.lines().peekable();

    fn flush(out: &mut String, para: &mut Vec<String>, para_macro: &str) {
        if para.is_empty() {
            return;
        }
        let text = para.join(" ");
        para.clear();
        out.push_str(para_macro);
        out.push('\n');
        out.push_str(&roff_line(&md_inline(&text)));
        out.push('\n');
    }
    fn close_lists(out: &mut String, items: &mut Vec<usize>) {
        // Every nested level opened an .RS.
        for _ in 1..items.len() {
            out.push_str(".RE\n");
        }
        items.clear();
    }

    while let Some(line) = lines.next() {
        let trimmed = line.trim();
        let indent = line.len() - line.trim_start().len();
        if trimmed.is_empty() {
            flush(&mut out, &mut para, &para_macro);
            blank_before = true;
            continue;
        }
        let was_blank = std::mem::replace(&mut blank_before, false);
        if was_blank && indent == 0 && list_item(trimmed).is_none() {
            close_lists(&mut out, &mut items);
        }
        if trimmed.starts_with("<!--") {
            flush(&mut out, &mut para, &para_macro);
            let mut l = trimmed;
            while !l.contains("-->") {
                match lines.next() {
                    Some(n) => l = n,
                    None => break,
                }
            }
            continue;
        }
        if let Some(fence) = ["```", "~~~"].into_iter().find(|f| trimmed.starts_with(f)) {
            flush(&mut out, &mut para, &para_macro);
            out.push_str(if items.is_empty() { ".PP\n" } else { ".IP\n" });
            out.push_str(".RS 4\n.nf\n");
            for code in lines.by_ref() {
                if code.trim_start().starts_with(fence) {
                    break;
                }
                let code = code.get(indent..).unwrap_or(code.trim_start());
                // In no-fill mode leading spaces are kept, so only a leading `.`/`'` needs care.
                let esc = roff(code);
                if esc.starts_with('.') || esc.starts_with('\'') {
                    out.push_str("\\&");
                }
                out.push_str(&esc);
                out.push('\n');
            }
            out.push_str(".fi\n.RE\n");
            continue;
        }
        if let Some(level) = heading_level(trimmed) {
            flush(&mut out, &mut para, &para_macro);
            close_lists(&mut out, &mut items);
            if level > 1 {
                let text = trimmed[level..].trim().trim_end_matches('#').trim();
                let _ = writeln!(out, ".SS {}", roff_arg(&strip_marks(text)));
            }
            continue;
        }
        if trimmed.starts_with('|') {
            flush(&mut out, &mut para, &para_macro);
            close_lists(&mut out, &mut items);
            let mut rows = vec![trimmed.to_string()];
            while let Some(next) = lines.peek() {
                if !next.trim().starts_with('|') {
                    break;
                }
                rows.push(next.trim().to_string());
                lines.next();
            }
            out.push_str(&md_table(&rows));
            continue;
        }
        if matches!(trimmed, "---" | "***" | "___") {
            flush(&mut out, &mut para, &para_macro);
            continue;
        }
        if let Some((marker, text)) = list_item(trimmed) {
            flush(&mut out, &mut para, &para_macro);
            while items.last().is_some_and(|&i| indent < i) {
                items.pop();
                if !items.is_empty() {
                    out.push_str(".RE\n");
                }
            }
            if items.last().is_none_or(|&i| indent > i) {
                if !items.is_empty() {
                    out.push_str(".RS 2\n");
                }
                items.push(indent);
            }
            para_macro = match marker {
                None => ".IP \\(bu 2".to_string(),
                Some(n) => format!(".IP {n}. 4"),
            };
            para.push(text.to_string());
            continue;
        }
        if !items.is_empty() {
            if !was_blank {
                // A continuation line of the item (or of the paragraph in it).
                para.push(trimmed.to_string());
                continue;
            }
            if indent > 0 {
                // A further paragraph of the item.
                para_macro = ".IP".to_string();
                para.push(trimmed.to_string());
                continue;
            }
            close_lists(&mut out, &mut items);
        }
        if para.is_empty() {
            para_macro = ".PP".to_string();
        }
        para.push(trimmed.trim_start_matches('>').trim().to_string());
    }
    flush(&mut out, &mut para, &para_macro);
    close_lists(&mut out, &mut items);
    out
}

fn heading_level(line: &str) -> Option<usize> {
    let level = line.chars().take_while(|&c| c == '#').count();
    (level > 0 && line[level..].starts_with(' ')).then_some(level)
}

/// `* text`, `- text`, `+ text` (None) or `3. text` (Some(3)).
fn list_item(line: &str) -> Option<(Option<u32>, &str)> {
    for bullet in ["* ", "- ", "+ "] {
        if let Some(rest) = line.strip_prefix(bullet) {
            return Some((None, rest.trim()));
        }
    }
    let digits = line.chars().take_while(char::is_ascii_digit).count();
    if digits > 0 && digits < 4 {
        let rest = &line[digits..];
        if let Some(text) = rest.strip_prefix(". ").or_else(|| rest.strip_prefix(") ")) {
            return Some((line[..digits].parse().ok(), text.trim()));
        }
    }
    None
}

/// A heading's text without inline marks (it is set in bold anyway).
fn strip_marks(text: &str) -> String {
    text.replace(['`', '*'], "")
}

/// A Markdown table as a tagged list: the first cell of each row is the tag; the other cells follow,
/// each introduced by its column's heading.
fn md_table(rows: &[String]) -> String {
    let cells = |row: &str| -> Vec<String> {
        let row = row.trim();
        let inner = row.strip_prefix('|').unwrap_or(row);
        let inner = inner.strip_suffix('|').unwrap_or(inner);
        inner.split('|').map(|c| c.trim().to_string()).collect()
    };
    let is_rule = |row: &str| row.chars().all(|c| matches!(c, '|' | '-' | ':' | ' '));
    let mut out = String::new();
    let mut header: Option<Vec<String>> = None;
    for (n, row) in rows.iter().enumerate() {
        if is_rule(row) {
            continue;
        }
        let row_cells = cells(row);
        let has_rule_next = rows.get(n + 1).is_some_and(|r| is_rule(r));
        if header.is_none() && has_rule_next {
            header = Some(row_cells);
            continue;
        }
        let mut body = Vec::new();
        for (k, cell) in row_cells
            .iter()
            .enumerate()
            .skip(1)
            .filter(|(_, c)| !c.is_empty())
        {
            let name = header
                .as_ref()
                .and_then(|h| h.get(k))
                .filter(|h| !h.is_empty());
            body.push(match name {
                Some(h) => format!("{}: {}", md_inline(h), md_inline(cell)),
                None => md_inline(cell),
            });
        }
        let tag = row_cells.first().map(String::as_str).unwrap_or("");
        out.push_str(".TP\n");
        out.push_str(&roff_line(&md_inline(tag)));
        out.push('\n');
        if !body.is_empty() {
            out.push_str(&roff_line(&body.join("; ")));
            out.push('\n');
        }
    }
    out.push_str(".PP\n");
    out
}

// ---------------------------------------------------------------------------------------------
// The man page

fn man_page(opts: &[OptDef]) -> String {
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
fn man_option(m: &mut String, o: &OptDef) {
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
fn option_note(opts: &[OptDef], name: &str) -> String {
    match find(opts, name).map(|o| o.support) {
        Some(Support::Yes) | Some(Support::NoEffect(_)) => String::new(),
        Some(Support::No(feature)) => {
            format!("ringdl does not support {feature} yet, so it ignores this.")
        }
        None => format!("ringdl does not support `--{name}` yet, so it ignores this."),
    }
}

const DESCRIPTION: &str = "\
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

const UNSUPPORTED: &str = "\
aria2c options of features ringdl does not have are recognised, never reported as unknown: they are \
listed below with a note, and are accepted and ignored with one warning naming the feature. A \
download that needs such a feature (a `.torrent` or Metalink file, a magnet or `ftp://` URI) fails \
with one clear line and exit status 1.
";

const GENERATE: &str = "\
`ringdl --generate=KIND` prints this manual page (`man`) or a completion script for `bash`, `zsh` or \
`fish`. All of them, and `--help`, come from the one option table the parser uses.
";

const ENGINE: &str = "\
`--engine=auto|uring|portable` is ringdl's own option; the `RINGDL_ENGINE` environment variable \
gives its default. With `auto` (the default) ringdl runs on io_uring where it works, and on a \
portable epoll reactor where it does not: where a seccomp profile (Docker's and containerd's \
default ones), gVisor or `kernel.io_uring_disabled` refuses it, where the kernel lacks an \
operation ringdl uses, where its first operation fails, or where the buffers do not fit \
`RLIMIT_MEMLOCK`. One notice says why. The portable reactor writes the same aligned blocks with \
`O_DIRECT` and keeps the same memory budget; it costs more CPU. `uring` fails instead of falling \
back (exit 1); `portable` never tries io_uring. `ringdl -v` says which one runs.
";

const OPTIONS_INTRO: &str = "\
The options are aria2c's, grouped by aria2's tags; an option with several tags is listed under the \
first. A long option takes its value as `--name=VALUE` or `--name VALUE`, a short one as `-xVALUE` or \
`-x VALUE`. A value in brackets may only be attached (`--name=false`, `-Zfalse`); without it the \
option means `true`. A long option may be shortened to any unique prefix. When an option is given \
twice the last one counts, unless it says otherwise. Sizes take a `K` (1024) or `M` (1048576) suffix. \
Options are read, weakest first, from their defaults, the configuration file, the environment and \
the command line.
";

const INPUT_FILE: &str = "\
`-i FILE` (`-` for standard input) reads downloads from a file, one per line: the URIs of one \
download on one line, separated by TABs, are mirrors of one file. Lines starting with `#` are \
comments. Lines below a download that start with a space or a TAB set options for that download \
only, as `name=value` with the long option name without its dashes. The `--out` of the command line \
does not apply to downloads from an input file.
";

const EXIT_INTRO: &str = "\
ringdl exits with aria2's status codes, so scripts that test them keep working:
";

const EXIT_OUTRO: &str = "\
When several downloads fail, the status is that of the last failure. When none failed but some \
were left unfinished, it is 7.
";

/// aria2's exit codes 0 to 32 (its `error_code.h`), in ringdl's words.
const EXIT_CODES: [&str; 33] = [
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
const ENVIRONMENT: &[(&str, &str, Option<&str>)] = &[
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
const FILES: &[(&str, &str, &str)] = &[
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

const EXAMPLES: &str = "\
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

const COMPAT_INTRO: &str = "\
ringdl aims to do what aria2c does with the same command line: the same files under the same \
names, the same exit status, and output a person recognises. A differential test suite runs aria2c \
and ringdl side by side to check it; what follows is its record of the differences \
(`compat-tests/KNOWN_DIFFERENCES.md` in ringdl's source).
";

// ---------------------------------------------------------------------------------------------
// bash

/// A word for a shell's single-quoted string.
fn sh_quote(s: &str) -> String {
    if !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./=:,+@%".contains(c))
    {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}

/// The forms of an option as case patterns: `-d|--dir`.
fn forms(o: &OptDef) -> Vec<String> {
    let mut f = Vec::new();
    if let Some(c) = o.short {
        f.push(format!("-{c}"));
    }
    f.push(format!("--{}", o.name));
    f
}

/// `words` joined by `sep`, broken into lines of at most about `width` columns with a trailing
/// backslash (shell line continuation); continuation lines start with `indent`.
fn sh_wrap(words: &[String], sep: &str, indent: &str, width: usize) -> String {
    let mut out = String::new();
    let mut col = indent.len();
    for (i, w) in words.iter().enumerate() {
        if i > 0 {
            out.push_str(sep);
            col += sep.len();
            if col + w.len() + 2 > width {
                out.push_str(if sep.ends_with(' ') { "\\\n" } else { " \\\n" });
                out.push_str(indent);
                col = indent.len();
            }
        }
        out.push_str(w);
        col += w.len();
    }
    out
}

fn bash(opts: &[OptDef]) -> String {
    let mut all: Vec<String> = opts.iter().map(|o| format!("--{}", o.name)).collect();
    all.extend(opts.iter().filter_map(|o| o.short.map(|c| format!("-{c}"))));
    let options = sh_wrap(&all, " ", "            ", 100);
    // Options whose value may be the next word; optional values are only ever attached.
    let separate: Vec<String> = opts
        .iter()
        .filter(|o| o.arg == ArgKind::Required)
        .flat_map(forms)
        .map(|f| sh_quote(&f))
        .collect();
    let separate_case = if separate.is_empty() {
        String::new()
    } else {
        let pats = sh_wrap(&separate, "|", "                ", 100);
        format!("            {pats})\n                opt=$prev\n                ;;\n")
    };
    // Value completions of the options that have values, one case per kind of value.
    let mut actions: Vec<(String, Vec<String>)> = Vec::new();
    for o in opts.iter().filter(|o| o.arg != ArgKind::None) {
        let action = match values(o) {
            Values::Free => continue,
            Values::Words(words) => {
                let words: Vec<String> = words.iter().map(|w| sh_quote(w)).collect();
                format!("_ringdl_words \"$prefix\" \"$cur\" {}", words.join(" "))
            }
            Values::Files => "_ringdl_paths \"$prefix\" \"$cur\" -f".to_string(),
            Values::Dirs => "_ringdl_paths \"$prefix\" \"$cur\" -d".to_string(),
        };
        let pats: Vec<String> = forms(o).iter().map(|f| sh_quote(f)).collect();
        match actions.iter_mut().find(|(a, _)| *a == action) {
            Some((_, p)) => p.extend(pats),
            None => actions.push((action, pats)),
        }
    }
    let mut cases = String::new();
    for (action, pats) in &actions {
        let pats = sh_wrap(pats, "|", "                ", 100);
        let _ = writeln!(
            cases,
            "            {pats})\n                {action}\n                ;;"
        );
    }

    let mut s = String::new();
    s.push_str(BASH_HEAD);
    let _ = write!(
        s,
        r#"
_ringdl() {{
    local cur=${{COMP_WORDS[COMP_CWORD]}} prev= opt= prefix= i
    COMPREPLY=()
    (( COMP_CWORD > 0 )) && prev=${{COMP_WORDS[COMP_CWORD-1]}}
    # After `--` every word is a URI or a file.
    for (( i = 1; i < COMP_CWORD; i++ )); do
        if [[ ${{COMP_WORDS[i]}} == -- ]]; then
            _ringdl_paths '' "$cur" -f
            return 0
        fi
    done
    # `--name=value`: bash splits it at `=` when `=` is in COMP_WORDBREAKS (the default).
    if [[ $cur == = && $prev == --?* ]]; then
        opt=$prev cur=
    elif [[ $prev == = ]] && (( COMP_CWORD > 1 )) && [[ ${{COMP_WORDS[COMP_CWORD-2]}} == --?* ]]; then
        opt=${{COMP_WORDS[COMP_CWORD-2]}}
    elif [[ $cur == --?*=* ]]; then
        opt=${{cur%%=*}} prefix=${{cur%%=*}}= cur=${{cur#*=}}
    elif [[ $cur == -* ]]; then
        _ringdl_words '' "$cur" \
            {options}
        return 0
    else
        case $prev in
{separate_case}        esac
    fi
    if [[ -n $opt ]]; then
        case $opt in
{cases}        esac
        return 0
    fi
    _ringdl_paths '' "$cur" -f
}}

# $1: text to put back before each reply, $2: the word so far, $3...: the words to offer.
_ringdl_words() {{
    local prefix=$1 cur=$2
    shift 2
    mapfile -t COMPREPLY < <(compgen -W "$*" -- "$cur")
    [[ -z $prefix ]] || COMPREPLY=("${{COMPREPLY[@]/#/$prefix}}")
}}

# $1: text to put back before each reply, $2: the path so far, $3: -f for files, -d for directories.
_ringdl_paths() {{
    compopt -o filenames 2>/dev/null
    mapfile -t COMPREPLY < <(compgen "$3" -- "$2")
    [[ -z $1 ]] || COMPREPLY=("${{COMPREPLY[@]/#/$1}}")
}}

complete -F _ringdl ringdl
"#,
        options = options,
    );
    s.push_str(BASH_ALIAS);
    s
}

const BASH_HEAD: &str = "\
# bash completion for ringdl                                    -*- shell-script -*-
# Generated from ringdl's option table by `ringdl --generate=bash`; do not edit.
#
# Install as /usr/share/bash-completion/completions/ringdl, or source it from ~/.bashrc.
#
# aria2c: bash completes an alias by the alias's own name, so after `alias aria2c=ringdl` this file
# registers _ringdl for aria2c too, unless aria2's own completion for aria2c is installed (it knows
# the same options and stays in charge). bash-completion loads this file the first time `ringdl` is
# completed; to complete `aria2c` from the start of a shell, source this file in ~/.bashrc after the
# alias (a package may also install it as completions/aria2c.bash, which bash-completion tries only
# after aria2's own completions/aria2c).
";

const BASH_ALIAS: &str = r#"
# aria2c (see the top of this file). The guard: this file may be what loading aria2c's completion
# finds (installed as aria2c.bash), and then it is being sourced from inside itself.
if [[ -z ${_ringdl_registering-} ]]; then
    _ringdl_registering=1
    # Whether aria2c is completed by something else than this file or bash-completion's fallback.
    _ringdl_aria2c_taken() {
        case $(complete -p aria2c 2>/dev/null) in
            '' | *' _minimal '* | *' _comp_complete_minimal '* | *' _ringdl '*) return 1 ;;
        esac
    }
    if ! _ringdl_aria2c_taken; then
        # bash-completion loads a command's completion when it is first needed: let aria2's load.
        if declare -F _comp_load >/dev/null; then
            _comp_load -- aria2c
        elif declare -F __load_completion >/dev/null; then
            __load_completion aria2c
        fi >/dev/null 2>&1
        _ringdl_aria2c_taken || complete -F _ringdl aria2c
    fi
    unset -f _ringdl_aria2c_taken
    unset _ringdl_registering
fi
"#;

// ---------------------------------------------------------------------------------------------
// zsh

/// Text for inside an `_arguments` spec that is itself single-quoted.
fn zsh_text(s: &str, specials: &str) -> String {
    let mut out = String::new();
    for c in s.chars() {
        if c == '\'' {
            out.push_str("'\\''");
            continue;
        }
        if c == '\\' || specials.contains(c) {
            out.push('\\');
        }
        out.push(if c.is_control() { ' ' } else { c });
    }
    out
}

fn zsh(opts: &[OptDef]) -> String {
    let mut specs = String::new();
    for o in opts {
        let f = forms(o);
        // Long options take `--name=v` or `--name v`, short ones `-xv` or `-x v` (`=`, `+`); optional
        // values only attached (`=-`, `-`).
        let suffix = |form: &str| match (o.arg, form.starts_with("--")) {
            (ArgKind::None, _) => "",
            (ArgKind::Required, true) => "=",
            (ArgKind::Required, false) => "+",
            (ArgKind::Optional, true) => "=-",
            (ArgKind::Optional, false) => "-",
        };
        let names: Vec<String> = f.iter().map(|n| format!("{n}{}", suffix(n))).collect();
        let (prefix, names) = if o.cumulative {
            ("'*'".to_string(), names)
        } else if f.len() > 1 {
            (format!("'({})'", f.join(" ")), names)
        } else {
            (String::new(), names)
        };
        let names = if names.len() > 1 {
            format!("{{{}}}", names.join(","))
        } else {
            names[0].clone()
        };
        let mut spec = format!("'[{}]", zsh_text(summary(o), "[]"));
        if o.arg != ArgKind::None {
            let colons = if o.arg == ArgKind::Optional {
                "::"
            } else {
                ":"
            };
            let message = zsh_text(
                if o.value_name.is_empty() {
                    "VALUE"
                } else {
                    o.value_name
                },
                ":",
            );
            let action = match values(o) {
                Values::Free => " ".to_string(),
                Values::Words(words) => {
                    let words: Vec<String> = words
                        .iter()
                        .map(|w| zsh_text(w, " ()[]:\"$`;&|<>*?"))
                        .collect();
                    format!("({})", words.join(" "))
                }
                Values::Files => "_files".to_string(),
                Values::Dirs => "_directories".to_string(),
            };
            let _ = write!(spec, "{colons}{message}:{action}");
        }
        spec.push('\'');
        let _ = writeln!(specs, "    {prefix}{names}{spec}");
    }

    let mut s = String::new();
    s.push_str(ZSH_HEAD);
    let _ = write!(
        s,
        r#"
_ringdl() {{
  local -a args
  args=(
{specs}    '*:URI or file:_files'
  )
  # -S: `--` ends the options. No -s: a short option's value may be attached (`-Zfalse`), so
  # letters do not stack.
  _arguments -S : $args
}}

# Register for aria2c unless a completion for aria2c exists (see the top of this file).
if (( ! $+functions[_aria2c] )) && [[ -z ${{_comps[aria2c]-}} ]]; then
  compdef _ringdl aria2c
fi

if [[ $funcstack[1] == _ringdl ]]; then
  _ringdl "$@"
else
  compdef _ringdl ringdl
fi
"#
    );
    s
}

const ZSH_HEAD: &str = "\
#compdef ringdl
# zsh completion for ringdl.
# Generated from ringdl's option table by `ringdl --generate=zsh`; do not edit.
#
# Install as _ringdl in a directory of $fpath (Debian: /usr/share/zsh/vendor-completions), or
# source it after compinit.
#
# aria2c: zsh replaces an alias by its value before completing (unless the COMPLETE_ALIASES option
# is set), so `alias aria2c=ringdl` completes like ringdl with nothing more. For COMPLETE_ALIASES
# users and for functions or scripts named aria2c, this file also registers _ringdl for aria2c, but
# only when no completion for aria2c (an _aria2c function) is defined.
";

// ---------------------------------------------------------------------------------------------
// fish

fn fish_quote(s: &str) -> String {
    format!("'{}'", s.replace('\\', "\\\\").replace('\'', "\\'"))
}

fn fish(opts: &[OptDef]) -> String {
    let mut s = String::new();
    s.push_str(FISH_HEAD);
    s.push_str("\n\n");
    if opts
        .iter()
        .any(|o| o.arg != ArgKind::None && values(o) == Values::Dirs)
    {
        s.push_str(FISH_DIRS);
    }
    for o in opts {
        let mut line = String::from("complete -c ringdl");
        if let Some(c) = o.short {
            let _ = write!(line, " -s {}", fish_quote(&c.to_string()));
        }
        let _ = write!(
            line,
            " -l {} -d {}",
            fish_quote(o.name),
            fish_quote(summary(o))
        );
        // -r: the value may be the next word; -f: no file names as values. Optional values are
        // only ever attached (`--name=v`), which fish completes from -a without -r.
        let takes_next = o.arg == ArgKind::Required;
        match (o.arg, values(o)) {
            (ArgKind::None, _) => {}
            (_, Values::Files) if takes_next => line.push_str(" -r -F"),
            (_, Values::Files) => line.push_str(" -F"),
            (_, Values::Dirs) => {
                let _ = write!(
                    line,
                    " {} -a '(__ringdl_dirs)'",
                    if takes_next { "-x" } else { "-f" }
                );
            }
            (_, Values::Words(words)) => {
                let words: Vec<String> = words
                    .iter()
                    .map(|w| w.replace(['\'', '\\', ' '], ""))
                    .collect();
                let _ = write!(
                    line,
                    " {} -a {}",
                    if takes_next { "-x" } else { "-f" },
                    fish_quote(&words.join(" "))
                );
            }
            (_, Values::Free) => line.push_str(if takes_next { " -x" } else { "" }),
        }
        s.push_str(&line);
        s.push('\n');
    }
    s.push_str(FISH_ALIAS);
    s
}

const FISH_HEAD: &str = "\
# fish completion for ringdl.
# Generated from ringdl's option table by `ringdl --generate=fish`; do not edit.
#
# Install as /usr/share/fish/vendor_completions.d/ringdl.fish. Arguments that are not options
# complete as files (fish's default).
#
# aria2c: in fish, `alias aria2c=ringdl` defines a function aria2c that wraps ringdl, and fish
# completes a wrapping function with the completions of what it wraps, so the alias needs nothing
# more. For an aria2c function written by hand without --wraps, the last line below makes aria2c
# complete like ringdl, but only when aria2c itself is not installed, so that aria2's own completions
# stay with aria2.";

const FISH_DIRS: &str = "\
# Directories, for the value being completed without the `--name=` before it.
function __ringdl_dirs
    __fish_complete_directories (commandline -ct | string replace -r -- '^-[^=]*=' '')
end

";

const FISH_ALIAS: &str = "\
if not command -q aria2c
    complete -c aria2c --wraps ringdl
end
";

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
