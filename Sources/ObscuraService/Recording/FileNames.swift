import Foundation
import ObscuraMuxing
import ObscuraSystem
import ObscuraFiles

/// How the service names what it records, so that no name carries a time
/// that may be wrong.
///
/// - Clock known to be right (NTP, see `SystemClock`): `obscura-YYYYmmdd-HHMMSS`
///   in local time, the time the recording or photo was asked for.
/// - Before: `obscura-boot-<boot id>-<seconds since boot, 7 digits>`, on
///   CLOCK_MONOTONIC, which needs no network. Once the clock is known, the
///   service renames this boot's such files (and their checksums) to the
///   wall-clock name of that moment: the two clocks' offset maps one onto
///   the other. Files of an earlier boot that never saw the right time keep
///   their boot names: nothing can date them honestly.
///
/// Both kinds sort by time among themselves.
public enum FileNames {
    static let bootPrefix = "obscura-boot-"

    public static func stem(clockSynchronized: Bool, date: Date = Date(),
                            monotonic: UInt64 = Syscalls.monotonicNanoseconds(), bootID: String = SystemClock.bootID) -> String {
        clockSynchronized ? wallClockStem(date) : bootStem(monotonic: monotonic, bootID: bootID)
    }

    static func wallClockStem(_ date: Date) -> String {
        let formatter = DateFormatter()
        formatter.dateFormat = "yyyyMMdd-HHmmss"
        formatter.locale = Locale(identifier: "en_US_POSIX")
        return "obscura-" + formatter.string(from: date)
    }

    static func bootStem(monotonic: UInt64, bootID: String) -> String {
        bootPrefix + bootID + "-" + String(format: "%07llu", monotonic / 1_000_000_000)
    }

    /// The wall-clock name for `name` when it is a boot name of boot
    /// `bootID` (the rest after the stem kept: "-0002.mp4", ".jpg.sha256");
    /// nil for any other name.
    static func wallClockName(for name: String, bootID: String, wallClock: (UInt64) -> Date) -> String? {
        let head = bootPrefix + bootID + "-"
        guard name.hasPrefix(head) else { return nil }
        let rest = name.dropFirst(head.count)
        let digits = rest.prefix(7)
        guard digits.count == 7, digits.allSatisfy({ $0.isASCII && $0.isNumber }), let seconds = UInt64(digits) else { return nil }
        return wallClockStem(wallClock(seconds * 1_000_000_000)) + rest.dropFirst(7)
    }

    /// Renames this boot's boot-named files in `folders` to wall-clock
    /// names, each checksum file rewritten for its new name. Returns
    /// (old, new) paths of the media files renamed. Call only once the
    /// clock is known to be right. A name already taken is left alone.
    static func renameBootNamed(in folders: [String], bootID: String = SystemClock.bootID,
                                wallClock: (UInt64) -> Date = SystemClock.wallClock(ofMonotonic:)) -> (renamed: [(String, String)], problems: [String]) {
        var renamed: [(String, String)] = []
        var problems: [String] = []
        for folder in folders {
            let names = (try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []
            for name in names.sorted() where !name.hasSuffix(".sha256") && !name.hasSuffix(".partial") {
                guard let new = wallClockName(for: name, bootID: bootID, wallClock: wallClock) else { continue }
                let old = folder + "/" + name, target = folder + "/" + new
                guard !FileManager.default.fileExists(atPath: target) else {
                    problems.append("cannot rename \(old) to \(new): that name is taken")
                    continue
                }
                do {
                    try Syscalls.publish(old, as: target)
                } catch {
                    problems.append("cannot rename \(old) to \(new): \(error)")
                    continue
                }
                renamed.append((old, target))
                // The checksum names its file: written anew for the new name.
                let sum = old + ".sha256"
                if let text = try? String(contentsOfFile: sum, encoding: .utf8), let hex = text.split(separator: " ").first {
                    do {
                        try Checksum.write(for: target, digest: String(hex))
                        try Syscalls.remove(sum)
                    } catch {
                        problems.append("\(target): checksum not moved: \(error)")
                    }
                }
            }
        }
        return (renamed, problems)
    }
}

/// Names recordings begun one after another: one begun in the same second
/// as the one before gets `-2`, then `-3`, … after its stem, as photos do (a
/// stop and a start within a second would otherwise reuse the name, and
/// the second file would replace the first).
struct RecordingStems: Sendable {
    private var last: String?
    private var count = 0

    mutating func next(_ stem: String) -> String {
        guard stem != last else {
            count += 1
            return "\(stem)-\(count)"
        }
        last = stem
        count = 1
        return stem
    }
}
