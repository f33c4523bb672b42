// SPDX-License-Identifier: MIT OR Apache-2.0
/*
 * For the running kernel, loaded by tests/kernel_load.rs both ways (not in
 * the manifest: libbpf 1.1 poisons it). `*t->comm` is a one-byte load
 * through the array member `comm`, declared here with 8 elements where every
 * kernel has 16: libbpf 1.6+ and kernels with the same fix size the load by
 * one element and relocate it, libbpf 1.1 sizes it by the whole array and
 * poisons it. `t->comm[1]` is an element access, relocated by both.
 */
#include "fixture.h"

struct task_struct {
	int pid;
	char comm[8];
} __core;

SEC("raw_tp/sys_enter")
int kmemsize_comm(void *ctx)
{
	struct task_struct *t = bpf_get_current_task_btf();

	return *t->comm + t->comm[1] + t->pid;
}

char LICENSE[] SEC("license") = "GPL";
