/* obscura_toml.h — a plain C face on toml++ (Debian's libtomlplusplus-dev,
 * used header-only): parse a document, visit its tables and values with
 * their lines. No policy: what a key means is the caller's business. */
#ifndef OBSCURA_TOML_H
#define OBSCURA_TOML_H
#include <stddef.h>
#include <stdint.h>
#ifdef __cplusplus
extern "C" {
#endif

enum ot_kind {
    OT_TABLE = 1,       /* a table (a [header], an inline table, or implied by a dotted key) */
    OT_STRING,
    OT_INTEGER,
    OT_FLOAT,
    OT_BOOL,
    OT_ARRAY_BEGIN,     /* the elements follow, then OT_ARRAY_END; all carry the array's key */
    OT_ARRAY_END,
    OT_UNSUPPORTED      /* valid TOML of a kind the caller does not take; `string` says which */
};

typedef struct ot_event {
    int kind;
    /* Dotted key; a segment that is not a bare key is "quoted". */
    const char *key;
    /* OT_STRING: the value (UTF-8, may hold NULs: use string_length);
     * OT_UNSUPPORTED: what the value is, e.g. "a date". */
    const char *string;
    size_t string_length;
    int64_t integer;
    double number;
    int boolean;
    /* 1-based line of the value (or table) in the document; 0 if unknown. */
    int line;
} ot_event;

typedef void (*ot_visit)(void *context, const ot_event *event);

/* The toml++ version compiled in, e.g. 30300 for 3.3.0. */
int ot_version(void);

/* Parses `length` bytes of TOML and visits every table and value (tables
 * before their contents; keys within a table in sorted order). Returns 0,
 * or -1 with the parser's message in `err` and its position in *line and
 * *column. */
int ot_parse(const char *text, size_t length, ot_visit visit, void *context,
             char *err, size_t errlen, int *line, int *column);

#ifdef __cplusplus
}
#endif
#endif
