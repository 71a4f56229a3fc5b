//! The packer — body bytes, as TLS records or socket reads hand them over in pieces of any size,
//! unframed and copied into aligned write blocks at their file offsets — under arbitrary input,
//! for the fuzz target `pack_body` (through `crate::fuzzing`). The check plays the writer's part:
//! it takes the queued blocks, places them in a file image and frees them, and compares the image
//! with what the body says the file is.
use super::conn::Exchange;
use super::driver::Flushes;
use super::reactor::{Class, Layout, Pool};
use super::sink::BodySink;
use crate::http::Framing;
use crate::plan::Plan;

/// The first byte picks the framing (even: Content-Length, odd: chunked), the second the size of
/// the pieces the body arrives in; the rest is the body as sent. `expected` is the file the body
/// stands for (None: a chunked body that does not decode to a whole file).
pub(crate) fn pack_body(data: &[u8], expected: Option<Vec<u8>>) {
    let [mode, piece, body @ ..] = data else {
        return;
    };
    let chunked = mode & 1 == 1;
    let total = expected.as_ref().map_or(1 << 20, |e| e.len() as u64);
    if total == 0 {
        return;
    }
    let Some(layout) = Layout::fit(1, crate::tls::MIN_INCOMING, 1 << 20) else {
        return;
    };
    let Ok(pool) = Pool::new(layout) else { return };
    let write_size = pool.size(Class::Write);
    let owner = 1;
    let mut plan = Plan::new(total, 1 << 20);
    plan.assign(0, owner);
    let url = url::Url::parse("http://fuzz.invalid/f").expect("a fixed URL");
    let mut ex = Exchange::new((0, 0), url, 0, None, 0);
    ex.start_body(if chunked {
        Framing::Chunked
    } else {
        Framing::Length(total)
    });
    let mut fill = None;
    let mut flushes = Flushes::default();
    let mut image = vec![0u8; total as usize];
    let mut written = vec![false; total as usize];
    let mut drain = |flushes: &mut Flushes| {
        let mut any = false;
        for f in flushes.take_all() {
            any = true;
            let (off, n) = (f.fill.off as usize, f.fill.filled);
            assert_eq!(off % write_size, 0, "a block starts at {off}");
            assert!(n <= write_size && off + n <= image.len());
            assert!(
                !written[off..off + n].iter().any(|&w| w),
                "{off}+{n} written twice"
            );
            image[off..off + n].copy_from_slice(&f.fill.block.as_slice()[..n]);
            written[off..off + n].iter_mut().for_each(|w| *w = true);
        }
        any
    };
    // The sink borrows the exchange's state afresh for each call, as the engine's does.
    macro_rules! sink {
        () => {
            BodySink {
                owner,
                ex: &mut ex,
                fill: &mut fill,
                blocks: &pool,
                plan: Some(&mut plan),
                ranges_unconfirmed: false,
                flushes: &mut flushes,
            }
        };
    }
    let step = usize::from(*piece).max(1);
    for part in body.chunks(step) {
        sink!().feed(part);
        // Free blocks as the writer would, until the spill is placed or nothing moves.
        loop {
            drain(&mut flushes);
            let placed = sink!().drain_spill();
            if placed || !drain(&mut flushes) {
                break;
            }
        }
    }
    drain(&mut flushes);
    if let Some(want) = expected {
        assert!(
            ex.error.is_none(),
            "{:?}",
            ex.error.as_ref().map(|f| &f.message)
        );
        assert!(ex.body_complete);
        assert!(written.iter().all(|&w| w), "a hole in the file");
        assert!(image == want, "the file differs from the body");
    }
}
