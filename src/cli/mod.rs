//! The aria2c command line: the option table (`defs`), parsing argv, aria2.conf and the environment
//! into plain [`Settings`] (`parse`), `-i` lists (`input`), `--help` (`help`) and the generated man
//! page and completions (`generate`). Nothing here touches sockets, downloads, or the ring.
pub mod defs;
pub mod generate;
pub mod help;
pub mod input;
pub mod paramed;
pub(crate) mod parse;
mod table;

pub use parse::{
    check_uri, check_value, parse_args, parse_gid, parse_with, Command, DownloadOptions,
    EngineChoice, Env, LogLevel, ResultMode, RpcSettings, Settings, UriSelector, UsageError,
};
