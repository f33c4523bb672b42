/* The base of the split BTF fixtures: a small "vmlinux". */
#include "kbase.h"

struct kb_driver {
	const char *name;
	int (*bind)(struct kb_device *dev);
	struct kb_list drivers;
};

/* A module defines another struct of this name. */
struct kb_conf {
	int a;
	int b;
};

struct kb_driver kb_default_driver;
struct kb_conf kb_conf_global;
struct kb_list kb_devices;

int kb_register(struct kb_device *dev)
{
	dev->node.next = kb_devices.next;
	kb_devices.next = &dev->node;
	return dev->drv ? dev->drv->bind(dev) : (int)dev->id;
}

int kb_configure(struct kb_conf *conf)
{
	return conf->a + conf->b;
}
