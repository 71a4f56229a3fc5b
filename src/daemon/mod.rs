//! Daemon mode (`--enable-rpc`), above the engine: the queue aria2's RPC methods act on.
//! Downloads wait in order (paused ones among them), become the engine's downloads as `-j` allows,
//! and end as results kept for `tellStopped` (at most `--max-download-result`). Waiting entries
//! keep only their URIs and their own option lines, so a long queue stays small; the options are
//! resolved when one starts.
//!
//! The daemon drives the engine through `engine::Control` and hears from it through
//! `engine::Supervisor` (which `Daemon` implements): it never sees a connection, a plan or a file.
//! `queue.rs` and `results.rs` keep the long lists, `entries.rs` an entry's record, `session.rs`
//! the session file, `methods.rs` aria2's RPC methods.
mod entries;
mod methods;
mod queue;
mod results;
mod session;

use crate::cli::defs::OptDef;
use crate::engine::{
    Config, Control, Disposition, DownloadOptions, Ended, ExitCode, HookEvent, Job, LogLevel,
    Supervisor,
};
use crate::rpc::status::{Status, StatusView, UriState};
use crate::rpc::Service;
use crate::rpc::{Params, RpcError};
use crate::store::gidmap::GidMap;
use crate::store::records::Records;
use crate::store::session::session_entry;
use session::{Saved, SessionRules, SessionSnapshot};
use std::collections::HashMap;

/// A download not running: not started yet, or paused. A `gid` of 0 asks for a new one.
#[derive(Debug, Clone)]
pub struct Pending {
    pub gid: u64,
    pub uris: Vec<String>,
    /// Its own options (as an input-file entry's lines), on top of the global ones.
    pub options: Vec<(&'static OptDef, String)>,
    pub paused: bool,
    /// What an earlier run of it had reached (it was paused while active).
    pub known: Option<Known>,
    /// That earlier run's last control-file save is still in flight: it may not start before
    /// the file is on disk (it would take the file without it for what is done).
    pub settling: bool,
}

/// How far a download had got.
#[derive(Debug, Clone, Default)]
pub struct Known {
    pub total: u64,
    pub completed: u64,
    pub path: String,
    /// Its pieces on disk, as `tellStatus` shows them (None while the length is unknown).
    pub bitfield: Option<String>,
}

/// Why an active download is being stopped by a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Stop {
    /// `pause`: back to the front of the queue, paused.
    Pause,
    /// `remove`: a result with errorCode 31.
    Remove,
    /// `changeOption` on an option that needs it: back to the front, to start again at once.
    Restart,
    /// Shutting down: kept as waiting for the session.
    Shutdown,
}

/// What a running download was given (its own options, its URIs as sent).
#[derive(Debug, Clone)]
pub(crate) struct Running {
    pub uris: Vec<String>,
    pub options: Vec<(&'static OptDef, String)>,
    pub stop: Option<Stop>,
    /// Being removed, and its result removed too (`removeDownloadResult` right after `remove`,
    /// as aria2p does): it ends without becoming a result.
    pub forget: bool,
}

/// A download that ended.
#[derive(Debug, Clone)]
pub(crate) struct Stopped {
    pub gid: u64,
    pub status: Status,
    pub code: ExitCode,
    pub message: String,
    pub total: u64,
    pub completed: u64,
    pub dir: String,
    pub path: String,
    pub uris: Vec<String>,
    pub options: Vec<(&'static OptDef, String)>,
    pub piece_length: u32,
    /// Its pieces on disk when it stopped (all of them once complete).
    pub bitfield: Option<String>,
}

/// The daemon's state besides the engine's downloads.
pub struct Daemon {
    /// The waiting downloads, and the index of every GID held (waiting, running, stopped): a
    /// new or given GID is checked against it, and a whole GID found, without a walk.
    pub(crate) waiting: queue::Queue,
    pub(crate) running: HashMap<u64, Running>,
    /// Results, and (`--keep-unfinished-download-result` with `--save-session`) the failed and,
    /// with `--force-save`, removed ones dropped past `--max-download-result`, kept only for the
    /// session file, as aria2 does. Without a session nothing would read those, so none are kept.
    pub(crate) stopped: results::Results,
    pub(crate) stopped_total: u64,
    /// The last error among results dropped past `--max-download-result` (it still counts for
    /// the exit code, as in aria2; results removed by a call do not).
    pub(crate) evicted_error: Option<ExitCode>,
    pub(crate) keep_unfinished: bool,
    /// Downloads still running when the daemon stopped.
    pub(crate) in_progress: usize,
    pub(crate) max_results: usize,
    pub(crate) max_concurrent: usize,
    /// The options new downloads start from (changed by `changeGlobalOption`).
    pub(crate) base: DownloadOptions,
    /// The global option values `getGlobalOption` reports.
    pub(crate) options: Vec<(&'static str, String)>,
    pub(crate) env: crate::cli::Env,
    /// `--pause`: new downloads wait paused.
    pub(crate) pause_new: bool,
    pub(crate) session_id: [u8; 20],
    /// `--save-session` and its rules.
    pub(crate) session: Option<SessionRules>,
    /// The rules a session named later (`changeGlobalOption` with `save-session`) is saved by.
    pub(crate) session_rules: SessionRules,
    /// The SHA-256 of the last text saved (an unchanged session is not written again by the
    /// interval), shared with the save's thread.
    pub(crate) saved: std::sync::Arc<std::sync::Mutex<Saved>>,
    /// A download made from a Metalink: the one that fetched the Metalink (`following`), where
    /// one did (`--follow-metalink`).
    pub(crate) following: HashMap<u64, u64>,
    /// ... and the other way: the downloads a fetched Metalink became (`followedBy`).
    pub(crate) followed_by: HashMap<u64, Vec<u64>>,
    /// What a Metalink says of a file beyond its entry's options (its size, its pieces'
    /// digests), for the download made from it when it starts.
    pub(crate) described: HashMap<u64, Described>,
}

/// What a Metalink says of a file that no option carries.
#[derive(Debug, Clone)]
pub(crate) struct Described {
    pub total: Option<u64>,
    pub pieces: Option<std::sync::Arc<crate::engine::PieceHashes>>,
    /// Given only as a torrent: why it cannot start.
    pub refused: Option<String>,
}

impl Daemon {
    /// The daemon of `settings` (`None` without `--enable-rpc`), its queue filled with `pending`
    /// (the command line's downloads, `-i`'s, a session's).
    pub fn new(settings: &Config, pending: impl IntoIterator<Item = Pending>) -> Option<Daemon> {
        let rpc = settings.rpc.as_ref()?;
        let mut session_id = [0u8; 20];
        for (i, chunk) in session_id.chunks_mut(8).enumerate() {
            let r = crate::engine::random_gid()
                .wrapping_add(i as u64)
                .to_be_bytes();
            chunk.copy_from_slice(&r[..chunk.len()]);
        }
        let mut dm = Daemon {
            following: HashMap::new(),
            followed_by: HashMap::new(),
            described: HashMap::new(),
            // Unit tests (the simulation among them) cut the queue into small chunks, so that
            // their short queues split, merge and leave memory as long ones do.
            waiting: queue::Queue::with_limits(
                Records::in_dir(&settings.download.dir),
                GidMap::in_dir(&settings.download.dir),
                if cfg!(test) {
                    queue::Limits::SMALL
                } else {
                    queue::Limits::DEFAULT
                },
            ),
            running: HashMap::new(),
            stopped: results::Results::new(Records::in_dir(&settings.download.dir)),
            stopped_total: 0,
            evicted_error: None,
            keep_unfinished: rpc.keep_unfinished_download_result,
            in_progress: 0,
            max_results: rpc.max_download_result,
            max_concurrent: settings.max_concurrent,
            base: settings.download.clone(),
            options: settings.option_values.clone(),
            env: crate::cli::Env::from_process(),
            pause_new: rpc.pause,
            session_id,
            session: rpc.save_session.clone().map(|path| SessionRules {
                path,
                interval: rpc.save_session_interval,
                force_save: rpc.force_save,
                save_not_found: rpc.save_not_found,
                command_line: rpc.command_line.clone(),
            }),
            session_rules: SessionRules {
                path: Default::default(),
                interval: rpc.save_session_interval,
                force_save: rpc.force_save,
                save_not_found: rpc.save_not_found,
                command_line: rpc.command_line.clone(),
            },
            saved: Default::default(),
        };
        // GID 0: one is made; a GID given twice is made anew the second time.
        for mut p in pending {
            if p.gid == 0 || dm.known_gid(p.gid) {
                p.gid = dm.new_gid(|_| false);
            }
            dm.waiting.push_back(p);
        }
        Some(dm)
    }

    /// Takes the first waiting download that is not paused.
    pub(crate) fn take_next(&mut self) -> Option<(u64, Job)> {
        let p = self.waiting.take_runnable()?;
        let mut opts = self.base.with_entry(&p.options, &self.env);
        opts.gid = Some(p.gid);
        if let Some(d) = self.described.get(&p.gid) {
            // Made from a Metalink: its mirrors are the Metalink's, its size and pieces too.
            opts.from_metalink = true;
            opts.follow_metalink = crate::engine::Follow::No;
            opts.expected_total = d.total;
            opts.pieces = d.pieces.clone();
            opts.refused = d.refused.clone();
        }
        // Started before (paused, restarted or stopped at shutdown): it goes on in its own file,
        // from its control file or, without one, from the gap-free start it left (as `-c`).
        let mut restarted = false;
        if let Some(path) = p.known.as_ref().map(|k| std::path::PathBuf::from(&k.path)) {
            let within = path
                .strip_prefix(&opts.dir)
                .ok()
                .or_else(|| path.file_name().map(std::path::Path::new));
            if let Some(name) = within.filter(|n| !n.as_os_str().is_empty()) {
                opts.out = Some(name.to_string_lossy().into_owned());
                opts.continue_partial = true;
                restarted = true;
            }
        }
        self.running.insert(
            p.gid,
            Running {
                uris: p.uris.clone(),
                options: p.options,
                stop: None,
                forget: false,
            },
        );
        Some((
            p.gid,
            Job {
                uris: p.uris,
                opts,
                own: Vec::new(),
                restarted,
            },
        ))
    }

    /// A GID leaves the daemon (its result removed or dropped): with what is kept beside it.
    pub(crate) fn forget(&mut self, gid: u64) {
        self.waiting.forget(gid);
        self.described.remove(&gid);
        self.following.remove(&gid);
        self.followed_by.remove(&gid);
    }

    /// Keeps a result, dropping the oldest past `--max-download-result`.
    pub(crate) fn keep(&mut self, s: Stopped) {
        self.stopped_total += 1;
        self.stopped.push(s);
        self.trim_results();
    }

    /// Drops the oldest results past `--max-download-result`; a failure among them still counts
    /// for the exit code, and one the session would save is kept for it.
    pub(crate) fn trim_results(&mut self) {
        while self.stopped.len() > self.max_results {
            let session = self.session.as_ref();
            let keep_unfinished = self.keep_unfinished;
            let dropped = self.stopped.drop_oldest(|h| {
                keep_unfinished
                    && h.status != Status::Complete
                    && session.is_some_and(|r| r.saves(h.status, h.code))
            });
            let Some((gid, status, code, kept)) = dropped else {
                break;
            };
            if status == Status::Error {
                self.evicted_error = Some(code);
            }
            // One kept for the session still holds its GID there (a download given it now
            // would be a second entry with it), as in aria2.
            if !kept {
                self.forget(gid);
            }
        }
    }

    /// The exit code's error: the last failed download among the results still held, else the
    /// last one dropped past `--max-download-result`.
    pub(crate) fn last_error(&self) -> Option<ExitCode> {
        self.stopped
            .heads()
            .rev()
            .find(|s| s.status == Status::Error)
            .map(|s| s.code)
            .or(self.evicted_error)
    }

    /// Whether the running download `gid` has been told to stop already (a second pause or
    /// remove is refused, as aria2 does).
    pub(crate) fn stopping(&self, gid: u64) -> bool {
        self.running.get(&gid).is_some_and(|r| r.stop.is_some())
    }

    /// A GID not in use anywhere.
    pub(crate) fn new_gid(&self, in_engine: impl Fn(u64) -> bool) -> u64 {
        loop {
            let g = crate::engine::random_gid();
            if g != 0 && !in_engine(g) && !self.known_gid(g) {
                return g;
            }
        }
    }

    pub(crate) fn known_gid(&self, g: u64) -> bool {
        self.waiting.knows(g)
    }

    /// Every GID the daemon knows (running, waiting, stopped).
    pub(crate) fn each_gid(&self, f: impl FnMut(u64)) {
        self.waiting.each_known(f)
    }

    /// What the session file will hold, copied now so that another thread can write it while
    /// the loop goes on: stopped downloads that failed (and, with `--force-save`, the others),
    /// then the running ones, then the queue, as aria2 orders them. The running entries (at most
    /// as many as run at once) are text already; the others are GIDs and record places, the
    /// records read back as the text is written. `None` without `--save-session`.
    pub(crate) fn session_snapshot(
        &mut self,
        running_order: &[u64],
    ) -> std::io::Result<Option<SessionSnapshot>> {
        let Some(rules) = self.session.as_ref() else {
            return Ok(None);
        };
        let mut running = String::new();
        for g in running_order {
            if let Some(r) = self.running.get(g) {
                session_entry(
                    &mut running,
                    &r.uris,
                    *g,
                    false,
                    &rules.command_line,
                    &r.options,
                );
            }
        }
        Ok(Some(SessionSnapshot {
            command_line: rules.command_line.clone(),
            stopped: self.stopped.snapshot(|st, code| rules.saves(st, code))?,
            running,
            waiting: self.waiting.snapshot()?,
        }))
    }

    /// A waiting download's status.
    pub(crate) fn pending_view(&self, p: &Pending) -> StatusView {
        let opts_dir = p
            .options
            .iter()
            .rev()
            .find(|(d, _)| d.name == "dir")
            .map(|(_, v)| v.clone())
            .unwrap_or_else(|| self.base.dir.display().to_string());
        let mut known = p.known.clone().unwrap_or_default();
        if known.path.is_empty() {
            // Named by `out`: the path it will have, as aria2 shows it.
            if let Some((_, out)) = p.options.iter().rev().find(|(d, _)| d.name == "out") {
                known.path = std::path::Path::new(&opts_dir)
                    .join(out)
                    .display()
                    .to_string();
            }
        }
        StatusView {
            gid: p.gid,
            status: if p.paused {
                Status::Paused
            } else {
                Status::Waiting
            },
            total: known.total,
            completed: known.completed,
            speed: 0,
            connections: 0,
            dir: opts_dir,
            path: known.path,
            uris: p
                .uris
                .iter()
                .map(|u| (u.clone(), UriState::Waiting))
                .collect(),
            piece_length: u64::from(self.base.piece_length),
            bitfield: known.bitfield,
            error: None,
            following: None,
            followed_by: Vec::new(),
        }
    }
}

/// A stopped download's status.
pub(crate) fn stopped_view(s: &Stopped) -> StatusView {
    StatusView {
        gid: s.gid,
        status: s.status,
        total: s.total,
        completed: s.completed,
        speed: 0,
        connections: 0,
        dir: s.dir.clone(),
        path: s.path.clone(),
        uris: s.uris.iter().map(|u| (u.clone(), UriState::Used)).collect(),
        piece_length: u64::from(s.piece_length),
        bitfield: s.bitfield.clone(),
        error: Some((s.code.0, s.message.clone())),
        following: None,
        followed_by: Vec::new(),
    }
}

/// Where a GID is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Place {
    /// Running in the engine.
    Active,
    Waiting(usize),
    Stopped(usize),
}

fn gid_text(g: u64) -> String {
    format!("{g:016x}")
}

/// aria2's `GID#...` wording.
pub(crate) fn gid_err(fmt_: &str, g: u64) -> RpcError {
    RpcError::new(fmt_.replace("{}", &gid_text(g)))
}

impl Daemon {
    /// Finds a GID from its text: all 16 digits, or any unique prefix of them (aria2's rules and
    /// words).
    pub(crate) fn resolve_gid(&self, text: &str) -> Result<u64, RpcError> {
        let valid =
            !text.is_empty() && text.len() <= 16 && text.bytes().all(|b| b.is_ascii_hexdigit());
        if !valid {
            return Err(RpcError::new(format!("Invalid GID {text}")));
        }
        // A GID names a download the daemon still holds, whole or by a unique prefix.
        if text.len() == 16 {
            let g = u64::from_str_radix(text, 16)
                .map_err(|_| RpcError::new(format!("Invalid GID {text}")))?;
            return if self.known_gid(g) {
                Ok(g)
            } else {
                Err(RpcError::new(format!("GID {text} is not found")))
            };
        }
        let lower = text.to_ascii_lowercase();
        let (mut found, mut twice) = (None, false);
        self.each_gid(|g| {
            if gid_text(g).starts_with(&lower) {
                twice |= found.is_some_and(|f| f != g);
                found = Some(g);
            }
        });
        if twice {
            return Err(RpcError::new(format!("GID {text} is not unique")));
        }
        found.ok_or_else(|| RpcError::new(format!("GID {text} is not found")))
    }

    /// Where `gid` is: running (as the engine says), waiting or a result.
    pub(crate) fn place(&self, engine: &dyn Control, gid: u64) -> Option<Place> {
        if self.running.contains_key(&gid) && engine.status(gid).is_some() {
            return Some(Place::Active);
        }
        if let Some(i) = self.waiting.position(gid) {
            return Some(Place::Waiting(i));
        }
        self.stopped.position(gid).map(Place::Stopped)
    }

    /// A running download's status as the engine gives it, removed as soon as a remove was asked
    /// for (as aria2c says at once: its loop ends a removed download before the next call is
    /// read); what it holds is then what is written.
    pub(crate) fn active_view(&self, engine: &dyn Control, gid: u64) -> Option<StatusView> {
        engine.status(gid)
    }

    /// Any download's status.
    pub(crate) fn view(&self, engine: &dyn Control, gid: u64) -> Option<StatusView> {
        let v = match self.place(engine, gid)? {
            Place::Active => self.active_view(engine, gid),
            Place::Waiting(i) => self.waiting.get(i).map(|p| self.pending_view(&p)),
            Place::Stopped(i) => self.stopped.get(i).map(|s| stopped_view(&s)),
        };
        v.map(|v| self.linked(v))
    }

    /// A status with the downloads it is linked to by a Metalink it fetched (`followedBy`,
    /// `following`).
    pub(crate) fn linked(&self, mut v: StatusView) -> StatusView {
        v.following = self.following.get(&v.gid).copied();
        v.followed_by = self.followed_by.get(&v.gid).cloned().unwrap_or_default();
        v
    }

    /// Queues the downloads of a Metalink (`aria2.addMetalink`'s, or one a download fetched)
    /// from place `first`, each with `own` (the call's or the fetching download's options) and
    /// its name and digest as options, what no option carries kept beside; their GIDs.
    pub(crate) fn queue_metalink(
        &mut self,
        jobs: impl Iterator<Item = Job>,
        own: &[(&'static OptDef, String)],
        paused: bool,
        first: usize,
        in_engine: &dyn Fn(u64) -> bool,
    ) -> Vec<u64> {
        let (Some(out_def), Some(sum_def)) = (
            crate::cli::defs::by_name("out"),
            crate::cli::defs::by_name("checksum"),
        ) else {
            return Vec::new();
        };
        let mut gids = Vec::new();
        for (at, job) in (first..).zip(jobs) {
            let mut options: Vec<(&'static OptDef, String)> = own
                .iter()
                .filter(|(d, _)| {
                    !matches!(
                        d.name,
                        "checksum" | "out" | "gid" | "pause" | "select-file" | "index-out"
                    )
                })
                .cloned()
                .collect();
            if let Some(name) = job.opts.out.clone() {
                options.push((out_def, name));
            }
            if let Some(sum) = job.opts.checksum.clone() {
                options.push((sum_def, sum));
            }
            let gid = self.new_gid(in_engine);
            // (Kept for each: it also marks the download as a Metalink's, whose mirrors are
            // the Metalink's and which is not followed again.)
            self.described.insert(
                gid,
                Described {
                    total: job.opts.expected_total,
                    pieces: job.opts.pieces.clone(),
                    refused: job.opts.refused.clone(),
                },
            );
            let pending = Pending {
                gid,
                uris: job.uris,
                options,
                paused,
                known: None,
                settling: false,
            };
            self.waiting.insert(at.min(self.waiting.len()), pending);
            gids.push(gid);
        }
        gids
    }

    /// A download fetched a Metalink to follow: its downloads go to the front of the queue
    /// (paused with `--pause-metadata`), linked to it; `Err`: the line that says why none.
    fn follow_metalink(
        &mut self,
        doc: crate::engine::Followed,
        own: &[(&'static OptDef, String)],
    ) -> Result<(), String> {
        let name = doc.path.display().to_string();
        let m = crate::metalink::source::open(&doc.file, &name, &doc.opts, Some(&doc.uri))
            .map_err(|e| e.0)?;
        let paused = self
            .options
            .iter()
            .any(|(n, v)| *n == "pause-metadata" && v == "true");
        let running: Vec<u64> = self.running.keys().copied().collect();
        let in_engine = move |g: u64| running.contains(&g);
        let gids = self.queue_metalink(m, own, paused, 0, &in_engine);
        for g in &gids {
            self.following.insert(*g, doc.gid);
        }
        if !gids.is_empty() {
            self.followed_by.insert(doc.gid, gids);
        }
        Ok(())
    }

    /// Stops a running download for a call; a stop already under way (a remove, a pause) is what
    /// the download ends as.
    pub(crate) fn stop_running(&mut self, engine: &mut dyn Control, gid: u64, why: Stop) {
        if let Some(r) = self.running.get_mut(&gid) {
            // Recorded first: the download may end within the engine's stop.
            let before = r.stop;
            r.stop = r.stop.or(Some(why));
            if !engine.stop(gid, why == Stop::Remove) {
                // Every byte is in: it finishes, and no stop is what it ends as.
                if let Some(r) = self.running.get_mut(&gid) {
                    r.stop = before;
                }
            }
        }
        // Ended at once (nothing in flight): a result or back in the queue before the next call.
        for mut e in engine.take_ended() {
            if let Some(doc) = e.followed.take() {
                // (Within a call nothing is said of a Metalink that cannot be read.)
                let _ = self.followed(doc);
            }
            let (gid, path) = (e.gid, e.path.clone());
            let what = self.ended(e);
            engine.dispose(gid, &path, what);
        }
    }
}

impl Supervisor for Daemon {
    fn next_job(&mut self) -> Option<Job> {
        self.take_next().map(|(_, job)| job)
    }

    fn max_concurrent(&self) -> usize {
        self.max_concurrent
    }

    /// A paused, restarted or shut-down download goes back to the front of the queue; others
    /// become results, with a notification.
    fn ended(&mut self, e: Ended) -> Disposition {
        let gid = e.gid;
        let Some(run) = self.running.remove(&gid) else {
            return Disposition {
                notify: None,
                hook: None,
                requeued: false,
            };
        };
        let ok = e.code == ExitCode::OK;
        let known = Known {
            total: e.total,
            completed: e.completed,
            path: e.path.clone(),
            bitfield: e.bitfield.clone(),
        };
        let back = |paused| Pending {
            gid,
            uris: run.uris.clone(),
            options: run.options.clone(),
            paused,
            known: Some(known.clone()),
            settling: e.settling,
        };
        // Stopped by Ctrl-C or SIGTERM: kept as waiting, like a shutdown.
        let stop = run.stop.or((!e.finished).then_some(Stop::Shutdown));
        let (status, code, note) = match stop {
            Some(Stop::Pause) if ok => {
                self.waiting.push_front(back(true));
                return Disposition {
                    notify: Some("aria2.onDownloadPause"),
                    hook: Some(HookEvent::Pause),
                    requeued: true,
                };
            }
            Some(Stop::Restart) if ok => {
                self.waiting.push_front(back(false));
                return Disposition {
                    notify: None,
                    hook: None,
                    requeued: true,
                };
            }
            Some(Stop::Shutdown) if ok => {
                // In progress when the daemon stopped: exit code 7 unless a failure wins.
                self.in_progress += 1;
                self.waiting.push_front(back(false));
                return Disposition {
                    notify: None,
                    hook: Some(HookEvent::Stop),
                    requeued: false,
                };
            }
            Some(Stop::Remove) => (Status::Removed, ExitCode::REMOVED, "aria2.onDownloadStop"),
            _ if ok && e.finished => (Status::Complete, ExitCode::OK, "aria2.onDownloadComplete"),
            _ => (Status::Error, e.code, "aria2.onDownloadError"),
        };
        // (What a Metalink said of it is of no use once it is a result.)
        self.described.remove(&gid);
        if run.forget {
            // Its result was removed in advance: its GID goes from the index as a removed
            // result's does.
            self.forget(gid);
        } else {
            self.keep(Stopped {
                gid,
                status,
                code,
                message: if status == Status::Removed {
                    String::new()
                } else {
                    e.message
                },
                total: e.total,
                completed: e.completed,
                dir: e.dir,
                path: e.path,
                uris: run.uris,
                options: run.options,
                piece_length: e.piece_length,
                bitfield: e.bitfield,
            });
        }
        let hook = match status {
            Status::Complete => HookEvent::Complete,
            Status::Error => HookEvent::Error,
            _ => HookEvent::Stop,
        };
        Disposition {
            notify: Some(note),
            hook: Some(hook),
            requeued: false,
        }
    }

    fn settled(&mut self, gid: u64) {
        self.waiting.settle(gid);
    }

    fn followed(&mut self, doc: crate::engine::Followed) -> Result<(), String> {
        let own = self
            .running
            .get(&doc.gid)
            .map(|r| r.options.clone())
            .unwrap_or_default();
        self.follow_metalink(doc, &own)
    }

    fn call(
        &mut self,
        engine: &mut dyn Control,
        method: &str,
        params: Params,
    ) -> Result<serde_json::Value, RpcError> {
        methods::Calls { dm: self, engine }.call(method, params)
    }

    fn has_session(&self) -> bool {
        self.session.is_some()
    }

    fn session_interval(&self) -> u64 {
        self.session.as_ref().map_or(0, |r| r.interval)
    }

    fn session_job(
        &mut self,
        running: &[u64],
        only_if_changed: bool,
    ) -> Option<crate::engine::BlockingJob> {
        let path = self.session.as_ref()?.path.clone();
        // The text is written (and, for the interval, first hashed to see whether it changed) on
        // the file-job thread from a snapshot: a million queued downloads neither hold their
        // text in memory nor stop the loop while it is made.
        Some(match self.session_snapshot(running) {
            Ok(Some(snapshot)) => {
                let saved = std::sync::Arc::clone(&self.saved);
                Box::new(move || snapshot.save(&path, only_if_changed, &saved))
            }
            Ok(None) => return None,
            // Said as a failed save (`session_saved`); the file on disk is left as it was.
            Err(e) => Box::new(move || Err(e)),
        })
    }

    fn session_saved(&mut self, result: Result<(), String>) -> Option<(LogLevel, String)> {
        let path = self
            .session
            .as_ref()
            .map(|r| r.path.display().to_string())
            .unwrap_or_default();
        let skipped = std::mem::take(&mut Saved::of(&self.saved).skipped);
        match result {
            Err(cause) => {
                Saved::of(&self.saved).hash = None;
                Some((
                    LogLevel::Error,
                    format!("Failed to save the session to {path}, cause: {cause}"),
                ))
            }
            Ok(()) if !skipped => Some((
                LogLevel::Info,
                format!("Serialized session to '{path}' successfully."),
            )),
            Ok(()) => None,
        }
    }

    fn exit_state(&self) -> (Option<ExitCode>, usize) {
        // A daemon's exit code follows the results it still holds: a failure whose result was
        // removed over RPC no longer counts (aria2).
        (self.last_error(), self.in_progress)
    }

    fn check(&self) {
        if self.waiting.known_count() > 10_000 {
            return;
        }
        // The GID index holds exactly the downloads the daemon holds.
        let held: std::collections::HashSet<u64> = self
            .waiting
            .gids()
            .into_iter()
            .chain(self.running.keys().copied())
            .chain(self.stopped.heads().map(|s| s.gid))
            .chain(self.stopped.unfinished_gids())
            .collect();
        let mut indexed = std::collections::HashSet::new();
        self.each_gid(|g| {
            indexed.insert(g);
        });
        assert!(held == indexed, "the daemon's GID index is out of step");
        self.waiting.check();
        self.stopped.check();
    }
}
