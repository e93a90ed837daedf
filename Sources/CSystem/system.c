#define _GNU_SOURCE
#include "obscura_system.h"
#include <linux/dma-buf.h>
#if __has_include(<linux/dma-heap.h>)
#include <linux/dma-heap.h>
#endif
#if __has_include(<linux/udmabuf.h>)
#include <linux/udmabuf.h>
#endif
#include <fcntl.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/random.h>
#include <sys/xattr.h>
#include <sys/mman.h>
#include <sys/eventfd.h>
#include <sys/timex.h>
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

int obscura_dma_heap_alloc(int heap, uint64_t length)
{
#if __has_include(<linux/dma-heap.h>)
    struct dma_heap_allocation_data data = { 0 };
    data.len = length;
    data.fd_flags = O_RDWR | O_CLOEXEC;
    if (obscura_ioctl(heap, DMA_HEAP_IOCTL_ALLOC, &data) < 0)
        return -1;
    return (int)data.fd;
#else
    (void)heap; (void)length;
    errno = ENOSYS;
    return -1;
#endif
}

int obscura_udmabuf_create(int udmabuf, int memfd, uint64_t length)
{
#if __has_include(<linux/udmabuf.h>)
    struct udmabuf_create create = { 0 };
    if (fcntl(memfd, F_ADD_SEALS, F_SEAL_SHRINK) < 0)
        return -1;
    create.memfd = (uint32_t)memfd;
    create.flags = UDMABUF_FLAGS_CLOEXEC;
    create.offset = 0;
    create.size = length;
    return obscura_ioctl(udmabuf, UDMABUF_CREATE, &create);
#else
    (void)udmabuf; (void)memfd; (void)length;
    errno = ENOSYS;
    return -1;
#endif
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

int obscura_pipe_cloexec(int fds[2])
{
    return pipe2(fds, O_CLOEXEC);
}

int obscura_accept(int fd)
{
    return accept4(fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
}

int obscura_clock_synchronized(void)
{
    struct timex t;
    memset(&t, 0, sizeof t);
    int state = adjtimex(&t);
    if (state < 0)
        return -1;
    return state != TIME_ERROR && !(t.status & STA_UNSYNC);
}

int obscura_random(void *buffer, size_t length) {
    size_t done = 0;
    while (done < length) {
        ssize_t n = getrandom((char *)buffer + done, length - done, 0);
        if (n < 0) {
            if (errno == EINTR) continue;
            return -1;
        }
        done += (size_t)n;
    }
    return 0;
}

int obscura_set_attribute(const char *path, const char *name, const void *value, size_t size) {
    return setxattr(path, name, value, size, 0);
}
