//! CO-RE access specs: the parsed form of a relocation's access string ("0:1:2:3") against the
//! local BTF. The low-level spec (`raw`) has one entry per access-string element; the high-level
//! spec (`accessors`) keeps only named members and array indices, which is what gets matched
//! against target types.

use super::RelocKind;
use crate::btf::{Btf, TypeKind};
use crate::error::{Error, Result};
use crate::fallible;
use alloc::vec::Vec;

/// Longest access string libbpf accepts (`BPF_CORE_SPEC_MAX_LEN`).
pub const MAX_SPEC_LEN: usize = 64;

/// One high-level step of a spec: a named member of a struct/union, or an array index (also the
/// initial `0:` pointer-as-array access).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Accessor<'a> {
    /// For a member: the struct/union id; for an index: the element type id (modifiers and
    /// typedefs skipped).
    pub type_id: u32,
    /// Member index or array index (enumerator index for enum relocations).
    pub idx: u32,
    /// Member or enumerator name; `None` for array accesses.
    pub name: Option<&'a str>,
}

/// A local or target spec.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Spec<'a> {
    /// The relocation's root type id.
    pub root_type_id: u32,
    /// Kind of the relocation this spec belongs to.
    pub kind: RelocKind,
    /// High-level accessors.
    pub accessors: heapless::Vec<Accessor<'a>, MAX_SPEC_LEN>,
    /// Low-level spec: every access-string index, including anonymous members.
    pub raw: heapless::Vec<u32, MAX_SPEC_LEN>,
    /// Bit offset of the accessed field from the start of the root type.
    pub bit_offset: u32,
}

/// A matched target spec as a relocation keeps it: the same facts as its [`Spec`], in
/// buffers sized to the path. A `Spec` is a fixed-size working value (~1.8 KiB, for the
/// longest access string libbpf accepts); an object's relocations keep one per matching
/// candidate, and most paths are a few steps long.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MatchedSpec<'a> {
    /// The relocation's root type id.
    pub root_type_id: u32,
    /// Kind of the relocation.
    pub kind: RelocKind,
    /// High-level accessors.
    pub accessors: Vec<Accessor<'a>>,
    /// Low-level spec: every access-string index, including anonymous members.
    pub raw: Vec<u32>,
    /// Bit offset of the accessed field from the start of the root type.
    pub bit_offset: u32,
}

impl<'a> MatchedSpec<'a> {
    /// `spec` in buffers of its own length.
    pub fn of(spec: &Spec<'a>) -> Result<Self> {
        Ok(MatchedSpec {
            root_type_id: spec.root_type_id,
            kind: spec.kind,
            accessors: fallible::to_vec(&spec.accessors)?,
            raw: fallible::to_vec(&spec.raw)?,
            bit_offset: spec.bit_offset,
        })
    }
}

impl<'a> Spec<'a> {
    /// An empty spec rooted at `root_type_id`.
    pub fn new(root_type_id: u32, kind: RelocKind) -> Self {
        Spec {
            root_type_id,
            kind,
            accessors: heapless::Vec::new(),
            raw: heapless::Vec::new(),
            bit_offset: 0,
        }
    }

    pub(crate) fn push_raw(&mut self, index: u32) -> Result<()> {
        self.raw.push(index).map_err(|_| too_deep())
    }

    pub(crate) fn push_accessor(&mut self, acc: Accessor<'a>) -> Result<()> {
        self.accessors.push(acc).map_err(|_| too_deep())
    }

    pub(crate) fn add_bits(&mut self, bits: u64) -> Result<()> {
        let total = u64::from(self.bit_offset) + bits;
        self.bit_offset = u32::try_from(total).map_err(|_| Error::BadRelocation {
            relo: 0,
            reason: "field bit offset overflows",
        })?;
        Ok(())
    }
}

fn too_deep() -> Error {
    Error::Limit {
        what: "CO-RE access spec length",
        limit: MAX_SPEC_LEN,
    }
}

fn invalid(reason: &'static str) -> Error {
    Error::BadRelocation { relo: 0, reason }
}

/// Length of `name` without a `___flavor` suffix: up to the last `X___Y` separator where
/// neither X nor Y is an underscore (libbpf's "essential name").
pub fn essential_name_len(name: &str) -> usize {
    essential_len(name.as_bytes())
}

/// [`essential_name_len`] of a name's bytes. Scans from the end, as libbpf does, but tests the
/// first byte of each window's `___` before the rest: where it is not an underscore, neither
/// that window nor the two before it (whose `___` also covers that byte) can match, so most
/// bytes of most names are looked at once in three.
pub(crate) fn essential_len(b: &[u8]) -> usize {
    let n = b.len();
    // Windows b[i..i + 5], `X___Y`, from the last one down.
    let Some(mut i) = n.checked_sub(5) else {
        return n;
    };
    loop {
        if b[i + 1] != b'_' {
            match i.checked_sub(3) {
                Some(next) => i = next,
                None => return n,
            }
            continue;
        }
        if b[i] != b'_' && b[i + 2] == b'_' && b[i + 3] == b'_' && b[i + 4] != b'_' {
            return i + 1;
        }
        match i.checked_sub(1) {
            Some(next) => i = next,
            None => return n,
        }
    }
}

/// `name` without its flavor suffix.
pub fn essential_name(name: &str) -> &str {
    &name[..essential_name_len(name)]
}

/// Parse `access` ("0:1:2") into low-level indices, as libbpf's `%d` scan does: optional sign,
/// digits, separated by single colons.
fn parse_access_string(access: &str) -> Result<heapless::Vec<i64, MAX_SPEC_LEN>> {
    if access.is_empty() || access.starts_with(':') {
        return Err(invalid("empty or malformed access string"));
    }
    let mut out = heapless::Vec::new();
    let mut rest = access;
    while !rest.is_empty() {
        rest = rest.strip_prefix(':').unwrap_or(rest);
        let trimmed = rest.trim_start_matches([' ', '\t', '\n']);
        let digits_start = usize::from(trimmed.starts_with(['-', '+']));
        let digits = trimmed[digits_start..]
            .bytes()
            .take_while(u8::is_ascii_digit)
            .count();
        if digits == 0 {
            return Err(invalid("malformed access string"));
        }
        let end = digits_start + digits;
        let value: i64 = trimmed[..end]
            .parse()
            .map_err(|_| invalid("access string index out of range"))?;
        if i32::try_from(value).is_err() {
            return Err(invalid("access string index out of range"));
        }
        out.push(value).map_err(|_| too_deep())?;
        rest = &trimmed[end..];
    }
    Ok(out)
}

/// Parse the local spec of a relocation (libbpf's `bpf_core_parse_spec`).
pub fn parse_local_spec<'a>(
    btf: &Btf<'a>,
    root_type_id: u32,
    access: &str,
    kind: RelocKind,
) -> Result<Spec<'a>> {
    let mut spec = Spec::new(root_type_id, kind);
    if access.is_empty() || access.starts_with(':') {
        return Err(invalid("empty or malformed access string"));
    }
    if kind.is_type_based() {
        if access != "0" {
            return Err(invalid(
                "type relocation with access string other than \"0\"",
            ));
        }
        return Ok(spec);
    }
    let raw = parse_access_string(access)?;
    let mut indices = raw.iter().copied();
    let first = indices.next().ok_or(invalid("empty access string"))?;
    let root = btf.skip_mods_and_typedefs(root_type_id)?;
    let mut id = root.id;
    // Negative indices are accepted by libbpf's scan but only meaningful as array indices; they
    // become huge unsigned values and fail the bounds checks below, as in libbpf.
    let first_idx = first as i32 as u32;
    spec.push_raw(first_idx)?;
    spec.push_accessor(Accessor {
        type_id: id,
        idx: first_idx,
        name: None,
    })?;

    if kind.is_enumval_based() {
        let values = root
            .kind
            .any_enum()
            .ok_or(invalid("enum relocation on a non-enum type"))?;
        if raw.len() > 1 {
            return Err(invalid("enum relocation with more than one access index"));
        }
        let value = values
            .value(first_idx as usize)
            .ok_or(invalid("enumerator index out of range"))?;
        if let Some(acc) = spec.accessors.first_mut() {
            acc.name = Some(btf.name(value.name_off)?);
        }
        return Ok(spec);
    }
    if !kind.is_field_based() {
        return Err(invalid("unknown relocation kind"));
    }
    let size = btf.resolve_size(id)?;
    spec.bit_offset = mul_bits(first, size)?;

    for access_idx in indices {
        let ty = btf.skip_mods_and_typedefs(id)?;
        id = ty.id;
        let access_idx = access_idx as i32 as u32;
        spec.push_raw(access_idx)?;
        match &ty.kind {
            TypeKind::Struct(c) | TypeKind::Union(c) => {
                let m = c
                    .member(access_idx as usize)
                    .ok_or(invalid("member index out of range"))?;
                spec.add_bits(u64::from(m.bit_offset))?;
                if m.name_off != 0 {
                    let name = btf.name(m.name_off)?;
                    if name.is_empty() {
                        return Err(invalid("member with empty name"));
                    }
                    spec.push_accessor(Accessor {
                        type_id: id,
                        idx: access_idx,
                        name: Some(name),
                    })?;
                }
                id = m.type_id;
            }
            TypeKind::Array(a) => {
                let elem = btf.skip_mods_and_typedefs(a.elem_type)?;
                id = elem.id;
                let flex = spec
                    .accessors
                    .last()
                    .is_some_and(|prev| is_flex_array(btf, prev, a.nelems));
                if !flex && access_idx >= a.nelems {
                    return Err(invalid("array index out of bounds"));
                }
                spec.push_accessor(Accessor {
                    type_id: id,
                    idx: access_idx,
                    name: None,
                })?;
                let size = btf.resolve_size(id)?;
                spec.add_bits(u64::from(access_idx) * size * 8)?;
            }
            _ => {
                return Err(invalid(
                    "access string steps into a type that is not a struct, union or array",
                ));
            }
        }
    }
    Ok(spec)
}

fn mul_bits(index: i64, size: u64) -> Result<u32> {
    let bits = (index as i128) * (size as i128) * 8;
    // libbpf stores this in a u32; a negative first index wraps the same way.
    u32::try_from(bits.rem_euclid(1i128 << 32)).map_err(|_| invalid("bit offset overflow"))
}

/// A zero-length array that is the last member of the struct named by `prev` (the accessor
/// before the array access) is flexible: any index is allowed.
pub(crate) fn is_flex_array(btf: &Btf<'_>, prev: &Accessor<'_>, nelems: u32) -> bool {
    if prev.name.is_none() || nelems > 0 {
        return false;
    }
    match btf.type_by_id(prev.type_id) {
        Ok(t) => t
            .kind
            .composite()
            .is_some_and(|c| c.len().checked_sub(1) == Some(prev.idx as usize)),
        Err(_) => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::{string::String, vec::Vec};

    #[test]
    fn essential_names_strip_last_flavor() {
        assert_eq!(essential_name("task_struct"), "task_struct");
        assert_eq!(essential_name("task_struct___v1"), "task_struct");
        assert_eq!(essential_name("a___b___c"), "a___b");
        assert_eq!(essential_name("a____b"), "a____b");
        assert_eq!(essential_name("___x"), "___x");
        assert_eq!(essential_name("x___"), "x___");
        assert_eq!(essential_name("x___y"), "x");
        assert_eq!(essential_name(""), "");
    }

    /// libbpf's `bpf_core_essential_name_len`, transcribed: every window from the last.
    fn libbpf_essential_len(b: &[u8]) -> usize {
        let n = b.len();
        if n >= 5 {
            for i in (0..=n - 5).rev() {
                let s = &b[i..i + 5];
                if s[0] != b'_' && s[1] == b'_' && s[2] == b'_' && s[3] == b'_' && s[4] != b'_' {
                    return i + 1;
                }
            }
        }
        n
    }

    #[test]
    fn essential_len_agrees_with_libbpf_on_every_short_name() {
        // Every string of up to 14 bytes over {'_', 'a'}: all the arrangements of separators,
        // runs of underscores and name bytes that the skip can meet.
        for len in 0..=14 {
            for bits in 0u32..1 << len {
                let name: Vec<u8> = (0..len)
                    .map(|i| if bits >> i & 1 == 1 { b'_' } else { b'a' })
                    .collect();
                assert_eq!(
                    essential_len(&name),
                    libbpf_essential_len(&name),
                    "{}",
                    String::from_utf8_lossy(&name)
                );
            }
        }
    }

    #[test]
    fn access_strings_parse_like_libbpf() {
        assert_eq!(parse_access_string("0:1:2").unwrap().as_slice(), &[0, 1, 2]);
        assert_eq!(parse_access_string("0").unwrap().as_slice(), &[0]);
        assert!(parse_access_string(":0").is_err());
        assert!(parse_access_string("0::1").is_err());
        assert!(parse_access_string("a").is_err());
        assert!(parse_access_string("99999999999").is_err());
        let long = "0:".repeat(MAX_SPEC_LEN) + "0";
        assert_eq!(parse_access_string(&long), Err(too_deep()));
    }
}
