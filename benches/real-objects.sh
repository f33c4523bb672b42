#!/usr/bin/env bash
# btfgen against bpftool on real objects, every row of issue 30's table in one run:
#
#     benches/real-objects.sh OBJ_DIR [TARGET_BTF] [TREE]
#
# OBJ_DIR holds real BPF objects (*.bpf.o), such as bcc's libbpf-tools built locally with
# clang-19 (no third-party object is committed; docs/performance.md says how they were
# built). TARGET_BTF (default: the running kernel's BTF, copied to a regular file) is the
# kernel BTF they are minimized against. TREE, if given, is a BTFHub-like tree of kernel BTFs
# for the batch row (benches/make-btf-tree.sh makes one).
#
# Rows (medians of ROUNDS rounds, default 21, the tools alternating round after round, each
# process timed by benches/measure.py):
#   all       every object in one `min-core-btf` vs `bpftool gen min_core_btf`   (>= 14x)
#   20        the first 20 objects, the same                                      (>= 15x)
#   each      each object alone (ROUNDS_EACH rounds, default 7): the least and
#             median ratio, how many are >= 8x, and btfgen over `cat TARGET`      (>= 8x, <= 1.5x)
#   verdict   the verdict pass (core::verdict::analyse, inclusive) in a `min-core-btf --report`
#             run of each object, by callgrind instruction counts                 (<= 5% each)
#   heap      the C ABI's peak heap for one object (each; the largest shown) and for all,
#             benches/capi_heap.c on `make lib`'s libbtfgen.so                    (<= 5%)
#   arena     c-tests/abi/arena -p on every object: the static library on a fixed arena
#             (built by `make -C c-tests/abi`), its high-water mark over the target  (<= 1.2x)
#   batch     with TREE: `btfgen batch -j2` over it vs a shell loop of bpftool    (>= 20x)
#             (which unpacks each .btf.tar.xz with tar first; a tree of plain .btf files,
#             PACK_EVERY=0 benches/make-btf-tree.sh, measures the tools, not xz)
#
# Environment: BTFGEN (default: `make cli`'s static build), BPFTOOL (bpftool), ROUNDS,
# ROUNDS_EACH, BATCH_ROUNDS (5). Needs python3, valgrind (verdict), cc (heap).
set -euo pipefail
cd "$(dirname "$0")/.."

if (($# < 1)) || [[ ! -d $1 ]]; then
    sed -n '2,30p' "$0" >&2
    exit 2
fi
obj_dir=$1
rounds=${ROUNDS:-21}
rounds_each=${ROUNDS_EACH:-7}
batch_rounds=${BATCH_ROUNDS:-5}
bpftool=${BPFTOOL:-bpftool}
mapfile -t objects < <(find "$obj_dir" -maxdepth 1 -name '*.bpf.o' | sort)
((${#objects[@]} > 0)) || { echo "real-objects: no *.bpf.o in $obj_dir" >&2; exit 2; }

work=$(mktemp -d "${TMPDIR:-/tmp}/btfgen-real.XXXXXX")
trap 'rm -rf "$work"' EXIT
if [[ -n ${2:-} ]]; then
    target=$2
else
    target=$work/vmlinux.btf
    cp /sys/kernel/btf/vmlinux "$target"
fi
tree=${3:-}
if [[ -z ${BTFGEN:-} ]]; then
    make --quiet cli >&2
    BTFGEN=target/static/release/btfgen
fi
target_bytes=$(stat -c %s "$target")

# spec LABEL [before=JSON] ARGV...: one measure.py job line.
spec() {
    python3 -c 'import json, sys; print(json.dumps({"label": sys.argv[1], "argv": sys.argv[2:]}))' "$@"
}
# median LABEL FILE: the wall-time median of LABEL in measure.py's output FILE.
wall() { awk -F'\t' -v l="$1" '$1 == l { print $2 }' "$2"; }

echo "btfgen real objects: ${#objects[@]} objects from $obj_dir, target $target ($target_bytes bytes)"

# all, 20
{
    spec all:btfgen "$BTFGEN" min-core-btf -q "$target" "$work/a.btf" "${objects[@]}"
    spec all:bpftool "$bpftool" gen min_core_btf "$target" "$work/b.btf" "${objects[@]}"
    spec 20:btfgen "$BTFGEN" min-core-btf -q "$target" "$work/a.btf" "${objects[@]:0:20}"
    spec 20:bpftool "$bpftool" gen min_core_btf "$target" "$work/b.btf" "${objects[@]:0:20}"
    spec cat cat "$target"
} >"$work/spec"
python3 benches/measure.py "$rounds" "$work/spec" >"$work/many"
for n in all 20; do
    a=$(wall "$n:btfgen" "$work/many") b=$(wall "$n:bpftool" "$work/many")
    awk -v n="$n" -v a="$a" -v b="$b" -v r="$rounds" 'BEGIN {
        printf "%-8s btfgen %7.2f ms  bpftool %8.2f ms  %5.1fx  (%d rounds)\n", n, a, b, b / a, r }'
done
cat_ms=$(wall cat "$work/many")

# each
: >"$work/spec"
for o in "${objects[@]}"; do
    n=$(basename "$o" .bpf.o)
    spec "$n:btfgen" "$BTFGEN" min-core-btf -q "$target" "$work/a.btf" "$o" >>"$work/spec"
    spec "$n:bpftool" "$bpftool" gen min_core_btf "$target" "$work/b.btf" "$o" >>"$work/spec"
done
spec cat cat "$target" >>"$work/spec"
python3 benches/measure.py "$rounds_each" "$work/spec" >"$work/each"
python3 - "$work/each" <<'EOF'
import statistics, sys
rows, cat = {}, None
for line in open(sys.argv[1]):
    label, wall = line.split("\t")[:2]
    if label == "cat":
        cat = float(wall)
        continue
    name, tool = label.rsplit(":", 1)
    rows.setdefault(name, {})[tool] = float(wall)
ratios = sorted((v["bpftool"] / v["btfgen"], name, v["btfgen"] / cat) for name, v in rows.items())
floor = sorted(r[2] for r in ratios)
print(f"each     {len(ratios)} objects alone: least {ratios[0][0]:.1f}x ({ratios[0][1]}), "
      f"median {statistics.median(r[0] for r in ratios):.1f}x, "
      f"{sum(r[0] >= 8 for r in ratios)} >= 8x; "
      f"btfgen over cat FILE ({cat:.2f} ms): median {statistics.median(floor):.2f}x, "
      f"most {floor[-1]:.2f}x, {sum(f <= 1.5 for f in floor)} <= 1.5x")
EOF

# verdict
if command -v valgrind >/dev/null; then
    # The pass is found by its symbol: a build that inlined it would read 0% everywhere.
    # (grep reads all of nm's output: with -q, nm would die of SIGPIPE and pipefail fail it.)
    nm -C "$BTFGEN" | grep ' btfgen::core::verdict::analyse$' >/dev/null ||
        { echo "real-objects: $BTFGEN has no symbol btfgen::core::verdict::analyse" >&2; exit 1; }
    for o in "${objects[@]}"; do
        valgrind --tool=callgrind --callgrind-out-file="$work/cg" \
            "$BTFGEN" min-core-btf -q --report "$work/r.json" "$target" "$work/a.btf" "$o" \
            >/dev/null 2>&1
        total=$(callgrind_annotate "$work/cg" 2>/dev/null |
            awk '/PROGRAM TOTALS/ { gsub(",", "", $1); print $1 }')
        pass=$(callgrind_annotate --inclusive=yes "$work/cg" 2>/dev/null |
            awk '!found && /verdict::analyse \[/ { gsub(",", "", $1); print $1; found = 1 }')
        # Not called: the object's programs were judged without the pass (nothing poisoned).
        echo "$(basename "$o" .bpf.o) ${pass:-0} $total"
    done >"$work/verdict"
    awk '{ s = 100 * $2 / $3; sum += s; if (s > most) { most = s; who = $1 } n++;
           if (s <= 5) ok++ }
         END { printf "verdict  share of a --report run: mean %.2f%%, most %.2f%% (%s), %d of %d <= 5%%\n",
               sum / n, most, who, ok, n }' "$work/verdict"
else
    echo "verdict  SKIP: valgrind not installed"
fi

# heap
make --quiet lib >&2
cc -std=c99 -O2 -Iinclude -o "$work/capi_heap" benches/capi_heap.c -Ltarget/release -lbtfgen \
    -Wl,-rpath,"$PWD/target/release"
most=0 who=
for o in "${objects[@]}"; do
    peak=$("$work/capi_heap" "$target" "$o" | awk 'NR == 1 { print $1 }')
    if ((peak > most)); then most=$peak who=$(basename "$o" .bpf.o); fi
done
all=$("$work/capi_heap" "$target" "${objects[@]}" | awk 'NR == 1 { print $1 }')
awk -v m="$most" -v w="$who" -v a="$all" -v t="$target_bytes" 'BEGIN {
    printf "heap     C ABI peak: one object at most %d bytes = %.1f%% (%s); all %d bytes = %.1f%%\n",
        m, 100 * m / t, w, a, 100 * a / t }'

# arena
arena=target/c-tests-abi/arena
if make --quiet -C c-tests/abi "$PWD/$arena" >&2 2>/dev/null && [[ -x $arena ]]; then
    "$arena" -p "$target" "$work/arena.btf" "${objects[@]}" 2>&1 |
        awk -v t="$target_bytes" '/bytes at the top/ {
            for (i = 1; i <= NF; i++) if ($(i + 1) == "bytes" && $(i + 2) == "at") top = $i
            printf "arena    static library on a fixed arena, all objects: high-water %d bytes = %.2fx the target\n",
                top, top / t }'
else
    echo "arena    SKIP: c-tests/abi/arena did not build"
fi

# batch
if [[ -n $tree ]]; then
    # Every kernel btfgen batch takes, an archive (.btf.tar.xz, as make-btf-tree.sh packs every
    # third) unpacked with tar first, as BTFHub's own scripts do.
    cat >"$work/loop.sh" <<'EOF'
tree=$1 out=$2; shift 2
rm -rf "$out"; mkdir -p "$out"
tmp=$(mktemp -d)
find "$tree" -type f \( -name '*.btf' -o -name '*.btf.tar.xz' \) ! -path '*/.*' | while read -r f; do
    in=$f
    case $f in
    *.tar.xz)
        tar -xJf "$f" -C "$tmp" || exit 1
        in=$tmp/$(basename "${f%.tar.xz}")
        ;;
    esac
    bpftool gen min_core_btf "$in" "$out/$(echo "${f%.tar.xz}" | tr / _)" "$@" || exit 1
    [ "$in" = "$f" ] || rm -f "$in"
done
rm -rf "$tmp"
EOF
    kernels=$(find "$tree" -type f \( -name '*.btf' -o -name '*.btf.tar.xz' \) ! -path '*/.*' | wc -l)
    packed=$(find "$tree" -type f -name '*.btf.tar.xz' ! -path '*/.*' | wc -l)
    python3 -c 'import json, sys; print(json.dumps({"label": "batch:btfgen", "argv": sys.argv[1:], "before": ["rm", "-rf", sys.argv[8]]}))' \
        "$BTFGEN" batch -q -j2 --btf-dir "$tree" --out-dir "$work/bout" "${objects[@]}" >"$work/spec"
    spec batch:bpftool sh "$work/loop.sh" "$tree" "$work/loop" "${objects[@]}" >>"$work/spec"
    python3 benches/measure.py "$batch_rounds" "$work/spec" >"$work/batch"
    a=$(wall batch:btfgen "$work/batch") b=$(wall batch:bpftool "$work/batch")
    nb=$(find "$work/bout" -type f -name '*.btf' | wc -l) nl=$(find "$work/loop" -type f | wc -l)
    if ((nb != kernels || nl != kernels)); then
        echo "real-objects: $kernels kernels, btfgen batch wrote $nb outputs, the bpftool loop $nl" >&2
        exit 1
    fi
    awk -v k="$kernels" -v p="$packed" -v n="${#objects[@]}" -v a="$a" -v b="$b" 'BEGIN {
        printf "batch    %d kernels (%d packed) x %d objects, -j2: btfgen %.1f ms  bpftool loop %.1f ms  %.1fx\n",
            k, p, n, a, b, b / a }'
else
    echo "batch    SKIP: no TREE given"
fi
