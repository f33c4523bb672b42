//! BPF ELF objects: program sections, instructions, `.BTF` and `.BTF.ext`.
//!
//! [`BpfObject::parse`] takes libbpf's view of a relocatable BPF object: every non-empty
//! executable `PROGBITS` section holds code, every `STT_FUNC` symbol in one is a program or
//! subprogram, and `.BTF.ext` records name their ELF section by a `.BTF` string. Parsing is the
//! `object` crate's; everything here borrows the input bytes, and only the section and program
//! lists are allocated.

pub mod assemble;
mod btf_ext;
mod insn;
pub mod loadable_btf;

pub use ::object::endian::Endianness;
pub use btf_ext::{
    BTF_EXT_MAGIC, BTF_EXT_VERSION, BtfExt, CoreRelo, ExtInfo, ExtRecord, ExtRecords, ExtSection,
    ExtSections, FuncInfo, LineInfo,
};
pub use insn::{INSN_SIZE, Insn};

use crate::btf::Btf;
use crate::error::{Error, Result};
use crate::fallible;
use ::object::elf;
use ::object::read::elf::{FileHeader, Rel, SectionHeader, SectionTable, Sym, SymbolTable};
use ::object::read::{SectionIndex, SymbolIndex};
use alloc::vec::Vec;
use hashbrown::HashSet;

type Elf64 = elf::FileHeader64<Endianness>;

/// `sizeof(Elf64_Sym)`.
const SYM_SIZE: u64 = 24;
/// `sizeof(Elf64_Rel)`.
const REL_SIZE: u64 = 16;

/// A relocatable BPF ELF object (`clang -target bpf -c`), parsed and validated.
#[derive(Debug)]
pub struct BpfObject<'a> {
    data: &'a [u8],
    endian: Endianness,
    elf_sections: SectionTable<'a, Elf64, &'a [u8]>,
    symbols: SymbolTable<'a, Elf64, &'a [u8]>,
    btf: Option<&'a [u8]>,
    btf_ext: Option<BtfExt<'a>>,
    /// Executable sections in ELF (index) order.
    sections: Vec<ProgramSection<'a>>,
    /// Sorted by (section index, offset, symbol index).
    programs: Vec<Program<'a>>,
}

/// A non-empty executable section: the instructions of one or more (sub)programs.
#[derive(Clone, Copy, Debug)]
pub struct ProgramSection<'a> {
    /// ELF section index.
    pub index: usize,
    /// Section name, e.g. `.text` or `kprobe/do_exit`.
    pub name: &'a str,
    /// Raw instructions, 8 bytes each, in the object's byte order.
    pub data: &'a [u8],
    /// The object's byte order, for decoding `data`.
    pub endian: Endianness,
    /// Whether no earlier ELF section has the same name: libbpf finds a `.BTF.ext` group's
    /// section as the first of its name (`elf_sec_by_name`).
    pub first_of_name: bool,
}

impl ProgramSection<'_> {
    /// Number of 8-byte instruction slots.
    pub fn insn_count(&self) -> usize {
        self.data.len() / INSN_SIZE
    }

    /// Instruction slot `idx`, or `None` past the end. Inlined: called once per instruction
    /// by the scans over every program (a call each cost 0.7% of a run's instructions when
    /// the compiler stopped inlining it on its own).
    #[inline]
    pub fn insn(&self, idx: usize) -> Option<Insn> {
        let start = idx.checked_mul(INSN_SIZE)?;
        let bytes = self.data.get(start..)?.first_chunk::<INSN_SIZE>()?;
        Some(Insn::decode(*bytes, self.endian))
    }
}

/// A program or subprogram: one `STT_FUNC` symbol in an executable section.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Program<'a> {
    /// Symbol name.
    pub name: &'a str,
    /// ELF section index of its code.
    pub section_index: usize,
    /// Name of that section.
    pub section_name: &'a str,
    /// Byte offset of its first instruction within the section.
    pub offset: u32,
    /// Size in bytes (`st_size`).
    pub size: u32,
    /// Whether the symbol is global or weak (libbpf's `sym_global`); static functions are
    /// subprograms of `.text`.
    pub global: bool,
    /// Index of the symbol in `.symtab`.
    pub symbol_index: usize,
}

impl Program<'_> {
    /// Whether the byte offset `insn_off` (within the section) lies inside this program.
    pub fn contains(&self, insn_off: u32) -> bool {
        insn_off >= self.offset
            && u64::from(insn_off) < u64::from(self.offset) + u64::from(self.size)
    }
}

/// One ELF relocation (`Elf64_Rel`) of a program section, with its symbol resolved.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Relocation<'a> {
    /// Byte offset of the relocated instruction within the program section.
    pub offset: u32,
    /// Relocation type (`R_BPF_64_64` = 1, `R_BPF_64_ABS64` = 2, `R_BPF_64_ABS32` = 3,
    /// `R_BPF_64_NODYLD32` = 4, `R_BPF_64_32` = 10).
    pub r_type: u32,
    /// Index of the symbol in `.symtab`.
    pub symbol_index: usize,
    /// Symbol name; empty for unnamed symbols such as the `STT_SECTION` symbol of `.text`
    /// that calls to static subprograms go through.
    pub symbol_name: &'a str,
    /// Section the symbol is defined in; `None` for undefined (extern) and special-index
    /// symbols.
    pub symbol_section: Option<usize>,
    /// `st_value`: for a defined symbol, its byte offset within its section.
    pub symbol_value: u64,
    /// `STT_*` type of the symbol.
    pub symbol_type: u8,
    /// `STB_*` binding of the symbol.
    pub symbol_bind: u8,
}

/// The records of one `.BTF.ext` group with its ELF section name resolved.
#[derive(Clone, Copy, Debug)]
pub struct NamedExtSection<'s, 'a, T> {
    /// The ELF section name the records refer to.
    pub name: &'a str,
    /// That section, when it is an executable section of this object. libbpf skips the records
    /// of groups naming anything else.
    pub section: Option<&'s ProgramSection<'a>>,
    /// The records.
    pub records: ExtSection<'a, T>,
}

/// CO-RE relocations of one ELF section.
pub type CoreReloSection<'s, 'a> = NamedExtSection<'s, 'a, CoreRelo>;

fn bad_section(reason: &'static str, section: usize, offset: u64) -> Error {
    Error::BadElfSection {
        reason,
        section,
        offset,
    }
}

impl<'a> BpfObject<'a> {
    /// Parse a relocatable little- or big-endian ELF64 BPF object.
    ///
    /// Also validates `.BTF.ext` when present ([`Error::BadBtfExt`]); `.BTF` is returned raw
    /// for [`Btf::parse`].
    pub fn parse(data: &'a [u8]) -> Result<BpfObject<'a>> {
        match ::object::FileKind::parse(data) {
            Ok(::object::FileKind::Elf64) => {}
            Ok(::object::FileKind::Elf32) => {
                return Err(Error::BadElf("32-bit ELF; BPF objects are ELF64"));
            }
            _ => return Err(Error::BadElf("not an ELF file")),
        }
        let header = Elf64::parse(data).map_err(|_| Error::BadElf("malformed ELF header"))?;
        let endian = header
            .endian()
            .map_err(|_| Error::BadElf("unknown ELF byte order"))?;
        if header.e_machine(endian) != elf::EM_BPF {
            return Err(Error::BadElf("e_machine is not EM_BPF"));
        }
        if header.e_type(endian) != elf::ET_REL {
            return Err(Error::BadElf(
                "not a relocatable object (e_type is not ET_REL)",
            ));
        }
        let elf_sections = header
            .sections(endian, data)
            .map_err(|_| Error::BadElf("malformed section headers or section name table"))?;
        let symbols = symbol_table(&elf_sections, endian, data)?;

        let btf = match elf_sections.section_by_name(endian, b".BTF") {
            Some((index, sh)) => Some(progbits_data(sh, index, endian, data)?),
            None => None,
        };
        let btf_ext = match elf_sections.section_by_name(endian, b".BTF.ext") {
            Some((index, sh)) => Some(BtfExt::parse(
                progbits_data(sh, index, endian, data)?,
                endian,
            )?),
            None => None,
        };

        let sections = program_sections(&elf_sections, endian, data)?;
        let programs = programs(&sections, &symbols, endian)?;
        Ok(BpfObject {
            data,
            endian,
            elf_sections,
            symbols,
            btf,
            btf_ext,
            sections,
            programs,
        })
    }

    /// Byte order of the object.
    pub fn endian(&self) -> Endianness {
        self.endian
    }

    /// The raw `.BTF` section, if any.
    pub fn btf_bytes(&self) -> Option<&'a [u8]> {
        self.btf
    }

    /// The parsed `.BTF.ext` section, if any.
    pub fn btf_ext(&self) -> Option<&BtfExt<'a>> {
        self.btf_ext.as_ref()
    }

    /// Non-empty executable sections, `.text` included, in ELF order. Empty ones (the `.text`
    /// of an object without subprograms) are left out, as libbpf does.
    pub fn sections(&self) -> &[ProgramSection<'a>] {
        &self.sections
    }

    /// The executable section named `name`.
    pub fn section_by_name(&self, name: &str) -> Option<&ProgramSection<'a>> {
        self.sections.iter().find(|s| s.name == name)
    }

    /// The executable section with ELF index `index`.
    pub fn section_by_index(&self, index: usize) -> Option<&ProgramSection<'a>> {
        let pos = self
            .sections
            .binary_search_by_key(&index, |s| s.index)
            .ok()?;
        self.sections.get(pos)
    }

    /// The name of ELF section `index`, any section (`.rodata`, `.kconfig`, maps ...), when it
    /// exists and its name is UTF-8: what a relocation's `symbol_section` points into.
    pub fn elf_section_name(&self, index: usize) -> Option<&'a str> {
        let sh = self.elf_sections.section(SectionIndex(index)).ok()?;
        let name = self.elf_sections.section_name(self.endian, sh).ok()?;
        core::str::from_utf8(name).ok()
    }

    /// Every program and subprogram (global and static `STT_FUNC` symbols in executable
    /// sections), sorted by (section index, offset): libbpf's program list.
    pub fn programs(&self) -> &[Program<'a>] {
        &self.programs
    }

    /// The program of section `section` that contains byte offset `insn_off_bytes`.
    pub fn program_at(&self, section: &str, insn_off_bytes: u32) -> Option<&Program<'a>> {
        self.program_in(self.section_by_name(section)?.index, insn_off_bytes)
    }

    /// The program of the section with ELF index `section_index` that contains byte offset
    /// `insn_off_bytes`: the last one starting at or before it, if it extends that far.
    pub fn program_in(&self, section_index: usize, insn_off_bytes: u32) -> Option<&Program<'a>> {
        let after = self
            .programs
            .partition_point(|p| (p.section_index, p.offset) <= (section_index, insn_off_bytes));
        let program = self.programs.get(after.checked_sub(1)?)?;
        (program.section_index == section_index && program.contains(insn_off_bytes))
            .then_some(program)
    }

    /// The ELF relocations (`.rel<section>`) of the executable section with ELF index
    /// `section_index`, in file order.
    ///
    /// Each must sit on an instruction of the section and name a symbol of `.symtab`.
    pub fn relocations(&self, section_index: usize) -> Result<Vec<Relocation<'a>>> {
        let target = self
            .section_by_index(section_index)
            .ok_or(Error::InvalidArgument(
                "relocations: not an executable section index",
            ))?;
        let endian = self.endian;
        let mut out = Vec::new();
        for (index, sh) in self.elf_sections.enumerate() {
            if sh.sh_type(endian) != elf::SHT_REL || sh.sh_info(endian) as usize != section_index {
                continue;
            }
            let index = index.0;
            if sh.sh_entsize(endian) != REL_SIZE {
                return Err(bad_section("relocation entry size is not 16", index, 0));
            }
            let rels = match sh.rel(endian, self.data) {
                Ok(Some((rels, _))) => rels,
                _ => {
                    return Err(bad_section(
                        "relocation data out of bounds or ragged",
                        index,
                        0,
                    ));
                }
            };
            out.try_reserve(rels.len())?;
            for (at, rel) in (0u64..).step_by(REL_SIZE as usize).zip(rels) {
                let offset = rel.r_offset(endian);
                let offset = u32::try_from(offset)
                    .ok()
                    .filter(|&o| o as usize % INSN_SIZE == 0 && (o as usize) < target.data.len())
                    .ok_or(bad_section(
                        "relocation is not on an instruction of its section",
                        index,
                        at,
                    ))?;
                let symbol_index = rel.r_sym(endian) as usize;
                let sym = self.symbols.symbols().get(symbol_index).ok_or(bad_section(
                    "relocation symbol index out of range",
                    index,
                    at,
                ))?;
                let symbol_name = self.symbol_name(sym, symbol_index)?;
                let symbol_section = self
                    .symbols
                    .symbol_section(endian, sym, SymbolIndex(symbol_index))
                    .map_err(|_| {
                        bad_section("relocation symbol has a bad section index", index, at)
                    })?
                    .map(|s| s.0);
                fallible::push(
                    &mut out,
                    Relocation {
                        offset,
                        r_type: rel.r_type(endian).0,
                        symbol_index,
                        symbol_name,
                        symbol_section,
                        symbol_value: sym.st_value(endian),
                        symbol_type: sym.st_type().0,
                        symbol_bind: sym.st_bind().0,
                    },
                )?;
            }
        }
        Ok(out)
    }

    /// The groups of a `.BTF.ext` sub-section with their section names looked up in `btf` (this
    /// object's parsed `.BTF`) and matched to executable sections the way libbpf does: the
    /// first ELF section of that name, if it is an executable one.
    pub fn ext_sections<'s, T: ExtRecord>(
        &'s self,
        info: ExtInfo<'a, T>,
        btf: &'s Btf<'a>,
    ) -> impl Iterator<Item = Result<NamedExtSection<'s, 'a, T>>> + 's {
        info.sections().map(move |records| {
            let name = btf.name(records.sec_name_off)?;
            // Resolved among the executable sections, each marked at parse time if it is the
            // first ELF section of its name: no scan of every section name per lookup.
            let section = self
                .sections
                .iter()
                .find(|s| s.first_of_name && s.name == name);
            Ok(NamedExtSection {
                name,
                section,
                records,
            })
        })
    }

    /// For each section with CO-RE relocations: its name, its code and its records, in
    /// `.BTF.ext` order. An empty section name is an error, as in libbpf. Nothing when the
    /// object has no `.BTF.ext`.
    pub fn core_relo_sections<'s>(
        &'s self,
        btf: &'s Btf<'a>,
    ) -> impl Iterator<Item = Result<CoreReloSection<'s, 'a>>> + 's {
        let info = self.btf_ext.map(|ext| ext.core_relos());
        info.into_iter()
            .flat_map(move |info| self.ext_sections(info, btf))
            .map(|section| {
                let section = section?;
                if section.name.is_empty() {
                    return Err(Error::BadBtfExt {
                        reason: "core_relo section name is empty",
                        offset: section.records.offset,
                    });
                }
                Ok(section)
            })
    }

    fn symbol_name(&self, sym: &elf::Sym64<Endianness>, symbol_index: usize) -> Result<&'a str> {
        symbol_name(&self.symbols, sym, symbol_index, self.endian)
    }
}

/// The one `SHT_SYMTAB` (libbpf rejects objects with none or several).
fn symbol_table<'a>(
    sections: &SectionTable<'a, Elf64, &'a [u8]>,
    endian: Endianness,
    data: &'a [u8],
) -> Result<SymbolTable<'a, Elf64, &'a [u8]>> {
    let mut tables = sections
        .enumerate()
        .filter(|(_, sh)| sh.sh_type(endian) == elf::SHT_SYMTAB);
    let (index, sh) = tables.next().ok_or(Error::MissingSection(".symtab"))?;
    if let Some((second, _)) = tables.next() {
        return Err(bad_section("second symbol table", second.0, 0));
    }
    if sh.sh_entsize(endian) != SYM_SIZE {
        return Err(bad_section("symbol entry size is not 24", index.0, 0));
    }
    SymbolTable::parse(endian, data, sections, index, sh)
        .map_err(|_| bad_section("symbol or symbol string table out of bounds", index.0, 0))
}

/// Data of a section that must be `PROGBITS` (`.BTF`, `.BTF.ext`).
fn progbits_data<'a>(
    sh: &elf::SectionHeader64<Endianness>,
    index: SectionIndex,
    endian: Endianness,
    data: &'a [u8],
) -> Result<&'a [u8]> {
    if sh.sh_type(endian) != elf::SHT_PROGBITS {
        return Err(bad_section("BTF section is not PROGBITS", index.0, 0));
    }
    sh.data(endian, data)
        .map_err(|_| bad_section("section data out of file bounds", index.0, 0))
}

fn program_sections<'a>(
    sections: &SectionTable<'a, Elf64, &'a [u8]>,
    endian: Endianness,
    data: &'a [u8],
) -> Result<Vec<ProgramSection<'a>>> {
    let mut out = Vec::new();
    let mut names_seen: HashSet<&[u8]> = HashSet::new();
    for (index, sh) in sections.enumerate() {
        let first_of_name = match sections.section_name(endian, sh) {
            Ok(name) => {
                names_seen.try_reserve(1).map_err(|_| Error::OutOfMemory)?;
                names_seen.insert(name)
            }
            Err(_) => true,
        };
        let executable = sh.sh_flags(endian).0 & elf::SHF_EXECINSTR.0 != 0;
        if sh.sh_type(endian) != elf::SHT_PROGBITS || !executable {
            continue;
        }
        let index = index.0;
        let bytes = sh
            .data(endian, data)
            .map_err(|_| bad_section("section data out of file bounds", index, 0))?;
        if bytes.is_empty() {
            continue;
        }
        if bytes.len() % INSN_SIZE != 0 {
            return Err(bad_section(
                "executable section size is not a multiple of 8",
                index,
                bytes.len() as u64,
            ));
        }
        if u32::try_from(bytes.len()).is_err() {
            return Err(bad_section(
                "executable section larger than 4 GiB",
                index,
                0,
            ));
        }
        let name = sections
            .section_name(endian, sh)
            .ok()
            .and_then(|name| core::str::from_utf8(name).ok())
            .ok_or(bad_section(
                "section name out of bounds or not UTF-8",
                index,
                0,
            ))?;
        fallible::push(
            &mut out,
            ProgramSection {
                index,
                name,
                data: bytes,
                endian,
                first_of_name,
            },
        )?;
    }
    Ok(out)
}

fn programs<'a>(
    sections: &[ProgramSection<'a>],
    symbols: &SymbolTable<'a, Elf64, &'a [u8]>,
    endian: Endianness,
) -> Result<Vec<Program<'a>>> {
    let symtab = symbols.section().0;
    let mut out = Vec::new();
    for (symbol_index, sym) in symbols.enumerate() {
        if sym.st_type() != elf::STT_FUNC {
            continue;
        }
        let at = (symbol_index.0 as u64).saturating_mul(SYM_SIZE);
        let section = symbols
            .symbol_section(endian, sym, symbol_index)
            .map_err(|_| bad_section("function symbol has a bad section index", symtab, at))?
            .and_then(|index| {
                let pos = sections.binary_search_by_key(&index.0, |s| s.index).ok()?;
                sections.get(pos)
            });
        let Some(section) = section else { continue };
        let (value, size) = (sym.st_value(endian), sym.st_size(endian));
        let fits = value
            .checked_add(size)
            .is_some_and(|end| end <= section.data.len() as u64);
        if !fits {
            return Err(bad_section(
                "function symbol crosses the section end",
                section.index,
                value,
            ));
        }
        if value % INSN_SIZE as u64 != 0 || size % INSN_SIZE as u64 != 0 {
            return Err(bad_section(
                "function symbol is not instruction-aligned",
                section.index,
                value,
            ));
        }
        // Both fit: the section is at most 4 GiB.
        let (Ok(offset), Ok(size)) = (u32::try_from(value), u32::try_from(size)) else {
            return Err(bad_section(
                "function symbol crosses the section end",
                section.index,
                value,
            ));
        };
        fallible::push(
            &mut out,
            Program {
                name: symbol_name(symbols, sym, symbol_index.0, endian)?,
                section_index: section.index,
                section_name: section.name,
                offset,
                size,
                global: sym.st_bind() != elf::STB_LOCAL,
                symbol_index: symbol_index.0,
            },
        )?;
    }
    out.sort_unstable_by_key(|p| (p.section_index, p.offset, p.symbol_index));
    Ok(out)
}

fn symbol_name<'a>(
    symbols: &SymbolTable<'a, Elf64, &'a [u8]>,
    sym: &elf::Sym64<Endianness>,
    symbol_index: usize,
    endian: Endianness,
) -> Result<&'a str> {
    symbols
        .symbol_name(endian, sym)
        .ok()
        .and_then(|name| core::str::from_utf8(name).ok())
        .ok_or(bad_section(
            "symbol name out of bounds or not UTF-8",
            symbols.section().0,
            (symbol_index as u64).saturating_mul(SYM_SIZE),
        ))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A bare ELF64 header with no sections: class, data, machine and type as given.
    fn header(class: u8, data: u8, machine: u16, e_type: u16) -> [u8; 64] {
        let mut h = [0u8; 64];
        h[..4].copy_from_slice(b"\x7fELF");
        h[4] = class;
        h[5] = data;
        h[6] = 1;
        let le = data == 1;
        let put16 = |h: &mut [u8; 64], at: usize, v: u16| {
            let b = if le { v.to_le_bytes() } else { v.to_be_bytes() };
            h[at..at + 2].copy_from_slice(&b);
        };
        put16(&mut h, 16, e_type);
        put16(&mut h, 18, machine);
        h[20] = if le { 1 } else { 0 };
        h[23] = if le { 0 } else { 1 };
        put16(&mut h, 52, 64); // e_ehsize
        put16(&mut h, 58, 64); // e_shentsize
        h
    }

    #[test]
    fn header_checks() {
        for data in [1, 2] {
            let ok = header(2, data, 247, 1);
            // No sections at all: no symbol table.
            assert_eq!(
                BpfObject::parse(&ok).unwrap_err(),
                Error::MissingSection(".symtab")
            );
            assert_eq!(
                BpfObject::parse(&header(2, data, 62, 1)).unwrap_err(),
                Error::BadElf("e_machine is not EM_BPF")
            );
            assert_eq!(
                BpfObject::parse(&header(2, data, 247, 2)).unwrap_err(),
                Error::BadElf("not a relocatable object (e_type is not ET_REL)")
            );
            assert_eq!(
                BpfObject::parse(&header(1, data, 247, 1)).unwrap_err(),
                Error::BadElf("32-bit ELF; BPF objects are ELF64")
            );
            for len in 0..ok.len() {
                assert!(BpfObject::parse(&ok[..len]).is_err());
            }
        }
        assert_eq!(
            BpfObject::parse(b"not an elf").unwrap_err(),
            Error::BadElf("not an ELF file")
        );
    }
}
