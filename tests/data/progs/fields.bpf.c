// SPDX-License-Identifier: MIT OR Apache-2.0
/*
 * Field relocations (byte_off, byte_sz, field_exists) through every kind of
 * nesting libbpf handles: anonymous structs/unions, arrays of structs,
 * multi-dimensional arrays, a flexible array, a typedef/const/volatile chain,
 * a pointer to pointer, and a field missing from some targets (guarded by
 * bpf_core_field_exists, and read unguarded so libbpf poisons the read).
 */
#include "fixture.h"

struct fld_inner {
	int x;
	int y;
} __core;

struct fld_node {
	long val;
	struct fld_node *next;
} __core;

/* typedef -> const -> volatile -> typedef -> struct */
typedef struct fld_node fld_node_t;
typedef const volatile fld_node_t fld_cv_node_t;
typedef fld_cv_node_t fld_node_alias_t;

struct fld_sample {
	int a;
	struct {
		int b;
		union {
			int c;
			long d;
		};
	};
	struct fld_inner arr[3];
	int grid[2][3];
	fld_node_alias_t *node;
	struct fld_node **pp;
	const volatile int cv;
	unsigned int usz;
	int maybe;
	int tail_len;
	int tail[];
} __core;

SEC("raw_tp/sys_enter")
int fields_read(void *ctx)
{
	struct fld_sample *s = fixture_ptr(struct fld_sample);
	struct fld_node **pp, *n = 0;
	long sum = 0;

	sum += BPF_CORE_READ(s, a);
	sum += BPF_CORE_READ(s, c);		/* anon struct -> anon union */
	sum += BPF_CORE_READ(s, d);
	sum += BPF_CORE_READ(s, arr[2].y);	/* array of structs */
	sum += BPF_CORE_READ(s, grid[1][2]);	/* 2-D array */
	sum += BPF_CORE_READ(s, tail[5]);	/* flexible array */
	sum += BPF_CORE_READ(s, node, val);	/* through the typedef chain */
	pp = BPF_CORE_READ(s, pp);		/* struct fld_node ** */
	bpf_probe_read_kernel(&n, sizeof(n), pp);
	sum += BPF_CORE_READ(n, next, val);
	sum += BPF_CORE_READ(s, cv);
	return sum;
}

SEC("raw_tp/sys_enter")
int fields_info(void *ctx)
{
	struct fld_sample *s = fixture_ptr(struct fld_sample);
	long sum = 0;

	sum += bpf_core_field_size(s->arr);
	sum += bpf_core_field_size(s->arr[1]);
	sum += bpf_core_field_size(s->grid[1]);
	sum += bpf_core_field_size(s->d);
	sum += bpf_core_field_size(s->node);
	sum += bpf_core_field_offset(s->b);
	sum += bpf_core_field_offset(s->grid[1][1]);
	sum += bpf_core_field_exists(s->tail);
	sum += bpf_core_field_exists(struct fld_sample, maybe);
	if (bpf_core_field_exists(s->maybe))
		sum += BPF_CORE_READ(s, maybe);
	return sum;
}

SEC("raw_tp/sys_exit")
int fields_poison(void *ctx)
{
	struct fld_sample *s = fixture_ptr(struct fld_sample);

	/* unguarded: poisoned on targets without 'maybe' */
	return BPF_CORE_READ(s, maybe) + bpf_core_field_size(s->maybe);
}

SEC("raw_tp/sys_exit")
int fields_direct(void *ctx)
{
	struct fld_sample *s = fixture_ptr(struct fld_sample);

	/* direct loads: the relocated insn is the LDX itself, whose memory
	 * size libbpf adjusts (unsigned) or refuses to adjust (signed) when
	 * the target field's size differs */
	return s->usz + s->cv + s->arr[1].x;
}

char LICENSE[] SEC("license") = "GPL";
