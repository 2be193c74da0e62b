//! `cloudcache check FLASH [--repair] [--json]` end to end, on store files
//! damaged on purpose.

mod common;

use std::os::unix::fs::FileExt;
use std::path::Path;

use cloudcache_server::store::layout::SUPERBLOCK_BYTES;
use cloudcache_server::store::FlashStore;
use common::*;

/// A cleanly closed 2 MiB store with one clean and one dirty block of `vm-a`.
fn make_store(path: &Path) {
    let (store, _) = FlashStore::open_or_create(path, 2 << 20, 4096).unwrap();
    let (id, _) = store.register_volume("vm-a", 1 << 20).unwrap();
    store.write(0, id, 0, &[1u8; 4096], false).unwrap();
    store.write(1, id, 1, &[2u8; 4096], true).unwrap();
    store.close_clean().unwrap();
}

fn flip(path: &Path, offset: u64) {
    let file = std::fs::OpenOptions::new().read(true).write(true).open(path).unwrap();
    let mut byte = [0u8];
    file.read_exact_at(&mut byte, offset).unwrap();
    file.write_all_at(&[byte[0] ^ 0x20], offset).unwrap();
}

#[test]
fn a_clean_store_checks_clean_in_text_and_json() {
    let dir = temp_dir("check-clean");
    let flash = dir.join("flash.img");
    make_store(&flash);
    let out = cloudcache(&["check", flash.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.contains("superblock 1 at 65536: ok, generation 3, open or crashed"), "{text}");
    assert!(
        text.contains("superblock 0 at 0: ok, generation 4, closed cleanly, 1 volume(s) (used)"),
        "{text}"
    );
    assert!(text.contains("volume vm-a (id 0, 1048576 bytes): 1 clean, 1 dirty (0 torn)"), "{text}");
    assert!(text.trim_end().ends_with("clean"), "{text}");

    let out = cloudcache(&["check", flash.to_str().unwrap(), "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let doc: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(doc["clean"], true);
    assert_eq!(doc["superblock_used"], 0);
    assert_eq!(doc["geometry"]["block_size"], 4096);
    assert_eq!(doc["slots"]["clean"], 1);
    assert_eq!(doc["slots"]["dirty"], 1);
    assert_eq!(doc["volumes"][0]["name"], "vm-a");
    assert_eq!(doc["problems"].as_array().unwrap().len(), 0);
}

#[test]
fn a_damaged_superblock_fails_the_check_until_repaired() {
    let dir = temp_dir("check-repair");
    let flash = dir.join("flash.img");
    make_store(&flash);
    // Copy 1 holds the older generation.
    flip(&flash, SUPERBLOCK_BYTES + 1000);
    let out = cloudcache(&["check", flash.to_str().unwrap()]);
    assert!(!out.status.success());
    let text = stdout(&out);
    assert!(text.contains("superblock 1 at 65536: BAD: checksum mismatch"), "{text}");
    assert!(text.contains("PROBLEM (repairable): superblock copy 1 (offset 65536) is damaged"), "{text}");
    let err = stderr(&out);
    assert!(err.contains("1 problem(s) found, 1 repairable: run `cloudcache check --repair "), "{err}");
    assert!(err.contains("flash.img"), "{err}");

    let out = cloudcache(&["check", "--repair", flash.to_str().unwrap(), "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let doc: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(doc["problems"][0]["repaired"], true);
    assert!(doc["repairs"][0].as_str().unwrap().contains("rewrote superblock copy 1"), "{doc}");

    let out = cloudcache(&["check", flash.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("superblock 1 at 65536: ok, generation 3"), "{}", stdout(&out));
}

#[test]
fn a_store_beyond_repair_fails_with_a_clear_message() {
    let dir = temp_dir("check-ruined");
    let flash = dir.join("flash.img");
    make_store(&flash);
    flip(&flash, 1000);
    flip(&flash, SUPERBLOCK_BYTES + 1000);
    for args in [vec!["check"], vec!["check", "--repair"]] {
        let mut all = args.clone();
        all.push(flash.to_str().unwrap());
        let out = cloudcache(&all);
        assert!(!out.status.success(), "{args:?}");
        let text = stdout(&out);
        assert!(text.contains("PROBLEM (cannot be repaired): neither superblock copy is valid"), "{text}");
        assert!(text.contains("remove the file"), "{text}");
        assert!(text.trim_end().ends_with("NOT clean"), "{text}");
    }
    let out = cloudcache(&["check", "--repair", flash.to_str().unwrap()]);
    assert!(stderr(&out).contains("1 problem(s) that cannot be repaired"), "{}", stderr(&out));
}

#[test]
fn a_missing_store_is_an_error_naming_it() {
    let dir = temp_dir("check-missing");
    let flash = dir.join("nope.img");
    let out = cloudcache(&["check", flash.to_str().unwrap()]);
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(err.contains("nope.img") && err.contains("No such file"), "{err}");
    assert!(!err.contains("panicked"), "{err}");
}
