//! aria2's event hooks (`--on-download-start`, `-pause`, `-complete`, `-error`, `-stop`): a command
//! run with three arguments, the download's GID (16 hex digits), its number of files and the path
//! of its first file, when the download starts, is paused, completes, fails or stops otherwise.
//! `--on-download-stop` stands in for `-complete` and `-error` where those are not given, as in
//! aria2c.
//!
//! A hook runs beside the loop, never in it: it is spawned (its output goes where ringdl's goes)
//! and never waited for; the tick reaps the ones that ended. A hook that does not exist, cannot be
//! run or never ends costs one line, or nothing: the downloads go on.
use super::*;

pub(super) use crate::engine::supervisor::HookEvent as Event;

impl<R: Reactor<Tag>> Engine<'_, R> {
    /// Runs the hook of `event` for download `dl`, if one is set.
    pub(super) fn hook(&mut self, dl: usize, event: Event) {
        let d = &self.dls[dl];
        // The file's path once known (from `-o` at once, else from the first response); empty
        // before, as aria2c gives it.
        let path = d.path_text();
        self.hook_for(d.gid, &path, event);
    }

    /// Runs the hook of `event` for the download `gid`, whose file is `path`, if one is set.
    pub(super) fn hook_for(&mut self, gid: u64, path: &str, event: Event) {
        let h = &self.s.hooks;
        let command = match event {
            Event::Start => h.start.as_ref(),
            Event::Pause => h.pause.as_ref(),
            Event::Complete => h.complete.as_ref().or(h.stop.as_ref()),
            Event::Error => h.error.as_ref().or(h.stop.as_ref()),
            Event::Stop => h.stop.as_ref(),
        };
        let Some(command) = command.cloned() else {
            return;
        };
        let gid = format!("{gid:016x}");
        self.console.log(
            LogLevel::Info,
            &format!("Executing user command: {command} {gid} 1 {path}"),
        );
        match std::process::Command::new(&command)
            .arg(&gid)
            .arg("1")
            .arg(path)
            .spawn()
        {
            Ok(child) => self.hooks_running.push(child),
            Err(e) => self.console.error(&format!(
                "Could not execute user command: {command}: {}",
                sys::cause(&e)
            )),
        }
    }

    /// Reaps the hooks that ended (at each tick and at the end of the run); the others go on.
    pub(super) fn reap_hooks(&mut self) {
        self.hooks_running
            .retain_mut(|c| matches!(c.try_wait(), Ok(None)));
    }
}
