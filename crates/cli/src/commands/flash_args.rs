//! `sim --flash-model`: the flash device under every replay.

use anyhow::{bail, Result};
use clap::Args;
use cloudcache_sim::{FlashPlacement, FlashSpec};

use crate::offline::parse_fraction;
use crate::units::parse_size;

/// Flash device model options of `cloudcache sim` (the same names and
/// defaults as `cloudcache offline`).
#[derive(Args, Debug, Clone)]
pub(crate) struct FlashArgs {
    /// Flash device model fed by every replay: ftl (page-mapped, greedy GC), log (whole containers
    /// written by the host) or none. Adds erasures, EPBPD, write amplification, FUE and endurance.
    #[arg(long, default_value = "none", value_parser = parse_flash_model)]
    flash_model: FlashChoice,
    /// Flash erase unit (container) size, a multiple of the block size.
    #[arg(long, default_value = "2MiB", value_parser = parse_size, allow_hyphen_values = true)]
    erase_unit: u64,
    /// Over-provisioning: spare fraction of the physical flash, in (0, 1) (0.07 or 7%).
    #[arg(long, default_value = "0.07", value_parser = parse_fraction, allow_hyphen_values = true)]
    over_provisioning: f64,
    /// Do not TRIM the FTL's slots that blocks leave (evictions, invalidations).
    #[arg(long)]
    no_trim: bool,
    /// Write buffer of the log model, in erase units.
    #[arg(long, default_value_t = 4)]
    write_buffer: u32,
    /// Program/erase cycles per erase unit, for the endurance projection.
    #[arg(long, default_value_t = 3000)]
    pe_limit: u64,
}

/// `--flash-model`: a placement, or none (clap cannot parse into a bare `Option` with a default).
#[derive(Clone, Copy, Debug)]
struct FlashChoice(Option<FlashPlacement>);

fn parse_flash_model(s: &str) -> Result<FlashChoice, String> {
    if s.eq_ignore_ascii_case("none") {
        return Ok(FlashChoice(None));
    }
    s.parse().map(|p| FlashChoice(Some(p)))
}

impl FlashArgs {
    /// The model asked for, if any; flash options without a model are an error.
    pub(crate) fn spec(&self) -> Result<Option<FlashSpec>> {
        let FlashChoice(Some(placement)) = self.flash_model else {
            if self.no_trim {
                bail!("--no-trim needs --flash-model ftl");
            }
            return Ok(None);
        };
        if self.no_trim && placement == FlashPlacement::Log {
            bail!(
                "--no-trim applies to --flash-model ftl; the log model's host always knows which blocks left"
            );
        }
        if self.pe_limit == 0 {
            bail!("--pe-limit must be at least 1");
        }
        Ok(Some(FlashSpec {
            placement,
            erase_unit_bytes: self.erase_unit,
            over_provisioning: self.over_provisioning,
            trim: !self.no_trim,
            write_buffer_units: self.write_buffer,
            pe_limit: self.pe_limit,
        }))
    }
}
