//! The aria2c command line: the option table (`defs`), and parsing argv into plain [`Settings`]
//! (`parse`). Nothing here touches sockets, files being downloaded, or the ring.
pub mod defs;
pub mod generate;
mod parse;

pub use parse::{help_text, parse_args, Command, LogLevel, ResultMode, Settings, UsageError};
