//! What the DWARF tests share: the fixtures of `tests/data/dwarf/`, and BTF rendered as
//! text with what each type refers to spelled out, so that two BTFs compare type by type
//! modulo ids and order (see `tests/dwarf.rs`).

#![allow(dead_code)]

use btfgen::btf::{Btf, TypeKind};
use std::collections::BTreeMap;
use std::path::PathBuf;

pub fn data(name: &str) -> Vec<u8> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/dwarf")
        .join(name);
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// A reference to type `id`: anonymous types in full, named ones by name.
pub fn reference(btf: &Btf, id: u32, depth: usize) -> String {
    let ty = btf.type_by_id(id).unwrap();
    let name = btf.name(ty.name_off).unwrap();
    if id == 0 {
        return "void".into();
    }
    if depth > 16 {
        return "...".into();
    }
    let kind = ty.kind().unwrap().name();
    match &ty.kind {
        TypeKind::Struct(c) | TypeKind::Union(c) if !name.is_empty() => {
            let members: Vec<&str> = c.members().map(|m| btf.name(m.name_off).unwrap()).collect();
            format!("{kind} {name}{{{}}}", members.join(","))
        }
        _ if !name.is_empty() => format!("{kind} {name}"),
        _ => format!("({})", render(btf, id, depth + 1)),
    }
}

/// Type `id` in full.
pub fn render(btf: &Btf, id: u32, depth: usize) -> String {
    let ty = btf.type_by_id(id).unwrap();
    let name = btf.name(ty.name_off).unwrap();
    let kind = ty.kind().map_or("VOID", |k| k.name());
    let r = |t: u32| reference(btf, t, depth);
    let body = match &ty.kind {
        TypeKind::Void => String::new(),
        TypeKind::Int {
            size,
            encoding,
            offset,
            bits,
        } => format!("size={size} enc={encoding} off={offset} bits={bits}"),
        TypeKind::Ptr(t)
        | TypeKind::Typedef(t)
        | TypeKind::Volatile(t)
        | TypeKind::Const(t)
        | TypeKind::Restrict(t)
        | TypeKind::TypeTag(t) => r(*t),
        TypeKind::Array(a) => format!(
            "{} [{}] index {}",
            r(a.elem_type),
            a.nelems,
            r(a.index_type)
        ),
        TypeKind::Struct(c) | TypeKind::Union(c) => {
            let members: Vec<String> = c
                .members()
                .map(|m| {
                    format!(
                        "{}: {} @{}",
                        btf.name(m.name_off).unwrap(),
                        r(m.type_id),
                        m.raw_offset
                    )
                })
                .collect();
            format!(
                "size={} kflag={} {{{}}}",
                c.size,
                c.kind_flag,
                members.join("; ")
            )
        }
        TypeKind::Enum(e) | TypeKind::Enum64(e) => {
            let values: Vec<String> = e
                .values()
                .map(|v| format!("{}={:#x}", btf.name(v.name_off).unwrap(), v.value))
                .collect();
            format!(
                "size={} signed={} {{{}}}",
                e.size,
                e.signed,
                values.join(",")
            )
        }
        TypeKind::Fwd { union } => format!("union={union}"),
        TypeKind::Func { proto, linkage } => format!("linkage={linkage} {}", r(*proto)),
        TypeKind::FuncProto(p) => {
            let params: Vec<String> = p
                .params()
                .map(|q| format!("{}: {}", btf.name(q.name_off).unwrap(), r(q.type_id)))
                .collect();
            format!("{} ({})", r(p.return_type), params.join(", "))
        }
        TypeKind::Var { type_id, linkage } => format!("linkage={linkage} {}", r(*type_id)),
        TypeKind::Datasec(d) => {
            let vars: Vec<String> = d
                .vars()
                .map(|v| format!("{}@{}+{}", r(v.type_id), v.offset, v.size))
                .collect();
            format!("size={} {}", d.size, vars.join(","))
        }
        TypeKind::Float { size } => format!("size={size}"),
        TypeKind::DeclTag {
            type_id,
            component_idx,
        } => format!("{} component={component_idx}", r(*type_id)),
    };
    format!("{kind} '{name}' {body}")
}

/// Every type `btf` defines itself (a split BTF's own, not its base's), rendered, with how many times each line occurs.
pub fn canonical(btf: &Btf) -> BTreeMap<String, usize> {
    let mut lines = BTreeMap::new();
    for id in btf.start_id()..btf.type_cnt() {
        *lines.entry(render(btf, id, 0)).or_default() += 1;
    }
    lines
}

pub fn difference(ours: &BTreeMap<String, usize>, theirs: &BTreeMap<String, usize>) -> String {
    let mut out = String::new();
    for (line, &n) in ours {
        let m = theirs.get(line).copied().unwrap_or(0);
        if n > m {
            out.push_str(&format!("  btfgen only ({}x): {line}\n", n - m));
        }
    }
    for (line, &n) in theirs {
        let m = ours.get(line).copied().unwrap_or(0);
        if n > m {
            out.push_str(&format!("  pahole only ({}x): {line}\n", n - m));
        }
    }
    out
}
