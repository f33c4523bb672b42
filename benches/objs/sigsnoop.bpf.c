// SPDX-License-Identifier: MIT OR Apache-2.0
/* Like libbpf-tools' sigsnoop: signals generated, from whom to whom, and the result. */
#include "kernel.h"

char LICENSE[] SEC("license") = "GPL";

struct event {
	pid_t pid, tpid;
	int sig, ret, code;
	char comm[16];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERF_EVENT_ARRAY);
	__uint(key_size, sizeof(u32));
	__uint(value_size, sizeof(u32));
} events SEC(".maps");

SEC("tracepoint/signal/signal_generate")
int sig_trace(struct trace_event_raw_signal_generate *ctx)
{
	struct event e = {};

	e.pid = bpf_get_current_pid_tgid() >> 32;
	e.tpid = ctx->pid;
	e.sig = ctx->sig;
	e.ret = ctx->result;
	e.code = ctx->code;
	bpf_get_current_comm(e.comm, sizeof(e.comm));
	bpf_perf_event_output(ctx, &events, BPF_F_CURRENT_CPU, &e, sizeof(e));
	return 0;
}
