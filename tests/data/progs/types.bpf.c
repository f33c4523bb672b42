// SPDX-License-Identifier: MIT OR Apache-2.0
/*
 * Type-based relocations: local_type_id, target_type_id, type_exists,
 * type_size and type_matches (positive and negative), on structs, unions,
 * enums, typedefs (of a struct, of a pointer-to-pointer, of a function
 * pointer) and on a type the target lacks.
 */
#include "fixture.h"

struct ty_a {
	int x;
	long y;
};

struct ty_missing {
	int z;
};

union ty_u {
	int i;
	char c[8];
};

struct ty_node {
	struct ty_node *next;
};

enum ty_e { TY_E1, TY_E2 };

/* same size in the target (which has more enumerators): matches */
enum ty_f { TY_F1, TY_F2 };

typedef struct ty_a ty_a_t;
typedef struct ty_node **ty_node_pp;
typedef int (*ty_fn_t)(struct ty_a *, int);

/* target has every member with the same type (plus more): matches */
struct ty_match_pos {
	int a;
	long b;
	struct ty_a *p;
	enum ty_f f;
	int arr[4];
};

/* target's 'b' is an int, so no match */
struct ty_match_neg {
	int a;
	short b;
};

/* target's array has a different length, so no match */
struct ty_match_arr {
	int arr[4];
};

SEC("raw_tp/sys_enter")
int types_ids(void *ctx)
{
	long sum = 0;

	sum += bpf_core_type_id_local(struct ty_a);
	sum += bpf_core_type_id_kernel(struct ty_a);
	sum += bpf_core_type_id_kernel(ty_a_t);
	sum += bpf_core_type_id_kernel(struct ty_missing);
	return sum;
}

SEC("raw_tp/sys_enter")
int types_exist(void *ctx)
{
	long sum = 0;

	sum += bpf_core_type_exists(struct ty_a);
	sum += bpf_core_type_exists(struct ty_missing);
	sum += bpf_core_type_exists(ty_node_pp);
	sum += bpf_core_type_exists(ty_fn_t);
	sum += bpf_core_type_size(union ty_u);
	sum += bpf_core_type_size(ty_a_t);
	sum += bpf_core_type_size(enum ty_e);
	sum += bpf_core_type_size(struct ty_missing);
	return sum;
}

SEC("raw_tp/sys_exit")
int types_match(void *ctx)
{
	long sum = 0;

	sum += bpf_core_type_matches(struct ty_match_pos);
	sum += bpf_core_type_matches(struct ty_match_neg);
	sum += bpf_core_type_matches(struct ty_match_arr);
	sum += bpf_core_type_matches(enum ty_e);
	sum += bpf_core_type_matches(enum ty_f);
	sum += bpf_core_type_matches(ty_fn_t);
	sum += bpf_core_type_matches(ty_node_pp);
	sum += bpf_core_type_matches(union ty_u);
	sum += bpf_core_type_matches(struct ty_missing);
	return sum;
}

char LICENSE[] SEC("license") = "GPL";
