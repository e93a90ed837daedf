import ArgumentParser
import ObscuraCommandLine
import Foundation
import ObscuraAge
import ObscuraOverlay
import ObscuraSystem
import ObscuraCapture
import ObscuraMedia
import ObscuraPhoto
import ObscuraFiles

struct PhotoCommand: AsyncParsableCommand {
    static let configuration = CommandDescriptions.photo

    @Option(help: "Output file (.jpg; encrypted: .jpg.age).") var output: String
    @Option(help: "Encrypt each photo to this age recipient (age1…, age-keygen's public key) before it is written; repeatable. The output's name ends in .age.")
    var recipient: [String] = []
    @Option(help: "Encrypt to the age recipients in this file (one age1… per line, as `age -R` reads it).") var recipientsFile: String?
    @Flag(help: "Burn a caption into the JPEG: its frame's date and time and the camera's name, as recordings get it.") var overlay = false
    @Option(help: "With --overlay: a text of one's own on the caption's second line.") var overlayText: String?
    @Option(help: "Camera id (see `obscura devices`), or synthetic.") var camera: String?
    @Option(help: "Frame size, e.g. 1280x720.") var size: String?
    @Option(help: "Camera pixel format, by name or fourcc, e.g. NV12 or BGR888 (BG24).") var pixelFormat: String?
    @Option(help: "JPEG quality, 1–100.") var quality: Int = 90
    @Option(help: "Embedded thumbnail size, e.g. 160x120; none without.") var thumbnail: String?
    @Option(help: "Seconds the camera runs before the photo (exposure settles).") var warmUp: Double = 0.5
    @Option(parsing: .unconditional, help: "An exposure-bias bracket in EV, e.g. -2,0,2 (files NAME-1.jpg, NAME-2.jpg, …).") var bracketEv: String?
    @Option(help: "A manual bracket of milliseconds:ISO shots, e.g. 5:100,10:200,20:400.") var bracketManual: String?
    @Flag(help: "Also a RAW photo (DNG, same name) from the camera's raw stream.") var raw = false
    @Flag(help: "Only the RAW photo, no JPEG (implies --raw).") var rawOnly = false

    /// Every option's value, checked before anything starts.
    func validate() throws {
        try Options.check {
            try Limits.jpegQuality.check(quality, "--quality")
            try Limits.warmUpSeconds.check(warmUp, "--warm-up")
            if let size { _ = try Options.size(size, "--size") }
            if let thumbnail { _ = try Options.size(thumbnail, "--thumbnail") }
            if let pixelFormat { _ = try Options.fourcc(pixelFormat, "--pixel-format") }
            // The JPEG is named by --output; a DNG beside it takes .dng.
            let recipients = try Options.recipients(recipient, file: recipientsFile)
            let plainOutput = try Options.encryptedName(output, "--output", encrypted: !recipients.isEmpty)
            try Options.outputFile(plainOutput, "--output", extensions: rawOnly ? ["dng"] : ["jpg", "jpeg"])
            if overlayText != nil, !overlay { throw UserFacingError("--overlay-text needs --overlay") }
            if bracketEv != nil && bracketManual != nil { throw UserFacingError("--bracket-ev and --bracket-manual: give one of them") }
            _ = try bracket()
        }
    }

    /// The bracket asked for, each shot's numbers checked.
    private func bracket() throws -> [BracketShot] {
        if let bracketEv {
            let shots = try bracketEv.split(separator: ",", omittingEmptySubsequences: false).map {
                let text = $0.trimmingCharacters(in: .whitespaces)
                guard let ev = Double(text) else {
                    throw UserFacingError("--bracket-ev: cannot read \"\(text)\"; write EV values like -2,0,2")
                }
                return BracketShot.exposureBias(try Limits.exposureBias.check(ev, "--bracket-ev"))
            }
            try Limits.bracketShots.check(shots.count, "--bracket-ev (shots)")
            return shots
        }
        if let bracketManual {
            let shots = try bracketManual.split(separator: ",", omittingEmptySubsequences: false).map {
                let parts = $0.split(separator: ":", omittingEmptySubsequences: false)
                guard parts.count == 2, let ms = Double(parts[0]), let iso = Double(parts[1]) else {
                    throw UserFacingError("--bracket-manual: cannot read \"\($0)\"; write milliseconds:ISO like 10:200")
                }
                let exposure = try Limits.exposureMilliseconds.check(ms, "--bracket-manual exposure")
                return BracketShot.manual(exposure: .microseconds(Int64((exposure * 1000).rounded())),
                                                        iso: try Limits.iso.check(iso, "--bracket-manual ISO"))
            }
            try Limits.bracketShots.check(shots.count, "--bracket-manual (shots)")
            return shots
        }
        return []
    }

    func run() async throws {
        try await Self.reporting {
            let thumbSize: PixelSize? = try thumbnail.map {
                guard let s = PixelSize(parsing: $0) else { throw UserFacingError("cannot read thumbnail size \"\($0)\"; write WIDTHxHEIGHT") }
                return s
            }
            let requestedSize: PixelSize? = try size.map {
                guard let parsed = PixelSize(parsing: $0) else { throw UserFacingError("cannot read size \"\($0)\"; write WIDTHxHEIGHT, e.g. 1280x720") }
                return parsed
            }
            let device = try CameraChoice.device(camera)
            let chosen = try CameraChoice.applyFormat(device, format: try pixelFormat.map { try Options.fourcc($0, "--pixel-format") }, size: requestedSize)
            let session = CaptureSession(log: { Log.note($0) })
            let photoOutput = PhotoOutput()
            photoOutput.isRawCaptureEnabled = raw || rawOnly
            session.beginConfiguration()
            try session.addInput(CaptureDeviceInput(device: device))
            try session.addOutput(photoOutput)
            try session.setSessionPreset(chosen ? .inputPriority : .photo)
            try session.commitConfiguration()
            try session.startRunning()
            defer { try? session.stopRunning() }
            try await Task.sleep(for: .checkedSeconds(warmUp))
            var settings = PhotoSettings(jpegQuality: rawOnly ? nil : quality, thumbnailSize: thumbSize)
            if raw || rawOnly {
                guard let format = photoOutput.availableRawPhotoPixelFormats.first else {
                    throw UserFacingError("--raw: \(device.uniqueID) has no raw stream (a Raspberry Pi camera has one; vimc has none: see `obscura dng` for its raw node)")
                }
                settings.rawPixelFormat = format
            }
            settings.bracket = try bracket()
            if overlay {
                var caption = OverlaySettings()
                caption.text = overlayText ?? ""
                caption.cameraName = device.localizedName
                settings.overlay = caption
            }
            let photos = try await photoOutput.capturePhoto(with: settings)
            guard !photos.isEmpty else { throw UserFacingError("the capture gave no photo") }
            let recipients = try Options.recipients(recipient, file: recipientsFile)
            let plainOutput = try Options.encryptedName(output, "--output", encrypted: !recipients.isEmpty)
            let stemOf = (plainOutput as NSString).deletingPathExtension
            let ext = (plainOutput as NSString).pathExtension
            for photo in photos {
                // JPEG and DNG of one exposure share a name; a bracket numbers its exposures.
                let perExposure = (settings.jpegQuality != nil ? 1 : 0) + (settings.rawPixelFormat != nil ? 1 : 0)
                let exposure = (photo.photoCount - 1) / max(1, perExposure) + 1
                var name = settings.bracket.count > 1 ? stemOf + "-\(exposure)" : stemOf
                name += photo.isRawPhoto ? ".dng" : (ext.isEmpty ? ".jpg" : "." + ext)
                var data = photo.fileDataRepresentation()
                if !recipients.isEmpty {
                    // Sealed in memory: no plaintext of it reaches the storage.
                    data = Data(try AgeEncryptor.encrypt([UInt8](data), to: recipients))
                    name += ".age"
                }
                // Whole or not at all: a write that fails (a full disk) leaves no partial file.
                do { try DurableFile.write(data, to: name, via: name + ".partial") } catch {
                    throw UserFacingError("the photo was not kept: \(error)")
                }
                let lag = photo.resolvedSettings.shutterLag.map { String(format: "%.1f ms", $0.seconds * 1000) } ?? "?"
                let shot = settings.bracket.isEmpty ? "" : ", \(settings.bracket[exposure - 1])"
                let kind = photo.isRawPhoto ? "DNG \(settings.rawPixelFormat.map(\.description) ?? "")" : "JPEG"
                Log.output("photo \(name): \(photo.pixelSize) \(kind), \(data.count / 1024) KiB, shutter lag \(lag)\(shot)")
            }
        }
    }
}
