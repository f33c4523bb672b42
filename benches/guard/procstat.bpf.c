// SPDX-License-Identifier: MIT OR Apache-2.0
/* Process accounting, as capable/exitsnoop/oomkill-style tools read it:
 * signal_struct and cred fields, an mm whose rss_stat changed type in 6.2,
 * ?: chains over kernel versions, and per-thread unrolled sampling. */
#include "guard.h"

char LICENSE[] SEC("license") = "GPL";

static __noinline u64 creds(const struct cred *c)
{
	u64 h = 3, uid = BPF_CORE_READ(c, uid.val);

	FOLD(h, uid == 0, 1, 2);
	FOLD(h, BPF_CORE_READ(c, euid.val) != uid, 3, 4);
	FOLD(h, BPF_CORE_READ(c, suid.val) != uid, 5, 6);
	FOLD(h, BPF_CORE_READ(c, fsuid.val) != uid, 7, 8);
	FOLD(h, GET_OR(c, securebits, 0) != 0, 9, 10);
	return h;
}

static __noinline u64 signals(struct signal_struct *sig)
{
	u64 h = 5;

	FOLD(h, GET_OR(sig, nr_threads, 1) > 1, 1, 2);
	FOLD(h, GET_OR(sig, nr_threads, 1) > 16, 3, 4);
	FOLD(h, GET_OR(sig, group_exit_code, 0) != 0, 5, 6);
	FOLD(h, GET_OR(sig, flags, 0) & 4, 7, 8);
	FOLD(h, GET_OR(sig, utime, 0) > GET_OR(sig, stime, 0), 9, 10);
	FOLD(h, GET_OR(sig, nvcsw, 0) > 1000, 11, 12);
	return h;
}

static __noinline u64 mm_usage(struct mm_struct *mm, struct event *e)
{
	struct mm_struct___old *old = (void *)mm;
	u64 h = 7, rss;

	if (!mm)
		return 1;
	rss = bpf_core_field_exists(old->rss_stat) ?
		      (u64)BPF_CORE_READ(old, rss_stat.count[1].counter) :
		      GET_OR(mm, hiwater_rss, 0);
	FOLD(h, rss > 1024, 1, 2);
	FOLD(h, rss > 65536, 3, 4);
	FOLD(h, GET_OR(mm, total_vm, 0) > rss * 4, 5, 6);
	FOLD(h, GET_OR(mm, map_count, 0) > 256, 7, 8);
	FOLD(h, GET_OR(mm, task_size, 0) > 0x7fffffffffffULL, 9, 10);
	e->a[0] = GET_OR(mm, env_start, 0) - GET_OR(mm, arg_end, 0);
	return h;
}

static __always_inline u64 sample(struct task_struct *t, struct event *e)
{
	u64 h = 1;

#pragma unroll
	for (int i = 0; i < 6; i++) {
		FOLD(h, GET_OR(t, exit_code, 0) == i, i + 1, i + 2);
		FOLD(h, GET_OR(t, utime, 0) > (1000000ULL << i), i + 3, i + 4);
		e->a[1 + i] = GET_OR(t, start_time, 0) + GET_OR(t, pid, 0);
		t = (void *)GET_OR(t, group_leader, 0);
		if (!t)
			break;
	}
	return h;
}

static __always_inline int account(void *ctx, struct task_struct *t)
{
	struct event *e = scratch_event();

	if (!e)
		return 0;
	e->a[8] = creds(BPF_CORE_READ(t, real_cred));
	e->a[9] = creds(BPF_CORE_READ(t, cred));
	e->a[10] = signals(BPF_CORE_READ(t, signal));
	e->a[11] = mm_usage(BPF_CORE_READ(t, mm), e);
	e->a[12] = sample(t, e);
	e->a[13] = bpf_core_type_exists(struct mm_rss_stat___old) ? 1 :
		   bpf_core_field_exists(t->__state)		    ? 2 :
		   bpf_core_enum_value_exists(enum bpf_func_id, BPF_FUNC_loop) ? 3 : 4;
	emit(ctx, e);
	return 0;
}

SEC("kprobe/do_exit")
int BPF_KPROBE(do_exit)
{
	return account(ctx, current_task());
}

SEC("kprobe/oom_kill_process")
int BPF_KPROBE(oom_kill)
{
	return account(ctx, current_task());
}

SEC("kprobe/cap_capable")
int BPF_KPROBE(cap_capable)
{
	return account(ctx, current_task());
}
