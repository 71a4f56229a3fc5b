//! What a Metalink's files become: which are picked (`--metalink-language`, `--metalink-os`,
//! `--metalink-version`, then `--select-file` over those left), the order their mirrors are
//! tried in (priority, raised for `--metalink-location` and `--metalink-preferred-protocol`,
//! one URI per host with `--metalink-enable-unique-protocol`), and the download each is, with
//! its digests; and `-S`'s listing of them.
use super::MetaFile;
use crate::engine::{DownloadOptions, Job, MetalinkOptions};
use std::ops::RangeInclusive;

/// How much `--metalink-location` and `--metalink-preferred-protocol` raise a mirror (aria2c's
/// figure: past any priority a Metalink can give).
const BOOST: i64 = 999_999;

/// Whether `f` passes the language, OS and version filters (each only when given).
pub fn wanted(f: &MetaFile, o: &MetalinkOptions) -> bool {
    let lang = o
        .language
        .as_ref()
        .is_none_or(|l| f.languages.iter().any(|x| x == l));
    let os = o.os.as_ref().is_none_or(|l| f.oses.iter().any(|x| x == l));
    let version = o
        .version
        .as_ref()
        .is_none_or(|v| f.version.as_deref() == Some(v.as_str()));
    lang && os && version
}

/// `--select-file`'s indexes (`3,6`, `1-5`), 1-based; parts that are no index are passed over.
pub fn selection(spec: &str) -> Vec<RangeInclusive<usize>> {
    spec.split(',')
        .filter_map(|part| {
            let part = part.trim();
            let (a, b) = part.split_once('-').unwrap_or((part, part));
            let (a, b) = (a.trim().parse().ok()?, b.trim().parse().ok()?);
            (a >= 1 && a <= b).then_some(a..=b)
        })
        .collect()
}

/// Whether the file at `index` (1-based, among those `wanted`) is selected.
pub fn selected(index: usize, o: &MetalinkOptions) -> bool {
    match o.select_file.as_deref() {
        None => true,
        Some(spec) => selection(spec).iter().any(|r| r.contains(&index)),
    }
}

/// A scheme's protocol as `--metalink-preferred-protocol` names them (`ftp` for FTP's and SFTP's
/// schemes, as aria2c counts SFTP as FTP).
fn protocol(url: &str) -> &str {
    match url.split_once("://").map(|(s, _)| s) {
        Some("http") => "http",
        Some("https") => "https",
        Some("ftp" | "ftps" | "ftpes" | "sftp") => "ftp",
        _ => "",
    }
}

/// `f`'s mirrors in the order they are tried: by priority (lower first; the document's order
/// among equals), raised for a preferred location (in any case) or protocol; with
/// `unique_protocol`, each host over one protocol only (the best mirror's: a server offering
/// the file over HTTP and FTP is not asked over both).
pub fn ordered_uris(f: &MetaFile, o: &MetalinkOptions) -> Vec<String> {
    let mut ranked: Vec<(i64, &str)> = f
        .urls
        .iter()
        .map(|r| {
            let mut p = r.priority;
            let at_home = r
                .location
                .as_ref()
                .is_some_and(|l| o.locations.iter().any(|x| x.eq_ignore_ascii_case(l)));
            if at_home {
                p -= BOOST;
            }
            if o.preferred_protocol.as_deref() == Some(protocol(&r.url)) {
                p -= BOOST;
            }
            (p, r.url.as_str())
        })
        .collect();
    ranked.sort_by_key(|(p, _)| *p);
    // (host, the protocol it is used over)
    let mut hosts: Vec<(String, String)> = Vec::new();
    ranked
        .into_iter()
        .filter(|(_, u)| {
            if !o.unique_protocol {
                return true;
            }
            let Ok(parsed) = url::Url::parse(u) else {
                return true;
            };
            let host = parsed.host_str().unwrap_or_default().to_ascii_lowercase();
            let scheme = parsed.scheme().to_string();
            match hosts.iter().find(|(h, _)| *h == host) {
                Some((_, used)) => *used == scheme,
                None => {
                    hosts.push((host, scheme));
                    true
                }
            }
        })
        .map(|(_, u)| u.to_string())
        .collect()
}

/// The download `f` is, with the options of the run (`base`): saved under its name in `--dir`
/// (`--out` and `--gid` are the Metalink's to give, not the command line's), checked by its
/// strongest digest and, where they describe it, its pieces'; split over at most the
/// connections a Metalink 3 `maxconnections` allows.
pub fn job(f: &MetaFile, base: &DownloadOptions) -> Job {
    let mut opts = base.clone();
    opts.out = Some(f.name.clone());
    opts.gid = None;
    opts.expected_total = f.size;
    opts.from_metalink = true;
    opts.checksum = f
        .hash
        .as_ref()
        .map(|(k, d)| format!("{}={}", k.name(), hex(d)));
    opts.pieces = match (&f.pieces, f.size) {
        (Some(p), Some(size)) => {
            let hashes = crate::engine::PieceHashes {
                length: u64::from(p.length),
                kind: p.kind,
                digests: p.digests.clone(),
            };
            // (Digests that do not describe this length are not used: the whole file's digest
            // still checks it, where there is one.)
            hashes
                .check(size)
                .is_ok()
                .then(|| std::sync::Arc::new(hashes))
        }
        _ => None,
    };
    if let Some(max) = f.max_connections {
        opts.split = opts.split.min(max as usize).max(1);
    }
    let mut uris = ordered_uris(f, &base.metalink);
    if uris.is_empty() {
        // Given only as a torrent (`metaurl`): kept for BitTorrent, refused in one line now
        // (the torrent's URI is what the download is shown by).
        opts.refused = Some(match f.metaurls.first() {
            Some(m) => {
                uris.push(m.url.clone());
                format!(
                    "ringdl does not support BitTorrent: the Metalink gives {} only as a torrent ({}); use aria2c for it",
                    f.name, m.url
                )
            }
            None => format!("The Metalink gives no URI for {}", f.name),
        });
    }
    // What a saved session writes for it: its name and digest besides its mirrors (its piece
    // digests and size go with the Metalink, not the session).
    let mut own = vec![("out", f.name.clone())];
    if let Some(sum) = &opts.checksum {
        own.push(("checksum", sum.clone()));
    }
    Job {
        uris,
        opts,
        own,
        restarted: false,
    }
}

/// [`job`] for the file of `index` (as `-S` numbers them): saved under the path
/// `--index-out` gives that index, if it gives one (beyond aria2c, which takes the option for
/// torrents only).
pub fn job_at(f: &MetaFile, base: &DownloadOptions, index: usize) -> Job {
    let mut job = job(f, base);
    let given = base
        .metalink
        .index_out
        .iter()
        .rev()
        .find(|(i, _)| *i == index);
    if let Some((_, path)) = given {
        job.opts.out = Some(path.clone());
        for (name, v) in job.own.iter_mut() {
            if *name == "out" {
                v.clone_from(path);
            }
        }
    }
    job
}

fn hex(d: &[u8]) -> String {
    d.iter().map(|b| format!("{b:02x}")).collect()
}

/// The head of `-S`'s listing, as aria2c prints it.
pub fn listing_head() -> String {
    format!("Files:\nidx|path/length\n{}", rule('='))
}

/// One file of `-S`'s listing: its index, name and size.
pub fn listing_entry(index: usize, f: &MetaFile) -> String {
    use crate::ui::format::{abbrev_size, with_commas};
    let size = f.size.unwrap_or(0);
    format!(
        "{index:>3}|{}\n   |{}B ({})\n{}",
        f.name,
        abbrev_size(size),
        with_commas(size),
        rule('-')
    )
}

fn rule(c: char) -> String {
    format!("{}+{}\n", c.to_string().repeat(3), c.to_string().repeat(75))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metalink::Resource;

    fn file(urls: &[(&str, i64, Option<&str>)]) -> MetaFile {
        MetaFile {
            name: "f".into(),
            urls: urls
                .iter()
                .map(|(u, p, l)| Resource {
                    url: u.to_string(),
                    priority: *p,
                    location: l.map(str::to_string),
                })
                .collect(),
            ..MetaFile::default()
        }
    }

    #[test]
    fn mirrors_go_by_priority_raised_by_location_and_protocol() {
        let f = file(&[
            ("http://a.example/f", 1, Some("us")),
            ("ftp://b.example/f", 2, Some("JP")),
            ("https://c.example/f", 3, None),
            ("https://a.example/f", 4, None),
        ]);
        let mut o = MetalinkOptions::default();
        assert_eq!(
            ordered_uris(&f, &o),
            [
                "http://a.example/f",
                "ftp://b.example/f",
                "https://c.example/f",
                "https://a.example/f"
            ]
        );
        o.locations = vec!["jp".into()];
        assert_eq!(
            ordered_uris(&f, &o)[0],
            "ftp://b.example/f",
            "JP matches jp"
        );
        o.preferred_protocol = Some("https".into());
        assert_eq!(
            ordered_uris(&f, &o),
            [
                "ftp://b.example/f",
                "https://c.example/f",
                "https://a.example/f",
                "http://a.example/f"
            ]
        );
        o.unique_protocol = true;
        assert_eq!(
            ordered_uris(&f, &o),
            [
                "ftp://b.example/f",
                "https://c.example/f",
                "https://a.example/f"
            ],
            "a.example over one protocol: https, its better mirror's"
        );
    }

    #[test]
    fn a_host_keeps_its_mirrors_of_one_protocol_on_any_port() {
        let f = file(&[
            ("http://127.0.0.1:1/f", 1, None),
            ("http://127.0.0.1:2/f", 2, None),
            ("ftp://127.0.0.1/f", 3, None),
        ]);
        let o = MetalinkOptions {
            unique_protocol: true,
            ..MetalinkOptions::default()
        };
        assert_eq!(
            ordered_uris(&f, &o),
            ["http://127.0.0.1:1/f", "http://127.0.0.1:2/f"]
        );
    }

    #[test]
    fn files_are_picked_by_filters_then_indexes() {
        let mut f = file(&[]);
        f.languages = vec!["en".into()];
        f.version = Some("2".into());
        let mut o = MetalinkOptions::default();
        assert!(wanted(&f, &o));
        o.language = Some("de".into());
        assert!(!wanted(&f, &o));
        o.language = Some("en".into());
        o.os = Some("linux".into());
        assert!(!wanted(&f, &o), "a file that names no OS is left out");
        o.os = None;
        o.version = Some("2".into());
        assert!(wanted(&f, &o));
        assert_eq!(selection("3, 1-2,x,5-4,0"), [3..=3, 1..=2]);
        o.select_file = Some("2-3".into());
        assert!(!selected(1, &o) && selected(2, &o) && selected(3, &o));
    }

    #[test]
    fn the_listing_is_aria2cs() {
        let mut a = file(&[]);
        a.name = "a.bin".into();
        a.size = Some(3_000_000);
        let mut b = file(&[]);
        b.name = "sub/b.bin".into();
        b.size = Some(1_500_000);
        let rule = format!("---+{}", "-".repeat(75));
        let want = format!(
            "Files:\nidx|path/length\n===+{}\n  1|a.bin\n   |2.8MiB (3,000,000)\n{rule}\n  2|sub/b.bin\n   |1.4MiB (1,500,000)\n{rule}\n\n",
            "=".repeat(75)
        );
        let got = listing_head() + &listing_entry(1, &a) + &listing_entry(2, &b) + "\n";
        assert_eq!(got, want);
    }
}
