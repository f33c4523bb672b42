// SPDX-License-Identifier: MIT OR Apache-2.0
/* Target for types.bpf.o: different sizes and layouts, no ty_missing,
 * ty_match_pos with extra members, ty_match_neg's 'b' an int,
 * ty_match_arr's array longer, ty_e an 8-byte enum (so it no longer
 * matches), ty_f renumbered with an extra enumerator (still matches). */
struct ty_a {
	long y;
	int x;
	int extra;
};

union ty_u {
	long l;
	int i;
	char c[16];
};

struct ty_node {
	long key;
	struct ty_node *next;
};

enum ty_e { TY_E2 = 2, TY_E1 = 0x100000000ULL };

enum ty_f { TY_F0 = 10, TY_F2 = 20, TY_F1 = 30 };

typedef struct ty_a ty_a_t;
typedef struct ty_node **ty_node_pp;
typedef int (*ty_fn_t)(struct ty_a *, int);

struct ty_match_pos {
	long extra;
	struct ty_a *p;
	int arr[4];
	long b;
	enum ty_f f;
	int a;
};

struct ty_match_neg {
	int a;
	int b;
};

struct ty_match_arr {
	int arr[5];
};

/* BPF functions take at most five arguments */
void btf__types(struct ty_a *a, union ty_u *u, enum ty_e e, ty_a_t *at, ty_node_pp pp) {}
void btf__types3(struct ty_node *n) {}
void btf__types2(ty_fn_t fn, struct ty_match_pos *p, struct ty_match_neg *n,
		 struct ty_match_arr *ar) {}
