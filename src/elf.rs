//! Minimal ELF access shared by the BTF loader (the `.BTF` of a vmlinux image or `.ko`) and the
//! BPF object reader; parsing is the `object` crate's.

use crate::error::{Error, Result};
use object::read::elf::FileHeader;
use object::{Object, ObjectSection};

/// The bytes of section `name` in the ELF file `data` (32- or 64-bit, either byte order),
/// `None` when it has no such section.
pub fn section_data<'a>(data: &'a [u8], name: &str) -> Result<Option<&'a [u8]>> {
    match object::FileKind::parse(data).map_err(|_| Error::BadElf("not an ELF file"))? {
        object::FileKind::Elf64 => {
            find::<object::elf::FileHeader64<object::Endianness>>(data, name)
        }
        object::FileKind::Elf32 => {
            find::<object::elf::FileHeader32<object::Endianness>>(data, name)
        }
        _ => Err(Error::BadElf("not an ELF file")),
    }
}

/// `object`'s parse of ELF file `data`. It allocates (a table by section number) as
/// allocations that cannot fail: counted by the caller's budget, if any, never refused, so the
/// budget's next allocation is.
pub(crate) fn parse(data: &[u8]) -> object::Result<object::File<'_>> {
    crate::budget::count_only(|| object::File::parse(data))
}

fn find<'a, H: FileHeader<Endian = object::Endianness>>(
    data: &'a [u8],
    name: &str,
) -> Result<Option<&'a [u8]>> {
    let file = crate::budget::count_only(|| object::read::elf::ElfFile::<H>::parse(data))
        .map_err(|_| Error::BadElf("malformed ELF headers"))?;
    match file.section_by_name(name) {
        Some(section) => section
            .data()
            .map(Some)
            .map_err(|_| Error::BadElf("section data out of bounds")),
        None => Ok(None),
    }
}
