import CCamera
import ObscuraMedia
import ObscuraSystem
import struct Synchronization.Atomic
#if canImport(Glibc)
import Glibc
#endif

/// What one stream should be.
public struct StreamRequest: Sendable, Equatable {
    public var role: StreamRole
    /// nil: the camera's default for the role.
    public var pixelFormat: PixelFormat?
    public var size: PixelSize?
    public var bufferCount: Int?

    public init(role: StreamRole, pixelFormat: PixelFormat? = nil, size: PixelSize? = nil, bufferCount: Int? = nil) {
        self.role = role
        self.pixelFormat = pixelFormat
        self.size = size
        self.bufferCount = bufferCount
    }
}

/// A stream as the camera configured it.
public struct StreamConfiguration: Sendable, Equatable {
    public let role: StreamRole
    public let pixelFormat: PixelFormat
    public let size: PixelSize
    public let stride: Int
    public let frameSize: Int
    public let bufferCount: Int
    /// nil when the camera does not say.
    public let fullRange: Bool?

    public init(role: StreamRole, pixelFormat: PixelFormat, size: PixelSize, stride: Int, frameSize: Int,
                bufferCount: Int, fullRange: Bool?) {
        self.role = role
        self.pixelFormat = pixelFormat
        self.size = size
        self.stride = stride
        self.frameSize = frameSize
        self.bufferCount = bufferCount
        self.fullRange = fullRange
    }
}

/// The answer to a configuration: valid as asked, adjusted (with what
/// changed), or invalid (not applied).
public struct CameraConfiguration: Sendable {
    public enum Status: Sendable, Equatable { case valid, adjusted, invalid }
    public let status: Status
    public let streams: [StreamConfiguration]
    /// Human-readable adjustments, e.g. "stream 0 size 640x480 → 636x480".
    public let adjustments: [String]
    /// The transform the camera applies.
    public var rotation: Int = 0
    public var mirrored: Bool = false

    public init(status: Status, streams: [StreamConfiguration], adjustments: [String], rotation: Int = 0, mirrored: Bool = false) {
        self.status = status
        self.streams = streams
        self.adjustments = adjustments
        self.rotation = rotation
        self.mirrored = mirrored
    }
}

/// An acquired camera.
///
/// ```
///  acquire ──► Acquired ──configure──► Configured ──start──► Running
///                 ▲                      ▲   │                 │
///                 │                      │   └──configure──┐   │
///                 │                      └──────stop───────┼───┘
///               release (from any state) ◄─────────────────┘
/// ```
/// A call in the wrong state throws `CameraError.wrongState`. Buffers are
/// allocated by `configure` and mapped once; `start` returns the frames of
/// stream 0 (and of other streams, tagged) as they complete.
///
/// Frames own what they point into. Each configuration's buffers are one
/// `BufferGeneration`: the mappings and a duplicate of every dmabuf fd, so
/// they outlive libcamera's allocator. A frame holds its request's lease, the
/// lease holds the generation, so a held frame's pixels and dmabufs stay valid
/// through stop, reconfigure and release, and are never written again while
/// held. Each request of a generation is idle, queued or held:
///
/// ```
///            start / last holder lets go (running, same generation)
///   idle ────────────────────────────────────────────────────────► queued
///    ▲  ◄──────────────── stop (cancelled) ─────────────────────────┘ │
///    │                                                                 │ completes
///    └───────── last holder lets go (stopped or reconfigured) ◄── held ◄┘
/// ```
/// `start` queues only idle requests; a request of an earlier configuration
/// is never queued again (its buffers are freed when its last frame goes).
///
/// Calls are serialised by `lock`; queueing is serialised by `queueLock`;
/// frames arrive on libcamera's thread and are handed over through the stream.
///
/// `@unchecked Sendable`: `lock` guards `handle`, `_state`, `generation` and
/// `sink`; `running`, `currentGeneration` and `held` are atomics; the `let`s
/// are immutable.
public final class Camera: @unchecked Sendable {
    public enum State: String, Sendable { case acquired, configured, running, released }

    public let id: String
    let manager: CameraManager
    private let lock = Mutex<Void>(())
    /// Serialises queueing a request against stopping; never taken on libcamera's thread.
    private let queueLock = Mutex<Void>(())
    /// True between start and stop. Requeues check it first, so a request that
    /// completes (or is cancelled) while stopping goes nowhere.
    private let running = Atomic<Bool>(false)
    let held = Atomic<Int>(0)
    /// Frames handed out and not yet released (their requests not yet back).
    public var outstandingFrames: Int { held.load(ordering: .relaxed) }
    private var handle: OpaquePointer?
    private var _state: State = .acquired
    /// The current configuration's buffers and requests.
    private var generation: BufferGeneration?
    /// Its number: requeues of other generations go nowhere.
    private let currentGeneration = Atomic<Int>(0)
    private var sink: Unmanaged<FrameSink>?

    init(manager: CameraManager, handle: OpaquePointer, id: String) {
        self.manager = manager
        self.handle = handle
        self.id = id
        handleForQueue = handle
    }

    public var state: State { lock.withLock { _ in _state } }

    /// Validates and applies a configuration in one libcamera configure.
    /// An invalid one is returned unapplied, with status `.invalid`.
    /// `rotation`/`mirrored` ask the camera to transform (libcamera Transform
    /// before 0.2, Orientation from 0.2); what it will apply is reported.
    public func configure(_ requests: [StreamRequest], rotation: Int = 0, mirrored: Bool = false) throws -> CameraConfiguration {
        try lock.withLock { _ in
            guard _state == .acquired || _state == .configured, let handle else {
                throw CameraError.wrongState(call: "configure", state: _state.rawValue, allowed: "acquired or configured")
            }
            var cRequests = requests.map { r in
                oc_stream_request(role: r.role.rawValue, fourcc: r.pixelFormat?.fourcc ?? 0,
                                  width: UInt32(r.size?.width ?? 0), height: UInt32(r.size?.height ?? 0),
                                  buffer_count: UInt32(r.bufferCount ?? 0), modifier: r.pixelFormat?.modifier ?? 0)
            }
            var results = [oc_stream_result](repeating: oc_stream_result(), count: requests.count)
            var message = [CChar](repeating: 0, count: 512)
            var options = oc_config_options(rotation: Int32(rotation), mirror: mirrored ? 1 : 0)
            let status = oc_camera_configure(handle, &cRequests, Int32(requests.count), &results, &options, &message, message.count)
            let text = message.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
            if status < 0 {
                generation = nil  // libcamera's requests and buffers of it are gone
                throw ShimError(message: text, code: -status)
            }
            let resolved = zip(requests, results).map { r, c in
                StreamConfiguration(role: r.role, pixelFormat: PixelFormat(fourcc: c.fourcc, modifier: c.modifier),
                                    size: PixelSize(width: Int(c.width), height: Int(c.height)),
                                    stride: Int(c.stride), frameSize: Int(c.frame_size),
                                    bufferCount: Int(c.buffer_count),
                                    fullRange: c.colorspace_range < 0 ? nil : c.colorspace_range == 1)
            }
            var adjustments: [String] = []
            for (i, (asked, got)) in zip(requests, resolved).enumerated() {
                if let f = asked.pixelFormat, f != got.pixelFormat {
                    adjustments.append("stream \(i) pixel format \(f) → \(got.pixelFormat)")
                }
                if let s = asked.size, s != got.size {
                    adjustments.append("stream \(i) size \(s) → \(got.size)")
                }
                if let b = asked.bufferCount, b != got.bufferCount {
                    adjustments.append("stream \(i) buffers \(b) → \(got.bufferCount)")
                }
            }
            if Int(options.rotation) != rotation || (options.mirror != 0) != mirrored {
                adjustments.append("rotation \(rotation)°\(mirrored ? " mirrored" : "") → \(options.rotation)°\(options.mirror != 0 ? " mirrored" : "") (the camera cannot transform; apply it downstream)")
            }
            if status == OC_CONFIG_INVALID.rawValue {
                return CameraConfiguration(status: .invalid, streams: resolved, adjustments: [text],
                                           rotation: Int(options.rotation), mirrored: options.mirror != 0)
            }
            // The previous generation's buffers live on in the frames still
            // holding them; its requests are gone with libcamera's.
            let number = currentGeneration.load(ordering: .relaxed) + 1
            let mapped = try queueLock.withLock { _ in
                defer { currentGeneration.store(number, ordering: .sequentiallyConsistent) }
                return try Self.mapBuffers(handle, resolved)
            }
            generation = BufferGeneration(number: number, streams: resolved, mappings: mapped,
                                          requests: resolved.first?.bufferCount ?? 0)
            _state = .configured
            return CameraConfiguration(status: status == OC_CONFIG_ADJUSTED.rawValue || !adjustments.isEmpty ? .adjusted : .valid,
                                       streams: resolved, adjustments: adjustments,
                                       rotation: Int(options.rotation), mirrored: options.mirror != 0)
        }
    }

    /// Maps every buffer once: [stream][buffer] → planes, each distinct fd
    /// duplicated so the generation owns what it maps.
    private static func mapBuffers(_ handle: OpaquePointer, _ streams: [StreamConfiguration]) throws -> [[[MappedPlane]]] {
        try streams.indices.map { s in
            try (0..<streams[s].bufferCount).map { b in
                var info = oc_buffer_info()
                guard oc_camera_buffer(handle, Int32(s), Int32(b), &info) == 0 else {
                    throw CameraError.invalidConfiguration("stream \(s) has no buffer \(b)")
                }
                let planes = withUnsafeBytes(of: info.planes) { Array($0.bindMemory(to: oc_plane.self).prefix(Int(info.plane_count))) }
                // One duplicate and one mapping per distinct fd, covering every plane in it.
                var maps: [Int32: (fd: OwnedFileDescriptor, mapping: MemoryMapping)] = [:]
                for fd in Set(planes.map(\.fd)) {
                    let end = planes.filter { $0.fd == fd }.map { Int($0.offset) + Int($0.length) }.max() ?? 0
                    let owned = try Syscalls.duplicate(fd)
                    // Writable where the exported buffer allows it (the
                    // overlay draws into a frame nobody else holds).
                    let mapping = (try? MemoryMapping(fd: owned.rawValue, offset: 0, length: end, writable: true))
                    maps[fd] = (owned, try mapping ?? MemoryMapping(fd: owned.rawValue, offset: 0, length: end))
                }
                return planes.map {
                    let map = maps[$0.fd]!
                    return MappedPlane(fd: map.fd, mapping: map.mapping, offset: Int($0.offset), length: Int($0.length))
                }
            }
        }
    }

    /// Sets a control (by libcamera name) for the next request. Throws when the
    /// camera lacks it or the values do not fit.
    public func setControl(_ name: String, _ values: [Double]) throws {
        try lock.withLock { _ in
            guard let handle, _state != .released else {
                throw CameraError.wrongState(call: "setControl", state: _state.rawValue, allowed: "acquired, configured or running")
            }
            try ShimError.check("setControl(\(name))") { oc_camera_set_control(handle, name, values, Int32(values.count), $0, $1) }
        }
    }

    /// Starts streaming. Frames of every configured stream arrive on the
    /// returned stream (tagged with their stream index) until `stop`.
    public func start() throws -> AsyncStream<CameraFrame> {
        let (stream, continuation) = AsyncStream<CameraFrame>.makeStream()
        try start(handler: { continuation.yield($0) }, finished: { continuation.finish() })
        return stream
    }

    /// Starts streaming, handing each frame to `handler` on libcamera's thread
    /// (it must not block). `failed` is told of a request that completed with
    /// an error; `finished` runs once streaming stops.
    public func start(handler: @escaping @Sendable (CameraFrame) -> Void,
                      failed: @escaping @Sendable (UInt32) -> Void = { _ in },
                      finished: @escaping @Sendable () -> Void = {}) throws {
        try lock.withLock { _ in
            guard _state == .configured, let handle, let generation else {
                throw CameraError.wrongState(call: "start", state: _state.rawValue, allowed: "configured")
            }
            let sink = FrameSink(camera: self, handler: handler, failed: failed, finished: finished, generation: generation)
            let retained = Unmanaged.passRetained(sink)
            self.sink = retained
            do {
                try queueLock.withLock { _ in
                    // Only requests nobody holds; a held one is queued when its holder lets go.
                    let idle = generation.takeIdle()
                    do {
                        try ShimError.check("Camera::start()") {
                            oc_camera_start(handle, frameCompleted, retained.toOpaque(), idle, Int32(idle.count), $0, $1)
                        }
                    } catch {
                        generation.setIdle(idle)
                        throw error
                    }
                    running.store(true, ordering: .sequentiallyConsistent)
                    // Those let go while starting saw the camera stopped: queue them now.
                    for index in generation.takeIdle() { queue(handle, index) }
                }
            } catch {
                retained.release()
                self.sink = nil
                throw error
            }
            _state = .running
        }
    }

    /// Stops streaming; the frame stream finishes. Frames still held stay
    /// valid; their requests return to the camera when they are let go, or
    /// at the next start.
    public func stop() throws {
        try lock.withLock { _ in
            guard _state == .running, let handle else { return }
            _state = .configured
            running.store(false, ordering: .sequentiallyConsistent)
            _ = try queueLock.withLock { _ in
                // Every queued request has completed or been cancelled when stop returns.
                defer { generation?.queuedToIdle() }
                try ShimError.check("Camera::stop()") { oc_camera_stop(handle, $0, $1) }
            }
            sink?.takeUnretainedValue().finish()
            sink?.release()
            sink = nil
        }
    }

    /// Stops if running and releases the camera for other users.
    public func release() {
        lock.withLock { _ in
            guard let handle else { return }
            if _state == .running {
                running.store(false, ordering: .sequentiallyConsistent)
                var message = [CChar](repeating: 0, count: 256)
                queueLock.withLock { _ in _ = oc_camera_stop(handle, &message, message.count) }
                sink?.takeUnretainedValue().finish()
                sink?.release()
                sink = nil
            }
            queueLock.withLock { _ in oc_camera_release(handle) }
            self.handle = nil
            manager.cameraReleased()
            _state = .released
        }
    }

    /// Lets go of a camera whose device vanished, without stopping it (libcamera
    /// cannot stop a camera whose device is gone). Its buffers and requests
    /// stay allocated until the process ends. The camera counts as released.
    public func abandon() {
        lock.withLock { _ in
            guard let handle else { return }
            running.store(false, ordering: .sequentiallyConsistent)
            queueLock.withLock { _ in oc_camera_abandon(handle) }
            sink?.takeUnretainedValue().finish()
            sink?.release()
            sink = nil
            self.handle = nil
            _state = .released
            manager.cameraReleased()
        }
    }

    /// The last frame of request `index` of `generation` was let go: the
    /// request is idle, and goes back to the camera when it is running that
    /// generation. Safe from any thread, including libcamera's own: it never
    /// waits on `lock`, and never for `queueLock` while the camera is not
    /// running (stop holds `queueLock` while it waits for libcamera's thread).
    func released(_ index: Int, of generation: BufferGeneration) {
        held.subtract(1, ordering: .relaxed)
        generation.setIdle([UInt32(index)])
        guard let handle = handleForQueue else { return }
        while running.load(ordering: .sequentiallyConsistent),
              currentGeneration.load(ordering: .sequentiallyConsistent) == generation.number {
            let done: Void? = queueLock.withLockIfAvailable { _ in
                guard running.load(ordering: .sequentiallyConsistent),
                      currentGeneration.load(ordering: .sequentiallyConsistent) == generation.number,
                      generation.take(UInt32(index)) else { return }
                queue(handle, UInt32(index))
            }
            if done != nil { return }
            sched_yield()
        }
    }

    /// Queues a request; `queueLock` is held and the camera is running.
    private func queue(_ handle: OpaquePointer, _ index: UInt32) {
        var message = [CChar](repeating: 0, count: 256)
        _ = oc_camera_requeue(handle, UInt64(index), &message, message.count)
    }

    /// The handle for requeues: used only while `running` is true, which
    /// release clears (under queueLock) before freeing it.
    private let handleForQueue: OpaquePointer?

    deinit {
        if handle != nil { release() }
    }
}

/// A frame with the index of the stream it belongs to.
public struct CameraFrame: Sendable {
    public let stream: Int
    public let frame: VideoFrame
    public init(stream: Int, frame: VideoFrame) {
        self.stream = stream
        self.frame = frame
    }
}

/// One plane of a buffer: where it is in the generation's own duplicate of
/// the buffer's fd, and in the mapping of it.
struct MappedPlane: Sendable {
    let fd: OwnedFileDescriptor
    let mapping: MemoryMapping
    let offset: Int
    let length: Int
    var dmabuf: DmaBufPlane { DmaBufPlane(fd: fd.rawValue, offset: offset, length: length) }
}

/// One configuration's buffers, owned: the duplicated fds and their mappings
/// (freed when the camera and the last frame pointing into them let go), and
/// the state of each request of stream 0.
final class BufferGeneration: Sendable {
    enum RequestState: Sendable { case idle, queued, held }
    let number: Int
    let streams: [StreamConfiguration]
    let mappings: [[[MappedPlane]]]  // [stream][buffer] → planes
    private let states: Mutex<[RequestState]>

    init(number: Int, streams: [StreamConfiguration], mappings: [[[MappedPlane]]], requests: Int) {
        self.number = number
        self.streams = streams
        self.mappings = mappings
        states = Mutex([RequestState](repeating: .idle, count: requests))
    }

    /// Marks every idle request queued and returns them.
    func takeIdle() -> [UInt32] {
        states.withLock { s in
            let idle = s.indices.filter { s[$0] == .idle }
            for i in idle { s[i] = .queued }
            return idle.map { UInt32($0) }
        }
    }

    /// Marks one request queued if it is idle; whether it was.
    func take(_ index: UInt32) -> Bool {
        states.withLock { s in
            guard Int(index) < s.count, s[Int(index)] == .idle else { return false }
            s[Int(index)] = .queued
            return true
        }
    }

    func setIdle(_ indices: [UInt32]) {
        states.withLock { s in for i in indices where Int(i) < s.count { s[Int(i)] = .idle } }
    }

    func setHeld(_ index: Int) {
        states.withLock { s in if index < s.count { s[index] = .held } }
    }

    /// After a stop: what was queued came back cancelled.
    func queuedToIdle() {
        states.withLock { s in for i in s.indices where s[i] == .queued { s[i] = .idle } }
    }

    var heldRequests: Int { states.withLock { $0.filter { $0 == .held }.count } }
}

/// Receives completions on libcamera's thread and yields frames.
final class FrameSink: Sendable {
    let camera: Camera
    let handler: @Sendable (CameraFrame) -> Void
    let failed: @Sendable (UInt32) -> Void
    let finished: @Sendable () -> Void
    let generation: BufferGeneration
    var streams: [StreamConfiguration] { generation.streams }
    var mappings: [[[MappedPlane]]] { generation.mappings }

    init(camera: Camera, handler: @escaping @Sendable (CameraFrame) -> Void, failed: @escaping @Sendable (UInt32) -> Void,
         finished: @escaping @Sendable () -> Void, generation: BufferGeneration) {
        self.camera = camera
        self.handler = handler
        self.failed = failed
        self.finished = finished
        self.generation = generation
    }

    func finish() { finished() }

    func completed(_ c: UnsafePointer<oc_completion>) {
        let completion = c.pointee
        if completion.cancelled != 0 { return }  // stopping: stop marks it idle
        let lease = RequestLease(camera: camera, generation: generation, request: Int(completion.request))
        var metadata = FrameMetadata()
        let present = completion.present
        if present & UInt32(OC_META_EXPOSURE_TIME.rawValue) != 0 { metadata.exposureTime = .microseconds(completion.exposure_time_us) }
        if present & UInt32(OC_META_ANALOGUE_GAIN.rawValue) != 0 { metadata.analogueGain = Double(completion.analogue_gain) }
        if present & UInt32(OC_META_DIGITAL_GAIN.rawValue) != 0 { metadata.digitalGain = Double(completion.digital_gain) }
        if present & UInt32(OC_META_COLOUR_TEMPERATURE.rawValue) != 0 { metadata.colourTemperature = Int(completion.colour_temperature) }
        if present & UInt32(OC_META_LUX.rawValue) != 0 { metadata.lux = Double(completion.lux) }
        if present & UInt32(OC_META_FRAME_DURATION.rawValue) != 0 { metadata.frameDuration = .microseconds(completion.frame_duration_us) }
        if present & UInt32(OC_META_LENS_POSITION.rawValue) != 0 { metadata.lensPosition = Double(completion.lens_position) }
        withUnsafeBytes(of: completion.entries) { raw in
            let entries = raw.bindMemory(to: oc_metadata_entry.self)
            for e in entries.prefix(Int(completion.entry_count)) {
                guard let name = oc_control_name(e.id) else { continue }
                let values = withUnsafeBytes(of: e.values) { Array($0.bindMemory(to: Double.self).prefix(Int(e.count))) }
                if e.requested != 0 {
                    metadata.requestControls[String(cString: name)] = values
                } else {
                    metadata.values[String(cString: name)] = values
                }
            }
        }
        let sensorTime = present & UInt32(OC_META_SENSOR_TIMESTAMP.rawValue) != 0 ? UInt64(completion.sensor_timestamp_ns) : nil

        // Every stream's frame of the request; stream 0 carries the raw
        // stream's frame (same exposure) along.
        var frames: [Int: VideoFrame] = [:]
        for s in (0..<min(streams.count, Int(OC_MAX_STREAMS))).reversed() where completion.stream_mask & (1 << UInt32(s)) != 0 {
            let entry = streamEntry(completion, s)
            if entry.status == 1 {
                failed(entry.sequence)
                continue
            }
            guard entry.status == 0, entry.bufferIndex >= 0,
                  s < mappings.count, entry.bufferIndex < mappings[s].count else { continue }
            let config = streams[s]
            let planes = mappings[s][entry.bufferIndex]
            let framePlanes = Self.planes(config, planes)
            let raw = s == 0 ? streams.indices.dropFirst().first { streams[$0].role == .raw }.flatMap { frames[$0] } : nil
            frames[s] = VideoFrame(format: config.pixelFormat, size: config.size, planes: framePlanes,
                                   dmabufs: planes.map(\.dmabuf), sequence: entry.sequence,
                                   timestampNanoseconds: sensorTime ?? entry.timestamp, metadata: metadata,
                                   needsCPUSync: true, writable: planes.allSatisfy(\.mapping.writable), raw: raw, release: { _ = lease })
        }
        for s in frames.keys.sorted() {
            handler(CameraFrame(stream: s, frame: frames[s]!))
        }
    }

    private func streamEntry(_ c: oc_completion, _ index: Int) -> (bufferIndex: Int, sequence: UInt32, status: Int32, timestamp: UInt64) {
        withUnsafeBytes(of: c.streams) { raw in
            let entry = raw.bindMemory(to: oc_stream_completion.self)[index]
            return (Int(entry.buffer_index), entry.sequence, entry.status, entry.timestamp_ns)
        }
    }

    /// CPU views of a buffer's planes. A single-fd, single-plane buffer of a
    /// multi-plane format (e.g. NV12 in one dmabuf) is split by strides.
    static func planes(_ config: StreamConfiguration, _ mapped: [MappedPlane]) -> [FramePlane] {
        guard let info = config.pixelFormat.info else {
            return mapped.map { FramePlane(base: UnsafeRawPointer($0.mapping.base + $0.offset), stride: config.stride, length: $0.length) }
        }
        let stride0 = config.stride > 0 ? config.stride : info.stride(plane: 0, width: config.size.width)
        func stride(_ i: Int) -> Int {
            let minimum0 = info.stride(plane: 0, width: config.size.width)
            return stride0 * info.stride(plane: i, width: config.size.width) / max(minimum0, 1)
        }
        if mapped.count >= info.planes.count {
            return info.planes.indices.map { i in
                FramePlane(base: UnsafeRawPointer(mapped[i].mapping.base + mapped[i].offset), stride: stride(i), length: mapped[i].length)
            }
        }
        var offset = mapped[0].offset
        return info.planes.indices.map { i in
            let length = stride(i) * info.rows(plane: i, height: config.size.height)
            defer { offset += length }
            return FramePlane(base: UnsafeRawPointer(mapped[0].mapping.base + offset), stride: stride(i), length: length)
        }
    }
}

/// A completed request, held by every frame of it: keeps its generation's
/// buffers alive, and gives the request back when the last frame goes.
final class RequestLease: Sendable {
    let camera: Camera
    let generation: BufferGeneration
    let request: Int
    init(camera: Camera, generation: BufferGeneration, request: Int) {
        self.camera = camera
        self.generation = generation
        self.request = request
        camera.held.add(1, ordering: .relaxed)
        generation.setHeld(request)
    }
    deinit { camera.released(request, of: generation) }
}

private func frameCompleted(_ context: UnsafeMutableRawPointer?, _ completion: UnsafePointer<oc_completion>?) {
    guard let context, let completion else { return }
    Unmanaged<FrameSink>.fromOpaque(context).takeUnretainedValue().completed(completion)
}
