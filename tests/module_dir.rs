//! Module BTFs taken from the kernel's BTF directory, as libbpf takes the loaded modules': a
//! fake sysfs-like directory (`vmlinux` = `base.btf`, a module = `module.btf`) with
//! `--module-btf-dir` gives exactly what naming the module with `--module-btf` gives, and
//! `/sys/kernel/btf/vmlinux` takes the modules next to it unless `--no-modules`.

#[path = "support/cli.rs"]
mod cli;

use cli::{TempDir, btfgen, data};
use std::path::{Path, PathBuf};

/// Minimize `object` with `args` around it; the output bytes (panics on failure).
fn minimized(input: &Path, object: &Path, extra: &[&Path], out: &Path) -> Vec<u8> {
    let mut args: Vec<&Path> = vec![Path::new("min-core-btf"), input, out, object];
    args.extend(extra);
    let run = btfgen(&args);
    assert!(
        run.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&run.stderr)
    );
    std::fs::read(out).unwrap()
}

#[test]
fn a_module_directory_gives_what_naming_its_modules_gives() {
    let dir = TempDir::new("moddir");
    let sysfs = dir.0.join("btf");
    std::fs::create_dir_all(&sysfs).unwrap();
    std::fs::copy(data("targets/base.btf"), sysfs.join("vmlinux")).unwrap();
    std::fs::copy(data("targets/module.btf"), sysfs.join("mod_dev")).unwrap();
    // Not modules: hidden files and directories.
    std::fs::write(sysfs.join(".hidden"), b"not BTF").unwrap();
    std::fs::create_dir_all(sysfs.join("subdir")).unwrap();
    let object = data("progs/module.bpf.o");
    let out = dir.0.join("out.btf");
    let vmlinux = sysfs.join("vmlinux");

    let named = minimized(
        &data("targets/base.btf"),
        &object,
        &[Path::new("--module-btf"), &data("targets/module.btf")],
        &out,
    );
    let from_dir = minimized(
        &vmlinux,
        &object,
        &[Path::new("--module-btf-dir"), &sysfs],
        &out,
    );
    assert_eq!(from_dir, named);
    // Without the option, a vmlinux outside /sys/kernel/btf comes without modules.
    let alone = minimized(&vmlinux, &object, &[], &out);
    assert_eq!(
        alone,
        minimized(&data("targets/base.btf"), &object, &[], &out)
    );
    assert_ne!(
        alone, named,
        "the module's types must matter for module.bpf.o"
    );

    // --no-modules and --module-btf-dir contradict each other.
    let run = btfgen(&[
        Path::new("min-core-btf"),
        &vmlinux,
        &out,
        &object,
        Path::new("--no-modules"),
        Path::new("--module-btf-dir"),
        &sysfs,
    ]);
    assert!(!run.status.success());

    // A directory that is not there is an error naming it.
    let gone = dir.0.join("gone");
    let run = btfgen(&[
        Path::new("min-core-btf"),
        &vmlinux,
        &out,
        &object,
        Path::new("--module-btf-dir"),
        &gone,
    ]);
    assert!(!run.status.success());
    assert!(String::from_utf8_lossy(&run.stderr).contains(gone.to_str().unwrap()));
}

#[test]
fn module_btfs_are_read_only_when_the_kernel_lacks_a_candidate() {
    let dir = TempDir::new("lazy");
    let sysfs = dir.0.join("btf");
    std::fs::create_dir_all(&sysfs).unwrap();
    let broken = sysfs.join("broken_module");
    std::fs::write(&broken, b"not BTF").unwrap();
    let out = dir.0.join("out.btf");
    let with_dir = [Path::new("--module-btf-dir"), sysfs.as_path()];
    // Every type fields.bpf.o asks for is in btf__fields.btf: the broken module is not read.
    let target = data("targets/btf__fields.btf");
    let object = data("progs/fields.bpf.o");
    assert_eq!(
        minimized(&target, &object, &with_dir, &out),
        minimized(&target, &object, &[], &out)
    );
    // module.bpf.o's module types are not in base.btf: the modules are read, and the broken
    // one is an error naming it.
    let (base, module) = (data("targets/base.btf"), data("progs/module.bpf.o"));
    let mut args: Vec<&Path> = vec![Path::new("min-core-btf"), &base, &out, &module];
    args.extend(with_dir);
    let run = btfgen(&args);
    assert!(!run.status.success());
    assert!(
        String::from_utf8_lossy(&run.stderr).contains(broken.to_str().unwrap()),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
}

#[test]
fn sysfs_vmlinux_takes_the_loaded_modules_unless_no_modules() {
    let sysfs = Path::new("/sys/kernel/btf");
    let vmlinux = sysfs.join("vmlinux");
    if !vmlinux.exists() {
        eprintln!("SKIP: /sys/kernel/btf/vmlinux not present");
        return;
    }
    let dir = TempDir::new("sysfs");
    let out = dir.0.join("out.btf");
    let object = data("progs/task.bpf.o");
    let mut modules: Vec<PathBuf> = std::fs::read_dir(sysfs)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p != &vmlinux)
        .collect();
    modules.sort();
    let default = minimized(&vmlinux, &object, &[], &out);
    let without = minimized(&vmlinux, &object, &[Path::new("--no-modules")], &out);
    let mut named_args: Vec<&Path> = Vec::new();
    for m in &modules {
        named_args.push(Path::new("--module-btf"));
        named_args.push(m);
    }
    let named = minimized(&vmlinux, &object, &named_args, &out);
    assert_eq!(default, named);
    if modules.is_empty() {
        eprintln!("SKIP (part): no module BTFs loaded in /sys/kernel/btf");
    }
    // task.bpf.o's types are all in vmlinux: modules are searched only where it has none.
    assert_eq!(default, without);
}
