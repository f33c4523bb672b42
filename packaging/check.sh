#!/usr/bin/env bash
# SPDX-License-Identifier: MIT OR Apache-2.0
#
# btfgen installed as a system tool (`.ci/test`'s "installed like a system tool" step; as root):
#   1. `make install DESTDIR=X` then `make uninstall DESTDIR=X` leaves X empty;
#   2. `make deb`, `apt-get install ./btfgen_*.deb`, then as a user would: `btfgen min-core-btf`
#      with no arguments, `man -w btfgen-batch`, `man btfgen-select`, bash completion of
#      `btfgen ba<TAB>`, a C client built with `pkg-config --cflags --libs btfgen` whose output
#      equals the command's;
#   3. `apt-get remove --purge btfgen` leaves none of the package's files behind.
set -euo pipefail
cd "$(dirname "$0")/.."

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() {
    echo "packaging/check.sh: $*" >&2
    exit 1
}

echo "--- make install / uninstall DESTDIR"
stage=$work/stage
mkdir "$stage"
make --no-print-directory install DESTDIR="$stage" >"$work/install.log" 2>&1 ||
    { cat "$work/install.log"; fail "make install failed"; }
for f in bin/btfgen lib/libbtfgen.so.1 include/btfgen.h share/man/man1/btfgen-batch.1 \
    share/man/man3/libbtfgen.3 share/bash-completion/completions/btfgen \
    share/zsh/site-functions/_btfgen share/fish/vendor_completions.d/btfgen.fish; do
    [[ -e $stage/usr/local/$f ]] || fail "make install did not install usr/local/$f"
done
make --no-print-directory uninstall DESTDIR="$stage" >/dev/null
if [[ -n $(ls -A "$stage") ]]; then
    find "$stage" >&2
    fail "make uninstall DESTDIR=$stage left the above behind"
fi
echo "ok: install then uninstall leaves DESTDIR empty"

echo "--- make deb"
make --no-print-directory deb >"$work/deb.log" 2>&1 || { cat "$work/deb.log"; fail "make deb failed"; }
deb=$(ls target/release/btfgen_*_"$(dpkg --print-architecture)".deb)
dpkg-deb -c "$deb" | awk '{print $6}' | sed 's|^\./|/|' | grep -v '/$' >"$work/files"
echo "$deb: $(wc -l <"$work/files") files"

if dpkg-query -W -f='${Status}' btfgen 2>/dev/null | grep -q 'install ok installed'; then
    apt-get remove --purge -y btfgen </dev/null >/dev/null
fi
apt-get install -y "./$deb" </dev/null >"$work/apt.log" 2>&1 || { cat "$work/apt.log"; fail "apt-get install failed"; }
trap 'apt-get remove --purge -y btfgen </dev/null >/dev/null 2>&1 || true; rm -rf "$work"' EXIT

cd "$work"
echo "--- btfgen min-core-btf (no arguments)"
/usr/bin/btfgen min-core-btf
[[ -s min.btf ]] || fail "btfgen min-core-btf wrote no min.btf"
echo "--- man"
page=$(man -w btfgen-batch) || fail "man -w btfgen-batch found no page"
echo "man -w btfgen-batch: $page"
man -P cat btfgen-select 2>/dev/null | grep -q -- '--os-release' ||
    fail "man btfgen-select does not show --os-release"
man -w libbtfgen >/dev/null || fail "no libbtfgen(3)"
echo "--- bash completion of 'btfgen ba<TAB>'"
# shellcheck disable=SC2016
words=$(bash -c 'source /usr/share/bash-completion/completions/btfgen
    COMP_WORDS=(btfgen ba); COMP_CWORD=1; COMP_LINE="btfgen ba"; COMP_POINT=${#COMP_LINE}
    _btfgen btfgen ba btfgen; echo "${COMPREPLY[*]}"')
[[ $words == batch ]] || fail "btfgen ba<TAB> completes to '$words', not 'batch'"
echo "btfgen ba<TAB> -> $words"
echo "--- a C client with pkg-config"
repo=$OLDPWD
# shellcheck disable=SC2046
gcc -Wall -Wextra -Werror -o client "$repo/packaging/client.c" $(pkg-config --cflags --libs btfgen)
target=$repo/tests/data/targets/btf__example_kernel.btf obj=$repo/tests/data/progs/task.bpf.o
./client "$target" "$obj" client.btf
/usr/bin/btfgen -q min-core-btf "$target" cli.btf "$obj"
cmp client.btf cli.btf || fail "the C client's output differs from the command's"
echo "ok: client built with pkg-config, output equals btfgen min-core-btf's"
cd "$repo"

echo "--- apt-get remove --purge"
apt-get remove --purge -y btfgen </dev/null >/dev/null
left=()
while read -r f; do
    [[ -e $f || -L $f ]] && left+=("$f")
done <"$work/files"
((${#left[@]} == 0)) || fail "left behind after removal: ${left[*]}"
status=$(dpkg-query -W -f='${db:Status-Status}' btfgen 2>/dev/null || echo not-installed)
[[ $status == not-installed ]] || fail "after removal dpkg says btfgen is '$status'"
echo "ok: the package installs, works and removes cleanly"
