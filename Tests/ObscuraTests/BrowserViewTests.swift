import Foundation
import TestSupport
import Testing
import ObscuraSystem
@testable import ObscuraService
#if canImport(Glibc)
import Glibc
#endif

/// `obscura view --browser`: the live view in a page on 127.0.0.1, played
/// by a real headless Chromium (Debian's package) with WebCodecs; the page
/// says what it shows. Requests naming another host are refused.
@Suite(.serialized) struct BrowserViewTests {
    static let chromium = ["/usr/bin/chromium", "/usr/bin/chromium-browser"].first { FileManager.default.isExecutableFile(atPath: $0) }

    @Test func aHeadlessChromiumShowsTheLiveViewDecodedInItsPage() throws {
        guard let chromium = Self.chromium else {
            // CI installs it (deploy/install-dependencies); here, say why not.
            #expect(!VirtualBoard.isCI, "chromium is not installed (Debian's package chromium)")
            print("BrowserViewTests: skipped: chromium is not installed (Debian's package chromium)")
            return
        }
        let dir = try scratchForBuiltObscura("obscura-browser")
        let service = try PatternService(in: dir.path)
        defer { if service.process.isRunning { service.process.terminate() } }
        _ = waitUntilBlocking(within: .seconds(30), every: .milliseconds(50)) { (try? ControlClient.send("status", to: service.socket)) != nil }
        let said = dir.path + "/view.err"
        FileManager.default.createFile(atPath: said, contents: nil)
        let viewer = Process()
        viewer.executableURL = URL(fileURLWithPath: builtObscura)
        viewer.arguments = ["view", "--local", dir.path + "/live.sock", "--browser", "--seconds", "120"]
        viewer.standardError = try FileHandle(forWritingTo: URL(fileURLWithPath: said))
        try viewer.run()
        defer { if viewer.isRunning { viewer.terminate() } }
        func lines() -> [String] { ((try? String(contentsOfFile: said, encoding: .utf8)) ?? "").split(separator: "\n").map(String.init) }
        try #require(waitUntilBlocking(within: .seconds(30), every: .milliseconds(50)) { lines().contains { $0.contains("http://127.0.0.1:") } },
                     "\(lines())")
        let announced = try #require(lines().first { $0.contains("http://127.0.0.1:") })
        let url = try #require(announced.split(separator: " ").first { $0.hasPrefix("http://127.0.0.1:") }).description
        // Another host name (a page elsewhere, by DNS rebinding) is refused.
        let port = url.dropFirst("http://127.0.0.1:".count).prefix { $0.isNumber }
        let rebound = try runProgram("curl", ["-s", "-o", "/dev/null", "-w", "%{http_code}", "-H", "Host: elsewhere.example:\(port)", url])
        #expect(rebound.stdout == "403", "\(rebound.stdout)")
        let browser = Process()
        browser.executableURL = URL(fileURLWithPath: chromium)
        browser.arguments = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--user-data-dir=\(dir.path)/chromium", url]
        browser.standardOutput = FileHandle.nullDevice
        browser.standardError = FileHandle.nullDevice
        try browser.run()
        defer { if browser.isRunning { browser.terminate(); browser.waitUntilExit() } }
        // The page reports when it has shown ten frames, or why it cannot.
        let reported = waitUntilBlocking(within: .seconds(90), every: .milliseconds(100)) { lines().contains { $0.contains("browser: ") } }
        let report = lines().first { $0.contains("browser: ") } ?? "nothing reported: \(lines())"
        try #require(reported, "\(report)")
        #expect(report.contains("decoded=10 width=320 height=240"), "\(report)")
        // The test pattern's mean level (a ramp from 64 to 191), not black.
        let mean = report.components(separatedBy: "mean=").last.flatMap { Int($0.prefix { $0.isNumber }) } ?? 0
        #expect((90...170).contains(mean), "\(report)")
        viewer.terminate()
        viewer.waitUntilExit()
    }
}
