//! The supplementary file of a `dwz -m` input: where DWARF shared between files was moved
//! (Fedora/RHEL `/usr/lib/debug/.dwz/`, SUSE kernel debuginfo). The input names it in
//! `.gnu_debugaltlink` (GNU: a path and the file's build id) or `.debug_sup` (DWARF 5: a path
//! and a checksum); its units are then referred to with `DW_FORM_GNU_ref_alt`/`ref_sup*` and
//! its strings with `DW_FORM_GNU_strp_alt`/`strp_sup`. Finding and reading the file is the
//! front ends' (`crate::dwarf_input`); this holds what the bytes say.

use crate::error::{Error, Result};
use alloc::string::String;
use object::{Object, ObjectSection};

/// What an input says of its supplementary file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Link<'a> {
    /// The section that names it.
    pub section: &'static str,
    /// The path it gives (absolute, or relative to the input's directory).
    pub path: &'a [u8],
    /// The identity the file must have: its build id (`.gnu_debugaltlink`), or the checksum
    /// its own `.debug_sup` holds (`.debug_sup`).
    pub id: &'a [u8],
}

fn bad(reason: &'static str) -> Error {
    Error::BadDwarf {
        section: ".gnu_debugaltlink or .debug_sup",
        unit: u64::MAX,
        die: u64::MAX,
        reason,
    }
}

/// The supplementary file `data` refers to, if it is an ELF file that names one; an error
/// when the section that names it is malformed. A supplementary file itself names none.
pub fn link(data: &[u8]) -> Result<Option<Link<'_>>> {
    let Ok(file) = crate::elf::parse(data) else {
        return Ok(None);
    };
    if let Some((path, id)) = file
        .gnu_debugaltlink()
        .map_err(|_| bad("a .gnu_debugaltlink without its path's terminating NUL"))?
    {
        return Ok(Some(Link {
            section: ".gnu_debugaltlink",
            path,
            id,
        }));
    }
    match debug_sup(&file)? {
        Some(sup) if !sup.is_supplementary => Ok(Some(Link {
            section: ".debug_sup",
            path: sup.path,
            id: sup.checksum,
        })),
        _ => Ok(None),
    }
}

/// The identity of a would-be supplementary file `data`, to compare with [`Link::id`]: the
/// checksum of its `.debug_sup` (DWARF 5), else its GNU build id.
pub fn identity(data: &[u8]) -> Result<Option<&[u8]>> {
    let file = crate::elf::parse(data).map_err(|_| Error::BadElf("not an ELF file"))?;
    if let Some(sup) = debug_sup(&file)?.filter(|s| s.is_supplementary) {
        return Ok(Some(sup.checksum));
    }
    file.build_id()
        .map_err(|_| Error::BadElf("malformed .note.gnu.build-id"))
}

/// Where a distribution installs the debug file of build id `id`:
/// `/usr/lib/debug/.build-id/NN/REST.debug` (`None` for an id too short to split).
pub fn build_id_path(id: &[u8]) -> Result<Option<String>> {
    let Some((first, rest)) = id.split_first().filter(|(_, rest)| !rest.is_empty()) else {
        return Ok(None);
    };
    let mut path = String::new();
    path.try_reserve_exact(26 + 2 * id.len() + 6)?;
    path.push_str("/usr/lib/debug/.build-id/");
    push_hex(&mut path, core::slice::from_ref(first));
    path.push('/');
    push_hex(&mut path, rest);
    path.push_str(".debug");
    Ok(Some(path))
}

/// `bytes` in lower-case hex, as build ids are written.
pub fn hex(bytes: &[u8]) -> Result<String> {
    let mut out = String::new();
    out.try_reserve_exact(2 * bytes.len())?;
    push_hex(&mut out, bytes);
    Ok(out)
}

fn push_hex(out: &mut String, bytes: &[u8]) {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    for &b in bytes {
        out.push(DIGITS[usize::from(b >> 4)] as char);
        out.push(DIGITS[usize::from(b & 0xf)] as char);
    }
}

/// A `.debug_sup` section (DWARF 5, 7.3.6).
struct DebugSup<'a> {
    is_supplementary: bool,
    path: &'a [u8],
    checksum: &'a [u8],
}

fn debug_sup<'a>(file: &object::File<'a>) -> Result<Option<DebugSup<'a>>> {
    let Some(section) = file.section_by_name(".debug_sup") else {
        return Ok(None);
    };
    let data = section
        .data()
        .map_err(|_| Error::BadElf("section data out of bounds"))?;
    let truncated = || bad("a truncated .debug_sup");
    let (version, rest) = data.split_at_checked(2).ok_or_else(truncated)?;
    let version = if file.is_little_endian() {
        u16::from_le_bytes([version[0], version[1]])
    } else {
        u16::from_be_bytes([version[0], version[1]])
    };
    if version != 5 {
        return Err(bad("a .debug_sup of a version other than 5"));
    }
    let (&is_supplementary, rest) = rest.split_first().ok_or_else(truncated)?;
    let end = rest.iter().position(|&b| b == 0).ok_or_else(truncated)?;
    let (path, rest) = (&rest[..end], &rest[end + 1..]);
    let (len, rest) = uleb128(rest).ok_or_else(truncated)?;
    let checksum = usize::try_from(len)
        .ok()
        .and_then(|len| rest.get(..len))
        .ok_or_else(truncated)?;
    Ok(Some(DebugSup {
        is_supplementary: is_supplementary != 0,
        path,
        checksum,
    }))
}

fn uleb128(bytes: &[u8]) -> Option<(u64, &[u8])> {
    let mut value = 0u64;
    for (i, &byte) in bytes.iter().enumerate().take(10) {
        value |= u64::from(byte & 0x7f) << (7 * i);
        if byte & 0x80 == 0 {
            return Some((value, &bytes[i + 1..]));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn build_id_path_splits_the_first_byte() {
        assert_eq!(
            build_id_path(&[0x64, 0x61, 0xd4, 0x71]).unwrap().as_deref(),
            Some("/usr/lib/debug/.build-id/64/61d471.debug")
        );
        assert_eq!(build_id_path(&[0x64]).unwrap(), None);
        assert_eq!(build_id_path(&[]).unwrap(), None);
    }

    #[test]
    fn uleb128_reads_and_bounds() {
        assert_eq!(uleb128(&[0x14, 9]), Some((20, &[9u8][..])));
        assert_eq!(uleb128(&[0x80, 0x01]), Some((128, &[][..])));
        assert_eq!(uleb128(&[0x80]), None);
        assert_eq!(uleb128(&[0xff; 11]), None);
    }
}
