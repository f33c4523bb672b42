//! The pipeline's stages after parsing, against the running kernel's BTF
//! (`/sys/kernel/btf/vmlinux`; skipped with a message when absent, no copy is committed):
//!
//! - `candidates/index_*`: building the candidate index (one scan of the kernel BTF) for the
//!   essential names one object's relocations ask for (`task.bpf.o`), or all fixture objects'.
//! - `relocate/task_*`: relocating `task.bpf.o` (16 CO-RE relocations), with a fresh candidate
//!   index (`cold`: includes the scan) and with one already built (`warm`: matching only).
//! - `minimize/*`: what `btfgen min-core-btf` computes once its files are read: relocating,
//!   marking and emitting the minimized BTF, for `task.bpf.o` and for every fixture object that
//!   relocates against the kernel without error, on the already parsed kernel BTF; and
//!   `end_to_end_*` the same plus parsing the kernel BTF (what `btfgen batch` does per kernel
//!   once the bytes are in memory).
//! - `verdict/entry_programs_all_objects`: the load verdicts of every entry program of those
//!   objects (`core::verdict::entry_programs`), from their already relocated sections.
//!
//! The kernel BTF is parsed as the CLI parses targets (`Validation::OnUse`: layout checked up
//! front, each type when it is read). Parsing alone, fully validated, is `benches/parse.rs`. Run with `cargo bench --bench pipeline` (one group:
//! `cargo bench --bench pipeline -- minimize`). Objects are parsed once, outside the timing.

use btfgen::btf::{Btf, Kind, Validation};
use btfgen::core::relocate::{local_type_names, relocate_object};
use btfgen::core::verdict::entry_programs;
use btfgen::core::{CandidateIndex, Targets};
use btfgen::log::LibbpfLog;
use btfgen::minimize::RelocInfo;
use btfgen::object::BpfObject;
use criterion::{Criterion, criterion_group, criterion_main};
use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::time::Duration;

const VMLINUX: &str = "/sys/kernel/btf/vmlinux";
const TASK: &str = "task.bpf.o";

fn progs() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/progs")
}

/// The bytes of every fixture object (`tests/data/progs/*.o`), sorted by name.
fn object_files() -> Vec<(String, Vec<u8>)> {
    let mut files: Vec<(String, Vec<u8>)> = std::fs::read_dir(progs())
        .expect("tests/data/progs")
        .map(|e| e.expect("directory entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "o"))
        .map(|p| {
            (
                p.file_name().unwrap().to_string_lossy().into_owned(),
                std::fs::read(&p).expect("fixture object"),
            )
        })
        .collect();
    files.sort();
    files
}

struct Local<'a> {
    name: &'a str,
    object: BpfObject<'a>,
    btf: Btf<'a>,
}

fn parse_object<'a>(name: &'a str, data: &'a [u8]) -> Local<'a> {
    let object = BpfObject::parse(data).expect("fixture object parses");
    let btf =
        Btf::parse(object.btf_bytes().expect("fixture object has .BTF")).expect(".BTF parses");
    Local { name, object, btf }
}

/// The essential names `objects`' relocations look up (what `relocate_object` indexes).
fn wanted_names<'a>(objects: &'a [&Local<'a>]) -> Vec<(&'a str, Kind)> {
    let mut names = Vec::new();
    for o in objects {
        names.extend(local_type_names(&o.object, &o.btf).expect("local type names"));
    }
    names
}

/// The kernel BTF, parsed as `btfgen min-core-btf` and `btfgen batch` parse their targets.
fn parse_kernel(data: &[u8]) -> Btf<'_> {
    Btf::parse_with(data, None, Validation::OnUse).expect("vmlinux BTF parses")
}

fn minimize(targets: &Targets<'_>, objects: &[&Local<'_>]) -> usize {
    let mut info = RelocInfo::new(targets.clone());
    for o in objects {
        info.add_object(o.name, &o.object, &o.btf)
            .expect("relocates");
    }
    info.to_btf().expect("emits").bytes.len()
}

fn pipeline(c: &mut Criterion) {
    let kernel = match std::fs::read(VMLINUX) {
        Ok(data) => data,
        Err(e) => {
            eprintln!("SKIP pipeline benchmarks: cannot read {VMLINUX}: {e}");
            return;
        }
    };
    let btf = parse_kernel(&kernel);
    let targets = Targets::new(&btf);
    let files = object_files();
    let parsed: Vec<Local<'_>> = files
        .iter()
        .map(|(name, data)| parse_object(name, data))
        .collect();
    let task = parsed
        .iter()
        .find(|o| o.name == TASK)
        .expect("task.bpf.o fixture");
    // Every object that relocates against this kernel without error (a relocation libbpf would
    // fail fails the object, as in min-core-btf).
    let all: Vec<&Local<'_>> = parsed
        .iter()
        .filter(|o| {
            RelocInfo::new(targets.clone())
                .add_object(o.name, &o.object, &o.btf)
                .is_ok()
        })
        .collect();
    eprintln!(
        "pipeline: {} types in {VMLINUX}; {} of {} fixture objects relocate against it",
        btf.type_cnt() - 1,
        all.len(),
        parsed.len()
    );

    let mut group = c.benchmark_group("candidates");
    group
        .sample_size(30)
        .measurement_time(Duration::from_secs(5));
    for (label, objects) in [
        ("index_task", vec![task]),
        ("index_all_objects", all.clone()),
    ] {
        let names = wanted_names(&objects);
        group.bench_function(label, |b| {
            b.iter(|| {
                let mut index = CandidateIndex::new();
                index
                    .ensure(&targets, names.iter().copied())
                    .expect("index builds");
                black_box(index)
            })
        });
    }
    group.finish();

    let mut group = c.benchmark_group("relocate");
    group
        .sample_size(30)
        .measurement_time(Duration::from_secs(5));
    group.bench_function("task_cold_index", |b| {
        b.iter(|| {
            let mut index = CandidateIndex::new();
            let r = relocate_object(
                &task.object,
                &task.btf,
                &targets,
                &mut index,
                &mut LibbpfLog,
            )
            .expect("relocates");
            black_box(r.relocations.len())
        })
    });
    let mut warm = CandidateIndex::new();
    relocate_object(&task.object, &task.btf, &targets, &mut warm, &mut LibbpfLog)
        .expect("relocates");
    group.bench_function("task_warm_index", |b| {
        b.iter(|| {
            let r = relocate_object(&task.object, &task.btf, &targets, &mut warm, &mut LibbpfLog)
                .expect("relocates");
            black_box(r.relocations.len())
        })
    });
    group.finish();

    let mut group = c.benchmark_group("minimize");
    group
        .sample_size(20)
        .measurement_time(Duration::from_secs(8));
    group.bench_function("task", |b| {
        b.iter(|| black_box(minimize(&targets, &[task])))
    });
    group.bench_function("all_objects", |b| {
        b.iter(|| black_box(minimize(&targets, &all)))
    });
    // Per kernel in `btfgen batch`: parse the kernel's bytes, then the above.
    for (label, objects) in [
        ("end_to_end_task", vec![task]),
        ("end_to_end_all_objects", all.clone()),
    ] {
        group.bench_function(label, |b| {
            b.iter(|| {
                let btf = parse_kernel(black_box(&kernel));
                black_box(minimize(&Targets::new(&btf), &objects))
            })
        });
    }
    group.finish();

    // The load verdicts (`core::verdict`): every entry program of the objects assembled from
    // their relocated sections and explored, after relocation (outside the timing); what the
    // report and the summary line add per kernel.
    let relocated: Vec<_> = all
        .iter()
        .map(|o| {
            let mut index = CandidateIndex::new();
            relocate_object(&o.object, &o.btf, &targets, &mut index, &mut LibbpfLog)
                .expect("relocates")
        })
        .collect();
    let mut group = c.benchmark_group("verdict");
    group
        .sample_size(30)
        .measurement_time(Duration::from_secs(5));
    group.bench_function("entry_programs_all_objects", |b| {
        b.iter(|| {
            let programs: usize = all
                .iter()
                .zip(&relocated)
                .map(|(o, r)| {
                    entry_programs(&o.object, &o.btf, r)
                        .expect("verdicts")
                        .len()
                })
                .sum();
            black_box(programs)
        })
    });
    group.finish();
}

criterion_group!(benches, pipeline);
criterion_main!(benches);
