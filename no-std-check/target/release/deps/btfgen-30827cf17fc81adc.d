/work/main/no-std-check/target/release/deps/btfgen-30827cf17fc81adc.d: /work/main/src/lib.rs /work/main/src/btf/mod.rs /work/main/src/btf/dump.rs /work/main/src/btf/filter.rs /work/main/src/btf/index.rs /work/main/src/btf/kind.rs /work/main/src/btf/layout.rs /work/main/src/btf/parse.rs /work/main/src/btf/types.rs /work/main/src/btf/validate.rs /work/main/src/btf/write.rs /work/main/src/budget.rs /work/main/src/core/mod.rs /work/main/src/core/calc.rs /work/main/src/core/candidates.rs /work/main/src/core/events.rs /work/main/src/core/kernel.rs /work/main/src/core/matching.rs /work/main/src/core/patch.rs /work/main/src/core/programs.rs /work/main/src/core/relocate.rs /work/main/src/core/spec.rs /work/main/src/core/verdict/mod.rs /work/main/src/core/verdict/describe.rs /work/main/src/core/verdict/interp.rs /work/main/src/core/verdict/interp/state.rs /work/main/src/core/verdict/relevance.rs /work/main/src/core/verdict/solver.rs /work/main/src/dwarf/mod.rs /work/main/src/dwarf/convert.rs /work/main/src/dwarf/convert/records.rs /work/main/src/dwarf/convert/walk.rs /work/main/src/dwarf/dedup.rs /work/main/src/dwarf/sections.rs /work/main/src/dwarf/supplementary.rs /work/main/src/elf.rs /work/main/src/error.rs /work/main/src/fallible.rs /work/main/src/log.rs /work/main/src/minimize/mod.rs /work/main/src/minimize/emit.rs /work/main/src/minimize/marks.rs /work/main/src/object/mod.rs /work/main/src/object/assemble.rs /work/main/src/object/btf_ext.rs /work/main/src/object/insn.rs /work/main/src/object/loadable_btf.rs /work/main/src/select/mod.rs /work/main/src/select/archive.rs /work/main/src/select/identity.rs /work/main/src/select/os_release.rs

/work/main/no-std-check/target/release/deps/libbtfgen-30827cf17fc81adc.rlib: /work/main/src/lib.rs /work/main/src/btf/mod.rs /work/main/src/btf/dump.rs /work/main/src/btf/filter.rs /work/main/src/btf/index.rs /work/main/src/btf/kind.rs /work/main/src/btf/layout.rs /work/main/src/btf/parse.rs /work/main/src/btf/types.rs /work/main/src/btf/validate.rs /work/main/src/btf/write.rs /work/main/src/budget.rs /work/main/src/core/mod.rs /work/main/src/core/calc.rs /work/main/src/core/candidates.rs /work/main/src/core/events.rs /work/main/src/core/kernel.rs /work/main/src/core/matching.rs /work/main/src/core/patch.rs /work/main/src/core/programs.rs /work/main/src/core/relocate.rs /work/main/src/core/spec.rs /work/main/src/core/verdict/mod.rs /work/main/src/core/verdict/describe.rs /work/main/src/core/verdict/interp.rs /work/main/src/core/verdict/interp/state.rs /work/main/src/core/verdict/relevance.rs /work/main/src/core/verdict/solver.rs /work/main/src/dwarf/mod.rs /work/main/src/dwarf/convert.rs /work/main/src/dwarf/convert/records.rs /work/main/src/dwarf/convert/walk.rs /work/main/src/dwarf/dedup.rs /work/main/src/dwarf/sections.rs /work/main/src/dwarf/supplementary.rs /work/main/src/elf.rs /work/main/src/error.rs /work/main/src/fallible.rs /work/main/src/log.rs /work/main/src/minimize/mod.rs /work/main/src/minimize/emit.rs /work/main/src/minimize/marks.rs /work/main/src/object/mod.rs /work/main/src/object/assemble.rs /work/main/src/object/btf_ext.rs /work/main/src/object/insn.rs /work/main/src/object/loadable_btf.rs /work/main/src/select/mod.rs /work/main/src/select/archive.rs /work/main/src/select/identity.rs /work/main/src/select/os_release.rs

/work/main/no-std-check/target/release/deps/libbtfgen-30827cf17fc81adc.rmeta: /work/main/src/lib.rs /work/main/src/btf/mod.rs /work/main/src/btf/dump.rs /work/main/src/btf/filter.rs /work/main/src/btf/index.rs /work/main/src/btf/kind.rs /work/main/src/btf/layout.rs /work/main/src/btf/parse.rs /work/main/src/btf/types.rs /work/main/src/btf/validate.rs /work/main/src/btf/write.rs /work/main/src/budget.rs /work/main/src/core/mod.rs /work/main/src/core/calc.rs /work/main/src/core/candidates.rs /work/main/src/core/events.rs /work/main/src/core/kernel.rs /work/main/src/core/matching.rs /work/main/src/core/patch.rs /work/main/src/core/programs.rs /work/main/src/core/relocate.rs /work/main/src/core/spec.rs /work/main/src/core/verdict/mod.rs /work/main/src/core/verdict/describe.rs /work/main/src/core/verdict/interp.rs /work/main/src/core/verdict/interp/state.rs /work/main/src/core/verdict/relevance.rs /work/main/src/core/verdict/solver.rs /work/main/src/dwarf/mod.rs /work/main/src/dwarf/convert.rs /work/main/src/dwarf/convert/records.rs /work/main/src/dwarf/convert/walk.rs /work/main/src/dwarf/dedup.rs /work/main/src/dwarf/sections.rs /work/main/src/dwarf/supplementary.rs /work/main/src/elf.rs /work/main/src/error.rs /work/main/src/fallible.rs /work/main/src/log.rs /work/main/src/minimize/mod.rs /work/main/src/minimize/emit.rs /work/main/src/minimize/marks.rs /work/main/src/object/mod.rs /work/main/src/object/assemble.rs /work/main/src/object/btf_ext.rs /work/main/src/object/insn.rs /work/main/src/object/loadable_btf.rs /work/main/src/select/mod.rs /work/main/src/select/archive.rs /work/main/src/select/identity.rs /work/main/src/select/os_release.rs

/work/main/src/lib.rs:
/work/main/src/btf/mod.rs:
/work/main/src/btf/dump.rs:
/work/main/src/btf/filter.rs:
/work/main/src/btf/index.rs:
/work/main/src/btf/kind.rs:
/work/main/src/btf/layout.rs:
/work/main/src/btf/parse.rs:
/work/main/src/btf/types.rs:
/work/main/src/btf/validate.rs:
/work/main/src/btf/write.rs:
/work/main/src/budget.rs:
/work/main/src/core/mod.rs:
/work/main/src/core/calc.rs:
/work/main/src/core/candidates.rs:
/work/main/src/core/events.rs:
/work/main/src/core/kernel.rs:
/work/main/src/core/matching.rs:
/work/main/src/core/patch.rs:
/work/main/src/core/programs.rs:
/work/main/src/core/relocate.rs:
/work/main/src/core/spec.rs:
/work/main/src/core/verdict/mod.rs:
/work/main/src/core/verdict/describe.rs:
/work/main/src/core/verdict/interp.rs:
/work/main/src/core/verdict/interp/state.rs:
/work/main/src/core/verdict/relevance.rs:
/work/main/src/core/verdict/solver.rs:
/work/main/src/dwarf/mod.rs:
/work/main/src/dwarf/convert.rs:
/work/main/src/dwarf/convert/records.rs:
/work/main/src/dwarf/convert/walk.rs:
/work/main/src/dwarf/dedup.rs:
/work/main/src/dwarf/sections.rs:
/work/main/src/dwarf/supplementary.rs:
/work/main/src/elf.rs:
/work/main/src/error.rs:
/work/main/src/fallible.rs:
/work/main/src/log.rs:
/work/main/src/minimize/mod.rs:
/work/main/src/minimize/emit.rs:
/work/main/src/minimize/marks.rs:
/work/main/src/object/mod.rs:
/work/main/src/object/assemble.rs:
/work/main/src/object/btf_ext.rs:
/work/main/src/object/insn.rs:
/work/main/src/object/loadable_btf.rs:
/work/main/src/select/mod.rs:
/work/main/src/select/archive.rs:
/work/main/src/select/identity.rs:
/work/main/src/select/os_release.rs:
