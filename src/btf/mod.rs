//! BTF: zero-copy parsing and validation of raw BTF blobs (base and split), queries the CO-RE
//! engine needs, and a writer for new BTF.
//!
//! A [`Btf`] borrows its bytes and keeps only a per-id offset index, so parsing the 5 MiB kernel
//! BTF is one validating pass over the input and one `Vec<u32>` allocation.

pub mod dump;
pub mod kind;
mod parse;
mod types;
mod validate;
pub mod write;

pub use kind::Kind;
pub use object::endian::Endianness;
pub use types::{
    Array, Composite, Datasec, Enum, EnumValue, FuncProto, Member, Param, Type, TypeKind,
    VarSecInfo,
};

use crate::error::{Error, Result};
use alloc::vec::Vec;

/// `BTF_MAGIC`.
pub const MAGIC: u16 = 0xeb9f;
/// Length of the BTF header this crate writes (`struct btf_header`).
pub const HEADER_LEN: usize = 24;
/// Largest type id the kernel accepts (`BTF_MAX_TYPE`).
pub const MAX_TYPE_ID: u32 = 0x000f_ffff;
/// Largest string offset the kernel accepts (`BTF_MAX_NAME_OFFSET`).
pub const MAX_NAME_OFFSET: u32 = 0x00ff_ffff;
/// How many modifiers, typedefs and nested arrays a type walk follows before giving up (the
/// kernel's `MAX_RESOLVE_DEPTH`).
pub const MAX_RESOLVE_DEPTH: usize = 32;

/// A parsed, validated BTF: base (ids from 1) or split on top of a base.
#[derive(Debug)]
pub struct Btf<'a> {
    base: Option<&'a Btf<'a>>,
    endian: Endianness,
    /// The type section.
    types: &'a [u8],
    /// The string section, checked to be UTF-8 so names are `&str` without re-checking.
    strings: &'a str,
    /// Byte offset within `types` of each local type, in id order.
    offsets: Vec<u32>,
    /// Id of the first local type: 1 for base BTF, the base's `type_cnt()` for split BTF.
    start_id: u32,
    /// String offset of `strings[0]`: 0 for base BTF, the base's string length for split BTF.
    start_str_off: u32,
}

impl<'a> Btf<'a> {
    /// Parse and validate a raw base BTF blob (e.g. `/sys/kernel/btf/vmlinux`).
    pub fn parse(data: &'a [u8]) -> Result<Btf<'a>> {
        parse::parse(data, None)
    }

    /// Parse and validate a raw split BTF blob (e.g. `/sys/kernel/btf/<module>`) on `base`.
    pub fn parse_split(data: &'a [u8], base: &'a Btf<'a>) -> Result<Btf<'a>> {
        parse::parse(data, Some(base))
    }

    /// Parse raw BTF, or the `.BTF` section when `data` is an ELF file (vmlinux image, `.ko`,
    /// BPF object), optionally split on `base`.
    pub fn parse_raw_or_elf(data: &'a [u8], base: Option<&'a Btf<'a>>) -> Result<Btf<'a>> {
        parse::parse(parse::btf_bytes(data)?, base)
    }

    /// The base BTF of a split BTF.
    pub fn base(&self) -> Option<&'a Btf<'a>> {
        self.base
    }

    /// Byte order of the blob.
    pub fn endian(&self) -> Endianness {
        self.endian
    }

    /// One past the largest valid type id (libbpf's `btf__type_cnt`): ids `0..type_cnt()` exist.
    pub fn type_cnt(&self) -> u32 {
        self.start_id + self.offsets.len() as u32
    }

    /// First id defined by this BTF itself (1 for base BTF).
    pub fn start_id(&self) -> u32 {
        self.start_id
    }

    /// Length of this BTF's own string section.
    pub fn strings_len(&self) -> u32 {
        self.strings.len() as u32
    }

    /// First string offset defined by this BTF itself (0 for base BTF).
    pub fn start_str_off(&self) -> u32 {
        self.start_str_off
    }

    /// The type with id `id`, resolving into the base for split BTF. Id 0 is [`TypeKind::Void`].
    pub fn type_by_id(&self, id: u32) -> Result<Type<'a>> {
        if id < self.start_id {
            return match self.base {
                Some(base) => base.type_by_id(id),
                None => Ok(Type { id: 0, name_off: 0, kind: TypeKind::Void }),
            };
        }
        let index = (id - self.start_id) as usize;
        let offset = *self.offsets.get(index).ok_or(Error::NoSuchType(id))?;
        parse::decode(self.types, self.endian, offset as usize, id)
    }

    /// The string at offset `offset`, resolving into the base for split BTF.
    pub fn name(&self, offset: u32) -> Result<&'a str> {
        if offset < self.start_str_off {
            return match self.base {
                Some(base) => base.name(offset),
                None => Err(Error::BadString { offset, reason: "offset out of range" }),
            };
        }
        let local = (offset - self.start_str_off) as usize;
        let rest = self
            .strings
            .get(local..)
            .ok_or(Error::BadString { offset, reason: "offset out of range" })?;
        let end = rest
            .find('\0')
            .ok_or(Error::BadString { offset, reason: "not NUL-terminated" })?;
        Ok(&rest[..end])
    }

    /// Whether the string at `offset` is empty, checking only that the offset is valid: the
    /// section ends with a NUL and is UTF-8, so every in-range offset on a character boundary
    /// starts a terminated string. Validation uses this to avoid a scan per name.
    pub(crate) fn name_is_empty(&self, offset: u32) -> Result<bool> {
        if offset < self.start_str_off {
            return match self.base {
                Some(base) => base.name_is_empty(offset),
                None => Err(Error::BadString { offset, reason: "offset out of range" }),
            };
        }
        let local = (offset - self.start_str_off) as usize;
        if !self.strings.is_char_boundary(local) || local >= self.strings.len() {
            return Err(Error::BadString { offset, reason: "offset out of range" });
        }
        Ok(self.strings.as_bytes()[local] == 0)
    }

    /// The name of type `ty` (empty for anonymous types).
    pub fn type_name(&self, ty: &Type<'_>) -> Result<&'a str> {
        self.name(ty.name_off)
    }

    /// Every type this BTF defines itself (not its base), in id order.
    pub fn types(&self) -> impl Iterator<Item = Result<Type<'a>>> + '_ {
        (self.start_id..self.type_cnt()).map(|id| self.type_by_id(id))
    }

    /// Follow modifiers (CONST, VOLATILE, RESTRICT, TYPE_TAG) and typedefs from `id` to the
    /// first other type.
    pub fn skip_mods_and_typedefs(&self, id: u32) -> Result<Type<'a>> {
        self.skip_while(id, |k| k.is_mod_or_typedef())
    }

    /// Follow modifiers (not typedefs) from `id` to the first other type.
    pub fn skip_mods(&self, id: u32) -> Result<Type<'a>> {
        self.skip_while(id, |k| k.is_mod_or_typedef() && k != Kind::Typedef)
    }

    fn skip_while(&self, mut id: u32, skip: impl Fn(Kind) -> bool) -> Result<Type<'a>> {
        for _ in 0..=MAX_RESOLVE_DEPTH {
            let ty = self.type_by_id(id)?;
            match (ty.kind(), ty.kind.modified_type()) {
                (Some(kind), Some(next)) if skip(kind) => id = next,
                _ => return Ok(ty),
            }
        }
        Err(Error::BadType { id, reason: "modifier/typedef chain too deep" })
    }

    /// The size in bytes of type `id` (libbpf's `btf__resolve_size`): through modifiers and
    /// typedefs, pointers are the target's pointer size, arrays multiply.
    pub fn resolve_size(&self, id: u32) -> Result<u64> {
        let mut id = id;
        let mut multiplier: u64 = 1;
        for _ in 0..=MAX_RESOLVE_DEPTH {
            let ty = self.type_by_id(id)?;
            let size = match ty.kind {
                TypeKind::Ptr(_) => Some(u64::from(self.pointer_size())),
                TypeKind::Array(a) => {
                    multiplier = multiplier
                        .checked_mul(u64::from(a.nelems))
                        .ok_or(Error::BadType { id, reason: "array size overflows" })?;
                    id = a.elem_type;
                    None
                }
                TypeKind::Int { .. }
                | TypeKind::Struct(_)
                | TypeKind::Union(_)
                | TypeKind::Enum(_)
                | TypeKind::Enum64(_)
                | TypeKind::Datasec(_)
                | TypeKind::Float { .. } => ty.size().map(u64::from),
                TypeKind::Var { type_id, .. } => {
                    id = type_id;
                    None
                }
                _ => match ty.kind.modified_type() {
                    Some(next) => {
                        id = next;
                        None
                    }
                    None => return Err(Error::BadType { id, reason: "type has no size" }),
                },
            };
            if let Some(size) = size {
                let total = size
                    .checked_mul(multiplier)
                    .ok_or(Error::BadType { id, reason: "type size overflows" })?;
                return Ok(total);
            }
        }
        Err(Error::BadType { id, reason: "type chain too deep to size" })
    }

    /// Pointer size of the target: BPF and every kernel BTF libbpf handles use 8 bytes.
    pub fn pointer_size(&self) -> u32 {
        8
    }
}
