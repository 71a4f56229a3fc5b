//! Downloads over several files (`engine::layout`): blocks that straddle files, files written
//! with `O_DIRECT` and through the page cache side by side, piece checks across file boundaries,
//! and what a stopped one leaves.
use super::*;
use crate::engine::layout::FileSpec;

/// Lengths whose files start aligned (0, 8192) and mid-block, of no length, of one byte, of
/// exactly three blocks, and one long enough for `-s4 -k1M` to split the download.
const LENGTHS: [u64; 9] = [5000, 0, 3192, 70_000, 1, 300_000, 12_288, 77_777, 2_600_000];

fn files_of(lengths: &[u64]) -> Arc<Files> {
    let specs = lengths
        .iter()
        .enumerate()
        .map(|(i, &length)| FileSpec {
            path: format!("t/sub{}/f{i}.bin", i % 3),
            length,
        })
        .collect();
    Arc::new(Files::new(specs).expect("a valid layout"))
}

/// Every file of `sc`'s layout holds its bytes of `sc.data`, at its exact length, and no control
/// file is left.
fn check_files(dir: &Path, sc: &Scenario, what: &str) -> Result<(), String> {
    let layout = sc.layout.as_ref().ok_or("no layout")?;
    for f in layout.files() {
        let path = dir.join(&f.path);
        let got = std::fs::read(&path).map_err(|e| format!("{what}: {}: {e}", f.path))?;
        let want = &sc.data[f.start as usize..(f.start + f.length) as usize];
        if got != want {
            let at = got.iter().zip(want).position(|(a, b)| a != b);

            return Err(format!(
                "{what}: {} has {} bytes, wants {}; first difference at {at:?}",
                f.path,
                got.len(),
                want.len()
            ));
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
    let cases: [(u64, &[&str], Option<u64>, bool); 6] = [
        (1, &["-s1"], None, false),
        (2, &["-s4", "-x2", "-k1M"], None, false),
        (3, &["-s4", "-x1", "-k1M"], Some(16_384), false),
        (4, &["-s4", "-x1", "-k1M"], Some(20_000), true),
        (5, &["-s2", "-x2", "-k1M"], Some(262_144), true),
        (6, &["-s1"], Some(65_536), false),
    ];
    for (seed, args, pieces, corrupt) in cases {
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
        sc.layout = Some(files_of(&LENGTHS));
        let what = format!("seed {seed} {args:?}, pieces {pieces:?}");
        let (sc, dir, _world, ended) = match pieces {
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
        let world = Rc::new(RefCell::new(World {
            servers: sc.servers(),
            ..World::default()
        }));
        let again = run_with(
            sc.budget,
            dir.path(),
            &sc.args,
            &[sc.url(0)],
            None,
            world,
            sc.seed,
            None,
            Given::of(&sc),
        );
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
        let world = Rc::new(RefCell::new(World {
            servers: sc.servers(),
            ..World::default()
        }));
        let again = run_with(
            sc.budget,
            dir.path(),
            &sc.args,
            &[sc.url(0)],
            None,
            world,
            sc.seed,
            None,
            Given::of(&sc),
        );
        let what = format!("seed {seed}");
        let o = only_outcome(again, &what).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(o.code.0, 13, "{what}");
        assert!(before == read(), "{what}: the files found were changed");
    }
}
