import Foundation
import Logging
import ObscuraFiles
import ObscuraHealth

/// Where the tampering watch keeps what its camera usually sees, so that a
/// restart of the service (or of the board) judges against the scene it
/// knew instead of learning it again: `scene-reference.json` in the
/// service's state directory (systemd's `$STATE_DIRECTORY`, its first
/// entry). A reference is this camera's at this size; another camera's, or
/// one whose file cannot be read, is learned afresh (and said so).
struct SceneReferenceStore: Sendable {
    struct Saved: Codable {
        let camera: String
        let width: Int
        let height: Int
        let reference: SceneReference
    }

    let path: String
    let camera: String
    let width: Int
    let height: Int

    /// The store in the state directory, or nil when the service has none
    /// (run by hand, outside systemd): the scene is then learned each start.
    /// `name`: one of a kiosk's cameras, whose scene is kept apart.
    init?(camera: String, name: String? = nil, width: Int, height: Int,
          environment: [String: String] = ProcessInfo.processInfo.environment) {
        guard let folders = environment["STATE_DIRECTORY"], let first = folders.split(separator: ":").first, !first.isEmpty else { return nil }
        path = "\(first)/scene-reference" + (name.map { "-" + $0 } ?? "") + ".json"
        (self.camera, self.width, self.height) = (camera, width, height)
    }

    /// The saved reference if it is this camera's at this size; otherwise
    /// nil, with why in `note` (nothing to say when there is no file yet).
    func load() -> (reference: SceneReference?, note: String?) {
        guard let data = FileManager.default.contents(atPath: path) else { return (nil, nil) }
        guard let saved = try? JSONDecoder().decode(Saved.self, from: data), saved.reference.isWhole else {
            return (nil, "\(path) could not be read as a scene reference; the scene is learned afresh")
        }
        guard saved.camera == camera, saved.width == width, saved.height == height else {
            return (nil, "\(path) is camera \(saved.camera) at \(saved.width)x\(saved.height); the scene is learned afresh")
        }
        return (saved.reference, nil)
    }

    /// Saves `reference`, whole or not at all (written aside, synced, renamed).
    func save(_ reference: SceneReference) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let data = try encoder.encode(Saved(camera: camera, width: width, height: height, reference: reference))
        try DurableFile.write(Array(data), to: path, via: path + ".tmp", mode: 0o640)
    }
}

/// Saves the tampering watch's reference: once it is first learned,
/// then every `every` (a restart loses at most that much learning), and
/// when the session ends. On the health thread (the fsync included).
struct SceneReferenceSaver {
    let store: SceneReferenceStore?
    let logger: Logger
    var learned: Bool
    var savedAt: UInt64?
    static let every: UInt64 = 300_000_000_000

    mutating func looked(_ tamper: TamperWatch, at time: UInt64) {
        guard store != nil, tamper.isLearned else { return }
        if !learned {
            learned = true
            logger.notice("picture: the scene is learned; tampering is judged against it from now")
        }
        guard let savedAt else { savedAt = time; save(tamper); return }
        if time >= savedAt &+ Self.every { self.savedAt = time; save(tamper) }
    }

    func save(_ tamper: TamperWatch) {
        guard let store, tamper.reference.looks > 0 else { return }
        do { try store.save(tamper.reference) } catch {
            logger.warning("picture: the scene's reference could not be saved: \(error)")
        }
    }
}
