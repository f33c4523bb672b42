// SPDX-License-Identifier: MIT OR Apache-2.0
/* Like libbpf-tools' tcplife: TCP sessions, their ports, bytes and duration. */
#include "kernel.h"

char LICENSE[] SEC("license") = "GPL";

#define TCP_ESTABLISHED 1
#define TCP_CLOSE 7

struct event {
	u64 span_us, rx_b, tx_b;
	__be32 saddr, daddr;
	__u16 sport, dport;
	u32 pid;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 10240);
	__type(key, struct sock *);
	__type(value, u64);
} birth SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERF_EVENT_ARRAY);
	__uint(key_size, sizeof(u32));
	__uint(value_size, sizeof(u32));
} events SEC(".maps");

SEC("kprobe/tcp_set_state")
int BPF_KPROBE(tcp_set_state, struct sock *sk, int state)
{
	struct tcp_sock *tp = (struct tcp_sock *)sk;
	struct event e = {};
	u64 ts = bpf_ktime_get_ns(), *start;

	if (BPF_CORE_READ(sk, sk_protocol) != 6 /* IPPROTO_TCP */)
		return 0;
	if (state < TCP_CLOSE) {
		if (BPF_CORE_READ(sk, __sk_common.skc_state) != TCP_ESTABLISHED)
			bpf_map_update_elem(&birth, &sk, &ts, BPF_NOEXIST);
		return 0;
	}
	start = bpf_map_lookup_elem(&birth, &sk);
	if (!start)
		return 0;
	e.span_us = (ts - *start) / 1000;
	e.rx_b = BPF_CORE_READ(tp, bytes_received);
	e.tx_b = BPF_CORE_READ(tp, bytes_acked);
	e.saddr = BPF_CORE_READ(sk, __sk_common.skc_rcv_saddr);
	e.daddr = BPF_CORE_READ(sk, __sk_common.skc_daddr);
	e.sport = BPF_CORE_READ(sk, __sk_common.skc_num);
	e.dport = __builtin_bswap16(BPF_CORE_READ(sk, __sk_common.skc_dport));
	e.pid = bpf_get_current_pid_tgid() >> 32;
	bpf_perf_event_output(ctx, &events, BPF_F_CURRENT_CPU, &e, sizeof(e));
	bpf_map_delete_elem(&birth, &sk);
	return 0;
}
