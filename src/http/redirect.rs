//! Redirects: which statuses redirect, and resolving a Location value against the URL
//! that answered. Counting redirects (aria2 stops after 20) is the engine's job.

use url::Url;

use super::error::HttpError;

/// The statuses aria2 follows when a Location is present: 300, 301, 302, 303, 307, 308.
pub fn is_redirect(status: u16) -> bool {
    matches!(status, 300 | 301 | 302 | 303 | 307 | 308)
}

/// Resolves a Location value against the current URL (RFC 3986 §5): absolute URLs,
/// relative references (`../x`, `x?y`, `?q`), scheme-relative (`//host/p`) and
/// absolute-path (`/p`) forms. Only http and https results are accepted.
pub fn resolve_location(base: &Url, location: &str) -> Result<Url, HttpError> {
    let loc = location.trim();
    if loc.is_empty() {
        return Err(HttpError::BadLocation("empty Location header".to_string()));
    }
    let url = base
        .join(loc)
        .map_err(|e| HttpError::BadLocation(format!("{loc:?}: {e}")))?;
    match url.scheme() {
        "http" | "https" if url.host_str().is_some_and(|h| !h.is_empty()) => Ok(url),
        "http" | "https" => Err(HttpError::BadLocation(format!("{loc:?}: no host"))),
        other => Err(HttpError::BadLocation(format!(
            "{loc:?}: {other}: URLs are not supported"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn resolve(base: &str, loc: &str) -> Result<String, HttpError> {
        let base = Url::parse(base).unwrap();
        resolve_location(&base, loc).map(String::from)
    }

    const BASE: &str = "http://example.com/dir/sub/file.iso?old=1";

    #[test]
    fn redirect_statuses() {
        for s in [300, 301, 302, 303, 307, 308] {
            assert!(is_redirect(s), "{s}");
        }
        for s in [200, 204, 206, 304, 305, 306, 309, 400, 404] {
            assert!(!is_redirect(s), "{s}");
        }
    }

    #[test]
    fn relative_forms() {
        assert_eq!(
            resolve(BASE, "other.iso").unwrap(),
            "http://example.com/dir/sub/other.iso"
        );
        assert_eq!(resolve(BASE, "../x").unwrap(), "http://example.com/dir/x");
        assert_eq!(
            resolve(BASE, "x?y").unwrap(),
            "http://example.com/dir/sub/x?y"
        );
        assert_eq!(
            resolve(BASE, "/abs/path?q=2").unwrap(),
            "http://example.com/abs/path?q=2"
        );
        assert_eq!(
            resolve(BASE, "../../../../up").unwrap(),
            "http://example.com/up"
        );
        assert_eq!(
            resolve(BASE, "  spaced name.iso ").unwrap(),
            "http://example.com/dir/sub/spaced%20name.iso"
        );
    }

    #[test]
    fn query_only() {
        assert_eq!(
            resolve(BASE, "?new=2").unwrap(),
            "http://example.com/dir/sub/file.iso?new=2"
        );
    }

    #[test]
    fn absolute_and_scheme_relative() {
        assert_eq!(
            resolve(BASE, "https://cdn.example.net:8443/a/b").unwrap(),
            "https://cdn.example.net:8443/a/b"
        );
        assert_eq!(
            resolve(BASE, "//mirror.example.org/p").unwrap(),
            "http://mirror.example.org/p"
        );
        assert_eq!(
            resolve("https://example.com/x", "//mirror.example.org/p").unwrap(),
            "https://mirror.example.org/p"
        );
        assert_eq!(
            resolve(BASE, "HTTP://Example.COM:80/Case").unwrap(),
            "http://example.com/Case"
        );
    }

    #[test]
    fn non_http_refused() {
        for loc in [
            "ftp://example.com/file",
            "file:///etc/passwd",
            "javascript:alert(1)",
            "data:text/plain,hi",
            "mailto:a@example.com",
        ] {
            let err = resolve(BASE, loc).unwrap_err();
            assert!(
                matches!(&err, HttpError::BadLocation(m) if m.contains("not supported")),
                "{loc}: {err:?}"
            );
        }
        assert_eq!(
            resolve(BASE, "ftp://example.com/file")
                .unwrap_err()
                .to_string(),
            "unusable redirect location: \"ftp://example.com/file\": ftp: URLs are not supported"
        );
    }

    #[test]
    fn garbage_refused() {
        for loc in [
            "",
            "   ",
            "http://",
            "http://[::1",
            "http://exa mple.com/",
            "https://example.com:99999/",
            "http:///",
        ] {
            assert!(
                matches!(resolve(BASE, loc), Err(HttpError::BadLocation(_))),
                "{loc:?} gave {:?}",
                resolve(BASE, loc)
            );
        }
    }
}
