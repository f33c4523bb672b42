#!/usr/bin/env bash
# SPDX-License-Identifier: MIT OR Apache-2.0
#
# Runs the C tests of btfgen's C library; called by `make -C c-tests/abi check`, which builds
# everything first and sets ROOT (repository), OUT (built test programs) and HERE (this
# directory). Each case prints "ok", "FAILED" or "skipped: reason"; the last line is
# "abi: N passed, N failed, N skipped" and the exit code is 1 if anything failed.
set -uo pipefail

ROOT=${ROOT:?} OUT=${OUT:?} HERE=${HERE:?}
LIB=$ROOT/target/release
CLI=$LIB/btfgen
DATA=$ROOT/tests/data
VMLINUX=${VMLINUX:-/sys/kernel/btf/vmlinux}
TMP=$(mktemp -d /tmp/btfgen-abi.XXXXXX)
trap 'rm -rf "$TMP"' EXIT

passed=0 failed=0 skipped=0
failures=()

# case NAME COMMAND...: run COMMAND (output in $TMP/NAME.log); exit 0 = ok, 77 = skipped (the
# reason is the log's "SKIP" line), anything else = failed (the log is shown).
case_() {
    local name=$1 rc=0
    shift
    "$@" >"$TMP/$name.log" 2>&1 || rc=$?
    if ((rc == 0)); then
        passed=$((passed + 1))
        echo "ok       $name"
    elif ((rc == 77)); then
        skipped=$((skipped + 1))
        echo "skipped  $name: $(grep -m1 -o 'SKIP.*' "$TMP/$name.log" || echo 'no reason given')"
    else
        failed=$((failed + 1))
        failures+=("$name")
        echo "FAILED   $name (exit $rc):"
        sed 's/^/    /' "$TMP/$name.log" | tail -n 40
    fi
}

skip() {
    echo "SKIP $*"
    return 77
}

# --- the library itself -------------------------------------------------------------------

# Exactly the API, each symbol under its capi.map version node, plus the nodes themselves.
symbols() {
    local want got
    want=$(awk '/^BTFGEN_[0-9.]+ \{/ { node = $1; print node }
        /^[[:space:]]*[a-z_][a-z0-9_]*;$/ { sub(/;$/, "", $1); print $1 "@@" node }' \
        "$ROOT/capi.map" | sort)
    got=$(nm -D --defined-only --with-symbol-versions "$LIB/libbtfgen.so.1" | awk '{print $3}' | sort)
    echo "exported:"
    echo "$got"
    diff <(echo "$want") <(echo "$got") || return 1
    # ... and every function the header declares is among them, and vice versa.
    local declared
    declared=$(grep -oE '^[a-z].*[ *]([a-z_0-9]+)\(' "$ROOT/include/btfgen.h" \
        | sed -E 's/.*[ *]([a-z_0-9]+)\($/\1/' | sort)
    diff <(echo "$want" | grep -v '^BTFGEN_[0-9.]*$' | sed 's/@@.*//' | sort) <(echo "$declared")
}

soname() {
    readelf -d "$LIB/libbtfgen.so.1" | grep -F 'Library soname: [libbtfgen.so.1]' &&
        [[ $(readlink "$LIB/libbtfgen.so") == libbtfgen.so.1 ]] &&
        [[ -f $LIB/libbtfgen.a ]]
}

header_c99() {
    printf '#include "btfgen.h"\nint main(void) { return 0; }\n' >"$TMP/h.c"
    gcc -std=c99 -Wall -Wextra -Werror -pedantic -I"$ROOT/include" -fsyntax-only "$TMP/h.c" &&
        gcc -std=c99 -Wall -Wextra -Werror -I"$ROOT/include" -fsyntax-only "$TMP/h.c" &&
        g++ -Wall -Werror -I"$ROOT/include" -x c++ -fsyntax-only "$TMP/h.c"
}

# Each compatibility header alone, as libbpf's include paths: it brings what libbpf's own
# header would (va_list, bool, size_t, uint32_t, FILE, memcpy) and all of btfgen's API.
compat_headers() {
    local h
    for h in bpf/libbpf.h bpf/btf.h; do
        printf '#include <%s>\n%s\n' "$h" \
            'static int print(enum libbpf_print_level l, const char *f, va_list a)
{ (void)l; return vfprintf(stderr, f, a); }
int main(void) { bool b = true; size_t n = 1; uint32_t sz = 0; char x[2];
memcpy(x, "a", 2); libbpf_set_print(print);
return b && n && !btf__raw_data(NULL, &sz) && x[0] == 97 ? 0 : 1; }' >"$TMP/compat.c"
        echo "$h:"
        gcc -std=c99 -Wall -Wextra -Werror -pedantic -I"$ROOT/include" -I"$ROOT/include/btfgen" \
            -o "$TMP/compat" "$TMP/compat.c" -L"$LIB" -lbtfgen -Wl,-rpath,"$LIB" &&
            "$TMP/compat" || return 1
    done
}

header_fresh() {
    if ! command -v cbindgen >/dev/null; then
        skip "cbindgen not installed (cargo install cbindgen --locked --version 0.29.4)"
        return
    fi
    make -s -C "$ROOT" check-header
}

install_() {
    local dest=$TMP/dest prefix=$TMP/prefix
    make -s -C "$ROOT" install DESTDIR="$dest" PREFIX=/usr >/dev/null || return 1
    for f in lib/libbtfgen.so.1 lib/libbtfgen.so lib/libbtfgen.a include/btfgen.h \
        include/btfgen/bpf/libbpf.h include/btfgen/bpf/btf.h lib/pkgconfig/btfgen.pc; do
        [[ -e $dest/usr/$f ]] || { echo "missing $dest/usr/$f"; return 1; }
    done
    grep -qx 'prefix=/usr' "$dest/usr/lib/pkgconfig/btfgen.pc" || return 1
    # Never over libbpf-dev's headers (/usr/include/bpf).
    [[ ! -e $dest/usr/include/bpf ]] || { echo "installed into /usr/include/bpf"; return 1; }
    # A client built from an installed prefix through pkg-config.
    make -s -C "$ROOT" install PREFIX="$prefix" >/dev/null || return 1
    if ! command -v pkg-config >/dev/null; then
        skip "pkg-config not installed"
        return
    fi
    local flags
    flags=$(PKG_CONFIG_PATH=$prefix/lib/pkgconfig pkg-config --cflags --libs btfgen) || return 1
    echo "pkg-config --cflags --libs btfgen: $flags"
    # shellcheck disable=SC2086
    gcc -std=c99 -Wall -Wextra -Werror -o "$TMP/legacy-pc" "$HERE/legacy.c" $flags \
        -Wl,-rpath,"$prefix/lib" || return 1
    "$TMP/legacy-pc" "$DATA/targets/btf__fields.btf" "$TMP/pc.btf" "$DATA/progs/fields.bpf.o" &&
        "$CLI" min-core-btf "$DATA/targets/btf__fields.btf" "$TMP/pc-ref.btf" "$DATA/progs/fields.bpf.o" &&
        cmp "$TMP/pc.btf" "$TMP/pc-ref.btf" || return 1
    # The original BTFGen client, unchanged: libbpf's headers resolve to btfgen's through the
    # .pc file's Cflags, and the build is exactly `cc -Wall -Werror $(pkg-config ...)`.
    # shellcheck disable=SC2086
    cc -Wall -Werror -o "$TMP/btfgen_client-pc" "$HERE/btfgen_client.c" $flags \
        -Wl,-rpath,"$prefix/lib" || return 1
    client_checks "$TMP/btfgen_client-pc" pc
}

# Kernel BTFs the client minimizes for: two fixtures, and the running kernel when it has one.
client_inputs() {
    local dir=$1
    mkdir -p "$dir"
    cp "$DATA/targets/btf__fields.btf" "$DATA/targets/btf__fields_flat.btf" "$dir/"
}

# relo_lines LOG: libbpf's lines about relocations, candidates and patches, in order, without
# the two that differ by design (btfgen keeps no partial spec of a non-matching candidate, and
# goes on after a failing relocation where libbpf stops).
relo_lines() {
    grep -E "^libbpf: (prog '[^']*': relo #|CO-RE relocating |sec '[^']*': found [0-9]+ CO-RE)" "$1" |
        grep -v -e 'non-matching candidate' -e 'failed to relocate'
}

# client_checks CLIENT NAME: the client's outputs equal `btfgen min-core-btf`'s; with -v it logs
# exactly one `relo #N: <kind> ...` line per relocation `btfgen relocate --json` reports (the
# same program/relo pairs), in libbpf 1.1's words where libbpf logs the same event; without
# -v, no debug log.
client_checks() {
    local client=$1 name=$2 dir=$TMP/client-$2 f
    client_inputs "$dir/in"
    mkdir -p "$dir/out" "$dir/ref" "$dir/out-v"
    ${VALGRIND:-} "$client" -i "$dir/in" -o "$dir/out" "$DATA/progs/fields.bpf.o" \
        >"$dir/stdout" 2>"$dir/stderr" || { cat "$dir/stderr"; return 1; }
    if grep -q "relo #[0-9]*: <" "$dir/stderr"; then
        echo "debug log printed without -v"
        return 1
    fi
    ${VALGRIND:-} "$client" -v -i "$dir/in" -o "$dir/out-v" "$DATA/progs/fields.bpf.o" \
        >/dev/null 2>"$dir/log" || { tail "$dir/log"; return 1; }
    for f in "$dir"/in/*; do
        f=$(basename "$f")
        "$CLI" min-core-btf "$dir/in/$f" "$dir/ref/$f" "$DATA/progs/fields.bpf.o" 2>/dev/null &&
            cmp "$dir/ref/$f" "$dir/out/$f" && cmp "$dir/ref/$f" "$dir/out-v/$f" || return 1
    done
    # One spec line per relocation per kernel, for the same (program, relo) pairs.
    local want got
    want=$(for f in "$dir"/in/*; do
        "$CLI" relocate --json --btf "$f" "$DATA/progs/fields.bpf.o" |
            python3 -c 'import json, sys
for line in sys.stdin: r = json.loads(line); print(r["program"], r["relo"])'
    done | sort)
    got=$(grep -oE "^libbpf: prog '[^']*': relo #[0-9]+: <" "$dir/log" |
        sed -E "s/^libbpf: prog '([^']*)': relo #([0-9]+): <$/\1 \2/" | sort)
    echo "relocations: $(echo "$want" | wc -l), relo #N spec lines: $(echo "$got" | wc -l)"
    diff <(echo "$want") <(echo "$got") || return 1
    [[ -n $want ]]
}

case_ symbols symbols
case_ soname soname
case_ header-c99 header_c99
case_ header-cxx "$OUT/header-cxx"
case_ header-fresh header_fresh
case_ compat-headers compat_headers
case_ install install_

# --- the client flow against `btfgen min-core-btf` -----------------------------------------

# same NAME PROG [PROG_OPTS...] -- CLI_OPTS... -- TARGET OBJECT...: PROG's output must equal
# the CLI's for the same inputs; when the CLI fails, PROG must fail too.
same() {
    local name=$1 prog=$2
    shift 2
    local prog_opts=() cli_opts=()
    while [[ $1 != -- ]]; do prog_opts+=("$1"); shift; done
    shift
    while [[ $1 != -- ]]; do cli_opts+=("$1"); shift; done
    shift
    local target=$1
    shift
    local f
    for f in "$target" "$@"; do
        [[ -e $f ]] || { skip "$f does not exist"; return; }
    done
    rm -f "$TMP/$name.out" "$TMP/$name.ref"
    local cli_rc=0 prog_rc=0
    "$CLI" min-core-btf "$target" "$TMP/$name.ref" "$@" "${cli_opts[@]}" || cli_rc=$?
    ${VALGRIND:-} "$prog" "${prog_opts[@]}" "$target" "$TMP/$name.out" "$@" || prog_rc=$?
    if ((cli_rc != 0)); then
        echo "btfgen min-core-btf failed ($cli_rc): $prog must fail too (it exited $prog_rc)"
        ((prog_rc == 1))
        return
    fi
    ((prog_rc == 0)) && cmp "$TMP/$name.ref" "$TMP/$name.out" &&
        echo "identical: $(stat -c %s "$TMP/$name.out") bytes"
}

for variant in flow flow-static; do
    prog=$OUT/$variant
    case_ "$variant:vmlinux" same "$variant-vmlinux" "$prog" -- -- "$VMLINUX" \
        "$DATA/progs/task.bpf.o" "$DATA/progs/multi.bpf.o"
    case_ "$variant:fixture" same "$variant-fixture" "$prog" -- -- \
        "$DATA/targets/btf__fields.btf" "$DATA/progs/fields.bpf.o"
done
case_ flow:vmlinux-open-mem same flow-mem "$OUT/flow" -m -- -- "$VMLINUX" \
    "$DATA/progs/task.bpf.o" "$DATA/progs/multi.bpf.o"
# A target with DWARF and no .BTF (gcc's DWARF 5, and clang's with zstd-compressed sections):
# bpf_reloc_info__new converts it as the command does.
for dwarf in gcc-dwarf5 clang-19-dwarf5-zstd; do
    case_ "flow:dwarf-$dwarf" same "flow-dwarf-$dwarf" "$OUT/flow" -- -- \
        "$DATA/dwarf/$dwarf.so" "$DATA/dwarf/core.bpf.o"
done
# dwz -m targets (GNU .gnu_debugaltlink, DWARF 5 .debug_sup): the supplementary file next to
# them is found as the command finds it; a copy alone fails for both, as the command does.
for dwarf in gcc-dwarf4-dwzm gcc-dwarf5-dwzm; do
    case_ "flow:dwarf-$dwarf" same "flow-dwarf-$dwarf" "$OUT/flow" -- -- \
        "$DATA/dwarf/$dwarf.so" "$DATA/dwarf/core.bpf.o"
done
cp "$DATA/dwarf/gcc-dwarf4-dwzm.so" "$TMP/dwzm-alone.so"
case_ flow:dwarf-dwzm-alone same flow-dwzm-alone "$OUT/flow" -- -- \
    "$TMP/dwzm-alone.so" "$DATA/dwarf/core.bpf.o"
case_ flow:module same flow-module "$OUT/flow" -M "$DATA/targets/module.btf" -- \
    --module-btf "$DATA/targets/module.btf" -- "$DATA/targets/base.btf" "$DATA/progs/module.bpf.o"
# A module's debug .ko (DWARF, no .BTF) converted to split BTF over the target, whether the
# target is converted from DWARF too (gcc, clang) or is BTF (pahole's): as --module-btf does.
for cc in gcc clang-19; do
    case_ "flow:dwarf-module-$cc" same "flow-dwarf-module-$cc" "$OUT/flow" \
        -M "$DATA/dwarf/kmod-$cc-dwarf5-rel.ko" -- \
        --module-btf "$DATA/dwarf/kmod-$cc-dwarf5-rel.ko" -- \
        "$DATA/dwarf/kbase-$cc-dwarf5.so" "$DATA/dwarf/kmod.bpf.o"
done
case_ flow:dwarf-module-btf-base same flow-dwarf-module-btf-base "$OUT/flow" \
    -M "$DATA/dwarf/kmod-gcc-dwarf5-rel.ko" -- \
    --module-btf "$DATA/dwarf/kmod-gcc-dwarf5-rel.ko" -- \
    "$DATA/dwarf/kbase-gcc-dwarf5.pahole.btf" "$DATA/dwarf/kmod.bpf.o"
# A debug module of another kernel fails both (-EINVAL for the library).
case_ flow:dwarf-module-other-kernel same flow-dwarf-module-other "$OUT/flow" \
    -M "$DATA/dwarf/gcc-dwarf5-rel.ko" -- \
    --module-btf "$DATA/dwarf/gcc-dwarf5-rel.ko" -- \
    "$DATA/dwarf/kbase-gcc-dwarf5.so" "$DATA/dwarf/kmod.bpf.o"

# Every pair of the differential fixture manifest (a split TARGET on BASE: BASE as the
# target, TARGET as a module BTF).
while read -r obj target base _; do
    case $obj in '' | '#'*) continue ;; esac
    [[ $target == vmlinux ]] && tpath=$VMLINUX || tpath=$DATA/$target
    name=manifest:$(basename "$obj" .o)--$(basename "$target" .btf)
    if [[ -n ${base:-} && $base != '#'* ]]; then
        case_ "$name" same "${name//[:\/]/-}" "$OUT/flow" -M "$tpath" -- --module-btf "$tpath" -- \
            "$DATA/$base" "$DATA/$obj"
    else
        case_ "$name" same "${name//[:\/]/-}" "$OUT/flow" -- -- "$tpath" "$DATA/$obj"
    fi
done <"$DATA/manifest.txt"

# --- the legacy BTFGen-style client ----------------------------------------------------------

legacy_error() {
    local want=$1
    shift
    local rc=0
    rm -f "$TMP/legacy-err.btf"
    ${VALGRIND:-} "$OUT/legacy" "$1" "$TMP/legacy-err.btf" "${@:2}" 2>"$TMP/legacy-err.stderr" || rc=$?
    cat "$TMP/legacy-err.stderr"
    ((rc == 1)) && grep -qF "$want" "$TMP/legacy-err.stderr" && [[ ! -e $TMP/legacy-err.btf ]]
}

legacy_cases() {
    local p=$1
    case_ "${p}legacy:vmlinux" same legacy-vmlinux "$OUT/legacy" -- -- "$VMLINUX" \
        "$DATA/progs/task.bpf.o" "$DATA/progs/multi.bpf.o"
    case_ "${p}legacy:fixture" same legacy-fixture "$OUT/legacy" -- -- \
        "$DATA/targets/btf__fields.btf" "$DATA/progs/fields.bpf.o"
    case_ "${p}legacy:missing-target" legacy_error \
        "failed to allocate info structure for $TMP/missing.btf: No such file or directory" \
        "$TMP/missing.btf" "$DATA/progs/fields.bpf.o"
    case_ "${p}legacy:bad-object" legacy_error \
        "error opening object $DATA/targets/btf__fields.btf: Invalid argument" \
        "$DATA/targets/btf__fields.btf" "$DATA/targets/btf__fields.btf"
    case_ "${p}legacy:failing-object" legacy_error \
        "failed to generate btf info for object $DATA/progs/ambiguous.bpf.o: Invalid argument" \
        "$DATA/targets/btf__ambiguous_off.btf" "$DATA/progs/ambiguous.bpf.o"
}
legacy_cases ""

# --- the original BTFGen client: log, wording, file semantics, foreign objects ----------------

case_ client "client_checks" "$OUT/btfgen_client" built

# The debug log in libbpf 1.1's words: every line libbpf prints about the relocations of the
# same object against the same target (candidates found, spec, matching candidate, patched
# instruction, no match, ambiguity) is printed identically, in the same order.
log_wording() {
    local target=$1 object=$2 dir
    [[ -e $target ]] || { skip "$target does not exist"; return; }
    dir=$(mktemp -d "$TMP/wording.XXXXXX")
    mkdir "$dir/in" "$dir/out"
    ln -s "$target" "$dir/in/target"
    local rc=0
    LIBBPF_RELOCS_VERBOSE=1 "$OUT/libbpf_relocs" "$object" "$target" >/dev/null 2>"$dir/libbpf.log" ||
        rc=$?
    if ((rc == 77)); then
        skip "libbpf cannot load here: $(grep -m1 -o 'SKIP.*\|skip.*' "$dir/libbpf.log")"
        return
    fi
    ((rc == 0)) || { tail "$dir/libbpf.log"; return 1; }
    "$OUT/btfgen_client" -v -i "$dir/in" -o "$dir/out" "$object" >/dev/null 2>"$dir/btfgen.log" ||
        return 1
    relo_lines "$dir/libbpf.log" >"$dir/libbpf.lines"
    relo_lines "$dir/btfgen.log" >"$dir/btfgen.lines"
    echo "libbpf: $(wc -l <"$dir/libbpf.lines") lines, btfgen: $(wc -l <"$dir/btfgen.lines") lines"
    [[ -s $dir/libbpf.lines ]] && diff "$dir/libbpf.lines" "$dir/btfgen.lines"
}
case_ client:log-wording:fixture log_wording "$DATA/targets/btf__fields.btf" "$DATA/progs/fields.bpf.o"
case_ client:log-wording:enums log_wording "$DATA/targets/btf__enums.btf" "$DATA/progs/enums.bpf.o"
case_ client:log-wording:vmlinux log_wording "$VMLINUX" "$DATA/progs/task.bpf.o"

# Linked -lbpf -lbtfgen: libbpf's bpf_object__open wins and btfgen gets a libbpf object, which
# bpf_object__reloc_info_gen refuses (EINVAL) instead of crashing.
client_bpf_first() {
    local dir=$TMP/bpf-first rc=0
    client_inputs "$dir/in"
    mkdir -p "$dir/out"
    ${VALGRIND:-} "$OUT/btfgen_client-bpf-first" -i "$dir/in" -o "$dir/out" \
        "$DATA/progs/fields.bpf.o" 2>"$dir/stderr" || rc=$?
    cat "$dir/stderr"
    ((rc == 1)) && grep -q "failed to generate btf info for object .*: Invalid argument" "$dir/stderr"
}
case_ client:linked-after-libbpf client_bpf_first

# btf__save_to_file (and the CLI, which shares its writer) as fopen(path, "w"): new files
# 0666 & ~umask, an existing file keeps its mode, a symlink is written through.
file_modes() {
    local dir=$TMP/modes target=$DATA/targets/btf__fields.btf object=$DATA/progs/fields.bpf.o
    mkdir -p "$dir/real"
    "$CLI" min-core-btf "$target" "$dir/ref.btf" "$object" 2>/dev/null || return 1
    mode() { stat -c %a "$1"; }
    (umask 022 && "$OUT/legacy" "$target" "$dir/new022.btf" "$object" >/dev/null) &&
        [[ $(mode "$dir/new022.btf") == 644 ]] && cmp "$dir/ref.btf" "$dir/new022.btf" || return 1
    (umask 077 && "$OUT/legacy" "$target" "$dir/new077.btf" "$object" >/dev/null) &&
        [[ $(mode "$dir/new077.btf") == 600 ]] || return 1
    (umask 077 && "$CLI" -q min-core-btf "$target" "$dir/cli077.btf" "$object") &&
        [[ $(mode "$dir/cli077.btf") == 600 ]] || return 1
    echo old >"$dir/kept.btf"
    chmod 640 "$dir/kept.btf"
    (umask 077 && "$OUT/legacy" "$target" "$dir/kept.btf" "$object" >/dev/null) &&
        [[ $(mode "$dir/kept.btf") == 640 ]] && cmp "$dir/ref.btf" "$dir/kept.btf" || return 1
    chmod 604 "$dir/kept.btf"
    (umask 022 && "$CLI" -q min-core-btf "$target" "$dir/kept.btf" "$object") &&
        [[ $(mode "$dir/kept.btf") == 604 ]] || return 1
    ln -s real/linked.btf "$dir/link.btf"
    (umask 022 && "$OUT/legacy" "$target" "$dir/link.btf" "$object" >/dev/null) &&
        [[ -L $dir/link.btf ]] && cmp "$dir/ref.btf" "$dir/real/linked.btf" &&
        [[ $(mode "$dir/real/linked.btf") == 644 ]] || return 1
    # Nothing else was left behind (no temporary files), in either directory.
    ls -A "$dir" "$dir/real"
    [[ $(ls -A "$dir" | tr '\n' ' ') == "cli077.btf kept.btf link.btf new022.btf new077.btf real ref.btf " ]] &&
        [[ $(ls -A "$dir/real") == linked.btf ]]
}
case_ file-modes file_modes

foreign() {
    local dir
    dir=$(mktemp -d "$TMP/foreign.XXXXXX")
    ${VALGRIND:-} "$1" "$DATA/targets/btf__fields.btf" "$DATA/progs/fields.bpf.o" "$dir"
}
case_ foreign foreign "$OUT/foreign"

# --- bad input, and libbpf in the same process ----------------------------------------------

badinput() {
    local dir
    dir=$(mktemp -d "$TMP/bad.XXXXXX")
    ${VALGRIND:-} "$1" "$dir" "$DATA"
}

case_ badinput badinput "$OUT/badinput"
# Runtime selection in a libbpf-tools-style program (select_tool.c): the archive linked in,
# the running kernel native; a fake host root without sys/kernel/btf/vmlinux (Debian 12, as
# the archive files the running kernel) selects the archived BTF, libbpf relocates and loads
# the object with it; an unknown release is none.
select_root() {
    local fake=$TMP/fake-host
    mkdir -p "$fake/etc"
    printf 'PRETTY_NAME="Debian GNU/Linux 12 (bookworm)"\nNAME="Debian GNU/Linux"\nVERSION_ID="12"\nVERSION_CODENAME=bookworm\nID=debian\n' \
        >"$fake/etc/os-release"
    echo "$fake"
}
if [[ -r $VMLINUX ]]; then
    case_ select:native "$OUT/select_tool" "$DATA/progs/task.bpf.o" / "native"
    case_ select:archived "$OUT/select_tool" "$DATA/progs/task.bpf.o" "$(select_root)" \
        "exact debian/12/$(uname -m)/$(uname -r) debian/12/$(uname -m)/$(uname -r).btf"
else
    case_ select:native skip "no $VMLINUX"
    case_ select:archived skip "no $VMLINUX"
fi
case_ select:none "$OUT/select_tool" "$DATA/progs/task.bpf.o" "$(select_root)" "none" 0.0.0-unknown
case_ coexist "$OUT/coexist" "$LIB/libbtfgen.so.1" "$VMLINUX" "$DATA/progs/task.bpf.o" "$TMP/coexist.btf"
case_ coexist:load "$OUT/coexist" --load "$LIB/libbtfgen.so.1" "$VMLINUX" "$DATA/progs/task.bpf.o" \
    "$TMP/coexist-load.btf"
# Kernel-side vs user-space CO-RE through bpf_object__prog_load_info, loaded with raw syscalls.
case_ prog_load:task "$OUT/prog_load" "$DATA/progs/task.bpf.o" "$VMLINUX" task_info task_misc
case_ prog_load:calls "$OUT/prog_load" "$DATA/progs/calls.bpf.o" "$VMLINUX" \
    calls_parent calls_both calls_loop

# --- memory: the client's allocator (static link, fixed arena) and budgets ------------------

# -p: the library's peak is at most twice the kernel BTF's size.
arena_target=$VMLINUX arena_opts=(-p)
if [[ ! -e $arena_target ]]; then
    echo "SKIP arena:vmlinux on $VMLINUX (missing): running it on the example kernel BTF instead"
    arena_target=$DATA/targets/btf__example_kernel.btf arena_opts=()
fi
case_ arena:vmlinux same arena "$OUT/arena" "${arena_opts[@]}" -- -- "$arena_target" \
    "$DATA/progs/task.bpf.o"
# -s: runtime selection from select_tool's archive, on the arena as well.
case_ arena:fixture same arena-fixture "$OUT/arena" -s "$OUT/min_btfs.tar.xz" -- -- \
    "$DATA/targets/btf__fields.btf" \
    "$DATA/progs/fields.bpf.o"
# A target converted from DWARF on the arena: the library stays on the calling thread (the
# hooks may serve one thread at a time), with no C allocator call and every block returned.
case_ arena:dwarf same arena-dwarf "$OUT/arena" -- -- "$DATA/dwarf/gcc-dwarf5.so" \
    "$DATA/dwarf/core.bpf.o"
# A regular-file copy of the kernel's BTF is mapped: the library's heap is at most 10% of it;
# writes, truncation and replacement of a mapped target, and the host's own SIGBUS handler.
if [[ -e $VMLINUX ]]; then
    cp "$VMLINUX" "$TMP/vmlinux.btf"
    case_ mapped:vmlinux same mapped "$OUT/mapped" -p 10 -- -- "$TMP/vmlinux.btf" \
        "$DATA/progs/task.bpf.o"
fi
case_ mapped:fixture same mapped-fixture "$OUT/mapped" -- -- "$DATA/targets/btf__fields.btf" \
    "$DATA/progs/fields.bpf.o"
case_ budget:vmlinux same budget-vmlinux "$OUT/budget" -- -- "$VMLINUX" \
    "$DATA/progs/task.bpf.o" "$DATA/progs/multi.bpf.o"
case_ budget:fixture same budget-fixture "$OUT/budget" -- -- "$DATA/targets/btf__fields.btf" \
    "$DATA/progs/fields.bpf.o"
case_ budget:module same budget-module "$OUT/budget" -M "$DATA/targets/module.btf" -- \
    --module-btf "$DATA/targets/module.btf" -- "$DATA/targets/base.btf" "$DATA/progs/module.bpf.o"

# --- load verdicts: bpf_reloc_info__prog_verdict ----------------------------------------------

# The verdicts tests/verdict.rs checks against the running kernel's verifier (guards.bpf.o on
# btf__guards.btf: each guard form loads, the unguarded poisons are rejected).
GUARDS=("$DATA/targets/btf__guards.btf" "$DATA/progs/guards.bpf.o" read_gone
    guard_if=loads guard_ternary=loads guard_and=loads guard_or=loads guard_type=loads
    guard_enum=loads guard_matches=loads guard_spilled=loads guard_subprog=loads
    guard_shared=loads shared_unguarded=rejected loop_poison=rejected unguarded=rejected
    rodata_flag=unknown)

# PROGRAM=VERDICT for every entry program of OBJECT as `btfgen min-core-btf --report` gives it.
cli_verdicts() { # TARGET OBJECT
    "$CLI" -q min-core-btf --report "$TMP/verdicts.json" "$1" "$TMP/verdicts.btf" "$2" || return
    # btfgen-report/3: the kernel names its program set, the set indexes the programs.
    python3 -c 'import json, sys
report = json.load(open(sys.argv[1]))
programs = report["program_sets"][report["kernels"][0]["program_set"]]["programs"]
for p in (report["programs"][i] for i in programs):
    print(p["program"] + "=" + p["verdict"])' "$TMP/verdicts.json"
}

verdicts_as_cli() { # PROGRAM TARGET OBJECT
    local expected
    expected=$(cli_verdicts "$2" "$3") || return
    [[ -n $expected ]] || return 1
    # shellcheck disable=SC2086 # one PROGRAM=VERDICT word per line
    "$1" "$2" "$3" no_such_subprogram $expected
}

case_ verdict:guards "$OUT/verdict" "${GUARDS[@]}"
case_ verdict:guards-as-cli verdicts_as_cli "$OUT/verdict" "${GUARDS[0]}" "${GUARDS[1]}"
for obj in biosnoop runqlat fsslower tcpconnect; do
    if [[ -r $VMLINUX ]]; then
        case_ "verdict:vmlinux-$obj" verdicts_as_cli "$OUT/verdict" "$VMLINUX" \
            "$ROOT/benches/objs/$obj.bpf.o"
    else
        case_ "verdict:vmlinux-$obj" skip "$VMLINUX not readable"
    fi
done

# --- everything again under valgrind ----------------------------------------------------------

if command -v valgrind >/dev/null; then
    # Errors and definite/indirect leaks fail; "still reachable" (Rust's and libc's one-time
    # allocations) does not.
    # valgrind.supp: a false positive of valgrind's bpf() wrapper in libbpf (see there).
    VALGRIND="valgrind -q --error-exitcode=99 --suppressions=$HERE/valgrind.supp"
    VALGRIND+=" --leak-check=full --errors-for-leak-kinds=definite,indirect"
    VALGRIND+=" --show-leak-kinds=definite,indirect"
    export VALGRIND
    vg() { $VALGRIND "$@"; }
    case_ valgrind:flow:vmlinux same vg-flow-vmlinux "$OUT/flow" -- -- "$VMLINUX" \
        "$DATA/progs/task.bpf.o" "$DATA/progs/multi.bpf.o"
    case_ valgrind:flow:open-mem same vg-flow-mem "$OUT/flow" -m -- -- "$VMLINUX" \
        "$DATA/progs/task.bpf.o"
    case_ valgrind:flow:module same vg-flow-module "$OUT/flow" -M "$DATA/targets/module.btf" -- \
        --module-btf "$DATA/targets/module.btf" -- "$DATA/targets/base.btf" "$DATA/progs/module.bpf.o"
    case_ valgrind:flow-static:fixture same vg-flow-static "$OUT/flow-static" -- -- \
        "$DATA/targets/btf__fields.btf" "$DATA/progs/fields.bpf.o"
    case_ valgrind:flow-static:vmlinux same vg-flow-static-vmlinux "$OUT/flow-static" -- -- \
        "$VMLINUX" "$DATA/progs/task.bpf.o"
    legacy_cases valgrind:
    case_ valgrind:badinput badinput "$OUT/badinput"
    case_ valgrind:client client_checks "$OUT/btfgen_client" vg
    case_ valgrind:client:linked-after-libbpf client_bpf_first
    case_ valgrind:foreign foreign "$OUT/foreign"
    case_ valgrind:verdict:guards $VALGRIND "$OUT/verdict" "${GUARDS[@]}"
    case_ valgrind:header-cxx vg "$OUT/header-cxx"
    case_ valgrind:coexist:load vg "$OUT/coexist" --load "$LIB/libbtfgen.so.1" "$VMLINUX" \
        "$DATA/progs/task.bpf.o" "$TMP/vg-coexist.btf"
    case_ valgrind:budget:fixture same vg-budget "$OUT/budget" -n 10 -- -- \
        "$DATA/targets/btf__fields.btf" "$DATA/progs/fields.bpf.o"
    case_ valgrind:budget:module same vg-budget-module "$OUT/budget" -n 10 \
        -M "$DATA/targets/module.btf" -- --module-btf "$DATA/targets/module.btf" -- \
        "$DATA/targets/base.btf" "$DATA/progs/module.bpf.o"
    unset VALGRIND
else
    case_ valgrind skip "valgrind not installed"
fi

# --- and built with AddressSanitizer + UBSan --------------------------------------------------

export ASAN_OPTIONS=detect_leaks=1:abort_on_error=0:exitcode=98
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1:exitcode=98
case_ asan:flow:vmlinux same asan-flow "$OUT/flow-asan" -- -- "$VMLINUX" \
    "$DATA/progs/task.bpf.o" "$DATA/progs/multi.bpf.o"
case_ asan:flow:module same asan-flow-module "$OUT/flow-asan" -M "$DATA/targets/module.btf" -- \
    --module-btf "$DATA/targets/module.btf" -- "$DATA/targets/base.btf" "$DATA/progs/module.bpf.o"
case_ asan:legacy:vmlinux same asan-legacy "$OUT/legacy-asan" -- -- "$VMLINUX" \
    "$DATA/progs/task.bpf.o" "$DATA/progs/multi.bpf.o"
case_ asan:badinput badinput "$OUT/badinput-asan"
case_ asan:foreign foreign "$OUT/foreign-asan"
case_ asan:verdict:guards "$OUT/verdict-asan" "${GUARDS[@]}"
case_ asan:coexist:load "$OUT/coexist-asan" --load "$LIB/libbtfgen.so.1" "$VMLINUX" \
    "$DATA/progs/task.bpf.o" "$TMP/asan-coexist.btf"
case_ asan:budget:vmlinux same asan-budget "$OUT/budget-asan" -n 20 -- -- "$VMLINUX" \
    "$DATA/progs/task.bpf.o"
case_ asan:budget:fixture same asan-budget-fixture "$OUT/budget-asan" -- -- \
    "$DATA/targets/btf__fields.btf" "$DATA/progs/fields.bpf.o"
case_ asan:budget:module same asan-budget-module "$OUT/budget-asan" -M "$DATA/targets/module.btf" \
    -- --module-btf "$DATA/targets/module.btf" -- "$DATA/targets/base.btf" "$DATA/progs/module.bpf.o"

echo
if ((failed)); then
    echo "failed: ${failures[*]}"
fi
echo "abi: $passed passed, $failed failed, $skipped skipped"
((failed == 0))
