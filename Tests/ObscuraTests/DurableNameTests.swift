import Foundation
import Testing
import ObscuraFiles
import ObscuraSystem
import TestSupport

/// The door's publishing of a file (rename, then the folder synced) and the
/// errors it gives. That a published name survives a power cut is shown on
/// the board (docs/testing/what-the-tests-prove.md); here, what each step
/// does and how its failure is named.
@Suite struct DurableNameTests {
    @Test func publishGivesTheFileItsNameAndLeavesNoTemporary() throws {
        let folder = try TemporaryDirectory()
        let temporary = folder.path + "/.photo.jpg.tmp", final = folder.path + "/photo.jpg"
        try DurableFile.write(Array("first".utf8), to: final, via: temporary)
        try Syscalls.syncAndPublish(write("second", temporary), as: final)
        #expect(try String(contentsOfFile: final, encoding: .utf8) == "second")
        #expect(!FileManager.default.fileExists(atPath: temporary))
        #expect(try Syscalls.folderEntries(folder.path) == ["photo.jpg"])
    }

    @Test func aFailedStepIsNamedWithItsCallAndPath() throws {
        let folder = try TemporaryDirectory()
        let missing = folder.path + "/absent.partial"
        #expect {
            try Syscalls.publish(missing, as: folder.path + "/absent.mp4")
        } throws: { error in
            let e = error as? SystemError
            return e?.call == "rename" && e?.code == ENOENT && e?.detail.contains(missing) == true
        }
        let file = try write("x", folder.path + "/plain")
        #expect {
            try Syscalls.syncFolder(file)
        } throws: { error in
            (error as? SystemError)?.code == ENOTDIR && "\(error)".contains(file)
        }
        // A file that cannot be synced cannot be recorded to: DataSyncer says so.
        #expect {
            try DataSyncer(path: missing)
        } throws: { error in
            (error as? SystemError)?.call == "open" && "\(error)".contains(missing)
        }
    }

    @Test func theFolderOfANameIsWhereItsEntryLives() {
        #expect(Syscalls.folder(of: "/srv/obscura/recordings/a.mp4") == "/srv/obscura/recordings")
        #expect(Syscalls.folder(of: "/a.mp4") == "/")
        #expect(Syscalls.folder(of: "a.mp4") == ".")
    }

    /// A Unix socket bound with a mode has that mode exactly, whatever the
    /// umask took from it at bind (it is never made wider than asked).
    @Test func aSocketIsBoundWithItsMode() throws {
        let folder = try TemporaryDirectory()
        let path = folder.path + "/s.sock"
        let socket = try Syscalls.socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), what: "AF_UNIX")
        try Syscalls.bind(socket.rawValue, unixPath: path, mode: 0o660)
        let info = try Syscalls.status(path)
        #expect(info.st_mode & 0o7777 == 0o660, "mode \(String(info.st_mode & 0o7777, radix: 8))")
        #expect(info.st_mode & S_IFMT == S_IFSOCK)
        #expect(try Syscalls.groupID("no-such-group-\(getpid())") == nil)
        #expect(try Syscalls.groupID("root") == 0)
    }

    private func write(_ text: String, _ path: String) throws -> String {
        try Data(text.utf8).write(to: URL(fileURLWithPath: path))
        return path
    }
}
