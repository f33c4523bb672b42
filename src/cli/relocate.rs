//! `btfgen relocate`: resolve every CO-RE relocation of the given objects against a target BTF
//! and print the results, as a table or as JSON lines: one record per relocation, named by the
//! program libbpf logs it under, with `callers`, the entry programs libbpf loads it in (a
//! `.text` sub-program's relocation is in every entry program that calls it).

use super::objects::{LocalObject, parse_object};
use super::{CliResult, DwarfArgs, TargetFiles, context, read_file};
use btfgen::btf::Btf;
use btfgen::core::kernel::kernel_core;
use btfgen::core::patch::Patched;
use btfgen::core::programs::{callers, entry_relocations};
use btfgen::core::relocate::{ObjectRelocation, relocate_object};
use btfgen::core::{CandidateIndex, RelocKind, Targets};
use btfgen::log::LibbpfLog;
use btfgen::object::BpfObject;
use serde_json::{Value, json};
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

/// Arguments of `btfgen relocate`.
#[derive(clap::Args)]
pub struct RelocateArgs {
    /// Target BTF (raw, or ELF with .BTF), e.g. /sys/kernel/btf/vmlinux.
    #[arg(long)]
    btf: PathBuf,
    /// Base BTF when the target BTF is split BTF.
    #[arg(long)]
    base_btf: Option<PathBuf>,
    /// Kernel module BTF (split on the target), searched when the target has no candidate.
    #[arg(long = "module-btf")]
    module_btf: Vec<PathBuf>,
    #[command(flatten)]
    dwarf: DwarfArgs,
    /// Print one JSON object per relocation instead of a table.
    #[arg(long)]
    json: bool,
    /// Print each assembled program's kernel-side CO-RE records (what BPF_PROG_LOAD's
    /// core_relos gets) instead of relocating; with --json, one JSON object per program.
    #[arg(long)]
    records: bool,
    /// BPF objects (ELF with .BTF and .BTF.ext).
    #[arg(required = true)]
    objects: Vec<PathBuf>,
}

/// `[ID] kind name` of a type, as libbpf's logs print it.
pub fn describe(btf: &Btf<'_>, id: u32) -> String {
    match btf.type_by_id(id) {
        Ok(ty) => {
            let kind = ty.kind().map_or("void", |k| k.libbpf_name());
            let name = btf.name(ty.name_off).unwrap_or("");
            let name = if name.is_empty() { "<anon>" } else { name };
            format!("[{id}] {kind} {name}")
        }
        Err(_) => format!("[{id}] <invalid>"),
    }
}

/// `kind name` of a local type (`struct task_struct`).
pub fn local_type_name(btf: &Btf<'_>, id: u32) -> String {
    let full = describe(btf, id);
    full.split_once("] ")
        .map_or(full.clone(), |(_, rest)| rest.to_string())
}

/// One relocation as `--json` prints it (also the relocations of `--report`, [`super::report`]),
/// with `callers`, the entry programs libbpf appends its program to (or that it is in).
pub fn to_json(
    path: &str,
    local: &Btf<'_>,
    targets: &Targets<'_>,
    r: &ObjectRelocation<'_, '_>,
    callers: &[&str],
) -> Value {
    let mut obj = json!({
        "object": path,
        "section": r.section,
        "program": r.program,
        "relo": r.relo,
        "insn": r.insn,
        "kind": r.kind.map_or_else(|| format!("unknown({})", r.raw_kind), |k| k.name().to_string()),
        "local_type": local_type_name(local, r.local_type_id),
        "access": r.access,
    });
    match &r.outcome {
        Ok((resolved, patched)) => {
            let (orig, new, poison_reason) = match patched {
                Patched::Value { orig, new } => (json!(orig), json!(new), None),
                Patched::Poisoned(reason) => (Value::Null, Value::Null, Some(reason.name())),
            };
            let target = resolved
                .target()
                .map(|(cand, _)| describe(targets.btf(cand.source), cand.id));
            obj["poison"] = json!(poison_reason.is_some());
            obj["poison_reason"] = json!(poison_reason);
            obj["orig"] = orig;
            obj["new"] = new;
            obj["target"] = json!(target);
        }
        Err(e) => {
            obj["poison"] = json!(false);
            obj["poison_reason"] = Value::Null;
            obj["orig"] = Value::Null;
            obj["new"] = Value::Null;
            obj["target"] = Value::Null;
            obj["error"] = json!(e.to_string());
        }
    }
    obj["callers"] = json!(callers);
    obj
}

fn table_row(
    local: &Btf<'_>,
    targets: &Targets<'_>,
    r: &ObjectRelocation<'_, '_>,
    callers: &[&str],
) -> String {
    let kind = r.kind.map_or("unknown", |k| k.name());
    let what = format!("{} {}", local_type_name(local, r.local_type_id), r.access);
    let result = match &r.outcome {
        Ok((resolved, Patched::Value { orig, new })) => {
            let target = resolved.target().map_or("no target".to_string(), |(c, _)| {
                describe(targets.btf(c.source), c.id)
            });
            format!("{orig} -> {new}  {target}")
        }
        Ok((_, Patched::Poisoned(reason))) => format!("poisoned ({})", reason.describe()),
        Err(e) => format!("ERROR: {e}"),
    };
    format!(
        "{:<20} {:<24} {:>4} {:>5} {:<15} {:<40} {}  [callers: {}]",
        r.section,
        r.program,
        r.relo,
        r.insn,
        kind,
        what,
        result,
        callers_text(callers)
    )
}

/// `a, b`, or `none` when no entry program is given the relocation.
fn callers_text(callers: &[&str]) -> String {
    if callers.is_empty() {
        "none".to_string()
    } else {
        callers.join(", ")
    }
}

/// `--records`: every entry-point program of `obj` as assembled for kernel-side CO-RE, with its
/// `bpf_core_relo` records (byte offset, local type, access string, kind).
fn print_records(
    out: &mut impl Write,
    path: &str,
    obj: &BpfObject<'_>,
    local: &Btf<'_>,
    json: bool,
) -> CliResult<()> {
    let load = kernel_core(obj, local).map_err(context(path))?;
    for p in &load.programs {
        let records: Vec<_> = p
            .core_relos
            .iter()
            .map(|r| {
                let kind = RelocKind::from_raw(r.kind)
                    .map_or_else(|| format!("unknown({})", r.kind), |k| k.name().to_string());
                let access = local.name(r.access_str_off).unwrap_or("<invalid>");
                (r, kind, local_type_name(local, r.type_id), access)
            })
            .collect();
        if json {
            let relos: Vec<Value> = records
                .iter()
                .map(|(r, kind, ty, access)| {
                    json!({"insn_off": r.insn_off, "insn": r.insn_off / 8, "type_id": r.type_id,
                           "type": ty, "access": access, "kind": kind})
                })
                .collect();
            let line = json!({
                "object": path,
                "program": p.name(),
                "section": p.section_name(),
                "insns": p.program.insns.len(),
                "func_info": p.program.func_info.len(),
                "line_info": p.program.line_info.len(),
                "core_relos": relos,
            });
            writeln!(out, "{line}").map_err(context("stdout"))?;
            continue;
        }
        writeln!(
            out,
            "{path}: program {} ({}): {} insns, {} CO-RE records",
            p.name(),
            p.section_name(),
            p.program.insns.len(),
            records.len()
        )
        .map_err(context("stdout"))?;
        if !records.is_empty() {
            writeln!(
                out,
                "  {:>8} {:>5} {:>7}  {:<15} {:<28} access",
                "insn_off", "insn", "type_id", "kind", "type"
            )
            .map_err(context("stdout"))?;
        }
        for (r, kind, ty, access) in &records {
            writeln!(
                out,
                "  {:>8} {:>5} {:>7}  {kind:<15} {ty:<28} {access}",
                r.insn_off,
                r.insn_off / 8,
                r.type_id
            )
            .map_err(context("stdout"))?;
        }
    }
    Ok(())
}

/// Run `btfgen relocate`.
pub fn run(args: &RelocateArgs) -> CliResult<ExitCode> {
    let files = TargetFiles::read(
        &args.btf,
        args.base_btf.as_deref(),
        &args.module_btf,
        &args.dwarf,
    )?;
    let code = files.with_targets(None, |targets, _| relocate_all(args, targets))?;
    // What was printed came from the inputs as they were: fail the run if they changed.
    super::input::check_inputs()?;
    Ok(code)
}

fn relocate_all(args: &RelocateArgs, targets: &Targets<'_>) -> CliResult<ExitCode> {
    let mut index = CandidateIndex::new();
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    let mut failed = false;
    for path in &args.objects {
        let data = read_file(path)?;
        let name = path.display().to_string();
        let LocalObject {
            object: obj,
            btf: local,
            ..
        } = parse_object(&name, &data)?;
        if args.records {
            print_records(&mut out, &name, &obj, &local, args.json)?;
            continue;
        }
        let relocated = relocate_object(&obj, &local, targets, &mut index, &mut LibbpfLog)
            .map_err(context(&name))?;
        if !args.json {
            writeln!(
                out,
                "{name}: {} CO-RE relocations",
                relocated.relocations.len()
            )
            .map_err(context("stdout"))?;
        }
        let programs = entry_relocations(&obj, &local, &relocated).map_err(context(&name))?;
        for (at, r) in relocated.relocations.iter().enumerate() {
            failed |= r.outcome.is_err();
            let callers: Vec<&str> = callers(&programs, at).collect();
            let line = if args.json {
                to_json(&name, &local, targets, r, &callers).to_string()
            } else {
                table_row(&local, targets, r, &callers)
            };
            writeln!(out, "{line}").map_err(context("stdout"))?;
        }
    }
    out.flush().map_err(context("stdout"))?;
    Ok(if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}
