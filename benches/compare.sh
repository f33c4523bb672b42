#!/usr/bin/env bash
# btfgen vs bpftool, same inputs, one run: median wall time, CPU time and peak RSS of each, and
# ratios.
#
#     benches/compare.sh                 # everything (builds the kernel tree on first use)
#     ROUNDS=15 BATCH_ROUNDS=5 benches/compare.sh
#     benches/compare.sh --no-batch      # only (a)-(c): no tree, no downloads
#
# Cases (the two tools are run alternately, round after round, so that load from other
# processes hits both alike):
#   (a) one object (tests/data/progs/task.bpf.o) against /sys/kernel/btf/vmlinux:
#       `btfgen min-core-btf` vs `bpftool gen min_core_btf`, output on disk (neither syncs it:
#       btfgen writes a temporary file and renames it over the output, bpftool writes the output
#       in place) and, as (a'), on tmpfs (/dev/shm); "btfgen vs floor" is btfgen's wall time over
#       that of (c)'s cat (the target: within 3x of `cat vmlinux > /dev/null`);
#   (b) OBJECTS (default 24) objects at once: the little-endian fixture objects (all relocate
#       against vmlinux without error; bpftool refuses the big-endian ones), copied under
#       numbered names until there are enough;
#   (c) the physical floor: `cat /sys/kernel/btf/vmlinux` with its output on /dev/null (process
#       start + reading the input) and `/bin/true` (process start alone);
#   (d) `btfgen batch` vs a shell loop running `bpftool gen min_core_btf` once per kernel over
#       a BTFHub-like tree (benches/make-btf-tree.sh: COUNT kernels, every third a .btf.tar.xz,
#       which the loop unpacks with `tar -xJf` first, as BTFHub's own scripts do), objects
#       task/multi/calls.bpf.o (the ones written for a real kernel); also timed, in the same
#       rounds: `xz -dc` of every archive, a floor that both sides pay;
#   (e) the same on a tree of plain .btf files only (no xz decoding on either side).
#
# Measured by benches/measure.py (details there): each run is a process, forked beforehand,
# that execs the command when told to and is reaped with wait4(); no shell or /usr/bin/time in
# between. Wall time: from telling it to wait4's return. CPU time: user + system from wait4's
# rusage, which includes every child process the command waited for; less sensitive than wall
# time to other load on the machine. Peak RSS: ru_maxrss; for the shell loop that is the largest
# single process of the loop (bpftool or xz), not a sum. The output of every command goes to
# /dev/null; cleanup between batch rounds is not timed.
#
# Environment: BTFGEN (binary; default: `make cli`, the statically linked release build,
# target/static/release/btfgen), BPFTOOL (default bpftool), ROUNDS (15), BATCH_ROUNDS (5),
# OBJECTS (24), COUNT (kernels per tree, 60), TREE_DIR (where the trees are kept between runs,
# default /var/tmp/btfgen-bench-trees), BTF_CACHE (see make-btf-tree.sh).
# Needs: bpftool, python3; for (d)/(e) what make-btf-tree.sh needs.
set -euo pipefail
cd "$(dirname "$0")/.."

batch=1
if [[ ${1:-} == --no-batch ]]; then
    batch=0
elif (($#)); then
    sed -n '2,7p' "$0" >&2
    exit 2
fi
rounds=${ROUNDS:-15}
batch_rounds=${BATCH_ROUNDS:-5}
nobjects=${OBJECTS:-24}
count=${COUNT:-60}
trees=${TREE_DIR:-/var/tmp/btfgen-bench-trees}
vmlinux=/sys/kernel/btf/vmlinux
bpftool=${BPFTOOL:-bpftool}

for tool in "$bpftool" python3; do
    command -v "$tool" >/dev/null || { echo "compare: $tool not found" >&2; exit 1; }
done
if [[ ! -r $vmlinux ]]; then
    echo "SKIP compare: $vmlinux not readable" >&2
    exit 0
fi
if [[ -z ${BTFGEN:-} ]]; then
    make --quiet cli >&2
    BTFGEN=target/static/release/btfgen
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/btfgen-compare.XXXXXX")
shm=
if [[ -d /dev/shm && -w /dev/shm ]]; then shm=$(mktemp -d /dev/shm/btfgen-compare.XXXXXX); fi
trap 'rm -rf "$work" ${shm:+"$shm"}' EXIT
results=$work/results spec=$work/spec
mkdir -p "$work/out"
: >"$results"

# json_list ARG...: the arguments as a JSON list of strings (no control characters expected).
json_list() {
    local a out=
    for a; do
        a=${a//\\/\\\\}
        out+=${out:+, }\"${a//\"/\\\"}\"
    done
    printf '[%s]' "$out"
}

# job LABEL COMMAND...: add a command to $spec, the round for measure.py. With before=JSON_LIST,
# that command runs, untimed, before each run of LABEL. Labels are plain (no " or \).
job() {
    local label=$1
    shift
    printf '{"label": "%s", "argv": %s, "before": %s}\n' "$label" "$(json_list "$@")" \
        "${before:-null}" >>"$spec"
}

# measure ROUNDS: run the jobs of $spec alternately, ROUNDS rounds; add their medians to $results
# (tab-separated: label, wall ms, CPU ms, peak RSS MiB, rounds); start a new $spec.
measure() {
    python3 benches/measure.py "$1" "$spec" >>"$results"
    rm -f "$spec"
}

# field LABEL N: column N of LABEL's results (2 = wall ms, 3 = CPU ms, 4 = peak RSS MiB,
# 5 = rounds).
field() { awk -F'\t' -v label="$1" -v n="$2" '$1 == label { print $n }' "$results"; }

# calc EXPR: floating-point arithmetic.
calc() { awk "BEGIN { print $1 }"; }

# report TITLE LABEL_A LABEL_B: medians of A (btfgen) and B (bpftool, or the baseline), ratios.
report() {
    local title=$1 a=$2 b=$3
    local wa wb ra rb ca cb
    wa=$(field "$a" 2) wb=$(field "$b" 2) ca=$(field "$a" 3) cb=$(field "$b" 3)
    ra=$(field "$a" 4) rb=$(field "$b" 4)
    printf '%s (%s rounds)\n' "$title" "$(field "$a" 5)"
    printf '    %-30s %10s  %10s  %10s\n' "" "wall" "CPU" "peak RSS"
    printf '    %-30s %7.1f ms  %7.1f ms  %6.1f MiB\n' "$a" "$wa" "$ca" "$ra"
    printf '    %-30s %7.1f ms  %7.1f ms  %6.1f MiB\n' "$b" "$wb" "$cb" "$rb"
    printf '    %-30s %9.2fx  %9.2fx  %9.2fx\n' "ratio ($b / $a)" "$(calc "$wb / $wa")" \
        "$(calc "$cb / ($ca > 0 ? $ca : 1)")" "$(calc "$rb / $ra")"
}

# vs_floor LABEL: LABEL's median wall time over that of cat vmlinux > /dev/null, (c).
vs_floor() {
    printf '    %-30s %9.2fx\n' "btfgen vs floor (cat vmlinux)" \
        "$(calc "$(field "$1" 2) / $(field c:cat-vmlinux 2)")"
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
job "a:btfgen" "$BTFGEN" min-core-btf "$vmlinux" "$work/out/a-btfgen.btf" "$task"
job "a:bpftool" "$bpftool" gen min_core_btf "$vmlinux" "$work/out/a-bpftool.btf" "$task"
if [[ -n $shm ]]; then
    job "a':btfgen(tmpfs)" "$BTFGEN" min-core-btf "$vmlinux" "$shm/a-btfgen.btf" "$task"
    job "a':bpftool(tmpfs)" "$bpftool" gen min_core_btf "$vmlinux" "$shm/a-bpftool.btf" "$task"
fi
job "b:btfgen" "$BTFGEN" min-core-btf "$vmlinux" "$work/out/b-btfgen.btf" "${many[@]}"
job "b:bpftool" "$bpftool" gen min_core_btf "$vmlinux" "$work/out/b-bpftool.btf" "${many[@]}"
job "c:cat-vmlinux" cat "$vmlinux"
job "c:true" /bin/true
measure "$rounds"

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
tree=$1 out=$2 bpftool=$3
shift 3
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
    "$bpftool" gen min_core_btf "$in" "$out/$rel" "$@" >/dev/null || echo "FAILED $f" >&2
    if [[ $in == "$tmp"/* ]]; then rm -f "$in"; fi
done
EOF
    batch_objects=(tests/data/progs/task.bpf.o tests/data/progs/multi.bpf.o tests/data/progs/calls.bpf.o)
    for tree in "$mixed" "$plain"; do
        case=d
        [[ $tree == "$plain" ]] && case=e
        echo "compare: ($case) $tree, $batch_rounds rounds" >&2
        before=$(json_list rm -rf "$work/out/batch") job "$case:btfgen-batch" \
            "$BTFGEN" batch --btf-dir "$tree" --out-dir "$work/out/batch" "${batch_objects[@]}"
        before=$(json_list rm -rf "$work/out/loop") job "$case:bpftool-loop" \
            bash "$work/loop.sh" "$tree" "$work/out/loop" "$bpftool" "${batch_objects[@]}"
        if [[ $case == d ]]; then
            # What decoding the archives alone costs (one xz process, one core): a floor that
            # both sides of (d) pay, whatever they do.
            job d:xz-decode-archives find "$tree" -name '*.btf.tar.xz' -exec xz -dc {} +
        fi
        measure "$batch_rounds"
        nb=$(find "$work/out/batch" -type f -name '*.btf' | wc -l)
        nl=$(find "$work/out/loop" -type f -name '*.btf' | wc -l)
        if ((nb != nl)); then
            echo "compare: ($case) btfgen wrote $nb outputs, the bpftool loop $nl" >&2
            exit 1
        fi
        packed=$(find "$tree" -name '*.btf.tar.xz' | wc -l)
        echo "$nb kernels ($packed packed)" >"$work/$case.kernels"
    done
fi

# ---- report ----
echo
echo "btfgen vs bpftool: median wall time, CPU time and peak RSS ($(nproc) CPUs, load now $(cut -d' ' -f1-3 /proc/loadavg))"
report "(a) task.bpf.o vs vmlinux, output on disk" a:btfgen a:bpftool
vs_floor a:btfgen
if [[ -n $shm ]]; then
    report "(a') task.bpf.o vs vmlinux, output on tmpfs" "a':btfgen(tmpfs)" "a':bpftool(tmpfs)"
    vs_floor "a':btfgen(tmpfs)"
fi
report "(b) ${#many[@]} objects vs vmlinux" b:btfgen b:bpftool
report "(c) floor: cat vmlinux > /dev/null vs /bin/true" c:cat-vmlinux c:true
if ((batch)); then
    report "(d) batch over $(cat "$work/d.kernels"), 3 objects" d:btfgen-batch d:bpftool-loop
    xz=d:xz-decode-archives
    printf '    %-30s %7.1f ms  %7.1f ms  %6.1f MiB\n' "xz -dc of every archive (floor)" \
        "$(field "$xz" 2)" "$(field "$xz" 3)" "$(field "$xz" 4)"
    report "(e) batch over $(cat "$work/e.kernels"), 3 objects" e:btfgen-batch e:bpftool-loop
fi
