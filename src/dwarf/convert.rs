//! Every type DIE of every unit to one BTF record, as pahole 1.24's `-J` encodes it before
//! `btf__dedup` (its `dwarf_loader.c` and `btf_encoder.c` are the reference): the output is
//! one [`Types`] per input, its ids in the units' DFS order, which [`super::dedup`] then
//! deduplicates.
//!
//! Two passes over each unit. The first gives every type DIE its id (ids must be known
//! before a DIE can refer to one further down, in another unit or a type unit); the second
//! writes each DIE's record into its slot. Records made of no DIE of their own (a function's
//! `FUNC_PROTO` and `FUNC`, `DECL_TAG`s, the array index `int`) follow all DIEs' ids.

use super::{Record, Types};
use crate::btf::Kind;
use crate::btf::write::BtfWriter;
use crate::error::{Error, Result};
use crate::fallible;
use alloc::vec::Vec;
use gimli::{AttributeValue, DwTag, EndianSlice, RunTimeEndian, UnitOffset, constants as dw};

type Reader<'a> = EndianSlice<'a, RunTimeEndian>;
type Die<'abbrev, 'unit, 'a> = gimli::DebuggingInformationEntry<'abbrev, 'unit, Reader<'a>>;

/// `DW_TAG_LLVM_annotation` (clang's `btf_type_tag` and `btf_decl_tag` attributes).
const DW_TAG_LLVM_ANNOTATION: DwTag = DwTag(0x6000);
/// How many modifiers an `_Atomic` may be stripped through (a cycle of them is malformed).
const MAX_ALIAS_HOPS: usize = 32;
/// pahole's `max_dimensions`: later subranges of an array are ignored.
const MAX_ARRAY_DIMENSIONS: usize = 64;
/// `BTF_INT_SIGNED`, `BTF_INT_BOOL`.
const INT_SIGNED: u32 = 1;
const INT_BOOL: u32 = 4;

/// What the first pass found at a DIE offset.
#[derive(Debug, Clone, Copy)]
enum Slot {
    /// A type DIE, and its BTF id.
    Type(u32),
    /// A DIE that stands for another: an `_Atomic` qualifier (BTF has no kind for it) for
    /// what it qualifies, a skeleton with `DW_AT_signature` for its type unit's type.
    Alias(Target),
}

/// A DIE a reference points to.
#[derive(Debug, Clone, Copy)]
enum Target {
    Void,
    Die { unit: usize, offset: UnitOffset },
}

/// One unit: parsed header and abbreviations, and the slots of its DIEs in offset order.
struct UnitData<'a> {
    unit: gimli::Unit<Reader<'a>>,
    section: &'static str,
    /// Offset of the unit's header in its section.
    start: u64,
    in_debug_types: bool,
    slots: Vec<(UnitOffset, Slot)>,
}

/// Where in the input an error was found.
#[derive(Clone, Copy)]
struct At {
    section: &'static str,
    unit: u64,
    die: u64,
}

impl At {
    fn err(self, reason: &'static str) -> Error {
        Error::BadDwarf {
            section: self.section,
            unit: self.unit,
            die: self.die,
            reason,
        }
    }
}

fn gimli_reason(error: gimli::Error) -> &'static str {
    match error {
        gimli::Error::UnexpectedEof(_) => "truncated: data ends inside a record",
        gimli::Error::UnknownForm(_) => "an attribute has an unknown form",
        gimli::Error::UnknownVersion(_) => "unsupported DWARF version",
        gimli::Error::UnknownAbbreviation(_) => "a DIE names an abbreviation that does not exist",
        gimli::Error::OffsetOutOfBounds => "an offset points outside its section",
        _ => "malformed DWARF",
    }
}

/// The input, read-only while records are written: DIEs borrow from it.
struct Input<'a> {
    dwarf: gimli::Dwarf<Reader<'a>>,
    units: Vec<UnitData<'a>>,
    /// Type unit signatures and where their types are, sorted by signature.
    signatures: Vec<(u64, usize, UnitOffset)>,
    /// Byte order, which `DW_AT_bit_offset` depends on.
    little: bool,
}

/// What the conversion writes.
struct Output<'a, 'w> {
    strings: &'w mut BtfWriter,
    types: Types,
    /// Records after the DIEs' own ids (`FUNC_PROTO`, `FUNC`, `DECL_TAG`, index `int`).
    extra: Types,
    /// The first extra record's id: one past the last DIE's.
    first_extra: u32,
    index_type: Option<u32>,
    /// The function symbols, and whether a `FUNC` was emitted for each.
    functions: Vec<(&'a [u8], bool)>,
}

/// The converter's state across all units of one input.
pub struct Converter<'a, 'w> {
    input: Input<'a>,
    out: Output<'a, 'w>,
}

impl<'a, 'w> Converter<'a, 'w> {
    /// Read every unit header of `sections` and give every type DIE its id. Names are
    /// interned in `strings`.
    pub fn new(
        sections: &'a super::sections::Sections<'a>,
        strings: &'w mut BtfWriter,
    ) -> Result<Converter<'a, 'w>> {
        let endian = sections.endian;
        let dwarf = gimli::Dwarf::load(|id| {
            Ok::<_, gimli::Error>(EndianSlice::new(sections.get(id), endian))
        })
        .map_err(|e| {
            At {
                section: ".debug_info",
                unit: u64::MAX,
                die: u64::MAX,
            }
            .err(gimli_reason(e))
        })?;
        let mut functions = fallible::vec_with_capacity(sections.functions.len())?;
        functions.extend(sections.functions.iter().map(|&f| (f, false)));
        let mut input = Input {
            dwarf,
            units: Vec::new(),
            signatures: Vec::new(),
            little: endian == RunTimeEndian::Little,
        };
        input.read_headers()?;
        let mut next_id = 1u32;
        for index in 0..input.units.len() {
            input.assign_ids(index, &mut next_id)?;
        }
        let mut types = Types::new()?;
        types.fill(next_id)?;
        let out = Output {
            strings,
            types,
            extra: Types::empty(),
            first_extra: next_id,
            index_type: None,
            functions,
        };
        Ok(Converter { input, out })
    }

    /// Second pass: every unit's records. Returns all records, ids from 1.
    pub fn convert(self) -> Result<Types> {
        let Converter { input, mut out } = self;
        for index in 0..input.units.len() {
            input.convert_unit(&mut out, index)?;
        }
        let Output {
            mut types, extra, ..
        } = out;
        types.append(extra)?;
        Ok(types)
    }
}

impl<'a> Input<'a> {
    fn read_headers(&mut self) -> Result<()> {
        let mut at = At {
            section: ".debug_types",
            unit: u64::MAX,
            die: u64::MAX,
        };
        let mut headers = Vec::new();
        let mut types = self.dwarf.type_units();
        while let Some(header) = types.next().map_err(|e| at.err(gimli_reason(e)))? {
            fallible::push(&mut headers, (header, ".debug_types", true))?;
        }
        at.section = ".debug_info";
        let mut infos = self.dwarf.units();
        while let Some(header) = infos.next().map_err(|e| at.err(gimli_reason(e)))? {
            fallible::push(&mut headers, (header, ".debug_info", false))?;
        }
        self.units.try_reserve_exact(headers.len())?;
        for (header, section, in_debug_types) in headers {
            let start = match header.offset() {
                gimli::UnitSectionOffset::DebugInfoOffset(o) => o.0,
                gimli::UnitSectionOffset::DebugTypesOffset(o) => o.0,
            } as u64;
            let at = At {
                section,
                unit: start,
                die: u64::MAX,
            };
            if let gimli::UnitType::Type {
                type_signature,
                type_offset,
            } = header.type_()
            {
                fallible::push(
                    &mut self.signatures,
                    (type_signature.0, self.units.len(), type_offset),
                )?;
            }
            let unit = self
                .dwarf
                .unit(header)
                .map_err(|e| at.err(gimli_reason(e)))?;
            self.units.push(UnitData {
                unit,
                section,
                start,
                in_debug_types,
                slots: Vec::new(),
            });
        }
        self.signatures.sort_unstable_by_key(|&(s, _, _)| s);
        Ok(())
    }

    /// First pass over unit `index`: ids for its type DIEs, aliases for its `_Atomic`s.
    fn assign_ids(&mut self, index: usize, next_id: &mut u32) -> Result<()> {
        let data = &self.units[index];
        let mut at = At {
            section: data.section,
            unit: data.start,
            die: u64::MAX,
        };
        let mut slots = Vec::new();
        let mut parents: Vec<DwTag> = Vec::new();
        let mut depth: isize = 0;
        let mut cursor = data.unit.entries();
        while let Some((delta, die)) = cursor.next_dfs().map_err(|e| at.err(gimli_reason(e)))? {
            at.die = data.start + die.offset().0 as u64;
            depth += delta;
            let level = usize::try_from(depth).map_err(|_| at.err("DIE tree depth below 0"))?;
            parents.truncate(level);
            let parent = parents.last().copied();
            let tag = die.tag();
            let signature = die
                .attr_value(dw::DW_AT_signature)
                .map_err(|e| at.err(gimli_reason(e)))?;
            let slot = if signature.is_some() {
                // gcc's skeleton of a type that a type unit defines: it stands for that type.
                Some(Slot::Alias(self.target(
                    index,
                    die,
                    dw::DW_AT_signature,
                    at,
                )?))
            } else if is_type_tag(tag)
                || (tag == DW_TAG_LLVM_ANNOTATION
                    && parent == Some(dw::DW_TAG_pointer_type)
                    && self.annotation_is(data, die, b"btf_type_tag", at)?)
            {
                let id = *next_id;
                if id > crate::btf::MAX_TYPE_ID {
                    return Err(Error::Limit {
                        what: "type count",
                        limit: crate::btf::MAX_TYPE_ID as usize,
                    });
                }
                *next_id += 1;
                Some(Slot::Type(id))
            } else if tag == dw::DW_TAG_atomic_type {
                Some(Slot::Alias(self.target(index, die, dw::DW_AT_type, at)?))
            } else {
                None
            };
            if let Some(slot) = slot {
                fallible::push(&mut slots, (die.offset(), slot))?;
            }
            fallible::push(&mut parents, tag)?;
        }
        self.units[index].slots = slots;
        Ok(())
    }

    /// Whether annotation DIE `die` is named `kind` (`btf_type_tag`, `btf_decl_tag`).
    fn annotation_is(
        &self,
        data: &UnitData<'a>,
        die: &Die<'_, '_, 'a>,
        kind: &[u8],
        at: At,
    ) -> Result<bool> {
        Ok(self.name(data, die, at)? == Some(kind))
    }

    /// The DIE attribute `attr` of `die` (in unit `unit`) refers to, `Void` when it has none.
    fn target(
        &self,
        unit: usize,
        die: &Die<'_, '_, 'a>,
        attr: gimli::DwAt,
        at: At,
    ) -> Result<Target> {
        let value = die.attr_value(attr).map_err(|e| at.err(gimli_reason(e)))?;
        match value {
            None => Ok(Target::Void),
            Some(AttributeValue::UnitRef(offset)) => Ok(Target::Die { unit, offset }),
            Some(AttributeValue::DebugInfoRef(offset)) => {
                let offset = offset.0 as u64;
                // The unit of .debug_info holding `offset`: the last to start at or before it
                // (.debug_types' units come first, .debug_info's follow in offset order).
                let first = self.units.partition_point(|u| u.in_debug_types);
                let after = first + self.units[first..].partition_point(|u| u.start <= offset);
                if after == first {
                    return Err(at.err("a reference points before the first unit"));
                }
                let unit = after - 1;
                Ok(Target::Die {
                    unit,
                    offset: UnitOffset((offset - self.units[unit].start) as usize),
                })
            }
            Some(AttributeValue::DebugTypesRef(signature)) => {
                let i = self
                    .signatures
                    .binary_search_by_key(&signature.0, |&(s, _, _)| s)
                    .map_err(|_| at.err("a type signature names no type unit"))?;
                let (_, unit, offset) = self.signatures[i];
                Ok(Target::Die { unit, offset })
            }
            Some(AttributeValue::DebugInfoRefSup(_)) => {
                Err(at.err("a reference into a supplementary file (dwz): not supported"))
            }
            Some(_) => Err(at.err("a type reference has a form that is no reference")),
        }
    }

    /// The BTF id a reference stands for: its type DIE's, through `_Atomic`s. A reference to
    /// a DIE that is no type BTF has (C++ references, `DW_TAG_unspecified_type`) is `void`,
    /// as pahole leaves it.
    fn resolve(&self, mut target: Target, at: At) -> Result<u32> {
        for _ in 0..MAX_ALIAS_HOPS {
            let Target::Die { unit, offset } = target else {
                return Ok(0);
            };
            let slots = &self.units[unit].slots;
            match slots.binary_search_by_key(&offset, |&(o, _)| o) {
                Ok(i) => match slots[i].1 {
                    Slot::Type(id) => return Ok(id),
                    Slot::Alias(next) => target = next,
                },
                Err(_) => return Ok(0),
            }
        }
        Err(at.err("a cycle of _Atomic qualifiers"))
    }

    /// The id of what attribute `attr` (`DW_AT_type`) of `die` refers to.
    fn type_of(&self, unit: usize, die: &Die<'_, '_, 'a>, at: At) -> Result<u32> {
        let target = self.target(unit, die, dw::DW_AT_type, at)?;
        self.resolve(target, at)
    }

    fn name(&self, data: &UnitData<'a>, die: &Die<'_, '_, 'a>, at: At) -> Result<Option<&'a [u8]>> {
        self.string_attr(data, die, dw::DW_AT_name, at)
    }

    fn string_attr(
        &self,
        data: &UnitData<'a>,
        die: &Die<'_, '_, 'a>,
        attr: gimli::DwAt,
        at: At,
    ) -> Result<Option<&'a [u8]>> {
        match die.attr_value(attr).map_err(|e| at.err(gimli_reason(e)))? {
            None => Ok(None),
            Some(value) => {
                let s = self
                    .dwarf
                    .attr_string(&data.unit, value)
                    .map_err(|e| at.err(gimli_reason(e)))?;
                Ok(Some(s.slice()))
            }
        }
    }

    fn convert_unit(&self, out: &mut Output<'a, '_>, index: usize) -> Result<()> {
        // The DIEs to convert first (the cursor borrows the unit), then each read again.
        let data = &self.units[index];
        let mut at = At {
            section: data.section,
            unit: data.start,
            die: u64::MAX,
        };
        let mut offsets: Vec<(UnitOffset, Option<u32>, DwTag)> = Vec::new();
        {
            let mut cursor = data.unit.entries();
            let mut slot = 0usize;
            while let Some((_, die)) = cursor.next_dfs().map_err(|e| at.err(gimli_reason(e)))? {
                let tag = die.tag();
                let id = match data.slots.get(slot) {
                    Some(&(offset, s)) if offset == die.offset() => {
                        slot += 1;
                        match s {
                            Slot::Type(id) => Some(id),
                            Slot::Alias(_) => None,
                        }
                    }
                    _ => None,
                };
                if id.is_some() || tag == dw::DW_TAG_subprogram {
                    fallible::push(&mut offsets, (die.offset(), id, tag))?;
                }
            }
        }
        for (offset, id, tag) in offsets {
            at.die = self.units[index].start + offset.0 as u64;
            let data = &self.units[index];
            let die = data
                .unit
                .entry(offset)
                .map_err(|e| at.err(gimli_reason(e)))?;
            match id {
                Some(id) => self.convert_type(out, index, &die, id, at)?,
                None if tag == dw::DW_TAG_subprogram => {
                    self.convert_function(out, index, &die, at)?
                }
                None => {}
            }
        }
        Ok(())
    }

    fn udata(&self, die: &Die<'_, '_, 'a>, attr: gimli::DwAt, at: At) -> Result<Option<u64>> {
        let value = die.attr_value(attr).map_err(|e| at.err(gimli_reason(e)))?;
        Ok(value.and_then(|v| numeric(&v)))
    }

    fn flag(&self, die: &Die<'_, '_, 'a>, attr: gimli::DwAt, at: At) -> Result<bool> {
        let value = die.attr_value(attr).map_err(|e| at.err(gimli_reason(e)))?;
        Ok(matches!(value, Some(AttributeValue::Flag(true))))
    }

    /// The children of `die` (read again from the unit), each with its offset.
    fn children(&self, unit: usize, die: &Die<'_, '_, 'a>, at: At) -> Result<Vec<UnitOffset>> {
        let mut out = Vec::new();
        if !die.has_children() {
            return Ok(out);
        }
        let data = &self.units[unit];
        let mut tree = data
            .unit
            .entries_tree(Some(die.offset()))
            .map_err(|e| at.err(gimli_reason(e)))?;
        let root = tree.root().map_err(|e| at.err(gimli_reason(e)))?;
        let mut children = root.children();
        while let Some(child) = children.next().map_err(|e| at.err(gimli_reason(e)))? {
            fallible::push(&mut out, child.entry().offset())?;
        }
        Ok(out)
    }

    fn entry(&self, unit: usize, offset: UnitOffset, at: At) -> Result<Die<'_, '_, 'a>> {
        self.units[unit]
            .unit
            .entry(offset)
            .map_err(|e| at.err(gimli_reason(e)))
    }

    fn convert_type(
        &self,
        out: &mut Output<'a, '_>,
        unit: usize,
        die: &Die<'_, '_, 'a>,
        id: u32,
        at: At,
    ) -> Result<()> {
        let tag = die.tag();
        let data = &self.units[unit];
        let name = self.name(data, die, at)?;
        let record = match tag {
            dw::DW_TAG_base_type => return self.base_type(out, die, id, name, at),
            dw::DW_TAG_pointer_type => return self.pointer(out, unit, die, id, at),
            dw::DW_TAG_const_type => Record::reference(Kind::Const, self.type_of(unit, die, at)?),
            dw::DW_TAG_volatile_type => {
                Record::reference(Kind::Volatile, self.type_of(unit, die, at)?)
            }
            dw::DW_TAG_restrict_type => {
                Record::reference(Kind::Restrict, self.type_of(unit, die, at)?)
            }
            dw::DW_TAG_typedef => {
                let target = self.type_of(unit, die, at)?;
                let name = out.intern(name, at)?;
                self.decl_tags(out, unit, die, id, -1, at)?;
                Record::new(name, Kind::Typedef, false, 0, target)
            }
            dw::DW_TAG_structure_type | dw::DW_TAG_class_type | dw::DW_TAG_union_type => {
                return self.composite(out, unit, die, id, name, at);
            }
            dw::DW_TAG_enumeration_type => return self.enumeration(out, unit, die, id, name, at),
            dw::DW_TAG_array_type => return self.array(out, unit, die, id, at),
            dw::DW_TAG_subroutine_type => {
                let (record, words) = self.proto(out, unit, die, false, at)?;
                return out.types.set(id, record, &words);
            }
            // A pointer's type tags were written with the pointer.
            _ => return Ok(()),
        };
        out.types.set(id, record, &[])
    }

    fn base_type(
        &self,
        out: &mut Output<'a, '_>,
        die: &Die<'_, '_, 'a>,
        id: u32,
        name: Option<&'a [u8]>,
        at: At,
    ) -> Result<()> {
        let byte_size = self.udata(die, dw::DW_AT_byte_size, at)?.unwrap_or(0);
        let encoding = self.udata(die, dw::DW_AT_encoding, at)?.unwrap_or(0);
        let encoding = gimli::DwAte(encoding as u8);
        let size = u32::try_from(byte_size).map_err(|_| at.err("a base type's size overflows"))?;
        if encoding == dw::DW_ATE_float {
            let name = out.intern(name, at)?;
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
            (Some(&b"__SANITIZED_FAKE_INT__"[..]), 4)
        } else {
            (name, size)
        };
        let name = out.intern(name, at)?;
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
        die: &Die<'_, '_, 'a>,
        id: u32,
        at: At,
    ) -> Result<()> {
        let mut target = self.type_of(unit, die, at)?;
        for child in self.children(unit, die, at)? {
            let tag_id = {
                let slots = &self.units[unit].slots;
                match slots.binary_search_by_key(&child, |&(o, _)| o) {
                    Ok(i) => match slots[i].1 {
                        Slot::Type(tag_id) => tag_id,
                        Slot::Alias(_) => continue,
                    },
                    Err(_) => continue,
                }
            };
            let child_die = self.entry(unit, child, at)?;
            let value =
                self.string_attr(&self.units[unit], &child_die, dw::DW_AT_const_value, at)?;
            let name = out.intern(value, at)?;
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
    /// with component index `component` (-1: the type or function itself).
    fn decl_tags(
        &self,
        out: &mut Output<'a, '_>,
        unit: usize,
        die: &Die<'_, '_, 'a>,
        target: u32,
        component: i32,
        at: At,
    ) -> Result<()> {
        for child in self.children(unit, die, at)? {
            let child_die = self.entry(unit, child, at)?;
            if child_die.tag() != DW_TAG_LLVM_ANNOTATION
                || !self.annotation_is(&self.units[unit], &child_die, b"btf_decl_tag", at)?
            {
                continue;
            }
            let value =
                self.string_attr(&self.units[unit], &child_die, dw::DW_AT_const_value, at)?;
            let name = out.intern(value, at)?;
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
        die: &Die<'_, '_, 'a>,
        id: u32,
        name: Option<&'a [u8]>,
        at: At,
    ) -> Result<()> {
        let union = die.tag() == dw::DW_TAG_union_type;
        let kind = if union { Kind::Union } else { Kind::Struct };
        let name_off = out.intern(name, at)?;
        if self.flag(die, dw::DW_AT_declaration, at)? {
            // libbpf rejects an anonymous FWD; an empty anonymous type says the same.
            let record = if name_off == 0 {
                Record::new(0, kind, false, 0, 0)
            } else {
                Record::new(name_off, Kind::Fwd, union, 0, 0)
            };
            return out.types.set(id, record, &[]);
        }
        let size = self.udata(die, dw::DW_AT_byte_size, at)?.unwrap_or(0);
        let size = u32::try_from(size).map_err(|_| at.err("a struct's size overflows"))?;
        let little = self.little;
        let mut words: Vec<u32> = Vec::new();
        let mut any_bitfield = false;
        let mut member_index = 0i32;
        for child in self.children(unit, die, at)? {
            let member = self.entry(unit, child, at)?;
            let mut at = at;
            at.die = self.units[unit].start + child.0 as u64;
            match member.tag() {
                dw::DW_TAG_member => {}
                dw::DW_TAG_inheritance => {
                    member_index += 1;
                    continue;
                }
                _ => continue,
            }
            let member_name = self.name(&self.units[unit], &member, at)?;
            let member_name = out.intern(member_name, at)?;
            let member_type = self.type_of(unit, &member, at)?;
            let bitfield_size = self.udata(&member, dw::DW_AT_bit_size, at)?.unwrap_or(0);
            let bit_offset = self.member_bit_offset(unit, &member, bitfield_size, little, at)?;
            let offset = if bitfield_size != 0 {
                any_bitfield = true;
                if bitfield_size > 255 || bit_offset >= 1 << 24 {
                    return Err(at.err("a bit-field too large or too far for BTF"));
                }
                ((bitfield_size as u32) << 24) | bit_offset
            } else {
                bit_offset
            };
            fallible::extend(&mut words, &[member_name, member_type, offset])?;
            self.decl_tags(out, unit, &member, id, member_index, at)?;
            member_index += 1;
        }
        self.decl_tags(out, unit, die, id, -1, at)?;
        let vlen =
            u16::try_from(words.len() / 3).map_err(|_| at.err("more members than BTF holds"))?;
        out.types.set(
            id,
            Record::new(name_off, kind, any_bitfield, vlen, size),
            &words,
        )
    }

    /// A member's bit offset as pahole's `class_member__cache_byte_size` computes it:
    /// `DW_AT_data_bit_offset` as it is; `DW_AT_bit_offset` (counted from the storage unit's
    /// most significant bit) turned into an offset from its least significant bit on
    /// little-endian targets.
    fn member_bit_offset(
        &self,
        unit: usize,
        member: &Die<'_, '_, 'a>,
        bitfield_size: u64,
        little: bool,
        at: At,
    ) -> Result<u32> {
        let too_far = || at.err("a member's offset does not fit in 32 bits");
        if let Some(bits) = self.udata(member, dw::DW_AT_data_bit_offset, at)? {
            return u32::try_from(bits).map_err(|_| too_far());
        }
        let location = member
            .attr_value(dw::DW_AT_data_member_location)
            .map_err(|e| at.err(gimli_reason(e)))?;
        let byte_offset = match location {
            None => 0,
            Some(AttributeValue::Exprloc(expr)) => plus_uconst(expr.0.slice())
                .ok_or(at.err("a member location that is no constant offset"))?,
            Some(value) => numeric(&value).ok_or(at.err("a member location of unknown form"))?,
        } as i64;
        let mut bit_offset = byte_offset.wrapping_mul(8);
        if bitfield_size != 0 {
            let byte_size = match self.udata(member, dw::DW_AT_byte_size, at)? {
                Some(size) if size != 0 => size,
                _ => self.storage_size(unit, member, at)?,
            };
            if byte_size != 0 {
                let dwarf_offset =
                    self.udata(member, dw::DW_AT_bit_offset, at)?.unwrap_or(0) as i64;
                let storage_bits = (byte_size as i64).wrapping_mul(8);
                let within = if little {
                    storage_bits - dwarf_offset - bitfield_size as i64
                } else {
                    dwarf_offset
                };
                bit_offset = bit_offset.wrapping_add(within);
            }
        }
        u32::try_from(bit_offset).map_err(|_| too_far())
    }

    /// The byte size of a bit-field's declared type, through typedefs and qualifiers.
    fn storage_size(&self, unit: usize, member: &Die<'_, '_, 'a>, at: At) -> Result<u64> {
        let mut target = self.target(unit, member, dw::DW_AT_type, at)?;
        for _ in 0..crate::btf::MAX_RESOLVE_DEPTH {
            let Target::Die { unit, offset } = target else {
                return Ok(0);
            };
            let die = self.entry(unit, offset, at)?;
            match die.tag() {
                dw::DW_TAG_typedef
                | dw::DW_TAG_const_type
                | dw::DW_TAG_volatile_type
                | dw::DW_TAG_restrict_type
                | dw::DW_TAG_atomic_type => target = self.target(unit, &die, dw::DW_AT_type, at)?,
                tag => {
                    let size = self.udata(&die, dw::DW_AT_byte_size, at)?.unwrap_or(0);
                    return Ok(if size == 0 && tag == dw::DW_TAG_enumeration_type {
                        4
                    } else {
                        size
                    });
                }
            }
        }
        Err(at.err("a chain of typedefs and qualifiers too long"))
    }

    fn enumeration(
        &self,
        out: &mut Output<'a, '_>,
        unit: usize,
        die: &Die<'_, '_, 'a>,
        id: u32,
        name: Option<&'a [u8]>,
        at: At,
    ) -> Result<()> {
        let name = out.intern(name, at)?;
        // pahole: a declaration (no size) is an `int`-sized enum without values.
        let size = match self.udata(die, dw::DW_AT_byte_size, at)? {
            None | Some(0) => 4,
            Some(size) => u32::try_from(size).map_err(|_| at.err("an enum's size overflows"))?,
        };
        // Signedness from the underlying type DW_AT_type names itself (not through typedefs).
        let signed = match self.target(unit, die, dw::DW_AT_type, at)? {
            Target::Void => false,
            Target::Die { unit, offset } => {
                let base = self.entry(unit, offset, at)?;
                let encoding = self.udata(&base, dw::DW_AT_encoding, at)?.unwrap_or(0);
                let encoding = gimli::DwAte(encoding as u8);
                encoding == dw::DW_ATE_signed || encoding == dw::DW_ATE_signed_char
            }
        };
        let wide = size > 4;
        let mut words: Vec<u32> = Vec::new();
        let mut negative = false;
        for child in self.children(unit, die, at)? {
            let enumerator = self.entry(unit, child, at)?;
            if enumerator.tag() != dw::DW_TAG_enumerator {
                continue;
            }
            let value_name = self.name(&self.units[unit], &enumerator, at)?;
            let value_name = out.intern(value_name, at)?;
            let value = enumerator
                .attr_value(dw::DW_AT_const_value)
                .map_err(|e| at.err(gimli_reason(e)))?
                .and_then(|v| numeric(&v))
                .unwrap_or(0);
            if wide {
                fallible::extend(
                    &mut words,
                    &[value_name, value as u32, (value >> 32) as u32],
                )?;
            } else {
                // libbpf's btf__add_enum_value: a value must fit in 32 bits, signed or not; a
                // negative one makes the enum signed.
                let signed_value = value as i64;
                if !(i64::from(i32::MIN)..=i64::from(u32::MAX)).contains(&signed_value) {
                    return Err(at.err("an enumerator of a 4-byte enum does not fit in 32 bits"));
                }
                negative |= signed_value < 0;
                fallible::extend(&mut words, &[value_name, value as u32])?;
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
            .set(id, Record::new(name, kind, flag, vlen, size), &words)
    }

    /// pahole 1.24 writes a multi-dimensional array as one array of all its elements.
    fn array(
        &self,
        out: &mut Output<'a, '_>,
        unit: usize,
        die: &Die<'_, '_, 'a>,
        id: u32,
        at: At,
    ) -> Result<()> {
        let elem = self.type_of(unit, die, at)?;
        let mut nelems = 1u32;
        let mut dimensions = 0;
        for child in self.children(unit, die, at)? {
            let subrange = self.entry(unit, child, at)?;
            if subrange.tag() != dw::DW_TAG_subrange_type {
                continue;
            }
            if dimensions == MAX_ARRAY_DIMENSIONS {
                break;
            }
            dimensions += 1;
            // pahole's attr_upper_bound: upper bound + 1, else the count, else 0.
            let count = if let Some(upper) = subrange
                .attr_value(dw::DW_AT_upper_bound)
                .map_err(|e| at.err(gimli_reason(e)))?
            {
                numeric(&upper).map_or(0, |u| u.wrapping_add(1))
            } else {
                self.udata(&subrange, dw::DW_AT_count, at)?.unwrap_or(0)
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

    /// A `FUNC_PROTO` for a subroutine type or a function: return type, parameters, and a
    /// trailing `void` parameter when variadic. For a function (`named`), parameters
    /// carry their names.
    fn proto(
        &self,
        out: &mut Output<'a, '_>,
        unit: usize,
        die: &Die<'_, '_, 'a>,
        named: bool,
        at: At,
    ) -> Result<(Record, Vec<u32>)> {
        let ret = self.type_of(unit, die, at)?;
        let mut words: Vec<u32> = Vec::new();
        let mut variadic = false;
        for child in self.children(unit, die, at)? {
            let param = self.entry(unit, child, at)?;
            match param.tag() {
                dw::DW_TAG_formal_parameter => {
                    let name = if named {
                        let name = self.name(&self.units[unit], &param, at)?;
                        out.intern(name, at)?
                    } else {
                        0
                    };
                    let ty = self.type_of(unit, &param, at)?;
                    fallible::extend(&mut words, &[name, ty])?;
                }
                dw::DW_TAG_unspecified_parameters => variadic = true,
                _ => {}
            }
        }
        if variadic {
            fallible::extend(&mut words, &[0, 0])?;
        }
        let vlen =
            u16::try_from(words.len() / 2).map_err(|_| at.err("more parameters than BTF holds"))?;
        Ok((Record::new(0, Kind::FuncProto, false, vlen, ret), words))
    }

    /// A `FUNC` (and its `FUNC_PROTO`, `DECL_TAG`s) for a function pahole 1.24 encodes: a
    /// definition whose parameters all have names, named by a function symbol not yet
    /// encoded (or, in a file without function symbols, external).
    fn convert_function(
        &self,
        out: &mut Output<'a, '_>,
        unit: usize,
        die: &Die<'_, '_, 'a>,
        at: At,
    ) -> Result<()> {
        if self.flag(die, dw::DW_AT_declaration, at)? {
            return Ok(());
        }
        let data = &self.units[unit];
        let Some(name) = self.name(data, die, at)? else {
            return Ok(());
        };
        for child in self.children(unit, die, at)? {
            let param = self.entry(unit, child, at)?;
            if param.tag() == dw::DW_TAG_formal_parameter
                && self.name(&self.units[unit], &param, at)?.is_none()
            {
                return Ok(());
            }
        }
        if out.functions.is_empty() {
            if !self.flag(die, dw::DW_AT_external, at)? {
                return Ok(());
            }
        } else {
            match out.functions.binary_search_by_key(&name, |&(n, _)| n) {
                Ok(i) if !out.functions[i].1 => out.functions[i].1 = true,
                _ => return Ok(()),
            }
        }
        let (record, words) = self.proto(out, unit, die, true, at)?;
        let proto = out.next_extra()?;
        out.extra.push(record, &words)?;
        let func = out.next_extra()?;
        let name = out.intern(Some(name), at)?;
        out.extra
            .push(Record::new(name, Kind::Func, false, 0, proto), &[])?;
        self.decl_tags(out, unit, die, func, -1, at)?;
        let mut index = 0;
        for child in self.children(unit, die, at)? {
            let param = self.entry(unit, child, at)?;
            if param.tag() == dw::DW_TAG_formal_parameter {
                self.decl_tags(out, unit, &param, func, index, at)?;
                index += 1;
            }
        }
        Ok(())
    }
}

impl<'a, 'w> Output<'a, 'w> {
    /// Intern a name (`None` and empty: anonymous, offset 0).
    fn intern(&mut self, name: Option<&[u8]>, at: At) -> Result<u32> {
        match name {
            None => Ok(0),
            Some(bytes) => {
                let s = core::str::from_utf8(bytes).map_err(|_| at.err("a name is not UTF-8"))?;
                self.strings.add_string(s)
            }
        }
    }

    /// The next extra record's id.
    fn next_extra(&self) -> Result<u32> {
        let id = self.first_extra + self.extra.records.len() as u32;
        if id > crate::btf::MAX_TYPE_ID {
            return Err(Error::Limit {
                what: "type count",
                limit: crate::btf::MAX_TYPE_ID as usize,
            });
        }
        Ok(id)
    }

    /// pahole's array index type: a signed 4-byte `int`, made once, when first needed.
    fn index_type(&mut self) -> Result<u32> {
        if let Some(id) = self.index_type {
            return Ok(id);
        }
        let id = self.next_extra()?;
        let name = self.strings.add_string("int")?;
        self.extra.push(
            Record::new(name, Kind::Int, false, 0, 4),
            &[(INT_SIGNED << 24) | 32],
        )?;
        self.index_type = Some(id);
        Ok(id)
    }
}

fn is_type_tag(tag: DwTag) -> bool {
    matches!(
        tag,
        dw::DW_TAG_base_type
            | dw::DW_TAG_pointer_type
            | dw::DW_TAG_const_type
            | dw::DW_TAG_volatile_type
            | dw::DW_TAG_restrict_type
            | dw::DW_TAG_typedef
            | dw::DW_TAG_structure_type
            | dw::DW_TAG_class_type
            | dw::DW_TAG_union_type
            | dw::DW_TAG_enumeration_type
            | dw::DW_TAG_array_type
            | dw::DW_TAG_subroutine_type
    )
}

/// A constant attribute as libdw's `dwarf_formudata` reads it (pahole's `attr_numeric`):
/// fixed-size data zero-extended, `sdata` sign-extended.
fn numeric(value: &AttributeValue<Reader<'_>>) -> Option<u64> {
    match *value {
        AttributeValue::Data1(v) => Some(v.into()),
        AttributeValue::Data2(v) => Some(v.into()),
        AttributeValue::Data4(v) => Some(v.into()),
        AttributeValue::Data8(v) => Some(v),
        AttributeValue::Udata(v) => Some(v),
        AttributeValue::Sdata(v) => Some(v as u64),
        // gimli reads DW_AT_encoding as its constant.
        AttributeValue::Encoding(e) => Some(e.0.into()),
        _ => None,
    }
}

/// The offset of a DWARF 2 member location expression `DW_OP_plus_uconst N`.
fn plus_uconst(expr: &[u8]) -> Option<u64> {
    let (&op, mut rest) = expr.split_first()?;
    if op != dw::DW_OP_plus_uconst.0 {
        return None;
    }
    let mut value = 0u64;
    let mut shift = 0;
    loop {
        let (&byte, tail) = rest.split_first()?;
        rest = tail;
        if shift < 64 {
            value |= u64::from(byte & 0x7f) << shift;
        }
        shift += 7;
        if byte & 0x80 == 0 {
            return Some(value);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plus_uconst_reads_uleb128() {
        // DW_OP_plus_uconst 624 (0xf0 0x04), as DWARF 2 compilers write member locations.
        assert_eq!(plus_uconst(&[0x23, 0xf0, 0x04]), Some(624));
        assert_eq!(plus_uconst(&[0x23, 0x08]), Some(8));
        // Truncated, or another operation: no constant offset.
        assert_eq!(plus_uconst(&[0x23, 0x80]), None);
        assert_eq!(plus_uconst(&[0x10, 0x08]), None);
        assert_eq!(plus_uconst(&[]), None);
    }

    #[test]
    fn numeric_extends_as_libdw_does() {
        assert_eq!(numeric(&AttributeValue::Data1(0xff)), Some(0xff));
        assert_eq!(
            numeric(&AttributeValue::Data4(0xffff_ffff)),
            Some(0xffff_ffff)
        );
        assert_eq!(numeric(&AttributeValue::Sdata(-2)), Some(-2i64 as u64));
        assert_eq!(numeric(&AttributeValue::Flag(true)), None);
    }
}
