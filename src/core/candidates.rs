//! Candidate target types: every type in the target BTFs whose essential name equals the local
//! type's. The index is built in one pass over each target BTF for just the names the
//! relocations ask for, and shared by every relocation and object of a run.

use super::matching::kinds_core_compat;
use super::spec::{essential_len, essential_name};
use crate::btf::{Btf, Kind, KindSet, NameFilter};
use crate::error::Result;
use crate::fallible;
use alloc::string::String;
use alloc::vec::Vec;
use hashbrown::HashMap;

/// The BTFs relocations are resolved against: the main (vmlinux or custom) BTF, and kernel
/// module BTFs split on it, searched only when the main BTF has no candidate (as libbpf does).
#[derive(Debug, Clone)]
pub struct Targets<'t> {
    main: &'t Btf<'t>,
    modules: Vec<&'t Btf<'t>>,
}

impl<'t> Targets<'t> {
    /// Targets with only a main BTF.
    pub fn new(main: &'t Btf<'t>) -> Self {
        Targets {
            main,
            modules: Vec::new(),
        }
    }

    /// Add a module BTF (split on the main BTF).
    pub fn add_module(&mut self, module: &'t Btf<'t>) -> Result<()> {
        fallible::push(&mut self.modules, module)
    }

    /// The main BTF.
    pub fn main(&self) -> &'t Btf<'t> {
        self.main
    }

    /// The BTF a candidate lives in.
    pub fn btf(&self, source: BtfSource) -> &'t Btf<'t> {
        match source {
            BtfSource::Main => self.main,
            BtfSource::Module(i) => self.modules.get(i as usize).copied().unwrap_or(self.main),
        }
    }

    /// Number of module BTFs.
    pub fn module_count(&self) -> usize {
        self.modules.len()
    }

    fn sources(&self) -> impl Iterator<Item = (BtfSource, &'t Btf<'t>)> + '_ {
        let modules = self
            .modules
            .iter()
            .enumerate()
            .map(|(i, b)| (BtfSource::Module(i as u16), *b));
        core::iter::once((BtfSource::Main, self.main)).chain(modules)
    }
}

/// Which target BTF a type id belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum BtfSource {
    /// The main BTF.
    Main,
    /// Module BTF number `n` (in the order added).
    Module(u16),
}

/// One candidate target type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Candidate {
    /// The BTF it is in.
    pub source: BtfSource,
    /// Its type id there.
    pub id: u32,
    /// Its kind.
    pub kind: Kind,
}

/// Essential name → candidates in libbpf's search order (main BTF by id, then each module).
#[derive(Debug, Default)]
pub struct CandidateIndex {
    by_name: HashMap<String, Indexed>,
}

/// The candidates of one name, of the kinds scanned for so far.
#[derive(Debug, Default)]
struct Indexed {
    kinds: KindSet,
    candidates: Vec<Candidate>,
}

/// The target kinds a local type of kind `kind` can match ([`kinds_core_compat`]).
fn compatible_kinds(kind: Kind) -> KindSet {
    match kind {
        Kind::Enum | Kind::Enum64 => KindSet::EMPTY.with(Kind::Enum).with(Kind::Enum64),
        other => KindSet::EMPTY.with(other),
    }
}

/// What an index still needs: names with the kinds wanted of them, and the filter that lets
/// their candidates through a scan. From [`CandidateIndex::plan`], for
/// [`CandidateIndex::absorb`].
#[derive(Debug)]
pub struct ScanPlan<'n> {
    missing: HashMap<&'n str, KindSet>,
    filter: NameFilter,
    /// The lengths of the missing names: bit `n` for length `n` below 64, bit 63 also for
    /// every longer one. Most types a scan lets through only share a prefix with a wanted
    /// name, and their length rejects them before any UTF-8 check or lookup.
    lengths: u64,
}

impl ScanPlan<'_> {
    fn may_want_len(&self, len: usize) -> bool {
        self.lengths & (1 << len.min(63)) != 0
    }
}

impl ScanPlan<'_> {
    /// The filter to scan each target BTF with ([`Btf::filtered`], [`Btf::parse_filtered`]).
    pub fn filter(&self) -> &NameFilter {
        &self.filter
    }

    /// Whether everything asked for is indexed already.
    pub fn is_empty(&self) -> bool {
        self.missing.is_empty()
    }
}

impl CandidateIndex {
    /// An empty index.
    pub fn new() -> Self {
        Self::default()
    }

    /// What scanning the targets must find for every `(essential name, local kind)` in
    /// `wanted` to be indexed.
    pub fn plan<'n>(
        &self,
        wanted: impl IntoIterator<Item = (&'n str, Kind)>,
    ) -> Result<ScanPlan<'n>> {
        let mut missing: HashMap<&str, KindSet> = HashMap::new();
        for (name, kind) in wanted {
            let kinds = compatible_kinds(kind);
            let have = self.by_name.get(name).map_or(KindSet::EMPTY, |i| i.kinds);
            if have.contains_all(kinds) {
                continue;
            }
            missing.try_reserve(1)?;
            // A name rescanned for more kinds is rescanned for all of them, so that its list
            // stays in search order.
            let entry = missing.entry(name).or_insert(have);
            *entry = entry.union(kinds);
        }
        let mut filter = NameFilter::new()?;
        let mut lengths = 0;
        for (name, kinds) in &missing {
            filter.add(name.as_bytes(), *kinds);
            lengths |= 1 << name.len().min(63);
        }
        Ok(ScanPlan {
            missing,
            filter,
            lengths,
        })
    }

    /// Index `plan`'s names from what scanning the targets with its filter let through:
    /// `found` lists, for each target BTF in libbpf's search order (the main BTF's base if it
    /// is split, the main BTF, then each module), its source and the ids, in id order.
    pub fn absorb(
        &mut self,
        plan: &ScanPlan<'_>,
        targets: &Targets<'_>,
        found: &[(BtfSource, &[u32])],
    ) -> Result<()> {
        let missing = &plan.missing;
        let mut lists: HashMap<&str, Vec<Candidate>> = HashMap::new();
        lists.try_reserve(missing.len())?;
        for &(source, ids) in found {
            let btf = targets.btf(source);
            for &id in ids {
                let (name_off, Some(kind)) = btf.name_off_and_kind(id)? else {
                    continue;
                };
                // What `Btf::name` reads; a name out of range or unterminated is nobody's
                // candidate.
                let Some(name) = btf.name_bytes(name_off) else {
                    continue;
                };
                let essential = essential_len(name);
                if !plan.may_want_len(essential) {
                    continue;
                }
                // A name that is not UTF-8 is nobody's candidate either.
                let Ok(name) = core::str::from_utf8(name) else {
                    continue;
                };
                if let Some((&key, kinds)) = missing.get_key_value(&name[..essential])
                    && kinds.contains(kind)
                {
                    // Capacity for every missing name was reserved above.
                    let list = lists.entry(key).or_default();
                    fallible::push(list, Candidate { source, id, kind })?;
                }
            }
        }
        self.by_name.try_reserve(missing.len())?;
        for (&name, &kinds) in missing {
            let candidates = lists.remove(name).unwrap_or_default();
            let indexed = Indexed { kinds, candidates };
            match self.by_name.get_mut(name) {
                Some(old) => *old = indexed,
                None => {
                    self.by_name.insert(fallible::to_string(name)?, indexed);
                }
            }
        }
        Ok(())
    }

    /// Make sure every `(essential name, local kind)` in `wanted` is indexed, scanning the
    /// targets once for everything not indexed yet.
    pub fn ensure<'n>(
        &mut self,
        targets: &Targets<'_>,
        wanted: impl IntoIterator<Item = (&'n str, Kind)>,
    ) -> Result<()> {
        let plan = self.plan(wanted)?;
        if plan.is_empty() {
            return Ok(());
        }
        let mut found = Vec::new();
        for (source, btf) in targets.sources() {
            // The main BTF is searched from id 1 (through its base, if split), modules from
            // their first own id, as libbpf does.
            let base = btf.base().filter(|_| source == BtfSource::Main);
            for scanned in base.into_iter().chain(Some(btf)) {
                fallible::push(&mut found, (source, scanned.filtered(plan.filter())?))?;
            }
        }
        let mut slices = fallible::vec_with_capacity(found.len())?;
        slices.extend(found.iter().map(|(source, ids)| (*source, &ids[..])));
        self.absorb(&plan, targets, &slices)
    }

    /// Candidates for a local type named `name` of kind `kind`: main-BTF candidates if there
    /// are any, else module candidates. `name` must have been passed to [`Self::ensure`].
    pub fn candidates(&self, name: &str, kind: Option<Kind>) -> Result<Vec<Candidate>> {
        let all = self
            .by_name
            .get(essential_name(name))
            .map_or(&[][..], |i| i.candidates.as_slice());
        let compatible = |c: &&Candidate| kinds_core_compat(Some(c.kind), kind);
        let in_main = all
            .iter()
            .filter(compatible)
            .any(|c| c.source == BtfSource::Main);
        let mut out = Vec::new();
        for c in all.iter().filter(compatible) {
            if (c.source == BtfSource::Main) == in_main {
                fallible::push(&mut out, *c)?;
            }
        }
        Ok(out)
    }
}
