//! Size arguments: the trace crate's unit parser, plus the checks that only
//! make sense on a command line (a negative or zero cache size).

/// Parse a byte size ("16MiB", "4KiB", "1.5G", "512"); see
/// [`cloudcache_trace::units::parse_size`] for the units.
pub fn parse_size(text: &str) -> Result<u64, String> {
    if text.trim_start().starts_with('-') {
        return Err(format!("size {text:?} is negative"));
    }
    cloudcache_trace::units::parse_size(text).map_err(|e| format!("size {e}"))
}

/// Parse a positive size (cache sizes): zero is an error.
pub fn parse_positive_size(text: &str) -> Result<u64, String> {
    match parse_size(text)? {
        0 => Err(format!("size {text:?} is zero; a cache needs a positive size")),
        n => Ok(n),
    }
}

/// Parse a duration ("12h", "30min", "2d"); negative values are errors.
pub fn parse_duration(text: &str) -> Result<u64, String> {
    if text.trim_start().starts_with('-') {
        return Err(format!("duration {text:?} is negative"));
    }
    cloudcache_trace::units::parse_duration(text)
}

/// Parse a positive duration (window lengths): zero is an error.
pub fn parse_positive_duration(text: &str) -> Result<u64, String> {
    match parse_duration(text)? {
        0 => Err(format!("duration {text:?} is zero")),
        n => Ok(n),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        assert_eq!(parse_size("16MiB").unwrap(), 16 << 20);
        assert_eq!(parse_size("4KiB").unwrap(), 4096);
        assert_eq!(parse_size("1.5G").unwrap(), 3 << 29);
        assert_eq!(parse_size("512").unwrap(), 512);
        assert_eq!(parse_size("2 GB").unwrap(), 2_000_000_000);
        assert!(parse_size("-1GiB").unwrap_err().contains("negative"));
        assert!(parse_size("12XB").unwrap_err().contains("unknown size unit"));
        assert!(parse_size("MiB").unwrap_err().contains("number"));
        assert!(parse_positive_size("0MiB").unwrap_err().contains("zero"));
        assert_eq!(parse_duration("30min").unwrap(), 1_800_000_000_000);
        assert!(parse_duration("-1h").unwrap_err().contains("negative"));
        assert!(parse_positive_duration("0s").unwrap_err().contains("zero"));
    }
}
