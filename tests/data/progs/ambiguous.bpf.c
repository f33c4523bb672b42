// SPDX-License-Identifier: MIT OR Apache-2.0
/*
 * Ambiguity: the btf__ambiguous_*.btf targets hold two flavors of struct amb
 * that both match but disagree, so libbpf fails the relocation (and with it
 * the whole load; relocations after it are never processed):
 *   _off: the flavors put 'b' at different offsets (relo 1, offset ambiguity)
 *   _val: same offset, different size (relo 2, decision ambiguity on byte_sz)
 *   _id:  identical flavors, so only target_type_id disagrees (relo 3)
 * Relo 0 (struct amb_ok) always succeeds.
 */
#include "fixture.h"

struct amb_ok {
	int z;
} __core;

struct amb {
	long a;
	int b;
} __core;

SEC("raw_tp/sys_enter")
int amb_read(void *ctx)
{
	struct amb_ok *ok = fixture_ptr(struct amb_ok);
	struct amb *s = fixture_ptr(struct amb);
	long sum;

	sum = BPF_CORE_READ(ok, z);
	sum += BPF_CORE_READ(s, b);
	sum += bpf_core_field_size(s->b);
	sum += bpf_core_type_id_kernel(struct amb);
	return sum;
}

char LICENSE[] SEC("license") = "GPL";
