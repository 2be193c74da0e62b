//! The server's configuration: one TOML file (`cloudcache serve --config
//! host.toml`), which command-line flags extend. Sizes and durations are
//! strings with units ("1GiB", "10min"), as everywhere in cloudcache.

use std::path::PathBuf;
use std::str::FromStr;

use cloudcache_engine::WritePolicy;
use cloudcache_trace::units::{parse_duration, parse_size};
use serde::Deserialize;

use crate::nbd::stream::ListenAddr;

/// What to do with dirty blocks on a graceful shutdown.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ShutdownMode {
    /// Keep them on flash (metadata persisted): the next start is warm and
    /// still dirty. The dm-cache model.
    Persist,
    /// Write every dirty block back first, leaving the backend complete.
    Flush,
}

impl FromStr for ShutdownMode {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "persist" => Ok(ShutdownMode::Persist),
            "flush" => Ok(ShutdownMode::Flush),
            _ => Err(format!("unknown shutdown mode {s:?}; expected persist or flush")),
        }
    }
}

/// One volume (export) and where its data lives.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VolumeConfig {
    /// Export name.
    pub name: String,
    /// A file path, or an `nbd://` / `nbd+unix://` URI.
    pub backend: String,
    /// Its write policy.
    pub write_policy: WritePolicy,
}

impl FromStr for VolumeConfig {
    type Err = String;
    /// `NAME=BACKEND[:write-back|write-through|write-invalidate|read-only]`.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let (name, rest) =
            s.split_once('=').ok_or_else(|| format!("volume {s:?}: expected NAME=BACKEND[:WRITE-POLICY]"))?;
        if name.is_empty() || rest.is_empty() {
            return Err(format!("volume {s:?}: expected NAME=BACKEND[:WRITE-POLICY]"));
        }
        // A URI has colons of its own: only a known policy name after the
        // last colon is taken as the policy.
        let (backend, write_policy) = match rest.rsplit_once(':') {
            Some((backend, policy)) if !backend.is_empty() => match policy.parse::<WritePolicy>() {
                Ok(policy) => (backend, policy),
                Err(_) => (rest, WritePolicy::WriteBack),
            },
            _ => (rest, WritePolicy::WriteBack),
        };
        Ok(VolumeConfig { name: name.to_string(), backend: backend.to_string(), write_policy })
    }
}

/// One volume per regular file in `dir`, named by the file's name without
/// its extension (`vm7.img` is export `vm7`), in name order: a directory of
/// disk images as the backend.
pub fn volumes_in_dir(dir: &std::path::Path, write_policy: WritePolicy) -> Result<Vec<VolumeConfig>, String> {
    let entries = std::fs::read_dir(dir).map_err(|e| format!("disk directory {}: {e}", dir.display()))?;
    let mut volumes = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|e| format!("disk directory {}: {e}", dir.display()))?;
        let path = entry.path();
        if !path.is_file() {
            continue;
        }
        let Some(name) =
            path.file_stem().and_then(|n| n.to_str()).filter(|n| !n.is_empty() && !n.starts_with('.'))
        else {
            continue;
        };
        volumes.push(VolumeConfig {
            name: name.to_string(),
            backend: path.display().to_string(),
            write_policy,
        });
    }
    volumes.sort_by(|a, b| a.name.cmp(&b.name));
    if volumes.is_empty() {
        return Err(format!("disk directory {} holds no disk image files", dir.display()));
    }
    Ok(volumes)
}

/// Everything a server needs.
#[derive(Clone, Debug)]
pub struct ServerConfig {
    /// Where clients connect.
    pub listen: Vec<ListenAddr>,
    /// The admin HTTP API's address (`HOST:PORT`; a `tcp:` prefix is accepted), if any.
    pub admin: Option<String>,
    /// The flash store file or device.
    pub flash: PathBuf,
    /// Its size when it is created.
    pub flash_size: u64,
    /// Cache block size.
    pub block_size: u64,
    /// Volumes to attach at start.
    pub volumes: Vec<VolumeConfig>,
    /// Worker threads carrying out requests.
    pub workers: usize,
    /// The cleaner writes back when dirty blocks exceed this fraction of
    /// the cache...
    pub dirty_high: f64,
    /// ...down to this fraction.
    pub dirty_low: f64,
    /// Write-back rate limit, bytes per second (0 = unlimited), so cleaning
    /// does not starve clients.
    pub writeback_rate: u64,
    /// Misses in sequential runs longer than this are not admitted (0 = off).
    pub sequential_cutoff: u64,
    /// What a graceful shutdown does with dirty blocks.
    pub shutdown: ShutdownMode,
    /// The on-demand allocation window (`None`: one shared LRU, no shares).
    pub allocation_window_ms: Option<u64>,
    /// RWS_N's N for demand and staging admission.
    pub rws_n: u32,
}

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig {
            listen: Vec::new(),
            admin: None,
            flash: PathBuf::new(),
            flash_size: 1 << 30,
            block_size: 4096,
            volumes: Vec::new(),
            workers: 32,
            dirty_high: 0.5,
            dirty_low: 0.25,
            writeback_rate: 64 << 20,
            sequential_cutoff: 0,
            shutdown: ShutdownMode::Persist,
            allocation_window_ms: None,
            rws_n: 1,
        }
    }
}

/// The TOML file's shape.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileConfig {
    listen: Option<Vec<ListenAddr>>,
    admin: Option<String>,
    flash: Option<FlashSection>,
    cache: Option<CacheSection>,
    allocation: Option<AllocationSection>,
    #[serde(default)]
    volume: Vec<VolumeSection>,
    #[serde(default)]
    disk_dir: Vec<DiskDirSection>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct DiskDirSection {
    path: PathBuf,
    write_policy: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct FlashSection {
    path: PathBuf,
    size: Option<String>,
    block_size: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct CacheSection {
    workers: Option<usize>,
    dirty_high: Option<f64>,
    dirty_low: Option<f64>,
    writeback_rate: Option<String>,
    sequential_cutoff: Option<String>,
    shutdown: Option<ShutdownMode>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct AllocationSection {
    window: String,
    rws_n: Option<u32>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct VolumeSection {
    name: String,
    backend: String,
    write_policy: Option<String>,
}

impl ServerConfig {
    /// Reads a TOML configuration; errors name the file and the field.
    pub fn from_toml(text: &str, origin: &str) -> Result<ServerConfig, String> {
        let file: FileConfig = toml::from_str(text).map_err(|e| format!("{origin}: {e}"))?;
        let mut config =
            ServerConfig { listen: file.listen.unwrap_or_default(), admin: file.admin, ..Default::default() };
        let field = |name: &str, e: String| format!("{origin}: {name}: {e}");
        if let Some(flash) = file.flash {
            config.flash = flash.path;
            if let Some(size) = flash.size {
                config.flash_size = parse_size(&size).map_err(|e| field("flash.size", e))?;
            }
            if let Some(size) = flash.block_size {
                config.block_size = parse_size(&size).map_err(|e| field("flash.block_size", e))?;
            }
        }
        if let Some(cache) = file.cache {
            config.workers = cache.workers.unwrap_or(config.workers);
            config.dirty_high = cache.dirty_high.unwrap_or(config.dirty_high);
            config.dirty_low = cache.dirty_low.unwrap_or(config.dirty_low);
            if let Some(rate) = cache.writeback_rate {
                config.writeback_rate = parse_size(&rate).map_err(|e| field("cache.writeback_rate", e))?;
            }
            if let Some(cutoff) = cache.sequential_cutoff {
                config.sequential_cutoff =
                    parse_size(&cutoff).map_err(|e| field("cache.sequential_cutoff", e))?;
            }
            config.shutdown = cache.shutdown.unwrap_or(config.shutdown);
        }
        if let Some(allocation) = file.allocation {
            let ns = parse_duration(&allocation.window).map_err(|e| field("allocation.window", e))?;
            config.allocation_window_ms = Some(ns / 1_000_000);
            config.rws_n = allocation.rws_n.unwrap_or(config.rws_n);
        }
        for (i, v) in file.volume.into_iter().enumerate() {
            let write_policy = match v.write_policy {
                Some(p) => p.parse().map_err(|e| field(&format!("volume[{i}].write_policy"), e))?,
                None => WritePolicy::WriteBack,
            };
            config.volumes.push(VolumeConfig { name: v.name, backend: v.backend, write_policy });
        }
        for (i, d) in file.disk_dir.into_iter().enumerate() {
            let write_policy = match d.write_policy {
                Some(p) => p.parse().map_err(|e| field(&format!("disk_dir[{i}].write_policy"), e))?,
                None => WritePolicy::WriteBack,
            };
            config.volumes.extend(
                volumes_in_dir(&d.path, write_policy).map_err(|e| field(&format!("disk_dir[{i}]"), e))?,
            );
        }
        Ok(config)
    }

    /// Checks the settings that cannot work, naming each.
    pub fn validate(&self) -> Result<(), String> {
        if self.listen.is_empty() {
            return Err("no listen address: give --listen unix:PATH or tcp:HOST:PORT".into());
        }
        if self.flash.as_os_str().is_empty() {
            return Err("no flash store: give --flash FILE".into());
        }
        if !self.block_size.is_power_of_two() || !(512..=1 << 20).contains(&self.block_size) {
            return Err(format!("block size {} must be a power of two from 512 B to 1 MiB", self.block_size));
        }
        if !(0.0..=1.0).contains(&self.dirty_high) || !(0.0..=self.dirty_high).contains(&self.dirty_low) {
            return Err(format!(
                "dirty watermarks high {} low {}: need 0 <= low <= high <= 1",
                self.dirty_high, self.dirty_low
            ));
        }
        if self.rws_n > cloudcache_demand::window::MAX_REUSES {
            return Err(format!("rws_n {} is above {}", self.rws_n, cloudcache_demand::window::MAX_REUSES));
        }
        if self.allocation_window_ms == Some(0) {
            return Err("allocation window must be at least 1 ms".into());
        }
        let mut names: Vec<&str> = self.volumes.iter().map(|v| v.name.as_str()).collect();
        names.sort_unstable();
        if let Some(w) = names.windows(2).find(|w| w[0] == w[1]) {
            return Err(format!("volume {:?} is given twice", w[0]));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn volume_flags_parse_with_and_without_policy() {
        let v: VolumeConfig = "vm1=/disks/vm1.img:write-through".parse().unwrap();
        assert_eq!(
            (v.name.as_str(), v.backend.as_str(), v.write_policy),
            ("vm1", "/disks/vm1.img", WritePolicy::WriteThrough)
        );
        let v: VolumeConfig = "vm2=nbd://storage:10809/vm2".parse().unwrap();
        assert_eq!((v.backend.as_str(), v.write_policy), ("nbd://storage:10809/vm2", WritePolicy::WriteBack));
        let v: VolumeConfig = "vm3=nbd+unix:///vm3?socket=/run/s.sock:write-invalidate".parse().unwrap();
        assert_eq!(
            (v.backend.as_str(), v.write_policy),
            ("nbd+unix:///vm3?socket=/run/s.sock", WritePolicy::WriteInvalidate)
        );
        assert!("novalue".parse::<VolumeConfig>().is_err());
        assert!("=x".parse::<VolumeConfig>().is_err());
    }

    #[test]
    fn a_disk_directory_gives_one_volume_per_file() {
        let dir = std::env::temp_dir().join(format!("cc-disk-dir-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("sub")).unwrap();
        for name in ["vm2.img", "vm1.raw", ".hidden"] {
            std::fs::write(dir.join(name), b"").unwrap();
        }
        let volumes = volumes_in_dir(&dir, WritePolicy::WriteThrough).unwrap();
        let names: Vec<&str> = volumes.iter().map(|v| v.name.as_str()).collect();
        assert_eq!(names, ["vm1", "vm2"]);
        assert!(volumes.iter().all(|v| v.write_policy == WritePolicy::WriteThrough));
        let text = format!("[[disk_dir]]\npath = {:?}\n", dir.display().to_string());
        assert_eq!(ServerConfig::from_toml(&text, "host.toml").unwrap().volumes.len(), 2);
        std::fs::remove_dir_all(&dir).unwrap();
        let e = volumes_in_dir(&dir, WritePolicy::WriteBack).unwrap_err();
        assert!(e.contains("disk directory"), "{e}");
    }

    #[test]
    fn toml_config_reads_and_names_bad_fields() {
        let text = r#"
            listen = ["unix:/tmp/cc.sock", "tcp:127.0.0.1:10809"]
            [flash]
            path = "/tmp/flash.img"
            size = "256MiB"
            [cache]
            dirty_high = 0.6
            writeback_rate = "16MiB"
            shutdown = "flush"
            [allocation]
            window = "10min"
            [[volume]]
            name = "vm1"
            backend = "/tmp/vm1.img"
            write_policy = "write-through"
        "#;
        let c = ServerConfig::from_toml(text, "host.toml").unwrap();
        assert_eq!(c.listen.len(), 2);
        assert_eq!((c.flash_size, c.writeback_rate), (256 << 20, 16 << 20));
        assert_eq!((c.dirty_high, c.shutdown), (0.6, ShutdownMode::Flush));
        assert_eq!(c.allocation_window_ms, Some(600_000));
        assert_eq!(c.volumes[0].write_policy, WritePolicy::WriteThrough);
        c.validate().unwrap();
        let e = ServerConfig::from_toml("[flash]\npath='x'\nsize='12 parsecs'\n", "host.toml").unwrap_err();
        assert!(e.contains("host.toml") && e.contains("flash.size"), "{e}");
        let e = ServerConfig::from_toml("colour = 'blue'\n", "host.toml").unwrap_err();
        assert!(e.contains("colour"), "{e}");
    }
}
