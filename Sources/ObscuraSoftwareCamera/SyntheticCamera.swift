import Dispatch
import ObscuraCamera
import ObscuraCapture
import ObscuraMedia
import ObscuraSystem
import struct Synchronization.Atomic
#if canImport(Glibc)
import Glibc
#endif

/// A camera made of memory: a moving test pattern with real (monotonic)
/// timestamps, in memfd-backed buffers of the same frame type the real camera
/// delivers, returned to its pool when their last holder lets go. It offers
/// the controls a Raspberry Pi camera does and reports them in the metadata,
/// and can be "unplugged" to exercise interruptions. For tests and for
/// running every output off the board.
///
/// Each configuration has its own buffers (a `SyntheticBufferSet`); a frame
/// holds its set, so a frame kept across a reconfigure keeps its memory and
/// its pixels, and its slot goes back only to the set it came from.
///
/// `@unchecked Sendable`: `lock` guards every stored `var`; the `let`s are
/// immutable; `queue` is where ticks run.
public final class SyntheticCamera: FrameSource, @unchecked Sendable {
    public let id: String
    public let formats: [PixelFormat]
    public let sizes: [PixelSize]
    /// Bayer formats of the raw stream (empty: the camera has none, like vimc).
    public let rawFormats: [PixelFormat]

    private let lock = Mutex<Void>(())
    private let queue = DispatchQueue(label: "obscura.synthetic-camera")
    private var timer: (any DispatchSourceTimer)?
    /// What waits out each frame interval when paced by a clock.
    private var pacer: Task<Void, Never>?
    /// The timer's period (ns): follows FrameDurationLimits set while running.
    private var timerInterval: UInt64 = 0
    private var config: StreamConfiguration?
    private var rawConfig: StreamConfiguration?
    /// The current configuration's buffers; frames hold the set they came from.
    private var bufferSet: SyntheticBufferSet?
    private var generation = 0
    /// Free slots of `bufferSet`.
    private var free: [Int] = []
    /// Frames handed out and not yet let go, of every configuration.
    private let held = Atomic<Int>(0)
    private var sequence: UInt32 = 0
    private var controls: [String: [Double]] = [:]
    private var handler: (@Sendable (CameraFrame) -> Void)?
    private var isOpen = false
    private var connected = true
    private var observers: [Int: @Sendable (Bool) -> Void] = [:]
    private var nextToken = 0
    /// Frames the camera skipped because every buffer was held downstream.
    public private(set) var skippedFrames = 0

    /// What fills the buffers.
    public enum Content: Sendable {
        /// The moving test pattern.
        case pattern
        /// Raw frames from a file, in turn (looping), laid out as the stream's
        /// format with tight strides (what `ffmpeg -f rawvideo` writes). The
        /// file is memory-mapped and frames point into it, as a camera's
        /// frames point into its mapped buffers: no copy. A returned frame's
        /// pages are dropped from the process (the page cache keeps them).
        case rawFile(String)
        /// Raw frames from a file (as `rawFile`), each placed once into a
        /// dmabuf of its own (`DmabufAllocator`: a DMA heap, else udmabuf)
        /// and delivered from it in turn, as a camera's frames are: an
        /// encoder imports them without a copy. At most `maxDmabufFrames`
        /// frames of the file are used.
        case rawFileInDmabufs(String)
    }
    /// The most frames `rawFileInDmabufs` places in dmabufs.
    public static let maxDmabufFrames = 32
    /// When frames come.
    public enum Pacing: Sendable {
        /// On a timer at the frame rate, timestamps from the monotonic clock.
        case realTime
        /// As fast as buffers come back, timestamps on a virtual clock at the
        /// frame rate. Two buffers always stay with the camera (one being
        /// filled, one spare), which keeps a single recording output's queue
        /// from overflowing: nothing is dropped, the pipeline sets the pace.
        /// For benchmarks.
        case asFastAsBuffersReturn
        /// A frame each frame interval of `clock`, stamped with its time:
        /// with a clock a test moves on by hand (`ManualClock`), frames come
        /// only as it moves time on, so none is late or skipped however busy
        /// the machine is, and the pipeline's waits and the frames' times are
        /// on one clock.
        case clock(any WaitingClock)
    }
    private let content: Content
    private let pacing: Pacing
    /// Whether each drawn frame carries its own time as a code in its
    /// picture (`FrameTimeCode`, NV12 and YUV 4:2:0 only): what a live
    /// view's latency is measured by, end to end.
    private let stampsTime: Bool
    private var contentFrames = 0
    private var frameLength = 0
    private var slots = 0
    /// Buffers of the current set (`slots`, or one per file frame in dmabufs).
    private var bufferTotal = 0
    private var virtualStart: UInt64 = 0

    public init(id: String = "synthetic:0", formats: [PixelFormat] = [.nv12, .bgr888, .yuyv, .xrgb8888],
                sizes: [PixelSize] = [PixelSize(width: 320, height: 240), PixelSize(width: 640, height: 480),
                                      PixelSize(width: 1280, height: 720), PixelSize(width: 1920, height: 1080)],
                rawFormats: [PixelFormat] = [],
                content: Content = .pattern, pacing: Pacing = .realTime, stampsTime: Bool = false) {
        self.rawFormats = rawFormats
        self.content = content
        self.pacing = pacing
        self.stampsTime = stampsTime
        self.id = id
        self.formats = formats
        self.sizes = sizes
    }

    public var cameraDescription: CameraDescription {
        let list = formats.map { f in
            CameraFormat(pixelFormat: f, sizes: sizes, minimumSize: sizes.min()!, maximumSize: sizes.max()!,
                         horizontalStep: 0, verticalStep: 0)
        }
        func control(_ name: String, _ min: Double, _ max: Double, _ def: Double, values: [Double] = [], array: Bool = false,
                     rect: [Int]? = nil) -> CameraControlInfo {
            CameraControlInfo(id: 0, name: name, minimum: min, maximum: max, defaultValue: def, values: values,
                              isArray: array, maximumRectangle: rect)
        }
        let largest = sizes.max()!
        return CameraDescription(
            id: id, model: "Synthetic test pattern", position: .external, rotation: 0,
            frameDurationRange: .microseconds(16_666) ... .microseconds(1_000_000),
            pixelArraySize: largest,
            formats: rawFormats.isEmpty ? [.videoRecording: list, .stillCapture: list, .viewfinder: list]
                : [.videoRecording: list, .stillCapture: list, .viewfinder: list,
                   .raw: rawFormats.map { f in
                       CameraFormat(pixelFormat: f, sizes: sizes, minimumSize: sizes.min()!, maximumSize: sizes.max()!,
                                    horizontalStep: 0, verticalStep: 0)
                   }],
            controls: [
                control("AeEnable", 0, 1, 1),
                control("ExposureTime", 100, 1_000_000, 10_000),
                control("AnalogueGain", 1, 16, 1),
                control("ExposureValue", -8, 8, 0),
                control("AfMode", 0, 2, 0, values: [0, 1, 2]),
                control("AfTrigger", 0, 1, 0, values: [0, 1]),
                control("AfMetering", 0, 1, 0, values: [0, 1]),
                control("AfWindows", 0, 0, 0, array: true, rect: [0, 0, largest.width, largest.height]),
                control("LensPosition", 0, 15, 1),
                control("ScalerCrop", 0, 0, 0, rect: [0, 0, largest.width, largest.height]),
                control("Brightness", -1, 1, 0),
                control("Contrast", 0, 2, 1),
                control("Saturation", 0, 2, 1),
                control("FrameDurationLimits", 16_666, 1_000_000, 33_333, array: true),
            ])
    }

    public func open() throws {
        try lock.withLock { _ in
            guard connected else { throw CaptureError.deviceUnavailable(id) }
            isOpen = true
        }
    }

    /// The frames of a raw file: each in a dmabuf of its own (at most
    /// `maxDmabufFrames`), or the file mapped whole.
    private static func contentBuffers(_ path: String, inDmabufs: Bool, format: PixelFormat, size: PixelSize, frameSize: Int) throws
        -> (buffers: [SyntheticBuffer], mapping: MemoryMapping?, frames: Int) {
        let fd = try Syscalls.open(path, O_RDONLY | O_CLOEXEC)
        let st = try Syscalls.status(fd.rawValue, path: path)
        let frames = min(Int(st.st_size) / frameSize, inDmabufs ? maxDmabufFrames : Int.max)
        guard frames > 0 else {
            throw CameraError.invalidConfiguration("\(path) holds \(st.st_size) bytes, less than one \(format) \(size) frame (\(frameSize) bytes)")
        }
        guard inDmabufs else { return ([], try MemoryMapping(fd: fd.rawValue, offset: 0, length: frames * frameSize), frames) }
        let buffers = try (0..<frames).map { i in
            let buffer = try SyntheticBuffer(index: i, length: frameSize, inDmabuf: true)
            try buffer.fill(from: fd.rawValue, offset: i * frameSize, path: path)
            return buffer
        }
        return (buffers, nil, frames)
    }

    /// The raw stream beside the processed one (nil: the camera has none).
    private func rawStream(_ asked: StreamRequest, size: PixelSize, count: Int, adjustments: inout [String]) throws
        -> (stream: StreamConfiguration, buffers: [SyntheticBuffer])? {
        guard let first = rawFormats.first else { return nil }
        var rawFormat = asked.pixelFormat ?? first
        if !rawFormats.contains(rawFormat) {
            adjustments.append("stream 1 pixel format \(rawFormat) → \(first)")
            rawFormat = first
        }
        var rawSize = asked.size ?? size
        if !sizes.contains(rawSize) {
            adjustments.append("stream 1 size \(rawSize) → \(size)")
            rawSize = size
        }
        let rawInfo = rawFormat.info!
        let rawLength = rawInfo.bytesPerFrame(width: rawSize.width, height: rawSize.height)
        let buffers = try (0..<count).map { try SyntheticBuffer(index: count + $0, length: rawLength) }
        return (StreamConfiguration(role: .raw, pixelFormat: rawFormat, size: rawSize,
                                    stride: rawInfo.stride(plane: 0, width: rawSize.width), frameSize: rawLength,
                                    bufferCount: count, fullRange: nil), buffers)
    }

    public func configure(_ requests: [StreamRequest], rotation: Int, mirrored: Bool) throws -> CameraConfiguration {
        try lock.withLock { _ in
            guard isOpen, timer == nil, pacer == nil else {
                throw CaptureError.wrongState(call: "configure", state: isOpen ? "running" : "closed", allowed: "open and stopped")
            }
            guard let request = requests.first else { throw CameraError.invalidConfiguration("no streams") }
            guard requests.count <= 2, requests.dropFirst().allSatisfy({ $0.role == .raw }), request.role != .raw else {
                throw CameraError.invalidConfiguration("the synthetic camera runs one processed stream, and a raw stream beside it")
            }
            var adjustments: [String] = []
            var format = request.pixelFormat ?? formats[0]
            if !formats.contains(format) {
                adjustments.append("stream 0 pixel format \(format) → \(formats[0])")
                format = formats[0]
            }
            var size = request.size ?? PixelSize(width: 640, height: 480)
            if !sizes.contains(size) {
                let nearest = sizes.min { abs($0.area - size.area) < abs($1.area - size.area) }!
                adjustments.append("stream 0 size \(size) → \(nearest)")
                size = nearest
            }
            let count = max(2, min(request.bufferCount ?? 4, 8))
            if let asked = request.bufferCount, asked != count { adjustments.append("stream 0 buffers \(asked) → \(count)") }
            if rotation != 0 || mirrored {
                adjustments.append("rotation \(rotation)°\(mirrored ? " mirrored" : "") → 0° (the camera cannot transform; apply it downstream)")
            }
            let info = format.info!
            let frameSize = info.bytesPerFrame(width: size.width, height: size.height)
            frameLength = frameSize
            slots = count
            generation += 1
            var buffers: [SyntheticBuffer] = [], rawBuffers: [SyntheticBuffer] = []
            var contentMapping: MemoryMapping?
            var total = count
            let file: (path: String, inDmabufs: Bool)? = switch content {
            case .pattern: nil
            case .rawFile(let path): (path, false)
            case .rawFileInDmabufs(let path): (path, true)
            }
            if let (path, inDmabufs) = file {
                let loaded = try Self.contentBuffers(path, inDmabufs: inDmabufs, format: format, size: size, frameSize: frameSize)
                (buffers, contentMapping, contentFrames) = (loaded.buffers, loaded.mapping, loaded.frames)
                if inDmabufs { total = contentFrames }
            } else {
                buffers = try (0..<count).map { try SyntheticBuffer(index: $0, length: frameSize) }
            }
            free = Array(0..<total)
            bufferTotal = total
            let stream = StreamConfiguration(role: request.role, pixelFormat: format, size: size,
                                             stride: info.stride(plane: 0, width: size.width), frameSize: frameSize,
                                             bufferCount: count, fullRange: false)
            config = stream
            var streams = [stream]
            rawConfig = nil
            defer {
                bufferSet = SyntheticBufferSet(generation: generation, buffers: buffers, rawBuffers: rawBuffers,
                                               contentMapping: contentMapping)
            }
            if requests.count == 2 {
                guard let raw = try rawStream(requests[1], size: size, count: count, adjustments: &adjustments) else {
                    return CameraConfiguration(status: .invalid, streams: [stream],
                                               adjustments: ["the camera has no raw stream"], rotation: 0, mirrored: false)
                }
                rawBuffers = raw.buffers
                rawConfig = raw.stream
                streams.append(raw.stream)
            }
            return CameraConfiguration(status: adjustments.isEmpty ? .valid : .adjusted, streams: streams,
                                       adjustments: adjustments, rotation: 0, mirrored: false)
        }
    }

    public func start(handler: @escaping @Sendable (CameraFrame) -> Void, failed: @escaping @Sendable (UInt32) -> Void) throws {
        try lock.withLock { _ in
            guard isOpen, config != nil, timer == nil, pacer == nil else {
                throw CaptureError.wrongState(call: "start", state: "not configured", allowed: "configured")
            }
            self.handler = handler
            let interval = frameDuration
            if case .asFastAsBuffersReturn = pacing {
                virtualStart = Syscalls.monotonicNanoseconds()
                running = true
                for _ in 0..<slots { queue.async { [weak self] in self?.tick() } }
                return
            }
            if case .clock(let clock) = pacing {
                running = true
                // A tick on the camera's queue each frame interval of the
                // clock, until stopped; a camera let go ends it too.
                pacer = Task.detached { [weak self] in
                    while let interval = self?.pacedInterval() {
                        do { try await clock.sleep(for: .nanoseconds(Int64(interval))) } catch { return }
                        self?.queue.async { [weak self] in self?.tick() }
                    }
                }
                return
            }
            let t = DispatchSource.makeTimerSource(queue: queue)
            t.schedule(deadline: .now(), repeating: .nanoseconds(Int(interval)), leeway: .milliseconds(1))
            t.setEventHandler { [weak self] in self?.tick() }
            timer = t
            timerInterval = interval
            t.resume()
        }
    }

    /// Clock pacing: the frame interval to wait next (read afresh, so
    /// FrameDurationLimits set while running takes effect at the next
    /// frame), or nil once stopped.
    private func pacedInterval() -> UInt64? { lock.withLock { _ in running ? frameDuration : nil } }

    /// Nanoseconds per frame, from FrameDurationLimits (the minimum) or 30 fps.
    private var frameDuration: UInt64 {
        if let limits = controls["FrameDurationLimits"], let min = limits.first, min > 0 { return UInt64(min * 1000) }
        return 33_333_333
    }

    private var running = false

    /// A frame duration set while running takes effect as a real sensor's
    /// does: the next frame comes one new interval after now (under `lock`).
    private func retimeIfChanged() {
        let interval = frameDuration
        guard let timer, interval != timerInterval else { return }
        timerInterval = interval
        timer.schedule(deadline: .now() + .nanoseconds(Int(interval)), repeating: .nanoseconds(Int(interval)), leeway: .milliseconds(1))
    }

    /// The time of the frame being made (under `lock`): on the virtual
    /// clock, the pacing clock, or the monotonic clock now.
    private func stamp() -> UInt64 {
        switch pacing {
        case .asFastAsBuffersReturn: virtualStart + UInt64(sequence - 1) * frameDuration
        case .clock(let clock): clock.nanoseconds
        case .realTime: Syscalls.monotonicNanoseconds()
        }
    }

    private func tick() {
        let made: (CameraFrame, @Sendable (CameraFrame) -> Void)? = lock.withLock { _ in
            guard let config, let set = bufferSet, let handler, connected, !stalled else { return nil }
            let fast = if case .asFastAsBuffersReturn = pacing { true } else { false }
            // Fast: two of the stream's buffers always stay with the camera.
            if fast && (!running || bufferTotal - free.count > slots - 3) { return nil }
            // Frames in dmabufs come in the file's order: the next one's buffer must be back.
            var slot: Int?
            if case .rawFileInDmabufs = content {
                guard let at = free.firstIndex(of: Int(sequence % UInt32(contentFrames))) else {
                    if !fast { sequence &+= 1; skippedFrames += 1 }
                    return nil
                }
                slot = at
            }
            sequence &+= 1
            if !pendingControls.isEmpty {
                for (name, values, due) in pendingControls where due <= sequence { controls[name] = values }
                pendingControls.removeAll { $0.2 <= sequence }
                retimeIfChanged()
            }
            guard let index = slot.map({ free.remove(at: $0) }) ?? free.popLast() else {
                skippedFrames += 1
                return nil
            }
            let timestamp = stamp()
            var planes: [FramePlane]
            var dmabufs: [DmaBufPlane] = []
            var inDmabuf = false
            // Drawn afresh for each frame: its holder may draw into it. A
            // file's frames (mapped, or placed once in dmabufs) are not.
            var writable = false
            if let mapping = set.contentMapping {
                let start = ((Int(sequence) - 1) % contentFrames) * frameLength
                planes = SyntheticBuffer.planes(config.pixelFormat, config.size, base: mapping.base + start)
            } else {
                let buffer = set.buffers[index]
                if buffer.allocator == nil {
                    buffer.draw(config.pixelFormat, config.size, sequence: frozenAt ?? sequence,
                                brightness: controls["Brightness"]?.first ?? 0, stamp: stampsTime ? timestamp / 1000 : nil)
                    writable = true
                }
                inDmabuf = buffer.allocator != nil
                planes = buffer.planes(config.pixelFormat, config.size)
                dmabufs = [DmaBufPlane(fd: buffer.fd.rawValue, offset: 0, length: buffer.length)]
            }
            var metadata = FrameMetadata()
            metadata.exposureTime = .microseconds(Int64(controls["ExposureTime"]?.first ?? 10_000))
            metadata.analogueGain = controls["AnalogueGain"]?.first ?? 1
            metadata.lensPosition = controls["LensPosition"]?.first
            metadata.frameDuration = .nanoseconds(Int64(frameDuration))
            for (name, values) in controls { metadata.values[name] = values }
            // Both frames of a request hold it: the slot comes back, to the
            // set it came from, when the last goes. A frame keeps the buffers
            // (or the file mapping) it points into alive.
            held.add(1, ordering: .relaxed)
            let lease = SlotLease { [weak self, planes, set] in
                withExtendedLifetime(set) { self?.giveBack(index, of: set.generation, planes: planes) }
            }
            var raw: VideoFrame?
            if let rawConfig, index < set.rawBuffers.count {
                let rawBuffer = set.rawBuffers[index]
                let exposure = (metadata.exposureTime?.seconds ?? 0.01) * (metadata.analogueGain ?? 1)
                metadata.values["SensorBlackLevels"] = [4096, 4096, 4096, 4096]
                metadata.values["ColourGains"] = [1.6, 1.4]
                rawBuffer.drawBayer(rawConfig.pixelFormat, rawConfig.size, sequence: sequence, exposure: exposure)
                raw = VideoFrame(format: rawConfig.pixelFormat, size: rawConfig.size,
                                 planes: rawBuffer.planes(rawConfig.pixelFormat, rawConfig.size),
                                 dmabufs: [DmaBufPlane(fd: rawBuffer.fd.rawValue, offset: 0, length: rawBuffer.length)],
                                 sequence: sequence, timestampNanoseconds: timestamp, metadata: metadata,
                                 release: { _ = lease })
            }
            // A real dmabuf is read by the CPU under DMA_BUF_IOCTL_SYNC, and imported by an encoder.
            let frame = VideoFrame(format: config.pixelFormat, size: config.size, planes: planes, dmabufs: dmabufs,
                                   sequence: sequence, timestampNanoseconds: timestamp,
                                   metadata: metadata, needsCPUSync: inDmabuf, writable: writable, raw: raw, release: { _ = lease })
            return (CameraFrame(stream: 0, frame: frame), handler)
        }
        if let (frame, handler) = made { handler(frame) }
    }

    private func giveBack(_ index: Int, of generation: Int, planes: [FramePlane]) {
        held.subtract(1, ordering: .relaxed)
        if case .rawFile = content, let first = planes.first, let last = planes.last {
            // Drop the frame's whole pages from the process.
            let page = Int(sysconf(Int32(_SC_PAGESIZE)))
            let from = (Int(bitPattern: first.base) + page - 1) / page * page
            let to = (Int(bitPattern: last.base) + last.length) / page * page
            if to > from { madvise(UnsafeMutableRawPointer(bitPattern: from), to - from, MADV_DONTNEED) }
        }
        let fast = lock.withLock { _ -> Bool in
            // A slot of an earlier configuration is gone with its set.
            guard generation == self.generation else { return false }
            free.append(index)
            if case .asFastAsBuffersReturn = pacing { return running }
            return false
        }
        if fast { queue.async { [weak self] in self?.tick() } }
    }

    public func stop() throws {
        let (t, p) = lock.withLock { _ -> ((any DispatchSourceTimer)?, Task<Void, Never>?) in
            defer { timer = nil; pacer = nil; handler = nil; running = false }
            return (timer, pacer)
        }
        t?.cancel()
        p?.cancel()
        queue.sync {} // no tick runs after stop returns
    }

    public func setControl(_ name: String, _ values: [Double]) throws {
        guard cameraDescription.controls.contains(where: { $0.name == name }) else {
            throw ShimError(message: "the camera has no control \(name)", code: ENOENT)
        }
        lock.withLock { _ in
            if latency > 0 {
                pendingControls.append((name, values, sequence &+ UInt32(latency)))
            } else {
                controls[name] = values
                retimeIfChanged()
            }
        }
    }

    /// Frames before a control set now shows in the frames and their
    /// metadata (a real sensor's pipeline delay, typically two or three).
    public var controlLatencyFrames: Int {
        get { lock.withLock { _ in latency } }
        set { lock.withLock { _ in latency = newValue } }
    }
    private var latency = 0
    private var pendingControls: [(String, [Double], UInt32)] = []

    public func close() {
        try? stop()
        lock.withLock { _ in isOpen = false }
    }

    public func observeAvailability(_ observer: @escaping @Sendable (Bool) -> Void) -> Int {
        lock.withLock { _ in
            nextToken += 1
            observers[nextToken] = observer
            return nextToken
        }
    }

    public func stopObservingAvailability(_ token: Int) { _ = lock.withLock { _ in observers.removeValue(forKey: token) } }

    public var outstandingFrames: Int { held.load(ordering: .relaxed) }

    public func abandonAndRecover() -> Bool {
        close()
        return isListed
    }

    public var isListed: Bool { lock.withLock { _ in connected } }

    /// Stops delivering frames without going away (a hung sensor), or resumes.
    public func setStalled(_ value: Bool) { lock.withLock { _ in stalled = value } }
    private var stalled = false

    /// Freezes the picture on the frame being drawn (true) or lets it move
    /// again: frames keep coming, their sequence numbers and timestamps
    /// running on, as a sensor stuck behind a hung ISP would give them.
    public func setFrozen(_ value: Bool) { lock.withLock { _ in frozenAt = value ? (frozenAt ?? sequence) : nil } }
    private var frozenAt: UInt32?

    /// Unplugs (false) or plugs back (true) the camera, as a hot-plug would.
    public func setConnected(_ value: Bool) {
        let current = lock.withLock { _ -> [@Sendable (Bool) -> Void] in
            connected = value
            if !value { isOpen = false }
            return Array(observers.values)
        }
        if !value { try? stop() }
        for observer in current { observer(value) }
    }

}

/// Runs its closure when the last frame holding it goes.
final class SlotLease: Sendable {
    let done: @Sendable () -> Void
    init(_ done: @escaping @Sendable () -> Void) { self.done = done }
    deinit { done() }
}

/// One configuration's buffers (or the mapped file frames are read from).
final class SyntheticBufferSet: Sendable {
    let generation: Int
    let buffers: [SyntheticBuffer]
    let rawBuffers: [SyntheticBuffer]
    let contentMapping: MemoryMapping?
    init(generation: Int, buffers: [SyntheticBuffer], rawBuffers: [SyntheticBuffer], contentMapping: MemoryMapping?) {
        self.generation = generation
        self.buffers = buffers
        self.rawBuffers = rawBuffers
        self.contentMapping = contentMapping
    }
}

/// One memfd-backed buffer of the synthetic camera.
///
/// `@unchecked Sendable`: every stored property is a `let`; the memory it maps
/// is written only on the camera's queue while its slot is free, which the
/// camera's `lock` (the free list) guards.
final class SyntheticBuffer: @unchecked Sendable {
    let fd: OwnedFileDescriptor
    let mapping: MemoryMapping
    let length: Int

    /// The dmabuf allocator it came from; nil: a memfd.
    let allocator: String?

    init(index: Int, length: Int, inDmabuf: Bool = false) throws {
        if inDmabuf {
            (fd, allocator) = try DmabufAllocator.allocate(length, name: "obscura-synthetic-\(index)")
        } else {
            fd = try Syscalls.memfd("obscura-synthetic-\(index)", size: length)
            allocator = nil
        }
        mapping = try MemoryMapping(fd: fd.rawValue, offset: 0, length: length, writable: true)
        self.length = length
    }

    /// Reads its frame from `file` at `offset` (once, when configured).
    func fill(from file: Int32, offset: Int, path: String) throws {
        if allocator != nil { try Syscalls.dmabufSync(fd.rawValue, start: true, write: true) }
        defer { if allocator != nil { try? Syscalls.dmabufSync(fd.rawValue, start: false, write: true) } }
        let read = try Syscalls.preadAll(file, into: mapping.base, count: length, at: Int64(offset), path: "frame at \(offset) of \(path)")
        guard read == length else { throw SystemError(call: "pread", code: EIO, detail: "frame at \(offset) of \(path): the file ends \(length - read) bytes short") }
    }

    func planes(_ format: PixelFormat, _ size: PixelSize) -> [FramePlane] {
        Self.planes(format, size, base: mapping.base)
    }

    /// Tightly packed planes of one frame at `base`.
    static func planes(_ format: PixelFormat, _ size: PixelSize, base: UnsafeMutableRawPointer) -> [FramePlane] {
        let info = format.info!
        var offset = 0
        return info.planes.indices.map { p in
            let stride = info.stride(plane: p, width: size.width)
            let bytes = stride * info.rows(plane: p, height: size.height)
            defer { offset += bytes }
            return FramePlane(base: UnsafeRawPointer(base + offset), stride: stride, length: bytes)
        }
    }

    /// A Bayer mosaic (RGGB order of levels whatever the format says: the
    /// pattern is only a test signal) of bands moving two pixels per frame,
    /// its level proportional to exposure × gain (10 ms at gain 1 is mid
    /// grey), above a black level of 4096 in 16-bit terms.
    func drawBayer(_ format: PixelFormat, _ size: PixelSize, sequence: UInt32, exposure: Double) {
        let info = format.info!
        let depth = info.bitDepth
        let maximum = Double((1 << depth) - 1)
        let black = Double(4096 >> (16 - depth))
        let scale = exposure / 0.01
        let stride = info.stride(plane: 0, width: size.width)
        let shift = Int(sequence) * 2
        func row(_ parity: Int) -> [UInt16] {
            (0..<size.width).map { x in
                let colour: Double = parity == 0 ? (x % 2 == 0 ? 0.8 : 1.0) : (x % 2 == 0 ? 1.0 : 0.6)
                let band = Double(((x + shift) & 0xff) + 64) / 320
                return UInt16(min(maximum, black + band * colour * scale * (maximum - black) / 2))
            }
        }
        let rows = [row(0), row(1)]
        let packed = rows.map { samples -> [UInt8] in
            var bytes = [UInt8](repeating: 0, count: stride)
            bytes.withUnsafeMutableBytes { BayerRow.pack(samples, format: info, into: $0.baseAddress!) }
            return bytes
        }
        for y in 0..<size.height {
            packed[y % 2].withUnsafeBytes { _ = memcpy(mapping.base + y * stride, $0.baseAddress!, stride) }
        }
    }

    /// Writes `microseconds` as a `FrameTimeCode` into the luma of a frame
    /// drawn in NV12 or YUV 4:2:0 (other formats carry none).
    func stamp(_ microseconds: UInt64, _ format: PixelFormat, _ size: PixelSize) {
        guard format == .nv12 || format == .yuv420, let luma = planes(format, size).first else { return }
        FrameTimeCode.write(microseconds, into: UnsafeMutableRawPointer(mutating: luma.base), stride: luma.stride,
                            width: size.width, height: size.height)
    }

    /// Diagonal bands moving two pixels per frame; brightness shifts every
    /// sample. Rows are copied from a precomputed ramp (fast even unoptimised).
    /// With `stamp`, that time (microseconds) as a code in the picture.
    func draw(_ format: PixelFormat, _ size: PixelSize, sequence: UInt32, brightness: Double, stamp time: UInt64? = nil) {
        defer { if let time { stamp(time, format, size) } }
        let shift = Int(sequence) * 2
        // -1 is black (below video range), +1 white.
        let lift = Int(brightness * 160)
        for plane in planes(format, size) {
            let ramp = [UInt8]((0..<(plane.stride + 256)).map { UInt8(clamping: (($0 & 0xff) / 2) + 64 + lift) })
            let bytes = UnsafeMutableRawPointer(mutating: plane.base)
            let rows = plane.length / plane.stride
            ramp.withUnsafeBytes { source in
                for y in 0..<rows {
                    memcpy(bytes + y * plane.stride, source.baseAddress! + ((y + shift) & 0xff), plane.stride)
                }
            }
        }
    }
}

extension CaptureDevice {
    /// Whether `id` names the test-pattern camera (`synthetic` or `synthetic:N`).
    public static func isTestPattern(_ id: String) -> Bool { id == "synthetic" || id.hasPrefix("synthetic:") }

    /// The test-pattern camera that writes each frame's camera time into its
    /// picture (`FrameTimeCode`): what a live view's latency is measured with.
    public static let timeStampedTestPattern = "synthetic:stamped"

    /// The test pattern as fast as the pipeline takes its frames, stamped on
    /// a virtual clock at the frame rate (as `file:` cameras deliver): a
    /// recording of N seconds takes what encoding N seconds takes.
    public static let fastTestPattern = "synthetic:fast"

    /// The test pattern on the clock it is given (a test's), stamped with
    /// its times.
    public static let clockedTestPattern = "synthetic:clocked"

    /// The test-pattern camera: a moving pattern with, like a Raspberry Pi
    /// camera, a raw stream (12-bit CSI-2 packed); `synthetic:stamped`
    /// carries each frame's time in its picture as well, and
    /// `synthetic:fast` comes as fast as it is taken, and `synthetic:clocked`
    /// on `clock`'s frame intervals (the service's clock, which a test moves
    /// on by hand; on the system's clock it is the plain pattern).
    public static func testPattern(id: String, clock: any WaitingClock = SystemWaitingClock()) -> CaptureDevice {
        let pacing: SyntheticCamera.Pacing = id == fastTestPattern ? .asFastAsBuffersReturn
            : id == clockedTestPattern ? .clock(clock) : .realTime
        return CaptureDevice(source: SyntheticCamera(id: id == "synthetic" ? "synthetic:0" : id,
                                                     rawFormats: [.srggb12CSI2Packed, .srggb12],
                                                     pacing: pacing, stampsTime: id == timeStampedTestPattern))
    }
}
