//! libbpf's `btf__dedup` phases on split BTF (libbpf 1.1, which Debian's pahole 1.24 links),
//! over the unified ids of [`View`]: the base's types are canonical, already in the table,
//! and never change; the module's are matched against them and against each other, then
//! the module's canonical types are written after the base's.

use super::{
    IN_PROGRESS, OWN_STRING, Split, UNPROCESSED, View, combine, name_table_add, name_table_get,
    too_deep,
};
use crate::btf::dedup_table::{self, DedupRecords};
use crate::btf::write::BtfWriter;
use crate::btf::{Btf, Kind, MAX_TYPE_ID};
use crate::error::{Error, Result};
use crate::fallible;
use alloc::vec::Vec;
use hashbrown::HashTable;

/// The state of one module's deduplication over a [`super::SplitBase`].
pub(super) struct SplitDedup<'s, 'a> {
    pub(super) view: View<'s, 'a>,
    /// Each type's canonical type (a chain [`SplitDedup::resolve`] follows), or a marker.
    pub(super) map: Vec<u32>,
    /// The struct phase's hypothetical map, canonical id → candidate id.
    pub(super) hypot: Vec<u32>,
    pub(super) hypot_list: Vec<u32>,
    /// libbpf's `hypot_adjust_canon`: the equivalence went through a base FWD that a
    /// module struct would resolve, so the candidate is not taken.
    pub(super) adjust_canon: bool,
    /// Hash → newest module type with it; `chain` (by module index) links to the one
    /// before, and past the module's oldest to the base's table.
    pub(super) table: HashTable<(u64, u32)>,
    pub(super) chain: Vec<u32>,
}

impl SplitDedup<'_, '_> {
    fn b(&self) -> u32 {
        self.view.b
    }

    /// The first candidate with hash `h`: the module's newest, else the base's.
    fn head(&self, h: u64) -> u32 {
        match dedup_table::head(&self.table, h) {
            UNPROCESSED => dedup_table::head(&self.view.base.table, h),
            id => id,
        }
    }

    /// The candidate after `id` with hash `h`.
    fn next(&self, id: u32, h: u64) -> u32 {
        if id < self.b() {
            return self
                .view
                .base
                .chain
                .get(id as usize)
                .copied()
                .unwrap_or(UNPROCESSED);
        }
        match self.chain.get((id - self.b()) as usize) {
            Some(&UNPROCESSED) | None => dedup_table::head(&self.view.base.table, h),
            Some(&next) => next,
        }
    }

    /// The first candidate with hash `h` for which `equal` holds.
    fn find(&self, h: u64, equal: impl Fn(&Self, u32) -> bool) -> Option<u32> {
        let mut c = self.head(h);
        while c != UNPROCESSED {
            if equal(self, c) {
                return Some(c);
            }
            c = self.next(c, h);
        }
        None
    }

    fn add(&mut self, h: u64, id: u32) -> Result<()> {
        let slot = (id - self.b()) as usize;
        dedup_table::add(&mut self.table, &mut self.chain, slot, h, id)
    }

    fn is_mapped(&self, id: u32) -> bool {
        dedup_table::is_mapped(&self.map, id)
    }

    fn resolve(&self, id: u32) -> u32 {
        dedup_table::resolve(&self.map, id)
    }

    pub(super) fn prim_type(&mut self, id: u32) -> Result<()> {
        let v = &self.view;
        let mut new_id = id;
        let h = match v.kind(id) {
            Some(Kind::Int) => {
                let h = v.hash_all(id);
                if let Some(c) = self.find(h, |d, c| d.view.equal_all(id, c)) {
                    new_id = c;
                }
                h
            }
            Some(Kind::Enum | Kind::Enum64) => {
                let h = combine(0, v.rec(id).name);
                let mut resolve_canon = Vec::new();
                let mut c = self.head(h);
                while c != UNPROCESSED {
                    if self.view.equal_all(id, c) {
                        new_id = c;
                        break;
                    }
                    if self.view.compat_enum(id, c) {
                        if self.view.is_enum_fwd(id) {
                            new_id = c;
                            break;
                        }
                        // A canonical enum forward resolves to this full enum.
                        fallible::push(&mut resolve_canon, c)?;
                    }
                    c = self.next(c, h);
                }
                for c in resolve_canon {
                    self.map[c as usize] = id;
                }
                h
            }
            Some(Kind::Fwd | Kind::Float) => {
                let h = v.hash_common(id);
                if let Some(c) = self.find(h, |d, c| d.view.equal_common(id, c)) {
                    new_id = c;
                }
                h
            }
            _ => return Ok(()),
        };
        self.map[id as usize] = new_id;
        if new_id == id {
            self.add(h, id)?;
        }
        Ok(())
    }

    fn clear_hypot(&mut self) {
        for &id in &self.hypot_list {
            self.hypot[id as usize] = UNPROCESSED;
        }
        self.hypot_list.clear();
        self.adjust_canon = false;
    }

    /// libbpf's `btf_dedup_is_equiv`: whether the type graph at module type `cand` is
    /// equivalent to the one at canonical `canon`, recording the pairs assumed on the way.
    fn is_equiv(&mut self, cand: u32, canon: u32, depth: usize) -> Result<bool> {
        if depth > dedup_table::MAX_DEPTH {
            return Err(too_deep());
        }
        if self.resolve(cand) == self.resolve(canon) {
            return Ok(true);
        }
        let canon = self.view.resolve_fwd(&self.map, canon);
        let hypot = self.hypot[canon as usize];
        if hypot != UNPROCESSED {
            return Ok(hypot == cand
                || self.view.identical_arrays(hypot, cand)
                || self.view.identical_structs(hypot, cand, depth + 1)?);
        }
        self.hypot[canon as usize] = cand;
        fallible::push(&mut self.hypot_list, canon)?;
        let v = &self.view;
        let (c, k) = (v.rec(cand), v.rec(canon));
        if c.name != k.name {
            return Ok(false);
        }
        let fwd = Some(Kind::Fwd);
        if (c.kind == fwd || k.kind == fwd) && c.kind != k.kind {
            let fwd_kind = |union: bool| if union { Kind::Union } else { Kind::Struct };
            let (real, fwd_kind) = if c.kind == fwd {
                (k.kind, fwd_kind(c.kind_flag))
            } else {
                let fwd_kind = fwd_kind(k.kind_flag);
                // A base FWD the module's struct would resolve: not an equivalence.
                if real_is(c.kind, fwd_kind) && canon < self.b() {
                    self.adjust_canon = true;
                }
                (c.kind, fwd_kind)
            };
            return Ok(real_is(real, fwd_kind));
        }
        if c.kind != k.kind {
            return Ok(false);
        }
        let Some(kind) = c.kind else {
            return Ok(true);
        };
        match kind {
            Kind::Int => Ok(v.equal_all(cand, canon)),
            Kind::Enum | Kind::Enum64 => Ok(v.compat_enum(cand, canon)),
            Kind::Fwd | Kind::Float => Ok(v.equal_common(cand, canon)),
            Kind::Const
            | Kind::Volatile
            | Kind::Restrict
            | Kind::Ptr
            | Kind::Typedef
            | Kind::Func
            | Kind::TypeTag => {
                if c.info() != k.info() {
                    return Ok(false);
                }
                self.is_equiv(c.size_or_type, k.size_or_type, depth + 1)
            }
            Kind::Array => {
                let (cw, kw) = (v.words(cand), v.words(canon));
                if !v.equal_common(cand, canon) || cw.get(2) != kw.get(2) || cw.len() < 2 {
                    return Ok(false);
                }
                let (ce, ci, ke, ki) = (cw[0], cw[1], kw[0], kw[1]);
                if !self.is_equiv(ci, ki, depth + 1)? {
                    return Ok(false);
                }
                self.is_equiv(ce, ke, depth + 1)
            }
            Kind::Struct | Kind::Union => {
                if !v.shallow_equal_struct(cand, canon) {
                    return Ok(false);
                }
                for i in 0..usize::from(c.vlen) {
                    let ct = self.view.words(cand).get(3 * i + 1).copied();
                    let kt = self.view.words(canon).get(3 * i + 1).copied();
                    let (Some(ct), Some(kt)) = (ct, kt) else {
                        return Ok(false);
                    };
                    if !self.is_equiv(ct, kt, depth + 1)? {
                        return Ok(false);
                    }
                }
                Ok(true)
            }
            Kind::FuncProto => {
                if !v.compat_fnproto(cand, canon)
                    || !self.is_equiv(c.size_or_type, k.size_or_type, depth + 1)?
                {
                    return Ok(false);
                }
                for i in 0..usize::from(c.vlen) {
                    let ct = self.view.words(cand).get(2 * i + 1).copied();
                    let kt = self.view.words(canon).get(2 * i + 1).copied();
                    let (Some(ct), Some(kt)) = (ct, kt) else {
                        return Ok(false);
                    };
                    if !self.is_equiv(ct, kt, depth + 1)? {
                        return Ok(false);
                    }
                }
                Ok(true)
            }
            Kind::Var | Kind::Datasec | Kind::DeclTag => Err(Error::BadType {
                id: cand,
                reason: "a struct refers to a variable, section or tag",
            }),
        }
    }

    fn merge_hypot(&mut self) {
        for i in 0..self.hypot_list.len() {
            let canon = self.hypot_list[i];
            let target = self.hypot[canon as usize];
            let (t, c) = (self.resolve(target), self.resolve(canon));
            let (tk, ck) = (self.view.kind(t), self.view.kind(c));
            let fwd = Some(Kind::Fwd);
            if tk != fwd && ck == fwd {
                self.map[c as usize] = t;
            }
            if self.adjust_canon {
                continue;
            }
            if tk == fwd && ck != fwd {
                self.map[t as usize] = c;
            }
            if matches!(tk, Some(Kind::Struct | Kind::Union))
                && ck != fwd
                && self.is_mapped(c)
                && !self.is_mapped(t)
            {
                self.map[t as usize] = c;
            }
        }
    }

    pub(super) fn struct_type(&mut self, id: u32) -> Result<()> {
        if self.is_mapped(id) || !matches!(self.view.kind(id), Some(Kind::Struct | Kind::Union)) {
            return Ok(());
        }
        let h = self.view.hash_struct(id);
        let mut new_id = id;
        let mut cand = self.head(h);
        while cand != UNPROCESSED {
            let this = cand;
            cand = self.next(this, h);
            if !self.view.shallow_equal_struct(id, this) {
                continue;
            }
            self.clear_hypot();
            if !self.is_equiv(id, this, 0)? {
                continue;
            }
            self.merge_hypot();
            if self.adjust_canon {
                continue;
            }
            new_id = this;
            break;
        }
        self.map[id as usize] = new_id;
        if new_id == id {
            self.add(h, id)?;
        }
        Ok(())
    }

    /// A canonical module FWD names the one canonical struct or union of its name and kind,
    /// among the base's and the module's, when there is exactly one.
    pub(super) fn resolve_fwds(&mut self) -> Result<()> {
        let mut names: HashTable<(u32, u32)> = HashTable::new();
        for id in self.b()..self.map.len() as u32 {
            if matches!(self.view.kind(id), Some(Kind::Struct | Kind::Union))
                && self.map[id as usize] == id
            {
                name_table_add(&mut names, self.view.rec(id).name, id)?;
            }
        }
        for id in self.b()..self.map.len() as u32 {
            let r = self.view.rec(id);
            if r.kind != Some(Kind::Fwd) || self.map[id as usize] != id {
                continue;
            }
            let base = name_table_get(&self.view.base.composites, r.name);
            let own = name_table_get(&names, r.name);
            let cand = match (base, own) {
                (Some(c), None) | (None, Some(c)) => c,
                _ => continue,
            };
            let wanted = if r.kind_flag {
                Kind::Union
            } else {
                Kind::Struct
            };
            if cand != 0 && self.view.kind(cand) == Some(wanted) {
                self.map[id as usize] = cand;
            }
        }
        Ok(())
    }

    /// libbpf's `btf_dedup_ref_type`: the canonical id of reference type `id`, its own
    /// references made canonical first.
    pub(super) fn ref_type(&mut self, id: u32, depth: usize) -> Result<u32> {
        if depth > dedup_table::MAX_DEPTH {
            return Err(too_deep());
        }
        match self.map.get(id as usize) {
            None => return Err(Error::NoSuchType(id)),
            Some(&IN_PROGRESS) => {
                return Err(Error::BadType {
                    id,
                    reason: "a reference cycle that passes through no struct or union",
                });
            }
            Some(_) if self.is_mapped(id) => return Ok(self.resolve(id)),
            Some(_) => {}
        }
        self.map[id as usize] = IN_PROGRESS;
        let at = (id - self.b()) as usize;
        let r = self.view.rec(id);
        let start = r.first_word as usize;
        let Some(kind) = r.kind else {
            return Err(Error::NoSuchType(id));
        };
        let words = |d: &Self, i: usize| d.view.own.words.get(start + i).copied();
        let h = match kind {
            Kind::Const
            | Kind::Volatile
            | Kind::Restrict
            | Kind::Ptr
            | Kind::Typedef
            | Kind::Func
            | Kind::TypeTag
            | Kind::DeclTag => {
                let target = self.ref_type(r.size_or_type, depth + 1)?;
                self.view.own.recs[at].size_or_type = target;
                if kind == Kind::DeclTag {
                    self.view.hash_all(id)
                } else {
                    self.view.hash_common(id)
                }
            }
            Kind::Array => {
                for i in [0, 1] {
                    let Some(word) = words(self, i) else {
                        return Err(Error::NoSuchType(id));
                    };
                    let target = self.ref_type(word, depth + 1)?;
                    self.view.own.words[start + i] = target;
                }
                self.view.hash_all(id)
            }
            Kind::FuncProto => {
                let ret = self.ref_type(r.size_or_type, depth + 1)?;
                self.view.own.recs[at].size_or_type = ret;
                for i in 0..usize::from(r.vlen) {
                    let Some(word) = words(self, 2 * i + 1) else {
                        return Err(Error::NoSuchType(id));
                    };
                    let target = self.ref_type(word, depth + 1)?;
                    self.view.own.words[start + 2 * i + 1] = target;
                }
                self.view.hash_all(id)
            }
            _ => {
                return Err(Error::BadType {
                    id,
                    reason: "a type no dedup phase handles",
                });
            }
        };
        let equal = |d: &Self, c: u32| match kind {
            Kind::DeclTag | Kind::Array | Kind::FuncProto => d.view.equal_all(id, c),
            _ => d.view.equal_common(id, c),
        };
        let new_id = self.find(h, equal).unwrap_or(id);
        self.map[id as usize] = new_id;
        if new_id == id {
            self.add(h, id)?;
        }
        Ok(new_id)
    }

    /// Write the module's canonical types in id order after the base's, every reference
    /// remapped, names the base lacks in a string section that continues the base's.
    pub(super) fn emit(&self, module: &Btf<'_>) -> Result<Split> {
        let b = self.b();
        let n = self.map.len() as u32 - b;
        let mut new_ids: Vec<u32> = fallible::vec_with_capacity(n as usize)?;
        let mut next = b;
        for id in b..b + n {
            new_ids.push(if self.map[id as usize] == id {
                next += 1;
                next - 1
            } else {
                0
            });
        }
        if next - 1 > MAX_TYPE_ID {
            return Err(Error::Limit {
                what: "base and split BTF type count",
                limit: MAX_TYPE_ID as usize,
            });
        }
        let remap = |id: u32| {
            let r = self.resolve(id);
            if r < b { r } else { new_ids[(r - b) as usize] }
        };
        let base = self.view.base.btf;
        let mut out = BtfWriter::new_split(base.endian(), b, base.strings_len())?;
        let name = |out: &mut BtfWriter, key: u32| -> Result<u32> {
            if key & OWN_STRING == 0 {
                return Ok(key);
            }
            out.add_bytes(module.name_bytes(key & !OWN_STRING).unwrap_or(&[]))
        };
        let (mut named, mut named_in_base) = (0, 0);
        for id in b..b + n {
            let r = self.view.rec(id);
            let Some(kind) = r.kind else {
                return Err(Error::NoSuchType(id));
            };
            if r.name != 0 && matches!(kind, Kind::Struct | Kind::Union) {
                named += 1;
                named_in_base += u32::from(self.resolve(id) < b);
            }
            if self.map[id as usize] != id {
                continue;
            }
            let size_or_type = if kind.has_type_ref() {
                remap(r.size_or_type)
            } else {
                r.size_or_type
            };
            let name_off = name(&mut out, r.name)?;
            out.begin_type_at(name_off, kind, r.kind_flag, r.vlen, size_or_type)?;
            let (names, ids) = super::layout(kind);
            for (i, &w) in self.view.words(id).iter().enumerate() {
                let is = |pos: Option<(usize, usize)>| pos.is_some_and(|(s, o)| i % s == o);
                let w = if is(names) {
                    name(&mut out, w)?
                } else if is(ids) || (kind == Kind::Array && i < 2) {
                    remap(w)
                } else {
                    w
                };
                out.push_word(w)?;
            }
        }
        Ok(Split {
            bytes: out.finish()?,
            module_types: n,
            split_types: next - b,
            named,
            named_in_base,
        })
    }
}

fn real_is(kind: Option<Kind>, wanted: Kind) -> bool {
    kind == Some(wanted)
}
