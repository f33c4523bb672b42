//! Building new BTF: append types (ids from 1), deduplicated strings, serialize to the standard
//! raw format in either byte order. [`BtfWriter::copy_type`] re-encodes a parsed type with
//! remapped ids and a member filter, which is all the minimizer needs.
//!
//! Strings are deduplicated whole only: every name offset points at the start of a string.
//! cilium/ebpf rejects an offset into the middle of one, so a string is never stored as the
//! tail of another.

use super::types::{Type, TypeKind};
use super::{Btf, Endianness, HEADER_LEN, Kind, MAGIC, MAX_NAME_OFFSET, MAX_TYPE_ID};
use crate::error::{Error, Result};
use crate::fallible;
use alloc::vec::Vec;
use core::hash::BuildHasher;
use hashbrown::{DefaultHashBuilder, HashTable};
use object::endian::Endian;

/// A BTF under construction.
#[derive(Debug)]
pub struct BtfWriter {
    endian: Endianness,
    types: Vec<u8>,
    strings: Vec<u8>,
    /// Offsets into `strings` of every string added, keyed by the string's hash.
    string_index: HashTable<u32>,
    hasher: DefaultHashBuilder,
    next_id: u32,
    /// The offset of `strings`' first byte: 0, or for split BTF the base's string section
    /// length (offsets below it are the base's strings).
    strings_start: u32,
}

impl BtfWriter {
    /// An empty BTF in byte order `endian`, holding only the empty string.
    pub fn new(endian: Endianness) -> Result<BtfWriter> {
        Ok(BtfWriter {
            endian,
            types: Vec::new(),
            strings: fallible::to_vec(b"\0")?,
            string_index: HashTable::new(),
            // Fixed seed: string offsets depend only on insertion order anyway, but a fixed
            // hasher keeps the writer free of any runtime randomness.
            hasher: DefaultHashBuilder::default(),
            next_id: 1,
            strings_start: 0,
        })
    }

    /// An empty split BTF over a base of `base_type_cnt` ids (its `btf__type_cnt`) and a
    /// `base_strings_len`-byte string section: ids continue the base's, and the string
    /// section holds only what the base lacks, its offsets continuing the base's (a name the
    /// base has is given by the base's offset, not added).
    pub fn new_split(
        endian: Endianness,
        base_type_cnt: u32,
        base_strings_len: u32,
    ) -> Result<BtfWriter> {
        Ok(BtfWriter {
            strings: Vec::new(),
            next_id: base_type_cnt,
            strings_start: base_strings_len,
            ..BtfWriter::new(endian)?
        })
    }

    /// The id the next added type gets (one past the last added, like `btf__type_cnt`).
    pub fn type_cnt(&self) -> u32 {
        self.next_id
    }

    /// Offset of `s` in the string section, adding it if new (strings are stored in the order
    /// first added). The empty string is offset 0.
    pub fn add_string(&mut self, s: &str) -> Result<u32> {
        self.add_bytes(s.as_bytes())
    }

    /// [`BtfWriter::add_string`] of a name as bytes (one read from another BTF).
    pub fn add_bytes(&mut self, s: &[u8]) -> Result<u32> {
        self.add_bytes_if(s, |_| true)
            .map(|added| added.unwrap_or(0))
    }

    /// [`BtfWriter::add_bytes`] of a name held already, or else one `new` accepts (`None`
    /// if it does not): a check made once per distinct name (a DWARF file repeats each
    /// name in every unit).
    pub fn add_bytes_if(
        &mut self,
        s: &[u8],
        new: impl FnOnce(&[u8]) -> bool,
    ) -> Result<Option<u32>> {
        if s.is_empty() {
            return Ok(Some(0));
        }
        let hash = self.hasher.hash_one(s);
        let strings = &self.strings;
        let found = self
            .string_index
            .find(hash, |&off| string_at(strings, off) == s);
        if let Some(&off) = found {
            return Ok(Some(self.strings_start + off));
        }
        if !new(s) {
            return Ok(None);
        }
        let off = self.strings.len();
        if self.strings_start as usize + off + s.len() > MAX_NAME_OFFSET as usize {
            return Err(Error::Limit {
                what: "string section length",
                limit: MAX_NAME_OFFSET as usize,
            });
        }
        self.strings.try_reserve(s.len() + 1)?;
        self.strings.extend_from_slice(s);
        self.strings.push(0);
        let hasher = &self.hasher;
        let strings = &self.strings;
        self.string_index
            .try_reserve(1, |&o| hasher.hash_one(string_at(strings, o)))?;
        self.string_index.insert_unique(hash, off as u32, |&o| {
            hasher.hash_one(string_at(strings, o))
        });
        Ok(Some(self.strings_start + off as u32))
    }

    /// Append a type header and return the new type's id; kind-specific words follow with
    /// [`BtfWriter::push_word`].
    pub fn begin_type(
        &mut self,
        name: &str,
        kind: Kind,
        kind_flag: bool,
        vlen: u16,
        size_or_type: u32,
    ) -> Result<u32> {
        let name_off = self.add_string(name)?;
        self.begin_type_at(name_off, kind, kind_flag, vlen, size_or_type)
    }

    /// [`BtfWriter::begin_type`] for a name already added: `name_off` is what
    /// [`BtfWriter::add_string`] returned.
    pub fn begin_type_at(
        &mut self,
        name_off: u32,
        kind: Kind,
        kind_flag: bool,
        vlen: u16,
        size_or_type: u32,
    ) -> Result<u32> {
        if name_off as usize >= self.strings_start as usize + self.strings.len() {
            return Err(Error::InvalidArgument(
                "name offset outside the string section",
            ));
        }
        if self.next_id > MAX_TYPE_ID {
            return Err(Error::Limit {
                what: "type count",
                limit: MAX_TYPE_ID as usize,
            });
        }
        let info = (u32::from(kind_flag) << 31) | ((kind as u32) << 24) | u32::from(vlen);
        self.types.try_reserve(12 + kind.extra_len(vlen))?;
        for word in [name_off, info, size_or_type] {
            self.push_word(word)?;
        }
        let id = self.next_id;
        self.next_id += 1;
        Ok(id)
    }

    /// Append one 32-bit word of kind-specific data to the last type.
    pub fn push_word(&mut self, word: u32) -> Result<()> {
        let bytes = self.endian.write_u32(word);
        fallible::extend(&mut self.types, &bytes)
    }

    /// Append a copy of `ty` (from `src`) with every referenced id passed through `map_id` and,
    /// for structs, unions, enums and data sections, only the members / enumerators / variables
    /// for which `keep(index)` is true. Names are re-added to this writer's string section. Returns the new id.
    pub fn copy_type(
        &mut self,
        src: &Btf<'_>,
        ty: &Type<'_>,
        mut map_id: impl FnMut(u32) -> Result<u32>,
        mut keep: impl FnMut(usize) -> bool,
    ) -> Result<u32> {
        let name = src.name(ty.name_off)?;
        let Some(kind) = ty.kind() else {
            return Err(Error::InvalidArgument("void cannot be copied"));
        };
        let vlen_of = |n: usize| {
            u16::try_from(n).map_err(|_| Error::BadType {
                id: ty.id,
                reason: "vlen overflow",
            })
        };
        match &ty.kind {
            TypeKind::Void => Err(Error::InvalidArgument("void cannot be copied")),
            TypeKind::Int {
                size,
                encoding,
                offset,
                bits,
            } => {
                let id = self.begin_type(name, kind, false, 0, *size)?;
                self.push_word(
                    (u32::from(*encoding) << 24) | (u32::from(*offset) << 16) | u32::from(*bits),
                )?;
                Ok(id)
            }
            TypeKind::Ptr(t)
            | TypeKind::Typedef(t)
            | TypeKind::Volatile(t)
            | TypeKind::Const(t)
            | TypeKind::Restrict(t)
            | TypeKind::TypeTag(t) => {
                let t = map_id(*t)?;
                self.begin_type(name, kind, false, 0, t)
            }
            TypeKind::Array(a) => {
                let (elem, index) = (map_id(a.elem_type)?, map_id(a.index_type)?);
                let id = self.begin_type(name, kind, false, 0, 0)?;
                for w in [elem, index, a.nelems] {
                    self.push_word(w)?;
                }
                Ok(id)
            }
            TypeKind::Struct(c) | TypeKind::Union(c) => {
                let mut kept: Vec<(u32, u32, u32)> = fallible::vec_with_capacity(c.len())?;
                for (index, m) in c.members().enumerate() {
                    if keep(index) {
                        let member_name = self.add_string(src.name(m.name_off)?)?;
                        kept.push((member_name, map_id(m.type_id)?, m.raw_offset));
                    }
                }
                let id = self.begin_type(name, kind, c.kind_flag, vlen_of(kept.len())?, c.size)?;
                for (n, t, off) in kept {
                    self.push_word(n)?;
                    self.push_word(t)?;
                    self.push_word(off)?;
                }
                Ok(id)
            }
            TypeKind::Enum(e) | TypeKind::Enum64(e) => {
                let kept = (0..e.len()).filter(|&i| keep(i)).count();
                let id = self.begin_type(name, kind, e.signed, vlen_of(kept)?, e.size)?;
                for v in e
                    .values()
                    .enumerate()
                    .filter(|&(i, _)| keep(i))
                    .map(|(_, v)| v)
                {
                    let n = self.add_string(src.name(v.name_off)?)?;
                    self.push_word(n)?;
                    self.push_word(v.value as u32)?;
                    if kind == Kind::Enum64 {
                        self.push_word((v.value >> 32) as u32)?;
                    }
                }
                Ok(id)
            }
            TypeKind::Fwd { union } => self.begin_type(name, kind, *union, 0, 0),
            TypeKind::Func { proto, linkage } => {
                let proto = map_id(*proto)?;
                self.begin_type(name, kind, false, *linkage, proto)
            }
            TypeKind::FuncProto(p) => {
                let ret = map_id(p.return_type)?;
                let mut params: Vec<(u32, u32)> = fallible::vec_with_capacity(p.len())?;
                for param in p.params() {
                    params.push((
                        self.add_string(src.name(param.name_off)?)?,
                        map_id(param.type_id)?,
                    ));
                }
                let id = self.begin_type(name, kind, false, vlen_of(params.len())?, ret)?;
                for (n, t) in params {
                    self.push_word(n)?;
                    self.push_word(t)?;
                }
                Ok(id)
            }
            TypeKind::Var { type_id, linkage } => {
                let t = map_id(*type_id)?;
                let id = self.begin_type(name, kind, false, 0, t)?;
                self.push_word(*linkage)?;
                Ok(id)
            }
            TypeKind::Datasec(d) => {
                let mut vars: Vec<(u32, u32, u32)> = fallible::vec_with_capacity(d.len())?;
                for (index, v) in d.vars().enumerate() {
                    if keep(index) {
                        vars.push((map_id(v.type_id)?, v.offset, v.size));
                    }
                }
                let id = self.begin_type(name, kind, false, vlen_of(vars.len())?, d.size)?;
                for (t, off, size) in vars {
                    for w in [t, off, size] {
                        self.push_word(w)?;
                    }
                }
                Ok(id)
            }
            TypeKind::Float { size } => self.begin_type(name, kind, false, 0, *size),
            TypeKind::DeclTag {
                type_id,
                component_idx,
            } => {
                let t = map_id(*type_id)?;
                let id = self.begin_type(name, kind, false, 0, t)?;
                self.push_word(*component_idx as u32)?;
                Ok(id)
            }
        }
    }

    /// Serialize to the raw BTF format: 24-byte header, type section, string section.
    pub fn finish(&self) -> Result<Vec<u8>> {
        let (types, strings) = (&self.types, &self.strings);
        let total = HEADER_LEN + types.len() + strings.len();
        let mut out = fallible::vec_with_capacity(total)?;
        let magic = match self.endian {
            Endianness::Little => MAGIC.to_le_bytes(),
            Endianness::Big => MAGIC.to_be_bytes(),
        };
        out.extend_from_slice(&magic);
        out.extend_from_slice(&[1, 0]);
        let type_len = types.len() as u32;
        for word in [
            HEADER_LEN as u32,
            0,
            type_len,
            type_len,
            strings.len() as u32,
        ] {
            out.extend_from_slice(&self.endian.write_u32(word));
        }
        out.extend_from_slice(types);
        out.extend_from_slice(strings);
        Ok(out)
    }
}

/// The NUL-terminated string at `off` of string section `strings` (empty past its end).
pub(crate) fn string_at(strings: &[u8], off: u32) -> &[u8] {
    let rest = strings.get(off as usize..).unwrap_or(&[]);
    let end = rest.iter().position(|&b| b == 0).unwrap_or(rest.len());
    &rest[..end]
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A name the writer holds is found without its check; a new one is taken in only if
    /// the check accepts it.
    #[test]
    fn only_new_names_are_checked() {
        let mut writer = BtfWriter::new(Endianness::Little).unwrap();
        let held = writer.add_bytes(b"task_struct").unwrap();
        assert_eq!(
            writer.add_bytes_if(b"task_struct", |_| false).unwrap(),
            Some(held)
        );
        assert_eq!(writer.add_bytes_if(b"\xff", |_| false).unwrap(), None);
        let added = writer.add_bytes_if(b"mm", |name| name == b"mm").unwrap();
        assert_eq!(added, Some(writer.add_bytes(b"mm").unwrap()));
        assert_eq!(writer.add_bytes_if(b"", |_| false).unwrap(), Some(0));
    }
}
