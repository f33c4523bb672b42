// SPDX-License-Identifier: MIT OR Apache-2.0
/* Like libbpf-tools' bindsnoop: IPv4 bind() calls, with the socket's protocol and port. */
#include "kernel.h"

char LICENSE[] SEC("license") = "GPL";

struct event {
	u32 pid, addr;
	__u16 port, proto;
	int ret;
	short type;
	char task[16];
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 10240);
	__type(key, u32);
	__type(value, struct socket *);
} sockets SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERF_EVENT_ARRAY);
	__uint(key_size, sizeof(u32));
	__uint(value_size, sizeof(u32));
} events SEC(".maps");

SEC("kprobe/inet_bind")
int BPF_KPROBE(ipv4_bind_entry, struct socket *socket)
{
	u32 tid = (u32)bpf_get_current_pid_tgid();

	bpf_map_update_elem(&sockets, &tid, &socket, 0);
	return 0;
}

SEC("kretprobe/inet_bind")
int BPF_KRETPROBE(ipv4_bind_exit, int ret)
{
	u32 tid = (u32)bpf_get_current_pid_tgid();
	struct socket **socketp = bpf_map_lookup_elem(&sockets, &tid);
	struct event e = {};
	struct sock *sk;

	if (!socketp)
		return 0;
	sk = BPF_CORE_READ(*socketp, sk);
	e.pid = bpf_get_current_pid_tgid() >> 32;
	e.ret = ret;
	e.type = BPF_CORE_READ(*socketp, type);
	e.proto = BPF_CORE_READ(sk, sk_protocol);
	e.port = BPF_CORE_READ(sk, __sk_common.skc_num);
	e.addr = BPF_CORE_READ(sk, __sk_common.skc_rcv_saddr);
	bpf_get_current_comm(e.task, sizeof(e.task));
	bpf_perf_event_output(ctx, &events, BPF_F_CURRENT_CPU, &e, sizeof(e));
	bpf_map_delete_elem(&sockets, &tid);
	return 0;
}
