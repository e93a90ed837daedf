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
        let aligned = try runProgram(obscura, ["record", "--duration", "1", "--output", "x.mp4", "--align-to-age-chunks"], cwd: packageRoot)
        #expect(aligned.status != 0 && aligned.stderr.contains("--align-to-age-chunks: only an encrypted recording has age chunks"), "\(aligned.stderr)")
    }

    /// A pixel format is taken by the name a camera's formats are listed by
    /// (BGR888, in any case) or by its fourcc (BG24); the refusal lists both.
    @Test func aPixelFormatIsTakenByNameOrFourcc() throws {
        try #require(FileManager.default.isExecutableFile(atPath: obscura), "build first: swift build")
        for name in ["BGR888", "bgr888", "BG24"] {
            let watched = try runProgram(obscura, ["watch", "--camera", "synthetic", "--size", "320x240", "--pixel-format", name,
                                                   "--seconds", "0.5"], cwd: packageRoot)
            #expect(watched.status == 0, "\(name): \(watched.stderr)")
            #expect(watched.stdout.contains("looked at"), "\(name): \(watched.stdout)")
        }
        let refused = try runProgram(obscura, ["watch", "--camera", "synthetic", "--pixel-format", "BGR8", "--seconds", "0.5"], cwd: packageRoot)
        #expect(refused.status != 0)
        #expect(refused.stderr.contains("--pixel-format: \"BGR8\" is not a pixel format this program knows"), "\(refused.stderr)")
        #expect(refused.stderr.contains("BGR888 (BG24)") && refused.stderr.contains("NV12"), "\(refused.stderr)")
    }

    /// A file camera is watched once, every frame in order at its own time:
    /// a 16 s file dark for its first 7 s is declared dark once, at the hold,
    /// and cleared once, when the picture came back and stayed so for
    /// --clear-after; the watch ends with the file. With --loop it goes on.
    @Test func aFileDarkForItsFirstSevenSecondsIsDeclaredDarkOnceAndClearedOnce() throws {
        try #require(FileManager.default.isExecutableFile(atPath: obscura), "build first: swift build")
        let dir = try TemporaryDirectory()
        let file = dir.path + "/dark7.nv12"
        let made = try runProgram("ffmpeg", ["-loglevel", "error", "-f", "lavfi", "-i", "color=c=black:s=320x240:r=30:d=7",
                                             "-f", "lavfi", "-i", "testsrc2=s=320x240:r=30:d=9",
                                             "-filter_complex", "[0:v][1:v]concat=n=2:v=1[v]", "-map", "[v]",
                                             "-pix_fmt", "nv12", "-f", "rawvideo", file])
        try #require(made.status == 0, "\(made.stderr)")
        let watched = try runProgram(obscura, ["watch", "--camera", "file:" + file, "--size", "320x240", "--pixel-format", "NV12",
                                               "--conditions", "dark", "--hold", "3", "--clear-after", "2"], cwd: packageRoot)
        #expect(watched.status == 0, "\(watched.stderr)")
        let lines = watched.stdout.split(separator: "\n").map(String.init)
        func times(_ what: String) -> [Double] { lines.filter { $0.contains(what) }.compactMap { Double($0.prefix { $0 != " " }) } }
        let declared = times("dark declared"), cleared = times("dark cleared")
        // At the frames' own times: the hold after 0 s; the clearing after 7 s.
        #expect(declared.count == 1 && (3.0...4.0).contains(declared[0]), "\(watched.stdout)")
        #expect(cleared.count == 1 && (9.0...10.0).contains(cleared[0]), "\(watched.stdout)")
        #expect(lines.last?.contains("of 480 frames") == true, "every frame of the file, once: \(watched.stdout)")
        let looped = try runProgram(obscura, ["watch", "--camera", "file:" + file, "--size", "320x240", "--pixel-format", "NV12",
                                              "--conditions", "dark", "--hold", "3", "--loop", "--seconds", "40"], cwd: packageRoot)
        #expect(looped.stdout.split(separator: "\n").filter { $0.contains("dark declared") }.count == 3, "\(looped.stdout)")
    }

    /// --frame-rate sets the camera (the timestamps show it) and
    /// --keyframe-interval the distance between keyframes; a rate the camera
    /// cannot run at is refused with the range it can.
    @Test func frameRateAndKeyframeIntervalReachTheCameraAndTheFile() throws {
        try #require(FileManager.default.isExecutableFile(atPath: obscura), "build first: swift build")
        let dir = try TemporaryDirectory()
        let path = dir.path + "/k.mp4"
        let result = try runProgram(obscura, ["record", "--camera", "synthetic:fast", "--duration", "2", "--frame-rate", "15",
                                              "--keyframe-interval", "10", "--output", path], cwd: packageRoot)
        #expect(result.status == 0, "\(result.stderr)")
        let probe = try ProbedVideo.read(path)
        #expect(abs(probe.measuredFrameRate - 15) < 0.5, "\(probe.measuredFrameRate) fps")
        let packets = try runProgram("ffprobe", ["-v", "error", "-select_streams", "v:0", "-show_entries", "packet=flags",
                                                 "-of", "csv=p=0", path])
        let keyframes = packets.stdout.split(separator: "\n").enumerated().filter { $0.element.hasPrefix("K") }.map(\.offset)
        #expect(keyframes == Array(stride(from: 0, to: probe.frameCount, by: 10)), "keyframes at \(keyframes) of \(probe.frameCount)")
        let tooFast = try runProgram(obscura, ["record", "--camera", "synthetic", "--duration", "1", "--frame-rate", "100",
                                               "--output", dir.path + "/f.mp4"], cwd: packageRoot)
        #expect(tooFast.status != 0)
        #expect(tooFast.stderr.contains("--frame-rate 100 is outside what the camera allows at this format: 1–60 fps"), "\(tooFast.stderr)")
        #expect(!FileManager.default.fileExists(atPath: dir.path + "/f.mp4"))
    }

    /// A machine without a microphone: asking for audio records video only, with a note.
    @Test func recordingWithoutAMicrophoneIsVideoOnly() throws {
        try #require(FileManager.default.isExecutableFile(atPath: obscura), "build first: swift build")
        let dir = try TemporaryDirectory()
        let result = try runProgram(obscura, ["record", "--camera", "synthetic:fast", "--duration", "1", "--audio", "hw:CARD=Nothing,DEV=3",
                                              "--output", dir.path + "/v.mp4"], cwd: packageRoot)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stderr.contains("obscura: audio: snd_pcm_open hw:CARD=Nothing,DEV=3: "), "\(result.stderr)")
        #expect(result.stderr.contains("recording video only"))
        let streams = try runProgram("ffprobe", ["-v", "error", "-show_entries", "stream=codec_type", "-of", "csv=p=0", dir.path + "/v.mp4"])
        #expect(streams.stdout == "video\n")
        let opus = try runProgram(obscura, ["record", "--camera", "synthetic", "--duration", "1", "--audio", "auto", "--audio-codec", "opus",
                                            "--output", dir.path + "/o.mp4"], cwd: packageRoot)
        #expect(opus.status != 0 && opus.stderr.contains("--audio-codec opus goes only in mkv files"), "\(opus.stderr)")
    }

    @Test func photoRawWritesAJPEGAndADNGOfOneExposure() throws {
        try #require(FileManager.default.isExecutableFile(atPath: obscura), "build first: swift build")
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("obscura-cli-raw-\(getpid())").path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        let result = try runProgram(obscura, ["photo", "--camera", "synthetic", "--size", "640x480", "--raw",
                                              "--output", dir + "/p.jpg"], cwd: packageRoot)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.contains("photo \(dir)/p.jpg: 640x480 JPEG"), "\(result.stdout)")
        #expect(result.stdout.contains("photo \(dir)/p.dng: 640x480 DNG SRGGB12_CSI2P"), "\(result.stdout)")
        let identify = try runProgram("raw-identify", ["-v", dir + "/p.dng"]).stdout
        #expect(identify.contains("Full size:    640 x 480") && identify.contains("Filter pattern: RGGB"), "\(identify)")
        let jpeg = try runProgram("exiftool", ["-s", "-s", "-s", "-ImageSize", dir + "/p.jpg"]).stdout
        #expect(jpeg == "640x480\n")
        #expect(!FileManager.default.fileExists(atPath: dir + "/p.dng.partial"))
    }
}
