//! Runtime selection: on the machine a program runs on, find the minimized BTF of its kernel
//! in the archive the program ships (`btfgen batch --dedup --archive`, a BTFHub tree, bcc's
//! layout), or know that the kernel has its own BTF.
//!
//! [`os_release`] reads the distribution's identity, [`identity`] turns it into the folders
//! to look in (BTFHub's per-distribution rules in one table), [`archive`] reads the archive's
//! kernels and copies out one; [`choose`] decides, in this order: `native` (the kernel has
//! `/sys/kernel/btf/vmlinux`), the folders (`exact`, `normalized`, `like`), the kernel release
//! alone when exactly one kernel of the machine's arch has that name (`release`), optionally
//! the byte-identical outputs of the release's two neighbours (`series`), else `none` with the
//! nearest entries. Never a different kernel release, except through `series`.

pub mod archive;
#[cfg(feature = "std")]
pub mod host;
pub mod identity;
pub mod os_release;

use crate::error::Result;
use crate::fallible;
use alloc::string::String;
use alloc::vec::Vec;
use archive::{Catalogue, Entry};
use core::cmp::Ordering;
use identity::{Folder, Rule};
use os_release::OsRelease;

/// How a selection matched.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MatchKind {
    /// The kernel has its own BTF (`/sys/kernel/btf/vmlinux`): nothing to load.
    Native,
    /// `ID/VERSION_ID/uname -m/uname -r` as they are.
    Exact,
    /// After a normalization of the version or machine folder ([`Selection::rule`]).
    Normalized,
    /// Under another distribution: `ID_LIKE` or a derivative rule ([`Selection::rule`]).
    Like,
    /// The kernel release alone: the only kernel of that name for the machine's arch.
    Release,
    /// The release is absent, its two nearest neighbours of the same flavour share one output.
    Series,
    /// No entry for this kernel.
    None,
}

impl MatchKind {
    /// The kind's name, as the CLI prints it.
    pub fn name(self) -> &'static str {
        match self {
            MatchKind::Native => "native",
            MatchKind::Exact => "exact",
            MatchKind::Normalized => "normalized",
            MatchKind::Like => "like",
            MatchKind::Release => "release",
            MatchKind::Series => "series",
            MatchKind::None => "none",
        }
    }
}

/// What to select for.
#[derive(Debug, Clone, Copy)]
pub struct Request<'a> {
    /// The host's os-release, if known.
    pub os_release: Option<&'a OsRelease>,
    /// `uname -r`.
    pub release: &'a str,
    /// `uname -m`.
    pub machine: &'a str,
    /// Whether the kernel has its own BTF.
    pub native: bool,
    /// Allow `series` matches.
    pub series: bool,
}

/// One key looked for: `DISTRO/VERSION/ARCH/RELEASE`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Key {
    /// Distribution folder.
    pub distro: String,
    /// Version folder.
    pub version: String,
    /// Machine folder.
    pub arch: String,
    /// Kernel release.
    pub release: String,
}

/// The outcome of [`choose`].
#[derive(Debug, Clone)]
pub struct Selection {
    /// How it matched.
    pub kind: MatchKind,
    /// The rule of a `normalized` or `like` match (for `normalized`, [`Rule::Arch`] when only
    /// the machine folder was renamed).
    pub rule: Option<Rule>,
    /// The key matched (for `none` and `native`: the first key looked for, or the identity).
    pub key: Key,
    /// Index of the chosen entry in the catalogue.
    pub entry: Option<usize>,
    /// `series`: the two neighbours; `none`: the nearest entries, or the kernels that share
    /// the release name under several distributions.
    pub neighbours: Vec<usize>,
    /// Every key looked for, in order.
    pub tried: Vec<Key>,
}

fn key(distro: &str, version: &str, arch: &str, release: &str) -> Result<Key> {
    Ok(Key {
        distro: fallible::to_string(distro)?,
        version: fallible::to_string(version)?,
        arch: fallible::to_string(arch)?,
        release: fallible::to_string(release)?,
    })
}

fn folder_key(folder: &Folder, release: &str) -> Result<Key> {
    key(&folder.distro, &folder.version, &folder.arch, release)
}

fn in_folder(entry: &Entry, folder: &Folder) -> bool {
    entry.distro() == folder.distro
        && entry.version() == folder.version
        && entry.arch() == folder.arch
}

/// Decide which entry of `catalogue` is the kernel's (see the module's documentation).
pub fn choose(catalogue: &Catalogue, request: &Request<'_>) -> Result<Selection> {
    let folders = match request.os_release {
        Some(os) => identity::folders(os, request.machine)?,
        None => Vec::new(),
    };
    let identity_key = match (request.os_release, folders.first()) {
        (_, Some(first)) => folder_key(first, request.release)?,
        (Some(os), None) => key(&os.id, "", request.machine, request.release)?,
        (None, None) => key("", "", request.machine, request.release)?,
    };
    let mut selection = Selection {
        kind: MatchKind::None,
        rule: None,
        key: identity_key,
        entry: None,
        neighbours: Vec::new(),
        tried: Vec::new(),
    };
    if request.native {
        selection.kind = MatchKind::Native;
        return Ok(selection);
    }
    let entries = &catalogue.entries;
    for folder in &folders {
        fallible::push(&mut selection.tried, folder_key(folder, request.release)?)?;
        let found = entries
            .iter()
            .position(|e| in_folder(e, folder) && e.release() == request.release);
        if let Some(index) = found {
            selection.key = folder_key(folder, request.release)?;
            selection.entry = Some(index);
            (selection.kind, selection.rule) = match folder.rule {
                Rule::Exact if !folder.arch_alias => (MatchKind::Exact, None),
                Rule::Exact => (MatchKind::Normalized, Some(Rule::Arch)),
                rule if rule.is_like() => (MatchKind::Like, Some(rule)),
                rule => (MatchKind::Normalized, Some(rule)),
            };
            return Ok(selection);
        }
    }

    // The release alone, among the kernels of this machine's arch.
    let arch_alias = identity::arch_folder(request.machine);
    fallible::push(
        &mut selection.tried,
        key("*", "*", request.machine, request.release)?,
    )?;
    if arch_alias != request.machine {
        fallible::push(
            &mut selection.tried,
            key("*", "*", arch_alias, request.release)?,
        )?;
    }
    let mut same_name = Vec::new();
    for (index, e) in entries.iter().enumerate() {
        if e.release() == request.release && (e.arch() == request.machine || e.arch() == arch_alias)
        {
            fallible::push(&mut same_name, index)?;
        }
    }
    if let [only] = same_name.as_slice()
        && let Some(e) = entries.get(*only)
    {
        selection.key = key(e.distro(), e.version(), e.arch(), e.release())?;
        selection.entry = Some(*only);
        selection.kind = MatchKind::Release;
        return Ok(selection);
    }
    if !same_name.is_empty() {
        // By path, whatever the archive's order.
        same_name.sort_unstable_by(|a, b| {
            let path = |i: &usize| entries.get(*i).map(|e| e.path.as_str());
            path(a).cmp(&path(b))
        });
        selection.neighbours = same_name;
        return Ok(selection);
    }

    // The folder the kernel belongs in: the first one tried that the archive has.
    let Some(home) = folders
        .iter()
        .find(|f| entries.iter().any(|e| in_folder(e, f)))
    else {
        return Ok(selection);
    };
    selection.key = folder_key(home, request.release)?;
    if request.series
        && let Some((below, above)) = series_neighbours(entries, home, request.release)
        && entries.get(below).map(|e| &e.content) == entries.get(above).map(|e| &e.content)
    {
        selection.kind = MatchKind::Series;
        selection.entry = Some(below);
        fallible::push(&mut selection.neighbours, below)?;
        fallible::push(&mut selection.neighbours, above)?;
        return Ok(selection);
    }
    let (below, above) = nearest(entries, home, request.release, |_| true);
    for index in [below, above].into_iter().flatten() {
        fallible::push(&mut selection.neighbours, index)?;
    }
    Ok(selection)
}

/// The release's nearest neighbours in `folder` with the same upstream version and flavour.
fn series_neighbours(entries: &[Entry], folder: &Folder, release: &str) -> Option<(usize, usize)> {
    let upstream = |r: &str| r.split('-').next().unwrap_or(r).len();
    let base = release.get(..upstream(release))?;
    let (below, above) = nearest(entries, folder, release, |r| {
        r.get(..upstream(r)) == Some(base) && same_shape(r, release)
    });
    Some((below?, above?))
}

/// Indices of the entries of `folder` (passing `keep`) just below and just above `release`.
fn nearest(
    entries: &[Entry],
    folder: &Folder,
    release: &str,
    keep: impl Fn(&str) -> bool,
) -> (Option<usize>, Option<usize>) {
    let mut below: Option<usize> = None;
    let mut above: Option<usize> = None;
    let release_of = |i: Option<usize>| i.and_then(|i| entries.get(i)).map(Entry::release);
    for (index, e) in entries.iter().enumerate() {
        if !in_folder(e, folder) || !keep(e.release()) {
            continue;
        }
        match compare_releases(e.release(), release) {
            Ordering::Less => {
                if release_of(below)
                    .is_none_or(|b| compare_releases(e.release(), b) == Ordering::Greater)
                {
                    below = Some(index);
                }
            }
            Ordering::Greater => {
                if release_of(above)
                    .is_none_or(|a| compare_releases(e.release(), a) == Ordering::Less)
                {
                    above = Some(index);
                }
            }
            Ordering::Equal => {}
        }
    }
    (below, above)
}

/// Splits a release into runs of digits and of other characters.
fn runs(s: &str) -> impl Iterator<Item = &str> {
    let mut rest = s;
    core::iter::from_fn(move || {
        let first = rest.chars().next()?;
        let digit = first.is_ascii_digit();
        let end = rest
            .find(|c: char| c.is_ascii_digit() != digit)
            .unwrap_or(rest.len());
        let (run, tail) = rest.split_at(end);
        rest = tail;
        Some(run)
    })
}

/// Kernel releases in version order: digit runs compare as numbers, the rest as text.
pub fn compare_releases(a: &str, b: &str) -> Ordering {
    let mut a_runs = runs(a);
    let mut b_runs = runs(b);
    // Bounded by the shorter string's runs.
    loop {
        match (a_runs.next(), b_runs.next()) {
            (None, None) => return Ordering::Equal,
            (None, Some(_)) => return Ordering::Less,
            (Some(_), None) => return Ordering::Greater,
            (Some(x), Some(y)) => {
                let order = if x.starts_with(|c: char| c.is_ascii_digit())
                    && y.starts_with(|c: char| c.is_ascii_digit())
                {
                    let x = x.trim_start_matches('0');
                    let y = y.trim_start_matches('0');
                    x.len().cmp(&y.len()).then_with(|| x.cmp(y))
                } else {
                    x.cmp(y)
                };
                if order != Ordering::Equal {
                    return order;
                }
            }
        }
    }
}

/// Whether two releases differ only in their numbers (`5.4.0-100-aws` and `5.4.0-99-aws`:
/// the same flavour; `-generic` or `.el8_4` differ).
fn same_shape(a: &str, b: &str) -> bool {
    let mut a_runs = runs(a);
    let mut b_runs = runs(b);
    loop {
        match (a_runs.next(), b_runs.next()) {
            (None, None) => return true,
            (Some(x), Some(y)) => {
                let digits = |r: &str| r.starts_with(|c: char| c.is_ascii_digit());
                if digits(x) != digits(y) || (!digits(x) && x != y) {
                    return false;
                }
            }
            _ => return false,
        }
    }
}

/// Read `archive`'s index and choose; returns the catalogue with the selection.
pub fn select_in(archive: &[u8], request: &Request<'_>) -> Result<(Catalogue, Selection)> {
    let catalogue = if request.native {
        Catalogue::default()
    } else {
        Catalogue::read(archive)?
    };
    let selection = choose(&catalogue, request)?;
    Ok((catalogue, selection))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn release_order_is_numeric() {
        assert_eq!(
            compare_releases("5.4.0-99-generic", "5.4.0-100-generic"),
            Ordering::Less
        );
        assert_eq!(
            compare_releases("4.18.0-305.el8", "4.18.0-80.el8"),
            Ordering::Greater
        );
        assert_eq!(compare_releases("5.4", "5.4.0"), Ordering::Less);
        assert!(same_shape("5.4.0-99-aws", "5.4.0-1001-aws"));
        assert!(!same_shape("5.4.0-99-aws", "5.4.0-99-generic"));
        assert!(!same_shape("4.18.0-305.el8", "4.18.0-305.3.el8"));
    }
}
