//! Turning one program's raw stdout/stderr into something comparable with the other's.
//!
//! Two stages:
//! 1. [`normalize`]: text to text. Colour escapes go; the run's own directory, CA file and server
//!    ports become `{DIR}`, `{CA}`, `PORT`; the program name (`aria2c`, `aria2`, `ringdl`) becomes
//!    `PROG`; log timestamps `MM/DD HH:MM:SS` become `TS`; GIDs become `G6` / `G16`; `CUID#7`
//!    becomes `CUID#N`; aria2's C++ source locations (`[AbstractCommand.cc:351] `) go; the speed
//!    column of the Download Results table becomes `SPEED`.
//! 2. One of the views compared by the harness: [`events`] (log lines by level, results table,
//!    legend, resume hint, other lines; readouts and summaries reduced to "seen or not"),
//!    [`fold_help`] (option help blocks reduced to the option names and defaults), [`help_shape`].
//!
//! No regex crate is available to the test binary, so the patterns are matched by hand.

/// What the normaliser needs to know about one run.
#[derive(Debug, Clone, Default)]
pub struct Context {
    /// Absolute paths to replace, each with its token (longest first is handled here).
    pub paths: Vec<(String, &'static str)>,
    /// TCP ports that belong to this run's servers (and the refused port).
    pub ports: Vec<u16>,
    /// Show colour escapes as `<ESC>` instead of removing them.
    pub keep_ansi: bool,
    /// The names this program calls itself (`aria2c` and `aria2` for aria2c, `ringdl` for ringdl),
    /// which become `PROG`. Only its own: ringdl saying "aria2" stays visible.
    pub names: &'static [&'static str],
}

/// What aria2c calls itself.
pub const ARIA2_NAMES: &[&str] = &["aria2c", "aria2"];
/// What ringdl calls itself.
pub const RINGDL_NAMES: &[&str] = &["ringdl"];

/// Stage 1: see the module documentation. Line structure is kept.
pub fn normalize(raw: &str, cx: &Context) -> String {
    let mut text = if cx.keep_ansi {
        raw.replace('\u{1b}', "<ESC>")
    } else {
        strip_ansi(raw)
    };
    let mut paths = cx.paths.clone();
    paths.sort_by_key(|(p, _)| std::cmp::Reverse(p.len()));
    for (path, token) in &paths {
        if !path.is_empty() {
            text = text.replace(path.as_str(), token);
        }
    }
    for port in &cx.ports {
        text = replace_port(&text, *port);
    }
    let lines: Vec<String> = text.lines().map(|l| normalize_line(l, cx.names)).collect();
    let mut out = lines.join("\n");
    if text.ends_with('\n') {
        out.push('\n');
    }
    out
}

fn normalize_line(line: &str, names: &[&str]) -> String {
    let line = strip_source_locations(line);
    let line = replace_program_names(&line, names);
    let line = replace_timestamp(&line);
    let line = replace_cuid(&line);
    let line = replace_gids(&line);
    normalize_results_row(&line)
}

/// Removes `ESC [ ... letter` sequences.
pub fn strip_ansi(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' && chars.peek() == Some(&'[') {
            chars.next();
            for d in chars.by_ref() {
                if d.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// `:PORT` for `:<port>` when the digits are exactly the port (not a prefix of a longer number).
fn replace_port(s: &str, port: u16) -> String {
    let needle = format!(":{port}");
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(i) = rest.find(&needle) {
        let after = &rest[i + needle.len()..];
        out.push_str(&rest[..i]);
        if after.starts_with(|c: char| c.is_ascii_digit()) {
            out.push_str(&needle);
        } else {
            out.push_str(":PORT");
        }
        rest = after;
    }
    out.push_str(rest);
    out
}

/// `[Name.cc:123] ` (and `.h`) as printed in aria2's exception traces.
fn strip_source_locations(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut rest = line;
    while let Some(i) = rest.find('[') {
        out.push_str(&rest[..i]);
        let tail = &rest[i..];
        match source_location_len(tail) {
            Some(n) => {
                rest = &tail[n..];
                if let Some(r) = rest.strip_prefix(' ') {
                    rest = r;
                }
            }
            None => {
                out.push('[');
                rest = &tail[1..];
            }
        }
    }
    out.push_str(rest);
    out
}

/// Length of `[Ident.cc:123]` at the start of `s`, if it is one.
fn source_location_len(s: &str) -> Option<usize> {
    let b = s.as_bytes();
    let mut i = 1;
    while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
        i += 1;
    }
    if i == 1 {
        return None;
    }
    let ext = if s[i..].starts_with(".cc:") {
        4
    } else if s[i..].starts_with(".h:") {
        3
    } else {
        return None;
    };
    i += ext;
    let digits = i;
    while i < b.len() && b[i].is_ascii_digit() {
        i += 1;
    }
    if i == digits || b.get(i) != Some(&b']') {
        return None;
    }
    Some(i + 1)
}

/// The program's names as words become `PROG`. Not inside names like `*.aria2`, `f.aria2`,
/// `aria2.conf`, `.aria2/` or `aria2/1.36.0`.
fn replace_program_names(line: &str, names: &[&str]) -> String {
    let mut out = line.to_string();
    for name in names {
        out = replace_word(&out, name, "PROG");
    }
    out
}

fn replace_word(s: &str, word: &str, with: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    let mut prev: Option<char> = None;
    while let Some(i) = rest.find(word) {
        let before = rest[..i].chars().next_back().or(prev);
        let after_s = &rest[i + word.len()..];
        let after = after_s.chars().next();
        let before_ok = before
            .is_none_or(|c| !(c.is_alphanumeric() || matches!(c, '.' | '_' | '-' | '/' | '*')));
        let after_ok = match after {
            None => true,
            Some(c) if c.is_alphanumeric() || c == '_' || c == '/' || c == '-' => false,
            Some('.') => !after_s[1..].starts_with(|c: char| c.is_alphanumeric()),
            Some(_) => true,
        };
        out.push_str(&rest[..i]);
        if before_ok && after_ok {
            out.push_str(with);
        } else {
            out.push_str(word);
        }
        prev = word.chars().next_back();
        rest = after_s;
    }
    out.push_str(rest);
    out
}

/// `MM/DD HH:MM:SS` anywhere in the line becomes `TS`.
fn replace_timestamp(line: &str) -> String {
    const SHAPE: &[u8] = b"dd/dd dd:dd:dd";
    let b = line.as_bytes();
    if b.len() < SHAPE.len() {
        return line.to_string();
    }
    let mut out = String::with_capacity(line.len());
    let mut i = 0;
    while i < b.len() {
        let fits = i + SHAPE.len() <= b.len()
            && SHAPE.iter().zip(&b[i..]).all(|(p, c)| match p {
                b'd' => c.is_ascii_digit(),
                _ => p == c,
            })
            && (i == 0 || !b[i - 1].is_ascii_digit())
            && b.get(i + SHAPE.len()).is_none_or(|c| !c.is_ascii_digit());
        if fits {
            out.push_str("TS");
            i += SHAPE.len();
        } else {
            let ch = line[i..].chars().next().unwrap();
            out.push(ch);
            i += ch.len_utf8();
        }
    }
    out
}

fn replace_cuid(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut rest = line;
    while let Some(i) = rest.find("CUID#") {
        out.push_str(&rest[..i + 5]);
        let tail = &rest[i + 5..];
        let n = tail.bytes().take_while(u8::is_ascii_digit).count();
        if n > 0 {
            out.push('N');
        }
        rest = &tail[n..];
    }
    out.push_str(rest);
    out
}

fn is_lower_hex(c: u8) -> bool {
    c.is_ascii_digit() || (b'a'..=b'f').contains(&c)
}

/// `#` + 16 hex → `#G16`, `#` + 6 hex → `#G6`, a results row's leading 6 hex + `|` → `G6|`.
fn replace_gids(line: &str) -> String {
    let b = line.as_bytes();
    let mut out = String::with_capacity(line.len());
    let mut i = 0;
    if b.len() > 6 && b[..6].iter().all(|c| is_lower_hex(*c)) && b[6] == b'|' {
        out.push_str("G6");
        i = 6;
    }
    while i < b.len() {
        if b[i] == b'#' {
            let n = b[i + 1..].iter().take_while(|c| is_lower_hex(**c)).count();
            let next_alnum = b.get(i + 1 + n).is_some_and(|c| c.is_ascii_alphanumeric());
            if (n == 16 || n == 6) && !next_alnum {
                out.push_str(if n == 16 { "#G16" } else { "#G6" });
                i += 1 + n;
                continue;
            }
        }
        let ch = line[i..].chars().next().unwrap();
        out.push(ch);
        i += ch.len_utf8();
    }
    out
}

/// In a Download Results row (`G6|OK  |   142MiB/s|path`, or with a `  %|` column) the speed
/// field is timing, not behaviour.
fn normalize_results_row(line: &str) -> String {
    if !line.starts_with("G6|") {
        return line.to_string();
    }
    let mut parts: Vec<&str> = line.splitn(4, '|').collect();
    if parts.len() == 4 {
        parts[2] = "SPEED";
    }
    parts.join("|")
}

/// One meaningful line of output, for the `Events` comparison.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum Event {
    /// `TS [LEVEL] message`, with any exception trace that followed folded in (see
    /// [`fold_trace`]). `folded` marks a message that had a trace: the other side may append
    /// detail after it.
    Log {
        level: String,
        msg: String,
        folded: bool,
    },
    /// A trace block printed on its own (`Exception caught` / `Exception: errorCode=C msg` /
    /// `  -> errorCode=C msg`), as the `msg` of its innermost line: ringdl prints that message
    /// as its one line (K-ONELINE), with or without more context around it.
    Error(String),
    /// Any other non-blank line (results table rows, legend, resume hint, usage...), verbatim.
    Line(String),
}

impl std::fmt::Display for Event {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Event::Log { level, msg, folded } => {
                write!(f, "[{level}] {msg}{}", if *folded { " …" } else { "" })
            }
            Event::Error(m) => write!(f, "<error> {m}"),
            Event::Line(l) => write!(f, "{l}"),
        }
    }
}

impl Event {
    /// Whether `ours` (ringdl's event) satisfies `self` (the expectation from aria2c's output).
    pub fn accepts(&self, ours: &Event) -> bool {
        match (self, ours) {
            (
                Event::Log {
                    level: l1,
                    msg: m1,
                    folded: true,
                },
                Event::Log {
                    level: l2, msg: m2, ..
                },
            ) => l1 == l2 && m2.starts_with(m1.as_str()),
            (Event::Error(m1), Event::Error(m2)) => m2.contains(m1.as_str()),
            (Event::Error(m1), Event::Line(l)) => l.contains(m1.as_str()),
            (a, b) => a == b,
        }
    }
}

/// What a run printed, as events, plus whether progress output (readouts, summaries) was seen.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Events {
    pub events: Vec<Event>,
    pub readouts: usize,
    pub summaries: usize,
    /// Trace lines (`Exception:`, `  -> `) seen: aria2c prints them, ringdl must not in
    /// download output.
    pub trace_lines: usize,
}

/// `TS [LEVEL] msg` → (LEVEL, msg).
pub fn parse_log_line(line: &str) -> Option<(String, String)> {
    let rest = line.strip_prefix("TS [")?;
    let end = rest.find("] ")?;
    // With colour kept (`Context::keep_ansi`) the level reads `<ESC>[1;31mERROR<ESC>[0m`: the
    // escapes stay part of it, so colour is compared too.
    let level = &rest[..end];
    let plain = strip_ansi(&level.replace("<ESC>", "\u{1b}"));
    if !matches!(
        plain.as_str(),
        "DEBUG" | "INFO" | "NOTICE" | "WARN" | "ERROR"
    ) {
        return None;
    }
    Some((level.to_string(), rest[end + 2..].to_string()))
}

fn is_readout(line: &str) -> bool {
    (line.starts_with("[#") || line.starts_with("[DL:")) && line.ends_with(']')
}

fn is_trace_line(line: &str) -> bool {
    line.starts_with("Exception: ") || line.starts_with("  -> ")
}

/// `errorCode=C msg` from a trace line.
fn trace_message(line: &str) -> Option<String> {
    let i = line.find("errorCode=")?;
    Some(line[i..].to_string())
}

/// The innermost message of a trace (its last line), as `errorCode=C msg`.
pub fn fold_trace(trace: &[String]) -> Option<String> {
    trace.iter().rev().find_map(|l| trace_message(l))
}

/// Stage 2 for downloads: normalised text → events. See [`Event`].
pub fn events(text: &str) -> Events {
    let mut out = Events::default();
    let lines: Vec<&str> = text.lines().collect();
    let mut i = 0;
    let mut in_summary = false;
    while i < lines.len() {
        let line = lines[i];
        i += 1;
        if line.trim().is_empty() {
            // A summary block ends with a blank line.
            in_summary = false;
            continue;
        }
        if line.starts_with(" *** Download Progress Summary") {
            out.summaries += 1;
            in_summary = true;
            continue;
        }
        if in_summary {
            // The block: a row of '=', then per download its readout, `FILE: path`, a row of '-'.
            if line.chars().all(|c| c == '=' || c == '-')
                || line.starts_with("FILE: ")
                || is_readout(line)
            {
                continue;
            }
            in_summary = false;
        }
        if is_readout(line) {
            out.readouts += 1;
            continue;
        }
        if let Some((level, msg)) = parse_log_line(line) {
            let mut trace = Vec::new();
            while i < lines.len() && is_trace_line(lines[i]) {
                trace.push(lines[i].to_string());
                i += 1;
            }
            out.trace_lines += trace.len();
            let folded = fold_trace(&trace);
            let event = Event::Log {
                level,
                folded: folded.is_some(),
                msg: match folded {
                    Some(t) => format!("{msg}: {t}"),
                    None => msg,
                },
            };
            // aria2c repeats some notices once per connection (e.g. `CUID#N - Redirecting to`
            // for every segment connection of a split download); how many is timing.
            if out.events.last() != Some(&event) {
                out.events.push(event);
            }
            continue;
        }
        if line == "Exception caught" || is_trace_line(line) {
            let mut trace = Vec::new();
            if line != "Exception caught" {
                trace.push(line.to_string());
            }
            while i < lines.len() && is_trace_line(lines[i]) {
                trace.push(lines[i].to_string());
                i += 1;
            }
            out.trace_lines += trace.len();
            if let Some(t) = fold_trace(&trace) {
                // `errorCode=C msg` → `msg`.
                let msg = t.split_once(' ').map_or("", |(_, m)| m);
                out.events.push(Event::Error(msg.to_string()));
            }
            continue;
        }
        out.events.push(Event::Line(line.to_string()));
    }
    out
}

/// An option head line of aria2's help (` -x, --max-connection-per-server=NUM The maximum...` or
/// ` --console-log-level=LEVEL    Set ...`) → `-x, --max-connection-per-server`.
pub fn option_head(line: &str) -> Option<String> {
    let rest = line.strip_prefix(' ')?;
    if !rest.starts_with('-') {
        return None;
    }
    let mut names = Vec::new();
    for tok in rest.split_whitespace() {
        let tok = tok.trim_end_matches(',');
        if !tok.starts_with('-') || tok == "-" {
            break;
        }
        let name = tok.split(['=', '[']).next().unwrap_or(tok);
        names.push(name.to_string());
        if name.starts_with("--") {
            break;
        }
    }
    if names.iter().any(|n| n.starts_with("--")) {
        Some(names.join(", "))
    } else {
        None
    }
}

/// An option head that starts a help block: the line before it is blank or not indented (a
/// `Usage:`, `Options:`, `No option matching...` line). This keeps prose that happens to start
/// with ` --name=...` (aria2's "About the number of connections" paragraph) out.
fn block_head(before: &str, line: &str) -> Option<String> {
    if before.trim().is_empty() || !before.starts_with([' ', '\t']) {
        option_head(line)
    } else {
        None
    }
}

/// For parse errors and usage printed with them: every option help block becomes
/// `OPTION <names>` plus its `Default:` line; the rest of a block (description, possible values,
/// tags: ringdl's own words) and blank lines go. Other lines stay as they are.
pub fn fold_help(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut prev = "";
    for line in text.lines() {
        let before = std::mem::replace(&mut prev, line);
        if line.trim().is_empty() {
            continue;
        }
        if let Some(head) = block_head(before, line) {
            out.push(format!("OPTION {head}"));
            continue;
        }
        let trimmed = line.trim_start();
        if line.starts_with(' ') || line.starts_with('\t') {
            if trimmed.starts_with("Default:") {
                out.push(format!("  {trimmed}"));
            } else if out.last().is_some_and(|l| l == "Did you mean:") || line.starts_with('\t') {
                // The "Did you mean" list is tab-indented option names.
                out.push(format!("\t{trimmed}"));
            }
            continue;
        }
        out.push(line.to_string());
    }
    out
}

/// For `-h`, `--help=...`: the first line, the `Printing options ...` / `No option matching ...`
/// lines, and each listed option's names and default, in order. The prose is ringdl's own.
pub fn help_shape(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut prev = "";
    for (n, line) in text.lines().enumerate() {
        let before = std::mem::replace(&mut prev, line);
        if n == 0 || line.starts_with("Printing options") || line.starts_with("No option matching")
        {
            out.push(line.to_string());
        } else if let Some(head) = block_head(before, line) {
            out.push(format!("OPTION {head}"));
        } else if line.trim_start().starts_with("Default:") {
            out.push(format!("  {}", line.trim()));
        }
    }
    out
}

/// ringdl's own options (`--engine`, listed after aria2c's; see K-HELPTEXT) left out of a help
/// shape: aria2c has nothing to compare them with.
pub fn without_own_options(shape: Vec<String>) -> Vec<String> {
    const OWN: &[&str] = &["--engine"];
    let mut out: Vec<String> = Vec::new();
    let mut skipping = false;
    for line in shape {
        if let Some(head) = line.strip_prefix("OPTION ") {
            skipping = OWN
                .iter()
                .any(|o| head.split([',', '=', ' ']).any(|w| w == *o));
        } else if !line.starts_with("  Default:") {
            skipping = false;
        }
        if !skipping {
            out.push(line);
        }
    }
    out
}

/// For `-v`: the first line with the version number replaced (`PROG version V`), whether an
/// `Enabled Features: ` line follows (its list is each program's own), and the `Hash Algorithms:`
/// line as it is (programs read it to decide which checksums they can ask for).
pub fn version_shape(text: &str) -> String {
    let first = text.lines().next().unwrap_or("");
    let first = match first.split_once(" version ") {
        Some((prog, _)) => format!("{prog} version V"),
        None => first.to_string(),
    };
    let features = text.lines().any(|l| l.starts_with("Enabled Features: "));
    let hashes = text
        .lines()
        .find(|l| l.starts_with("Hash Algorithms: "))
        .unwrap_or("no Hash Algorithms line");
    format!("{first} / Enabled Features line: {features} / {hashes}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cx() -> Context {
        Context {
            paths: vec![("/tmp/ringdl-test-abc".into(), "{DIR}")],
            ports: vec![40123],
            keep_ansi: false,
            names: ARIA2_NAMES,
        }
    }

    #[test]
    fn normalizes_an_aria2_error_run() {
        let raw = "\n11/29 21:30:09 [\u{1b}[1;31mERROR\u{1b}[0m] CUID#7 - Download aborted. \
                   URI=http://127.0.0.1:40123/nope\n\
                   Exception: [AbstractCommand.cc:351] errorCode=3 URI=http://127.0.0.1:40123/nope\n  \
                   -> [HttpSkipResponseCommand.cc:218] errorCode=3 Resource not found\n\n\
                   11/29 21:30:09 [NOTICE] Download GID#3389afe4839b854e not complete: \n\n\
                   3389af|ERR |        n/a|http://127.0.0.1:40123/nope\n\n\
                   aria2 will resume download if the transfer is restarted.\n";
        let text = normalize(raw, &cx());
        assert_eq!(
            text,
            "\nTS [ERROR] CUID#N - Download aborted. URI=http://127.0.0.1:PORT/nope\n\
             Exception: errorCode=3 URI=http://127.0.0.1:PORT/nope\n  \
             -> errorCode=3 Resource not found\n\n\
             TS [NOTICE] Download GID#G16 not complete: \n\n\
             G6|ERR |SPEED|http://127.0.0.1:PORT/nope\n\n\
             PROG will resume download if the transfer is restarted.\n"
        );
        let ev = events(&text);
        assert_eq!(ev.trace_lines, 2);
        assert_eq!(
            ev.events[0],
            Event::Log {
                level: "ERROR".into(),
                msg: "CUID#N - Download aborted. URI=http://127.0.0.1:PORT/nope: errorCode=3 \
                      Resource not found"
                    .into(),
                folded: true
            }
        );
        let ringdl = events(
            "TS [ERROR] CUID#N - Download aborted. URI=http://127.0.0.1:PORT/nope: \
             errorCode=3 Resource not found. status=404\n",
        );
        assert!(ev.events[0].accepts(&ringdl.events[0]));
        assert_eq!(ev.events.len(), 4);
    }

    #[test]
    fn program_names_only_as_words() {
        assert_eq!(
            replace_program_names(
                "aria2c: unrecognized option '--foo' See 'aria2c -h'.",
                ARIA2_NAMES
            ),
            "PROG: unrecognized option '--foo' See 'PROG -h'."
        );
        assert_eq!(
            replace_program_names(
                "a control file(*.aria2) f.bin.aria2 aria2.conf aria2/1.36",
                ARIA2_NAMES
            ),
            "a control file(*.aria2) f.bin.aria2 aria2.conf aria2/1.36"
        );
        assert_eq!(
            replace_program_names("aria2 will resume. version 0, ~/.aria2/x", ARIA2_NAMES),
            "PROG will resume. version 0, ~/.aria2/x"
        );
        assert_eq!(
            replace_program_names("ringdl: use aria2c; aria2 will resume", RINGDL_NAMES),
            "PROG: use aria2c; aria2 will resume"
        );
    }

    #[test]
    fn gids_timestamps_cuids_ports() {
        assert_eq!(
            normalize_line(
                "[#2089b0 0B/0B CN:1 DL:0B] GID#0123456789abcdef #abcdef12",
                ARIA2_NAMES
            ),
            "[#G6 0B/0B CN:1 DL:0B] GID#G16 #abcdef12"
        );
        assert_eq!(replace_timestamp("01/02 03:04:05 [x] 1/2"), "TS [x] 1/2");
        assert_eq!(replace_cuid("CUID#12 - x CUID#"), "CUID#N - x CUID#");
        assert_eq!(
            replace_port("a:401234 b:40123/ c:40123", 40123),
            "a:401234 b:PORT/ c:PORT"
        );
        assert_eq!(
            strip_source_locations("Exception: [download_helper.cc:562] errorCode=1 [x] [a.cc:]"),
            "Exception: errorCode=1 [x] [a.cc:]"
        );
    }

    #[test]
    fn readouts_and_summaries_are_counted_not_compared() {
        let ev = events(
            "[#G6 0B/1.0MiB(0%) CN:1 DL:0B]\n *** Download Progress Summary as of Sat *** \n\
             ====\n[#G6 0B/1.0MiB(0%) CN:1 DL:0B]\nFILE: {DIR}/f.bin\n----\n\nTS [NOTICE] x\n",
        );
        assert_eq!((ev.readouts, ev.summaries), (1, 1));
        assert_eq!(ev.events.len(), 1);
    }

    #[test]
    fn help_blocks_fold_to_names_and_defaults() {
        let text = "Usage:\n -x, --max-connection-per-server=NUM The maximum number of\n\
                    \x20                             server.\n\n\
                    \x20                             Possible Values: 1-16\n\
                    \x20                             Default: 1\n\
                    \x20                             Tags: #basic\n\n\
                    \x20--check-certificate[=true|false] Verify\n\
                    \x20to make it so, use\n\x20--split=4 --min-split-size=1M.\n\
                    \nDid you mean:\n\t--out\n\t--log\n";
        assert_eq!(
            fold_help(text),
            vec![
                "Usage:",
                "OPTION -x, --max-connection-per-server",
                "  Default: 1",
                "OPTION --check-certificate",
                "Did you mean:",
                "\t--out",
                "\t--log"
            ]
        );
        assert_eq!(
            option_head(" -h, --help[=TAG|KEYWORD]  Print").unwrap(),
            "-h, --help"
        );
        assert_eq!(option_head("  -> errorCode=1"), None);
    }
}
