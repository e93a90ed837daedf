import ObscuraSystem
import struct Synchronization.Atomic

/// A size in pixels.
public struct PixelSize: Hashable, Sendable, CustomStringConvertible, Comparable {
    public var width: Int
    public var height: Int
    public init(width: Int, height: Int) {
        self.width = width
        self.height = height
    }
    public var description: String { "\(width)x\(height)" }
    public var area: Int { width * height }
    public static func < (a: PixelSize, b: PixelSize) -> Bool { (a.area, a.width) < (b.area, b.width) }

    /// Parses "1920x1080".
    public init?(parsing text: String) {
        let parts = text.lowercased().split(separator: "x")
        guard parts.count == 2, let w = Int(parts[0]), let h = Int(parts[1]), w > 0, h > 0 else { return nil }
        self.init(width: w, height: h)
    }
}

/// One plane of a frame as the CPU sees it.
///
/// `@unchecked Sendable` (for the pointer): immutable, and it points into
/// memory its frame keeps alive and nobody writes while the frame is held
/// by more than one holder (a sole holder of a writable frame may draw into
/// it: the overlay).
public struct FramePlane: @unchecked Sendable {
    public let base: UnsafeRawPointer
    public let stride: Int
    public let length: Int
    public init(base: UnsafeRawPointer, stride: Int, length: Int) {
        self.base = base
        self.stride = stride
        self.length = length
    }
}

/// One plane of a frame as a dmabuf: {fd, offset, length}. The fd is borrowed
/// from the buffer's owner (the camera); never close it.
public struct DmaBufPlane: Sendable, Hashable {
    public let fd: Int32
    public let offset: Int
    public let length: Int
    public init(fd: Int32, offset: Int, length: Int) {
        self.fd = fd
        self.offset = offset
        self.length = length
    }
}

/// What the camera reported with a frame. Absent values are nil.
public struct FrameMetadata: Sendable, Equatable {
    public var exposureTime: Duration?
    public var analogueGain: Double?
    public var digitalGain: Double?
    public var colourTemperature: Int?
    public var lux: Double?
    public var frameDuration: Duration?
    public var lensPosition: Double?
    /// Every metadata entry the camera reported, by libcamera control name
    /// (e.g. "Brightness", "SensorTimestamp", "ColourGains").
    public var values: [String: [Double]] = [:]
    /// The controls the request that made this frame carried (libcamera
    /// applies a request's controls to its frame), by name.
    public var requestControls: [String: [Double]] = [:]
    public init() {}
}

/// A captured frame. It holds its camera buffer until the last reference goes,
/// then gives it back to the camera (the release closure), so every branch that
/// keeps a frame keeps the buffer — and one that drops it returns it.
///
/// `@unchecked Sendable`: every stored property is a `let` (the planes'
/// pointers are the one non-Sendable part; see `FramePlane`).
public final class VideoFrame: @unchecked Sendable {
    public let format: PixelFormat
    public let size: PixelSize
    public let planes: [FramePlane]
    public let dmabufs: [DmaBufPlane]
    /// The camera's frame counter; gaps mean the camera dropped frames.
    public let sequence: UInt32
    /// Sensor timestamp (start of exposure), CLOCK_BOOTTIME/MONOTONIC nanoseconds.
    public let timestampNanoseconds: UInt64
    public let metadata: FrameMetadata
    /// Whether the planes are dmabufs whose CPU access is bracketed with
    /// DMA_BUF_IOCTL_SYNC (camera buffers are; memfd and heap memory are not).
    public let needsCPUSync: Bool
    /// Whether the planes are mapped writable (PROT_WRITE), so the frame's
    /// sole holder may draw into them (the overlay).
    public let writable: Bool
    /// The same exposure from the camera's raw (Bayer) stream, when the
    /// session configured one. Both buffers belong to one camera request, so
    /// carrying it costs no extra buffer.
    public let raw: VideoFrame?
    private let release: (@Sendable () -> Void)?
    /// How many outputs the session handed the frame to (0: not handed out
    /// by a session, unknown). Set once, before the first hand-over.
    private let consumerCount = Atomic<Int>(0)
    public var consumers: Int { consumerCount.load(ordering: .acquiring) }
    /// Says how many outputs get the frame; call before handing it to any.
    public func setConsumers(_ count: Int) { consumerCount.store(count, ordering: .releasing) }

    public init(format: PixelFormat, size: PixelSize, planes: [FramePlane], dmabufs: [DmaBufPlane] = [],
                sequence: UInt32, timestampNanoseconds: UInt64, metadata: FrameMetadata = FrameMetadata(),
                needsCPUSync: Bool = false, writable: Bool = false, raw: VideoFrame? = nil, release: (@Sendable () -> Void)? = nil) {
        self.needsCPUSync = needsCPUSync
        self.writable = writable
        self.raw = raw
        self.format = format
        self.size = size
        self.planes = planes
        self.dmabufs = dmabufs
        self.sequence = sequence
        self.timestampNanoseconds = timestampNanoseconds
        self.metadata = metadata
        self.release = release
    }

    deinit { release?() }

    /// Begins CPU reads of the planes (DMA_BUF_IOCTL_SYNC start on each dmabuf).
    /// Pair with `endCPUAccess`. Failures are not fatal: the mapping stays valid.
    public func beginCPUAccess() {
        guard needsCPUSync else { return }
        for fd in Set(dmabufs.map(\.fd)) { try? Syscalls.dmabufSync(fd, start: true) }
    }

    public func endCPUAccess() {
        guard needsCPUSync else { return }
        for fd in Set(dmabufs.map(\.fd)) { try? Syscalls.dmabufSync(fd, start: false) }
    }

    /// Runs `body` with the planes writable (DMA_BUF_IOCTL_SYNC with write
    /// around it), for the frame's sole holder of a `writable` frame.
    public func withCPUWriteAccess<R>(_ body: ([UnsafeMutableRawPointer]) throws -> R) rethrows -> R {
        precondition(writable, "withCPUWriteAccess on a frame mapped read-only")
        let fds = needsCPUSync ? Set(dmabufs.map(\.fd)) : []
        for fd in fds { try? Syscalls.dmabufSync(fd, start: true, write: true) }
        defer { for fd in fds { try? Syscalls.dmabufSync(fd, start: false, write: true) } }
        return try body(planes.map { UnsafeMutableRawPointer(mutating: $0.base) })
    }

    /// Mean of every `step`-th sample of the first plane (luma for YUV),
    /// read under the CPU-access bracket.
    public func meanOfFirstPlane(every step: Int) -> Double {
        withCPUAccess { planes in
            guard let plane = planes.first, plane.length > 0 else { return 0 }
            let bytes = plane.base.assumingMemoryBound(to: UInt8.self)
            var sum = 0, count = 0
            var i = 0
            while i < plane.length {
                sum += Int(bytes[i])
                count += 1
                i += max(1, step)
            }
            return count == 0 ? 0 : Double(sum) / Double(count)
        }
    }

    /// A 64-bit FNV-1a digest of every byte of the planes, read under the
    /// CPU-access bracket: equal digests at two times mean the pixels did not
    /// change in between.
    public func pixelDigest() -> UInt64 {
        withCPUAccess { planes in
            var hash: UInt64 = 0xcbf2_9ce4_8422_2325
            for plane in planes {
                for byte in UnsafeRawBufferPointer(start: plane.base, count: plane.length) {
                    hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01b3
                }
            }
            return hash
        }
    }

    /// Runs `body` with CPU access to the planes, bracketed by DMA_BUF_IOCTL_SYNC.
    public func withCPUAccess<R>(_ body: ([FramePlane]) throws -> R) rethrows -> R {
        beginCPUAccess()
        defer { endCPUAccess() }
        return try body(planes)
    }
}

/// Counts every CPU copy of pixels on a path, with the bytes copied, so that
/// zero-copy is a number anyone can read (`obscura record` prints it).
public final class CopyCounter: Sendable {
    private let copiesStorage = Atomic<Int>(0)
    private let bytesStorage = Atomic<Int>(0)
    private let framesStorage = Atomic<Int>(0)

    public init() {}

    /// Records one copy (or conversion) of `bytes` bytes of pixels.
    public func recordCopy(bytes: Int) {
        copiesStorage.add(1, ordering: .relaxed)
        bytesStorage.add(bytes, ordering: .relaxed)
    }

    /// Records a frame that went through the path.
    public func recordFrame() { framesStorage.add(1, ordering: .relaxed) }

    public var copies: Int { copiesStorage.load(ordering: .relaxed) }
    public var bytes: Int { bytesStorage.load(ordering: .relaxed) }
    public var frames: Int { framesStorage.load(ordering: .relaxed) }
    public var copiesPerFrame: Double { frames == 0 ? 0 : Double(copies) / Double(frames) }
}
