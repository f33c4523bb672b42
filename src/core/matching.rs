//! Matching a local spec against one candidate target type (libbpf's `bpf_core_spec_match` and
//! the compatibility relations it relies on).

use super::spec::{Accessor, Spec, essential_name, is_flex_array};
use crate::btf::{Btf, Kind, Type, TypeKind};
use crate::error::{Error, Result};
use crate::fallible;
use alloc::vec::Vec;
use hashbrown::HashMap;

/// Recursion limit of the type compatibility and type-match relations (libbpf's 32).
const MAX_COMPAT_DEPTH: i32 = 32;

fn too_deep() -> Error {
    Error::Limit {
        what: "type comparison depth",
        limit: MAX_COMPAT_DEPTH as usize,
    }
}

/// Same kind, or both enums of either width: the kinds CO-RE may relate.
pub(crate) fn kinds_core_compat(a: Option<Kind>, b: Option<Kind>) -> bool {
    a == b || (a.is_some_and(Kind::is_any_enum) && b.is_some_and(Kind::is_any_enum))
}

/// Try to match `local` against candidate `targ_id` in `targ`. `Ok(None)` when it does not
/// match; `Err` when the target BTF is malformed for this walk.
pub fn spec_match<'t>(
    local_btf: &Btf<'_>,
    local: &Spec<'_>,
    targ_btf: &Btf<'t>,
    targ_id: u32,
) -> Result<Option<Spec<'t>>> {
    let mut targ = Spec::new(targ_id, local.kind);
    if local.kind.is_type_based() {
        let matched = if local.kind == super::RelocKind::TypeMatches {
            types_match(
                local_btf,
                local.root_type_id,
                targ_btf,
                targ_id,
                false,
                MAX_COMPAT_DEPTH,
            )?
        } else {
            types_are_compat(
                local_btf,
                local.root_type_id,
                targ_btf,
                targ_id,
                MAX_COMPAT_DEPTH,
            )?
        };
        return Ok(matched.then_some(targ));
    }
    let Some(first) = local.accessors.first() else {
        return Err(Error::BadRelocation {
            relo: 0,
            reason: "empty local spec",
        });
    };
    if local.kind.is_enumval_based() {
        let ty = targ_btf.skip_mods_and_typedefs(targ_id)?;
        let Some(values) = ty.kind.any_enum() else {
            return Ok(None);
        };
        let wanted = essential_name(first.name.unwrap_or(""));
        for (i, v) in values.values().enumerate() {
            let name = targ_btf.name(v.name_off)?;
            if essential_name(name) == wanted {
                targ.push_accessor(Accessor {
                    type_id: ty.id,
                    idx: i as u32,
                    name: Some(name),
                })?;
                targ.push_raw(i as u32)?;
                return Ok(Some(targ));
            }
        }
        return Ok(None);
    }
    if !local.kind.is_field_based() {
        return Err(Error::BadRelocation {
            relo: 0,
            reason: "unknown relocation kind",
        });
    }
    let mut targ_id = targ_id;
    for (i, local_acc) in local.accessors.iter().enumerate() {
        let targ_type = targ_btf.skip_mods_and_typedefs(targ_id)?;
        targ_id = targ_type.id;
        if local_acc.name.is_some() {
            let mut searched = HashMap::new();
            match match_member(
                local_btf,
                local_acc,
                targ_btf,
                targ_id,
                &mut targ,
                &mut searched,
            )? {
                Some(next) => targ_id = next,
                None => return Ok(None),
            }
        } else {
            if i > 0 {
                let TypeKind::Array(a) = targ_type.kind else {
                    return Ok(None);
                };
                let flex = targ
                    .accessors
                    .last()
                    .is_some_and(|prev| is_flex_array(targ_btf, prev, a.nelems));
                if !flex && local_acc.idx >= a.nelems {
                    return Ok(None);
                }
                targ_id = targ_btf.skip_mods_and_typedefs(a.elem_type)?.id;
            }
            targ.push_raw(local_acc.idx)?;
            targ.push_accessor(Accessor {
                type_id: targ_id,
                idx: local_acc.idx,
                name: None,
            })?;
            let size = targ_btf.resolve_size(targ_id)?;
            let bits = u64::from(local_acc.idx)
                .checked_mul(size)
                .and_then(|b| b.checked_mul(8))
                .ok_or(Error::BadRelocation {
                    relo: 0,
                    reason: "field bit offset overflows",
                })?;
            // libbpf accumulates in 32 bits; mirror its wrap-around.
            targ.bit_offset = targ.bit_offset.wrapping_add(bits as u32);
        }
    }
    Ok(Some(targ))
}

/// Find the member named by `local_acc` in target composite `targ_id`, descending into anonymous
/// members; on success the target accessor and raw indices are pushed and the member's type id
/// returned. Recursion depth is bounded by the raw spec's capacity.
///
/// `searched` remembers the types whose members were searched in vain, with the deepest spec
/// length they were searched from. Such a search does not depend on where it starts except
/// through the spec length limit, which a shallower start hits no sooner, so it fails again
/// from there and is skipped. Without this, anonymous members nested `fanout` wide make the
/// search (like libbpf's) take `fanout^depth` steps; with it, each type is searched at most
/// once per spec length.
fn match_member<'t>(
    local_btf: &Btf<'_>,
    local_acc: &Accessor<'_>,
    targ_btf: &Btf<'t>,
    targ_id: u32,
    targ: &mut Spec<'t>,
    searched: &mut HashMap<u32, usize>,
) -> Result<Option<u32>> {
    let depth = targ.raw.len();
    if searched.get(&targ_id).is_some_and(|&d| depth <= d) {
        return Ok(None);
    }
    let found = search_members(local_btf, local_acc, targ_btf, targ_id, targ, searched)?;
    if found.is_none() {
        searched.try_reserve(1)?;
        let deepest = searched.entry(targ_id).or_insert(depth);
        *deepest = (*deepest).max(depth);
    }
    Ok(found)
}

/// [`match_member`] without the memo.
fn search_members<'t>(
    local_btf: &Btf<'_>,
    local_acc: &Accessor<'_>,
    targ_btf: &Btf<'t>,
    targ_id: u32,
    targ: &mut Spec<'t>,
    searched: &mut HashMap<u32, usize>,
) -> Result<Option<u32>> {
    let targ_type = targ_btf.skip_mods_and_typedefs(targ_id)?;
    let Some(members) = targ_type.kind.composite() else {
        return Ok(None);
    };
    let local_type = local_btf.type_by_id(local_acc.type_id)?;
    let local_member = local_type
        .kind
        .composite()
        .and_then(|c| c.member(local_acc.idx as usize))
        .ok_or(Error::BadRelocation {
            relo: 0,
            reason: "local accessor is not a member",
        })?;
    let local_name = local_acc.name.unwrap_or("").as_bytes();
    for (i, m) in members.members().enumerate() {
        if targ.raw.is_full() {
            return Err(Error::Limit {
                what: "CO-RE access spec length",
                limit: super::spec::MAX_SPEC_LEN,
            });
        }
        // The name compared in place: most members' names differ in their first bytes, and
        // neither their length nor their `&str` (a UTF-8 check) is needed for that. A parsed
        // string section ends with a NUL, so an in-range name is terminated.
        let tail = match targ_btf.string_tail(m.name_off) {
            Some(tail) => tail,
            // Out of range: the error that says so.
            None => targ_btf.name(m.name_off)?.as_bytes(),
        };
        let anonymous = tail.first().is_none_or(|&b| b == 0);
        let same_name = tail.get(local_name.len()) == Some(&0)
            && tail.get(..local_name.len()) == Some(local_name);
        if !anonymous && !same_name {
            continue;
        }
        let saved_bits = targ.bit_offset;
        targ.bit_offset = targ.bit_offset.wrapping_add(m.bit_offset);
        targ.push_raw(i as u32)?;
        if anonymous {
            if let Some(found) =
                match_member(local_btf, local_acc, targ_btf, m.type_id, targ, searched)?
            {
                return Ok(Some(found));
            }
        } else {
            if !fields_are_compat(local_btf, local_member.type_id, targ_btf, m.type_id)? {
                return Ok(None);
            }
            targ.push_accessor(Accessor {
                type_id: targ_type.id,
                idx: i as u32,
                name: Some(targ_btf.name(m.name_off)?),
            })?;
            return Ok(Some(m.type_id));
        }
        targ.bit_offset = saved_bits;
        targ.raw.pop();
    }
    Ok(None)
}

/// Field compatibility (libbpf's `bpf_core_fields_are_compat`): any two composites, pointers or
/// floats; enums and fwds by essential name (or either anonymous); integers unless legacy
/// bitfield-encoded; arrays by element type.
pub fn fields_are_compat(
    local_btf: &Btf<'_>,
    local_id: u32,
    targ_btf: &Btf<'_>,
    targ_id: u32,
) -> Result<bool> {
    let (mut local_id, mut targ_id) = (local_id, targ_id);
    for _ in 0..MAX_COMPAT_DEPTH {
        let l = local_btf.skip_mods_and_typedefs(local_id)?;
        let t = targ_btf.skip_mods_and_typedefs(targ_id)?;
        if l.kind.composite().is_some() && t.kind.composite().is_some() {
            return Ok(true);
        }
        if !kinds_core_compat(l.kind(), t.kind()) {
            return Ok(false);
        }
        match (&l.kind, &t.kind) {
            (TypeKind::Ptr(_), _) | (TypeKind::Float { .. }, _) => return Ok(true),
            (TypeKind::Fwd { .. } | TypeKind::Enum(_) | TypeKind::Enum64(_), _) => {
                let ln = essential_name(local_btf.name(l.name_off)?);
                let tn = essential_name(targ_btf.name(t.name_off)?);
                return Ok(ln.is_empty() || tn.is_empty() || ln == tn);
            }
            (TypeKind::Int { offset: lo, .. }, TypeKind::Int { offset: to, .. }) => {
                return Ok(*lo == 0 && *to == 0);
            }
            (TypeKind::Array(la), TypeKind::Array(ta)) => {
                local_id = la.elem_type;
                targ_id = ta.elem_type;
            }
            _ => return Ok(false),
        }
    }
    Err(too_deep())
}

/// Type compatibility for type-based relocations (libbpf's `__bpf_core_types_are_compat`).
pub fn types_are_compat(
    local_btf: &Btf<'_>,
    local_id: u32,
    targ_btf: &Btf<'_>,
    targ_id: u32,
    level: i32,
) -> Result<bool> {
    let mut memo = HashMap::new();
    Ok(types_are_compat_memo(local_btf, local_id, targ_btf, targ_id, level, &mut memo)?.0)
}

/// Results of the calls of a recursive relation that returned, keyed by their arguments but
/// the level, with the fewest levels each needed to return: a call with at least that many
/// levels left makes the same calls and returns the same; with fewer it fails as too deep.
/// Without it, function prototypes (for `types_are_compat`) or structs (for `types_match`)
/// whose parameters or members share types take, as in libbpf, time exponential in the depth.
type Memo<K> = HashMap<K, (bool, i32)>;

/// The memo's answer for `key` at `level`, if it has one.
fn recall<K: core::hash::Hash + Eq>(
    memo: &Memo<K>,
    key: &K,
    level: i32,
) -> Option<Result<(bool, i32)>> {
    let &(result, needed) = memo.get(key)?;
    Some(if level >= needed {
        Ok((result, needed))
    } else {
        Err(too_deep())
    })
}

fn remember<K: core::hash::Hash + Eq>(
    memo: &mut Memo<K>,
    key: K,
    result: bool,
    needed: i32,
) -> Result<(bool, i32)> {
    memo.try_reserve(1)?;
    memo.insert(key, (result, needed));
    Ok((result, needed))
}

/// [`types_are_compat`] with a memo: the result and the levels the call needed.
fn types_are_compat_memo(
    local_btf: &Btf<'_>,
    local_id: u32,
    targ_btf: &Btf<'_>,
    targ_id: u32,
    level: i32,
    memo: &mut Memo<(u32, u32)>,
) -> Result<(bool, i32)> {
    let key = (local_id, targ_id);
    if let Some(known) = recall(memo, &key, level) {
        return known;
    }
    let mut needed = 0;
    let result = types_are_compat_body(
        local_btf,
        local_id,
        targ_btf,
        targ_id,
        level,
        &mut needed,
        memo,
    )?;
    remember(memo, key, result, needed)
}

fn types_are_compat_body(
    local_btf: &Btf<'_>,
    local_id: u32,
    targ_btf: &Btf<'_>,
    targ_id: u32,
    level: i32,
    needed: &mut i32,
    memo: &mut Memo<(u32, u32)>,
) -> Result<bool> {
    let (mut local_id, mut targ_id) = (local_id, targ_id);
    if !kinds_core_compat(
        local_btf.type_by_id(local_id)?.kind(),
        targ_btf.type_by_id(targ_id)?.kind(),
    ) {
        return Ok(false);
    }
    for _ in 0..MAX_COMPAT_DEPTH {
        let l = local_btf.skip_mods_and_typedefs(local_id)?;
        let t = targ_btf.skip_mods_and_typedefs(targ_id)?;
        if !kinds_core_compat(l.kind(), t.kind()) {
            return Ok(false);
        }
        match (&l.kind, &t.kind) {
            (
                TypeKind::Void
                | TypeKind::Struct(_)
                | TypeKind::Union(_)
                | TypeKind::Enum(_)
                | TypeKind::Enum64(_)
                | TypeKind::Fwd { .. },
                _,
            ) => return Ok(true),
            (TypeKind::Int { offset: lo, .. }, TypeKind::Int { offset: to, .. }) => {
                return Ok(*lo == 0 && *to == 0);
            }
            (TypeKind::Ptr(lp), TypeKind::Ptr(tp)) => {
                local_id = *lp;
                targ_id = *tp;
            }
            (TypeKind::Array(la), TypeKind::Array(ta)) => {
                local_id = la.elem_type;
                targ_id = ta.elem_type;
            }
            (TypeKind::FuncProto(lp), TypeKind::FuncProto(tp)) => {
                if lp.len() != tp.len() {
                    return Ok(false);
                }
                for (a, b) in lp.params().zip(tp.params()) {
                    if level <= 0 {
                        return Err(too_deep());
                    }
                    let a = local_btf.skip_mods_and_typedefs(a.type_id)?.id;
                    let b = targ_btf.skip_mods_and_typedefs(b.type_id)?.id;
                    let (compat, below) =
                        types_are_compat_memo(local_btf, a, targ_btf, b, level - 1, memo)?;
                    *needed = (*needed).max(below + 1);
                    if !compat {
                        return Ok(false);
                    }
                }
                local_id = local_btf.skip_mods_and_typedefs(lp.return_type)?.id;
                targ_id = targ_btf.skip_mods_and_typedefs(tp.return_type)?.id;
            }
            _ => return Ok(false),
        }
    }
    Err(too_deep())
}

/// Names match for `type_matches`: an anonymous target matches only an anonymous local; else
/// essential names are equal.
fn names_match(
    local_btf: &Btf<'_>,
    local_off: u32,
    targ_btf: &Btf<'_>,
    targ_off: u32,
) -> Result<bool> {
    let l = local_btf.name(local_off)?;
    let t = targ_btf.name(targ_off)?;
    if t.is_empty() {
        return Ok(l.is_empty());
    }
    Ok(essential_name(l) == essential_name(t))
}

fn enums_match(
    local_btf: &Btf<'_>,
    l: &Type<'_>,
    targ_btf: &Btf<'_>,
    t: &Type<'_>,
) -> Result<bool> {
    let (Some(le), Some(te)) = (l.kind.any_enum(), t.kind.any_enum()) else {
        return Ok(false);
    };
    if le.size != te.size || le.len() > te.len() {
        return Ok(false);
    }
    let names = sorted_names(targ_btf, te.values().map(|v| v.name_off))?;
    for lv in le.values() {
        let name = essential_name(local_btf.name(lv.name_off)?);
        if names.binary_search_by(|&(n, _)| n.cmp(name)).is_err() {
            return Ok(false);
        }
    }
    Ok(true)
}

/// `(essential name, index)` of each name offset in `offsets`, sorted: what [`names_match`]
/// relates to a local name is the entries with that name's essential name (an anonymous entry
/// has the empty essential name, which only an anonymous local name has), in index order.
/// Looking names up here rather than scanning every target entry for every local one keeps
/// `type_matches` linear-logarithmic instead of quadratic in the member and enumerator counts
/// (minutes for two structs or enums of 65535 entries each).
fn sorted_names<'t>(
    btf: &Btf<'t>,
    offsets: impl Iterator<Item = u32>,
) -> Result<Vec<(&'t str, u32)>> {
    let mut names = Vec::new();
    for (index, off) in (0u32..).zip(offsets) {
        fallible::push(&mut names, (essential_name(btf.name(off)?), index))?;
    }
    names.sort_unstable();
    Ok(names)
}

/// libbpf's stricter structural relation for `type_matches` (`__bpf_core_types_match`).
pub fn types_match(
    local_btf: &Btf<'_>,
    local_id: u32,
    targ_btf: &Btf<'_>,
    targ_id: u32,
    behind_ptr: bool,
    level: i32,
) -> Result<bool> {
    let mut memo = HashMap::new();
    Ok(types_match_memo(
        local_btf, local_id, targ_btf, targ_id, behind_ptr, level, &mut memo,
    )?
    .0)
}

/// [`types_match`] with a memo: the result and the levels the call needed.
fn types_match_memo(
    local_btf: &Btf<'_>,
    local_id: u32,
    targ_btf: &Btf<'_>,
    targ_id: u32,
    behind_ptr: bool,
    level: i32,
    memo: &mut Memo<(u32, u32, bool)>,
) -> Result<(bool, i32)> {
    if level <= 0 {
        return Err(too_deep());
    }
    let key = (local_id, targ_id, behind_ptr);
    if let Some(known) = recall(memo, &key, level) {
        return known;
    }
    let mut needed = 1;
    let result = types_match_body(
        local_btf,
        local_id,
        targ_btf,
        targ_id,
        behind_ptr,
        level,
        &mut needed,
        memo,
    )?;
    remember(memo, key, result, needed)
}

#[allow(clippy::too_many_arguments)]
fn types_match_body(
    local_btf: &Btf<'_>,
    local_id: u32,
    targ_btf: &Btf<'_>,
    targ_id: u32,
    behind_ptr: bool,
    level: i32,
    needed: &mut i32,
    memo: &mut Memo<(u32, u32, bool)>,
) -> Result<bool> {
    let (mut local_id, mut targ_id, mut behind_ptr) = (local_id, targ_id, behind_ptr);
    for _ in 0..MAX_COMPAT_DEPTH {
        let l = local_btf.skip_mods_and_typedefs(local_id)?;
        let t = targ_btf.skip_mods_and_typedefs(targ_id)?;
        if !names_match(local_btf, l.name_off, targ_btf, t.name_off)? {
            return Ok(false);
        }
        let (lk, tk) = (l.kind(), t.kind());
        match &l.kind {
            TypeKind::Void => return Ok(lk == tk),
            TypeKind::Fwd { union: lf } => {
                return Ok(match (&t.kind, behind_ptr) {
                    (TypeKind::Fwd { union: tf }, _) => lf == tf,
                    (TypeKind::Struct(_), true) => !lf,
                    (TypeKind::Union(_), true) => *lf,
                    _ => false,
                });
            }
            TypeKind::Enum(_) | TypeKind::Enum64(_) => {
                return enums_match(local_btf, &l, targ_btf, &t);
            }
            TypeKind::Struct(lc) | TypeKind::Union(lc) => {
                if behind_ptr {
                    if lk == tk {
                        return Ok(true);
                    }
                    return Ok(match t.kind {
                        TypeKind::Fwd { union } => (lk == Some(Kind::Union)) == union,
                        _ => false,
                    });
                }
                if lk != tk {
                    return Ok(false);
                }
                let Some(tc) = t.kind.composite() else {
                    return Ok(false);
                };
                if lc.len() > tc.len() {
                    return Ok(false);
                }
                let names = sorted_names(targ_btf, tc.members().map(|m| m.name_off))?;
                for lm in lc.members() {
                    let name = essential_name(local_btf.name(lm.name_off)?);
                    let first = names.partition_point(|&(n, _)| n < name);
                    let same_name = names[first..].iter().take_while(|&&(n, _)| n == name);
                    let mut found = false;
                    for tm in same_name.filter_map(|&(_, i)| tc.member(i as usize)) {
                        let (matched, below) = types_match_memo(
                            local_btf,
                            lm.type_id,
                            targ_btf,
                            tm.type_id,
                            behind_ptr,
                            level - 1,
                            memo,
                        )?;
                        *needed = (*needed).max(below + 1);
                        if matched {
                            found = true;
                            break;
                        }
                    }
                    if !found {
                        return Ok(false);
                    }
                }
                return Ok(true);
            }
            TypeKind::Int {
                size: ls,
                encoding: le,
                ..
            } => {
                return Ok(match t.kind {
                    TypeKind::Int {
                        size: ts,
                        encoding: te,
                        ..
                    } => {
                        *ls == ts
                            && (le & crate::btf::kind::INT_SIGNED)
                                == (te & crate::btf::kind::INT_SIGNED)
                    }
                    _ => false,
                });
            }
            TypeKind::Ptr(lp) => {
                let TypeKind::Ptr(tp) = t.kind else {
                    return Ok(false);
                };
                behind_ptr = true;
                local_id = *lp;
                targ_id = tp;
            }
            TypeKind::Array(la) => {
                let TypeKind::Array(ta) = t.kind else {
                    return Ok(false);
                };
                if la.nelems != ta.nelems {
                    return Ok(false);
                }
                local_id = la.elem_type;
                targ_id = ta.elem_type;
            }
            TypeKind::FuncProto(lp) => {
                let TypeKind::FuncProto(tp) = t.kind else {
                    return Ok(false);
                };
                if lp.len() != tp.len() {
                    return Ok(false);
                }
                for (a, b) in lp.params().zip(tp.params()) {
                    let (matched, below) = types_match_memo(
                        local_btf,
                        a.type_id,
                        targ_btf,
                        b.type_id,
                        behind_ptr,
                        level - 1,
                        memo,
                    )?;
                    *needed = (*needed).max(below + 1);
                    if !matched {
                        return Ok(false);
                    }
                }
                local_id = lp.return_type;
                targ_id = tp.return_type;
            }
            _ => return Ok(false),
        }
    }
    Err(too_deep())
}
