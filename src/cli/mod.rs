//! The aria2c command line: the option table (`defs`, `table`), parsing argv, aria2.conf and the
//! environment (`parse`, `conf`, `suggest` for long options and "Did you mean") into plain
//! [`Settings`] (`settings`), each value checked (`check`), `-i` lists (`input`), `-P` patterns
//! (`paramed`), `--help` (`help`) and the generated man page and completions (`generate`).
//! Nothing here touches sockets, downloads, or the ring.
mod check;
mod conf;
pub mod defs;
pub mod generate;
pub mod help;
pub mod input;
pub mod paramed;
pub(crate) mod parse;
mod settings;
mod suggest;
mod table;

pub use parse::{
    check_uri, check_value, parse_args, parse_gid, parse_with, Command, DownloadOptions,
    EngineChoice, Env, LogLevel, ResultMode, RpcSettings, Settings, UriSelector, UsageError,
};
