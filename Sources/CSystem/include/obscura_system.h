/* obscura_system.h — kernel calls Swift cannot make directly (ioctl is
 * variadic) or does not see (memfd_create). Plain wrappers, no policy. */
#ifndef OBSCURA_SYSTEM_H
#define OBSCURA_SYSTEM_H
#include <stdint.h>

/* ioctl(fd, request, arg); returns the result, -1 with errno on failure. */
int obscura_ioctl(int fd, unsigned long request, void *arg);
/* DMA_BUF_IOCTL_SYNC: begin (start=1) or end (start=0) CPU access. */
int obscura_dmabuf_sync(int fd, int start, int write);
/* memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING). */
int obscura_memfd(const char *name);
#endif
