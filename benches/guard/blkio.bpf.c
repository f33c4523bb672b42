// SPDX-License-Identifier: MIT OR Apache-2.0
/* Block I/O, as biosnoop/biostacks/biolatency read it: the disk behind a
 * request or a bio through fields that moved between kernels (rq_disk,
 * bi_disk), operation codes by enum value, and latency buckets. */
#include "guard.h"

char LICENSE[] SEC("license") = "GPL";

static __always_inline struct gendisk *rq_disk(struct request *rq)
{
	struct request___old *old = (void *)rq;

	return bpf_core_field_exists(old->rq_disk) ? BPF_CORE_READ(old, rq_disk)
						   : BPF_CORE_READ(rq, q, disk);
}

static __noinline struct gendisk *bio_disk(struct bio *bio)
{
	struct bio___old *old = (void *)bio;

	return bpf_core_field_exists(old->bi_disk) ? BPF_CORE_READ(old, bi_disk)
						   : BPF_CORE_READ(bio, bi_bdev, bd_disk);
}

static __noinline u64 op_kind(u64 op)
{
	u64 h = 3;

	FOLD(h, op == ENUM_OR(enum req_op, REQ_OP_READ, 0), 1, 2);
	FOLD(h, op == ENUM_OR(enum req_op, REQ_OP_WRITE, 1), 3, 4);
	FOLD(h, op == ENUM_OR(enum req_op, REQ_OP_FLUSH, 2), 5, 6);
	FOLD(h, op == ENUM_OR(enum req_op, REQ_OP_DISCARD, 3), 7, 8);
	FOLD(h, op == ENUM_OR(enum req_op, REQ_OP_SECURE_ERASE, 5), 9, 10);
	FOLD(h, op == ENUM_OR(enum req_op___old, REQ_OP_WRITE_SAME___old, 0xff), 11, 12);
	FOLD(h, op == ENUM_OR(enum req_op, REQ_OP_ZONE_APPEND, 13), 13, 14);
	FOLD(h, op == ENUM_OR(enum req_op, REQ_OP_WRITE_ZEROES, 9), 15, 16);
	return h;
}

static __noinline u64 disk_id(struct gendisk *disk)
{
	u64 h = 5;

	FOLD(h, GET_OR(disk, major, 0) == 8, 1, 2);
	FOLD(h, GET_OR(disk, first_minor, 0) > 0, 3, 4);
	FOLD(h, GET_OR(disk, minors, 1) > 1, 5, 6);
	FOLD(h, GET_OR(disk, flags, 0) != 0, 7, 8);
	FOLD(h, GET_OR(disk, diskseq, 0) > 1, 9, 10);
	return h;
}

static __noinline u64 rq_shape(struct request *rq)
{
	u64 h = 7;
	u64 len = GET_OR(rq, __data_len, 0);

	FOLD(h, len > 4096, 1, 2);
	FOLD(h, len > 65536, 3, 4);
	FOLD(h, GET_OR(rq, nr_phys_segments, 1) > 1, 5, 6);
	FOLD(h, GET_OR(rq, tag, -1) >= 0, 7, 8);
	FOLD(h, GET_OR(rq, rq_flags, 0) != 0, 9, 10);
	FOLD(h, GET_OR(rq, timeout, 0) > 30000, 11, 12);
	FOLD(h, GET_OR(rq, io_start_time_ns, 0) > GET_OR(rq, start_time_ns, 0), 13, 14);
	FOLD(h, GET_OR(rq, alloc_time_ns, 0) != 0, 15, 16);
	return h;
}

static __always_inline u64 latency_bucket(u64 delta)
{
	u64 h = 1;

#pragma unroll
	for (int i = 0; i < 12; i++)
		FOLD(h, delta > (1ULL << (2 * i + 10)), i + 1, i + 2);
	return h;
}

static __noinline u64 bio_chain(struct bio *bio, struct event *e)
{
	u64 h = 1;

#pragma unroll
	for (int i = 0; i < 4; i++) {
		if (bio) {
			FOLD(h, GET_OR(bio, bi_vcnt, 0) > 1, i + 1, i + 2);
			FOLD(h, GET_OR(bio, bi_ioprio, 0) != 0, i + 3, i + 4);
			e->a[4 + i] = (u64)bio_disk(bio) + GET_OR(bio, issue_time_ns, 0);
			bio = (void *)GET_OR(bio, bi_next, 0);
		}
	}
	return h;
}

static __always_inline int trace_rq(void *ctx, struct request *rq)
{
	struct event *e = scratch_event();
	u64 flags;

	if (!e)
		return 0;
	flags = GET_OR(rq, cmd_flags, 0);
	e->a[0] = op_kind(flags & 0xff);
	e->a[1] = disk_id(rq_disk(rq));
	e->a[2] = rq_shape(rq);
	e->a[3] = latency_bucket(bpf_ktime_get_ns() - GET_OR(rq, start_time_ns, 0));
	e->a[9] = bio_chain((void *)GET_OR(rq, bio, 0), e);
	e->a[10] = GET_OR(rq, __sector, 0) + BPF_CORE_READ(rq, part, bd_dev);
	emit(ctx, e);
	return 0;
}

SEC("kprobe/blk_mq_start_request")
int BPF_KPROBE(blk_start, struct request *rq)
{
	return trace_rq(ctx, rq);
}

SEC("kprobe/blk_account_io_done")
int BPF_KPROBE(blk_done, struct request *rq)
{
	return trace_rq(ctx, rq);
}

SEC("kprobe/submit_bio")
int BPF_KPROBE(submit, struct bio *bio)
{
	struct event *e = scratch_event();

	if (!e)
		return 0;
	e->a[0] = op_kind(GET_OR(bio, bi_opf, 0) & 0xff);
	e->a[1] = disk_id(bio_disk(bio));
	e->a[2] = bio_chain(bio, e);
	emit(ctx, e);
	return 0;
}
