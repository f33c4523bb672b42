// SPDX-License-Identifier: MIT OR Apache-2.0
/*
 * Flavors: two local flavors of one struct of which a target matches only
 * one; two target types of one essential name that both match and agree;
 * and candidate pruning: once a relocation rules a candidate out, later
 * relocations of the same local type no longer consider it (without pruning
 * fl_pr.y would be ambiguous on btf__flavors*.btf).
 */
#include "fixture.h"

struct fl_task___v1 {
	int pid;
	int old_state;
} __core;

struct fl_task___v2 {
	int pid;
	int new_state;
} __core;

struct fl_dup {
	int a;
	int b;
} __core;

struct fl_pr {
	int x;
	int y;
} __core;

SEC("raw_tp/sys_enter")
int fl_state(void *ctx)
{
	void *t = fixture_ptr(void);

	if (bpf_core_field_exists(struct fl_task___v2, new_state))
		return BPF_CORE_READ((struct fl_task___v2 *)t, new_state);
	if (bpf_core_field_exists(struct fl_task___v1, old_state))
		return BPF_CORE_READ((struct fl_task___v1 *)t, old_state);
	return BPF_CORE_READ((struct fl_task___v1 *)t, pid);
}

SEC("raw_tp/sys_enter")
int fl_agree(void *ctx)
{
	struct fl_dup *d = fixture_ptr(struct fl_dup);

	return BPF_CORE_READ(d, b) + bpf_core_type_exists(struct fl_dup) +
	       bpf_core_type_size(struct fl_dup);
}

SEC("raw_tp/sys_exit")
int fl_prune(void *ctx)
{
	struct fl_pr *p = fixture_ptr(struct fl_pr);
	int x = BPF_CORE_READ(p, x);

	/* must stay after the read of x: relocations run in order */
	return x + BPF_CORE_READ(p, y);
}

char LICENSE[] SEC("license") = "GPL";
