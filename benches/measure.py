#!/usr/bin/env python3
"""Time labelled commands round-robin (benches/compare.sh's harness; python3 stdlib only).

    python3 benches/measure.py ROUNDS SPEC > RESULTS

SPEC has one JSON object a line, one command each; every round runs them all once, in order:
    {"label": "a:btfgen", "argv": ["btfgen", "min-core-btf", ...],
     "stdout": null, "before": ["rm", "-rf", "out"]}
"stdout" (optional): a file for the command's output (default /dev/null; stdin is /dev/null,
stderr is kept to be shown if the run fails). "before" (optional): a command run, untimed,
before each run of that label (cleanup). A run that exits non-zero aborts everything.
RESULTS: one tab-separated line a label: label, median wall ms, median CPU ms, median peak RSS
MiB, number of runs.

How a run is measured. A throwaway `sh` forks the process that will run the command; that
process reports its pid, blocks on a "go" pipe, and `sh` exits, so the process is reparented
to us (a child subreaper). Once it sleeps on the pipe, we read the clock, write the go line, and
os.wait4() it: it execs the command. That is how `perf stat` starts its workload.
- wall: time.perf_counter_ns() from the go write to wait4's return: exec, the command, exit.
  No shell or /usr/bin/time runs in between.
- CPU: ru_utime + ru_stime from wait4, less what the process used before the go
  (/proc/PID/schedstat; ~0.2 ms of sh work). wait4's rusage covers the process and every
  descendant it waited for (checked: a bash loop running `python3 -c "sum(range(10**7))"` three
  times reports 3x the CPU of one run), but not those it left running (a background job that
  bash does not wait for counted nothing).
- peak RSS: ru_maxrss (KiB), the maximum over the process and its waited-for descendants: the
  largest single process, not a sum (checked: a bash pipeline of two 63 MiB python3 processes
  reports 63 MiB).
Why not os.posix_spawn() from here: checked, its child's ru_maxrss includes *our* peak RSS
(/bin/true showed 13.5 MiB, 66 MiB once this process had grown; GNU time says 1.0 MiB). glibc
spawns with vfork (CLONE_VM), and execve folds the high-water mark of the memory it replaces,
ours, into the process's maxrss. fork and subprocess have the same problem (checked: 60 MiB),
the copied heap. Forked from sh, the floor is sh's few hundred KiB (/bin/true: 1.0 MiB).
"""
import ctypes
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

PR_SET_CHILD_SUBREAPER = 36
# Run by `sh -c SCRIPT sh ARGV...`: a background subshell reports its pid on fd PID, waits for
# a line on fd GO, then becomes the command.
SCRIPT = ('{{ read -r pid _ </proc/self/stat; echo "$pid" >&{pid}; exec {pid}>&-; '
          'read -r _ <&{go} || exit; exec {go}<&- "$@"; }} &')


def fail(job, why, err=None):
    print(f"measure: {job['label']} {why}: {' '.join(job['argv'])}", file=sys.stderr)
    if err is not None:
        err.seek(0)
        sys.stderr.write(err.read().decode(errors="replace"))
    sys.exit(1)


def cpu_before_go(pid):
    """Wait until PID sleeps on the go pipe (or has died); return its CPU time so far, in ns."""
    while True:
        with open(f"/proc/{pid}/stat") as f:
            if f.read().rsplit(")", 1)[1].split()[0] in ("S", "Z"):
                break
    try:
        with open(f"/proc/{pid}/schedstat") as f:
            return int(f.read().split()[0])
    except OSError:  # no CONFIG_SCHED_INFO
        return 0


def run_once(job, err):
    """One run of JOB: (wall ns, CPU ns, peak RSS KiB)."""
    if job.get("before") and subprocess.run(job["before"], stdin=subprocess.DEVNULL).returncode:
        fail(job, f"not run, its before-command failed ({' '.join(job['before'])})")
    err.seek(0)
    err.truncate()
    pid_r, pid_w = os.pipe()
    go_r, go_w = os.pipe()
    with open(job.get("stdout") or os.devnull, "wb") as out:
        script = SCRIPT.format(pid=pid_w, go=go_r)
        sh = subprocess.Popen(["/bin/sh", "-c", script, "sh", *job["argv"]], stdin=subprocess.DEVNULL,
                              stdout=out, stderr=err, pass_fds=(pid_w, go_r))
    os.close(pid_w)
    os.close(go_r)
    with os.fdopen(pid_r, "rb") as f:
        line = f.readline()
    if sh.wait() or not line:
        fail(job, "could not be started", err)
    pid = int(line)
    cpu0 = cpu_before_go(pid)
    start = time.perf_counter_ns()
    os.write(go_w, b"\n")
    _, status, ru = os.wait4(pid, 0)
    wall = time.perf_counter_ns() - start
    os.close(go_w)
    if status:
        code = os.waitstatus_to_exitcode(status)
        fail(job, f"failed ({f'exit {code}' if code > 0 else f'signal {-code}'})", err)
    return wall, round((ru.ru_utime + ru.ru_stime) * 1e9) - cpu0, ru.ru_maxrss


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    rounds = int(sys.argv[1])
    with open(sys.argv[2]) as f:
        jobs = [json.loads(line) for line in f if line.strip()]
    runs = {job["label"]: [] for job in jobs}
    if len(runs) != len(jobs):
        sys.exit("measure: duplicate labels")
    if ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0):
        sys.exit(f"measure: prctl(PR_SET_CHILD_SUBREAPER): {os.strerror(ctypes.get_errno())}")
    with tempfile.TemporaryFile() as err:
        for _ in range(rounds):
            for job in jobs:
                runs[job["label"]].append(run_once(job, err))
    for label, samples in runs.items():
        wall, cpu, rss = (statistics.median(column) for column in zip(*samples))
        print(f"{label}\t{wall / 1e6:.3f}\t{cpu / 1e6:.3f}\t{rss / 1024:.3f}\t{len(samples)}")


if __name__ == "__main__":
    main()
