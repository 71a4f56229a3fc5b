//! argv, aria2.conf and the environment → [`Settings`], in aria2c's order: `--no-conf`/`--conf-path`
//! first, then defaults < config file < environment < command line. Stage one matches every option
//! against the table and keeps raw values (last one wins, cumulative ones add up); stage two checks
//! every value and builds typed settings. A bad value is exit 28 with aria2's message shape; no URI is
//! exit 1. Nothing here downloads anything, so a bad command line never starts half-configured.
use super::check::bad_value;
pub use super::check::{check_value, parse_gid};
use super::conf::{check_layer, config_layer, unsupported_warnings};
pub(crate) use super::conf::{config_line, parse_config};
use super::defs::{self, ArgKind, OptDef, ValueKind};
use super::help::{self, USAGE_LINE};
pub use super::settings::{
    Command, Config, DownloadOptions, EngineChoice, Env, Hooks, ResultMode, RpcSettings,
    SessionOut, Settings, UriSelector, UsageError,
};
use super::suggest::{long_option_error, lookup_long};
pub use crate::engine::{check_uri, is_recognized_uri};
use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::PathBuf;

/// Every option ringdl acts on (read below, in `build` and friends). The table marks exactly these
/// as supported; a test keeps the two in step.
#[cfg_attr(not(test), allow(dead_code))]
pub(crate) const ACTED_ON: &[&str] = &[
    "all-proxy",
    "all-proxy-passwd",
    "all-proxy-user",
    "allow-overwrite",
    "allow-piece-length-change",
    "always-resume",
    "async-dns",
    "async-dns-server",
    "auto-file-renaming",
    "auto-save-interval",
    "ca-certificate",
    "certificate",
    "check-certificate",
    "check-integrity",
    "checksum",
    "conditional-get",
    "conf-path",
    "connect-timeout",
    "console-log-level",
    "content-disposition-default-utf8",
    "continue",
    "daemon",
    "dir",
    "disable-ipv6",
    "download-result",
    "dry-run",
    "enable-async-dns6",
    "enable-color",
    "enable-http-keep-alive",
    "enable-rpc",
    "file-allocation",
    "force-save",
    "force-sequential",
    "ftp-passwd",
    "ftp-proxy",
    "ftp-proxy-passwd",
    "ftp-proxy-user",
    "ftp-pasv",
    "ftp-reuse-connection",
    "ftp-type",
    "metalink-base-uri",
    "metalink-enable-unique-protocol",
    "metalink-file",
    "follow-metalink",
    "pause-metadata",
    "metalink-language",
    "metalink-location",
    "metalink-os",
    "metalink-preferred-protocol",
    "metalink-version",
    "select-file",
    "index-out",
    "show-files",
    "ftp-user",
    "gid",
    "hash-check-only",
    "header",
    "help",
    "http-accept-gzip",
    "http-auth-challenge",
    "http-no-cache",
    "http-passwd",
    "http-proxy",
    "http-proxy-passwd",
    "http-proxy-user",
    "http-user",
    "https-proxy",
    "https-proxy-passwd",
    "https-proxy-user",
    "human-readable",
    "input-file",
    "interface",
    "keep-unfinished-download-result",
    "load-cookies",
    "log",
    "log-level",
    "lowest-speed-limit",
    "max-concurrent-downloads",
    "max-connection-per-server",
    "max-download-limit",
    "max-download-result",
    "max-file-not-found",
    "max-overall-download-limit",
    "max-resume-failure-tries",
    "max-tries",
    "min-split-size",
    "min-tls-version",
    "multiple-interface",
    "netrc-path",
    "no-conf",
    "no-file-allocation-limit",
    "no-netrc",
    "no-want-digest-header",
    "no-proxy",
    "on-download-complete",
    "on-download-error",
    "on-download-pause",
    "on-download-start",
    "on-download-stop",
    "out",
    "parameterized-uri",
    "pause",
    "piece-length",
    "private-key",
    "proxy-method",
    "quiet",
    "referer",
    "remote-time",
    "remove-control-file",
    "retry-wait",
    "rpc-allow-origin-all",
    "rpc-certificate",
    "rpc-listen-all",
    "rpc-listen-port",
    "rpc-max-request-size",
    "rpc-passwd",
    "rpc-private-key",
    "rpc-secret",
    "rpc-secure",
    "rpc-user",
    "save-cookies",
    "save-not-found",
    "save-session",
    "save-session-interval",
    "server-stat-if",
    "server-stat-of",
    "server-stat-timeout",
    "show-console-readout",
    "split",
    "ssh-host-key-md",
    "stderr",
    "stop",
    "stop-with-process",
    "summary-interval",
    "timeout",
    "uri-selector",
    "use-head",
    "user-agent",
    "version",
];

pub use crate::engine::LogLevel;

/// A `--log-level` or `--console-log-level` value (checked before: anything else is NOTICE).
fn log_level(s: &str) -> LogLevel {
    match s {
        "debug" => LogLevel::Debug,
        "info" => LogLevel::Info,
        "warn" => LogLevel::Warn,
        "error" => LogLevel::Error,
        _ => LogLevel::Notice,
    }
}

/// A command line getopt itself rejects: its line, aria2's parse failure, the usage.
fn getopt_error(first: String) -> UsageError {
    usage_error(
        format!("{first}\nException: errorCode=28 Failed to parse command-line options."),
        28,
    )
}

fn usage_error(first: String, exit_code: i32) -> UsageError {
    UsageError {
        message: format!("{first}\n{USAGE_LINE}\nSee 'ringdl -h'."),
        exit_code,
    }
}

/// Option values from one source, by option name.
#[derive(Debug, Default, Clone)]
pub(crate) struct Layer {
    pub(super) values: BTreeMap<&'static str, Vec<String>>,
}

impl Layer {
    pub(crate) fn set(&mut self, def: &'static OptDef, value: String) {
        let slot = self.values.entry(def.name).or_default();
        if !def.cumulative {
            slot.clear();
        }
        slot.push(value);
    }

    pub(super) fn get(&self, name: &str) -> Option<&str> {
        self.values
            .get(name)
            .and_then(|v| v.last())
            .map(String::as_str)
    }

    /// `other` on top of `self`: its values replace ours, cumulative ones are appended.
    pub(crate) fn overlay(&mut self, other: &Layer) {
        for (name, vals) in &other.values {
            let cumulative = defs::by_name(name).is_some_and(|d| d.cumulative);
            let slot = self.values.entry(name).or_default();
            if !cumulative {
                slot.clear();
            }
            slot.extend(vals.iter().cloned());
        }
    }
}

fn os_to_string(v: OsString) -> Result<String, UsageError> {
    v.into_string()
        .map_err(|v| usage_error(format!("ringdl: argument is not valid UTF-8: {v:?}"), 28))
}

/// The value of an option after all layers: the user's, else the table default.
struct Resolved<'a> {
    layer: &'a Layer,
}

impl Resolved<'_> {
    fn raw(&self, name: &str) -> Option<&str> {
        self.layer
            .get(name)
            .or_else(|| defs::by_name(name).and_then(|d| d.default))
    }
    fn bool(&self, name: &str) -> bool {
        self.raw(name) == Some("true")
    }
    fn int(&self, name: &str) -> i64 {
        self.raw(name).and_then(|v| v.parse().ok()).unwrap_or(0)
    }
    fn size(&self, name: &str) -> u64 {
        self.raw(name).and_then(defs::parse_size).unwrap_or(0)
    }
    fn text(&self, name: &str) -> Option<String> {
        self.raw(name).filter(|s| !s.is_empty()).map(str::to_string)
    }
    fn all(&self, name: &str) -> Vec<String> {
        self.layer.values.get(name).cloned().unwrap_or_default()
    }
}

/// Expands aria2's `${HOME}` in path options.
pub(super) fn expand_home(v: &str, env: &Env) -> String {
    match &env.home {
        Some(h) => v.replace("${HOME}", &h.to_string_lossy()),
        None => v.to_string(),
    }
}

/// Parses the process's argv (without the program name).
pub fn parse_args<I>(args: I) -> Result<Command, UsageError>
where
    I: IntoIterator,
    I::Item: Into<OsString>,
{
    parse_with(args, &Env::from_process())
}

/// Parses argv with an explicit environment.
pub fn parse_with<I>(args: I, env: &Env) -> Result<Command, UsageError>
where
    I: IntoIterator,
    I::Item: Into<OsString>,
{
    use lexopt::Arg;
    let mut parser = lexopt::Parser::from_args(args);
    let mut cli = Layer::default();
    let mut uris = Vec::new();
    let mut help_topic: Option<String> = None;
    let mut engine = match env.engine.as_deref() {
        None => EngineChoice::Auto,
        Some(v) => EngineChoice::parse(v).ok_or_else(|| {
            usage_error(
                format!(
                    "ringdl: RINGDL_ENGINE must be one of 'auto' 'uring' 'portable' (got '{v}')"
                ),
                28,
            )
        })?,
    };
    loop {
        let arg = match parser.next() {
            Ok(Some(a)) => a,
            Ok(None) => break,
            Err(e) => return Err(usage_error(format!("ringdl: {e}"), 28)),
        };
        let arg_was_short = match arg {
            Arg::Short(c) => Some(c),
            _ => None,
        };
        let def = match arg {
            Arg::Value(v) => {
                uris.push(os_to_string(v)?);
                continue;
            }
            Arg::Long("generate") => {
                let v = match parser.value() {
                    Ok(v) => os_to_string(v)?,
                    Err(_) => {
                        return Err(usage_error(
                            "ringdl: option '--generate' requires an argument".into(),
                            28,
                        ))
                    }
                };
                return match super::generate::Target::parse(&v) {
                    Some(t) => Ok(Command::Generate(t)),
                    None => Err(UsageError {
                        message: format!(
                            "ringdl: --generate must be one of the following: 'man' 'bash' 'zsh' 'fish' (got '{v}')"
                        ),
                        exit_code: 28,
                    }),
                };
            }
            Arg::Long("engine") => {
                let v = parser.value().ok().map(os_to_string).transpose()?;
                engine = v.as_deref().and_then(EngineChoice::parse).ok_or_else(|| {
                    usage_error(
                        format!(
                            "ringdl: --engine must be one of the following: 'auto' 'uring' 'portable' (got '{}')",
                            v.unwrap_or_default()
                        ),
                        28,
                    )
                })?;
                continue;
            }
            Arg::Long(name) => {
                let name = name.to_string();
                match lookup_long(&name) {
                    Ok(def) => def,
                    Err(matches) => {
                        let typed = match parser.optional_value() {
                            Some(v) => format!("{name}={}", v.to_string_lossy()),
                            None => name,
                        };
                        return Err(long_option_error(&typed, &matches));
                    }
                }
            }
            Arg::Short(c) => defs::by_short(c)
                .ok_or_else(|| getopt_error(format!("ringdl: invalid option -- '{c}'")))?,
        };
        let value = match def.arg {
            ArgKind::None => String::new(),
            ArgKind::Required => match parser.value() {
                Ok(v) => os_to_string(v)?,
                Err(_) => {
                    let line = match arg_was_short {
                        Some(c) => format!("ringdl: option requires an argument -- '{c}'"),
                        None => format!("ringdl: option '--{}' requires an argument", def.name),
                    };
                    return Err(getopt_error(line));
                }
            },
            // An empty attached value means the same as none (`--allow-overwrite=`).
            ArgKind::Optional => match parser.optional_value() {
                Some(v) if !v.is_empty() => os_to_string(v)?,
                _ => def.implied.to_string(),
            },
        };
        match def.name {
            "help" => help_topic = Some(value),
            "version" => return Ok(Command::Version(engine)),
            _ => cli.set(def, value),
        }
    }
    if let Some(topic) = help_topic {
        let topic = if topic.is_empty() {
            "#basic".to_string()
        } else {
            topic
        };
        return Ok(Command::Help(help::help_text(
            &topic,
            &env.machine_defaults(),
        )));
    }
    // Command-line values are checked before the config file is read, as aria2c does.
    check_layer(&cli, None)?;

    let mut warnings = Vec::new();
    let mut merged = Layer::default();
    if cli.get("no-conf") != Some("true") {
        if let Some(conf) = config_layer(&cli, env, &mut warnings)? {
            merged.overlay(&conf);
        }
    }
    let mut env_layer = Layer::default();
    for (name, value) in &env.proxies {
        if let Some(def) = defs::by_name(name) {
            env_layer.set(def, value.clone());
        }
    }
    merged.overlay(&env_layer);
    merged.overlay(&cli);
    unsupported_warnings(&merged, &mut warnings);
    refuse_unsupported_downloads(&merged, &uris)?;
    let mut settings = build(&merged, uris, env, warnings)?;
    settings.config.engine = engine;
    let command_line: Vec<(&'static str, String)> = cli
        .values
        .iter()
        .filter(|(name, _)| defs::by_name(name).is_some_and(|d| d.in_input_file))
        .flat_map(|(name, vals)| vals.iter().map(move |v| (*name, v.clone())))
        .collect();
    if let Some(rpc) = settings.config.rpc.as_mut() {
        rpc.command_line = command_line;
    } else if let Some(out) = settings.config.session_out.as_mut() {
        out.command_line = command_line;
    }
    Ok(Command::Download(Box::new(settings)))
}

/// Downloads that need a feature ringdl lacks fail before anything starts, in one line.
fn refuse_unsupported_downloads(layer: &Layer, uris: &[String]) -> Result<(), UsageError> {
    let fail = |what: String| UsageError {
        message: what,
        exit_code: 1,
    };
    let on = |name: &str| {
        layer
            .get(name)
            .is_some_and(|v| match defs::by_name(name).map(|d| d.value) {
                Some(ValueKind::Bool) => v == "true",
                _ => !v.is_empty(),
            })
    };
    for (name, feature) in [("torrent-file", "BitTorrent")] {
        if on(name) {
            return Err(fail(format!(
                "ringdl does not support {feature} (--{name}); use aria2c for it"
            )));
        }
    }
    for u in uris {
        if u.contains(|c: char| c.is_ascii_control()) {
            // The URL parser would drop CR, LF and tabs silently; a URI with them is not the
            // one the user meant, and may be an attempt to inject a header.
            return Err(UsageError {
                message: format!(
                    "Exception: errorCode=28 The URI contains a control character (CR, LF, TAB or NUL): {}",
                    crate::http::auth::redact(&u.escape_debug().to_string())
                ),
                exit_code: 28,
            });
        }
        // (A Metalink file named on the command line is downloaded as `-M` would.)
        if crate::metalink::is_document_file(u) {
            continue;
        }
        check_uri(u).map_err(|e| fail(crate::http::auth::redact(&e)))?;
    }
    Ok(())
}

/// `--metalink-location`'s countries: comma-separated, trimmed, lowercased.
fn locations(v: &str) -> Vec<String> {
    v.split(',')
        .map(|l| l.trim().to_ascii_lowercase())
        .filter(|l| !l.is_empty())
        .collect()
}

/// `--out` as a name under `--dir`: aria2 joins the two, so an absolute `-o /x/y` is `DIR/x/y`
/// (it never writes outside the directory it was given). Empty: no name.
fn out_name(v: &str) -> Option<String> {
    Some(v.trim_start_matches('/').to_string()).filter(|s| !s.is_empty())
}

/// The options of one download from resolved values.
fn download_options(r: &Resolved, env: &Env) -> DownloadOptions {
    let dir = match r.text("dir") {
        Some(d) => PathBuf::from(expand_home(&d, env)),
        None => env.cwd.clone(),
    };
    DownloadOptions {
        dir,
        out: r.text("out").as_deref().and_then(out_name),
        gid: r.text("gid").as_deref().and_then(parse_gid),
        max_conn_per_server: r.int("max-connection-per-server") as usize,
        uri_selector: r
            .raw("uri-selector")
            .and_then(UriSelector::parse)
            .unwrap_or(UriSelector::Feedback),
        split: r.int("split") as usize,
        min_split_size: r.size("min-split-size"),
        allow_overwrite: r.bool("allow-overwrite"),
        auto_file_renaming: r.bool("auto-file-renaming"),
        user_agent: r.raw("user-agent").unwrap_or_default().to_string(),
        headers: r.all("header"),
        referer: r.text("referer"),
        http_no_cache: r.bool("http-no-cache"),
        http_user: r.text("http-user"),
        http_passwd: r.text("http-passwd"),
        ftp_user: r.text("ftp-user"),
        ftp_passwd: r.text("ftp-passwd"),
        ftp_ascii: r.raw("ftp-type") == Some("ascii"),
        ftp_pasv: r.bool("ftp-pasv"),
        ftp_reuse_connection: r.bool("ftp-reuse-connection"),
        want_digest: !r.bool("no-want-digest-header"),
        from_metalink: false,
        refused: None,
        describes: None,
        follow_metalink: r
            .raw("follow-metalink")
            .and_then(crate::engine::Follow::parse)
            .unwrap_or(crate::engine::Follow::Saved),
        metalink: crate::engine::MetalinkOptions {
            locations: r
                .text("metalink-location")
                .map(|l| locations(&l))
                .unwrap_or_default(),
            language: r.text("metalink-language"),
            os: r.text("metalink-os"),
            version: r.text("metalink-version"),
            preferred_protocol: r
                .text("metalink-preferred-protocol")
                .filter(|p| p != "none"),
            unique_protocol: r.bool("metalink-enable-unique-protocol"),
            base_uri: r.text("metalink-base-uri"),
            select_file: r.text("select-file"),
            index_out: r
                .all("index-out")
                .iter()
                .filter_map(|v| crate::engine::index_out(v))
                .collect(),
        },
        ssh_host_key_md: r.text("ssh-host-key-md"),
        http_auth_challenge: r.bool("http-auth-challenge"),
        no_netrc: r.bool("no-netrc"),
        http_accept_gzip: r.bool("http-accept-gzip"),
        http_keep_alive: r.bool("enable-http-keep-alive"),
        content_disposition_default_utf8: r.bool("content-disposition-default-utf8"),
        use_head: r.bool("use-head"),
        continue_partial: r.bool("continue"),
        piece_length: u32::try_from(r.size("piece-length")).unwrap_or(1 << 20),
        allow_piece_length_change: r.bool("allow-piece-length-change"),
        remove_control_file: r.bool("remove-control-file"),
        always_resume: r.bool("always-resume"),
        max_resume_failure_tries: u32::try_from(r.int("max-resume-failure-tries"))
            .unwrap_or(u32::MAX),
        checksum: r.text("checksum"),
        // (From a Metalink or a torrent, never from an option.)
        pieces: None,
        expected_total: None,
        layout: None,
        max_download_limit: r.size("max-download-limit"),
        lowest_speed_limit: r.size("lowest-speed-limit"),
        max_file_not_found: u32::try_from(r.int("max-file-not-found")).unwrap_or(u32::MAX),
        dry_run: r.bool("dry-run"),
        remote_time: r.bool("remote-time"),
        conditional_get: r.bool("conditional-get"),
        check_integrity: r.bool("check-integrity"),
        hash_check_only: r.bool("hash-check-only"),
        file_allocation: r.raw("file-allocation").unwrap_or("prealloc").to_string(),
        no_file_allocation_limit: r.size("no-file-allocation-limit"),
        // `build` has refused values that are not proxies.
        proxies: proxy_routes(r).unwrap_or_default(),
        proxy_values: proxy_values(r),
    }
}

/// `--enable-rpc`'s settings, if it is on. An empty `--rpc-secret` is refused, as aria2 does.
fn rpc_settings(r: &Resolved) -> Result<Option<RpcSettings>, UsageError> {
    if !r.bool("enable-rpc") {
        return Ok(None);
    }
    if r.layer.get("rpc-secret") == Some("") {
        if let Some(def) = defs::by_name("rpc-secret") {
            return Err(UsageError {
                message: bad_value(def, "The secret must not be empty."),
                exit_code: 28,
            });
        }
    }
    Ok(Some(RpcSettings {
        port: u16::try_from(r.int("rpc-listen-port")).unwrap_or(6800),
        listen_all: r.bool("rpc-listen-all"),
        secret: r.text("rpc-secret"),
        user: r.text("rpc-user"),
        passwd: r.text("rpc-passwd"),
        allow_origin_all: r.bool("rpc-allow-origin-all"),
        max_request_size: r.size("rpc-max-request-size"),
        secure: r.bool("rpc-secure"),
        certificate: r.text("rpc-certificate").map(PathBuf::from),
        private_key: r.text("rpc-private-key").map(PathBuf::from),
        pause: r.bool("pause"),
        max_download_result: usize::try_from(r.int("max-download-result")).unwrap_or(1000),
        keep_unfinished_download_result: r.bool("keep-unfinished-download-result"),
        save_session: r.text("save-session").map(PathBuf::from),
        save_session_interval: r.int("save-session-interval").max(0) as u64,
        force_save: r.bool("force-save"),
        save_not_found: r.bool("save-not-found"),
        command_line: Vec::new(),
    }))
}

/// Every option that has a value, as resolved.
fn option_values(r: &Resolved) -> Vec<(&'static str, String)> {
    defs::OPTIONS
        .iter()
        .filter_map(|d| {
            let v = if d.cumulative {
                let all = r.all(d.name);
                if all.is_empty() {
                    return None;
                }
                all.join("\n")
            } else {
                r.raw(d.name)?.to_string()
            };
            Some((d.name, v))
        })
        .collect()
}

/// The proxies from resolved options. A value that is not a proxy is aria2's bad-value error
/// (exit 28).
fn proxy_routes(r: &Resolved) -> Result<crate::http::proxy::Routes, UsageError> {
    crate::http::proxy::Routes::from_options(|name| r.text(name)).map_err(|(name, why)| {
        match defs::by_name(name) {
            Some(def) => UsageError {
                message: bad_value(def, &why),
                exit_code: 28,
            },
            None => usage_error(why, 28),
        }
    })
}

/// The proxy options' values as resolved (an input-file entry's own lines go on top of them).
fn proxy_values(r: &Resolved) -> Vec<(&'static str, String)> {
    crate::http::proxy::OPTIONS
        .iter()
        .filter_map(|&name| r.text(name).map(|v| (name, v)))
        .collect()
}

impl DownloadOptions {
    /// This download's options with an input-file entry's own lines applied on top. An entry's
    /// own headers replace these ones rather than add to them, as in aria2 (several `header`
    /// lines in one entry add up).
    pub fn with_entry(
        &self,
        layer_values: &[(&'static OptDef, String)],
        env: &Env,
    ) -> DownloadOptions {
        let mut o = self.clone();
        o.out = None;
        o.gid = None;
        if layer_values.iter().any(|(d, _)| d.name == "header") {
            o.headers.clear();
        }
        let mut proxies_changed = false;
        for (def, v) in layer_values {
            if let Some(name) = crate::http::proxy::OPTIONS.iter().find(|&&n| n == def.name) {
                o.proxy_values.retain(|(n, _)| n != name);
                o.proxy_values.push((name, v.clone()));
                proxies_changed = true;
                continue;
            }
            match def.name {
                "dir" => o.dir = PathBuf::from(expand_home(v, env)),
                "out" => o.out = out_name(v),
                "gid" => o.gid = parse_gid(v),
                "max-connection-per-server" => {
                    o.max_conn_per_server = v.parse().unwrap_or(o.max_conn_per_server)
                }
                "split" => o.split = v.parse().unwrap_or(o.split),
                "uri-selector" => o.uri_selector = UriSelector::parse(v).unwrap_or(o.uri_selector),
                "min-split-size" => {
                    o.min_split_size = defs::parse_size(v).unwrap_or(o.min_split_size)
                }
                "allow-overwrite" => o.allow_overwrite = v == "true",
                "auto-file-renaming" => o.auto_file_renaming = v == "true",
                "user-agent" => o.user_agent = v.clone(),
                "header" => o.headers.push(v.clone()),
                "referer" => o.referer = Some(v.clone()).filter(|s| !s.is_empty()),
                "http-no-cache" => o.http_no_cache = v == "true",
                "http-user" => o.http_user = Some(v.clone()).filter(|s| !s.is_empty()),
                "http-passwd" => o.http_passwd = Some(v.clone()).filter(|s| !s.is_empty()),
                "ftp-user" => o.ftp_user = Some(v.clone()).filter(|s| !s.is_empty()),
                "ftp-passwd" => o.ftp_passwd = Some(v.clone()).filter(|s| !s.is_empty()),
                "ftp-type" => o.ftp_ascii = v == "ascii",
                "ftp-pasv" => o.ftp_pasv = v == "true",
                "ftp-reuse-connection" => o.ftp_reuse_connection = v == "true",
                "no-want-digest-header" => o.want_digest = v != "true",
                "follow-metalink" => {
                    o.follow_metalink = crate::engine::Follow::parse(v).unwrap_or(o.follow_metalink)
                }
                "metalink-location" => o.metalink.locations = locations(v),
                "metalink-language" => {
                    o.metalink.language = Some(v.clone()).filter(|s| !s.is_empty())
                }
                "metalink-os" => o.metalink.os = Some(v.clone()).filter(|s| !s.is_empty()),
                "metalink-version" => {
                    o.metalink.version = Some(v.clone()).filter(|s| !s.is_empty())
                }
                "metalink-preferred-protocol" => {
                    o.metalink.preferred_protocol = Some(v.clone()).filter(|p| p != "none")
                }
                "metalink-enable-unique-protocol" => o.metalink.unique_protocol = v == "true",
                "metalink-base-uri" => {
                    o.metalink.base_uri = Some(v.clone()).filter(|s| !s.is_empty())
                }
                "select-file" => o.metalink.select_file = Some(v.clone()).filter(|s| !s.is_empty()),
                "index-out" => o.metalink.index_out.extend(crate::engine::index_out(v)),
                "ssh-host-key-md" => o.ssh_host_key_md = Some(v.clone()).filter(|s| !s.is_empty()),
                "http-auth-challenge" => o.http_auth_challenge = v == "true",
                "no-netrc" => o.no_netrc = v == "true",
                "http-accept-gzip" => o.http_accept_gzip = v == "true",
                "enable-http-keep-alive" => o.http_keep_alive = v == "true",
                "use-head" => o.use_head = v == "true",
                "content-disposition-default-utf8" => {
                    o.content_disposition_default_utf8 = v == "true"
                }
                "continue" => o.continue_partial = v == "true",
                "piece-length" => {
                    o.piece_length = defs::parse_size(v)
                        .and_then(|n| u32::try_from(n).ok())
                        .unwrap_or(o.piece_length)
                }
                "allow-piece-length-change" => o.allow_piece_length_change = v == "true",
                "remove-control-file" => o.remove_control_file = v == "true",
                "always-resume" => o.always_resume = v == "true",
                "checksum" => o.checksum = Some(v.clone()).filter(|s| !s.is_empty()),
                "max-download-limit" => {
                    o.max_download_limit = defs::parse_size(v).unwrap_or(o.max_download_limit)
                }
                "lowest-speed-limit" => {
                    o.lowest_speed_limit = defs::parse_size(v).unwrap_or(o.lowest_speed_limit)
                }
                "max-file-not-found" => {
                    o.max_file_not_found = v.parse().unwrap_or(o.max_file_not_found)
                }
                "dry-run" => o.dry_run = v == "true",
                "remote-time" => o.remote_time = v == "true",
                "conditional-get" => o.conditional_get = v == "true",
                "file-allocation" => o.file_allocation = v.clone(),
                "check-integrity" => o.check_integrity = v == "true",
                "hash-check-only" => o.hash_check_only = v == "true",
                "no-file-allocation-limit" => {
                    o.no_file_allocation_limit =
                        defs::parse_size(v).unwrap_or(o.no_file_allocation_limit)
                }
                "max-resume-failure-tries" => {
                    o.max_resume_failure_tries = v.parse().unwrap_or(o.max_resume_failure_tries)
                }
                _ => {}
            }
        }
        if proxies_changed {
            let values = &o.proxy_values;
            let get = |name: &str| {
                let v = values.iter().rev().find(|(n, _)| *n == name)?;
                Some(v.1.clone()).filter(|v| !v.is_empty())
            };
            // The reader refused entries whose values are not proxies.
            if let Ok(routes) = crate::http::proxy::Routes::from_options(get) {
                o.proxies = routes;
            }
        }
        o
    }
}

fn build(
    layer: &Layer,
    uris: Vec<String>,
    env: &Env,
    warnings: Vec<String>,
) -> Result<Settings, UsageError> {
    let r = Resolved { layer };
    let download_result = match r.raw("download-result") {
        Some("full") => ResultMode::Full,
        Some("hide") => ResultMode::Hide,
        _ => ResultMode::Default,
    };
    let input_file = r
        .text("input-file")
        .map(|p| if p == "-" { p } else { expand_home(&p, env) });
    proxy_routes(&r)?;
    let dns_servers = match r.text("async-dns-server") {
        Some(v) if r.bool("async-dns") && !v.trim().is_empty() => crate::dns::parse_servers(&v)
            .map_err(|why| match defs::by_name("async-dns-server") {
                Some(def) => UsageError {
                    message: bad_value(def, &why),
                    exit_code: 28,
                },
                None => usage_error(why, 28),
            })?,
        _ => Vec::new(),
    };
    let settings = Settings {
        config: Config {
            dns_servers,
            server_stat_if: r
                .text("server-stat-if")
                .filter(|p| !p.is_empty())
                .map(|p| PathBuf::from(expand_home(&p, env))),
            server_stat_of: r
                .text("server-stat-of")
                .filter(|p| !p.is_empty())
                .map(|p| PathBuf::from(expand_home(&p, env))),
            server_stat_timeout: r.int("server-stat-timeout"),
            dns_ipv6: r.bool("enable-async-dns6") && !r.bool("disable-ipv6"),
            download: download_options(&r, env),
            max_concurrent: r.int("max-concurrent-downloads") as usize,
            interfaces: match (r.text("interface"), r.text("multiple-interface")) {
                (Some(i), _) if !i.is_empty() => vec![i],
                (_, Some(list)) => list
                    .split(',')
                    .map(str::trim)
                    .filter(|s| !s.is_empty())
                    .map(str::to_string)
                    .collect(),
                _ => Vec::new(),
            },
            disable_ipv6: r.bool("disable-ipv6"),
            stop_after: r.int("stop").max(0) as u64,
            stop_with_process: r
                .text("stop-with-process")
                .and_then(|p| p.parse::<u32>().ok())
                .filter(|p| *p > 0),
            ca_certificate: r
                .text("ca-certificate")
                .map(|p| PathBuf::from(expand_home(&p, env))),
            check_certificate: r.bool("check-certificate"),
            summary_interval: r.int("summary-interval").max(0) as u64,
            timeout_secs: r.int("timeout").max(1) as u64,
            connect_timeout_secs: r.int("connect-timeout").max(1) as u64,
            max_tries: u32::try_from(r.int("max-tries")).unwrap_or(u32::MAX),
            auto_save_interval: r.int("auto-save-interval").max(0) as u64,
            retry_wait: r.int("retry-wait").max(0) as u64,
            max_overall_download_limit: r.size("max-overall-download-limit"),
            netrc_path: match layer.get("netrc-path") {
                Some(p) => PathBuf::from(expand_home(p, env)),
                None => env
                    .home
                    .as_ref()
                    .map(|h| h.join(".netrc"))
                    .unwrap_or_default(),
            },
            load_cookies: r
                .text("load-cookies")
                .map(|p| PathBuf::from(expand_home(&p, env))),
            save_cookies: r
                .text("save-cookies")
                .map(|p| PathBuf::from(expand_home(&p, env))),
            certificate: r
                .text("certificate")
                .map(|p| PathBuf::from(expand_home(&p, env))),
            private_key: r
                .text("private-key")
                .map(|p| PathBuf::from(expand_home(&p, env))),
            tls13_only: r.raw("min-tls-version") == Some("TLSv1.3"),
            hooks: {
                let hook = |name: &str| {
                    r.text(name)
                        .filter(|c| !c.is_empty())
                        .map(|c| expand_home(&c, env))
                };
                Hooks {
                    start: hook("on-download-start"),
                    pause: hook("on-download-pause"),
                    stop: hook("on-download-stop"),
                    complete: hook("on-download-complete"),
                    error: hook("on-download-error"),
                }
            },
            engine: EngineChoice::Auto,
            rpc: rpc_settings(&r)?,
            session_out: match r.text("save-session") {
                Some(p) if !r.bool("enable-rpc") => Some(SessionOut {
                    path: PathBuf::from(p),
                    force_save: r.bool("force-save"),
                    save_not_found: r.bool("save-not-found"),
                    command_line: Vec::new(),
                }),
                _ => None,
            },
            option_values: option_values(&r),
        },
        force_sequential: r.bool("force-sequential"),
        parameterized_uri: r.bool("parameterized-uri"),
        stderr: r.bool("stderr"),
        console_log_level: log_level(r.raw("console-log-level").unwrap_or("notice")),
        show_console_readout: r.bool("show-console-readout"),
        download_result,
        quiet: r.bool("quiet"),
        log: r
            .text("log")
            .map(|p| if p == "-" { p } else { expand_home(&p, env) }),
        log_level: log_level(r.raw("log-level").unwrap_or("debug")),
        enable_color: r.bool("enable-color"),
        human_readable: r.bool("human-readable"),
        input_file,
        metalink_file: r
            .text("metalink-file")
            .map(|p| if p == "-" { p } else { expand_home(&p, env) }),
        show_files: r.bool("show-files"),
        uris,
        warnings,
        daemon: r.bool("daemon"),
    };
    if settings.uris.is_empty()
        && settings.input_file.is_none()
        && settings.metalink_file.is_none()
        && settings.config.rpc.is_none()
    {
        return Err(usage_error("Specify at least one URL.".to_string(), 1));
    }
    Ok(settings)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::suggest::{edit_distance, suggestions};

    fn env() -> Env {
        Env {
            home: None,
            xdg_config_home: None,
            xdg_cache_home: None,
            proxies: Vec::new(),
            cwd: PathBuf::from("/cwd"),
            engine: None,
        }
    }

    fn settings(args: &[&str]) -> Settings {
        match parse_with(args.iter().copied(), &env()) {
            Ok(Command::Download(s)) => *s,
            other => panic!("unexpected {other:?}"),
        }
    }

    fn err(args: &[&str]) -> UsageError {
        match parse_with(args.iter().copied(), &env()) {
            Err(e) => e,
            other => panic!("expected an error, got {other:?}"),
        }
    }

    #[test]
    fn defaults_match_aria2() {
        let s = settings(&["http://h/f"]);
        assert_eq!(s.config.max_concurrent, 5);
        assert_eq!(s.config.download.max_conn_per_server, 1);
        assert_eq!(s.config.download.split, 5);
        assert_eq!(s.config.download.min_split_size, 20 << 20);
        assert_eq!(s.config.download.dir, PathBuf::from("/cwd"));
        assert!(s.config.check_certificate);
        assert!(!s.config.download.allow_overwrite);
        assert!(s.config.download.auto_file_renaming);
        assert!(!s.force_sequential);
        assert_eq!(s.config.summary_interval, 60);
        assert_eq!(s.console_log_level, LogLevel::Notice);
        assert!(s.show_console_readout);
        assert_eq!(s.uris, vec!["http://h/f"]);
    }

    #[test]
    fn value_forms() {
        let s = settings(&[
            "-x16",
            "-s",
            "8",
            "--min-split-size=1M",
            "--dir",
            "/tmp/x",
            "http://h/u",
            "-j2",
        ]);
        assert_eq!(
            (
                s.config.download.max_conn_per_server,
                s.config.download.split
            ),
            (16, 8)
        );
        assert_eq!(s.config.download.min_split_size, 1 << 20);
        assert_eq!(s.config.download.dir, PathBuf::from("/tmp/x"));
        assert_eq!(s.config.max_concurrent, 2);
        assert_eq!(s.uris, vec!["http://h/u"]);
    }

    #[test]
    fn optional_booleans_only_attach() {
        assert!(
            !settings(&["--check-certificate=false", "http://h/u"])
                .config
                .check_certificate
        );
        assert!(
            settings(&["--allow-overwrite", "http://h/u"])
                .config
                .download
                .allow_overwrite
        );
        assert!(settings(&["-Z", "http://h/u"]).force_sequential);
        assert!(!settings(&["-Zfalse", "http://h/u"]).force_sequential);
        // A detached "false" is a URI, as with aria2c, and not a usable one.
        let e = err(&["--check-certificate", "false", "http://h/u"]);
        assert_eq!(e.exit_code, 1);
        assert_eq!(e.message, "Unrecognized URI or unsupported protocol: false");
        let e = err(&["--check-certificate=maybe", "http://h/u"]);
        assert_eq!(e.exit_code, 28);
        assert!(e
            .message
            .contains("check-certificate must be either 'true' or 'false'."));
    }

    #[test]
    fn prefixes_and_last_one_wins() {
        let s = settings(&["--max-conn=4", "--max-conn=6", "http://h/u"]);
        assert_eq!(s.config.download.max_conn_per_server, 6);
        let e = err(&["--ma=4", "http://h/u"]);
        assert!(e.message.contains("is ambiguous"), "{}", e.message);
        assert_eq!(e.exit_code, 28);
    }

    #[test]
    fn header_accumulates() {
        let s = settings(&["--header=A: 1", "--header", "B: 2", "http://h/u"]);
        assert_eq!(s.config.download.headers, vec!["A: 1", "B: 2"]);
    }

    /// aria2 reads an input-file entry's lines into options of their own and puts them over the
    /// global ones: the entry's headers are its whole list.
    #[test]
    fn an_entrys_headers_replace_the_global_ones() {
        let s = settings(&["--header=A: 1", "http://h/u"]);
        let header = defs::by_name("header").expect("header");
        let env = env();
        let own = [(header, "B: 2".to_string()), (header, "C: 3".to_string())];
        assert_eq!(
            s.config.download.with_entry(&own, &env).headers,
            ["B: 2", "C: 3"]
        );
        assert_eq!(s.config.download.with_entry(&[], &env).headers, ["A: 1"]);
    }

    #[test]
    fn bad_values_exit_28() {
        let e = err(&["-x", "0", "http://h/u"]);
        assert_eq!(e.exit_code, 28);
        assert!(
            e.message
                .contains("max-connection-per-server must be between 1 and"),
            "{}",
            e.message
        );
        assert!(
            e.message
                .contains("Usage:\n -x, --max-connection-per-server="),
            "{}",
            e.message
        );
        assert!(err(&["-k", "5G", "http://h/u"])
            .message
            .contains("Bad or negative value detected: 5G"));
        assert!(err(&["-k", "512K", "http://h/u"])
            .message
            .contains("min-split-size must be between 1048576 and 1073741824."));
        assert!(err(&["-j", "abc", "http://h/u"])
            .message
            .contains("Bad number abc"));
        assert!(err(&["--console-log-level=loud", "http://h/u"])
            .message
            .contains("console-log-level must be one of the following:'debug' 'info' 'notice' 'warn' 'error' "));
        assert_eq!(err(&["--dir"]).exit_code, 28);
    }

    #[test]
    fn unknown_option_suggests() {
        let e = err(&["--dri=/x", "http://h/u"]);
        assert_eq!(e.exit_code, 28);
        assert!(
            e.message
                .starts_with("ringdl: unrecognized option '--dri=/x'"),
            "{}",
            e.message
        );
        assert!(
            e.message.contains("Did you mean:\n\t--dir"),
            "{}",
            e.message
        );
        assert_eq!(err(&["-y", "http://h/u"]).exit_code, 28);
    }

    #[test]
    fn no_uri_is_exit_1() {
        let e = err(&["-x2"]);
        assert_eq!(e.exit_code, 1);
        assert!(e.message.starts_with("Specify at least one URL."));
    }

    #[test]
    fn double_dash_ends_options() {
        let e = err(&["--", "-x2"]);
        assert_eq!(e.message, "Unrecognized URI or unsupported protocol: -x2");
    }

    #[test]
    fn engine_from_the_option_or_the_environment() {
        assert_eq!(settings(&["http://h/u"]).config.engine, EngineChoice::Auto);
        assert_eq!(
            settings(&["--engine=portable", "http://h/u"]).config.engine,
            EngineChoice::Portable
        );
        assert_eq!(
            settings(&["--engine", "uring", "http://h/u"]).config.engine,
            EngineChoice::Uring
        );
        let e = Env {
            engine: Some("portable".into()),
            ..env()
        };
        let from_env = |args: &[&str]| match parse_with(args.iter().copied(), &e) {
            Ok(Command::Download(s)) => s.config.engine,
            other => panic!("unexpected {other:?}"),
        };
        assert_eq!(from_env(&["http://h/u"]), EngineChoice::Portable);
        assert_eq!(
            from_env(&["--engine=auto", "http://h/u"]),
            EngineChoice::Auto
        );
        assert!(matches!(
            parse_with(["--engine=portable", "-v"], &env()),
            Ok(Command::Version(EngineChoice::Portable))
        ));
        let bad = parse_with(["--engine=fast", "http://h/u"], &env()).unwrap_err();
        assert_eq!(bad.exit_code, 28);
        assert!(
            bad.message.contains("'auto' 'uring' 'portable'"),
            "{}",
            bad.message
        );
        let e = Env {
            engine: Some("fast".into()),
            ..env()
        };
        assert_eq!(parse_with(["http://h/u"], &e).unwrap_err().exit_code, 28);
    }

    #[test]
    fn help_version_generate() {
        assert!(
            matches!(parse_with(["-h"], &env()), Ok(Command::Help(t)) if t.contains("'#basic'"))
        );
        assert!(
            matches!(parse_with(["--help=#http"], &env()), Ok(Command::Help(t)) if t.contains("'#http'"))
        );
        assert!(matches!(
            parse_with(["http://h/u", "--version"], &env()),
            Ok(Command::Version(EngineChoice::Auto))
        ));
        assert!(matches!(
            parse_with(["--generate=man"], &env()),
            Ok(Command::Generate(_))
        ));
        let e = parse_with(["--generate=nonsense"], &env()).err().unwrap();
        assert_eq!(e.exit_code, 28);
    }

    /// aria2c reads `NAME` alone in a configuration file as `NAME=`: an option whose value is
    /// optional takes the value it implies, any other fails on the empty value (exit 28). ringdl
    /// warned "Unknown option" and ignored both.
    /// aria2c writes `-d sub -o /x/y.bin` to `sub/x/y.bin` (and `-o /y.bin` to `./y.bin`): `--out`
    /// is always under `--dir`. ringdl wrote to the absolute path.
    #[test]
    fn out_is_always_under_dir() {
        let s = settings(&["-d", "sub", "-o", "/x/y.bin", "http://h/u"]);
        assert_eq!(s.config.download.out.as_deref(), Some("x/y.bin"));
        let s = settings(&["--out=//y.bin", "http://h/u"]);
        assert_eq!(s.config.download.out.as_deref(), Some("y.bin"));
        let s = settings(&["-o", "/", "http://h/u"]);
        assert_eq!(s.config.download.out, None);
    }

    #[test]
    fn config_file_option_names_without_a_value() {
        let dir = tempfile::tempdir().unwrap();
        let conf = dir.path().join("a.conf");
        std::fs::write(&conf, "allow-overwrite\ncontinue=\nremote-time = \n").unwrap();
        let path = format!("--conf-path={}", conf.display());
        let s = settings(&[&path, "http://h/u"]);
        assert!(s.config.download.allow_overwrite);
        assert!(s.config.download.continue_partial);
        assert!(s.warnings.is_empty(), "{:?}", s.warnings);
        std::fs::write(&conf, "max-tries\n").unwrap();
        let e = parse_with([path.as_str(), "http://h/u"], &env()).unwrap_err();
        assert_eq!(e.exit_code, 28);
        assert!(e.message.contains("--max-tries"), "{}", e.message);
    }

    #[test]
    fn config_file_layers_under_the_command_line() {
        let dir = tempfile::tempdir().unwrap();
        let conf = dir.path().join("a.conf");
        std::fs::write(
            &conf,
            "split=3\n# comment\n  max-connection-per-server = 2  \ngarbage line\nfoo-bar=1\n\n",
        )
        .unwrap();
        let path = format!("--conf-path={}", conf.display());
        let s = settings(&[&path, "http://h/u"]);
        assert_eq!(s.config.download.split, 3);
        assert_eq!(s.config.download.max_conn_per_server, 2);
        assert_eq!(
            s.warnings,
            vec!["Unknown option: garbage line", "Unknown option: foo-bar=1"]
        );
        let s = settings(&[&path, "-s7", "http://h/u"]);
        assert_eq!(s.config.download.split, 7);
        let s = settings(&[&path, "--no-conf", "http://h/u"]);
        assert_eq!(s.config.download.split, 5);
        std::fs::write(&conf, "split=abc\n").unwrap();
        let e = err(&[&path, "http://h/u"]);
        assert_eq!(e.exit_code, 28);
        assert!(
            e.message
                .starts_with(&format!("Parse error in {}", conf.display())),
            "{}",
            e.message
        );
        let missing = err(&["--conf-path=/nonexistent/a.conf", "http://h/u"]);
        assert_eq!(missing.exit_code, 1);
        assert!(missing
            .message
            .starts_with("Configuration file /nonexistent/a.conf is not found."));
    }

    #[test]
    fn default_config_locations() {
        let home = tempfile::tempdir().unwrap();
        let e = Env {
            home: Some(home.path().to_path_buf()),
            ..env()
        };
        let xdg = home.path().join(".config/aria2");
        std::fs::create_dir_all(&xdg).unwrap();
        std::fs::write(xdg.join("aria2.conf"), "split=2\n").unwrap();
        let s = |e: &Env| match parse_with(["http://h/u"], e) {
            Ok(Command::Download(s)) => s.config.download.split,
            other => panic!("{other:?}"),
        };
        assert_eq!(s(&e), 2);
        std::fs::create_dir_all(home.path().join(".aria2")).unwrap();
        std::fs::write(home.path().join(".aria2/aria2.conf"), "split=4\n").unwrap();
        assert_eq!(s(&e), 4);
    }

    #[test]
    fn unsupported_options_warn_once_per_feature_and_downloads_needing_them_fail() {
        let s = settings(&[
            "--seed-time=1",
            "--bt-max-peers=5",
            "--enable-rpc=false",
            "http://h/u",
        ]);
        let bt: Vec<&String> = s
            .warnings
            .iter()
            .filter(|w| w.contains("BitTorrent"))
            .collect();
        assert_eq!(bt.len(), 1, "{:?}", s.warnings);
        assert!(
            bt[0].contains("--seed-time") && bt[0].contains("--bt-max-peers"),
            "{bt:?}"
        );
        assert!(
            !s.warnings.iter().any(|w| w.contains("enable-rpc")),
            "{:?}",
            s.warnings
        );
        let e = err(&["--torrent-file=x.torrent", "http://h/u"]);
        assert_eq!(e.exit_code, 1);
        assert!(e.message.contains("BitTorrent"));
        // The RPC server needs no URI, and an empty secret is refused.
        let s = settings(&["--enable-rpc", "--rpc-secret=t", "--rpc-listen-port=7000"]);
        let rpc = s.config.rpc.expect("rpc settings");
        assert_eq!((rpc.port, rpc.secret.as_deref()), (7000, Some("t")));
        assert!(!rpc.listen_all && rpc.max_request_size == 2 << 20);
        assert_eq!(err(&["--enable-rpc", "--rpc-secret="]).exit_code, 28);
        assert!(settings(&["http://h/u"]).config.rpc.is_none());
        // (SFTP, FTPS and FTP are downloads now.)
        for u in ["sftp://h/f", "ftps://h/f", "ftpes://h/f"] {
            assert_eq!(settings(&[u]).uris, vec![u.to_string()]);
        }
        assert!(err(&["magnet:?xt=urn:btih:abc"])
            .message
            .contains("BitTorrent"));
    }

    #[test]
    fn proxies_from_the_environment_are_recognised() {
        let e = Env {
            proxies: vec![("http-proxy", "http://proxy:3128".into())],
            ..env()
        };
        match parse_with(["http://h/u"], &e) {
            Ok(Command::Download(s)) => {
                assert!(s.warnings.is_empty(), "{:?}", s.warnings);
                let p = s
                    .config
                    .download
                    .proxies
                    .http
                    .as_ref()
                    .expect("the http proxy");
                assert_eq!((p.host.as_str(), p.port), ("proxy", 3128));
                assert_eq!(s.config.download.proxies.https, None);
            }
            other => panic!("{other:?}"),
        }
        // The command line wins over the environment.
        match parse_with(["--http-proxy=other:1", "http://h/u"], &e) {
            Ok(Command::Download(s)) => {
                assert_eq!(
                    s.config.download.proxies.http.map(|p| p.host),
                    Some("other".to_string())
                );
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn edit_distance_prefers_small_typos() {
        assert_eq!(edit_distance("dir", "dir"), 0);
        assert!(edit_distance("dri", "dir") < edit_distance("dri", "out"));
        assert_eq!(suggestions("spilt"), vec!["split"]);
    }
}
