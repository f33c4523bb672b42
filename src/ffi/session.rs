//! [`Session`]: what a `struct btf_reloc_info` holds. The target BTF files are mapped (or read)
//! once, parsed once, and a [`RelocInfo`] borrowing them accumulates the relocations of every
//! object until the session is freed. A mapped file that was truncated or written in place
//! since it was opened fails the emission ([`crate::mapped`]).

use super::anchor::Anchor;
use super::errno::Errno;
use super::print::warn_rejected;
use crate::btf::split::SplitBase;
use crate::btf::{Btf, Validation};
use crate::core::Targets;
use crate::core::verdict::{self, Verdict};
use crate::error::Result;
use crate::fallible::StringSink;
use crate::mapped::FileBytes;
use crate::minimize::RelocInfo;
use crate::object::BpfObject;
use alloc::string::String;
use alloc::vec::Vec;
use core::fmt::Write;
use std::path::Path;

/// Target BTFs (main + modules) and the reloc info accumulated against them.
///
/// Self-referential: `info` borrows `main` and `modules` (`split_base` borrows `main`), which
/// borrow `main_bytes` and `module_bytes` (heap bytes or a mapping, neither of which moves with its owner). The borrows
/// are made with [`Anchor::get_unbounded`] under its rules: every borrowed value lives in an
/// [`Anchor`] (a heap address that never changes), anchors are only ever added, never removed or
/// replaced, and fields drop in declaration order, so each field is declared before everything
/// it borrows from. Nothing borrowed ever leaves the session: its
/// methods take and return owned data.
pub(super) struct Session {
    /// Built at the first object (or `to_btf`); module BTFs can be added only before that.
    info: Option<RelocInfo<'static>>,
    /// What splitting a module's DWARF over `main` needs of it, borrowing `main`: built at
    /// the first debug module, shared by the others, dropped with `info`'s creation (no
    /// module is added after).
    split_base: Option<SplitBase<'static>>,
    /// Module BTFs, split on `main`, borrowing `module_bytes`.
    modules: Vec<Anchor<Btf<'static>>>,
    module_bytes: Vec<Anchor<FileBytes>>,
    /// The main target BTF, borrowing `main_bytes`.
    main: Anchor<Btf<'static>>,
    main_bytes: Anchor<FileBytes>,
}

impl Session {
    /// Parse the main target BTF (raw BTF, or an ELF file's `.BTF`) from `bytes`.
    ///
    /// Target BTFs are validated as `btfgen min-core-btf` validates them
    /// ([`Validation::OnUse`]): layout and records now, each type when a relocation reads it;
    /// the emitted BTF is validated in full by [`RelocInfo::to_btf`].
    pub(super) fn new(bytes: FileBytes) -> Result<Session> {
        let main_bytes = Anchor::new(bytes)?;
        // SAFETY: the view is stored in `main`, declared (so dropped) before `main_bytes`, and
        // neither anchor is ever replaced. On a parse error nothing borrowing it survives: the
        // error owns no references into the bytes.
        let data: &'static [u8] = unsafe { main_bytes.get_unbounded() };
        let main = Anchor::new(Btf::parse_with(data, None, Validation::OnUse)?)?;
        Ok(Session {
            info: None,
            split_base: None,
            modules: Vec::new(),
            module_bytes: Vec::new(),
            main,
            main_bytes,
        })
    }

    /// Add a kernel module BTF (split on the main BTF) from `bytes`, read from `path`,
    /// searched for candidates only when the main BTF has none. A module's debug `.ko` (DWARF,
    /// no `.BTF`) is converted to split BTF over the main BTF as the command converts it
    /// ([`crate::dwarf_input::convert_module`]); its file, checked unchanged, is let go.
    /// `EBUSY` once an object was added or a BTF emitted: the candidate index and the marks
    /// of earlier objects were made without it.
    pub(super) fn add_module(
        &mut self,
        path: &Path,
        bytes: FileBytes,
    ) -> core::result::Result<(), Errno> {
        if self.info.is_some() {
            return Err(Errno(libc::EBUSY));
        }
        let bytes = if crate::dwarf::module_converts(&bytes, false) {
            let split = crate::dwarf_input::convert_module(
                path,
                &bytes,
                self.split_base()?,
                None,
                &super::allocator::convert_options(),
            )
            .map_err(warn_rejected("invalid DWARF", &path.display()))?;
            // Read while mapped: a truncation or rewrite meanwhile shows only now.
            super::files::check_unchanged(&bytes)?;
            FileBytes::Read(split.bytes)
        } else {
            bytes
        };
        // Reserve first so that, once parsed, the module is kept without another failure point.
        self.modules.try_reserve(1)?;
        self.module_bytes.try_reserve(1)?;
        let bytes = Anchor::new(bytes)?;
        // SAFETY: both views end up in `modules`, declared before `module_bytes` and `main`;
        // anchors are never removed. If parsing or anchoring the view fails, the view (if any)
        // is dropped first, then `bytes`, with nothing borrowing it (errors own no references).
        let (data, main): (&'static [u8], &'static Btf<'static>) =
            unsafe { (bytes.get_unbounded(), self.main.get_unbounded()) };
        let module = Anchor::new(Btf::parse_with(data, Some(main), Validation::OnUse)?)?;
        self.module_bytes.push(bytes);
        self.modules.push(module);
        Ok(())
    }

    /// The main BTF read for splitting modules over it, built on first use.
    fn split_base(&mut self) -> Result<&SplitBase<'static>> {
        let base = match self.split_base.take() {
            Some(base) => base,
            // SAFETY: the view is stored in `split_base`, declared (so dropped) before `main`,
            // which is never replaced; `split_base` is dropped or replaced only whole.
            None => SplitBase::new(unsafe { self.main.get_unbounded() })?,
        };
        Ok(self.split_base.insert(base))
    }

    /// The reloc info, created on first use from the main and module BTFs.
    fn info(&mut self) -> Result<&mut RelocInfo<'static>> {
        let info = match self.info.take() {
            Some(info) => info,
            None => {
                // SAFETY: the targets are stored in `info`, the first field, so dropped before
                // the `modules` and `main` anchors they borrow; anchors are never removed.
                let main: &'static Btf<'static> = unsafe { self.main.get_unbounded() };
                let mut targets = Targets::new(main);
                for module in &self.modules {
                    // SAFETY: as above.
                    targets.add_module(unsafe { module.get_unbounded() })?;
                }
                // Modules come only before this: what splitting them needed goes.
                self.split_base = None;
                RelocInfo::new(targets)
            }
        };
        Ok(self.info.insert(info))
    }

    /// Relocate the object in `data` and record what its relocations need (`name` names it in
    /// the recorded reasons). A failing object records nothing.
    pub(super) fn add_object(
        &mut self,
        name: &str,
        data: &[u8],
    ) -> core::result::Result<(), Errno> {
        let obj = BpfObject::parse(data)?;
        // `btfgen min-core-btf` rejects such an object too; libbpf's errno for "no .BTF".
        let local_bytes = obj.btf_bytes().ok_or(Errno(libc::ENODATA))?;
        let local = Btf::parse(local_bytes)?;
        let added = self
            .info()
            .and_then(|info| info.add_object(name, &obj, &local));
        if added.is_err() {
            // A target changed under the relocations: say so rather than what it broke.
            self.check_inputs()?;
        }
        Ok(added?)
    }

    /// The load verdict of the entry program `program` of the object in `data`, relocated
    /// against the targets without recording anything, and its evidence as text (one line
    /// each). `ENOENT` when the object has no entry program of that name.
    pub(super) fn prog_verdict(
        &mut self,
        data: &[u8],
        program: &str,
    ) -> core::result::Result<(Verdict, String), Errno> {
        let obj = BpfObject::parse(data)?;
        let local_bytes = obj.btf_bytes().ok_or(Errno(libc::ENODATA))?;
        let local = Btf::parse(local_bytes)?;
        let judged = self.info().and_then(|info| {
            let relocated = info.relocate(&obj, &local)?;
            let programs = verdict::entry_programs(&obj, &local, &relocated)?;
            let Some(entry) = programs.iter().find(|p| p.program == program) else {
                return Ok(None);
            };
            let mut text = String::new();
            let mut sink = StringSink::new(&mut text);
            for evidence in &entry.evidence {
                let _ = writeln!(sink, "{}", verdict::describe(evidence, &local, &relocated));
            }
            sink.finish()?;
            Ok(Some((entry.verdict, text)))
        });
        if judged.is_err() {
            self.check_inputs()?;
        }
        judged?.ok_or(Errno(libc::ENOENT))
    }

    /// The minimized BTF for everything recorded so far; `EIO` if a mapped target file changed
    /// ([`Session::check_inputs`]).
    pub(super) fn emit(&mut self) -> core::result::Result<Vec<u8>, Errno> {
        let emitted = self.info().and_then(|info| Ok(info.to_btf()?.bytes));
        // Checked after reading: a truncation shows while the bytes are read.
        self.check_inputs()?;
        Ok(emitted?)
    }

    /// `EIO` (with a warning) if a mapped target file was truncated or written in place since
    /// it was opened ([`crate::mapped`]), as libbpf's `btf__parse_raw` fails a short read of a
    /// BTF file with `-EIO`: what was computed from it may mix old and new bytes, or have
    /// failed on the zeros a truncation leaves.
    fn check_inputs(&self) -> core::result::Result<(), Errno> {
        core::iter::once(&self.main_bytes)
            .chain(&self.module_bytes)
            .try_for_each(|input| super::files::check_unchanged(input.get()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn fixture(path: &str) -> Vec<u8> {
        std::fs::read(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(path)).unwrap()
    }

    #[test]
    fn session_outlives_moves_and_matches_a_direct_run() {
        let target = fixture("tests/data/targets/btf__fields.btf");
        let object = fixture("tests/data/progs/fields.bpf.o");
        let session = Session::new(FileBytes::Read(target.clone())).unwrap();
        // Move the session around (into a box and back) before using it.
        let mut session = *alloc::boxed::Box::new(session);
        session.add_object("fields", &object).unwrap();
        let bytes = session.emit().unwrap();
        drop(session);

        let main = Btf::parse_raw_or_elf(&target, None).unwrap();
        let mut info = RelocInfo::new(Targets::new(&main));
        let obj = BpfObject::parse(&object).unwrap();
        let local = Btf::parse(obj.btf_bytes().unwrap()).unwrap();
        info.add_object("fields", &obj, &local).unwrap();
        assert_eq!(bytes, info.to_btf().unwrap().bytes);
    }

    /// A mapped target written in place or truncated after the relocations were recorded fails
    /// the emission with libbpf's errno for a short read; one left alone emits.
    #[test]
    fn changed_mapped_targets_fail_the_emission() {
        let dir = std::env::temp_dir().join(alloc::format!(
            "btfgen-session-changed-{}",
            std::process::id()
        ));
        std::fs::create_dir_all(&dir).unwrap();
        let target = fixture("tests/data/targets/btf__fields.btf");
        let object = fixture("tests/data/progs/fields.bpf.o");
        let path = dir.join("target.btf");
        let session_on_copy = || {
            std::fs::write(&path, &target).unwrap();
            let bytes = super::super::files::open_input(&path).unwrap();
            assert!(matches!(bytes, FileBytes::Mapped(_)));
            let mut session = Session::new(bytes).unwrap();
            session.add_object("fields", &object).unwrap();
            session
        };
        let mut session = session_on_copy();
        assert!(session.emit().is_ok());
        // The same bytes, written again: only the times tell.
        std::thread::sleep(std::time::Duration::from_millis(20));
        std::fs::OpenOptions::new()
            .write(true)
            .open(&path)
            .unwrap()
            .write_all(&target)
            .unwrap();
        assert_eq!(session.emit(), Err(Errno(libc::EIO)));
        drop(session);

        let mut session = session_on_copy();
        std::fs::OpenOptions::new()
            .write(true)
            .open(&path)
            .unwrap()
            .set_len(16)
            .unwrap();
        assert_eq!(session.emit(), Err(Errno(libc::EIO)));
        drop(session);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn modules_only_before_the_first_object() {
        let mut session =
            Session::new(FileBytes::Read(fixture("tests/data/targets/base.btf"))).unwrap();
        session
            .add_module(
                Path::new("module.btf"),
                FileBytes::Read(fixture("tests/data/targets/module.btf")),
            )
            .unwrap();
        assert_eq!(
            session.add_module(Path::new("junk"), FileBytes::Read(b"junk".to_vec())),
            Err(Errno::INVAL)
        );
        session
            .add_object("module", &fixture("tests/data/progs/module.bpf.o"))
            .unwrap();
        assert_eq!(
            session.add_module(
                Path::new("module.btf"),
                FileBytes::Read(fixture("tests/data/targets/module.btf")),
            ),
            Err(Errno(libc::EBUSY))
        );
    }
}
