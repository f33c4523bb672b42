//! The attribute values the walk keeps for the records: 8 bytes each instead of gimli's
//! 32-byte `AttributeValue`. The walk writes a kernel's 26 million values on one core and the
//! records read them on the other. Where the two cores are far apart (on two sockets or dies,
//! as a VM's two vCPUs may be placed from one minute to the next: a cache line's round trip
//! between them 330 ns instead of 60-75), each line the walk writes must first be taken back
//! from the other core's cache, and the walk took two to three times as long. A quarter of the
//! bytes is a quarter of those lines.
//!
//! Most values are a small constant, a flag, an offset into `.debug_str` or the unit, or a
//! slice of the unit's bytes (an inline string, a location block): 48 bits of payload, or an
//! offset and a length in the unit. Any other value, or one too large, is kept whole in a
//! vector of its own ([`Values::wide`]), and read back as it was.

use super::{Reader, Value};
use crate::error::Result;
use alloc::vec::Vec;
use gimli::{AttributeValue, Reader as _};

/// How a [`Packed`] value holds its value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Form {
    // The unsigned constants first, up to `Udata` ([`Values::numeric`]).
    Data1,
    Data2,
    Data4,
    Data8,
    Udata,
    Sdata,
    Flag,
    UnitRef,
    DebugInfoRef,
    DebugStrRef,
    String,
    Block,
    Exprloc,
    /// Kept whole: `low` is its index among [`Values::wide`].
    Wide,
}

/// One value: its form and 48 bits of payload (`high`, `low`; an `Sdata` sign-extended from
/// them), or a slice of the unit's bytes (`low` its offset in [`Values::bytes`], `high` its
/// length), or the index of a value kept whole.
#[derive(Debug, Clone, Copy)]
pub(super) struct Packed {
    form: Form,
    high: u16,
    low: u32,
}

const _: () = assert!(core::mem::size_of::<Packed>() == 8);

/// Payloads of more bits are kept whole.
const PAYLOAD_BITS: u32 = 48;

impl Packed {
    /// `Data1(value)`.
    pub(super) fn data1(value: u8) -> Packed {
        Packed::low(Form::Data1, value.into())
    }

    /// `Data2(value)`.
    pub(super) fn data2(value: u16) -> Packed {
        Packed::low(Form::Data2, value.into())
    }

    /// `Data4(value)`.
    pub(super) fn data4(value: u32) -> Packed {
        Packed::low(Form::Data4, value)
    }

    /// `Flag(value)`.
    pub(super) fn flag(value: bool) -> Packed {
        Packed::low(Form::Flag, value.into())
    }

    /// `UnitRef` of a 32-bit offset.
    pub(super) fn unit_ref(offset: u32) -> Packed {
        Packed::low(Form::UnitRef, offset)
    }

    /// `DebugStrRef` of a 32-bit offset.
    pub(super) fn debug_str_ref(offset: u32) -> Packed {
        Packed::low(Form::DebugStrRef, offset)
    }

    fn low(form: Form, low: u32) -> Packed {
        Packed { form, high: 0, low }
    }

    fn payload(form: Form, value: u64) -> Option<Packed> {
        (value >> PAYLOAD_BITS == 0).then_some(Packed {
            form,
            high: (value >> 32) as u16,
            low: value as u32,
        })
    }

    fn wide_payload(self) -> u64 {
        u64::from(self.high) << 32 | u64::from(self.low)
    }
}

/// The values of a unit's DIEs (or of one DIE), in the order they were pushed.
#[derive(Debug, Default)]
pub(super) struct Values<'a> {
    packed: Vec<Packed>,
    /// The values no [`Packed`] holds.
    wide: Vec<Value<'a>>,
    /// The unit's bytes from its first DIE, in which every slice value lies.
    bytes: &'a [u8],
    endian: gimli::RunTimeEndian,
}

impl<'a> Values<'a> {
    /// No values, for the unit whose bytes from its first DIE are `bytes`.
    pub(super) fn start_unit(&mut self, bytes: Reader<'a>) {
        self.clear();
        self.bytes = bytes.slice();
        self.endian = bytes.endian();
    }

    /// No values, in the same unit.
    pub(super) fn clear(&mut self) {
        self.packed.clear();
        self.wide.clear();
    }

    /// These values made a copy of `other`.
    pub(super) fn copy_from(&mut self, other: &Values<'a>) -> Result<()> {
        self.clear();
        crate::fallible::extend(&mut self.packed, &other.packed)?;
        crate::fallible::extend(&mut self.wide, &other.wide)?;
        self.bytes = other.bytes;
        self.endian = other.endian;
        Ok(())
    }

    /// How many values.
    pub(super) fn len(&self) -> usize {
        self.packed.len()
    }

    /// Room for `more` values, so that pushing them allocates nothing.
    pub(super) fn reserve(&mut self, more: usize) -> Result<()> {
        self.packed.try_reserve(more)?;
        self.wide.try_reserve(more)?;
        Ok(())
    }

    /// Push `value` (a no-op without the room [`Values::reserve`] makes: nothing is allocated
    /// here).
    #[inline]
    pub(super) fn push(&mut self, value: Value<'a>) {
        if let Some(packed) = self.pack(value) {
            self.push_packed(packed);
        }
    }

    /// Push a value packed already.
    #[inline]
    pub(super) fn push_packed(&mut self, packed: Packed) {
        if self.packed.len() < self.packed.capacity() {
            self.packed.push(packed);
        }
    }

    /// Insert `value` at `at` (a no-op past the end, or without room).
    pub(super) fn insert(&mut self, at: usize, value: Value<'a>) {
        if at <= self.packed.len()
            && self.packed.len() < self.packed.capacity()
            && let Some(packed) = self.pack(value)
        {
            self.packed.insert(at, packed);
        }
    }

    /// The offset of value `index`, if it is a `UnitRef` ([`Values::get`] without making
    /// the value: the walk looks for each DIE's).
    #[inline]
    pub(super) fn unit_ref(&self, index: usize) -> Option<u64> {
        let packed = self.packed.get(index)?;
        (packed.form == Form::UnitRef).then(|| packed.wide_payload())
    }

    /// The offset of value `index`, if it is a `DebugStrRef`.
    #[inline]
    pub(super) fn debug_str_ref(&self, index: usize) -> Option<u64> {
        let packed = self.packed.get(index)?;
        (packed.form == Form::DebugStrRef).then(|| packed.wide_payload())
    }

    /// Value `index` as a constant, as [`super::numeric`] reads it ([`Values::get`] without
    /// making the value: the records read most constants so).
    #[inline(always)]
    pub(super) fn numeric(&self, index: usize) -> Option<u64> {
        let packed = self.packed.get(index)?;
        if packed.form as u8 <= Form::Udata as u8 {
            return Some(packed.wide_payload());
        }
        self.other_numeric(index)
    }

    /// [`Values::numeric`] of a value of any other form.
    #[inline(never)]
    fn other_numeric(&self, index: usize) -> Option<u64> {
        super::numeric(&self.get(index)?)
    }

    /// Whether value `index` is a `Flag(true)`.
    #[inline]
    pub(super) fn is_true(&self, index: usize) -> bool {
        self.packed
            .get(index)
            .is_some_and(|packed| packed.form == Form::Flag && packed.low != 0)
    }

    /// Value `index`.
    #[inline]
    pub(super) fn get(&self, index: usize) -> Option<Value<'a>> {
        let packed = *self.packed.get(index)?;
        let payload = packed.wide_payload();
        Some(match packed.form {
            Form::Data1 => AttributeValue::Data1(packed.low as u8),
            Form::Data2 => AttributeValue::Data2(packed.low as u16),
            Form::Data4 => AttributeValue::Data4(packed.low),
            Form::Data8 => AttributeValue::Data8(payload),
            Form::Udata => AttributeValue::Udata(payload),
            Form::Sdata => {
                let shift = 64 - PAYLOAD_BITS;
                AttributeValue::Sdata(((payload << shift) as i64) >> shift)
            }
            Form::Flag => AttributeValue::Flag(packed.low != 0),
            // Packed from a `usize`, so they fit one.
            Form::UnitRef => AttributeValue::UnitRef(gimli::UnitOffset(payload as usize)),
            Form::DebugInfoRef => {
                AttributeValue::DebugInfoRef(gimli::DebugInfoOffset(payload as usize))
            }
            Form::DebugStrRef => {
                AttributeValue::DebugStrRef(gimli::DebugStrOffset(payload as usize))
            }
            Form::String => AttributeValue::String(self.slice(packed)?),
            Form::Block => AttributeValue::Block(self.slice(packed)?),
            Form::Exprloc => AttributeValue::Exprloc(gimli::Expression(self.slice(packed)?)),
            Form::Wide => return self.wide.get(packed.low as usize).copied(),
        })
    }

    /// `value` packed: in 8 bytes if it fits, else its index among [`Values::wide`] (`None`:
    /// no room for it there).
    fn pack(&mut self, value: Value<'a>) -> Option<Packed> {
        let packed = match value {
            AttributeValue::Data1(v) => Some(Packed::data1(v)),
            AttributeValue::Data2(v) => Some(Packed::data2(v)),
            AttributeValue::Data4(v) => Some(Packed::data4(v)),
            AttributeValue::Flag(v) => Some(Packed::flag(v)),
            AttributeValue::Data8(v) => Packed::payload(Form::Data8, v),
            AttributeValue::Udata(v) => Packed::payload(Form::Udata, v),
            AttributeValue::Sdata(v) => {
                let shift = 64 - PAYLOAD_BITS;
                ((v << shift) >> shift == v)
                    .then(|| Packed::payload(Form::Sdata, v as u64 & ((1 << PAYLOAD_BITS) - 1)))
                    .flatten()
            }
            AttributeValue::UnitRef(v) => Packed::payload(Form::UnitRef, v.0 as u64),
            AttributeValue::DebugInfoRef(v) => Packed::payload(Form::DebugInfoRef, v.0 as u64),
            AttributeValue::DebugStrRef(v) => Packed::payload(Form::DebugStrRef, v.0 as u64),
            AttributeValue::String(s) => self.pack_slice(Form::String, s),
            AttributeValue::Block(s) => self.pack_slice(Form::Block, s),
            AttributeValue::Exprloc(gimli::Expression(s)) => self.pack_slice(Form::Exprloc, s),
            _ => None,
        };
        if packed.is_some() {
            return packed;
        }
        let index = u32::try_from(self.wide.len()).ok()?;
        if self.wide.len() == self.wide.capacity() {
            return None;
        }
        self.wide.push(value);
        Some(Packed {
            form: Form::Wide,
            high: 0,
            low: index,
        })
    }

    /// A slice of [`Values::bytes`], as its offset there and its length, if it is one.
    fn pack_slice(&self, form: Form, slice: Reader<'a>) -> Option<Packed> {
        let offset = slice
            .slice()
            .as_ptr()
            .addr()
            .checked_sub(self.bytes.as_ptr().addr())?;
        let len = slice.len();
        (slice.endian() == self.endian && len <= self.bytes.len().checked_sub(offset)?).then_some(
            Packed {
                form,
                high: u16::try_from(len).ok()?,
                low: u32::try_from(offset).ok()?,
            },
        )
    }

    fn slice(&self, packed: Packed) -> Option<Reader<'a>> {
        let start = packed.low as usize;
        let bytes = self.bytes.get(start..start + usize::from(packed.high))?;
        Some(Reader::new(bytes, self.endian))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every value reads back as it was pushed: packed where it fits (each form at the edges
    /// of its payload), kept whole where it does not, slices of the unit's bytes by their
    /// offset and length, and other slices whole.
    #[test]
    fn values_read_back_as_pushed() {
        let unit = [1u8, 2, 3, 4, 5, 0, 7, 8];
        let elsewhere = [9u8, 9];
        let endian = gimli::RunTimeEndian::Little;
        let at = |range: core::ops::Range<usize>| Reader::new(&unit[range], endian);
        let big = (1u64 << PAYLOAD_BITS) - 1;
        let values: [Value<'_>; 22] = [
            AttributeValue::Data1(0xff),
            AttributeValue::Data2(0xffff),
            AttributeValue::Data4(u32::MAX),
            AttributeValue::Data8(big),
            AttributeValue::Data8(big + 1),
            AttributeValue::Udata(big),
            AttributeValue::Udata(u64::MAX),
            AttributeValue::Sdata(-(1 << (PAYLOAD_BITS - 1))),
            AttributeValue::Sdata((1 << (PAYLOAD_BITS - 1)) - 1),
            AttributeValue::Sdata(1 << (PAYLOAD_BITS - 1)),
            AttributeValue::Sdata(i64::MIN),
            AttributeValue::Flag(true),
            AttributeValue::Flag(false),
            AttributeValue::UnitRef(gimli::UnitOffset(big as usize)),
            AttributeValue::DebugInfoRef(gimli::DebugInfoOffset(big as usize + 1)),
            AttributeValue::DebugStrRef(gimli::DebugStrOffset(u32::MAX as usize + 1)),
            AttributeValue::String(at(2..5)),
            AttributeValue::Block(at(8..8)),
            AttributeValue::Exprloc(gimli::Expression(at(0..8))),
            AttributeValue::String(Reader::new(&elsewhere, endian)),
            AttributeValue::DebugTypesRef(gimli::DebugTypeSignature(u64::MAX)),
            AttributeValue::Encoding(gimli::constants::DW_ATE_signed),
        ];
        let mut kept = Values::default();
        kept.start_unit(at(0..8));
        kept.reserve(values.len()).unwrap();
        for &value in &values[1..] {
            kept.push(value);
        }
        kept.insert(0, values[0]);
        let read: Vec<_> = (0..kept.len()).map(|i| kept.get(i).unwrap()).collect();
        assert_eq!(read, values);
        // The slices of the unit's bytes point into them.
        assert!(
            matches!(read[16], AttributeValue::String(s) if s.slice().as_ptr() == unit[2..].as_ptr())
        );
        // Those that do not fit, the other slice and the other forms kept whole.
        assert_eq!(kept.wide.len(), 8);
        assert_eq!(kept.get(values.len()), None);
    }
}
