/*
 * Drives the GPIO shim (Sources/CGPIO) directly, so that the same code can be
 * checked on the virtual board's gpio-sim built against libgpiod v1 and v2:
 *
 *   gpio-shim-check CHIP_LABEL INPUT_LINE OUTPUT_LINE SECONDS [EXPECT]
 *
 * Requests INPUT_LINE (both edges, 10 ms debounce) and OUTPUT_LINE (driven
 * high), then counts edges for SECONDS — or, with EXPECT, until EXPECT rising
 * and EXPECT falling edges came, plus half a second for any surplus — and
 * prints:
 *   api=1|2 debounced=0|1 output=ready
 *   rising=N falling=M
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include "obscura_gpio.h"

static int64_t now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

int main(int argc, char **argv) {
    if (argc != 5 && argc != 6) { fprintf(stderr, "usage: %s CHIP INPUT OUTPUT SECONDS [EXPECT]\n", argv[0]); return 2; }
    int expect = argc == 6 ? atoi(argv[5]) : -1;
    char err[256], path[256];
    unsigned int in_offset, out_offset;
    if (og_find_line(argv[1], argv[2], path, sizeof path, &in_offset, err, sizeof err) < 0) { fprintf(stderr, "%s\n", err); return 1; }
    og_input_config config = { .edge = OG_EDGE_BOTH, .bias = OG_BIAS_AS_IS, .active_low = 0, .debounce_us = 10000 };
    og_line *in, *out;
    if (og_request_input(path, in_offset, "gpio-shim-check", &config, &in, err, sizeof err) < 0) { fprintf(stderr, "%s\n", err); return 1; }
    if (og_find_line(argv[1], argv[3], path, sizeof path, &out_offset, err, sizeof err) < 0) { fprintf(stderr, "%s\n", err); return 1; }
    if (og_request_output(path, out_offset, "gpio-shim-check", 0, 1, &out, err, sizeof err) < 0) { fprintf(stderr, "%s\n", err); return 1; }
    printf("api=%d debounced=%d output=ready\n", og_api_version(), og_line_debounced(in));
    fflush(stdout);
    int rising = 0, falling = 0;
    int64_t end = now_ns() + (int64_t)(atof(argv[4]) * 1e9);
    while (now_ns() < end) {
        int ready = og_wait(in, end - now_ns(), err, sizeof err);
        if (ready < 0) { fprintf(stderr, "%s\n", err); return 1; }
        if (ready == 0) break;
        og_event events[16];
        int n = og_read(in, events, 16, err, sizeof err);
        if (n < 0) { fprintf(stderr, "%s\n", err); return 1; }
        for (int i = 0; i < n; i++) events[i].rising ? rising++ : falling++;
        if (expect >= 0 && rising >= expect && falling >= expect) {
            int64_t grace = now_ns() + 500000000;
            if (grace < end) end = grace;
        }
    }
    printf("rising=%d falling=%d\n", rising, falling);
    og_release(in);
    og_release(out);
    return 0;
}
