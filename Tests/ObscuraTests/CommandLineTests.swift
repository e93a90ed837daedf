import Foundation
import Testing
import TestSupport

/// The `obscura` executable on this machine, outside the board: no camera.
@Suite struct CommandLineTests {
    let obscura = packageRoot + "/.build/debug/obscura"

    @Test func devicesWithoutACameraFailsClearly() throws {
        try #require(FileManager.default.isExecutableFile(atPath: obscura), "build first: swift build")
        let result = try runProgram(obscura, ["devices"], cwd: packageRoot)
        #expect(result.status != 0)
        #expect(result.stderr.contains("no camera found"))
    }

    @Test func recordWithoutACameraFailsClearlyAndLeavesNoFile() throws {
        try #require(FileManager.default.isExecutableFile(atPath: obscura), "build first: swift build")
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("none-\(getpid()).mp4").path
        let result = try runProgram(obscura, ["record", "--duration", "1", "--output", path], cwd: packageRoot)
        #expect(result.status != 0)
        #expect(result.stderr.contains("no camera found"))
        #expect(!FileManager.default.fileExists(atPath: path))
        #expect(!FileManager.default.fileExists(atPath: path + ".partial"))
    }

    @Test func badArgumentsNameWhatIsAllowed() throws {
        try #require(FileManager.default.isExecutableFile(atPath: obscura), "build first: swift build")
        let codec = try runProgram(obscura, ["record", "--duration", "1", "--output", "x.mp4", "--codec", "vp9"], cwd: packageRoot)
        #expect(codec.status != 0)
        #expect(codec.stderr.contains("allowed: h264, hevc, prores422, mjpeg"))
        let container = try runProgram(obscura, ["record", "--duration", "1", "--output", "x.avi"], cwd: packageRoot)
        #expect(container.stderr.contains(".mp4, .mov or .mkv"))
    }
}
