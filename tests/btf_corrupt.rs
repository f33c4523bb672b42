//! Corrupt-input tests for `Btf::parse` / `Btf::parse_split`.
//!
//! A small valid BTF holding every kind is built with `BtfWriter`; each table row derives one
//! corrupt variant from it and names the `btfgen::Error` it must produce (with the type id or
//! byte offset where the variant carries one). Every truncation and a few thousand
//! deterministic random byte flips must return (Ok or Err) without panicking. Split BTF is
//! assembled by hand on a writer-built base.

use btfgen::Error;
use btfgen::btf::write::BtfWriter;
use btfgen::btf::{Btf, Endianness, Kind, MAX_NAME_OFFSET, MAX_TYPE_ID, TypeKind, kind};
use std::panic::{AssertUnwindSafe, catch_unwind};

// ---------------------------------------------------------------------------------------------
// The valid sample
// ---------------------------------------------------------------------------------------------

/// Type ids of the sample, as built by [`sample`].
mod id {
    pub const INT: u32 = 1;
    pub const NODE: u32 = 2;
    pub const PTR: u32 = 3;
    pub const ARRAY: u32 = 4;
    pub const ENUM: u32 = 5;
    pub const TYPEDEF_OUTER: u32 = 6;
    pub const TYPEDEF_INNER: u32 = 7;
    pub const CONST: u32 = 8;
    pub const UNION: u32 = 9;
    pub const FWD: u32 = 10;
    pub const PROTO: u32 = 11;
    pub const FUNC: u32 = 12;
    pub const VAR: u32 = 13;
    pub const DATASEC: u32 = 14;
    pub const FLOAT: u32 = 15;
    pub const DECL_TAG: u32 = 16;
    pub const TYPE_TAG: u32 = 17;
    pub const ENUM64: u32 = 18;
    pub const VOLATILE: u32 = 19;
    pub const RESTRICT: u32 = 20;
    pub const BITS: u32 = 21;
    /// One past the last id.
    pub const COUNT: u32 = 22;
}

fn words(w: &mut BtfWriter, words: &[u32]) {
    for &word in words {
        w.push_word(word).unwrap();
    }
}

/// A valid BTF with every kind: a struct with members (one a pointer back to itself, one an
/// array), an enum, a typedef chain ending in a const, and so on. See [`id`] for the ids.
fn sample(endian: Endianness) -> Vec<u8> {
    let mut w = BtfWriter::new(endian).unwrap();
    let s = |w: &mut BtfWriter, name: &str| w.add_string(name).unwrap();
    assert_eq!(
        w.begin_type("int", Kind::Int, false, 0, 4).unwrap(),
        id::INT
    );
    words(&mut w, &[(u32::from(kind::INT_SIGNED) << 24) | 32]);
    assert_eq!(
        w.begin_type("node", Kind::Struct, false, 3, 24).unwrap(),
        id::NODE
    );
    let (val, next, arr) = (s(&mut w, "val"), s(&mut w, "next"), s(&mut w, "arr"));
    words(
        &mut w,
        &[val, id::INT, 0, next, id::PTR, 64, arr, id::ARRAY, 128],
    );
    assert_eq!(
        w.begin_type("", Kind::Ptr, false, 0, id::NODE).unwrap(),
        id::PTR
    );
    assert_eq!(
        w.begin_type("", Kind::Array, false, 0, 0).unwrap(),
        id::ARRAY
    );
    words(&mut w, &[id::INT, id::INT, 2]);
    assert_eq!(
        w.begin_type("color", Kind::Enum, false, 2, 4).unwrap(),
        id::ENUM
    );
    let (red, green) = (s(&mut w, "RED"), s(&mut w, "GREEN"));
    words(&mut w, &[red, 0, green, 1]);
    let outer = w
        .begin_type("node_t", Kind::Typedef, false, 0, id::TYPEDEF_INNER)
        .unwrap();
    assert_eq!(outer, id::TYPEDEF_OUTER);
    let inner = w
        .begin_type("node_inner_t", Kind::Typedef, false, 0, id::CONST)
        .unwrap();
    assert_eq!(inner, id::TYPEDEF_INNER);
    assert_eq!(
        w.begin_type("", Kind::Const, false, 0, id::NODE).unwrap(),
        id::CONST
    );
    assert_eq!(
        w.begin_type("u", Kind::Union, false, 2, 8).unwrap(),
        id::UNION
    );
    let (i, p) = (s(&mut w, "i"), s(&mut w, "p"));
    words(&mut w, &[i, id::INT, 0, p, id::PTR, 0]);
    assert_eq!(
        w.begin_type("fwd_s", Kind::Fwd, false, 0, 0).unwrap(),
        id::FWD
    );
    assert_eq!(
        w.begin_type("", Kind::FuncProto, false, 2, id::INT)
            .unwrap(),
        id::PROTO
    );
    let (a, b) = (s(&mut w, "a"), s(&mut w, "b"));
    words(&mut w, &[a, id::INT, b, id::PTR]);
    assert_eq!(
        w.begin_type("fn", Kind::Func, false, 1, id::PROTO).unwrap(),
        id::FUNC
    );
    assert_eq!(
        w.begin_type("v", Kind::Var, false, 0, id::INT).unwrap(),
        id::VAR
    );
    words(&mut w, &[1]);
    assert_eq!(
        w.begin_type(".data", Kind::Datasec, false, 1, 4).unwrap(),
        id::DATASEC
    );
    words(&mut w, &[id::VAR, 0, 4]);
    assert_eq!(
        w.begin_type("double", Kind::Float, false, 0, 8).unwrap(),
        id::FLOAT
    );
    assert_eq!(
        w.begin_type("tag", Kind::DeclTag, false, 0, id::NODE)
            .unwrap(),
        id::DECL_TAG
    );
    words(&mut w, &[0]);
    assert_eq!(
        w.begin_type("user", Kind::TypeTag, false, 0, id::INT)
            .unwrap(),
        id::TYPE_TAG
    );
    assert_eq!(
        w.begin_type("big", Kind::Enum64, true, 1, 8).unwrap(),
        id::ENUM64
    );
    let huge = s(&mut w, "HUGE");
    words(&mut w, &[huge, 0, 1 << 8]);
    assert_eq!(
        w.begin_type("", Kind::Volatile, false, 0, id::INT).unwrap(),
        id::VOLATILE
    );
    assert_eq!(
        w.begin_type("", Kind::Restrict, false, 0, id::PTR).unwrap(),
        id::RESTRICT
    );
    assert_eq!(
        w.begin_type("bits", Kind::Struct, true, 2, 4).unwrap(),
        id::BITS
    );
    let (lo, hi) = (s(&mut w, "lo"), s(&mut w, "hi"));
    words(&mut w, &[lo, id::INT, 3 << 24, hi, id::INT, (5 << 24) | 3]);
    assert_eq!(w.type_cnt(), id::COUNT);
    w.finish().unwrap()
}

// ---------------------------------------------------------------------------------------------
// Raw access to the little-endian sample
// ---------------------------------------------------------------------------------------------

const HDR: usize = 24;

fn get_u32(blob: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(blob[at..at + 4].try_into().unwrap())
}

fn set_u32(blob: &mut [u8], at: usize, value: u32) {
    blob[at..at + 4].copy_from_slice(&value.to_le_bytes());
}

/// Where things are in a little-endian blob with a 24-byte header, computed independently of
/// the parser under test.
struct Layout {
    type_len: usize,
    str_len: usize,
    /// Byte offset of each type record within the type section; index `id - 1`.
    type_offs: Vec<usize>,
}

impl Layout {
    fn of(blob: &[u8]) -> Layout {
        assert_eq!(get_u32(blob, 4) as usize, HDR);
        assert_eq!(get_u32(blob, 8), 0, "type section first");
        let type_len = get_u32(blob, 12) as usize;
        assert_eq!(
            get_u32(blob, 16) as usize,
            type_len,
            "strings right after types"
        );
        let str_len = get_u32(blob, 20) as usize;
        assert_eq!(HDR + type_len + str_len, blob.len());
        let mut type_offs = Vec::new();
        let mut pos = 0;
        while pos < type_len {
            type_offs.push(pos);
            let info = get_u32(blob, HDR + pos + 4);
            let kind = Kind::from_raw((info >> 24) & 0x1f).unwrap();
            pos += 12 + kind.extra_len((info & 0xffff) as u16);
        }
        assert_eq!(pos, type_len);
        Layout {
            type_len,
            str_len,
            type_offs,
        }
    }

    /// File offset of word `word` of type `id`'s record (0 = name_off, 1 = info, 2 = size/type,
    /// 3.. = kind-specific words).
    fn word(&self, id: u32, word: usize) -> usize {
        HDR + self.type_offs[id as usize - 1] + 4 * word
    }

    /// Byte offset of type `id`'s record within the type section.
    fn local(&self, id: u32) -> usize {
        self.type_offs[id as usize - 1]
    }

    fn str_start(&self) -> usize {
        HDR + self.type_len
    }
}

fn set_kind(blob: &mut [u8], l: &Layout, id: u32, raw_kind: u32) {
    let at = l.word(id, 1);
    let info = get_u32(blob, at);
    set_u32(blob, at, (info & !(0x1f << 24)) | (raw_kind << 24));
}

fn set_vlen(blob: &mut [u8], l: &Layout, id: u32, vlen: u16) {
    let at = l.word(id, 1);
    let info = get_u32(blob, at);
    set_u32(blob, at, (info & !0xffff) | u32::from(vlen));
}

/// A blob with the given sections and a standard header (types first, then strings).
fn assemble(endian: Endianness, types: &[u8], strings: &[u8]) -> Vec<u8> {
    let word = |v: u32| match endian {
        Endianness::Little => v.to_le_bytes(),
        Endianness::Big => v.to_be_bytes(),
    };
    let mut out = match endian {
        Endianness::Little => 0xeb9fu16.to_le_bytes().to_vec(),
        Endianness::Big => 0xeb9fu16.to_be_bytes().to_vec(),
    };
    out.extend_from_slice(&[1, 0]);
    let (tl, sl) = (types.len() as u32, strings.len() as u32);
    for v in [HDR as u32, 0, tl, tl, sl] {
        out.extend_from_slice(&word(v));
    }
    out.extend_from_slice(types);
    out.extend_from_slice(strings);
    out
}

// ---------------------------------------------------------------------------------------------
// Expectations
// ---------------------------------------------------------------------------------------------

#[derive(Debug, Clone, Copy)]
enum Expect {
    /// `Error::BadHeader` whose reason contains this text.
    Header(&'static str),
    /// `Error::Truncated` at this offset.
    Truncated(usize),
    /// `Error::BadType` for this id.
    BadType(u32),
    /// `Error::BadType` for one of these ids (cycles may be reported at any member).
    BadTypeIn(&'static [u32]),
    /// `Error::BadString` at this offset.
    BadString(u32),
    /// `Error::Limit`.
    Limit,
    /// `Error::UnknownKind` for this id and raw kind.
    UnknownKind(u32, u32),
    /// Parses.
    Ok,
}

fn check(what: &str, result: Result<Btf<'_>, Error>, expect: Expect) {
    let ok = match (&result, expect) {
        (Ok(_), Expect::Ok) => true,
        (Err(Error::BadHeader(reason)), Expect::Header(text)) => reason.contains(text),
        (Err(Error::Truncated { offset, .. }), Expect::Truncated(want)) => *offset == want,
        (Err(Error::BadType { id, .. }), Expect::BadType(want)) => *id == want,
        (Err(Error::BadType { id, .. }), Expect::BadTypeIn(ids)) => ids.contains(id),
        (Err(Error::BadString { offset, .. }), Expect::BadString(want)) => *offset == want,
        (Err(Error::Limit { .. }), Expect::Limit) => true,
        (Err(Error::UnknownKind { id, kind }), Expect::UnknownKind(want_id, want_kind)) => {
            (*id, *kind) == (want_id, want_kind)
        }
        _ => false,
    };
    let got = result.as_ref().map(|b| b.type_cnt());
    assert!(ok, "{what}: expected {expect:?}, got {got:?}");
}

/// Parse `blob` as base BTF, turning a panic into a test failure that names the input.
fn parse_no_panic<'a>(what: &str, blob: &'a [u8]) -> Result<Btf<'a>, Error> {
    match catch_unwind(AssertUnwindSafe(|| Btf::parse(blob))) {
        Ok(result) => result,
        Err(_) => panic!("Btf::parse panicked on {what}: {blob:02x?}"),
    }
}

/// Use every query on an accepted BTF; none may panic, and the writer must reproduce it.
fn exercise(what: &str, btf: &Btf<'_>) {
    let run = || {
        let mut writer = BtfWriter::new(btf.endian()).unwrap();
        for id in btf.start_id()..btf.type_cnt() {
            let ty = btf.type_by_id(id).expect("accepted BTF: every id decodes");
            btf.type_name(&ty)
                .expect("accepted BTF: every name resolves");
            let _ = btf.skip_mods_and_typedefs(id);
            let _ = btf.skip_mods(id);
            let _ = btf.resolve_size(id);
            for target in ty.referenced_ids() {
                assert!(target < btf.type_cnt(), "accepted BTF refers past its end");
                btf.type_by_id(target).expect("referenced id decodes");
            }
            if let Some(c) = ty.kind.composite() {
                for m in c.members() {
                    btf.name(m.name_off).expect("member name resolves");
                }
            }
            if let Some(e) = ty.kind.any_enum() {
                for v in e.values() {
                    btf.name(v.name_off).expect("enumerator name resolves");
                    let _ = v.signed_value();
                }
            }
            writer
                .copy_type(btf, &ty, Ok, |_| true)
                .expect("accepted type copies");
        }
        assert!(btf.type_by_id(btf.type_cnt()).is_err());
        if btf.base().is_none() {
            let out = writer.finish().unwrap();
            let again = Btf::parse(&out).expect("copy of an accepted BTF parses");
            assert_eq!(again.type_cnt(), btf.type_cnt());
        }
    };
    if catch_unwind(AssertUnwindSafe(run)).is_err() {
        panic!("querying an accepted BTF panicked ({what})");
    }
}

// ---------------------------------------------------------------------------------------------
// The table
// ---------------------------------------------------------------------------------------------

/// Changes a valid blob into a corrupt one.
type Mutation<'a> = Box<dyn Fn(&mut Vec<u8>) + 'a>;

/// One corrupt variant: a mutation of the valid little-endian sample and the error it must give.
struct Case<'a> {
    name: &'static str,
    expect: Expect,
    mutate: Mutation<'a>,
}

fn row<'a>(name: &'static str, expect: Expect, mutate: impl Fn(&mut Vec<u8>) + 'a) -> Case<'a> {
    Case {
        name,
        expect,
        mutate: Box::new(mutate),
    }
}

/// The table. `w(id, n)` is the file offset of word `n` of type `id`'s record (0 = name_off,
/// 1 = info, 2 = size/type, 3.. = members, values, params, ...); `at(id)` the record's offset
/// within the type section.
#[rustfmt::skip]
fn cases(l: &Layout) -> Vec<Case<'_>> {
    use Expect::*;
    use id::*;
    let w = |id: u32, word: usize| l.word(id, word);
    let at = |id: u32| l.local(id);
    let (type_len, str_len) = (l.type_len as u32, l.str_len as u32);
    let total = HDR as u32 + type_len + str_len;
    vec![
        // --- header ---
        row("bad magic", Header("magic"), |b| b[0] = 0),
        row("magic bytes swapped", Header("header length"), |b| b.swap(0, 1)),
        row("version 0", Header("version"), |b| b[2] = 0),
        row("version 2", Header("version"), |b| b[2] = 2),
        row("non-zero flags", Header("flags"), |b| b[3] = 1),
        row("hdr_len too big", Header("header length"), move |b| set_u32(b, 4, total + 1)),
        row("hdr_len u32::MAX", Header("header length"), |b| set_u32(b, 4, u32::MAX)),
        row("hdr_len too small", Header("header length"), |b| set_u32(b, 4, 16)),
        row("hdr_len 0", Header("header length"), |b| set_u32(b, 4, 0)),
        // The 4 bytes after a 24-byte header are the first type's (non-zero) name offset.
        row("longer header, non-zero tail", Header("tail"), |b| set_u32(b, 4, 28)),
        row("type_off past end", Header("right after the header"), move |b| set_u32(b, 8, type_len + str_len)),
        row("type_off u32::MAX", Header("right after the header"), |b| set_u32(b, 8, 0xffff_fffc)),
        row("type_len past end", Header("does not follow"), move |b| set_u32(b, 12, type_len + str_len + 4)),
        row("type_len u32::MAX", Header("does not follow"), |b| set_u32(b, 12, u32::MAX)),
        row("str_off past end", Header("does not follow"), move |b| set_u32(b, 16, type_len + str_len)),
        row("str_len one too long", Header("past end"), move |b| set_u32(b, 20, str_len + 1)),
        row("str_off + str_len overflows u32", Header("does not follow"), |b| {
            set_u32(b, 16, 0xffff_fff0);
            set_u32(b, 20, 0x20);
        }),
        row("sections overlap", Header("does not follow"), move |b| set_u32(b, 16, type_len - 8)),
        row("string section inside type section", Header("does not follow"), |b| {
            set_u32(b, 16, 4);
            set_u32(b, 20, 8);
        }),
        row("type section misaligned", Header("right after the header"), move |b| {
            set_u32(b, 8, 2);
            set_u32(b, 12, type_len - 4);
        }),
        row("empty string section", Header("data after"), |b| set_u32(b, 20, 0)),
        // The kernel and libbpf want the sections back to back, types first, nothing after.
        row("gap between sections", Header("does not follow"), move |b| {
            set_u32(b, 16, type_len + 4);
            set_u32(b, 20, str_len - 4);
        }),
        row("trailing bytes after strings", Header("data after"), move |b| set_u32(b, 20, str_len - 4)),
        row("strings before types", Header("right after the header"), move |b| {
            set_u32(b, 8, str_len);
            set_u32(b, 16, 0);
        }),
        // --- strings ---
        row("string section does not start with NUL", BadString(0), |b| b[l.str_start()] = b'x'),
        row("string section not NUL-terminated", BadString(str_len - 1), |b| *b.last_mut().unwrap() = b'x'),
        // Offset 1 is "int", the first string added.
        row("string section not UTF-8", BadString(1), |b| b[l.str_start() + 1] = 0xff),
        row("type name offset = string length", BadType(INT), move |b| set_u32(b, w(INT, 0), str_len)),
        row("type name offset u32::MAX", BadType(NODE), move |b| set_u32(b, w(NODE, 0), u32::MAX)),
        row("member name offset out of range", BadType(NODE), move |b| set_u32(b, w(NODE, 3), str_len + 100)),
        row("enumerator name offset out of range", BadType(ENUM), move |b| set_u32(b, w(ENUM, 5), str_len)),
        row("param name offset out of range", BadType(PROTO), move |b| set_u32(b, w(PROTO, 3), 1 << 30)),
        // --- kinds and record bounds ---
        row("unknown kind 20", UnknownKind(PTR, 20), |b| set_kind(b, l, PTR, 20)),
        row("kind 0 (UNKN)", BadType(PTR), |b| set_kind(b, l, PTR, 0)),
        row("kind 31", UnknownKind(FLOAT, 31), |b| set_kind(b, l, FLOAT, 31)),
        row("struct vlen 0xffff", Truncated(at(NODE)), |b| set_vlen(b, l, NODE, 0xffff)),
        row("enum vlen 0xffff", Truncated(at(ENUM)), |b| set_vlen(b, l, ENUM, 0xffff)),
        row("datasec vlen 0xffff", Truncated(at(DATASEC)), |b| set_vlen(b, l, DATASEC, 0xffff)),
        row("last type's vlen one too many", Truncated(at(BITS)), |b| set_vlen(b, l, BITS, 3)),
        // A shorter type_len leaves a gap before the strings (records cut mid-way are covered by
        // type_section_cut_at_every_offset, which re-assembles a consistent header).
        row("type section ends mid-record", Header("does not follow"), move |b| set_u32(b, 12, type_len - 4)),
        row("type section ends mid-header", Header("does not follow"), move |b| {
            set_u32(b, 12, at(BITS) as u32 + 6)
        }),
        // The struct swallows the next record (the PTR), whose info word becomes a member type.
        row("struct vlen one too many", BadType(NODE), |b| set_vlen(b, l, NODE, 4)),
        // --- references ---
        row("ptr to id type_cnt", BadType(PTR), move |b| set_u32(b, w(PTR, 2), COUNT)),
        row("ptr to id u32::MAX", BadType(PTR), move |b| set_u32(b, w(PTR, 2), u32::MAX)),
        row("member of a non-existent type", BadType(NODE), move |b| set_u32(b, w(NODE, 4), 1000)),
        row("array index type missing", BadType(ARRAY), move |b| set_u32(b, w(ARRAY, 4), 99)),
        row("func proto param type missing", BadType(PROTO), move |b| set_u32(b, w(PROTO, 4), 99)),
        row("func of a missing proto", BadType(FUNC), move |b| set_u32(b, w(FUNC, 2), COUNT)),
        row("datasec var missing", BadType(DATASEC), move |b| set_u32(b, w(DATASEC, 3), 99)),
        row("decl tag target missing", BadType(DECL_TAG), move |b| set_u32(b, w(DECL_TAG, 2), 99)),
        row("typedef to a missing type", BadType(TYPEDEF_INNER), move |b| set_u32(b, w(TYPEDEF_INNER, 2), 0xf_ffff)),
        // --- fields the kernel requires to be zero or in range ---
        // (a PTR's vlen would make it swallow nothing, so only the flag rows use PTR records)
        row("vlen on a pointer", BadType(PTR), |b| set_vlen(b, l, PTR, 1)),
        row("kind_flag on a pointer", BadType(PTR), move |b| {
            let info = get_u32(b, w(PTR, 1));
            set_u32(b, w(PTR, 1), info | 1 << 31)
        }),
        row("func linkage 3", BadType(FUNC), |b| set_vlen(b, l, FUNC, 3)),
        row("var linkage 3", BadType(VAR), move |b| set_u32(b, w(VAR, 3), 3)),
        row("int with unused bits", BadType(INT), move |b| {
            let data = get_u32(b, w(INT, 3));
            set_u32(b, w(INT, 3), data | 1 << 28)
        }),
        row("func of a non-proto", BadType(FUNC), move |b| set_u32(b, w(FUNC, 2), INT)),
        // --- cycles not through a pointer ---
        row("typedef cycle A->B->A", BadTypeIn(&[TYPEDEF_OUTER, TYPEDEF_INNER]),
            move |b| set_u32(b, w(TYPEDEF_INNER, 2), TYPEDEF_OUTER)),
        row("const self-loop", BadType(CONST), move |b| set_u32(b, w(CONST, 2), CONST)),
        row("volatile self-loop", BadType(VOLATILE), move |b| set_u32(b, w(VOLATILE, 2), VOLATILE)),
        row("type tag self-loop", BadType(TYPE_TAG), move |b| set_u32(b, w(TYPE_TAG, 2), TYPE_TAG)),
        row("struct containing itself by value", BadType(NODE), move |b| set_u32(b, w(NODE, 4), NODE)),
        row("array of itself", BadType(ARRAY), move |b| set_u32(b, w(ARRAY, 3), ARRAY)),
        row("struct containing itself through typedef->typedef->const",
            BadTypeIn(&[NODE, TYPEDEF_OUTER, TYPEDEF_INNER, CONST]),
            move |b| set_u32(b, w(NODE, 4), TYPEDEF_OUTER)),
        row("union containing itself", BadType(UNION), move |b| set_u32(b, w(UNION, 4), UNION)),
        // --- kind-specific fields ---
        row("array of void", BadType(ARRAY), move |b| set_u32(b, w(ARRAY, 3), 0)),
        row("int size 3", BadType(INT), move |b| set_u32(b, w(INT, 2), 3)),
        row("int bits exceed size", BadType(INT), move |b| set_u32(b, w(INT, 3), 33)),
        row("int two encodings", BadType(INT), move |b| set_u32(b, w(INT, 3), (3 << 24) | 32)),
        row("ptr with a name", BadType(PTR), move |b| set_u32(b, w(PTR, 0), 1)),
        row("typedef without a name", BadType(TYPEDEF_OUTER), move |b| set_u32(b, w(TYPEDEF_OUTER, 0), 0)),
        row("union member at non-zero offset", BadType(UNION), move |b| set_u32(b, w(UNION, 8), 8)),
        row("member offsets decreasing", BadType(NODE), move |b| set_u32(b, w(NODE, 11), 32)),
        row("member offset past struct end", BadType(NODE), move |b| set_u32(b, w(NODE, 11), 1000)),
        row("bitfield wider than 128 bits", BadType(BITS), move |b| set_u32(b, w(BITS, 5), 200 << 24)),
        row("enum size 3", BadType(ENUM), move |b| set_u32(b, w(ENUM, 2), 3)),
        row("enumerator without a name", BadType(ENUM64), move |b| set_u32(b, w(ENUM64, 3), 0)),
        row("fwd without a name", BadType(FWD), move |b| set_u32(b, w(FWD, 0), 0)),
        row("var without a name", BadType(VAR), move |b| set_u32(b, w(VAR, 0), 0)),
        row("datasec entry of void", BadType(DATASEC), move |b| set_u32(b, w(DATASEC, 3), 0)),
        row("float size 3", BadType(FLOAT), move |b| set_u32(b, w(FLOAT, 2), 3)),
    ]
}

#[test]
fn sample_is_valid_in_both_byte_orders() {
    let le = sample(Endianness::Little);
    let be = sample(Endianness::Big);
    let (a, b) = (Btf::parse(&le).unwrap(), Btf::parse(&be).unwrap());
    assert_eq!(a.type_cnt(), id::COUNT);
    assert_eq!(b.type_cnt(), id::COUNT);
    for id in 1..id::COUNT {
        let (x, y) = (a.type_by_id(id).unwrap(), b.type_by_id(id).unwrap());
        assert_eq!(x.kind(), y.kind(), "id {id}");
        assert_eq!(
            a.type_name(&x).unwrap(),
            b.type_name(&y).unwrap(),
            "id {id}"
        );
        assert_eq!(x.size(), y.size(), "id {id}");
        assert!(x.referenced_ids().eq(y.referenced_ids()), "id {id}");
    }
    let node = a.type_by_id(id::NODE).unwrap();
    assert_eq!(a.type_name(&node).unwrap(), "node");
    let members: Vec<_> = node.kind.composite().unwrap().members().collect();
    assert_eq!(members.len(), 3);
    assert_eq!(a.name(members[2].name_off).unwrap(), "arr");
    assert_eq!(members[2].bit_offset, 128);
    assert_eq!(
        a.skip_mods_and_typedefs(id::TYPEDEF_OUTER).unwrap().id,
        id::NODE
    );
    assert_eq!(a.resolve_size(id::ARRAY).unwrap(), 8);
    let bits = a.type_by_id(id::BITS).unwrap();
    let hi = bits.kind.composite().unwrap().member(1).unwrap();
    assert_eq!((hi.bit_offset, hi.bitfield_size), (3, 5));
    let big = a.type_by_id(id::ENUM64).unwrap();
    assert_eq!(
        big.kind.any_enum().unwrap().value(0).unwrap().value,
        1 << 40
    );
    exercise("sample", &a);
    exercise("big-endian sample", &b);
}

#[test]
fn corrupt_variants_fail_with_the_named_error() {
    let valid = sample(Endianness::Little);
    let layout = Layout::of(&valid);
    let cases = cases(&layout);
    let mut names = std::collections::HashSet::new();
    for case in &cases {
        assert!(names.insert(case.name), "duplicate case name {}", case.name);
        let mut blob = valid.clone();
        (case.mutate)(&mut blob);
        assert_ne!(blob, valid, "{}: mutation changed nothing", case.name);
        check(case.name, parse_no_panic(case.name, &blob), case.expect);
    }
    assert!(cases.len() >= 60);
}

/// Found by fuzzing (`btf_parse`): a member name offset pointing at the second byte of a
/// two-byte character. The string section is UTF-8, but that name is not: full validation must
/// reject it (it once passed, and copying the type then failed), and on-use reading must report
/// it as an error when the name is read.
#[test]
fn a_name_inside_a_utf8_character_is_rejected() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/regressions/mid_utf8_name.btf"
    );
    let blob = std::fs::read(path).expect("regression input");
    match Btf::parse(&blob) {
        Err(Error::BadType { id: 12, reason }) => assert!(reason.contains("UTF-8"), "{reason}"),
        other => panic!(
            "expected type [12] rejected, got {:?}",
            other.map(|b| b.type_cnt())
        ),
    }
    let btf = Btf::parse_with(&blob, None, btfgen::btf::Validation::OnUse).expect("parses");
    match btf.type_by_id(12) {
        Err(Error::BadType { id: 12, reason }) => assert!(reason.contains("UTF-8"), "{reason}"),
        other => panic!("expected type [12] rejected on use, got {other:?}"),
    }
}

/// Validated on use, a typedef cycle passes the parse; following the chain must then fail,
/// naming the loop, rather than walk on.
#[test]
fn a_typedef_cycle_fails_the_walk_when_validated_on_use() {
    let mut blob = sample(Endianness::Little);
    let layout = Layout::of(&blob);
    set_u32(
        &mut blob,
        layout.word(id::TYPEDEF_INNER, 2),
        id::TYPEDEF_OUTER,
    );
    let btf = Btf::parse_with(&blob, None, btfgen::btf::Validation::OnUse).expect("parses");
    for start in [id::TYPEDEF_OUTER, id::TYPEDEF_INNER] {
        match btf.skip_mods_and_typedefs(start) {
            Err(Error::BadType { reason, .. }) => assert!(reason.contains("loops"), "{reason}"),
            other => panic!("typedef cycle from {start}: {other:?}"),
        }
    }
}

/// The same corruptions, big-endian: the parser must not depend on the byte order to catch
/// them. Only header-level rows are re-checked here (they do not need the layout walker).
#[test]
fn big_endian_header_corruptions() {
    let valid = sample(Endianness::Big);
    Btf::parse(&valid).unwrap();
    let set_be =
        |b: &mut Vec<u8>, at: usize, v: u32| b[at..at + 4].copy_from_slice(&v.to_be_bytes());
    let mut blob = valid.clone();
    blob[2] = 9;
    check("BE version", Btf::parse(&blob), Expect::Header("version"));
    let mut blob = valid.clone();
    set_be(&mut blob, 4, valid.len() as u32 + 1);
    check(
        "BE hdr_len",
        Btf::parse(&blob),
        Expect::Header("header length"),
    );
    let mut blob = valid.clone();
    // Little-endian hdr_len 24 read as big-endian is 0x18000000.
    blob[4..8].copy_from_slice(&24u32.to_le_bytes());
    check(
        "BE blob with LE hdr_len",
        Btf::parse(&blob),
        Expect::Header("header length"),
    );
    let mut blob = valid.clone();
    *blob.last_mut().unwrap() = b'x';
    let str_len = u32::from_be_bytes(valid[20..24].try_into().unwrap());
    check(
        "BE strings",
        Btf::parse(&blob),
        Expect::BadString(str_len - 1),
    );
}

// ---------------------------------------------------------------------------------------------
// Truncation
// ---------------------------------------------------------------------------------------------

#[test]
fn every_byte_truncation_fails() {
    let valid = sample(Endianness::Little);
    for n in 0..valid.len() {
        let what = format!("first {n} of {} bytes", valid.len());
        let expect = if n < HDR {
            Expect::Truncated(0)
        } else {
            Expect::Header("past end")
        };
        check(&what, parse_no_panic(&what, &valid[..n]), expect);
    }
    check("whole blob", Btf::parse(&valid), Expect::Ok);
}

/// Cut the type section (with a consistent header) at every byte: inside a record the parser
/// must name that record's offset; at a record boundary the kept prefix is valid exactly when
/// none of its types refers past it, and otherwise the first type that does is named.
#[test]
fn type_section_cut_at_every_offset() {
    let valid = sample(Endianness::Little);
    let l = Layout::of(&valid);
    let btf = Btf::parse(&valid).unwrap();
    let types = &valid[HDR..HDR + l.type_len];
    let strings = &valid[l.str_start()..];
    for k in 0..=l.type_len {
        let blob = assemble(Endianness::Little, &types[..k], strings);
        let what = format!("type section cut to {k} bytes");
        let kept = l.type_offs.iter().filter(|&&off| off < k).count() as u32;
        let expect = if l.type_offs.contains(&k) || k == l.type_len {
            let dangling = (1..=kept).find(|&id| {
                btf.type_by_id(id)
                    .unwrap()
                    .referenced_ids()
                    .any(|target| target > kept)
            });
            match dangling {
                Some(id) => Expect::BadType(id),
                None => Expect::Ok,
            }
        } else {
            Expect::Truncated(l.type_offs[kept as usize - 1])
        };
        let result = parse_no_panic(&what, &blob);
        if let Ok(parsed) = &result {
            assert_eq!(parsed.type_cnt(), kept + 1, "{what}");
            exercise(&what, parsed);
        }
        check(&what, result, expect);
    }
}

/// Every string offset a type uses (its name, member, enumerator and parameter names).
fn name_offsets(btf: &Btf<'_>, id: u32) -> Vec<u32> {
    let ty = btf.type_by_id(id).unwrap();
    let mut out = vec![ty.name_off];
    match &ty.kind {
        TypeKind::Struct(c) | TypeKind::Union(c) => out.extend(c.members().map(|m| m.name_off)),
        TypeKind::Enum(e) | TypeKind::Enum64(e) => out.extend(e.values().map(|v| v.name_off)),
        TypeKind::FuncProto(p) => out.extend(p.params().map(|p| p.name_off)),
        _ => {}
    }
    out
}

/// Cut the string section (with a consistent header) at every byte: an empty section is a
/// header error, a cut inside a string leaves it unterminated, and a cut between strings
/// fails at the first type whose names were cut off.
#[test]
fn string_section_cut_at_every_offset() {
    let valid = sample(Endianness::Little);
    let l = Layout::of(&valid);
    let btf = Btf::parse(&valid).unwrap();
    let types = &valid[HDR..HDR + l.type_len];
    let strings = &valid[l.str_start()..];
    let mut saw_ok = false;
    for k in 0..=l.str_len {
        let blob = assemble(Endianness::Little, types, &strings[..k]);
        let what = format!("string section cut to {k} bytes");
        let expect = if k == 0 {
            Expect::Header("empty")
        } else if strings[k - 1] != 0 {
            Expect::BadString(k as u32 - 1)
        } else {
            let cut = (1..id::COUNT)
                .find(|&id| name_offsets(&btf, id).iter().any(|&off| off as usize >= k));
            match cut {
                Some(id) => Expect::BadType(id),
                None => Expect::Ok,
            }
        };
        saw_ok |= matches!(expect, Expect::Ok);
        check(&what, parse_no_panic(&what, &blob), expect);
    }
    assert!(saw_ok, "the uncut string section must parse");
}

// ---------------------------------------------------------------------------------------------
// Random byte flips
// ---------------------------------------------------------------------------------------------

/// xorshift64*: deterministic, no extra crate.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// Overwrite 1 to 4 random bytes; half the time with a value likely to matter (0, 0xff, a
/// small number, a flipped bit), else a random byte.
fn mutate(rng: &mut Rng, blob: &mut [u8], from: usize) {
    let flips = 1 + rng.below(4);
    for _ in 0..flips {
        let at = from + rng.below(blob.len() - from);
        let r = rng.next();
        blob[at] = match r % 8 {
            0 => 0,
            1 => 0xff,
            2 => (r >> 8) as u8 % 32,
            3 | 4 => blob[at] ^ (1 << ((r >> 8) % 8)),
            _ => (r >> 8) as u8,
        };
    }
}

#[test]
fn random_byte_flips_never_panic() {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut accepted = 0;
    let mut rejected = 0;
    for endian in [Endianness::Little, Endianness::Big] {
        let valid = sample(endian);
        for round in 0..3000 {
            let mut blob = valid.clone();
            // Every third round leaves the header alone so the flips reach the types.
            let from = if round % 3 == 0 { HDR } else { 0 };
            mutate(&mut rng, &mut blob, from);
            let what = format!("{endian:?} flip round {round}");
            match parse_no_panic(&what, &blob) {
                Ok(btf) => {
                    accepted += 1;
                    exercise(&what, &btf);
                }
                Err(_) => rejected += 1,
            }
        }
    }
    // Both outcomes must occur, or the flips are not exercising the validator.
    assert!(accepted > 50, "only {accepted} mutants accepted");
    assert!(rejected > 1000, "only {rejected} mutants rejected");
}

// ---------------------------------------------------------------------------------------------
// Limits
// ---------------------------------------------------------------------------------------------

/// `MAX_TYPE_ID` types parse; one more is a `Limit` error (checked before the record is read).
#[test]
fn type_count_limit() {
    let ptr_to_void = {
        let mut rec = Vec::new();
        for w in [0u32, (Kind::Ptr as u32) << 24, 0] {
            rec.extend_from_slice(&w.to_le_bytes());
        }
        rec
    };
    let mut types = ptr_to_void.repeat(MAX_TYPE_ID as usize);
    let blob = assemble(Endianness::Little, &types, b"\0");
    let btf = Btf::parse(&blob).expect("MAX_TYPE_ID types are allowed");
    assert_eq!(btf.type_cnt(), MAX_TYPE_ID + 1);
    types.extend_from_slice(&ptr_to_void);
    let blob = assemble(Endianness::Little, &types, b"\0");
    check("MAX_TYPE_ID + 1 types", Btf::parse(&blob), Expect::Limit);
}

/// A string section longer than `MAX_NAME_OFFSET + 1` bytes is a `Limit` error.
#[test]
fn string_section_limit() {
    let ok_len = MAX_NAME_OFFSET as usize + 1;
    let mut strings = vec![b'a'; ok_len];
    strings[0] = 0;
    *strings.last_mut().unwrap() = 0;
    let blob = assemble(Endianness::Little, &[], &strings);
    Btf::parse(&blob).expect("a string section of MAX_NAME_OFFSET + 1 bytes is allowed");
    strings.push(0);
    let blob = assemble(Endianness::Little, &[], &strings);
    check(
        "string section one byte too long",
        Btf::parse(&blob),
        Expect::Limit,
    );
}

// ---------------------------------------------------------------------------------------------
// Split BTF
// ---------------------------------------------------------------------------------------------

/// Base: [1] int, [2] struct base_s { int x; }, [3] ptr -> 2.
fn split_base() -> Vec<u8> {
    let mut w = BtfWriter::new(Endianness::Little).unwrap();
    w.begin_type("int", Kind::Int, false, 0, 4).unwrap();
    words(&mut w, &[32]);
    w.begin_type("base_s", Kind::Struct, false, 1, 4).unwrap();
    let x = w.add_string("x").unwrap();
    words(&mut w, &[x, 1, 0]);
    w.begin_type("", Kind::Ptr, false, 0, 2).unwrap();
    w.finish().unwrap()
}

/// Hand-assembled split BTF: type records and a string section whose offsets start at the
/// base's string length.
struct SplitBuilder {
    types: Vec<u8>,
    strings: Vec<u8>,
    str_base: u32,
}

impl SplitBuilder {
    fn new(base: &Btf<'_>) -> SplitBuilder {
        SplitBuilder {
            types: Vec::new(),
            strings: Vec::new(),
            str_base: base.strings_len(),
        }
    }

    fn string(&mut self, s: &str) -> u32 {
        let off = self.str_base + self.strings.len() as u32;
        self.strings.extend_from_slice(s.as_bytes());
        self.strings.push(0);
        off
    }

    fn words(&mut self, words: &[u32]) {
        for w in words {
            self.types.extend_from_slice(&w.to_le_bytes());
        }
    }

    fn header(&mut self, name_off: u32, kind: Kind, vlen: u16, size_or_type: u32) {
        self.words(&[
            name_off,
            ((kind as u32) << 24) | u32::from(vlen),
            size_or_type,
        ]);
    }

    fn finish(&self) -> Vec<u8> {
        assemble(Endianness::Little, &self.types, &self.strings)
    }
}

/// Split: [4] struct split_s { struct base_s b; struct split_s *p; }, [5] ptr -> 4,
/// [6] typedef my_int -> 1, [7] typedef named with a base string ("int") -> 6.
fn split_on(base: &Btf<'_>, dangling: Option<u32>) -> Vec<u8> {
    assert_eq!(base.type_cnt(), 4);
    let mut s = SplitBuilder::new(base);
    let name = s.string("split_s");
    let (b, p) = (s.string("b"), s.string("p"));
    s.header(name, Kind::Struct, 2, 16);
    s.words(&[b, 2, 0, p, 5, 64]);
    s.header(0, Kind::Ptr, 0, dangling.unwrap_or(4));
    let my_int = s.string("my_int");
    s.header(my_int, Kind::Typedef, 0, 1);
    // Offset 1 is "int" in the base's string section.
    s.header(1, Kind::Typedef, 0, 6);
    s.finish()
}

#[test]
fn split_btf_resolves_across_base() {
    let base_blob = split_base();
    let base = Btf::parse(&base_blob).unwrap();
    let split_blob = split_on(&base, None);
    // Split BTF alone is not valid base BTF (its string section does not start with NUL).
    assert!(Btf::parse(&split_blob).is_err());
    let split = Btf::parse_split(&split_blob, &base).expect("split BTF parses");
    assert_eq!(split.start_id(), 4);
    assert_eq!(split.type_cnt(), 8);
    assert_eq!(split.start_str_off(), base.strings_len());
    assert!(split.base().is_some());
    // Base ids resolve through the split.
    let int = split.type_by_id(1).unwrap();
    assert_eq!(split.type_name(&int).unwrap(), "int");
    assert_eq!(int.kind(), Some(Kind::Int));
    // Split ids and their names.
    let s = split.type_by_id(4).unwrap();
    assert_eq!(split.type_name(&s).unwrap(), "split_s");
    let members: Vec<_> = s.kind.composite().unwrap().members().collect();
    assert_eq!(split.name(members[0].name_off).unwrap(), "b");
    let member_ty = split.type_by_id(members[0].type_id).unwrap();
    assert_eq!(split.type_name(&member_ty).unwrap(), "base_s");
    assert_eq!(split.type_by_id(5).unwrap().kind, TypeKind::Ptr(4));
    // A split type named by a base string.
    let t = split.type_by_id(7).unwrap();
    assert_eq!(split.type_name(&t).unwrap(), "int");
    assert_eq!(split.skip_mods_and_typedefs(7).unwrap().id, 1);
    assert_eq!(split.resolve_size(4).unwrap(), 16);
    assert_eq!(split.types().count(), 4);
    assert!(matches!(split.type_by_id(8), Err(Error::NoSuchType(8))));
    // The base alone knows nothing of split ids.
    assert!(matches!(base.type_by_id(4), Err(Error::NoSuchType(4))));
    exercise("split", &split);
}

#[test]
fn split_btf_corruptions() {
    let base_blob = split_base();
    let base = Btf::parse(&base_blob).unwrap();
    // A reference one past the split's last id, and one far past it.
    for dangling in [8, 100, u32::MAX] {
        let blob = split_on(&base, Some(dangling));
        check(
            &format!("split ptr -> {dangling}"),
            Btf::parse_split(&blob, &base),
            Expect::BadType(5),
        );
    }
    // A cycle inside the split: typedef [6] -> [6].
    let valid = split_on(&base, None);
    // Split ids start at 4: record index 2 is [6].
    let off6 = HDR + Layout::of(&valid).type_offs[2];
    assert_eq!(get_u32(&valid, off6 + 4) >> 24, Kind::Typedef as u32);
    assert_eq!(get_u32(&valid, off6 + 8), 1);
    let mut blob = valid.clone();
    set_u32(&mut blob, off6 + 8, 6);
    check(
        "split typedef self-loop",
        Btf::parse_split(&blob, &base),
        Expect::BadType(6),
    );
    // A name offset past the split's own strings.
    let mut blob = valid.clone();
    let strings_end = base.strings_len() + get_u32(&blob, 20);
    set_u32(&mut blob, off6, strings_end);
    check(
        "split name offset past end",
        Btf::parse_split(&blob, &base),
        Expect::BadType(6),
    );
    // Byte order differing from the base.
    let be_base_blob = {
        let mut w = BtfWriter::new(Endianness::Big).unwrap();
        w.begin_type("int", Kind::Int, false, 0, 4).unwrap();
        words(&mut w, &[32]);
        w.finish().unwrap()
    };
    let be_base = Btf::parse(&be_base_blob).unwrap();
    let mut s = SplitBuilder::new(&be_base);
    s.header(0, Kind::Ptr, 0, 1);
    check(
        "split on a base of the other byte order",
        Btf::parse_split(&s.finish(), &be_base),
        Expect::Header("byte order"),
    );
    // An empty split (no types, no strings) is valid.
    let empty = assemble(Endianness::Little, &[], &[]);
    let split = Btf::parse_split(&empty, &base).expect("empty split parses");
    assert_eq!(split.type_cnt(), base.type_cnt());
    // Random flips over the split never panic.
    let mut rng = Rng(42);
    let mut accepted = 0;
    for round in 0..1500 {
        let mut blob = valid.clone();
        mutate(&mut rng, &mut blob, if round % 2 == 0 { HDR } else { 0 });
        let result = catch_unwind(AssertUnwindSafe(|| Btf::parse_split(&blob, &base)));
        match result {
            Err(_) => panic!("parse_split panicked on {blob:02x?}"),
            Ok(Ok(split)) => {
                accepted += 1;
                exercise(&format!("split flip {round}"), &split);
            }
            Ok(Err(_)) => {}
        }
    }
    assert!(accepted > 10, "only {accepted} split mutants accepted");
}
