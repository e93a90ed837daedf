import Foundation
import ObscuraMedia
@_exported import ObscuraSettings

extension RGB {
    /// Video-range Y′CbCr (BT.601), as 8-bit camera frames carry it.
    var ycbcr: (y: Int, cb: Int, cr: Int) {
        let r = Double(red) / 255, g = Double(green) / 255, b = Double(blue) / 255
        let y = 16 + 65.481 * r + 128.553 * g + 24.966 * b
        let cb = 128 - 37.797 * r - 74.203 * g + 112.0 * b
        let cr = 128 + 112.0 * r - 93.786 * g - 18.214 * b
        return (Int(y.rounded()), Int(cb.rounded()), Int(cr.rounded()))
    }
}

/// Draws the caption into 8-bit 4:2:0 frames (NV12, YUV420). The caption
/// is laid out once per second (when its text changes) into a patch of
/// per-pixel weights; each frame then costs one multiply-add per pixel of
/// the patch (an opaque box: a plain copy of it).
///
/// Not Sendable: a recording's frame loop owns it.
public final class OverlayRenderer {
    public let settings: OverlaySettings
    public let frameSize: PixelSize
    private let font: OverlayFont
    private let formatter: DateFormatter
    /// The patch for the current text.
    private var patch: Patch?
    private var patchText = ""
    /// The second (since 1970) `patch` was made for: frames of the same
    /// second reuse it without formatting their date.
    private var patchSecond: Double?

    /// The formats it draws on: 8-bit 4:2:0 YUV, and packed 8-bit RGB (what
    /// vimc and USB cameras give).
    public static let formats: [PixelFormat] = [.nv12, .yuv420, .yuyv, .uyvy, .bgr888, .rgb888, .xrgb8888, .argb8888, .xbgr8888]

    /// Packed RGB: bytes per pixel and where red, green and blue are in one.
    static func rgbLayout(_ format: PixelFormat) -> (bytes: Int, r: Int, g: Int, b: Int)? {
        switch format.info?.ffmpegName {
        case "rgb24": (3, 0, 1, 2)
        case "bgr24": (3, 2, 1, 0)
        case "bgr0", "bgra": (4, 2, 1, 0)
        case "rgb0", "rgba": (4, 0, 1, 2)
        default: nil
        }
    }

    public init(settings: OverlaySettings, frameSize: PixelSize) throws(OverlayError) {
        self.settings = settings
        self.frameSize = frameSize
        font = try OverlayFont(path: settings.font, pixelHeight: settings.pixelHeight(forFrameHeight: frameSize.height))
        formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = settings.timeZone
        formatter.dateFormat = "yyyy-MM-dd HH:mm:ss xxx"
    }

    /// The caption's lines for a frame taken at `date`.
    public func lines(at date: Date) -> [String] {
        // The second the frame was taken in (never rounded up).
        let second = Date(timeIntervalSince1970: (date.timeIntervalSince1970).rounded(.down))
        var lines = [formatter.string(from: second)]
        let caption = [settings.cameraName ?? "", settings.text].filter { !$0.isEmpty }.joined(separator: "  ")
        if !caption.isEmpty { lines.append(caption) }
        return lines
    }

    /// Where the caption is in the frame (even-aligned; clipped to it).
    public func region(at date: Date) -> (x: Int, y: Int, width: Int, height: Int) {
        let p = patchFor(date)
        return (p.x, p.y, p.width, p.height)
    }

    /// Per pixel: out = (in × keep + add) / 256, for luma and for each
    /// chroma sample (at half resolution, weights averaged over 2×2).
    struct Patch {
        var x = 0, y = 0, width = 0, height = 0
        var keep: [UInt16] = [], add: [UInt16] = []
        var chromaKeep: [UInt16] = [], addCb: [UInt16] = [], addCr: [UInt16] = []
        /// Packed RGB: what each channel gains (luma's `keep` applies).
        var addR: [UInt16] = [], addG: [UInt16] = [], addB: [UInt16] = []
        /// Every weight is 0 (an opaque box): the patch's own pixels are
        /// copied row by row, precomputed per layout.
        var opaque = false
        var luma: [UInt8] = []
        var cb: [UInt8] = [], cr: [UInt8] = [], cbcr: [UInt8] = []
        /// Packed RGB rows, by (bytes per pixel, r, g, b) offsets.
        var rgbRows: [Int: [UInt8]] = [:]
    }

    /// The patch for a frame taken at `date`: the cached one for its second.
    private func patchFor(_ date: Date) -> Patch {
        let second = date.timeIntervalSince1970.rounded(.down)
        if let patch, second == patchSecond { return patch }
        let lines = lines(at: date)
        let text = lines.joined(separator: "\n")
        patchSecond = second
        if let patch, text == patchText { return patch }
        let made = layOut(lines)
        patch = made
        patchText = text
        return made
    }

    private func layOut(_ lines: [String]) -> Patch {
        let lineHeight = font.ascender + font.descender
        let pad = max(2, font.pixelHeight / 4)
        let widths = lines.map { $0.unicodeScalars.reduce(0) { $0 + font.glyph($1).advance } }
        var width = (widths.max() ?? 0) + 2 * pad
        var height = lines.count * lineHeight + 2 * pad
        width += width & 1
        height += height & 1
        let coverage = textCoverage(lines, width: width, height: height, pad: pad, lineHeight: lineHeight)
        let under = underLayer(coverage, width: width, height: height)
        let ink = settings.colour.ycbcr
        let dark = (y: 16, cb: 128, cr: 128)
        var p = Patch()
        p.width = min(width, frameSize.width - frameSize.width % 2)
        p.height = min(height, frameSize.height - frameSize.height % 2)
        let margin = max(2, font.pixelHeight / 2) & ~1
        let left = settings.position == .topLeft || settings.position == .bottomLeft
        let top = settings.position == .topLeft || settings.position == .topRight
        p.x = max(0, left ? margin : (frameSize.width - p.width - margin) & ~1)
        p.y = max(0, top ? margin : (frameSize.height - p.height - margin) & ~1)
        p.keep = [UInt16](repeating: 0, count: p.width * p.height)
        p.add = [UInt16](repeating: 0, count: p.width * p.height)
        // Weights in 1/256: the under layer, then the text over it.
        var alphaUnder = [Int](repeating: 0, count: p.width * p.height)
        var alphaText = [Int](repeating: 0, count: p.width * p.height)
        for y in 0..<p.height {
            for x in 0..<p.width {
                let a1 = Int(under[y * width + x]) * 256 / 255
                let a2 = Int(coverage[y * width + x]) * 256 / 255
                alphaUnder[y * p.width + x] = a1
                alphaText[y * p.width + x] = a2
                // keep = (256 - a1)(256 - a2) / 256; add = dark·a1·(256 - a2)/256 + ink·a2
                let keep = (256 - a1) * (256 - a2) / 256
                let add = dark.y * a1 * (256 - a2) / 256 + ink.y * a2
                p.keep[y * p.width + x] = UInt16(keep)
                p.add[y * p.width + x] = UInt16(min(add, 255 * 256))
            }
        }
        // The same layers in RGB: the dark layer is black, so only the ink adds.
        p.addR = alphaText.map { UInt16(min(Int(settings.colour.red) * $0, 255 * 256)) }
        p.addG = alphaText.map { UInt16(min(Int(settings.colour.green) * $0, 255 * 256)) }
        p.addB = alphaText.map { UInt16(min(Int(settings.colour.blue) * $0, 255 * 256)) }
        p.opaque = p.keep.allSatisfy { $0 == 0 }
        func value(_ add: UInt16) -> UInt8 { UInt8(min(255, (Int(add) + 128) >> 8)) }
        if p.opaque { p.luma = p.add.map(value) }
        chromaLayers(&p, alphaUnder: alphaUnder, alphaText: alphaText, ink: ink, dark: dark)
        if p.opaque && p.chromaKeep.allSatisfy({ $0 == 0 }) {
            p.cb = p.addCb.map(value)
            p.cr = p.addCr.map(value)
            p.cbcr = zip(p.cb, p.cr).flatMap { [$0, $1] }
        } else {
            p.opaque = false
        }
        return p
    }

    /// The text's coverage (0–255) on a width × height patch, line under line.
    private func textCoverage(_ lines: [String], width: Int, height: Int, pad: Int, lineHeight: Int) -> [UInt8] {
        var coverage = [UInt8](repeating: 0, count: width * height)
        for (n, line) in lines.enumerated() {
            var pen = pad
            let baseline = pad + n * lineHeight + font.ascender
            for scalar in line.unicodeScalars {
                let g = font.glyph(scalar)
                for row in 0..<g.rows {
                    let y = baseline - g.top + row
                    guard y >= 0, y < height else { continue }
                    for column in 0..<g.width {
                        let x = pen + g.left + column
                        guard x >= 0, x < width else { continue }
                        let c = g.coverage[row * g.width + column]
                        if c > coverage[y * width + x] { coverage[y * width + x] = c }
                    }
                }
                pen += g.advance
            }
        }
        return coverage
    }

    /// The layer under the text: the whole box, or the text grown by a few
    /// pixels (its outline).
    private func underLayer(_ coverage: [UInt8], width: Int, height: Int) -> [UInt8] {
        var under = [UInt8](repeating: 0, count: width * height)
        switch settings.background {
        case .box:
            under = [UInt8](repeating: 255, count: width * height)
        case .outline:
            let r = max(1, font.pixelHeight / 12)
            for y in 0..<height {
                for x in 0..<width {
                    var m: UInt8 = 0
                    for dy in -r...r where y + dy >= 0 && y + dy < height {
                        for dx in -r...r where x + dx >= 0 && x + dx < width {
                            m = max(m, coverage[(y + dy) * width + x + dx])
                        }
                    }
                    under[y * width + x] = m
                }
            }
        }
        return under
    }

    /// The chroma weights: each 2×2 block's mean of the luma layers.
    private func chromaLayers(_ p: inout Patch, alphaUnder: [Int], alphaText: [Int],
                              ink: (y: Int, cb: Int, cr: Int), dark: (y: Int, cb: Int, cr: Int)) {
        let cw = p.width / 2, ch = p.height / 2
        p.chromaKeep = [UInt16](repeating: 0, count: cw * ch)
        p.addCb = [UInt16](repeating: 0, count: cw * ch)
        p.addCr = [UInt16](repeating: 0, count: cw * ch)
        for y in 0..<ch {
            for x in 0..<cw {
                var a1 = 0, a2 = 0
                for (dx, dy) in [(0, 0), (1, 0), (0, 1), (1, 1)] {
                    a1 += alphaUnder[(2 * y + dy) * p.width + 2 * x + dx]
                    a2 += alphaText[(2 * y + dy) * p.width + 2 * x + dx]
                }
                a1 /= 4
                a2 /= 4
                let i = y * cw + x
                p.chromaKeep[i] = UInt16((256 - a1) * (256 - a2) / 256)
                p.addCb[i] = UInt16(min(dark.cb * a1 * (256 - a2) / 256 + ink.cb * a2, 255 * 256))
                p.addCr[i] = UInt16(min(dark.cr * a1 * (256 - a2) / 256 + ink.cr * a2, 255 * 256))
            }
        }
    }

    /// An opaque patch's pixels as packed RGB rows (made once per layout).
    private func rgbRows(_ layout: (bytes: Int, r: Int, g: Int, b: Int)) -> [UInt8] {
        let key = layout.bytes << 12 | layout.r << 8 | layout.g << 4 | layout.b
        if let rows = patch?.rgbRows[key] { return rows }
        guard let p = patch else { return [] }
        var rows = [UInt8](repeating: 255, count: p.width * p.height * layout.bytes)
        for i in 0..<(p.width * p.height) {
            rows[i * layout.bytes + layout.r] = UInt8(min(255, (Int(p.addR[i]) + 128) >> 8))
            rows[i * layout.bytes + layout.g] = UInt8(min(255, (Int(p.addG[i]) + 128) >> 8))
            rows[i * layout.bytes + layout.b] = UInt8(min(255, (Int(p.addB[i]) + 128) >> 8))
        }
        patch?.rgbRows[key] = rows
        return rows
    }

    /// Draws the caption for `date` into a frame's planes (NV12: Y, CbCr;
    /// YUV420: Y, Cb, Cr), which the caller may write.
    public func draw(planes: [UnsafeMutableRawPointer], strides: [Int], format: PixelFormat, at date: Date) throws(OverlayError) {
        guard Self.formats.contains(format) else {
            throw OverlayError("the overlay draws on \(Self.formats.map(\.description).joined(separator: " or ")) frames, not \(format)")
        }
        let p = patchFor(date)
        if let rgb = Self.rgbLayout(format) {
            guard let plane = planes.first, let stride = strides.first else { throw OverlayError("a \(format) frame with no plane") }
            return drawRGB(p, rgb, plane.assumingMemoryBound(to: UInt8.self), stride)
        }
        if format == .yuyv || format == .uyvy {
            guard let plane = planes.first, let stride = strides.first else { throw OverlayError("a \(format) frame with no plane") }
            return drawPacked(p, format, plane.assumingMemoryBound(to: UInt8.self), stride)
        }
        guard planes.count >= (format == .nv12 ? 2 : 3), strides.count == planes.count else {
            throw OverlayError("a \(format) frame with \(planes.count) planes")
        }
        drawLuma(p, planes[0].assumingMemoryBound(to: UInt8.self), strides[0])
        drawChroma(p, format, planes, strides)
    }

    /// Packed RGB (BGRA, RGB24…): the patch's RGB layers.
    private func drawRGB(_ p: Patch, _ rgb: (bytes: Int, r: Int, g: Int, b: Int), _ pixels: UnsafeMutablePointer<UInt8>, _ stride: Int) {
        if p.opaque {
            let rows = rgbRows(rgb)
            let rowBytes = p.width * rgb.bytes
            rows.withUnsafeBufferPointer { source in
                for row in 0..<p.height {
                    (pixels + (p.y + row) * stride + p.x * rgb.bytes).update(from: source.baseAddress! + row * rowBytes, count: rowBytes)
                }
            }
            return
        }
        for row in 0..<p.height {
            let line = pixels + (p.y + row) * stride + p.x * rgb.bytes
            let base = row * p.width
            for x in 0..<p.width {
                let keep = Int(p.keep[base + x])
                guard keep != 256 else { continue }
                let px = line + x * rgb.bytes
                px[rgb.r] = UInt8((Int(px[rgb.r]) * keep + Int(p.addR[base + x]) + 128) >> 8)
                px[rgb.g] = UInt8((Int(px[rgb.g]) * keep + Int(p.addG[base + x]) + 128) >> 8)
                px[rgb.b] = UInt8((Int(px[rgb.b]) * keep + Int(p.addB[base + x]) + 128) >> 8)
            }
        }
    }

    /// Packed 4:2:2: Y0 Cb Y1 Cr (YUYV) or Cb Y0 Cr Y1 (UYVY); each chroma
    /// pair takes the weights of its 2×2 block.
    private func drawPacked(_ p: Patch, _ format: PixelFormat, _ pixels: UnsafeMutablePointer<UInt8>, _ stride: Int) {
        let (y0, cbAt, y1, crAt) = format == .yuyv ? (0, 1, 2, 3) : (1, 0, 3, 2)
        let cw = p.width / 2
        for row in 0..<p.height {
            let line = pixels + (p.y + row) * stride + p.x * 2
            let base = row * p.width
            let cbase = (row / 2) * cw
            for pair in 0..<cw {
                let group = line + pair * 4
                for (offset, x) in [(y0, 2 * pair), (y1, 2 * pair + 1)] {
                    let keep = Int(p.keep[base + x])
                    if keep != 256 { group[offset] = UInt8((Int(group[offset]) * keep + Int(p.add[base + x]) + 128) >> 8) }
                }
                let keep = Int(p.chromaKeep[cbase + pair])
                if keep != 256 {
                    group[cbAt] = UInt8((Int(group[cbAt]) * keep + Int(p.addCb[cbase + pair]) + 128) >> 8)
                    group[crAt] = UInt8((Int(group[crAt]) * keep + Int(p.addCr[cbase + pair]) + 128) >> 8)
                }
            }
        }
    }

    /// The luma plane of NV12 or YUV420.
    private func drawLuma(_ p: Patch, _ luma: UnsafeMutablePointer<UInt8>, _ stride: Int) {
        for row in 0..<p.height {
            let line = luma + (p.y + row) * stride + p.x
            let base = row * p.width
            if p.opaque {
                p.luma.withUnsafeBufferPointer { line.update(from: $0.baseAddress! + base, count: p.width) }
                continue
            }
            for x in 0..<p.width {
                let keep = Int(p.keep[base + x])
                guard keep != 256 else { continue }
                line[x] = UInt8((Int(line[x]) * keep + Int(p.add[base + x]) + 128) >> 8)
            }
        }
    }

    /// The chroma planes: NV12's interleaved CbCr, or YUV420's Cb and Cr.
    private func drawChroma(_ p: Patch, _ format: PixelFormat, _ planes: [UnsafeMutableRawPointer], _ strides: [Int]) {
        let cw = p.width / 2
        if p.opaque {
            for row in 0..<(p.height / 2) {
                let cy = p.y / 2 + row
                if format == .nv12 {
                    let line = planes[1].assumingMemoryBound(to: UInt8.self) + cy * strides[1] + p.x
                    p.cbcr.withUnsafeBufferPointer { line.update(from: $0.baseAddress! + row * 2 * cw, count: 2 * cw) }
                } else {
                    let cb = planes[1].assumingMemoryBound(to: UInt8.self) + cy * strides[1] + p.x / 2
                    let cr = planes[2].assumingMemoryBound(to: UInt8.self) + cy * strides[2] + p.x / 2
                    p.cb.withUnsafeBufferPointer { cb.update(from: $0.baseAddress! + row * cw, count: cw) }
                    p.cr.withUnsafeBufferPointer { cr.update(from: $0.baseAddress! + row * cw, count: cw) }
                }
            }
            return
        }
        for row in 0..<(p.height / 2) {
            let base = row * cw
            let cy = p.y / 2 + row
            if format == .nv12 {
                let line = planes[1].assumingMemoryBound(to: UInt8.self) + cy * strides[1] + p.x
                for x in 0..<cw {
                    let keep = Int(p.chromaKeep[base + x])
                    guard keep != 256 else { continue }
                    line[2 * x] = UInt8((Int(line[2 * x]) * keep + Int(p.addCb[base + x]) + 128) >> 8)
                    line[2 * x + 1] = UInt8((Int(line[2 * x + 1]) * keep + Int(p.addCr[base + x]) + 128) >> 8)
                }
            } else {
                let cb = planes[1].assumingMemoryBound(to: UInt8.self) + cy * strides[1] + p.x / 2
                let cr = planes[2].assumingMemoryBound(to: UInt8.self) + cy * strides[2] + p.x / 2
                for x in 0..<cw {
                    let keep = Int(p.chromaKeep[base + x])
                    guard keep != 256 else { continue }
                    cb[x] = UInt8((Int(cb[x]) * keep + Int(p.addCb[base + x]) + 128) >> 8)
                    cr[x] = UInt8((Int(cr[x]) * keep + Int(p.addCr[base + x]) + 128) >> 8)
                }
            }
        }
    }

    /// The caption's luma for `date` over a mid-grey picture, as the patch's
    /// rows (for comparing a decoded frame's region with what was meant).
    public func referenceLuma(at date: Date, background: UInt8 = 128) -> (x: Int, y: Int, width: Int, height: Int, luma: [UInt8]) {
        let p = patchFor(date)
        var out = [UInt8](repeating: background, count: p.width * p.height)
        for i in 0..<out.count where p.keep[i] != 256 {
            out[i] = UInt8((Int(background) * Int(p.keep[i]) + Int(p.add[i]) + 128) >> 8)
        }
        return (p.x, p.y, p.width, p.height, out)
    }
}
