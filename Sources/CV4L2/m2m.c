// m2m.c — see obscura_m2m.h. One V4L2 call sequence per function.
#include "obscura_m2m.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/videodev2.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

_Static_assert(OM_CID_BITRATE == V4L2_CID_MPEG_VIDEO_BITRATE, "bitrate id");
_Static_assert(OM_CID_GOP_SIZE == V4L2_CID_MPEG_VIDEO_GOP_SIZE, "gop id");
_Static_assert(OM_CID_REPEAT_SEQ_HEADER == V4L2_CID_MPEG_VIDEO_REPEAT_SEQ_HEADER, "repeat id");
_Static_assert(OM_CID_FORCE_KEY_FRAME == V4L2_CID_MPEG_VIDEO_FORCE_KEY_FRAME, "force id");
_Static_assert(OM_CID_H264_I_PERIOD == V4L2_CID_MPEG_VIDEO_H264_I_PERIOD, "i period id");
_Static_assert(OM_CID_H264_LEVEL == V4L2_CID_MPEG_VIDEO_H264_LEVEL, "level id");
_Static_assert(OM_CID_H264_PROFILE == V4L2_CID_MPEG_VIDEO_H264_PROFILE, "profile id");
_Static_assert(OM_FLAG_KEYFRAME == V4L2_BUF_FLAG_KEYFRAME && OM_FLAG_LAST == V4L2_BUF_FLAG_LAST &&
               OM_FLAG_ERROR == V4L2_BUF_FLAG_ERROR, "buffer flags");

static int xioctl(int fd, unsigned long request, void *arg)
{
    int r;
    do {
        r = ioctl(fd, request, arg);
    } while (r < 0 && errno == EINTR);
    return r < 0 ? -errno : 0;
}

static int fail(char *err, size_t errlen, int code, const char *what)
{
    if (err && errlen)
        snprintf(err, errlen, "%s failed: %s", what, strerror(-code));
    return code;
}

/* An ioctl whose failure names it. */
static int named_ioctl(int fd, unsigned long request, void *command, const char *name, char *err, size_t errlen)
{
    int r = xioctl(fd, request, command);
    return r < 0 ? fail(err, errlen, r, name) : 0;
}

static enum v4l2_buf_type buf_type(int multiplanar, int direction)
{
    if (direction == OM_OUTPUT)
        return multiplanar ? V4L2_BUF_TYPE_VIDEO_OUTPUT_MPLANE : V4L2_BUF_TYPE_VIDEO_OUTPUT;
    return multiplanar ? V4L2_BUF_TYPE_VIDEO_CAPTURE_MPLANE : V4L2_BUF_TYPE_VIDEO_CAPTURE;
}

static enum v4l2_memory memory_type(int memory)
{
    return memory == OM_DMABUF ? V4L2_MEMORY_DMABUF : V4L2_MEMORY_MMAP;
}

int om_open(const char *path, om_caps *caps, char *err, size_t errlen)
{
    int fd = open(path, O_RDWR | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
        int code = -errno;
        if (err && errlen)
            snprintf(err, errlen, "open(%s) failed: %s", path, strerror(errno));
        return code;
    }
    struct v4l2_capability cap;
    memset(&cap, 0, sizeof(cap));
    int r = xioctl(fd, VIDIOC_QUERYCAP, &cap);
    if (r < 0) {
        close(fd);
        return fail(err, errlen, r, "VIDIOC_QUERYCAP");
    }
    uint32_t c = (cap.capabilities & V4L2_CAP_DEVICE_CAPS) ? cap.device_caps : cap.capabilities;
    memset(caps, 0, sizeof(*caps));
    snprintf(caps->driver, sizeof(caps->driver), "%s", (const char *)cap.driver);
    snprintf(caps->card, sizeof(caps->card), "%s", (const char *)cap.card);
    caps->is_m2m = (c & (V4L2_CAP_VIDEO_M2M | V4L2_CAP_VIDEO_M2M_MPLANE)) != 0;
    caps->multiplanar = (c & V4L2_CAP_VIDEO_M2M_MPLANE) != 0;
    return fd;
}

int om_enum_format(int fd, int multiplanar, int direction, uint32_t index, uint32_t *fourcc)
{
    struct v4l2_fmtdesc d;
    memset(&d, 0, sizeof(d));
    d.index = index;
    d.type = buf_type(multiplanar, direction);
    int r = xioctl(fd, VIDIOC_ENUM_FMT, &d);
    if (r < 0)
        return r;
    *fourcc = d.pixelformat;
    return 0;
}

int om_frame_sizes_for(int fd, uint32_t fourcc, om_frame_sizes *out)
{
    struct v4l2_frmsizeenum s;
    memset(&s, 0, sizeof(s));
    s.pixel_format = fourcc;
    int r = xioctl(fd, VIDIOC_ENUM_FRAMESIZES, &s);
    if (r < 0)
        return r;
    memset(out, 0, sizeof(*out));
    if (s.type == V4L2_FRMSIZE_TYPE_DISCRETE) {
        out->min_width = out->max_width = s.discrete.width;
        out->min_height = out->max_height = s.discrete.height;
    } else {
        out->min_width = s.stepwise.min_width;
        out->max_width = s.stepwise.max_width;
        out->step_width = s.stepwise.step_width;
        out->min_height = s.stepwise.min_height;
        out->max_height = s.stepwise.max_height;
        out->step_height = s.stepwise.step_height;
    }
    return 0;
}

int om_set_format(int fd, int multiplanar, int direction, uint32_t fourcc, uint32_t width, uint32_t height,
                  uint32_t bytes_per_line, uint32_t size_image, om_format *out, char *err, size_t errlen)
{
    struct v4l2_format f;
    memset(&f, 0, sizeof(f));
    f.type = buf_type(multiplanar, direction);
    if (multiplanar) {
        f.fmt.pix_mp.pixelformat = fourcc;
        f.fmt.pix_mp.width = width;
        f.fmt.pix_mp.height = height;
        f.fmt.pix_mp.field = V4L2_FIELD_NONE;
        f.fmt.pix_mp.num_planes = 1;
        f.fmt.pix_mp.plane_fmt[0].bytesperline = bytes_per_line;
        f.fmt.pix_mp.plane_fmt[0].sizeimage = size_image;
    } else {
        f.fmt.pix.pixelformat = fourcc;
        f.fmt.pix.width = width;
        f.fmt.pix.height = height;
        f.fmt.pix.field = V4L2_FIELD_NONE;
        f.fmt.pix.bytesperline = bytes_per_line;
        f.fmt.pix.sizeimage = size_image;
    }
    int r = xioctl(fd, VIDIOC_S_FMT, &f);
    if (r < 0)
        return fail(err, errlen, r, "VIDIOC_S_FMT");
    memset(out, 0, sizeof(*out));
    if (multiplanar) {
        out->fourcc = f.fmt.pix_mp.pixelformat;
        out->width = f.fmt.pix_mp.width;
        out->height = f.fmt.pix_mp.height;
        out->bytes_per_line = f.fmt.pix_mp.plane_fmt[0].bytesperline;
        out->size_image = f.fmt.pix_mp.plane_fmt[0].sizeimage;
        out->planes = f.fmt.pix_mp.num_planes;
    } else {
        out->fourcc = f.fmt.pix.pixelformat;
        out->width = f.fmt.pix.width;
        out->height = f.fmt.pix.height;
        out->bytes_per_line = f.fmt.pix.bytesperline;
        out->size_image = f.fmt.pix.sizeimage;
        out->planes = 1;
    }
    return 0;
}

int om_set_frame_rate(int fd, int multiplanar, uint32_t numerator, uint32_t denominator,
                      uint32_t *got_numerator, uint32_t *got_denominator, char *err, size_t errlen)
{
    struct v4l2_streamparm p;
    memset(&p, 0, sizeof(p));
    p.type = buf_type(multiplanar, OM_OUTPUT);
    p.parm.output.timeperframe.numerator = numerator;
    p.parm.output.timeperframe.denominator = denominator;
    int r = xioctl(fd, VIDIOC_S_PARM, &p);
    if (r < 0)
        return fail(err, errlen, r, "VIDIOC_S_PARM");
    *got_numerator = p.parm.output.timeperframe.numerator;
    *got_denominator = p.parm.output.timeperframe.denominator;
    return 0;
}

int om_set_control(int fd, uint32_t id, int32_t value, char *err, size_t errlen)
{
    struct v4l2_ext_control c;
    struct v4l2_ext_controls cs;
    memset(&c, 0, sizeof(c));
    memset(&cs, 0, sizeof(cs));
    c.id = id;
    c.value = value;
    cs.which = V4L2_CTRL_WHICH_CUR_VAL;
    cs.count = 1;
    cs.controls = &c;
    int r = xioctl(fd, VIDIOC_S_EXT_CTRLS, &cs);
    if (r < 0) {
        if (err && errlen)
            snprintf(err, errlen, "VIDIOC_S_EXT_CTRLS(0x%08x = %d) failed: %s", id, value, strerror(-r));
        return r;
    }
    return 0;
}

int om_request_buffers(int fd, int multiplanar, int direction, int memory, uint32_t count, char *err, size_t errlen)
{
    struct v4l2_requestbuffers rb;
    memset(&rb, 0, sizeof(rb));
    rb.count = count;
    rb.type = buf_type(multiplanar, direction);
    rb.memory = memory_type(memory);
    int r = xioctl(fd, VIDIOC_REQBUFS, &rb);
    if (r < 0)
        return fail(err, errlen, r, "VIDIOC_REQBUFS");
    return (int)rb.count;
}

/* A buffer (and its planes) for a query, queue or dequeue on the given side. */
static void buffer_init(struct v4l2_buffer *b, struct v4l2_plane *planes, int multiplanar, int direction, int memory)
{
    memset(b, 0, sizeof(*b));
    memset(planes, 0, sizeof(struct v4l2_plane) * OM_MAX_PLANES);
    b->type = buf_type(multiplanar, direction);
    b->memory = memory_type(memory);
}

int om_query_buffer(int fd, int multiplanar, int direction, uint32_t index, uint32_t *offset, uint32_t *length,
                    char *err, size_t errlen)
{
    struct v4l2_buffer b;
    struct v4l2_plane planes[OM_MAX_PLANES];
    buffer_init(&b, planes, multiplanar, direction, OM_MMAP);
    b.index = index;
    if (multiplanar) {
        b.m.planes = planes;
        b.length = OM_MAX_PLANES;
    }
    int r = xioctl(fd, VIDIOC_QUERYBUF, &b);
    if (r < 0)
        return fail(err, errlen, r, "VIDIOC_QUERYBUF");
    if (multiplanar) {
        *offset = planes[0].m.mem_offset;
        *length = planes[0].length;
    } else {
        *offset = b.m.offset;
        *length = b.length;
    }
    return 0;
}

int om_queue_buffer(int fd, int multiplanar, int direction, int memory, uint32_t index,
                    const int32_t *dmabuf_fds, const uint32_t *offsets, const uint32_t *lengths,
                    const uint32_t *bytes_used, uint32_t count, int64_t timestamp_us, char *err, size_t errlen)
{
    struct v4l2_buffer b;
    struct v4l2_plane planes[OM_MAX_PLANES];
    buffer_init(&b, planes, multiplanar, direction, memory);
    b.index = index;
    b.field = V4L2_FIELD_NONE;
    b.timestamp.tv_sec = timestamp_us / 1000000;
    b.timestamp.tv_usec = timestamp_us % 1000000;
    if (count > OM_MAX_PLANES)
        count = OM_MAX_PLANES;
    if (multiplanar) {
        b.m.planes = planes;
        b.length = count ? count : 1;
        for (uint32_t i = 0; i < count; i++) {
            if (memory == OM_DMABUF) {
                planes[i].m.fd = dmabuf_fds[i];
                planes[i].data_offset = offsets ? offsets[i] : 0;
                planes[i].length = lengths[i];
            }
            /* bytesused counts from the start of the buffer, data offset included. */
            planes[i].bytesused = bytes_used ? bytes_used[i] + planes[i].data_offset : 0;
        }
    } else {
        if (memory == OM_DMABUF) {
            if (offsets && offsets[0] != 0) {
                if (err && errlen)
                    snprintf(err, errlen, "VIDIOC_QBUF: the single-planar API cannot import a plane at offset %u", offsets[0]);
                return -EINVAL;
            }
            b.m.fd = dmabuf_fds[0];
            b.length = lengths[0];
        }
        b.bytesused = bytes_used ? bytes_used[0] : 0;
    }
    return named_ioctl(fd, VIDIOC_QBUF, &b, "VIDIOC_QBUF", err, errlen);
}

int om_dequeue_buffer(int fd, int multiplanar, int direction, int memory, om_dequeued *out, char *err, size_t errlen)
{
    struct v4l2_buffer b;
    struct v4l2_plane planes[OM_MAX_PLANES];
    buffer_init(&b, planes, multiplanar, direction, memory);
    if (multiplanar) {
        b.m.planes = planes;
        b.length = OM_MAX_PLANES;
    }
    int r = xioctl(fd, VIDIOC_DQBUF, &b);
    if (r < 0) {
        if (r != -EAGAIN && r != -EPIPE)
            fail(err, errlen, r, "VIDIOC_DQBUF");
        return r;
    }
    memset(out, 0, sizeof(*out));
    out->index = b.index;
    out->flags = b.flags;
    out->sequence = b.sequence;
    out->timestamp_us = (int64_t)b.timestamp.tv_sec * 1000000 + b.timestamp.tv_usec;
    if (multiplanar) {
        out->data_offset = planes[0].data_offset;
        out->bytes_used = planes[0].bytesused > planes[0].data_offset ? planes[0].bytesused - planes[0].data_offset : 0;
    } else {
        out->bytes_used = b.bytesused;
    }
    return 0;
}


int om_stream(int fd, int multiplanar, int direction, int on, char *err, size_t errlen)
{
    int type = buf_type(multiplanar, direction);
    return named_ioctl(fd, on ? VIDIOC_STREAMON : VIDIOC_STREAMOFF, &type, on ? "VIDIOC_STREAMON" : "VIDIOC_STREAMOFF", err, errlen);
}

int om_encoder_command(int fd, int stop, char *err, size_t errlen)
{
    struct v4l2_encoder_cmd c;
    memset(&c, 0, sizeof(c));
    c.cmd = stop ? V4L2_ENC_CMD_STOP : V4L2_ENC_CMD_START;
    return named_ioctl(fd, VIDIOC_ENCODER_CMD, &c, stop ? "VIDIOC_ENCODER_CMD(STOP)" : "VIDIOC_ENCODER_CMD(START)", err, errlen);
}

int om_decoder_command(int fd, int stop, char *err, size_t errlen)
{
    struct v4l2_decoder_cmd c;
    memset(&c, 0, sizeof(c));
    c.cmd = stop ? V4L2_DEC_CMD_STOP : V4L2_DEC_CMD_START;
    return named_ioctl(fd, VIDIOC_DECODER_CMD, &c, stop ? "VIDIOC_DECODER_CMD(STOP)" : "VIDIOC_DECODER_CMD(START)", err, errlen);
}

int om_poll(int fd, int timeout_ms)
{
    struct pollfd p = { .fd = fd, .events = POLLIN | POLLOUT | POLLPRI, .revents = 0 };
    int r;
    do {
        r = poll(&p, 1, timeout_ms);
    } while (r < 0 && errno == EINTR);
    return r <= 0 ? 0 : p.revents;
}
