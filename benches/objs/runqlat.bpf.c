// SPDX-License-Identifier: MIT OR Apache-2.0
/* Like libbpf-tools' runqlat: time from wakeup to running, as a log2 histogram per process. */
#include "kernel.h"

char LICENSE[] SEC("license") = "GPL";

#define MAX_SLOTS 26
#define TASK_RUNNING 0

struct hist {
	u32 slots[MAX_SLOTS];
	char comm[16];
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 10240);
	__type(key, u32);
	__type(value, u64);
} start SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 10240);
	__type(key, u32);
	__type(value, struct hist);
} hists SEC(".maps");

/* kernels before 5.14 */
struct task_struct___o {
	volatile long state;
} __core;

static long get_task_state(struct task_struct *t)
{
	if (bpf_core_field_exists(t->__state))
		return BPF_CORE_READ(t, __state);
	return BPF_CORE_READ((struct task_struct___o *)t, state);
}

static void trace_enqueue(u32 pid)
{
	u64 ts = bpf_ktime_get_ns();

	if (pid)
		bpf_map_update_elem(&start, &pid, &ts, 0);
}

SEC("tp_btf/sched_wakeup")
int BPF_PROG(sched_wakeup, struct task_struct *p)
{
	trace_enqueue(BPF_CORE_READ(p, pid));
	return 0;
}

SEC("tp_btf/sched_switch")
int BPF_PROG(sched_switch, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	static const struct hist zero;
	u32 pid = BPF_CORE_READ(next, pid), tgid = BPF_CORE_READ(next, tgid);
	struct hist *hist;
	u64 *tsp, slot;

	if (get_task_state(prev) == TASK_RUNNING)
		trace_enqueue(BPF_CORE_READ(prev, pid));
	tsp = bpf_map_lookup_elem(&start, &pid);
	if (!tsp)
		return 0;
	bpf_map_update_elem(&hists, &tgid, &zero, BPF_NOEXIST);
	hist = bpf_map_lookup_elem(&hists, &tgid);
	if (hist) {
		slot = 63 - __builtin_clzll((bpf_ktime_get_ns() - *tsp) / 1000 | 1);
		if (slot >= MAX_SLOTS)
			slot = MAX_SLOTS - 1;
		__sync_fetch_and_add(&hist->slots[slot], 1);
		bpf_probe_read_kernel_str(hist->comm, sizeof(hist->comm), next->comm);
	}
	bpf_map_delete_elem(&start, &pid);
	return 0;
}
