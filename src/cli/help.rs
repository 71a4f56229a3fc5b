//! `-h`/`--help[=TAG|KEYWORD]` in aria2c's layout: the usage line, what is being printed, then each
//! option as a 30-column usage column, its help wrapped at 79 columns, and its possible values,
//! default and tags. The texts come from the option table, in ringdl's words.
use super::defs::{ArgKind, OptDef, Support, OPTIONS, OWN_OPTIONS};

/// The usage line every help and usage error starts with.
pub const USAGE_LINE: &str = "Usage: ringdl [OPTIONS] [URI]...";

/// The tags `--help=#TAG` accepts, in aria2's order.
pub const TAGS: &[&str] = &[
    "#basic",
    "#advanced",
    "#http",
    "#https",
    "#ftp",
    "#metalink",
    "#bittorrent",
    "#cookie",
    "#hook",
    "#file",
    "#rpc",
    "#checksum",
    "#experimental",
    "#deprecated",
    "#help",
    "#all",
];

const USAGE_WIDTH: usize = 30;
const LINE_WIDTH: usize = 79;

/// The usage column of an option: ` -x, --name=VALUE`, ` --name[=VALUE]`.
pub fn usage_column(o: &OptDef) -> String {
    let mut s = String::from(" ");
    if let Some(c) = o.short {
        s.push_str(&format!("-{c}, "));
    }
    s.push_str("--");
    s.push_str(o.name);
    match o.arg {
        ArgKind::None => {}
        // aria2 documents --show-console-readout as an optional boolean though it needs a value.
        ArgKind::Required if o.value == super::defs::ValueKind::Bool => {
            s.push_str("[=");
            s.push_str(o.value_name);
            s.push(']');
        }
        ArgKind::Required => {
            s.push('=');
            s.push_str(o.value_name);
        }
        ArgKind::Optional => {
            s.push_str("[=");
            s.push_str(o.value_name);
            s.push(']');
        }
    }
    s
}

/// Words of `text` filled into lines of at most `width` characters.
fn fill(text: &str, width: usize) -> Vec<String> {
    let mut lines = Vec::new();
    for para in text.split('\n') {
        let mut line = String::new();
        for word in para.split_whitespace() {
            if !line.is_empty() && line.chars().count() + 1 + word.chars().count() > width {
                lines.push(std::mem::take(&mut line));
            }
            if !line.is_empty() {
                line.push(' ');
            }
            line.push_str(word);
        }
        lines.push(line);
    }
    lines
}

/// Defaults that depend on the machine: the current directory, paths under HOME, the CA bundle.
/// The table leaves them out; help shows what they are here, as aria2c does.
#[derive(Debug, Clone, Default)]
pub struct MachineDefaults {
    pub dir: Option<String>,
    pub home: Option<String>,
    pub conf_path: Option<String>,
    pub ca_bundle: Option<String>,
    pub cache_dir: Option<String>,
}

impl MachineDefaults {
    fn get(&self, name: &str) -> Option<String> {
        match name {
            "dir" => self.dir.clone(),
            "netrc-path" => self.home.as_ref().map(|h| format!("{h}/.netrc")),
            "conf-path" => self.conf_path.clone(),
            "ca-certificate" => self.ca_bundle.clone(),
            "dht-file-path" => self
                .cache_dir
                .as_ref()
                .map(|c| format!("{c}/aria2/dht.dat")),
            "dht-file-path6" => self
                .cache_dir
                .as_ref()
                .map(|c| format!("{c}/aria2/dht6.dat")),
            _ => None,
        }
    }
}

/// One option's help block, without the blank line that separates blocks.
pub fn option_block(o: &OptDef) -> String {
    option_block_with(o, &MachineDefaults::default())
}

fn option_block_with(o: &OptDef, machine: &MachineDefaults) -> String {
    let indent = " ".repeat(USAGE_WIDTH);
    let mut out = usage_column(o);
    let pad = if out.chars().count() < USAGE_WIDTH {
        USAGE_WIDTH - out.chars().count()
    } else {
        1
    };
    out.push_str(&" ".repeat(pad));
    let mut text = o.help.to_string();
    if let Support::No(feature) = o.support {
        // Accepted for aria2c's command lines, but nothing is done with it yet: said first.
        text = format!("[Not supported yet: {feature}; accepted with a warning] {text}");
    }
    if !o.long_help.is_empty() {
        text.push('\n');
        text.push_str(o.long_help);
    }
    for (i, line) in fill(&text, LINE_WIDTH - USAGE_WIDTH).iter().enumerate() {
        if i > 0 {
            out.push('\n');
            out.push_str(&indent);
        }
        out.push_str(line);
    }
    out.push('\n');
    let default = machine
        .get(o.name)
        .or_else(|| o.default.map(str::to_string));
    if !o.possible.is_empty() || default.is_some() || !o.tags.is_empty() {
        out.push('\n');
    }
    if !o.possible.is_empty() {
        out.push_str(&format!("{indent}Possible Values: {}\n", o.possible));
    }
    if let Some(d) = default {
        out.push_str(&format!("{indent}Default: {d}\n"));
    }
    if !o.tags.is_empty() {
        out.push_str(&format!("{indent}Tags: {}\n", o.tags.join(", ")));
    }
    out
}

fn blocks<'a>(opts: impl Iterator<Item = &'a OptDef>, machine: &MachineDefaults) -> String {
    opts.map(|o| format!("{}\n", option_block_with(o, machine)))
        .collect()
}

/// The text `--help=WHAT` prints (`what` is `#basic` for a bare `-h`).
pub fn help_text(what: &str, machine: &MachineDefaults) -> String {
    let mut out = format!("{USAGE_LINE}\n");
    // aria2c's options, then ringdl's own (`--engine`).
    let all = || OPTIONS.iter().chain(OWN_OPTIONS);
    if what == "#all" {
        out.push_str("Printing all options.\nOptions:\n");
        out.push_str(&blocks(all(), machine));
    } else if what.starts_with('#') {
        let tag = what;
        out.push_str(&format!(
            "Printing options tagged with '{tag}'.\nSee 'ringdl -h#help' to know all available tags.\nOptions:\n"
        ));
        out.push_str(&blocks(all().filter(|o| o.tags.contains(&tag)), machine));
    } else {
        let matching: Vec<&OptDef> = all().filter(|o| o.name.contains(what)).collect();
        if matching.is_empty() {
            out.push_str(&format!("No option matching with '{what}'.\n"));
            out.push_str(&blocks(
                OPTIONS.iter().filter(|o| o.name == "help"),
                machine,
            ));
        } else {
            out.push_str(&format!(
                "Printing options whose name includes '{what}'.\nOptions:\n"
            ));
            out.push_str(&blocks(matching.into_iter(), machine));
        }
    }
    if what == "#basic" {
        out.push_str(FOOTER);
    }
    out.push_str("Refer to man page for more information.\n");
    out
}

/// What a bare `-h` adds after the options: how URIs are given, in ringdl's words.
const FOOTER: &str = "URI:
 Give one or more http:// or https:// URIs. Several URIs on the command line are
 taken as mirrors of one file, which is then fetched from all of them at once;
 with -Z each URI is a download of its own. -i FILE reads downloads from FILE.
 ringdl downloads over HTTP and HTTPS only: BitTorrent, Metalink, FTP and SFTP
 URIs and files are recognised but refused.

Connections
 By default one connection per server is used (-x1) and ranges are not split
 below 20MiB (-k20M). For a faster download from one server, raise both, e.g.
 -x8 -k1M.

";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn usage_columns() {
        let x = OPTIONS
            .iter()
            .find(|o| o.name == "max-connection-per-server")
            .unwrap();
        assert_eq!(usage_column(x), " -x, --max-connection-per-server=NUM");
        let c = OPTIONS
            .iter()
            .find(|o| o.name == "check-certificate")
            .unwrap();
        assert_eq!(usage_column(c), " --check-certificate[=true|false]");
    }

    #[test]
    fn blocks_wrap_at_79_and_align_at_30() {
        for o in OPTIONS {
            let block = option_block(o);
            for (i, line) in block.lines().enumerate() {
                if i > 0 && !line.is_empty() {
                    assert!(line.starts_with(&" ".repeat(30)), "--{}: {line:?}", o.name);
                }
                let text_len = line.chars().count();
                let long_word = line.split_whitespace().any(|w| w.chars().count() > 49);
                // The facts lines (values, default, tags) are not wrapped, as in aria2.
                let facts = ["Possible Values:", "Default:", "Tags:"]
                    .iter()
                    .any(|f| line.trim_start().starts_with(f));
                assert!(
                    text_len <= 79 || i == 0 || long_word || facts,
                    "--{}: line too long: {line:?}",
                    o.name
                );
            }
        }
    }

    #[test]
    fn help_selections() {
        let basic = help_text("#basic", &MachineDefaults::default());
        assert!(basic.starts_with(
            "Usage: ringdl [OPTIONS] [URI]...\nPrinting options tagged with '#basic'."
        ));
        assert!(basic.contains("--dir=DIR") || basic.contains("--dir="));
        assert!(basic.ends_with("Refer to man page for more information.\n"));
        let kw = help_text("split", &MachineDefaults::default());
        assert!(kw.contains("Printing options whose name includes 'split'."));
        assert!(kw.contains("--min-split-size"));
        assert!(!kw.contains("--dir"));
        let none = help_text("zzzz", &MachineDefaults::default());
        assert!(none.contains("No option matching with 'zzzz'."));
        let all = help_text("#all", &MachineDefaults::default());
        assert_eq!(
            all.lines().filter(|l| l.starts_with(" -")).count(),
            OPTIONS.len() + OWN_OPTIONS.len()
        );
        // ringdl's own option is in the bare help, and one not acted on says so first.
        assert!(basic.contains(" --engine=ENGINE"), "{basic}");
        let t = help_text("torrent-file", &MachineDefaults::default());
        assert!(t.contains("[Not supported yet: BitTorrent;"), "{t}");
    }
}
