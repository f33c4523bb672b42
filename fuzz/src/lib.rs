//! What the fuzz targets share: every read-only query of a parsed BTF, BPF object and
//! `.BTF.ext`, the whole min-core-btf pipeline, and the fixtures the targets pair fuzzed input
//! with. Every query's result is ignored (errors are fine); only a panic, abort, hang or
//! out-of-bounds read is a finding. Properties that must hold are asserted.

use btfgen::Error;
use btfgen::btf::dump::dump;
use btfgen::btf::write::BtfWriter;
use btfgen::btf::{Btf, Entry, TypeKind, Validation};
use btfgen::object::{BpfObject, BtfExt};

/// The generator of well-formed adversarial BTF and objects (shared with `tests/structured.rs`).
#[path = "../../tests/support/adversarial.rs"]
pub mod adversarial;
/// The DWARF type-tree generator of the `dwarf_structured` target.
pub mod dwarf_gen;
/// The pipeline as `min-core-btf` drives it (shared with `tests/oom.rs`, `tests/structured.rs`).
#[path = "../../tests/support/fixtures.rs"]
pub mod fixtures;

/// A valid target BTF (the fields fixture's).
pub const FIELDS_BTF: &[u8] = include_bytes!("../../tests/data/targets/btf__fields.btf");
/// The guards fixture's target: every field, type and enumerator `guards.bpf.o` guards is
/// missing, so its poisons are there to be judged.
pub const GUARDS_BTF: &[u8] = include_bytes!("../../tests/data/targets/btf__guards.btf");
/// A valid object with relocations of every field kind.
pub const FIELDS_OBJ: &[u8] = include_bytes!("../../tests/data/progs/fields.bpf.o");
/// Type relocations (type_exists, type_matches, ...).
pub const TYPES_OBJ: &[u8] = include_bytes!("../../tests/data/progs/types.bpf.o");
/// Enum relocations.
pub const ENUMS_OBJ: &[u8] = include_bytes!("../../tests/data/progs/enums.bpf.o");
/// The base of the split-BTF fixture.
pub const BASE_BTF: &[u8] = include_bytes!("../../tests/data/targets/base.btf");
/// Split BTF on [`BASE_BTF`].
pub const MODULE_BTF: &[u8] = include_bytes!("../../tests/data/targets/module.btf");
/// A small kernel's BTF, as pahole writes it from `tests/data/dwarf/kbase.c`: the base of the
/// debug module fixtures (`kmod-*-rel.ko`).
pub const KBASE_BTF: &[u8] = include_bytes!("../../tests/data/dwarf/kbase-gcc-dwarf5.pahole.btf");

/// Every query on every type, plus the bpftool-style dump. A type of a kind btfgen does not
/// know (skipped by the layout section) must never decode, nor be named as a known kind.
pub fn exercise_btf(btf: &Btf<'_>) {
    let count = btf.type_cnt();
    for (id, entry) in (btf.start_id()..).zip(btf.entries()) {
        if let Ok(Entry::Unknown(unknown)) = entry {
            assert_eq!(unknown.id, id, "entries are in id order");
            assert!(btf.is_unknown_kind(id), "type {id} is of an unknown kind");
            assert!(
                btf.type_by_id(id).is_err(),
                "type {id} of an unknown kind decodes"
            );
            assert_eq!(btf.name_off_and_kind(id).map(|k| k.1), Ok(None));
        }
    }
    for id in 0..count.saturating_add(2) {
        let _ = btf.is_unknown_kind(id);
        let _ = btf.skip_mods_and_typedefs(id);
        let _ = btf.skip_mods(id);
        let _ = btf.resolve_size(id);
        let _ = btf.name_off_and_kind(id);
        let Ok(ty) = btf.type_by_id(id) else { continue };
        let _ = btf.type_name(&ty);
        let _ = btf.string_tail(ty.name_off);
        let _ = ty.size();
        for r in ty.referenced_ids() {
            let _ = btf.type_by_id(r);
        }
        let mut names = Vec::new();
        match &ty.kind {
            TypeKind::Struct(c) | TypeKind::Union(c) => {
                names.extend(c.members().map(|m| m.name_off))
            }
            TypeKind::Enum(e) | TypeKind::Enum64(e) => {
                names.extend(e.values().map(|v| v.name_off));
                let _ = e.values().map(|v| v.signed_value()).count();
            }
            TypeKind::FuncProto(p) => names.extend(p.params().map(|p| p.name_off)),
            TypeKind::Datasec(d) => {
                let _ = d.vars().count();
            }
            _ => {}
        }
        for off in names {
            let _ = btf.name(off);
        }
    }
    if let Ok(mut filter) = btfgen::btf::NameFilter::new() {
        let kinds = btfgen::btf::KindSet::EMPTY.with(btfgen::btf::Kind::Struct);
        filter.add(b"task_struct", kinds);
        filter.add(b"a", kinds);
        let _ = btf.filtered(&filter);
    }
    let _ = btf.long_type_id();
    let _ = btf.pointer_size();
    let mut out = String::new();
    let _ = dump(btf, &mut out);
}

/// A fully validated base BTF must survive being copied type by type with `BtfWriter` and
/// parsed again, with as many types.
pub fn check_round_trip(btf: &Btf<'_>) {
    if btf.base().is_some() {
        return;
    }
    // Types of kinds btfgen does not know cannot be copied, and ids would shift without them.
    if btf.entries().any(|e| matches!(e, Ok(Entry::Unknown(_)))) {
        return;
    }
    let mut w = BtfWriter::new(btf.endian()).unwrap();
    for ty in btf.types() {
        let ty = ty.expect("type of a validated BTF decodes");
        match w.copy_type(btf, &ty, Ok, |_| true) {
            Ok(_) => {}
            Err(Error::Limit { .. }) => return,
            Err(e) => panic!("copying validated type [{}] failed: {e}", ty.id),
        }
    }
    let bytes = w.finish().unwrap();
    let again = Btf::parse(&bytes).unwrap_or_else(|e| panic!("copied BTF does not parse: {e}"));
    assert_eq!(again.type_cnt(), btf.type_cnt());
}

/// Parse `data` with either validation, exercise it, and round-trip it when fully validated.
pub fn fuzz_btf(data: &[u8], validation: Validation) {
    if let Ok(btf) = Btf::parse_with(data, None, validation) {
        exercise_btf(&btf);
        if validation == Validation::Full {
            check_round_trip(&btf);
        }
    }
}

/// An ELF file through the DWARF reader: `has_dwarf_without_btf`, then `to_btf`, whose
/// output (when it converts) must parse, and is exercised and round-tripped like any BTF.
/// Errors are fine; a panic, or output that does not parse, is a finding, and so is a
/// conversion whose type DIEs, numbered by a first pass of their own, give other bytes, or
/// an error where the other gives none.
pub fn fuzz_dwarf(data: &[u8]) {
    let _ = btfgen::dwarf::has_dwarf_without_btf(data);
    let converted = btfgen::dwarf::to_btf(data, None);
    let numbered_first = btfgen::dwarf::Options {
        one_pass: false,
        ..btfgen::dwarf::Options::default()
    };
    match (
        &converted,
        &btfgen::dwarf::to_btf_with(data, None, &numbered_first),
    ) {
        (Ok(a), Ok(b)) => assert!(a == b, "numbered in one pass: other bytes than in two"),
        (Err(_), Err(_)) => {}
        (a, b) => panic!("numbered in one pass: {a:?}; in two: {b:?}"),
    }
    // Without functions (a conversion for relocating) it reads less, so it converts whatever
    // the whole conversion does.
    let types_only = btfgen::dwarf::Options {
        functions: false,
        ..btfgen::dwarf::Options::default()
    };
    let without_functions = btfgen::dwarf::to_btf_with(data, None, &types_only);
    let Ok(btf) = converted else {
        return;
    };
    let parsed = Btf::parse(&btf).unwrap_or_else(|e| panic!("to_btf's output does not parse: {e}"));
    exercise_btf(&parsed);
    check_round_trip(&parsed);
    let types = without_functions
        .unwrap_or_else(|e| panic!("converts with functions, not without them: {e}"));
    let parsed = Btf::parse(&types)
        .unwrap_or_else(|e| panic!("the output without functions does not parse: {e}"));
    exercise_btf(&parsed);
}

/// A `dwz -m` input and its supplementary file, split where the first 4 bytes (u32 LE) say:
/// what each names and is (`supplementary::link`, `identity`), then `to_btf` of the pair, whose
/// output must parse and is exercised like [`fuzz_dwarf`]'s.
pub fn fuzz_dwarf_sup(data: &[u8]) {
    let Some((len, rest)) = data.split_first_chunk::<4>() else {
        return;
    };
    let len = (u32::from_le_bytes(*len) as usize).min(rest.len());
    let (main, sup) = rest.split_at(len);
    let _ = btfgen::dwarf::supplementary::link(main);
    let _ = btfgen::dwarf::supplementary::identity(sup);
    let Ok(btf) = btfgen::dwarf::to_btf(main, Some(sup)) else {
        return;
    };
    let parsed = Btf::parse(&btf).unwrap_or_else(|e| panic!("to_btf's output does not parse: {e}"));
    exercise_btf(&parsed);
    check_round_trip(&parsed);
}

/// Every record of every sub-section.
pub fn exercise_btf_ext(ext: &BtfExt<'_>) {
    let _ = ext.raw().len();
    for s in ext.func_info().sections() {
        let _ = (s.len(), s.get(0), s.get(s.len()), s.record_offset(s.len()));
        let _ = s.records().fold(0u32, |acc, r| acc ^ r.type_id);
        let _ = s.indexed().count();
    }
    for s in ext.line_info().sections() {
        let _ = s.records().map(|r| r.line_col).max();
    }
    for s in ext.core_relos().sections() {
        let _ = s.records().map(|r| r.kind ^ r.access_str_off).max();
        let _ = s.get(usize::MAX);
    }
}

/// Every accessor of an object, its `.BTF` and `.BTF.ext`.
pub fn exercise_object(obj: &BpfObject<'_>) {
    for section in obj.sections() {
        let _ = obj.relocations(section.index);
        let n = section.insn_count();
        for i in [0, n.saturating_sub(1), n, usize::MAX] {
            let _ = section.insn(i);
        }
        let _ = obj.section_by_name(section.name);
        let _ = obj.section_by_index(section.index);
        for off in [0, 8, u32::MAX] {
            let _ = obj.program_at(section.name, off);
            let _ = obj.program_in(section.index, off);
        }
    }
    for p in obj.programs() {
        let _ = obj.program_in(p.section_index, p.offset);
        let _ = p.contains(p.offset.wrapping_add(p.size));
    }
    let _ = obj.relocations(usize::MAX);
    if let Some(ext) = obj.btf_ext() {
        exercise_btf_ext(ext);
    }
    let Some(bytes) = obj.btf_bytes() else { return };
    let Ok(local) = Btf::parse(bytes) else { return };
    exercise_btf(&local);
    for s in obj.core_relo_sections(&local).flatten() {
        let _ = s.section.map(|s| s.insn_count());
        let _ = s.records.records().count();
    }
    if let Some(ext) = obj.btf_ext() {
        let _ = obj.ext_sections(ext.func_info(), &local).count();
        let _ = obj.ext_sections(ext.line_info(), &local).count();
    }
}

/// The verdicts of the object in `data`, relocated against `target`, counted (`entry_verdicts`,
/// the summary lines' path) and judged in full (`entry_programs`, the report's) must agree
/// ([`fixtures::judge_both_ways`] panics where they differ).
pub fn check_verdict_paths(target: &[u8], data: &[u8]) {
    use btfgen::core::relocate::relocate_object;
    use btfgen::core::{CandidateIndex, Targets};
    let Ok(main) = Btf::parse(target) else { return };
    let Ok(obj) = BpfObject::parse(data) else { return };
    let Some(Ok(local)) = obj.btf_bytes().map(Btf::parse) else { return };
    let targets = Targets::new(&main);
    let mut index = CandidateIndex::new();
    let mut sink = btfgen::log::LibbpfLog;
    if let Ok(relocated) = relocate_object(&obj, &local, &targets, &mut index, &mut sink) {
        let _ = fixtures::judge_both_ways(&obj, &local, &relocated, "fuzzed object");
    }
}
