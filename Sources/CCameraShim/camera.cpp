// camera.cpp — the only file that includes libcamera. See obscura_camera.h.
// Built once per libcamera ABI into libobscura-camera.so.<version>, which the
// program opens at run time (obscura_camera_shim.h); it exports nothing but
// the table at the end of this file.
//
// Ownership: oc_manager owns the CameraManager; oc_camera owns the acquired
// Camera, its configuration, its FrameBufferAllocator (and so the dmabufs) and
// one Request per buffer. Swift never closes a dmabuf fd it got from here.

#include <libcamera/libcamera.h>
#include <libcamera/version.h>

// The oc_* functions hidden: only obscura_camera_shim() leaves the library.
#define OC_SHIM_BUILD 1
#include "obscura_camera_shim.h"

#include <cerrno>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

using namespace libcamera;

#define OC_LIBCAMERA_AT_LEAST(major, minor)                                    \
    (LIBCAMERA_VERSION_MAJOR > (major) ||                                      \
     (LIBCAMERA_VERSION_MAJOR == (major) && LIBCAMERA_VERSION_MINOR >= (minor)))

namespace {

void set_error(char *err, size_t len, const char *fmt, ...)
{
    if (!err || len == 0)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, len, fmt, ap);
    va_end(ap);
}

// A string_view takes both what older libcamera returns (std::string) and
// what 0.6 and later return for string properties (std::string_view).
void copy_string(char *dst, size_t len, std::string_view src)
{
    snprintf(dst, len, "%.*s", static_cast<int>(src.size()), src.data());
}

StreamRole to_role(int role)
{
    switch (role) {
    case OC_ROLE_RAW: return StreamRole::Raw;
    case OC_ROLE_STILL: return StreamRole::StillCapture;
    case OC_ROLE_VIEWFINDER: return StreamRole::Viewfinder;
    default: return StreamRole::VideoRecording;
    }
}

// Span-vs-vector: 0.0.3 takes `const StreamRoles &` (a std::vector), >= 0.1
// takes Span<const StreamRole>; a std::vector converts to both.
std::unique_ptr<CameraConfiguration> generate(Camera *camera, const std::vector<StreamRole> &roles)
{
    return camera->generateConfiguration(roles);
}

double numeric(const ControlValue &v)
{
    if (v.isNone() || v.isArray())
        return NAN;
    switch (v.type()) {
    case ControlTypeBool: return v.get<bool>() ? 1 : 0;
    case ControlTypeByte: return v.get<uint8_t>();
    case ControlTypeInteger32: return v.get<int32_t>();
    case ControlTypeInteger64: return (double)v.get<int64_t>();
    case ControlTypeFloat: return v.get<float>();
    default: return NAN;
    }
}

int to_oc_type(ControlType type)
{
    switch (type) {
    case ControlTypeBool: return OC_CONTROL_BOOL;
    case ControlTypeByte: return OC_CONTROL_BYTE;
    case ControlTypeInteger32: return OC_CONTROL_INT32;
    case ControlTypeInteger64: return OC_CONTROL_INT64;
    case ControlTypeFloat: return OC_CONTROL_FLOAT;
    case ControlTypeString: return OC_CONTROL_STRING;
    case ControlTypeRectangle: return OC_CONTROL_RECTANGLE;
    case ControlTypeSize: return OC_CONTROL_SIZE;
    default: return OC_CONTROL_NONE;
    }
}

} // namespace

struct oc_manager {
    std::unique_ptr<CameraManager> manager;
    std::vector<std::shared_ptr<Camera>> cameras; // guarded by lock
    std::mutex lock;
    oc_hotplug_fn hotplug = nullptr;
    void *hotplug_context = nullptr;

    void added(std::shared_ptr<Camera> camera) { changed(1, camera); }
    void removed(std::shared_ptr<Camera> camera) { changed(0, camera); }
    void changed(int added, const std::shared_ptr<Camera> &camera)
    {
        {
            std::lock_guard<std::mutex> guard(lock);
            cameras = manager->cameras();
        }
        if (hotplug)
            hotplug(hotplug_context, added, camera->id().c_str());
    }
    std::shared_ptr<Camera> at(int index)
    {
        std::lock_guard<std::mutex> guard(lock);
        if (index < 0 || (size_t)index >= cameras.size())
            return nullptr;
        return cameras[index];
    }
};

struct oc_camera {
    std::shared_ptr<Camera> camera;
    std::unique_ptr<CameraConfiguration> config;
    std::unique_ptr<FrameBufferAllocator> allocator;
    std::vector<std::unique_ptr<Request>> requests;
    std::vector<Stream *> streams;
    std::mutex lock; // guards pending and running
    ControlList pending;
    bool has_pending = false;
    bool running = false;
    oc_completion_fn fn = nullptr;
    void *context = nullptr;

    explicit oc_camera(std::shared_ptr<Camera> cam)
        : camera(std::move(cam)), pending(controls::controls) {}

    void completed(Request *request);
    int buffer_index(const Stream *stream, const FrameBuffer *buffer) const;
};

int oc_camera::buffer_index(const Stream *stream, const FrameBuffer *buffer) const
{
    const auto &buffers = allocator->buffers(const_cast<Stream *>(stream));
    for (size_t i = 0; i < buffers.size(); i++)
        if (buffers[i].get() == buffer)
            return (int)i;
    return -1;
}

/* A metadata value the request carries, into its field and its bit. */
template <typename T, typename Field>
static void take(const ControlList &meta, const Control<T> &id, uint32_t bit, uint32_t &present, Field &field)
{
    if (auto v = meta.get(id)) {
        present |= bit;
        field = *v;
    }
}

void oc_camera::completed(Request *request)
{
    oc_completion c;
    memset(&c, 0, sizeof(c));
    c.request = request->cookie();
    c.cancelled = request->status() == Request::RequestCancelled;
    for (const auto &[stream, buffer] : request->buffers()) {
        int s = -1;
        for (size_t i = 0; i < streams.size(); i++)
            if (streams[i] == stream)
                s = (int)i;
        if (s < 0 || s >= OC_MAX_STREAMS)
            continue;
        c.stream_mask |= 1u << s;
        auto &out = c.streams[s];
        const FrameMetadata &md = buffer->metadata();
        out.buffer_index = buffer_index(stream, buffer);
        out.sequence = md.sequence;
        out.status = md.status == FrameMetadata::FrameSuccess ? 0
                   : md.status == FrameMetadata::FrameCancelled ? 2 : 1;
        out.timestamp_ns = md.timestamp;
        auto planes = md.planes();
        out.plane_count = (uint32_t)std::min<size_t>(planes.size(), OC_MAX_PLANES);
        for (uint32_t p = 0; p < out.plane_count; p++)
            out.bytesused[p] = planes[p].bytesused;
    }
    const ControlList &meta = request->metadata();
    take(meta, controls::SensorTimestamp, OC_META_SENSOR_TIMESTAMP, c.present, c.sensor_timestamp_ns);
    take(meta, controls::ExposureTime, OC_META_EXPOSURE_TIME, c.present, c.exposure_time_us);
    take(meta, controls::AnalogueGain, OC_META_ANALOGUE_GAIN, c.present, c.analogue_gain);
    take(meta, controls::DigitalGain, OC_META_DIGITAL_GAIN, c.present, c.digital_gain);
    take(meta, controls::ColourTemperature, OC_META_COLOUR_TEMPERATURE, c.present, c.colour_temperature);
    take(meta, controls::Lux, OC_META_LUX, c.present, c.lux);
    take(meta, controls::FrameDuration, OC_META_FRAME_DURATION, c.present, c.frame_duration_us);
    take(meta, controls::LensPosition, OC_META_LENS_POSITION, c.present, c.lens_position);
    take(meta, controls::AfState, OC_META_AF_STATE, c.present, c.af_state);
#if OC_LIBCAMERA_AT_LEAST(0, 5)
    if (auto v = meta.get(controls::AeState)) {
        c.present |= OC_META_AE_LOCKED; c.ae_locked = *v == controls::AeStateConverged;
    }
#else
    if (auto v = meta.get(controls::AeLocked)) {
        c.present |= OC_META_AE_LOCKED; c.ae_locked = *v ? 1 : 0;
    }
#endif
    auto collect = [&](const ControlList &list, uint32_t requested) {
        for (const auto &[id, value] : list) {
            if (c.entry_count >= 40)
                break;
            if (value.isNone() || value.numElements() > 4)
                continue;
            auto &e = c.entries[c.entry_count];
            e.id = id;
            e.count = 0;
            e.requested = requested;
            auto put = [&](double v) { if (e.count < 4) e.values[e.count++] = v; };
            switch (value.type()) {
            case ControlTypeBool:
                if (value.isArray()) { for (bool v : value.get<Span<const bool>>()) put(v); }
                else put(value.get<bool>());
                break;
            case ControlTypeInteger32:
                if (value.isArray()) { for (int32_t v : value.get<Span<const int32_t>>()) put(v); }
                else put(value.get<int32_t>());
                break;
            case ControlTypeInteger64:
                if (value.isArray()) { for (int64_t v : value.get<Span<const int64_t>>()) put((double)v); }
                else put((double)value.get<int64_t>());
                break;
            case ControlTypeFloat:
                if (value.isArray()) { for (float v : value.get<Span<const float>>()) put(v); }
                else put(value.get<float>());
                break;
            case ControlTypeRectangle:
                if (!value.isArray()) {
                    Rectangle r = value.get<Rectangle>();
                    put(r.x); put(r.y); put(r.width); put(r.height);
                    break;
                }
                continue;
            default:
                continue;
            }
            c.entry_count++;
        }
    };
    collect(meta, 0);
    collect(request->controls(), 1);
    if (fn)
        fn(context, &c);
}

extern "C" {

const char *oc_libcamera_version(void)
{
    static char version[32];
    snprintf(version, sizeof(version), "%d.%d.%d", LIBCAMERA_VERSION_MAJOR,
             LIBCAMERA_VERSION_MINOR, LIBCAMERA_VERSION_PATCH);
    return version;
}

const char *oc_libcamera_runtime_version(void)
{
    return CameraManager::version().c_str();
}

int oc_manager_create(oc_manager **out, char *err, size_t errlen)
{
    auto m = std::make_unique<oc_manager>();
    m->manager = std::make_unique<CameraManager>();
    int ret = m->manager->start();
    if (ret < 0) {
        set_error(err, errlen, "CameraManager::start() failed: %s", strerror(-ret));
        return ret;
    }
    m->cameras = m->manager->cameras();
    m->manager->cameraAdded.connect(m.get(), &oc_manager::added);
    m->manager->cameraRemoved.connect(m.get(), &oc_manager::removed);
    *out = m.release();
    return 0;
}

void oc_manager_set_hotplug(oc_manager *manager, oc_hotplug_fn fn, void *context)
{
    manager->hotplug_context = context;
    manager->hotplug = fn;
}

const char *oc_control_name(uint32_t id)
{
    auto it = controls::controls.find(id);
    if (it == controls::controls.end())
        return nullptr;
    return it->second->name().c_str();
}

void oc_manager_destroy(oc_manager *manager)
{
    if (!manager)
        return;
    manager->hotplug = nullptr;
    manager->cameras.clear();
    manager->manager->stop();
    delete manager;
}

int oc_manager_camera_count(oc_manager *manager)
{
    std::lock_guard<std::mutex> guard(manager->lock);
    return (int)manager->cameras.size();
}

int oc_manager_camera_info(oc_manager *manager, int index, oc_camera_info *out)
{
    std::shared_ptr<Camera> shared = manager->at(index);
    if (!shared)
        return -EINVAL;
    Camera *cam = shared.get();
    memset(out, 0, sizeof(*out));
    copy_string(out->id, sizeof(out->id), cam->id());
    const ControlList &props = cam->properties();
    if (auto model = props.get(properties::Model))
        copy_string(out->model, sizeof(out->model), *model);
    out->location = OC_LOCATION_UNKNOWN;
    if (auto loc = props.get(properties::Location))
        out->location = *loc;
    out->rotation = -1;
    if (auto rot = props.get(properties::Rotation))
        out->rotation = *rot;
    if (auto size = props.get(properties::PixelArraySize)) {
        out->pixel_array_width = (int32_t)size->width;
        out->pixel_array_height = (int32_t)size->height;
    }
    out->min_frame_duration_us = -1;
    out->max_frame_duration_us = -1;
    const ControlInfoMap &ctrls = cam->controls();
    auto it = ctrls.find(&controls::FrameDurationLimits);
    if (it != ctrls.end()) {
        const ControlInfo &info = it->second;
        if (info.min().type() == ControlTypeInteger64 && !info.min().isArray()) {
            out->min_frame_duration_us = info.min().get<int64_t>();
            out->max_frame_duration_us = info.max().get<int64_t>();
        }
    }
    return 0;
}

static std::unique_ptr<CameraConfiguration> role_config(oc_manager *manager, int index, int role)
{
    std::shared_ptr<Camera> camera = manager->at(index);
    if (!camera)
        return nullptr;
    return generate(camera.get(), { to_role(role) });
}

int oc_manager_formats(oc_manager *manager, int camera_index, int role,
                       oc_format_info *out, int max, char *err, size_t errlen)
{
    auto config = role_config(manager, camera_index, role);
    if (!config || config->empty()) {
        set_error(err, errlen, "Camera::generateConfiguration() offers no stream for this role");
        return -ENOENT;
    }
    const StreamFormats &formats = config->at(0).formats();
    auto pixelformats = formats.pixelformats();
    int n = 0;
    for (const PixelFormat &pf : pixelformats) {
        if (n < max) {
            oc_format_info &f = out[n];
            memset(&f, 0, sizeof(f));
            f.fourcc = pf.fourcc();
            f.modifier = pf.modifier();
            SizeRange range = formats.range(pf);
            f.min_width = range.min.width;
            f.min_height = range.min.height;
            f.max_width = range.max.width;
            f.max_height = range.max.height;
            f.hstep = range.hStep;
            f.vstep = range.vStep;
            f.size_count = (uint32_t)formats.sizes(pf).size();
        }
        n++;
    }
    return n;
}

int oc_manager_format_size(oc_manager *manager, int camera_index, int role,
                           int format_index, int size_index,
                           uint32_t *width, uint32_t *height)
{
    auto config = role_config(manager, camera_index, role);
    if (!config || config->empty())
        return -ENOENT;
    const StreamFormats &formats = config->at(0).formats();
    auto pixelformats = formats.pixelformats();
    if (format_index < 0 || (size_t)format_index >= pixelformats.size())
        return -EINVAL;
    auto sizes = formats.sizes(pixelformats[format_index]);
    if (size_index < 0 || (size_t)size_index >= sizes.size())
        return -EINVAL;
    *width = sizes[size_index].width;
    *height = sizes[size_index].height;
    return 0;
}

int oc_manager_controls(oc_manager *manager, int camera_index,
                        oc_control_info *out, int max)
{
    std::shared_ptr<Camera> camera = manager->at(camera_index);
    if (!camera)
        return -EINVAL;
    const ControlInfoMap &ctrls = camera->controls();
    int n = 0;
    for (const auto &[id, info] : ctrls) {
        if (n < max) {
            oc_control_info &c = out[n];
            memset(&c, 0, sizeof(c));
            c.id = id->id();
            copy_string(c.name, sizeof(c.name), id->name());
            c.type = to_oc_type(id->type());
            c.is_array = info.min().isArray();
            c.min = numeric(info.min());
            c.max = numeric(info.max());
            c.def = numeric(info.def());
            const auto &values = info.values();
            c.value_count = (int32_t)std::min<size_t>(values.size(), 16);
            for (int i = 0; i < c.value_count; i++)
                c.values[i] = numeric(values[i]);
            if (id->type() == ControlTypeRectangle && info.max().type() == ControlTypeRectangle &&
                !info.max().isArray()) {
                Rectangle r = info.max().get<Rectangle>();
                c.rect_max[0] = r.x;
                c.rect_max[1] = r.y;
                c.rect_max[2] = (int32_t)r.width;
                c.rect_max[3] = (int32_t)r.height;
            }
        }
        n++;
    }
    return n;
}

int oc_camera_acquire(oc_manager *manager, const char *id, oc_camera **out,
                      char *err, size_t errlen)
{
    std::shared_ptr<Camera> cam = manager->manager->get(id);
    if (!cam) {
        set_error(err, errlen, "CameraManager::get(\"%s\") found no such camera", id);
        return -ENODEV;
    }
    int ret = cam->acquire();
    if (ret < 0) {
        set_error(err, errlen, "Camera::acquire() failed for \"%s\": %s", id, strerror(-ret));
        return ret;
    }
    auto c = new oc_camera(cam);
    c->camera->requestCompleted.connect(c, &oc_camera::completed);
    *out = c;
    return 0;
}

void oc_camera_release(oc_camera *camera)
{
    if (!camera)
        return;
    if (camera->running)
        camera->camera->stop();
    camera->camera->requestCompleted.disconnect(camera);
    camera->requests.clear();
    if (camera->allocator)
        for (Stream *s : camera->streams)
            camera->allocator->free(s);
    camera->allocator.reset();
    camera->config.reset();
    camera->camera->release();
    delete camera;
}

void oc_camera_abandon(oc_camera *camera)
{
    if (!camera)
        return;
    camera->camera->requestCompleted.disconnect(camera);
    camera->fn = nullptr;
    camera->running = false;
    // The pipeline still lists our requests and buffers and the camera can be
    // neither stopped nor released: the object is deliberately kept (leaked)
    // so that nothing libcamera points at is ever freed.
}

int oc_camera_configure(oc_camera *camera, const oc_stream_request *requests,
                        int count, oc_stream_result *result,
                        oc_config_options *options,
                        char *err, size_t errlen)
{
    if (camera->running) {
        set_error(err, errlen, "Camera::configure() refused: the camera is running");
        return -EBUSY;
    }
    if (count < 1 || count > OC_MAX_STREAMS) {
        set_error(err, errlen, "between 1 and %d streams can be configured, not %d", OC_MAX_STREAMS, count);
        return -EINVAL;
    }
    std::vector<StreamRole> roles;
    for (int i = 0; i < count; i++)
        roles.push_back(to_role(requests[i].role));
    auto config = generate(camera->camera.get(), roles);
    if (!config || config->size() != (size_t)count) {
        set_error(err, errlen, "Camera::generateConfiguration() cannot provide these %d stream roles", count);
        return -EINVAL;
    }
    for (int i = 0; i < count; i++) {
        StreamConfiguration &sc = config->at(i);
        if (requests[i].fourcc)
            sc.pixelFormat = PixelFormat(requests[i].fourcc, requests[i].modifier);
        if (requests[i].width && requests[i].height)
            sc.size = Size(requests[i].width, requests[i].height);
        if (requests[i].buffer_count)
            sc.bufferCount = requests[i].buffer_count;
    }
    if (options) {
        bool ok = false;
#if OC_LIBCAMERA_AT_LEAST(0, 2)
        Orientation o = orientationFromRotation(options->rotation, &ok);
        if (!ok) {
            set_error(err, errlen, "rotation %d is not one of 0, 90, 180, 270", options->rotation);
            return -EINVAL;
        }
        config->orientation = options->mirror ? o * Transform::HFlip : o;
#else
        Transform t = transformFromRotation(options->rotation, &ok);
        if (!ok) {
            set_error(err, errlen, "rotation %d is not one of 0, 90, 180, 270", options->rotation);
            return -EINVAL;
        }
        config->transform = options->mirror ? Transform::HFlip * t : t;
#endif
    }
    CameraConfiguration::Status status = config->validate();
    if (options) {
        // Report what the camera will apply.
#if OC_LIBCAMERA_AT_LEAST(0, 2)
        Transform applied = config->orientation / Orientation::Rotate0;
#else
        Transform applied = config->transform;
#endif
        int rotation = 0;
        int mirror = 0;
        for (int angle : { 0, 90, 180, 270 }) {
            Transform r = transformFromRotation(angle);
            if (r == applied) { rotation = angle; mirror = 0; break; }
            if ((Transform::HFlip * r) == applied || (r * Transform::HFlip) == applied) {
                rotation = angle; mirror = 1; break;
            }
        }
        options->rotation = rotation;
        options->mirror = mirror;
    }
    auto fill = [&](CameraConfiguration *cfg) {
        for (int i = 0; i < count; i++) {
            const StreamConfiguration &sc = cfg->at(i);
            oc_stream_result &r = result[i];
            memset(&r, 0, sizeof(r));
            r.fourcc = sc.pixelFormat.fourcc();
            r.modifier = sc.pixelFormat.modifier();
            r.width = sc.size.width;
            r.height = sc.size.height;
            r.stride = sc.stride;
            r.frame_size = sc.frameSize;
            r.buffer_count = sc.bufferCount;
            r.colorspace_range = -1;
            if (sc.colorSpace)
                r.colorspace_range = sc.colorSpace->range == ColorSpace::Range::Full ? 1 : 0;
        }
    };
    if (status == CameraConfiguration::Invalid) {
        fill(config.get());
        set_error(err, errlen, "CameraConfiguration::validate() found the configuration invalid");
        return OC_CONFIG_INVALID;
    }
    // Drop the previous configuration's buffers and requests.
    camera->requests.clear();
    if (camera->allocator)
        for (Stream *s : camera->streams)
            camera->allocator->free(s);
    camera->allocator.reset();
    camera->streams.clear();

    int ret = camera->camera->configure(config.get());
    if (ret < 0) {
        set_error(err, errlen, "Camera::configure() failed: %s", strerror(-ret));
        return ret;
    }
    camera->allocator = std::make_unique<FrameBufferAllocator>(camera->camera);
    for (int i = 0; i < count; i++) {
        Stream *stream = config->at(i).stream();
        ret = camera->allocator->allocate(stream);
        if (ret < 0) {
            set_error(err, errlen, "FrameBufferAllocator::allocate() failed for stream %d: %s", i, strerror(-ret));
            return ret;
        }
        camera->streams.push_back(stream);
    }
    camera->config = std::move(config);
    fill(camera->config.get());
    for (int i = 0; i < count; i++)
        result[i].buffer_count = (uint32_t)camera->allocator->buffers(camera->streams[i]).size();

    // One request per buffer of stream 0; other streams ride along while they
    // have buffers.
    size_t n = camera->allocator->buffers(camera->streams[0]).size();
    for (size_t r = 0; r < n; r++) {
        std::unique_ptr<Request> request = camera->camera->createRequest(r);
        if (!request) {
            set_error(err, errlen, "Camera::createRequest() failed");
            return -ENOMEM;
        }
        for (size_t s = 0; s < camera->streams.size(); s++) {
            const auto &buffers = camera->allocator->buffers(camera->streams[s]);
            if (r >= buffers.size())
                continue;
            ret = request->addBuffer(camera->streams[s], buffers[r].get());
            if (ret < 0) {
                set_error(err, errlen, "Request::addBuffer() failed: %s", strerror(-ret));
                return ret;
            }
        }
        camera->requests.push_back(std::move(request));
    }
    return status == CameraConfiguration::Adjusted ? OC_CONFIG_ADJUSTED : OC_CONFIG_VALID;
}

int oc_camera_buffer(oc_camera *camera, int stream, int index, oc_buffer_info *out)
{
    if (!camera->allocator || stream < 0 || (size_t)stream >= camera->streams.size())
        return -EINVAL;
    const auto &buffers = camera->allocator->buffers(camera->streams[stream]);
    if (index < 0 || (size_t)index >= buffers.size())
        return -EINVAL;
    const auto &planes = buffers[index]->planes();
    memset(out, 0, sizeof(*out));
    out->plane_count = (uint32_t)std::min<size_t>(planes.size(), OC_MAX_PLANES);
    for (uint32_t p = 0; p < out->plane_count; p++) {
        out->planes[p].fd = planes[p].fd.get();
        out->planes[p].offset = planes[p].offset;
        out->planes[p].length = planes[p].length;
    }
    return 0;
}

int oc_camera_start(oc_camera *camera, oc_completion_fn fn, void *context,
                    const uint32_t *queue, int count, char *err, size_t errlen)
{
    if (camera->requests.empty()) {
        set_error(err, errlen, "Camera::start() refused: the camera is not configured");
        return -EINVAL;
    }
    for (int i = 0; i < count; i++)
        if (queue[i] >= camera->requests.size()) {
            set_error(err, errlen, "Camera::start() refused: no request %u (the configuration has %zu)",
                      queue[i], camera->requests.size());
            return -EINVAL;
        }
    camera->fn = fn;
    camera->context = context;
    // Only the requests named are queued: the others' buffers are still held
    // by whoever holds their frames, and are queued when those let go.
    for (int i = 0; i < count; i++)
        camera->requests[queue[i]]->reuse(Request::ReuseBuffers);
    // Pending controls ride with the first request: every pipeline applies
    // request controls, not all apply start controls.
    if (count > 0) {
        std::lock_guard<std::mutex> guard(camera->lock);
        if (camera->has_pending) {
            camera->requests[queue[0]]->controls().merge(camera->pending);
            camera->pending.clear();
            camera->has_pending = false;
        }
    }
    int ret = camera->camera->start(nullptr);
    if (ret < 0) {
        set_error(err, errlen, "Camera::start() failed: %s", strerror(-ret));
        return ret;
    }
    camera->running = true;
    for (int i = 0; i < count; i++) {
        Request *request = camera->requests[queue[i]].get();
        ret = camera->camera->queueRequest(request);
        if (ret < 0) {
            set_error(err, errlen, "Camera::queueRequest() failed: %s", strerror(-ret));
            camera->camera->stop();
            camera->running = false;
            return ret;
        }
    }
    return 0;
}

int oc_camera_requeue(oc_camera *camera, uint64_t index, char *err, size_t errlen)
{
    if (index >= camera->requests.size()) {
        set_error(err, errlen, "no request %llu", (unsigned long long)index);
        return -EINVAL;
    }
    if (!camera->running)
        return 0; // stopped: the request stays with us until the next start
    Request *request = camera->requests[index].get();
    request->reuse(Request::ReuseBuffers);
    {
        std::lock_guard<std::mutex> guard(camera->lock);
        if (camera->has_pending) {
            request->controls().merge(camera->pending);
            camera->pending.clear();
            camera->has_pending = false;
        }
    }
    int ret = camera->camera->queueRequest(request);
    if (ret < 0) {
        set_error(err, errlen, "Camera::queueRequest() failed: %s", strerror(-ret));
        return ret;
    }
    return 0;
}

int oc_camera_stop(oc_camera *camera, char *err, size_t errlen)
{
    if (!camera->running)
        return 0;
    camera->running = false;
    int ret = camera->camera->stop();
    if (ret < 0) {
        set_error(err, errlen, "Camera::stop() failed: %s", strerror(-ret));
        return ret;
    }
    return 0;
}

int oc_camera_set_control(oc_camera *camera, const char *name,
                          const double *values, int count, char *err, size_t errlen)
{
    const ControlInfoMap &ctrls = camera->camera->controls();
    const ControlId *id = nullptr;
    const ControlInfo *info = nullptr;
    for (const auto &[cid, cinfo] : ctrls)
        if (cid->name() == name) {
            id = cid;
            info = &cinfo;
        }
    if (!id) {
        set_error(err, errlen, "the camera has no control %s", name);
        return -ENOENT;
    }
    bool array = info->min().isArray() || info->def().isArray();
    if (!array && id->type() != ControlTypeRectangle && count != 1) {
        set_error(err, errlen, "control %s takes one value, not %d", name, count);
        return -EINVAL;
    }
    ControlValue value;
    switch (id->type()) {
    case ControlTypeBool:
        value = ControlValue(values[0] != 0);
        break;
    case ControlTypeByte:
        value = ControlValue((uint8_t)values[0]);
        break;
    case ControlTypeInteger32:
        if (array) {
            std::vector<int32_t> v(values, values + count);
            value = ControlValue(Span<const int32_t>(v));
        } else {
            value = ControlValue((int32_t)lround(values[0]));
        }
        break;
    case ControlTypeInteger64:
        if (array) {
            std::vector<int64_t> v;
            for (int i = 0; i < count; i++)
                v.push_back(llround(values[i]));
            value = ControlValue(Span<const int64_t>(v));
        } else {
            value = ControlValue((int64_t)llround(values[0]));
        }
        break;
    case ControlTypeFloat:
        if (array) {
            std::vector<float> v(values, values + count);
            value = ControlValue(Span<const float>(v));
        } else {
            value = ControlValue((float)values[0]);
        }
        break;
    case ControlTypeRectangle: {
        if (count % 4 != 0 || count == 0) {
            set_error(err, errlen, "control %s takes rectangles (x, y, width, height), not %d numbers", name, count);
            return -EINVAL;
        }
        std::vector<Rectangle> rects;
        for (int i = 0; i < count; i += 4)
            rects.emplace_back((int)values[i], (int)values[i + 1],
                               (unsigned)values[i + 2], (unsigned)values[i + 3]);
        if (array)
            value = ControlValue(Span<const Rectangle>(rects));
        else
            value = ControlValue(rects[0]);
        break;
    }
    default:
        set_error(err, errlen, "control %s has a type this facade cannot set", name);
        return -ENOTSUP;
    }
    std::lock_guard<std::mutex> guard(camera->lock);
    camera->pending.set(id->id(), value);
    camera->has_pending = true;
    return 0;
}

} // extern "C"

extern "C" __attribute__((visibility("default"))) const oc_shim_table *obscura_camera_shim(void)
{
    static const oc_shim_table table = {
        OC_SHIM_ABI,
        OC_SHIM_LAYOUT,
        oc_libcamera_version,
        oc_libcamera_runtime_version,
        oc_manager_create,
        oc_manager_destroy,
        oc_manager_camera_count,
        oc_manager_camera_info,
        oc_manager_formats,
        oc_manager_format_size,
        oc_manager_controls,
        oc_manager_set_hotplug,
        oc_camera_acquire,
        oc_camera_release,
        oc_camera_abandon,
        oc_camera_configure,
        oc_camera_buffer,
        oc_control_name,
        oc_camera_start,
        oc_camera_requeue,
        oc_camera_stop,
        oc_camera_set_control,
    };
    return &table;
}
