// SPDX-License-Identifier: MIT OR Apache-2.0
/*
 * The example kernel: a small kernel-like BTF the repository ships, used by
 * `btfgen min-core-btf` (no arguments) where /sys/kernel/btf/vmlinux does not
 * exist. Its types are laid out as on a 64-bit kernel of the 6.x series (field
 * order, anonymous struct in mm_struct, ENUM64 perf_callchain_context) with
 * enough unrelated members and types around them that minimizing shows.
 */
typedef unsigned char __u8;
typedef unsigned int __u32;
typedef unsigned long long __u64;
typedef int __s32;
typedef int pid_t;

typedef struct {
	int counter;
} atomic_t;

typedef struct {
	long counter;
} atomic64_t;

struct list_head {
	struct list_head *next, *prev;
};

struct rb_node {
	unsigned long __rb_parent_color;
	struct rb_node *rb_right;
	struct rb_node *rb_left;
};

struct mm_struct {
	struct {
		struct {
			atomic_t mm_count;
		};
		unsigned long mmap_base;
		unsigned long task_size;
		atomic_t mm_users;
		int map_count;
		unsigned long hiwater_rss;
		unsigned long total_vm;
		unsigned long locked_vm;
		unsigned long arg_start, arg_end, env_start, env_end;
		struct list_head mmlist;
	};
	unsigned long cpu_bitmap[];
};

struct sched_entity {
	unsigned long load;
	struct rb_node run_node;
	__u64 exec_start;
	__u64 sum_exec_runtime;
};

struct task_struct {
	struct {
		unsigned int flags;
	} thread_info;
	unsigned int __state;
	void *stack;
	atomic_t usage;
	unsigned int flags;
	unsigned int ptrace;
	int on_cpu;
	int prio;
	struct sched_entity se;
	struct list_head tasks;
	struct mm_struct *mm;
	struct mm_struct *active_mm;
	int exit_state;
	int exit_code;
	pid_t pid;
	pid_t tgid;
	struct task_struct *real_parent;
	struct task_struct *parent;
	struct list_head children;
	__u64 start_time;
	char comm[16];
	atomic64_t refs;
};

enum pid_type { PIDTYPE_PID, PIDTYPE_TGID, PIDTYPE_PGID, PIDTYPE_SID, PIDTYPE_MAX };

enum perf_callchain_context {
	PERF_CONTEXT_HV = (__u64)-32,
	PERF_CONTEXT_KERNEL = (__u64)-128,
	PERF_CONTEXT_USER = (__u64)-512,
	PERF_CONTEXT_GUEST = (__u64)-2048,
	PERF_CONTEXT_MAX = (__u64)-4095,
};

struct task_struct *example_current_task;
struct mm_struct *example_init_mm;
enum pid_type example_pid_type;
enum perf_callchain_context example_context;
