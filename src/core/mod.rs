//! The CO-RE engine: libbpf's relocation algorithm, computed exactly as libbpf computes it.
//!
//! For each `.BTF.ext` core_relo record: parse the local spec ([`spec`]), find candidate target
//! types by essential name ([`candidates`]), match the spec against each ([`matching`]),
//! compute the values to patch ([`calc`]) and patch the instruction ([`patch`]). Candidate
//! lists are cached per local type and pruned to the candidates that matched, per object, as
//! libbpf does — later relocations of the same type see only those.

pub mod calc;
pub mod candidates;
pub mod events;
pub mod kernel;
pub mod matching;
pub mod patch;
pub mod programs;
pub mod relocate;
pub mod spec;
pub mod verdict;

pub use calc::{PoisonReason, Resolution};
pub use candidates::{BtfSource, Candidate, CandidateIndex, ScanPlan, Targets};
pub use events::{EventSink, RelocEvent};
pub use spec::{MatchedSpec, Spec};

use crate::btf::Btf;
use crate::error::{Error, Result};
use alloc::vec::Vec;
use hashbrown::HashMap;

/// A CO-RE relocation kind (`enum bpf_core_relo_kind`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u32)]
pub enum RelocKind {
    /// Field byte offset.
    FieldByteOffset = 0,
    /// Field byte size.
    FieldByteSize = 1,
    /// Field existence.
    FieldExists = 2,
    /// Field signedness.
    FieldSigned = 3,
    /// Bitfield-extraction left shift.
    FieldLshiftU64 = 4,
    /// Bitfield-extraction right shift.
    FieldRshiftU64 = 5,
    /// Type id in the local BTF.
    TypeIdLocal = 6,
    /// Type id in the target BTF.
    TypeIdTarget = 7,
    /// Type existence.
    TypeExists = 8,
    /// Type size.
    TypeSize = 9,
    /// Enumerator existence.
    EnumvalExists = 10,
    /// Enumerator value.
    EnumvalValue = 11,
    /// Structural type match.
    TypeMatches = 12,
}

impl RelocKind {
    /// The kind for a raw record value.
    pub fn from_raw(raw: u32) -> Option<RelocKind> {
        use RelocKind::*;
        Some(match raw {
            0 => FieldByteOffset,
            1 => FieldByteSize,
            2 => FieldExists,
            3 => FieldSigned,
            4 => FieldLshiftU64,
            5 => FieldRshiftU64,
            6 => TypeIdLocal,
            7 => TypeIdTarget,
            8 => TypeExists,
            9 => TypeSize,
            10 => EnumvalExists,
            11 => EnumvalValue,
            12 => TypeMatches,
            _ => return None,
        })
    }

    /// libbpf's name for the kind (`byte_off`, `type_matches`, ...).
    pub fn name(self) -> &'static str {
        use RelocKind::*;
        match self {
            FieldByteOffset => "byte_off",
            FieldByteSize => "byte_sz",
            FieldExists => "field_exists",
            FieldSigned => "signed",
            FieldLshiftU64 => "lshift_u64",
            FieldRshiftU64 => "rshift_u64",
            TypeIdLocal => "local_type_id",
            TypeIdTarget => "target_type_id",
            TypeExists => "type_exists",
            TypeSize => "type_size",
            EnumvalExists => "enumval_exists",
            EnumvalValue => "enumval_value",
            TypeMatches => "type_matches",
        }
    }

    /// Field relocations (byte_off .. rshift_u64).
    pub fn is_field_based(self) -> bool {
        (self as u32) <= 5
    }

    /// Type relocations (local/target type id, exists, size, matches).
    pub fn is_type_based(self) -> bool {
        matches!(
            self,
            Self::TypeIdLocal
                | Self::TypeIdTarget
                | Self::TypeExists
                | Self::TypeSize
                | Self::TypeMatches
        )
    }

    /// Enumerator relocations.
    pub fn is_enumval_based(self) -> bool {
        matches!(self, Self::EnumvalExists | Self::EnumvalValue)
    }
}

/// The outcome of resolving one relocation.
#[derive(Debug, Clone)]
pub struct Resolved<'t> {
    /// Values to check and patch.
    pub res: Resolution,
    /// Every candidate that matched, with its target spec, in search order; the first is the
    /// one whose values were used. Empty when none matched (and for `local_type_id`).
    pub matches: Vec<(Candidate, MatchedSpec<'t>)>,
}

impl<'t> Resolved<'t> {
    /// The chosen (first matching) candidate and its target spec.
    pub fn target(&self) -> Option<&(Candidate, MatchedSpec<'t>)> {
        self.matches.first()
    }
}

/// Per-object candidate cache: local type id → candidates still in play. libbpf prunes a
/// type's list to the candidates that matched each relocation, so results depend on it.
#[derive(Debug, Default)]
pub struct CandidateCache {
    lists: HashMap<u32, Vec<Candidate>>,
}

impl CandidateCache {
    /// An empty cache (one per object).
    pub fn new() -> Self {
        Self::default()
    }
}

/// Resolve one relocation of `local_btf` (libbpf's `bpf_core_resolve_relo` +
/// `bpf_core_calc_relo_insn`). `relo` is the record's index, used in errors; `program` and
/// `relo` name the relocation in the events reported to `sink`.
#[allow(clippy::too_many_arguments)]
pub fn resolve<'t>(
    local_btf: &Btf<'_>,
    local_type_id: u32,
    access: &str,
    kind: RelocKind,
    program: &str,
    relo: u32,
    targets: &Targets<'t>,
    index: &CandidateIndex,
    cache: &mut CandidateCache,
    target_is_le: bool,
    sink: &mut dyn EventSink,
) -> Result<Resolved<'t>> {
    let at = |e: Error| match e {
        Error::BadRelocation { reason, .. } => Error::BadRelocation { relo, reason },
        Error::AmbiguousRelocation { first, second, .. } => Error::AmbiguousRelocation {
            relo,
            first,
            second,
        },
        other => other,
    };
    let local_type = local_btf.type_by_id(local_type_id).map_err(at)?;
    let local_name = local_btf.name(local_type.name_off).map_err(at)?;
    let local = spec::parse_local_spec(local_btf, local_type_id, access, kind).map_err(at)?;
    let relocating = RelocEvent::Relocating {
        program,
        relo,
        local_btf,
        local: &local,
    };
    if kind == RelocKind::TypeIdLocal {
        sink.event(relocating);
        let id = u64::from(local_type_id);
        let res = Resolution {
            orig_val: id,
            new_val: id,
            validate: false,
            ..Resolution::default()
        };
        return Ok(Resolved {
            res,
            matches: Vec::new(),
        });
    }
    if local_name.is_empty() {
        sink.event(relocating);
        return Err(Error::BadRelocation {
            relo,
            reason: "relocation against an anonymous type",
        });
    }
    if !cache.lists.contains_key(&local_type_id) {
        let list = index.candidates(local_name, local_type.kind())?;
        sink.event(RelocEvent::CandidatesFound {
            local_btf,
            local_type_id,
            targets,
            candidates: &list,
        });
        cache.lists.try_reserve(1)?;
        cache.lists.insert(local_type_id, list);
    }
    let cands = cache
        .lists
        .get_mut(&local_type_id)
        .ok_or(Error::OutOfMemory)?;
    sink.event(relocating);
    let mut chosen: Option<Resolution> = None;
    let mut matches: Vec<(Candidate, MatchedSpec<'t>)> = Vec::new();
    for (i, cand) in cands.iter().enumerate() {
        let targ_btf = targets.btf(cand.source);
        let targ = matching::spec_match(local_btf, &local, targ_btf, cand.id).map_err(at)?;
        sink.event(RelocEvent::CandidateTried {
            program,
            relo,
            index: i,
            target_btf: targ_btf,
            candidate_id: cand.id,
            kind,
            matched: targ.as_ref(),
        });
        let Some(targ) = targ else {
            continue;
        };
        let res =
            calc::calc_relo(local_btf, &local, targ_btf, Some(&targ), target_is_le).map_err(at)?;
        if let (Some(first_res), Some((first, first_spec))) = (&chosen, matches.first()) {
            // All matching candidates must agree, or the relocation is ambiguous.
            if targ.bit_offset != first_spec.bit_offset
                || res.poison != first_res.poison
                || res.new_val != first_res.new_val
            {
                sink.event(RelocEvent::Ambiguity {
                    program,
                    relo,
                    candidate_bit_offset: targ.bit_offset,
                    candidate: &res,
                    first_bit_offset: first_spec.bit_offset,
                    first: first_res,
                });
                return Err(Error::AmbiguousRelocation {
                    relo,
                    first: first.id,
                    second: cand.id,
                });
            }
        } else {
            chosen = Some(res);
        }
        // Exact: one candidate matches almost always, and every relocation keeps its list.
        matches.try_reserve_exact(1)?;
        matches.push((*cand, MatchedSpec::of(&targ)?));
    }
    match chosen {
        Some(res) => {
            // Later relocations of this local type only consider the candidates that matched.
            // `matches` is a subsequence of `cands`, so one merge pass prunes the list.
            let mut next = 0;
            cands.retain(|c| {
                let keep = matches.get(next).is_some_and(|(m, _)| m == c);
                next += usize::from(keep);
                keep
            });
            Ok(Resolved { res, matches })
        }
        None => {
            sink.event(RelocEvent::NoMatch { program, relo });
            let mut res = calc::calc_relo(local_btf, &local, targets.main(), None, target_is_le)
                .map_err(at)?;
            if res.poison.is_some() && cands.is_empty() {
                res.poison = Some(PoisonReason::NoCandidate);
            }
            Ok(Resolved { res, matches })
        }
    }
}
