//! Relocation values: what a spec (local or target) says the instruction should hold, and the
//! combined result for one relocation (libbpf's `bpf_core_calc_relo`).

use super::RelocKind;
use super::spec::Spec;
use crate::btf::{Btf, TypeKind, kind::INT_SIGNED};
use crate::error::{Error, Result};

/// What a relocation resolved to: the values to check and patch into its instruction.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Resolution {
    /// Value the instruction holds as compiled (from the local spec).
    pub orig_val: u64,
    /// Value it must hold for the target.
    pub new_val: u64,
    /// The instruction must be replaced by libbpf's invalid helper call, and why.
    pub poison: Option<PoisonReason>,
    /// Whether the instruction's current value must equal `orig_val`.
    pub validate: bool,
    /// A load/store size change that is not safe: poison LDX/ST/STX instead of resizing.
    pub fail_memsz_adjust: bool,
    /// Memory access size implied by the local field (0 if none).
    pub orig_sz: u32,
    /// Memory access size implied by the target field (0 if none).
    pub new_sz: u32,
    /// Local field type id (modifiers and typedefs skipped).
    pub orig_type_id: u32,
    /// Target field type id (modifiers and typedefs skipped).
    pub new_type_id: u32,
}

/// Why a relocation poisons its instruction (libbpf only says that it does).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PoisonReason {
    /// The target has no type of the local type's essential name and kind.
    NoCandidate,
    /// Candidate types exist, but none has the field (or enumerator) the access string names:
    /// a member missing, an array too short, an incompatible field type.
    NoMatch,
    /// The field was found, but a load or store of it cannot be resized safely to the target
    /// field's size (only pointers and unsigned integers can be).
    SizeNotAdjustable,
}

impl PoisonReason {
    /// A short stable name (`no_candidate`, `no_match`, `size_not_adjustable`).
    pub fn name(self) -> &'static str {
        match self {
            PoisonReason::NoCandidate => "no_candidate",
            PoisonReason::NoMatch => "no_match",
            PoisonReason::SizeNotAdjustable => "size_not_adjustable",
        }
    }

    /// What it means, for people.
    pub fn describe(self) -> &'static str {
        match self {
            PoisonReason::NoCandidate => "no target type of this name and kind",
            PoisonReason::NoMatch => "field or enumerator missing in every candidate",
            PoisonReason::SizeNotAdjustable => {
                "load/store size cannot be adjusted to the target field"
            }
        }
    }
}

/// A value computation outcome: a value, or "poison the instruction".
enum Value {
    Known {
        val: u64,
        field_sz: u32,
        type_id: u32,
        validate: bool,
    },
    Poison,
}

fn invalid(reason: &'static str) -> Error {
    Error::BadRelocation { relo: 0, reason }
}

/// The memory access size a load or store of the field at `id` implies: the size of one
/// element for (multi-dimensional) arrays, else the field's size. libbpf sizes by the element
/// since 1.6 ("fix LDX/STX/ST CO-RE relocation size adjustment logic"); 1.1 used the whole
/// array, so a one-byte load of `comm[0]` was poisoned wherever the array's length changed.
fn element_size(btf: &Btf<'_>, id: u32) -> Result<u32> {
    let mut ty = btf.skip_mods_and_typedefs(id)?;
    for _ in 0..=crate::btf::MAX_RESOLVE_DEPTH {
        let TypeKind::Array(a) = ty.kind else {
            let size = btf
                .resolve_size(ty.id)
                .map_err(|_| invalid("field has no size"))?;
            return u32::try_from(size).map_err(|_| invalid("field too large"));
        };
        ty = btf.skip_mods_and_typedefs(a.elem_type)?;
    }
    Err(invalid("arrays nested too deep"))
}

fn field_value(
    btf: &Btf<'_>,
    kind: RelocKind,
    spec: Option<&Spec<'_>>,
    target_is_le: bool,
) -> Result<Value> {
    if kind == RelocKind::FieldExists {
        return Ok(Value::Known {
            val: u64::from(spec.is_some()),
            field_sz: 0,
            type_id: 0,
            validate: true,
        });
    }
    let Some(spec) = spec else {
        return Ok(Value::Poison);
    };
    let acc = spec.accessors.last().ok_or(invalid("empty spec"))?;
    if acc.name.is_none() {
        // An a[n] access: only its offset and size can be relocated.
        return match kind {
            RelocKind::FieldByteOffset => Ok(Value::Known {
                val: u64::from(spec.bit_offset / 8),
                field_sz: element_size(btf, acc.type_id)?,
                type_id: acc.type_id,
                validate: true,
            }),
            RelocKind::FieldByteSize => Ok(Value::Known {
                val: btf
                    .resolve_size(acc.type_id)
                    .map_err(|_| invalid("array element has no size"))?,
                field_sz: 0,
                type_id: 0,
                validate: true,
            }),
            _ => Err(invalid(
                "relocation kind cannot be applied to an array access",
            )),
        };
    }
    let parent = btf.type_by_id(acc.type_id)?;
    let composite = parent
        .kind
        .composite()
        .ok_or(invalid("accessor is not a member"))?;
    let member = composite
        .member(acc.idx as usize)
        .ok_or(invalid("member index out of range"))?;
    let field_type = btf.skip_mods_and_typedefs(member.type_id)?;
    let bit_off = spec.bit_offset;
    let mut bit_sz = member.bitfield_size;
    let bitfield = bit_sz > 0;
    let (byte_off, byte_sz) = if bitfield {
        let mut byte_sz = field_type
            .size()
            .ok_or(invalid("bitfield of a type without size"))?;
        if byte_sz == 0 {
            return Err(invalid("bitfield of a zero-sized type"));
        }
        let mut byte_off = bit_off / 8 / byte_sz * byte_sz;
        // Smallest power-of-two load that covers the whole bitfield.
        while u64::from(bit_off) + u64::from(bit_sz) - u64::from(byte_off) * 8
            > u64::from(byte_sz) * 8
        {
            if byte_sz >= 8 {
                return Err(invalid("bitfield cannot be read with a 64-bit load"));
            }
            byte_sz *= 2;
            byte_off = bit_off / 8 / byte_sz * byte_sz;
        }
        (byte_off, byte_sz)
    } else {
        let size = btf
            .resolve_size(field_type.id)
            .map_err(|_| invalid("field has no size"))?;
        let byte_sz = u32::try_from(size).map_err(|_| invalid("field too large"))?;
        bit_sz = byte_sz.wrapping_mul(8);
        (bit_off / 8, byte_sz)
    };
    // Bitfield offsets and sizes may legitimately differ from what the compiler emitted, so
    // only signedness and right shifts are validated for them.
    let mut validate = !bitfield;
    let (val, field_sz, type_id) = match kind {
        RelocKind::FieldByteOffset => {
            if bitfield {
                (u64::from(byte_off), 0, 0)
            } else {
                let elem_sz = element_size(btf, field_type.id)?;
                (u64::from(byte_off), elem_sz, field_type.id)
            }
        }
        RelocKind::FieldByteSize => (u64::from(byte_sz), 0, 0),
        RelocKind::FieldSigned => {
            validate = true;
            let signed = match field_type.kind {
                TypeKind::Enum(e) | TypeKind::Enum64(e) => e.signed,
                TypeKind::Int { encoding, .. } => encoding & INT_SIGNED != 0,
                _ => false,
            };
            (u64::from(signed), 0, 0)
        }
        RelocKind::FieldLshiftU64 => {
            let in_word = u64::from(bit_off) - u64::from(byte_off) * 8;
            let val = if target_is_le {
                64u64.wrapping_sub(in_word + u64::from(bit_sz))
            } else {
                (8u64.wrapping_sub(u64::from(byte_sz)))
                    .wrapping_mul(8)
                    .wrapping_add(in_word)
            };
            (val, 0, 0)
        }
        RelocKind::FieldRshiftU64 => {
            validate = true;
            (64u64.wrapping_sub(u64::from(bit_sz)), 0, 0)
        }
        _ => return Err(invalid("not a field relocation")),
    };
    Ok(Value::Known {
        val,
        field_sz,
        type_id,
        validate,
    })
}

fn type_value(btf: &Btf<'_>, kind: RelocKind, spec: Option<&Spec<'_>>) -> Result<Value> {
    let Some(spec) = spec else {
        return Ok(Value::Known {
            val: 0,
            field_sz: 0,
            type_id: 0,
            validate: true,
        });
    };
    let (val, validate) = match kind {
        // Type ids change during linking, so the compiled value is never checked.
        RelocKind::TypeIdTarget => (u64::from(spec.root_type_id), false),
        RelocKind::TypeExists | RelocKind::TypeMatches => (1, true),
        RelocKind::TypeSize => (
            btf.resolve_size(spec.root_type_id)
                .map_err(|_| invalid("type has no size"))?,
            true,
        ),
        _ => return Err(invalid("not a type relocation")),
    };
    Ok(Value::Known {
        val,
        field_sz: 0,
        type_id: 0,
        validate,
    })
}

fn enum_value(btf: &Btf<'_>, kind: RelocKind, spec: Option<&Spec<'_>>) -> Result<Value> {
    let known = |val| {
        Ok(Value::Known {
            val,
            field_sz: 0,
            type_id: 0,
            validate: true,
        })
    };
    match kind {
        RelocKind::EnumvalExists => known(u64::from(spec.is_some())),
        RelocKind::EnumvalValue => {
            let Some(spec) = spec else {
                return Ok(Value::Poison);
            };
            let acc = spec.accessors.first().ok_or(invalid("empty spec"))?;
            let ty = btf.type_by_id(acc.type_id)?;
            let values = ty
                .kind
                .any_enum()
                .ok_or(invalid("enum accessor is not an enum"))?;
            let v = values
                .value(acc.idx as usize)
                .ok_or(invalid("enumerator index out of range"))?;
            // ENUM values are signed 32-bit in libbpf's struct and sign-extend into the u64.
            known(v.signed_value() as u64)
        }
        _ => Err(invalid("not an enum relocation")),
    }
}

fn value(
    btf: &Btf<'_>,
    kind: RelocKind,
    spec: Option<&Spec<'_>>,
    target_is_le: bool,
) -> Result<Value> {
    if kind.is_field_based() {
        field_value(btf, kind, spec, target_is_le)
    } else if kind.is_type_based() {
        type_value(btf, kind, spec)
    } else {
        enum_value(btf, kind, spec)
    }
}

/// Compute the resolution for one candidate (`targ = Some`) or for "no candidate matched"
/// (`targ = None`). `target_is_le` is the byte order of the BPF target, which decides the
/// bitfield left-shift.
pub fn calc_relo(
    local_btf: &Btf<'_>,
    local: &Spec<'_>,
    targ_btf: &Btf<'_>,
    targ: Option<&Spec<'_>>,
    target_is_le: bool,
) -> Result<Resolution> {
    let kind = local.kind;
    let mut res = Resolution {
        validate: true,
        ..Resolution::default()
    };
    let orig = value(local_btf, kind, Some(local), target_is_le)?;
    let new = value(targ_btf, kind, targ, target_is_le)?;
    match (orig, new) {
        (
            Value::Known {
                val,
                field_sz,
                type_id,
                validate,
            },
            Value::Known {
                val: nval,
                field_sz: nsz,
                type_id: ntid,
                ..
            },
        ) => {
            res.orig_val = val;
            res.orig_sz = field_sz;
            res.orig_type_id = type_id;
            res.validate = validate;
            res.new_val = nval;
            res.new_sz = nsz;
            res.new_type_id = ntid;
        }
        (
            Value::Known {
                val,
                field_sz,
                type_id,
                validate,
            },
            Value::Poison,
        ) => {
            res.orig_val = val;
            res.orig_sz = field_sz;
            res.orig_type_id = type_id;
            res.validate = validate;
            res.poison = Some(PoisonReason::NoMatch);
            return Ok(res);
        }
        (Value::Poison, _) => {
            res.poison = Some(PoisonReason::NoMatch);
            return Ok(res);
        }
    }
    if kind.is_field_based() && res.orig_sz != res.new_sz {
        let orig_t = local_btf.type_by_id(res.orig_type_id)?;
        let new_t = targ_btf.type_by_id(res.new_type_id)?;
        let unsigned_int = |t: &TypeKind<'_>| matches!(t, TypeKind::Int { encoding, .. } if *encoding != INT_SIGNED);
        let safe = matches!(
            (&orig_t.kind, &new_t.kind),
            (TypeKind::Ptr(_), TypeKind::Ptr(_))
        ) || (unsigned_int(&orig_t.kind) && unsigned_int(&new_t.kind));
        res.fail_memsz_adjust = !safe;
    }
    Ok(res)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::btf::write::BtfWriter;
    use crate::btf::{Endianness, Kind};
    use crate::core::spec::Accessor;

    /// A struct `s` with an `unsigned int` bitfield `f` of `bits` bits at `bit_off`, built with
    /// kind_flag member offsets.
    fn bitfield_btf(bit_off: u32, bits: u32, storage: u32) -> alloc::vec::Vec<u8> {
        let mut w = BtfWriter::new(Endianness::Little).unwrap();
        let int = w
            .begin_type("unsigned int", Kind::Int, false, 0, storage)
            .unwrap();
        w.push_word(storage * 8).unwrap();
        let name = w.add_string("f").unwrap();
        w.begin_type("s", Kind::Struct, true, 1, 16).unwrap();
        for word in [name, int, (bits << 24) | bit_off] {
            w.push_word(word).unwrap();
        }
        w.finish().unwrap()
    }

    fn value_of(btf: &Btf<'_>, kind: RelocKind, bit_off: u32, little_endian: bool) -> u64 {
        let mut spec = Spec::new(2, kind);
        spec.push_accessor(Accessor {
            type_id: 2,
            idx: 0,
            name: None,
        })
        .unwrap();
        spec.push_accessor(Accessor {
            type_id: 2,
            idx: 0,
            name: Some("f"),
        })
        .unwrap();
        spec.bit_offset = bit_off;
        match field_value(btf, kind, Some(&spec), little_endian).unwrap() {
            Value::Known { val, .. } => val,
            Value::Poison => panic!("poisoned"),
        }
    }

    /// Load/store sizes of array fields follow libbpf 1.6+ (`bpf_core_calc_field_relo`): the
    /// innermost element's size, through typedefs and modifiers; other fields their own size.
    #[test]
    fn element_size_is_the_innermost_element() {
        let mut w = BtfWriter::new(Endianness::Little).unwrap();
        let int = w.begin_type("int", Kind::Int, false, 0, 4).unwrap();
        w.push_word((1 << 24) | 32).unwrap();
        let char_ = w.begin_type("char", Kind::Int, false, 0, 1).unwrap();
        w.push_word(8).unwrap();
        let array = |w: &mut BtfWriter, elem: u32, n: u32| {
            let id = w.begin_type("", Kind::Array, false, 0, 0).unwrap();
            for word in [elem, int, n] {
                w.push_word(word).unwrap();
            }
            id
        };
        let row = array(&mut w, int, 3);
        let grid = array(&mut w, row, 2);
        let comm = array(&mut w, char_, 16);
        let row_t = w.begin_type("row_t", Kind::Typedef, false, 0, row).unwrap();
        let const_row = w.begin_type("", Kind::Const, false, 0, row_t).unwrap();
        let rows = array(&mut w, const_row, 4);
        let data = w.finish().unwrap();
        let btf = Btf::parse(&data).unwrap();
        assert_eq!(element_size(&btf, int).unwrap(), 4);
        assert_eq!(element_size(&btf, grid).unwrap(), 4);
        assert_eq!(element_size(&btf, comm).unwrap(), 1);
        assert_eq!(element_size(&btf, rows).unwrap(), 4);
        assert_eq!(btf.resolve_size(rows).unwrap(), 48);
    }

    /// libbpf's bitfield formulas (relo_core.c, `bpf_core_calc_field_relo`): the load covers
    /// the bitfield with the smallest power-of-two size at a multiple of that size; the left
    /// shift depends on the byte order the program runs with, the right shift does not. The
    /// expected numbers are worked out by hand from those formulas.
    #[test]
    fn bitfield_shifts_follow_libbpf_for_both_byte_orders() {
        // 4 bits at bit 3 of a 4-byte int: one 4-byte load at offset 0.
        let data = bitfield_btf(3, 4, 4);
        let btf = Btf::parse(&data).unwrap();
        assert_eq!(value_of(&btf, RelocKind::FieldByteOffset, 3, true), 0);
        assert_eq!(value_of(&btf, RelocKind::FieldByteSize, 3, true), 4);
        assert_eq!(value_of(&btf, RelocKind::FieldRshiftU64, 3, true), 60);
        assert_eq!(
            value_of(&btf, RelocKind::FieldLshiftU64, 3, true),
            64 - (3 + 4)
        );
        assert_eq!(
            value_of(&btf, RelocKind::FieldLshiftU64, 3, false),
            (8 - 4) * 8 + 3
        );

        // 5 bits at bit 30 straddle the first 4-byte word: the load widens to 8 bytes.
        let data = bitfield_btf(30, 5, 4);
        let btf = Btf::parse(&data).unwrap();
        assert_eq!(value_of(&btf, RelocKind::FieldByteSize, 30, true), 8);
        assert_eq!(value_of(&btf, RelocKind::FieldByteOffset, 30, true), 0);
        assert_eq!(
            value_of(&btf, RelocKind::FieldLshiftU64, 30, true),
            64 - (30 + 5)
        );
        assert_eq!(value_of(&btf, RelocKind::FieldLshiftU64, 30, false), 30);
        assert_eq!(value_of(&btf, RelocKind::FieldRshiftU64, 30, false), 59);

        // 3 bits at bit 45 of a 4-byte int: a 4-byte load at offset 4, bit 13 within it.
        let data = bitfield_btf(45, 3, 4);
        let btf = Btf::parse(&data).unwrap();
        assert_eq!(value_of(&btf, RelocKind::FieldByteOffset, 45, true), 4);
        assert_eq!(
            value_of(&btf, RelocKind::FieldLshiftU64, 45, true),
            64 - (13 + 3)
        );
        assert_eq!(
            value_of(&btf, RelocKind::FieldLshiftU64, 45, false),
            (8 - 4) * 8 + 13
        );
        assert_eq!(value_of(&btf, RelocKind::FieldSigned, 45, false), 0);
    }
}
