import Foundation
import ObscuraSystem

/// Where a configured drive is (see `DriveConfiguration`).
extension DriveConfiguration {
    /// Where the drive is: its mount point and the recordings folder on it.
    public enum Presence: Sendable, Equatable {
        case mounted(mountPoint: String, folder: String)
        /// Why not, in words that name what was looked for.
        case absent(String)
    }

    /// Looks the drive up in this process's mounts (`/proc/self/mountinfo`)
    /// and, for a label, udev's `/dev/disk/by-label` links.
    public func locate(mountInfo: String? = nil, byLabel: String = "/dev/disk/by-label", sysBlock: String = "/sys/dev/block") -> Presence {
        // (Read to the end: a /proc file's size says 0.)
        let table = mountInfo ?? FileHandle(forReadingAtPath: "/proc/self/mountinfo").map { String(decoding: $0.readDataToEndOfFile(), as: UTF8.self) }
        let mounts = Mount.parse(table ?? "")
        let point: String
        switch identity {
        case .label(let label):
            let link = byLabel + "/" + Self.udevEscape(label)
            guard let st = try? Syscalls.status(link), (st.st_mode & S_IFMT) == S_IFBLK else {
                if (try? Syscalls.linkStatus(link)) != nil { return .absent("the filesystem labelled \"\(label)\" went away (\(Self.resolved(link)))") }
                let names = ((try? FileManager.default.contentsOfDirectory(atPath: byLabel)) ?? []).map(Self.udevUnescape).sorted()
                return .absent("no filesystem labelled \"\(label)\" is attached (labels present: "
                               + (names.isEmpty ? "none" : names.joined(separator: ", ")) + ")")
            }
            let rdev = UInt64(st.st_rdev)
            let device = (UInt32((rdev >> 8) & 0xfff | (rdev >> 32) & ~0xfff), UInt32(rdev & 0xff | (rdev >> 12) & ~0xff))
            // The newest mount of that device (the last in the table).
            guard let mount = mounts.last(where: { $0.device == device }) else {
                return .absent("the filesystem labelled \"\(label)\" (\(Self.resolved(link))) is not mounted")
            }
            point = mount.mountPoint
        case .mountPoint(let path):
            guard let mount = mounts.last(where: { $0.mountPoint == path }) else {
                return .absent("nothing is mounted on \(path)")
            }
            // A drive pulled out stays mounted until someone unmounts it.
            if mount.source.hasPrefix("/dev/"), (try? Syscalls.checkAccess("\(sysBlock)/\(mount.device.0):\(mount.device.1)", F_OK)) == nil {
                return .absent("the drive mounted on \(path) (\(mount.source)) went away")
            }
            point = path
        }
        return .mounted(mountPoint: point, folder: point == "/" ? "/" + folder : point + "/" + folder)
    }

    private static func resolved(_ link: String) -> String {
        (try? FileManager.default.destinationOfSymbolicLink(atPath: link)).map {
            (($0.hasPrefix("/") ? $0 : (link as NSString).deletingLastPathComponent + "/" + $0) as NSString).standardizingPath
        } ?? link
    }

    /// udev's escaping of a label in /dev/disk/by-label: unsafe bytes as \xNN.
    static func udevEscape(_ label: String) -> String {
        let safe = Set("#+-.:=@_".utf8)
        var out: [UInt8] = []
        for byte in label.utf8 {
            let alnum = (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5a) || (byte >= 0x61 && byte <= 0x7a)
            // Bytes of multi-byte UTF-8 characters pass through.
            if alnum || byte >= 0x80 || safe.contains(byte) { out.append(byte) } else { out += Array(String(format: "\\x%02x", byte).utf8) }
        }
        return String(decoding: out, as: UTF8.self)
    }

    static func udevUnescape(_ name: String) -> String {
        // `\xNN`: a byte in hex.
        Escapes.decode(name) { raw, i in
            guard raw[i + 1] == UInt8(ascii: "x") else { return nil }
            return UInt8(String(decoding: raw[(i + 2)...(i + 3)], as: UTF8.self), radix: 16)
        }
    }
}

/// One line of /proc/self/mountinfo.
struct Mount: Equatable {
    var device: (UInt32, UInt32)
    var mountPoint: String
    var source: String

    static func == (a: Mount, b: Mount) -> Bool {
        a.device == b.device && a.mountPoint == b.mountPoint && a.source == b.source
    }

    /// "36 35 98:0 /mnt1 /mnt/parent rw,noatime master:1 - ext3 /dev/root rw,errors=continue"
    static func parse(_ text: String) -> [Mount] {
        text.split(separator: "\n").compactMap { line in
            let fields = line.split(separator: " ", omittingEmptySubsequences: false).map(String.init)
            guard fields.count >= 10, let dash = fields.firstIndex(of: "-"), dash + 2 < fields.count else { return nil }
            let numbers = fields[2].split(separator: ":")
            guard numbers.count == 2, let major = UInt32(numbers[0]), let minor = UInt32(numbers[1]) else { return nil }
            return Mount(device: (major, minor), mountPoint: unescape(fields[4]), source: unescape(fields[dash + 2]))
        }
    }

    /// The kernel's octal escapes (`\040` for a space).
    static func unescape(_ field: String) -> String {
        // `\NNN`: a byte in octal.
        Escapes.decode(field) { raw, i in UInt8(String(decoding: raw[(i + 1)...(i + 3)], as: UTF8.self), radix: 8) }
    }
}

/// Four-byte backslash escapes, as udev and the kernel write names.
enum Escapes {
    /// `text` with each backslash and the three bytes after it that
    /// `value` reads (given the bytes and the backslash's index) made one byte.
    static func decode(_ text: String, _ value: ([UInt8], Int) -> UInt8?) -> String {
        let raw = Array(text.utf8)
        var bytes: [UInt8] = []
        var i = 0
        while i < raw.count {
            if raw[i] == UInt8(ascii: "\\"), i + 3 < raw.count, let v = value(raw, i) {
                bytes.append(v)
                i += 4
            } else {
                bytes.append(raw[i])
                i += 1
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}
