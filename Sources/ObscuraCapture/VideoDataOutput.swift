import Dispatch
import ObscuraConversion
import ObscuraMedia
import ObscuraSystem

/// Receives frames from a video data output on a dispatch queue, like
/// AVFoundation's sample buffer delegate.
public protocol VideoDataOutputDelegate: AnyObject, Sendable {
    func videoDataOutput(_ output: VideoDataOutput, didOutput frame: VideoFrame)
    /// Frames dropped since the last call (the delegate or the queue fell behind).
    func videoDataOutput(_ output: VideoDataOutput, didDrop count: Int)
}

extension VideoDataOutputDelegate {
    public func videoDataOutput(_ output: VideoDataOutput, didDrop count: Int) {}
}

/// Frames for the application, like AVFoundation's video data output.
///
/// By default late frames are discarded (latest only); with
/// `alwaysDiscardsLateVideoFrames = false` up to `queueDepth` frames wait in
/// order and frames arriving when it is full are dropped and counted.
///
/// A requested pixel format is asked of the camera. When the camera cannot
/// give it, frames come in the camera's format — unless
/// `convertsToRequestedFormat` is set, in which case each frame is converted
/// (one counted CPU copy, see `copies`) on the consumer's side, never on the
/// camera's thread.
public final class VideoDataOutput: CaptureOutput, Sendable {
    public let queue: FrameQueue
    public let preferredPixelFormat: PixelFormat?
    public let convertsToRequestedFormat: Bool
    public let copies = CopyCounter()
    private let connectedDevice = Mutex<CaptureDevice?>(nil)
    private let delegateTask = Mutex<Task<Void, Never>?>(nil)

    public init(pixelFormat: PixelFormat? = nil, convertsToRequestedFormat: Bool = false,
                alwaysDiscardsLateVideoFrames: Bool = true, queueDepth: Int = 3) {
        preferredPixelFormat = pixelFormat
        self.convertsToRequestedFormat = convertsToRequestedFormat
        queue = FrameQueue(policy: alwaysDiscardsLateVideoFrames ? .latestOnly : .bounded(queueDepth))
    }

    public func connected(to device: CaptureDevice?) { connectedDevice.withLock { $0 = device } }
    /// The camera of the session the output is in.
    public var device: CaptureDevice? { connectedDevice.withLock { $0 } }

    /// Pixel formats this output can deliver from its session's camera: the
    /// camera's own (no copy), then — when conversion is on — every format
    /// swscale can make from the camera's (one CPU copy per frame).
    public var availableVideoPixelFormats: [PixelFormat] {
        guard let device = connectedDevice.withLock({ $0 }) else { return [] }
        var formats: [PixelFormat] = []
        for f in device.formats.map(\.pixelFormat) where !formats.contains(f) { formats.append(f) }
        guard convertsToRequestedFormat else { return formats }
        let native = formats
        for target in PixelFormat.known where !formats.contains(target) {
            if native.contains(where: { FrameConverter.canConvert(from: $0, to: target) }) { formats.append(target) }
        }
        return formats
    }

    /// The frames, as they come, in the requested format when conversion is
    /// on. Iterate from one task; it ends when the session stops.
    public var frames: VideoDataFrames {
        VideoDataFrames(queue: queue, converter: convertsToRequestedFormat ? preferredPixelFormat.flatMap { try? FrameConverter(to: $0, copies: copies) } : nil,
                        copies: copies)
    }
    public var droppedFrameCount: Int { queue.drops }

    /// Delivers frames to `delegate` on `queue` (nil stops delivery). The
    /// delegate's call finishes before the next frame is taken; frames that
    /// arrive meanwhile follow the output's late-frame policy.
    public func setDelegate(_ delegate: (any VideoDataOutputDelegate)?, queue dispatchQueue: DispatchQueue) {
        let previous = delegateTask.withLock { $0 }
        previous?.cancel()
        guard let delegate else { return }
        let frames = self.frames
        let task = Task.detached { [self] in
            var dropsSeen = self.queue.drops
            for await frame in frames {
                let drops = self.queue.drops, before = dropsSeen
                // The delegate runs on its queue; this task waits for it
                // without holding a thread of Swift's pool.
                await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
                    dispatchQueue.async {
                        if drops > before { delegate.videoDataOutput(self, didDrop: drops - before) }
                        delegate.videoDataOutput(self, didOutput: frame)
                        done.resume()
                    }
                }
                dropsSeen = drops
            }
        }
        delegateTask.withLock { $0 = task }
    }
}

/// A video data output's frames as an async sequence.
public struct VideoDataFrames: AsyncSequence, Sendable {
    public typealias Element = VideoFrame
    let queue: FrameQueue
    let converter: FrameConverter?
    let copies: CopyCounter

    public struct AsyncIterator: AsyncIteratorProtocol {
        let queue: FrameQueue
        let converter: FrameConverter?
        let copies: CopyCounter
        public mutating func next() async -> VideoFrame? {
            while let frame = await queue.next() {
                copies.recordFrame()
                guard let converter, frame.format != converter.destination else { return frame }
                // A frame that cannot be converted is skipped (and counted
                // as a drop by nobody): say it once through the log instead.
                if let converted = try? converter.convert(frame) { return converted }
            }
            return nil
        }
    }
    public func makeAsyncIterator() -> AsyncIterator { AsyncIterator(queue: queue, converter: converter, copies: copies) }
}
