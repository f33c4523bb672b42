#!/usr/bin/env python3
"""Differential checks of btfgen against the real libbpf (Debian's libbpf 1.1) and bpftool.

For every pair of tests/data/manifest.txt:
  1. relocate: `btfgen relocate --json` equals what libbpf computes (libbpf_relocs harness);
  2. minimize: libbpf relocating with btfgen's minimized BTF as btf_custom_path gives the same
     results as with the full target BTF (target types compared by kind and name, since ids
     change), and where the kernel accepts the object with the full BTF it accepts it with the
     minimized one;
  3. size: btfgen's minimized BTF is never larger than `bpftool gen min_core_btf`'s.
Also one minimized BTF built from all objects that share a target, and big-endian objects
against their little-endian twins' libbpf results (libbpf 1.1 refuses foreign byte order).

Exit status 0 only if every check passed; exit 77 (skip) if the harness cannot run BPF syscalls.
"""
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
DATA = os.path.join(ROOT, "tests", "data")
HARNESS = os.path.join(HERE, "out", "libbpf_relocs")
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


def libbpf(obj, target, base=None):
    """(records, loaded) from the harness; None if it skipped."""
    args = [HARNESS, obj, target] + ([base] if base else [])
    run = subprocess.run(args, capture_output=True, text=True)
    if run.returncode == SKIP:
        return None
    if run.returncode != 0:
        raise SystemExit(f"harness failed on {obj} {target}: {run.stderr.strip()}")
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
        same(rec, o, ["insn", "kind", "poison", "orig", "new", "target"], name)
    if not any("error" in r for r in lib):
        # libbpf stops at the first failure; without one it must have seen every record.
        check(len(lib) == len(ours), f"relocate {obj} vs {target}: {len(lib)} libbpf / {len(ours)} btfgen records")


def compare_min(objs, target, base, tmp, full_results):
    label = "+".join(os.path.basename(o) for o in objs)
    out = os.path.join(tmp, "min.btf")
    ok, err = minimize(target, base, objs, out)
    if any(any("error" in r for r in full_results[o][0]) for o in objs):
        check(not ok, f"min-core-btf {label} vs {target}: must fail like libbpf ({err})")
        return
    check(ok, f"min-core-btf {label} vs {target}: {err}")
    if not ok:
        return
    for obj in objs:
        full, full_loaded = full_results[obj]
        got = libbpf(obj, out)
        if got is None:
            return
        mini, mini_loaded = got
        by_key = {(r["program"], r["relo"]): r for r in mini}
        for rec in full:
            key = (rec["program"], rec["relo"])
            name = f"minimized ({label}) {os.path.basename(obj)} vs {os.path.basename(target)} prog {key[0]} relo #{key[1]}"
            m = by_key.get(key)
            if m is None:
                check(False, f"{name}: missing with the minimized BTF")
                continue
            same(rec, m, ["insn", "kind", "poison", "orig", "new", "target"], name, strip_ids=True)
        if full_loaded:
            check(mini_loaded, f"kernel accepts {obj} with full {target} but not with the minimized BTF")
    return out


def compare_size(objs, target, ours, tmp):
    theirs = os.path.join(tmp, "bpftool.btf")
    run = subprocess.run(["bpftool", "gen", "min_core_btf", target, theirs] + objs, capture_output=True, text=True)
    if run.returncode != 0:
        print(f"note: bpftool gen min_core_btf failed on {objs} vs {target}: {run.stderr.strip()}")
        return
    a, b = os.path.getsize(ours), os.path.getsize(theirs)
    print(f"size {'+'.join(os.path.basename(o) for o in objs)} vs {os.path.basename(target)}: btfgen {a} bytes, bpftool {b} bytes")
    check(a <= b, f"btfgen's minimized BTF ({a} bytes) larger than bpftool's ({b} bytes) for {objs} vs {target}")


def main():
    full_results = {}
    by_target = {}
    twins = {}
    with tempfile.TemporaryDirectory() as tmp:
        for obj, target, base in pairs():
            got = libbpf(obj, target, base)
            if got is None:
                if obj.endswith(".bpfeb.o"):
                    twins[obj] = (target, base)
                    continue
                print(f"SKIP: libbpf harness cannot run BPF syscalls here ({obj})")
                return SKIP
            full_results[(obj, target, base)] = got
            compare_relocate(obj, target, base, got[0])
            out = compare_min([obj], target, base, tmp, {obj: got})
            if out and base is None:
                compare_size([obj], target, out, tmp)
            by_target.setdefault((target, base), {})[obj] = got
        for (target, base), results in by_target.items():
            objs = sorted(o for o, r in results.items() if not any("error" in x for x in r[0]))
            if len(objs) > 1:
                out = compare_min(objs, target, base, tmp, results)
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
            for rec in ref[0]:
                key = (rec["program"], rec["relo"])
                o = ours.get(key)
                name = f"big-endian {os.path.basename(obj)} vs {os.path.basename(target)} prog {key[0]} relo #{key[1]}"
                if o is None:
                    check(False, f"{name}: missing")
                else:
                    same(rec, o, ["insn", "kind", "poison", "orig", "new", "target"], name, strip_ids=True)
    print(f"check_relocs: {passes} passed, {len(failures)} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
