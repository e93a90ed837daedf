#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libavutil/avutil.h>
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
