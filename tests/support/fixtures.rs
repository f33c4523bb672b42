//! The committed fixtures (`tests/data/`) and the library pipeline the CLI's `min-core-btf`
//! drives, for tests that run it many times (out-of-memory sweeps, property tests).

#![allow(dead_code)]

use btfgen::btf::Btf;
use btfgen::core::Targets;
use btfgen::core::relocate::RelocatedObject;
use btfgen::core::verdict::{EntryProgram, Evidence, entry_programs, entry_verdicts};
use btfgen::minimize::RelocInfo;
use btfgen::object::BpfObject;
use btfgen::{Error, Result};
use std::path::{Path, PathBuf};

/// `tests/data/`.
pub fn data_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data")
}

/// Read a file under `tests/data/`.
pub fn read(rel: &str) -> Vec<u8> {
    let path = data_dir().join(rel);
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// One `manifest.txt` line: object, target and optional base, all under `tests/data/`.
#[derive(Debug, Clone)]
pub struct Pair {
    pub object: String,
    pub target: String,
    pub base: Option<String>,
}

/// Every manifest pair whose target is a committed file (not the running kernel's).
pub fn manifest_pairs() -> Vec<Pair> {
    let text = String::from_utf8(read("manifest.txt")).unwrap();
    text.lines()
        .map(|l| l.split('#').next().unwrap().trim())
        .filter(|l| !l.is_empty())
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f[1] != "vmlinux").then(|| Pair {
                object: f[0].to_string(),
                target: f[1].to_string(),
                base: f.get(2).map(|s| s.to_string()),
            })
        })
        .collect()
}

/// What one pipeline run produced, for comparison between runs.
#[derive(Debug, PartialEq, Eq)]
pub struct Output {
    /// The minimized BTF.
    pub bytes: Vec<u8>,
    /// `RelocInfo::explain` text.
    pub explain: String,
    /// bpftool-style dump of the minimized BTF.
    pub dump: String,
}

/// How the target BTFs are given.
#[derive(Debug, Clone, Copy)]
pub enum TargetMode<'a> {
    /// One base BTF.
    Main(&'a [u8]),
    /// A split BTF as the main target, on its base (`min-core-btf --base-btf`).
    SplitMain { base: &'a [u8], split: &'a [u8] },
    /// The base as main target, the split BTF as a module (`--module-btf`).
    Module { base: &'a [u8], module: &'a [u8] },
}

/// Parse an object and its `.BTF`, then add it to `info` (as `min-core-btf` does).
pub fn add_object(info: &mut RelocInfo<'_>, name: &str, object: &[u8]) -> Result<()> {
    let obj = BpfObject::parse(object)?;
    let local = Btf::parse(obj.btf_bytes().ok_or(Error::MissingSection(".BTF"))?)?;
    info.add_object(name, &obj, &local)
}

/// The pipeline step an error came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stage {
    /// Parsing the target BTFs.
    Targets,
    /// Parsing an object or its `.BTF`, or relocating and recording it.
    Object,
    /// `RelocInfo::to_btf`: emitting (and self-checking) the minimized BTF.
    Emit,
    /// `explain` or dumping the output.
    Report,
}

/// The whole minimize pipeline: parse the targets, relocate and record every object, emit,
/// explain, re-parse the output and dump it.
pub fn pipeline(mode: TargetMode<'_>, objects: &[&[u8]]) -> Result<Output> {
    pipeline_staged(mode, objects).map_err(|(_, e)| e)
}

/// [`pipeline`], telling which step failed.
pub fn pipeline_staged(
    mode: TargetMode<'_>,
    objects: &[&[u8]],
) -> std::result::Result<Output, (Stage, Error)> {
    let at = |stage| move |e| (stage, e);
    match mode {
        TargetMode::Main(data) => {
            let main = Btf::parse(data).map_err(at(Stage::Targets))?;
            run(Targets::new(&main), objects)
        }
        TargetMode::SplitMain { base, split } => {
            let base = Btf::parse(base).map_err(at(Stage::Targets))?;
            let main = Btf::parse_split(split, &base).map_err(at(Stage::Targets))?;
            run(Targets::new(&main), objects)
        }
        TargetMode::Module { base, module } => {
            let main = Btf::parse(base).map_err(at(Stage::Targets))?;
            let module = Btf::parse_split(module, &main).map_err(at(Stage::Targets))?;
            let mut targets = Targets::new(&main);
            targets.add_module(&module).map_err(at(Stage::Targets))?;
            run(targets, objects)
        }
    }
}

fn run(targets: Targets<'_>, objects: &[&[u8]]) -> std::result::Result<Output, (Stage, Error)> {
    let at = |stage| move |e| (stage, e);
    let mut info = RelocInfo::new(targets);
    info.keep_provenance();
    for (i, object) in objects.iter().enumerate() {
        let name = if i == 0 { "first.o" } else { "other.o" };
        add_object(&mut info, name, object).map_err(at(Stage::Object))?;
    }
    let minimized = info.to_btf().map_err(at(Stage::Emit))?;
    let mut explain = String::new();
    info.explain(&mut explain).map_err(at(Stage::Report))?;
    // The output must be valid BTF whatever the input: a failure here is a bug, not an error
    // of the input (out of memory aside).
    let out = match Btf::parse(&minimized.bytes) {
        Err(Error::OutOfMemory) => return Err((Stage::Report, Error::OutOfMemory)),
        other => other.unwrap_or_else(|e| panic!("minimized BTF does not re-parse: {e}")),
    };
    let mut dump = String::new();
    btfgen::btf::dump::dump(&out, &mut dump).map_err(at(Stage::Report))?;
    Ok(Output {
        bytes: minimized.bytes,
        explain,
        dump,
    })
}

/// The entry programs of `obj` (its `.BTF` parsed as `local`, relocated as `relocated`) judged
/// in full (`entry_programs`, the report's path), once checked that counting them
/// (`entry_verdicts`, the summary lines' path) gives the same programs, verdicts, relocations
/// and evidence but the guards of dead poisons, or the same error. Panics, naming `what`,
/// where the two paths differ; out of memory on either is returned as such.
pub fn judge_both_ways<'o>(
    obj: &BpfObject<'o>,
    local: &Btf<'o>,
    relocated: &RelocatedObject<'o, '_>,
    what: &str,
) -> Result<Vec<EntryProgram<'o>>> {
    match (
        entry_programs(obj, local, relocated),
        entry_verdicts(obj, local, relocated),
    ) {
        (Ok(full), Ok(counted)) => {
            assert_eq!(counted.len(), full.len(), "{what}: programs");
            for (c, f) in counted.iter().zip(&full) {
                let unguarded: Vec<&Evidence> = f
                    .evidence
                    .iter()
                    .filter(|e| !matches!(e, Evidence::Guarded { .. }))
                    .collect();
                assert_eq!(
                    (
                        c.program,
                        c.verdict,
                        &c.relocations,
                        c.evidence.iter().collect()
                    ),
                    (f.program, f.verdict, &f.relocations, unguarded),
                    "{what}: entry_verdicts differs from entry_programs"
                );
            }
            Ok(full)
        }
        (Err(Error::OutOfMemory), _) | (_, Err(Error::OutOfMemory)) => Err(Error::OutOfMemory),
        (Err(f), Err(c)) => {
            assert_eq!(f.to_string(), c.to_string(), "{what}: errors");
            Err(f)
        }
        (f, c) => panic!(
            "{what}: one path failed: full {:?}, counted {:?}",
            f.map(|p| p.len()),
            c.map(|p| p.len())
        ),
    }
}
