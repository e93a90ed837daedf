#define _GNU_SOURCE
#include "obscura_system.h"
#include <linux/dma-buf.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <pthread.h>
#include <string.h>
#include <errno.h>

int obscura_ioctl(int fd, unsigned long request, void *arg)
{
    int r;
    do {
        r = ioctl(fd, request, arg);
    } while (r < 0 && errno == EINTR);
    return r;
}

int obscura_dmabuf_sync(int fd, int start, int write)
{
    struct dma_buf_sync sync = { 0 };
    sync.flags = (start ? DMA_BUF_SYNC_START : DMA_BUF_SYNC_END) |
                 (write ? DMA_BUF_SYNC_RW : DMA_BUF_SYNC_READ);
    return obscura_ioctl(fd, DMA_BUF_IOCTL_SYNC, &sync);
}

int obscura_memfd(const char *name)
{
    return memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING);
}

int obscura_eventfd(void)
{
    return eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
}

int obscura_name_thread(pthread_t thread, const char *name)
{
    char cut[16];
    strncpy(cut, name, sizeof(cut) - 1);
    cut[sizeof(cut) - 1] = 0;
    return pthread_setname_np(thread, cut);
}

int obscura_accept(int fd)
{
    return accept4(fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
}
