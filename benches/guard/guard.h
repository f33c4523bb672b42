/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/*
 * The instruction-count guard's corpus (benches/insn-guard.sh): programs
 * written to have what makes real tools (bcc's libbpf-tools: ksnoop,
 * klockstat, biostacks, tcplife, ...) expensive to relocate and to judge.
 *
 * - Hundreds of branches on relocated values: GET_OR() guards every read
 *   with bpf_core_field_exists(), ENUM_OR() with
 *   bpf_core_enum_value_exists(), and ?: chains pick between kernel
 *   versions. Some fields, enum values and types are deliberately missing
 *   from the target (Linux 7.1, tests/data/targets/vmlinux-7.1.btf.tar.xz):
 *   the `___old` flavors below. Their reads are poisoned, on edges the
 *   guards make dead.
 * - Runtime forks with a different constant on each edge (FOLD()), in
 *   `#pragma unroll` loops: each path carries its own constants, as a
 *   tool's "kind", "flags" or "bucket" does before it is stored. The kernel
 *   verifier prunes these paths (the constants are never precise); a pass
 *   that enumerates paths does not.
 * - bpf_loop() callbacks, many static __noinline sub-programs that return
 *   constants, and several entry programs per object sharing them.
 *
 * The present fields have 7.1's names and compatible types; layouts are
 * whatever clang picks (CO-RE relocates by name).
 */
#ifndef BTFGEN_GUARD_H
#define BTFGEN_GUARD_H

#include "../../tests/data/progs/fixture.h"
#define __VMLINUX_H__
#include <bpf/bpf_tracing.h>

enum bpf_map_type {
	BPF_MAP_TYPE_HASH = 1,
	BPF_MAP_TYPE_ARRAY = 2,
	BPF_MAP_TYPE_PERCPU_ARRAY = 6,
	BPF_MAP_TYPE_RINGBUF = 27,
};
typedef _Bool bool;
#define false 0
#define true 1
typedef unsigned int u32;
typedef unsigned long long u64;
typedef int pid_t;
typedef unsigned int dev_t;
typedef long long loff_t;
typedef unsigned long long sector_t;
typedef struct {
	unsigned int val;
} kuid_t;
typedef struct {
	long counter;
} atomic_long_t;

/* Present in 7.1. */
enum bpf_func_id {
	BPF_FUNC_ktime_get_boot_ns = 125,
	BPF_FUNC_loop = 181,
};
enum req_op {
	REQ_OP_READ = 0,
	REQ_OP_WRITE = 1,
	REQ_OP_FLUSH = 2,
	REQ_OP_DISCARD = 3,
	REQ_OP_SECURE_ERASE = 5,
	REQ_OP_ZONE_APPEND = 7,
	REQ_OP_WRITE_ZEROES = 9,
};
enum {
	TCP_ESTABLISHED = 1,
	TCP_SYN_SENT = 2,
	TCP_SYN_RECV = 3,
	TCP_FIN_WAIT1 = 4,
	TCP_CLOSE = 7,
	TCP_LISTEN = 10,
	TCP_NEW_SYN_RECV = 12,
	TCP_BOUND_INACTIVE = 13,
};
/* Removed before 7.1 (REQ_OP_WRITE_SAME in 5.18): its guard is false. */
enum req_op___old {
	REQ_OP_WRITE_SAME___old = 7,
};

struct pt_regs {
	unsigned long r15, r14, r13, r12, bp, bx, r11, r10, r9, r8;
	unsigned long ax, cx, dx, si, di, orig_ax, ip, cs, flags, sp, ss;
} __core;

struct qstr {
	union {
		struct {
			u32 hash;
			u32 len;
		};
		u64 hash_len;
	};
	const unsigned char *name;
} __core;

struct super_block {
	dev_t s_dev;
	unsigned long s_magic;
	unsigned long s_flags;
	char s_id[32];
	struct dentry *s_root;
} __core;

struct inode {
	unsigned short i_mode;
	unsigned int i_flags;
	struct super_block *i_sb;
	u64 i_ino;
	unsigned int __i_nlink;
	dev_t i_rdev;
	loff_t i_size;
	long long i_atime_sec;
	long long i_mtime_sec;
	long long i_ctime_sec;
	u32 i_atime_nsec;
	u32 i_generation;
	unsigned long long i_blocks;
} __core;

struct dentry {
	unsigned int d_flags;
	struct dentry *d_parent;
	struct qstr d_name;
	struct inode *d_inode;
	struct super_block *d_sb;
	unsigned long d_time;
} __core;

struct path {
	struct vfsmount *mnt;
	struct dentry *dentry;
} __core;

struct file {
	unsigned int f_mode;
	struct inode *f_inode;
	unsigned int f_flags;
	struct path f_path;
	loff_t f_pos;
} __core;

struct cred {
	kuid_t uid;
	kuid_t euid;
	kuid_t suid;
	kuid_t fsuid;
	unsigned int securebits;
} __core;

struct mm_struct {
	unsigned long task_size;
	int map_count;
	unsigned long hiwater_rss;
	unsigned long total_vm;
	unsigned long arg_start;
	unsigned long arg_end;
	unsigned long env_start;
} __core;

struct signal_struct {
	int nr_threads;
	int group_exit_code;
	unsigned int flags;
	unsigned long nvcsw;
	u64 utime;
	u64 stime;
} __core;

struct sched_entity {
	u64 exec_start;
	u64 sum_exec_runtime;
	u64 vruntime;
	u64 nr_migrations;
	int depth;
	unsigned char on_rq;
} __core;

struct kernfs_node {
	struct kernfs_node *__parent;
	const char *name;
	u64 id;
	unsigned short flags;
} __core;

struct cgroup {
	int level;
	int max_depth;
	struct kernfs_node *kn;
} __core;

struct css_set {
	struct cgroup *dfl_cgrp;
	int nr_tasks;
} __core;

struct task_struct {
	unsigned int __state;
	unsigned int flags;
	int on_cpu;
	int wake_cpu;
	int prio;
	int static_prio;
	int normal_prio;
	unsigned int rt_priority;
	struct sched_entity se;
	unsigned int policy;
	int nr_cpus_allowed;
	struct mm_struct *mm;
	struct mm_struct *active_mm;
	int exit_code;
	int exit_signal;
	unsigned int personality;
	pid_t pid;
	pid_t tgid;
	struct task_struct *real_parent;
	struct task_struct *parent;
	struct task_struct *group_leader;
	u64 utime;
	u64 stime;
	unsigned long nvcsw;
	unsigned long nivcsw;
	u64 start_time;
	unsigned long min_flt;
	unsigned long maj_flt;
	const struct cred *real_cred;
	const struct cred *cred;
	char comm[16];
	struct signal_struct *signal;
	struct css_set *cgroups;
} __core;

struct gendisk {
	int major;
	int first_minor;
	int minors;
	char disk_name[32];
	int flags;
	u64 diskseq;
} __core;

struct block_device {
	sector_t bd_start_sect;
	sector_t bd_nr_sectors;
	struct gendisk *bd_disk;
	dev_t bd_dev;
	int bd_holders;
} __core;

struct request_queue {
	struct gendisk *disk;
} __core;

struct bio {
	struct bio *bi_next;
	struct block_device *bi_bdev;
	unsigned int bi_opf;
	unsigned short bi_flags;
	unsigned short bi_ioprio;
	unsigned short bi_vcnt;
	u64 issue_time_ns;
} __core;

struct request {
	struct request_queue *q;
	unsigned int cmd_flags;
	unsigned int rq_flags;
	int tag;
	unsigned int timeout;
	unsigned int __data_len;
	sector_t __sector;
	struct bio *bio;
	struct block_device *part;
	u64 alloc_time_ns;
	u64 start_time_ns;
	u64 io_start_time_ns;
	unsigned short nr_phys_segments;
	unsigned long deadline;
} __core;

struct in6_addr {
	union {
		unsigned char u6_addr8[16];
		__be32 u6_addr32[4];
	} in6_u;
};

struct sock_common {
	union {
		u64 skc_addrpair;
		struct {
			__be32 skc_daddr;
			__be32 skc_rcv_saddr;
		};
	};
	union {
		u32 skc_portpair;
		struct {
			__be16 skc_dport;
			__u16 skc_num;
		};
	};
	unsigned short skc_family;
	volatile unsigned char skc_state;
	int skc_bound_dev_if;
	struct in6_addr skc_v6_daddr;
	struct in6_addr skc_v6_rcv_saddr;
	int skc_incoming_cpu;
	u32 skc_rcv_wnd;
} __core;

struct sock {
	struct sock_common __sk_common;
	int sk_rcvbuf;
	int sk_err;
	int sk_sndbuf;
	__u16 sk_protocol;
	__u16 sk_type;
	u32 sk_mark;
	u32 sk_priority;
	unsigned long sk_pacing_rate;
	struct socket *sk_socket;
} __core;

struct inet_sock {
	struct sock sk;
	__be16 inet_sport;
	__be16 inet_dport;
	unsigned long inet_flags;
	int uc_index;
} __core;

struct tcp_sock {
	u32 max_window;
	u32 snd_wnd;
	u32 mss_cache;
	u32 snd_cwnd;
	u32 lost_out;
	u32 sacked_out;
	u32 srtt_us;
	u32 mdev_us;
	u32 rttvar_us;
	u32 retrans_out;
	u32 total_retrans;
	u32 segs_in;
	u32 segs_out;
	u64 bytes_received;
	u64 bytes_acked;
	u64 bytes_sent;
	u32 snd_ssthresh;
	u32 rcv_wnd;
	u32 delivered;
} __core;

struct net_device {
	char name[16];
	int ifindex;
	unsigned int flags;
	unsigned int mtu;
	unsigned short hard_header_len;
	unsigned int real_num_tx_queues;
	unsigned int real_num_rx_queues;
} __core;

struct sk_buff {
	struct net_device *dev;
	struct sock *sk;
	long long tstamp;
	unsigned int len;
	unsigned int data_len;
	unsigned short protocol;
	unsigned short transport_header;
	unsigned short network_header;
	unsigned short mac_header;
	int skb_iif;
	u32 hash;
	u32 mark;
	unsigned int truesize;
	unsigned char *head;
	unsigned char *data;
} __core;

struct mutex {
	atomic_long_t owner;
} __core;

struct rw_semaphore {
	atomic_long_t count;
	atomic_long_t owner;
} __core;

/* Missing from 7.1: the fields and types older kernels had. */
struct task_struct___old {
	long state;
} __core;
struct request___old {
	struct gendisk *rq_disk;
} __core;
struct bio___old {
	struct gendisk *bi_disk;
	unsigned char bi_partno;
} __core;
struct kernfs_node___old {
	struct kernfs_node *parent;
} __core;
struct timespec64___old {
	long long tv_sec;
	long tv_nsec;
} __core;
struct inode___old {
	struct timespec64___old i_atime;
	struct timespec64___old i_mtime;
} __core;
struct sock___old {
	unsigned int sk_protocol_old_bits;
} __core;
struct mm_rss_stat___old {
	atomic_long_t count[4];
} __core;
struct mm_struct___old {
	struct mm_rss_stat___old rss_stat;
} __core;

struct event {
	u64 a[16];
};

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 16);
} events SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, u32);
	__type(value, struct event);
} stash SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, u32);
	__type(value, struct event);
} scratch SEC(".maps");

/* A field when the target has it, else FALLBACK: a branch on a relocated constant, the read
 * (poisoned when the field is missing) on its live edge. */
#define GET_OR(p, field, fallback)                                             \
	(bpf_core_field_exists((p)->field) ? (u64)BPF_CORE_READ(p, field)      \
					   : (u64)(fallback))

/* An enum value when the target has it, else FALLBACK. */
#define ENUM_OR(type, value, fallback)                                         \
	(bpf_core_enum_value_exists(type, value) ?                             \
		 (u64)bpf_core_enum_value(type, value) :                       \
		 (u64)(fallback))

/* Folds a runtime comparison into H: a fork, with a different constant on each edge. */
#define FOLD(h, cond, a, b) ((h) = (h) * 33 + ((cond) ? (a) : (b)))

/* The current task, as libbpf-tools' programs reach it. */
#define current_task() ((struct task_struct *)bpf_get_current_task())

static __always_inline struct event *scratch_event(void)
{
	u32 zero = 0;

	return bpf_map_lookup_elem(&scratch, &zero);
}

static __always_inline void emit(void *ctx, struct event *e)
{
	bpf_ringbuf_output(&events, e, sizeof(*e), 0);
}

#endif
