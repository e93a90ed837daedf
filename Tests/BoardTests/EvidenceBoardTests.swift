import Foundation
import ObscuraOverlay
import Testing
import TestSupport

extension VirtualBoardTests {
/// Encryption at rest under the service: the device holds only a recipient
/// (a public key); what it writes is age files and nothing else; a
/// collecting computer (`obscura pull --identity-file` over a real sshd)
/// verifies and decrypts them; the real `age` tool decrypts the same files on
/// the test machine.
@Suite struct EvidenceBoardTests {
    /// The key pair, made here once: the board sees the identity only in
    /// the collecting computer's role (the pull), never in the service's.
    static let keys = Result { () throws -> (folder: Folder, recipient: String) in
        let relative = ".build/evidence-\(getpid())", path = packageRoot + "/" + relative
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        let folder = Folder(relative: relative, path: path)
        let made = try runProgram("age-keygen", ["-o", folder.path + "/key.txt"])
        guard made.status == 0, let recipient = made.stderr.split(separator: " ").last?.trimmingCharacters(in: .whitespacesAndNewlines) else {
            throw KeyError(said: made.stderr)
        }
        return (folder, recipient)
    }
    struct KeyError: Error { let said: String }
    /// A folder the board sees too (removed by the test once read).
    struct Folder: Sendable { let relative: String; let path: String }

    /// The board's part (KioskBoard, scenarios/Kiosk/evidence.sh) is given
    /// the folder and the recipient, or why there are none.
    static var arguments: [String] {
        switch keys {
        case .success(let (folder, recipient)): [folder.relative, recipient]
        case .failure(let error): ["", "", "age-keygen failed: \(error)"]
        }
    }

    @Test func anEncryptingServiceKeepsNoPlaintextAndWhatItKeepsDecrypts() throws {
        let (folder, recipient) = try Self.keys.get()
        defer { try? FileManager.default.removeItem(atPath: folder.path) }
        let least = 5  // a few frames prove the path ran; no rate is assumed
        let result = try KioskBoard.board.result(of: "evidence")
        let out = result.stdout
        let lines = out.split(separator: "\n").map(String.init)
        #expect(result.status == 0, "\(out)\(result.stderr)")
        #expect(lines.contains("config: recipients = [\"\(recipient)\"]"), "\(out)\(result.stderr)")
        #expect(lines.contains("config: align_to_chunks = true"), "\(out)")
        // Only age files on the device, no plaintext marker in any.
        #expect(!lines.contains { $0.hasPrefix("not-age=") || $0.hasPrefix("plain-marker=") }, "\(out)")
        let onDevice = lines.filter { $0.hasPrefix("age-file=") }.map { String($0.dropFirst("age-file=".count)) }
        #expect(onDevice.filter { $0.hasSuffix(".mp4.age") }.count >= 4, "\(out)")  // 2 s segments, the last one, the killed one
        #expect(onDevice.contains { $0.hasSuffix(".jpg.age") }, "\(out)")
        #expect(!lines.contains { $0.hasPrefix("device-sum: ") && !$0.hasSuffix(": OK") }, "\(out)")
        #expect(lines.contains { $0.hasPrefix("journal: ") && $0.contains("recovered an interrupted encrypted recording: ") }, "\(out)")
        #expect(lines.contains("active=active restarts=1"), "\(out)")
        #expect((Int(lines.first { $0.hasPrefix("killed-at=") }?.dropFirst("killed-at=".count) ?? "") ?? 0) >= 300_000, "\(out)")

        // The collecting computer pulled, verified and decrypted everything.
        #expect(lines.contains("pull-rc=0"), "\(out)")
        let pulled = lines.filter { $0.hasPrefix("pulled=") }
        #expect(pulled.count == onDevice.filter { $0.hasSuffix(".mp4.age") }.count, "\(out)")
        // Every file plays (a segment cut by the stop may be short), the
        // interrupted one too (decrypted and cut back to whole fragments).
        for line in pulled {
            let frames = Int(line.split(separator: "=").last ?? "") ?? 0
            #expect(frames > 0, "\(line)")
        }
        #expect(lines.contains { $0.hasPrefix("pulled-photo=") && $0.contains(" Obscura ") }, "\(out)")
        #expect(lines.contains { $0.hasPrefix("pull: ") && $0.contains("the recording was interrupted") }, "\(out)")

        // The test machine's own age decrypts each file: finished ones fully;
        // the interrupted one up to its complete chunks (then it says the end
        // is missing), the same bytes obscura gave.
        let files = try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { $0.hasSuffix(".age") }.sorted()
        #expect(files.count == onDevice.count, "\(files) vs \(onDevice)")
        var interrupted = 0
        for name in files {
            let file = folder.path + "/" + name
            let plain = folder.path + "/" + String(name.dropLast(4))
            let age = try runProgram("sh", ["-c", "age -d -i '\(folder.path)/key.txt' '\(file)' > '\(plain)'"])
            if age.status != 0 {
                interrupted += 1
                #expect(age.stderr.contains("unexpected EOF") || age.stderr.contains("failed to decrypt"), "\(name): \(age.stderr)")
            }
            if name.hasSuffix(".jpg.age") {
                #expect(age.status == 0, "\(name): \(age.stderr)")
                #expect(try exiftoolValidation(plain) == "OK", "\(name)")
            } else {
                // Each recording as age -d gives it (the interrupted one too:
                // its fragments were aligned) decodes with not one FFmpeg error.
                let decoded = try ffmpegDecodeErrors(plain)
                #expect(decoded.status == 0 && decoded.stderr.isEmpty, "\(name), decrypted by age -d: \(decoded.stderr)")
                let probe = try runProgram("ffprobe", ["-v", "error", "-select_streams", "v:0", "-count_packets",
                                                       "-show_entries", "stream=nb_read_packets", "-of", "csv=p=0", plain])
                let frames = Int(probe.stdout.trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0
                // The killed file was let grow to 300 kB: a few seconds of frames.
                #expect(frames >= (age.status != 0 ? least : 1), "\(name): \(probe.stdout)\(probe.stderr)")
            }
        }
        #expect(interrupted == 1, "one file was cut off by the kill: \(files)")

        // The caption the service burned in: the first recording's first
        // file, every frame right to the second from the journaled first
        // frame.
        let first = try #require(lines.first { $0.contains("first frame taken at ") }, "\(out)")
        let path = try #require(first.split(separator: " ").first { $0.hasSuffix(".mp4.age:") }).dropLast()
        let zero = try #require(Double(first.split(separator: "(").last?.split(separator: " ").first ?? ""), "\(first)")
        let base = (String(path) as NSString).lastPathComponent.replacingOccurrences(of: ".mp4.age", with: "")
        var caption = OverlaySettings()
        caption.text = "Evidence"
        caption.cameraName = "Sensor B"
        caption.timeZone = TimeZone(identifier: "UTC")!
        let frames = try OverlayCheck.check(file: "\(folder.path)/\(base)-0001.mp4", size: (636, 480), settings: caption, wallZero: zero)
        #expect(!frames.isEmpty && frames.allSatisfy { $0.right }, "\(frames.count) frames; wrong: \(frames.filter { !$0.right })")
    }
}
}
