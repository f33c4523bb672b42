#!/usr/bin/env bash
# Run every fuzz target (or those named) for MINUTES each, one after another, one libFuzzer
# worker each (one core), from seeded corpora. Usage:
#
#   fuzz/run.sh MINUTES [TARGET...]
#
# Needs a nightly toolchain and cargo-fuzz (`cargo install cargo-fuzz`). Seeds the corpora
# from tests/data/ first (seed.py). Per target, the libFuzzer log goes to fuzz/logs/TARGET.log
# and crashes, timeouts and OOMs to fuzz/artifacts/TARGET/. At the end, prints each target's
# final `#N DONE cov: X ft: Y` line and executions, and exits non-zero if any target found
# something.
set -uo pipefail
cd "$(dirname "$0")"

minutes=${1:?usage: fuzz/run.sh MINUTES [TARGET...]}
shift
targets=("$@")
if ((${#targets[@]} == 0)); then
    targets=(btf_parse btf_index btf_split btf_split_dedup btf_ext object pipeline_object pipeline_target structured
        os_release select_archive dwarf_elf dwarf_structured dwarf_sup)
fi
seconds=$((minutes * 60))

python3 seed.py
mkdir -p logs
# Release build with debug assertions and overflow checks (-O -a): an arithmetic overflow is a
# finding too. One build job, to leave the other core alone.
CARGO_BUILD_JOBS=${CARGO_BUILD_JOBS:-1} cargo +nightly fuzz build -O -a || exit 1

# Known false positives of the leak check (see the file).
export LSAN_OPTIONS="suppressions=$PWD/lsan.supp${LSAN_OPTIONS:+:$LSAN_OPTIONS}"

failed=()
for t in "${targets[@]}"; do
    echo "== $t: ${minutes} min" >&2
    mkdir -p "artifacts/$t"
    # -timeout: an input taking 10 s (30 s for the generator's large inputs; the build is
    # instrumented and checks overflows, several times slower than a release build) is a hang;
    # -rss_limit_mb: 2 GiB is an OOM finding.
    timeout=10
    [[ $t == structured || $t == btf_split_dedup ]] && timeout=30
    cargo +nightly fuzz run -O -a "$t" "corpus/$t" -- \
        -max_total_time="$seconds" -timeout="$timeout" -rss_limit_mb=2048 -max_len=65536 \
        -print_final_stats=1 -artifact_prefix="artifacts/$t/" >"logs/$t.log" 2>&1
    rc=$?
    if ((rc != 0)); then
        failed+=("$t")
        echo "   $t: FOUND SOMETHING (exit $rc), see fuzz/logs/$t.log and fuzz/artifacts/$t/" >&2
    fi
done

echo
printf '%-16s %14s %8s %8s %s\n' target executions cov ft result
for t in "${targets[@]}"; do
    done_line=$(grep -E '^#[0-9]+[[:space:]]+DONE' "logs/$t.log" | tail -1)
    execs=$(sed -nE 's/^stat::number_of_executed_units:[[:space:]]*([0-9]+).*/\1/p' "logs/$t.log" | tail -1)
    cov=$(sed -nE 's/.*DONE[[:space:]]+cov: ([0-9]+).*/\1/p' <<<"$done_line")
    ft=$(sed -nE 's/.* ft: ([0-9]+).*/\1/p' <<<"$done_line")
    result=ok
    [[ " ${failed[*]} " == *" $t "* ]] && result=FOUND
    printf '%-16s %14s %8s %8s %s\n' "$t" "${execs:-?}" "${cov:-?}" "${ft:-?}" "$result"
done
((${#failed[@]} == 0))
