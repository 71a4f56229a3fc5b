//! Markdown (the README's and KNOWN_DIFFERENCES.md's subset) to roff, escaped so that option
//! names stay copyable and no line starts a request.
use super::*;

/// `text` escaped for roff: backslashes, hyphens as `\-` (so option names stay copyable minus signs),
/// non-ASCII as `\[uXXXX]`, tabs and control characters as spaces; a word that starts with `-` (an
/// option) gets `\%`, so it is never hyphenated across lines. Protect a line's start with
/// [`roff_line`].
pub(super) fn roff(text: &str) -> String {
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
pub(super) fn roff_line(escaped: &str) -> String {
    let t = escaped.trim_start();
    if t.starts_with('.') || t.starts_with('\'') {
        format!("\\&{t}")
    } else {
        t.to_string()
    }
}

/// A quoted macro argument (`.SS "..."`).
pub(super) fn roff_arg(text: &str) -> String {
    format!("\"{}\"", roff(text).replace('"', "\\(dq"))
}

/// `text` in bold, its words never hyphenated: it is something to type (an option, a command).
pub(super) fn bold(text: &str) -> String {
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
pub(super) fn md_inline(text: &str) -> String {
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
pub(super) fn md_to_roff(md: &str) -> String {
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

pub(super) fn heading_level(line: &str) -> Option<usize> {
    let level = line.chars().take_while(|&c| c == '#').count();
    (level > 0 && line[level..].starts_with(' ')).then_some(level)
}

/// `* text`, `- text`, `+ text` (None) or `3. text` (Some(3)).
pub(super) fn list_item(line: &str) -> Option<(Option<u32>, &str)> {
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
pub(super) fn strip_marks(text: &str) -> String {
    text.replace(['`', '*'], "")
}

/// A Markdown table as a tagged list: the first cell of each row is the tag; the other cells follow,
/// each introduced by its column's heading.
pub(super) fn md_table(rows: &[String]) -> String {
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
