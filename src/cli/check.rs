//! Checking values: each option's value against its rules (aria2's reason text for one that
//! fails), the URIs ringdl can download, GIDs.
use super::defs::{self, OptDef, ValueKind};
use super::help;

/// aria2's "bad value" report: which option, why, and that option's help.
pub(super) fn bad_value(def: &OptDef, why: &str) -> String {
    format!(
        "Exception: errorCode=28 We encountered a problem while processing the option '--{}'.\n  -> errorCode=1 {why}\nUsage:\n{}",
        def.name,
        help::option_block(def)
    )
}

/// Checks one value against its option's rules; the error is aria2's reason text.
pub fn check_value(def: &OptDef, v: &str) -> Result<(), String> {
    let name = def.name;
    match def.value {
        ValueKind::Bool => match v {
            "true" | "false" => Ok(()),
            _ => Err(format!("{name} must be either 'true' or 'false'.")),
        },
        ValueKind::Int { min, max } => {
            let n: i64 = v.parse().map_err(|_| format!("Bad number {v}"))?;
            if n < min || n > max {
                Err(if max == i64::MAX {
                    format!("{name} must be greater than or equal to {min}.")
                } else {
                    format!("{name} must be between {min} and {max}.")
                })
            } else {
                Ok(())
            }
        }
        ValueKind::Size { min, max } => {
            let n = defs::parse_size(v)
                .ok_or_else(|| format!("Bad or negative value detected: {v}"))?;
            if n < min || n > max {
                Err(if max == u64::MAX {
                    format!("{name} must be greater than or equal to {min}.")
                } else {
                    format!("{name} must be between {min} and {max}.")
                })
            } else {
                Ok(())
            }
        }
        ValueKind::Float { min, max } => {
            let n: f64 = v.parse().map_err(|_| format!("Bad number {v}"))?;
            if n < min || n > max {
                Err(format!("{name} must be between {min} and {max}."))
            } else {
                Ok(())
            }
        }
        ValueKind::Choice(choices) => {
            if choices.contains(&v) {
                Ok(())
            } else {
                let list: String = choices.iter().map(|c| format!("'{c}' ")).collect();
                Err(format!("{name} must be one of the following:{list}"))
            }
        }
        ValueKind::Path | ValueKind::Text => check_text(name, v),
    }
}

/// Options whose values go into a request's head (or a proxy's): a CR or LF in them would start a
/// header of someone else's choosing, so they are refused (aria2c passes them through).
pub(super) const HEAD_VALUES: &[&str] = &[
    "header",
    "user-agent",
    "referer",
    "http-user",
    "http-passwd",
    "http-proxy-user",
    "http-proxy-passwd",
    "https-proxy-user",
    "https-proxy-passwd",
    "all-proxy-user",
    "all-proxy-passwd",
];

/// Options with a syntax of their own.
pub(super) fn check_text(name: &str, v: &str) -> Result<(), String> {
    if HEAD_VALUES.contains(&name) && v.contains(['\r', '\n', '\0']) {
        return Err(format!(
            "{name} must not contain CR, LF or NUL: it would inject a header into the request."
        ));
    }
    match name {
        "all-proxy" | "http-proxy" | "https-proxy" if !v.trim().is_empty() => {
            crate::http::proxy::Proxy::parse(v, None, None).map(|_| ())
        }
        // aria2 checks these three files when it reads the option (the others when it opens them).
        "certificate" | "rpc-certificate" | "rpc-private-key" => {
            std::fs::metadata(v).map(|_| ()).map_err(|e| {
                format!(
                    "Could not get file status: {}",
                    crate::engine::sys::cause(&e)
                )
            })
        }
        "checksum" => {
            let (kind, digest) = v.split_once('=').ok_or("Unrecognized checksum")?;
            let hex_len = crate::store::checksum::Kind::from_name(kind)
                .ok_or("Unrecognized checksum")?
                .digest_len()
                * 2;
            if digest.len() == hex_len && digest.bytes().all(|b| b.is_ascii_hexdigit()) {
                Ok(())
            } else {
                Err(format!("Bad Hash: {digest}"))
            }
        }
        // `INDEX=PATH`, the index a number (aria2c's check; the path is the user's).
        "index-out" => match v.split_once('=') {
            Some((i, _)) if i.parse::<u64>().is_ok() => Ok(()),
            _ => Err("Bad path index".into()),
        },
        "ssh-host-key-md" => {
            let (kind, digest) = v.split_once('=').ok_or("Unrecognized checksum")?;
            let hex_len = match kind.to_ascii_lowercase().as_str() {
                "md5" => 32,
                "sha-1" => 40,
                // (Beyond aria2c, which takes only the two above.)
                "sha-256" => 64,
                _ => return Err(format!("Checksum type {kind} is not acceptable")),
            };
            if digest.len() == hex_len && digest.bytes().all(|b| b.is_ascii_hexdigit()) {
                Ok(())
            } else {
                Err("Unrecognized checksum".to_string())
            }
        }
        _ => Ok(()),
    }
}

/// A GID as aria2 writes it: 16 hex digits, not all zero.
pub fn parse_gid(v: &str) -> Option<u64> {
    if v.len() != 16 || !v.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    u64::from_str_radix(v, 16).ok().filter(|g| *g != 0)
}
