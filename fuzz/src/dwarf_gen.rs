//! A generator of DWARF type trees for the `dwarf_structured` target: every type DIE the
//! converter reads (base types, pointers with `btf_type_tag`s, const/volatile/restrict/
//! `_Atomic`, typedefs, structs/unions/classes with members and bit-fields, forward
//! declarations, enums of every size and signedness, arrays with subranges, subroutine types,
//! functions with `btf_decl_tag`s) with references backward, forward, across units and in
//! cycles, and some that are bad on purpose (raw offsets anywhere in `.debug_info`, unknown
//! type signatures, forms that are no reference). Written as DWARF 4 or 5 (32- or 64-bit
//! format, either byte order) by `gimli::write`, and wrapped in a minimal ELF file (32- or
//! 64-bit, optionally with a `.symtab` of function symbols). [`corrupt`] then flips bytes of
//! the result where the input says.

use arbitrary::{Result, Unstructured};
use gimli::write::{
    self, AttributeValue as V, Dwarf, EndianVec, Expression, LineProgram, Reference, Sections,
    Unit, UnitEntryId, UnitId, Writer,
};
use gimli::{DebugInfoOffset, DwAte, DwTag, Encoding, Format, RunTimeEndian, constants as dw};
use std::ops::Range;

/// `DW_TAG_LLVM_annotation` (clang's `btf_type_tag` and `btf_decl_tag`).
const DW_TAG_LLVM_ANNOTATION: DwTag = DwTag(0x6000);
/// At most this many type DIEs over all units.
const MAX_DIES: usize = 64;
/// At most this many children (members, enumerators, parameters, subranges) per DIE.
const MAX_CHILDREN: usize = 12;
/// Names drawn from a small set, so that deduplication sees equal and clashing names.
const NAMES: [&[u8]; 12] = [
    b"a",
    b"b",
    b"s",
    b"u",
    b"int",
    b"long",
    b"char",
    b"f",
    b"list",
    b"btf_type_tag",
    b"btf_decl_tag",
    b"__u64",
];

/// A writer that writes `Reference::Symbol(n)` as the raw offset `n`: references to any
/// offset of `.debug_info`, in range or not.
#[derive(Clone, Debug)]
struct RawRefs(EndianVec<RunTimeEndian>);

impl Writer for RawRefs {
    type Endian = RunTimeEndian;

    fn endian(&self) -> RunTimeEndian {
        self.0.endian()
    }

    fn len(&self) -> usize {
        self.0.len()
    }

    fn write(&mut self, bytes: &[u8]) -> write::Result<()> {
        self.0.write(bytes)
    }

    fn write_at(&mut self, offset: usize, bytes: &[u8]) -> write::Result<()> {
        self.0.write_at(offset, bytes)
    }

    fn write_reference(&mut self, symbol: usize, size: u8) -> write::Result<()> {
        self.write_udata(symbol as u64, size)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Shape {
    Base,
    Pointer,
    Const,
    Volatile,
    Restrict,
    Atomic,
    Typedef,
    Struct,
    Union,
    Class,
    Fwd,
    Enum,
    Array,
    Subroutine,
    Subprogram,
    /// A DIE BTF has no kind for (C++ reference, unspecified type, variable, ...).
    Other,
}

const SHAPES: [Shape; 16] = [
    Shape::Base,
    Shape::Pointer,
    Shape::Const,
    Shape::Volatile,
    Shape::Restrict,
    Shape::Atomic,
    Shape::Typedef,
    Shape::Struct,
    Shape::Union,
    Shape::Class,
    Shape::Fwd,
    Shape::Enum,
    Shape::Array,
    Shape::Subroutine,
    Shape::Subprogram,
    Shape::Other,
];

/// A generated ELF file and where its sections are in it (name, byte range).
pub struct Generated {
    pub elf: Vec<u8>,
    pub sections: Vec<(&'static str, Range<usize>)>,
}

struct Gen {
    dwarf: Dwarf,
    units: Vec<UnitId>,
    /// Every DIE made: unit index, id, shape.
    dies: Vec<(usize, UnitEntryId, Shape)>,
    version: u16,
    /// Tame: DWARF a compiler could write (names that BTF requires, UTF-8, sizes BTF has,
    /// value references only backward, members in order within their struct), so that most
    /// files convert and the conversion's later stages run. Wild: anything.
    tame: bool,
    /// The DIE being filled (its index in `dies`), and whether its references may point
    /// forward (a pointer's: a cycle through a pointer is a valid one).
    current: usize,
    forward_ok: bool,
    /// Whether the type being chosen must not be `void` when tame (an array's element).
    type_required: bool,
}

/// A value worth trying for sizes, offsets and enumerator values.
fn interesting(u: &mut Unstructured<'_>) -> Result<u64> {
    Ok(match u.int_in_range(0u8..=9)? {
        0..=3 => u.int_in_range(0u64..=16)?,
        4 => 1u64 << u.int_in_range(0u32..=63)?,
        5 => (1u64 << u.int_in_range(0u32..=63)?).wrapping_sub(1),
        6 => *u.choose(&[
            u64::MAX,
            i64::MAX as u64,
            i64::MIN as u64,
            u32::MAX.into(),
            i32::MAX as u64,
            i32::MIN as i64 as u64,
            (i32::MIN as i64 - 1) as u64,
            1 << 24,
            (1 << 24) - 1,
            256,
            255,
        ])?,
        7 => u.int_in_range(0u64..=4096)?,
        _ => u.arbitrary()?,
    })
}

/// `v` as one of the constant forms (truncated to the form's size).
fn constant(u: &mut Unstructured<'_>, v: u64) -> Result<V> {
    Ok(match u.int_in_range(0u8..=5)? {
        0 => V::Data1(v as u8),
        1 => V::Data2(v as u16),
        2 => V::Data4(v as u32),
        3 => V::Data8(v),
        4 => V::Udata(v),
        _ => V::Sdata(v as i64),
    })
}

fn uleb(mut v: u64, out: &mut Vec<u8>) {
    loop {
        let byte = (v & 0x7f) as u8;
        v >>= 7;
        if v == 0 {
            out.push(byte);
            return;
        }
        out.push(byte | 0x80);
    }
}

impl Gen {
    fn unit(&mut self, index: usize) -> &mut Unit {
        self.dwarf.units.get_mut(self.units[index])
    }

    fn set(&mut self, unit: usize, id: UnitEntryId, attr: gimli::DwAt, value: V) {
        self.unit(unit).get_mut(id).set(attr, value);
    }

    fn add(&mut self, unit: usize, parent: UnitEntryId, tag: DwTag) -> UnitEntryId {
        self.unit(unit).add(parent, tag)
    }

    /// A name: from [`NAMES`] mostly, as an inline string, in `.debug_str` or (DWARF 5) in
    /// `.debug_line_str`.
    fn name_value(&mut self, u: &mut Unstructured<'_>) -> Result<V> {
        let pick = if self.tame {
            u.int_in_range(0u8..=6)?
        } else {
            u.int_in_range(0u8..=9)?
        };
        let mut bytes = match pick {
            0..=6 => u.choose(&NAMES)?.to_vec(),
            7 => {
                let len = u.int_in_range(0usize..=12)?;
                u.bytes(len)?.to_vec() // maybe not UTF-8
            }
            8 => vec![b'n'; u.int_in_range(1usize..=300)?],
            _ => Vec::new(),
        };
        bytes.retain(|&b| b != 0);
        Ok(match u.int_in_range(0u8..=3)? {
            0 | 1 => V::String(bytes),
            2 => V::StringRef(self.dwarf.strings.add(bytes)),
            _ if self.version >= 5 => V::LineStringRef(self.dwarf.line_strings.add(bytes)),
            _ => V::StringRef(self.dwarf.strings.add(bytes)),
        })
    }

    /// A name, sometimes none (`required`: always one when tame).
    fn maybe_name(
        &mut self,
        u: &mut Unstructured<'_>,
        unit: usize,
        id: UnitEntryId,
        required: bool,
    ) -> Result<()> {
        if (self.tame && required) || u.ratio(3u8, 4)? {
            let name = self.name_value(u)?;
            self.set(unit, id, dw::DW_AT_name, name);
        }
        Ok(())
    }

    /// A `DW_AT_type` (or other reference) value, `None` for `void`.
    fn reference(&mut self, u: &mut Unstructured<'_>, from: usize) -> Result<Option<V>> {
        if self.tame {
            // Backward, or (from a pointer) to a struct or union anywhere: a cycle of
            // references passes through a pointer and a struct, as in C.
            let candidates: Vec<usize> = (0..self.dies.len())
                .filter(|&i| {
                    let shape = self.dies[i].2;
                    (i < self.current
                        || self.forward_ok
                            && matches!(
                                shape,
                                Shape::Struct | Shape::Union | Shape::Class | Shape::Fwd
                            ))
                        && !(self.type_required
                            && matches!(shape, Shape::Subprogram | Shape::Other))
                })
                .collect();
            if candidates.is_empty() || (!self.type_required && u.ratio(1u8, 8)?) {
                return Ok(None);
            }
            let (unit, id, _) = self.dies[*u.choose(&candidates)?];
            return Ok(Some(if unit == from && u.ratio(3u8, 4)? {
                V::UnitRef(id)
            } else {
                V::DebugInfoRef(Reference::Entry(self.units[unit], id))
            }));
        }
        Ok(match u.int_in_range(0u8..=19)? {
            0 | 1 => None,
            // A raw offset into .debug_info: a unit header, the middle of a DIE, past the end.
            2 => Some(V::DebugInfoRef(Reference::Symbol(
                u.int_in_range(0usize..=1 << 12)?,
            ))),
            3 => Some(V::DebugTypesRef(gimli::DebugTypeSignature(u.arbitrary()?))),
            4 => Some(match u.int_in_range(0u8..=2)? {
                0 => V::Data4(u.arbitrary()?),
                1 => V::DebugInfoRefSup(DebugInfoOffset(u.int_in_range(0usize..=64)?)),
                _ => V::Flag(true),
            }),
            _ => {
                let (unit, id, _) = *u.choose(&self.dies)?;
                if unit == from && u.ratio(3u8, 4)? {
                    Some(V::UnitRef(id))
                } else {
                    Some(V::DebugInfoRef(Reference::Entry(self.units[unit], id)))
                }
            }
        })
    }

    fn maybe_type(
        &mut self,
        u: &mut Unstructured<'_>,
        unit: usize,
        id: UnitEntryId,
        attr: gimli::DwAt,
    ) -> Result<()> {
        if let Some(value) = self.reference(u, unit)? {
            self.set(unit, id, attr, value);
        }
        Ok(())
    }

    fn maybe_constant(
        &mut self,
        u: &mut Unstructured<'_>,
        unit: usize,
        id: UnitEntryId,
        attr: gimli::DwAt,
        odds: u8,
    ) -> Result<()> {
        if u.ratio(odds, 8)? {
            let v = interesting(u)?;
            let value = constant(u, v)?;
            self.set(unit, id, attr, value);
        }
        Ok(())
    }

    /// `DW_TAG_LLVM_annotation` children: `btf_type_tag` (under pointers) or `btf_decl_tag`.
    fn annotations(
        &mut self,
        u: &mut Unstructured<'_>,
        unit: usize,
        parent: UnitEntryId,
        kind: &'static [u8],
    ) -> Result<()> {
        let count = if u.ratio(1u8, 3)? {
            u.int_in_range(1usize..=3)?
        } else {
            0
        };
        for _ in 0..count {
            let child = self.add(unit, parent, DW_TAG_LLVM_ANNOTATION);
            let name = if self.tame || u.ratio(7u8, 8)? {
                V::String(kind.to_vec())
            } else {
                self.name_value(u)?
            };
            self.set(unit, child, dw::DW_AT_name, name);
            if self.tame || u.ratio(7u8, 8)? {
                let value = self.name_value(u)?;
                self.set(unit, child, dw::DW_AT_const_value, value);
            }
        }
        Ok(())
    }

    fn flag(
        &mut self,
        u: &mut Unstructured<'_>,
        unit: usize,
        id: UnitEntryId,
        attr: gimli::DwAt,
    ) -> Result<()> {
        match u.int_in_range(0u8..=3)? {
            0 => self.set(unit, id, attr, V::FlagPresent),
            1 => self.set(unit, id, attr, V::Flag(u.arbitrary()?)),
            _ => {}
        }
        Ok(())
    }

    /// A member of a struct or union (or another child): `cursor` is where the next member
    /// starts (bytes) when tame, `size` the struct's size.
    fn member(
        &mut self,
        u: &mut Unstructured<'_>,
        unit: usize,
        parent: UnitEntryId,
        union: bool,
        size: u64,
        cursor: &mut u64,
    ) -> Result<()> {
        let tag = match u.int_in_range(0u8..=15)? {
            0 => dw::DW_TAG_inheritance,
            1 => dw::DW_TAG_subprogram,
            2 => DW_TAG_LLVM_ANNOTATION,
            3 => dw::DW_TAG_variable,
            _ => dw::DW_TAG_member,
        };
        let member = self.add(unit, parent, tag);
        self.maybe_name(u, unit, member, false)?;
        self.maybe_type(u, unit, member, dw::DW_AT_type)?;
        // Tame: a bit-field's 4-byte storage unit within the struct.
        let bitfield = u.ratio(1u8, 3)? && (!self.tame || *cursor + 4 <= size);
        // Tame: the member's byte offset, in order, within the struct.
        let offset = if union {
            0
        } else {
            let end = if bitfield {
                size.saturating_sub(4)
            } else {
                size
            };
            let o = (*cursor + u.int_in_range(0u64..=8)?).min(end);
            *cursor = (o + if bitfield { 4 } else { 1 }).min(size);
            o
        };
        let value = |u: &mut Unstructured<'_>, tame: u64| -> Result<u64> {
            if self.tame { Ok(tame) } else { interesting(u) }
        };
        // A tame union's bit-field: DW_AT_data_bit_offset 0 (DWARF 2's offset from the most
        // significant bit would put it elsewhere on little-endian targets).
        let how = if self.tame && union && bitfield {
            5
        } else {
            u.int_in_range(0u8..=5)?
        };
        let data_bit_offset = match how {
            0 if !self.tame || offset == 0 => false,
            0..=2 => {
                let v = value(u, offset)?;
                let value = constant(u, v)?;
                self.set(unit, member, dw::DW_AT_data_member_location, value);
                false
            }
            3 => {
                // DWARF 2's location expression: DW_OP_plus_uconst N, or something else.
                let mut expr = Vec::new();
                if self.tame || u.ratio(3u8, 4)? {
                    expr.push(dw::DW_OP_plus_uconst.0);
                    uleb(value(u, offset)?, &mut expr);
                    if !self.tame && u.ratio(1u8, 4)? {
                        expr.pop(); // truncated
                    }
                } else {
                    let len = u.int_in_range(0usize..=6)?;
                    expr.extend_from_slice(u.bytes(len)?);
                }
                self.set(
                    unit,
                    member,
                    dw::DW_AT_data_member_location,
                    V::Exprloc(Expression::raw(expr)),
                );
                false
            }
            _ => {
                let within = if bitfield && !union {
                    u.int_in_range(0u64..=7)?
                } else {
                    0
                };
                let v = value(u, offset * 8 + within)?;
                let value = constant(u, v)?;
                self.set(unit, member, dw::DW_AT_data_bit_offset, value);
                true
            }
        };
        if bitfield {
            let bits = if self.tame {
                u.int_in_range(1u64..=16)?
            } else if u.ratio(3u8, 4)? {
                u.int_in_range(0u64..=65)?
            } else {
                interesting(u)?
            };
            let value = constant(u, bits)?;
            self.set(unit, member, dw::DW_AT_bit_size, value);
            if self.tame {
                if !data_bit_offset && !union {
                    // DWARF 2/3: from the 4-byte storage unit's most significant bit.
                    let from_msb = u.int_in_range(0..=32 - bits)?;
                    self.set(unit, member, dw::DW_AT_bit_offset, V::Udata(from_msb));
                    self.set(unit, member, dw::DW_AT_byte_size, V::Data1(4));
                }
            } else {
                // DWARF 2/3 bit-fields: offset from the storage unit's most significant bit.
                self.maybe_constant(u, unit, member, dw::DW_AT_bit_offset, 4)?;
                self.maybe_constant(u, unit, member, dw::DW_AT_byte_size, 3)?;
            }
        }
        self.annotations(u, unit, member, b"btf_decl_tag")
    }

    /// An enumerator (or another child) of an enum of `size` bytes.
    fn enumerator(
        &mut self,
        u: &mut Unstructured<'_>,
        unit: usize,
        parent: UnitEntryId,
        size: u64,
    ) -> Result<()> {
        let tag = if self.tame || u.ratio(15u8, 16)? {
            dw::DW_TAG_enumerator
        } else {
            dw::DW_TAG_member
        };
        let child = self.add(unit, parent, tag);
        self.maybe_name(u, unit, child, true)?;
        if self.tame || u.ratio(7u8, 8)? {
            let v = if self.tame && size <= 4 {
                // What a 4-byte BTF enum holds: i32 or u32.
                if u.ratio(1u8, 8)? {
                    u64::from(u.arbitrary::<u32>()?)
                } else {
                    i64::from(u.arbitrary::<i32>()?) as u64
                }
            } else {
                interesting(u)?
            };
            let value = match u.int_in_range(0u8..=7)? {
                7 if !self.tame => V::Block(v.to_le_bytes().to_vec()),
                _ if self.tame => {
                    if u.arbitrary()? {
                        V::Sdata(v as i64)
                    } else {
                        V::Data8(v)
                    }
                }
                _ => constant(u, v)?,
            };
            self.set(unit, child, dw::DW_AT_const_value, value);
        }
        Ok(())
    }

    fn subrange(
        &mut self,
        u: &mut Unstructured<'_>,
        unit: usize,
        parent: UnitEntryId,
    ) -> Result<()> {
        let tag = if self.tame || u.ratio(15u8, 16)? {
            dw::DW_TAG_subrange_type
        } else {
            dw::DW_TAG_enumeration_type
        };
        let child = self.add(unit, parent, tag);
        self.maybe_type(u, unit, child, dw::DW_AT_type)?;
        match u.int_in_range(0u8..=4)? {
            0 => {}
            1 => self.set(unit, child, dw::DW_AT_upper_bound, V::Sdata(-1)), // flexible array
            2 if self.tame => {
                let count = u.int_in_range(0u64..=16)?;
                let value = constant(u, count)?;
                self.set(unit, child, dw::DW_AT_count, value);
            }
            2 => self.maybe_constant(u, unit, child, dw::DW_AT_count, 8)?,
            3 if !self.tame => self.set(unit, child, dw::DW_AT_upper_bound, V::Flag(true)),
            _ => {
                let v = if self.tame || u.arbitrary()? {
                    u.int_in_range(0u64..=64)?
                } else {
                    interesting(u)?
                };
                let value = constant(u, v)?;
                self.set(unit, child, dw::DW_AT_upper_bound, value);
            }
        }
        self.maybe_constant(u, unit, child, dw::DW_AT_lower_bound, 1)
    }

    fn parameter(
        &mut self,
        u: &mut Unstructured<'_>,
        unit: usize,
        parent: UnitEntryId,
        named: bool,
    ) -> Result<()> {
        let tag = match u.int_in_range(0u8..=9)? {
            0 => dw::DW_TAG_unspecified_parameters,
            1 => DW_TAG_LLVM_ANNOTATION,
            2 => dw::DW_TAG_variable,
            _ => dw::DW_TAG_formal_parameter,
        };
        let child = self.add(unit, parent, tag);
        if tag == DW_TAG_LLVM_ANNOTATION {
            self.set(
                unit,
                child,
                dw::DW_AT_name,
                V::String(b"btf_decl_tag".to_vec()),
            );
            let value = self.name_value(u)?;
            self.set(unit, child, dw::DW_AT_const_value, value);
            return Ok(());
        }
        if named && u.ratio(7u8, 8)? || u.ratio(1u8, 4)? {
            let name = self.name_value(u)?;
            self.set(unit, child, dw::DW_AT_name, name);
        }
        self.maybe_type(u, unit, child, dw::DW_AT_type)?;
        if tag == dw::DW_TAG_formal_parameter {
            self.annotations(u, unit, child, b"btf_decl_tag")?;
        }
        Ok(())
    }

    fn children(&mut self, u: &mut Unstructured<'_>) -> Result<usize> {
        if !self.tame && u.ratio(1u8, 16)? {
            // Past pahole's 64 array dimensions, BTF's member limits are far away.
            u.int_in_range(60usize..=70)
        } else {
            u.int_in_range(0usize..=MAX_CHILDREN)
        }
    }

    /// Every attribute and child of DIE `index`, by its shape.
    fn fill(&mut self, u: &mut Unstructured<'_>, index: usize) -> Result<()> {
        let (unit, id, shape) = self.dies[index];
        self.current = index;
        self.forward_ok = shape == Shape::Pointer;
        if u.ratio(1u8, 8)? {
            let sibling = u.arbitrary()?;
            self.unit(unit).get_mut(id).set_sibling(sibling);
        }
        match shape {
            Shape::Base => {
                self.maybe_name(u, unit, id, false)?;
                let size = match u.int_in_range(0u8..=3)? {
                    _ if self.tame => *u.choose(&[2u64, 4, 8, 16])?,
                    0 => interesting(u)?,
                    _ => *u.choose(&[1u64, 2, 4, 8, 16, 0, 3, 12, 32])?,
                };
                let value = constant(u, size)?;
                if self.tame || u.ratio(15u8, 16)? {
                    self.set(unit, id, dw::DW_AT_byte_size, value);
                }
                let tame = [
                    dw::DW_ATE_signed,
                    dw::DW_ATE_unsigned,
                    dw::DW_ATE_signed_char,
                    dw::DW_ATE_unsigned_char,
                    dw::DW_ATE_boolean,
                    dw::DW_ATE_float,
                    dw::DW_ATE_UTF,
                ];
                let wild = [
                    dw::DW_ATE_complex_float,
                    dw::DW_ATE_imaginary_float,
                    DwAte(0),
                    DwAte(0xff),
                ];
                let encoding = if self.tame || u.ratio(3u8, 4)? {
                    *u.choose(&tame)?
                } else {
                    *u.choose(&wild)?
                };
                match u.int_in_range(0u8..=7)? {
                    0 => {}
                    1 => {
                        let value = constant(u, encoding.0.into())?;
                        self.set(unit, id, dw::DW_AT_encoding, value);
                    }
                    _ => self.set(unit, id, dw::DW_AT_encoding, V::Encoding(encoding)),
                }
                if !self.tame && u.ratio(1u8, 8)? {
                    self.maybe_constant(u, unit, id, dw::DW_AT_bit_size, 8)?;
                }
            }
            Shape::Pointer => {
                self.maybe_type(u, unit, id, dw::DW_AT_type)?;
                self.maybe_constant(u, unit, id, dw::DW_AT_byte_size, 2)?;
                self.annotations(u, unit, id, b"btf_type_tag")?;
            }
            Shape::Const | Shape::Volatile | Shape::Restrict | Shape::Atomic => {
                self.maybe_type(u, unit, id, dw::DW_AT_type)?;
            }
            Shape::Typedef => {
                self.maybe_name(u, unit, id, true)?;
                self.maybe_type(u, unit, id, dw::DW_AT_type)?;
                self.annotations(u, unit, id, b"btf_decl_tag")?;
            }
            Shape::Struct | Shape::Union | Shape::Class | Shape::Fwd => {
                self.maybe_name(u, unit, id, shape == Shape::Fwd)?;
                if shape == Shape::Fwd {
                    let flag = if self.tame || u.ratio(7u8, 8)? {
                        V::FlagPresent
                    } else {
                        V::Flag(u.arbitrary()?)
                    };
                    self.set(unit, id, dw::DW_AT_declaration, flag);
                    if u.ratio(1u8, 4)? {
                        return Ok(());
                    }
                }
                let size = if self.tame {
                    let size = u.int_in_range(0u64..=64)?;
                    let value = constant(u, size)?;
                    self.set(unit, id, dw::DW_AT_byte_size, value);
                    size
                } else {
                    self.maybe_constant(u, unit, id, dw::DW_AT_byte_size, 7)?;
                    0
                };
                let union = self.unit(unit).get(id).tag() == dw::DW_TAG_union_type;
                let mut cursor = 0;
                for _ in 0..self.children(u)? {
                    self.member(u, unit, id, union, size, &mut cursor)?;
                }
                self.annotations(u, unit, id, b"btf_decl_tag")?;
            }
            Shape::Enum => {
                self.maybe_name(u, unit, id, false)?;
                let mut size = 4;
                if u.ratio(3u8, 4)? {
                    size = if self.tame {
                        *u.choose(&[1u64, 2, 4, 8])?
                    } else if u.ratio(3u8, 4)? {
                        *u.choose(&[1u64, 2, 4, 8, 0, 16, 3])?
                    } else {
                        interesting(u)?
                    };
                    let value = constant(u, size)?;
                    self.set(unit, id, dw::DW_AT_byte_size, value);
                }
                self.maybe_type(u, unit, id, dw::DW_AT_type)?;
                self.flag(u, unit, id, dw::DW_AT_enum_class)?;
                if u.ratio(1u8, 8)? {
                    self.set(unit, id, dw::DW_AT_declaration, V::FlagPresent);
                }
                for _ in 0..self.children(u)? {
                    self.enumerator(u, unit, id, size)?;
                }
            }
            Shape::Array => {
                self.type_required = true;
                self.maybe_type(u, unit, id, dw::DW_AT_type)?;
                self.type_required = false;
                let dimensions = if self.tame {
                    u.int_in_range(0usize..=3)?
                } else {
                    self.children(u)?
                };
                for _ in 0..dimensions {
                    self.subrange(u, unit, id)?;
                }
            }
            Shape::Subroutine | Shape::Subprogram => {
                let function = shape == Shape::Subprogram;
                if function {
                    if u.ratio(7u8, 8)? {
                        let name = self.name_value(u)?;
                        self.set(unit, id, dw::DW_AT_name, name);
                    }
                    self.flag(u, unit, id, dw::DW_AT_external)?;
                    if u.ratio(1u8, 8)? {
                        self.set(unit, id, dw::DW_AT_declaration, V::FlagPresent);
                    }
                    self.annotations(u, unit, id, b"btf_decl_tag")?;
                }
                self.flag(u, unit, id, dw::DW_AT_prototyped)?;
                self.maybe_type(u, unit, id, dw::DW_AT_type)?;
                for _ in 0..u.int_in_range(0usize..=MAX_CHILDREN)? {
                    self.parameter(u, unit, id, function)?;
                }
            }
            Shape::Other => {
                self.maybe_name(u, unit, id, false)?;
                self.maybe_type(u, unit, id, dw::DW_AT_type)?;
            }
        }
        Ok(())
    }
}

/// A DWARF file generated from `u`, wrapped in an ELF file.
/// `tame`: DWARF a compiler could write, most of which converts; else anything.
pub fn generate(u: &mut Unstructured<'_>, tame: bool) -> Result<Generated> {
    let little: bool = u.arbitrary()?;
    let is64 = u.ratio(7u8, 8)?;
    let version = if u.arbitrary()? { 5 } else { 4 };
    let format = if u.ratio(1u8, 8)? {
        Format::Dwarf64
    } else {
        Format::Dwarf32
    };
    let encoding = Encoding {
        format,
        version,
        address_size: if is64 { 8 } else { 4 },
    };
    let mut g = Gen {
        dwarf: Dwarf::new(),
        units: Vec::new(),
        dies: Vec::new(),
        version,
        tame,
        current: 0,
        forward_ok: false,
        type_required: false,
    };
    for _ in 0..u.int_in_range(1usize..=3)? {
        let id = g.dwarf.units.add(Unit::new(encoding, LineProgram::none()));
        g.units.push(id);
        let index = g.units.len() - 1;
        let root = g.unit(index).root();
        g.set(
            index,
            root,
            dw::DW_AT_language,
            V::Language(dw::DW_LANG_C11),
        );
        g.maybe_name(u, index, root, false)?;
    }
    // Every DIE first (so a reference may point forward), then their attributes and children.
    let count = u.int_in_range(1usize..=MAX_DIES)?;
    for _ in 0..count {
        let unit = u.choose_index(g.units.len())?;
        let shape = *u.choose(&SHAPES)?;
        let tag = match shape {
            Shape::Base => dw::DW_TAG_base_type,
            Shape::Pointer => dw::DW_TAG_pointer_type,
            Shape::Const => dw::DW_TAG_const_type,
            Shape::Volatile => dw::DW_TAG_volatile_type,
            Shape::Restrict => dw::DW_TAG_restrict_type,
            Shape::Atomic => dw::DW_TAG_atomic_type,
            Shape::Typedef => dw::DW_TAG_typedef,
            Shape::Struct | Shape::Fwd => *u.choose(&[
                dw::DW_TAG_structure_type,
                dw::DW_TAG_structure_type,
                dw::DW_TAG_union_type,
            ])?,
            Shape::Union => dw::DW_TAG_union_type,
            Shape::Class => dw::DW_TAG_class_type,
            Shape::Enum => dw::DW_TAG_enumeration_type,
            Shape::Array => dw::DW_TAG_array_type,
            Shape::Subroutine => dw::DW_TAG_subroutine_type,
            Shape::Subprogram => dw::DW_TAG_subprogram,
            Shape::Other => *u.choose(&[
                dw::DW_TAG_unspecified_type,
                dw::DW_TAG_reference_type,
                dw::DW_TAG_rvalue_reference_type,
                dw::DW_TAG_ptr_to_member_type,
                dw::DW_TAG_variable,
                dw::DW_TAG_namespace,
                dw::DW_TAG_subrange_type,
                DW_TAG_LLVM_ANNOTATION,
            ])?,
        };
        // Mostly at the unit's top level; sometimes nested in an earlier DIE of the unit
        // (a struct defined in a struct or a function), which is still a type DIE.
        let parents: Vec<UnitEntryId> = g
            .dies
            .iter()
            .filter(|&&(u2, _, s)| {
                u2 == unit && matches!(s, Shape::Struct | Shape::Union | Shape::Subprogram)
            })
            .map(|&(_, id, _)| id)
            .collect();
        let parent = if !parents.is_empty() && u.ratio(1u8, 6)? {
            *u.choose(&parents)?
        } else {
            g.unit(unit).root()
        };
        let id = g.add(unit, parent, tag);
        g.dies.push((unit, id, shape));
    }
    for index in 0..g.dies.len() {
        g.fill(u, index)?;
    }
    let endian = if little {
        RunTimeEndian::Little
    } else {
        RunTimeEndian::Big
    };
    let mut sections = Sections::new(RawRefs(EndianVec::new(endian)));
    // An error here is the writer refusing a combination (a value too large for its form).
    g.dwarf
        .write(&mut sections)
        .map_err(|_| arbitrary::Error::IncorrectFormat)?;
    // Function symbols, for the FUNC encoding's "named by a symbol" rule.
    let symbols: Vec<&[u8]> = if u.ratio(1u8, 3)? {
        let count = u.int_in_range(1usize..=4)?;
        (0..count)
            .map(|_| u.choose(&NAMES).copied())
            .collect::<Result<_>>()?
    } else {
        Vec::new()
    };
    let mut list: Vec<(&'static str, Vec<u8>)> = vec![
        (".debug_abbrev", sections.debug_abbrev.0.0.take()),
        (".debug_info", sections.debug_info.0.0.take()),
        (".debug_str", sections.debug_str.0.0.take()),
    ];
    let line_str = sections.debug_line_str.0.0.take();
    if !line_str.is_empty() {
        list.push((".debug_line_str", line_str));
    }
    Ok(elf(little, is64, &list, &symbols))
}

/// Flip up to three bytes of `generated`, each in a section (or the ELF headers) the input
/// picks.
pub fn corrupt(u: &mut Unstructured<'_>, generated: &mut Generated) -> Result<()> {
    for _ in 0..u.int_in_range(1u8..=3)? {
        let range = if u.ratio(1u8, 8)? {
            0..generated.elf.len()
        } else {
            u.choose(&generated.sections)?.1.clone()
        };
        if range.is_empty() {
            continue;
        }
        let at = range.start + u.choose_index(range.len())?;
        let byte = &mut generated.elf[at];
        *byte = match u.int_in_range(0u8..=3)? {
            0 => 0,
            1 => 0xff,
            2 => 0x80,
            _ => *byte ^ u.int_in_range(1u8..=255)?,
        };
    }
    Ok(())
}

/// A minimal ELF file (`ET_DYN`) holding `sections` (`SHT_PROGBITS`), a `.symtab` of global
/// `STT_FUNC` symbols named `symbols` (when there are any) and `.shstrtab`.
fn elf(
    little: bool,
    is64: bool,
    sections: &[(&'static str, Vec<u8>)],
    symbols: &[&[u8]],
) -> Generated {
    struct Out {
        bytes: Vec<u8>,
        little: bool,
        is64: bool,
    }
    impl Out {
        fn int(&mut self, v: u64, size: usize) {
            let le = v.to_le_bytes();
            let be = v.to_be_bytes();
            if self.little {
                self.bytes.extend_from_slice(&le[..size]);
            } else {
                self.bytes.extend_from_slice(&be[8 - size..]);
            }
        }
        fn word(&mut self, v: u64) {
            self.int(v, if self.is64 { 8 } else { 4 });
        }
        fn align(&mut self) {
            self.bytes.resize(self.bytes.len().next_multiple_of(8), 0);
        }
    }
    const SHT_PROGBITS: u32 = 1;
    const SHT_SYMTAB: u32 = 2;
    const SHT_STRTAB: u32 = 3;
    // (name, type, contents, link, entsize, info)
    let mut all: Vec<(&'static str, u32, Vec<u8>, u32, u64, u32)> = sections
        .iter()
        .map(|(name, data)| (*name, SHT_PROGBITS, data.clone(), 0, 0, 0))
        .collect();
    if !symbols.is_empty() {
        let mut strtab = vec![0u8];
        let mut symtab = Out {
            bytes: Vec::new(),
            little,
            is64,
        };
        symtab.bytes.resize(if is64 { 24 } else { 16 }, 0);
        for name in symbols {
            let off = strtab.len() as u64;
            strtab.extend_from_slice(name);
            strtab.push(0);
            let info = 0x12; // STB_GLOBAL, STT_FUNC
            if is64 {
                symtab.int(off, 4);
                symtab.int(info, 1);
                symtab.int(0, 1);
                symtab.int(1, 2); // st_shndx: the first section
                symtab.int(0x1000, 8);
                symtab.int(16, 8);
            } else {
                symtab.int(off, 4);
                symtab.int(0x1000, 4);
                symtab.int(16, 4);
                symtab.int(info, 1);
                symtab.int(0, 1);
                symtab.int(1, 2);
            }
        }
        let strtab_index = all.len() as u32 + 2; // after the null section and .symtab
        let entsize = if is64 { 24 } else { 16 };
        all.push((
            ".symtab",
            SHT_SYMTAB,
            symtab.bytes,
            strtab_index,
            entsize,
            1,
        ));
        all.push((".strtab", SHT_STRTAB, strtab, 0, 0, 0));
    }
    let mut shstrtab = b"\0.shstrtab\0".to_vec();
    let mut names = Vec::new();
    for (name, ..) in &all {
        names.push(shstrtab.len() as u32);
        shstrtab.extend_from_slice(name.as_bytes());
        shstrtab.push(0);
    }
    let shstrndx = all.len() as u64 + 1;
    all.push((".shstrtab", SHT_STRTAB, shstrtab, 0, 0, 0));
    names.push(1);

    let ehsize = if is64 { 64 } else { 52 };
    let mut out = Out {
        bytes: vec![0; ehsize],
        little,
        is64,
    };
    let mut placed = Vec::new();
    for (name, _, data, ..) in &all {
        out.align();
        let start = out.bytes.len();
        out.bytes.extend_from_slice(data);
        placed.push((*name, start..out.bytes.len()));
    }
    out.align();
    let shoff = out.bytes.len();
    let shentsize = if is64 { 64 } else { 40 };
    out.bytes.resize(shoff + shentsize, 0); // the null section
    for (((_, kind, _, link, entsize, info), (_, range)), &name) in
        all.iter().zip(&placed).zip(&names)
    {
        out.int(name.into(), 4);
        out.int((*kind).into(), 4);
        out.word(0); // flags
        out.word(0); // addr
        out.word(range.start as u64);
        out.word(range.len() as u64);
        out.int((*link).into(), 4);
        out.int((*info).into(), 4);
        out.word(1); // addralign
        out.word(*entsize);
    }
    let headers_end = out.bytes.len();
    let mut header = Out {
        bytes: b"\x7fELF".to_vec(),
        little,
        is64,
    };
    header.bytes.push(if is64 { 2 } else { 1 });
    header.bytes.push(if little { 1 } else { 2 });
    header.bytes.push(1);
    header.bytes.resize(16, 0);
    header.int(3, 2); // ET_DYN
    let machine = match (little, is64) {
        (true, true) => 62,   // x86-64
        (true, false) => 3,   // i386
        (false, true) => 22,  // s390x
        (false, false) => 20, // ppc
    };
    header.int(machine, 2);
    header.int(1, 4);
    header.word(0); // entry
    header.word(0); // phoff
    header.word(shoff as u64);
    header.int(0, 4);
    header.int(ehsize as u64, 2);
    header.int(0, 2);
    header.int(0, 2);
    header.int(shentsize as u64, 2);
    header.int(all.len() as u64 + 1, 2);
    header.int(shstrndx, 2);
    out.bytes[..ehsize].copy_from_slice(&header.bytes);
    placed.push(("ELF header", 0..ehsize));
    placed.push(("section headers", shoff..headers_end));
    Generated {
        elf: out.bytes,
        sections: placed,
    }
}
