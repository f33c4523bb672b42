//! The library's peak heap for one `btfgen min-core-btf` job, counted by a global allocator.
//!
//!     cargo bench --bench heap -- [TARGET_BTF [OBJECT...]]
//!
//! TARGET_BTF defaults to `/sys/kernel/btf/vmlinux` (skipped with a message when absent),
//! OBJECT to `tests/data/progs/task.bpf.o`. The job is the CLI's, in memory: parse the objects,
//! plan the candidate scan, parse the target with it (validated on use), index the candidates,
//! relocate, mark and emit. The target's bytes are read before counting starts: they are the
//! input (the CLI maps them), not the library's heap. Prints the peak of live heap bytes, the
//! total allocated and the number of allocations, for all the objects at once.

use btfgen::btf::{Btf, Validation};
use btfgen::core::relocate::local_type_names;
use btfgen::core::{BtfSource, CandidateIndex, Targets};
use btfgen::minimize::RelocInfo;
use btfgen::object::BpfObject;
use std::path::{Path, PathBuf};

#[path = "support/counting.rs"]
mod counting;
use counting::counted;

/// The min-core-btf job on bytes already in memory; returns the output's size.
fn min_core_btf(target: &[u8], objects: &[(String, Vec<u8>)]) -> usize {
    let parsed: Vec<(BpfObject<'_>, Btf<'_>)> = objects
        .iter()
        .map(|(name, data)| {
            let object = BpfObject::parse(data).unwrap_or_else(|e| panic!("{name}: {e}"));
            let btf = Btf::parse(object.btf_bytes().expect(".BTF section")).expect(".BTF parses");
            (object, btf)
        })
        .collect();
    let mut wanted = Vec::new();
    for (object, btf) in &parsed {
        wanted.extend(local_type_names(object, btf).expect("local type names"));
    }
    let plan = CandidateIndex::new().plan(wanted).expect("scan plan");
    let (kernel, found) = Btf::parse_filtered(target, None, Validation::OnUse, plan.filter())
        .expect("target BTF parses");
    let targets = Targets::new(&kernel);
    let mut index = CandidateIndex::new();
    index
        .absorb(&plan, &targets, &[(BtfSource::Main, &found[..])])
        .expect("candidates");
    let mut info = RelocInfo::with_index(targets.clone(), index);
    for ((name, _), (object, btf)) in objects.iter().zip(&parsed) {
        info.add_object(name, object, btf)
            .unwrap_or_else(|e| panic!("{name}: {e}"));
    }
    info.to_btf().expect("minimized BTF").bytes.len()
}

fn main() {
    // `cargo bench` passes `--bench`; anything else is ours.
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| a != "--bench")
        .collect();
    let target = args
        .first()
        .map_or_else(|| PathBuf::from("/sys/kernel/btf/vmlinux"), PathBuf::from);
    let Ok(target_bytes) = std::fs::read(&target) else {
        println!("SKIP heap: {} not readable", target.display());
        return;
    };
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut object_paths: Vec<PathBuf> = args[1.min(args.len())..]
        .iter()
        .map(PathBuf::from)
        .collect();
    if object_paths.is_empty() {
        object_paths.push(root.join("tests/data/progs/task.bpf.o"));
    }
    let objects: Vec<(String, Vec<u8>)> = object_paths
        .iter()
        .map(|p| {
            let name = p.file_name().map_or_else(
                || p.display().to_string(),
                |n| n.to_string_lossy().into_owned(),
            );
            (
                name,
                std::fs::read(p).unwrap_or_else(|e| panic!("{}: {e}", p.display())),
            )
        })
        .collect();
    let mib = |b: usize| b as f64 / (1024.0 * 1024.0);
    println!(
        "library heap, one min-core-btf job vs {} ({:.1} MiB, read beforehand, not counted):",
        target.display(),
        mib(target_bytes.len())
    );
    let label = match &objects[..] {
        [(name, _)] => name.clone(),
        all => format!("{} objects at once", all.len()),
    };
    let (peak, total, count, out) = counted(|| min_core_btf(&target_bytes, &objects));
    println!(
        "    {label:<32} peak {:>7.2} MiB  allocated {:>7.2} MiB in {count} allocations  (output {out} bytes)",
        mib(peak),
        mib(total)
    );
}
