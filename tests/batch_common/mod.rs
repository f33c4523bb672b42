//! Shared by the `btfgen batch` tests (`batch.rs`, and at scale `batch_scale.rs`,
//! `batch_faults.rs`): the CLI helpers of `tests/support/cli.rs`, BTFHub-style packing, and a
//! BTFHub-style tree of 60+ kernels built at test time from the fixture target BTFs, the
//! running kernel's BTF where there is one, and variants written with the crate's `BtfWriter`
//! that keep the relevant types (a copy, padding types appended) or change them (the last
//! member of every struct cut).

#![allow(dead_code)]

#[path = "../support/cli.rs"]
mod cli;

// Each test binary uses its own part of this module (as of the rest, `dead_code` above).
#[allow(unused_imports)]
pub use cli::{BIN, TempDir, btfgen, data};

use btfgen::btf::write::BtfWriter;
use btfgen::btf::{Btf, TypeKind};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The objects every kernel of the tree is minimized for (`ambiguous` and `bitfields` fail on
/// some targets: those kernels fail).
pub const OBJECTS: [&str; 7] = [
    "progs/fields.bpf.o",
    "progs/types.bpf.o",
    "progs/enums.bpf.o",
    "progs/bitfields.bpf.o",
    "progs/flavors.bpf.o",
    "progs/task.bpf.o",
    "progs/ambiguous.bpf.o",
];

/// Fixture targets the tree is built from.
const SOURCES: [&str; 12] = [
    "fields",
    "fields_flat",
    "types",
    "enums",
    "bitfields",
    "bitfields_bad",
    "flavors",
    "flavors_old",
    "example_kernel",
    "ambiguous_off",
    "ambiguous_val",
    "ambiguous_id",
];

pub fn objects() -> Vec<PathBuf> {
    OBJECTS.iter().map(|o| data(o)).collect()
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// `btfgen batch --btf-dir TREE --out-dir OUT [extra...] OBJECTS...`.
pub fn batch(tree: &Path, out: &Path, extra: &[&str]) -> Output {
    batch_with(tree, out, extra, &objects())
}

/// [`batch`] with other objects.
pub fn batch_with(tree: &Path, out: &Path, extra: &[&str], objects: &[PathBuf]) -> Output {
    let mut args: Vec<std::ffi::OsString> = vec![
        "batch".into(),
        "--btf-dir".into(),
        tree.into(),
        "--out-dir".into(),
        out.into(),
    ];
    args.extend(extra.iter().map(Into::into));
    args.extend(objects.iter().map(Into::into));
    btfgen(&args)
}

/// `DIR/NAME.btf.tar.xz` holding `bytes` as `NAME.btf`, as BTFHub packs kernels
/// (`tar -cJf NAME.btf.tar.xz NAME.btf`, xz preset `level`), with the `tar` and `liblzma` crates
/// the binary reads it with.
pub fn pack(dir: &Path, name: &str, bytes: &[u8], level: u32) -> PathBuf {
    std::fs::create_dir_all(dir).unwrap();
    let path = dir.join(format!("{name}.btf.tar.xz"));
    let xz = liblzma::write::XzEncoder::new(std::fs::File::create(&path).unwrap(), level);
    let mut tar = tar::Builder::new(xz);
    let mut header = tar::Header::new_gnu();
    header.set_size(bytes.len() as u64);
    header.set_mode(0o644);
    header.set_cksum();
    tar.append_data(&mut header, format!("{name}.btf"), bytes)
        .unwrap();
    tar.into_inner().unwrap().finish().unwrap();
    path
}

/// A copy of `src` written by `BtfWriter`: every type, struct members for which
/// `keep(member, of)` holds, then `pad` unnamed-use `int` types named `btfgen_pad_N` (ids after
/// every original type, so the relevant types keep their ids).
pub fn variant(src: &[u8], pad: usize, cut_last_member: bool) -> Vec<u8> {
    let btf = Btf::parse(src).unwrap();
    let mut w = BtfWriter::new(btf.endian()).unwrap();
    for ty in btf.types() {
        let ty = ty.unwrap();
        let members = match &ty.kind {
            TypeKind::Struct(c) if cut_last_member && c.len() >= 2 => c.len() - 1,
            _ => usize::MAX,
        };
        w.copy_type(&btf, &ty, Ok, |i| i < members).unwrap();
    }
    for i in 0..pad {
        let id = w
            .begin_type(
                &format!("btfgen_pad_{i}"),
                btfgen::btf::Kind::Int,
                false,
                0,
                4,
            )
            .unwrap();
        assert!(id > 0);
        w.push_word(32).unwrap();
    }
    w.finish().unwrap()
}

/// One kernel of the tree.
pub struct TreeKernel {
    /// Output path relative to OUT (BTFHub layout).
    pub rel: String,
    /// The kernel's plain BTF bytes (what min-core-btf / relocate get).
    pub plain: Vec<u8>,
    /// Whether it is in the tree as `.btf.tar.xz`.
    pub packed: bool,
}

/// Build the tree under `tree`; every kernel with its plain bytes.
pub fn build_scale_tree(tree: &Path) -> Vec<TreeKernel> {
    let mut kernels = Vec::new();
    let mut add = |rel: String, plain: Vec<u8>, packed: bool| {
        let path = tree.join(&rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        if packed {
            let name = path.file_name().unwrap().to_str().unwrap();
            pack(
                path.parent().unwrap(),
                name.strip_suffix(".btf").unwrap(),
                &plain,
                1,
            );
        } else {
            std::fs::write(&path, &plain).unwrap();
        }
        kernels.push(TreeKernel { rel, plain, packed });
    };
    for (n, source) in SOURCES.iter().enumerate() {
        let original = std::fs::read(data(&format!("targets/btf__{source}.btf"))).unwrap();
        let variants: [(&str, &str, Vec<u8>); 5] = [
            ("orig", "x86_64", original.clone()),
            ("copy", "x86_64", variant(&original, 0, false)),
            ("pad1", "x86_64", variant(&original, 1, false)),
            ("pad7", "arm64", variant(&original, 7, false)),
            ("cut", "arm64", variant(&original, 0, true)),
        ];
        for (v, arch, bytes) in variants {
            add(format!("{source}/{v}/{arch}/5.{n}.0-{v}.btf"), bytes, false);
        }
        // The same kernel as BTFHub ships it.
        add(
            format!("packed-{source}/1/x86_64/5.{n}.0-packed.btf"),
            original,
            true,
        );
    }
    if let Ok(vmlinux) = std::fs::read("/sys/kernel/btf/vmlinux") {
        add("running/1/x86_64/vmlinux.btf".into(), vmlinux, false);
    } else {
        eprintln!("SKIP (part): /sys/kernel/btf/vmlinux not readable; the tree has no real kernel");
    }
    kernels
}

/// Every file (not directory) under `dir`, relative, sorted.
pub fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut dirs = vec![dir.to_path_buf()];
    while let Some(d) = dirs.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let entry = entry.unwrap();
            if entry.file_type().unwrap().is_dir() {
                dirs.push(entry.path());
            } else {
                found.push(entry.path().strip_prefix(dir).unwrap().to_path_buf());
            }
        }
    }
    found.sort();
    found
}

/// `sha256sum` of each file (coreutils, not the binary's hashing), by path.
pub fn sha256sum(paths: &[PathBuf]) -> Vec<String> {
    if paths.is_empty() {
        return Vec::new();
    }
    let out = Command::new("sha256sum").args(paths).output().unwrap();
    assert!(out.status.success());
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| l.split_whitespace().next().unwrap().to_string())
        .collect()
}

/// A copy of `src` written by `BtfWriter` without member `member` of struct `of`: a kernel whose
/// `struct of` has no such field (as `struct pt_regs` has no `di` on arm64).
pub fn without_member(src: &[u8], of: &str, member: &str) -> Vec<u8> {
    let btf = Btf::parse(src).unwrap();
    let mut w = BtfWriter::new(btf.endian()).unwrap();
    let mut removed = 0;
    for ty in btf.types() {
        let ty = ty.unwrap();
        let drop = match &ty.kind {
            TypeKind::Struct(c) if btf.name(ty.name_off).unwrap() == of => {
                (0..c.len()).find(|&i| btf.name(c.member(i).unwrap().name_off).unwrap() == member)
            }
            _ => None,
        };
        removed += usize::from(drop.is_some());
        w.copy_type(&btf, &ty, Ok, |i| Some(i) != drop).unwrap();
    }
    assert_eq!(removed, 1, "struct {of} with member {member}");
    w.finish().unwrap()
}
