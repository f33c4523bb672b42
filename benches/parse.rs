//! Parse-and-validate throughput on the running kernel's BTF (`/sys/kernel/btf/vmlinux`, about
//! 5 MiB). Skipped with a message when that file is absent; no copy is committed.
//!
//! Run with `cargo bench --bench parse`. Compare with
//! `time bpftool btf dump file /sys/kernel/btf/vmlinux format raw > /dev/null`.

use btfgen::btf::Btf;
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use std::hint::black_box;

const VMLINUX: &str = "/sys/kernel/btf/vmlinux";

fn parse_vmlinux(c: &mut Criterion) {
    let data = match std::fs::read(VMLINUX) {
        Ok(data) => data,
        Err(e) => {
            eprintln!("SKIP parse benchmark: cannot read {VMLINUX}: {e}");
            return;
        }
    };
    let mut group = c.benchmark_group("btf");
    group.throughput(Throughput::Bytes(data.len() as u64));
    group.sample_size(20);
    group.measurement_time(std::time::Duration::from_secs(10));
    group.bench_function("parse_vmlinux", |b| {
        b.iter(|| {
            let btf = Btf::parse(black_box(&data)).expect("vmlinux BTF parses");
            black_box(btf.type_cnt())
        })
    });
    // Parsing plus decoding every type once: what a full walk over the kernel BTF costs.
    group.bench_function("parse_and_decode_all", |b| {
        b.iter(|| {
            let btf = Btf::parse(black_box(&data)).expect("vmlinux BTF parses");
            let mut named = 0u32;
            for ty in btf.types() {
                let ty = ty.expect("type decodes");
                named += u32::from(ty.name_off != 0);
            }
            black_box(named)
        })
    });
    group.finish();
}

criterion_group!(benches, parse_vmlinux);
criterion_main!(benches);
