/* obscura_system.h — kernel calls Swift cannot make directly (ioctl is
 * variadic) or does not see (memfd_create). Plain wrappers, no policy. */
#ifndef OBSCURA_SYSTEM_H
#define OBSCURA_SYSTEM_H
#include <stdint.h>
#include <pthread.h>
#include <stddef.h>

/* ioctl(fd, request, arg); returns the result, -1 with errno on failure. */
int obscura_ioctl(int fd, unsigned long request, void *arg);
/* DMA_BUF_IOCTL_SYNC: begin (start=1) or end (start=0) CPU access. */
int obscura_dmabuf_sync(int fd, int start, int write);
/* memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING). */
int obscura_memfd(const char *name);
/* DMA_HEAP_IOCTL_ALLOC on an open /dev/dma_heap/<name>: a new dmabuf of
 * `length` bytes (read-write, close-on-exec), or -1 with errno (ENOSYS when
 * built without linux/dma-heap.h). */
int obscura_dma_heap_alloc(int heap, uint64_t length);
/* A dmabuf over the whole of memfd `memfd` (sealed against shrinking here)
 * through an open /dev/udmabuf (UDMABUF_CREATE), or -1 with errno (ENOSYS
 * when built without linux/udmabuf.h). */
int obscura_udmabuf_create(int udmabuf, int memfd, uint64_t length);
/* eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK). */
int obscura_eventfd(void);
/* pthread_setname_np(thread, name), the name cut to 15 bytes. */
int obscura_name_thread(pthread_t thread, const char *name);
/* pipe2(fds, O_CLOEXEC), which needs _GNU_SOURCE. */
int obscura_pipe_cloexec(int fds[2]);
/* accept4(fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC). */
int obscura_accept(int fd);
/* The kernel's NTP state, read only (adjtimex with no modes): 1 when the
 * clock is synchronised, 0 when not (TIME_ERROR or STA_UNSYNC), -1 with
 * errno when it cannot be asked (a seccomp filter denying @clock). */
int obscura_clock_synchronized(void);
/* `length` bytes from the kernel's random number generator (getrandom,
 * blocking until it is seeded): 0, or -1 with errno. */
int obscura_random(void *buffer, size_t length);
/* setxattr(path, name, value, size, 0): 0, or -1 with errno (EOPNOTSUPP
 * where the filesystem keeps no extended attributes). */
int obscura_set_attribute(const char *path, const char *name, const void *value, size_t size);
#endif
