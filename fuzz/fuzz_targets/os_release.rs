//! os-release text: parse (errors, never a panic), then the folders the identity gives for a
//! machine the first byte picks, and a choice against an empty archive.
#![no_main]

use btfgen::select::archive::Catalogue;
use btfgen::select::identity::folders;
use btfgen::select::os_release::OsRelease;
use btfgen::select::{Request, choose};
use libfuzzer_sys::fuzz_target;

const MACHINES: [&str; 4] = ["x86_64", "aarch64", "arm64", "s390x"];

fuzz_target!(|data: &[u8]| {
    let Some((&pick, text)) = data.split_first() else {
        return;
    };
    let machine = MACHINES[usize::from(pick) % MACHINES.len()];
    let Ok(os) = OsRelease::parse(text) else {
        return;
    };
    assert!(!os.id.is_empty());
    if let Ok(list) = folders(&os, machine) {
        for f in &list {
            assert!(!f.distro.is_empty() && !f.version.is_empty());
        }
    }
    let request = Request {
        os_release: Some(&os),
        release: "5.4.0-100-generic",
        machine,
        native: false,
        series: pick & 0x80 != 0,
    };
    let _ = choose(&Catalogue::default(), &request);
});
