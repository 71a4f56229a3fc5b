//! Metalink documents, read as a stream: RFC 5854's Metalink 4 and metalinker.org's Metalink 3
//! (with the dialect Fedora's MirrorManager serves: `type="dynamic"`, its `mm0:` elements,
//! `<url protocol= type= location= preference=>`). Each `<file>` is handed over as soon as its
//! end tag is read ([`Reader::next_file`]), so a document of any number of files is read in the
//! memory of one; what the engine does with them is not here.
//!
//! Bounded whatever the input: no event (a tag, a run of text) may be longer than
//! [`MAX_EVENT`], elements nest at most [`MAX_DEPTH`] deep, a file has at most [`MAX_URLS`]
//! resources and [`MAX_PIECES`] piece digests, and no entity is ever expanded: the five XML
//! names and character references are decoded, any other reference (a DTD's entity, the
//! "billion laughs") fails the document, as aria2c's libxml2 build does.
//!
//! Where aria2c and the RFC part, what a user would want is done, and said here: text is
//! trimmed (aria2c drops a `<url>` with a line break around it), hash type names are taken in
//! any case, a Metalink 3 `<url>` without `type` takes its scheme's, and names that could land
//! outside the download directory are refused (a `..` or `.` component, an absolute path, a
//! drive letter, a control character).
pub mod jobs;
pub mod source;

use crate::store::checksum::Kind;
use quick_xml::events::{BytesStart, Event};
use quick_xml::name::ResolveResult;
use quick_xml::NsReader;
use std::io::BufRead;
use url::Url;

/// Metalink 4's namespace (RFC 5854).
pub const NS_V4: &str = "urn:ietf:params:xml:ns:metalink";
/// Metalink 3's.
pub const NS_V3: &str = "http://www.metalinker.org/";

/// The longest tag or run of text taken (a URL, a digest, a name are far shorter).
pub const MAX_EVENT: usize = 1 << 20;
/// The deepest nesting taken.
pub const MAX_DEPTH: usize = 64;
/// Most resources (`<url>`, `<metaurl>`) one file may list.
pub const MAX_URLS: usize = 1 << 16;
/// Most piece digests one file may list (4 Mi: a 1 TiB file in 256 KiB pieces).
pub const MAX_PIECES: usize = 1 << 22;

/// The lowest priority (Metalink 4's range is 1 to 999999, 1 preferred).
pub const LOWEST_PRIORITY: i64 = 999_999;

/// Which Metalink a document is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Version {
    V3,
    V4,
}

/// A place the file can be fetched from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resource {
    /// An absolute URL of a scheme ringdl fetches.
    pub url: String,
    /// Lower is preferred: Metalink 4's `priority` (999999 when absent), or Metalink 3's
    /// `preference` as aria2c maps it (101 − preference).
    pub priority: i64,
    /// `location` (a country code), as written.
    pub location: Option<String>,
}

/// A description of the file in another format (a torrent), for the BitTorrent work.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MetaUrl {
    pub url: String,
    pub mediatype: String,
    pub priority: i64,
    /// The file's name inside the torrent.
    pub name: Option<String>,
}

/// Digests of the file's pieces, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pieces {
    pub length: u32,
    pub kind: Kind,
    pub digests: Vec<Vec<u8>>,
}

/// One `<file>`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MetaFile {
    /// A relative path (`/`-separated, no empty, `.` or `..` component).
    pub name: String,
    pub size: Option<u64>,
    pub version: Option<String>,
    pub languages: Vec<String>,
    pub oses: Vec<String>,
    /// The strongest whole-file digest listed of a kind ringdl knows.
    pub hash: Option<(Kind, Vec<u8>)>,
    pub pieces: Option<Pieces>,
    pub urls: Vec<Resource>,
    pub metaurls: Vec<MetaUrl>,
    /// Metalink 3's `resources@maxconnections`.
    pub max_connections: Option<u32>,
}

/// Why a document cannot be used: aria2c's words (its exit code for them is 20).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    pub message: String,
}

fn not_xml(why: impl std::fmt::Display) -> Error {
    Error {
        message: format!("Could not parse Metalink XML document: {why}"),
    }
}

fn violation(what: &str, detail: &str) -> Error {
    Error {
        message: format!("Specification violation: {what} ({detail})"),
    }
}

/// A [`BufRead`] that hands out at most `left` bytes until topped up: every XML event must fit
/// in [`MAX_EVENT`], so the parser's buffer never grows past it, whatever a document holds.
struct Bounded<R> {
    inner: R,
    left: usize,
}

impl<R: std::io::Read> std::io::Read for Bounded<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = buf.len().min(self.left);
        if n == 0 && !buf.is_empty() {
            return Err(std::io::Error::other("an XML event longer than 1 MiB"));
        }
        let got = self.inner.read(&mut buf[..n])?;
        self.left -= got;
        Ok(got)
    }
}

impl<R: BufRead> BufRead for Bounded<R> {
    fn fill_buf(&mut self) -> std::io::Result<&[u8]> {
        if self.left == 0 {
            return Err(std::io::Error::other("an XML event longer than 1 MiB"));
        }
        let left = self.left;
        let b = self.inner.fill_buf()?;
        Ok(&b[..b.len().min(left)])
    }

    fn consume(&mut self, n: usize) {
        self.left = self.left.saturating_sub(n);
        self.inner.consume(n);
    }
}

/// Which element of interest the reader is in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum In {
    /// Outside any `<metalink>` yet.
    Top,
    Metalink,
    /// Metalink 3's `<files>`.
    Files,
    File,
    /// A child of `<file>` (or of v3's `<verification>`/`<resources>`) whose text is wanted.
    Text(Field),
    /// Metalink 3's `<verification>`, `<resources>`.
    Verification,
    Resources,
    Pieces,
    /// A digest in `<pieces>`.
    PieceHash,
    /// An element nobody reads, and all below it.
    Skip,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Field {
    Size,
    Version,
    Language,
    Os,
    Hash,
    Url,
    MetaUrl,
}

/// What a `<pieces>` being read has said.
#[derive(Default)]
struct PiecesSoFar {
    length: Option<u32>,
    kind: Option<Kind>,
    /// (index, digest); `None` once one failed (the set is then dropped).
    digests: Option<Vec<(usize, Vec<u8>)>>,
}

/// A Metalink document read one `<file>` at a time.
pub struct Reader<R: BufRead> {
    xml: NsReader<Bounded<R>>,
    buf: Vec<u8>,
    /// Where relative URLs are from.
    base: Option<Url>,
    version: Option<Version>,
    /// The elements open, innermost last.
    stack: Vec<In>,
    /// The text of the element being read.
    text: String,
    /// The attributes of the element being read whose text is wanted.
    attrs: Vec<(String, String)>,
    file: Option<MetaFile>,
    /// Metalink 3: a `<file>` that breaks a rule is left out (as aria2c does), not the document.
    file_dropped: bool,
    hashes: Vec<(Kind, Vec<u8>)>,
    pieces: Option<PiecesSoFar>,
    piece_sets: Vec<Pieces>,
    piece_attrs: Option<usize>,
    /// An element was read (a document without one is not XML).
    any_element: bool,
    /// Resources are read (not when only counting or listing the files).
    urls: bool,
    done: bool,
}

impl<R: BufRead> Reader<R> {
    /// A reader of the document `input`; `base`: the URL relative `<url>`s are resolved against
    /// (`--metalink-base-uri`, or where the document came from).
    pub fn new(input: R, base: Option<Url>) -> Reader<R> {
        let mut xml = NsReader::from_reader(Bounded {
            inner: input,
            left: MAX_EVENT,
        });
        let config = xml.config_mut();
        config.check_end_names = true;
        config.expand_empty_elements = true;
        Reader {
            xml,
            buf: Vec::new(),
            base,
            version: None,
            stack: Vec::new(),
            text: String::new(),
            attrs: Vec::new(),
            file: None,
            file_dropped: false,
            hashes: Vec::new(),
            pieces: None,
            piece_sets: Vec::new(),
            piece_attrs: None,
            any_element: false,
            urls: true,
            done: false,
        }
    }

    /// A reader that leaves the files' resources out (their attributes still checked): for
    /// counting or listing the files, several times faster.
    pub fn without_urls(mut self) -> Reader<R> {
        self.urls = false;
        self
    }

    /// Whether the next files' resources are read (see [`Reader::without_urls`]).
    pub fn set_urls(&mut self, on: bool) {
        self.urls = on;
    }

    /// The document's version, once its root was read.
    pub fn version(&self) -> Option<Version> {
        self.version
    }

    /// The next `<file>`, `None` at the document's end. A document without a `<metalink>` of
    /// either namespace has no files (as aria2c reads it).
    pub fn next_file(&mut self) -> Result<Option<MetaFile>, Error> {
        while !self.done {
            if let Some(f) = self.step()? {
                return Ok(Some(f));
            }
        }
        Ok(None)
    }

    fn here(&self) -> In {
        self.stack.last().copied().unwrap_or(In::Top)
    }

    /// Reads one event; a file when one ended.
    fn step(&mut self) -> Result<Option<MetaFile>, Error> {
        self.buf.clear();
        self.xml.get_mut().left = MAX_EVENT;
        let (ns, event) = self
            .xml
            .read_resolved_event_into(&mut self.buf)
            .map_err(not_xml)?;
        // (Named by the constants, so no event allocates for its namespace.)
        let ns: Option<&'static str> = match ns {
            ResolveResult::Bound(n) => Some(match n.as_ref() {
                NS_V4 => NS_V4,
                NS_V3 => NS_V3,
                _ => "",
            }),
            ResolveResult::Unbound => None,
            ResolveResult::Unknown(p) => {
                return Err(not_xml(format!("an undeclared namespace prefix {p}")))
            }
        };
        match event {
            Event::Start(e) => {
                if self.stack.len() >= MAX_DEPTH {
                    return Err(not_xml(format!("elements nested over {MAX_DEPTH} deep")));
                }
                let e = e.into_owned();
                self.any_element = true;
                self.start(ns, &e)?;
                Ok(None)
            }
            Event::End(_) => {
                let was = self.stack.pop().unwrap_or(In::Top);
                self.end(was)
            }
            Event::Text(t) => {
                let s = t.xml10_content().into_owned();
                self.add_text(&s)
            }
            Event::CData(t) => {
                let s = t.xml10_content().into_owned();
                self.add_text(&s)
            }
            Event::GeneralRef(r) => {
                let c = match r.resolve_char_ref().map_err(not_xml)? {
                    Some(c) => c,
                    None => match &*r.xml10_content() {
                        "amp" => '&',
                        "lt" => '<',
                        "gt" => '>',
                        "quot" => '"',
                        "apos" => '\'',
                        other => {
                            return Err(not_xml(format!(
                                "a reference to the entity {other}, which is never expanded"
                            )))
                        }
                    },
                };
                self.add_text(c.encode_utf8(&mut [0; 4]))
            }
            Event::Eof => {
                if !self.stack.is_empty() {
                    return Err(not_xml("the document ends inside an element"));
                }
                if !self.any_element {
                    return Err(not_xml("no element"));
                }
                self.done = true;
                Ok(None)
            }
            // (Declarations, comments, processing instructions, a DOCTYPE: nothing in them is
            // used, and no entity they declare is ever expanded.)
            _ => Ok(None),
        }
    }

    fn add_text(&mut self, s: &str) -> Result<Option<MetaFile>, Error> {
        if matches!(self.here(), In::Text(_) | In::PieceHash) {
            if self.text.len() + s.len() > MAX_EVENT {
                return Err(not_xml("an element's text longer than 1 MiB"));
            }
            self.text.push_str(s);
        }
        Ok(None)
    }

    fn start(&mut self, ns: Option<&str>, e: &BytesStart) -> Result<(), Error> {
        let name = e.local_name();
        let name = name.as_ref();
        let ours = match (self.version, ns) {
            (Some(Version::V4), Some(n)) => n == NS_V4,
            (Some(Version::V3), Some(n)) => n == NS_V3,
            _ => false,
        };
        let next = match self.here() {
            In::Top if name == "metalink" && ns == Some(NS_V4) => {
                self.version = Some(Version::V4);
                In::Metalink
            }
            In::Top if name == "metalink" && ns == Some(NS_V3) => {
                self.version = Some(Version::V3);
                In::Metalink
            }
            In::Metalink if ours && name == "files" && self.version == Some(Version::V3) => {
                In::Files
            }
            In::Metalink | In::Files if ours && name == "file" => {
                let v4 = self.version == Some(Version::V4);
                let want_here = (self.here() == In::Files) != v4;
                if !want_here {
                    In::Skip
                } else {
                    self.begin_file(e)?;
                    In::File
                }
            }
            In::File if ours => match name {
                "size" => In::Text(Field::Size),
                "version" => In::Text(Field::Version),
                "language" => In::Text(Field::Language),
                "os" => In::Text(Field::Os),
                "hash" if self.version == Some(Version::V4) => {
                    self.keep_attrs(e, &["type"]);
                    In::Text(Field::Hash)
                }
                "pieces" if self.version == Some(Version::V4) => self.begin_pieces(e)?,
                "url" if self.version == Some(Version::V4) => {
                    self.keep_attrs(e, &["location", "priority"]);
                    In::Text(Field::Url)
                }
                "metaurl" if self.version == Some(Version::V4) => {
                    self.keep_attrs(e, &["mediatype", "priority", "name"]);
                    In::Text(Field::MetaUrl)
                }
                "verification" if self.version == Some(Version::V3) => In::Verification,
                "resources" if self.version == Some(Version::V3) => {
                    let max = attr(e, "maxconnections")
                        .and_then(|m| m.trim().parse::<u32>().ok())
                        .filter(|m| *m > 0);
                    if let Some(f) = self.file.as_mut() {
                        f.max_connections = max;
                    }
                    In::Resources
                }
                _ => In::Skip,
            },
            In::Verification if ours && name == "hash" => {
                self.keep_attrs(e, &["type"]);
                In::Text(Field::Hash)
            }
            In::Verification if ours && name == "pieces" => self.begin_pieces(e)?,
            In::Resources if ours && name == "url" => {
                self.keep_attrs(e, &["type", "location", "preference"]);
                In::Text(Field::Url)
            }
            In::Pieces if ours && name == "hash" => {
                self.piece_attrs = attr(e, "piece").and_then(|p| p.trim().parse::<usize>().ok());
                In::PieceHash
            }
            _ => In::Skip,
        };
        if matches!(next, In::Text(_) | In::PieceHash) {
            self.text.clear();
        }
        self.stack.push(next);
        Ok(())
    }

    fn keep_attrs(&mut self, e: &BytesStart, names: &[&str]) {
        self.attrs = names
            .iter()
            .filter_map(|n| attr(e, n).map(|v| (n.to_string(), v)))
            .collect();
    }

    fn attr(&self, name: &str) -> Option<&str> {
        self.attrs
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    fn v4(&self) -> bool {
        self.version == Some(Version::V4)
    }

    /// A rule broken inside a `<file>`: Metalink 4 refuses the document (as aria2c), Metalink 3
    /// leaves the file out.
    fn broken(&mut self, what: &str, detail: &str) -> Result<(), Error> {
        match self.v4() {
            true => Err(violation(what, detail)),
            false => {
                self.file_dropped = true;
                Ok(())
            }
        }
    }

    fn begin_file(&mut self, e: &BytesStart) -> Result<(), Error> {
        self.file_dropped = false;
        self.hashes.clear();
        self.piece_sets.clear();
        let name = attr(e, "name").unwrap_or_default();
        let mut f = MetaFile::default();
        match safe_name(&name) {
            Ok(n) => f.name = n,
            Err(why) => {
                let what = if name.is_empty() {
                    "Missing file@name"
                } else {
                    "Bad file@name"
                };
                self.broken(what, &format!("{why}: {:?}", shorten(&name)))?;
            }
        }
        self.file = Some(f);
        Ok(())
    }

    fn begin_pieces(&mut self, e: &BytesStart) -> Result<In, Error> {
        let length = attr(e, "length");
        let kind = attr(e, "type");
        let v4 = self.v4();
        let mut p = PiecesSoFar {
            digests: Some(Vec::new()),
            ..PiecesSoFar::default()
        };
        match length.as_deref().map(str::trim) {
            None | Some("") if v4 => self.broken("Missing pieces@length", "")?,
            Some(l) => match l.parse::<u32>() {
                Ok(n) if n > 0 && n <= i32::MAX as u32 => p.length = Some(n),
                // (0: no pieces, as aria2c takes it.)
                Ok(0) => {}
                _ if v4 => self.broken("Bad pieces@length", l)?,
                _ => {}
            },
            None => {}
        }
        match kind.as_deref().map(str::trim) {
            None | Some("") if v4 => self.broken("Missing pieces@type", "")?,
            Some(t) => p.kind = hash_kind(t),
            None => {}
        }
        self.pieces = Some(p);
        Ok(In::Pieces)
    }

    fn end(&mut self, was: In) -> Result<Option<MetaFile>, Error> {
        match was {
            In::Text(field) => {
                let text = std::mem::take(&mut self.text);
                self.field(field, text.trim())?;
                Ok(None)
            }
            In::PieceHash => {
                let text = std::mem::take(&mut self.text);
                let index = self.piece_attrs.take();
                let v4 = self.v4();
                if let Some(p) = self.pieces.as_mut() {
                    let digest = p.kind.and_then(|k| hex_digest(k, text.trim()));
                    let at = match (v4, index) {
                        (true, _) => p.digests.as_ref().map(Vec::len),
                        (false, i) => i,
                    };
                    match (digest, at, p.digests.as_mut()) {
                        (Some(d), Some(i), Some(all)) if all.len() < MAX_PIECES => all.push((i, d)),
                        _ => p.digests = None,
                    }
                }
                Ok(None)
            }
            In::Pieces => {
                if let Some(p) = self.pieces.take() {
                    if let (Some(length), Some(kind), Some(mut d)) = (p.length, p.kind, p.digests) {
                        // Metalink 3 numbers its pieces: in order, each once, from 0.
                        d.sort_by_key(|(i, _)| *i);
                        let in_order = d.iter().enumerate().all(|(n, (i, _))| n == *i);
                        if in_order && !d.is_empty() {
                            self.piece_sets.push(Pieces {
                                length,
                                kind,
                                digests: d.into_iter().map(|(_, h)| h).collect(),
                            });
                        }
                    }
                }
                Ok(None)
            }
            In::File => {
                let Some(mut f) = self.file.take() else {
                    return Ok(None);
                };
                if std::mem::take(&mut self.file_dropped) {
                    return Ok(None);
                }
                f.hash = strongest(std::mem::take(&mut self.hashes), |(k, _)| *k);
                f.pieces = strongest(std::mem::take(&mut self.piece_sets), |p| p.kind);
                Ok(Some(f))
            }
            In::Metalink => {
                // Whatever follows the root is not read.
                self.done = true;
                Ok(None)
            }
            _ => Ok(None),
        }
    }

    /// The text of a field of the file being read.
    fn field(&mut self, field: Field, text: &str) -> Result<(), Error> {
        let v4 = self.v4();
        match field {
            Field::Size => match text.parse::<u64>() {
                Ok(n) if n <= i64::MAX as u64 => {
                    if let Some(f) = self.file.as_mut() {
                        f.size = Some(n);
                    }
                }
                // (Metalink 3: a size that cannot be read is no size, as aria2c takes it.)
                _ if v4 => self.broken("Bad size", text)?,
                _ => {}
            },
            Field::Version => {
                if let Some(f) = self.file.as_mut() {
                    f.version = Some(text.to_string());
                }
            }
            Field::Language | Field::Os => {
                if let Some(f) = self.file.as_mut() {
                    match field {
                        Field::Language => f.languages.push(text.to_string()),
                        _ => f.oses.push(text.to_string()),
                    }
                }
            }
            Field::Hash => match self.attr("type").map(str::trim) {
                None | Some("") if v4 => self.broken("Missing hash@type", "")?,
                Some(t) => {
                    // An unknown type, or a digest that is not one, is passed over.
                    if let Some(k) = hash_kind(t) {
                        if let Some(d) = hex_digest(k, text) {
                            self.hashes.push((k, d));
                        }
                    }
                }
                None => {}
            },
            Field::Url => self.url(text)?,
            Field::MetaUrl => self.metaurl(text)?,
        }
        Ok(())
    }

    /// A priority attribute: Metalink 4's `priority`, 1 to 999999 (absent: 999999).
    fn priority(&mut self, what: &str) -> Result<Option<i64>, Error> {
        let Some(p) = self.attr("priority").map(|p| p.trim().to_string()) else {
            return Ok(Some(LOWEST_PRIORITY));
        };
        match p.parse::<i64>() {
            Ok(n) if (1..=LOWEST_PRIORITY).contains(&n) => Ok(Some(n)),
            Ok(_) => {
                self.broken(&format!("{what}@priority is out of range"), &p)?;
                Ok(None)
            }
            Err(_) => {
                self.broken(&format!("Bad {what}@priority"), &p)?;
                Ok(None)
            }
        }
    }

    fn url(&mut self, text: &str) -> Result<(), Error> {
        let priority = match self.v4() {
            true => match self.priority("url")? {
                Some(p) => p,
                None => return Ok(()),
            },
            // Metalink 3: aria2c's 101 − preference (none or a bad one: the lowest).
            false => self
                .attr("preference")
                .and_then(|p| p.trim().parse::<i64>().ok())
                .filter(|p| *p >= 0)
                .map_or(LOWEST_PRIORITY, |p| (101 - p).clamp(1, LOWEST_PRIORITY)),
        };
        if !self.urls {
            return Ok(());
        }
        let location = self
            .attr("location")
            .map(|l| l.trim().to_string())
            .filter(|l| !l.is_empty());
        if !self.v4() {
            match self.attr("type").map(str::trim) {
                // A torrent: kept as Metalink 4's metaurl is.
                Some("bittorrent" | "torrent") => {
                    if let Some(url) = self.resolve(text).map(String::from) {
                        self.add_metaurl(MetaUrl {
                            url,
                            mediatype: "torrent".into(),
                            priority,
                            name: None,
                        })?;
                    }
                    return Ok(());
                }
                Some(t) if !t.is_empty() && !fetchable(t) => return Ok(()),
                _ => {}
            }
        }
        let Some(url) = self
            .resolve(text)
            .filter(|u| fetchable(u.scheme()))
            .map(String::from)
        else {
            return Ok(());
        };
        if !self.room_for_a_resource()? {
            return Ok(());
        }
        let Some(f) = self.file.as_mut() else {
            return Ok(());
        };
        f.urls.push(Resource {
            url,
            priority,
            location,
        });
        Ok(())
    }

    fn metaurl(&mut self, text: &str) -> Result<(), Error> {
        let Some(mediatype) = self
            .attr("mediatype")
            .map(|m| m.trim().to_string())
            .filter(|m| !m.is_empty())
        else {
            return self.broken("Missing metaurl@mediatype", "");
        };
        let Some(priority) = self.priority("metaurl")? else {
            return Ok(());
        };
        let name = match self.attr("name").map(str::to_string) {
            Some(n) => match safe_name(&n) {
                Ok(n) => Some(n),
                Err(why) => return self.broken("Bad metaurl@name", &why),
            },
            None => None,
        };
        if !self.urls {
            return Ok(());
        }
        let url = match text.starts_with("magnet:") {
            true => Some(text.to_string()),
            false => self.resolve(text).map(String::from),
        };
        if let (Some(url), "torrent") = (url, mediatype.as_str()) {
            self.add_metaurl(MetaUrl {
                url,
                mediatype,
                priority,
                name,
            })?;
        }
        Ok(())
    }

    fn add_metaurl(&mut self, m: MetaUrl) -> Result<(), Error> {
        if !self.room_for_a_resource()? {
            return Ok(());
        }
        if let Some(f) = self.file.as_mut() {
            f.metaurls.push(m);
        }
        Ok(())
    }

    /// Whether the file being read takes another resource: not past [`MAX_URLS`] (a rule broken,
    /// see [`Reader::broken`]), nor with no file open.
    fn room_for_a_resource(&mut self) -> Result<bool, Error> {
        let count = match &self.file {
            Some(f) => f.urls.len() + f.metaurls.len(),
            None => return Ok(false),
        };
        if count >= MAX_URLS {
            self.broken("too many url elements", &format!("over {MAX_URLS}"))?;
            return Ok(false);
        }
        Ok(true)
    }

    /// `text` as an absolute URL: as it is, or against the base; `None` when it is neither.
    fn resolve(&self, text: &str) -> Option<Url> {
        match Url::parse(text) {
            Ok(u) => Some(u),
            Err(url::ParseError::RelativeUrlWithoutBase) => self.base.as_ref()?.join(text).ok(),
            Err(_) => None,
        }
    }
}

/// The value of the unprefixed attribute `name`, its references decoded; `None` when absent or
/// when it holds a reference to an entity (never expanded).
fn attr(e: &BytesStart, name: &str) -> Option<String> {
    e.attributes()
        .flatten()
        .find(|a| a.key.prefix().is_none() && a.key.local_name().as_ref() == name)
        .and_then(|a| {
            a.normalized_value(quick_xml::XmlVersion::Implicit1_0)
                .ok()
                .map(|v| v.into_owned())
        })
}

/// Schemes ringdl fetches a file over.
fn fetchable(scheme: &str) -> bool {
    matches!(scheme, "http" | "https" | "ftp" | "ftps" | "ftpes" | "sftp")
}

/// A hash type's name as Metalink writes it (`sha-256`; aria2c's `sha1`, `sha256` too; in any
/// case).
fn hash_kind(name: &str) -> Option<Kind> {
    match name.to_ascii_lowercase().as_str() {
        "sha1" => Some(Kind::Sha1),
        "sha256" => Some(Kind::Sha256),
        n => Kind::from_name(n),
    }
}

/// How strong a kind is (aria2c's order; MD5 and Adler-32 the weakest).
fn strength(k: Kind) -> u8 {
    match k {
        Kind::Sha512 => 5,
        Kind::Sha384 => 4,
        Kind::Sha256 => 3,
        Kind::Sha224 => 2,
        Kind::Sha1 => 1,
        Kind::Md5 | Kind::Adler32 => 0,
    }
}

/// The strongest of `items` by `kind`, the first listed among equals.
fn strongest<T>(items: Vec<T>, kind: impl Fn(&T) -> Kind) -> Option<T> {
    let mut best: Option<T> = None;
    for i in items {
        if best
            .as_ref()
            .is_none_or(|b| strength(kind(&i)) > strength(kind(b)))
        {
            best = Some(i);
        }
    }
    best
}

/// `text` as a digest of `kind`: exactly its length in hex digits.
fn hex_digest(kind: Kind, text: &str) -> Option<Vec<u8>> {
    if text.len() != kind.digest_len() * 2 || !text.is_ascii() {
        return None;
    }
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(text.get(i..i + 2)?, 16).ok())
        .collect()
}

/// Whether `path` names a local file aria2c takes for a Metalink document: one that starts with
/// `<?xml` (whatever its name).
pub fn is_document_file(path: &str) -> bool {
    use std::io::Read;
    let mut head = [0u8; 5];
    std::fs::File::open(path)
        .and_then(|mut f| f.read_exact(&mut head))
        .is_ok_and(|()| &head == b"<?xml")
}

/// A file name that stays inside the download directory, `/`-separated with empty components
/// dropped (`a//b` is `a/b`), or why not.
pub fn safe_name(name: &str) -> Result<String, String> {
    if name.is_empty() {
        return Err("no name".into());
    }
    if name.chars().any(|c| c.is_control()) {
        return Err("a control character".into());
    }
    if name.starts_with('/') || name.starts_with('\\') {
        return Err("an absolute path".into());
    }
    let b = name.as_bytes();
    if b.len() >= 2 && b[0].is_ascii_alphabetic() && b[1] == b':' {
        return Err("a drive letter".into());
    }
    if name.ends_with('/') {
        return Err("a directory, not a file".into());
    }
    let parts: Vec<&str> = name.split('/').filter(|p| !p.is_empty()).collect();
    // (A backslash is a character of the name on Linux, but `..\` climbs on the systems where
    // such a file may be copied to: refused too.)
    let climbs = |p: &&str| matches!(*p, "." | "..") || p.split('\\').any(|q| q == "..");
    if parts.iter().any(climbs) {
        return Err("a . or .. component".into());
    }
    Ok(parts.join("/"))
}

fn shorten(s: &str) -> String {
    s.chars().take(80).collect()
}

#[cfg(test)]
mod tests;
