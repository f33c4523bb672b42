//! btfgen's log: what the CO-RE relocation driver does, in libbpf's own words.
//!
//! The core reports each step of a relocation as a [`RelocEvent`] to the [`EventSink`] its
//! caller passes; [`LibbpfLog`], the sink `RelocInfo`, the C library and the CLI pass, turns
//! each into the message libbpf 1.x prints for the same event (`prog 'NAME': relo #N:
//! <byte_off> [5] struct foo.a (0:0 @ offset 0)`, candidates, `patched insn`, ambiguities,
//! failures). They are formatted here and nowhere else, so btfgen's debug log can be diffed
//! against libbpf's for the same object. (A Rust program that wants the events themselves
//! passes a sink of its own to [`relocate_object`](crate::core::relocate::relocate_object).)
//! Messages go through the [`log`] crate facade (no `std` needed), with target [`TARGET`] and
//! libbpf's levels: [`log::Level::Warn`] (`LIBBPF_WARN`: failed relocations, bad
//! input), [`log::Level::Info`] (`LIBBPF_INFO`) and [`log::Level::Debug`] (`LIBBPF_DEBUG`:
//! everything else). A Rust program receives them by installing any [`log::Log`] (a callback,
//! or a logger crate); the C library forwards them to `libbpf_set_print`'s callback, and the
//! CLI prints them with `-d`. Messages carry neither libbpf's `libbpf: ` prefix ([`PREFIX`])
//! nor a trailing newline: sinks that mimic libbpf's output add both.
//!
//! Nothing is formatted unless a logger enabled the message's level.
//!
//! A Rust program collecting the debug log with a callback of its own:
//!
//! ```
//! use btfgen::btf::Btf;
//! use btfgen::core::Targets;
//! use btfgen::minimize::RelocInfo;
//! use btfgen::object::BpfObject;
//! use std::sync::Mutex;
//!
//! static LINES: Mutex<Vec<String>> = Mutex::new(Vec::new());
//!
//! struct Collect;
//! impl log::Log for Collect {
//!     fn enabled(&self, m: &log::Metadata<'_>) -> bool {
//!         m.target() == btfgen::log::TARGET
//!     }
//!     fn log(&self, record: &log::Record<'_>) {
//!         LINES.lock().unwrap().push(record.args().to_string());
//!     }
//!     fn flush(&self) {}
//! }
//!
//! log::set_logger(&Collect).unwrap();
//! log::set_max_level(log::LevelFilter::Debug);
//!
//! let target = include_bytes!("../tests/data/targets/btf__fields.btf");
//! let object = include_bytes!("../tests/data/progs/fields.bpf.o");
//! let main = Btf::parse(target)?;
//! let obj = BpfObject::parse(object)?;
//! let local = Btf::parse(obj.btf_bytes().unwrap())?;
//! RelocInfo::new(Targets::new(&main)).add_object("fields", &obj, &local)?;
//!
//! // Exactly what libbpf 1.1 logs for this relocation (after its "libbpf: " prefix).
//! let lines = LINES.lock().unwrap();
//! assert!(lines.contains(
//!     &"prog 'fields_read': relo #0: <byte_off> [5] struct fld_sample.a (0:0 @ offset 0)".into()
//! ));
//! # Ok::<(), btfgen::Error>(())
//! ```

use crate::btf::{Btf, Kind};
use crate::core::calc::Resolution;
use crate::core::patch::{
    CLASS_ALU, CLASS_ALU64, CLASS_LD, CLASS_LDX, CLASS_ST, CLASS_STX, LD_IMM64, Patched,
};
use crate::core::{BtfSource, Candidate, EventSink, RelocEvent, RelocKind, Spec, Targets};
use crate::error::Error;
use ::log::Level;
use core::fmt;

/// The `log` target of every message.
pub const TARGET: &str = "libbpf";

/// What libbpf prefixes each message with; sinks printing libbpf-style lines add it.
pub const PREFIX: &str = "libbpf: ";

fn emit(level: Level, args: fmt::Arguments<'_>) {
    ::log::log!(target: TARGET, level, "{args}");
}

fn enabled(level: Level) -> bool {
    ::log::log_enabled!(target: TARGET, level)
}

/// `[ID] kind name` of a type, as libbpf's logs name types (`<anon>` when unnamed).
struct TypeText<'a, 'b> {
    btf: &'a Btf<'b>,
    id: u32,
}

impl fmt::Display for TypeText<'_, '_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (kind, name) = match self.btf.type_by_id(self.id) {
            Ok(ty) => (
                ty.kind().map_or("void", Kind::libbpf_name),
                self.btf.name(ty.name_off).unwrap_or("<?>"),
            ),
            Err(_) => ("<?>", "<?>"),
        };
        let name = if name.is_empty() { "<anon>" } else { name };
        write!(f, "[{}] {kind} {name}", self.id)
    }
}

/// A spec as libbpf's `bpf_core_format_spec` prints it: `<kind> [ID] kind name`, then the
/// enumerator (`::NAME = VALUE`) or the field path with its raw indices and bit offset
/// (`.a[2].b (0:1:2:0 @ offset 8.4)`). With `root_only`, the root type alone (a candidate that
/// did not match, whose partial spec is not kept).
struct SpecText<'a, 'b> {
    btf: &'a Btf<'b>,
    spec: &'a Spec<'b>,
    root_only: bool,
}

impl fmt::Display for SpecText<'_, '_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let spec = self.spec;
        let root = TypeText {
            btf: self.btf,
            id: spec.root_type_id,
        };
        write!(f, "<{}> {root}", spec.kind.name())?;
        if self.root_only || spec.kind.is_type_based() {
            return Ok(());
        }
        if spec.kind.is_enumval_based() {
            let ty = self.btf.skip_mods_and_typedefs(spec.root_type_id);
            let (Ok(ty), Some(&index)) = (ty, spec.raw.first()) else {
                return Ok(());
            };
            let Some((values, value)) = ty
                .kind
                .any_enum()
                .and_then(|e| Some((e, e.value(index as usize)?)))
            else {
                return Ok(());
            };
            let name = self.btf.name(value.name_off).unwrap_or("<?>");
            return match (values.signed, value.is_64) {
                (true, _) => write!(f, "::{name} = {}", value.signed_value()),
                (false, true) => write!(f, "::{name} = {}", value.value),
                (false, false) => write!(f, "::{name} = {}", value.value as u32),
            };
        }
        for (i, acc) in spec.accessors.iter().enumerate() {
            match acc.name {
                Some(name) => write!(f, ".{name}")?,
                None if i > 0 || acc.idx > 0 => write!(f, "[{}]", acc.idx)?,
                None => {}
            }
        }
        f.write_str(" (")?;
        for (i, raw) in spec.raw.iter().enumerate() {
            let sep = if i == 0 { "" } else { ":" };
            write!(f, "{sep}{}", *raw as i32)?;
        }
        match spec.bit_offset % 8 {
            0 => write!(f, " @ offset {})", spec.bit_offset / 8),
            bits => write!(f, " @ offset {}.{bits})", spec.bit_offset / 8),
        }
    }
}

/// The [`EventSink`] that writes each relocation event as libbpf's log message to the [`log`]
/// facade.
#[derive(Debug, Clone, Copy, Default)]
pub struct LibbpfLog;

impl EventSink for LibbpfLog {
    fn event(&mut self, event: RelocEvent<'_>) {
        match event {
            RelocEvent::SectionRelocations { section, count } => {
                section_relocations(section, count)
            }
            RelocEvent::CandidatesFound {
                local_btf,
                local_type_id,
                targets,
                candidates,
            } => candidates_found(local_btf, local_type_id, targets, candidates),
            RelocEvent::Relocating {
                program,
                relo,
                local_btf,
                local,
            } => relocation(program, relo, local_btf, local),
            RelocEvent::CandidateTried {
                program,
                relo,
                index,
                target_btf,
                candidate_id,
                kind,
                matched,
            } => candidate(
                program,
                relo,
                index,
                target_btf,
                candidate_id,
                kind,
                matched,
            ),
            RelocEvent::NoMatch { program, relo } => no_match(program, relo),
            RelocEvent::Ambiguity {
                program,
                relo,
                candidate_bit_offset,
                candidate,
                first_bit_offset,
                first,
            } => ambiguity(
                program,
                relo,
                (candidate_bit_offset, candidate),
                (first_bit_offset, first),
            ),
            RelocEvent::Patched {
                program,
                relo,
                insn,
                code,
                resolution,
                patched: change,
            } => patched(program, relo, insn, code, resolution, change),
            RelocEvent::Failed {
                program,
                relo,
                error,
            } => relocation_failed(program, relo, error),
        }
    }
}

/// `sec 'NAME': found N CO-RE relocations`.
fn section_relocations(section: &str, count: usize) {
    if enabled(Level::Debug) {
        emit(
            Level::Debug,
            format_args!("sec '{section}': found {count} CO-RE relocations"),
        );
    }
}

/// One `CO-RE relocating [ID] kind name: found target candidate ...` line per candidate of a
/// local type, when its candidates are first looked up.
fn candidates_found(
    local_btf: &Btf<'_>,
    local_type_id: u32,
    targets: &Targets<'_>,
    candidates: &[Candidate],
) {
    if !enabled(Level::Debug) {
        return;
    }
    let local = TypeText {
        btf: local_btf,
        id: local_type_id,
    };
    for cand in candidates {
        let target = TypeText {
            btf: targets.btf(cand.source),
            id: cand.id,
        };
        // libbpf names module BTFs by module name; a target here knows only its position.
        let source: &dyn fmt::Display = match &cand.source {
            BtfSource::Main => &"vmlinux",
            BtfSource::Module(n) => n,
        };
        emit(
            Level::Debug,
            format_args!("CO-RE relocating {local}: found target candidate {target} in [{source}]"),
        );
    }
}

/// The local spec of relocation `relo`: `prog 'NAME': relo #N: <kind> [ID] ...`, the first
/// line libbpf prints for every relocation.
fn relocation(program: &str, relo: u32, local_btf: &Btf<'_>, local: &Spec<'_>) {
    if enabled(Level::Debug) {
        let spec = SpecText {
            btf: local_btf,
            spec: local,
            root_only: false,
        };
        emit(
            Level::Debug,
            format_args!("prog '{program}': relo #{relo}: {spec}"),
        );
    }
}

/// `matching candidate #I <spec>` (with the target spec), or `non-matching candidate #I` when
/// `matched` is `None` (with the candidate's root type only; `kind` is the relocation's).
fn candidate(
    program: &str,
    relo: u32,
    index: usize,
    targ_btf: &Btf<'_>,
    cand_id: u32,
    kind: RelocKind,
    matched: Option<&Spec<'_>>,
) {
    if !enabled(Level::Debug) {
        return;
    }
    let root = Spec::new(cand_id, kind);
    let spec = SpecText {
        btf: targ_btf,
        spec: matched.unwrap_or(&root),
        root_only: matched.is_none(),
    };
    let verdict = if matched.is_some() {
        "matching"
    } else {
        "non-matching"
    };
    emit(
        Level::Debug,
        format_args!("prog '{program}': relo #{relo}: {verdict} candidate #{index} {spec}"),
    );
}

/// `no matching targets found`: the instruction will be poisoned (or the field reported
/// missing).
fn no_match(program: &str, relo: u32) {
    if enabled(Level::Debug) {
        emit(
            Level::Debug,
            format_args!("prog '{program}': relo #{relo}: no matching targets found"),
        );
    }
}

/// Two matching candidates disagree (the relocation then fails): libbpf's `field offset
/// ambiguity` when their fields lie at different bit offsets, else `relocation decision
/// ambiguity` (`cand` is the later candidate, `first` the one chosen before it).
fn ambiguity(
    program: &str,
    relo: u32,
    (cand_bits, cand): (u32, &Resolution),
    (first_bits, first): (u32, &Resolution),
) {
    let verdict = |r: &Resolution| {
        if r.poison.is_some() {
            "failure"
        } else {
            "success"
        }
    };
    if cand_bits != first_bits {
        emit(
            Level::Warn,
            format_args!(
                "prog '{program}': relo #{relo}: field offset ambiguity: {cand_bits} != {first_bits}"
            ),
        );
    } else {
        emit(
            Level::Warn,
            format_args!(
                "prog '{program}': relo #{relo}: relocation decision ambiguity: {} {} != {} {}",
                verdict(cand),
                cand.new_val,
                verdict(first),
                first.new_val
            ),
        );
    }
}

/// How patching changed instruction `insn` (index within its program; `code` is its opcode
/// before patching): libbpf's `patched insn #N (CLASS) ...` and `substituting insn #N w/
/// invalid insn` lines.
fn patched(program: &str, relo: u32, insn: u32, code: u8, res: &Resolution, patched: Patched) {
    let class = code & 0x07;
    let memory = matches!(class, CLASS_LDX | CLASS_ST | CLASS_STX);
    let at = format_args!("prog '{program}': relo #{relo}:");
    let Patched::Value { orig, new } = patched else {
        if memory && res.fail_memsz_adjust && res.poison.is_none() {
            emit(
                Level::Warn,
                format_args!(
                    "{at} insn #{insn} (LDX/ST/STX) accesses field incorrectly. Make sure you \
                     are accessing pointers, unsigned integers, or fields of matching type and \
                     size."
                ),
            );
        }
        if enabled(Level::Debug) {
            // Both slots of an ld_imm64, the second first, as libbpf poisons them.
            if code == LD_IMM64 {
                let second = insn + 1;
                emit(
                    Level::Debug,
                    format_args!("{at} substituting insn #{second} w/ invalid insn"),
                );
            }
            emit(
                Level::Debug,
                format_args!("{at} substituting insn #{insn} w/ invalid insn"),
            );
        }
        return;
    };
    if !enabled(Level::Debug) {
        return;
    }
    match class {
        CLASS_ALU | CLASS_ALU64 => emit(
            Level::Debug,
            format_args!(
                "{at} patched insn #{insn} (ALU/ALU64) imm {} -> {}",
                orig as u32, new as u32
            ),
        ),
        CLASS_LD => emit(
            Level::Debug,
            format_args!("{at} patched insn #{insn} (LDIMM64) imm64 {orig} -> {new}"),
        ),
        _ => {
            emit(
                Level::Debug,
                format_args!("{at} patched insn #{insn} (LDX/ST/STX) off {orig} -> {new}"),
            );
            if res.new_sz != res.orig_sz {
                emit(
                    Level::Debug,
                    format_args!(
                        "{at} patched insn #{insn} (LDX/ST/STX) mem_sz {} -> {}",
                        res.orig_sz, res.new_sz
                    ),
                );
            }
        }
    }
}

/// A relocation that failed: `prog 'NAME': relo #N: failed to relocate: REASON` (libbpf prints
/// the errno where this prints the reason).
fn relocation_failed(program: &str, relo: u32, error: &Error) {
    emit(
        Level::Warn,
        format_args!("prog '{program}': relo #{relo}: failed to relocate: {error}"),
    );
}

/// Bad input that made a call fail: `WHAT 'NAME': ERROR` at warning level (a file that could
/// not be read, an invalid BTF or object).
pub fn bad_input(what: &str, name: &dyn fmt::Display, error: &dyn fmt::Display) {
    emit(Level::Warn, format_args!("{what} '{name}': {error}"));
}

#[cfg(test)]
mod tests {
    //! The formats against lines Debian's libbpf 1.1 printed for `tests/data/progs/fields.bpf.o`
    //! and `enums.bpf.o` (`c-tests/libbpf_relocs.c` with `LIBBPF_RELOCS_VERBOSE=1`).
    use super::*;
    use crate::core::spec::parse_local_spec;
    use crate::object::BpfObject;
    use alloc::string::{String, ToString};
    use alloc::vec::Vec;

    fn data(path: &str) -> Vec<u8> {
        std::fs::read(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(path)).unwrap()
    }

    /// The local spec text of every CO-RE record of `object`, in `.BTF.ext` order.
    fn local_specs(object: &str) -> Vec<String> {
        let bytes = data(object);
        let obj = BpfObject::parse(&bytes).unwrap();
        let local = Btf::parse(obj.btf_bytes().unwrap()).unwrap();
        let mut out = Vec::new();
        for section in obj.core_relo_sections(&local) {
            for (_, rec) in section.unwrap().records.indexed() {
                let kind = RelocKind::from_raw(rec.kind).unwrap();
                let access = local.name(rec.access_str_off).unwrap();
                let spec = parse_local_spec(&local, rec.type_id, access, kind).unwrap();
                let text = SpecText {
                    btf: &local,
                    spec: &spec,
                    root_only: false,
                };
                out.push(text.to_string());
            }
        }
        out
    }

    #[test]
    fn specs_read_as_libbpf_prints_them() {
        let fields = local_specs("tests/data/progs/fields.bpf.o");
        assert_eq!(
            fields[0],
            "<byte_off> [5] struct fld_sample.a (0:0 @ offset 0)"
        );
        assert_eq!(
            fields[3],
            "<byte_off> [5] struct fld_sample.arr[2].y (0:2:2:1 @ offset 44)"
        );
        assert_eq!(
            fields[7],
            "<byte_off> [15] typedef fld_node_alias_t.val (0:0 @ offset 0)"
        );
        assert_eq!(
            fields[13],
            "<byte_sz> [5] struct fld_sample.arr[1] (0:2:1 @ offset 32)"
        );
        let enums = local_specs("tests/data/progs/enums.bpf.o");
        assert!(enums.contains(&"<enumval_value> [6] typedef en_color_t::EN_BLUE = 6".into()));
        assert!(
            enums.contains(&"<enumval_value> [8] enum64 en_neg::EN_NEG_A = -4294967296".into())
        );
        assert!(enums.contains(
            &"<enumval_value> [7] enum64 en_big::EN_BIG_B = 18446744069414584320".into()
        ));
        assert!(enums.contains(&"<type_size> [9] enum en_small".into()));
    }
}
