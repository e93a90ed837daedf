/* Nettle's SHA-256: it picks the CPU's SHA instructions at run time (x86
 * SHA-NI, Armv8 crypto extensions) and plain C elsewhere. */
#include <nettle/sha2.h>
