//! Wiring only: settings from `cli`, the job list (command line, then `-i`), the engine run, the
//! report, the exit code.
use ringdl::cli::input::InputReader;
use ringdl::cli::{self, Command, DownloadOptions, Settings};
use ringdl::engine::ExitCode;
use ringdl::engine::{self, Job};
use ringdl::metalink::source::{self, Downloads};
use ringdl::ui::{emit, Console, ConsoleOptions, LogTarget, ResultRow, Status};
use std::cell::RefCell;
use std::collections::VecDeque;
use std::io::BufReader;
use std::rc::Rc;

fn main() {
    std::process::exit(real_main());
}

fn real_main() -> i32 {
    let settings = match cli::parse_args(std::env::args_os().skip(1)) {
        Ok(Command::Download(s)) => s,
        Ok(Command::Help(text)) => {
            emit(&text);
            return 0;
        }
        Ok(Command::Version(engine)) => {
            emit(&version_text(engine));
            return 0;
        }
        Ok(Command::Generate(target)) => {
            emit(&cli::generate::generate(target));
            return 0;
        }
        Err(e) => {
            eprintln!("{}", e.message);
            return e.exit_code;
        }
    };
    let log = match settings.log.as_deref() {
        None => None,
        Some("-") => Some(LogTarget::Stdout),
        Some(path) => match std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
        {
            Ok(f) => Some(LogTarget::File(f)),
            Err(e) => {
                eprintln!("Failed to open the log file {path}, cause: {e}");
                return 1;
            }
        },
    };
    if settings.stderr {
        ringdl::ui::console_to_stderr();
    }
    let mut console = Console::new(ConsoleOptions {
        level: settings.console_log_level,
        quiet: settings.quiet,
        show_readout: settings.show_console_readout,
        color: settings.enable_color,
        human_readable: settings.human_readable,
        log,
        log_level: settings.log_level,
    });
    for w in &settings.warnings {
        console.log(cli::LogLevel::Warn, w);
    }
    if settings.config.rpc.is_some() {
        return serve(&settings, &mut console);
    }
    if settings.show_files {
        return show_files(&settings, &mut console);
    }
    if let Some(path) = settings.metalink_file.clone() {
        return match open_metalink(&settings, &path) {
            Ok(m) => {
                let count = m.count;
                run_jobs(&settings, &mut console, Box::new(m), count, None)
            }
            Err((msg, code)) => {
                console.finish();
                eprintln!("{msg}");
                code
            }
        };
    }
    let input = match open_input(&settings, &mut console) {
        Ok(i) => i,
        Err((msg, code)) => {
            console.finish();
            eprintln!("{msg}");
            return code;
        }
    };
    // Metalink files named on the command line: each file of theirs a download, as with -M.
    let mut metalinks: Box<dyn Iterator<Item = Job>> = Box::new(std::iter::empty());
    let mut metalink_count = 0;
    let mut plain = (*settings).clone();
    if input.is_none() {
        plain
            .uris
            .retain(|u| !ringdl::metalink::is_document_file(u));
        for path in settings
            .uris
            .iter()
            .filter(|u| ringdl::metalink::is_document_file(u))
        {
            match open_metalink(&settings, path) {
                Ok(m) => {
                    metalink_count += m.count;
                    metalinks = Box::new(metalinks.chain(m));
                }
                Err((msg, code)) => {
                    console.finish();
                    eprintln!("{msg}");
                    return code;
                }
            }
        }
    }
    // As aria2c: with -i, the URIs on the command line are not downloaded.
    let (jobs, count) = if input.is_some() {
        (CommandLineJobs::None, 0)
    } else {
        match command_line_jobs(&plain) {
            Ok(j) => j,
            Err(msg) => {
                console.finish();
                eprintln!("{msg}");
                return 1;
            }
        }
    };
    let expected = count + metalink_count + input.as_ref().map_or(0, |i| i.count);
    let input_error: Rc<RefCell<Option<String>>> = Rc::default();
    let entry_jobs = input.into_iter().flat_map({
        let input_error = input_error.clone();
        let base = settings.config.download.clone();
        let patterns = match (settings.parameterized_uri, settings.force_sequential) {
            (false, _) => Patterns::Off,
            (true, false) => Patterns::Mirrors,
            (true, true) => Patterns::Each,
        };
        move |list| list.jobs(base.clone(), patterns, input_error.clone())
    });
    let all_jobs = jobs.chain(metalinks).chain(entry_jobs);
    run_jobs(
        &settings,
        &mut console,
        Box::new(all_jobs),
        expected,
        Some(input_error),
    )
}

/// Runs `jobs` (`expected` of them) to their end: the report, the session, the exit code.
/// `input_error`: where an `-i` list's read error is kept (exit 28 after the report).
fn run_jobs(
    settings: &Settings,
    console: &mut Console,
    all_jobs: Box<dyn Iterator<Item = Job> + '_>,
    expected: usize,
    input_error: Option<Rc<RefCell<Option<String>>>>,
) -> i32 {
    if expected == 0 {
        emit("No files to download.\n");
        return 0;
    }
    console.notice(&format!("Downloading {expected} item(s)"));
    // A Metalink a download fetches (`--follow-metalink`) puts its downloads first.
    let followed: Rc<RefCell<VecDeque<Box<dyn Iterator<Item = Job>>>>> = Rc::default();
    let mut all_jobs = FollowedFirst {
        followed: followed.clone(),
        rest: all_jobs,
    };
    let follower: engine::Follower = Box::new(move |doc| {
        let name = doc.path.display().to_string();
        let m = source::open(&doc.file, &name, &doc.opts, Some(&doc.uri)).map_err(|e| e.0)?;
        if m.matched == 0 {
            emit("No file matched with your preference.\n");
        }
        let n = m.count;
        let own = doc.own.clone();
        followed
            .borrow_mut()
            .push_front(Box::new(m.map(move |j| with_entry_options(&own, j))));
        Ok(n)
    });
    // The pool is sized for the downloads expected, unless a Metalink named by URI may bring
    // more.
    let follows = settings.config.download.follow_metalink != engine::Follow::No
        && settings.uris.iter().any(|u| {
            let u = u.to_ascii_lowercase();
            u.ends_with(".meta4") || u.ends_with(".metalink")
        });
    let sizing = (!follows).then_some(expected);
    let summary =
        match engine::run_following(&settings.config, &mut all_jobs, sizing, console, follower) {
            Ok(s) => s,
            Err(e) => {
                console.finish();
                eprintln!("ringdl: {e}");
                return 1;
            }
        };
    // --save-session: what did not finish, then what never started (a stopped run's rest).
    let session = settings.config.session_out.as_ref().map(|out| {
        let mut text = summary.session.clone().unwrap_or_default();
        for job in all_jobs.by_ref() {
            engine::session_entry_of_job(&mut text, &job, &out.command_line);
        }
        (out.path.clone(), text)
    });
    if summary.emergency {
        // A second Ctrl-C: the writes in flight ended and control files were saved; no report.
        if let Some((path, text)) = &session {
            save_session(path, text, console);
        }
        return i32::from(ExitCode::UNFINISHED.0);
    }
    show_results(settings, console, &summary);
    if let Some((path, text)) = &session {
        save_session(path, text, console);
    }
    if let Some(e) = input_error.as_ref().and_then(|e| e.borrow().clone()) {
        eprintln!("{e}");
        return 28;
    }
    exit_code(&summary)
}

/// The run's jobs: those of a Metalink a download fetched first (the latest one's first, as
/// aria2c puts them), then the list's.
struct FollowedFirst<'a> {
    followed: Rc<RefCell<VecDeque<Box<dyn Iterator<Item = Job>>>>>,
    rest: Box<dyn Iterator<Item = Job> + 'a>,
}

impl Iterator for FollowedFirst<'_> {
    type Item = Job;

    fn next(&mut self) -> Option<Job> {
        let mut followed = self.followed.borrow_mut();
        while let Some(m) = followed.front_mut() {
            match m.next() {
                Some(job) => return Some(job),
                None => {
                    followed.pop_front();
                }
            }
        }
        drop(followed);
        self.rest.next()
    }
}

/// Opens a Metalink (`-M`'s, standard input spooled as `-i`'s; or one named on the command
/// line), checks it whole and counts the downloads it stands for.
fn open_metalink(s: &Settings, path: &str) -> Result<Downloads, (String, i32)> {
    let (file, name) = open_list(path).map_err(|m| {
        (
            format!("We encountered a problem while processing the option '--metalink-file': {m}"),
            28,
        )
    })?;
    let opts = &s.config.download;
    let m = source::open(&file, &name, opts, opts.metalink.base_uri.as_deref())?;
    if m.matched == 0 {
        ringdl::ui::emit("No file matched with your preference.\n");
    }
    Ok(m)
}

/// `-S`: the files of `-M`'s Metalink, or of each Metalink file named on the command line, as
/// aria2c lists them (`--select-file` not applied; the language, OS and version filters are).
fn show_files(s: &Settings, console: &mut Console) -> i32 {
    console.finish();
    let opts = &s.config.download.metalink;
    let list = |file: &std::fs::File, name: &str| source::list(file, name, opts, &mut |t| emit(t));
    if let Some(path) = &s.metalink_file {
        let shown = open_list(path)
            .map_err(|m| (m, 28))
            .and_then(|(file, name)| list(&file, &name));
        return match shown {
            Ok(()) => 0,
            Err((m, code)) => {
                eprintln!("{m}");
                code
            }
        };
    }
    // Each file named, as aria2c does: one that is not a Metalink is said and passed over.
    for path in &s.uris {
        emit(&format!(">>> Printing the contents of file '{path}'...\n"));
        let is_xml = std::fs::read(path)
            .map(|b| b.starts_with(b"<?xml") || b.trim_ascii_start().starts_with(b"<metalink"))
            .unwrap_or(false);
        if !is_xml {
            emit("This file is neither Torrent nor Metalink file. Skipping.\n\n");
            continue;
        }
        if let Err(m) = open_list(path).and_then(|(f, n)| list(&f, &n).map_err(|e| e.0)) {
            emit(&format!("{m}\n\n"));
        }
    }
    0
}

/// Writes a session (`--save-session` without RPC) as aria2c does at exit, even empty; a failure
/// is said and changes no exit code. Written beside and renamed over, so a kill never leaves half
/// a list (which is often the `-i` list it replaces).
fn save_session(path: &std::path::Path, text: &str, console: &mut Console) {
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".ringdl-tmp");
    let tmp = std::path::PathBuf::from(tmp);
    let saved = std::fs::write(&tmp, text).and_then(|()| std::fs::rename(&tmp, path));
    let shown = path.display();
    match saved {
        Ok(()) => console.notice(&format!("Serialized session to '{shown}' successfully.")),
        Err(_) => {
            let _ = std::fs::remove_file(&tmp);
            console.notice(&format!("Failed to serialize session to '{shown}'."));
        }
    }
}

/// The results table (`--download-result`).
fn show_results(settings: &Settings, console: &mut Console, summary: &ringdl::engine::Summary) {
    let rows: Vec<ResultRow> = summary
        .results
        .iter()
        .map(|o| ResultRow {
            gid: o.gid,
            status: if o.removed {
                Status::Removed
            } else if !o.finished {
                Status::InProgress
            } else if o.code == ExitCode::OK {
                Status::Ok
            } else {
                Status::Err
            },
            avg_speed: (o.bytes > 0).then(|| (o.bytes as f64 / o.seconds.max(0.001)) as u64),
            path_or_uri: match &o.path {
                Some(p) => p.display().to_string(),
                None => o.first_uri.clone(),
            },
            percent: o.total.map(|t| {
                (o.bytes * 100)
                    .checked_div(t)
                    .map_or(100, |p| p.min(100) as u8)
            }),
        })
        .collect();
    console.results(&rows, settings.download_result);
}

/// aria2's exit code for a run.
fn exit_code(summary: &ringdl::engine::Summary) -> i32 {
    // aria2: the last error among finished downloads wins; unfinished ones without errors give 7.
    let code = match summary.last_error {
        Some(c) => c,
        None if summary.unfinished > 0 => ExitCode::UNFINISHED,
        None => ExitCode::OK,
    };
    i32::from(code.0)
}

/// Daemon mode (`--enable-rpc`): the command line's and `-i`'s downloads are queued (an entry's
/// `gid=` and `pause=true` kept, so a saved session comes back as it was), `-D` detaches, and the
/// engine serves RPC until `aria2.shutdown` or a signal.
fn serve(settings: &Settings, console: &mut Console) -> i32 {
    let rpc = match settings.config.rpc.as_ref() {
        Some(r) => r,
        None => return 1,
    };
    let one = |uris: Vec<String>, out: Option<String>| {
        let out_def = cli::defs::by_name("out");
        ringdl::daemon::Pending {
            gid: settings.config.download.gid.unwrap_or(0),
            uris,
            options: out.zip(out_def).map(|(v, d)| (d, v)).into_iter().collect(),
            paused: rpc.pause,
            known: None,
            settling: false,
        }
    };
    // `-M`'s Metalink and those named on the command line: their files are queued first, each
    // with its name and digest (as `aria2.addMetalink` queues them).
    let mut documents: Vec<String> = settings.metalink_file.iter().cloned().collect();
    documents.extend(
        settings
            .uris
            .iter()
            .filter(|u| ringdl::metalink::is_document_file(u))
            .cloned(),
    );
    let mut metalinks: Vec<Downloads> = Vec::new();
    for path in &documents {
        match open_metalink(settings, path) {
            Ok(m) => metalinks.push(m),
            Err((msg, code)) => {
                console.finish();
                eprintln!("{msg}");
                return code;
            }
        }
    }
    let mut plain = settings.clone();
    plain
        .uris
        .retain(|u| !ringdl::metalink::is_document_file(u));
    let settings = &plain;
    let metalink_pending = metalinks.into_iter().flatten().map(move |job| {
        let mut p = one(job.uris, None);
        p.gid = 0;
        p.options.extend(
            job.own
                .iter()
                .filter_map(|(n, v)| cli::defs::by_name(n).map(|d| (d, v.clone()))),
        );
        p
    });
    // The list is checked whole first (as in a normal run: a bad entry stops everything before
    // anything starts); then it is read again as the queue fills, each entry keeping its own
    // option lines, `gid=` and `pause=true`: a session of a million entries is never held whole.
    let list = match open_input(settings, console) {
        Ok(l) => l,
        Err((m, code)) => {
            console.finish();
            eprintln!("{m}");
            return code;
        }
    };
    let pending: Box<dyn Iterator<Item = ringdl::daemon::Pending> + '_> = match list {
        Some(list) => {
            if let Err(m) = rewound(&list.file, &list.name) {
                console.finish();
                eprintln!("{m}");
                return 1;
            }
            // With -P an entry's patterns stand for mirrors of one download, or with -Z for a
            // download each, as in a normal run (and in aria2c's daemon).
            let patterns = match (settings.parameterized_uri, settings.force_sequential) {
                (false, _) => Patterns::Off,
                (true, false) => Patterns::Mirrors,
                (true, true) => Patterns::Each,
            };
            let jobs = list.jobs(settings.config.download.clone(), patterns, Rc::default());
            Box::new(jobs.map(move |job| {
                let mut p = one(job.uris, None);
                for (name, v) in job.own {
                    match (name, cli::defs::by_name(name)) {
                        ("gid", _) => p.gid = cli::parse_gid(&v).unwrap_or(0),
                        ("pause", _) => p.paused = v == "true",
                        (_, Some(def)) => p.options.push((def, v)),
                        // (Every name came from the option table.)
                        (_, None) => {}
                    }
                }
                p
            }))
        }
        // The command line's URIs as a normal run takes them: mirrors of one file, a download
        // each with -Z (`-o` then ignored), patterns expanded with -P.
        None => match command_line_jobs(settings) {
            Ok((jobs, _)) => Box::new(jobs.map(move |job| one(job.uris, job.opts.out))),
            Err(msg) => {
                console.finish();
                eprintln!("{msg}");
                return 1;
            }
        },
    };
    if rpc.secret.is_none() && rpc.user.is_none() {
        console.log(
            cli::LogLevel::Warn,
            "Neither --rpc-secret nor a combination of --rpc-user and --rpc-passwd is set. This is insecure. It is extremely recommended to specify --rpc-secret with the adequate secrecy or now deprecated --rpc-user and --rpc-passwd.",
        );
    }
    // The certificate is loaded before detaching, so a bad one is reported where it was given.
    let tls = match secure_rpc(rpc) {
        Ok(t) => t,
        Err(m) => {
            console.finish();
            eprintln!("ringdl: {m}");
            return 1;
        }
    };
    if tls.is_some() {
        console.notice("RPC transport will be encrypted.");
    }
    let mut settings = settings.clone();
    if settings.daemon {
        // The working directory becomes /: a relative --dir is taken from where ringdl started.
        if settings.config.download.dir.is_relative() {
            if let Ok(cwd) = std::env::current_dir() {
                settings.config.download.dir = cwd.join(&settings.config.download.dir);
            }
        }
        if let Err(e) = ringdl::engine::sys::daemonize() {
            console.finish();
            eprintln!("ringdl: cannot run as a daemon: {e}");
            return 1;
        }
    }
    let settings = &settings;
    let Some(daemon) =
        ringdl::daemon::Daemon::new(&settings.config, metalink_pending.chain(pending))
    else {
        return 1;
    };
    let summary = match engine::serve(&settings.config, Box::new(daemon), tls, console) {
        Ok(s) => s,
        Err(e) => {
            console.finish();
            eprintln!("ringdl: {e}");
            return 1;
        }
    };
    if summary.emergency {
        return i32::from(ExitCode::UNFINISHED.0);
    }
    show_results(settings, console, &summary);
    exit_code(&summary)
}

/// `--rpc-secure`'s certificate and key, loaded (aria2's words when either is missing or bad).
fn secure_rpc(
    rpc: &cli::RpcSettings,
) -> Result<Option<ringdl::tls::server::ServerTlsConfig>, String> {
    if !rpc.secure {
        return Ok(None);
    }
    let (Some(cert), Some(key)) = (&rpc.certificate, &rpc.private_key) else {
        return Err(
            "Specify --rpc-certificate and --rpc-private-key options in order to use secure RPC."
                .to_string(),
        );
    };
    ringdl::tls::server::ServerTlsConfig::load(cert, key)
        .map(Some)
        .map_err(|e| format!("Loading private key and/or certificate for secure RPC failed: {e}"))
}

/// `-v`: laid out as aria2c's, whose `Enabled Features:` and `Hash Algorithms:` lines programs read
/// (apt-fast verifies packages only with the algorithms that line names).
fn version_text(engine: cli::EngineChoice) -> String {
    let hashes: Vec<&str> = ringdl::store::checksum::Kind::ALL
        .iter()
        .map(|k| k.name())
        .collect();
    format!(
        "ringdl version {}\n\
         aria2c-compatible command line (aria2 1.36/1.37)\n\
         \n\
         ** Configuration **\n\
         Enabled Features: Async DNS, GZip, HTTPS, Message Digest, Metalink, SFTP\n\
         Hash Algorithms: {}\n\
         Libraries: rustls/{}\n\
         Engine: {}\n\
         Not supported: BitTorrent, XML-RPC, Firefox3 cookies\n",
        env!("CARGO_PKG_VERSION"),
        hashes.join(", "),
        "0.23",
        engine::engine_report(engine)
    )
}

/// Mirrors of one file for `-P` without `-Z` past this many are refused: one download with a
/// million mirrors is no use, and `-Z` makes each its own download, made as it is needed.
const MAX_PATTERN_MIRRORS: u64 = 10_000;

/// The command line's downloads, made as they are needed (`-P -Z` may stand for millions).
enum CommandLineJobs {
    None,
    One(Option<Job>),
    Each {
        uris: Box<dyn Iterator<Item = String>>,
        opts: DownloadOptions,
    },
}

impl Iterator for CommandLineJobs {
    type Item = Job;

    fn next(&mut self) -> Option<Job> {
        match self {
            CommandLineJobs::None => None,
            CommandLineJobs::One(j) => j.take(),
            CommandLineJobs::Each { uris, opts } => uris.next().map(|u| Job {
                uris: vec![u],
                opts: opts.clone(),
                own: Vec::new(),
                restarted: false,
            }),
        }
    }
}

/// The command line's URIs: mirrors of one file, or with `-Z` one download each (`-o` ignored);
/// with `-P` each URI is a pattern standing for many. The downloads and how many there are; `Err`
/// is a pattern aria2c would refuse, in its words.
fn command_line_jobs(s: &Settings) -> Result<(CommandLineJobs, usize), String> {
    if s.uris.is_empty() {
        return Ok((CommandLineJobs::None, 0));
    }
    let (uris, count): (Box<dyn Iterator<Item = String>>, u64) = if s.parameterized_uri {
        let expansions = s
            .uris
            .iter()
            .map(|u| cli::paramed::expand(u))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| format!("ringdl: {e}"))?;
        let count = expansions
            .iter()
            .map(cli::paramed::Expansion::count)
            .fold(0u64, u64::saturating_add);
        (Box::new(expansions.into_iter().flatten()), count)
    } else {
        (Box::new(s.uris.clone().into_iter()), s.uris.len() as u64)
    };
    if count == 0 {
        return Ok((CommandLineJobs::None, 0));
    }
    let count_usize = usize::try_from(count).unwrap_or(usize::MAX);
    if s.force_sequential {
        let mut opts = s.config.download.clone();
        opts.out = None;
        return Ok((CommandLineJobs::Each { uris, opts }, count_usize));
    }
    if count > MAX_PATTERN_MIRRORS {
        return Err(format!(
            "ringdl: the URIs stand for {count} mirrors of one file; give -Z to make each its own download"
        ));
    }
    let job = Job {
        uris: uris.collect(),
        opts: s.config.download.clone(),
        own: Vec::new(),
        restarted: false,
    };
    Ok((CommandLineJobs::One(Some(job)), 1))
}

/// An `-i` list, open. It is read once to check every entry (so nothing starts half-configured) and
/// count them, then again lazily as downloads start. Standard input is first spooled to an unlinked
/// temporary file, so it can be read twice too; memory stays flat either way.
/// What `-P` makes of an `-i` list's URIs.
#[derive(Clone, Copy)]
enum Patterns {
    Off,
    /// Each entry's patterns stand for mirrors of its one file.
    Mirrors,
    /// `-Z`: each URI they stand for is a download.
    Each,
}

struct InputList {
    name: String,
    file: std::fs::File,
    count: usize,
}

fn open_list(path: &str) -> Result<(std::fs::File, String), String> {
    if path == "-" {
        return spool(&mut std::io::stdin().lock(), "-")
            .map_err(|e| format!("Failed to read the input list from stdin, cause: {e}"));
    }
    let not_found =
        || format!("Failed to open the file {path}, cause: File not found or it is a directory");
    let meta = std::fs::metadata(path).map_err(|_| not_found())?;
    if meta.is_dir() {
        return Err(not_found());
    }
    let mut file = std::fs::File::open(path).map_err(|_| not_found())?;
    if meta.is_file() {
        return Ok((file, path.to_string()));
    }
    // A pipe (`-i <(...)`), a device (`/dev/null`): read once, as aria2c reads them, into a
    // private file the list can be read from twice (its count, then its entries).
    spool(&mut file, path).map_err(|e| format!("Failed to read the file {path}, cause: {e}"))
}

/// Copies a list that can be read only once into an unnamed temporary file.
fn spool(from: &mut impl std::io::Read, name: &str) -> std::io::Result<(std::fs::File, String)> {
    let spool = std::env::temp_dir().join(format!("ringdl-input-{}", std::process::id()));
    let mut file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create_new(true)
        .open(&spool)?;
    let _ = std::fs::remove_file(&spool);
    std::io::copy(from, &mut file)?;
    Ok((file, name.to_string()))
}

/// A reader of the list from its start.
fn rewound(
    file: &std::fs::File,
    name: &str,
) -> Result<InputReader<BufReader<std::fs::File>>, String> {
    use std::io::Seek;
    let mut f = file
        .try_clone()
        .map_err(|e| format!("Failed to read the file {name}, cause: {e}"))?;
    f.rewind()
        .map_err(|e| format!("Failed to read the file {name}, cause: {e}"))?;
    Ok(InputReader::new(BufReader::new(f), name))
}

fn open_input(s: &Settings, console: &mut Console) -> Result<Option<InputList>, (String, i32)> {
    let Some(path) = s.input_file.clone() else {
        return Ok(None);
    };
    let (file, name) = open_list(&path).map_err(|m| (m, 1))?;
    let mut reader = rewound(&file, &name).map_err(|m| (m, 1))?;
    let mut count = 0usize;
    while let Some(entry) = reader.next_entry() {
        say_notes(&mut reader, console);
        match entry {
            // With -P each URI is a pattern: the entry stands for its expansions (downloads of
            // their own with -Z, else mirrors of one file, as on the command line).
            Ok(e) if s.parameterized_uri => {
                let n = e
                    .uris
                    .iter()
                    .map(|u| cli::paramed::expand(u).map(|x| cli::paramed::Expansion::count(&x)))
                    .try_fold(0u64, |acc, n| n.map(|n| acc.saturating_add(n)))
                    .map_err(|e| (format!("{name}: {e}"), 1))?;
                if s.force_sequential {
                    count = count.saturating_add(usize::try_from(n).unwrap_or(usize::MAX));
                } else if n > MAX_PATTERN_MIRRORS {
                    return Err((
                        format!(
                            "{name}: an entry's URIs stand for {n} mirrors of one file; give -Z to make each its own download"
                        ),
                        1,
                    ));
                } else if n > 0 {
                    count += 1;
                }
            }
            Ok(e) => {
                // A Metalink file named in an entry stands for its downloads (with the entry's
                // options); one that cannot be read is said and left out, as aria2c does.
                let (docs, uris) = split_documents(e.uris.clone());
                count += usize::from(!uris.is_empty());
                let env = cli::Env::from_process();
                let opts = s.config.download.with_entry(&e.options, &env);
                for path in docs {
                    match metalink_of_entry(&path, &opts) {
                        Ok(m) => count += m.count,
                        Err(msg) => console.log(cli::LogLevel::Error, &msg),
                    }
                }
            }
            Err(e) => {
                let code = if e.starts_with("We encountered") {
                    28
                } else {
                    1
                };
                return Err((e, code));
            }
        }
    }
    say_notes(&mut reader, console);
    Ok(Some(InputList { name, file, count }))
}

/// A Metalink file's download with the options of the entry that named (or fetched) the
/// Metalink, for the session: the entry's own, then the file's name and digest (the entry's
/// name, digest, GID and file selection were the Metalink's).
fn with_entry_options(entry: &[(&'static str, String)], mut job: Job) -> Job {
    let mut all: Vec<(&'static str, String)> = entry
        .iter()
        .filter(|(n, _)| !matches!(*n, "out" | "checksum" | "gid" | "select-file" | "index-out"))
        .cloned()
        .collect();
    all.append(&mut job.own);
    job.own = all;
    job
}

/// An entry's URIs parted into the local Metalink files among them and the rest.
fn split_documents(uris: Vec<String>) -> (Vec<String>, Vec<String>) {
    uris.into_iter()
        .partition(|u| !u.contains("://") && ringdl::metalink::is_document_file(u))
}

/// The downloads of a Metalink file an `-i` entry names, with the entry's options; `Err`: the
/// line saying why it was left out.
fn metalink_of_entry(path: &str, opts: &cli::DownloadOptions) -> Result<Downloads, String> {
    let file = std::fs::File::open(path)
        .map_err(|e| format!("Failed to open the Metalink {path}, cause: {e}"))?;
    source::open(&file, path, opts, opts.metalink.base_uri.as_deref()).map_err(|e| e.0)
}

/// Says what the list's reader found so far: unknown option lines (WARN), lines that are no URI
/// (ERROR).
fn say_notes<R: std::io::BufRead>(reader: &mut InputReader<R>, console: &mut Console) {
    for w in reader.warnings.drain(..) {
        console.log(cli::LogLevel::Warn, &w);
    }
    for e in reader.errors.drain(..) {
        console.log(cli::LogLevel::Error, &e);
    }
}

impl InputList {
    /// The list's downloads, read lazily. A read error stops the list and is kept in `error`.
    fn jobs(
        self,
        base: cli::DownloadOptions,
        patterns: Patterns,
        error: Rc<RefCell<Option<String>>>,
    ) -> Box<dyn Iterator<Item = Job>> {
        let reader = match rewound(&self.file, &self.name) {
            Ok(r) => r,
            Err(e) => {
                *error.borrow_mut() = Some(e);
                return Box::new(std::iter::empty());
            }
        };
        let env = cli::Env::from_process();
        let entries = reader.map_while(move |entry| match entry {
            Ok(e) => Some(Job {
                opts: base.with_entry(&e.options, &env),
                uris: e.uris,
                own: e.options.iter().map(|(d, v)| (d.name, v.clone())).collect(),
                restarted: false,
            }),
            Err(msg) => {
                *error.borrow_mut() = Some(msg);
                None
            }
        });
        // A Metalink file an entry names stands for its downloads (checked when counted).
        let entries = entries.flat_map(|job| -> Box<dyn Iterator<Item = Job>> {
            let (docs, uris) = split_documents(job.uris.clone());
            if docs.is_empty() {
                return Box::new(std::iter::once(job));
            }
            let (opts, own) = (job.opts.clone(), job.own.clone());
            let metalinks = docs
                .into_iter()
                .filter_map(move |path| metalink_of_entry(&path, &opts).ok())
                .flatten()
                .map(move |j| with_entry_options(&own, j));
            let rest = (!uris.is_empty()).then_some(Job { uris, ..job });
            Box::new(rest.into_iter().chain(metalinks))
        });
        match patterns {
            Patterns::Off => Box::new(entries),
            // Every pattern was checked when the list was counted.
            Patterns::Mirrors => Box::new(entries.filter_map(|job| {
                let uris: Vec<String> = job
                    .uris
                    .iter()
                    .filter_map(|u| cli::paramed::expand(u).ok())
                    .flatten()
                    .collect();
                (!uris.is_empty()).then_some(Job { uris, ..job })
            })),
            // -Z: each URI an entry's patterns stand for is its own download, made only as the
            // engine takes it.
            Patterns::Each => Box::new(entries.flat_map(|job| {
                let Job {
                    uris,
                    opts,
                    own,
                    restarted,
                } = job;
                uris.into_iter()
                    .filter_map(|u| cli::paramed::expand(&u).ok())
                    .flatten()
                    .map(move |u| Job {
                        uris: vec![u],
                        opts: opts.clone(),
                        own: own.clone(),
                        restarted,
                    })
            })),
        }
    }
}
