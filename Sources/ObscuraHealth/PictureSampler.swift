import ObscuraMedia
import struct Synchronization.Atomic

/// A grid's points of one frame and the frame's sensor time (ns): all the
/// picture watch keeps of a frame, so the frame itself goes back to the
/// camera at once.
public struct PictureSample: Sendable, Equatable {
    public let points: [UInt8]
    /// The fine detail at each point, when tampering is watched.
    public let fine: [UInt16]?
    public let time: UInt64

    public init(points: [UInt8], fine: [UInt16]? = nil, time: UInt64) {
        self.points = points
        self.fine = fine
        self.time = time
    }
}

/// Takes the picture watch's samples on the camera's thread (tens of
/// microseconds a look: a grid, never a copy of the frame), at most
/// `framesPerSecond` by the frames' own timestamps, and hands them to the
/// watch's own thread through `samples`. A watch that falls behind loses the
/// oldest samples, never the camera's time.
public final class PictureSampler: Sendable {
    public let samples: AsyncStream<PictureSample>
    private let continuation: AsyncStream<PictureSample>.Continuation
    private let grid: LumaGrid
    private let sampleFine: Bool
    private let interval: UInt64
    /// The sensor time of the last frame looked at; `UInt64.max`: none yet.
    /// Written by the camera's one delivering thread.
    private let lastLooked = Atomic<UInt64>(.max)

    public init(settings: PictureHealthSettings, kept: Int = 4) {
        grid = settings.grid
        sampleFine = !settings.tampering.isEmpty
        interval = settings.framesPerSecond > 0 ? UInt64(1e9 / settings.framesPerSecond * 0.9) : 0
        (samples, continuation) = AsyncStream.makeStream(of: PictureSample.self, bufferingPolicy: .bufferingNewest(kept))
    }

    /// Looks at `frame` if it is one to look at (on the camera's thread).
    public func look(_ frame: VideoFrame) {
        let time = frame.timestampNanoseconds
        let last = lastLooked.load(ordering: .relaxed)
        // A camera whose clock started again (a restart) is looked at afresh.
        if last != .max, time >= last, time - last < interval { return }
        guard let points = grid.sample(frame) else { return }
        lastLooked.store(time, ordering: .relaxed)
        continuation.yield(PictureSample(points: points, fine: sampleFine ? grid.sampleFine(frame) : nil, time: time))
    }

    /// No more samples: the session stopped.
    public func end() { continuation.finish() }
}
