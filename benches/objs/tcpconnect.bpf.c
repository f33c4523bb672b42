// SPDX-License-Identifier: MIT OR Apache-2.0
/* Like libbpf-tools' tcpconnect: IPv4 connect() calls, with addresses and ports. */
#include "kernel.h"

char LICENSE[] SEC("license") = "GPL";

struct event {
	__be32 saddr, daddr;
	__be16 dport;
	u32 pid;
	char comm[16];
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 10240);
	__type(key, u32);
	__type(value, struct sock *);
} sockets SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERF_EVENT_ARRAY);
	__uint(key_size, sizeof(u32));
	__uint(value_size, sizeof(u32));
} events SEC(".maps");

SEC("kprobe/tcp_v4_connect")
int BPF_KPROBE(tcp_v4_connect, struct sock *sk)
{
	u32 tid = (u32)bpf_get_current_pid_tgid();

	bpf_map_update_elem(&sockets, &tid, &sk, 0);
	return 0;
}

SEC("kretprobe/tcp_v4_connect")
int BPF_KRETPROBE(tcp_v4_connect_ret, int ret)
{
	u32 tid = (u32)bpf_get_current_pid_tgid();
	struct sock **skpp = bpf_map_lookup_elem(&sockets, &tid);
	struct event e = {};
	struct sock *sk;

	if (!skpp)
		return 0;
	sk = *skpp;
	if (!ret) {
		e.saddr = BPF_CORE_READ(sk, __sk_common.skc_rcv_saddr);
		e.daddr = BPF_CORE_READ(sk, __sk_common.skc_daddr);
		e.dport = BPF_CORE_READ(sk, __sk_common.skc_dport);
		e.pid = bpf_get_current_pid_tgid() >> 32;
		bpf_get_current_comm(e.comm, sizeof(e.comm));
		bpf_perf_event_output(ctx, &events, BPF_F_CURRENT_CPU, &e, sizeof(e));
	}
	bpf_map_delete_elem(&sockets, &tid);
	return 0;
}
