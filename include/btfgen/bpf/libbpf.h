/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/*
 * btfgen's <bpf/libbpf.h>: libbpf's include path for btfgen's C API, so that a client written
 * for libbpf + the BTFGen patch builds unchanged. Installed as INCLUDEDIR/btfgen/bpf/libbpf.h;
 * `pkg-config --cflags btfgen` adds -I INCLUDEDIR/btfgen, which puts it before the system's
 * <bpf/libbpf.h> (libbpf-dev's /usr/include/bpf is left alone). Every declaration is in
 * <btfgen.h>; this header adds the standard headers libbpf's pulls in, so it is
 * self-contained, and <bpf/libbpf.h> and <bpf/btf.h> can be included together.
 */
#ifndef BTFGEN_BPF_LIBBPF_H
#define BTFGEN_BPF_LIBBPF_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/types.h>

#include <btfgen.h>

#endif /* BTFGEN_BPF_LIBBPF_H */
