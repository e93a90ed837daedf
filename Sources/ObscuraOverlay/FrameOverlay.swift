import Foundation
import ObscuraMedia
import ObscuraSystem

/// Puts the caption on a recording's frames before they are encoded.
///
/// A frame the session gave to this output alone (no photo output, preview
/// or video data output reads it) whose buffer is mapped writable is drawn
/// into in place: no copy. A frame another output also reads, or a
/// read-only one (a file's frames), is copied first into a
/// buffer of this recording's own — a dmabuf where the system has an
/// allocator, so a hardware encoder still imports it — and the copy is
/// counted. The caption's time is the frame's sensor timestamp on the wall
/// clock.
///
/// Not Sendable: one recording's frame loop owns it.
public final class FrameOverlay {
    public let renderer: OverlayRenderer
    private let copies: CopyCounter
    private let pool: CopyPool
    /// Frames drawn into in place, and into copies.
    public private(set) var inPlace = 0
    public private(set) var copied = 0
    /// Maps a frame's timestamp (CLOCK_MONOTONIC ns) to the wall clock.
    private let wallClock: @Sendable (UInt64) -> Date

    public init(settings: OverlaySettings, frameSize: PixelSize, copies: CopyCounter,
                wallClock: @escaping @Sendable (UInt64) -> Date = SystemClock.wallClock(ofMonotonic:)) throws(OverlayError) {
        renderer = try OverlayRenderer(settings: settings, frameSize: frameSize)
        self.copies = copies
        self.wallClock = wallClock
        pool = CopyPool()
    }

    /// The frame to encode: `frame` drawn into, or a copy of it drawn into.
    public func apply(_ frame: VideoFrame) throws -> VideoFrame {
        let date = wallClock(frame.timestampNanoseconds)
        guard OverlayRenderer.formats.contains(frame.format) else {
            throw OverlayError("the overlay draws on \(OverlayRenderer.formats.map(\.description).joined(separator: " or ")) frames; the camera gives \(frame.format)")
        }
        if frame.writable && frame.consumers == 1 {
            try frame.withCPUWriteAccess { planes in
                try renderer.draw(planes: planes, strides: frame.planes.map(\.stride), format: frame.format, at: date)
            }
            inPlace += 1
            return frame
        }
        let copy = try pool.copy(of: frame, copies: copies)
        try copy.withCPUWriteAccess { planes in
            try renderer.draw(planes: planes, strides: copy.planes.map(\.stride), format: copy.format, at: date)
        }
        copied += 1
        return copy
    }
}

/// Buffers for copied frames, reused: a copy's buffer comes back when the
/// last holder of the copy (the encoder) lets it go.
///
/// `@unchecked Sendable`: `free` is guarded by `lock`; a buffer is used by
/// one frame at a time (taken from `free` under the lock, given back when
/// that frame goes).
final class CopyPool: @unchecked Sendable {
    final class Buffer: @unchecked Sendable {
        // Immutable after init; the memory is written only by the frame that holds the buffer.
        let fd: OwnedFileDescriptor
        let mapping: MemoryMapping
        let length: Int
        let isDmabuf: Bool
        init(length: Int) throws(SystemError) {
            if DmabufAllocator.available != nil {
                (fd, _) = try DmabufAllocator.allocate(length, name: "obscura-overlay")
                isDmabuf = true
            } else {
                fd = try Syscalls.memfd("obscura-overlay", size: length)
                isDmabuf = false
            }
            mapping = try MemoryMapping(fd: fd.rawValue, offset: 0, length: length, writable: true)
            self.length = length
        }
    }

    private let lock = NSLock()
    private var free: [Buffer] = []

    /// A copy of `frame` (its planes one after another in one buffer, each
    /// with the source's stride), counted as one CPU copy.
    func copy(of frame: VideoFrame, copies: CopyCounter) throws(OverlayError) -> VideoFrame {
        let length = frame.planes.reduce(0) { $0 + $1.length }
        let page = Int(sysconf(Int32(_SC_PAGESIZE)))
        let size = (length + page - 1) / page * page
        let buffer: Buffer
        do {
            buffer = try lock.withLock { free.firstIndex { $0.length == size }.map { free.remove(at: $0) } } ?? Buffer(length: size)
        } catch {
            throw OverlayError("no buffer for the overlay's copy of a frame: \(error)")
        }
        if buffer.isDmabuf { try? Syscalls.dmabufSync(buffer.fd.rawValue, start: true, write: true) }
        var planes: [FramePlane] = []
        var dmabufs: [DmaBufPlane] = []
        var offset = 0
        frame.withCPUAccess { source in
            for plane in source {
                (buffer.mapping.base + offset).copyMemory(from: plane.base, byteCount: plane.length)
                planes.append(FramePlane(base: UnsafeRawPointer(buffer.mapping.base + offset), stride: plane.stride, length: plane.length))
                dmabufs.append(DmaBufPlane(fd: buffer.fd.rawValue, offset: offset, length: plane.length))
                offset += plane.length
            }
        }
        if buffer.isDmabuf { try? Syscalls.dmabufSync(buffer.fd.rawValue, start: false, write: true) }
        copies.recordCopy(bytes: length)
        return VideoFrame(format: frame.format, size: frame.size, planes: planes, dmabufs: buffer.isDmabuf ? dmabufs : [],
                          sequence: frame.sequence, timestampNanoseconds: frame.timestampNanoseconds, metadata: frame.metadata,
                          needsCPUSync: buffer.isDmabuf, writable: true,
                          release: { [self] in lock.withLock { free.append(buffer) } })
    }
}
