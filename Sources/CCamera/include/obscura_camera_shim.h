/*
 * obscura_camera_shim.h — how the program reaches the camera shim.
 *
 * libcamera has no stable ABI: every minor release is a new soname, and a
 * program linked to one stops starting when an upgrade replaces it. So the
 * program never links libcamera. camera.cpp (Sources/CCameraShim) is built
 * once per libcamera ABI into libobscura-camera.so.<version>, and the one
 * matching the installed libcamera is opened at run time (ObscuraCamera's
 * CameraLibrary chooses it; oc_shim_open loads it). The oc_* functions of
 * obscura_camera.h, as the program sees them, forward through the table the
 * shim hands over.
 *
 * A shim exports one symbol, OC_SHIM_ENTRY, everything else hidden: the
 * program's own oc_* forwarders can never stand in for the shim's.
 */
#ifndef OBSCURA_CAMERA_SHIM_H
#define OBSCURA_CAMERA_SHIM_H

#include "obscura_camera.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Bumped whenever the table or a structure of obscura_camera.h changes. */
#define OC_SHIM_ABI 1
#define OC_SHIM_ENTRY "obscura_camera_shim"

/* The sizes of the structures both sides exchange: a shim from another build
 * of Obscura is refused rather than misread. */
#define OC_SHIM_LAYOUT                                                        \
    ((uint64_t)sizeof(oc_camera_info) | (uint64_t)sizeof(oc_format_info) << 12 \
     | (uint64_t)sizeof(oc_control_info) << 24                                \
     | (uint64_t)sizeof(oc_stream_result) << 36                               \
     | (uint64_t)sizeof(oc_completion) << 48)

typedef struct {
    uint32_t abi;    /* OC_SHIM_ABI */
    uint64_t layout; /* OC_SHIM_LAYOUT */
    const char *(*libcamera_version)(void);
    const char *(*libcamera_runtime_version)(void);
    int (*manager_create)(oc_manager **out, char *err, size_t errlen);
    void (*manager_destroy)(oc_manager *manager);
    int (*manager_camera_count)(oc_manager *manager);
    int (*manager_camera_info)(oc_manager *manager, int index, oc_camera_info *out);
    int (*manager_formats)(oc_manager *manager, int camera_index, int role,
                           oc_format_info *out, int max, char *err, size_t errlen);
    int (*manager_format_size)(oc_manager *manager, int camera_index, int role,
                               int format_index, int size_index,
                               uint32_t *width, uint32_t *height);
    int (*manager_controls)(oc_manager *manager, int camera_index,
                            oc_control_info *out, int max);
    void (*manager_set_hotplug)(oc_manager *manager, oc_hotplug_fn fn, void *context);
    int (*camera_acquire)(oc_manager *manager, const char *id, oc_camera **out,
                          char *err, size_t errlen);
    void (*camera_release)(oc_camera *camera);
    void (*camera_abandon)(oc_camera *camera);
    int (*camera_configure)(oc_camera *camera, const oc_stream_request *requests,
                            int count, oc_stream_result *result,
                            oc_config_options *options, char *err, size_t errlen);
    int (*camera_buffer)(oc_camera *camera, int stream, int index, oc_buffer_info *out);
    const char *(*control_name)(uint32_t id);
    int (*camera_start)(oc_camera *camera, oc_completion_fn fn, void *context,
                        const uint32_t *queue, int count, char *err, size_t errlen);
    int (*camera_requeue)(oc_camera *camera, uint64_t request, char *err, size_t errlen);
    int (*camera_stop)(oc_camera *camera, char *err, size_t errlen);
    int (*camera_set_control)(oc_camera *camera, const char *name,
                              const double *values, int count, char *err, size_t errlen);
} oc_shim_table;

typedef const oc_shim_table *(*oc_shim_entry_fn)(void);

/* --- In the program (Sources/CCamera/loader.c) ---------------------------- */

/* Opens the shim at `path` (dlopen, RTLD_NOW | RTLD_LOCAL) and forwards the
 * oc_* functions to it for the rest of the process: libcamera cannot be
 * unloaded, so a shim, once open, stays. Returns 0; -EALREADY when one is
 * open already; -ENOENT when dlopen fails (the message names the missing
 * library); -ENOEXEC when the file is not a shim of this build. */
int oc_shim_open(const char *path, char *err, size_t errlen);

/* 1 when a shim is open. */
int oc_shim_is_open(void);

/* Sets LIBCAMERA_LOG_LEVELS to errors only unless the user set it. For the
 * program's main, before any thread is started. */
void oc_quiet_libcamera_by_default(void);

#ifdef __cplusplus
}
#endif

#endif
