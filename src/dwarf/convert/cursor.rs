//! The converting walk's cursor over a unit's DIEs. gimli's raw entries parse each DIE
//! through its general reader (the abbreviation code, then each attribute by its form); the
//! walk reads a kernel's 14 million DIEs, and that reader's bookkeeping per DIE (the offset
//! recomputed from the unit header, the attributes skipped one specification at a time) was
//! most of its instructions. Most abbreviations give every DIE the same attribute bytes
//! ([`super::plan::Plan::size`]): the cursor reads the code and steps over such a DIE's
//! attributes at once, or hands their bytes to the plan's fixed layout; for any other DIE
//! it gives gimli's raw reader the DIE's attributes and goes on where gimli stopped.

use super::{At, Reader, gimli_reason};
use crate::error::Result;
use gimli::{Reader as _, UnitOffset};

/// Where the walk is in a unit's DIEs, and at which depth.
pub(super) struct Cursor<'a> {
    /// The unit's bytes from its first DIE.
    entries: &'a [u8],
    endian: gimli::RunTimeEndian,
    /// The unit offset of `entries`' first byte.
    base: usize,
    /// The next byte to read, in `entries`.
    pos: usize,
    /// The next DIE's depth, as gimli's raw entries count it.
    depth: isize,
}

impl<'a> Cursor<'a> {
    /// At the first DIE of `unit`.
    pub(super) fn new(unit: &gimli::Unit<Reader<'a>>) -> gimli::Result<Cursor<'a>> {
        let (base, entries) = first_die(unit)?;
        Ok(Cursor {
            entries: entries.slice(),
            endian: entries.endian(),
            base,
            pos: 0,
            depth: 0,
        })
    }

    /// The next DIE (null entries passed over, as they end a list of siblings): its depth,
    /// offset and abbreviation, the cursor then at its attributes; `None` at the unit's end.
    /// `at` follows it, for errors.
    #[inline]
    pub(super) fn next<'u>(
        &mut self,
        abbreviations: &'u gimli::Abbreviations,
        at: &mut At,
        unit_start: u64,
    ) -> Result<Option<(isize, UnitOffset, &'u gimli::Abbreviation)>> {
        while let Some(&first) = self.entries.get(self.pos) {
            let depth = self.depth;
            let offset = UnitOffset(self.base + self.pos);
            at.die = unit_start + offset.0 as u64;
            let code = if first < 0x80 {
                self.pos += 1;
                u64::from(first)
            } else {
                let mut reader = self.reader();
                let code = reader.read_uleb128().map_err(|e| at.err(gimli_reason(e)))?;
                self.pos = self.entries.len() - reader.len();
                code
            };
            if code == 0 {
                self.depth -= 1;
                continue;
            }
            let abbrev = abbreviations
                .get(code)
                .ok_or_else(|| at.err(gimli_reason(gimli::Error::UnknownAbbreviation(code))))?;
            if abbrev.has_children() {
                self.depth += 1;
            }
            return Ok(Some((depth, offset, abbrev)));
        }
        Ok(None)
    }

    /// The current DIE's attributes, if they are the `size` bytes at the cursor: the cursor
    /// then past them. `None` (the cursor left where it is) if fewer bytes are left, for
    /// gimli's reader to say what is wrong.
    #[inline]
    pub(super) fn take(&mut self, size: u32) -> Option<Reader<'a>> {
        let end = self.pos.checked_add(size as usize)?;
        let bytes = self.entries.get(self.pos..end)?;
        self.pos = end;
        Some(Reader::new(bytes, self.endian))
    }

    /// How many bytes the inline string `at` bytes into the current DIE's attributes has
    /// before its NUL (`None`: no NUL before the unit's end).
    #[inline]
    pub(super) fn string_length(&self, at: u32) -> Option<u32> {
        super::plan::string_length(self.entries.get(self.pos..)?, at)
    }

    /// The unit's bytes from its first DIE on.
    pub(super) fn entries(&self) -> Reader<'a> {
        Reader::new(self.entries, self.endian)
    }

    /// gimli's raw reader at the current DIE's attributes (the cursor left where it is).
    pub(super) fn raw<'u>(
        &self,
        unit: &'u gimli::Unit<Reader<'a>>,
    ) -> gimli::Result<gimli::EntriesRaw<'u, 'u, Reader<'a>>> {
        if self.pos >= self.entries.len() {
            // No bytes left for attributes that take some (a DIE whose attributes all take
            // none is read with `take`): as gimli's reader says of them.
            return Err(gimli::Error::UnexpectedEof(gimli::ReaderOffsetId(
                (self.base + self.pos) as u64,
            )));
        }
        unit.entries_raw(Some(UnitOffset(self.base + self.pos)))
    }

    /// `read` with gimli's raw reader at the current DIE's attributes, the cursor then where
    /// the reader stopped.
    pub(super) fn through_gimli<'u, T>(
        &mut self,
        unit: &'u gimli::Unit<Reader<'a>>,
        read: impl FnOnce(&mut gimli::EntriesRaw<'u, 'u, Reader<'a>>) -> gimli::Result<T>,
    ) -> gimli::Result<T> {
        let mut raw = self.raw(unit)?;
        let read = read(&mut raw)?;
        self.pos = raw.next_offset().0.saturating_sub(self.base);
        Ok(read)
    }

    fn reader(&self) -> Reader<'a> {
        Reader::new(self.entries.get(self.pos..).unwrap_or(&[]), self.endian)
    }
}

/// The bytes of `unit` from its first DIE on (those of its DIEs and their attributes).
pub(super) fn entries<'a>(unit: &gimli::Unit<Reader<'a>>) -> gimli::Result<Reader<'a>> {
    first_die(unit).map(|(_, entries)| entries)
}

/// The unit offset of the first DIE of `unit`, and its bytes from there.
fn first_die<'a>(unit: &gimli::Unit<Reader<'a>>) -> gimli::Result<(usize, Reader<'a>)> {
    let base = unit.entries_raw(None)?.next_offset().0;
    // A unit with no DIEs has no offset to start from (gimli's range says so).
    let entries = if base < unit.header.length_including_self() {
        unit.header.range_from(UnitOffset(base)..)?
    } else {
        Reader::new(&[], gimli::RunTimeEndian::default())
    };
    Ok((base, entries))
}

#[cfg(test)]
mod tests {
    use super::*;
    use gimli::AttributeSpecification;

    /// On the DWARF gcc and clang write (versions 4 and 5, type units, `dwz`, link-time
    /// optimization, relocatable modules), the cursor finds every DIE at the depth, offset
    /// and abbreviation gimli's raw entries do, and a DIE's attributes taken at once (of a
    /// fixed size, or with one inline string) end where gimli's reader, skipping them one by
    /// one, ends.
    #[test]
    fn cursor_walks_as_gimli_raw_entries() {
        let mut taken = 0;
        super::super::for_each_fixture_unit(|name, unit| {
            let mut raw = unit.entries_raw(None).unwrap();
            let mut cursor = Cursor::new(unit).unwrap();
            let mut at = At {
                section: ".debug_info",
                unit: 0,
                die: 0,
            };
            loop {
                let expected = super::super::next_die(&mut raw, &mut at, 0).unwrap();
                let found = cursor.next(&unit.abbreviations, &mut at, 0).unwrap();
                let (Some((depth, offset, abbrev)), Some(found)) = (expected, found) else {
                    assert!(expected.is_none() && found.is_none(), "{name}");
                    break;
                };
                assert_eq!(
                    (depth, offset, abbrev.code()),
                    (found.0, found.1, found.2.code()),
                    "{name}"
                );
                let specs: &[AttributeSpecification] = abbrev.attributes();
                raw.skip_attributes(specs).unwrap();
                // A layout's size, with its inline string (if any) as long as it is.
                let layout = super::super::plan::layout(specs, &unit.header)
                    .map(|(size, at)| size + at.map_or(0, |at| cursor.string_length(at).unwrap()));
                match layout {
                    Some(size) => {
                        assert!(cursor.take(size).is_some(), "{name}");
                        taken += 1;
                    }
                    None => cursor
                        .through_gimli(unit, |from_cursor| from_cursor.skip_attributes(specs))
                        .unwrap(),
                }
                assert_eq!(
                    UnitOffset(cursor.base + cursor.pos),
                    raw.next_offset(),
                    "{name}"
                );
            }
        });
        assert!(taken > 1000, "{taken} DIEs' attributes taken at once");
    }
}
