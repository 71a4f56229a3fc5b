//! The writer's part for a download over several files (`engine::layout`): a block of the byte
//! space goes out one file's part at a time, from the same block, each to its file at its place
//! there — with `O_DIRECT` where the file starts aligned (its last part padded past its end, cut
//! when the download finishes), through the page cache, uncached, at its exact length where it
//! does not. The block counts as written (bytes claimed, pieces told) only once its last part is.
//! Such a download is named, and found again on disk to be resumed, here too.
use super::resume::load_control;
use super::*;
use crate::engine::layout::Layout;
use crate::plan::RangeSet;
use crate::store::control::{self, ControlFile};
use std::path::PathBuf;

impl<R: Reactor<Tag>> Engine<'_, R> {
    /// Where a read of download `dl`'s bytes from `pos` goes: the file that holds `pos`, the
    /// position in the byte space the read starts at (`pos` rounded down to where `O_DIRECT` can
    /// read, never before the file's start) and that position in the file. Bytes before `pos`
    /// are the caller's to skip.
    pub(super) fn read_place(&self, dl: usize, pos: u64) -> Option<(Fd, u64, u64)> {
        let d = &self.dls[dl];
        let aligned = pos / store::DIO_ALIGN as u64 * store::DIO_ALIGN as u64;
        let Some(layout) = d.opts.layout.as_ref() else {
            return d.file.clone().map(|f| (f as Fd, aligned, aligned));
        };
        let s = layout.first_span(pos..pos + 1)?;
        let (file, mode) = d.files.get(s.file)?.clone();
        let start = layout.files()[s.file].start;
        let at = match mode {
            WriteMode::Direct => aligned,
            _ => pos,
        }
        .max(start);
        Some((file, at, at - start))
    }

    /// Issues the first part of a full block of a download over several files.
    pub(super) fn write_layout_block(&mut self, fl: Flush, idle: &mut Vec<usize>) {
        let Flush {
            dl,
            fill,
            source,
            at_file_end,
        } = fl;
        let Fill {
            block, off, filled, ..
        } = fill;
        let d = &mut self.dls[dl];
        // (Only the last block of the download ends unaligned; the others are written up to their
        // last 4 KiB boundary, as a single file's are.)
        let data = match at_file_end {
            true => filled,
            false => filled / store::DIO_ALIGN * store::DIO_ALIGN,
        };
        if data == 0 || d.files.is_empty() {
            idle.push(dl);
            return;
        }
        if !self.issue_to_pieces(dl, off, &block.as_slice()[..data], source) {
            idle.push(dl);
            return;
        }
        let d = &mut self.dls[dl];
        d.high_water = d.high_water.max(off + data as u64);
        self.issue_span(dl, block, off, data, off);
    }

    /// Issues the part of the block at `off` (`data` bytes of it to write) that starts at `from`
    /// in the download, if any is left; otherwise the block has been written.
    fn issue_span(&mut self, dl: usize, mut block: Block, off: u64, data: usize, from: u64) {
        let d = &mut self.dls[dl];
        let Some(layout) = d.opts.layout.clone() else {
            return;
        };
        let Some(s) = layout.first_span(from..off + data as u64) else {
            return;
        };
        let Some((file, mode)) = d.files.get(s.file).cloned() else {
            return;
        };
        let bytes = (s.range.end - s.range.start) as usize;
        let mem = (s.range.start - off) as usize;
        let ends_file = s.range.end == layout.files()[s.file].range().end;
        // Every byte of the part is written (the block's own data ends aligned, unless it is
        // the download's last): only `O_DIRECT` pads, and only at its file's end.
        let len = match mode {
            WriteMode::Direct => store::write_len(bytes, ends_file),
            _ => bytes,
        };
        if len > bytes {
            // Padding past the file's end (cut when the download finishes). Only past the
            // block's data is it zeroed: before that lie the next file's bytes, still to go out.
            let end = (mem + len).min(block.as_slice().len());
            let start = data;
            if end > start {
                block.as_mut_slice()[start..end].fill(0);
            }
        }
        debug_assert!(
            mode != WriteMode::Direct
                || (mem % store::DIO_ALIGN == 0 && len % store::DIO_ALIGN == 0),
            "unaligned O_DIRECT write of a file's part at {}+{len}",
            s.range.start
        );
        d.writes += 1;
        let span = SpanWrite {
            file: s.file,
            at: s.at,
            mem,
            block_off: off,
            block_data: data,
        };
        let tag = Tag::Write {
            file: d.file_of(),
            off: s.range.start,
            len,
            done: 0,
            data: bytes,
            mode,
            span: Some(span),
        };
        let uncached = mode == WriteMode::Uncached;
        self.reactor
            .write(tag, file, block, mem..mem + len, s.at, uncached);
    }

    /// A part of a block of a download over several files was written (or not).
    pub(super) fn on_span_write(
        &mut self,
        dl: usize,
        block: Block,
        w: WriteDone,
        span: SpanWrite,
        res: i32,
    ) {
        let d = &mut self.dls[dl];
        let Some((file, mode)) = d.files.get(span.file).cloned() else {
            return;
        };
        let again = match res {
            r if r == -libc::EINTR || r == -libc::EAGAIN => Some(w.done),
            r if r == -libc::EINVAL && w.mode == WriteMode::Direct && w.done == 0 => {
                // The file system refused O_DIRECT for this file after all: through the page
                // cache from now on, this part issued again.
                if mode == WriteMode::Direct && sys::clear_direct(file.as_raw_fd()).is_ok() {
                    d.files[span.file].1 = WriteMode::Direct.fallback();
                }
                (d.files[span.file].1 != WriteMode::Direct).then_some(0)
            }
            r if w.mode == WriteMode::Uncached && super::writer::UNCACHED_REFUSED.contains(&-r) => {
                if mode == WriteMode::Uncached {
                    d.files[span.file].1 = WriteMode::Uncached.fallback();
                }
                Some(w.done)
            }
            r if r > 0 && w.done + (r as usize) < w.len => Some(w.done + r as usize),
            _ => None,
        };
        if let Some(done) = again {
            let mode = d.files[span.file].1;
            // A part that goes through the page cache after all is written at its exact length.
            let len = match mode {
                WriteMode::Direct => w.len,
                _ => w.data.max(done),
            };
            d.writes += 1;
            let tag = Tag::Write {
                file: d.file_of(),
                off: w.off,
                len,
                done,
                data: w.data,
                mode,
                span: Some(span),
            };
            let uncached = mode == WriteMode::Uncached;
            let mem = span.mem;
            self.reactor.write(
                tag,
                file,
                block,
                mem + done..mem + len,
                span.at + done as u64,
                uncached,
            );
            return;
        }
        if res < 0 || (res == 0 && w.len > w.done) {
            drop(block);
            let errno = if res < 0 { -res } else { libc::EIO };
            self.write_failed(dl, errno);
            self.wake_starved();
            self.maybe_finish(dl);
            return;
        }
        self.landed(
            dl,
            w.off..w.off + w.data as u64,
            w.mode,
            file,
            span.at,
            w.data,
        );
        let d = &self.dls[dl];
        let next = w.off + w.data as u64;
        let block_end = span.block_off + span.block_data as u64;
        if next < block_end && d.error.is_none() {
            self.issue_span(dl, block, span.block_off, span.block_data, next);
            return;
        }
        drop(block);
        // The whole block is on disk: its pieces may be decided.
        self.pieces_written(dl, span.block_off..block_end);
        self.wake_starved();
        self.maybe_finish(dl);
    }

    /// A download over several files is named by its first file's first component (a torrent's
    /// name), its control file beside it. Found with its control file and every one of its files,
    /// it resumes from what the control file claims; files found without one (or a control file
    /// without its files) are another download's or an earlier run's that cannot be vouched for:
    /// left as they are, and the download refused (exit 13) unless `--allow-overwrite` or they
    /// are empty.
    pub(super) fn prepare_layout(&mut self, dl: usize, layout: &Layout) -> Result<(), Failure> {
        let d = &mut self.dls[dl];
        let root = layout.files()[0]
            .path
            .split('/')
            .next()
            .unwrap_or_default()
            .to_string();
        let path = d.opts.dir.join(root);
        let ctl = control::control_path(&path);
        d.path = Some(path);
        if d.opts.remove_control_file {
            let _ = std::fs::remove_file(&ctl);
        }
        let paths: Vec<PathBuf> = layout
            .files()
            .iter()
            .map(|f| d.opts.dir.join(&f.path))
            .collect();
        let loaded = load_control(&ctl)?;
        if let Some(cf) = loaded.filter(|_| paths.iter().all(|p| p.is_file())) {
            return self.resume_layout(dl, layout, &paths, ctl, cf);
        }
        let d = &self.dls[dl];
        // (Empty files hold nothing to lose: those a run created before its first control file
        // was saved, say.)
        let holds = |p: &&PathBuf| std::fs::metadata(p).is_ok_and(|m| !m.is_file() || m.len() > 0);
        let found = std::iter::once(&ctl).chain(&paths).find(holds);
        match found {
            Some(p) if !d.opts.allow_overwrite => Err(Failure::fatal(
                ExitCode::FILE_EXISTS,
                format!(
                    "{} exists, and no control file describes the files of this download; use --allow-overwrite=true to download them again",
                    p.display()
                ),
            )),
            _ => Ok(()),
        }
    }

    /// Resumes a download over several files from its control file: every file opened as it is,
    /// the plan made of the bytes not claimed.
    fn resume_layout(
        &mut self,
        dl: usize,
        layout: &Layout,
        paths: &[PathBuf],
        ctl: PathBuf,
        cf: ControlFile,
    ) -> Result<(), Failure> {
        if cf.total_length != layout.total() {
            return Err(Failure::fatal(
                ExitCode::FILE_EXISTS,
                format!(
                    "The control file {} is of {} bytes, not of these files' {}; it is left as it is",
                    ctl.display(),
                    cf.total_length,
                    layout.total()
                ),
            ));
        }
        let mut files = Vec::with_capacity(paths.len());
        for (i, p) in paths.iter().enumerate() {
            let out = store::open_output(p, false, !layout.direct(i)).map_err(|e| {
                Failure::fatal(
                    ExitCode::FILE_OPEN,
                    format!(
                        "Failed to open the file {}, cause: {}",
                        p.display(),
                        sys::cause(&e)
                    ),
                )
            })?;
            files.push(out);
        }
        let first = self.first_mirror(dl);
        let d = &mut self.dls[dl];
        let done = RangeSet::from_ranges(&cf.done_ranges());
        let plan = d.plan_for(cf.total_length, &done);
        d.install_plan(plan);
        d.done_at_start = done.len();
        d.untouched = done.prefix_end();
        d.found_len = layout.total();
        d.written = done;
        d.length_known = true;
        d.ranges_ok = true;
        d.resumed = true;
        d.open_files(files);
        // The control file on disk describes these files as they are.
        d.saved_generation = d.generation;
        d.own_path = d.path.clone();
        d.control = Some(ctl);
        d.piece_length = cf.piece_length;
        d.split_url = first;
        Ok(())
    }
}
