//! Content-Range: parsing the value of a 206 response and deciding, with aria2's rule,
//! whether it is the range we asked for. Requesting a range is `request.rs`'s job.

use super::error::HttpError;

/// A parsed `Content-Range: bytes first-last/complete_length` value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ContentRange {
    /// First byte position sent (inclusive).
    pub first: u64,
    /// Last byte position sent (inclusive).
    pub last: u64,
    /// Length of the whole representation; `None` when the server wrote `*`.
    pub complete_length: Option<u64>,
}

/// Parses a Content-Range value: `bytes a-b/c` or `bytes a-b/*`.
///
/// Like aria2, this also accepts `bytes=a-b/c` and a missing `bytes` unit, which some
/// servers send. Requires `a <= b` and, when `c` is known, `b < c`.
pub fn parse_content_range(value: &str) -> Result<ContentRange, HttpError> {
    let bad = |why: &str| HttpError::BadContentRange(format!("{why} in {value:?}"));
    let v = value.trim();
    let spec = match v.get(..5) {
        Some(unit) if unit.eq_ignore_ascii_case("bytes") => {
            let rest = &v[5..];
            if let Some(r) = rest.strip_prefix('=') {
                r.trim_start()
            } else if rest.starts_with([' ', '\t']) {
                rest.trim_start()
            } else {
                return Err(bad("unknown range unit"));
            }
        }
        _ => v,
    };
    let (range, complete) = spec.split_once('/').ok_or_else(|| bad("no '/'"))?;
    let (first, last) = range.split_once('-').ok_or_else(|| bad("no '-'"))?;
    let first = parse_pos(first.trim()).ok_or_else(|| bad("bad first byte position"))?;
    let last = parse_pos(last.trim()).ok_or_else(|| bad("bad last byte position"))?;
    let complete = complete.trim();
    let complete_length = if complete == "*" {
        None
    } else {
        Some(parse_pos(complete).ok_or_else(|| bad("bad complete length"))?)
    };
    if first > last {
        return Err(bad("first byte after last byte"));
    }
    if let Some(len) = complete_length {
        if last >= len {
            return Err(bad("last byte beyond complete length"));
        }
    }
    Ok(ContentRange {
        first,
        last,
        complete_length,
    })
}

/// Parses 1*DIGIT into a u64 (no sign, no spaces, no overflow).
pub(crate) fn parse_pos(s: &str) -> Option<u64> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

impl ContentRange {
    /// Does this response satisfy a request for `[want_first, want_last]` (`want_last` `None`:
    /// to the end) of a file whose length we believe is `total` (`None`: unknown)?
    ///
    /// aria2's rule (`HttpRequest::isRangeSatisfied`): the first byte must be the one asked
    /// for; the last byte must be the one asked for, or `total - 1` for an open-ended request;
    /// the complete length must equal `total` when both are known. When neither `total` nor
    /// the request's end is known, an open-ended request must be answered up to the
    /// response's own complete length, if it states one.
    pub fn check(
        &self,
        want_first: u64,
        want_last: Option<u64>,
        total: Option<u64>,
    ) -> Result<(), HttpError> {
        let expected_last = want_last.or_else(|| total.and_then(|t| t.checked_sub(1)));
        let first_ok = self.first == want_first;
        let last_ok = match expected_last {
            Some(l) => self.last == l,
            None => match self.complete_length {
                Some(c) => c.checked_sub(1) == Some(self.last),
                None => true,
            },
        };
        let total_ok = match (total, self.complete_length) {
            (Some(t), Some(c)) => t == c,
            (Some(_), None) => true,
            (None, _) => true,
        };
        if first_ok && last_ok && total_ok {
            Ok(())
        } else {
            Err(HttpError::RangeMismatch {
                want_first,
                want_last: expected_last,
                want_total: total,
                got: *self,
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cr(first: u64, last: u64, complete_length: Option<u64>) -> ContentRange {
        ContentRange {
            first,
            last,
            complete_length,
        }
    }

    #[test]
    fn parses_standard_forms() {
        assert_eq!(
            parse_content_range("bytes 0-99/100").unwrap(),
            cr(0, 99, Some(100))
        );
        assert_eq!(parse_content_range("bytes 5-9/*").unwrap(), cr(5, 9, None));
        assert_eq!(
            parse_content_range("  BYTES   7-7/8 ").unwrap(),
            cr(7, 7, Some(8))
        );
        // Forms aria2 tolerates from broken servers.
        assert_eq!(
            parse_content_range("bytes=100-199/200").unwrap(),
            cr(100, 199, Some(200))
        );
        assert_eq!(
            parse_content_range("100-199/200").unwrap(),
            cr(100, 199, Some(200))
        );
        assert_eq!(
            parse_content_range("bytes 0-18446744073709551614/18446744073709551615").unwrap(),
            cr(0, u64::MAX - 1, Some(u64::MAX))
        );
    }

    #[test]
    fn rejects_bad_values() {
        for v in [
            "",
            "bytes",
            "bytes */100",
            "bytes 0-99",
            "bytes 0-/100",
            "bytes -5/100",
            "bytes 5-4/100",
            "bytes 0-100/100",
            "bytes 0-99/0",
            "bytes +1-99/100",
            "bytes 0-99/1e3",
            "bytes 0-99/18446744073709551616",
            "items 0-99/100",
            "bytesx 0-99/100",
            "bytes 0-9-9/100",
        ] {
            match parse_content_range(v) {
                Err(HttpError::BadContentRange(msg)) => {
                    assert!(msg.contains(&format!("{v:?}")), "{msg}")
                }
                other => panic!("{v:?} gave {other:?}"),
            }
        }
    }

    #[test]
    fn check_matches() {
        let r = cr(100, 199, Some(1000));
        assert_eq!(r.check(100, Some(199), Some(1000)), Ok(()));
        assert_eq!(r.check(100, Some(199), None), Ok(()));
        // Open-ended to the end of a known file.
        let tail = cr(900, 999, Some(1000));
        assert_eq!(tail.check(900, None, Some(1000)), Ok(()));
        // Open-ended, length unknown: the response must reach its own end.
        assert_eq!(tail.check(900, None, None), Ok(()));
        // "*" complete length: nothing to compare it with.
        let star = cr(100, 199, None);
        assert_eq!(star.check(100, Some(199), Some(1000)), Ok(()));
        assert_eq!(star.check(100, None, None), Ok(()));
    }

    #[test]
    fn check_wrong_first() {
        let r = cr(0, 3145727, Some(3145728));
        let err = r.check(999424, Some(3145727), Some(3145728)).unwrap_err();
        assert_eq!(
            err.to_string(),
            "Invalid range header. Request: 999424-3145727/3145728, Response: 0-3145727/3145728"
        );
        // Same for an open-ended request: the expected last byte is reported.
        let err = r.check(999424, None, Some(3145728)).unwrap_err();
        assert_eq!(
            err.to_string(),
            "Invalid range header. Request: 999424-3145727/3145728, Response: 0-3145727/3145728"
        );
    }

    #[test]
    fn check_wrong_last() {
        let r = cr(100, 150, Some(1000));
        assert!(matches!(
            r.check(100, Some(199), Some(1000)),
            Err(HttpError::RangeMismatch { .. })
        ));
        // Open-ended request answered with a short range.
        assert!(r.check(100, None, Some(1000)).is_err());
        assert!(r.check(100, None, None).is_err());
    }

    #[test]
    fn check_wrong_total() {
        let r = cr(0, 99, Some(2000));
        let err = r.check(0, Some(99), Some(1000)).unwrap_err();
        assert_eq!(
            err,
            HttpError::RangeMismatch {
                want_first: 0,
                want_last: Some(99),
                want_total: Some(1000),
                got: r,
            }
        );
        assert_eq!(
            err.to_string(),
            "Invalid range header. Request: 0-99/1000, Response: 0-99/2000"
        );
    }

    #[test]
    fn check_unknown_values_print_as_star() {
        let r = cr(5, 9, None);
        let err = r.check(4, None, None).unwrap_err();
        assert_eq!(
            err.to_string(),
            "Invalid range header. Request: 4-*/*, Response: 5-9/*"
        );
    }
}
