//! Output files: choosing the path (aria2's renaming rules), opening with `O_DIRECT` or the buffered
//! fallback, preallocating, and the arithmetic of packing bytes into aligned write blocks. The bytes
//! themselves move through the ring (`engine/`); this module decides where and how much. Also the
//! daemon's record file (`records`), which keeps long lists' strings out of memory.
pub mod checksum;
pub mod control;
pub mod gidmap;
pub mod records;
pub mod serverstat;
pub mod session;
use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

/// Alignment of every `O_DIRECT` write: offset, length and memory.
pub const DIO_ALIGN: usize = 4096;

/// Bytes of a write block of `cap` bytes at `block_off` that may still be filled, when the range
/// being received ends at `range_end`.
pub fn room(block_off: u64, filled: usize, cap: usize, range_end: u64) -> usize {
    let left_in_range = range_end.saturating_sub(block_off + filled as u64);
    (cap - filled).min(usize::try_from(left_in_range).unwrap_or(usize::MAX))
}

/// How many bytes of a block holding `filled` bytes to hand to an `O_DIRECT` write. At the end of the
/// file the tail is padded up to the alignment (the file is cut to length afterwards); elsewhere only
/// the aligned prefix can be written, and the rest is fetched again.
pub fn write_len(filled: usize, at_file_end: bool) -> usize {
    if at_file_end {
        filled.div_ceil(DIO_ALIGN) * DIO_ALIGN
    } else {
        filled / DIO_ALIGN * DIO_ALIGN
    }
}

/// How an output file is written. A file starts in one mode and only ever moves down the list,
/// when the file system refuses the mode it is in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WriteMode {
    /// `O_DIRECT`: writes aligned in offset, length and memory; the last block goes out padded and
    /// the file is cut to length when it is complete.
    Direct,
    /// Through the page cache with `RWF_DONTCACHE`: each write starts its own writeback and the
    /// kernel drops the pages once they are on disk. Writes have their exact length, so no padding
    /// reaches the file (but for a write issued in `O_DIRECT` and retried here after a refusal,
    /// which the finishing cut takes off). For new files of one write block (creating them is most
    /// of their cost, and a padded write plus a cut would double their metadata work), and where
    /// `O_DIRECT` is refused.
    Uncached,
    /// Through the page cache, each write followed by a writeback and a page-cache drop
    /// (`Reactor::writeback`): where neither of the above is accepted.
    Buffered,
}

impl WriteMode {
    /// How many bytes of a block holding `filled` bytes to hand to a write in this mode.
    /// Only `O_DIRECT` pads the end of the file ([`write_len`]).
    pub fn write_len(self, filled: usize, at_file_end: bool) -> usize {
        match self {
            WriteMode::Direct => write_len(filled, at_file_end),
            _ if at_file_end => filled,
            _ => write_len(filled, false),
        }
    }

    /// The mode to go on in after the file system refused a write in this one.
    pub fn fallback(self) -> WriteMode {
        match self {
            WriteMode::Direct => WriteMode::Uncached,
            _ => WriteMode::Buffered,
        }
    }
}

/// An output file open for writing.
#[derive(Debug)]
pub struct OutFile {
    pub file: File,
    pub mode: WriteMode,
}

/// What the deterministic simulation (`engine::simulation`) asks of the file-system steps of the
/// file jobs, which it runs on its own thread: the error the next step fails with, and the data
/// files synced (what a power loss cannot take). Outside the tests, [`step`] and [`sync_data`] are
/// the plain calls.
#[cfg(test)]
pub mod sim_hooks {
    use std::cell::{Cell, RefCell};
    thread_local! {
        /// The errno a coming [`super::step`] fails with, and how many steps pass before it
        /// (taken by the step that fails).
        pub static FAIL_NEXT: Cell<Option<(u32, i32)>> = const { Cell::new(None) };
        /// `(device, inode)` of every data file [`super::sync_data`] synced, in order.
        pub static SYNCED: RefCell<Vec<(u64, u64)>> = const { RefCell::new(Vec::new()) };
        /// `(device, inode)` of every data file whose sync failed: a writeback error, its
        /// unsynced writes lost.
        pub static SYNC_FAILED: RefCell<Vec<(u64, u64)>> = const { RefCell::new(Vec::new()) };
    }
}

/// One file-system step of a file job (creating, saving, renaming, removing, cutting): where the
/// simulation injects a failure. Nothing outside the tests.
pub fn step() -> io::Result<()> {
    #[cfg(test)]
    match sim_hooks::FAIL_NEXT.take() {
        Some((0, errno)) => return Err(io::Error::from_raw_os_error(errno)),
        Some((n, errno)) => sim_hooks::FAIL_NEXT.set(Some((n - 1, errno))),
        None => {}
    }
    Ok(())
}

/// `fdatasync` of a data file: what it holds survives a power loss from here on.
pub fn sync_data(file: &File) -> io::Result<()> {
    let stepped = step();
    #[cfg(test)]
    {
        use std::os::unix::fs::MetadataExt;
        let m = file.metadata()?;
        let log = match stepped {
            Ok(()) => &sim_hooks::SYNCED,
            Err(_) => &sim_hooks::SYNC_FAILED,
        };
        log.with(|s| s.borrow_mut().push((m.dev(), m.ino())));
    }
    stepped?;
    file.sync_data()
}

/// Set, this environment variable makes ringdl write as if the filesystem had refused `O_DIRECT`:
/// the page-cache paths can then be tested (and compared) on any filesystem. The value
/// `writeback` skips `RWF_DONTCACHE` too ([`WriteMode::Buffered`]); any other value starts at
/// [`WriteMode::Uncached`].
pub const NO_DIRECT_ENV: &str = "RINGDL_NO_DIRECT";

/// Opens `path` for reading and writing (creating it; emptying it unless resuming), with `O_DIRECT`
/// where the filesystem allows it, or through the page cache where `uncached` asks for it.
pub fn open_output(path: &Path, truncate: bool, uncached: bool) -> io::Result<OutFile> {
    step()?;
    let mut opts = OpenOptions::new();
    opts.read(true).write(true).create(true).truncate(truncate);
    let forced = std::env::var_os(NO_DIRECT_ENV);
    if forced.as_deref() == Some(std::ffi::OsStr::new("writeback")) {
        return Ok(OutFile {
            file: opts.open(path)?,
            mode: WriteMode::Buffered,
        });
    }
    if uncached || forced.is_some() {
        return Ok(OutFile {
            file: opts.open(path)?,
            mode: WriteMode::Uncached,
        });
    }
    match opts.clone().custom_flags(libc::O_DIRECT).open(path) {
        Ok(file) => Ok(OutFile {
            file,
            mode: WriteMode::Direct,
        }),
        Err(e) if e.raw_os_error() == Some(libc::EINVAL) => Ok(OutFile {
            file: opts.open(path)?,
            mode: WriteMode::Direct.fallback(),
        }),
        Err(e) => Err(e),
    }
}

/// Why no output path could be chosen.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PathError {
    /// The file exists and neither overwriting nor renaming is allowed (aria2 exit 13).
    Exists(PathBuf),
    /// Every `name.N.ext` up to 9999 is taken (aria2 exit 14).
    NoFreeName(PathBuf),
}

impl std::fmt::Display for PathError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PathError::Exists(p) => write!(
                f,
                "File {} exists, but a control file(*.aria2) does not exist. Download was canceled in order to prevent your file from being truncated to 0. If you are sure to download the file all over again, then delete it or add --allow-overwrite=true option and restart ringdl.",
                p.display()
            ),
            PathError::NoFreeName(p) => write!(f, "Renaming file {} failed: no free name left", p.display()),
        }
    }
}

/// `name.N.ext` for auto-renaming: the extension is what follows the last dot, unless the only dot
/// leads the name.
pub fn numbered(name: &str, n: u32) -> String {
    match name.rfind('.') {
        Some(i) if i > 0 => format!("{}.{n}{}", &name[..i], &name[i..]),
        _ => format!("{name}.{n}"),
    }
}

/// Picks the path to write: `dir/name` if free (or overwriting is allowed), else the first free
/// `name.N.ext` when renaming is allowed. Returns whether it was renamed.
pub fn choose_path(
    dir: &Path,
    name: &str,
    allow_overwrite: bool,
    auto_rename: bool,
    exists: impl Fn(&Path) -> bool,
) -> Result<(PathBuf, bool), PathError> {
    let first = dir.join(name);
    if allow_overwrite || !exists(&first) {
        return Ok((first, false));
    }
    if !auto_rename {
        return Err(PathError::Exists(first));
    }
    for n in 1..=9999 {
        let p = dir.join(numbered(name, n));
        if !exists(&p) {
            return Ok((p, true));
        }
    }
    Err(PathError::NoFreeName(first))
}

/// Writes `bytes` to `path` so that a reader sees the old file or the new one, never a part:
/// to `path` + `__temp` (aria2's name), fsynced, renamed over `path`, then the directory fsynced.
/// A failure leaves no temporary file behind.
pub fn atomic_write(path: &Path, bytes: &[u8]) -> io::Result<()> {
    atomic_write_with(path, |w| w.write_all(bytes))
}

/// [`atomic_write`] of what `fill` writes, through a 64 KiB buffer: a long text is never held
/// whole. An error from `fill` fails the write the same way and leaves `path` as it was.
pub fn atomic_write_with(
    path: &Path,
    fill: impl FnOnce(&mut dyn io::Write) -> io::Result<()>,
) -> io::Result<()> {
    let mut temp = path.as_os_str().to_owned();
    temp.push("__temp");
    let temp = PathBuf::from(temp);
    let written = (|| {
        step()?;
        let mut w = io::BufWriter::with_capacity(64 * 1024, File::create(&temp)?);
        fill(&mut w)?;
        let f = w.into_inner().map_err(io::IntoInnerError::into_error)?;
        f.sync_all()?;
        step()?;
        std::fs::rename(&temp, path)
    })();
    if let Err(e) = written {
        let _ = std::fs::remove_file(&temp);
        return Err(e);
    }
    // Some filesystems refuse fsync on a directory; the file itself is already durable.
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    if let Ok(d) = File::open(dir) {
        let _ = d.sync_all();
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn room_stops_at_block_and_range_end() {
        assert_eq!(room(0, 0, 65536, 1_000_000), 65536);
        assert_eq!(room(0, 65000, 65536, 1_000_000), 536);
        assert_eq!(room(0, 0, 65536, 4097), 4097);
        assert_eq!(room(4096, 1, 65536, 4097), 0);
        assert_eq!(room(16384, 0, 65536, 16384), 0);
        assert_eq!(room(0, 10, 65536, 5), 0);
    }

    #[test]
    fn write_len_pads_tail_and_trims_middle() {
        assert_eq!(write_len(0, true), 0);
        assert_eq!(write_len(1, true), 4096);
        assert_eq!(write_len(4095, true), 4096);
        assert_eq!(write_len(4096, true), 4096);
        assert_eq!(write_len(4097, true), 8192);
        assert_eq!(write_len(4097, false), 4096);
        assert_eq!(write_len(4095, false), 0);
        assert_eq!(write_len(262144, false), 262144);
    }

    /// Packs a byte stream delivered in odd pieces into blocks the way a connection does and checks
    /// that the writes tile the file exactly, each aligned, with the tail padded.
    #[test]
    fn packing_odd_pieces_tiles_the_file() {
        for total in [0u64, 1, 4095, 4096, 4097, 65536 * 3 + 17, 1 << 20] {
            for piece in [1usize, 7, 4096, 5000, 70000] {
                let cap = 65536;
                let mut writes: Vec<(u64, usize)> = Vec::new();
                let (mut off, mut filled, mut pos) = (0u64, 0usize, 0u64);
                while pos < total {
                    let take = (piece as u64).min(total - pos) as usize;
                    let mut left = take;
                    while left > 0 {
                        let r = room(off, filled, cap, total);
                        let n = r.min(left);
                        filled += n;
                        left -= n;
                        pos += n as u64;
                        if filled == cap || pos == total {
                            let len = write_len(filled, pos == total);
                            writes.push((off, len));
                            off += filled as u64;
                            filled = 0;
                        }
                    }
                }
                let mut at = 0;
                for (o, l) in &writes {
                    assert_eq!(*o, at);
                    assert_eq!(o % DIO_ALIGN as u64, 0);
                    assert_eq!(l % DIO_ALIGN, 0);
                    at += *l as u64;
                }
                assert_eq!(
                    at,
                    total.div_ceil(4096) * 4096,
                    "total {total} piece {piece}"
                );
            }
        }
    }

    #[test]
    fn numbered_names_like_aria2() {
        assert_eq!(numbered("file.bin", 1), "file.1.bin");
        assert_eq!(numbered("a.tar.gz", 2), "a.tar.2.gz");
        assert_eq!(numbered("README", 3), "README.3");
        assert_eq!(numbered(".bashrc", 1), ".bashrc.1");
    }

    #[test]
    fn choose_path_rules() {
        let taken: HashSet<PathBuf> = ["/d/f.bin", "/d/f.1.bin"]
            .iter()
            .map(PathBuf::from)
            .collect();
        let exists = |p: &Path| taken.contains(p);
        let d = Path::new("/d");
        assert_eq!(
            choose_path(d, "g.bin", false, true, exists).unwrap(),
            (PathBuf::from("/d/g.bin"), false)
        );
        assert_eq!(
            choose_path(d, "f.bin", true, true, exists).unwrap(),
            (PathBuf::from("/d/f.bin"), false)
        );
        assert_eq!(
            choose_path(d, "f.bin", false, true, exists).unwrap(),
            (PathBuf::from("/d/f.2.bin"), true)
        );
        assert_eq!(
            choose_path(d, "f.bin", false, false, exists),
            Err(PathError::Exists(PathBuf::from("/d/f.bin")))
        );
    }

    #[test]
    fn open_output_creates_and_truncates() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("x");
        std::fs::write(&p, b"old contents").unwrap();
        let out = open_output(&p, true, false).unwrap();
        drop(out);
        assert_eq!(std::fs::metadata(&p).unwrap().len(), 0);
        std::fs::write(&p, b"old contents").unwrap();
        drop(open_output(&p, false, false).unwrap());
        assert_eq!(std::fs::read(&p).unwrap(), b"old contents");
    }

    /// A file asked for uncached is opened without `O_DIRECT`, in that mode.
    #[test]
    fn open_output_uncached_skips_o_direct() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("x");
        let out = open_output(&p, true, true).unwrap();
        assert_eq!(out.mode, WriteMode::Uncached);
        let flags =
            crate::engine::sys::status_flags(std::os::fd::AsRawFd::as_raw_fd(&out.file)).unwrap();
        assert_eq!(flags & libc::O_DIRECT, 0);
    }

    /// Only `O_DIRECT` pads the end of a file; in the middle every mode writes the aligned prefix
    /// (the rest of a block that did not fill is fetched again). Modes only go down.
    #[test]
    fn write_modes_pad_only_direct_and_fall_back_in_order() {
        for filled in [0, 1, 4095, 4096, 4097, 131_071, 131_072] {
            assert_eq!(
                WriteMode::Direct.write_len(filled, true),
                write_len(filled, true)
            );
            for mode in [WriteMode::Uncached, WriteMode::Buffered] {
                assert_eq!(mode.write_len(filled, true), filled, "{mode:?}");
            }
            for mode in [WriteMode::Direct, WriteMode::Uncached, WriteMode::Buffered] {
                assert_eq!(
                    mode.write_len(filled, false),
                    filled / 4096 * 4096,
                    "{mode:?}"
                );
            }
        }
        assert_eq!(WriteMode::Direct.fallback(), WriteMode::Uncached);
        assert_eq!(WriteMode::Uncached.fallback(), WriteMode::Buffered);
        assert_eq!(WriteMode::Buffered.fallback(), WriteMode::Buffered);
    }
}
