//! `btfgen generate-docs DIR` (hidden): the man pages and shell completions, generated from the
//! same clap definitions that parse the arguments, so that they cannot drift from `--help`.
//! `make install` and `make deb` run it on the binary they install.

use super::{CliResult, context, write_atomic};
use clap::Command;
use clap_complete::Shell;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// Arguments of `btfgen generate-docs`.
#[derive(clap::Args)]
pub struct DocsArgs {
    /// Output directory: `man1/` (one page per command) and `completions/` (`btfgen.bash`,
    /// `_btfgen` for zsh, `btfgen.fish`) are written under it.
    out: PathBuf,
}

/// The shells completions are written for, and each one's file name.
const SHELLS: [(Shell, &str); 3] = [
    (Shell::Bash, "btfgen.bash"),
    (Shell::Zsh, "_btfgen"),
    (Shell::Fish, "btfgen.fish"),
];

/// Write `btfgen(1)`, `btfgen-COMMAND(1)` for every visible subcommand, and the completions of
/// `command` (the binary's whole clap definition).
pub fn run(args: &DocsArgs, mut command: Command) -> CliResult<ExitCode> {
    command.build();
    let man_dir = args.out.join("man1");
    let completions = args.out.join("completions");
    for dir in [&man_dir, &completions] {
        fs::create_dir_all(dir).map_err(context(dir.display()))?;
    }
    write_man(&man_dir, "btfgen", &command)?;
    // clap's own `help` subcommand gets no page: `btfgen(1)` lists the commands.
    let pages = command
        .get_subcommands()
        .filter(|s| !s.is_hide_set() && s.get_name() != "help");
    for sub in pages {
        let name = format!("btfgen-{}", sub.get_name());
        // The page's usage line is the whole command line (`btfgen min-core-btf ...`).
        let page = sub
            .clone()
            .name(name.clone())
            .bin_name(format!("btfgen {}", sub.get_name()));
        write_man(&man_dir, &name, &page)?;
    }
    for (shell, file) in SHELLS {
        let path = completions.join(file);
        let mut text = Vec::new();
        clap_complete::generate(shell, &mut command.clone(), "btfgen", &mut text);
        write_atomic(&path, &text)?;
    }
    Ok(ExitCode::SUCCESS)
}

fn write_man(dir: &Path, name: &str, command: &Command) -> CliResult<()> {
    let path = dir.join(format!("{name}.1"));
    let mut text = Vec::new();
    clap_mangen::Man::new(command.clone())
        .render(&mut text)
        .map_err(context(path.display()))?;
    write_atomic(&path, &text)
}
