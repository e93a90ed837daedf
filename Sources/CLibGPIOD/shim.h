/* CGPIO includes gpiod.h itself; this module carries libgpiod's pkg-config flags. */
