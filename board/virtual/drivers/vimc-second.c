// SPDX-License-Identifier: GPL-2.0
/*
 * A second vimc device for the virtual board: "vimc.1", beside the "vimc.0"
 * that vimc registers itself. vimc's own driver binds it, so it is a whole
 * second vimc (its media graph, sensors and capture nodes), matched by
 * libcamera's vimc pipeline handler as a second camera
 * ("platform/vimc.1 Sensor B"). Loaded only when a test asks for two
 * cameras (board/virtual/second-camera), after vimc.
 */
#include <linux/err.h>
#include <linux/module.h>
#include <linux/platform_device.h>

static struct platform_device *second;

static int __init vimc_second_init(void)
{
	second = platform_device_register_simple("vimc", 1, NULL, 0);
	return PTR_ERR_OR_ZERO(second);
}

static void __exit vimc_second_exit(void)
{
	platform_device_unregister(second);
}

module_init(vimc_second_init);
module_exit(vimc_second_exit);
MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("A second vimc device, bound by vimc's driver");
