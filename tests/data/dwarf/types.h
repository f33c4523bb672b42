/* Types shared by both units: the same definitions, which dedup must merge. */
#ifndef TYPES_H
#define TYPES_H

typedef unsigned int u32;
typedef unsigned long long u64;
typedef signed char s8;

struct list_head {
	struct list_head *next, *prev;
};

/* Bit-fields, across storage units and of several base types. */
struct flags {
	unsigned int a : 1;
	unsigned int b : 3;
	int c : 5;
	unsigned char d : 2;
	unsigned long long e : 40;
	u32 f : 7;
	_Bool g : 1;
	long h;
};

enum color { RED, GREEN = 5, BLUE };
enum signed_e { NEG = -2, POS = 3 };
enum big_e { SMALL = 1, HUGE_VAL64 = 0x1234567890ULL };
enum neg_big { NB_MIN = -0x100000000LL, NB_ZERO = 0 };
enum unsigned_top { UT = 0x80000000U };

struct inner_anon {
	int kind;
	union {
		int i;
		float f;
		struct {
			short lo, hi;
		};
	};
	struct {
		unsigned x : 4, y : 4;
	} named;
};

struct flex {
	u32 len;
	unsigned char data[];
};

struct __attribute__((packed)) packed_s {
	char c;
	int i;
	short s;
};

struct aligned_s {
	char c;
	int i __attribute__((aligned(16)));
} __attribute__((aligned(32)));

struct cv {
	const int ci;
	volatile long vl;
	const volatile char *cvp;
	int *restrict rp;
	const char *const cpc;
};

struct arrays {
	int one[4];
	int two[2][3];
	char three[2][3][4];
	struct list_head heads[2];
	int zero[0];
};

typedef int (*handler_t)(int, const char *);
typedef int (*vprint_t)(const char *fmt, ...);
typedef void (*noargs_t)(void);

struct ops {
	handler_t handle;
	vprint_t print;
	noargs_t reset;
	void (*direct)(struct ops *self, u64 val);
	long (*(*ret_ptr)(int))(void);
};

struct opaque;      /* never defined anywhere: stays a forward */
union opaque_u;     /* likewise, a union forward */
struct defined_later;

struct uses_fwd {
	struct opaque *o;
	union opaque_u *u;
	struct defined_later *d;
};

struct floats {
	float f;
	double d;
	long double ld;
};

struct all {
	struct flags flags;
	enum color color;
	enum signed_e se;
	enum big_e be;
	enum neg_big nb;
	enum unsigned_top ut;
	struct inner_anon ia;
	struct packed_s ps;
	struct aligned_s as;
	struct cv cv;
	struct arrays arr;
	struct ops ops;
	struct uses_fwd uf;
	struct floats fl;
	struct list_head list;
	s8 small;
	u64 wide;
	unsigned __int128 u128;
	__int128 s128;
};

#endif
