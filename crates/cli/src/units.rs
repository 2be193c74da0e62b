//! Parsing sizes the way operators write them ("16MiB", "4KiB", "1.5G").

/// Parse a byte size: a number with an optional unit. Binary units
/// (K, KiB, M, MiB, G, GiB, T, TiB) are powers of 1024; KB, MB, GB, TB are
/// powers of 1000; B or no unit is bytes.
pub fn parse_size(text: &str) -> Result<u64, String> {
    let t = text.trim();
    let split = t.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(t.len());
    let (number, unit) = t.split_at(split);
    if t.starts_with('-') {
        return Err(format!("size {text:?} is negative"));
    }
    let value: f64 = number.parse().map_err(|_| format!("size {text:?} does not start with a number"))?;
    let multiplier: u64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kib" => 1 << 10,
        "m" | "mib" => 1 << 20,
        "g" | "gib" => 1 << 30,
        "t" | "tib" => 1 << 40,
        "kb" => 1_000,
        "mb" => 1_000_000,
        "gb" => 1_000_000_000,
        "tb" => 1_000_000_000_000,
        other => {
            return Err(format!("size {text:?} has an unknown unit {other:?} (use B, KiB, MiB, GiB, TiB)"))
        }
    };
    let bytes = value * multiplier as f64;
    if !bytes.is_finite() || bytes >= u64::MAX as f64 {
        return Err(format!("size {text:?} is too large"));
    }
    if bytes.fract() != 0.0 {
        return Err(format!("size {text:?} is not a whole number of bytes"));
    }
    Ok(bytes as u64)
}

/// Parse a positive size (cache sizes): zero is an error.
pub fn parse_positive_size(text: &str) -> Result<u64, String> {
    match parse_size(text)? {
        0 => Err(format!("size {text:?} is zero; a cache needs a positive size")),
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
        assert!(parse_size("12XB").unwrap_err().contains("unknown unit"));
        assert!(parse_size("MiB").unwrap_err().contains("number"));
        assert!(parse_size("0.3").unwrap_err().contains("whole"));
        assert!(parse_positive_size("0MiB").unwrap_err().contains("zero"));
    }
}
