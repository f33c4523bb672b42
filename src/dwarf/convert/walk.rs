//! The second pass's walk: one read of each unit's DIEs with gimli's raw entries, each
//! DIE's attributes parsed once into [`Attrs`] (the ones the records read), and only the
//! DIEs a record is made of kept: the DIEs that become records ([`Job`]) and their
//! children, grandchildren and so on of the tags records read (members, enumerators,
//! subranges, parameters, annotations). The kept DIEs of one subtree of the unit's root are
//! converted together, in DFS order (the order the records, extra records and names are
//! written in), whenever the walk is inside none of them.

use super::{ALIAS, At, DW_TAG_LLVM_ANNOTATION, Input, Output, gimli_reason};
use crate::error::Result;
use crate::fallible;
use alloc::vec::Vec;
use gimli::{AttributeValue, DwAt, DwTag, UnitOffset, constants as dw};

type Value<'a> = AttributeValue<super::Reader<'a>>;

/// The attributes the records read, in [`Attrs`]' order.
#[derive(Debug, Clone, Copy)]
pub(super) enum A {
    Name,
    Type,
    ByteSize,
    BitSize,
    DataBitOffset,
    BitOffset,
    MemberLocation,
    Encoding,
    UpperBound,
    Count,
    ConstValue,
    Declaration,
    External,
    Signature,
}

const WANTED: usize = 14;

/// Where attribute `name` goes in [`Attrs`].
fn wanted(name: DwAt) -> Option<usize> {
    Some(match name {
        dw::DW_AT_name => A::Name,
        dw::DW_AT_type => A::Type,
        dw::DW_AT_byte_size => A::ByteSize,
        dw::DW_AT_bit_size => A::BitSize,
        dw::DW_AT_data_bit_offset => A::DataBitOffset,
        dw::DW_AT_bit_offset => A::BitOffset,
        dw::DW_AT_data_member_location => A::MemberLocation,
        dw::DW_AT_encoding => A::Encoding,
        dw::DW_AT_upper_bound => A::UpperBound,
        dw::DW_AT_count => A::Count,
        dw::DW_AT_const_value => A::ConstValue,
        dw::DW_AT_declaration => A::Declaration,
        dw::DW_AT_external => A::External,
        dw::DW_AT_signature => A::Signature,
        _ => return None,
    } as usize)
}

/// A DIE's attributes the records read: each the first of its name, as gimli's
/// `attr_value` finds it.
#[derive(Debug, Clone, Copy)]
pub(super) struct Attrs<'a>([Option<Value<'a>>; WANTED]);

impl<'a> Attrs<'a> {
    /// Read the attributes `specs` of the DIE at `raw`, skipping the ones not wanted.
    pub(super) fn read(
        raw: &mut gimli::EntriesRaw<'_, '_, super::Reader<'a>>,
        specs: &[gimli::AttributeSpecification],
    ) -> gimli::Result<Attrs<'a>> {
        let mut attrs = Attrs([None; WANTED]);
        let mut skipped = 0;
        for (i, spec) in specs.iter().enumerate() {
            let Some(slot) = wanted(spec.name()) else {
                continue;
            };
            raw.skip_attributes(&specs[skipped..i])?;
            skipped = i + 1;
            let attr = raw.read_attribute(*spec)?;
            if attrs.0[slot].is_none() {
                attrs.0[slot] = Some(attr.value());
            }
        }
        raw.skip_attributes(&specs[skipped..])?;
        Ok(attrs)
    }

    pub(super) fn get(&self, attr: A) -> Option<Value<'a>> {
        self.0[attr as usize]
    }

    /// A constant attribute, as [`super::numeric`] reads it.
    pub(super) fn udata(&self, attr: A) -> Option<u64> {
        self.get(attr).and_then(|v| super::numeric(&v))
    }

    pub(super) fn flag(&self, attr: A) -> bool {
        matches!(self.get(attr), Some(AttributeValue::Flag(true)))
    }
}

/// What a kept DIE becomes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Job {
    /// Nothing of its own: read by its parent's record.
    None,
    /// The record of a type DIE, with its id.
    Type(u32),
    /// A function's `FUNC` (if pahole encodes it).
    Function,
}

/// A kept DIE.
#[derive(Debug, Clone, Copy)]
pub(super) struct Node<'a> {
    pub(super) tag: DwTag,
    pub(super) offset: UnitOffset,
    pub(super) job: Job,
    pub(super) attrs: Attrs<'a>,
    /// Index of its parent among the kept DIEs, if its parent is kept.
    parent: usize,
    /// One past the index of its last kept descendant.
    end: usize,
}

const NO_PARENT: usize = usize::MAX;

/// The kept children of kept DIE `nodes[index]`, each with its index.
pub(super) fn children<'n, 'a>(
    nodes: &'n [Node<'a>],
    index: usize,
) -> impl Iterator<Item = (usize, &'n Node<'a>)> + 'n {
    let end = nodes.get(index).map_or(0, |n| n.end);
    nodes
        .get(index + 1..end)
        .unwrap_or(&[])
        .iter()
        .enumerate()
        .filter(move |(_, n)| n.parent == index)
        .map(move |(i, n)| (index + 1 + i, n))
}

/// Tags of the DIEs that records read below a kept DIE.
fn is_read_below(tag: DwTag) -> bool {
    matches!(
        tag,
        dw::DW_TAG_member
            | dw::DW_TAG_inheritance
            | dw::DW_TAG_enumerator
            | dw::DW_TAG_subrange_type
            | dw::DW_TAG_formal_parameter
            | dw::DW_TAG_unspecified_parameters
            | DW_TAG_LLVM_ANNOTATION
    )
}

impl<'a> Input<'a> {
    pub(super) fn convert_unit(&self, out: &mut Output<'a, '_>, index: usize) -> Result<()> {
        let data = &self.units[index];
        let mut at = At {
            section: data.section,
            unit: data.start,
            die: u64::MAX,
        };
        let mut nodes: Vec<Node<'a>> = Vec::new();
        // Kept DIEs with children the walk is inside of, innermost last: (index, depth).
        let mut open: Vec<(usize, isize)> = Vec::new();
        let mut slot = 0usize;
        let mut raw = self
            .current(index)?
            .entries_raw(None)
            .map_err(|e| at.err(gimli_reason(e)))?;
        while !raw.is_empty() {
            let depth = raw.next_depth();
            let offset = raw.next_offset();
            at.die = data.start + offset.0 as u64;
            let Some(abbrev) = raw
                .read_abbreviation()
                .map_err(|e| at.err(gimli_reason(e)))?
            else {
                continue;
            };
            while let Some(&(open_index, open_depth)) = open.last() {
                if open_depth < depth {
                    break;
                }
                nodes[open_index].end = nodes.len();
                open.pop();
            }
            // No kept DIE is open: the ones kept so far have all their children.
            if open.is_empty() && !nodes.is_empty() {
                self.run(out, index, &nodes, at)?;
                nodes.clear();
            }
            let tag = abbrev.tag();
            let mut job = Job::None;
            if let Some(&(o, s)) = data.slots.get(slot)
                && u32::try_from(offset.0) == Ok(o)
            {
                slot += 1;
                if s != ALIAS {
                    job = Job::Type(s);
                }
            }
            if job == Job::None && tag == dw::DW_TAG_subprogram {
                job = Job::Function;
            }
            let parent = match open.last() {
                Some(&(i, d)) if d == depth - 1 => i,
                _ => NO_PARENT,
            };
            if job == Job::None && (parent == NO_PARENT || !is_read_below(tag)) {
                raw.skip_attributes(abbrev.attributes())
                    .map_err(|e| at.err(gimli_reason(e)))?;
                continue;
            }
            let attrs =
                Attrs::read(&mut raw, abbrev.attributes()).map_err(|e| at.err(gimli_reason(e)))?;
            let kept = nodes.len();
            fallible::push(
                &mut nodes,
                Node {
                    tag,
                    offset,
                    job,
                    attrs,
                    parent,
                    end: kept + 1,
                },
            )?;
            if abbrev.has_children() {
                fallible::push(&mut open, (kept, depth))?;
            }
        }
        for (open_index, _) in open {
            nodes[open_index].end = nodes.len();
        }
        self.run(out, index, &nodes, at)
    }

    /// Convert the kept DIEs `nodes` of unit `unit`, in order.
    fn run(&self, out: &mut Output<'a, '_>, unit: usize, nodes: &[Node<'a>], at: At) -> Result<()> {
        let mut at = at;
        for (i, node) in nodes.iter().enumerate() {
            at.die = self.units[unit].start + node.offset.0 as u64;
            match node.job {
                Job::Type(id) => self.convert_type(out, unit, nodes, i, id, at)?,
                Job::Function => self.convert_function(out, unit, nodes, i, at)?,
                Job::None => {}
            }
        }
        Ok(())
    }
}
