//! The running machine's identity, read with `std` (the C ABI and the CLI share it): the
//! kernel release and machine from `uname(2)` (the host's even in a container), and
//! the os-release and `sys/kernel/btf/vmlinux` under a root directory (`/`, or `/host` where a
//! container mounts the host).

use super::{OsRelease, Request};
use std::borrow::Cow;
use std::boxed::Box;
use std::io;
use std::path::{Path, PathBuf};
use std::string::String;
use std::vec::Vec;

/// Where os-release(5) may be, relative to the root, in the order it says to look.
pub const OS_RELEASE_PATHS: [&str; 2] = ["etc/os-release", "usr/lib/os-release"];
/// The kernel's own BTF, relative to the root.
pub const VMLINUX: &str = "sys/kernel/btf/vmlinux";
/// `uname -r`: the running kernel's release (`uname(2)`).
pub fn release() -> String {
    String::from(rustix::system::uname().release().to_string_lossy())
}

/// `uname -m`: the running kernel's machine (`uname(2)`).
pub fn machine() -> String {
    String::from(rustix::system::uname().machine().to_string_lossy())
}

/// The os-release file under `root` and its text: `etc/os-release`, else
/// `usr/lib/os-release`; `None` when neither exists.
pub fn os_release(root: &Path) -> Result<Option<(PathBuf, Vec<u8>)>, HostError> {
    for rel in OS_RELEASE_PATHS {
        let path = root.join(rel);
        match std::fs::read(&path) {
            Ok(text) => return Ok(Some((path, text))),
            Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
            Err(e) => return Err(HostError::new(path, e)),
        }
    }
    Ok(None)
}

/// Whether the kernel under `root` has its own BTF.
pub fn native(root: &Path) -> bool {
    root.join(VMLINUX).exists()
}

/// A machine's identity for [`Request`].
#[derive(Debug, Clone)]
pub struct Host {
    /// Its os-release, if it has one.
    pub os_release: Option<OsRelease>,
    /// `uname -r`.
    pub release: String,
    /// `uname -m`.
    pub machine: String,
    /// Whether its kernel has its own BTF.
    pub native: bool,
}

/// Why [`Host::read`] failed: the file, and what went wrong.
#[derive(Debug)]
pub struct HostError {
    /// The file that could not be read or parsed.
    pub path: PathBuf,
    /// The reason.
    pub error: Box<dyn std::error::Error + Send + Sync>,
}

impl HostError {
    fn new(path: PathBuf, error: impl std::error::Error + Send + Sync + 'static) -> Self {
        HostError {
            path,
            error: Box::new(error),
        }
    }
}

impl core::fmt::Display for HostError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "{}: {}", self.path.display(), self.error)
    }
}

impl std::error::Error for HostError {}

impl Host {
    /// The identity of the machine whose files are under `root`, each part overridable:
    /// `os_release` (a name for messages and the text; else `ROOT/etc/os-release`, then
    /// `ROOT/usr/lib/os-release`), `release` and `machine` (else the running kernel's).
    /// `native` holds only for the running kernel: the root's `vmlinux` says nothing of
    /// another release.
    pub fn read(
        root: &Path,
        os_release: Option<(&Path, &[u8])>,
        release: Option<&str>,
        machine: Option<&str>,
    ) -> Result<Host, HostError> {
        let running = self::release();
        let release = release.map_or_else(|| running.clone(), String::from);
        let running_machine = self::machine();
        let machine = machine.map_or_else(|| running_machine.clone(), String::from);
        let text: Option<(Cow<'_, Path>, Cow<'_, [u8]>)> = match os_release {
            Some((name, text)) => Some((Cow::Borrowed(name), Cow::Borrowed(text))),
            None => self::os_release(root)?.map(|(p, t)| (Cow::Owned(p), Cow::Owned(t))),
        };
        let os_release = match text {
            Some((name, text)) => {
                Some(OsRelease::parse(&text).map_err(|e| HostError::new(name.into_owned(), e))?)
            }
            None => None,
        };
        let is_running = running == release && machine == running_machine;
        Ok(Host {
            os_release,
            native: is_running && native(root),
            release,
            machine,
        })
    }

    /// The request for this machine.
    pub fn request(&self, series: bool) -> Request<'_> {
        Request {
            os_release: self.os_release.as_ref(),
            release: &self.release,
            machine: &self.machine,
            native: self.native,
            series,
        }
    }
}
