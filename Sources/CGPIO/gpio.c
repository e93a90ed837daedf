/* gpio.c — see obscura_gpio.h. The only file that includes gpiod.h. */
#define _GNU_SOURCE
#include "obscura_gpio.h"

#include <gpiod.h>

#include <dirent.h>
#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#ifdef GPIOD_LINE_BULK_MAX_LINES
#define OG_V1 1
#else
#define OG_V1 0
#endif

static int fail(char *err, size_t len, int code, const char *fmt, ...)
{
    if (err && len) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, len, fmt, ap);
        va_end(ap);
    }
    return code > 0 ? -code : (code == 0 ? -EIO : code);
}

struct og_line {
    struct gpiod_chip *chip;
#if OG_V1
    struct gpiod_line *line;
#else
    struct gpiod_line_request *request;
    struct gpiod_edge_event_buffer *events;
    unsigned int offset;
#endif
    int debounced;
};

int og_api_version(void) { return OG_V1 ? 1 : 2; }

static int chip_matches(struct gpiod_chip *chip, const char *want)
{
#if OG_V1
    return strcmp(gpiod_chip_label(chip), want) == 0 || strcmp(gpiod_chip_name(chip), want) == 0;
#else
    struct gpiod_chip_info *info = gpiod_chip_get_info(chip);
    if (!info)
        return 0;
    int match = strcmp(gpiod_chip_info_get_label(info), want) == 0 ||
                strcmp(gpiod_chip_info_get_name(info), want) == 0;
    gpiod_chip_info_free(info);
    return match;
#endif
}

static int line_offset(struct gpiod_chip *chip, const char *name)
{
#if OG_V1
    struct gpiod_line *line = gpiod_chip_find_line(chip, name);
    return line ? (int)gpiod_line_offset(line) : -1;
#else
    return gpiod_chip_get_line_offset_from_name(chip, name);
#endif
}

int og_find_line(const char *chip_label, const char *line_name,
                 char *chip_path, size_t chip_path_len, unsigned int *offset,
                 char *err, size_t errlen)
{
    DIR *dir = opendir("/dev");
    if (!dir)
        return fail(err, errlen, errno, "opendir(/dev) failed: %s", strerror(errno));
    int found_chip = 0;
    struct dirent *entry;
    while ((entry = readdir(dir))) {
        if (strncmp(entry->d_name, "gpiochip", 8) != 0)
            continue;
        char path[300];
        snprintf(path, sizeof(path), "/dev/%s", entry->d_name);
        struct gpiod_chip *chip = gpiod_chip_open(path);
        if (!chip)
            continue;
        if (chip_matches(chip, chip_label)) {
            found_chip = 1;
            int off = line_offset(chip, line_name);
            gpiod_chip_close(chip);
            if (off >= 0) {
                closedir(dir);
                snprintf(chip_path, chip_path_len, "%s", path);
                *offset = (unsigned int)off;
                return 0;
            }
            continue;
        }
        gpiod_chip_close(chip);
    }
    closedir(dir);
    if (!found_chip)
        return fail(err, errlen, ENODEV, "gpiod_chip_open: no GPIO chip labelled \"%s\" under /dev/gpiochip*", chip_label);
    return fail(err, errlen, ENOENT, "no line named \"%s\" on GPIO chip \"%s\"", line_name, chip_label);
}

#if OG_V1
static int v1_flags(int bias, int active_low)
{
    int flags = active_low ? GPIOD_LINE_REQUEST_FLAG_ACTIVE_LOW : 0;
    switch (bias) {
    case OG_BIAS_DISABLED: flags |= GPIOD_LINE_REQUEST_FLAG_BIAS_DISABLE; break;
    case OG_BIAS_PULL_UP: flags |= GPIOD_LINE_REQUEST_FLAG_BIAS_PULL_UP; break;
    case OG_BIAS_PULL_DOWN: flags |= GPIOD_LINE_REQUEST_FLAG_BIAS_PULL_DOWN; break;
    default: break;
    }
    return flags;
}
#else
static enum gpiod_line_bias v2_bias(int bias)
{
    switch (bias) {
    case OG_BIAS_DISABLED: return GPIOD_LINE_BIAS_DISABLED;
    case OG_BIAS_PULL_UP: return GPIOD_LINE_BIAS_PULL_UP;
    case OG_BIAS_PULL_DOWN: return GPIOD_LINE_BIAS_PULL_DOWN;
    default: return GPIOD_LINE_BIAS_AS_IS;
    }
}

static int v2_request(struct og_line *l, const char *consumer, struct gpiod_line_settings *settings,
                      char *err, size_t errlen)
{
    int ret = 0;
    struct gpiod_line_config *lc = gpiod_line_config_new();
    struct gpiod_request_config *rc = gpiod_request_config_new();
    if (!lc || !rc) {
        ret = fail(err, errlen, ENOMEM, "gpiod_line_config_new failed");
        goto out;
    }
    if (gpiod_line_config_add_line_settings(lc, &l->offset, 1, settings) < 0) {
        ret = fail(err, errlen, errno, "gpiod_line_config_add_line_settings failed: %s", strerror(errno));
        goto out;
    }
    gpiod_request_config_set_consumer(rc, consumer);
    l->request = gpiod_chip_request_lines(l->chip, rc, lc);
    if (!l->request)
        ret = fail(err, errlen, errno, "gpiod_chip_request_lines failed for line %u: %s", l->offset, strerror(errno));
out:
    gpiod_line_config_free(lc);
    gpiod_request_config_free(rc);
    return ret;
}
#endif

static struct og_line *open_line(const char *chip_path, unsigned int offset, char *err, size_t errlen, int *ret)
{
    struct og_line *l = calloc(1, sizeof(*l));
    if (!l) {
        *ret = fail(err, errlen, ENOMEM, "calloc failed");
        return NULL;
    }
    l->chip = gpiod_chip_open(chip_path);
    if (!l->chip) {
        *ret = fail(err, errlen, errno, "gpiod_chip_open(%s) failed: %s", chip_path, strerror(errno));
        free(l);
        return NULL;
    }
#if OG_V1
    l->line = gpiod_chip_get_line(l->chip, offset);
    if (!l->line) {
        *ret = fail(err, errlen, errno, "gpiod_chip_get_line(%s, %u) failed: %s", chip_path, offset, strerror(errno));
        gpiod_chip_close(l->chip);
        free(l);
        return NULL;
    }
#else
    l->offset = offset;
#endif
    *ret = 0;
    return l;
}

int og_request_input(const char *chip_path, unsigned int offset, const char *consumer,
                     const og_input_config *config, og_line **out, char *err, size_t errlen)
{
    int ret;
    struct og_line *l = open_line(chip_path, offset, err, errlen, &ret);
    if (!l)
        return ret;
#if OG_V1
    struct gpiod_line_request_config rc = { consumer, GPIOD_LINE_REQUEST_DIRECTION_INPUT, 0 };
    switch (config->edge) {
    case OG_EDGE_RISING: rc.request_type = GPIOD_LINE_REQUEST_EVENT_RISING_EDGE; break;
    case OG_EDGE_FALLING: rc.request_type = GPIOD_LINE_REQUEST_EVENT_FALLING_EDGE; break;
    case OG_EDGE_BOTH: rc.request_type = GPIOD_LINE_REQUEST_EVENT_BOTH_EDGES; break;
    default: break;
    }
    rc.flags = v1_flags(config->bias, config->active_low);
    if (gpiod_line_request(l->line, &rc, 0) < 0) {
        ret = fail(err, errlen, errno, "gpiod_line_request(%s, %u) failed: %s", chip_path, offset, strerror(errno));
        og_release(l);
        return ret;
    }
    l->debounced = 0;
#else
    struct gpiod_line_settings *s = gpiod_line_settings_new();
    if (!s) {
        og_release(l);
        return fail(err, errlen, ENOMEM, "gpiod_line_settings_new failed");
    }
    gpiod_line_settings_set_direction(s, GPIOD_LINE_DIRECTION_INPUT);
    enum gpiod_line_edge edge = GPIOD_LINE_EDGE_NONE;
    if (config->edge == OG_EDGE_RISING) edge = GPIOD_LINE_EDGE_RISING;
    if (config->edge == OG_EDGE_FALLING) edge = GPIOD_LINE_EDGE_FALLING;
    if (config->edge == OG_EDGE_BOTH) edge = GPIOD_LINE_EDGE_BOTH;
    gpiod_line_settings_set_edge_detection(s, edge);
    gpiod_line_settings_set_bias(s, v2_bias(config->bias));
    gpiod_line_settings_set_active_low(s, config->active_low != 0);
    gpiod_line_settings_set_event_clock(s, GPIOD_LINE_CLOCK_MONOTONIC);
    if (config->debounce_us)
        gpiod_line_settings_set_debounce_period_us(s, config->debounce_us);
    ret = v2_request(l, consumer, s, err, errlen);
    gpiod_line_settings_free(s);
    if (ret < 0) {
        og_release(l);
        return ret;
    }
    l->events = gpiod_edge_event_buffer_new(16);
    l->debounced = config->debounce_us != 0;
#endif
    *out = l;
    return 0;
}

int og_request_output(const char *chip_path, unsigned int offset, const char *consumer,
                      int active_low, int initial_value, og_line **out, char *err, size_t errlen)
{
    int ret;
    struct og_line *l = open_line(chip_path, offset, err, errlen, &ret);
    if (!l)
        return ret;
#if OG_V1
    struct gpiod_line_request_config rc = { consumer, GPIOD_LINE_REQUEST_DIRECTION_OUTPUT,
                                            active_low ? GPIOD_LINE_REQUEST_FLAG_ACTIVE_LOW : 0 };
    if (gpiod_line_request(l->line, &rc, initial_value) < 0) {
        ret = fail(err, errlen, errno, "gpiod_line_request(%s, %u, output) failed: %s", chip_path, offset, strerror(errno));
        og_release(l);
        return ret;
    }
#else
    struct gpiod_line_settings *s = gpiod_line_settings_new();
    if (!s) {
        og_release(l);
        return fail(err, errlen, ENOMEM, "gpiod_line_settings_new failed");
    }
    gpiod_line_settings_set_direction(s, GPIOD_LINE_DIRECTION_OUTPUT);
    gpiod_line_settings_set_active_low(s, active_low != 0);
    gpiod_line_settings_set_output_value(s, initial_value ? GPIOD_LINE_VALUE_ACTIVE : GPIOD_LINE_VALUE_INACTIVE);
    ret = v2_request(l, consumer, s, err, errlen);
    gpiod_line_settings_free(s);
    if (ret < 0) {
        og_release(l);
        return ret;
    }
#endif
    *out = l;
    return 0;
}

void og_release(og_line *l)
{
    if (!l)
        return;
#if OG_V1
    if (l->line && gpiod_line_is_requested(l->line))
        gpiod_line_release(l->line);
#else
    if (l->request)
        gpiod_line_request_release(l->request);
    if (l->events)
        gpiod_edge_event_buffer_free(l->events);
#endif
    if (l->chip)
        gpiod_chip_close(l->chip);
    free(l);
}

int og_line_debounced(const og_line *l) { return l->debounced; }

int og_line_fd(const og_line *l)
{
#if OG_V1
    return gpiod_line_event_get_fd(l->line);
#else
    return gpiod_line_request_get_fd(l->request);
#endif
}

int og_get_value(og_line *l, char *err, size_t errlen)
{
#if OG_V1
    int v = gpiod_line_get_value(l->line);
    if (v < 0)
        return fail(err, errlen, errno, "gpiod_line_get_value failed: %s", strerror(errno));
    return v;
#else
    enum gpiod_line_value v = gpiod_line_request_get_value(l->request, l->offset);
    if (v == GPIOD_LINE_VALUE_ERROR)
        return fail(err, errlen, errno, "gpiod_line_request_get_value failed: %s", strerror(errno));
    return v == GPIOD_LINE_VALUE_ACTIVE;
#endif
}

int og_set_value(og_line *l, int value, char *err, size_t errlen)
{
#if OG_V1
    if (gpiod_line_set_value(l->line, value ? 1 : 0) < 0)
        return fail(err, errlen, errno, "gpiod_line_set_value failed: %s", strerror(errno));
#else
    if (gpiod_line_request_set_value(l->request, l->offset,
                                     value ? GPIOD_LINE_VALUE_ACTIVE : GPIOD_LINE_VALUE_INACTIVE) < 0)
        return fail(err, errlen, errno, "gpiod_line_request_set_value failed: %s", strerror(errno));
#endif
    return 0;
}

int og_wait(og_line *l, int64_t timeout_ns, char *err, size_t errlen)
{
#if OG_V1
    struct timespec ts = { (time_t)(timeout_ns / 1000000000), (long)(timeout_ns % 1000000000) };
    int r = gpiod_line_event_wait(l->line, timeout_ns < 0 ? NULL : &ts);
    if (r < 0)
        return fail(err, errlen, errno, "gpiod_line_event_wait failed: %s", strerror(errno));
    return r;
#else
    int r = gpiod_line_request_wait_edge_events(l->request, timeout_ns);
    if (r < 0)
        return fail(err, errlen, errno, "gpiod_line_request_wait_edge_events failed: %s", strerror(errno));
    return r;
#endif
}

int og_read(og_line *l, og_event *events, int max, char *err, size_t errlen)
{
    if (max <= 0)
        return 0;
#if OG_V1
    struct gpiod_line_event raw[16];
    int n = gpiod_line_event_read_multiple(l->line, raw, (unsigned)(max < 16 ? max : 16));
    if (n < 0)
        return fail(err, errlen, errno, "gpiod_line_event_read_multiple failed: %s", strerror(errno));
    for (int i = 0; i < n; i++) {
        events[i].rising = raw[i].event_type == GPIOD_LINE_EVENT_RISING_EDGE;
        events[i].timestamp_ns = (uint64_t)raw[i].ts.tv_sec * 1000000000ull + (uint64_t)raw[i].ts.tv_nsec;
    }
    return n;
#else
    int n = gpiod_line_request_read_edge_events(l->request, l->events, (size_t)(max < 16 ? max : 16));
    if (n < 0)
        return fail(err, errlen, errno, "gpiod_line_request_read_edge_events failed: %s", strerror(errno));
    for (int i = 0; i < n; i++) {
        struct gpiod_edge_event *e = gpiod_edge_event_buffer_get_event(l->events, (unsigned long)i);
        events[i].rising = gpiod_edge_event_get_event_type(e) == GPIOD_EDGE_EVENT_RISING_EDGE;
        events[i].timestamp_ns = gpiod_edge_event_get_timestamp_ns(e);
    }
    return n;
#endif
}
