//! Helpers shared by the trace crate's integration tests.

use std::path::{Path, PathBuf};

/// The real CloudPhysics sample trace, when `shared/` is beside the clone;
/// `None` (and a message saying the test is skipped) otherwise.
pub fn sample() -> Option<PathBuf> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data/cloudPhysicsIO.vscsi");
    if path.exists() {
        Some(path)
    } else {
        eprintln!("skipped: sample trace {} not found", path.display());
        None
    }
}
