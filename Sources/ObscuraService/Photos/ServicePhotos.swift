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

/// The coordinator's photos (their files: `PhotoFiles`) and the flash mode.
extension RecorderService {
    /// Takes a photo from the running session (zero shutter lag; also while
    /// recording) into the photos folder. Returns its path.
    public func takePhoto() async -> Result<String, PhotoFailure> {
        guard let opened else {
            logger.error("cannot take a photo: no camera")
            return .failure(PhotoFailure(message: "cannot take a photo: no camera"))
        }
        // What the photo costs a recording in progress: the frames its
        // recorder's queue drops meanwhile (at most what the queue holds, if
        // the photo never holds it up).
        let recording = state.isRecording
        let recorderDropsBefore = recording ? opened.movie.queue.drops : nil
        let photoStart = clock.now
        if !recording, !stopping { enter(.photo(then: state)) }
        defer {
            // Back to what it was, as it is now (a file it held may have finished meanwhile).
            if case .photo(let then) = state {
                if case .starting = then { enter(.idle) } else { enter(then) }
            }
        }
        do {
            var settings = PhotoSettings(jpegQuality: 90, flashMode: flashMode, thumbnailSize: PixelSize(width: 160, height: 120))
            if configuration.overlayOnPhotos { settings.overlay = setup.captionSettings(opened.device) }
            if configuration.photoRaw {
                settings.rawPixelFormat = opened.photo.availableRawPhotoPixelFormats.first
                if settings.rawPixelFormat == nil { logger.warning("photo.raw is set but the camera has no raw stream: JPEG only") }
            }
            let photos = try await opened.photo.capturePhoto(with: settings)
            guard let photo = photos.first else { return .failure(PhotoFailure(message: "the capture gave no photo")) }
            let files = PhotoFiles(configuration: configuration), synchronized = clockSynchronized
            let saved: PhotoFiles.Saved
            do {
                saved = try await onFileThread { try files.save(photos, clockSynchronized: synchronized) }
            } catch {
                return .failure(error as? PhotoFailure ?? PhotoFailure(message: "\(error)"))
            }
            for problem in saved.problems {
                logger.warning("\(problem)")
                noteError(problem, reason: .storage)
            }
            status.photos += 1
            let lag = photo.resolvedSettings.shutterLag.map { String(format: "%.1f ms", Double($0.components.attoseconds) / 1e15 + Double($0.components.seconds) * 1000) } ?? "?"
            let took = (clock.now - photoStart) / .milliseconds(1)
            let recorderDrops = recorderDropsBefore.map { ", the recording dropped \(opened.movie.queue.drops - $0) frames in the \(Int(took)) ms it took" } ?? ""
            logger.notice("photo \(saved.path): \(photo.pixelSize), shutter lag \(lag)\(photo.resolvedSettings.flashWillFire ? ", flash" : "")\(recorderDrops)")
            return .success(saved.path)
        } catch {
            logger.error("photo failed: \(error)")
            noteError("photo failed: \(error)", reason: .photo)
            return .failure(PhotoFailure(message: "photo failed: \(error)"))
        }
    }

    public func cycleFlash() { setFlash(flashMode.next) }

    public func setFlash(_ mode: FlashMode) {
        flashMode = mode
        gpio.show(flash: mode)
        logger.notice("flash \(mode.rawValue)")
    }
}
