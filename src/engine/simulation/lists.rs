//! Input lists under the simulation: several jobs, as `-i` gives them (each with its own mirrors,
//! `out=` and sometimes `checksum=`), run with `-j1` to `-j3` over shared mirrors and the same
//! faults as single downloads. This is where downloads end while others run, and where a finished
//! download's place is given to the next job while what it started (a control-file save) may still
//! be running. After every run: each download reported complete is exact; each other one left a
//! control file that claims only right bytes; one whose every mirror answers 404 ends with 3; a
//! wrong digest never passes; nothing hung, panicked, leaked a block or was left in flight.
//!
//! `RINGDL_SIM_LIST_SEED=S` replays one seed, printing what it drew.
use super::*;
use crate::cli::DownloadOptions;

/// Seeds the CI test runs.
const LIST_SEEDS: u64 = 300;

/// The address that never answers (every job's silent mirror).
pub(super) const SILENT: usize = 3;

pub(super) struct ListJob {
    pub(super) name: String,
    pub(super) data: Rc<Vec<u8>>,
    /// (address, what it serves for this job's path).
    pub(super) mirrors: Vec<(usize, Mirror)>,
    /// `checksum=`: `Some(true)` the right digest, `Some(false)` a wrong one.
    pub(super) checksum: Option<bool>,
    /// What is on disk under its name before the run.
    pub(super) prior: Prior,
    /// Its mirrors speak the toy protocol (with data connections, kept after each transfer).
    pub(super) toy: bool,
}

impl ListJob {
    pub(super) fn path(&self) -> String {
        format!("/d/{}", self.name)
    }

    pub(super) fn uris(&self) -> Vec<String> {
        self.mirrors
            .iter()
            .map(|&(a, _)| {
                let scheme = if self.toy { "toy" } else { "http" };
                format!("{scheme}://{}{}", addr(a), self.path())
            })
            .collect()
    }
}

pub(super) struct ListScenario {
    pub(super) jobs: Vec<ListJob>,
    pub(super) args: Vec<String>,
    pub(super) faults: Faults,
    pub(super) budget: usize,
    /// The servers speak the toy protocol, sending the bytes on data connections and keeping
    /// their conversations' connections for the next file (as FTP servers do).
    pub(super) toy: bool,
}

fn mirror(rng: &mut Rng) -> Mirror {
    match rng.below(14) {
        0..=8 => Mirror::Good {
            ranges: rng.below(5) != 0,
            framing: match rng.below(8) {
                0 => Framing::Chunked,
                1 => Framing::UntilClose,
                _ => Framing::Length,
            },
        },
        9 | 10 => Mirror::NotFound,
        11 => Mirror::Unavailable,
        12 => Mirror::Redirect,
        _ => Mirror::Silent,
    }
}

impl ListScenario {
    pub(super) fn draw(seed: u64) -> ListScenario {
        let mut rng = Rng::new(seed ^ 0x5ca1_ab1e_0000_0002);
        let jobs: Vec<ListJob> = (0..2 + rng.below(5))
            .map(|j| {
                let len = match rng.below(6) {
                    0 => [0, 1, 4096, 16_385][rng.below(4) as usize],
                    1..=3 => rng.below(400_000) as usize,
                    _ => 1_000_000 + rng.below(1_500_000) as usize,
                };
                let mut mirrors: Vec<(usize, Mirror)> = Vec::new();
                for _ in 0..1 + rng.below(2) {
                    let m = mirror(&mut rng);
                    let a = match m {
                        Mirror::Silent => SILENT,
                        _ => rng.below(3) as usize,
                    };
                    if mirrors.iter().all(|&(b, _)| b != a) {
                        mirrors.push((a, m));
                    }
                }
                let checksum = match rng.below(10) {
                    0 => Some(false),
                    1..=3 => Some(true),
                    _ => None,
                };
                let prior = super::list_prior(seed, j, len);
                ListJob {
                    name: format!("f{j}.bin"),
                    data: Rc::new(content(&mut rng, len)),
                    mirrors,
                    checksum,
                    prior,
                    toy: false,
                }
            })
            .collect();
        // A quarter of the lists are of toy servers (a stream of its own), whose redirects are
        // 404s (the protocol has none).
        let toy = Rng::new(seed ^ 0x5ca1_ab1e_0000_0003).below(4) == 0;
        let mut jobs = jobs;
        for j in jobs.iter_mut().filter(|_| toy) {
            j.toy = true;
            for (_, m) in j.mirrors.iter_mut().filter(|(_, m)| *m == Mirror::Redirect) {
                *m = Mirror::NotFound;
            }
        }
        let mut args: Vec<String> = ["--no-conf", "-q", "-k1M", "--timeout=5"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        args.push("--connect-timeout=3".into());
        args.push(format!("-j{}", 1 + rng.below(3)));
        args.push(format!("-s{}", [1, 2, 4][rng.below(3) as usize]));
        args.push(format!("-x{}", [1, 2, 4][rng.below(3) as usize]));
        args.push(format!("--max-tries={}", 1 + rng.below(3)));
        args.push(format!("--retry-wait={}", rng.below(2)));
        let alloc = ["none", "prealloc", "trunc", "falloc"][rng.below(4) as usize];
        args.push(format!("--file-allocation={alloc}"));
        // Files left on disk are gone on from, as a script rerunning its list with -c does (a
        // file without a control file would otherwise be kept and the download renamed).
        if jobs.iter().any(|j| j.prior != Prior::Nothing) {
            args.push("-c".into());
        }
        let mut faults = draw_faults(&mut rng);
        match rng.below(6) {
            0 | 1 => faults.kill_at = Some(1 + rng.below(600)),
            2 => faults.interrupts.push(1 + rng.below(600)),
            _ => {}
        }
        faults.ns_per_byte = super::link_rate(seed);
        faults.uncached_refused = super::uncached_refusal(seed);
        faults.writeback_error = super::writeback_failure(seed);
        // Misbehaving servers matter most here: the next job's first request on a kept-alive
        // connection has no range that a stray response could fail to match.
        super::misbehaving_servers(seed, &mut faults, None);
        ListScenario {
            jobs,
            args,
            faults,
            budget: [1 << 20, 2 << 20, 8 << 20][rng.below(3) as usize],
            toy,
        }
    }

    pub(super) fn servers(&self) -> HashMap<SocketAddr, HashMap<String, Route>> {
        let mut servers: HashMap<SocketAddr, HashMap<String, Route>> = HashMap::new();
        for job in &self.jobs {
            let good = job
                .mirrors
                .iter()
                .find(|(_, m)| matches!(m, Mirror::Good { .. }));
            for &(a, m) in &job.mirrors {
                let route = match m {
                    Mirror::Good { ranges, framing } => Route::File {
                        data: job.data.clone(),
                        etag: "\"v1\"".into(),
                        ranges,
                        framing,
                    },
                    Mirror::Corrupt => unreachable!("an input list's jobs draw no corrupt mirror"),
                    Mirror::NotFound => Route::Status(404),
                    Mirror::Unavailable => Route::Status(503),
                    Mirror::Redirect => {
                        let to = good.map_or(a, |&(g, _)| g);
                        Route::Redirect(format!("http://{}{}", addr(to), job.path()))
                    }
                    Mirror::Silent => continue,
                };
                servers
                    .entry(addr(a))
                    .or_default()
                    .insert(job.path(), route);
            }
        }
        servers
    }

    fn list_jobs(&self, base: &DownloadOptions) -> Vec<Job> {
        self.jobs
            .iter()
            .map(|job| {
                let mut opts = base.clone();
                opts.out = Some(job.name.clone());
                opts.checksum = job.checksum.map(|right| {
                    let digest = if right {
                        sha256_hex(&job.data)
                    } else {
                        "0".repeat(64)
                    };
                    format!("sha-256={digest}")
                });
                Job {
                    uris: job.uris(),
                    opts,
                    own: Vec::new(),
                    restarted: false,
                }
            })
            .collect()
    }
}

/// How the downloads of the seeds run so far ended.
#[derive(Default)]
struct Tally {
    complete: usize,
    failed: usize,
    cut: usize,
}

/// Runs one list seed; `Err` says what broke.
fn run_list_seed(seed: u64, verbose: bool, tally: &mut Tally) -> Result<(), String> {
    let sc = ListScenario::draw(seed);
    if verbose {
        eprintln!(
            "list seed {seed}: args {:?}, faults {:?}, budget {}",
            sc.args, sc.faults, sc.budget
        );
        for job in &sc.jobs {
            eprintln!(
                "  {}: {} bytes, mirrors {:?}, checksum {:?}, prior {:?}",
                job.name,
                job.data.len(),
                job.mirrors,
                job.checksum,
                job.prior
            );
        }
    }
    let dir = tempfile::tempdir().map_err(|e| format!("no temporary directory: {e}"))?;
    let mut before = Vec::new();
    let mut before_ctl = Vec::new();
    for job in &sc.jobs {
        let path = dir.path().join(&job.name);
        before.push(job.prior.make_at(&path, &job.data)?);
        before_ctl.push(std::fs::read(control::control_path(&path)).ok());
    }
    let world = Rc::new(RefCell::new(World {
        servers: sc.servers(),
        blackholes: vec![addr(SILENT)],
        faults: sc.faults.clone(),
        toy_data: sc.toy,
        toy_keep: sc.toy,
        ..World::default()
    }));
    if before.iter().any(Option::is_some) {
        *world
            .borrow_mut()
            .fired
            .entry("a file on disk before a list's run")
            .or_default() += 1;
    }
    // The options every job starts from are the command line's (with its `-d`).
    let mut argv = sc.args.clone();
    argv.extend(["-d".to_string(), dir.path().display().to_string()]);
    argv.push("http://127.0.0.1/".into());
    let base = match cli::parse_args(argv.iter().map(std::ffi::OsString::from)) {
        Ok(Command::Download(s)) => s.config.download,
        _ => return Err(format!("bad command line {argv:?}")),
    };
    let first_uris = sc.jobs[0].uris();
    let ended = run(
        sc.budget,
        dir.path(),
        &sc.args,
        &first_uris,
        Some(sc.list_jobs(&base)),
        world.clone(),
        seed,
    )?;
    if verbose {
        eprintln!("requests: {:?}", world.borrow().requests);
    }
    let summary = match ended {
        Ended::Stopped(Stop::Hung(why)) => {
            let steps = world.borrow().steps;
            return Err(format!("hung after {steps} steps: {why}"));
        }
        Ended::Stopped(Stop::Killed) => None,
        Ended::Done(summary) => Some(summary),
    };
    let interrupted = !sc.faults.interrupts.is_empty();
    let lost_writes = sc.faults.job_errors > 0 || sc.faults.writeback_error > 0;
    for ((job, before), before_ctl) in sc.jobs.iter().zip(&before).zip(&before_ctl) {
        // No byte a file had before the run is lost, unless a digest said the file is not the
        // server's (then it is fetched again from nothing, as aria2c does).
        if let (Some(before), None) = (before, job.checksum) {
            let now = std::fs::read(dir.path().join(&job.name)).unwrap_or_default();
            if !super::kept_prior(job.prior, before, &now, &job.data, lost_writes) {
                return Err(format!(
                    "{} over {:?}: the file went from {} to {} bytes, its bytes not kept",
                    job.name,
                    job.prior,
                    before.len(),
                    now.len()
                ));
            }
        }
        let first = job.uris().into_iter().next().unwrap_or_default();
        let outcome = summary
            .as_ref()
            .and_then(|s| s.results.iter().find(|o| o.first_uri == first));
        let mirrors: Vec<Mirror> = job.mirrors.iter().map(|(_, m)| *m).collect();
        let name = super::landed(
            dir.path(),
            &job.name,
            before.as_deref(),
            before_ctl.as_deref(),
            super::lengthless(&mirrors),
        )
        .map_err(|e| format!("{}: {e}", job.name))?;
        let what = format!("{name} ({} bytes)", job.data.len());
        if verbose {
            eprintln!("{what}: {:?}", outcome.map(|o| (o.code.0, o.finished)));
        }
        match outcome {
            Some(o) if o.code.0 == 0 && o.finished => tally.complete += 1,
            Some(_) => tally.failed += 1,
            None => tally.cut += 1,
        }
        match outcome {
            Some(o) if o.code.0 == 0 && o.finished => {
                if job.checksum == Some(false) {
                    return Err(format!("{what}: a wrong digest passed"));
                }
                check_complete_of(dir.path(), &name, &job.data, &what)?;
            }
            Some(o) => {
                let all_404 = job.mirrors.iter().all(|(_, m)| *m == Mirror::NotFound);
                if all_404 && !interrupted && o.code.0 != 3 {
                    return Err(format!("{what}: only 404s, exit {} (aria2: 3)", o.code.0));
                }
                check_claims_of(dir.path(), &name, &job.data)
                    .map_err(|e| format!("{what}: {e}"))?;
            }
            None if summary.is_some() && !interrupted => {
                return Err(format!("{what}: no result"));
            }
            None => {
                check_claims_of(dir.path(), &name, &job.data).map_err(|e| format!("{what}: {e}"))?
            }
        }
    }
    Ok(())
}

#[test]
fn simulated_lists_end_complete_or_resumable() {
    if let Some(seed) = env_u64("RINGDL_SIM_LIST_SEED") {
        if let Err(e) = run_list_seed(seed, true, &mut Tally::default()) {
            panic!("list seed {seed}: {e}");
        }
        return;
    }
    let count = env_u64("RINGDL_SIM_SEEDS").map_or(LIST_SEEDS, |n| n / 3);
    let first = env_u64("RINGDL_SIM_FIRST").unwrap_or(1);
    let started = std::time::Instant::now();
    let mut tally = Tally::default();
    let failures = run_block(
        "list seed",
        ("RINGDL_SIM_LIST_SEED", "lists"),
        first,
        count,
        |seed| run_list_seed(seed, false, &mut tally),
    );
    eprintln!(
        "list simulation: seeds {first}..{} in {:.1} s, {} failed; downloads: {} complete, {} \
         failed, {} cut by a kill or Ctrl-C; faults fired: {}",
        first.saturating_add(count),
        started.elapsed().as_secs_f64(),
        failures.len(),
        tally.complete,
        tally.failed,
        tally.cut,
        super::fired_report()
    );
    assert!(failures.is_empty(), "list seeds failed: {failures:?}");
}
