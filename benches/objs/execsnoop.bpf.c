// SPDX-License-Identifier: MIT OR Apache-2.0
/* Like libbpf-tools' execsnoop: exec() calls with the parent, the uid and the first argument. */
#include "kernel.h"

char LICENSE[] SEC("license") = "GPL";

struct event {
	pid_t pid, ppid;
	u32 uid;
	int retval;
	char comm[16];
	char arg0[128];
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 10240);
	__type(key, pid_t);
	__type(value, struct event);
} execs SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERF_EVENT_ARRAY);
	__uint(key_size, sizeof(u32));
	__uint(value_size, sizeof(u32));
} events SEC(".maps");

static const struct event empty;

SEC("tracepoint/syscalls/sys_enter_execve")
int tracepoint__syscalls__sys_enter_execve(struct trace_event_raw_sys_enter *ctx)
{
	struct task_struct *task = (struct task_struct *)bpf_get_current_task();
	pid_t pid = bpf_get_current_pid_tgid() >> 32;
	struct event *e;

	if (bpf_map_update_elem(&execs, &pid, &empty, BPF_NOEXIST))
		return 0;
	e = bpf_map_lookup_elem(&execs, &pid);
	if (!e)
		return 0;
	e->pid = pid;
	e->uid = (u32)bpf_get_current_uid_gid();
	e->ppid = BPF_CORE_READ(task, real_parent, tgid);
	bpf_probe_read_user_str(e->arg0, sizeof(e->arg0), (const char *)ctx->args[0]);
	return 0;
}

SEC("tracepoint/syscalls/sys_exit_execve")
int tracepoint__syscalls__sys_exit_execve(struct trace_event_raw_sys_exit *ctx)
{
	pid_t pid = bpf_get_current_pid_tgid() >> 32;
	struct event *e = bpf_map_lookup_elem(&execs, &pid);

	if (!e)
		return 0;
	e->retval = ctx->ret;
	bpf_get_current_comm(e->comm, sizeof(e->comm));
	bpf_perf_event_output(ctx, &events, BPF_F_CURRENT_CPU, e, sizeof(*e));
	bpf_map_delete_elem(&execs, &pid);
	return 0;
}
