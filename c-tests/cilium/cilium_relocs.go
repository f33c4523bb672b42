// SPDX-License-Identifier: MIT OR Apache-2.0

// cilium_relocs: a loader that is not libbpf, for btfgen's differential tests.
//
// Usage: cilium_relocs OBJECT TARGET_BTF
//
// Loads OBJECT with cilium/ebpf (Debian's golang-github-cilium-ebpf-dev, 0.9.1) and TARGET_BTF
// with its BTF reader, relocates every program's CO-RE relocations against TARGET_BTF in user
// space (btf.CORERelocate, no kernel needed) and prints, per program, one JSON line with the
// relocated instructions (hex) or cilium/ebpf's error. check_relocs.py compares the lines for
// the full and the minimized BTF. Reading TARGET_BTF fails where a name offset is not the start
// of a string ("offset X isn't start of a string"). Exit status: 0, or 1 on usage errors and
// when the object itself cannot be read.
package main

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"sort"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/btf"
)

type result struct {
	Program string `json:"program"`
	Insns   string `json:"insns,omitempty"`
	Error   string `json:"error,omitempty"`
}

func relocate(prog *ebpf.ProgramSpec, target *btf.Spec) (string, error) {
	// A fresh spec per program run: Apply changes the instructions in place.
	insns := prog.Instructions
	var relos []*btf.CORERelocation
	var at []int
	for i := range insns {
		if relo := btf.CORERelocationMetadata(&insns[i]); relo != nil {
			relos = append(relos, relo)
			at = append(at, i)
		}
	}
	if len(relos) > 0 {
		if prog.BTF == nil {
			return "", fmt.Errorf("CO-RE relocations without BTF")
		}
		fixups, err := btf.CORERelocate(prog.BTF, target, relos)
		if err != nil {
			return "", err
		}
		for i, fixup := range fixups {
			if err := fixup.Apply(&insns[at[i]]); err != nil {
				return "", fmt.Errorf("apply %s: %w", fixup.String(), err)
			}
		}
	}
	var buf bytes.Buffer
	if err := insns.Marshal(&buf, prog.ByteOrder); err != nil {
		return "", err
	}
	return hex.EncodeToString(buf.Bytes()), nil
}

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintf(os.Stderr, "usage: %s OBJECT TARGET_BTF\n", os.Args[0])
		os.Exit(1)
	}
	spec, err := ebpf.LoadCollectionSpec(os.Args[1])
	if err != nil {
		fmt.Fprintf(os.Stderr, "cilium_relocs: %s: %v\n", os.Args[1], err)
		os.Exit(1)
	}
	names := make([]string, 0, len(spec.Programs))
	for name := range spec.Programs {
		names = append(names, name)
	}
	sort.Strings(names)
	target, targetErr := btf.LoadSpec(os.Args[2])
	out := json.NewEncoder(os.Stdout)
	for _, name := range names {
		r := result{Program: name}
		if targetErr != nil {
			r.Error = "target BTF: " + targetErr.Error()
		} else if insns, err := relocate(spec.Programs[name], target); err != nil {
			r.Error = err.Error()
		} else {
			r.Insns = insns
		}
		if err := out.Encode(r); err != nil {
			os.Exit(1)
		}
	}
}
