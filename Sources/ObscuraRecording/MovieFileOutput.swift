import Foundation
import ObscuraCapture
import ObscuraEncoding
import ObscuraMedia
import ObscuraMuxing
import ObscuraSystem
import Synchronization

/// How to encode a movie, like AVFoundation's output settings.
public struct MovieSettings: Sendable, Equatable {
    public var codec: VideoCodec = .h264
    /// Average bit rate in bits per second; nil: the encoder's quality default.
    public var averageBitRate: Int?
    /// x264/x265 preset.
    public var preset: String = "ultrafast"
    /// Frame rate to assume when the camera does not report one.
    public var nominalFrameRate: Double = 30
    /// Fragment length. A killed process loses at most the fragment being
    /// built plus the encoder's few frames of latency: half a second keeps
    /// that under one second.
    public var fragmentDuration: Duration = .milliseconds(500)
    public init() {}
}

/// Why a recording ended.
public enum RecordingFinishReason: Sendable, Equatable, CustomStringConvertible {
    case stopped
    case maximumDurationReached
    case maximumFileSizeReached
    case diskFull
    /// The session stopped (or lost its camera for good) while recording.
    case sessionStopped
    case error(String)

    public var description: String {
        switch self {
        case .stopped: "stopped"
        case .maximumDurationReached: "maximum duration reached"
        case .maximumFileSizeReached: "maximum file size reached"
        case .diskFull: "disk full"
        case .sessionStopped: "the session stopped"
        case .error(let e): "error: \(e)"
        }
    }
}

/// Where a recording stands.
public struct RecordingProgress: Sendable, Equatable {
    public var frames = 0
    /// Media time recorded (by the camera's timestamps, first frame at zero).
    public var duration: Duration = .zero
    public var bytes = 0
    /// Frames the output's queue dropped (the encoder fell behind).
    public var droppedFrames = 0
    /// Frames the camera skipped (gaps in its sequence numbers).
    public var skippedFrames = 0
    public var copiesPerFrame = 0.0
    public var size: PixelSize?
    public var encoder = ""
    /// How frames reach the encoder: wrapped without a copy, or converted (with the cost).
    public var path = ""
    /// Frames per second measured from the timestamps.
    public var frameRate: Double {
        frames > 1 && duration > .zero ? Double(frames - 1) / duration.seconds : 0
    }
}

public enum RecordingEvent: Sendable, Equatable {
    case started(path: String)
    /// A segment was completed and has its final name.
    case segmentFinished(path: String)
    case progress(RecordingProgress)
    case finished(path: String, reason: RecordingFinishReason, RecordingProgress)
}

/// Records the session's frames into a movie file, like AVFoundation's movie
/// file output: start to a path, stop, limits on duration, size and free disk
/// space, and events for start, progress and finish (with the reason).
///
/// The file is `<path>.partial` while being written (fragmented MP4/MOV: a
/// killed process leaves it playable, losing at most one fragment) and gets
/// its final name after a clean finish and fsync. Its queue is bounded: an
/// encoder that falls behind drops frames (counted), never stalling the camera.
/// Between recordings it holds no frame.
public final class MovieFileOutput: CaptureOutput, @unchecked Sendable {
    public let queue = FrameQueue(policy: .bounded(4))
    public let preferredPixelFormat: PixelFormat?
    public var maxRecordedDuration: Duration?
    /// When set, a new file every `segmentDuration`, starting at a keyframe:
    /// `clip.mp4` becomes `clip-0001.mp4`, `clip-0002.mp4`, … Each frame is
    /// in exactly one segment.
    public var segmentDuration: Duration?
    public var maxRecordedFileSize: Int?
    /// Recording stops (reason `.diskFull`) when the disk has less free space.
    public var minFreeDiskSpace: Int = 32 << 20
    public let copies = CopyCounter()

    private struct State {
        var task: Task<Void, Never>?
        var stop = false
        var paused = false
        var progress = RecordingProgress()
    }
    private let state = Mutex(State())

    public init(preferredPixelFormat: PixelFormat? = .nv12) {
        self.preferredPixelFormat = preferredPixelFormat
        queue.setAccepting(false)
    }

    public var isRecording: Bool { state.withLock { $0.task != nil } }
    public var progress: RecordingProgress { state.withLock { $0.progress } }

    /// Starts recording to `path` (.mp4, .mov or .mkv). Events arrive on the
    /// returned stream, which ends after `.finished`.
    public func startRecording(to path: String, settings: MovieSettings = MovieSettings()) throws -> AsyncStream<RecordingEvent> {
        guard let container = MovieContainer(pathExtension: (path as NSString).pathExtension) else {
            throw RecordingError.unknownContainer(path)
        }
        let (events, continuation) = AsyncStream<RecordingEvent>.makeStream(bufferingPolicy: .bufferingNewest(256))
        try state.withLock { s in
            guard s.task == nil else { throw RecordingError.alreadyRecording }
            s.stop = false
            s.progress = RecordingProgress()
            queue.setAccepting(true)
            s.task = Task.detached { [self] in
                let reason = await self.run(path: path, container: container, settings: settings, events: continuation)
                self.queue.setAccepting(false)
                let final = self.state.withLock { s -> RecordingProgress in
                    s.task = nil
                    return s.progress
                }
                continuation.yield(.finished(path: path, reason: reason, final))
                continuation.finish()
            }
        }
        return events
    }

    /// Pauses: frames are dropped from the recording until `resumeRecording`,
    /// and the pause is removed from the timeline (no gap in the file).
    public func pauseRecording() { state.withLock { $0.paused = true } }
    public func resumeRecording() { state.withLock { $0.paused = false } }
    public var isRecordingPaused: Bool { state.withLock { $0.paused } }

    /// Stops the recording; it finishes (trailer, fsync, rename) in the background.
    public func stopRecording() {
        state.withLock { $0.stop = true }
        queue.wake()
    }

    private var stopRequested: Bool { state.withLock { $0.stop } }

    /// The recording loop, off the camera's thread.
    private func run(path: String, container: MovieContainer, settings: MovieSettings,
                     events: AsyncStream<RecordingEvent>.Continuation) async -> RecordingFinishReason {
        var encoder: LibavVideoEncoder?
        var writer: MovieWriter?
        var first: UInt64?
        var lastPTS: Int64 = -1
        // Pauses removed from the timeline, in nanoseconds; the last frame
        // written and the usual distance between frames.
        var pausedTotal: UInt64 = 0
        var lastWritten: UInt64?
        var lastInterval: UInt64 = 33_333_333
        var wasPaused = false
        var lastSequence: UInt32?
        var progress = RecordingProgress()
        var lastReport = ContinuousClock.now
        // Segments: the current one's number, where the next begins (µs of
        // media time), and the pts its file starts at.
        var segmentIndex = 1
        let segmentLength = segmentDuration.map { Int64($0.seconds * 1e6) }
        var nextBoundary = segmentLength ?? Int64.max
        var keyframeRequested = false
        var segmentBase: Int64 = 0
        var bytesBefore = 0
        var reason: RecordingFinishReason = .stopped
        let directory = (path as NSString).deletingLastPathComponent
        // The queue and the copy counter live as long as the output: count
        // from this recording's start.
        let dropsBefore = queue.drops
        let copiesBefore = copies.copies

        func publish() {
            progress.droppedFrames = queue.drops - dropsBefore
            progress.copiesPerFrame = progress.frames == 0 ? 0 : Double(copies.copies - copiesBefore) / Double(progress.frames)
            let p = progress
            state.withLock { $0.progress = p }
        }

        loop: while !stopRequested {
            guard let frame = await queue.next() else {
                reason = stopRequested ? .stopped : .sessionStopped
                break
            }
            if stopRequested { break }
            if state.withLock({ $0.paused }) {
                wasPaused = true
                continue
            }
            if wasPaused, let last = lastWritten, frame.timestampNanoseconds > last {
                // The first frame after the pause follows the last one before it
                // by one usual frame interval.
                let gap = frame.timestampNanoseconds - last
                if gap > lastInterval { pausedTotal += gap - lastInterval }
                wasPaused = false
                lastSequence = nil // frames left out while paused are not camera skips
            }
            do {
                if encoder == nil {
                    let made = try LibavVideoEncoder(
                        settings: VideoEncoderSettings(codec: settings.codec, size: frame.size,
                                                       frameRate: settings.nominalFrameRate,
                                                       averageBitRate: settings.averageBitRate, preset: settings.preset),
                        input: frame.format, copies: copies)
                    writer = try MovieWriter(path: segmentPath(path, segmentIndex), container: container,
                                             video: made.codecParameters, fragmentDuration: settings.fragmentDuration)
                    encoder = made
                    progress.size = frame.size
                    progress.encoder = made.name
                    if made.isZeroCopy {
                        progress.path = "\(frame.format) wrapped without copying"
                    } else if let from = frame.format.info, let to = PixelFormat.yuv420.info {
                        progress.path = "converted, one CPU copy per frame: "
                            + from.memoryCost(to: to, width: frame.size.width, height: frame.size.height)
                    }
                    publish()
                    events.yield(.started(path: path))
                }
                let start = first ?? frame.timestampNanoseconds
                first = start
                let pts = Int64(frame.timestampNanoseconds &- start &- pausedTotal) / 1000
                if let max = maxRecordedDuration, pts >= Int64(max.seconds * 1e6) {
                    reason = .maximumDurationReached
                    break loop
                }
                guard pts > lastPTS else { continue }
                let resumed = lastSequence == nil && lastWritten != nil
                if let last = lastSequence, frame.sequence > last &+ 1 { progress.skippedFrames += Int(frame.sequence &- last &- 1) }
                lastSequence = frame.sequence
                lastPTS = pts
                if let last = lastWritten, !resumed, frame.timestampNanoseconds > last {
                    lastInterval = frame.timestampNanoseconds - last
                }
                lastWritten = frame.timestampNanoseconds
                var forceKeyframe = false
                if pts >= nextBoundary, !keyframeRequested {
                    forceKeyframe = true
                    keyframeRequested = true
                }
                for packet in try encoder!.encode(frame, ptsMicroseconds: pts, keyframe: forceKeyframe) {
                    if keyframeRequested, packet.isKeyframe, packet.pts >= nextBoundary {
                        // The boundary keyframe starts the next file.
                        try writer!.finish()
                        events.yield(.segmentFinished(path: writer!.path))
                        bytesBefore += writer!.bytesWritten
                        segmentIndex += 1
                        segmentBase = packet.dts
                        writer = try MovieWriter(path: segmentPath(path, segmentIndex), container: container,
                                                 video: encoder!.codecParameters, fragmentDuration: settings.fragmentDuration)
                        nextBoundary += segmentLength ?? 0
                        keyframeRequested = false
                    }
                    packet.rebase(by: segmentBase)
                    try writer!.write(packet)
                }
                progress.frames += 1
                progress.duration = .microseconds(pts)
                progress.bytes = bytesBefore + writer!.bytesWritten
                if let max = maxRecordedFileSize, progress.bytes >= max {
                    reason = .maximumFileSizeReached
                    break loop
                }
                if progress.frames % 15 == 0, let free = Self.freeSpace(directory), free < minFreeDiskSpace {
                    reason = .diskFull
                    break loop
                }
            } catch {
                reason = Self.isDiskFull(error) ? .diskFull : .error("\(error)")
                break loop
            }
            if ContinuousClock.now - lastReport >= .milliseconds(500) {
                lastReport = .now
                publish()
                events.yield(.progress(progress))
            }
        }
        // Finish what was recorded, whatever ended it, so nothing is lost.
        if let encoder, let writer {
            do {
                for packet in try encoder.finish() {
                    packet.rebase(by: segmentBase)
                    try writer.write(packet)
                }
                progress.bytes = writer.bytesWritten
                try writer.finish()
            } catch {
                if reason == .stopped || reason == .maximumDurationReached {
                    reason = Self.isDiskFull(error) ? .diskFull : .error("\(error)")
                }
                writer.closeKeepingFragments()
            }
        }
        publish()
        return reason
    }

    /// The file of segment `index` (only numbered when segmenting).
    private func segmentPath(_ path: String, _ index: Int) -> String {
        guard segmentDuration != nil else { return path }
        let ext = (path as NSString).pathExtension
        let base = (path as NSString).deletingPathExtension
        return base + "-" + String(format: "%04d", index) + "." + ext
    }

    static func freeSpace(_ directory: String) -> Int? {
        var info = statvfs()
        guard statvfs(directory.isEmpty ? "." : directory, &info) == 0 else { return nil }
        return Int(info.f_bavail) * Int(info.f_frsize)
    }

    static func isDiskFull(_ error: Error) -> Bool {
        if let e = error as? FFmpegError { return e.code == -ENOSPC }
        if let e = error as? SystemError { return e.code == ENOSPC }
        return false
    }
}

public enum RecordingError: Error, CustomStringConvertible, Equatable {
    case unknownContainer(String)
    case alreadyRecording

    public var description: String {
        switch self {
        case .unknownContainer(let path):
            "cannot tell the container from \"\(path)\"; use a name ending in .mp4, .mov or .mkv"
        case .alreadyRecording: "the output is already recording; stop it first"
        }
    }
}
