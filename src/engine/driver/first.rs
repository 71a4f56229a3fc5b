//! A download's first answer, from any protocol: the file named (`-o`, the name the answer gives,
//! the URL's; renamed past a file found) and created on the file-job thread, the plan made, the
//! helpers asked for, the first control file saved.
use super::*;

impl<R: Reactor<Tag>> Engine<'_, R> {
    /// The first answer of a download, from any protocol: name and open the file, make the plan,
    /// ask for helpers.
    pub(super) fn take_first_answer(
        &mut self,
        slot: usize,
        first: FirstAnswer,
    ) -> Result<(), Failure> {
        let Some((c, ex)) = self.exchange_at(slot) else {
            return Ok(());
        };
        let conn_id = c.id;
        let (dl, mirror) = (ex.dl, ex.mirror);
        let url = ex.url.clone();
        let total = first.total;
        let d = &mut self.dls[dl];
        d.last_modified = first.last_modified;
        d.validator = first.validator;
        if d.opts.dry_run {
            let name = d
                .opts
                .out
                .clone()
                .unwrap_or_else(|| http::filename_from_url(&url));
            let path = d.opts.dir.join(name);
            self.finish_without_body(dl, Some((path, total.unwrap_or(0))));
            return Ok(());
        }
        let layout = d.opts.layout.clone();
        if let Some(l) = &layout {
            // A download over several files is of their length, whatever the source.
            if total != Some(l.total()) {
                return Err(super::response::total_mismatch(total, Some(l.total())));
            }
        }
        if let (Some(want), Some(t)) = (d.opts.expected_total, total) {
            if want != t {
                // (aria2c asks for the range its Metalink says and fails on the answer, 8.)
                return Err(Failure::retry(
                    ExitCode::CANNOT_RESUME,
                    format!("The Metalink says {want} bytes; the server has {t}"),
                ));
            }
        }
        // Whether this response creates the file (not a retry that goes on writing into it).
        let created = d.file.is_none() && d.opening.is_none();
        let one_block = layout.is_none()
            && total.is_some_and(|n| n <= self.reactor.pool().size(Class::Write) as u64);
        let mut allocating = None;
        if created {
            // Starting over: in the file it made or took up, under its name (never renamed
            // again, nor onto a file of the name the URL gives that it left alone).
            let own = d.own_path.clone();
            // A Metalink to follow: its name (as the file would have it) or its media type says.
            let name = d
                .opts
                .out
                .clone()
                .or_else(|| first.name.clone())
                .unwrap_or_else(|| http::filename_from_url(&url));
            let follow = d.opts.follow_metalink;
            // (A Metalink fetched to describe another download is one whatever it is called.)
            d.document = layout.is_none()
                && follow != crate::engine::Follow::No
                && (d.opts.describes.is_some()
                    || is_metalink(&name, first.content_type.as_deref()));
            // (Once in memory, always: an attempt that starts over makes a new memory file,
            // never one on disk.)
            let in_memory = d.in_memory
                || (d.document && follow == crate::engine::Follow::Memory && own.is_none());
            if in_memory && total.is_some_and(|n| n > MEMORY_DOCUMENT_MAX) {
                return Err(too_large_for_memory(&name));
            }
            d.in_memory = in_memory;
            if in_memory {
                // One connection: without a control file, blocks past the first gap would have
                // nothing to describe them (and a Metalink is small).
                d.opts.split = 1;
            }
            let path = match (own, &layout, d.path.clone()) {
                // Held in memory: named as aria2c names it, nothing on disk taken or renamed.
                _ if in_memory => std::path::PathBuf::from(format!("[MEMORY]{name}")),
                (Some(p), _, _) => {
                    d.path = Some(p.clone());
                    p
                }
                // Named by its files (`prepare_layout`), never renamed.
                (None, Some(_), Some(p)) => p,
                (None, _, _) => self.name_new_file(dl, first.name, &url)?,
            };
            // A download starting over keeps its old control file until this one replaces it
            // (below); one under another name belongs to a file this run leaves alone.
            let d = &mut self.dls[dl];
            if d.control.as_ref() != Some(&store::control::control_path(&path)) {
                d.control = None;
            }
            // The file is created on the file-job thread (creating a file costs the loop a
            // millisecond on some file systems, and a list of small files creates one per
            // download): the body goes on arriving into blocks, which wait for it
            // (`submit_flushes`), and the download cannot end before it is open (`on_opened`).
            let validator = d.validator.as_ref().map(Validator::encode);
            // A file of one block is written through the page cache, uncached: its one write
            // has its exact length, so no padding reaches the file and no cut follows
            // (`WriteMode::Uncached`).
            let open = Opening {
                result: Default::default(),
                more: Default::default(),
                conn: conn_id,
                uri: url.to_string(),
                // (Held in memory: no notice that it is not written with O_DIRECT.)
                uncached: one_block || d.in_memory,
            };
            let result = open.result.clone();
            let more = open.more.clone();
            // A download over several files creates each under its directory, `O_DIRECT` only
            // where the file's start is aligned in the byte space.
            let several = layout.is_some();
            let files: Vec<(std::path::PathBuf, bool)> = match &layout {
                Some(l) => (0..l.files().len())
                    .map(|i| (d.opts.dir.join(&l.files()[i].path), !l.direct(i)))
                    .collect(),
                None => vec![(path.clone(), one_block)],
            };
            // Starting over at the same path: the control file of the earlier attempt claims
            // nothing before the file is emptied, and goes once it is if no control file will
            // describe this attempt (length unknown). `d.control` keeps its path, so an attempt
            // whose job never ran (dropped by another start over) leaves it to the next one.
            let disclaim = d.control.clone();
            let unknown = total.is_none();
            let job: crate::engine::reactor::Job = if d.in_memory {
                Box::new(move || {
                    let out = sys::memory_file(&path_name(&files)).map(|file| store::OutFile {
                        file,
                        mode: WriteMode::Buffered,
                    });
                    if let Ok(mut slot) = result.lock() {
                        *slot = Some(out);
                    }
                    Ok(())
                })
            } else {
                Box::new(move || {
                    let cleared = disclaim.as_deref().map(|ctl| {
                        store::control::disclaim(ctl).map_err(|e| {
                            std::io::Error::other(format!(
                                "its control file {} could not be cleared first: {}",
                                ctl.display(),
                                sys::cause(&e)
                            ))
                        })
                    });
                    let mut opened = Vec::new();
                    let mut out = match cleared {
                        Some(Err(e)) => Err(e),
                        _ => Ok(()),
                    };
                    for (at, uncached) in &files {
                        if out.is_err() {
                            break;
                        }
                        if let Some(parent) = at.parent().filter(|_| several) {
                            if let Err(e) = std::fs::create_dir_all(parent) {
                                out = Err(e);
                                break;
                            }
                        }
                        match store::open_output(at, true, *uncached) {
                            Ok(o) => opened.push(o),
                            Err(e) => out = Err(e),
                        }
                    }
                    let mut opened = opened.into_iter();
                    let out = out.and_then(|()| {
                        opened
                            .next()
                            .ok_or_else(|| std::io::Error::other("no file to open"))
                    });
                    if let Ok(mut rest) = more.lock() {
                        rest.extend(opened);
                    }
                    if let (Ok(_), Some(ctl), true) = (&out, &disclaim, unknown) {
                        let _ = std::fs::remove_file(ctl);
                    }
                    if let (Ok(o), Some(v)) = (&out, &validator) {
                        sys::set_validator(o.file.as_raw_fd(), v);
                    }
                    if let Ok(mut slot) = result.lock() {
                        *slot = Some(out);
                    }
                    Ok(())
                })
            };
            let d = &mut self.dls[dl];
            let file = d.begin_open(open);
            d.writes += 1;
            if d.old_writes > 0 {
                // The file it empties may still be written by the attempt before.
                d.parked_open = Some(job);
            } else {
                self.reactor.blocking(Tag::Opened { file }, job);
            }
            let d = &mut self.dls[dl];
            if !d.in_memory {
                d.own_path = Some(path.clone());
            }
            d.path = Some(path);
            // (Not a download over several files: each file would be allocated on its own.)
            allocating = total.filter(|&n| {
                layout.is_none() && !d.in_memory && n > 0 && n >= d.opts.no_file_allocation_limit
            });
        }
        let d = &mut self.dls[dl];
        if d.content_type.is_none() {
            d.content_type = first.content_type;
        }
        if !first.ranges {
            // A server without ranges sends every byte: those of files left unselected are
            // kept too (nothing else could fetch the ones after them).
            d.unwanted = crate::plan::RangeSet::new();
        }
        let mut plan = d.plan_for(total.unwrap_or(u64::MAX), &crate::plan::RangeSet::new());
        // The answer's body starts at the file's first byte: this connection carries it where
        // that byte is wanted; where it is not (a file left unselected first), the connections
        // asked for next fetch the wanted parts by ranges, and this answer goes no further.
        let carries = d.opts.layout.is_none()
            || plan
                .segments()
                .first()
                .is_some_and(|s| s.start == 0 && s.pos == 0 && s.end > 0);
        if carries {
            plan.assign(0, conn_id);
        }
        d.length_known = total.is_some();
        d.length_at_end = false;
        d.ranges_ok = total.is_some() && first.ranges;
        d.split_url = Some((mirror, url));
        d.install_plan(plan);
        if d.ranges_ok {
            let wanted = d.connections_wanted();
            let parts = d.plan.as_mut().map_or(1, |p| p.presplit(wanted));
            d.wanted += match carries {
                true => parts.saturating_sub(1),
                false => parts,
            };
        }
        if !carries {
            if let Some(ex) = self.conns[slot].as_mut().and_then(|c| c.ex.as_mut()) {
                ex.overruled = true;
            }
        }
        let verified = d.opts.pieces.is_some();
        if created && allocating.is_none() && one_block && d.control.is_none() && !verified {
            // The whole body fits one write block, so its only write is its last and the file
            // stays empty until then: there is nothing to resume yet. Its control file waits for
            // the next tick (within a second; `autosave`), so a small file that finishes before
            // does not pay for creating, renaming and removing one. Stops and failures save it.
            // (Not with piece digests: a file no control file describes is trusted by `-c` up to
            // its length, and its bytes are not verified until they are on disk.)
        } else {
            // The control file exists from the start, like aria2's, for a file of known length.
            self.save_control(dl);
        }
        if let Some(n) = allocating {
            // After the control file is queued: the file grows only once one describes it.
            self.allocate(dl, n);
        }
        Ok(())
    }

    /// The path of the file a download's first response creates, when it has none of its own:
    /// `-o`, else the Content-Disposition name, else the URL's; renamed (`name.1.ext`) past a
    /// file of that name or one another download is creating, unless `--allow-overwrite`; a
    /// control file found alone goes (aria2c's notice).
    pub(super) fn name_new_file(
        &mut self,
        dl: usize,
        given: Option<String>,
        url: &Url,
    ) -> Result<std::path::PathBuf, Failure> {
        let d = &mut self.dls[dl];
        let name = match d.opts.out.clone() {
            Some(o) => o,
            None => given.unwrap_or_else(|| http::filename_from_url(url)),
        };
        // Until the file is open, failures still name the path it would have had (as aria2).
        d.path = Some(d.opts.dir.join(&name));
        if let Some(ctl) = d.defunct_control.take() {
            let _ = std::fs::remove_file(&ctl);
            let path = d.opts.dir.join(&name);
            self.console.notice(&format!(
                "Removed the defunct control file {} because the download file {} doesn't exist.",
                ctl.display(),
                path.display()
            ));
        }
        let d = &self.dls[dl];
        // A name is taken by a file, or by another download whose file is still being
        // created (the job thread has not made it yet).
        let creating = |p: &std::path::Path| {
            self.dls.iter().enumerate().any(|(i, o)| {
                i != dl
                    && o.state == DlState::Active
                    && o.opening.is_some()
                    && o.path.as_deref() == Some(p)
            })
        };
        let (path, renamed) = store::choose_path(
            &d.opts.dir,
            &name,
            d.opts.allow_overwrite,
            d.opts.auto_file_renaming,
            |p| p.exists() || creating(p),
        )
        .map_err(|e| match e {
            store::PathError::Exists(_) => Failure::fatal(ExitCode::FILE_EXISTS, e.to_string()),
            store::PathError::NoFreeName(_) => {
                Failure::fatal(ExitCode::RENAME_FAILED, e.to_string())
            }
        })?;
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent).map_err(|e| {
                Failure::fatal(
                    ExitCode::MKDIR,
                    format!(
                        "Failed to make the directory {}, cause: {}",
                        parent.display(),
                        sys::cause(&e)
                    ),
                )
            })?;
        }
        if renamed {
            self.console.notice(&format!(
                "File already exists. Renamed to {}.",
                path.display()
            ));
        }
        Ok(path)
    }
}

/// What a download's first answer says of the file, whatever the protocol: its length (if said),
/// whether it serves ranges, the name it gives (Content-Disposition's), its version and time.
pub(super) struct FirstAnswer {
    pub total: Option<u64>,
    pub ranges: bool,
    pub name: Option<String>,
    pub validator: Option<Validator>,
    pub last_modified: Option<String>,
    /// The media type it says the file is (HTTP's Content-Type).
    pub content_type: Option<String>,
}

/// The name a memory file is made under (seen only in /proc): the file's own.
fn path_name(files: &[(std::path::PathBuf, bool)]) -> String {
    files
        .first()
        .and_then(|(p, _)| p.file_name())
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// Whether a download's file is a Metalink to follow (aria2c's rule): its name ends in `.meta4`
/// or `.metalink`, or the answer says it is of a Metalink media type.
pub(super) fn is_metalink(name: &str, content_type: Option<&str>) -> bool {
    let lower = name.to_ascii_lowercase();
    lower.ends_with(".meta4")
        || lower.ends_with(".metalink")
        || content_type.is_some_and(|t| http::METALINK_TYPES.contains(&t))
}

/// The most of a Metalink held in memory (`--follow-metalink=mem`): a larger one is refused
/// rather than grow the process without bound (`true` reads one of any size from disk).
pub(super) const MEMORY_DOCUMENT_MAX: u64 = 64 << 20;

/// The failure of a Metalink too large to hold in memory.
pub(super) fn too_large_for_memory(name: &str) -> Failure {
    Failure::fatal(
        ExitCode::UNKNOWN,
        format!(
            "The Metalink {name} is larger than {} MiB, too large to hold in memory; --follow-metalink=true reads it from disk",
            MEMORY_DOCUMENT_MAX >> 20
        ),
    )
}
