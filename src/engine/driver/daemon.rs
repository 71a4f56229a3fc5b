//! Daemon mode (`--enable-rpc`): the queue aria2's RPC methods act on. Downloads wait in order
//! (paused ones among them), become the engine's downloads as `-j` allows, and end as results kept
//! for `tellStopped` (at most `--max-download-result`). Waiting entries keep only their URIs and
//! their own option lines, so a long queue stays small; the options are resolved when one starts.
use super::session::{session_entry, Saved, SessionRules, SessionSnapshot};
use super::*;
use crate::cli::defs::OptDef;
use crate::engine::DownloadOptions;
use crate::rpc::status::{Status, StatusView, UriState};
use crate::rpc::RpcError;
use crate::store::gidmap::GidMap;
use crate::store::records::Records;

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
pub(crate) struct Daemon {
    /// The waiting downloads, and the index of every GID held (waiting, running, stopped): a
    /// new or given GID is checked against it, and a whole GID found, without a walk.
    pub waiting: super::queue::Queue,
    pub running: HashMap<u64, Running>,
    /// Results, and (`--keep-unfinished-download-result` with `--save-session`) the failed and,
    /// with `--force-save`, removed ones dropped past `--max-download-result`, kept only for the
    /// session file, as aria2 does. Without a session nothing would read those, so none are kept.
    pub stopped: super::results::Results,
    pub stopped_total: u64,
    /// The last error among results dropped past `--max-download-result` (it still counts for
    /// the exit code, as in aria2; results removed by a call do not).
    pub evicted_error: Option<ExitCode>,
    pub keep_unfinished: bool,
    /// Downloads still running when the daemon stopped.
    pub in_progress: usize,
    pub max_results: usize,
    pub max_concurrent: usize,
    /// The options new downloads start from (changed by `changeGlobalOption`).
    pub base: DownloadOptions,
    /// The global option values `getGlobalOption` reports.
    pub options: Vec<(&'static str, String)>,
    pub env: crate::cli::Env,
    pub session_id: [u8; 20],
    /// `shutdown` was called: when, and whether forced.
    pub shutdown: Option<Instant>,
    /// The RPC server (listeners and client connections).
    pub server: super::rpc::Server,
    /// `--save-session` and its rules.
    pub session: Option<SessionRules>,
    /// The rules a session named later (`changeGlobalOption` with `save-session`) is saved by.
    pub session_rules: SessionRules,
    /// The session save in flight, and the SHA-256 of the last text saved (an unchanged session
    /// is not written again by the interval).
    pub save_op: Option<OpId>,
    /// The save in flight writes the file whatever it holds (`saveSession`, shutdown); an
    /// interval save may find the text unchanged and write nothing.
    pub save_forced: bool,
    /// A save that must write was asked for while an interval save was in flight: it starts
    /// when that one ends, and the answers waiting on that one wait on it instead.
    pub save_again: bool,
    pub saved: std::sync::Arc<std::sync::Mutex<Saved>>,
    pub last_interval_save: Option<Instant>,
    /// The final save (at shutdown): its op, and whether it is done.
    pub final_op: Option<OpId>,
    pub final_saved: bool,
    /// A `saveSession` call was answered: its answer waits for the save.
    pub call_waits_for_save: bool,
}

impl Daemon {
    pub(crate) fn new(
        settings: &Config,
        pending: impl IntoIterator<Item = Pending>,
        tls: Option<crate::tls::server::ServerTlsConfig>,
    ) -> Option<Daemon> {
        let rpc = settings.rpc.as_ref()?;
        let mut session_id = [0u8; 20];
        for (i, chunk) in session_id.chunks_mut(8).enumerate() {
            let r = random_gid().wrapping_add(i as u64).to_be_bytes();
            chunk.copy_from_slice(&r[..chunk.len()]);
        }
        let mut dm = Daemon {
            // Unit tests (the simulation among them) cut the queue into small chunks, so that
            // their short queues split, merge and leave memory as long ones do.
            waiting: super::queue::Queue::with_limits(
                Records::in_dir(&settings.download.dir),
                GidMap::in_dir(&settings.download.dir),
                if cfg!(test) {
                    super::queue::Limits::SMALL
                } else {
                    super::queue::Limits::DEFAULT
                },
            ),
            running: HashMap::new(),
            stopped: super::results::Results::new(Records::in_dir(&settings.download.dir)),
            stopped_total: 0,
            evicted_error: None,
            keep_unfinished: rpc.keep_unfinished_download_result,
            in_progress: 0,
            max_results: rpc.max_download_result,
            max_concurrent: settings.max_concurrent,
            base: settings.download.clone(),
            options: settings.option_values.clone(),
            env: crate::cli::Env::from_process(),
            session_id,
            shutdown: None,
            server: super::rpc::Server::new(rpc, tls),
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
            save_op: None,
            save_forced: false,
            save_again: false,
            saved: Default::default(),
            last_interval_save: None,
            final_op: None,
            final_saved: false,
            call_waits_for_save: false,
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
                self.waiting.forget(gid);
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

    /// The download `gid` ran before and its control-file saves are done: it may start again.
    pub(crate) fn settled(&mut self, gid: u64) {
        self.waiting.settle(gid);
    }

    /// A GID not in use anywhere.
    pub(crate) fn new_gid(&self, in_engine: impl Fn(u64) -> bool) -> u64 {
        loop {
            let g = random_gid();
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
    }
}

/// Where a GID is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Place {
    /// Running: its place in the engine's downloads.
    Active(usize),
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

impl<R: Reactor<Tag>> Engine<'_, R> {
    /// The daemon, when the engine runs as one.
    pub(super) fn daemon(&mut self) -> Option<&mut Daemon> {
        self.daemon.as_deref_mut()
    }

    /// `-j`: from the command line, or as `changeGlobalOption` set it.
    pub(super) fn max_concurrent(&self) -> usize {
        self.daemon
            .as_ref()
            .map_or(self.s.max_concurrent, |d| d.max_concurrent)
    }

    /// The place of the running download with `gid`.
    pub(super) fn active_place(&self, gid: u64) -> Option<usize> {
        self.dls
            .iter()
            .position(|d| d.gid == gid && d.state != DlState::Finished)
    }

    /// Finds a GID from its text: all 16 digits, or any unique prefix of them (aria2's rules and
    /// words).
    pub(super) fn resolve_gid(&self, text: &str) -> Result<u64, RpcError> {
        let Some(dm) = self.daemon.as_ref() else {
            return Err(RpcError::new("No daemon"));
        };
        let valid =
            !text.is_empty() && text.len() <= 16 && text.bytes().all(|b| b.is_ascii_hexdigit());
        if !valid {
            return Err(RpcError::new(format!("Invalid GID {text}")));
        }
        // A GID names a download the daemon still holds, whole or by a unique prefix.
        if text.len() == 16 {
            let g = u64::from_str_radix(text, 16)
                .map_err(|_| RpcError::new(format!("Invalid GID {text}")))?;
            return if dm.known_gid(g) {
                Ok(g)
            } else {
                Err(RpcError::new(format!("GID {text} is not found")))
            };
        }
        let lower = text.to_ascii_lowercase();
        let (mut found, mut twice) = (None, false);
        dm.each_gid(|g| {
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

    pub(super) fn place(&self, gid: u64) -> Option<Place> {
        if let Some(i) = self.active_place(gid) {
            return Some(Place::Active(i));
        }
        let dm = self.daemon.as_ref()?;
        if let Some(i) = dm.waiting.position(gid) {
            return Some(Place::Waiting(i));
        }
        dm.stopped.position(gid).map(Place::Stopped)
    }

    /// A running download's status.
    pub(super) fn active_view(&self, dl: usize) -> StatusView {
        let d = &self.dls[dl];
        let now = self.reactor.now();
        let total = d.total().unwrap_or(0);
        let piece = u64::from(d.piece_length.max(1));
        let claims = d.claims();
        let bitfield = crate::rpc::status::bitfield(total, piece, |a, b| claims.covers(a..b));
        let uris = d
            .uris
            .iter()
            .enumerate()
            .filter(|(i, _)| !d.dropped_uris[*i])
            .map(|(i, u)| {
                let state = if i == 0 || d.bad_uris[i] {
                    UriState::Used
                } else {
                    UriState::Waiting
                };
                (u.to_string(), state)
            })
            .collect();
        // Removed, it is a removed download already while its last writes end, as aria2c says
        // at once (its loop ends a removed download before the next call is read); what it
        // holds is then what is written.
        let removing = self
            .daemon
            .as_ref()
            .and_then(|dm| dm.running.get(&d.gid))
            .is_some_and(|r| r.stop == Some(Stop::Remove));
        let status = match removing {
            true => Status::Removed,
            false => Status::Active,
        };
        StatusView {
            gid: d.gid,
            status,
            total,
            completed: match removing {
                true => d.written.len(),
                false => d.received(),
            },
            speed: d.speed(now),
            connections: self.conn_count(dl) as u64,
            dir: d.opts.dir.display().to_string(),
            path: d.path_text(),
            uris,
            piece_length: piece,
            bitfield,
            error: removing.then(|| (ExitCode::REMOVED.0, String::new())),
        }
    }

    /// Any download's status.
    pub(super) fn view(&self, gid: u64) -> Option<StatusView> {
        let dm = self.daemon.as_ref()?;
        match self.place(gid)? {
            Place::Active(i) => Some(self.active_view(i)),
            Place::Waiting(i) => dm.waiting.get(i).map(|p| dm.pending_view(&p)),
            Place::Stopped(i) => dm.stopped.get(i).map(|s| stopped_view(&s)),
        }
    }

    /// Stops a running download for a call: its connections close, its writes complete, its
    /// control file is saved, then `ended` decides where it goes.
    pub(super) fn stop_download(&mut self, dl: usize, why: Stop) {
        let gid = self.dls[dl].gid;
        let all_in = self.dls[dl].plan.as_ref().is_some_and(Plan::is_complete);
        if all_in && why != Stop::Remove {
            // Every byte is in: it is finishing, and finishes (a pause would only keep it from
            // being complete).
            return;
        }
        if let Some(r) = self.daemon().and_then(|d| d.running.get_mut(&gid)) {
            // A stop already under way (a remove, a pause) is what the download ends as: a
            // shutdown arriving meanwhile does not turn a removed download into one in progress.
            r.stop = r.stop.or(Some(why));
        }
        let d = &mut self.dls[dl];
        d.halted = true;
        d.wanted = 0;
        self.stop_conns(dl);
        self.maybe_finish(dl);
    }

    /// A download ended (`record` calls this in daemon mode): a paused, restarted or shut-down one
    /// goes back to the front of the queue; others become results, with a notification.
    /// True when the download went back to the queue (it is not a result).
    pub(super) fn ended(&mut self, dl: usize, outcome: &Outcome) -> bool {
        let d = &self.dls[dl];
        let gid = d.gid;
        // What is on disk, as its control file says (not what was in flight when it stopped).
        let claims = d.claims();
        let completed = if outcome.finished && outcome.code == ExitCode::OK {
            d.received()
        } else {
            claims.len()
        };
        let total = d.total().unwrap_or(0);
        let whole = outcome.finished && outcome.code == ExitCode::OK;
        let known = Known {
            total,
            completed,
            path: d.path_text(),
            bitfield: crate::rpc::status::bitfield(total, u64::from(d.piece_length), |a, b| {
                whole || claims.covers(a..b)
            }),
        };
        let dir = d.opts.dir.display().to_string();
        let piece_length = d.piece_length;
        let settling = d.saves > 0;
        let message = d
            .error
            .as_ref()
            .map(|f| f.message.clone())
            .unwrap_or_default();
        let Some(dm) = self.daemon() else {
            return false;
        };
        let Some(run) = dm.running.remove(&gid) else {
            return false;
        };
        let back = |paused| Pending {
            gid,
            uris: run.uris.clone(),
            options: run.options.clone(),
            paused,
            known: Some(known.clone()),
            settling,
        };
        // Stopped by Ctrl-C or SIGTERM: kept as waiting, like a shutdown.
        let stop = run.stop.or((!outcome.finished).then_some(Stop::Shutdown));
        let (status, code, note) = match stop {
            Some(Stop::Pause) if outcome.code == ExitCode::OK => {
                dm.waiting.push_front(back(true));
                self.notify("aria2.onDownloadPause", gid);
                self.hook(dl, super::hooks::Event::Pause);
                return true;
            }
            Some(Stop::Restart) if outcome.code == ExitCode::OK => {
                dm.waiting.push_front(back(false));
                return true;
            }
            Some(Stop::Shutdown) if outcome.code == ExitCode::OK => {
                // In progress when the daemon stopped: exit code 7 unless a failure wins.
                dm.in_progress += 1;
                dm.waiting.push_front(back(false));
                self.hook(dl, super::hooks::Event::Stop);
                return false;
            }
            Some(Stop::Remove) => (Status::Removed, ExitCode::REMOVED, "aria2.onDownloadStop"),
            _ if outcome.code == ExitCode::OK && outcome.finished => {
                (Status::Complete, ExitCode::OK, "aria2.onDownloadComplete")
            }
            _ => (Status::Error, outcome.code, "aria2.onDownloadError"),
        };
        if run.forget {
            // Its result was removed in advance: its GID goes from the index as a removed
            // result's does.
            dm.waiting.forget(gid);
        } else {
            dm.keep(Stopped {
                gid,
                status,
                code,
                message: if status == Status::Removed {
                    String::new()
                } else {
                    message
                },
                total: known.total,
                completed: known.completed,
                dir,
                path: known.path,
                uris: run.uris,
                options: run.options,
                piece_length,
                bitfield: known.bitfield,
            });
        }
        self.notify(note, gid);
        let event = match status {
            Status::Complete => super::hooks::Event::Complete,
            Status::Error => super::hooks::Event::Error,
            _ => super::hooks::Event::Stop,
        };
        self.hook(dl, event);
        false
    }

    /// Starts saving the session (`--save-session`) through the file-job thread, unless one save is
    /// in flight already or, for the interval, nothing changed. The op of the save in flight.
    pub(super) fn save_session(&mut self, only_if_changed: bool) -> Option<OpId> {
        let order: Vec<u64> = self
            .dls
            .iter()
            .filter(|d| d.state == DlState::Active)
            .map(|d| d.gid)
            .collect();
        let dm = self.daemon.as_deref_mut()?;
        let path = dm.session.as_ref()?.path.clone();
        if let Some(op) = dm.save_op {
            if !only_if_changed && !dm.save_forced {
                dm.save_again = true;
            }
            return Some(op);
        }
        // The text is written (and, for the interval, first hashed to see whether it changed) on
        // the file-job thread from a snapshot: a million queued downloads neither hold their
        // text in memory nor stop the loop while it is made.
        let job: crate::engine::reactor::Job = match dm.session_snapshot(&order) {
            Ok(Some(snapshot)) => {
                let saved = std::sync::Arc::clone(&dm.saved);
                Box::new(move || snapshot.save(&path, only_if_changed, &saved))
            }
            Ok(None) => return None,
            // Said as a failed save (`on_session_saved`); the file on disk is left as it was.
            Err(e) => Box::new(move || Err(e)),
        };
        let op = self.reactor.blocking(Tag::SessionSaved, job);
        if let Some(dm) = self.daemon() {
            dm.save_op = Some(op);
            dm.save_forced = !only_if_changed;
        }
        Some(op)
    }

    /// A session save ended: failures are said; answers to `saveSession` waiting on it go out.
    pub(super) fn on_session_saved(&mut self, op: OpId, res: i32) {
        let Some(dm) = self.daemon() else { return };
        dm.save_op = None;
        if dm.final_op == Some(op) {
            dm.final_saved = true;
        }
        let path = dm
            .session
            .as_ref()
            .map(|r| r.path.display().to_string())
            .unwrap_or_default();
        let skipped = std::mem::take(&mut Saved::of(&dm.saved).skipped);
        if res < 0 {
            Saved::of(&dm.saved).hash = None;
            self.console.error(&format!(
                "Failed to save the session to {path}, cause: {}",
                errno_text(res)
            ));
        } else if !skipped {
            self.console.log(
                LogLevel::Info,
                &format!("Serialized session to '{path}' successfully."),
            );
        }
        let again = self
            .daemon()
            .is_some_and(|d| std::mem::take(&mut d.save_again));
        if again {
            if let Some(next) = self.save_session(false) {
                self.rpc_retarget(op, next);
            }
        }
        self.rpc_release(op);
    }

    /// Sends a notification to every WebSocket client.
    pub(super) fn notify(&mut self, method: &str, gid: u64) {
        let msg = serde_json::json!({
            "jsonrpc": "2.0",
            "method": method,
            "params": [{"gid": gid_text(gid)}],
        });
        let bytes = crate::rpc::ws::encode(crate::rpc::ws::OP_TEXT, msg.to_string().as_bytes());
        self.rpc_broadcast(bytes);
    }
}
