//! The engine's side of daemon mode: the daemon (`crate::daemon`) sits above, as a
//! [`Supervisor`]; here is what the engine does for it — the [`Control`] it is driven through, the
//! downloads that ended reported to it, its session saved on the file-job thread, its
//! notifications sent, and the RPC server's shutdown state. The RPC server itself (listeners,
//! clients, HTTP and WebSocket) is `rpc.rs`.
use super::*;
use crate::engine::supervisor::{Control, Disposition, Ended, HookEvent, ServerView};
use crate::rpc::status::{Status, StatusView, UriState};

/// What the engine keeps for a daemon besides the daemon itself.
pub(crate) struct DaemonIo {
    /// The RPC server (listeners and client connections).
    pub server: super::rpc::Server,
    /// `shutdown` was called or a signal came: when.
    pub shutdown: Option<Instant>,
    /// The session save in flight.
    pub save_op: Option<OpId>,
    /// The save in flight writes the file whatever it holds (`saveSession`, shutdown); an
    /// interval save may find the text unchanged and write nothing.
    pub save_forced: bool,
    /// A save that must write was asked for while an interval save was in flight: it starts
    /// when that one ends, and the answers waiting on that one wait on it instead.
    pub save_again: bool,
    pub last_interval_save: Option<Instant>,
    /// The final save (at shutdown): its op, and whether it is done.
    pub final_op: Option<OpId>,
    pub final_saved: bool,
    /// A `saveSession` call was answered: its answer waits for the save.
    pub call_waits_for_save: bool,
    /// A call asked for a save: it starts once the daemon is back from the call.
    pub save_asked: bool,
}

impl DaemonIo {
    pub(crate) fn new(server: super::rpc::Server) -> DaemonIo {
        DaemonIo {
            server,
            shutdown: None,
            save_op: None,
            save_forced: false,
            save_again: false,
            last_interval_save: None,
            final_op: None,
            final_saved: false,
            call_waits_for_save: false,
            save_asked: false,
        }
    }
}

/// An RPC request's calls, answered by the daemon with the engine it drives: the daemon is taken
/// out of the engine for the call and put back after it.
pub(super) struct Dispatch<'e, 'a, R: Reactor<Tag>> {
    pub engine: &'e mut Engine<'a, R>,
}

impl<R: Reactor<Tag>> crate::rpc::Service for Dispatch<'_, '_, R> {
    fn call(
        &mut self,
        method: &str,
        params: crate::rpc::Params,
    ) -> Result<serde_json::Value, crate::rpc::RpcError> {
        let Some(mut sup) = self.engine.sup.take() else {
            return Err(crate::rpc::RpcError::new("No daemon"));
        };
        let answer = sup.call(&mut *self.engine, method, params);
        self.engine.sup = Some(sup);
        let save = self
            .engine
            .daemon
            .as_deref_mut()
            .is_some_and(|d| std::mem::take(&mut d.save_asked));
        if save {
            // Asked for by the call: the daemon gives the text now that it is back.
            self.engine.save_session(false);
        }
        // (A stop that ended a download has the daemon take it through `take_ended`: this is
        // only in case a call did not.)
        let left = std::mem::take(&mut self.engine.ends);
        for (e, outcome) in left {
            self.engine.report_end(e, outcome);
        }
        answer
    }
}

impl<R: Reactor<Tag>> Engine<'_, R> {
    /// `-j`: from the command line, or as the daemon has it now.
    pub(super) fn max_concurrent(&self) -> usize {
        self.sup
            .as_ref()
            .map_or(self.s.max_concurrent, |d| d.max_concurrent())
    }

    /// The place of the running download with `gid`.
    pub(super) fn active_place(&self, gid: u64) -> Option<usize> {
        self.dls.iter().position(|d| {
            d.gid == gid && d.state != DlState::Finished && d.opts.describes.is_none()
        })
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
        let removing = d.removing;
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
            following: None,
            followed_by: Vec::new(),
        }
    }

    /// Stops a running download: its connections close, its writes complete, its control file
    /// is saved, then it ends. One whose every byte is in finishes instead, unless it is being
    /// removed. Whether it stops.
    pub(super) fn stop_download(&mut self, dl: usize, removing: bool) -> bool {
        let all_in = self.dls[dl].plan.as_ref().is_some_and(Plan::is_complete);
        if all_in && !removing {
            // Every byte is in: it is finishing, and finishes (a pause would only keep it from
            // being complete).
            return false;
        }
        let d = &mut self.dls[dl];
        if !d.halted {
            // A stop already under way is what the download ends as.
            d.removing = removing;
        }
        d.halted = true;
        d.wanted = 0;
        self.stop_conns(dl);
        self.maybe_finish(dl);
        true
    }

    /// What the daemon is told of download `dl`, which ended with `outcome`.
    pub(super) fn ended_of(&self, dl: usize, outcome: &Outcome) -> Ended {
        let d = &self.dls[dl];
        // What is on disk, as its control file says (not what was in flight when it stopped).
        let claims = d.claims();
        let whole = outcome.finished && outcome.code == ExitCode::OK;
        let completed = if whole { d.received() } else { claims.len() };
        let total = d.total().unwrap_or(0);
        Ended {
            gid: d.gid,
            code: outcome.code,
            finished: outcome.finished,
            message: d
                .error
                .as_ref()
                .map(|f| f.message.clone())
                .unwrap_or_default(),
            total,
            completed,
            dir: d.opts.dir.display().to_string(),
            path: d.path_text(),
            piece_length: d.piece_length,
            bitfield: crate::rpc::status::bitfield(total, u64::from(d.piece_length), |a, b| {
                whole || claims.covers(a..b)
            }),
            settling: d.saves > 0,
            followed: None,
        }
    }

    /// Tells the daemon a download ended, now, or (while the daemon answers a call, and the
    /// download ended within it) when the daemon takes it (`Control::take_ended`) or the call
    /// returns.
    pub(super) fn report_end(&mut self, mut e: Ended, outcome: Outcome) {
        let Some(sup) = self.sup.as_mut() else {
            self.ends.push((e, outcome));
            return;
        };
        if let Some(doc) = e.followed.take() {
            if let Err(msg) = sup.followed(doc) {
                self.console.log(LogLevel::Error, &msg);
            }
        }
        let Some(sup) = self.sup.as_mut() else {
            return;
        };
        let (gid, path) = (e.gid, e.path.clone());
        let what = sup.ended(e);
        self.dispose_outcome(gid, &path, what, outcome);
    }

    /// Sends the notification and runs the hook decided for an ended download; a download that
    /// did not go back to the queue is one of the run's results.
    fn dispose_outcome(&mut self, gid: u64, path: &str, what: Disposition, outcome: Outcome) {
        if let Some(note) = what.notify {
            self.notify(note, gid);
        }
        if let Some(event) = what.hook {
            self.hook_for(gid, path, event);
        }
        if !what.requeued {
            self.count_result(outcome);
        }
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
        if let Some(op) = dm.save_op {
            if !only_if_changed && !dm.save_forced {
                dm.save_again = true;
            }
            return Some(op);
        }
        let job = self.sup.as_mut()?.session_job(&order, only_if_changed)?;
        let op = self.reactor.blocking(Tag::SessionSaved, job);
        if let Some(dm) = self.daemon.as_deref_mut() {
            dm.save_op = Some(op);
            dm.save_forced = !only_if_changed;
        }
        Some(op)
    }

    /// A session save ended: failures are said; answers to `saveSession` waiting on it go out.
    pub(super) fn on_session_saved(&mut self, op: OpId, res: i32) {
        let Some(dm) = self.daemon.as_deref_mut() else {
            return;
        };
        dm.save_op = None;
        if dm.final_op == Some(op) {
            dm.final_saved = true;
        }
        let result = match res < 0 {
            true => Err(errno_text(res)),
            false => Ok(()),
        };
        if let Some((level, line)) = self.sup.as_mut().and_then(|s| s.session_saved(result)) {
            self.console.log(level, &line);
        }
        let again = self
            .daemon
            .as_deref_mut()
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
            "params": [{"gid": format!("{gid:016x}")}],
        });
        let bytes = crate::rpc::ws::encode(crate::rpc::ws::OP_TEXT, msg.to_string().as_bytes());
        self.rpc_broadcast(bytes);
    }
}

impl<R: Reactor<Tag>> Control for Engine<'_, R> {
    fn now(&self) -> Instant {
        self.reactor.now()
    }

    fn active(&self) -> Vec<u64> {
        self.dls
            .iter()
            .filter(|d| d.state == DlState::Active && d.opts.describes.is_none())
            .map(|d| d.gid)
            .collect()
    }

    fn status(&self, gid: u64) -> Option<StatusView> {
        self.active_place(gid).map(|dl| self.active_view(dl))
    }

    fn servers(&self, gid: u64) -> Option<Vec<ServerView>> {
        let dl = self.active_place(gid)?;
        let d = &self.dls[dl];
        let speed = d.speed(self.reactor.now());
        let n = self.conn_count(dl).max(1) as u64;
        let servers = self
            .conns
            .iter()
            .flatten()
            .filter(|c| c.works_for(dl))
            .map(|c| {
                // `uri` is the mirror as given, `current` where it led (after redirects).
                let (mirror, current) = match (&c.ex, &c.want) {
                    (Some(x), _) => (x.mirror, x.url.to_string()),
                    (None, Some(w)) => (w.mirror, w.url.to_string()),
                    (None, None) => (0, d.first_uri.clone()),
                };
                let uri = d
                    .uris
                    .get(mirror)
                    .map_or_else(|| current.clone(), |u| u.to_string());
                // The download's speed shared among its connections (none is metered alone).
                ServerView {
                    uri,
                    current,
                    speed: speed / n,
                }
            })
            .collect();
        Some(servers)
    }

    fn stop(&mut self, gid: u64, removing: bool) -> bool {
        match self.active_place(gid) {
            Some(dl) => self.stop_download(dl, removing),
            None => false,
        }
    }

    fn set_download_limit(&mut self, gid: u64, rate: u64) {
        let now = self.reactor.now();
        if let Some(dl) = self.active_place(gid) {
            let d = &mut self.dls[dl];
            d.opts.max_download_limit = rate;
            d.bucket = (rate > 0).then(|| crate::engine::download::Bucket::new(rate, now));
        }
    }

    fn change_mirrors(&mut self, gid: u64, del: &[String], add: &[Url]) {
        if let Some(dl) = self.active_place(gid) {
            self.dls[dl].change_mirrors(del, add);
        }
    }

    fn set_overall_limit(&mut self, rate: u64) {
        let now = self.reactor.now();
        self.pace.set_overall_limit(rate, now);
    }

    fn download_speed(&self) -> u64 {
        let now = self.reactor.now();
        self.dls
            .iter()
            .filter(|d| d.state == DlState::Active)
            .map(|d| d.speed(now))
            .sum()
    }

    fn save_session(&mut self) {
        if let Some(d) = self.daemon.as_deref_mut() {
            d.save_asked = true;
            d.call_waits_for_save = true;
        }
    }

    fn shutdown(&mut self) {
        let now = self.reactor.now();
        if let Some(d) = self.daemon.as_deref_mut() {
            d.shutdown.get_or_insert(now);
        }
    }

    fn take_ended(&mut self) -> Vec<Ended> {
        let ends = std::mem::take(&mut self.ends);
        ends.into_iter()
            .map(|(e, outcome)| {
                self.taken_ends.push(outcome);
                e
            })
            .collect()
    }

    fn dispose(&mut self, gid: u64, path: &str, what: Disposition) {
        let Some(i) = self.taken_ends.iter().position(|o| o.gid == gid) else {
            return;
        };
        let outcome = self.taken_ends.remove(i);
        self.dispose_outcome(gid, path, what, outcome);
    }
}

/// The hook event of an ended download outside daemon mode.
pub(super) fn hook_event(outcome: &Outcome) -> HookEvent {
    match (outcome.code, outcome.finished) {
        (ExitCode::OK, true) => HookEvent::Complete,
        // Stopped part-way (Ctrl-C, SIGTERM): in progress.
        (ExitCode::OK, false) => HookEvent::Stop,
        _ => HookEvent::Error,
    }
}
