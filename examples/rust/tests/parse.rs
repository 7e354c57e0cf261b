use durations::{format, parse, ParseError};

#[test]
fn parses_minutes_and_seconds() {
    assert_eq!(parse("2m5s"), Ok(125));
}

#[test]
fn parses_hours() {
    assert_eq!(parse("1h30m"), Ok(5400));
}

#[test]
fn rejects_a_number_without_unit() {
    assert_eq!(parse("15"), Err(ParseError::MissingUnit("15".to_string())));
}

#[test]
fn round_trips() {
    for s in ["2h", "1h1m1s", "59s"] {
        assert_eq!(format(parse(s).unwrap()), s);
    }
}
