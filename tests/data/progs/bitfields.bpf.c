// SPDX-License-Identifier: MIT OR Apache-2.0
/*
 * Bitfield relocations: byte_off, byte_sz, lshift_u64, rshift_u64 and
 * signed, through BPF_CORE_READ_BITFIELD_PROBED (probe-read) and
 * BPF_CORE_READ_BITFIELD (direct loads), for signed and unsigned bitfields of
 * 32- and 64-bit storage units, plus ordinary (non-bitfield) members read the
 * same way. Also built for big-endian (bitfields.bpfeb.o).
 */
#include "fixture.h"

struct bf_sample {
	unsigned int ub1 : 1;
	unsigned int ub2 : 2;
	int sb7 : 7;
	unsigned int ub10 : 10;
	int sb20 : 20;
	unsigned long long u40 : 40;
	long long s33 : 33;
	signed char sc;
	unsigned short us;
} __core;

SEC("raw_tp/sys_enter")
int bf_probed(void *ctx)
{
	struct bf_sample *s = fixture_ptr(struct bf_sample);
	long sum = 0;

	sum += BPF_CORE_READ_BITFIELD_PROBED(s, ub1);
	sum += BPF_CORE_READ_BITFIELD_PROBED(s, ub2);
	sum += BPF_CORE_READ_BITFIELD_PROBED(s, sb7);
	sum += BPF_CORE_READ_BITFIELD_PROBED(s, sb20);
	sum += BPF_CORE_READ_BITFIELD_PROBED(s, u40);
	sum += BPF_CORE_READ_BITFIELD_PROBED(s, sc);
	return sum;
}

SEC("raw_tp/sys_enter")
int bf_direct(void *ctx)
{
	struct bf_sample *s = fixture_ptr(struct bf_sample);
	long sum = 0;

	sum += BPF_CORE_READ_BITFIELD(s, ub10);
	sum += BPF_CORE_READ_BITFIELD(s, s33);
	sum += core_field_signed(s, sc);
	sum += core_field_signed(s, us);
	sum += bpf_core_field_size(s->us);
	sum += bpf_core_field_exists(s->ub2);
	return sum;
}

char LICENSE[] SEC("license") = "GPL";
