//! `btfgen select ARCHIVE`: which BTF of an archive the running machine (or the identity
//! given) needs, how it matched, and the BTF itself into `--output`.
//!
//! Exit status: 0 for `native` and any match, 1 for `none` (and for an unreadable or corrupt
//! archive, named in the message), 2 for usage errors (clap's).

use super::dedup::sha256_hex;
use super::{CliError, CliResult, context, read_file, write_atomic};
use btfgen::select::archive::{self, Catalogue};
use btfgen::select::host::{self, Host};
use btfgen::select::{Key, MatchKind, Selection, choose};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// Arguments of `btfgen select`.
#[derive(clap::Args)]
pub struct SelectArgs {
    /// The archive: `.tar`, `.tar.gz` or `.tar.xz` (of `batch --dedup --archive`, a BTFHub tree
    /// or bcc's `btfs/`), or a directory (a `batch --dedup` output folder, a BTFHub tree).
    archive: PathBuf,
    /// Where the host's files are (a container mounting the host at `/host`): its
    /// `etc/os-release` (else `usr/lib/os-release`) and `sys/kernel/btf/vmlinux`.
    #[arg(long, default_value = "/")]
    root: PathBuf,
    /// os-release file to use instead of the root's.
    #[arg(long, value_name = "FILE")]
    os_release: Option<PathBuf>,
    /// Kernel release instead of the running kernel's (`uname -r`).
    #[arg(long, value_name = "R")]
    release: Option<String>,
    /// Machine instead of the running one's (`uname -m`).
    #[arg(long, value_name = "M")]
    machine: Option<String>,
    /// Accept `series` matches: the release is absent, its two nearest neighbours of the same
    /// flavour have byte-identical outputs.
    #[arg(long)]
    series: bool,
    /// Write the selected BTF here (atomically).
    #[arg(long, short, value_name = "FILE")]
    output: Option<PathBuf>,
    /// Print the result as one JSON object.
    #[arg(long)]
    json: bool,
}

/// Run `btfgen select`.
pub fn run(args: &SelectArgs) -> CliResult<ExitCode> {
    let os_text = args.os_release.as_ref().map(|p| read_file(p)).transpose()?;
    let host = Host::read(
        &args.root,
        args.os_release.as_deref().zip(os_text.as_deref()),
        args.release.as_deref(),
        args.machine.as_deref(),
    )
    .map_err(|e| CliError(e.to_string()))?;
    let request = host.request(args.series);
    let name = args.archive.display();
    let (catalogue, bytes) = if request.native {
        (Catalogue::default(), None)
    } else if args.archive.is_dir() {
        let catalogue = archive::read_dir(&args.archive).map_err(context(&name))?;
        (catalogue, None)
    } else {
        let bytes = read_file(&args.archive)?;
        let catalogue = Catalogue::read(&bytes).map_err(context(&name))?;
        (catalogue, Some(bytes))
    };
    let selection = choose(&catalogue, &request).map_err(context(&name))?;
    let entry = selection.entry.and_then(|i| catalogue.entries.get(i));
    let btf = match (entry, &bytes) {
        (None, _) => None,
        (Some(e), Some(bytes)) => Some(Catalogue::extract(bytes, e).map_err(context(&name))?),
        (Some(e), None) => {
            let path = args.archive.join(&e.content);
            let member = read_file(&path)?;
            Some(archive::unpack_member(&e.content, member).map_err(context(path.display()))?)
        }
    };
    if let (Some(btf), Some(out)) = (&btf, &args.output) {
        write_atomic(out, btf)?;
    }
    let path_of = |i: &usize| catalogue.entries.get(*i).map(|e| e.path.as_str());
    let neighbours: Vec<&str> = selection.neighbours.iter().filter_map(path_of).collect();
    if args.json {
        let report = json!({
            "match": selection.kind.name(),
            "rule": selection.rule.map(|r| r.name()),
            "key": key_json(&selection.key),
            "entry": entry.map(|e| e.path.as_str()),
            "sha256": btf.as_deref().map(sha256_hex),
            "output": btf.as_ref().and(args.output.as_deref()).map(|p| p.display().to_string()),
            "neighbours": neighbours,
            "tried": selection.tried.iter().map(key_json).collect::<Vec<_>>(),
        });
        println!("{report}");
    } else {
        print_text(
            &selection,
            entry.map(|e| e.path.as_str()),
            &neighbours,
            args,
        );
    }
    Ok(if selection.kind == MatchKind::None {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

fn key_json(key: &Key) -> Value {
    json!({
        "distro": key.distro,
        "version": key.version,
        "arch": key.arch,
        "release": key.release,
    })
}

fn key_text(key: &Key) -> String {
    format!(
        "{}/{}/{}/{}",
        key.distro, key.version, key.arch, key.release
    )
}

fn print_text(selection: &Selection, entry: Option<&str>, neighbours: &[&str], args: &SelectArgs) {
    let archive = args.archive.display();
    match selection.kind {
        MatchKind::Native => println!(
            "native: the kernel {} has its own BTF ({}); nothing to load",
            selection.key.release,
            Path::new(&args.root).join(host::VMLINUX).display()
        ),
        MatchKind::None => {
            let nearest = if neighbours.is_empty() {
                String::from("none")
            } else {
                neighbours.join(", ")
            };
            stderr_line!(
                "btfgen: no BTF for {} in {archive} (tried {}); nearest entries: {nearest}",
                key_text(&selection.key),
                selection
                    .tried
                    .iter()
                    .map(key_text)
                    .collect::<Vec<_>>()
                    .join(", ")
            );
        }
        kind => {
            let rule = selection
                .rule
                .map(|r| format!(" ({})", r.name()))
                .unwrap_or_default();
            let series = if kind == MatchKind::Series {
                format!(" between {}", neighbours.join(" and "))
            } else {
                String::new()
            };
            let out = args
                .output
                .as_ref()
                .map(|o| format!(" -> {}", o.display()))
                .unwrap_or_default();
            println!(
                "{}{rule}{series}: {}{out}",
                kind.name(),
                entry.unwrap_or_default()
            );
        }
    }
}
