//! Scenarios made by hand for how bytes flow: hashed in file order, piece digests and the mirrors
//! that fail them, receive low-water marks, blocks shared and handed over, stalls.
use super::*;

/// Runs scenario `sc` (one download of its first mirror) once, into a new directory: the
/// directory, the world it ran in and how the run ended.
pub(super) fn run_once(
    sc: &Scenario,
) -> (tempfile::TempDir, Rc<RefCell<World>>, Result<Ended, String>) {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let world = Rc::new(RefCell::new(World {
        servers: sc.servers(),
        faults: sc.faults.clone(),
        tls: server_tls(sc.tls),
        ..World::default()
    }));
    let ended = run(
        sc.budget,
        dir.path(),
        &sc.args,
        &[sc.url(0)],
        None,
        world.clone(),
        sc.seed,
    );
    (dir, world, ended)
}

/// The result of a run that ended by itself with one download; `Err` says what went wrong.
pub(super) fn only_outcome(
    ended: Result<Ended, String>,
    what: &str,
) -> Result<crate::engine::job::Outcome, String> {
    match ended {
        Ok(Ended::Done(summary)) => summary
            .results
            .into_iter()
            .next()
            .ok_or_else(|| format!("{what}: no result")),
        _ => Err(format!("{what}: the run did not end by itself")),
    }
}

/// Runs scenario `sc` once and requires that it ends by itself, complete and exact; the world it
/// ran in, for what else the test checks.
pub(super) fn run_to_completion(sc: &Scenario, what: &str) -> Rc<RefCell<World>> {
    let (dir, world, ended) = run_once(sc);
    let Ok(Ended::Done(summary)) = ended else {
        panic!("{what}: the run did not end by itself");
    };
    let outcome = summary.results.first().expect("a result");
    assert_eq!((outcome.code.0, outcome.finished), (0, true), "{what}");
    check_complete(dir.path(), &sc.data, what).unwrap_or_else(|e| panic!("{e}"));
    world
}

/// Review finding 8: full blocks were written newest first (a LIFO queue), so when several waited
/// at once (behind the first control-file save, or one write at a time for a file of unknown
/// length) they went out backwards and missed `--checksum`'s in-order hash, which then read the
/// file back. One stream, short writes, completions out of order: every byte must be hashed as it
/// is written, in file order, and nothing read back.
#[test]
fn one_stream_is_hashed_in_file_order_without_reading_back() {
    for framing in [Framing::Length, Framing::Chunked, Framing::UntilClose] {
        for seed in 1..6 {
            let good = Mirror::Good {
                ranges: true,
                framing,
            };
            let faults = Faults {
                max_chunk: 100_000,
                short_write: 300,
                reorder: true,
                ..Faults::default()
            };
            let mut sc = custom(seed, 3_000_017, vec![good], &["-s1", "-x1"], faults);
            sc.args
                .push(format!("--checksum=sha-256={}", sha256_hex(&sc.data)));
            let what = format!("{framing:?}, seed {seed}");
            let world = run_to_completion(&sc, &what);
            let reads = world.borrow().file_reads;
            assert_eq!(reads, 0, "{what}: {reads} blocks read back for the digest");
        }
    }
}

/// Runs scenario `sc` once over every one of its mirrors (with its piece digests, if any).
pub(super) fn run_over_mirrors(
    sc: &Scenario,
) -> (tempfile::TempDir, Rc<RefCell<World>>, Result<Ended, String>) {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let world = first_world(sc);
    let uris: Vec<String> = (0..sc.mirrors.len()).map(|i| sc.url(i)).collect();
    let ended = run_with(
        sc.budget,
        dir.path(),
        &sc.args,
        &uris,
        None,
        world.clone(),
        sc.seed,
        None,
        Given::of(sc),
    );
    (dir, world, ended)
}

/// Scenario `sc` with piece digests of `length` bytes (and, with `corrupt`, what its `Corrupt`
/// mirrors serve: the file with the byte at each offset changed), run once over every mirror.
pub(super) fn run_with_pieces(
    mut sc: Scenario,
    length: u64,
    corrupt: &[usize],
) -> (
    Scenario,
    tempfile::TempDir,
    Rc<RefCell<World>>,
    Result<Ended, String>,
) {
    let pieces = piece_hashes(&sc.data, length);
    let mut bad = sc.data.to_vec();
    for &at in corrupt {
        bad[at] ^= 0x5a;
    }
    sc.corrupt = Some(Rc::new(bad));
    sc.pieces = Some(pieces);
    let (dir, world, ended) = run_over_mirrors(&sc);
    (sc, dir, world, ended)
}

/// Metalink's chunk checksums, in the engine: a mirror that serves changed bytes under the same
/// length and validator is caught piece by piece, given up on, and its pieces fetched again from
/// the other mirror; the file ends byte-exact. Pieces on the 16 KiB grid and off it (fetched
/// again in whole 16 KiB blocks, the bytes around read back), changed bytes at the start, the
/// end and a piece boundary. With the whole file's digest too (a Metalink gives both), that
/// digest is of the bytes the file ends with, not of those the bad pieces brought.
#[test]
fn a_mirror_serving_changed_bytes_is_given_up_and_its_pieces_fetched_again() {
    // (Over 2 MiB: `-k1M` splits it.)
    let len = 3_000_003;
    for length in [65_536, 262_144, 20_000] {
        for (seed, first, whole) in [(1, true, false), (2, false, true), (3, true, true)] {
            let good = Mirror::Good {
                ranges: true,
                framing: Framing::Length,
            };
            let mirrors = match first {
                true => vec![Mirror::Corrupt, good],
                false => vec![good, Mirror::Corrupt],
            };
            // (A link slow enough for the second connection to start before the first is done.)
            let faults = Faults {
                max_chunk: 50_000,
                reorder: true,
                ns_per_byte: 2_000,
                ..Faults::default()
            };
            let mut sc = custom(seed, len, mirrors, &["-s4", "-x1", "-k1M"], faults);
            if whole {
                sc.args
                    .push(format!("--checksum=sha-256={}", sha256_hex(&sc.data)));
            }
            let at = [0, 19_999, 20_000, 2_500_000, len - 1];
            let (sc, dir, world, ended) = run_with_pieces(sc, length, &at);
            let what = format!("pieces of {length}, seed {seed}, whole digest {whole}");
            let outcome = only_outcome(ended, &what).unwrap_or_else(|e| panic!("{e}"));
            assert_eq!((outcome.code.0, outcome.finished), (0, true), "{what}");
            check_complete(dir.path(), &sc.data, &what).unwrap_or_else(|e| panic!("{e}"));
            let w = world.borrow();
            let bad = addr(if first { 0 } else { 1 });
            assert!(
                w.requests.iter().any(|(a, _, _)| *a == bad),
                "{what}: the corrupt mirror was never asked: {:?}",
                w.requests
            );
        }
    }
}

/// A piece that no mirror sends right ends the download with aria2's checksum error (exit 32),
/// and its control file claims only pieces that were verified.
#[test]
fn a_piece_no_mirror_sends_right_ends_the_download_with_exit_32() {
    for length in [65_536, 20_000] {
        let faults = Faults::default();
        let sc = custom(4, 700_001, vec![Mirror::Corrupt], &["-s2", "-x2"], faults);
        let (sc, dir, _world, ended) = run_with_pieces(sc, length, &[300_000]);
        let what = format!("pieces of {length}");
        let outcome = only_outcome(ended, &what).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(outcome.code.0, 32, "{what}");
        check_claims(dir.path(), &sc.data).unwrap_or_else(|e| panic!("{what}: {e}"));
        let cf = control::load(&control::control_path(&dir.path().join(NAME)))
            .ok()
            .flatten()
            .expect("a control file");
        let claimed: u64 = cf.done_ranges().iter().map(|r| r.end - r.start).sum();
        assert!(claimed > 0, "{what}: the good pieces are kept");
        assert!(
            !cf.done_ranges()
                .iter()
                .any(|r| r.start <= 300_000 && 300_000 < r.end),
            "{what}: the bad piece is claimed"
        );
    }
}

/// Pieces on the 16 KiB grid, split between connections on their boundaries, are each fetched
/// in order by one connection and hashed as their blocks are written: nothing is read back.
#[test]
fn pieces_split_on_their_boundaries_are_hashed_as_written() {
    for seed in 1..4 {
        let good = Mirror::Good {
            ranges: true,
            framing: Framing::Length,
        };
        let faults = Faults {
            max_chunk: 100_000,
            short_write: 300,
            reorder: true,
            ..Faults::default()
        };
        let sc = custom(seed, 3_000_017, vec![good], &["-s4", "-x4", "-k1M"], faults);
        let (sc, dir, world, ended) = run_with_pieces(sc, 262_144, &[]);
        let what = format!("seed {seed}");
        let outcome = only_outcome(ended, &what).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!((outcome.code.0, outcome.finished), (0, true), "{what}");
        check_complete(dir.path(), &sc.data, &what).unwrap_or_else(|e| panic!("{e}"));
        let reads = world.borrow().file_reads;
        assert_eq!(reads, 0, "{what}: {reads} blocks read back for the pieces");
    }
}

/// A receive on a fast connection waits for a low-water mark of bytes (`SO_RCVLOWAT`), which must
/// never ask for bytes that are not coming: past the end of a body, or of a range, or on a
/// kept-alive connection waiting for its next head. Over a 10 MB/s link with every framing, split
/// and not: the run ends complete, marks were set where the length was known, and no receive
/// waited for a quiet connection's mark to be taken back on a tick (3 MB take 0.3 s; a tick is 1 s).
#[test]
fn low_water_marks_never_wait_for_bytes_that_are_not_coming() {
    for framing in [Framing::Length, Framing::Chunked, Framing::UntilClose] {
        for (seed, split) in [(1, "-s1"), (2, "-s4"), (3, "-s3")] {
            let good = Mirror::Good {
                ranges: true,
                framing,
            };
            let faults = Faults {
                max_chunk: 100_000,
                ns_per_byte: 100,
                ..Faults::default()
            };
            let sc = custom(seed, 3_000_017, vec![good], &[split, "-x4", "-k1M"], faults);
            let what = format!("{framing:?}, {split}");
            let world = run_to_completion(&sc, &what);
            let w = world.borrow();
            if framing == Framing::Length {
                assert!(w.low_water_marks > 0, "{what}: no mark was set");
            }
            assert!(
                w.elapsed < Duration::from_millis(800),
                "{what}: {:?} for 3 MB at 10 MB/s: a receive waited for bytes that never came",
                w.elapsed
            );
        }
    }
}

/// Three 1 MiB write blocks serve eight connections, so most wait for one at any time while
/// their bytes wait in the socket. A connection that kept its block while it received slowly or
/// not at all (a stalled response) held everyone behind it until its receive timed out, and
/// blocks that came free went to the lowest-numbered connections first, so others could wait
/// until those were done. With responses that stall and a long I/O timeout: no connection with
/// bytes waiting goes unread for more than a few ticks (a tick is 1 s), and the file is
/// complete.
#[test]
fn no_connection_with_bytes_waiting_goes_unread_for_long() {
    let faults = Faults {
        stall: 400,
        max_chunk: 100_000,
        ..Faults::default()
    };
    eight_sharing_three_blocks_read_promptly(1..=6, 16_000_017, faults);
}

/// Seeds `seeds` of a `len`-byte download at -x8 (three 1 MiB write blocks) over a 5 MB/s link
/// with `faults` and a 20 s I/O timeout: each run ends complete, and no connection had bytes
/// waiting with no receive for them for more than 4 s.
pub(super) fn eight_sharing_three_blocks_read_promptly(
    seeds: std::ops::RangeInclusive<u64>,
    len: usize,
    faults: Faults,
) {
    for seed in seeds {
        let good = Mirror::Good {
            ranges: true,
            framing: Framing::Length,
        };
        let faults = Faults {
            ns_per_byte: 200,
            ..faults.clone()
        };
        let args = ["-s8", "-x8", "-k1M", "--timeout=20", "--max-tries=0"];
        let mut sc = custom(seed, len, vec![good], &args, faults);
        sc.budget = 8 << 20;
        let what = format!("seed {seed}");
        let world = run_to_completion(&sc, &what);
        let w = world.borrow();
        assert!(
            w.longest_unread <= Duration::from_secs(4),
            "{what}: a connection's bytes went unread for {:?}",
            w.longest_unread
        );
    }
}

/// A connection whose response stalled just as it took a fresh write block handed that empty
/// block over and took it straight back (the pool's free list is last in, first out, and the
/// connection did not join the line), so it kept a block until its I/O timeout while the others
/// waited. Every response here stalls after exactly 1 MiB of its body, where a block ends (the
/// ranges are 2 MiB, aligned): the connections holding empty blocks give them up, and no
/// connection with bytes waiting goes unread for long.
#[test]
fn a_connection_stalled_with_an_empty_block_gives_it_up() {
    let faults = Faults {
        stall_after: Some(1 << 20),
        ..Faults::default()
    };
    eight_sharing_three_blocks_read_promptly(1..=3, 16 << 20, faults);
}

/// A response that stops for good, its connection left open, still ends in aria2's timeout within
/// about `--timeout`. A connection that holds a write block for half a second hands it over: its
/// receive is cancelled and a new one, with a new timeout, goes out when it has a block again, so
/// no single receive lives long enough to time out. The waits of the receives that brought nothing
/// add up, and reach the timeout instead. One connection here, so nobody waits for its block; the
/// stall comes inside a block, at a block's end, and before the body's first byte.
#[test]
fn a_stalled_response_times_out_though_its_block_is_handed_over() {
    let good = Mirror::Good {
        ranges: true,
        framing: Framing::Length,
    };
    for (seed, stall_at) in [(1, 100_000), (2, 1 << 20), (3, 0)] {
        let faults = Faults {
            stall_after: Some(stall_at),
            ..Faults::default()
        };
        let args = ["-x1", "-s1", "-k1M", "--timeout=6", "--max-tries=1"];
        let sc = custom(seed, 4 << 20, vec![good], &args, faults);
        let what = format!("a stall after {stall_at} body bytes");
        let (_dir, world, ended) = run_once(&sc);
        let outcome = only_outcome(ended, &what).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(outcome.code, ExitCode::TIMEOUT, "{what}: {outcome:?}");
        let elapsed = world.borrow().elapsed;
        assert!(
            elapsed <= Duration::from_secs(6 + 3),
            "{what}: timed out only after {elapsed:?}"
        );
    }
}

/// Review finding 6: a descriptor read that failed (the signal descriptor here) was issued again at
/// once, failed again, for ever: the loop spun and the download never ended. A broken signal
/// descriptor must cost Ctrl-C, not the download.
#[test]
fn a_failing_signal_descriptor_is_not_read_again_for_ever() {
    let good = Mirror::Good {
        ranges: true,
        framing: Framing::Length,
    };
    let faults = Faults {
        max_chunk: 100_000,
        signal_fd_fails: true,
        ..Faults::default()
    };
    let sc = custom(7, 2_000_000, vec![good], &["-s2"], faults);
    check_scenario(&sc, false).unwrap_or_else(|e| panic!("{e}"));
}

/// A protocol that is not HTTP (the toy one, `toy.rs`) goes through the same engine: split over
/// two mirrors (one sending its bodies to the close), every byte written where it belongs, and a
/// download killed part-way resumed from its control file by a second run.
#[test]
fn the_toy_protocol_splits_and_resumes_as_http_does() {
    let mirrors = vec![
        Mirror::Good {
            ranges: true,
            framing: Framing::Length,
        },
        Mirror::Good {
            ranges: true,
            framing: Framing::UntilClose,
        },
    ];
    // Two toy mirrors, a link slow enough for both to be used; killed at `kill_at` if given;
    // the bytes on data connections or not.
    let toy = |seed: u64, kill_at: Option<u64>, data: bool, active: bool, upload: bool| {
        let faults = Faults {
            max_chunk: 50_000,
            ns_per_byte: 1_000,
            kill_at,
            ..Faults::default()
        };
        let mut sc = custom(
            seed,
            3_000_001,
            mirrors.clone(),
            &["-s4", "-x2", "-k1M"],
            faults,
        );
        sc.toy = true;
        sc.toy_data = data;
        sc.toy_active = active;
        sc.toy_upload = upload;
        sc
    };
    let ways = [
        (false, false, false),
        (true, false, false),
        (true, true, false),
        (false, false, true),
        (true, true, true),
    ];
    for (data, active, upload) in ways {
        let make = |seed, kill_at| toy(seed, kill_at, data, active, upload);
        toy_splits_and_resumes(make, data, active, upload);
    }
}

/// `the_toy_protocol_splits_and_resumes_as_http_does` over mirrors made by `toy`; `data`: they
/// send their bytes on data connections, which they open to the client if `active`; `upload`:
/// they ask the client for bytes it has.
fn toy_splits_and_resumes(
    toy: impl Fn(u64, Option<u64>) -> Scenario,
    data: bool,
    active: bool,
    upload: bool,
) {
    let sc = toy(5, None);
    assert!(sc.url(0).starts_with("toy://"));
    let (dir, world, ended) = run_over_mirrors(&sc);
    let outcome = only_outcome(ended, "toy").unwrap_or_else(|e| panic!("{e}"));
    assert_eq!((outcome.code.0, outcome.finished), (0, true));
    check_complete(dir.path(), &sc.data, "toy").unwrap_or_else(|e| panic!("{e}"));
    let w = world.borrow();
    let ranges: Vec<&String> = w
        .requests
        .iter()
        .filter(|(_, line, _)| line.starts_with("TOY SEND"))
        .filter_map(|(_, _, r)| r.as_ref())
        .filter(|r| *r != "bytes=0-")
        .collect();
    assert!(!ranges.is_empty(), "not split: {:?}", w.requests);
    // Asked for bytes it had (none yet at the start), the client sent none wrong.
    assert!(w.upload_errors.is_empty(), "{:?}", w.upload_errors);
    let both = (0..2).all(|i| w.requests.iter().any(|(a, _, _)| *a == addr(i)));
    assert!(both, "one mirror unused: {:?}", w.requests);
    let count = |what: &str| {
        w.requests
            .iter()
            .filter(|(_, l, _)| l.starts_with(what))
            .count()
    };
    let (passive, active_, sends) = (count("TOY PASV"), count("TOY ACTIVE"), count("TOY SEND"));
    match (data, active) {
        (true, false) => assert_eq!((passive, active_), (sends, 0), "a SEND without PASV"),
        (true, true) => assert_eq!((passive, active_), (0, sends), "a SEND without ACTIVE"),
        _ => assert_eq!((passive, active_), (0, 0)),
    }
    drop(w);

    // Killed part-way, then `-c` on a healed mirror: resumed from the control file.
    super::checks::UPLOADED.with(|u| u.set(0));
    for kill_at in [40, 120, 300] {
        let sc = toy(6, Some(kill_at));
        check_scenario(&sc, false).unwrap_or_else(|e| panic!("kill at {kill_at}: {e}"));
    }
    // Resumed from a control file that claims the first MiB, the client has bytes to be asked
    // for from the start: it sends them, every one right (checked by the servers).
    let mut sc = toy(7, None);
    sc.prior = Prior::Claimed(1 << 20);
    sc.args.push("-c".into());
    check_scenario(&sc, false).unwrap_or_else(|e| panic!("over a claimed MiB: {e}"));
    let uploaded = super::checks::UPLOADED.with(|u| u.get());
    assert_eq!(uploaded > 0, upload, "uploaded {uploaded} bytes");
}
