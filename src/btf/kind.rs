//! BTF kinds and the fixed-size records that follow a type header, as defined by the kernel's
//! `include/uapi/linux/btf.h`.

/// A BTF type kind (`BTF_KIND_*`), the 5-bit field in bits 24..29 of `info`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u8)]
pub enum Kind {
    /// `BTF_KIND_INT`
    Int = 1,
    /// `BTF_KIND_PTR`
    Ptr = 2,
    /// `BTF_KIND_ARRAY`
    Array = 3,
    /// `BTF_KIND_STRUCT`
    Struct = 4,
    /// `BTF_KIND_UNION`
    Union = 5,
    /// `BTF_KIND_ENUM`
    Enum = 6,
    /// `BTF_KIND_FWD`
    Fwd = 7,
    /// `BTF_KIND_TYPEDEF`
    Typedef = 8,
    /// `BTF_KIND_VOLATILE`
    Volatile = 9,
    /// `BTF_KIND_CONST`
    Const = 10,
    /// `BTF_KIND_RESTRICT`
    Restrict = 11,
    /// `BTF_KIND_FUNC`
    Func = 12,
    /// `BTF_KIND_FUNC_PROTO`
    FuncProto = 13,
    /// `BTF_KIND_VAR`
    Var = 14,
    /// `BTF_KIND_DATASEC`
    Datasec = 15,
    /// `BTF_KIND_FLOAT`
    Float = 16,
    /// `BTF_KIND_DECL_TAG`
    DeclTag = 17,
    /// `BTF_KIND_TYPE_TAG`
    TypeTag = 18,
    /// `BTF_KIND_ENUM64`
    Enum64 = 19,
}

impl Kind {
    /// The kind for a raw `BTF_KIND_*` value, `None` for 0 (`UNKN`) and unknown kinds.
    pub fn from_raw(raw: u32) -> Option<Kind> {
        use Kind::*;
        Some(match raw {
            1 => Int,
            2 => Ptr,
            3 => Array,
            4 => Struct,
            5 => Union,
            6 => Enum,
            7 => Fwd,
            8 => Typedef,
            9 => Volatile,
            10 => Const,
            11 => Restrict,
            12 => Func,
            13 => FuncProto,
            14 => Var,
            15 => Datasec,
            16 => Float,
            17 => DeclTag,
            18 => TypeTag,
            19 => Enum64,
            _ => return None,
        })
    }

    /// The name bpftool and the kernel print for this kind (`STRUCT`, `FUNC_PROTO`, ...).
    pub fn name(self) -> &'static str {
        use Kind::*;
        match self {
            Int => "INT",
            Ptr => "PTR",
            Array => "ARRAY",
            Struct => "STRUCT",
            Union => "UNION",
            Enum => "ENUM",
            Fwd => "FWD",
            Typedef => "TYPEDEF",
            Volatile => "VOLATILE",
            Const => "CONST",
            Restrict => "RESTRICT",
            Func => "FUNC",
            FuncProto => "FUNC_PROTO",
            Var => "VAR",
            Datasec => "DATASEC",
            Float => "FLOAT",
            DeclTag => "DECL_TAG",
            TypeTag => "TYPE_TAG",
            Enum64 => "ENUM64",
        }
    }

    /// The lowercase name libbpf's logs use (`struct`, `func_proto`, ...).
    pub fn libbpf_name(self) -> &'static str {
        use Kind::*;
        match self {
            Int => "int",
            Ptr => "ptr",
            Array => "array",
            Struct => "struct",
            Union => "union",
            Enum => "enum",
            Fwd => "fwd",
            Typedef => "typedef",
            Volatile => "volatile",
            Const => "const",
            Restrict => "restrict",
            Func => "func",
            FuncProto => "func_proto",
            Var => "var",
            Datasec => "datasec",
            Float => "float",
            DeclTag => "decl_tag",
            TypeTag => "type_tag",
            Enum64 => "enum64",
        }
    }

    /// Bytes of kind-specific data after the 12-byte header, for a type with `vlen` entries.
    pub fn extra_len(self, vlen: u16) -> usize {
        let vlen = usize::from(vlen);
        use Kind::*;
        match self {
            Int | Var | DeclTag => 4,
            Array => 12,
            Struct | Union | Datasec | Enum64 => 12 * vlen,
            Enum | FuncProto => 8 * vlen,
            _ => 0,
        }
    }

    /// Kinds whose header's third word is a type id (the rest carry a size or nothing).
    pub fn has_type_ref(self) -> bool {
        use Kind::*;
        matches!(
            self,
            Ptr | Typedef
                | Volatile
                | Const
                | Restrict
                | Func
                | FuncProto
                | Var
                | DeclTag
                | TypeTag
        )
    }

    /// Modifiers and typedefs: kinds that CO-RE looks through to reach the underlying type.
    pub fn is_mod_or_typedef(self) -> bool {
        use Kind::*;
        matches!(self, Typedef | Volatile | Const | Restrict | TypeTag)
    }

    /// `STRUCT` or `UNION`.
    pub fn is_composite(self) -> bool {
        matches!(self, Kind::Struct | Kind::Union)
    }

    /// `ENUM` or `ENUM64`.
    pub fn is_any_enum(self) -> bool {
        matches!(self, Kind::Enum | Kind::Enum64)
    }
}

/// A set of kinds, one bit per raw kind value: a filter that whole-BTF scans test against a
/// header's raw kind without decoding it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct KindSet(u32);

impl KindSet {
    /// No kinds.
    pub const EMPTY: KindSet = KindSet(0);

    /// This set with `kind` added.
    pub const fn with(self, kind: Kind) -> KindSet {
        KindSet(self.0 | 1 << kind as u32)
    }

    /// Every kind of `self` or `other`.
    pub const fn union(self, other: KindSet) -> KindSet {
        KindSet(self.0 | other.0)
    }

    /// Whether `kind` is in the set.
    pub const fn contains(self, kind: Kind) -> bool {
        self.contains_raw(kind as u32)
    }

    /// Whether every kind of `other` is in the set.
    pub const fn contains_all(self, other: KindSet) -> bool {
        self.0 & other.0 == other.0
    }

    /// Whether the raw kind value `raw` (bits 24..29 of `info`) is in the set.
    pub const fn contains_raw(self, raw: u32) -> bool {
        raw < 32 && self.0 & (1 << raw) != 0
    }

    /// Whether the set is empty.
    pub const fn is_empty(self) -> bool {
        self.0 == 0
    }
}

/// `BTF_INT_SIGNED`: the integer encoding bit for signed integers.
pub const INT_SIGNED: u8 = 1 << 0;
/// `BTF_INT_CHAR`: the integer encoding bit for `char`.
pub const INT_CHAR: u8 = 1 << 1;
/// `BTF_INT_BOOL`: the integer encoding bit for `_Bool`.
pub const INT_BOOL: u8 = 1 << 2;
