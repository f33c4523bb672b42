#!/usr/bin/env bash
# btfgen vs bpftool, same inputs, one run: median wall time, CPU time and peak RSS of each, and
# ratios.
#
#     benches/compare.sh                 # everything (builds the kernel trees on first use)
#     ROUNDS=15 BATCH_ROUNDS=5 benches/compare.sh
#     benches/compare.sh --no-batch      # only (a)-(e): no tree, no downloads (~20 s)
#
# Cases (the two tools are run alternately, round after round, so that load from other
# processes hits both alike), the kernel BTF being the running kernel's:
#   (a) one object (ONE_OBJECT, default benches/objs/execsnoop.bpf.o) against a regular-file
#       copy of the kernel BTF (page cache warm), `btfgen min-core-btf` vs `bpftool gen
#       min_core_btf`: the primary case. "vs floor": btfgen's wall time over that of
#       `cat FILE > /dev/null` (e);
#   (b) every distinct little-endian fixture and benchmark object at once
#       (tests/data/progs/*.bpf.o, benches/objs/*.bpf.o; bpftool refuses the big-endian
#       ones), against the same file; with OBJECTS=N, copied under numbered names up to N;
#   (c) (a) with /sys/kernel/btf/vmlinux itself as the input; floor: `cat` of it;
#   (c2) (b) with /sys/kernel/btf/vmlinux as the input; floor: `cat` of it;
#   (d) (a) with the file packed as BTFHub packs it, KERNEL.btf.tar.xz: `btfgen batch` over a
#       directory holding that one archive vs `tar -xJf` then bpftool (as BTFHub's scripts
#       do), in a small sh script; floor: `xz -dc` of the archive;
#   (e) the floors: `cat FILE`, `cat /sys/kernel/btf/vmlinux` (output on /dev/null: process
#       start + reading the input once), `xz -dc` of the archive, and `/bin/true` (process
#       start alone);
#   (f) `btfgen batch` vs a shell loop running `bpftool gen min_core_btf` once per kernel over
#       a BTFHub-like tree (benches/make-btf-tree.sh: COUNT kernels, every third a .btf.tar.xz,
#       which the loop unpacks with `tar -xJf` first), objects task/multi/calls.bpf.o; also
#       timed, in the same rounds: `xz -dc` of every archive, a floor that both sides pay;
#   (g) the same on a tree of plain .btf files only (no xz decoding on either side).
# Every output goes to disk (the work directory), unsynced by both tools: btfgen writes a
# temporary file and renames it over the output, bpftool writes the output in place.
# Each case prints btfgen, bpftool and its floor side by side, with the ratios. Then the
# library's peak heap for (a) and (b): the Rust API with the input borrowed (benches/heap.rs, a
# counting allocator) and the C ABI with the input given by path, file and sysfs
# (benches/capi_heap.c on `make lib`'s libbtfgen.so: bpf_reloc_info__mem_peak); and a summary
# of the targets: (a) >= 8x bpftool's wall, (b) >= 15x, peak RSS <= 0.5x bpftool's in (a) and
# (b), (a) within 1.5x of its floor, (c) >= 8x, the C ABI's heap <= 5% of the file.
#
# Measured by benches/measure.py (details there): each run is a process, forked beforehand,
# that execs the command when told to and is reaped with wait4(); no shell or /usr/bin/time in
# between. Wall time: from telling it to wait4's return. CPU time: user + system from wait4's
# rusage, which includes every child process the command waited for; less sensitive than wall
# time to other load on the machine. Peak RSS: ru_maxrss; for a shell script that is its
# largest single process (bpftool or xz), not a sum. The output of every command goes to
# /dev/null; cleanup between runs is not timed.
#
# Environment: BTFGEN (binary; default: `make cli`, the statically linked release build,
# target/static/release/btfgen), BPFTOOL (default bpftool), ROUNDS (15; the figures quoted
# need >= 11, fewer only to try the script), BATCH_ROUNDS (5),
# ONE_OBJECT, OBJECTS (default: the distinct objects, no copies), COUNT (kernels per tree, 60),
# TREE_DIR (where the trees are kept between runs, default /var/tmp/btfgen-bench-trees),
# BTF_CACHE (see make-btf-tree.sh).
# Needs: bpftool, python3, tar, xz, cc; for (f)/(g) what make-btf-tree.sh needs.
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
nobjects=${OBJECTS:-0}
one_object=${ONE_OBJECT:-benches/objs/execsnoop.bpf.o}
count=${COUNT:-60}
trees=${TREE_DIR:-/var/tmp/btfgen-bench-trees}
vmlinux=/sys/kernel/btf/vmlinux
bpftool=${BPFTOOL:-bpftool}

for tool in "$bpftool" python3 tar xz cc; do
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
trap 'rm -rf "$work"' EXIT
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

# row LABEL: LABEL's medians as one line of a report.
row() {
    printf '    %-30s %7.1f ms  %7.1f ms  %6.1f MiB\n' "$1" "$(field "$1" 2)" "$(field "$1" 3)" \
        "$(field "$1" 4)"
}

# report TITLE LABEL_A LABEL_B [FLOOR]: medians of A (btfgen), B (bpftool, or the baseline) and
# FLOOR side by side; B over A, and A over FLOOR.
report() {
    local title=$1 a=$2 b=$3 floor=${4:-}
    local wa wb ra rb ca cb
    wa=$(field "$a" 2) wb=$(field "$b" 2) ca=$(field "$a" 3) cb=$(field "$b" 3)
    ra=$(field "$a" 4) rb=$(field "$b" 4)
    printf '%s (%s rounds)\n' "$title" "$(field "$a" 5)"
    printf '    %-30s %10s  %10s  %10s\n' "" "wall" "CPU" "peak RSS"
    row "$a"
    row "$b"
    [[ -z $floor ]] || row "$floor"
    printf '    %-30s %9.2fx  %9.2fx  %9.2fx\n' "ratio ($b / $a)" "$(calc "$wb / $wa")" \
        "$(calc "$cb / ($ca > 0 ? $ca : 1)")" "$(calc "$rb / $ra")"
    [[ -z $floor ]] || vs_floor "$a" "$floor"
}

# vs_floor LABEL FLOOR: LABEL's median wall time over FLOOR's.
vs_floor() {
    printf '    %-30s %9.2fx\n' "btfgen vs floor ($2)" "$(calc "$(field "$1" 2) / $(field "$2" 2)")"
}

echo "compare: btfgen = $BTFGEN, bpftool = $($bpftool version | head -n1), $(nproc) CPUs," \
    "load $(cut -d' ' -f1-3 /proc/loadavg)" >&2

# ---- (a)-(e): one kernel BTF, as a file, from sysfs, as an archive ----
# The library's heap is measured after the timing; built now so that its compilation does not
# load the machine during it.
cargo bench --quiet --bench heap --no-run >&2
file=$work/vmlinux.btf
cp "$vmlinux" "$file"
mkdir -p "$work/btfhub"
archive=$work/btfhub/vmlinux.btf.tar.xz
tar -cf - -C "$work" vmlinux.btf | xz -T1 >"$archive"
cat "$file" "$archive" >/dev/null # page cache warm

objects=()
for o in tests/data/progs/*.bpf.o benches/objs/*.bpf.o; do objects+=("$o"); done
distinct=${#objects[@]}
mkdir -p "$work/objs"
for ((i = 0; ${#objects[@]} < nobjects; i++)); do
    o=${objects[i % distinct]}
    copy=$work/objs/$(basename "$o" .bpf.o)-$i.bpf.o
    cp "$o" "$copy"
    objects+=("$copy")
done

# (d)'s bpftool side: unpack, then minimize, as BTFHub's scripts do.
cat >"$work/unpack-then-bpftool.sh" <<'EOF'
#!/bin/sh
set -eu
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
tar -xJf "$1" -C "$tmp"
"$2" gen min_core_btf "$tmp/vmlinux.btf" "$3" "$4" >/dev/null
EOF

echo "compare: (a)-(e), $rounds rounds" >&2
job "a:btfgen" "$BTFGEN" min-core-btf "$file" "$work/out/a-btfgen.btf" "$one_object"
job "a:bpftool" "$bpftool" gen min_core_btf "$file" "$work/out/a-bpftool.btf" "$one_object"
job "b:btfgen" "$BTFGEN" min-core-btf "$file" "$work/out/b-btfgen.btf" "${objects[@]}"
job "b:bpftool" "$bpftool" gen min_core_btf "$file" "$work/out/b-bpftool.btf" "${objects[@]}"
job "c:btfgen" "$BTFGEN" min-core-btf "$vmlinux" "$work/out/c-btfgen.btf" "$one_object"
job "c:bpftool" "$bpftool" gen min_core_btf "$vmlinux" "$work/out/c-bpftool.btf" "$one_object"
job "c2:btfgen" "$BTFGEN" min-core-btf "$vmlinux" "$work/out/c2-btfgen.btf" "${objects[@]}"
job "c2:bpftool" "$bpftool" gen min_core_btf "$vmlinux" "$work/out/c2-bpftool.btf" "${objects[@]}"
before=$(json_list rm -rf "$work/out/d-btfgen") job "d:btfgen" \
    "$BTFGEN" batch --btf-dir "$work/btfhub" --out-dir "$work/out/d-btfgen" "$one_object"
job "d:bpftool" sh "$work/unpack-then-bpftool.sh" "$archive" "$bpftool" \
    "$work/out/d-bpftool.btf" "$one_object"
job "e:cat-file" cat "$file"
job "e:cat-sysfs" cat "$vmlinux"
job "e:xz-dc" xz -dc "$archive"
job "e:true" /bin/true
measure "$rounds"
if ! cmp -s "$work/out/a-btfgen.btf" "$work/out/c-btfgen.btf" ||
    ! cmp -s "$work/out/a-btfgen.btf" "$work/out/d-btfgen/vmlinux.btf" ||
    ! cmp -s "$work/out/b-btfgen.btf" "$work/out/c2-btfgen.btf"; then
    echo "compare: btfgen's outputs for (a), (c) and (d), or (b) and (c2), differ" >&2
    exit 1
fi
heap=$(cargo bench --quiet --bench heap -- "$file" "$one_object"
    cargo bench --quiet --bench heap -- "$file" "${objects[@]}" | tail -n +2)
# The C ABI, input by path: `make lib`'s shared library, the client built against it.
make --quiet lib >&2
cc -std=c99 -O2 -Iinclude -o "$work/capi_heap" benches/capi_heap.c -Ltarget/release -lbtfgen \
    -Wl,-rpath,"$PWD/target/release"
capi_heap=$(
    for input in "$file" "$vmlinux"; do
        printf 'C ABI peak heap, %-28s one object: %s\n' "${input##*/}," \
            "$("$work/capi_heap" "$input" "$one_object")"
        printf 'C ABI peak heap, %-28s %d objects: %s\n' "${input##*/}," "${#objects[@]}" \
            "$("$work/capi_heap" "$input" "${objects[@]}")"
    done
)
capi_share=$("$work/capi_heap" "$file" "$one_object" | sed -E 's/.*\(([0-9.]+)% .*/\1/')

# ---- (f) and (g): batch over a tree ----
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
        case=f
        [[ $tree == "$plain" ]] && case=g
        echo "compare: ($case) $tree, $batch_rounds rounds" >&2
        before=$(json_list rm -rf "$work/out/batch") job "$case:btfgen-batch" \
            "$BTFGEN" batch --btf-dir "$tree" --out-dir "$work/out/batch" "${batch_objects[@]}"
        before=$(json_list rm -rf "$work/out/loop") job "$case:bpftool-loop" \
            bash "$work/loop.sh" "$tree" "$work/out/loop" "$bpftool" "${batch_objects[@]}"
        if [[ $case == f ]]; then
            # What decoding the archives alone costs (one xz process, one core): a floor that
            # both sides of (d) pay, whatever they do.
            job f:xz-decode-archives find "$tree" -name '*.btf.tar.xz' -exec xz -dc {} +
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
# meets LABEL_A LABEL_B COLUMN MIN|MAX BOUND TEXT: one line of the target summary, on
# LABEL_B / LABEL_A of COLUMN (2 = wall, 4 = peak RSS).
meets() {
    local ratio ok
    ratio=$(calc "$(field "$2" "$3") / $(field "$1" "$3")")
    ok=$(calc "($4 == 1) ? ($ratio >= $5) : ($ratio <= $5)")
    printf '    %-58s %7.2f  %s\n' "$6" "$ratio" "$( ((ok)) && echo met || echo 'NOT met')"
}

echo
echo "btfgen vs bpftool: median wall time, CPU time and peak RSS ($(nproc) CPUs, load now $(cut -d' ' -f1-3 /proc/loadavg))"
one=$(basename "$one_object")
report "(a) $one vs vmlinux BTF, regular file" a:btfgen a:bpftool e:cat-file
report "(b) ${#objects[@]} objects ($distinct distinct) vs vmlinux BTF, regular file" b:btfgen b:bpftool \
    e:cat-file
report "(c) $one vs /sys/kernel/btf/vmlinux" c:btfgen c:bpftool e:cat-sysfs
report "(c2) ${#objects[@]} objects vs /sys/kernel/btf/vmlinux" c2:btfgen c2:bpftool e:cat-sysfs
report "(d) $one vs vmlinux.btf.tar.xz (btfgen batch; tar -xJf, bpftool)" d:btfgen d:bpftool e:xz-dc
report "(e) floors: cat FILE > /dev/null vs /bin/true" e:cat-file e:true
report "    cat /sys/kernel/btf/vmlinux vs xz -dc ARCHIVE" e:cat-sysfs e:xz-dc
echo
echo "$heap"
echo "$capi_heap"
echo
echo "targets (ratio, bound):"
meets a:btfgen a:bpftool 2 1 8 "(a) one object, file: bpftool wall / btfgen wall >= 8"
meets b:btfgen b:bpftool 2 1 15 "(b) ${#objects[@]} objects, file: the same >= 15"
meets a:bpftool a:btfgen 4 0 0.5 "(a) peak RSS, btfgen / bpftool <= 0.5"
meets b:bpftool b:btfgen 4 0 0.5 "(b) peak RSS, btfgen / bpftool <= 0.5"
meets e:cat-file a:btfgen 2 0 1.5 "(a) btfgen wall / cat FILE wall <= 1.5"
meets c:btfgen c:bpftool 2 1 8 "(c) one object, sysfs: bpftool wall / btfgen wall >= 8"
printf '    %-58s %7.2f  %s\n' "C ABI heap, one object, file: % of the file <= 5" "$capi_share" \
    "$( (($(calc "$capi_share <= 5"))) && echo met || echo 'NOT met')"
if ((batch)); then
    echo
    report "(f) batch over $(cat "$work/f.kernels"), 3 objects" f:btfgen-batch f:bpftool-loop
    xz=f:xz-decode-archives
    printf '    %-30s %7.1f ms  %7.1f ms  %6.1f MiB\n' "xz -dc of every archive (floor)" \
        "$(field "$xz" 2)" "$(field "$xz" 3)" "$(field "$xz" 4)"
    report "(g) batch over $(cat "$work/g.kernels"), 3 objects" g:btfgen-batch g:bpftool-loop
fi
