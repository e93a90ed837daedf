import Foundation
import ObscuraAge
import ObscuraMuxing
import ObscuraPhoto
import ObscuraSystem
import ObscuraFiles

/// A photo's files in the photos folder: the JPEG and its DNG under one
/// name, sealed for the configured recipients, written durably through the
/// partial folder, each with its checksum. Blocking (fsync, encryption):
/// the service runs it on its file thread.
struct PhotoFiles: Sendable {
    let configuration: ServiceConfiguration

    struct Saved: Sendable {
        /// The JPEG's path.
        let path: String
        /// Checksums that could not be written (the photo is kept).
        let problems: [String]
    }

    func save(_ photos: [Photo], clockSynchronized: Bool) throws(PhotoFailure) -> Saved {
        let stem = freeStem(clockSynchronized: clockSynchronized)
        // Written in the partial folder when it shares the photos'
        // filesystem, so a half-written photo is never in a shared folder.
        let incoming = RecorderService.device(configuration.resolvedPartialFolder) == RecorderService.device(configuration.photosFolder)
            ? configuration.resolvedPartialFolder : configuration.photosFolder
        var problems: [String] = []
        for each in photos {
            let file = stem + configuration.photoExtension(raw: each.isRawPhoto)
            let partial = incoming + "/" + (file as NSString).lastPathComponent + ".partial"
            do {
                // Sealed in memory: no plaintext of the photo reaches the storage.
                let data = each.fileDataRepresentation()
                let sealed = configuration.recipients.isEmpty ? data
                    : Data(try AgeEncryptor.encrypt([UInt8](data), to: configuration.recipients))
                try DurableFile.write(sealed, to: file, via: partial, mode: 0o640)
            } catch let error as AgeError {
                throw PhotoFailure(message: "cannot encrypt \(file): \(error)")
            } catch {
                throw PhotoFailure(message: "cannot write \(file): \(error)")
            }
            do { try Checksum.write(for: file) } catch { problems.append("\(file): no checksum: \(error)") }
        }
        return Saved(path: stem + configuration.photoExtension(raw: false), problems: problems)
    }

    /// A name no photo has yet (`-2`, `-3`… after the time when taken).
    private func freeStem(clockSynchronized: Bool) -> String {
        let base = "\(configuration.photosFolder)/\(FileNames.stem(clockSynchronized: clockSynchronized))"
            + (configuration.cameraName.map { "-" + $0 } ?? "")
        let jpeg = configuration.photoExtension(raw: false), raw = configuration.photoExtension(raw: true)
        var stem = base
        var n = 2
        while FileManager.default.fileExists(atPath: stem + jpeg) || FileManager.default.fileExists(atPath: stem + raw) {
            stem = "\(base)-\(n)"
            n += 1
        }
        return stem
    }
}
