/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/*
 * The kernel types the benchmark programs read, declared as CO-RE needs them
 * (field subsets, relocated by name), in place of the vmlinux.h that
 * libbpf-tools generates: the objects then do not depend on the kernel they
 * were built on. Names and layouts follow Linux 6.x.
 */
#ifndef BTFGEN_BENCH_KERNEL_H
#define BTFGEN_BENCH_KERNEL_H

#include "../../tests/data/progs/fixture.h"
/* What vmlinux.h declares: kernel register names in struct pt_regs. */
#define __VMLINUX_H__
#include <bpf/bpf_tracing.h>

/* From <linux/bpf.h>, which vmlinux.h would bring. */
enum bpf_map_type {
	BPF_MAP_TYPE_HASH = 1,
	BPF_MAP_TYPE_ARRAY = 2,
	BPF_MAP_TYPE_PERF_EVENT_ARRAY = 4,
	BPF_MAP_TYPE_PERCPU_ARRAY = 6,
	BPF_MAP_TYPE_RINGBUF = 27,
};
#define BPF_NOEXIST 1
#define BPF_F_CURRENT_CPU 0xffffffffULL
typedef _Bool bool;

typedef int pid_t;
typedef unsigned int u32;
typedef unsigned long long u64;
typedef unsigned int dev_t;
typedef unsigned short umode_t;
typedef long long loff_t;
typedef unsigned long long sector_t;
typedef unsigned int blk_opf_t;
typedef struct {
	unsigned int val;
} kuid_t;

struct pt_regs {
	unsigned long r15, r14, r13, r12, bp, bx, r11, r10, r9, r8;
	unsigned long ax, cx, dx, si, di, orig_ax, ip, cs, flags, sp, ss;
} __core;

struct trace_entry {
	unsigned short type;
	unsigned char flags;
	unsigned char preempt_count;
	int pid;
} __core;

struct trace_event_raw_sys_enter {
	struct trace_entry ent;
	long id;
	unsigned long args[6];
} __core;

struct trace_event_raw_sys_exit {
	struct trace_entry ent;
	long id;
	long ret;
} __core;

struct trace_event_raw_sched_switch {
	struct trace_entry ent;
	char prev_comm[16];
	pid_t prev_pid;
	int prev_prio;
	long prev_state;
	char next_comm[16];
	pid_t next_pid;
	int next_prio;
} __core;

struct trace_event_raw_sched_wakeup_template {
	struct trace_entry ent;
	char comm[16];
	pid_t pid;
	int prio;
	int target_cpu;
} __core;

struct trace_event_raw_signal_generate {
	struct trace_entry ent;
	int sig;
	int errno;
	int code;
	char comm[16];
	pid_t pid;
	int group;
	int result;
} __core;

struct ns_common {
	unsigned int inum;
} __core;

struct mnt_namespace {
	struct ns_common ns;
} __core;

struct pid_namespace {
	struct ns_common ns;
} __core;

struct nsproxy {
	struct mnt_namespace *mnt_ns;
	struct pid_namespace *pid_ns_for_children;
} __core;

struct cred {
	kuid_t uid;
	kuid_t euid;
} __core;

struct mm_struct {
	unsigned long arg_start;
	unsigned long arg_end;
	unsigned long total_vm;
} __core;

struct signal_struct {
	int nr_threads;
} __core;

struct task_struct {
	unsigned int __state;
	unsigned int flags;
	int prio;
	pid_t pid;
	pid_t tgid;
	int exit_code;
	int exit_signal;
	struct task_struct *real_parent;
	struct task_struct *group_leader;
	const struct cred *real_cred;
	struct mm_struct *mm;
	struct signal_struct *signal;
	struct nsproxy *nsproxy;
	char comm[16];
	u64 start_time;
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

struct inode {
	umode_t i_mode;
	unsigned long i_ino;
	loff_t i_size;
} __core;

struct dentry {
	struct dentry *d_parent;
	struct qstr d_name;
	struct inode *d_inode;
} __core;

struct path {
	struct dentry *dentry;
} __core;

struct file {
	struct path f_path;
	struct inode *f_inode;
	unsigned int f_flags;
} __core;

struct gendisk {
	int major;
	int first_minor;
	char disk_name[32];
} __core;

struct block_device {
	dev_t bd_dev;
	struct gendisk *bd_disk;
} __core;

struct request_queue {
	struct gendisk *disk;
} __core;

struct request {
	struct request_queue *q;
	blk_opf_t cmd_flags;
	unsigned int __data_len;
	sector_t __sector;
	struct block_device *part;
} __core;

struct bio {
	struct block_device *bi_bdev;
	blk_opf_t bi_opf;
} __core;

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
} __core;

struct sock {
	struct sock_common __sk_common;
	__u16 sk_protocol;
	__u16 sk_type;
} __core;

struct inet_sock {
	struct sock sk;
	__be16 inet_sport;
} __core;

struct tcp_sock {
	u32 srtt_us;
	u64 bytes_received;
	u64 bytes_acked;
} __core;

struct socket {
	short type;
	struct sock *sk;
} __core;

struct in_addr {
	__be32 s_addr;
};

struct sockaddr_in {
	unsigned short sin_family;
	__be16 sin_port;
	struct in_addr sin_addr;
};

struct oom_control {
	struct task_struct *chosen;
	unsigned long totalpages;
	long chosen_points;
} __core;

struct irqaction {
	const char *name;
} __core;

#endif
