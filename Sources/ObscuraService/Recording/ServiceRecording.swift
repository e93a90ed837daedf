import Foundation
import Logging
import ObscuraAge
import ObscuraAudio
import ObscuraCamera
import ObscuraCapture
import ObscuraEncoding
import ObscuraGPIO
import ObscuraMedia
import ObscuraMuxing
import ObscuraOverlay
import ObscuraPhoto
import ObscuraPreview
import ObscuraRecording
import ObscuraSystem

/// The coordinator's recordings: started where `StorageTargets` says,
/// followed to their end, failed over from a drive that went away, and
/// retried while the encoder is down (`StageOutages`).
extension RecorderService {
    public func toggleRecording() async {
        // A press while a lost stage's recording waits to go on cancels it.
        if cancelPendingResume() {
            logger.notice("the recording will not go on when the stage is back (stopped)")
            if state.isError { enter(.idle) }
            return
        }
        if state.isRecording { await stopRecording() } else { await startRecording() }
    }

    @discardableResult
    public func startRecording() async -> String? { await startRecording(retry: false) }

    /// `recording.start = "power-on"`: a recording from the service's start;
    /// without a camera yet, from when it comes (as after a camera's loss).
    func recordFromStart() async {
        guard opened != nil else {
            outages.resumeRecording = true
            return logger.notice("recording.start is power-on: recording starts when the camera is there")
        }
        if let path = await startRecording() { logger.info("recording from the start (recording.start is power-on): \(path)") }
    }

    /// `retry`: a try after an encoder failed. A start asked for while one
    /// is being prepared gets that one's answer.
    func startRecording(retry: Bool) async -> String? {
        if let starting { return await starting.value }
        let start = Task { await self.startRecordingNow(retry: retry) }
        starting = start
        let path = await start.value
        starting = nil
        return path
    }

    func startRecordingNow(retry: Bool) async -> String? {
        guard !state.isRecording, !stopping, recording == nil else { return recording?.file }
        if opened == nil { await openCamera() }
        guard let session = opened?.session else {
            // One of a kiosk's cameras joins the others' recording when it comes.
            if kiosk != nil { outages.resumeRecording = true }
            fail("cannot record: no camera" + (kiosk == nil ? "" : " (\(cameraProblem ?? profile.cameraID)); it records from when it is there"), reason: .camera)
            return nil
        }
        if session.isInterrupted {
            outages.resumeRecording = true
            fail("cannot record now: the camera is gone; recording starts when it is back", reason: .camera)
            return nil
        }
        let target: StorageTargets.Target
        switch await storage.choose() {
        case .record(let t): target = t
        case .full(let message):
            noteStorageRestarts(await storage.restarts)
            fail(message, reason: .storage)
            return nil
        }
        noteStorageRestarts(await storage.restarts)
        // The actor ran other work meanwhile: look again.
        guard !state.isRecording, !stopping, recording == nil else { return recording?.file }
        guard let opened else {
            fail("cannot record: no camera", reason: .camera)
            return nil
        }
        return begin(on: target, opened, retry: retry)
    }

    func begin(on target: StorageTargets.Target, _ opened: CameraSetup.Opened, retry: Bool) -> String? {
        let stem = stems.next(FileNames.stem(clockSynchronized: clockSynchronized) + cameraSuffix)
        let path = "\(target.folder)/\(stem).\(configuration.recordingExtension)"
        let movie = opened.movie
        movie.segmentDuration = configuration.segmentSeconds > 0 ? .seconds(configuration.segmentSeconds) : nil
        movie.segmentOrigin = kiosk?.segmentOrigin.withLock { $0 }
        movie.minFreeDiskSpace = target.minFree
        movie.maxRecordedDuration = nil
        do {
            var settings = setup.movieSettings(opened.device, frameRate: opened.frameRate, partialDirectory: target.incoming)
            settings.averageBitRate = pressure.bitRate(settings.averageBitRate)
            status.bitRate = settings.averageBitRate
            let events = try movie.startRecording(to: path, settings: settings)
            var begun = RecordingInProgress(file: path, started: clock.now, onDrive: target.onDrive, retry: retry)
            begun.task = Task { await self.follow(events) }
            // The status shows the recording in progress from its start.
            status.frames = 0
            status.bytes = 0
            status.droppedFrames = 0
            status.skippedFramesTotal = 0
            if retry {
                // A try keeps the state it was made in (error, as a rule) until it has packets.
                enter(state.carrying(begun))
            } else {
                enter(.recording(begun))
                logger.notice("recording \(path)")
            }
            return path
        } catch {
            if !retry { fail("cannot record: \(error)", reason: .recording) }
            return nil
        }
    }

    func noteStorageRestarts(_ count: Int) {
        if count > 0 { status.stageRestarts["storage"] = count }
    }

    func follow(_ events: AsyncStream<RecordingEvent>) async {
        for await event in events {
            switch event {
            case .progress(let p):
                take(p)
            case .segmentFinished(let path):
                status.recordings += 1
                logger.info("segment finished: \(path)")
                await storage.trim(onDrive: recording?.onDrive == true)
            case .finished(_, .encoderFailed, let p) where recording?.retry == true && p.frames == 0:
                // A try while the encoder is down that made nothing: try again.
                change { $0.recordingEnded() }
                scheduleEncoderRetry()
            case .finished(let path, let reason, let p):
                let ended = recording
                change { $0.recordingEnded() }
                // A try that ended before its file opened (stopped meanwhile): nothing was recorded.
                if ended?.retry == true && p.frames == 0 { continue }
                recordingFinished(path, reason, p, ended)
            case .started(let path):
                started(path)
            case .encoderRetuned(let said):
                logger.notice("encoder \(said)")
            }
        }
    }

    /// A recording's first packets in its file.
    func started(_ path: String) {
        if recording?.firstFrameSaid == false, let zero = opened?.movie.progress.timeZeroNanoseconds {
            // The wall-clock time of the first frame (what its caption
            // shows, and every later frame's time follows from the file's).
            change { $0.updateRecording { $0.firstFrameSaid = true } }
            let format = ISO8601DateFormatter()
            format.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
            let wall = SystemClock.wallClock(ofMonotonic: zero)
            logger.info("recording \(path): first frame taken at \(format.string(from: wall)) (\(String(format: "%.6f", wall.timeIntervalSince1970)) s)")
        }
        if let r = recording, r.retry {
            change { $0.updateRecording { $0.retry = false } }
            encoderRestarted()
            if let going = recording { enter(.recording(going)) }
            let took = (clock.now - r.started).seconds
            logger.notice("recording goes on after the encoder's failure: \(path) (its first packet \(String(format: "%.2f", took)) s after the file was opened)")
        }
        // One line: which encoder, how frames reach it, and why it was chosen.
        if let p = opened?.movie.progress, !p.encoder.isEmpty, said.changed("encoder", to: p.encoder) {
            logger.info("encoder \(p.encoder); frames \(p.path) [\(p.encoderChoice)]")
        }
    }

    /// A recording's progress into the status.
    func take(_ p: RecordingProgress) {
        status.bytes = p.bytes
        status.droppedFrames = p.droppedFrames
        status.frames = p.frames
        status.framesPerSecond = p.recentFrameRate
        status.encoderLatencySeconds = p.encoderLatency.seconds
        status.cameraToFileSeconds = p.cameraToFile.seconds
        status.framesInEncoder = p.framesInEncoder
        status.skippedFramesTotal = p.skippedFrames
        status.pacedFrames = p.thinnedFrames
        sayFirstFramesDurable(p)
    }

    /// Once per recording: when its first frames were on the storage, on the
    /// monotonic clock beside when the first was taken (what
    /// bench/press-to-file and bench/first-frame read).
    func sayFirstFramesDurable(_ p: RecordingProgress) {
        guard let r = recording, !r.durableSaid, let durable = p.firstFramesDurableNanoseconds,
              let zero = p.timeZeroNanoseconds else { return }
        change { $0.updateRecording { $0.durableSaid = true } }
        let seconds = { (ns: UInt64) in String(format: "%.6f", Double(ns) / 1e9) }
        logger.info("recording \(r.file): first frames on the storage at \(seconds(durable)) s, the first taken at \(seconds(zero)) s (monotonic clock)")
    }

    func recordingFinished(_ path: String, _ reason: RecordingFinishReason, _ p: RecordingProgress, _ ended: RecordingInProgress?) {
        take(p)
        totals.add(frames: p.frames, bytes: p.bytes, dropped: p.droppedFrames, skipped: p.skippedFrames, paced: p.thinnedFrames)
        status.recordings += 1
        status.lastRecording = path
        let seconds = String(format: "%.1f", p.duration.seconds)
        let sound = p.audio.isEmpty ? "" : ", audio \(p.audio) (\(p.audioPackets) packets, drift corrected by \(p.audioCompensatedSamples) samples)"
        for note in p.fileNotes { logger.warning("\(note)") }
        let thinned = p.thinnedFrames > 0 ? ", left out for the pace \(p.thinnedFrames)" : ""
        logger.notice("recording finished: \(path), \(p.frames) frames, \(seconds) s, dropped \(p.droppedFrames), camera skipped \(p.skippedFrames)\(thinned)\(sound), \(reason)")
        // A recording on the drive that failed (a write or sync error) or
        // was stopped because the drive went away: when the drive is gone,
        // it goes on on the card.
        var failed = ended?.driveRemoved == true
        switch reason {
        case .error, .diskFull, .storageFailed: failed = true
        default: break
        }
        if ended?.onDrive == true, failed, !stopping {
            status.recordingsFailed += 1
            Task { await self.failOverFromDrive(reason) }
            return
        }
        let storage = storage
        Task { await storage.trimCard() }
        recordingEnded(reason, frames: p.frames)
    }

    func recordingEnded(_ reason: RecordingFinishReason, frames: Int) {
        switch reason {
        case .stopped, .maximumDurationReached, .maximumFileSizeReached, .sessionStopped:
            if case .continuing = state { enter(.idle) }
        case .diskFull:
            status.recordingsFailed += 1
            fail("disk full: the recording was finalized", reason: .storage)
        case .cameraLost:
            // The session reopens the camera when it is listed again, and
            // the recording goes on in a new file then (`sessionEvent`). One
            // that is not back within `cameraGiveUp` is dropped and opened
            // afresh by the housekeeping, which resumes the recording too.
            status.recordingsFailed += 1
            outages.cameraLost(at: clock.now)
            outages.resumeRecording = true
            fail("camera lost: the recording was finalized; it goes on in a new file when the camera is back", reason: .camera)
        case .encoderFailed(let e) where frames > 0 && !stopping:
            // The file keeps what the encoder gave back; a new recording is
            // tried until an encoder (this one back, or the next in the
            // profile's order) takes frames.
            status.recordingsFailed += 1
            outages.encoderFailed(at: clock.now)
            fail("encoder failed: \(e); the recording was finalized; it goes on in a new file when an encoder takes frames", reason: .encoder)
            scheduleEncoderRetry()
        case .storageFailed(let e):
            status.recordingsFailed += 1
            fail("storage failed: \(e); the recording was finalized up to its last complete fragment", reason: .storage)
        case .encoderFailed(let e), .error(let e):
            status.recordingsFailed += 1
            fail("recording failed: \(e)", reason: .recording)
        }
    }

    /// After a recording on the drive failed: when the drive is gone, the
    /// recording goes on on the card at once; when it is still there, the
    /// failure is the recording's own.
    func failOverFromDrive(_ reason: RecordingFinishReason) async {
        guard await storage.driveGoneAfterFailure() else {
            return fail("recording failed: \(reason)", reason: .recording)
        }
        noteStorageRestarts(await storage.restarts)
        if case .continuing = state { enter(.idle) }
        if let path = await startRecording() {
            logger.notice("recording goes on on the SD card after the drive went away: \(path)")
        }
    }

    /// The drive looked for: a recording on it when it went away is stopped
    /// (what can be finalized is) and goes on on the card.
    func followDrive() async {
        switch await storage.followDrive(recordingOnIt: recording?.onDrive == true) {
        case .goneUnderRecording?:
            guard recording?.onDrive == true else { return }
            change { $0.updateRecording { $0.driveRemoved = true } }
            opened?.movie.stopRecording()
        case .unwritable(let message)?:
            noteError(message, reason: .drive)
        case nil: break
        }
    }

    func scheduleEncoderRetry() {
        guard outages.encoderDown, !stopping else { return }
        outages.encoderRetry = Task { [weak self, clock] in
            try? await clock.sleep(for: Self.encoderRetryInterval)
            guard !Task.isCancelled else { return }
            await self?.retryEncoder()
        }
    }

    func retryEncoder() async {
        guard outages.encoderDown, !stopping, recording == nil else { return }
        if opened?.session.isInterrupted == true { return scheduleEncoderRetry() }
        if await startRecording(retry: true) == nil { scheduleEncoderRetry() }
    }

    /// Packets flow again after an encoder failed: one restart of the
    /// encoder stage, and the time it left unrecorded.
    func encoderRestarted() {
        let gap = outages.encoderBack(at: clock.now).seconds
        status.stageRestarts["encoder", default: 0] += 1
        status.stageGapSeconds["encoder", default: 0] += gap
        logger.notice("encoder back after \(String(format: "%.1f", gap)) s without packets")
    }

    /// A press or `ctl record stop` while a failed stage's recording waits
    /// to go on: it will not. Returns whether one was waiting.
    func cancelPendingResume() -> Bool {
        let (cancelled, encoder) = outages.cancelWaiting()
        if encoder {
            if recording?.retry == true { opened?.movie.stopRecording() }
        }
        return cancelled
    }

    public func stopRecording() async {
        guard let movie = opened?.movie, let task = recording?.task else { return }
        movie.stopRecording()
        await task.value
    }
}
