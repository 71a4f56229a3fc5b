//! The one error type of the HTTP layer: everything a server's bytes can get wrong.
//! Each variant carries enough to print one line that says what happened; the engine
//! maps variants to aria2 exit codes.

use std::fmt;

use super::range::ContentRange;

/// What went wrong while reading a response or building a request from server input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HttpError {
    /// The response head (including any interim 1xx heads) did not end within [`super::MAX_HEAD`] bytes.
    HeadTooLarge,
    /// The status line or a header field is not valid HTTP/1.x.
    Malformed(String),
    /// Content-Length is not a number, or several Content-Length values disagree.
    BadContentLength(String),
    /// The chunked body framing is broken (bad size line, missing CRLF, limits exceeded).
    BadChunk(String),
    /// A Content-Range value that cannot be parsed or is inconsistent.
    BadContentRange(String),
    /// A 206 response whose range is not the one we asked for (aria2's "Invalid range header").
    RangeMismatch {
        /// First byte we asked for.
        want_first: u64,
        /// Last byte we asked for (`None`: to the end, and the length is unknown).
        want_last: Option<u64>,
        /// The file length we believe in (`None`: unknown).
        want_total: Option<u64>,
        /// What the server said it sent.
        got: ContentRange,
    },
    /// A redirect Location that does not resolve to an http(s) URL.
    BadLocation(String),
    /// A Transfer-Encoding with a coding other than chunked (the field's value): the body
    /// would reach the file still encoded.
    UnsupportedTransferCoding(String),
}

/// Writes a number, or `*` when it is unknown (the Content-Range notation).
struct OrStar(Option<u64>);

impl fmt::Display for OrStar {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            Some(n) => write!(f, "{n}"),
            None => f.write_str("*"),
        }
    }
}

impl fmt::Display for HttpError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HttpError::HeadTooLarge => f.write_str("response header block exceeds 64 KiB"),
            HttpError::Malformed(why) => write!(f, "malformed HTTP response: {why}"),
            HttpError::BadContentLength(why) => write!(f, "bad Content-Length: {why}"),
            HttpError::BadChunk(why) => write!(f, "malformed chunked body: {why}"),
            HttpError::BadContentRange(why) => write!(f, "bad Content-Range: {why}"),
            HttpError::UnsupportedTransferCoding(v) => {
                write!(f, "Transfer encoding {v} is not supported.")
            }
            HttpError::RangeMismatch {
                want_first,
                want_last,
                want_total,
                got,
            } => {
                // aria2's wording (EX_INVALID_RANGE_HEADER); users and scripts grep for it.
                write!(
                    f,
                    "Invalid range header. Request: {}-{}/{}, Response: {}-{}/{}",
                    want_first,
                    OrStar(*want_last),
                    OrStar(*want_total),
                    got.first,
                    got.last,
                    OrStar(got.complete_length),
                )
            }
            HttpError::BadLocation(why) => write!(f, "unusable redirect location: {why}"),
        }
    }
}

impl std::error::Error for HttpError {}
