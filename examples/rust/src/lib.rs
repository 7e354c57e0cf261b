//! Durations written the way people write them: "1h30m", "45s", "2h".

mod format;
mod parse;

pub use format::format;
pub use parse::{parse, ParseError};
