#!/usr/bin/env python3
"""btfgen's load verdict against the running kernel's verifier (issue 23, item 5).

For every kernel BTF × object, the report btfgen writes (`btfgen-report/3`: one row per libbpf
entry program with `status`, `verdict` and `evidence`, each distinct row stored once and named
by number from the kernels, see kernel_entries) is joined by program with what the
kernel's verifier does when the program is loaded (never attached) with that BTF as
btf_custom_path (out/verifier_load: `loaded`, `poison`, `relo_failed`, `other`), and:

  - never verdict `loads` where the verifier rejects at a poisoned call (`poison`);
  - never `rejected` or `arch-mismatch` where the program loads;
  - `failed` exactly where libbpf refuses at relocation (`relo_failed`), unless the failing
    relocation lives in a sub-program this program does not call (libbpf relocates every
    sub-program of the object, so it refuses this program for nothing it contains: not
    comparable);
  - every entry program libbpf lists has exactly one row, and no row is not one of them;
  - `unknown` verdicts are counted and listed.
Static checks of every row, run also where the kernel cannot load BPF: the verdict is one of
the five, `failed` exactly where the status is `failed`, `rejected`/`arch-mismatch` only with
status `poisoned`, `loads` wherever the status is `ok`.

Kernels: the running kernel's /sys/kernel/btf/vmlinux, Linux 7.1 (tests/data/targets), real
Debian kernels for amd64 and arm64 (fetch-kernels.sh, cached in target/kernels), all reported
by one `btfgen batch --report` over a BTFHub-style tree of them (so that objects built for x86
can meet an arm64 kernel: `arch-mismatch`), each with every little-endian object of
tests/data/progs and benches/objs; and each small fixture target that tests/data/manifest.txt
pairs with an object, reported by `btfgen min-core-btf --report` for that pair.

Prints a table (kernel × object: cells, agreed, loaded, poison, other, relo_failed, unknown;
`agreed` = loads/loaded, rejected or arch-mismatch/poison, failed/relo_failed), how many rows
have each verdict, the verifier's reasons for `other`, the unknown cells, every failure, and
last `verdicts: N passed, M failed` (checks). Where bpf() is refused (not
root, EPERM) the verifier side prints `SKIP: ...` and only the static checks count. Exit
status 1 if a check failed.
"""
import glob
import json
import os
import platform
import subprocess
import sys
import tarfile
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor

from check_relocs import pairs as manifest_pairs

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
DATA = os.path.join(ROOT, "tests", "data")
BTFGEN = os.environ.get("BTFGEN", os.path.join(ROOT, "target", "release", "btfgen"))
VERIFIER_LOAD = os.path.join(HERE, "out", "verifier_load")
KERNEL_CACHE = os.path.join(ROOT, "target", "kernels")
VMLINUX = "/sys/kernel/btf/vmlinux"
LINUX_7_1 = os.path.join(DATA, "targets", "vmlinux-7.1.btf.tar.xz")
REPORT_FORMAT = "btfgen-report/3"
VERDICTS = {"loads", "rejected", "arch-mismatch", "unknown", "failed"}
# uname -m -> BTFHub's arch directory
ARCH_DIRS = {"x86_64": "x86_64", "aarch64": "arm64"}
SKIP = 77
# Two cores, shared: two loads (or btfgen runs) at a time.
JOBS = 2
# The table's counts per kernel × object.
COLUMNS = ["cells", "agreed", "loaded", "poison", "other", "relo_failed", "unknown"]

failures = []
passes = 0
# check() runs on JOBS threads
tally = threading.Lock()


def check(ok, what):
    global passes
    with tally:
        if ok:
            passes += 1
        else:
            failures.append(what)
            print("FAIL:", what)


class Kernel:
    """A target BTF: `name` for the table, `btf` (+ `base` for a split BTF), the objects to try
    on it, and where its report rows come from (`tree_path` under the batch tree, or None for
    a fixture reported by min-core-btf)."""

    def __init__(self, name, btf, objects, base=None, arch=None):
        self.name, self.btf, self.objects, self.base, self.arch = name, btf, objects, base, arch
        self.tree_path = None


def objects():
    """Every little-endian object: the fixtures, the benchmark's libbpf-tools-style programs,
    and whatever else tests/data/progs holds (guards.bpf.o, ...)."""
    found = glob.glob(os.path.join(DATA, "progs", "*.bpf.o")) + glob.glob(os.path.join(ROOT, "benches", "objs", "*.bpf.o"))
    return sorted(os.path.relpath(o, ROOT) for o in found)


def fixture_kernels():
    """The small target BTFs of tests/data/manifest.txt, each with the objects paired with it."""
    kernels = {}
    for obj, target, base in manifest_pairs():
        if target == VMLINUX or obj.endswith(".bpfeb.o"):
            continue
        if (target, base) not in kernels:
            name = os.path.basename(target) + (f" on {os.path.basename(base)}" if base else "")
            kernels[(target, base)] = Kernel(name, target, [], base)
        kernels[(target, base)].objects.append(os.path.relpath(obj, ROOT))
    return list(kernels.values())


def real_kernels(tmp):
    """The running kernel, Linux 7.1 and the Debian kernels fetch-kernels.sh gets."""
    host_arch = ARCH_DIRS.get(platform.machine(), platform.machine())
    kernels = []
    if os.path.exists(VMLINUX):
        # a copy: btfgen reads the module BTFs beside /sys/kernel/btf/vmlinux, libbpf with
        # btf_custom_path none
        running = os.path.join(tmp, "running-vmlinux.btf")
        with open(VMLINUX, "rb") as src, open(running, "wb") as dst:
            dst.write(src.read())
        kernels.append(Kernel(f"running {platform.release()}", running, None, arch=host_arch))
    with tarfile.open(LINUX_7_1, "r:xz") as tar:
        member = next(m for m in tar.getmembers() if m.isfile())
        btf = os.path.join(tmp, os.path.basename(member.name))
        with open(btf, "wb") as f:
            f.write(tar.extractfile(member).read())
    kernels.append(Kernel("linux 7.1", btf, None, arch="x86_64"))
    start = time.monotonic()
    run = subprocess.run(["bash", os.path.join(HERE, "fetch-kernels.sh"), KERNEL_CACHE],
                         capture_output=True, text=True)
    sys.stdout.write(run.stderr)
    fetched = [p for p in run.stdout.split("\n") if p]
    print(f"fetch-kernels.sh: {len(fetched)} Debian kernels in {time.monotonic() - start:.1f} s")
    for btf in fetched:
        name = os.path.basename(btf)[:-len(".btf")]
        arch = "arm64" if name.endswith("-arm64") else "x86_64"
        kernels.append(Kernel(name, btf, None, arch=arch))
    return kernels


def batch_reports(kernels, objs, tmp):
    """One `btfgen batch --report` over a BTFHub-style tree of the real kernels (arch from the
    directory): {kernel name: report kernel entry}."""
    tree = os.path.join(tmp, "tree")
    for i, k in enumerate(kernels):
        rel = os.path.join("kernels", f"k{i}", k.arch, f"k{i}.btf")
        os.makedirs(os.path.dirname(os.path.join(tree, rel)), exist_ok=True)
        os.symlink(k.btf, os.path.join(tree, rel))
        k.tree_path = rel
    report = os.path.join(tmp, "batch.json")
    run = subprocess.run([BTFGEN, "batch", "--btf-dir", tree, "--out-dir", os.path.join(tmp, "batch-out"),
                          "--report", report, "-j", str(JOBS)] + objs, capture_output=True, text=True,
                         cwd=ROOT)
    if not os.path.exists(report):
        check(False, f"btfgen batch wrote no report (exit {run.returncode}): {run.stderr.strip()[-400:]}")
        return None
    with open(report) as f:
        data = json.load(f)
    if not check_format(data, "btfgen batch"):
        return None
    by_path = {k["path"]: k for k in kernel_entries(data)}
    return {k.name: by_path.get(k.tree_path) for k in kernels}


def min_core_report(kernel, obj, tmp):
    """The report entry of `btfgen min-core-btf --report` for one fixture pair, or None."""
    fd, report = tempfile.mkstemp(suffix=".json", dir=tmp)
    os.close(fd)
    args = [BTFGEN, "min-core-btf", "--report", report, kernel.btf, report + ".btf", obj]
    args += ["--base-btf", kernel.base] if kernel.base else []
    run = subprocess.run(args, capture_output=True, text=True, cwd=ROOT)
    try:
        with open(report) as f:
            data = json.load(f)
    except (OSError, ValueError):
        check(False, f"min-core-btf --report {kernel.name} {obj}: no report (exit {run.returncode}): {run.stderr.strip()}")
        return None
    if not check_format(data, f"min-core-btf {kernel.name} {obj}"):
        return None
    return kernel_entries(data)[0]


def kernel_entries(data):
    """The report's kernels, each with its program set's `verdicts` and `programs`, and each
    program with its `relocations` records (btfgen-report/3 names them by number)."""
    relocations, programs, sets = data["relocations"], data["programs"], data["program_sets"]
    entries = []
    for k in data["kernels"]:
        s = sets[k["program_set"]]
        rows = [dict(programs[i], relocations=[relocations[r] for r in programs[i]["relocations"]])
                for i in s["programs"]]
        entries.append(dict(k, verdicts=s["verdicts"], programs=rows))
    return entries


def check_format(data, what):
    ok = data.get("format") == REPORT_FORMAT
    check(ok, f"{what}: report format {data.get('format')!r}, expected {REPORT_FORMAT!r}")
    return ok


def verifier(obj, kernel):
    """verifier_load's outcomes {program: record}, or None where the kernel refuses bpf()."""
    args = [VERIFIER_LOAD, os.path.join(ROOT, obj), kernel.btf] + ([kernel.base] if kernel.base else [])
    run = subprocess.run(args, capture_output=True, text=True)
    if run.returncode == SKIP:
        return None
    if run.returncode != 0:
        check(False, f"verifier_load {obj} {kernel.name}: exit {run.returncode}: {run.stderr.strip()[-400:]}")
        return {}
    return {r["program"]: r for r in (json.loads(l) for l in run.stdout.splitlines() if l.strip())}


def check_static(kernel, obj, row):
    """What a report row must say whatever the kernel does."""
    where = f"{kernel.name} {obj} {row.get('program')}"
    verdict, status = row.get("verdict"), row.get("status")
    check(verdict in VERDICTS, f"{where}: verdict {verdict!r} is none of {sorted(VERDICTS)}")
    check((verdict == "failed") == (status == "failed"), f"{where}: verdict {verdict} with status {status}")
    if verdict in ("rejected", "arch-mismatch"):
        check(status == "poisoned", f"{where}: verdict {verdict} with status {status}")
    if status == "ok":
        check(verdict == "loads", f"{where}: status ok (nothing poisoned) but verdict {verdict}")


def called_subprograms(row):
    return {r["subprog"] for r in row.get("relocations", []) if r.get("subprog")}


def check_cell(kernel, obj, program, row, outcome, counts, unknown, others):
    """One kernel × object × entry program: the report's verdict against the verifier."""
    where = f"{kernel.name} {obj} {program}"
    if row is None:
        check(False, f"{where}: libbpf's entry program has no row in the report")
        return
    verdict, kind = row.get("verdict"), outcome["outcome"]
    detail = outcome.get("detail", "")
    if kind == "relo_failed":
        owner = outcome.get("relo_program", program)
        if owner != program and owner not in called_subprograms(row):
            # libbpf refused for a sub-program this one does not call: nothing to compare
            counts["other"] += 1
            others.append(f"libbpf refused at sub-program {owner}'s relocation")
            return
    counts[kind] += 1
    if kind == "other":
        others.append(detail)
    if verdict == "unknown":
        counts["unknown"] += 1
        unknown.append(f"{where}: unknown ({kind}: {detail}); evidence "
                       + "; ".join(e.get("text", "") for e in row.get("evidence", [])))
    if kind == "poison":
        check(verdict != "loads", f"{where}: verdict loads, but the verifier rejects at the poison: {detail}")
        named = sorted({e.get("insn") for e in row.get("evidence", []) if e.get("insn") is not None})
        if verdict in ("rejected", "arch-mismatch") and outcome.get("insn") not in named:
            # the verifier stops at the first poison it reaches; the evidence may name another
            print(f"note: {where}: the verifier stopped at insn {outcome.get('insn')}, the evidence names {named}")
    if kind == "loaded":
        check(verdict not in ("rejected", "arch-mismatch"), f"{where}: verdict {verdict}, but the program loads; "
              "evidence: " + "; ".join(e.get("text", "") for e in row.get("evidence", [])))
    check((verdict == "failed") == (kind == "relo_failed"),
          f"{where}: verdict {verdict}, verifier_load {kind} {detail}".rstrip())
    counts["agreed"] += (verdict, kind) in {("loads", "loaded"), ("rejected", "poison"),
                                           ("arch-mismatch", "poison"), ("failed", "relo_failed")}


def check_pair(kernel, obj, entry, can_load):
    """Every check of one kernel × object; returns (counts, unknown cells, the verifier's or
    libbpf's reasons for `other` outcomes), or None where verifier_load cannot run."""
    rows = {}
    for row in (entry or {}).get("programs", []):
        if row.get("object") == obj:
            check(row.get("program") not in rows, f"{kernel.name} {obj} {row.get('program')}: two rows")
            rows[row.get("program")] = row
            check_static(kernel, obj, row)
    counts = dict.fromkeys(COLUMNS, 0)
    counts["verdicts"] = [row.get("verdict") for row in rows.values()]
    unknown, others = [], []
    if not can_load:
        counts["cells"] = len(rows)
        counts["unknown"] = sum(r.get("verdict") == "unknown" for r in rows.values())
        return counts, unknown, others
    outcomes = verifier(obj, kernel)
    if outcomes is None:
        return None
    for program, outcome in outcomes.items():
        counts["cells"] += 1
        check_cell(kernel, obj, program, rows.get(program), outcome, counts, unknown, others)
    for program in rows:
        check(program in outcomes, f"{kernel.name} {obj} {program}: a row for what libbpf lists as no entry program")
    return counts, unknown, others


def row(counts):
    """The counts under their column names."""
    return " ".join(f"{counts[c]:>{len(c)}}" for c in COLUMNS)


def main():
    start = time.monotonic()
    for tool in (BTFGEN, VERIFIER_LOAD):
        if not os.access(tool, os.X_OK):
            print(f"check_verdicts: {tool} is not built")
            return 1
    probe = subprocess.run([VERIFIER_LOAD, os.path.join(DATA, "progs", "task.bpf.o"), VMLINUX],
                           capture_output=True, text=True)
    can_load = probe.returncode != SKIP and os.path.exists(VMLINUX)
    if not can_load:
        why = probe.stderr.strip().removeprefix("SKIP: ") or f"no {VMLINUX}"
        print(f"SKIP: the kernel refuses bpf() here ({why}): "
              "the verifier side is NOT RUN, the reports' static checks still are")
    objs = objects()
    with tempfile.TemporaryDirectory() as tmp:
        real = real_kernels(tmp)
        for k in real:
            k.objects = objs
        entries = batch_reports(real, objs, tmp) or {}
        fixtures = fixture_kernels()
        jobs = [(k, o, entries.get(k.name)) for k in real for o in k.objects]
        jobs += [(k, o, None) for k in fixtures for o in k.objects]

        def run(job):
            kernel, obj, entry = job
            if kernel.tree_path is None:
                entry = min_core_report(kernel, obj, tmp)
            elif entry is None:
                if entries:  # else there is no batch report (one failure already)
                    check(False, f"{kernel.name}: not in btfgen batch's report")
                return None
            return check_pair(kernel, obj, entry, can_load)

        with ThreadPoolExecutor(JOBS) as pool:
            results = list(pool.map(run, jobs))

    print(f"{'kernel':<30} {'object':<34} {' '.join(COLUMNS)}")
    totals = dict.fromkeys(COLUMNS, 0)
    unknown, others, verdicts = [], {}, {}
    for (kernel, obj, _), result in zip(jobs, results):
        if result is None:
            continue
        counts, cells, reasons = result
        unknown += cells
        for reason in reasons:
            others[reason] = others.get(reason, 0) + 1
        for key in totals:
            totals[key] += counts[key]
        for verdict in counts["verdicts"]:
            verdicts[verdict] = verdicts.get(verdict, 0) + 1
        print(f"{kernel.name:<30} {os.path.basename(obj):<34} {row(counts)}")
    print(f"{'total':<30} {str(len(jobs)) + ' pairs':<34} {row(totals)}")
    print("the reports' verdicts:", ", ".join(f"{v} {n}" for v, n in sorted(verdicts.items(), key=str)))
    for reason, count in sorted(others.items(), key=lambda item: -item[1]):
        print(f"other ({count}×): {reason}")
    for line in unknown:
        print("unknown:", line)
    print(f"check_verdicts: {len(jobs)} kernel × object pairs, {totals['cells']} programs, "
          f"{time.monotonic() - start:.1f} s")
    print(f"verdicts: {passes} passed, {len(failures)} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
