/*
 * obscura_camera.h — a plain C facade over libcamera (C++).
 *
 * Swift imports this header; only camera.cpp (Sources/CCameraShim) includes
 * libcamera. It is built once per libcamera ABI (0.0.3 for Debian 12, 0.3 to
 * 0.7 for newer Debian and Raspberry Pi OS; version differences handled with
 * LIBCAMERA_VERSION_MAJOR/MINOR guards), and the program reaches the one that
 * matches the installed libcamera through loader.c (obscura_camera_shim.h).
 *
 * Conventions: functions returning int answer 0 on success or a negative errno;
 * on failure they write a message naming the libcamera call that failed into
 * `err` (when not NULL). Strings returned as `const char *` are owned by the
 * object they come from and live as long as it does.
 *
 * Threading: the completion callback runs on libcamera's internal thread.
 */
#ifndef OBSCURA_CAMERA_H
#define OBSCURA_CAMERA_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Inside a shim (camera.cpp) the functions are internal: only its table
 * leaves the library (obscura_camera_shim.h). */
#ifdef OC_SHIM_BUILD
#define OC_API __attribute__((visibility("hidden")))
#else
#define OC_API
#endif

typedef struct oc_manager oc_manager;
typedef struct oc_camera oc_camera;

enum oc_role {
    OC_ROLE_RAW = 0,
    OC_ROLE_STILL = 1,
    OC_ROLE_VIDEO = 2,
    OC_ROLE_VIEWFINDER = 3,
};

enum oc_location {
    OC_LOCATION_UNKNOWN = -1,
    OC_LOCATION_FRONT = 0,
    OC_LOCATION_BACK = 1,
    OC_LOCATION_EXTERNAL = 2,
};

enum oc_config_status {
    OC_CONFIG_VALID = 0,
    OC_CONFIG_ADJUSTED = 1,
    OC_CONFIG_INVALID = 2,
};

#define OC_MAX_PLANES 4
#define OC_MAX_STREAMS 4

/* Version of libcamera the facade was compiled against, e.g. "0.0.3". */
OC_API const char *oc_libcamera_version(void);

/* The version the loaded libcamera reports of itself (CameraManager::version(),
 * e.g. "v0.5.2+99-bfd68f78" for Raspberry Pi OS's build). */
OC_API const char *oc_libcamera_runtime_version(void);

/* The process-wide camera manager. libcamera allows only one per process. */
OC_API int oc_manager_create(oc_manager **out, char *err, size_t errlen);
OC_API void oc_manager_destroy(oc_manager *manager);
OC_API int oc_manager_camera_count(oc_manager *manager);

typedef struct {
    char id[256];
    char model[128];
    int32_t location;          /* enum oc_location */
    int32_t rotation;          /* degrees, or -1 when the camera does not say */
    int64_t min_frame_duration_us; /* FrameDurationLimits, or -1 when absent */
    int64_t max_frame_duration_us;
    int32_t pixel_array_width; /* or 0 */
    int32_t pixel_array_height;
} oc_camera_info;

OC_API int oc_manager_camera_info(oc_manager *manager, int index, oc_camera_info *out);

/* One stream format offered for a role: a pixel format with a size range and
 * the discrete sizes libcamera lists for it. */
typedef struct {
    uint32_t fourcc;    /* libcamera/DRM fourcc */
    uint64_t modifier;
    uint32_t min_width, min_height, max_width, max_height;
    uint32_t hstep, vstep;
    uint32_t size_count;  /* discrete sizes available through oc_manager_format_size */
} oc_format_info;

/* Formats the camera offers for `role`. Writes up to `max` entries; returns how
 * many exist (may exceed max), or a negative errno. */
OC_API int oc_manager_formats(oc_manager *manager, int camera_index, int role,
                       oc_format_info *out, int max, char *err, size_t errlen);
OC_API int oc_manager_format_size(oc_manager *manager, int camera_index, int role,
                           int format_index, int size_index,
                           uint32_t *width, uint32_t *height);

enum oc_control_type {
    OC_CONTROL_NONE = 0,
    OC_CONTROL_BOOL = 1,
    OC_CONTROL_BYTE = 2,
    OC_CONTROL_INT32 = 3,
    OC_CONTROL_INT64 = 4,
    OC_CONTROL_FLOAT = 5,
    OC_CONTROL_STRING = 6,
    OC_CONTROL_RECTANGLE = 7,
    OC_CONTROL_SIZE = 8,
};

typedef struct {
    uint32_t id;
    char name[64];
    int32_t type;        /* enum oc_control_type */
    int32_t is_array;
    double min, max, def; /* numeric controls; NaN when not numeric */
    int32_t value_count;  /* enumerated values (e.g. AfMode), 0 when a range */
    double values[16];
    int32_t rect_max[4];  /* rectangle controls (ScalerCrop): the largest, x y w h */
} oc_control_info;

/* Controls the camera offers. Same counting convention as oc_manager_formats. */
OC_API int oc_manager_controls(oc_manager *manager, int camera_index,
                        oc_control_info *out, int max);

/* Camera hot-plug: `added` is 1 when a camera appears, 0 when it goes. Runs on
 * libcamera's thread. The manager's camera list is refreshed before the call. */
typedef void (*oc_hotplug_fn)(void *context, int added, const char *id);
OC_API void oc_manager_set_hotplug(oc_manager *manager, oc_hotplug_fn fn, void *context);

/* --- An acquired camera: Acquired → Configured → Running ------------------ */

OC_API int oc_camera_acquire(oc_manager *manager, const char *id, oc_camera **out,
                      char *err, size_t errlen);
/* Stops if running, frees buffers, releases the camera. */
OC_API void oc_camera_release(oc_camera *camera);
/* Lets go of a camera whose device vanished without stopping it (stopping
 * one trips libcamera's assertions): no more completions are delivered and
 * our references go; libcamera tears it down with its manager. */
OC_API void oc_camera_abandon(oc_camera *camera);

typedef struct {
    int32_t role;          /* enum oc_role */
    uint32_t fourcc;       /* 0: the camera's default for the role */
    uint32_t width, height; /* 0: the camera's default */
    uint32_t buffer_count;  /* 0: the camera's default */
    uint64_t modifier;      /* with fourcc, e.g. MIPI CSI-2 packed raw */
} oc_stream_request;

/* Camera-wide options applied with the configuration. */
typedef struct {
    int32_t rotation;  /* 0, 90, 180, 270 (clockwise) */
    int32_t mirror;    /* 1: horizontal flip */
} oc_config_options;

typedef struct {
    uint32_t fourcc;
    uint32_t width, height;
    uint32_t stride;
    uint32_t frame_size;
    uint32_t buffer_count;
    int32_t colorspace_range; /* 1 full, 0 limited, -1 unknown */
    uint64_t modifier;
} oc_stream_result;

/* Validates and applies one configuration for `count` streams. Returns the
 * enum oc_config_status (>= 0) with the resolved streams in `result`, or a
 * negative errno. An invalid configuration is not applied. */
OC_API int oc_camera_configure(oc_camera *camera, const oc_stream_request *requests,
                        int count, oc_stream_result *result,
                        oc_config_options *options, /* in: asked; out: applied */
                        char *err, size_t errlen);

typedef struct {
    int32_t fd;       /* dmabuf, owned by libcamera's allocator */
    uint32_t offset;
    uint32_t length;
} oc_plane;

typedef struct {
    uint32_t plane_count;
    oc_plane planes[OC_MAX_PLANES];
} oc_buffer_info;

/* Buffers are allocated by oc_camera_configure. Their fds belong to the
 * allocator and are closed by the next configure or release: dup what must
 * outlive them. */
OC_API int oc_camera_buffer(oc_camera *camera, int stream, int index, oc_buffer_info *out);

enum oc_metadata_flag {
    OC_META_SENSOR_TIMESTAMP = 1 << 0,
    OC_META_EXPOSURE_TIME = 1 << 1,
    OC_META_ANALOGUE_GAIN = 1 << 2,
    OC_META_DIGITAL_GAIN = 1 << 3,
    OC_META_COLOUR_TEMPERATURE = 1 << 4,
    OC_META_LUX = 1 << 5,
    OC_META_FRAME_DURATION = 1 << 6,
    OC_META_LENS_POSITION = 1 << 7,
    OC_META_AF_STATE = 1 << 8,
    OC_META_AE_LOCKED = 1 << 9,
};

typedef struct {
    int32_t buffer_index;
    uint32_t sequence;
    int32_t status;      /* 0 success, 1 error, 2 cancelled */
    uint64_t timestamp_ns;
    uint32_t plane_count;
    uint32_t bytesused[OC_MAX_PLANES];
} oc_stream_completion;

typedef struct {
    uint64_t request;        /* the request's index (0 ..< buffer_count) */
    int32_t cancelled;       /* 1 when the camera stopped before filling it */
    uint32_t stream_mask;    /* which streams carry a buffer */
    oc_stream_completion streams[OC_MAX_STREAMS];
    uint32_t present;        /* enum oc_metadata_flag */
    int64_t sensor_timestamp_ns;
    int32_t exposure_time_us;
    float analogue_gain;
    float digital_gain;
    int32_t colour_temperature;
    float lux;
    int64_t frame_duration_us;
    float lens_position;
    int32_t af_state;
    int32_t ae_locked;
    /* Every scalar (or up to 4-element) metadata entry, by control id. */
    uint32_t entry_count;
    struct oc_metadata_entry {
        uint32_t id;
        uint32_t count;
        uint32_t requested; /* 1: a control the request carried, 0: metadata */
        double values[4];
    } entries[40];
} oc_completion;

/* The name of a control or metadata id (from libcamera's control list), or NULL. */
OC_API const char *oc_control_name(uint32_t id);

typedef void (*oc_completion_fn)(void *context, const oc_completion *completion);

/* Starts streaming and queues the requests named in `queue` (indices into the
 * configuration's requests: those whose buffers nobody holds). Pending
 * controls go with the first of them. */
OC_API int oc_camera_start(oc_camera *camera, oc_completion_fn fn, void *context,
                    const uint32_t *queue, int count, char *err, size_t errlen);
/* Gives a completed request back to the camera (with pending controls). */
OC_API int oc_camera_requeue(oc_camera *camera, uint64_t request, char *err, size_t errlen);
/* Stops streaming; pending requests complete as cancelled before it returns. */
OC_API int oc_camera_stop(oc_camera *camera, char *err, size_t errlen);

/* Sets a control by name for the next queued request (or the start). Values
 * are converted to the control's type; a control the camera lacks or a value
 * count that does not fit is an error. Rectangles are x, y, w, h quadruples. */
OC_API int oc_camera_set_control(oc_camera *camera, const char *name,
                          const double *values, int count, char *err, size_t errlen);

#ifdef __cplusplus
}
#endif

#endif
