//! Writing the minimized BTF: the marked types in a fixed order (main BTF by id, then each
//! module by id), ids remapped, structs/unions/enums cut down to their marked entries. Output
//! depends only on the marks, never on hash order.

use super::marks::{Marks, TypeKey};
use crate::btf::write::BtfWriter;
use crate::btf::MAX_RESOLVE_DEPTH;
use crate::core::{BtfSource, Targets};
use crate::error::{Error, Result};
use alloc::vec::Vec;

/// The output blob and the kept types in output order (new id = position + 1).
pub struct Emitted {
    /// Raw BTF bytes.
    pub bytes: Vec<u8>,
    /// Kept types; type `keys[i]` has new id `i + 1`.
    pub keys: Vec<TypeKey>,
}

fn owner(targets: &Targets<'_>, source: BtfSource, id: u32) -> TypeKey {
    match source {
        BtfSource::Module(_) if id < targets.btf(source).start_id() => (BtfSource::Main, id),
        _ => (source, id),
    }
}

/// New id of `id` (as referenced from a type in `source`): its own if kept; else, through
/// unkept modifiers and typedefs, the first kept type; else void. So a member's `pid_t`
/// becomes the kept `int`, and a pointer to an unkept struct becomes `void *`.
fn new_id(targets: &Targets<'_>, keys: &[TypeKey], source: BtfSource, id: u32) -> Result<u32> {
    let mut id = id;
    for _ in 0..=MAX_RESOLVE_DEPTH {
        if id == 0 {
            return Ok(0);
        }
        let key = owner(targets, source, id);
        if let Ok(pos) = keys.binary_search(&key) {
            return Ok(pos as u32 + 1);
        }
        match targets.btf(key.0).type_by_id(id)?.kind.modified_type() {
            Some(next) => id = next,
            None => return Ok(0),
        }
    }
    Err(Error::BadType { id, reason: "modifier/typedef chain too deep" })
}

/// Write every marked type.
pub fn emit(targets: &Targets<'_>, marks: &Marks) -> Result<Emitted> {
    let keys = marks.sorted_keys()?;
    let mut writer = BtfWriter::new(targets.main().endian())?;
    for key in &keys {
        let (source, id) = *key;
        let btf = targets.btf(source);
        let ty = btf.type_by_id(id)?;
        let mark = marks.get(key);
        writer.copy_type(
            btf,
            &ty,
            |referenced| new_id(targets, &keys, source, referenced),
            |index| mark.is_some_and(|m| m.keeps(index)),
        )?;
    }
    Ok(Emitted { bytes: writer.finish()?, keys })
}
