// SPDX-License-Identifier: MIT OR Apache-2.0
/* Target for enums.bpf.o (also compiled big-endian, btf__enums_be): values
 * renumbered and reordered, EN_GONE and EN_BIG_GONE missing, en_small an
 * ENUM64 here, en_neg's values moved, no en_missing, en_holder's members
 * swapped. */
enum en_color { EN_BLUE = 1, EN_RED = 7, EN_GREEN = 42, EN_EXTRA = 9 };
typedef enum en_color en_color_t;

enum en_big { EN_BIG_B = 0xfedcba9876543210ULL, EN_BIG_A = 0x300000000ULL };

enum en_neg { EN_NEG_B = 2, EN_NEG_A = -0x500000000LL };

enum en_small { EN_S1 = 0x100000001ULL, EN_S2 = 0x100000002ULL };

struct en_holder {
	enum en_neg n;
	enum en_color c;
};

void btf__enums(en_color_t c, enum en_big b, enum en_small s, struct en_holder *h) {}
