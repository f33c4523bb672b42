//! From a machine's identity (os-release, `uname -r`, `uname -m`) to the archive folders
//! `DISTRO/VERSION/ARCH` its kernel may be filed under, in the order a careful person would
//! look, each with the rule that led there.
//!
//! BTFHub's folder rules differ per distribution ([`FOLDER_RULES`]): the RHEL family and Amazon
//! Linux file kernels under the major version (`rhel/8`, `amzn/2`; Amazon Linux 1, whose
//! `VERSION_ID` is `2018.03`, under `amzn/1`), Ubuntu, Fedora and SLES under the full
//! `VERSION_ID` (`ubuntu/20.04`, `sles/15.3`), and the machine folder of `aarch64` is `arm64`.

use super::os_release::OsRelease;
use crate::error::Result;
use crate::fallible;
use alloc::string::String;
use alloc::vec::Vec;

/// How `VERSION_ID` becomes the version folder of a distribution.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VersionFolder {
    /// The whole `VERSION_ID` (`20.04`, `15.3`, `34`).
    Full,
    /// Up to the first dot (`8.6` → `8`, `7.9` → `7`).
    Major,
    /// Amazon Linux: `2` and `2023` as they are, Amazon Linux 1's `2018.03` → `1`.
    Amazon,
}

/// BTFHub's version folder per distribution `ID`; an `ID` not listed uses its full
/// `VERSION_ID`.
pub const FOLDER_RULES: &[(&str, VersionFolder)] = &[
    ("ubuntu", VersionFolder::Full),
    ("debian", VersionFolder::Major),
    ("fedora", VersionFolder::Full),
    ("sles", VersionFolder::Full),
    ("centos", VersionFolder::Major),
    ("rhel", VersionFolder::Major),
    ("ol", VersionFolder::Major),
    ("rocky", VersionFolder::Major),
    ("almalinux", VersionFolder::Major),
    ("amzn", VersionFolder::Amazon),
];

/// Ubuntu release codenames (`UBUNTU_CODENAME` / `VERSION_CODENAME`) to their version
/// folders: how an Ubuntu derivative (Linux Mint, Pop!_OS, elementary OS, Zorin) that runs
/// Ubuntu's kernel finds it.
pub const UBUNTU_CODENAMES: &[(&str, &str)] = &[
    ("xenial", "16.04"),
    ("bionic", "18.04"),
    ("focal", "20.04"),
    ("jammy", "22.04"),
    ("noble", "24.04"),
];

/// Debian release codenames to their version folders, for Debian derivatives.
pub const DEBIAN_CODENAMES: &[(&str, &str)] = &[
    ("stretch", "9"),
    ("buster", "10"),
    ("bullseye", "11"),
    ("bookworm", "12"),
    ("trixie", "13"),
];

/// BTFHub's machine folder of a `uname -m` value (or of Debian's spelling of it):
/// `aarch64` is `arm64`, `amd64` is `x86_64`.
pub fn arch_folder(machine: &str) -> &str {
    match machine {
        "aarch64" => "arm64",
        "amd64" => "x86_64",
        other => other,
    }
}

/// Why a folder was tried.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rule {
    /// `ID`, `VERSION_ID` and `uname -m` as they are.
    Exact,
    /// `uname -m` → BTFHub's machine folder (`aarch64` → `arm64`).
    Arch,
    /// `VERSION_ID` → the distribution's version folder ([`FOLDER_RULES`]).
    Version,
    /// An `ID_LIKE` entry with its version folder.
    IdLike,
    /// An Ubuntu derivative through `UBUNTU_CODENAME` / `VERSION_CODENAME`.
    UbuntuCodename,
    /// A Debian derivative through `VERSION_CODENAME`.
    DebianCodename,
    /// openSUSE Leap 15.3 and later run the SLES service pack's kernel (`sles/15.N`).
    LeapOnSles,
}

impl Rule {
    /// The rule's name, as the CLI's JSON gives it.
    pub fn name(self) -> &'static str {
        match self {
            Rule::Exact => "exact",
            Rule::Arch => "arch",
            Rule::Version => "version",
            Rule::IdLike => "id_like",
            Rule::UbuntuCodename => "ubuntu_codename",
            Rule::DebianCodename => "debian_codename",
            Rule::LeapOnSles => "leap_on_sles",
        }
    }

    /// Whether the folder belongs to another distribution than `ID` (`like` matches).
    pub fn is_like(self) -> bool {
        matches!(
            self,
            Rule::IdLike | Rule::UbuntuCodename | Rule::DebianCodename | Rule::LeapOnSles
        )
    }
}

/// One folder to look in: `DISTRO/VERSION/ARCH`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Folder {
    /// Distribution folder.
    pub distro: String,
    /// Version folder.
    pub version: String,
    /// Machine folder.
    pub arch: String,
    /// Why it is tried; `arch_alias` says whether the machine was renamed too.
    pub rule: Rule,
    /// Whether `arch` is the BTFHub spelling of a different `uname -m` (`arm64`).
    pub arch_alias: bool,
}

/// The version folder of `version_id` under `distro`'s rule.
pub fn version_folder<'a>(distro: &str, version_id: &'a str) -> &'a str {
    let rule = FOLDER_RULES
        .iter()
        .find(|(id, _)| *id == distro)
        .map_or(VersionFolder::Full, |(_, rule)| *rule);
    let major = version_id.split('.').next().unwrap_or(version_id);
    match rule {
        VersionFolder::Full => version_id,
        VersionFolder::Major => major,
        // Amazon Linux 1 is versioned by date (2015.09 ... 2018.03); 2 and 2023 are majors.
        VersionFolder::Amazon if major.len() == 4 && major.starts_with("201") => "1",
        VersionFolder::Amazon => major,
    }
}

fn lookup<'a>(table: &'a [(&str, &'a str)], key: &str) -> Option<&'a str> {
    table.iter().find(|(k, _)| *k == key).map(|(_, v)| *v)
}

/// The folders to try for `os` on `machine`, most specific first, without repeats.
pub fn folders(os: &OsRelease, machine: &str) -> Result<Vec<Folder>> {
    let mut out = Vec::new();
    let version = os.version_id.as_str();
    if version.is_empty() {
        // A rolling release (Arch, Gentoo, Fedora Rawhide): no version folder to name.
        return Ok(out);
    }
    add(&mut out, &os.id, version, machine, Rule::Exact)?;
    add(
        &mut out,
        &os.id,
        version_folder(&os.id, version),
        machine,
        Rule::Version,
    )?;
    if os.id == "opensuse-leap"
        && let Some(("15", minor)) = version.split_once('.')
        && minor.parse::<u32>().is_ok_and(|m| m >= 3)
    {
        add(&mut out, "sles", version, machine, Rule::LeapOnSles)?;
    }
    let codename = if os.ubuntu_codename.is_empty() {
        &os.version_codename
    } else {
        &os.ubuntu_codename
    };
    if os.id != "ubuntu"
        && let Some(ubuntu) = lookup(UBUNTU_CODENAMES, codename)
    {
        add(&mut out, "ubuntu", ubuntu, machine, Rule::UbuntuCodename)?;
    }
    if os.id != "debian"
        && os.ubuntu_codename.is_empty()
        && let Some(debian) = lookup(DEBIAN_CODENAMES, &os.version_codename)
    {
        add(&mut out, "debian", debian, machine, Rule::DebianCodename)?;
    }
    for like in os.like() {
        add(
            &mut out,
            like,
            version_folder(like, version),
            machine,
            Rule::IdLike,
        )?;
    }
    Ok(out)
}

/// Add `distro/version/machine`, then the same with BTFHub's machine folder if it differs,
/// unless already listed (an earlier rule reached it first).
fn add(
    out: &mut Vec<Folder>,
    distro: &str,
    version: &str,
    machine: &str,
    rule: Rule,
) -> Result<()> {
    // An empty component (`VERSION_ID=".5"` has no major version) names no folder.
    if distro.is_empty() || version.is_empty() || machine.is_empty() {
        return Ok(());
    }
    let alias = arch_folder(machine);
    let arches: &[(&str, bool)] = if alias == machine {
        &[(machine, false)]
    } else {
        &[(machine, false), (alias, true)]
    };
    for &(arch, arch_alias) in arches {
        if out
            .iter()
            .any(|f| f.distro == distro && f.version == version && f.arch == arch)
        {
            continue;
        }
        let folder = Folder {
            distro: fallible::to_string(distro)?,
            version: fallible::to_string(version)?,
            arch: fallible::to_string(arch)?,
            rule,
            arch_alias,
        };
        fallible::push(out, folder)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::format;

    fn tried(text: &str, machine: &str) -> Vec<String> {
        let os = OsRelease::parse(text.as_bytes()).unwrap();
        folders(&os, machine)
            .unwrap()
            .iter()
            .map(|f| format!("{}/{}/{} {}", f.distro, f.version, f.arch, f.rule.name()))
            .collect()
    }

    #[test]
    fn arch_folders_are_btfhubs() {
        assert_eq!(arch_folder("aarch64"), "arm64");
        assert_eq!(arch_folder("amd64"), "x86_64");
        assert_eq!(arch_folder("x86_64"), "x86_64");
        assert_eq!(arch_folder("s390x"), "s390x");
    }

    #[test]
    fn version_folders_follow_btfhub() {
        assert_eq!(version_folder("rhel", "8.6"), "8");
        assert_eq!(version_folder("ubuntu", "20.04"), "20.04");
        assert_eq!(version_folder("sles", "15.3"), "15.3");
        assert_eq!(version_folder("amzn", "2018.03"), "1");
        assert_eq!(version_folder("amzn", "2"), "2");
        assert_eq!(version_folder("amzn", "2023"), "2023");
        assert_eq!(version_folder("unknown", "1.2"), "1.2");
    }

    #[test]
    fn rocky_on_arm_tries_its_own_then_rhel() {
        assert_eq!(
            tried(
                "ID=\"rocky\"\nID_LIKE=\"rhel centos fedora\"\nVERSION_ID=\"8.6\"\n",
                "aarch64"
            ),
            [
                "rocky/8.6/aarch64 exact",
                "rocky/8.6/arm64 exact",
                "rocky/8/aarch64 version",
                "rocky/8/arm64 version",
                "rhel/8/aarch64 id_like",
                "rhel/8/arm64 id_like",
                "centos/8/aarch64 id_like",
                "centos/8/arm64 id_like",
                "fedora/8.6/aarch64 id_like",
                "fedora/8.6/arm64 id_like",
            ]
        );
    }

    #[test]
    fn no_folder_has_an_empty_component() {
        // Found by the os_release fuzz target: `VERSION_ID=".6"` has no major version.
        assert_eq!(
            tried("ID=rocky\nVERSION_ID=.6\n", "x86_64"),
            ["rocky/.6/x86_64 exact"]
        );
    }

    #[test]
    fn mint_goes_to_ubuntu_by_codename() {
        assert_eq!(
            tried(
                "ID=linuxmint\nID_LIKE=\"ubuntu debian\"\nVERSION_ID=\"21.2\"\n\
                 VERSION_CODENAME=victoria\nUBUNTU_CODENAME=jammy\n",
                "x86_64"
            ),
            [
                "linuxmint/21.2/x86_64 exact",
                "ubuntu/22.04/x86_64 ubuntu_codename",
                "ubuntu/21.2/x86_64 id_like",
                "debian/21/x86_64 id_like",
            ]
        );
    }
}
