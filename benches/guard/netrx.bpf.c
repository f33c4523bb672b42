// SPDX-License-Identifier: MIT OR Apache-2.0
/* Packets, as tcppktlat/netif-style tools read them: the device and socket
 * behind an skb, header offsets, and a bpf_loop() over the skb's segments. */
#include "guard.h"

char LICENSE[] SEC("license") = "GPL";

struct seg_ctx {
	struct sk_buff *skb;
	u64 h;
	u64 bytes;
};

static long seg_one(__u32 index, void *data)
{
	struct seg_ctx *s = data;
	struct sk_buff *skb = s->skb;
	u64 len = GET_OR(skb, len, 0);

	FOLD(s->h, len > 1500, 1, 2);
	FOLD(s->h, GET_OR(skb, data_len, 0) != 0, 3, 4);
	FOLD(s->h, GET_OR(skb, truesize, 0) > 4096, 5, 6);
	s->bytes += len;
	return len < 64;
}

static __noinline u64 dev_info(struct net_device *dev, struct event *e)
{
	u64 h = 3;

	FOLD(h, GET_OR(dev, ifindex, 0) == 1, 1, 2);
	FOLD(h, GET_OR(dev, mtu, 1500) > 1500, 3, 4);
	FOLD(h, GET_OR(dev, flags, 0) & 1, 5, 6);
	FOLD(h, GET_OR(dev, hard_header_len, 14) != 14, 7, 8);
	FOLD(h, GET_OR(dev, real_num_tx_queues, 1) > 1, 9, 10);
	FOLD(h, GET_OR(dev, real_num_rx_queues, 1) > 1, 11, 12);
	BPF_CORE_READ_STR_INTO(&e->a[0], dev, name);
	return h;
}

static __noinline u64 skb_headers(struct sk_buff *skb)
{
	u64 h = 5;
	u64 nh = GET_OR(skb, network_header, 0), th = GET_OR(skb, transport_header, 0);

	FOLD(h, th > nh, 1, 2);
	FOLD(h, th - nh == 20, 3, 4);
	FOLD(h, th - nh == 40, 5, 6);
	FOLD(h, GET_OR(skb, mac_header, 0xffff) == 0xffff, 7, 8);
	FOLD(h, GET_OR(skb, protocol, 0) == 0x0008, 9, 10);
	FOLD(h, GET_OR(skb, protocol, 0) == 0xdd86, 11, 12);
	FOLD(h, GET_OR(skb, hash, 0) != 0, 13, 14);
	FOLD(h, GET_OR(skb, mark, 0) != 0, 15, 16);
	FOLD(h, GET_OR(skb, skb_iif, 0) != 0, 17, 18);
	FOLD(h, GET_OR(skb, tstamp, 0) != 0, 19, 20);
	return h;
}

static __noinline u64 skb_sock(struct sock *sk)
{
	u64 h = 7;

	if (!sk)
		return 0;
	FOLD(h, BPF_CORE_READ(sk, __sk_common.skc_family) == 2, 1, 2);
	FOLD(h, BPF_CORE_READ(sk, __sk_common.skc_state) == 1, 3, 4);
	FOLD(h, GET_OR(sk, sk_protocol, 0) == 6, 5, 6);
	FOLD(h, GET_OR(sk, sk_rcvbuf, 0) > 65536, 7, 8);
	FOLD(h, GET_OR(sk, __sk_common.skc_rcv_wnd, 0) > 65536, 9, 10);
	return h;
}

static __always_inline u64 size_hist(u64 len)
{
	u64 h = 1;

#pragma unroll
	for (int i = 0; i < 16; i++)
		FOLD(h, len > (64ULL << (i / 2)) + (i & 1) * 32, i + 1, i + 2);
	return h;
}

static __always_inline int trace_skb(void *ctx, struct sk_buff *skb)
{
	struct event *e = scratch_event();
	struct seg_ctx s = {.skb = skb, .h = 1};

	if (!e)
		return 0;
	if (bpf_core_enum_value_exists(enum bpf_func_id, BPF_FUNC_loop))
		bpf_loop(8, seg_one, &s, 0);
	e->a[4] = s.h;
	e->a[5] = s.bytes;
	e->a[6] = dev_info((void *)GET_OR(skb, dev, 0), e);
	e->a[7] = skb_headers(skb);
	e->a[8] = skb_sock((void *)GET_OR(skb, sk, 0));
	e->a[9] = size_hist(GET_OR(skb, len, 0));
	emit(ctx, e);
	return 0;
}

SEC("kprobe/__netif_receive_skb")
int BPF_KPROBE(netif_receive, struct sk_buff *skb)
{
	return trace_skb(ctx, skb);
}

SEC("kprobe/dev_queue_xmit")
int BPF_KPROBE(queue_xmit, struct sk_buff *skb)
{
	return trace_skb(ctx, skb);
}
