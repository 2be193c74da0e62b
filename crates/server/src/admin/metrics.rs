//! `GET /metrics`: the Prometheus text exposition format (version 0.0.4).
//!
//! Written by hand: the format is a few lines of text per metric, and the
//! values already live in the server's own counters, so a metrics registry
//! would only copy them. Counters end in `_total`; per-volume series carry
//! `volume="NAME"`; every family has its `# HELP` and `# TYPE` lines.

use std::fmt::Write;

use super::report::{Reading, VolumeReading};

/// The `Content-Type` of the exposition.
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// Renders `r` as Prometheus text.
pub fn render(r: &Reading) -> String {
    let mut out = Exposition { text: String::with_capacity(4096 + 2048 * r.volumes.len()) };
    let volumes = &r.volumes;

    out.family("cloudcache_requests_total", "counter", "NBD commands received, by volume and command.");
    for v in volumes {
        let s = &v.stats;
        for (op, n) in [
            ("read", s.reads),
            ("write", s.writes),
            ("flush", s.flushes),
            ("trim", s.trims),
            ("write_zeroes", s.zeroes),
        ] {
            out.sample_op("cloudcache_requests_total", v, op, n);
        }
    }
    out.per_volume("cloudcache_request_errors_total", "counter", "NBD commands that failed.", volumes, |v| {
        v.stats.errors
    });
    out.family("cloudcache_bytes_total", "counter", "Bytes read and written by clients, by volume.");
    for v in volumes {
        out.sample_op("cloudcache_bytes_total", v, "read", v.stats.read_bytes);
        out.sample_op("cloudcache_bytes_total", v, "write", v.stats.write_bytes);
    }
    out.per_volume(
        "cloudcache_block_hits_total",
        "counter",
        "Block accesses found in the cache.",
        volumes,
        |v| v.engine.counters.block_hits,
    );
    out.per_volume(
        "cloudcache_block_misses_total",
        "counter",
        "Block accesses not found in the cache.",
        volumes,
        |v| v.engine.counters.block_accesses - v.engine.counters.block_hits,
    );
    out.family("cloudcache_flash_blocks_total", "counter", "Cache blocks read from and written to flash.");
    for v in volumes {
        out.sample_op("cloudcache_flash_blocks_total", v, "read", v.engine.counters.flash_read_blocks);
        out.sample_op("cloudcache_flash_blocks_total", v, "write", v.engine.counters.flash_write_blocks);
    }
    out.family(
        "cloudcache_backend_blocks_total",
        "counter",
        "Cache blocks read from and written to the backend.",
    );
    for v in volumes {
        out.sample_op("cloudcache_backend_blocks_total", v, "read", v.engine.counters.backend_read_blocks);
        out.sample_op("cloudcache_backend_blocks_total", v, "write", v.engine.counters.backend_write_blocks);
    }
    out.per_volume("cloudcache_evictions_total", "counter", "Blocks evicted by replacement.", volumes, |v| {
        v.engine.counters.evictions
    });
    out.per_volume(
        "cloudcache_cleaned_blocks_total",
        "counter",
        "Dirty blocks written back by the cleaner or a flush.",
        volumes,
        |v| v.engine.counters.cleaned_blocks,
    );
    out.per_volume("cloudcache_cached_blocks", "gauge", "Blocks of the volume now cached.", volumes, |v| {
        v.engine.cached_weight
    });
    out.per_volume(
        "cloudcache_dirty_blocks",
        "gauge",
        "Dirty blocks of the volume now cached.",
        volumes,
        |v| v.engine.dirty_blocks,
    );
    if r.shares_set {
        out.per_volume(
            "cloudcache_share_blocks",
            "gauge",
            "The volume's share of the cache set by on-demand allocation.",
            volumes,
            |v| v.share_blocks.unwrap_or(0),
        );
    }
    out.per_volume("cloudcache_volume_size_bytes", "gauge", "Disk size of the volume.", volumes, |v| {
        v.export.volume.size
    });

    out.single("cloudcache_volumes", "gauge", "Attached volumes.", volumes.len() as u64);
    out.single("cloudcache_block_size_bytes", "gauge", "Cache block size.", r.block_size);
    out.single("cloudcache_capacity_blocks", "gauge", "Blocks the cache can hold.", r.capacity_blocks);
    out.single("cloudcache_used_blocks", "gauge", "Blocks now cached.", r.used_blocks);
    out.single(
        "cloudcache_cache_dirty_blocks",
        "gauge",
        "Dirty blocks now cached, all volumes.",
        r.dirty_blocks,
    );
    out.single(
        "cloudcache_held_blocks",
        "gauge",
        "Dirty blocks held in pinned flash slots after a failed write-back.",
        r.held_blocks,
    );
    out.single(
        "cloudcache_degraded",
        "gauge",
        "1 once a flash error has turned caching of new data off.",
        u64::from(r.degraded),
    );
    out.single("cloudcache_flash_errors_total", "counter", "Flash I/O errors.", r.flash_errors);
    out.single("cloudcache_backend_errors_total", "counter", "Backend I/O errors.", r.backend_errors);
    out.text
}

/// The text being written.
struct Exposition {
    text: String,
}

impl Exposition {
    fn family(&mut self, name: &str, kind: &str, help: &str) {
        // Writing to a String cannot fail.
        let _ = writeln!(self.text, "# HELP {name} {help}\n# TYPE {name} {kind}");
    }

    fn single(&mut self, name: &str, kind: &str, help: &str, value: u64) {
        self.family(name, kind, help);
        let _ = writeln!(self.text, "{name} {value}");
    }

    fn per_volume(
        &mut self,
        name: &str,
        kind: &str,
        help: &str,
        volumes: &[VolumeReading],
        value: impl Fn(&VolumeReading) -> u64,
    ) {
        self.family(name, kind, help);
        for v in volumes {
            self.text.push_str(name);
            self.text.push_str("{volume=\"");
            push_label_value(&mut self.text, &v.export.volume.name);
            let _ = writeln!(self.text, "\"}} {}", value(v));
        }
    }

    fn sample_op(&mut self, name: &str, v: &VolumeReading, op: &str, value: u64) {
        self.text.push_str(name);
        self.text.push_str("{volume=\"");
        push_label_value(&mut self.text, &v.export.volume.name);
        let _ = writeln!(self.text, "\",op=\"{op}\"}} {value}");
    }
}

/// Appends a label value escaped as the format requires (`\\`, `\"`, `\n`).
fn push_label_value(out: &mut String, value: &str) {
    for c in value.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn label_values_are_escaped() {
        let mut s = String::new();
        push_label_value(&mut s, "vm\"1\\\n");
        assert_eq!(s, r#"vm\"1\\\n"#);
    }
}
