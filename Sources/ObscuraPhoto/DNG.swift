import CImage
import CV4L2
import Foundation
import ObscuraMedia

/// A raw (Bayer) image: one sample per pixel in the sensor's colour filter
/// pattern, as a camera's raw stream or a V4L2 raw node gives it.
public struct RawImage: Sendable {
    public var size: PixelSize
    /// 8 bits: one byte per sample; 10–16 bits: two bytes, little endian.
    public var bitsPerSample: Int
    /// The 2x2 pattern from the top-left: "RGGB", "GRBG", "GBRG" or "BGGR".
    public var pattern: String
    public var data: Data
    public var bytesPerLine: Int
    public var blackLevel = 0
    public var timestampNanoseconds: UInt64 = 0

    public init(size: PixelSize, bitsPerSample: Int, pattern: String, data: Data, bytesPerLine: Int) {
        self.size = size
        self.bitsPerSample = bitsPerSample
        self.pattern = pattern
        self.data = data
        self.bytesPerLine = bytesPerLine
    }

    public var whiteLevel: Int { (1 << bitsPerSample) - 1 }

    /// The pattern as DNG's CFAPattern (0 red, 1 green, 2 blue).
    public var cfaPattern: [UInt8]? {
        let map: [Character: UInt8] = ["R": 0, "G": 1, "B": 2]
        let values = pattern.compactMap { map[$0] }
        return values.count == 4 ? values : nil
    }

    func sample(_ x: Int, _ y: Int) -> Int {
        if bitsPerSample <= 8 { return Int(data[y * bytesPerLine + x]) }
        let o = y * bytesPerLine + x * 2
        return Int(data[o]) | Int(data[o + 1]) << 8
    }

    /// A small RGB picture: each 2x2 cell becomes one pixel, then every
    /// `step`-th cell (8-bit samples).
    func preview(maxWidth: Int) -> (rgb: [UInt8], size: PixelSize) {
        let cells = PixelSize(width: size.width / 2, height: size.height / 2)
        let step = max(1, (cells.width + maxWidth - 1) / maxWidth)
        let w = cells.width / step, h = cells.height / step
        let order = cfaPattern ?? [0, 1, 1, 2]
        let shift = max(0, bitsPerSample - 8)
        var rgb = [UInt8](repeating: 0, count: w * h * 3)
        for y in 0..<h {
            for x in 0..<w {
                var sums = [0, 0, 0], counts = [0, 0, 0]
                let cx = x * step * 2, cy = y * step * 2
                for (i, colour) in order.enumerated() {
                    sums[Int(colour)] += sample(cx + i % 2, cy + i / 2) >> shift
                    counts[Int(colour)] += 1
                }
                for c in 0..<3 { rgb[(y * w + x) * 3 + c] = UInt8(clamping: sums[c] / max(1, counts[c])) }
            }
        }
        return (rgb, PixelSize(width: w, height: h))
    }
}

extension RawImage {
    /// The samples of a camera's raw frame: 8-bit as they are, deeper ones
    /// as 16-bit little-endian words (CSI-2 packed rows unpacked). One CPU
    /// copy, recorded in `copies`. The black level comes from the frame's
    /// SensorBlackLevels (libcamera reports them on a 16-bit scale).
    public init(frame: VideoFrame, copies: CopyCounter? = nil) throws {
        guard let info = frame.format.info, info.family == .bayer, let order = info.bayerOrder,
              !frame.planes.isEmpty else {
            throw PhotoError.unsupportedRawFormat(frame.format)
        }
        let width = frame.size.width, height = frame.size.height
        let depth = info.bitDepth
        let bytesPerSample = depth > 8 ? 2 : 1
        var data = Data(count: width * height * bytesPerSample)
        frame.withCPUAccess { planes in
            data.withUnsafeMutableBytes { out in
                for y in 0..<height {
                    let row = planes[0].base + y * planes[0].stride
                    if depth <= 8 {
                        memcpy(out.baseAddress! + y * width, row, width)
                    } else {
                        let words = (out.baseAddress! + y * width * 2).assumingMemoryBound(to: UInt16.self)
                        BayerRow.unpack(row, width: width, format: info, into: words)
                        for x in 0..<width { words[x] = words[x].littleEndian }  // the DNG's byte order
                    }
                }
            }
        }
        copies?.recordCopy(bytes: data.count)
        self.init(size: frame.size, bitsPerSample: depth, pattern: order, data: data, bytesPerLine: width * bytesPerSample)
        if let levels = frame.metadata.values["SensorBlackLevels"], let first = levels.first {
            blackLevel = Int(first) >> max(0, 16 - depth)
        }
        timestampNanoseconds = frame.timestampNanoseconds
    }
}

public enum DNGError: Error, CustomStringConvertible {
    case badPattern(String)
    case writer(String)
    case capture(String)

    public var description: String {
        switch self {
        case .badPattern(let p): "\"\(p)\" is not a Bayer pattern; allowed: RGGB, GRBG, GBRG, BGGR"
        case .writer(let e), .capture(let e): e
        }
    }
}

/// Writes DNG files with libtiff.
public enum DNGWriter {
    /// XYZ (D65) → linear sRGB: the matrix for a camera whose raw colours are
    /// taken as sRGB primaries (no calibration known).
    public static let srgbMatrix: [Float] = [3.2406, -1.5372, -0.4986, -0.9689, 1.8758, 0.0415, 0.0557, -0.2040, 1.0570]

    public static func data(for raw: RawImage, make: String = "Obscura", model: String = "camera",
                            orientation: UInt32 = 1, colorMatrix: [Float] = srgbMatrix,
                            asShotNeutral: [Float] = [1, 1, 1], previewWidth: Int? = 256,
                            jpegPreview: Bool = true) throws -> Data {
        guard let cfa = raw.cfaPattern else { throw DNGError.badPattern(raw.pattern) }
        let formatter = DateFormatter()
        formatter.dateFormat = "yyyy:MM:dd HH:mm:ss"
        formatter.locale = Locale(identifier: "en_US_POSIX")
        let date = formatter.string(from: Date())
        let preview = previewWidth.map { raw.preview(maxWidth: $0) }
        // The preview as a JPEG (what raw developers show first), else RGB.
        let previewJPEG: Data? = try preview.flatMap { p -> Data? in
            guard jpegPreview else { return nil }
            return try p.rgb.withUnsafeBufferPointer { rgb in
                var image = oi_image()
                image.format = Int32(OI_RGB24.rawValue)
                image.width = UInt32(p.size.width)
                image.height = UInt32(p.size.height)
                image.planes.0 = rgb.baseAddress
                image.strides.0 = UInt32(p.size.width * 3)
                return try PhotoOutput.encode(&image, quality: 85, exif: nil)
            }
        }
        var dng = oi_dng()
        dng.width = UInt32(raw.size.width)
        dng.height = UInt32(raw.size.height)
        dng.bits_per_sample = UInt32(raw.bitsPerSample)
        dng.stride = UInt32(raw.bytesPerLine)
        dng.cfa_pattern = (cfa[0], cfa[1], cfa[2], cfa[3])
        dng.black_level = UInt32(raw.blackLevel)
        dng.white_level = UInt32(raw.whiteLevel)
        withUnsafeMutableBytes(of: &dng.color_matrix) { raw in
            let m = raw.bindMemory(to: Float.self)
            for i in 0..<9 { m[i] = i < colorMatrix.count ? colorMatrix[i] : 0 }
        }
        dng.as_shot_neutral = (asShotNeutral[0], asShotNeutral[1], asShotNeutral[2])
        dng.orientation = orientation
        var out: UnsafeMutablePointer<UInt8>?
        var length = 0
        var err = [CChar](repeating: 0, count: 512)
        let rc: Int32 = raw.data.withUnsafeBytes { samples in
            (previewJPEG ?? Data()).withUnsafeBytes { jpegBytes in
            (preview?.rgb ?? []).withUnsafeBufferPointer { previewBytes in
                make.withCString { makeC in
                    model.withCString { modelC in
                        "Obscura".withCString { softwareC in
                            date.withCString { dateC in
                                dng.data = samples.bindMemory(to: UInt8.self).baseAddress
                                dng.make = makeC
                                dng.model = modelC
                                dng.unique_model = modelC
                                dng.software = softwareC
                                dng.datetime = dateC
                                if let preview {
                                    dng.preview_rgb = previewBytes.baseAddress
                                    dng.preview_width = UInt32(preview.size.width)
                                    dng.preview_height = UInt32(preview.size.height)
                                }
                                if let previewJPEG {
                                    dng.preview_jpeg = jpegBytes.bindMemory(to: UInt8.self).baseAddress
                                    dng.preview_jpeg_length = previewJPEG.count
                                }
                                return oi_dng_write(&dng, &out, &length, &err, err.count)
                            }
                        }
                    }
                }
            }
            }
        }
        guard rc == 0, let out else { throw DNGError.writer(err.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }) }
        defer { oi_free(out) }
        return Data(bytes: out, count: length)
    }
}

/// One raw frame from a V4L2 capture node (vimc's "Raw Capture 0", a Pi's
/// Unicam node), for when libcamera offers no raw stream.
public enum RawNode {
    /// V4L2 fourccs of 8-bit and 16-bit-stored Bayer formats by pattern.
    static let fourccs: [String: (UInt32, Int)] = [
        "RGGB8": (FourCC.code("RGGB"), 8), "GRBG8": (FourCC.code("GRBG"), 8),
        "GBRG8": (FourCC.code("GBRG"), 8), "BGGR8": (FourCC.code("BA81"), 8),
        "RGGB10": (FourCC.code("RG10"), 10), "GRBG10": (FourCC.code("BA10"), 10),
        "GBRG10": (FourCC.code("GB10"), 10), "BGGR10": (FourCC.code("BG10"), 10),
    ]

    public static func capture(node name: String, pattern: String, bits: Int = 8, size: PixelSize, skip: Int = 3) throws -> RawImage {
        guard let (fourcc, depth) = fourccs["\(pattern)\(bits)"] else {
            throw DNGError.capture("no V4L2 format for \(pattern) at \(bits) bits; allowed: \(fourccs.keys.sorted().joined(separator: ", "))")
        }
        var path = [CChar](repeating: 0, count: 256)
        var err = [CChar](repeating: 0, count: 512)
        func message() -> String { err.withUnsafeBufferPointer { String(cString: $0.baseAddress!) } }
        guard ov_find_node(name, &path, path.count, &err, err.count) == 0 else { throw DNGError.capture(message()) }
        let bytes = size.width * size.height * (depth > 8 ? 2 : 1) * 2
        var buffer = [UInt8](repeating: 0, count: bytes)
        var info = ov_frame_info()
        let rc = ov_capture_one(path, fourcc, UInt32(size.width), UInt32(size.height), UInt32(skip), &buffer, buffer.count, &info, &err, err.count)
        guard rc == 0 else {
            // EPIPE at stream-on: the links and formats before the node do
            // not give what it was set to.
            if rc == -EPIPE {
                throw DNGError.capture("\(message()): the pipeline feeding \"\(name)\" does not deliver \(size.width)x\(size.height) \(pattern) \(bits)-bit; set its sensor's format to that and enable the link with media-ctl")
            }
            throw DNGError.capture(message())
        }
        guard info.fourcc == fourcc else {
            throw DNGError.capture("the node gives \(FourCC.string(info.fourcc)), not \(FourCC.string(fourcc)): set the sensor's format to match (media-ctl)")
        }
        var raw = RawImage(size: PixelSize(width: Int(info.width), height: Int(info.height)), bitsPerSample: depth, pattern: pattern,
                           data: Data(buffer.prefix(Int(info.bytes_used))), bytesPerLine: Int(info.bytes_per_line))
        raw.timestampNanoseconds = info.timestamp_ns
        return raw
    }
}
