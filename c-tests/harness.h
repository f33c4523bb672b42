/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/*
 * What the libbpf-linked harnesses of the differential tests (libbpf_relocs.c,
 * verifier_load.c) share: whether BPF syscalls work here, whether an object is
 * of host byte order, flattening a split BTF for btf_custom_path, and JSON
 * string output. Messages are prefixed with the running program's name.
 */
#ifndef BTFGEN_C_TESTS_HARNESS_H
#define BTFGEN_C_TESTS_HARNESS_H

#include <stdbool.h>

/* Exit status of a harness that cannot run here (BPF refused, foreign byte order). */
#define EXIT_SKIP 77

/* Can this process load BPF programs at all? Prints a SKIP line if not. */
bool bpf_usable(void);

/* 1 = host byte order, 0 = foreign, -1 = unreadable/not ELF */
int elf_native(const char *path);

/*
 * libbpf 1.1 only takes a plain (non-split) BTF as btf_custom_path: writes
 * base + split as one BTF (type ids unchanged) to a temporary file and returns
 * its path (static storage; the caller unlinks it), or NULL.
 */
char *flatten_split(const char *split_path, const char *base_path);

/* Print s as a JSON string to stdout. */
void json_str(const char *s);

#endif
