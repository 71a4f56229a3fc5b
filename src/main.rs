//! Wiring only: settings from `cli`, a job list, the engine run, the report, the exit code.
use ringdl::cli::{self, Command};
use ringdl::engine::{self, Job};
use ringdl::ui::exit::ExitCode;
use ringdl::ui::{Console, ResultRow, Status};

fn main() {
    std::process::exit(real_main());
}

fn real_main() -> i32 {
    let settings = match cli::parse_args(std::env::args_os().skip(1)) {
        Ok(Command::Download(s)) => s,
        Ok(Command::Help) => {
            ringdl::ui::emit(&cli::help_text());
            return 0;
        }
        Ok(Command::Version) => {
            ringdl::ui::emit(&format!(
                "ringdl version {}\nEnabled Features: HTTP, HTTPS (rustls), io_uring, O_DIRECT\n",
                env!("CARGO_PKG_VERSION")
            ));
            return 0;
        }
        Err(e) => {
            eprintln!("{}", e.message);
            return e.exit_code;
        }
    };
    let jobs: Vec<Job> = if settings.force_sequential {
        settings
            .uris
            .iter()
            .map(|u| Job {
                uris: vec![u.clone()],
                out: None,
            })
            .collect()
    } else {
        vec![Job {
            uris: settings.uris.clone(),
            out: settings.out.clone(),
        }]
    };
    let mut console = Console::new(
        settings.console_log_level,
        settings.quiet,
        settings.show_console_readout,
    );
    console.notice(&format!("Downloading {} item(s)", jobs.len()));
    let outcomes = match engine::run(&settings, jobs, &mut console) {
        Ok(o) => o,
        Err(e) => {
            console.finish();
            eprintln!("ringdl: {e}");
            return 1;
        }
    };
    let rows: Vec<ResultRow> = outcomes
        .iter()
        .map(|o| ResultRow {
            gid: o.gid,
            status: if !o.finished {
                Status::InProgress
            } else if o.code == ExitCode::OK {
                Status::Ok
            } else {
                Status::Err
            },
            avg_speed: (o.finished && o.code == ExitCode::OK)
                .then(|| (o.bytes as f64 / o.seconds.max(0.001)) as u64),
            path_or_uri: match (&o.path, o.code == ExitCode::OK) {
                (Some(p), _) => p.display().to_string(),
                (None, _) => o.first_uri.clone(),
            },
        })
        .collect();
    console.results(&rows, settings.download_result);
    // aria2: the last error among finished downloads wins; unfinished ones without errors give 7.
    let code = outcomes
        .iter()
        .rev()
        .map(|o| o.code)
        .find(|c| *c != ExitCode::OK)
        .unwrap_or(if outcomes.iter().all(|o| o.finished) {
            ExitCode::OK
        } else {
            ExitCode::UNFINISHED
        });
    i32::from(code.0)
}
