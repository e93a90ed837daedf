import CCamera
import Foundation
import Testing
@testable import ObscuraCamera

/// The choice of camera shim for the installed libcamera, from what a system
/// has, and the survey and loader on this machine's real files.
@Suite struct CameraLibraryTests {
    private func lib(_ version: String) -> InstalledLibcamera {
        InstalledLibcamera(soname: "libcamera.so.\(version)", path: "/usr/lib/aarch64-linux-gnu/libcamera.so.\(version)")
    }

    private func shims(_ versions: String...) -> [CameraShimFile] {
        versions.map { CameraShimFile(path: "/usr/lib/obscura/camera/libobscura-camera.so.\($0)", libcamera: "libcamera.so.\($0)") }
    }

    private func survey(_ installed: [String], ipa: [String], shims: [CameraShimFile]) -> CameraLibrary.Survey {
        CameraLibrary.Survey(installed: installed.map(lib), ipaLibcameras: Set(ipa.map { "libcamera.so.\($0)" }),
                             shims: shims, shimFolders: ["/usr/lib/obscura/camera"],
                             libraryFolders: ["/usr/lib/aarch64-linux-gnu"])
    }

    @Test func anUpgradeIsFollowedToTheLibcameraWhoseIPAModulesAreInstalled() throws {
        // libcamera-ipa 0.7.1 installed, libcamera0.4 left behind.
        let layer = try CameraLibrary.choose(survey(["0.4", "0.7"], ipa: ["0.7"], shims: shims("0.4", "0.5", "0.7"))).get()
        #expect(layer.libcamera.soname == "libcamera.so.0.7")
        #expect(layer.shim == "/usr/lib/obscura/camera/libobscura-camera.so.0.7")
        #expect(layer.warning == nil)
    }

    @Test func goingBackFollowsTheIPAModulesNotTheNewestLibrary() throws {
        // libcamera-ipa 0.4 reinstalled, libcamera0.7 still there.
        let layer = try CameraLibrary.choose(survey(["0.7", "0.4"], ipa: ["0.4"], shims: shims("0.4", "0.7"))).get()
        #expect(layer.libcamera.soname == "libcamera.so.0.4")
    }

    @Test func withoutIPAModulesTheNewestWithAShimIsTakenAndTheJournalIsWarned() throws {
        let layer = try CameraLibrary.choose(survey(["0.4", "0.7"], ipa: [], shims: shims("0.4", "0.7"))).get()
        #expect(layer.libcamera.soname == "libcamera.so.0.7")
        #expect(layer.warning?.contains("no IPA modules are installed for libcamera 0.7") == true)
        // IPA modules of a libcamera this build has no shim for: an older one
        // it has a shim for still drives cameras that need no IPA (USB).
        let older = try CameraLibrary.choose(survey(["0.8", "0.4"], ipa: ["0.8"], shims: shims("0.4"))).get()
        #expect(older.libcamera.soname == "libcamera.so.0.4")
        #expect(older.warning?.contains("the IPA modules installed are libcamera 0.8's, not 0.4's") == true)
    }

    @Test func aLibcameraWithNoShimIsNamedWithWhatThisBuildSupports() {
        let result = CameraLibrary.choose(survey(["0.8"], ipa: ["0.8"], shims: shims("0.7", "0.4", "0.5")))
        guard case .failure(let error) = result else {
            Issue.record("expected no shim, got \(result)")
            return
        }
        #expect(error.description == "libcamera 0.8 (/usr/lib/aarch64-linux-gnu/libcamera.so.0.8) is installed; "
            + "this build has shims for 0.4, 0.5, 0.7 (in /usr/lib/obscura/camera): install one of those libcamera "
            + "versions (with its libcamera-ipa), or an Obscura built for 0.8")
        guard case .failure(let none) = CameraLibrary.choose(survey([], ipa: [], shims: shims("0.4"))) else {
            Issue.record("expected no libcamera")
            return
        }
        #expect(none.description.hasPrefix("no libcamera is installed (no libcamera.so.* in /usr/lib/aarch64-linux-gnu)"))
    }

    @Test func versionsCompareAsNumbers() {
        #expect(CameraLibrary.isNewer("libcamera.so.0.10", than: "libcamera.so.0.7"))
        #expect(CameraLibrary.isNewer("libcamera.so.0.3", than: "libcamera.so.0.0.3"))
        #expect(!CameraLibrary.isNewer("libcamera.so.0.4", than: "libcamera.so.0.4"))
        #expect(!CameraLibrary.isNewer("libcamera.so.0.4", than: "libcamera.so.0.5"))
        #expect(CameraLibrary.list(["0.7", "0.10", "0.0.3", "0.5"]) == "0.0.3, 0.5, 0.7, 0.10")
    }

    /// This machine: its libcamera (installed with the build's dependencies),
    /// the IPA modules beside it, and the shim `swift build` made beside this
    /// test bundle, read from the files themselves.
    @Test func thisMachinesLibcameraAndTheBuildsShimAreFoundInTheirFiles() throws {
        let survey = CameraLibrary.survey()
        let installed = try #require(survey.installed.first, "no libcamera found in \(survey.libraryFolders)")
        #expect(survey.ipaLibcameras.contains(installed.soname), "libcamera-ipa is installed with the build's dependencies")
        let layer = try CameraLibrary.choose(survey).get()
        #expect(layer.libcamera == installed)
        let shim = try #require(try ELFDependencies.read(layer.shim))
        #expect(shim.needed.contains(installed.soname))
        #expect(shim.machine == ELFDependencies.hostMachine)
        // A file that is not ELF is no library.
        let text = FileManager.default.temporaryDirectory.appendingPathComponent("not-elf-\(getpid())").path
        try "libcamera.so.0.4".write(toFile: text, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: text) }
        #expect(try ELFDependencies.read(text) == nil)
    }

    @Test func theLoaderRefusesALibraryThatIsNoShimAndNamesAMissingOne() {
        var message = [CChar](repeating: 0, count: 512)
        #expect(oc_shim_open("libc.so.6", &message, message.count) == -ENOEXEC)
        #expect(Self.text(message) == "dlsym(libc.so.6): no obscura_camera_shim entry: not an Obscura camera shim")
        #expect(oc_shim_open("/nonexistent/libobscura-camera.so.0.9", &message, message.count) == -ENOENT)
        #expect(Self.text(message).hasPrefix("dlopen(/nonexistent/libobscura-camera.so.0.9): "))
    }

    /// The loader's message: the bytes before its terminating NUL.
    private static func text(_ message: [CChar]) -> String {
        String(decoding: message.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
