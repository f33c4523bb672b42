//! libbpf's `btf__dedup` (libbpf 1.1, the one Debian's pahole 1.24 links) over the
//! converted records: primitives by value, structs and unions by structural equivalence
//! through a hypothetical map, forward declarations resolved to the one definition of their
//! name, reference types by their (already deduplicated) targets; then the canonical types
//! are written out in id order with their references remapped.
//!
//! Names are compared as string offsets: the writer interns every name once, so equal
//! offsets are equal names, as after libbpf's own string deduplication.

use super::{Record, Types};
use crate::btf::Kind;
use crate::btf::dedup_table::{
    self, DedupRecords, Header, IN_PROGRESS, MAX_DEPTH, UNPROCESSED, combine, spread,
};
use crate::btf::write::BtfWriter;
use crate::error::{Error, Result};
use crate::fallible;
use alloc::vec::Vec;
use hashbrown::HashTable;

// Record ids stay below the map's markers.
const _: () = assert!(super::MAX_RECORD_ID < IN_PROGRESS);

/// Deduplicate `types` and write the result into `writer` (whose strings it names).
pub fn dedup(types: &mut Types, writer: &mut BtfWriter) -> Result<()> {
    let n = types.records.len();
    let mut d = Dedup {
        map: fallible::vec_with_capacity(n)?,
        hypot: fallible::vec_with_capacity(n)?,
        hypot_list: Vec::new(),
        table: HashTable::new(),
        chain: fallible::vec_with_capacity(n)?,
        types,
    };
    d.map.resize(n, UNPROCESSED);
    d.hypot.resize(n, UNPROCESSED);
    d.chain.resize(n, UNPROCESSED);
    if n > 0 {
        d.map[0] = 0;
    }
    for id in 1..n as u32 {
        d.prim_type(id)?;
    }
    for id in 1..n as u32 {
        d.struct_type(id)?;
    }
    d.resolve_fwds()?;
    for id in 1..n as u32 {
        d.ref_type(id, 0)?;
    }
    // What the search needed (tens of megabytes for a kernel) is gone before the output grows.
    d.hypot = Vec::new();
    d.hypot_list = Vec::new();
    d.chain = Vec::new();
    d.table = HashTable::new();
    d.emit(writer)
}

struct Dedup<'t> {
    types: &'t mut Types,
    /// Each type's canonical type (a chain that [`Dedup::resolve`] follows), or a marker.
    map: Vec<u32>,
    /// The struct phase's hypothetical map, canonical id → candidate id.
    hypot: Vec<u32>,
    hypot_list: Vec<u32>,
    /// Hash → the newest canonical type with it; `chain` links to the one before (libbpf's
    /// hashmap also yields the newest candidate first).
    table: HashTable<(u64, u32)>,
    chain: Vec<u32>,
}

fn info(r: &Record) -> u32 {
    (u32::from(r.kind_flag) << 31) | (r.kind.map_or(0, |k| k as u32) << 24) | u32::from(r.vlen)
}

impl Dedup<'_> {
    fn record(&self, id: u32) -> Record {
        self.types
            .records
            .get(id as usize)
            .copied()
            .unwrap_or(super::VOID)
    }

    fn is_mapped(&self, id: u32) -> bool {
        dedup_table::is_mapped(&self.map, id)
    }

    fn resolve(&self, id: u32) -> u32 {
        dedup_table::resolve(&self.map, id)
    }

    /// Candidates with hash `h`, newest first.
    fn candidates(&self, h: u64) -> Candidates<'_> {
        Candidates {
            chain: &self.chain,
            next: dedup_table::head(&self.table, h),
        }
    }

    fn add(&mut self, h: u64, id: u32) -> Result<()> {
        dedup_table::add(&mut self.table, &mut self.chain, id as usize, h, id)
    }

    fn prim_type(&mut self, id: u32) -> Result<()> {
        let mut new_id = id;
        let h = match self.kind(id) {
            Some(Kind::Int) => {
                let h = self.hash_all(id);
                if let Some(c) = self.candidates(h).find(|&c| self.equal_all(id, c)) {
                    new_id = c;
                }
                h
            }
            Some(Kind::Enum | Kind::Enum64) => {
                let h = combine(0, self.record(id).name);
                let mut resolve_canon = Vec::new();
                for c in self.candidates(h) {
                    if self.equal_all(id, c) {
                        new_id = c;
                        break;
                    }
                    if self.compat_enum(id, c) {
                        if self.is_enum_fwd(id) {
                            new_id = c;
                            break;
                        }
                        // A canonical enum forward resolves to this full enum.
                        fallible::push(&mut resolve_canon, c)?;
                    }
                }
                for c in resolve_canon {
                    self.map[c as usize] = id;
                }
                h
            }
            Some(Kind::Fwd | Kind::Float) => {
                let h = self.hash_common(id);
                if let Some(c) = self.candidates(h).find(|&c| self.equal_common(id, c)) {
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
    }

    /// libbpf's `btf_dedup_is_equiv`: whether the type graph at `cand` is equivalent to the
    /// one at canonical `canon`, recording the pairs assumed on the way.
    fn is_equiv(&mut self, cand: u32, canon: u32, depth: usize) -> Result<bool> {
        if depth > MAX_DEPTH {
            return Err(too_deep());
        }
        if self.resolve(cand) == self.resolve(canon) {
            return Ok(true);
        }
        let canon = self.resolve_fwd(&self.map, canon);
        let hypot = self.hypot[canon as usize];
        if hypot != UNPROCESSED {
            return Ok(hypot == cand
                || self.identical_arrays(hypot, cand)
                || self.identical_structs(hypot, cand, depth + 1)?);
        }
        self.hypot[canon as usize] = cand;
        fallible::push(&mut self.hypot_list, canon)?;
        let (c, k) = (self.record(cand), self.record(canon));
        if c.name != k.name {
            return Ok(false);
        }
        let fwd = Some(Kind::Fwd);
        if (c.kind == fwd || k.kind == fwd) && c.kind != k.kind {
            let (real, fwd_record) = if c.kind == fwd { (k, c) } else { (c, k) };
            let fwd_kind = if fwd_record.kind_flag {
                Kind::Union
            } else {
                Kind::Struct
            };
            return Ok(real.kind == Some(fwd_kind));
        }
        if c.kind != k.kind {
            return Ok(false);
        }
        let Some(kind) = c.kind else {
            return Ok(true);
        };
        match kind {
            Kind::Int => Ok(self.equal_all(cand, canon)),
            Kind::Enum | Kind::Enum64 => Ok(self.compat_enum(cand, canon)),
            Kind::Fwd | Kind::Float => Ok(self.equal_common(cand, canon)),
            Kind::Const
            | Kind::Volatile
            | Kind::Restrict
            | Kind::Ptr
            | Kind::Typedef
            | Kind::Func
            | Kind::TypeTag => {
                if info(&c) != info(&k) {
                    return Ok(false);
                }
                self.is_equiv(c.size_or_type, k.size_or_type, depth + 1)
            }
            Kind::Array => {
                if !self.equal_common(cand, canon) || self.words(cand)[2] != self.words(canon)[2] {
                    return Ok(false);
                }
                let (cw, kw) = (self.words(cand), self.words(canon));
                let (ce, ci, ke, ki) = (cw[0], cw[1], kw[0], kw[1]);
                if !self.is_equiv(ci, ki, depth + 1)? {
                    return Ok(false);
                }
                self.is_equiv(ce, ke, depth + 1)
            }
            Kind::Struct | Kind::Union => {
                if !self.shallow_equal_struct(cand, canon) {
                    return Ok(false);
                }
                for i in 0..usize::from(c.vlen) {
                    let (ct, kt) = (self.words(cand)[3 * i + 1], self.words(canon)[3 * i + 1]);
                    if !self.is_equiv(ct, kt, depth + 1)? {
                        return Ok(false);
                    }
                }
                Ok(true)
            }
            Kind::FuncProto => {
                if !self.compat_fnproto(cand, canon)
                    || !self.is_equiv(c.size_or_type, k.size_or_type, depth + 1)?
                {
                    return Ok(false);
                }
                for i in 0..usize::from(c.vlen) {
                    let (ct, kt) = (self.words(cand)[2 * i + 1], self.words(canon)[2 * i + 1]);
                    if !self.is_equiv(ct, kt, depth + 1)? {
                        return Ok(false);
                    }
                }
                Ok(true)
            }
            Kind::Var | Kind::Datasec | Kind::DeclTag => Err(Error::InvalidArgument(
                "DWARF conversion: a struct refers to a variable, section or tag",
            )),
        }
    }

    fn merge_hypot(&mut self) {
        for i in 0..self.hypot_list.len() {
            let canon = self.hypot_list[i];
            let target = self.hypot[canon as usize];
            let (t, c) = (self.resolve(target), self.resolve(canon));
            let (tk, ck) = (self.kind(t), self.kind(c));
            let fwd = Some(Kind::Fwd);
            if tk != fwd && ck == fwd {
                self.map[c as usize] = t;
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

    fn struct_type(&mut self, id: u32) -> Result<()> {
        if self.is_mapped(id) || !matches!(self.kind(id), Some(Kind::Struct | Kind::Union)) {
            return Ok(());
        }
        let h = self.hash_struct(id);
        let mut new_id = id;
        let mut next = self.candidates(h).next;
        while next != UNPROCESSED {
            let cand = next;
            next = self.chain[cand as usize];
            if !self.shallow_equal_struct(id, cand) {
                continue;
            }
            self.clear_hypot();
            if !self.is_equiv(id, cand, 0)? {
                continue;
            }
            self.merge_hypot();
            new_id = cand;
            break;
        }
        self.map[id as usize] = new_id;
        if new_id == id {
            self.add(h, id)?;
        }
        Ok(())
    }

    /// A canonical forward declaration names the one canonical struct or union of its
    /// name and kind, when there is exactly one.
    fn resolve_fwds(&mut self) -> Result<()> {
        // Name → the canonical composite of that name, 0 when there are several.
        let mut names: HashTable<(u32, u32)> = HashTable::new();
        let hash = |name: u32| spread(u64::from(name));
        for id in 1..self.map.len() as u32 {
            if !matches!(self.kind(id), Some(Kind::Struct | Kind::Union))
                || self.map[id as usize] != id
            {
                continue;
            }
            let name = self.record(id).name;
            names.try_reserve(1, |&(n, _)| hash(n))?;
            match names.find_mut(hash(name), |&(n, _)| n == name) {
                Some(entry) => entry.1 = 0,
                None => {
                    names.insert_unique(hash(name), (name, id), |&(n, _)| hash(n));
                }
            }
        }
        for id in 1..self.map.len() as u32 {
            let r = self.record(id);
            if r.kind != Some(Kind::Fwd) || self.map[id as usize] != id {
                continue;
            }
            let Some(&(_, cand)) = names.find(hash(r.name), |&(n, _)| n == r.name) else {
                continue;
            };
            let wanted = if r.kind_flag {
                Kind::Union
            } else {
                Kind::Struct
            };
            if cand != 0 && self.kind(cand) == Some(wanted) {
                self.map[id as usize] = cand;
            }
        }
        Ok(())
    }

    /// libbpf's `btf_dedup_ref_type`: the canonical id of reference type `id`, its own
    /// references made canonical first.
    fn ref_type(&mut self, id: u32, depth: usize) -> Result<u32> {
        if depth > MAX_DEPTH {
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
        let r = self.record(id);
        let start = r.first_word as usize;
        let Some(kind) = r.kind else {
            return Err(Error::BadType {
                id,
                reason: "DWARF conversion left a type unwritten",
            });
        };
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
                self.types.records[id as usize].size_or_type = target;
                if kind == Kind::DeclTag {
                    self.hash_all(id)
                } else {
                    self.hash_common(id)
                }
            }
            Kind::Array => {
                for at in [start, start + 1] {
                    let target = self.ref_type(self.types.words[at], depth + 1)?;
                    self.types.words[at] = target;
                }
                self.hash_all(id)
            }
            Kind::FuncProto => {
                let ret = self.ref_type(r.size_or_type, depth + 1)?;
                self.types.records[id as usize].size_or_type = ret;
                for i in 0..usize::from(r.vlen) {
                    let at = start + 2 * i + 1;
                    let target = self.ref_type(self.types.words[at], depth + 1)?;
                    self.types.words[at] = target;
                }
                self.hash_all(id)
            }
            _ => {
                return Err(Error::BadType {
                    id,
                    reason: "DWARF conversion: a type no dedup phase handles",
                });
            }
        };
        let equal = |d: &Self, c: u32| match kind {
            Kind::DeclTag | Kind::Array | Kind::FuncProto => d.equal_all(id, c),
            _ => d.equal_common(id, c),
        };
        let new_id = self.candidates(h).find(|&c| equal(self, c)).unwrap_or(id);
        self.map[id as usize] = new_id;
        if new_id == id {
            self.add(h, id)?;
        }
        Ok(new_id)
    }

    /// Write the canonical types in id order, every reference remapped to its new id.
    fn emit(&mut self, writer: &mut BtfWriter) -> Result<()> {
        let n = self.map.len();
        let mut new_ids: Vec<u32> = fallible::vec_with_capacity(n)?;
        new_ids.resize(n, 0);
        let mut next = 1u32;
        for (id, new_id) in new_ids.iter_mut().enumerate().skip(1) {
            if self.map[id] == id as u32 {
                *new_id = next;
                next += 1;
            }
        }
        // Only the deduplicated types must fit BTF's id space (the records before may not).
        if next - 1 > crate::btf::MAX_TYPE_ID {
            return Err(Error::Limit {
                what: "BTF type count after deduplicating the DWARF types",
                limit: crate::btf::MAX_TYPE_ID as usize,
            });
        }
        let remap = |d: &Self, id: u32| new_ids[d.resolve(id) as usize];
        let mut words: Vec<u32> = Vec::new();
        for id in 1..n as u32 {
            if self.map[id as usize] != id {
                continue;
            }
            let r = self.record(id);
            let Some(kind) = r.kind else {
                return Err(Error::BadType {
                    id,
                    reason: "DWARF conversion left a type unwritten",
                });
            };
            words.clear();
            fallible::extend(&mut words, self.words(id))?;
            let mut size_or_type = r.size_or_type;
            super::map_type_ids(kind, &mut size_or_type, &mut words, |id| remap(self, id));
            writer.begin_type_at(r.name, kind, r.kind_flag, r.vlen, size_or_type)?;
            for &w in &words {
                writer.push_word(w)?;
            }
        }
        Ok(())
    }
}

impl DedupRecords for Dedup<'_> {
    fn header(&self, id: u32) -> Header {
        let r = self.record(id);
        Header {
            name: r.name,
            kind: r.kind,
            info: info(&r),
            size_or_type: r.size_or_type,
            vlen: r.vlen,
        }
    }

    fn words(&self, id: u32) -> &[u32] {
        match self.types.records.get(id as usize) {
            Some(r) => self.types.words(r),
            None => &[],
        }
    }

    fn too_deep(&self) -> Error {
        too_deep()
    }
}

fn too_deep() -> Error {
    Error::Limit {
        what: "depth of a DWARF type graph walk",
        limit: MAX_DEPTH,
    }
}

/// The chain of candidates with one hash.
struct Candidates<'c> {
    chain: &'c [u32],
    next: u32,
}

impl Iterator for Candidates<'_> {
    type Item = u32;

    fn next(&mut self) -> Option<u32> {
        if self.next == UNPROCESSED {
            return None;
        }
        let id = self.next;
        self.next = self.chain.get(id as usize).copied().unwrap_or(UNPROCESSED);
        Some(id)
    }
}
