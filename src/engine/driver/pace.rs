//! Time in the ring: rate limits (token buckets that pause reads until a timer says the tokens are
//! back — no busy waiting, no sleeping thread), `--retry-wait`, and `--lowest-speed-limit`.
use super::*;

/// aria2 judges a download too slow only after it has run this long.
const SLOW_GRACE: Duration = Duration::from_secs(10);

fn later(a: Option<Instant>, b: Option<Instant>) -> Option<Instant> {
    match (a, b) {
        (Some(x), Some(y)) => Some(x.max(y)),
        (x, y) => x.or(y),
    }
}

/// What time-keeping owns: `--max-overall-download-limit`'s bucket and when the timers in flight
/// fire (private to this file).
pub(super) struct Pacer {
    overall: Option<super::super::download::Bucket>,
    timers: Vec<Instant>,
}

impl Pacer {
    /// `overall_limit` bytes per second for all downloads together (0: none).
    pub(super) fn new(overall_limit: u64, now: Instant) -> Pacer {
        Pacer {
            overall: (overall_limit > 0)
                .then(|| super::super::download::Bucket::new(overall_limit, now)),
            timers: Vec::new(),
        }
    }

    /// `changeGlobalOption(max-overall-download-limit)`: the new limit applies at once.
    pub(super) fn set_overall_limit(&mut self, limit: u64, now: Instant) {
        self.overall = (limit > 0).then(|| super::super::download::Bucket::new(limit, now));
    }
}

impl<R: Reactor<Tag>> Engine<'_, R> {
    /// Whether connection `slot` of download `dl` may read now; if not, it waits for a timer.
    pub(super) fn may_read(&mut self, slot: usize, dl: usize) -> bool {
        let now = self.reactor.now();
        let mut wake = self.dls[dl].bucket.as_mut().and_then(|b| b.wait_until(now));
        wake = later(
            wake,
            self.pace.overall.as_mut().and_then(|b| b.wait_until(now)),
        );
        match wake {
            None => true,
            Some(at) => {
                if let Some(c) = self.conns[slot].as_mut() {
                    c.throttled = true;
                }
                self.set_timer(at);
                false
            }
        }
    }

    /// `n` bytes arrived for download `dl` at `now`.
    pub(super) fn charge(&mut self, dl: usize, n: u64, now: Instant) {
        if let Some(b) = self.dls[dl].bucket.as_mut() {
            b.charge(n, now);
        }
        if let Some(b) = self.pace.overall.as_mut() {
            b.charge(n, now);
        }
    }

    /// Makes sure the loop wakes at `at` (a timer firing earlier will check again then).
    pub(super) fn set_timer(&mut self, at: Instant) {
        if self.pace.timers.iter().any(|t| *t <= at) {
            return;
        }
        let d = at.saturating_duration_since(self.reactor.now());
        self.reactor.timer(Tag::Timer { at }, d);
        self.pace.timers.push(at);
    }

    /// A timer fired: throttled connections read again if they may, waits that are over end.
    pub(super) fn on_timer(&mut self, at: Instant) {
        self.pace.timers.retain(|t| *t != at);
        let now = self.reactor.now();
        for slot in 0..self.conns.len() {
            let waiting = self.conns[slot].as_ref().is_some_and(|c| c.throttled);
            if waiting {
                if let Some(c) = self.conns[slot].as_mut() {
                    c.throttled = false;
                }
                self.arm_recv(slot);
            }
        }
        for dl in 0..self.dls.len() {
            let d = &mut self.dls[dl];
            match d.retry_at {
                Some(t) if t <= now => {
                    d.retry_at = None;
                    let retries = std::mem::take(&mut d.deferred);
                    // A download told to stop (or failed) since wants no connection any more.
                    if !d.halted && d.error.is_none() {
                        d.wanted += retries;
                    }
                }
                Some(t) => self.set_timer(t),
                None => {}
            }
        }
    }

    /// A retry of download `dl` after `wait` seconds (at once when 0).
    pub(super) fn retry_later(&mut self, dl: usize, wait: u64) {
        let d = &mut self.dls[dl];
        if wait == 0 {
            d.wanted += 1;
            return;
        }
        let at = self.reactor.now() + Duration::from_secs(wait);
        d.deferred += 1;
        d.retry_at = Some(d.retry_at.map_or(at, |t| t.max(at)));
        self.set_timer(at);
    }

    /// `--lowest-speed-limit`: after the grace period, a download at or below it fails (exit 5).
    pub(super) fn check_slow(&mut self, dl: usize, speed: u64) {
        let d = &self.dls[dl];
        let limit = d.opts.lowest_speed_limit;
        let now = self.reactor.now();
        let d = &self.dls[dl];
        let running = d
            .started
            .map_or(Duration::ZERO, |s| now.saturating_duration_since(s));
        // Every byte in (its file being cut or checked): nothing left to be slow at.
        let all_in = d.plan.as_ref().is_some_and(Plan::is_complete);
        if limit == 0
            || running < SLOW_GRACE
            || d.verifying
            || all_in
            || d.error.is_some()
            || speed > limit
        {
            return;
        }
        let host = d
            .uris
            .first()
            .and_then(|u| u.host_str())
            .unwrap_or_default()
            .to_string();
        self.fail_download(
            dl,
            Failure::fatal(
                ExitCode(5),
                format!("Too slow Downloading speed: {speed} <= {limit}(B/s), host:{host}"),
            ),
            None,
        );
    }
}
