// SPDX-License-Identifier: MIT OR Apache-2.0
/* Like libbpf-tools' oomkill: OOM kills, the victim and the memory it was chosen for. */
#include "kernel.h"

char LICENSE[] SEC("license") = "GPL";

struct event {
	u32 fpid, tpid;
	u64 pages;
	long points;
	char fcomm[16], tcomm[16];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERF_EVENT_ARRAY);
	__uint(key_size, sizeof(u32));
	__uint(value_size, sizeof(u32));
} events SEC(".maps");

SEC("kprobe/oom_kill_process")
int BPF_KPROBE(oom_kill_process, struct oom_control *oc, const char *message)
{
	struct event e = {};

	e.fpid = bpf_get_current_pid_tgid() >> 32;
	e.tpid = BPF_CORE_READ(oc, chosen, tgid);
	e.pages = BPF_CORE_READ(oc, totalpages);
	e.points = BPF_CORE_READ(oc, chosen_points);
	bpf_get_current_comm(e.fcomm, sizeof(e.fcomm));
	BPF_CORE_READ_STR_INTO(&e.tcomm, oc, chosen, comm);
	bpf_perf_event_output(ctx, &events, BPF_F_CURRENT_CPU, &e, sizeof(e));
	return 0;
}
