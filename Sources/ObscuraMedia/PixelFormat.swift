/// A pixel memory layout, named by its DRM/libcamera fourcc (libcamera uses
/// the DRM codes), with what Obscura knows about it: planes, subsampling,
/// bytes per frame, and its names in V4L2, FFmpeg and AVFoundation.
///
/// NV12 is the default everywhere a choice exists: it is what camera ISPs and
/// hardware encoders share without conversion. BGRA needs about 2.67× the
/// memory of NV12 per frame (32 vs 12 bits per pixel) and forces a colour
/// conversion before any video encoder, so it is never a default.
public struct PixelFormat: Hashable, Sendable, CustomStringConvertible {
    /// The DRM fourcc, which libcamera's `PixelFormat` also uses.
    public let fourcc: UInt32
    /// The format modifier (0 = linear).
    public let modifier: UInt64

    public init(fourcc: UInt32, modifier: UInt64 = 0) {
        self.fourcc = fourcc
        self.modifier = modifier
    }

    public init(_ code: String, modifier: UInt64 = 0) {
        self.init(fourcc: FourCC.code(code), modifier: modifier)
    }

    /// The four characters of the fourcc, e.g. "NV12".
    public var fourccString: String { FourCC.string(fourcc) }
    public var description: String { info?.name ?? fourccString }

    /// The layout, with the modifier applied (MIPI CSI-2 packed raw formats
    /// share their fourcc with the unpacked ones; libcamera marks them with a
    /// modifier).
    public var info: PixelFormatInfo? {
        guard let base = PixelFormatInfo.table[fourcc] else { return nil }
        guard modifier == Self.csi2PackedModifier, base.family == .bayer, base.bitDepth > 8 else { return base }
        return base.csi2Packed()
    }

    /// The non-raw formats Obscura knows, NV12 first (for listing conversions).
    public static let known: [PixelFormat] = [.nv12, .nv21, .nv16, .yuv420, .yuyv, .uyvy, .p010, .p210,
                                               .xrgb8888, .argb8888, .xbgr8888, .rgb888, .bgr888, .rgb565]

    /// A known format by its fourcc ("BG24") or its name in any case
    /// ("BGR888", what a camera's formats are listed by); nil when Obscura
    /// knows neither.
    public static func named(_ text: String) -> PixelFormat? {
        known.first { $0.fourccString == text } ?? known.first { $0.description.uppercased() == text.uppercased() }
    }

    /// The known formats as they may be named: "NV12, …, BGR888 (BG24), …".
    public static var knownNames: String {
        known.map { $0.description == $0.fourccString ? $0.description : "\($0.description) (\($0.fourccString))" }
            .joined(separator: ", ")
    }

    /// libcamera's MIPI_FORMAT_MOD_CSI2_PACKED: fourcc_mod_code(MIPI (0x0a), 1).
    public static let csi2PackedModifier: UInt64 = (0x0a << 56) | 1

    // YUV
    public static let nv12 = PixelFormat("NV12")
    public static let nv21 = PixelFormat("NV21")
    public static let nv16 = PixelFormat("NV16")
    public static let yuv420 = PixelFormat("YU12")
    public static let yuyv = PixelFormat("YUYV")
    public static let uyvy = PixelFormat("UYVY")
    /// 10-bit 4:2:0, two planes, samples in the high bits of 16 ('x420').
    public static let p010 = PixelFormat("P010")
    /// 10-bit 4:2:2, two planes, samples in the high bits of 16 ('x422').
    public static let p210 = PixelFormat("P210")
    // RGB (DRM names describe a little-endian word: XRGB8888 is B, G, R, X in memory)
    public static let xrgb8888 = PixelFormat("XR24")
    public static let argb8888 = PixelFormat("AR24")
    public static let xbgr8888 = PixelFormat("XB24")
    /// DRM RGB888: bytes B, G, R in memory.
    public static let rgb888 = PixelFormat("RG24")
    /// DRM BGR888: bytes R, G, B in memory (what vimc gives through libcamera).
    public static let bgr888 = PixelFormat("BG24")
    public static let rgb565 = PixelFormat("RG16")
    // Raw Bayer, unpacked 8 bit
    public static let sbggr8 = PixelFormat("BA81")
    public static let sgbrg8 = PixelFormat("GBRG")
    public static let sgrbg8 = PixelFormat("GRBG")
    public static let srggb8 = PixelFormat("RGGB")
    // Raw Bayer, 10 and 12 bit in 16-bit samples; CSI-2 packed with the modifier.
    public static let sbggr10 = PixelFormat("BG10")
    public static let sgbrg10 = PixelFormat("GB10")
    public static let sgrbg10 = PixelFormat("BA10")
    public static let srggb10 = PixelFormat("RG10")
    public static let sbggr12 = PixelFormat("BG12")
    public static let sgbrg12 = PixelFormat("GB12")
    public static let sgrbg12 = PixelFormat("BA12")
    public static let srggb12 = PixelFormat("RG12")
    public static let sbggr10CSI2Packed = PixelFormat("BG10", modifier: csi2PackedModifier)
    public static let srggb12CSI2Packed = PixelFormat("RG12", modifier: csi2PackedModifier)
}

/// Helpers for four-character codes.
public enum FourCC {
    public static func code(_ text: String) -> UInt32 {
        var bytes = Array(text.utf8.prefix(4))
        while bytes.count < 4 { bytes.append(0x20) }
        return UInt32(bytes[0]) | UInt32(bytes[1]) << 8 | UInt32(bytes[2]) << 16 | UInt32(bytes[3]) << 24
    }

    public static func string(_ code: UInt32) -> String {
        let bytes = (0..<4).map { UInt8((code >> (8 * $0)) & 0xff) }
        if bytes.allSatisfy({ $0 >= 0x20 && $0 < 0x7f }) {
            return String(decoding: bytes, as: UTF8.self)
        }
        return "0x" + String(code, radix: 16)
    }
}

/// How a format lays out its planes.
public struct PixelFormatInfo: Sendable {
    public enum Family: Sendable { case yuv, rgb, bayer }

    public struct Plane: Sendable {
        /// Bytes per pixel group of this plane's samples, over `pixelsPerGroup` pixels of a row.
        public let bytesPerGroup: Int
        public let pixelsPerGroup: Int
        /// Subsampling of this plane relative to the image.
        public let horizontalSubsampling: Int
        public let verticalSubsampling: Int
    }

    public enum Packing: Sendable, Equatable {
        case none
        /// MIPI CSI-2: 4 pixels in 5 bytes (10 bit) or 2 pixels in 3 bytes (12 bit).
        case csi2
    }

    public let name: String
    public let family: Family
    public let bitDepth: Int
    public let planes: [Plane]
    /// Bayer colour order ("BGGR", …) for raw formats.
    public var bayerOrder: String? = nil
    public var packing: Packing = .none
    /// FFmpeg's `AVPixelFormat` name (`av_get_pix_fmt` takes it), when FFmpeg has one.
    public let ffmpegName: String?
    /// The AVFoundation pixel format type in video range, when one exists
    /// ('420v', 'x420', 'BGRA', …); see `avFoundationCode(fullRange:)`.
    public let avFoundationCode: String?
    /// The V4L2 fourcc when it differs from the DRM one.
    public let v4l2FourCC: String

    public init(name: String, family: Family, bitDepth: Int, planes: [Plane], ffmpegName: String?,
                avFoundationCode: String?, v4l2FourCC: String) {
        self.name = name
        self.family = family
        self.bitDepth = bitDepth
        self.planes = planes
        self.ffmpegName = ffmpegName
        self.avFoundationCode = avFoundationCode
        self.v4l2FourCC = v4l2FourCC
    }

    /// The AVFoundation type for a range: NV12 is '420v' in video range and
    /// '420f' in full range; P010 'x420'/'xf20'; P210 'x422'/'xf22'.
    public func avFoundationCode(fullRange: Bool) -> String? {
        guard fullRange, let code = avFoundationCode else { return avFoundationCode }
        return ["420v": "420f", "x420": "xf20", "x422": "xf22", "422v": "422f"][code] ?? code
    }

    /// The CSI-2 packed variant of an unpacked raw format.
    func csi2Packed() -> PixelFormatInfo {
        let plane = bitDepth == 10 ? Self.plane(5, per: 4) : Self.plane(3, per: 2)
        let letter = bitDepth == 10 ? "A" : "C"
        let order = bayerOrder ?? ""
        let v4l2Order = ["BGGR": "B", "GBRG": "G", "GRBG": "g", "RGGB": "R"][order] ?? "B"
        var packed = PixelFormatInfo(name: name + "_CSI2P", family: family, bitDepth: bitDepth, planes: [plane],
                                     ffmpegName: nil, avFoundationCode: nil, v4l2FourCC: "p\(v4l2Order)\(letter)\(letter)")
        packed.bayerOrder = bayerOrder
        packed.packing = .csi2
        return packed
    }

    /// Bits per pixel, averaged over the planes (12 for NV12, 32 for XRGB8888).
    public var bitsPerPixel: Double {
        planes.reduce(0.0) { sum, p in
            sum + Double(p.bytesPerGroup * 8) / Double(p.pixelsPerGroup)
                / Double(p.horizontalSubsampling * p.verticalSubsampling)
        }
    }

    /// The minimum stride of plane `index` for `width` pixels.
    public func stride(plane index: Int, width: Int) -> Int {
        let p = planes[index]
        let samples = (width + p.horizontalSubsampling - 1) / p.horizontalSubsampling
        return (samples + p.pixelsPerGroup - 1) / p.pixelsPerGroup * p.bytesPerGroup
    }

    public func rows(plane index: Int, height: Int) -> Int {
        let p = planes[index]
        return (height + p.verticalSubsampling - 1) / p.verticalSubsampling
    }

    /// Bytes of a tightly packed frame.
    public func bytesPerFrame(width: Int, height: Int) -> Int {
        planes.indices.reduce(0) { $0 + stride(plane: $1, width: width) * rows(plane: $1, height: height) }
    }

    /// How a conversion from this format to `target` costs in memory, for the log
    /// ("BGR888 → yuv420p: 460 KB per frame, 0.50× the source").
    public func memoryCost(to target: PixelFormatInfo, width: Int, height: Int) -> String {
        let from = bytesPerFrame(width: width, height: height)
        let to = target.bytesPerFrame(width: width, height: height)
        let hundredths = (to * 100 + max(from, 1) / 2) / max(from, 1)
        let fraction = hundredths % 100 < 10 ? "0\(hundredths % 100)" : "\(hundredths % 100)"
        return name + " → " + target.name + ": \(to / 1024) KiB per frame, \(hundredths / 100).\(fraction)× the source"
    }

    static func plane(_ bytes: Int, per pixels: Int = 1, h: Int = 1, v: Int = 1) -> Plane {
        Plane(bytesPerGroup: bytes, pixelsPerGroup: pixels, horizontalSubsampling: h, verticalSubsampling: v)
    }

    static let table: [UInt32: PixelFormatInfo] = {
        var t: [UInt32: PixelFormatInfo] = [:]
        func add(_ code: String, _ name: String, _ family: Family, _ depth: Int, _ planes: [Plane],
                 ffmpeg: String?, av: String? = nil, v4l2: String? = nil) {
            t[FourCC.code(code)] = PixelFormatInfo(name: name, family: family, bitDepth: depth, planes: planes,
                                                   ffmpegName: ffmpeg, avFoundationCode: av, v4l2FourCC: v4l2 ?? code)
        }
        // NV12: a full-size luma plane, then interleaved CbCr at half width and height (2 bytes per pair).
        add("NV12", "NV12", .yuv, 8, [plane(1), plane(2, h: 2, v: 2)], ffmpeg: "nv12", av: "420v")
        add("NV21", "NV21", .yuv, 8, [plane(1), plane(2, h: 2, v: 2)], ffmpeg: "nv21")
        add("NV16", "NV16", .yuv, 8, [plane(1), plane(2, h: 2, v: 1)], ffmpeg: "nv16", av: "422v")
        add("YU12", "YUV420", .yuv, 8, [plane(1), plane(1, h: 2, v: 2), plane(1, h: 2, v: 2)], ffmpeg: "yuv420p", av: "y420")
        add("YUYV", "YUYV", .yuv, 8, [plane(4, per: 2)], ffmpeg: "yuyv422", av: "yuvs")
        add("UYVY", "UYVY", .yuv, 8, [plane(4, per: 2)], ffmpeg: "uyvy422", av: "2vuy")
        add("P010", "P010", .yuv, 10, [plane(2), plane(4, h: 2, v: 2)], ffmpeg: "p010le", av: "x420")
        add("P210", "P210", .yuv, 10, [plane(2), plane(4, h: 2, v: 1)], ffmpeg: "p210le", av: "x422")
        add("XR24", "XRGB8888", .rgb, 8, [plane(4)], ffmpeg: "bgr0", av: "BGRA", v4l2: "XR24")
        add("AR24", "ARGB8888", .rgb, 8, [plane(4)], ffmpeg: "bgra", av: "BGRA", v4l2: "AR24")
        add("XB24", "XBGR8888", .rgb, 8, [plane(4)], ffmpeg: "rgb0", v4l2: "XB24")
        add("RG24", "RGB888", .rgb, 8, [plane(3)], ffmpeg: "bgr24", av: "24BG", v4l2: "BGR3")
        add("BG24", "BGR888", .rgb, 8, [plane(3)], ffmpeg: "rgb24", av: "24RG", v4l2: "RGB3")
        add("RG16", "RGB565", .rgb, 8, [plane(2)], ffmpeg: "rgb565le", v4l2: "RGBP")
        func bayer(_ code: String, _ name: String, _ depth: Int, _ order: String, ffmpeg: String?) {
            add(code, name, .bayer, depth, [plane(depth > 8 ? 2 : 1)], ffmpeg: ffmpeg)
            t[FourCC.code(code)]!.bayerOrder = order
        }
        bayer("BA81", "SBGGR8", 8, "BGGR", ffmpeg: "bayer_bggr8")
        bayer("GBRG", "SGBRG8", 8, "GBRG", ffmpeg: "bayer_gbrg8")
        bayer("GRBG", "SGRBG8", 8, "GRBG", ffmpeg: "bayer_grbg8")
        bayer("RGGB", "SRGGB8", 8, "RGGB", ffmpeg: "bayer_rggb8")
        bayer("BG10", "SBGGR10", 10, "BGGR", ffmpeg: nil)
        bayer("GB10", "SGBRG10", 10, "GBRG", ffmpeg: nil)
        bayer("BA10", "SGRBG10", 10, "GRBG", ffmpeg: nil)
        bayer("RG10", "SRGGB10", 10, "RGGB", ffmpeg: nil)
        bayer("BG12", "SBGGR12", 12, "BGGR", ffmpeg: nil)
        bayer("GB12", "SGBRG12", 12, "GBRG", ffmpeg: nil)
        bayer("BA12", "SGRBG12", 12, "GRBG", ffmpeg: nil)
        bayer("RG12", "SRGGB12", 12, "RGGB", ffmpeg: nil)
        return t
    }()
}
