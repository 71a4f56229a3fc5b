//! What the user sees: aria2-style log lines, the progress readout (an indicatif bar on a terminal,
//! aria2's one-line readout otherwise) and the "Download Results" table. Everything here is
//! fed from counters the engine already keeps; nothing here blocks or touches the ring.
mod clock;
pub mod format;

use crate::cli::{LogLevel, ResultMode};
pub use crate::engine::Progress;
use format::{abbrev_size, secfmt};
use std::io::{IsTerminal, Write};
use std::time::Duration;

/// Final state of one download, as the results table shows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    Ok,
    Err,
    InProgress,
    /// Removed over RPC.
    Removed,
}

/// One row of the results table.
#[derive(Debug, Clone)]
pub struct ResultRow {
    pub gid: u64,
    pub status: Status,
    /// Average speed in bytes per second, when the download got anywhere.
    pub avg_speed: Option<u64>,
    /// The output path, or the first URI when no file was chosen.
    pub path_or_uri: String,
    /// How much of the file arrived, when its length is known.
    pub percent: Option<u8>,
}

/// Where `-l/--log` writes.
pub enum LogTarget {
    Stdout,
    File(std::fs::File),
}

/// How the console behaves, from the command line.
pub struct ConsoleOptions {
    pub level: LogLevel,
    pub quiet: bool,
    pub show_readout: bool,
    pub color: bool,
    pub human_readable: bool,
    pub log: Option<LogTarget>,
    pub log_level: LogLevel,
}

/// The console: log lines, readout, results, and the `-l` log.
pub struct Console {
    level: LogLevel,
    quiet: bool,
    color: bool,
    human: bool,
    tty: bool,
    readout: bool,
    /// On a terminal: the bars, one per active download, by GID.
    bars: Option<Bars>,
    log: Option<LogTarget>,
    log_level: LogLevel,
}

/// `--stderr`: console text goes to standard error instead (set once, before anything is
/// printed).
static TO_STDERR: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Sends console text to standard error from now on (`--stderr`).
pub fn console_to_stderr() {
    TO_STDERR.store(true, std::sync::atomic::Ordering::Relaxed);
}

fn to_stderr() -> bool {
    TO_STDERR.load(std::sync::atomic::Ordering::Relaxed)
}

/// Writes console text to stdout (stderr with `--stderr`). A closed stdout (a pipe whose reader
/// left) is not an error worth stopping a download for, so write errors are dropped.
pub fn emit(text: &str) {
    if to_stderr() {
        let mut out = std::io::stderr().lock();
        let _ = out.write_all(text.as_bytes());
        let _ = out.flush();
        return;
    }
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(text.as_bytes());
    let _ = out.flush();
}

/// The local wall-clock time as aria2's log prefix `MM/DD HH:MM:SS`.
fn timestamp() -> String {
    let (mon, day, h, m, s) = clock::local_time();
    format!("{mon:02}/{day:02} {h:02}:{m:02}:{s:02}")
}

impl Console {
    /// A console writing to stdout.
    pub fn new(o: ConsoleOptions) -> Console {
        let tty = match to_stderr() {
            true => std::io::stderr().is_terminal(),
            false => std::io::stdout().is_terminal(),
        };
        Console {
            level: o.level,
            quiet: o.quiet,
            color: o.color,
            human: o.human_readable,
            tty,
            readout: o.show_readout && !o.quiet,
            bars: None,
            log: o.log,
            log_level: o.log_level,
        }
    }

    /// Whether the readout is redrawn in place (a terminal) rather than printed as lines.
    pub fn is_tty(&self) -> bool {
        self.tty
    }

    /// How often the engine should call [`Console::tick`].
    pub fn tick_interval(&self) -> Duration {
        if self.tty {
            Duration::from_millis(100)
        } else {
            Duration::from_secs(1)
        }
    }

    /// Prints one log line at `level`: a blank line, then `MM/DD HH:MM:SS [LEVEL] msg`.
    pub fn log(&mut self, level: LogLevel, msg: &str) {
        let (name, code) = match level {
            LogLevel::Debug => ("DEBUG", "1;37"),
            LogLevel::Info => ("INFO", "1;36"),
            LogLevel::Notice => ("NOTICE", "1;32"),
            LogLevel::Warn => ("WARN", "1;33"),
            LogLevel::Error => ("ERROR", "1;31"),
        };
        if level >= self.log_level {
            if let Some(target) = &mut self.log {
                let line = format!("{} [{name}] {msg}\n", clock::log_timestamp());
                match target {
                    LogTarget::Stdout => emit(&line),
                    LogTarget::File(f) => {
                        let _ = f.write_all(line.as_bytes());
                    }
                }
            }
        }
        if self.quiet || level < self.level {
            return;
        }
        let tag = if self.color {
            format!("\x1b[{code}m{name}\x1b[0m")
        } else {
            name.to_string()
        };
        let line = format!("\n{} [{tag}] {msg}", timestamp());
        match &self.bars {
            Some(b) => b.multi.suspend(|| emit(&format!("{line}\n"))),
            None => emit(&format!("{line}\n")),
        }
    }

    /// Shorthand for a NOTICE line.
    pub fn notice(&mut self, msg: &str) {
        self.log(LogLevel::Notice, msg);
    }

    /// Shorthand for an ERROR line.
    pub fn error(&mut self, msg: &str) {
        self.log(LogLevel::Error, msg);
    }

    /// Redraws the readout from the engine's counters.
    pub fn tick(&mut self, active: &[Progress]) {
        if !self.readout || active.is_empty() {
            return;
        }
        if self.tty {
            let human = self.human;
            self.bars
                .get_or_insert_with(Bars::new)
                .update(active, human);
        } else {
            emit(&format!("{}\n", readout_line(active, self.human)));
        }
    }

    /// aria2's periodic progress summary.
    pub fn summary(&mut self, active: &[Progress], paths: &[String]) {
        if self.quiet || active.is_empty() {
            return;
        }
        let now = clock::asctime_now();
        let mut out = format!(
            " *** Download Progress Summary as of {now} *** \n{}\n",
            "=".repeat(79)
        );
        for (p, path) in active.iter().zip(paths) {
            out.push_str(&readout_line(std::slice::from_ref(p), self.human));
            out.push_str(&format!("\nFILE: {path}\n{}\n", "-".repeat(79)));
        }
        match &self.bars {
            Some(b) => b.multi.suspend(|| emit(&out)),
            None => emit(&out),
        }
    }

    /// Removes the progress bars before the final output.
    pub fn finish(&mut self) {
        if let Some(b) = self.bars.take() {
            for bar in b.bars.values() {
                bar.finish_and_clear();
            }
            let _ = b.multi.clear();
        }
    }

    /// Prints the "Download Results" table, its legend, and the resume hint when anything failed.
    pub fn results(&mut self, rows: &[ResultRow], mode: ResultMode) {
        self.finish();
        if self.quiet || mode == ResultMode::Hide || rows.is_empty() {
            return;
        }
        let text = results_table(rows, self.human, mode == ResultMode::Full);
        emit(&text);
    }
}

/// The engine's reports, rendered as aria2c renders them.
impl crate::engine::Report for Console {
    fn log(&mut self, level: LogLevel, msg: &str) {
        Console::log(self, level, msg);
    }
    fn tick(&mut self, active: &[Progress]) {
        Console::tick(self, active);
    }
    fn summary(&mut self, active: &[Progress], paths: &[String]) {
        Console::summary(self, active, paths);
    }
    fn finish(&mut self) {
        Console::finish(self);
    }
    fn tick_interval(&self) -> Duration {
        Console::tick_interval(self)
    }
}

/// The terminal readout: one indicatif bar per active download, drawn at most 10 times a second.
struct Bars {
    multi: indicatif::MultiProgress,
    bars: std::collections::HashMap<u64, indicatif::ProgressBar>,
    style: indicatif::ProgressStyle,
}

impl Bars {
    fn new() -> Bars {
        let multi = indicatif::MultiProgress::with_draw_target(match to_stderr() {
            true => indicatif::ProgressDrawTarget::stderr_with_hz(10),
            false => indicatif::ProgressDrawTarget::stdout_with_hz(10),
        });
        let style = indicatif::ProgressStyle::with_template("{prefix} {wide_bar} {msg}")
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar());
        Bars {
            multi,
            bars: std::collections::HashMap::new(),
            style,
        }
    }

    /// Adds, moves and removes bars to match the active downloads.
    fn update(&mut self, active: &[Progress], human: bool) {
        self.bars.retain(|gid, bar| {
            let keep = active.iter().any(|p| p.gid == *gid);
            if !keep {
                bar.finish_and_clear();
            }
            keep
        });
        for p in active {
            let bar = self.bars.entry(p.gid).or_insert_with(|| {
                let bar = self.multi.add(indicatif::ProgressBar::new(0));
                bar.set_style(self.style.clone());
                bar.set_prefix(format!("#{}", &format!("{:016x}", p.gid)[..6]));
                bar
            });
            bar.set_length(p.total.unwrap_or(p.done).max(p.done));
            bar.set_position(p.done);
            let line = readout_line(std::slice::from_ref(p), human);
            // The readout without its "[#gid " prefix, which the bar's prefix already shows.
            let msg = line
                .get(9..)
                .map_or(line.clone(), |rest| format!("[{rest}"));
            bar.set_message(msg);
        }
    }
}

/// The readout line: `[#gid DONE/TOTAL(P%) CN:n DL:speed ETA:t]` for one download, aria2's multi
/// form `[DL:speed][#gid DONE/TOTAL(P%)]...` for several.
pub fn readout_line(active: &[Progress], human: bool) -> String {
    let abbrev_size = |n: u64| if human { abbrev_size(n) } else { n.to_string() };
    let gid = |p: &Progress| format!("{:016x}", p.gid)[..6].to_string();
    let amount = |p: &Progress| {
        let mut s = format!("{}B", abbrev_size(p.done));
        if let Some(t) = p.total {
            s.push_str(&format!("/{}B", abbrev_size(t)));
            if let Some(pct) = (p.done * 100).checked_div(t) {
                s.push_str(&format!("({pct}%)"));
            }
        }
        s
    };
    if active.len() == 1 {
        let p = &active[0];
        let mut s = format!("[#{} {} CN:{}", gid(p), amount(p), p.connections);
        let finished = p.total.is_some_and(|t| p.done >= t);
        if !finished {
            s.push_str(&format!(" DL:{}B", abbrev_size(p.speed)));
            if let Some(t) = p.total {
                let eta = t.saturating_sub(p.done).checked_div(p.speed).unwrap_or(0);
                if eta > 0 {
                    s.push_str(&format!(" ETA:{}", secfmt(eta)));
                }
            }
        }
        s.push(']');
        s
    } else {
        let speed: u64 = active.iter().map(|p| p.speed).sum();
        let mut s = format!("[DL:{}B]", abbrev_size(speed));
        for p in active.iter().take(5) {
            s.push_str(&format!("[#{} {}]", gid(p), amount(p)));
        }
        if active.len() > 5 {
            s.push_str(&format!("(+{})", active.len() - 5));
        }
        s
    }
}

/// aria2's "Download Results" block, exactly as it prints it in default mode.
/// `full` adds aria2's percentage column (`--download-result=full`).
pub fn results_table(rows: &[ResultRow], human: bool, full: bool) -> String {
    let abbrev_size = |n: u64| if human { abbrev_size(n) } else { n.to_string() };
    let mut out = String::from(if full {
        "\nDownload Results:\ngid   |stat|avg speed  |  %|path/URI\n======+====+===========+===+===================================================\n"
    } else {
        "\nDownload Results:\ngid   |stat|avg speed  |path/URI\n======+====+===========+=======================================================\n"
    });
    let (mut ok, mut err, mut inpr, mut rm) = (false, false, false, false);
    for r in rows {
        let stat = match r.status {
            Status::Ok => {
                ok = true;
                "OK  "
            }
            Status::Err => {
                err = true;
                "ERR "
            }
            Status::InProgress => {
                inpr = true;
                "INPR"
            }
            Status::Removed => {
                rm = true;
                "RM  "
            }
        };
        let speed = match r.avg_speed {
            Some(s) => format!("{:>8}B/s", abbrev_size(s)),
            None => format!("{:>11}", "n/a"),
        };
        let gid = &format!("{:016x}", r.gid)[..6];
        let pct = if full {
            match r.percent {
                Some(p) => format!("{p:>3}|"),
                None => "  -|".to_string(),
            }
        } else {
            String::new()
        };
        out.push_str(&format!("{gid}|{stat}|{speed}|{pct}{}\n", r.path_or_uri));
    }
    out.push_str("\nStatus Legend:\n");
    if ok {
        out.push_str("(OK):download completed.");
    }
    if err {
        out.push_str("(ERR):error occurred.");
    }
    if inpr {
        out.push_str("(INPR):download in-progress.");
    }
    if rm {
        out.push_str("(RM):download removed.");
    }
    out.push('\n');
    if err || inpr {
        out.push_str("\nringdl will resume download if the transfer is restarted.\nIf there are any errors, then see the log file. See '-l' option in help/man page for details.\n");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_table_matches_aria2() {
        let rows = [ResultRow {
            gid: 0x50d36f0000000001,
            status: Status::Ok,
            avg_speed: Some(142 * 1024 * 1024),
            path_or_uri: "/tmp/dl/file.bin".into(),
            percent: Some(100),
        }];
        assert_eq!(
            results_table(&rows, true, false),
            "\nDownload Results:\ngid   |stat|avg speed  |path/URI\n======+====+===========+=======================================================\n50d36f|OK  |   142MiB/s|/tmp/dl/file.bin\n\nStatus Legend:\n(OK):download completed.\n"
        );
        let rows = [
            ResultRow {
                gid: 0x79478cdd73393ecf,
                status: Status::Err,
                avg_speed: None,
                path_or_uri: "http://h/nope".into(),
                percent: None,
            },
            ResultRow {
                gid: 0x238217aaaaaaaaaa,
                status: Status::Ok,
                avg_speed: Some(715 << 20),
                path_or_uri: "/o/f".into(),
                percent: Some(100),
            },
        ];
        let t = results_table(&rows, true, false);
        assert!(t.contains("79478c|ERR |        n/a|http://h/nope\n"), "{t}");
        assert!(t.contains("238217|OK  |   715MiB/s|/o/f\n"), "{t}");
        assert!(
            t.contains("(OK):download completed.(ERR):error occurred.\n"),
            "{t}"
        );
        assert!(t.ends_with("See '-l' option in help/man page for details.\n"));
        let full = results_table(&rows, true, true);
        assert!(
            full.contains(
                "gid   |stat|avg speed  |  %|path/URI\n======+====+===========+===+====="
            ),
            "{full}"
        );
        assert!(
            full.contains("79478c|ERR |        n/a|  -|http://h/nope\n"),
            "{full}"
        );
        assert!(
            full.contains("238217|OK  |   715MiB/s|100|/o/f\n"),
            "{full}"
        );
    }

    #[test]
    fn readout_forms() {
        let p = Progress {
            gid: 0x373e0b0000000000,
            done: 1 << 20,
            total: Some(3_000_000),
            connections: 1,
            speed: 516 * 1024,
        };
        assert_eq!(
            readout_line(std::slice::from_ref(&p), true),
            "[#373e0b 1.0MiB/2.8MiB(34%) CN:1 DL:516KiB ETA:3s]"
        );
        let z = Progress {
            gid: 0xc8fd800000000000,
            done: 0,
            total: Some(0),
            connections: 1,
            speed: 0,
        };
        assert_eq!(
            readout_line(std::slice::from_ref(&z), true),
            "[#c8fd80 0B/0B CN:1]"
        );
        let multi = readout_line(&[p, z], true);
        assert!(
            multi.starts_with("[DL:516KiB][#373e0b 1.0MiB/2.8MiB(34%)][#c8fd80 0B/0B]"),
            "{multi}"
        );
    }
}
