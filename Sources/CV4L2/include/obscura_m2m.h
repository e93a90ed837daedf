/*
 * obscura_m2m.h — the ioctls of a V4L2 stateful memory-to-memory codec
 * (bcm2835-codec on a Raspberry Pi 4, vicodec on the virtual board), one
 * function per step, for both the single- and multi-planar APIs. The logic
 * (negotiation, buffer ownership, draining) lives in Swift.
 *
 * Queues: OM_RAW is the OUTPUT queue (frames in, for an encoder), OM_CODED the
 * CAPTURE queue (the bitstream out); a decoder uses them the other way round,
 * so the functions take a V4L2 direction: 0 = OUTPUT, 1 = CAPTURE.
 * Failures return a negative errno and write a message naming the ioctl.
 */
#ifndef OBSCURA_M2M_H
#define OBSCURA_M2M_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

enum { OM_OUTPUT = 0, OM_CAPTURE = 1 };
enum { OM_MMAP = 0, OM_DMABUF = 1 };
enum { OM_MAX_PLANES = 4 };

/* Control ids (values of the V4L2 macros Swift cannot import). */
enum {
    OM_CID_BITRATE = 0x009909cf,            /* V4L2_CID_MPEG_VIDEO_BITRATE */
    OM_CID_GOP_SIZE = 0x009909cb,           /* V4L2_CID_MPEG_VIDEO_GOP_SIZE */
    OM_CID_REPEAT_SEQ_HEADER = 0x009909e2,  /* V4L2_CID_MPEG_VIDEO_REPEAT_SEQ_HEADER */
    OM_CID_FORCE_KEY_FRAME = 0x009909e5,    /* V4L2_CID_MPEG_VIDEO_FORCE_KEY_FRAME */
    OM_CID_H264_I_PERIOD = 0x00990a66,      /* V4L2_CID_MPEG_VIDEO_H264_I_PERIOD */
    OM_CID_H264_LEVEL = 0x00990a67,         /* V4L2_CID_MPEG_VIDEO_H264_LEVEL */
    OM_CID_H264_PROFILE = 0x00990a6b,       /* V4L2_CID_MPEG_VIDEO_H264_PROFILE */
};

enum {
    OM_FLAG_KEYFRAME = 0x00000008,  /* V4L2_BUF_FLAG_KEYFRAME */
    OM_FLAG_ERROR = 0x00000040,     /* V4L2_BUF_FLAG_ERROR */
    OM_FLAG_LAST = 0x00100000,      /* V4L2_BUF_FLAG_LAST */
};

typedef struct {
    char driver[16];
    char card[32];
    int32_t is_m2m;        /* offers a memory-to-memory queue pair */
    int32_t multiplanar;   /* ... through the multi-planar API */
} om_caps;

typedef struct {
    uint32_t fourcc;
    uint32_t width, height;
    uint32_t bytes_per_line;   /* plane 0 */
    uint32_t size_image;       /* plane 0 */
    uint32_t planes;           /* memory planes (1 for single-planar) */
} om_format;

typedef struct {
    uint32_t min_width, max_width, step_width;
    uint32_t min_height, max_height, step_height;
} om_frame_sizes;

typedef struct {
    uint32_t index;
    uint32_t bytes_used;   /* plane 0 payload (minus its data offset) */
    uint32_t data_offset;
    uint32_t flags;
    int64_t timestamp_us;
    uint32_t sequence;
} om_dequeued;

/* Opens a node non-blocking (O_RDWR | O_NONBLOCK | O_CLOEXEC) and reads its capabilities. */
int om_open(const char *path, om_caps *caps, char *err, size_t errlen);
/* Format `index` of a queue: its fourcc, or a negative errno past the last. */
int om_enum_format(int fd, int multiplanar, int direction, uint32_t index, uint32_t *fourcc);
int om_frame_sizes_for(int fd, uint32_t fourcc, om_frame_sizes *out);
/* VIDIOC_S_FMT; the driver's answer (possibly adjusted) comes back in `out`. */
int om_set_format(int fd, int multiplanar, int direction, uint32_t fourcc, uint32_t width, uint32_t height,
                  uint32_t bytes_per_line, uint32_t size_image, om_format *out, char *err, size_t errlen);
/* VIDIOC_S_PARM on the OUTPUT queue; -ENOTTY when the driver has none. */
int om_set_frame_rate(int fd, int multiplanar, uint32_t numerator, uint32_t denominator,
                      uint32_t *got_numerator, uint32_t *got_denominator, char *err, size_t errlen);
/* VIDIOC_S_EXT_CTRLS with one control; -EINVAL/-ERANGE when refused. */
int om_set_control(int fd, uint32_t id, int32_t value, char *err, size_t errlen);
/* VIDIOC_REQBUFS; returns the count granted. */
int om_request_buffers(int fd, int multiplanar, int direction, int memory, uint32_t count, char *err, size_t errlen);
/* VIDIOC_QUERYBUF of plane 0: its mmap offset and length. */
int om_query_buffer(int fd, int multiplanar, int direction, uint32_t index, uint32_t *offset, uint32_t *length,
                    char *err, size_t errlen);
/* VIDIOC_QBUF. DMABUF: one fd per plane (single-planar takes plane 0 only,
 * at offset 0). MMAP: `bytes_used` of plane 0 (OUTPUT) or 0 (CAPTURE). */
int om_queue_buffer(int fd, int multiplanar, int direction, int memory, uint32_t index,
                    const int32_t *dmabuf_fds, const uint32_t *offsets, const uint32_t *lengths,
                    const uint32_t *bytes_used, uint32_t planes, int64_t timestamp_us, char *err, size_t errlen);
/* VIDIOC_DQBUF; -EAGAIN when nothing is ready, -EPIPE after the last buffer. */
int om_dequeue_buffer(int fd, int multiplanar, int direction, int memory, om_dequeued *out, char *err, size_t errlen);
int om_stream(int fd, int multiplanar, int direction, int on, char *err, size_t errlen);
/* VIDIOC_ENCODER_CMD (stop = 1: V4L2_ENC_CMD_STOP, else START). */
int om_encoder_command(int fd, int stop, char *err, size_t errlen);
/* VIDIOC_DECODER_CMD (stop = 1: V4L2_DEC_CMD_STOP, else START). */
int om_decoder_command(int fd, int stop, char *err, size_t errlen);
/* poll() for the queues: returns revents (POLLIN: CAPTURE ready, POLLOUT: OUTPUT done). */
int om_poll(int fd, int timeout_ms);

#ifdef __cplusplus
}
#endif

#endif
