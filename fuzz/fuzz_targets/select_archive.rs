//! A BTF archive (tar, tar.gz or tar.xz, told by its magic): read its index, choose for a few
//! identities (with and without `series`), and copy out what was chosen. Errors, never a panic.
#![no_main]

use btfgen::select::archive::Catalogue;
use btfgen::select::os_release::OsRelease;
use btfgen::select::{Request, choose};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(catalogue) = Catalogue::read(data) else {
        return;
    };
    let ubuntu = OsRelease::parse(b"ID=ubuntu\nVERSION_ID=\"20.04\"\nUBUNTU_CODENAME=focal\n").ok();
    let mut requests: Vec<(Option<&OsRelease>, String, &str)> = vec![
        (ubuntu.as_ref(), "5.4.0-100-generic".into(), "x86_64"),
        (None, "5.4.0-100-generic".into(), "aarch64"),
    ];
    // Each kernel's own release, as the archive names it (a few).
    for e in catalogue.entries.iter().take(4) {
        requests.push((ubuntu.as_ref(), e.release().into(), "x86_64"));
    }
    for (os, release, machine) in &requests {
        for series in [false, true] {
            let request = Request {
                os_release: *os,
                release,
                machine,
                native: false,
                series,
            };
            let Ok(selection) = choose(&catalogue, &request) else {
                continue;
            };
            if let Some(entry) = selection.entry.and_then(|i| catalogue.entries.get(i)) {
                assert!(!entry.release().is_empty());
                let _ = Catalogue::extract(data, entry);
            }
        }
    }
});
