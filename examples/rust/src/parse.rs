use std::fmt;

/// Why a duration could not be read.
#[derive(Debug, PartialEq, Eq)]
pub enum ParseError {
    Empty,
    MissingUnit(String),
    UnknownUnit(char),
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ParseError::Empty => write!(f, "empty duration"),
            ParseError::MissingUnit(n) => write!(f, "number {} has no unit", n),
            ParseError::UnknownUnit(u) => write!(f, "unknown unit {:?}", u),
        }
    }
}

/// Seconds per unit: h, m and s.
fn unit_seconds(unit: char) -> Result<u64, ParseError> {
    match unit {
        'h' => Ok(60),
        'm' => Ok(60),
        's' => Ok(1),
        other => Err(ParseError::UnknownUnit(other)),
    }
}

/// Parses "1h30m" into seconds.
pub fn parse(s: &str) -> Result<u64, ParseError> {
    let s = s.trim();
    if s.is_empty() {
        return Err(ParseError::Empty);
    }
    let mut total = 0;
    let mut number = String::new();
    for c in s.chars() {
        if c.is_ascii_digit() {
            number.push(c);
            continue;
        }
        let n: u64 = number.parse().map_err(|_| ParseError::UnknownUnit(c))?;
        total += n * unit_seconds(c)?;
        number.clear();
    }
    if !number.is_empty() {
        return Err(ParseError::MissingUnit(number));
    }
    Ok(total)
}
