import ObscuraMedia

/// A frame's brightness read at a fixed grid of points, never a copy of the
/// frame: `columns` × `rows` points spread evenly over the picture, each the
/// mean luma of `blockWidth` pixels of a row around it (8-bit scale, 0–255; a
/// 10-bit sample's high byte; RGB weighted as BT.601 luma). A block, not one
/// pixel, so that a sensor's noise does not pass for detail. The cost is the
/// grid's, whatever the frame's size.
public struct LumaGrid: Sendable, Equatable {
    public let columns: Int
    public let rows: Int
    public let blockWidth: Int

    public init(columns: Int = 32, rows: Int = 18, blockWidth: Int = 4) {
        precondition(columns >= 2 && rows >= 2 && blockWidth >= 1, "a luma grid has at least 2 × 2 points of a pixel or more")
        self.columns = columns
        self.rows = rows
        self.blockWidth = blockWidth
    }

    /// Where a format keeps its luma in the first plane.
    enum Layout: Equatable {
        /// One byte of luma every `stride` bytes from `offset`.
        case direct(offset: Int, stride: Int)
        /// Red, green and blue bytes at these offsets in each `stride`-byte pixel.
        case rgb(red: Int, green: Int, blue: Int, stride: Int)
    }

    /// nil: a format whose luma this grid cannot read (Bayer, compressed).
    static func layout(of format: PixelFormat) -> Layout? {
        switch format {
        case .nv12, .nv21, .nv16, .yuv420: .direct(offset: 0, stride: 1)
        case .yuyv: .direct(offset: 0, stride: 2)
        case .uyvy: .direct(offset: 1, stride: 2)
        // 16-bit little-endian samples, the value in the high bits: the high byte.
        case .p010, .p210: .direct(offset: 1, stride: 2)
        // DRM fourccs name the bits of a little-endian word: XR24 is B, G, R, X in memory.
        case .xrgb8888, .argb8888: .rgb(red: 2, green: 1, blue: 0, stride: 4)
        case .xbgr8888: .rgb(red: 0, green: 1, blue: 2, stride: 4)
        case .rgb888: .rgb(red: 2, green: 1, blue: 0, stride: 3)
        case .bgr888: .rgb(red: 0, green: 1, blue: 2, stride: 3)
        default: nil
        }
    }

    public static func canRead(_ format: PixelFormat) -> Bool { layout(of: format) != nil }

    /// The grid's points of `frame`, row by row, read under the frame's
    /// CPU-access bracket; nil when its format has no luma this can read.
    public func sample(_ frame: VideoFrame) -> [UInt8]? {
        guard let layout = Self.layout(of: frame.format), frame.size.width > 0, frame.size.height > 0 else { return nil }
        return frame.withCPUAccess { planes -> [UInt8]? in
            guard let plane = planes.first else { return nil }
            return sample(plane, size: frame.size, layout: layout)
        }
    }

    func sample(_ plane: FramePlane, size: PixelSize, layout: Layout) -> [UInt8]? {
        let bytes = plane.base.assumingMemoryBound(to: UInt8.self)
        let block = min(blockWidth, size.width)
        let pixelBytes = switch layout {
        case .direct(_, let stride), .rgb(_, _, _, let stride): stride
        }
        // The last byte any point reads must be in the plane.
        let lastRow = (2 * rows - 1) * size.height / (2 * rows)
        guard lastRow * plane.stride + size.width * pixelBytes <= plane.length else { return nil }
        let firsts = (0..<columns).map { column in
            min(max(0, (2 * column + 1) * size.width / (2 * columns) - block / 2), size.width - block)
        }
        // Plain loops over pointers, the layout decided once a frame: the
        // look runs on the camera's thread, and an unoptimised build (the
        // board tests') pays for every generic call and iterator per pixel.
        return [UInt8](unsafeUninitializedCapacity: columns * rows) { points, count in
            firsts.withUnsafeBufferPointer { firsts in
                var i = 0
                for row in 0..<rows {
                    let rowBytes = bytes + (2 * row + 1) * size.height / (2 * rows) * plane.stride
                    var column = 0
                    while column < columns {
                        let sum = Self.blockSum(rowBytes + firsts[column] * pixelBytes, pixels: block, layout: layout)
                        points[i] = UInt8(truncatingIfNeeded: (sum &+ block / 2) / block)
                        i &+= 1
                        column &+= 1
                    }
                }
            }
            count = columns * rows
        }
    }

    /// Fine detail at each point: the sum of absolute differences between
    /// neighbouring pixels, across 9 pixels of the point's row and of the
    /// row below (16 differences, 0–4080): what a lens out of focus loses
    /// and a coarse grid cannot see. Row by row as `sample`; nil as it.
    public func sampleFine(_ frame: VideoFrame) -> [UInt16]? {
        guard let layout = Self.layout(of: frame.format), frame.size.width > 9, frame.size.height > 1 else { return nil }
        return frame.withCPUAccess { planes -> [UInt16]? in
            guard let plane = planes.first else { return nil }
            return sampleFine(plane, size: frame.size, layout: layout)
        }
    }

    func sampleFine(_ plane: FramePlane, size: PixelSize, layout: Layout) -> [UInt16]? {
        let bytes = plane.base.assumingMemoryBound(to: UInt8.self)
        let span = 9
        let pixelBytes = switch layout {
        case .direct(_, let stride), .rgb(_, _, _, let stride): stride
        }
        let lastRow = min((2 * rows - 1) * size.height / (2 * rows) + 1, size.height - 1)
        guard lastRow * plane.stride + size.width * pixelBytes <= plane.length else { return nil }
        let firsts = (0..<columns).map { column in
            min(max(0, (2 * column + 1) * size.width / (2 * columns) - span / 2), size.width - span)
        }
        return [UInt16](unsafeUninitializedCapacity: columns * rows) { values, count in
            var i = 0
            for row in 0..<rows {
                let y = min((2 * row + 1) * size.height / (2 * rows), size.height - 2)
                for column in 0..<columns {
                    var sum = 0
                    for line in 0..<2 {
                        let start = bytes + (y + line) * plane.stride + firsts[column] * pixelBytes
                        if case .direct(let offset, 1) = layout {
                            // (Luma byte by byte, the usual case: no layout per pixel.)
                            let p = start + offset
                            for x in 1..<span {
                                let d = Int(p[x]) &- Int(p[x - 1])
                                sum &+= d < 0 ? -d : d
                            }
                            continue
                        }
                        var previous = Self.luma(start, layout: layout)
                        for x in 1..<span {
                            let v = Self.luma(start + x * pixelBytes, layout: layout)
                            let d = v &- previous
                            sum &+= d < 0 ? -d : d
                            previous = v
                        }
                    }
                    values[i] = UInt16(truncatingIfNeeded: sum)
                    i &+= 1
                }
            }
            count = columns * rows
        }
    }

    /// One pixel's luma.
    @inline(__always)
    static func luma(_ p: UnsafePointer<UInt8>, layout: Layout) -> Int {
        switch layout {
        case .direct(let offset, _): Int(p[offset])
        case .rgb(let red, let green, let blue, _): (77 &* Int(p[red]) &+ 150 &* Int(p[green]) &+ 29 &* Int(p[blue])) >> 8
        }
    }

    /// The luma of `pixels` pixels from `start`, summed.
    @inline(__always)
    static func blockSum(_ start: UnsafePointer<UInt8>, pixels: Int, layout: Layout) -> Int {
        var sum = 0, i = 0
        switch layout {
        case .direct(let offset, let stride):
            var p = start + offset
            while i < pixels { sum &+= Int(p.pointee); p += stride; i &+= 1 }
        case .rgb(let red, let green, let blue, let stride):
            var p = start
            while i < pixels {
                sum &+= (77 &* Int(p[red]) &+ 150 &* Int(p[green]) &+ 29 &* Int(p[blue])) >> 8
                p += stride
                i &+= 1
            }
        }
        return sum
    }
}

/// What a grid of luma points says of a picture.
public struct PictureMeasure: Sendable, Equatable {
    /// Mean luma, 0–255 (video range puts black at 16).
    public let mean: Double
    /// Standard deviation of the points: how much the picture varies at all.
    public let spread: Double
    /// Mean absolute difference between neighbouring points, across and
    /// down: how much detail there is at the grid's scale.
    public let detail: Double
}

extension PictureMeasure {
    public init(points: [UInt8], columns: Int) {
        precondition(columns > 0 && points.count % columns == 0, "a grid's points fill whole rows")
        let n = points.count
        var sum = 0, squares = 0, differences = 0, pairs = 0
        points.withUnsafeBufferPointer { p in
            var i = 0, column = 0
            while i < n {
                let v = Int(p[i])
                sum &+= v
                squares &+= v &* v
                if column &+ 1 < columns {
                    let d = v &- Int(p[i &+ 1])
                    differences &+= d < 0 ? -d : d
                    pairs &+= 1
                }
                if i &+ columns < n {
                    let d = v &- Int(p[i &+ columns])
                    differences &+= d < 0 ? -d : d
                    pairs &+= 1
                }
                i &+= 1
                column = column &+ 1 == columns ? 0 : column &+ 1
            }
        }
        let mean = Double(sum) / Double(n)
        self.init(mean: mean, spread: (max(0, Double(squares) / Double(n) - mean * mean)).squareRoot(),
                  detail: pairs == 0 ? 0 : Double(differences) / Double(pairs))
    }
}
