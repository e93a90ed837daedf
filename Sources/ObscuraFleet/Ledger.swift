import Foundation
import ObscuraSystem
#if canImport(Glibc)
import Glibc
#endif

/// What the store holds of one kiosk, as the collector recorded it: one line
/// per stored file, "<sha256> <key>", appended and fsynced once the store
/// has confirmed the object. A file whose sha256 is here is not fetched
/// again, under any name (a kiosk renames a boot-named recording once its
/// clock is right; the bytes are the same, and stored once). Lost or
/// behind (a collector killed between the store's answer and this line),
/// it costs a fetch and a `stat` of the store, never a second object: the
/// key is the same, and the store is asked first.
final class Ledger {
    let path: String
    private(set) var hashes: Set<String> = []

    init(path: String) throws(CollectError) {
        self.path = path
        guard let data = FileManager.default.contents(atPath: path) else {
            if FileManager.default.fileExists(atPath: path) { throw CollectError("cannot read \(path)") }
            return
        }
        for line in String(decoding: data, as: UTF8.self).split(separator: "\n") {
            // A torn last line (a power cut mid-append) is no entry.
            let hex = line.prefix(64)
            if hex.count == 64, line.dropFirst(64).hasPrefix(" "), hex.allSatisfy(\.isHexDigit) { hashes.insert(String(hex)) }
        }
    }

    func contains(_ sha256: String) -> Bool { hashes.contains(sha256) }

    func record(_ sha256: String, key: String) throws(CollectError) {
        do throws(SystemError) {
            let created = (try? Syscalls.status(path)) == nil
            let fd = try Syscalls.open(path, O_WRONLY | O_CREAT | O_APPEND, 0o644)
            try Syscalls.writeAll(fd.rawValue, Array("\(sha256) \(key)\n".utf8), path: path)
            try Syscalls.fsync(fd.rawValue, path: path)
            fd.close()
            // A ledger made now has a name its folder must keep.
            if created { try Syscalls.syncFolder(Syscalls.folder(of: path)) }
        } catch {
            throw CollectError("recording \(key) in \(path): \(error)")
        }
        hashes.insert(sha256)
    }
}

/// The store's key for a kiosk's file: KIOSK/YYYY/MM/DD/NAME, the date the
/// one in the name (`obscura-20261122-115500.mp4`); a name without one (a
/// boot-named recording whose time was never known) goes under
/// KIOSK/undated/NAME.
public enum StoreKey {
    public static func key(kiosk: String, name: String) -> String {
        guard let date = date(in: name) else { return "\(kiosk)/undated/\(name)" }
        return "\(kiosk)/\(date.year)/\(date.month)/\(date.day)/\(name)"
    }

    /// The first eight digits in a row after "obscura-" that make a date.
    static func date(in name: String) -> (year: String, month: String, day: String)? {
        guard name.hasPrefix("obscura-") else { return nil }
        let digits = name.dropFirst("obscura-".count).prefix { $0.isASCII && $0.isNumber }
        guard digits.count == 8 else { return nil }
        let year = String(digits.prefix(4)), month = String(digits.dropFirst(4).prefix(2)), day = String(digits.suffix(2))
        guard let m = Int(month), (1...12).contains(m), let d = Int(day), (1...31).contains(d) else { return nil }
        return (year, month, day)
    }
}
