// SPDX-License-Identifier: MIT OR Apache-2.0
/*
 * Several programs in one section plus a BPF-to-BPF subprogram in .text
 * (static __noinline, called from two programs) with its own CO-RE
 * relocations: libbpf relocates the subprogram once, under its own name.
 * Uses the running kernel's task_struct; loads against the real vmlinux.
 */
#include "fixture.h"

struct task_struct {
	int pid;
	int tgid;
	struct task_struct *real_parent;
	struct task_struct *group_leader;
} __core;

static __noinline int parent_tgid(struct task_struct *t)
{
	return BPF_CORE_READ(t, real_parent, tgid) + bpf_core_field_size(t->pid);
}

SEC("raw_tp/sys_enter")
int multi_a(void *ctx)
{
	struct task_struct *t = (struct task_struct *)bpf_get_current_task();

	return parent_tgid(t) + BPF_CORE_READ(t, pid);
}

SEC("raw_tp/sys_enter")
int multi_b(void *ctx)
{
	struct task_struct *t = (struct task_struct *)bpf_get_current_task();

	return parent_tgid(t) + BPF_CORE_READ(t, group_leader, tgid);
}

SEC("raw_tp/sys_exit")
int multi_c(void *ctx)
{
	struct task_struct *t = (struct task_struct *)bpf_get_current_task();

	return BPF_CORE_READ(t, tgid);
}

char LICENSE[] SEC("license") = "GPL";
