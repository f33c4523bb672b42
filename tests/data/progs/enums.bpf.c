// SPDX-License-Identifier: MIT OR Apache-2.0
/*
 * Enum relocations (enumval_exists, enumval_value) for ENUM and ENUM64
 * (unsigned and signed), through a typedef, with flavored enumerators, for a
 * value and a whole enum the target lacks (exists -> 0, value -> poisoned),
 * local ENUM against target ENUM64, plus signed/type_matches/type_size on
 * enums. Also built for big-endian (enums.bpfeb.o).
 */
#include "fixture.h"

enum en_color { EN_RED, EN_GREEN = 5, EN_BLUE, EN_GONE = 100 };
typedef enum en_color en_color_t;

/* unsigned ENUM64 */
enum en_big {
	EN_BIG_A = 0x100000000ULL,
	EN_BIG_B = 0xffffffff00000000ULL,
	EN_BIG_GONE = 0x200000000ULL,
};

/* signed ENUM64 */
enum en_neg { EN_NEG_A = -0x100000000LL, EN_NEG_B = 1 };

/* ENUM here, ENUM64 in the target */
enum en_small { EN_S1 = 1, EN_S2 = 2 };

/* older flavor of en_color, with flavored enumerator names */
enum en_color___old { EN_RED___old = 0, EN_YELLOW___old = 3 };

/* nowhere in the target */
enum en_missing { EN_MISSING_X = 7 };

struct en_holder {
	enum en_color c;
	enum en_neg n;
} __core;

SEC("raw_tp/sys_enter")
int enums_values(void *ctx)
{
	long sum = 0;

	sum += bpf_core_enum_value(enum en_color, EN_GREEN);
	sum += bpf_core_enum_value(en_color_t, EN_BLUE);
	sum += bpf_core_enum_value(enum en_big, EN_BIG_B);
	sum += bpf_core_enum_value(enum en_neg, EN_NEG_A);
	sum += bpf_core_enum_value(enum en_small, EN_S2);
	sum += bpf_core_enum_value(enum en_color___old, EN_RED___old);
	return sum;
}

SEC("raw_tp/sys_enter")
int enums_exist(void *ctx)
{
	long sum = 0;

	sum += bpf_core_enum_value_exists(enum en_color, EN_BLUE);
	sum += bpf_core_enum_value_exists(enum en_color, EN_GONE);
	sum += bpf_core_enum_value_exists(enum en_big, EN_BIG_GONE);
	sum += bpf_core_enum_value_exists(enum en_color___old, EN_YELLOW___old);
	sum += bpf_core_enum_value_exists(enum en_missing, EN_MISSING_X);
	if (bpf_core_enum_value_exists(enum en_color, EN_GONE))
		sum += bpf_core_enum_value(enum en_color, EN_GONE);
	return sum;
}

SEC("raw_tp/sys_exit")
int enums_misc(void *ctx)
{
	struct en_holder *h = fixture_ptr(struct en_holder);
	long sum = 0;

	/* unguarded values the target lacks: poisoned */
	sum += bpf_core_enum_value(enum en_big, EN_BIG_GONE);
	sum += bpf_core_enum_value(enum en_missing, EN_MISSING_X);
	sum += core_field_signed(h, n);
	sum += core_field_signed(h, c);
	sum += bpf_core_type_matches(enum en_color);
	sum += bpf_core_type_matches(enum en_big);
	sum += bpf_core_type_matches(enum en_neg);
	sum += bpf_core_type_size(enum en_small);
	return sum;
}

char LICENSE[] SEC("license") = "GPL";
