//! Evidence as one line of text, e.g.
//! `insn 12: if r1 == 0 goto +5, r1 = field_exists(struct request.rq_disk) = 0 -> insn 17
//! (relo #3, poisoned) is dead`.

use super::{Branch, Evidence, Operand};
use crate::btf::Btf;
use crate::core::relocate::RelocatedObject;
use crate::core::spec::parse_local_spec;
use core::fmt;

/// One line of evidence as text. `local` is the object's `.BTF`, `relocated` what its
/// relocations gave (for the relocations' names).
pub fn describe<'a>(
    e: &'a Evidence,
    local: &'a Btf<'_>,
    relocated: &'a RelocatedObject<'_, '_>,
) -> impl fmt::Display + 'a {
    Text {
        e,
        local,
        relocated,
    }
}

struct Text<'a, 'l, 'o, 't> {
    e: &'a Evidence,
    local: &'a Btf<'l>,
    relocated: &'a RelocatedObject<'o, 't>,
}

impl fmt::Display for Text<'_, '_, '_, '_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.e {
            Evidence::Guarded {
                poison,
                relocation,
                guard,
                dead,
            } => {
                self.branch(f, guard)?;
                if dead != poison {
                    write!(f, " -> insn {dead} ..")?;
                }
                write!(f, " -> insn {poison} (")?;
                self.relo_number(f, *relocation)?;
                write!(f, "poisoned) is dead")
            }
            Evidence::Reached {
                poison,
                relocation,
                forks,
            } => {
                write!(f, "insn {poison}: poisoned ")?;
                self.relo_name(f, *relocation)?;
                write!(f, " is reached")?;
                if forks.is_empty() {
                    return write!(f, " on every path");
                }
                write!(f, " past")?;
                for (i, fork) in forks.iter().enumerate() {
                    f.write_str(if i == 0 { " " } else { "; " })?;
                    self.branch(f, fork)?;
                }
                Ok(())
            }
            Evidence::LoadTime {
                poison,
                relocation,
                branch,
            } => {
                self.branch(f, branch)?;
                write!(f, " (known only at load time) -> insn {poison} (")?;
                self.relo_number(f, *relocation)?;
                write!(f, "poisoned) may be reached")
            }
            Evidence::Failed { relocation, insn } => {
                write!(f, "insn {insn}: ")?;
                self.relo_name(f, Some(*relocation))?;
                match self
                    .relocated
                    .relocations
                    .get(*relocation)
                    .map(|r| &r.outcome)
                {
                    Some(Err(e)) => write!(f, " failed: {e}"),
                    _ => write!(f, " failed"),
                }
            }
            Evidence::Budget { visits } => write!(
                f,
                "analysis stopped after {visits} instruction visits: reachability unknown"
            ),
        }
    }
}

impl Text<'_, '_, '_, '_> {
    /// `relo #N, ` or nothing.
    fn relo_number(&self, f: &mut fmt::Formatter<'_>, relocation: Option<usize>) -> fmt::Result {
        match relocation.and_then(|r| self.relocated.relocations.get(r)) {
            Some(r) => write!(f, "relo #{}, ", r.relo),
            None => Ok(()),
        }
    }

    /// `relo #N field_exists(struct task.field)`.
    fn relo_name(&self, f: &mut fmt::Formatter<'_>, relocation: Option<usize>) -> fmt::Result {
        match relocation.and_then(|r| Some((r, self.relocated.relocations.get(r)?))) {
            Some((index, r)) => {
                write!(f, "relo #{} ", r.relo)?;
                self.relocation(f, index)
            }
            None => f.write_str("(no relocation)"),
        }
    }

    /// `kind(type.path)`, e.g. `field_exists(struct request.rq_disk)`,
    /// `enumval_exists(enum state::GONE)`, `type_exists(struct foo)`.
    fn relocation(&self, f: &mut fmt::Formatter<'_>, r: usize) -> fmt::Result {
        let Some(r) = self.relocated.relocations.get(r) else {
            return Ok(());
        };
        let Some(kind) = r.kind else {
            return write!(f, "kind {}({})", r.raw_kind, r.access);
        };
        write!(f, "{}(", kind.name())?;
        self.type_name(f, r.local_type_id)?;
        if let Ok(spec) = parse_local_spec(self.local, r.local_type_id, r.access, kind) {
            if kind.is_enumval_based() {
                if let Some(name) = spec.accessors.first().and_then(|a| a.name) {
                    write!(f, "::{name}")?;
                }
            } else if !kind.is_type_based() {
                for acc in spec.accessors.iter().skip(1) {
                    match acc.name {
                        Some(name) => write!(f, ".{name}")?,
                        None => write!(f, "[{}]", acc.idx)?,
                    }
                }
            }
        }
        f.write_str(")")
    }

    fn type_name(&self, f: &mut fmt::Formatter<'_>, id: u32) -> fmt::Result {
        let Ok(ty) = self.local.type_by_id(id) else {
            return write!(f, "[{id}]");
        };
        let kind = ty.kind().map_or("void", |k| k.libbpf_name());
        match self.local.name(ty.name_off) {
            Ok(name) if !name.is_empty() => write!(f, "{kind} {name}"),
            _ => write!(f, "{kind} [{id}]"),
        }
    }

    /// `insn 12: if r1 == 0 goto +5, r1 = field_exists(struct request.rq_disk) = 0`.
    fn branch(&self, f: &mut fmt::Formatter<'_>, b: &Branch) -> fmt::Result {
        let insn = b.jump;
        let reg = if insn.code & 0x07 == 0x06 { 'w' } else { 'r' };
        let op = match insn.code & 0xf0 {
            0x10 => "==",
            0x20 => ">",
            0x30 => ">=",
            0x40 => "&",
            0x50 => "!=",
            0x60 => "s>",
            0x70 => "s>=",
            0xa0 => "<",
            0xb0 => "<=",
            0xc0 => "s<",
            0xd0 => "s<=",
            _ => return write!(f, "insn {}: may_goto {:+}", b.insn, insn.off),
        };
        write!(f, "insn {}: if {reg}{} {op} ", b.insn, insn.dst_reg)?;
        match b.right.reg {
            Some(r) => write!(f, "{reg}{r}")?,
            None => write!(f, "{}", insn.imm)?,
        }
        write!(f, " goto {:+}", insn.off)?;
        for operand in [&b.left, &b.right] {
            self.operand(f, reg, operand)?;
        }
        Ok(())
    }

    fn operand(&self, f: &mut fmt::Formatter<'_>, reg: char, o: &Operand) -> fmt::Result {
        let Some(r) = o.reg else {
            return Ok(());
        };
        write!(f, ", {reg}{r} = ")?;
        if let Some(relocation) = o.relocation {
            self.relocation(f, relocation)?;
            f.write_str(" = ")?;
        }
        match (o.value, o.load_time) {
            (Some(v), _) => write!(f, "{v}"),
            (None, true) => f.write_str("load-time value"),
            (None, false) => f.write_str("unknown"),
        }
    }
}
