//! The converting pass's walk (the second pass, or the only one, which then numbers each
//! unit's type DIEs as the first pass would: [`Numbered`]): one read of each unit's DIEs with
//! gimli's raw entries, each DIE's attributes parsed once into [`Attrs`] (the ones the
//! records read), and only the DIEs a record is made of kept: the DIEs that become records
//! ([`Job`]) and their children, grandchildren and so on of the tags records read (members,
//! enumerators, subranges, parameters, annotations). A unit's kept DIEs are converted once it
//! is walked, in DFS order (the order the records, extra records and names are written in),
//! so that one thread can walk the next unit meanwhile.

use super::cursor::Cursor;
use super::plan::{A, WANTED};
use super::values::Values;
use super::{
    ALIAS, At, DW_TAG_LLVM_ANNOTATION, EXTRA_BASE, Input, Output, Target, UnitSlots, gimli_reason,
    is_type_tag,
};
use crate::error::{Error, Result};
use crate::fallible;
use alloc::vec::Vec;
use gimli::{AttributeValue, DwTag, UnitOffset, constants as dw};

type Value<'a> = AttributeValue<super::Reader<'a>>;

/// A DIE's attributes the records read, each the first of its name as gimli's `attr_value`
/// finds it: which are present (bit `A as usize`), and their raw values in [`A`]'s order, as
/// [`super::plan::Plans::read`] reads them, from `first` on among `values`.
#[derive(Debug, Clone, Copy)]
pub(super) struct Attrs<'n, 'a> {
    present: u16,
    first: u32,
    values: &'n Values<'a>,
    /// The id `DW_AT_type` refers to, where the walk found it ([`Node::type_id`]).
    type_id: u32,
    /// The interned `DW_AT_name`, where it was recalled ([`Node::name`]).
    name: u32,
}

/// [`Node::type_id`] of a DIE whose `DW_AT_type` the records resolve.
const UNRESOLVED: u32 = u32::MAX;

impl<'n, 'a> Attrs<'n, 'a> {
    /// The attributes `present` that [`super::plan::Plans::read`] read into `values`, from
    /// value `first` on.
    pub(super) fn new(present: u16, values: &'n Values<'a>, first: u32) -> Attrs<'n, 'a> {
        Attrs {
            present,
            first,
            values,
            type_id: UNRESOLVED,
            name: UNRESOLVED,
        }
    }

    /// The id `DW_AT_type` refers to, if the walk resolved it (0: `void`).
    pub(super) fn resolved_type(&self) -> Option<u32> {
        (self.type_id != UNRESOLVED).then_some(self.type_id)
    }

    /// The interned `DW_AT_name`, if it was recalled.
    pub(super) fn recalled_name(&self) -> Option<u32> {
        (self.name != UNRESOLVED).then_some(self.name)
    }

    #[inline]
    pub(super) fn get(&self, attr: A) -> Option<Value<'a>> {
        self.values.get(self.index(attr)?)
    }

    /// Where attribute `attr`'s value is among [`Attrs::values`], if it is present.
    #[inline]
    fn index(&self, attr: A) -> Option<usize> {
        let bit = 1u16 << attr as u16;
        (self.present & bit != 0)
            .then(|| self.first as usize + (self.present & (bit - 1)).count_ones() as usize)
    }

    /// A constant attribute, as [`super::numeric`] reads it.
    #[inline(always)]
    pub(super) fn udata(&self, attr: A) -> Option<u64> {
        self.values.numeric(self.index(attr)?)
    }

    #[inline]
    pub(super) fn flag(&self, attr: A) -> bool {
        self.index(attr)
            .is_some_and(|index| self.values.is_true(index))
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

/// A kept DIE; its attributes' values are in [`Nodes::values`]. 32 bytes: a kernel's walks
/// write 13 million, which the records' thread reads on the other core.
#[derive(Debug, Clone, Copy)]
struct Node {
    tag: DwTag,
    /// Which attributes it has ([`Attrs`]), and where their values start.
    present: u16,
    first: u32,
    /// Its offset in its unit.
    offset: u32,
    /// What it becomes ([`Node::job`]).
    job: u32,
    /// The id its `DW_AT_type` refers to, resolved by the walk, converting in one pass, when
    /// it is a DIE of the same unit (almost every reference; [`UNRESOLVED`] otherwise):
    /// relative to the unit's first id, plus one (0: `void`), made absolute as the records
    /// read it ([`Nodes::id_base`]). The records' thread, the busier one, only reads it.
    type_id: u32,
    /// Its `DW_AT_name` interned, when the walk found it among the names the records' thread
    /// interned recently ([`Nodes::recall_names`]); [`UNRESOLVED`] otherwise.
    name: u32,
    /// Index of its parent among the kept DIEs, if its parent is kept ([`NO_PARENT`]
    /// otherwise).
    parent: u32,
    /// One past the index of its last kept descendant.
    end: u32,
}

const _: () = assert!(core::mem::size_of::<Node>() == 32);

const NO_PARENT: u32 = u32::MAX;

/// [`Node::job`] of [`Job::None`] and [`Job::Function`]; any other is [`Job::Type`]'s id.
const JOB_NONE: u32 = u32::MAX;
const JOB_FUNCTION: u32 = u32::MAX - 1;
// A record's id is never one of them.
const _: () = assert!(crate::dwarf::MAX_RECORD_ID < JOB_FUNCTION);

impl Job {
    /// As [`Node::job`] holds it.
    fn encode(self) -> u32 {
        match self {
            Job::None => JOB_NONE,
            Job::Function => JOB_FUNCTION,
            Job::Type(id) => id,
        }
    }

    fn decode(job: u32) -> Job {
        match job {
            JOB_NONE => Job::None,
            JOB_FUNCTION => Job::Function,
            id => Job::Type(id),
        }
    }
}

/// How many kept DIEs ahead [`Nodes::recall_names`] reads the cache of recent names.
const RECALL_AHEAD: usize = 16;

impl Node {
    /// Where its attribute `attr`'s value is among the unit's `values`, if it has one.
    #[inline]
    fn attr_index(&self, values: &Values<'_>, attr: A) -> Option<usize> {
        Attrs::new(self.present, values, self.first).index(attr)
    }
}

/// The kept DIEs, and the values of their attributes (only the ones present).
#[derive(Debug, Default)]
pub(super) struct Nodes<'a> {
    list: Vec<Node>,
    values: Values<'a>,
    /// Whether one of `list` is an annotation (`DW_TAG_LLVM_annotation`): clang's, with
    /// `btf_type_tag`/`btf_decl_tag` in the source; gcc writes none.
    annotations: bool,
    /// Converting in one pass, the unit's first id, once known ([`Input::convert_walked`]):
    /// the walk numbers a unit's type DIEs from 0, and the records add it as they read each
    /// [`Node::job`] and [`Node::type_id`]. Not written into the nodes: a walking thread
    /// writes into them next, and each line the records' thread had written would first be
    /// taken back from its core's cache.
    id_base: u32,
    /// The unit converted from these nodes and the slots its walk numbered, dropped by the
    /// next walk into them ([`Nodes::clear`]): their memory (the unit's abbreviations and
    /// line program header, a hundred blocks or so) is freed by the thread that allocated it,
    /// not block by block by the records' thread, each free then taking the allocator's lock
    /// and the block's header back from the other core.
    retired: Option<(gimli::Unit<super::Reader<'a>>, Option<Numbered>)>,
}

/// A kept DIE as the records read it.
#[derive(Debug, Clone, Copy)]
pub(super) struct Kept<'n, 'a> {
    pub(super) tag: DwTag,
    pub(super) offset: UnitOffset,
    pub(super) job: Job,
    pub(super) attrs: Attrs<'n, 'a>,
}

impl<'a> Nodes<'a> {
    /// Kept DIE `index` (an empty one past the end).
    pub(super) fn get(&self, index: usize) -> Kept<'_, 'a> {
        match self.list.get(index) {
            Some(node) => self.kept(node),
            None => Kept {
                tag: DwTag(0),
                offset: UnitOffset(0),
                job: Job::None,
                attrs: Attrs::new(0, &self.values, 0),
            },
        }
    }

    fn kept(&self, node: &Node) -> Kept<'_, 'a> {
        Kept {
            tag: node.tag,
            offset: UnitOffset(node.offset as usize),
            job: self.job(node),
            attrs: Attrs {
                present: node.present,
                first: node.first,
                values: &self.values,
                type_id: match node.type_id {
                    UNRESOLVED | 0 => node.type_id,
                    id => id - 1 + self.id_base,
                },
                name: node.name,
            },
        }
    }

    /// What `node` becomes, its id made absolute ([`Nodes::id_base`]).
    fn job(&self, node: &Node) -> Job {
        match Job::decode(node.job) {
            Job::Type(id) => Job::Type(id + self.id_base),
            job => job,
        }
    }

    fn clear(&mut self) {
        self.retired = None;
        self.list.clear();
        self.id_base = 0;
        self.values.clear();
        self.annotations = false;
    }

    /// Resolve each kept DIE's `DW_AT_type` that refers into its own unit, numbered in
    /// `slots`, as [`Input::resolve`] would ([`Node::type_id`]); a reference to an alias (an
    /// `_Atomic`) is left to it. `by_offset` holds, for each 4 bytes of the unit, the last
    /// slot starting in them: a reference's slot in one load where [`UnitSlots::find`]
    /// searched (a tenth of the walk). Its entries are never cleared: one is the slot only if
    /// that slot is at the offset (else `find` looks).
    fn resolve_types(&mut self, slots: &UnitSlots, by_offset: &mut Vec<u32>) -> Result<()> {
        if let Some(&(last, _)) = slots.slots.last() {
            let len = (last / 4) as usize + 1;
            if by_offset.len() < len {
                by_offset.try_reserve(len - by_offset.len())?;
                by_offset.resize(len, u32::MAX);
            }
            for (slot, &(offset, _)) in slots.slots.iter().enumerate() {
                if let Some(entry) = by_offset.get_mut((offset / 4) as usize) {
                    // Slots are fewer than a unit's bytes, which fit in 32 bits.
                    *entry = slot as u32;
                }
            }
        }
        for node in &mut self.list {
            let Some(offset) = node
                .attr_index(&self.values, A::Type)
                .and_then(|index| self.values.unit_ref(index))
            else {
                continue;
            };
            let found = u32::try_from(offset).ok().and_then(|offset| {
                by_offset
                    .get((offset / 4) as usize)
                    .and_then(|&slot| slots.slots.get(slot as usize))
                    .filter(|&&(o, _)| o == offset)
                    .or_else(|| slots.find(offset).and_then(|slot| slots.slots.get(slot)))
            });
            node.type_id = match found {
                None => 0,
                Some(&(_, ALIAS)) => UNRESOLVED,
                Some(&(_, id)) => id + 1,
            };
        }
        Ok(())
    }

    /// Set each kept DIE's [`Node::name`] whose `.debug_str` offset is in the cache of
    /// recent names: the records' thread, the busier one, then interns only the others (a
    /// tenth of its time, waiting for the cache's misses one by one). A name found is
    /// interned already, so this changes no name's place among the strings. Each slot is
    /// read [`RECALL_AHEAD`] nodes before its node is given the name: the slots are a table
    /// larger than a core's cache, read in no order, and a read waited on at once held the
    /// walk up (a tenth of it).
    fn recall_names(&mut self, recent: &super::RecentNames) {
        let values = &self.values;
        let key_of = |node: &Node| {
            let index = node.attr_index(values, A::Name)?;
            u32::try_from(values.debug_str_ref(index)?).ok()
        };
        let entry_of = |node: Option<&Node>| {
            node.and_then(key_of)
                .map_or(super::NO_NAME, |key| recent.entry(key))
        };
        let mut ahead = [super::NO_NAME; RECALL_AHEAD];
        for (i, entry) in ahead.iter_mut().enumerate() {
            *entry = entry_of(self.list.get(i));
        }
        for i in 0..self.list.len() {
            let entry = core::mem::replace(
                &mut ahead[i % RECALL_AHEAD],
                entry_of(self.list.get(i + RECALL_AHEAD)),
            );
            let node = &mut self.list[i];
            if let Some(key) = key_of(node)
                && let Some(name) = super::RecentNames::name_in(entry, key)
            {
                node.name = name;
            }
        }
    }

    /// These nodes made a copy of the `walked` ones, as their walk left them: the kept DIEs,
    /// their values, whether one is an annotation.
    fn copy_walked(&mut self, walked: &Nodes<'a>) -> Result<()> {
        self.list.clear();
        fallible::extend(&mut self.list, &walked.list)?;
        self.values.copy_from(&walked.values)?;
        self.annotations = walked.annotations;
        Ok(())
    }

    /// Whether a kept DIE is an annotation ([`Nodes::annotations`]).
    pub(super) fn has_annotations(&self) -> bool {
        self.annotations
    }
}

/// What a walking thread keeps from one walk to the next.
#[derive(Debug, Default)]
struct WalkSpace<'a> {
    /// The nodes it walks in. The helper's walks are then copied at once into the nodes the
    /// records' thread reads: the walk writes each node and rewrites many (its end, its type,
    /// its name), and written in nodes the other core has just read (those of a unit it
    /// converted), each store waited for its line to come back from that core, which with the
    /// two cores far apart was most of the walk's time; copied, the lines are taken in bulk.
    /// The records' thread's own walks are handed on as they are.
    nodes: Nodes<'a>,
    /// How the walk reads each abbreviation's attributes, made once for the thread's walks.
    plans: super::plan::Plans,
    /// For each 4 bytes of a unit, its last slot ([`Nodes::resolve_types`]).
    by_offset: Vec<u32>,
}

/// The kept children of kept DIE `index`, each with its index.
pub(super) fn children<'n, 'a>(
    nodes: &'n Nodes<'a>,
    index: usize,
) -> impl Iterator<Item = (usize, Kept<'n, 'a>)> + 'n {
    let end = nodes.list.get(index).map_or(0, |n| n.end as usize);
    nodes
        .list
        .get(index + 1..end)
        .unwrap_or(&[])
        .iter()
        .enumerate()
        .filter(move |(_, n)| n.parent as usize == index)
        .map(move |(i, n)| (index + 1 + i, nodes.kept(n)))
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

/// One unit's kept DIEs, walked: what the second pass converts of it. The walk of one unit
/// and the records of the one before may be made on two threads
/// ([`Input::convert_walked`] takes the units in order, so the output is the same).
pub(super) struct Walked<'a> {
    index: usize,
    unit: gimli::Unit<super::Reader<'a>>,
    nodes: Nodes<'a>,
    /// How many of `nodes` are whole subtrees of the unit's root, to be converted before
    /// `error` (as a walk that converted each subtree as it ended would have, before failing).
    complete: usize,
    /// What stopped the walk.
    error: Option<Error>,
    /// Converting in one pass: the unit's type DIEs and aliases, numbered by the walk.
    numbered: Option<Numbered>,
}

/// A unit numbered by its walk, converting in one pass, as the first pass
/// ([`Input::number_types`]) numbers it otherwise: from 0, the ids of the units before it
/// added when it is converted ([`Input::convert_walked`]), so that any thread may walk any
/// unit ahead.
#[derive(Debug)]
pub(super) struct Numbered {
    slots: UnitSlots,
    /// Type DIEs numbered.
    count: u32,
}

impl Numbered {
    /// The next id, for the type DIE at `offset`.
    fn type_slot(&mut self, offset: UnitOffset, at: At) -> Result<u32> {
        let id = self.count;
        // Extra records' ids start at EXTRA_BASE until the last DIE's id is known.
        if id >= EXTRA_BASE {
            return Err(crate::dwarf::too_many_records());
        }
        fallible::push(&mut self.slots.slots, (slot_offset(offset, at)?, id))?;
        self.count = id + 1;
        Ok(id)
    }

    /// The DIE at `offset` stands for `target`.
    fn alias(&mut self, offset: UnitOffset, target: Target, at: At) -> Result<()> {
        let offset = slot_offset(offset, at)?;
        fallible::push(&mut self.slots.aliases, (offset, target))?;
        fallible::push(&mut self.slots.slots, (offset, ALIAS))
    }
}

/// Read the attributes `specs` of the DIE at `cursor`, of `plan`, into `values` (with room for
/// [`WANTED`] more): its fixed layout's bytes taken at once, else through gimli's reader.
/// Returns which are present.
#[inline]
fn read_die<'a>(
    plans: &super::plan::Plans,
    plan: super::plan::Plan,
    cursor: &mut Cursor<'a>,
    unit: &gimli::Unit<super::Reader<'a>>,
    specs: &[gimli::AttributeSpecification],
    values: &mut Values<'a>,
) -> gimli::Result<u16> {
    if plan.fixed {
        if plan.string_at.is_none() {
            if let Some(attributes) = plan.size.and_then(|size| cursor.take(size)) {
                return plans.read_fixed(plan, attributes, specs, values);
            }
        } else if let Some((attributes, stretch)) = take_with_string(plan, cursor) {
            return plans.read_with_string(plan, attributes, stretch, specs, values);
        }
    }
    cursor.through_gimli(unit, |raw| {
        plans.read(plan, raw, &unit.header, specs, values)
    })
}

/// Skip the attributes `specs` of the DIE at `cursor`, of `plan`: at once if they have a
/// size, else through gimli's reader.
#[inline]
fn skip_die<'a>(
    plan: super::plan::Plan,
    cursor: &mut Cursor<'a>,
    unit: &gimli::Unit<super::Reader<'a>>,
    specs: &[gimli::AttributeSpecification],
) -> gimli::Result<()> {
    let taken = match plan.string_at {
        None => plan.size.and_then(|size| cursor.take(size)),
        Some(_) => take_with_string(plan, cursor).map(|(attributes, _)| attributes),
    };
    if taken.is_some() {
        return Ok(());
    }
    cursor.through_gimli(unit, |raw| raw.skip_attributes(specs))
}

/// The attributes of the DIE at `cursor`, of `plan`, a layout with an inline string
/// ([`super::plan::Plan::string_at`]), taken at once (the cursor then past them), with the
/// length of that string; `None` (the cursor where it was) if the plan has no such layout or
/// the bytes end first.
#[inline(never)]
fn take_with_string<'a>(
    plan: super::plan::Plan,
    cursor: &mut Cursor<'a>,
) -> Option<(super::Reader<'a>, u32)> {
    let stretch = cursor.string_length(plan.string_at?)?;
    Some((cursor.take(plan.size?.checked_add(stretch)?)?, stretch))
}

/// How many DIEs `list` keeps, as [`Node::end`] holds it.
fn kept_count(list: &[Node], at: At) -> Result<u32> {
    u32::try_from(list.len()).map_err(|_| at.err(TOO_MANY_DIES))
}

/// What a unit with more kept DIEs than [`Node::end`] counts is.
const TOO_MANY_DIES: &str = "too many DIEs in one unit";

/// What a DIE tree with more ends of sibling lists than parents is.
pub(super) const DEPTH_BELOW_ZERO: &str = "DIE tree depth below 0";

/// A DIE's offset in its unit, as slots hold it.
pub(super) fn slot_offset(offset: UnitOffset, at: At) -> Result<u32> {
    u32::try_from(offset.0).map_err(|_| at.err("a DIE offset past 4 GiB in its unit"))
}

/// Units walked ahead of their conversion, at most. Units vary in size by a thousand times:
/// with 4, the helper often waited on a full window while the converting thread, its next
/// unit still being walked, walked later ones itself (38% of the walks, by callgrind per
/// thread); with 8, a kernel's `min-core-btf` is 3-7% faster at the same peak RSS.
#[cfg(feature = "std")]
const LOOKAHEAD: usize = 8;

/// The units walked ahead (by either thread) for the converter, which takes them in order,
/// and the converted units' nodes handed back to be reused: std's mutex and condition
/// variable, which allocate nothing and keep nothing per thread.
#[cfg(feature = "std")]
struct Queue<'a> {
    state: std::sync::Mutex<Walks<'a>>,
    changed: std::sync::Condvar,
    /// Units in all.
    units: usize,
}

#[cfg(feature = "std")]
struct Walks<'a> {
    /// Units walked, not converted yet, each at its index modulo [`LOOKAHEAD`], with the
    /// thread that walked it.
    walked: [Option<(Result<Walked<'a>>, Walker)>; LOOKAHEAD],
    /// The next unit to walk, and the next to convert.
    next_walk: usize,
    next_convert: usize,
    /// Converted units' nodes, each with the thread that wrote a walk into them last.
    spare: [Option<(Nodes<'a>, Walker)>; LOOKAHEAD],
    /// The conversion has stopped (done, failed, or panicked): nothing more is walked.
    closed: bool,
    /// The helper thread has stopped (if it panicked, a unit it took is never walked).
    helper_gone: bool,
}

/// Which thread walks a unit. Each puts its walks into nodes it wrote before where it can
/// (the helper copies into them, the records' thread walks in them): the lines of nodes the
/// other thread wrote last must be taken back from that core's cache, and where the two cores
/// are far apart (another socket or die: a VM's two vCPUs may be placed so from one minute to
/// the next) that took several times as long.
#[cfg(feature = "std")]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Walker {
    Converter,
    Helper,
}

/// What the converting thread does next.
// Returned once per unit and matched at once, never stored: boxing the large variant would
// add an allocation per unit, and one that cannot fail gracefully.
#[cfg(feature = "std")]
#[allow(clippy::large_enum_variant)]
enum Step<'a> {
    Convert(Result<Walked<'a>>, Walker),
    Walk(usize, Nodes<'a>),
    Stop,
}

#[cfg(feature = "std")]
impl<'a> Queue<'a> {
    fn new(units: usize) -> Queue<'a> {
        Queue {
            state: std::sync::Mutex::new(Walks {
                walked: [const { None }; LOOKAHEAD],
                next_walk: 0,
                next_convert: 0,
                spare: [const { None }; LOOKAHEAD],
                closed: false,
                helper_gone: false,
            }),
            changed: std::sync::Condvar::new(),
            units,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Walks<'a>> {
        // Poisoned only by a panic in a section that leaves the state consistent.
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn wait<'g>(
        &self,
        guard: std::sync::MutexGuard<'g, Walks<'a>>,
    ) -> std::sync::MutexGuard<'g, Walks<'a>> {
        self.changed
            .wait(guard)
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The next unit for `walker` to walk, with nodes to walk it into (its own if it has
    /// some spare), if one is due: not past [`LOOKAHEAD`] units ahead of the conversion.
    fn claim(&self, walks: &mut Walks<'a>, walker: Walker) -> Option<(usize, Nodes<'a>)> {
        if walks.closed
            || walks.next_walk >= self.units
            || walks.next_walk - walks.next_convert >= LOOKAHEAD
        {
            return None;
        }
        let index = walks.next_walk;
        walks.next_walk += 1;
        let own = walks
            .spare
            .iter()
            .position(|spare| matches!(spare, Some((_, by)) if *by == walker));
        let any = || walks.spare.iter().position(Option::is_some);
        let nodes = own
            .or_else(any)
            .and_then(|at| walks.spare[at].take())
            .map(|(nodes, _)| nodes)
            .unwrap_or_default();
        Some((index, nodes))
    }

    /// Unit `index`, walked by `walker`.
    fn put(&self, index: usize, walked: Result<Walked<'a>>, walker: Walker) {
        self.lock().walked[index % LOOKAHEAD] = Some((walked, walker));
        self.changed.notify_all();
    }

    /// The converting thread's next step: the next unit in order once it is walked, else a
    /// unit to walk meanwhile.
    fn next_step(&self) -> Step<'a> {
        let mut walks = self.lock();
        loop {
            if walks.next_convert == self.units {
                return Step::Stop;
            }
            let at = walks.next_convert % LOOKAHEAD;
            if let Some((walked, walker)) = walks.walked[at].take() {
                walks.next_convert += 1;
                self.changed.notify_all();
                return Step::Convert(walked, walker);
            }
            if let Some((index, nodes)) = self.claim(&mut walks, Walker::Converter) {
                return Step::Walk(index, nodes);
            }
            // Taken by the helper, which stopped before walking it: it panicked (its join
            // tells).
            if walks.helper_gone {
                return Step::Stop;
            }
            walks = self.wait(walks);
        }
    }

    /// The helper thread's next unit to walk; `None` once there is none.
    fn next_walk(&self) -> Option<(usize, Nodes<'a>)> {
        let mut walks = self.lock();
        loop {
            if walks.closed || walks.next_walk >= self.units {
                return None;
            }
            if let Some(claimed) = self.claim(&mut walks, Walker::Helper) {
                return Some(claimed);
            }
            walks = self.wait(walks);
        }
    }

    /// A converted unit's nodes, into which `walker` wrote its walk, for a next walk.
    fn give_back(&self, nodes: Nodes<'a>, walker: Walker) {
        if let Some(free) = self.lock().spare.iter_mut().find(|s| s.is_none()) {
            *free = Some((nodes, walker));
        }
    }

    /// A guard that, when dropped (also by a panic), marks one side as stopped: `mark` sets
    /// [`Walks::closed`] or [`Walks::helper_gone`], and the other side stops waiting.
    fn stop_on_drop(&self, mark: fn(&mut Walks<'a>)) -> impl Drop + '_ {
        struct Stop<'q, 'a>(&'q Queue<'a>, fn(&mut Walks<'a>));
        impl Drop for Stop<'_, '_> {
            fn drop(&mut self) {
                (self.1)(&mut self.0.lock());
                self.0.changed.notify_all();
            }
        }
        Stop(self, mark)
    }
}

impl<'a> Input<'a> {
    /// The converting pass over every unit, in order. With [`Input::threads`] (and `std`), a
    /// second thread walks units ahead while this one writes the records of each in order,
    /// and walks one itself when the next to convert is not walked yet: the records and
    /// names are written in the same order either way.
    pub(super) fn convert_units(&self, out: &mut Output<'a, '_>) -> Result<()> {
        #[cfg(feature = "std")]
        if self.threads
            && let Some(result) = self.convert_units_threaded(out)
        {
            return result;
        }
        let mut spare = Nodes::default();
        let mut space = WalkSpace::default();
        for index in 0..self.units.len() {
            let walked = self.walk_unit(index, spare, &mut space, false)?;
            spare = self.convert_walked(out, walked)?;
        }
        Ok(())
    }

    /// [`Input::convert_units`] on two threads; `None` if the second cannot be started.
    #[cfg(feature = "std")]
    fn convert_units_threaded(&self, out: &mut Output<'a, '_>) -> Option<Result<()>> {
        let queue = Queue::new(self.units.len());
        std::thread::scope(|scope| {
            let budget = crate::budget::inherit();
            // The thread is std's, allocated as it cannot fail: outside the caller's budget
            // (if any), which charges only the walks.
            let helper = crate::budget::uncharged(|| {
                std::thread::Builder::new()
                    .name("btfgen-dwarf".into())
                    .spawn_scoped(scope, || {
                        // Tells the converter the helper is gone, also if a walk panicked.
                        let _gone = queue.stop_on_drop(|walks| walks.helper_gone = true);
                        budget.run(|| {
                            let mut space = WalkSpace::default();
                            while let Some((index, nodes)) = queue.next_walk() {
                                let walked = self.walk_unit(index, nodes, &mut space, true);
                                queue.put(index, walked, Walker::Helper);
                            }
                        })
                    })
            });
            let Ok(helper) = helper else {
                return None;
            };
            // Tells the helper to walk no more, also if a conversion panicked (the scope then
            // waits for it).
            let closed = queue.stop_on_drop(|walks| walks.closed = true);
            let mut result = Ok(());
            let mut space = WalkSpace::default();
            loop {
                match queue.next_step() {
                    Step::Stop => break,
                    Step::Walk(index, nodes) => {
                        let walked = self.walk_unit(index, nodes, &mut space, false);
                        queue.put(index, walked, Walker::Converter)
                    }
                    Step::Convert(walked, walker) => {
                        match walked.and_then(|walked| self.convert_walked(out, walked)) {
                            Ok(nodes) => queue.give_back(nodes, walker),
                            Err(error) => {
                                result = Err(error);
                                break;
                            }
                        }
                    }
                }
            }
            drop(closed);
            // Joined here rather than by the scope, which only waits for the walks to end: the
            // thread has then exited, and freed what std kept for it, when the call returns.
            if let Err(panic) = crate::budget::uncharged(|| helper.join()) {
                std::panic::resume_unwind(panic);
            }
            Some(result)
        })
    }

    /// Walk unit `index`: its kept DIEs, walked in `space` (the walking thread's, kept from
    /// unit to unit); if `hand_over` (another thread converts them), copied at the end into
    /// `nodes` (a converted unit's, emptied: their memory reused), else handed on as walked,
    /// `nodes` kept in `space` for the next walk. Converting in one pass, its type DIEs are
    /// numbered from 0 and the references into the unit resolved.
    fn walk_unit(
        &self,
        index: usize,
        mut nodes: Nodes<'a>,
        space: &mut WalkSpace<'a>,
        hand_over: bool,
    ) -> Result<Walked<'a>> {
        // The unit these nodes were converted from goes before this one's abbreviations come.
        nodes.clear();
        space.nodes.clear();
        // Walked in the thread's own nodes; `space` holds `nodes` meanwhile.
        core::mem::swap(&mut nodes, &mut space.nodes);
        let unit = self.load(index)?;
        let mut walked = Walked {
            index,
            unit,
            nodes,
            complete: 0,
            error: None,
            numbered: self.one_pass.then(|| Numbered {
                slots: UnitSlots::default(),
                count: 0,
            }),
        };
        if let Err(error) = self.walk(&mut walked, &mut space.plans) {
            walked.error = Some(error);
        } else {
            walked.complete = walked.nodes.list.len();
        }
        if let Some(numbered) = &mut walked.numbered {
            numbered.slots.index()?;
            walked
                .nodes
                .resolve_types(&numbered.slots, &mut space.by_offset)?;
        }
        if !self.units[index].in_sup {
            walked.nodes.recall_names(&self.recent_names);
        }
        // The thread that converts its own walk reads lines it has just written: no copy.
        if hand_over {
            space.nodes.copy_walked(&walked.nodes)?;
            core::mem::swap(&mut walked.nodes, &mut space.nodes);
        }
        Ok(walked)
    }

    /// Convert what [`Input::walk_unit`] walked, then give its bytes back
    /// ([`Input::release_unit`]) and its nodes for the next walk.
    fn convert_walked(&self, out: &mut Output<'a, '_>, walked: Walked<'a>) -> Result<Nodes<'a>> {
        let Walked {
            index,
            unit,
            mut nodes,
            complete,
            error,
            numbered,
        } = walked;
        let data = &self.units[index];
        let at = At {
            section: data.section,
            unit: data.start,
            die: u64::MAX,
        };
        if let Some(numbered) = &numbered {
            // The unit's ids follow those of the units before it.
            let base = out.next_id;
            let end = base
                .checked_add(numbered.count)
                .filter(|&end| end <= EXTRA_BASE)
                .ok_or_else(crate::dwarf::too_many_records)?;
            out.types.fill(end)?;
            fallible::push(&mut out.types.units, base)?;
            out.next_id = end;
            // Below `end`, every id the walk gave plus this fits.
            nodes.id_base = base;
            // Copied to their size (what every unit keeps to the end is allocated here, not
            // between the walks' short-lived allocations), with their ids.
            let mut slots = fallible::to_vec(&numbered.slots.slots)?;
            for (_, id) in &mut slots {
                if *id != ALIAS {
                    *id += base;
                }
            }
            let slots = UnitSlots {
                slots,
                aliases: fallible::to_vec(&numbered.slots.aliases)?,
                buckets: fallible::to_vec(&numbered.slots.buckets)?,
            };
            fallible::push(&mut out.numbered, slots)?;
        }
        out.current = Some((index, unit));
        let converted = self.run(out, index, &nodes, complete, at);
        nodes.retired = out.current.take().map(|(_, unit)| (unit, numbered));
        self.release_unit(index);
        (self.progress)(super::super::Progress::Converted {
            done: index + 1,
            total: self.units.len(),
        });
        converted?;
        match error {
            Some(error) => Err(error),
            None => Ok(nodes),
        }
    }

    /// The walk of [`Input::walk_unit`], reading attributes by `plans`.
    fn walk(&self, walked: &mut Walked<'a>, plans: &mut super::plan::Plans) -> Result<()> {
        // Abbreviation codes are the unit's own.
        plans.clear();
        let index = walked.index;
        let data = &self.units[index];
        let mut at = At {
            section: data.section,
            unit: data.start,
            die: u64::MAX,
        };
        let nodes = &mut walked.nodes;
        let mut numbering = walked.numbered.as_mut();
        // Kept DIEs with children the walk is inside of, innermost last: (index, depth).
        let mut open: Vec<(usize, isize)> = Vec::new();
        let mut slot = 0usize;
        let unit = &walked.unit;
        let mut cursor = Cursor::new(unit).map_err(|e| at.err(gimli_reason(e)))?;
        nodes.values.start_unit(cursor.entries());
        // An alias's attributes, read to find its target (it is not kept).
        let mut scratch = Values::default();
        scratch.start_unit(cursor.entries());
        while let Some((depth, offset, abbrev)) =
            cursor.next(&unit.abbreviations, &mut at, data.start)?
        {
            // As the first pass checks it (converting in one pass, no other pass has).
            if depth < 0 {
                return Err(at.err(DEPTH_BELOW_ZERO));
            }
            while let Some(&(open_index, open_depth)) = open.last() {
                if open_depth < depth {
                    break;
                }
                nodes.list[open_index].end = kept_count(&nodes.list, at)?;
                open.pop();
            }
            // No kept DIE is open: the ones kept so far have all their children.
            if open.is_empty() {
                walked.complete = nodes.list.len();
            }
            let tag = abbrev.tag();
            let plan = plans.get(abbrev, || cursor.raw(unit), &unit.header)?;
            let parent = match open.last() {
                Some(&(i, d)) if d == depth - 1 => Some(i),
                _ => None,
            };
            let mut job = Job::None;
            // Converting in one pass: an annotation of a pointer, a type if it is a type tag.
            let mut maybe_type_tag = false;
            // Converting in one pass: an `_Atomic` or a type unit's skeleton, numbered as an
            // alias once its attributes are read.
            let mut alias = false;
            match numbering.as_deref_mut() {
                None => {
                    let numbered = &data.numbered.slots;
                    if let Some(&(o, s)) = numbered.get(slot)
                        && u32::try_from(offset.0) == Ok(o)
                    {
                        slot += 1;
                        if s != ALIAS {
                            job = Job::Type(s);
                        }
                    }
                }
                // As the first pass's scan numbers the unit (`scan_into`).
                Some(numbered) => {
                    alias = tag == dw::DW_TAG_atomic_type || plan.signed;
                    if !alias && is_type_tag(tag) {
                        job = Job::Type(numbered.type_slot(offset, at)?);
                    }
                    maybe_type_tag = !alias
                        && tag == DW_TAG_LLVM_ANNOTATION
                        && parent.and_then(|p| nodes.list.get(p)).map(|p| p.tag)
                            == Some(dw::DW_TAG_pointer_type);
                }
            }
            if job == Job::None && tag == dw::DW_TAG_subprogram && self.functions {
                job = Job::Function;
            }
            let specs = abbrev.attributes();
            if job == Job::None && (parent.is_none() || !is_read_below(tag)) {
                if let (true, Some(numbered)) = (alias, numbering.as_deref_mut()) {
                    scratch.clear();
                    scratch.reserve(WANTED)?;
                    let present = read_die(plans, plan, &mut cursor, unit, specs, &mut scratch)
                        .map_err(|e| at.err(gimli_reason(e)))?;
                    let attrs = Attrs::new(present, &scratch, 0);
                    self.number_alias(numbered, index, attrs, offset, at)?;
                } else {
                    skip_die(plan, &mut cursor, unit, specs)
                        .map_err(|e| at.err(gimli_reason(e)))?;
                }
                continue;
            }
            let first = u32::try_from(nodes.values.len())
                .map_err(|_| at.err("too many attributes in one unit"))?;
            nodes.values.reserve(WANTED)?;
            let present = read_die(plans, plan, &mut cursor, unit, specs, &mut nodes.values)
                .map_err(|e| at.err(gimli_reason(e)))?;
            if let Some(numbered) = numbering.as_deref_mut() {
                let attrs = Attrs::new(present, &nodes.values, first);
                if alias {
                    self.number_alias(numbered, index, attrs, offset, at)?;
                } else if maybe_type_tag
                    && let Some(name) = attrs.get(A::Name)
                    && self
                        .dwarf
                        .attr_string(unit, name)
                        .map_err(|e| at.err(gimli_reason(e)))?
                        .slice()
                        == b"btf_type_tag"
                {
                    job = Job::Type(numbered.type_slot(offset, at)?);
                }
            }
            let kept = nodes.list.len();
            let end = u32::try_from(kept + 1).map_err(|_| at.err(TOO_MANY_DIES))?;
            nodes.annotations |= tag == DW_TAG_LLVM_ANNOTATION;
            fallible::push(
                &mut nodes.list,
                Node {
                    tag,
                    present,
                    first,
                    offset: slot_offset(offset, at)?,
                    job: job.encode(),
                    type_id: UNRESOLVED,
                    name: UNRESOLVED,
                    // Below `end`, which fits.
                    parent: parent.map_or(NO_PARENT, |p| p as u32),
                    end,
                },
            )?;
            if abbrev.has_children() {
                fallible::push(&mut open, (kept, depth))?;
            }
        }
        let count = kept_count(&nodes.list, at)?;
        for (open_index, _) in open {
            nodes.list[open_index].end = count;
        }
        Ok(())
    }

    /// Number the DIE at `offset` of unit `unit`, with `attrs`, as an alias for what its
    /// signature (a type unit's skeleton) or its type (an `_Atomic`) names, converting in
    /// one pass.
    fn number_alias(
        &self,
        numbered: &mut Numbered,
        unit: usize,
        attrs: Attrs<'_, 'a>,
        offset: UnitOffset,
        at: At,
    ) -> Result<()> {
        let value = attrs.get(A::Signature).or_else(|| attrs.get(A::Type));
        numbered.alias(offset, self.target_value(unit, value, at)?, at)
    }

    /// Convert the first `count` kept DIEs of `nodes` (of unit `unit`), in order.
    fn run(
        &self,
        out: &mut Output<'a, '_>,
        unit: usize,
        nodes: &Nodes<'a>,
        count: usize,
        at: At,
    ) -> Result<()> {
        let mut at = at;
        for (i, node) in nodes.list.iter().enumerate().take(count) {
            at.die = self.units[unit].start + u64::from(node.offset);
            match nodes.job(node) {
                Job::Type(id) => self.convert_type(out, unit, nodes, i, id, at)?,
                Job::Function => self.convert_function(out, unit, nodes, i, at)?,
                Job::None => {}
            }
        }
        Ok(())
    }
}

#[cfg(all(test, feature = "std"))]
mod tests {
    use super::*;

    /// Each thread puts its walks into the nodes it wrote before where it has some spare,
    /// else into the other's, else into new ones.
    #[test]
    fn each_walker_takes_its_own_spare_nodes_first() {
        let queue = Queue::new(4);
        let reserved = |capacity| {
            let mut nodes = Nodes::default();
            nodes.list.reserve_exact(capacity);
            nodes
        };
        queue.give_back(reserved(10), Walker::Helper);
        queue.give_back(reserved(100), Walker::Converter);
        let mut walks = queue.lock();
        let mut claim = |walker| {
            let (_, nodes) = queue.claim(&mut walks, walker).unwrap();
            nodes.list.capacity()
        };
        assert!(claim(Walker::Converter) >= 100);
        assert!((10..100).contains(&claim(Walker::Converter)));
        assert_eq!(claim(Walker::Helper), 0);
    }
}
