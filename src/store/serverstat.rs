//! The server performance profile (`--server-stat-if`, `--server-stat-of`): what earlier downloads
//! measured of each host and protocol, in aria2's text format so either program reads the other's
//! file, and the mirror choices made from it (`--uri-selector=feedback|adaptive`).
//!
//! One line per server: `host=H, protocol=P, dl_speed=N, sc_avg_speed=N, mc_avg_speed=N,
//! last_updated=SECONDS, counter=N, status=OK|ERROR`. Speeds are bytes per second; the averages
//! are over downloads with a single connection and with several. A server whose connections
//! failed (no answer, a timeout, a name that did not resolve) is `ERROR` until it is measured
//! again.
use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;

/// A server that fast or slower is not preferred by `feedback` (aria2's threshold, 20 KiB/s).
const FAST: u32 = 20 * 1024;
/// `feedback` looks at most this many fast candidates (as aria2, for some spread).
const CANDIDATES: usize = 10;

/// What is known of one server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stat {
    pub dl_speed: u32,
    pub sc_avg_speed: u32,
    pub mc_avg_speed: u32,
    /// Seconds since the epoch.
    pub last_updated: i64,
    pub counter: u32,
    pub error: bool,
}

impl Stat {
    fn new() -> Stat {
        Stat {
            dl_speed: 0,
            sc_avg_speed: 0,
            mc_avg_speed: 0,
            last_updated: 0,
            counter: 0,
            error: false,
        }
    }

    /// The best speed known of it (what `adaptive` compares).
    fn best(&self) -> u32 {
        self.sc_avg_speed.max(self.mc_avg_speed)
    }
}

/// Every server's stat, by host and protocol (`http`, `https`).
#[derive(Debug, Default, Clone)]
pub struct ServerStats {
    servers: BTreeMap<(String, String), Stat>,
}

/// A running average over the last five downloads or so, as aria2 keeps it: the first ones
/// weighted equally, then 4/5 of the old value and 1/5 of the new one.
fn average(old: u32, counter: u32, speed: u32) -> u32 {
    if counter == 0 {
        return old;
    }
    let (old, speed) = (f64::from(old), f64::from(speed));
    let avg = if counter < 5 {
        let n = f64::from(counter);
        (n - 1.0) / n * old + speed / n
    } else {
        0.8 * old + 0.2 * speed
    };
    avg as u32
}

impl ServerStats {
    /// Reads a profile (aria2's or ringdl's); lines without a host, a protocol or a readable
    /// speed or time are skipped, as aria2 skips them. Entries older than `timeout` seconds
    /// before `now` are dropped.
    pub fn parse(text: &str, now: i64, timeout: i64) -> ServerStats {
        let mut out = ServerStats::default();
        for line in text.lines() {
            let line = line.trim();
            if line.is_empty() {
                continue;
            }
            let mut fields: BTreeMap<&str, &str> = BTreeMap::new();
            for item in line.split(',') {
                if let Some((k, v)) = item.split_once('=') {
                    fields.insert(k.trim(), v.trim());
                }
            }
            let (Some(host), Some(protocol)) = (fields.get("host"), fields.get("protocol")) else {
                continue;
            };
            if host.is_empty() || protocol.is_empty() {
                continue;
            }
            let num = |k: &str| -> Option<u32> {
                match fields.get(k) {
                    None => Some(0),
                    Some(v) => v.parse().ok(),
                }
            };
            let (Some(Ok(dl_speed)), Some(sc), Some(mc), Some(counter)) = (
                fields.get("dl_speed").map(|v| v.parse::<u32>()),
                num("sc_avg_speed"),
                num("mc_avg_speed"),
                num("counter"),
            ) else {
                continue;
            };
            let Some(Ok(last_updated)) = fields.get("last_updated").map(|v| v.parse::<i64>())
            else {
                continue;
            };
            if now.saturating_sub(last_updated) >= timeout {
                continue;
            }
            out.servers.insert(
                (host.to_string(), protocol.to_string()),
                Stat {
                    dl_speed,
                    sc_avg_speed: sc,
                    mc_avg_speed: mc,
                    last_updated,
                    counter,
                    error: fields.get("status") == Some(&"ERROR"),
                },
            );
        }
        out
    }

    /// The profile's text, one line per server in aria2's field order.
    pub fn to_text(&self) -> String {
        let mut out = String::new();
        for ((host, protocol), s) in &self.servers {
            out.push_str(&format!(
                "host={host}, protocol={protocol}, dl_speed={}, sc_avg_speed={}, mc_avg_speed={}, last_updated={}, counter={}, status={}\n",
                s.dl_speed,
                s.sc_avg_speed,
                s.mc_avg_speed,
                s.last_updated,
                s.counter,
                if s.error { "ERROR" } else { "OK" }
            ));
        }
        out
    }

    /// Writes the profile to `path` through a temporary file renamed over it (aria2's
    /// `PATH__temp`), so a reader never sees half of one.
    pub fn save(&self, path: &Path) -> std::io::Result<()> {
        let mut tmp = path.as_os_str().to_owned();
        tmp.push("__temp");
        let tmp = std::path::PathBuf::from(tmp);
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(self.to_text().as_bytes())?;
        f.sync_all()?;
        drop(f);
        std::fs::rename(&tmp, path)
    }

    pub fn get(&self, host: &str, protocol: &str) -> Option<&Stat> {
        self.servers.get(&(host.to_string(), protocol.to_string()))
    }

    fn entry(&mut self, host: &str, protocol: &str) -> &mut Stat {
        self.servers
            .entry((host.to_string(), protocol.to_string()))
            .or_insert_with(Stat::new)
    }

    /// A download measured `speed` bytes/s from the server; `single`: it used one connection.
    pub fn measured(&mut self, host: &str, protocol: &str, speed: u32, single: bool, now: i64) {
        if speed == 0 {
            return;
        }
        let s = self.entry(host, protocol);
        s.counter = s.counter.saturating_add(1);
        s.dl_speed = speed;
        s.error = false;
        s.last_updated = now;
        if single {
            let avg = average(s.sc_avg_speed, s.counter, speed);
            if f64::from(avg) < 0.8 * f64::from(s.sc_avg_speed) {
                // The speed fell: the average starts over from here.
                s.counter = 0;
            }
            s.sc_avg_speed = avg;
        } else {
            s.mc_avg_speed = average(s.mc_avg_speed, s.counter, speed);
        }
    }

    /// A connection to the server failed before it could answer (or timed out).
    pub fn failed(&mut self, host: &str, protocol: &str, now: i64) {
        let s = self.entry(host, protocol);
        s.error = true;
        s.last_updated = now;
    }

    /// `feedback`: of `candidates` (mirror index, host, protocol, in the order given), the
    /// fastest server not already used by this download (known OK and faster than 20 KiB/s),
    /// else the first not measured or slow one; with every host in use, the least used host's
    /// first mirror that has not failed; else the first candidate. `used`: hosts this download
    /// has connections to, with how many.
    pub fn feedback(
        &self,
        candidates: &[(usize, &str, &str)],
        used: &[(&str, usize)],
    ) -> Option<usize> {
        let in_use = |h: &str| used.iter().any(|(u, n)| *u == h && *n > 0);
        let mut fast: Vec<(u32, usize)> = Vec::new();
        let mut normal: Option<usize> = None;
        for &(m, host, protocol) in candidates {
            if fast.len() >= CANDIDATES {
                break;
            }
            if in_use(host) {
                continue;
            }
            match self.get(host, protocol) {
                None => {
                    normal.get_or_insert(m);
                }
                Some(s) if !s.error && s.dl_speed > FAST => fast.push((s.dl_speed, m)),
                Some(s) if !s.error => {
                    normal.get_or_insert(m);
                }
                Some(_) => {}
            }
        }
        // The fastest; of equals, the first given.
        if let Some(&(_, m)) = fast
            .iter()
            .enumerate()
            .max_by_key(|(i, (speed, _))| (*speed, std::cmp::Reverse(*i)))
            .map(|(_, f)| f)
        {
            return Some(m);
        }
        if normal.is_some() {
            return normal;
        }
        let mut by_use: Vec<&(&str, usize)> = used.iter().collect();
        by_use.sort_by_key(|(_, n)| *n);
        for (h, _) in by_use {
            if let Some(&(m, _, _)) = candidates.iter().find(|(_, host, protocol)| {
                host == h && !self.get(host, protocol).is_some_and(|s| s.error)
            }) {
                return Some(m);
            }
        }
        candidates.first().map(|c| c.0)
    }

    /// `adaptive`: until three of the candidates are measured, the first one not measured;
    /// the extra connections of a split download (`exploring`) go to mirrors not measured yet;
    /// else one of the best (within 25% of the fastest known, picked with `pick`), else the first.
    pub fn adaptive(
        &self,
        candidates: &[(usize, &str, &str)],
        exploring: bool,
        pick: &mut dyn FnMut(usize) -> usize,
    ) -> Option<usize> {
        let untested = candidates
            .iter()
            .find(|(_, h, p)| self.get(h, p).is_none())
            .map(|c| c.0);
        let tested = candidates
            .iter()
            .filter(|(_, h, p)| self.get(h, p).is_some())
            .count();
        if tested < 3 || exploring {
            if let Some(m) = untested {
                return Some(m);
            }
        }
        let max = candidates
            .iter()
            .filter_map(|(_, h, p)| self.get(h, p).filter(|s| !s.error).map(Stat::best))
            .max()
            .unwrap_or(0);
        if max == 0 {
            return candidates.first().map(|c| c.0);
        }
        let floor = max - max / 4;
        let bests: Vec<usize> = candidates
            .iter()
            .filter(|(_, h, p)| {
                self.get(h, p)
                    .is_some_and(|s| !s.error && s.best() >= floor)
            })
            .map(|c| c.0)
            .collect();
        match bests.len() {
            0 => candidates.first().map(|c| c.0),
            1 => bests.first().copied(),
            n => bests.get(pick(n) % n).copied(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: i64 = 1_800_000_000;

    /// A line as aria2c 1.36 writes it.
    const ARIA2: &str = "host=mirror.example, protocol=http, dl_speed=1048576, sc_avg_speed=1000000, mc_avg_speed=0, last_updated=1799999000, counter=3, status=OK\n\
        host=dead.example, protocol=https, dl_speed=0, sc_avg_speed=0, mc_avg_speed=0, last_updated=1799999500, counter=0, status=ERROR\n";

    #[test]
    fn aria2_profiles_round_trip() {
        let s = ServerStats::parse(ARIA2, NOW, 86400);
        let m = s.get("mirror.example", "http").expect("read");
        assert_eq!(
            (m.dl_speed, m.sc_avg_speed, m.counter, m.error),
            (1048576, 1000000, 3, false)
        );
        assert!(s.get("dead.example", "https").expect("read").error);
        // Written back in the same order and format (sorted by host, as aria2's set is).
        let text = s.to_text();
        let mut lines: Vec<&str> = ARIA2.lines().collect();
        lines.sort();
        assert_eq!(text.lines().collect::<Vec<_>>(), lines);
    }

    #[test]
    fn stale_and_broken_lines_are_skipped() {
        let text = "host=old.example, protocol=http, dl_speed=5, last_updated=1, status=OK\n\
            protocol=http, dl_speed=5, last_updated=1799999999\n\
            host=a.example, protocol=http, dl_speed=fast, last_updated=1799999999\n\
            host=b.example, protocol=http, dl_speed=7, last_updated=yesterday\n\
            \n   \n\
            host=old-format.example, protocol=http, dl_speed=7, last_updated=1799999999, status=OK\n";
        let s = ServerStats::parse(text, NOW, 86400);
        assert!(s.get("old.example", "http").is_none());
        assert!(s.get("a.example", "http").is_none());
        assert!(s.get("b.example", "http").is_none());
        // An old file without the averages and counter is read, as aria2 reads it.
        assert_eq!(
            s.get("old-format.example", "http").expect("read").dl_speed,
            7
        );
        // Timeout 0: everything is stale.
        assert!(ServerStats::parse(ARIA2, NOW, 0).servers.is_empty());
    }

    #[test]
    fn averages_follow_aria2s_weights() {
        let mut s = ServerStats::default();
        s.measured("h", "http", 1000, true, NOW);
        assert_eq!(s.get("h", "http").expect("h").sc_avg_speed, 1000);
        s.measured("h", "http", 2000, true, NOW);
        assert_eq!(s.get("h", "http").expect("h").sc_avg_speed, 1500);
        // A fall of more than a fifth starts the average over.
        s.measured("h", "http", 100, true, NOW);
        let h = s.get("h", "http").expect("h");
        assert_eq!((h.sc_avg_speed, h.counter), (1033, 0));
        s.measured("h", "http", 0, false, NOW);
        assert_eq!(s.get("h", "http").expect("h").dl_speed, 100);
        s.failed("h", "http", NOW + 5);
        let h = s.get("h", "http").expect("h");
        assert!(h.error);
        assert_eq!(h.last_updated, NOW + 5);
        s.measured("h", "http", 500, false, NOW + 6);
        assert!(!s.get("h", "http").expect("h").error);
    }

    #[test]
    fn feedback_prefers_fast_then_unknown_and_skips_failed_and_used_hosts() {
        let mut s = ServerStats::default();
        s.measured("slow", "http", 1000, true, NOW);
        s.measured("fast", "http", 5_000_000, true, NOW);
        s.measured("faster", "http", 9_000_000, true, NOW);
        s.failed("dead", "http", NOW);
        let c = [
            (0, "dead", "http"),
            (1, "slow", "http"),
            (2, "new", "http"),
            (3, "fast", "http"),
            (4, "faster", "http"),
        ];
        assert_eq!(s.feedback(&c, &[]), Some(4));
        assert_eq!(s.feedback(&c, &[("faster", 1)]), Some(3));
        assert_eq!(s.feedback(&c, &[("faster", 1), ("fast", 1)]), Some(1));
        // Every usable host in use: the least used one's mirror, never the failed one.
        let used = [
            ("faster", 3),
            ("fast", 2),
            ("slow", 1),
            ("new", 2),
            ("dead", 0),
        ];
        assert_eq!(s.feedback(&c, &used), Some(1));
        // Nothing known: the order given.
        assert_eq!(ServerStats::default().feedback(&c, &[]), Some(0));
        // Only a failed mirror left: still tried (nothing better).
        assert_eq!(s.feedback(&c[..1], &[("dead", 1)]), Some(0));
    }

    #[test]
    fn adaptive_measures_three_then_picks_among_the_best() {
        let mut s = ServerStats::default();
        let c = [
            (0, "a", "http"),
            (1, "b", "http"),
            (2, "c", "http"),
            (3, "d", "http"),
        ];
        let mut first = |_n: usize| 0;
        assert_eq!(s.adaptive(&c, false, &mut first), Some(0));
        s.measured("a", "http", 1000, true, NOW);
        s.measured("b", "http", 9000, true, NOW);
        assert_eq!(s.adaptive(&c, false, &mut first), Some(2));
        s.measured("c", "http", 8000, true, NOW);
        // Three measured: the best ones (b, and c within 25%); d is left unless exploring.
        assert_eq!(s.adaptive(&c, false, &mut first), Some(1));
        let mut second = |_n: usize| 1;
        assert_eq!(s.adaptive(&c, false, &mut second), Some(2));
        assert_eq!(s.adaptive(&c, true, &mut first), Some(3));
    }
}
