/* Unit B: the shared types again (dedup merges them) and another `struct same_name`. */
#include "types.h"

struct same_name {
	char tag;
	struct list_head link;
};

struct all all_b;
struct same_name same_b;

int b_entry(struct all *p, struct same_name *s, u64 v)
{
	return p->color + s->tag + (int)v;
}
