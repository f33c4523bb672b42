//! Writing the minimized BTF: the marked types in a fixed order (main BTF by id, then each
//! module by id; see [`output_keys`] for the one exception), ids remapped, structs/unions/enums
//! cut down to their marked entries (an enum to at least one). Output depends only on the
//! marks, never on hash order.

use super::marks::{Marks, TypeKey};
use crate::btf::write::BtfWriter;
use crate::btf::{Kind, Type, TypeKind, follow_chain};
use crate::core::{BtfSource, Targets};
use crate::error::{Error, Result};
use crate::fallible;
use alloc::vec::Vec;
use core::ops::ControlFlow;

/// The output blob and the kept types in output order (new id = position + 1).
pub struct Emitted {
    /// Raw BTF bytes.
    pub bytes: Vec<u8>,
    /// Kept types; type `keys[i]` has new id `i + 1`.
    pub keys: Vec<TypeKey>,
}

fn owner(targets: &Targets<'_>, source: BtfSource, id: u32) -> TypeKey {
    match source {
        BtfSource::Module(_) if id < targets.btf(source).start_id() => (BtfSource::Main, id),
        _ => (source, id),
    }
}

/// New id of `id` (as referenced from a type in `source`): its own if kept; else, through
/// unkept modifiers and typedefs, the first kept type; else void. So a member's `pid_t`
/// becomes the kept `int`, and a pointer to an unkept struct becomes `void *`. `keys` are
/// sorted; `ids[pos]` is the new id of `keys[pos]`.
fn new_id(
    targets: &Targets<'_>,
    keys: &[TypeKey],
    ids: &[u32],
    source: BtfSource,
    id: u32,
) -> Result<u32> {
    // As long as lookups follow chains, not a shorter limit.
    follow_chain(id, |id| {
        if id == 0 {
            return Ok(ControlFlow::Break(0));
        }
        let key = owner(targets, source, id);
        if let Ok(pos) = keys.binary_search(&key) {
            return Ok(ControlFlow::Break(ids[pos]));
        }
        Ok(
            match targets.btf(key.0).type_by_id(id)?.kind.modified_type() {
                Some(next) => ControlFlow::Continue(next),
                None => ControlFlow::Break(0),
            },
        )
    })?
    .ok_or(Error::BadType {
        id,
        reason: "modifier/typedef chain loops",
    })
}

/// The position in `keys` of the index type every kept array uses unless its own is kept: the
/// first kept integer. When no integer is kept at all, the first array's own index type is
/// added to `keys`.
fn array_index_type(targets: &Targets<'_>, keys: &mut Vec<TypeKey>) -> Result<Option<usize>> {
    let mut first_int = None;
    let mut fallback = None;
    for (pos, &(source, id)) in keys.iter().enumerate() {
        match targets.btf(source).type_by_id(id)?.kind {
            TypeKind::Int { .. } if first_int.is_none() => first_int = Some(pos),
            TypeKind::Array(a) if fallback.is_none() => {
                fallback = Some(owner(targets, source, a.index_type))
            }
            _ => {}
        }
    }
    match (first_int, fallback) {
        (Some(pos), _) => Ok(Some(pos)),
        (None, Some(key)) => {
            let pos = keys.binary_search(&key).unwrap_or_else(|p| p);
            keys.try_reserve(1)?;
            keys.insert(pos, key);
            Ok(Some(pos))
        }
        (None, None) => Ok(None),
    }
}

/// Whether a type has no data after its 12-byte header where libbpf up to 1.2 reads an int
/// encoding anyway: it answers `signed` for a field of any type from that word (an unsigned
/// enum's first enumerator, else the next type's name in the full BTF).
fn nothing_after_header(ty: &Type<'_>) -> bool {
    matches!(ty.kind, TypeKind::Float { .. }) || ty.kind.any_enum().is_some_and(|e| e.is_empty())
}

/// Every type of the output has nothing after its header ([`output_keys`] puts any other type
/// last), so libbpf up to 1.2 reads the start of the string section as the last one's int
/// encoding: a NUL, then the first string. On a
/// little-endian host the word's top byte, bit 0 of which is `BTF_INT_SIGNED`, is that
/// string's third byte (its NUL for a two-byte string). Strings are laid out in the order first
/// added, so add first a type name the output holds anyway whose third byte is even; failing
/// that, a one-byte filler and a name whose first byte is even; failing that, a two-byte
/// filler.
fn lead_with_even_third_byte(
    writer: &mut BtfWriter,
    targets: &Targets<'_>,
    keys: &[TypeKey],
) -> Result<()> {
    let even = |b: Option<&u8>| b.is_none_or(|b| b & 1 == 0);
    let mut even_first = None;
    for &(source, id) in keys {
        let btf = targets.btf(source);
        let name = btf.name(btf.type_by_id(id)?.name_off)?;
        let bytes = name.as_bytes();
        if bytes.len() >= 2 && even(bytes.get(2)) {
            writer.add_string(name)?;
            return Ok(());
        }
        if even_first.is_none() && bytes.first().is_some_and(|&b| b & 1 == 0) {
            even_first = Some(name);
        }
    }
    match even_first {
        Some(name) => {
            writer.add_string("_")?;
            writer.add_string(name)?;
        }
        None => {
            writer.add_string("__")?;
        }
    }
    Ok(())
}

/// The kept types: `keys` sorted (for lookups), `ids[pos]` the new id of `keys[pos]`, `order`
/// the positions in output order, and the position of the shared array index type.
struct Plan {
    keys: Vec<TypeKey>,
    ids: Vec<u32>,
    order: Vec<usize>,
    index_type: Option<usize>,
}

fn plan(targets: &Targets<'_>, marks: &Marks) -> Result<Plan> {
    let mut keys = marks.sorted_keys()?;
    // libbpf takes the pointer size from the integer named `long`, else assumes 8: keep that
    // integer whenever the target's pointers are not 8 bytes.
    let main = targets.main();
    if let Some(long) = main.long_type_id().filter(|_| main.pointer_size() != 8) {
        let key = (BtfSource::Main, long);
        if let Err(pos) = keys.binary_search(&key) {
            keys.try_reserve(1)?;
            keys.insert(pos, key);
        }
    }
    let index_type = array_index_type(targets, &mut keys)?;
    let mut order = fallible::vec_with_capacity(keys.len())?;
    order.extend(0..keys.len());
    // libbpf up to 1.2 reads the word after a type with nothing after its header as an int
    // encoding (FIELD_SIGNED of a float member). After another type that word is the next
    // type's name offset (below 2^24: never signed), as in the full BTF; after the last type it
    // would be the string section's start. So the last type that has something after its
    // header goes last.
    let empty = |pos: usize| -> Result<bool> {
        let (source, id) = keys[pos];
        Ok(nothing_after_header(&targets.btf(source).type_by_id(id)?))
    };
    if let Some(&last) = order.last()
        && empty(last)?
    {
        let mut pos = last;
        while pos > 0 && empty(pos)? {
            pos -= 1;
        }
        if !empty(pos)? {
            order.remove(pos);
            order.push(pos);
        }
    }
    let mut ids = fallible::vec_with_capacity(keys.len())?;
    ids.resize(keys.len(), 0);
    for (at, &pos) in order.iter().enumerate() {
        ids[pos] = at as u32 + 1;
    }
    Ok(Plan {
        keys,
        ids,
        order,
        index_type,
    })
}

/// The kept types in output order: the type with new id `n` is at `n - 1`. That is main BTF by
/// id, then each module by id, except that a type with data after its header is moved last
/// when the last would otherwise have none (see `plan`).
pub fn output_keys(targets: &Targets<'_>, marks: &Marks) -> Result<Vec<TypeKey>> {
    let plan = plan(targets, marks)?;
    let mut keys = fallible::vec_with_capacity(plan.keys.len())?;
    keys.extend(plan.order.iter().map(|&pos| plan.keys[pos]));
    Ok(keys)
}

/// Write every marked type.
pub fn emit(targets: &Targets<'_>, marks: &Marks) -> Result<Emitted> {
    let Plan {
        keys,
        ids,
        order,
        index_type,
    } = plan(targets, marks)?;
    let index_type = index_type.map(|pos| ids[pos]);
    let mut writer = BtfWriter::new(targets.main().endian())?;
    if let Some(&last) = order.last() {
        let (source, id) = keys[last];
        if nothing_after_header(&targets.btf(source).type_by_id(id)?) {
            lead_with_even_third_byte(&mut writer, targets, &keys)?;
        }
    }
    for &pos in &order {
        let key = &keys[pos];
        let (source, id) = *key;
        let btf = targets.btf(source);
        let ty = btf.type_by_id(id)?;
        if let (TypeKind::Array(a), Some(index_type)) = (ty.kind, index_type) {
            let index = match keys.binary_search(&owner(targets, source, a.index_type)) {
                Ok(pos) => ids[pos],
                Err(_) => index_type,
            };
            writer.begin_type(btf.name(ty.name_off)?, Kind::Array, false, 0, 0)?;
            for word in [
                new_id(targets, &keys, &ids, source, a.elem_type)?,
                index,
                a.nelems,
            ] {
                writer.push_word(word)?;
            }
            continue;
        }
        let mark = marks.get(key);
        let kept = |index: usize| mark.is_some_and(|m| m.keeps(index));
        // libbpf up to 1.2 answers FIELD_SIGNED for an unsigned enum from the word after the
        // enum's header (as if it were an int's encoding): the first enumerator's name in the
        // full BTF. With no enumerator left it would read the next type or the string section
        // instead, so an enum keeps at least its first enumerator.
        let keep_first = ty
            .kind
            .any_enum()
            .is_some_and(|e| !e.is_empty() && !(0..e.len()).any(kept));
        writer.copy_type(
            btf,
            &ty,
            |referenced| new_id(targets, &keys, &ids, source, referenced),
            |index| kept(index) || (keep_first && index == 0),
        )?;
    }
    let mut output = fallible::vec_with_capacity(keys.len())?;
    output.extend(order.iter().map(|&pos| keys[pos]));
    Ok(Emitted {
        bytes: writer.finish()?,
        keys: output,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::btf::{Btf, Endianness};

    /// The string section `lead_with_even_third_byte` starts for types named `names` (floats),
    /// as libbpf up to 1.2 reads its first word on a little-endian host: the top byte's bit 0
    /// is `BTF_INT_SIGNED` (0x01000000 in the type's int encoding word).
    fn leading_strings(names: &[&str]) -> Vec<u8> {
        let mut w = BtfWriter::new(Endianness::Little).unwrap();
        for name in names {
            w.begin_type(name, Kind::Float, false, 0, 8).unwrap();
        }
        let data = w.finish().unwrap();
        let btf = Btf::parse(&data).unwrap();
        let targets = Targets::new(&btf);
        let keys: Vec<TypeKey> = (1..=names.len() as u32)
            .map(|id| (BtfSource::Main, id))
            .collect();
        let mut out = BtfWriter::new(Endianness::Little).unwrap();
        lead_with_even_third_byte(&mut out, &targets, &keys).unwrap();
        out.finish().unwrap()[24..].to_vec()
    }

    fn reads_signed(strings: &[u8]) -> bool {
        let mut word = [0u8; 4];
        for (w, b) in word.iter_mut().zip(strings) {
            *w = *b;
        }
        u32::from_le_bytes(word) & 0x0100_0000 != 0
    }

    #[test]
    fn string_section_never_starts_as_a_signed_encoding() {
        // "double" and "float" have an odd third byte ('u', 'o'): read first, they say signed.
        assert!(reads_signed(b"\0double\0"));
        assert!(reads_signed(b"\0float\0"));
        // A name the output holds anyway, with an even third byte: no extra bytes.
        assert_eq!(
            leading_strings(&["double", "long double"]),
            b"\0long double\0"
        );
        // A two-byte name: its NUL is the third byte.
        assert_eq!(leading_strings(&["float", "xy"]), b"\0xy\0");
        // Only odd third bytes: a one-byte filler, then a name starting with an even byte.
        assert_eq!(leading_strings(&["float", "double"]), b"\0_\0float\0");
        // Odd everywhere ('a' is odd): a two-byte filler.
        assert_eq!(leading_strings(&["aaa"]), b"\0__\0");
        for names in [
            &["double", "long double"][..],
            &["float", "xy"],
            &["float", "double"],
            &["aaa"],
        ] {
            assert!(!reads_signed(&leading_strings(names)), "{names:?}");
        }
    }
}
