//! Downloads over several files (`engine::layout`): blocks that straddle files, files written
//! with `O_DIRECT` and through the page cache side by side, piece checks across file boundaries,
//! and what a stopped one leaves.
use super::*;
use crate::engine::layout::FileSpec;

/// Lengths whose files start aligned (0, 8192) and mid-block, of no length, of one byte, of
/// exactly three blocks, and one long enough for `-s4 -k1M` to split the download.
const LENGTHS: [u64; 9] = [5000, 0, 3192, 70_000, 1, 300_000, 12_288, 77_777, 2_600_000];

fn files_of(lengths: &[u64]) -> Arc<Files> {
    files_selected(lengths, &[])
}

/// A layout of `lengths`, the files at `unselected` left unselected.
fn files_selected(lengths: &[u64], unselected: &[usize]) -> Arc<Files> {
    let specs = lengths
        .iter()
        .enumerate()
        .map(|(i, &length)| FileSpec {
            path: format!("t/sub{}/f{i}.bin", i % 3),
            length,
            selected: !unselected.contains(&i),
        })
        .collect();
    Arc::new(Files::new(specs).expect("a valid layout"))
}

/// The bytes of `sc`'s download it fetches (all of them but those `Layout::unwanted` leaves).
fn wanted_of(sc: &Scenario) -> crate::plan::RangeSet {
    let mut wanted = crate::plan::RangeSet::single(0..sc.data.len() as u64);
    if let Some(layout) = sc.layout.as_ref() {
        let piece = sc.pieces.as_ref().map_or(0, |h| h.length);
        for r in layout.unwanted(piece, crate::plan::ALIGN) {
            wanted.remove(r);
        }
    }
    wanted
}

/// The bytes of `sc`'s download that must be right once it is complete: with piece digests, the
/// pieces that hold a byte of a selected file (the others, written in part to fill a block, are
/// never checked); without, every byte fetched.
fn vouched_of(sc: &Scenario) -> crate::plan::RangeSet {
    let (Some(layout), Some(hashes)) = (sc.layout.as_ref(), sc.pieces.as_ref()) else {
        return wanted_of(sc);
    };
    let total = sc.data.len() as u64;
    let mut vouched = crate::plan::RangeSet::new();
    let mut at = 0;
    while at < total {
        let piece = at..(at + hashes.length).min(total);
        if layout.wants(piece.clone()) {
            vouched.insert(piece.clone());
        }
        at = piece.end;
    }
    vouched
}

/// Every selected file of `sc`'s layout holds its bytes of `sc.data`, at its exact length; every
/// unselected one is no longer than its length and right wherever its bytes are vouched for
/// (pieces of selected files reaching into it, `vouched_of`); no control file is left.
fn check_files(dir: &Path, sc: &Scenario, what: &str) -> Result<(), String> {
    let layout = sc.layout.as_ref().ok_or("no layout")?;
    let wanted = vouched_of(sc);
    for f in layout.files() {
        let path = dir.join(&f.path);
        let got = std::fs::read(&path).map_err(|e| format!("{what}: {}: {e}", f.path))?;
        let want = &sc.data[f.start as usize..(f.start + f.length) as usize];
        if f.selected && got != want {
            let at = got.iter().zip(want).position(|(a, b)| a != b);
            return Err(format!(
                "{what}: {} has {} bytes, wants {}; first difference at {at:?}",
                f.path,
                got.len(),
                want.len()
            ));
        }
        if !f.selected {
            if got.len() > want.len() {
                return Err(format!(
                    "{what}: the unselected {} grew to {}",
                    f.path,
                    got.len()
                ));
            }
            for r in wanted.ranges() {
                let (a, b) = (r.start.max(f.start), r.end.min(f.start + got.len() as u64));
                if a >= b {
                    continue;
                }
                let (a, b) = ((a - f.start) as usize, (b - f.start) as usize);
                if got[a..b] != want[a..b] {
                    return Err(format!(
                        "{what}: the unselected {} is wrong in {a}..{b}",
                        f.path
                    ));
                }
            }
        }
    }
    if dir.join("t.aria2").exists() {
        return Err(format!("{what}: the control file is left"));
    }
    Ok(())
}

/// What the control file of `sc`'s download claims is right in every file.
fn check_file_claims(dir: &Path, sc: &Scenario, what: &str) -> Result<u64, String> {
    let layout = sc.layout.as_ref().ok_or("no layout")?;
    let Some(cf) = control::load(&dir.join("t.aria2")).map_err(|e| format!("{what}: {e}"))? else {
        return Ok(0);
    };
    let mut claimed = 0;
    for r in cf.done_ranges() {
        for s in layout.spans(r.clone()) {
            let f = &layout.files()[s.file];
            let bytes = std::fs::read(dir.join(&f.path)).map_err(|e| format!("{what}: {e}"))?;
            let (a, b) = (s.at as usize, (s.at + s.range.end - s.range.start) as usize);
            let want = &sc.data[s.range.start as usize..s.range.end as usize];
            if bytes.get(a..b) != Some(want) {
                return Err(format!(
                    "{what}: the control file claims {}..{} but {} differs there",
                    s.range.start, s.range.end, f.path
                ));
            }
        }
        claimed += r.end - r.start;
    }
    Ok(claimed)
}

/// A second run over what the first left in `dir`, with `args`: one healthy mirror with ranges
/// (mirror 0's address), no faults.
fn run_healed(sc: &Scenario, dir: &Path, args: &[String]) -> Result<Ended, String> {
    run_healed_in(sc, dir, args).0
}

/// [`run_healed`], with the world it ran in.
fn run_healed_in(
    sc: &Scenario,
    dir: &Path,
    args: &[String],
) -> (Result<Ended, String>, Rc<RefCell<World>>) {
    let world = healed_world(sc, 0, sc.data.clone(), "\"v1\"");
    let ended = run_with(
        sc.budget,
        dir,
        args,
        &[sc.url(0)],
        None,
        world.clone(),
        sc.seed ^ 0xabcd,
        None,
        Given::of(sc),
    );
    (ended, world)
}

/// A download over several files ends with each file byte-exact at its place: one connection or
/// four, writes cut short and completing out of order, with piece digests across the files'
/// boundaries (on the 16 KiB grid and off it) and a mirror serving changed bytes whose pieces are
/// fetched again.
#[test]
fn several_files_end_byte_exact_each_in_its_place() {
    let total: u64 = LENGTHS.iter().sum();
    let good = Mirror::Good {
        ranges: true,
        framing: Framing::Length,
    };
    type Case<'a> = (u64, &'a [&'a str], Option<u64>, bool, &'a [usize]);
    let cases: [Case; 10] = [
        (1, &["-s1"], None, false, &[]),
        (2, &["-s4", "-x2", "-k1M"], None, false, &[]),
        (3, &["-s4", "-x1", "-k1M"], Some(16_384), false, &[]),
        (4, &["-s4", "-x1", "-k1M"], Some(20_000), true, &[]),
        (5, &["-s2", "-x2", "-k1M"], Some(262_144), true, &[]),
        (6, &["-s1"], Some(65_536), false, &[]),
        // Files left unselected: the first (its bytes are not the first answer's), in the
        // middle, the last; with pieces reaching into them and without.
        (7, &["-s1"], None, false, &[0, 5]),
        (8, &["-s4", "-x2", "-k1M"], Some(20_000), true, &[3, 5, 8]),
        (
            9,
            &["-s2", "-x1", "-k1M"],
            Some(65_536),
            false,
            &[0, 1, 2, 3, 4, 5, 6, 7],
        ),
        (
            10,
            &["-s4", "-x2", "-k1M"],
            None,
            false,
            &[0, 1, 2, 3, 4, 5, 6, 7, 8],
        ),
    ];
    for (seed, args, pieces, corrupt, unselected) in cases {
        let faults = Faults {
            max_chunk: 40_000,
            reorder: true,
            short_write: 300,
            odd_writes: 300,
            ns_per_byte: 1_000,
            ..Faults::default()
        };
        let mirrors = match corrupt {
            true => vec![Mirror::Corrupt, good],
            false => vec![good],
        };
        let mut sc = custom(seed, total as usize, mirrors, args, faults);
        sc.layout = Some(files_selected(&LENGTHS, unselected));
        let what = format!("seed {seed} {args:?}, pieces {pieces:?}, unselected {unselected:?}");
        let (sc, dir, world, ended) = match pieces {
            Some(length) => {
                let at = [0, 4_999, 5_000, 8_191, 8_192, 500_000, total as usize - 1];
                run_with_pieces(sc, length, if corrupt { &at } else { &[] })
            }
            None => {
                let (dir, world, ended) = run_over_mirrors(&sc);
                (sc, dir, world, ended)
            }
        };
        let outcome = only_outcome(ended, &what).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!((outcome.code.0, outcome.finished), (0, true), "{what}");
        check_files(dir.path(), &sc, &what).unwrap_or_else(|e| panic!("{e}"));
        // No range asked for starts where nothing is wanted.
        let wanted = wanted_of(&sc);
        for (_, _, range) in &world.borrow().requests {
            let Some(from) = range
                .as_deref()
                .and_then(|r| r.strip_prefix("bytes="))
                .and_then(|r| r.split('-').next())
                .and_then(|n| n.parse::<u64>().ok())
            else {
                continue;
            };
            assert!(
                wanted.covers(from..from + 1),
                "{what}: asked for bytes from {from}, which nothing wants"
            );
        }
    }
}

/// Stopped part-way (killed, or a write failing), a download over several files leaves a control
/// file that claims only bytes that are right in their files, whatever was in flight; the next
/// run resumes it from there (fetching less than the whole) and ends with every file exact.
#[test]
fn a_download_over_several_files_stopped_part_way_resumes_from_what_it_claims() {
    let total: u64 = LENGTHS.iter().sum();
    let good = Mirror::Good {
        ranges: true,
        framing: Framing::Length,
    };
    let mut resumed = 0;
    for seed in 0..24u64 {
        let faults = Faults {
            max_chunk: 30_000,
            reorder: seed % 2 == 0,
            short_write: 200,
            ns_per_byte: 2_000,
            kill_at: (seed % 3 != 2).then_some(60 + seed * 37),
            write_error: if seed % 3 == 2 { 40 } else { 0 },
            write_errno: libc::EIO,
            ..Faults::default()
        };
        let mut sc = custom(
            seed,
            total as usize,
            vec![good],
            &["-s4", "-x2", "-k1M"],
            faults,
        );
        sc.layout = Some(files_of(&LENGTHS));
        if seed % 2 == 1 {
            sc.pieces = Some(piece_hashes(&sc.data, 20_000));
        }
        let what = format!("seed {seed}");
        let (dir, _world, ended) = run_over_mirrors(&sc);
        if let Ok(Ended::Done(summary)) = &ended {
            let o = summary.results.first().expect("a result");
            if o.code.0 == 0 && o.finished {
                check_files(dir.path(), &sc, &what).unwrap_or_else(|e| panic!("{e}"));
                continue;
            }
        }
        let claimed = check_file_claims(dir.path(), &sc, &what).unwrap_or_else(|e| panic!("{e}"));
        let again = run_healed(&sc, dir.path(), &sc.args);
        let what = format!("{what}, second run");
        let o = only_outcome(again, &what).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!((o.code.0, o.finished), (0, true), "{what}");
        check_files(dir.path(), &sc, &what).unwrap_or_else(|e| panic!("{e}"));
        if claimed > 0 {
            assert!(
                o.bytes <= total - claimed,
                "{what}: fetched {} bytes though {claimed} of {total} were claimed",
                o.bytes
            );
            resumed += 1;
        }
    }
    assert!(
        resumed > 3,
        "only {resumed} stopped runs claimed anything: the test proves little"
    );
}

/// Files of a download over several found without its control file (or its control file without
/// every file) are not this run's to write over: refused with exit 13, every file left as it was.
#[test]
fn files_found_without_their_control_file_are_left_alone() {
    let total: u64 = LENGTHS.iter().sum();
    let good = Mirror::Good {
        ranges: true,
        framing: Framing::Length,
    };
    for (seed, keep_control) in [(1u64, false), (2, true)] {
        let faults = Faults {
            max_chunk: 30_000,
            ns_per_byte: 2_000,
            kill_at: Some(200),
            ..Faults::default()
        };
        let mut sc = custom(seed, total as usize, vec![good], &["-s2", "-k1M"], faults);
        sc.layout = Some(files_of(&LENGTHS));
        let layout = sc.layout.clone().expect("a layout");
        let (dir, _world, _ended) = run_over_mirrors(&sc);
        let ctl = dir.path().join("t.aria2");
        assert!(
            ctl.exists(),
            "seed {seed}: killed part-way, yet no control file"
        );
        match keep_control {
            false => std::fs::remove_file(&ctl).expect("the control file goes"),
            true => {
                std::fs::remove_file(dir.path().join(&layout.files()[4].path)).expect("a file goes")
            }
        }
        let read = || -> Vec<Option<Vec<u8>>> {
            layout
                .files()
                .iter()
                .map(|f| std::fs::read(dir.path().join(&f.path)).ok())
                .chain(std::iter::once(std::fs::read(&ctl).ok()))
                .collect()
        };
        let before = read();
        let again = run_healed(&sc, dir.path(), &sc.args);
        let what = format!("seed {seed}");
        let o = only_outcome(again, &what).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(o.code.0, 13, "{what}");
        assert!(before == read(), "{what}: the files found were changed");
    }
}

/// Seeds over several files that once failed, run first every time: 36801, 37498, 38172, a first
/// control file whose save failed (a full disk) left the download going on with nothing it could
/// write, until it stopped while still asking for connections; 560437, where the test expected
/// bytes of a piece holding no selected byte (written only to fill a neighbour's block, never
/// checked) to be right in an unselected file, from a mirror serving changed bytes.
pub(super) const LAYOUT_REGRESSIONS: &[u64] = &[36801, 37498, 38172, 560437];

/// Seeds of the random runs over several files: the regressions (unless one seed is asked for),
/// then `RINGDL_SIM_SEEDS` / 4 of them (default 250) from `RINGDL_SIM_FIRST`.
fn layout_seeds() -> Vec<u64> {
    let count = env_u64("RINGDL_SIM_SEEDS").unwrap_or(DEFAULT_SEEDS) / 4;
    let first = env_u64("RINGDL_SIM_FIRST").unwrap_or(1);
    let replay = env_u64("RINGDL_SIM_FIRST").is_some() && count <= 1;
    let regressions = if replay { &[][..] } else { LAYOUT_REGRESSIONS };
    regressions
        .iter()
        .copied()
        .chain(first..first + count.max(1))
        .collect()
}

/// A seed's scenario as drawn, over several files: its data cut at random places into up to six
/// files (some of no length, some of one byte), found on disk with nothing before it, of one
/// version.
fn draw_over_files(seed: u64) -> Option<Scenario> {
    let mut sc = Scenario::draw(seed);
    if sc.data.is_empty() || sc.changed.is_some() {
        return None;
    }
    let mut rng = Rng::new(seed ^ 0x1a7e_d4a5_0000_00f1);
    let len = sc.data.len() as u64;
    let mut cuts: Vec<u64> = (0..rng.below(6))
        .map(|_| match rng.below(4) {
            0 => rng.below(len + 1) / 4096 * 4096,
            _ => rng.below(len + 1),
        })
        .collect();
    cuts.push(0);
    cuts.push(len);
    cuts.sort_unstable();
    let lengths: Vec<u64> = cuts.windows(2).map(|w| w[1] - w[0]).collect();
    // One seed in three leaves files unselected (each one in two).
    let unselected: Vec<usize> = match rng.below(3) {
        0 => (0..lengths.len()).filter(|_| rng.below(2) == 0).collect(),
        _ => Vec::new(),
    };
    sc.layout = Some(files_selected(&lengths, &unselected));
    sc.prior = Prior::Nothing;
    sc.args.retain(|a| a != "-c");
    sc.faults.server.change_after = None;
    sc.faults.server.changed_to = None;
    Some(sc)
}

/// Whether a file of the layout holds bytes while no control file describes them.
fn undescribed_bytes(dir: &Path, sc: &Scenario) -> bool {
    let Some(layout) = sc.layout.as_ref() else {
        return false;
    };
    !dir.join("t.aria2").exists()
        && layout
            .files()
            .iter()
            .any(|f| std::fs::metadata(dir.join(&f.path)).is_ok_and(|m| m.len() > 0))
}

/// One seed over several files: the first run under the seed's faults ends complete and exact,
/// or leaves a control file claiming only right bytes; a healed run then ends complete and exact
/// (or, where a file holds bytes no control file describes, refuses with exit 13 and changes
/// nothing).
fn check_over_files(sc: &Scenario) -> Result<(), String> {
    let (dir, _world, first) = run_over_mirrors(sc);
    let first = first?;
    match &first {
        Ended::Stopped(Stop::Hung(why)) => return Err(format!("first run hung: {why}")),
        Ended::Done(summary) => {
            let o = summary.results.first().ok_or("no result")?;
            if o.code.0 == 0 && o.finished {
                return check_files(dir.path(), sc, "first run").or_else(|e| {
                    // A control file whose removal failed (a failing file job) stays, true.
                    match sc.faults.job_errors > 0 && e.ends_with("the control file is left") {
                        true => check_file_claims(dir.path(), sc, "first run").map(|_| ()),
                        false => Err(e),
                    }
                });
            }
        }
        Ended::Stopped(_) => {}
    }
    check_file_claims(dir.path(), sc, "after the first run")?;
    let refuses = undescribed_bytes(dir.path(), sc);
    let args: Vec<String> = sc
        .args
        .iter()
        .filter(|a| !a.starts_with("--checksum"))
        .cloned()
        .collect();
    let second = run_healed(sc, dir.path(), &args)?;
    let Ended::Done(summary) = second else {
        return Err("the second (healed) run did not end by itself".into());
    };
    let o = summary.results.first().ok_or("no result")?;
    match (o.code.0, o.finished, refuses) {
        (0, true, _) => check_files(dir.path(), sc, "second run"),
        (13, _, true) => Ok(()),
        (code, _, _) => Err(format!(
            "the second (healed) run ended with exit code {code}"
        )),
    }
}

/// The seeded runs of the simulation, each over several files (`draw_over_files`): every fault
/// the seeds draw — kills, power losses, failing writes, syncs and file jobs, short and odd
/// writes, misbehaving servers, TLS, the toy protocol, piece digests and corrupt mirrors.
#[test]
fn simulated_downloads_over_several_files_end_complete_or_resume() {
    let mut failures = Vec::new();
    let mut ran = 0;
    for seed in layout_seeds() {
        let Some(sc) = draw_over_files(seed) else {
            continue;
        };
        ran += 1;
        if std::env::var_os("RINGDL_SIM_LOG").is_some() {
            eprintln!(
                "seed {seed}: mirrors {:?}, args {:?}, faults {:?}, {:?}, pieces of {:?}",
                sc.mirrors,
                sc.args,
                sc.faults,
                sc.layout,
                sc.pieces.as_ref().map(|p| p.length)
            );
        }
        if let Err(e) = check_over_files(&sc) {
            eprintln!(
                "seed {seed} over several files FAILED: {e}\n  replay: RINGDL_SIM_FIRST={seed} RINGDL_SIM_SEEDS=4 cargo test --profile sim --lib engine::simulation::files -- --nocapture"
            );
            failures.push(seed);
            if failures.len() >= 10 {
                break;
            }
        }
    }
    assert!(ran > 0, "no seed drew a download over several files");
    assert!(
        failures.is_empty(),
        "seeds over several files failed: {failures:?}"
    );
}

/// A download over several files serves its own bytes when asked (the toy servers' WANT, as a
/// BitTorrent peer asks for a piece): resumed from what a stopped run claims, from whichever
/// file holds them, those that start mid-block (written through the page cache) too, every
/// byte right.
#[test]
fn a_download_over_several_files_serves_its_own_bytes_from_each_file() {
    let total: u64 = LENGTHS.iter().sum();
    let good = Mirror::Good {
        ranges: true,
        framing: Framing::Length,
    };
    let mut uploaded = 0;
    for seed in 0..24u64 {
        let faults = Faults {
            max_chunk: 4_000,
            ns_per_byte: 2_000,
            kill_at: Some(100 + seed * 57),
            ..Faults::default()
        };
        // (Saved every second, the control file claims what the kill finds written.)
        let args = ["-s4", "-x2", "-k1M", "--auto-save-interval=1"];
        let mut sc = custom(seed, total as usize, vec![good], &args, faults);
        sc.layout = Some(files_of(&LENGTHS));
        (sc.toy, sc.toy_upload) = (true, true);
        let what = format!("seed {seed}");
        let (dir, world, ended) = run_over_mirrors(&sc);
        uploads_right(&world).unwrap_or_else(|e| panic!("{what}: {e}"));
        if let Ok(Ended::Done(summary)) = &ended {
            let o = summary.results.first().expect("a result");
            if o.code.0 == 0 && o.finished {
                continue;
            }
        }
        check_file_claims(dir.path(), &sc, &what).unwrap_or_else(|e| panic!("{e}"));
        let (again, world) = run_healed_in(&sc, dir.path(), &sc.args);
        let what = format!("{what}, second run");
        let o = only_outcome(again, &what).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!((o.code.0, o.finished), (0, true), "{what}");
        check_files(dir.path(), &sc, &what).unwrap_or_else(|e| panic!("{e}"));
        uploads_right(&world).unwrap_or_else(|e| panic!("{what}: {e}"));
        uploaded += world.borrow().uploaded;
    }
    assert!(
        uploaded > 0,
        "no bytes were asked for: the test proves little"
    );
}
