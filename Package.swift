// swift-tools-version: 6.0
import PackageDescription

// Modules follow the data flow: C shims and system libraries at the bottom,
// then the system layer (fds, mmap, errors), media types (no C), the camera,
// encoding, muxing, GPIO, and the `obscura` executable on top.
let package = Package(
    name: "Obscura",
    platforms: [.macOS(.v14)],
    products: [
        .executable(name: "obscura", targets: ["obscura"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.5.0"),
    ],
    targets: [
        // System libraries, found through pkg-config.
        .systemLibrary(name: "CLibCamera", pkgConfig: "libcamera",
                       providers: [.apt(["libcamera-dev"])]),
        .systemLibrary(name: "CLibDRM", pkgConfig: "libdrm",
                       providers: [.apt(["libdrm-dev"])]),
        .systemLibrary(name: "CFFmpeg", pkgConfig: "libavformat",
                       providers: [.apt(["libavcodec-dev", "libavformat-dev", "libavutil-dev", "libswscale-dev"])]),
        .systemLibrary(name: "CNettle", pkgConfig: "nettle",
                       providers: [.apt(["nettle-dev"])]),
        .systemLibrary(name: "CALSA", pkgConfig: "alsa",
                       providers: [.apt(["libasound2-dev"])]),
        .systemLibrary(name: "CLibGPIOD", pkgConfig: "libgpiod",
                       providers: [.apt(["libgpiod-dev"])]),

        // Thin shims exposing plain C headers.
        .target(name: "CCamera", dependencies: ["CLibCamera"]),
        .target(name: "CGPIO", dependencies: ["CLibGPIOD"]),
        .target(name: "CSystem"),
        // toml++ (Debian's libtomlplusplus-dev), compiled in header-only: no library at run time.
        .target(name: "CTOML"),
        .target(name: "CV4L2"),
        .target(name: "CImage", linkerSettings: [.linkedLibrary("jpeg"), .linkedLibrary("exif"), .linkedLibrary("tiff")]),

        // Swift modules.
        .target(name: "ObscuraSystem", dependencies: ["CSystem"]),
        .target(name: "ObscuraMedia", dependencies: ["ObscuraSystem"]),
        .target(name: "ObscuraCamera", dependencies: ["CCamera", "ObscuraMedia", "ObscuraSystem"]),
        .target(name: "ObscuraEncoding", dependencies: ["CFFmpeg", "CV4L2", "ObscuraMedia", "ObscuraSystem"]),
        .target(name: "ObscuraMuxing", dependencies: ["CFFmpeg", "CNettle", "ObscuraEncoding", "ObscuraMedia", "ObscuraSystem"]),
        .target(name: "ObscuraAudio", dependencies: ["CALSA", "ObscuraMedia", "ObscuraSystem"]),
        .target(name: "ObscuraGPIO", dependencies: ["CGPIO", "ObscuraSystem"]),
        .target(name: "ObscuraCapture", dependencies: ["ObscuraAudio", "ObscuraCamera", "ObscuraEncoding", "ObscuraMedia", "ObscuraSystem"]),
        .target(name: "ObscuraRecording", dependencies: ["ObscuraCapture", "ObscuraEncoding", "ObscuraMuxing", "ObscuraMedia", "ObscuraSystem"]),
        .target(name: "ObscuraPhoto", dependencies: ["CImage", "CV4L2", "ObscuraCapture", "ObscuraEncoding", "ObscuraMedia", "ObscuraSystem"]),
        .target(name: "ObscuraPreview", dependencies: ["CLibDRM", "CFFmpeg", "ObscuraCapture", "ObscuraEncoding", "ObscuraMedia", "ObscuraSystem"]),
        .target(name: "ObscuraService", dependencies: ["CTOML", .product(name: "Logging", package: "swift-log"), "ObscuraAudio", "ObscuraPhoto", "ObscuraPreview", "ObscuraCapture", "ObscuraRecording", "ObscuraGPIO", "ObscuraMedia", "ObscuraSystem"]),
        .target(name: "ObscuraRetrieval", dependencies: ["ObscuraMuxing", "ObscuraSystem"]),
        .executableTarget(name: "obscura", dependencies: [
            "ObscuraRetrieval", "ObscuraAudio",
            "ObscuraRecording", "ObscuraCapture", "ObscuraCamera", "ObscuraEncoding", "ObscuraMuxing", "ObscuraGPIO", "ObscuraMedia", "ObscuraService", "ObscuraPhoto", "ObscuraPreview",
            .product(name: "ArgumentParser", package: "swift-argument-parser"),
            .product(name: "Logging", package: "swift-log"),
        ]),

        .target(name: "TestSupport", path: "Tests/TestSupport"),
        .testTarget(name: "ObscuraTests", dependencies: [
            "TestSupport", "ObscuraSystem", "ObscuraCapture", "ObscuraRecording", "ObscuraMedia", "ObscuraCamera", "ObscuraEncoding", "ObscuraMuxing", "ObscuraGPIO", "ObscuraService", "ObscuraPhoto", "ObscuraPreview", "ObscuraRetrieval", "ObscuraAudio",
            .product(name: "Logging", package: "swift-log"),
        ]),
        .testTarget(name: "BoardTests", dependencies: ["TestSupport"]),
    ],
    swiftLanguageModes: [.v6],
    cxxLanguageStandard: .cxx17
)
