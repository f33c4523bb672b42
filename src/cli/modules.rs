//! Kernel module BTFs found next to the kernel's: with `/sys/kernel/btf/vmlinux` as INPUT, the
//! other files of `/sys/kernel/btf/` are the loaded modules' BTFs, split on vmlinux, and libbpf
//! searches them for a relocation's candidates when vmlinux has none. `--module-btf-dir DIR`
//! takes them from DIR instead (a copy of a machine's `/sys/kernel/btf/`, say, or a
//! distribution's tree of debug modules, `/usr/lib/debug/lib/modules/KVER/`, whose `.ko`
//! files are converted from DWARF to split BTF when they are needed), and `--no-modules`
//! leaves them out.

use super::{CliResult, SYSFS_BTF_DIR, SYSFS_VMLINUX, context};
use std::path::{Path, PathBuf};

/// The kernel's own BTF in such a directory; every other file is a module's.
const VMLINUX: &str = "vmlinux";

/// Where module BTFs come from.
#[derive(clap::Args, Debug, Default)]
pub struct ModuleArgs {
    /// Directory of kernel module BTFs split on INPUT (every file but `vmlinux` and hidden
    /// ones), as in /sys/kernel/btf/, which is the default when INPUT is
    /// /sys/kernel/btf/vmlinux; and the .ko and .ko.debug files of its subdirectories, as in
    /// /usr/lib/debug/lib/modules/KVER/ (debug modules are converted from DWARF, only when
    /// INPUT lacks a candidate and only those whose DWARF names a wanted type).
    #[arg(long, value_name = "DIR")]
    pub module_btf_dir: Option<PathBuf>,
    /// Do not take module BTFs from /sys/kernel/btf/ (or --module-btf-dir).
    #[arg(long, conflicts_with = "module_btf_dir")]
    pub no_modules: bool,
}

impl ModuleArgs {
    /// The module BTF files for `input`, sorted by name (libbpf takes the kernel's in load
    /// order, which a directory does not record; a name order is at least the same on every
    /// run). `input` itself is never one of them.
    pub fn module_btfs(&self, input: &Path) -> CliResult<Vec<PathBuf>> {
        let dir = match &self.module_btf_dir {
            Some(dir) => dir.as_path(),
            None if !self.no_modules && input == Path::new(SYSFS_VMLINUX) => {
                Path::new(SYSFS_BTF_DIR)
            }
            None => return Ok(Vec::new()),
        };
        let input = std::fs::canonicalize(input).ok();
        let mut found = Vec::new();
        collect(dir, 0, input.as_deref(), &mut found)?;
        found.sort();
        Ok(found)
    }
}

/// How deep below DIR module files are looked for (`kernel/drivers/net/ethernet/intel/...`
/// is 6 levels in a distribution's tree).
const MAX_DEPTH: usize = 16;

/// The module files of `dir` (at `depth` below DIR) into `found`: every regular file at the
/// top, `*.ko` and `*.ko.debug` files below; `vmlinux`, hidden entries and `input` left out.
fn collect(
    dir: &Path,
    depth: usize,
    input: Option<&Path>,
    found: &mut Vec<PathBuf>,
) -> CliResult<()> {
    for entry in std::fs::read_dir(dir).map_err(context(dir.display()))? {
        let entry = entry.map_err(context(dir.display()))?;
        let name = entry.file_name();
        let bytes = name.as_encoded_bytes();
        if name == VMLINUX || bytes.starts_with(b".") {
            continue;
        }
        let path = entry.path();
        if path.is_dir() {
            if depth < MAX_DEPTH {
                collect(&path, depth + 1, input, found)?;
            }
            continue;
        }
        let module = bytes.ends_with(b".ko") || bytes.ends_with(b".ko.debug");
        if !path.is_file()
            || (depth > 0 && !module)
            || std::fs::canonicalize(&path).ok().as_deref() == input
        {
            continue;
        }
        found.push(path);
    }
    Ok(())
}
