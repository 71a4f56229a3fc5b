//! The daemon's session file (`--save-session`): the text of every download not finished, saved
//! on the file-job thread at the interval, on `aria2.saveSession` and at shutdown, only when it
//! changed (a digest of the last text saved tells), and each entry as aria2 writes it.
use crate::cli::defs::OptDef;
use crate::engine::ExitCode;
use crate::rpc::status::Status;
use crate::store::session::session_entry;
use sha2::Digest;

/// What a session file holds and where it goes.
#[derive(Debug, Clone)]
pub(crate) struct SessionRules {
    pub path: std::path::PathBuf,
    pub interval: u64,
    pub force_save: bool,
    pub save_not_found: bool,
    pub command_line: Vec<(&'static str, String)>,
}

impl SessionRules {
    /// Whether a stopped download goes into the session: a failure (not "not found" unless
    /// `--save-not-found`), or with `--force-save` any.
    pub(crate) fn saves(&self, status: Status, code: ExitCode) -> bool {
        match status {
            Status::Error => self.save_not_found || code != ExitCode::NOT_FOUND,
            _ => self.force_save,
        }
    }
}

/// A session file's contents at one moment (`Daemon::session_snapshot`).
#[derive(Debug)]
pub(crate) struct SessionSnapshot {
    pub(crate) command_line: Vec<(&'static str, String)>,
    pub(crate) stopped: super::results::ResultsSnapshot,
    pub(crate) running: String,
    pub(crate) waiting: super::queue::QueueSnapshot,
}

/// What the last session save left: the SHA-256 of the text it wrote, and whether an interval
/// save found the text unchanged and wrote nothing. Shared with the save's thread.
#[derive(Debug, Default)]
pub(crate) struct Saved {
    pub hash: Option<[u8; 32]>,
    pub skipped: bool,
}

impl Saved {
    /// The state behind `m` (a save's thread that panicked leaves it as it was).
    pub(crate) fn of(m: &std::sync::Mutex<Saved>) -> std::sync::MutexGuard<'_, Saved> {
        m.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Hands written bytes to a SHA-256 and, if given, to a file.
struct Tee<'a> {
    hash: sha2::Sha256,
    out: Option<&'a mut dyn std::io::Write>,
}

impl std::io::Write for Tee<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = match self.out.as_mut() {
            Some(out) => out.write(buf)?,
            None => buf.len(),
        };
        self.hash.update(&buf[..n]);
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.out.as_mut().map_or(Ok(()), |o| o.flush())
    }
}

impl SessionSnapshot {
    /// Writes the session's text to `out`, an entry at a time. A record that cannot be read back
    /// fails it: the last session saved stays as it is rather than lose that download.
    pub(crate) fn write_to(&self, out: &mut dyn std::io::Write) -> std::io::Result<()> {
        let mut entry = String::new();
        let mut emit = |out: &mut dyn std::io::Write,
                        uris: &[String],
                        gid: u64,
                        paused: bool,
                        own: &[(&'static OptDef, String)]| {
            entry.clear();
            session_entry(&mut entry, uris, gid, paused, &self.command_line, own);
            out.write_all(entry.as_bytes())
        };
        self.stopped
            .each(|gid, uris, own| emit(&mut *out, uris, gid, false, own))?;
        out.write_all(self.running.as_bytes())?;
        self.waiting
            .each(|gid, paused, uris, own| emit(&mut *out, uris, gid, paused, own))
    }

    /// The session's text's SHA-256, and the text written to `out` if given.
    fn digest(&self, out: Option<&mut dyn std::io::Write>) -> std::io::Result<[u8; 32]> {
        let mut tee = Tee {
            hash: sha2::Sha256::new(),
            out,
        };
        self.write_to(&mut tee)?;
        Ok(tee.hash.finalize().into())
    }

    /// Saves the session to `path` atomically (see [`crate::store::atomic_write`]), the text
    /// streamed, never held whole. With `only_if_changed` (the interval's saves) a text whose
    /// hash is the last saved one's is not written again: a first pass only hashes it.
    pub(crate) fn save(
        &self,
        path: &std::path::Path,
        only_if_changed: bool,
        saved: &std::sync::Mutex<Saved>,
    ) -> std::io::Result<()> {
        let last = Saved::of(saved).hash;
        if only_if_changed && last.is_some() && Some(self.digest(None)?) == last {
            Saved::of(saved).skipped = true;
            return Ok(());
        }
        let mut hash = [0u8; 32];
        crate::store::atomic_write_with(path, |w| {
            hash = self.digest(Some(w))?;
            Ok(())
        })?;
        *Saved::of(saved) = Saved {
            hash: Some(hash),
            skipped: false,
        };
        Ok(())
    }
}
