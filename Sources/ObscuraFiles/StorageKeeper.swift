#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import ObscuraSystem

/// Loop recording: keeps a folder of finished recordings under a quota and
/// the disk above a free-space minimum by deleting the oldest finished
/// files first. Never touches a file being written (`.partial`) or one it is
/// told to protect; a recording's checksum file goes with it.
public struct StorageKeeper: Sendable {
    public let folder: String
    public let quotaBytes: Int
    public let minFreeBytes: Int
    /// `age`: an encrypted recording or photo (`x.mp4.age`).
    public static let mediaExtensions: Set<String> = ["mp4", "mov", "mkv", "fwht", "jpg", "jpeg", "dng", "age"]

    public init(folder: String, quotaBytes: Int, minFreeBytes: Int) {
        self.folder = folder
        self.quotaBytes = quotaBytes
        self.minFreeBytes = minFreeBytes
    }

    public struct Item: Sendable, Equatable {
        public let path: String
        public let bytes: Int
        public let modified: Date
    }

    /// Finished recordings, oldest first.
    public func finished() -> [Item] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []
        return names.compactMap { name -> Item? in
            let ext = Paths.fileExtension(name).lowercased()
            guard Self.mediaExtensions.contains(ext) else { return nil }
            let path = folder + "/" + name
            guard let a = try? FileManager.default.attributesOfItem(atPath: path),
                  (a[.type] as? FileAttributeType) == .typeRegular else { return nil }
            return Item(path: path, bytes: (a[.size] as? Int) ?? 0, modified: (a[.modificationDate] as? Date) ?? .distantPast)
        }.sorted { ($0.modified, $0.path) < ($1.modified, $1.path) }
    }

    public func usedBytes() -> Int { finished().reduce(0) { $0 + $1.bytes } }

    public static func freeBytes(_ path: String) -> Int? { try? Syscalls.freeBytes(path) }

    /// Deletes oldest finished files until under the quota and above the
    /// free-space minimum (or nothing deletable is left). Returns what went.
    @discardableResult
    public func enforce(protecting protected: Set<String> = []) -> [String] {
        enforce(protecting: protected, listed: finished(), used: usedBytes())
    }

    /// `enforce` from a listing made before: files another keeper of the
    /// folder deleted meanwhile count as freed (two cameras' recorders keep
    /// one folder), so no more goes than the quota asks.
    func enforce(protecting protected: Set<String>, listed: [Item], used total: Int) -> [String] {
        var items = listed.filter { !protected.contains($0.path) }
        var used = total
        var deleted: [String] = []
        func overQuota() -> Bool { quotaBytes > 0 && used > quotaBytes }
        func lowOnSpace() -> Bool { minFreeBytes > 0 && (Self.freeBytes(folder) ?? Int.max) < minFreeBytes }
        while (overQuota() || lowOnSpace()), !items.isEmpty {
            let oldest = items.removeFirst()
            guard (try? Syscalls.remove(oldest.path, missingIsFine: false)) != nil else {
                // Gone meanwhile (another camera's keeper of the same folder): its space is free all the same.
                if !FileManager.default.fileExists(atPath: oldest.path) { used -= oldest.bytes }
                continue
            }
            try? Syscalls.remove(oldest.path + ".sha256")  // (a checksum alone names nothing to fetch)
            used -= oldest.bytes
            deleted.append(oldest.path)
        }
        return deleted
    }
}
