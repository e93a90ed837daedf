import Foundation
import ObscuraMedia
import ObscuraOverlay
@testable import ObscuraService
import Testing
import TestSupport

/// The burned-in caption, read back from recordings: every decoded frame's
/// caption is the text its own timestamp says, to the second, across second
/// boundaries; drawn in place when the recorder is the frame's only output,
/// into a counted copy when another output reads the frame too.
@Suite(.serialized) struct OverlayTests {
    let obscura = packageRoot + "/.build/debug/obscura"

    /// A 3 s recording of the test pattern with the caption; the pattern as
    /// fast as the recording takes it, unless `realTime`.
    func record(_ name: String, _ extra: [String], realTime: Bool = false) throws -> (file: String, said: String) {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("obscura-overlay-\(getpid())").path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        let file = dir + "/" + name
        unlink(file)
        let run = try runProgram(obscura, ["record", "--camera", realTime ? "synthetic" : "synthetic:fast", "--size", "640x480", "--duration", "3",
                                           "--overlay", "--overlay-text", "Gate 3", "--output", file] + extra)
        try #require(run.status == 0, "\(run.stderr)")
        return (file, run.stderr + run.stdout)
    }

    var settings: OverlaySettings {
        var s = OverlaySettings()
        s.text = "Gate 3"
        s.cameraName = "Synthetic test pattern"
        return s
    }

    @Test func everyFrameShowsItsOwnSecondDrawnInPlaceWithoutACopy() throws {
        let (file, said) = try record("alone.mp4", [])
        #expect(said.contains("drawn in place on ") && said.contains("on copies of 0"), "\(said)")
        #expect(said.contains("CPU copies per frame 0.00"), "\(said)")
        let zero = try #require(OverlayCheck.wallZero(in: said), "\(said)")
        let frames = try OverlayCheck.check(file: file, size: (640, 480), settings: settings, wallZero: zero)
        // Every frame the recording kept (however many a loaded machine let
        // it keep), each with its own second's caption.
        let recorded = try #require(RecordingSummary.find(in: said), "\(said)")
        #expect(frames.count == recorded.frames && frames.count >= 2, "\(frames.count) frames decoded: \(recorded.line)")
        for f in frames where !f.right {
            Issue.record("frame \(f.index) at \(f.time) s: \(f.expected) from its own second's caption, \(f.other) from the other's")
        }
        // A second's worth of them in a row, right across a second boundary.
        #expect(OverlayCheck.longestRightRunAcrossASecond(frames, wallZero: zero) >= Int(recorded.frameRate.rounded(.down)),
                "\(recorded.line)")
        let worst = frames.map(\.expected).max() ?? 0
        let margin = frames.map { $0.other - $0.expected }.min() ?? 0
        print(String(format: "OverlayTests: %d frames right; worst %.1f from the right caption, closest other second %.1f further", frames.count, worst, margin))
    }

    @Test func aFrameAnotherOutputReadsIsCopiedAndCounted() throws {
        // A preview (headless here) reads the same frames: the caption goes
        // on a copy, one per frame, and is just as right. (The camera in real
        // time: the preview gives its frames back at once, and a camera as
        // fast as that would outrun the recording.)
        let (file, said) = try record("shared.mp4", ["--preview"], realTime: true)
        #expect(said.contains("drawn in place on 0 frames"), "\(said)")
        #expect(said.contains("CPU copies per frame 1.0"), "\(said)")
        let zero = try #require(OverlayCheck.wallZero(in: said), "\(said)")
        let frames = try OverlayCheck.check(file: file, size: (640, 480), settings: settings, wallZero: zero)
        let recorded = try #require(RecordingSummary.find(in: said), "\(said)")
        #expect(frames.allSatisfy(\.right) && frames.count == recorded.frames && frames.count >= 2,
                "\(frames.count) frames decoded, \(frames.filter { !$0.right }.count) wrong: \(recorded.line)")
    }

    /// The caption on the other formats cameras give (USB cameras' YUYV,
    /// vimc's and USB cameras' packed RGB, planar YUV 4:2:0).
    @Test(arguments: ["YUYV", "BG24", "XR24"])
    func everyFormatGetsTheRightCaption(format: String) throws {
        let (file, said) = try record("format-\(format).mp4", ["--pixel-format", format, "--duration", "2"])
        let zero = try #require(OverlayCheck.wallZero(in: said), "\(said)")
        let frames = try OverlayCheck.check(file: file, size: (640, 480), settings: settings, wallZero: zero)
        let recorded = try #require(RecordingSummary.find(in: said), "\(said)")
        #expect(frames.count == recorded.frames && frames.count >= 2 && frames.allSatisfy(\.right),
                "\(format): \(frames.count) decoded, wrong: \(frames.filter { !$0.right }); \(recorded.line)")
    }

    /// Drawn on a mid-grey frame of each YUV layout, the luma is exactly the
    /// renderer's reference (the same weights), wherever the layout keeps it.
    @Test(arguments: [PixelFormat.nv12, .yuv420, .yuyv, .uyvy])
    func theLumaDrawnIsTheReferenceInEveryYUVLayout(format: PixelFormat) throws {
        let (w, h) = (320, 240)
        let renderer = try OverlayRenderer(settings: settings, frameSize: PixelSize(width: w, height: h))
        let date = Date(timeIntervalSince1970: 1_795_000_000.25)
        let packed = format == .yuyv || format == .uyvy
        let lengths = packed ? [w * h * 2] : format == .nv12 ? [w * h, w * h / 2] : [w * h, w * h / 4, w * h / 4]
        let strides = packed ? [w * 2] : format == .nv12 ? [w, w] : [w, w / 2, w / 2]
        let pointers = lengths.map { length -> UnsafeMutableRawPointer in
            let p = UnsafeMutableRawPointer.allocate(byteCount: length, alignment: 16)
            p.initializeMemory(as: UInt8.self, repeating: 128, count: length)
            return p
        }
        defer { pointers.forEach { $0.deallocate() } }
        try renderer.draw(planes: pointers, strides: strides, format: format, at: date)
        let ref = renderer.referenceLuma(at: date)
        var differing = 0
        for row in 0..<ref.height {
            for x in 0..<ref.width {
                let (px, py) = (ref.x + x, ref.y + row)
                let y = packed ? pointers[0].load(fromByteOffset: py * w * 2 + px * 2 + (format == .uyvy ? 1 : 0), as: UInt8.self)
                    : pointers[0].load(fromByteOffset: py * w + px, as: UInt8.self)
                if y != ref.luma[row * ref.width + x] { differing += 1 }
            }
        }
        #expect(differing == 0, "\(format): \(differing) luma samples differ from the reference")
    }

    @Test func badOverlayOptionsAreNamed() throws {
        for (args, says) in [(["--overlay-position", "middle"], "--overlay-position: \"middle\" is not allowed; allowed: top-left"),
                             (["--overlay-colour", "teal"], "--overlay-colour: \"teal\" is not a colour"),
                             (["--overlay-size", "2"], "--overlay-size: 2 is outside 8…256"),
                             (["--overlay-background", "shadow"], "--overlay-background: \"shadow\" is not allowed"),
                             (["--overlay-font", "/nonexistent.ttf"], "--overlay-font: cannot read /nonexistent.ttf")] {
            let run = try runProgram(obscura, ["record", "--camera", "synthetic", "--duration", "1", "--overlay", "--output", "/tmp/x.mp4"] + args)
            #expect(run.status != 0 && run.stderr.contains(says), "\(args): \(run.stderr)")
        }
    }

    @Test func theServiceReadsItsOverlayAndNamesABadKey() throws {
        let c = try ServiceConfiguration.parsing("[overlay]\nenabled = true\ntext = \"Gate 3\"\nposition = \"bottom-right\"\nsize = 20\ncolour = \"#ffff00\"\nbackground = \"outline\"\n")
        #expect(c.overlay?.text == "Gate 3" && c.overlay?.position == .bottomRight && c.overlay?.size == 20)
        #expect(c.overlay?.colour == RGB(red: 255, green: 255, blue: 0) && c.overlay?.background == .outline && c.overlayCameraName)
        #expect(try ServiceConfiguration.parsing("[overlay]\nenabled = false\ntext = \"x\"\n").overlay == nil)
        #expect(try ServiceConfiguration(contentsOf: packageRoot + "/deploy/obscura.toml").overlay == nil)
        for (text, key, start) in [
            ("[overlay]\nenabled = true\nposition = \"middle\"\n", "overlay.position", "\"middle\" is not allowed"),
            ("[overlay]\nenabled = true\nsize = 3\n", "overlay.size", "3 is not 0"),
            ("[overlay]\nenabled = true\ncolour = \"teal\"\n", "overlay.colour", "\"teal\" is not a colour"),
            ("[overlay]\nenabled = true\nbackground = \"shadow\"\n", "overlay.background", "\"shadow\" is not allowed"),
            ("[overlay]\nenabled = true\nfont = \"/nonexistent.ttf\"\n", "overlay.font", "cannot read /nonexistent.ttf"),
            ("[overlay]\nshadow = true\n", "overlay.shadow", ""),
        ] {
            do {
                _ = try ServiceConfiguration.parsing(text)
                Issue.record("accepted: \(text)")
            } catch {
                #expect(error.key == key && error.message.hasPrefix(start), "\(error)")
            }
        }
    }
}
