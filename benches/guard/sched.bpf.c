// SPDX-License-Identifier: MIT OR Apache-2.0
/* The scheduler, as runqlat/runqslower/offcputime/cpudist read it: prev and
 * next tasks of a switch, state by kernel version, run-time histograms
 * unrolled, and cgroup filters. */
#include "guard.h"

char LICENSE[] SEC("license") = "GPL";

static __always_inline u64 state_of(struct task_struct *t)
{
	struct task_struct___old *old = (void *)t;

	return bpf_core_field_exists(t->__state) ? (u64)BPF_CORE_READ(t, __state)
						 : (u64)BPF_CORE_READ(old, state);
}

static __noinline u64 se_stats(struct task_struct *t, struct event *e)
{
	u64 h = 3;
	u64 runtime = GET_OR(t, se.sum_exec_runtime, 0);

	FOLD(h, runtime > GET_OR(t, se.exec_start, 0), 1, 2);
	FOLD(h, GET_OR(t, se.vruntime, 0) > runtime, 3, 4);
	FOLD(h, GET_OR(t, se.depth, 0) > 1, 5, 6);
	FOLD(h, GET_OR(t, se.on_rq, 0) != 0, 7, 8);
	FOLD(h, GET_OR(t, se.nr_migrations, 0) > 16, 9, 10);
	e->a[0] = runtime;
	return h;
}

static __noinline u64 cgroup_of(struct task_struct *t)
{
	struct kernfs_node *kn = BPF_CORE_READ(t, cgroups, dfl_cgrp, kn);
	struct kernfs_node___old *old = (void *)kn;
	u64 h = 5;

	FOLD(h, GET_OR(kn, id, 0) == 1, 1, 2);
	FOLD(h, (bpf_core_field_exists(kn->__parent) ? (u64)BPF_CORE_READ(kn, __parent)
						      : (u64)BPF_CORE_READ(old, parent)) != 0,
	     3, 4);
	FOLD(h, BPF_CORE_READ(t, cgroups, nr_tasks) > 1, 5, 6);
	FOLD(h, BPF_CORE_READ(t, cgroups, dfl_cgrp, max_depth) > 0, 7, 8);
	return h;
}

static __always_inline u64 log2_hist(u64 v)
{
	u64 h = 1;

#pragma unroll
	for (int i = 0; i < 20; i++)
		FOLD(h, v > (1ULL << i), i + 1, i + 2);
	return h;
}

static __always_inline u64 prio_class(struct task_struct *t)
{
	u64 h = 7, prio = GET_OR(t, prio, 120), policy = GET_OR(t, policy, 0);

	FOLD(h, prio < 100, 1, 2);
	FOLD(h, prio > 120, 3, 4);
	FOLD(h, policy == 1 || policy == 2, 5, 6);
	FOLD(h, policy == 3, 7, 8);
	FOLD(h, policy == 5, 9, 10);
	FOLD(h, policy == 6, 11, 12);
	FOLD(h, GET_OR(t, wake_cpu, 0) != bpf_get_smp_processor_id(), 13, 14);
	return h;
}

static __always_inline int on_switch(void *ctx, struct task_struct *prev, struct task_struct *next)
{
	struct event *e = scratch_event();

	if (!e)
		return 0;
	e->a[1] = state_of(prev) == 0 ? 11 : state_of(prev) == 1 ? 12 : 13;
	e->a[2] = se_stats(prev, e);
	e->a[3] = se_stats(next, e);
	e->a[4] = cgroup_of(prev);
	e->a[5] = cgroup_of(next);
	e->a[6] = log2_hist(bpf_ktime_get_ns() - GET_OR(next, se.exec_start, 0));
	e->a[7] = prio_class(prev);
	e->a[8] = prio_class(next);
	emit(ctx, e);
	return 0;
}

SEC("tp_btf/sched_switch")
int BPF_PROG(sched_switch, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	return on_switch(ctx, prev, next);
}

SEC("raw_tp/sched_switch")
int BPF_PROG(sched_switch_raw, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	return on_switch(ctx, prev, next);
}

SEC("tp_btf/sched_wakeup")
int BPF_PROG(sched_wakeup, struct task_struct *p)
{
	struct event *e = scratch_event();

	if (!e)
		return 0;
	e->a[0] = se_stats(p, e);
	e->a[1] = cgroup_of(p);
	e->a[2] = prio_class(p);
	emit(ctx, e);
	return 0;
}
