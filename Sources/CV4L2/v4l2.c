#include "obscura_v4l2.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>
#include <linux/videodev2.h>

static int xioctl(int fd, unsigned long request, void *arg) {
    int r;
    do { r = ioctl(fd, request, arg); } while (r < 0 && errno == EINTR);
    return r;
}

int ov_find_node(const char *name, char *path, size_t path_len, char *err, size_t errlen) {
    DIR *dir = opendir("/sys/class/video4linux");
    if (!dir) { snprintf(err, errlen, "opendir /sys/class/video4linux: %s", strerror(errno)); return -errno; }
    struct dirent *e;
    char found[1024] = "";
    while ((e = readdir(dir))) {
        if (strncmp(e->d_name, "video", 5) != 0) continue;
        char file[512], text[256] = "";
        snprintf(file, sizeof file, "/sys/class/video4linux/%s/name", e->d_name);
        FILE *f = fopen(file, "r");
        if (!f) continue;
        if (fgets(text, sizeof text, f)) text[strcspn(text, "\n")] = 0;
        fclose(f);
        if (strcmp(text, name) == 0) { snprintf(path, path_len, "/dev/%s", e->d_name); closedir(dir); return 0; }
        size_t used = strlen(found);
        snprintf(found + used, sizeof found - used, "%s\"%s\"", used ? ", " : "", text);
    }
    closedir(dir);
    snprintf(err, errlen, "no V4L2 node named \"%s\"; nodes: %s", name, found[0] ? found : "none");
    return -ENOENT;
}

#define FAIL(call) do { int e = errno; snprintf(err, errlen, "%s on %s: %s", call, device, strerror(e)); rc = -e; goto out; } while (0)

int ov_capture_one(const char *device, uint32_t fourcc, uint32_t width, uint32_t height, unsigned skip,
                   uint8_t *out, size_t out_len, ov_frame_info *info, char *err, size_t errlen) {
    int rc = 0, streaming = 0;
    struct { void *start; size_t length; } maps[4] = {{0}};
    unsigned count = 0;
    int fd = open(device, O_RDWR | O_CLOEXEC);
    if (fd < 0) { snprintf(err, errlen, "open %s: %s", device, strerror(errno)); return -errno; }

    struct v4l2_format fmt;
    memset(&fmt, 0, sizeof fmt);
    fmt.type = V4L2_BUF_TYPE_VIDEO_CAPTURE;
    fmt.fmt.pix.width = width;
    fmt.fmt.pix.height = height;
    fmt.fmt.pix.pixelformat = fourcc;
    fmt.fmt.pix.field = V4L2_FIELD_NONE;
    if (xioctl(fd, VIDIOC_S_FMT, &fmt) < 0) FAIL("VIDIOC_S_FMT");
    info->fourcc = fmt.fmt.pix.pixelformat;
    info->width = fmt.fmt.pix.width;
    info->height = fmt.fmt.pix.height;
    info->bytes_per_line = fmt.fmt.pix.bytesperline;

    struct v4l2_requestbuffers req;
    memset(&req, 0, sizeof req);
    req.count = 4;
    req.type = V4L2_BUF_TYPE_VIDEO_CAPTURE;
    req.memory = V4L2_MEMORY_MMAP;
    if (xioctl(fd, VIDIOC_REQBUFS, &req) < 0) FAIL("VIDIOC_REQBUFS");
    count = req.count < 4 ? req.count : 4;
    for (unsigned i = 0; i < count; i++) {
        struct v4l2_buffer buf;
        memset(&buf, 0, sizeof buf);
        buf.type = V4L2_BUF_TYPE_VIDEO_CAPTURE;
        buf.memory = V4L2_MEMORY_MMAP;
        buf.index = i;
        if (xioctl(fd, VIDIOC_QUERYBUF, &buf) < 0) FAIL("VIDIOC_QUERYBUF");
        maps[i].length = buf.length;
        maps[i].start = mmap(NULL, buf.length, PROT_READ | PROT_WRITE, MAP_SHARED, fd, buf.m.offset);
        if (maps[i].start == MAP_FAILED) { maps[i].start = NULL; FAIL("mmap"); }
        if (xioctl(fd, VIDIOC_QBUF, &buf) < 0) FAIL("VIDIOC_QBUF");
    }
    enum v4l2_buf_type type = V4L2_BUF_TYPE_VIDEO_CAPTURE;
    if (xioctl(fd, VIDIOC_STREAMON, &type) < 0) FAIL("VIDIOC_STREAMON");
    streaming = 1;
    for (unsigned n = 0; n <= skip; n++) {
        struct pollfd p = { .fd = fd, .events = POLLIN };
        int ready = poll(&p, 1, 5000);
        if (ready == 0) { snprintf(err, errlen, "no frame from %s within 5 s", device); rc = -ETIMEDOUT; goto out; }
        if (ready < 0) FAIL("poll");
        struct v4l2_buffer buf;
        memset(&buf, 0, sizeof buf);
        buf.type = V4L2_BUF_TYPE_VIDEO_CAPTURE;
        buf.memory = V4L2_MEMORY_MMAP;
        if (xioctl(fd, VIDIOC_DQBUF, &buf) < 0) FAIL("VIDIOC_DQBUF");
        if (n == skip) {
            size_t k = buf.bytesused < out_len ? buf.bytesused : out_len;
            memcpy(out, maps[buf.index].start, k);
            info->bytes_used = buf.bytesused;
            info->sequence = buf.sequence;
            info->timestamp_ns = (uint64_t)buf.timestamp.tv_sec * 1000000000ull + (uint64_t)buf.timestamp.tv_usec * 1000ull;
        } else if (xioctl(fd, VIDIOC_QBUF, &buf) < 0) FAIL("VIDIOC_QBUF");
    }
out:
    if (streaming) xioctl(fd, VIDIOC_STREAMOFF, &type);
    for (unsigned i = 0; i < count; i++) if (maps[i].start) munmap(maps[i].start, maps[i].length);
    close(fd);
    return rc;
}
