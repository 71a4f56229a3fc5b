//! `-P/--parameterized-uri`: a URI with choices (`{a,b,c}`) and loops (`[1-9]`, `[001-100:2]`,
//! `[a-z]`, `[AA-ZZ]`) stands for every combination, earlier parts varying slowest, as aria2c
//! expands it. The combinations are made one at a time as they are asked for ([`Expansion`]): a
//! pattern standing for a million URIs costs the memory of one.
//!
//! aria2c's rules, kept: a loop whose start is past its end stands for nothing (the brackets
//! vanish); both ends of the same width pad with zeros (`[08-10]` gives 08, 09, 10); letters count
//! in base 26 (`a`..`z`, then `ba`); a choice list drops empty and blank items; a pattern whose
//! only combination is empty stands for no URI at all.

/// One part of a pattern.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Part {
    Text(String),
    Choice(Vec<String>),
    Loop {
        start: u32,
        end: u32,
        step: u32,
        /// `None`: decimal; `Some(b'a')`/`Some(b'A')`: letters in base 26 from that zero.
        letters: Option<u8>,
        width: usize,
    },
}

impl Part {
    /// How many values this part takes.
    fn count(&self) -> u64 {
        match self {
            Part::Text(_) => 1,
            Part::Choice(c) => c.len() as u64,
            Part::Loop {
                start, end, step, ..
            } => u64::from((end - start) / step + 1),
        }
    }

    fn value(&self, i: u64, out: &mut String) {
        match self {
            Part::Text(t) => out.push_str(t),
            Part::Choice(c) => out.push_str(&c[i as usize]),
            Part::Loop {
                start,
                step,
                letters,
                width,
                ..
            } => {
                let n = u64::from(*start) + i * u64::from(*step);
                match letters {
                    None => out.push_str(&format!("{n:0width$}")),
                    Some(zero) => out.push_str(&base26(n, *zero, *width)),
                }
            }
        }
    }
}

fn base26(mut n: u64, zero: u8, width: usize) -> String {
    let mut digits = Vec::new();
    while n > 0 {
        digits.push(zero + (n % 26) as u8);
        n /= 26;
    }
    let width = if width == 0 && digits.is_empty() {
        1
    } else {
        width
    };
    while digits.len() < width {
        digits.push(zero);
    }
    digits.reverse();
    String::from_utf8(digits).unwrap_or_default()
}

/// Every URI a pattern stands for, made as it is asked for.
#[derive(Debug, Clone)]
pub struct Expansion {
    parts: Vec<Part>,
    /// The next combination's index in each part; `None` once all are given.
    next: Option<Vec<u64>>,
    total: u64,
}

impl Expansion {
    /// How many URIs it stands for (saturating).
    pub fn count(&self) -> u64 {
        self.total
    }
}

impl Iterator for Expansion {
    type Item = String;

    fn next(&mut self) -> Option<String> {
        let idx = self.next.as_mut()?;
        let mut out = String::new();
        for (p, &i) in self.parts.iter().zip(idx.iter()) {
            p.value(i, &mut out);
        }
        // The last part varies fastest.
        let mut k = self.parts.len();
        loop {
            if k == 0 {
                self.next = None;
                break;
            }
            k -= 1;
            idx[k] += 1;
            if idx[k] < self.parts[k].count() {
                break;
            }
            idx[k] = 0;
        }
        Some(out)
    }
}

/// Parses `pattern`; `Err` is aria2c's message for a malformed one.
pub fn expand(pattern: &str) -> Result<Expansion, String> {
    let mut parts = Vec::new();
    let mut rest = pattern;
    while !rest.is_empty() {
        let at = rest.find(['{', '[']).unwrap_or(rest.len());
        if at > 0 {
            parts.push(Part::Text(rest[..at].to_string()));
        }
        rest = &rest[at..];
        if rest.starts_with('{') {
            let close = rest
                .find('}')
                .ok_or("Missing '}' in the parameterized string.")?;
            let choices: Vec<String> = rest[1..close]
                .split(',')
                .map(str::trim)
                .filter(|c| !c.is_empty())
                .map(str::to_string)
                .collect();
            parts.push(Part::Choice(choices));
            rest = &rest[close + 1..];
        } else if rest.starts_with('[') {
            let close = rest
                .find(']')
                .ok_or("Missing ']' in the parameterized string.")?;
            if let Some(p) = parse_loop(&rest[1..close])? {
                parts.push(p);
            }
            rest = &rest[close + 1..];
        }
    }
    let total = parts
        .iter()
        .map(Part::count)
        .fold(1u64, |a, b| a.saturating_mul(b));
    // A pattern whose only combination is empty stands for nothing.
    let only_empty = total == 1
        && parts.iter().all(|p| match p {
            Part::Text(t) => t.is_empty(),
            Part::Choice(c) => c.iter().all(String::is_empty),
            Part::Loop { .. } => false,
        });
    let (next, total) = match total {
        0 => (None, 0),
        _ if only_empty => (None, 0),
        n => (Some(vec![0; parts.len()]), n),
    };
    Ok(Expansion { parts, next, total })
}

/// A loop's inside (`1-9`, `001-100:2`, `a-z`); `None` for one whose start is past its end.
fn parse_loop(inside: &str) -> Result<Option<Part>, String> {
    let (range, step) = match inside.split_once(':') {
        None => (inside, 1),
        Some((r, s)) => {
            let step: u32 = s
                .parse()
                .ok()
                .filter(|n| *n > 0)
                .ok_or("A step count must be a positive number.")?;
            if step > u32::from(u16::MAX) {
                return Err("Loop step overflow.".into());
            }
            (r, step)
        }
    };
    let (a, b) = range.split_once('-').ok_or("Loop range missing.")?;
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|c| c.is_ascii_digit());
    let lower = |s: &str| !s.is_empty() && s.bytes().all(|c| c.is_ascii_lowercase());
    let upper = |s: &str| !s.is_empty() && s.bytes().all(|c| c.is_ascii_uppercase());
    let same_width = a.len() == b.len();
    let (start, end, letters) = if digits(a) && digits(b) {
        let parse = |s: &str| -> Result<u32, String> {
            let n: u64 = s.parse().map_err(|_| "Loop range missing.".to_string())?;
            if n > u64::from(u16::MAX) {
                return Err("Loop range overflow.".into());
            }
            Ok(n as u32)
        };
        (parse(a)?, parse(b)?, None)
    } else if (lower(a) && lower(b)) || (upper(a) && upper(b)) {
        let zero = if lower(a) { b'a' } else { b'A' };
        let parse = |s: &str| -> Result<u32, String> {
            let mut n: u32 = 0;
            for c in s.bytes() {
                n = n * 26 + u32::from(c - zero);
                if n > u32::from(u16::MAX) {
                    return Err("Loop range overflow.".into());
                }
            }
            Ok(n)
        };
        (parse(a)?, parse(b)?, Some(zero))
    } else {
        return Err("Invalid loop range.".into());
    };
    if start > end {
        return Ok(None);
    }
    Ok(Some(Part::Loop {
        start,
        end,
        step,
        letters,
        width: if same_width { a.len() } else { 0 },
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(p: &str) -> Vec<String> {
        expand(p).unwrap().collect()
    }

    #[test]
    fn choices_and_loops_as_aria2c_expands_them() {
        assert_eq!(all("http://{a,b}/f"), ["http://a/f", "http://b/f"]);
        assert_eq!(all("x[1-3]"), ["x1", "x2", "x3"]);
        assert_eq!(all("x[08-10]"), ["x08", "x09", "x10"]);
        assert_eq!(all("x[8-10]"), ["x8", "x9", "x10"]);
        assert_eq!(all("x[001-007:3]"), ["x001", "x004", "x007"]);
        assert_eq!(all("[a-c]"), ["a", "b", "c"]);
        assert_eq!(all("[y-bb]"), ["y", "z", "ba", "bb"]);
        assert_eq!(all("[AY-BA]"), ["AY", "AZ", "BA"]);
        // Earlier parts vary slowest.
        assert_eq!(all("{a,b}[1-2]"), ["a1", "a2", "b1", "b2"]);
        // Blank choices are dropped; an empty list stands for nothing.
        assert_eq!(all("{a, ,b}"), ["a", "b"]);
        assert!(all("u{}v").is_empty());
        // A loop past its end vanishes.
        assert_eq!(all("x[3-1]y"), ["xy"]);
        assert!(all("").is_empty());
        assert_eq!(all("plain"), ["plain"]);
    }

    #[test]
    fn malformed_patterns_say_what_is_wrong() {
        assert_eq!(
            expand("x[1-3").unwrap_err(),
            "Missing ']' in the parameterized string."
        );
        assert_eq!(
            expand("x{a,b").unwrap_err(),
            "Missing '}' in the parameterized string."
        );
        assert_eq!(expand("[1:2]").unwrap_err(), "Loop range missing.");
        assert_eq!(expand("[a-9]").unwrap_err(), "Invalid loop range.");
        assert_eq!(
            expand("[1-9:0]").unwrap_err(),
            "A step count must be a positive number."
        );
        assert_eq!(expand("[1-70000]").unwrap_err(), "Loop range overflow.");
    }

    #[test]
    fn a_million_uris_are_counted_and_made_one_at_a_time() {
        let mut e = expand("http://h/[000-999]/[000-999]").unwrap();
        assert_eq!(Expansion::count(&e), 1_000_000);
        assert_eq!(e.next().as_deref(), Some("http://h/000/000"));
        assert_eq!(e.nth(999_998).as_deref(), Some("http://h/999/999"));
        assert_eq!(e.next(), None);
    }
}
