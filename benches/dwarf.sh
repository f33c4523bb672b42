#!/usr/bin/env bash
# btfgen against pahole (+ bpftool) on a kernel without BTF, side by side in one run:
#
#     benches/dwarf.sh DEBUG_VMLINUX OBJ_DIR
#
# DEBUG_VMLINUX is a distribution's debug vmlinux with its .BTF section removed (e.g. Debian's
# linux-image-*-dbg: `objcopy --remove-section=.BTF`; docs/kernels-without-btf.md), OBJ_DIR
# real BPF objects (*.bpf.o, such as bcc's libbpf-tools built locally; none is committed).
#
# Rows (medians of ROUNDS rounds, default 3, the commands alternating round after round, each
# process timed by benches/measure.py: wall, CPU, peak RSS of the largest process):
#   min-core-btf  `btfgen min-core-btf DEBUG_VMLINUX OUT OBJS...` against
#                 `pahole -j --btf_encode_detached=FULL DEBUG_VMLINUX` then
#                 `bpftool gen min_core_btf FULL OUT OBJS...`        (issue 31: >= 4x, <= 0.5x RSS)
#   encode        `btfgen encode DEBUG_VMLINUX FULL` against that pahole alone
#                                                                    (issue 33: >= 3x, <= 0.5x RSS)
# With a C compiler (cc), also the round trip of a cache line between the first two CPUs before
# and after the rounds (benches/cross-core.c): on a VM, tens of ns where its vCPUs share a die,
# hundreds where they do not, and then btfgen's conversion, which hands each unit's DIEs from
# one thread to the other, is slower (pahole's threads share little).
#
# Environment: BTFGEN (default: `make cli`'s static build), PAHOLE, BPFTOOL, ROUNDS, CC.
set -euo pipefail
cd "$(dirname "$0")/.."

if (($# != 2)) || [[ ! -f $1 || ! -d $2 ]]; then
    sed -n '2,19p' "$0" >&2
    exit 2
fi
vmlinux=$1
mapfile -t objects < <(find "$2" -maxdepth 1 -name '*.bpf.o' | sort)
((${#objects[@]} > 0)) || { echo "dwarf: no *.bpf.o in $2" >&2; exit 2; }
rounds=${ROUNDS:-3}
pahole=${PAHOLE:-pahole}
bpftool=${BPFTOOL:-bpftool}
if [[ -z ${BTFGEN:-} ]]; then
    make --quiet cli >&2
    BTFGEN=target/static/release/btfgen
fi
work=$(mktemp -d "${TMPDIR:-/tmp}/btfgen-dwarf.XXXXXX")
trap 'rm -rf "$work"' EXIT

spec() {
    python3 -c 'import json, sys; print(json.dumps({"label": sys.argv[1], "argv": sys.argv[2:]}))' "$@"
}
{
    spec min:btfgen "$BTFGEN" min-core-btf -q "$vmlinux" "$work/a.btf" "${objects[@]}"
    spec min:pahole+bpftool sh -c '"$1" -j --btf_encode_detached="$2" "$3" >/dev/null &&
        shift 3 && exec "$@"' sh "$pahole" "$work/full-p.btf" "$vmlinux" \
        "$bpftool" gen min_core_btf "$work/full-p.btf" "$work/b.btf" "${objects[@]}"
    spec encode:btfgen "$BTFGEN" encode -q "$vmlinux" "$work/full-a.btf"
    spec encode:pahole "$pahole" -j --btf_encode_detached="$work/full-p.btf" "$vmlinux"
} >"$work/spec"
echo "btfgen dwarf: $vmlinux ($(stat -c %s "$vmlinux") bytes), ${#objects[@]} objects from $2"
round_trip() { [[ -x $work/cross-core ]] && "$work/cross-core" || echo "?"; }
"${CC:-cc}" -O2 -pthread benches/cross-core.c -o "$work/cross-core" 2>/dev/null || true
before=$(round_trip)
python3 benches/measure.py "$rounds" "$work/spec" >"$work/out"
echo "cross-core round trip: $before ns before, $(round_trip) ns after"
awk -F'\t' -v r="$rounds" '
    { wall[$1] = $2; cpu[$1] = $3; rss[$1] = $4 }
    function row(name, a, b) {
        printf "%-13s btfgen %6.0f ms (CPU %6.0f ms) %5.0f MiB | %-15s %6.0f ms (CPU %6.0f ms) %5.0f MiB | %4.2fx faster, %4.2fx the RSS (%d rounds)\n",
            name, wall[a], cpu[a], rss[a], substr(b, index(b, ":") + 1), wall[b], cpu[b], rss[b],
            wall[b] / wall[a], rss[a] / rss[b], r
    }
    END {
        row("min-core-btf", "min:btfgen", "min:pahole+bpftool")
        row("encode", "encode:btfgen", "encode:pahole")
    }' "$work/out"
