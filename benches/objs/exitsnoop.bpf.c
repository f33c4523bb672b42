// SPDX-License-Identifier: MIT OR Apache-2.0
/* Like libbpf-tools' exitsnoop: process exits with their age and exit code. */
#include "kernel.h"

char LICENSE[] SEC("license") = "GPL";

struct event {
	u64 start_time, exit_time;
	pid_t pid, tid, ppid;
	int sig, exit_code;
	char comm[16];
};

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 256 * 1024);
} events SEC(".maps");

SEC("tracepoint/sched/sched_process_exit")
int sched_process_exit(void *ctx)
{
	struct task_struct *task = (struct task_struct *)bpf_get_current_task();
	u64 id = bpf_get_current_pid_tgid();
	struct event *e;

	if ((pid_t)(id >> 32) != (pid_t)id)
		return 0;
	if (BPF_CORE_READ(task, signal, nr_threads) > 1)
		return 0;
	e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
	if (!e)
		return 0;
	e->exit_time = bpf_ktime_get_ns();
	e->start_time = BPF_CORE_READ(task, start_time);
	e->pid = id >> 32;
	e->tid = (pid_t)id;
	e->ppid = BPF_CORE_READ(task, real_parent, tgid);
	e->sig = BPF_CORE_READ(task, exit_code) & 0xff;
	e->exit_code = BPF_CORE_READ(task, exit_code) >> 8;
	bpf_get_current_comm(e->comm, sizeof(e->comm));
	bpf_ringbuf_submit(e, 0);
	return 0;
}
