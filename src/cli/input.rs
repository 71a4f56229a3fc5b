//! `-i FILE` / `-i -`: one download per line (TAB-separated mirrors), followed by indented
//! `name=value` lines that apply to that download only; `#` comments and blank lines skipped. Read one
//! entry at a time, so a list of a million URIs is never held in memory.
use super::defs::OptDef;
use std::io::BufRead;

/// Longest line accepted. aria2 takes megabyte-long URIs; a line beyond this is surely not a list.
#[cfg(not(miri))]
pub const MAX_LINE: usize = 16 << 20;
/// Under Miri the limit is smaller, so that the test of it finishes in the interpreter.
#[cfg(miri)]
pub const MAX_LINE: usize = 256 << 10;

/// One download of the list.
#[derive(Debug, Clone)]
pub struct Entry {
    pub uris: Vec<String>,
    pub options: Vec<(&'static OptDef, String)>,
    /// Line number of the URI line, from 1.
    pub line: usize,
}

/// Reads entries from a list.
pub struct InputReader<R> {
    reader: R,
    name: String,
    line_no: usize,
    /// A URI line read ahead while finishing the previous entry.
    pending: Option<(usize, Vec<u8>)>,
    buf: Vec<u8>,
    /// Warnings found so far (unknown option lines); the caller drains them.
    pub warnings: Vec<String>,
    /// Errors that skip a URI (not one aria2 recognizes); the caller drains them.
    pub errors: Vec<String>,
}

/// Percent-encodes the bytes of a URI line that are not valid UTF-8, as aria2 does.
fn uri_text(bytes: &[u8]) -> String {
    match std::str::from_utf8(bytes) {
        Ok(s) => s.to_string(),
        Err(_) => {
            let mut out = String::with_capacity(bytes.len() * 3);
            for chunk in bytes.utf8_chunks() {
                out.push_str(chunk.valid());
                for b in chunk.invalid() {
                    out.push_str(&format!("%{b:02X}"));
                }
            }
            out
        }
    }
}

impl<R: BufRead> InputReader<R> {
    /// `name` is how errors refer to the list (its path, or `-`).
    pub fn new(reader: R, name: &str) -> InputReader<R> {
        InputReader {
            reader,
            name: name.to_string(),
            line_no: 0,
            pending: None,
            buf: Vec::new(),
            warnings: Vec::new(),
            errors: Vec::new(),
        }
    }

    /// The next raw line without its line ending, or None at the end.
    fn line(&mut self) -> Result<Option<Vec<u8>>, String> {
        self.buf.clear();
        let mut limited = std::io::Read::take(&mut self.reader, MAX_LINE as u64 + 1);
        let n = limited
            .read_until(b'\n', &mut self.buf)
            .map_err(|e| format!("Failed to read the file {}, cause: {e}", self.name))?;
        if n == 0 {
            return Ok(None);
        }
        self.line_no += 1;
        if self.buf.len() > MAX_LINE {
            return Err(format!(
                "Line {} of {} is longer than {} MiB",
                self.line_no,
                self.name,
                MAX_LINE >> 20
            ));
        }
        while matches!(self.buf.last(), Some(b'\n' | b'\r')) {
            self.buf.pop();
        }
        Ok(Some(std::mem::take(&mut self.buf)))
    }

    /// The next entry; `Err` is a one-line reason (an unreadable list, a bad option value). A URI
    /// aria2 does not recognize at all is left out with an error (in `errors`), and an entry left
    /// with none is skipped, as aria2c does: it is not a download that fails.
    pub fn next_entry(&mut self) -> Option<Result<Entry, String>> {
        loop {
            let mut entry = match self.next_raw_entry()? {
                Ok(e) => e,
                Err(e) => return Some(Err(e)),
            };
            let all = entry.uris.len();
            entry.uris.retain(|u| {
                let known =
                    super::parse::is_recognized_uri(u) || crate::metalink::is_document_file(u);
                if !known {
                    self.errors
                        .push(format!("Unrecognized URI or unsupported protocol: {u}"));
                }
                known
            });
            if entry.uris.is_empty() && all > 0 {
                continue;
            }
            return Some(Ok(entry));
        }
    }

    fn next_raw_entry(&mut self) -> Option<Result<Entry, String>> {
        // Find the URI line that starts the entry.
        let (line_no, uri_line) = match self.pending.take() {
            Some(p) => p,
            None => loop {
                match self.line() {
                    Err(e) => return Some(Err(e)),
                    Ok(None) => return None,
                    Ok(Some(l)) => {
                        if is_skipped(&l) {
                            continue;
                        }
                        // An indented line with no entry open starts one, as in aria2c: only
                        // the lines after a URI line are its options.
                        break (self.line_no, l);
                    }
                }
            },
        };
        let uris: Vec<String> = uri_text(&uri_line)
            .split('\t')
            .map(str::trim)
            .filter(|u| !u.is_empty())
            .map(str::to_string)
            .collect();
        let mut options = Vec::new();
        loop {
            match self.line() {
                Err(e) => return Some(Err(e)),
                Ok(None) => break,
                Ok(Some(l)) => {
                    if is_skipped(&l) {
                        continue;
                    }
                    if l[0] != b' ' && l[0] != b'\t' {
                        self.pending = Some((self.line_no, l));
                        break;
                    }
                    let text = String::from_utf8_lossy(&l).into_owned();
                    let opt = super::parse::config_line(text.trim());
                    match opt {
                        // aria2 ignores options that exist but do not apply per download.
                        Some((def, _)) if !def.in_input_file => {}
                        Some((def, value)) => {
                            if let Err(why) = super::parse::check_value(def, &value) {
                                return Some(Err(format!(
                                    "We encountered a problem while processing the option '--{}' at line {} of {}: {why}",
                                    def.name, self.line_no, self.name
                                )));
                            }
                            options.push((def, value));
                        }
                        None => self.warnings.push(format!("Unknown option: {text}")),
                    }
                }
            }
        }
        Some(Ok(Entry {
            uris,
            options,
            line: line_no,
        }))
    }
}

fn is_skipped(line: &[u8]) -> bool {
    let t = line.trim_ascii();
    t.is_empty() || t[0] == b'#'
}

impl<R: BufRead> Iterator for InputReader<R> {
    type Item = Result<Entry, String>;
    fn next(&mut self) -> Option<Self::Item> {
        self.next_entry()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entries(text: &[u8]) -> (Vec<Result<Entry, String>>, Vec<String>) {
        let mut r = InputReader::new(text, "list.txt");
        let all: Vec<_> = r.by_ref().collect();
        (all, r.warnings)
    }

    #[test]
    fn mirrors_options_comments() {
        let (es, warnings) = entries(
            b"# comment\nhttp://a/1\thttp://b/1\n  out=x.bin\n\tdir=/tmp/zz\n  foo=bar\n\nhttp://c/2\r\n  split=2\n",
        );
        assert_eq!(es.len(), 2);
        let first = es[0].as_ref().unwrap();
        assert_eq!(first.uris, vec!["http://a/1", "http://b/1"]);
        assert_eq!(first.line, 2);
        let opts: Vec<(&str, &str)> = first
            .options
            .iter()
            .map(|(d, v)| (d.name, v.as_str()))
            .collect();
        assert_eq!(opts, vec![("out", "x.bin"), ("dir", "/tmp/zz")]);
        let second = es[1].as_ref().unwrap();
        assert_eq!(second.uris, vec!["http://c/2"]);
        assert_eq!(second.options.len(), 1);
        assert_eq!(warnings, vec!["Unknown option:   foo=bar"]);
    }

    /// aria2c's reading: an indented line with no entry open is a URI line (only the lines after
    /// a URI line are its options), and an option named without `=` is `NAME=`, which for an
    /// option whose value is optional is the value it implies. ringdl used to drop the first
    /// as an option with nothing to apply to, and warn about the second as unknown.
    #[test]
    fn indented_uri_lines_and_bare_option_names() {
        let (es, warnings) =
            entries(b"# c\n\thttp://a/1\n out=x.bin\n  allow-overwrite\n  split\n  http://b/2\n");
        let first = es[0].as_ref().unwrap_err();
        assert!(first.contains("'--split' at line 5"), "{first}");
        let (es, warnings2) = entries(
            b"  http://a/1\n out=x.bin\n  allow-overwrite\n\tcontinue=\n  check-integrity=false\n",
        );
        let e = es[0].as_ref().unwrap();
        assert_eq!(e.uris, vec!["http://a/1"]);
        let opts: Vec<(&str, &str)> = e
            .options
            .iter()
            .map(|(d, v)| (d.name, v.as_str()))
            .collect();
        assert_eq!(
            opts,
            vec![
                ("out", "x.bin"),
                ("allow-overwrite", "true"),
                ("continue", "true"),
                ("check-integrity", "false")
            ]
        );
        assert!(
            warnings.is_empty() && warnings2.is_empty(),
            "{warnings:?} {warnings2:?}"
        );
    }

    /// A URI line aria2 cannot take for a URI at all (no scheme) is skipped with an error, and an
    /// entry left with no URI is no entry; one with a scheme stays, to fail as a download.
    /// ringdl used to make each a download that failed with exit 1.
    #[test]
    fn lines_that_are_no_uri_are_skipped_with_an_error() {
        let mut r = InputReader::new(
            &b"notauri\thttp://a/1\nout=x.bin\n  split=2\ngopher://z\n"[..],
            "list.txt",
        );
        let all: Vec<_> = r.by_ref().collect();
        let uris: Vec<Vec<String>> = all.into_iter().map(|e| e.unwrap().uris).collect();
        assert_eq!(uris, vec![vec!["http://a/1"], vec!["gopher://z"]]);
        assert_eq!(
            r.errors,
            vec![
                "Unrecognized URI or unsupported protocol: notauri",
                "Unrecognized URI or unsupported protocol: out=x.bin"
            ]
        );
    }

    #[test]
    fn bad_value_is_an_error_naming_the_line() {
        let (es, _) = entries(b"http://a/1\n  split=abc\n");
        let e = es[0].as_ref().unwrap_err();
        assert!(
            e.contains("'--split' at line 2 of list.txt: Bad number abc"),
            "{e}"
        );
    }

    #[test]
    fn an_entry_proxy_that_is_not_one_is_an_error_naming_the_line() {
        let (es, _) = entries(b"http://a/1\n  all-proxy=ftp://p:21\n");
        let e = es[0].as_ref().unwrap_err();
        assert!(
            e.contains("'--all-proxy' at line 2 of list.txt: unsupported proxy scheme ftp://"),
            "{e}"
        );
        let (es, _) = entries(b"http://a/1\n  https-proxy=socks5h://p\n  no-proxy=.lan\n");
        assert_eq!(es[0].as_ref().map(|e| e.options.len()), Ok(2));
    }

    #[test]
    fn invalid_utf8_is_percent_encoded() {
        let (es, _) = entries(b"http://h/\xff\xfe.bin\n");
        assert_eq!(es[0].as_ref().unwrap().uris, vec!["http://h/%FF%FE.bin"]);
    }

    #[test]
    fn long_lines_are_accepted_up_to_the_limit() {
        let mut text = b"http://h/".to_vec();
        let long = MAX_LINE / 16;
        text.extend(std::iter::repeat_n(b'a', long));
        text.push(b'\n');
        let (es, _) = entries(&text);
        assert_eq!(es[0].as_ref().unwrap().uris[0].len(), 9 + long);
        let mut huge = b"http://h/".to_vec();
        huge.extend(std::iter::repeat_n(b'a', MAX_LINE + 10));
        let (es, _) = entries(&huge);
        assert!(es[0].as_ref().unwrap_err().contains("longer than"));
    }

    #[test]
    fn a_million_entries_stream() {
        struct Gen(u64, Vec<u8>);
        impl std::io::Read for Gen {
            fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
                if self.1.is_empty() {
                    if self.0 == 0 {
                        return Ok(0);
                    }
                    self.0 -= 1;
                    self.1 = format!("http://h/{}\n  out=f{}\n", self.0, self.0).into_bytes();
                }
                let n = out.len().min(self.1.len());
                out[..n].copy_from_slice(&self.1[..n]);
                self.1.drain(..n);
                Ok(n)
            }
        }
        // A thousandth of it under Miri, where every byte is interpreted.
        let total = if cfg!(miri) { 1_000 } else { 1_000_000 };
        let r = InputReader::new(std::io::BufReader::new(Gen(total, Vec::new())), "gen");
        let mut n = 0u64;
        for e in r {
            assert_eq!(e.unwrap().options.len(), 1);
            n += 1;
        }
        assert_eq!(n, total);
    }
}
