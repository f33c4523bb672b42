// SPDX-License-Identifier: MIT OR Apache-2.0
/* The task tree, as execsnoop/exitsnoop/offcputime walk it: an unrolled
 * walk up real_parent, a state read that depends on the kernel version, and
 * per-task classification forks. */
#include "guard.h"

char LICENSE[] SEC("license") = "GPL";

#define WALK_DEPTH 8

static __always_inline u64 task_state(struct task_struct *t)
{
	struct task_struct___old *old = (void *)t;

	return bpf_core_field_exists(t->__state) ? (u64)BPF_CORE_READ(t, __state)
						 : (u64)BPF_CORE_READ(old, state);
}

static __noinline u64 task_times(struct task_struct *t)
{
	u64 h = 5381;
	u64 ut = GET_OR(t, utime, 0), st = GET_OR(t, stime, 0);

	FOLD(h, ut > st, 3, 7);
	FOLD(h, GET_OR(t, nvcsw, 0) > GET_OR(t, nivcsw, 0), 11, 13);
	FOLD(h, GET_OR(t, min_flt, 0) > 1000, 17, 19);
	FOLD(h, GET_OR(t, maj_flt, 0) > 10, 23, 29);
	FOLD(h, GET_OR(t, se.sum_exec_runtime, 0) > 1000000, 31, 37);
	FOLD(h, GET_OR(t, se.nr_migrations, 0) > 4, 41, 43);
	return h;
}

static __noinline u64 task_sched(struct task_struct *t)
{
	u64 h = 7;
	u64 prio = GET_OR(t, prio, 120);

	FOLD(h, prio < 100, 1, 2);
	FOLD(h, GET_OR(t, static_prio, 120) != prio, 3, 4);
	FOLD(h, GET_OR(t, normal_prio, 120) != prio, 5, 6);
	FOLD(h, GET_OR(t, rt_priority, 0) > 0, 7, 8);
	FOLD(h, GET_OR(t, policy, 0) == 1, 9, 10);
	FOLD(h, GET_OR(t, nr_cpus_allowed, 1) > 1, 11, 12);
	FOLD(h, GET_OR(t, on_cpu, 0) != 0, 13, 14);
	FOLD(h, GET_OR(t, se.on_rq, 0) != 0, 15, 16);
	return h;
}

static __noinline u64 task_ids(struct task_struct *t)
{
	u64 h = 11;
	u64 pid = GET_OR(t, pid, 0), tgid = GET_OR(t, tgid, 0);

	FOLD(h, pid == tgid, 1, 2);
	FOLD(h, GET_OR(t, real_cred, 0) != GET_OR(t, cred, 0), 3, 4);
	FOLD(h, BPF_CORE_READ(t, real_cred, uid.val) == 0, 5, 6);
	FOLD(h, BPF_CORE_READ(t, cred, euid.val) == 0, 7, 8);
	FOLD(h, GET_OR(t, exit_signal, 17) == 17, 9, 10);
	FOLD(h, GET_OR(t, personality, 0) != 0, 11, 12);
	return h;
}

static __noinline u64 task_mm(struct task_struct *t)
{
	struct mm_struct *mm = (void *)GET_OR(t, mm, 0);
	struct mm_struct___old *old = (void *)mm;
	u64 h = 13, rss;

	if (!mm)
		return 0;
	rss = bpf_core_field_exists(old->rss_stat) ?
		      (u64)BPF_CORE_READ(old, rss_stat.count[0].counter) :
		      GET_OR(mm, hiwater_rss, 0);
	FOLD(h, rss > 256, 1, 2);
	FOLD(h, GET_OR(mm, total_vm, 0) > 65536, 3, 4);
	FOLD(h, GET_OR(mm, map_count, 0) > 64, 5, 6);
	FOLD(h, GET_OR(mm, arg_end, 0) - GET_OR(mm, arg_start, 0) > 128, 7, 8);
	return h;
}

static __noinline u64 task_cgroup(struct task_struct *t)
{
	struct kernfs_node *kn = BPF_CORE_READ(t, cgroups, dfl_cgrp, kn);
	struct kernfs_node___old *old = (void *)kn;
	struct kernfs_node *parent;
	u64 h = 17;

	parent = bpf_core_field_exists(kn->__parent) ? BPF_CORE_READ(kn, __parent)
						     : BPF_CORE_READ(old, parent);
	FOLD(h, parent != 0, 1, 2);
	FOLD(h, BPF_CORE_READ(t, cgroups, dfl_cgrp, level) > 2, 3, 4);
	FOLD(h, GET_OR(kn, id, 0) > 1, 5, 6);
	return h;
}

static __always_inline u64 walk(struct task_struct *t, struct event *e)
{
	u64 h = 1;

#pragma unroll
	for (int i = 0; i < WALK_DEPTH; i++) {
		u64 state = task_state(t);

		FOLD(h, state == 0, i + 1, i + 2);
		FOLD(h, GET_OR(t, exit_code, 0) != 0, i + 3, i + 4);
		FOLD(h, GET_OR(t, flags, 0) > 0x200000, i + 5, i + 6);
		e->a[i] = GET_OR(t, start_time, 0);
		t = (void *)GET_OR(t, real_parent, 0);
		if (!t)
			break;
	}
	return h;
}

static __always_inline int report(void *ctx, struct task_struct *t)
{
	struct event *e = scratch_event();

	if (!e)
		return 0;
	e->a[8] = walk(t, e);
	e->a[9] = task_times(t);
	e->a[10] = task_sched(t);
	e->a[11] = task_ids(t);
	e->a[12] = task_mm(t);
	e->a[13] = task_cgroup(t);
	emit(ctx, e);
	return 0;
}

SEC("tp/sched/sched_process_exec")
int handle_exec(void *ctx)
{
	return report(ctx, current_task());
}

SEC("tp/sched/sched_process_exit")
int handle_exit(void *ctx)
{
	return report(ctx, current_task());
}

SEC("kprobe/wake_up_new_task")
int BPF_KPROBE(wake_up_new_task, struct task_struct *p)
{
	return report(ctx, p);
}
