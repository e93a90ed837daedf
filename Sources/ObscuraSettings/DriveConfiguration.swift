/// A drive recordings go to when it is present (a USB stick or disk), named
/// by its filesystem label or its mount point; the SD card's folder
/// (`recording.folder`) takes over whenever it is absent or goes away.
///
/// The service does not mount it (it has no right to): the system does
/// (an fstab line, docs/storage.md), and the service looks for the mount.
public struct DriveConfiguration: Sendable, Equatable {
    public enum Identity: Sendable, Equatable, CustomStringConvertible {
        case label(String)
        case mountPoint(String)
        public var description: String {
            switch self {
            case .label(let l): "LABEL=\(l)"
            case .mountPoint(let p): p
            }
        }
    }
    public var identity: Identity
    /// The folder on the drive that holds recordings (relative to its root).
    public var folder = "obscura/recordings"
    public var quotaBytes = 0
    public var minFreeSpaceBytes = 256 << 20

    public init(identity: Identity, folder: String = "obscura/recordings", quotaBytes: Int = 0, minFreeSpaceBytes: Int = 256 << 20) {
        self.identity = identity
        self.folder = folder
        self.quotaBytes = quotaBytes
        self.minFreeSpaceBytes = minFreeSpaceBytes
    }

    /// Reads `usb.drive`: `LABEL=<label>` or an absolute mount point.
    public static func identity(_ text: String) -> Identity? {
        if text.hasPrefix("LABEL=") {
            let label = String(text.dropFirst("LABEL=".count))
            return label.isEmpty || label.contains("/") ? nil : .label(label)
        }
        guard text.hasPrefix("/"), text.count > 1, !text.split(separator: "/").contains("..") else { return nil }
        return .mountPoint(text.hasSuffix("/") ? String(text.dropLast()) : text)
    }
}
