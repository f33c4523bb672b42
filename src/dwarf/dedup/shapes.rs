//! The struct phase by shapes. A kernel's 1.07 million struct and union records are mostly
//! copies of a few thousand header definitions, one per unit that includes them, and
//! libbpf's struct phase proves each copy equivalent to the first by walking its type graph
//! (282 thousand walks, 28.5 million visits: most of the deduplication's time). What the walk
//! compares is a record's *shape*: its fields, with each reference replaced by the shape of
//! what it refers to, except that a named struct, union, forward declaration or enum is
//! known by its kind and name alone (the walk pairs a forward declaration with the full
//! type of its name, and stops at types already mapped). Interned, a shape is an id, and
//! where the copies of every named type that the walks can reach have one shape among
//! them, the walks can only prove each struct equivalent to the first with its shape: that
//! one is canonical, the others map to it, with no walk.
//!
//! libbpf's walk also fails where it pairs one type of the canonical side with two of the
//! candidate's (its hypothetical map holds one partner each; libbpf forgives the pair only if
//! the two are identical arrays or structs): that needs a unit holding two records of one
//! shape. So the shapes map only, where the input is read in one pass (each unit's records a
//! range of ids) and no record refers into another unit:
//! - the structs and unions of *clean* units (no two records of one shape, but identical
//!   arrays and structs), and the canonical forward declarations;
//! - whose shape reaches no *ambiguous* named type: one whose full copies have different
//!   shapes (distinct definitions that share a name: the walk proves each copy to its own),
//!   or a struct and a union that share a name (which a forward declaration resolves to is
//!   then the walks' choice).
//!
//! Every other struct and union (of the units that are not clean, or whose shape reaches an
//! ambiguous name) goes through libbpf's walk, in id order, as before. The walks see the
//! forward declarations resolved, as libbpf's walks of the mapped structs would mostly have
//! left them; so that this cannot change what a walk proves, a unit holding two records of a
//! named type the shapes map (a declaration beside a definition) leaves the input to the
//! walks. If a walked struct of a mapped shape does not end mapped to the first of its shape
//! (a walk the candidates' order made different, which a later struct's candidates would
//! see), or the shapes cannot be made (a reference cycle without a name, a shape nested too
//! deep, a type libbpf's walk rejects), the deduplication starts over and walks every struct,
//! as libbpf does: the output is libbpf's either way. The shapes of the two halves of the
//! units are made on two threads and joined; with few walks left, the struct phase's
//! hypothetical map is a table of what they assume, not an entry per record.
//!
//! The reference phase then does the same for the reference types (modifiers, typedefs,
//! pointers, arrays, prototypes) whose shape reaches no ambiguous name (nor an enum whose
//! records are not all one canonical enum): those of one shape refer to the same canonical
//! types, so the first of them the phase would finish is canonical and the others map to it
//! ([`Dedup::premap_references`]); the phase hashes only the rest. The conversion in two passes (type units, a
//! supplementary file) always walks: the tests compare the two on every fixture, the fuzz
//! targets on generated DWARF, and a unit test on generated units with each of these cases.

use super::{Dedup, Types};
use crate::btf::Kind;
use crate::btf::dedup_table::{DedupPhases, DedupRecords, combine, same_words, spread};
use crate::error::Result;
use crate::fallible;
use alloc::vec::Vec;
use hashbrown::HashTable;

/// A record's shape not made yet, and being made.
const UNSET: u32 = u32::MAX;
const BUSY: u32 = u32::MAX - 1;

/// `len` shape slots, none made yet: what [`Dedup::struct_phase_by_shapes`] makes the shapes
/// in.
pub(super) fn unset_slots(len: usize) -> Result<Vec<u32>> {
    let mut slots = fallible::vec_with_capacity(len)?;
    slots.resize(len, UNSET);
    Ok(slots)
}

/// How deep the shapes of unnamed types may nest (a kernel's: a few levels).
const MAX_NESTING: usize = 256;

/// The first word of a shape's content: what kind of shape it is.
const NAMED: u32 = 0;
const PRIMITIVE: u32 = 1;
const VOID: u32 = 2;
/// Any other shape's first word is this plus its record's kind.
const STRUCTURAL: u32 = 16;

/// A named struct's or forward declaration's class (its kind flag), and an enum's: one for
/// both kinds, since libbpf's prim phase merges an enum's forward declaration into a 64-bit
/// enum of its name (`btf_compat_enum` skips the kind), and reference types to either are then
/// one type to its reference phase (a shape per kind made both canonical).
const STRUCT_CLASS: u32 = 1;
const UNION_CLASS: u32 = 2;
const ENUM_CLASS: u32 = 3;
/// [`Shapes::named`]'s class for a primitive's shape.
const PRIMITIVE_KEY: u32 = u32::MAX;

/// The shortcut does not apply to this input (or a struct's walk went otherwise than its
/// shape said): the struct phase walks every struct.
pub(super) struct Unsettled;

/// Shapes interned: each a run of words, known by its index.
#[derive(Default)]
struct Interner {
    /// (hash, shape) for each shape.
    table: HashTable<(u64, u32)>,
    /// Where each shape's words start in `words`; one more entry than shapes.
    starts: Vec<u32>,
    words: Vec<u32>,
}

impl Interner {
    fn new() -> Result<Interner> {
        let mut interner = Interner::default();
        fallible::push(&mut interner.starts, 0)?;
        Ok(interner)
    }

    fn hash(content: &[u32]) -> u64 {
        spread(content.iter().fold(0, |h, &w| combine(h, w)))
    }

    fn content(&self, shape: u32) -> &[u32] {
        let at = shape as usize;
        match (self.starts.get(at), self.starts.get(at + 1)) {
            (Some(&start), Some(&end)) => self.words.get(start as usize..end as usize),
            _ => None,
        }
        .unwrap_or(&[])
    }

    fn len(&self) -> usize {
        self.starts.len() - 1
    }

    /// The shape with `content`, if it was interned.
    fn find(&self, content: &[u32]) -> Option<u32> {
        self.find_hashed(Interner::hash(content), content)
    }

    /// [`Interner::find`], with `content`'s hash `h`.
    fn find_hashed(&self, h: u64, content: &[u32]) -> Option<u32> {
        self.table
            .find(h, |&(hash, shape)| {
                hash == h && same_words(self.content(shape), content)
            })
            .map(|&(_, shape)| shape)
    }

    /// The shape with `content`, interned if it is new; whether it is.
    fn intern(&mut self, content: &[u32]) -> Result<(u32, bool)> {
        let h = Interner::hash(content);
        if let Some(shape) = self.find_hashed(h, content) {
            return Ok((shape, false));
        }
        let shape = u32::try_from(self.len())
            .ok()
            .filter(|&s| s < BUSY)
            .ok_or(crate::error::Error::OutOfMemory)?;
        self.table.try_reserve(1, |&(hash, _)| hash)?;
        fallible::extend(&mut self.words, content)?;
        let end = u32::try_from(self.words.len()).map_err(|_| crate::error::Error::OutOfMemory)?;
        fallible::push(&mut self.starts, end)?;
        self.table.insert_unique(h, (h, shape), |&(hash, _)| hash);
        Ok((shape, true))
    }

    /// The shapes `shape`'s content refers to.
    fn children(&self, shape: u32) -> impl Iterator<Item = u32> + '_ {
        let content = self.content(shape);
        child_positions(content).filter_map(|at| content.get(at).copied())
    }
}

/// Where a shape's content holds the shapes it refers to: after a structural shape's tag,
/// name and info, a reference's target; an array's size, element and index; a struct's size,
/// then each member's name, shape and offset; a prototype's return, then each parameter's
/// name and shape.
fn child_positions(content: &[u32]) -> impl Iterator<Item = usize> + use<> {
    let kind = content
        .first()
        .and_then(|&tag| tag.checked_sub(STRUCTURAL))
        .and_then(Kind::from_raw);
    let (fixed, run): (&[usize], Option<(usize, usize)>) = match kind {
        Some(Kind::Array) => (&[4, 5], None),
        Some(Kind::Struct | Kind::Union) => (&[], Some((5, 3))),
        Some(Kind::FuncProto) => (&[3], Some((5, 2))),
        Some(_) => (&[3], None),
        None => (&[], None),
    };
    let len = content.len();
    let runs = run
        .into_iter()
        .flat_map(move |(first, stride)| (first..len).step_by(stride));
    fixed
        .iter()
        .copied()
        .filter(move |&at| at < len)
        .chain(runs)
}

/// What the pass over the records learns of each shape.
#[derive(Clone, Copy)]
struct ShapeInfo {
    /// Its first full struct, union or enum record (UNSET: none).
    first_full: u32,
    /// A named type's: the structural shape of its first full record (UNSET: none yet).
    definition: u32,
    /// Its last record so far, and that record's unit (to find a unit's second record of it).
    last: u32,
    last_unit: u32,
    /// A named enum's: the canonical enum of its first record (UNSET: none yet).
    canonical: u32,
    /// Its full copies have different shapes, a struct and a union share its name, or (an
    /// enum) its records are not all one canonical enum.
    ambiguous: bool,
}

const NO_INFO: ShapeInfo = ShapeInfo {
    first_full: UNSET,
    definition: UNSET,
    last: UNSET,
    last_unit: UNSET,
    canonical: UNSET,
    ambiguous: false,
};

type Made = core::result::Result<u32, Unsettled>;

/// The shapes of the records of a run of units (one of two halves, made on two threads).
struct Shapes<'d, 't, 'o> {
    d: &'d Dedup<'t>,
    /// The records' shapes (or [`UNSET`]): record `base + i`'s at `of[i]`.
    of: &'o mut [u32],
    base: u32,
    interner: Interner,
    info: Vec<ShapeInfo>,
    /// The content of the shape being made (only the innermost at a time).
    scratch: Vec<u32>,
    /// The named and primitive shapes by class and name ([`Shapes::named`]).
    named: HashTable<(u64, u32)>,
    /// Named structs and unions of which a unit has two records that are not identical.
    named_twins: Vec<u32>,
    /// Per unit, whether it is not clean (two records of one shape, not identical).
    dirty: Vec<bool>,
}

impl<'d, 't, 'o> Shapes<'d, 't, 'o> {
    fn new(d: &'d Dedup<'t>, of: &'o mut [u32], base: u32) -> Result<Shapes<'d, 't, 'o>> {
        Ok(Shapes {
            d,
            of,
            base,
            interner: Interner::new()?,
            info: Vec::new(),
            scratch: Vec::new(),
            named: HashTable::new(),
            named_twins: Vec::new(),
            dirty: Vec::new(),
        })
    }

    /// Intern `content`, with room for what is learned of a new shape.
    fn intern(&mut self, content: &[u32]) -> Result<u32> {
        let (shape, new) = self.interner.intern(content)?;
        if new {
            fallible::push(&mut self.info, NO_INFO)?;
        }
        Ok(shape)
    }

    /// Intern `scratch`.
    fn intern_scratch(&mut self) -> Result<u32> {
        let scratch = core::mem::take(&mut self.scratch);
        let shape = self.intern(&scratch);
        self.scratch = scratch;
        shape
    }

    /// The shape of a named struct, union, forward declaration or enum of `class`, or (with
    /// `class` [`PRIMITIVE_KEY`]) of a primitive of canonical type `name`: looked up by the
    /// two (a kernel's units have millions of such records).
    fn named(&mut self, class: u32, name: u32) -> Result<u32> {
        let key = (u64::from(class) << 32) | u64::from(name);
        let h = spread(key);
        if let Some(&(_, shape)) = self.named.find(h, |&(k, _)| k == key) {
            return Ok(shape);
        }
        let shape = if class == PRIMITIVE_KEY {
            self.intern(&[PRIMITIVE, name])?
        } else {
            self.intern(&[NAMED, class, name])?
        };
        self.named.try_reserve(1, |&(k, _)| spread(k))?;
        self.named
            .insert_unique(h, (key, shape), |&(k, _)| spread(k));
        Ok(shape)
    }

    /// The shape of record `id` ([`Shapes::shape`]), read here where it is made already (most
    /// are: each member's type, each copy of a unit's types).
    #[inline(always)]
    fn known_shape(&mut self, id: u32, depth: usize) -> Result<Made> {
        match id
            .checked_sub(self.base)
            .and_then(|i| self.of.get(i as usize))
        {
            Some(&shape) if shape < BUSY => Ok(Ok(shape)),
            _ => self.shape(id, depth),
        }
    }

    /// The shape of record `id`, made (with what it refers to) if it is not yet.
    #[inline(never)]
    fn shape(&mut self, id: u32, depth: usize) -> Result<Made> {
        let slot = id.checked_sub(self.base).map(|i| i as usize);
        let known = slot.and_then(|i| self.of.get(i)).copied();
        match known {
            Some(UNSET) => {}
            Some(BUSY) => return Ok(Err(Unsettled)),
            Some(shape) => return Ok(Ok(shape)),
            None => return self.outside(id),
        }
        let r = self.d.record(id);
        let slot = slot.unwrap_or(0);
        let shape = match r.kind {
            None => self.intern(&[VOID])?,
            Some(kind @ (Kind::Struct | Kind::Union | Kind::Enum | Kind::Enum64 | Kind::Fwd))
                if r.name != 0 =>
            {
                let class = match kind {
                    Kind::Union => UNION_CLASS,
                    Kind::Fwd if r.kind_flag => UNION_CLASS,
                    Kind::Struct | Kind::Fwd => STRUCT_CLASS,
                    _ => ENUM_CLASS,
                };
                self.named(class, r.name)?
            }
            Some(Kind::Int | Kind::Float | Kind::Enum | Kind::Enum64) => {
                let canonical = crate::btf::dedup_table::resolve(&self.d.tables.map, id);
                self.named(PRIMITIVE_KEY, canonical)?
            }
            Some(_) => {
                self.of[slot] = BUSY;
                if let Err(unsettled) = self.build(id, depth)? {
                    return Ok(Err(unsettled));
                }
                self.intern_scratch()?
            }
        };
        self.of[slot] = shape;
        Ok(Ok(shape))
    }

    /// The shape of record `id` outside this half's units: void (or an id no record has), or
    /// an extra record after every unit's, of which the array index `int` is the one a unit
    /// refers to; any other is left to the walks.
    fn outside(&mut self, id: u32) -> Result<Made> {
        let r = self.d.record(id);
        if id == 0 || r.kind.is_none() {
            return Ok(Ok(self.intern(&[VOID])?));
        }
        if r.kind == Some(Kind::Int) && id >= self.d.first_extra() {
            let canonical = crate::btf::dedup_table::resolve(&self.d.tables.map, id);
            return Ok(Ok(self.named(PRIMITIVE_KEY, canonical)?));
        }
        Ok(Err(Unsettled))
    }

    /// The content of record `id`'s shape made of its fields, in `scratch`: the shapes it
    /// refers to made first (each with the scratch buffer). A named struct's or union's is
    /// its definition.
    fn build(&mut self, id: u32, depth: usize) -> Result<core::result::Result<(), Unsettled>> {
        if depth > MAX_NESTING {
            return Ok(Err(Unsettled));
        }
        let d = self.d;
        let r = d.record(id);
        let Some(kind) = r.kind else {
            return Ok(Err(Unsettled));
        };
        let words = d.words(id);
        // What libbpf's walk rejects (Var, DeclTag), and what has no shape of its fields
        // (Datasec, an anonymous forward declaration).
        let shaped =
            kind.has_type_ref() || matches!(kind, Kind::Array | Kind::Struct | Kind::Union);
        if !shaped
            || matches!(kind, Kind::Var | Kind::DeclTag)
            || (kind == Kind::Array && words.len() < 2)
        {
            return Ok(Err(Unsettled));
        }
        for child in crate::dwarf::type_ids(kind, r.size_or_type, words) {
            if let Err(unsettled) = self.known_shape(child, depth + 1)? {
                return Ok(Err(unsettled));
            }
        }
        let stride = match kind {
            Kind::Struct | Kind::Union => 3,
            Kind::FuncProto => 2,
            _ => 0,
        };
        // Made above: each in this half, or a shape of its own (void, an extra `int`).
        let of = |s: &mut Self, id: u32| -> Result<u32> {
            match id.checked_sub(s.base).and_then(|i| s.of.get(i as usize)) {
                Some(&shape) => Ok(shape),
                None => Ok(s.shape(id, depth + 1)?.unwrap_or(UNSET)),
            }
        };
        let mut content = [0u32; 7];
        content[..3].copy_from_slice(&[STRUCTURAL + kind as u32, r.name, r.info()]);
        let fixed_len = match kind {
            Kind::Array => {
                content[3] = r.size_or_type;
                content[4] = of(self, words[0])?;
                content[5] = of(self, words[1])?;
                content[6] = words.get(2).copied().unwrap_or(0);
                7
            }
            Kind::Struct | Kind::Union => {
                content[3] = r.size_or_type;
                4
            }
            _ => {
                content[3] = of(self, r.size_or_type)?;
                4
            }
        };
        let mut scratch = core::mem::take(&mut self.scratch);
        scratch.clear();
        fallible::extend(&mut scratch, &content[..fixed_len])?;
        if stride != 0 {
            scratch.try_reserve(words.len())?;
            for entry in words.chunks_exact(stride) {
                let shape = of(self, entry[1])?;
                scratch.push(entry[0]);
                scratch.push(shape);
                if stride == 3 {
                    scratch.push(entry[2]);
                }
            }
        }
        self.scratch = scratch;
        Ok(Ok(()))
    }

    /// The records of units `first..end` (their first ids in `d.types.units`): their shapes,
    /// the first full record of each shape, each named type's definition (marked ambiguous
    /// where its copies differ), and which units are not clean. [`Unsettled`] where the
    /// shapes settle nothing: a reference into another unit, a shape that cannot be made.
    fn read_units(
        &mut self,
        first: usize,
        end: usize,
    ) -> Result<core::result::Result<(), Unsettled>> {
        let d = self.d;
        let units = &d.types.units;
        let first_extra = d.first_extra();
        self.dirty.try_reserve_exact(end - first)?;
        for unit in first..end {
            let (start, stop) = (units[unit], units[unit + 1]);
            let mut dirty = false;
            for id in start..stop {
                let r = d.record(id);
                let Some(kind) = r.kind else {
                    continue;
                };
                let outside = |t: u32| t != 0 && (t < start || t >= stop) && t < first_extra;
                if crate::dwarf::type_ids(kind, r.size_or_type, d.words(id)).any(outside) {
                    return Ok(Err(Unsettled));
                }
                let Ok(shape) = self.known_shape(id, 0)? else {
                    return Ok(Err(Unsettled));
                };
                if matches!(kind, Kind::Struct | Kind::Union)
                    && self.learn_definition(id, shape)?.is_err()
                {
                    return Ok(Err(Unsettled));
                }
                if r.name != 0 && matches!(kind, Kind::Enum | Kind::Enum64) {
                    // Enums are the prim phase's: a declaration that stayed apart from the
                    // definition, or two definitions, make two reference types of one shape
                    // differ.
                    let canonical = crate::btf::dedup_table::resolve(&d.tables.map, id);
                    let info = &mut self.info[shape as usize];
                    if info.canonical == UNSET {
                        info.canonical = canonical;
                    } else if info.canonical != canonical {
                        info.ambiguous = true;
                    }
                }
                let info = &mut self.info[shape as usize];
                if info.last_unit == unit as u32
                    && !d.identical_arrays(info.last, id)
                    && !d.identical_structs(info.last, id, 0).unwrap_or(false)
                {
                    dirty = true;
                    if r.name != 0 && matches!(kind, Kind::Struct | Kind::Union | Kind::Fwd) {
                        fallible::push(&mut self.named_twins, shape)?;
                    }
                }
                info.last = id;
                info.last_unit = unit as u32;
            }
            self.dirty.push(dirty);
        }
        Ok(Ok(()))
    }

    /// Full record `id` of shape `shape`: the first of its shape, or a copy whose definition
    /// is compared with the first's (a named type's).
    fn learn_definition(
        &mut self,
        id: u32,
        shape: u32,
    ) -> Result<core::result::Result<(), Unsettled>> {
        let named = self.d.record(id).name != 0;
        if self.info[shape as usize].first_full != UNSET {
            // A copy: a named type's definition compared with the first's (an unnamed one's
            // is its shape).
            if named {
                match self.same_definition(id, shape)? {
                    Ok(true) => {}
                    Ok(false) => self.info[shape as usize].ambiguous = true,
                    Err(unsettled) => return Ok(Err(unsettled)),
                }
            }
            return Ok(Ok(()));
        }
        let definition = if named {
            if let Err(unsettled) = self.build(id, 0)? {
                return Ok(Err(unsettled));
            }
            self.intern_scratch()?
        } else {
            shape
        };
        let info = &mut self.info[shape as usize];
        info.first_full = id;
        info.definition = definition;
        Ok(Ok(()))
    }

    /// Whether named struct or union `id`'s definition is the first one's of its `shape`:
    /// compared where it stands, member by member (a kernel's million copies), or made and
    /// compared whole where a member's type is outside its unit.
    fn same_definition(
        &mut self,
        id: u32,
        shape: u32,
    ) -> Result<core::result::Result<bool, Unsettled>> {
        let d = self.d;
        let r = d.record(id);
        let words = d.words(id);
        let mut inside = true;
        for member in words.chunks_exact(3) {
            if let Err(unsettled) = self.known_shape(member[1], 1)? {
                return Ok(Err(unsettled));
            }
            inside &= member[1]
                .checked_sub(self.base)
                .is_some_and(|i| (i as usize) < self.of.len());
        }
        let definition = self.info[shape as usize].definition;
        if !inside {
            if let Err(unsettled) = self.build(id, 0)? {
                return Ok(Err(unsettled));
            }
            return Ok(Ok(
                self.interner.content(definition) == self.scratch.as_slice()
            ));
        }
        let content = self.interner.content(definition);
        let Some(kind) = r.kind else {
            return Ok(Err(Unsettled));
        };
        let header = [STRUCTURAL + kind as u32, r.name, r.info(), r.size_or_type];
        let (Some(head), Some(members)) = (content.get(..4), content.get(4..)) else {
            return Ok(Ok(false));
        };
        let of = &*self.of;
        let base = self.base;
        Ok(Ok(head == header
            && members.len() == words.len()
            && words.chunks_exact(3).zip(members.chunks_exact(3)).all(
                |(m, c)| m[0] == c[0] && m[2] == c[2] && of[(m[1] - base) as usize] == c[1],
            )))
    }

    /// Take in the shapes of the part after this one: each interned here (its references
    /// as this part knows them), what was learned of it joined to this part's. Returns each
    /// of its shapes' number here, by which its records' shapes are renumbered as
    /// [`Dedup::settle`] reads them.
    fn join(&mut self, later: Shapes<'_, '_, '_>) -> Result<Vec<u32>> {
        let mut renumbered: Vec<u32> = Vec::new();
        renumbered.try_reserve_exact(later.interner.len())?;
        let mut content = Vec::new();
        // A shape is interned after those it refers to: renumbered in order, each finds its
        // references renumbered already.
        for shape in 0..later.interner.len() as u32 {
            content.clear();
            fallible::extend(&mut content, later.interner.content(shape))?;
            for at in child_positions(later.interner.content(shape)) {
                content[at] = renumbered
                    .get(content[at] as usize)
                    .copied()
                    .unwrap_or(UNSET);
            }
            self.scratch.clear();
            fallible::extend(&mut self.scratch, &content)?;
            renumbered.push(self.intern_scratch()?);
        }
        let renumber = |shape: u32| renumbered.get(shape as usize).copied().unwrap_or(UNSET);
        for (shape, info) in later.info.iter().enumerate() {
            let mine = &mut self.info[renumbered[shape] as usize];
            mine.ambiguous |= info.ambiguous;
            if mine.canonical == UNSET {
                mine.canonical = info.canonical;
            } else if info.canonical != UNSET && info.canonical != mine.canonical {
                mine.ambiguous = true;
            }
            if info.first_full == UNSET {
                continue;
            }
            if mine.first_full == UNSET {
                mine.first_full = info.first_full;
                mine.definition = renumber(info.definition);
            } else if mine.definition != renumber(info.definition) {
                mine.ambiguous = true;
            }
        }
        self.named_twins.try_reserve(later.named_twins.len())?;
        self.named_twins
            .extend(later.named_twins.iter().map(|&shape| renumber(shape)));
        fallible::extend(&mut self.dirty, &later.dirty)?;
        Ok(renumbered)
    }

    /// A struct and a union of one name: which one a forward declaration resolves to is the
    /// walks' choice, so both are ambiguous.
    fn mark_struct_union_twins(&mut self) {
        for shape in 0..self.interner.len() as u32 {
            let &[NAMED, STRUCT_CLASS, name] = self.interner.content(shape) else {
                continue;
            };
            if self.info[shape as usize].first_full == UNSET {
                continue;
            }
            if let Some(twin) = self.interner.find(&[NAMED, UNION_CLASS, name])
                && self.info[twin as usize].first_full != UNSET
            {
                self.info[twin as usize].ambiguous = true;
                self.info[shape as usize].ambiguous = true;
            }
        }
    }

    /// Per shape, whether it reaches an ambiguous named type (itself included), through the
    /// shapes its content refers to and a named type's definition.
    fn reaching_ambiguous(&self) -> Result<Vec<bool>> {
        let count = self.interner.len();
        let edges = |shape: u32| {
            let definition = match self.interner.content(shape).first() {
                Some(&NAMED) => self
                    .info
                    .get(shape as usize)
                    .map(|i| i.definition)
                    .filter(|&d| d != UNSET),
                _ => None,
            };
            self.interner.children(shape).chain(definition)
        };
        // The shapes that refer to each shape (CSR: counts, then positions).
        let mut starts: Vec<u32> = Vec::new();
        starts.try_reserve_exact(count + 1)?;
        starts.resize(count + 1, 0);
        for shape in 0..count as u32 {
            for child in edges(shape) {
                if let Some(c) = starts.get_mut(child as usize + 1) {
                    *c += 1;
                }
            }
        }
        for i in 1..starts.len() {
            starts[i] += starts[i - 1];
        }
        let mut referrers: Vec<u32> = Vec::new();
        let total = starts.last().copied().unwrap_or(0) as usize;
        referrers.try_reserve_exact(total)?;
        referrers.resize(total, 0);
        let mut fill: Vec<u32> = fallible::to_vec(&starts[..count])?;
        for shape in 0..count as u32 {
            for child in edges(shape) {
                if let Some(at) = fill.get_mut(child as usize) {
                    referrers[*at as usize] = shape;
                    *at += 1;
                }
            }
        }
        drop(fill);
        let mut reaching: Vec<bool> = Vec::new();
        reaching.try_reserve_exact(count)?;
        reaching.extend(self.info.iter().map(|i| i.ambiguous));
        let mut work: Vec<u32> = Vec::new();
        for (shape, &a) in reaching.iter().enumerate() {
            if a {
                fallible::push(&mut work, shape as u32)?;
            }
        }
        while let Some(shape) = work.pop() {
            let at = shape as usize;
            for &referrer in &referrers[starts[at] as usize..starts[at + 1] as usize] {
                if !reaching[referrer as usize] {
                    reaching[referrer as usize] = true;
                    fallible::push(&mut work, referrer)?;
                }
            }
        }
        Ok(reaching)
    }
}

/// What [`Dedup::settle`] leaves to check after the struct phase: the structs of mapped
/// shapes in units that are not clean, walked, each with the first of its shape; and the
/// shapes, for the reference phase.
struct Settled {
    walked: Vec<(u32, u32)>,
    shaped: Shaped,
}

/// The shape of each unit's record, and per shape whether it reaches no ambiguous name: what
/// [`Dedup::premap_references`] reads once the struct phase went as the shapes said.
pub(super) struct Shaped {
    of: Vec<u32>,
    settled: Vec<bool>,
    /// The parts' first units, then the end (as the shapes were made).
    parts: heapless::Vec<usize, { PARTS + 1 }>,
    /// The units' structs and unions the struct phase still has to do, ascending: those
    /// the shapes made canonical, and those left to the walks.
    structs: Vec<u32>,
    /// The units' forward declarations the shapes left canonical, ascending.
    fwds: Vec<u32>,
}

impl Dedup<'_> {
    /// The first extra record's id (after every unit's records; 0 without units).
    pub(super) fn first_extra(&self) -> u32 {
        self.types.units.last().copied().unwrap_or(0)
    }

    /// The struct phase, with the structs and unions the shapes settle mapped without a walk
    /// (see the module's comment), their shapes made (in `slots`, [`unset_slots`]) on two
    /// threads if `threads`;
    /// [`Unsettled`] if the input is not one they settle, or a walk ended otherwise than the
    /// shapes said (the phases' tables must then start over).
    pub(super) fn struct_phase_by_shapes(
        &mut self,
        slots: Vec<u32>,
        threads: bool,
    ) -> Result<core::result::Result<Shaped, Unsettled>> {
        let Some(settled) = self.settle(slots, threads)? else {
            return Ok(Err(Unsettled));
        };
        // The walks are few: the hypothetical map a table of what they assume.
        self.tables.begin_struct_phase(true)?;
        let n = self.tables.map.len() as u32;
        // Every other struct and union is mapped, which the phase would find.
        let rest = settled.shaped.structs.iter().copied();
        for id in rest.chain(self.first_extra()..n) {
            // Settled as the first of its shape: canonical, a candidate for the walks.
            if self.tables.map[id as usize] == id
                && matches!(self.kind(id), Some(Kind::Struct | Kind::Union))
            {
                let h = self.hash_struct(id);
                self.add_candidate(h, id)?;
            } else {
                self.struct_type(id)?;
            }
        }
        // The walked structs of a mapped shape, each as the shapes said.
        for &(id, first) in &settled.walked {
            if crate::btf::dedup_table::resolve(&self.tables.map, id) != first
                || self.tables.map[first as usize] != first
            {
                return Ok(Err(Unsettled));
            }
        }
        Ok(Ok(settled.shaped))
    }

    /// The forward declarations' phase after the struct phase went as the shapes said: its
    /// canonical structs, unions and forward declarations are among those `shaped` lists and
    /// the extra records.
    pub(super) fn resolve_fwds_by_shapes(&mut self, shaped: &Shaped) -> Result<()> {
        let extras = self.first_extra()..self.tables.map.len() as u32;
        let composites = shaped.structs.iter().copied().chain(extras.clone());
        let fwds = shaped.fwds.iter().copied().chain(extras);
        self.resolve_fwds_among(composites, fwds)
    }

    /// Map what the shapes settle (see the module's comment), their shapes made in `slots`
    /// ([`unset_slots`], one per record or fewer); the structs of mapped shapes left to the
    /// walks, to be checked after them. `None`: the shapes settle nothing here.
    fn settle(&mut self, slots: Vec<u32>, threads: bool) -> Result<Option<Settled>> {
        let units = &self.types.units;
        let unit_count = units.len().saturating_sub(1);
        if unit_count == 0 {
            return Ok(None);
        }
        let first_extra = self.first_extra();
        if first_extra as usize > self.tables.map.len() {
            return Ok(None);
        }
        // A slot for each unit's record.
        let mut of = slots;
        of.try_reserve_exact((first_extra as usize).saturating_sub(of.len()))?;
        of.resize(first_extra as usize, UNSET);
        // Parts of about as much work: a record's shape costs about as much as reading its
        // words (a struct's members) again (by records alone, a kernel's second half took
        // half as long again as its first).
        let work = |id: u32| {
            let words = match self.types.records.get(id as usize) {
                Some(r) => r.first_word,
                None => self.types.words.len() as u32,
            };
            u64::from(id) + u64::from(words)
        };
        let (start, total) = (
            work(units[0]),
            work(first_extra).saturating_sub(work(units[0])),
        );
        // Each part's first unit, then the end.
        let mut bounds: heapless::Vec<usize, { PARTS + 1 }> = heapless::Vec::new();
        let _ = bounds.push(0);
        for part in 1..PARTS as u64 {
            let at = start + total / PARTS as u64 * part;
            let unit = units[..unit_count].partition_point(|&first| work(first) < at);
            if bounds.last().is_some_and(|&last| unit > last) && unit < unit_count {
                let _ = bounds.push(unit);
            }
        }
        let _ = bounds.push(unit_count);
        let Some((shapes, reaching, renumbering)) =
            self.shapes_of_parts(&mut of, &bounds, threads)?
        else {
            return Ok(None);
        };
        let Shapes { info, dirty, .. } = shapes;
        // Each part's records apart (on two threads if `threads`): its ids are a range, their
        // shapes and map entries its own.
        let mut parts: heapless::Vec<SettlePart<'_>, PARTS> = heapless::Vec::new();
        let (mut of_rest, mut map_rest) = (&mut of[..], &mut self.tables.map[..]);
        let mut base = 0u32;
        for (part, range) in bounds.windows(2).enumerate() {
            let end = self.types.units[range[1]];
            let len = (end - base) as usize;
            let (of_part, of_after) = core::mem::take(&mut of_rest).split_at_mut(len);
            let (map_part, map_after) = core::mem::take(&mut map_rest).split_at_mut(len);
            let renumbered = part.checked_sub(1).and_then(|later| renumbering.get(later));
            let settle_part = SettlePart {
                units: range[0]..range[1],
                base,
                of: of_part,
                map: map_part,
                renumbered: renumbered.map(Vec::as_slice),
                walked: Vec::new(),
                structs: Vec::new(),
                fwds: Vec::new(),
            };
            if parts.push(settle_part).is_err() {
                return Ok(None);
            }
            (of_rest, map_rest, base) = (of_after, map_after, end);
        }
        let types = &*self.types;
        each_part(threads, &mut parts, |part| {
            part.settle(types, &info, &dirty)?;
            Ok(true)
        })?;
        let (mut walked, mut structs, mut fwds) = (Vec::new(), Vec::new(), Vec::new());
        for part in &parts {
            fallible::extend(&mut walked, &part.walked)?;
            fallible::extend(&mut structs, &part.structs)?;
            fallible::extend(&mut fwds, &part.fwds)?;
        }
        drop(parts);
        let mut settled = Vec::new();
        settled.try_reserve_exact(reaching.len())?;
        settled.extend(reaching.iter().map(|&reaches| !reaches));
        Ok(Some(Settled {
            walked,
            shaped: Shaped {
                of,
                settled,
                parts: bounds,
                structs,
                fwds,
            },
        }))
    }

    /// The shapes of every unit's records into `of`, the units of each part (from each of
    /// `bounds` to the next) made apart (on two threads if `threads`) and joined in order;
    /// what reaches an ambiguous name unmarked as the first of its shape; per shape whether
    /// it does; and per part after the first, its shapes' numbers in the joined shapes (its
    /// records' shapes in `of` are its own). `None`: the shapes settle nothing here.
    fn shapes_of_parts<'s>(
        &'s self,
        of: &'s mut [u32],
        bounds: &[usize],
        threads: bool,
    ) -> Result<Option<(Shapes<'s, 's, 's>, Vec<bool>, Renumbering)>> {
        let units = &self.types.units;
        let mut parts: heapless::Vec<(Shapes<'s, 's, 's>, usize, usize), PARTS> =
            heapless::Vec::new();
        let mut rest = of;
        let mut base = 0u32;
        for range in bounds.windows(2) {
            let end = units[range[1]];
            let (part, after) = core::mem::take(&mut rest).split_at_mut((end - base) as usize);
            if parts
                .push((Shapes::new(self, part, base)?, range[0], range[1]))
                .is_err()
            {
                return Ok(None);
            }
            (rest, base) = (after, end);
        }
        if !each_part(threads, &mut parts, |(shapes, first, end)| {
            Ok(shapes.read_units(*first, *end)?.is_ok())
        })? {
            return Ok(None);
        }
        let mut parts = parts.into_iter().map(|(shapes, _, _)| shapes);
        let Some(mut first) = parts.next() else {
            return Ok(None);
        };
        let mut renumbering = Renumbering::new();
        for later in parts {
            let renumbered = first.join(later)?;
            if renumbering.push(renumbered).is_err() {
                return Ok(None);
            }
        }
        first.mark_struct_union_twins();
        let reaching = first.reaching_ambiguous()?;
        // A unit's two records of a named type the shapes map: a walk of that unit's structs
        // pairs either with the type's canonical forward declaration, which the shapes
        // resolve before libbpf's walks would have (see the module's comment).
        if first
            .named_twins
            .iter()
            .any(|&shape| reaching.get(shape as usize) == Some(&false))
        {
            return Ok(None);
        }
        for (info, &reaches) in first.info.iter_mut().zip(&reaching) {
            if reaches {
                info.first_full = UNSET;
            }
        }
        Ok(Some((first, reaching, renumbering)))
    }
}

/// One part's share of [`Dedup::settle`]: its units' records mapped as their shapes say, and
/// what the struct phase is left with among them.
struct SettlePart<'s> {
    units: core::ops::Range<usize>,
    /// The part's first id: `of` and `map` start there.
    base: u32,
    /// The part's records' shapes, as the part numbered them (renumbered here).
    of: &'s mut [u32],
    /// The part's records' entries in the phases' map.
    map: &'s mut [u32],
    /// The part's shapes' numbers in the joined shapes (the first part's are those).
    renumbered: Option<&'s [u32]>,
    /// The part's structs of mapped shapes in units that are not clean, each with the first of
    /// its shape; its structs and unions left to the struct phase; its forward declarations
    /// left canonical: ascending.
    walked: Vec<(u32, u32)>,
    structs: Vec<u32>,
    fwds: Vec<u32>,
}

impl SettlePart<'_> {
    /// Map the part's records of `types` by the joined shapes' `info`, the units' `dirty`
    /// (whether a unit is not clean).
    fn settle(&mut self, types: &Types, info: &[ShapeInfo], dirty: &[bool]) -> Result<()> {
        for unit in self.units.clone() {
            let (start, end) = (types.units[unit], types.units[unit + 1]);
            for id in start..end {
                let at = (id - self.base) as usize;
                let kind = types.record_at(id).kind;
                let shape = &mut self.of[at];
                if let Some(renumbered) = self.renumbered {
                    *shape = renumbered.get(*shape as usize).copied().unwrap_or(UNSET);
                }
                let map = &mut self.map[at];
                // No full copy, or reaching an ambiguous name (`shapes_of_parts` unmarks those).
                if let Some(info) = info
                    .get(*shape as usize)
                    .filter(|info| info.first_full != UNSET)
                {
                    match kind {
                        Some(Kind::Struct | Kind::Union) if dirty[unit] => {
                            fallible::push(&mut self.walked, (id, info.first_full))?;
                        }
                        Some(Kind::Struct | Kind::Union) => *map = info.first_full,
                        // A canonical forward declaration (the prim phase's first of its
                        // name): the one definition of its name, as a walk or the forward
                        // declarations' phase would resolve it.
                        Some(Kind::Fwd) if *map == id => *map = info.first_full,
                        _ => {}
                    }
                }
                // Left to the struct phase: a canonical struct, or one to walk.
                let mapped_away = crate::btf::dedup_table::is_mapped_to(*map) && *map != id;
                match kind {
                    Some(Kind::Struct | Kind::Union) if !mapped_away => {
                        fallible::push(&mut self.structs, id)?;
                    }
                    Some(Kind::Fwd) if !mapped_away => fallible::push(&mut self.fwds, id)?,
                    _ => {}
                }
            }
        }
        Ok(())
    }
}

/// Per part after the first, its shapes' numbers in the joined shapes ([`Shapes::join`]).
type Renumbering = heapless::Vec<Vec<u32>, PARTS>;

impl Dedup<'_> {
    /// The reference phase's work for the reference types (modifiers, typedefs, pointers,
    /// arrays, prototypes) of a shape that reaches no ambiguous name: such types of one shape
    /// refer to the same canonical types, so libbpf's phase makes the first of them it
    /// finishes canonical and maps the others to it. Here each is mapped to the first of its
    /// shape in the phase's order (ids ascending, each type's references before it), without
    /// hashing it; the phase then only does the others (it finds these mapped). Called
    /// after the forward declarations' phase, once the struct phase went as the shapes said.
    ///
    /// A unit's references stay in the unit (else nothing is shaped), so the phase's order is
    /// each part's in turn: the parts are read apart (on two threads if `threads`;
    /// [`ReferencePart::visit`]), each mapping its types to the first of their shape in the
    /// part; then, in order, each part's firsts are made canonical or mapped to an earlier
    /// part's (a chain `resolve` follows). Returns the units' types left to the reference
    /// phase, ascending: those it would not find mapped.
    pub(super) fn premap_references(&mut self, shaped: Shaped, threads: bool) -> Result<Vec<u32>> {
        let Shaped {
            of,
            settled,
            parts: bounds,
            ..
        } = shaped;
        let Dedup { types, tables } = self;
        let types: &Types = types;
        let mut parts: heapless::Vec<ReferencePart<'_>, PARTS> = heapless::Vec::new();
        let mut unparted = tables.map.get_mut(..of.len()).unwrap_or_default();
        let mut base = 0u32;
        for range in bounds.windows(2) {
            let end = types.units.get(range[1]).copied().unwrap_or(base).max(base);
            let (map, after) = core::mem::take(&mut unparted).split_at_mut((end - base) as usize);
            let part = ReferencePart {
                units: range[0]..range[1],
                base,
                map,
                firsts: Vec::new(),
                rest: Vec::new(),
            };
            if parts.push(part).is_err() {
                break;
            }
            (unparted, base) = (after, end);
        }
        let shapes = settled.len();
        each_part(threads, &mut parts, |part| {
            part.visit(types, &of, &settled)?;
            Ok(true)
        })?;
        let mut rest: Vec<u32> = Vec::new();
        rest.try_reserve_exact(parts.iter().map(|part| part.rest.len()).sum())?;
        for part in &parts {
            rest.extend_from_slice(&part.rest);
        }
        let firsts: heapless::Vec<Vec<(u32, u32)>, PARTS> =
            parts.into_iter().map(|part| part.firsts).collect();
        let mut canonical: Vec<u32> = Vec::new();
        canonical.try_reserve_exact(shapes)?;
        canonical.resize(shapes, UNSET);
        // Each shape's first in the first part that has it is canonical, the others map to
        // it; then, every type's map final, the canonical ones are made so.
        for (shape, id) in firsts.iter().flatten().copied() {
            let first = canonical[shape as usize];
            if first == UNSET {
                canonical[shape as usize] = id;
                self.tables.map[id as usize] = id;
            } else {
                self.tables.map[id as usize] = first;
            }
        }
        for (shape, id) in firsts.iter().flatten().copied() {
            if canonical[shape as usize] == id {
                self.make_canonical_reference(id)?;
            }
        }
        Ok(rest)
    }

    /// Canonical reference type `id` as libbpf's reference phase leaves one: its references
    /// made canonical, itself a candidate for the types the phase still hashes (the extra
    /// records after every unit's, such as a function's prototype, and those the shapes do
    /// not settle).
    fn make_canonical_reference(&mut self, id: u32) -> Result<()> {
        let Some(kind) = self.kind(id) else {
            return Ok(());
        };
        let size_or_type = self.record(id).size_or_type;
        if kind.has_type_ref() {
            let canonical = crate::btf::dedup_table::resolve(&self.tables.map, size_or_type);
            self.set_size_or_type(id, canonical);
        }
        for index in crate::dwarf::type_id_words(kind, self.words(id).len()) {
            let target = self.words(id)[index];
            let canonical = crate::btf::dedup_table::resolve(&self.tables.map, target);
            self.set_word(id, index, canonical);
        }
        self.tables.map[id as usize] = id;
        let h = self.reference_hash(id, kind);
        self.add_candidate(h, id)
    }
}

/// The reference types of one part of the units ([`Dedup::premap_references`]): record
/// `base + i`'s entry of the deduplication's map at `map[i]`.
struct ReferencePart<'m> {
    /// The part's units (indexes of [`Types::units`]).
    units: core::ops::Range<usize>,
    base: u32,
    map: &'m mut [u32],
    /// (shape, type) for the first type of each settled shape, in the phase's order.
    firsts: Vec<(u32, u32)>,
    /// The types the reference phase still has to do, ascending: neither of a settled shape
    /// nor mapped by the phases before.
    rest: Vec<u32>,
}

impl ReferencePart<'_> {
    /// The shape of `id` if it is a reference type of a settled shape (`settled`, by the
    /// records' shapes `of`).
    fn settled_reference(types: &Types, of: &[u32], settled: &[bool], id: u32) -> Option<u32> {
        let shape = *of.get(id as usize)?;
        (types.is_reference(id) && settled.get(shape as usize) == Some(&true)).then_some(shape)
    }

    /// The part's reference types of settled shapes: the first of each shape in the
    /// reference phase's order into `firsts`, the others mapped to it; the types the phase
    /// still has to do into `rest`. The phase's order is a walk of each unit (each type's
    /// references before it), but a unit has one type of most shapes: the part is read in
    /// id order, and only a unit holding two types of a shape whose first is there is
    /// walked, to find which of them the phase finishes first.
    fn visit(&mut self, types: &Types, of: &[u32], settled: &[bool]) -> Result<()> {
        // Per shape, where its first is in `firsts`.
        let mut first_of: Vec<u32> = Vec::new();
        first_of.try_reserve_exact(settled.len())?;
        first_of.resize(settled.len(), UNSET);
        // Per shape, the first id of the last unit walked whose first of it was found.
        let mut found: Vec<u32> = Vec::new();
        for unit in self.units.clone() {
            let (start, end) = (types.units[unit], types.units[unit + 1]);
            let mut twice = false;
            for id in start..end {
                let at = (id - self.base) as usize;
                let Some(shape) = Self::settled_reference(types, of, settled, id) else {
                    if !crate::btf::dedup_table::is_mapped(self.map, at as u32) {
                        fallible::push(&mut self.rest, id)?;
                    }
                    continue;
                };
                match first_of[shape as usize] {
                    UNSET => {
                        first_of[shape as usize] = self.firsts.len() as u32;
                        fallible::push(&mut self.firsts, (shape, id))?;
                    }
                    entry => {
                        let first = self.firsts[entry as usize].1;
                        self.map[at] = first;
                        twice |= first >= start;
                    }
                }
            }
            if twice {
                if found.is_empty() {
                    found.try_reserve_exact(settled.len())?;
                    found.resize(settled.len(), UNSET);
                }
                self.order_unit(types, (of, settled), start..end, &first_of, &mut found)?;
            }
        }
        Ok(())
    }

    /// Make the first of each shape whose first is in the unit of ids `unit` the one the
    /// reference phase finishes first there, walking the unit as the phase does; the one
    /// taken for it in id order, and what was mapped to that one, mapped to it. `found`:
    /// per shape, the unit (its first id) where the walk found its first.
    fn order_unit(
        &mut self,
        types: &Types,
        (of, settled): (&[u32], &[bool]),
        unit: core::ops::Range<u32>,
        first_of: &[u32],
        found: &mut [u32],
    ) -> Result<()> {
        let len = (unit.end - unit.start) as usize;
        let mut visited: Vec<u64> = Vec::new();
        visited.try_reserve_exact(len.div_ceil(64))?;
        visited.resize(len.div_ceil(64), 0);
        // Start the visit of `id` if it is a reference type of the unit not visited yet.
        let enter = |id: u32, visited: &mut [u64], stack: &mut Vec<(u32, usize)>| {
            let Some(at) = id.checked_sub(unit.start).filter(|&at| (at as usize) < len) else {
                return Ok(false);
            };
            let (word, bit) = (at as usize / 64, 1u64 << (at % 64));
            if visited[word] & bit != 0 || !types.is_reference(id) {
                return Ok(false);
            }
            visited[word] |= bit;
            fallible::push(stack, (id, 0)).map(|()| true)
        };
        // (reference type, its next reference to visit): a walk without recursion, as deep
        // as the chains of references are long.
        let mut stack: Vec<(u32, usize)> = Vec::new();
        for root in unit.clone() {
            if !enter(root, &mut visited, &mut stack)? {
                continue;
            }
            while let Some(&mut (id, ref mut next)) = stack.last_mut() {
                if let Some(target) = types.reference_target(id, *next) {
                    *next += 1;
                    enter(target, &mut visited, &mut stack)?;
                    continue;
                }
                stack.pop();
                let Some(shape) = Self::settled_reference(types, of, settled, id) else {
                    continue;
                };
                let entry = first_of[shape as usize] as usize;
                let first = self.firsts[entry].1;
                if first < unit.start || found[shape as usize] == unit.start {
                    continue;
                }
                found[shape as usize] = unit.start;
                if first != id {
                    self.firsts[entry].1 = id;
                    self.map[(first - self.base) as usize] = id;
                    self.map[(id - self.base) as usize] = crate::btf::dedup_table::UNPROCESSED;
                }
            }
        }
        Ok(())
    }
}

/// Parts the shapes of a kernel's units are made in: on two threads, each takes the next part
/// when done with one (the work of a part is foreseen only roughly: with two halves, either
/// thread waited up to a fifth of the phase for the other); each part interns the shapes it
/// meets anew, so more parts hold more memory until they are joined.
const PARTS: usize = 4;

/// `work` on each of `parts`, on two threads if `threads` (and a second can be started), each
/// taking the next part not taken yet, else one after the other: whether `work` said so of
/// every part, or the first error.
pub(super) fn each_part<P: Send>(
    threads: bool,
    parts: &mut [P],
    work: impl Fn(&mut P) -> Result<bool> + Sync,
) -> Result<bool> {
    #[cfg(feature = "std")]
    if threads {
        let queue = std::sync::Mutex::new(parts.iter_mut());
        let run = || -> Result<bool> {
            let mut all = true;
            loop {
                let next = queue
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .next();
                let Some(part) = next else {
                    return Ok(all);
                };
                all &= work(part)?;
            }
        };
        return std::thread::scope(|scope| {
            let budget = crate::budget::inherit();
            let second = crate::budget::uncharged(|| {
                std::thread::Builder::new()
                    .name("btfgen-dedup".into())
                    .spawn_scoped(scope, || budget.run(run))
            })
            .ok();
            let mine = run();
            let theirs = match second {
                Some(second) => second
                    .join()
                    .unwrap_or(Err(crate::error::Error::InvalidArgument(
                        "DWARF deduplication: the second thread's shapes did not finish",
                    ))),
                // Not started: this thread took every part.
                None => Ok(true),
            };
            Ok(mine? & theirs?)
        });
    }
    let _ = threads;
    let mut all = true;
    for part in parts {
        all &= work(part)?;
    }
    Ok(all)
}

#[cfg(test)]
mod tests {
    use super::super::Dedup;
    use crate::btf::dedup_table::{PhaseTables, Record};
    use crate::btf::write::BtfWriter;
    use crate::btf::{Endianness, Kind};
    use crate::dwarf::Types;
    use crate::test_rng::xorshift64;
    use alloc::vec;
    use alloc::vec::Vec;
    use hashbrown::HashMap;

    /// What a unit's records are made of: the types of a few headers, as a compiler writes
    /// them into each unit that includes them.
    #[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
    enum Template {
        Int,
        Char,
        /// Named struct `k`, in variant `v` (a second definition of the same name).
        Struct(u32, u32),
        /// Its forward declaration.
        Fwd(u32),
        /// Pointer to struct `k` (defined in the unit, or declared).
        PtrTo(u32),
        ConstCharArray(u32),
        /// An unnamed union of an `int` and a pointer to struct `k`.
        AnonUnion(u32),
        Typedef(u32),
        Enum(u32),
        AnonEnum(u32),
        /// A pointer to a prototype `int (struct k *)`.
        Callback(u32),
        Proto(u32),
        /// A `const` made before a second pointer to struct `k` it refers to, made after the
        /// first: the reference phase finishes the second first (the const's walk reaches
        /// it before the first pointer's id comes).
        ConstBeforeTwin(u32),
    }

    /// One generated input: units of records, each referring only into itself and to the
    /// array index `int` after every unit (as the converter writes them).
    struct Gen<'w> {
        next: &'w mut dyn FnMut() -> u64,
        names: Vec<u32>,
        records: Vec<(Record, Vec<u32>)>,
        units: Vec<u32>,
        /// The unit being made: its templates made so far.
        made: HashMap<Template, u32>,
        /// Per struct name: defined in this unit, and in which variant.
        defined: HashMap<u32, u32>,
        /// Chance of a second record of a template in one unit (out of 100).
        twins: u64,
        /// Chance of a unit starting with a [`Template::ConstBeforeTwin`] (out of 100).
        late_twins: u64,
        index_int: u32,
        /// Prototypes made in the units, for functions of the same prototype after them.
        protos: Vec<u32>,
    }

    const STRUCTS: u32 = 7;

    impl Gen<'_> {
        fn chance(&mut self, percent: u64) -> bool {
            (self.next)() % 100 < percent
        }

        fn push(&mut self, record: Record, words: Vec<u32>) -> u32 {
            self.records.push((record, words));
            (self.records.len() - 1) as u32
        }

        fn record(kind: Kind, name: u32, flag: bool, vlen: u16, size_or_type: u32) -> Record {
            Record {
                name,
                kind: Some(kind),
                kind_flag: flag,
                vlen,
                size_or_type,
                first_word: 0,
            }
        }

        fn make(&mut self, t: Template) -> u32 {
            if let Some(&id) = self.made.get(&t)
                && !(matches!(
                    t,
                    Template::PtrTo(_) | Template::ConstCharArray(_) | Template::AnonUnion(_)
                ) && self.chance(self.twins))
            {
                return id;
            }
            let name = |g: &Self, i: u32| g.names[i as usize % g.names.len()];
            let id = match t {
                Template::Int => self.push(
                    Self::record(Kind::Int, name(self, 0), false, 0, 4),
                    vec![(1 << 24) | 32],
                ),
                Template::Char => {
                    self.push(Self::record(Kind::Int, name(self, 1), false, 0, 1), vec![8])
                }
                Template::Fwd(k) => self.push(
                    Self::record(Kind::Fwd, name(self, 10 + k), k % 3 == 2, 0, 0),
                    vec![],
                ),
                Template::Struct(k, v) => {
                    // Its id first: members may refer back to it.
                    let kind = if k % 3 == 2 {
                        Kind::Union
                    } else {
                        Kind::Struct
                    };
                    let id = self.push(Self::record(kind, name(self, 10 + k), false, 0, 0), vec![]);
                    self.made.insert(t, id);
                    let next = (k + 1 + v) % STRUCTS;
                    let members = [
                        (name(self, 30), self.make(Template::Int), 0),
                        (name(self, 31), self.make(Template::PtrTo(next)), 64),
                        (
                            name(self, 32),
                            self.make(Template::ConstCharArray(4 + k % 2)),
                            128 + 32 * v,
                        ),
                        (
                            name(self, 33),
                            self.make(Template::AnonUnion((k + 3) % STRUCTS)),
                            192,
                        ),
                        (name(self, 34), self.make(Template::Typedef(k % 2)), 256),
                        (name(self, 35), self.make(Template::Callback(k)), 320),
                        (
                            name(self, 36),
                            self.make(if k % 2 == 0 {
                                Template::Enum(k % 2)
                            } else {
                                Template::AnonEnum(k % 2)
                            }),
                            384,
                        ),
                    ];
                    let words = members
                        .iter()
                        .flat_map(|&(n, ty, off)| [n, ty, off])
                        .collect();
                    self.records[id as usize] = (
                        Self::record(kind, name(self, 10 + k), false, members.len() as u16, 56),
                        words,
                    );
                    return id;
                }
                Template::PtrTo(k) => {
                    let target = match self.defined.get(&k) {
                        Some(&v) => self.make(Template::Struct(k, v)),
                        None => self.make(Template::Fwd(k)),
                    };
                    // Made on the way (the struct points to itself): a second one is a twin.
                    if let Some(&id) = self.made.get(&t)
                        && !self.chance(self.twins)
                    {
                        return id;
                    }
                    self.push(Self::record(Kind::Ptr, 0, false, 0, target), vec![])
                }
                Template::ConstCharArray(n) => {
                    let ch = self.make(Template::Char);
                    let array = self.push(
                        Self::record(Kind::Array, 0, false, 0, 0),
                        vec![ch, self.index_int, n],
                    );
                    self.push(Self::record(Kind::Const, 0, false, 0, array), vec![])
                }
                Template::AnonUnion(k) => {
                    let int = self.make(Template::Int);
                    let ptr = self.make(Template::PtrTo(k));
                    self.push(
                        Self::record(Kind::Union, 0, false, 2, 8),
                        vec![name(self, 40), int, 0, name(self, 41), ptr, 0],
                    )
                }
                Template::Typedef(k) => {
                    let target = if k == 0 {
                        self.make(Template::Int)
                    } else {
                        self.make(Template::PtrTo(k))
                    };
                    self.push(
                        Self::record(Kind::Typedef, name(self, 50 + k), false, 0, target),
                        vec![],
                    )
                }
                Template::Enum(k) => self.push(
                    Self::record(Kind::Enum, name(self, 60 + k), false, 2, 4),
                    vec![name(self, 61), 0, name(self, 62), k],
                ),
                Template::AnonEnum(k) => self.push(
                    Self::record(Kind::Enum, 0, false, 1, 4),
                    vec![name(self, 63), k],
                ),
                Template::Proto(k) => {
                    let int = self.make(Template::Int);
                    let ptr = self.make(Template::PtrTo(k));
                    self.push(
                        Self::record(Kind::FuncProto, 0, false, 1, int),
                        vec![name(self, 70), ptr],
                    )
                }
                Template::Callback(k) => {
                    let proto = self.make(Template::Proto(k));
                    self.push(Self::record(Kind::Ptr, 0, false, 0, proto), vec![])
                }
                Template::ConstBeforeTwin(k) => {
                    let id = self.push(Self::record(Kind::Const, 0, false, 0, 0), vec![]);
                    let first = self.make(Template::PtrTo(k));
                    let target = self.records[first as usize].0.size_or_type;
                    let twin = self.push(Self::record(Kind::Ptr, 0, false, 0, target), vec![]);
                    self.records[id as usize].0.size_or_type = twin;
                    id
                }
            };
            self.made.insert(t, id);
            id
        }

        /// A unit defining a few of the structs (a rare one in another variant), declaring
        /// the ones they point to.
        fn unit(&mut self, ambiguity: u64) {
            self.units.push(self.records.len() as u32);
            self.made.clear();
            self.defined.clear();
            for k in 0..STRUCTS {
                if self.chance(60) {
                    let variant = u32::from(k == 1 && self.chance(ambiguity));
                    self.defined.insert(k, variant);
                }
            }
            if self.chance(self.late_twins) {
                let k = (self.next)() as u32 % STRUCTS;
                self.make(Template::ConstBeforeTwin(k));
            }
            let defined: Vec<(u32, u32)> = self.defined.iter().map(|(&k, &v)| (k, v)).collect();
            let mut defined = defined;
            defined.sort_unstable();
            for (k, v) in defined {
                // A declaration beside the definition: two records of one name in a unit.
                if self.twins > 0 && self.chance(2) {
                    self.make(Template::Fwd(k));
                }
                self.make(Template::Struct(k, v));
            }
            if self.chance(30) {
                let k = (self.next)() as u32 % STRUCTS;
                self.make(Template::PtrTo(k));
            }

            if let Some(&proto) = self.made.get(&Template::Proto(0))
                && self.chance(50)
            {
                self.protos.push(proto);
            }
        }
    }

    /// How often generated units hold twins (two records of one template; [`Gen::twins`],
    /// [`Gen::late_twins`]) and a second definition of a name (out of 100).
    #[derive(Clone, Copy)]
    struct Mix {
        twins: u64,
        late_twins: u64,
        ambiguity: u64,
    }

    /// Records of `units` generated units from `seed`, as [`Types`] (with their unit ranges
    /// if `with_units`, else as the two-pass conversion leaves them), and their names.
    fn generate(seed: u64, units: usize, mix: Mix, with_units: bool) -> (Types, BtfWriter) {
        let mut writer = BtfWriter::new(Endianness::Little).unwrap();
        let names = (0..80)
            .map(|i| writer.add_string(&alloc::format!("n{i}")).unwrap())
            .collect();
        let mut next = xorshift64(seed);
        let mut g = Gen {
            next: &mut next,
            names,
            records: vec![(Record::VOID, vec![])],
            units: Vec::new(),
            made: HashMap::new(),
            defined: HashMap::new(),
            twins: mix.twins,
            late_twins: mix.late_twins,
            index_int: 0,
            protos: Vec::new(),
        };
        // The index `int`'s id, known once every unit is: the records are made with a
        // placeholder, then it is patched.
        g.index_int = u32::MAX;
        for _ in 0..units {
            g.unit(mix.ambiguity);
        }
        let first_extra = g.records.len() as u32;
        g.units.push(first_extra);
        let index = Gen::record(Kind::Int, g.names[2], false, 0, 4);
        g.records.push((index, vec![32]));
        // Functions, as the converter writes them after every unit's types: each with a copy
        // of a unit's prototype (equal to it once deduplicated), after the index `int`.
        for proto in core::mem::take(&mut g.protos) {
            let copy = g.records[proto as usize].clone();
            g.records.push(copy);
            let function = g.records.len() as u32 - 1;
            let name = g.names[71];
            g.records
                .push((Gen::record(Kind::Func, name, false, 1, function), vec![]));
        }
        let mut types = Types::new().unwrap();
        for (record, mut words) in g.records.into_iter().skip(1) {
            if record.kind == Some(Kind::Array) {
                words[1] = first_extra;
            }
            types.push(record, &words).unwrap();
        }
        if with_units {
            types.units = g.units;
        }
        (types, writer)
    }

    fn deduplicated(seed: u64, units: usize, mix: Mix, with_units: bool) -> Vec<u8> {
        let (mut types, mut writer) = generate(seed, units, mix, with_units);
        let prepared = super::super::Prepared::new(types.records.len()).unwrap();
        super::super::dedup(&mut types, prepared, &mut writer, false).unwrap();
        writer.finish().unwrap()
    }

    /// How the shapes took the generated input: 0, not at all; 1, settled, but a walk went
    /// otherwise (the phases start over); 2, settled with no struct walked; 3, with some.
    fn outcome(seed: u64, units: usize, mix: Mix) -> usize {
        let (mut types, _) = generate(seed, units, mix, true);
        let n = types.records.len();
        let mut d = Dedup {
            tables: PhaseTables::new(n, 0, true).unwrap(),
            types: &mut types,
        };
        d.prim_phase(false).unwrap();
        let Some(settled) = d.settle(Vec::new(), false).unwrap() else {
            return 0;
        };
        let walked = settled.walked.len();
        let (mut types, _) = generate(seed, units, mix, true);
        let mut d = Dedup {
            tables: PhaseTables::new(n, 0, true).unwrap(),
            types: &mut types,
        };
        d.prim_phase(false).unwrap();
        match d
            .struct_phase_by_shapes(super::unset_slots(n).unwrap(), false)
            .unwrap()
        {
            Err(_) => 1,
            Ok(_) if walked == 0 => 2,
            Ok(_) => 3,
        }
    }

    /// The deduplication with the shapes is libbpf's walk of every struct, byte for byte, on
    /// generated units: copies of the same structs, some declared only, a second definition
    /// of one name in some units, and units holding two records of one pointer, array or
    /// union.
    #[test]
    fn the_shapes_deduplicate_as_the_walks() {
        let mut outcomes = [0usize; 4];
        for seed in 1..=120u64 {
            let units = 2 + (seed % 13) as usize;
            let mix = Mix {
                twins: [0, 0, 5, 20][(seed % 4) as usize],
                late_twins: 0,
                ambiguity: [0, 0, 10, 50][(seed / 4 % 4) as usize],
            };
            let walked = deduplicated(seed, units, mix, false);
            let shaped = deduplicated(seed, units, mix, true);
            assert!(walked == shaped, "seed {seed}: other bytes with the shapes");
            outcomes[outcome(seed, units, mix)] += 1;
        }
        // Each way exercised.
        assert!(outcomes.iter().all(|&n| n > 5), "{outcomes:?}");
    }

    /// Without twins every unit is clean: the shapes map every struct, walking none, and a
    /// second definition of a name is theirs to find (no walk would).
    #[test]
    fn clean_units_are_deduplicated_by_their_shapes_alone() {
        for seed in 1..=60u64 {
            let units = 2 + (seed % 13) as usize;
            let mix = Mix {
                twins: 0,
                late_twins: 0,
                ambiguity: [0, 10, 50][(seed % 3) as usize],
            };
            let walked = deduplicated(seed, units, mix, false);
            let shaped = deduplicated(seed, units, mix, true);
            assert!(walked == shaped, "seed {seed}: other bytes with the shapes");
            assert_eq!(outcome(seed, units, mix), 2, "seed {seed}");
        }
    }

    /// A unit whose first pointer to a struct comes after a `const` that refers to a second
    /// pointer to it (made after the first): the reference phase finishes the second first,
    /// so where that unit is the first to hold their shape, the second is canonical (the
    /// shapes' reading in id order would take the first).
    #[test]
    fn a_twin_the_reference_phase_finishes_first_is_canonical() {
        let mut settled = 0;
        for seed in 1..=60u64 {
            let units = 2 + (seed % 7) as usize;
            let mix = Mix {
                twins: 0,
                late_twins: 50,
                ambiguity: 0,
            };
            let walked = deduplicated(seed, units, mix, false);
            let shaped = deduplicated(seed, units, mix, true);
            assert!(walked == shaped, "seed {seed}: other bytes with the shapes");
            settled += usize::from(outcome(seed, units, mix) >= 2);
        }
        assert!(settled > 30, "{settled} of 60 settled");
    }
}
