/// Formats seconds the way parse reads them: "1h30m", "45s", "0s".
pub fn format(seconds: u64) -> String {
    if seconds == 0 {
        return "0s".to_string();
    }
    let (h, m, s) = (seconds / 3600, seconds / 60 % 60, seconds % 60);
    let mut out = String::new();
    for (n, unit) in [(h, 'h'), (m, 'm'), (s, 's')] {
        if n > 0 {
            out.push_str(&n.to_string());
            out.push(unit);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_each_unit() {
        assert_eq!(format(5400), "1h30m");
        assert_eq!(format(45), "45s");
        assert_eq!(format(0), "0s");
    }
}
