//! Running the `btfgen` binary as a user runs it, for the CLI integration tests: its path, the
//! committed fixtures under `tests/data/`, one run's captured output, and a scratch directory
//! that goes away with the test.

#![allow(dead_code)]

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The `btfgen` binary Cargo built for these tests.
pub const BIN: &str = env!("CARGO_BIN_EXE_btfgen");

/// `tests/data/REL`: a committed fixture.
pub fn data(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(rel)
}

/// `btfgen ARGS...` run to completion: its exit status, stdout and stderr.
pub fn btfgen<S: AsRef<OsStr>>(args: &[S]) -> Output {
    Command::new(BIN).args(args).output().unwrap()
}

/// A fresh, empty directory under the system temp dir, removed when dropped. `name` must be
/// unique among the tests of one test binary (they run at once, in one process).
pub struct TempDir(pub PathBuf);

impl TempDir {
    pub fn new(name: &str) -> TempDir {
        let dir = std::env::temp_dir().join(format!("btfgen-test-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
