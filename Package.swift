// swift-tools-version: 6.0
import PackageDescription

// Logging: swift-log, whose manifest needs tools 6.2. Debian 13's own Swift
// (swiftlang 6.0.3) cannot read it; there, a module of the same name with the
// part of swift-log's API Obscura uses (Sources/LoggingStandIn) takes its place.
#if compiler(>=6.2)
let loggingPackages: [Package.Dependency] = [.package(url: "https://github.com/apple/swift-log", from: "1.16.2")]
let logging: Target.Dependency = .product(name: "Logging", package: "swift-log")
let loggingTargets: [Target] = []
#else
let loggingPackages: [Package.Dependency] = []
let logging: Target.Dependency = "Logging"
let loggingTargets: [Target] = [.target(name: "Logging", path: "Sources/LoggingStandIn")]
#endif

// Modules follow the data flow: C shims and system libraries at the bottom,
// then the system layer (fds, mmap, errors), media types (no C), the camera,
// encoding, muxing, GPIO, and the `obscura` executable on top.
let package = Package(
    name: "Obscura",
    platforms: [.macOS(.v14)],
    products: [
        // The owner's command: light (no FFmpeg, libcamera or ICU), it runs
        // what only talks to the service itself and hands the rest to the engine.
        .executable(name: "obscura", targets: ["obscura"]),
        .executable(name: "obscura-engine", targets: ["obscura-engine"]),
        // The camera shim for this machine's libcamera, opened by the program
        // at run time (Sources/CCamera/include/obscura_camera_shim.h);
        // deploy/build-camera-shims builds it for every other libcamera.
        .library(name: "obscura-camera", type: .dynamic, targets: ["CCameraShim"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
    ] + loggingPackages,
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
        // Its SHA-256 alone (libnettle, not libhogweed and GMP): for the light modules.
        .systemLibrary(name: "CNettleHash", pkgConfig: "nettle", providers: [.apt(["nettle-dev"])]),
        .systemLibrary(name: "CFreeType", pkgConfig: "freetype2",
                       providers: [.apt(["libfreetype-dev"])]),
        .systemLibrary(name: "CALSA", pkgConfig: "alsa",
                       providers: [.apt(["libasound2-dev"])]),
        .systemLibrary(name: "CLibGPIOD", pkgConfig: "libgpiod",
                       providers: [.apt(["libgpiod-dev"])]),

        // Thin shims exposing plain C headers.
        // CCamera: the program's side (loader.c), linking no libcamera;
        // CCameraShim: camera.cpp, the only code that includes libcamera.
        .target(name: "CCamera", linkerSettings: [.linkedLibrary("dl")]),
        // (its include/ is CCamera's, by a symbolic link).
        .target(name: "CCameraShim", dependencies: ["CLibCamera"]),
        .target(name: "CGPIO", dependencies: ["CLibGPIOD"]),
        .target(name: "CSystem"),
        // toml++ (Debian's libtomlplusplus-dev), compiled in header-only: no library at run time.
        .target(name: "CTOML"),
        .target(name: "CV4L2"),
        .target(name: "CImage", linkerSettings: [.linkedLibrary("jpeg"), .linkedLibrary("exif"), .linkedLibrary("tiff")]),

        // Swift modules.
        // Light modules (FoundationEssentials at most: no ICU), which the
        // `obscura` front links: the system layer, TOML, the service's
        // control socket and status, the configuration and the board
        // profiles, the doctor's checks that need no camera, and the front's
        // own commands.
        .target(name: "ObscuraSystem", dependencies: ["CSystem"]),
        .target(name: "ObscuraTOML", dependencies: ["CTOML", "ObscuraSystem"]),
        .target(name: "ObscuraControl", dependencies: ["ObscuraTOML", "ObscuraSystem"]),
        // What the configuration says, with its vocabulary (codecs,
        // containers, the caption, age recipients, GPIO line names): the
        // heavy modules that act on it re-export it.
        .target(name: "ObscuraSettings", dependencies: ["ObscuraControl", "ObscuraHealth", "ObscuraMedia", "ObscuraSystem", "ObscuraTOML"]),
        // `obscura doctor`'s checks that need no camera, and its report.
        .target(name: "ObscuraDoctor", dependencies: ["ObscuraControl", "ObscuraFiles", "ObscuraSettings", "ObscuraSystem"]),
        // Who may fetch recordings or watch (authorized keys, the view account).
        .target(name: "ObscuraAccess", dependencies: ["ObscuraFiles", "ObscuraSystem"]),
        .target(name: "ObscuraCommandLine", dependencies: [
            "ObscuraAccess", "ObscuraControl", "ObscuraSettings", "ObscuraSystem", .product(name: "ArgumentParser", package: "swift-argument-parser"),
        ]),
        .target(name: "ObscuraMedia", dependencies: ["ObscuraSystem"]),
        .target(name: "ObscuraCamera", dependencies: ["CCamera", "ObscuraMedia", "ObscuraSystem"]),
        // FFmpeg's errors and logging, and what its encoders hand its muxers
        // (packets, codec parameters): below conversion, encoding and muxing.
        .target(name: "ObscuraFFmpeg", dependencies: ["CFFmpeg"]),
        // Pixel conversion (swscale): what capture and encoding both need,
        // so that capture does not depend on encoding.
        .target(name: "ObscuraConversion", dependencies: ["CFFmpeg", "ObscuraFFmpeg", "ObscuraMedia", "ObscuraSystem"]),
        .target(name: "ObscuraEncoding", dependencies: ["CFFmpeg", "CV4L2", "ObscuraConversion", "ObscuraFFmpeg", "ObscuraMedia", "ObscuraSettings", "ObscuraSystem"]),
        .target(name: "ObscuraAge", dependencies: ["CNettle", "CSystem", "ObscuraSettings", "ObscuraSystem"]),
        .target(name: "ObscuraFiles", dependencies: ["CNettleHash", "ObscuraSystem"]),
        .target(name: "ObscuraHealth", dependencies: ["ObscuraMedia", "ObscuraSystem"]),
        // The text formats the service and the collector share: TOML
        // configuration files and Prometheus' metrics files.
        .target(name: "ObscuraFormats", dependencies: ["ObscuraTOML", "ObscuraFiles", "ObscuraSystem"]),
        .target(name: "ObscuraMuxing", dependencies: ["CFFmpeg", "ObscuraAge", "ObscuraFFmpeg", "ObscuraFiles", "ObscuraSettings", "ObscuraSystem"]),
        .target(name: "ObscuraAudio", dependencies: ["CALSA", "ObscuraMedia", "ObscuraSystem"]),
        .target(name: "ObscuraGPIO", dependencies: ["CGPIO", "ObscuraSettings", "ObscuraSystem"]),
        .target(name: "ObscuraCapture", dependencies: ["ObscuraAudio", "ObscuraCamera", "ObscuraConversion", "ObscuraMedia", "ObscuraSystem"]),
        // Cameras in software, which the product offers: the test pattern
        // (`synthetic`), for trying a kiosk before a camera is fitted, and a
        // file's raw frames (`file:`), for choosing the picture watch's
        // thresholds on footage.
        .target(name: "ObscuraSoftwareCamera", dependencies: ["ObscuraCamera", "ObscuraCapture", "ObscuraMedia", "ObscuraSystem"]),
        .target(name: "ObscuraOverlay", dependencies: ["CFreeType", "ObscuraMedia", "ObscuraSettings", "ObscuraSystem"]),
        .target(name: "ObscuraRecording", dependencies: ["CFFmpeg", "ObscuraFFmpeg", "ObscuraAge", "ObscuraConversion", "ObscuraOverlay", "ObscuraCapture", "ObscuraEncoding", "ObscuraMuxing", "ObscuraMedia", "ObscuraSystem"]),
        .target(name: "ObscuraPhoto", dependencies: ["CImage", "CV4L2", "ObscuraConversion", "ObscuraOverlay", "ObscuraCapture", "ObscuraEncoding", "ObscuraMedia", "ObscuraSystem"]),
        .target(name: "ObscuraPreview", dependencies: ["CLibDRM", "CFFmpeg", "ObscuraConversion", "ObscuraOverlay", "ObscuraCapture", "ObscuraEncoding", "ObscuraMedia", "ObscuraSystem"]),
        .target(name: "ObscuraService", dependencies: [logging, "ObscuraControl", "ObscuraAge", "ObscuraCamera", "ObscuraEncoding", "ObscuraMuxing", "ObscuraFormats", "ObscuraFiles", "ObscuraOverlay", "ObscuraAudio", "ObscuraPhoto", "ObscuraPreview", "ObscuraCapture", "ObscuraSoftwareCamera", "ObscuraRecording", "ObscuraGPIO", "ObscuraHealth", "ObscuraMedia", "ObscuraSettings", "ObscuraDoctor", "ObscuraSystem"]),
        .target(name: "ObscuraRetrieval", dependencies: ["ObscuraAccess", "ObscuraAge", "ObscuraFiles", "ObscuraMuxing", "ObscuraSystem"]),
        .target(name: "ObscuraFleet", dependencies: ["ObscuraAge", "ObscuraFiles", "ObscuraFormats", "ObscuraRetrieval", "ObscuraSystem"]),
        // The front is linked with lld and its relative relocations packed
        // (DT_RELR, glibc 2.36 and later): the loader reads a few KiB of
        // them instead of 1 MiB before `main` (`obscura status` 11.7 MiB
        // at its peak instead of 12.7; docs/benchmarks/command-start.md).
        .executableTarget(name: "obscura", dependencies: [
            "ObscuraCommandLine", "ObscuraControl", "ObscuraDoctor", "ObscuraSettings", "ObscuraSystem", .product(name: "ArgumentParser", package: "swift-argument-parser"),
        ], linkerSettings: [.unsafeFlags(["-use-ld=lld", "-Xlinker", "-z", "-Xlinker", "pack-relative-relocs"])]),
        .executableTarget(name: "obscura-engine", dependencies: [
            "ObscuraCommandLine", "ObscuraFleet", "ObscuraRetrieval", "ObscuraAudio", "ObscuraAge", "ObscuraOverlay",
            "ObscuraRecording", "ObscuraCapture", "ObscuraSoftwareCamera", "ObscuraCamera", "ObscuraEncoding", "ObscuraMuxing", "ObscuraGPIO", "ObscuraMedia", "ObscuraService", "ObscuraPhoto", "ObscuraPreview",
            "ObscuraFiles", "ObscuraHealth", "ObscuraSystem", "ObscuraDoctor", "ObscuraControl",
            .product(name: "ArgumentParser", package: "swift-argument-parser"),
            logging,
        ]),

        .target(name: "TestSupport", dependencies: ["ObscuraOverlay", "ObscuraSystem"], path: "Tests/TestSupport"),
        .testTarget(name: "ObscuraTests", dependencies: [
            "TestSupport", "CCamera", "CFFmpeg", "ObscuraSystem", "ObscuraFiles", "ObscuraHealth", "ObscuraCapture", "ObscuraConversion", "ObscuraSoftwareCamera", "ObscuraRecording", "ObscuraMedia", "ObscuraCamera", "ObscuraEncoding", "ObscuraMuxing", "ObscuraGPIO", "ObscuraService", "ObscuraPhoto", "ObscuraPreview", "ObscuraRetrieval", "ObscuraAudio", "ObscuraAge", "ObscuraOverlay", "ObscuraFleet", "ObscuraFormats", "ObscuraFFmpeg",
            "ObscuraControl", "ObscuraCommandLine",
            logging,
        ], exclude: ["scripts"]),
        .testTarget(name: "BoardTests", dependencies: ["TestSupport", "ObscuraOverlay", "ObscuraControl"], exclude: ["scenarios"]),
    ] + loggingTargets,
    swiftLanguageModes: [.v6],
    cxxLanguageStandard: .cxx17
)
