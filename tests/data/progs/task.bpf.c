// SPDX-License-Identifier: MIT OR Apache-2.0
/*
 * The small example object: relocates against the running kernel's own types
 * (task_struct, mm_struct with its anonymous inner struct, atomic_t, the
 * pid_type ENUM and the perf_callchain_context ENUM64), with the usual
 * ___flavor for task_struct's pre-5.14 'state'. Loads into the kernel when
 * relocated against /sys/kernel/btf/vmlinux.
 */
#include "fixture.h"

typedef int pid_t;

typedef struct {
	int counter;
} atomic_t;

struct mm_struct {
	struct {
		atomic_t mm_users;
		unsigned long total_vm;
		unsigned long arg_start;
	};
} __core;

struct task_struct {
	unsigned int __state;
	unsigned int flags;
	pid_t pid;
	pid_t tgid;
	struct task_struct *real_parent;
	struct mm_struct *mm;
	char comm[16];
	__u64 start_time;
} __core;

/* kernels before 5.14 */
struct task_struct___old {
	long state;
} __core;

enum pid_type { PIDTYPE_PID, PIDTYPE_TGID, PIDTYPE_PGID, PIDTYPE_SID, PIDTYPE_MAX };

enum perf_callchain_context {
	PERF_CONTEXT_HV = (__u64)-32,
	PERF_CONTEXT_KERNEL = (__u64)-128,
	PERF_CONTEXT_USER = (__u64)-512,
};

static long task_state(struct task_struct *t)
{
	if (bpf_core_field_exists(t->__state))
		return BPF_CORE_READ(t, __state);
	return BPF_CORE_READ((struct task_struct___old *)t, state);
}

SEC("raw_tp/sys_enter")
int task_info(void *ctx)
{
	struct task_struct *t = (struct task_struct *)bpf_get_current_task();
	char comm[16];
	long sum = 0;

	sum += BPF_CORE_READ(t, pid);
	sum += BPF_CORE_READ(t, real_parent, tgid);
	sum += BPF_CORE_READ(t, mm, mm_users.counter);
	sum += BPF_CORE_READ(t, mm, total_vm);
	sum += task_state(t);
	bpf_core_read_str(comm, sizeof(comm), &t->comm);
	return sum + comm[0];
}

SEC("raw_tp/sys_exit")
int task_misc(void *ctx)
{
	long sum = 0;

	sum += bpf_core_enum_value(enum pid_type, PIDTYPE_TGID);
	sum += bpf_core_enum_value(enum perf_callchain_context, PERF_CONTEXT_KERNEL) & 0xff;
	sum += bpf_core_type_exists(struct task_struct___old);
	sum += bpf_core_field_exists(struct task_struct___old, state);
	sum += bpf_core_field_size(struct task_struct, comm);
	sum += bpf_core_type_size(struct mm_struct) > 0;
	return sum;
}

char LICENSE[] SEC("license") = "GPL";
