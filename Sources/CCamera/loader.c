// loader.c — the program's side of the camera shim: opens the one chosen for
// the installed libcamera and forwards obscura_camera.h's functions to it.
// See obscura_camera_shim.h.

#include "obscura_camera_shim.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

static _Atomic(const oc_shim_table *) shim;

// libcamera logs INFO and WARN lines to stderr by default: errors only,
// unless the user chose levels. Called by the program first thing in main,
// before any thread (glibc's setenv races every getenv made meanwhile). Not
// a load-time constructor: setenv moves `environ` off the initial stack, and
// the Swift runtime of a static build finds argv by walking back from
// `environ` at load (its ArgvGrabber), so a constructor run before it left
// the program without its arguments.
void oc_quiet_libcamera_by_default(void)
{
    setenv("LIBCAMERA_LOG_LEVELS", "*:ERROR", 0);
}
static pthread_mutex_t opening = PTHREAD_MUTEX_INITIALIZER;

static void say(char *err, size_t errlen, const char *what, const char *path, const char *why)
{
    if (err && errlen)
        snprintf(err, errlen, "%s(%s): %s", what, path, why);
}

int oc_shim_open(const char *path, char *err, size_t errlen)
{
    pthread_mutex_lock(&opening);
    int ret = 0;
    dlerror();
    void *handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
        const char *why = dlerror();
        say(err, errlen, "dlopen", path, why ? why : "unknown error");
        ret = -ENOENT;
        goto out;
    }
    oc_shim_entry_fn entry = (oc_shim_entry_fn)dlsym(handle, OC_SHIM_ENTRY);
    const oc_shim_table *table = entry ? entry() : NULL;
    if (!table || table->abi != OC_SHIM_ABI || table->layout != OC_SHIM_LAYOUT) {
        char why[160];
        if (!table)
            snprintf(why, sizeof(why), "no %s entry: not an Obscura camera shim", OC_SHIM_ENTRY);
        else
            snprintf(why, sizeof(why), "built for another Obscura (table %u, layout %#llx; this program: %u, %#llx)",
                     table->abi, (unsigned long long)table->layout, OC_SHIM_ABI,
                     (unsigned long long)OC_SHIM_LAYOUT);
        say(err, errlen, "dlsym", path, why);
        dlclose(handle);
        ret = -ENOEXEC;
        goto out;
    }
    if (atomic_load(&shim)) {
        // Only ever one: libcamera allows one camera manager per process.
        if (atomic_load(&shim) != table)
            dlclose(handle);
        say(err, errlen, "oc_shim_open", path, "a camera shim is open already");
        ret = -EALREADY;
        goto out;
    }
    // The handle is never closed: libcamera's threads and statics live until exit.
    atomic_store(&shim, table);
out:
    pthread_mutex_unlock(&opening);
    return ret;
}

int oc_shim_is_open(void)
{
    return atomic_load(&shim) != NULL;
}

// The forwarders. Every function but the first four takes an object a shim
// made, so a shim is open when it runs.
static const oc_shim_table *open_shim(void)
{
    return atomic_load_explicit(&shim, memory_order_acquire);
}

const char *oc_libcamera_version(void)
{
    const oc_shim_table *t = open_shim();
    return t ? t->libcamera_version() : "none";
}

const char *oc_libcamera_runtime_version(void)
{
    const oc_shim_table *t = open_shim();
    return t ? t->libcamera_runtime_version() : "none";
}

int oc_manager_create(oc_manager **out, char *err, size_t errlen)
{
    const oc_shim_table *t = open_shim();
    if (!t) {
        if (err && errlen)
            snprintf(err, errlen, "oc_manager_create: no camera shim is open (oc_shim_open first)");
        return -ENOSYS;
    }
    return t->manager_create(out, err, errlen);
}

const char *oc_control_name(uint32_t id)
{
    const oc_shim_table *t = open_shim();
    return t ? t->control_name(id) : NULL;
}

void oc_manager_destroy(oc_manager *m) { open_shim()->manager_destroy(m); }
int oc_manager_camera_count(oc_manager *m) { return open_shim()->manager_camera_count(m); }
int oc_manager_camera_info(oc_manager *m, int index, oc_camera_info *out)
{
    return open_shim()->manager_camera_info(m, index, out);
}
int oc_manager_formats(oc_manager *m, int camera_index, int role, oc_format_info *out, int max,
                       char *err, size_t errlen)
{
    return open_shim()->manager_formats(m, camera_index, role, out, max, err, errlen);
}
int oc_manager_format_size(oc_manager *m, int camera_index, int role, int format_index,
                           int size_index, uint32_t *width, uint32_t *height)
{
    return open_shim()->manager_format_size(m, camera_index, role, format_index, size_index, width, height);
}
int oc_manager_controls(oc_manager *m, int camera_index, oc_control_info *out, int max)
{
    return open_shim()->manager_controls(m, camera_index, out, max);
}
void oc_manager_set_hotplug(oc_manager *m, oc_hotplug_fn fn, void *context)
{
    open_shim()->manager_set_hotplug(m, fn, context);
}
int oc_camera_acquire(oc_manager *m, const char *id, oc_camera **out, char *err, size_t errlen)
{
    return open_shim()->camera_acquire(m, id, out, err, errlen);
}
void oc_camera_release(oc_camera *c) { open_shim()->camera_release(c); }
void oc_camera_abandon(oc_camera *c) { open_shim()->camera_abandon(c); }
int oc_camera_configure(oc_camera *c, const oc_stream_request *requests, int count,
                        oc_stream_result *result, oc_config_options *options, char *err, size_t errlen)
{
    return open_shim()->camera_configure(c, requests, count, result, options, err, errlen);
}
int oc_camera_buffer(oc_camera *c, int stream, int index, oc_buffer_info *out)
{
    return open_shim()->camera_buffer(c, stream, index, out);
}
int oc_camera_start(oc_camera *c, oc_completion_fn fn, void *context, const uint32_t *queue,
                    int count, char *err, size_t errlen)
{
    return open_shim()->camera_start(c, fn, context, queue, count, err, errlen);
}
int oc_camera_requeue(oc_camera *c, uint64_t request, char *err, size_t errlen)
{
    return open_shim()->camera_requeue(c, request, err, errlen);
}
int oc_camera_stop(oc_camera *c, char *err, size_t errlen) { return open_shim()->camera_stop(c, err, errlen); }
int oc_camera_set_control(oc_camera *c, const char *name, const double *values, int count,
                          char *err, size_t errlen)
{
    return open_shim()->camera_set_control(c, name, values, count, err, errlen);
}
