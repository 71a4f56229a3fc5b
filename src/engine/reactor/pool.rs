//! The buffer pool: one page-aligned mapping, registered with the kernel once, cut into read blocks
//! (one per connection) and write blocks (shared). A block is handed out as a [`Block`], an owning
//! value: it is not `Copy` or `Clone`, it moves into an operation while the kernel uses it and comes
//! back with the completion, and dropping it — on any path — puts it back on its free list. A leak
//! or a double free cannot be written; the pool never grows, so memory is O(connections).
use std::cell::RefCell;
use std::io;
use std::ptr::NonNull;
use std::rc::Rc;

/// How the pool is cut up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Layout {
    pub read_size: usize,
    pub reads: usize,
    pub write_size: usize,
    pub writes: usize,
    /// Spare bytes after each write block ([`WRITE_SPARE`], or none for the smallest blocks).
    pub write_spare: usize,
}

impl Layout {
    /// Total bytes.
    pub fn bytes(&self) -> usize {
        self.read_size * self.reads + (self.write_size + self.write_spare) * self.writes
    }

    /// The smallest layout [`Layout::fit`] gives: one connection and its smallest write blocks.
    pub fn least(read_size: usize) -> Layout {
        let (write_size, writes) = Layout::smallest_writes(1);
        Layout::new(read_size, 1, write_size, writes)
    }

    /// [`Layout::fit`]'s last choice of write blocks for `slots` connections: 64 KiB, two per
    /// connection and at least eight.
    fn smallest_writes(slots: usize) -> (usize, usize) {
        (64 * 1024, (slots * 2).max(8))
    }

    fn new(read_size: usize, reads: usize, write_size: usize, writes: usize) -> Layout {
        Layout {
            read_size,
            reads,
            write_size,
            writes,
            // The smallest blocks come with many connections or a tight budget, where a fifth
            // more memory per block would cost connections.
            write_spare: if write_size >= 128 * 1024 {
                WRITE_SPARE
            } else {
                0
            },
        }
    }

    /// The layout for `slots` connections that fits in `budget` bytes. The write blocks are the
    /// largest of these that fit:
    /// - one connection, or from five up to [`FEW_LARGE_SLOTS`]: three blocks of 1 MiB;
    /// - two to four: 512 KiB blocks, two more than the connections and at least four, while
    ///   they come to at most [`MID_WRITES_CAP`];
    /// - from nine: one block per connection, of 384 KiB up to ten connections and of 256 KiB
    ///   up to sixteen, while they come to at most [`ONE_EACH_CAP`];
    /// - beyond: 128 KiB blocks (64 if those do not fit), two per connection and at least
    ///   eight; fewer connections if even that does not fit.
    ///
    /// Fewer blocks than connections is enough: a connection never waits for a block while it
    /// keeps a part-filled one (`BodySink::capacity`), blocks that come free go to the
    /// connection that has waited longest, and one that has kept its block for half a second
    /// hands it over (`Driver::reclaim_blocks`), so a slow one holds back nobody for long. The
    /// others meanwhile leave their bytes in the kernel's socket buffers and take them in large
    /// steps when their turn comes. A connection not read for a while has its window closed,
    /// though, and its sender may start slow again after the pause: over a 20 ms link, sixteen
    /// connections sharing three blocks (or six) took 5 % more wall than one block each, where
    /// eight took the same, so only up to eight share.
    ///
    /// Registered memory is resident memory, so this is most of ringdl's RSS. Every write is a
    /// request to the disk, and on the virtual machines measured (bench/RESULTS.md) each request
    /// costs the writer far more than its bytes do, and each block's end costs a few operations
    /// more (a TLS record straddles it, see [`WRITE_SPARE`]): at -x1 over a 20 ms link, three
    /// 1 MiB blocks took about 20 % less CPU than eight of 256 KiB, and at -x4 six of 512 KiB
    /// about 14 % less; at -x8 on loopback, three 1 MiB blocks about 25 % less than eight of
    /// 384 KiB in the same memory (more, four of 1 MiB, put RSS over 10 MiB).
    pub fn fit(slots: usize, read_size: usize, budget: usize) -> Option<Layout> {
        let mut slots = slots.max(1);
        loop {
            let mid = (512 * 1024, (slots + 2).max(4));
            let few_large = slots == 1 || (5..=FEW_LARGE_SLOTS).contains(&slots);
            let one_each =
                |size: usize| (slots >= 5 && size * slots <= ONE_EACH_CAP).then_some((size, slots));
            let choices = [
                few_large.then_some((1 << 20, 3)),
                (mid.0 * mid.1 <= MID_WRITES_CAP).then_some(mid),
                one_each(384 * 1024),
                one_each(256 * 1024),
                Some((128 * 1024, (slots * 2).max(8))),
                Some(Layout::smallest_writes(slots)),
            ];
            for (write_size, writes) in choices.into_iter().flatten() {
                let l = Layout::new(read_size, slots, write_size, writes);
                if l.bytes() <= budget {
                    return Some(l);
                }
            }
            if slots == 1 {
                return None;
            }
            slots -= 1;
        }
    }
}

/// Bytes after each write block that a receive may fill but a write never takes: room for the one
/// TLS record that straddles the block's end (at most 16 KiB of plaintext, 256 bytes of expansion
/// and a 5-byte header in TLS 1.3), so that it is opened in place like the others and only its
/// plaintext past the end is copied to the next block. (Ciphertext may start up to 4 KiB after
/// the plaintext, where `open_in_fill` leaves a gap, so now and then such a record still does not
/// fit and takes the copying path.) A multiple of the page size, so every block stays 4 KiB-aligned.
pub const WRITE_SPARE: usize = 20 * 1024;

/// The most memory the 512 KiB write blocks may take, their spare bytes aside (at four
/// connections); more connections get 256 KiB blocks.
pub const MID_WRITES_CAP: usize = 3 << 20;

/// The most connections that share three 1 MiB write blocks; more get one block each.
pub const FEW_LARGE_SLOTS: usize = 8;

/// The most memory one write block per connection may take, their spare bytes aside: 384 KiB
/// blocks up to ten connections, 256 KiB up to sixteen; more connections get 128 KiB blocks, two
/// each.
pub const ONE_EACH_CAP: usize = 4 << 20;

/// The two kinds of block.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Class {
    /// A connection's receive buffer (ciphertext, or a response head).
    Read = 0,
    /// A 4 KiB-aligned block of file data on its way to disk.
    Write = 1,
}

/// The mapping and the free lists; shared by the pool and every block handed out, so the memory
/// stays mapped while any block of it exists.
struct Shared {
    base: NonNull<u8>,
    layout: Layout,
    free: [RefCell<Vec<u32>>; 2],
}

impl Shared {
    /// Where the class's blocks start, their size, how many there are, and the spare bytes after
    /// each.
    fn geometry(&self, class: Class) -> (usize, usize, usize, usize) {
        let l = &self.layout;
        match class {
            Class::Read => (0, l.read_size, l.reads, 0),
            Class::Write => (l.read_size * l.reads, l.write_size, l.writes, l.write_spare),
        }
    }
}

impl Drop for Shared {
    fn drop(&mut self) {
        // SAFETY: the mapping was made in `Pool::new` with this size. `Shared` drops only when the
        // pool and every block are gone; a block the kernel may still use is owned by the reactor's
        // table until its completion (or is kept forever when the ring breaks), so nothing of the
        // mapping is referenced any more.
        unsafe {
            libc::munmap(self.base.as_ptr().cast(), self.layout.bytes());
        }
    }
}

/// One block of the pool, owned. Dropping it returns it to the pool.
pub struct Block {
    ptr: NonNull<u8>,
    len: usize,
    /// Bytes after `len` that belong to this block too (see [`WRITE_SPARE`]).
    spare: usize,
    index: u32,
    class: Class,
    shared: Rc<Shared>,
}

impl Block {
    /// Size in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// The bytes a receive may fill: the block and its spare bytes.
    pub fn room(&self) -> usize {
        self.len + self.spare
    }

    /// The block with its spare bytes after it (see [`WRITE_SPARE`]), to read.
    pub fn with_spare(&self) -> &[u8] {
        // SAFETY: as in `as_slice`; the spare bytes lie between this block and the next one (the
        // pool's stride is the block and its spare), so they are this block's alone.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len + self.spare) }
    }

    /// The block with its spare bytes after it (see [`WRITE_SPARE`]).
    pub fn with_spare_mut(&mut self) -> &mut [u8] {
        // SAFETY: as in `as_slice`; the spare bytes lie between this block and the next one (the
        // pool's stride is the block and its spare), so they are this block's alone.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len + self.spare) }
    }

    pub fn as_slice(&self) -> &[u8] {
        // SAFETY: the block is a disjoint part of a live mapping (`shared` keeps it mapped); this
        // value is its only owner, and while the kernel uses it the reactor owns this value, so no
        // other reference to these bytes exists.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }

    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        // SAFETY: as in `as_slice`; `&mut self` makes this the only live reference.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }

    /// Copies `src` into the block from byte `at` on, with stores that go past the cache where
    /// that pays (see [`copy_past_cache`]): what lands in a block is read next by the disk's
    /// write, not by this thread. Panics if it does not fit.
    pub fn put(&mut self, at: usize, src: &[u8]) {
        copy_past_cache(&mut self.as_mut_slice()[at..at + src.len()], src);
    }

    /// The address the kernel is given (only the reactor hands it over, owning the block meanwhile).
    pub(super) fn addr(&mut self) -> *mut u8 {
        self.ptr.as_ptr()
    }
}

impl Drop for Block {
    fn drop(&mut self) {
        let mut free = self.shared.free[self.class as usize].borrow_mut();
        debug_assert!(!free.contains(&self.index), "block returned twice");
        free.push(self.index);
    }
}

/// Copies below this size are left to `copy_from_slice`.
const PAST_CACHE_FROM: usize = 1024;

/// Copies `src` into `dst` (of the same length). From [`PAST_CACHE_FROM`] bytes on, on x86-64,
/// with non-temporal stores: the destination's cache lines are not read first and not kept.
/// A write block's lines have usually left the cache since the block's last write (the pool is
/// larger than a core's cache), and an ordinary copy reads each one in before overwriting it;
/// that made the copy of TLS plaintext into blocks cost four times rustls's own copy of the same
/// bytes into its (cache-hot) buffer. The stores are fenced before this returns, so the block is
/// whole before the kernel is handed it.
pub fn copy_past_cache(dst: &mut [u8], src: &[u8]) {
    assert_eq!(
        dst.len(),
        src.len(),
        "a copy between slices of unequal length"
    );
    #[cfg(all(target_arch = "x86_64", not(miri)))]
    if src.len() >= PAST_CACHE_FROM {
        use std::arch::x86_64::{_mm_loadu_si128, _mm_sfence, _mm_stream_si128};
        let len = src.len();
        // Up to the first 16-byte boundary of the destination: an ordinary copy.
        let head = dst.as_ptr().align_offset(16).min(len);
        dst[..head].copy_from_slice(&src[..head]);
        let mut i = head;
        // SAFETY: every load and store is within `i..i + 64`, and `i + 64 <= len`, the length
        // of both slices; the stores' addresses are `dst + head + 64k (+ 16j)`, 16-byte aligned
        // as `_mm_stream_si128` requires; SSE2 is part of every x86-64 CPU. The fence orders the
        // non-temporal stores before every later store (the hand-over of the block).
        unsafe {
            let s = src.as_ptr();
            let d = dst.as_mut_ptr();
            while i + 64 <= len {
                let a = _mm_loadu_si128(s.add(i).cast());
                let b = _mm_loadu_si128(s.add(i + 16).cast());
                let c = _mm_loadu_si128(s.add(i + 32).cast());
                let e = _mm_loadu_si128(s.add(i + 48).cast());
                _mm_stream_si128(d.add(i).cast(), a);
                _mm_stream_si128(d.add(i + 16).cast(), b);
                _mm_stream_si128(d.add(i + 32).cast(), c);
                _mm_stream_si128(d.add(i + 48).cast(), e);
                i += 64;
            }
            _mm_sfence();
        }
        dst[i..].copy_from_slice(&src[i..]);
        return;
    }
    dst.copy_from_slice(src);
}

/// Page-aligned memory holding every block.
pub struct Pool {
    shared: Rc<Shared>,
}

impl Pool {
    /// Maps the pool (not yet registered).
    pub fn new(layout: Layout) -> io::Result<Pool> {
        // SAFETY: an anonymous private mapping of the requested size; the result is checked.
        let base = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                layout.bytes(),
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if base == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        let base =
            NonNull::new(base.cast::<u8>()).ok_or_else(|| io::Error::other("mmap gave null"))?;
        Ok(Pool {
            shared: Rc::new(Shared {
                base,
                layout,
                free: [
                    RefCell::new((0..layout.reads as u32).rev().collect()),
                    RefCell::new((0..layout.writes as u32).rev().collect()),
                ],
            }),
        })
    }

    /// Block size of `class`.
    pub fn size(&self, class: Class) -> usize {
        self.shared.geometry(class).1
    }

    /// Takes a free block of `class`.
    pub fn alloc(&self, class: Class) -> Option<Block> {
        let index = self.shared.free[class as usize].borrow_mut().pop()?;
        let (start, size, _, spare) = self.shared.geometry(class);
        // SAFETY: `index` < the class's count (free lists hold only such indices), so the block and
        // its spare bytes lie inside the mapping.
        let ptr = unsafe {
            self.shared
                .base
                .as_ptr()
                .add(start + index as usize * (size + spare))
        };
        Some(Block {
            ptr: NonNull::new(ptr)?,
            len: size,
            spare,
            index,
            class,
            shared: Rc::clone(&self.shared),
        })
    }

    /// Free blocks of `class`.
    pub fn free_count(&self, class: Class) -> usize {
        self.shared.free[class as usize].borrow().len()
    }

    /// Blocks of `class` in all.
    pub fn capacity(&self, class: Class) -> usize {
        self.shared.geometry(class).2
    }

    /// Blocks not back in the pool, as (read, write).
    pub fn outstanding(&self) -> (usize, usize) {
        (
            self.capacity(Class::Read) - self.free_count(Class::Read),
            self.capacity(Class::Write) - self.free_count(Class::Write),
        )
    }

    /// The iovec to register with the ring (buffer index 0).
    pub fn iovec(&self) -> libc::iovec {
        libc::iovec {
            iov_base: self.shared.base.as_ptr().cast(),
            iov_len: self.shared.layout.bytes(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The copy past the cache gives what `copy_from_slice` gives, at every alignment of either
    /// side and at lengths around its threshold and its 16- and 64-byte steps, and writes
    /// nothing outside its destination.
    #[test]
    fn copies_past_the_cache_are_exact() {
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let src: Vec<u8> = (0..20_000)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x as u8
            })
            .collect();
        let lens = [
            0, 1, 15, 63, 1023, 1024, 1025, 1040, 1087, 4096, 4113, 16_384, 16_401,
        ];
        for len in lens {
            for s_off in [0, 1, 7, 16, 33] {
                for d_off in 0..64 {
                    let mut dst = vec![0xa5u8; len + 128];
                    copy_past_cache(&mut dst[d_off..d_off + len], &src[s_off..s_off + len]);
                    assert!(
                        dst[..d_off].iter().all(|&b| b == 0xa5),
                        "{len} {s_off} {d_off}"
                    );
                    assert_eq!(&dst[d_off..d_off + len], &src[s_off..s_off + len]);
                    assert!(dst[d_off + len..].iter().all(|&b| b == 0xa5));
                }
            }
        }
    }

    #[test]
    fn layout_fits_budget() {
        // -x8 over HTTPS: 8 read blocks and three write blocks of 1 MiB, 3.6 MiB in all with the
        // write blocks' spare bytes.
        let l = Layout::fit(8, 72 * 1024, 8 << 20).unwrap();
        assert_eq!((l.reads, l.write_size, l.writes), (8, 1 << 20, 3));
        assert!(l.bytes() <= 4 << 20);
        // One connection, and five to eight, have three 1 MiB blocks; two to four have 512 KiB
        // blocks, two more than the connections and at least four; from nine, one block each:
        // 384 KiB up to ten, 256 KiB up to sixteen.
        let l = Layout::fit(1, 72 * 1024, 8 << 20).unwrap();
        assert_eq!((l.reads, l.write_size, l.writes), (1, 1 << 20, 3));
        let l = Layout::fit(2, 72 * 1024, 8 << 20).unwrap();
        assert_eq!((l.reads, l.write_size, l.writes), (2, 512 * 1024, 4));
        let l = Layout::fit(4, 72 * 1024, 8 << 20).unwrap();
        assert_eq!((l.reads, l.write_size, l.writes), (4, 512 * 1024, 6));
        let l = Layout::fit(5, 72 * 1024, 8 << 20).unwrap();
        assert_eq!((l.reads, l.write_size, l.writes), (5, 1 << 20, 3));
        // Under a tight budget one connection takes smaller blocks, not none.
        let l = Layout::fit(1, 72 * 1024, 2 << 20).unwrap();
        assert_eq!((l.reads, l.write_size, l.writes), (1, 128 * 1024, 8));
        let l = Layout::fit(9, 72 * 1024, 8 << 20).unwrap();
        assert_eq!((l.reads, l.write_size, l.writes), (9, 384 * 1024, 9));
        let l = Layout::fit(11, 72 * 1024, 8 << 20).unwrap();
        assert_eq!((l.reads, l.write_size, l.writes), (11, 256 * 1024, 11));
        let l = Layout::fit(16, 72 * 1024, 8 << 20).unwrap();
        assert_eq!((l.reads, l.write_size, l.writes), (16, 256 * 1024, 16));
        let l = Layout::fit(17, 72 * 1024, 8 << 20).unwrap();
        assert_eq!((l.reads, l.write_size, l.writes), (17, 128 * 1024, 34));
        // A tight budget takes smaller blocks before fewer connections.
        let l = Layout::fit(8, 72 * 1024, 3 << 20).unwrap();
        assert_eq!((l.reads, l.write_size, l.writes), (8, 256 * 1024, 8));
        let l = Layout::fit(16, 72 * 1024, 4 << 20).unwrap();
        assert_eq!((l.reads, l.write_size), (16, 64 * 1024));
        let l = Layout::fit(200, 72 * 1024, 8 << 20).unwrap();
        assert!(l.reads < 200 && l.bytes() <= 8 << 20);
        assert!(Layout::fit(1, 72 * 1024, 100 * 1024).is_none());
        // The smallest layout is what the tightest budget gets, and has no spare bytes; blocks of
        // 128 KiB and more have theirs.
        let least = Layout::least(72 * 1024);
        assert_eq!(Layout::fit(1, 72 * 1024, least.bytes()), Some(least));
        assert_eq!(Layout::fit(4, 72 * 1024, least.bytes() - 1), None);
        assert_eq!(least.write_spare, 0);
        assert_eq!(
            Layout::fit(16, 72 * 1024, 8 << 20).unwrap().write_spare,
            WRITE_SPARE
        );
    }

    #[test]
    fn blocks_are_aligned_disjoint_and_come_back_when_dropped() {
        let p = Pool::new(Layout::fit(2, 72 * 1024, 2 << 20).unwrap()).unwrap();
        let writes = p.capacity(Class::Write);
        let mut a = p.alloc(Class::Write).unwrap();
        let mut b = p.alloc(Class::Write).unwrap();
        let mut r = p.alloc(Class::Read).unwrap();
        assert_eq!(a.addr() as usize % 4096, 0);
        assert_eq!(r.addr() as usize % 4096, 0);
        assert_eq!(b.addr() as usize % 4096, 0);
        // Each write block has its spare bytes after it, its own: filling both blocks with their
        // spare bytes and the read block leaves each as it was filled.
        assert_eq!((r.room(), a.room()), (r.len(), a.len() + WRITE_SPARE));
        a.with_spare_mut().fill(1);
        b.with_spare_mut().fill(2);
        r.as_mut_slice().fill(3);
        assert!(a.with_spare().iter().all(|&x| x == 1));
        assert!(b.with_spare().iter().all(|&x| x == 2));
        assert!(r.as_slice().iter().all(|&x| x == 3));
        assert_eq!(p.free_count(Class::Write), writes - 2);
        assert_eq!(p.outstanding(), (1, 2));
        drop(a);
        drop(b);
        drop(r);
        assert_eq!(p.outstanding(), (0, 0));
    }

    #[test]
    fn the_mapping_outlives_the_pool_while_a_block_exists() {
        let p = Pool::new(Layout::fit(1, 72 * 1024, 2 << 20).unwrap()).unwrap();
        let mut b = p.alloc(Class::Write).unwrap();
        drop(p);
        b.as_mut_slice().fill(7);
        assert_eq!(b.as_slice()[0], 7);
    }

    #[test]
    fn an_empty_class_gives_nothing() {
        let p = Pool::new(Layout::fit(1, 72 * 1024, 2 << 20).unwrap()).unwrap();
        let held: Vec<Block> = std::iter::from_fn(|| p.alloc(Class::Read)).collect();
        assert_eq!(held.len(), p.capacity(Class::Read));
        assert!(p.alloc(Class::Read).is_none());
    }
}
