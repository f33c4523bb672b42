//! Text dump of a BTF in exactly the format of `bpftool btf dump file FILE` (raw format, as
//! printed by bpftool v7.1 / Linux 6.1 and later): one `[id] KIND 'name' ...` line per type,
//! followed by one tab-indented line per member, parameter, enumerator or section variable.
//!
//! Output goes to a `String` through `StringSink`, so a dump never aborts on out-of-memory;
//! callers that stream (the CLI) dump entry by entry with [`dump_entry`] and flush as they go.
//!
//! A type of a kind btfgen does not know (skipped by the layout section) prints as
//! `[id] UNKNOWN 'name' kind=N vlen=V`: bpftool names kind 0 `UNKNOWN`, and the raw kind and
//! vlen are all that is known of it.

use super::types::{Enum, Type, TypeKind};
use super::{Btf, Entry, Kind, UnknownType};
use crate::error::Result;
use crate::fallible::StringSink;
use alloc::string::String;
use core::fmt::{self, Write};

/// Append the dump of every type `btf` defines itself to `out`: for split BTF only the split
/// part's types, numbered from the base's type count, as `bpftool btf dump file FILE
/// [--base-btf BASE]` prints them.
pub fn dump(btf: &Btf<'_>, out: &mut String) -> Result<()> {
    for entry in btf.entries() {
        dump_entry(btf, &entry?, out)?;
    }
    Ok(())
}

/// Append the dump of `entry` (of `btf`) to `out`, newline-terminated.
pub fn dump_entry(btf: &Btf<'_>, entry: &Entry<'_>, out: &mut String) -> Result<()> {
    match entry {
        Entry::Type(ty) => dump_type(btf, ty, out),
        Entry::Unknown(unknown) => {
            let mut sink = StringSink::new(out);
            // As in `dump_type`: only the sink's failed reservation can fail the write.
            let _ = write_unknown(btf, unknown, &mut sink);
            sink.finish()
        }
    }
}

fn write_unknown(btf: &Btf<'_>, ty: &UnknownType, w: &mut StringSink<'_>) -> fmt::Result {
    writeln!(
        w,
        "[{}] UNKNOWN '{}' kind={} vlen={}",
        ty.id,
        name(btf, ty.name_off),
        ty.kind,
        ty.vlen
    )
}

/// Append the dump of `ty` (a type of `btf` or of its base) to `out`, newline-terminated.
pub fn dump_type(btf: &Btf<'_>, ty: &Type<'_>, out: &mut String) -> Result<()> {
    let mut sink = StringSink::new(out);
    // A formatting error here can only be the sink's failed reservation, which `finish`
    // reports as out-of-memory.
    let _ = write_type(btf, ty, &mut sink);
    sink.finish()
}

/// bpftool's `btf_str`: offset 0 is anonymous even though it names the empty string, and an
/// offset that resolves to nothing prints as `(invalid)` rather than failing the dump.
fn name<'a>(btf: &Btf<'a>, off: u32) -> &'a str {
    if off == 0 {
        return "(anon)";
    }
    btf.name(off).unwrap_or("(invalid)")
}

/// bpftool's kind names; void (id 0) is kind 0, `UNKNOWN`.
fn kind_name(ty: &Type<'_>) -> &'static str {
    ty.kind().map_or("UNKNOWN", Kind::name)
}

fn int_encoding(encoding: u8) -> &'static str {
    match encoding {
        0 => "(none)",
        super::kind::INT_SIGNED => "SIGNED",
        super::kind::INT_CHAR => "CHAR",
        super::kind::INT_BOOL => "BOOL",
        _ => "UNKN",
    }
}

/// Linkage names shared by FUNC (`btf_func_linkage`) and VAR (`btf_var_linkage`): both use
/// 0 = static, 1 = global, 2 = extern.
fn linkage(linkage: u32) -> &'static str {
    match linkage {
        0 => "static",
        1 => "global",
        2 => "extern",
        _ => "(unknown)",
    }
}

fn write_type(btf: &Btf<'_>, ty: &Type<'_>, w: &mut StringSink<'_>) -> fmt::Result {
    write!(
        w,
        "[{}] {} '{}'",
        ty.id,
        kind_name(ty),
        name(btf, ty.name_off)
    )?;
    match &ty.kind {
        TypeKind::Void => {}
        TypeKind::Int {
            size,
            encoding,
            offset,
            bits,
        } => write!(
            w,
            " size={size} bits_offset={offset} nr_bits={bits} encoding={}",
            int_encoding(*encoding)
        )?,
        TypeKind::Ptr(t)
        | TypeKind::Const(t)
        | TypeKind::Volatile(t)
        | TypeKind::Restrict(t)
        | TypeKind::Typedef(t)
        | TypeKind::TypeTag(t) => write!(w, " type_id={t}")?,
        TypeKind::Array(a) => write!(
            w,
            " type_id={} index_type_id={} nr_elems={}",
            a.elem_type, a.index_type, a.nelems
        )?,
        TypeKind::Struct(c) | TypeKind::Union(c) => {
            write!(w, " size={} vlen={}", c.size, c.len())?;
            for m in c.members() {
                write!(
                    w,
                    "\n\t'{}' type_id={} bits_offset={}",
                    name(btf, m.name_off),
                    m.type_id,
                    m.bit_offset
                )?;
                if m.bitfield_size != 0 {
                    write!(w, " bitfield_size={}", m.bitfield_size)?;
                }
            }
        }
        TypeKind::Enum(e) | TypeKind::Enum64(e) => write_enum(btf, e, w)?,
        TypeKind::Fwd { union } => w.write_str(if *union {
            " fwd_kind=union"
        } else {
            " fwd_kind=struct"
        })?,
        TypeKind::Func { proto, linkage: l } => {
            write!(w, " type_id={proto} linkage={}", linkage(u32::from(*l)))?
        }
        TypeKind::FuncProto(p) => {
            write!(w, " ret_type_id={} vlen={}", p.return_type, p.len())?;
            for param in p.params() {
                write!(
                    w,
                    "\n\t'{}' type_id={}",
                    name(btf, param.name_off),
                    param.type_id
                )?;
            }
        }
        // The comma is bpftool's.
        TypeKind::Var {
            type_id,
            linkage: l,
        } => write!(w, " type_id={type_id}, linkage={}", linkage(*l))?,
        TypeKind::Datasec(d) => {
            write!(w, " size={} vlen={}", d.size, d.len())?;
            for v in d.vars() {
                write!(
                    w,
                    "\n\ttype_id={} offset={} size={}",
                    v.type_id, v.offset, v.size
                )?;
                // bpftool annotates every entry whose id exists, void included.
                if let Ok(target) = btf.type_by_id(v.type_id) {
                    write!(
                        w,
                        " ({} '{}')",
                        kind_name(&target),
                        name(btf, target.name_off)
                    )?;
                }
            }
        }
        TypeKind::Float { size } => write!(w, " size={size}")?,
        TypeKind::DeclTag {
            type_id,
            component_idx,
        } => write!(w, " type_id={type_id} component_idx={component_idx}")?,
    }
    w.write_char('\n')
}

/// ENUM values print as C `int`/`unsigned int`, ENUM64 values as `long long` literals with an
/// `LL`/`ULL` suffix; kind_flag picks signedness for both.
fn write_enum(btf: &Btf<'_>, e: &Enum<'_>, w: &mut StringSink<'_>) -> fmt::Result {
    let encoding = if e.signed { "SIGNED" } else { "UNSIGNED" };
    write!(w, " encoding={encoding} size={} vlen={}", e.size, e.len())?;
    for v in e.values() {
        write!(w, "\n\t'{}' val=", name(btf, v.name_off))?;
        match (v.is_64, e.signed) {
            (false, true) => write!(w, "{}", v.signed_value())?,
            (false, false) => write!(w, "{}", v.value)?,
            (true, true) => write!(w, "{}LL", v.signed_value())?,
            (true, false) => write!(w, "{}ULL", v.value)?,
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::btf::Endianness;
    use crate::btf::write::BtfWriter;

    /// Expected lines are bpftool v7.1's output for the same types.
    #[test]
    fn prints_like_bpftool() {
        let mut w = BtfWriter::new(Endianness::Little).unwrap();
        let int = w.begin_type("int", Kind::Int, false, 0, 4).unwrap();
        w.push_word((1 << 24) | 32).unwrap();
        let x = w.add_string("x").unwrap();
        let s = w.begin_type("s", Kind::Struct, true, 2, 4).unwrap();
        for word in [x, int, 3 << 24, 0, int, 8] {
            w.push_word(word).unwrap();
        }
        w.begin_type("e", Kind::Enum, true, 1, 4).unwrap();
        for word in [x, u32::MAX] {
            w.push_word(word).unwrap();
        }
        w.begin_type("e64", Kind::Enum64, false, 1, 8).unwrap();
        for word in [x, u32::MAX, u32::MAX] {
            w.push_word(word).unwrap();
        }
        let v = w.begin_type("v", Kind::Var, false, 0, s).unwrap();
        w.push_word(2).unwrap();
        w.begin_type(".bss", Kind::Datasec, false, 1, 4).unwrap();
        for word in [v, 0, 4] {
            w.push_word(word).unwrap();
        }
        w.begin_type("u", Kind::Fwd, true, 0, 0).unwrap();
        let blob = w.finish().unwrap();
        let btf = Btf::parse(&blob).unwrap();
        let mut out = String::new();
        dump(&btf, &mut out).unwrap();
        let expected = "\
[1] INT 'int' size=4 bits_offset=0 nr_bits=32 encoding=SIGNED
[2] STRUCT 's' size=4 vlen=2
\t'x' type_id=1 bits_offset=0 bitfield_size=3
\t'(anon)' type_id=1 bits_offset=8
[3] ENUM 'e' encoding=SIGNED size=4 vlen=1
\t'x' val=-1
[4] ENUM64 'e64' encoding=UNSIGNED size=8 vlen=1
\t'x' val=18446744073709551615ULL
[5] VAR 'v' type_id=2, linkage=extern
[6] DATASEC '.bss' size=4 vlen=1
\ttype_id=5 offset=0 size=4 (VAR 'v')
[7] FWD 'u' fwd_kind=union
";
        assert_eq!(out, expected);
    }
}
