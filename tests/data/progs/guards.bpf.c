// SPDX-License-Identifier: MIT OR Apache-2.0
/*
 * Load verdicts: every guard form clang -O2 makes of a CO-RE existence check,
 * against targets/btf__guards.c, where gd_task has no `gone`/`gone2`,
 * gd_missing does not exist, enum gd_state has no GD_GONE and gd_shape has no
 * `c` (so it does not match). Each read of a missing field is poisoned; the
 * guard's relocated constant is 0, so the verifier prunes the poison unless
 * the program reaches it unguarded.
 *
 *   loads:    guard_if, guard_ternary, guard_and, guard_or, guard_type,
 *             guard_enum, guard_matches, guard_spilled, guard_subprog,
 *             guard_shared
 *   rejected: shared_unguarded (reads through the same sub-program as
 *             guard_shared, unguarded), loop_poison (poison in a bpf_loop
 *             callback), unguarded, guard_global (the guard returned by a
 *             global function, whose return value the verifier does not know)
 *   unknown:  rodata_flag (a const volatile flag the loader may set)
 *
 * Loadable by the running kernel with btf_custom_path = btf__guards.btf.
 */
#include "fixture.h"

struct gd_task {
	int pid;
	int tgid;
	int gone;
	int gone2;
} __core;

struct gd_missing {
	int x;
} __core;

enum gd_state { GD_A = 0, GD_GONE = 7 };

struct gd_shape {
	int a;
	int c;
} __core;

#define TASK fixture_ptr(struct gd_task)

SEC("raw_tp/sys_enter")
int guard_if(void *ctx)
{
	struct gd_task *t = TASK;
	int v = 0;

	if (bpf_core_field_exists(t->gone))
		v = BPF_CORE_READ(t, gone);
	return v;
}

SEC("raw_tp/sys_enter")
int guard_ternary(void *ctx)
{
	struct gd_task *t = TASK;

	return bpf_core_field_exists(t->gone) ? BPF_CORE_READ(t, gone) : BPF_CORE_READ(t, pid);
}

SEC("raw_tp/sys_enter")
int guard_and(void *ctx)
{
	struct gd_task *t = TASK;

	if (bpf_core_field_exists(t->pid) && bpf_core_field_exists(t->gone2))
		return BPF_CORE_READ(t, gone2);
	return 1;
}

SEC("raw_tp/sys_enter")
int guard_or(void *ctx)
{
	struct gd_task *t = TASK;

	if (!bpf_core_field_exists(t->gone) || !bpf_core_field_exists(t->tgid))
		return 0;
	return BPF_CORE_READ(t, gone);
}

SEC("raw_tp/sys_enter")
int guard_type(void *ctx)
{
	struct gd_missing *m = fixture_ptr(struct gd_missing);

	if (bpf_core_type_exists(struct gd_missing))
		return BPF_CORE_READ(m, x);
	return 0;
}

/* GD_A matches, so the minimized BTF keeps enum gd_state (and libbpf with it
 * reports GD_GONE's poison as `no_match`, as with the full BTF). */
SEC("raw_tp/sys_enter")
int guard_enum(void *ctx)
{
	if (bpf_core_enum_value_exists(enum gd_state, GD_GONE))
		return bpf_core_enum_value(enum gd_state, GD_GONE);
	return bpf_core_enum_value(enum gd_state, GD_A);
}

/* `a` matches, so the minimized BTF keeps gd_shape (as guard_enum). */
SEC("raw_tp/sys_enter")
int guard_matches(void *ctx)
{
	struct gd_shape *s = fixture_ptr(struct gd_shape);

	if (bpf_core_type_matches(struct gd_shape))
		return BPF_CORE_READ(s, c);
	return BPF_CORE_READ(s, a);
}

/* The guard lives in an 8-byte stack slot across helper calls (volatile
 * forces the spill and the fill before the branch, as register pressure
 * does in bigger programs): the verifier tracks a spilled scalar. */
SEC("raw_tp/sys_enter")
int guard_spilled(void *ctx)
{
	struct gd_task *t = TASK;
	volatile __u64 exists = bpf_core_field_exists(t->gone);
	__u64 a = bpf_get_prandom_u32();

	if (exists)
		return BPF_CORE_READ(t, gone) + a;
	return a;
}

/* A guard computed in a sub-program and returned: static, so the verifier
 * follows the call and knows the return value. */
static __noinline int has_gone(struct gd_task *t)
{
	return bpf_core_field_exists(t->gone);
}

SEC("raw_tp/sys_enter")
int guard_subprog(void *ctx)
{
	struct gd_task *t = TASK;

	if (has_gone(t))
		return BPF_CORE_READ(t, gone);
	return 0;
}

/* The poison lives in a sub-program appended to both callers below. */
static __noinline int read_gone(struct gd_task *t)
{
	return BPF_CORE_READ(t, gone);
}

SEC("raw_tp/sys_enter")
int guard_shared(void *ctx)
{
	struct gd_task *t = TASK;

	if (bpf_core_field_exists(t->gone))
		return read_gone(t);
	return 0;
}

SEC("raw_tp/sys_enter")
int shared_unguarded(void *ctx)
{
	return read_gone(TASK);
}

static int loop_cb(__u32 index, void *data)
{
	struct gd_task *t = TASK;

	*(long *)data += BPF_CORE_READ(t, gone2);
	return 0;
}

SEC("raw_tp/sys_exit")
int loop_poison(void *ctx)
{
	long sum = 0;

	bpf_loop(2, loop_cb, &sum, 0);
	return sum;
}

SEC("raw_tp/sys_exit")
int unguarded(void *ctx)
{
	struct gd_task *t = TASK;

	return BPF_CORE_READ(t, gone) + BPF_CORE_READ(t, pid);
}

/* Set by the loader before load (skeleton rodata): the verifier then knows
 * it, this pass does not. */
const volatile int use_gone = 0;

SEC("raw_tp/sys_exit")
int rodata_flag(void *ctx)
{
	struct gd_task *t = TASK;

	if (use_gone)
		return BPF_CORE_READ(t, gone);
	return BPF_CORE_READ(t, tgid);
}

/* The same guard in a global function: the verifier checks it on its own and
 * its caller sees an unknown return value, so the poison is reached. */
__noinline int gone_exists_global(int unused)
{
	return bpf_core_field_exists(struct gd_task, gone) + unused;
}

SEC("raw_tp/sys_exit")
int guard_global(void *ctx)
{
	struct gd_task *t = TASK;

	if (gone_exists_global(0))
		return BPF_CORE_READ(t, gone);
	return 0;
}

/* Called by no entry program: libbpf appends it nowhere, so its relocation is
 * charged to none. */
__noinline int never_called(int x)
{
	return bpf_core_field_exists(struct gd_task, gone2) + x;
}

char LICENSE[] SEC("license") = "GPL";
