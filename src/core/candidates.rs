//! Candidate target types: every type in the target BTFs whose essential name equals the local
//! type's. The index is built in one pass over each target BTF for just the names the
//! relocations ask for, and shared by every relocation and object of a run.

use super::matching::kinds_core_compat;
use super::spec::essential_name;
use crate::btf::{Btf, Kind};
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
    by_name: HashMap<String, Vec<Candidate>>,
}

impl CandidateIndex {
    /// An empty index.
    pub fn new() -> Self {
        Self::default()
    }

    /// Make sure every name in `names` (essential names) is indexed, scanning the targets once
    /// for all names not indexed yet.
    pub fn ensure<'n>(
        &mut self,
        targets: &Targets<'_>,
        names: impl IntoIterator<Item = &'n str>,
    ) -> Result<()> {
        let mut missing: HashMap<&str, ()> = HashMap::new();
        for name in names {
            if !self.by_name.contains_key(name) && !missing.contains_key(name) {
                missing.try_reserve(1)?;
                missing.insert(name, ());
            }
        }
        if missing.is_empty() {
            return Ok(());
        }
        // Most target types are rejected by the first two bytes of their name (a 64 Kibit
        // table) before any name is scanned or hashed. A one-byte essential name ("a___x")
        // is filed under (first byte, 0).
        let mut prefixes: Vec<u64> = fallible::vec_with_capacity(1024)?;
        prefixes.resize(1024, 0);
        let slot = |p: [u8; 2]| (usize::from(p[0]) << 8) | usize::from(p[1]);
        for name in missing.keys() {
            let b = name.as_bytes();
            let p = slot([
                b.first().copied().unwrap_or(0),
                b.get(1).copied().unwrap_or(0),
            ]);
            prefixes[p / 64] |= 1 << (p % 64);
        }
        let wanted = |p: usize| prefixes[p / 64] & (1 << (p % 64)) != 0;
        let mut found: HashMap<&str, Vec<Candidate>> = HashMap::new();
        found.try_reserve(missing.len())?;
        for (source, btf) in targets.sources() {
            // The main BTF is searched from id 1 (through its base, if split), modules from
            // their first own id, as libbpf does.
            let base = btf.base().filter(|_| source == BtfSource::Main);
            let headers = base
                .into_iter()
                .flat_map(|b| b.named_headers())
                .chain(btf.named_headers());
            for (id, kind, name) in headers {
                let Some(kind) = kind else { continue };
                let first = name.first().copied().unwrap_or(0);
                let second = if first == 0 {
                    0
                } else {
                    name.get(1).copied().unwrap_or(0)
                };
                if !wanted(slot([first, second])) && !wanted(slot([first, 0])) {
                    continue;
                }
                let Some(end) = name.iter().position(|&b| b == 0) else {
                    continue;
                };
                let Ok(name) = core::str::from_utf8(&name[..end]) else {
                    continue;
                };
                if let Some((&key, ())) = missing.get_key_value(essential_name(name)) {
                    // Capacity for every missing name was reserved above.
                    let list = found.entry(key).or_default();
                    fallible::push(list, Candidate { source, id, kind })?;
                }
            }
        }
        self.by_name.try_reserve(missing.len())?;
        for (name, ()) in missing {
            let list = found.remove(name).unwrap_or_default();
            self.by_name.insert(fallible::to_string(name)?, list);
        }
        Ok(())
    }

    /// Candidates for a local type named `name` of kind `kind`: main-BTF candidates if there
    /// are any, else module candidates. `name` must have been passed to [`Self::ensure`].
    pub fn candidates(&self, name: &str, kind: Option<Kind>) -> Result<Vec<Candidate>> {
        let all = self
            .by_name
            .get(essential_name(name))
            .map(Vec::as_slice)
            .unwrap_or(&[]);
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
