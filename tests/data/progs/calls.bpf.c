// SPDX-License-Identifier: MIT OR Apache-2.0
/*
 * Program assembly: BPF-to-BPF calls nested two deep, a global function in
 * .text, and a callback passed to bpf_loop() (an ld_imm64 of a function
 * address). Each subprogram has its own CO-RE relocations, so the records
 * must follow their code when it is appended to a program.
 *
 *   calls_parent: via_parent -> leaf_tgid
 *   calls_both:   via_leader -> leaf_tgid, then via_parent, then add_ints
 *   calls_loop:   bpf_loop(loop_cb)
 *
 * calls_both reaches leaf_tgid first through via_leader, so libbpf appends
 * leaf_tgid before via_parent (depth first), and both of calls_both's
 * callees of leaf_tgid share the one copy. Loads against the real vmlinux.
 */
#include "fixture.h"

struct task_struct {
	int pid;
	int tgid;
	struct task_struct *real_parent;
	struct task_struct *group_leader;
} __core;

static __noinline int leaf_tgid(struct task_struct *t)
{
	return BPF_CORE_READ(t, tgid);
}

static __noinline int via_parent(struct task_struct *t)
{
	return leaf_tgid(BPF_CORE_READ(t, real_parent)) + 1;
}

static __noinline int via_leader(struct task_struct *t)
{
	return leaf_tgid(BPF_CORE_READ(t, group_leader)) + bpf_core_field_size(t->pid);
}

/* Global: the verifier checks it on its own, with scalar arguments. */
__noinline int add_ints(int a, int b)
{
	return a + b;
}

static int loop_cb(__u32 index, void *ctx)
{
	*(long *)ctx += index + bpf_core_field_size(struct task_struct, tgid);
	return 0;
}

SEC("raw_tp/sys_enter")
int calls_parent(void *ctx)
{
	struct task_struct *t = (struct task_struct *)bpf_get_current_task();

	return via_parent(t);
}

SEC("raw_tp/sys_enter")
int calls_both(void *ctx)
{
	struct task_struct *t = (struct task_struct *)bpf_get_current_task();
	int leader = via_leader(t);
	int parent = via_parent(t);

	return add_ints(leader, parent) + BPF_CORE_READ(t, pid);
}

SEC("raw_tp/sys_exit")
int calls_loop(void *ctx)
{
	long sum = 0;

	bpf_loop(4, loop_cb, &sum, 0);
	return sum;
}

char LICENSE[] SEC("license") = "GPL";
