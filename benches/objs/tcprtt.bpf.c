// SPDX-License-Identifier: MIT OR Apache-2.0
/* Like libbpf-tools' tcprtt: smoothed TCP round-trip times per remote address, log2 histograms. */
#include "kernel.h"

char LICENSE[] SEC("license") = "GPL";

#define MAX_SLOTS 27

struct hist {
	u64 latency, cnt;
	u32 slots[MAX_SLOTS];
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 10240);
	__type(key, u64);
	__type(value, struct hist);
} hists SEC(".maps");

SEC("fentry/tcp_rcv_established")
int BPF_PROG(tcp_rcv, struct sock *sk)
{
	static const struct hist zero;
	const struct tcp_sock *ts = (struct tcp_sock *)sk;
	u64 key = BPF_CORE_READ(sk, __sk_common.skc_daddr), slot;
	struct hist *hist;
	u32 srtt;

	if (BPF_CORE_READ(sk, __sk_common.skc_family) != 2 /* AF_INET */)
		return 0;
	bpf_map_update_elem(&hists, &key, &zero, BPF_NOEXIST);
	hist = bpf_map_lookup_elem(&hists, &key);
	if (!hist)
		return 0;
	srtt = BPF_CORE_READ(ts, srtt_us) >> 3;
	slot = 63 - __builtin_clzll(srtt | 1);
	if (slot >= MAX_SLOTS)
		slot = MAX_SLOTS - 1;
	__sync_fetch_and_add(&hist->slots[slot], 1);
	__sync_fetch_and_add(&hist->latency, srtt);
	__sync_fetch_and_add(&hist->cnt, 1);
	return 0;
}
