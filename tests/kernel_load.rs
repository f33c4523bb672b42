//! Loading the fixtures meant for the running kernel (manifest pairs with target `vmlinux`)
//! with raw `bpf(2)` calls, both ways `btfgen::core::kernel` prepares them:
//!
//! - kernel-side CO-RE: unpatched assembled instructions plus `core_relos`, and the object's BTF
//!   as `prog_btf_fd` with func_info and line_info;
//! - user-space CO-RE: the instructions relocated here against `/sys/kernel/btf/vmlinux`.
//!
//! Both must load, and the kernel's translated (xlated) instructions must be the same for the
//! two. Then the same objects are loaded by libbpf (`bpftool prog loadall`) and each program's
//! xlated instructions must equal ours: assembly and relocation as libbpf does them.
//!
//! Tests that need BPF syscalls print `SKIP: reason` and pass where they are refused; the
//! libbpf comparison skips loudly when bpftool is missing.

use btfgen::btf::Btf;
use btfgen::core::kernel::{
    CORE_RELO_REC_SIZE, FUNC_INFO_REC_SIZE, LINE_INFO_REC_SIZE, ObjectLoad, ProgramLoad,
    kernel_core, user_core,
};
use btfgen::core::{CandidateIndex, Targets};
use btfgen::log::LibbpfLog;
use btfgen::object::BpfObject;
use btfgen::object::assemble::assemble;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::process::Command;

const BPF_PROG_LOAD: i32 = 5;
const BPF_OBJ_GET_INFO_BY_FD: i32 = 15;
const BPF_BTF_LOAD: i32 = 18;
const BPF_PROG_TYPE_SOCKET_FILTER: u32 = 1;
const BPF_PROG_TYPE_RAW_TRACEPOINT: u32 = 17;
/// `sizeof(union bpf_attr)` as of Linux 6.1's UAPI, which has every field used here.
const ATTR_SIZE: usize = 144;
/// `sizeof(struct bpf_prog_info)` as of Linux 6.1; the kernel copies what it knows of it.
const PROG_INFO_SIZE: usize = 232;
const VMLINUX: &str = "/sys/kernel/btf/vmlinux";

fn data_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data")
}

fn put32(buf: &mut [u8], at: usize, v: u32) {
    buf[at..at + 4].copy_from_slice(&v.to_ne_bytes());
}

fn put64(buf: &mut [u8], at: usize, v: u64) {
    buf[at..at + 8].copy_from_slice(&v.to_ne_bytes());
}

fn get32(buf: &[u8], at: usize) -> u32 {
    u32::from_ne_bytes(buf[at..at + 4].try_into().unwrap())
}

fn addr(bytes: &[u8]) -> u64 {
    if bytes.is_empty() {
        0
    } else {
        bytes.as_ptr() as u64
    }
}

/// `bpf(cmd, attr, attr.len())`, returning the new fd for commands that create one.
fn bpf(cmd: i32, attr: &mut [u8]) -> io::Result<i64> {
    // SAFETY: `attr` is a live, writable buffer of `attr.len()` bytes laid out as the member of
    // `union bpf_attr` that `cmd` reads; every pointer stored in it refers to a buffer the
    // caller keeps alive (and, for outputs, writable) across this call.
    let ret = unsafe {
        libc::syscall(
            libc::SYS_bpf,
            cmd,
            attr.as_mut_ptr(),
            attr.len() as libc::c_uint,
        )
    };
    if ret < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(ret)
    }
}

/// Wrap an fd a `bpf(2)` command just returned.
fn owned(fd: i64) -> OwnedFd {
    let fd = i32::try_from(fd).expect("fd fits an int");
    // SAFETY: `fd` was just returned by the kernel for this process and nothing else owns it.
    unsafe { OwnedFd::from_raw_fd(fd) }
}

/// A verifier log buffer for a failed load's retry.
const LOG_SIZE: usize = 1 << 20;

/// Run `load` without a log; when it fails, run it again with a log at level 1 and put the
/// kernel's log in the error.
fn retry_with_log(load: impl Fn(&mut [u8], u32) -> io::Result<OwnedFd>) -> io::Result<OwnedFd> {
    load(&mut [], 0).map_err(|e| {
        let mut log = vec![0u8; LOG_SIZE];
        let _ = load(&mut log, 1);
        let end = log.iter().position(|&b| b == 0).unwrap_or(log.len());
        io::Error::new(
            e.kind(),
            format!("{e}\n{}", String::from_utf8_lossy(&log[..end])),
        )
    })
}

fn btf_load(btf: &[u8]) -> io::Result<OwnedFd> {
    let load = |log: &mut [u8], level: u32| {
        let mut attr = [0u8; ATTR_SIZE];
        put64(&mut attr, 0, addr(btf));
        put64(&mut attr, 8, addr(log));
        put32(&mut attr, 16, btf.len() as u32);
        put32(&mut attr, 20, log.len() as u32);
        put32(&mut attr, 24, level);
        bpf(BPF_BTF_LOAD, &mut attr).map(owned)
    };
    retry_with_log(load)
}

/// What one `BPF_PROG_LOAD` passes.
struct ProgLoad<'b> {
    prog_type: u32,
    name: &'b str,
    insns: &'b [u8],
    btf_fd: Option<&'b OwnedFd>,
    func_info: &'b [u8],
    line_info: &'b [u8],
    core_relos: &'b [u8],
}

fn prog_load(p: &ProgLoad<'_>) -> io::Result<OwnedFd> {
    let license = b"GPL\0";
    let load = |log: &mut [u8], level: u32| {
        let mut attr = [0u8; ATTR_SIZE];
        put32(&mut attr, 0, p.prog_type);
        put32(&mut attr, 4, (p.insns.len() / 8) as u32);
        put64(&mut attr, 8, addr(p.insns));
        put64(&mut attr, 16, addr(license));
        put32(&mut attr, 24, level);
        put32(&mut attr, 28, log.len() as u32);
        put64(&mut attr, 32, addr(log));
        let name = &p.name.as_bytes()[..p.name.len().min(15)];
        attr[48..48 + name.len()].copy_from_slice(name);
        if let Some(fd) = p.btf_fd {
            put32(&mut attr, 72, fd.as_raw_fd() as u32);
        }
        if !p.func_info.is_empty() {
            put32(&mut attr, 76, FUNC_INFO_REC_SIZE);
            put64(&mut attr, 80, addr(p.func_info));
            put32(&mut attr, 88, p.func_info.len() as u32 / FUNC_INFO_REC_SIZE);
        }
        if !p.line_info.is_empty() {
            put32(&mut attr, 92, LINE_INFO_REC_SIZE);
            put64(&mut attr, 96, addr(p.line_info));
            put32(
                &mut attr,
                104,
                p.line_info.len() as u32 / LINE_INFO_REC_SIZE,
            );
        }
        if !p.core_relos.is_empty() {
            put32(
                &mut attr,
                116,
                p.core_relos.len() as u32 / CORE_RELO_REC_SIZE,
            );
            put64(&mut attr, 128, addr(p.core_relos));
            put32(&mut attr, 136, CORE_RELO_REC_SIZE);
        }
        bpf(BPF_PROG_LOAD, &mut attr).map(owned)
    };
    retry_with_log(load)
}

/// The kernel's translated instructions of a loaded program.
fn xlated(fd: &OwnedFd) -> Vec<u8> {
    let get = |info: &mut [u8; PROG_INFO_SIZE]| {
        let mut attr = [0u8; ATTR_SIZE];
        put32(&mut attr, 0, fd.as_raw_fd() as u32);
        put32(&mut attr, 4, PROG_INFO_SIZE as u32);
        put64(&mut attr, 8, info.as_mut_ptr() as u64);
        bpf(BPF_OBJ_GET_INFO_BY_FD, &mut attr).expect("BPF_OBJ_GET_INFO_BY_FD");
    };
    let mut info = [0u8; PROG_INFO_SIZE];
    get(&mut info);
    let len = get32(&info, 20) as usize;
    let mut insns = vec![0u8; len];
    let mut info = [0u8; PROG_INFO_SIZE];
    put32(&mut info, 20, len as u32);
    put64(&mut info, 32, insns.as_mut_ptr() as u64);
    get(&mut info);
    assert_eq!(
        get32(&info, 20) as usize,
        len,
        "xlated length changed between calls"
    );
    insns
}

/// `Some(reason)` when this process cannot load BPF programs.
fn bpf_refused() -> Option<String> {
    if !Path::new(VMLINUX).exists() {
        return Some(format!("{VMLINUX} is missing"));
    }
    // r0 = 0; exit
    let insns = [0xb7, 0, 0, 0, 0, 0, 0, 0, 0x95, 0, 0, 0, 0, 0, 0, 0];
    let probe = ProgLoad {
        prog_type: BPF_PROG_TYPE_SOCKET_FILTER,
        name: "btfgen_probe",
        insns: &insns,
        btf_fd: None,
        func_info: &[],
        line_info: &[],
        core_relos: &[],
    };
    prog_load(&probe).err().map(|e| {
        format!(
            "BPF_PROG_LOAD refused: {}",
            e.to_string().lines().next().unwrap_or("")
        )
    })
}

/// Program type from the section name, for the section names the fixtures use.
fn prog_type(section: &str) -> u32 {
    if section.starts_with("raw_tp/") || section.starts_with("raw_tracepoint/") {
        BPF_PROG_TYPE_RAW_TRACEPOINT
    } else {
        panic!("no program type known for section {section}")
    }
}

/// Objects of the manifest pairs whose target is the running kernel.
fn kernel_objects() -> Vec<String> {
    let text = std::fs::read_to_string(data_dir().join("manifest.txt")).unwrap();
    let objects: Vec<String> = text
        .lines()
        .map(|l| l.split('#').next().unwrap().trim())
        .filter_map(|l| {
            let fields: Vec<&str> = l.split_whitespace().collect();
            (fields.get(1) == Some(&"vmlinux")).then(|| fields[0].to_string())
        })
        .collect();
    for needed in ["progs/task.bpf.o", "progs/multi.bpf.o", "progs/calls.bpf.o"] {
        assert!(
            objects.iter().any(|o| o == needed),
            "{needed} not in the manifest"
        );
    }
    objects
}

/// Load `p` with its BTF, func_info and line_info, and with its CO-RE records when it has any.
fn load(load: &ObjectLoad<'_>, p: &ProgramLoad<'_>, btf_fd: &OwnedFd) -> io::Result<OwnedFd> {
    let e = load.endian;
    let (insns, func_info) = (p.insn_bytes(e).unwrap(), p.func_info_bytes(e).unwrap());
    let (line_info, core_relos) = (p.line_info_bytes(e).unwrap(), p.core_relo_bytes(e).unwrap());
    prog_load(&ProgLoad {
        prog_type: prog_type(p.section_name()),
        name: p.name(),
        insns: &insns,
        btf_fd: Some(btf_fd),
        func_info: &func_info,
        line_info: &line_info,
        core_relos: &core_relos,
    })
}

/// The xlated instructions of every program of `object`, loaded with kernel-side and with
/// user-space CO-RE, after checking the two agree.
fn load_both_ways(object: &str, vmlinux: &[u8]) -> Vec<(String, Vec<u8>)> {
    let data = std::fs::read(data_dir().join(object)).unwrap();
    let obj = BpfObject::parse(&data).unwrap();
    let local = Btf::parse(obj.btf_bytes().unwrap()).unwrap();
    let kernel = kernel_core(&obj, &local).unwrap();
    let target = Btf::parse(vmlinux).unwrap();
    let targets = Targets::new(&target);
    let user = user_core(
        &obj,
        &local,
        &targets,
        &mut CandidateIndex::new(),
        &mut LibbpfLog,
    )
    .unwrap();
    assert_eq!(kernel.btf, user.btf);
    let btf_fd = btf_load(&kernel.btf).unwrap_or_else(|e| panic!("{object}: BPF_BTF_LOAD: {e}"));

    let mut out = Vec::new();
    let mut relocated_something = false;
    assert_eq!(kernel.programs.len(), user.programs.len());
    for (k, u) in kernel.programs.iter().zip(&user.programs) {
        let name = k.name();
        assert_eq!(name, u.name());
        assert!(u.core_relos.is_empty());
        assert!(
            !k.program.func_info.is_empty(),
            "{object} {name}: no func_info"
        );
        relocated_something |= k.program.insns != u.program.insns;
        let kfd = load(&kernel, k, &btf_fd)
            .unwrap_or_else(|e| panic!("{object} {name}: kernel-side CO-RE load failed: {e}"));
        let ufd = load(&user, u, &btf_fd)
            .unwrap_or_else(|e| panic!("{object} {name}: user-space CO-RE load failed: {e}"));
        let (kx, ux) = (xlated(&kfd), xlated(&ufd));
        assert_eq!(
            kx, ux,
            "{object} {name}: xlated differs between kernel-side and user-space CO-RE"
        );
        if k.program.insns != u.program.insns {
            // The records are what relocates: without them the same code loads (if at all)
            // unrelocated.
            let bare = ProgramLoad {
                program: assemble(&obj, Some(&local), name, &[]).unwrap(),
                core_relos: Vec::new(),
            };
            if let Ok(fd) = load(&kernel, &bare, &btf_fd) {
                assert_ne!(
                    xlated(&fd),
                    kx,
                    "{object} {name}: CO-RE records made no difference"
                );
            }
        }
        println!(
            "{object} {name}: loaded with kernel-side CO-RE ({} records) and user-space CO-RE; \
             {} insns assembled, {} xlated, identical",
            k.core_relos.len(),
            k.program.insns.len(),
            kx.len() / 8
        );
        out.push((name.to_string(), ux));
    }
    assert!(
        relocated_something,
        "{object}: CO-RE changed no instruction, so the test shows nothing"
    );
    out
}

#[test]
fn kernel_side_and_user_space_core_load_the_same_program() {
    if let Some(reason) = bpf_refused() {
        println!("SKIP: {reason}");
        return;
    }
    let vmlinux = std::fs::read(VMLINUX).unwrap();
    for object in kernel_objects() {
        let programs = load_both_ways(&object, &vmlinux);
        assert!(!programs.is_empty(), "{object}: no programs");
    }
}

/// Kernel-side CO-RE sizes a load through an array member by one element, as libbpf 1.6+ and
/// btfgen do: `kmemsize.bpf.o` reads `*t->comm` with `comm` declared 8 bytes long (16 in the
/// kernel), which libbpf 1.1 poisons. Kernels older than the fix poison it too (their verifier
/// log says the instruction "accesses field incorrectly"); those are named and skipped.
#[test]
fn kernel_side_core_sizes_array_loads_by_the_element() {
    if let Some(reason) = bpf_refused() {
        println!("SKIP: {reason}");
        return;
    }
    let object = "progs/kmemsize.bpf.o";
    let data = std::fs::read(data_dir().join(object)).unwrap();
    let obj = BpfObject::parse(&data).unwrap();
    let local = Btf::parse(obj.btf_bytes().unwrap()).unwrap();
    let kernel = kernel_core(&obj, &local).unwrap();
    let btf_fd = btf_load(&kernel.btf).unwrap();
    if let Err(e) = load(&kernel, &kernel.programs[0], &btf_fd)
        && e.to_string().contains("accesses field incorrectly")
    {
        let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
        println!(
            "SKIP: kernel {} sizes loads through array members by the whole array (libbpf \
             1.1's rule): it predates the fix",
            release.trim()
        );
        return;
    }
    let vmlinux = std::fs::read(VMLINUX).unwrap();
    load_both_ways(object, &vmlinux);
}

/// A bpffs directory for one test's pins, removed on drop.
struct PinDir(PathBuf);

impl Drop for PinDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn bpftool(args: &[&str]) -> io::Result<std::process::Output> {
    Command::new("bpftool").args(args).output()
}

#[test]
fn assembled_programs_match_libbpf() {
    if let Some(reason) = bpf_refused() {
        println!("SKIP: {reason}");
        return;
    }
    if bpftool(&["version"]).is_err() {
        println!("SKIP: bpftool not found; cannot compare with libbpf");
        eprintln!("SKIP: bpftool not found; cannot compare with libbpf");
        return;
    }
    let vmlinux = std::fs::read(VMLINUX).unwrap();
    for object in kernel_objects() {
        let ours = load_both_ways(&object, &vmlinux);
        let stem = Path::new(&object)
            .file_stem()
            .unwrap()
            .to_string_lossy()
            .replace('.', "_");
        let pins = PinDir(PathBuf::from(format!(
            "/sys/fs/bpf/btfgen_test_{}_{stem}",
            std::process::id()
        )));
        let path = data_dir().join(&object);
        let out = bpftool(&[
            "prog",
            "loadall",
            &path.to_string_lossy(),
            &pins.0.to_string_lossy(),
        ])
        .unwrap();
        if !out.status.success() {
            let stderr = String::from_utf8_lossy(&out.stderr);
            if stderr.contains("bpffs") || stderr.contains("mount") {
                println!("SKIP: bpftool cannot pin programs: {stderr}");
                return;
            }
            panic!("{object}: bpftool prog loadall failed:\n{stderr}");
        }
        let mut pinned: Vec<String> = std::fs::read_dir(&pins.0)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        pinned.sort();
        let mut names: Vec<String> = ours.iter().map(|(n, _)| n.clone()).collect();
        names.sort();
        assert_eq!(
            pinned, names,
            "{object}: libbpf loaded other programs than we assembled"
        );
        for (name, xlated) in &ours {
            let dump = std::env::temp_dir().join(format!(
                "btfgen_{}_{stem}_{name}.xlated",
                std::process::id()
            ));
            let pin = pins.0.join(name);
            let out = bpftool(&[
                "prog",
                "dump",
                "xlated",
                "pinned",
                &pin.to_string_lossy(),
                "file",
                &dump.to_string_lossy(),
            ])
            .unwrap();
            assert!(
                out.status.success(),
                "bpftool prog dump: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            let libbpf = std::fs::read(&dump).unwrap();
            let _ = std::fs::remove_file(&dump);
            assert_eq!(
                &libbpf, xlated,
                "{object} {name}: our xlated instructions differ from libbpf's"
            );
            println!(
                "{object} {name}: xlated equals libbpf's ({} insns)",
                libbpf.len() / 8
            );
        }
    }
}

#[cfg(feature = "cli")]
#[test]
fn records_cli_prints_the_kernel_side_records() {
    let object = data_dir().join("progs/calls.bpf.o");
    // --btf is required by `relocate`; --records does not use the target.
    let target = data_dir().join("targets/base.btf");
    let out = Command::new(env!("CARGO_BIN_EXE_btfgen"))
        .args(["relocate", "--records", "--json", "--btf"])
        .args([&target, &object])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let data = std::fs::read(&object).unwrap();
    let obj = BpfObject::parse(&data).unwrap();
    let local = Btf::parse(obj.btf_bytes().unwrap()).unwrap();
    let load = kernel_core(&obj, &local).unwrap();
    let stdout = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<serde_json::Value> = stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), load.programs.len());
    for (line, p) in lines.iter().zip(&load.programs) {
        assert_eq!(line["program"], p.name());
        assert_eq!(line["insns"], p.program.insns.len());
        let relos = line["core_relos"].as_array().unwrap();
        assert_eq!(relos.len(), p.core_relos.len());
        for (json, r) in relos.iter().zip(&p.core_relos) {
            assert_eq!(json["insn_off"], r.insn_off);
            assert_eq!(json["type_id"], r.type_id);
            assert_eq!(json["access"], local.name(r.access_str_off).unwrap());
        }
    }
    let both = &lines[1];
    assert_eq!(both["program"], "calls_both");
    let kinds: Vec<&str> = both["core_relos"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["kind"].as_str().unwrap())
        .collect();
    assert_eq!(
        kinds,
        ["byte_off", "byte_off", "byte_sz", "byte_off", "byte_off"]
    );
}
