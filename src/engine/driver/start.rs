//! Starting the engine: the connections a run may need, the reactor chosen (io_uring, or epoll
//! where io_uring is refused or `--engine=portable` asks), the resolver and signals around it,
//! and the engine built over any reactor (`run_on`, which the simulation calls with its own).
use super::*;

/// Why the engine could not start.
#[derive(Debug)]
pub enum StartError {
    /// io_uring is refused or incomplete here.
    NoIoUring(String),
    /// Not even one connection's buffers fit the locked-memory limit.
    Memlock {
        needed: usize,
        limit: Option<u64>,
    },
    Other(String),
}

impl StartError {
    /// Why io_uring was not used, in a few words (the notice of a run that falls back).
    pub fn fallback_reason(&self) -> String {
        match self {
            StartError::NoIoUring(why) => format!("io_uring is not available ({why})"),
            StartError::Memlock { limit, .. } => format!(
                "io_uring's buffers do not fit the locked-memory limit ({})",
                limit.map_or("unlimited".to_string(), |l| format!("{} KiB", l / 1024))
            ),
            StartError::Other(m) => m.clone(),
        }
    }
}

impl fmt::Display for StartError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StartError::NoIoUring(why) => write!(
                f,
                "io_uring is not available ({why}); --engine=uring needs Linux 5.6 or later with io_uring allowed (check sysctl kernel.io_uring_disabled, seccomp or container settings)"
            ),
            StartError::Memlock { needed, limit } => write!(
                f,
                "cannot lock {} KiB of memory for I/O buffers (RLIMIT_MEMLOCK is {}); raise it with 'ulimit -l {}'",
                needed / 1024,
                limit.map_or("unlimited".to_string(), |l| format!("{} KiB", l / 1024)),
                needed.div_ceil(1024) + 64
            ),
            StartError::Other(m) => f.write_str(m),
        }
    }
}

/// Connections the run may need at once: `-s` (at most 4 × `-x`) for each of `-j` downloads.
pub(crate) fn wanted_slots(settings: &Config, expected: Option<usize>) -> usize {
    let opts = &settings.download;
    let per_dl = opts
        .split
        .min(opts.max_conn_per_server.saturating_mul(4))
        .max(1);
    let concurrent = settings
        .max_concurrent
        .min(expected.unwrap_or(usize::MAX))
        .max(1);
    per_dl.saturating_mul(concurrent).clamp(1, MAX_SLOTS)
}

/// Runs every job to its end. `jobs` is pulled only as downloads can start, so a list of a million
/// entries is never in memory at once; `expected` (when known) sizes the buffer pool.
pub fn run(
    settings: &Config,
    jobs: &mut dyn Iterator<Item = Job>,
    expected: Option<usize>,
    console: &mut dyn Report,
) -> Result<Summary, StartError> {
    start(settings, jobs, expected, console, None, None)
}

/// [`run`], with `follower` taking each Metalink a download fetched to follow: the jobs it
/// yields come out of `jobs` next.
pub fn run_following(
    settings: &Config,
    jobs: &mut dyn Iterator<Item = Job>,
    expected: Option<usize>,
    console: &mut dyn Report,
    follower: Follower,
) -> Result<Summary, StartError> {
    start(settings, jobs, expected, console, None, Some(follower))
}

/// Runs as a daemon (`--enable-rpc`): `daemon` (above the engine) gives the downloads to start
/// and answers the RPC server's calls until `aria2.shutdown` or a signal.
pub fn serve(
    settings: &Config,
    daemon: Box<dyn Supervisor>,
    tls: Option<crate::tls::server::ServerTlsConfig>,
    console: &mut dyn Report,
) -> Result<Summary, StartError> {
    if settings.rpc.is_none() {
        return Err(StartError::Other("--enable-rpc is not set".into()));
    }
    start(
        settings,
        &mut std::iter::empty(),
        None,
        console,
        Some((daemon, tls)),
        None,
    )
}

fn start(
    settings: &Config,
    jobs: &mut dyn Iterator<Item = Job>,
    expected: Option<usize>,
    console: &mut dyn Report,
    daemon: Option<(
        Box<dyn Supervisor>,
        Option<crate::tls::server::ServerTlsConfig>,
    )>,
    follower: Option<Follower>,
) -> Result<Summary, StartError> {
    let binds = interface_addresses(&settings.interfaces).map_err(StartError::Other)?;
    let slots = wanted_slots(settings, expected);
    let io_timeout = Duration::from_secs(settings.timeout_secs);
    let connect_timeout = Duration::from_secs(settings.connect_timeout_secs);
    let uring = match settings.engine {
        EngineChoice::Portable => Err(None),
        EngineChoice::Auto | EngineChoice::Uring => {
            uring_reactor(slots, io_timeout, connect_timeout).map_err(Some)
        }
    };
    let reactor = match uring {
        Ok(r) => Chosen::Uring(r),
        Err(Some(e)) if settings.engine == EngineChoice::Uring => return Err(e),
        Err(why) => {
            if let Some(e) = why {
                console.notice(&format!(
                    "{}; using the portable reactor (epoll).",
                    e.fallback_reason()
                ));
            }
            // Nothing is registered with the kernel: the budget is the pool's cap, not the
            // locked-memory limit.
            let layout = Layout::fit(slots, MIN_INCOMING, POOL_CAP).ok_or_else(|| {
                StartError::Other("the I/O buffers do not fit their budget".into())
            })?;
            let pool = Pool::new(layout)
                .map_err(|e| StartError::Other(format!("cannot map I/O buffers: {e}")))?;
            Chosen::Portable(
                Epoll::new(io_timeout, connect_timeout, pool)
                    .map_err(|e| StartError::Other(format!("cannot start epoll: {e}")))?,
            )
        }
    };
    // Before any thread starts, so every thread has the signals blocked and only the reactor sees
    // them.
    let signals = sys::signal_fd().ok().map(|f| Rc::new(f) as Fd);
    let resolver =
        Resolver::start().map_err(|e| StartError::Other(format!("cannot start resolver: {e}")))?;
    let outside = Outside {
        signals,
        resolver: Some(resolver),
        binds,
        daemon,
        follower,
    };
    console.log(
        LogLevel::Debug,
        match reactor {
            Chosen::Uring(_) => "engine: io_uring reactor",
            Chosen::Portable(_) => "engine: portable reactor (epoll)",
        },
    );
    // An error of the reactor names it; one of the run itself (`RunError`) is said as it is.
    let said = |e: std::io::Error, reactor: &str| {
        let run = e.get_ref().and_then(|i| i.downcast_ref::<RunError>());
        StartError::Other(match run {
            Some(RunError(m)) => m.clone(),
            None => format!("{reactor} failed: {e}"),
        })
    };
    match reactor {
        Chosen::Uring(r) => {
            run_on(r, settings, jobs, console, outside).map_err(|e| said(e, "io_uring"))
        }
        Chosen::Portable(r) => {
            run_on(r, settings, jobs, console, outside).map_err(|e| said(e, "epoll"))
        }
    }
}

/// A run that could not start for a reason of its own (the RPC port taken), not its reactor's.
#[derive(Debug)]
struct RunError(String);

impl std::fmt::Display for RunError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for RunError {}

/// Each `--interface`/`--multiple-interface` entry's addresses: an interface's own, an IP
/// address, or a host name's; `Err` is aria2c's message for one that has none.
fn interface_addresses(names: &[String]) -> Result<Vec<Vec<std::net::IpAddr>>, String> {
    names
        .iter()
        .map(|name| {
            let mut addrs = sys::interface_addresses(name);
            if addrs.is_empty() {
                if let Ok(ip) = name.parse::<std::net::IpAddr>() {
                    addrs.push(ip);
                } else if let Ok(found) =
                    std::net::ToSocketAddrs::to_socket_addrs(&(name.as_str(), 0))
                {
                    addrs.extend(found.map(|a| a.ip()));
                }
            }
            match addrs.is_empty() {
                true => Err(format!(
                    "Failed to find given interface {name}, cause: not available"
                )),
                false => Ok(addrs),
            }
        })
        .collect()
}

/// The reactor a run got.
enum Chosen {
    Uring(Uring<Tag>),
    Portable(Epoll<Tag>),
}

/// The io_uring reactor with a pool for `slots` connections that fits the locked-memory limit, or
/// why there is none.
fn uring_reactor(
    slots: usize,
    io_timeout: Duration,
    connect_timeout: Duration,
) -> Result<Uring<Tag>, StartError> {
    let read_size = MIN_INCOMING;
    let limit = sys::memlock_soft_limit();
    let budget = limit.map_or(POOL_CAP, |l| {
        (l as usize).saturating_sub(64 * 1024).min(POOL_CAP)
    });
    let layout = Layout::fit(slots, read_size, budget).ok_or(StartError::Memlock {
        needed: Layout::least(read_size).bytes(),
        limit,
    })?;
    let pool =
        Pool::new(layout).map_err(|e| StartError::Other(format!("cannot map I/O buffers: {e}")))?;
    Uring::new(512, io_timeout, connect_timeout, pool).map_err(|e| match e {
        SetupError::Unavailable(why) => StartError::NoIoUring(why),
        SetupError::Register(e) if matches!(e.raw_os_error(), Some(libc::ENOMEM | libc::EPERM)) => {
            StartError::Memlock {
                needed: layout.bytes(),
                limit,
            }
        }
        SetupError::Register(e) => {
            StartError::NoIoUring(format!("registering buffers failed: {e}"))
        }
    })
}

/// Which reactor `choice` would run on here, and why not io_uring when it is not: what `-v` says.
pub fn engine_report(choice: EngineChoice) -> String {
    match choice {
        EngineChoice::Portable => {
            "portable (epoll), O_DIRECT; asked for by --engine or RINGDL_ENGINE".into()
        }
        EngineChoice::Auto | EngineChoice::Uring => {
            match uring_reactor(1, Duration::from_secs(1), Duration::from_secs(1)) {
                Ok(_) => "io_uring, O_DIRECT".into(),
                Err(e) if choice == EngineChoice::Uring => format!("none: {e}"),
                Err(e) => format!("portable (epoll), O_DIRECT; {}", e.fallback_reason()),
            }
        }
    }
}

/// What the engine takes from the process besides its reactor: the signals it reads (Ctrl-C) and
/// the resolver thread. The simulation has neither.
pub(crate) struct Outside {
    pub signals: Option<Fd>,
    pub resolver: Option<Resolver>,
    /// `--interface`/`--multiple-interface`: the addresses of each, for connections to leave
    /// from in turn (empty: no binding).
    pub binds: Vec<Vec<std::net::IpAddr>>,
    /// Daemon mode: the daemon, and the certificate its RPC server speaks TLS with.
    pub daemon: Option<(
        Box<dyn Supervisor>,
        Option<crate::tls::server::ServerTlsConfig>,
    )>,
    /// Outside daemon mode: what takes a Metalink a download fetched to follow.
    pub follower: Option<Follower>,
}

/// Takes a Metalink a finished download fetched (`--follow-metalink`) and puts the downloads it
/// describes where the run's job list gives them next; how many, or the line that says why none.
pub type Follower = Box<dyn FnMut(crate::engine::Followed) -> Result<usize, String>>;

/// Runs every job to its end on `reactor`, which brings its pool (one read block per connection).
/// An error means the reactor failed (or, in the simulation, stopped the run).
pub(crate) fn run_on<R: Reactor<Tag>>(
    reactor: R,
    settings: &Config,
    jobs: &mut dyn Iterator<Item = Job>,
    console: &mut dyn Report,
    outside: Outside,
) -> std::io::Result<Summary> {
    let tick = console.tick_interval();
    let now = reactor.now();
    let slots = reactor.pool().capacity(Class::Read);
    let wake = outside
        .resolver
        .as_ref()
        .map(|r| Rc::new(r.wake_fd()) as Fd);
    let mut engine = Engine {
        reactor,
        s: settings,
        console,
        conns: (0..slots).map(|_| None).collect(),
        dls: Vec::new(),
        jobs,
        jobs_done: false,
        summary: Summary::default(),
        hooks_running: Vec::new(),
        began: now,
        tls: None,
        pace: pace::Pacer::new(settings.max_overall_download_limit, now),
        resolver: outside.resolver,
        ring_dns: lookup::RingDns::new(settings.dns_servers.clone(), settings.dns_ipv6),
        server_stats: Default::default(),
        binds: outside.binds,
        wake,
        wake_op: None,
        signals: outside.signals,
        follower: outside.follower,
        described_jobs: Default::default(),
        sig_op: None,
        stopping: false,
        emergency: false,
        noticed: std::collections::HashSet::new(),
        tick,
        tick_op: None,
        dns: connection::DnsCache::default(),
        next_id: 1,
        waits: 0,
        flushes: Flushes::default(),
        last_summary: now,
        identity: credentials::Identity::default(),
        proxy_addrs: proxy::ProxyAddrs::default(),
        daemon: None,
        sup: None,
        ends: Vec::new(),
        taken_ends: Vec::new(),
    };
    if let (Some((sup, tls)), Some(rpc)) = (outside.daemon, settings.rpc.as_ref()) {
        engine.sup = Some(sup);
        let server = super::rpc::Server::new(rpc, tls);
        engine.daemon = Some(Box::new(daemon::DaemonIo::new(server)));
    }
    engine.load_credentials();
    engine.load_server_stats();
    if let Err(e) = engine.rpc_start() {
        engine.drain();
        return Err(std::io::Error::other(RunError(e)));
    }
    let result = engine.run_loop();
    engine.drain();
    result?;
    engine.check_pool();
    engine.save_cookies();
    engine.save_server_stats();
    Ok(std::mem::take(&mut engine.summary))
}
