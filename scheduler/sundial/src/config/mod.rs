//! Configuration: flags, then `SUNDIAL_*` environment variables, then an optional TOML file,
//! then defaults (first found wins); the README's table lists every key. `flags.rs` declares
//! the settings, `resolve.rs` applies that order and the defaults and checks every value.

mod flags;
mod resolve;

pub use flags::{ScriptLimitSettings, Settings};
pub use resolve::Resolved;
