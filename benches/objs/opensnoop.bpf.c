// SPDX-License-Identifier: MIT OR Apache-2.0
/* Like libbpf-tools' opensnoop: openat() calls, their flags and results. */
#include "kernel.h"

char LICENSE[] SEC("license") = "GPL";

struct args {
	const char *fname;
	int flags;
};

struct event {
	pid_t pid;
	int flags, ret;
	char comm[16];
	char fname[255];
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 10240);
	__type(key, u32);
	__type(value, struct args);
} start SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 256 * 1024);
} events SEC(".maps");

SEC("tracepoint/syscalls/sys_enter_openat")
int tracepoint__syscalls__sys_enter_openat(struct trace_event_raw_sys_enter *ctx)
{
	u32 tid = (u32)bpf_get_current_pid_tgid();
	struct args args = {
		.fname = (const char *)ctx->args[1],
		.flags = (int)ctx->args[2],
	};

	bpf_map_update_elem(&start, &tid, &args, 0);
	return 0;
}

SEC("tracepoint/syscalls/sys_exit_openat")
int tracepoint__syscalls__sys_exit_openat(struct trace_event_raw_sys_exit *ctx)
{
	u32 tid = (u32)bpf_get_current_pid_tgid();
	struct args *args = bpf_map_lookup_elem(&start, &tid);
	struct event *e;

	if (!args)
		return 0;
	e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
	if (e) {
		e->pid = bpf_get_current_pid_tgid() >> 32;
		e->flags = args->flags;
		e->ret = ctx->ret;
		bpf_get_current_comm(e->comm, sizeof(e->comm));
		bpf_probe_read_user_str(e->fname, sizeof(e->fname), args->fname);
		bpf_ringbuf_submit(e, 0);
	}
	bpf_map_delete_elem(&start, &tid);
	return 0;
}
