import CImage
import Dispatch
import Foundation
import ObscuraCapture
import ObscuraConversion
import ObscuraEncoding
import ObscuraMedia
import ObscuraOverlay
import ObscuraSystem
import struct Synchronization.Atomic

/// What to capture, like AVFoundation's photo settings.
public struct PhotoSettings: Sendable, Equatable {
    private static let counter = Atomic<Int64>(0)

    /// Each settings value gets its own id; resolved settings and photos carry it.
    public let uniqueID: Int64
    /// JPEG quality 1–100; nil for no processed photo (RAW only).
    public var jpegQuality: Int? = 90
    /// A RAW (Bayer) photo as DNG too; needs a camera with a raw stream.
    public var rawPixelFormat: PixelFormat?
    public var flashMode: FlashMode = .off
    /// An embedded thumbnail of at most this size (EXIF IFD1), or none.
    public var thumbnailSize: PixelSize?
    /// The processed photo is at most this size: a larger frame is scaled
    /// down (aspect kept, one counted copy). RAW photos keep the sensor's size.
    public var maxPhotoDimensions: PixelSize?
    /// A bracketed capture: one exposure per shot, in order (empty: one shot
    /// as the camera is set). At most the output's
    /// `maxBracketedCapturePhotoCount`.
    public var bracket: [BracketShot] = []
    /// A caption burned into the processed photo (the date and time of its
    /// frame, the camera's name, a text), as recordings get it; nil: none.
    /// RAW photos stay as the sensor gave them.
    public var overlay: OverlaySettings?

    public init(jpegQuality: Int? = 90, rawPixelFormat: PixelFormat? = nil, flashMode: FlashMode = .off,
                thumbnailSize: PixelSize? = nil) {
        uniqueID = Self.counter.add(1, ordering: .relaxed).newValue
        self.jpegQuality = jpegQuality
        self.rawPixelFormat = rawPixelFormat
        self.flashMode = flashMode
        self.thumbnailSize = thumbnailSize
    }
}

/// One exposure of a bracketed capture.
public enum BracketShot: Sendable, Equatable, CustomStringConvertible {
    /// Auto exposure biased by this many EV (ExposureValue).
    case exposureBias(Double)
    /// A fixed exposure time and ISO (100 × analogue gain).
    case manual(exposure: Duration, iso: Double)

    public var description: String {
        switch self {
        case .exposureBias(let ev): String(format: "%+.1f EV", ev)
        case .manual(let t, let iso): String(format: "%.2f ms ISO %.0f", t.seconds * 1000, iso)
        }
    }
}

/// Settings as the output will carry them out.
public struct ResolvedPhotoSettings: Sendable, Equatable {
    public let uniqueID: Int64
    public let photoDimensions: PixelSize
    public let flashWillFire: Bool
    /// Photos the capture delivers (processed and RAW, per exposure).
    public let expectedPhotoCount: Int
    /// Whether the photo comes from a frame already streaming (no mode
    /// switch, no wait for a new exposure).
    public let isZeroShutterLag: Bool
    /// Trigger → the chosen frame's sensor timestamp (negative: the frame
    /// began before the trigger); known once the photo is captured.
    public var shutterLag: Duration?
}

/// A captured photo, like AVFoundation's: the data for a file, and what the
/// camera said about it.
public final class Photo: Sendable {
    public let resolvedSettings: ResolvedPhotoSettings
    /// 1-based, in delivery order.
    public let photoCount: Int
    public let timestampNanoseconds: UInt64
    public let metadata: FrameMetadata
    public let isRawPhoto: Bool
    public let pixelSize: PixelSize
    private let data: Data

    init(resolvedSettings: ResolvedPhotoSettings, photoCount: Int, timestampNanoseconds: UInt64, metadata: FrameMetadata,
         isRawPhoto: Bool, pixelSize: PixelSize, data: Data) {
        self.resolvedSettings = resolvedSettings
        self.photoCount = photoCount
        self.timestampNanoseconds = timestampNanoseconds
        self.metadata = metadata
        self.isRawPhoto = isRawPhoto
        self.pixelSize = pixelSize
        self.data = data
    }

    /// JPEG bytes (with EXIF), or DNG bytes for a RAW photo.
    public func fileDataRepresentation() -> Data { data }
}

/// Progress of one capture, in this order: will begin (resolved settings),
/// will capture (the shutter), did capture, did finish processing (once per
/// photo), did finish capture.
public protocol PhotoCaptureDelegate: AnyObject, Sendable {
    func photoOutput(_ output: PhotoOutput, willBeginCaptureFor settings: ResolvedPhotoSettings)
    func photoOutput(_ output: PhotoOutput, willCapturePhotoFor settings: ResolvedPhotoSettings)
    func photoOutput(_ output: PhotoOutput, didCapturePhotoFor settings: ResolvedPhotoSettings)
    func photoOutput(_ output: PhotoOutput, didFinishProcessingPhoto photo: Photo?, error: (any Error)?)
    func photoOutput(_ output: PhotoOutput, didFinishCaptureFor settings: ResolvedPhotoSettings?, error: (any Error)?)
}

extension PhotoCaptureDelegate {
    public func photoOutput(_ output: PhotoOutput, willBeginCaptureFor settings: ResolvedPhotoSettings) {}
    public func photoOutput(_ output: PhotoOutput, willCapturePhotoFor settings: ResolvedPhotoSettings) {}
    public func photoOutput(_ output: PhotoOutput, didCapturePhotoFor settings: ResolvedPhotoSettings) {}
    public func photoOutput(_ output: PhotoOutput, didFinishProcessingPhoto photo: Photo?, error: (any Error)?) {}
    public func photoOutput(_ output: PhotoOutput, didFinishCaptureFor settings: ResolvedPhotoSettings?, error: (any Error)?) {}
}

public enum PhotoError: Error, CustomStringConvertible, Equatable {
    case noFrames(Duration)
    case noRawStream(available: [PixelFormat])
    case rawCaptureNotEnabled
    case rawFormatNotOffered(PixelFormat, available: [PixelFormat])
    case unsupportedRawFormat(PixelFormat)
    case nothingToCapture
    case unsupportedFormat(PixelFormat)
    case encoder(String)
    case busy
    case bracketTooLong(Int, maximum: Int)
    case bracketUnsupported(String)
    case exposureNotApplied(BracketShot, frames: Int)

    public var description: String {
        switch self {
        case .noFrames(let d): "the camera delivered no frame within \(d); is the session running?"
        case .noRawStream(let formats):
            "the camera offers no RAW stream (its formats: \(formats.map(\.description).joined(separator: ", "))); ask for JPEG only"
        case .rawCaptureNotEnabled:
            "RAW needs the camera's raw stream: set isRawCaptureEnabled on the photo output before the session starts"
        case .rawFormatNotOffered(let f, let available):
            "the camera's raw stream does not offer \(f); it offers \(available.map(\.description).joined(separator: ", "))"
        case .unsupportedRawFormat(let f):
            "cannot write a DNG from \(f) frames; Bayer formats of 8 to 16 bits, unpacked or CSI-2 packed, can"
        case .nothingToCapture: "the settings ask for no photo: give a JPEG quality, a RAW pixel format, or both"
        case .unsupportedFormat(let f): "cannot write a photo from \(f) frames; NV12, YUV420, YUYV, RGB888, BGR888 and XRGB8888 can"
        case .encoder(let e): e
        case .busy: "a photo is being captured; wait for it to finish"
        case .bracketTooLong(let n, let max): "a bracket of \(n) shots is more than this output takes (\(max))"
        case .bracketUnsupported(let why): why
        case .exposureNotApplied(let shot, let frames):
            "the camera did not apply \(shot) within \(frames) frames (its metadata never showed it)"
        }
    }
}

/// Photos from the running session, like AVFoundation's photo output.
///
/// Zero shutter lag: the output always holds the newest frame (one camera
/// buffer), so a photo — also during a recording — comes from the frame
/// whose sensor timestamp is closest to the trigger: the one held, or the
/// next if that is nearer. With the flash the output lights it first and
/// takes the first frame exposed after that (not zero lag, and it says so).
///
/// Its settings may be set from any thread while captures run: each capture
/// reads them under their lock.
public final class PhotoOutput: CaptureOutput, Sendable {
    public let queue = FrameQueue(policy: .latestOnly)
    public let preferredPixelFormat: PixelFormat? = .nv12

    private struct Configuration {
        var flash: (any FlashUnit)?
        var make = "Obscura"
        var model = "camera"
        var rotation = 0
        var maxBracketedCapturePhotoCount = 5
    }
    private let configuration = Mutex(Configuration())

    /// The flash; nil when the board has none (flash modes then never fire).
    public var flash: (any FlashUnit)? {
        get { configuration.withLock { $0.flash } }
        set { configuration.withLock { $0.flash = newValue } }
    }
    /// EXIF Make and Model.
    public var make: String {
        get { configuration.withLock { $0.make } }
        set { configuration.withLock { $0.make = newValue } }
    }
    public var model: String {
        get { configuration.withLock { $0.model } }
        set { configuration.withLock { $0.model = newValue } }
    }
    /// Clockwise rotation of the camera, for the EXIF orientation.
    public var rotation: Int {
        get { configuration.withLock { $0.rotation } }
        set { configuration.withLock { $0.rotation = newValue } }
    }
    /// The most shots a bracketed capture may have.
    public var maxBracketedCapturePhotoCount: Int {
        get { configuration.withLock { $0.maxBracketedCapturePhotoCount } }
        set { configuration.withLock { $0.maxBracketedCapturePhotoCount = newValue } }
    }
    /// Asks the session for the camera's raw stream beside the processed one
    /// (set before the session starts); RAW photos need it. On a Raspberry Pi
    /// the pipeline picks the sensor mode that fits the processed stream.
    public var isRawCaptureEnabled: Bool {
        get { rawEnabled.withLock { $0 } }
        set { rawEnabled.withLock { $0 = newValue } }
    }
    public var wantsRawStream: Bool { isRawCaptureEnabled }
    /// The camera's raw formats (empty when it has no raw stream, like vimc).
    public var availableRawPhotoPixelFormats: [PixelFormat] {
        var seen: [PixelFormat] = []
        for f in device.withLock({ $0?.formats ?? [] }) where f.roles.contains(.raw) && !seen.contains(f.pixelFormat) {
            seen.append(f.pixelFormat)
        }
        return seen
    }
    /// CPU copies of pixels made for photos: unpacking a raw frame for its DNG,
    /// scaling a frame down to maxPhotoDimensions (otherwise JPEGs are
    /// compressed straight from the camera's planes).
    public let copies = CopyCounter()
    private let rawEnabled = Mutex(false)
    private let busy = Mutex(false)
    private let device = Mutex<CaptureDevice?>(nil)

    /// What its waits for a frame are timed on (a test's clock, or the
    /// system's).
    private let clock: any WaitingClock

    public init(clock: any WaitingClock = SystemWaitingClock()) {
        self.clock = clock
    }

    public func connected(to device: CaptureDevice?) {
        self.device.withLock { $0 = device }
        if let device { model = device.cameraDescription.model.isEmpty ? device.uniqueID : device.cameraDescription.model }
    }

    /// Captures and reports progress to `delegate` (on the caller's task).
    public func capturePhoto(with settings: PhotoSettings, delegate: any PhotoCaptureDelegate) async {
        do {
            _ = try await capture(settings, delegate: delegate)
        } catch {
            // Reported through the delegate already.
        }
    }

    /// Captures and returns the photos (processed first, then RAW).
    public func capturePhoto(with settings: PhotoSettings) async throws -> [Photo] {
        try await capture(settings, delegate: nil)
    }

    private func capture(_ settings: PhotoSettings, delegate: (any PhotoCaptureDelegate)?) async throws -> [Photo] {
        guard busy.withLock({ b in defer { b = true }; return !b }) else {
            delegate?.photoOutput(self, didFinishCaptureFor: nil, error: PhotoError.busy)
            throw PhotoError.busy
        }
        defer { busy.withLock { $0 = false } }
        do {
            guard settings.jpegQuality != nil || settings.rawPixelFormat != nil else { throw PhotoError.nothingToCapture }
            if let raw = settings.rawPixelFormat {
                let available = availableRawPhotoPixelFormats
                guard !available.isEmpty else {
                    throw PhotoError.noRawStream(available: device.withLock { $0?.formats.map(\.pixelFormat) } ?? [])
                }
                guard available.contains(raw) else { throw PhotoError.rawFormatNotOffered(raw, available: available) }
                guard isRawCaptureEnabled else { throw PhotoError.rawCaptureNotEnabled }
            }
            if !settings.bracket.isEmpty {
                return try await captureBracket(settings, delegate: delegate)
            }
            let trigger = Syscalls.monotonicNanoseconds()
            // The frame held now tells the size and whether the scene is dark.
            guard let held = await nextFrame(timeout: Self.frameWait) else { throw PhotoError.noFrames(Self.frameWait) }
            try Self.checkRaw(held, settings)
            let fire = flash.map { $0.shouldFire(settings.flashMode, for: held) } ?? false
            let expected = Self.photosPerExposure(settings)
            var resolved = ResolvedPhotoSettings(uniqueID: settings.uniqueID, photoDimensions: Self.fitted(held.size, settings), flashWillFire: fire,
                                                 expectedPhotoCount: expected, isZeroShutterLag: !fire, shutterLag: nil)
            delegate?.photoOutput(self, willBeginCaptureFor: resolved)
            delegate?.photoOutput(self, willCapturePhotoFor: resolved)
            let chosen: VideoFrame
            if fire, let flash {
                try flash.on()
                let lit = Syscalls.monotonicNanoseconds()
                defer { try? flash.off() }
                var frame: VideoFrame?
                // The first frame whose exposure began after the flash lit.
                while frame == nil {
                    guard let f = await nextFrame(timeout: Self.frameWait) else { throw PhotoError.noFrames(Self.frameWait) }
                    if f.timestampNanoseconds >= lit { frame = f }
                }
                chosen = frame!
            } else {
                chosen = await closest(to: trigger, held: held)
            }
            resolved.shutterLag = .nanoseconds(Int64(bitPattern: chosen.timestampNanoseconds &- trigger))
            delegate?.photoOutput(self, didCapturePhotoFor: resolved)
            var photos: [Photo] = []
            try await process(chosen, settings, resolved, flashFired: fire, into: &photos, delegate: delegate)
            delegate?.photoOutput(self, didFinishCaptureFor: resolved, error: nil)
            return photos
        } catch {
            delegate?.photoOutput(self, didFinishCaptureFor: nil, error: error)
            throw error
        }
    }

    /// A bracketed capture: each shot's exposure is set on the camera, and
    /// its photo comes from the first frame whose metadata shows that
    /// exposure applied (controls take effect some frames later) — never
    /// after a fixed sleep. The camera's exposure is restored afterwards.
    private func captureBracket(_ settings: PhotoSettings, delegate: (any PhotoCaptureDelegate)?) async throws -> [Photo] {
        guard settings.bracket.count <= maxBracketedCapturePhotoCount else {
            throw PhotoError.bracketTooLong(settings.bracket.count, maximum: maxBracketedCapturePhotoCount)
        }
        guard let device = device.withLock({ $0 }) else { throw PhotoError.noFrames(.zero) }
        for shot in settings.bracket {
            switch shot {
            case .exposureBias:
                guard device.isExposureTargetBiasSupported else {
                    throw PhotoError.bracketUnsupported("an exposure-bias bracket needs the ExposureValue control, which \(device.uniqueID) lacks")
                }
            case .manual:
                guard device.isExposureModeSupported(.custom) else {
                    throw PhotoError.bracketUnsupported("a manual bracket needs ExposureTime and AnalogueGain controls, which \(device.uniqueID) lacks")
                }
            }
        }
        guard let first = await nextFrame(timeout: Self.frameWait) else { throw PhotoError.noFrames(Self.frameWait) }
        try Self.checkRaw(first, settings)
        let perShot = Self.photosPerExposure(settings)
        var resolved = ResolvedPhotoSettings(uniqueID: settings.uniqueID, photoDimensions: Self.fitted(first.size, settings), flashWillFire: false,
                                             expectedPhotoCount: perShot * settings.bracket.count, isZeroShutterLag: false, shutterLag: nil)
        delegate?.photoOutput(self, willBeginCaptureFor: resolved)
        delegate?.photoOutput(self, willCapturePhotoFor: resolved)
        let trigger = Syscalls.monotonicNanoseconds()
        let previousMode = device.exposureMode ?? .continuousAutoExposure
        var restored = false
        defer { if !restored { Self.restoreExposure(device, after: settings.bracket, mode: previousMode) } }
        var photos: [Photo] = []
        for (index, shot) in settings.bracket.enumerated() {
            try device.withConfigurationLock { d in
                switch shot {
                case .exposureBias(let ev): try d.setExposureTargetBias(ev)
                case .manual(let t, let iso): try d.setExposureModeCustom(duration: t, iso: iso)
                }
            }
            var frame: VideoFrame?
            for _ in 0..<30 {
                guard let f = await nextFrame(timeout: Self.frameWait) else { throw PhotoError.noFrames(Self.frameWait) }
                if Self.shows(shot, f.metadata) {
                    frame = f
                    break
                }
            }
            guard let chosen = frame else { throw PhotoError.exposureNotApplied(shot, frames: 30) }
            if index == 0 { resolved.shutterLag = .nanoseconds(Int64(bitPattern: chosen.timestampNanoseconds &- trigger)) }
            if index == settings.bracket.count - 1 { delegate?.photoOutput(self, didCapturePhotoFor: resolved) }
            try await process(chosen, settings, resolved, flashFired: false, into: &photos, delegate: delegate)
        }
        Self.restoreExposure(device, after: settings.bracket, mode: previousMode)
        restored = true
        await untilShown(.exposureBias(0), if: settings.bracket.contains { if case .exposureBias = $0 { true } else { false } })
        delegate?.photoOutput(self, didFinishCaptureFor: resolved, error: nil)
        return photos
    }

    /// The exposure as it was before a bracket: no bias, and the mode it had.
    private static func restoreExposure(_ device: CaptureDevice, after bracket: [BracketShot], mode previousMode: CaptureDevice.ExposureMode) {
        try? device.withConfigurationLock { d in
            if bracket.contains(where: { if case .exposureBias = $0 { true } else { false } }) {
                try d.setExposureTargetBias(0)
            }
            if bracket.contains(where: { if case .manual = $0 { true } else { false } }),
               d.isExposureModeSupported(previousMode == .custom ? .continuousAutoExposure : previousMode) {
                try d.setExposureMode(previousMode == .custom ? .continuousAutoExposure : previousMode)
            }
        }
    }

    /// Waits (at most 30 frames) for a frame that shows `shot` applied, when
    /// `needed`: a bracket ends once the camera is back at its own exposure,
    /// so a photo asked for next is not of a frame still bracketed.
    private func untilShown(_ shot: BracketShot, if needed: Bool) async {
        guard needed else { return }
        for _ in 0..<30 {
            guard let f = await nextFrame(timeout: Self.frameWait), !Self.shows(shot, f.metadata) else { return }
        }
    }

    /// The processed photo's size: the frame's, fitted into maxPhotoDimensions
    /// (aspect kept, even sides).
    static func fitted(_ size: PixelSize, _ settings: PhotoSettings) -> PixelSize {
        guard let box = settings.maxPhotoDimensions, size.width > box.width || size.height > box.height else { return size }
        let scale = min(Double(box.width) / Double(size.width), Double(box.height) / Double(size.height))
        return PixelSize(width: max(2, Int(Double(size.width) * scale) & ~1), height: max(2, Int(Double(size.height) * scale) & ~1))
    }

    /// JPEG and RAW are each one photo of an exposure.
    static func photosPerExposure(_ settings: PhotoSettings) -> Int {
        (settings.jpegQuality != nil ? 1 : 0) + (settings.rawPixelFormat != nil ? 1 : 0)
    }

    /// A RAW photo needs the frame's raw companion (the session ran the raw stream).
    static func checkRaw(_ frame: VideoFrame, _ settings: PhotoSettings) throws {
        guard settings.rawPixelFormat != nil else { return }
        guard let raw = frame.raw else { throw PhotoError.rawCaptureNotEnabled }
        guard raw.format.info?.family == .bayer else { throw PhotoError.unsupportedRawFormat(raw.format) }
    }

    /// The photos of one exposure — processed (JPEG) then RAW (DNG), as
    /// asked — each reported to the delegate as it is done.
    private func process(_ frame: VideoFrame, _ settings: PhotoSettings, _ resolved: ResolvedPhotoSettings, flashFired: Bool,
                         into photos: inout [Photo], delegate: (any PhotoCaptureDelegate)?) async throws {
        if let quality = settings.jpegQuality {
            let size = Self.fitted(frame.size, settings)
            let data = try await offPool {
                var source = size == frame.size ? frame : try FrameConverter(to: .yuv420, size: size, copies: self.copies).convert(frame)
                if let overlay = settings.overlay {
                    // On a copy unless the photo output is the frame's only reader.
                    source = try FrameOverlay(settings: overlay, frameSize: source.size, copies: self.copies).apply(source)
                }
                return try self.jpeg(source, quality: quality, settings: settings, flashFired: flashFired)
            }
            let photo = Photo(resolvedSettings: resolved, photoCount: photos.count + 1, timestampNanoseconds: frame.timestampNanoseconds,
                              metadata: frame.metadata, isRawPhoto: false, pixelSize: size, data: data)
            photos.append(photo)
            delegate?.photoOutput(self, didFinishProcessingPhoto: photo, error: nil)
        }
        if settings.rawPixelFormat != nil, let raw = frame.raw {
            let data = try await offPool { try self.dng(raw, settings: settings) }
            let photo = Photo(resolvedSettings: resolved, photoCount: photos.count + 1, timestampNanoseconds: raw.timestampNanoseconds,
                              metadata: raw.metadata, isRawPhoto: true, pixelSize: raw.size, data: data)
            photos.append(photo)
            delegate?.photoOutput(self, didFinishProcessingPhoto: photo, error: nil)
        }
    }

    /// DNG bytes of a raw frame: its samples (unpacked, one counted copy),
    /// black level and white balance from the camera's metadata, the
    /// orientation, and a JPEG preview when a thumbnail is asked for.
    func dng(_ frame: VideoFrame, settings: PhotoSettings) throws -> Data {
        let raw = try RawImage(frame: frame, copies: copies)
        var neutral: [Float] = [1, 1, 1]
        if let gains = frame.metadata.values["ColourGains"], gains.count == 2, gains[0] > 0, gains[1] > 0 {
            neutral = [Float(1 / gains[0]), 1, Float(1 / gains[1])]
        }
        return try DNGWriter.data(for: raw, make: make, model: model, orientation: Self.exifOrientation(rotation: rotation),
                                  asShotNeutral: neutral, previewWidth: settings.thumbnailSize?.width)
    }

    /// Whether a frame's metadata shows the shot's exposure applied.
    static func shows(_ shot: BracketShot, _ metadata: FrameMetadata) -> Bool {
        switch shot {
        case .exposureBias(let ev):
            guard let reported = metadata.values["ExposureValue"]?.first else { return false }
            return abs(reported - ev) < 0.01
        case .manual(let t, let iso):
            guard let time = metadata.exposureTime, let gain = metadata.analogueGain else { return false }
            let wanted = t.seconds
            return abs(time.seconds - wanted) <= wanted * 0.02 + 2e-6 && abs(gain - iso / 100) <= iso / 100 * 0.02
        }
    }

    /// The held frame or the next one, whichever is nearer the trigger.
    private func closest(to trigger: UInt64, held: VideoFrame) async -> VideoFrame {
        let interval = held.metadata.frameDuration.map { UInt64($0.components.seconds) * 1_000_000_000 + UInt64($0.components.attoseconds / 1_000_000_000) } ?? 33_333_333
        // A held frame more than half an interval before the trigger: the
        // next one may be closer.
        guard trigger > held.timestampNanoseconds, trigger - held.timestampNanoseconds > interval / 2 else { return held }
        guard let next = await nextFrame(timeout: .nanoseconds(Int64(interval * 3))) else { return held }
        let before = trigger - held.timestampNanoseconds
        let after = next.timestampNanoseconds > trigger ? next.timestampNanoseconds - trigger : trigger - next.timestampNanoseconds
        return after < before ? next : held
    }

    /// How long a photo waits for a frame before saying none came: as long
    /// as a session lets its camera be silent (its longest stall limit, or
    /// the first frame's timeout) before it takes buffers back from an
    /// output that stopped taking frames (a recorder blocked on a hung
    /// drive) or counts the camera stalled, and two seconds more for the
    /// frame that comes then.
    static let frameWait: Duration = max(CaptureSession.longestStallLimit, CaptureSession.firstFrameTimeout) + .seconds(2)

    private func nextFrame(timeout: Duration) async -> VideoFrame? {
        await withTaskGroup(of: VideoFrame?.self) { group in
            group.addTask { await self.queue.next() }
            group.addTask { [clock] in
                do {
                    try await clock.sleep(for: timeout)
                    self.queue.wake()
                } catch {}
                return nil
            }
            let first = await group.next() ?? nil
            group.cancelAll()
            return first
        }
    }

    // MARK: Writing

    /// JPEG encoding is long CPU work: it runs on a queue of its own at
    /// utility priority, so it never holds a thread of Swift's small
    /// cooperative pool that a recording or the camera's delivery needs.
    private static let encoding = DispatchQueue(label: "obscura.photo.encode", qos: .utility)

    private func offPool(_ work: @escaping @Sendable () throws -> Data) async throws -> Data {
        try await withCheckedThrowingContinuation { (done: CheckedContinuation<Data, any Error>) in
            Self.encoding.async { done.resume(with: Result { try work() }) }
        }
    }

    static func imageFormat(_ format: PixelFormat) -> Int32? {
        switch format {
        case .nv12: Int32(OI_NV12.rawValue)
        case .yuv420: Int32(OI_YUV420.rawValue)
        case .yuyv: Int32(OI_YUYV.rawValue)
        case .bgr888: Int32(OI_RGB24.rawValue)   // DRM BGR888: bytes R, G, B
        case .rgb888: Int32(OI_BGR24.rawValue)   // DRM RGB888: bytes B, G, R
        case .xrgb8888: Int32(OI_BGRX32.rawValue)
        default: nil
        }
    }

    static func exifOrientation(rotation: Int) -> UInt32 {
        switch ((rotation % 360) + 360) % 360 {
        case 90: 6
        case 180: 3
        case 270: 8
        default: 1
        }
    }

    func jpeg(_ frame: VideoFrame, quality: Int, settings: PhotoSettings, flashFired: Bool) throws -> Data {
        guard let format = Self.imageFormat(frame.format) else { throw PhotoError.unsupportedFormat(frame.format) }
        let thumbnail = try settings.thumbnailSize.map { try Self.thumbnail(frame, fitting: $0) }
        let formatter = DateFormatter()
        formatter.dateFormat = "yyyy:MM:dd HH:mm:ss"
        formatter.locale = Locale(identifier: "en_US_POSIX")
        let date = formatter.string(from: Date())
        let exposure = frame.metadata.exposureTime.map { UInt32(clamping: $0.components.seconds * 1_000_000 + $0.components.attoseconds / 1_000_000_000_000) } ?? 0
        let gain = (frame.metadata.analogueGain ?? 0) * (frame.metadata.digitalGain ?? 1)
        let iso = gain > 0 ? UInt32(clamping: Int((gain * 100).rounded())) : 0
        return try frame.withCPUAccess { planes in
            var image = oi_image()
            image.format = format
            image.width = UInt32(frame.size.width)
            image.height = UInt32(frame.size.height)
            withUnsafeMutableBytes(of: &image.planes) { raw in
                let p = raw.bindMemory(to: UnsafePointer<UInt8>?.self)
                for (i, plane) in planes.prefix(3).enumerated() { p[i] = plane.base.assumingMemoryBound(to: UInt8.self) }
            }
            withUnsafeMutableBytes(of: &image.strides) { raw in
                let s = raw.bindMemory(to: UInt32.self)
                for (i, plane) in planes.prefix(3).enumerated() { s[i] = UInt32(plane.stride) }
            }
            return try make.withCString { makeC in
                try model.withCString { modelC in
                    try "Obscura".withCString { softwareC in
                        try date.withCString { dateC in
                            try (thumbnail ?? Data()).withUnsafeBytes { thumb in
                                var exif = oi_exif(make: makeC, model: modelC, software: softwareC, datetime: dateC,
                                                   exposure_us: exposure, iso: iso,
                                                   orientation: Self.exifOrientation(rotation: rotation),
                                                   flash_fired: flashFired ? 1 : 0,
                                                   thumbnail: thumbnail == nil ? nil : thumb.bindMemory(to: UInt8.self).baseAddress,
                                                   thumbnail_length: thumbnail?.count ?? 0)
                                return try Self.encode(&image, quality: quality, exif: &exif)
                            }
                        }
                    }
                }
            }
        }
    }

    static func encode(_ image: inout oi_image, quality: Int, exif: UnsafeMutablePointer<oi_exif>?) throws -> Data {
        var out: UnsafeMutablePointer<UInt8>?
        var length = 0
        var err = [CChar](repeating: 0, count: 256)
        let rc = oi_jpeg_encode(&image, Int32(max(1, min(100, quality))), exif, &out, &length, &err, err.count)
        guard rc == 0, let out else {
            throw PhotoError.encoder(err.withUnsafeBufferPointer { String(cString: $0.baseAddress!) })
        }
        defer { oi_free(out) }
        return Data(bytes: out, count: length)
    }

    /// A small JPEG of the frame (nearest neighbour into RGB), for EXIF IFD1.
    static func thumbnail(_ frame: VideoFrame, fitting box: PixelSize) throws -> Data {
        let scale = min(Double(box.width) / Double(frame.size.width), Double(box.height) / Double(frame.size.height), 1)
        let w = max(8, Int(Double(frame.size.width) * scale)), h = max(8, Int(Double(frame.size.height) * scale))
        var rgb = [UInt8](repeating: 0, count: w * h * 3)
        frame.withCPUAccess { planes in
            for y in 0..<h {
                let sy = y * frame.size.height / h
                for x in 0..<w {
                    let sx = x * frame.size.width / w
                    let (r, g, b) = Self.sample(frame.format, planes, sx, sy)
                    rgb[(y * w + x) * 3] = r
                    rgb[(y * w + x) * 3 + 1] = g
                    rgb[(y * w + x) * 3 + 2] = b
                }
            }
        }
        return try rgb.withUnsafeBufferPointer { buffer in
            var image = oi_image()
            image.format = Int32(OI_RGB24.rawValue)
            image.width = UInt32(w)
            image.height = UInt32(h)
            image.planes.0 = buffer.baseAddress
            image.strides.0 = UInt32(w * 3)
            return try encode(&image, quality: 75, exif: nil)
        }
    }

    /// One pixel as RGB (BT.601, limited range for YUV).
    static func sample(_ format: PixelFormat, _ planes: [FramePlane], _ x: Int, _ y: Int) -> (UInt8, UInt8, UInt8) {
        func byte(_ p: Int, _ offset: Int) -> Int { Int(planes[p].base.load(fromByteOffset: offset, as: UInt8.self)) }
        var yy = 0, u = 128, v = 128
        switch format {
        case .nv12:
            yy = byte(0, y * planes[0].stride + x)
            u = byte(1, (y / 2) * planes[1].stride + (x / 2) * 2)
            v = byte(1, (y / 2) * planes[1].stride + (x / 2) * 2 + 1)
        case .yuv420:
            yy = byte(0, y * planes[0].stride + x)
            u = byte(1, (y / 2) * planes[1].stride + x / 2)
            v = byte(2, (y / 2) * planes[2].stride + x / 2)
        case .yuyv:
            let base = y * planes[0].stride + (x / 2) * 4
            yy = byte(0, base + (x % 2) * 2)
            u = byte(0, base + 1)
            v = byte(0, base + 3)
        case .bgr888:
            let o = y * planes[0].stride + x * 3
            return (UInt8(byte(0, o)), UInt8(byte(0, o + 1)), UInt8(byte(0, o + 2)))
        case .rgb888:
            let o = y * planes[0].stride + x * 3
            return (UInt8(byte(0, o + 2)), UInt8(byte(0, o + 1)), UInt8(byte(0, o)))
        case .xrgb8888:
            let o = y * planes[0].stride + x * 4
            return (UInt8(byte(0, o + 2)), UInt8(byte(0, o + 1)), UInt8(byte(0, o)))
        default:
            return (0, 0, 0)
        }
        let c = Double(yy - 16) * 1.164, d = Double(u - 128), e = Double(v - 128)
        func clamp(_ value: Double) -> UInt8 { UInt8(max(0, min(255, value.rounded()))) }
        return (clamp(c + 1.596 * e), clamp(c - 0.392 * d - 0.813 * e), clamp(c + 2.017 * d))
    }
}
