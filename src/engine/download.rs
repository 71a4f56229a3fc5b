//! The state the driver keeps per download: its mirrors, its file and generation, its plan and
//! what is written, its control file, its checksum, its rate limit. Nothing here submits I/O.
use super::config::DownloadOptions;
use super::job::{Failure, SessionEntry};
use crate::http::ResponseHead;
use crate::plan::{Owner, Plan};
use crate::store::{self, WriteMode};
use std::fs::File;
use std::path::PathBuf;
use std::rc::Rc;
use std::time::Instant;
use url::Url;

/// The version of a file (its `ETag`, else its `Last-Modified`) and the origin
/// (`scheme://host:port`) that gave it. `If-Range` goes only to that origin: another mirror's
/// validators are its own, and it would answer every resuming request with the whole file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Validator {
    pub origin: String,
    pub value: String,
}

impl Validator {
    /// The validator of `resp`, an answer from `url`.
    pub fn of(resp: &ResponseHead, url: &Url) -> Option<Validator> {
        let value = resp.etag.clone().or_else(|| resp.last_modified.clone())?;
        Some(Validator {
            origin: url.origin().ascii_serialization(),
            value,
        })
    }

    /// The `If-Range` value for a request to `url`: none for another origin.
    pub fn for_url(&self, url: &Url) -> Option<&str> {
        (url.origin().ascii_serialization() == self.origin).then_some(self.value.as_str())
    }

    /// As kept in the partial file's extended attribute: origin, newline, value.
    pub fn encode(&self) -> String {
        format!("{}\n{}", self.origin, self.value)
    }

    pub fn decode(kept: &str) -> Option<Validator> {
        let (origin, value) = kept.split_once('\n')?;
        Some(Validator {
            origin: origin.to_string(),
            value: value.to_string(),
        })
    }
}

/// Download life cycle.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DlState {
    Waiting,
    Active,
    Finished,
}

/// A new output file being created on the file-job thread: the job leaves the opened file (or
/// why it could not be opened) here, and the connection and URI whose response asked for it, to
/// name in the error.
#[derive(Debug, Clone)]
pub struct Opening {
    pub result: std::sync::Arc<std::sync::Mutex<Option<std::io::Result<store::OutFile>>>>,
    /// A download over several files: the files after the first (`result`'s), in order.
    pub more: std::sync::Arc<std::sync::Mutex<Vec<store::OutFile>>>,
    pub conn: Owner,
    pub uri: String,
    /// The file was asked for in [`WriteMode::Uncached`], not put in it by a refused `O_DIRECT`.
    pub uncached: bool,
}

/// One file being downloaded.
pub struct Download {
    /// Where it is in the engine's list, and its serial there.
    pub id: DlId,
    pub gid: u64,
    /// With `--save-session` outside daemon mode: its URIs as given and its entry's own options,
    /// for the session written at exit.
    pub session: Option<Box<SessionEntry>>,
    /// Control-file saves in flight: its place is not reused until they have ended.
    pub saves: usize,
    /// A server asked for credentials (401): `--http-auth-challenge` ones go out from now on.
    pub auth_challenged: bool,
    /// `--use-head`: the HEAD request was answered; the GETs follow.
    pub head_done: bool,
    pub uris: Vec<Url>,
    pub bad_uris: Vec<bool>,
    /// The best speed (bytes/s) an exchange of this attempt had from each mirror, and how many
    /// exchanges brought body bytes (one: a single-connection download): the server profile's
    /// measurements (`driver/select.rs`).
    pub mirror_speeds: Vec<u32>,
    pub exchanges_with_body: u32,
    /// Mirrors taken away by `aria2.changeUri`: never used again (also marked bad) and no longer
    /// listed. A connection already on one finishes its range.
    pub dropped_uris: Vec<bool>,
    pub first_uri: String,
    pub opts: DownloadOptions,
    pub state: DlState,
    pub path: Option<PathBuf>,
    /// The file this download made or took up (resumed, continued, or checked as found): an
    /// attempt that starts over writes over it, under its name, and over no other file.
    pub own_path: Option<PathBuf>,
    /// The open output file, shared with the file operations in flight on it.
    pub file: Option<Rc<File>>,
    /// A download over several files (`DownloadOptions::layout`): each file, `file` the first,
    /// and how each is written (`O_DIRECT` only where its start is aligned in the byte space).
    /// Empty for a download of one file.
    pub files: Vec<(Rc<File>, WriteMode)>,
    /// Bytes it does not fetch: of files left unselected, outside the pieces of selected ones
    /// (`Layout::unwanted`). Never written, never claimed; it is complete without them.
    pub unwanted: crate::plan::RangeSet,
    /// Generation of `file` (0: none open). Every opened file gets a new one; completions carry
    /// the generation they were issued on.
    pub generation: u64,
    /// Counts the attempts [`Download::forget_attempt`] ended: blocks and exchanges carry the one
    /// they belong to.
    pub attempt: u64,
    /// File operations in flight on an earlier file of this download, which the new file's writes
    /// must wait for (they could otherwise land after them).
    pub old_writes: usize,
    /// How the open file is written (set when it is opened).
    pub mode: WriteMode,
    /// Known once the first response arrives. An unknown length is a plan of `u64::MAX` bytes cut
    /// to size when the body ends.
    pub plan: Option<Plan>,
    pub length_known: bool,
    pub ranges_ok: bool,
    /// A range request has been answered correctly (until then the first, whole-file response may
    /// take over ranges other connections have not started).
    pub ranges_confirmed: bool,
    /// Final URL of the first request (after redirects) and the mirror it came from: extra
    /// connections to that mirror use it.
    pub split_url: Option<(usize, Url)>,
    /// Connections asked for but not yet started (no slot free yet).
    pub wanted: usize,
    pub writes: usize,
    /// End of the furthest data written (for cutting a failed download's padding).
    pub high_water: u64,
    /// Bytes whose writes have completed: what a control file may claim.
    pub written: crate::plan::RangeSet,
    /// The `.aria2` file kept for this download, once there is one.
    pub control: Option<PathBuf>,
    /// Piece length of its control file.
    pub piece_length: u32,
    pub last_save: Option<Instant>,
    /// The generation of the file the last completed control-file save described.
    pub saved_generation: u64,
    /// The generation of the file whose final writeback was issued (a file written through the
    /// page cache is complete once that is done; see `maybe_finish`).
    pub synced_generation: u64,
    /// A writeback of the current file failed: none of its bytes may be claimed any more.
    pub claims_lost: bool,
    /// The errno of a control-file save's sync of the data file that failed, set on the
    /// file-job thread: a writeback error, reported once to whoever asks first, so the loop
    /// treats it as a failed writeback (`on_control_saved`).
    pub sync_error: std::sync::Arc<std::sync::atomic::AtomicI32>,
    /// Counts the times claims were withdrawn ([`Download::withdraw_claims`]); a control-file
    /// save queued before one is not written (the job reads it just before it saves).
    pub withdrawals: std::sync::Arc<std::sync::atomic::AtomicU64>,
    /// The first save of the current file is in flight: until it is on disk nothing is written
    /// and nothing allocated, so a file never holds bytes (or length) no control file accounts
    /// for — a later `-c` would take them for data.
    pub first_save_pending: bool,
    /// An allocation waiting for that save (or for the file's creation).
    pub alloc_after_save: Option<u64>,
    /// The current generation's file is being created by the file-job thread: until it is
    /// open, filled blocks wait (`submit_flushes`) and the download cannot end (the creation
    /// counts in `writes`).
    pub opening: Option<Opening>,
    /// The job creating the current generation's file, waiting for the operations on the file it
    /// replaces (`old_writes`) to end: it empties the file, and a write still in flight would land
    /// in it after (counted in `writes` meanwhile; issued by `file_op_done`).
    pub parked_open: Option<crate::engine::reactor::Job>,
    /// A control-file save was asked for while the file was being created: it is made once the
    /// file exists (a file that cannot be created leaves no control file).
    pub save_when_open: bool,
    /// Its file could not be created: it leaves no control file.
    pub create_failed: bool,
    /// Resumed from a control file: the first request already asks for a range.
    pub resumed: bool,
    /// `-c` without a control file: the existing file's length (rounded down to 16 KiB), asked for
    /// first; or, with `verify_found`, `-V`'s file's length.
    pub continue_from: Option<u64>,
    /// `continue_from` is `-V`'s (without `-c`): a file of the server's length is checked by its
    /// digest, one of another length is not this file.
    pub verify_found: bool,
    /// A control file found without its file: removed when the first response creates the file.
    pub defunct_control: Option<std::path::PathBuf>,
    /// `--checksum`: the digest the file must have, and the hash of its first `hash_pos` bytes,
    /// taken as blocks are written in order.
    pub expected: Option<crate::store::checksum::Expected>,
    pub hasher: Option<crate::store::checksum::Hasher>,
    pub hash_pos: u64,
    /// Its pieces' checks (`DownloadOptions::pieces`), made once the length is known
    /// ([`Download::pieces`]).
    pub pieces: Option<crate::engine::pieces::Pieces>,
    /// Pieces that failed their check so far.
    pub bad_pieces: u32,
    /// A piece's read-back is in flight (one at a time).
    pub reading_piece: bool,
    /// The file generation `pieces` was made for.
    pub pieces_generation: u64,
    /// Reading the file back to finish the hash (blocks arrived out of order, or resumed).
    pub verifying: bool,
    pub verified: bool,
    /// The read-back found no free block: the next block freed goes to it first.
    pub verify_waits: bool,
    /// `--max-download-limit`.
    pub bucket: Option<Bucket>,
    /// Connections to open once `retry_at` has passed (`--retry-wait`).
    pub deferred: usize,
    pub retry_at: Option<Instant>,
    /// "Not found" answers so far (`--max-file-not-found`).
    pub not_found: u32,
    /// `--conditional-get`: the local file's time, sent as If-Modified-Since.
    pub if_modified_since: Option<String>,
    /// The server's Last-Modified, for `-R`.
    pub last_modified: Option<String>,
    /// Which version of the remote file this download holds: sent as If-Range, so a changed file
    /// is answered whole instead of being mixed in.
    pub validator: Option<Validator>,
    /// Ended without receiving a body (dry run, 304), or without a file to keep it in (its
    /// creation failed after the body had begun to arrive).
    pub no_data: bool,
    /// `-V`: the existing file is being checked; nothing is fetched unless it fails.
    pub checking_existing: bool,
    /// Started before by this process: the file found is its own partial file (`Job::restarted`).
    pub restarted: bool,
    /// A Metalink to follow once complete (`--follow-metalink`, decided by its first answer).
    pub document: bool,
    /// Its file is held in memory only (`--follow-metalink=mem`): no control file, nothing on
    /// disk, shown as `[MEMORY]name`.
    pub in_memory: bool,
    /// The finished document's file, kept for the follow (an in-memory file's only handle).
    pub document_file: Option<Rc<File>>,
    /// The Metalink that describes it is being fetched (`describedby`; once only).
    pub describing: bool,
    /// The media type the server said the file is (HTTP's `Content-Type`, first said).
    pub content_type: Option<String>,
    /// The length was learnt only when the body ended (no answer said it): no control file
    /// describes such a download, as aria2 writes none for it.
    pub length_at_end: bool,
    /// The file was preallocated to its full length.
    pub preallocated: bool,
    /// The file's length when this run opened it without emptying it (a control file's, `-c`'s
    /// or `-V`'s file; 0 for one it created): a run that fails never leaves it shorter, so no
    /// byte a user or an earlier run had is cut away.
    pub found_len: u64,
    /// Bytes counted done from disk when this run's plan was made (see `received_here`).
    pub done_at_start: u64,
    /// How much of the file's start this run never writes (`-c`'s resume offset, a control
    /// file's gap-free claims): what stays even when a lost writeback makes this run's own
    /// writes anything.
    pub untouched: u64,
    pub failures: u32,
    /// Mirrors that answered a resuming request with the whole file (`--max-resume-failure-tries`).
    pub resume_failures: u32,
    /// Times the download started over because a range came from another version of the file
    /// than the one it began with (a server that ignores `If-Range`).
    pub version_restarts: u32,
    pub error: Option<Failure>,
    /// Stopped by Ctrl-C/SIGTERM before it finished: reported as in progress.
    pub halted: bool,
    /// Stopped for `aria2.remove` (daemon mode): removed as soon as asked, in progress never.
    pub removing: bool,
    /// Why ranges were turned off (a range request refused): reported if the download then
    /// stalls, since it is what stopped the splitting.
    pub soft_error: Option<Failure>,
    pub started: Option<Instant>,
    pub ended: Option<Instant>,
    /// (time, bytes received) at recent readouts: the speed is measured over the last few seconds.
    pub samples: std::collections::VecDeque<(Instant, u64)>,
}

/// Names a download from something that may outlive it (an operation in flight, a file job): its
/// place in the engine's list and the serial of the download that held the place then. A place is
/// reused by a later job, so a stale id finds nothing rather than that job's download.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DlId {
    pub slot: usize,
    pub serial: u64,
}

/// Names the file an operation was issued on: its download and the generation of the file (a
/// download that starts over opens a new one).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileOf {
    pub dl: DlId,
    pub generation: u64,
}

impl Download {
    pub fn new(
        id: DlId,
        gid: u64,
        uris: Vec<Url>,
        first_uri: String,
        opts: DownloadOptions,
        now: Instant,
    ) -> Download {
        let n = uris.len();
        let mut opts = opts;
        if let Some(length) = opts
            .pieces
            .as_ref()
            .and_then(|h| u32::try_from(h.length).ok())
        {
            // Its control file counts in its pieces, as aria2's does for a Metalink's.
            opts.piece_length = length;
        }
        let piece_length = opts.piece_length;
        let unwanted = opts
            .layout
            .as_ref()
            .map_or_else(crate::plan::RangeSet::new, |l| {
                let piece = opts.pieces.as_ref().map_or(0, |h| h.length);
                crate::plan::RangeSet::from_ranges(&l.unwanted(piece, crate::plan::ALIGN))
            });
        let opts_limit = opts.max_download_limit;
        // (A whole-file digest does not apply to several files: their pieces check them.)
        let expected = opts
            .checksum
            .as_deref()
            .filter(|_| opts.layout.is_none())
            .and_then(crate::store::checksum::parse);
        let hasher = expected
            .as_ref()
            .map(|e| crate::store::checksum::Hasher::new(e.kind));
        Download {
            id,
            gid,
            saves: 0,
            auth_challenged: false,
            head_done: false,
            uris,
            bad_uris: vec![false; n],
            mirror_speeds: vec![0; n],
            exchanges_with_body: 0,
            dropped_uris: vec![false; n],
            first_uri,
            opts,
            state: DlState::Waiting,
            path: None,
            own_path: None,
            file: None,
            files: Vec::new(),
            unwanted,
            generation: 0,
            attempt: 0,
            old_writes: 0,
            mode: WriteMode::Direct,
            plan: None,
            length_known: false,
            ranges_ok: false,
            ranges_confirmed: false,
            split_url: None,
            wanted: 0,
            writes: 0,
            high_water: 0,
            written: crate::plan::RangeSet::new(),
            control: None,
            piece_length,
            last_save: None,
            saved_generation: 0,
            synced_generation: 0,
            claims_lost: false,
            sync_error: Default::default(),
            withdrawals: Default::default(),
            first_save_pending: false,
            alloc_after_save: None,
            opening: None,
            parked_open: None,
            save_when_open: false,
            create_failed: false,
            resumed: false,
            continue_from: None,
            verify_found: false,
            defunct_control: None,
            expected,
            hasher,
            hash_pos: 0,
            pieces: None,
            bad_pieces: 0,
            reading_piece: false,
            pieces_generation: 0,
            verifying: false,
            verified: false,
            verify_waits: false,
            bucket: (opts_limit > 0).then(|| Bucket::new(opts_limit, now)),
            deferred: 0,
            retry_at: None,
            not_found: 0,
            if_modified_since: None,
            last_modified: None,
            validator: None,
            no_data: false,
            checking_existing: false,
            restarted: false,
            document: false,
            in_memory: false,
            document_file: None,
            describing: false,
            content_type: None,
            length_at_end: false,
            preallocated: false,
            found_len: 0,
            done_at_start: 0,
            untouched: 0,
            failures: 0,
            resume_failures: 0,
            version_restarts: 0,
            error: None,
            soft_error: None,
            halted: false,
            removing: false,
            started: None,
            ended: None,
            samples: std::collections::VecDeque::new(),
            session: None,
        }
    }

    /// Forgets what the file holds so that the next first response starts it over (overwriting
    /// it, `own_path`): the plan, the bytes on disk and everything derived from them. Only through the
    /// engine's `start_over`, which also drops the blocks still waiting to be written for the
    /// attempt forgotten here (written later, into the next file, they would count as its bytes).
    pub fn forget_attempt(&mut self) {
        self.attempt += 1;
        self.plan = None;
        self.drop_file();
        self.written = crate::plan::RangeSet::new();
        self.resumed = false;
        self.continue_from = None;
        self.verify_found = false;
        self.wanted = 0;
        self.split_url = None;
        self.high_water = 0;
        self.preallocated = false;
        // The next first response empties the file: nothing found in it is left to keep.
        self.found_len = 0;
        self.done_at_start = 0;
        self.untouched = 0;
        self.piece_length = self.opts.piece_length;
        self.last_save = None;
        self.hash_pos = 0;
        self.hasher = self
            .expected
            .as_ref()
            .map(|e| crate::store::checksum::Hasher::new(e.kind));
        self.pieces = None;
    }

    /// Nothing written is claimed any more (a checksum failed, a writeback was lost): not by
    /// this download's next control file, nor by one already queued.
    pub fn withdraw_claims(&mut self) {
        self.written = crate::plan::RangeSet::new();
        if let Some(p) = self.pieces.as_mut() {
            p.reset();
        }
        self.withdrawals
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    }

    /// Takes `file` as the download's output file, under a new generation.
    pub fn open_file(&mut self, file: File) {
        self.new_generation();
        self.file = Some(Rc::new(file));
    }

    /// Starts a new generation whose file `open` is still creating ([`Download::attach_file`]
    /// gives it); what the creation's completion is tagged with.
    pub fn begin_open(&mut self, open: Opening) -> FileOf {
        self.new_generation();
        self.opening = Some(open);
        self.file_of()
    }

    /// The file the current generation's creation opened.
    pub fn attach_file(&mut self, file: File) {
        self.opening = None;
        self.file = Some(Rc::new(file));
    }

    /// Takes `files` as the files of a download over several, under a new generation.
    pub fn open_files(&mut self, files: Vec<store::OutFile>) {
        self.new_generation();
        self.attach_files(files);
    }

    /// The files the current generation's creation opened for a download over several: the
    /// first is also `file`.
    pub fn attach_files(&mut self, files: Vec<store::OutFile>) {
        self.opening = None;
        let layout = self.opts.layout.clone();
        self.files = files
            .into_iter()
            .enumerate()
            .map(|(i, out)| {
                // A file that starts mid-block has no aligned write: through the page cache,
                // uncached, whatever it was opened with.
                let direct = layout.as_ref().is_some_and(|l| l.direct(i));
                let mode = match (out.mode, direct) {
                    (WriteMode::Direct, false) => WriteMode::Uncached,
                    (m, _) => m,
                };
                (Rc::new(out.file), mode)
            })
            .collect();
        self.file = self.files.first().map(|(f, _)| f.clone());
    }

    fn new_generation(&mut self) {
        static GENERATIONS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
        self.drop_file();
        self.claims_lost = false;
        self.generation = GENERATIONS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }

    /// Lets go of the open file. Its operations in flight complete on it and count down
    /// `old_writes`; nothing they report is taken for the next file's. Private: dropping the file
    /// without forgetting what was derived from its bytes (`start_over`) would mix two attempts.
    fn drop_file(&mut self) {
        self.file = None;
        self.files.clear();
        self.opening = None;
        if self.parked_open.take().is_some() {
            // Never issued: nothing will complete for it.
            self.writes -= 1;
        }
        self.save_when_open = false;
        self.generation = 0;
        self.first_save_pending = false;
        self.alloc_after_save = None;
        self.old_writes += std::mem::take(&mut self.writes);
    }

    /// The file operations are issued on now.
    pub fn file_of(&self) -> FileOf {
        FileOf {
            dl: self.id,
            generation: self.generation,
        }
    }

    /// Whether a saved control file describes the current file. Until one does, `-c` would take
    /// the file's length for what is done: the file holds no allocated length, and grows only at
    /// the end of its bytes written without a gap (`submit_flushes`).
    pub fn described(&self) -> bool {
        self.saved_generation == self.generation
    }

    /// The output path as messages name it (empty until there is one).
    pub fn path_text(&self) -> String {
        self.path
            .as_ref()
            .map(|p| p.display().to_string())
            .unwrap_or_default()
    }

    /// Whether a mirror other than `mirror` is still usable.
    pub fn other_mirrors(&self, mirror: usize) -> bool {
        (0..self.uris.len()).any(|m| m != mirror && !self.bad_uris[m])
    }

    /// `aria2.changeUri` on a running download: one listed mirror per entry of `del` is dropped
    /// (compared as parsed URLs), then `add` become usable mirrors. Indices of mirrors in use do
    /// not move: added ones go to the end. The counts of dropped and added mirrors.
    pub fn change_mirrors(&mut self, del: &[String], add: &[Url]) -> (usize, usize) {
        let mut dropped = 0;
        for d in del {
            let Ok(want) = Url::parse(d) else { continue };
            let found =
                (0..self.uris.len()).find(|&m| !self.dropped_uris[m] && self.uris[m] == want);
            if let Some(m) = found {
                self.dropped_uris[m] = true;
                self.bad_uris[m] = true;
                dropped += 1;
            }
        }
        for u in add {
            self.uris.push(u.clone());
            self.bad_uris.push(false);
            self.dropped_uris.push(false);
        }
        (dropped, add.len())
    }

    /// How many connections this download should have: `-s` in all, at most `-x` per usable mirror.
    pub fn connections_wanted(&self) -> usize {
        let servers = self.bad_uris.iter().filter(|b| !**b).count().max(1);
        self.opts.split.min(self.opts.max_conn_per_server * servers)
    }

    /// Bytes received so far.
    pub fn received(&self) -> u64 {
        self.plan.as_ref().map_or(0, Plan::received)
    }

    /// Bytes received by this run: what was on disk when it began (a control file's claims,
    /// `-c`'s file) is not counted in its speed or its average.
    pub fn received_here(&self) -> u64 {
        self.received().saturating_sub(self.done_at_start)
    }

    /// Records the byte count now and returns the speed over the last ~3 seconds (bytes/s).
    pub fn sample_speed(&mut self, now: Instant) -> u64 {
        let got = self.received_here();
        self.samples.push_back((now, got));
        while self.samples.len() > 2
            && now.duration_since(self.samples[0].0) > std::time::Duration::from_secs(3)
        {
            self.samples.pop_front();
        }
        let (t0, b0) = self.samples[0];
        let secs = now.duration_since(t0).as_secs_f64();
        if secs < 0.05 {
            return 0;
        }
        (got.saturating_sub(b0) as f64 / secs) as u64
    }

    /// The speed over the samples the readout took (bytes/s), without taking one.
    pub fn speed(&self, now: Instant) -> u64 {
        let Some(&(t0, b0)) = self.samples.front() else {
            return 0;
        };
        let secs = now.duration_since(t0).as_secs_f64();
        if secs < 0.05 {
            return 0;
        }
        (self.received_here().saturating_sub(b0) as f64 / secs) as u64
    }

    /// The file length, when known.
    pub fn total(&self) -> Option<u64> {
        if self.length_known {
            self.plan.as_ref().map(Plan::total)
        } else {
            None
        }
    }

    /// A plan for `total` bytes, of which those in `done` (and the unwanted ones) are not
    /// fetched.
    pub fn plan_for(&self, total: u64, done: &crate::plan::RangeSet) -> Plan {
        if done.is_empty() && self.unwanted.is_empty() {
            return Plan::new(total, self.opts.min_split_size);
        }
        let mut skip = done.clone();
        for r in self.unwanted.ranges() {
            skip.insert(r.clone());
        }
        Plan::from_done(total, self.opts.min_split_size, &skip)
    }

    /// Every byte it wants is on disk: written, or unwanted.
    pub fn all_written(&self, total: u64) -> bool {
        if self.unwanted.is_empty() {
            return self.written.covers(0..total);
        }
        self.unwanted
            .gaps(total)
            .into_iter()
            .all(|g| self.written.covers(g))
    }

    /// Takes `plan` as the download's plan (split on its pieces, when it has them).
    pub fn install_plan(&mut self, mut plan: Plan) {
        if let Some(h) = self.opts.pieces.as_ref() {
            plan.split_on_pieces(h.length);
        }
        self.plan = Some(plan);
    }

    /// Its pieces' checks, made when first asked for once the length is known: the pieces the
    /// bytes found on disk and trusted cover (a control file's claims) count as verified, as
    /// aria2 trusts them. `Ok(None)`: no piece digests, or no length yet. An error: the digests
    /// do not fit the length.
    pub fn pieces(&mut self) -> Result<Option<&mut crate::engine::pieces::Pieces>, String> {
        if self.pieces_generation != self.generation {
            // Made for a file this download has let go of: the writes it counted in flight end
            // on that file, and are never counted down here.
            self.pieces = None;
        }
        if self.pieces.is_none() {
            self.pieces_generation = self.generation;
            let (Some(hashes), Some(total)) = (self.opts.pieces.clone(), self.total()) else {
                return Ok(None);
            };
            hashes
                .check(total)
                .map_err(|e| format!("The piece digests do not fit the file: {e}"))?;
            let mut p = crate::engine::pieces::Pieces::new(hashes, total);
            // (A length learnt only at the body's end: what is written is this run's, unchecked,
            // and read back.)
            if !self.length_at_end {
                p.trust(&self.written);
            }
            // Pieces holding no byte of a file wanted are never checked.
            if let Some(layout) = self.opts.layout.as_ref() {
                p.excuse(|r| layout.wants(r));
            }
            self.pieces = Some(p);
        }
        Ok(self.pieces.as_mut())
    }

    /// Its pieces' checks if made for the current file (see [`Download::pieces`]), and the bytes
    /// on disk they are checked against.
    pub fn live_pieces(
        &mut self,
    ) -> (
        Option<&mut crate::engine::pieces::Pieces>,
        &crate::plan::RangeSet,
    ) {
        let live = self.pieces_generation == self.generation;
        (self.pieces.as_mut().filter(|_| live), &self.written)
    }

    /// The bytes a control file may claim: those written, and with piece digests only the
    /// pieces verified.
    pub fn claims(&self) -> crate::plan::RangeSet {
        // (Digests, but no check made yet: nothing was written since what is trusted was found.)
        match &self.pieces {
            Some(p) if self.pieces_generation == self.generation => p.claims(&self.written),
            _ => self.written.clone(),
        }
    }

    /// What its pieces' checks stand at, for a debug build's assertion.
    pub fn pieces_state(&self) -> String {
        format!(
            "generation {} of {}, file {}, written {:?}, {}",
            self.pieces_generation,
            self.generation,
            self.file.is_some(),
            self.written,
            self.pieces
                .as_ref()
                .map_or("not made".into(), |p| p.state())
        )
    }

    /// Every piece with a digest is verified (true without digests, and for a download that
    /// fetched no body: a dry run, a 304, a file found whole).
    pub fn pieces_checked(&self) -> bool {
        if self.no_data {
            return true;
        }
        match (&self.pieces, &self.opts.pieces) {
            (Some(p), _) if self.pieces_generation == self.generation => p.all_verified(),
            (Some(_), _) => false,
            (None, Some(_)) => false,
            (None, None) => true,
        }
    }
}

/// A token bucket: bytes may be received while it holds tokens; it refills at `rate` per second.
/// Reads are not cut to the tokens left, so it may go below zero; the connection then waits until
/// the debt is repaid, which keeps the long-run rate exact.
#[derive(Debug, Clone)]
pub struct Bucket {
    pub rate: u64,
    tokens: f64,
    last: Instant,
}

impl Bucket {
    pub fn new(rate: u64, now: Instant) -> Bucket {
        Bucket {
            rate,
            tokens: 0.0,
            last: now,
        }
    }

    fn refill(&mut self, now: Instant) {
        let dt = now.saturating_duration_since(self.last).as_secs_f64();
        self.last = now;
        // A small burst allowance: a tenth of a second's worth, at least 16 KiB.
        let cap = (self.rate as f64 / 10.0).max(16384.0);
        self.tokens = (self.tokens + dt * self.rate as f64).min(cap);
    }

    /// When reading may go on: now (None) or at the returned instant.
    pub fn wait_until(&mut self, now: Instant) -> Option<Instant> {
        self.refill(now);
        if self.tokens > 0.0 {
            None
        } else {
            let secs = (-self.tokens + 1.0) / self.rate.max(1) as f64;
            Some(now + std::time::Duration::from_secs_f64(secs))
        }
    }

    /// Records `n` bytes received.
    pub fn charge(&mut self, n: u64, now: Instant) {
        self.refill(now);
        self.tokens -= n as f64;
    }
}
