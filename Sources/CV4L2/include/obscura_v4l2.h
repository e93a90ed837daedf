/*
 * obscura_v4l2.h — plain V4L2 for what libcamera does not expose: a raw
 * (Bayer) capture node such as vimc's "Raw Capture 0". Failures return a
 * negative errno with a message naming the ioctl.
 */
#ifndef OBSCURA_V4L2_H
#define OBSCURA_V4L2_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    uint32_t fourcc;        /* V4L2 pixel format */
    uint32_t width, height;
    uint32_t bytes_per_line;
    uint32_t bytes_used;
    uint32_t sequence;
    uint64_t timestamp_ns;  /* CLOCK_MONOTONIC */
} ov_frame_info;

/* Finds /dev/videoN whose name (sysfs) is `name`; 0 on success. */
int ov_find_node(const char *name, char *path, size_t path_len, char *err, size_t errlen);

/* Sets the format (the driver may adjust it: see `info`), streams with MMAP
 * buffers, skips `skip` frames, copies the next one into `out` (at most
 * `out_len` bytes) and stops. */
int ov_capture_one(const char *device, uint32_t fourcc, uint32_t width, uint32_t height, unsigned skip,
                   uint8_t *out, size_t out_len, ov_frame_info *info, char *err, size_t errlen);

#ifdef __cplusplus
}
#endif

#endif
