//! What the minimized BTF must keep: per target type, whether it is kept at all, which members
//! (or enumerators) of it, and which relocations asked for each — the `--explain` provenance.
//!
//! The rules follow from what libbpf reads when it relocates against the output:
//! - field relocations walk the candidate's members by the target spec, and compare the final
//!   member's type (size, signedness, kind, enum/fwd name); member types are kept with
//!   modifiers and typedefs collapsed, pointers as pointers;
//! - `type_exists`/`type_size`/`target_type_id` compare kinds through pointers, arrays and
//!   function prototypes;
//! - array index types are never compared, so they are not kept for their own sake;
//! - `type_matches` compares whole structures (members by name, recursively, shallow behind a
//!   pointer) and every enumerator name;
//! - enum relocations look up one enumerator by name.
//!
//! Which matched candidate to record for each relocation is decided by the caller
//! ([`super::RelocInfo`]), so that libbpf's candidate pruning gives the same results.

use crate::btf::{Btf, TypeKind};
use crate::core::spec::MatchedSpec;
use crate::core::{BtfSource, RelocKind, Targets};
use crate::error::{Error, Result};
use crate::fallible;
use alloc::vec::Vec;
use hashbrown::HashMap;

/// A type in one of the target BTFs. Ids below a module's first id are the main BTF's.
pub type TypeKey = (BtfSource, u32);

/// Index of a relocation in [`super::RelocInfo`]'s provenance list.
pub type ReasonId = u32;

/// What is kept of one type.
#[derive(Debug, Default)]
pub struct Mark {
    /// Keep every member / enumerator.
    pub whole: bool,
    /// Relocations that need the type itself.
    pub reasons: Vec<ReasonId>,
    /// Kept member (or enumerator) indices, sorted, each with the relocations that need it.
    pub members: Vec<(u32, Vec<ReasonId>)>,
}

impl Mark {
    /// Whether member / enumerator `index` is kept.
    pub fn keeps(&self, index: usize) -> bool {
        self.whole
            || self
                .members
                .binary_search_by_key(&(index as u32), |(i, _)| *i)
                .is_ok()
    }
}

/// Add `reason` to `list` once; `None` (provenance not kept) adds nothing.
fn push_reason(list: &mut Vec<ReasonId>, reason: Option<ReasonId>) -> Result<()> {
    if let Some(reason) = reason
        && !list.contains(&reason)
    {
        fallible::push(list, reason)?;
    }
    Ok(())
}

/// All marks of a run.
#[derive(Debug, Default)]
pub struct Marks {
    map: HashMap<TypeKey, Mark>,
}

impl Marks {
    /// No marks.
    pub fn new() -> Self {
        Self::default()
    }

    /// The kept types in output order: main BTF by id, then each module by id.
    pub fn sorted_keys(&self) -> Result<Vec<TypeKey>> {
        let mut keys = fallible::vec_with_capacity(self.map.len())?;
        keys.extend(self.map.keys().copied());
        keys.sort_unstable();
        Ok(keys)
    }

    /// A copy, allocated fallibly: what [`super::RelocInfo`] restores when recording an object
    /// fails part way (out of memory), so that a failing object records nothing.
    pub fn try_clone(&self) -> Result<Marks> {
        let mut map = HashMap::new();
        map.try_reserve(self.map.len())?;
        for (key, mark) in &self.map {
            let mut members = fallible::vec_with_capacity(mark.members.len())?;
            for (index, reasons) in &mark.members {
                members.push((*index, fallible::to_vec(reasons)?));
            }
            let copy = Mark {
                whole: mark.whole,
                reasons: fallible::to_vec(&mark.reasons)?,
                members,
            };
            // Room was reserved above: no allocation.
            map.insert(*key, copy);
        }
        Ok(Marks { map })
    }

    /// The mark of `key`, if kept.
    pub fn get(&self, key: &TypeKey) -> Option<&Mark> {
        self.map.get(key)
    }

    fn entry(&mut self, key: TypeKey) -> Result<&mut Mark> {
        self.map.try_reserve(1)?;
        Ok(self.map.entry(key).or_default())
    }

    fn mark(&mut self, key: TypeKey, reason: Option<ReasonId>) -> Result<bool> {
        let is_new = !self.map.contains_key(&key);
        push_reason(&mut self.entry(key)?.reasons, reason)?;
        Ok(is_new)
    }

    fn mark_member(&mut self, key: TypeKey, index: u32, reason: Option<ReasonId>) -> Result<()> {
        let mark = self.entry(key)?;
        push_reason(&mut mark.reasons, reason)?;
        match mark.members.binary_search_by_key(&index, |(i, _)| *i) {
            Ok(pos) => push_reason(&mut mark.members[pos].1, reason),
            Err(pos) => {
                mark.members.try_reserve(1)?;
                let mut reasons = Vec::new();
                push_reason(&mut reasons, reason)?;
                mark.members.insert(pos, (index, reasons));
                Ok(())
            }
        }
    }

    fn mark_whole(&mut self, key: TypeKey, reason: Option<ReasonId>) -> Result<bool> {
        let is_new = self.mark(key, reason)?;
        let mark = self.entry(key)?;
        let first_time_whole = !mark.whole;
        mark.whole = true;
        Ok(is_new || first_time_whole)
    }
}

/// Records relocation results into [`Marks`], reading types from the targets.
pub struct Recorder<'m, 'r, 't> {
    /// Where marks go.
    pub marks: &'m mut Marks,
    /// The target BTFs.
    pub targets: &'r Targets<'t>,
    /// The relocation being recorded, when provenance is kept.
    pub reason: Option<ReasonId>,
}

impl<'t> Recorder<'_, '_, 't> {
    fn btf(&self, source: BtfSource) -> &'t Btf<'t> {
        self.targets.btf(source)
    }

    /// The owner of `id` as seen from `source`: module ids below the module's first id are the
    /// main BTF's.
    fn key(&self, source: BtfSource, id: u32) -> TypeKey {
        match source {
            BtfSource::Module(_) if id < self.btf(source).start_id() => (BtfSource::Main, id),
            _ => (source, id),
        }
    }

    /// Record what one matched candidate's target spec needs.
    pub fn record(&mut self, source: BtfSource, spec: &MatchedSpec<'_>) -> Result<()> {
        let root = spec.root_type_id;
        if spec.kind.is_field_based() {
            self.record_field(source, spec)
        } else if spec.kind == RelocKind::TypeMatches {
            let resolved = self.mark_chain(source, root)?;
            self.mark_matched_graph(source, resolved)
        } else if spec.kind.is_type_based() {
            let resolved = self.mark_chain(source, root)?;
            self.mark_compat_graph(source, resolved)
        } else {
            let resolved = self.mark_chain(source, root)?;
            let value = spec.raw.first().copied().ok_or(Error::BadRelocation {
                relo: 0,
                reason: "enum target spec without an enumerator",
            })?;
            self.marks
                .mark_member(self.key(source, resolved), value, self.reason)
        }
    }

    /// Mark `id` and the modifiers/typedefs from it to the first other type (the candidate was
    /// found by the first one's name); returns that type's id.
    fn mark_chain(&mut self, source: BtfSource, id: u32) -> Result<u32> {
        let btf = self.btf(source);
        let mut id = id;
        for _ in 0..=crate::btf::MAX_RESOLVE_DEPTH {
            if id == 0 {
                return Ok(0);
            }
            self.marks.mark(self.key(source, id), self.reason)?;
            match btf.type_by_id(id)?.kind.modified_type() {
                Some(next) => id = next,
                None => return Ok(id),
            }
        }
        Err(Error::BadType {
            id,
            reason: "modifier/typedef chain too deep",
        })
    }

    /// Walk the target spec's low-level path from the root, keeping every member on it and the
    /// type of the accessed field.
    fn record_field(&mut self, source: BtfSource, spec: &MatchedSpec<'_>) -> Result<()> {
        let btf = self.btf(source);
        let mut id = self.mark_chain(source, spec.root_type_id)?;
        for &index in spec.raw.iter().skip(1) {
            let ty = btf.skip_mods_and_typedefs(id)?;
            match &ty.kind {
                TypeKind::Struct(c) | TypeKind::Union(c) => {
                    let member = c.member(index as usize).ok_or(Error::BadType {
                        id: ty.id,
                        reason: "target spec names a member that does not exist",
                    })?;
                    self.marks
                        .mark_member(self.key(source, ty.id), index, self.reason)?;
                    self.mark_field_type(source, member.type_id)?;
                    // libbpf lets a zero-length array be indexed only as the last member; keep
                    // the real last member too, so dropping members cannot make one flexible.
                    let last = c.len().saturating_sub(1);
                    let zero_len_array = matches!(
                        btf.skip_mods_and_typedefs(member.type_id)?.kind,
                        TypeKind::Array(a) if a.nelems == 0
                    );
                    if zero_len_array && index as usize != last {
                        let last_member = c.member(last).ok_or(Error::BadType {
                            id: ty.id,
                            reason: "no last member",
                        })?;
                        self.marks.mark_member(
                            self.key(source, ty.id),
                            last as u32,
                            self.reason,
                        )?;
                        self.mark_field_type(source, last_member.type_id)?;
                    }
                    id = member.type_id;
                }
                TypeKind::Array(a) => id = a.elem_type,
                _ => {
                    return Err(Error::BadType {
                        id: ty.id,
                        reason: "target spec steps into a non-composite type",
                    });
                }
            }
        }
        Ok(())
    }

    /// Keep what a field's type contributes to a relocation: the type itself (modifiers and
    /// typedefs collapsed away), and for arrays their element type. Array index types are never
    /// read by CO-RE; emission points them at any kept integer.
    fn mark_field_type(&mut self, source: BtfSource, id: u32) -> Result<()> {
        let btf = self.btf(source);
        let mut id = id;
        for _ in 0..=crate::btf::MAX_RESOLVE_DEPTH {
            let ty = btf.skip_mods_and_typedefs(id)?;
            if ty.id == 0 {
                return Ok(());
            }
            self.marks.mark(self.key(source, ty.id), self.reason)?;
            match ty.kind {
                TypeKind::Array(a) => id = a.elem_type,
                _ => return Ok(()),
            }
        }
        Err(Error::BadType {
            id,
            reason: "nested arrays too deep",
        })
    }

    /// Keep what type compatibility looks at: kinds through pointers, arrays and function
    /// prototypes. Iterative with a visited set, so cycles through pointers terminate.
    fn mark_compat_graph(&mut self, source: BtfSource, root: u32) -> Result<()> {
        let btf = self.btf(source);
        let mut work: Vec<u32> = Vec::new();
        fallible::push(&mut work, root)?;
        let mut seen: HashMap<u32, ()> = HashMap::new();
        while let Some(id) = work.pop() {
            let ty = btf.skip_mods_and_typedefs(id)?;
            if ty.id == 0 || seen.contains_key(&ty.id) {
                continue;
            }
            seen.try_reserve(1)?;
            seen.insert(ty.id, ());
            self.marks.mark(self.key(source, ty.id), self.reason)?;
            match ty.kind {
                TypeKind::Ptr(target) => fallible::push(&mut work, target)?,
                TypeKind::Array(a) => fallible::push(&mut work, a.elem_type)?,
                TypeKind::FuncProto(p) => {
                    fallible::push(&mut work, p.return_type)?;
                    for param in p.params() {
                        fallible::push(&mut work, param.type_id)?;
                    }
                }
                _ => {}
            }
        }
        Ok(())
    }

    /// Keep what `type_matches` compares: whole structs/unions and enums, recursively, but only
    /// the kind and name of composites behind a pointer.
    fn mark_matched_graph(&mut self, source: BtfSource, root: u32) -> Result<()> {
        let btf = self.btf(source);
        let mut work: Vec<(u32, bool)> = Vec::new();
        fallible::push(&mut work, (root, false))?;
        let mut seen: HashMap<(u32, bool), ()> = HashMap::new();
        while let Some((id, behind_ptr)) = work.pop() {
            let ty = btf.skip_mods_and_typedefs(id)?;
            if ty.id == 0 || seen.contains_key(&(ty.id, behind_ptr)) {
                continue;
            }
            seen.try_reserve(1)?;
            seen.insert((ty.id, behind_ptr), ());
            let key = self.key(source, ty.id);
            match ty.kind {
                TypeKind::Struct(c) | TypeKind::Union(c) if !behind_ptr => {
                    self.marks.mark_whole(key, self.reason)?;
                    for m in c.members() {
                        fallible::push(&mut work, (m.type_id, false))?;
                    }
                }
                TypeKind::Enum(_) | TypeKind::Enum64(_) => {
                    self.marks.mark_whole(key, self.reason)?;
                }
                TypeKind::Ptr(target) => {
                    self.marks.mark(key, self.reason)?;
                    fallible::push(&mut work, (target, true))?;
                }
                TypeKind::Array(a) => {
                    self.marks.mark(key, self.reason)?;
                    fallible::push(&mut work, (a.elem_type, behind_ptr))?;
                }
                TypeKind::FuncProto(p) => {
                    self.marks.mark(key, self.reason)?;
                    fallible::push(&mut work, (p.return_type, behind_ptr))?;
                    for param in p.params() {
                        fallible::push(&mut work, (param.type_id, behind_ptr))?;
                    }
                }
                _ => {
                    self.marks.mark(key, self.reason)?;
                }
            }
        }
        Ok(())
    }
}
