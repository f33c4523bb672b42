// SPDX-License-Identifier: MIT OR Apache-2.0
/* TCP sockets, as tcplife/tcpstates/tcprtt read them: addresses by family,
 * state by enum value, RTT and counters, each guarded. */
#include "guard.h"

char LICENSE[] SEC("license") = "GPL";

#define AF_INET 2
#define AF_INET6 10

static __noinline u64 sk_addrs(struct sock *sk, struct event *e)
{
	u64 h = 3;
	u64 family = BPF_CORE_READ(sk, __sk_common.skc_family);

	if (family == AF_INET) {
		e->a[0] = BPF_CORE_READ(sk, __sk_common.skc_rcv_saddr);
		e->a[1] = BPF_CORE_READ(sk, __sk_common.skc_daddr);
		h = 5;
	} else if (family == AF_INET6) {
		BPF_CORE_READ_INTO(&e->a[0], sk, __sk_common.skc_v6_rcv_saddr.in6_u.u6_addr32);
		BPF_CORE_READ_INTO(&e->a[2], sk, __sk_common.skc_v6_daddr.in6_u.u6_addr32);
		h = 7;
	}
	FOLD(h, BPF_CORE_READ(sk, __sk_common.skc_num) < 1024, 1, 2);
	FOLD(h, BPF_CORE_READ(sk, __sk_common.skc_dport) == 0x5000, 3, 4);
	FOLD(h, GET_OR(sk, __sk_common.skc_bound_dev_if, 0) != 0, 5, 6);
	FOLD(h, GET_OR(sk, __sk_common.skc_incoming_cpu, -1) >= 0, 7, 8);
	return h;
}

static __always_inline u64 sk_state(struct sock *sk)
{
	u64 state = BPF_CORE_READ(sk, __sk_common.skc_state), h = 11;

	FOLD(h, state == TCP_ESTABLISHED, 1, 2);
	FOLD(h, state == TCP_SYN_SENT, 3, 4);
	FOLD(h, state == TCP_SYN_RECV, 5, 6);
	FOLD(h, state == TCP_FIN_WAIT1, 7, 8);
	FOLD(h, state == TCP_CLOSE, 9, 10);
	FOLD(h, state == TCP_LISTEN, 11, 12);
	FOLD(h, state == TCP_NEW_SYN_RECV, 13, 14);
	FOLD(h, state == TCP_BOUND_INACTIVE, 15, 16);
	return h;
}

static __always_inline u64 sk_opts(struct sock *sk)
{
	struct sock___old *old = (void *)sk;
	struct inet_sock *inet = (void *)sk;
	u64 h = 13, proto;

	proto = bpf_core_field_exists(sk->sk_protocol) ? (u64)BPF_CORE_READ(sk, sk_protocol)
						       : (u64)BPF_CORE_READ(old, sk_protocol_old_bits);
	FOLD(h, proto == 6, 1, 2);
	FOLD(h, GET_OR(sk, sk_type, 1) == 1, 3, 4);
	FOLD(h, GET_OR(sk, sk_rcvbuf, 0) > 131072, 5, 6);
	FOLD(h, GET_OR(sk, sk_sndbuf, 0) > 131072, 7, 8);
	FOLD(h, GET_OR(sk, sk_err, 0) != 0, 9, 10);
	FOLD(h, GET_OR(sk, sk_mark, 0) != 0, 11, 12);
	FOLD(h, GET_OR(sk, sk_priority, 0) != 0, 13, 14);
	FOLD(h, GET_OR(sk, sk_pacing_rate, 0) > 1000000, 15, 16);
	FOLD(h, GET_OR(inet, inet_sport, 0) == GET_OR(inet, inet_dport, 0), 17, 18);
	FOLD(h, GET_OR(inet, uc_index, 0) != 0, 19, 20);
	return h;
}

static __noinline u64 tp_counters(struct tcp_sock *tp, struct event *e)
{
	u64 h = 17;

	FOLD(h, GET_OR(tp, srtt_us, 0) > 8000, 1, 2);
	FOLD(h, GET_OR(tp, mdev_us, 0) > 1000, 3, 4);
	FOLD(h, GET_OR(tp, rttvar_us, 0) > 1000, 5, 6);
	FOLD(h, GET_OR(tp, retrans_out, 0) != 0, 7, 8);
	FOLD(h, GET_OR(tp, total_retrans, 0) > 3, 9, 10);
	FOLD(h, GET_OR(tp, lost_out, 0) != 0, 11, 12);
	FOLD(h, GET_OR(tp, sacked_out, 0) != 0, 13, 14);
	FOLD(h, GET_OR(tp, snd_cwnd, 10) < GET_OR(tp, snd_ssthresh, 0), 15, 16);
	FOLD(h, GET_OR(tp, snd_wnd, 0) > GET_OR(tp, max_window, 0) / 2, 17, 18);
	FOLD(h, GET_OR(tp, mss_cache, 1460) < 1460, 19, 20);
	e->a[4] = GET_OR(tp, bytes_received, 0);
	e->a[5] = GET_OR(tp, bytes_acked, 0);
	e->a[6] = GET_OR(tp, bytes_sent, 0);
	e->a[7] = GET_OR(tp, segs_in, 0) + GET_OR(tp, segs_out, 0);
	e->a[8] = GET_OR(tp, delivered, 0) + GET_OR(tp, rcv_wnd, 0);
	return h;
}

static __always_inline u64 rtt_hist(struct tcp_sock *tp)
{
	u64 srtt = GET_OR(tp, srtt_us, 0) >> 3, h = 1;

#pragma unroll
	for (int i = 0; i < 16; i++)
		FOLD(h, srtt > (1ULL << i), i + 1, i + 2);
	return h;
}

static __always_inline int trace_sk(void *ctx, struct sock *sk)
{
	struct event *e = scratch_event();

	if (!e)
		return 0;
	e->a[9] = sk_addrs(sk, e);
	e->a[10] = sk_state(sk);
	e->a[11] = sk_opts(sk);
	e->a[12] = tp_counters((void *)sk, e);
	e->a[13] = rtt_hist((void *)sk);
	emit(ctx, e);
	return 0;
}

SEC("kprobe/tcp_set_state")
int BPF_KPROBE(set_state, struct sock *sk)
{
	return trace_sk(ctx, sk);
}

SEC("kprobe/tcp_rcv_established")
int BPF_KPROBE(rcv_established, struct sock *sk)
{
	return trace_sk(ctx, sk);
}

SEC("kprobe/tcp_close")
int BPF_KPROBE(tcp_close, struct sock *sk)
{
	return trace_sk(ctx, sk);
}
