//! A Metalink document as a list of downloads: read once whole to check it (a broken rule
//! anywhere refuses it before anything starts, as aria2c does) and to count and pick its files,
//! then again as the downloads start, one file at a time: a Metalink of any number of files is
//! never held whole. For `-M`, a Metalink named on the command line or in an `-i` list, and one
//! a download fetched (`--follow-metalink`).
use super::{jobs, Reader};
use crate::engine::{DownloadOptions, Follow, Job};
use std::fs::File;
use std::io::{BufReader, Seek};

/// A Metalink's downloads, to be pulled in order.
pub struct Downloads {
    /// How many downloads it stands for.
    pub count: usize,
    /// Files that passed the language, OS and version filters (none: aria2c's "No file matched
    /// with your preference.").
    pub matched: usize,
    reader: Reader<BufReader<File>>,
    opts: DownloadOptions,
    /// Which files, by their place in the document, are downloads (one bit each, from the
    /// first reading): the others' resources are not read again.
    picked: Vec<u64>,
    /// The place of the next file in the document.
    at: usize,
    /// The index (as `-S` numbers them) of the last file that passed the filters.
    index: usize,
}

/// A document's reader from its start; `Err`: aria2c's message and exit code.
fn reader(
    file: &File,
    name: &str,
    base: Option<&str>,
) -> Result<Reader<BufReader<File>>, (String, i32)> {
    let read_error = |e: std::io::Error| (format!("Failed to read the file {name}, cause: {e}"), 1);
    let mut f = file.try_clone().map_err(read_error)?;
    f.rewind().map_err(read_error)?;
    let base = base.and_then(|b| url::Url::parse(b).ok());
    Ok(Reader::new(BufReader::new(f), base))
}

/// aria2c's words for a document it refuses, and its exit code (20).
pub fn refused(name: &str, e: super::Error) -> (String, i32) {
    (format!("Exception: {name}: errorCode=20 {}", e.message), 20)
}

/// The listing of `-S`: every file that passes the filters, as aria2c prints them, each given
/// to `out` as it is read (the document checked whole first).
pub fn list(
    file: &File,
    name: &str,
    opts: &crate::engine::MetalinkOptions,
    out: &mut dyn FnMut(&str),
) -> Result<(), (String, i32)> {
    let base = opts.base_uri.as_deref();
    let mut r = reader(file, name, base)?.without_urls();
    while r.next_file().map_err(|e| refused(name, e))?.is_some() {}
    let mut r = reader(file, name, base)?.without_urls();
    out(&jobs::listing_head());
    let mut index = 0;
    while let Some(f) = r.next_file().map_err(|e| refused(name, e))? {
        if jobs::wanted(&f, opts) {
            index += 1;
            out(&jobs::listing_entry(index, &f));
        }
    }
    out("\n");
    Ok(())
}

/// The downloads of the document in `file` (read from its start; `name` says it in messages),
/// each made from `opts`; relative URLs are of `base`.
pub fn open(
    file: &File,
    name: &str,
    opts: &DownloadOptions,
    base: Option<&str>,
) -> Result<Downloads, (String, i32)> {
    let mut r = reader(file, name, base)?.without_urls();
    let (mut count, mut matched, mut at) = (0, 0, 0);
    let mut picked: Vec<u64> = Vec::new();
    while let Some(f) = r.next_file().map_err(|e| refused(name, e))? {
        if jobs::wanted(&f, &opts.metalink) {
            matched += 1;
            if jobs::selected(matched, &opts.metalink) {
                count += 1;
                if picked.len() <= at / 64 {
                    picked.resize(at / 64 + 1, 0);
                }
                picked[at / 64] |= 1 << (at % 64);
            }
        }
        at += 1;
    }
    let mut opts = opts.clone();
    // What a Metalink describes is downloaded, not followed again (a document naming itself
    // would never end).
    opts.follow_metalink = Follow::No;
    Ok(Downloads {
        count,
        matched,
        reader: reader(file, name, base)?,
        opts,
        picked,
        at: 0,
        index: 0,
    })
}

impl Iterator for Downloads {
    type Item = Job;

    fn next(&mut self) -> Option<Job> {
        // (The document was read whole before: a failure now is a file changed meanwhile,
        // which ends the list.)
        loop {
            let picked = |at: usize| {
                self.picked
                    .get(at / 64)
                    .is_some_and(|w| w >> (at % 64) & 1 == 1)
            };
            let this = picked(self.at);
            self.reader.set_urls(this);
            let f = self.reader.next_file().ok().flatten()?;
            self.at += 1;
            if jobs::wanted(&f, &self.opts.metalink) {
                self.index += 1;
            }
            if this {
                return Some(jobs::job_at(&f, &self.opts, self.index));
            }
        }
    }
}
