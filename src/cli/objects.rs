//! The BPF objects a command minimizes for, parsed once (the ELF and its `.BTF`, validated
//! whole as libbpf validates it) before any kernel, and shared by every kernel's relocation.

use super::{CliError, CliResult, context};
use btfgen::btf::Btf;
use btfgen::object::BpfObject;

/// One object, parsed.
pub struct LocalObject<'a> {
    /// The name it is reported by (its path as given).
    pub name: &'a str,
    /// The ELF view.
    pub object: BpfObject<'a>,
    /// Its parsed `.BTF`.
    pub btf: Btf<'a>,
}

/// Parse `files` (name, bytes), in order; the first that fails is the error.
pub fn parse_objects<'a, D>(files: &'a [(String, D)]) -> CliResult<Vec<LocalObject<'a>>>
where
    D: std::ops::Deref<Target = [u8]>,
{
    files
        .iter()
        .map(|(name, data)| parse_object(name, data))
        .collect()
}

/// Parse one object's ELF and `.BTF`, naming it in the error.
pub fn parse_object<'a>(name: &'a str, data: &'a [u8]) -> CliResult<LocalObject<'a>> {
    let object = BpfObject::parse(data).map_err(context(name))?;
    let btf_bytes = object
        .btf_bytes()
        .ok_or_else(|| CliError(format!("{name}: object has no .BTF section")))?;
    let btf = Btf::parse(btf_bytes).map_err(context(format!("{name}: .BTF")))?;
    Ok(LocalObject { name, object, btf })
}
