#!/usr/bin/env bash
# btfgen vs bpftool, same inputs, one run: median wall time and peak RSS of each, and ratios.
#
#     benches/compare.sh                 # everything (builds the kernel tree on first use)
#     ROUNDS=15 BATCH_ROUNDS=5 benches/compare.sh
#     benches/compare.sh --no-batch      # only (a)-(c): no tree, no downloads
#
# Cases (the two tools are run alternately, round after round, so that load from other
# processes hits both alike):
#   (a) one object (tests/data/progs/task.bpf.o) against /sys/kernel/btf/vmlinux:
#       `btfgen min-core-btf` vs `bpftool gen min_core_btf`, output on disk (btfgen fsyncs its
#       output, bpftool does not) and, as (a'), on tmpfs (/dev/shm, where fsync costs nothing);
#   (b) OBJECTS (default 24) objects at once: the little-endian fixture objects (all relocate
#       against vmlinux without error; bpftool refuses the big-endian ones), copied under
#       numbered names until there are enough;
#   (c) the physical floor: `cat /sys/kernel/btf/vmlinux > /dev/null` (process start + reading
#       the input) and `/bin/true` (process start alone);
#   (d) `btfgen batch` vs a shell loop running `bpftool gen min_core_btf` once per kernel over
#       a BTFHub-like tree (benches/make-btf-tree.sh: COUNT kernels, every third a .btf.tar.xz,
#       which the loop unpacks with `tar -xJf` first, as BTFHub's own scripts do), objects
#       task/multi/calls.bpf.o (the ones written for a real kernel);
#   (e) the same on a tree of plain .btf files only (no xz decoding on either side).
#
# Wall time: bash's $EPOCHREALTIME around each run (microseconds; /usr/bin/time's own clock
# has 10 ms steps). CPU time: user + system of the run and all its child processes (bash's
# `times`, 1 ms steps); less sensitive than wall time to other load on the machine. Peak RSS:
# /usr/bin/time's "Maximum resident set size" (%M, as in -v); for the shell loop that is the
# largest single process of the loop (bpftool or xz), not a sum.
#
# Environment: BTFGEN (binary; default: cargo build --release, then target/release/btfgen or
# $CARGO_TARGET_DIR/release/btfgen), BPFTOOL (default bpftool), ROUNDS (15), BATCH_ROUNDS (5),
# OBJECTS (24), COUNT (kernels per tree, 60), TREE_DIR (where the trees are kept between runs,
# default /var/tmp/btfgen-bench-trees), BTF_CACHE (see make-btf-tree.sh).
# Needs: GNU time (package `time`), bpftool, python3; for (d)/(e) what make-btf-tree.sh needs.
set -euo pipefail
cd "$(dirname "$0")/.."

batch=1
if [[ ${1:-} == --no-batch ]]; then
    batch=0
elif (($#)); then
    sed -n '2,9p' "$0" >&2
    exit 2
fi
rounds=${ROUNDS:-15}
batch_rounds=${BATCH_ROUNDS:-5}
nobjects=${OBJECTS:-24}
count=${COUNT:-60}
trees=${TREE_DIR:-/var/tmp/btfgen-bench-trees}
vmlinux=/sys/kernel/btf/vmlinux
bpftool=${BPFTOOL:-bpftool}

for tool in /usr/bin/time "$bpftool" python3; do
    command -v "$tool" >/dev/null || { echo "compare: $tool not found" >&2; exit 1; }
done
if [[ ! -r $vmlinux ]]; then
    echo "SKIP compare: $vmlinux not readable" >&2
    exit 0
fi
if [[ -z ${BTFGEN:-} ]]; then
    cargo build --release --quiet --bin btfgen
    BTFGEN=${CARGO_TARGET_DIR:-target}/release/btfgen
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/btfgen-compare.XXXXXX")
shm=
if [[ -d /dev/shm && -w /dev/shm ]]; then shm=$(mktemp -d /dev/shm/btfgen-compare.XXXXXX); fi
trap 'rm -rf "$work" ${shm:+"$shm"}' EXIT
results=$work/results
mkdir -p "$results" "$work/out"

# children_cpu_us: user + system CPU time of this shell's waited-for children so far, in µs
# (bash's `times`, 1 ms steps; run in this shell, not a subshell, which would start at zero).
children_cpu_us() {
    times >"$work/times"
    awk 'NR == 2 { n = 0; for (i = 1; i <= 2; i++) { split($i, t, /[ms]/); n += (t[1] * 60 + t[2]) * 1e6 }
        printf "%d\n", n }' "$work/times"
}

# run LABEL COMMAND...: one timed run, appended to $results/LABEL as "wall_us rss_kb cpu_us".
run() {
    local label=$1
    shift
    local start end cpu0 cpu1
    children_cpu_us >"$work/cpu0"
    start=$EPOCHREALTIME
    if ! /usr/bin/time -f %M -o "$work/rss" "$@" >"$work/stdout" 2>"$work/stderr"; then
        echo "compare: $label failed: $*" >&2
        cat "$work/stderr" >&2
        exit 1
    fi
    end=$EPOCHREALTIME
    children_cpu_us >"$work/cpu1"
    cpu0=$(<"$work/cpu0") cpu1=$(<"$work/cpu1")
    echo "$((${end/./} - ${start/./})) $(tail -n1 "$work/rss") $((cpu1 - cpu0))" >>"$results/$label"
}

# median LABEL FIELD: median of column FIELD (1 = wall µs, 2 = RSS KiB, 3 = CPU µs).
median() {
    cut -d' ' -f"$2" "$results/$1" | sort -n | awk '{v[NR] = $1} END {
        if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

# calc EXPR: floating-point arithmetic.
calc() { awk "BEGIN { print $1 }"; }

# report TITLE LABEL_A LABEL_B: medians of A (btfgen) and B (bpftool, or the baseline), ratios.
report() {
    local title=$1 a=$2 b=$3
    local wa wb ra rb ca cb n
    wa=$(median "$a" 1) wb=$(median "$b" 1) ra=$(median "$a" 2) rb=$(median "$b" 2)
    ca=$(median "$a" 3) cb=$(median "$b" 3)
    n=$(wc -l <"$results/$a")
    printf '%s (%s rounds)\n' "$title" "$n"
    printf '    %-30s %10s  %10s  %10s\n' "" "wall" "CPU" "peak RSS"
    printf '    %-30s %7.1f ms  %7.1f ms  %6.1f MiB\n' "$a" "$(calc "$wa / 1000")" "$(calc "$ca / 1000")" \
        "$(calc "$ra / 1024")"
    printf '    %-30s %7.1f ms  %7.1f ms  %6.1f MiB\n' "$b" "$(calc "$wb / 1000")" "$(calc "$cb / 1000")" \
        "$(calc "$rb / 1024")"
    printf '    %-30s %9.2fx  %9.2fx  %9.2fx\n' "ratio ($b / $a)" "$(calc "$wb / $wa")" \
        "$(calc "$cb / ($ca > 0 ? $ca : 1)")" "$(calc "$rb / $ra")"
}

echo "compare: btfgen = $BTFGEN, bpftool = $($bpftool version | head -n1), $(nproc) CPUs," \
    "load $(cut -d' ' -f1-3 /proc/loadavg)" >&2

# ---- (a) one object, (b) many objects, (c) floor ----
task=tests/data/progs/task.bpf.o
mkdir -p "$work/objs"
le_objects=()
for o in tests/data/progs/*.bpf.o; do le_objects+=("$o"); done
many=()
for ((i = 0; ${#many[@]} < nobjects; i++)); do
    o=${le_objects[i % ${#le_objects[@]}]}
    copy=$work/objs/$(basename "$o" .bpf.o)-$i.bpf.o
    cp "$o" "$copy"
    many+=("$copy")
done

echo "compare: (a)-(c), $rounds rounds" >&2
for ((r = 0; r < rounds; r++)); do
    run "a:btfgen" "$BTFGEN" min-core-btf "$vmlinux" "$work/out/a-btfgen.btf" "$task"
    run "a:bpftool" "$bpftool" gen min_core_btf "$vmlinux" "$work/out/a-bpftool.btf" "$task"
    if [[ -n $shm ]]; then
        run "a':btfgen(tmpfs)" "$BTFGEN" min-core-btf "$vmlinux" "$shm/a-btfgen.btf" "$task"
        run "a':bpftool(tmpfs)" "$bpftool" gen min_core_btf "$vmlinux" "$shm/a-bpftool.btf" "$task"
    fi
    run "b:btfgen" "$BTFGEN" min-core-btf "$vmlinux" "$work/out/b-btfgen.btf" "${many[@]}"
    run "b:bpftool" "$bpftool" gen min_core_btf "$vmlinux" "$work/out/b-bpftool.btf" "${many[@]}"
    run "c:cat-vmlinux" sh -c "cat $vmlinux > /dev/null"
    run "c:true" /bin/true
done

# ---- (d) and (e): batch over a tree ----
if ((batch)); then
    mixed=$trees/mixed-$count
    plain=$trees/plain-$count
    if [[ ! -e $mixed/.complete ]]; then
        rm -rf "$mixed"
        bash benches/make-btf-tree.sh "$mixed" "$count"
        touch "$mixed/.complete"
    fi
    if [[ ! -e $plain/.complete ]]; then
        rm -rf "$plain"
        PACK_EVERY=0 bash benches/make-btf-tree.sh "$plain" "$count"
        touch "$plain/.complete"
    fi
    # The shell loop: what one would write around bpftool (BTFHub's scripts do the same). Kept
    # lean, so that its own overhead does not flatter btfgen: bash builtins for paths, one
    # mkdir per directory.
    cat >"$work/loop.sh" <<'EOF'
#!/usr/bin/env bash
set -euo pipefail
tree=$1 out=$2
shift 2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
made=
find "$tree" -type f \( -name '*.btf' -o -name '*.btf.tar.xz' \) ! -path '*/.*' | sort |
while read -r f; do
    rel=${f#"$tree"/}
    rel=${rel%.tar.xz}
    dir=$out/${rel%/*}
    if [[ $dir != "$made" ]]; then
        mkdir -p "$dir"
        made=$dir
    fi
    in=$f
    if [[ $f == *.tar.xz ]]; then
        tar -xJf "$f" -C "$tmp"
        in=$tmp/${rel##*/}
    fi
    bpftool gen min_core_btf "$in" "$out/$rel" "$@" >/dev/null || echo "FAILED $f" >&2
    if [[ $in == "$tmp"/* ]]; then rm -f "$in"; fi
done
EOF
    batch_objects=(tests/data/progs/task.bpf.o tests/data/progs/multi.bpf.o tests/data/progs/calls.bpf.o)
    for tree in "$mixed" "$plain"; do
        case=d
        [[ $tree == "$plain" ]] && case=e
        echo "compare: ($case) $tree, $batch_rounds rounds" >&2
        for ((r = 0; r < batch_rounds; r++)); do
            rm -rf "$work/out/batch" "$work/out/loop"
            run "$case:btfgen-batch" "$BTFGEN" batch --btf-dir "$tree" --out-dir "$work/out/batch" \
                "${batch_objects[@]}"
            run "$case:bpftool-loop" bash "$work/loop.sh" "$tree" "$work/out/loop" "${batch_objects[@]}"
        done
        nb=$(find "$work/out/batch" -type f -name '*.btf' | wc -l)
        nl=$(find "$work/out/loop" -type f -name '*.btf' | wc -l)
        if ((nb != nl)); then
            echo "compare: ($case) btfgen wrote $nb outputs, the bpftool loop $nl" >&2
            exit 1
        fi
        packed=$(find "$tree" -name '*.btf.tar.xz' | wc -l)
        echo "$nb kernels ($packed packed)" >"$results/$case.kernels"
    done
    # What decoding the archives alone costs (one xz process, one core): a floor that
    # both sides of (d) pay, whatever they do.
    decode_all() { find "$1" -name '*.btf.tar.xz' -exec xz -dc {} + >/dev/null; }
    export -f decode_all
    for ((r = 0; r < batch_rounds; r++)); do
        run "d:xz-decode-archives" bash -c "decode_all $mixed"
    done
fi

# ---- report ----
echo
echo "btfgen vs bpftool: median wall time and peak RSS ($(nproc) CPUs, load now $(cut -d' ' -f1-3 /proc/loadavg))"
report "(a) task.bpf.o vs vmlinux, output on disk" a:btfgen a:bpftool
if [[ -n $shm ]]; then report "(a') task.bpf.o vs vmlinux, output on tmpfs" "a':btfgen(tmpfs)" "a':bpftool(tmpfs)"; fi
report "(b) ${#many[@]} objects vs vmlinux" b:btfgen b:bpftool
report "(c) floor: cat vmlinux > /dev/null vs /bin/true" c:cat-vmlinux c:true
if ((batch)); then
    report "(d) batch over $(cat "$results/d.kernels"), 3 objects" d:btfgen-batch d:bpftool-loop
    printf '    %-30s %7.1f ms  %7.1f ms\n' "xz -dc of every archive (floor)" \
        "$(calc "$(median d:xz-decode-archives 1) / 1000")" "$(calc "$(median d:xz-decode-archives 3) / 1000")"
    report "(e) batch over $(cat "$results/e.kernels"), 3 objects" e:btfgen-batch e:bpftool-loop
fi
