//! Decoded views of single BTF types: a [`Type`] is a small header plus a [`TypeKind`] enum whose
//! variants borrow their member/parameter/value records straight from the BTF bytes.

use super::kind::Kind;
use object::endian::{Endian, Endianness};

/// One BTF type, decoded from its record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Type<'a> {
    /// The type's id.
    pub id: u32,
    /// String offset of its name (0 = anonymous).
    pub name_off: u32,
    /// Kind-specific contents.
    pub kind: TypeKind<'a>,
}

/// Kind-specific contents of a [`Type`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TypeKind<'a> {
    /// Type id 0.
    Void,
    /// `BTF_KIND_INT`.
    Int {
        /// Size in bytes.
        size: u32,
        /// `BTF_INT_SIGNED`, `BTF_INT_CHAR`, `BTF_INT_BOOL` bits.
        encoding: u8,
        /// Bit offset of the value (legacy bitfield encoding).
        offset: u8,
        /// Number of value bits.
        bits: u8,
    },
    /// `BTF_KIND_PTR`.
    Ptr(u32),
    /// `BTF_KIND_ARRAY`.
    Array(Array),
    /// `BTF_KIND_STRUCT`.
    Struct(Composite<'a>),
    /// `BTF_KIND_UNION`.
    Union(Composite<'a>),
    /// `BTF_KIND_ENUM` (32-bit values).
    Enum(Enum<'a>),
    /// `BTF_KIND_FWD`; `true` for a forward-declared union.
    Fwd {
        /// Declared as `union` (kind_flag set) rather than `struct`.
        union: bool,
    },
    /// `BTF_KIND_TYPEDEF`.
    Typedef(u32),
    /// `BTF_KIND_VOLATILE`.
    Volatile(u32),
    /// `BTF_KIND_CONST`.
    Const(u32),
    /// `BTF_KIND_RESTRICT`.
    Restrict(u32),
    /// `BTF_KIND_FUNC`.
    Func {
        /// The FUNC_PROTO type id.
        proto: u32,
        /// Linkage (static, global, extern), stored in vlen.
        linkage: u16,
    },
    /// `BTF_KIND_FUNC_PROTO`.
    FuncProto(FuncProto<'a>),
    /// `BTF_KIND_VAR`.
    Var {
        /// The variable's type id.
        type_id: u32,
        /// Linkage.
        linkage: u32,
    },
    /// `BTF_KIND_DATASEC`.
    Datasec(Datasec<'a>),
    /// `BTF_KIND_FLOAT`.
    Float {
        /// Size in bytes.
        size: u32,
    },
    /// `BTF_KIND_DECL_TAG`.
    DeclTag {
        /// Tagged type id.
        type_id: u32,
        /// Member/parameter index, or -1 for the type itself.
        component_idx: i32,
    },
    /// `BTF_KIND_TYPE_TAG`.
    TypeTag(u32),
    /// `BTF_KIND_ENUM64` (64-bit values).
    Enum64(Enum<'a>),
}

impl<'a> TypeKind<'a> {
    /// The BTF kind, `None` for void.
    pub fn kind(&self) -> Option<Kind> {
        Some(match self {
            TypeKind::Void => return None,
            TypeKind::Int { .. } => Kind::Int,
            TypeKind::Ptr(_) => Kind::Ptr,
            TypeKind::Array(_) => Kind::Array,
            TypeKind::Struct(_) => Kind::Struct,
            TypeKind::Union(_) => Kind::Union,
            TypeKind::Enum(_) => Kind::Enum,
            TypeKind::Fwd { .. } => Kind::Fwd,
            TypeKind::Typedef(_) => Kind::Typedef,
            TypeKind::Volatile(_) => Kind::Volatile,
            TypeKind::Const(_) => Kind::Const,
            TypeKind::Restrict(_) => Kind::Restrict,
            TypeKind::Func { .. } => Kind::Func,
            TypeKind::FuncProto(_) => Kind::FuncProto,
            TypeKind::Var { .. } => Kind::Var,
            TypeKind::Datasec(_) => Kind::Datasec,
            TypeKind::Float { .. } => Kind::Float,
            TypeKind::DeclTag { .. } => Kind::DeclTag,
            TypeKind::TypeTag(_) => Kind::TypeTag,
            TypeKind::Enum64(_) => Kind::Enum64,
        })
    }

    /// For modifiers and typedefs (CONST, VOLATILE, RESTRICT, TYPEDEF, TYPE_TAG) the type they
    /// wrap; `None` for every other kind.
    pub fn modified_type(&self) -> Option<u32> {
        match *self {
            TypeKind::Typedef(t)
            | TypeKind::Volatile(t)
            | TypeKind::Const(t)
            | TypeKind::Restrict(t)
            | TypeKind::TypeTag(t) => Some(t),
            _ => None,
        }
    }

    /// Struct or union members, `None` for other kinds.
    pub fn composite(&self) -> Option<&Composite<'a>> {
        match self {
            TypeKind::Struct(c) | TypeKind::Union(c) => Some(c),
            _ => None,
        }
    }

    /// ENUM or ENUM64 values, `None` for other kinds.
    pub fn any_enum(&self) -> Option<&Enum<'a>> {
        match self {
            TypeKind::Enum(e) | TypeKind::Enum64(e) => Some(e),
            _ => None,
        }
    }
}

/// `struct btf_array`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Array {
    /// Element type id.
    pub elem_type: u32,
    /// Index type id.
    pub index_type: u32,
    /// Number of elements (0 for flexible arrays).
    pub nelems: u32,
}

/// A fixed-size record array following a type header, read lazily.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) struct Records<'a> {
    pub(crate) bytes: &'a [u8],
    pub(crate) endian: Endianness,
    pub(crate) record_len: usize,
}

impl core::fmt::Debug for Records<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "Records({} x {} bytes)", self.len(), self.record_len)
    }
}

impl<'a> Records<'a> {
    pub(crate) fn len(&self) -> usize {
        self.bytes.len() / self.record_len
    }

    /// Whether record `index` exists: [`Records::len`] without its division, for accessors
    /// called once per member of a struct by the thousand.
    pub(crate) fn has(&self, index: usize) -> bool {
        index
            .checked_add(1)
            .and_then(|n| n.checked_mul(self.record_len))
            .is_some_and(|end| end <= self.bytes.len())
    }

    /// Every record as its `N` words, in order: one sequential pass with no per-word bounds
    /// arithmetic, for the loops over every member of a struct. Records of another length than
    /// `N` words give none.
    pub(crate) fn words<const N: usize>(&self) -> impl Iterator<Item = [u32; N]> + use<'a, N> {
        let endian = self.endian;
        let bytes = if self.record_len == 4 * N {
            self.bytes
        } else {
            &[]
        };
        bytes.chunks_exact(4 * N).map(move |record| {
            core::array::from_fn(|w| {
                record
                    .get(4 * w..4 * w + 4)
                    .map_or(0, |b| endian.read_u32([b[0], b[1], b[2], b[3]]))
            })
        })
    }

    /// Word `word` of record `index`; records were bounds-checked when the type was decoded, so
    /// an out-of-range request is the caller's bug and reads as 0 rather than panicking.
    pub(crate) fn word(&self, index: usize, word: usize) -> u32 {
        let start = index * self.record_len + word * 4;
        match self.bytes.get(start..start + 4) {
            Some(b) => self.endian.read_u32([b[0], b[1], b[2], b[3]]),
            None => 0,
        }
    }
}

/// Members of a struct or union.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Composite<'a> {
    /// Size in bytes.
    pub size: u32,
    /// kind_flag: member offsets encode bitfield size in their top 8 bits.
    pub kind_flag: bool,
    pub(crate) records: Records<'a>,
}

/// One struct/union member.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Member {
    /// Name string offset (0 = anonymous).
    pub name_off: u32,
    /// Member type id.
    pub type_id: u32,
    /// The raw `offset` word, as stored.
    pub raw_offset: u32,
    /// Offset from the start of the struct, in bits.
    pub bit_offset: u32,
    /// Bitfield size in bits (0 = not a bitfield, or legacy encoding with bits in the INT).
    pub bitfield_size: u32,
}

impl Member {
    /// The member a record's words (name, type, offset) describe, in a struct whose kind_flag is
    /// `kind_flag`.
    pub(crate) fn from_words([name_off, type_id, raw_offset]: [u32; 3], kind_flag: bool) -> Member {
        let (bit_offset, bitfield_size) = if kind_flag {
            (raw_offset & 0x00ff_ffff, raw_offset >> 24)
        } else {
            (raw_offset, 0)
        };
        Member {
            name_off,
            type_id,
            raw_offset,
            bit_offset,
            bitfield_size,
        }
    }
}

impl<'a> Composite<'a> {
    /// Number of members.
    pub fn len(&self) -> usize {
        self.records.len()
    }

    /// `true` when there are no members.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Member `index`, `None` past the end.
    pub fn member(&self, index: usize) -> Option<Member> {
        self.records.has(index).then(|| {
            Member::from_words(
                [0, 1, 2].map(|word| self.records.word(index, word)),
                self.kind_flag,
            )
        })
    }

    /// All members in order.
    pub fn members(&self) -> impl Iterator<Item = Member> + '_ {
        let kind_flag = self.kind_flag;
        self.records
            .words()
            .map(move |words| Member::from_words(words, kind_flag))
    }
}

/// Values of an ENUM or ENUM64.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Enum<'a> {
    /// Size in bytes.
    pub size: u32,
    /// kind_flag: values are signed.
    pub signed: bool,
    pub(crate) records: Records<'a>,
}

/// One enumerator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EnumValue {
    /// Name string offset.
    pub name_off: u32,
    /// The value's bits, zero-extended from 32 bits for ENUM (sign-extend with
    /// [`EnumValue::signed_value`]).
    pub value: u64,
    /// Whether the enum is 64-bit (ENUM64).
    pub is_64: bool,
}

impl EnumValue {
    /// The value as a signed 64-bit number (ENUM values sign-extended from 32 bits).
    pub fn signed_value(&self) -> i64 {
        if self.is_64 {
            self.value as i64
        } else {
            i64::from(self.value as u32 as i32)
        }
    }
}

impl<'a> Enum<'a> {
    /// Number of values.
    pub fn len(&self) -> usize {
        self.records.len()
    }

    /// `true` when there are no values.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Value `index`, `None` past the end.
    pub fn value(&self, index: usize) -> Option<EnumValue> {
        if !self.records.has(index) {
            return None;
        }
        let is_64 = self.records.record_len == 12;
        let lo = u64::from(self.records.word(index, 1));
        let value = if is_64 {
            lo | (u64::from(self.records.word(index, 2)) << 32)
        } else {
            lo
        };
        Some(EnumValue {
            name_off: self.records.word(index, 0),
            value,
            is_64,
        })
    }

    /// All values in order.
    pub fn values(&self) -> impl Iterator<Item = EnumValue> + '_ {
        (0..self.len()).filter_map(|i| self.value(i))
    }
}

/// A function prototype.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FuncProto<'a> {
    /// Return type id (0 = void).
    pub return_type: u32,
    pub(crate) records: Records<'a>,
}

/// One function parameter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Param {
    /// Name string offset.
    pub name_off: u32,
    /// Type id (0 for a trailing `...`).
    pub type_id: u32,
}

impl<'a> FuncProto<'a> {
    /// Number of parameters.
    pub fn len(&self) -> usize {
        self.records.len()
    }

    /// `true` when there are no parameters.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Parameter `index`, `None` past the end.
    pub fn param(&self, index: usize) -> Option<Param> {
        self.records.has(index).then(|| Param {
            name_off: self.records.word(index, 0),
            type_id: self.records.word(index, 1),
        })
    }

    /// All parameters in order.
    pub fn params(&self) -> impl Iterator<Item = Param> + '_ {
        self.records
            .words()
            .map(|[name_off, type_id]| Param { name_off, type_id })
    }
}

/// A data section's variables.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Datasec<'a> {
    /// Section size in bytes.
    pub size: u32,
    pub(crate) records: Records<'a>,
}

/// One `struct btf_var_secinfo`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VarSecInfo {
    /// VAR (or FUNC) type id.
    pub type_id: u32,
    /// Offset within the section.
    pub offset: u32,
    /// Size in bytes.
    pub size: u32,
}

impl<'a> Datasec<'a> {
    /// Number of variables.
    pub fn len(&self) -> usize {
        self.records.len()
    }

    /// `true` when there are no variables.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Variable `index`, `None` past the end.
    pub fn var(&self, index: usize) -> Option<VarSecInfo> {
        self.records.has(index).then(|| VarSecInfo {
            type_id: self.records.word(index, 0),
            offset: self.records.word(index, 1),
            size: self.records.word(index, 2),
        })
    }

    /// All variables in order.
    pub fn vars(&self) -> impl Iterator<Item = VarSecInfo> + '_ {
        self.records
            .words()
            .map(|[type_id, offset, size]| VarSecInfo {
                type_id,
                offset,
                size,
            })
    }
}

impl<'a> Type<'a> {
    /// The BTF kind, `None` for void.
    pub fn kind(&self) -> Option<Kind> {
        self.kind.kind()
    }

    /// The size in bytes for kinds that have one (INT, STRUCT, UNION, ENUM, ENUM64, DATASEC,
    /// FLOAT), `None` otherwise.
    pub fn size(&self) -> Option<u32> {
        match &self.kind {
            TypeKind::Int { size, .. } | TypeKind::Float { size } => Some(*size),
            TypeKind::Struct(c) | TypeKind::Union(c) => Some(c.size),
            TypeKind::Enum(e) | TypeKind::Enum64(e) => Some(e.size),
            TypeKind::Datasec(d) => Some(d.size),
            _ => None,
        }
    }

    /// Number of type references this type holds (see [`Type::referenced_id`]).
    pub fn referenced_count(&self) -> usize {
        match &self.kind {
            TypeKind::Void
            | TypeKind::Int { .. }
            | TypeKind::Fwd { .. }
            | TypeKind::Float { .. } => 0,
            TypeKind::Enum(_) | TypeKind::Enum64(_) => 0,
            TypeKind::Array(_) => 2,
            TypeKind::Struct(c) | TypeKind::Union(c) => c.len(),
            TypeKind::FuncProto(p) => 1 + p.len(),
            TypeKind::Datasec(d) => d.len(),
            _ => 1,
        }
    }

    /// Reference `index`, in record order: the header's type (return type for FUNC_PROTO), then
    /// array element and index types, member, parameter or variable types. O(1).
    pub fn referenced_id(&self, index: usize) -> Option<u32> {
        match &self.kind {
            TypeKind::Ptr(t)
            | TypeKind::Typedef(t)
            | TypeKind::Volatile(t)
            | TypeKind::Const(t)
            | TypeKind::Restrict(t)
            | TypeKind::TypeTag(t)
            | TypeKind::Func { proto: t, .. }
            | TypeKind::Var { type_id: t, .. }
            | TypeKind::DeclTag { type_id: t, .. } => (index == 0).then_some(*t),
            TypeKind::Array(a) => [a.elem_type, a.index_type].get(index).copied(),
            TypeKind::Struct(c) | TypeKind::Union(c) => c.member(index).map(|m| m.type_id),
            TypeKind::FuncProto(p) => match index {
                0 => Some(p.return_type),
                _ => p.param(index - 1).map(|p| p.type_id),
            },
            TypeKind::Datasec(d) => d.var(index).map(|v| v.type_id),
            _ => None,
        }
    }

    /// Every type id this type refers to, in [`Type::referenced_id`] order.
    pub fn referenced_ids(&self) -> impl Iterator<Item = u32> + '_ {
        (0..self.referenced_count()).filter_map(|i| self.referenced_id(i))
    }
}
