//! Parsing the human units people write in configs and on command lines:
//! sizes ("4KiB", "1.5GiB", "20GB"), durations ("14d", "1d12h", "90s"),
//! throughputs ("100MiB/s") and calendar start times.
//!
//! Everything here is integer or exactly rounded arithmetic so that a config
//! means the same bytes and nanoseconds on every platform.

/// Nanoseconds per second.
pub const NS_PER_SEC: u64 = 1_000_000_000;

/// Split "12.5GiB" into ("12.5", "GiB"), trimming blanks around both.
fn split_number(s: &str) -> (&str, &str) {
    let s = s.trim();
    let end = s
        .char_indices()
        .find(|&(_, c)| !(c.is_ascii_digit() || c == '.' || c == '_'))
        .map_or(s.len(), |(i, _)| i);
    (s[..end].trim(), s[end..].trim())
}

/// Parse a non-negative decimal like "12", "1.5" or "1_000".
fn parse_number(num: &str, whole: &str) -> Result<f64, String> {
    let cleaned: String = num.chars().filter(|&c| c != '_').collect();
    if cleaned.is_empty() {
        return Err(format!("{whole:?} does not start with a number"));
    }
    cleaned.parse::<f64>().map_err(|_| format!("{whole:?} does not start with a valid number"))
}

/// Multiply a parsed number by a unit and check that the result is a whole,
/// representable count.
fn scaled(value: f64, unit: u64, whole: &str, what: &str) -> Result<u64, String> {
    let total = value * unit as f64;
    // 2^62 keeps every later offset + length sum far from overflow.
    if !total.is_finite() || total >= (1u64 << 62) as f64 {
        return Err(format!("{what} {whole:?} is too large"));
    }
    Ok(total.round() as u64)
}

/// Bytes per unit for a size suffix (case-insensitive), or `None`.
///
/// `K`/`M`/`G`/`T`/`P` alone are binary, as in fio and dd; `KB`/`MB`/... are
/// decimal and `KiB`/`MiB`/... binary, as their names say.
fn size_unit(unit: &str) -> Option<u64> {
    let u = unit.to_ascii_lowercase();
    Some(match u.as_str() {
        "" | "b" => 1,
        "k" | "kib" => 1 << 10,
        "m" | "mib" => 1 << 20,
        "g" | "gib" => 1 << 30,
        "t" | "tib" => 1 << 40,
        "p" | "pib" => 1 << 50,
        "kb" => 1_000,
        "mb" => 1_000_000,
        "gb" => 1_000_000_000,
        "tb" => 1_000_000_000_000,
        "pb" => 1_000_000_000_000_000,
        _ => return None,
    })
}

/// Parse a byte size: a number with an optional unit, e.g. "4KiB", "1.5 GiB",
/// "20GB", "512".
pub fn parse_size(s: &str) -> Result<u64, String> {
    let (num, unit) = split_number(s);
    let value = parse_number(num, s)?;
    let Some(mult) = size_unit(unit) else {
        return Err(format!(
            "{s:?} has an unknown size unit {unit:?}; use B, KiB, MiB, GiB, TiB (binary), \
             KB, MB, GB, TB (decimal) or K, M, G, T (binary)"
        ));
    };
    scaled(value, mult, s, "size")
}

/// Parse a throughput: a size per second, the "/s" being optional
/// ("100MiB/s", "100MiB", "50MB/s").
pub fn parse_throughput(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let body =
        t.strip_suffix("/s").or_else(|| t.strip_suffix("/sec")).or_else(|| t.strip_suffix("ps")).unwrap_or(t);
    parse_size(body).map_err(|e| format!("throughput: {e}"))
}

/// Nanoseconds per unit for a duration suffix, or `None`.
fn duration_unit(unit: &str) -> Option<u64> {
    Some(match unit {
        "ns" => 1,
        "us" | "µs" => 1_000,
        "ms" => 1_000_000,
        "s" | "sec" | "secs" => NS_PER_SEC,
        "m" | "min" | "mins" => 60 * NS_PER_SEC,
        "h" | "hr" | "hrs" => 3_600 * NS_PER_SEC,
        "d" | "day" | "days" => 86_400 * NS_PER_SEC,
        "w" | "week" | "weeks" => 7 * 86_400 * NS_PER_SEC,
        _ => return None,
    })
}

/// Parse a duration into nanoseconds: one or more number-unit pairs
/// ("14d", "1d12h", "1.5h", "90s", "250ms"). A bare number is seconds.
pub fn parse_duration(s: &str) -> Result<u64, String> {
    let mut rest = s.trim();
    if rest.is_empty() {
        return Err("empty duration; write e.g. \"14d\", \"2h\" or \"90s\"".into());
    }
    let mut total: u64 = 0;
    while !rest.is_empty() {
        let (num, tail) = split_number(rest);
        let value = parse_number(num, s)?;
        let unit_len = tail.char_indices().find(|&(_, c)| !c.is_alphabetic()).map_or(tail.len(), |(i, _)| i);
        let unit = &tail[..unit_len];
        let mult = if unit.is_empty() && tail.is_empty() {
            NS_PER_SEC
        } else {
            duration_unit(&unit.to_ascii_lowercase()).ok_or_else(|| {
                format!("{s:?} has an unknown time unit {unit:?}; use ns, us, ms, s, m, h, d or w")
            })?
        };
        let part = scaled(value, mult, s, "duration")?;
        total = total.checked_add(part).ok_or_else(|| format!("duration {s:?} is too large"))?;
        rest = tail[unit_len..].trim_start();
    }
    Ok(total)
}

/// Nanoseconds since the Unix epoch of a TOML date-time; a local date-time
/// (no offset) is read as UTC and a bare date as its midnight.
pub fn datetime_to_unix_ns(dt: &toml::value::Datetime) -> Result<u64, String> {
    let Some(date) = dt.date else {
        return Err(format!("start_time {dt} has no date"));
    };
    let days = days_from_civil(i64::from(date.year), i64::from(date.month), i64::from(date.day));
    let (mut secs, mut nanos) = (days * 86_400, 0i64);
    if let Some(t) = dt.time {
        secs += i64::from(t.hour) * 3_600 + i64::from(t.minute) * 60 + i64::from(t.second);
        nanos = i64::from(t.nanosecond);
    }
    if let Some(toml::value::Offset::Custom { minutes }) = dt.offset {
        secs -= i64::from(minutes) * 60;
    }
    if secs < 0 {
        return Err(format!("start_time {dt} is before 1970-01-01T00:00:00Z"));
    }
    (secs as u64)
        .checked_mul(NS_PER_SEC)
        .and_then(|ns| ns.checked_add(nanos as u64))
        .ok_or_else(|| format!("start_time {dt} is too far in the future"))
}

/// Days from 1970-01-01 to a proleptic Gregorian date (H. Hinnant's algorithm).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// A duration for messages: "2h", "1.50h", "90s", "1us".
pub fn show_duration(ns: u64) -> String {
    const UNITS: [(&str, u64); 7] = [
        ("d", 86_400 * NS_PER_SEC),
        ("h", 3_600 * NS_PER_SEC),
        ("min", 60 * NS_PER_SEC),
        ("s", NS_PER_SEC),
        ("ms", 1_000_000),
        ("us", 1_000),
        ("ns", 1),
    ];
    for (name, size) in UNITS {
        if ns >= size {
            return if ns % size == 0 {
                format!("{}{name}", ns / size)
            } else {
                format!("{:.2}{name}", ns as f64 / size as f64)
            };
        }
    }
    "0s".to_owned()
}

/// A byte count for messages: "16 GiB", "1.5 MiB", "4096 B".
pub fn show_bytes(b: u64) -> String {
    const UNITS: [(&str, u64); 5] =
        [("PiB", 1 << 50), ("TiB", 1 << 40), ("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)];
    for (name, size) in UNITS {
        if b >= size {
            let v = b as f64 / size as f64;
            return if b.checked_rem(size) == Some(0) {
                format!("{} {name}", b / size)
            } else {
                format!("{v:.2} {name}")
            };
        }
    }
    format!("{b} B")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        assert_eq!(parse_size("4KiB"), Ok(4096));
        assert_eq!(parse_size("4 k"), Ok(4096));
        assert_eq!(parse_size("1.5GiB"), Ok(3 << 29));
        assert_eq!(parse_size("20GB"), Ok(20_000_000_000));
        assert_eq!(parse_size("512"), Ok(512));
        assert_eq!(parse_size("1_024B"), Ok(1024));
        assert!(parse_size("12XB").unwrap_err().contains("XB"));
        assert!(parse_size("GiB").is_err());
        assert!(parse_size("-1GiB").is_err());
        assert!(parse_size("99999999PiB").is_err());
        assert_eq!(parse_throughput("100MiB/s"), Ok(100 << 20));
        assert_eq!(parse_throughput("8 MB"), Ok(8_000_000));
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("90s"), Ok(90 * NS_PER_SEC));
        assert_eq!(parse_duration("14d"), Ok(14 * 86_400 * NS_PER_SEC));
        assert_eq!(parse_duration("1d12h"), Ok(36 * 3_600 * NS_PER_SEC));
        assert_eq!(parse_duration("1d 12h 30m"), Ok((36 * 60 + 30) * 60 * NS_PER_SEC));
        assert_eq!(parse_duration("1.5h"), Ok(5_400 * NS_PER_SEC));
        assert_eq!(parse_duration("250ms"), Ok(250_000_000));
        assert_eq!(parse_duration("2w"), Ok(14 * 86_400 * NS_PER_SEC));
        assert_eq!(parse_duration("30"), Ok(30 * NS_PER_SEC));
        assert!(parse_duration("3 fortnights").unwrap_err().contains("fortnights"));
        assert!(parse_duration("").is_err());
        assert!(parse_duration("h").is_err());
    }

    #[test]
    fn dates() {
        let dt: toml::value::Datetime = "2016-01-04T00:00:00Z".parse().unwrap();
        assert_eq!(datetime_to_unix_ns(&dt), Ok(1_451_865_600 * NS_PER_SEC));
        let dt: toml::value::Datetime = "1970-01-02".parse().unwrap();
        assert_eq!(datetime_to_unix_ns(&dt), Ok(86_400 * NS_PER_SEC));
        let dt: toml::value::Datetime = "1970-01-01T02:00:00+01:00".parse().unwrap();
        assert_eq!(datetime_to_unix_ns(&dt), Ok(3_600 * NS_PER_SEC));
        let dt: toml::value::Datetime = "1969-12-31".parse().unwrap();
        assert!(datetime_to_unix_ns(&dt).is_err());
    }

    #[test]
    fn bytes_shown() {
        assert_eq!(show_bytes(16 << 30), "16 GiB");
        assert_eq!(show_bytes(3 << 29), "1.50 GiB");
        assert_eq!(show_bytes(100), "100 B");
    }
}
