//! The other half of a load: the object's `.BTF` as libbpf makes it loadable, with the DATASEC
//! sizes and variable offsets filled in from the ELF, which clang leaves at 0 and the kernel
//! rejects.

use super::BpfObject;
use crate::btf::{Btf, Type, TypeKind};
use crate::error::{Error, Result};
use crate::fallible;
use ::object::elf;
use ::object::endian::Endian;
use ::object::read::elf::{SectionHeader, Sym};
use alloc::vec::Vec;

/// `sizeof(struct btf_type)`.
const TYPE_HEADER: usize = 12;
/// `sizeof(struct btf_var_secinfo)`.
const VAR_SECINFO: usize = 12;
/// `BTF_VAR_STATIC`.
const VAR_STATIC: u32 = 0;
/// `BTF_VAR_GLOBAL_EXTERN`.
const VAR_EXTERN: u32 = 2;

/// The object's `.BTF`, made loadable with `BPF_BTF_LOAD` as libbpf makes it (its
/// `btf_fixup_datasec`): every DATASEC but `.kconfig` and `.ksyms` whose size is 0 gets its ELF
/// section's size and its variables' offsets from their ELF symbols; variables whose symbol is
/// hidden become static; each DATASEC's variables are sorted by offset. Type ids and string
/// offsets do not change, so func_info, line_info and CO-RE records stay valid.
pub fn loadable_btf(obj: &BpfObject<'_>) -> Result<Vec<u8>> {
    let raw = obj.btf_bytes().ok_or(Error::MissingSection(".BTF"))?;
    let btf = Btf::parse(raw)?;
    let endian = btf.endian();
    let word = |at: usize| {
        raw.get(at..)
            .and_then(|r| r.first_chunk::<4>())
            .map(|b| endian.read_u32(*b) as usize)
            .ok_or(Error::Truncated {
                what: "BTF header",
                offset: at,
            })
    };
    // Validated by `Btf::parse`: the type section starts at hdr_len + type_off.
    let types_start = word(4)?
        .checked_add(word(8)?)
        .ok_or(Error::BadHeader("type section offset overflows"))?;
    let mut records: Vec<usize> = fallible::vec_with_capacity(btf.type_cnt() as usize)?;
    records.push(0); // id 0 (void) has no record
    let mut pos = types_start;
    for ty in btf.types() {
        let ty = ty?;
        records.push(pos);
        pos = pos
            .checked_add(record_len(&ty))
            .ok_or(Error::BadHeader("type section offset overflows"))?;
    }
    let mut out = fallible::to_vec(raw)?;
    let mut fixer = DatasecFixer {
        obj,
        btf: &btf,
        records: &records,
        out: &mut out,
    };
    for ty in btf.types() {
        let ty = ty?;
        if let TypeKind::Datasec(ds) = ty.kind {
            fixer.fix(ty.id, ty.name_off, ds.size, ds.len())?;
        }
    }
    Ok(out)
}

/// Length in bytes of a type's record: the common header plus its kind's trailing data.
fn record_len(ty: &Type<'_>) -> usize {
    TYPE_HEADER
        + match &ty.kind {
            TypeKind::Int { .. } | TypeKind::Var { .. } | TypeKind::DeclTag { .. } => 4,
            TypeKind::Array(_) => 12,
            TypeKind::Struct(c) | TypeKind::Union(c) => c.len() * 12,
            TypeKind::Enum(e) => e.len() * 8,
            TypeKind::Enum64(e) => e.len() * 12,
            TypeKind::FuncProto(p) => p.len() * 8,
            TypeKind::Datasec(d) => d.len() * VAR_SECINFO,
            _ => 0,
        }
}

/// In-place DATASEC fixing of a copy of `.BTF`.
struct DatasecFixer<'f, 'a> {
    obj: &'f BpfObject<'a>,
    btf: &'f Btf<'a>,
    /// Byte offset of each type's record, by id.
    records: &'f [usize],
    out: &'f mut Vec<u8>,
}

impl DatasecFixer<'_, '_> {
    fn read(&self, at: usize) -> Result<u32> {
        self.out
            .get(at..)
            .and_then(|r| r.first_chunk::<4>())
            .map(|b| self.btf.endian().read_u32(*b))
            .ok_or(Error::Truncated {
                what: "BTF type record",
                offset: at,
            })
    }

    fn write(&mut self, at: usize, value: u32) -> Result<()> {
        let bytes = self.btf.endian().write_u32(value);
        let slot = self
            .out
            .get_mut(at..)
            .and_then(|r| r.first_chunk_mut::<4>())
            .ok_or(Error::Truncated {
                what: "BTF type record",
                offset: at,
            })?;
        *slot = bytes;
        Ok(())
    }

    fn record(&self, id: u32) -> Result<usize> {
        self.records
            .get(id as usize)
            .copied()
            .ok_or(Error::NoSuchType(id))
    }

    fn fix(&mut self, id: u32, name_off: u32, size: u32, vars: usize) -> Result<()> {
        let name = self.btf.name(name_off)?;
        let record = self.record(id)?;
        let secinfo = |i: usize| record + TYPE_HEADER + i * VAR_SECINFO;
        let fill = size == 0;
        if name != ".kconfig" && name != ".ksyms" {
            if fill {
                let size = self.section_size(name).ok_or(Error::BadType {
                    id,
                    reason: "DATASEC has size 0 and no ELF section of its name to take it from",
                })?;
                self.write(record + 8, size)?;
            }
            for i in 0..vars {
                let var_id = self.read(secinfo(i))?;
                let var = self.btf.type_by_id(var_id)?;
                let TypeKind::Var { linkage, .. } = var.kind else {
                    return Err(Error::BadType {
                        id,
                        reason: "DATASEC entry is not a VAR",
                    });
                };
                if linkage == VAR_STATIC || linkage == VAR_EXTERN {
                    continue;
                }
                let var_name = self.btf.name(var.name_off)?;
                let (value, hidden) = self.var_symbol(var_name).ok_or(Error::BadType {
                    id: var_id,
                    reason: "no global ELF object symbol for the VAR",
                })?;
                if fill {
                    let value = u32::try_from(value).map_err(|_| Error::BadType {
                        id: var_id,
                        reason: "ELF symbol offset does not fit 32 bits",
                    })?;
                    self.write(secinfo(i) + 4, value)?;
                }
                if hidden {
                    let var_record = self.record(var_id)?;
                    self.write(var_record + TYPE_HEADER, VAR_STATIC)?;
                }
            }
        }
        let mut entries: Vec<[u32; 3]> = fallible::vec_with_capacity(vars)?;
        for i in 0..vars {
            let at = secinfo(i);
            entries.push([self.read(at)?, self.read(at + 4)?, self.read(at + 8)?]);
        }
        entries.sort_by_key(|e| e[1]);
        for (i, entry) in entries.iter().enumerate() {
            for (w, value) in entry.iter().enumerate() {
                self.write(secinfo(i) + 4 * w, *value)?;
            }
        }
        Ok(())
    }

    /// Size of the ELF section `name`, when it exists, is not empty and fits 32 bits.
    fn section_size(&self, name: &str) -> Option<u32> {
        let endian = self.obj.endian;
        let (_, sh) = self
            .obj
            .elf_sections
            .section_by_name(endian, name.as_bytes())?;
        u32::try_from(sh.sh_size(endian)).ok().filter(|&s| s != 0)
    }

    /// Value of the first global or weak `STT_OBJECT` symbol named `name`, and whether its
    /// visibility is hidden or internal.
    fn var_symbol(&self, name: &str) -> Option<(u64, bool)> {
        let endian = self.obj.endian;
        let symbols = &self.obj.symbols;
        symbols.iter().find_map(|sym| {
            let bind = sym.st_bind();
            let wanted = sym.st_type() == elf::STT_OBJECT
                && (bind == elf::STB_GLOBAL || bind == elf::STB_WEAK)
                && symbols.symbol_name(endian, sym).ok() == Some(name.as_bytes());
            let visibility = sym.st_visibility();
            let hidden = visibility == elf::STV_HIDDEN || visibility == elf::STV_INTERNAL;
            wanted.then(|| (sym.st_value(endian), hidden))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec;

    const CALLS: &[u8] = include_bytes!("../../tests/data/progs/calls.bpf.o");

    #[test]
    fn loadable_btf_fills_datasecs() {
        let obj = BpfObject::parse(CALLS).unwrap();
        let fixed = loadable_btf(&obj).unwrap();
        let before = Btf::parse(obj.btf_bytes().unwrap()).unwrap();
        let after = Btf::parse(&fixed).unwrap();
        assert_eq!(before.type_cnt(), after.type_cnt());
        let datasecs: Vec<_> = after
            .types()
            .filter_map(|t| match t.unwrap().kind {
                TypeKind::Datasec(d) => Some((
                    d.size,
                    d.vars().map(|v| (v.offset, v.size)).collect::<Vec<_>>(),
                )),
                _ => None,
            })
            .collect();
        assert_eq!(datasecs, vec![(4, vec![(0, 4)])]);
        // Only the DATASEC's size changed.
        let changed = fixed
            .iter()
            .zip(obj.btf_bytes().unwrap())
            .filter(|(a, b)| a != b)
            .count();
        assert_eq!(changed, 1);
    }
}
