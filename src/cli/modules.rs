//! Kernel module BTFs found next to the kernel's: with `/sys/kernel/btf/vmlinux` as INPUT, the
//! other files of `/sys/kernel/btf/` are the loaded modules' BTFs, split on vmlinux, and libbpf
//! searches them for a relocation's candidates when vmlinux has none. `--module-btf-dir DIR`
//! takes them from DIR instead (a copy of a machine's `/sys/kernel/btf/`, say), and
//! `--no-modules` leaves them out.

use super::{CliResult, SYSFS_BTF_DIR, SYSFS_VMLINUX, context};
use std::path::{Path, PathBuf};

/// The kernel's own BTF in such a directory; every other file is a module's.
const VMLINUX: &str = "vmlinux";

/// Where module BTFs come from.
#[derive(clap::Args, Debug, Default)]
pub struct ModuleArgs {
    /// Directory of kernel module BTFs split on INPUT (every file but `vmlinux` and hidden
    /// ones), as in /sys/kernel/btf/, which is the default when INPUT is
    /// /sys/kernel/btf/vmlinux.
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
        for entry in std::fs::read_dir(dir).map_err(context(dir.display()))? {
            let entry = entry.map_err(context(dir.display()))?;
            let name = entry.file_name();
            if name == VMLINUX || name.as_encoded_bytes().starts_with(b".") {
                continue;
            }
            let path = entry.path();
            if !path.is_file() || std::fs::canonicalize(&path).ok() == input {
                continue;
            }
            found.push(path);
        }
        found.sort();
        Ok(found)
    }
}
