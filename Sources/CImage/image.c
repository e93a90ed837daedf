#include "obscura_image.h"

#include <errno.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <jpeglib.h>
#include <libexif/exif-data.h>

void oi_free(void *p) { free(p); }

/* ---- JPEG ---------------------------------------------------------------- */

struct oi_jpeg_error {
    struct jpeg_error_mgr mgr;
    jmp_buf jump;
    char message[JMSG_LENGTH_MAX];
};

static void oi_jpeg_error_exit(j_common_ptr cinfo) {
    struct oi_jpeg_error *e = (struct oi_jpeg_error *)cinfo->err;
    e->mgr.format_message(cinfo, e->message);
    longjmp(e->jump, 1);
}

static void oi_exif_set(ExifData *data, ExifIfd ifd, ExifTag tag, ExifEntry **out) {
    ExifEntry *entry = exif_content_get_entry(data->ifd[ifd], tag);
    if (!entry) {
        entry = exif_entry_new();
        exif_content_add_entry(data->ifd[ifd], entry);
        exif_entry_initialize(entry, tag);
        exif_entry_unref(entry);
    }
    *out = entry;
}

static void oi_exif_string(ExifData *data, ExifIfd ifd, ExifTag tag, const char *value) {
    if (!value) return;
    ExifEntry *entry = exif_content_get_entry(data->ifd[ifd], tag);
    if (entry) exif_content_remove_entry(data->ifd[ifd], entry);
    entry = exif_entry_new();
    size_t n = strlen(value) + 1;
    entry->tag = tag;
    entry->format = EXIF_FORMAT_ASCII;
    entry->components = n;
    entry->size = n;
    entry->data = malloc(n);
    memcpy(entry->data, value, n);
    exif_content_add_entry(data->ifd[ifd], entry);
    exif_entry_unref(entry);
}

/* One entry of `format` with `components` values, made here rather than by
 * libexif's defaults (which know only some tags in each IFD). */
static ExifEntry *oi_exif_entry(ExifData *data, ExifIfd ifd, ExifTag tag, ExifFormat format, unsigned long components) {
    ExifEntry *entry = exif_content_get_entry(data->ifd[ifd], tag);
    if (entry) exif_content_remove_entry(data->ifd[ifd], entry);
    entry = exif_entry_new();
    entry->tag = tag;
    entry->format = format;
    entry->components = components;
    entry->size = exif_format_get_size(format) * components;
    entry->data = calloc(1, entry->size);
    exif_content_add_entry(data->ifd[ifd], entry);
    exif_entry_unref(entry);
    return entry;
}

static void oi_exif_short(ExifData *data, ExifIfd ifd, ExifTag tag, uint16_t value) {
    ExifEntry *entry = oi_exif_entry(data, ifd, tag, EXIF_FORMAT_SHORT, 1);
    exif_set_short(entry->data, exif_data_get_byte_order(data), value);
}

static void oi_exif_rational(ExifData *data, ExifIfd ifd, ExifTag tag, uint32_t numerator, uint32_t denominator) {
    ExifEntry *entry = oi_exif_entry(data, ifd, tag, EXIF_FORMAT_RATIONAL, 1);
    ExifRational r = { numerator, denominator };
    exif_set_rational(entry->data, exif_data_get_byte_order(data), r);
}

/* A LONG entry (libexif initializes the pixel dimensions as SHORT). */
static void oi_exif_long(ExifData *data, ExifIfd ifd, ExifTag tag, uint32_t value) {
    ExifEntry *entry = oi_exif_entry(data, ifd, tag, EXIF_FORMAT_LONG, 1);
    exif_set_long(entry->data, exif_data_get_byte_order(data), value);
}

/* The EXIF block (with "Exif\0\0"), malloc'ed by libexif. */
static int oi_exif_build(const oi_exif *exif, uint32_t width, uint32_t height, unsigned char **out, unsigned int *len) {
    ExifData *data = exif_data_new();
    if (!data) return -ENOMEM;
    exif_data_set_option(data, EXIF_DATA_OPTION_FOLLOW_SPECIFICATION);
    exif_data_set_data_type(data, EXIF_DATA_TYPE_COMPRESSED);
    exif_data_set_byte_order(data, EXIF_BYTE_ORDER_INTEL);
    exif_data_fix(data);
    oi_exif_string(data, EXIF_IFD_0, EXIF_TAG_MAKE, exif->make);
    oi_exif_string(data, EXIF_IFD_0, EXIF_TAG_MODEL, exif->model);
    oi_exif_string(data, EXIF_IFD_0, EXIF_TAG_SOFTWARE, exif->software);
    oi_exif_string(data, EXIF_IFD_0, EXIF_TAG_DATE_TIME, exif->datetime);
    oi_exif_string(data, EXIF_IFD_EXIF, EXIF_TAG_DATE_TIME_ORIGINAL, exif->datetime);
    oi_exif_string(data, EXIF_IFD_EXIF, EXIF_TAG_DATE_TIME_DIGITIZED, exif->datetime);
    if (exif->orientation >= 1 && exif->orientation <= 8)
        oi_exif_short(data, EXIF_IFD_0, EXIF_TAG_ORIENTATION, (uint16_t)exif->orientation);
    if (exif->exposure_us) {
        ExifEntry *entry;
        oi_exif_set(data, EXIF_IFD_EXIF, EXIF_TAG_EXPOSURE_TIME, &entry);
        ExifRational r = { exif->exposure_us, 1000000 };
        exif_set_rational(entry->data, exif_data_get_byte_order(data), r);
    }
    if (exif->iso) oi_exif_short(data, EXIF_IFD_EXIF, EXIF_TAG_ISO_SPEED_RATINGS, (uint16_t)exif->iso);
    oi_exif_short(data, EXIF_IFD_EXIF, EXIF_TAG_FLASH, (uint16_t)exif->flash_fired);
    oi_exif_long(data, EXIF_IFD_EXIF, EXIF_TAG_PIXEL_X_DIMENSION, width);
    oi_exif_long(data, EXIF_IFD_EXIF, EXIF_TAG_PIXEL_Y_DIMENSION, height);
    if (exif->thumbnail && exif->thumbnail_length > 0) {
        data->data = malloc(exif->thumbnail_length);
        memcpy(data->data, exif->thumbnail, exif->thumbnail_length);
        data->size = (unsigned int)exif->thumbnail_length;
        /* IFD1 describes the thumbnail: the tags EXIF 2.3 (4.6.8) requires
         * of a JPEG-compressed one besides its offset and length. */
        oi_exif_short(data, EXIF_IFD_1, EXIF_TAG_COMPRESSION, 6);
        oi_exif_rational(data, EXIF_IFD_1, EXIF_TAG_X_RESOLUTION, 72, 1);
        oi_exif_rational(data, EXIF_IFD_1, EXIF_TAG_Y_RESOLUTION, 72, 1);
        oi_exif_short(data, EXIF_IFD_1, EXIF_TAG_RESOLUTION_UNIT, 2);
    }
    exif_data_save_data(data, out, len);
    exif_data_unref(data);
    return *out ? 0 : -ENOMEM;
}

int oi_jpeg_encode(const oi_image *image, int quality, const oi_exif *exif,
                   uint8_t **out, size_t *out_length, char *err, size_t errlen) {
    struct jpeg_compress_struct cinfo;
    struct oi_jpeg_error jerr;
    unsigned char *buffer = NULL;
    unsigned long length = 0;
    uint8_t *rows = NULL;
    unsigned char *exif_block = NULL;
    const uint32_t w = image->width, h = image->height;

    if (w == 0 || h == 0 || w > 65500 || h > 65500) {
        snprintf(err, errlen, "oi_jpeg_encode: %ux%u is not a JPEG size (1..65500)", w, h);
        return -EINVAL;
    }
    memset(&cinfo, 0, sizeof cinfo);
    cinfo.err = jpeg_std_error(&jerr.mgr);
    jerr.mgr.error_exit = oi_jpeg_error_exit;
    if (setjmp(jerr.jump)) {
        snprintf(err, errlen, "libjpeg: %s", jerr.message);
        jpeg_destroy_compress(&cinfo);
        free(buffer);
        free(rows);
        free(exif_block);
        return -EIO;
    }
    jpeg_CreateCompress(&cinfo, JPEG_LIB_VERSION, sizeof cinfo);
    jpeg_mem_dest(&cinfo, &buffer, &length);
    cinfo.image_width = w;
    cinfo.image_height = h;
    int raw = image->format == OI_NV12 || image->format == OI_YUV420;
    switch (image->format) {
    case OI_NV12: case OI_YUV420: case OI_YUYV:
        cinfo.input_components = 3; cinfo.in_color_space = JCS_YCbCr; break;
    case OI_RGB24: cinfo.input_components = 3; cinfo.in_color_space = JCS_EXT_RGB; break;
    case OI_BGR24: cinfo.input_components = 3; cinfo.in_color_space = JCS_EXT_BGR; break;
    case OI_BGRX32: cinfo.input_components = 4; cinfo.in_color_space = JCS_EXT_BGRX; break;
    default:
        snprintf(err, errlen, "oi_jpeg_encode: unknown format %d", image->format);
        jpeg_destroy_compress(&cinfo);
        return -EINVAL;
    }
    jpeg_set_defaults(&cinfo);
    jpeg_set_quality(&cinfo, quality, TRUE);
    if (raw) {
        /* Straight from the YUV planes: 4:2:0, no colour conversion. */
        cinfo.raw_data_in = TRUE;
        jpeg_set_colorspace(&cinfo, JCS_YCbCr);
        cinfo.comp_info[0].h_samp_factor = 2; cinfo.comp_info[0].v_samp_factor = 2;
        cinfo.comp_info[1].h_samp_factor = 1; cinfo.comp_info[1].v_samp_factor = 1;
        cinfo.comp_info[2].h_samp_factor = 1; cinfo.comp_info[2].v_samp_factor = 1;
    }
    jpeg_start_compress(&cinfo, TRUE);
    if (exif) {
        unsigned int exif_length = 0;
        if (oi_exif_build(exif, w, h, &exif_block, &exif_length) == 0 && exif_length < 65533)
            jpeg_write_marker(&cinfo, JPEG_APP0 + 1, exif_block, exif_length);
        free(exif_block);
        exif_block = NULL;
    }
    if (raw) {
        /* One MCU row: 16 luma lines, 8 chroma lines. NV12's interleaved
         * chroma is split into two small row buffers (the only copy). */
        uint32_t cw = (w + 1) / 2;
        rows = malloc((size_t)cw * 16 + 16);
        uint8_t *cb = rows, *cr = rows + (size_t)cw * 8;
        JSAMPROW y_rows[16], cb_rows[8], cr_rows[8];
        JSAMPARRAY planes[3] = { y_rows, cb_rows, cr_rows };
        uint32_t ch = (h + 1) / 2;
        while (cinfo.next_scanline < h) {
            uint32_t top = cinfo.next_scanline;
            for (int i = 0; i < 16; i++) {
                uint32_t r = top + i < h ? top + i : h - 1;
                y_rows[i] = (JSAMPROW)(image->planes[0] + (size_t)r * image->strides[0]);
            }
            for (int i = 0; i < 8; i++) {
                uint32_t r = top / 2 + i < ch ? top / 2 + i : ch - 1;
                if (image->format == OI_YUV420) {
                    cb_rows[i] = (JSAMPROW)(image->planes[1] + (size_t)r * image->strides[1]);
                    cr_rows[i] = (JSAMPROW)(image->planes[2] + (size_t)r * image->strides[2]);
                } else {
                    const uint8_t *uv = image->planes[1] + (size_t)r * image->strides[1];
                    uint8_t *u = cb + (size_t)i * cw, *v = cr + (size_t)i * cw;
                    for (uint32_t x = 0; x < cw; x++) { u[x] = uv[2 * x]; v[x] = uv[2 * x + 1]; }
                    cb_rows[i] = u;
                    cr_rows[i] = v;
                }
            }
            jpeg_write_raw_data(&cinfo, planes, 16);
        }
    } else if (image->format == OI_YUYV) {
        rows = malloc((size_t)w * 3);
        while (cinfo.next_scanline < h) {
            const uint8_t *p = image->planes[0] + (size_t)cinfo.next_scanline * image->strides[0];
            for (uint32_t x = 0; x < w; x++) {
                rows[3 * x] = p[2 * x];
                rows[3 * x + 1] = p[(x & ~1u) * 2 + 1];
                rows[3 * x + 2] = p[(x & ~1u) * 2 + 3];
            }
            JSAMPROW row = rows;
            jpeg_write_scanlines(&cinfo, &row, 1);
        }
    } else {
        while (cinfo.next_scanline < h) {
            JSAMPROW row = (JSAMPROW)(image->planes[0] + (size_t)cinfo.next_scanline * image->strides[0]);
            jpeg_write_scanlines(&cinfo, &row, 1);
        }
    }
    jpeg_finish_compress(&cinfo);
    jpeg_destroy_compress(&cinfo);
    free(rows);
    *out = buffer;
    *out_length = length;
    return 0;
}
