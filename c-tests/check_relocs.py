#!/usr/bin/env python3
"""Differential checks of btfgen against two real libbpfs and bpftool.

The oracles are the libbpf_relocs harness linked with libbpf 1.7 (the current release, built
from the libbpf-sys crate's source by libbpf17.sh) and with Debian's libbpf 1.1. For every pair
of tests/data/manifest.txt:
  1. relocate: `btfgen relocate --json` equals what libbpf 1.7 computes, poison reasons
     included; where 1.1 computes something else the difference is printed (and must show up
     where a fixture exists to show it, EXPECTED_DISAGREEMENTS);
  2. minimize: each libbpf relocating with btfgen's minimized BTF as btf_custom_path gives the
     same results as that libbpf with the full target BTF (target types compared by kind and
     name, since ids change), and where the kernel accepts the object with the full BTF it
     accepts it with the minimized one;
  3. size: btfgen's minimized BTF is never larger than `bpftool gen min_core_btf`'s;
  4. cilium/ebpf (cilium/cilium_relocs.go) reads the minimized BTF and relocates every program
     with it exactly as with the full target BTF (plain targets; it reads no split BTF).
Also one minimized BTF built from all objects that share a target, big-endian objects against
their little-endian twins' libbpf 1.7 results (the harness skips foreign byte order), and every
object against each real kernel BTF of KERNEL_ARCHIVES (skipped,
loudly, where btfgen cannot read that BTF yet) and the running kernel's (every object not
already paired with it).

Exit status 0 only if every check passed; exit 77 (skip) if the harness cannot run BPF syscalls.
"""
import glob
import json
import os
import subprocess
import sys
import tarfile
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
DATA = os.path.join(ROOT, "tests", "data")
# (name, harness); the first is the reference `btfgen relocate` must equal.
ORACLES = [
    ("libbpf 1.7", os.path.join(HERE, "out", "libbpf_relocs-1.7")),
    ("libbpf 1.1", os.path.join(HERE, "out", "libbpf_relocs")),
]
REFERENCE = ORACLES[0][0]
# A loader that is not libbpf: cilium/ebpf (Debian's 0.9.1), relocating in user space.
CILIUM = os.path.join(HERE, "out", "cilium_relocs")
KEYS = ["insn", "kind", "poison", "poison_reason", "orig", "new", "target"]
# Pairs whose fixtures exist to show a difference between libbpf 1.1 and 1.7 (object, target).
EXPECTED_DISAGREEMENTS = {("progs/memsize.bpf.o", "targets/btf__memsize.btf")}
# Real kernel BTFs (BTFHub-style .btf.tar.xz), each paired with every fixture object.
KERNEL_ARCHIVES = ["targets/vmlinux-7.1.btf.tar.xz"]
BTFGEN = os.environ.get("BTFGEN", os.path.join(ROOT, "target", "release", "btfgen"))
VMLINUX = "/sys/kernel/btf/vmlinux"
SKIP = 77

failures = []
passes = 0


def check(ok, what):
    global passes
    if ok:
        passes += 1
    else:
        failures.append(what)
        print("FAIL:", what)


def pairs():
    with open(os.path.join(DATA, "manifest.txt")) as f:
        for line in f:
            words = line.split("#", 1)[0].split()
            if not words:
                continue
            obj, target = words[0], words[1]
            base = words[2] if len(words) > 2 else None
            yield (
                os.path.join(DATA, obj),
                VMLINUX if target == "vmlinux" else os.path.join(DATA, target),
                os.path.join(DATA, base) if base else None,
            )


def libbpf(harness, obj, target, base=None):
    """(records, loaded) from the harness; None if it skipped."""
    args = [harness, obj, target] + ([base] if base else [])
    run = subprocess.run(args, capture_output=True, text=True)
    if run.returncode == SKIP:
        return None
    if run.returncode != 0:
        raise SystemExit(f"harness {harness} failed on {obj} {target}: {run.stderr.strip()}")
    records = [json.loads(l) for l in run.stdout.splitlines() if l.strip()]
    return records, "libbpf_relocs: load ok" in run.stderr


def btfgen_relocate(obj, target, base=None):
    args = [BTFGEN, "relocate", "--json", "--btf", target] + (["--base-btf", base] if base else []) + [obj]
    run = subprocess.run(args, capture_output=True, text=True)
    return {(r["program"], r["relo"]): r for r in (json.loads(l) for l in run.stdout.splitlines() if l.strip())}


def minimize(target, base, objs, out):
    args = [BTFGEN, "min-core-btf", target, out] + objs + (["--base-btf", base] if base else [])
    run = subprocess.run(args, capture_output=True, text=True)
    return run.returncode == 0, run.stderr.strip()


def type_of(target):
    """'[12] struct foo' -> 'struct foo' (ids differ between full and minimized BTF)."""
    return None if target is None else target.split("] ", 1)[-1]


def same(lib, ours, keys, what, strip_ids=False):
    if "error" in lib or "error" in ours:
        check(("error" in lib) == ("error" in ours), f"{what}: error in one only: {lib} / {ours}")
        return
    for k in keys:
        a, b = lib.get(k), ours.get(k)
        if k == "target" and strip_ids:
            a, b = type_of(a), type_of(b)
        if k == "new" and lib.get("kind") == "target_type_id" and strip_ids:
            continue  # a type id: differs by construction, compared through "target"
        if a != b:
            check(False, f"{what}: {k} differs: libbpf {lib} / btfgen {ours}")
            return
    check(True, what)


def compare_relocate(obj, target, base, lib):
    ours = btfgen_relocate(obj, target, base)
    for rec in lib:
        key = (rec["program"], rec["relo"])
        o = ours.get(key)
        name = f"relocate {os.path.basename(obj)} vs {os.path.basename(target)} prog {key[0]} relo #{key[1]}"
        if o is None:
            check(False, f"{name}: missing from btfgen")
            continue
        same(rec, o, KEYS, name)
    if not any("error" in r for r in lib):
        # libbpf stops at the first failure; without one it must have seen every record.
        check(len(lib) == len(ours), f"relocate {obj} vs {target}: {len(lib)} libbpf / {len(ours)} btfgen records")


def compare_min(objs, target, base, tmp, full_results):
    """Minimize `objs` for `target` once; under every oracle, relocating with the output must
    give what that oracle gives with the full target. `full_results[oracle][obj]` is that
    oracle's (records, loaded) with the full target."""
    label = "+".join(os.path.basename(o) for o in objs)
    out = os.path.join(tmp, "min.btf")
    ok, err = minimize(target, base, objs, out)
    reference = full_results[REFERENCE]
    if any(any("error" in r for r in reference[o][0]) for o in objs):
        check(not ok, f"min-core-btf {label} vs {target}: must fail like libbpf ({err})")
        return
    check(ok, f"min-core-btf {label} vs {target}: {err}")
    if not ok:
        return
    for oracle, harness in ORACLES:
        for obj in objs:
            full, full_loaded = full_results[oracle][obj]
            got = libbpf(harness, obj, out)
            if got is None:
                return
            mini, mini_loaded = got
            by_key = {(r["program"], r["relo"]): r for r in mini}
            for rec in full:
                key = (rec["program"], rec["relo"])
                name = f"{oracle}: minimized ({label}) {os.path.basename(obj)} vs {os.path.basename(target)} prog {key[0]} relo #{key[1]}"
                m = by_key.get(key)
                if m is None:
                    check(False, f"{name}: missing with the minimized BTF")
                    continue
                same(rec, m, KEYS, name, strip_ids=True)
            if full_loaded:
                check(mini_loaded, f"{oracle}: kernel accepts {obj} with full {target} but not with the minimized BTF")
    if base is None:
        for obj in objs:
            compare_cilium(obj, target, out, label)
    return out


def cilium(obj, btf):
    """cilium/ebpf's relocated programs, {program: {"insns" or "error": ...}}."""
    run = subprocess.run([CILIUM, obj, btf], capture_output=True, text=True)
    if run.returncode != 0:
        return {"": {"error": run.stderr.strip()}}
    return {r["program"]: r for r in (json.loads(l) for l in run.stdout.splitlines() if l.strip())}


def compare_cilium(obj, target, out, label):
    if not os.path.exists(CILIUM):
        return
    full, mini = cilium(obj, target), cilium(obj, out)
    name = f"cilium/ebpf: minimized ({label}) {os.path.basename(obj)} vs {os.path.basename(target)}"
    for prog, rec in full.items():
        m = mini.get(prog, {"error": "missing"})
        if "error" in rec:
            # cilium/ebpf's own limits: it must fail with the minimized BTF too, unless it cannot
            # read the full target at all (0.9.1 knows no ENUM64, kind 19, nor the 32-byte
            # header of Linux 7.1), which leaves nothing to compare with.
            unreadable = rec["error"].startswith("target BTF:")
            check("error" in m or unreadable, f"{name} prog {prog}: fails only with the full BTF: {rec['error']}")
            print(f"note: {name} prog {prog}: cilium/ebpf fails with the full BTF ({rec['error']}); "
                  f"minimized: {m.get('error', 'relocated')}")
        else:
            check(m.get("insns") == rec["insns"], f"{name} prog {prog}: {m.get('error') or 'instructions differ'}")


def note_disagreements(obj, target, results):
    """Print where libbpf 1.1 and 1.7 relocate differently; returns how many records differ."""
    ref = {(r["program"], r["relo"]): r for r in results[REFERENCE][0]}
    count = 0
    for oracle, _ in ORACLES[1:]:
        for rec in results[oracle][0]:
            other = ref.get((rec["program"], rec["relo"]))
            if other is None or any(rec.get(k) != other.get(k) for k in KEYS):
                count += 1
                print(f"note: {os.path.basename(obj)} vs {os.path.basename(target)} prog {rec['program']} "
                      f"relo #{rec['relo']}: {oracle} {rec} / {REFERENCE} {other}")
    return count


def compare_size(objs, target, ours, tmp):
    """btfgen's minimized BTF is never larger than bpftool's."""
    theirs = os.path.join(tmp, "bpftool.btf")
    run = subprocess.run(["bpftool", "gen", "min_core_btf", target, theirs] + objs, capture_output=True, text=True)
    if run.returncode != 0:
        print(f"note: bpftool gen min_core_btf failed on {objs} vs {target}: {run.stderr.strip()}")
        return
    a, b = os.path.getsize(ours), os.path.getsize(theirs)
    label = f"{'+'.join(os.path.basename(o) for o in objs)} vs {os.path.basename(target)}"
    print(f"size {label}: btfgen {a} bytes, bpftool {b} bytes")
    check(a <= b, f"btfgen's minimized BTF ({a} bytes) larger than bpftool's ({b} bytes) for {objs} vs {target}")


def oracle_results(obj, target, base):
    """Every oracle's (records, loaded) for one pair; None if the harness skipped."""
    results = {}
    for oracle, harness in ORACLES:
        got = libbpf(harness, obj, target, base)
        if got is None:
            return None
        results[oracle] = got
    return results


def check_pair(obj, target, base, tmp, results, label=None):
    compare_relocate(obj, target, base, results[REFERENCE][0])
    differing = note_disagreements(obj, target, results)
    if label in EXPECTED_DISAGREEMENTS:
        check(differing > 0, f"{label}: libbpf 1.1 and 1.7 must disagree here (the fixture's point)")
    per_oracle = {o: {obj: r} for o, r in results.items()}
    out = compare_min([obj], target, base, tmp, per_oracle)
    if out and base is None:
        compare_size([obj], target, out, tmp)


def btfgen_reads(path):
    run = subprocess.run([BTFGEN, "dump", path], capture_output=True, text=True)
    return run.returncode == 0, run.stderr.strip()


def main():
    if not os.path.exists(CILIUM):
        print(f"SKIP: {CILIUM} not built (needs golang-go and golang-github-cilium-ebpf-dev): "
              "cilium/ebpf comparisons NOT RUN")
    full_results = {}
    by_target = {}
    twins = {}
    kernel_objs = []
    with tempfile.TemporaryDirectory() as tmp:
        for obj, target, base in pairs():
            if target == VMLINUX:
                kernel_objs.append(obj)
            results = oracle_results(obj, target, base)
            if results is None:
                if obj.endswith(".bpfeb.o"):
                    twins[obj] = (target, base)
                    continue
                print(f"SKIP: libbpf harness cannot run BPF syscalls here ({obj})")
                return SKIP
            full_results[(obj, target, base)] = results
            label = (os.path.relpath(obj, DATA), os.path.relpath(target, DATA))
            check_pair(obj, target, base, tmp, results, label)
            by_target.setdefault((target, base), {})[obj] = results
        for (target, base), per_obj in by_target.items():
            objs = sorted(o for o, r in per_obj.items() if not any("error" in x for x in r[REFERENCE][0]))
            if len(objs) > 1:
                per_oracle = {o: {obj: per_obj[obj][o] for obj in objs} for o, _ in ORACLES}
                out = compare_min(objs, target, base, tmp, per_oracle)
                if out and base is None:
                    compare_size(objs, target, out, tmp)
        # Big-endian objects: same records as their little-endian twins, so libbpf's results
        # for the twin are the reference for everything byte order does not change.
        for obj, (target, base) in twins.items():
            twin = obj.replace(".bpfeb.o", ".bpf.o")
            ref = full_results.get((twin, target, base))
            if ref is None or os.path.basename(twin) == "bitfields.bpf.o":
                print(f"note: {os.path.basename(obj)} has no little-endian reference; checked by unit tests only")
                continue
            ours = btfgen_relocate(obj, target, base)
            for rec in ref[REFERENCE][0]:
                key = (rec["program"], rec["relo"])
                o = ours.get(key)
                name = f"big-endian {os.path.basename(obj)} vs {os.path.basename(target)} prog {key[0]} relo #{key[1]}"
                if o is None:
                    check(False, f"{name}: missing")
                else:
                    same(rec, o, KEYS, name, strip_ids=True)
        # Real kernel BTFs: every little-endian fixture object and the benchmark's
        # libbpf-tools-style objects (benches/objs), alone and all together (most fixtures find
        # few or no candidates there, which is a result too).
        objects = sorted({obj for obj, _, _ in pairs() if not obj.endswith(".bpfeb.o")}
                         | set(glob.glob(os.path.join(ROOT, "benches", "objs", "*.bpf.o"))))
        kernels = []
        if os.path.exists(VMLINUX):
            paired = {obj for (obj, target, _) in full_results if target == VMLINUX}
            kernels.append(("the running kernel", VMLINUX, [o for o in objects if o not in paired]))
        for archive in KERNEL_ARCHIVES:
            with tarfile.open(os.path.join(DATA, archive), "r:xz") as tar:
                member = next(m for m in tar.getmembers() if m.isfile())
                target = os.path.join(tmp, os.path.basename(member.name))
                with open(target, "wb") as f:
                    f.write(tar.extractfile(member).read())
            readable, err = btfgen_reads(target)
            if not readable:
                print(f"SKIP: {archive}: btfgen cannot read this kernel BTF yet ({err}); "
                      f"its {len(objects)} differential pairs NOT CHECKED")
                continue
            kernels.append((archive, target, objects))
        for name, target, objs in kernels:
            per_obj = {}
            for obj in objs:
                results = oracle_results(obj, target, None)
                if results is None:
                    print(f"SKIP: libbpf harness cannot run BPF syscalls here ({obj})")
                    return SKIP
                check_pair(obj, target, None, tmp, results)
                if not any("error" in x for x in results[REFERENCE][0]):
                    per_obj[obj] = results
            print(f"{name}: {len(objs)} objects checked")
            if len(per_obj) > 1:
                per_oracle = {o: {obj: r[o] for obj, r in per_obj.items()} for o, _ in ORACLES}
                out = compare_min(sorted(per_obj), target, None, tmp, per_oracle)
                if out:
                    compare_size(sorted(per_obj), target, out, tmp)
    print(f"check_relocs: {passes} passed, {len(failures)} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
