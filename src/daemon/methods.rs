//! aria2's RPC methods: each reads or changes the queue, the results, a running download (through
//! the engine's `Control`) or the global options, with aria2's results (strings for numbers, its
//! keys) and its errors.
use super::{gid_err, stopped_view, Daemon, Pending, Place, Stop};
use crate::cli::defs::{self, OptDef};
use crate::engine::Control;
use crate::rpc::status::page;
use crate::rpc::{Params, RpcError, Service};
use serde_json::{json, Map, Value};

/// The methods, answered by the daemon with the engine it drives.
pub(super) struct Calls<'a> {
    pub dm: &'a mut Daemon,
    pub engine: &'a mut dyn Control,
}

/// Options that change a running download without restarting it.
const CHANGE_IN_PLACE: &[&str] = &[
    "max-download-limit",
    "force-save",
    "bt-max-peers",
    "bt-request-peer-speed-limit",
    "bt-remove-unselected-file",
    "max-upload-limit",
];

/// Options `changeOption` refuses to change (aria2's list).
const NOT_CHANGEABLE: &[&str] = &[
    "dry-run",
    "metalink-base-uri",
    "parameterized-uri",
    "pause",
    "piece-length",
    "rpc-save-upload-metadata",
];

/// Global options `changeGlobalOption` takes besides the per-download ones.
const GLOBAL_CHANGEABLE: &[&str] = &[
    "bt-max-open-files",
    "download-result",
    "keep-unfinished-download-result",
    "log",
    "log-level",
    "max-concurrent-downloads",
    "max-download-result",
    "max-overall-download-limit",
    "max-overall-upload-limit",
    "optimize-concurrent-downloads",
    "save-cookies",
    "save-session",
    "server-stat-of",
];

/// Options whose values are never given out: secrets and passwords.
fn secret_option(name: &str) -> bool {
    name == "rpc-secret" || name.ends_with("-passwd")
}

/// A value as `getOption`/`getGlobalOption` give it: sizes in bytes (aria2 normalises `300K`),
/// passwords inside proxy URIs hidden.
fn shown_value(def: &OptDef, v: &str) -> String {
    match def.value {
        defs::ValueKind::Size { .. } => {
            defs::parse_size(v).map_or(v.to_string(), |n| n.to_string())
        }
        _ if def.name.ends_with("proxy") => crate::http::auth::redact(v),
        _ => v.to_string(),
    }
}

/// The values one string gives a cumulative option. A newline separates them, as in the value
/// `getOption` gives back (aria2 keeps such a list as one string with a newline after each
/// value); a CR before it goes with it, and empty lines are left out. A value with nothing but
/// newlines is one empty value: set, but sending nothing.
fn cumulative_values(s: &str) -> Vec<&str> {
    let values: Vec<&str> = s
        .split('\n')
        .map(|v| v.strip_suffix('\r').unwrap_or(v))
        .filter(|v| !v.is_empty())
        .collect();
    if values.is_empty() {
        vec![""]
    } else {
        values
    }
}

/// Reads an options struct: values must be strings (`header` may be a list of them, and each of
/// them several lines); unknown names and names `allowed` refuses are skipped, as aria2 does; a
/// bad value is an error.
fn gather(
    opts: Option<&Map<String, Value>>,
    allowed: impl Fn(&OptDef) -> bool,
) -> Result<Vec<(&'static OptDef, String)>, RpcError> {
    let mut out = Vec::new();
    let Some(opts) = opts else { return Ok(out) };
    for (name, value) in opts {
        let Some(def) = defs::by_name(name).filter(|d| allowed(d)) else {
            continue;
        };
        let values: Vec<&str> = match value {
            Value::String(s) if def.cumulative => cumulative_values(s),
            Value::String(s) => vec![s.as_str()],
            Value::Array(a) if def.cumulative => a
                .iter()
                .filter_map(Value::as_str)
                .flat_map(cumulative_values)
                .collect(),
            _ => continue,
        };
        // Each value is one line now: a CR or LF left in one is refused (K-CREDORIGIN).
        for v in values {
            if crate::cli::check_value(def, v).is_err() {
                return Err(RpcError::new(format!(
                    "We encountered a problem while processing the option '--{name}'."
                )));
            }
            out.push((def, v.to_string()));
        }
    }
    Ok(out)
}

/// `out` given over RPC names a file inside `dir`: no absolute path, no `..`.
fn check_out(options: &[(&'static OptDef, String)]) -> Result<(), RpcError> {
    for (d, v) in options {
        if d.name == "out" {
            let p = std::path::Path::new(v);
            let escapes = p.is_absolute()
                || p.components()
                    .any(|c| matches!(c, std::path::Component::ParentDir));
            if escapes {
                return Err(RpcError::new(format!(
                    "We encountered a problem while processing the option '--out': {v} is not a file name inside --dir."
                )));
            }
        }
    }
    Ok(())
}

/// Puts `new` over `into`: every option `new` names takes `new`'s values only. A cumulative
/// option's values given together (in one call) are its whole list: aria2 replaces a download's
/// headers on `changeOption`, and a global list on `changeGlobalOption`.
fn merge(into: &mut Vec<(&'static OptDef, String)>, new: &[(&'static OptDef, String)]) {
    into.retain(|(x, _)| !new.iter().any(|(d, _)| d.name == x.name));
    into.extend(new.iter().cloned());
}

impl Calls<'_> {
    fn gid(&self, p: &Params, i: usize) -> Result<u64, RpcError> {
        self.dm.resolve_gid(p.string(i)?)
    }

    fn place(&self, g: u64) -> Option<Place> {
        self.dm.place(&*self.engine, g)
    }

    fn add_uri(&mut self, p: &Params) -> Result<Value, RpcError> {
        let uris = p
            .opt_list(0)?
            .filter(|l| !l.is_empty())
            .ok_or_else(|| RpcError::new("URI is not provided."))?;
        // Local paths are ignored, as aria2 does; what remains must be a URI.
        let uris: Vec<String> = uris
            .iter()
            .filter_map(Value::as_str)
            .filter(|u| u.contains("://"))
            .map(str::to_string)
            .collect();
        let options = gather(p.opt_dict(1)?, |d| d.in_input_file)?;
        check_out(&options)?;
        let position = p.opt_int(2)?;
        if position.is_some_and(|n| n < 0) {
            return Err(RpcError::new(
                "Position must be greater than or equal to 0.",
            ));
        }
        let engine = &*self.engine;
        let in_engine = |g: u64| engine.status(g).is_some();
        let dm = &*self.dm;
        let mut gid = None;
        let mut paused = dm.pause_new;
        // aria2 gives a new download a copy of the global options and reads the call's over it:
        // headers it is given come after the global ones and, with them, are its whole list.
        let mut own: Vec<(&'static OptDef, String)> = Vec::new();
        for (d, _) in options.iter().filter(|(d, _)| d.cumulative) {
            if own.iter().any(|(x, _)| x.name == d.name) {
                continue;
            }
            for (_, v) in dm.options.iter().filter(|(n, _)| *n == d.name) {
                own.extend(
                    cumulative_values(v)
                        .into_iter()
                        .map(|v| (*d, v.to_string())),
                );
            }
        }
        for (d, v) in options {
            match d.name {
                "gid" => match crate::cli::parse_gid(&v) {
                    Some(g) if !dm.known_gid(g) && !in_engine(g) => gid = Some(g),
                    _ => return Err(RpcError::new("No URI to download.")),
                },
                "pause" => paused = v == "true",
                _ => own.push((d, v)),
            }
        }
        if uris.is_empty() {
            return Err(RpcError::new("No URI to download."));
        }
        let gid = gid.unwrap_or_else(|| dm.new_gid(in_engine));
        let pending = Pending {
            gid,
            uris,
            options: own,
            paused,
            known: None,
            settling: false,
        };
        let dm = &mut *self.dm;
        let at = position.map_or(dm.waiting.len(), |n| n as usize);
        dm.waiting.insert(at, pending);
        Ok(json!(format!("{gid:016x}")))
    }

    /// `aria2.addMetalink(metalink, options, position)`: the Metalink (base64) read whole, and a
    /// download queued for each file picked (the language, OS and version filters, then
    /// `select-file`), in order from `position`; their GIDs. Each gets its name (`out`), its
    /// mirrors in the order they are tried and its strongest digest (`checksum`), over the
    /// call's options.
    fn add_metalink(&mut self, p: &Params) -> Result<Value, RpcError> {
        use base64::Engine as _;
        let text = p.string(0)?;
        let data = base64::engine::general_purpose::STANDARD
            .decode(text.trim())
            .map_err(|_| RpcError::new("Could not parse Metalink XML document."))?;
        let options = gather(p.opt_dict(1)?, |d| d.in_input_file)?;
        let position = p.opt_int(2)?;
        if position.is_some_and(|n| n < 0) {
            return Err(RpcError::new(
                "Position must be greater than or equal to 0.",
            ));
        }
        let dm = &*self.dm;
        let mut paused = dm.pause_new;
        let mut own: Vec<(&'static OptDef, String)> = Vec::new();
        for (d, v) in &options {
            match d.name {
                // (Each file is a download of its own, named by the Metalink.)
                "gid" | "out" => {}
                "pause" => paused = v == "true",
                _ => own.push((d, v.clone())),
            }
        }
        let opts = dm.base.with_entry(&own, &dm.env);
        let base = opts
            .metalink
            .base_uri
            .as_deref()
            .and_then(|b| url::Url::parse(b).ok());
        // Read whole first (a broken rule anywhere refuses the document before anything is
        // queued), then again, each file queued as it is read: the downloads of a Metalink of
        // any size are never held at once.
        let mut check = crate::metalink::Reader::new(&data[..], base.clone()).without_urls();
        while check
            .next_file()
            .map_err(|e| RpcError::new(e.message))?
            .is_some()
        {}
        let mut reader = crate::metalink::Reader::new(&data[..], base);
        let mut index = 0;
        let picked = std::iter::from_fn(|| loop {
            use crate::metalink::jobs;
            let f = reader.next_file().ok().flatten()?;
            if jobs::wanted(&f, &opts.metalink) {
                index += 1;
                if jobs::selected(index, &opts.metalink) {
                    return Some(jobs::job_at(&f, &opts, index));
                }
            }
        });
        let engine = &*self.engine;
        let in_engine = |g: u64| engine.status(g).is_some();
        let dm = &mut *self.dm;
        let first = position.map_or(dm.waiting.len(), |n| n as usize);
        let gids: Vec<Value> = dm
            .queue_metalink(picked, &own, paused, first, &in_engine)
            .into_iter()
            .map(|g| json!(format!("{g:016x}")))
            .collect();
        Ok(Value::Array(gids))
    }

    fn tell_status(&mut self, p: &Params) -> Result<Value, RpcError> {
        let g = self.gid(p, 0)?;
        let keys = p.keys(1)?;
        let v = self
            .dm
            .view(&*self.engine, g)
            .ok_or_else(|| gid_err("No such download for GID#{}", g))?;
        Ok(v.to_json(&keys))
    }

    fn tell_active(&mut self, p: &Params) -> Result<Value, RpcError> {
        let keys = p.keys(0)?;
        let list: Vec<Value> = self
            .engine
            .active()
            .into_iter()
            .filter_map(|g| self.engine.status(g))
            .map(|v| self.dm.linked(v).to_json(&keys))
            .collect();
        Ok(Value::Array(list))
    }

    fn tell_waiting(&mut self, p: &Params) -> Result<Value, RpcError> {
        let (offset, num) = paging(p)?;
        let keys = p.keys(2)?;
        let dm = &*self.dm;
        Ok(Value::Array(
            dm.waiting
                .get_many(&page(dm.waiting.len(), offset, num))
                .iter()
                .map(|p| dm.linked(dm.pending_view(p)).to_json(&keys))
                .collect(),
        ))
    }

    fn tell_stopped(&mut self, p: &Params) -> Result<Value, RpcError> {
        let (offset, num) = paging(p)?;
        let keys = p.keys(2)?;
        let dm = &*self.dm;
        Ok(Value::Array(
            page(dm.stopped.len(), offset, num)
                .into_iter()
                .filter_map(|i| dm.stopped.get(i))
                .map(|s| dm.linked(stopped_view(&s)).to_json(&keys))
                .collect(),
        ))
    }

    fn remove(&mut self, p: &Params) -> Result<Value, RpcError> {
        let g = self.gid(p, 0)?;
        match self.place(g) {
            Some(Place::Active) => {
                if self.dm.stopping(g) {
                    return Err(gid_err("GID#{} cannot be removed now", g));
                }
                self.dm.stop_running(self.engine, g, Stop::Remove);
            }
            Some(Place::Waiting(i)) => {
                // A waiting download just leaves the queue; no result is kept (aria2).
                self.dm.waiting.remove(i);
                self.dm.forget(g);
            }
            _ => return Err(gid_err("Active Download not found for GID#{}", g)),
        }
        Ok(json!(format!("{g:016x}")))
    }

    fn pause(&mut self, p: &Params) -> Result<Value, RpcError> {
        let g = self.gid(p, 0)?;
        self.pause_one(g)?;
        Ok(json!(format!("{g:016x}")))
    }

    fn pause_one(&mut self, g: u64) -> Result<(), RpcError> {
        match self.place(g) {
            Some(Place::Active) => {
                if self.dm.stopping(g) {
                    return Err(gid_err("GID#{} cannot be paused now", g));
                }
                self.dm.stop_running(self.engine, g, Stop::Pause);
                Ok(())
            }
            Some(Place::Waiting(i)) => {
                if !self.dm.waiting.set_paused(i, true) {
                    return Err(gid_err("GID#{} cannot be paused now", g));
                }
                Ok(())
            }
            _ => Err(gid_err("GID#{} cannot be paused now", g)),
        }
    }

    fn pause_all(&mut self) -> Result<Value, RpcError> {
        for g in self.engine.active() {
            let _ = self.pause_one(g);
        }
        self.dm.waiting.set_all_paused(true);
        Ok(json!("OK"))
    }

    fn unpause(&mut self, p: &Params) -> Result<Value, RpcError> {
        let g = self.gid(p, 0)?;
        match self.place(g) {
            Some(Place::Waiting(i)) => {
                if !self.dm.waiting.set_paused(i, false) {
                    return Err(gid_err("GID#{} cannot be unpaused now", g));
                }
                Ok(json!(format!("{g:016x}")))
            }
            // Still stopping for its pause (its last receive or writes in flight): it goes back
            // to the queue unpaused when it has stopped, as aria2 clears a pending pause.
            Some(Place::Active) if self.unpause_stopping(g) => Ok(json!(format!("{g:016x}"))),
            _ => Err(gid_err("GID#{} cannot be unpaused now", g)),
        }
    }

    /// A running download being paused is restarted instead when it has stopped.
    fn unpause_stopping(&mut self, g: u64) -> bool {
        let Some(r) = self.dm.running.get_mut(&g) else {
            return false;
        };
        if r.stop != Some(Stop::Pause) {
            return false;
        }
        r.stop = Some(Stop::Restart);
        true
    }

    fn unpause_all(&mut self) -> Result<Value, RpcError> {
        let stopping: Vec<u64> = self.dm.running.keys().copied().collect();
        for g in stopping {
            self.unpause_stopping(g);
        }
        self.dm.waiting.set_all_paused(false);
        Ok(json!("OK"))
    }

    fn change_position(&mut self, p: &Params) -> Result<Value, RpcError> {
        let g = self.gid(p, 0)?;
        let pos = p.int(1)?;
        let how = p.string(2)?.to_string();
        let Some(Place::Waiting(cur)) = self.place(g) else {
            return Err(gid_err("GID#{} not found in the waiting queue.", g));
        };
        let d = &mut *self.dm;
        let last = d.waiting.len() as i64 - 1;
        let dest = match how.as_str() {
            "POS_SET" => pos,
            "POS_CUR" => cur as i64 + pos,
            "POS_END" => last + pos,
            _ => return Err(RpcError::new("Illegal argument.")),
        }
        .clamp(0, last.max(0)) as usize;
        d.waiting.move_item(cur, dest);
        Ok(json!(dest))
    }

    fn get_uris(&mut self, p: &Params) -> Result<Value, RpcError> {
        let g = self.gid(p, 0)?;
        match self.place(g) {
            Some(Place::Active | Place::Waiting(_)) => Ok(self
                .dm
                .view(&*self.engine, g)
                .map_or(Value::Array(Vec::new()), |v| v.uris_json())),
            _ => Err(gid_err("No URI data is available for GID#{}", g)),
        }
    }

    fn get_files(&mut self, p: &Params) -> Result<Value, RpcError> {
        let g = self.gid(p, 0)?;
        let v = self
            .dm
            .view(&*self.engine, g)
            .ok_or_else(|| gid_err("No file data is available for GID#{}", g))?;
        Ok(v.files_json())
    }

    fn get_servers(&mut self, p: &Params) -> Result<Value, RpcError> {
        let g = self.gid(p, 0)?;
        let servers = match self.place(g) {
            Some(Place::Active) => self.engine.servers(g),
            _ => None,
        }
        .ok_or_else(|| gid_err("No active download for GID#{}", g))?;
        let servers: Vec<Value> = servers
            .into_iter()
            .map(|s| {
                json!({"currentUri": s.current, "downloadSpeed": s.speed.to_string(), "uri": s.uri})
            })
            .collect();
        Ok(json!([{"index": "1", "servers": servers}]))
    }

    fn get_peers(&mut self, p: &Params) -> Result<Value, RpcError> {
        let g = self.gid(p, 0)?;
        match self.place(g) {
            Some(Place::Active | Place::Waiting(_)) => Ok(json!([])),
            _ => Err(gid_err("No peer data is available for GID#{}", g)),
        }
    }

    /// The options of download `g`: the global per-download values with its own on top.
    fn options_of(&self, g: u64) -> Option<Vec<(&'static OptDef, String)>> {
        let dm = &*self.dm;
        let own = match self.place(g)? {
            Place::Active => dm.running.get(&g)?.options.clone(),
            Place::Waiting(i) => dm.waiting.get(i)?.options,
            Place::Stopped(i) => dm.stopped.get(i)?.options,
        };
        let mut all: Vec<(&'static OptDef, String)> = dm
            .options
            .iter()
            .filter_map(|(n, v)| defs::by_name(n).map(|d| (d, v.clone())))
            .filter(|(d, _)| d.in_input_file && d.name != "pause")
            .collect();
        merge(&mut all, &own);
        Some(all)
    }

    fn get_option(&mut self, p: &Params) -> Result<Value, RpcError> {
        let g = self.gid(p, 0)?;
        let all = self
            .options_of(g)
            .ok_or_else(|| gid_err("Cannot get option for GID#{}", g))?;
        Ok(options_json(&all))
    }

    fn change_option(&mut self, p: &Params) -> Result<Value, RpcError> {
        let g = self.gid(p, 0)?;
        let new = gather(Some(p.dict(1)?), |d| {
            d.in_input_file && !NOT_CHANGEABLE.contains(&d.name)
        })?;
        check_out(&new)?;
        match self.place(g) {
            Some(Place::Waiting(i)) => {
                if let Some(Err(e)) = self.dm.waiting.update(i, |p| merge(&mut p.options, &new)) {
                    return Err(unreadable(g, &e));
                }
            }
            Some(Place::Active) => {
                let restart = new.iter().any(|(d, _)| !CHANGE_IN_PLACE.contains(&d.name));
                if let Some(r) = self.dm.running.get_mut(&g) {
                    merge(&mut r.options, &new);
                }
                for (d, v) in &new {
                    if d.name == "max-download-limit" {
                        let rate = defs::parse_size(v).unwrap_or(0);
                        self.engine.set_download_limit(g, rate);
                    }
                }
                if restart {
                    self.dm.stop_running(self.engine, g, Stop::Restart);
                }
            }
            _ => return Err(gid_err("Cannot change option for GID#{}", g)),
        }
        Ok(json!("OK"))
    }

    fn get_global_option(&mut self) -> Result<Value, RpcError> {
        let dm = &*self.dm;
        let all: Vec<(&'static OptDef, String)> = dm
            .options
            .iter()
            .filter_map(|(n, v)| defs::by_name(n).map(|d| (d, v.clone())))
            .collect();
        Ok(options_json(&all))
    }

    fn change_global_option(&mut self, p: &Params) -> Result<Value, RpcError> {
        let new = gather(Some(p.dict(0)?), |d| {
            (d.in_input_file
                && !["checksum", "index-out", "out", "pause", "select-file"].contains(&d.name))
                || GLOBAL_CHANGEABLE.contains(&d.name)
        })?;
        let dm = &mut *self.dm;
        for (d, v) in &new {
            match d.name {
                "max-overall-download-limit" => {
                    self.engine
                        .set_overall_limit(defs::parse_size(v).unwrap_or(0));
                }
                "max-concurrent-downloads" => {
                    dm.max_concurrent = v.parse().unwrap_or(dm.max_concurrent).max(1);
                }
                "save-session" => {
                    // From now on the session is saved there (`saveSession`, the interval, the
                    // end); an empty name saves none.
                    dm.session = (!v.is_empty()).then(|| super::session::SessionRules {
                        path: v.into(),
                        ..dm.session_rules.clone()
                    });
                }
                "max-download-result" => {
                    dm.max_results = v.parse().unwrap_or(dm.max_results);
                    dm.trim_results();
                }
                _ => {}
            }
        }
        let per_download: Vec<(&'static OptDef, String)> = new
            .iter()
            .filter(|(d, _)| d.in_input_file)
            .cloned()
            .collect();
        dm.base = dm.base.with_entry(&per_download, &dm.env);
        dm.options
            .retain(|(n, _)| !new.iter().any(|(d, _)| d.name == *n));
        dm.options
            .extend(new.iter().map(|(d, v)| (d.name, v.clone())));
        Ok(json!("OK"))
    }

    fn global_stat(&mut self) -> Result<Value, RpcError> {
        let active = self.engine.active();
        let speed = self.engine.download_speed();
        let dm = &*self.dm;
        Ok(json!({
            "downloadSpeed": speed.to_string(),
            "numActive": active.len().to_string(),
            "numStopped": dm.stopped.len().to_string(),
            "numStoppedTotal": dm.stopped_total.to_string(),
            "numWaiting": dm.waiting.len().to_string(),
            "uploadSpeed": "0",
        }))
    }

    fn remove_result(&mut self, p: &Params) -> Result<Value, RpcError> {
        let g = self.gid(p, 0)?;
        match self.place(g) {
            Some(Place::Stopped(i)) => {
                if let Some(gid) = self.dm.stopped.remove(i) {
                    self.dm.forget(gid);
                }
                Ok(json!("OK"))
            }
            // Removed, and still ending (its last writes): it already reads as removed
            // (`tellStatus`), so its result can go too; it ends without becoming one.
            Some(Place::Active) => {
                let run = self.dm.running.get_mut(&g);
                match run {
                    Some(r) if r.stop == Some(Stop::Remove) => {
                        r.forget = true;
                        Ok(json!("OK"))
                    }
                    _ => Err(gid_err("Could not remove download result of GID#{}", g)),
                }
            }
            _ => Err(gid_err("Could not remove download result of GID#{}", g)),
        }
    }

    fn change_uri(&mut self, p: &Params) -> Result<Value, RpcError> {
        let g = self.gid(p, 0)?;
        let index = p.int(1)?;
        let del: Vec<String> = p
            .opt_list(2)?
            .ok_or_else(|| RpcError::new("The parameter at 2 is required but missing."))?
            .iter()
            .filter_map(|v| v.as_str().map(str::to_string))
            .collect();
        let add: Vec<String> = p
            .opt_list(3)?
            .ok_or_else(|| RpcError::new("The parameter at 3 is required but missing."))?
            .iter()
            .filter_map(|v| v.as_str().map(str::to_string))
            .filter(|u| {
                u.contains("://")
                    && crate::engine::check_uri(u).is_ok()
                    && url::Url::parse(u).is_ok()
            })
            .collect();
        let position = p.opt_int(4)?;
        if index != 1 {
            return Err(RpcError::new(format!("Invalid file index: {index}")));
        }
        let place = self.place(g);
        if let Some(Place::Active) = place {
            // The running download's mirrors change now; its record (getUris, the session) below.
            let urls: Vec<url::Url> = add.iter().filter_map(|u| url::Url::parse(u).ok()).collect();
            self.engine.change_mirrors(g, &del, &urls);
        }
        // aria2's edit of a URI list: each deleted URI's first occurrence goes, then the added
        // ones go in at `position` (past the end: last).
        let edit = |uris: &mut Vec<String>| {
            let mut deleted = 0;
            for u in &del {
                if let Some(i) = uris.iter().position(|x| x == u) {
                    uris.remove(i);
                    deleted += 1;
                }
            }
            let at = position.map_or(uris.len(), |n| (n.max(0) as usize).min(uris.len()));
            for (k, u) in add.iter().enumerate() {
                uris.insert(at + k, u.clone());
            }
            (deleted, add.len())
        };
        let d = &mut *self.dm;
        let edited = match place {
            Some(Place::Waiting(i)) => d
                .waiting
                .update(i, |p| edit(&mut p.uris))
                .transpose()
                .map_err(|e| unreadable(g, &e))?,
            Some(Place::Active) => d.running.get_mut(&g).map(|r| edit(&mut r.uris)),
            _ => None,
        };
        let (deleted, added) = edited.ok_or_else(|| gid_err("No such download for GID#{}", g))?;
        Ok(json!([deleted, added]))
    }

    fn shutdown(&mut self) -> Result<Value, RpcError> {
        self.engine.shutdown();
        Ok(json!("OK"))
    }
}

/// A waiting download whose record (`store::records`) cannot be read back is not changed.
fn unreadable(g: u64, e: &std::io::Error) -> RpcError {
    RpcError::new(format!(
        "GID#{g:016x} cannot be changed: its queued entry could not be read back ({e})"
    ))
}

/// `tellWaiting`/`tellStopped`'s offset and count.
fn paging(p: &Params) -> Result<(i64, usize), RpcError> {
    let offset = p.int(0)?;
    let num = p.int(1)?;
    if num < 0 {
        return Err(RpcError::new(format!(
            "The integer parameter at 1 has invalid value: {num}"
        )));
    }
    Ok((offset, num as usize))
}

/// Options as `{name: value}`, without secrets or passwords. A cumulative option's values are
/// one string with a newline after each, as aria2 gives them (`"A: 1\nB: 2\n"`).
fn options_json(all: &[(&'static OptDef, String)]) -> Value {
    let mut m = Map::new();
    for (d, v) in all {
        if secret_option(d.name) {
            continue;
        }
        let mut v = shown_value(d, v);
        if d.cumulative {
            v.push('\n');
        }
        match m.get_mut(d.name) {
            Some(Value::String(old)) if d.cumulative => old.push_str(&v),
            _ => {
                m.insert(d.name.to_string(), Value::String(v));
            }
        }
    }
    Value::Object(m)
}

impl Service for Calls<'_> {
    fn call(&mut self, method: &str, p: Params) -> Result<Value, RpcError> {
        match method {
            "aria2.addUri" => self.add_uri(&p),
            "aria2.addTorrent" => Err(RpcError::new("BitTorrent is not supported by ringdl.")),
            "aria2.addMetalink" => self.add_metalink(&p),
            "aria2.getPeers" => self.get_peers(&p),
            "aria2.remove" | "aria2.forceRemove" => self.remove(&p),
            "aria2.pause" | "aria2.forcePause" => self.pause(&p),
            "aria2.pauseAll" | "aria2.forcePauseAll" => self.pause_all(),
            "aria2.unpause" => self.unpause(&p),
            "aria2.unpauseAll" => self.unpause_all(),
            "aria2.changePosition" => self.change_position(&p),
            "aria2.tellStatus" => self.tell_status(&p),
            "aria2.getUris" => self.get_uris(&p),
            "aria2.getFiles" => self.get_files(&p),
            "aria2.getServers" => self.get_servers(&p),
            "aria2.tellActive" => self.tell_active(&p),
            "aria2.tellWaiting" => self.tell_waiting(&p),
            "aria2.tellStopped" => self.tell_stopped(&p),
            "aria2.getOption" => self.get_option(&p),
            "aria2.changeUri" => self.change_uri(&p),
            "aria2.changeOption" => self.change_option(&p),
            "aria2.getGlobalOption" => self.get_global_option(),
            "aria2.changeGlobalOption" => self.change_global_option(&p),
            "aria2.purgeDownloadResult" => {
                for gid in self.dm.stopped.clear() {
                    self.dm.forget(gid);
                }
                Ok(json!("OK"))
            }
            "aria2.removeDownloadResult" => self.remove_result(&p),
            "aria2.getVersion" => Ok(json!({
                "enabledFeatures": ["Async DNS", "GZip", "HTTPS", "Message Digest", "Metalink"],
                "version": "1.37.0",
            })),
            "aria2.getSessionInfo" => {
                let id: String = self
                    .dm
                    .session_id
                    .iter()
                    .map(|b| format!("{b:02x}"))
                    .collect();
                Ok(json!({ "sessionId": id }))
            }
            "aria2.shutdown" | "aria2.forceShutdown" => self.shutdown(),
            "aria2.getGlobalStat" => self.global_stat(),
            "aria2.saveSession" => {
                if self.dm.session.is_none() {
                    return Err(RpcError::new("Filename is not given."));
                }
                self.engine.save_session();
                Ok(json!("OK"))
            }
            _ => Err(RpcError::new(format!("No such method: {method}"))),
        }
    }
}
