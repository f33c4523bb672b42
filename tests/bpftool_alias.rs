//! bpftool's spellings: `btfgen gen min_core_btf INPUT OUTPUT OBJECT...` and `btfgen btf dump
//! file FILE [format raw]` exit with bpftool's own status on every case below (bpftool is run
//! on the same arguments), write what `btfgen min-core-btf` writes, and dump what bpftool
//! dumps.

#[path = "support/cli.rs"]
mod cli;

use cli::{TempDir, btfgen};
use std::path::PathBuf;
use std::process::Command;

/// `tests/data/REL` as an argument string, for the `&str` argument lists below.
fn data(rel: &str) -> String {
    cli::data(rel).to_string_lossy().into_owned()
}

fn bpftool() -> Option<PathBuf> {
    ["/usr/sbin/bpftool", "/usr/bin/bpftool", "/sbin/bpftool"]
        .into_iter()
        .map(PathBuf::from)
        .find(|p| p.exists())
}

#[test]
fn the_bpftool_spellings_exit_as_bpftool_does() {
    let Some(bpftool) = bpftool() else {
        eprintln!("SKIP: bpftool not installed");
        return;
    };
    let dir = TempDir::new("alias");
    let p = |name: &str| dir.0.join(name).to_string_lossy().into_owned();
    let fields = std::fs::read(data("targets/btf__fields.btf")).unwrap();
    std::fs::write(p("truncated.btf"), &fields[..100]).unwrap();
    std::fs::write(p("junk.o"), b"junk\n").unwrap();
    std::fs::write(p("magic.btf"), [0x9f, 0xeb, 1, 0]).unwrap();
    let (btf, obj, out) = (
        data("targets/btf__fields.btf"),
        data("progs/fields.bpf.o"),
        p("out.btf"),
    );
    let dir_path = dir.0.to_string_lossy().into_owned();
    let missing = p("missing");
    let (truncated, junk, magic) = (p("truncated.btf"), p("junk.o"), p("magic.btf"));
    let missing_dir_out = p("no/such/dir/out.btf");
    let (ambiguous_btf, ambiguous_obj) = (
        data("targets/btf__ambiguous_off.btf"),
        data("progs/ambiguous.bpf.o"),
    );
    let cases: Vec<Vec<&str>> = vec![
        // gen min_core_btf
        vec!["gen", "min_core_btf", &btf, &out, &obj],
        vec!["gen", "min_core_btf"],
        vec!["gen", "min_core_btf", &btf],
        vec!["gen", "min_core_btf", &btf, &out],
        vec!["gen", "min_core_btf", &missing, &out, &obj],
        vec!["gen", "min_core_btf", &dir_path, &out, &obj],
        vec!["gen", "min_core_btf", &truncated, &out, &obj],
        vec!["gen", "min_core_btf", &junk, &out, &obj],
        vec!["gen", "min_core_btf", &btf, &out, &missing],
        vec!["gen", "min_core_btf", &btf, &out, &junk],
        vec!["gen", "min_core_btf", &btf, &out, &dir_path],
        vec!["gen", "min_core_btf", &btf, &missing_dir_out, &obj],
        vec!["gen", "min_core_btf", &ambiguous_btf, &out, &ambiguous_obj],
        vec!["gen", "unknown"],
        // btf dump file
        vec!["btf", "dump", "file", &btf],
        vec!["btf", "dump", "file", &btf, "format", "raw"],
        vec!["btf", "dump", "file", &obj],
        vec!["btf", "dump", "file", &missing],
        vec!["btf", "dump", "file", &dir_path],
        vec!["btf", "dump", "file", &truncated],
        vec!["btf", "dump", "file", &magic],
        vec!["btf", "dump", "file", &junk],
        vec!["btf", "dump", "file", &btf, "format"],
        vec!["btf", "dump", "file", &btf, "format", "bogus"],
        vec!["btf", "dump", "file", &btf, "format", "raw", "extra"],
        vec!["btf", "dump", "file"],
        vec!["btf", "dump"],
    ];
    for args in &cases {
        let theirs = Command::new(&bpftool).args(args).output().unwrap();
        let ours = btfgen(args);
        assert_eq!(
            ours.status.code(),
            theirs.status.code(),
            "btfgen {}: exit status differs from bpftool's\nbtfgen: {}\nbpftool: {}",
            args.join(" "),
            String::from_utf8_lossy(&ours.stderr),
            String::from_utf8_lossy(&theirs.stderr)
        );
        if args[0] == "btf" && theirs.status.success() {
            assert_eq!(ours.stdout, theirs.stdout, "btfgen {}", args.join(" "));
        }
    }
    // Success writes what min-core-btf writes.
    let alias = btfgen(&["gen", "min_core_btf", &btf, &out, &obj]);
    assert!(alias.status.success());
    let via_alias = std::fs::read(&out).unwrap();
    let main = btfgen(&["min-core-btf", &btf, &out, &obj]);
    assert!(main.status.success());
    assert_eq!(via_alias, std::fs::read(&out).unwrap());
}
