/*
 * obscura_gpio.h — one version-neutral API over libgpiod v1 (1.6) and v2 (2.x).
 *
 * The API is picked at compile time in gpio.c: v1's gpiod.h alone defines
 * GPIOD_LINE_BULK_MAX_LINES. Lines are found by chip label and line name,
 * never by number (boards renumber their chips).
 *
 * Functions returning int answer 0 (or a count) on success and a negative
 * errno on failure, with a message naming the libgpiod call in `err`.
 * An og_line owns its request (and so its file descriptor) until og_release.
 */
#ifndef OBSCURA_GPIO_H
#define OBSCURA_GPIO_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct og_line og_line;

enum og_bias { OG_BIAS_AS_IS = 0, OG_BIAS_DISABLED = 1, OG_BIAS_PULL_UP = 2, OG_BIAS_PULL_DOWN = 3 };
enum og_edge { OG_EDGE_NONE = 0, OG_EDGE_RISING = 1, OG_EDGE_FALLING = 2, OG_EDGE_BOTH = 3 };

/* 1 for libgpiod v1, 2 for v2. */
int og_api_version(void);

/* Finds the chip whose label is `chip_label` (or whose name, e.g. "gpiochip0",
 * matches) and the offset of the line called `line_name` on it. */
int og_find_line(const char *chip_label, const char *line_name,
                 char *chip_path, size_t chip_path_len, unsigned int *offset,
                 char *err, size_t errlen);

typedef struct {
    int32_t edge;          /* enum og_edge */
    int32_t bias;          /* enum og_bias */
    int32_t active_low;
    uint32_t debounce_us;  /* applied by the kernel with v2; see og_line_debounced */
} og_input_config;

int og_request_input(const char *chip_path, unsigned int offset, const char *consumer,
                     const og_input_config *config, og_line **out, char *err, size_t errlen);
int og_request_output(const char *chip_path, unsigned int offset, const char *consumer,
                      int active_low, int initial_value, og_line **out, char *err, size_t errlen);
void og_release(og_line *line);

/* 1 when the kernel debounces this line (v2 with a debounce period). */
int og_line_debounced(const og_line *line);
/* Descriptor to poll for edge events; owned by the line. */
int og_line_fd(const og_line *line);

int og_get_value(og_line *line, char *err, size_t errlen);
int og_set_value(og_line *line, int value, char *err, size_t errlen);

typedef struct {
    int32_t rising;          /* 1 rising (inactive → active), 0 falling */
    uint64_t timestamp_ns;   /* kernel timestamp */
} og_event;

/* Waits up to timeout_ns (negative: forever) for edge events: 1 ready, 0 timeout. */
int og_wait(og_line *line, int64_t timeout_ns, char *err, size_t errlen);
/* Reads up to max pending events; returns how many. */
int og_read(og_line *line, og_event *events, int max, char *err, size_t errlen);

#ifdef __cplusplus
}
#endif

#endif
