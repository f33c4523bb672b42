//! One 8-byte BPF instruction (`struct bpf_insn`).

use ::object::endian::{Endian, Endianness};

/// Size in bytes of one BPF instruction slot; `ld_imm64` takes two.
pub const INSN_SIZE: usize = 8;

/// A decoded BPF instruction slot.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Insn {
    /// Opcode.
    pub code: u8,
    /// Destination register (4 bits).
    pub dst_reg: u8,
    /// Source register (4 bits).
    pub src_reg: u8,
    /// Signed offset.
    pub off: i16,
    /// Signed immediate.
    pub imm: i32,
}

impl Insn {
    /// Decode one slot. The register byte is a pair of 4-bit bitfields whose order follows the
    /// byte order: `dst_reg` is the low nibble on little-endian (`bpfel`), the high nibble on
    /// big-endian (`bpfeb`).
    pub fn decode(bytes: [u8; INSN_SIZE], endian: Endianness) -> Insn {
        let [code, regs, o0, o1, i0, i1, i2, i3] = bytes;
        let (dst_reg, src_reg) = if endian.is_little_endian() {
            (regs & 0x0f, regs >> 4)
        } else {
            (regs >> 4, regs & 0x0f)
        };
        Insn {
            code,
            dst_reg,
            src_reg,
            off: endian.read_i16([o0, o1]),
            imm: endian.read_i32([i0, i1, i2, i3]),
        }
    }

    /// Encode one slot; the inverse of [`Insn::decode`]. Register numbers are truncated to their
    /// 4 bits.
    pub fn encode(&self, endian: Endianness) -> [u8; INSN_SIZE] {
        let (dst, src) = (self.dst_reg & 0x0f, self.src_reg & 0x0f);
        let regs = if endian.is_little_endian() {
            dst | (src << 4)
        } else {
            (dst << 4) | src
        };
        let [o0, o1] = endian.write_i16(self.off);
        let [i0, i1, i2, i3] = endian.write_i32(self.imm);
        [self.code, regs, o0, o1, i0, i1, i2, i3]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const BOTH: [Endianness; 2] = [Endianness::Little, Endianness::Big];

    #[test]
    fn known_encodings() {
        // `r1 = 42` (BPF_ALU64 | BPF_MOV | BPF_K) as clang emits it for each target.
        let insn = Insn {
            code: 0xb7,
            dst_reg: 1,
            src_reg: 0,
            off: 0,
            imm: 42,
        };
        let le = [0xb7, 0x01, 0, 0, 42, 0, 0, 0];
        let be = [0xb7, 0x10, 0, 0, 0, 0, 0, 42];
        assert_eq!(Insn::decode(le, Endianness::Little), insn);
        assert_eq!(Insn::decode(be, Endianness::Big), insn);
        assert_eq!(insn.encode(Endianness::Little), le);
        assert_eq!(insn.encode(Endianness::Big), be);

        // `call pc+3` to a subprogram: src_reg = BPF_PSEUDO_CALL (1), dst 0.
        let call = Insn {
            code: 0x85,
            dst_reg: 0,
            src_reg: 1,
            off: 0,
            imm: 3,
        };
        assert_eq!(
            call.encode(Endianness::Little),
            [0x85, 0x10, 0, 0, 3, 0, 0, 0]
        );
        assert_eq!(call.encode(Endianness::Big), [0x85, 0x01, 0, 0, 0, 0, 0, 3]);

        // Negative offset and immediate.
        let ld = Insn {
            code: 0x61,
            dst_reg: 2,
            src_reg: 10,
            off: -8,
            imm: -1,
        };
        assert_eq!(
            ld.encode(Endianness::Little),
            [0x61, 0xa2, 0xf8, 0xff, 0xff, 0xff, 0xff, 0xff]
        );
        assert_eq!(
            ld.encode(Endianness::Big),
            [0x61, 0x2a, 0xff, 0xf8, 0xff, 0xff, 0xff, 0xff]
        );
    }

    #[test]
    fn round_trip_all_registers() {
        for endian in BOTH {
            for dst_reg in 0..16 {
                for src_reg in 0..16 {
                    let insn = Insn {
                        code: 0x79,
                        dst_reg,
                        src_reg,
                        off: -1234,
                        imm: 0x1234_5678,
                    };
                    assert_eq!(Insn::decode(insn.encode(endian), endian), insn);
                }
            }
        }
    }

    #[test]
    fn round_trip_bytes() {
        // Every byte pattern decodes and re-encodes to itself.
        for endian in BOTH {
            for regs in 0..=255u8 {
                let bytes = [0x18, regs, 0x80, 0x01, 0xde, 0xad, 0xbe, 0xef];
                assert_eq!(Insn::decode(bytes, endian).encode(endian), bytes);
            }
        }
    }

    #[test]
    fn encode_masks_registers() {
        let insn = Insn {
            code: 0xbf,
            dst_reg: 0x13,
            src_reg: 0xf2,
            off: 0,
            imm: 0,
        };
        assert_eq!(insn.encode(Endianness::Little)[1], 0x23);
        assert_eq!(insn.encode(Endianness::Big)[1], 0x32);
    }
}
