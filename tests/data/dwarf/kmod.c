/* A module of kbase.c: the base's types through kbase.h (struct kb_device equal to the
 * base's, its struct kb_driver only declared), a struct kb_conf laid out unlike the base's,
 * and types of its own. */
#include "kbase.h"

struct kb_conf {
	long x;
	char tag[8];
};

enum kmod_mode { KMOD_OFF, KMOD_ON, KMOD_AUTO = 7 };

typedef int (*kmod_cb_t)(struct kb_device *dev, void *arg);

struct kmod_priv {
	struct kb_device dev;
	struct kb_driver *drv;
	struct kb_conf conf;
	enum kmod_mode mode;
	kmod_cb_t callbacks[2];
	union {
		int i;
		float f;
	} u;
	unsigned int active : 1, level : 3;
	const volatile u64 *counter;
	struct kmod_priv *next;
};

struct kmod_priv kmod_instance;

static int kmod_cb(struct kb_device *dev, void *arg)
{
	return dev->id + (arg != 0);
}

int kmod_init(struct kmod_priv *priv, struct kb_conf *conf)
{
	priv->conf = *conf;
	priv->callbacks[0] = kmod_cb;
	priv->drv = priv->dev.drv;
	return kb_register(&priv->dev) + priv->mode;
}
