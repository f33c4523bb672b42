//! Runtime selection from a 56-kernel archive made by `btfgen batch --dedup --archive`: the
//! time of one selection (read the archive's index, choose, copy out the member: what a
//! program does at start-up, `btfgen_select_mem`) and its peak heap, counted by a global
//! allocator, against the archive's index (the kernels' paths) and the member.
//!
//!     cargo bench --bench select
//!
//! The tree is built from the fixture kernels (BTFHub layout, 56 kernels over 7 distribution
//! folders), minimized for `tests/data/progs/fields.bpf.o`; the kernel selected is the
//! archive's last, so the whole stream is read in both passes.

#[path = "support/counting.rs"]
mod counting;

use btfgen::select::archive::Catalogue;
use btfgen::select::os_release::OsRelease;
use btfgen::select::{MatchKind, Request, choose};
use counting::counted;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

const ROUNDS: usize = 101;

fn data(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(rel)
}

/// 56 kernels: 8 per folder, two fixture kernels alternating (so outputs are shared).
fn build_archive(dir: &Path) -> Vec<u8> {
    let folders = [
        ("ubuntu/20.04/x86_64", "5.4.0-{}-generic"),
        ("ubuntu/22.04/x86_64", "5.15.0-{}-generic"),
        ("ubuntu/20.04/arm64", "5.4.0-{}-generic"),
        ("centos/8/x86_64", "4.18.0-{}.el8.x86_64"),
        ("rhel/8/x86_64", "4.18.0-{}.1.el8.x86_64"),
        ("amzn/2/x86_64", "4.14.{}-195.483.amzn2.x86_64"),
        ("sles/15.3/x86_64", "5.3.18-{}-default"),
    ];
    let tree = dir.join("tree");
    for (folder, pattern) in folders {
        for i in 0..8 {
            let path = tree.join(folder).join(format!(
                "{}.btf",
                pattern.replace("{}", &(100 + i).to_string())
            ));
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            let fixture = if i % 2 == 0 { "fields" } else { "fields_flat" };
            std::fs::copy(data(&format!("targets/btf__{fixture}.btf")), &path).unwrap();
        }
    }
    let archive = dir.join("min-btfs.tar.xz");
    let status = Command::new(env!("CARGO_BIN_EXE_btfgen"))
        .args(["batch", "-q", "--dedup", "--btf-dir"])
        .arg(&tree)
        .arg("--out-dir")
        .arg(dir.join("out"))
        .arg("--archive")
        .arg(&archive)
        .arg(data("progs/fields.bpf.o"))
        .status()
        .unwrap();
    assert!(status.success());
    std::fs::read(&archive).unwrap()
}

fn main() {
    let dir = std::env::temp_dir().join(format!("btfgen-bench-select-{}", std::process::id()));
    let archive = build_archive(&dir);
    let os = OsRelease::parse(b"ID=\"sles\"\nVERSION_ID=\"15.3\"\n").unwrap();
    let request = Request {
        os_release: Some(&os),
        release: "5.3.18-107-default",
        machine: "x86_64",
        native: false,
        series: false,
    };
    let select = || {
        let catalogue = Catalogue::read(&archive).unwrap();
        let selection = choose(&catalogue, &request).unwrap();
        assert_eq!(selection.kind, MatchKind::Exact);
        let entry = &catalogue.entries[selection.entry.unwrap()];
        Catalogue::extract(&archive, entry).unwrap().len()
    };
    let mut times: Vec<f64> = (0..ROUNDS)
        .map(|_| {
            let start = Instant::now();
            std::hint::black_box(select());
            start.elapsed().as_secs_f64() * 1e3
        })
        .collect();
    times.sort_by(f64::total_cmp);
    let (peak, total, count, member) = counted(select);
    let catalogue = Catalogue::read(&archive).unwrap();
    let index: usize = catalogue
        .entries
        .iter()
        .map(|e| e.path.len() + e.content.len() + std::mem::size_of_val(e))
        .sum();
    println!(
        "select from {} kernels ({} bytes .tar.xz): median {:.3} ms, min {:.3} ms, max {:.3} ms \
         over {ROUNDS} rounds",
        catalogue.entries.len(),
        archive.len(),
        times[ROUNDS / 2],
        times[0],
        times[ROUNDS - 1],
    );
    println!(
        "peak heap {peak} bytes ({count} allocations, {total} bytes in all); index {index} bytes, \
         member {member} bytes"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
