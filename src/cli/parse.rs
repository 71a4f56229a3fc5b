//! argv → [`Settings`] in two stages, like aria2c: first every option is matched against the table and
//! its raw value kept (last one wins, except cumulative ones), then values are validated and turned into
//! typed settings. A bad value is exit 28 with aria2's message shape; no URI is exit 1.
use super::defs::{self, ArgKind, OptDef, ValueKind};
use std::collections::HashMap;
use std::ffi::OsString;
use std::path::PathBuf;

/// Console log levels, lowest first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum LogLevel {
    Debug,
    Info,
    Notice,
    Warn,
    Error,
}

/// `--download-result`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResultMode {
    Default,
    Full,
    Hide,
}

/// Everything the engine and the UI need to know, validated.
#[derive(Debug, Clone)]
pub struct Settings {
    pub dir: PathBuf,
    pub out: Option<String>,
    pub max_concurrent: usize,
    pub max_conn_per_server: usize,
    pub split: usize,
    pub min_split_size: u64,
    pub force_sequential: bool,
    pub ca_certificate: Option<PathBuf>,
    pub check_certificate: bool,
    pub allow_overwrite: bool,
    pub auto_file_renaming: bool,
    pub console_log_level: LogLevel,
    pub summary_interval: u64,
    pub show_console_readout: bool,
    pub download_result: ResultMode,
    pub quiet: bool,
    pub timeout_secs: u64,
    pub connect_timeout_secs: u64,
    pub user_agent: String,
    pub headers: Vec<String>,
    pub uris: Vec<String>,
}

/// What the command line asks for.
#[derive(Debug)]
pub enum Command {
    Download(Box<Settings>),
    Help,
    Version,
}

/// A command line that cannot be run: the text to print on stderr and aria2's exit code.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UsageError {
    pub message: String,
    pub exit_code: i32,
}

const USAGE: &str = "Usage: ringdl [OPTIONS] [URI]...\nSee 'ringdl -h'.";

fn usage_error(first: String, exit_code: i32) -> UsageError {
    UsageError {
        message: format!("{first}\n{USAGE}"),
        exit_code,
    }
}

/// Finds a long option by exact name or unique prefix, as getopt_long does.
fn lookup_long(name: &str) -> Result<&'static OptDef, UsageError> {
    if let Some(o) = defs::by_name(name) {
        return Ok(o);
    }
    let matches: Vec<&OptDef> = defs::OPTIONS
        .iter()
        .filter(|o| o.name.starts_with(name))
        .collect();
    match matches.len() {
        1 => Ok(matches[0]),
        0 => {
            let mut msg = format!("ringdl: unrecognized option '--{name}'\n{USAGE}");
            let near = suggestions(name);
            if !near.is_empty() {
                msg.push_str("\n\nDid you mean:");
                for s in near {
                    msg.push_str("\n\t--");
                    msg.push_str(s);
                }
            }
            Err(UsageError {
                message: msg,
                exit_code: 28,
            })
        }
        _ => {
            let names: Vec<String> = matches.iter().map(|o| format!("'--{}'", o.name)).collect();
            Err(usage_error(
                format!(
                    "ringdl: option '--{name}' is ambiguous; possibilities: {}",
                    names.join(" ")
                ),
                28,
            ))
        }
    }
}

/// Option names close to a mistyped one (edit distance), best first.
fn suggestions(name: &str) -> Vec<&'static str> {
    let mut scored: Vec<(usize, &'static str)> = defs::OPTIONS
        .iter()
        .map(|o| (edit_distance(name, o.name), o.name))
        .filter(|(d, n)| *d <= n.len().max(name.len()) / 3 + 1)
        .collect();
    scored.sort();
    scored.into_iter().take(3).map(|(_, n)| n).collect()
}

fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1];
        for (j, cb) in b.iter().enumerate() {
            let sub = prev[j] + usize::from(ca != *cb);
            cur.push(sub.min(prev[j + 1] + 1).min(cur[j] + 1));
        }
        prev = cur;
    }
    prev[b.len()]
}

fn os_to_string(v: OsString) -> Result<String, UsageError> {
    v.into_string()
        .map_err(|v| usage_error(format!("ringdl: argument is not valid UTF-8: {v:?}"), 28))
}

/// Parses a full argv (without the program name).
pub fn parse_args<I>(args: I) -> Result<Command, UsageError>
where
    I: IntoIterator,
    I::Item: Into<OsString>,
{
    use lexopt::Arg;
    let mut parser = lexopt::Parser::from_args(args);
    let mut values: HashMap<&'static str, Vec<String>> = HashMap::new();
    let mut uris = Vec::new();
    loop {
        let arg = match parser.next() {
            Ok(Some(a)) => a,
            Ok(None) => break,
            Err(e) => return Err(usage_error(format!("ringdl: {e}"), 28)),
        };
        let def = match arg {
            Arg::Value(v) => {
                uris.push(os_to_string(v)?);
                continue;
            }
            Arg::Long(name) => lookup_long(name)?,
            Arg::Short(c) => defs::by_short(c)
                .ok_or_else(|| usage_error(format!("ringdl: invalid option -- '{c}'"), 28))?,
        };
        let value = match def.arg {
            ArgKind::None => String::new(),
            ArgKind::Required => match parser.value() {
                Ok(v) => os_to_string(v)?,
                Err(_) => {
                    return Err(usage_error(
                        format!("ringdl: option '--{}' requires an argument", def.name),
                        28,
                    ))
                }
            },
            ArgKind::Optional => match parser.optional_value() {
                Some(v) => os_to_string(v)?,
                None => def.implied.to_string(),
            },
        };
        match def.name {
            "help" => return Ok(Command::Help),
            "version" => return Ok(Command::Version),
            _ => {}
        }
        let slot = values.entry(def.name).or_default();
        if !def.cumulative {
            slot.clear();
        }
        slot.push(value);
    }
    let settings = build(&values, uris)?;
    Ok(Command::Download(Box::new(settings)))
}

/// aria2's "bad value" report: which option, why, and that option's help.
fn bad_value(def: &OptDef, why: String) -> UsageError {
    let mut msg = format!(
        "Exception: errorCode=28 We encountered a problem while processing the option '--{}'.\n  -> errorCode=1 {why}\nUsage:\n --{}",
        def.name, def.name
    );
    if let Some(c) = def.short {
        msg = msg.replacen(
            &format!(" --{}", def.name),
            &format!(" -{c}, --{}", def.name),
            1,
        );
    }
    msg.push_str(&format!("\n    {}", def.help));
    if let Some(d) = def.default {
        msg.push_str(&format!("\n    Default: {d}"));
    }
    UsageError {
        message: msg,
        exit_code: 28,
    }
}

/// The validated value of one option: the user's, else the table default.
fn raw<'a>(values: &'a HashMap<&'static str, Vec<String>>, name: &str) -> Option<&'a str> {
    values
        .get(name)
        .and_then(|v| v.last())
        .map(String::as_str)
        .or_else(|| defs::by_name(name).and_then(|d| d.default))
}

fn def(name: &str) -> Result<&'static OptDef, UsageError> {
    defs::by_name(name)
        .ok_or_else(|| usage_error(format!("ringdl: internal: no option --{name}"), 1))
}

fn get_bool(values: &HashMap<&'static str, Vec<String>>, name: &str) -> Result<bool, UsageError> {
    match raw(values, name) {
        Some("true") => Ok(true),
        None => Ok(false),
        Some("false") => Ok(false),
        Some(_) => Err(bad_value(
            def(name)?,
            format!("{name} must be either 'true' or 'false'."),
        )),
    }
}

fn get_int(values: &HashMap<&'static str, Vec<String>>, name: &str) -> Result<i64, UsageError> {
    let d = def(name)?;
    let s = raw(values, name).unwrap_or("0");
    let v: i64 = s
        .parse()
        .map_err(|_| bad_value(d, format!("Bad number {s}")))?;
    if let ValueKind::Int { min, max } = d.value {
        if v < min || v > max {
            let why = if max == i64::MAX {
                format!("{name} must be greater than or equal to {min}.")
            } else {
                format!("{name} must be between {min} and {max}.")
            };
            return Err(bad_value(d, why));
        }
    }
    Ok(v)
}

fn get_size(values: &HashMap<&'static str, Vec<String>>, name: &str) -> Result<u64, UsageError> {
    let d = def(name)?;
    let s = raw(values, name).unwrap_or("0");
    let v = defs::parse_size(s)
        .ok_or_else(|| bad_value(d, format!("Bad or negative value detected: {s}")))?;
    if let ValueKind::Size { min, max } = d.value {
        if v < min || v > max {
            return Err(bad_value(
                d,
                format!("{name} must be between {min} and {max}."),
            ));
        }
    }
    Ok(v)
}

fn get_choice<'a>(
    values: &'a HashMap<&'static str, Vec<String>>,
    name: &str,
) -> Result<&'a str, UsageError> {
    let d = def(name)?;
    let s = raw(values, name).unwrap_or("");
    if let ValueKind::Choice(choices) = d.value {
        if !choices.contains(&s) {
            let list: String = choices.iter().map(|c| format!("'{c}' ")).collect();
            return Err(bad_value(
                d,
                format!("{name} must be one of the following:{list}"),
            ));
        }
    }
    Ok(s)
}

fn build(
    values: &HashMap<&'static str, Vec<String>>,
    uris: Vec<String>,
) -> Result<Settings, UsageError> {
    let dir = match raw(values, "dir") {
        Some(d) if !d.is_empty() => PathBuf::from(d),
        _ => std::env::current_dir().unwrap_or_else(|_| PathBuf::from(".")),
    };
    let console_log_level = match get_choice(values, "console-log-level")? {
        "debug" => LogLevel::Debug,
        "info" => LogLevel::Info,
        "warn" => LogLevel::Warn,
        "error" => LogLevel::Error,
        _ => LogLevel::Notice,
    };
    let download_result = match get_choice(values, "download-result")? {
        "full" => ResultMode::Full,
        "hide" => ResultMode::Hide,
        _ => ResultMode::Default,
    };
    let settings = Settings {
        dir,
        out: raw(values, "out")
            .filter(|s| !s.is_empty())
            .map(str::to_string),
        max_concurrent: get_int(values, "max-concurrent-downloads")? as usize,
        max_conn_per_server: get_int(values, "max-connection-per-server")? as usize,
        split: get_int(values, "split")? as usize,
        min_split_size: get_size(values, "min-split-size")?,
        force_sequential: get_bool(values, "force-sequential")?,
        ca_certificate: raw(values, "ca-certificate")
            .filter(|s| !s.is_empty())
            .map(PathBuf::from),
        check_certificate: get_bool(values, "check-certificate")?,
        allow_overwrite: get_bool(values, "allow-overwrite")?,
        auto_file_renaming: get_bool(values, "auto-file-renaming")?,
        console_log_level,
        summary_interval: get_int(values, "summary-interval")? as u64,
        show_console_readout: get_choice(values, "show-console-readout")? == "true",
        download_result,
        quiet: get_bool(values, "quiet")?,
        timeout_secs: get_int(values, "timeout")? as u64,
        connect_timeout_secs: get_int(values, "connect-timeout")? as u64,
        user_agent: raw(values, "user-agent").unwrap_or_default().to_string(),
        headers: values.get("header").cloned().unwrap_or_default(),
        uris,
    };
    if settings.uris.is_empty() {
        return Err(usage_error("Specify at least one URL.".to_string(), 1));
    }
    Ok(settings)
}

/// `-h`: every option from the table, grouped under its first tag.
pub fn help_text() -> String {
    let mut out = format!(
        "Usage: ringdl [OPTIONS] [URI]...\n\nringdl {} — downloads HTTP(S) URIs like aria2c, through one io_uring ring.\n\nOptions:\n",
        env!("CARGO_PKG_VERSION")
    );
    for o in defs::OPTIONS {
        let short = o.short.map(|c| format!("-{c}, ")).unwrap_or_default();
        let arg = match o.arg {
            ArgKind::None => String::new(),
            ArgKind::Required => format!("={}", o.value_name),
            ArgKind::Optional => format!("[={}]", o.value_name),
        };
        out.push_str(&format!(" {short}--{}{arg}\n    {}\n", o.name, o.help));
        if let Some(d) = o.default {
            out.push_str(&format!("    Default: {d}\n"));
        }
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(args: &[&str]) -> Settings {
        match parse_args(args.iter().copied()) {
            Ok(Command::Download(s)) => *s,
            other => panic!("unexpected {other:?}"),
        }
    }

    fn err(args: &[&str]) -> UsageError {
        match parse_args(args.iter().copied()) {
            Err(e) => e,
            other => panic!("expected an error, got {other:?}"),
        }
    }

    #[test]
    fn defaults_match_aria2() {
        let s = settings(&["http://h/f"]);
        assert_eq!(s.max_concurrent, 5);
        assert_eq!(s.max_conn_per_server, 1);
        assert_eq!(s.split, 5);
        assert_eq!(s.min_split_size, 20 << 20);
        assert!(s.check_certificate);
        assert!(!s.allow_overwrite);
        assert!(!s.force_sequential);
        assert_eq!(s.summary_interval, 60);
        assert_eq!(s.console_log_level, LogLevel::Notice);
        assert_eq!(s.uris, vec!["http://h/f"]);
    }

    #[test]
    fn value_forms() {
        let s = settings(&[
            "-x16",
            "-s",
            "8",
            "--min-split-size=1M",
            "--dir",
            "/tmp/x",
            "u",
            "-j2",
        ]);
        assert_eq!(
            (s.max_conn_per_server, s.split, s.min_split_size),
            (16, 8, 1 << 20)
        );
        assert_eq!(s.dir, PathBuf::from("/tmp/x"));
        assert_eq!(s.max_concurrent, 2);
        assert_eq!(s.uris, vec!["u"]);
    }

    #[test]
    fn optional_booleans_only_attach() {
        assert!(!settings(&["--check-certificate=false", "u"]).check_certificate);
        assert!(settings(&["--allow-overwrite", "u"]).allow_overwrite);
        assert!(settings(&["-Z", "u"]).force_sequential);
        assert!(!settings(&["-Zfalse", "u"]).force_sequential);
        // A detached "false" is a URI, as with aria2c.
        let s = settings(&["--check-certificate", "false", "u"]);
        assert!(s.check_certificate);
        assert_eq!(s.uris, vec!["false", "u"]);
        let e = err(&["--check-certificate=maybe", "u"]);
        assert_eq!(e.exit_code, 28);
        assert!(e
            .message
            .contains("check-certificate must be either 'true' or 'false'."));
    }

    #[test]
    fn prefixes_and_last_one_wins() {
        let s = settings(&["--max-conn=4", "--max-conn=6", "u"]);
        assert_eq!(s.max_conn_per_server, 6);
        let e = err(&["--ma=4", "u"]);
        assert!(e.message.contains("is ambiguous"), "{}", e.message);
        assert_eq!(e.exit_code, 28);
    }

    #[test]
    fn header_accumulates() {
        let s = settings(&["--header=A: 1", "--header", "B: 2", "u"]);
        assert_eq!(s.headers, vec!["A: 1", "B: 2"]);
    }

    #[test]
    fn bad_values_exit_28() {
        let e = err(&["-x", "0", "u"]);
        assert_eq!(e.exit_code, 28);
        assert!(
            e.message
                .contains("max-connection-per-server must be between 1 and 64."),
            "{}",
            e.message
        );
        assert!(err(&["-k", "5G", "u"])
            .message
            .contains("Bad or negative value detected: 5G"));
        assert!(err(&["-k", "512K", "u"])
            .message
            .contains("min-split-size must be between"));
        assert!(err(&["-j", "abc", "u"]).message.contains("Bad number abc"));
        assert!(err(&["--console-log-level=loud", "u"])
            .message
            .contains("console-log-level must be one of the following:'debug' 'info' 'notice' 'warn' 'error' "));
        assert_eq!(err(&["--dir"]).exit_code, 28);
    }

    #[test]
    fn unknown_option_suggests() {
        let e = err(&["--dri=/x", "u"]);
        assert_eq!(e.exit_code, 28);
        assert!(
            e.message.starts_with("ringdl: unrecognized option '--dri'"),
            "{}",
            e.message
        );
        assert!(
            e.message.contains("Did you mean:\n\t--dir"),
            "{}",
            e.message
        );
        assert_eq!(err(&["-y", "u"]).exit_code, 28);
    }

    #[test]
    fn no_uri_is_exit_1() {
        let e = err(&["-x2"]);
        assert_eq!(e.exit_code, 1);
        assert!(e.message.starts_with("Specify at least one URL."));
    }

    #[test]
    fn double_dash_ends_options() {
        let s = settings(&["--", "-x2"]);
        assert_eq!(s.uris, vec!["-x2"]);
        assert_eq!(s.max_conn_per_server, 1);
    }

    #[test]
    fn help_and_version() {
        assert!(matches!(parse_args(["-h"]), Ok(Command::Help)));
        assert!(matches!(
            parse_args(["u", "--version"]),
            Ok(Command::Version)
        ));
        assert!(help_text().contains("--max-connection-per-server=N"));
    }
}
