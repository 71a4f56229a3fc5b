//! What the engine can download: which URIs name a source it has a protocol for (HTTP and HTTPS
//! today), and the one-line reason for one it has not. A new protocol is added here first.
use std::path::Path;

/// Whether aria2 takes `u` for a URI at all: anything with a scheme (one it or ringdl cannot
/// fetch fails as a download), a magnet link, a torrent or Metalink file. An input list's line
/// that is none of these (`notauri`, a stray `out=x`) is skipped with an error instead.
pub fn is_recognized_uri(u: &str) -> bool {
    u.contains("://") || !matches!(check_uri(u), Err(e) if e.starts_with("Unrecognized URI"))
}

/// A URI ringdl can download, or the one-line reason it cannot.
pub fn check_uri(u: &str) -> Result<(), String> {
    let lower = u.to_ascii_lowercase();
    let feature = if lower.starts_with("magnet:") || lower.ends_with(".torrent") {
        Some("BitTorrent")
    } else if lower.ends_with(".meta4") || lower.ends_with(".metalink") {
        Some("Metalink")
    } else if lower.starts_with("ftp://") {
        Some("FTP")
    } else if lower.starts_with("sftp://") {
        Some("SFTP")
    } else {
        None
    };
    let is_http = lower.starts_with("http://") || lower.starts_with("https://");
    match feature {
        Some(f) if !is_http || lower.starts_with("magnet:") => Err(format!(
            "ringdl does not support {f}: {u}; use aria2c for it"
        )),
        Some(f) if Path::new(u).exists() => Err(format!(
            "ringdl does not support {f}: {u}; use aria2c for it"
        )),
        _ if is_http && url::Url::parse(u).is_ok_and(|p| p.host().is_some()) => Ok(()),
        _ => Err(format!("Unrecognized URI or unsupported protocol: {u}")),
    }
}
