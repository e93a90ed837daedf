/* Nettle's SHA-256 alone (libnettle, without libhogweed and GMP): what
 * the light modules hash with (ObscuraFiles' Checksum). */
#include <nettle/sha2.h>
