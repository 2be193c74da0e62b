//! Human-readable formatting of bytes, ratios, durations and counts.
//!
//! These are the same functions the charts use for tick labels, so a table and the chart next
//! to it print a value the same way. None of them panics: non-finite inputs print as `n/a`.

/// Text printed for values that cannot be shown (NaN, infinities).
pub const NOT_AVAILABLE: &str = "n/a";

const BYTE_UNITS: [&str; 7] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"];

/// Formats a byte count with binary units: `64 MiB`, `1.5 GiB`, `512 B`.
///
/// At most three significant digits are kept past the unit change, which is what a person
/// compares at a glance; exact multiples print without decimals.
pub fn format_bytes(bytes: u64) -> String {
    format_bytes_f64(bytes as f64)
}

/// [`format_bytes`] for a possibly fractional or negative value, as found on chart axes.
pub fn format_bytes_f64(bytes: f64) -> String {
    if !bytes.is_finite() {
        return NOT_AVAILABLE.to_string();
    }
    let sign = if bytes < 0.0 { "-" } else { "" };
    let mut value = bytes.abs();
    let mut unit = 0;
    while value >= 1024.0 && unit < BYTE_UNITS.len() - 1 {
        value /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        return format!("{sign}{} B", trim_fixed(value, if value < 10.0 { 1 } else { 0 }));
    }
    let mut text = trim_fixed(value, significant_decimals(value));
    // 1023.9 KiB would otherwise print as "1024 KiB".
    if text == "1024" && unit < BYTE_UNITS.len() - 1 {
        unit += 1;
        text = "1".to_string();
    }
    format!("{sign}{text} {}", BYTE_UNITS[unit])
}

/// Formats a fraction as a percentage with one decimal: `0.4231` → `42.3%`, `1.0` → `100.0%`,
/// `0.00042` → `0.042%`.
///
/// The input is a ratio (hit ratio, share), not a value already multiplied by 100. The fixed
/// decimal keeps table columns aligned; small non-zero ratios keep two significant digits so
/// that they do not collapse to `0.0%`.
pub fn format_percent(fraction: f64) -> String {
    percent(fraction, false)
}

/// [`format_percent`] without trailing zeros (`20%`, `2.5%`), as used for axis ticks.
pub fn format_percent_short(fraction: f64) -> String {
    percent(fraction, true)
}

fn percent(fraction: f64, trim: bool) -> String {
    if !fraction.is_finite() {
        return NOT_AVAILABLE.to_string();
    }
    let percent = fraction * 100.0;
    let magnitude = percent.abs();
    let decimals = if magnitude == 0.0 || magnitude >= 0.95 {
        1
    } else {
        // 0.5 → 2 decimals ("0.50"), 0.042 → 3 decimals ("0.042").
        (1 - magnitude.log10().floor() as i32).clamp(1, 6) as usize
    };
    let text = format!("{percent:.decimals$}");
    let text = if trim { trim_zeros(&text).to_string() } else { text };
    if text.trim_start_matches('-').chars().all(|c| c == '0' || c == '.') {
        // "-0.0" is zero.
        return if trim { "0%".to_string() } else { format!("{}%", text.trim_start_matches('-')) };
    }
    format!("{text}%")
}

const NS_PER_US: u64 = 1_000;
const NS_PER_MS: u64 = 1_000_000;
const NS_PER_S: u64 = 1_000_000_000;
const NS_PER_MIN: u64 = 60 * NS_PER_S;
const NS_PER_H: u64 = 60 * NS_PER_MIN;
const NS_PER_D: u64 = 24 * NS_PER_H;

/// Formats a duration given in nanoseconds: `2 h 5 min`, `3 d`, `1 min 30 s`, `4.2 s`, `1.5 ms`.
///
/// From a second up, the two most significant units are printed, rounded to the smaller one
/// (a trace of 2 h 5 min 40 s reads `2 h 6 min`); below a second, one unit with up to three
/// significant digits.
pub fn format_duration_ns(ns: u64) -> String {
    if ns == 0 {
        return "0 s".to_string();
    }
    // Larger units first; each names the unit its remainder is rounded to.
    const COMPOUND: [(u64, &str, u64, &str); 3] = [
        (NS_PER_D, "d", NS_PER_H, "h"),
        (NS_PER_H, "h", NS_PER_MIN, "min"),
        (NS_PER_MIN, "min", NS_PER_S, "s"),
    ];
    for (major, major_name, minor, minor_name) in COMPOUND {
        // Rounding first and comparing after lets 59 min 59.7 s become "1 h", not "60 min".
        let rounded = round_to_multiple(ns, minor);
        if rounded >= major {
            let whole = rounded / major;
            let rest = (rounded % major) / minor;
            return if rest == 0 {
                format!("{whole} {major_name}")
            } else {
                format!("{whole} {major_name} {rest} {minor_name}")
            };
        }
    }
    const SIMPLE: [(u64, &str); 3] = [(NS_PER_S, "s"), (NS_PER_MS, "ms"), (NS_PER_US, "µs")];
    for (unit, name) in SIMPLE {
        let value = ns as f64 / unit as f64;
        if value >= 1.0 {
            let text = trim_fixed(value, significant_decimals(value));
            if text == "1000" {
                // Only reachable below a second: 999.9996 ms is a second.
                return format_duration_ns(ns.saturating_add(unit));
            }
            return format!("{text} {name}");
        }
    }
    format!("{ns} ns")
}

/// [`format_duration_ns`] for a possibly fractional or negative value, as found on chart axes.
pub fn format_duration_ns_f64(ns: f64) -> String {
    if !ns.is_finite() {
        return NOT_AVAILABLE.to_string();
    }
    let magnitude = ns.abs();
    let text = if magnitude >= u64::MAX as f64 {
        format!("{} d", format_number(magnitude / NS_PER_D as f64))
    } else if magnitude < 1.0 && magnitude > 0.0 {
        format!("{} ns", trim_fixed(magnitude, 3))
    } else {
        format_duration_ns(magnitude.round() as u64)
    };
    if ns < 0.0 && text != "0 s" {
        format!("-{text}")
    } else {
        text
    }
}

/// Formats an integer with thousands separators: `1234567` → `1,234,567`.
pub fn format_count(count: u64) -> String {
    group_thousands(&count.to_string())
}

/// Formats a plain number compactly: integers with thousands separators (`12,345`), others with
/// up to four significant digits (`0.1235`, `3.142`), and very large or small magnitudes in
/// scientific notation (`1.5e12`, `2e-7`).
pub fn format_number(value: f64) -> String {
    if !value.is_finite() {
        return NOT_AVAILABLE.to_string();
    }
    let magnitude = value.abs();
    if magnitude == 0.0 {
        return "0".to_string();
    }
    if !(1e-4..1e12).contains(&magnitude) {
        let text = format!("{value:.3e}");
        // "1.500e12" → "1.5e12"
        return match text.split_once('e') {
            Some((mantissa, exponent)) => format!("{}e{exponent}", trim_zeros(mantissa)),
            None => text,
        };
    }
    let text = trim_fixed(value, significant_decimals_n(magnitude, 4));
    let (sign, digits) = match text.strip_prefix('-') {
        Some(rest) => ("-", rest),
        None => ("", text.as_str()),
    };
    let (int_part, frac_part) = match digits.split_once('.') {
        Some((int_part, frac_part)) => (int_part, Some(frac_part)),
        None => (digits, None),
    };
    let grouped = group_thousands(int_part);
    match frac_part {
        Some(frac) => format!("{sign}{grouped}.{frac}"),
        None if grouped == "0" => "0".to_string(),
        None => format!("{sign}{grouped}"),
    }
}

/// Decimals giving three significant digits for a value of at least 1.
fn significant_decimals(value: f64) -> usize {
    significant_decimals_n(value, 3)
}

/// Decimals giving `digits` significant digits for a positive value.
fn significant_decimals_n(magnitude: f64, digits: i32) -> usize {
    if magnitude <= 0.0 || !magnitude.is_finite() {
        return 0;
    }
    let leading = magnitude.log10().floor() as i32 + 1;
    (digits - leading).clamp(0, 12) as usize
}

fn round_to_multiple(value: u64, unit: u64) -> u64 {
    let rest = value % unit;
    let down = value - rest;
    if rest * 2 >= unit {
        down.saturating_add(unit)
    } else {
        down
    }
}

/// Fixed-point text with trailing zeros (and a trailing point) removed.
fn trim_fixed(value: f64, decimals: usize) -> String {
    trim_zeros(&format!("{value:.decimals$}")).to_string()
}

fn trim_zeros(text: &str) -> &str {
    if text.contains('.') {
        text.trim_end_matches('0').trim_end_matches('.')
    } else {
        text
    }
}

fn group_thousands(digits: &str) -> String {
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes() {
        assert_eq!(format_bytes(0), "0 B");
        assert_eq!(format_bytes(512), "512 B");
        assert_eq!(format_bytes(1023), "1023 B");
        assert_eq!(format_bytes(1024), "1 KiB");
        assert_eq!(format_bytes(64 << 20), "64 MiB");
        assert_eq!(format_bytes(3 << 29), "1.5 GiB");
        assert_eq!(format_bytes(4 << 30), "4 GiB");
        assert_eq!(format_bytes((100 << 20) + (300 << 10)), "100 MiB");
        assert_eq!(format_bytes((1 << 20) - 1), "1 MiB");
        assert_eq!(format_bytes(u64::MAX), "16 EiB");
        assert_eq!(format_bytes_f64(-2048.0), "-2 KiB");
        assert_eq!(format_bytes_f64(f64::NAN), "n/a");
        assert_eq!(format_bytes_f64(0.5), "0.5 B");
    }

    #[test]
    fn percent() {
        assert_eq!(format_percent(0.4231), "42.3%");
        assert_eq!(format_percent(0.41), "41.0%");
        assert_eq!(format_percent(1.0), "100.0%");
        assert_eq!(format_percent(0.0), "0.0%");
        assert_eq!(format_percent(0.005), "0.50%");
        assert_eq!(format_percent(0.00042), "0.042%");
        assert_eq!(format_percent(0.99996), "100.0%");
        assert_eq!(format_percent(-0.1), "-10.0%");
        assert_eq!(format_percent(-0.0), "0.0%");
        assert_eq!(format_percent(-0.0000001), "-0.000010%");
        assert_eq!(format_percent(f64::NAN), "n/a");
        assert_eq!(format_percent(f64::INFINITY), "n/a");
        assert_eq!(format_percent_short(0.2), "20%");
        assert_eq!(format_percent_short(0.025), "2.5%");
        assert_eq!(format_percent_short(1.0), "100%");
        assert_eq!(format_percent_short(0.0), "0%");
        assert_eq!(format_percent_short(-0.0), "0%");
        assert_eq!(format_percent_short(0.005), "0.5%");
    }

    #[test]
    fn durations() {
        assert_eq!(format_duration_ns(0), "0 s");
        assert_eq!(format_duration_ns(750), "750 ns");
        assert_eq!(format_duration_ns(1_500), "1.5 µs");
        assert_eq!(format_duration_ns(1_500_000), "1.5 ms");
        assert_eq!(format_duration_ns(999_999_999), "1 s");
        assert_eq!(format_duration_ns(4_200_000_000), "4.2 s");
        assert_eq!(format_duration_ns(42 * NS_PER_S), "42 s");
        assert_eq!(format_duration_ns(90 * NS_PER_S), "1 min 30 s");
        assert_eq!(format_duration_ns(59 * NS_PER_MIN + 59_700 * NS_PER_MS), "1 h");
        assert_eq!(format_duration_ns(2 * NS_PER_H + 5 * NS_PER_MIN), "2 h 5 min");
        assert_eq!(format_duration_ns(2 * NS_PER_H + 5 * NS_PER_MIN + 40 * NS_PER_S), "2 h 6 min");
        assert_eq!(format_duration_ns(3 * NS_PER_D), "3 d");
        assert_eq!(format_duration_ns(3 * NS_PER_D + 4 * NS_PER_H), "3 d 4 h");
        assert!(format_duration_ns(u64::MAX).ends_with(" h"));
        assert_eq!(format_duration_ns_f64(-(90.0 * NS_PER_S as f64)), "-1 min 30 s");
        assert_eq!(format_duration_ns_f64(f64::NAN), "n/a");
        assert_eq!(format_duration_ns_f64(1e30), format!("{} d", format_number(1e30 / 86_400e9)));
    }

    #[test]
    fn counts_and_numbers() {
        assert_eq!(format_count(0), "0");
        assert_eq!(format_count(999), "999");
        assert_eq!(format_count(1_000), "1,000");
        assert_eq!(format_count(1_234_567), "1,234,567");
        assert_eq!(format_count(u64::MAX), "18,446,744,073,709,551,615");
        assert_eq!(format_number(0.0), "0");
        assert_eq!(format_number(12_345.0), "12,345");
        assert_eq!(format_number(-12_345.0), "-12,345");
        assert_eq!(format_number(1.23456), "1.235");
        assert_eq!(format_number(0.123456), "0.1235");
        assert_eq!(format_number(0.30000000000000004), "0.3");
        assert_eq!(format_number(-0.00001), "-1e-5");
        assert_eq!(format_number(1.5e12), "1.5e12");
        assert_eq!(format_number(-0.00004), "-4e-5");
        assert_eq!(format_number(f64::NAN), "n/a");
    }
}
