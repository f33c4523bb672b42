//! What `make install` ships cannot drift from the tool and the library: the man pages and
//! completions `btfgen generate-docs` writes name every command and flag `--help` shows, the
//! Makefile installs exactly the pages generated, and `man/libbtfgen.3` gives every function of
//! `include/btfgen.h` with its exact prototype.

#[path = "support/cli.rs"]
mod cli;

use cli::TempDir;
use std::collections::BTreeSet;
use std::fs;
use std::path::Path;

fn btfgen(args: &[&str]) -> String {
    let out = cli::btfgen(args);
    assert!(out.status.success(), "btfgen {args:?}: {out:?}");
    String::from_utf8(out.stdout).unwrap()
}

/// The visible subcommands, from `btfgen --help`'s command list.
fn commands() -> Vec<String> {
    let help = btfgen(&["--help"]);
    let list = help.split("Commands:").nth(1).unwrap();
    let list = list.split("Options:").next().unwrap();
    list.lines()
        .filter_map(|l| l.strip_prefix("  "))
        .filter(|l| !l.starts_with(' '))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|c| *c != "help")
        .map(str::to_string)
        .collect()
}

/// The long flags a `--help` text shows.
fn long_flags(help: &str) -> BTreeSet<String> {
    help.split(|c: char| c.is_whitespace() || [',', '[', '='].contains(&c))
        .filter(|w| w.starts_with("--") && w.len() > 2)
        .map(|w| {
            w.trim_end_matches(|c: char| !c.is_alphanumeric())
                .to_string()
        })
        .filter(|w| w.len() > 2)
        .collect()
}

/// Roff text as `man` shows it, near enough to find flag names: escapes `\-` and `\fB` gone.
fn roff_text(roff: &str) -> String {
    roff.replace("\\-", "-")
        .replace("\\fB", "")
        .replace("\\fI", "")
        .replace("\\fR", "")
}

#[test]
fn man_pages_and_completions_follow_the_clap_definitions() {
    let dir = TempDir::new("generate-docs");
    btfgen(&["generate-docs", dir.0.to_str().unwrap()]);
    let commands = commands();
    assert!(commands.len() >= 7, "{commands:?}");
    let pages: BTreeSet<String> = fs::read_dir(dir.0.join("man1"))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    let mut expected: BTreeSet<String> = commands.iter().map(|c| format!("btfgen-{c}.1")).collect();
    expected.insert("btfgen.1".into());
    assert_eq!(pages, expected);

    let completions: Vec<String> = ["btfgen.bash", "_btfgen", "btfgen.fish"]
        .iter()
        .map(|f| fs::read_to_string(dir.0.join("completions").join(f)).unwrap())
        .collect();
    for command in &commands {
        let help = btfgen(&[command, "--help"]);
        let page =
            roff_text(&fs::read_to_string(dir.0.join(format!("man1/btfgen-{command}.1"))).unwrap());
        let flags = long_flags(&help);
        for flag in &flags {
            assert!(
                page.contains(flag.as_str()),
                "btfgen-{command}(1) lacks {flag}"
            );
            let bare = flag.trim_start_matches('-');
            for (file, text) in ["bash", "zsh", "fish"].iter().zip(&completions) {
                assert!(
                    text.contains(bare),
                    "{file} completion lacks {command} {flag}"
                );
            }
        }
        assert!(
            page.contains(&format!("btfgen {command}")),
            "btfgen-{command}(1) usage"
        );
        for (file, text) in ["bash", "zsh", "fish"].iter().zip(&completions) {
            assert!(
                text.contains(command.as_str()),
                "{file} completion lacks {command}"
            );
        }
    }
    // The check can fail: a flag every page must carry is found.
    let batch = roff_text(&fs::read_to_string(dir.0.join("man1/btfgen-batch.1")).unwrap());
    assert!(batch.contains("--btf-dir") && batch.contains("--out-dir"));

    // The Makefile installs (and uninstalls) exactly the generated pages.
    let makefile =
        fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("Makefile")).unwrap();
    let listed = makefile.split("MAN1_PAGES =").nth(1).unwrap();
    let listed: String = listed
        .lines()
        .take_while(|l| !l.trim().is_empty())
        .collect::<Vec<_>>()
        .join(" ");
    let listed: BTreeSet<String> = listed
        .split_whitespace()
        .filter(|w| *w != "\\")
        .map(|w| format!("{w}.1"))
        .collect();
    assert_eq!(listed, expected, "MAN1_PAGES in the Makefile");
}

/// Every prototype of a C header, whitespace collapsed, comments and preprocessor lines left out.
fn prototypes(header: &str) -> Vec<(String, String)> {
    let mut text = String::new();
    let mut rest = header;
    while let Some(start) = rest.find("/*") {
        text.push_str(&rest[..start]);
        rest = rest[start..]
            .split_once("*/")
            .map_or("", |(_, after)| after);
    }
    text.push_str(rest);
    // C++'s `extern "C" { ... }` wraps the whole header: not a scope of its own here.
    let code: String = text
        .lines()
        .filter(|l| !l.trim_start().starts_with('#') && !l.trim_start().starts_with("//"))
        .filter(|l| !l.contains("extern \"C\""))
        .collect::<Vec<_>>()
        .join(" ");
    let mut out = Vec::new();
    let mut depth = 0i32;
    let mut statement = String::new();
    for c in code.chars() {
        match c {
            '{' => {
                depth += 1;
                statement.clear();
            }
            '}' => {
                depth -= 1;
                statement.clear();
            }
            ';' if depth == 0 => {
                let s = statement.split_whitespace().collect::<Vec<_>>().join(" ");
                statement.clear();
                if s.starts_with("typedef") || !s.ends_with(')') {
                    continue;
                }
                let Some(open) = s.find('(') else { continue };
                let name = s[..open].rsplit([' ', '*']).next().unwrap().to_string();
                out.push((name, format!("{s};")));
            }
            _ if depth == 0 => statement.push(c),
            _ => {}
        }
    }
    out
}

#[test]
fn libbtfgen_3_gives_every_function_of_the_header() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let header = fs::read_to_string(root.join("include/btfgen.h")).unwrap();
    let page = roff_text(&fs::read_to_string(root.join("man/libbtfgen.3")).unwrap());
    let synopsis: BTreeSet<String> = page
        .lines()
        .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
        .collect();
    let protos = prototypes(&header);
    assert!(protos.len() >= 30, "{protos:?}");
    for (name, proto) in &protos {
        assert!(
            synopsis.contains(proto),
            "libbtfgen(3)'s SYNOPSIS lacks {proto}"
        );
        assert!(
            page.matches(name.as_str()).count() >= 2,
            "libbtfgen(3) does not describe {name}"
        );
    }
}
