//! A daemon entry as the waiting queue and the results keep it in a record: its URIs, its own
//! options (by their place in the option table) and what an earlier run reached.
use super::{Known, Pending};
use crate::cli::defs::{self, OptDef};
use crate::store::records::{Dec, Enc};

/// A download's URIs and own options (by name), into a record.
pub(super) fn put_uris_options(
    e: &mut Enc,
    uris: &[String],
    options: &[(&'static OptDef, String)],
) {
    e.u64(uris.len() as u64);
    for u in uris {
        e.str(u);
    }
    e.u64(options.len() as u64);
    for (d, v) in options {
        // The option's place in the table, one past it (records live only as long as this
        // process); 0 and its name for one not from the table.
        match defs::OPTIONS.iter().position(|o| std::ptr::eq(o, *d)) {
            Some(at) => e.u64(at as u64 + 1),
            None => e.u64(0).str(d.name),
        };
        e.str(v);
    }
}

/// A download's own options.
pub(super) type OwnOptions = Vec<(&'static OptDef, String)>;

/// What [`put_uris_options`] wrote.
pub(super) fn uris_options(d: &mut Dec) -> Option<(Vec<String>, OwnOptions)> {
    let n = d.u64()?;
    let mut uris = Vec::new();
    for _ in 0..n {
        uris.push(d.str()?.to_string());
    }
    let n = d.u64()?;
    let mut options = Vec::new();
    for _ in 0..n {
        let def = match d.u64()? {
            0 => defs::by_name(d.str()?),
            at => defs::OPTIONS.get(usize::try_from(at - 1).ok()?),
        };
        let value = d.str()?;
        if let Some(def) = def {
            options.push((def, value.to_string()));
        }
    }
    Some((uris, options))
}

/// An entry's record: its URIs, its own options and what an earlier run reached.
pub(super) fn encode(p: &Pending) -> Vec<u8> {
    let mut e = Enc::default();
    put_uris_options(&mut e, &p.uris, &p.options);
    match &p.known {
        None => {
            e.u64(0);
        }
        Some(k) => {
            e.u64(1).u64(k.total).u64(k.completed).str(&k.path);
            e.str(k.bitfield.as_deref().unwrap_or(""));
        }
    }
    e.0
}

/// The parts of an entry its record holds; `None` for a record cut short or unreadable.
pub(super) type Parts = (Vec<String>, OwnOptions, Option<Known>);

pub(super) fn decode(bytes: &[u8]) -> Option<Parts> {
    let mut d = Dec(bytes);
    let (uris, options) = uris_options(&mut d)?;
    let known = match d.u64()? {
        0 => None,
        _ => Some(Known {
            total: d.u64()?,
            completed: d.u64()?,
            path: d.str()?.to_string(),
            bitfield: Some(d.str()?.to_string()).filter(|b| !b.is_empty()),
        }),
    };
    Some((uris, options, known))
}
