//! The running machine's identity, read with `std` (the C ABI and the CLI share it): the
//! kernel release and machine from `/proc` (they are the host's even in a container), and
//! the os-release and `sys/kernel/btf/vmlinux` under a root directory (`/`, or `/host` where a
//! container mounts the host).

use std::io;
use std::path::Path;
use std::string::String;

/// Where os-release(5) may be, relative to the root, in the order it says to look.
pub const OS_RELEASE_PATHS: [&str; 2] = ["etc/os-release", "usr/lib/os-release"];
/// The kernel's own BTF, relative to the root.
pub const VMLINUX: &str = "sys/kernel/btf/vmlinux";

/// `uname -r`: `/proc/sys/kernel/osrelease`.
pub fn release() -> io::Result<String> {
    let text = std::fs::read_to_string("/proc/sys/kernel/osrelease")?;
    Ok(String::from(text.trim_end()))
}

/// `uname -m`: `/proc/sys/kernel/arch` (Linux 6.1+), else the architecture this program
/// was built for (the same but for a 32-bit program on a 64-bit kernel).
pub fn machine() -> String {
    std::fs::read_to_string("/proc/sys/kernel/arch")
        .map(|text| String::from(text.trim_end()))
        .unwrap_or_else(|_| String::from(std::env::consts::ARCH))
}

/// The os-release text under `root`: `etc/os-release`, else `usr/lib/os-release`; `None`
/// when neither exists.
pub fn os_release(root: &Path) -> io::Result<Option<std::vec::Vec<u8>>> {
    for rel in OS_RELEASE_PATHS {
        match std::fs::read(root.join(rel)) {
            Ok(text) => return Ok(Some(text)),
            Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
            Err(e) => return Err(e),
        }
    }
    Ok(None)
}

/// Whether the kernel under `root` has its own BTF.
pub fn native(root: &Path) -> bool {
    root.join(VMLINUX).exists()
}
