import Foundation
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

    func record(_ name: String, _ extra: [String]) throws -> (file: String, said: String) {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("obscura-overlay-\(getpid())").path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        let file = dir + "/" + name
        unlink(file)
        let run = try runProgram(obscura, ["record", "--camera", "synthetic", "--size", "640x480", "--duration", "3",
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
        #expect(frames.count >= 85, "\(frames.count) frames")
        for f in frames where !f.right {
            Issue.record("frame \(f.index) at \(f.time) s: \(f.expected) from its own second's caption, \(f.other) from the other's")
        }
        #expect(OverlayCheck.longestRightRunAcrossASecond(frames, wallZero: zero) >= 30)
        let worst = frames.map(\.expected).max() ?? 0
        let margin = frames.map { $0.other - $0.expected }.min() ?? 0
        print(String(format: "OverlayTests: %d frames right; worst %.1f from the right caption, closest other second %.1f further", frames.count, worst, margin))
    }

    @Test func aFrameAnotherOutputReadsIsCopiedAndCounted() throws {
        // A preview (headless here) reads the same frames: the caption goes
        // on a copy, one per frame, and is just as right.
        let (file, said) = try record("shared.mp4", ["--preview"])
        #expect(said.contains("drawn in place on 0 frames"), "\(said)")
        #expect(said.contains("CPU copies per frame 1.0"), "\(said)")
        let zero = try #require(OverlayCheck.wallZero(in: said), "\(said)")
        let frames = try OverlayCheck.check(file: file, size: (640, 480), settings: settings, wallZero: zero)
        #expect(frames.allSatisfy(\.right) && frames.count >= 85)
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
        func configuration(_ text: String) throws(ConfigurationError) -> ServiceConfiguration {
            try ServiceConfiguration(reading: TOMLReader(try TOMLDocument(file: "obscura.toml", text: text)), file: "obscura.toml")
        }
        let c = try configuration("[overlay]\nenabled = true\ntext = \"Gate 3\"\nposition = \"bottom-right\"\nsize = 20\ncolour = \"#ffff00\"\nbackground = \"outline\"\n")
        #expect(c.overlay?.text == "Gate 3" && c.overlay?.position == .bottomRight && c.overlay?.size == 20)
        #expect(c.overlay?.colour == RGB(red: 255, green: 255, blue: 0) && c.overlay?.background == .outline && c.overlayCameraName)
        #expect(try configuration("[overlay]\nenabled = false\ntext = \"x\"\n").overlay == nil)
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
                _ = try configuration(text)
                Issue.record("accepted: \(text)")
            } catch {
                #expect(error.key == key && error.message.hasPrefix(start), "\(error)")
            }
        }
    }
}
