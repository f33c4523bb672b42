//! The DWARF sections of an ELF file as gimli reads them: borrowed from the file where they
//! are stored plain, decompressed into fallibly allocated buffers where they are not
//! (`SHF_COMPRESSED` with zlib or zstd, and the legacy GNU `.zdebug_*` sections). In a
//! relocatable file (a kernel module's debug `.ko`, an object file), a section with RELA
//! relocations (`.rela.debug_info` and the like: their addends are not in the section) is
//! copied and relocated, as a linker would: offsets into `.debug_str`, `.debug_abbrev` and the
//! other sections are only right then. A vmlinux (`ET_EXEC`) keeps any `--emit-relocs`
//! sections unapplied: its values are final.

use crate::error::{Error, Result};
use alloc::vec::Vec;
use object::{
    CompressionFormat, Endian, Object, ObjectSection, ObjectSymbol, RelocationKind,
    RelocationTarget, SymbolKind,
};

/// One section's bytes: the file's own, or a decompressed copy.
enum Bytes<'a> {
    Borrowed(&'a [u8]),
    Owned(Vec<u8>),
}

/// The sections gimli asks for, by [`gimli::SectionId`], and what else the conversion needs
/// from the ELF file: byte order and the names of its function symbols.
pub struct Sections<'a> {
    sections: Vec<(gimli::SectionId, Bytes<'a>)>,
    /// The ELF file's byte order.
    pub endian: gimli::RunTimeEndian,
    /// Names of the `STT_FUNC` symbols of `.symtab` (a name may repeat), if asked for:
    /// pahole emits a `FUNC` only for a function the symbol table names.
    pub functions: Vec<&'a [u8]>,
}

/// The sections the conversion reads; the others (locations, ranges) hold nothing BTF needs.
const NEEDED: [gimli::SectionId; 8] = [
    gimli::SectionId::DebugAbbrev,
    gimli::SectionId::DebugInfo,
    gimli::SectionId::DebugTypes,
    gimli::SectionId::DebugStr,
    gimli::SectionId::DebugStrOffsets,
    gimli::SectionId::DebugLineStr,
    gimli::SectionId::DebugAddr,
    // Only its program headers, which gimli reads with each unit.
    gimli::SectionId::DebugLine,
];

impl<'a> Sections<'a> {
    /// Read the DWARF sections of the ELF file `data`. Fails on a file that is no ELF, on a
    /// compressed section that does not decompress to its announced size, and on a RELA
    /// relocation of a relocatable file that is not an absolute 32- or 64-bit one inside its
    /// section (REL ones, as in BPF objects, keep their addends in the section: it is read as
    /// it is). The names of its function symbols are read if `functions`.
    pub fn read(data: &'a [u8], functions: bool) -> Result<Sections<'a>> {
        let file = crate::elf::parse(data).map_err(|_| Error::BadElf("not an ELF file"))?;
        if file.format() != object::BinaryFormat::Elf {
            return Err(Error::BadElf("not an ELF file"));
        }
        let endian = if file.is_little_endian() {
            gimli::RunTimeEndian::Little
        } else {
            gimli::RunTimeEndian::Big
        };
        let mut sections = Vec::new();
        sections.try_reserve_exact(NEEDED.len())?;
        for id in NEEDED {
            if let Some(bytes) = section(&file, id.name())? {
                sections.push((id, relocated(&file, id.name(), bytes)?));
            }
        }
        let mut names = Vec::new();
        // A kernel's symbol table is a few hundred thousand entries: read only for `FUNC`s.
        if functions {
            for symbol in file.symbols() {
                match symbol.name_bytes() {
                    Ok(name) if symbol.kind() == SymbolKind::Text && !name.is_empty() => {
                        crate::fallible::push(&mut names, name)?;
                    }
                    _ => {}
                }
            }
        }
        Ok(Sections {
            sections,
            endian,
            functions: names,
        })
    }

    /// The bytes of section `id` (empty when the file has none).
    pub fn get(&self, id: gimli::SectionId) -> &[u8] {
        self.sections
            .iter()
            .find(|(s, _)| *s == id)
            .map_or(&[], |(_, bytes)| match bytes {
                Bytes::Borrowed(b) => b,
                Bytes::Owned(v) => v.as_slice(),
            })
    }
}

/// An error in section `section` as a whole (no unit, no DIE).
fn section_error(section: &'static str, reason: &'static str) -> Error {
    Error::BadDwarf {
        section,
        unit: u64::MAX,
        die: u64::MAX,
        reason,
    }
}

/// Section `name`'s `bytes` with its RELA relocations applied, in a relocatable `file`; as they
/// are otherwise. Each relocation writes the target symbol's value plus the addend: for the
/// section symbols debug sections refer through, the offset into the section.
fn relocated<'a>(
    file: &object::File<'a>,
    name: &'static str,
    bytes: Bytes<'a>,
) -> Result<Bytes<'a>> {
    if file.kind() != object::ObjectKind::Relocatable {
        return Ok(bytes);
    }
    let Some(section) = file.section_by_name(name) else {
        return Ok(bytes);
    };
    let mut relocations = section
        .relocations()
        .filter(|(_, r)| !r.has_implicit_addend());
    let Some(first) = relocations.next() else {
        return Ok(bytes);
    };
    let bad = |reason| section_error(name, reason);
    let mut out = match bytes {
        Bytes::Owned(out) => out,
        Bytes::Borrowed(data) => crate::fallible::to_vec(data)?,
    };
    let endian = file.endianness();
    for (offset, relocation) in core::iter::once(first).chain(relocations) {
        if relocation.kind() != RelocationKind::Absolute {
            return Err(bad("a relocation of a kind other than absolute"));
        }
        let symbol = match relocation.target() {
            RelocationTarget::Symbol(index) => file
                .symbol_by_index(index)
                .map_err(|_| bad("a relocation names a symbol that does not exist"))?
                .address(),
            RelocationTarget::Absolute => 0,
            _ => return Err(bad("a relocation of an unknown target")),
        };
        let value = symbol.wrapping_add(relocation.addend() as u64);
        let width = usize::from(relocation.size() / 8);
        let at = usize::try_from(offset).ok();
        let Some(place) = at.and_then(|at| out.get_mut(at..at.checked_add(width)?)) else {
            return Err(bad("a relocation outside its section"));
        };
        match width {
            4 => place.copy_from_slice(&endian.write_u32(value as u32)),
            8 => place.copy_from_slice(&endian.write_u64(value)),
            _ => return Err(bad("a relocation of a width other than 32 or 64 bits")),
        }
    }
    Ok(Bytes::Owned(out))
}

/// Whether the ELF file `data` has DWARF type information (`.debug_info`, or its legacy
/// compressed `.zdebug_info`).
pub fn has_debug_info(data: &[u8]) -> bool {
    crate::elf::parse(data).is_ok_and(|file| {
        file.section_by_name(".debug_info")
            .or_else(|| file.section_by_name(".zdebug_info"))
            .is_some_and(|s| s.size() > 0)
    })
}

/// At most how many bytes one byte of deflate data decompresses to (a 258-byte match in two
/// bits), and of zstd data (an RLE block: a 3-byte header and one byte for 128 KiB).
const MAX_ZLIB_RATIO: usize = 1032;
const MAX_ZSTD_RATIO: usize = 32 * 1024;

/// Section `name` (or its `.zdebug_` twin), decompressed if it is compressed. Its announced
/// uncompressed size is allocated only when the compressed data can hold that much.
fn section<'a>(file: &object::File<'a>, name: &'static str) -> Result<Option<Bytes<'a>>> {
    let zdebug = || {
        let rest = name.strip_prefix(".debug_")?;
        file.sections().find(|s| {
            s.name_bytes()
                .is_ok_and(|n| n.strip_prefix(b".zdebug_") == Some(rest.as_bytes()))
        })
    };
    let Some(section) = file.section_by_name(name).or_else(zdebug) else {
        return Ok(None);
    };
    let bad = |reason| section_error(name, reason);
    let compressed = section
        .compressed_data()
        .map_err(|_| bad("section data or compression header out of bounds"))?;
    let size = usize::try_from(compressed.uncompressed_size)
        .map_err(|_| bad("uncompressed size does not fit in memory"))?;
    // The announced size is allocated below: no more than the data can decompress to.
    let most = match compressed.format {
        CompressionFormat::Zlib => MAX_ZLIB_RATIO,
        CompressionFormat::Zstandard => MAX_ZSTD_RATIO,
        _ => 1,
    };
    let at_most = compressed
        .data
        .len()
        .saturating_mul(most)
        .saturating_add(4096);
    if size > at_most {
        return Err(bad(
            "announced uncompressed size larger than its data can hold",
        ));
    }
    let decompress = |out: &mut Vec<u8>| -> core::result::Result<usize, ()> {
        match compressed.format {
            CompressionFormat::Zlib => miniz_oxide::inflate::decompress_slice_iter_to_slice(
                out,
                core::iter::once(compressed.data),
                true,
                false,
            )
            .map_err(|_| ()),
            CompressionFormat::Zstandard => ruzstd::decoding::FrameDecoder::new()
                .decode_all(compressed.data, out)
                .map_err(|_| ()),
            _ => Err(()),
        }
    };
    match compressed.format {
        CompressionFormat::None => Ok(Some(Bytes::Borrowed(compressed.data))),
        CompressionFormat::Zlib | CompressionFormat::Zstandard => {
            let mut out = Vec::new();
            out.try_reserve_exact(size)?;
            out.resize(size, 0);
            match decompress(&mut out) {
                Ok(written) if written == size => Ok(Some(Bytes::Owned(out))),
                Ok(_) => Err(bad("decompresses to less than its announced size")),
                Err(()) => Err(bad("corrupt compressed data")),
            }
        }
        _ => Err(bad("unknown compression format")),
    }
}
