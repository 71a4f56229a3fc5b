//! What a run must have left: a download reported complete exact, every claim of a control file
//! right and on disk, bytes found before the run kept, aria2's exit code where the scenario decides
//! it; and a seed's whole check, its first run and the healed `-c` run after it.
use super::*;

/// Whether `now`, the file after a run, kept every byte of `before`, what a prior state put there:
/// `-c` writes again from the last whole 16 KiB block of a file without a control file (O_DIRECT
/// writes whole blocks; a padded last block may cover bytes past what arrived), and a failed sync
/// or writeback (`lost_writes`) may cut the file back to what it had before those writes. A file
/// that became the source whole kept them too.
pub(super) fn kept_prior(
    prior: Prior,
    before: &[u8],
    now: &[u8],
    source: &[u8],
    lost_writes: bool,
) -> bool {
    let rewritten_from = match prior {
        Prior::Prefix(_) | Prior::Complete => before.len() / 16384 * 16384,
        _ => before.len(),
    }
    .min(before.len());
    let kept = now.len() >= rewritten_from
        && now[..rewritten_from] == before[..rewritten_from]
        && (now.len() >= before.len() || rewritten_from < before.len() || lost_writes);
    kept || now == source
}

/// The name a download of `name` takes when a file of that name is left alone: `f.1.bin`.
pub(super) fn renamed(name: &str) -> String {
    match name.rsplit_once('.') {
        Some((stem, ext)) => format!("{stem}.1.{ext}"),
        None => format!("{name}.1"),
    }
}

/// Where the download of `name`, run over a prior state, put its file: that name, or the renamed
/// one when its first answer said no length, so nothing found could be measured against it
/// (aria2c's rule: the download starts as if nothing had been found, and is renamed). Only a
/// mirror that answers without a length (`lengthless`) can do that, and the file and control
/// file found (`before`, `before_ctl`) must then be exactly as they were.
pub(super) fn landed(
    dir: &Path,
    name: &str,
    before: Option<&[u8]>,
    before_ctl: Option<&[u8]>,
    lengthless: bool,
) -> Result<String, String> {
    let other = renamed(name);
    if !dir.join(&other).exists() {
        return Ok(name.to_string());
    }
    if before.is_none() || !lengthless {
        return Err(format!(
            "renamed to {other}, though nothing was found or every mirror says the length"
        ));
    }
    let path = dir.join(name);
    if std::fs::read(&path).ok().as_deref() != before {
        return Err(format!(
            "renamed to {other}, and the file found was not left alone"
        ));
    }
    let ctl = std::fs::read(control::control_path(&path)).ok();
    if ctl.as_deref() != before_ctl {
        return Err(format!(
            "renamed to {other}, and the control file found was not left alone"
        ));
    }
    Ok(other)
}

/// Whether one of `mirrors` answers a whole body without its length.
pub(super) fn lengthless(mirrors: &[Mirror]) -> bool {
    mirrors
        .iter()
        .any(|m| matches!(m, Mirror::Good { framing, .. } if *framing != Framing::Length))
}

/// The control file next to the output claims only bytes that are on disk and equal `source`.
pub(super) fn check_claims(dir: &Path, source: &[u8]) -> Result<(), String> {
    check_claims_of(dir, NAME, source)
}

/// The same for the file `name`.
pub(super) fn check_claims_of(dir: &Path, name: &str, source: &[u8]) -> Result<(), String> {
    let path = dir.join(name);
    let ctl = control::control_path(&path);
    let cf = match control::load(&ctl) {
        Ok(Some(cf)) => cf,
        Ok(None) => return Ok(()),
        Err(e) => return Err(format!("unreadable control file: {e}")),
    };
    if cf.total_length != source.len() as u64 {
        // A control file for another version of the file (the source changed): it must not be
        // used, which the second run checks; its claims are about bytes of that version.
        return Ok(());
    }
    let on_disk = std::fs::read(&path).map_err(|e| format!("control file but no file: {e}"))?;
    for r in cf.done_ranges() {
        let (a, b) = (r.start as usize, r.end as usize);
        if b > on_disk.len() {
            return Err(format!(
                "the control file claims {a}..{b} but the file has {} bytes",
                on_disk.len()
            ));
        }
        if on_disk[a..b] != source[a..b] {
            let first = (a..b).find(|&i| on_disk[i] != source[i]).unwrap_or(a);
            return Err(format!(
                "the control file claims {a}..{b}, but byte {first} on disk is wrong"
            ));
        }
    }
    Ok(())
}

pub(super) fn check_complete(dir: &Path, source: &[u8], what: &str) -> Result<(), String> {
    check_complete_of(dir, NAME, source, what)
}

/// The file `name` is `source`, byte for byte, and has no control file left.
pub(super) fn check_complete_of(
    dir: &Path,
    name: &str,
    source: &[u8],
    what: &str,
) -> Result<(), String> {
    let path = dir.join(name);
    let got = std::fs::read(&path).map_err(|e| format!("{what}: reported complete, {e}"))?;
    if got.len() != source.len() {
        return Err(format!(
            "{what}: reported complete with {} bytes, the source has {}",
            got.len(),
            source.len()
        ));
    }
    if got != *source {
        let first = (0..got.len()).find(|&i| got[i] != source[i]).unwrap_or(0);
        return Err(format!("{what}: reported complete, byte {first} differs"));
    }
    if control::control_path(&path).exists() {
        return Err(format!("{what}: complete but the control file is left"));
    }
    Ok(())
}

/// Whether `on_disk` is a prefix of `source` (what `-c` may take for data without a control
/// file); `Err` says where it is not.
pub(super) fn is_prefix(on_disk: &[u8], source: &[u8]) -> Result<(), String> {
    if source.starts_with(on_disk) {
        return Ok(());
    }
    let first = (0..on_disk.len())
        .find(|&i| source.get(i) != Some(&on_disk[i]))
        .unwrap_or(0);
    Err(format!("{} bytes, byte {first} wrong", on_disk.len()))
}

thread_local! {
    /// Bytes clients sent when asked, over the runs `check_scenario` made on this thread.
    pub(super) static UPLOADED: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// Every byte the client sent of its download (the toy servers' `WANT`) was the source's.
pub(super) fn uploads_right(world: &Rc<RefCell<World>>) -> Result<(), String> {
    UPLOADED.with(|u| u.set(u.get() + world.borrow().uploaded));
    match world.borrow().upload_errors.first() {
        Some(e) => Err(format!(
            "the client sent bytes that are not the file's: {e}"
        )),
        None => Ok(()),
    }
}

/// The world of a scenario's first run: its servers (silent ones holes), its faults, its TLS.
pub(super) fn first_world(sc: &Scenario) -> Rc<RefCell<World>> {
    Rc::new(RefCell::new(World {
        servers: sc.servers(),
        blackholes: sc.blackholes(),
        faults: sc.faults.clone(),
        tls: server_tls(sc.tls),
        toy_data: sc.toy_data,
        toy_active: sc.toy_active,
        toy_keep: sc.toy_keep,
        toy_upload: sc.toy_upload,
        truth: Some(sc.data.clone()),
        ..World::default()
    }))
}

/// The world of a healed run: one mirror (`origin`'s address) serving `source` with ranges
/// under `etag`, no faults.
pub(super) fn healed_world(
    sc: &Scenario,
    origin: usize,
    source: Rc<Vec<u8>>,
    etag: &str,
) -> Rc<RefCell<World>> {
    let route = Route::File {
        data: source,
        etag: etag.into(),
        ranges: true,
        framing: Framing::Length,
    };
    let servers = HashMap::from([(addr(origin), HashMap::from([(format!("/d/{NAME}"), route)]))]);
    Rc::new(RefCell::new(World {
        servers,
        tls: server_tls(sc.tls),
        toy_data: sc.toy_data,
        toy_active: sc.toy_active,
        toy_keep: sc.toy_keep,
        toy_upload: sc.toy_upload,
        ..World::default()
    }))
}

/// Runs a scenario: the first run, then (unless it finished) the healed `-c` run; `Err` says
/// what broke.
pub(super) fn check_scenario(sc: &Scenario, verbose: bool) -> Result<(), String> {
    let seed = sc.seed;
    if verbose {
        eprintln!(
            "seed {seed}: {} bytes, prior {:?}, mirrors {:?}, args {:?}, faults {:?}, changed: {}, budget {}",
            sc.data.len(),
            sc.prior,
            sc.mirrors,
            sc.args,
            sc.faults,
            sc.changed.as_ref().map_or(0, |c| c.len()),
            sc.budget
        );
    }
    let dir = tempfile::tempdir().map_err(|e| format!("no temporary directory: {e}"))?;
    let before = sc.prior.make(dir.path(), &sc.data)?;
    let before_ctl = std::fs::read(control::control_path(&dir.path().join(NAME))).ok();
    let uris: Vec<String> = (0..sc.mirrors.len()).map(|i| sc.url(i)).collect();
    let world = first_world(sc);
    if let Some((tls13, chacha)) = sc.tls {
        let class = match (tls13, chacha) {
            (true, true) => "https, TLS 1.3, ChaCha20",
            (true, false) => "https, TLS 1.3, AES-GCM",
            (false, true) => "https, TLS 1.2, ChaCha20",
            (false, false) => "https, TLS 1.2, AES-GCM",
        };
        *world.borrow_mut().fired.entry(class).or_default() += 1;
    }
    // What the scenario drew, counted with the faults that fired.
    let trickling = sc
        .args
        .iter()
        .any(|a| a.starts_with("--lowest-speed-limit"));
    let drawn = [
        (sc.prior != Prior::Nothing, "a file on disk before the run"),
        (sc.toy, "the toy protocol"),
        (sc.toy_data, "the toy protocol's data connections"),
        (sc.toy_upload, "the toy protocol's servers asking for bytes"),
        (sc.toy_keep, "the toy protocol's kept connections"),
        (
            sc.toy_active,
            "the toy protocol's data connections from the server",
        ),
        (sc.pieces.is_some(), "piece digests"),
        (sc.corrupt.is_some(), "a mirror serving changed bytes"),
        (trickling, "a server trickling"),
    ];
    for (on, class) in drawn {
        if on {
            *world.borrow_mut().fired.entry(class).or_default() += 1;
        }
    }
    let first = run_with(
        sc.budget,
        dir.path(),
        &sc.args,
        &uris,
        None,
        world.clone(),
        seed,
        None,
        Given::of(sc),
    )?;
    uploads_right(&world).map_err(|e| format!("first run: {e}"))?;
    let steps = world.borrow().steps;
    if verbose {
        let w = world.borrow();
        eprintln!("first run requests: {:?}", w.requests);
    }
    // The first run's own file (the second run goes on with the file found, under its name).
    let name = landed(
        dir.path(),
        NAME,
        before.as_deref(),
        before_ctl.as_deref(),
        lengthless(&sc.mirrors),
    )
    .map_err(|e| format!("first run: {e}"))?;
    // What was on disk before: every byte kept (it is the source's), the file never shorter,
    // unless the run replaced it whole or a digest or a new version of the file said it is not
    // the server's (then it is fetched again from nothing, as aria2c does).
    let refetch_allowed = sc.faults.server.changed_to.is_some()
        || sc.args.iter().any(|a| a.starts_with("--checksum"));
    if let (Some(before), false) = (&before, refetch_allowed) {
        let now = std::fs::read(dir.path().join(NAME)).unwrap_or_default();
        // `-c` writes again from the last whole 16 KiB block of a file without a control file
        // (O_DIRECT writes whole blocks); if a failed sync or writeback made those writes
        // anything, only the part before them is proven, and the file may end there.
        let lost_writes = sc.faults.job_errors > 0 || sc.faults.writeback_error > 0;
        if !kept_prior(sc.prior, before, &now, &sc.data, lost_writes) {
            return Err(format!(
                "first run over {:?}: the file went from {} to {} bytes, its first {} bytes {}",
                sc.prior,
                before.len(),
                now.len(),
                before.len().min(now.len()),
                if now.len() >= before.len() {
                    "changed"
                } else {
                    "cut"
                }
            ));
        }
    }
    match &first {
        Ended::Stopped(Stop::Hung(why)) => {
            return Err(format!("first run hung after {steps} steps: {why}"));
        }
        Ended::Stopped(Stop::Killed) => {}
        Ended::Done(summary) => {
            let outcome = summary.results.first().ok_or("no result")?;
            let code = outcome.code.0;
            if code == 0 && outcome.finished {
                // The file may have changed during this run: it must then be one version whole.
                let mut versions = vec![(&sc.data, "first run")];
                if let Some(v2) = &sc.faults.server.changed_to {
                    versions.push((v2, "first run (new version)"));
                }
                let mut last = Ok(());
                for (source, what) in versions {
                    last = check_complete_of(dir.path(), &name, source, what).or_else(|e| {
                        // A control file whose removal failed stays, true: it claims right bytes.
                        if sc.faults.job_errors > 0 && e.ends_with("the control file is left") {
                            check_claims_of(dir.path(), &name, source)
                        } else {
                            Err(e)
                        }
                    });
                    if last.is_ok() {
                        break;
                    }
                }
                return last;
            }
            let interrupted = !sc.faults.interrupts.is_empty();
            if !(interrupted && code == 0) {
                expect_code(sc, code)?;
            }
        }
    }
    match &sc.faults.server.changed_to {
        Some(v2) => check_claims(dir.path(), &sc.data)
            .or_else(|_| check_claims(dir.path(), v2))
            .map_err(|e| format!("after the first run: the versions are mixed: {e}"))?,
        None => {
            check_claims_of(dir.path(), &name, &sc.data)
                .map_err(|e| format!("after the first run: {e}"))?;
            // A file no control file describes is judged by its length (`-c`): every byte of it
            // must be right. (Checked here, not only by what the second run then makes of it.)
            let path = dir.path().join(&name);
            if !control::control_path(&path).exists() {
                if let Ok(on_disk) = std::fs::read(&path) {
                    is_prefix(&on_disk, &sc.data).map_err(|e| {
                        format!("after the first run: no control file, and the file is not a prefix: {e}")
                    })?;
                }
            }
        }
    }
    if verbose {
        let path = dir.path().join(NAME);
        let cf = control::load(&control::control_path(&path)).ok().flatten();
        eprintln!(
            "first run: {} steps, requests {:?}; file {:?} bytes, control file claims {:?}",
            world.borrow().steps,
            world.borrow().requests,
            std::fs::metadata(&path).map(|m| m.len()).ok(),
            cf.map(|c| c.done_ranges())
        );
    }

    // The second run: one healthy mirror with ranges, no faults, `-c`; the file may have changed
    // (then on the origin that served it).
    let source = sc.changed.clone().unwrap_or_else(|| sc.data.clone());
    let origin = if sc.changed.is_some() {
        sc.mirrors
            .iter()
            .position(|m| matches!(m, Mirror::Good { .. }))
            .unwrap_or(0)
    } else {
        0
    };
    let etag = if sc.changed.is_some() {
        "\"v2\""
    } else {
        "\"v1\""
    };
    let world2 = healed_world(sc, origin, source.clone(), etag);
    let mut args: Vec<String> = sc
        .args
        .iter()
        .filter(|a| !a.starts_with("--checksum"))
        .cloned()
        .collect();
    args.push("-c".into());
    if sc.changed.is_some() {
        // Whatever is on disk may be of the old version: with aria2's defaults a changed file is
        // started over (If-Range) or refused; it is never mixed.
        args.push("--allow-overwrite=true".into());
    }
    let second = run_with(
        sc.budget,
        dir.path(),
        &args,
        &[sc.url(origin)],
        None,
        world2.clone(),
        seed ^ 0xabcd,
        None,
        Given::of(sc),
    )?;
    uploads_right(&world2).map_err(|e| format!("second run: {e}"))?;
    if verbose {
        eprintln!(
            "second run {args:?}: {} steps, requests {:?}",
            world2.borrow().steps,
            world2.borrow().requests
        );
    }
    match second {
        Ended::Stopped(stop) => Err(format!(
            "second run (healed, -c) stopped: {stop:?} after {} steps",
            world2.borrow().steps
        )),
        Ended::Done(summary) => {
            let outcome = summary.results.first().ok_or("no result")?;
            if outcome.code.0 == 0 && outcome.finished {
                // A file that changed may still be reported complete as the old version when the
                // first run had written all of it (its control file claims it all); it must be one
                // version or the other, never both.
                check_complete(dir.path(), &source, "second run").or_else(|e| match sc.changed {
                    Some(_) => check_complete(dir.path(), &sc.data, "second run (old version)")
                        .map_err(|_| e),
                    None => Err(e),
                })
            } else if sc.changed.is_some() {
                // Refusing a changed file is allowed (the old partial file stays as it was);
                // mixing the two versions is not.
                check_claims(dir.path(), &source)
                    .or_else(|_| check_claims(dir.path(), &sc.data))
                    .map_err(|e| format!("second run: the versions are mixed: {e}"))
            } else {
                Err(format!(
                    "second run (healed, -c) ended with exit code {}",
                    outcome.code.0
                ))
            }
        }
    }
}

/// The exit code of a first run that failed, where the scenario decides it.
pub(super) fn expect_code(sc: &Scenario, code: u8) -> Result<(), String> {
    let all_404 = sc.mirrors.iter().all(|m| *m == Mirror::NotFound);
    // A full disk decides the code only when nothing on the network can end the download first.
    let sf = &sc.faults.server;
    let clean_network = sc.faults.reset == 0
        && sc.faults.stall == 0
        && sc.mirrors.iter().all(|m| matches!(m, Mirror::Good { .. }))
        && sf.fin == 0
        && sf.short_range == 0
        && sf.no_data_port == 0
        && sf.change_after.is_none()
        && !sc
            .args
            .iter()
            .any(|a| a.starts_with("--lowest-speed-limit"));
    let full_disk = sc.faults.write_error == 1000
        && sc.faults.write_errno == libc::ENOSPC
        && clean_network
        && sc.faults.job_errors == 0;
    // A part of the file on disk that the run resumes, from servers that all ignore ranges:
    // the first answer ends it (aria2c's --always-resume=true), before any write can fail.
    let has = |a: &str| sc.args.iter().any(|x| x == a);
    let resumes_part = match sc.prior {
        // (Less than one write block is fetched again from the start, with no range to refuse.)
        Prior::Prefix(n) => has("-c") && n >= 16384 && n < sc.data.len(),
        Prior::Claimed(n) => n > 0 && n < sc.data.len(),
        _ => false,
    };
    // (A whole answer without a length leaves the file found alone: the download is renamed
    // and runs as a new one, `landed`.)
    // (The toy protocol says the length whatever its framing.)
    let no_ranges = sc.mirrors.iter().all(|m| match m {
        Mirror::Good {
            ranges: false,
            framing,
        } => sc.toy || *framing == Framing::Length,
        _ => false,
    });
    // The bytes found on disk are read back for a digest: a read that fails ends the run first.
    let reads_found = sc.prior != Prior::Nothing
        && sc.faults.read_error > 0
        && sc.args.iter().any(|a| a.starts_with("--checksum"));
    // A control file's save failing on a file job ends a download found on disk with exit 17
    // (its data file's writeback error), which may come before the last mirror's "not found".
    let save_failed = sc.faults.job_errors > 0 && sc.prior != Prior::Nothing;
    let expected = if all_404 && save_failed && code == ExitCode::FILE_IO.0 {
        None
    } else if all_404 {
        Some(3)
    } else if resumes_part
        && no_ranges
        && !has("--always-resume=false")
        && clean_network
        && sc.faults.job_errors == 0
    {
        // (Unless a failing file job, a reset or a slow server ends it first.)
        Some(8)
    } else if reads_found && code == ExitCode::FILE_IO.0 {
        None
    } else if full_disk && !sc.data.is_empty() && sc.faults.kill_at.is_none() {
        // Unless nothing was ever written (no mirror served anything).
        sc.mirrors
            .iter()
            .any(|m| matches!(m, Mirror::Good { .. }))
            .then_some(9)
    } else {
        None
    };
    match expected {
        Some(e) if e != code => Err(format!("first run exited {code}, aria2 gives {e}")),
        _ if code == 0 => Err("first run exited 0 without finishing".into()),
        _ => Ok(()),
    }
}
