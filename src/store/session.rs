//! aria2's session file format (`--save-session`, read back by `-i`): one entry per download,
//! its URIs on a line, then its options indented one space.

/// Appends one session entry: the URIs on a line (TAB-separated, with aria2's trailing TAB), then
/// ` gid=`, ` pause=true` when paused, the command line's per-download options and the entry's
/// own (its own win; its own headers are its whole list).
pub fn session_entry<N: AsRef<str>>(
    out: &mut String,
    uris: &[String],
    gid: u64,
    paused: bool,
    command_line: &[(&'static str, String)],
    own: &[(N, String)],
) {
    for u in uris {
        out.push_str(u);
        out.push('\t');
    }
    out.push('\n');
    out.push_str(&format!(" gid={gid:016x}\n"));
    if paused {
        out.push_str(" pause=true\n");
    }
    let overridden = |name: &str| own.iter().any(|(d, _)| d.as_ref() == name);
    for (name, v) in command_line {
        if matches!(*name, "gid" | "pause" | "out") || overridden(name) {
            continue;
        }
        out.push_str(&format!(" {name}={v}\n"));
    }
    for (d, v) in own {
        let name = d.as_ref();
        if matches!(name, "gid" | "pause") {
            continue;
        }
        out.push_str(&format!(" {name}={v}\n"));
    }
}
