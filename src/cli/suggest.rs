//! Long options as getopt_long finds them (an exact name or a unique prefix), and the
//! "Did you mean" list for one that is not there.
use super::defs::{self, OptDef, OPTIONS};
use super::help::USAGE_LINE;
use super::parse::UsageError;

/// Finds a long option by exact name or unique prefix, as getopt_long does; `Err` holds the
/// options an ambiguous prefix matches (empty when nothing matches).
pub(super) fn lookup_long(name: &str) -> Result<&'static OptDef, Vec<&'static OptDef>> {
    if let Some(o) = defs::by_name(name) {
        return Ok(o);
    }
    let matches: Vec<&'static OptDef> = OPTIONS
        .iter()
        .filter(|o| o.name.starts_with(name))
        .collect();
    if matches.len() == 1 {
        Ok(matches[0])
    } else {
        Err(matches)
    }
}

/// The error for an unknown or ambiguous `--typed` (with any attached `=value`, as glibc shows it):
/// glibc's line, the usage, and aria2's "Did you mean" list.
pub(super) fn long_option_error(typed: &str, matches: &[&OptDef]) -> UsageError {
    let first = if matches.is_empty() {
        format!("ringdl: unrecognized option '--{typed}'")
    } else {
        let names: Vec<String> = matches.iter().map(|o| format!("'--{}'", o.name)).collect();
        format!(
            "ringdl: option '--{typed}' is ambiguous; possibilities: {}",
            names.join(" ")
        )
    };
    let mut message = format!("{first}\n{USAGE_LINE}\nSee 'ringdl -h'.");
    // Ranked on the name alone: "--dri=/x" should still suggest --dir.
    let near = suggestions(typed.split('=').next().unwrap_or(typed));
    if !near.is_empty() {
        message.push_str("\n\nDid you mean:");
        for s in near {
            message.push_str("\n\t--");
            message.push_str(s);
        }
    }
    UsageError {
        message,
        exit_code: 28,
    }
}

/// Option names close to a mistyped one, as aria2 ranks them: an option the typed text is a prefix
/// of costs 0, any other the weighted edit distance below; all options at the lowest cost are
/// suggested, none when that cost is 7 or more.
pub(super) fn suggestions(typed: &str) -> Vec<&'static str> {
    let typed = typed.trim_start_matches('-');
    if typed.is_empty() {
        return Vec::new();
    }
    let mut scored: Vec<(usize, usize, &'static str)> = OPTIONS
        .iter()
        .enumerate()
        .map(|(i, o)| {
            let cost = if o.name.starts_with(typed) {
                0
            } else {
                edit_distance(typed, o.name)
            };
            (cost, i, o.name)
        })
        .collect();
    scored.sort();
    let best = scored.first().map_or(usize::MAX, |s| s.0);
    if best >= 7 {
        return Vec::new();
    }
    scored
        .into_iter()
        .take_while(|s| s.0 == best)
        .map(|s| s.2)
        .collect()
}

/// Weighted edit distance from `a` (typed) to `b` (an option name): swapping two neighbours is
/// free, a substitution costs 2, skipping a character of `b` 1, skipping one of `a` 4 (but 1 while
/// nothing of `b` has been matched, so junk in front of the name is cheap).
pub(super) fn edit_distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    let mut before: Vec<usize> = vec![0; b.len() + 1];
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for i in 1..=a.len() {
        let mut cur = vec![i; b.len() + 1];
        for j in 1..=b.len() {
            let mut v = prev[j - 1] + if a[i - 1] == b[j - 1] { 0 } else { 2 };
            if i >= 2
                && j >= 2
                && a[i - 1] != b[j - 1]
                && a[i - 2] == b[j - 1]
                && a[i - 1] == b[j - 2]
            {
                v = v.min(before[j - 2]);
            }
            v = v.min(prev[j] + 4).min(cur[j - 1] + 1);
            cur[j] = v;
        }
        before = std::mem::replace(&mut prev, cur);
    }
    prev[b.len()]
}
