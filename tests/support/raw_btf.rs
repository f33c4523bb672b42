//! Raw BTF taken apart and put back byte by byte, independently of btfgen's parser and writer:
//! for tests that give a BTF Linux 7.1's 32-byte header and layout section, or insert types of
//! kinds btfgen does not know (with every type id after them shifted). Also the real Linux 7.1
//! BTF committed as `tests/data/targets/vmlinux-7.1.btf.tar.xz`.

#![allow(dead_code)]

use std::io::Read;
use std::path::Path;

/// The layout entries (`info_sz`, `elem_sz`) Linux 7.1 writes for kinds 0..19.
pub const LAYOUT_7_1: [(u8, u8); 20] = [
    (0, 0),
    (4, 0),
    (0, 0),
    (12, 0),
    (0, 12),
    (0, 12),
    (0, 8),
    (0, 0),
    (0, 0),
    (0, 0),
    (0, 0),
    (0, 0),
    (0, 0),
    (0, 8),
    (4, 0),
    (0, 12),
    (0, 0),
    (4, 0),
    (0, 0),
    (0, 12),
];

/// The real Linux 7.1 BTF (4,497,363 bytes, 103,406 types), unpacked from its committed
/// BTFHub-style archive.
pub fn vmlinux_7_1() -> Vec<u8> {
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/targets/vmlinux-7.1.btf.tar.xz");
    let archive = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut tar = tar::Archive::new(liblzma::read::XzDecoder::new(&archive[..]));
    let mut entry = tar.entries().unwrap().next().unwrap().unwrap();
    assert_eq!(entry.path().unwrap().to_str(), Some("vmlinux-7.1.btf"));
    let mut btf = Vec::new();
    entry.read_to_end(&mut btf).unwrap();
    assert_eq!(btf.len(), 4_497_363);
    btf
}

/// A BTF's type and string sections, its records located by a plain walk.
#[derive(Debug, Clone)]
pub struct RawBtf {
    pub big_endian: bool,
    pub types: Vec<u8>,
    pub strings: Vec<u8>,
    /// Byte offset in `types` of each record, in id order.
    pub records: Vec<usize>,
}

impl RawBtf {
    /// Take apart a valid BTF with a 24- or 32-byte header (its layout section, if any, is
    /// dropped; every kind must be one of 1..19).
    pub fn parse(blob: &[u8]) -> RawBtf {
        let big_endian = blob[0] == 0xeb;
        let word = |at: usize| {
            let b: [u8; 4] = blob[at..at + 4].try_into().unwrap();
            (if big_endian {
                u32::from_be_bytes(b)
            } else {
                u32::from_le_bytes(b)
            }) as usize
        };
        let hdr_len = word(4);
        let body = &blob[hdr_len..];
        let mut raw = RawBtf {
            big_endian,
            types: body[word(8)..word(8) + word(12)].to_vec(),
            strings: body[word(16)..word(16) + word(20)].to_vec(),
            records: Vec::new(),
        };
        let mut pos = 0;
        while pos < raw.types.len() {
            raw.records.push(pos);
            let info = raw.word(pos + 4);
            pos += 12 + extra_len(info >> 24 & 0x1f, info & 0xffff);
        }
        assert_eq!(pos, raw.types.len(), "records run past the type section");
        raw
    }

    /// The info word of record `index`.
    pub fn info(&self, index: usize) -> u32 {
        self.word(self.records[index] + 4)
    }

    fn word(&self, at: usize) -> u32 {
        let b: [u8; 4] = self.types[at..at + 4].try_into().unwrap();
        if self.big_endian {
            u32::from_be_bytes(b)
        } else {
            u32::from_le_bytes(b)
        }
    }

    fn bytes_of(&self, word: u32) -> [u8; 4] {
        if self.big_endian {
            word.to_be_bytes()
        } else {
            word.to_le_bytes()
        }
    }

    /// Byte offsets of every word that holds a type id (in records of kinds 1..19).
    fn type_id_words(&self) -> Vec<usize> {
        let mut words = Vec::new();
        for &pos in &self.records {
            let info = self.word(pos + 4);
            let (kind, vlen) = (info >> 24 & 0x1f, (info & 0xffff) as usize);
            let w = |n: usize| pos + 4 * n;
            match kind {
                // PTR, TYPEDEF, VOLATILE, CONST, RESTRICT, FUNC, VAR, DECL_TAG, TYPE_TAG
                2 | 8..=12 | 14 | 17 | 18 => words.push(w(2)),
                3 => words.extend([w(3), w(4)]),
                4 | 5 => words.extend((0..vlen).map(|i| w(3 + 3 * i + 1))),
                13 => {
                    words.push(w(2));
                    words.extend((0..vlen).map(|i| w(3 + 2 * i + 1)));
                }
                15 => words.extend((0..vlen).map(|i| w(3 + 3 * i))),
                _ => {}
            }
        }
        words
    }

    /// Add one to every type id reference of `from` or more: what inserting a type with id
    /// `from` into this BTF, or into the base it is split on, does to its references.
    pub fn shift_refs(&mut self, from: u32) {
        for at in self.type_id_words() {
            let id = self.word(at);
            if id >= from {
                let bytes = self.bytes_of(id + 1);
                self.types[at..at + 4].copy_from_slice(&bytes);
            }
        }
    }

    /// Insert, before the record at index `index` (the end for `records.len()`), a type of
    /// raw kind `kind` named `name` (appended to the strings; `None`: anonymous) with `vlen`
    /// and `len - 12` bytes after its header (a recognisable pattern). `first_id` is the id of this BTF's first type: references to
    /// `first_id + index` and later are shifted.
    pub fn insert_unknown(
        &mut self,
        index: usize,
        first_id: u32,
        kind: u32,
        vlen: u16,
        len: usize,
        name: Option<&str>,
    ) {
        self.shift_refs(first_id + index as u32);
        let name_off = match name {
            Some(name) => {
                let off = self.strings.len() as u32;
                self.strings.extend_from_slice(name.as_bytes());
                self.strings.push(0);
                off
            }
            None => 0,
        };
        let mut record = Vec::new();
        for word in [name_off, kind << 24 | u32::from(vlen), 0xdead_beef] {
            record.extend_from_slice(&self.bytes_of(word));
        }
        record.extend((0..len - 12).map(|i| (i as u8) ^ 0x5a));
        let at = self.records.get(index).copied().unwrap_or(self.types.len());
        self.types.splice(at..at, record.iter().copied());
        self.records.insert(index, at);
        for pos in &mut self.records[index + 1..] {
            *pos += record.len();
        }
    }

    /// Put the BTF back together: a 24-byte header without `layout`, else a 32-byte header
    /// with the layout section (entries (`info_sz`, `elem_sz`), flags 0) between the type and
    /// string sections, as Linux 7.1 lays it out.
    pub fn to_bytes(&self, layout: Option<&[(u8, u8)]>) -> Vec<u8> {
        let layout_bytes: Vec<u8> = layout
            .unwrap_or(&[])
            .iter()
            .flat_map(|&(info_sz, elem_sz)| [info_sz, elem_sz, 0, 0])
            .collect();
        let (type_len, layout_len) = (self.types.len() as u32, layout_bytes.len() as u32);
        let mut header = vec![
            if self.big_endian {
                0xeb9f_0100_u32
            } else {
                0x0001_eb9f
            },
            24,
            0,
            type_len,
            type_len + layout_len,
            self.strings.len() as u32,
        ];
        if layout.is_some() {
            header[1] = 32;
            header.extend([type_len, layout_len]);
        }
        let mut blob: Vec<u8> = header.iter().flat_map(|&w| self.bytes_of(w)).collect();
        blob.extend_from_slice(&self.types);
        blob.extend_from_slice(&layout_bytes);
        blob.extend_from_slice(&self.strings);
        blob
    }
}

/// Bytes after the 12-byte header of a record of known raw kind `kind` with `vlen` entries.
fn extra_len(kind: u32, vlen: u32) -> usize {
    let vlen = vlen as usize;
    match kind {
        1 | 14 | 17 => 4,
        3 => 12,
        4 | 5 | 15 | 19 => 12 * vlen,
        6 | 13 => 8 * vlen,
        2 | 7..=12 | 16 | 18 => 0,
        _ => panic!("RawBtf::parse: kind {kind} is not one of 1..19"),
    }
}
