#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libavutil/avutil.h>
#include <libavutil/avstring.h>
#include <libavutil/mem.h>
#include <string.h>
#include <libavutil/audio_fifo.h>
#include <libavutil/channel_layout.h>
#include <libavutil/imgutils.h>
#include <libavutil/opt.h>
#include <libavutil/pixdesc.h>
#include <libavutil/sha.h>
#include <libswscale/swscale.h>
#include <libswresample/swresample.h>

/* Macros Swift cannot import. */
static inline int obscura_averror(int e) { return AVERROR(e); }
static inline int obscura_averror_eof(void) { return AVERROR_EOF; }
static inline int64_t obscura_av_nopts(void) { return AV_NOPTS_VALUE; }

/* The pixel formats an encoder takes (count in *count; NULL: it did not say).
   FFmpeg 7.1 (libavcodec 61.13) answers through avcodec_get_supported_config
   and deprecates AVCodec.pix_fmts; FFmpeg 5.1 has only the latter. */
static inline const enum AVPixelFormat *obscura_codec_pixel_formats(const AVCodec *codec, int *count) {
    *count = 0;
#if LIBAVCODEC_VERSION_INT >= AV_VERSION_INT(61, 13, 100)
    const void *formats = NULL;
    if (avcodec_get_supported_config(NULL, codec, AV_CODEC_CONFIG_PIX_FORMAT, 0, &formats, count) < 0)
        return NULL;
    return (const enum AVPixelFormat *)formats;
#else
    const enum AVPixelFormat *formats = codec->pix_fmts;
    while (formats && formats[*count] != AV_PIX_FMT_NONE)
        (*count)++;
    return formats;
#endif
}

/* One line of text as a packet of `ctx`'s text encoder (mov_text, subrip),
   which takes a cue in ASS's event form ("ReadOrder,Layer,Style,Name,
   MarginL,MarginR,MarginV,Effect,Text"). Returns the packet's size, or a
   negative AVERROR. */
static inline int obscura_encode_text(AVCodecContext *ctx, const char *text, uint8_t *out, int size) {
    AVSubtitleRect rect;
    AVSubtitleRect *rects[1] = { &rect };
    AVSubtitle cue;
    memset(&rect, 0, sizeof rect);
    memset(&cue, 0, sizeof cue);
    char *event = av_asprintf("0,0,Default,,0,0,0,,%s", text);
    if (!event) return AVERROR(ENOMEM);
    rect.type = SUBTITLE_ASS;
    rect.ass = event;
    cue.num_rects = 1;
    cue.rects = rects;
    int n = avcodec_encode_subtitle(ctx, out, size, &cue);
    av_free(event);
    return n;
}
