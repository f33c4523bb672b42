// SPDX-License-Identifier: MIT OR Apache-2.0
/* Locks, as klockstat reads them: a stack of held locks unrolled, owner
 * words decoded bit by bit, and wait-time buckets, with many small
 * sub-programs shared by the entry programs. */
#include "guard.h"

char LICENSE[] SEC("license") = "GPL";

#define HELD 6

static __noinline u64 owner_bits(u64 owner)
{
	u64 h = 3;

	FOLD(h, (owner & 7) == 1, 1, 2);
	FOLD(h, (owner & 7) == 2, 3, 4);
	FOLD(h, (owner & 7) == 4, 5, 6);
	FOLD(h, owner > 0xffff000000000000ULL, 7, 8);
	return h;
}

static __noinline u64 mutex_state(struct mutex *m)
{
	return owner_bits(GET_OR(m, owner.counter, 0));
}

static __noinline u64 rwsem_state(struct rw_semaphore *s)
{
	u64 count = GET_OR(s, count.counter, 0), h = 5;

	FOLD(h, count == 0, 1, 2);
	FOLD(h, count & 1, 3, 4);
	FOLD(h, count > 256, 5, 6);
	return h * 31 + owner_bits(GET_OR(s, owner.counter, 0));
}

static __noinline u64 holder(struct task_struct *t)
{
	u64 h = 7;

	FOLD(h, GET_OR(t, prio, 120) < 120, 1, 2);
	FOLD(h, GET_OR(t, on_cpu, 0) != 0, 3, 4);
	FOLD(h, GET_OR(t, flags, 0) & 0x00200000, 5, 6);
	FOLD(h, GET_OR(t, nvcsw, 0) > GET_OR(t, nivcsw, 0), 7, 8);
	return h;
}

static __always_inline u64 wait_bucket(u64 delta)
{
	u64 h = 1;

#pragma unroll
	for (int i = 0; i < 10; i++)
		FOLD(h, delta > (1000ULL << (2 * i)), i + 1, i + 2);
	return h;
}

static __always_inline int on_lock(void *ctx, void *lock, bool rw)
{
	struct event *e = scratch_event();
	u64 h = 1, now = bpf_ktime_get_ns();

	if (!e)
		return 0;
#pragma unroll
	for (int i = 0; i < HELD; i++) {
		u64 prev = e->a[i];

		FOLD(h, prev == (u64)lock, i + 1, i + 2);
		FOLD(h, prev == 0, i + 3, i + 4);
		e->a[i] = prev ? prev : (u64)lock;
	}
	e->a[8] = h;
	e->a[9] = rw ? rwsem_state(lock) : mutex_state(lock);
	e->a[10] = holder((struct task_struct *)bpf_get_current_task());
	e->a[11] = wait_bucket(now - e->a[12]);
	e->a[12] = now;
	emit(ctx, e);
	return 0;
}

SEC("kprobe/mutex_lock")
int BPF_KPROBE(mutex_lock, struct mutex *m)
{
	return on_lock(ctx, m, false);
}

SEC("kprobe/mutex_unlock")
int BPF_KPROBE(mutex_unlock, struct mutex *m)
{
	return on_lock(ctx, m, false);
}

SEC("kprobe/down_read")
int BPF_KPROBE(down_read, struct rw_semaphore *s)
{
	return on_lock(ctx, s, true);
}

SEC("kprobe/up_write")
int BPF_KPROBE(up_write, struct rw_semaphore *s)
{
	return on_lock(ctx, s, true);
}
