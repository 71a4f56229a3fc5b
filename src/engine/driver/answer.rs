//! The answer of a protocol other than HTTP (`sources::Conversation`): what it means for the
//! download, by the rules HTTP's answers follow here without HTTP's own — the first answer names
//! and opens the file and makes the plan (`take_first_answer`), a range must be the range asked
//! for, a resumed download's answer must be of its length, and then the body goes into blocks as
//! any body does (`begin_body`).
use super::first::FirstAnswer;
use super::response::total_mismatch;
use super::*;
use crate::engine::sources::Answer;

impl<R: Reactor<Tag>> Engine<'_, R> {
    /// What to do with a conversation's answer.
    pub(super) fn on_answer(&mut self, slot: usize) {
        let Some(c) = self.conns[slot].as_mut() else {
            return;
        };
        let conn_id = c.id;
        let Some(ex) = c.ex.as_mut() else { return };
        let Some(a) = ex.answer.take() else { return };
        let (dl, seg_i, asked) = (ex.dl, ex.seg, ex.range);
        if self.claimed_whole(dl, asked) {
            // A control file claims every byte: the answer need only say the file is still
            // there, of that length.
            let total = self.dls[dl].total();
            if a.total != total {
                let f = total_mismatch(a.total, total);
                self.fail_conn(slot, f);
                return;
            }
            let d = &mut self.dls[dl];
            d.ranges_confirmed = true;
            d.checking_existing = d.expected.is_some();
            self.close_conn(slot);
            self.maybe_finish(dl);
            return;
        }
        if let Some(total) = a.total {
            // `-c`: the file found against the server's length (whole, longer, shorter).
            let found = self.found_against(dl, asked, total);
            if self.on_found(slot, dl, found) {
                return;
            }
        }
        match asked {
            None => {
                if a.first != 0 {
                    let f = Failure::fatal(
                        ExitCode::UNKNOWN,
                        format!("asked for the whole file, answered from byte {}", a.first),
                    );
                    self.fail_conn(slot, f);
                    return;
                }
                let total = match (a.framing, a.total) {
                    (Framing::Length(n), Some(t)) if n != t => {
                        let f = Failure::fatal(
                            ExitCode::UNKNOWN,
                            format!("the answer says {t} bytes and sends {n}"),
                        );
                        self.fail_conn(slot, f);
                        return;
                    }
                    (Framing::Length(n), _) => Some(n),
                    (Framing::Empty, _) => Some(0),
                    (_, t) => t,
                };
                let first = FirstAnswer {
                    total,
                    ranges: a.ranges,
                    name: a.name.clone(),
                    validator: None,
                    last_modified: a.modified.map(httpdate::fmt_http_date),
                    content_type: None,
                };
                if let Err(f) = self.take_first_answer(slot, first) {
                    self.fail_conn(slot, f);
                    return;
                }
            }
            Some((from, _)) if self.dls[dl].plan.is_none() => {
                // `-c` over a file no control file describes: its rest, or the server cannot
                // resume it (exit 8; the file found stays as it is).
                let fits = a.first == from && a.total.is_some_and(|t| t >= from);
                let result = match (fits, a.total) {
                    (true, Some(t)) => self.continue_found(slot, from, t),
                    _ => Err(Failure::fatal(
                        ExitCode::CANNOT_RESUME,
                        format!(
                            "Invalid range. Request: {from}-, Response: from {} of {}",
                            a.first,
                            a.total.unwrap_or(0)
                        ),
                    )),
                };
                if let Err(f) = result {
                    self.fail_conn(slot, f);
                    return;
                }
            }
            Some((first, last)) => {
                if self.taken_over(slot, dl, seg_i, conn_id) {
                    return;
                }
                let total = self.dls[dl].total();
                let d = &self.dls[dl];
                if d.resumed && !d.ranges_confirmed && a.total.is_some() && a.total != total {
                    let f = total_mismatch(a.total, total);
                    self.fail_conn(slot, f);
                    return;
                }
                if let Err(f) = range_fits(&a, first, last, total) {
                    self.fail_conn(slot, f);
                    return;
                }
                self.confirm_ranges(dl);
            }
        }
        if a.on_data && !self.move_to_data(slot) {
            return;
        }
        if let Some(ex) = self.conns[slot].as_mut().and_then(|c| c.ex.as_mut()) {
            ex.wrapped = a.wrapped;
        }
        self.begin_body(slot, a.framing, a.keep_alive && !a.on_data, None);
    }
}

/// Whether answer `a` carries the range `first..=last` (`None`: to the end) of a `total`-byte
/// file: from `first`, for exactly its length (or, without a length, to the peer's close).
fn range_fits(
    a: &Answer,
    first: u64,
    last: Option<u64>,
    total: Option<u64>,
) -> Result<(), Failure> {
    let end = match (last, total) {
        (Some(l), _) => Some(l + 1),
        (None, t) => t,
    };
    let fits = a.first == first
        && match (a.framing, end) {
            (Framing::Length(n), Some(e)) => first + n == e,
            (Framing::UntilClose, _) => true,
            _ => false,
        };
    if fits {
        return Ok(());
    }
    Err(Failure::retry(
        ExitCode::CANNOT_RESUME,
        format!(
            "Invalid range. Request: {first}-{}, Response: from {} ({:?})",
            end.map_or(String::new(), |e| (e - 1).to_string()),
            a.first,
            a.framing
        ),
    ))
}
