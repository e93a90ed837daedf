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

/// The coordinator's camera: opened on the camera thread (`CameraSetup`),
/// its session's events, its loss and return, and the recording pace.
extension RecorderService {
    /// Opens the camera (on the camera thread); one opening at a time.
    func openCamera() async {
        switch camera {
        case .ready: return
        case .opening(let task): return await task.value
        case .closed:
            let task = Task { await self.openCameraNow() }
            camera = .opening(task)
            await task.value
            if case .opening = camera { camera = .closed }
        }
    }

    func openCameraNow() async {
        guard opened == nil else { return }
        let setup = setup, flash = kiosk.map { $0.flash.withLock { $0 } } ?? gpio.flash, preview = preview
        let made: CameraSetup.Opened
        do {
            made = try await onCameraThread { try setup.open(flash: flash, preview: preview) }
        } catch {
            cameraProblem = "\(error)"
            return fail("camera: \(error)", reason: .camera)
        }
        camera = .ready(OpenCamera(made))
        viewersChanged()
        if pressure.level > .nominal { applyPressure() }
        status.audio = made.audio
        status.cameraFrameRate = camera.open?.pace.rate ?? made.pace.rate
        status.configuredFrameRate = made.pace.nominal
        status.camera = made.device.uniqueID
        if let stream = made.session.activeConfiguration?.streams.first {
            logger.info("camera \(made.device.uniqueID): \(stream.pixelFormat) \(stream.size)")
            logCameraLayer()
        }
        watchPicture(made)
        listenToSound(made)
        Task { [weak self, events = made.session.events()] in
            for await event in events { await self?.sessionEvent(event) }
        }
        if outages.cameraDown { cameraRestarted() }
        if state.isError { enter(.idle) }
        resumeIfLost()
    }

    /// The session given up on (its camera gone too long): stopped on the
    /// camera thread, opened afresh by the housekeeping.
    func dropCamera() async {
        guard let dropped = opened else { return }
        camera = .closed
        _ = try? await onCameraThread { try dropped.session.stopRunning() }
        dropped.sound?.sampler.end()
    }

    /// Which libcamera and which shim drive the camera, once per process.
    func logCameraLayer() {
        guard let layer = CameraLibrary.loaded, said.first("camera layer") else { return }
        logger.notice("camera layer: \(layer) (\(CameraManager.libcameraRuntimeVersion); shim built with \(CameraManager.libcameraVersion)'s headers)")
        if let warning = layer.warning { logger.warning("\(warning)") }
    }

    func sessionEvent(_ event: CaptureSession.Event) {
        switch event {
        case .wasInterrupted(let why):
            logger.warning("camera interrupted: \(why.rawValue)")
            outages.cameraLost(at: clock.now)
        case .interruptionEnded:
            cameraRestarted()
            if state.isError, state.failure?.message.hasPrefix("camera") == true { enter(.idle) }
            resumeIfLost()
        case .runtimeError(let e): noteError(e, reason: .camera)
        default: break
        }
    }

    /// The camera delivers again after an interruption or a loss: one restart
    /// of the camera stage, and the time it had none.
    func cameraRestarted() {
        let gap = outages.cameraBack(at: clock.now).seconds
        status.stageRestarts["camera", default: 0] += 1
        status.stageGapSeconds["camera", default: 0] += gap
        logger.notice("camera back after \(String(format: "%.1f", gap)) s without frames")
    }

    /// The recording the camera's loss ended goes on, in a new file.
    func resumeIfLost() {
        guard outages.resumeRecording, !stopping else { return }
        outages.resumeRecording = false
        let why = configuration.recordingStart == .powerOn && status.recordings == 0
            ? "recording from the start, now that the camera is there" : "recording goes on after the camera's loss"
        Task {
            if let path = await startRecording() { logger.notice("\(why): \(path)") }
        }
    }

    /// One housekeeping round of the pace: what the recording in progress
    /// recorded and dropped since the last round decides a step.
    func followPace() {
        guard var follower = camera.open?.pace, let opened, state.isRecording, recording != nil else {
            camera.update { $0.pace.restartWindow() }
            return
        }
        defer { camera.update { $0.pace = follower } }
        let step: RecordingPace.Step?
        do {
            step = try follower.follow(frames: status.frames, dropped: status.droppedFrames, device: opened.device, movie: opened.movie)
        } catch {
            return logger.warning("camera \(opened.device.uniqueID): cannot set another frame rate: \(error)")
        }
        status.cameraFrameRate = follower.rate
        switch step {
        case .down(let said)?:
            status.rateStepsDown = (status.rateStepsDown ?? 0) + 1
            logger.warning("\(said)")
        case .up(let said)?:
            status.rateStepsUp = (status.rateStepsUp ?? 0) + 1
            logger.notice("\(said)")
        case nil: break
        }
    }
}
