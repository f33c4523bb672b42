// SPDX-License-Identifier: MIT OR Apache-2.0
/* Like libbpf-tools' capable: capability checks, with uid and mount namespace. */
#include "kernel.h"

char LICENSE[] SEC("license") = "GPL";

struct event {
	u32 pid, tgid, uid, mntnsid;
	int cap;
	unsigned int audit;
	char task[16];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERF_EVENT_ARRAY);
	__uint(key_size, sizeof(u32));
	__uint(value_size, sizeof(u32));
} events SEC(".maps");

SEC("kprobe/cap_capable")
int BPF_KPROBE(kprobe__cap_capable, const struct cred *cred, void *targ_ns, int cap,
	       unsigned int cap_opt)
{
	struct task_struct *task = (struct task_struct *)bpf_get_current_task();
	struct event e = {};
	u64 id = bpf_get_current_pid_tgid();

	e.tgid = id >> 32;
	e.pid = (u32)id;
	e.cap = cap;
	e.audit = cap_opt;
	e.uid = BPF_CORE_READ(cred, uid.val);
	e.mntnsid = BPF_CORE_READ(task, nsproxy, mnt_ns, ns.inum);
	bpf_get_current_comm(e.task, sizeof(e.task));
	bpf_perf_event_output(ctx, &events, BPF_F_CURRENT_CPU, &e, sizeof(e));
	return 0;
}
