//! Which mirror a new connection takes (`--uri-selector`), and the server performance profile
//! behind that choice (`--server-stat-if`/`-of`, `store::serverstat`): each exchange's speed is
//! credited to its mirror when it ends, a download's best speed per server goes into the profile
//! when the download ends, and a server whose connection could not be made or timed out is marked
//! failed, so `feedback` leaves it for the rest of the run (and the next, through the file).
use super::*;
use crate::engine::UriSelector;
use crate::store::serverstat::ServerStats;

/// Seconds since the epoch (the profile's clock; the run's own clock may be the simulation's).
fn epoch_now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}

/// The profile's key for a URI: its host (without brackets) and scheme.
fn server_of(url: &Url) -> (String, String) {
    let host = url
        .host_str()
        .unwrap_or_default()
        .trim_start_matches('[')
        .trim_end_matches(']')
        .to_string();
    (host, url.scheme().to_string())
}

impl<R: Reactor<Tag>> Engine<'_, R> {
    /// Reads `--server-stat-if` at the start (a file that cannot be read is said and ignored,
    /// as aria2c does).
    pub(super) fn load_server_stats(&mut self) {
        let Some(path) = self.s.server_stat_if.clone() else {
            return;
        };
        match std::fs::read_to_string(&path) {
            Ok(text) => {
                self.server_stats =
                    ServerStats::parse(&text, epoch_now(), self.s.server_stat_timeout);
                self.console.notice(&format!(
                    "ServerStat file {} loaded successfully.",
                    path.display()
                ));
            }
            Err(e) => self.console.error(&format!(
                "Failed to open ServerStat file {} for read: {}",
                path.display(),
                sys::cause(&e)
            )),
        }
    }

    /// Writes `--server-stat-of` at the end of the run.
    pub(super) fn save_server_stats(&mut self) {
        let Some(path) = self.s.server_stat_of.clone() else {
            return;
        };
        match self.server_stats.save(&path) {
            Ok(()) => self.console.notice(&format!(
                "ServerStat file {} saved successfully.",
                path.display()
            )),
            Err(e) => self.console.error(&format!(
                "Failed to write ServerStat file {}: {}",
                path.display(),
                sys::cause(&e)
            )),
        }
    }

    /// An exchange ended (its connection going on to other work, idle, or closed): its body's
    /// speed counts for its mirror.
    pub(super) fn credit(&mut self, ex: &Exchange) {
        let (Some(began), true) = (ex.began, ex.body_bytes > 0) else {
            return;
        };
        let secs = self
            .reactor
            .now()
            .duration_since(began)
            .as_secs_f64()
            .max(0.001);
        let speed = (ex.body_bytes as f64 / secs).min(f64::from(u32::MAX)) as u32;
        let Some(d) = self.dls.get_mut(ex.dl).filter(|d| d.attempt == ex.attempt) else {
            return;
        };
        d.exchanges_with_body += 1;
        if d.mirror_speeds.len() <= ex.mirror {
            d.mirror_speeds.resize(ex.mirror + 1, 0);
        }
        d.mirror_speeds[ex.mirror] = d.mirror_speeds[ex.mirror].max(speed);
    }

    /// Download `dl` ended: its best speed from each server goes into the profile.
    pub(super) fn profile_download(&mut self, dl: usize) {
        let d = &self.dls[dl];
        let single = d.exchanges_with_body <= 1;
        let now = epoch_now();
        let measured: Vec<((String, String), u32)> = d
            .mirror_speeds
            .iter()
            .enumerate()
            .filter(|(_, s)| **s > 0)
            .filter_map(|(m, s)| d.uris.get(m).map(|u| (server_of(u), *s)))
            .collect();
        for ((host, protocol), speed) in measured {
            self.server_stats
                .measured(&host, &protocol, speed, single, now);
        }
    }

    /// A connection to `url`'s server could not be made, its name did not resolve, or it timed
    /// out: the server is marked failed in the profile.
    pub(super) fn profile_failure(&mut self, url: &Url) {
        let (host, protocol) = server_of(url);
        self.server_stats.failed(&host, &protocol, epoch_now());
    }

    /// The mirror download `dl`'s next connection takes, of those not given up on.
    pub(super) fn pick_mirror(&mut self, dl: usize) -> Option<usize> {
        let d = &self.dls[dl];
        let usable: Vec<usize> = (0..d.uris.len()).filter(|&m| !d.bad_uris[m]).collect();
        if usable.is_empty() {
            return None;
        }
        let working: Vec<usize> = self
            .conns
            .iter()
            .flatten()
            .filter(|c| c.works_for(dl))
            .filter_map(|c| {
                c.ex.as_ref()
                    .map(|e| e.mirror)
                    .or(c.want.as_ref().map(|w| w.mirror))
            })
            .collect();
        // As aria2c takes each URI out of the list when a connection uses it, a mirror already
        // in use by this download comes after those that are not.
        let fresh: Vec<usize> = usable
            .iter()
            .copied()
            .filter(|m| !working.contains(m))
            .collect();
        let pool = if fresh.is_empty() { &usable } else { &fresh };
        let servers: Vec<(String, String)> = pool.iter().map(|&m| server_of(&d.uris[m])).collect();
        let candidates: Vec<(usize, &str, &str)> = pool
            .iter()
            .zip(&servers)
            .map(|(&m, (h, p))| (m, h.as_str(), p.as_str()))
            .collect();
        match d.opts.uri_selector {
            UriSelector::InOrder => Some(usable[working.len() % usable.len()]),
            UriSelector::Feedback => {
                let mut used: Vec<(&str, usize)> = Vec::new();
                for m in &working {
                    let Some(u) = d.uris.get(*m) else { continue };
                    let host = u.host_str().unwrap_or_default();
                    let host = host.trim_start_matches('[').trim_end_matches(']');
                    match used.iter_mut().find(|(h, _)| *h == host) {
                        Some(e) => e.1 += 1,
                        None => {
                            if let Some((h, _)) = servers.iter().find(|(h, _)| h == host) {
                                used.push((h.as_str(), 1));
                            }
                        }
                    }
                }
                self.server_stats.feedback(&candidates, &used)
            }
            UriSelector::Adaptive => {
                // The first connections go to the best servers; the extra ones of a split
                // download (beyond the first) measure servers not known yet.
                let exploring = !working.is_empty() && d.plan.is_some();
                let gid = d.gid;
                let mut pick = |n: usize| ((gid ^ working.len() as u64) % n.max(1) as u64) as usize;
                self.server_stats
                    .adaptive(&candidates, exploring, &mut pick)
            }
        }
    }
}
