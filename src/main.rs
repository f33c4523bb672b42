//! The `btfgen` command-line tool: a thin shell over the library. Each subcommand lives in
//! `src/cli/` and turns arguments and files into library calls and errors into one-line messages.

// `unsafe` is denied everywhere but the allocator (`cli::allocator`) and `cli::input`'s tests.
#![deny(unsafe_code)]

mod cli;

use clap::{CommandFactory, Parser, Subcommand};
use std::process::ExitCode;

/// Minimized BTF for CO-RE eBPF objects.
#[derive(Parser)]
#[command(name = "btfgen", version, about)]
struct Args {
    /// Print libbpf's debug log of every CO-RE relocation on stderr (as `bpftool -d`).
    #[arg(short, long, global = true, conflicts_with = "quiet")]
    debug: bool,
    /// Print errors only: no warnings, no summary lines.
    #[arg(short, long, global = true)]
    quiet: bool,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Print every type of a BTF in `bpftool btf dump file` raw format.
    Dump(cli::dump::DumpArgs),
    /// Resolve every CO-RE relocation of OBJECTs against a target BTF and print the results.
    Relocate(cli::relocate::RelocateArgs),
    /// Write a BTF with only what OBJECTs' CO-RE relocations need (no arguments: the running
    /// kernel's BTF and the example object, into min.btf).
    MinCoreBtf(cli::min_core_btf::MinCoreBtfArgs),
    /// Minimize OBJECTs against every kernel BTF under a BTFHub-style tree, in parallel.
    Batch(cli::batch::BatchArgs),
    /// Select the BTF of the running kernel (or the identity given) from an archive of them.
    Select(cli::select::SelectArgs),
    /// Write the whole BTF of an ELF file's DWARF (a debug vmlinux), deduplicated, as pahole
    /// writes a detached BTF.
    Encode(cli::encode::EncodeArgs),
    /// bpftool's spelling of min-core-btf: `gen min_core_btf INPUT OUTPUT OBJECT...`, with
    /// bpftool's exit codes.
    Gen(cli::bpftool::GenArgs),
    /// bpftool's spelling of dump: `btf dump file FILE [format raw]`, with bpftool's exit codes.
    Btf(cli::bpftool::BtfArgs),
    /// Write the man pages and shell completions (for `make install` and `make deb`).
    #[command(hide = true)]
    GenerateDocs(cli::docs::DocsArgs),
}

fn main() -> ExitCode {
    let args = Args::parse();
    cli::init_log(if args.debug {
        cli::Verbosity::Debug
    } else if args.quiet {
        cli::Verbosity::Quiet
    } else {
        cli::Verbosity::Normal
    });
    let result = match args.command {
        Command::Dump(a) => cli::dump::run(&a),
        Command::Relocate(a) => cli::relocate::run(&a),
        Command::MinCoreBtf(a) => cli::min_core_btf::run(&a),
        Command::Batch(a) => cli::batch::run(&a),
        Command::Select(a) => cli::select::run(&a),
        Command::Encode(a) => cli::encode::run(&a),
        Command::Gen(a) => cli::bpftool::run_gen(&a),
        Command::Btf(a) => cli::bpftool::run_btf(&a),
        Command::GenerateDocs(a) => cli::docs::run(&a, Args::command()),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            cli::stderr_line!("btfgen: {e}");
            ExitCode::FAILURE
        }
    }
}
