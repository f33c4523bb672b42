//! The second pass's records: one BTF record for each type DIE by its tag (base types,
//! pointers with their type tags, qualifiers, typedefs, structs and unions with their
//! bit-fields, enums, arrays, subroutine types), and the `FUNC` with its `FUNC_PROTO` and
//! `DECL_TAG`s for each function pahole encodes, as pahole 1.24's `btf_encoder.c` writes
//! them. The ids are the first pass's, in `convert`; this file only fills their slots.

use super::plan::A;
use super::walk::{Attrs, Job, Nodes, children};
use super::{
    At, DW_TAG_LLVM_ANNOTATION, INT_BOOL, INT_SIGNED, Input, MAX_ARRAY_DIMENSIONS, Output, Target,
    gimli_reason, numeric, plus_uconst,
};
use crate::btf::Kind;
use crate::dwarf::Record;
use crate::error::Result;
use crate::fallible;
use alloc::vec::Vec;
use gimli::{AttributeValue, constants as dw};

impl<'a> Input<'a> {
    /// The record of type DIE `nodes[node]`, id `id`.
    pub(super) fn convert_type(
        &self,
        out: &mut Output<'a, '_>,
        unit: usize,
        nodes: &Nodes<'a>,
        node: usize,
        id: u32,
        at: At,
    ) -> Result<()> {
        let die = nodes.get(node);
        let attrs = &die.attrs;
        let record = match die.tag {
            dw::DW_TAG_base_type => return self.base_type(out, unit, attrs, id, at),
            dw::DW_TAG_pointer_type => return self.pointer(out, unit, nodes, node, id, at),
            dw::DW_TAG_const_type => {
                Record::reference(Kind::Const, self.type_of(out, unit, attrs, at)?)
            }
            dw::DW_TAG_volatile_type => {
                Record::reference(Kind::Volatile, self.type_of(out, unit, attrs, at)?)
            }
            dw::DW_TAG_restrict_type => {
                Record::reference(Kind::Restrict, self.type_of(out, unit, attrs, at)?)
            }
            dw::DW_TAG_typedef => {
                let target = self.type_of(out, unit, attrs, at)?;
                let name = self.name_of(out, unit, attrs, at)?;
                self.decl_tags(out, unit, nodes, node, id, -1, at)?;
                Record::new(name, Kind::Typedef, false, 0, target)
            }
            dw::DW_TAG_structure_type | dw::DW_TAG_class_type | dw::DW_TAG_union_type => {
                return self.composite(out, unit, nodes, node, id, at);
            }
            dw::DW_TAG_enumeration_type => {
                return self.enumeration(out, unit, nodes, node, id, at);
            }
            dw::DW_TAG_array_type => return self.array(out, unit, nodes, node, id, at),
            dw::DW_TAG_subroutine_type => {
                return out.with_words(|out, words| {
                    let record = self.proto(out, unit, nodes, node, false, words, at)?;
                    out.types.set(id, record, words)
                });
            }
            // A pointer's type tags were written with the pointer.
            _ => return Ok(()),
        };
        out.types.set(id, record, &[])
    }

    fn base_type(
        &self,
        out: &mut Output<'a, '_>,
        unit: usize,
        attrs: &Attrs<'_, 'a>,
        id: u32,
        at: At,
    ) -> Result<()> {
        let byte_size = attrs.udata(A::ByteSize).unwrap_or(0);
        let encoding = attrs.udata(A::Encoding).unwrap_or(0);
        let encoding = gimli::DwAte(encoding as u8);
        let size = u32::try_from(byte_size).map_err(|_| at.err("a base type's size overflows"))?;
        if encoding == dw::DW_ATE_float {
            let name = self.name_of(out, unit, attrs, at)?;
            return out
                .types
                .set(id, Record::new(name, Kind::Float, false, 0, size), &[]);
        }
        if matches!(
            encoding,
            dw::DW_ATE_complex_float | dw::DW_ATE_imaginary_float
        ) {
            // pahole --btf_gen_floats stops here too: BTF has no complex types.
            return Err(at.err("complex and imaginary floating-point types have no BTF encoding"));
        }
        let btf_encoding = match encoding {
            dw::DW_ATE_signed | dw::DW_ATE_signed_char => INT_SIGNED,
            dw::DW_ATE_boolean => INT_BOOL,
            _ => 0,
        };
        // DWARF 5's DW_ATE_[un]signed_N helper types of odd sizes: pahole's sanitized int.
        let (name, size) = if size == 0 || !size.is_power_of_two() || size > 16 {
            (out.intern(Some(&b"__SANITIZED_FAKE_INT__"[..]), at)?, 4)
        } else {
            (self.name_of(out, unit, attrs, at)?, size)
        };
        out.types.set(
            id,
            Record::new(name, Kind::Int, false, 0, size),
            &[(btf_encoding << 24) | (size * 8)],
        )
    }

    /// A pointer, and its `btf_type_tag`s: `pointer -> tag_n -> ... -> tag_1 -> pointee` for
    /// tags written `tag_1 ... tag_n` (pahole's `dwarf_cu__recode_btf_type_tag_ptr`).
    fn pointer(
        &self,
        out: &mut Output<'a, '_>,
        unit: usize,
        nodes: &Nodes<'a>,
        node: usize,
        id: u32,
        at: At,
    ) -> Result<()> {
        let mut target = self.type_of(out, unit, &nodes.get(node).attrs, at)?;
        for (_, child) in children(nodes, node) {
            let Job::Type(tag_id) = child.job else {
                continue;
            };
            let name = self.intern_value(out, unit, child.attrs.get(A::ConstValue), at)?;
            out.types.set(
                tag_id,
                Record::new(name, Kind::TypeTag, false, 0, target),
                &[],
            )?;
            target = tag_id;
        }
        out.types.set(id, Record::reference(Kind::Ptr, target), &[])
    }

    /// `DECL_TAG`s for the `btf_decl_tag` annotations among `die`'s children, on `target`
    /// with component index `component` (-1: the type or function itself). Inline: a unit
    /// without annotations (gcc's) has none to look for, and a kernel's members, types and
    /// parameters ask 7 million times.
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    fn decl_tags(
        &self,
        out: &mut Output<'a, '_>,
        unit: usize,
        nodes: &Nodes<'a>,
        node: usize,
        target: u32,
        component: i32,
        at: At,
    ) -> Result<()> {
        if !nodes.has_annotations() {
            return Ok(());
        }
        self.annotated_decl_tags(out, unit, nodes, node, target, component, at)
    }

    /// [`Input::decl_tags`] in a unit with annotations.
    #[allow(clippy::too_many_arguments)]
    #[inline(never)]
    fn annotated_decl_tags(
        &self,
        out: &mut Output<'a, '_>,
        unit: usize,
        nodes: &Nodes<'a>,
        node: usize,
        target: u32,
        component: i32,
        at: At,
    ) -> Result<()> {
        for (_, child) in children(nodes, node) {
            if child.tag != DW_TAG_LLVM_ANNOTATION
                || self.string_of(&out.current, unit, child.attrs.get(A::Name), at)?
                    != Some(&b"btf_decl_tag"[..])
            {
                continue;
            }
            let name = self.intern_value(out, unit, child.attrs.get(A::ConstValue), at)?;
            out.next_extra()?;
            out.extra.push(
                Record::new(name, Kind::DeclTag, false, 0, target),
                &[component as u32],
            )?;
        }
        Ok(())
    }

    fn composite(
        &self,
        out: &mut Output<'a, '_>,
        unit: usize,
        nodes: &Nodes<'a>,
        node: usize,
        id: u32,
        at: At,
    ) -> Result<()> {
        let die = nodes.get(node);
        let union = die.tag == dw::DW_TAG_union_type;
        let kind = if union { Kind::Union } else { Kind::Struct };
        let name_off = self.name_of(out, unit, &die.attrs, at)?;
        if die.attrs.flag(A::Declaration) {
            // libbpf rejects an anonymous FWD; an empty anonymous type says the same.
            let record = if name_off == 0 {
                Record::new(0, kind, false, 0, 0)
            } else {
                Record::new(name_off, Kind::Fwd, union, 0, 0)
            };
            return out.types.set(id, record, &[]);
        }
        let size = die.attrs.udata(A::ByteSize).unwrap_or(0);
        let size = u32::try_from(size).map_err(|_| at.err("a struct's size overflows"))?;
        out.with_words(|out, words| {
            let little = self.little;
            let mut any_bitfield = false;
            let mut member_index = 0i32;
            for (index, member) in children(nodes, node) {
                let mut at = at;
                at.die = self.units[unit].start + member.offset.0 as u64;
                match member.tag {
                    dw::DW_TAG_member => {}
                    dw::DW_TAG_inheritance => {
                        member_index += 1;
                        continue;
                    }
                    _ => continue,
                }
                let attrs = &member.attrs;
                let member_name = self.name_of(out, unit, attrs, at)?;
                let member_type = self.type_of(out, unit, attrs, at)?;
                let bitfield_size = attrs.udata(A::BitSize).unwrap_or(0);
                let bit_offset =
                    self.member_bit_offset(&out.current, unit, attrs, bitfield_size, little, at)?;
                let offset = if bitfield_size != 0 {
                    any_bitfield = true;
                    if bitfield_size > 255 || bit_offset >= 1 << 24 {
                        return Err(at.err("a bit-field too large or too far for BTF"));
                    }
                    ((bitfield_size as u32) << 24) | bit_offset
                } else {
                    bit_offset
                };
                fallible::extend(words, &[member_name, member_type, offset])?;
                self.decl_tags(out, unit, nodes, index, id, member_index, at)?;
                member_index += 1;
            }
            self.decl_tags(out, unit, nodes, node, id, -1, at)?;
            let vlen = u16::try_from(words.len() / 3)
                .map_err(|_| at.err("more members than BTF holds"))?;
            out.types.set(
                id,
                Record::new(name_off, kind, any_bitfield, vlen, size),
                words,
            )
        })
    }

    /// A member's bit offset as pahole's `class_member__cache_byte_size` computes it:
    /// `DW_AT_data_bit_offset` as it is; `DW_AT_bit_offset` (counted from the storage unit's
    /// most significant bit) turned into an offset from its least significant bit on
    /// little-endian targets.
    fn member_bit_offset(
        &self,
        current: &super::Current<'a>,
        unit: usize,
        member: &Attrs<'_, 'a>,
        bitfield_size: u64,
        little: bool,
        at: At,
    ) -> Result<u32> {
        let too_far = || at.err("a member's offset does not fit in 32 bits");
        if let Some(bits) = member.udata(A::DataBitOffset) {
            return u32::try_from(bits).map_err(|_| too_far());
        }
        // Mostly a constant (DWARF 3 on), read without making the value: a kernel has 6
        // million members.
        let byte_offset = match member.udata(A::MemberLocation) {
            Some(offset) => offset,
            None => match member.get(A::MemberLocation) {
                None => 0,
                Some(
                    AttributeValue::Exprloc(gimli::Expression(expr)) | AttributeValue::Block(expr),
                ) => plus_uconst(expr.slice())
                    .ok_or_else(|| at.err("a member location that is no constant offset"))?,
                Some(value) => {
                    numeric(&value).ok_or_else(|| at.err("a member location of unknown form"))?
                }
            },
        } as i64;
        let mut bit_offset = byte_offset.wrapping_mul(8);
        if bitfield_size != 0 {
            let byte_size = match member.udata(A::ByteSize) {
                Some(size) if size != 0 => size,
                _ => self.storage_size(current, unit, member, at)?,
            };
            if byte_size != 0 {
                let dwarf_offset = member.udata(A::BitOffset).unwrap_or(0) as i64;
                let storage_bits = (byte_size as i64).wrapping_mul(8);
                // Wrapping, as the rest: hostile values give an offset out of range, an error.
                let within = if little {
                    storage_bits
                        .wrapping_sub(dwarf_offset)
                        .wrapping_sub(bitfield_size as i64)
                } else {
                    dwarf_offset
                };
                bit_offset = bit_offset.wrapping_add(within);
            }
        }
        u32::try_from(bit_offset).map_err(|_| too_far())
    }

    /// The byte size of a bit-field's declared type, through typedefs and qualifiers.
    fn storage_size(
        &self,
        current: &super::Current<'a>,
        unit: usize,
        member: &Attrs<'_, 'a>,
        at: At,
    ) -> Result<u64> {
        let mut target = self.target_value(unit, member.get(A::Type), at)?;
        for _ in 0..crate::btf::MAX_RESOLVE_DEPTH {
            let Target::Die { unit, offset } = target else {
                return Ok(0);
            };
            // `Ok(size)`: found; `Err(next)`: through a typedef or qualifier to `next`.
            let step = self.with_unit(current, unit, |u| {
                let die = u.entry(offset).map_err(|e| at.err(gimli_reason(e)))?;
                Ok(match die.tag() {
                    dw::DW_TAG_typedef
                    | dw::DW_TAG_const_type
                    | dw::DW_TAG_volatile_type
                    | dw::DW_TAG_restrict_type
                    | dw::DW_TAG_atomic_type => Err(self.target(unit, &die, dw::DW_AT_type, at)?),
                    tag => {
                        let size = self.udata(&die, dw::DW_AT_byte_size, at)?.unwrap_or(0);
                        Ok(if size == 0 && tag == dw::DW_TAG_enumeration_type {
                            4
                        } else {
                            size
                        })
                    }
                })
            })?;
            match step {
                Ok(size) => return Ok(size),
                Err(next) => target = next,
            }
        }
        Err(at.err("a chain of typedefs and qualifiers too long"))
    }

    fn enumeration(
        &self,
        out: &mut Output<'a, '_>,
        unit: usize,
        nodes: &Nodes<'a>,
        node: usize,
        id: u32,
        at: At,
    ) -> Result<()> {
        let attrs = &nodes.get(node).attrs;
        let name = self.name_of(out, unit, attrs, at)?;
        // pahole: a declaration (no size) is an `int`-sized enum without values.
        let size = match attrs.udata(A::ByteSize) {
            None | Some(0) => 4,
            Some(size) => u32::try_from(size).map_err(|_| at.err("an enum's size overflows"))?,
        };
        // Signedness from the underlying type DW_AT_type names itself (not through typedefs).
        let signed = match self.target_value(unit, attrs.get(A::Type), at)? {
            Target::Void => false,
            Target::Die { unit, offset } => {
                let encoding = self.with_unit(&out.current, unit, |u| {
                    let base = u.entry(offset).map_err(|e| at.err(gimli_reason(e)))?;
                    self.udata(&base, dw::DW_AT_encoding, at)
                })?;
                let encoding = encoding.unwrap_or(0);
                let encoding = gimli::DwAte(encoding as u8);
                encoding == dw::DW_ATE_signed || encoding == dw::DW_ATE_signed_char
            }
        };
        let wide = size > 4;
        out.with_words(|out, words| {
            let mut negative = false;
            for (_, enumerator) in children(nodes, node) {
                if enumerator.tag != dw::DW_TAG_enumerator {
                    continue;
                }
                let value_name = self.name_of(out, unit, &enumerator.attrs, at)?;
                let value = enumerator.attrs.udata(A::ConstValue).unwrap_or(0);
                if wide {
                    fallible::extend(words, &[value_name, value as u32, (value >> 32) as u32])?;
                } else {
                    // libbpf's btf__add_enum_value: a value must fit in 32 bits, signed or not; a
                    // negative one makes the enum signed.
                    let signed_value = value as i64;
                    if !(i64::from(i32::MIN)..=i64::from(u32::MAX)).contains(&signed_value) {
                        return Err(
                            at.err("an enumerator of a 4-byte enum does not fit in 32 bits")
                        );
                    }
                    negative |= signed_value < 0;
                    fallible::extend(words, &[value_name, value as u32])?;
                }
            }
            let per = if wide { 3 } else { 2 };
            let vlen = u16::try_from(words.len() / per)
                .map_err(|_| at.err("more enumerators than BTF holds"))?;
            let (kind, flag) = if wide {
                (Kind::Enum64, signed)
            } else {
                (Kind::Enum, negative)
            };
            out.types
                .set(id, Record::new(name, kind, flag, vlen, size), words)
        })
    }

    /// pahole 1.24 writes a multi-dimensional array as one array of all its elements.
    fn array(
        &self,
        out: &mut Output<'a, '_>,
        unit: usize,
        nodes: &Nodes<'a>,
        node: usize,
        id: u32,
        at: At,
    ) -> Result<()> {
        let elem = self.type_of(out, unit, &nodes.get(node).attrs, at)?;
        let mut nelems = 1u32;
        let mut dimensions = 0;
        for (_, subrange) in children(nodes, node) {
            if subrange.tag != dw::DW_TAG_subrange_type {
                continue;
            }
            if dimensions == MAX_ARRAY_DIMENSIONS {
                break;
            }
            dimensions += 1;
            // pahole's attr_upper_bound: upper bound + 1, else the count, else 0.
            let count = if let Some(upper) = subrange.attrs.get(A::UpperBound) {
                numeric(&upper).map_or(0, |u| u.wrapping_add(1))
            } else {
                subrange.attrs.udata(A::Count).unwrap_or(0)
            };
            nelems = nelems.wrapping_mul(count as u32);
        }
        let index = out.index_type()?;
        out.types.set(
            id,
            Record::new(0, Kind::Array, false, 0, 0),
            &[elem, index, nelems],
        )
    }

    /// A `FUNC_PROTO` for a subroutine type or a function: return type, parameters (their
    /// words into `words`), and a trailing `void` parameter when variadic.
    /// For a function (`named`), parameters carry their names.
    #[allow(clippy::too_many_arguments)]
    fn proto(
        &self,
        out: &mut Output<'a, '_>,
        unit: usize,
        nodes: &Nodes<'a>,
        node: usize,
        named: bool,
        words: &mut Vec<u32>,
        at: At,
    ) -> Result<Record> {
        let ret = self.type_of(out, unit, &nodes.get(node).attrs, at)?;
        let mut variadic = false;
        for (_, param) in children(nodes, node) {
            match param.tag {
                dw::DW_TAG_formal_parameter => {
                    let name = if named {
                        self.name_of(out, unit, &param.attrs, at)?
                    } else {
                        0
                    };
                    let ty = self.type_of(out, unit, &param.attrs, at)?;
                    fallible::extend(words, &[name, ty])?;
                }
                dw::DW_TAG_unspecified_parameters => variadic = true,
                _ => {}
            }
        }
        if variadic {
            fallible::extend(words, &[0, 0])?;
        }
        let vlen =
            u16::try_from(words.len() / 2).map_err(|_| at.err("more parameters than BTF holds"))?;
        Ok(Record::new(0, Kind::FuncProto, false, vlen, ret))
    }

    /// A `FUNC` (and its `FUNC_PROTO`, `DECL_TAG`s) for a function pahole 1.24 encodes: a
    /// definition whose parameters all have names, named by a function symbol not yet
    /// encoded (or, in a file without function symbols, external).
    pub(super) fn convert_function(
        &self,
        out: &mut Output<'a, '_>,
        unit: usize,
        nodes: &Nodes<'a>,
        node: usize,
        at: At,
    ) -> Result<()> {
        let attrs = &nodes.get(node).attrs;
        if attrs.flag(A::Declaration) {
            return Ok(());
        }
        let Some(name) = self.string_of(&out.current, unit, attrs.get(A::Name), at)? else {
            return Ok(());
        };
        for (_, param) in children(nodes, node) {
            if param.tag == dw::DW_TAG_formal_parameter
                && self
                    .string_of(&out.current, unit, param.attrs.get(A::Name), at)?
                    .is_none()
            {
                return Ok(());
            }
        }
        if out.functions.is_empty() {
            if !attrs.flag(A::External) {
                return Ok(());
            }
        } else {
            match out.functions.get_mut(name) {
                Some(emitted) if !*emitted => *emitted = true,
                _ => return Ok(()),
            }
        }
        let proto = out.with_words(|out, words| {
            let record = self.proto(out, unit, nodes, node, true, words, at)?;
            let proto = out.next_extra()?;
            out.extra.push(record, words)?;
            Ok(proto)
        })?;
        let func = out.next_extra()?;
        let name = self.name_of(out, unit, attrs, at)?;
        out.extra
            .push(Record::new(name, Kind::Func, false, 0, proto), &[])?;
        self.decl_tags(out, unit, nodes, node, func, -1, at)?;
        let mut index = 0;
        for (i, param) in children(nodes, node) {
            if param.tag == dw::DW_TAG_formal_parameter {
                self.decl_tags(out, unit, nodes, i, func, index, at)?;
                index += 1;
            }
        }
        Ok(())
    }
}
