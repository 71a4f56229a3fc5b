//! aria2's exit codes (its `error_code.h`), the one place they are named.

/// An aria2 exit code.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ExitCode(pub u8);

impl ExitCode {
    pub const OK: ExitCode = ExitCode(0);
    pub const UNKNOWN: ExitCode = ExitCode(1);
    pub const TIMEOUT: ExitCode = ExitCode(2);
    pub const NOT_FOUND: ExitCode = ExitCode(3);
    pub const NETWORK: ExitCode = ExitCode(6);
    pub const UNFINISHED: ExitCode = ExitCode(7);
    pub const CANNOT_RESUME: ExitCode = ExitCode(8);
    pub const NO_SPACE: ExitCode = ExitCode(9);
    pub const FILE_EXISTS: ExitCode = ExitCode(13);
    pub const RENAME_FAILED: ExitCode = ExitCode(14);
    pub const FILE_OPEN: ExitCode = ExitCode(15);
    pub const FILE_CREATE: ExitCode = ExitCode(16);
    pub const FILE_IO: ExitCode = ExitCode(17);
    pub const MKDIR: ExitCode = ExitCode(18);
    pub const RESOLVE: ExitCode = ExitCode(19);
    pub const HTTP_PROTOCOL: ExitCode = ExitCode(22);
    pub const TOO_MANY_REDIRECTS: ExitCode = ExitCode(23);
    pub const HTTP_AUTH: ExitCode = ExitCode(24);
    pub const BAD_OPTION: ExitCode = ExitCode(28);
    /// Removed by an RPC call (a result's errorCode, never a process exit code).
    pub const REMOVED: ExitCode = ExitCode(31);
    pub const SERVICE_UNAVAILABLE: ExitCode = ExitCode(29);
    pub const CHECKSUM: ExitCode = ExitCode(32);

    /// The exit code for a final HTTP status that is not a success or a redirect.
    pub fn for_http_status(status: u16) -> ExitCode {
        match status {
            404 => ExitCode::NOT_FOUND,
            401 => ExitCode::HTTP_AUTH,
            502..=504 => ExitCode::SERVICE_UNAVAILABLE,
            _ => ExitCode::HTTP_PROTOCOL,
        }
    }

    /// The exit code for a failed write to the output file.
    pub fn for_write_error(errno: i32) -> ExitCode {
        if errno == libc::ENOSPC || errno == libc::EDQUOT {
            ExitCode::NO_SPACE
        } else {
            ExitCode::FILE_IO
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn http_statuses_map_like_aria2() {
        assert_eq!(ExitCode::for_http_status(404), ExitCode(3));
        assert_eq!(ExitCode::for_http_status(401), ExitCode(24));
        assert_eq!(ExitCode::for_http_status(502), ExitCode(29));
        assert_eq!(ExitCode::for_http_status(503), ExitCode(29));
        assert_eq!(ExitCode::for_http_status(504), ExitCode(29));
        assert_eq!(ExitCode::for_http_status(500), ExitCode(22));
        assert_eq!(ExitCode::for_http_status(403), ExitCode(22));
        assert_eq!(ExitCode::for_write_error(libc::ENOSPC), ExitCode(9));
        assert_eq!(ExitCode::for_write_error(libc::EIO), ExitCode(17));
    }
}
