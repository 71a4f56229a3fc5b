//! aria2.conf: where it is, its `NAME=VALUE` lines, every value checked, and one warning per
//! feature ringdl lacks that it asks for.
use super::check::bad_value;
use super::defs::{self, OptDef, Support};
use super::help;
use super::parse::*;
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// Every value of a layer checked; `file` names the config file it came from.
pub(super) fn check_layer(layer: &Layer, file: Option<&Path>) -> Result<(), UsageError> {
    for (name, vals) in &layer.values {
        let Some(def) = defs::by_name(name) else {
            continue;
        };
        for v in vals {
            if let Err(why) = check_value(def, v) {
                let mut message = bad_value(def, &why);
                if let Some(f) = file {
                    // aria2 shows only the option's description here, not its values and tags.
                    let head = help::option_block(def);
                    let head = head.split("\n\n").next().unwrap_or(&head);
                    message = format!(
                        "Parse error in {}\nException: errorCode=28 We encountered a problem while processing the option '--{}'.\n  -> errorCode=1 {why}\nUsage:\n{head}\n",
                        f.display(),
                        def.name
                    );
                }
                return Err(UsageError {
                    message,
                    exit_code: 28,
                });
            }
        }
    }
    Ok(())
}

/// aria2.conf: `--conf-path`, else `$HOME/.aria2/aria2.conf`, else
/// `${XDG_CONFIG_HOME:-$HOME/.config}/aria2/aria2.conf`. A missing default file is no error.
pub(super) fn config_layer(
    cli: &Layer,
    env: &Env,
    warnings: &mut Vec<String>,
) -> Result<Option<Layer>, UsageError> {
    let path = match cli.get("conf-path") {
        Some(p) => {
            let p = PathBuf::from(expand_home(p, env));
            if !p.is_file() {
                return Err(UsageError {
                    message: format!(
                        "Configuration file {} is not found.\n{}",
                        p.display(),
                        help::help_text("#help", &env.machine_defaults())
                    ),
                    exit_code: 1,
                });
            }
            p
        }
        None => {
            let Some(home) = &env.home else {
                return Ok(None);
            };
            let first = home.join(".aria2").join("aria2.conf");
            let second = env
                .xdg_config_home
                .clone()
                .unwrap_or_else(|| home.join(".config"))
                .join("aria2")
                .join("aria2.conf");
            match [first, second].into_iter().find(|p| p.is_file()) {
                Some(p) => p,
                None => return Ok(None),
            }
        }
    };
    let text = std::fs::read(&path).map_err(|e| UsageError {
        message: format!("Failed to open the file {}, cause: {e}", path.display()),
        exit_code: 1,
    })?;
    let text = String::from_utf8_lossy(&text);
    let layer = parse_config(&text, warnings);
    check_layer(&layer, Some(&path))?;
    Ok(Some(layer))
}

/// One `NAME=VALUE` line of a configuration file or of an input list's options, as aria2 reads
/// it: `NAME` alone is `NAME=`, and an empty value of an option whose value is optional is the
/// value it implies (`allow-overwrite` is `allow-overwrite=true`). `None`: no such option.
pub(crate) fn config_line(line: &str) -> Option<(&'static OptDef, String)> {
    let (name, value) = line.split_once('=').unwrap_or((line, ""));
    let def = defs::by_name(name.trim())?;
    let value = value.trim();
    let value = if value.is_empty() && def.arg == defs::ArgKind::Optional {
        def.implied
    } else {
        value
    };
    Some((def, value.to_string()))
}

/// `NAME=VALUE` lines; `#` comments and blank lines skipped; unknown names warn.
pub(crate) fn parse_config(text: &str, warnings: &mut Vec<String>) -> Layer {
    let mut layer = Layer::default();
    for raw in text.lines() {
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        if line.starts_with('=') {
            // No name at all: aria2 skips such a line without a word.
            continue;
        }
        match config_line(line) {
            Some((d, v)) if !matches!(d.name, "help" | "version") => layer.set(d, v),
            _ => warnings.push(format!("Unknown option: {line}")),
        }
    }
    layer
}

/// One warning per feature ringdl does not have, naming the options that asked for it. An option
/// left at aria2's default changes nothing, so it does not warn.
pub(super) fn unsupported_warnings(layer: &Layer, warnings: &mut Vec<String>) {
    let mut by_feature: HashMap<&'static str, Vec<&'static str>> = HashMap::new();
    let mut order = Vec::new();
    for (name, vals) in &layer.values {
        let Some(def) = defs::by_name(name) else {
            continue;
        };
        let Support::No(feature) = def.support else {
            continue;
        };
        // At its default, or a feature switch turned off (follow-torrent=false, enable-dht=false,
        // common in aria2.conf files), an option of a missing feature changes nothing.
        let switch = def.name.starts_with("enable-") || def.name.starts_with("follow-");
        if vals
            .iter()
            .all(|v| Some(v.as_str()) == def.default || (switch && v == "false"))
        {
            continue;
        }
        if !by_feature.contains_key(feature) {
            order.push(feature);
        }
        by_feature.entry(feature).or_default().push(def.name);
    }
    for f in order {
        let names: Vec<String> = by_feature[f].iter().map(|n| format!("--{n}")).collect();
        warnings.push(format!(
            "ringdl does not support {f}; ignoring {}",
            names.join(", ")
        ));
    }
}
