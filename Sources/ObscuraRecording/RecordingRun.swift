import Foundation
import ObscuraFFmpeg
import ObscuraCapture
import ObscuraEncoding
import ObscuraMedia
import ObscuraMuxing
import ObscuraOverlay
import ObscuraSystem

/// One recording of a `MovieFileOutput`, on the output's executor: frames
/// from the queue through named stages until a stop, a limit, the camera's
/// loss or an error —
///
/// 1. `nextFrame`: the queue (pauses taken out of the timeline);
/// 2. `overlaid`: the caption, burnt in;
/// 3. `encode`: the timeline (`RecordingTimeline`) places the frame, the
///    encoder (made on the first frame) takes it;
/// 4. `file`: packets and sound into the file (`SegmentedFileSink`), the
///    limits looked at;
/// 5. `finish`: what is still in the encoder written, the file finished.
///
/// With `carry` (from the pre-record buffer) the encoder is already
/// running: its buffered packets open the file and its timeline goes on.
/// Not shared: made, run and dropped by one task.
final class RecordingRun {
    private let output: MovieFileOutput
    private let path: String
    /// The recording's folder, for the free-space check.
    private let directory: String
    private let settings: MovieSettings
    private let carry: MovieFileOutput.Carry?
    private let events: AsyncStream<RecordingEvent>.Continuation
    private let sink: SegmentedFileSink
    private let changes: SinkChanges

    private var encoder: (any VideoEncoder)?
    private var timeline: RecordingTimeline
    private var progress = RecordingProgress()
    private var overlay: FrameOverlay?
    private var reason: RecordingFinishReason = .stopped
    private var lastReport = ContinuousClock.now
    /// Where the recording was asked for (encoder time, µs): limits count from there.
    private var triggerPTS: Int64 = 0
    /// With a running encoder but nothing buffered, the file waits for a
    /// keyframe (asked for at once).
    private var waitingForKeyframe = false
    /// CPU time spent inside the encoder's calls (its own threads excluded).
    private var encoderCPU: UInt64 = 0
    private var latency = EncoderLatency()
    /// The interval frames come at, and the bounded encoder's threading for it.
    private var heldFrames: HeldFramesGovernor
    /// Why the encoder's threads could not follow the frames (said once).
    private var retuneRefused: String?
    /// Frames given to the encoder since its last keyframe, that one
    /// counted: its own next keyframe comes when this reaches the keyframe
    /// interval (0: its first frame, a keyframe too). nil: not known (an
    /// encoder carried over from before the recording).
    private var sinceKeyframe: Int?
    /// Frames placed since the last report, and the pts before them.
    private var windowFrames = 0
    private var windowStartPTS: Int64?
    private var lastPTS: Int64?
    /// What the timeline and the copy counter held before this recording
    /// (they live as long as the output or the pre-record buffer).
    private let before: (skipped: Int, dropped: Int, thinned: Int, copies: Int, frames: Int)

    /// What the file stage said since the last report (its callback's box).
    private final class SinkChanges {
        var opened = false
        var finishedSegments: [String] = []
    }

    /// The encoder stage failed (not the file): `.encoderFailed`.
    private struct StageFailure: Error {
        let message: String
    }

    init(output: MovieFileOutput, path: String, container: MovieContainer, settings: MovieSettings,
         carry: MovieFileOutput.Carry?, events: AsyncStream<RecordingEvent>.Continuation) {
        self.output = output
        self.path = path
        directory = (path as NSString).deletingLastPathComponent
        self.settings = settings
        self.carry = carry
        self.events = events
        encoder = carry?.encoder
        heldFrames = HeldFramesGovernor(budget: settings.maxEncoderDelay?.seconds ?? 0)
        timeline = carry?.timeline ?? RecordingTimeline()
        before = (timeline.skippedFrames, timeline.droppedFrames, timeline.thinnedFrames,
                  output.copies.copies, output.copies.frames)
        let changes = SinkChanges()
        self.changes = changes
        // The file stage; sound comes from the input's periods gathered by `receive`.
        let audioFormat = settings.recordsAudio ? output.connectedAudioFormat : nil
        sink = SegmentedFileSink(
            path: path, container: container, segmentLength: output.segmentDuration.map { Int64($0.seconds * 1e6) },
            fragmentDuration: settings.fragmentDuration, partialDirectory: settings.partialDirectory,
            recipients: settings.recipients, alignedToChunks: settings.alignsFragmentsToAgeChunks,
            audio: audioFormat.map { AudioTrack(settings: settings.audio, format: $0) },
            marked: settings.marked, markEncoder: settings.markEncoder,
            sound: { [output] in output.takePendingAudio() },
            marks: { [output] in output.takePendingMarks() },
            changed: { change in
                switch change {
                case .opened: changes.opened = true
                case .segmentFinished(let file): changes.finishedSegments.append(file)
                }
            },
            creationTime: settings.creationTime.mapping)
        sink.segmentOrigin = output.segmentOrigin
        openTimestampsFile()
    }

    /// The recording, to its end; returns why it ended.
    func run() async -> RecordingFinishReason {
        writeCarry()
        while let frame = await nextFrame() {
            do {
                guard let (packets, pts) = try encode(try overlaid(frame)) else { continue }
                await soundBeforeCut(packets)
                if let end = try file(packets, pts: pts) {
                    reason = end
                    break
                }
            } catch let failure as StageFailure {
                reason = .encoderFailed(failure.message)
                break
            } catch let ended as Ended {
                reason = ended.reason
                break
            } catch {
                reason = MovieFileOutput.failureReason(error)
                break
            }
            if ContinuousClock.now - lastReport >= .milliseconds(500) {
                lastReport = .now
                publish()
                events.yield(.progress(progress))
            }
        }
        await finish()
        publish()
        try? sink.timestamps?.close()
        return reason
    }

    // MARK: Stages

    /// The pre-record buffer's packets open the file.
    private func writeCarry() {
        guard let carry, let made = encoder else { return }
        triggerPTS = Int64(carry.trigger &- (carry.timeline.epoch ?? carry.trigger)) / 1000
        describe(made, carry.format, carry.size)
        if let firstEntry = carry.entries.first {
            progress.preRoll = .nanoseconds(Int64(carry.trigger &- firstEntry.timestamp))
        }
        do {
            try write(carry.entries.map(\.packet), made)
        } catch {
            reason = MovieFileOutput.failureReason(error)
            output.stopRecording()
        }
        waitingForKeyframe = carry.entries.isEmpty
    }

    /// The next frame to record, or nil at the end (`reason` says why).
    /// Frames while paused are taken out of the timeline.
    private func nextFrame() async -> VideoFrame? {
        while !output.stopRequested {
            if output.isCameraLost {
                reason = .cameraLost
                return nil
            }
            guard let frame = await output.queue.next() else {
                if output.stopRequested { return nil }
                if output.isCameraLost {
                    reason = .cameraLost
                    return nil
                }
                if output.queue.isClosed {
                    reason = .sessionStopped
                    return nil
                }
                continue
            }
            if output.stopRequested { return nil }
            if output.isRecordingPaused {
                timeline.framePaused()
                continue
            }
            return frame
        }
        return nil
    }

    /// The caption burnt in (when asked for).
    private func overlaid(_ frame: VideoFrame) throws -> VideoFrame {
        guard let wanted = settings.overlay else { return frame }
        do {
            if overlay == nil { overlay = try FrameOverlay(settings: wanted, frameSize: frame.size, copies: output.copies) }
            let shown = try overlay!.apply(frame)
            progress.overlayInPlace = overlay!.inPlace
            progress.overlayCopied = overlay!.copied
            return shown
        } catch {
            throw Ended(reason: .error("overlay: \(error)"))
        }
    }

    /// The frame placed in the timeline and encoded: its packets and pts,
    /// or nil when it is not recorded (a duplicate, thinned, dropped).
    private func encode(_ frame: VideoFrame) throws -> ([EncodedPacket], Int64)? {
        var made = try encoder ?? makeEncoder(frame)
        if progress.size == nil { describe(made, frame.format, frame.size) }
        // The first frame after a pause follows the last one before it by
        // one usual frame interval.
        guard let pts = timeline.pts(for: frame) else { return nil }
        if let max = output.maxRecordedDuration, pts - triggerPTS >= Int64(max.seconds * 1e6) {
            throw Ended(reason: .maximumDurationReached)
        }
        let queue = output.queue
        guard timeline.place(frame, at: pts, dropped: { queue.dropped(after: $0, before: $1) },
                             thinned: { queue.thinned(after: $0, before: $1) }) else { return nil }
        progress.skippedFrames = timeline.skippedFrames - before.skipped
        heldFrames.frame(at: frame.timestampNanoseconds)
        let wanted = settings.encoderSettings(size: frame.size), interval = wanted.maxKeyFrameInterval
        if let retuned = try retune(made, frame, wanted, keyframe: keyframeDue(every: interval) ?? true, pts: pts) {
            made = retuned
            sinceKeyframe = 0
        }
        if windowStartPTS == nil { windowStartPTS = pts } else { windowFrames += 1 }
        lastPTS = pts
        let forceKeyframe = sink.needsKeyframe(at: pts) || waitingForKeyframe || output.live.wantsKeyframe
        waitingForKeyframe = false
        if forceKeyframe || keyframeDue(every: interval) == true { sinceKeyframe = 1 } else { sinceKeyframe? += 1 }
        let cpuBefore = Syscalls.threadCPUNanoseconds()
        latency.frameIn(sensorNanoseconds: frame.timestampNanoseconds)
        let packets: [EncodedPacket]
        do {
            packets = try made.encode(frame, ptsMicroseconds: pts, keyframe: forceKeyframe)
        } catch {
            throw StageFailure(message: "\(error)")
        }
        encoderCPU &+= Syscalls.threadCPUNanoseconds() &- cpuBefore
        latency.packetsOut(packets.count)
        share(packets, made)
        if latency.framesSincePacket >= settings.encoderStallFrames {
            throw StageFailure(message: "\(made.name) took \(latency.framesSincePacket) frames and gave back no packet"
                               + String(format: " (%.1f s)", latency.oldestWait().seconds))
        }
        return (packets, pts)
    }

    /// Whether the encoder makes the next frame a keyframe by itself, its
    /// keyframes `interval` frames apart (nil: not known).
    private func keyframeDue(every interval: Int) -> Bool? {
        sinceKeyframe.map { $0 == 0 || $0 >= interval }
    }

    /// A bounded libx264 or libx265 whose threads no longer fit the interval
    /// frames come at is replaced at this frame, which the new encoder makes
    /// a keyframe, so a fragment starts there. The new encoder is made first
    /// and taken only when its stream's headers are the old one's (else the
    /// old one goes on, said once, and is not made again for the rest of the
    /// recording); the old one's frames are drained into the file before.
    /// Nil: the encoder stays.
    private func retune(_ made: any VideoEncoder, _ frame: VideoFrame, _ encoderSettings: VideoEncoderSettings,
                        keyframe: Bool, pts: Int64) throws -> (any VideoEncoder)? {
        guard retuneRefused == nil, let current = made as? LibavVideoEncoder, current.heldFramesBound != nil,
              let wanted = heldFrames.retune(encoderSettings, holding: current.heldFramesBound ?? 0,
                                             current: current.boundParameters, at: frame.timestampNanoseconds,
                                             keyframe: keyframe) else { return nil }
        let next: LibavVideoEncoder
        do {
            next = try LibavVideoEncoder(settings: wanted, input: frame.format, encoderName: current.name, copies: output.copies)
        } catch {
            refuseRetune("\(current.name) could not be made again for frames every \(Self.milliseconds(wanted.frameInterval)): \(error)")
            return nil
        }
        guard next.codecParameters.describesSameStream(as: current.codecParameters) else {
            refuseRetune("\(current.name) with \(wanted.boundParameters ?? "its own threads") makes other stream headers")
            return nil
        }
        let drained: [EncodedPacket]
        do {
            drained = try current.finish()
        } catch {
            throw StageFailure(message: "\(error)")
        }
        latency.packetsOut(drained.count)
        share(drained, current)
        try write(drained, current)
        // The new encoder gives its first packet only once it holds its
        // frames: what the old one gave is a fragment of its own now.
        try output.onStorage { try sink.endFragment() }
        encoder = next
        events.yield(.encoderRetuned("\(current.name): frames every \(Self.milliseconds(wanted.frameInterval)), so it holds at most "
                                     + "\(next.heldFramesBound ?? 0) (\(wanted.boundParameters ?? "its own threads"); was \(current.heldFramesBound ?? 0), "
                                     + "\(current.boundParameters ?? "its own threads")), from a keyframe"
                                     + (sink.isOpen ? String(format: " at %.3f s", Double(pts - sink.fileBase) / 1e6) : "")))
        return next
    }

    private func refuseRetune(_ why: String) {
        guard retuneRefused == nil else { return }
        retuneRefused = why
        events.yield(.encoderRetuned("kept as it is: \(why)"))
    }

    private static func milliseconds(_ seconds: Double?) -> String {
        seconds.map { String(format: "%.1f ms", $0 * 1000) } ?? "?"
    }

    /// Packets for the live viewers, if any: each with its frame's camera time.
    private func share(_ packets: [EncodedPacket], _ made: any VideoEncoder) {
        output.live.publish(packets, encoder: made, timeline: timeline)
    }

    /// The first frame's encoder: the settings' preference, as the frame allows.
    private func makeEncoder(_ frame: VideoFrame) throws -> any VideoEncoder {
        do {
            let made = try VideoEncoders.make(settings: settings.encoderSettings(size: frame.size), firstFrame: frame,
                                              preference: settings.encoders, copies: output.copies)
            let wrapped = output.wrapEncoder.map { $0(made.encoder) } ?? made.encoder
            encoder = wrapped
            sinceKeyframe = 0
            output.noteEncoderChoice(made.choice)
            return wrapped
        } catch {
            throw StageFailure(message: "\(error)")
        }
    }

    /// A segment about to end waits for the sound of its last moment, as
    /// a recording's end does (a period is handed over a period or so after
    /// the picture of the same moment): its track ends with its picture, and
    /// the next file's begins there. At most a quarter second.
    private func soundBeforeCut(_ packets: [EncodedPacket]) async {
        guard sink.audio != nil, let cut = packets.first(where: sink.cuts), let end = timeline.sensorTime(pts: cut.pts) else { return }
        await output.waitForSound(until: end, atMost: .milliseconds(250))
    }

    /// Packets and sound into the file; a limit reached ends the recording.
    private func file(_ packets: [EncodedPacket], pts: Int64) throws -> RecordingFinishReason? {
        guard let made = encoder else { return nil }
        try write(packets, made)
        try output.onStorage { try sink.takeSound(timeline) }
        guard sink.isOpen else { return nil }
        progress.duration = .microseconds(pts - sink.fileBase)
        progress.bytes = sink.bytes
        if let max = output.maxRecordedFileSize, progress.bytes >= max { return .maximumFileSizeReached }
        if sink.frames % 15 == 0, let free = output.onStorage({ MovieFileOutput.freeSpace(directory) }), free < output.minFreeDiskSpace {
            return .diskFull
        }
        return nil
    }

    /// Finishes what was recorded, whatever ended it, so nothing is lost:
    /// frames still inside the encoder come out now (and open the file if
    /// none had come out yet, e.g. a camera that delivered only a few). A
    /// failed encoder is not drained (its device may be gone, or it holds
    /// frames it will never give back): the file ends with what came out.
    private func finish() async {
        guard let encoder else { return }
        do {
            if case .encoderFailed = reason {} else {
                let cpuBefore = Syscalls.threadCPUNanoseconds()
                let drained = try encoder.finish()
                encoderCPU &+= Syscalls.threadCPUNanoseconds() &- cpuBefore
                latency.packetsOut(drained.count)
                try write(drained, encoder)
            }
            // What the drain wrote counts too (with a slow camera, it may be
            // most of a short recording).
            if sink.isOpen, let newest = sink.newestVideoPTS {
                progress.duration = max(progress.duration, .microseconds(newest - sink.fileBase))
            }
            progress.bytes = sink.bytes
            if reason == .stopped || reason == .maximumDurationReached || reason == .maximumFileSizeReached,
               sink.audio != nil, timeline.lastPTS >= 0, let last = timeline.sensorTime(pts: timeline.lastPTS) {
                await output.waitForSound(until: last &+ timeline.lastInterval, atMost: .milliseconds(250))
            }
            try output.onStorage { try sink.finish(timeline) }
            progress.bytes = sink.bytes  // the finished files' sizes, trailers included
        } catch {
            if reason == .stopped || reason == .maximumDurationReached {
                reason = MovieFileOutput.failureReason(error)
            }
            sink.closeKeepingFragments()
            progress.bytes = sink.bytes
            if let kept = sink.keptDuration { progress.duration = kept }
            report()
        }
    }

    // MARK: Reports

    /// Writes packets; says what the file stage did.
    private func write(_ packets: [EncodedPacket], _ made: any VideoEncoder) throws {
        defer { report() }
        let timeline = timeline
        try output.onStorage { for packet in packets { try sink.write(packet, video: made.codecParameters, timeline: timeline) } }
    }

    /// The file's opening and finished segments as events.
    private func report() {
        if changes.opened {
            changes.opened = false
            if let zero = sink.timeZeros.first { progress.timeZeroNanoseconds = zero }
            progress.audio = sink.audio?.description ?? ""
            publish()
            events.yield(.started(path: path))
        }
        for file in changes.finishedSegments { events.yield(.segmentFinished(path: file)) }
        changes.finishedSegments = []
        progress.segmentTimeZeros = sink.timeZeros
    }

    /// The progress so far, for `progress` and the events.
    private func publish() {
        progress.frames = sink.frames
        progress.firstFramesDurableNanoseconds = sink.firstFramesDurableAt
        progress.audioPackets = sink.audioPackets
        progress.fileNotes = sink.notes
        if let audio = sink.audio { progress.audioCompensatedSamples = audio.compensatedSamples }
        progress.audioDrops = output.audioDropsSoFar
        progress.encoderCPU = .nanoseconds(Int64(encoderCPU))
        latency.closeWindow()
        progress.encoderLatency = latency.mean
        progress.encoderLatencyMax = latency.maximum
        progress.framesInEncoder = latency.framesInside
        progress.cameraToEncoder = latency.cameraToEncoderMax
        progress.cameraToFile = latency.cameraToPacketMax
        if let start = windowStartPTS, let last = lastPTS, last > start, windowFrames > 0 {
            progress.recentFrameRate = Double(windowFrames) / (Double(last - start) / 1e6)
            windowFrames = 0
            windowStartPTS = last
        }
        // Drops that left a hole in the file, not those before its first
        // frame or after its last (the camera's own gaps are `skipped`).
        progress.droppedFrames = timeline.droppedFrames - before.dropped
        progress.thinnedFrames = timeline.thinnedFrames - before.thinned
        let encoded = output.copies.frames - before.frames
        progress.copiesPerFrame = encoded == 0 ? 0 : Double(output.copies.copies - before.copies) / Double(encoded)
        output.publish(progress)
    }

    /// The encoder, how frames reach it, and why it was chosen.
    private func describe(_ made: any VideoEncoder, _ frameFormat: PixelFormat, _ size: PixelSize) {
        progress.size = size
        progress.encoder = made.name
        progress.encoderChoice = output.encoderChoice
        if let hardware = made as? V4L2MemoryToMemoryEncoder {
            progress.path = hardware.importsDmabufs ? "\(frameFormat) imported by dmabuf, no CPU copy"
                : "copied into the encoder's buffers, one CPU copy per frame"
        } else if made.isZeroCopy {
            progress.path = "\(frameFormat) wrapped without copying"
        } else if let from = frameFormat.info, let to = PixelFormat.yuv420.info {
            progress.path = "converted, one CPU copy per frame: "
                + from.memoryCost(to: to, width: size.width, height: size.height)
        }
    }

    private func openTimestampsFile() {
        guard let file = settings.timestampsFile else { return }
        if FileManager.default.createFile(atPath: file, contents: Data("# timestamp format v2\n".utf8)),
           let handle = FileHandle(forWritingAtPath: file) {
            handle.seekToEndOfFile()
            sink.timestamps = handle
        } else {
            progress.fileNotes.append("\(file): cannot be written (\(String(cString: strerror(errno)))); no timestamps kept")
        }
    }
}

/// A limit reached inside a stage: the recording ends for `reason`.
struct Ended: Error {
    let reason: RecordingFinishReason
}
