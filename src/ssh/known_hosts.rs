//! OpenSSH's `known_hosts` file read and written as OpenSSH does for a client with
//! `StrictHostKeyChecking=accept-new`: a server's key found for its name is taken, a different key
//! of that type (or a revoked one) is refused, a server not there yet is added. Host names as
//! OpenSSH writes them (`host`, `[host]:port` off port 22), hashed ones (`|1|salt|hash`, HMAC-SHA1),
//! patterns with `*`, `?` and `!`. Also the digests `--ssh-host-key-md` compares.
use super::wire::Reader;
use base64::Engine as _;
use ring::hmac;

/// What the file says of a server's key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// The key is the one recorded for the host.
    Known,
    /// Nothing is recorded for the host: a new host.
    New,
    /// The host is recorded with another key of this type (or this key is revoked): refused.
    Changed { line: usize },
    /// The host is recorded only with keys of other types: refused (the known type is asked
    /// for first, see [`known_types`], so a server offering only another one is suspect).
    OtherType,
}

/// The name a host is recorded under: `host`, or `[host]:port` off port 22.
pub fn host_name(host: &str, port: u16) -> String {
    match port {
        22 => host.to_string(),
        p => format!("[{host}]:{p}"),
    }
}

fn glob(pattern: &str, name: &str) -> bool {
    fn go(p: &[u8], n: &[u8]) -> bool {
        match (p.first(), n.first()) {
            (None, None) => true,
            (Some(b'*'), _) => go(&p[1..], n) || (!n.is_empty() && go(p, &n[1..])),
            (Some(b'?'), Some(_)) => go(&p[1..], &n[1..]),
            (Some(a), Some(b)) if a.eq_ignore_ascii_case(b) => go(&p[1..], &n[1..]),
            _ => false,
        }
    }
    go(pattern.as_bytes(), name.as_bytes())
}

/// Whether the host-patterns field of a line names `name`.
fn names(field: &str, name: &str) -> bool {
    if let Some(h) = field.strip_prefix("|1|") {
        let mut parts = h.split('|');
        let b64 = base64::engine::general_purpose::STANDARD;
        let (Some(Ok(salt)), Some(Ok(hash))) = (
            parts.next().map(|s| b64.decode(s)),
            parts.next().map(|s| b64.decode(s)),
        ) else {
            return false;
        };
        let key = hmac::Key::new(hmac::HMAC_SHA1_FOR_LEGACY_USE_ONLY, &salt);
        return hmac::verify(&key, name.as_bytes(), &hash).is_ok();
    }
    let mut hit = false;
    for p in field.split(',') {
        match p.strip_prefix('!') {
            Some(neg) if glob(neg, name) => return false,
            Some(_) => {}
            None => hit |= glob(p, name),
        }
    }
    hit
}

/// The lines of `text` that name `name`: (line number, marker, key type, key blob).
fn entries<'a>(
    text: &'a str,
    name: &'a str,
) -> impl Iterator<Item = (usize, Option<&'a str>, &'a str, Vec<u8>)> + 'a {
    text.lines().enumerate().filter_map(move |(i, line)| {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            return None;
        }
        let mut f = line.split_whitespace();
        let mut first = f.next()?;
        let marker = first.starts_with('@').then_some(first);
        if marker.is_some() {
            first = f.next()?;
        }
        let (kind, key) = (f.next()?, f.next()?);
        if !names(first, name) {
            return None;
        }
        let blob = base64::engine::general_purpose::STANDARD.decode(key).ok()?;
        Some((i + 1, marker, kind, blob))
    })
}

/// The type (the wire name in the blob) of a host key blob.
pub fn key_type(blob: &[u8]) -> Option<&str> {
    Reader::new(blob).text()
}

/// The key types recorded for `name` (to ask the server for one of them first).
pub fn known_types(text: &str, name: &str) -> Vec<String> {
    let mut v: Vec<String> = Vec::new();
    for (_, marker, kind, _) in entries(text, name) {
        if marker.is_none() && !v.iter().any(|k| k == kind) {
            v.push(kind.to_string());
        }
    }
    v
}

/// What `text` (a known_hosts file) says of server `name`'s key `blob`.
pub fn check(text: &str, name: &str, blob: &[u8]) -> Verdict {
    let kind = key_type(blob).unwrap_or("");
    let mut other_type = false;
    let mut changed = None;
    let mut known = false;
    for (line, marker, k, b) in entries(text, name) {
        match marker {
            Some("@revoked") if b == blob => return Verdict::Changed { line },
            Some(_) => continue,
            None => {}
        }
        if b == blob {
            known = true;
        } else if k == kind {
            changed.get_or_insert(line);
        } else {
            other_type = true;
        }
    }
    match (known, changed) {
        (true, _) => Verdict::Known,
        (false, Some(line)) => Verdict::Changed { line },
        _ if other_type => Verdict::OtherType,
        _ => Verdict::New,
    }
}

/// The line that records server `name`'s key `blob`.
pub fn line_for(name: &str, blob: &[u8]) -> String {
    let b64 = base64::engine::general_purpose::STANDARD.encode(blob);
    format!("{name} {} {b64}\n", key_type(blob).unwrap_or("ssh-unknown"))
}

/// OpenSSH's fingerprint of a key: `SHA256:` and the digest in unpadded base64.
pub fn fingerprint(blob: &[u8]) -> String {
    let d = ring::digest::digest(&ring::digest::SHA256, blob);
    let b64 = base64::engine::general_purpose::STANDARD_NO_PAD.encode(d.as_ref());
    format!("SHA256:{b64}")
}

/// The digest `--ssh-host-key-md` names (`md5`, `sha-1`, `sha-256`) of a key blob, in hex.
pub fn digest_hex(kind: &str, blob: &[u8]) -> Option<String> {
    use md5::Digest as _;
    let bytes: Vec<u8> = match kind {
        "md5" => md5::Md5::digest(blob).to_vec(),
        "sha-1" => sha1::Sha1::digest(blob).to_vec(),
        "sha-256" => ring::digest::digest(&ring::digest::SHA256, blob)
            .as_ref()
            .to_vec(),
        _ => return None,
    };
    Some(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn blob(kind: &str, tail: u8) -> Vec<u8> {
        use super::super::wire::Writer;
        let mut b = Vec::new();
        b.put_string(kind.as_bytes());
        b.put_string(&[tail; 32]);
        b
    }

    #[test]
    fn hosts_are_found_plain_bracketed_by_pattern_and_hashed() {
        let k = blob("ssh-ed25519", 1);
        let line = line_for("[127.0.0.1]:2222", &k);
        assert_eq!(check(&line, "[127.0.0.1]:2222", &k), Verdict::Known);
        assert_eq!(check(&line, "127.0.0.1", &k), Verdict::New);
        let pat = line.replacen("[127.0.0.1]:2222", "*.example.org,!bad.example.org", 1);
        assert_eq!(check(&pat, "a.example.org", &k), Verdict::Known);
        assert_eq!(check(&pat, "bad.example.org", &k), Verdict::New);
        // A hashed name: HMAC-SHA1 of the name with the salt.
        let salt = [7u8; 20];
        let key = hmac::Key::new(hmac::HMAC_SHA1_FOR_LEGACY_USE_ONLY, &salt);
        let tag = hmac::sign(&key, b"host.example");
        let e = base64::engine::general_purpose::STANDARD;
        let hashed = line.replacen(
            "[127.0.0.1]:2222",
            &format!("|1|{}|{}", e.encode(salt), e.encode(tag.as_ref())),
            1,
        );
        assert_eq!(check(&hashed, "host.example", &k), Verdict::Known);
        assert_eq!(check(&hashed, "other.example", &k), Verdict::New);
    }

    #[test]
    fn another_key_of_the_type_is_a_change_and_a_revoked_key_is_refused() {
        let (a, b) = (blob("ssh-ed25519", 1), blob("ssh-ed25519", 2));
        let text = format!("# comment\n\n{}", line_for("h", &a));
        assert_eq!(check(&text, "h", &b), Verdict::Changed { line: 3 });
        let other = blob("ecdsa-sha2-nistp256", 3);
        assert_eq!(check(&text, "h", &other), Verdict::OtherType);
        assert_eq!(known_types(&text, "h"), vec!["ssh-ed25519".to_string()]);
        let revoked = format!("@revoked {}", line_for("h", &a));
        assert!(matches!(check(&revoked, "h", &a), Verdict::Changed { .. }));
    }

    #[test]
    fn digests_are_of_the_key_blob() {
        let k = blob("ssh-ed25519", 1);
        assert_eq!(digest_hex("md5", &k).map(|h| h.len()), Some(32));
        assert_eq!(digest_hex("sha-1", &k).map(|h| h.len()), Some(40));
        assert_eq!(digest_hex("sha-256", &k).map(|h| h.len()), Some(64));
        assert_eq!(digest_hex("sha-512", &k), None);
        assert!(fingerprint(&k).starts_with("SHA256:"));
    }
}
