/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/*
 * Shared prelude of the btfgen test fixtures: the integer typedefs that
 * libbpf's <bpf/bpf_helpers.h> expects (no <linux/types.h>, so the objects do
 * not depend on the host's kernel headers), libbpf's helper/CO-RE headers and
 * a few macros.
 */
#ifndef BTFGEN_FIXTURE_H
#define BTFGEN_FIXTURE_H

typedef signed char __s8;
typedef unsigned char __u8;
typedef short __s16;
typedef unsigned short __u16;
typedef int __s32;
typedef unsigned int __u32;
typedef long long __s64;
typedef unsigned long long __u64;
typedef __u16 __be16;
typedef __u32 __be32;
typedef __u32 __wsum;

#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>

/* Every type whose accesses must be relocated. */
#define __core __attribute__((preserve_access_index))

/* Field-info relocation that libbpf 1.1's headers have no macro for. */
#define core_field_signed(s, field) \
	__builtin_preserve_field_info((s)->field, BPF_FIELD_SIGNED)

/* Some pointer the programs can "read" through; BPF_CORE_READ goes through
 * bpf_probe_read_kernel(), so any address is safe for the verifier. */
#define fixture_ptr(type) ((type *)bpf_get_current_task())

#endif
