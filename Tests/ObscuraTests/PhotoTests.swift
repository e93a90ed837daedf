import Foundation
import ObscuraOverlay
import ObscuraSystem
import Testing
import TestSupport
@testable import ObscuraCapture
@testable import ObscuraSoftwareCamera
@testable import ObscuraMedia
@testable import ObscuraPhoto

private func photoSession(_ output: PhotoOutput, format: PixelFormat = .nv12, controlLatency: Int = 0) throws -> CaptureSession {
    let camera = SyntheticCamera(formats: [format])
    camera.controlLatencyFrames = controlLatency
    return try patternSession([output], camera: camera)
}

private func scratch(_ name: String) -> String { scratchPath("photo", name) }

/// Records the delegate's calls in order.
private final class Recorder: PhotoCaptureDelegate, @unchecked Sendable {
    let calls = Mutex<[String]>([])
    let photos = Mutex<[Photo]>([])
    func photoOutput(_ output: PhotoOutput, willBeginCaptureFor settings: ResolvedPhotoSettings) { calls.withLock { $0.append("willBegin") } }
    func photoOutput(_ output: PhotoOutput, willCapturePhotoFor settings: ResolvedPhotoSettings) { calls.withLock { $0.append("willCapture") } }
    func photoOutput(_ output: PhotoOutput, didCapturePhotoFor settings: ResolvedPhotoSettings) { calls.withLock { $0.append("didCapture") } }
    func photoOutput(_ output: PhotoOutput, didFinishProcessingPhoto photo: Photo?, error: (any Error)?) {
        calls.withLock { $0.append("didFinishProcessing") }
        if let photo { photos.withLock { $0.append(photo) } }
    }
    func photoOutput(_ output: PhotoOutput, didFinishCaptureFor settings: ResolvedPhotoSettings?, error: (any Error)?) {
        calls.withLock { $0.append(error == nil ? "didFinishCapture" : "didFinishCapture(error)") }
    }
}

@Suite(.serialized) struct PhotoOutputTests {
    @Test(arguments: [PixelFormat.nv12, .yuv420, .yuyv, .bgr888, .xrgb8888])
    func aJPEGDecodesAndCarriesItsEXIF(format: PixelFormat) async throws {
        let output = PhotoOutput()
        output.rotation = 90
        let session = try photoSession(output, format: format)
        try session.startRunning()
        _ = await waitUntil { session.deliveredFrameCount >= 6 }  // the zero-lag ring has frames
        let photos = try await output.capturePhoto(with: PhotoSettings(jpegQuality: 85, thumbnailSize: PixelSize(width: 160, height: 120)))
        try session.stopRunning()
        let photo = try #require(photos.first)
        let file = scratch("photo-\(format.fourccString).jpg")
        try photo.fileDataRepresentation().write(to: URL(fileURLWithPath: file))
        // An independent decoder reads the whole image.
        let decoded = try runProgram("djpeg", ["-outfile", file + ".ppm", file])
        #expect(decoded.status == 0, "\(decoded.stderr)")
        let header = try String(decoding: Data(contentsOf: URL(fileURLWithPath: file + ".ppm")).prefix(15), as: UTF8.self)
        #expect(header.hasPrefix("P6\n640 480"))
        let exif = try runProgram("exiftool", ["-s", "-Make", "-Model", "-DateTimeOriginal", "-ExposureTime", "-ISO",
                                               "-Orientation#", "-ExifImageWidth", "-Flash#", "-ThumbnailLength", file]).stdout
        #expect(exif.contains("Make                            : Obscura"), "\(exif)")
        #expect(exif.contains("Model                           : Synthetic test pattern"))
        #expect(exif.contains("DateTimeOriginal                : 20"))
        #expect(exif.contains("ExposureTime                    : 1/100"))  // the synthetic camera's 10 ms
        #expect(exif.contains("ISO                             : 100"))    // analogue gain 1.0
        #expect(exif.contains("Orientation                     : 6"))      // rotated 90° clockwise
        #expect(exif.contains("ExifImageWidth                  : 640"))
        #expect(exif.contains("Flash                           : 0"))
        #expect(exif.contains("ThumbnailLength"))
        // Every tag the EXIF specification requires, IFD1's for the thumbnail too.
        #expect(try exiftoolValidation(file) == "OK")
        // The decoded picture is the camera's: mid-grey-ish pattern, not black.
        let ppm = try Data(contentsOf: URL(fileURLWithPath: file + ".ppm"))
        let pixels = ppm.suffix(640 * 480 * 3)
        let mean = Double(pixels.reduce(0) { $0 + Int($1) }) / Double(pixels.count)
        #expect(mean > 60 && mean < 200, "mean \(mean)")
    }

    /// A camera may be silent for as long as its session's stall limit
    /// before the session counts it stalled and takes buffers back from an
    /// output that stopped taking frames (a recorder blocked on a hung
    /// drive): a photo asked for meanwhile waits that long too, and is taken
    /// from the first frame that comes, not given up after two seconds.
    /// (On a clock moved on a frame interval every 2 ms: the session's
    /// stall limit, the photo's wait and the 2.5 s of silence are its.)
    @Test func aPhotoWaitsOutASilenceTheSessionStillAllows() async throws {
        let clock = ManualClock()
        let camera = SyntheticCamera(formats: [.nv12], pacing: .clock(clock))
        let output = PhotoOutput(clock: clock)
        let session = try patternSession([output], camera: camera, clock: clock)
        session.stallTimeout = .seconds(4)
        try session.startRunning()
        let driving = clock.drive(by: .nanoseconds(33_333_333), every: .milliseconds(2))
        defer { driving.cancel() }
        _ = await waitUntil { session.deliveredFrameCount >= 6 }
        // The camera falls silent (a few frame intervals pass, any frame
        // under way delivered); a photo takes the frame the output holds.
        camera.setStalled(true)
        let stalled = clock.nanoseconds
        _ = await waitUntil { clock.nanoseconds > stalled + 150_000_000 }
        _ = try await output.capturePhoto(with: PhotoSettings())
        let silence = clock.nanoseconds
        Task.detached {
            while clock.nanoseconds < silence + 2_500_000_000 { try? await Task.sleep(for: .milliseconds(1)) }
            camera.setStalled(false)
        }
        let photos = try await output.capturePhoto(with: PhotoSettings())
        let taken = try #require(photos.first)
        #expect(taken.timestampNanoseconds > silence, "the photo is of a frame from after the silence")
        #expect(!session.isInterrupted)
        try session.stopRunning()
    }

    @Test func aCaptionedPhotoShowsItsOwnFramesSecond() async throws {
        let output = PhotoOutput()
        let session = try photoSession(output, format: .nv12)
        try session.startRunning()
        _ = await waitUntil { session.deliveredFrameCount >= 6 }  // the zero-lag ring has frames
        var settings = PhotoSettings(jpegQuality: 95)
        var caption = OverlaySettings()
        caption.text = "Gate 3"
        caption.cameraName = "Synthetic test pattern"
        settings.overlay = caption
        let photo = try #require(try await output.capturePhoto(with: settings).first)
        try session.stopRunning()
        let file = scratch("captioned.jpg")
        try photo.fileDataRepresentation().write(to: URL(fileURLWithPath: file))
        let pgm = try runProgram("sh", ["-c", "djpeg -grayscale -pnm '\(file)' > '\(file).pgm'"])
        try #require(pgm.status == 0, "\(pgm.stderr)")
        let data = try [UInt8](Data(contentsOf: URL(fileURLWithPath: file + ".pgm")))
        let luma = Array(data.suffix(640 * 480))
        let wall = SystemClock.wallClock(ofMonotonic: photo.timestampNanoseconds).timeIntervalSince1970
        let frames = try OverlayCheck.check(luma: luma, times: [0], size: (640, 480), settings: caption, wallZero: wall, what: file)
        #expect(frames.first?.right == true, "\(frames)")
        #expect(try exiftoolValidation(file) == "OK")
    }

    @Test func callbacksComeInOrderAndTheLagIsWithinAFrame() async throws {
        let output = PhotoOutput()
        let session = try photoSession(output)
        try session.startRunning()
        _ = await waitUntil { session.deliveredFrameCount >= 6 }  // the zero-lag ring has frames
        for _ in 0..<5 {
            let recorder = Recorder()
            await output.capturePhoto(with: PhotoSettings(), delegate: recorder)
            #expect(recorder.calls.withLock { $0 } == ["willBegin", "willCapture", "didCapture", "didFinishProcessing", "didFinishCapture"])
            let photo = try #require(recorder.photos.withLock { $0.first })
            #expect(photo.resolvedSettings.isZeroShutterLag)
            #expect(photo.photoCount == 1 && photo.resolvedSettings.expectedPhotoCount == 1)
            let lag = try #require(photo.resolvedSettings.shutterLag)
            // The frame nearest the trigger: within one frame interval (33 ms).
            #expect(abs(lag.seconds) <= 0.034, "shutter lag \(lag)")
            try await Task.sleep(for: .milliseconds(Int.random(in: 10...80)))
        }
        // RAW from a camera without a raw stream: an error that says so.
        let recorder = Recorder()
        await output.capturePhoto(with: PhotoSettings(rawPixelFormat: PixelFormat("RGGB")), delegate: recorder)
        #expect(recorder.calls.withLock { $0 } == ["didFinishCapture(error)"])
        try session.stopRunning()
    }
}

@Suite struct DNGTests {
    /// A Bayer image whose colours are known: red, green and blue quadrants.
    private func quadrants(bits: Int, pattern: String) -> RawImage {
        let w = 128, h = 96
        let bytes = bits > 8 ? 2 : 1
        var data = Data(count: w * h * bytes)
        let white = (1 << bits) - 1
        let colours: [Character: Int] = ["R": 0, "G": 1, "B": 2]
        let order = pattern.map { colours[$0]! }
        for y in 0..<h {
            for x in 0..<w {
                // Left half red, right half blue, bottom half green.
                let wanted = y >= h / 2 ? 1 : (x < w / 2 ? 0 : 2)
                let colour = order[(y % 2) * 2 + x % 2]
                let value = colour == wanted ? white * 3 / 4 : white / 16
                if bytes == 1 {
                    data[y * w + x] = UInt8(value)
                } else {
                    data[(y * w + x) * 2] = UInt8(value & 0xff)
                    data[(y * w + x) * 2 + 1] = UInt8(value >> 8)
                }
            }
        }
        return RawImage(size: PixelSize(width: w, height: h), bitsPerSample: bits, pattern: pattern, data: data, bytesPerLine: w * bytes)
    }

    @Test(arguments: [(8, "GRBG"), (10, "RGGB"), (12, "BGGR")])
    func independentReadersSeeTheSizePatternAndDepth(bits: Int, pattern: String) throws {
        let raw = quadrants(bits: bits, pattern: pattern)
        let file = scratch("raw-\(bits)-\(pattern).dng")
        try DNGWriter.data(for: raw, model: "Test sensor").write(to: URL(fileURLWithPath: file))
        let identify = try runProgram("raw-identify", ["-v", file])
        #expect(identify.status == 0, "\(identify.stderr)")
        let text = identify.stdout
        #expect(text.contains("Camera: Obscura Test sensor"), "\(text)")
        #expect(text.contains("Full size:    128 x 96"), "\(text)")
        #expect(text.contains("Filter pattern: \(pattern)"), "\(text)")
        let exif = try runProgram("exiftool", ["-s", "-SubIFD:BitsPerSample", "-CFAPattern", "-SubIFD:WhiteLevel",
                                               "-DNGVersion", "-IFD0:ImageWidth", file]).stdout
        #expect(exif.contains("BitsPerSample                   : \(bits > 8 ? 16 : 8)"), "\(exif)")
        #expect(exif.contains("WhiteLevel                      : \((1 << bits) - 1)"))
        #expect(exif.contains("DNGVersion                      : 1.4.0.0"))
        #expect(exif.contains("ImageWidth                      : 64"))  // the RGB preview in IFD0
        // The preview in IFD0 is a JPEG that an independent decoder reads.
        #expect(text.contains("Thumb size:    64 x 48"))
        let preview = try runProgram("sh", ["-c", "exiftool -b -PreviewImage '\(file)' | djpeg | head -c 9"]).stdout
        #expect(preview == "P6\n64 48\n", "preview: \(preview)")
        let cfa = pattern.map { ["R": "Red", "G": "Green", "B": "Blue"][String($0)]! }
        #expect(exif.contains("CFAPattern                      : [\(cfa[0]),\(cfa[1])][\(cfa[2]),\(cfa[3])]"), "\(exif)")
        #expect(try exiftoolValidation(file) == "OK")
    }

    @Test func theDemosaickedColoursAreWhereTheyWereShot() throws {
        // libraw develops the DNG (dcraw_emu -> PPM): red top-left, blue top-right, green below.
        let raw = quadrants(bits: 10, pattern: "GRBG")
        let file = scratch("colours.dng")
        try DNGWriter.data(for: raw).write(to: URL(fileURLWithPath: file))
        let developed = try runProgram("dcraw_emu", ["-w", "-o", "0", "-4", "-T", "-Z", file + ".tiff", file])
        try #require(developed.status == 0, "\(developed.stderr)")
        let tiff = try runProgram("exiftool", ["-s", "-s", "-s", "-ImageSize", file + ".tiff"]).stdout
        #expect(tiff.contains("128x96"))
        let ppm = try runProgram("dcraw_emu", ["-w", "-o", "0", "-Z", file + ".ppm", file])
        try #require(ppm.status == 0, "\(ppm.stderr)")
        let image = try Data(contentsOf: URL(fileURLWithPath: file + ".ppm"))
        let pixels = image.suffix(128 * 96 * 3)
        func pixel(_ x: Int, _ y: Int) -> (Int, Int, Int) {
            let o = pixels.startIndex + (y * 128 + x) * 3
            return (Int(pixels[o]), Int(pixels[o + 1]), Int(pixels[o + 2]))
        }
        let red = pixel(20, 20), blue = pixel(100, 20), green = pixel(64, 80)
        #expect(red.0 > red.1 * 2 && red.0 > red.2 * 2, "top-left \(red)")
        #expect(blue.2 > blue.0 * 2 && blue.2 > blue.1 * 2, "top-right \(blue)")
        #expect(green.1 > green.0 * 2 && green.1 > green.2 * 2, "bottom \(green)")
    }
}

@Suite(.serialized) struct BracketTests {
    @Test func aManualBracketWaitsForEachExposureAndWritesItInTheEXIF() async throws {
        let output = PhotoOutput()
        // Controls show three frames after they are set, as on a real sensor.
        let session = try photoSession(output, controlLatency: 3)
        try session.startRunning()
        let recorder = Recorder()
        var settings = PhotoSettings(jpegQuality: 80)
        settings.bracket = [.manual(exposure: .milliseconds(5), iso: 100), .manual(exposure: .milliseconds(10), iso: 200),
                            .manual(exposure: .milliseconds(20), iso: 400)]
        await output.capturePhoto(with: settings, delegate: recorder)
        let calls = recorder.calls.withLock { $0 }
        #expect(calls == ["willBegin", "willCapture", "didFinishProcessing", "didFinishProcessing", "didCapture",
                          "didFinishProcessing", "didFinishCapture"], "\(calls)")
        let photos = recorder.photos.withLock { $0 }
        #expect(photos.map(\.photoCount) == [1, 2, 3])
        #expect(photos.allSatisfy { $0.resolvedSettings.expectedPhotoCount == 3 })
        var previous: UInt64 = 0
        for (photo, (exposure, iso)) in zip(photos, [("1/200", "100"), ("1/100", "200"), ("1/50", "400")]) {
            // Each from its own frame, at least the latency after the previous.
            #expect(photo.timestampNanoseconds > previous + (previous == 0 ? 0 : 2 * 33_000_000))
            previous = photo.timestampNanoseconds
            let file = scratch("bracket-\(photo.photoCount).jpg")
            try photo.fileDataRepresentation().write(to: URL(fileURLWithPath: file))
            let exif = try runProgram("exiftool", ["-s", "-s", "-s", "-ExposureTime", "-ISO", file]).stdout
            #expect(exif == "\(exposure)\n\(iso)\n", "shot \(photo.photoCount): \(exif)")
            #expect(try exiftoolValidation(file) == "OK")
        }
        try session.stopRunning()
    }

    @Test func aBiasBracketIsRestoredAfterwardsAndLimitsAreChecked() async throws {
        let output = PhotoOutput()
        output.maxBracketedCapturePhotoCount = 3
        let session = try photoSession(output)
        try session.startRunning()
        var settings = PhotoSettings()
        settings.bracket = [.exposureBias(-2), .exposureBias(0), .exposureBias(2)]
        let photos = try await output.capturePhoto(with: settings)
        #expect(photos.map { $0.metadata.values["ExposureValue"]?.first } == [-2, 0, 2])
        // The bias goes back to 0 for what follows.
        let after = try await output.capturePhoto(with: PhotoSettings())
        #expect(after.first?.metadata.values["ExposureValue"]?.first == 0)
        settings.bracket.append(.exposureBias(1))
        await #expect(throws: PhotoError.bracketTooLong(4, maximum: 3)) { _ = try await output.capturePhoto(with: settings) }
        try session.stopRunning()
    }
}

@Suite struct BayerRowTests {
    @Test func csi2PackedRowsUnpackToTheSamplesTheyHold() {
        // MIPI RAW10: high bytes of four pixels, then their low bit pairs (pixel 0 lowest).
        let raw10 = PixelFormat.sbggr10CSI2Packed.info!
        let packed10: [UInt8] = [0xFF, 0x00, 0x55, 0xAA, 0x93]
        var out = [UInt16](repeating: 0, count: 4)
        packed10.withUnsafeBytes { BayerRow.unpack($0.baseAddress!, width: 4, format: raw10, into: &out) }
        #expect(out == [0x3FF, 0x000, 0x155, 0x2AA])
        // MIPI RAW12: high bytes of two pixels, then their low nibbles (pixel 0 low).
        let raw12 = PixelFormat.srggb12CSI2Packed.info!
        let packed12: [UInt8] = [0xAB, 0x12, 0x3C]
        var out12 = [UInt16](repeating: 0, count: 2)
        packed12.withUnsafeBytes { BayerRow.unpack($0.baseAddress!, width: 2, format: raw12, into: &out12) }
        #expect(out12 == [0xABC, 0x123])
        // And packing is the inverse, for odd widths too.
        for info in [raw10, raw12, PixelFormat.srggb12.info!, PixelFormat.srggb8.info!] {
            let width = 13
            let samples = (0..<width).map { UInt16(($0 * 977) & ((1 << info.bitDepth) - 1)) }
            var bytes = [UInt8](repeating: 0, count: info.stride(plane: 0, width: width))
            bytes.withUnsafeMutableBytes { BayerRow.pack(samples, format: info, into: $0.baseAddress!) }
            var back = [UInt16](repeating: 0, count: width)
            bytes.withUnsafeBytes { BayerRow.unpack($0.baseAddress!, width: width, format: info, into: &back) }
            #expect(back == samples, "\(info.name)")
        }
    }
}

@Suite(.serialized) struct RawPhotoTests {
    private func rawSession(_ output: PhotoOutput, rawFormats: [PixelFormat] = [.srggb12CSI2Packed, .srggb12]) throws -> CaptureSession {
        let camera = SyntheticCamera(formats: [.nv12], rawFormats: rawFormats)
        camera.controlLatencyFrames = 2
        return try patternSession([output], camera: camera)
    }

    /// Mean of the green samples of the DNG's top-left 64x64 as libraw reads
    /// them (rawtextdump: black level subtracted).
    private func greenMean(_ file: String) throws -> Double {
        let dump = try runProgram("sh", ["-c", "rawtextdump '\(file)' 0 0 1 64 64 | tail -n +3 | awk '{for(i=2;i<=NF;i++) if($i!=\"-\"){s+=$i;n++}} END{print s/n}'"])
        return Double(dump.stdout.trimmingCharacters(in: .whitespacesAndNewlines)) ?? -1
    }

    @Test func rawAndJPEGOfAThreeShotBracketGiveSixPhotosAndOneFinish() async throws {
        let output = PhotoOutput()
        output.isRawCaptureEnabled = true
        let session = try rawSession(output)
        try session.startRunning()
        #expect(output.availableRawPhotoPixelFormats == [.srggb12CSI2Packed, .srggb12])
        let recorder = Recorder()
        var settings = PhotoSettings(jpegQuality: 85, rawPixelFormat: .srggb12CSI2Packed)
        settings.bracket = [.manual(exposure: .microseconds(2500), iso: 100), .manual(exposure: .milliseconds(5), iso: 100),
                            .manual(exposure: .milliseconds(10), iso: 100)]
        await output.capturePhoto(with: settings, delegate: recorder)
        try session.stopRunning()
        let calls = recorder.calls.withLock { $0 }
        #expect(calls == ["willBegin", "willCapture", "didFinishProcessing", "didFinishProcessing", "didFinishProcessing",
                          "didFinishProcessing", "didCapture", "didFinishProcessing", "didFinishProcessing", "didFinishCapture"],
                "\(calls)")
        let photos = recorder.photos.withLock { $0 }
        try #require(photos.count == 6)
        #expect(photos.map(\.isRawPhoto) == [false, true, false, true, false, true])
        #expect(photos.map(\.photoCount) == [1, 2, 3, 4, 5, 6])
        #expect(photos.allSatisfy { $0.resolvedSettings.expectedPhotoCount == 6 })
        var means: [Double] = []
        for pair in stride(from: 0, to: 6, by: 2) {
            let jpeg = photos[pair], raw = photos[pair + 1]
            // Both photos of an exposure come from one camera request.
            #expect(jpeg.timestampNanoseconds == raw.timestampNanoseconds)
            let file = scratch("raw-bracket-\(pair / 2 + 1).dng")
            try raw.fileDataRepresentation().write(to: URL(fileURLWithPath: file))
            let identify = try runProgram("raw-identify", ["-v", file])
            #expect(identify.stdout.contains("Full size:    640 x 480"), "\(identify.stdout)")
            #expect(identify.stdout.contains("Filter pattern: RGGB"), "\(identify.stdout)")
            let exif = try runProgram("exiftool", ["-s", "-s", "-s", "-BitsPerSample", "-WhiteLevel", "-BlackLevel", file]).stdout
            #expect(exif == "16\n4095\n256\n", "\(exif)")
            #expect(try exiftoolValidation(file) == "OK")
            means.append(try greenMean(file))
        }
        // Each exposure doubles the last: the raw levels above black say so.
        #expect(means[0] > 10 && means[1] > means[0] * 1.6 && means[2] > means[1] * 1.6, "raw means \(means)")
        // Unpacking each RAW frame is the one counted copy.
        #expect(output.copies.copies == 3)
    }

    @Test func rawIsRefusedWithAReasonWhenTheStreamIsMissing() async throws {
        // Asked for, but the output never asked the session for the raw stream.
        let output = PhotoOutput()
        let session = try rawSession(output)
        try session.startRunning()
        await #expect(throws: PhotoError.rawCaptureNotEnabled) {
            _ = try await output.capturePhoto(with: PhotoSettings(rawPixelFormat: .srggb12CSI2Packed))
        }
        await #expect(throws: PhotoError.rawFormatNotOffered(.sbggr10, available: [.srggb12CSI2Packed, .srggb12])) {
            _ = try await output.capturePhoto(with: PhotoSettings(rawPixelFormat: .sbggr10))
        }
        await #expect(throws: PhotoError.nothingToCapture) {
            _ = try await output.capturePhoto(with: PhotoSettings(jpegQuality: nil))
        }
        try session.stopRunning()
        // A camera with no raw stream at all (like vimc).
        let plain = PhotoOutput()
        plain.isRawCaptureEnabled = true
        let other = try rawSession(plain, rawFormats: [])
        try other.startRunning()
        let photos = try await plain.capturePhoto(with: PhotoSettings())
        #expect(photos.count == 1)
        do {
            _ = try await plain.capturePhoto(with: PhotoSettings(rawPixelFormat: .srggb12))
            Issue.record("RAW from a camera without a raw stream")
        } catch let error as PhotoError {
            #expect("\(error)".contains("offers no RAW stream"), "\(error)")
        }
        try other.stopRunning()
    }
}

@Suite(.serialized) struct PhotoDimensionsTests {
    @Test func aPhotoIsScaledDownToTheMaximumDimensionsAndTheCopyCounted() async throws {
        let output = PhotoOutput()
        let session = try photoSession(output, format: .bgr888)
        try session.startRunning()
        var settings = PhotoSettings(jpegQuality: 90)
        settings.maxPhotoDimensions = PixelSize(width: 300, height: 300)
        let photos = try await output.capturePhoto(with: settings)
        let full = try await output.capturePhoto(with: PhotoSettings(jpegQuality: 90))
        try session.stopRunning()
        let photo = try #require(photos.first)
        #expect(photo.pixelSize == PixelSize(width: 300, height: 224))
        #expect(photo.resolvedSettings.photoDimensions == PixelSize(width: 300, height: 224))
        let file = scratch("max-dimensions.jpg")
        try photo.fileDataRepresentation().write(to: URL(fileURLWithPath: file))
        #expect(try runProgram("exiftool", ["-s", "-s", "-s", "-ImageSize", file]).stdout == "300x224\n")
        // One scaling copy for the small photo, none for the full-size one.
        #expect(full.first?.pixelSize == PixelSize(width: 640, height: 480))
        #expect(output.copies.copies == 1)
    }
}
