//! A generator of well-formed but adversarial BTF (built with `BtfWriter`, so it always has a
//! valid layout, and built to pass `Btf::parse`'s validation), driven by `arbitrary`'s
//! `Unstructured` bytes, and of BPF objects whose `.BTF`/`.BTF.ext` are generated too.
//!
//! Shared by `tests/structured.rs` (fixed seeds) and the `structured` fuzz target (libFuzzer's
//! bytes), so both explore the same space. What it makes, on purpose:
//! - copies of a fixture object's own local types, with members dropped and copied many times
//!   over (thousands of candidates with one essential name), so CO-RE candidates really match;
//! - names from the fixture's local BTF, with `___flavor` suffixes and odd underscores;
//! - modifier/typedef chains around [`MAX_RESOLVE_DEPTH`] (31 to 40 long), self-referencing and
//!   forward pointers, arrays of `u32::MAX` elements and array chains through element and index
//!   types, overlapping and bitfield members, huge sizes, wide structs and enums;
//! - anonymous nesting: structs of anonymous members of anonymous structs, `fanout` wide and up
//!   to 64 deep (what a member search descends into), and the same shape with names that match
//!   the local members.
//!
//! Value references (member, element, modified types) always point to earlier ids and pointers
//! anywhere, so no reference cycle avoids a pointer and every generated BTF validates.

#![allow(dead_code)]

use arbitrary::{Result, Unstructured};
use btfgen::btf::write::BtfWriter;
use btfgen::btf::{Btf, Endianness, Kind, MAX_RESOLVE_DEPTH, TypeKind};
use btfgen::object::BpfObject;

/// Names taken from a fixture's local BTF, so that generated types are candidates of, and
/// members match, what the fixture's relocations look for.
#[derive(Debug, Clone, Default)]
pub struct Pool {
    /// Names of named types (structs, unions, enums, typedefs, fwds, ints, floats).
    pub types: Vec<String>,
    /// Struct/union member names.
    pub members: Vec<String>,
    /// Enumerator names.
    pub enumerators: Vec<String>,
}

impl Pool {
    /// The names of `btf`'s own types.
    pub fn from_btf(btf: &Btf<'_>) -> Pool {
        let mut pool = Pool::default();
        for ty in btf.types().flatten() {
            let name = btf.name(ty.name_off).unwrap_or("");
            let named_kind = matches!(
                ty.kind,
                TypeKind::Struct(_)
                    | TypeKind::Union(_)
                    | TypeKind::Enum(_)
                    | TypeKind::Enum64(_)
                    | TypeKind::Typedef(_)
                    | TypeKind::Fwd { .. }
                    | TypeKind::Int { .. }
                    | TypeKind::Float { .. }
            );
            if named_kind && !name.is_empty() {
                pool.types.push(name.to_string());
            }
            if let Some(c) = ty.kind.composite() {
                for m in c.members() {
                    if let Ok(n) = btf.name(m.name_off)
                        && !n.is_empty()
                    {
                        pool.members.push(n.to_string());
                    }
                }
            }
            if let Some(e) = ty.kind.any_enum() {
                for v in e.values() {
                    if let Ok(n) = btf.name(v.name_off) {
                        pool.enumerators.push(n.to_string());
                    }
                }
            }
        }
        for list in [&mut pool.types, &mut pool.members, &mut pool.enumerators] {
            list.sort();
            list.dedup();
            if list.is_empty() {
                list.push("x".to_string());
            }
        }
        pool
    }
}

/// Limits that keep one generated BTF small enough to build and run in well under a second.
const MAX_TYPES: u32 = 40_000;
const MAX_WIDE: u32 = 2_000;

/// What the generator knows about each type it added.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Class {
    Void,
    Int,
    Ptr,
    Array,
    Composite,
    Enum,
    Fwd,
    Modifier,
    Proto,
    Func,
    Float,
    Var,
    Other,
}

/// An in-progress adversarial BTF.
pub struct Gen<'p> {
    w: BtfWriter,
    pool: &'p Pool,
    /// Class of each id (index = id; id 0 is void).
    classes: Vec<Class>,
    /// Largest id a pointer refers to; padded to exist at the end.
    max_ref: u32,
    /// A 4-byte signed int, once added.
    int_id: Option<u32>,
}

impl<'p> Gen<'p> {
    /// An empty BTF in byte order `endian`.
    pub fn new(pool: &'p Pool, endian: Endianness) -> Self {
        Gen {
            w: BtfWriter::new(endian).unwrap(),
            pool,
            classes: vec![Class::Void],
            max_ref: 0,
            int_id: None,
        }
    }

    fn next_id(&self) -> u32 {
        self.w.type_cnt()
    }

    fn room(&self, n: u32) -> bool {
        self.next_id() + n < MAX_TYPES
    }

    fn added(&mut self, id: u32, class: Class) -> u32 {
        debug_assert_eq!(id as usize, self.classes.len());
        self.classes.push(class);
        id
    }

    fn begin(
        &mut self,
        name: &str,
        kind: Kind,
        kind_flag: bool,
        vlen: u16,
        size_or_type: u32,
    ) -> u32 {
        self.w
            .begin_type(name, kind, kind_flag, vlen, size_or_type)
            .unwrap()
    }

    fn words(&mut self, words: &[u32]) {
        for &w in words {
            self.w.push_word(w).unwrap();
        }
    }

    /// A name from `list`, sometimes with a flavor suffix or odd underscores.
    fn name_from(&self, u: &mut Unstructured<'_>, list: &[String]) -> Result<String> {
        let base = u.choose(list)?.clone();
        Ok(match u.int_in_range(0..=9u8)? {
            0..=5 => base,
            6 => format!("{base}___{}", u.int_in_range(0..=9u8)?),
            7 => format!("{base}___flavor___v{}", u.int_in_range(0..=3u8)?),
            8 => format!("{base}___"),
            _ => format!("{base}____x"),
        })
    }

    fn type_name(&self, u: &mut Unstructured<'_>) -> Result<String> {
        self.name_from(u, &self.pool.types)
    }

    fn member_name(&self, u: &mut Unstructured<'_>) -> Result<String> {
        if u.ratio(1, 5)? {
            return Ok(String::new());
        }
        self.name_from(u, &self.pool.members)
    }

    /// An earlier id of one of `classes` (any earlier id when none or by chance).
    fn earlier(&self, u: &mut Unstructured<'_>, classes: &[Class]) -> Result<u32> {
        let last = self.next_id() - 1;
        if last == 0 {
            return Ok(0);
        }
        if !classes.is_empty() && !u.ratio(1, 8)? {
            // Probe a few random ids for a wanted class.
            for _ in 0..8 {
                let id = u.int_in_range(1..=last)?;
                if classes.contains(&self.classes[id as usize]) {
                    return Ok(id);
                }
            }
        }
        u.int_in_range(1..=last)
    }

    /// A non-void earlier id (for array elements and section variables).
    fn earlier_non_void(&mut self, u: &mut Unstructured<'_>, classes: &[Class]) -> Result<u32> {
        match self.earlier(u, classes)? {
            0 => self.int(u),
            id => Ok(id),
        }
    }

    fn value_type(&self, u: &mut Unstructured<'_>) -> Result<u32> {
        self.earlier(
            u,
            &[
                Class::Int,
                Class::Ptr,
                Class::Array,
                Class::Composite,
                Class::Enum,
                Class::Modifier,
                Class::Float,
            ],
        )
    }

    /// A pointer target: earlier, itself, or a little ahead (padded to exist at the end).
    fn pointee(&mut self, u: &mut Unstructured<'_>) -> Result<u32> {
        let me = self.next_id();
        let id = match u.int_in_range(0..=5u8)? {
            0 => me,
            1 => me + u.int_in_range(1..=64u32)?,
            _ => self.value_type(u)?,
        };
        self.max_ref = self.max_ref.max(id);
        Ok(id)
    }

    // --- one type each -------------------------------------------------------------------

    fn int(&mut self, u: &mut Unstructured<'_>) -> Result<u32> {
        let size = *u.choose(&[1u32, 2, 4, 8, 16])?;
        let bits = u.int_in_range(0..=(size * 8).min(128))?;
        let offset = u.int_in_range(0..=(size * 8 - bits).min(255))?;
        let encoding = *u.choose(&[0u32, 1, 2, 4])?;
        let name = if u.ratio(1, 2)? {
            "int".to_string()
        } else {
            self.type_name(u)?
        };
        let id = self.begin(&name, Kind::Int, false, 0, size);
        self.words(&[(encoding << 24) | (offset << 16) | bits]);
        if size == 4 && bits == 32 && offset == 0 && encoding == 1 {
            self.int_id.get_or_insert(id);
        }
        Ok(self.added(id, Class::Int))
    }

    fn plain_int(&mut self) -> u32 {
        if let Some(id) = self.int_id {
            return id;
        }
        let id = self.begin("int", Kind::Int, false, 0, 4);
        self.words(&[(1 << 24) | 32]);
        self.int_id = Some(id);
        self.added(id, Class::Int)
    }

    fn ptr(&mut self, u: &mut Unstructured<'_>) -> Result<u32> {
        let target = self.pointee(u)?;
        let id = self.begin("", Kind::Ptr, false, 0, target);
        Ok(self.added(id, Class::Ptr))
    }

    /// A chain of `len` modifiers and typedefs, each wrapping the previous; returns the outer.
    fn modifier_chain(&mut self, u: &mut Unstructured<'_>, len: u32) -> Result<u32> {
        let mut inner = self.value_type(u)?;
        for _ in 0..len {
            let kind = *u.choose(&[
                Kind::Typedef,
                Kind::Const,
                Kind::Volatile,
                Kind::Restrict,
                Kind::TypeTag,
                Kind::Typedef,
            ])?;
            let name = match kind {
                Kind::Typedef => self.type_name(u)?,
                Kind::TypeTag => "tag".to_string(),
                _ => String::new(),
            };
            let id = self.begin(&name, kind, false, 0, inner);
            inner = self.added(id, Class::Modifier);
        }
        Ok(inner)
    }

    fn nelems(&self, u: &mut Unstructured<'_>) -> Result<u32> {
        Ok(match u.int_in_range(0..=7u8)? {
            0 => 0,
            1 => u32::MAX,
            2 => u32::MAX / 2 + 1,
            3 => u.arbitrary()?,
            _ => u.int_in_range(1..=8)?,
        })
    }

    fn array(&mut self, u: &mut Unstructured<'_>) -> Result<u32> {
        let elem =
            self.earlier_non_void(u, &[Class::Int, Class::Composite, Class::Array, Class::Ptr])?;
        let index = if u.ratio(7, 8)? {
            self.plain_int()
        } else {
            self.earlier(u, &[])?
        };
        let nelems = self.nelems(u)?;
        let id = self.begin("", Kind::Array, false, 0, 0);
        self.words(&[elem, index, nelems]);
        Ok(self.added(id, Class::Array))
    }

    /// Arrays nested `depth` deep, each also the next one's index type when `via_index`.
    fn array_chain(
        &mut self,
        u: &mut Unstructured<'_>,
        depth: u32,
        via_index: bool,
    ) -> Result<u32> {
        let int = self.plain_int();
        let mut elem = self.earlier_non_void(u, &[Class::Int, Class::Composite])?;
        let mut index = int;
        for _ in 0..depth {
            let nelems = self.nelems(u)?;
            let id = self.begin("", Kind::Array, false, 0, 0);
            self.words(&[elem, index, nelems]);
            self.added(id, Class::Array);
            if via_index {
                // The next array has this one as index and, one level down, as element.
                index = id;
                if u.ratio(1, 2)? {
                    elem = id;
                }
            } else {
                elem = id;
            }
        }
        Ok(self.next_id() - 1)
    }

    /// A struct or union with `vlen` members.
    fn composite(&mut self, u: &mut Unstructured<'_>, vlen: u32, named: bool) -> Result<u32> {
        let union = u.ratio(1, 4)?;
        let kind_flag = u.ratio(1, 3)?;
        let mut members = Vec::with_capacity(vlen as usize);
        let mut bit = 0u32;
        for _ in 0..vlen {
            let name = self.member_name(u)?;
            let ty = self.value_type(u)?;
            let (offset, bitfield) = if union {
                (
                    0,
                    if kind_flag {
                        u.int_in_range(0..=64)?
                    } else {
                        0
                    },
                )
            } else {
                // Increasing, often overlapping (same offset twice), sometimes bitfields.
                match u.int_in_range(0..=3u8)? {
                    0 => {}
                    1 => bit += u.int_in_range(1..=7u32)?,
                    _ => bit += u.int_in_range(0..=16u32)? * 8,
                }
                bit = bit.min(0x00ff_ffff);
                (
                    bit,
                    if kind_flag {
                        u.int_in_range(0..=128)?
                    } else {
                        0
                    },
                )
            };
            let raw = if kind_flag {
                (bitfield << 24) | offset
            } else {
                offset
            };
            let name_off = self.w.add_string(&name).unwrap();
            members.push((name_off, ty, raw));
        }
        let min_size = bit.div_ceil(8);
        let size = match u.int_in_range(0..=5u8)? {
            0 => u32::MAX,
            1 => min_size,
            _ => min_size + u.int_in_range(0..=64u32)?,
        };
        let name = if named {
            self.type_name(u)?
        } else {
            String::new()
        };
        let kind = if union { Kind::Union } else { Kind::Struct };
        let id = self.begin(&name, kind, kind_flag, vlen as u16, size);
        for (n, t, off) in members {
            self.words(&[n, t, off]);
        }
        Ok(self.added(id, Class::Composite))
    }

    fn enumeration(&mut self, u: &mut Unstructured<'_>, vlen: u32) -> Result<u32> {
        let wide = u.ratio(1, 3)?;
        let size = *u.choose(&[1u32, 2, 4, 8])?;
        let name = if u.ratio(1, 6)? {
            String::new()
        } else {
            self.type_name(u)?
        };
        let mut values = Vec::with_capacity(vlen as usize);
        for _ in 0..vlen {
            let n = self.name_from(u, &self.pool.enumerators)?;
            values.push((self.w.add_string(&n).unwrap(), u.arbitrary::<u64>()?));
        }
        let kind = if wide { Kind::Enum64 } else { Kind::Enum };
        let id = self.begin(&name, kind, u.arbitrary()?, vlen as u16, size);
        for (n, v) in values {
            self.words(&[n, v as u32]);
            if wide {
                self.words(&[(v >> 32) as u32]);
            }
        }
        Ok(self.added(id, Class::Enum))
    }

    fn proto_and_func(&mut self, u: &mut Unstructured<'_>, params: u32) -> Result<u32> {
        let ret = self.earlier(u, &[Class::Int, Class::Ptr, Class::Void])?;
        let mut list = Vec::new();
        for i in 0..params {
            let t = if i + 1 == params && u.ratio(1, 4)? {
                0
            } else {
                self.value_type(u)?
            };
            let n = self.member_name(u)?;
            list.push((self.w.add_string(&n).unwrap(), t));
        }
        let proto = self.begin("", Kind::FuncProto, false, params as u16, ret);
        for (n, t) in list {
            self.words(&[n, t]);
        }
        self.added(proto, Class::Proto);
        if u.ratio(1, 2)? {
            let name = self.type_name(u)?;
            let linkage = u.int_in_range(0..=2u16)?;
            let f = self.begin(&name, Kind::Func, false, linkage, proto);
            self.added(f, Class::Func);
        }
        Ok(proto)
    }

    fn misc(&mut self, u: &mut Unstructured<'_>) -> Result<u32> {
        Ok(match u.int_in_range(0..=4u8)? {
            0 => {
                let name = self.type_name(u)?;
                let id = self.begin(&name, Kind::Fwd, u.arbitrary()?, 0, 0);
                self.added(id, Class::Fwd)
            }
            1 => {
                let size = *u.choose(&[2u32, 4, 8, 12, 16])?;
                let id = self.begin("float", Kind::Float, false, 0, size);
                self.added(id, Class::Float)
            }
            2 => {
                let t = self.value_type(u)?;
                let name = self.type_name(u)?;
                let var = self.begin(&name, Kind::Var, false, 0, t);
                self.words(&[u.int_in_range(0..=2)?]);
                self.added(var, Class::Var);
                let sec = self.begin(".data", Kind::Datasec, false, 1, 64);
                self.words(&[var, 0, 8]);
                self.added(sec, Class::Other)
            }
            3 => {
                let t = self.earlier(u, &[Class::Composite, Class::Func])?;
                let name = self.type_name(u)?;
                let id = self.begin(&name, Kind::DeclTag, false, 0, t);
                self.words(&[u.int_in_range(-1..=3i32)? as u32]);
                self.added(id, Class::Other)
            }
            _ => self.ptr(u)?,
        })
    }

    // --- bigger shapes -------------------------------------------------------------------

    /// Copy every type of `template` (a fixture's local BTF), ids shifted to follow the types
    /// already here, dropping members and enumerators at random.
    pub fn copy_template(&mut self, u: &mut Unstructured<'_>, template: &Btf<'_>) -> Result<()> {
        let count = template.type_cnt() - 1;
        if !self.room(count) {
            return Ok(());
        }
        let shift = self.next_id() - 1;
        let drop_ratio = u.int_in_range(0..=4u8)?;
        for ty in template.types() {
            let ty = ty.unwrap();
            let mut keep = Vec::new();
            for _ in 0..ty
                .kind
                .composite()
                .map_or(0, |c| c.len())
                .max(ty.kind.any_enum().map_or(0, |e| e.len()))
            {
                keep.push(drop_ratio == 0 || u.int_in_range(0..=9u8)? >= drop_ratio);
            }
            let id = self
                .w
                .copy_type(
                    template,
                    &ty,
                    |id| Ok(if id == 0 { 0 } else { id + shift }),
                    |i| keep.get(i).copied().unwrap_or(true),
                )
                .unwrap();
            let class = match ty.kind {
                TypeKind::Int { .. } => Class::Int,
                TypeKind::Ptr(_) => Class::Ptr,
                TypeKind::Array(_) => Class::Array,
                TypeKind::Struct(_) | TypeKind::Union(_) => Class::Composite,
                TypeKind::Enum(_) | TypeKind::Enum64(_) => Class::Enum,
                TypeKind::Fwd { .. } => Class::Fwd,
                TypeKind::Typedef(_)
                | TypeKind::Const(_)
                | TypeKind::Volatile(_)
                | TypeKind::Restrict(_)
                | TypeKind::TypeTag(_) => Class::Modifier,
                TypeKind::FuncProto(_) => Class::Proto,
                TypeKind::Func { .. } => Class::Func,
                TypeKind::Float { .. } => Class::Float,
                TypeKind::Var { .. } => Class::Var,
                _ => Class::Other,
            };
            self.added(id, class);
        }
        Ok(())
    }

    /// Structs of `fanout` anonymous members of the previous level's struct, `depth` levels,
    /// topped by a named struct (a pool name) whose members are anonymous members of the top
    /// level plus, at the very bottom, members named like the pool's (or not at all).
    fn anon_nest(&mut self, u: &mut Unstructured<'_>, depth: u32, fanout: u32) -> Result<u32> {
        let leaf_named = u.ratio(1, 2)?;
        let int = self.plain_int();
        let mut below = int;
        for level in 0..depth {
            let mut members = Vec::new();
            for i in 0..fanout {
                let name = if level == 0 && leaf_named {
                    self.name_from(u, &self.pool.members)?
                } else {
                    String::new()
                };
                members.push((
                    self.w.add_string(&name).unwrap(),
                    below,
                    i * 32 * (level == 0) as u32,
                ));
            }
            let size = 4 * fanout;
            let union = level > 0 && u.ratio(1, 2)?;
            let kind = if union { Kind::Union } else { Kind::Struct };
            let id = self.begin("", kind, false, fanout as u16, size);
            for (n, t, off) in members {
                self.words(&[n, t, if union { 0 } else { off }]);
            }
            below = self.added(id, Class::Composite);
        }
        let name = self.type_name(u)?;
        let id = self.begin(&name, Kind::Struct, false, 2, 8 * fanout);
        let dummy = self.name_from(u, &self.pool.members)?;
        let dummy = self.w.add_string(&dummy).unwrap();
        self.words(&[0, below, 0, dummy, int, 32]);
        Ok(self.added(id, Class::Composite))
    }

    /// `count` types all named `name` (with and without flavors): typedefs of, or structs
    /// with a member of, one earlier type.
    fn candidate_flood(&mut self, u: &mut Unstructured<'_>, count: u32) -> Result<()> {
        let name = u.choose(&self.pool.types)?.clone();
        let target = self.value_type(u)?;
        let member = self.name_from(u, &self.pool.members)?;
        let member = self.w.add_string(&member).unwrap();
        let as_struct = u.ratio(1, 2)?;
        for i in 0..count {
            let n = if i % 3 == 0 {
                name.clone()
            } else {
                format!("{name}___{i}")
            };
            if as_struct {
                let id = self.begin(&n, Kind::Struct, false, 1, 8);
                self.words(&[member, target, 0]);
                self.added(id, Class::Composite);
            } else {
                let id = self.begin(&n, Kind::Typedef, false, 0, target);
                self.added(id, Class::Modifier);
            }
        }
        Ok(())
    }

    /// One random step.
    pub fn step(&mut self, u: &mut Unstructured<'_>, template: Option<&Btf<'_>>) -> Result<()> {
        if !self.room(MAX_WIDE + 100) {
            return Ok(());
        }
        match u.int_in_range(0..=31u8)? {
            0..=3 => drop(self.int(u)?),
            4..=6 => drop(self.ptr(u)?),
            7..=9 => {
                let len = match u.int_in_range(0..=3u8)? {
                    0 => u.int_in_range(1..=4)?,
                    1 => MAX_RESOLVE_DEPTH as u32 + u.int_in_range(0..=8)? - 2,
                    _ => u.int_in_range(1..=40)?,
                };
                self.modifier_chain(u, len)?;
            }
            10..=11 => drop(self.array(u)?),
            12 => {
                let depth = u.int_in_range(1..=40)?;
                let via_index = u.arbitrary()?;
                self.array_chain(u, depth, via_index)?;
            }
            13..=17 => {
                let vlen = u.int_in_range(0..=12)?;
                let named = !u.ratio(1, 4)?;
                self.composite(u, vlen, named)?;
            }
            18 => {
                let vlen = u.int_in_range(100..=MAX_WIDE)?;
                self.composite(u, vlen, true)?;
            }
            19..=20 => {
                let vlen = if u.ratio(1, 8)? {
                    u.int_in_range(100..=MAX_WIDE)?
                } else {
                    u.int_in_range(0..=8)?
                };
                self.enumeration(u, vlen)?;
            }
            21..=22 => {
                let params = if u.ratio(1, 10)? {
                    u.int_in_range(50..=2000)?
                } else {
                    u.int_in_range(0..=5)?
                };
                self.proto_and_func(u, params)?;
            }
            23..=24 => drop(self.misc(u)?),
            25 => {
                let depth = u.int_in_range(1..=66)?;
                let fanout = u.int_in_range(1..=3)?;
                self.anon_nest(u, depth, fanout)?;
            }
            26 => {
                let count = u.int_in_range(100..=MAX_WIDE)?;
                self.candidate_flood(u, count)?;
            }
            27..=28 => {
                if let Some(t) = template {
                    self.copy_template(u, t)?;
                }
            }
            _ => {
                let vlen = u.int_in_range(1..=6)?;
                self.composite(u, vlen, true)?;
            }
        }
        Ok(())
    }

    /// The raw BTF: pointers that refer ahead get their targets (ints) added first.
    pub fn finish(mut self) -> Vec<u8> {
        while self.next_id() <= self.max_ref {
            let id = self.begin("int", Kind::Int, false, 0, 4);
            self.words(&[(1 << 24) | 32]);
            self.added(id, Class::Int);
        }
        self.w.finish().unwrap()
    }
}

/// An adversarial target BTF for relocations of the fixture whose local BTF is `template`.
pub fn target_btf(
    u: &mut Unstructured<'_>,
    pool: &Pool,
    template: Option<&Btf<'_>>,
    endian: Endianness,
) -> Result<Vec<u8>> {
    let mut g = Gen::new(pool, endian);
    if let Some(t) = template
        && u.ratio(3, 4)?
    {
        g.copy_template(u, t)?;
    }
    let steps = u.int_in_range(0..=48u32)?;
    for _ in 0..steps {
        g.step(u, template)?;
    }
    Ok(g.finish())
}

// ---------------------------------------------------------------------------------------------
// Objects with generated .BTF and .BTF.ext
// ---------------------------------------------------------------------------------------------

/// `BPF_ALU64 | BPF_MOV | BPF_K` `r0 = 1`: what type_exists/type_matches relocations expect.
const MOV_R0_1: [u8; 8] = [0xb7, 0x00, 0, 0, 1, 0, 0, 0];

/// Relocation kinds of "clean" objects: those whose local value is 1, so that `r0 = 1` passes
/// their instruction check (field_exists, type_exists, enumval_exists, type_matches): whole
/// objects then minimize.
const CLEAN_KINDS: [u32; 7] = [12, 12, 12, 8, 8, 2, 10];
/// Relocation kinds of the other objects: every kind, and an unknown one.
const ALL_KINDS: [u32; 16] = [12, 12, 12, 8, 8, 7, 7, 9, 0, 1, 2, 3, 10, 11, 6, 13];

/// Locations of a little-endian ELF64 section header's fields.
struct SectionHeader {
    /// Byte offset of the header in the file.
    at: usize,
    offset: usize,
    size: usize,
}

fn section_headers(elf: &[u8]) -> Vec<(String, SectionHeader)> {
    let le = |at: usize, n: usize| {
        elf[at..at + n]
            .iter()
            .rev()
            .fold(0u64, |acc, &b| (acc << 8) | u64::from(b))
    };
    let shoff = le(0x28, 8) as usize;
    let shnum = le(0x3c, 2) as usize;
    let shstrndx = le(0x3e, 2) as usize;
    let header = |i: usize| {
        let at = shoff + i * 64;
        (
            le(at, 4) as usize,
            SectionHeader {
                at,
                offset: le(at + 0x18, 8) as usize,
                size: le(at + 0x20, 8) as usize,
            },
        )
    };
    let names = header(shstrndx).1;
    (0..shnum)
        .map(|i| {
            let (name_off, h) = header(i);
            let start = names.offset + name_off;
            let end = elf[start..].iter().position(|&b| b == 0).unwrap() + start;
            (String::from_utf8_lossy(&elf[start..end]).into_owned(), h)
        })
        .collect()
}

/// Replace the data of section `name` of a little-endian ELF64 file with `data`, appended at
/// the end of the file.
pub fn replace_section(elf: &mut Vec<u8>, name: &str, data: &[u8]) {
    let headers = section_headers(elf);
    let (_, h) = headers
        .iter()
        .find(|(n, _)| n == name)
        .unwrap_or_else(|| panic!("no section {name}"));
    while elf.len() % 8 != 0 {
        elf.push(0);
    }
    let offset = elf.len() as u64;
    elf.extend_from_slice(data);
    elf[h.at + 0x18..h.at + 0x20].copy_from_slice(&offset.to_le_bytes());
    elf[h.at + 0x20..h.at + 0x28].copy_from_slice(&(data.len() as u64).to_le_bytes());
}

/// A `.BTF.ext` with only core_relo records: `(section name offset, records)` groups.
pub fn btf_ext(groups: &[(u32, Vec<[u32; 4]>)]) -> Vec<u8> {
    let mut body = Vec::new();
    body.extend_from_slice(&16u32.to_le_bytes());
    for (name, records) in groups {
        body.extend_from_slice(&name.to_le_bytes());
        body.extend_from_slice(&(records.len() as u32).to_le_bytes());
        for r in records {
            for w in r {
                body.extend_from_slice(&w.to_le_bytes());
            }
        }
    }
    let mut out = vec![0x9f, 0xeb, 1, 0];
    for w in [32u32, 0, 0, 0, 0, 0, body.len() as u32] {
        out.extend_from_slice(&w.to_le_bytes());
    }
    out.extend_from_slice(&body);
    out
}

/// An access string for a relocation on `root` of `local`: mostly a real path (member and
/// array indices that exist), sometimes out of range, long, or malformed.
fn access_string(
    u: &mut Unstructured<'_>,
    local: &Btf<'_>,
    root: u32,
    kind: u32,
    clean: bool,
) -> Result<String> {
    let dirty = |u: &mut Unstructured<'_>, n: u32| -> Result<bool> { Ok(!clean && u.ratio(1, n)?) };
    if (6..=9).contains(&kind) || kind == 12 {
        return Ok(if dirty(u, 20)? {
            "1".into()
        } else {
            "0".into()
        });
    }
    let mut parts = vec![if dirty(u, 10)? {
        u.int_in_range(0..=3u32)?
    } else {
        0
    }];
    let mut id = root;
    for _ in 0..u.int_in_range(0..=70u32)? {
        let Ok(ty) = local.skip_mods_and_typedefs(id) else {
            break;
        };
        let (idx, next) = match ty.kind {
            TypeKind::Struct(c) | TypeKind::Union(c) if !c.is_empty() => {
                let i = u.int_in_range(0..=c.len() as u32 - 1)?;
                (i, c.member(i as usize).unwrap().type_id)
            }
            TypeKind::Enum(e) | TypeKind::Enum64(e) if !e.is_empty() => {
                parts[0] = u.int_in_range(0..=e.len() as u32 - u32::from(clean))?;
                break;
            }
            TypeKind::Array(a) if clean && a.nelems == 0 => break,
            TypeKind::Array(a) => {
                let last = a.nelems.saturating_sub(u32::from(clean)).min(8);
                (u.int_in_range(0..=last)?, a.elem_type)
            }
            _ => break,
        };
        parts.push(if dirty(u, 30)? { u.arbitrary()? } else { idx });
        id = next;
    }
    let mut s = parts
        .iter()
        .map(|p| (*p as i32).to_string())
        .collect::<Vec<_>>()
        .join(":");
    if dirty(u, 40)? {
        s.push_str(":x");
    }
    Ok(s)
}

/// A BPF object: `fixture` (a little-endian fixture object) with its `.BTF` replaced by a
/// generated local BTF (the fixture's own types plus adversarial ones), its `.BTF.ext` by
/// generated CO-RE records on those types, and every instruction of the programs the records
/// point at replaced by `r0 = 1`.
pub fn object(u: &mut Unstructured<'_>, fixture: &[u8]) -> Result<Vec<u8>> {
    let obj = BpfObject::parse(fixture).expect("fixture object parses");
    let template =
        Btf::parse(obj.btf_bytes().expect("fixture has .BTF")).expect("fixture .BTF parses");
    let pool = Pool::from_btf(&template);
    let mut g = Gen::new(&pool, Endianness::Little);
    g.copy_template(u, &template)?;
    for _ in 0..u.int_in_range(0..=24u32)? {
        g.step(u, Some(&template))?;
    }
    // Section names first, so record groups can name them.
    let sections: Vec<_> = obj
        .sections()
        .iter()
        .filter(|s| obj.programs().iter().any(|p| p.section_index == s.index))
        .collect();
    let mut groups = Vec::new();
    let group_count = u.int_in_range(1..=sections.len().min(3) as u32)?;
    // Ids of the local BTF are final once the types are written (strings added later only
    // extend the string section): build the records against a parse of the types so far.
    let partial = g.w.finish().unwrap();
    let Ok(local) = Btf::parse(&partial) else {
        return Err(arbitrary::Error::IncorrectFormat);
    };
    let named: Vec<u32> = (1..local.type_cnt())
        .filter(|&id| {
            local.type_by_id(id).is_ok_and(|t| {
                t.name_off != 0 && t.kind() != Some(Kind::Func) && t.kind() != Some(Kind::Var)
            })
        })
        .collect();
    if named.is_empty() {
        return Err(arbitrary::Error::NotEnoughData);
    }
    let enums: Vec<u32> = named
        .iter()
        .copied()
        .filter(|&id| {
            local
                .skip_mods_and_typedefs(id)
                .is_ok_and(|t| t.kind.any_enum().is_some_and(|e| !e.is_empty()))
        })
        .collect();
    let clean = u.ratio(2, 3)?;
    let kinds: &[u32] = if clean { &CLEAN_KINDS } else { &ALL_KINDS };
    for _ in 0..group_count {
        let section = *u.choose(&sections)?;
        let name = g.w.add_string(section.name).unwrap();
        let programs: Vec<_> = obj
            .programs()
            .iter()
            .filter(|p| p.section_index == section.index)
            .collect();
        let mut records = Vec::new();
        let mut used = std::collections::HashSet::new();
        for _ in 0..u.int_in_range(1..=20u32)? {
            let p = *u.choose(&programs)?;
            let insn = u.int_in_range(0..=(p.size / 8).saturating_sub(1))?;
            // One relocation per instruction: a second one would see the first one's value.
            if !used.insert(p.offset + insn * 8) {
                continue;
            }
            let root = if !clean && u.ratio(1, 12)? {
                u.int_in_range(0..=local.type_cnt())?
            } else {
                *u.choose(&named)?
            };
            let mut kind = *u.choose(kinds)?;
            let root = match (clean, kind) {
                (true, 10) if enums.is_empty() => {
                    kind = 8;
                    root
                }
                (true, 10) => *u.choose(&enums)?,
                _ => root,
            };
            let access = access_string(u, &local, root, kind, clean)?;
            let access_off = g.w.add_string(&access).unwrap();
            records.push([p.offset + insn * 8, root, access_off, kind]);
        }
        groups.push((name, records));
    }
    let btf = g.finish();
    let mut elf = fixture.to_vec();
    // Every instruction of the sections with records becomes `r0 = 1`.
    let headers = section_headers(&elf);
    for section in &sections {
        let (_, h) = headers.iter().find(|(n, _)| n == section.name).unwrap();
        for slot in elf[h.offset..h.offset + h.size].chunks_exact_mut(8) {
            slot.copy_from_slice(&MOV_R0_1);
        }
    }
    replace_section(&mut elf, ".BTF", &btf);
    replace_section(&mut elf, ".BTF.ext", &btf_ext(&groups));
    Ok(elf)
}

/// `fixture` (a little-endian fixture object) with its `.BTF` replaced by `btf` and its
/// `.BTF.ext` by one CO-RE record per `(type id, access string, kind)` of `relos`, on the
/// successive instructions of its first program, all of them `r0 = 1`.
pub fn object_with(fixture: &[u8], mut btf: BtfWriter, relos: &[(u32, &str, u32)]) -> Vec<u8> {
    let obj = BpfObject::parse(fixture).expect("fixture object parses");
    let program = obj.programs()[0];
    assert!(
        relos.len() as u32 * 8 <= program.size,
        "too many relocations for the program"
    );
    let name = btf.add_string(program.section_name).unwrap();
    let records = relos
        .iter()
        .zip(0u32..)
        .map(|(&(type_id, access, kind), i)| {
            [
                program.offset + 8 * i,
                type_id,
                btf.add_string(access).unwrap(),
                kind,
            ]
        })
        .collect();
    let mut elf = fixture.to_vec();
    let headers = section_headers(&elf);
    let (_, h) = headers
        .iter()
        .find(|(n, _)| n == program.section_name)
        .unwrap();
    for slot in elf[h.offset..h.offset + h.size].chunks_exact_mut(8) {
        slot.copy_from_slice(&MOV_R0_1);
    }
    replace_section(&mut elf, ".BTF", &btf.finish().unwrap());
    replace_section(&mut elf, ".BTF.ext", &btf_ext(&[(name, records)]));
    elf
}
