/*
 * obscura_image.h — still-image writers for the photo output: JPEG with EXIF
 * (libjpeg-turbo, libexif) and DNG (libtiff). libjpeg reports errors by
 * longjmp and libtiff's setters are variadic; Swift can use neither, so this
 * thin C layer does, and returns a negative errno with a message naming the
 * call that failed.
 */
#ifndef OBSCURA_IMAGE_H
#define OBSCURA_IMAGE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

enum oi_format {
    OI_NV12 = 1,      /* Y plane, then interleaved Cb Cr, 4:2:0 */
    OI_YUV420 = 2,    /* Y, Cb, Cr planes, 4:2:0 */
    OI_YUYV = 3,      /* packed 4:2:2 */
    OI_RGB24 = 4,     /* bytes R, G, B */
    OI_BGR24 = 5,     /* bytes B, G, R */
    OI_BGRX32 = 6,    /* bytes B, G, R, X */
};

typedef struct {
    int32_t format;          /* enum oi_format */
    uint32_t width, height;
    const uint8_t *planes[3];
    uint32_t strides[3];
} oi_image;

typedef struct {
    const char *make;
    const char *model;
    const char *software;
    const char *datetime;          /* "YYYY:MM:DD HH:MM:SS" */
    uint32_t exposure_us;          /* 0: absent */
    uint32_t iso;                  /* 0: absent */
    uint32_t orientation;          /* EXIF 1..8; 0: absent */
    uint32_t flash_fired;          /* EXIF Flash value (0 no, 1 fired) */
    const uint8_t *thumbnail;      /* a JPEG for IFD1, or NULL */
    size_t thumbnail_length;
} oi_exif;

/* Encodes `image` as a baseline JPEG (YUV formats go in as they are, without
 * conversion to RGB) with an EXIF APP1 segment when `exif` is given. The
 * output is malloc'ed: free it with oi_free. */
int oi_jpeg_encode(const oi_image *image, int quality, const oi_exif *exif,
                   uint8_t **out, size_t *out_length, char *err, size_t errlen);

typedef struct {
    uint32_t width, height;
    uint32_t bits_per_sample;       /* 8..16, samples stored in 16 bits when > 8 */
    const uint8_t *data;            /* unpacked samples, row by row */
    uint32_t stride;                /* bytes per row */
    uint8_t cfa_pattern[4];         /* 0 red, 1 green, 2 blue: e.g. RGGB = {0,1,1,2} */
    uint32_t black_level;
    uint32_t white_level;
    float color_matrix[9];          /* XYZ → camera, row-major (ColorMatrix1) */
    float as_shot_neutral[3];
    uint32_t orientation;           /* TIFF 1..8 */
    const char *make;
    const char *model;
    const char *unique_model;
    const char *software;
    const char *datetime;
    const uint8_t *preview_rgb;     /* 8-bit RGB thumbnail (IFD0), or NULL */
    uint32_t preview_width, preview_height;
    const uint8_t *preview_jpeg;    /* or the same thumbnail as a baseline JPEG (wins over RGB) */
    size_t preview_jpeg_length;
} oi_dng;

/* Writes a DNG (1.4) into memory: IFD0 an RGB thumbnail when given (else the
 * raw image), the CFA image in a SubIFD. Output as for oi_jpeg_encode. */
int oi_dng_write(const oi_dng *dng, uint8_t **out, size_t *out_length, char *err, size_t errlen);

void oi_free(void *p);

#ifdef __cplusplus
}
#endif

#endif
