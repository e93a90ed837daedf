import Foundation
import ObscuraOverlay
import Testing
import TestSupport

extension VirtualBoardTests {
/// The burned-in caption on vimc's frames (BGR888 through libcamera), both
/// ways to the encoder: libx264, and vicodec's V4L2 memory-to-memory encoder
/// (the frames imported by dmabuf). Every frame is decoded on the test
/// machine — the H.264 file by FFmpeg, the FWHT stream by vicodec's decoder
/// on the board — and its caption compared with the renderer's own for the
/// second that frame's timestamp falls in.
@Suite struct OverlayBoardTests {
    @Test func vimcFramesCarryTheirOwnSecondThroughBothEncoders() throws {
        let folder = try SharedFolder("overlay-board")
        let result = try VirtualBoard.run(scenario: "Overlay/vimcFramesCarryTheirOwnSecondThroughBothEncoders", [folder.relative], timeout: 300)
        #expect(result.status == 0, "\(result.stdout)\(result.stderr)")
        let lines = result.stdout.split(separator: "\n").map(String.init)
        #expect(lines.contains("sw-rc=0") && lines.contains("hw-rc=0") && lines.contains("decode-rc=0"), "\(result.stdout)")
        for (name, size) in [("sw", (636, 480)), ("hw", (648, 480))] {
            let said = try String(contentsOfFile: "\(folder.path)/\(name).log", encoding: .utf8)
                + String(contentsOfFile: "\(folder.path)/\(name).out", encoding: .utf8)
            let zero = try #require(OverlayCheck.wallZero(in: said), "\(name): \(said)")
            var settings = OverlaySettings()
            settings.text = "Gate 3"
            let camera: String = try #require(OverlayCheck.cameraName(in: said), "\(said)")
            settings.cameraName = camera
            // The board's clock zone is UTC, as the caption's is there.
            settings.timeZone = TimeZone(identifier: "UTC")!
            let frames = name == "sw"
                ? try OverlayCheck.check(file: "\(folder.path)/sw.mp4", size: size, settings: settings, wallZero: zero)
                : try OverlayCheck.check(rgb24: "\(folder.path)/hw.rgb", timestamps: "\(folder.path)/hw.txt", size: size, settings: settings, wallZero: zero)
            for f in frames where !f.right {
                Issue.record("\(name) frame \(f.index) at \(f.time) s: \(f.expected) from its own second's caption, \(f.other) from the other's")
            }
            let run = OverlayCheck.longestRightRunAcrossASecond(frames, wallZero: zero)
            // Every frame of the four seconds is right, in one run that
            // crosses a second (however many frames the camera gave).
            #expect(frames.count >= 2 && run == frames.count, "\(name): \(frames.count) frames, longest right run across a second \(run)")
            #expect(said.contains("on copies of 0"), "\(name): the recorder was the frames' only output: \(said)")
            print("OverlayBoardTests \(name): \(frames.count) frames right, \(run) in a row across a second; \(said.split(separator: "\n").first { $0.contains("overlay:") } ?? "")")
        }
    }

    /// The preview shows the caption when asked, and not otherwise: vkms's
    /// screen read back through its writeback connector.
    @Test func thePreviewShowsTheCaptionOnlyWhenAsked() throws {
        let folder = try SharedFolder("overlay-preview")
        let result = try VirtualBoard.run(scenario: "Overlay/thePreviewShowsTheCaptionOnlyWhenAsked", [folder.relative], timeout: 240)
        #expect(result.stdout.contains("caption-rc=0") && result.stdout.contains("plain-rc=0"), "\(result.stdout)\(result.stderr)")
        // The caption's box on the screen: where the renderer puts it in a
        // 636x480 frame, stretched to the screen.
        let said = try String(contentsOfFile: folder.path + "/caption.out", encoding: .utf8)
        var settings = OverlaySettings()
        settings.text = "Gate 3"
        let name: String = try #require(OverlayCheck.cameraName(in: said), "\(said)")
        settings.cameraName = name
        let renderer = try OverlayRenderer(settings: settings, frameSize: .init(width: 636, height: 480))
        let box = renderer.region(at: Date())
        func fractions(_ file: String) throws -> (dark: Double, bright: Double) {
            let data = try [UInt8](Data(contentsOf: URL(fileURLWithPath: file)))
            // PPM: "P6\nW H\n255\n" then RGB.
            let header = String(decoding: data.prefix(20), as: UTF8.self).split(whereSeparator: { $0 == "\n" || $0 == " " })
            let (w, h) = (Int(header[1])!, Int(header[2])!)
            let start = data.count - w * h * 3
            let sx = Double(w) / 636, sy = Double(h) / 480
            var dark = 0, bright = 0, n = 0
            for y in Int(Double(box.y) * sy + 2)..<Int(Double(box.y + box.height) * sy - 2) {
                for x in Int(Double(box.x) * sx + 2)..<Int(Double(box.x + box.width) * sx - 2) {
                    let p = start + (y * w + x) * 3
                    let (r, g, b) = (Int(data[p]), Int(data[p + 1]), Int(data[p + 2]))
                    if r < 48 && g < 48 && b < 48 { dark += 1 }
                    if r > 180 && g > 180 && b > 180 { bright += 1 }
                    n += 1
                }
            }
            return (Double(dark) / Double(n), Double(bright) / Double(n))
        }
        let caption = try fractions(folder.path + "/caption.ppm")
        let plain = try fractions(folder.path + "/plain.ppm")
        // A black box with white text; vimc's picture there otherwise.
        #expect(caption.dark > 0.5 && caption.bright > 0.05, "with the caption: \(caption)")
        #expect(plain.dark < 0.35 && caption.dark - plain.dark > 0.4, "without: \(plain)")
        print("OverlayBoardTests preview: the caption's box \(box) is \(Int(caption.dark * 100))% dark, \(Int(caption.bright * 100))% bright with it; \(Int(plain.dark * 100))% dark without")
    }
}
}
