#include "obscura_image.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <tiffio.h>

/* A growable, seekable memory file for TIFFClientOpen. */
typedef struct {
    uint8_t *data;
    size_t size, capacity, position;
} oi_memfile;

static tmsize_t oi_mem_read(thandle_t h, void *buf, tmsize_t n) {
    oi_memfile *m = h;
    if (m->position >= m->size) return 0;
    size_t left = m->size - m->position;
    size_t k = (size_t)n < left ? (size_t)n : left;
    memcpy(buf, m->data + m->position, k);
    m->position += k;
    return (tmsize_t)k;
}

static tmsize_t oi_mem_write(thandle_t h, void *buf, tmsize_t n) {
    oi_memfile *m = h;
    size_t end = m->position + (size_t)n;
    if (end > m->capacity) {
        size_t c = m->capacity ? m->capacity : 65536;
        while (c < end) c *= 2;
        uint8_t *d = realloc(m->data, c);
        if (!d) return -1;
        m->data = d;
        m->capacity = c;
    }
    if (m->position > m->size) memset(m->data + m->size, 0, m->position - m->size);
    memcpy(m->data + m->position, buf, (size_t)n);
    m->position = end;
    if (end > m->size) m->size = end;
    return n;
}

static toff_t oi_mem_seek(thandle_t h, toff_t off, int whence) {
    oi_memfile *m = h;
    size_t base = whence == SEEK_SET ? 0 : whence == SEEK_CUR ? m->position : m->size;
    m->position = base + (size_t)off;
    return m->position;
}

static int oi_mem_close(thandle_t h) { (void)h; return 0; }
static toff_t oi_mem_size(thandle_t h) { return ((oi_memfile *)h)->size; }
static int oi_mem_map(thandle_t h, void **base, toff_t *size) { (void)h; (void)base; (void)size; return 0; }
static void oi_mem_unmap(thandle_t h, void *base, toff_t size) { (void)h; (void)base; (void)size; }

static char oi_tiff_message[256];
static void oi_tiff_error(const char *module, const char *fmt, va_list ap) {
    int n = snprintf(oi_tiff_message, sizeof oi_tiff_message, "%s: ", module ? module : "libtiff");
    if (n > 0 && (size_t)n < sizeof oi_tiff_message) vsnprintf(oi_tiff_message + n, sizeof oi_tiff_message - n, fmt, ap);
}

#define SET(tag, ...) do { if (!TIFFSetField(tif, tag, __VA_ARGS__)) { call = "TIFFSetField(" #tag ")"; goto fail; } } while (0)

static int oi_common_tags(TIFF *tif, const oi_dng *dng, const char **failed) {
    const char *call = NULL;
    SET(TIFFTAG_MAKE, dng->make ? dng->make : "Obscura");
    SET(TIFFTAG_MODEL, dng->model ? dng->model : "camera");
    if (dng->software) SET(TIFFTAG_SOFTWARE, dng->software);
    if (dng->datetime) SET(TIFFTAG_DATETIME, dng->datetime);
    SET(TIFFTAG_ORIENTATION, (uint16_t)(dng->orientation ? dng->orientation : 1));
    SET(TIFFTAG_PLANARCONFIG, PLANARCONFIG_CONTIG);
    SET(TIFFTAG_COMPRESSION, COMPRESSION_NONE);
    return 0;
fail:
    *failed = call;
    return -1;
}

/* libtiff writes SubIFDs (0x014a) with the type IFD (13); TIFF 6 and the DNG
 * specification allow LONG or IFD, and readers that check (exiftool
 * -validate) expect LONG, as cameras write it. Same 4-byte offsets: only the
 * type of IFD0's entry changes. */
static void oi_subifds_as_long(uint8_t *tiff, size_t size) {
    if (size < 8) return;
    int little = tiff[0] == 'I';
#define U16(p) (little ? (uint16_t)((p)[0] | (p)[1] << 8) : (uint16_t)((p)[0] << 8 | (p)[1]))
#define U32(p) (little ? (uint32_t)(p)[0] | (uint32_t)(p)[1] << 8 | (uint32_t)(p)[2] << 16 | (uint32_t)(p)[3] << 24 \
                       : (uint32_t)(p)[0] << 24 | (uint32_t)(p)[1] << 16 | (uint32_t)(p)[2] << 8 | (uint32_t)(p)[3])
    uint32_t ifd = U32(tiff + 4);
    if ((size_t)ifd + 2 > size) return;
    uint16_t count = U16(tiff + ifd);
    for (uint16_t i = 0; i < count; i++) {
        uint8_t *entry = tiff + ifd + 2 + 12 * (size_t)i;
        if ((size_t)(entry - tiff) + 12 > size) return;
        if (U16(entry) == 0x014a && U16(entry + 2) == 13) {
            entry[little ? 2 : 3] = 4;
            entry[little ? 3 : 2] = 0;
        }
    }
#undef U16
#undef U32
}

int oi_dng_write(const oi_dng *dng, uint8_t **out, size_t *out_length, char *err, size_t errlen) {
    if (dng->width == 0 || dng->height == 0 || dng->bits_per_sample < 8 || dng->bits_per_sample > 16) {
        snprintf(err, errlen, "oi_dng_write: %ux%u at %u bits is not a raw image (8..16 bits)", dng->width, dng->height, dng->bits_per_sample);
        return -EINVAL;
    }
    oi_memfile file = {0};
    const char *call = NULL;
    TIFFErrorHandler previous = TIFFSetErrorHandler(oi_tiff_error);
    oi_tiff_message[0] = 0;
    TIFF *tif = TIFFClientOpen("dng", "w", &file, oi_mem_read, oi_mem_write, oi_mem_seek, oi_mem_close,
                               oi_mem_size, oi_mem_map, oi_mem_unmap);
    if (!tif) { call = "TIFFClientOpen"; goto fail; }
    const uint16_t storage_bits = dng->bits_per_sample > 8 ? 16 : 8;
    const int jpeg_preview = dng->preview_jpeg && dng->preview_jpeg_length && dng->preview_width && dng->preview_height;
    const int has_preview = jpeg_preview || (dng->preview_rgb && dng->preview_width && dng->preview_height);
    static const uint8_t version[4] = {1, 4, 0, 0}, backward[4] = {1, 1, 0, 0};

    /* IFD0: the preview (NewSubFileType 1) or the raw image itself. */
    SET(TIFFTAG_SUBFILETYPE, has_preview ? FILETYPE_REDUCEDIMAGE : 0);
    SET(TIFFTAG_DNGVERSION, version);
    SET(TIFFTAG_DNGBACKWARDVERSION, backward);
    SET(TIFFTAG_UNIQUECAMERAMODEL, dng->unique_model ? dng->unique_model : (dng->model ? dng->model : "camera"));
    SET(TIFFTAG_COLORMATRIX1, 9, dng->color_matrix);
    SET(TIFFTAG_ASSHOTNEUTRAL, 3, dng->as_shot_neutral);
    SET(TIFFTAG_CALIBRATIONILLUMINANT1, (uint16_t)21); /* D65 */
    if (oi_common_tags(tif, dng, &call) < 0) goto fail;
    if (has_preview) {
        uint64_t subifd = 0;
        SET(TIFFTAG_SUBIFD, 1, &subifd);
        SET(TIFFTAG_IMAGEWIDTH, dng->preview_width);
        SET(TIFFTAG_IMAGELENGTH, dng->preview_height);
        SET(TIFFTAG_BITSPERSAMPLE, (uint16_t)8);
        SET(TIFFTAG_SAMPLESPERPIXEL, (uint16_t)3);
        SET(TIFFTAG_ROWSPERSTRIP, dng->preview_height);
        if (jpeg_preview) {
            /* A whole baseline JPEG as the strip (Compression 7, YCbCr), as
             * cameras' DNGs carry their previews. */
            SET(TIFFTAG_COMPRESSION, COMPRESSION_JPEG);
            SET(TIFFTAG_PHOTOMETRIC, PHOTOMETRIC_YCBCR);
            if (TIFFWriteRawStrip(tif, 0, (void *)dng->preview_jpeg, (tmsize_t)dng->preview_jpeg_length) < 0) {
                call = "TIFFWriteRawStrip(preview)"; goto fail;
            }
        } else {
            SET(TIFFTAG_PHOTOMETRIC, PHOTOMETRIC_RGB);
            for (uint32_t y = 0; y < dng->preview_height; y++) {
                if (TIFFWriteScanline(tif, (void *)(dng->preview_rgb + (size_t)y * dng->preview_width * 3), y, 0) < 0) {
                    call = "TIFFWriteScanline(preview)"; goto fail;
                }
            }
        }
        if (!TIFFWriteDirectory(tif)) { call = "TIFFWriteDirectory(IFD0)"; goto fail; }
        SET(TIFFTAG_SUBFILETYPE, 0);
        if (oi_common_tags(tif, dng, &call) < 0) goto fail;
    }
    /* The CFA image. */
    SET(TIFFTAG_IMAGEWIDTH, dng->width);
    SET(TIFFTAG_IMAGELENGTH, dng->height);
    SET(TIFFTAG_BITSPERSAMPLE, storage_bits);
    SET(TIFFTAG_SAMPLESPERPIXEL, (uint16_t)1);
    SET(TIFFTAG_PHOTOMETRIC, (uint16_t)32803); /* CFA */
    SET(TIFFTAG_ROWSPERSTRIP, dng->height);
    {
        uint16_t dim[2] = {2, 2};
        SET(TIFFTAG_CFAREPEATPATTERNDIM, dim);
        SET(TIFFTAG_CFAPATTERN, 4, dng->cfa_pattern);
        float black = (float)dng->black_level;
        SET(TIFFTAG_BLACKLEVEL, 1, &black);
        uint32_t white = dng->white_level;
        SET(TIFFTAG_WHITELEVEL, 1, &white);
    }
    for (uint32_t y = 0; y < dng->height; y++) {
        if (TIFFWriteScanline(tif, (void *)(dng->data + (size_t)y * dng->stride), y, 0) < 0) {
            call = "TIFFWriteScanline(raw)"; goto fail;
        }
    }
    if (!TIFFWriteDirectory(tif)) { call = "TIFFWriteDirectory(raw)"; goto fail; }
    TIFFClose(tif);
    TIFFSetErrorHandler(previous);
    oi_subifds_as_long(file.data, file.size);
    *out = file.data;
    *out_length = file.size;
    return 0;
fail:
    snprintf(err, errlen, "%s failed%s%s", call ? call : "libtiff", oi_tiff_message[0] ? ": " : "", oi_tiff_message);
    if (tif) TIFFClose(tif);
    TIFFSetErrorHandler(previous);
    free(file.data);
    return -EIO;
}
