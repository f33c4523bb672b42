//! `btfgen min-core-btf INPUT OUTPUT OBJECT...` (argument order as `bpftool gen min_core_btf`):
//! the main job. With no arguments it runs on its embedded default: the running kernel's BTF
//! and the example object the repo ships, writing `min.btf`.

use super::modules::ModuleArgs;
use super::objects::{LocalObject, parse_objects};
use super::verdicts::{KernelVerdicts, VerdictCounts};
use super::{
    CliError, CliResult, DwarfArgs, Input, TargetFiles, context, report, scan_plan, write_atomic,
};
use btfgen::core::relocate::local_type_names;
use btfgen::core::verdict;
use btfgen::core::{BtfSource, CandidateIndex};
use btfgen::minimize::RelocInfo;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

/// The running kernel's BTF: the default INPUT. `BTFGEN_KERNEL_BTF` names another file (the
/// tests use it to run the default job as on a kernel without BTF).
fn kernel_btf() -> PathBuf {
    std::env::var_os("BTFGEN_KERNEL_BTF")
        .map_or_else(|| PathBuf::from(super::SYSFS_VMLINUX), PathBuf::from)
}
/// The default INPUT where the running kernel has no BTF: a small kernel-like BTF built from
/// `tests/data/targets/btf__example_kernel.c`.
const EXAMPLE_KERNEL_BTF: &[u8] =
    include_bytes!("../../tests/data/targets/btf__example_kernel.btf");
const EXAMPLE_KERNEL_NAME: &str = "tests/data/targets/btf__example_kernel.btf (embedded)";
/// The example object: reads `task_struct`/`mm_struct` fields of the running kernel.
const EXAMPLE_OBJECT: &[u8] = include_bytes!("../../tests/data/progs/task.bpf.o");
const EXAMPLE_NAME: &str = "tests/data/progs/task.bpf.o (embedded)";

/// Arguments of `btfgen min-core-btf`.
#[derive(clap::Args)]
pub struct MinCoreBtfArgs {
    /// Source BTF (e.g. /sys/kernel/btf/vmlinux); default: the running kernel's, else the
    /// example kernel BTF built into btfgen.
    input: Option<PathBuf>,
    /// Where to write the minimized BTF (atomically); default: min.btf.
    output: Option<PathBuf>,
    /// BPF objects whose CO-RE relocations decide what is kept; default: the example object.
    objects: Vec<PathBuf>,
    /// Base BTF when INPUT is split BTF.
    #[arg(long)]
    base_btf: Option<PathBuf>,
    /// Kernel module BTF (split on INPUT), searched for types INPUT does not have.
    #[arg(long = "module-btf")]
    module_btf: Vec<PathBuf>,
    /// Module BTFs of the kernel's BTF directory.
    #[command(flatten)]
    modules: ModuleArgs,
    /// Print, for each kept type and member, the relocations that needed it.
    #[arg(long)]
    explain: bool,
    /// Write the compatibility report for this kernel (every object x program: ok, poisoned
    /// or failed, with each relocation; written even when a relocation fails): HTML if FILE
    /// ends in .html, else JSON (schema: `btfgen batch --report`).
    #[arg(long, value_name = "FILE")]
    report: Option<PathBuf>,
    #[command(flatten)]
    dwarf: DwarfArgs,
}

impl MinCoreBtfArgs {
    /// The arguments of `bpftool gen min_core_btf INPUT OUTPUT OBJECT...`.
    pub fn bpftool(input: PathBuf, output: PathBuf, objects: Vec<PathBuf>) -> Self {
        MinCoreBtfArgs {
            input: Some(input),
            output: Some(output),
            objects,
            base_btf: None,
            module_btf: Vec::new(),
            modules: ModuleArgs::default(),
            explain: false,
            report: None,
            dwarf: DwarfArgs::default(),
        }
    }
}

/// Run `btfgen min-core-btf`.
pub fn run(args: &MinCoreBtfArgs) -> CliResult<ExitCode> {
    let started = Instant::now();
    let input = args.input.clone().unwrap_or_else(kernel_btf);
    let output = args
        .output
        .clone()
        .unwrap_or_else(|| PathBuf::from("min.btf"));
    if args.input.is_some() && args.output.is_none() {
        return Err(CliError(
            "min-core-btf: missing OUTPUT (usage: min-core-btf INPUT OUTPUT OBJECT...)".into(),
        ));
    }
    if args.output.is_some() && args.objects.is_empty() {
        return Err(CliError(
            "min-core-btf: missing OBJECT (usage: min-core-btf INPUT OUTPUT OBJECT...)".into(),
        ));
    }
    let mut objects: Vec<(String, Input)> = Vec::new();
    if args.objects.is_empty() {
        objects.push((EXAMPLE_NAME.to_string(), Input::Embedded(EXAMPLE_OBJECT)));
    }
    // Mapped, guarded as the target is: the write below checks them too.
    for path in &args.objects {
        objects.push((path.display().to_string(), Input::open(path)?));
    }
    let embedded = args.input.is_none() && !input.exists();
    let (files, dir_modules) = if embedded {
        stderr_line!(
            "btfgen: {} not found; using the example kernel BTF {EXAMPLE_KERNEL_NAME}",
            input.display()
        );
        let files = TargetFiles::embedded(EXAMPLE_KERNEL_NAME, EXAMPLE_KERNEL_BTF);
        (files, Vec::new())
    } else {
        let files = TargetFiles::read(
            &input,
            args.base_btf.as_deref(),
            &args.module_btf,
            &args.dwarf,
        )?;
        (files, args.modules.module_btfs(&input)?)
    };
    let parsed = parse_objects(&objects)?;
    // The objects' type names are known before the targets are parsed, so each target's parse
    // finds their candidates in the same pass.
    let plan = scan_plan(parsed.iter().map(|o| (o.name, &o.object, &o.btf)))?;
    // Only where there are module BTFs to fall back on (scan_plan has checked the names).
    let wanted: Vec<_> = if dir_modules.is_empty() {
        Vec::new()
    } else {
        parsed
            .iter()
            .map(|o| local_type_names(&o.object, &o.btf).map_err(context(o.name)))
            .collect::<CliResult<Vec<_>>>()?
            .concat()
    };
    // The directory's modules are read only if the kernel lacks a candidate, as libbpf loads
    // module BTFs only then; they can change nothing otherwise. A first run that needs them
    // returns the names the main BTF has no candidate for: the only ones libbpf looks for in
    // modules.
    let run_with = |files: &TargetFiles, check_modules: bool| {
        let source = Source {
            bytes: files.input_len(),
            from_dwarf: files.converted_from_dwarf(),
        };
        files.with_targets(Some(plan.filter()), |targets, found| {
            let mut index = CandidateIndex::new();
            index
                .absorb(&plan, targets, found)
                .map_err(context("indexing candidates"))?;
            if check_modules {
                let mut lacking = false;
                let mut not_in_main = Vec::new();
                for (name, kind) in &wanted {
                    let candidates = index
                        .candidates(name, Some(*kind))
                        .map_err(context("indexing candidates"))?;
                    lacking |= candidates.is_empty();
                    // Candidates are the main BTF's if it has any, else the modules'.
                    if candidates
                        .first()
                        .is_none_or(|c| c.source != BtfSource::Main)
                    {
                        not_in_main.push(*name);
                    }
                }
                if lacking {
                    return Ok(Err(not_in_main));
                }
            }
            let info = RelocInfo::with_index(targets.clone(), index);
            minimize(args, info, &parsed, &output, source, started, &input).map(Ok)
        })
    };
    let names = match run_with(&files, !dir_modules.is_empty())? {
        Ok(code) => return Ok(code),
        Err(names) => names,
    };
    let mut files = files;
    let mut modules = Vec::new();
    // A directory of debug modules holds a thousand: only those whose DWARF may name a type
    // the main BTF lacks are converted (their .BTF, when read as it is, costs nothing). A
    // type it has is never looked for in a module: a module that names only such types (as
    // nearly all name `sock` or `pt_regs`) cannot change the result.
    for path in dir_modules {
        let file = Input::open(&path)?;
        if btfgen::dwarf::module_converts(&file, args.dwarf.from_dwarf)
            && !btfgen::dwarf::may_name(&file, &names)
        {
            continue;
        }
        modules.push(path);
    }
    // The kernel's BTF (converted from its DWARF, maybe) and --module-btf's are kept as read:
    // the directory's modules come after them, as libbpf searches them.
    files.add_modules(&modules, &args.dwarf)?;
    run_with(&files, false)?
        .map_err(|_| CliError("internal error: module BTFs checked twice".into()))
}

/// What the summary line says of the input BTF.
struct Source {
    /// Bytes of BTF read (converted, for DWARF).
    bytes: usize,
    /// Whether the BTF was converted from the input's DWARF.
    from_dwarf: bool,
}

fn minimize(
    args: &MinCoreBtfArgs,
    mut info: RelocInfo<'_>,
    parsed: &[LocalObject<'_>],
    output: &Path,
    source: Source,
    started: Instant,
    input: &Path,
) -> CliResult<ExitCode> {
    let mut rows = Vec::new();
    let store = args
        .report
        .as_deref()
        .map(report::RowStore::new)
        .transpose()?;
    let mut verdicts = KernelVerdicts::default();
    if args.explain {
        info.keep_provenance();
    }
    // The entry programs (their verdicts, and each relocation's callers) are read by the
    // report, --explain and the summary line; a quiet run without either skips them.
    let judge = store.is_some() || args.explain || !super::quiet();
    let mut failed = None;
    for (
        at,
        LocalObject {
            name,
            object: obj,
            btf: local,
        },
    ) in parsed.iter().enumerate()
    {
        let relocated = info.relocate(obj, local).map_err(context(name))?;
        let programs = if !judge {
            Vec::new()
        } else if store.is_none() && !args.explain && verdict::all_load(obj, &relocated) {
            // Nothing to judge, and no one asks which relocations each program has.
            verdicts.add_loading_object(at, obj);
            Vec::new()
        } else {
            report::record_object(
                &mut verdicts,
                store.as_ref().map(|s| (s, &mut rows)),
                (at, name),
                obj,
                local,
                info.targets(),
                &relocated,
            )?
        };
        if let Err(e) = info.add_relocated(name, &relocated, &programs) {
            failed.get_or_insert(CliError(format!("{name}: {e}")));
            // With a report, the other objects' relocations are still worth reporting.
            if args.report.is_none() {
                break;
            }
        }
    }
    if let (Some(path), Some(store)) = (&args.report, store) {
        let name = input.display().to_string();
        let fields =
            serde_json::json!({"distro": null, "version": null, "arch": null, "kernel": name});
        let error = failed.as_ref().map(|e| e.0.as_str());
        let kernel = report::ReportKernel::new(&name, fields, rows, &verdicts, error);
        let objects: Vec<String> = parsed.iter().map(|o| o.name.to_string()).collect();
        // One kernel has one architecture: no mismatch to find.
        report::write(path, &objects, &[], store, vec![(kernel, &verdicts)])?;
    }
    if let Some(e) = failed {
        return Err(e);
    }
    let minimized = info.to_btf().map_err(context("emitting minimized BTF"))?;
    // Composed before the write, whose input check then covers what it read of the target too.
    let mut explanation = String::new();
    if args.explain {
        info.explain(&mut explanation)
            .map_err(context("--explain"))?;
    }
    write_atomic(output, &minimized.bytes)?;
    print!("{explanation}");
    let stats = info.stats();
    let targets = info.targets();
    let source_types = targets.main().type_cnt() - 1
        + (0..targets.module_count())
            .map(|i| {
                let m = targets.btf(btfgen::core::BtfSource::Module(i as u16));
                m.type_cnt() - m.start_id()
            })
            .sum::<u32>();
    if super::quiet() {
        return Ok(ExitCode::SUCCESS);
    }
    let mut programs = VerdictCounts::default();
    programs.add(&verdicts.programs);
    stderr_line!(
        "btfgen: {} object(s), {} CO-RE relocation(s) ({} resolved): {} types / {} bytes{} -> {} types / {} bytes in {} ({:.1} ms); programs: {}",
        stats.objects,
        stats.relocations,
        stats.resolved,
        source_types,
        source.bytes,
        if source.from_dwarf {
            " (BTF from DWARF)"
        } else {
            ""
        },
        minimized.types,
        minimized.bytes.len(),
        output.display(),
        started.elapsed().as_secs_f64() * 1e3,
        programs.line()
    );
    Ok(ExitCode::SUCCESS)
}
