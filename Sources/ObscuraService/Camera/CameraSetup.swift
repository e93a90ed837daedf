import Foundation
import Logging
import ObscuraAudio
import ObscuraCamera
import ObscuraCapture
import ObscuraEncoding
import ObscuraHealth
import ObscuraMedia
import ObscuraOverlay
import ObscuraPhoto
import ObscuraPreview
import ObscuraRecording
import ObscuraSystem
import ObscuraSoftwareCamera

/// The camera as the service opens it: the device the profile names, a
/// session with the movie, photo and preview outputs, the format and frame
/// rate the configuration asks for, the microphone; and the settings each
/// recording from it is made with.
///
/// `open` blocks (libcamera's configure and start wait on the camera): the
/// service runs it on its camera thread, never on Swift's pool.
struct CameraSetup: Sendable {
    let configuration: ServiceConfiguration
    let profile: BoardProfile
    let logger: Logger
    /// The capture stack's own notes.
    let log: @Sendable (String) -> Void
    /// The time the session judges the camera's silence by.
    let clock: any WaitingClock
    /// The live viewers' feed, which every movie output made here feeds.
    let live: LiveFeed

    /// What `open` made.
    struct Opened: Sendable {
        let device: CaptureDevice
        let session: CaptureSession
        let movie: MovieFileOutput
        let photo: PhotoOutput
        let preview: PreviewOutput?
        /// The rate the encoder plans for: the configured one, as the camera
        /// was set to it (or the nearest it allows).
        let frameRate: Double
        let pace: RecordingPace
        /// The microphone recorded beside the video, or why there is none.
        let audio: String
        /// The picture watch's samples, taken as the frames pass (no camera
        /// buffer held for it), and what it is watched for; nil when nothing is.
        let picture: Picture?
        /// The sound watch's samples, summed up where the microphone's
        /// sound is captured; nil without a microphone or when not listened to.
        let sound: Sound?
    }

    struct Sound {
        let sampler: SoundSampler
        let settings: SoundHealthSettings
    }

    struct Picture {
        let output: FrameTapOutput
        let sampler: PictureSampler
        let settings: PictureHealthSettings
    }

    /// Opens and starts the camera. `preview`: the display's output, made
    /// by the first session that gets so far and kept for the next ones (a
    /// display is opened once).
    func open(flash: GPIOFlash?, preview: Mutex<PreviewOutput?>) throws -> Opened {
        let device = try chooseDevice()
        let session = CaptureSession(log: log, clock: clock)
        let movie = MovieFileOutput(live: live)
        let photo = PhotoOutput(clock: clock)
        photo.flash = flash
        photo.isRawCaptureEnabled = configuration.photoRaw
        session.beginConfiguration()
        try session.addInput(CaptureDeviceInput(device: device))
        try session.addOutput(movie)
        try session.addOutput(photo)
        let watched = pictureOutput()
        if let watched { try session.addOutput(watched.output) }
        var shown: PreviewOutput?
        if configuration.previewEnabled {
            shown = try preview.withLock { kept in
                if kept == nil { kept = try makePreview(device) }
                return kept
            }
            if let shown { try session.addOutput(shown) }
        }
        try setFormat(device, session)
        try session.commitConfiguration()
        let frameRate = setFrameRate(device)
        let audio = attachAudio(to: session)
        let sound = listen(to: session)
        try session.startRunning()
        if configuration.preRecordSeconds > 0 {
            try movie.armPreRecording(duration: .milliseconds(Int(configuration.preRecordSeconds * 1000)),
                                      settings: movieSettings(device, frameRate: frameRate))
        }
        return Opened(device: device, session: session, movie: movie, photo: photo, preview: shown, frameRate: frameRate,
                      pace: RecordingPace(device: device, nominal: frameRate), audio: audio,
                      picture: watchable(watched, session), sound: sound)
    }

    /// The output the picture is watched on, when the configuration and
    /// the profile watch it for anything.
    private func pictureOutput() -> Picture? {
        guard let settings = configuration.health.settings(for: profile) else { return nil }
        let sampler = PictureSampler(settings: settings)
        return Picture(output: FrameTapOutput(look: sampler.look, ended: sampler.end), sampler: sampler, settings: settings)
    }

    /// `watched`, when the camera's pixel format has a luma the check can
    /// read (said once in the journal when not).
    private func watchable(_ watched: Picture?, _ session: CaptureSession) -> Picture? {
        guard let watched, let format = session.activeConfiguration?.streams.first?.pixelFormat else { return watched }
        guard LumaGrid.canRead(format) else {
            logger.warning("picture health: the camera delivers \(format), whose luma cannot be read; the picture is not watched")
            watched.output.queue.close()
            return nil
        }
        return watched
    }

    /// The profile's camera: the test pattern, the first listed, or the one named.
    private func chooseDevice() throws -> CaptureDevice {
        if CaptureDevice.isTestPattern(profile.cameraID) {
            // The kiosk's buttons, LEDs, storage and retrieval can be tried
            // before a camera is fitted. (`synthetic:clocked`: on the
            // service's clock, which a test moves on.)
            return CaptureDevice.testPattern(id: profile.cameraID, clock: clock)
        }
        let devices = try CaptureDevice.devices()
        if profile.cameraID.isEmpty {
            guard let first = devices.first else { throw CameraError.noCameras(libcameraVersion: CameraManager.libcameraVersion) }
            return first
        }
        guard let named = devices.first(where: { $0.uniqueID == profile.cameraID }) else {
            throw CameraError.unknownCamera(id: profile.cameraID, available: devices.map(\.uniqueID))
        }
        return named
    }

    private func makePreview(_ device: CaptureDevice) throws -> PreviewOutput {
        try PreviewOutput(device: configuration.previewDevice ?? (profile.previewDevice.isEmpty ? nil : profile.previewDevice),
                          connector: profile.previewConnector.isEmpty ? nil : profile.previewConnector,
                          overlay: profile.previewPlane != "primary",
                          gravity: PreviewGravity(rawValue: configuration.previewGravity) ?? .fit,
                          rotation: configuration.previewRotation,
                          caption: configuration.overlayOnPreview ? captionSettings(device) : nil, log: log)
    }

    /// The configured size in the profile's pixel format (NV12 unless it
    /// says otherwise, else the camera's first processed one).
    private func setFormat(_ device: CaptureDevice, _ session: CaptureSession) throws {
        let size = configuration.size ?? profile.size
        let offered = device.formats.filter { !$0.isRaw }
        let preferred = profile.pixelFormat ?? .nv12
        let pixelFormat = offered.contains { $0.pixelFormat == preferred } ? preferred : (offered.first?.pixelFormat ?? preferred)
        if let format = device.format(pixelFormat: pixelFormat, size: size) {
            try device.withConfigurationLock { try $0.setActiveFormat(format) }
            try session.setSessionPreset(.inputPriority)
        } else {
            logger.warning("camera \(device.uniqueID) has no \(pixelFormat) \(size); using its default format")
            try session.setSessionPreset(.high)
        }
    }

    /// Sets the camera to the configured frame rate when it has a frame-rate
    /// control; a rate outside what its format allows becomes the nearest
    /// allowed one, said in the journal. Returns the rate in effect.
    private func setFrameRate(_ device: CaptureDevice) -> Double {
        let wanted = configuration.frameRate ?? profile.frameRate
        guard device.isFrameDurationControlSupported else {
            logger.warning("camera \(device.uniqueID) has no frame-rate control; it runs at its own rate (encoding plans for \(wanted) fps)")
            return wanted
        }
        var rate = wanted
        if let range = device.activeFrameRateRange, !range.contains(rate) {
            rate = min(max(rate, range.lowerBound), range.upperBound)
            log(String(format: "frame_rate %g is outside what camera %@ allows at this format (%.3g–%.3g fps); recording at %.3g fps",
                       wanted, device.uniqueID, range.lowerBound, range.upperBound, rate))
        }
        do {
            try device.withConfigurationLock { try $0.setActiveVideoFrameRate(rate) }
        } catch {
            logger.warning("camera \(device.uniqueID): cannot set \(rate) fps: \(error); it runs at its own rate")
        }
        return rate
    }

    /// The configuration's microphone, else the profile's. Without one the
    /// service records video only and says so once. Returns what `status` shows.
    private func attachAudio(to session: CaptureSession) -> String {
        let name = configuration.audioDevice ?? profile.audioDevice
        guard name != "none" else { return "none (audio.device = \"none\")" }
        do {
            let input = try AudioDeviceInput(device: name, format: AudioFormat(sampleRate: profile.audioRate, channels: profile.audioChannels))
            try session.addInput(input)
            logger.info("audio from \(input.deviceName): \(input.format), \(configuration.audioCodec.rawValue) at \(configuration.audioBitRate / 1000) kbit/s")
            return "\(input.deviceName): \(input.format)"
        } catch {
            logger.warning("audio: \(error); recording video only")
            return "none: \(error)"
        }
    }

    /// The sound watch on the session's microphone, when it has one and
    /// the configuration listens for anything.
    private func listen(to session: CaptureSession) -> Sound? {
        guard session.audioInput != nil, let settings = configuration.health.sound else { return nil }
        let sampler = SoundSampler()
        session.addAudioOutput(sampler)
        return Sound(sampler: sampler, settings: settings)
    }

    /// The configured caption, with the camera's name when asked.
    func captionSettings(_ device: CaptureDevice) -> OverlaySettings? {
        guard var overlay = configuration.overlay else { return nil }
        if configuration.overlayCameraName { overlay.cameraName = device.localizedName }
        return overlay
    }

    /// What each recording is made with.
    func movieSettings(_ device: CaptureDevice, frameRate: Double, partialDirectory: String? = nil) -> MovieSettings {
        var s = MovieSettings()
        s.codec = configuration.codec
        s.container = configuration.recordingContainer
        s.recipients = configuration.recipients
        s.alignsFragmentsToAgeChunks = configuration.alignsToAgeChunks
        s.overlay = captionSettings(device)
        s.averageBitRate = configuration.bitRate ?? profile.bitRate
        s.preset = profile.preset
        s.nominalFrameRate = frameRate
        s.fragmentDuration = .checkedSeconds(configuration.fragmentSeconds)
        // The profile's order (e.g. the Pi 4's hardware encoder, then libx264).
        var kinds: [EncoderKind] = []
        for name in profile.encoders { if let k = EncoderKind(name: name), !kinds.contains(k) { kinds.append(k) } }
        s.encoders = kinds.isEmpty ? [.software] : kinds
        s.partialDirectory = partialDirectory ?? configuration.resolvedPartialFolder
        s.audio = AudioEncoderSettings(codec: configuration.audioCodec, bitRate: configuration.audioBitRate)
        // What the picture and sound watches notice, and the pressure's
        // steps, go into the file's text track.
        s.marked = configuration.health.settings(for: profile) != nil || configuration.health.sound != nil
            || configuration.pressure.stepsDown
        return s
    }
}
