//! The buffer pool: one page-aligned mapping, registered with the ring once, cut into read blocks (one
//! per connection slot) and write blocks (shared, handed out by a free list). It never grows: memory is
//! O(connections), not O(bytes).
use std::io;

/// How the pool is cut up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Layout {
    pub read_size: usize,
    pub reads: usize,
    pub write_size: usize,
    pub writes: usize,
}

impl Layout {
    /// Total bytes.
    pub fn bytes(&self) -> usize {
        self.read_size * self.reads + self.write_size * self.writes
    }

    /// The largest layout for `slots` connections that fits in `budget` bytes: write blocks of 256,
    /// 128 or 64 KiB, about three per connection; fewer connections if even that does not fit.
    pub fn fit(slots: usize, read_size: usize, budget: usize) -> Option<Layout> {
        let mut slots = slots.max(1);
        loop {
            for write_size in [256 * 1024, 128 * 1024, 64 * 1024] {
                let writes = (slots * 3).max(4);
                let l = Layout {
                    read_size,
                    reads: slots,
                    write_size,
                    writes,
                };
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

/// Equal-sized blocks inside the pool's mapping.
pub struct Blocks {
    base: *mut u8,
    size: usize,
    count: usize,
}

impl Blocks {
    /// Block size in bytes.
    pub fn size(&self) -> usize {
        self.size
    }

    /// Address of block `i`.
    pub fn ptr(&self, i: usize) -> *mut u8 {
        assert!(i < self.count);
        // SAFETY: in bounds of the mapping by the assert above.
        unsafe { self.base.add(i * self.size) }
    }

    /// Block `i` as a slice.
    ///
    /// The caller must hold block `i` with no operation on it in flight; the engine only touches a
    /// block when the in-flight table has no entry for it (invariant 1).
    pub fn slice(&mut self, i: usize) -> &mut [u8] {
        // SAFETY: in bounds; `&mut self` prevents two live slices from this set of blocks, and the
        // kernel does not own the block while the engine uses it (see above).
        unsafe { std::slice::from_raw_parts_mut(self.ptr(i), self.size) }
    }
}

/// The shared write blocks and their free list.
pub struct WriteBlocks {
    blocks: Blocks,
    free: Vec<u32>,
}

impl WriteBlocks {
    pub fn size(&self) -> usize {
        self.blocks.size
    }
    pub fn ptr(&self, i: u32) -> *mut u8 {
        self.blocks.ptr(i as usize)
    }
    /// Write block `i` as a slice; same rule as [`Blocks::slice`].
    pub fn slice(&mut self, i: u32) -> &mut [u8] {
        self.blocks.slice(i as usize)
    }
    /// Takes a free block.
    pub fn alloc(&mut self) -> Option<u32> {
        self.free.pop()
    }
    /// Returns a block.
    pub fn free(&mut self, i: u32) {
        debug_assert!(!self.free.contains(&i));
        self.free.push(i);
    }
    /// Free blocks.
    pub fn free_count(&self) -> usize {
        self.free.len()
    }
}

/// Page-aligned memory holding every block: one read block per connection slot, then the write blocks.
pub struct Pool {
    base: *mut u8,
    layout: Layout,
    pub reads: Blocks,
    pub writes: WriteBlocks,
    /// Set when the kernel may still hold blocks (the ring failed before draining): never unmap.
    leaked: bool,
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
        let base = base as *mut u8;
        // SAFETY: the read blocks end inside the mapping, where the write blocks begin.
        let write_base = unsafe { base.add(layout.read_size * layout.reads) };
        Ok(Pool {
            base,
            layout,
            reads: Blocks {
                base,
                size: layout.read_size,
                count: layout.reads,
            },
            writes: WriteBlocks {
                blocks: Blocks {
                    base: write_base,
                    size: layout.write_size,
                    count: layout.writes,
                },
                free: (0..layout.writes as u32).rev().collect(),
            },
            leaked: false,
        })
    }

    /// Keeps the mapping for the rest of the process instead of unmapping it on drop.
    pub fn leak(&mut self) {
        self.leaked = true;
    }

    /// The iovec to register with the ring (buffer index 0).
    pub fn iovec(&self) -> libc::iovec {
        libc::iovec {
            iov_base: self.base as *mut libc::c_void,
            iov_len: self.layout.bytes(),
        }
    }
}

impl Drop for Pool {
    fn drop(&mut self) {
        if self.leaked {
            return;
        }
        // SAFETY: the mapping was made in `new` with this size; the engine drops the pool only after
        // the ring is drained and dropped (invariant 2), so the kernel no longer references it.
        unsafe {
            libc::munmap(self.base as *mut libc::c_void, self.layout.bytes());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout_fits_budget() {
        let l = Layout::fit(8, 72 * 1024, 8 << 20).unwrap();
        assert_eq!(l.write_size, 256 * 1024);
        assert!(l.bytes() <= 8 << 20);
        let l = Layout::fit(16, 72 * 1024, 8 << 20).unwrap();
        assert_eq!(l.reads, 16);
        assert!(l.write_size < 256 * 1024);
        let l = Layout::fit(200, 72 * 1024, 8 << 20).unwrap();
        assert!(l.reads < 200 && l.bytes() <= 8 << 20);
        assert!(Layout::fit(1, 72 * 1024, 100 * 1024).is_none());
    }

    #[test]
    fn blocks_are_aligned_and_disjoint() {
        let mut p = Pool::new(Layout::fit(2, 72 * 1024, 2 << 20).unwrap()).unwrap();
        assert_eq!(p.reads.ptr(0) as usize % 4096, 0);
        let a = p.writes.alloc().unwrap();
        let b = p.writes.alloc().unwrap();
        assert_ne!(a, b);
        assert_eq!(p.writes.ptr(a) as usize % 4096, 0);
        p.writes.slice(a).fill(1);
        p.writes.slice(b).fill(2);
        p.reads.slice(1).fill(3);
        assert!(p.writes.slice(a).iter().all(|&x| x == 1));
        assert!(p.reads.slice(0).iter().all(|&x| x == 0));
        p.writes.free(a);
        assert_eq!(p.writes.alloc(), Some(a));
    }
}
