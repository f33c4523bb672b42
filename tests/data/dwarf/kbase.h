/* The "kernel" of the split BTF fixtures: types kbase.c (the base) and kmod.c (a module of
 * it) share, which the module's split BTF takes from the base. */
#ifndef KBASE_H
#define KBASE_H

typedef unsigned int u32;
typedef unsigned long long u64;

struct kb_list {
	struct kb_list *next, *prev;
};

enum kb_state { KB_IDLE, KB_BUSY = 4 };

/* Defined in kbase.c only: the module sees a forward declaration. */
struct kb_driver;

struct kb_device {
	const char *name;
	u32 id;
	enum kb_state state;
	struct kb_list node;
	struct kb_driver *drv;
	int (*probe)(struct kb_device *dev, unsigned long flags);
	u64 stats[4];
};

int kb_register(struct kb_device *dev);

#endif
