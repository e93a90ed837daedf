import Foundation
import Testing
import TestSupport
import ObscuraFormats
import ObscuraMedia
@testable import ObscuraService

/// AVFoundation's `hardwareCost`, before anything starts: a configuration's
/// need of the board's encoder, CPU and buffer memory against the profile's
/// budget, refused over 1.0 with what would fit.
@Suite struct HardwareCostTests {
    let obscura = packageRoot + "/.build/debug/obscura"
    let profiles = packageRoot + "/board/profiles"

    func profile(_ name: String) throws -> BoardProfile { try BoardProfile(contentsOf: "\(profiles)/\(name).toml") }

    func configuration(_ text: String) throws -> ServiceConfiguration {
        try ServiceConfiguration(reading: TOMLReader(TOMLDocument(file: "c.toml", text: text)), file: "c.toml")
    }

    func demand(_ name: String, _ size: String, _ rate: Double, on p: BoardProfile) throws -> CameraDemand {
        var d = CameraDemand(configuration: ServiceConfiguration(), profile: p)
        d.name = name
        d.size = try #require(PixelSize(parsing: size))
        d.frameRate = rate
        return d
    }

    /// One camera as each shipped profile records it fits its board: the
    /// one-camera kiosk starts as it did.
    @Test(arguments: ["pi4b", "pi5", "zero2w", "usb-uvc"])
    func everyProfilesOwnCameraFits(_ name: String) throws {
        let p = try profile(name)
        let cost = try #require(p.cost(of: ServiceConfiguration()), "\(name) has no [budget]")
        #expect(cost.fits && cost.cost > 0, "\(name): \(cost.lines)")
        #expect(cost.cameras.count == 1 && cost.cameras[0].encoder == (p.encoders.first == "v4l2m2m" ? "v4l2m2m" : "libx264"))
    }

    /// Two 1080p30 cameras on a Pi 4's hardware encoder need twice what it
    /// has: refused, naming the encoder, and what would fit.
    @Test func twoFullHDCamerasOnAPi4AreRefusedWithWhatWouldFit() throws {
        let p = try profile("pi4b"), budget = try #require(p.budget)
        let cost = HardwareCost([try demand("counter", "1920x1080", 30, on: p), try demand("room", "1920x1080", 30, on: p)], budget: budget)
        #expect(!cost.fits && cost.encoderShare > 1.9 && cost.encoderShare < 2.1, "\(cost.lines)")
        #expect(cost.overages == ["the hardware encoder: 125.3 Mpixel/s of its 62.9"], "\(cost.overages)")
        #expect(cost.remedies.contains("every camera at 1280x720"), "\(cost.remedies)")
        #expect(cost.remedies.contains("15 frames a second"), "\(cost.remedies)")
        #expect(cost.remedies.contains("camera counter in software (libx264)"), "\(cost.remedies)")
        #expect(cost.remedies.contains("without camera room"), "\(cost.remedies)")
        // Each remedy, taken, fits.
        var moved = [try demand("counter", "1920x1080", 30, on: p), try demand("room", "1920x1080", 30, on: p)]
        moved[0].encoders = ["libx264"]
        let after = HardwareCost(moved, budget: budget)
        #expect(after.fits && after.cameras.map(\.encoder) == ["libx264", "v4l2m2m"], "\(after.lines)")
        #expect(cost.refusal.hasPrefix("over the board's budget (cost 1.99): the hardware encoder: 125.3 Mpixel/s of its 62.9. Would fit: "),
                "\(cost.refusal)")
    }

    /// A Pi 5 has no hardware encoder: five 1080p30 cameras need more of
    /// its cores than the recorder is given.
    @Test func softwareEncodingOverTheCoresIsRefused() throws {
        let p = try profile("pi5"), budget = try #require(p.budget)
        let five = try (1...5).map { try demand("c\($0)", "1920x1080", 30, on: p) }
        let cost = HardwareCost(five, budget: budget)
        let perCamera = try #require(budget.softwareMillisecondsPerMegapixel["libx264"]?["ultrafast"]) * 1920 * 1080 / 1e6 * 30 / 1000
        #expect(abs(cost.cores - 5 * perCamera) < 1e-9 && cost.cores > budget.cores, "\(cost.lines)")
        #expect(cost.overages.contains { $0.hasPrefix("CPU: 3.73 cores of the 3.00") }, "\(cost.overages)")
        #expect(cost.overages.contains { $0.hasPrefix("buffer memory: ") }, "\(cost.overages)")
        // Each camera's pipeline keeps 60 MiB: no size or rate brings five within 256 MiB; three fit.
        #expect(cost.remedies == ["without cameras c4, c5"], "\(cost.remedies)")
    }

    /// An encoder the profile has no figure for is said, not guessed.
    @Test func aCodecWithoutAMeasuredFigureIsSaidNotGuessed() throws {
        let cost = try #require(try profile("pi5").cost(of: configuration("[recording]\ncodec = \"hevc\"\n")))
        #expect(cost.lines[0].contains("libx265, no measured CPU figure for libx265 at ultrafast on this board"), "\(cost.lines)")
        #expect(cost.fits)
    }

    /// `obscura config --check` prints the prediction; over budget it fails,
    /// naming what does not fit and what would. `obscura run` refuses the
    /// same file before it opens a camera, and the doctor's check fails.
    @Test func theCheckAndTheStartRefuseAConfigurationOverBudget() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("obscura-cost-\(getpid())").path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let good = dir + "/good.toml", over = dir + "/over.toml"
        try "board = \"pi4b\"\n".write(toFile: good, atomically: true, encoding: .utf8)
        try "board = \"pi4b\"\n[recording]\nsize = \"1920x1080\"\nframe_rate = 60\n".write(toFile: over, atomically: true, encoding: .utf8)
        let fine = try runProgram(obscura, ["config", "--check", good])
        #expect(fine.status == 0 && fine.stdout.contains("the camera: v4l2m2m, 0.00 cores, 100 % of the hardware encoder"), "\(fine.stdout)\(fine.stderr)")
        #expect(fine.stdout.contains("total: cost 1.00 (1.00 is all the board has)"), "\(fine.stdout)")
        let refused = try runProgram(obscura, ["config", "--check", over])
        #expect(refused.status != 0, "\(refused.stdout)")
        #expect(refused.stderr.contains("\(over): over the board's budget (cost 1.99): the hardware encoder: 125.3 Mpixel/s of its 62.9. Would fit: 1280x720; or 30 frames a second"),
                "\(refused.stderr)")
        // (Bounded: a service that was not refused would run on.)
        let started = try runProgram("timeout", ["60", obscura, "run", "--config", over])
        #expect(started.status != 0 && started.stderr.contains("over the board's budget (cost 1.99)"), "\(started.stdout)\(started.stderr)")
        // The doctor says so too, as a failed check of its own.
        let doctor = try runProgram(obscura, ["doctor", "--json", "--config", over])
        struct Report: Decodable { struct Check: Decodable { let name, outcome, detail: String }; let checks: [Check] }
        let budget = try JSONDecoder().decode(Report.self, from: Data(doctor.stdout.utf8)).checks.first { $0.name == "budget" }
        #expect(budget?.outcome == "fail" && budget?.detail.contains("the service refuses to start") == true, "\(doctor.stdout)")
        let fits = try runProgram(obscura, ["doctor", "--json", "--config", good])
        let passed = try JSONDecoder().decode(Report.self, from: Data(fits.stdout.utf8)).checks.first { $0.name == "budget" }
        #expect(passed?.outcome == "pass" && passed?.detail.hasPrefix("total: cost 1.00") == true, "\(fits.stdout)")
    }

    /// A wrong value in a profile's [budget] names the file, line and key.
    @Test func aWrongBudgetValueIsNamed() throws {
        let text = "[board]\nname = \"x\"\n[budget]\nencoder_max_size = \"big\"\n"
        let error = try #require(thrown { _ = try BoardProfile(reading: TOMLReader(TOMLDocument(file: "p.toml", text: text)), file: "p.toml") })
        #expect("\(error)" == "p.toml:4: budget.encoder_max_size: \"big\" is not a size; write WIDTHxHEIGHT, e.g. 1920x1080", "\(error)")
        let unknown = try #require(thrown {
            _ = try BoardProfile(reading: TOMLReader(TOMLDocument(file: "p.toml", text: "[board]\nname = \"x\"\n[budget]\ncpus = 4\n")), file: "p.toml")
        })
        #expect("\(unknown)".contains("budget.cpus"), "\(unknown)")
    }
}
